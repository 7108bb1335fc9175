// Reference interpreter: MatMul (numpy semantics, batched, broadcasting, 1-D operands, empty
// dimensions) and Gemm (transposes, alpha/beta, C broadcasting), and FP64 accumulation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

std::vector<float> iota(int64_t n, float start = 1, float step = 1) {
  std::vector<float> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + step * float(k);
  return v;
}

std::vector<float> random_values(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Naive C = A B for row-major A [m,k], B [k,n], in double, summing p = 0..k-1 in order.
std::vector<double> naive(const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[i * k + p]) * double(b[p * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

}  // namespace

// ---- MatMul -----------------------------------------------------------------------------------

TEST_CASE("ref linalg: MatMul 2-D") {
  // [2,3] x [3,2]
  auto y =
      run1("MatMul", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), in(f32({3, 2}, {7, 8, 9, 10, 11, 12}))});
  check_close(y, {2, 2}, {58, 64, 139, 154});
  // With a constant weight, [1,2] x [2,3].
  auto z = run1("MatMul", {in(f32({1, 2}, {1, -1})), cst(f32({2, 3}, {1, 2, 3, 4, 5, 6}))});
  check_close(z, {1, 3}, {-3, -3, -3});
}

TEST_CASE("ref linalg: MatMul with 1-D operands") {
  const Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  SUBCASE("1-D x 2-D: the vector is a row, the prepended 1 is removed") {
    check_close(run1("MatMul", {in(f32({2}, {1, 2})), in(m)}), {3}, {9, 12, 15});
  }
  SUBCASE("2-D x 1-D: the vector is a column, the appended 1 is removed") {
    check_close(run1("MatMul", {in(m), in(f32({3}, {1, 0, -1}))}), {2}, {-2, -2});
  }
  SUBCASE("1-D x 1-D: a dot product of shape []") {
    auto y = run1("MatMul", {in(f32({3}, {1, 2, 3})), in(f32({3}, {4, 5, 6}))});
    CHECK(y.rank() == 0);
    check_close(y, {}, {32});
  }
  SUBCASE("1-D x 3-D: batched, vector broadcast over the batch") {
    // [2] x [2,2,3] -> [2,3]
    auto y = run1("MatMul", {in(f32({2}, {1, 1})), in(f32({2, 2, 3}, iota(12)))});
    check_close(y, {2, 3}, {5, 7, 9, 17, 19, 21});
  }
  SUBCASE("3-D x 1-D") {
    // [2,2,3] x [3] -> [2,2]
    auto y = run1("MatMul", {in(f32({2, 2, 3}, iota(12))), in(f32({3}, {1, 0, 1}))});
    check_close(y, {2, 2}, {4, 10, 16, 22});
  }
}

TEST_CASE("ref linalg: batched MatMul with broadcasting [2,1,3,4] x [5,4,2] -> [2,5,3,2]") {
  std::mt19937 rng(7);
  const auto av = random_values(2 * 1 * 3 * 4, rng), bv = random_values(5 * 4 * 2, rng);
  auto y = run1("MatMul", {in(f32({2, 1, 3, 4}, av)), in(f32({5, 4, 2}, bv))});
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) {
      auto c = naive(av.data() + i * 12, bv.data() + j * 8, 3, 4, 2);
      for (double v : c) want.push_back(float(v));
    }
  check_close(y, {2, 5, 3, 2}, want, 1e-6, 1e-6);
}

TEST_CASE("ref linalg: batched MatMul, both batch dims broadcast [3,1,2,2] x [1,4,2,1]") {
  const auto av = iota(12), bv = iota(8, -2);
  auto y = run1("MatMul", {in(f32({3, 1, 2, 2}, av)), in(f32({1, 4, 2, 1}, bv))});
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (double v : naive(av.data() + i * 4, bv.data() + j * 2, 2, 2, 1))
        want.push_back(float(v));
  check_close(y, {3, 4, 2, 1}, want);
}

TEST_CASE("ref linalg: MatMul with zero-size dimensions") {
  SUBCASE("K = 0: the result is all zeros") {
    check_close(run1("MatMul", {in(f32({2, 0}, {})), in(f32({0, 3}, {}))}), {2, 3},
                {0, 0, 0, 0, 0, 0});
    check_close(run1("MatMul", {in(f32({0}, {})), in(f32({0}, {}))}), {}, {0});
  }
  SUBCASE("M = 0") {
    check_close(run1("MatMul", {in(f32({0, 3}, {})), in(f32({3, 2}, iota(6)))}), {0, 2}, {});
  }
  SUBCASE("N = 0") {
    check_close(run1("MatMul", {in(f32({2, 3}, iota(6))), in(f32({3, 0}, {}))}), {2, 0}, {});
  }
  SUBCASE("empty batch") {
    check_close(run1("MatMul", {in(f32({0, 2, 3}, {})), in(f32({3, 4}, iota(12)))}), {0, 2, 4}, {});
  }
}

TEST_CASE("ref linalg: MatMul inner-dimension mismatch names the node and both shapes") {
  auto r = run_op("MatMul", {in(f32({2, 3}, iota(6))), in(f32({4, 2}, iota(8)))});
  check_error(r, {"'node'", "MatMul", "inner dimensions", "[2,3]", "[4,2]"});
  auto r1 = run_op("MatMul", {in(f32({3}, iota(3))), in(f32({2}, iota(2)))});
  check_error(r1, {"'node'", "[3]", "[2]"});
}

TEST_CASE("ref linalg: MatMul batch dimensions that do not broadcast are an error") {
  auto r = run_op("MatMul", {in(f32({2, 1, 1}, iota(2))), in(f32({3, 1, 1}, iota(3)))});
  check_error(r, {"'node'", "MatMul", "[2]", "[3]"});
}

TEST_CASE("ref linalg: randomized MatMul against a naive double triple loop (bit for bit)") {
  std::mt19937 rng(12345);
  struct Case {
    int64_t m, k, n;
  };
  for (Case c :
       {Case{1, 1, 1}, Case{3, 17, 5}, Case{16, 33, 9}, Case{7, 128, 1}, Case{1, 64, 31},
        // register tiles of 4 rows x 8 or 16 columns (SSE, AVX2) or 6 rows x 32 (AVX-512), with
        // rows and columns left over
        Case{9, 40, 37}, Case{4, 300, 16}, Case{5, 3, 48}, Case{13, 77, 70}, Case{6, 20, 32},
        Case{20, 50, 100}}) {
    INFO("m=" << c.m << " k=" << c.k << " n=" << c.n);
    const auto a = random_values(c.m * c.k, rng), b = random_values(c.k * c.n, rng);
    auto y = run1("MatMul", {in(f32({c.m, c.k}, a)), in(f32({c.k, c.n}, b))});
    auto ref = naive(a.data(), b.data(), c.m, c.k, c.n);
    // Products of floats are exact in double and the sums run in the same order, so the only
    // difference allowed is the final rounding to float.
    std::vector<float> want(ref.begin(), ref.end());
    check_close(y, {c.m, c.n}, want, 0, 0);
  }
}

TEST_CASE("ref linalg: MatMul sums start from +0 and propagate NaN as the scalar loop does") {
  // 0 * -1 is -0, and +0 + -0 is +0: every output is +0, in register tiles and leftovers alike.
  auto y = run1("MatMul", {in(f32({5, 1}, std::vector<float>(5, 0.0f))), in(f32({1, 20}, std::vector<float>(20, -1.0f)))});
  for (float v : y.to_f32()) CHECK((v == 0.0f && !std::signbit(v)));
  // inf * 0 is NaN; a NaN anywhere in a row or column makes that output NaN.
  std::vector<float> b(2 * 17, 1.0f);
  b[0] = std::numeric_limits<float>::infinity();
  const auto z = run1("MatMul", {in(f32({4, 2}, {0, 1, 1, 1, 1, 1, 1, 1})), in(f32({2, 17}, b))}).to_f32();
  CHECK(std::isnan(z[0]));
  CHECK(std::isinf(z[17]));
  CHECK(z[1] == 1.0f);
}

TEST_CASE("ref linalg: MatMul accumulates in FP64") {
  // In FP32, 1e8 + 1 rounds back to 1e8 (spacing 8), so a left-to-right FP32 sum of
  // [1e8, 1, -1e8] is 0; the exact (and FP64) value is 1.
  float acc32 = 0;
  for (float v : {1e8f, 1.0f, -1e8f}) acc32 += v;
  REQUIRE(acc32 == 0.0f);  // the case really distinguishes the two
  check_close(run1("MatMul", {in(f32({3}, {1e8f, 1, -1e8f})), in(f32({3}, {1, 1, 1}))}), {}, {1}, 0,
              0);
  check_close(
      run1("MatMul", {in(f32({1, 3}, {1e8f, 1, -1e8f})), in(f32({3, 2}, {1, 2, 1, 2, 1, 2}))}),
      {1, 2}, {1, 2}, 0, 0);
  // Many small terms after a large one: 2^24 + 16 * 1 - 2^24 = 16 (FP32 would give 0).
  std::vector<float> a = {16777216.0f};
  for (int k = 0; k < 16; ++k) a.push_back(1.0f);
  a.push_back(-16777216.0f);
  check_close(run1("MatMul", {in(f32({1, 18}, a)), in(f32({18, 1}, std::vector<float>(18, 1.0f)))}),
              {1, 1}, {16}, 0, 0);
}

// ---- Gemm -------------------------------------------------------------------------------------

namespace {
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};   // A [2,3]
const std::vector<float> kB = {1, 0, -1, 2, 3, 1};  // B [3,2]
const std::vector<float> kAB = {8, 7, 17, 16};      // A B [2,2]
// Row-major transposes.
const std::vector<float> kAT = {1, 4, 2, 5, 3, 6};   // A^T [3,2]
const std::vector<float> kBT = {1, -1, 3, 0, 2, 1};  // B^T [2,3]
}  // namespace

TEST_CASE("ref linalg: Gemm without C, with transA/transB") {
  check_close(run1("Gemm", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB))}), {2, 2}, kAB);
  check_close(run1("Gemm", {in(f32({3, 2}, kAT)), in(f32({3, 2}, kB))}, {{"transA", int64_t{1}}}),
              {2, 2}, kAB);
  check_close(run1("Gemm", {in(f32({2, 3}, kA)), in(f32({2, 3}, kBT))}, {{"transB", int64_t{1}}}),
              {2, 2}, kAB);
  check_close(run1("Gemm", {in(f32({3, 2}, kAT)), in(f32({2, 3}, kBT))},
                   {{"transA", int64_t{1}}, {"transB", int64_t{1}}}),
              {2, 2}, kAB);
  // An omitted optional C.
  check_close(run1("Gemm", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB)), none()}), {2, 2}, kAB);
  // A non-square result: transA on [3,2] gives M = 2, K = 3; times [3,1] ones -> row sums.
  check_close(
      run1("Gemm", {in(f32({3, 2}, kAT)), in(f32({3, 1}, {1, 1, 1}))}, {{"transA", int64_t{1}}}),
      {2, 1}, {6, 15});
}

TEST_CASE("ref linalg: Gemm alpha, beta and C broadcasting") {
  const Tensor a = f32({2, 3}, kA), b = f32({3, 2}, kB);
  SUBCASE("C [2,2], alpha and beta") {
    auto y = run1("Gemm", {in(a), in(b), in(f32({2, 2}, {1, 2, 3, 4}))},
                  {{"alpha", 2.0f}, {"beta", 0.5f}});
    check_close(y, {2, 2}, {16.5f, 15, 35.5f, 34});
  }
  SUBCASE("C [N] broadcast over rows") {
    auto y = run1("Gemm", {in(a), in(b), cst(f32({2}, {10, 20}))});
    check_close(y, {2, 2}, {18, 27, 27, 36});
  }
  SUBCASE("C scalar") {
    auto y = run1("Gemm", {in(a), in(b), in(f32({}, {-1}))}, {{"beta", 3.0f}});
    check_close(y, {2, 2}, {5, 4, 14, 13});
  }
  SUBCASE("C [1] is a scalar too") {
    check_close(run1("Gemm", {in(a), in(b), in(f32({1}, {1}))}), {2, 2}, {9, 8, 18, 17});
  }
  SUBCASE("C [M,1] broadcast over columns") {
    auto y = run1("Gemm", {in(a), in(b), in(f32({2, 1}, {100, 200}))}, {{"alpha", -1.0f}});
    check_close(y, {2, 2}, {92, 93, 183, 184});
  }
  SUBCASE("beta = 0 ignores C") {
    auto y = run1("Gemm", {in(a), in(b), in(f32({2, 2}, {5, 5, 5, 5}))}, {{"beta", 0.0f}});
    check_close(y, {2, 2}, kAB);
  }
  SUBCASE("with transB and C [N]") {
    auto y = run1("Gemm", {in(a), in(f32({2, 3}, kBT)), in(f32({2}, {1, -1}))},
                  {{"transB", int64_t{1}}, {"alpha", 0.5f}});
    check_close(y, {2, 2}, {5, 2.5f, 9.5f, 7});
  }
}

TEST_CASE("ref linalg: Gemm shape errors") {
  auto r = run_op("Gemm", {in(f32({2, 3}, kA)), in(f32({2, 3}, kA))});
  check_error(r, {"'node'", "Gemm", "inner dimensions", "[2,3]"});
  auto rc = run_op("Gemm", {in(f32({2, 3}, kA)), in(f32({3, 2}, kB)), in(f32({3}, {1, 2, 3}))});
  check_error(rc, {"'node'", "Gemm", "[3]"});
  auto r1 = run_op("Gemm", {in(f32({6}, kA)), in(f32({3, 2}, kB))});
  check_error(r1, {"'node'", "Gemm"});
}

TEST_CASE("ref linalg: Gemm accumulates in FP64") {
  auto y = run1("Gemm", {in(f32({1, 3}, {1e8f, 1, -1e8f})), in(f32({3, 1}, {1, 1, 1}))});
  check_close(y, {1, 1}, {1}, 0, 0);
}

TEST_CASE("ref linalg: Det of single and batched matrices, pivoting and singular ones") {
  check_close(run1("Det", {in(f32({2, 2}, {1, 2, 3, 4}))}), {}, {-2});
  // A zero leading pivot needs a row swap: det [[0,1,0],[1,0,0],[0,0,3]] = -3.
  check_close(run1("Det", {in(f32({3, 3, 3}, {2, 0, 0, 0, 2, 0, 0, 0, 2,  //
                                              0, 1, 0, 1, 0, 0, 0, 0, 3,  //
                                              1, 2, 3, 2, 4, 6, 0, 1, 1}))}),
              {3}, {8, -3, 0});
  // [[2,-1,0],[-1,2,-1],[0,-1,2]] has determinant 4.
  check_close(run1("Det", {in(f32({3, 3}, {2, -1, 0, -1, 2, -1, 0, -1, 2}))}), {}, {4}, 1e-6, 1e-6);
  auto r = run_op("Det", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6}))});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("input must be [..., M, M], got [2,3]") != std::string::npos);
}

}  // namespace hpf::test
