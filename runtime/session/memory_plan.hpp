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
  int in_place_steps = 0;            // steps whose output took an input's memory
};

// `bytes[v]`: storage of value v. Steps run in order; an alias step's output is a view of its
// input. `in_place[s]` (optional, one per step): the index in step_inputs[s] of an input whose
// memory the step's first output may take (its kernel reads each element of it only for the output
// element at the same index, before writing that one), or -1. The plan gives the output that
// memory where the input (with every view of it) is read last by that step, is an intermediate
// (not a graph input, output or weight), is as large as the output and is no other input of the
// step; `in_place_steps` counts the steps that got it.
MemoryPlan plan_memory(const Graph& g, const std::vector<size_t>& bytes,
                       const std::vector<std::vector<ValueId>>& step_inputs,
                       const std::vector<std::vector<ValueId>>& step_outputs,
                       const std::vector<bool>& alias_step, const std::vector<int>& in_place = {});

}  // namespace hpf
