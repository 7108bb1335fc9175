// How an int8 MatMul/Gemm reads its float input: a calibrated per-tensor scale from its producer
// or per-row scales chosen at run time; and which values are never negative (precision.hpp).
#include <algorithm>
#include <iterator>
#include <variant>

#include "hpf/precision.hpp"

namespace hpf {

Int8Input int8_input(const Graph& g, const Plan& plan, const Node& n) {
  Int8Input r;
  const NodePlan* p = plan.find(n.name);
  if (!p || p->mode != Mode::int8 || (n.op != "MatMul" && n.op != "Gemm") || n.inputs.size() < 2) return r;
  // An int8 node with FP32 accumulation keeps its activations float (weights only).
  if (!p->weight_quant || (p->weight_quant->type != DType::I8 && p->weight_quant->type != DType::I16) ||
      p->accumulation != DType::I32)
    return r;
  // 16-bit weights meet 16-bit rows only (int16_operand_qmax levels each), whatever A's producer stores.
  const bool w16 = p->weight_quant->type == DType::I16;
  const Tensor* w = g.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::F32 || w->rank() != 2 || n.flag("transA")) return r;
  const ValueId a = n.inputs[0];
  if (a == kNoValue || !is_float(g.value(a).dtype)) return r;
  const int32_t producer = g.value(a).producer;
  if (producer >= 0 && !w16) {
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
  r.rows = w16 ? RowQuant::s16 : p->dynamic_rows;
  return r;
}

bool never_negative(const Graph& g, ValueId v) {
  for (int depth = 0; depth < 64 && v != kNoValue; ++depth) {  // a chain of pass-through ops
    const int32_t producer = g.value(v).producer;
    if (producer < 0) return false;
    const Node& n = g.node(producer);
    if (n.op == "Relu") return true;
    if (n.op == "Clip") {
      if (n.inputs.size() >= 2 && n.inputs[1] != kNoValue) {
        const Tensor* lo = g.constant(n.inputs[1]);
        if (!lo || lo->numel() != 1 || !is_float(lo->dtype())) return false;
        const float m = lo->to_f32()[0];
        return m >= 0;  // NaN: false
      }
      const auto it = n.attrs.find("min");  // opset < 11
      return it != n.attrs.end() && std::holds_alternative<float>(it->second) && std::get<float>(it->second) >= 0;
    }
    static const char* const kPassThrough[] = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Reshape",
                                               "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity"};
    if (n.op == "Concat") {
      for (ValueId in : n.inputs)
        if (in == kNoValue || !never_negative(g, in)) return false;
      return !n.inputs.empty();
    }
    if (std::find(std::begin(kPassThrough), std::end(kPassThrough), n.op) == std::end(kPassThrough) || n.inputs.empty())
      return false;
    v = n.inputs[0];
  }
  return false;
}

}  // namespace hpf
