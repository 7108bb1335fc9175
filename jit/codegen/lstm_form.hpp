// The form of an "lstm" KernelSpec, checked once for every dialect's generator: ONNX LSTM with
// layout 0, the default activations (Sigmoid, Tanh, Tanh), no clip, input_forget 0; any
// direction; optional B, sequence_lens (INT32), initial_h, initial_c and P (peepholes); any
// subset of the outputs Y, Y_h, Y_c.
//
// Spec layout: inputs X, W, R, then the present optional inputs in ONNX order (attr
// lstm_inputs: bit k set when input k, 3 <= k <= 7, is present); outputs the present ones (attr
// lstm_outputs: bit k for output k). Gates in ONNX order i, o, f, c.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

struct LstmForm {
  int64_t T = 0, B = 0, I = 0, D = 1, G = 0, H = 0;  // steps, batch, input size, directions, 4H, hidden
  std::string direction = "forward";                 // forward | reverse | bidirectional
  int64_t in_mask = 0, out_mask = 1;
  bool has_in(int k) const { return k < 3 || ((in_mask >> k) & 1) != 0; }
  bool has_out(int k) const { return ((out_mask >> k) & 1) != 0; }
  // Index among the spec's inputs of ONNX input k (-1 when absent); of output k among its outputs.
  int input(int k) const;
  int output(int k) const;
};

// Errors: invalid for a spec that contradicts itself (masks, ranks, shapes); unsupported, naming
// `who` ("C codegen", "cuda codegen"), for an LSTM form no generator takes (layout 1, clip,
// input_forget, other activations, sequence_lens not INT32). Storage formats are the caller's
// to check.
Expected<LstmForm> lstm_form(const KernelSpec& spec, const std::string& who);

}  // namespace hpf::jit
