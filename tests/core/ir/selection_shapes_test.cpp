// Shape inference of the selection, scatter/gather, detection, text, Einsum and Det ops:
// data-dependent sizes stay unknown, constant inputs make them known, symbols pass through; and
// the Einsum equation parser they share with the kernel.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/einsum_equation.hpp"
#include "hpf/graph.hpp"
#include "hpf/tensor.hpp"
#include "ir_test_util.hpp"

namespace {

using hpf::Dim;
using hpf::DType;
using hpf::Graph;
using hpf::GraphBuilder;
using hpf::Shape;
using hpf::Tensor;
using hpf::ValueId;
using ints = std::vector<int64_t>;

const Dim kBatch = Dim::sym("batch");

std::string shape_text(const Graph& g, ValueId v) {
  const hpf::Value& val = g.value(v);
  return val.has_shape ? hpf::to_string(val.shape) : "none";
}

Graph build(GraphBuilder& b, const std::vector<ValueId>& outs) {
  for (ValueId o : outs) b.output(o);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

std::string build_error(GraphBuilder& b, const std::vector<ValueId>& outs) {
  for (ValueId o : outs) b.output(o);
  auto g = b.build();
  REQUIRE_FALSE_MESSAGE(g.ok(), "the graph built");
  return g.status().message();
}

Tensor bools(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v, DType::BOOL)).value();
}

}  // namespace

TEST_CASE("shapes: TopK knows k when it is an attribute or a constant") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {kBatch, 10});
  auto k_in = b.input("k", DType::I64, {1});
  auto c = b.op("TopK", {x, b.constant_i64({3})}, {}, 2);
  auto r = b.op("TopK", {x, k_in}, {{"axis", int64_t{0}}}, 2);
  auto a = b.op("TopK", {x}, {{"k", int64_t{4}}}, 2);
  Graph g = build(b, {c[0], c[1], r[0], a[0]});
  CHECK(shape_text(g, c[0]) == "[batch,3]");
  CHECK(g.value(c[1]).dtype == DType::I64);
  CHECK(shape_text(g, c[1]) == "[batch,3]");
  CHECK(shape_text(g, r[0]) == "[?,10]");
  CHECK(shape_text(g, a[0]) == "[batch,4]");

  GraphBuilder e("g");
  auto y = e.op("TopK", {e.input("x", DType::F32, {2, 5}), e.constant_i64({6})}, {}, 2);
  CHECK_CONTAINS(build_error(e, {y[0]}), "k 6 is outside [0, 5]");
}

TEST_CASE(
    "shapes: Unique, Compress, NonZero and NonMaxSuppression leave data-dependent sizes unknown") {
  GraphBuilder b("g");
  auto x = b.input("x", DType::F32, {2, 3});
  auto u = b.op("Unique", {x}, {}, 4);
  auto ua = b.op("Unique", {x}, {{"axis", int64_t{1}}}, 3);
  auto cond = b.input("cond", DType::BOOL, {3});
  auto comp = b.op1("Compress", {x, cond}, {{"axis", int64_t{1}}});
  auto comp_const =
      b.op1("Compress", {x, b.constant("cc", bools({2}, {1, 1}))}, {{"axis", int64_t{0}}});
  auto flat = b.op1("Compress", {x, cond});
  auto nz = b.op1("NonZero", {x});
  auto boxes = b.input("boxes", DType::F32, {1, 5, 4});
  auto scores = b.input("scores", DType::F32, {1, 2, 5});
  auto nms = b.op1("NonMaxSuppression", {boxes, scores});
  Graph g = build(b, {u[0], u[1], u[2], u[3], ua[0], ua[2], comp, comp_const, flat, nz, nms});
  CHECK(shape_text(g, u[0]) == "[?]");
  CHECK(shape_text(g, u[2]) == "[6]");
  CHECK(g.value(u[3]).dtype == DType::I64);
  CHECK(shape_text(g, ua[0]) == "[2,?]");
  CHECK(shape_text(g, ua[2]) == "[3]");
  CHECK(shape_text(g, comp) == "[2,?]");
  CHECK(shape_text(g, comp_const) == "[2,3]");
  CHECK(shape_text(g, flat) == "[?]");
  CHECK(shape_text(g, nz) == "[2,?]");
  CHECK(shape_text(g, nms) == "[?,3]");
}

TEST_CASE("shapes: scatter and gather ops") {
  GraphBuilder b("g");
  auto data = b.input("data", DType::F32, {kBatch, 4, 5});
  auto idx = b.input("idx", DType::I64, {3, 2});
  auto g_nd = b.op1("GatherND", {data, idx});
  auto upd = b.input("upd", DType::F32, {3, 5});
  auto s_nd = b.op1("ScatterND", {data, idx, upd}, {{"reduction", std::string("add")}});
  auto bidx = b.input("bidx", DType::I64, {kBatch, 7, 1});
  auto g_b = b.op1("GatherND", {data, bidx}, {{"batch_dims", int64_t{1}}});
  Graph g = build(b, {g_nd, s_nd, g_b});
  CHECK(shape_text(g, g_nd) == "[3,5]");
  CHECK(shape_text(g, s_nd) == "[batch,4,5]");
  CHECK(shape_text(g, g_b) == "[batch,7,5]");

  GraphBuilder e("g");
  auto d = e.input("d", DType::F32, {4, 5});
  auto y =
      e.op1("ScatterND", {d, e.input("i", DType::I64, {2, 1}), e.input("u", DType::F32, {2, 4})});
  CHECK_CONTAINS(build_error(e, {y}), "updates [2,4] must have shape [2,5]");
  GraphBuilder f("g");
  auto z = f.op1("ScatterElements", {f.input("d", DType::F32, {4}), f.input("i", DType::F32, {2}),
                                     f.input("u", DType::F32, {2})});
  CHECK_CONTAINS(build_error(f, {z}), "indices must be integers, is f32");
}

TEST_CASE(
    "shapes: EyeLike, MaxUnpool, RoiAlign, TfIdfVectorizer, Einsum, Det, BatchNormalization "
    "training") {
  GraphBuilder b("g");
  auto eye = b.op1("EyeLike", {b.input("e", DType::I32, {3, 4})}, {{"dtype", int64_t{1}}});
  auto x = b.input("x", DType::F32, {kBatch, 2, 3, 3});
  auto unpool =
      b.op1("MaxUnpool", {x, b.input("i", DType::I64, {kBatch, 2, 3, 3})},
            {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}, {"pads", ints{0, 1, 0, 1}}});
  auto roi =
      b.op1("RoiAlign", {x, b.input("rois", DType::F32, {6, 4}), b.input("bi", DType::I64, {6})},
            {{"output_height", int64_t{2}}, {"output_width", int64_t{5}}});
  auto tf = b.op1("TfIdfVectorizer", {b.input("tok", DType::I64, {kBatch, 9})},
                  {{"min_gram_length", int64_t{1}},
                   {"max_gram_length", int64_t{1}},
                   {"max_skip_count", int64_t{0}},
                   {"mode", std::string("TF")},
                   {"ngram_counts", ints{0}},
                   {"ngram_indexes", ints{4, 1}},
                   {"pool_int64s", ints{7, 8}}});
  auto es =
      b.op1("Einsum", {b.input("a", DType::F32, {kBatch, 2, 3}), b.input("b", DType::F32, {3, 4})},
            {{"equation", std::string("...ij,jk->...ki")}});
  auto det = b.op1("Det", {b.input("m", DType::F32, {5, 3, 3})});
  auto bn = b.op("BatchNormalization",
                 {x, b.input("s", DType::F32, {2}), b.input("bb", DType::F32, {2}),
                  b.input("mean", DType::F32, {2}), b.input("var", DType::F32, {2})},
                 {{"training_mode", int64_t{1}}}, 3);
  Graph g = build(b, {eye, unpool, roi, tf, es, det, bn[0], bn[1], bn[2]});
  CHECK(g.value(eye).dtype == DType::F32);
  CHECK(shape_text(g, eye) == "[3,4]");
  CHECK(shape_text(g, unpool) == "[batch,2,6,4]");
  CHECK(shape_text(g, roi) == "[6,2,2,5]");
  CHECK(g.value(tf).dtype == DType::F32);
  CHECK(shape_text(g, tf) == "[batch,5]");
  CHECK(shape_text(g, es) == "[batch,4,2]");
  CHECK(shape_text(g, det) == "[5]");
  CHECK(shape_text(g, bn[0]) == "[batch,2,3,3]");
  CHECK(shape_text(g, bn[2]) == "[2]");
}

TEST_CASE("einsum equations: labels, ellipses, implicit outputs, errors") {
  using hpf::ir::parse_einsum;
  auto e = parse_einsum("bij,bjk->bik", ints{3, 3});
  REQUIRE(e.ok());
  CHECK(e->inputs == std::vector<std::vector<int>>{{0, 1, 2}, {0, 2, 3}});
  CHECK(e->output == std::vector<int>{0, 1, 3});
  // Ellipses are right-aligned: a rank-4 and a rank-3 operand share the last ellipsis label.
  auto b = parse_einsum("...ij,...jk", ints{4, 3});
  REQUIRE(b.ok());
  CHECK(b->ellipsis_rank == 2);
  CHECK(b->inputs == std::vector<std::vector<int>>{{0, 1, 2, 3}, {1, 3, 4}});
  CHECK(b->output == std::vector<int>{0, 1, 2, 4});
  // Implicit mode sorts the single-use letters: "ba" -> "ab".
  auto t = parse_einsum("ba", ints{2});
  REQUIRE(t.ok());
  CHECK(t->output == std::vector<int>{1, 0});
  auto sizes =
      hpf::ir::einsum_label_sizes(*b, std::vector<std::vector<int64_t>>{{2, 1, 3, 4}, {5, 4, 6}});
  REQUIRE(sizes.ok());
  CHECK(*sizes == ints{2, 5, 3, 4, 6});
  CHECK_CONTAINS(parse_einsum("ij,jk", ints{2}).status().message(),
                 "names 2 operands, the node has 1");
  CHECK_CONTAINS(parse_einsum("i.j", ints{2}).status().message(), "stray '.'");
  CHECK_CONTAINS(parse_einsum("i1", ints{2}).status().message(), "character '1'");
  CHECK_CONTAINS(parse_einsum("ij->ii", ints{2}).status().message(),
                 "output label 'i' appears twice");
  auto bad =
      hpf::ir::einsum_label_sizes(*e, std::vector<std::vector<int64_t>>{{2, 3, 4}, {2, 5, 6}});
  CHECK_CONTAINS(bad.status().message(),
                 "operand 1 dimension 1 has size 5, another use of the same label has 4");
}
