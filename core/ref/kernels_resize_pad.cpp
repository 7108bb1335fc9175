// Reference kernels for Resize (opset 11-19 form: nearest, linear, cubic; tf_crop_and_resize
// with roi and extrapolation_value) and Pad (opset 2-19 forms). Both reduce to a per-axis map
// from output coordinate to input coordinate(s), applied row by row.
#include <algorithm>
#include <cmath>

#include "core/ir/op_geometry.hpp"
#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// Calls f(out_row, in_row) for every row (last axis) of an N-d output. maps[k][j] is the input
// coordinate output coordinate j reads along axis k, -1 for none (padding); f gets the row's
// flat output offset and its input offset, -1 when any outer axis reads nothing. The last axis
// is left to f, which keeps the inner loop a plain gather.
template <typename F>
void for_each_row(std::span<const int64_t> out_dims, const std::vector<std::vector<int64_t>>& maps,
                  std::span<const int64_t> in_strides, F&& f) {
  const size_t rank = out_dims.size();
  if (numel(out_dims) == 0) return;
  const int64_t row_len = rank ? out_dims[rank - 1] : 1;
  std::vector<int64_t> idx(rank ? rank - 1 : 0, 0);
  for (int64_t out_row = 0;; out_row += row_len) {
    int64_t in_off = 0;
    for (size_t k = 0; k < idx.size() && in_off >= 0; ++k) {
      const int64_t m = maps[k][idx[k]];
      in_off = m < 0 ? -1 : in_off + m * in_strides[k];
    }
    f(out_row, in_off);
    size_t k = idx.size();
    while (k-- > 0) {
      if (++idx[k] < out_dims[k]) break;
      idx[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) return;
  }
}

// ---- Resize ----



template <typename T>
void gather_nearest(const std::vector<T>& x, std::vector<T>& y, std::span<const int64_t> in_dims,
                    std::span<const int64_t> out_dims,
                    const std::vector<std::vector<int64_t>>& maps) {
  const auto in_strides = strides_of(in_dims);
  const std::vector<int64_t>& last = maps.back();
  for_each_row(out_dims, maps, in_strides, [&](int64_t out_row, int64_t in_row) {
    for (size_t j = 0; j < last.size(); ++j) y[out_row + j] = x[in_row + last[j]];
  });
}

// Where one output coordinate of an axis reads: up to four input indices with weights, or the
// extrapolation value (tf_crop_and_resize outside the crop).
struct Taps {
  int64_t idx[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
  int n = 0;
  bool extrapolate = false;
};

// Keys' cubic convolution weights for the taps at -1, 0, 1, 2 from the left neighbour, at
// distance `t` in (0, 1] from it (ONNX takes 1, not 0, when the coordinate is an integer).
void cubic_weights(double t, double a, double w[4]) {
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// The taps of input coordinate v on an axis of size `in` for mode linear or cubic. Neighbours
// outside the axis read the edge (ONNX pads with edge values), or drop out with renormalised
// weights when exclude_outside is set (cubic).
Taps interpolation_taps(double v, int64_t in, const std::string& mode, double cubic_a, bool exclude_outside) {
  Taps t;
  if (mode == "linear") {
    // Clamping the coordinate is what ONNX's edge-padded neighbour lookup amounts to.
    v = std::clamp(v, 0.0, double(in - 1));
    const auto i0 = static_cast<int64_t>(std::floor(v));
    t.n = 2;
    t.idx[0] = i0;
    t.idx[1] = std::min(i0 + 1, in - 1);
    t.w[1] = v - double(i0);
    t.w[0] = 1 - t.w[1];
    return t;
  }
  auto left = static_cast<int64_t>(std::floor(v));
  double ratio = v - double(left);
  if (ratio == 0) ratio = 1, left -= 1;
  t.n = 4;
  cubic_weights(ratio, cubic_a, t.w);
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = left - 1 + k;
    if (exclude_outside && (i < 0 || i >= in)) t.w[k] = 0;
    sum += t.w[k];
    t.idx[k] = std::clamp<int64_t>(i, 0, in - 1);
  }
  if (exclude_outside)
    for (double& w : t.w) w /= sum;
  return t;
}

// One interpolation pass along `axis` of `cur` (dims `dims`), replacing that axis's size by
// taps.size(); extrapolated positions take `fill`.
void interpolate_axis(std::vector<double>& cur, std::vector<int64_t>& dims, size_t axis, const std::vector<Taps>& taps,
                      double fill) {
  const int64_t in = dims[axis], out = static_cast<int64_t>(taps.size());
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= dims[k];
  for (size_t k = axis + 1; k < dims.size(); ++k) inner *= dims[k];
  std::vector<double> next(outer * out * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out; ++j) {
      const Taps& t = taps[j];
      double* r = next.data() + (o * out + j) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        double s = 0;
        for (int k = 0; k < t.n; ++k) s += t.w[k] * cur[(o * in + t.idx[k]) * inner + i];
        r[i] = t.extrapolate ? fill : s;
      }
    }
  cur.swap(next);
  dims[axis] = out;
}

Status resize(KernelContext& ctx) {
  const Buf& x = ctx.in(0);
  const std::string mode = ctx.attr_string("mode");
  const std::string coord = ctx.attr_string("coordinate_transformation_mode");
  const std::string nearest_mode = ctx.attr_string("nearest_mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.unsupported("mode '" + mode + "' is not supported (nearest, linear, cubic)");
  const bool crop = coord == "tf_crop_and_resize";
  if (!crop && !ir::is_resize_coordinate_mode(coord))
    return ctx.unsupported("coordinate_transformation_mode '" + coord + "'");
  if (mode == "nearest" && !ir::is_resize_nearest_mode(nearest_mode))
    return ctx.unsupported("nearest_mode '" + nearest_mode + "'");

  const size_t rank = x.shape.size();
  std::vector<int64_t> out_dims(rank);
  std::vector<double> scales(rank);
  // Opset 11-12 models pass an empty tensor for the unused one of scales/sizes.
  const bool has_sizes = ctx.has(3) && ctx.in(3).numel() > 0;
  const bool has_scales = ctx.has(2) && ctx.in(2).numel() > 0;
  if (has_sizes) {
    const auto sizes = ctx.in(3).as_ints();
    if (sizes.size() != rank)
      return ctx.error("sizes has " + std::to_string(sizes.size()) + " values for input " +
                       shape_string(x.shape));
    for (size_t k = 0; k < rank; ++k) {
      if (sizes[k] < 0) return ctx.error("sizes " + shape_string(sizes) + " has a negative size");
      out_dims[k] = sizes[k];
      scales[k] = x.shape[k] > 0 ? double(sizes[k]) / double(x.shape[k]) : 1.0;
    }
  } else if (has_scales) {
    const Buf& s = ctx.in(2);
    if (static_cast<size_t>(s.numel()) != rank)
      return ctx.error("scales has " + std::to_string(s.numel()) + " values for input " +
                       shape_string(x.shape));
    for (size_t k = 0; k < rank; ++k) {
      // Shape inference computes floor(in * scale) from the FP32 scale in double; so do we.
      scales[k] = s.get(static_cast<int64_t>(k));
      if (!(scales[k] > 0)) return ctx.error("scales must be positive");
      if (crop) return ctx.unsupported("tf_crop_and_resize with scales (only sizes is implemented)");
      out_dims[k] = static_cast<int64_t>(std::floor(double(x.shape[k]) * scales[k]));
    }
  } else {
    return ctx.error("Resize needs scales or sizes");
  }
  for (size_t k = 0; k < rank; ++k)
    if (x.shape[k] == 0 && out_dims[k] > 0)
      return ctx.error("cannot resize the empty axis " + std::to_string(k) + " of " +
                       shape_string(x.shape));

  // tf_crop_and_resize: roi holds the normalised crop, starts then ends, one pair per axis.
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (crop) {
    if (!ctx.has(1) || ctx.in(1).numel() != static_cast<int64_t>(2 * rank))
      return ctx.error("tf_crop_and_resize needs roi with " + std::to_string(2 * rank) + " values");
    for (size_t k = 0; k < rank; ++k) {
      roi_start[k] = ctx.in(1).get(static_cast<int64_t>(k));
      roi_end[k] = ctx.in(1).get(static_cast<int64_t>(rank + k));
    }
  }

  Buf y = Buf::like(x);
  y.shape = out_dims;
  if (mode == "nearest" && !crop) {
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t k = 0; k < rank; ++k)
      for (int64_t j = 0; j < out_dims[k]; ++j)
        maps[k].push_back(
            ir::resize_nearest_index(ir::resize_source_coordinate(double(j), x.shape[k], out_dims[k], scales[k], coord),
                          nearest_mode, x.shape[k]));
    if (rank == 0) {
      y = x;
    } else if (x.is_float()) {
      y.f.assign(numel(out_dims), 0.0f);
      gather_nearest(x.f, y.f, x.shape, out_dims, maps);
    } else {
      y.i.assign(numel(out_dims), 0);
      gather_nearest(x.i, y.i, x.shape, out_dims, maps);
    }
    ctx.out[0] = std::move(y);
    return {};
  }

  if (!x.is_float())
    return ctx.unsupported(mode + " mode on integer input " + std::string(dtype_name(x.dtype)));
  // Separable: one interpolation pass per resized axis; an axis left at scale 1 (and not
  // cropped) is copied as is.
  const double cubic_a = ctx.attr_float("cubic_coeff_a"), fill = ctx.attr_float("extrapolation_value");
  const bool exclude_outside = ctx.attr_int("exclude_outside") != 0;
  std::vector<double> cur(x.f.begin(), x.f.end());
  std::vector<int64_t> dims = x.shape;
  for (size_t k = 0; k < rank; ++k) {
    const int64_t in = x.shape[k], out = out_dims[k];
    if (out == in && scales[k] == 1.0 && roi_start[k] == 0.0 && roi_end[k] == 1.0) continue;
    std::vector<Taps> taps(out);
    for (int64_t j = 0; j < out; ++j) {
      const double v = crop ? ir::resize_crop_coordinate(double(j), in, out, roi_start[k], roi_end[k])
                            : ir::resize_source_coordinate(double(j), in, out, scales[k], coord);
      if (crop && (v < 0 || v > double(in - 1))) {
        taps[j].extrapolate = true;
      } else if (mode == "nearest") {
        taps[j].n = 1;
        taps[j].idx[0] = ir::resize_nearest_index(v, nearest_mode, in);
        taps[j].w[0] = 1;
      } else {
        taps[j] = interpolation_taps(v, in, mode, cubic_a, exclude_outside);
      }
    }
    interpolate_axis(cur, dims, k, taps, fill);
  }
  y.f.assign(cur.begin(), cur.end());
  ctx.out[0] = std::move(y);
  return {};
}

// ---- Pad ----

// The input coordinate each output coordinate of one axis copies (-1: constant cell), with
// errors naming the node and the axis.
Expected<std::vector<int64_t>> pad_map(const KernelContext& ctx, const std::string& mode,
                                       int64_t len, int64_t begin, int64_t end, size_t axis) {
  auto map = ir::pad_source_map(mode, len, begin, end);
  if (!map.ok())
    return ctx.error("axis " + std::to_string(axis) + " of size " + std::to_string(len) + ", pads [" +
                     std::to_string(begin) + "," + std::to_string(end) + "]: " + map.status().message());
  return map;
}

template <typename T>
void pad_into(const std::vector<T>& x, std::vector<T>& y, std::span<const int64_t> in_dims,
              std::span<const int64_t> out_dims, const std::vector<std::vector<int64_t>>& maps,
              T value) {
  const auto in_strides = strides_of(in_dims);
  const std::vector<int64_t>& last = maps.back();
  for_each_row(out_dims, maps, in_strides, [&](int64_t out_row, int64_t in_row) {
    for (size_t j = 0; j < last.size(); ++j)
      y[out_row + j] = in_row < 0 || last[j] < 0 ? value : x[in_row + last[j]];
  });
}

Status pad(KernelContext& ctx) {
  const Buf& x = ctx.in(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  const std::string mode = ctx.attr_string("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.unsupported("mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  std::vector<int64_t> pads;
  if (ctx.has(1))
    pads = ctx.in(1).as_ints();
  else if (ctx.has_attr("pads"))
    pads = ctx.attr_ints("pads");
  else
    return ctx.error("Pad needs pads (input 1, or the attribute before opset 11)");
  std::vector<int64_t> axes;
  if (ctx.has(3)) {
    auto a = ir::normalize_axes(ctx.in(3).as_ints(), rank);
    if (!a.ok()) return ctx.error(a.status().message());
    axes = *a;
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  if (pads.size() != 2 * axes.size())
    return ctx.error("pads " + shape_string(pads) + " has " + std::to_string(pads.size()) +
                     " values, expected " + std::to_string(2 * axes.size()) + " for input " +
                     shape_string(x.shape));
  const double value =
      ctx.has(2) && ctx.in(2).numel() > 0 ? ctx.in(2).get(0) : double(ctx.attr_float("value"));

  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t j = 0; j < axes.size(); ++j) {
    begin[axes[j]] = pads[j];
    end[axes[j]] = pads[j + axes.size()];
  }
  std::vector<std::vector<int64_t>> maps(rank);
  std::vector<int64_t> out_dims(rank);
  for (int64_t k = 0; k < rank; ++k) {
    HPF_ASSIGN_OR_RETURN(maps[k],
                         pad_map(ctx, mode, x.shape[k], begin[k], end[k], static_cast<size_t>(k)));
    out_dims[k] = static_cast<int64_t>(maps[k].size());
  }
  Buf y = Buf::like(x);
  y.shape = out_dims;
  if (rank == 0) {
    y = x;
  } else if (x.is_float()) {
    y.f.assign(numel(out_dims), 0.0f);
    pad_into(x.f, y.f, x.shape, out_dims, maps, static_cast<float>(value));
  } else {
    y.i.assign(numel(out_dims), 0);
    pad_into(x.i, y.i, x.shape, out_dims, maps, static_cast<int64_t>(value));
  }
  ctx.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_resize_pad_kernels(KernelTable& t) {
  t["Resize"] = resize;
  t["Pad"] = pad;
}

}  // namespace hpf::ref
