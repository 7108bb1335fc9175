// classify_nodes: the op class of every node, from graph patterns (attention, ffn, decomposed
// LayerNorm, embedding tables, graph outputs) and the op table. The patterns and their
// precedence are documented in include/hpf/precision.hpp.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/ir/op_table.hpp"
#include "hpf/precision.hpp"

namespace hpf {
namespace {

bool is_one_of(const std::string& op, std::initializer_list<const char*> ops) {
  return std::any_of(ops.begin(), ops.end(), [&](const char* o) { return op == o; });
}

// Who reads each value: consumers[v] = node ids with v among their inputs.
class GraphView {
 public:
  explicit GraphView(const Graph& g) : g_(g), consumers_(g.values().size()) {
    for (int32_t n = 0; n < static_cast<int32_t>(g.nodes().size()); ++n)
      for (ValueId v : g.node(n).inputs)
        if (v != kNoValue) consumers_[v].push_back(n);
  }
  const Graph& graph() const { return g_; }
  const std::vector<int32_t>& consumers(ValueId v) const { return consumers_[v]; }
  // The node producing `v`, or nullptr for graph inputs and initializers.
  const Node* producer(ValueId v) const {
    const int32_t p = g_.value(v).producer;
    return p >= 0 ? &g_.node(p) : nullptr;
  }
  int32_t producer_id(ValueId v) const { return g_.value(v).producer; }
  bool is_constant(ValueId v) const { return g_.constant(v) != nullptr; }
  // A value worth following through a pattern: present, not a weight, floating point.
  bool is_float_activation(ValueId v) const {
    return v != kNoValue && !is_constant(v) && is_float(g_.value(v).dtype);
  }
  // A weight operand: an initializer, or an initializer behind a Transpose/Cast/DequantizeLinear
  // (how some exporters store projection weights).
  bool is_weight(ValueId v) const {
    if (v == kNoValue) return false;
    if (is_constant(v)) return true;
    const Node* p = producer(v);
    return p && is_one_of(p->op, {"Transpose", "Cast", "DequantizeLinear"}) && !p->inputs.empty() &&
           is_constant(p->inputs[0]);
  }

 private:
  const Graph& g_;
  std::vector<std::vector<int32_t>> consumers_;
};

// ---- attention ---------------------------------------------------------------------------------

bool softmax_over_last_axis(const Graph& g, const Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  if (!def) return false;
  const auto a = ir::attr_or_default(n, *def, "axis");
  const int64_t axis = a && std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a) : -1;
  if (axis == -1) return true;
  const Value& x = g.value(n.inputs[0]);
  return x.has_shape && axis == static_cast<int64_t>(x.shape.size()) - 1;
}

// MatMuls of two activations reaching `v` backwards through at most `depth` score-adjusting nodes.
void find_score_matmuls(const GraphView& gv, ValueId v, int depth, std::set<int32_t>& found) {
  const Node* p = gv.producer(v);
  if (!p) return;
  if (p->op == "MatMul") {
    if (gv.is_float_activation(p->inputs[0]) && gv.is_float_activation(p->inputs[1]))
      found.insert(gv.producer_id(v));
    return;
  }
  if (depth == 0 || !is_one_of(p->op, {"Div", "Mul", "Add", "Reshape", "Transpose"})) return;
  // Reshape/Transpose move their data input; Div's divisor is the scale; Mul and Add (scale,
  // mask) may carry the scores on either side.
  const size_t inputs = is_one_of(p->op, {"Reshape", "Transpose", "Div"}) ? 1 : p->inputs.size();
  for (size_t k = 0; k < inputs; ++k)
    if (gv.is_float_activation(p->inputs[k]))
      find_score_matmuls(gv, p->inputs[k], depth - 1, found);
}

void mark_attention(const GraphView& gv, std::vector<NodeClass>& cls) {
  const Graph& g = gv.graph();
  for (int32_t s = 0; s < static_cast<int32_t>(g.nodes().size()); ++s) {
    const Node& n = g.node(s);
    if (n.op != "Softmax" || n.inputs.empty() || !softmax_over_last_axis(g, n)) continue;
    std::set<int32_t> qk;
    find_score_matmuls(gv, n.inputs[0], 4, qk);
    std::vector<int32_t> pv;
    for (int32_t c : gv.consumers(n.outputs[0])) {
      const Node& m = g.node(c);
      if (m.op == "MatMul" && gv.is_float_activation(m.inputs[0]) &&
          gv.is_float_activation(m.inputs[1]))
        pv.push_back(c);
    }
    if (qk.empty() || pv.empty()) continue;
    cls[s] = NodeClass::attention;
    for (int32_t m : qk) cls[m] = NodeClass::attention;
    for (int32_t m : pv) cls[m] = NodeClass::attention;
  }
}

// ---- ffn ---------------------------------------------------------------------------------------

bool is_projection(const GraphView& gv, const Node& n) {
  return (n.op == "MatMul" || n.op == "Gemm") && n.inputs.size() >= 2 && gv.is_weight(n.inputs[1]);
}

// The activation region between projections: walking back from `v` through elementwise nodes
// until projections are reached. False when the walk meets anything else (a graph input, a
// LayerNorm, a Softmax) or grows past the budget.
struct ActivationRegion {
  std::set<int32_t> nodes, projections;
  int budget = 12;
};

bool walk_activation(const GraphView& gv, ValueId v, ActivationRegion& r) {
  const int32_t pid = gv.producer_id(v);
  if (pid < 0) return false;
  const Node& p = gv.graph().node(pid);
  if (is_projection(gv, p)) {
    r.projections.insert(pid);
    return true;
  }
  if (r.nodes.count(pid)) return true;  // x used twice, as in x * sigmoid(x)
  if (!is_one_of(p.op, {"Add",       "Sub",  "Mul",   "Div",     "Pow",         "Sqrt",
                        "Neg",       "Erf",  "Tanh",  "Sigmoid", "Relu",        "Gelu",
                        "LeakyRelu", "Elu",  "Selu",  "Celu",    "HardSigmoid", "HardSwish",
                        "Softplus",  "Mish", "PRelu", "Clip"}))
    return false;
  if (--r.budget < 0) return false;
  r.nodes.insert(pid);
  for (ValueId u : p.inputs)
    if (gv.is_float_activation(u) && !walk_activation(gv, u, r)) return false;
  return true;
}

void mark_ffn(const GraphView& gv, std::vector<NodeClass>& cls) {
  const Graph& g = gv.graph();
  for (int32_t m = 0; m < static_cast<int32_t>(g.nodes().size()); ++m) {
    const Node& n = g.node(m);
    if (!is_projection(gv, n) || !gv.is_float_activation(n.inputs[0])) continue;
    ActivationRegion r;
    if (!walk_activation(gv, n.inputs[0], r) || r.projections.empty()) continue;
    const bool has_activation = std::any_of(r.nodes.begin(), r.nodes.end(), [&](int32_t k) {
      return is_one_of(g.node(k).op,
                       {"Erf", "Tanh", "Sigmoid", "Relu", "Gelu", "LeakyRelu", "Elu", "Selu",
                        "Celu", "HardSigmoid", "HardSwish", "Softplus", "Mish", "PRelu", "Clip"});
    });
    if (!has_activation) continue;
    cls[m] = NodeClass::ffn;
    for (int32_t p : r.projections) cls[p] = NodeClass::ffn;
  }
}

// ---- decomposed LayerNorm ----------------------------------------------------------------------

// The node producing input `k` of `n` if it has op `op`.
const Node* input_from(const GraphView& gv, const Node& n, size_t k, const char* op, int32_t* id) {
  if (k >= n.inputs.size() || n.inputs[k] == kNoValue) return nullptr;
  const Node* p = gv.producer(n.inputs[k]);
  if (!p || p->op != op) return nullptr;
  *id = gv.producer_id(n.inputs[k]);
  return p;
}

// The single consumer of `n`'s output if it has op `op` and a constant other operand.
int32_t affine_consumer(const GraphView& gv, const Node& n, const char* op) {
  const auto& cs = gv.consumers(n.outputs[0]);
  if (cs.size() != 1) return -1;
  const Node& c = gv.graph().node(cs[0]);
  if (c.op != op || c.inputs.size() != 2) return -1;
  const ValueId other = c.inputs[0] == n.outputs[0] ? c.inputs[1] : c.inputs[0];
  return gv.is_constant(other) ? cs[0] : -1;
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), then * gamma + beta when present.
void mark_decomposed_layer_norm(const GraphView& gv, std::vector<NodeClass>& cls) {
  const Graph& g = gv.graph();
  for (int32_t d = 0; d < static_cast<int32_t>(g.nodes().size()); ++d) {
    const Node& div = g.node(d);
    if (div.op != "Div" || div.inputs.size() != 2) continue;
    int32_t sq, add, rm2, pw, sub, rm1;
    const Node* sqrt_n = input_from(gv, div, 1, "Sqrt", &sq);
    const Node* add_n = sqrt_n ? input_from(gv, *sqrt_n, 0, "Add", &add) : nullptr;
    if (!add_n) continue;
    const size_t var_side = gv.is_constant(add_n->inputs[0]) ? 1 : 0;
    const Node* rm2_n = input_from(gv, *add_n, var_side, "ReduceMean", &rm2);
    const Node* pow_n = rm2_n ? input_from(gv, *rm2_n, 0, "Pow", &pw) : nullptr;
    const Node* sub_n = pow_n ? input_from(gv, *pow_n, 0, "Sub", &sub) : nullptr;
    const Node* rm1_n = sub_n ? input_from(gv, *sub_n, 1, "ReduceMean", &rm1) : nullptr;
    if (!rm1_n || rm1_n->inputs[0] != sub_n->inputs[0] || div.inputs[0] != sub_n->outputs[0])
      continue;
    for (int32_t k : {rm1, sub, pw, rm2, add, sq, d}) cls[k] = NodeClass::norm;
    const int32_t scale = affine_consumer(gv, div, "Mul");
    if (scale < 0) continue;
    cls[scale] = NodeClass::norm;
    const int32_t shift = affine_consumer(gv, g.node(scale), "Add");
    if (shift >= 0) cls[shift] = NodeClass::norm;
  }
}

// ---- the op table and the rest -----------------------------------------------------------------

NodeClass class_from_table(const GraphView& gv, const Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  if (!def) return NodeClass::other;
  switch (def->op_class) {
    case ir::OpClass::conv:
      return NodeClass::conv;
    case ir::OpClass::attention:
      return NodeClass::attention;
    case ir::OpClass::normalization:
      return NodeClass::norm;
    case ir::OpClass::softmax:
      return NodeClass::softmax;
    case ir::OpClass::elementwise:
      return NodeClass::elementwise;
    case ir::OpClass::embedding:
      return !n.inputs.empty() && gv.is_constant(n.inputs[0]) ? NodeClass::embedding
                                                              : NodeClass::other;
    case ir::OpClass::matmul:
    case ir::OpClass::data_movement:
    case ir::OpClass::quantization:
      return NodeClass::other;
  }
  return NodeClass::other;
}

}  // namespace

std::vector<NodeClass> classify_nodes(const Graph& g) {
  const GraphView gv(g);
  std::vector<NodeClass> cls(g.nodes().size());
  for (size_t k = 0; k < cls.size(); ++k)
    cls[k] = class_from_table(gv, g.node(static_cast<int32_t>(k)));
  mark_decomposed_layer_norm(gv, cls);
  mark_ffn(gv, cls);
  mark_attention(gv, cls);
  const std::set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (size_t k = 0; k < cls.size(); ++k)
    for (ValueId v : g.node(static_cast<int32_t>(k)).outputs)
      if (outputs.count(v)) cls[k] = NodeClass::output;
  return cls;
}

}  // namespace hpf
