// FP32 Conv weights packed once for the implicit-GEMM kernel (c_conv.cpp), so that its
// microkernel streams them in order. Read straight from the [M, CG, KH, KW] weight, each call
// of the microkernel takes 6 rows a whole K apart (18 KiB for a 512-channel 3x3 layer), 512
// bytes of each: the hardware prefetchers never ramp up on such short runs and ResNet-50's deep
// layers ran at half the speed they reach with the rows in cache.
//
// Layout, per group g: the group's MG output channels in tiles of kGemmMR rows (zero rows past
// MG, T = ceil(MG / kGemmMR) tiles), K = CG * KH * KW cut into slices of kGemmKC (the last one
// kc_s = K - s * kGemmKC long), slice-major so that a work item reads its tiles of a slice as
// one run:
//   packed[g][s][t][q][i] = W[g * MG + t * MR + i][s * KC + q]
//   at offset g * T * MR * K + s * KC * T * MR + t * kc_s * MR + q * MR + i.
// A spec reading packed weights has input 1 F32 [conv_packed_size(...)] and attribute
// "w_shape" (the original weight's shape, which the geometry comes from).
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

// Values in the packed form of `groups` groups of `rows` output channels by `k` terms.
int64_t conv_packed_size(int64_t groups, int64_t rows, int64_t k);

// Packs a row-major [groups * rows, k] weight into `out` (conv_packed_size values).
void pack_conv_weights(const float* w, int64_t groups, int64_t rows, int64_t k, float* out);

// Whether the C Conv generator takes `spec` (a conv spec as jit::lower makes it) with packed
// weights: an F32 weight of a convolution it runs as implicit GEMM (not depthwise).
bool conv_takes_packed_weights(const KernelSpec& spec);

// `spec` reading its weight packed: input 1 becomes F32 [conv_packed_size], "w_shape" is set.
KernelSpec conv_spec_with_packed_weights(const KernelSpec& spec);

}  // namespace hpf::jit
