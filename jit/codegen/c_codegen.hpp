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
