// Reference interpreter: elementwise ops (arithmetic with broadcasting, unary maths and
// activations, comparisons, Where, Not, Clip, Cast). Expectations are computed by hand or with
// double-precision formulas written out here, never by calling the kernels' own helpers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Tensor typed(std::vector<int64_t> shape, std::vector<int64_t> v, DType t) {
  return std::move(Tensor::from_i64(std::move(shape), v, t)).value();
}
Tensor typed_f(std::vector<int64_t> shape, std::vector<float> v, DType t) {
  return std::move(Tensor::from_f32(std::move(shape), v, t)).value();
}

// check_close that also handles infinities (an infinite expectation must be matched exactly).
void check_vals(const Tensor& got, std::vector<int64_t> shape, const std::vector<float>& want,
                double atol = 1e-5, double rtol = 1e-5) {
  CHECK(got.shape() == shape);
  const auto g = got.to_f32();
  REQUIRE(g.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k])) {
      CHECK_MESSAGE(std::isnan(g[k]), "element " << k << ": got " << g[k] << ", want nan");
    } else if (std::isinf(want[k])) {
      CHECK_MESSAGE(g[k] == want[k], "element " << k << ": got " << g[k] << ", want " << want[k]);
    } else {
      CHECK_MESSAGE(std::abs(double(g[k]) - want[k]) <= atol + rtol * std::abs(double(want[k])),
                    "element " << k << ": got " << g[k] << ", want " << want[k]);
    }
  }
}

// Unary op on a 1-D input, compared against expected values.
void check_unary(const std::string& op, std::vector<float> x, std::vector<float> want,
                 Attributes attrs = {}, double tol = 1e-6) {
  INFO(op);
  const auto n = static_cast<int64_t>(x.size());
  check_vals(run1(op, {in(f32({n}, x))}, std::move(attrs)), {n}, want, tol, tol);
}

}  // namespace

// ---- binary arithmetic ------------------------------------------------------------------------

TEST_CASE("ref elementwise: Add/Sub/Mul/Div on equal shapes") {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {0.5f, -2, 4, 8});
  check_vals(run1("Add", {in(a), in(b)}), {2, 2}, {1.5f, 0, 7, 12});
  check_vals(run1("Sub", {in(a), in(b)}), {2, 2}, {0.5f, 4, -1, -4});
  check_vals(run1("Mul", {in(a), in(b)}), {2, 2}, {0.5f, -4, 12, 32});
  check_vals(run1("Div", {in(a), in(b)}), {2, 2}, {2, -1, 0.75f, 0.5f});
}

TEST_CASE("ref elementwise: float division by zero gives inf and NaN") {
  check_vals(run1("Div", {in(f32({3}, {1, -1, 0})), in(f32({3}, {0, 0, 0}))}), {3},
             {kInf, -kInf, kNaN});
}

TEST_CASE("ref elementwise: broadcasting [2,3] + [3]") {
  auto y = run1("Add", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), in(f32({3}, {10, 20, 30}))});
  check_vals(y, {2, 3}, {11, 22, 33, 14, 25, 36});
  // Either side may be the smaller one.
  auto z = run1("Sub", {in(f32({3}, {10, 20, 30})), in(f32({2, 3}, {1, 2, 3, 4, 5, 6}))});
  check_vals(z, {2, 3}, {9, 18, 27, 6, 15, 24});
}

TEST_CASE("ref elementwise: broadcasting [2,1] x [1,3] (outer product)") {
  auto y = run1("Mul", {in(f32({2, 1}, {2, 3})), in(f32({1, 3}, {1, 10, 100}))});
  check_vals(y, {2, 3}, {2, 20, 200, 3, 30, 300});
}

TEST_CASE("ref elementwise: broadcasting a scalar and size-1 dimensions") {
  SUBCASE("scalar on the right") {
    check_vals(run1("Div", {in(f32({2, 2}, {2, 4, 6, 8})), in(f32({}, {2}))}), {2, 2},
               {1, 2, 3, 4});
  }
  SUBCASE("scalar on the left, as a constant") {
    check_vals(run1("Sub", {cst(f32({}, {10})), in(f32({3}, {1, 2, 3}))}), {3}, {9, 8, 7});
  }
  SUBCASE("scalar op scalar gives a scalar") {
    check_vals(run1("Mul", {in(f32({}, {3})), in(f32({}, {-2}))}), {}, {-6});
  }
  SUBCASE("[2,1,3] + [1,4,1] -> [2,4,3]") {
    auto y =
        run1("Add", {in(f32({2, 1, 3}, {0, 1, 2, 3, 4, 5})), in(f32({1, 4, 1}, {0, 10, 20, 30}))});
    std::vector<float> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k) want.push_back(float(i * 3 + k + 10 * j));
    check_vals(y, {2, 4, 3}, want);
  }
  SUBCASE("[1,1] + [1] keeps rank 2") {
    check_vals(run1("Add", {in(f32({1, 1}, {1})), in(f32({1}, {2}))}), {1, 1}, {3});
  }
}

TEST_CASE("ref elementwise: zero-size dimensions give an empty output of the broadcast shape") {
  SUBCASE("[2,0] + [1]") {
    check_vals(run1("Add", {in(f32({2, 0}, {})), in(f32({1}, {1}))}), {2, 0}, {});
  }
  SUBCASE("[0,3] * [3]") {
    check_vals(run1("Mul", {in(f32({0, 3}, {})), in(f32({3}, {1, 2, 3}))}), {0, 3}, {});
  }
  SUBCASE("[2,1] - [0] -> [2,0] (1 broadcasts to 0)") {
    check_vals(run1("Sub", {in(f32({2, 1}, {1, 2})), in(f32({0}, {}))}), {2, 0}, {});
  }
  SUBCASE("integer Div with an empty divisor does not report division by zero") {
    check_ints(run1("Div", {in(i64({3}, {1, 2, 3})), in(i64({0, 1}, {}))}), {0, 3}, {});
  }
}

TEST_CASE("ref elementwise: incompatible broadcast names the node and both shapes") {
  auto r = run_op("Add", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), in(f32({4}, {1, 2, 3, 4}))});
  check_error(r, {"'node'", "Add", "[2,3]", "[4]", "broadcast"});
  CHECK(r.status().code() == StatusCode::invalid_argument);
}

TEST_CASE("ref elementwise: integer Add/Sub/Mul and truncating Div") {
  const Tensor a = i64({5}, {7, -7, 7, -7, 6}), b = i64({5}, {2, 2, -2, -2, 3});
  auto add = run1("Add", {in(a), in(b)});
  CHECK(add.dtype() == DType::I64);
  check_ints(add, {5}, {9, -5, 5, -9, 9});
  check_ints(run1("Sub", {in(a), in(b)}), {5}, {5, -9, 9, -5, 3});
  check_ints(run1("Mul", {in(a), in(b)}), {5}, {14, -14, -14, 14, 18});
  // Integer division truncates toward zero (C++, ONNX Runtime), not floor.
  check_ints(run1("Div", {in(a), in(b)}), {5}, {3, -3, -3, 3, 2});
}

TEST_CASE("ref elementwise: I32 Add keeps I32 and broadcasts") {
  auto y =
      run1("Add", {in(typed({2, 2}, {1, 2, 3, 4}, DType::I32)), in(typed({1}, {100}, DType::I32))});
  CHECK(y.dtype() == DType::I32);
  check_ints(y, {2, 2}, {101, 102, 103, 104});
}

TEST_CASE("ref elementwise: int64 arithmetic is exact beyond 2^53") {
  // Integer arithmetic is exact in int64: a trip through double would lose the low bits of
  // values above 2^53 ((2^53 + 1) + 1 would come out as 2^53).
  const int64_t big = (int64_t{1} << 53) + 1;
  check_ints(run1("Add", {in(i64({2}, {big, big})), in(i64({2}, {1, 0}))}), {2}, {big + 1, big});
  check_ints(run1("Sub", {in(i64({1}, {big})), in(i64({1}, {2}))}), {1}, {big - 2});
  check_ints(run1("Max", {in(i64({1}, {big})), in(i64({1}, {0}))}), {1}, {big});
}

TEST_CASE("ref elementwise: integer division by zero is an error naming the node") {
  auto r = run_op("Div", {in(i64({3}, {1, 2, 3})), in(i64({3}, {1, 0, 1}))});
  check_error(r, {"'node'", "Div", "division by zero"});
}

TEST_CASE("ref elementwise: Pow with float and integer exponents") {
  check_vals(run1("Pow", {in(f32({4}, {2, 3, 4, -2})), in(f32({4}, {3, 0.5f, -1, 2}))}), {4},
             {8, float(std::sqrt(3.0)), 0.25f, 4});
  // An integer exponent tensor (ONNX Pow allows T1 float, T2 int), broadcast from [2].
  auto y = run1("Pow", {in(f32({2, 2}, {2, 3, -2, 0.5f})), in(i64({2}, {2, 3}))});
  CHECK(y.dtype() == DType::F32);
  check_vals(y, {2, 2}, {4, 27, 4, 0.125f});
  // Negative base with a fractional exponent is NaN; 0^0 is 1.
  check_vals(run1("Pow", {in(f32({2}, {-8, 0})), in(f32({2}, {1.0f / 3, 0}))}), {2}, {kNaN, 1});
}

TEST_CASE("ref elementwise: Max/Min, variadic with broadcasting, NaN propagates") {
  check_vals(run1("Max", {in(f32({3}, {1, 5, -2})), in(f32({3}, {4, 2, -3}))}), {3}, {4, 5, -2});
  check_vals(run1("Min", {in(f32({3}, {1, 5, -2})), in(f32({3}, {4, 2, -3}))}), {3}, {1, 2, -3});
  // Three inputs of shapes [2,1], [3], [] -> [2,3].
  const Tensor a = f32({2, 1}, {0, 10}), b = f32({3}, {-1, 5, 20}), c = f32({}, {3});
  check_vals(run1("Max", {in(a), in(b), in(c)}), {2, 3}, {3, 5, 20, 10, 10, 20});
  check_vals(run1("Min", {in(a), in(b), in(c)}), {2, 3}, {-1, 0, 0, -1, 3, 3});
  // A single input is the identity.
  check_vals(run1("Max", {in(f32({2}, {1, -1}))}), {2}, {1, -1});
  // NaN in any input gives NaN, whatever its position.
  check_vals(run1("Max", {in(f32({3}, {kNaN, 1, 2})), in(f32({3}, {0, kNaN, 1})),
                          in(f32({3}, {0, 0, 0}))}),
             {3}, {kNaN, kNaN, 2});
  check_vals(run1("Min", {in(f32({2}, {kNaN, 1})), in(f32({2}, {0, kNaN}))}), {2}, {kNaN, kNaN});
  // Integers.
  check_ints(run1("Max", {in(i64({3}, {1, -5, 7})), in(i64({3}, {2, -6, 7}))}), {3}, {2, -5, 7});
}

// ---- unary maths and activations -------------------------------------------------------------

TEST_CASE("ref elementwise: Sqrt/Neg/Abs/Exp/Log") {
  check_unary("Sqrt", {0, 1, 2, 9, -1}, {0, 1, 1.4142135623730951f, 3, kNaN});
  check_unary("Neg", {1, -2.5f, 0}, {-1, 2.5f, 0});
  check_unary("Abs", {1, -2.5f, 0, -kInf}, {1, 2.5f, 0, kInf});
  check_unary("Exp", {0, 1, -1, 2, -1000},
              {1, 2.718281828459045f, 0.36787944117144233f, 7.38905609893065f, 0});
  check_unary("Log", {1, 2, 0.5f, 0, -1},
              {0, 0.6931471805599453f, -0.6931471805599453f, -kInf, kNaN});
  // NaN passes through all of them.
  for (const char* op : {"Sqrt", "Neg", "Abs", "Exp", "Log"}) check_unary(op, {kNaN}, {kNaN});
  // Integer Neg/Abs keep the dtype.
  check_ints(run1("Neg", {in(i64({2}, {3, -4}))}), {2}, {-3, 4});
  check_ints(run1("Abs", {in(i64({2}, {3, -4}))}), {2}, {3, 4});
}

TEST_CASE("ref elementwise: Erf/Tanh/Sigmoid") {
  check_unary(
      "Erf", {-2, -0.5f, 0, 1, 3},
      {-0.9953222650189527f, -0.5204998778130465f, 0, 0.8427007929497149f, 0.9999779095030014f});
  check_unary("Tanh", {-1, 0, 0.5f, 2, 100},
              {-0.7615941559557649f, 0, 0.46211715726000974f, 0.9640275800758169f, 1});
  check_unary("Sigmoid", {-2, 0, 1, 3, -200, 200},
              {0.11920292202211755f, 0.5f, 0.7310585786300049f, 0.9525741268224334f, 0, 1});
  for (const char* op : {"Erf", "Tanh", "Sigmoid"}) check_unary(op, {kNaN}, {kNaN});
}

TEST_CASE("ref elementwise: Relu and LeakyRelu") {
  check_unary("Relu", {-3, -0.0f, 0, 2.5f, kNaN}, {0, 0, 0, 2.5f, kNaN});
  check_ints(run1("Relu", {in(i64({3}, {-3, 0, 4}))}), {3}, {0, 0, 4});
  check_unary("LeakyRelu", {-3, 0, 2}, {-0.03f, 0, 2});  // default alpha 0.01
  check_unary("LeakyRelu", {-3, 0, 2, kNaN}, {-0.6f, 0, 2, kNaN}, {{"alpha", 0.2f}});
}

TEST_CASE("ref elementwise: HardSigmoid with default and explicit alpha/beta") {
  // y = max(0, min(1, alpha * x + beta)); defaults alpha 0.2, beta 0.5.
  auto hs = [](double x, double a, double b) {
    return float(std::max(0.0, std::min(1.0, a * x + b)));
  };
  const std::vector<float> x = {-5, -1, 0, 1, 2.5f, 4};
  std::vector<float> want1, want2;
  for (float v : x) {
    want1.push_back(hs(v, 0.2, 0.5));
    want2.push_back(hs(v, 0.5, 0.25));
  }
  check_unary("HardSigmoid", x, want1);
  check_unary("HardSigmoid", x, want2, {{"alpha", 0.5f}, {"beta", 0.25f}});
}

TEST_CASE("ref elementwise: HardSigmoid propagates NaN") {
  // NaN propagates, as in the ONNX reference and ONNX Runtime (std::min(1.0, NaN) would give 1).
  check_unary("HardSigmoid", {kNaN}, {kNaN});
}

TEST_CASE("ref elementwise: HardSwish") {
  // y = x * max(0, min(1, x/6 + 1/2)).
  check_unary("HardSwish", {-4, -3, -1, 0, 1, 3, 5},
              {0, 0, float(-1 * (1.0 / 3)), 0, float(2.0 / 3), 3, 5});
  check_unary("HardSwish", {kNaN}, {kNaN});
}

TEST_CASE("ref elementwise: Gelu exact and tanh approximation") {
  const std::vector<float> x = {-2, -1, -0.5f, 0, 0.5f, 1, 2, 3};
  check_unary("Gelu", x,
              {-0.04550026389635842f, -0.15865525393145707f, -0.15426876936299344f, 0,
               0.34573123063700656f, 0.8413447460685429f, 1.9544997361036416f, 2.99595030590511f});
  check_unary("Gelu", x,
              {-0.04550026389635842f, -0.15865525393145707f, -0.15426876936299344f, 0,
               0.34573123063700656f, 0.8413447460685429f, 1.9544997361036416f, 2.99595030590511f},
              {{"approximate", std::string("none")}});
  check_unary("Gelu", x,
              {-0.04540230591222494f, -0.15880800939172324f, -0.15428599017485606f, 0,
               0.34571400982514394f, 0.8411919906082768f, 1.954597694087775f, 2.996362607918227f},
              {{"approximate", std::string("tanh")}});
  check_unary("Gelu", {kNaN}, {kNaN});
  auto bad = run_op("Gelu", {in(f32({1}, {1}))}, {{"approximate", std::string("fast")}});
  check_error(bad, {"'node'", "approximate", "fast"});
}

TEST_CASE("ref elementwise: Identity") {
  check_unary("Identity", {1.5f, -0.0f, kInf, kNaN}, {1.5f, 0, kInf, kNaN});
  auto y = run1("Identity", {in(typed_f({2}, {1.5f, -2}, DType::F16))});
  CHECK(y.dtype() == DType::F16);
  check_vals(y, {2}, {1.5f, -2});
}

TEST_CASE("ref elementwise: Identity keeps E5M2 infinities") {
  // The interpreter rounds every kernel output to its dtype; for E5M2 that must keep +-inf
  // (a saturating rounding would turn it into +-57344). Identity returns its input unchanged.
  const std::vector<float> v = {kInf, -kInf, 2};
  auto x = std::move(Tensor::from_f32({3}, v, DType::F8E5M2, Overflow::propagate)).value();
  REQUIRE(x.to_f32()[0] == kInf);  // the input really holds inf
  auto y = run1("Identity", {in(x)});
  CHECK(y.dtype() == DType::F8E5M2);
  check_vals(y, {3}, {kInf, -kInf, 2});
}

// ---- Clip -------------------------------------------------------------------------------------

TEST_CASE("ref elementwise: Clip with attributes and with inputs") {
  const Tensor x = f32({5}, {-3, -1, 0.5f, 2, kNaN});
  SUBCASE("attributes (opset < 11)") {
    check_vals(run1("Clip", {in(x)}, {{"min", -1.5f}, {"max", 1.0f}}), {5},
               {-1.5f, -1, 0.5f, 1, kNaN});
    check_vals(run1("Clip", {in(x)}, {{"max", 0.0f}}), {5}, {-3, -1, 0, 0, kNaN});
  }
  SUBCASE("inputs: both bounds") {
    check_vals(run1("Clip", {in(x), cst(f32({}, {-1.5f})), cst(f32({}, {1}))}), {5},
               {-1.5f, -1, 0.5f, 1, kNaN});
  }
  SUBCASE("inputs: min only") {
    check_vals(run1("Clip", {in(x), cst(f32({}, {0}))}), {5}, {0, 0, 0.5f, 2, kNaN});
  }
  SUBCASE("inputs: max only (min omitted)") {
    check_vals(run1("Clip", {in(x), none(), in(f32({}, {0}))}), {5}, {-3, -1, 0, 0, kNaN});
  }
  SUBCASE("no bounds is the identity") {
    check_vals(run1("Clip", {in(x)}), {5}, {-3, -1, 0.5f, 2, kNaN});
  }
  SUBCASE("integers") {
    check_ints(run1("Clip", {in(i64({4}, {-7, 0, 3, 9})), cst(i64({}, {-2})), cst(i64({}, {5}))}),
               {4}, {-2, 0, 3, 5});
  }
  SUBCASE("a non-scalar bound is an error") {
    check_error(run_op("Clip", {in(x), in(f32({2}, {0, 1}))}), {"'node'", "Clip", "scalar"});
  }
}

// ---- comparisons, Where, Not ------------------------------------------------------------------

TEST_CASE("ref elementwise: Equal/Less/Greater give BOOL with broadcasting") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3}, {1, 5, 7});
  auto eq = run1("Equal", {in(a), in(b)});
  CHECK(eq.dtype() == DType::BOOL);
  check_ints(eq, {2, 3}, {1, 0, 0, 0, 1, 0});
  auto lt = run1("Less", {in(a), in(b)});
  CHECK(lt.dtype() == DType::BOOL);
  check_ints(lt, {2, 3}, {0, 1, 1, 0, 0, 1});
  auto gt = run1("Greater", {in(a), in(b)});
  CHECK(gt.dtype() == DType::BOOL);
  check_ints(gt, {2, 3}, {0, 0, 0, 1, 0, 0});
  // NaN compares false everywhere.
  const Tensor n = f32({2}, {kNaN, 1}), m = f32({2}, {kNaN, kNaN});
  check_ints(run1("Equal", {in(n), in(m)}), {2}, {0, 0});
  check_ints(run1("Less", {in(n), in(m)}), {2}, {0, 0});
  check_ints(run1("Greater", {in(n), in(m)}), {2}, {0, 0});
  // Integers, exactly.
  const int64_t big = (int64_t{1} << 53) + 1;
  check_ints(run1("Equal", {in(i64({3}, {1, 2, big})), in(i64({3}, {1, 3, big - 1}))}), {3},
             {1, 0, 0});
  check_ints(run1("Greater", {in(i64({2}, {big, -1})), in(i64({}, {big - 1}))}), {2}, {1, 0});
}

TEST_CASE("ref elementwise: Where with broadcasting") {
  // cond [2,1], x [1,3], y scalar -> [2,3].
  const Tensor cond = typed({2, 1}, {1, 0}, DType::BOOL);
  auto y = run1("Where", {in(cond), in(f32({1, 3}, {1, 2, 3})), in(f32({}, {-1}))});
  check_vals(y, {2, 3}, {1, 2, 3, -1, -1, -1});
  // cond [3] against x [2,3] and y [2,1].
  const Tensor c3 = typed({3}, {1, 0, 1}, DType::BOOL);
  auto z = run1("Where", {in(c3), in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), in(f32({2, 1}, {10, 20}))});
  check_vals(z, {2, 3}, {1, 10, 3, 4, 20, 6});
  // Integer branches.
  auto w = run1("Where", {in(c3), in(i64({3}, {1, 2, 3})), in(i64({3}, {-1, -2, -3}))});
  CHECK(w.dtype() == DType::I64);
  check_ints(w, {3}, {1, -2, 3});
}

TEST_CASE("ref elementwise: Not") {
  auto y = run1("Not", {in(typed({2, 2}, {1, 0, 0, 1}, DType::BOOL))});
  CHECK(y.dtype() == DType::BOOL);
  check_ints(y, {2, 2}, {0, 1, 1, 0});
}

// ---- Cast -------------------------------------------------------------------------------------

namespace {
Tensor cast(const Tensor& x, int64_t to, std::optional<int64_t> saturate = std::nullopt) {
  Attributes a{{"to", to}};
  if (saturate) a["saturate"] = *saturate;
  return run1("Cast", {in(x)}, std::move(a));
}
// Exact comparison of float outputs (bit-for-bit values, NaN matches NaN).
void check_exact(const Tensor& got, DType t, const std::vector<float>& want) {
  CHECK(got.dtype() == t);
  check_vals(got, {static_cast<int64_t>(want.size())}, want, 0, 0);
}
}  // namespace

TEST_CASE("ref elementwise: Cast f32 -> f16 rounds to nearest even, overflow to inf") {
  const float ulp = 1.0f / 1024;  // f16 spacing in [1,2)
  auto y = cast(f32({6}, {1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp * 0.75f, 65504, 65520, -1e6f}), 10);
  check_exact(y, DType::F16, {1, 1 + 2 * ulp, 1 + ulp, 65504, kInf, -kInf});
  // saturate does not apply to F16: still inf.
  check_exact(cast(f32({1}, {1e6f}), 10, 1), DType::F16, {kInf});
  // Subnormal f16: 2^-24 is kept, 2^-26 rounds to 0.
  check_exact(cast(f32({2}, {std::ldexp(1.0f, -24), std::ldexp(1.0f, -26)}), 10), DType::F16,
              {std::ldexp(1.0f, -24), 0});
}

TEST_CASE("ref elementwise: Cast f32 -> bf16 rounds to nearest even") {
  const float ulp = 1.0f / 128;  // bf16 spacing in [1,2)
  // 3.4e38 lies past the midpoint between the bf16 maximum (2 - 2^-7) * 2^127 and 2^128: inf.
  auto y = cast(f32({5}, {1 + ulp / 2, 1 + 3 * ulp / 2, -1 - ulp * 0.25f, 3.4e38f, kNaN}), 16);
  check_exact(y, DType::BF16, {1, 1 + 2 * ulp, -1, kInf, kNaN});
}

TEST_CASE("ref elementwise: Cast f32 -> f8e4m3fn: rounding, saturate=1 and saturate=0") {
  // E4M3: spacing 0.125 in [1,2), max 448, no inf.
  check_exact(cast(f32({4}, {1.0625f, 1.1875f, -2.3f, 0.0f}), 17), DType::F8E4M3,
              {1, 1.25f, -2.25f, 0});
  // saturate=1 (default): out of range and inf clamp to +-448.
  check_exact(cast(f32({4}, {1000, -1000, kInf, -kInf}), 17), DType::F8E4M3,
              {448, -448, 448, -448});
  check_exact(cast(f32({2}, {1000, -1000}), 17, 1), DType::F8E4M3, {448, -448});
  // saturate=0: overflow becomes NaN (E4M3FN has no inf).
  check_exact(cast(f32({4}, {1000, -1000, kInf, 448}), 17, 0), DType::F8E4M3,
              {kNaN, kNaN, kNaN, 448});
}

TEST_CASE("ref elementwise: Cast f32 -> f8e5m2: rounding, saturate=1 and saturate=0") {
  // E5M2: spacing 0.25 in [1,2), max 57344, has inf.
  check_exact(cast(f32({3}, {1.125f, 1.375f, -3.3f}), 19), DType::F8E5M2, {1, 1.5f, -3.5f});
  check_exact(cast(f32({4}, {1e6f, -1e6f, kInf, -kInf}), 19), DType::F8E5M2,
              {57344, -57344, 57344, -57344});
  check_exact(cast(f32({2}, {57344, -kNaN}), 19, 0), DType::F8E5M2, {57344, kNaN});
}

TEST_CASE("ref elementwise: Cast f32 -> f8e5m2 with saturate=0 overflows to inf") {
  // ONNX Cast with saturate=0 gives +-inf for values past the E5M2 range and for +-inf inputs,
  // and the interpreter's rounding of kernel outputs must not saturate them afterwards.
  check_exact(cast(f32({3}, {1e6f, -1e6f, kInf}), 19, 0), DType::F8E5M2, {kInf, -kInf, kInf});
}

TEST_CASE("ref elementwise: Cast from narrow floats back to f32 is exact") {
  check_exact(cast(typed_f({3}, {1.5f, -0.0999755859375f, 65504}, DType::F16), 1), DType::F32,
              {1.5f, -0.0999755859375f, 65504});
  check_exact(cast(typed_f({2}, {448, -0.015625f}, DType::F8E4M3), 1), DType::F32,
              {448, -0.015625f});
  // f16 -> e4m3 rounds once more (saturating by default).
  check_exact(cast(typed_f({2}, {1.0625f, 1000}, DType::F16), 17), DType::F8E4M3, {1, 448});
}

TEST_CASE("ref elementwise: Cast float -> int truncates toward zero") {
  const Tensor x = f32({6}, {2.7f, -2.7f, 0.5f, -0.5f, 3.0f, 126.9f});
  auto y32 = cast(x, 6);
  CHECK(y32.dtype() == DType::I32);
  check_ints(y32, {6}, {2, -2, 0, 0, 3, 126});
  auto y64 = cast(x, 7);
  CHECK(y64.dtype() == DType::I64);
  check_ints(y64, {6}, {2, -2, 0, 0, 3, 126});
  auto y8 = cast(x, 3);
  CHECK(y8.dtype() == DType::I8);
  check_ints(y8, {6}, {2, -2, 0, 0, 3, 126});
  auto yu8 = cast(f32({3}, {0.9f, 254.99f, 7.5f}), 2);
  CHECK(yu8.dtype() == DType::U8);
  check_ints(yu8, {3}, {0, 254, 7});
}

TEST_CASE("ref elementwise: Cast int -> float") {
  auto y = cast(i64({4}, {0, -3, 16777216, 16777217}), 1);
  // 16777217 = 2^24 + 1 is a tie between 2^24 and 2^24 + 2: even mantissa wins.
  check_exact(y, DType::F32, {0, -3, 16777216, 16777216});
  check_exact(cast(typed({2}, {-128, 127}, DType::I8), 1), DType::F32, {-128, 127});
  check_exact(cast(i64({2}, {2049, 3}), 10), DType::F16, {2048, 3});  // f16 spacing 2 at 2048
}

TEST_CASE("ref elementwise: Cast int64 -> f32 rounds once") {
  // int64 -> float must round once: through double it would round twice for |v| > 2^53. v = 2^60 + 2^36 + 1 lies just above the midpoint between the floats
  // 2^60 and 2^60 + 2^37, so the correctly rounded float (static_cast<float>(int64_t), as ONNX
  // Runtime and numpy's astype do it) is 2^60 + 2^37; via double it first becomes the exact
  // midpoint 2^60 + 2^36 and then rounds to even, 2^60.
  const int64_t v = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  check_exact(cast(i64({1}, {v}), 1), DType::F32, {std::ldexp(1.0f, 60) + std::ldexp(1.0f, 37)});
}

TEST_CASE("ref elementwise: Cast to and from BOOL") {
  auto b = cast(i64({4}, {0, -3, 5, 1}), 9);
  CHECK(b.dtype() == DType::BOOL);
  check_ints(b, {4}, {0, 1, 1, 1});
  auto bf = cast(f32({4}, {0.0f, -0.0f, -0.5f, kNaN}), 9);
  CHECK(bf.dtype() == DType::BOOL);
  check_ints(bf, {4}, {0, 0, 1, 1});
  check_exact(cast(typed({3}, {1, 0, 1}, DType::BOOL), 1), DType::F32, {1, 0, 1});
  auto bi = cast(typed({2}, {1, 0}, DType::BOOL), 7);
  CHECK(bi.dtype() == DType::I64);
  check_ints(bi, {2}, {1, 0});
}

TEST_CASE("ref elementwise: Cast int -> int wraps, keeps shape") {
  auto y = run1("Cast", {in(i64({2, 2}, {300, -129, 5, 255}))}, {{"to", int64_t{3}}});
  CHECK(y.dtype() == DType::I8);
  check_ints(y, {2, 2}, {44, 127, 5, -1});
}

TEST_CASE("ref elementwise: Cast to an unsupported type is an error") {
  auto r = run_op("Cast", {in(f32({1}, {1}))}, {{"to", int64_t{11}}});  // DOUBLE
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("11") != std::string::npos);
}

// ---- more unary maths and activations, logical ops, Mod, Size, Dropout ------------------------

TEST_CASE("ref elementwise: Sin/Cos/Ceil/Floor/Reciprocal") {
  check_unary("Sin", {0.0f, 1.5707963705062866f, -0.5f}, {0.0f, 1.0f, -0.47942554f});
  check_unary("Cos", {0.0f, 3.1415927410125732f, 0.5f}, {1.0f, -1.0f, 0.87758256f});
  check_unary("Ceil", {-1.5f, 1.2f, 2.0f, kNaN}, {-1.0f, 2.0f, 2.0f, kNaN});
  check_unary("Floor", {-1.5f, 1.2f, 2.0f, -kInf}, {-2.0f, 1.0f, 2.0f, -kInf});
  check_unary("Reciprocal", {2.0f, -4.0f, 0.0f}, {0.5f, -0.25f, kInf});
}

TEST_CASE("ref elementwise: Round halves to even") {
  check_unary("Round", {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f},
              {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 2.0f, 3.0f, -3.0f});
}

TEST_CASE("ref elementwise: Sign on floats and integers") {
  check_unary("Sign", {-3.0f, 0.0f, 2.5f, kNaN}, {-1.0f, 0.0f, 1.0f, kNaN});
  auto y = run1("Sign", {in(i64({3}, {-5, 0, 7}))});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {3}, {-1, 0, 1});
}

TEST_CASE("ref elementwise: Softplus/Softsign/Mish") {
  // softplus(x) = log(1 + e^x); stays finite and equal to x for large x.
  check_unary("Softplus", {0.0f, 1.0f, -1.0f, 100.0f}, {0.69314718f, 1.31326169f, 0.31326169f, 100.0f});
  check_unary("Softsign", {1.0f, -3.0f, 0.0f}, {0.5f, -0.75f, 0.0f});
  // mish(1) = tanh(log(1 + e)).
  check_unary("Mish", {0.0f, 1.0f, -100.0f}, {0.0f, 0.86509839f, 0.0f});
}

TEST_CASE("ref elementwise: Elu/Selu/ThresholdedRelu with default and explicit attributes") {
  check_unary("Elu", {-1.0f, 0.0f, 2.0f}, {-0.63212056f, 0.0f, 2.0f});
  check_unary("Elu", {-1.0f, 2.0f}, {-1.26424112f, 2.0f}, {{"alpha", 2.0f}});
  // gamma * alpha * (e^-1 - 1) with the ONNX defaults.
  check_unary("Selu", {-1.0f, 0.0f, 2.0f}, {-1.11133074f, 0.0f, 2.10140204f});
  check_unary("Selu", {-1.0f, 2.0f}, {-1.26424112f, 4.0f}, {{"alpha", 1.0f}, {"gamma", 2.0f}}, 1e-5);
  check_unary("ThresholdedRelu", {0.5f, 1.0f, 1.5f, -2.0f}, {0.0f, 0.0f, 1.5f, 0.0f});
  check_unary("ThresholdedRelu", {0.5f, 1.0f}, {0.5f, 1.0f}, {{"alpha", 0.25f}});
}

TEST_CASE("ref elementwise: IsNaN and IsInf give BOOL") {
  auto n = run1("IsNaN", {in(f32({3}, {1.0f, kNaN, kInf}))});
  CHECK(n.dtype() == DType::BOOL);
  check_ints(n, {3}, {0, 1, 0});
  const Tensor x = f32({4}, {1.0f, kInf, -kInf, kNaN});
  auto both = run1("IsInf", {in(x)});
  CHECK(both.dtype() == DType::BOOL);
  check_ints(both, {4}, {0, 1, 1, 0});
  check_ints(run1("IsInf", {in(x)}, {{"detect_negative", int64_t{0}}}), {4}, {0, 1, 0, 0});
  check_ints(run1("IsInf", {in(x)}, {{"detect_positive", int64_t{0}}}), {4}, {0, 0, 1, 0});
}

TEST_CASE("ref elementwise: And/Or/Xor broadcast BOOL") {
  const Tensor a = typed({2, 2}, {1, 1, 0, 0}, DType::BOOL), b = typed({2}, {1, 0}, DType::BOOL);
  auto y = run1("And", {in(a), in(b)});
  CHECK(y.dtype() == DType::BOOL);
  check_ints(y, {2, 2}, {1, 0, 0, 0});
  check_ints(run1("Or", {in(a), in(b)}), {2, 2}, {1, 1, 1, 0});
  check_ints(run1("Xor", {in(a), in(b)}), {2, 2}, {0, 1, 1, 0});
}

TEST_CASE("ref elementwise: Mod, Python-style and C fmod") {
  const Tensor a = i64({4}, {-4, 7, 5, -7}), b = i64({4}, {3, -3, 3, -3});
  // fmod=0: the result takes the sign of the divisor.
  check_ints(run1("Mod", {in(a), in(b)}), {4}, {2, -2, 2, -1});
  // fmod=1: the sign of the dividend.
  check_ints(run1("Mod", {in(a), in(b)}, {{"fmod", int64_t{1}}}), {4}, {-1, 1, 2, -1});
  const Tensor fa = f32({2}, {-4.5f, 7.5f}), fb = f32({2}, {2.0f, -2.0f});
  check_vals(run1("Mod", {in(fa), in(fb)}, {{"fmod", int64_t{1}}}), {2}, {-0.5f, 1.5f});
  check_vals(run1("Mod", {in(fa), in(fb)}), {2}, {1.5f, -0.5f});
  // Broadcasting, and integer division by zero is an error.
  check_ints(run1("Mod", {in(i64({3}, {4, 5, 6})), in(i64({}, {4}))}), {3}, {0, 1, 2});
  check_error(run_op("Mod", {in(i64({1}, {4})), in(i64({1}, {0}))}), {"'node'", "division by zero"});
}

TEST_CASE("ref elementwise: Size gives an I64 scalar") {
  auto y = run1("Size", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6}))});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {}, {6});
  check_ints(run1("Size", {in(f32({2, 0}, {}))}), {}, {0});
}

TEST_CASE("ref elementwise: Dropout in inference passes the input through") {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  auto r = run_op("Dropout", {in(x), cst(f32({}, {0.5f}))}, {}, 2);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {2, 2}, {1, -2, 3, 4});
  CHECK((*r)[1].dtype() == DType::BOOL);
  check_ints((*r)[1], {2, 2}, {1, 1, 1, 1});
  check_vals(run1("Dropout", {in(x)}), {2, 2}, {1, -2, 3, 4});
  // training_mode=false is inference; true is not supported.
  const Tensor no = typed({}, {0}, DType::BOOL), yes = typed({}, {1}, DType::BOOL);
  check_vals(run1("Dropout", {in(x), cst(f32({}, {0.5f})), cst(no)}), {2, 2}, {1, -2, 3, 4});
  auto t = run_op("Dropout", {in(x), cst(f32({}, {0.5f})), cst(yes)});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("training_mode") != std::string::npos);
}

TEST_CASE("ref elementwise: Tan/Asin/Acos/Atan/Sinh/Cosh/Asinh/Acosh/Atanh") {
  check_unary("Tan", {0, 0.78539816f}, {0, 1});
  check_unary("Asin", {0.5f, 1, 2}, {0.52359878f, 1.57079633f, NAN});
  check_unary("Acos", {0.5f, 1}, {1.04719755f, 0});
  check_unary("Atan", {1, 0}, {0.78539816f, 0});
  check_unary("Sinh", {1, 0}, {1.17520119f, 0});
  check_unary("Cosh", {1, 0}, {1.54308063f, 1});
  check_unary("Asinh", {0, 1}, {0, 0.88137359f});
  check_unary("Acosh", {1, 2}, {0, 1.31695790f});
  check_unary("Atanh", {0, 0.5f, 1}, {0, 0.54930614f, INFINITY});
}

TEST_CASE("ref elementwise: CastLike takes input 1's format") {
  auto y = run1("CastLike", {in(f32({3}, {1.7f, -2.5f, 0})), in(i64({1}, {0}))});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {3}, {1, -2, 0});
  auto z = run1("CastLike", {in(i64({2}, {3, -4})), in(f32({}, {0}))});
  CHECK(z.dtype() == DType::F32);
  check_vals(z, {2}, {3, -4});
  auto b = run1("CastLike", {in(f32({2}, {0.5f, 0})), in(typed({}, {0}, DType::BOOL))});
  CHECK(b.dtype() == DType::BOOL);
  check_ints(b, {2}, {1, 0});
}

TEST_CASE("ref elementwise: Sum and Mean") {
  const Tensor a = f32({2}, {1, 2}), b = f32({1}, {10}), c = f32({2}, {100, 200});
  check_close(run1("Sum", {in(a), in(b), in(c)}), {2}, {111, 212});
  check_close(run1("Mean", {in(a), in(b), in(c)}), {2}, {37, 212.0f / 3});
  check_close(run1("Sum", {in(a)}), {2}, {1, 2});
  check_ints(run1("Sum", {in(i64({2}, {1, 2})), in(i64({}, {5}))}), {2}, {6, 7});
}

// ---- Shrink, Celu, PRelu, integer-base Pow, training Dropout with ratio 0 ----------------------

TEST_CASE("ref elementwise: Shrink and Celu") {
  // Hard shrink (bias 0): |x| <= lambd -> 0; soft shrink moves the rest toward 0 by bias.
  check_unary("Shrink", {-2, -1.5f, 0, 1.5f, 2}, {-2, 0, 0, 0, 2}, {{"lambd", 1.5f}});
  check_unary("Shrink", {-2, -1.5f, 0, 1.5f, 2}, {-0.5f, 0, 0, 0, 0.5f}, {{"lambd", 1.5f}, {"bias", 1.5f}});
  // Default lambd 0.5.
  check_unary("Shrink", {-0.5f, 0.75f}, {0, 0.75f});
  // Celu(alpha 2): x for x >= 0, 2 (exp(x / 2) - 1) below.
  check_unary("Celu", {-2, 0, 3}, {float(2 * (std::exp(-1.0) - 1)), 0, 3}, {{"alpha", 2.0f}});
}

TEST_CASE("ref elementwise: PRelu broadcasts the slope to X") {
  const Tensor x = f32({2, 3}, {-1, 2, -3, 4, -5, -6});
  check_vals(run1("PRelu", {in(x), in(f32({3}, {0.5f, 2, 0.25f}))}), {2, 3}, {-0.5f, 2, -0.75f, 4, -10, -1.5f});
  check_vals(run1("PRelu", {in(x), in(f32({2, 1}, {0.1f, 1}))}), {2, 3}, {-0.1f, 2, -0.3f, 4, -5, -6});
  // The slope may not grow X.
  check_error(run_op("PRelu", {in(f32({3}, {1, 2, 3})), in(f32({2, 3}, {1, 1, 1, 1, 1, 1}))}), {"slope", "X"});
}

TEST_CASE("ref elementwise: Pow with an integer base keeps the base's type") {
  // int ^ int is exact, wrapping like the hardware; 2^-1 truncates to 0.
  auto y = run1("Pow", {in(i64({4}, {2, -3, 2, 3})), in(i64({4}, {10, 3, -1, 40}))});
  CHECK(y.dtype() == DType::I64);
  // 3^40 = 12157665459056928801 exceeds INT64_MAX and wraps to 3^40 - 2^64.
  check_ints(y, {4}, {1024, -27, 0, -6289078614652622815LL});
  // int32 base wraps at 32 bits: 3^21 = 10460353203 -> 10460353203 - 2^33.
  check_ints(run1("Pow", {in(typed({1}, {3}, DType::I32)), in(typed({1}, {21}, DType::I32))}), {1},
             {10460353203LL - 8589934592LL});
  // int ^ float truncates the real power toward zero.
  auto z = run1("Pow", {in(typed({3}, {2, 3, -8}, DType::I32)), in(f32({3}, {0.5f, 2.5f, 1}))});
  CHECK(z.dtype() == DType::I32);
  check_ints(z, {3}, {1, 15, -8});
}

TEST_CASE("ref elementwise: Dropout in training mode is the identity for ratio 0 only") {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  const Tensor yes = typed({}, {1}, DType::BOOL);
  auto r = run_op("Dropout", {in(x), in(f32({}, {0})), in(yes)}, {}, 2);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_vals((*r)[0], {2, 2}, {1, -2, 3, 4});
  check_ints((*r)[1], {2, 2}, {1, 1, 1, 1});
  // A non-zero ratio draws a random mask: unsupported, saying why (also when only known at run).
  auto t = run_op("Dropout", {in(x), in(f32({}, {0.25f})), in(yes)});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::unsupported);
  CHECK(t.status().message().find("random mask") != std::string::npos);
}

// ---- GreaterOrEqual, LessOrEqual, BitShift
// -------------------------------------------------------

TEST_CASE("ref elementwise: GreaterOrEqual and LessOrEqual broadcast, NaN compares false") {
  const Tensor a = f32({2, 2}, {1, 2, kNaN, 4}), b = f32({2}, {2, 2});
  check_ints(run1("GreaterOrEqual", {in(a), in(b)}), {2, 2}, {0, 1, 0, 1});
  check_ints(run1("LessOrEqual", {in(a), in(b)}), {2, 2}, {1, 1, 0, 0});
  const Tensor big = i64({2}, {(int64_t{1} << 53) + 1, 3});
  check_ints(run1("GreaterOrEqual", {in(big), in(i64({2}, {int64_t{1} << 53, 3}))}), {2}, {1, 1});
  check_ints(run1("LessOrEqual", {in(big), in(i64({2}, {int64_t{1} << 53, 3}))}), {2}, {0, 1});
}

TEST_CASE("ref elementwise: BitShift on u8 wraps left shifts, shifts by 8 or more give 0") {
  const Tensor x = typed({4}, {16, 4, 200, 255}, DType::U8);
  const Attributes left = {{"direction", std::string("LEFT")}},
                   right = {{"direction", std::string("RIGHT")}};
  check_ints(run1("BitShift", {in(x), in(typed({4}, {1, 2, 1, 8}, DType::U8))}, left), {4},
             {32, 16, 144, 0});
  check_ints(run1("BitShift", {in(x), in(typed({4}, {1, 2, 3, 9}, DType::U8))}, right), {4},
             {8, 1, 25, 0});
  check_ints(run1("BitShift", {in(x), in(typed({}, {1}, DType::U8))}, right), {4},
             {8, 2, 100, 127});
  check_error(run_op("BitShift", {in(i64({1}, {1})), in(i64({1}, {1}))}, left),
              {"must be unsigned integers"});
  check_error(run_op("BitShift", {in(x), in(x)}, {{"direction", std::string("UP")}}),
              {"direction must be 'LEFT' or 'RIGHT'"});
}

}  // namespace hpf::test
