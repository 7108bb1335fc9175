#include "runtime/session/memory_plan.hpp"

#include <algorithm>

namespace hpf {

MemoryPlan plan_memory(const Graph& g, const std::vector<size_t>& bytes,
                       const std::vector<std::vector<ValueId>>& step_inputs,
                       const std::vector<std::vector<ValueId>>& step_outputs,
                       const std::vector<bool>& alias_step) {
  const size_t nv = g.values().size(), ns = step_inputs.size();
  MemoryPlan p;
  p.slot_of.assign(nv, -1);
  p.offset_of.assign(nv, 0);
  std::vector<ValueId> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = static_cast<ValueId>(v);
  for (size_t s = 0; s < ns; ++s)
    if (alias_step[s])
      for (ValueId o : step_outputs[s]) root[o] = root[step_inputs[s][0]];

  // Lifetimes of roots over non-alias steps; persistent roots never free.
  std::vector<int> last_use(nv, -1);
  std::vector<bool> needed(nv, false), persistent(nv, false);
  for (size_t s = 0; s < ns; ++s) {
    if (alias_step[s]) continue;
    for (ValueId v : step_inputs[s])
      if (v != kNoValue) {
        needed[root[v]] = true;
        last_use[root[v]] = static_cast<int>(s);
      }
    for (ValueId v : step_outputs[s]) needed[root[v]] = true;
  }
  for (ValueId v : g.inputs()) persistent[root[v]] = needed[root[v]] = true;
  for (ValueId v : g.outputs()) persistent[root[v]] = needed[root[v]] = true;
  for (size_t v = 0; v < nv; ++v)
    if (g.value(static_cast<ValueId>(v)).constant && needed[root[v]]) persistent[root[v]] = true;

  auto new_slot = [&](size_t b) {
    p.slot_bytes.push_back(b);
    return static_cast<int>(p.slot_bytes.size() - 1);
  };
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == static_cast<ValueId>(v) && needed[v]) p.unshared_bytes += bytes[v];
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == static_cast<ValueId>(v) && persistent[v]) p.slot_of[v] = new_slot(bytes[v]);

  std::vector<int> free_slots;
  for (size_t s = 0; s < ns; ++s) {
    if (alias_step[s]) continue;
    for (ValueId o : step_outputs[s]) {
      const ValueId r = root[o];
      if (p.slot_of[r] >= 0) continue;
      // Best fit among free slots; grow the largest one when none is big enough.
      int best = -1;
      for (int sl : free_slots)
        if (p.slot_bytes[sl] >= bytes[r] && (best < 0 || p.slot_bytes[sl] < p.slot_bytes[best])) best = sl;
      if (best < 0 && !free_slots.empty()) {
        best = *std::max_element(free_slots.begin(), free_slots.end(),
                                 [&](int a, int b) { return p.slot_bytes[a] < p.slot_bytes[b]; });
        p.slot_bytes[best] = bytes[r];
      }
      if (best >= 0) free_slots.erase(std::find(free_slots.begin(), free_slots.end(), best));
      else best = new_slot(bytes[r]);
      p.slot_of[r] = best;
    }
    // Free after the step: a step's outputs never share memory with its own inputs.
    for (ValueId v : step_inputs[s]) {
      if (v == kNoValue) continue;
      const ValueId r = root[v];
      if (!persistent[r] && last_use[r] == static_cast<int>(s) && p.slot_of[r] >= 0 &&
          std::find(free_slots.begin(), free_slots.end(), p.slot_of[r]) == free_slots.end())
        free_slots.push_back(p.slot_of[r]);
    }
    // Outputs nobody reads are dead at once.
    for (ValueId o : step_outputs[s]) {
      const ValueId r = root[o];
      if (!persistent[r] && last_use[r] < static_cast<int>(s) && p.slot_of[r] >= 0 &&
          std::find(free_slots.begin(), free_slots.end(), p.slot_of[r]) == free_slots.end())
        free_slots.push_back(p.slot_of[r]);
    }
  }
  for (size_t v = 0; v < nv; ++v) p.slot_of[v] = p.slot_of[root[v]];
  for (size_t b : p.slot_bytes) p.total_bytes += b;
  return p;
}

}  // namespace hpf
