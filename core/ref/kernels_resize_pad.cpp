// Reference kernels for Resize (opset 11-19 form) and Pad (opset 2-19 forms). Both reduce to a
// per-axis map from output coordinate to input coordinate(s), applied row by row.
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

// Linear interpolation along one axis of `cur` (dims `dims`), in place of that axis's size.
void linear_axis(std::vector<double>& cur, std::vector<int64_t>& dims, size_t axis, int64_t out,
                 double scale, const std::string& mode) {
  const int64_t in = dims[axis];
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= dims[k];
  for (size_t k = axis + 1; k < dims.size(); ++k) inner *= dims[k];
  std::vector<int64_t> i0(out), i1(out);
  std::vector<double> w1(out);
  for (int64_t j = 0; j < out; ++j) {
    // Clamping the coordinate is what ONNX's edge-padded neighbour lookup amounts to.
    const double v =
        std::clamp(ir::resize_source_coordinate(double(j), in, out, scale, mode), 0.0, double(in - 1));
    i0[j] = static_cast<int64_t>(std::floor(v));
    i1[j] = std::min(i0[j] + 1, in - 1);
    w1[j] = v - double(i0[j]);
  }
  std::vector<double> next(outer * out * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out; ++j) {
      const double* a = cur.data() + (o * in + i0[j]) * inner;
      const double* b = cur.data() + (o * in + i1[j]) * inner;
      double* r = next.data() + (o * out + j) * inner;
      for (int64_t i = 0; i < inner; ++i) r[i] = (1 - w1[j]) * a[i] + w1[j] * b[i];
    }
  cur.swap(next);
  dims[axis] = out;
}

Status resize(KernelContext& ctx) {
  const Buf& x = ctx.in(0);
  const std::string mode = ctx.attr_string("mode");
  const std::string coord = ctx.attr_string("coordinate_transformation_mode");
  const std::string nearest_mode = ctx.attr_string("nearest_mode");
  if (mode != "nearest" && mode != "linear")
    return ctx.unsupported("mode '" + mode + "' is not supported (nearest, linear)");
  if (coord == "tf_crop_and_resize")
    return ctx.unsupported(
        "coordinate_transformation_mode 'tf_crop_and_resize' is not supported "
        "(roi cropping and extrapolation_value are not implemented)");
  if (!ir::is_resize_coordinate_mode(coord))
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
      out_dims[k] = static_cast<int64_t>(std::floor(double(x.shape[k]) * scales[k]));
    }
  } else {
    return ctx.error("Resize needs scales or sizes");
  }
  for (size_t k = 0; k < rank; ++k)
    if (x.shape[k] == 0 && out_dims[k] > 0)
      return ctx.error("cannot resize the empty axis " + std::to_string(k) + " of " +
                       shape_string(x.shape));

  Buf y = Buf::like(x);
  y.shape = out_dims;
  if (mode == "nearest") {
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
    return ctx.unsupported("linear mode on integer input " + std::string(dtype_name(x.dtype)));
  // Multilinear = one linear pass per resized axis; an axis left at scale 1 is copied as is.
  std::vector<double> cur(x.f.begin(), x.f.end());
  std::vector<int64_t> dims = x.shape;
  for (size_t k = 0; k < rank; ++k)
    if (out_dims[k] != x.shape[k] || scales[k] != 1.0)
      linear_axis(cur, dims, k, out_dims[k], scales[k], coord);
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
