// A Conv with a kernel of several taps over a small output map (ResNet-50's 14x14 and 7x7
// stages) wastes much of the direct kernel's positions: it computes over padded rows, 9 columns
// for every 7 outputs of a 7x7 map. On the CPU such a Conv runs as its patches gathered by ONNX
// ops (a Pad where it has padding, then a Gather of every tap's pixels per channel: exact copies)
// and a 1x1 Conv over them, whose kernel (conv_pointwise) fills its blocks with the map's
// positions. Its weights are the same values reshaped to [M, C*taps, 1, 1].
//
// Thread-safety: pure functions over the caller's graph.
#pragma once

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"
#include "hpf/session.hpp"

namespace hpf {

// Output maps up to this many positions are rewritten (larger ones waste little, and their
// patches would outgrow the caches).
inline constexpr int64_t kSmallMapPositions = 196;

// Rewrites, in `g` (shapes concrete), every ungrouped 2-D Conv with constant weights, more than
// one tap, explicit pads, an FP32 input, at least 256 multiply-adds per output and an output
// map of at most kSmallMapPositions positions, that `plan` (may be null) computes in FP32 or has
// no entry for; quantised and 16-bit Convs keep their own kernels. The Conv keeps its name and
// output (so its epilogue still fuses) and takes the patches. The reshaped weights (a copy) are
// kept in `cache` (a SharedWeights; may be null), so that every compile of the model shares one.
// Returns how many were rewritten. The rewritten graph computes the same values.
Expected<int> gather_small_map_convs(Graph& g, const Plan* plan, WeightCache* cache);

}  // namespace hpf
