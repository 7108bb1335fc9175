// The C dialect's generators, one per op family (dispatched by generate_c).
#pragma once

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_elementwise(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_matmul(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_softmax(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_layernorm(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_gather(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_transpose(const KernelSpec& spec, const std::string& name);

}  // namespace hpf::jit
