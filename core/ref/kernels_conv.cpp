// Reference kernels for windowed ops: Conv, ConvTranspose, MaxPool, AveragePool,
// GlobalAveragePool, GlobalMaxPool, MaxUnpool. Window geometry comes from core/ir/op_geometry so
// the shapes produced here are the shapes inference promised.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ir/op_geometry.hpp"
#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Steps a row-major multi-index through [lo, hi) per axis; false once it wraps around.
bool next_index(std::vector<int64_t>& idx, std::span<const int64_t> lo,
                std::span<const int64_t> hi) {
  for (size_t k = idx.size(); k-- > 0;) {
    if (++idx[k] < hi[k]) return true;
    idx[k] = lo[k];
  }
  return false;
}

// One stretch of a strided window sweep: for kernel tap `tap` (row-major over the kernel), the
// `count` consecutive positions a, a+1, ... of grid A along its last axis meet the positions
// b, b+stride, ... of grid B. Both offsets are flat within one spatial plane.
struct Run {
  int64_t tap, a, b, count;
};

// Every run where position p of grid A meets q = p*stride + tap*dilation - pad_begin of grid B,
// per axis, with q inside B. Conv sweeps the output (A) against the input (B); ConvTranspose the
// input (A) against the output (B), so both share one loop nest and neither tests bounds
// inside it. Runs come tap by tap, so each output sums its terms in the direct formula's order.
std::vector<Run> window_runs(const ir::WindowGeometry& g, std::span<const int64_t> a_dims,
                             std::span<const int64_t> b_dims) {
  const size_t n = a_dims.size();
  std::vector<Run> runs;
  if (numel(a_dims) == 0 || numel(b_dims) == 0) return runs;
  const auto a_str = strides_of(a_dims), b_str = strides_of(b_dims);
  std::vector<int64_t> zero(n, 0), tap(n, 0), lo(n), hi(n), off(n);
  int64_t tap_flat = 0;
  do {
    bool empty = false;
    for (size_t k = 0; k < n; ++k) {
      off[k] = tap[k] * g.dilations[k] - g.pads_begin[k];
      lo[k] = std::max<int64_t>(0, ceil_div(-off[k], g.strides[k]));
      hi[k] = std::min(a_dims[k], floor_div(b_dims[k] - 1 - off[k], g.strides[k]) + 1);
      empty = empty || hi[k] <= lo[k];
    }
    if (!empty) {
      // Rows: every axis but the last walks its range; the last is the run itself.
      std::vector<int64_t> row_lo(lo.begin(), lo.end() - 1), row_hi(hi.begin(), hi.end() - 1);
      std::vector<int64_t> p = row_lo;
      do {
        int64_t a = lo[n - 1] * a_str[n - 1];
        int64_t b = (lo[n - 1] * g.strides[n - 1] + off[n - 1]) * b_str[n - 1];
        for (size_t k = 0; k + 1 < n; ++k) {
          a += p[k] * a_str[k];
          b += (p[k] * g.strides[k] + off[k]) * b_str[k];
        }
        runs.push_back({tap_flat, a, b, hi[n - 1] - lo[n - 1]});
      } while (next_index(p, row_lo, row_hi));
    }
    ++tap_flat;
  } while (next_index(tap, zero, g.kernel));
  return runs;
}

std::string shape_of(const Buf& b) { return shape_string(b.shape); }

// Checks shared by Conv and ConvTranspose: float data, [N,C,spatial...] input, weight of the
// same rank, kernel_shape (when given) equal to the weight's spatial sizes.
Status check_conv_inputs(const KernelContext& ctx, std::vector<int64_t>& kernel) {
  const Buf &x = ctx.in(0), &w = ctx.in(1);
  if (!x.is_float() || !w.is_float())
    return ctx.unsupported("integer data (" + std::string(dtype_name(x.dtype)) + ", " +
                           std::string(dtype_name(w.dtype)) + "); use ConvInteger or QLinearConv");
  if (x.rank() < 3) return ctx.error("input must be [N,C,spatial...], got " + shape_of(x));
  if (w.rank() != x.rank())
    return ctx.error("weight " + shape_of(w) + " and input " + shape_of(x) + " differ in rank");
  const std::vector<int64_t> wk(w.shape.begin() + 2, w.shape.end());
  kernel = ctx.attr_ints("kernel_shape");
  if (kernel.empty()) kernel = wk;
  if (kernel != wk)
    return ctx.error("kernel_shape " + shape_string(kernel) + " does not match weight " +
                     shape_of(w));
  if (ctx.attr_int("group") < 1) return ctx.error("group must be >= 1");
  return {};
}

Status check_bias(const KernelContext& ctx, int64_t channels) {
  if (!ctx.has(2)) return {};
  const Buf& b = ctx.in(2);
  if (!b.is_float() || b.rank() != 1 || b.shape[0] != channels)
    return ctx.error("bias " + shape_of(b) + " must be [" + std::to_string(channels) + "]");
  return {};
}

Status conv(KernelContext& ctx) {
  std::vector<int64_t> kernel;
  HPF_RETURN_IF_ERROR(check_conv_inputs(ctx, kernel));
  const Buf &x = ctx.in(0), &w = ctx.in(1);
  const int64_t group = ctx.attr_int("group");
  const int64_t batch = x.shape[0], c_in = x.shape[1], c_out = w.shape[0], cg = w.shape[1];
  if (c_in != cg * group)
    return ctx.error("input " + shape_of(x) + " has " + std::to_string(c_in) +
                     " channels, weight " + shape_of(w) + " expects " + std::to_string(cg) +
                     " x group " + std::to_string(group));
  if (c_out % group != 0)
    return ctx.error("weight " + shape_of(w) + ": " + std::to_string(c_out) +
                     " output channels do not divide into " + std::to_string(group) + " groups");
  HPF_RETURN_IF_ERROR(check_bias(ctx, c_out));
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  auto geo =
      ir::window_geometry(in_dims, kernel, ctx.attr_ints("strides"), ctx.attr_ints("dilations"),
                          ctx.attr_ints("pads"), ctx.attr_string("auto_pad"), false);
  if (!geo.ok()) return ctx.error(geo.status().message());
  const ir::WindowGeometry& g = *geo;

  std::vector<int64_t> out_shape{batch, c_out};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Buf y = Buf::floats(out_shape, x.dtype);
  const int64_t in_plane = numel(in_dims), out_plane = numel(g.out), taps = numel(kernel);
  const int64_t m_per_group = c_out / group, step = g.strides.back();
  const auto runs = window_runs(g, g.out, in_dims);

  with_accumulation(ctx.accumulation(), [&](auto zero, auto round) {
    using A = decltype(zero);
    std::vector<A> acc(out_plane);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t m = 0; m < c_out; ++m) {
        std::fill(acc.begin(), acc.end(), zero);
        const int64_t first_c = (m / m_per_group) * cg;
        for (int64_t cl = 0; cl < cg; ++cl) {
          const float* xp = x.f.data() + (n * c_in + first_c + cl) * in_plane;
          const float* wp = w.f.data() + (m * cg + cl) * taps;
          for (const Run& r : runs) {
            const A wv = static_cast<A>(wp[r.tap]);
            const float* xr = xp + r.b;
            A* ar = acc.data() + r.a;
            for (int64_t j = 0; j < r.count; ++j)
              ar[j] = round(ar[j] + wv * static_cast<A>(xr[j * step]));
          }
        }
        const double bias = ctx.has(2) ? double(ctx.in(2).f[m]) : 0.0;
        float* yp = y.f.data() + (n * c_out + m) * out_plane;
        for (int64_t o = 0; o < out_plane; ++o) yp[o] = static_cast<float>(double(acc[o]) + bias);
      }
  });
  ctx.out[0] = std::move(y);
  return {};
}

Status conv_transpose(KernelContext& ctx) {
  std::vector<int64_t> kernel;
  HPF_RETURN_IF_ERROR(check_conv_inputs(ctx, kernel));
  const Buf &x = ctx.in(0), &w = ctx.in(1);
  const int64_t group = ctx.attr_int("group");
  const int64_t batch = x.shape[0], c_in = x.shape[1], m_per_group = w.shape[1];
  const int64_t c_out = m_per_group * group;
  if (w.shape[0] != c_in)
    return ctx.error("input " + shape_of(x) + " has " + std::to_string(c_in) +
                     " channels, weight " + shape_of(w) + " expects " + std::to_string(w.shape[0]));
  if (c_in % group != 0)
    return ctx.error("input " + shape_of(x) + ": " + std::to_string(c_in) +
                     " channels do not divide into " + std::to_string(group) + " groups");
  HPF_RETURN_IF_ERROR(check_bias(ctx, c_out));
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  auto geo = ir::conv_transpose_geometry(
      in_dims, kernel, ctx.attr_ints("strides"), ctx.attr_ints("dilations"), ctx.attr_ints("pads"),
      ctx.attr_ints("output_padding"), ctx.attr_ints("output_shape"), ctx.attr_string("auto_pad"));
  if (!geo.ok()) return ctx.error(geo.status().message());
  const ir::WindowGeometry& g = *geo;

  std::vector<int64_t> out_shape{batch, c_out};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Buf y = Buf::floats(out_shape, x.dtype);
  const int64_t in_plane = numel(in_dims), out_plane = numel(g.out), taps = numel(kernel);
  const int64_t cg = c_in / group, step = g.strides.back();
  // Output position q = p*stride + tap*dilation - pad_begin for input position p: the same
  // pairing as Conv with the grids swapped, scattering instead of gathering.
  const auto runs = window_runs(g, in_dims, g.out);

  with_accumulation(ctx.accumulation(), [&](auto zero, auto round) {
    using A = decltype(zero);
    std::vector<A> acc(out_plane);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t m = 0; m < c_out; ++m) {
        std::fill(acc.begin(), acc.end(), zero);
        const int64_t grp = m / m_per_group, ml = m % m_per_group;
        for (int64_t cl = 0; cl < cg; ++cl) {
          const int64_t c = grp * cg + cl;
          const float* xp = x.f.data() + (n * c_in + c) * in_plane;
          const float* wp = w.f.data() + (c * m_per_group + ml) * taps;
          for (const Run& r : runs) {
            const A wv = static_cast<A>(wp[r.tap]);
            const float* xr = xp + r.a;
            A* ar = acc.data() + r.b;
            for (int64_t j = 0; j < r.count; ++j)
              ar[j * step] = round(ar[j * step] + wv * static_cast<A>(xr[j]));
          }
        }
        const double bias = ctx.has(2) ? double(ctx.in(2).f[m]) : 0.0;
        float* yp = y.f.data() + (n * c_out + m) * out_plane;
        for (int64_t o = 0; o < out_plane; ++o) yp[o] = static_cast<float>(double(acc[o]) + bias);
      }
  });
  ctx.out[0] = std::move(y);
  return {};
}

// ---- pooling ----

// Per spatial axis and output position: the input positions the window covers (in tap order),
// and how many taps fall inside the explicitly padded input (AveragePool's count_include_pad
// divisor; the ceil_mode overhang past the end padding never counts).
struct PoolAxis {
  std::vector<std::vector<int64_t>> inside;
  std::vector<int64_t> padded_count;
};

std::vector<PoolAxis> pool_axes(const ir::WindowGeometry& g, std::span<const int64_t> in_dims) {
  std::vector<PoolAxis> axes(in_dims.size());
  for (size_t k = 0; k < in_dims.size(); ++k) {
    axes[k].inside.resize(g.out[k]);
    axes[k].padded_count.resize(g.out[k]);
    for (int64_t o = 0; o < g.out[k]; ++o)
      for (int64_t t = 0; t < g.kernel[k]; ++t) {
        const int64_t p = o * g.strides[k] + t * g.dilations[k] - g.pads_begin[k];
        if (p >= 0 && p < in_dims[k]) axes[k].inside[o].push_back(p);
        if (p >= -g.pads_begin[k] && p < in_dims[k] + g.pads_end[k]) ++axes[k].padded_count[o];
      }
  }
  return axes;
}

// Flat offsets (within one input plane) of the in-bounds cells of the window at output
// multi-index `o`, row-major over the window.
void window_cells(const std::vector<PoolAxis>& axes, std::span<const int64_t> in_strides,
                  std::span<const int64_t> o, std::vector<int64_t>& cells,
                  std::vector<int64_t>& scratch) {
  cells.assign(1, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    scratch.clear();
    for (int64_t base : cells)
      for (int64_t p : axes[k].inside[o[k]]) scratch.push_back(base + p * in_strides[k]);
    cells.swap(scratch);
  }
}

Expected<ir::WindowGeometry> pool_geometry(const KernelContext& ctx,
                                           std::span<const int64_t> in_dims) {
  auto g = ir::window_geometry(in_dims, ctx.attr_ints("kernel_shape"), ctx.attr_ints("strides"),
                               ctx.attr_ints("dilations"), ctx.attr_ints("pads"),
                               ctx.attr_string("auto_pad"), ctx.attr_int("ceil_mode") != 0);
  if (!g.ok()) return ctx.error(g.status().message());
  return g;
}

// Calls f(plane, out_flat, cells, padded_count) for every (n*C + c) plane and output position
// of a pool: the in-bounds cells of the window and its count_include_pad divisor.
template <typename F>
void for_each_window(const Buf& x, const ir::WindowGeometry& g, F&& f) {
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  const auto axes = pool_axes(g, in_dims);
  const auto in_strides = strides_of(in_dims);
  const int64_t planes = x.shape[0] * x.shape[1], out_plane = numel(g.out);
  if (planes == 0 || out_plane == 0) return;
  // Windows depend only on the output position, so gather them once, not once per plane.
  std::vector<std::vector<int64_t>> cells(out_plane);
  std::vector<int64_t> padded(out_plane, 1);
  std::vector<int64_t> o(g.out.size(), 0), zero(g.out.size(), 0), scratch;
  for (int64_t q = 0; q < out_plane; ++q, next_index(o, zero, g.out)) {
    window_cells(axes, in_strides, o, cells[q], scratch);
    for (size_t k = 0; k < axes.size(); ++k) padded[q] *= axes[k].padded_count[o[k]];
  }
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t q = 0; q < out_plane; ++q) f(plane, q, cells[q], padded[q]);
}

Status check_pool_input(const KernelContext& ctx) {
  const Buf& x = ctx.in(0);
  if (x.rank() < 3) return ctx.error("input must be [N,C,spatial...], got " + shape_of(x));
  return {};
}

// Index of a cell as MaxPool's Indices output reports it: flat over the whole input, the
// spatial part row-major (storage_order 0) or column-major (storage_order 1).
int64_t pool_index(int64_t plane, int64_t cell, std::span<const int64_t> in_dims,
                   bool column_major) {
  const int64_t plane_size = numel(in_dims);
  if (!column_major) return plane * plane_size + cell;
  int64_t idx = 0, mult = 1;
  for (size_t k = 0; k < in_dims.size(); ++k) {
    int64_t below = 1;
    for (size_t j = k + 1; j < in_dims.size(); ++j) below *= in_dims[j];
    idx += (cell / below % in_dims[k]) * mult;
    mult *= in_dims[k];
  }
  return plane * plane_size + idx;
}

template <typename T>
void max_pool_into(const std::vector<T>& xv, std::vector<T>& yv, std::vector<int64_t>* indices,
                   const Buf& x, const ir::WindowGeometry& g, bool column_major) {
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  const int64_t in_plane = numel(in_dims), out_plane = numel(g.out);
  for_each_window(x, g, [&](int64_t plane, int64_t q, const std::vector<int64_t>& cells, int64_t) {
    const T* xp = xv.data() + plane * in_plane;
    // Only real cells compete, so padding never wins; a window over padding alone yields the
    // lowest value and index -1, as onnxruntime does.
    T best = std::numeric_limits<T>::lowest();
    int64_t best_cell = -1;
    for (int64_t c : cells)
      if (best_cell < 0 || xp[c] > best) {
        best = xp[c];
        best_cell = c;
      }
    yv[plane * out_plane + q] = best;
    if (indices)
      (*indices)[plane * out_plane + q] =
          best_cell < 0 ? -1 : pool_index(plane, best_cell, in_dims, column_major);
  });
}

Status max_pool(KernelContext& ctx) {
  HPF_RETURN_IF_ERROR(check_pool_input(ctx));
  const Buf& x = ctx.in(0);
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  HPF_ASSIGN_OR_RETURN(auto g, pool_geometry(ctx, in_dims));
  const int64_t order = ctx.attr_int("storage_order");
  if (order != 0 && order != 1)
    return ctx.error("storage_order must be 0 or 1, is " + std::to_string(order));
  std::vector<int64_t> out_shape{x.shape[0], x.shape[1]};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Buf y = Buf::like(x);
  y.shape = out_shape;
  const bool want_indices = ctx.out.size() > 1;
  Buf idx = Buf::ints(want_indices ? out_shape : std::vector<int64_t>{0});
  std::vector<int64_t>* indices = want_indices ? &idx.i : nullptr;
  if (x.is_float()) {
    y.f.assign(numel(out_shape), 0.0f);
    max_pool_into(x.f, y.f, indices, x, g, order == 1);
  } else {
    y.i.assign(numel(out_shape), 0);
    max_pool_into(x.i, y.i, indices, x, g, order == 1);
  }
  ctx.out[0] = std::move(y);
  if (want_indices) ctx.out[1] = std::move(idx);
  return {};
}

Status average_pool(KernelContext& ctx) {
  HPF_RETURN_IF_ERROR(check_pool_input(ctx));
  const Buf& x = ctx.in(0);
  if (!x.is_float()) return ctx.unsupported("integer input " + std::string(dtype_name(x.dtype)));
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  HPF_ASSIGN_OR_RETURN(auto g, pool_geometry(ctx, in_dims));
  const bool include_pad = ctx.attr_int("count_include_pad") != 0;
  std::vector<int64_t> out_shape{x.shape[0], x.shape[1]};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Buf y = Buf::floats(out_shape, x.dtype);
  const int64_t in_plane = numel(in_dims), out_plane = numel(g.out);
  with_accumulation(ctx.accumulation(), [&](auto zero, auto round) {
    using A = decltype(zero);
    for_each_window(
        x, g, [&](int64_t plane, int64_t q, const std::vector<int64_t>& cells, int64_t padded) {
          const float* xp = x.f.data() + plane * in_plane;
          A sum = zero;
          for (int64_t c : cells) sum = round(sum + static_cast<A>(xp[c]));
          // A window over padding alone has no real cells: 0/0 gives NaN, the average of nothing.
          const auto count =
              static_cast<double>(include_pad ? padded : static_cast<int64_t>(cells.size()));
          y.f[plane * out_plane + q] = static_cast<float>(double(sum) / count);
        });
  });
  ctx.out[0] = std::move(y);
  return {};
}

Status global_average_pool(KernelContext& ctx) {
  HPF_RETURN_IF_ERROR(check_pool_input(ctx));
  const Buf& x = ctx.in(0);
  if (!x.is_float()) return ctx.unsupported("integer input " + std::string(dtype_name(x.dtype)));
  std::vector<int64_t> out_shape(x.shape.size(), 1);
  out_shape[0] = x.shape[0];
  out_shape[1] = x.shape[1];
  Buf y = Buf::floats(out_shape, x.dtype);
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t plane_size = numel(std::span(x.shape).subspan(2));
  with_accumulation(ctx.accumulation(), [&](auto zero, auto round) {
    using A = decltype(zero);
    for (int64_t p = 0; p < planes; ++p) {
      const float* xp = x.f.data() + p * plane_size;
      A sum = zero;
      for (int64_t k = 0; k < plane_size; ++k) sum = round(sum + static_cast<A>(xp[k]));
      y.f[p] = static_cast<float>(double(sum) / static_cast<double>(plane_size));
    }
  });
  ctx.out[0] = std::move(y);
  return {};
}

// GlobalMaxPool: the largest value of each [N, C] plane (NaN if the plane holds one).
Status global_max_pool(KernelContext& ctx) {
  HPF_RETURN_IF_ERROR(check_pool_input(ctx));
  const Buf& x = ctx.in(0);
  std::vector<int64_t> out_shape(x.shape.size(), 1);
  out_shape[0] = x.shape[0];
  out_shape[1] = x.shape[1];
  Buf y = x.is_float() ? Buf::floats(out_shape, x.dtype) : Buf::ints(out_shape, x.dtype);
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t plane_size = numel(std::span(x.shape).subspan(2));
  if (plane_size == 0) return ctx.error("spatial size is 0, a maximum of nothing: " + shape_of(x));
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t base = p * plane_size;
    if (x.is_float()) {
      float m = x.f[base];
      for (int64_t k = 1; k < plane_size && !std::isnan(m); ++k) {
        const float v = x.f[base + k];
        if (std::isnan(v) || v > m) m = v;
      }
      y.f[p] = m;
    } else {
      y.i[p] = *std::max_element(x.i.begin() + base, x.i.begin() + base + plane_size);
    }
  }
  ctx.out[0] = std::move(y);
  return {};
}

// MaxUnpool: scatters X to the flat positions I names in a zero tensor of the shape MaxPool's
// input had ((in - 1) * stride + kernel - pads per spatial axis). An output_shape input enlarges
// it: the unpooled tensor sits in its leading corner, zeros after (as the ONNX reference does).
Status max_unpool(KernelContext& ctx) {
  HPF_RETURN_IF_ERROR(check_pool_input(ctx));
  const Buf &x = ctx.in(0), &idx = ctx.in(1);
  if (!x.is_float())
    return ctx.error("X must be floating point, is " + std::string(dtype_name(x.dtype)));
  if (idx.is_float() || idx.shape != x.shape)
    return ctx.error("indices must be integers of the shape of X " + shape_of(x) + ", got " +
                     shape_of(idx));
  const size_t n = x.shape.size() - 2;
  const auto ks = ctx.attr_ints("kernel_shape"), st = ctx.attr_ints("strides"),
             pads = ctx.attr_ints("pads");
  if (ks.size() != n || (!st.empty() && st.size() != n) || (!pads.empty() && pads.size() != 2 * n))
    return ctx.error("kernel_shape, strides and pads must match the " + std::to_string(n) +
                     " spatial dimensions");
  std::vector<int64_t> inferred{x.shape[0], x.shape[1]};
  for (size_t k = 0; k < n; ++k)
    inferred.push_back((x.shape[k + 2] - 1) * (st.empty() ? 1 : st[k]) + ks[k] -
                       (pads.empty() ? 0 : pads[k] + pads[k + n]));
  std::vector<int64_t> out_shape = ctx.has(2) ? ctx.in(2).as_ints() : inferred;
  bool fits = out_shape.size() == inferred.size();
  for (size_t k = 0; fits && k < out_shape.size(); ++k)
    fits = out_shape[k] >= inferred[k] && inferred[k] >= 0;
  if (!fits || out_shape[0] != inferred[0] || out_shape[1] != inferred[1])
    return ctx.error("output_shape " + shape_string(out_shape) +
                     " is smaller than the unpooled shape " + shape_string(inferred));
  const int64_t total = numel(inferred);
  const auto in_strides = strides_of(inferred), out_strides = strides_of(out_shape);
  Buf y = Buf::floats(out_shape, x.dtype);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t at = idx.i[k];
    if (at < 0 || at >= total)
      return ctx.error("index " + std::to_string(at) + " is outside the unpooled tensor " +
                       shape_string(inferred));
    int64_t dst = 0;
    for (size_t d = 0; d < inferred.size(); ++d)
      dst += at / in_strides[d] % inferred[d] * out_strides[d];
    y.f[dst] = x.f[k];
  }
  ctx.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_conv_kernels(KernelTable& t) {
  t["GlobalMaxPool"] = global_max_pool;
  t["MaxUnpool"] = max_unpool;
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = max_pool;
  t["AveragePool"] = average_pool;
  t["GlobalAveragePool"] = global_average_pool;
}

}  // namespace hpf::ref
