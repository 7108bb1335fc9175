// Reference interpreter: NonMaxSuppression and RoiAlign, on boxes and feature maps small enough
// to work out by hand (RoiAlign samples f(y, x) = 10y + x, which bilinear interpolation
// reproduces exactly).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

// b0 = [0,0,1,1]; b1 is b0 shifted 0.1 in x (IoU 0.9/1.1 = 0.82 with b0); b2 is disjoint; b3 is
// b0 with its corners swapped.
const Tensor kBoxes = f32({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 1, 1, 0, 0});
const Tensor kScores = f32({1, 1, 4}, {0.9f, 0.95f, 0.5f, 0.3f});

Tensor nms(std::vector<Arg> args, Attributes attrs = {}) {
  return run1("NonMaxSuppression", std::move(args), std::move(attrs));
}

// X[0,0] = 10y + x on a 4x4 plane.
Tensor plane() {
  std::vector<float> v;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) v.push_back(float(10 * y + x));
  return f32({1, 1, 4, 4}, v);
}

Tensor roi_align(std::vector<float> rois, Attributes attrs) {
  const auto n = static_cast<int64_t>(rois.size() / 4);
  return run1("RoiAlign",
              {in(plane()), in(f32({n, 4}, rois)), in(i64({n}, std::vector<int64_t>(n, 0)))},
              std::move(attrs));
}

}  // namespace

TEST_CASE("ref detection: NonMaxSuppression keeps the best box and drops its overlaps") {
  const Tensor max3 = i64({1}, {3});
  check_ints(nms({in(kBoxes), in(kScores), in(max3), in(f32({1}, {0.5f}))}), {2, 3},
             {0, 0, 1, 0, 0, 2});
  // A looser IoU threshold keeps b0; the limit of 3 then stops before b3.
  check_ints(nms({in(kBoxes), in(kScores), in(max3), in(f32({1}, {0.9f}))}), {3, 3},
             {0, 0, 1, 0, 0, 0, 0, 0, 2});
  // The score threshold is strict: 0.5 excludes b2 and b3.
  check_ints(nms({in(kBoxes), in(kScores), in(max3), in(f32({1}, {0.5f})), in(f32({1}, {0.5f}))}),
             {1, 3}, {0, 0, 1});
  // No max_output_boxes_per_class: nothing is selected.
  check_ints(nms({in(kBoxes), in(kScores)}), {0, 3}, {});
}

TEST_CASE("ref detection: NonMaxSuppression with center boxes, two classes and tied scores") {
  // [xc, yc, w, h]: b0 = unit box, b1 shifted 0.1 in y, b2 far away.
  const Tensor boxes = f32({1, 3, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 5, 5, 1, 1});
  const Tensor scores = f32({1, 2, 3}, {0.5f, 0.5f, 0.5f, 0.1f, 0.9f, 0.2f});
  check_ints(nms({in(boxes), in(scores), in(i64({1}, {2})), in(f32({1}, {0.5f}))},
                 {{"center_point_box", int64_t{1}}}),
             {4, 3}, {0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2});
  check_error(run_op("NonMaxSuppression", {in(f32({1, 3}, {0, 0, 1})), in(scores)}),
              {"boxes must be [batches, boxes, 4]"});
}

TEST_CASE("ref detection: RoiAlign averages bilinear samples in both coordinate modes") {
  const Attributes out2 = {
      {"output_height", int64_t{2}}, {"output_width", int64_t{2}}, {"sampling_ratio", int64_t{2}}};
  Attributes a = out2;
  a["coordinate_transformation_mode"] = std::string("output_half_pixel");
  check_close(roi_align({0.5f, 0.5f, 2.5f, 2.5f}, a), {1, 1, 2, 2}, {11, 12, 21, 22});
  // half_pixel (the default) shifts the roi by half a pixel.
  check_close(roi_align({1, 1, 3, 3}, out2), {1, 1, 2, 2}, {11, 12, 21, 22});
  // spatial_scale maps roi coordinates onto the feature map.
  a["spatial_scale"] = 0.5f;
  check_close(roi_align({1, 1, 5, 5}, a), {1, 1, 2, 2}, {11, 12, 21, 22});
}

TEST_CASE("ref detection: RoiAlign max mode, samples outside the map, bad batch index") {
  Attributes a = {{"coordinate_transformation_mode", std::string("output_half_pixel")},
                  {"sampling_ratio", int64_t{2}}};
  check_close(roi_align({0, 0, 2, 2}, a), {1, 1, 1, 1}, {11});
  // Max takes the largest weighted corner (weights 1/4 at (1.5, 1.5): 22/4) over the samples.
  a["mode"] = std::string("max");
  check_close(roi_align({0, 0, 2, 2}, a), {1, 1, 1, 1}, {5.5f});
  a["mode"] = std::string("avg");
  check_close(roi_align({10, 10, 12, 12}, a), {1, 1, 1, 1}, {0});
  check_error(run_op("RoiAlign", {in(plane()), in(f32({1, 4}, {0, 0, 1, 1})), in(i64({1}, {1}))}),
              {"batch index 1 of roi 0 is outside [0, 1)"});
}

}  // namespace hpf::test
