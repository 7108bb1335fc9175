// Reference interpreter: data movement and shape ops (Gather, Reshape, Transpose, Flatten,
// Squeeze, Unsqueeze, Concat, Split, Slice, Expand, Shape, ConstantOfShape, Range, Identity), on
// F32 and on I64 data (values beyond 2^53 check that integers are moved, never converted).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // not representable in double
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Expected<std::vector<Tensor>> run_n(const std::string& op, std::vector<Arg> args, Attributes attrs,
                                    int n) {
  return run_op(op, std::move(args), std::move(attrs), n);
}

std::vector<float> iota(int64_t n, float start = 0) {
  std::vector<float> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + float(k);
  return v;
}
AttrValue ints(std::vector<int64_t> v) { return AttrValue(std::move(v)); }

// Transpose of a row-major tensor by `perm`, written out with explicit index arithmetic.
template <typename T>
std::vector<T> transpose_ref(const std::vector<T>& x, const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& perm) {
  const size_t r = shape.size();
  std::vector<int64_t> out_shape(r), in_strides(r, 1);
  for (size_t d = 0; d < r; ++d) out_shape[d] = shape[perm[d]];
  for (size_t d = r - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * shape[d + 1];
  std::vector<T> y(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    // Decompose the output index k, then sum the input offset.
    int64_t rem = static_cast<int64_t>(k), src = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % out_shape[d];
      rem /= out_shape[d];
      src += idx * in_strides[perm[d]];
    }
    y[k] = x[src];
  }
  return y;
}

}  // namespace

// ---- Gather -----------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Gather") {
  const Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  SUBCASE("axis 0") {
    check_close(run1("Gather", {in(data), in(i64({2}, {2, 0}))}), {2, 2}, {5, 6, 1, 2});
    check_close(run1("Gather", {in(data), cst(i64({2, 2}, {0, 1, 1, 2}))}), {2, 2, 2},
                {1, 2, 3, 4, 3, 4, 5, 6});
  }
  SUBCASE("axis 1 with [2,2] indices -> [3,2,2]") {
    auto y = run1("Gather", {in(data), in(i64({2, 2}, {1, 0, 0, 0}))}, {{"axis", int64_t{1}}});
    check_close(y, {3, 2, 2}, {2, 1, 1, 1, 4, 3, 3, 3, 6, 5, 5, 5});
    auto z = run1("Gather", {in(data), in(i64({2, 2}, {1, 0, 0, 0}))}, {{"axis", int64_t{-1}}});
    check_close(z, {3, 2, 2}, {2, 1, 1, 1, 4, 3, 3, 3, 6, 5, 5, 5});
  }
  SUBCASE("negative indices count from the end") {
    check_close(run1("Gather", {in(data), in(i64({3}, {-1, -3, 1}))}), {3, 2}, {5, 6, 1, 2, 3, 4});
  }
  SUBCASE("a scalar index removes the axis") {
    check_close(run1("Gather", {in(data), in(i64({}, {1}))}), {2}, {3, 4});
    check_close(run1("Gather", {in(data), in(i64({}, {0}))}, {{"axis", int64_t{1}}}), {3},
                {1, 3, 5});
  }
  SUBCASE("empty indices") {
    check_close(run1("Gather", {in(data), in(i64({0}, {}))}), {0, 2}, {});
  }
  SUBCASE("I32 indices") {
    auto idx = std::move(Tensor::from_i64({2}, std::vector<int64_t>{1, -1}, DType::I32)).value();
    check_close(run1("Gather", {in(data), in(idx)}), {2, 2}, {3, 4, 5, 6});
  }
  SUBCASE("I64 data (an embedding table of token ids)") {
    auto y =
        run1("Gather", {in(i64({3, 2}, {kBig, 1, 2, kMin, kMax, 3})), in(i64({3}, {2, 0, -2}))});
    CHECK(y.dtype() == DType::I64);
    check_ints(y, {3, 2}, {kMax, 3, kBig, 1, 2, kMin});
  }
}

TEST_CASE("ref shape ops: Gather index out of range names the node, the index and the axis") {
  const Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  check_error(run_op("Gather", {in(data), in(i64({2}, {0, 3}))}),
              {"'node'", "Gather", "index 3", "axis 0", "size 3"});
  check_error(run_op("Gather", {in(data), in(i64({1}, {-4}))}), {"'node'", "index -4"});
  check_error(run_op("Gather", {in(data), in(i64({1}, {2}))}, {{"axis", int64_t{1}}}),
              {"'node'", "index 2", "axis 1", "size 2"});
  check_error(run_op("Gather", {in(data), in(i64({1}, {0}))}, {{"axis", int64_t{2}}}),
              {"'node'", "axis 2"});
}

// ---- Reshape ----------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Reshape with 0, -1 and allowzero") {
  const auto v = iota(24);
  const Tensor x = f32({2, 3, 4}, v);
  check_close(run1("Reshape", {in(x), cst(i64({2}, {0, -1}))}), {2, 12}, v);
  check_close(run1("Reshape", {in(x), cst(i64({1}, {-1}))}), {24}, v);
  check_close(run1("Reshape", {in(x), cst(i64({3}, {4, -1, 2}))}), {4, 3, 2}, v);
  check_close(run1("Reshape", {in(x), cst(i64({4}, {0, 0, 2, 2}))}), {2, 3, 2, 2}, v);
  // A runtime shape input: the output shape is only known when the node runs.
  check_close(run1("Reshape", {in(x), in(i64({2}, {6, 4}))}), {6, 4}, v);
  // Scalar <-> [1].
  check_close(run1("Reshape", {in(f32({1}, {5})), cst(i64({0}, {}))}), {}, {5});
  SUBCASE("allowzero = 1: 0 is a real size") {
    check_close(
        run1("Reshape", {in(f32({0, 3}, {})), cst(i64({2}, {3, 0}))}, {{"allowzero", int64_t{1}}}),
        {3, 0}, {});
  }
  SUBCASE("allowzero = 0: 0 copies the input dimension, so [0,3] -> [3,0] means [3,3]") {
    check_error(run_op("Reshape", {in(f32({0, 3}, {})), cst(i64({2}, {3, 0}))}),
                {"'node'", "Reshape", "[3,0]"});
  }
  SUBCASE("errors") {
    check_error(run_op("Reshape", {in(x), cst(i64({2}, {5, -1}))}),
                {"'node'", "Reshape", "[5,-1]"});
    check_error(run_op("Reshape", {in(x), cst(i64({2}, {-1, -1}))}),
                {"'node'", "more than one -1"});
    check_error(run_op("Reshape", {in(x), in(i64({2}, {7, 7}))}), {"'node'", "Reshape", "[7,7]"});
  }
  SUBCASE("I64 data") {
    auto y = run1("Reshape", {in(i64({2, 2}, {kBig, 2, 3, kMin})), cst(i64({1}, {-1}))});
    CHECK(y.dtype() == DType::I64);
    check_ints(y, {4}, {kBig, 2, 3, kMin});
  }
}

// ---- Transpose --------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Transpose") {
  SUBCASE("default perm reverses the axes") {
    const auto v = iota(24);
    auto y = run1("Transpose", {in(f32({2, 3, 4}, v))});
    check_close(y, {4, 3, 2}, transpose_ref(v, {2, 3, 4}, {2, 1, 0}));
    // y[k][j][i] = x[i][j][k]: y[1][2][0] = x[0][2][1] = 9.
    CHECK(y.to_f32()[(1 * 3 + 2) * 2 + 0] == 9);
  }
  SUBCASE("2-D") {
    check_close(run1("Transpose", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6}))}), {3, 2},
                {1, 4, 2, 5, 3, 6});
  }
  SUBCASE("explicit perm") {
    const auto v = iota(24);
    auto y = run1("Transpose", {in(f32({2, 3, 4}, v))}, {{"perm", ints({1, 0, 2})}});
    check_close(y, {3, 2, 4}, transpose_ref(v, {2, 3, 4}, {1, 0, 2}));
    auto z = run1("Transpose", {in(f32({2, 3, 4}, v))}, {{"perm", ints({0, 1, 2})}});
    check_close(z, {2, 3, 4}, v);
  }
  SUBCASE("rank 4: NCHW -> NHWC and back") {
    const auto v = iota(2 * 3 * 2 * 5);
    auto y = run1("Transpose", {in(f32({2, 3, 2, 5}, v))}, {{"perm", ints({0, 2, 3, 1})}});
    const auto want = transpose_ref(v, {2, 3, 2, 5}, {0, 2, 3, 1});
    check_close(y, {2, 2, 5, 3}, want);
    // NHWC[n][h][w][c] = NCHW[n][c][h][w]: [1][1][4][2] = ((1*3 + 2)*2 + 1)*5 + 4 = 59.
    CHECK(y.to_f32()[((1 * 2 + 1) * 5 + 4) * 3 + 2] == 59);
    auto back = run1("Transpose", {in(y)}, {{"perm", ints({0, 3, 1, 2})}});
    check_close(back, {2, 3, 2, 5}, v);
  }
  SUBCASE("zero-size and size-1 dimensions") {
    check_close(run1("Transpose", {in(f32({2, 0, 3}, {}))}, {{"perm", ints({2, 0, 1})}}), {3, 2, 0},
                {});
    check_close(run1("Transpose", {in(f32({1, 3, 1}, {1, 2, 3}))}), {1, 3, 1}, {1, 2, 3});
  }
  SUBCASE("I64 data") {
    auto y = run1("Transpose", {in(i64({2, 2}, {kBig, 1, kMin, kMax}))});
    check_ints(y, {2, 2}, {kBig, kMin, 1, kMax});
  }
  SUBCASE("a perm of the wrong length is an error") {
    check_error(run_op("Transpose", {in(f32({2, 3}, iota(6)))}, {{"perm", ints({0, 1, 2})}}),
                {"'node'", "Transpose", "perm"});
  }
}

// ---- Flatten ----------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Flatten") {
  const auto v = iota(24);
  const Tensor x = f32({2, 3, 4}, v);
  check_close(run1("Flatten", {in(x)}, {{"axis", int64_t{0}}}), {1, 24}, v);
  check_close(run1("Flatten", {in(x)}), {2, 12}, v);  // default axis 1
  check_close(run1("Flatten", {in(x)}, {{"axis", int64_t{2}}}), {6, 4}, v);
  check_close(run1("Flatten", {in(x)}, {{"axis", int64_t{3}}}), {24, 1}, v);  // axis = rank
  check_close(run1("Flatten", {in(x)}, {{"axis", int64_t{-1}}}), {6, 4}, v);
  check_close(run1("Flatten", {in(x)}, {{"axis", int64_t{-3}}}), {1, 24}, v);
  check_close(run1("Flatten", {in(f32({2, 0, 3}, {}))}), {2, 0}, {});
  check_ints(run1("Flatten", {in(i64({2, 1, 2}, {kBig, 1, 2, kMin}))}, {{"axis", int64_t{2}}}),
             {2, 2}, {kBig, 1, 2, kMin});
  check_error(run_op("Flatten", {in(x)}, {{"axis", int64_t{4}}}), {"'node'", "Flatten", "axis 4"});
}

// ---- Squeeze / Unsqueeze ----------------------------------------------------------------------

TEST_CASE("ref shape ops: Squeeze") {
  const Tensor x = f32({1, 3, 1, 2}, iota(6));
  check_close(run1("Squeeze", {in(x)}, {{"axes", ints({0, 2})}}), {3, 2},
              iota(6));  // attribute (opset < 13)
  check_close(run1("Squeeze", {in(x), cst(i64({1}, {-2}))}), {1, 3, 2},
              iota(6));                                                           // input, negative
  check_close(run1("Squeeze", {in(x), cst(i64({2}, {2, 0}))}), {3, 2}, iota(6));  // unsorted
  check_close(run1("Squeeze", {in(x)}), {3, 2}, iota(6));                         // all size-1 axes
  check_close(run1("Squeeze", {in(f32({1, 1}, {7}))}), {}, {7});  // down to a scalar
  check_ints(run1("Squeeze", {in(i64({1, 2}, {kBig, kMin})), cst(i64({1}, {0}))}), {2},
             {kBig, kMin});
  check_error(run_op("Squeeze", {in(x), cst(i64({1}, {1}))}),
              {"'node'", "Squeeze", "axis 1", "size 3"});
}

TEST_CASE("ref shape ops: Unsqueeze") {
  const Tensor x = f32({2, 3}, iota(6));
  check_close(run1("Unsqueeze", {in(x)}, {{"axes", ints({0, 3})}}), {1, 2, 3, 1},
              iota(6));  // attribute
  check_close(run1("Unsqueeze", {in(x), cst(i64({2}, {3, 0}))}), {1, 2, 3, 1},
              iota(6));  // input, unsorted
  check_close(run1("Unsqueeze", {in(x), cst(i64({1}, {1}))}), {2, 1, 3}, iota(6));
  check_close(run1("Unsqueeze", {in(x), cst(i64({1}, {-1}))}), {2, 3, 1},
              iota(6));  // -1 of the output rank
  check_close(run1("Unsqueeze", {in(x), cst(i64({2}, {-1, -4}))}), {1, 2, 3, 1}, iota(6));
  check_close(run1("Unsqueeze", {in(f32({}, {5})), cst(i64({1}, {0}))}), {1}, {5});
  check_ints(run1("Unsqueeze", {in(i64({2}, {kBig, kMax})), cst(i64({1}, {0}))}), {1, 2},
             {kBig, kMax});
  check_error(run_op("Unsqueeze", {in(x), cst(i64({1}, {3}))}), {"'node'", "Unsqueeze", "axis 3"});
}

// ---- Concat -----------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Concat") {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6}), c = f32({1, 2}, {7, 8});
  check_close(run1("Concat", {in(a), in(b)}, {{"axis", int64_t{1}}}), {2, 3}, {1, 2, 5, 3, 4, 6});
  check_close(run1("Concat", {in(a), in(b)}, {{"axis", int64_t{-1}}}), {2, 3}, {1, 2, 5, 3, 4, 6});
  check_close(run1("Concat", {in(c), in(a)}, {{"axis", int64_t{0}}}), {3, 2}, {7, 8, 1, 2, 3, 4});
  check_close(run1("Concat", {in(a), cst(c), in(c)}, {{"axis", int64_t{-2}}}), {4, 2},
              {1, 2, 3, 4, 7, 8, 7, 8});
  check_close(run1("Concat", {in(a)}, {{"axis", int64_t{0}}}), {2, 2}, {1, 2, 3, 4});
  SUBCASE("zero-size inputs") {
    check_close(
        run1("Concat", {in(f32({2, 0}, {})), in(a), in(f32({2, 0}, {}))}, {{"axis", int64_t{1}}}),
        {2, 2}, {1, 2, 3, 4});
    check_close(run1("Concat", {in(f32({0, 2}, {})), in(c)}, {{"axis", int64_t{0}}}), {1, 2},
                {7, 8});
    check_close(run1("Concat", {in(f32({0, 2}, {})), in(f32({0, 3}, {}))}, {{"axis", int64_t{1}}}),
                {0, 5}, {});
  }
  SUBCASE("1-D and I64 (shape building)") {
    auto y = run1("Concat", {in(i64({2}, {kBig, -1})), cst(i64({1}, {kMin})), in(i64({0}, {}))},
                  {{"axis", int64_t{0}}});
    CHECK(y.dtype() == DType::I64);
    check_ints(y, {3}, {kBig, -1, kMin});
  }
  SUBCASE("mismatched shapes are an error") {
    check_error(run_op("Concat", {in(a), in(f32({3, 1}, {1, 2, 3}))}, {{"axis", int64_t{1}}}),
                {"'node'", "Concat", "[3,1]", "[2,2]"});
  }
}

// ---- Split ------------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Split") {
  const auto v = iota(6);
  const Tensor x = f32({6}, v);
  SUBCASE("equal parts by the number of outputs") {
    auto r = run_n("Split", {in(x)}, {}, 3);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    REQUIRE(r->size() == 3);
    check_close((*r)[0], {2}, {0, 1});
    check_close((*r)[1], {2}, {2, 3});
    check_close((*r)[2], {2}, {4, 5});
    auto r2 = run_n("Split", {in(x)}, {{"num_outputs", int64_t{2}}}, 2);
    REQUIRE(r2.ok());
    check_close((*r2)[0], {3}, {0, 1, 2});
    check_close((*r2)[1], {3}, {3, 4, 5});
  }
  SUBCASE("explicit sizes as an input") {
    auto r = run_n("Split", {in(x), cst(i64({3}, {1, 2, 3}))}, {}, 3);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    check_close((*r)[0], {1}, {0});
    check_close((*r)[1], {2}, {1, 2});
    check_close((*r)[2], {3}, {3, 4, 5});
  }
  SUBCASE("explicit sizes as an attribute (opset < 13), with a zero size") {
    auto r = run_n("Split", {in(x)}, {{"split", ints({4, 0, 2})}}, 3);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    check_close((*r)[0], {4}, {0, 1, 2, 3});
    check_close((*r)[1], {0}, {});
    check_close((*r)[2], {2}, {4, 5});
  }
  SUBCASE("uneven num_outputs: the last chunk is smaller (opset 18)") {
    const Tensor x7 = f32({7}, iota(7));
    auto r = run_n("Split", {in(x7)}, {{"num_outputs", int64_t{3}}}, 3);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    check_close((*r)[0], {3}, {0, 1, 2});
    check_close((*r)[1], {3}, {3, 4, 5});
    check_close((*r)[2], {1}, {6});
    auto r4 = run_n("Split", {in(x7)}, {{"num_outputs", int64_t{4}}}, 4);
    REQUIRE_MESSAGE(r4.ok(), r4.status().to_string());
    check_close((*r4)[0], {2}, {0, 1});
    check_close((*r4)[2], {2}, {4, 5});
    check_close((*r4)[3], {1}, {6});
  }
  SUBCASE("2-D along axis 1 and axis -1, I64") {
    auto r =
        run_n("Split", {in(i64({2, 4}, {kBig, 1, 2, 3, 4, 5, 6, kMin})), cst(i64({2}, {1, 3}))},
              {{"axis", int64_t{-1}}}, 2);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    check_ints((*r)[0], {2, 1}, {kBig, 4});
    check_ints((*r)[1], {2, 3}, {1, 2, 3, 5, 6, kMin});
    auto f = run_n("Split", {in(f32({2, 4}, iota(8)))}, {{"axis", int64_t{1}}}, 2);
    REQUIRE(f.ok());
    check_close((*f)[0], {2, 2}, {0, 1, 4, 5});
    check_close((*f)[1], {2, 2}, {2, 3, 6, 7});
  }
  SUBCASE("sizes that do not add up are an error") {
    check_error(run_n("Split", {in(x), cst(i64({2}, {2, 3}))}, {}, 2),
                {"'node'", "Split", "[2,3]", "6"});
    check_error(run_n("Split", {in(x), in(i64({2}, {2, 3}))}, {}, 2),
                {"'node'", "Split", "[2,3]", "6"});
  }
}

// ---- Slice ------------------------------------------------------------------------------------

namespace {
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
             std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {}) {
  const auto n = static_cast<int64_t>(starts.size());
  std::vector<Arg> args = {in(x), cst(i64({n}, starts)), cst(i64({n}, ends))};
  if (!axes.empty() || !steps.empty()) args.push_back(axes.empty() ? none() : cst(i64({n}, axes)));
  if (!steps.empty()) args.push_back(cst(i64({n}, steps)));
  return run1("Slice", std::move(args));
}
}  // namespace

TEST_CASE("ref shape ops: Slice 1-D") {
  const Tensor x = f32({5}, {0, 1, 2, 3, 4});
  check_close(slice(x, {1}, {3}), {2}, {1, 2});
  check_close(slice(x, {-3}, {-1}), {2}, {2, 3});            // negative starts/ends
  check_close(slice(x, {1}, {1000}), {4}, {1, 2, 3, 4});     // end clamped
  check_close(slice(x, {-100}, {2}), {2}, {0, 1});           // start clamped
  check_close(slice(x, {0}, {kMax}), {5}, {0, 1, 2, 3, 4});  // INT64_MAX = to the end
  check_close(slice(x, {0}, {5}, {}, {2}), {3}, {0, 2, 4});  // step 2
  check_close(slice(x, {1}, {5}, {}, {3}), {2}, {1, 4});
  check_close(slice(x, {-1}, {kMin}, {}, {-1}), {5}, {4, 3, 2, 1, 0});  // full reverse
  check_close(slice(x, {4}, {0}, {}, {-2}), {2}, {4, 2});               // end excluded
  check_close(slice(x, {100}, {-100}, {}, {-2}), {3}, {4, 2, 0});  // both clamped, negative step
  check_close(slice(x, {-2}, {-5}, {0}, {-1}), {3}, {3, 2, 1});
  // Empty results.
  check_close(slice(x, {3}, {1}), {0}, {});
  check_close(slice(x, {1}, {3}, {}, {-1}), {0}, {});
  check_close(slice(x, {5}, {10}), {0}, {});
  check_close(slice(f32({0}, {}), {0}, {3}), {0}, {});
}

TEST_CASE("ref shape ops: Slice N-D with axes") {
  const auto v = iota(12);
  const Tensor x = f32({3, 4}, v);                                     // rows 0-3, 4-7, 8-11
  check_close(slice(x, {1}, {3}, {1}), {3, 2}, {1, 2, 5, 6, 9, 10});   // axes subset
  check_close(slice(x, {1}, {3}, {-1}), {3, 2}, {1, 2, 5, 6, 9, 10});  // negative axis
  check_close(slice(x, {-1}, {kMin}, {-2}, {-1}), {3, 4},
              {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3});  // rows reversed
  check_close(slice(x, {0, 3}, {3, 0}, {0, 1}, {2, -2}), {2, 2}, {3, 1, 11, 9});
  check_close(slice(x, {3, 1}, {0, 3}, {1, 0}, {-1, 1}), {2, 3},
              {7, 6, 5, 11, 10, 9});                 // axes out of order
  check_close(slice(x, {0}, {0}, {0}), {0, 4}, {});  // empty rows
  // Without axes, starts/ends apply to the leading axes.
  check_close(slice(x, {1, 1}, {2, 3}), {1, 2}, {5, 6});
  // Runtime starts/ends inputs: the shape is found when the node runs.
  auto y = run1("Slice", {in(x), in(i64({1}, {-2})), in(i64({1}, {kMax})), cst(i64({1}, {1}))});
  check_close(y, {3, 2}, {2, 3, 6, 7, 10, 11});
}

TEST_CASE("ref shape ops: Slice with attributes (opset < 10) and on I64") {
  const Tensor x = f32({3, 4}, iota(12));
  auto y = run1("Slice", {in(x)},
                {{"starts", ints({1, -3})}, {"ends", ints({1000, -1})}, {"axes", ints({0, 1})}});
  check_close(y, {2, 2}, {5, 6, 9, 10});
  auto z = run1("Slice", {in(x)}, {{"starts", ints({2})}, {"ends", ints({3})}});
  check_close(z, {1, 4}, {8, 9, 10, 11});
  check_ints(slice(i64({4}, {kBig, 1, kMin, kMax}), {-1}, {kMin}, {}, {-2}), {2}, {kMax, 1});
}

TEST_CASE("ref shape ops: Slice errors") {
  const Tensor x = f32({3, 4}, iota(12));
  check_error(
      run_op("Slice", {in(x), cst(i64({1}, {0})), cst(i64({1}, {2})), none(), cst(i64({1}, {0}))}),
      {"'node'", "Slice", "steps"});
  check_error(run_op("Slice", {in(x), cst(i64({1}, {0})), cst(i64({1}, {2})), cst(i64({1}, {2}))}),
              {"'node'", "Slice", "axis 2"});
  check_error(run_op("Slice", {in(x), cst(i64({2}, {0, 0})), cst(i64({1}, {2}))}),
              {"'node'", "Slice", "starts"});
}

// ---- Expand -----------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Expand") {
  // [3,1] to [2,1,4] -> [2,3,4] (bidirectional broadcast).
  auto y = run1("Expand", {in(f32({3, 1}, {1, 2, 3})), cst(i64({3}, {2, 1, 4}))});
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(float(j + 1));
  check_close(y, {2, 3, 4}, want);
  // A shorter target keeps the input's shape.
  check_close(run1("Expand", {in(f32({2, 3}, iota(6))), cst(i64({1}, {1}))}), {2, 3}, iota(6));
  check_close(run1("Expand", {in(f32({2, 3}, iota(6))), cst(i64({2}, {1, 3}))}), {2, 3}, iota(6));
  // A scalar to [2,2], and a runtime shape input.
  check_close(run1("Expand", {in(f32({}, {7})), in(i64({2}, {2, 2}))}), {2, 2}, {7, 7, 7, 7});
  // Expanding to a zero-size dimension.
  check_close(run1("Expand", {in(f32({1, 3}, {1, 2, 3})), cst(i64({2}, {0, 3}))}), {0, 3}, {});
  check_ints(run1("Expand", {in(i64({2, 1}, {kBig, kMin})), cst(i64({2}, {2, 2}))}), {2, 2},
             {kBig, kBig, kMin, kMin});
  check_error(run_op("Expand", {in(f32({3}, {1, 2, 3})), cst(i64({1}, {2}))}),
              {"'node'", "Expand", "[3]", "[2]"});
}

// ---- Shape, ConstantOfShape, Range ------------------------------------------------------------

TEST_CASE("ref shape ops: Shape with start and end") {
  const Tensor x = f32({2, 3, 4, 5}, std::vector<float>(120, 0.0f));
  auto y = run1("Shape", {in(x)});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {4}, {2, 3, 4, 5});
  check_ints(run1("Shape", {in(x)}, {{"start", int64_t{1}}}), {3}, {3, 4, 5});
  check_ints(run1("Shape", {in(x)}, {{"end", int64_t{-1}}}), {3}, {2, 3, 4});
  check_ints(run1("Shape", {in(x)}, {{"start", int64_t{-2}}}), {2}, {4, 5});
  check_ints(run1("Shape", {in(x)}, {{"start", int64_t{1}}, {"end", int64_t{-1}}}), {2}, {3, 4});
  check_ints(run1("Shape", {in(x)}, {{"start", int64_t{-10}}, {"end", int64_t{10}}}), {4},
             {2, 3, 4, 5});  // clamped
  check_ints(run1("Shape", {in(x)}, {{"start", int64_t{3}}, {"end", int64_t{1}}}), {0}, {});
  check_ints(run1("Shape", {in(f32({0, 3}, {}))}), {2}, {0, 3});
  check_ints(run1("Shape", {in(f32({}, {1}))}), {0}, {});
  check_ints(run1("Shape", {in(i64({2}, {1, 2}))}), {1}, {2});
}

TEST_CASE("ref shape ops: ConstantOfShape") {
  auto y = run1("ConstantOfShape", {cst(i64({2}, {2, 3}))});
  CHECK(y.dtype() == DType::F32);
  check_close(y, {2, 3}, std::vector<float>(6, 0.0f));
  auto z = run1("ConstantOfShape", {in(i64({2}, {3, 1}))}, {{"value", i64({1}, {kBig})}});
  CHECK(z.dtype() == DType::I64);
  check_ints(z, {3, 1}, {kBig, kBig, kBig});
  check_close(run1("ConstantOfShape", {cst(i64({1}, {2}))}, {{"value", f32({1}, {-1.5f})}}), {2},
              {-1.5f, -1.5f});
  // An empty shape gives a scalar; a zero dimension gives an empty tensor.
  check_close(run1("ConstantOfShape", {cst(i64({0}, {}))}, {{"value", f32({1}, {4})}}), {}, {4});
  check_close(run1("ConstantOfShape", {cst(i64({2}, {2, 0}))}), {2, 0}, {});
  check_error(run_op("ConstantOfShape", {in(i64({2}, {2, -1}))}),
              {"'node'", "ConstantOfShape", "negative"});
}

TEST_CASE("ref shape ops: Range") {
  auto y = run1("Range", {cst(f32({}, {1})), cst(f32({}, {2})), cst(f32({}, {0.25f}))});
  CHECK(y.dtype() == DType::F32);
  check_close(y, {4}, {1, 1.25f, 1.5f, 1.75f});
  auto z = run1("Range", {in(i64({}, {10})), in(i64({}, {4})), in(i64({}, {-3}))});
  CHECK(z.dtype() == DType::I64);
  check_ints(z, {2}, {10, 7});  // ceil((4 - 10) / -3) = 2
  check_ints(run1("Range", {cst(i64({}, {0})), cst(i64({}, {5})), cst(i64({}, {2}))}), {3},
             {0, 2, 4});
  check_close(run1("Range", {in(f32({}, {3})), in(f32({}, {-1})), in(f32({}, {-1.5f}))}), {3},
              {3, 1.5f, 0});
  // Empty ranges.
  check_ints(run1("Range", {cst(i64({}, {5})), cst(i64({}, {1})), cst(i64({}, {1}))}), {0}, {});
  check_close(run1("Range", {in(f32({}, {0})), in(f32({}, {0})), in(f32({}, {1}))}), {0}, {});
  check_error(run_op("Range", {in(i64({}, {0})), in(i64({}, {5})), in(i64({}, {0}))}),
              {"'node'", "Range", "delta"});
}

// ---- Identity ---------------------------------------------------------------------------------

TEST_CASE("ref shape ops: Identity on integer and BOOL tensors") {
  auto i32 =
      std::move(Tensor::from_i64({3}, std::vector<int64_t>{-5, 0, 2147483647}, DType::I32)).value();
  auto y = run1("Identity", {in(i32)});
  CHECK(y.dtype() == DType::I32);
  check_ints(y, {3}, {-5, 0, 2147483647});
  auto b = std::move(Tensor::from_i64({2}, std::vector<int64_t>{1, 0}, DType::BOOL)).value();
  auto yb = run1("Identity", {in(b)});
  CHECK(yb.dtype() == DType::BOOL);
  check_ints(yb, {2}, {1, 0});
  check_ints(run1("Identity", {in(i64({2, 0}, {}))}), {2, 0}, {});
}

TEST_CASE("ref shape ops: Identity on I64 is exact") {
  // Integer Identity (and Neg, Abs, Relu) is exact in int64; through double, 2^53 + 1 would
  // come back as 2^53.
  check_ints(run1("Identity", {in(i64({3}, {kBig, -kBig, 123}))}), {3}, {kBig, -kBig, 123});
}

TEST_CASE("ref shape ops: GatherElements") {
  const Tensor data = f32({2, 2}, {1, 2, 3, 4});
  // Axis 0 (default): out[i][j] = data[idx[i][j]][j]; negative indices count from the end.
  check_close(run1("GatherElements", {in(data), in(i64({2, 2}, {1, -2, 0, 1}))}), {2, 2}, {3, 2, 1, 4});
  check_close(run1("GatherElements", {in(data), in(i64({2, 1}, {1, 0}))}, {{"axis", int64_t{1}}}), {2, 1}, {2, 3});
  check_error(run_op("GatherElements", {in(data), in(i64({1, 2}, {2, 0}))}), {"'node'", "out of range"});
}

TEST_CASE("ref shape ops: Trilu") {
  const Tensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_close(run1("Trilu", {in(x)}), {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  check_close(run1("Trilu", {in(x)}, {{"upper", int64_t{0}}}), {3, 3}, {1, 0, 0, 4, 5, 0, 7, 8, 9});
  check_close(run1("Trilu", {in(x), cst(i64({}, {1}))}), {3, 3}, {0, 2, 3, 0, 0, 6, 0, 0, 0});
  check_close(run1("Trilu", {in(x), in(i64({}, {-1}))}, {{"upper", int64_t{0}}}), {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0});
  // Batched: the last two axes of each matrix.
  check_ints(run1("Trilu", {in(i64({2, 1, 2}, {1, 2, 3, 4}))}, {{"upper", int64_t{0}}}), {2, 1, 2}, {1, 0, 3, 0});
}

TEST_CASE("ref shape ops: Tile") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  check_close(run1("Tile", {in(x), cst(i64({2}, {1, 2}))}), {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4});
  check_close(run1("Tile", {in(x), in(i64({2}, {2, 1}))}), {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
  check_ints(run1("Tile", {in(i64({1}, {7})), cst(i64({1}, {3}))}), {3}, {7, 7, 7});
  check_close(run1("Tile", {in(x), cst(i64({2}, {0, 1}))}), {0, 2}, {});
}

TEST_CASE("ref shape: DepthToSpace and SpaceToDepth") {
  const Tensor x = f32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Attributes b2{{"blocksize", int64_t{2}}};
  // DCR (default): depth index = (block row * 2 + block col) * C' + c.
  check_close(run1("DepthToSpace", {in(x)}, b2), {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  check_close(run1("DepthToSpace", {in(x)}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}), {1, 2, 2, 2},
              {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor s = f32({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  check_close(run1("SpaceToDepth", {in(s)}, b2), {1, 8, 1, 1}, {0, 4, 1, 5, 2, 6, 3, 7});
}

TEST_CASE("ref shape: OneHot") {
  const Tensor idx = i64({4}, {0, 2, -1, 5});
  const Tensor vals = f32({2}, {0, 1});
  // Negative indices count from depth; out-of-range ones give all-off rows.
  check_close(run1("OneHot", {in(idx), cst(i64({}, {3})), in(vals)}), {4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
  check_close(run1("OneHot", {in(idx), cst(i64({}, {3})), in(vals)}, {{"axis", int64_t{0}}}), {3, 4},
              {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0});
}

TEST_CASE("ref shape ops: EyeLike with k and dtype") {
  const Tensor x =
      std::move(Tensor::from_i64({3, 4}, std::vector<int64_t>(12, 7), DType::I32)).value();
  auto y = run1("EyeLike", {in(x)});
  CHECK(y.dtype() == DType::I32);
  check_ints(y, {3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  auto up = run1("EyeLike", {in(x)}, {{"k", int64_t{1}}, {"dtype", int64_t{1}}});
  CHECK(up.dtype() == DType::F32);
  check_close(up, {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  check_ints(run1("EyeLike", {in(x)}, {{"k", int64_t{-2}}}), {3, 4},
             {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
  check_ints(run1("EyeLike", {in(x)}, {{"k", int64_t{4}}}), {3, 4}, std::vector<int64_t>(12, 0));
  check_error(run_op("EyeLike", {in(f32({2}, {1, 2}))}), {"input must be 2-D"});
}

TEST_CASE("ref shape ops: ReverseSequence reverses each batch entry's prefix") {
  // time_axis 0, batch_axis 1: x[t][b] = 10t + b.
  const Tensor x = f32({3, 2}, {0, 1, 10, 11, 20, 21});
  check_close(run1("ReverseSequence", {in(x), in(i64({2}, {3, 2}))}), {3, 2},
              {20, 11, 10, 1, 0, 21});
  const Attributes batch_first = {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}};
  check_ints(run1("ReverseSequence", {in(i64({2, 3}, {1, 2, 3, 4, 5, 6})), in(i64({2}, {2, 3}))},
                  batch_first),
             {2, 3}, {2, 1, 3, 6, 5, 4});
  // Trailing axes move with their time step.
  check_close(run1("ReverseSequence", {in(f32({2, 1, 2}, {1, 2, 3, 4})), in(i64({1}, {2}))}),
              {2, 1, 2}, {3, 4, 1, 2});
  check_error(run_op("ReverseSequence", {in(x), in(i64({2}, {4, 1}))}),
              {"sequence length 4 is outside [0, 3]"});
}

}  // namespace hpf::test
