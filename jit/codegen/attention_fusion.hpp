// Attention fusion, a pass of lower(): MatMul -> [epilogue] -> Softmax -> MatMul steps become one
// "attention" step (jit/codegen/c_attention.cpp), with the Transposes that only feed Q, K or V,
// or only read O, folded into its strides.
#pragma once

#include <vector>

#include "jit/codegen/lowering.hpp"

namespace hpf::jit {

// `steps` as lower() made them for `g`; `uses[v]`: how many readers value v has (graph outputs
// count as readers). Fuses where:
//   - the scores MatMul (no batch broadcasting) feeds only the Softmax (last axis, not
//     LogSoftmax), directly, through its epilogue (a scale, a per-key mask) or through one
//     elementwise step of ops an epilogue takes (a mask per batch entry, which is no epilogue
//     operand of the MatMul's), whose operands broadcast to the scores; the Softmax feeds only
//     the second MatMul's first operand, which has no epilogue of its own;
//   - the scores and every step on them are stored in F32, BF16 or TF32 (an F16 overflow would
//     hide inside the kernel, where the session's overflow watch cannot see it), the
//     probabilities in one of those or F16;
//   - K and V are not constants (weights, which the session packs in their planned formats);
//   - the kernel's buffers fit (attention_fits).
// A Transpose step whose value only Q, K or V reads, or which only reads O, in the same format,
// is folded in. The fused step runs where the second MatMul did.
void fuse_attention(const Graph& g, std::vector<LoweredStep>& steps, const std::vector<int>& uses);

}  // namespace hpf::jit
