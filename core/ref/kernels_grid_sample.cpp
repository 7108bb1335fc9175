// Reference kernel for GridSample on 4-D input (opset 16 names bilinear/nearest/bicubic, and the
// later linear/cubic), padding zeros/border/reflection, align_corners. Follows the ONNX
// reference (which follows PyTorch): the grid's (x, y) are denormalised to pixel coordinates,
// out-of-range coordinates are clamped or reflected first, then neighbours are read with the
// padding rule. Interpolation is done in FP64.
#include <algorithm>
#include <cmath>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

enum class Padding { zeros, border, reflection };

// Reflects v into [lo, hi] by repeated mirroring at the nearer border.
double reflect(double v, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (v < lo) {
    const double d = lo - v;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const double d = v - hi;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return v;
}

// One spatial axis of the input: its size and the borders a coordinate is kept within.
struct Axis {
  int64_t size;
  double lo, hi;
  Padding pad;

  Axis(int64_t n, bool align_corners, Padding p)
      : size(n), lo(align_corners ? 0.0 : -0.5), hi(align_corners ? double(n - 1) : double(n) - 0.5), pad(p) {}

  double denormalize(double g, bool align_corners) const {
    return align_corners ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
  }
  // A coordinate outside the borders: clamped (border) or reflected (reflection) before use.
  double settle(double v) const {
    if (v >= lo && v <= hi) return v;
    if (pad == Padding::border) return std::clamp(v, 0.0, double(size - 1));
    if (pad == Padding::reflection) return reflect(v, lo, hi);
    return v;
  }
  // The index read for integer position i; -1 reads zero.
  int64_t index(int64_t i) const {
    if (pad == Padding::zeros) return i >= 0 && i < size ? i : -1;
    if (pad == Padding::border) return std::clamp<int64_t>(i, 0, size - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(double(i), lo, hi)), 0, size - 1);
  }
};

// Keys' cubic convolution weights (a = -0.75) for the taps at -1, 0, 1, 2 from floor(x).
void cubic_weights(double t, double w[4]) {
  const double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

Status grid_sample_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &grid = c.in(1);
  if (!x.is_float() || !grid.is_float()) return c.unsupported("integer X or grid");
  if (x.rank() != 4)
    return c.unsupported("input of rank " + std::to_string(x.rank()) + " (only 4-D [N,C,H,W] is implemented)");
  if (grid.rank() != 4 || grid.shape[0] != x.shape[0] || grid.shape[3] != 2)
    return c.error("grid " + shape_string(grid.shape) + " must be [N,H_out,W_out,2] for X " + shape_string(x.shape));
  std::string mode = c.attr_string("mode");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return c.error("mode must be bilinear, nearest or bicubic, is '" + mode + "'");
  const std::string pm = c.attr_string("padding_mode");
  const Padding pad = pm == "zeros" ? Padding::zeros : pm == "border" ? Padding::border : Padding::reflection;
  if (pm != "zeros" && pm != "border" && pm != "reflection")
    return c.error("padding_mode must be zeros, border or reflection, is '" + pm + "'");
  const bool ac = c.attr_int("align_corners") != 0;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Ho = grid.shape[1], Wo = grid.shape[2];
  const Axis ay(H, ac, pad), ax(W, ac, pad);
  Buf y = Buf::floats({N, C, Ho, Wo}, x.dtype);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const float* g = grid.f.data() + ((n * Ho + oy) * Wo + ox) * 2;
        double px = ax.denormalize(g[0], ac), py = ay.denormalize(g[1], ac);
        if (mode == "nearest") px = std::nearbyint(px), py = std::nearbyint(py);  // half to even
        px = ax.settle(px);
        py = ay.settle(py);
        for (int64_t ch = 0; ch < C; ++ch) {
          const float* img = x.f.data() + (n * C + ch) * H * W;
          auto at = [&](int64_t r, int64_t col) {
            const int64_t ri = ay.index(r), ci = ax.index(col);
            return ri < 0 || ci < 0 ? 0.0 : double(img[ri * W + ci]);
          };
          double v = 0;
          if (mode == "nearest") {
            v = at(static_cast<int64_t>(py), static_cast<int64_t>(px));
          } else {
            const auto x0 = static_cast<int64_t>(std::floor(px)), y0 = static_cast<int64_t>(std::floor(py));
            const double tx = px - double(x0), ty = py - double(y0);
            if (mode == "bilinear") {
              v = (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
                  ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
            } else {
              double wx[4], wy[4];
              cubic_weights(tx, wx);
              cubic_weights(ty, wy);
              for (int i = 0; i < 4; ++i) {
                double row = 0;
                for (int j = 0; j < 4; ++j) row += wx[j] * at(y0 - 1 + i, x0 - 1 + j);
                v += wy[i] * row;
              }
            }
          }
          y.f[((n * C + ch) * Ho + oy) * Wo + ox] = static_cast<float>(v);
        }
      }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_grid_sample_kernels(KernelTable& t) { t["GridSample"] = grid_sample_kernel; }

}  // namespace hpf::ref
