// The CUDA GEMM and Conv kernels under test, as data: each case is a KernelSpec the way lowering
// writes one (odd shapes, transposes, broadcast batches, Gemm's C, groups, padding), in every
// operand format the generators take. The NVRTC compile tests (tests/plugins/cuda) compile
// them; the device suite (tests/device) runs them against the reference interpreter.
#pragma once

#include <string>
#include <vector>

#include "hpf/dtype.hpp"
#include "hpf/models.hpp"
#include "jit/codegen/kernel_spec.hpp"

namespace hpf::cuda_cases {

struct Case {
  std::string label;   // "matmul f16xf16->f16 37x29x53"
  jit::KernelSpec spec;
  std::string op;      // the ONNX op the spec computes: MatMul, Gemm, Conv
  bool fp8 = false;    // FP8 instructions (sm_89+; the kernel falls back to f16 below)
};

struct Formats {
  DType a, b, y;
  DType accumulation = DType::F32;
};

inline std::string name(DType t) { return std::string(dtype_name(t)); }

// A, B and Y formats of the GEMM paths: every instruction (f16, bf16, tf32 by storage and by
// accumulation, int8 signed and mixed, fp8 both kinds and mixed, f8 with f16/bf16) and FMA
// (f32, mixed f16 x f32).
inline std::vector<Formats> matmul_formats() {
  return {{DType::F32, DType::F32, DType::F32},        {DType::TF32, DType::TF32, DType::F32},
          {DType::F32, DType::F32, DType::F32, DType::TF32},
          {DType::F16, DType::F16, DType::F16},        {DType::F16, DType::F16, DType::F32},
          {DType::BF16, DType::BF16, DType::BF16},     {DType::F8E4M3, DType::F8E4M3, DType::F16},
          {DType::F8E5M2, DType::F8E4M3, DType::BF16}, {DType::F8E4M3, DType::F8E4M3, DType::F8E4M3},
          {DType::I8, DType::I8, DType::I32},          {DType::U8, DType::I8, DType::F32},
          {DType::F16, DType::F32, DType::F32},        {DType::F8E4M3, DType::F16, DType::F16},
          {DType::BF16, DType::F8E5M2, DType::F32}};
}

inline bool is_fp8_pair(const Formats& f) {
  auto f8 = [](DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; };
  return f8(f.a) && f8(f.b);
}

// One MatMul/Gemm spec. Shapes are the operands' as stored (transposes already applied).
inline Case matmul(const Formats& f, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> y,
                   bool gemm = false, bool ta = false, bool tb = false, std::vector<int64_t> c = {}) {
  Case k;
  k.op = gemm ? "Gemm" : "MatMul";
  k.fp8 = is_fp8_pair(f);
  k.spec.family = "matmul";
  k.spec.accumulation = f.accumulation;
  k.spec.inputs = {{f.a, a}, {f.b, b}};
  if (!c.empty()) k.spec.inputs.push_back({f.y == DType::I32 ? DType::F32 : f.y, c});
  k.spec.outputs = {{f.y, y}};
  if (gemm) {
    k.spec.attrs["gemm"] = int64_t{1};
    k.spec.attrs["transA"] = int64_t{ta};
    k.spec.attrs["transB"] = int64_t{tb};
    // An INT32 result is exact (MatMulInteger's): no alpha scaling, which would need a rounding.
    k.spec.attrs["alpha"] = f.y == DType::I32 ? 1.0f : 0.5f;
    k.spec.attrs["beta"] = 2.0f;
  }
  k.label = k.op + " " + name(f.a) + "x" + name(f.b) + "->" + name(f.y) +
            (f.accumulation != DType::F32 ? " acc " + name(f.accumulation) : "") + " " + shape_string(a) + "x" +
            shape_string(b) + (ta ? " tA" : "") + (tb ? " tB" : "");
  return k;
}

// The shapes of the suite: `all` adds the batched-broadcast and transA forms.
inline std::vector<Case> matmul_cases(const Formats& f, bool all) {
  std::vector<Case> out;
  out.push_back(matmul(f, {37, 29}, {29, 53}, {37, 53}));  // odd everything: staged loads, edge tiles
  // K = 256 and transB: rows K-contiguous and 16-byte aligned, so cp.async for raw formats.
  if (f.y != DType::I32)
    out.push_back(matmul(f, {130, 256}, {136, 256}, {130, 136}, true, false, true, {136}));
  else
    out.push_back(matmul(f, {130, 256}, {136, 256}, {130, 136}, true, false, true));
  if (all) {
    out.push_back(matmul(f, {2, 3, 64, 96}, {3, 96, 72}, {2, 3, 64, 72}));  // batch broadcast
    if (f.y != DType::I32) out.push_back(matmul(f, {33, 70}, {33, 45}, {70, 45}, true, true, false, {70, 45}));
    out.push_back(matmul(f, {200}, {200, 9}, {9}));  // 1-D A
  }
  return out;
}

inline Case conv(DType x, DType w, DType y, std::vector<int64_t> xs, std::vector<int64_t> ws, std::vector<int64_t> ys,
                 Attributes attrs, bool bias) {
  Case k;
  k.op = "Conv";
  k.fp8 = (x == DType::F8E4M3 || x == DType::F8E5M2) && (w == DType::F8E4M3 || w == DType::F8E5M2);
  k.spec.family = "conv";
  k.spec.inputs = {{x, xs}, {w, ws}};
  if (bias) k.spec.inputs.push_back({DType::F32, {ws[0]}});
  k.spec.outputs = {{y, ys}};
  k.spec.attrs = std::move(attrs);
  k.label = "Conv " + name(x) + "x" + name(w) + "->" + name(y) + " " + shape_string(xs) + "*" + shape_string(ws);
  return k;
}

inline std::vector<Case> conv_cases(DType x, DType w, DType y) {
  using V = std::vector<int64_t>;
  std::vector<Case> out;
  // Grouped, strided, dilated, asymmetric padding, bias.
  out.push_back(conv(x, w, y, {2, 6, 13, 11}, {8, 3, 3, 3}, {2, 8, 7, 9},
                     {{"group", int64_t{2}}, {"strides", V{2, 1}}, {"pads", V{1, 0, 1, 2}}, {"dilations", V{1, 2}},
                      {"kernel_shape", V{3, 3}}},
                     true));
  // Depthwise (the direct kernel).
  out.push_back(conv(x, w, y, {1, 8, 9, 9}, {8, 1, 3, 3}, {1, 8, 9, 9},
                     {{"group", int64_t{8}}, {"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}}, false));
  // 1-D, aligned weights (K = 16 * 5).
  out.push_back(conv(x, w, y, {2, 16, 17}, {24, 16, 5}, {2, 24, 13}, {{"kernel_shape", V{5}}}, true));
  return out;
}

inline std::vector<Formats> conv_formats() {
  return {{DType::F32, DType::F32, DType::F32},     {DType::F16, DType::F16, DType::F16},
          {DType::BF16, DType::BF16, DType::BF16},  {DType::TF32, DType::TF32, DType::F32},
          {DType::F8E4M3, DType::F8E4M3, DType::F16}, {DType::F16, DType::F32, DType::F32}};  // mixed: FMA
}

// A built-in model with batch 1 and every shape known (what lowering needs).
inline Expected<Graph> concrete_builtin(const std::string& model) {
  HPF_ASSIGN_OR_RETURN(Graph g, models::builtin(model));
  for (ValueId id : g.inputs())
    for (Dim& d : g.value(id).shape)
      if (!d.known()) d = Dim(1);
  HPF_RETURN_IF_ERROR(g.infer_shapes());
  return g;
}

}  // namespace hpf::cuda_cases
