// Scales for a plan's quantised nodes: INT8 activations from calibration observers, INT8 and
// I16 weights per output channel, INT4 weights group-wise, FP8 per tensor from amax.
#include <algorithm>
#include <cmath>
#include <set>
#include <variant>

#include "hpf/planner.hpp"
#include "runtime/planner/plan_util.hpp"

namespace hpf {
namespace {

bool trans_b(const Node& n) {
  const auto it = n.attrs.find("transB");
  return it != n.attrs.end() && std::holds_alternative<int64_t>(it->second) &&
         std::get<int64_t>(it->second) != 0;
}

float amax_of(const Tensor& t) {
  float a = 0;
  for (float v : t.to_f32()) a = std::max(a, std::fabs(v));
  return a;
}

// The INT4 group: the configured size halved until it divides the axis; the whole axis when
// that leaves fewer than 8 elements per group.
int int4_group(int64_t axis_size, int wanted) {
  int g = std::max(wanted, 1);
  while (g > 1 && axis_size % g != 0) g /= 2;
  return g < 8 ? static_cast<int>(axis_size) : g;
}

// `i8max`: the largest |q| of INT8 weights (int8_weight_params' qmax).
Expected<QuantParams> weight_params(const Node& n, const Tensor& w, const QuantParams& q, int i8max,
                                    const PlannerOptions& o) {
  const size_t input = n.op == "Gather" ? 0 : 1;
  if (q.type == DType::F8E4M3 || q.type == DType::F8E5M2) return fp8_params(amax_of(w), q.type);
  if (n.op == "Gather") {  // a table [rows, width]: per row for INT8, groups along the width
    const int last = static_cast<int>(w.rank()) - 1;
    if (q.type == DType::I8) return int8_weight_params(w, 0);
    return int4_weight_params(w, last, int4_group(w.shape()[last], o.int4_group));
  }
  HPF_ASSIGN_OR_RETURN(WeightAxes axes, weight_axes(n.op, input, w.rank(), trans_b(n)));
  if (q.type == DType::I8) return int8_weight_params(w, axes.output, i8max);
  if (q.type == DType::I16 && axes.reduction >= 0)
    return int16_weight_params(w, axes.output, int16_operand_qmax(w.shape()[axes.reduction]));
  if (q.type == DType::I4) {
    if (axes.reduction < 0)
      return Status::invalid("node '" + n.name + "': no reduction axis for INT4 groups");
    return int4_weight_params(w, axes.reduction,
                              int4_group(w.shape()[axes.reduction], o.int4_group));
  }
  return Status::invalid("node '" + n.name + "': weight format " + std::string(dtype_name(q.type)) +
                         " has no calibration");
}

// The parameters of type `t` (INT8 or FP8) for `value`, node p's output or input (`which`).
Expected<QuantParams> activation_params(const NodePlan& p, DType t, const std::string& value, const char* which,
                                        const std::map<std::string, Observer>& observers,
                                        const PlannerOptions& o) {
  const auto it = observers.find(value);
  if (it == observers.end())
    return Status::invalid("calibrate_plan: node '" + p.name + "' (" + mode_name(p.mode) +
                           ") needs an observer of its " + which + " '" + value + "'");
  if (t == DType::F8E4M3 || t == DType::F8E5M2) return fp8_params(it->second.amax(), t);
  CalibrationOptions co;
  co.method = o.int8_method;
  return int8_activation_params(it->second, co);
}

}  // namespace

Status calibrate_plan(const Graph& g, Plan& plan, const std::map<std::string, Observer>& observers,
                      const PlannerOptions& options) {
  HPF_RETURN_IF_ERROR(plan.check_matches(g));
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<int32_t>(id));
    NodePlan& p = plan.nodes[id];
    if (p.weight_quant && p.weight_quant->scales.empty()) {
      const ValueId w = weight_input(g, n);
      if (w == kNoValue)
        return Status::invalid("calibrate_plan: node '" + n.name +
                               "' has weight_quant but no weight");
      // The device's 7-bit preference (DeviceFormats::int8_weight_max) only where the weights
      // meet INT8 activations of a static scale in a dot product (an int8 Conv's input_quant, a
      // MatMul reading an INT8 value); a MatMul/Gemm quantising its rows at run time narrows
      // them (u7) instead and keeps 8-bit weights; weight-only INT8 (FP32 accumulation, or a
      // GEMV) is dequantised to FP32 and keeps every bit. A Conv whose input is never negative
      // (u7 already, exact with 8-bit weights) narrows its weights too: u7 with 7-bit weights
      // sums two k-groups in 16 bits (conv_i8's I8_PAIR, about 1.15x faster). The producer,
      // earlier in graph order, is calibrated already: int8_input sees its static scale.
      int qmax = 127;
      // I16 weights (W16A16) meet 16-bit rows (int8_input).
      p.dynamic_rows = p.weight_quant->type == DType::I16 ? RowQuant::s16 : RowQuant::s8;
      if (p.mode == Mode::int8 && p.accumulation == DType::I32 && p.weight_quant->type == DType::I8) {
        const bool matmul = n.op == "MatMul" || n.op == "Gemm";
        const Int8Input in = matmul ? int8_input(g, plan, n) : Int8Input{};
        if (options.device.int8_weight_max < 127) {
          if (in.dynamic)
            p.dynamic_rows = RowQuant::u7;
          else if (!matmul || in.static_scale > 0)
            qmax = options.device.int8_weight_max;
        } else if (options.device.int8_s16_rows && in.dynamic) {
          p.dynamic_rows = RowQuant::s16;
        }
      }
      HPF_ASSIGN_OR_RETURN(QuantParams q, weight_params(n, *g.constant(w), *p.weight_quant, qmax, options));
      p.weight_quant = std::move(q);
    }
    if (p.activation_quant && p.activation_quant->scales.empty()) {
      for (ValueId v : n.outputs) {
        if (v == kNoValue || !is_float(g.value(v).dtype)) continue;
        HPF_ASSIGN_OR_RETURN(QuantParams q,
                             activation_params(p, p.activation_quant->type, g.value(v).name, "output", observers, options));
        p.activation_quant = std::move(q);
        break;  // one set of parameters per node: its first float output
      }
    }
    if (p.input_quant && p.input_quant->scales.empty()) {
      const ValueId v = n.inputs.empty() ? kNoValue : n.inputs[0];
      if (v == kNoValue || !is_float(g.value(v).dtype))
        return Status::invalid("calibrate_plan: node '" + n.name + "' has input_quant but no float input");
      HPF_ASSIGN_OR_RETURN(QuantParams q,
                           activation_params(p, p.input_quant->type, g.value(v).name, "input", observers, options));
      p.input_quant = std::move(q);
    }
  }
  return Status();
}

std::vector<std::string> values_to_observe(const Graph& g, const Plan& plan) {
  std::vector<std::string> values;
  std::set<std::string> seen;
  auto add = [&](ValueId v) {
    if (seen.insert(g.value(v).name).second) values.push_back(g.value(v).name);
  };
  for (size_t id = 0; id < plan.nodes.size() && id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<int32_t>(id));
    const NodePlan& p = plan.nodes[id];
    if (p.input_quant && p.input_quant->scales.empty() && !n.inputs.empty() && n.inputs[0] != kNoValue &&
        is_float(g.value(n.inputs[0]).dtype))
      add(n.inputs[0]);
    if (!p.activation_quant || !p.activation_quant->scales.empty()) continue;
    for (ValueId v : n.outputs)
      if (v != kNoValue && is_float(g.value(v).dtype)) {
        add(v);
        break;
      }
  }
  return values;
}

}  // namespace hpf
