// FP32 Conv weights packed once for the C Conv kernels (c_conv.cpp), so that their
// microkernel streams them in order. Read straight from the [M, CG, KH, KW] weight, each call
// of the microkernel takes 6 rows a whole K apart (18 KiB for a 512-channel 3x3 layer), 512
// bytes of each: the hardware prefetchers never ramp up on such short runs and ResNet-50's deep
// layers ran at half the speed they reach with the rows in cache.
//
// The layouts (attribute "w_layout"), K = CG * KH * KW, per group g of MG output channels:
// - "rows", for the implicit GEMM with output channels as the microkernel's rows: the channels
//   in tiles of kGemmMR (zero rows past MG, T = ceil(MG / kGemmMR) tiles), each tile's whole K
//   in order, MR values per k, so that a tile's rows of any run of k (a K slice, or all of K)
//   are one stretch of memory with the same strides:
//     packed[g][t][q][i] = W[g * MG + t * MR + i][q]   at (g * T + t) * MR * K + q * MR + i.
// - "cols", for a pointwise (1x1, unit stride, unpadded) Conv with output channels as the
//   microkernel's columns: blocks of 64 channels (zero past MG, B = ceil(MG / 64) blocks), each
//   K rows of 64:
//     packed[g][b][k][j] = W[g * MG + b * 64 + j][k]   at (g * B + b) * K * 64 + k * 64 + j.
// - "wino", for the Winograd F(2x2, 3x3) kernel (c_conv_winograd.cpp; 3x3, unit strides and
//   dilations, one group, FP32 input): per output channel m and input channel c the 4x4
//   transform U = G g G^T of its 3x3 filter g (G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]), by
//   element xi = 4a + b, blocks of 64 output channels (zero past M, B = ceil(M / 64)), one row
//   of 64 per input channel:
//     packed[xi][b][c][j] = U(b * 64 + j, c)[a][b']   at ((xi * B + b) * CG + c) * 64 + j.
// - "amx", BF16 weights for the AMX tile kernel (c_conv_amx.cpp; BF16 input too). k runs over
//   taps, then channels: k = r * CGp + c for tap r = kh * KW + kw and input channel c, CGp = CG
//   rounded up to even (a zero channel), so that a pair of k (the tile unit's step) is two
//   channels of one tap; Kt = conv_amx_depth(CG, KH * KW) with zero columns past KH*KW*CGp.
//   Output channels in blocks of 32 (zero rows past MG, R = ceil(MG / 32) blocks), each block cut
//   in 32-deep steps stored one after another, each step the two 16 x 32 A tiles of its rows
//   (1 KiB each), so that a row block streams its weights in order:
//     packed[g][b][s][i][q] = W[g * MG + b * 32 + i][c][r]  for k = s * 32 + q = r * CGp + c
//     at ((g * R + b) * Kt / 32 + s) * 1024 + i * 32 + q.
// - "i8", INT8 weights for the u8 x s8 kernel (c_conv_int8.cpp): k runs over quads of input
//   channels (CQ = ceil(CG / 4), zero channels past CG), then taps, then the 4 channels of the
//   quad, so that 4 consecutive k (what vpdpbusd multiplies per 32-bit lane) are 4 channels of
//   one tap: group kg = q * KH*KW + r holds channels 4q..4q+3 at tap r. Output channels in
//   blocks of kConvI8Rows (zero rows past MG, R = ceil(MG / 12) blocks), each block's 12 rows
//   side by side per k-group (48 bytes), the groups in order:
//     packed[g][b][kg][i][c] = W[g * MG + b * 12 + i][4q + c][r]  at ((g * R + b) * KG + kg) * 48 + i * 4 + c.
// A spec reading packed weights has input 1 [size] (F32, BF16 for "amx"), "w_layout", and
// "w_shape" (the original weight's shape, which the geometry comes from).
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>

#include "jit/codegen/conv_geometry.hpp"
#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

// Output channels per block of the "cols" layout.
inline constexpr int64_t kConvColBlock = 64;

// Rows per block and k per step of the "amx" layout.
inline constexpr int64_t kConvAmxRows = 32;
inline constexpr int64_t kConvAmxStep = 32;
// The "amx" layout's k extent: taps x channels (rounded up to even), rounded up to a step.
inline int64_t conv_amx_depth(int64_t channels, int64_t taps) {
  return (taps * ((channels + 1) / 2 * 2) + kConvAmxStep - 1) / kConvAmxStep * kConvAmxStep;
}

// Rows per block and the k-group count of the "i8" layout.
inline constexpr int64_t kConvI8Rows = 12;
inline int64_t conv_i8_groups(int64_t channels, int64_t taps) { return (channels + 3) / 4 * taps; }

// Whether the C Conv generator takes `spec` (a conv spec as jit::lower makes it) with packed
// weights: a convolution it runs on the GEMM microkernel (not depthwise) with an F32 or BF16
// weight. BF16 weights with a BF16 input run on AMX tiles (the "amx" layout) where the device
// has AMX-BF16; elsewhere they are packed as F32 (conv_bf16_as_f32), the values widened exactly.
bool conv_takes_packed_weights(const KernelSpec& spec);
// Whether a BF16 weight of `spec` is packed as F32 for the FP32 kernels: unless the input is
// BF16 too and the device has AMX-BF16 (`amx_bf16`; the "amx" kernel's plain-C fallback for
// other targets is slow).
bool conv_bf16_as_f32(const KernelSpec& spec, bool amx_bf16);

// `spec` reading its weight packed: input 1 becomes [packed size] of the weight's type,
// "w_shape" and "w_layout" are set (the layout the generator runs fastest with for this shape;
// "amx" for a BF16 weight).
KernelSpec conv_spec_with_packed_weights(const KernelSpec& spec);

// Whether a Conv of geometry `g` with FP32 input and weights runs the Winograd kernel ("wino"
// layout): 3x3, unit strides and dilations, one group, at least 16 input channels, output
// channels filling 64-wide blocks.
bool conv_runs_winograd(const ConvGeometry& g);

// Packs the row-major weight `w` (the original [M, CG, KH, KW] values) for `packed_spec` (one
// conv_spec_with_packed_weights gave) into `out` (its input 1's element count): FP32 values for
// "rows", "cols" and "wino", BF16 bit patterns for "amx".
void pack_conv_weights(const KernelSpec& packed_spec, const float* w, float* out);
void pack_conv_weights(const KernelSpec& packed_spec, const uint16_t* w, uint16_t* out);
// Packs the quantised weight `q` (row-major [M, CG, KH, KW], 1-D: [M, CG, KW]) of a Conv with
// `group` groups in the "i8" layout into `out` (conv_i8_packed_bytes of them); `row_sums[m]`
// gets the sum of output channel m's values (M of them).
int64_t conv_i8_packed_bytes(const std::vector<int64_t>& w_shape, int64_t group);
void pack_conv_weights_i8(const std::vector<int64_t>& w_shape, int64_t group, const int8_t* q, int8_t* out,
                          int32_t* row_sums);

}  // namespace hpf::jit
