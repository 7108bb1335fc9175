// The executable's memory plan: intermediates at offsets of one arena.
#include <doctest/doctest.h>

#include <random>

#include "hpf/graph.hpp"
#include "runtime/session/memory_plan.hpp"

using namespace hpf;

namespace {

// One step per node, in the graph's order; bytes per value from `size`.
MemoryPlan plan_for(const Graph& g, const std::vector<size_t>& bytes) {
  std::vector<std::vector<ValueId>> in, out;
  for (const Node& n : g.nodes()) {
    in.push_back(n.inputs);
    out.push_back(n.outputs);
  }
  return plan_memory(g, bytes, in, out, std::vector<bool>(g.nodes().size(), false));
}

// Lifetimes [first write, last read] as steps; intermediates only.
void check_no_overlap(const Graph& g, const MemoryPlan& p, const std::vector<size_t>& bytes) {
  const size_t nv = g.values().size();
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t s = 0; s < g.nodes().size(); ++s) {
    for (ValueId v : g.nodes()[s].outputs) first[v] = static_cast<int>(s);
    for (ValueId v : g.nodes()[s].inputs) last[v] = static_cast<int>(s);
  }
  for (size_t a = 0; a < nv; ++a)
    for (size_t b = a + 1; b < nv; ++b) {
      if (first[a] < 0 || first[b] < 0 || p.slot_of[a] != p.slot_of[b]) continue;
      const int ea = std::max(first[a], last[a]), eb = std::max(first[b], last[b]);
      if (first[a] > eb || first[b] > ea) continue;  // never alive together
      const bool apart = p.offset_of[a] + bytes[a] <= p.offset_of[b] || p.offset_of[b] + bytes[b] <= p.offset_of[a];
      CHECK_MESSAGE(apart, "values " << a << " and " << b << " alive together overlap");
    }
}

}  // namespace

TEST_CASE("memory plan: values alive at different times share the arena, alive together never overlap") {
  // x -> a (1000 B) -> b (500 B) -> c (1000 B) -> y: a and c share offset 0, b sits after them.
  GraphBuilder gb("chain");
  auto x = gb.input("x", DType::F32, {250});
  auto a = gb.op1("Relu", {x}, {}, "a");
  auto b = gb.op1("Relu", {a}, {}, "b");
  auto c = gb.op1("Relu", {b}, {}, "c");
  gb.output(gb.op1("Relu", {c}, {}, "d"), "y");
  const Graph g = *gb.build();
  std::vector<size_t> bytes(g.values().size(), 1000);
  bytes[b] = 500;
  const MemoryPlan p = plan_for(g, bytes);
  CHECK(p.slot_of[a] == p.slot_of[c]);
  CHECK(p.offset_of[a] == p.offset_of[c]);
  CHECK(p.slot_of[b] == p.slot_of[a]);
  CHECK(p.offset_of[b] == 1024);  // offsets aligned to 64 bytes
  CHECK(p.slot_bytes[p.slot_of[a]] == 1536);
  CHECK(p.slot_of[x] != p.slot_of[a]);  // graph inputs and outputs keep buffers of their own
  check_no_overlap(g, p, bytes);
}

TEST_CASE("memory plan: random graphs with skips keep values alive together apart") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    GraphBuilder gb("skips");
    std::vector<ValueId> vals = {gb.input("x", DType::F32, {4})};
    for (int k = 0; k < 30; ++k) {
      const ValueId u = vals[rng() % vals.size()], w = vals[rng() % vals.size()];
      vals.push_back(gb.op1("Add", {u, w}, {}, "n" + std::to_string(k)));
    }
    gb.output(vals.back(), "y");
    const Graph g = *gb.build();
    std::vector<size_t> bytes(g.values().size());
    for (size_t& s : bytes) s = 64 * (1 + rng() % 40) - rng() % 64;
    const MemoryPlan p = plan_for(g, bytes);
    check_no_overlap(g, p, bytes);
    CHECK(p.total_bytes <= p.unshared_bytes + 64 * g.values().size());
  }
}

// A step whose kernel may write its output over an input (a Conv's residual): the output takes
// that input's memory only where the input dies there, is an intermediate of the output's size
// and is no other input of the step.
TEST_CASE("memory plan: an output written over an input that dies at its step") {
  struct Variant {
    const char* what;
    bool read_later, graph_input, twice, smaller;
  };
  for (const Variant& v : {Variant{"dies there", false, false, false, false},
                           Variant{"read by a later step", true, false, false, false},
                           Variant{"a graph input", false, true, false, false},
                           Variant{"also the step's other input", false, false, true, false},
                           Variant{"smaller than the output", false, false, false, true}}) {
    CAPTURE(v.what);
    GraphBuilder gb("in_place");
    auto x = gb.input("x", DType::F32, {250});
    auto a = v.graph_input ? x : gb.op1("Relu", {x}, {}, "a");
    auto b = gb.op1("Relu", {a}, {}, "b");
    auto c = gb.op1("Add", {v.twice ? a : b, a}, {}, "c");  // over input 1 (a)
    auto d = gb.op1("Relu", {c}, {}, "d");
    gb.output(v.read_later ? gb.op1("Add", {d, a}, {}, "e") : gb.op1("Relu", {d}, {}, "e"), "y");
    const Graph g = *gb.build();
    std::vector<std::vector<ValueId>> in, out;
    std::vector<int> over;
    for (const Node& n : g.nodes()) {
      in.push_back(n.inputs);
      out.push_back(n.outputs);
      over.push_back(n.name == "c" ? 1 : -1);
    }
    std::vector<size_t> bytes(g.values().size(), 1000);
    if (v.smaller) bytes[a] = 960;
    const MemoryPlan p = plan_memory(g, bytes, in, out, std::vector<bool>(g.nodes().size(), false), over);
    const bool taken = !v.read_later && !v.graph_input && !v.twice && !v.smaller;
    CHECK(p.in_place_steps == (taken ? 1 : 0));
    CHECK((p.slot_of[c] == p.slot_of[a] && p.offset_of[c] == p.offset_of[a]) == taken);
    // c's memory stays c's while d reads it: d (written while c is read) lies apart.
    CHECK((p.offset_of[d] + bytes[d] <= p.offset_of[c] || p.offset_of[c] + bytes[c] <= p.offset_of[d]));
    if (!taken) check_no_overlap(g, p, bytes);
  }
}
