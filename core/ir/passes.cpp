// Structural passes over a Graph: topological order and dead-node removal.
#include <algorithm>
#include <queue>

#include "hpf/graph.hpp"

namespace hpf {

Expected<std::vector<int32_t>> Graph::topological_order() const {
  const auto n = static_cast<int32_t>(nodes_.size());
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int32_t>> users(values_.size());
  for (int32_t i = 0; i < n; ++i) {
    for (ValueId v : nodes_[i].inputs) {
      if (v == kNoValue) continue;
      const Value& val = values_[v];
      if (val.producer >= 0 && !val.constant) {
        ++pending[i];
        users[v].push_back(i);
      }
    }
  }
  // Kahn's algorithm with the smallest ready id first keeps the original order when it is
  // already topological (stable, easy-to-read dumps).
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (int32_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    int32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (ValueId o : nodes_[i].outputs)
      for (int32_t u : users[o])
        if (--pending[u] == 0) ready.push(u);
  }
  if (static_cast<int32_t>(order.size()) != n) {
    for (int32_t i = 0; i < n; ++i)
      if (pending[i] > 0)
        return Status::invalid("graph '" + name_ + "' has a cycle through node '" +
                               nodes_[i].name + "' (" + nodes_[i].op + ")");
  }
  return order;
}

Status Graph::sort_topologically() {
  HPF_ASSIGN_OR_RETURN(auto order, topological_order());
  std::vector<Node> sorted;
  sorted.reserve(nodes_.size());
  for (int32_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  rebuild_producers();
  return {};
}

int Graph::remove_dead_nodes() {
  std::vector<bool> live_value(values_.size(), false);
  for (ValueId v : outputs_) live_value[v] = true;
  std::vector<bool> live_node(nodes_.size(), false);
  // Walk backwards from the outputs; a value that became a constant needs no producer.
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = nodes_.size(); i-- > 0;) {
      if (live_node[i]) continue;
      bool needed = false;
      for (ValueId o : nodes_[i].outputs)
        if (live_value[o] && !values_[o].constant) needed = true;
      if (!needed) continue;
      live_node[i] = true;
      changed = true;
      for (ValueId v : nodes_[i].inputs)
        if (v != kNoValue) live_value[v] = true;
    }
  }
  std::vector<Node> kept;
  int removed = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (live_node[i]) {
      kept.push_back(std::move(nodes_[i]));
    } else {
      ++removed;
    }
  }
  nodes_ = std::move(kept);
  for (ValueId v : inputs_) live_value[v] = true;
  for (const Node& n : nodes_)
    for (ValueId o : n.outputs) live_value[o] = true;

  // Compact the value table: drop values nothing refers to, renumber the rest.
  std::vector<ValueId> remap(values_.size(), kNoValue);
  std::vector<Value> new_values;
  for (size_t v = 0; v < values_.size(); ++v) {
    if (!live_value[v]) continue;
    remap[v] = static_cast<ValueId>(new_values.size());
    new_values.push_back(std::move(values_[v]));
  }
  values_ = std::move(new_values);
  auto fix = [&](ValueId& v) {
    if (v != kNoValue) v = remap[v];
  };
  for (Node& n : nodes_) {
    for (ValueId& v : n.inputs) fix(v);
    for (ValueId& v : n.outputs) fix(v);
  }
  for (ValueId& v : inputs_) fix(v);
  for (ValueId& v : outputs_) fix(v);
  value_by_name_.clear();
  for (size_t v = 0; v < values_.size(); ++v) value_by_name_[values_[v].name] = static_cast<ValueId>(v);
  rebuild_producers();
  return removed;
}

}  // namespace hpf
