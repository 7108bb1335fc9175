// ONNX DynamicQuantizeLinear in C ("dynamic_quantize"): a float tensor to uint8 with the scale
// and zero point chosen from the tensor, in the reference's arithmetic (FP32, round half to even):
//   lo = min(0, min x), hi = max(0, max x), scale = (hi - lo) / 255,
//   zp = rint(clamp(0 - lo / scale, 0, 255)), y = clamp(rint(x / scale) + zp, 0, 255)
// (scale 0, an all-zero tensor: zp 0 and y 0). NaN, which the reference refuses, is left out of
// the range and quantised as 0 is (to zp). One work item: the range is a whole-tensor reduction
// before any element can be quantised; one core does both passes (BERT-base's largest, 128 x
// 3072, takes ~0.1 ms). Inputs: X (any float format); outputs Y (U8, X's shape), scale (float
// scalar), zero point (U8 scalar).
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_dynamic_quantize(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 3)
    return Status::invalid("dynamic_quantize: needs one input and three outputs");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0], &S = spec.outputs[1], &Z = spec.outputs[2];
  if (!is_float(X.dtype) || Y.dtype != DType::U8 || !is_float(S.dtype) || Z.dtype != DType::U8 || Y.shape != X.shape)
    return Status::unsupported("C codegen: DynamicQuantizeLinear of " + std::string(dtype_name(X.dtype)) + " to " +
                               std::string(dtype_name(Y.dtype)));
  const int64_t n = numel(X.shape);
  const std::string xt = c_storage_type(X.dtype);
  std::ostringstream s;
  // 16 values from i as floats; past the end (the last m < 16) zeros, which change neither the
  // range (it holds 0) nor the stored values (only m are stored).
  s << c_prelude()
    << "static inline hpf_f32x16 dq_load(const " << xt << "* restrict X, i64 i, i64 m) {\n"
    << "  hpf_f32x16 x;\n"
    << "  for (int j = 0; j < 16; ++j) x[j] = j < m ? " << c_load_operand(X.dtype, "X[i + j]") << " : 0.0f;\n"
    << "  return x;\n"
    << "}\n"
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  if (begin >= end) return;\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  u8* restrict Y = (u8*)args[1];\n"
    << "  " << c_storage_type(S.dtype) << "* restrict S = (" << c_storage_type(S.dtype) << "*)args[2];\n"
    << "  u8* restrict Z = (u8*)args[3];\n"
    // The range, NaN left out (the elementwise min and max return the other operand).
    << "  hpf_f32x16 lo = (hpf_f32x16){}, hi = (hpf_f32x16){};\n"
    << "  for (i64 i = 0; i < " << L(n) << "; i += 16) {\n"
    << "    const hpf_f32x16 x = dq_load(X, i, " << L(n) << " - i);\n"
    << "    lo = __builtin_elementwise_min(lo, x);\n"
    << "    hi = __builtin_elementwise_max(hi, x);\n"
    << "  }\n"
    << "  const float l = __builtin_reduce_min(lo), h = __builtin_reduce_max(hi);\n"
    << "  const float scale = (h - l) / 255.0f;\n"
    << "  float zp = 0.0f;\n"
    << "  if (scale != 0.0f) {\n"
    << "    const float t = 0.0f - l / scale;\n"
    << "    zp = __builtin_rintf(t < 0.0f ? 0.0f : t > 255.0f ? 255.0f : t);\n"
    << "  }\n"
    << "  S[0] = " << c_store(S.dtype, "scale") << ";\n"
    << "  Z[0] = (u8)zp;\n"
    << "  if (scale == 0.0f) { for (i64 i = 0; i < " << L(n) << "; ++i) Y[i] = 0; return; }\n"
    // x / scale as the reference divides (not times a reciprocal), NaN as 0.
    << "  typedef u8 dq_u8x16 __attribute__((vector_size(16), aligned(1)));\n"
    << "  const hpf_f32x16 sv = (hpf_f32x16){} + scale, zv = (hpf_f32x16){} + zp;\n"
    << "  for (i64 i = 0; i < " << L(n) << "; i += 16) {\n"
    << "    const i64 m = " << L(n) << " - i < 16 ? " << L(n) << " - i : 16;\n"
    << "    hpf_f32x16 x = dq_load(X, i, m);\n"
    << "    x = (hpf_f32x16)((hpf_u32x16)x & (hpf_u32x16)(x == x));\n"
    << "    hpf_f32x16 q = __builtin_elementwise_rint(x / sv) + zv;\n"
    << "    q = __builtin_elementwise_min(__builtin_elementwise_max(q, (hpf_f32x16){}), (hpf_f32x16){} + 255.0f);\n"
    << "    const dq_u8x16 b = __builtin_convertvector(q, dq_u8x16);\n"
    << "    if (m == 16) *(dq_u8x16*)(Y + i) = b;\n"
    << "    else __builtin_memcpy(Y + i, &b, (unsigned long)m);\n"
    << "  }\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), 1, 1};
}

}  // namespace hpf::jit
