// Reference interpreter: QuantizeLinear and DequantizeLinear (ONNX, per tensor and per axis).
// q = saturate(round_half_even(x / scale) + zero_point); x' = (q - zero_point) * scale.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

Tensor typed(std::vector<int64_t> shape, std::vector<int64_t> v, DType t) {
  return std::move(Tensor::from_i64(std::move(shape), v, t)).value();
}
Tensor u8(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return typed(std::move(shape), std::move(v), DType::U8);
}
Tensor i8(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return typed(std::move(shape), std::move(v), DType::I8);
}

}  // namespace

// ---- QuantizeLinear ---------------------------------------------------------------------------

TEST_CASE("ref quantize: QuantizeLinear per tensor to u8 without a zero point") {
  // No zero point: U8 output, zero point 0.
  auto y = run1("QuantizeLinear",
                {in(f32({7}, {0, 1, 2.5f, 3.5f, -1, 300, 254.5f})), cst(f32({}, {1}))});
  CHECK(y.dtype() == DType::U8);
  // Ties to even: 2.5 -> 2, 3.5 -> 4, 254.5 -> 254; -1 saturates to 0, 300 to 255.
  check_ints(y, {7}, {0, 1, 2, 4, 0, 255, 254});
  // The division happens before rounding: 1.25 / 0.5 = 2.5 -> 2, 1.75 / 0.5 = 3.5 -> 4.
  check_ints(
      run1("QuantizeLinear", {in(f32({4}, {1.25f, 1.75f, 0.2f, 0.3f})), in(f32({1}, {0.5f}))}), {4},
      {2, 4, 0, 1});
}

TEST_CASE("ref quantize: QuantizeLinear per tensor to i8 with a zero point") {
  // scale 0.5, zero point -10: q = round(2x) - 10.
  const Tensor x = f32({8}, {0, 1, -1, 1.25f, -1.25f, -1.75f, 100, -100});
  auto y = run1("QuantizeLinear", {in(x), cst(f32({}, {0.5f})), cst(i8({}, {-10}))});
  CHECK(y.dtype() == DType::I8);
  // 2.5 -> 2, -2.5 -> -2, -3.5 -> -4 (ties to even, also below zero); 190 -> 127, -210 -> -128.
  check_ints(y, {8}, {-10, -8, -12, -8, -12, -14, 127, -128});
}

TEST_CASE("ref quantize: QuantizeLinear to u8 with a zero point saturates at both ends") {
  // scale 0.5, zero point 128: q = round(2x) + 128, clamped to [0, 255].
  auto y = run1("QuantizeLinear", {in(f32({6}, {-64, -65, 63.5f, 64, 0, -63.75f})),
                                   in(f32({}, {0.5f})), in(u8({}, {128}))});
  CHECK(y.dtype() == DType::U8);
  // -63.75 * 2 = -127.5 -> -128 (even) -> 0.
  check_ints(y, {6}, {0, 0, 255, 255, 128, 0});
  // Zero point 255: everything at or above zero saturates.
  check_ints(
      run1("QuantizeLinear", {in(f32({3}, {0, 1, -0.6f})), in(f32({}, {1})), in(u8({1}, {255}))}),
      {3}, {255, 255, 254});
}

TEST_CASE("ref quantize: QuantizeLinear per axis") {
  SUBCASE("axis 0") {
    auto y =
        run1("QuantizeLinear",
             {in(f32({2, 3}, {1, 2, 3, 1, 2, 3})), cst(f32({2}, {1, 0.5f})), cst(u8({2}, {0, 10}))},
             {{"axis", int64_t{0}}});
    check_ints(y, {2, 3}, {1, 2, 3, 12, 14, 16});
  }
  SUBCASE("axis 1 (the default) and axis -1") {
    const Tensor x = f32({2, 3}, {4, 4, 4, 8, 8, 8});
    const Tensor s = f32({3}, {1, 2, 4});
    check_ints(run1("QuantizeLinear", {in(x), cst(s)}, {{"axis", int64_t{1}}}), {2, 3},
               {4, 2, 1, 8, 4, 2});
    check_ints(run1("QuantizeLinear", {in(x), cst(s)}), {2, 3}, {4, 2, 1, 8, 4, 2});
    check_ints(run1("QuantizeLinear", {in(x), cst(s), cst(i8({3}, {0, -1, 127}))},
                    {{"axis", int64_t{-1}}}),
               {2, 3}, {4, 1, 127, 8, 3, 127});
  }
  SUBCASE("axis 1 of a rank-3 tensor: one scale per channel, shared over the inner axis") {
    auto y = run1("QuantizeLinear",
                  {in(f32({2, 3, 2}, std::vector<float>(12, 8.0f))), in(f32({3}, {1, 2, 4}))});
    check_ints(y, {2, 3, 2}, {8, 8, 4, 4, 2, 2, 8, 8, 4, 4, 2, 2});
  }
}

TEST_CASE("ref quantize: QuantizeLinear shape edge cases") {
  check_ints(run1("QuantizeLinear", {in(f32({}, {3})), in(f32({}, {2}))}), {}, {2});  // 1.5 -> 2
  check_ints(run1("QuantizeLinear", {in(f32({2, 0}, {})), in(f32({}, {1}))}), {2, 0}, {});
}

TEST_CASE("ref quantize: scale and zero-point count mismatches are errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_error(run_op("QuantizeLinear", {in(x), in(f32({4}, {1, 1, 1, 1}))}),
              {"'node'", "QuantizeLinear", "scale has 4 values", "axis 1", "size 3"});
  check_error(run_op("QuantizeLinear", {in(x), in(f32({3}, {1, 1, 1}))}, {{"axis", int64_t{0}}}),
              {"'node'", "scale has 3 values", "axis 0", "size 2"});
  check_error(run_op("QuantizeLinear", {in(x), in(f32({3}, {1, 1, 1})), in(u8({2}, {0, 0}))}),
              {"'node'", "zero point has 2 values", "scale has 3"});
  check_error(
      run_op("DequantizeLinear", {in(u8({2, 3}, {1, 2, 3, 4, 5, 6})), in(f32({2}, {1, 1}))}),
      {"'node'", "DequantizeLinear", "scale has 2 values", "axis 1", "size 3"});
  check_error(run_op("QuantizeLinear", {in(x), in(f32({3}, {1, 1, 1}))}, {{"axis", int64_t{2}}}),
              {"'node'", "axis 2"});
}

// ---- DequantizeLinear -------------------------------------------------------------------------

TEST_CASE("ref quantize: DequantizeLinear per tensor") {
  auto y = run1("DequantizeLinear",
                {in(u8({4}, {0, 128, 255, 129})), cst(f32({}, {0.5f})), cst(u8({}, {128}))});
  CHECK(y.dtype() == DType::F32);
  check_close(y, {4}, {-64, 0, 63.5f, 0.5f}, 0, 0);
  // I8 without a zero point.
  check_close(run1("DequantizeLinear", {in(i8({3}, {-128, 0, 127})), in(f32({1}, {0.25f}))}), {3},
              {-32, 0, 31.75f}, 0, 0);
  // I8 with a zero point.
  check_close(
      run1("DequantizeLinear", {in(i8({3}, {-128, 0, 127})), in(f32({}, {2})), in(i8({}, {-1}))}),
      {3}, {-254, 2, 256}, 0, 0);
}

TEST_CASE("ref quantize: DequantizeLinear per axis") {
  const Tensor q = u8({2, 3}, {10, 20, 30, 10, 20, 30});
  check_close(run1("DequantizeLinear", {in(q), cst(f32({2}, {1, 0.5f})), cst(u8({2}, {0, 10}))},
                   {{"axis", int64_t{0}}}),
              {2, 3}, {10, 20, 30, 0, 5, 10}, 0, 0);
  check_close(
      run1("DequantizeLinear", {in(q), cst(f32({3}, {1, 2, 0.25f})), cst(u8({3}, {10, 0, 30}))}),
      {2, 3}, {0, 40, 0, 0, 40, 0}, 0, 0);
  check_close(
      run1("DequantizeLinear", {in(i8({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})), in(f32({2}, {1, 2}))},
           {{"axis", int64_t{-2}}}),
      {2, 2, 2}, {1, 2, 6, 8, 5, 6, 14, 16}, 0, 0);
}

TEST_CASE("ref quantize: float input to DequantizeLinear is an error") {
  check_error(run_op("DequantizeLinear", {in(f32({2}, {1, 2})), in(f32({}, {1}))}),
              {"'node'", "DequantizeLinear"});
}

// ---- round trip -------------------------------------------------------------------------------

namespace {
// Quantize then dequantize; returns the reconstruction.
std::vector<float> round_trip(const Tensor& x, const Tensor& scale, const Tensor& zp,
                              int64_t axis) {
  auto q = run1("QuantizeLinear", {in(x), cst(scale), cst(zp)}, {{"axis", axis}});
  auto d = run1("DequantizeLinear", {in(q), cst(scale), cst(zp)}, {{"axis", axis}});
  return d.to_f32();
}
}  // namespace

TEST_CASE("ref quantize: round trip error is at most scale / 2 inside the range") {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  SUBCASE("u8 asymmetric, per tensor") {
    // Inside [-127.5 s, 127.5 s] = [-1, 1] nothing saturates.
    std::vector<float> x(1000);
    for (float& v : x) v = 0.99f * u(rng);
    const float s = 2.0f / 255;
    auto back = round_trip(f32({1000}, x), f32({}, {s}), u8({}, {128}), 1);
    double worst = 0;
    for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::abs(double(back[k]) - x[k]));
    CHECK(worst <= s / 2 + 1e-7);
    CHECK(worst > s / 4);  // a real quantisation, not a pass-through
  }
  SUBCASE("i8 symmetric, per axis with different ranges") {
    const std::vector<float> range = {1, 10, 0.01f};
    std::vector<float> x(3 * 200), scales;
    for (float r : range) scales.push_back(r / 127);
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 200; ++k) x[c * 200 + k] = u(rng) * range[c];
    auto back = round_trip(f32({3, 200}, x), f32({3}, scales), i8({3}, {0, 0, 0}), 0);
    for (int c = 0; c < 3; ++c) {
      INFO("channel " << c);
      double worst = 0;
      for (int k = 0; k < 200; ++k)
        worst = std::max(worst, std::abs(double(back[c * 200 + k]) - x[c * 200 + k]));
      CHECK(worst <= scales[c] / 2 + 1e-7 * range[c]);
    }
  }
}

// ---- DynamicQuantizeLinear --------------------------------------------------------------------

TEST_CASE("ref quantize: DynamicQuantizeLinear picks scale and zero point from the range") {
  // Range [-3, 2]: scale 5/255, zero point round(3 / scale) = 153.
  auto r = run_op("DynamicQuantizeLinear", {in(f32({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f}))}, {}, 3);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0].dtype() == DType::U8);
  check_ints((*r)[0], {6}, {153, 255, 0, 26, 221, 179});
  check_close((*r)[1], {}, {5.0f / 255.0f}, 0, 1e-7);
  check_ints((*r)[2], {}, {153});

  // Positive data: the range still includes 0, so the zero point is 0; scale 1, ties to even.
  auto p = run_op("DynamicQuantizeLinear", {in(f32({3}, {0.5f, 1.5f, 255}))}, {}, 3);
  REQUIRE(p.ok());
  check_ints((*p)[0], {3}, {0, 2, 255});
  check_ints((*p)[2], {}, {0});

  // All zeros: scale 0, zero point 0, no division by zero.
  auto z = run_op("DynamicQuantizeLinear", {in(f32({3}, {0, 0, 0}))}, {}, 3);
  REQUIRE(z.ok());
  check_ints((*z)[0], {3}, {0, 0, 0});
  check_close((*z)[1], {}, {0});
}

}  // namespace hpf::test
