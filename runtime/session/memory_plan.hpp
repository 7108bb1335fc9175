// The memory plan of an executable: which device buffer ("slot") holds each value, at which
// offset. Weights, graph inputs and graph outputs get slots of their own; intermediate values
// share one arena slot, at offsets that never overlap while their lifetimes (first write to last
// read) do. View ops alias their input.
#pragma once

#include <cstddef>
#include <vector>

#include "hpf/graph.hpp"

namespace hpf {

struct MemoryPlan {
  std::vector<int> slot_of;          // value -> slot, -1 when the value is never materialised
  std::vector<size_t> offset_of;     // value -> byte offset in its slot
  std::vector<size_t> slot_bytes;    // size of each slot
  size_t total_bytes = 0;            // sum of slot_bytes: what the executable allocates
  size_t unshared_bytes = 0;         // what one buffer per value would have taken
};

// `bytes[v]`: storage of value v. Steps run in order; an alias step's output is a view of its
// input.
MemoryPlan plan_memory(const Graph& g, const std::vector<size_t>& bytes,
                       const std::vector<std::vector<ValueId>>& step_inputs,
                       const std::vector<std::vector<ValueId>>& step_outputs,
                       const std::vector<bool>& alias_step);

}  // namespace hpf
