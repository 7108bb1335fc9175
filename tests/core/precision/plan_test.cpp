// Plan as data: JSON round trip bit for bit, atomic save, load errors, matching a graph.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "hpf/models.hpp"
#include "hpf/precision.hpp"

using namespace hpf;

namespace {

// A plan with every field set to something a careless writer would lose: scales that need all
// 9 significant digits, a subnormal, -0, costs that are Inf and NaN.
Plan sample_plan() {
  Plan p;
  p.graph = "demo";
  p.metric = "rel-l2";
  p.budget = 2.5e-4;
  p.divergence = 0.1 + 0.2;  // 0.30000000000000004
  NodePlan a;
  a.name = "layer0/attention/qk";
  a.op = "MatMul";
  a.node_class = NodeClass::attention;
  a.mode = Mode::int8;
  a.storage = DType::I8;
  a.weights = DType::I8;
  a.accumulation = DType::I32;
  a.weight_quant = QuantParams{
      DType::I8, {0.1f, 1.0f / 3.0f, std::nextafter(1.0f, 2.0f), 1e-40f, -0.0f}, {}, 1, 0};
  a.activation_quant = QuantParams{DType::U8, {0.0078125f}, {128}, -1, 0};
  a.dynamic_rows = RowQuant::u7;
  a.predicted_ms = 0.123456789012345678;
  a.measured_ms = std::numeric_limits<double>::infinity();
  a.bytes = int64_t{1} << 40;
  a.sensitivity = std::numeric_limits<double>::quiet_NaN();
  NodePlan b;
  b.name = "ffn/\"up\"";  // a quote in a name
  b.op = "Gemm";
  b.node_class = NodeClass::ffn;
  b.mode = Mode::int4_weights;
  b.weights = DType::I4;
  b.weight_quant = QuantParams{DType::I4, {0.25f, 3.4028235e38f}, {1, -2}, -1, 32};
  b.dynamic_rows = RowQuant::s16;
  b.predicted_ms = 1e-300;
  NodePlan c;
  c.name = "out";
  c.op = "Softmax";
  c.weights = DType::I16;  // the planner's int16 (I16 weights, 16-bit rows)
  c.weight_quant = QuantParams{DType::I16, {0.001f}, {}, 1, 0};
  c.node_class = NodeClass::output;
  c.mode = Mode::auto_;
  p.nodes = {a, b, c};
  return p;
}

bool same_bits(double x, double y) {
  return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
}

void check_quant_equal(const std::optional<QuantParams>& x, const std::optional<QuantParams>& y) {
  REQUIRE(x.has_value() == y.has_value());
  if (!x) return;
  CHECK(x->type == y->type);
  REQUIRE(x->scales.size() == y->scales.size());
  for (size_t k = 0; k < x->scales.size(); ++k)
    CHECK(std::bit_cast<uint32_t>(x->scales[k]) == std::bit_cast<uint32_t>(y->scales[k]));
  CHECK(x->zero_points == y->zero_points);
  CHECK(x->axis == y->axis);
  CHECK(x->group_size == y->group_size);
}

void check_plans_equal(const Plan& x, const Plan& y) {
  CHECK(x.graph == y.graph);
  CHECK(x.metric == y.metric);
  CHECK(same_bits(x.budget, y.budget));
  CHECK(same_bits(x.divergence, y.divergence));
  REQUIRE(x.nodes.size() == y.nodes.size());
  for (size_t k = 0; k < x.nodes.size(); ++k) {
    const NodePlan &a = x.nodes[k], &b = y.nodes[k];
    CAPTURE(a.name);
    CHECK(a.name == b.name);
    CHECK(a.op == b.op);
    CHECK(a.node_class == b.node_class);
    CHECK(a.mode == b.mode);
    CHECK(a.storage == b.storage);
    CHECK(a.weights == b.weights);
    CHECK(a.accumulation == b.accumulation);
    check_quant_equal(a.weight_quant, b.weight_quant);
    check_quant_equal(a.activation_quant, b.activation_quant);
    CHECK(a.dynamic_rows == b.dynamic_rows);
    CHECK(same_bits(a.predicted_ms, b.predicted_ms));
    CHECK(same_bits(a.measured_ms, b.measured_ms) == true);
    CHECK(a.bytes == b.bytes);
    CHECK((same_bits(a.sensitivity, b.sensitivity) ||
           (std::isnan(a.sensitivity) && std::isnan(b.sensitivity))));
  }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("hpf_plan_test_" + name)).string();
}

std::string error_of(const std::string& json) {
  auto p = Plan::from_json(json);
  REQUIRE_FALSE(p.ok());
  return p.status().message();
}

// The sample plan's JSON with `from` replaced by `to` (once).
std::string edited(const std::string& from, const std::string& to) {
  std::string j = sample_plan().to_json();
  const size_t at = j.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return j.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("plan: save and load give the same plan, field by field and bit for bit") {
  const Plan p = sample_plan();
  const std::string path = temp_path("roundtrip.json");
  REQUIRE(p.save(path).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  auto q = Plan::load(path);
  REQUIRE_MESSAGE(q.ok(), q.status().to_string());
  check_plans_equal(p, *q);
  CHECK(q->to_json() == p.to_json());
  CHECK(std::isinf(q->nodes[0].measured_ms));
  CHECK(std::isnan(q->nodes[0].sensitivity));
  CHECK(std::signbit(q->nodes[0].weight_quant->scales[4]));
  CHECK(q->nodes[0].weight_quant->scales[3] == 1e-40f);  // subnormal kept
  CHECK(q->find("ffn/\"up\"") == &q->nodes[1]);
  CHECK(q->find("nope") == nullptr);
  // Saving again replaces the file whole.
  Plan smaller = p;
  smaller.nodes.resize(1);
  REQUIRE(smaller.save(path).ok());
  CHECK(Plan::load(path).value().nodes.size() == 1);
  std::filesystem::remove(path);
}

TEST_CASE("plan: the file says what it is and which version") {
  const std::string j = sample_plan().to_json();
  CHECK(j.find("{\"format\":\"libhpf-plan\",\"version\":1,\"graph\":\"demo\",") == 0);
  CHECK(j.find("\"measured_ms\":\"inf\"") != std::string::npos);
  CHECK(j.find("\"sensitivity\":\"nan\"") != std::string::npos);
  // Scales in their shortest form that reads back to the same float.
  CHECK(j.find("\"scales\":[0.1,0.33333334,1.0000001,1e-40,-0.0]") != std::string::npos);
  // One line per node (and one for the header), so plans diff line by line.
  CHECK(std::count(j.begin(), j.end(), '\n') == 5);
  CHECK(error_of(edited("\"version\":1", "\"version\":2")) ==
        "plan: version: 2 is not supported (this libhpf reads version 1)");
  CHECK(error_of(edited("\"format\":\"libhpf-plan\"", "\"format\":\"onnx\"")) ==
        "plan: format: 'onnx' is not a libhpf plan (expected 'libhpf-plan')");
  CHECK(error_of(edited("\"version\":1,", "")) == "plan: version: missing");
  CHECK(error_of(edited("\"version\":1", "\"version\":\"1\"")) ==
        "plan: version: expected an integer, got \"1\"");
  CHECK(error_of("[1, 2]") == "plan: expected a JSON object");
  CHECK(error_of("{\"format\":") == "plan: not valid JSON");
}

TEST_CASE("plan: a bad field value is an error naming the node, the field and the value") {
  CHECK(error_of(edited("\"mode\":\"int8\"", "\"mode\":\"int3\"")) ==
        "plan: nodes[0] ('layer0/attention/qk').mode: unknown precision mode 'int3' (modes: fp32, "
        "tf32, bf16, "
        "fp16, fp8, int8, int4-weights, auto)");
  CHECK(error_of(edited("\"class\":\"ffn\"", "\"class\":\"mlp\""))
            .find("plan: nodes[1] ('ffn/\"up\"').class: unknown node class 'mlp' (classes: "
                  "attention,") == 0);
  CHECK(error_of(edited("\"storage\":\"i8\"", "\"storage\":\"f12\""))
            .find("plan: nodes[0] ('layer0/attention/qk').storage: unknown dtype 'f12'") == 0);
  CHECK(error_of(edited("\"group_size\":32", "\"group_size\":3.5")) ==
        "plan: nodes[1] ('ffn/\"up\"').weight_quant.group_size: expected an integer, got 3.5");
  CHECK(error_of(edited("\"bytes\":0", "\"bytes\":0, \"latency\":3")) ==
        "plan: nodes[1] ('ffn/\"up\"').latency: unknown field");
  CHECK(error_of(edited("\"dynamic_rows\":\"u7\"", "\"dynamic_rows\":\"u6\"")) ==
        "plan: nodes[0] ('layer0/attention/qk').dynamic_rows: 'u6' is not s8, u7 or s16");
  CHECK(error_of(edited("\"metric\":\"rel-l2\"", "\"metric\":\"mse\"")) ==
        "plan: metric: unknown metric 'mse' (metrics: kl, rel-l2)");
  CHECK(error_of(edited("\"predicted_ms\":1e-300", "\"predicted_ms\":\"fast\"")) ==
        "plan: nodes[1] ('ffn/\"up\"').predicted_ms: expected a number, got \"fast\"");
  CHECK(error_of(edited("\"name\":\"out\"", "\"name\":\"layer0/attention/qk\"")) ==
        "plan: nodes[2].name: node 'layer0/attention/qk' appears twice");
  auto missing = Plan::load(temp_path("does_not_exist.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::not_found);
  // Errors while loading carry the path.
  const std::string path = temp_path("bad_version.json");
  std::ofstream(path) << edited("\"version\":1", "\"version\":7");
  auto bad = Plan::load(path);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        path + ": plan: version: 7 is not supported (this libhpf reads version 1)");
  std::filesystem::remove(path);
}

TEST_CASE("plan: check_matches accepts its own graph and names what differs in another") {
  auto tiny = models::builtin("bert-tiny");
  auto layer = models::builtin("bert-layer");
  auto mlp = models::builtin("mlp");
  REQUIRE((tiny.ok() && layer.ok() && mlp.ok()));
  auto plan = plan_from_policy(*tiny, Policy::uniform(Mode::fp32), DeviceFormats{});
  REQUIRE(plan.ok());
  CHECK(plan->check_matches(*tiny).ok());
  // Also after a trip through a file.
  CHECK(Plan::from_json(plan->to_json()).value().check_matches(*tiny).ok());

  // bert-layer has every node name of layer 0, but not layer1: the plan lacks nothing of it, yet
  // carries nodes the graph does not have.
  auto s = plan->check_matches(*layer);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() ==
        "plan node 'layer1/attention/query/matmul' is not in the graph (the plan was made for "
        "graph 'bert' with "
        "68 nodes; this graph 'bert' has 39)");
  auto layer_plan = plan_from_policy(*layer, Policy{}, DeviceFormats{});
  s = layer_plan->check_matches(*tiny);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("node 'layer1/attention/query/matmul' (MatMul) is not in the plan") == 0);
  s = plan->check_matches(*mlp);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find(
            "node 'fc1/matmul' (MatMul) is not in the plan (the plan was made for graph 'bert'") ==
        0);

  Plan wrong_op = *plan;
  wrong_op.nodes[0].op = "Add";
  s = wrong_op.check_matches(*tiny);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("node 'embeddings/gather' is Gather but Add in the plan") == 0);
  Plan renamed = *plan;
  renamed.graph = "gpt";
  CHECK(renamed.check_matches(*tiny).message() == "the plan was made for graph 'gpt', not 'bert'");
}
