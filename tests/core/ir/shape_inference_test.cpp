// Shape inference (Graph::infer_shapes through the op table's shape functions) on whole graphs
// with symbolic dimensions, its error messages, and the op geometry helpers it shares with the
// kernels.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/op_geometry.hpp"
#include "hpf/graph.hpp"
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
using hpf::StatusCode;
using hpf::Tensor;
using hpf::ValueId;
using ints = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

const Dim kBatch = Dim::sym("batch");
const Dim kSeq = Dim::sym("seq");

// Marks `outs` as outputs, builds (validate + infer_shapes) and requires success.
Graph built(GraphBuilder& b, std::vector<ValueId> outs) {
  for (ValueId o : outs) b.output(o);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

// Same, requiring failure; returns the message.
std::string build_error(GraphBuilder& b, std::vector<ValueId> outs,
                        StatusCode code = StatusCode::invalid_argument) {
  for (ValueId o : outs) b.output(o);
  auto g = b.build();
  REQUIRE_FALSE_MESSAGE(g.ok(), "the graph built");
  CHECK(g.status().code() == code);
  return g.status().message();
}

// The inferred shape as text; "none" when the shape is not known at all.
std::string shape_of(const Graph& g, ValueId v) {
  const hpf::Value& val = g.value(v);
  return val.has_shape ? hpf::to_string(val.shape) : "none";
}

// One node of `op` over fresh inputs of the given shapes (F32); returns the output shape text.
std::string infer1(const std::string& op, std::vector<Shape> in_shapes, Attributes attrs = {}) {
  GraphBuilder b("g");
  std::vector<ValueId> ins;
  for (size_t i = 0; i < in_shapes.size(); ++i)
    ins.push_back(b.input("in" + std::to_string(i), DType::F32, in_shapes[i]));
  const ValueId y = b.op1(op, ins, std::move(attrs), "node");
  Graph g = built(b, {y});
  return shape_of(g, y);
}

std::string infer1_error(const std::string& op, std::vector<Shape> in_shapes, Attributes attrs = {},
                         StatusCode code = StatusCode::invalid_argument) {
  GraphBuilder b("g");
  std::vector<ValueId> ins;
  for (size_t i = 0; i < in_shapes.size(); ++i)
    ins.push_back(b.input("in" + std::to_string(i), DType::F32, in_shapes[i]));
  const ValueId y = b.op1(op, ins, std::move(attrs), "node");
  return build_error(b, {y}, code);
}

// ---- Whole graphs ----------------------------------------------------------------------------

TEST_CASE("infer_shapes: an attention block keeps batch and seq symbolic") {
  GraphBuilder b("attn");
  const int64_t d = 64, h = 4, hd = 16;
  auto x = b.input("x", DType::F32, {kBatch, kSeq, d});
  auto w = [&](const char* n) { return b.constant(n, Tensor(DType::F32, {d, d})); };
  auto heads = [&](ValueId v) { return b.transpose(b.reshape(v, {0, 0, h, hd}), {0, 2, 1, 3}); };
  auto q = heads(b.matmul(x, w("wq")));
  auto k = heads(b.matmul(x, w("wk")));
  auto v = heads(b.matmul(x, w("wv")));
  auto scores = b.matmul(q, b.transpose(k, {0, 1, 3, 2}));
  auto probs = b.softmax(b.mul(scores, b.scalar(0.25f)));
  auto ctx = b.matmul(probs, v);
  auto merged = b.reshape(b.transpose(ctx, {0, 2, 1, 3}), {0, 0, d});
  auto ln = b.layer_norm(b.add(merged, x), b.constant("ln_s", Tensor(DType::F32, {d})),
                         b.constant("ln_b", Tensor(DType::F32, {d})));
  Graph g = built(b, {ln, q, scores});
  CHECK(shape_of(g, q) == "[batch,4,seq,16]");
  CHECK(shape_of(g, scores) == "[batch,4,seq,seq]");
  CHECK(shape_of(g, probs) == "[batch,4,seq,seq]");
  CHECK(shape_of(g, ctx) == "[batch,4,seq,16]");
  CHECK(shape_of(g, merged) == "[batch,seq,64]");
  CHECK(shape_of(g, ln) == "[batch,seq,64]");
  CHECK(g.value(ln).dtype == DType::F32);
}

TEST_CASE("infer_shapes: unknown shapes propagate, dtypes follow the inputs") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F16, {kBatch, 8});
  auto shape = b.input("shape", DType::I64, {Dim::sym("r")});  // runtime shape, unknown length
  auto r = b.op1("Reshape", {x, shape});
  auto y = b.relu(r);
  auto z = b.add(y, y);
  Graph g = built(b, {z});
  CHECK(shape_of(g, r) == "none");
  CHECK(shape_of(g, y) == "none");
  CHECK(shape_of(g, z) == "none");
  CHECK(g.value(z).dtype == DType::F16);
}

TEST_CASE("infer_shapes: errors name the node, the op and the input shapes") {
  GraphBuilder b("g");
  auto a = b.input("a", DType::F32, {2, 3});
  auto c = b.input("c", DType::F32, {4});
  auto y = b.op1("Add", {a, c}, {}, "blk/add");
  const std::string m = build_error(b, {y});
  CHECK_CONTAINS(m, "node 'blk/add' (Add): shapes [2,3] and [4] cannot be broadcast");
  CHECK_CONTAINS(m, "(inputs: 'a' f32[2,3], 'c' f32[4])");
}

// ---- Elementwise -----------------------------------------------------------------------------

TEST_CASE("broadcasting through graphs, with symbols") {
  CHECK(infer1("Add", {{kBatch, kSeq, 768}, {768}}) == "[batch,seq,768]");
  CHECK(infer1("Mul", {{kBatch, 1, 4}, {1, kSeq, 1}}) == "[batch,seq,4]");
  CHECK(infer1("Sub", {{kBatch, 1}, {1}}) == "[batch,1]");     // symbolic vs 1
  CHECK(infer1("Div", {{1, 5}, {kBatch, 1}}) == "[batch,5]");  // 1 vs symbolic
  CHECK(infer1("Add", {{kBatch}, {3}}) == "[3]");              // symbolic vs known
  CHECK(infer1("Add", {{3}, {kBatch}}) == "[3]");
  CHECK(infer1("Add", {{kBatch}, {kBatch}}) == "[batch]");
  CHECK(infer1("Add", {{kBatch}, {kSeq}}) == "[?]");       // two symbols: unknown
  CHECK(infer1("Add", {{}, {2, 3}}) == "[2,3]");           // scalar
  CHECK(infer1("Max", {{2, 1}, {1, 3}, {3}}) == "[2,3]");  // n-ary
  CHECK(infer1("Min", {{kBatch, 4}}) == "[batch,4]");
  CHECK(infer1("Pow", {{2, 3}, {}}) == "[2,3]");
  // size-1 dimensions
  CHECK(infer1("Add", {{1, 1}, {1}}) == "[1,1]");
  CHECK(infer1("Add", {{1}, {kBatch, 1}}) == "[batch,1]");
}

TEST_CASE("broadcasting: incompatible shapes") {
  const std::string m = infer1_error("Mul", {{kBatch, 3}, {4}});
  CHECK_CONTAINS(m, "node 'node' (Mul): shapes [batch,3] and [4] cannot be broadcast");
  CHECK_CONTAINS(m, "'in0' f32[batch,3]");
  CHECK_CONTAINS(m, "'in1' f32[4]");
  CHECK_CONTAINS(infer1_error("Max", {{2}, {2}, {3}}), "shapes [2] and [3] cannot be broadcast");
}

TEST_CASE("broadcasting: float and integer inputs do not mix (except Pow)") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2});
  auto i = b.input("i", DType::I64, {2});
  auto y = b.op1("Add", {x, i}, {}, "add");
  CHECK_CONTAINS(build_error(b, {y}), "node 'add' (Add): input 1 is i64, input 0 is f32");

  GraphBuilder p("g");
  auto px = p.input("x", DType::F16, {2});
  auto pi = p.input("i", DType::I64, {});
  auto py = p.op1("Pow", {px, pi});
  Graph g = built(p, {py});
  CHECK(g.value(py).dtype == DType::F16);
  CHECK(shape_of(g, py) == "[2]");
}

TEST_CASE("unary ops keep shape and dtype") {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf",
                         "HardSwish", "HardSigmoid", "LeakyRelu", "Gelu", "Identity", "Clip"}) {
    CAPTURE(op);
    GraphBuilder b("g");
    auto x = b.input("x", DType::BF16, {kBatch, 0, 3});
    auto y = b.op1(op, {x});
    Graph g = built(b, {y});
    CHECK(shape_of(g, y) == "[batch,0,3]");
    CHECK(g.value(y).dtype == DType::BF16);
  }
}

TEST_CASE("comparisons give BOOL, Not and Where") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {kBatch, 4});
  auto t = b.input("t", DType::F32, {4});
  auto eq = b.op1("Equal", {x, t});
  auto lt = b.op1("Less", {x, t});
  auto gt = b.op1("Greater", {t, x});
  auto nt = b.op1("Not", {lt});
  auto w = b.op1("Where", {nt, x, b.scalar(0.0f)});
  auto w2 = b.op1("Where", {b.input("c", DType::BOOL, {3, 1, 1}), x, t});
  Graph g = built(b, {eq, gt, w, w2});
  for (ValueId v : {eq, lt, gt, nt}) {
    CHECK(g.value(v).dtype == DType::BOOL);
    CHECK(shape_of(g, v) == "[batch,4]");
  }
  CHECK(g.value(w).dtype == DType::F32);
  CHECK(shape_of(g, w) == "[batch,4]");
  CHECK(shape_of(g, w2) == "[3,batch,4]");

  CHECK_CONTAINS(infer1_error("Not", {{2}}), "node 'node' (Not): input must be bool, is f32");
  CHECK_CONTAINS(infer1_error("Where", {{2}, {2}, {2}}),
                 "node 'node' (Where): condition must be bool");
}

TEST_CASE("Cast: `to` is an ONNX TensorProto code") {
  auto cast = [](int64_t to) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {kBatch, 3});
    auto y = b.op1("Cast", {x}, {{"to", to}});
    Graph g = built(b, {y});
    CHECK(shape_of(g, y) == "[batch,3]");
    return g.value(y).dtype;
  };
  CHECK(cast(10) == DType::F16);
  CHECK(cast(16) == DType::BF16);
  CHECK(cast(1) == DType::F32);
  CHECK(cast(7) == DType::I64);
  CHECK(cast(9) == DType::BOOL);
  CHECK(cast(17) == DType::F8E4M3);
  const std::string m = infer1_error("Cast", {{2}}, {{"to", int64_t{11}}});
  CHECK_CONTAINS(m, "node 'node' (Cast)");
  CHECK_CONTAINS(m, "ONNX data type 11 is not supported");
}

// ---- Matrix products -------------------------------------------------------------------------

TEST_CASE("MatMul shapes") {
  CHECK(infer1("MatMul", {{kBatch, kSeq, 64}, {64, 32}}) == "[batch,seq,32]");
  CHECK(infer1("MatMul", {{4}, {4, 5}}) == "[5]");       // 1-D A: prepended 1 removed
  CHECK(infer1("MatMul", {{2, 3, 4}, {4}}) == "[2,3]");  // 1-D B: appended 1 removed
  CHECK(infer1("MatMul", {{4}, {4}}) == "[]");           // dot product
  CHECK(infer1("MatMul", {{7, 4}, {3, 4, 5}}) == "[3,7,5]");
  CHECK(infer1("MatMul", {{2, 1, 3, 4}, {5, 4, 6}}) == "[2,5,3,6]");  // batch broadcast
  CHECK(infer1("MatMul", {{kBatch, 3, 4}, {1, 4, 2}}) == "[batch,3,2]");
  CHECK(infer1("MatMul", {{3, kSeq}, {7, 2}}) == "[3,2]");  // symbolic inner dim accepted
  CHECK(infer1("MatMul", {{0, 4}, {4, 5}}) == "[0,5]");
  CHECK(infer1("MatMul", {{3, 0}, {0, 5}}) == "[3,5]");

  CHECK_CONTAINS(infer1_error("MatMul", {{2, 3}, {4, 5}}),
                 "node 'node' (MatMul): inner dimensions differ: [2,3] x [4,5]");
  CHECK_CONTAINS(infer1_error("MatMul", {{2, 3}, {4}}), "inner dimensions differ: [2,3] x [4]");
  CHECK_CONTAINS(infer1_error("MatMul", {{2, 3, 4}, {3, 4, 5}}),
                 "batch dimensions: shapes [2] and [3] cannot be broadcast");
  CHECK_CONTAINS(infer1_error("MatMul", {{}, {3}}), "MatMul inputs must have rank >= 1");
}

TEST_CASE("Gemm shapes with trans flags and C") {
  auto t = [](int64_t a, int64_t b) { return Attributes{{"transA", a}, {"transB", b}}; };
  CHECK(infer1("Gemm", {{3, 4}, {4, 5}}) == "[3,5]");
  CHECK(infer1("Gemm", {{4, 3}, {4, 5}}, t(1, 0)) == "[3,5]");
  CHECK(infer1("Gemm", {{3, 4}, {5, 4}}, t(0, 1)) == "[3,5]");
  CHECK(infer1("Gemm", {{4, 3}, {5, 4}}, t(1, 1)) == "[3,5]");
  CHECK(infer1("Gemm", {{kBatch, 4}, {4, 5}, {5}}) == "[batch,5]");
  CHECK(infer1("Gemm", {{3, 4}, {4, 5}, {3, 1}}) == "[3,5]");
  CHECK(infer1("Gemm", {{3, 4}, {4, 5}, {}}) == "[3,5]");
  CHECK_CONTAINS(infer1_error("Gemm", {{3, 4}, {5, 4}}),
                 "node 'node' (Gemm): inner dimensions differ: A [3,4], B [5,4]");
  CHECK_CONTAINS(infer1_error("Gemm", {{3, 4}, {4, 5}, {4}}), "C [4] does not broadcast to [3,5]");
  CHECK_CONTAINS(infer1_error("Gemm", {{3, 4}, {4, 5}, {2, 5}}),
                 "C [2,5] does not broadcast to [3,5]");
  CHECK_CONTAINS(infer1_error("Gemm", {{2, 3, 4}, {4, 5}}),
                 "Gemm needs rank-2 A and B, got [2,3,4] and [4,5]");
  // The GraphBuilder convenience sets transB.
  GraphBuilder b("g");
  auto a = b.input("a", DType::F32, {2, 8});
  auto y = b.gemm(a, b.constant("w", Tensor(DType::F32, {3, 8})),
                  b.constant("c", Tensor(DType::F32, {3})), true);
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "[2,3]");
}

// ---- Convolution and pooling -----------------------------------------------------------------

TEST_CASE("Conv output sizes") {
  const Shape x{kBatch, 3, 32, 32}, w{8, 3, 3, 3};
  CHECK(infer1("Conv", {x, w}) == "[batch,8,30,30]");
  CHECK(infer1("Conv", {x, w, {8}}, {{"pads", ints{1, 1, 1, 1}}}) == "[batch,8,32,32]");
  CHECK(infer1("Conv", {x, w}, {{"strides", ints{2, 2}}}) == "[batch,8,15,15]");
  CHECK(infer1("Conv", {x, w}, {{"dilations", ints{2, 2}}}) == "[batch,8,28,28]");
  CHECK(infer1("Conv", {x, w}, {{"pads", ints{0, 1, 2, 3}}, {"strides", ints{1, 2}}}) ==
        "[batch,8,32,17]");
  CHECK(
      infer1("Conv", {x, w}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", ints{2, 2}}}) ==
      "[batch,8,16,16]");
  CHECK(infer1("Conv", {{1, 3, 33, 33}, w},
               {{"auto_pad", std::string("SAME_LOWER")}, {"strides", ints{2, 2}}}) ==
        "[1,8,17,17]");
  CHECK(infer1("Conv", {x, w}, {{"auto_pad", std::string("VALID")}, {"pads", ints{5, 5, 5, 5}}}) ==
        "[batch,8,30,30]");
  CHECK(infer1("Conv", {x, w}, {{"kernel_shape", ints{3, 3}}}) == "[batch,8,30,30]");
  CHECK(infer1("Conv", {{1, 6, 8, 8}, {6, 1, 3, 3}}, {{"group", int64_t{6}}}) ==
        "[1,6,6,6]");                                           // depthwise
  CHECK(infer1("Conv", {{1, 4, 10}, {2, 4, 3}}) == "[1,2,8]");  // 1-D
  CHECK(infer1("Conv", {{1, 3, kSeq, 10}, w}) == "[1,8,?,8]");  // symbolic spatial size
  CHECK(infer1("Conv", {{0, 3, 5, 5}, w}) == "[0,8,3,3]");
  // Builder convenience.
  GraphBuilder b("g");
  auto in = b.input("x", DType::F32, {1, 3, 16, 16});
  auto y = b.conv(in, b.constant("w", Tensor(DType::F32, {4, 3, 3, 3})),
                  b.constant("b", Tensor(DType::F32, {4})), {1, 1, 1, 1}, {2, 2});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "[1,4,8,8]");
}

TEST_CASE("Conv errors") {
  CHECK_CONTAINS(infer1_error("Conv", {{1, 4, 8, 8}, {8, 3, 3, 3}}),
                 "node 'node' (Conv): input has 4 channels, weight expects 3 x group 1");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 4, 8, 8}, {6, 2, 3, 3}}, {{"group", int64_t{4}}}),
                 "input has 4 channels, weight expects 2 x group 4");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 4, 8, 8}, {6, 1, 3, 3}}, {{"group", int64_t{4}}}),
                 "6 output channels do not divide into 4 groups");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 3, 8, 8}, {8, 3, 3, 3}, {8, 1}}), "bias must be 1-D");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 3, 8}, {8, 3, 3, 3}}), "differ in rank");
  CHECK_CONTAINS(infer1_error("Conv", {{3, 8}, {8, 3}}),
                 "input must be [N,C,spatial...], got [3,8]");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 3, 2, 2}, {8, 3, 3, 3}}),
                 "window of extent 3 does not fit input size 2");
  CHECK_CONTAINS(
      infer1_error("Conv", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {{"auto_pad", std::string("SAME")}}),
      "auto_pad 'SAME' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {{"strides", ints{1}}}),
                 "strides [1] do not match 2 spatial dimensions");
  CHECK_CONTAINS(infer1_error("Conv", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {{"pads", ints{1, 1}}}),
                 "pads [1,1] need 4 values");
}

TEST_CASE("ConvTranspose output sizes") {
  const Shape x{1, 4, 3, 3}, w{4, 2, 3, 3};
  CHECK(infer1("ConvTranspose", {x, w}) == "[1,2,5,5]");
  CHECK(infer1("ConvTranspose", {x, w}, {{"strides", ints{2, 2}}}) == "[1,2,7,7]");
  CHECK(infer1("ConvTranspose", {x, w}, {{"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}) ==
        "[1,2,5,5]");
  CHECK(infer1("ConvTranspose", {x, w},
               {{"strides", ints{2, 2}},
                {"pads", ints{1, 1, 1, 1}},
                {"output_padding", ints{1, 1}}}) == "[1,2,6,6]");
  CHECK(infer1("ConvTranspose", {x, w}, {{"dilations", ints{2, 2}}}) == "[1,2,7,7]");
  CHECK(infer1("ConvTranspose", {x, w},
               {{"strides", ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}) == "[1,2,6,6]");
  CHECK(infer1("ConvTranspose", {{1, 4, 5, 5}, w},
               {{"strides", ints{2, 2}}, {"output_shape", ints{10, 10}}}) == "[1,2,10,10]");
  CHECK(infer1("ConvTranspose", {{1, 4, 3, 3}, {4, 2, 3, 3}}, {{"group", int64_t{2}}}) ==
        "[1,4,5,5]");
  CHECK(infer1("ConvTranspose", {{kBatch, 4, kSeq, 3}, w}) == "[batch,2,?,5]");
  CHECK_CONTAINS(infer1_error("ConvTranspose", {{1, 3, 3, 3}, w}),
                 "node 'node' (ConvTranspose): input has 3 channels");
  // A target larger than the full result is allowed (negative pads, as the ONNX reference).
  CHECK(infer1("ConvTranspose", {x, w}, {{"output_shape", ints{9, 9}}}) == "[1,2,9,9]");
}

TEST_CASE("pooling output sizes") {
  const Shape x{kBatch, 3, 5, 5};
  auto k = [](int64_t n) { return ints{n, n}; };
  CHECK(infer1("MaxPool", {x}, {{"kernel_shape", k(2)}, {"strides", k(2)}}) == "[batch,3,2,2]");
  CHECK(infer1("MaxPool", {x},
               {{"kernel_shape", k(2)}, {"strides", k(2)}, {"ceil_mode", int64_t{1}}}) ==
        "[batch,3,3,3]");
  CHECK(infer1("MaxPool", {x}, {{"kernel_shape", k(3)}, {"dilations", k(2)}}) == "[batch,3,1,1]");
  CHECK(infer1("AveragePool", {x}, {{"kernel_shape", k(3)}, {"pads", ints{1, 1, 1, 1}}}) ==
        "[batch,3,5,5]");
  CHECK(infer1(
            "AveragePool", {x},
            {{"kernel_shape", k(3)}, {"strides", k(2)}, {"auto_pad", std::string("SAME_UPPER")}}) ==
        "[batch,3,3,3]");
  CHECK(infer1("AveragePool", {x},
               {{"kernel_shape", k(3)},
                {"strides", k(3)},
                {"pads", ints{1, 1, 1, 1}},
                {"ceil_mode", int64_t{1}}}) ==
        "[batch,3,2,2]");  // last window would start in padding
  CHECK(infer1("MaxPool", {{1, 2, 7}}, {{"kernel_shape", ints{3}}, {"strides", ints{2}}}) ==
        "[1,2,3]");
  CHECK(infer1("GlobalAveragePool", {{kBatch, 16, 7, kSeq}}) == "[batch,16,1,1]");

  GraphBuilder b("g");
  auto in = b.input("x", DType::F16, {1, 3, 4, 4});
  auto outs = b.op("MaxPool", {in}, {{"kernel_shape", k(2)}, {"strides", k(2)}}, 2);
  Graph g = built(b, outs);
  CHECK(shape_of(g, outs[0]) == "[1,3,2,2]");
  CHECK(g.value(outs[0]).dtype == DType::F16);
  CHECK(shape_of(g, outs[1]) == "[1,3,2,2]");
  CHECK(g.value(outs[1]).dtype == DType::I64);  // indices

  CHECK_CONTAINS(infer1_error("MaxPool", {{1, 3, 2, 2}}, {{"kernel_shape", k(3)}}),
                 "node 'node' (MaxPool): window of extent 3 does not fit input size 2");
  CHECK_CONTAINS(infer1_error("MaxPool", {{1, 3, 4, 4}}),
                 "kernel_shape [] does not match 2 spatial dimensions");
  CHECK_CONTAINS(infer1_error("GlobalAveragePool", {{3, 4}}),
                 "input must be [N,C,spatial...], got [3,4]");
}

// ---- Normalisation, softmax, reductions --------------------------------------------------------

TEST_CASE("normalisation and softmax") {
  CHECK(infer1("Softmax", {{kBatch, 4, 10}}) == "[batch,4,10]");
  CHECK(infer1("LogSoftmax", {{kBatch, 10}}, {{"axis", int64_t{0}}}) == "[batch,10]");
  CHECK_CONTAINS(infer1_error("Softmax", {{2, 3, 4}}, {{"axis", int64_t{3}}}),
                 "node 'node' (Softmax): axis 3 is out of range for rank 3");
  CHECK(infer1("BatchNormalization", {{kBatch, 3, 8, 8}, {3}, {3}, {3}, {3}}) == "[batch,3,8,8]");
  CHECK_CONTAINS(infer1_error("BatchNormalization", {{1, 3, 8, 8}, {4}, {3}, {3}, {3}}),
                 "input 1 has shape [4], expected [3]");

  GraphBuilder b("g");
  auto x = b.input("x", DType::F16, {kBatch, kSeq, 8});
  auto outs = b.op("LayerNormalization", {x, b.constant("s", Tensor(DType::F32, {8}))}, {}, 3);
  Graph g = built(b, {outs[0]});
  CHECK(shape_of(g, outs[0]) == "[batch,seq,8]");
  CHECK(g.value(outs[0]).dtype == DType::F16);
  CHECK(shape_of(g, outs[1]) == "[batch,seq,1]");
  CHECK(g.value(outs[1]).dtype == DType::F32);
  CHECK(shape_of(g, outs[2]) == "[batch,seq,1]");
  CHECK_CONTAINS(infer1_error("LayerNormalization", {{2, 3, 8}, {4}}),
                 "input 1 [4] does not broadcast to the normalized shape [8]");
  CHECK(infer1("LayerNormalization", {{2, 3, 8}, {3, 8}}, {{"axis", int64_t{1}}}) == "[2,3,8]");
}

TEST_CASE("reductions: keepdims, axes attribute and input, noop_with_empty_axes") {
  const Shape x{kBatch, kSeq, 8};
  CHECK(infer1("ReduceMean", {x}, {{"axes", ints{-1}}}) == "[batch,seq,1]");
  CHECK(infer1("ReduceMean", {x}, {{"axes", ints{-1}}, {"keepdims", int64_t{0}}}) == "[batch,seq]");
  CHECK(infer1("ReduceSum", {x}, {{"axes", ints{0, 2}}, {"keepdims", int64_t{0}}}) == "[seq]");
  CHECK(infer1("ReduceMax", {x}) == "[1,1,1]");  // no axes: all
  CHECK(infer1("ReduceMax", {x}, {{"keepdims", int64_t{0}}}) == "[]");
  CHECK(infer1("ReduceSum", {x}, {{"noop_with_empty_axes", int64_t{1}}}) == "[batch,seq,8]");
  CHECK_CONTAINS(infer1_error("ReduceMean", {x}, {{"axes", ints{1, -2}}}),
                 "axes [1,-2] repeat axis 1");
  CHECK_CONTAINS(infer1_error("ReduceMean", {x}, {{"axes", ints{3}}}),
                 "node 'node' (ReduceMean): axis 3 is out of range for rank 3");

  auto with_input = [&](std::vector<int64_t> axes, Attributes attrs) {
    GraphBuilder b("g");
    auto in = b.input("x", DType::F32, x);
    auto a = b.constant_i64(axes);
    auto y = b.op1("ReduceSum", {in, a}, std::move(attrs));
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(with_input({1}, {{"keepdims", int64_t{0}}}) == "[batch,8]");
  CHECK(with_input({-1, 0}, {}) == "[1,seq,1]");
  CHECK(with_input({}, {}) == "[1,1,1]");
  CHECK(with_input({}, {{"noop_with_empty_axes", int64_t{1}}}) == "[batch,seq,8]");
  // Runtime axes: unknown.
  GraphBuilder b("g");
  auto in = b.input("x", DType::F32, x);
  auto y = b.op1("ReduceSum", {in, b.input("axes", DType::I64, {1})});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "none");
}

// ---- Shapes and data movement ----------------------------------------------------------------

TEST_CASE("Reshape: 0 copies (keeping symbols), -1 is inferred") {
  auto reshape = [](Shape in, std::vector<int64_t> target, int64_t allowzero = 0) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto y = b.op1("Reshape", {x, b.constant_i64(std::move(target))}, {{"allowzero", allowzero}});
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(reshape({2, 3, 4}, {-1, 4}) == "[6,4]");
  CHECK(reshape({2, 3, 4}, {0, -1}) == "[2,12]");
  CHECK(reshape({2, 3, 4}, {4, 0, 2}) == "[4,3,2]");
  CHECK(reshape({2, 3, 4}, {24}) == "[24]");
  CHECK(reshape({kBatch, kSeq, 768}, {0, 0, 12, 64}) == "[batch,seq,12,64]");
  CHECK(reshape({kBatch, 3, 4}, {0, -1}) == "[batch,?]");
  CHECK(reshape({kBatch, 3, 4}, {0, 12}) == "[batch,12]");
  CHECK(reshape({0, 3}, {-1, 3}) == "[0,3]");
  CHECK(reshape({0, 3}, {0, 3}, 1) == "[0,3]");
  CHECK(reshape({1}, {}) == "[]");

  auto err = [](Shape in, std::vector<int64_t> target) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto y = b.op1("Reshape", {x, b.constant_i64(std::move(target))}, {}, "rs");
    return build_error(b, {y});
  };
  CHECK_CONTAINS(err({2, 3}, {4, 2}),
                 "node 'rs' (Reshape): cannot reshape [2,3] (6 elements) to [4,2] (8 elements)");
  CHECK_CONTAINS(err({2, 3}, {-1, -1}), "shape [-1,-1] has more than one -1");
  CHECK_CONTAINS(err({2, 3}, {4, -1}), "cannot reshape [2,3] (6 elements) to [4,-1]");
  CHECK_CONTAINS(err({6}, {0, 0}), "0 at position 1 copies a dimension the input (rank 1) lacks");
  CHECK_CONTAINS(err({6}, {-2, -3}), "has a negative size");
}

TEST_CASE("Reshape from a runtime shape: unknown sizes") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {kBatch, 12});
  auto y = b.op1("Reshape", {x, b.input("s", DType::I64, {3})});
  Graph g = built(b, {y});
  const hpf::Value& v = g.value(y);
  // The rank follows from the length of the shape input; no size is known.
  if (v.has_shape) {
    CHECK(v.shape.size() == 3);
    for (const Dim& d : v.shape) {
      CHECK_FALSE(d.known());
      CHECK(d.symbol.empty());
    }
  }
  CHECK((v.has_shape || v.shape.empty()));
}

TEST_CASE("Transpose and Flatten") {
  CHECK(infer1("Transpose", {{kBatch, kSeq, 64}}, {{"perm", ints{0, 2, 1}}}) == "[batch,64,seq]");
  CHECK(infer1("Transpose", {{2, 3, 4}}) == "[4,3,2]");  // default: reversed
  CHECK(infer1("Transpose", {{2, 3, 4}}, {{"perm", ints{-1, 0, 1}}}) == "[4,2,3]");
  CHECK_CONTAINS(infer1_error("Transpose", {{2, 3, 4}}, {{"perm", ints{1, 0}}}),
                 "node 'node' (Transpose): perm has 2 entries for rank 3");
  CHECK_CONTAINS(infer1_error("Transpose", {{2, 3, 4}}, {{"perm", ints{0, 0, 1}}}),
                 "perm: axes [0,0,1] repeat axis 0");

  const std::string fb = infer1("Flatten", {{kBatch, 3, 4, 5}});
  CHECK_MESSAGE((fb == "[batch,60]" || fb == "[?,60]"), fb);
  CHECK(infer1("Flatten", {{2, 3, 4, 5}}, {{"axis", int64_t{2}}}) == "[6,20]");
  CHECK(infer1("Flatten", {{2, 3, 4}}, {{"axis", int64_t{0}}}) == "[1,24]");
  CHECK(infer1("Flatten", {{2, 3, 4}}, {{"axis", int64_t{3}}}) == "[24,1]");
  CHECK(infer1("Flatten", {{2, 3, 4}}, {{"axis", int64_t{-1}}}) == "[6,4]");
  CHECK(infer1("Flatten", {{kBatch, 3, 4}}, {{"axis", int64_t{2}}}) == "[?,4]");
  CHECK(infer1("Flatten", {{2, 0, 4}}) == "[2,0]");
  CHECK_CONTAINS(infer1_error("Flatten", {{2, 3, 4}}, {{"axis", int64_t{4}}}),
                 "node 'node' (Flatten): axis 4 is out of range for rank 3");
}

TEST_CASE("Squeeze and Unsqueeze, axes as attribute or input") {
  CHECK(infer1("Squeeze", {{kBatch, 1, 4}}, {{"axes", ints{1}}}) == "[batch,4]");
  CHECK(infer1("Squeeze", {{1, 3, 1}}) == "[3]");
  CHECK(infer1("Squeeze", {{1, 3, 1}}, {{"axes", ints{-1}}}) == "[1,3]");
  CHECK(infer1("Squeeze", {{1, kBatch}}, {{"axes", ints{0}}}) == "[batch]");
  CHECK(infer1("Squeeze", {{1, kBatch}}) == "none");  // batch might be 1
  CHECK_CONTAINS(infer1_error("Squeeze", {{2, 3}}, {{"axes", ints{1}}}),
                 "node 'node' (Squeeze): cannot squeeze axis 1 of size 3");

  CHECK(infer1("Unsqueeze", {{3}}, {{"axes", ints{0}}}) == "[1,3]");
  CHECK(infer1("Unsqueeze", {{3, 4}}, {{"axes", ints{0, 2}}}) == "[1,3,1,4]");
  CHECK(infer1("Unsqueeze", {{kBatch}}, {{"axes", ints{-1}}}) == "[batch,1]");
  CHECK(infer1("Unsqueeze", {{}}, {{"axes", ints{0}}}) == "[1]");
  CHECK_CONTAINS(infer1_error("Unsqueeze", {{3}}, {{"axes", ints{2}}}),
                 "axis 2 is out of range for rank 2");

  auto with_input = [](const char* op, Shape in, std::vector<int64_t> axes) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto y = b.op1(op, {x, b.constant_i64(std::move(axes))});
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(with_input("Squeeze", {kBatch, 1, 1, 4}, {1, 2}) == "[batch,4]");
  CHECK(with_input("Unsqueeze", {kBatch, 4}, {1, -1}) == "[batch,1,4,1]");
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2, 1});
  auto y = b.op1("Unsqueeze", {x, b.input("axes", DType::I64, {1})});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "none");
}

TEST_CASE("Concat") {
  auto concat = [](std::vector<Shape> in, int64_t axis) {
    return infer1("Concat", std::move(in), {{"axis", axis}});
  };
  CHECK(concat({{kBatch, 2}, {kBatch, 3}}, 1) == "[batch,5]");
  CHECK(concat({{kBatch, 2}, {kBatch, 3}, {kBatch, 4}}, -1) == "[batch,9]");
  CHECK(concat({{2, 4}, {3, 4}}, 0) == "[5,4]");
  CHECK(concat({{kBatch, 4}, {2, 4}}, 0) == "[?,4]");
  CHECK(concat({{0, 4}, {2, 4}}, 0) == "[2,4]");
  CHECK(concat({{2}}, 0) == "[2]");
  CHECK_CONTAINS(infer1_error("Concat", {{2, 4}, {2, 5}}, {{"axis", int64_t{0}}}),
                 "node 'node' (Concat): input 1 [2,5] differs from input 0 [2,4] outside axis 0");
  CHECK_CONTAINS(infer1_error("Concat", {{2, 4}, {2}}, {{"axis", int64_t{0}}}),
                 "input 1 [2] differs in rank from input 0 [2,4]");
  CHECK_CONTAINS(infer1_error("Concat", {{2, 4}, {2, 4}}, {{"axis", int64_t{2}}}),
                 "axis 2 is out of range for rank 2");
  GraphBuilder b("g");
  auto y = b.op1("Concat", {b.input("a", DType::F32, {2}), b.input("c", DType::I64, {2})},
                 {{"axis", int64_t{0}}});
  CHECK_CONTAINS(build_error(b, {y}), "input 1 is i64, input 0 is f32");
}

TEST_CASE("Split: equal, explicit, uneven") {
  auto split = [](Shape in, int n, Attributes attrs, std::vector<int64_t> sizes_input = {}) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    std::vector<ValueId> ins{x};
    if (!sizes_input.empty()) ins.push_back(b.constant_i64(sizes_input));
    auto outs = b.op("Split", ins, std::move(attrs), n, "split");
    Graph g = built(b, outs);
    std::vector<std::string> r;
    for (ValueId o : outs) r.push_back(shape_of(g, o));
    return r;
  };
  using S = std::vector<std::string>;
  CHECK(split({6, 4}, 3, {}) == S{"[2,4]", "[2,4]", "[2,4]"});
  CHECK(split({kBatch, 6}, 2, {{"axis", int64_t{-1}}}) == S{"[batch,3]", "[batch,3]"});
  CHECK(split({6, 4}, 2, {{"split", ints{2, 4}}}) == S{"[2,4]", "[4,4]"});
  CHECK(split({6, 4}, 2, {{"axis", int64_t{1}}}, {1, 3}) == S{"[6,1]", "[6,3]"});
  CHECK(split({7}, 3, {}) == S{"[3]", "[3]", "[1]"});  // uneven: the last piece is smaller
  CHECK(split({kSeq, 2}, 2, {{"split", ints{3, 5}}}) == S{"[3,2]", "[5,2]"});
  CHECK(split({kSeq, 2}, 2, {}) == S{"[?,2]", "[?,2]"});
  CHECK(split({0, 2}, 2, {}) == S{"[0,2]", "[0,2]"});

  auto err = [](Shape in, int n, Attributes attrs) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto outs = b.op("Split", {x}, std::move(attrs), n, "split");
    return build_error(b, outs);
  };
  CHECK_CONTAINS(err({6}, 2, {{"split", ints{2, 3}}}),
                 "node 'split' (Split): split [2,3] sums to 5, the axis has size 6");
  CHECK_CONTAINS(err({6}, 3, {{"split", ints{2, 4}}}), "split has 2 sizes for 3 outputs");
  CHECK_CONTAINS(err({5}, 4, {}), "cannot split size 5 into 4 outputs");
  CHECK_CONTAINS(err({6}, 2, {{"axis", int64_t{1}}}), "axis 1 is out of range for rank 1");
}

TEST_CASE("Slice: negative indices, steps, clamping") {
  auto slice = [](Shape in, ints starts, ints ends, ints axes = {}, ints steps = {}) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    std::vector<ValueId> ins{x, b.constant_i64(starts), b.constant_i64(ends)};
    if (!axes.empty() || !steps.empty())
      ins.push_back(axes.empty() ? kNoValue : b.constant_i64(axes));
    if (!steps.empty()) ins.push_back(b.constant_i64(steps));
    auto y = b.op1("Slice", ins, {}, "slice");
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(slice({10, 20}, {2}, {5}) == "[3,20]");
  CHECK(slice({10, 20}, {-3}, {kMax}, {0}) == "[3,20]");
  CHECK(slice({10, 20}, {0}, {-1}, {1}) == "[10,19]");
  CHECK(slice({10, 20}, {0}, {20}, {1}, {2}) == "[10,10]");
  CHECK(slice({10, 20}, {1}, {20}, {-1}, {3}) == "[10,7]");
  CHECK(slice({10, 20}, {-1}, {kMin}, {0}, {-1}) == "[10,20]");  // reversed
  CHECK(slice({10, 20}, {100}, {0}, {0}, {-2}) == "[5,20]");     // start clamped to 9: 9,7,5,3,1
  CHECK(slice({10, 20}, {5}, {100}) == "[5,20]");                // end clamped
  CHECK(slice({10, 20}, {-100}, {3}) == "[3,20]");               // start clamped to 0
  CHECK(slice({10, 20}, {12}, {20}) == "[0,20]");                // empty
  CHECK(slice({10, 20}, {5}, {2}) == "[0,20]");
  CHECK(slice({10, 20}, {0, 0}, {2, 3}, {1, 0}) == "[3,2]");
  CHECK(slice({kBatch, 20}, {2}, {5}, {1}) == "[batch,3]");      // axis not sliced keeps its symbol
  CHECK(slice({kBatch, 20}, {0}, {kMax}, {0}) == "[batch,20]");  // whole symbolic axis

  // Opset-1 form: starts/ends/axes as attributes.
  CHECK(infer1("Slice", {{10, 20}}, {{"starts", ints{1}}, {"ends", ints{-1}}, {"axes", ints{1}}}) ==
        "[10,18]");
  // Runtime starts: rank known, sizes not.
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {10, 20});
  auto y = b.op1("Slice", {x, b.input("s", DType::I64, {1}), b.constant_i64({5})});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "[?,?]");

  GraphBuilder e("g");
  auto ex = e.input("x", DType::F32, {10});
  auto ey = e.op1(
      "Slice",
      {ex, e.constant_i64({0}), e.constant_i64({5}), e.constant_i64({0}), e.constant_i64({0})}, {},
      "slice");
  CHECK_CONTAINS(build_error(e, {ey}), "node 'slice' (Slice): steps [0] contain 0");
}

// Only a whole-axis slice keeps a symbolic size: x[:, 1:] of [batch,seq] has seq-1 elements.
TEST_CASE("Slice: a partial slice of a symbolic axis does not keep the symbol") {
  auto slice = [](ints starts, ints ends) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {kBatch, kSeq});
    auto y = b.op1("Slice", {x, b.constant_i64(starts), b.constant_i64(ends), b.constant_i64({1})});
    Graph g = built(b, {y});
    return g.value(y).shape;
  };
  const Shape from1 = slice({1}, {kMax});
  REQUIRE(from1.size() == 2);
  CHECK(from1[0] == kBatch);
  CHECK(from1[1] != kSeq);
  const Shape first4 = slice({0}, {4});
  REQUIRE(first4.size() == 2);
  CHECK(first4[1] != kSeq);
  const Shape whole = slice({0}, {kMax});
  CHECK(whole == Shape{kBatch, kSeq});
}

TEST_CASE("Pad") {
  auto pad = [](Shape in, ints pads, ints axes = {}) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    std::vector<ValueId> ins{x, b.constant_i64(pads)};
    if (!axes.empty()) {
      ins.push_back(kNoValue);
      ins.push_back(b.constant_i64(axes));
    }
    auto y = b.op1("Pad", ins, {}, "pad");
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(pad({3, 4}, {0, 1, 0, 2}) == "[3,7]");
  CHECK(pad({3, 4}, {1, 1, 1, 1}) == "[5,6]");
  CHECK(pad({3, 4}, {-1, 0, 0, -2}) == "[2,2]");  // negative pads crop
  CHECK(pad({kBatch, 4}, {1, 1, 1, 1}) == "[batch,6]");
  CHECK(pad({3, 4}, {1, 1}, {1}) == "[3,6]");
  CHECK(pad({3, 4}, {2, 0}, {-2}) == "[5,4]");
  CHECK(infer1("Pad", {{3, 4}}, {{"pads", ints{1, 0, 1, 0}}}) == "[5,4]");  // opset-2 attribute
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {3, 4});
  auto y = b.op1("Pad", {x, b.input("p", DType::I64, {4})});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "[?,?]");

  GraphBuilder e("g");
  auto ex = e.input("x", DType::F32, {3, 4});
  auto ey = e.op1("Pad", {ex, e.constant_i64({1, 1})}, {}, "pad");
  CHECK_CONTAINS(build_error(e, {ey}), "node 'pad' (Pad): pads has 2 values, expected 4");
  GraphBuilder n("g");
  auto nx = n.input("x", DType::F32, {3});
  auto ny = n.op1("Pad", {nx, n.constant_i64({-2, -2})}, {}, "pad");
  CHECK_CONTAINS(build_error(n, {ny}), "pads make axis 0 negative");
}

TEST_CASE("Expand") {
  auto expand = [](Shape in, ints target) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto y = b.op1("Expand", {x, b.constant_i64(target)}, {}, "expand");
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(expand({3, 1}, {2, 1, 4}) == "[2,3,4]");
  CHECK(expand({kBatch, 1}, {1, 5}) == "[batch,5]");
  CHECK(expand({3, 4}, {4}) == "[3,4]");
  CHECK(expand({}, {2, 2}) == "[2,2]");
  GraphBuilder e("g");
  auto ex = e.input("x", DType::F32, {3});
  auto ey = e.op1("Expand", {ex, e.constant_i64({4})}, {}, "expand");
  CHECK_CONTAINS(build_error(e, {ey}),
                 "node 'expand' (Expand): shapes [3] and [4] cannot be broadcast");
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {3});
  auto y = b.op1("Expand", {x, b.input("t", DType::I64, {2})});
  Graph g = built(b, {y});
  CHECK(shape_of(g, y) == "none");
}

TEST_CASE("Shape with start and end") {
  auto shape = [](Shape in, Attributes attrs) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F16, std::move(in));
    auto y = b.op1("Shape", {x}, std::move(attrs));
    Graph g = built(b, {y});
    CHECK(g.value(y).dtype == DType::I64);
    return shape_of(g, y);
  };
  const Shape x{kBatch, kSeq, 768};
  CHECK(shape(x, {}) == "[3]");
  CHECK(shape(x, {{"start", int64_t{1}}}) == "[2]");
  CHECK(shape(x, {{"start", int64_t{-1}}}) == "[1]");
  CHECK(shape(x, {{"end", int64_t{-1}}}) == "[2]");
  CHECK(shape(x, {{"start", int64_t{1}}, {"end", int64_t{2}}}) == "[1]");
  CHECK(shape(x, {{"start", int64_t{2}}, {"end", int64_t{1}}}) == "[0]");
  CHECK(shape(x, {{"start", int64_t{-10}}, {"end", int64_t{10}}}) == "[3]");  // clamped
  CHECK(shape({}, {}) == "[0]");
}

TEST_CASE("ConstantOfShape and Range") {
  {
    GraphBuilder b("g");
    auto y = b.op1("ConstantOfShape", {b.constant_i64({2, 3})});
    auto z = b.op1("ConstantOfShape", {b.constant_i64({4})}, {{"value", Tensor::scalar_i64(7)}});
    auto e = b.op1("ConstantOfShape", {b.constant_i64({0, 5})});
    auto s =
        b.op1("ConstantOfShape", {b.op1("Shape", {b.input("x", DType::F32, {kBatch, kSeq, 4})})});
    Graph g = built(b, {y, z, e, s});
    CHECK(shape_of(g, y) == "[2,3]");
    CHECK(g.value(y).dtype == DType::F32);
    CHECK(shape_of(g, z) == "[4]");
    CHECK(g.value(z).dtype == DType::I64);
    CHECK(shape_of(g, e) == "[0,5]");
    CHECK(shape_of(g, s) == "[?,?,?]");  // rank from the shape's length
  }
  {
    GraphBuilder b("g");
    auto y = b.op1("ConstantOfShape", {b.constant_i64({2, -1})}, {}, "cos");
    CHECK_CONTAINS(build_error(b, {y}),
                   "node 'cos' (ConstantOfShape): negative dimension in shape");
  }
  {
    GraphBuilder b("g");
    auto y = b.op1("ConstantOfShape", {b.constant_i64({2})}, {{"value", Tensor(DType::F32, {2})}},
                   "cos");
    CHECK_CONTAINS(build_error(b, {y}), "value must hold one element, holds 2");
  }
  {
    GraphBuilder b("g");
    auto ri = b.op1("Range", {b.constant(Tensor::scalar_i64(0)), b.constant(Tensor::scalar_i64(10)),
                              b.constant(Tensor::scalar_i64(3))});
    auto rf = b.op1("Range", {b.scalar(1.0f), b.scalar(2.0f), b.scalar(0.25f)});
    auto rn = b.op1("Range", {b.scalar(5.0f), b.scalar(1.0f), b.scalar(1.0f)});
    auto rd = b.op1("Range", {b.scalar(10.0f), b.scalar(4.0f), b.scalar(-2.0f)});
    auto rr = b.op1("Range", {b.input("start", DType::I64, {}), b.constant(Tensor::scalar_i64(10)),
                              b.constant(Tensor::scalar_i64(1))});
    Graph g = built(b, {ri, rf, rn, rd, rr});
    CHECK(shape_of(g, ri) == "[4]");
    CHECK(g.value(ri).dtype == DType::I64);
    CHECK(shape_of(g, rf) == "[4]");
    CHECK(g.value(rf).dtype == DType::F32);
    CHECK(shape_of(g, rn) == "[0]");
    CHECK(shape_of(g, rd) == "[3]");
    CHECK(shape_of(g, rr) == "[?]");
  }
  {
    GraphBuilder b("g");
    auto y = b.op1("Range", {b.scalar(0.0f), b.scalar(1.0f), b.scalar(0.0f)}, {}, "range");
    CHECK_CONTAINS(build_error(b, {y}), "node 'range' (Range): delta is 0");
  }
}

TEST_CASE("Gather: axis and scalar indices") {
  auto gather = [](Shape data, Shape idx, int64_t axis, DType it = DType::I64) {
    GraphBuilder b("g");
    auto d = b.input("d", DType::F16, std::move(data));
    auto i = b.input("i", it, std::move(idx));
    auto y = b.op1("Gather", {d, i}, {{"axis", axis}}, "gather");
    Graph g = built(b, {y});
    CHECK(g.value(y).dtype == DType::F16);
    return shape_of(g, y);
  };
  CHECK(gather({30000, 64}, {kBatch, kSeq}, 0) == "[batch,seq,64]");  // embedding lookup
  CHECK(gather({100, 64}, {3}, 1) == "[100,3]");
  CHECK(gather({5, 6}, {}, 0) == "[6]");  // a scalar index removes the axis
  CHECK(gather({5, 6, 7}, {}, 1) == "[5,7]");
  CHECK(gather({5, 6, 7}, {2, 2}, -1) == "[5,6,2,2]");
  CHECK(gather({5}, {0}, 0, DType::I32) == "[0]");

  GraphBuilder b("g");
  auto y =
      b.op1("Gather", {b.input("d", DType::F32, {5}), b.input("i", DType::F32, {2})}, {}, "gather");
  CHECK_CONTAINS(build_error(b, {y}), "node 'gather' (Gather): indices must be integers, are f32");
  GraphBuilder b2("g");
  auto y2 = b2.op1("Gather", {b2.input("d", DType::F32, {5}), b2.input("i", DType::I64, {2})},
                   {{"axis", int64_t{1}}}, "gather");
  CHECK_CONTAINS(build_error(b2, {y2}), "axis 1 is out of range for rank 1");
}

TEST_CASE("Resize with scales and with sizes") {
  auto resize_scales = [](Shape in, std::vector<float> scales, Attributes attrs = {}) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, std::move(in));
    auto s = b.constant(f32({static_cast<int64_t>(scales.size())}, scales));
    auto y = b.op1("Resize", {x, kNoValue, s}, std::move(attrs), "resize");
    Graph g = built(b, {y});
    return shape_of(g, y);
  };
  CHECK(resize_scales({1, 3, 4, 4}, {1, 1, 2, 2}) == "[1,3,8,8]");
  CHECK(resize_scales({1, 3, 5, 5}, {1, 1, 1.5f, 0.5f}) == "[1,3,7,2]");  // floor
  CHECK(resize_scales({kBatch, 3, 4, 4}, {1, 1, 2, 2}, {{"mode", std::string("linear")}}) ==
        "[?,3,8,8]");

  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {1, 3, 4, 4});
  auto y = b.op1("Resize", {x, kNoValue, kNoValue, b.constant_i64({1, 3, 9, 7})});
  // Some exporters pass an empty scales tensor next to sizes.
  auto y2 = b.op1("Resize",
                  {x, kNoValue, b.constant(Tensor(DType::F32, {0})), b.constant_i64({1, 3, 2, 2})});
  Graph g = built(b, {y, y2});
  CHECK(shape_of(g, y) == "[1,3,9,7]");
  CHECK(shape_of(g, y2) == "[1,3,2,2]");

  auto err = [](std::vector<ValueId> (*make)(GraphBuilder&),
                StatusCode code = StatusCode::invalid_argument) {
    GraphBuilder b("g");
    auto ins = make(b);
    auto y = b.op1("Resize", ins, {}, "resize");
    return build_error(b, {y}, code);
  };
  CHECK_CONTAINS(err([](GraphBuilder& b) {
                   auto x = b.input("x", DType::F32, {1, 3, 4, 4});
                   return std::vector<ValueId>{x, kNoValue, b.constant(Tensor(DType::F32, {3}))};
                 }),
                 "node 'resize' (Resize): scales has 3 values for rank 4");
  CHECK_CONTAINS(err([](GraphBuilder& b) {
                   auto x = b.input("x", DType::F32, {1, 3, 4, 4});
                   return std::vector<ValueId>{x};
                 }),
                 "Resize needs scales or sizes");
  CHECK_CONTAINS(err([](GraphBuilder& b) {
                   auto x = b.input("x", DType::F32, {1, 3, 4, 4});
                   return std::vector<ValueId>{x, kNoValue, kNoValue, b.constant_i64({1, 3})};
                 }),
                 "sizes has 2 values for rank 4");
  GraphBuilder c("g");
  auto cx = c.input("x", DType::F32, {1, 3, 4, 4});
  auto cy = c.op1("Resize", {cx, kNoValue, c.constant(f32({4}, {1, 1, 2, 2}))},
                  {{"mode", std::string("area")}}, "resize");
  CHECK_CONTAINS(build_error(c, {cy}, StatusCode::unsupported),
                 "node 'resize' (Resize): mode 'area' is not supported");
}

TEST_CASE("Recurrent, integer linear algebra and DFT shapes") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {5, kBatch, 3});  // [seq, batch, input]
  auto w = b.input("w", DType::F32, {2, 16, 3});       // bidirectional LSTM, hidden 4
  auto r = b.input("r", DType::F32, {2, 16, 4});
  auto lstm = b.op("LSTM", {x, w, r}, {{"direction", std::string("bidirectional")}}, 3, "lstm");
  auto xb = b.input("xb", DType::F32, {kBatch, 5, 3});  // layout 1
  auto gru = b.op("GRU", {xb, b.input("gw", DType::F32, {1, 6, 3}), b.input("gr", DType::F32, {1, 6, 2})},
                  {{"layout", int64_t{1}}}, 2, "gru");
  auto qa = b.input("qa", DType::U8, {2, 4}), qb = b.input("qb", DType::I8, {4, 3});
  auto mmi = b.op1("MatMulInteger", {qa, qb}, {}, "mmi");
  auto f = b.scalar(0.5f);
  auto qzp = b.constant(Tensor(DType::I8, {}));
  auto qmm = b.op1("QLinearMatMul", {qa, f, b.constant(Tensor(DType::U8, {})), qb, f, qzp, f, qzp}, {}, "qmm");
  auto sig = b.input("sig", DType::F32, {1, 10, 1});
  auto dft = b.op1("DFT", {sig}, {{"onesided", int64_t{1}}}, "dft");
  Graph g = built(b, {lstm[0], lstm[1], lstm[2], gru[0], gru[1], mmi, qmm, dft});
  CHECK(shape_of(g, lstm[0]) == "[5,2,batch,4]");
  CHECK(shape_of(g, lstm[2]) == "[2,batch,4]");
  CHECK(shape_of(g, gru[0]) == "[batch,5,1,2]");
  CHECK(shape_of(g, gru[1]) == "[batch,1,2]");
  CHECK(shape_of(g, mmi) == "[2,3]");
  CHECK(g.value(mmi).dtype == DType::I32);
  CHECK(g.value(qmm).dtype == DType::I8);  // y_zero_point's type
  CHECK(shape_of(g, dft) == "[1,6,2]");
}

// ---- Quantisation ----------------------------------------------------------------------------

TEST_CASE("QuantizeLinear output type comes from the zero point") {
  auto q = [](std::optional<DType> zp) {
    GraphBuilder b("g");
    auto x = b.input("x", DType::F32, {kBatch, 8});
    std::vector<ValueId> ins{x, b.scalar(0.1f)};
    if (zp) ins.push_back(b.constant(Tensor(*zp, {})));
    auto y = b.op1("QuantizeLinear", ins, {}, "q");
    Graph g = built(b, {y});
    CHECK(shape_of(g, y) == "[batch,8]");
    return g.value(y).dtype;
  };
  CHECK(q(std::nullopt) == DType::U8);
  CHECK(q(DType::U8) == DType::U8);
  CHECK(q(DType::I8) == DType::I8);
  CHECK(q(DType::I4) == DType::I4);

  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {8});
  auto y = b.op1("QuantizeLinear", {x, b.scalar(0.1f), b.scalar(0.0f)}, {}, "q");
  CHECK_CONTAINS(build_error(b, {y}),
                 "node 'q' (QuantizeLinear): zero point type f32 is not u8, i8 or i4");

  GraphBuilder d("g");
  auto qx = d.input("qx", DType::I8, {kBatch, 8});
  auto dq = d.op1("DequantizeLinear", {qx, d.scalar(0.1f), d.constant(Tensor(DType::I8, {}))});
  Graph g = built(d, {dq});
  CHECK(g.value(dq).dtype == DType::F32);
  CHECK(shape_of(g, dq) == "[batch,8]");
}

// ---- Zero-size dimensions --------------------------------------------------------------------

TEST_CASE("zero-size dimensions propagate") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {0, 4});
  auto a = b.add(x, b.input("bias", DType::F32, {1, 4}));
  auto m = b.matmul(a, b.constant("w", Tensor(DType::F32, {4, 3})));
  auto c = b.op1("Concat", {m, b.input("y", DType::F32, {2, 3})}, {{"axis", int64_t{0}}});
  auto t = b.transpose(m, {1, 0});
  Graph g = built(b, {c, t});
  CHECK(shape_of(g, a) == "[0,4]");
  CHECK(shape_of(g, m) == "[0,3]");
  CHECK(shape_of(g, c) == "[2,3]");
  CHECK(shape_of(g, t) == "[3,0]");
  CHECK(infer1("ReduceSum", {{0, 3}}, {{"axes", ints{0}}}) == "[1,3]");
  CHECK(infer1("Softmax", {{2, 0}}) == "[2,0]");
  CHECK_CONTAINS(infer1_error("Add", {{0}, {2}}), "shapes [0] and [2] cannot be broadcast");
}

// ---- op_geometry -----------------------------------------------------------------------------

TEST_CASE("window_geometry") {
  using hpf::ir::window_geometry;
  const ints in{5, 6};
  auto g = window_geometry(in, {3, 3}, {}, {}, {}, "NOTSET", false);
  REQUIRE(g.ok());
  CHECK(g->out == ints{3, 4});
  CHECK(g->strides == ints{1, 1});
  CHECK(g->dilations == ints{1, 1});
  CHECK(g->pads_begin == ints{0, 0});
  CHECK(g->pads_end == ints{0, 0});

  auto p = window_geometry(in, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 2}, "NOTSET", false);
  REQUIRE(p.ok());
  CHECK(p->pads_begin == ints{1, 0});
  CHECK(p->pads_end == ints{1, 2});
  CHECK(p->out == ints{3, 3});  // (5+2-3)/2+1, (6+2-3)/2+1

  // SAME: out = ceil(in / stride); SAME_UPPER puts the extra pad at the end.
  const ints six{6};
  auto up = window_geometry(six, {3}, {2}, {}, {}, "SAME_UPPER", false);
  REQUIRE(up.ok());
  CHECK(up->out == ints{3});
  CHECK(up->pads_begin == ints{0});
  CHECK(up->pads_end == ints{1});
  auto lo = window_geometry(six, {3}, {2}, {}, {}, "SAME_LOWER", false);
  REQUIRE(lo.ok());
  CHECK(lo->out == ints{3});
  CHECK(lo->pads_begin == ints{1});
  CHECK(lo->pads_end == ints{0});
  auto same1 = window_geometry(six, {3}, {1}, {}, {}, "SAME_UPPER", false);
  REQUIRE(same1.ok());
  CHECK(same1->out == ints{6});
  CHECK(same1->pads_begin == ints{1});
  CHECK(same1->pads_end == ints{1});

  auto valid = window_geometry(six, {3}, {}, {}, {2, 2}, "VALID", false);
  REQUIRE(valid.ok());
  CHECK(valid->out == ints{4});
  CHECK(valid->pads_begin == ints{0});

  auto dil = window_geometry(ints{7}, {3}, {}, {2}, {}, "NOTSET", false);
  REQUIRE(dil.ok());
  CHECK(dil->out == ints{3});

  // ceil_mode, and the rule that a window may not start in the end padding.
  CHECK(window_geometry(ints{5}, {2}, {2}, {}, {}, "NOTSET", false)->out == ints{2});
  CHECK(window_geometry(ints{5}, {2}, {2}, {}, {}, "NOTSET", true)->out == ints{3});
  CHECK(window_geometry(ints{6}, {2}, {2}, {}, {}, "NOTSET", true)->out == ints{3});
  CHECK(window_geometry(ints{5}, {3}, {3}, {}, {1, 1}, "NOTSET", true)->out == ints{2});
  CHECK(window_geometry(ints{4}, {2}, {2}, {}, {1, 1}, "NOTSET", true)->out == ints{3});

  // Unknown sizes stay unknown.
  CHECK(window_geometry(ints{-1, 8}, {3, 3}, {}, {}, {}, "NOTSET", false)->out == ints{-1, 6});

  auto msg = [](hpf::Expected<hpf::ir::WindowGeometry> r) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    return r.status().message();
  };
  CHECK_CONTAINS(msg(window_geometry(six, {3, 3}, {}, {}, {}, "NOTSET", false)),
                 "kernel_shape [3,3] does not match 1 spatial dimensions");
  CHECK_CONTAINS(msg(window_geometry(six, {0}, {}, {}, {}, "NOTSET", false)),
                 "kernel_shape [0] must be >= 1");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {0}, {}, {}, "NOTSET", false)),
                 "strides [0] must be >= 1");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {}, {0}, {}, "NOTSET", false)),
                 "dilations [0] must be >= 1");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {}, {}, {-1, 0}, "NOTSET", false)),
                 "pads [-1,0] must be >= 0");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {}, {}, {1}, "NOTSET", false)),
                 "pads [1] need 2 values");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {1, 1}, {}, {}, "NOTSET", false)),
                 "strides [1,1] do not match 1 spatial dimensions");
  CHECK_CONTAINS(msg(window_geometry(six, {7}, {}, {}, {}, "NOTSET", false)),
                 "window of extent 7 does not fit input size 6 with pads [0,0]");
  CHECK_CONTAINS(msg(window_geometry(six, {3}, {}, {}, {}, "same", false)),
                 "auto_pad 'same' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

TEST_CASE("conv_transpose_geometry") {
  using hpf::ir::conv_transpose_geometry;
  auto plain = conv_transpose_geometry(ints{3}, {3}, {2}, {}, {}, {}, {}, "NOTSET");
  REQUIRE(plain.ok());
  CHECK(plain->out == ints{7});
  auto padded = conv_transpose_geometry(ints{3}, {3}, {2}, {}, {1, 1}, {1}, {}, "NOTSET");
  REQUIRE(padded.ok());
  CHECK(padded->out == ints{6});
  // output_shape determines the pads: total 1, the larger half at the start (NOTSET).
  auto shaped = conv_transpose_geometry(ints{5}, {3}, {2}, {}, {}, {}, {10}, "NOTSET");
  REQUIRE(shaped.ok());
  CHECK(shaped->out == ints{10});
  CHECK(shaped->pads_begin == ints{1});
  CHECK(shaped->pads_end == ints{0});
  auto upper = conv_transpose_geometry(ints{5}, {3}, {2}, {}, {}, {}, {10}, "SAME_UPPER");
  REQUIRE(upper.ok());
  CHECK(upper->pads_begin == ints{0});
  CHECK(upper->pads_end == ints{1});
  // output_shape may include N and C.
  auto nc = conv_transpose_geometry(ints{5}, {3}, {2}, {}, {}, {}, {1, 8, 10}, "NOTSET");
  REQUIRE(nc.ok());
  CHECK(nc->out == ints{10});
  // SAME without output_shape: in * stride.
  auto same = conv_transpose_geometry(ints{3, 4}, {3, 3}, {2, 2}, {}, {}, {}, {}, "SAME_LOWER");
  REQUIRE(same.ok());
  CHECK(same->out == ints{6, 8});
  CHECK(conv_transpose_geometry(ints{-1}, {3}, {}, {}, {}, {}, {}, "NOTSET")->out == ints{-1});

  auto bad = conv_transpose_geometry(ints{3}, {3}, {1}, {}, {3, 3}, {}, {}, "NOTSET");
  REQUIRE_FALSE(bad.ok());
  CHECK_CONTAINS(bad.status().message(), "pads [3,3] exceed the transposed convolution's output");
  auto op = conv_transpose_geometry(ints{3}, {3}, {1}, {}, {}, {1, 1}, {}, "NOTSET");
  REQUIRE_FALSE(op.ok());
  CHECK_CONTAINS(op.status().message(), "output_padding [1,1] does not match the spatial rank");
}

TEST_CASE("reshape_target") {
  using hpf::ir::reshape_target;
  CHECK(*reshape_target(ints{2, 3, 4}, ints{-1, 4}, false) == ints{6, 4});
  CHECK(*reshape_target(ints{2, 3, 4}, ints{0, 0, -1}, false) == ints{2, 3, 4});
  CHECK(*reshape_target(ints{2, 3, 4}, ints{4, 0, 2}, false) == ints{4, 3, 2});
  CHECK(*reshape_target(ints{0, 3}, ints{0, 3}, true) == ints{0, 3});
  CHECK(*reshape_target(ints{-1, 3, 4}, ints{0, -1}, false) == ints{-1, -1});
  CHECK(*reshape_target(ints{-1, 3, 4}, ints{0, 12}, false) == ints{-1, 12});
  CHECK(*reshape_target(ints{}, ints{1, 1}, false) == ints{1, 1});
  auto err = [](ints in, ints shape, bool allowzero) {
    auto r = reshape_target(in, shape, allowzero);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_CONTAINS(err({2, 3}, {4, 2}, false),
                 "cannot reshape [2,3] (6 elements) to [4,2] (8 elements)");
  CHECK_CONTAINS(err({2, 3}, {5, -1}, false), "cannot reshape [2,3] (6 elements) to [5,-1]");
  CHECK_CONTAINS(err({2, 3}, {-1, -1}, false), "shape [-1,-1] has more than one -1");
  CHECK_CONTAINS(err({2, 3}, {2, 3, 0}, false),
                 "0 at position 2 copies a dimension the input (rank 2) lacks");
  CHECK_CONTAINS(err({2, 3}, {-3, 2}, false), "shape [-3,2] has a negative size");
  CHECK_CONTAINS(err({2, 3}, {0, 6}, true),
                 "cannot reshape [2,3] (6 elements) to [0,6] (0 elements)");
}

TEST_CASE("slice_ranges") {
  using hpf::ir::slice_ranges;
  auto one = [](int64_t dim, int64_t start, int64_t end, int64_t step) {
    auto r = slice_ranges(ints{dim}, ints{start}, ints{end}, ints{}, ints{step});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    const hpf::ir::SliceAxis a = (*r)[0];
    return ints{a.start, a.step, a.count};
  };
  CHECK(one(10, 2, 5, 1) == ints{2, 1, 3});
  CHECK(one(10, -3, kMax, 1) == ints{7, 1, 3});
  CHECK(one(10, 0, 10, 3) == ints{0, 3, 4});
  CHECK(one(10, -1, kMin, -1) == ints{9, -1, 10});
  CHECK(one(10, 100, 0, -2) == ints{9, -2, 5});
  CHECK(one(10, 8, 2, -3) == ints{8, -3, 2});
  CHECK(one(10, -100, 100, 1) == ints{0, 1, 10});
  CHECK(one(10, 7, 3, 1) == ints{7, 1, 0});
  CHECK(one(10, 3, 7, -1)[2] == 0);
  CHECK(one(0, 0, kMax, 1)[2] == 0);
  // Axes not named keep everything; negative axes.
  auto r = slice_ranges(ints{4, 5, 6}, ints{1}, ints{3}, ints{-2}, ints{});
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].count == 4);
  CHECK((*r)[1].start == 1);
  CHECK((*r)[1].count == 2);
  CHECK((*r)[2].count == 6);
  // Unknown sizes give count -1.
  auto u = slice_ranges(ints{-1}, ints{1}, ints{3}, ints{}, ints{});
  REQUIRE(u.ok());
  CHECK((*u)[0].count == -1);

  auto err = [](ints starts, ints ends, ints axes, ints steps) {
    auto e = slice_ranges(ints{4, 5}, starts, ends, axes, steps);
    REQUIRE_FALSE(e.ok());
    return e.status().message();
  };
  CHECK_CONTAINS(err({0}, {1, 2}, {}, {}), "starts [0] and ends [1,2] differ in length");
  CHECK_CONTAINS(err({0}, {1}, {0, 1}, {}), "axes [0,1] and starts [0] differ in length");
  CHECK_CONTAINS(err({0}, {1}, {}, {1, 1}), "steps [1,1] and starts [0] differ in length");
  CHECK_CONTAINS(err({0}, {1}, {}, {0}), "steps [0] contain 0");
  CHECK_CONTAINS(err({0}, {1}, {2}, {}), "axis 2 is out of range for rank 2");
  CHECK_CONTAINS(err({0, 0}, {1, 1}, {1, -1}, {}), "axes [1,-1] repeat axis 1");
}

TEST_CASE("split_sizes") {
  using hpf::ir::split_sizes;
  CHECK(*split_sizes(6, ints{}, 3) == ints{2, 2, 2});
  CHECK(*split_sizes(7, ints{}, 3) == ints{3, 3, 1});
  CHECK(*split_sizes(10, ints{}, 4) == ints{3, 3, 3, 1});
  CHECK(*split_sizes(6, ints{2, 4}, 2) == ints{2, 4});
  CHECK(*split_sizes(6, ints{0, 6}, 2) == ints{0, 6});
  CHECK(*split_sizes(-1, ints{2, 4}, 2) == ints{2, 4});
  CHECK(*split_sizes(-1, ints{}, 2) == ints{-1, -1});
  CHECK(*split_sizes(0, ints{}, 2) == ints{0, 0});
  auto err = [](int64_t dim, ints split, int64_t n) {
    auto r = split_sizes(dim, split, n);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_CONTAINS(err(6, {2, 3}, 2), "split [2,3] sums to 5, the axis has size 6");
  CHECK_CONTAINS(err(6, {-1, 7}, 2), "split [-1,7] has a negative size");
  CHECK_CONTAINS(err(6, {}, 0), "split needs at least one output");
  CHECK_CONTAINS(err(5, {}, 4), "cannot split size 5 into 4 outputs");
  CHECK_CONTAINS(err(2, {}, 3), "cannot split size 2 into 3 outputs");
}

TEST_CASE("normalize_axes") {
  using hpf::ir::normalize_axes;
  CHECK(*normalize_axes(ints{0, -1}, 3) == ints{0, 2});
  CHECK(*normalize_axes(ints{}, 3) == ints{});
  CHECK(*normalize_axes(ints{-3, 1}, 3) == ints{0, 1});
  auto r = normalize_axes(ints{3}, 3);
  REQUIRE_FALSE(r.ok());
  CHECK_CONTAINS(r.status().message(), "axis 3 is out of range for rank 3");
  auto n = normalize_axes(ints{-4}, 3);
  REQUIRE_FALSE(n.ok());
  CHECK_CONTAINS(n.status().message(), "axis -4 is out of range for rank 3");
  auto d = normalize_axes(ints{2, -1}, 3);
  REQUIRE_FALSE(d.ok());
  CHECK_CONTAINS(d.status().message(), "axes [2,-1] repeat axis 2");
}

}  // namespace
