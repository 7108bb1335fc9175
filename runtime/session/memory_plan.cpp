#include "runtime/session/memory_plan.hpp"

#include <algorithm>

namespace hpf {

MemoryPlan plan_memory(const Graph& g, const std::vector<size_t>& bytes,
                       const std::vector<std::vector<ValueId>>& step_inputs,
                       const std::vector<std::vector<ValueId>>& step_outputs,
                       const std::vector<bool>& alias_step, const std::vector<int>& in_place) {
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

  // Outputs written over an input that dies at their step: the output (and its views) joins the
  // input's root, whose life then runs on to the output's last read.
  for (size_t s = 0; s < in_place.size() && s < ns; ++s) {
    const int k = in_place[s];
    if (k < 0 || alias_step[s] || static_cast<size_t>(k) >= step_inputs[s].size() || step_outputs[s].empty()) continue;
    const ValueId in = step_inputs[s][k], out = step_outputs[s][0];
    if (in == kNoValue || out == kNoValue || root[out] != out) continue;
    const ValueId r = root[in];
    if (persistent[r] || persistent[out] || last_use[r] != static_cast<int>(s) || bytes[r] != bytes[out] ||
        bytes[out] == 0)
      continue;
    bool shared = false;  // the input's memory read through another of the step's inputs
    for (size_t j = 0; j < step_inputs[s].size(); ++j)
      if (j != static_cast<size_t>(k) && step_inputs[s][j] != kNoValue && root[step_inputs[s][j]] == r) shared = true;
    if (shared) continue;
    for (size_t v = 0; v < nv; ++v)
      if (root[v] == out) root[v] = r;
    last_use[r] = std::max(static_cast<int>(s), last_use[out]);
    ++p.in_place_steps;
  }
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == static_cast<ValueId>(v) && persistent[v]) p.slot_of[v] = new_slot(bytes[v]);

  // Intermediates: one arena, each value at an offset, the largest first, each at the lowest
  // offset free over its lifetime (first write to last read) among those placed: values alive at
  // once never overlap, and a step's outputs never share memory with its own inputs (but the
  // outputs joined to an input above, which are the same value to the plan). (Slots
  // reused whole, each as large as the largest value it ever held, took 8.6 MiB for MobileNetV2's
  // FP32 activations; the arena 6.3.)
  std::vector<int> def(nv, -1), end(nv, -1);
  for (size_t s = 0; s < ns; ++s) {
    if (alias_step[s]) continue;
    for (ValueId o : step_outputs[s]) {
      const ValueId r = root[o];
      if (def[r] < 0) def[r] = static_cast<int>(s);
    }
  }
  constexpr size_t kAlign = 64;
  std::vector<ValueId> order;
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == static_cast<ValueId>(v) && needed[v] && !persistent[v] && def[v] >= 0) {
      end[v] = std::max(def[v], last_use[v]);
      order.push_back(static_cast<ValueId>(v));
    }
  auto span = [&](ValueId v) { return (bytes[v] + kAlign - 1) / kAlign * kAlign; };
  std::stable_sort(order.begin(), order.end(), [&](ValueId a, ValueId b) { return span(a) > span(b); });
  std::vector<ValueId> placed;
  size_t arena = 0;
  for (ValueId v : order) {
    std::vector<ValueId> live;  // placed values alive with v, by offset
    for (ValueId u : placed)
      if (def[u] <= end[v] && def[v] <= end[u]) live.push_back(u);
    std::sort(live.begin(), live.end(), [&](ValueId a, ValueId b) { return p.offset_of[a] < p.offset_of[b]; });
    size_t off = 0;
    for (ValueId u : live) {
      if (off + span(v) <= p.offset_of[u]) break;
      off = std::max(off, p.offset_of[u] + span(u));
    }
    p.offset_of[v] = off;
    arena = std::max(arena, off + span(v));
    placed.push_back(v);
  }
  if (!order.empty()) {
    const int slot = new_slot(arena);
    for (ValueId v : order) p.slot_of[v] = slot;
  }
  for (size_t v = 0; v < nv; ++v) {
    p.slot_of[v] = p.slot_of[root[v]];
    p.offset_of[v] = p.offset_of[root[v]];
  }
  for (size_t b : p.slot_bytes) p.total_bytes += b;
  return p;
}

}  // namespace hpf
