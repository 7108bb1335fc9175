// The form of an "attention" KernelSpec (attention_fusion.hpp makes it), checked once for every
// dialect's generator: O = softmax(epilogue(Q K)) V over the last axis, per batch matrix.
//
// Spec: inputs Q [.., Sq, D], K [.., D, Sk] (the scores MatMul's second operand), V [.., Sk, Dv],
// then the epilogue's inputs; output O [.., Sq, Dv]; one batch shape for all four. Attributes:
//   q_perm, k_perm, v_perm  the input given is the source of a Transpose with this perm, the
//                           operand its transpose (read through strides; no copy is made);
//   o_perm                  the output is O transposed by this perm (written through strides);
//   score_format, prob_format  the formats the graph stores the scores (after the epilogue) and
//                           the probabilities in: a kernel rounds each value to them as the
//                           unfused kernels would store it, so fusion changes no value beyond the
//                           order of FP32 sums.
// Epilogue: KernelSpec::epilogue on each score, its operands broadcast to the scores by numpy's
// rules (a scale, a mask [B, 1, 1, Sk] or [B, 1, Sq, Sk], a bias of the scores' shape).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

struct AttentionForm {
  // An operand as a kernel reads it: its logical shape and the element strides of each axis in
  // the buffer it is given.
  struct Strided {
    std::vector<int64_t> shape, stride;
    int64_t row_stride() const { return stride[stride.size() - 2]; }
    int64_t col_stride() const { return stride.back(); }
  };
  Strided q, k, v, o;
  std::vector<int64_t> batch;  // the batch axes
  int64_t batches = 1, SQ = 0, D = 0, SK = 0, DV = 0;
  DType score_format = DType::F32, prob_format = DType::F32;
  // Per spec input (from 3 on): the offset expression, in i64 t (batch matrix), qi (query row)
  // and j (key), of score (t, qi, j)'s element of that epilogue operand; "" for Q, K, V.
  std::vector<std::string> epilogue_index;
  // The scores' descriptor: [batch.., Sq, Sk] in score_format.
  TensorDesc scores() const;
};

// Offset expression, in i64 t (the batch matrix, row-major over the batch axes), of batch
// matrix t in operand x.
std::string attention_batch_offset(const AttentionForm::Strided& x);

// Errors: invalid for a spec that contradicts itself (counts, perms, shapes that do not chain,
// epilogue operands that do not broadcast to the scores); unsupported, naming `who`, for a
// non-float Q, K, V or O.
Expected<AttentionForm> attention_form(const KernelSpec& spec, const std::string& who);

}  // namespace hpf::jit
