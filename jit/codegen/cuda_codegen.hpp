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

}  // namespace hpf::jit
