// Floating-point operations of one inference of a graph, counted from its (inferred, concrete)
// shapes, for `hpf bench`'s achieved GFLOP/s and TOPS/W. Pure function, thread-safe.
//
// The count:
//   MatMul, Gemm          2 * M * N * K per product (batch dimensions included): 2 * MACs;
//                         Gemm's bias is not counted
//   Conv                  2 * out_elements * (C_in / group) * prod(kernel)
//   ConvTranspose         2 * in_elements * (C_out / group) * prod(kernel)
//   shape-only ops        0: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Size,
//                         Constant, ConstantOfShape, Transpose, Concat, Split, Slice, Gather,
//                         Expand, Cast, Pad, Tile (they move bytes, compute nothing)
//   every other op        1 per output element (elementwise, normalisations, softmax,
//                         reductions, pooling: an underestimate for the multi-pass ones)
// Nodes whose shapes are not concrete count 0 and are listed in `unknown`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hpf/graph.hpp"

namespace hpf::cli {

struct FlopCount {
  double total = 0;
  std::map<std::string, double> by_op;  // op type -> FLOPs
  std::vector<std::string> unknown;     // nodes without concrete shapes
};

FlopCount count_flops(const Graph& g);

// One line describing the count above, for reports.
const char* flop_count_rule();

}  // namespace hpf::cli
