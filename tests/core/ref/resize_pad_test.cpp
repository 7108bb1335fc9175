// Resize and Pad on the reference interpreter, hand-computed.
#include "ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

// Resize of a [1,1,1,w] row along its last axis, by scale or to a size.
Tensor resize_row(const Floats& row, float scale, Attributes attrs) {
  const auto w = static_cast<int64_t>(row.size());
  return run1("Resize", {in(f32({1, 1, 1, w}, row)), none(), cst(f32({4}, {1, 1, 1, scale}))},
              std::move(attrs));
}
Tensor resize_row_to(const Floats& row, int64_t size, Attributes attrs) {
  const auto w = static_cast<int64_t>(row.size());
  return run1("Resize",
              {in(f32({1, 1, 1, w}, row)), none(), none(), cst(i64({4}, {1, 1, 1, size}))},
              std::move(attrs));
}

Attributes nearest(const std::string& coord, const std::string& rounding = "round_prefer_floor") {
  return {{"mode", std::string("nearest")},
          {"coordinate_transformation_mode", coord},
          {"nearest_mode", rounding}};
}

const Floats kRow{10, 20, 30, 40};

TEST_CASE("Resize nearest: each nearest_mode") {
  // asymmetric x2: source j/2, ties at odd j.
  check_close(resize_row(kRow, 2, nearest("asymmetric", "round_prefer_floor")), {1, 1, 1, 8},
              {10, 10, 20, 20, 30, 30, 40, 40});
  check_close(resize_row(kRow, 2, nearest("asymmetric", "round_prefer_ceil")), {1, 1, 1, 8},
              {10, 20, 20, 30, 30, 40, 40, 40});
  // half_pixel x2: source j/2 - 0.25 = -0.25, 0.25, 0.75, ...
  check_close(resize_row(kRow, 2, nearest("half_pixel", "floor")), {1, 1, 1, 8},
              {10, 10, 10, 20, 20, 30, 30, 40});
  check_close(resize_row(kRow, 2, nearest("half_pixel", "ceil")), {1, 1, 1, 8},
              {10, 20, 20, 30, 30, 40, 40, 40});
}

TEST_CASE("Resize nearest: each coordinate_transformation_mode") {
  // Downsample 4 -> 2 (scale 0.5).
  SUBCASE("half_pixel: 2j + 0.5, ties rounded up here") {
    check_close(resize_row(kRow, 0.5f, nearest("half_pixel", "round_prefer_ceil")), {1, 1, 1, 2},
                {20, 40});
    check_close(resize_row(kRow, 0.5f, nearest("half_pixel", "round_prefer_floor")), {1, 1, 1, 2},
                {10, 30});
  }
  SUBCASE("asymmetric: 2j") {
    check_close(resize_row(kRow, 0.5f, nearest("asymmetric", "round_prefer_ceil")), {1, 1, 1, 2},
                {10, 30});
  }
  SUBCASE("align_corners: 3j") {
    check_close(resize_row(kRow, 0.5f, nearest("align_corners")), {1, 1, 1, 2}, {10, 40});
  }
  SUBCASE("tf_half_pixel_for_nearest: 2j + 1") {
    check_close(resize_row(kRow, 0.5f, nearest("tf_half_pixel_for_nearest")), {1, 1, 1, 2},
                {20, 40});
  }
  SUBCASE("pytorch_half_pixel: a single output samples 0") {
    check_close(resize_row(kRow, 0.25f, nearest("pytorch_half_pixel")), {1, 1, 1, 1}, {10});
    check_close(resize_row(kRow, 0.25f, nearest("half_pixel")), {1, 1, 1, 1}, {20});
  }
  SUBCASE("half_pixel_symmetric centres the sampled span") {
    // in 5, scale 0.5 -> out 2: offset 2.5 * (1 - 2/2.5) = 0.5, so sources 1 and 3.
    const Floats row{10, 20, 30, 40, 50};
    check_close(resize_row(row, 0.5f, nearest("half_pixel_symmetric")), {1, 1, 1, 2}, {20, 40});
    check_close(resize_row(row, 0.5f, nearest("half_pixel")), {1, 1, 1, 2}, {10, 30});
  }
}

TEST_CASE("Resize nearest on a 2-D image and on integers") {
  auto y =
      run1("Resize", {in(f32({1, 1, 2, 2}, {1, 2, 3, 4})), none(), cst(f32({4}, {1, 1, 2, 1}))},
           nearest("asymmetric"));
  check_close(y, {1, 1, 4, 2}, {1, 2, 1, 2, 3, 4, 3, 4});
  auto yi = run1("Resize", {in(i64({1, 1, 1, 2}, {7, 9})), none(), cst(f32({4}, {1, 1, 1, 2}))},
                 nearest("asymmetric"));
  CHECK(yi.dtype() == DType::I64);
  check_ints(yi, {1, 1, 1, 4}, {7, 7, 9, 9});
}

const Attributes kLinearHalfPixel{{"mode", std::string("linear")}};

TEST_CASE("Resize linear 2x upsample") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = f32({4}, {1, 1, 2, 2});
  SUBCASE("half_pixel") {
    // Per axis sources -0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
    check_close(run1("Resize", {in(x), none(), cst(scales)}, kLinearHalfPixel), {1, 1, 4, 4},
                {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f,
                 3.75f, 4});
  }
  SUBCASE("align_corners") {
    // Per axis sources j/3.
    const float t = 1.0f / 3, u = 2.0f / 3;
    check_close(
        run1("Resize", {in(x), none(), cst(scales)},
             {{"mode", std::string("linear")},
              {"coordinate_transformation_mode", std::string("align_corners")}}),
        {1, 1, 4, 4},
        {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u, 2 + t, 2 + u, 3, 3 + t, 3, 3 + t, 3 + u, 4});
  }
}

TEST_CASE("Resize linear downsample") {
  // Scale 0.6 on [2,4]: one row at source 1/3, columns at sources 1/3 and 2.
  auto y = run1(
      "Resize",
      {in(f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})), none(), cst(f32({4}, {1, 1, 0.6f, 0.6f}))},
      kLinearHalfPixel);
  check_close(y, {1, 1, 1, 2}, {8.0f / 3, 13.0f / 3});
}

TEST_CASE("Resize: sizes set the coordinate scale to out/in, scales keep their own") {
  const Floats row{1, 2, 3, 4};
  // scale 0.7: out floor(2.8) = 2, sources (j + 0.5) / 0.7 - 0.5 = 3/14 and 23/14.
  check_close(resize_row(row, 0.7f, kLinearHalfPixel), {1, 1, 1, 2},
              {1 + 3.0f / 14, 1 + 23.0f / 14}, 1e-5, 1e-6);
  // size 2: scale 0.5, sources 0.5 and 2.5.
  check_close(resize_row_to(row, 2, kLinearHalfPixel), {1, 1, 1, 2}, {1.5f, 3.5f});
  // Sizes win over an empty scales tensor (the opset 11-12 spelling).
  auto y = run1("Resize",
                {in(f32({1, 1, 1, 4}, row)), cst(f32({0}, {})), cst(f32({0}, {})),
                 cst(i64({4}, {1, 1, 1, 2}))},
                kLinearHalfPixel);
  check_close(y, {1, 1, 1, 2}, {1.5f, 3.5f});
}

TEST_CASE("Resize cubic: Keys weights, edge padding, exclude_outside, integer coordinates") {
  Attributes a = {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}};
  // Source j/2. j=1: x=0.5, taps at -1,0,1,2 read 10,10,20,30 (edge) with weights
  // [-0.09375, 0.59375, 0.59375, -0.09375] -> 14.0625; j=2: integer -> 20; j=3: interior of a
  // linear ramp, which Keys' kernel reproduces -> 25.
  auto y = resize_row(kRow, 2, a);
  check_close(y, {1, 1, 1, 8}, {10, 14.0625f, 20, 25, 30, 35.9375f, 40, 40.9375f});
  // exclude_outside drops the tap at -1 and renormalises: 15 / 1.09375.
  a["exclude_outside"] = int64_t{1};
  CHECK(resize_row(kRow, 2, a).to_f32()[1] == doctest::Approx(15.0 / 1.09375).epsilon(1e-6));
  // cubic_coeff_a -0.5: weights at t=0.5 are [-0.0625, 0.5625, 0.5625, -0.0625].
  a["exclude_outside"] = int64_t{0};
  a["cubic_coeff_a"] = -0.5f;
  CHECK(resize_row(kRow, 2, a).to_f32()[1] == doctest::Approx(-0.625 + 5.625 + 11.25 - 1.875).epsilon(1e-6));
}

TEST_CASE("Resize tf_crop_and_resize: roi crop and extrapolation_value") {
  auto crop = [&](float start, float end) {
    return run1("Resize", {in(f32({1, 1, 1, 4}, kRow)), cst(f32({8}, {0, 0, 0, start, 1, 1, 1, end})), none(),
                           cst(i64({4}, {1, 1, 1, 3}))},
                {{"mode", std::string("linear")},
                 {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                 {"extrapolation_value", 99.0f}});
  };
  // Crop [0.25, 0.75] of 3 pixels: x = 0.75 + 0.75 j.
  check_close(crop(0.25f, 0.75f), {1, 1, 1, 3}, {17.5f, 25, 32.5f});
  // Crop [-0.5, 1.5]: x = 3 j - 1.5; outside [0, 3] is the extrapolation value.
  check_close(crop(-0.5f, 1.5f), {1, 1, 1, 3}, {99, 25, 99});
}

TEST_CASE("Resize nearest: tf_half_pixel_for_nn (opset 11) is (j + 0.5) / scale") {
  check_close(resize_row(kRow, 0.5f, nearest("tf_half_pixel_for_nn")), {1, 1, 1, 2}, {20, 40});
}

TEST_CASE("Resize rejects what it does not implement") {
  auto area =
      run_op("Resize", {in(f32({1, 1, 1, 2}, {1, 2})), none(), cst(f32({4}, {1, 1, 1, 2}))},
             {{"mode", std::string("area")}});
  REQUIRE_FALSE(area.ok());
  CHECK(area.status().code() == StatusCode::unsupported);
  CHECK(area.status().message().find("mode 'area'") != std::string::npos);
  auto crop = run_op("Resize", {in(f32({1, 1, 1, 2}, {1, 2})), none(), cst(f32({4}, {1, 1, 1, 2}))},
                     {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}});
  REQUIRE_FALSE(crop.ok());
  CHECK(crop.status().code() == StatusCode::unsupported);
  CHECK(crop.status().message().find("node 'node' (Resize)") != std::string::npos);
  CHECK(crop.status().message().find("tf_crop_and_resize") != std::string::npos);
}

// ---- Pad ----

TEST_CASE("Pad constant, pads and value as inputs or attributes") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // pads [begin0, begin1, end0, end1] = one row above, one column right.
  const Floats want{9, 9, 9, 1, 2, 9, 3, 4, 9};
  check_close(run1("Pad", {in(x), cst(i64({4}, {1, 0, 0, 1})), cst(Tensor::scalar_f32(9))}), {3, 3},
              want);
  check_close(run1("Pad", {in(x)}, {{"pads", Ints{1, 0, 0, 1}}, {"value", 9.0f}}), {3, 3}, want);
  check_close(run1("Pad", {in(x), cst(i64({4}, {1, 0, 0, 1}))}), {3, 3},
              {0, 0, 0, 1, 2, 0, 3, 4, 0});
}

TEST_CASE("Pad reflect, edge, wrap") {
  const Tensor x = f32({1, 3}, {1, 2, 3});
  const Tensor pads = i64({4}, {0, 2, 0, 2});
  check_close(run1("Pad", {in(x), cst(pads)}, {{"mode", std::string("reflect")}}), {1, 7},
              {3, 2, 1, 2, 3, 2, 1});
  check_close(run1("Pad", {in(x), cst(pads)}, {{"mode", std::string("edge")}}), {1, 7},
              {1, 1, 1, 2, 3, 3, 3});
  check_close(run1("Pad", {in(x), cst(pads)}, {{"mode", std::string("wrap")}}), {1, 7},
              {2, 3, 1, 2, 3, 1, 2});
  // Reflect on both axes of a 2-D input.
  check_close(run1("Pad", {in(f32({2, 2}, {1, 2, 3, 4})), cst(i64({4}, {1, 1, 0, 0}))},
                   {{"mode", std::string("reflect")}}),
              {3, 3}, {4, 3, 4, 2, 1, 2, 4, 3, 4});
}

TEST_CASE("Pad negative pads crop, then the mode pads what is left") {
  const Tensor x = f32({1, 5}, {1, 2, 3, 4, 5});
  check_close(run1("Pad", {in(x), cst(i64({4}, {0, -1, 0, 2}))}), {1, 6}, {2, 3, 4, 5, 0, 0});
  check_close(
      run1("Pad", {in(x), cst(i64({4}, {0, -1, 0, 2}))}, {{"mode", std::string("reflect")}}),
      {1, 6}, {2, 3, 4, 5, 4, 3});
  check_close(run1("Pad", {in(x), cst(i64({4}, {0, -2, 0, 1}))}, {{"mode", std::string("edge")}}),
              {1, 4}, {3, 4, 5, 5});
  check_close(run1("Pad", {in(x), cst(i64({4}, {0, -2, 0, -2}))}), {1, 1}, {3});
}

TEST_CASE("Pad integer tensors") {
  auto y = run1("Pad", {in(i64({2, 2}, {1, 2, 3, 4})), cst(i64({4}, {0, 1, 0, 1})),
                        cst(Tensor::scalar_i64(7))});
  CHECK(y.dtype() == DType::I64);
  check_ints(y, {2, 4}, {7, 1, 2, 7, 7, 3, 4, 7});
  auto e = run1("Pad", {in(i64({1, 2}, {5, 6})), cst(i64({4}, {0, 2, 0, 0}))},
                {{"mode", std::string("edge")}});
  check_ints(e, {1, 4}, {5, 5, 5, 6});
}

TEST_CASE("Pad with an axes input") {
  // pads apply to the listed axes only; -1 is the last axis.
  auto y = run1("Pad", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), cst(i64({2}, {1, 1})), none(),
                        cst(i64({1}, {-1}))});
  check_close(y, {2, 5}, {0, 1, 2, 3, 0, 0, 4, 5, 6, 0});
  auto z = run1("Pad", {in(f32({2, 3}, {1, 2, 3, 4, 5, 6})), cst(i64({2}, {0, 1})),
                        cst(Tensor::scalar_f32(-1)), cst(i64({1}, {0}))});
  check_close(z, {3, 3}, {1, 2, 3, 4, 5, 6, -1, -1, -1});
}

TEST_CASE("Pad errors name the node") {
  auto r = run_op("Pad", {in(f32({1, 1}, {1})), cst(i64({4}, {0, -1, 0, 1}))},
                  {{"mode", std::string("edge")}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("node 'node' (Pad)") != std::string::npos);
}

}  // namespace
}  // namespace hpf::test
