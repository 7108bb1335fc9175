// FLOPs of a graph from its shapes (flop_count.hpp).
#include "apps/hpf/flop_count.hpp"

#include <optional>
#include <set>

namespace hpf::cli {
namespace {

std::optional<std::vector<int64_t>> shape_of(const Graph& g, ValueId id) {
  if (id == kNoValue) return std::nullopt;
  const Value& v = g.value(id);
  if (!v.has_shape) return std::nullopt;
  return concrete(v.shape);
}

double elements(const std::vector<int64_t>& s) { return static_cast<double>(numel(s)); }

// The node's FLOPs, or nullopt when a shape it needs is unknown.
std::optional<double> node_flops(const Graph& g, const Node& n) {
  static const std::set<std::string> kShapeOnly = {
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant", "ConstantOfShape",
      "Transpose", "Concat", "Split", "Slice", "Gather", "Expand", "Cast", "Pad", "Tile"};
  if (kShapeOnly.count(n.op)) return 0.0;
  if (n.outputs.empty()) return 0.0;
  auto out = shape_of(g, n.outputs[0]);
  if (!out) return std::nullopt;
  if (n.op == "MatMul" || n.op == "Gemm") {
    auto a = shape_of(g, n.inputs.empty() ? kNoValue : n.inputs[0]);
    if (!a || a->empty()) return std::nullopt;
    int64_t k = a->back();
    if (n.op == "Gemm") {
      auto it = n.attrs.find("transA");
      const int64_t* ta = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
      if (ta && *ta && a->size() == 2) k = (*a)[0];
    }
    return 2.0 * elements(*out) * static_cast<double>(k);
  }
  if (n.op == "Conv" || n.op == "ConvTranspose") {
    auto w = shape_of(g, n.inputs.size() > 1 ? n.inputs[1] : kNoValue);
    auto x = shape_of(g, n.inputs.empty() ? kNoValue : n.inputs[0]);
    if (!w || !x || w->size() < 2) return std::nullopt;
    double kernel = 1;
    for (size_t d = 2; d < w->size(); ++d) kernel *= static_cast<double>((*w)[d]);
    if (n.op == "Conv")  // W: [C_out, C_in / group, k...]
      return 2.0 * elements(*out) * static_cast<double>((*w)[1]) * kernel;
    // ConvTranspose W: [C_in, C_out / group, k...]: every input element scatters into
    // C_out / group * prod(kernel) outputs.
    return 2.0 * elements(*x) * static_cast<double>((*w)[1]) * kernel;
  }
  return elements(*out);
}

}  // namespace

FlopCount count_flops(const Graph& g) {
  FlopCount c;
  for (const Node& n : g.nodes()) {
    auto f = node_flops(g, n);
    if (!f) {
      c.unknown.push_back(n.name + " (" + n.op + ")");
      continue;
    }
    c.total += *f;
    if (*f > 0) c.by_op[n.op] += *f;
  }
  return c;
}

const char* flop_count_rule() {
  return "MatMul/Gemm 2*M*N*K, Conv 2*out*(C_in/group)*kernel, ConvTranspose 2*in*(C_out/group)*kernel "
         "(2 per multiply-add); shape-only ops (Reshape, Transpose, Concat, Slice, Gather, Cast, ...) 0; "
         "every other op 1 per output element";
}

}  // namespace hpf::cli
