// Structural passes: topological order, sorting, dead-node removal, and constant folding
// (hpf::fold_constants, which uses the reference kernels and then these passes).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/reference.hpp"
#include "hpf/tensor.hpp"

#include "ir_test_util.hpp"

using hpf::test::f32;

namespace {

using hpf::Dim;
using hpf::DType;
using hpf::Graph;
using hpf::GraphBuilder;
using hpf::kNoValue;
using hpf::Shape;
using hpf::Tensor;
using hpf::ValueId;
using Order = std::vector<int32_t>;

// 0, 1, 2, ... as an F32 tensor of `shape`.
Tensor iota(std::vector<int64_t> shape, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(hpf::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<float>(i) - 5.0f) * scale;
  return f32(std::move(shape), std::move(v));
}

Graph built(GraphBuilder& b) {
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs) {
  auto r = hpf::ref::run(g, inputs);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return std::move(r).value();
}

void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].dtype() == b[i].dtype());
    CHECK(a[i].shape() == b[i].shape());
    CHECK(a[i].to_f32() == b[i].to_f32());
  }
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> r;
  for (const hpf::Node& n : g.nodes()) r.push_back(n.name);
  return r;
}

// Producers, lookups and ids agree with each other (what remove_dead_nodes and
// sort_topologically must keep true).
void check_consistent(const Graph& g) {
  for (size_t v = 0; v < g.values().size(); ++v) {
    const hpf::Value& val = g.values()[v];
    CAPTURE(val.name);
    CHECK(g.find_value(val.name) == static_cast<ValueId>(v));
    if (val.producer >= 0) {
      REQUIRE(val.producer < static_cast<int32_t>(g.nodes().size()));
      const auto& outs = g.node(val.producer).outputs;
      CHECK(std::find(outs.begin(), outs.end(), static_cast<ValueId>(v)) != outs.end());
    }
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const hpf::Node& n = g.nodes()[i];
    CAPTURE(n.name);
    CHECK(g.find_node(n.name) == static_cast<int32_t>(i));
    for (ValueId o : n.outputs) {
      REQUIRE(o >= 0);
      REQUIRE(o < static_cast<ValueId>(g.values().size()));
      if (!g.value(o).constant) CHECK(g.value(o).producer == static_cast<int32_t>(i));
    }
    for (ValueId in : n.inputs)
      CHECK((in == kNoValue || (in >= 0 && in < static_cast<ValueId>(g.values().size()))));
  }
  CHECK(g.validate().ok());
}

// x -> relu 'a' and sigmoid 'b' -> add 'c' -> tanh 'd' (output).
Graph diamond() {
  GraphBuilder b("diamond");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 4});
  auto a = b.op1("Relu", {x}, {}, "relu");
  auto s = b.op1("Sigmoid", {x}, {}, "sigmoid");
  auto c = b.op1("Add", {a, s}, {}, "add");
  b.output(b.op1("Tanh", {c}, {}, "tanh"));
  return built(b);
}

// ---- topological order -----------------------------------------------------------------------

TEST_CASE("topological_order keeps an order that is already topological") {
  Graph g = diamond();
  auto order = g.topological_order();
  REQUIRE(order.ok());
  CHECK(*order == Order{0, 1, 2, 3});
  // Independent nodes keep their insertion order too (smallest id first).
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2});
  auto p = b.op1("Exp", {x}, {}, "p");
  auto q = b.op1("Neg", {x}, {}, "q");
  auto r = b.op1("Abs", {x}, {}, "r");
  b.output(r);
  b.output(q);
  b.output(p);
  Graph h = built(b);
  CHECK(*h.topological_order() == Order{0, 1, 2});
  Graph empty("empty");
  CHECK(empty.topological_order()->empty());
}

TEST_CASE("topological_order and sort_topologically on nodes stored out of order") {
  Graph g = diamond();
  const ValueId x = *g.find_value("x");
  const std::vector<Tensor> before = run(g, {iota({3, 4}, 0.25f)});
  // Reverse the node table: tanh, add, sigmoid, relu. Producer ids are now stale, which only
  // sort_topologically repairs.
  std::swap(g.node(0), g.node(3));
  std::swap(g.node(1), g.node(2));
  CHECK(node_names(g) == std::vector<std::string>{"tanh", "add", "sigmoid", "relu"});
  auto order = g.topological_order();
  REQUIRE(order.ok());
  CHECK(*order == Order{2, 3, 1, 0});

  REQUIRE(g.sort_topologically().ok());
  CHECK(node_names(g) == std::vector<std::string>{"sigmoid", "relu", "add", "tanh"});
  CHECK(*g.topological_order() == Order{0, 1, 2, 3});
  CHECK(g.value(*g.find_value("sigmoid:out")).producer == 0);
  CHECK(g.value(*g.find_value("relu:out")).producer == 1);
  CHECK(g.value(*g.find_value("add:out")).producer == 2);
  CHECK(g.value(*g.find_value("tanh:out")).producer == 3);
  CHECK(g.value(x).producer == -1);
  check_consistent(g);
  REQUIRE(g.infer_shapes().ok());
  CHECK(hpf::to_string(g.value(g.outputs()[0]).shape) == "[batch,4]");
  check_same(run(g, {iota({3, 4}, 0.25f)}), before);
}

TEST_CASE("sort_topologically of a sorted graph changes nothing") {
  Graph g = diamond();
  const auto values_before = g.values().size();
  REQUIRE(g.sort_topologically().ok());
  CHECK(node_names(g) == std::vector<std::string>{"relu", "sigmoid", "add", "tanh"});
  CHECK(g.values().size() == values_before);
  check_consistent(g);
}

TEST_CASE("topological_order and sort_topologically report a cycle") {
  Graph g = diamond();
  // relu reads tanh's output: relu -> add -> tanh -> relu.
  g.node(0).inputs[0] = g.node(3).outputs[0];
  auto order = g.topological_order();
  REQUIRE_FALSE(order.ok());
  CHECK(order.status().code() == hpf::StatusCode::invalid_argument);
  CHECK_CONTAINS(order.status().message(),
                 "graph 'diamond' has a cycle through node 'relu' (Relu)");
  const hpf::Status s = g.sort_topologically();
  REQUIRE_FALSE(s.ok());
  CHECK_CONTAINS(s.message(), "has a cycle");
  CHECK(node_names(g) == std::vector<std::string>{"relu", "sigmoid", "add", "tanh"});  // untouched
}

// ---- remove_dead_nodes -----------------------------------------------------------------------

TEST_CASE("remove_dead_nodes removes unreachable nodes and their values, renumbering ids") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2, 3});
  auto unused_in = b.input("unused", DType::F32, {5});
  auto w_dead = b.constant("w_dead", iota({2, 3}));
  auto w_unused = b.constant("w_unused", iota({7}));
  auto bias = b.constant("bias", iota({3}, 0.5f));
  auto d1 = b.op1("Sigmoid", {x}, {}, "dead_sigmoid");  // dead, before the live nodes
  auto a = b.op1("Relu", {x}, {}, "relu");
  auto d2 = b.op1("Mul", {d1, w_dead}, {}, "dead_mul");  // dead, reads a dead value
  auto y = b.op1("Add", {a, bias}, {}, "add");
  auto d3 = b.op1("Neg", {y}, {}, "dead_neg");  // dead, reads a live value
  b.output(y, "y");
  (void)unused_in;
  (void)w_unused;
  (void)d2;
  (void)d3;
  Graph g = built(b);
  const std::vector<Tensor> inputs{iota({2, 3}), iota({5})};
  const std::vector<Tensor> before = run(g, inputs);
  const Tensor* bias_tensor = g.constant(bias);
  REQUIRE(g.nodes().size() == 5);

  CHECK(g.remove_dead_nodes() == 3);
  CHECK(node_names(g) == std::vector<std::string>{"relu", "add"});
  for (const char* gone :
       {"dead_sigmoid:out", "dead_mul:out", "dead_neg:out", "w_dead", "w_unused"}) {
    CAPTURE(gone);
    CHECK(g.find_value(gone) == std::nullopt);
  }
  // Graph inputs are kept, used or not, in their order.
  REQUIRE(g.inputs().size() == 2);
  CHECK(g.value(g.inputs()[0]).name == "x");
  CHECK(g.value(g.inputs()[1]).name == "unused");
  // What is left is renumbered densely and consistently.
  CHECK(g.values().size() == 5);  // x, unused, bias, relu:out, y
  const ValueId nx = *g.find_value("x"), nbias = *g.find_value("bias"),
                na = *g.find_value("relu:out"), ny = *g.find_value("y");
  CHECK(g.node(0).inputs == std::vector<ValueId>{nx});
  CHECK(g.node(0).outputs == std::vector<ValueId>{na});
  CHECK(g.node(1).inputs == std::vector<ValueId>{na, nbias});
  CHECK(g.node(1).outputs == std::vector<ValueId>{ny});
  CHECK(g.outputs() == std::vector<ValueId>{ny});
  CHECK(g.value(na).producer == 0);
  CHECK(g.value(ny).producer == 1);
  CHECK(g.constant(nbias) == bias_tensor);  // the weight itself is untouched
  CHECK(g.value(ny).shape == Shape{2, 3});
  check_consistent(g);
  REQUIRE(g.infer_shapes().ok());
  check_same(run(g, inputs), before);
  // Nothing left to remove.
  CHECK(g.remove_dead_nodes() == 0);
  CHECK(node_names(g) == std::vector<std::string>{"relu", "add"});
}

TEST_CASE("remove_dead_nodes keeps every output of a live node and optional inputs") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {6, 2});
  auto parts = b.op("Split", {x}, {}, 3, "split");
  auto y = b.op1("Gemm", {parts[0], b.constant("w", iota({2, 2})), kNoValue}, {}, "gemm");
  b.output(y);
  Graph g = built(b);
  CHECK(g.remove_dead_nodes() == 0);
  CHECK(g.node(0).outputs.size() == 3);  // the unused parts stay: Split still writes them
  CHECK(g.find_value("split:out2").has_value());
  CHECK(g.node(1).inputs.size() == 3);
  CHECK(g.node(1).inputs[2] == kNoValue);
  check_consistent(g);
}

TEST_CASE("remove_dead_nodes drops the producer of a value turned into a constant") {
  Graph g = diamond();
  const ValueId c = *g.find_value("add:out");
  g.set_constant(c, iota({3, 4}));
  CHECK(g.remove_dead_nodes() == 3);  // relu, sigmoid and add feed only the constant
  CHECK(node_names(g) == std::vector<std::string>{"tanh"});
  const ValueId nc = *g.find_value("add:out");
  REQUIRE(g.constant(nc) != nullptr);
  CHECK(g.value(nc).producer == -1);
  CHECK(g.node(0).inputs == std::vector<ValueId>{nc});
  CHECK(g.find_value("relu:out") == std::nullopt);
  CHECK(g.inputs().size() == 1);  // x is kept although nothing reads it now
  check_consistent(g);
  REQUIRE(g.infer_shapes().ok());
  const auto out = run(g, {iota({3, 4})});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == std::vector<int64_t>{3, 4});
}

TEST_CASE("remove_dead_nodes on a graph whose output is a graph input") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2});
  (void)b.relu(x);
  b.output(x);
  Graph g = built(b);
  CHECK(g.remove_dead_nodes() == 1);
  CHECK(g.nodes().empty());
  CHECK(g.values().size() == 1);
  CHECK(g.outputs() == std::vector<ValueId>{0});
  check_consistent(g);
}

// ---- fold_constants --------------------------------------------------------------------------

TEST_CASE("fold_constants: a Shape -> Gather -> Concat -> Reshape chain becomes a constant shape") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2, 3, 4});
  auto shape = b.op1("Shape", {x}, {}, "shape");
  auto first = b.op1("Gather", {shape, b.constant_i64({0})}, {{"axis", int64_t{0}}}, "gather");
  auto target = b.op1("Concat", {first, b.constant_i64({-1})}, {{"axis", int64_t{0}}}, "concat");
  auto r = b.op1("Reshape", {x, target}, {}, "reshape");
  auto y = b.op1("Relu", {r}, {}, "relu");
  b.output(y, "y");
  Graph g = built(b);
  // Before folding the target is a runtime value: sizes unknown.
  CHECK(hpf::to_string(g.value(r).shape) == "[?,?]");
  const std::vector<Tensor> inputs{iota({2, 3, 4}, 0.5f)};
  const std::vector<Tensor> before = run(g, inputs);
  REQUIRE(before[0].shape() == std::vector<int64_t>{2, 12});

  auto folded = hpf::fold_constants(g);
  REQUIRE_MESSAGE(folded.ok(), folded.status().to_string());
  CHECK(*folded == 3);  // Shape, Gather, Concat
  CHECK(node_names(g) == std::vector<std::string>{"reshape", "relu"});
  const auto t = g.find_value("concat:out");
  REQUIRE(t.has_value());
  REQUIRE(g.constant(*t) != nullptr);
  CHECK(g.constant(*t)->dtype() == DType::I64);
  CHECK(g.constant(*t)->to_i64() == std::vector<int64_t>{2, -1});
  CHECK(g.find_value("shape:out") == std::nullopt);
  CHECK(g.find_value("gather:out") == std::nullopt);
  // Shapes were inferred again, now with the constant target.
  CHECK(hpf::to_string(g.value(*g.find_value("reshape:out")).shape) == "[2,12]");
  CHECK(hpf::to_string(g.value(g.outputs()[0]).shape) == "[2,12]");
  check_consistent(g);
  check_same(run(g, inputs), before);
  // Folding again finds nothing.
  CHECK(*hpf::fold_constants(g) == 0);
}

TEST_CASE("fold_constants: Shape of a symbolic input stays, so nothing after it folds") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 3, 4});
  auto shape = b.op1("Shape", {x});
  auto first = b.op1("Gather", {shape, b.constant_i64({0})});
  auto target = b.op1("Concat", {first, b.constant_i64({-1})}, {{"axis", int64_t{0}}});
  b.output(b.op1("Reshape", {x, target}));
  Graph g = built(b);
  const std::vector<Tensor> inputs{iota({5, 3, 4})};
  const auto before = run(g, inputs);
  auto folded = hpf::fold_constants(g);
  REQUIRE(folded.ok());
  CHECK(*folded == 0);
  CHECK(g.nodes().size() == 4);
  check_same(run(g, inputs), before);
}

TEST_CASE("fold_constants: Add of two constants folds, a node with a runtime input stays") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2, 3});
  auto k1 = b.constant("k1", f32({3}, {1, 2, 3}));
  auto k2 = b.constant("k2", f32({3}, {10, 20, 30}));
  auto c = b.op1("Add", {k1, k2}, {}, "add");
  auto y = b.op1("Mul", {x, c}, {}, "mul");
  b.output(y);
  Graph g = built(b);
  const std::vector<Tensor> inputs{iota({2, 3})};
  const auto before = run(g, inputs);

  auto folded = hpf::fold_constants(g);
  REQUIRE(folded.ok());
  CHECK(*folded == 1);
  CHECK(node_names(g) == std::vector<std::string>{"mul"});  // the runtime Mul is kept
  const auto nc = g.find_value("add:out");
  REQUIRE(nc.has_value());
  REQUIRE(g.constant(*nc) != nullptr);
  CHECK(g.constant(*nc)->to_f32() == std::vector<float>{11, 22, 33});
  CHECK(g.constant(*nc)->shape() == std::vector<int64_t>{3});
  CHECK(g.find_value("k1") == std::nullopt);  // only the folded node read them
  CHECK(g.find_value("k2") == std::nullopt);
  CHECK(g.weight_bytes() == 3 * sizeof(float));
  check_consistent(g);
  check_same(run(g, inputs), before);
}

TEST_CASE("fold_constants: nothing to fold") {
  Graph g = diamond();
  auto folded = hpf::fold_constants(g);
  REQUIRE(folded.ok());
  CHECK(*folded == 0);
  CHECK(g.nodes().size() == 4);
}

TEST_CASE("fold_constants: an output above max_bytes is not folded") {
  auto make = [] {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {64});
    auto c = b.op1("Add", {b.constant("k1", iota({64})), b.constant("k2", iota({64}))}, {}, "add");
    b.output(b.op1("Mul", {x, c}, {}, "mul"));
    return built(b);
  };
  const size_t out_bytes = 64 * sizeof(float);
  Graph small = make();
  auto none = hpf::fold_constants(small, out_bytes - 1);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  CHECK(node_names(small) == std::vector<std::string>{"add", "mul"});
  CHECK(small.find_value("k1").has_value());

  Graph exact = make();
  CHECK(*hpf::fold_constants(exact, out_bytes) == 1);  // at the limit: folded
  CHECK(node_names(exact) == std::vector<std::string>{"mul"});

  Graph dflt = make();
  const std::vector<Tensor> inputs{iota({64})};
  const auto before = run(dflt, inputs);
  CHECK(*hpf::fold_constants(dflt) == 1);
  check_same(run(dflt, inputs), before);
}

// A node whose input became constant earlier in the same pass (ConstantOfShape after its Shape
// input was folded) has no inferred size yet: the size check must use the computed output.
TEST_CASE("fold_constants: max_bytes also holds for outputs whose size was not known before") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {64, 64});
  auto shape = b.op1("Shape", {x}, {}, "shape");
  auto ones = b.op1("ConstantOfShape", {shape}, {{"value", f32({1}, {1.0f})}}, "ones");
  b.output(b.op1("Add", {x, ones}, {}, "add"));
  Graph g = built(b);
  const std::vector<Tensor> inputs{iota({64, 64})};
  const auto before = run(g, inputs);
  const size_t max_bytes = 1024;  // ones is 64*64*4 = 16 KiB

  auto folded = hpf::fold_constants(g, max_bytes);
  REQUIRE(folded.ok());
  CHECK(g.weight_bytes() <= max_bytes);
  CHECK(g.find_node("ones").has_value());
  CHECK(*folded == 1);  // only the Shape node
  check_same(run(g, inputs), before);
}

}  // namespace
