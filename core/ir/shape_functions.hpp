// Shape functions of the op table, one per op family (see op_table.cpp for which op uses which).
#pragma once

#include "core/ir/op_table.hpp"

namespace hpf::ir::shape_fn {

Status same_as_input0(InferContext& c);
Status broadcast(InferContext& c);          // n-ary numpy broadcasting, dtype of input 0
Status broadcast_mixed(InferContext& c);    // same, inputs may mix float and integer (Pow)
Status compare(InferContext& c);            // broadcasting, BOOL result
Status logical_not(InferContext& c);
Status to_bool(InferContext& c);           // same shape, BOOL result (IsNaN, IsInf)
Status size_of(InferContext& c);           // I64 scalar
Status dropout(InferContext& c);           // output 0 as input 0, optional BOOL mask
Status where(InferContext& c);
Status cast(InferContext& c);
Status cast_like(InferContext& c);         // input 0's shape, input 1's dtype
Status arg_reduce(InferContext& c);        // ArgMax/ArgMin: one axis reduced, I64 result
Status matmul(InferContext& c);
Status gemm(InferContext& c);
Status conv(InferContext& c);
Status conv_transpose(InferContext& c);
Status pool(InferContext& c);
Status global_pool(InferContext& c);
Status batch_norm(InferContext& c);
Status layer_norm(InferContext& c);
Status softmax(InferContext& c);            // axis check, same shape
Status reduce(InferContext& c);
Status nll_loss(InferContext& c);               // target's shape (reduction none) or scalar
Status softmax_cross_entropy(InferContext& c);  // loss as nll_loss, optional log_prob like scores
Status depth_to_space(InferContext& c);
Status space_to_depth(InferContext& c);
Status one_hot(InferContext& c);                // indices' shape with depth inserted at axis
Status resize(InferContext& c);
Status gather(InferContext& c);
Status gather_elements(InferContext& c);   // indices' shape, data's dtype
Status trilu(InferContext& c);             // same as input 0, rank >= 2
Status tile(InferContext& c);
Status reshape(InferContext& c);
Status transpose(InferContext& c);
Status flatten(InferContext& c);
Status squeeze(InferContext& c);
Status unsqueeze(InferContext& c);
Status concat(InferContext& c);
Status split(InferContext& c);
Status slice(InferContext& c);
Status pad(InferContext& c);
Status expand(InferContext& c);
Status shape_of(InferContext& c);
Status constant_of_shape(InferContext& c);
Status range(InferContext& c);
Status constant(InferContext& c);
Status quantize_linear(InferContext& c);
Status dequantize_linear(InferContext& c);
// Recurrent, integer/quantised linear algebra, sampling, signal and local normalisation.
Status recurrent(InferContext& c);          // RNN/GRU/LSTM: Y, Y_h (, Y_c) by layout and direction
Status matmul_integer(InferContext& c);     // int32 matmul of two 8-bit tensors
Status qlinear_matmul(InferContext& c);     // matmul of inputs 0 and 3, y_zero_point's dtype
Status conv_integer(InferContext& c);       // int32 Conv of two 8-bit tensors
Status qlinear_conv(InferContext& c);       // Conv of inputs 0 and 3, y_zero_point's dtype
Status dynamic_quantize_linear(InferContext& c);  // u8 data, f32 scale, u8 zero point
Status grid_sample(InferContext& c);        // [N, C, H_out, W_out]
Status instance_norm(InferContext& c);
Status prelu(InferContext& c);              // X's shape; slope broadcast to it
Status window(InferContext& c);             // Hann/Hamming/Blackman: [size] (size when constant)
Status dft(InferContext& c);                // axis resized by dft_length/onesided, last dim 2
Status stft(InferContext& c);               // [batch, frames, bins, 2]
Status mel_weight_matrix(InferContext& c);  // [dft_length/2 + 1, num_mel_bins]
// Control flow (shape_control.cpp): outputs from the subgraphs specialised to the node's inputs.
Status if_(InferContext& c);    // the branches' outputs; dims they disagree on are unknown
Status loop(InferContext& c);   // carried values as they stabilise; scan outputs [trips, ...]
Status scan(InferContext& c);   // states; scan outputs with the scan length inserted at their axis

// Data-dependent sizes (TopK with a non-constant k, Unique, Compress, NonZero,
// NonMaxSuppression) leave those dimensions unknown.
Status top_k(InferContext& c);   // values and I64 indices, k along axis
Status unique(InferContext& c);  // Y, indices, inverse_indices, counts
Status compress(InferContext& c);
Status non_zero(InferContext& c);          // I64 [rank, ?]
Status scatter_elements(InferContext& c);  // data's shape
Status scatter_nd(InferContext& c);        // data's shape
Status gather_nd(InferContext& c);
Status eye_like(InferContext& c);
Status reverse_sequence(InferContext& c);
Status bit_shift(InferContext& c);  // broadcasting, unsigned integers
Status max_unpool(InferContext& c);
Status roi_align(InferContext& c);            // [num_rois, C, output_height, output_width]
Status non_max_suppression(InferContext& c);  // I64 [?, 3]
Status tfidf_vectorizer(InferContext& c);     // F32 [max(ngram_indexes) + 1] per row
Status einsum(InferContext& c);
Status det(InferContext& c);  // batch dimensions of [..., M, M]

}  // namespace hpf::ir::shape_fn
