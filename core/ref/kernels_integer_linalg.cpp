// Reference kernels for integer and quantised linear algebra: MatMulInteger, ConvInteger (int32
// results) and QLinearMatMul, QLinearConv (8-bit results). Zero points are subtracted first,
// products are summed exactly in int64, and the QLinear ops requantise as ONNX specifies:
// y = saturate(round_half_even(sum * (scale_a * scale_b / scale_y)) + zero_point_y).
#include <algorithm>
#include <cmath>

#include "core/ir/op_geometry.hpp"
#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

Status require_8bit(const KernelContext& c, size_t k, const char* what) {
  const DType t = c.in(k).dtype;
  if (t != DType::I8 && t != DType::U8)
    return c.error(std::string(what) + " must be int8 or uint8, is " + std::string(dtype_name(t)));
  return {};
}

// A quantisation parameter (zero point or scale) of `data`, one value per element of `data`:
// a scalar applies to all; otherwise it broadcasts against `data`, a 1-D parameter of a row-wise
// input ([.., M, K] with M values) standing for shape [M, 1]. Absent parameters are 0.
Expected<std::vector<double>> per_element(const KernelContext& c, size_t k, const Buf& data, bool row_wise,
                                          const char* what) {
  std::vector<double> out(data.numel(), 0.0);
  if (!c.has(k)) return out;
  const Buf& p = c.in(k);
  std::vector<int64_t> shape = p.shape;
  if (row_wise && p.rank() == 1 && p.numel() > 1 && data.rank() >= 2) shape = {p.numel(), 1};
  std::vector<std::vector<int64_t>> shapes{shape, data.shape};
  auto b = broadcast(shapes);
  if (p.numel() != 1 && (!b.ok() || *b != data.shape))
    return c.error(std::string(what) + " " + shape_string(p.shape) + " does not fit input " + shape_string(data.shape));
  if (p.numel() == 1) {
    std::fill(out.begin(), out.end(), p.get(0));
    return out;
  }
  BroadcastIndexer ix(shape, data.shape);
  for (int64_t e = 0; e < data.numel(); ++e) out[e] = p.get(ix(e));
  return out;
}

// Batched numpy matmul of A' = A - zp_a and B' = B - zp_b; calls emit(flat output index, exact
// sum, flat index into A of the row's first element, flat index into B of the column's first).
struct MatmulDims {
  std::vector<int64_t> out_shape;
  int64_t m = 0, k = 0, n = 0;
};

template <typename Emit>
Expected<MatmulDims> int_matmul(const KernelContext& c, const Buf& a, const std::vector<double>& za, const Buf& b,
                                const std::vector<double>& zb, Emit emit) {
  if (a.rank() == 0 || b.rank() == 0) return c.error("inputs must have rank >= 1");
  std::vector<int64_t> sa = a.shape, sb = b.shape;
  if (a.rank() == 1) sa.insert(sa.begin(), 1);
  if (b.rank() == 1) sb.push_back(1);
  MatmulDims d;
  d.m = sa[sa.size() - 2], d.k = sa.back(), d.n = sb.back();
  if (sb[sb.size() - 2] != d.k)
    return c.error("inner dimensions differ: " + shape_string(a.shape) + " x " + shape_string(b.shape));
  std::vector<std::vector<int64_t>> batch{{sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2}};
  auto bshape = broadcast(batch);
  if (!bshape.ok()) return c.error("batch dimensions: " + bshape.status().message());
  d.out_shape = *bshape;
  if (a.rank() > 1) d.out_shape.push_back(d.m);
  if (b.rank() > 1) d.out_shape.push_back(d.n);
  BroadcastIndexer ia(batch[0], *bshape), ib(batch[1], *bshape);
  const int64_t nb = numel(*bshape);
  for (int64_t t = 0; t < nb; ++t) {
    const int64_t a0 = ia(t) * d.m * d.k, b0 = ib(t) * d.k * d.n;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        int64_t s = 0;
        for (int64_t p = 0; p < d.k; ++p) {
          const int64_t ea = a0 + i * d.k + p, eb = b0 + p * d.n + j;
          s += (a.i[ea] - static_cast<int64_t>(za[ea])) * (b.i[eb] - static_cast<int64_t>(zb[eb]));
        }
        emit((t * d.m + i) * d.n + j, s, a0 + i * d.k, b0 + j);
      }
  }
  return d;
}

// Requantises an exact sum to the 8-bit format `t`, as the ONNX reference does: the FP32
// multiplier applied in double, rounded half to even, saturated.
int64_t requantize(int64_t sum, float multiplier, double zero_point, DType t) {
  const double v = std::nearbyint(double(sum) * double(multiplier)) + zero_point;
  return static_cast<int64_t>(std::clamp(v, double(qmin(t)), double(qmax(t))));
}

Status matmul_integer_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &b = c.in(1);
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "A"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 1, "B"));
  HPF_ASSIGN_OR_RETURN(auto za, per_element(c, 2, a, true, "a_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto zb, per_element(c, 3, b, false, "b_zero_point"));
  std::vector<int64_t> sums;
  HPF_ASSIGN_OR_RETURN(MatmulDims d, int_matmul(c, a, za, b, zb, [&](int64_t o, int64_t s, int64_t, int64_t) {
                         if (static_cast<int64_t>(sums.size()) <= o) sums.resize(o + 1);
                         sums[o] = s;
                       }));
  Buf y = Buf::ints(d.out_shape, DType::I32);
  std::copy(sums.begin(), sums.end(), y.i.begin());
  c.out[0] = std::move(y);
  return {};
}

Status qlinear_matmul_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &b = c.in(3);
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "a"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 3, "b"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 7, "y_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto sa, per_element(c, 1, a, true, "a_scale"));
  HPF_ASSIGN_OR_RETURN(auto za, per_element(c, 2, a, true, "a_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto sb, per_element(c, 4, b, false, "b_scale"));
  HPF_ASSIGN_OR_RETURN(auto zb, per_element(c, 5, b, false, "b_zero_point"));
  if (c.in(6).numel() != 1 || c.in(7).numel() != 1) return c.unsupported("per-axis y_scale or y_zero_point");
  const float ys = static_cast<float>(c.in(6).get(0));
  const double yz = c.in(7).get(0);
  const DType t = c.in(7).dtype;
  std::vector<int64_t> vals;
  HPF_ASSIGN_OR_RETURN(MatmulDims d, int_matmul(c, a, za, b, zb, [&](int64_t o, int64_t s, int64_t ra, int64_t cb) {
                         if (static_cast<int64_t>(vals.size()) <= o) vals.resize(o + 1);
                         const float mult = static_cast<float>(sa[ra]) * static_cast<float>(sb[cb]) / ys;
                         vals[o] = requantize(s, mult, yz, t);
                       }));
  Buf y = Buf::ints(d.out_shape, t);
  std::copy(vals.begin(), vals.end(), y.i.begin());
  c.out[0] = std::move(y);
  return {};
}

// ---- convolution ----

// Steps a row-major multi-index through [0, hi) per axis; false once it wraps around.
bool next_index(std::vector<int64_t>& idx, std::span<const int64_t> hi) {
  for (size_t k = idx.size(); k-- > 0;) {
    if (++idx[k] < hi[k]) return true;
    idx[k] = 0;
  }
  return false;
}

struct ConvResult {
  std::vector<int64_t> shape;  // [N, M, out...]
  std::vector<int64_t> sums;
};

// Exact direct convolution of x - zx (scalar zero point) with w - zw[m] (per output channel);
// padding contributes nothing, as ONNX pads the zero-point-shifted input with zeros.
Expected<ConvResult> int_conv(const KernelContext& c, const Buf& x, int64_t zx, const Buf& w,
                              const std::vector<int64_t>& zw) {
  if (x.rank() < 3) return c.error("input must be [N,C,spatial...], got " + shape_string(x.shape));
  if (w.rank() != x.rank())
    return c.error("weight " + shape_string(w.shape) + " and input " + shape_string(x.shape) + " differ in rank");
  const int64_t group = c.attr_int("group");
  if (group < 1) return c.error("group must be >= 1");
  const int64_t batch = x.shape[0], c_in = x.shape[1], c_out = w.shape[0], cg = w.shape[1];
  if (c_in != cg * group || c_out % group != 0)
    return c.error("input " + shape_string(x.shape) + " and weight " + shape_string(w.shape) + " do not fit group " +
                   std::to_string(group));
  const std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  const std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  if (!ks.empty() && ks != kernel)
    return c.error("kernel_shape " + shape_string(ks) + " does not match weight " + shape_string(w.shape));
  const std::vector<int64_t> in_dims(x.shape.begin() + 2, x.shape.end());
  auto geo = ir::window_geometry(in_dims, kernel, c.attr_ints("strides"), c.attr_ints("dilations"),
                                 c.attr_ints("pads"), c.attr_string("auto_pad"), false);
  if (!geo.ok()) return c.error(geo.status().message());
  const ir::WindowGeometry& g = *geo;
  ConvResult r;
  r.shape = {batch, c_out};
  r.shape.insert(r.shape.end(), g.out.begin(), g.out.end());
  r.sums.assign(numel(r.shape), 0);
  const size_t sp = in_dims.size();
  const int64_t in_plane = numel(in_dims), out_plane = numel(g.out), taps = numel(kernel);
  const auto in_str = strides_of(in_dims);
  if (out_plane == 0 || taps == 0) return r;
  int64_t* out = r.sums.data();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < c_out; ++m) {
      const int64_t first_c = (m / (c_out / group)) * cg;
      std::vector<int64_t> o(sp, 0);
      do {
        int64_t s = 0;
        std::vector<int64_t> tap(sp, 0);
        int64_t tap_flat = 0;
        do {
          int64_t off = 0;
          bool inside = true;
          for (size_t a = 0; a < sp && inside; ++a) {
            const int64_t q = o[a] * g.strides[a] + tap[a] * g.dilations[a] - g.pads_begin[a];
            inside = q >= 0 && q < in_dims[a];
            off += q * in_str[a];
          }
          if (inside)
            for (int64_t cl = 0; cl < cg; ++cl)
              s += (x.i[(n * c_in + first_c + cl) * in_plane + off] - zx) *
                   (w.i[(m * cg + cl) * taps + tap_flat] - zw[m]);
          ++tap_flat;
        } while (next_index(tap, kernel));
        *out++ = s;
      } while (next_index(o, g.out));
    }
  return r;
}

// A scalar zero point (0 when absent); error when it has more values.
Expected<int64_t> scalar_zero_point(const KernelContext& c, size_t k, const char* what) {
  if (!c.has(k)) return int64_t{0};
  if (c.in(k).numel() != 1) return c.unsupported(std::string("per-axis ") + what);
  return static_cast<int64_t>(c.in(k).get(0));
}

// Per output channel values of an optional parameter (scalar or [M]).
Expected<std::vector<double>> per_channel(const KernelContext& c, size_t k, int64_t channels, const char* what) {
  std::vector<double> v(channels, 0.0);
  if (!c.has(k)) return v;
  const Buf& p = c.in(k);
  if (p.numel() != 1 && p.numel() != channels)
    return c.error(std::string(what) + " has " + std::to_string(p.numel()) + " values, expected 1 or " +
                   std::to_string(channels));
  for (int64_t m = 0; m < channels; ++m) v[m] = p.get(p.numel() == 1 ? 0 : m);
  return v;
}

std::vector<int64_t> as_int64(const std::vector<double>& v) { return {v.begin(), v.end()}; }

Status conv_integer_kernel(KernelContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "x"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 1, "w"));
  const Buf &x = c.in(0), &w = c.in(1);
  if (w.rank() < 1) return c.error("weight must be [M, C/group, kernel...]");
  HPF_ASSIGN_OR_RETURN(int64_t zx, scalar_zero_point(c, 2, "x_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto zw, per_channel(c, 3, w.shape[0], "w_zero_point"));
  HPF_ASSIGN_OR_RETURN(ConvResult r, int_conv(c, x, zx, w, as_int64(zw)));
  Buf y = Buf::ints(r.shape, DType::I32);
  y.i = std::move(r.sums);
  c.out[0] = std::move(y);
  return {};
}

Status qlinear_conv_kernel(KernelContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "x"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 3, "w"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 7, "y_zero_point"));
  const Buf &x = c.in(0), &w = c.in(3);
  if (w.rank() < 1) return c.error("weight must be [M, C/group, kernel...]");
  const int64_t channels = w.shape[0];
  if (c.in(1).numel() != 1 || c.in(6).numel() != 1 || c.in(7).numel() != 1)
    return c.error("x_scale, y_scale and y_zero_point must be scalars");
  HPF_ASSIGN_OR_RETURN(int64_t zx, scalar_zero_point(c, 2, "x_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto zw, per_channel(c, 5, channels, "w_zero_point"));
  HPF_ASSIGN_OR_RETURN(auto ws, per_channel(c, 4, channels, "w_scale"));
  HPF_ASSIGN_OR_RETURN(auto bias, per_channel(c, 8, channels, "B"));
  HPF_ASSIGN_OR_RETURN(ConvResult r, int_conv(c, x, zx, w, as_int64(zw)));
  const float xs = static_cast<float>(c.in(1).get(0)), ys = static_cast<float>(c.in(6).get(0));
  const double yz = c.in(7).get(0);
  const DType t = c.in(7).dtype;
  Buf y = Buf::ints(r.shape, t);
  const int64_t plane = numel(std::span(r.shape).subspan(2));
  for (int64_t e = 0; e < y.numel(); ++e) {
    const int64_t m = (e / plane) % channels;
    const float mult = xs * static_cast<float>(ws[m]) / ys;
    y.i[e] = requantize(r.sums[e] + static_cast<int64_t>(bias[m]), mult, yz, t);
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_integer_linalg_kernels(KernelTable& t) {
  t["MatMulInteger"] = matmul_integer_kernel;
  t["QLinearMatMul"] = qlinear_matmul_kernel;
  t["ConvInteger"] = conv_integer_kernel;
  t["QLinearConv"] = qlinear_conv_kernel;
}

}  // namespace hpf::ref
