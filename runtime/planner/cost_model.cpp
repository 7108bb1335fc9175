// The cost model: FLOPs and bytes per node from concrete shapes, a roofline per mode, and
// measured times that replace the prediction.
#include <algorithm>
#include <variant>

#include "hpf/cpu_info.hpp"
#include "hpf/planner.hpp"
#include "runtime/planner/plan_util.hpp"

namespace hpf {
namespace {

using planner_detail::elements;

const char* hwdb_format(Mode m) {
  switch (m) {
    case Mode::tf32:
      return "tf32";
    case Mode::bf16:
      return "bf16";
    case Mode::fp16:
      return "fp16";
    case Mode::fp8:
      return "fp8";
    case Mode::int8:
      return "int8";
    default:
      return "fp32";  // int4-weights dequantises to FP32 and computes there
  }
}

int64_t dim(const Value& v, size_t k) {
  if (v.constant) return k < v.constant->shape().size() ? v.constant->shape()[k] : 1;
  return k < v.shape.size() && v.shape[k].known() ? v.shape[k].value : 1;
}
int64_t rank(const Value& v) {
  return v.constant ? v.constant->rank() : static_cast<int64_t>(v.shape.size());
}
bool flag(const Node& n, const char* attr) {
  const auto it = n.attrs.find(attr);
  return it != n.attrs.end() && std::holds_alternative<int64_t>(it->second) &&
         std::get<int64_t>(it->second) != 0;
}
// Product of the dimensions from `from` on.
int64_t tail(const Value& v, size_t from) {
  int64_t p = 1;
  for (int64_t k = static_cast<int64_t>(from); k < rank(v); ++k) p *= dim(v, k);
  return p;
}

double node_flops(const Graph& g, const Node& n) {
  auto in = [&](size_t k) -> const Value* {
    return k < n.inputs.size() && n.inputs[k] != kNoValue ? &g.value(n.inputs[k]) : nullptr;
  };
  const Value* y = n.outputs.empty() ? nullptr : &g.value(n.outputs[0]);
  if (n.op == "MatMul" && in(0) && in(1) && y) {
    const Value& a = *in(0);
    const int64_t k = dim(a, std::max<int64_t>(rank(a) - 1, 0));
    return 2.0 * double(elements(*y)) * double(k);
  }
  if (n.op == "Gemm" && in(0) && y) {
    const int64_t k = flag(n, "transA") ? dim(*in(0), 0) : dim(*in(0), 1);
    return 2.0 * double(elements(*y)) * double(k) + (in(2) ? double(elements(*y)) : 0.0);
  }
  if (n.op == "Conv" && in(1) && y)
    return 2.0 * double(elements(*y)) * double(tail(*in(1), 1)) +
           (in(2) ? double(elements(*y)) : 0.0);
  if (n.op == "ConvTranspose" && in(0) && in(1))
    return 2.0 * double(elements(*in(0))) * double(tail(*in(1), 1));
  int64_t most = 0, out = 0;
  for (ValueId v : n.inputs)
    if (v != kNoValue) most = std::max(most, elements(g.value(v)));
  for (ValueId v : n.outputs)
    if (v != kNoValue) out += elements(g.value(v));
  return double(std::max(most, out));
}

// Scales a quantised tensor of `n` elements carries (4 bytes each).
int64_t scale_count(const QuantParams& q, const Value& v, int64_t n) {
  if (!q.scales.empty()) return static_cast<int64_t>(q.scales.size());
  if (q.group_size > 0) return std::max<int64_t>(1, (n + q.group_size - 1) / q.group_size);
  if (q.axis >= 0) return dim(v, q.axis);
  return 1;
}
int64_t quant_bytes(const QuantParams& q, const Value& v) {
  const int64_t n = elements(v);
  return static_cast<int64_t>(storage_bytes(q.type, n)) + 4 * scale_count(q, v, n);
}
int64_t plain_bytes(DType t, const Value& v) {
  return static_cast<int64_t>(storage_bytes(t, elements(v)));
}

}  // namespace

double DeviceModel::peak_tflops(Mode m, bool matrix) const {
  const auto& units = matrix ? matrix_tflops : vector_tflops;
  for (const char* f : {hwdb_format(m), "fp32"}) {
    const auto it = units.find(f);
    if (it != units.end() && it->second > 0) return it->second;
  }
  const auto it = matrix_tflops.find("fp32");
  return it != matrix_tflops.end() && it->second > 0 ? it->second : kDefaultPeakTflops;
}

DeviceModel DeviceModel::from_product(const hwdb::Product& p) {
  DeviceModel d;
  d.name = p.name;
  for (const auto& [format, peak] : p.peak) {
    if (peak.dense <= 0) continue;
    d.matrix_tflops[format] = peak.dense;
    if (peak.op_class == "vector") d.vector_tflops[format] = peak.dense;
  }
  if (!d.matrix_tflops.count("fp32"))
    d.notes.push_back("no FP32 peak in the hwdb for " + p.name + ": " +
                      std::to_string(kDefaultPeakTflops) + " TFLOPS assumed");
  if (p.memory_bandwidth_gbs && *p.memory_bandwidth_gbs > 0) {
    d.bandwidth_gbs = *p.memory_bandwidth_gbs;
  } else {
    d.notes.push_back("no memory bandwidth in the hwdb for " + p.name + ": " +
                      std::to_string(kDefaultBandwidthGbs) + " GB/s assumed");
  }
  return d;
}

DeviceModel DeviceModel::host() {
  auto db = hwdb::Database::open();
  if (!db.ok()) {
    DeviceModel d;
    d.name = "host (defaults)";
    d.notes.push_back("hwdb not available (" + db.status().message() +
                      "): " + std::to_string(kDefaultPeakTflops) + " TFLOPS and " +
                      std::to_string(kDefaultBandwidthGbs) + " GB/s assumed");
    return d;
  }
  auto p = db->match_cpu(detect_cpu());
  if (!p.ok()) {
    DeviceModel d;
    d.name = "host (defaults)";
    d.notes.push_back("the hwdb has no match for this CPU (" + p.status().message() + ")");
    return d;
  }
  return from_product(*p);
}

DeviceModel DeviceModel::device(const hwdb::DeviceQuery& device) {
  auto db = hwdb::Database::open();
  auto p = db.ok() ? db->match_device(device) : Expected<hwdb::Product>(db.status());
  if (p.ok()) {
    DeviceModel d = from_product(*p);
    if (!p->note.empty()) d.notes.push_back(p->note);
    return d;
  }
  DeviceModel d;
  d.name = device.name + " (defaults)";
  d.notes.push_back("no hwdb figures for " + device.name + " (" + p.status().message() + "): " +
                    std::to_string(kDefaultPeakTflops) + " TFLOPS and " + std::to_string(kDefaultBandwidthGbs) +
                    " GB/s assumed");
  return d;
}

CostModel::CostModel(const Graph& g, DeviceModel device) : g_(g), device_(std::move(device)) {}

NodeCost CostModel::cost(int32_t node, const NodePlan& p) const {
  const Node& n = g_.node(node);
  NodeCost c;
  c.matrix = planner_detail::is_matrix(n);
  c.flops = node_flops(g_, n);
  const ValueId w = weight_input(g_, n);
  // The format a float non-weight input is read in: the node's storage format.
  const DType read = p.storage;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueId v = n.inputs[k];
    if (v == kNoValue) continue;
    const Value& val = g_.value(v);
    if (!is_float(val.dtype) || planner_detail::is_wide_input(n, k)) {
      (val.constant ? c.weight_bytes : c.input_bytes) += plain_bytes(val.dtype, val);
    } else if (val.constant) {
      if (v == w && p.weight_quant)
        c.weight_bytes += quant_bytes(*p.weight_quant, val);
      else
        c.weight_bytes += plain_bytes(is_float(p.weights) ? p.weights : DType::F32, val);
    } else {
      c.input_bytes += p.activation_quant ? quant_bytes(*p.activation_quant, val)
                                          : plain_bytes(is_float(read) ? read : DType::F32, val);
    }
  }
  for (ValueId v : n.outputs) {
    if (v == kNoValue) continue;
    const Value& val = g_.value(v);
    if (!is_float(val.dtype))
      c.output_bytes += plain_bytes(val.dtype, val);
    else if (p.activation_quant)
      c.output_bytes += quant_bytes(*p.activation_quant, val);
    else
      c.output_bytes += plain_bytes(p.storage, val);
  }
  const double traffic = double(c.weight_bytes + c.input_bytes + c.output_bytes);
  const double compute_s = c.flops / (device_.peak_tflops(p.mode, c.matrix) * 1e12);
  const double memory_s = traffic / (device_.bandwidth_gbs * 1e9);
  c.predicted_ms = std::max(compute_s, memory_s) * 1e3;
  if (auto m = measured(n.name, p.mode)) c.measured_ms = *m;
  return c;
}

double CostModel::plan_ms(const Plan& plan) const {
  double ms = 0;
  for (size_t k = 0; k < plan.nodes.size() && k < g_.nodes().size(); ++k)
    ms += cost(static_cast<int32_t>(k), plan.nodes[k]).ms();
  return ms;
}

int64_t CostModel::plan_bytes(const Plan& plan) const {
  int64_t b = 0;
  for (size_t k = 0; k < plan.nodes.size() && k < g_.nodes().size(); ++k)
    b += cost(static_cast<int32_t>(k), plan.nodes[k]).bytes();
  return b;
}

void CostModel::set_measured(const std::string& node, Mode mode, double ms) {
  measured_[{node, mode}] = ms;
}

std::optional<double> CostModel::measured(const std::string& node, Mode mode) const {
  const auto it = measured_.find({node, mode});
  if (it == measured_.end()) return std::nullopt;
  return it->second;
}

}  // namespace hpf
