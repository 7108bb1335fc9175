// The CUDA dialect's generators (dispatched by generate_cuda): kernels are `extern "C"
// __global__` functions taking one pointer per input, then the output, sizes baked in.
#pragma once

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

// Elementwise chains: one thread per element, grid-stride loop, each step in FP32 rounded to
// its format (f32, f16 as __half, bf16 as __nv_bfloat16), casts included.
Expected<GeneratedKernel> generate_cuda_elementwise(const KernelSpec& spec, const std::string& name);

}  // namespace hpf::jit

namespace hpf::jit {

// CUDA dialect (the CUDA plugin): dispatch by family; other families are unsupported, saying
// "unsupported in the cuda dialect". Names as generate_c's: a hash of the spec.
Expected<GeneratedKernel> generate_cuda(const KernelSpec& spec);

// Shared by the CUDA generators: the headers and helpers every kernel starts with; the C type
// storing a format (nullptr: not stored by CUDA kernels yet); a stored value of format t
// at `at` as float (double when `wide`).
std::string cuda_prelude();
const char* cuda_storage_type(DType t);
std::string cuda_load(DType t, const std::string& at, bool wide = false);

// Softmax / LogSoftmax over the last axis: one block per row, block reductions for the max and
// the sum, in FP32.
Expected<GeneratedKernel> generate_cuda_softmax(const KernelSpec& spec, const std::string& name);

// MatMul/Gemm and Conv on the tensor-core GEMM machinery (cuda_gemm.hpp); the kernels carry
// their launch geometry (GeneratedKernel::grid/block).
Expected<GeneratedKernel> generate_cuda_matmul(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_cuda_conv(const KernelSpec& spec, const std::string& name);

}  // namespace hpf::jit
