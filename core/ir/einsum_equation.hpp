// Einsum equations ("bij,bjk->bik", "...ii->...i", "i,i"): parsed once into label ids per
// operand dimension, so that shape inference and the reference kernel agree on what an
// equation means.
//
// Labels: the dimensions an ellipsis stands for get ids 0 .. ellipsis_rank-1 (right-aligned,
// numpy broadcasting); letters get the ids after those. A letter repeated within one operand
// takes its diagonal. Implicit mode (no "->"): the output is the ellipsis dimensions, then the
// letters used exactly once, in ASCII order. Ellipsis dimensions an explicit output leaves out
// are summed over, like any label missing from the output.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hpf/status.hpp"

namespace hpf::ir {

struct EinsumEquation {
  std::vector<std::vector<int>> inputs;  // label id of each dimension of each operand
  std::vector<int> output;               // label id of each output dimension
  int num_labels = 0;
  int ellipsis_rank = 0;  // labels [0, ellipsis_rank) are ellipsis dimensions (size 1 broadcasts)
};

// `ranks` are the operands' ranks. Errors are messages without node context.
Expected<EinsumEquation> parse_einsum(std::string_view equation, std::span<const int64_t> ranks);

// Size of every label from the operands' shapes (-1 where unknown); error when two operands
// disagree on a label (ellipsis dimensions of size 1 broadcast).
Expected<std::vector<int64_t>> einsum_label_sizes(const EinsumEquation& eq,
                                                  std::span<const std::vector<int64_t>> shapes);

}  // namespace hpf::ir
