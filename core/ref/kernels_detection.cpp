// Object-detection ops: NonMaxSuppression and RoiAlign, in double, following the ONNX
// reference (and ONNX Runtime) step by step where the spec leaves details open.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

struct Box {
  double y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

// Corners from [y1, x1, y2, x2] (either diagonal) or, with center_point_box, [xc, yc, w, h].
Box box_at(const Buf& boxes, int64_t at, bool center) {
  const float* p = boxes.f.data() + at * 4;
  if (center) {
    const double xc = p[0], yc = p[1], w = p[2], h = p[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min<double>(p[0], p[2]), std::min<double>(p[1], p[3]), std::max<double>(p[0], p[2]),
          std::max<double>(p[1], p[3])};
}

// True when b suppresses a: IoU above the threshold (degenerate boxes never suppress).
bool suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double ix1 = std::max(a.x1, b.x1), iy1 = std::max(a.y1, b.y1);
  const double ix2 = std::min(a.x2, b.x2), iy2 = std::min(a.y2, b.y2);
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  const double inter = (ix2 - ix1) * (iy2 - iy1);
  const double area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

// Per batch and class: boxes scoring above score_threshold, highest score first (lower index on
// ties), kept unless a kept box overlaps them by more than iou_threshold, at most
// max_output_boxes_per_class (absent or 0: none); NaN scores are never selected. Rows are
// [batch, class, box].
Status non_max_suppression_kernel(KernelContext& c) {
  const Buf &boxes = c.in(0), &scores = c.in(1);
  if (boxes.rank() != 3 || boxes.shape[2] != 4)
    return c.error("boxes must be [batches, boxes, 4], got " + shape_string(boxes.shape));
  if (scores.rank() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    return c.error("scores " + shape_string(scores.shape) +
                   " must be [batches, classes, boxes] for boxes " + shape_string(boxes.shape));
  if (!boxes.is_float() || !scores.is_float())
    return c.error("boxes and scores must be floating point");
  auto scalar = [&](size_t k, double absent) {
    return c.has(k) && c.in(k).numel() > 0 ? c.in(k).get(0) : absent;
  };
  const auto max_out = static_cast<int64_t>(scalar(2, 0));
  const double iou = scalar(3, 0);
  const bool has_score_threshold = c.has(4) && c.in(4).numel() > 0;
  const double score_threshold = scalar(4, 0);
  if (iou < 0 || iou > 1)
    return c.error("iou_threshold " + std::to_string(iou) + " is outside [0, 1]");
  const bool center = c.attr_int("center_point_box") != 0;
  const int64_t nb = boxes.shape[0], nc = scores.shape[1], n = boxes.shape[1];
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t cl = 0; cl < nc; ++cl) {
      if (max_out <= 0) continue;
      const float* s = scores.f.data() + (b * nc + cl) * n;
      std::vector<int64_t> cand;
      for (int64_t j = 0; j < n; ++j)
        if (!std::isnan(s[j]) && (!has_score_threshold || s[j] > score_threshold))
          cand.push_back(j);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<Box> kept;
      for (int64_t j : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box bx = box_at(boxes, b * n + j, center);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const Box& k) { return suppresses(bx, k, iou); }))
          continue;
        kept.push_back(bx);
        rows.insert(rows.end(), {b, cl, j});
      }
    }
  Buf y = Buf::ints({static_cast<int64_t>(rows.size() / 3), 3});
  y.i = std::move(rows);
  c.out[0] = std::move(y);
  return {};
}

// One bilinear sample: four flat positions in an H x W plane and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// Samples outside [-1, H] x [-1, W] weigh nothing; inside, coordinates clamp to the plane.
Sample bilinear_sample(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > double(h) || x < -1.0 || x > double(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x), y_hi = y_lo + 1,
       x_hi = x_lo + 1;
  if (y_lo >= h - 1) y = double(y_hi = y_lo = h - 1);
  if (x_lo >= w - 1) x = double(x_hi = x_lo = w - 1);
  const double ly = y - double(y_lo), lx = x - double(x_lo), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_lo * w + x_lo, s.pos[1] = y_lo * w + x_hi, s.pos[2] = y_hi * w + x_lo,
  s.pos[3] = y_hi * w + x_hi;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

// RoiAlign: each output bin averages (mode avg) a sampling grid of bilinear samples, or takes
// the largest weighted corner value over it (mode max, as the ONNX reference defines it).
Status roi_align_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &rois = c.in(1), &bidx = c.in(2);
  if (x.rank() != 4) return c.error("X must be [N,C,H,W], got " + shape_string(x.shape));
  if (rois.rank() != 2 || rois.shape[1] != 4)
    return c.error("rois must be [num_rois, 4], got " + shape_string(rois.shape));
  if (bidx.rank() != 1 || bidx.shape[0] != rois.shape[0])
    return c.error("batch_indices " + shape_string(bidx.shape) +
                   " must hold one index per roi of " + shape_string(rois.shape));
  const int64_t oh = c.attr_int("output_height"), ow = c.attr_int("output_width");
  if (oh < 1 || ow < 1) return c.error("output_height and output_width must be positive");
  const std::string mode = c.attr_string("mode"),
                    ctm = c.attr_string("coordinate_transformation_mode");
  if (mode != "avg" && mode != "max")
    return c.error("mode must be 'avg' or 'max', is '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return c.error(
        "coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', is '" + ctm +
        "'");
  const bool half_pixel = ctm == "half_pixel";
  const double scale = c.attr_float("spatial_scale");
  const int64_t ratio = c.attr_int("sampling_ratio");
  const int64_t nr = rois.shape[0], ch = x.shape[1], h = x.shape[2], w = x.shape[3];
  Buf y = Buf::floats({nr, ch, oh, ow}, x.dtype);
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t b = bidx.i[r];
    if (b < 0 || b >= x.shape[0])
      return c.error("batch index " + std::to_string(b) + " of roi " + std::to_string(r) +
                     " is outside [0, " + std::to_string(x.shape[0]) + ")");
    const double offset = half_pixel ? 0.5 : 0.0;
    const float* roi = rois.f.data() + r * 4;
    const double x1 = roi[0] * scale - offset, y1 = roi[1] * scale - offset;
    double rw = roi[2] * scale - offset - x1, rh = roi[3] * scale - offset - y1;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);  // malformed rois become 1x1
    const double bh = rh / double(oh), bw = rw / double(ow);
    const auto gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / double(oh)));
    const auto gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / double(ow)));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t py = 0; py < oh; ++py)
      for (int64_t px = 0; px < ow; ++px) {
        std::vector<Sample> grid;
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix)
            grid.push_back(bilinear_sample(y1 + py * bh + (iy + 0.5) * bh / double(gh),
                                           x1 + px * bw + (ix + 0.5) * bw / double(gw), h, w));
        for (int64_t cc = 0; cc < ch; ++cc) {
          const float* plane = x.f.data() + (b * ch + cc) * h * w;
          double acc = 0;
          for (size_t g = 0; g < grid.size(); ++g) {
            const Sample& s = grid[g];
            if (mode == "avg") {
              for (int q = 0; q < 4; ++q) acc += s.w[q] * plane[s.pos[q]];
            } else {
              double v = s.w[0] * plane[s.pos[0]];
              for (int q = 1; q < 4; ++q) v = std::max(v, s.w[q] * plane[s.pos[q]]);
              acc = g == 0 ? v : std::max(acc, v);
            }
          }
          y.f[((r * ch + cc) * oh + py) * ow + px] =
              static_cast<float>(mode == "avg" ? acc / count : acc);
        }
      }
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_detection_kernels(KernelTable& t) {
  t["NonMaxSuppression"] = non_max_suppression_kernel;
  t["RoiAlign"] = roi_align_kernel;
}

}  // namespace hpf::ref
