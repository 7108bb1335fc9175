// Constant folding with the reference kernels: a node whose inputs are all constants is
// evaluated once at load time and replaced by its results.
#include "core/ref/kernel.hpp"
#include "hpf/log.hpp"
#include "hpf/reference.hpp"

namespace hpf {

Expected<int> fold_constants(Graph& g, size_t max_bytes) {
  HPF_ASSIGN_OR_RETURN(auto order, g.topological_order());
  const ref::KernelTable& table = ref::kernels();
  int folded = 0;
  for (int32_t id : order) {
    const Node n = g.node(id);  // copy: set_constant below touches the value table
    const ir::OpDef* def = ir::find_op(n.op);
    auto kit = table.find(n.op);
    if (!def || kit == table.end()) continue;
    // Shape of a value whose shape is fully known is a constant even when the value is not.
    if (n.op == "Shape" && n.inputs.size() == 1) {
      const Value& v = g.value(n.inputs[0]);
      if (v.has_shape && !g.constant(n.inputs[0])) {
        if (auto dims = concrete(v.shape)) {
          ref::Buf fake;
          fake.dtype = v.dtype;
          fake.shape = *dims;
          ref::KernelContext ctx(n, *def, {&fake}, std::nullopt);
          HPF_RETURN_IF_ERROR(ref::invoke(kit->second, ctx, n));
          g.set_constant(n.outputs[0], ref::to_tensor(ctx.out[0]));
          ++folded;
        }
        continue;
      }
    }
    bool all_const = true;
    for (ValueId v : n.inputs)
      if (v != kNoValue && !g.constant(v)) all_const = false;
    if (!all_const) continue;
    // Folding must not blow up the model: skip nodes whose outputs are known to be large.
    size_t out_bytes = 0;
    for (ValueId o : n.outputs) {
      const Value& v = g.value(o);
      auto dims = v.has_shape ? concrete(v.shape) : std::nullopt;
      out_bytes += dims ? storage_bytes(v.dtype, numel(*dims)) : 0;
    }
    if (out_bytes > max_bytes) continue;
    std::vector<ref::Buf> bufs;
    bufs.reserve(n.inputs.size());
    for (ValueId v : n.inputs) bufs.push_back(v == kNoValue ? ref::Buf() : ref::to_buf(*g.constant(v)));
    std::vector<const ref::Buf*> ptrs;
    for (size_t k = 0; k < n.inputs.size(); ++k) ptrs.push_back(n.inputs[k] == kNoValue ? nullptr : &bufs[k]);
    ref::KernelContext ctx(n, *def, std::move(ptrs), std::nullopt);
    HPF_RETURN_IF_ERROR(ref::invoke(kit->second, ctx, n));
    // Shapes not known before folding are known now: check the size again.
    size_t computed_bytes = 0;
    for (const ref::Buf& b : ctx.out) computed_bytes += storage_bytes(b.dtype, b.numel());
    if (computed_bytes > max_bytes) continue;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      ref::Buf& b = ctx.out[k];
      if (b.is_float())
        for (float& x : b.f) x = round_to(b.dtype, x);
      g.set_constant(n.outputs[k], ref::to_tensor(b));
    }
    ++folded;
  }
  if (folded) {
    log(LogLevel::debug, "fold_constants: graph '" + g.name() + "': " + std::to_string(folded) + " nodes folded");
    g.remove_dead_nodes();
    HPF_RETURN_IF_ERROR(g.infer_shapes());
  }
  return folded;
}

Expected<Graph> specialize(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes) {
  Graph g = graph;
  if (!input_shapes.empty()) {
    if (input_shapes.size() != g.inputs().size())
      return Status::invalid("graph '" + g.name() + "' has " + std::to_string(g.inputs().size()) +
                             " inputs, got " + std::to_string(input_shapes.size()) + " shapes");
    for (size_t k = 0; k < input_shapes.size(); ++k) {
      Value& v = g.value(g.inputs()[k]);
      if (v.has_shape && v.shape.size() != input_shapes[k].size())
        return Status::invalid("input '" + v.name + "' has rank " + std::to_string(v.shape.size()) +
                               ", got shape " + shape_string(input_shapes[k]));
      for (size_t d = 0; v.has_shape && d < v.shape.size(); ++d)
        if (v.shape[d].known() && v.shape[d].value != input_shapes[k][d])
          return Status::invalid("input '" + v.name + "' expects " + to_string(v.shape) + ", got " +
                                 shape_string(input_shapes[k]));
      v.shape = make_shape(input_shapes[k]);
      v.has_shape = true;
    }
  }
  HPF_RETURN_IF_ERROR(g.infer_shapes());
  // Values computed from shapes alone (Shape -> Gather -> Concat -> Reshape, as exporters write
  // them) become constants now that the input shapes are known; each pass may expose more.
  for (int pass = 0; pass < 8; ++pass) {
    HPF_ASSIGN_OR_RETURN(int folded, fold_constants(g));
    if (folded == 0) break;
  }
  return g;
}

}  // namespace hpf
