// The GPU dialects' generators, one per op family (dispatched by generate_gpu). Each takes the
// kernel's name and the dialect; see gpu_codegen.hpp for the launch rule and the prelude.
#pragma once

#include "jit/codegen/gpu_codegen.hpp"

namespace hpf::jit {

// Elementwise chains: one thread per element, grid-stride loop, each step in FP32 rounded to
// its format, casts included; inputs broadcast by strides baked in as constants.
Expected<GeneratedKernel> generate_gpu_elementwise(const KernelSpec& spec, const std::string& name, GpuDialect d);
// Softmax / LogSoftmax over the last axis: one block per row, block reductions in FP32.
Expected<GeneratedKernel> generate_gpu_softmax(const KernelSpec& spec, const std::string& name, GpuDialect d);

}  // namespace hpf::jit
