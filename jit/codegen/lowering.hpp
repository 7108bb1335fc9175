// Lowering a graph with concrete shapes into kernel launches: elementwise chains fused into one
// kernel, view ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) turned into aliases, every
// other supported op into one kernel; ops without a generator become reference fallbacks.
#pragma once

#include <vector>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

struct LoweredStep {
  enum class Kind { kernel, alias, fallback } kind = Kind::kernel;
  KernelSpec spec;                  // kernel
  std::vector<ValueId> inputs;      // kernel inputs / the aliased value / fallback node inputs
  std::vector<ValueId> outputs;
  int32_t node = -1;                // the (last) graph node this step computes
  std::vector<int32_t> fused;       // every node folded into this step, in order
  std::string label;                // node names, for profiles and messages
};

// Reshape, Flatten, Squeeze, Unsqueeze, Identity: steps that only re-label their input's bytes.
bool is_view_op(const std::string& op);

// What lowering may fuse: epilogues (elementwise consumers folded into the producing
// MatMul/Conv kernel, KernelSpec::epilogue) and attention (MatMul, scale, mask, Softmax and
// MatMul in one "attention" kernel, jit/codegen/attention_fusion.hpp). The C dialect generates
// both; the GPU dialects generate attention (its scale and mask included) but no MatMul/Conv
// epilogues: they lower with `kGpuLowering`.
struct LowerOptions {
  bool producer_epilogues = true;
  bool attention = true;
};
inline constexpr LowerOptions kGpuLowering{false, true};

// `g` must have every value's shape known and concrete (infer_shapes with concrete inputs).
// Float values may be given another storage format through `storage` (by value id; F32 when
// absent), which is how a plan's precision reaches the kernels. Nodes marked in `skip` (by node
// id) are left out: the caller computes them some other way.
Expected<std::vector<LoweredStep>> lower(const Graph& g, const std::vector<DType>& storage,
                                         const std::vector<bool>& skip = {}, const LowerOptions& options = {});

}  // namespace hpf::jit
