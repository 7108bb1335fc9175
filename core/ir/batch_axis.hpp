// Batch-axis tracing: whether a graph computes each entry of its inputs' batch axis on its own,
// and where that axis ends up in every output. LiveExecutable uses it to run a batch of B
// entries in a variant compiled for a larger "bucket" B' (inputs padded, outputs sliced): that
// gives the same outputs only when no node mixes batch entries.
//
// The rules are per op and conservative: an op without a rule, or used in a way its rule does
// not cover (Softmax over the batch axis, a reduction that includes it, a constant operand sized
// along it, a Slice that reorders it, ...), makes the trace fail with a message naming the node.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/status.hpp"

namespace hpf::ir {

// Where the batch axis lives in a value: dimension `axis` (-1: the value does not depend on the
// batch entry, e.g. a weight) holds outer x batch x inner, in that order of significance (a
// Reshape may fold other dimensions into it: [B, S, 768] -> [B*S, 768] has axis 0, inner S;
// [S, B, 768] -> [S*B, 768], as PyTorch's attention writes it, axis 0, outer S).
struct BatchAxis {
  int axis = -1;
  int64_t inner = 1;
  int64_t outer = 1;
  bool operator==(const BatchAxis&) const = default;
};

// Traces the batch axis through `graph`, whose values all have concrete shapes (specialised,
// constants folded). `input_axes[k]`: the dimension of graph input k that is the batch axis, of
// size `batch` (>= 2), or -1 when that input does not depend on it. Returns the axis of every
// graph output, or an unsupported Status naming the first node that mixes batch entries or has
// no rule.
Expected<std::vector<BatchAxis>> trace_batch_axis(const Graph& graph, const std::vector<int>& input_axes,
                                                  int64_t batch);

// Checks, on the graph as given (before specialisation), that values computed by Shape or Size
// from a batch dimension only ever make shapes (Reshape, Expand, Tile, ConstantOfShape, ... and
// the integer arithmetic between): a batch size used as data (dividing by it, a Range or Slice
// bounded by it) would change with padding, and folding hides where it came from. A dimension
// may be the batch when it is not a known size and its symbol is `batch_symbol` or none.
Status check_shape_values(const Graph& graph, const std::string& batch_symbol);

}  // namespace hpf::ir
