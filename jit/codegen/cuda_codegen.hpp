// The CUDA dialect: the GPU dialect (gpu_codegen.hpp) spelled for NVRTC.
#pragma once

#include "jit/codegen/gpu_codegen.hpp"

namespace hpf::jit {

// generate_gpu(spec, GpuDialect::cuda): used by the CUDA plugin's callers and compile-check.
Expected<GeneratedKernel> generate_cuda(const KernelSpec& spec);

inline std::string cuda_prelude() { return gpu_prelude(GpuDialect::cuda); }
inline const char* cuda_storage_type(DType t) { return gpu_storage_type(GpuDialect::cuda, t); }
inline std::string cuda_load(DType t, const std::string& at, bool wide = false) {
  return gpu_load(GpuDialect::cuda, t, at, wide);
}

}  // namespace hpf::jit
