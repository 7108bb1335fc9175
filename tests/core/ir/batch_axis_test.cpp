// Batch-axis tracing (core/ir/batch_axis.hpp): where the batch lands in each output of the
// built-in models, and the ops and uses that mix batch entries, each refused with its node named.
#include "core/ir/batch_axis.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "hpf/models.hpp"
#include "hpf/reference.hpp"

using namespace hpf;
using ir::BatchAxis;

namespace {

// `g` specialised to `shapes`, then traced with the batch along input dimension `axes[k]`.
Expected<std::vector<BatchAxis>> trace(const Graph& g, const std::vector<std::vector<int64_t>>& shapes,
                                       const std::vector<int>& axes, int64_t batch) {
  auto s = specialize(g, shapes);
  if (!s.ok()) return s.status();
  return ir::trace_batch_axis(*s, axes, batch);
}

std::string refusal(const Expected<std::vector<BatchAxis>>& r) { return r.ok() ? "" : r.status().message(); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("batch axis: the built-in models compute each batch entry on its own") {
  SUBCASE("bert-tiny: ids [batch, seq]; hidden states and logits batch-first") {
    const Graph g = models::builtin("bert-tiny").value();
    const int64_t seq = concrete({g.value(g.inputs()[0]).shape[1]}).value()[0];
    auto r = trace(g, {{6, seq}}, {0}, 6);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(*r == std::vector<BatchAxis>{{0, 1}, {0, 1}});
  }
  SUBCASE("cnn-small: images [batch, 3, 32, 32]") {
    const Graph g = models::builtin("cnn-small").value();
    auto r = trace(g, {{3, 3, 32, 32}}, {0}, 3);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)[0] == BatchAxis{0, 1});
  }
  SUBCASE("lstm-lm: ids [seq, batch], the batch second") {
    const Graph g = models::builtin("lstm-lm").value();
    const int64_t seq = g.value(g.inputs()[0]).shape[0].value;
    auto r = trace(g, {{seq, 4}}, {1}, 4);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)[0] == BatchAxis{1, 1});
  }
}

TEST_CASE("batch axis: reshapes fold the batch into a dimension and back, transposes move it") {
  GraphBuilder b("fold");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 4, 6});
  auto flat = b.op1("Reshape", {x, b.constant_i64({-1, 6})});  // [B*4, 6]: axis 0, inner 4
  auto w = b.constant("w", *Tensor::from_f32({6, 6}, std::vector<float>(36, 0.5f)));
  auto y = b.matmul(flat, w);
  auto back = b.op1("Reshape", {y, b.constant_i64({-1, 2, 2, 6})});  // [B, 2, 2, 6]
  auto t = b.transpose(back, {3, 1, 0, 2});                         // batch at 2
  b.output(flat, "flat");
  b.output(t, "t");
  const Graph g = b.build().value();
  auto r = trace(g, {{5, 4, 6}}, {0}, 5);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == BatchAxis{0, 4});
  CHECK((*r)[1] == BatchAxis{2, 1});
  // PyTorch's attention: [S, B, E] -> [S*B, E] (the batch inside dimension 0, S outside it),
  // rows projected, then [S, B*H, E/H] and back to [S, B, E].
  GraphBuilder t2("torch");
  auto xs = t2.input("x", DType::F32, {4, Dim::sym("batch"), 6});
  auto rows = t2.op1("Reshape", {xs, t2.constant_i64({-1, 6})});
  auto proj = t2.matmul(rows, t2.constant("w", *Tensor::from_f32({6, 6}, std::vector<float>(36, 0.25f))));
  auto heads = t2.op1("Reshape", {proj, t2.constant_i64({4, -1, 3})});
  t2.output(rows, "rows");
  t2.output(heads, "heads");
  t2.output(t2.op1("Reshape", {heads, t2.constant_i64({4, -1, 6})}), "back");
  auto r2 = trace(t2.build().value(), {{4, 5, 6}}, {1}, 5);
  REQUIRE_MESSAGE(r2.ok(), r2.status().to_string());
  BatchAxis rows_axis{0, 1, 4}, heads_axis{1, 2, 1}, back_axis{1, 1, 1};
  CHECK((*r2)[0] == rows_axis);
  CHECK((*r2)[1] == heads_axis);
  CHECK((*r2)[2] == back_axis);
  // [4, 4, 6] read as [2, 48]: each row holds two entries, so no dimension is the batch.
  GraphBuilder c("split");
  auto x2 = c.input("x", DType::F32, {Dim::sym("batch"), 4, 6});
  c.output(c.op1("Reshape", {x2, c.constant_i64({2, -1})}, {}, "halves"));
  auto refused = trace(c.build().value(), {{4, 4, 6}}, {0}, 4);
  CHECK(has(refusal(refused), "node 'halves' (Reshape) splits the batch axis"));
}

TEST_CASE("batch axis: ops that mix batch entries are refused with the node named") {
  struct Case {
    const char* what;
    std::function<ValueId(GraphBuilder&, ValueId)> build;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"Softmax over the batch", [](GraphBuilder& b, ValueId x) { return b.op1("Softmax", {x}, {{"axis", int64_t{0}}}, "sm"); },
       "node 'sm' (Softmax) works along the batch axis"},
      {"a mean over everything",
       [](GraphBuilder& b, ValueId x) { return b.op1("ReduceMean", {x}, {{"keepdims", int64_t{0}}}, "mean"); },
       "node 'mean' (ReduceMean) reduces every axis"},
      {"x^T x sums over the batch",
       [](GraphBuilder& b, ValueId x) { return b.op1("MatMul", {b.transpose(x, {1, 0}), x}, {}, "gram"); },
       "node 'gram' (MatMul) sums over the batch axis"},
      {"a constant sized along the batch",
       [](GraphBuilder& b, ValueId x) {
         return b.op1("Add", {x, b.constant("per_row", *Tensor::from_f32({4, 8}, std::vector<float>(32, 1)))}, {}, "add");
       },
       "node 'add' (Add) broadcasts 'per_row', which is sized along the batch axis"},
      {"a slice of the batch",
       [](GraphBuilder& b, ValueId x) {
         return b.op1("Slice", {x, b.constant_i64({1}), b.constant_i64({3}), b.constant_i64({0})}, {}, "rows");
       },
       "node 'rows' (Slice) changes the batch axis (dimension 0)"},
      {"an op without a rule", [](GraphBuilder& b, ValueId x) { return b.op1("EyeLike", {x}, {}, "eye"); },
       "node 'eye' (EyeLike) has no batch-axis rule"},
      {"LayerNormalization over both axes",
       [](GraphBuilder& b, ValueId x) {
         return b.op1("LayerNormalization",
                      {x, b.constant("g", *Tensor::from_f32({8}, std::vector<float>(8, 1)))},
                      {{"axis", int64_t{0}}}, "ln");
       },
       "node 'ln' (LayerNormalization) works along the batch axis"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    GraphBuilder b("mix");
    auto x = b.input("x", DType::F32, {Dim::sym("batch"), 8});
    b.output(c.build(b, x));
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    CHECK(refusal(trace(*g, {{4, 8}}, {0}, 4)) == c.expect);
  }
  // The same ops along other axes are fine.
  GraphBuilder b("rows");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 8});
  auto s = b.softmax(x, -1);
  auto m = b.op1("ReduceMean", {s}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  b.output(m);
  auto r = trace(b.build().value(), {{4, 8}}, {0}, 4);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == BatchAxis{0, 1});
}

TEST_CASE("batch axis: a batch size used as data is refused, other sizes from Shape are not") {
  auto graph = [](int64_t index) {
    GraphBuilder b("shape_data");
    auto x = b.input("x", DType::F32, {Dim::sym("batch"), 8});
    auto size = b.op1("Gather", {b.op1("Shape", {x}), b.constant(Tensor::scalar_i64(index))});
    auto f = b.op1("Cast", {size}, {{"to", int64_t{1}}}, "as_float");
    auto flat = b.op1("Reshape", {x, b.op1("Concat", {b.constant_i64({-1}), b.op1("Unsqueeze", {size, b.constant_i64({0})})},
                                           {{"axis", int64_t{0}}})});
    b.output(b.div(x, f));
    b.output(flat);
    return b.build().value();
  };
  // Dimension 1 is a known 8: dividing by it is fine, and so is reshaping with the batch size.
  CHECK(ir::check_shape_values(graph(1), "batch").ok());
  const Status s = ir::check_shape_values(graph(0), "batch");
  CHECK(s.message() == "node 'as_float' (Cast) uses a size that may be the batch size as data");
  // A Range bounded by the batch size is data of the batch size too; one bounded by another
  // symbol ("seq") is not.
  auto ranged = [](int64_t index) {
    GraphBuilder b("range");
    auto x = b.input("x", DType::F32, {Dim::sym("batch"), Dim::sym("seq")});
    auto size = b.op1("Gather", {b.op1("Shape", {x}), b.constant(Tensor::scalar_i64(index))});
    auto r = b.op1("Range", {b.constant(Tensor::scalar_i64(0)), size, b.constant(Tensor::scalar_i64(1))});
    b.output(b.add(x, b.op1("Cast", {r}, {{"to", int64_t{1}}}, "positions")));
    return b.build().value();
  };
  CHECK(ir::check_shape_values(ranged(1), "batch").ok());
  CHECK(ir::check_shape_values(ranged(0), "batch").message() ==
        "node 'positions' (Cast) uses a size that may be the batch size as data");
}
