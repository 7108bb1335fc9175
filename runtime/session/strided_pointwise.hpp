// A strided 1x1 Conv without padding (ResNet's downsampling shortcuts) reads only every
// stride-th pixel: on the CPU it runs as a Slice that picks those pixels (an exact copy) and a
// unit-stride 1x1 Conv, whose kernel reads its input in place (conv_pointwise), instead of the
// patch-packing GEMM the strided form needs (about 1.4x slower per multiply-add here).
//
// Thread-safety: pure functions over the caller's graph.
#pragma once

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"

namespace hpf {

// Rewrites, in `g` (shapes concrete), every such Conv with an FP32 input that `plan` (may be
// null) computes in FP32 or has no entry for; quantised and 16-bit Convs keep their own kernels.
// Returns how many were rewritten. The rewritten graph computes the same values.
Expected<int> subsample_strided_pointwise_convs(Graph& g, const Plan* plan);

}  // namespace hpf
