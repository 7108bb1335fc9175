// CPU-side rewrites of FP32 Convs into exact copies (ONNX ops) and a Conv whose kernel runs it
// faster. Both apply to a Conv with a 4-D FP32 input of concrete shape and constant 4-D weights
// that `plan` (may be null) computes in FP32 or has no entry for; quantised and 16-bit Convs keep
// their own kernels. The Conv keeps its name and output, so its epilogue still fuses.
//
// - Strided 1x1 Convs without padding (ResNet's downsampling shortcuts) read only every
//   stride-th pixel: a Slice picks those pixels and a unit-stride 1x1 Conv follows, whose kernel
//   reads its input in place (conv_pointwise), instead of the patch-packing GEMM the strided form
//   needs (about 1.4x slower per multiply-add here).
// - Convs of several taps over a small output map (ResNet-50's 14x14 and 7x7 stages) waste much
//   of the direct kernel's positions: it computes over padded rows, 9 columns for every 7 outputs
//   of a 7x7 map. Their patches are gathered (a Pad where there is padding, then one Gather of
//   every tap's pixels per channel) and a 1x1 Conv over them follows (conv_pointwise fills its
//   blocks with the map's positions), with the weights reshaped to [M, C*taps, 1, 1].
//
// Thread-safety: pure functions over the caller's graph (and `cache`, itself thread-safe).
#pragma once

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"
#include "hpf/session.hpp"

namespace hpf {

// Rewrites, in `g` (shapes concrete), every strided 1x1 Conv without padding; returns how many.
// The rewritten graph computes the same values.
Expected<int> subsample_strided_pointwise_convs(Graph& g, const Plan* plan);

// Output maps up to this many positions (7x7) are gathered: there the direct kernel has 7
// positions a row to cut into tiles of 6 (ResNet-50's strided 14 -> 7 3x3 layer: 1.55 ms direct,
// 1.35 gathered). On larger maps it computes each row exactly and reads its input in place; their
// patches would outgrow the caches. 3x3 Convs of unit strides run Winograd's kernel instead
// (jit::conv_runs_winograd) and are left alone.
inline constexpr int64_t kSmallMapPositions = 49;

// Rewrites, in `g` (shapes concrete), every ungrouped Conv with FP32 weights of more than one
// tap, explicit pads, at least 256 multiply-adds per output and an output map of at most
// kSmallMapPositions positions, unless the Winograd kernel takes it. The reshaped weights (a copy) are kept in `cache` (a
// SharedWeights; may be null), so that every compile of the model shares one. Returns how many
// were rewritten. The rewritten graph computes the same values.
Expected<int> gather_small_map_convs(Graph& g, const Plan* plan, WeightCache* cache);

}  // namespace hpf
