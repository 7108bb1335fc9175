// generate_cuda: dispatch by op family for the CUDA dialect.
#include "jit/codegen/cuda_codegen.hpp"

#include <cstdio>

namespace hpf::jit {

Expected<GeneratedKernel> generate_cuda(const KernelSpec& spec) {
  // FNV-1a over the canonical text names the kernel, as in generate_c.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : spec.canonical()) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "hpf_%s_%016llx", spec.family.c_str(), static_cast<unsigned long long>(h));
  if (spec.family == "elementwise") return generate_cuda_elementwise(spec, name);
  return Status::unsupported("op family '" + spec.family + "' is unsupported in the cuda dialect");
}

}  // namespace hpf::jit
