// Reference interpreter: BatchNormalization, LayerNormalization, Softmax, LogSoftmax and the
// reductions. Expectations are hand-computed or come from double-precision formulas written out
// in this file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
// The default epsilon (1e-5f) as the kernels see it.
const double kEps = double(1e-5f);

Expected<std::vector<Tensor>> run_n(const std::string& op, std::vector<Arg> args, Attributes attrs,
                                    int n) {
  return run_op(op, std::move(args), std::move(attrs), n);
}

// Like check_close, but an infinite expectation must be matched exactly.
void check_vals(const Tensor& got, std::vector<int64_t> shape, const std::vector<float>& want,
                double tol = 1e-5) {
  CHECK(got.shape() == shape);
  const auto g = got.to_f32();
  REQUIRE(g.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k]))
      CHECK_MESSAGE(std::isnan(g[k]), "element " << k << ": got " << g[k] << ", want nan");
    else if (std::isinf(want[k]))
      CHECK_MESSAGE(g[k] == want[k], "element " << k << ": got " << g[k] << ", want " << want[k]);
    else
      CHECK_MESSAGE(std::abs(double(g[k]) - want[k]) <= tol + tol * std::abs(double(want[k])),
                    "element " << k << ": got " << g[k] << ", want " << want[k]);
  }
}

std::vector<float> iota(int64_t n, float start = 0, float step = 1) {
  std::vector<float> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + step * float(k);
  return v;
}

// Softmax / LogSoftmax along `axis` (already non-negative) of a row-major tensor, in double.
std::vector<float> softmax_ref(const std::vector<float>& x, const std::vector<int64_t>& shape,
                               int64_t axis, bool log) {
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t mid = shape[axis];
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * mid + j) * inner + i; };
      double mx = -1e300;
      for (int64_t j = 0; j < mid; ++j) mx = std::max(mx, double(x[at(j)]));
      double sum = 0;
      for (int64_t j = 0; j < mid; ++j) sum += std::exp(double(x[at(j)]) - mx);
      for (int64_t j = 0; j < mid; ++j) {
        const double d = double(x[at(j)]) - mx;
        y[at(j)] = float(log ? d - std::log(sum) : std::exp(d) / sum);
      }
    }
  return y;
}

// LayerNormalization over the trailing `cols` elements of each row, in double.
struct LayerNormRef {
  std::vector<float> y, mean, inv_std;
};
LayerNormRef layer_norm_ref(const std::vector<float>& x, int64_t cols,
                            const std::vector<float>& scale, const std::vector<float>& bias,
                            double eps) {
  LayerNormRef r;
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < cols; ++j) m += x[i * cols + j];
    m /= double(cols);
    for (int64_t j = 0; j < cols; ++j) v += (x[i * cols + j] - m) * (x[i * cols + j] - m);
    v /= double(cols);
    const double inv = 1.0 / std::sqrt(v + eps);
    for (int64_t j = 0; j < cols; ++j) {
      const double s = scale[j % scale.size()], b = bias.empty() ? 0.0 : bias[j % bias.size()];
      r.y.push_back(float((x[i * cols + j] - m) * inv * s + b));
    }
    r.mean.push_back(float(m));
    r.inv_std.push_back(float(inv));
  }
  return r;
}

}  // namespace

// ---- BatchNormalization -----------------------------------------------------------------------

TEST_CASE("ref normalization: BatchNormalization on [N,C,H,W]") {
  // X [2,2,1,2]; per channel: y = scale * (x - mean) / sqrt(var + eps) + B.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> scale = {2, 0.5f}, bias = {1, -1}, mean = {1.5f, 4}, var = {0.25f, 4};
  const double eps = kEps;
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 2; ++k) {
        const double v = x[(n * 2 + c) * 2 + k];
        want.push_back(float(scale[c] * (v - mean[c]) / std::sqrt(var[c] + eps) + bias[c]));
      }
  auto y =
      run1("BatchNormalization", {in(f32({2, 2, 1, 2}, x)), cst(f32({2}, scale)),
                                  cst(f32({2}, bias)), cst(f32({2}, mean)), cst(f32({2}, var))});
  check_vals(y, {2, 2, 1, 2}, want);
  // Hand-checked values for channel 0, batch 0 (eps ignored): 2 * (1 - 1.5) / 0.5 + 1 = -1.
  CHECK(y.to_f32()[0] == doctest::Approx(-1).epsilon(1e-4));
}

TEST_CASE("ref normalization: BatchNormalization on [N,C] with epsilon") {
  // var 0 and eps 0.25: divide by sqrt(0.25) = 0.5.
  auto y = run1("BatchNormalization",
                {in(f32({3, 2}, {1, 10, 2, 20, 3, 30})), in(f32({2}, {1, 1})),
                 in(f32({2}, {0, 0.5f})), in(f32({2}, {2, 20})), in(f32({2}, {0, 0.75f}))},
                {{"epsilon", 0.25f}});
  // channel 0: (x - 2) / 0.5; channel 1: (x - 20) / 1 + 0.5.
  check_vals(y, {3, 2}, {-2, -9.5f, 0, 0.5f, 2, 10.5f});
}

TEST_CASE("ref normalization: BatchNormalization parameter size mismatch is an error") {
  auto r = run_op("BatchNormalization",
                  {in(f32({1, 2}, {1, 2})), in(f32({3}, {1, 1, 1})), in(f32({2}, {0, 0})),
                   in(f32({2}, {0, 0})), in(f32({2}, {1, 1}))});
  check_error(r, {"'node'", "BatchNormalization", "[3]"});
}

// ---- LayerNormalization -----------------------------------------------------------------------

TEST_CASE("ref normalization: LayerNormalization axis -1 over [2,3,4], with and without bias") {
  std::vector<float> x = iota(24, -3, 0.5f);
  x[5] = 7;  // not every row an arithmetic progression
  const std::vector<float> scale = {1, 2, 0.5f, -1}, bias = {0.1f, 0.2f, 0.3f, 0.4f};
  SUBCASE("scale and bias") {
    auto want = layer_norm_ref(x, 4, scale, bias, kEps);
    check_vals(run1("LayerNormalization",
                    {in(f32({2, 3, 4}, x)), cst(f32({4}, scale)), cst(f32({4}, bias))}),
               {2, 3, 4}, want.y);
  }
  SUBCASE("scale only") {
    auto want = layer_norm_ref(x, 4, scale, {}, kEps);
    check_vals(run1("LayerNormalization", {in(f32({2, 3, 4}, x)), in(f32({4}, scale))}), {2, 3, 4},
               want.y);
  }
  SUBCASE("scale is a required input") {
    auto r = run_op("LayerNormalization", {in(f32({2, 3, 4}, x))});
    REQUIRE_FALSE(r.ok());
  }
}

TEST_CASE("ref normalization: LayerNormalization axis 1 over [2,3,4]") {
  const std::vector<float> x = iota(24, 1, 1.5f);
  std::vector<float> scale(12), bias(12);
  for (int k = 0; k < 12; ++k) {
    scale[k] = 0.5f + 0.1f * float(k);
    bias[k] = float(k % 3) - 1;
  }
  auto want = layer_norm_ref(x, 12, scale, bias, kEps);
  auto r = run_n("LayerNormalization",
                 {in(f32({2, 3, 4}, x)), cst(f32({3, 4}, scale)), cst(f32({3, 4}, bias))},
                 {{"axis", int64_t{1}}}, 3);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {2, 3, 4}, want.y);
  // Mean and InvStdDev have the input's rank with the normalised axes set to 1.
  check_vals((*r)[1], {2, 1, 1}, want.mean);
  check_vals((*r)[2], {2, 1, 1}, want.inv_std);
  // Hand check: each batch is an arithmetic progression of 12 terms with step 1.5, whose
  // variance is 1.5^2 * (12^2 - 1) / 12.
  CHECK((*r)[1].to_f32()[0] == doctest::Approx(1 + 1.5 * 5.5));
  CHECK((*r)[2].to_f32()[0] == doctest::Approx(1 / std::sqrt(2.25 * 143 / 12 + kEps)));
  // A scale of shape [4] broadcasts over the normalised shape [3,4].
  auto want4 = layer_norm_ref(x, 12, {2, 1, 1, 1}, {}, kEps);
  check_vals(run1("LayerNormalization", {in(f32({2, 3, 4}, x)), cst(f32({4}, {2, 1, 1, 1}))},
                  {{"axis", int64_t{1}}}),
             {2, 3, 4}, want4.y);
}

TEST_CASE("ref normalization: LayerNormalization optional outputs with axis -1") {
  const std::vector<float> x = {1, 2, 3, 4, 5, 5, 5, 5, -1, 1, -1, 1};
  auto r = run_n("LayerNormalization", {in(f32({3, 4}, x)), cst(f32({4}, {1, 1, 1, 1}))}, {}, 3);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  REQUIRE(r->size() == 3);
  CHECK((*r)[1].dtype() == DType::F32);
  check_vals((*r)[1], {3, 1}, {2.5f, 5, 0});
  // Variances 1.25, 0, 1.
  check_vals((*r)[2], {3, 1},
             {float(1 / std::sqrt(1.25 + kEps)), float(1 / std::sqrt(kEps)),
              float(1 / std::sqrt(1 + kEps))});
  // A constant row normalises to 0, not NaN.
  auto y = (*r)[0].to_f32();
  for (int k = 4; k < 8; ++k) CHECK(y[k] == 0.0f);
  // Two outputs: Y and Mean only.
  auto r2 = run_n("LayerNormalization", {in(f32({3, 4}, x)), cst(f32({4}, {1, 1, 1, 1}))}, {}, 2);
  REQUIRE(r2.ok());
  check_vals((*r2)[1], {3, 1}, {2.5f, 5, 0});
}

TEST_CASE("ref normalization: LayerNormalization epsilon changes the result") {
  // x = [1,-1]: mean 0, variance 1. eps 3 -> divide by sqrt(4) = 2.
  auto y = run1("LayerNormalization", {in(f32({1, 2}, {1, -1})), cst(f32({2}, {1, 1}))},
                {{"epsilon", 3.0f}});
  check_vals(y, {1, 2}, {0.5f, -0.5f}, 1e-6);
  auto y0 = run1("LayerNormalization", {in(f32({1, 2}, {1, -1})), cst(f32({2}, {1, 1}))});
  check_vals(y0, {1, 2}, {float(1 / std::sqrt(1 + kEps)), float(-1 / std::sqrt(1 + kEps))}, 1e-7);
}

TEST_CASE("ref normalization: LayerNormalization errors") {
  auto r = run_op("LayerNormalization", {in(f32({2, 3}, iota(6))), in(f32({2}, {1, 1}))});
  check_error(r, {"'node'", "LayerNormalization", "[2]", "[3]"});
  auto ra = run_op("LayerNormalization", {in(f32({2, 3}, iota(6))), in(f32({3}, {1, 1, 1}))},
                   {{"axis", int64_t{2}}});
  check_error(ra, {"'node'", "axis 2"});
}

// ---- Softmax / LogSoftmax ---------------------------------------------------------------------

TEST_CASE("ref normalization: Softmax and LogSoftmax of [0,1,2], hand values") {
  // e^0, e^1, e^2 over their sum 11.107337927389695.
  check_vals(run1("Softmax", {in(f32({3}, {0, 1, 2}))}), {3},
             {0.09003057317038046f, 0.24472847105479767f, 0.6652409557748219f}, 1e-6);
  check_vals(run1("LogSoftmax", {in(f32({3}, {0, 1, 2}))}), {3},
             {-2.4076059644443806f, -1.4076059644443804f, -0.4076059644443803f}, 1e-6);
}

TEST_CASE("ref normalization: Softmax/LogSoftmax along every axis of [2,3]") {
  const std::vector<float> x = {1, 2, 3, -1, 0, 4};
  for (bool log : {false, true}) {
    const char* op = log ? "LogSoftmax" : "Softmax";
    INFO(op);
    const auto w0 = softmax_ref(x, {2, 3}, 0, log), w1 = softmax_ref(x, {2, 3}, 1, log);
    check_vals(run1(op, {in(f32({2, 3}, x))}, {{"axis", int64_t{0}}}), {2, 3}, w0);
    check_vals(run1(op, {in(f32({2, 3}, x))}, {{"axis", int64_t{-2}}}), {2, 3}, w0);
    check_vals(run1(op, {in(f32({2, 3}, x))}, {{"axis", int64_t{1}}}), {2, 3}, w1);
    check_vals(run1(op, {in(f32({2, 3}, x))}, {{"axis", int64_t{-1}}}), {2, 3}, w1);
    check_vals(run1(op, {in(f32({2, 3}, x))}), {2, 3}, w1);  // default axis -1
  }
  // Columns of the axis-0 softmax sum to one; (1, -1) -> sigmoid(2), sigmoid(-2).
  auto y = run1("Softmax", {in(f32({2, 3}, x))}, {{"axis", int64_t{0}}}).to_f32();
  CHECK(y[0] == doctest::Approx(0.8807970779778823));
  CHECK(y[3] == doctest::Approx(0.11920292202211755));
}

TEST_CASE("ref normalization: Softmax/LogSoftmax along each axis of [2,3,4]") {
  std::vector<float> x = iota(24, -2, 0.37f);
  x[7] = 5;
  x[13] = -4;
  const std::vector<int64_t> shape = {2, 3, 4};
  for (bool log : {false, true})
    for (int64_t axis = -3; axis < 3; ++axis) {
      const char* op = log ? "LogSoftmax" : "Softmax";
      INFO(op << " axis " << axis);
      const int64_t a = axis < 0 ? axis + 3 : axis;
      check_vals(run1(op, {in(f32(shape, x))}, {{"axis", axis}}), shape,
                 softmax_ref(x, shape, a, log), 1e-6);
    }
}

TEST_CASE("ref normalization: Softmax is stable for large magnitudes") {
  const std::vector<float> sm = {0.09003057317038046f, 0.24472847105479767f, 0.6652409557748219f};
  const std::vector<float> lsm = {-2.4076059644443806f, -1.4076059644443804f, -0.4076059644443803f};
  check_vals(run1("Softmax", {in(f32({3}, {1000, 1001, 1002}))}), {3}, sm, 1e-6);
  check_vals(run1("Softmax", {in(f32({3}, {-1000, -1001, -1002}))}), {3}, {sm[2], sm[1], sm[0]},
             1e-6);
  check_vals(run1("LogSoftmax", {in(f32({3}, {1000, 1001, 1002}))}), {3}, lsm, 1e-5);
  check_vals(run1("LogSoftmax", {in(f32({3}, {-1000, -1001, -1002}))}), {3},
             {lsm[2], lsm[1], lsm[0]}, 1e-5);
  // Very different magnitudes: the small ones underflow to 0 (Softmax) but stay finite in
  // LogSoftmax.
  check_vals(run1("Softmax", {in(f32({3}, {3e4f, 0, -3e4f}))}), {3}, {1, 0, 0});
  check_vals(run1("LogSoftmax", {in(f32({3}, {3e4f, 0, -3e4f}))}), {3}, {0, -3e4f, -6e4f});
}

TEST_CASE("ref normalization: Softmax of a size-1 axis is 1, axis out of range is an error") {
  check_vals(run1("Softmax", {in(f32({2, 1}, {-7, 300}))}), {2, 1}, {1, 1});
  check_vals(run1("LogSoftmax", {in(f32({2, 1}, {-7, 300}))}), {2, 1}, {0, 0});
  check_error(run_op("Softmax", {in(f32({2, 3}, iota(6)))}, {{"axis", int64_t{2}}}),
              {"'node'", "Softmax", "axis 2"});
}

// ---- reductions -------------------------------------------------------------------------------

TEST_CASE("ref normalization: ReduceSum/ReduceMean/ReduceMax with axes as an attribute") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto axes = [](std::vector<int64_t> a) { return AttrValue(std::move(a)); };
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", axes({0})}}), {1, 3}, {5, 7, 9});
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", axes({0})}, {"keepdims", int64_t{0}}}), {3},
             {5, 7, 9});
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", axes({1})}}), {2, 1}, {6, 15});
  check_vals(run1("ReduceMean", {in(x)}, {{"axes", axes({-1})}, {"keepdims", int64_t{0}}}), {2},
             {2, 5});
  check_vals(run1("ReduceMean", {in(x)}, {{"axes", axes({0})}}), {1, 3}, {2.5f, 3.5f, 4.5f});
  check_vals(run1("ReduceMax", {in(x)}, {{"axes", axes({0})}}), {1, 3}, {4, 5, 6});
  check_vals(run1("ReduceMax", {in(x)}, {{"axes", axes({-1})}, {"keepdims", int64_t{0}}}), {2},
             {3, 6});
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", axes({0, 1})}}), {1, 1}, {21});
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", axes({1, -2})}, {"keepdims", int64_t{0}}}), {},
             {21});
}

TEST_CASE("ref normalization: reductions with axes as an input") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_vals(run1("ReduceSum", {in(x), cst(i64({1}, {1}))}), {2, 1}, {6, 15});
  check_vals(run1("ReduceMean", {in(x), cst(i64({1}, {-2}))}, {{"keepdims", int64_t{0}}}), {3},
             {2.5f, 3.5f, 4.5f});
  check_vals(run1("ReduceMax", {in(x), cst(i64({2}, {0, 1}))}, {{"keepdims", int64_t{0}}}), {},
             {6});
  // A runtime (non-constant) axes input: the shape is only known when the node runs.
  check_vals(run1("ReduceSum", {in(x), in(i64({1}, {0}))}, {{"keepdims", int64_t{0}}}), {3},
             {5, 7, 9});
}

TEST_CASE("ref normalization: reductions over all axes and noop_with_empty_axes") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  SUBCASE("no axes: all axes") {
    check_vals(run1("ReduceSum", {in(x)}), {1, 1}, {21});
    check_vals(run1("ReduceMean", {in(x)}, {{"keepdims", int64_t{0}}}), {}, {3.5f});
    check_vals(run1("ReduceMax", {in(x)}, {{"keepdims", int64_t{0}}}), {}, {6});
    check_vals(run1("ReduceSum", {in(x), cst(i64({0}, {}))}), {1, 1}, {21});  // empty axes input
  }
  SUBCASE("noop_with_empty_axes = 1: the identity") {
    const Attributes noop{{"noop_with_empty_axes", int64_t{1}}};
    check_vals(run1("ReduceSum", {in(x)}, noop), {2, 3}, {1, 2, 3, 4, 5, 6});
    check_vals(run1("ReduceMean", {in(x), cst(i64({0}, {}))}, noop), {2, 3}, {1, 2, 3, 4, 5, 6});
    check_vals(run1("ReduceMax", {in(x)},
                    {{"noop_with_empty_axes", int64_t{1}}, {"keepdims", int64_t{0}}}),
               {2, 3}, {1, 2, 3, 4, 5, 6});
    // With axes given, noop_with_empty_axes does nothing.
    check_vals(run1("ReduceSum", {in(x), cst(i64({1}, {1}))}, noop), {2, 1}, {6, 15});
  }
  SUBCASE("scalar input") { check_vals(run1("ReduceSum", {in(f32({}, {4}))}), {}, {4}); }
}

TEST_CASE("ref normalization: reductions over [2,3,4] with several and negative axes") {
  const std::vector<float> v = iota(24);
  const Tensor x = f32({2, 3, 4}, v);
  // Sum over axes 0 and 2: for each j, sum_i sum_k (12 i + 4 j + k) = 2*4*4j + 4*12 + 2*6 = 32 j
  // + 60.
  const std::vector<float> s02 = {60, 92, 124};
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", std::vector<int64_t>{0, 2}}}), {1, 3, 1}, s02);
  check_vals(run1("ReduceSum", {in(x)},
                  {{"axes", std::vector<int64_t>{-1, -3}}, {"keepdims", int64_t{0}}}),
             {3}, s02);
  check_vals(run1("ReduceMean", {in(x), cst(i64({2}, {2, 0}))}, {{"keepdims", int64_t{0}}}), {3},
             {60.0f / 8, 92.0f / 8, 124.0f / 8});
  // Max over axis 1: 12 i + 8 + k.
  check_vals(run1("ReduceMax", {in(x)}, {{"axes", std::vector<int64_t>{-2}}}), {2, 1, 4},
             {8, 9, 10, 11, 20, 21, 22, 23});
}

TEST_CASE("ref normalization: NaN in reductions") {
  const Tensor x = f32({2, 3}, {1, kNaN, 3, 4, 5, 6});
  check_vals(
      run1("ReduceMax", {in(x)}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}),
      {2}, {kNaN, 6});
  check_vals(
      run1("ReduceMax", {in(x)}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}),
      {3}, {4, kNaN, 6});
  // NaN first or last in the reduced run.
  check_vals(run1("ReduceMax", {in(f32({2}, {kNaN, 1}))}, {{"keepdims", int64_t{0}}}), {}, {kNaN});
  check_vals(run1("ReduceMax", {in(f32({2}, {1, kNaN}))}, {{"keepdims", int64_t{0}}}), {}, {kNaN});
  check_vals(run1("ReduceSum", {in(x)}, {{"axes", std::vector<int64_t>{1}}}), {2, 1}, {kNaN, 15});
  check_vals(run1("ReduceMean", {in(x)}, {{"axes", std::vector<int64_t>{1}}}), {2, 1}, {kNaN, 5});
  // -inf is an ordinary value for ReduceMax.
  check_vals(run1("ReduceMax", {in(f32({2}, {-kInf, -kInf}))}, {{"keepdims", int64_t{0}}}), {},
             {-kInf});
}

TEST_CASE("ref normalization: integer reductions") {
  const Tensor x = i64({2, 3}, {1, -2, 3, 4, 5, -6});
  check_ints(
      run1("ReduceSum", {in(x)}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}),
      {2}, {2, 3});
  check_ints(
      run1("ReduceMax", {in(x)}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}),
      {3}, {4, 5, 3});
}

TEST_CASE("ref normalization: reductions accumulate in FP64") {
  // FP32 left to right: 1e8 + 1 = 1e8, - 1e8 = 0. Exact: 1.
  check_vals(run1("ReduceSum", {in(f32({3}, {1e8f, 1, -1e8f}))}, {{"keepdims", int64_t{0}}}), {},
             {1}, 0);
  check_vals(run1("ReduceMean", {in(f32({4}, {1e8f, 1, -1e8f, 3}))}, {{"keepdims", int64_t{0}}}),
             {}, {1}, 0);
}

TEST_CASE("ref normalization: reductions with zero-size dimensions") {
  // Reducing over an empty axis: ReduceSum gives 0.
  check_vals(run1("ReduceSum", {in(f32({2, 0}, {}))},
                  {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}),
             {2}, {0, 0});
  // Reducing a non-empty axis of an empty tensor gives an empty result.
  check_vals(run1("ReduceSum", {in(f32({2, 0}, {}))}, {{"axes", std::vector<int64_t>{0}}}), {1, 0},
             {});
  check_vals(run1("ReduceMax", {in(f32({2, 0}, {}))},
                  {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}),
             {0}, {});
}

TEST_CASE("ref normalization: ReduceMax over an empty axis gives -inf") {
  // ONNX (ReduceMax-18/20) defines a max over an empty set as the minimum of the data type:
  // -inf for floats (INT64_MIN etc. for integers).
  auto r = run_op("ReduceMax", {in(f32({2, 0}, {}))},
                  {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {2}, {-kInf, -kInf});
}

TEST_CASE("ref normalization: reduction axis errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_error(run_op("ReduceSum", {in(x)}, {{"axes", std::vector<int64_t>{2}}}),
              {"'node'", "ReduceSum", "axis 2"});
  check_error(run_op("ReduceMax", {in(x), cst(i64({1}, {-3}))}),
              {"'node'", "ReduceMax", "axis -3"});
  check_error(run_op("ReduceMean", {in(x)}, {{"axes", std::vector<int64_t>{1, -1}}}),
              {"'node'", "repeat"});
  // A runtime axes input is only checked when the node runs.
  check_error(run_op("ReduceSum", {in(x), in(i64({1}, {5}))}), {"'node'", "ReduceSum", "axis 5"});
}

TEST_CASE("ref normalization: ReduceMin/Prod/L1/L2/SumSquare/LogSum/LogSumExp") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Attributes row = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  check_vals(run1("ReduceMin", {in(x)}, row), {2}, {1, 4});
  check_vals(run1("ReduceProd", {in(x)}, row), {2}, {6, 120});
  check_vals(run1("ReduceL1", {in(f32({2, 3}, {-1, 2, -3, 4, -5, 6}))}, row), {2}, {6, 15});
  check_vals(run1("ReduceL2", {in(x)}, row), {2}, {3.74165739f, 8.77496439f});
  check_vals(run1("ReduceSumSquare", {in(x)}, row), {2}, {14, 77});
  check_vals(run1("ReduceLogSum", {in(x)}, row), {2}, {1.79175947f, 2.70805020f});
  // log(e + e^2 + e^3) = 3 + log(1 + e^-1 + e^-2).
  check_vals(run1("ReduceLogSumExp", {in(x)}, row), {2}, {3.40760596f, 6.40760596f});
  // Large values do not overflow: log(2 e^1000) = 1000 + log 2.
  check_vals(run1("ReduceLogSumExp", {in(f32({2}, {1000, 1000}))}), {1}, {1000.693147f});
  // Axes as an input, keepdims default, all axes by default.
  check_vals(run1("ReduceMin", {in(x), cst(i64({1}, {0}))}), {1, 3}, {1, 2, 3});
  check_vals(run1("ReduceProd", {in(x)}), {1, 1}, {720});
  check_vals(run1("ReduceSumSquare", {in(x)}, {{"noop_with_empty_axes", int64_t{1}}}), {2, 3},
             {1, 2, 3, 4, 5, 6});
}

TEST_CASE("ref normalization: new reductions on integers and empty sets") {
  const Tensor xi = i64({2, 3}, {3, -1, 2, 4, 5, 6});
  const Attributes row = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  auto mn = run1("ReduceMin", {in(xi)}, row);
  CHECK(mn.dtype() == DType::I64);
  check_ints(mn, {2}, {-1, 4});
  check_ints(run1("ReduceProd", {in(xi)}, row), {2}, {-6, 120});
  check_ints(run1("ReduceL1", {in(xi)}, row), {2}, {6, 15});
  check_ints(run1("ReduceSumSquare", {in(xi)}, row), {2}, {14, 77});
  // Empty sets give the identities: +inf for min, 1 for prod, 0 for sums, -inf for log sums.
  const Tensor e = f32({2, 0}, {});
  check_vals(run1("ReduceMin", {in(e)}, row), {2}, {kInf, kInf});
  check_vals(run1("ReduceProd", {in(e)}, row), {2}, {1, 1});
  check_vals(run1("ReduceL2", {in(e)}, row), {2}, {0, 0});
  check_vals(run1("ReduceLogSumExp", {in(e)}, row), {2}, {-kInf, -kInf});
  // NaN propagates through ReduceMin.
  check_vals(run1("ReduceMin", {in(f32({3}, {1, kNaN, 0}))}), {1}, {kNaN});
}

TEST_CASE("ref normalization: ArgMax/ArgMin") {
  const Tensor x = f32({2, 3}, {1, 5, 5, 7, 0, 7});
  // Defaults: axis 0, keepdims 1, first index of the extreme.
  auto y = run1("ArgMax", {in(x)});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {1, 3}, {1, 0, 1});
  check_ints(run1("ArgMin", {in(x)}), {1, 3}, {0, 1, 0});
  check_ints(run1("ArgMax", {in(x)}, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}}), {2}, {1, 0});
  check_ints(run1("ArgMax", {in(x)}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}), {2, 1}, {2, 2});
  check_ints(run1("ArgMin", {in(x)}, {{"axis", int64_t{1}}}), {2, 1}, {0, 1});
}

TEST_CASE("ref normalization: CumSum") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_vals(run1("CumSum", {in(x), cst(i64({}, {1}))}), {2, 3}, {1, 3, 6, 4, 9, 15});
  check_vals(run1("CumSum", {in(x), cst(i64({}, {0}))}), {2, 3}, {1, 2, 3, 5, 7, 9});
  check_vals(run1("CumSum", {in(x), in(i64({}, {-1}))}, {{"exclusive", int64_t{1}}}), {2, 3}, {0, 1, 3, 0, 4, 9});
  check_vals(run1("CumSum", {in(x), cst(i64({}, {1}))}, {{"reverse", int64_t{1}}}), {2, 3}, {6, 5, 3, 15, 11, 6});
  check_vals(run1("CumSum", {in(x), cst(i64({}, {1}))}, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}),
             {2, 3}, {5, 3, 0, 11, 6, 0});
  check_ints(run1("CumSum", {in(i64({3}, {1, -2, 4})), cst(i64({}, {0}))}), {3}, {1, -1, 3});
}

TEST_CASE("ref normalization: Hardmax") {
  const Tensor x = f32({2, 3}, {1, 3, 3, 5, 0, -1});
  // Default axis -1; ties go to the first maximum.
  check_vals(run1("Hardmax", {in(x)}), {2, 3}, {0, 1, 0, 1, 0, 0});
  check_vals(run1("Hardmax", {in(x)}, {{"axis", int64_t{0}}}), {2, 3}, {0, 1, 1, 1, 0, 0});
}

TEST_CASE("ref normalization: NegativeLogLikelihoodLoss") {
  const Tensor x = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor t = i64({2}, {2, 0});
  // Default reduction mean: (3 + 4) / 2.
  auto y = run1("NegativeLogLikelihoodLoss", {in(x), in(t)});
  check_vals(y, {}, {3.5f});
  check_vals(run1("NegativeLogLikelihoodLoss", {in(x), in(t)}, {{"reduction", std::string("sum")}}), {}, {7});
  check_vals(run1("NegativeLogLikelihoodLoss", {in(x), in(t)}, {{"reduction", std::string("none")}}), {2}, {3, 4});
  // Weights: mean divides by the weights picked: (3*3 + 4*1) / (3 + 1).
  const Tensor w = f32({3}, {1, 2, 3});
  check_vals(run1("NegativeLogLikelihoodLoss", {in(x), in(t), in(w)}), {}, {3.25f});
  // Ignored targets add neither loss nor weight.
  check_vals(run1("NegativeLogLikelihoodLoss", {in(x), in(t)}, {{"ignore_index", int64_t{0}}}), {}, {3});
  check_vals(run1("NegativeLogLikelihoodLoss", {in(x), in(t)},
                  {{"ignore_index", int64_t{0}}, {"reduction", std::string("none")}}),
             {2}, {3, 0});
}

TEST_CASE("ref normalization: SoftmaxCrossEntropyLoss") {
  const Tensor x = f32({2, 2}, {0, 0, 0, 0});
  const Tensor t = i64({2}, {0, 1});
  const float ln2 = std::log(2.0f);
  auto r = run_op("SoftmaxCrossEntropyLoss", {in(x), in(t)}, {}, 2);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {}, {ln2});
  check_vals((*r)[1], {2, 2}, {-ln2, -ln2, -ln2, -ln2});
  check_vals(run1("SoftmaxCrossEntropyLoss", {in(x), in(t)}, {{"reduction", std::string("sum")}}), {}, {2 * ln2});
}

// ---- InstanceNormalization, LRN, MeanVarianceNormalization -----------------------------------

TEST_CASE("ref normalization: InstanceNormalization normalises each (n, c) plane") {
  // Plane [1, 3]: mean 2, variance 1 -> [-1, 1] * 2 / sqrt(1 + eps) + 10; plane [4, 8]:
  // mean 6, variance 4 -> [-2, 2] * -1 / sqrt(4 + eps).
  const Tensor x = f32({1, 2, 2}, {1, 3, 4, 8});
  const double e = 0.5;
  auto y = run1("InstanceNormalization", {in(x), in(f32({2}, {2, -1})), in(f32({2}, {10, 0}))}, {{"epsilon", 0.5f}});
  const double a = 2 / std::sqrt(1 + e), b = -2 / std::sqrt(4 + e);
  check_vals(y, {1, 2, 2}, {float(10 - a), float(10 + a), float(-b), float(b)});
  check_error(run_op("InstanceNormalization", {in(x), in(f32({3}, {1, 1, 1})), in(f32({2}, {0, 0}))}), {"scale"});
}

TEST_CASE("ref normalization: LRN sums squares over a channel window") {
  // C = 4, size 3: channels c-1..c+1; size 2: channels c..c+1 (floor((2-1)/2) = 0 back, 1 forward).
  const Tensor x = f32({1, 4, 1, 1}, {1, 2, 3, 4});
  const double alpha = 0.3, beta = 0.75, bias = 2;
  auto lrn = [&](int c, int lo, int hi, int size) {
    double sq = 0;
    for (int j = std::max(0, lo); j <= std::min(3, hi); ++j) sq += (j + 1) * (j + 1);
    return float((c + 1) / std::pow(bias + alpha / size * sq, beta));
  };
  auto y3 = run1("LRN", {in(x)}, {{"size", int64_t{3}}, {"alpha", 0.3f}, {"beta", 0.75f}, {"bias", 2.0f}});
  check_vals(y3, {1, 4, 1, 1}, {lrn(0, -1, 1, 3), lrn(1, 0, 2, 3), lrn(2, 1, 3, 3), lrn(3, 2, 4, 3)});
  auto y2 = run1("LRN", {in(x)}, {{"size", int64_t{2}}, {"alpha", 0.3f}, {"beta", 0.75f}, {"bias", 2.0f}});
  check_vals(y2, {1, 4, 1, 1}, {lrn(0, 0, 1, 2), lrn(1, 1, 2, 2), lrn(2, 2, 3, 2), lrn(3, 3, 4, 2)});
}

TEST_CASE("ref normalization: MeanVarianceNormalization over the default and given axes") {
  // Default axes [0, 2, 3]: per channel. Channel 0 = [1, 3] -> [-1, 1]; channel 1 = [5, 5] -> 0.
  const Tensor x = f32({1, 2, 1, 2}, {1, 3, 5, 5});
  check_vals(run1("MeanVarianceNormalization", {in(x)}), {1, 2, 1, 2}, {-1, 1, 0, 0}, 1e-6);
  // axes [1, 3]: all four values, mean 3.5, std sqrt(2.75).
  const float s = float(std::sqrt(2.75));
  check_vals(run1("MeanVarianceNormalization", {in(x)}, {{"axes", std::vector<int64_t>{1, 3}}}), {1, 2, 1, 2},
             {-2.5f / s, -0.5f / s, 1.5f / s, 1.5f / s});
}

TEST_CASE("ref normalization: BatchNormalization training mode uses batch statistics") {
  // Channel 0 holds {1, 3}: mean 2, population variance 1; channel 1 {10, 30}: mean 20, variance
  // 100.
  const Tensor x = f32({2, 2}, {1, 10, 3, 30});
  std::vector<Arg> args = {in(x), in(f32({2}, {1, 2})), in(f32({2}, {0, 1})), in(f32({2}, {0, 0})),
                           in(f32({2}, {1, 1}))};
  auto r =
      run_op("BatchNormalization", args, {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}}, 3);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {2, 2}, {-1, -1, 1, 3});
  // running = input * momentum (0.9) + batch * 0.1.
  check_vals((*r)[1], {2}, {0.2f, 2});
  check_vals((*r)[2], {2}, {1, 10.9f});
  auto h = run_op("BatchNormalization", args,
                  {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}, {"momentum", 0.5f}}, 3);
  REQUIRE_MESSAGE(h.ok(), h.status().to_string());
  check_vals((*h)[1], {2}, {1, 10});
  check_vals((*h)[2], {2}, {1, 50.5f});
  // Y alone in training mode; running statistics without training mode are an error.
  check_vals(run1("BatchNormalization", args, {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}}),
             {2, 2}, {-1, -1, 1, 3});
  auto bad = run_op("BatchNormalization", args, {}, 3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("running_mean/running_var outputs need training_mode=1") !=
        std::string::npos);
}

}  // namespace hpf::test
