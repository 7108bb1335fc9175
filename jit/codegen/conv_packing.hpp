// FP32 Conv weights packed once for the C Conv kernels (c_conv.cpp), so that their
// microkernel streams them in order. Read straight from the [M, CG, KH, KW] weight, each call
// of the microkernel takes 6 rows a whole K apart (18 KiB for a 512-channel 3x3 layer), 512
// bytes of each: the hardware prefetchers never ramp up on such short runs and ResNet-50's deep
// layers ran at half the speed they reach with the rows in cache.
//
// Two layouts (attribute "w_layout"), K = CG * KH * KW, per group g of MG output channels:
// - "rows", for the implicit GEMM with output channels as the microkernel's rows: the channels
//   in tiles of kGemmMR (zero rows past MG, T = ceil(MG / kGemmMR) tiles), K cut in slices of
//   kGemmKC (the last one kc_s = K - s * kGemmKC long), slice-major so that a work item reads
//   its tiles of a slice as one run:
//     packed[g][s][t][q][i] = W[g * MG + t * MR + i][s * KC + q]
//     at offset g * T * MR * K + s * KC * T * MR + t * kc_s * MR + q * MR + i.
// - "cols", for a pointwise (1x1, unit stride, unpadded) Conv with output channels as the
//   microkernel's columns: blocks of 64 channels (zero past MG, B = ceil(MG / 64) blocks), each
//   K rows of 64:
//     packed[g][b][k][j] = W[g * MG + b * 64 + j][k]   at (g * B + b) * K * 64 + k * 64 + j.
// A spec reading packed weights has input 1 F32 [size], "w_layout", and "w_shape" (the original
// weight's shape, which the geometry comes from).
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

// Output channels per block of the "cols" layout.
inline constexpr int64_t kConvColBlock = 64;

// Whether the C Conv generator takes `spec` (a conv spec as jit::lower makes it) with packed
// weights: an F32 weight of a convolution it runs on the GEMM microkernel (not depthwise).
bool conv_takes_packed_weights(const KernelSpec& spec);

// `spec` reading its weight packed: input 1 becomes F32 [packed size], "w_shape" and
// "w_layout" are set (the layout the generator runs fastest with for this shape).
KernelSpec conv_spec_with_packed_weights(const KernelSpec& spec);

// Packs the row-major weight `w` (the original [M, CG, KH, KW] values) for `packed_spec` (one
// conv_spec_with_packed_weights gave) into `out` (its input 1's element count).
void pack_conv_weights(const KernelSpec& packed_spec, const float* w, float* out);

}  // namespace hpf::jit
