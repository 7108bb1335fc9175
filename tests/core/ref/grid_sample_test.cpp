// Reference interpreter: GridSample on hand-computed samples of small images, for each mode,
// padding mode and align_corners setting.
#include <doctest/doctest.h>

#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

// Samples the [1,1,h,w] image `img` at normalised points (x, y).
Tensor sample(std::vector<int64_t> hw, std::vector<float> img, std::vector<float> xy, Attributes attrs) {
  const auto n = static_cast<int64_t>(xy.size() / 2);
  return run1("GridSample", {in(f32({1, 1, hw[0], hw[1]}, img)), in(f32({1, 1, n, 2}, xy))}, std::move(attrs));
}

const std::vector<float> kImg{1, 2, 3, 4};  // 2x2

}  // namespace

TEST_CASE("ref grid sample: bilinear and nearest with align_corners") {
  Attributes a = {{"align_corners", int64_t{1}}};
  // Corners are pixel centres: (-1,-1) -> 1, (1,1) -> 4, (1,-1) -> 2; the centre is the mean.
  check_close(sample({2, 2}, kImg, {-1, -1, 1, 1, 1, -1, 0, 0}, a), {1, 1, 1, 4}, {1, 4, 2, 2.5f});
  // Nearest: x = 0.55 rounds to column 1; x = 0.5 exactly rounds half to even (column 0).
  a["mode"] = std::string("nearest");
  check_close(sample({2, 2}, kImg, {0.1f, -1, 0, 1}, a), {1, 1, 1, 2}, {2, 3});
}

TEST_CASE("ref grid sample: padding modes outside the image") {
  // align_corners 0: -1 is the outer edge, pixel coordinate -0.5.
  Attributes a;
  check_close(sample({2, 2}, kImg, {-1, -1}, a), {1, 1, 1, 1}, {0.25f});  // zeros: 3 of 4 taps are 0
  a["padding_mode"] = std::string("border");
  check_close(sample({2, 2}, kImg, {-1, -1, 3, 0}, a), {1, 1, 1, 2}, {1, 3});  // x clamped to 1: (2 + 4) / 2
  a["padding_mode"] = std::string("reflection");
  // x = 2 -> 2.5, reflected at 1.5 to 0.5; y = -1 -> -0.5 reads row 0 twice: (1 + 2) / 2.
  check_close(sample({2, 2}, kImg, {-1, -1, 2, -1}, a), {1, 1, 1, 2}, {1, 1.5f});
}

TEST_CASE("ref grid sample: bicubic reproduces a linear ramp inside the image") {
  std::vector<float> img(16);
  for (int k = 0; k < 16; ++k) img[k] = float(k);  // value 4 r + c
  // align_corners 1 on 4x4: (0, 0) is pixel (1.5, 1.5); all 16 taps are inside.
  check_close(sample({4, 4}, img, {0, 0, -1.0f / 3, 1.0f / 3}, {{"mode", std::string("bicubic")}, {"align_corners", int64_t{1}}}),
              {1, 1, 1, 2}, {7.5f, 2 * 4 + 1}, 1e-5, 1e-5);
}

TEST_CASE("ref grid sample: errors") {
  check_error(run_op("GridSample", {in(f32({1, 1, 2, 2}, kImg)), in(f32({1, 1, 1, 3}, {0, 0, 0}))}), {"grid"});
  check_error(run_op("GridSample", {in(f32({1, 1, 2, 2}, kImg)), in(f32({1, 1, 1, 2}, {0, 0}))},
                     {{"padding_mode", std::string("wrap")}}),
              {"padding_mode", "wrap"});
}

}  // namespace hpf::test
