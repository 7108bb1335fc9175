// QuantizeLinear / DequantizeLinear (ONNX, per tensor or per axis) and DynamicQuantizeLinear.
// The arithmetic is FP32 as ONNX specifies it: q = saturate(round_half_even(x / scale) + zero_point).
#include <algorithm>
#include <cmath>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// Index into the scale/zero-point for element k: 0 per tensor, the coordinate along `axis`
// per axis.
struct ParamIndex {
  int64_t inner = 1, dim = 1;
  bool per_axis = false;
  int64_t operator()(int64_t k) const { return per_axis ? (k / inner) % dim : 0; }
};

Expected<ParamIndex> param_index(KernelContext& c, const Buf& x, const Buf& scale) {
  if (c.attr_int("block_size") != 0) return c.unsupported("blocked quantization (block_size != 0)");
  ParamIndex p;
  if (scale.rank() == 0 || (scale.rank() == 1 && scale.numel() == 1)) return p;
  if (scale.rank() != 1) return c.error("scale must be a scalar or 1-D, is " + shape_string(scale.shape));
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  if (x.shape[*axis] != scale.numel())
    return c.error("scale has " + std::to_string(scale.numel()) + " values, axis " + std::to_string(*axis) +
                   " of the input has size " + std::to_string(x.shape[*axis]));
  p.per_axis = true;
  p.dim = scale.numel();
  for (int64_t k = *axis + 1; k < x.rank(); ++k) p.inner *= x.shape[k];
  return p;
}

Status quantize_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &scale = c.in(1);
  const DType t = c.has(2) ? c.in(2).dtype : DType::U8;
  if (c.has(2) && c.in(2).numel() != scale.numel())
    return c.error("zero point has " + std::to_string(c.in(2).numel()) + " values, scale has " + std::to_string(scale.numel()));
  HPF_ASSIGN_OR_RETURN(ParamIndex pi, param_index(c, x, scale));
  Buf y = Buf::ints(x.shape, t);
  const float lo = static_cast<float>(qmin(t)), hi = static_cast<float>(qmax(t));
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = pi(k);
    const float s = static_cast<float>(scale.get(p));
    const float zp = c.has(2) ? static_cast<float>(c.in(2).i[p]) : 0.0f;
    float q = std::nearbyint(static_cast<float>(x.get(k)) / s) + zp;
    if (std::isnan(q)) q = 0;
    y.i[k] = static_cast<int64_t>(std::min(std::max(q, lo), hi));
  }
  c.out[0] = std::move(y);
  return {};
}

Status dequantize_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &scale = c.in(1);
  if (x.is_float()) return c.error("input must be integer, is " + std::string(dtype_name(x.dtype)));
  if (c.has(2) && c.in(2).numel() != scale.numel())
    return c.error("zero point has " + std::to_string(c.in(2).numel()) + " values, scale has " + std::to_string(scale.numel()));
  HPF_ASSIGN_OR_RETURN(ParamIndex pi, param_index(c, x, scale));
  Buf y = Buf::floats(x.shape, scale.dtype);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = pi(k);
    const int64_t zp = c.has(2) ? c.in(2).i[p] : 0;
    y.f[k] = static_cast<float>(x.i[k] - zp) * static_cast<float>(scale.get(p));
  }
  c.out[0] = std::move(y);
  return {};
}

// DynamicQuantizeLinear: uint8 with scale and zero point chosen so that [min(x, 0), max(x, 0)]
// spans [0, 255]. FP32 arithmetic throughout, as the ONNX definition computes it.
Status dynamic_quantize_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.error("input must be a float format, is " + std::string(dtype_name(x.dtype)));
  float lo = 0.0f, hi = 0.0f;
  for (float v : x.f) {
    if (std::isnan(v)) return c.error("input contains NaN");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const float scale = (hi - lo) / 255.0f;
  // All zeros: any scale works; 0 with zero point 0 maps everything to 0 without dividing by it.
  const float zp = scale == 0.0f ? 0.0f : std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  Buf y = Buf::ints(x.shape, DType::U8);
  for (int64_t k = 0; k < x.numel(); ++k)
    y.i[k] = scale == 0.0f ? 0 : static_cast<int64_t>(std::clamp(std::nearbyint(x.f[k] / scale) + zp, 0.0f, 255.0f));
  c.out[0] = std::move(y);
  c.out[1] = Buf::floats({}, DType::F32);
  c.out[1].f[0] = scale;
  c.out[2] = Buf::ints({}, DType::U8);
  c.out[2].i[0] = static_cast<int64_t>(zp);
  return {};
}

}  // namespace

void add_quantize_kernels(KernelTable& t) {
  t["DynamicQuantizeLinear"] = dynamic_quantize_kernel;
  t["QuantizeLinear"] = quantize_kernel;
  t["DequantizeLinear"] = dequantize_kernel;
}

}  // namespace hpf::ref
