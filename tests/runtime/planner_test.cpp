// The precision planner: cost model, reference evaluator, calibration inputs, plan_auto.
#include "hpf/planner.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "hpf/kernel_cache.hpp"
#include "hpf/models.hpp"
#include "hpf/npy.hpp"
#include "tests/runtime/quantised_diff.hpp"

using namespace hpf;

namespace {

Tensor filled(std::vector<int64_t> shape, float step) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[k] = step * float((k * 7) % 13 - 6);
  return *Tensor::from_f32(std::move(shape), v);
}

// x[4,8] . W[8,16]
Graph small_matmul() {
  GraphBuilder b("mm");
  auto x = b.input("x", DType::F32, {4, 8});
  auto w = b.constant("w", filled({8, 16}, 0.1f));
  b.output(b.op1("MatMul", {x, w}, {}, "mm"));
  return *b.build();
}

// x[batch, 64] . W1 . W2: in int8 plans mm1's output, which a MatMul reads, is stored INT8 with
// a static scale from the calibration observers; mm2's stays float.
Graph int8_chain() {
  GraphBuilder b("chain");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 64});
  auto h = b.op1("MatMul", {x, b.constant("w1", filled({64, 32}, 0.05f))}, {}, "mm1");
  b.output(b.op1("MatMul", {h, b.constant("w2", filled({32, 10}, 0.05f))}, {}, "mm2"), "y");
  return *b.build();
}

DeviceModel test_device() {
  DeviceModel d;
  d.name = "test";
  d.matrix_tflops = {{"fp32", 1.0}, {"bf16", 2.0}, {"int8", 4.0}};
  d.vector_tflops = {{"fp32", 0.5}};
  d.bandwidth_gbs = 10;
  return d;
}

DeviceFormats all_formats() {
  DeviceFormats d;
  d.storage = {DType::F32, DType::BF16, DType::F16, DType::I4};
  d.int8_compute = true;
  d.fp8_compute = true;
  return d;
}

// Options for the planning tests on the built-in MLP: a budget of 1e-2, every format, test_device().
PlannerOptions mlp_options() {
  PlannerOptions o;
  o.kl_budget = 1e-2;
  o.device = all_formats();
  o.device_model = test_device();
  return o;
}

NodePlan plan_of(const Graph& g, Mode m) {
  Plan p = *plan_from_policy(g, Policy::uniform(m), all_formats());
  return p.nodes[0];
}

int lowered_nodes(const Plan& p) {
  int n = 0;
  for (const NodePlan& np : p.nodes) n += np.mode != Mode::fp32;
  return n;
}

// Evaluators::measure_ms where every node measures 1 ms in every mode (as nodes fused into an
// epilogue measure 0 in all): the cost model sees no time to gain, only bytes.
Expected<std::map<std::string, double>> flat_node_times(const Plan& p) {
  std::map<std::string, double> t;
  for (const NodePlan& n : p.nodes) t[n.name] = 1.0;
  return t;
}

}  // namespace

TEST_CASE("cost model: FLOPs and bytes of a MatMul per mode") {
  const Graph g = small_matmul();
  CostModel cm(g, test_device());
  const NodeCost f = cm.cost(0, plan_of(g, Mode::fp32));
  CHECK(f.matrix);
  CHECK(f.flops == 2.0 * 4 * 16 * 8);
  CHECK(f.weight_bytes == 8 * 16 * 4);
  CHECK(f.input_bytes == 4 * 8 * 4);
  CHECK(f.output_bytes == 4 * 16 * 4);
  CHECK(f.bytes() == 512 + 256);
  // Memory bound: (512 + 128 + 256) bytes at 10 GB/s.
  CHECK(f.predicted_ms == doctest::Approx(896.0 / 10e9 * 1e3));

  const NodeCost h = cm.cost(0, plan_of(g, Mode::bf16));
  CHECK(h.weight_bytes == 256);
  CHECK(h.output_bytes == 128);
  CHECK(h.input_bytes == 64);

  // INT8: 1 byte per weight plus 4-byte scales (16 output channels); the output stays F32 (no
  // MatMul reads it as INT8), and as INT8 is 1 byte per element plus one scale.
  const NodeCost q = cm.cost(0, plan_of(g, Mode::int8));
  CHECK(q.weight_bytes == 128 + 16 * 4);
  CHECK(q.output_bytes == 256);
  NodePlan i8_out = plan_of(g, Mode::int8);
  i8_out.storage = DType::I8;
  i8_out.activation_quant = QuantParams{DType::I8, {}, {}, -1, 0};
  CHECK(cm.cost(0, i8_out).output_bytes == 64 + 4);
  // INT4 weights, groups of 32 (before calibration): half a byte per weight, 4 groups of 32.
  const NodeCost w4 = cm.cost(0, plan_of(g, Mode::int4_weights));
  CHECK(w4.weight_bytes == 64 + 4 * 4);
  CHECK(w4.output_bytes == 256);

  cm.set_measured("mm", Mode::bf16, 0.25);
  CHECK(cm.cost(0, plan_of(g, Mode::bf16)).ms() == 0.25);
  CHECK(cm.cost(0, plan_of(g, Mode::fp32)).measured_ms == -1);
  CHECK(cm.measured("mm", Mode::bf16) == 0.25);
}

TEST_CASE("cost model: FLOPs of Gemm (transposed, bias), Conv, elementwise") {
  GraphBuilder b("ops");
  auto a = b.input("a", DType::F32, {8, 4});        // transA: M = 4, K = 8
  auto w = b.constant("w", filled({16, 8}, 0.1f));  // transB: N = 16
  auto c = b.constant("c", filled({16}, 0.1f));
  auto y = b.op1("Gemm", {a, w, c}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, "gemm");
  b.output(b.relu(y));
  auto x = b.input("x", DType::F32, {1, 3, 8, 8});
  auto k = b.constant("k", filled({4, 3, 3, 3}, 0.1f));
  auto kb = b.constant("kb", filled({4}, 0.1f));
  b.output(b.conv(x, k, kb, {1, 1, 1, 1}, {1, 1}));
  Graph g = *b.build();
  CostModel cm(g, test_device());
  const Plan p = *plan_from_policy(g, Policy::uniform(Mode::fp32), all_formats());
  CHECK(cm.cost(0, p.nodes[0]).flops == 2.0 * 4 * 16 * 8 + 4 * 16);
  CHECK_FALSE(cm.cost(1, p.nodes[1]).matrix);
  CHECK(cm.cost(1, p.nodes[1]).flops == 64);  // Relu: elements
  CHECK(cm.cost(2, p.nodes[2]).flops == 2.0 * 4 * 64 * 27 + 4 * 64);
  CHECK(cm.plan_bytes(p) > 0);
  CHECK(cm.plan_ms(p) > 0);
}

TEST_CASE("cost model: roofline is monotonic for a memory-bound GEMV") {
  GraphBuilder b("gemv");
  auto x = b.input("x", DType::F32, {1, 1024});
  auto w = b.constant("w", filled({1024, 1024}, 0.01f));
  b.output(b.op1("MatMul", {x, w}, {}, "mv"));
  Graph g = *b.build();
  for (const DeviceModel& d : {test_device(), DeviceModel::host(), DeviceModel{}}) {
    CAPTURE(d.name);
    for (const std::string& n : d.notes) MESSAGE(d.name << ": " << n);
    CostModel cm(g, d);
    const double f32 = cm.cost(0, plan_of(g, Mode::fp32)).predicted_ms;
    const double bf16 = cm.cost(0, plan_of(g, Mode::bf16)).predicted_ms;
    const double i8 = cm.cost(0, plan_of(g, Mode::int8)).predicted_ms;
    const double i4 = cm.cost(0, plan_of(g, Mode::int4_weights)).predicted_ms;
    MESSAGE(d.name << ": GEMV 1x1024x1024 fp32 " << f32 << " ms, bf16 " << bf16 << " ms, int8 "
                   << i8 << " ms, int4-weights " << i4 << " ms");
    CHECK(f32 > 0);
    CHECK(bf16 <= f32);
    CHECK(bf16 < f32);  // half the bytes
    CHECK(i8 <= bf16);
    CHECK(i4 <= bf16);
  }
}

TEST_CASE("reference evaluator: metrics per output kind") {
  // Bernoulli KL by hand: p = 0.5, q = 0.25.
  Tensor p = *Tensor::from_f32({1, 1}, std::vector<float>{0.5f});
  Tensor q = *Tensor::from_f32({1, 1}, std::vector<float>{0.25f});
  CHECK(*output_divergence(OutputMetric::kl_bernoulli, p, q) ==
        doctest::Approx(0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75)));
  Tensor pp = *Tensor::from_f32({1, 2}, std::vector<float>{0.5f, 0.5f});
  Tensor qq = *Tensor::from_f32({1, 2}, std::vector<float>{0.25f, 0.75f});
  CHECK(*output_divergence(OutputMetric::kl_probabilities, pp, qq) ==
        doctest::Approx(0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75)));
  Tensor bad = *Tensor::from_f32({1, 2}, std::vector<float>{NAN, 0.5f});
  CHECK(std::isinf(*output_divergence(OutputMetric::kl_logits, pp, bad)));

  GraphBuilder b("heads");
  auto x = b.input("x", DType::F32, {4, 8});
  auto w = b.constant("w", filled({8, 8}, 0.1f));
  auto logits = b.op1("MatMul", {x, w}, {}, "mm");
  b.output(b.softmax(logits), "probs");
  b.output(b.sigmoid(logits), "gates");
  b.output(b.op1("Identity", {logits}), "logits");
  Graph g = *b.build();
  auto batches = random_calibration_inputs(g, 2, 3);
  REQUIRE(batches.ok());
  auto ev = RefEvaluator::create(g, *batches);
  REQUIRE(ev.ok());
  CHECK(ev->describe() == "probs: kl-probabilities, gates: kl-bernoulli, logits: kl-softmax");
  auto l2 = RefEvaluator::create(g, *batches, "rel-l2");
  REQUIRE(l2.ok());
  CHECK(l2->describe() == "probs: rel-l2, gates: rel-l2, logits: rel-l2");
  CHECK(RefEvaluator::create(g, *batches, "l1").status().message() ==
        "reference evaluator: unknown metric 'l1' (kl, rel-l2)");

  const Plan fp32 = *plan_from_policy(g, Policy::uniform(Mode::fp32), all_formats());
  CHECK(*ev->divergence(fp32) == 0);
  const Plan bf16 = *plan_from_policy(g, Policy::uniform(Mode::bf16), all_formats());
  CHECK(*ev->divergence(bf16) > 0);
  // INT8 needs calibrated scales.
  Policy only_mm;
  only_mm.by_node = {{"mm", Mode::int8}};
  const Plan i8 = *plan_from_policy(g, only_mm, all_formats());
  auto err = ev->divergence(i8);
  REQUIRE_FALSE(err.ok());
  CHECK(err.status().message() ==
        "emulation: node 'mm' (MatMul, int8) has no calibrated weight scales (calibrate_plan "
        "fills them)");
}

TEST_CASE("calibration inputs: random and from .npy directories") {
  const Graph g = small_matmul();
  auto r = random_calibration_inputs(g, 3, 5);
  REQUIRE(r.ok());
  CHECK(r->size() == 3);
  CHECK((*r)[0][0].shape() == std::vector<int64_t>{4, 8});
  CHECK((*r)[0][0].to_f32() != (*r)[1][0].to_f32());

  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("hpf_planner_calib_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  REQUIRE(save_npy((dir / "b" / "x.npy").string(), (*r)[1][0]).ok());
  REQUIRE(save_npy((dir / "a" / "x.npy").string(), (*r)[0][0]).ok());
  auto several = load_calibration_dir(g, dir.string());
  REQUIRE_MESSAGE(several.ok(), several.status().to_string());
  REQUIRE(several->size() == 2);
  CHECK((*several)[0][0].to_f32() == (*r)[0][0].to_f32());  // a before b
  CHECK((*several)[1][0].to_f32() == (*r)[1][0].to_f32());
  REQUIRE(save_npy((dir / "x.npy").string(), (*r)[2][0]).ok());
  auto one = load_calibration_dir(g, dir.string());
  REQUIRE(one.ok());
  CHECK(one->size() == 1);
  fs::remove(dir / "x.npy");
  fs::create_directories(dir / "c");
  auto missing = load_calibration_dir(g, dir.string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() ==
        "calibration directory '" + (dir / "c").string() + "' has no x.npy for input 'x'");
  fs::remove_all(dir);
}

namespace {

struct Planned {
  Plan plan;
  PlannerReport report;
  double seconds = 0;
};

Planned plan_model(const Graph& g, const std::vector<std::vector<Tensor>>& batches, double budget,
                   uint64_t seed = 1, DeviceFormats formats = all_formats()) {
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE_MESSAGE(ev.ok(), ev.status().to_string());
  PlannerOptions o;
  o.kl_budget = budget;
  o.device = formats;
  o.device_model = test_device();
  o.seed = seed;
  Planned r;
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = plan_auto(g, o, ev->evaluators(), &batches, &r.report);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  r.plan = std::move(*plan);
  MESSAGE(g.name() << " budget " << budget << ": " << r.seconds << " s, " << r.report.evaluations
                   << " evaluations (" << r.report.sensitivity_evaluations << " sensitivity, "
                   << r.report.groups << " groups, " << r.report.proposals
                   << " proposals), accepted " << r.report.accepted << ", divergence "
                   << r.plan.divergence << " (" << ev->describe() << "), predicted "
                   << r.report.plan_ms << " ms vs fp32 " << r.report.fp32_ms << ", bytes "
                   << r.report.plan_bytes << " vs " << r.report.fp32_bytes);
  std::string modes;
  for (const auto& [m, n] : r.report.modes) modes += m + "=" + std::to_string(n) + " ";
  MESSAGE("modes: " << modes);
  // Checked independently: a fresh evaluator on the same inputs.
  auto check = RefEvaluator::create(g, batches);
  REQUIRE(check.ok());
  const double d = *check->divergence(r.plan);
  CHECK(d <= budget * PlannerOptions{}.margin);  // searched with headroom on these inputs
  CHECK(d == doctest::Approx(r.plan.divergence));
  CHECK(r.plan.budget == budget);
  CHECK(r.plan.check_matches(g).ok());
  return r;
}

}  // namespace

TEST_CASE("plan_auto: builtin:mlp within budget, lowers when loose, not when tiny") {
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 2, 11, 32);
  const Planned loose = plan_model(g, batches, 1e-2);
  CHECK(lowered_nodes(loose.plan) > 0);
  CHECK(loose.report.plan_ms < loose.report.fp32_ms);
  CHECK(loose.report.plan_bytes < loose.report.fp32_bytes);
  for (const NodePlan& p : loose.plan.nodes) {
    CHECK(p.predicted_ms >= 0);
    CHECK(p.bytes > 0);
    if (p.mode != Mode::fp32) CHECK(p.sensitivity >= 0);
    if (p.mode == Mode::int8) {
      REQUIRE(p.activation_quant);
      CHECK_FALSE(p.activation_quant->scales.empty());
    }
  }
  const Planned tiny = plan_model(g, batches, 1e-9);
  CHECK(lowered_nodes(tiny.plan) < lowered_nodes(loose.plan));

  // The plan survives JSON and evaluates the same.
  auto back = Plan::from_json(loose.plan.to_json());
  REQUIRE(back.ok());
  auto ev = RefEvaluator::create(g, batches);
  CHECK(*ev->divergence(*back) == doctest::Approx(loose.plan.divergence));
}

TEST_CASE("plan_auto: deterministic for a fixed seed") {
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  const Planned a = plan_model(g, batches, 5e-3, 42);
  const Planned b = plan_model(g, batches, 5e-3, 42);
  CHECK(a.plan.to_json() == b.plan.to_json());
  CHECK(a.report.evaluations == b.report.evaluations);
}

TEST_CASE("plan_auto: a node that overflows in fp16 stays fp32") {
  // exp(x + 10) reaches e^13 > 65504 for x ~ N(0, 1): Inf in FP16.
  GraphBuilder b("overflow");
  auto x = b.input("x", DType::F32, {16, 32});
  auto e = b.op1("Exp", {b.op1("Add", {x, b.scalar(10.0f)}, {}, "shift")}, {}, "exp");
  auto y = b.op1("Mul", {e, b.scalar(1e-5f)}, {}, "scale");
  b.output(b.op1("MatMul", {y, b.constant("w", filled({32, 10}, 0.1f))}, {}, "head"));
  const Graph g = *b.build();
  const auto batches = *random_calibration_inputs(g, 2, 1);
  DeviceFormats f16;
  f16.storage = {DType::F32, DType::F16};
  const Planned r = plan_model(g, batches, 1e-2, 1, f16);
  CHECK(r.plan.find("exp")->mode == Mode::fp32);
  CHECK(r.plan.find("exp")->sensitivity > 1e-2);  // lowered alone it overflows
  CHECK(lowered_nodes(r.plan) > 0);
}

TEST_CASE("plan_auto: builtin:bert-tiny within budget, planning time") {
  const Graph g = *models::builtin("builtin:bert-tiny");
  const auto batches = *random_calibration_inputs(g, 2, 5);
  const Planned loose = plan_model(g, batches, 1e-2);
  MESSAGE("planning bert-tiny (" << g.nodes().size() << " nodes) took " << loose.seconds << " s");
  CHECK(lowered_nodes(loose.plan) > 0);
  CHECK(loose.report.plan_bytes < loose.report.fp32_bytes);
  CHECK(loose.report.evaluations <= PlannerOptions{}.max_evaluations + 8);
  const Planned tiny = plan_model(g, batches, 1e-9);
  CHECK(lowered_nodes(tiny.plan) < lowered_nodes(loose.plan));
}

TEST_CASE("plan_auto: measured times replace the roofline") {
  // A device where every lowered kernel is slower than FP32, and memory does not count: nothing
  // is worth lowering.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  int calls = 0;
  e.measure_ms = [&](const Plan& p) -> Expected<std::map<std::string, double>> {
    ++calls;
    std::map<std::string, double> t;
    for (const NodePlan& n : p.nodes) t[n.name] = n.mode == Mode::fp32 ? 1.0 : 2.0;
    return t;
  };
  PlannerOptions o = mlp_options();
  o.beta = 0;
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE(plan.ok());
  CHECK(calls == 12);  // FP32 and the five candidate modes, twice: the second round measured the same
  CHECK(lowered_nodes(*plan) == 0);
  for (const NodePlan& n : plan->nodes) CHECK(n.measured_ms == 1.0);
  CHECK(r.plan_ms == doctest::Approx(double(g.nodes().size())));
}

TEST_CASE("plan_auto: per-node times are the fastest of rounds that measure every mode in turn") {
  // Every lowered kernel takes half FP32's time, but the machine runs 3x slower while the first
  // round measures the modes after FP32 (a shared machine's slow minutes): measured once, every
  // lowering would cost 1.5x FP32 and memory does not count, so nothing would be lowered.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  int calls = 0;
  e.measure_ms = [&](const Plan& p) -> Expected<std::map<std::string, double>> {
    const bool slow = ++calls > 1 && calls <= 6;
    std::map<std::string, double> t;
    for (const NodePlan& n : p.nodes) t[n.name] = (n.mode == Mode::fp32 ? 1.0 : 0.5) * (slow ? 3.0 : 1.0);
    return t;
  };
  PlannerOptions o = mlp_options();
  o.beta = 0;
  auto plan = plan_auto(g, o, e, &batches);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(calls == 18);  // three rounds of six: each differs from the one before until the last
  CHECK(lowered_nodes(*plan) > 0);
  for (const NodePlan& n : plan->nodes) CHECK(n.measured_ms == (n.mode == Mode::fp32 ? 1.0 : 0.5));
}

// The largest |q| of an int8 node's weights as its plan quantises them.
int32_t weight_max_q(const Graph& g, const NodePlan& n) {
  if (!n.weight_quant) return -1;
  return test::int8_max_abs(*g.constant(g.node(*g.find_node(n.name)).inputs[1]), *n.weight_quant);
}

TEST_CASE("plan_auto: int8 with the device's narrower operands where they measure faster") {
  // A device whose INT8 kernels are fastest with weights of |q| <= 64 or u7 rows (DeviceFormats::
  // int8_weight_max; AVX2 without VNNI): the planner offers int8 with 8-bit operands and
  // narrowed, times both, and, within a loose budget, keeps the faster. mm1 quantises its rows at
  // run time (u7 when narrowed, 8-bit weights); mm2 reads mm1's INT8 output (7-bit weights).
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 2, 3, 32);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  std::set<std::string> variants;  // node:weight range[:u7] as the planner had them timed
  e.measure_ms = [&](const Plan& p) -> Expected<std::map<std::string, double>> {
    std::map<std::string, double> t;
    for (const NodePlan& n : p.nodes) {
      t[n.name] = 1.0;
      if (n.mode != Mode::int8) continue;
      const int32_t q = weight_max_q(g, n);
      const bool u7 = n.dynamic_rows == RowQuant::u7;
      variants.insert(n.name + ":" + std::to_string(q) + (u7 ? ":u7" : ""));
      t[n.name] = q <= 64 || u7 ? 0.3 : 0.5;
    }
    return t;
  };
  PlannerOptions o;
  o.kl_budget = 1;
  o.device.int8_compute = true;
  o.device.int8_weight_max = 64;
  o.device_model = test_device();
  o.beta = 0;
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(variants == std::set<std::string>{"mm1:127", "mm1:127:u7", "mm2:127", "mm2:64"});
  for (const char* mm : {"mm1", "mm2"}) {
    CAPTURE(mm);
    CHECK(plan->find(mm)->mode == Mode::int8);
  }
  CHECK(plan->find("mm1")->dynamic_rows == RowQuant::u7);
  CHECK(weight_max_q(g, *plan->find("mm1")) == 127);
  CHECK(plan->find("mm2")->dynamic_rows == RowQuant::s8);
  CHECK(weight_max_q(g, *plan->find("mm2")) == 64);
  CHECK(r.modes["int8-narrow"] == 2);
  // A device without the preference is offered 8-bit operands only.
  o.device.int8_weight_max = 127;
  variants.clear();
  plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE(plan.ok());
  CHECK(variants == std::set<std::string>{"mm1:127", "mm2:127"});
  CHECK(plan->find("mm1")->dynamic_rows == RowQuant::s8);
  CHECK(r.modes["int8"] == 2);
}

TEST_CASE("plan_auto: int16 (16-bit weights and rows) where the device takes 16-bit rows") {
  // DeviceFormats::int8_s16_rows: int8 is offered with 16-bit weights and rows too (I16
  // weight_quant, int16_operand_qmax(K) levels each, RowQuant::s16), to MatMuls quantising their
  // rows at run time; mm2, which reads mm1's INT8 output, takes 16-bit rows of it as well. Where
  // it measures fastest within the budget it is kept; the emulation gives its divergence.
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 2, 3, 32);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  std::set<std::string> variants;  // node:weight range[:rows] as the planner had them timed
  e.measure_ms = [&](const Plan& p) -> Expected<std::map<std::string, double>> {
    std::map<std::string, double> t;
    for (const NodePlan& n : p.nodes) {
      t[n.name] = 1.0;
      if (n.mode != Mode::int8) continue;
      const bool w16 = n.weight_quant && n.weight_quant->type == DType::I16;
      const bool u7 = n.dynamic_rows == RowQuant::u7, s16 = n.dynamic_rows == RowQuant::s16;
      variants.insert(n.name + ":" + std::to_string(weight_max_q(g, n)) + (u7 ? ":u7" : s16 ? ":s16" : ""));
      t[n.name] = w16 ? 0.2 : u7 || s16 ? 0.3 : 0.5;
    }
    return t;
  };
  PlannerOptions o;
  o.kl_budget = 1;
  o.device.int8_compute = true;
  o.device.int8_weight_max = 64;
  o.device.int8_s16_rows = true;
  o.device_model = test_device();
  o.beta = 0;
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  // K = 64 and 32: 5792 and 8191 levels each side.
  CHECK(variants.count("mm1:" + std::to_string(int16_operand_qmax(64)) + ":s16") == 1);
  CHECK(variants.count("mm1:127:u7") == 1);
  CHECK(variants.count("mm2:" + std::to_string(int16_operand_qmax(32)) + ":s16") == 1);
  for (const char* mm : {"mm1", "mm2"}) {
    CAPTURE(mm);
    const NodePlan& n = *plan->find(mm);
    CHECK(n.mode == Mode::int8);
    CHECK(n.weights == DType::I16);
    CHECK(n.dynamic_rows == RowQuant::s16);
  }
  CHECK(r.modes["int16"] == 2);
  CHECK(plan->divergence >= 0);
  CHECK(plan->divergence < 1e-6);  // 11 bits a side against the FP32 ground truth
  // Without 16-bit rows there is no int16.
  o.device.int8_s16_rows = false;
  variants.clear();
  plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE(plan.ok());
  for (const std::string& v : variants) CHECK(v.find(":s16") == std::string::npos);
  CHECK(r.modes.count("int16") == 0);
}

TEST_CASE("plan_auto: a group over the budget is split and the parts that fit are lowered") {
  // Eight MatMuls in a chain, more (node, mode) pairs than sensitivity evaluations: groups by
  // class ('other': seven, 'output': the last). All of them in INT8 diverge by d; the budget is
  // 0.4 d, so the seven together do not fit, and without splitting they would stay FP32.
  GraphBuilder b("chain8");
  ValueId x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
  uint64_t state = 12345;
  for (int k = 0; k < 8; ++k) {
    std::vector<float> w(16 * 16);
    for (float& v : w) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      v = (float(state >> 40) / float(1 << 24) * 2 - 1) * 0.45f;  // uniform, variance ~ 1/16
    }
    x = b.op1("MatMul", {x, b.constant("w" + std::to_string(k), *Tensor::from_f32({16, 16}, w))}, {},
              "mm" + std::to_string(k));
  }
  b.output(x, "y");
  const Graph g = *b.build();
  const auto batches = *random_calibration_inputs(g, 2, 5, 32);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  PlannerOptions o;
  o.device.int8_compute = true;
  o.device_model = test_device();
  o.margin = 1;
  o.max_sensitivity_evaluations = 7;
  Plan all = *plan_from_policy(g, Policy::uniform(Mode::int8), o.device);
  std::map<std::string, Observer> obs;
  REQUIRE(observe_values(g, batches, values_to_observe(g, all), obs).ok());
  REQUIRE(calibrate_plan(g, all, obs, o).ok());
  const double d = *ev->divergence(all);
  REQUIRE(d > 0);
  o.kl_budget = 0.4 * d;
  PlannerReport r;
  auto plan = plan_auto(g, o, ev->evaluators(), &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  int int8 = 0;
  for (const NodePlan& n : plan->nodes) int8 += n.mode == Mode::int8;
  MESSAGE("all int8: " << d << "; plan: " << int8 << " int8 nodes, divergence " << plan->divergence << ", "
                       << r.groups << " groups, " << r.sensitivity_evaluations << " sensitivity evaluations");
  CHECK(r.groups > 2);
  CHECK(int8 >= 2);  // more than the 'output' group's one node
  CHECK(plan->divergence <= o.kl_budget);
}

TEST_CASE("plan_auto: a plan measured slower than FP32 end to end is refused") {
  // The roofline (test_device) says every lowering gains; the device's measured time says
  // otherwise in the first case and agrees in the second.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  for (double per_lowered : {+1.0, -0.1}) {
    CAPTURE(per_lowered);
    Evaluators e = ev->evaluators();
    int timed = 0;
    e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
      ++timed;
      HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
      return Evaluation{d, 10.0 + per_lowered * double(lowered_nodes(p))};
    };
    PlannerOptions o = mlp_options();
    PlannerReport r;
    auto plan = plan_auto(g, o, e, &batches, &r);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    CHECK(timed == r.evaluations + r.retimings);  // every evaluation went through evaluate
    CHECK(r.fp32_measured_ms == 10.0);
    if (per_lowered > 0) {
      CHECK(lowered_nodes(*plan) == 0);
      CHECK(r.rejected_slower > 0);
      CHECK(r.plan_measured_ms == 10.0);
    } else {
      CHECK(lowered_nodes(*plan) > 0);
      CHECK(r.plan_measured_ms < r.fp32_measured_ms);
    }
  }
}

TEST_CASE("plan_auto: a move measured slower than the plan it leaves is refused") {
  // Every lowering halves the measured time in proportion, but any FP16 node costs 30% (as an
  // F16 LayerNorm in front of a MatMul whose fast path takes BF16 only): the per-node costs and
  // FP16's smaller divergence favour FP16; the measurement does not.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  auto fp16_nodes = [](const Plan& p) {
    return std::count_if(p.nodes.begin(), p.nodes.end(), [](const NodePlan& n) { return n.mode == Mode::fp16; });
  };
  for (double slowdown : {1.1, 100.0}) {
    CAPTURE(slowdown);
    Evaluators e = ev->evaluators();
    e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
      HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
      const double lowered = double(lowered_nodes(p)) / double(p.nodes.size());
      return Evaluation{d, 10.0 * (1 - 0.5 * lowered) * (fp16_nodes(p) ? 1.3 : 1.0)};
    };
    PlannerOptions o = mlp_options();
    o.device.storage = {DType::F32, DType::BF16, DType::F16};  // 16-bit against 16-bit, no INT4
    o.max_move_slowdown = slowdown;
    o.max_memory_move_slowdown = slowdown;  // FP16 for BF16 promises no time (divergence alone)
    PlannerReport r;
    auto plan = plan_auto(g, o, e, &batches, &r);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    CHECK(lowered_nodes(*plan) > 0);
    if (slowdown < 2) {
      CHECK(fp16_nodes(*plan) == 0);
      CHECK(r.rejected_slower > 0);
    } else {
      CHECK(fp16_nodes(*plan) > 0);  // what the measurement prevents above
    }
  }
}

TEST_CASE("plan_auto: a move for memory alone may not measure slower than max_memory_move_slowdown") {
  // Every node measures the same in every mode (flat_node_times): the cost model sees no time to
  // gain, only bytes; end to end any lowering measures 5% slower.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  for (double allowed : {1.02, 1.1}) {
    CAPTURE(allowed);
    Evaluators e = ev->evaluators();
    e.measure_ms = flat_node_times;
    e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
      HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
      return Evaluation{d, lowered_nodes(p) > 0 ? 10.5 : 10.0};
    };
    PlannerOptions o = mlp_options();
    o.max_memory_move_slowdown = allowed;
    PlannerReport r;
    auto plan = plan_auto(g, o, e, &batches, &r);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    if (allowed < 1.05) {
      CHECK(lowered_nodes(*plan) == 0);
      CHECK(r.rejected_slower > 0);
    } else {
      CHECK(lowered_nodes(*plan) > 0);  // the bytes pay for 5% within the allowance
    }
  }
}

TEST_CASE("plan_auto: a move for memory alone timed fast once is timed again before it is taken") {
  // As above, every lowering measures 5% slower end to end, but the first timing of each
  // lowered plan comes out 10% fast (its neighbours' burst fell on the plans before it): judged
  // on that one timing, every move for memory would pass max_memory_move_slowdown.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  e.measure_ms = flat_node_times;
  std::map<std::vector<Mode>, int> timings;
  e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
    HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
    std::vector<Mode> modes;
    for (const NodePlan& n : p.nodes) modes.push_back(n.mode);
    const bool lowered = lowered_nodes(p) > 0;
    return Evaluation{d, !lowered ? 10.0 : timings[modes]++ == 0 ? 9.0 : 10.5};
  };
  PlannerOptions o = mlp_options();
  o.max_memory_move_slowdown = 1.02;
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(lowered_nodes(*plan) == 0);
  CHECK(r.rejected_slower > 0);
  CHECK_FALSE(timings.empty());  // lowered plans were timed, and refused
}

TEST_CASE("plan_auto: a plan timed slow once is timed again before a move is refused") {
  // Every lowering is 30% faster in truth, but the first timing of each lowered plan comes out
  // 40% slow (a neighbour's burst): judged on single timings nothing would be lowered.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  std::map<std::vector<Mode>, int> timings;
  e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
    HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
    std::vector<Mode> modes;
    for (const NodePlan& n : p.nodes) modes.push_back(n.mode);
    const bool lowered = lowered_nodes(p) > 0;
    const double ms = lowered ? 7.0 : 10.0;
    return Evaluation{d, lowered && timings[modes]++ == 0 ? ms * 2.0 : ms};
  };
  PlannerOptions o = mlp_options();
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(lowered_nodes(*plan) > 0);
  CHECK(r.plan_measured_ms == 7.0);
}

TEST_CASE("plan_auto: the final check times a plan that looks slower again before it backs off") {
  // Every lowered node saves 1% of the time. A burst of load on the machine covers the last four
  // timings of a quiet planning run (the final check: FP32, the plan, FP32, the plan), the plan's
  // 60% slower: judged on those alone the plan measured slower than FP32 and was backed off.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  int timed = 0, burst_from = -1;
  Evaluators e = ev->evaluators();
  e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
    HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
    const int lowered = lowered_nodes(p);
    const bool burst = burst_from >= 0 && timed >= burst_from && timed < burst_from + 4 && lowered > 0;
    ++timed;
    return Evaluation{d, 10.0 * (1 - 0.01 * lowered) * (burst ? 1.6 : 1.0)};
  };
  PlannerOptions o = mlp_options();
  PlannerReport quiet_report;
  auto quiet = plan_auto(g, o, e, &batches, &quiet_report);
  REQUIRE_MESSAGE(quiet.ok(), quiet.status().to_string());
  REQUIRE(lowered_nodes(*quiet) > 0);
  CHECK(quiet_report.backed_off == 0);
  const int first = timed;  // the same run again, the burst on the quiet run's last four timings
  burst_from = first + (first - 4);
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(timed - first > quiet_report.evaluations + quiet_report.retimings);  // timed again
  CHECK(r.backed_off == 0);
  CHECK(lowered_nodes(*plan) == lowered_nodes(*quiet));
  CHECK(r.plan_measured_ms == doctest::Approx(quiet_report.plan_measured_ms));
}

TEST_CASE("plan_auto: a move timed in a slow phase is judged against fresh timings of the plan it leaves") {
  // Every lowering is 30% faster in truth, but only the first timing (the FP32 plan's) comes
  // from a quiet machine: every later one is 60% slower (a neighbour's burst lasting minutes).
  // Against the FP32 plan's first timing every lowered plan measures 12% slower (11.2 against
  // 10 ms), and nothing would be lowered.
  const Graph g = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(g, 1, 3, 16);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  Evaluators e = ev->evaluators();
  int calls = 0;
  e.evaluate = [&](const Plan& p) -> Expected<Evaluation> {
    HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
    const double ms = lowered_nodes(p) > 0 ? 7.0 : 10.0;
    return Evaluation{d, calls++ == 0 ? ms : ms * 1.6};
  };
  PlannerOptions o = mlp_options();
  PlannerReport r;
  auto plan = plan_auto(g, o, e, &batches, &r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(lowered_nodes(*plan) > 0);
  CHECK(r.plan_measured_ms == doctest::Approx(11.2));
}

namespace {

// x -> MatMul -> Relu "big" (the largest activation) -> ReduceMean -> five small elementwise ops
// e0..e4, for the peak pass.
Graph peak_graph() {
  GraphBuilder b("peak");
  auto x = b.input("x", DType::F32, {8, 64});
  auto h = b.op1("Relu", {b.op1("MatMul", {x, b.constant("w1", filled({64, 512}, 0.01f))}, {}, "mm1")}, {}, "big");
  auto y = b.op1("ReduceMean", {h}, {{"axes", std::vector<int64_t>{-1}}}, "mean");
  int k = 0;
  for (const char* op : {"Sigmoid", "Tanh", "Relu", "Sigmoid", "Tanh"}) y = b.op1(op, {y}, {}, "e" + std::to_string(k++));
  b.output(y, "y");
  return *b.build();
}

// Its plans measured: 10 ms, each lowered elementwise node 8% more, the MatMul lowered 10% less,
// times `factor`; the peak in 16 bits where "big" (node `big`) is.
Expected<Evaluation> peak_evaluation(RefEvaluator& ev, const Plan& p, size_t big, double factor) {
  HPF_ASSIGN_OR_RETURN(double d, ev.divergence(p));
  int elementwise = 0, matmul = 0;
  for (const NodePlan& n : p.nodes)
    if (n.mode != Mode::fp32 && n.op != "ReduceMean") ++(n.op == "MatMul" ? matmul : elementwise);
  const double ms = 10.0 * (1 + 0.08 * elementwise) * (1 - 0.1 * matmul) * factor;
  const int64_t peak = 20000 + 8 * 512 * (p.nodes[big].mode == Mode::fp32 ? 4 : 2);
  return Evaluation{d, ms, peak};
}

// plan_auto on peak_graph (its classes as groups) with `beta`, each plan timed by peak_evaluation
// times factor(plan, index of "big").
Expected<Plan> plan_peak(double beta, const std::function<double(const Plan&, size_t)>& factor, PlannerReport& r) {
  const Graph g = peak_graph();
  const auto batches = *random_calibration_inputs(g, 1, 3, 1);
  auto ev = RefEvaluator::create(g, batches);
  if (!ev.ok()) return ev.status();
  const size_t big = static_cast<size_t>(*g.find_node("big"));
  Evaluators e = ev->evaluators();
  e.evaluate = [&](const Plan& p) { return peak_evaluation(*ev, p, big, factor(p, big)); };
  PlannerOptions o = mlp_options();
  o.max_sensitivity_evaluations = 10;  // groups by class
  o.beta = beta;
  return plan_auto(g, o, e, &batches, &r);
}

}  // namespace

TEST_CASE("plan_auto: the peak pass lowers what is live at the peak when the memory pays for the time") {
  // peak_graph, peak_evaluation: every lowered elementwise node costs 8% of the time, so the
  // elementwise class lowered whole measures too slow (max_latency_ratio) and the annealing keeps
  // it FP32. The measured peak falls with "big" in 16 bits only: worth 8% with beta 0.5, not with
  // beta 0.1.
  for (double beta : {0.5, 0.1}) {
    CAPTURE(beta);
    PlannerReport r;
    auto plan = plan_peak(beta, [](const Plan&, size_t) { return 1.0; }, r);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    const Mode big = plan->find("big")->mode;
    CHECK(r.rejected_slower > 0);
    CHECK(r.fp32_peak_bytes == 20000 + 8 * 512 * 4);
    for (int j = 0; j < 4; ++j) CHECK(plan->find("e" + std::to_string(j))->mode == Mode::fp32);  // e4 (the output's) is a class of its own
    if (beta > 0.2) {
      CHECK(r.peak_moves == 1);
      CHECK((big == Mode::bf16 || big == Mode::fp16));
      CHECK(r.plan_peak_bytes == 20000 + 8 * 512 * 2);
    } else {
      CHECK(r.peak_moves == 0);
      CHECK(big == Mode::fp32);
      CHECK(r.plan_peak_bytes == r.fp32_peak_bytes);
    }
  }
}

TEST_CASE("plan_auto: the peak pass judges its move on fresh timings of both plans") {
  // The peak test's graph with beta 0.5, and a machine that turns 60% slower for good once a plan
  // with "big" in 16 bits is timed: against the walk's timing of its best plan (a quiet one) the
  // peak move measured 73% slower, and was refused; on fresh timings it costs its 8%.
  bool slow_phase = false;
  PlannerReport r;
  auto plan = plan_peak(0.5, [&](const Plan& p, size_t big) {
    slow_phase = slow_phase || p.nodes[big].mode != Mode::fp32;
    return slow_phase ? 1.6 : 1.0;
  }, r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(r.peak_moves == 1);
  CHECK(plan->find("big")->mode != Mode::fp32);
}

TEST_CASE("plan_auto: the peak pass times a move that looks too slow again before it refuses it") {
  // The peak test's graph with beta 0.5: the move with "big" alone in 16 bits (the plan the peak
  // pass makes) costs its 8%, but its first three timings come out 60% slower (a burst of load):
  // judged on those (its evaluation and two rounds against the plan it leaves) it was refused.
  int big_alone = 0;
  PlannerReport r;
  auto plan = plan_peak(0.5, [&](const Plan& p, size_t big) {
    bool alone = p.nodes[big].mode != Mode::fp32;  // the other elementwise nodes FP32
    for (int j = 0; j < 4; ++j) alone = alone && p.find("e" + std::to_string(j))->mode == Mode::fp32;
    return alone && big_alone++ < 3 ? 1.6 : 1.0;
  }, r);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK(big_alone > 3);  // timed again after the burst
  CHECK(r.peak_moves == 1);
  CHECK(plan->find("big")->mode != Mode::fp32);
  CHECK(r.plan_peak_bytes == 20000 + 8 * 512 * 2);
}

TEST_CASE("plan_auto: 16-bit nodes without weights the walk left go back to FP32 where that measures faster") {
  // x -> MatMul mm1 -> Relu big -> Softmax sm -> ReduceMean mean -> Sigmoid e0 (two classes
  // without weights: elementwise, softmax), its plans measured 10 ms, 10% less with the MatMul lowered, `cost` more for each
  // other node in 16 bits: the whole graph in BF16 measures faster than FP32 and saves bytes, so
  // the walk starts there, and moving one elementwise group back gains less than the bytes it
  // costs in the cost model's objective. `peak`: the evaluator measures a peak (the same for
  // every plan: the weights hold it), else the memory is the cost model's bytes (9% of FP32's
  // more with them back in FP32: 4.5% of the objective with beta 0.5).
  GraphBuilder b("restore");
  auto x = b.input("x", DType::F32, {8, 64});
  auto h = b.op1("Relu", {b.op1("MatMul", {x, b.constant("w1", filled({64, 512}, 0.01f))}, {}, "mm1")}, {}, "big");
  h = b.op1("Softmax", {h}, {{"axis", int64_t{-1}}}, "sm");
  h = b.op1("ReduceMean", {h}, {{"axes", std::vector<int64_t>{-1}}}, "mean");
  b.output(b.op1("Sigmoid", {h}, {}, "e0"), "y");
  const Graph g = *b.build();
  const auto batches = *random_calibration_inputs(g, 1, 3, 1);
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  // over: the plans with the MatMul lowered and every other node FP32 diverge past the budget
  auto plan_with = [&](double cost, bool peak, PlannerReport& r, bool over = false) {
    Evaluators e = ev->evaluators();
    e.evaluate = [&, cost, peak, over](const Plan& p) -> Expected<Evaluation> {
      HPF_ASSIGN_OR_RETURN(double d, ev->divergence(p));
      int sixteen = 0;
      bool mm = false;
      for (const NodePlan& n : p.nodes)
        if (n.op == "MatMul") mm = n.mode != Mode::fp32;
        else sixteen += n.mode == Mode::bf16 || n.mode == Mode::fp16;
      if (over && mm && sixteen == 0) d = 1.0;
      return Evaluation{d, 10.0 * (mm ? 0.9 : 1.0) * (1 + cost * sixteen), peak ? 100000 : -1};
    };
    PlannerOptions o = mlp_options();
    o.max_sensitivity_evaluations = 10;  // groups by class
    o.peak_rounds = 0;
    return plan_auto(g, o, e, &batches, &r);
  };
  auto sixteen_bit_others = [](const Plan& p) {
    int n = 0;
    for (const NodePlan& np : p.nodes) n += np.op != "MatMul" && (np.mode == Mode::bf16 || np.mode == Mode::fp16);
    return n;
  };
  {  // 1.5% each: 6% faster all back, worth the bytes
    PlannerReport r;
    auto plan = plan_with(0.015, false, r);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    CHECK(r.restored > 0);
    CHECK(plan->find("mm1")->mode != Mode::fp32);
    CHECK(sixteen_bit_others(*plan) == 0);
    CHECK(r.plan_measured_ms == doctest::Approx(9.0));  // 9.54 with them in 16 bits
  }
  {  // 0.3% each: 1.2% faster, less than the cost model's bytes, more than the measured peaks
    PlannerReport bytes, peaks;
    auto by_bytes = plan_with(0.003, false, bytes);
    auto by_peaks = plan_with(0.003, true, peaks);
    REQUIRE(by_bytes.ok());
    REQUIRE(by_peaks.ok());
    CHECK(bytes.restored == 0);
    CHECK(sixteen_bit_others(*by_bytes) > 0);
    CHECK(peaks.restored > 0);
    CHECK(sixteen_bit_others(*by_peaks) == 0);
  }
  {  // all of them back at once over the budget: class by class, the elementwise (big, mean, e0)
     // first, the softmax (sm) left in 16 bits
    PlannerReport r;
    auto plan = plan_with(0.015, true, r, true);
    REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
    CHECK(r.restored == 3);
    CHECK(sixteen_bit_others(*plan) == 1);
    CHECK(plan->find("sm")->mode != Mode::fp32);
    CHECK(plan->find("big")->mode == Mode::fp32);
  }
  {  // no faster: they stay (their bytes count)
    PlannerReport r;
    auto plan = plan_with(0.0, true, r);
    REQUIRE(plan.ok());
    CHECK(r.restored == 0);
    CHECK(sixteen_bit_others(*plan) > 0);
  }
}

TEST_CASE("plan_auto: errors") {
  const Graph g = small_matmul();
  PlannerOptions o;
  o.device_model = test_device();
  auto none = plan_auto(g, o, Evaluators{});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() == "plan_auto: no divergence evaluator");
  const Graph m = *models::builtin("builtin:mlp");
  const auto batches = *random_calibration_inputs(m, 1, 3, 16);
  auto ev = RefEvaluator::create(m, batches);
  REQUIRE(ev.ok());
  for (double margin : {0.0, 1.5}) {
    o.margin = margin;
    auto bad = plan_auto(m, o, ev->evaluators(), &batches);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message() == "plan_auto: the margin must be in (0, 1]");
  }
}

namespace {

// A DeviceEvaluator of `g` on `batches`, without the kernel cache.
DeviceEvaluator uncached_evaluator(const Graph& g, const std::vector<std::vector<Tensor>>& batches) {
  SessionOptions so;
  so.use_cache = false;
  auto ev = DeviceEvaluator::create(so, g, batches);
  REQUIRE_MESSAGE(ev.ok(), ev.status().to_string());
  return *ev;
}

}  // namespace

TEST_CASE("device evaluator: one reference pass gives the ground truth and the planner's observers") {
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 2, 11, 8);
  DeviceEvaluator ev = uncached_evaluator(g, batches);
  const std::string hidden = g.value(g.node(0).outputs[0]).name;
  Graph with_hidden = g;
  REQUIRE(with_hidden.add_output(with_hidden.node(0).outputs[0]).ok());
  const auto other = *random_calibration_inputs(g, 1, 99, 8);
  for (const auto* inputs : {&batches, &other}) {  // its own batches (the ground truth too), others
    auto got = ev.reference_values(*inputs, {hidden});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE(got->size() == inputs->size());
    for (size_t b = 0; b < inputs->size(); ++b) {
      auto want = ref::run(with_hidden, (*inputs)[b]);
      REQUIRE(want.ok());
      REQUIRE((*got)[b].size() == 1);
      CHECK((*got)[b][0].to_f32() == want->back().to_f32());
    }
  }
  CHECK(ev.reference_passes() == 1);  // its own batches: values and ground truth in one pass
  CHECK(ev.reference_values(batches, {"no_such_value"}).status().message() ==
        "device evaluator: reference values: graph 'chain' has no value 'no_such_value'");
  // The ground truth is the batches' FP32 outputs: the FP32 plan diverges by rounding only (the
  // reference sums in FP64), a BF16 plan by more.
  CHECK(*ev.divergence(*plan_from_policy(g, Policy::uniform(Mode::fp32), all_formats())) < 1e-9);
  CHECK(*ev.divergence(*plan_from_policy(g, Policy::uniform(Mode::bf16), all_formats())) > 0);

  // The planner observes through the evaluator's pass or runs the interpreter itself: the same
  // plan, scales and all (an INT8 policy: every scale comes from the observers).
  PlannerOptions po;
  po.kl_budget = 1e-2;
  po.device = all_formats();
  po.policy = Policy::uniform(Mode::int8);
  Evaluators shared;
  shared.divergence = [&](const Plan& p) { return ev.divergence(p); };
  shared.reference_values = ev.evaluators().reference_values;
  Evaluators own;
  own.divergence = shared.divergence;
  auto a = plan_auto(g, po, shared, &batches);
  auto b = plan_auto(g, po, own, &batches);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  CHECK(std::count_if(a->nodes.begin(), a->nodes.end(), [](const NodePlan& n) {
          return n.mode == Mode::int8 && n.activation_quant && !n.activation_quant->scales.empty();
        }) > 0);
  CHECK(a->to_json() == b->to_json());
}

TEST_CASE("device evaluator: a small model's runs are timed again until they took 40 ms") {
  // Two batches of a tiny graph take microseconds, which one burst of load on a shared machine
  // covers: evaluate() runs them again in turn, timed only, until 40 ms or 16 runs in all (one of
  // three evaluations at least, should a run fall in a pause of this machine's vCPU).
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 2, 11, 8);
  DeviceEvaluator ev = uncached_evaluator(g, batches);
  const Plan fp32 = *plan_from_policy(g, Policy::uniform(Mode::fp32), all_formats());
  int most = 0;
  for (int k = 0; k < 3; ++k) {
    const int before = ev.timed_runs();
    auto e = ev.evaluate(fp32);
    REQUIRE_MESSAGE(e.ok(), e.status().to_string());
    CHECK(e->ms > 0);
    CHECK(e->divergence < 1e-9);
    const int runs = ev.timed_runs() - before;
    CHECK(runs >= 2);
    CHECK(runs <= 16);
    most = std::max(most, runs);
  }
  CHECK(most == 16);
}

TEST_CASE("device evaluator: kernels are measured again until the cache holds three measurements of each") {
  // The fastest of three (StepProfile::cached_ms, Executable::save_timings) is replayed; fewer
  // might all have fallen in one of a shared machine's slow minutes.
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 1, 11, 8);
  const auto dir = std::filesystem::temp_directory_path() / ("hpf_planner_times_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SessionOptions so;
  so.cache_dir = dir.string();
  auto ev = DeviceEvaluator::create(so, g, batches);
  REQUIRE_MESSAGE(ev.ok(), ev.status().to_string());
  const Plan fp32 = *plan_from_policy(g, Policy::uniform(Mode::fp32), all_formats());
  KernelCacheOptions co;
  co.dir = so.cache_dir;
  auto counts = [&] {
    auto cache = KernelCache::open(co);
    REQUIRE(cache.ok());
    std::vector<int64_t> n;
    for (const CacheEntry& e : cache->list()) {
      const auto meta = nlohmann::json::parse(e.meta.empty() ? "{}" : e.meta);
      int64_t most = 0;
      if (meta.contains("by_units"))
        for (const auto& [units, t] : meta["by_units"].items()) most = std::max(most, t.value("measurements", int64_t{0}));
      n.push_back(most);
    }
    return n;
  };
  for (int64_t call = 1; call <= 4; ++call) {
    CAPTURE(call);
    auto t = ev->measure_ms(fp32);
    REQUIRE_MESSAGE(t.ok(), t.status().to_string());
    CHECK(!t->empty());
    for (const auto& [name, ms] : *t) CHECK(ms >= 0);
    const std::vector<int64_t> n = counts();
    REQUIRE(!n.empty());
    for (int64_t m : n) CHECK(m == std::min<int64_t>(call, 3));  // the fourth answered from the cache
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("plan_auto: no static int8/fp8 scales for outputs calibrated on too few rows") {
  const Graph g = int8_chain();
  const auto batches = *random_calibration_inputs(g, 2, 11, 8);  // 16 rows of every output
  auto ev = RefEvaluator::create(g, batches);
  REQUIRE(ev.ok());
  PlannerOptions o;
  o.kl_budget = 1e-1;
  o.device.int8_compute = true;  // int8 the one lower mode
  o.device_model = test_device();
  auto statically_scaled = [](const Plan& p) {
    return std::count_if(p.nodes.begin(), p.nodes.end(), [](const NodePlan& n) {
      return (n.mode == Mode::int8 || n.mode == Mode::fp8) && n.activation_quant;
    });
  };
  o.min_calibration_rows = 17;
  auto few = plan_auto(g, o, ev->evaluators(), &batches);
  REQUIRE_MESSAGE(few.ok(), few.status().to_string());
  CHECK(statically_scaled(*few) == 0);
  CHECK(few->find("mm2")->mode == Mode::int8);  // a float output needs no static scale
  o.min_calibration_rows = 16;
  auto enough = plan_auto(g, o, ev->evaluators(), &batches);
  REQUIRE_MESSAGE(enough.ok(), enough.status().to_string());
  CHECK(statically_scaled(*enough) > 0);
}
