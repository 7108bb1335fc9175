// How an int8 MatMul/Gemm reads its float input: a calibrated per-tensor scale from its producer
// or per-row scales chosen at run time (precision.hpp).
#include "hpf/precision.hpp"

namespace hpf {

Int8Input int8_input(const Graph& g, const Plan& plan, const Node& n) {
  Int8Input r;
  const NodePlan* p = plan.find(n.name);
  if (!p || p->mode != Mode::int8 || (n.op != "MatMul" && n.op != "Gemm") || n.inputs.size() < 2) return r;
  // An int8 node with FP32 accumulation keeps its activations float (weights only).
  if (!p->weight_quant || p->weight_quant->type != DType::I8 || p->accumulation != DType::I32) return r;
  const Tensor* w = g.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::F32 || w->rank() != 2 || n.flag("transA")) return r;
  const ValueId a = n.inputs[0];
  if (a == kNoValue || !is_float(g.value(a).dtype)) return r;
  const int32_t producer = g.value(a).producer;
  if (producer >= 0) {
    const NodePlan* pp = plan.find(g.node(producer).name);
    if (pp && pp->mode == Mode::int8 && pp->activation_quant) {
      const QuantParams& q = *pp->activation_quant;
      if (q.type == DType::I8 && q.scales.size() == 1 && q.zero_points.empty() && q.scales[0] > 0) {
        r.static_scale = q.scales[0];
        return r;
      }
    }
  }
  // A GEMV (at most 4 rows, known from the graph) streams the weights either way: weight-only.
  const Value& av = g.value(a);
  if (av.has_shape && !av.shape.empty()) {
    int64_t rows = 1;
    bool known = true;
    for (size_t k = 0; k + 1 < av.shape.size(); ++k) {
      known = known && av.shape[k].known();
      if (known) rows *= av.shape[k].value;
    }
    if (known && rows <= 4) return r;
  }
  r.dynamic = true;
  r.rows = p->dynamic_rows;
  return r;
}

}  // namespace hpf
