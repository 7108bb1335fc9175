// The C dialect's generators, one per op family (dispatched by generate_c).
#pragma once

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_elementwise(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_matmul(const KernelSpec& spec, const std::string& name);
// MatMul/Gemm with constant weights pre-packed by the runtime (bf16/f16/i8/i4 panels, see
// c_matmul_wq.cpp for the layout), FP32 compute.
Expected<GeneratedKernel> generate_c_matmul_wq(const KernelSpec& spec, const std::string& name);
// The MatMul tile sizes (HPF_MR/NR/KC/NC/MC, HPF_VW) and the FP32 register-blocked microkernel
// hpf_mm_micro, as C text shared by the matmul generators.
const char* c_matmul_micro();
// `static inline float wq_out(float v, const void* Cv, i64 i, i64 j)`: the epilogue of output
// element (i, j) of the packed-weight matmuls: alpha, beta * C (input `c_input` when present),
// INT8 fake quantisation with attr out_scale when set. Attributes n, alpha, beta, out_scale.
std::string c_matmul_epilogue(const KernelSpec& spec, size_t c_input);
// u8 x s8 -> s32 MatMul/Gemm ("matmul_i8"): activations quantised on the fly with attr a_scale,
// weights pre-packed in VNNI order; see c_matmul_int8.cpp.
Expected<GeneratedKernel> generate_c_matmul_i8(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_softmax(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_layernorm(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_gather(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_transpose(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_conv(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_conv_transpose(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_batchnorm(const KernelSpec& spec, const std::string& name);
// maxpool | avgpool | globalavgpool | globalmaxpool
Expected<GeneratedKernel> generate_c_pool(const KernelSpec& spec, const std::string& name);
// reduce (ReduceSum/Mean/Max) | concat | slice | pad | expand | resize
Expected<GeneratedKernel> generate_c_reduce(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_concat(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_slice(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_pad(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_expand(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_resize(const KernelSpec& spec, const std::string& name);
// Lowering helpers: the family that takes node `n` ("" for none: it stays a reference fallback),
// with the operands read from constant inputs (and resolved defaults) added to `attrs`.
std::string bake_reduce(const Graph& g, const Node& n, Attributes& attrs);
std::string bake_movement(const Graph& g, const Node& n, Attributes& attrs);

}  // namespace hpf::jit
