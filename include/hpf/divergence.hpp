// How far a lower-precision result is from the FP32 reference. Pure functions, thread-safe.
#pragma once

#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

struct Divergence {
  // Mean over rows of KL(softmax(reference) || softmax(test)), softmax over the last axis
  // (natural log, nats). Treats the output as logits.
  double kl = 0;
  // ||test - reference||_2 / ||reference||_2 (0 when both are zero).
  double rel_l2 = 0;
  double max_abs_error = 0;
  // Fraction of rows whose argmax over the last axis agrees.
  double top1_agreement = 1;
  // NaN or Inf in the test output where the reference is finite.
  bool non_finite = false;
};

// Compares two float tensors of the same shape (a scalar counts as one row of one element);
// invalid_argument naming both shapes otherwise.
Expected<Divergence> compare(const Tensor& reference, const Tensor& test);

}  // namespace hpf
