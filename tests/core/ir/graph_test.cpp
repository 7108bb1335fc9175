// The graph IR: building graphs (Graph and GraphBuilder), names and ids, copies, validate()
// with its error messages, and the op table.
#include "hpf/graph.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/op_table.hpp"
#include "hpf/tensor.hpp"

#include "ir_test_util.hpp"

using hpf::test::f32;

namespace {

using hpf::Attributes;
using hpf::Dim;
using hpf::DType;
using hpf::Graph;
using hpf::GraphBuilder;
using hpf::kNoValue;
using hpf::Shape;
using hpf::Status;
using hpf::StatusCode;
using hpf::Tensor;
using hpf::ValueId;

Tensor zeros(std::vector<int64_t> shape) { return Tensor(DType::F32, std::move(shape)); }

ValueId ok_id(const hpf::Expected<ValueId>& r) {
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return *r;
}

int32_t ok_node(const hpf::Expected<int32_t>& r) {
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return *r;
}

// x[batch,4] -> Relu 'r0' -> a -> Relu 'r1' -> b (output), built with Graph directly.
Graph two_relus() {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {Dim::sym("batch"), 4}));
  const int32_t r0 = ok_node(g.add_node("Relu", "r0", {x}, {"a"}));
  const int32_t r1 = ok_node(g.add_node("Relu", "r1", {g.node(r0).outputs[0]}, {"b"}));
  REQUIRE(g.add_output(g.node(r1).outputs[0]).ok());
  return g;
}

std::string validate_error(const Graph& g, StatusCode code = StatusCode::invalid_argument) {
  const Status s = g.validate();
  REQUIRE_FALSE_MESSAGE(s.ok(), "validate() accepted the graph");
  CHECK(s.code() == code);
  return s.message();
}

// ---- Dim and Shape ---------------------------------------------------------------------------

TEST_CASE("Dim: known sizes, symbols and unknown dims") {
  const Dim known(128), sym = Dim::sym("batch"), unknown;
  CHECK(known.known());
  CHECK(known.value == 128);
  CHECK_FALSE(sym.known());
  CHECK(sym.symbol == "batch");
  CHECK_FALSE(unknown.known());
  CHECK(unknown.symbol.empty());
  CHECK(Dim(0).known());
  CHECK(sym == Dim::sym("batch"));
  CHECK(sym != Dim::sym("seq"));
  CHECK(known != sym);
  CHECK(unknown == Dim());
}

TEST_CASE("Shape: to_string, concrete, make_shape") {
  const Shape s{Dim::sym("batch"), 128, Dim(), 768};
  CHECK(hpf::to_string(s) == "[batch,128,?,768]");
  CHECK(hpf::to_string(Shape{}) == "[]");
  CHECK_FALSE(hpf::concrete(s).has_value());
  const Shape c{2, 0, 3};
  REQUIRE(hpf::concrete(c).has_value());
  CHECK(*hpf::concrete(c) == std::vector<int64_t>{2, 0, 3});
  CHECK(hpf::concrete(Shape{}) == std::vector<int64_t>{});
  const std::vector<int64_t> sizes{4, 5};
  CHECK(hpf::make_shape(sizes) == Shape{4, 5});
}

TEST_CASE("attr_type_name names every attribute kind") {
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(int64_t{1}))) == "int");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(1.0f))) == "float");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(std::string("x")))) == "string");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(std::vector<int64_t>{1}))) == "ints");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(std::vector<float>{1}))) == "floats");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(std::vector<std::string>{}))) == "strings");
  CHECK(std::string(hpf::attr_type_name(hpf::AttrValue(Tensor()))) == "tensor");
}

// ---- Building with Graph directly --------------------------------------------------------------

TEST_CASE("Graph: an initializer from a shared tensor is shared, not copied") {
  Graph g("shared");
  auto t = std::make_shared<const Tensor>(zeros({3, 5}));
  const ValueId w = ok_id(g.add_initializer("w", t));
  CHECK(g.constant(w) == t.get());
  CHECK(g.value(w).dtype == DType::F32);
  CHECK(g.value(w).shape == Shape{3, 5});
  CHECK(g.value(w).producer == -1);
  const Graph copy = g;  // copies share it too
  CHECK(copy.constant(w) == t.get());
  auto none = g.add_initializer("v", std::shared_ptr<const Tensor>());
  REQUIRE_FALSE(none.ok());
  CHECK_CONTAINS(none.status().message(), "initializer 'v' has no tensor");
  auto clash = g.add_initializer("w", t);
  REQUIRE_FALSE(clash.ok());
  CHECK_CONTAINS(clash.status().message(), "value name 'w' is already used");
}

TEST_CASE("Graph: inputs, initializers and nodes get dense ids, names and producers") {
  Graph g("mlp");
  CHECK(g.name() == "mlp");
  const ValueId x = ok_id(g.add_input("x", DType::F16, {Dim::sym("batch"), 4}));
  const ValueId w = ok_id(g.add_initializer("w", zeros({4, 2})));
  CHECK(x == 0);
  CHECK(w == 1);
  CHECK(g.inputs() == std::vector<ValueId>{x});
  CHECK(g.value(x).dtype == DType::F16);
  CHECK(g.value(x).has_shape);
  CHECK(g.value(x).producer == -1);
  CHECK(g.value(w).has_shape);
  CHECK(g.value(w).shape == Shape{4, 2});
  CHECK(g.value(w).producer == -1);
  REQUIRE(g.constant(w) != nullptr);
  CHECK(g.constant(x) == nullptr);
  CHECK(g.constant(kNoValue) == nullptr);

  const int32_t mm = ok_node(g.add_node("MatMul", "mm", {x, w}, {"y"}));
  const int32_t relu = ok_node(g.add_node("Relu", "", {g.node(mm).outputs[0]}, {"z"}));
  CHECK(mm == 0);
  CHECK(relu == 1);
  CHECK(g.node(relu).name == "Relu_1");  // an empty name gets <op>_<id>
  CHECK(g.node(mm).op == "MatMul");
  const ValueId y = g.node(mm).outputs[0];
  CHECK(g.value(y).name == "y");
  CHECK(g.value(y).producer == mm);
  CHECK_FALSE(g.value(y).has_shape);  // filled by infer_shapes
  CHECK(g.find_value("y") == y);
  CHECK(g.find_value("nope") == std::nullopt);
  CHECK(g.find_node("mm") == mm);
  CHECK(g.find_node("Relu_1") == relu);
  CHECK(g.find_node("y") == std::nullopt);  // values and nodes are separate namespaces

  REQUIRE(g.add_output(g.node(relu).outputs[0]).ok());
  CHECK(g.outputs() == std::vector<ValueId>{g.node(relu).outputs[0]});
  REQUIRE(g.validate().ok());
  REQUIRE(g.infer_shapes().ok());
  CHECK(g.value(y).dtype == DType::F16);
  CHECK(hpf::to_string(g.value(y).shape) == "[batch,2]");
  CHECK(hpf::to_string(g.value(g.node(relu).outputs[0]).shape) == "[batch,2]");
  CHECK(g.weight_bytes() == 4 * 2 * sizeof(float));
}

TEST_CASE("Graph: an optional input may be absent (kNoValue)") {
  Graph g("g");
  const ValueId a = ok_id(g.add_input("a", DType::F32, {3, 4}));
  const ValueId b = ok_id(g.add_input("b", DType::F32, {4, 5}));
  const int32_t n = ok_node(g.add_node("Gemm", "gemm", {a, b, kNoValue}, {"y"}));
  REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
  REQUIRE(g.validate().ok());
  REQUIRE(g.infer_shapes().ok());
  CHECK(g.value(g.node(n).outputs[0]).shape == Shape{3, 5});
}

TEST_CASE("Graph: duplicate names are rejected with messages naming them") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));

  SUBCASE("input named like an input") {
    auto r = g.add_input("x", DType::F32, {2});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK_CONTAINS(r.status().message(), "graph 'g': value name 'x' is already used");
  }
  SUBCASE("initializer named like an input") {
    auto r = g.add_initializer("x", zeros({2}));
    REQUIRE_FALSE(r.ok());
    CHECK_CONTAINS(r.status().message(), "value name 'x' is already used");
  }
  SUBCASE("node output named like an input") {
    auto r = g.add_node("Relu", "r", {x}, {"x"});
    REQUIRE_FALSE(r.ok());
    CHECK_CONTAINS(r.status().message(), "node 'r' (Relu) output");
    CHECK_CONTAINS(r.status().message(), "value name 'x' is already used");
    CHECK(g.nodes().empty());  // nothing was added
    CHECK(g.values().size() == 1);
  }
  SUBCASE("node named like another node") {
    ok_node(g.add_node("Relu", "r", {x}, {"a"}));
    auto r = g.add_node("Sigmoid", "r", {x}, {"b"});
    REQUIRE_FALSE(r.ok());
    CHECK_CONTAINS(r.status().message(), "graph 'g': node name 'r' is already used");
    CHECK(g.find_value("b") == std::nullopt);
  }
  SUBCASE("a generated node name that is taken") {
    ok_node(g.add_node("Relu", "Relu_1", {x}, {"a"}));
    auto r = g.add_node("Relu", "", {x}, {"b"});  // would be Relu_1
    REQUIRE_FALSE(r.ok());
    CHECK_CONTAINS(r.status().message(), "node name 'Relu_1' is already used");
  }
  SUBCASE("empty value names") {
    auto r = g.add_input("", DType::F32, {2});
    REQUIRE_FALSE(r.ok());
    CHECK_CONTAINS(r.status().message(), "empty value name");
    auto n = g.add_node("Relu", "r", {x}, {""});
    REQUIRE_FALSE(n.ok());
    CHECK_CONTAINS(n.status().message(), "node 'r' (Relu) output");
    CHECK_CONTAINS(n.status().message(), "empty value name");
  }
}

// Output names of one node are checked against each other too, not only against the graph.
TEST_CASE("Graph: two outputs of one node may not share a name") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {4}));
  auto r = g.add_node("Split", "s", {x}, {"a", "a"});
  CHECK_FALSE(r.ok());
  if (!r.ok()) CHECK_CONTAINS(r.status().message(), "value name 'a' is already used");
  int named_a = 0;
  for (const hpf::Value& v : g.values()) named_a += v.name == "a";
  CHECK(named_a <= 1);
}

TEST_CASE("Graph: dangling value ids are rejected") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
  auto r = g.add_node("Add", "add", {x, 7}, {"y"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::invalid_argument);
  CHECK_CONTAINS(r.status().message(),
                 "node 'add' (Add): input 1 refers to value id 7 which does not exist");
  auto neg = g.add_node("Relu", "r", {-5}, {"y"});
  REQUIRE_FALSE(neg.ok());
  CHECK_CONTAINS(neg.status().message(), "input 0 refers to value id -5 which does not exist");

  const Status out = g.add_output(42);
  REQUIRE_FALSE(out.ok());
  CHECK_CONTAINS(out.message(), "graph 'g': output refers to value id 42 which does not exist");
  CHECK_FALSE(g.add_output(kNoValue).ok());
  CHECK(g.outputs().empty());
}

TEST_CASE("Graph: input dimensions must be sizes or -1 (unknown)") {
  Graph g("g");
  auto bad = g.add_input("x", DType::F32, {2, Dim(-3)});
  REQUIRE_FALSE(bad.ok());
  CHECK_CONTAINS(bad.status().message(), "input 'x': bad dimension -3");
  CHECK(ok_id(g.add_input("y", DType::F32, {Dim(), Dim::sym("n"), 0})) == 0);
}

TEST_CASE("Graph: rename_value keeps names unique and lookups consistent") {
  Graph g = two_relus();
  const ValueId a = *g.find_value("a");
  REQUIRE(g.rename_value(a, "hidden").ok());
  CHECK(g.value(a).name == "hidden");
  CHECK(g.find_value("hidden") == a);
  CHECK(g.find_value("a") == std::nullopt);
  CHECK(g.rename_value(a, "hidden").ok());  // to its own name: no-op
  const Status taken = g.rename_value(a, "x");
  REQUIRE_FALSE(taken.ok());
  CHECK_CONTAINS(taken.message(), "value name 'x' is already used");
  CHECK(g.value(a).name == "hidden");
  CHECK_FALSE(g.rename_value(a, "").ok());
  // The old name is free again.
  CHECK(ok_id(g.add_input("a", DType::F32, {1})) >= 0);
  CHECK(g.validate().ok());
}

TEST_CASE("Graph: copies share initializer bytes but not structure") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2, 3}));
  const ValueId w = ok_id(g.add_initializer("w", f32({3}, {1, 2, 3})));
  const int32_t n = ok_node(g.add_node("Add", "add", {x, w}, {"y"}));
  REQUIRE(g.add_output(g.node(n).outputs[0]).ok());

  Graph copy = g;
  CHECK(copy.constant(w) == g.constant(w));  // same Tensor, not a copy of the bytes
  CHECK(copy.value(w).constant.get() == g.value(w).constant.get());
  CHECK(g.value(w).constant.use_count() == 2);
  CHECK(copy.weight_bytes() == g.weight_bytes());
  CHECK(g.weight_bytes() == 3 * sizeof(float));

  // Structure is independent.
  ok_node(copy.add_node("Relu", "r", {copy.node(n).outputs[0]}, {"z"}));
  CHECK(copy.nodes().size() == 2);
  CHECK(g.nodes().size() == 1);
  CHECK(g.find_value("z") == std::nullopt);
  REQUIRE(copy.rename_value(x, "input").ok());
  CHECK(g.value(x).name == "x");
  CHECK(g.find_value("x") == x);
}

TEST_CASE("Graph: set_constant turns a node output into an initializer") {
  Graph g = two_relus();
  const ValueId a = *g.find_value("a");
  CHECK(g.value(a).producer == 0);
  g.set_constant(a, f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  CHECK(g.value(a).producer == -1);
  REQUIRE(g.constant(a) != nullptr);
  CHECK(g.value(a).shape == Shape{2, 4});
  CHECK(g.value(a).has_shape);
  CHECK(g.weight_bytes() == 8 * sizeof(float));
}

// ---- GraphBuilder ----------------------------------------------------------------------------

TEST_CASE("GraphBuilder: the example from the header builds, validated and shaped") {
  GraphBuilder b("mlp");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
  auto w = b.constant("w", zeros({16, 4}));
  auto y = b.relu(b.matmul(x, w));
  b.output(y, "probs");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->name() == "mlp");
  CHECK(g->nodes().size() == 2);
  CHECK(g->nodes()[0].op == "MatMul");
  CHECK(g->nodes()[1].op == "Relu");
  REQUIRE(g->outputs().size() == 1);
  const hpf::Value& out = g->value(g->outputs()[0]);
  CHECK(out.name == "probs");
  CHECK(out.has_shape);
  CHECK(hpf::to_string(out.shape) == "[batch,4]");
  CHECK(g->find_value("probs") == y);
  CHECK(g->inputs() == std::vector<ValueId>{x});
  CHECK(g->constant(w) != nullptr);
}

TEST_CASE("GraphBuilder: generated names, multi-output ops and shape constants") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {6, 4});
  auto parts = b.op("Split", {x}, {{"axis", int64_t{0}}}, 3, "split");
  REQUIRE(parts.size() == 3);
  auto s = b.constant_i64({4, 2});
  auto c = b.constant(zeros({2}));
  auto k = b.scalar(2.0f);
  auto r = b.op1("Reshape", {parts[1], s}, {}, "reshape");
  auto y = b.mul(b.add(r, c), k);
  b.output(y);
  b.output(parts[2]);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->value(parts[0]).name == "split:out0");
  CHECK(g->value(parts[2]).name == "split:out2");
  CHECK(g->value(r).name == "reshape:out");
  CHECK(g->value(s).dtype == DType::I64);
  CHECK(g->value(s).shape == Shape{2});
  REQUIRE(g->constant(s) != nullptr);
  CHECK(g->constant(s)->to_i64() == std::vector<int64_t>{4, 2});
  CHECK(g->value(k).shape == Shape{});
  CHECK(g->value(y).shape == (Shape{4, 2}));
  CHECK(g->value(parts[2]).shape == (Shape{2, 4}));
  // Every value and node name is unique.
  std::vector<std::string> names;
  for (const hpf::Value& v : g->values()) names.push_back(v.name);
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (size_t i = 0; i < g->nodes().size(); ++i)
    CHECK(g->find_node(g->nodes()[i].name) == static_cast<int32_t>(i));
}

TEST_CASE("GraphBuilder: the first error is kept and reported by build()") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2});
  CHECK(x == 0);
  auto dup = b.input("x", DType::F32, {2});
  CHECK(dup == kNoValue);
  CHECK_FALSE(b.status().ok());
  // Later calls do nothing and do not replace the first error.
  CHECK(b.relu(x) == kNoValue);
  CHECK(b.op1("NoSuchOp", {x}) == kNoValue);
  CHECK(b.op("Split", {x}, {}, 2) == std::vector<ValueId>{kNoValue, kNoValue});
  b.output(x);
  auto g = b.build();
  REQUIRE_FALSE(g.ok());
  CHECK_CONTAINS(g.status().message(), "value name 'x' is already used");
}

TEST_CASE("GraphBuilder: output() without a value and output renames") {
  SUBCASE("no value") {
    GraphBuilder b("g");
    b.output(kNoValue);
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK_CONTAINS(g.status().message(), "GraphBuilder::output: no value given");
  }
  SUBCASE("rename to a taken name") {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {2});
    auto y = b.relu(x);
    b.output(y, "x");
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK_CONTAINS(g.status().message(), "value name 'x' is already used");
  }
  SUBCASE("errors of validate() and infer_shapes() come from build()") {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {2, 3});
    b.output(b.op1("Frobnicate", {x}, {}, "f"));
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == StatusCode::unsupported);
    CHECK_CONTAINS(g.status().message(), "node 'f' (Frobnicate): unknown op 'Frobnicate'");

    GraphBuilder b2("g");
    auto p = b2.input("p", DType::F32, {2, 3});
    auto q = b2.input("q", DType::F32, {4});
    b2.output(b2.op1("Add", {p, q}, {}, "add"));
    auto g2 = b2.build();
    REQUIRE_FALSE(g2.ok());
    CHECK_CONTAINS(g2.status().message(), "node 'add' (Add)");
    CHECK_CONTAINS(g2.status().message(), "[2,3]");
    CHECK_CONTAINS(g2.status().message(), "[4]");
  }
}

// ---- validate() ------------------------------------------------------------------------------

TEST_CASE("validate: a well-formed graph passes") { CHECK(two_relus().validate().ok()); }

TEST_CASE("validate: unknown op names the node and the op") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
  const int32_t n = ok_node(g.add_node("Relu6", "act", {x}, {"y"}));
  REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
  const std::string m = validate_error(g, StatusCode::unsupported);
  CHECK_CONTAINS(m, "node 'act' (Relu6): unknown op 'Relu6'");
  // Op names are case-sensitive, as in ONNX.
  g.node(n).op = "relu";
  CHECK_CONTAINS(validate_error(g, StatusCode::unsupported), "unknown op 'relu'");
}

TEST_CASE("validate: input and output counts") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
  SUBCASE("too few") {
    const int32_t n = ok_node(g.add_node("Add", "add", {x}, {"y"}));
    REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
    CHECK_CONTAINS(validate_error(g), "node 'add' (Add): has 1 inputs, expected 2");
  }
  SUBCASE("too many for a range") {
    const int32_t n = ok_node(g.add_node("Clip", "clip", {x, x, x, x}, {"y"}));
    REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
    CHECK_CONTAINS(validate_error(g), "node 'clip' (Clip): has 4 inputs, expected 1 to 3");
  }
  SUBCASE("outputs") {
    const int32_t n = ok_node(g.add_node("Relu", "r", {x}, {"y", "z"}));
    REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
    CHECK_CONTAINS(validate_error(g), "node 'r' (Relu): has 2 outputs, expected 1 to 1");
  }
  SUBCASE("variadic") {
    const int32_t n = ok_node(g.add_node("Max", "m", {x, x, x, x, x}, {"y"}));
    REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
    CHECK(g.validate().ok());
  }
}

TEST_CASE("validate: a required input may not be absent, an optional one may") {
  Graph g("g");
  const ValueId a = ok_id(g.add_input("a", DType::F32, {3, 4}));
  const int32_t n = ok_node(g.add_node("Gemm", "gemm", {a, kNoValue, a}, {"y"}));
  REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
  CHECK_CONTAINS(validate_error(g), "node 'gemm' (Gemm): required input 1 is missing");
  g.node(n).inputs = {a, a, kNoValue};
  CHECK(g.validate().ok());
}

TEST_CASE("validate: attributes") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2, 3}));
  auto one = [&](const std::string& op, Attributes attrs, std::vector<ValueId> ins = {}) {
    if (ins.empty()) ins = {x};
    const int32_t n = ok_node(g.add_node(op, "n", std::move(ins), {"y"}, std::move(attrs)));
    REQUIRE(g.add_output(g.node(n).outputs[0]).ok());
  };
  SUBCASE("unknown attribute") {
    one("Relu", {{"alpha", 0.5f}});
    CHECK_CONTAINS(validate_error(g), "node 'n' (Relu): unknown attribute 'alpha'");
  }
  SUBCASE("float where an int is expected") {
    one("Softmax", {{"axis", 1.0f}});
    CHECK_CONTAINS(validate_error(g),
                   "node 'n' (Softmax): attribute 'axis' is float, expected int");
  }
  SUBCASE("int where ints are expected") {
    one("Transpose", {{"perm", int64_t{1}}});
    CHECK_CONTAINS(validate_error(g), "attribute 'perm' is int, expected ints");
  }
  SUBCASE("string where a float is expected") {
    one("LeakyRelu", {{"alpha", std::string("0.1")}});
    CHECK_CONTAINS(validate_error(g), "attribute 'alpha' is string, expected float");
  }
  SUBCASE("an integer literal is accepted for a float attribute") {
    one("LeakyRelu", {{"alpha", int64_t{1}}});
    CHECK(g.validate().ok());
  }
  SUBCASE("missing required attribute: Concat axis") {
    one("Concat", {}, {x, x});
    CHECK_CONTAINS(validate_error(g), "node 'n' (Concat): required attribute 'axis' is missing");
  }
  SUBCASE("missing required attribute: Cast to") {
    one("Cast", {});
    CHECK_CONTAINS(validate_error(g), "node 'n' (Cast): required attribute 'to' is missing");
  }
  SUBCASE("required attribute present") {
    one("Concat", {{"axis", int64_t{0}}}, {x, x});
    CHECK(g.validate().ok());
  }
}

TEST_CASE("validate: a value produced twice") {
  Graph g = two_relus();
  // Make r1 write r0's output as well.
  g.node(1).outputs[0] = g.node(0).outputs[0];
  CHECK_CONTAINS(validate_error(g), "graph 'g': value 'a' is produced more than once");

  Graph h = two_relus();
  h.node(0).outputs[0] = *h.find_value("x");  // a node writing a graph input
  CHECK_CONTAINS(validate_error(h), "value 'x' is produced more than once");
}

TEST_CASE("validate: an input nobody produces") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {6}));
  const int32_t split = ok_node(g.add_node("Split", "split", {x}, {"s0", "s1"}));
  const ValueId s1 = g.node(split).outputs[1];
  const int32_t r = ok_node(g.add_node("Relu", "r", {s1}, {"y"}));
  REQUIRE(g.add_output(g.node(r).outputs[0]).ok());
  REQUIRE(g.validate().ok());
  g.node(split).outputs.pop_back();  // s1 is no longer anyone's output
  CHECK_CONTAINS(
      validate_error(g),
      "node 'r' (Relu): input 0 's1' is neither a graph input, an initializer nor a node output");
}

TEST_CASE("validate: outputs") {
  SUBCASE("no outputs") {
    Graph g("empty");
    const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
    ok_node(g.add_node("Relu", "r", {x}, {"y"}));
    CHECK_CONTAINS(validate_error(g), "graph 'empty' has no outputs");
  }
  SUBCASE("an output nobody produces") {
    Graph g = two_relus();
    g.node(1).outputs[0] = *g.find_value("a");  // b loses its producer (and a gains two)
    CHECK_FALSE(g.validate().ok());
    Graph h("g");
    const ValueId x = ok_id(h.add_input("x", DType::F32, {6}));
    const int32_t split = ok_node(h.add_node("Split", "split", {x}, {"s0", "s1"}));
    REQUIRE(h.add_output(h.node(split).outputs[1]).ok());
    h.node(split).outputs.pop_back();
    CHECK_CONTAINS(validate_error(h), "graph 'g': output 's1' is never produced");
  }
  SUBCASE("a graph input may be an output") {
    Graph g("g");
    const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
    REQUIRE(g.add_output(x).ok());
    CHECK(g.validate().ok());
  }
}

TEST_CASE("validate: dangling ids made by editing nodes") {
  Graph g = two_relus();
  g.node(1).inputs[0] = 99;
  CHECK_CONTAINS(validate_error(g),
                 "node 'r1' (Relu): input 0 refers to value id 99 which does not exist");
  Graph h = two_relus();
  h.node(0).outputs[0] = 50;
  CHECK_CONTAINS(validate_error(h),
                 "node 'r0' (Relu): output refers to value id 50 which does not exist");
}

TEST_CASE("validate: a cycle names a node on it") {
  Graph g("g");
  const ValueId x = ok_id(g.add_input("x", DType::F32, {2}));
  const int32_t n0 = ok_node(g.add_node("Add", "n0", {x, x}, {"a"}));
  const int32_t n1 = ok_node(g.add_node("Relu", "n1", {g.node(n0).outputs[0]}, {"b"}));
  const int32_t n2 = ok_node(g.add_node("Relu", "n2", {g.node(n1).outputs[0]}, {"c"}));
  REQUIRE(g.add_output(g.node(n2).outputs[0]).ok());
  REQUIRE(g.validate().ok());
  g.node(n0).inputs[1] = g.node(n1).outputs[0];  // n0 -> n1 -> n0
  const std::string m = validate_error(g);
  CHECK_CONTAINS(m, "graph 'g' has a cycle through node 'n");
  CHECK((m.find("'n0' (Add)") != std::string::npos || m.find("'n1' (Relu)") != std::string::npos));
  CHECK_FALSE(g.topological_order().ok());
  const Status inf = g.infer_shapes();
  REQUIRE_FALSE(inf.ok());
  CHECK_CONTAINS(inf.message(), "has a cycle");
  // A self-loop.
  Graph h = two_relus();
  h.node(1).inputs[0] = h.node(1).outputs[0];
  CHECK_CONTAINS(validate_error(h), "graph 'g' has a cycle through node 'r1' (Relu)");
}

// ---- The op table ----------------------------------------------------------------------------

TEST_CASE("op table: every op of the issue exists with a shape function") {
  const char* ops[] = {"Add",
                       "Sub",
                       "Mul",
                       "Div",
                       "Pow",
                       "Sqrt",
                       "Neg",
                       "Abs",
                       "Exp",
                       "Log",
                       "Erf",
                       "Tanh",
                       "Sigmoid",
                       "HardSigmoid",
                       "HardSwish",
                       "Relu",
                       "LeakyRelu",
                       "Clip",
                       "Gelu",
                       "Max",
                       "Min",
                       "Where",
                       "Equal",
                       "Less",
                       "Greater",
                       "Not",
                       "Cast",
                       "MatMul",
                       "Gemm",
                       "Conv",
                       "ConvTranspose",
                       "BatchNormalization",
                       "LayerNormalization",
                       "Softmax",
                       "LogSoftmax",
                       "ReduceMean",
                       "ReduceSum",
                       "ReduceMax",
                       "MaxPool",
                       "AveragePool",
                       "GlobalAveragePool",
                       "Resize",
                       "Gather",
                       "Reshape",
                       "Transpose",
                       "Flatten",
                       "Squeeze",
                       "Unsqueeze",
                       "Concat",
                       "Split",
                       "Slice",
                       "Pad",
                       "Expand",
                       "Shape",
                       "ConstantOfShape",
                       "Range",
                       "Identity",
                       "QuantizeLinear",
                       "DequantizeLinear"};
  for (const char* name : ops) {
    CAPTURE(name);
    const hpf::ir::OpDef* def = hpf::ir::find_op(name);
    REQUIRE(def != nullptr);
    CHECK(def->name == name);
    CHECK(static_cast<bool>(def->infer));
    CHECK(def->min_inputs <= def->max_inputs);
    CHECK(def->min_outputs >= 1);
    CHECK(def->min_outputs <= def->max_outputs);
    CHECK_FALSE(def->precisions.empty());
  }
  CHECK(hpf::ir::all_ops().size() >= std::size(ops));
}

TEST_CASE("op table: lookups") {
  CHECK(hpf::ir::find_op("NoSuchOp") == nullptr);
  CHECK(hpf::ir::find_op("") == nullptr);
  CHECK(hpf::ir::find_op("add") == nullptr);
  CHECK(hpf::ir::find_op("Ad") == nullptr);
  CHECK(hpf::ir::find_op("Addd") == nullptr);
  // Every row is found under its own name; names are unique.
  auto ops = hpf::ir::all_ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    CAPTURE(ops[i].name);
    CHECK(hpf::ir::find_op(ops[i].name) == &ops[i]);
    if (i) CHECK(ops[i - 1].name < ops[i].name);
    for (int w : ops[i].wide_inputs) CHECK(w < ops[i].max_inputs);
  }
}

TEST_CASE("op table: classes") {
  using hpf::ir::OpClass;
  auto cls = [](const char* op) {
    const hpf::ir::OpDef* d = hpf::ir::find_op(op);
    REQUIRE(d != nullptr);
    return d->op_class;
  };
  CHECK(cls("MatMul") == OpClass::matmul);
  CHECK(cls("Gemm") == OpClass::matmul);
  CHECK(cls("Conv") == OpClass::conv);
  CHECK(cls("ConvTranspose") == OpClass::conv);
  CHECK(cls("LayerNormalization") == OpClass::normalization);
  CHECK(cls("BatchNormalization") == OpClass::normalization);
  CHECK(cls("Softmax") == OpClass::softmax);
  CHECK(cls("Gather") == OpClass::embedding);
  CHECK(cls("Add") == OpClass::elementwise);
  CHECK(cls("Relu") == OpClass::elementwise);
  CHECK(cls("Reshape") == OpClass::data_movement);
  CHECK(cls("Transpose") == OpClass::data_movement);
  CHECK(cls("QuantizeLinear") == OpClass::quantization);
  CHECK(std::string(hpf::ir::op_class_name(OpClass::matmul)) == "matmul");
  CHECK(std::string(hpf::ir::op_class_name(OpClass::data_movement)) == "data_movement");
  CHECK(std::string(hpf::ir::op_class_name(OpClass::normalization)) == "normalization");
}

TEST_CASE("op table: what stays wide") {
  const hpf::ir::OpDef* ln = hpf::ir::find_op("LayerNormalization");
  const hpf::ir::OpDef* sm = hpf::ir::find_op("Softmax");
  const hpf::ir::OpDef* bn = hpf::ir::find_op("BatchNormalization");
  const hpf::ir::OpDef* mm = hpf::ir::find_op("MatMul");
  const hpf::ir::OpDef* relu = hpf::ir::find_op("Relu");
  REQUIRE(ln);
  REQUIRE(sm);
  REQUIRE(bn);
  REQUIRE(mm);
  REQUIRE(relu);
  CHECK_FALSE(ln->wide_internals.empty());
  CHECK_FALSE(sm->wide_internals.empty());
  CHECK_CONTAINS(ln->wide_internals, "FP32");
  CHECK_CONTAINS(sm->wide_internals, "FP32");
  CHECK(ln->wide_inputs == std::vector<int>{1, 2});  // scale and bias
  CHECK(bn->wide_inputs == std::vector<int>{1, 2, 3, 4});
  CHECK(relu->wide_internals.empty());
  CHECK(relu->wide_inputs.empty());
  // Matrix units take narrow formats; vector work does not go below 16 bits.
  auto has = [](const hpf::ir::OpDef* d, DType t) {
    return std::find(d->precisions.begin(), d->precisions.end(), t) != d->precisions.end();
  };
  CHECK(has(mm, DType::F8E4M3));
  CHECK(has(mm, DType::I8));
  CHECK(has(sm, DType::F16));
  CHECK(has(sm, DType::F32));
  CHECK_FALSE(has(sm, DType::F8E4M3));
  CHECK_FALSE(has(sm, DType::I8));
}

TEST_CASE("op table: attribute schema and defaults") {
  using hpf::ir::AttrType;
  auto def = [](const char* op) {
    const hpf::ir::OpDef* d = hpf::ir::find_op(op);
    REQUIRE(d != nullptr);
    return d;
  };
  auto default_of = [&](const char* op, const char* attr) {
    const hpf::ir::AttrDef* a = def(op)->attr(attr);
    REQUIRE_MESSAGE(a != nullptr, op << "." << attr);
    REQUIRE_MESSAGE(a->default_value.has_value(), op << "." << attr);
    return *a->default_value;
  };
  CHECK(std::get<float>(default_of("LeakyRelu", "alpha")) == doctest::Approx(0.01f));
  CHECK(std::get<int64_t>(default_of("Gemm", "transB")) == 0);
  CHECK(std::get<int64_t>(default_of("Gemm", "transA")) == 0);
  CHECK(std::get<float>(default_of("Gemm", "alpha")) == 1.0f);
  CHECK(std::get<float>(default_of("Gemm", "beta")) == 1.0f);
  CHECK(std::get<float>(default_of("HardSigmoid", "alpha")) == doctest::Approx(0.2f));
  CHECK(std::get<float>(default_of("HardSigmoid", "beta")) == doctest::Approx(0.5f));
  CHECK(std::get<int64_t>(default_of("Softmax", "axis")) == -1);
  CHECK(std::get<int64_t>(default_of("LayerNormalization", "axis")) == -1);
  CHECK(std::get<float>(default_of("LayerNormalization", "epsilon")) == doctest::Approx(1e-5f));
  CHECK(std::get<int64_t>(default_of("Flatten", "axis")) == 1);
  CHECK(std::get<int64_t>(default_of("Gather", "axis")) == 0);
  CHECK(std::get<int64_t>(default_of("Conv", "group")) == 1);
  CHECK(std::get<std::string>(default_of("Conv", "auto_pad")) == "NOTSET");
  CHECK(std::get<int64_t>(default_of("ReduceMean", "keepdims")) == 1);
  CHECK(std::get<int64_t>(default_of("ReduceSum", "noop_with_empty_axes")) == 0);
  CHECK(std::get<int64_t>(default_of("MaxPool", "ceil_mode")) == 0);
  CHECK(std::get<std::string>(default_of("Resize", "mode")) == "nearest");
  CHECK(std::get<std::string>(default_of("Gelu", "approximate")) == "none");
  CHECK(std::get<int64_t>(default_of("QuantizeLinear", "axis")) == 1);

  const hpf::ir::AttrDef* axis = def("Concat")->attr("axis");
  REQUIRE(axis);
  CHECK(axis->required);
  CHECK(axis->type == AttrType::int_);
  CHECK_FALSE(axis->default_value.has_value());
  const hpf::ir::AttrDef* perm = def("Transpose")->attr("perm");
  REQUIRE(perm);
  CHECK(perm->type == AttrType::ints);
  CHECK_FALSE(perm->required);
  CHECK_FALSE(perm->default_value.has_value());
  CHECK(def("Relu")->attrs.empty());
  CHECK(def("Relu")->attr("alpha") == nullptr);
  CHECK(std::string(hpf::ir::attr_type_name(AttrType::float_)) == "float");
  CHECK(std::string(hpf::ir::attr_type_name(AttrType::ints)) == "ints");
}

TEST_CASE("op table: attr_or_default") {
  const hpf::ir::OpDef* lr = hpf::ir::find_op("LeakyRelu");
  REQUIRE(lr);
  hpf::Node n;
  n.op = "LeakyRelu";
  auto d = hpf::ir::attr_or_default(n, *lr, "alpha");
  REQUIRE(d.has_value());
  CHECK(std::get<float>(*d) == doctest::Approx(0.01f));
  n.attrs["alpha"] = 0.3f;
  CHECK(std::get<float>(*hpf::ir::attr_or_default(n, *lr, "alpha")) == doctest::Approx(0.3f));
  CHECK_FALSE(hpf::ir::attr_or_default(n, *lr, "beta").has_value());
  const hpf::ir::OpDef* tr = hpf::ir::find_op("Transpose");
  hpf::Node t;
  t.op = "Transpose";
  CHECK_FALSE(hpf::ir::attr_or_default(t, *tr, "perm").has_value());
}

TEST_CASE("op table: ONNX data type codes") {
  using hpf::ir::dtype_from_onnx;
  using hpf::ir::dtype_to_onnx;
  CHECK(*dtype_from_onnx(1) == DType::F32);
  CHECK(*dtype_from_onnx(2) == DType::U8);
  CHECK(*dtype_from_onnx(3) == DType::I8);
  CHECK(*dtype_from_onnx(6) == DType::I32);
  CHECK(*dtype_from_onnx(7) == DType::I64);
  CHECK(*dtype_from_onnx(9) == DType::BOOL);
  CHECK(*dtype_from_onnx(10) == DType::F16);
  CHECK(*dtype_from_onnx(16) == DType::BF16);
  CHECK(*dtype_from_onnx(17) == DType::F8E4M3);
  CHECK(*dtype_from_onnx(19) == DType::F8E5M2);
  CHECK(*dtype_from_onnx(22) == DType::I4);
  auto bad = dtype_from_onnx(11);  // DOUBLE
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::unsupported);
  CHECK_CONTAINS(bad.status().message(), "ONNX data type 11 is not supported");
  CHECK(dtype_to_onnx(DType::TF32) == 1);
  // I16 is an int16 plan's weight format, not a tensor type models bring in (no kernels take it).
  CHECK(dtype_to_onnx(DType::I16) == 5);
  CHECK(dtype_from_onnx(5).status().message() == "ONNX data type 5 is not supported");
  for (DType t : hpf::kAllDTypes) {
    CAPTURE(hpf::dtype_name(t));
    if (t == DType::TF32 || t == DType::I16) continue;
    auto back = dtype_from_onnx(dtype_to_onnx(t));
    REQUIRE(back.ok());
    CHECK(*back == t);
  }
}

TEST_CASE("op table: normalize_axis and broadcast_shapes") {
  using hpf::ir::normalize_axis;
  CHECK(normalize_axis(-1, 3) == 2);
  CHECK(normalize_axis(-3, 3) == 0);
  CHECK(normalize_axis(2, 3) == 2);
  CHECK_FALSE(normalize_axis(3, 3).has_value());
  CHECK_FALSE(normalize_axis(-4, 3).has_value());
  CHECK_FALSE(normalize_axis(0, 0).has_value());

  using hpf::ir::broadcast_shapes;
  const Dim b = Dim::sym("batch"), s = Dim::sym("seq");
  CHECK(*broadcast_shapes({2, 1, 4}, {3, 1}) == Shape{2, 3, 4});
  CHECK(*broadcast_shapes({}, {5}) == Shape{5});
  CHECK(*broadcast_shapes({b, 1}, {1, s}) == Shape{b, s});
  CHECK(*broadcast_shapes({b}, {1}) == Shape{b});
  CHECK(*broadcast_shapes({1}, {b}) == Shape{b});
  CHECK(*broadcast_shapes({b}, {b}) == Shape{b});
  CHECK(*broadcast_shapes({b}, {7}) == Shape{7});
  CHECK(*broadcast_shapes({7}, {b}) == Shape{7});
  CHECK(*broadcast_shapes({b}, {s}) == Shape{Dim()});
  CHECK(*broadcast_shapes({0, 3}, {1, 3}) == Shape{0, 3});
  auto bad = broadcast_shapes({2, 3}, {4});
  REQUIRE_FALSE(bad.ok());
  CHECK_CONTAINS(bad.status().message(), "shapes [2,3] and [4] cannot be broadcast");
  CHECK_FALSE(broadcast_shapes({0}, {3}).ok());
}

}  // namespace
