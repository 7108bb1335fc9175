// plan_from_policy: the plan a policy asks for on a device. Each node's mode comes from the
// policy's rules (node globs, op-type lists, class, default), then falls back along a fixed
// chain to what the device and the node's op support; the mode then fixes its formats.
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/ir/op_table.hpp"
#include "hpf/log.hpp"
#include "hpf/precision.hpp"

namespace hpf {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
bool contains(const std::vector<DType>& v, DType t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

bool lowered(Mode m) { return m != Mode::fp32 && m != Mode::auto_; }

bool has_float_output(const Graph& g, const Node& n) {
  return std::any_of(n.outputs.begin(), n.outputs.end(),
                     [&](ValueId v) { return v != kNoValue && is_float(g.value(v).dtype); });
}


// The axis of the output channels of a weight, for per-channel INT8 scales.
int output_channel_axis(const Graph& g, const Node& n, ValueId w) {
  if (n.op == "Conv") return 0;
  if (n.op == "ConvTranspose") return 1;
  if (n.op == "Gemm") {
    const auto it = n.attrs.find("transB");
    return it != n.attrs.end() && std::holds_alternative<int64_t>(it->second) &&
                   std::get<int64_t>(it->second)
               ? 0
               : 1;
  }
  return static_cast<int>(g.value(w).shape.size()) - 1;  // MatMul B [..., K, N]
}

// Why Conv `n` cannot compute in INT8 ("" when it can): the int8 kernel takes constant 1-D and
// 2-D weights and is not a depthwise one.
std::string int8_conv_unavailable(const Graph& g, const Node& n) {
  const ValueId w = weight_input(g, n);
  if (w == kNoValue) return "its weights are not a constant";
  const Shape& s = g.value(w).shape;
  if (s.size() != 3 && s.size() != 4) return "int8 Conv is 1-D or 2-D only";
  const auto it = n.attrs.find("group");
  const auto* group = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  if (group && *group > 1 && s[1].known() && s[1].value == 1) return "a depthwise Conv has no int8 kernel";
  return "";
}

// Modes tried, in order, when `m` is not available.
std::vector<Mode> fallback_chain(Mode m) {
  switch (m) {
    case Mode::int8:
      return {Mode::bf16, Mode::fp16, Mode::fp32};
    case Mode::fp8:
      return {Mode::fp16, Mode::bf16, Mode::fp32};
    case Mode::fp16:
      return {Mode::bf16, Mode::fp32};
    case Mode::bf16:
    case Mode::tf32:
    case Mode::int4_weights:
      return {Mode::fp32};
    case Mode::fp32:
    case Mode::auto_:
      return {};
  }
  return {};
}

DType float_format(Mode m) {
  switch (m) {
    case Mode::tf32:
      return DType::TF32;
    case Mode::bf16:
      return DType::BF16;
    case Mode::fp16:
      return DType::F16;
    case Mode::fp8:
      return DType::F8E4M3;
    case Mode::int8:
      return DType::I8;
    default:
      return DType::F32;
  }
}

class PolicyResolver {
 public:
  PolicyResolver(const Graph& g, const Policy& p, const DeviceFormats& d)
      : g_(g),
        policy_(p),
        device_(d),
        classes_(classify_nodes(g)),
        modes_(g.nodes().size(), Mode::fp32) {}

  Expected<Plan> run(std::vector<Fallback>* fallbacks) {
    HPF_ASSIGN_OR_RETURN(std::vector<int32_t> order, g_.topological_order());
    Plan plan;
    plan.graph = g_.name();
    plan.nodes.resize(g_.nodes().size());
    for (int32_t id : order) plan.nodes[id] = plan_node(id);
    warn_fallbacks();
    if (fallbacks) *fallbacks = fallbacks_;
    return plan;
  }

 private:
  NodePlan plan_node(int32_t id) {
    const Node& n = g_.node(id);
    NodePlan p;
    p.name = n.name;
    p.op = n.op;
    p.node_class = classes_[id];
    // Shape arithmetic, indices and masks stay as they are.
    if (!has_float_output(g_, n)) return p;
    p.mode = available(id, requested(id));
    set_formats(n, p);
    modes_[id] = p.mode;
    return p;
  }

  // The policy's rules, most specific first.
  Mode requested(int32_t id) const {
    const Node& n = g_.node(id);
    std::optional<Mode> by_glob;
    for (const auto& [glob, m] : policy_.by_node)
      if (::fnmatch(glob.c_str(), n.name.c_str(), 0) == 0) by_glob = m;
    if (by_glob) return *by_glob;
    if (contains(policy_.never_lower, n.op)) return Mode::fp32;
    if (contains(policy_.always_lower, n.op)) return lower_target(id);
    if (contains(policy_.follow_inputs, n.op)) return followed(n);
    return class_mode(id);
  }

  Mode class_mode(int32_t id) const {
    const auto it = policy_.by_class.find(classes_[id]);
    return it != policy_.by_class.end() ? it->second : policy_.default_mode;
  }

  Mode lower_target(int32_t id) const {
    if (policy_.lower_to) return *policy_.lower_to;
    if (lowered(class_mode(id))) return class_mode(id);
    if (lowered(policy_.default_mode)) return policy_.default_mode;
    return Mode::bf16;  // keeps FP32's range: the safe lowering when nothing says which
  }

  // The mode of the producer of the first float input; fp32 for graph inputs and weights.
  Mode followed(const Node& n) const {
    for (ValueId v : n.inputs) {
      if (v == kNoValue || !is_float(g_.value(v).dtype)) continue;
      const int32_t p = g_.value(v).producer;
      return p >= 0 ? modes_[p] : Mode::fp32;
    }
    return Mode::fp32;
  }

  // `wanted`, or the first mode of its fallback chain the node can have (recorded).
  Mode available(int32_t id, Mode wanted) {
    const std::string reason = unavailable(id, wanted);
    if (reason.empty()) return wanted;
    for (Mode m : fallback_chain(wanted)) {
      if (!unavailable(id, m).empty()) continue;
      fallbacks_.push_back({g_.node(id).name, wanted, m, reason});
      return m;
    }
    return Mode::fp32;  // not reached: fp32 is always available and ends every chain
  }

  // Why node `id` cannot have mode `m` ("" when it can).
  std::string unavailable(int32_t id, Mode m) const {
    const Node& n = g_.node(id);
    const ir::OpDef* def = ir::find_op(n.op);
    const DType f = float_format(m);
    auto op_lacks = [&](DType t) {
      return def && !contains(def->precisions, t)
                 ? n.op + " has no " + std::string(dtype_name(t)) + " kernel"
                 : "";
    };
    switch (m) {
      case Mode::fp32:
      case Mode::auto_:
        return "";
      case Mode::tf32:
      case Mode::bf16:
      case Mode::fp16:
        if (!contains(device_.storage, f))
          return "the device has no " + std::string(dtype_name(f)) + " storage";
        return op_lacks(f);
      case Mode::fp8:
        if (!device_.fp8_compute) return "the device has no fp8 compute";
        return op_lacks(f);
      case Mode::int8:
        if (!device_.int8_compute) return "the device has no int8 compute";
        if (def && def->op_class != ir::OpClass::matmul && def->op_class != ir::OpClass::conv)
          return "int8 applies to matmul and conv ops only";
        if (n.op == "ConvTranspose") return "ConvTranspose has no int8 kernel";
        if (n.op == "Conv")
          if (std::string why = int8_conv_unavailable(g_, n); !why.empty()) return why;
        return op_lacks(DType::I8);
      case Mode::int4_weights:
        // Weight-only: a node without a weight table has nothing to quantise and is plain fp32.
        if (n.op != "MatMul" && n.op != "Gemm" && n.op != "Gather") return "";
        if (weight_input(g_, n) == kNoValue) return "";
        if (!contains(device_.storage, DType::I4)) return "the device has no i4 storage";
        return op_lacks(DType::I4);
    }
    return "";
  }

  // Whether a MatMul, Gemm or Conv reads one of `n`'s outputs (and could take it as INT8).
  bool feeds_int8_reader(const Node& n) const {
    for (const Node& c : g_.nodes()) {
      if (c.op != "MatMul" && c.op != "Gemm" && c.op != "Conv") continue;
      for (ValueId v : c.inputs)
        if (v != kNoValue && std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end()) return true;
    }
    return false;
  }

  void set_formats(const Node& n, NodePlan& p) const {
    const ValueId w = weight_input(g_, n);
    switch (p.mode) {
      case Mode::fp32:
      case Mode::auto_:
        return;
      case Mode::tf32:
      case Mode::bf16:
      case Mode::fp16:
        p.storage = p.weights = float_format(p.mode);
        return;
      case Mode::fp8:
        p.storage = p.weights = DType::F8E4M3;
        p.activation_quant = QuantParams{DType::F8E4M3, {}, {}, -1, 0};
        if (w != kNoValue) p.weight_quant = QuantParams{DType::F8E4M3, {}, {}, -1, 0};
        return;
      case Mode::int8:
        p.storage = p.weights = DType::I8;
        p.accumulation = DType::I32;
        if (w != kNoValue)
          p.weight_quant = QuantParams{DType::I8, {}, {}, output_channel_axis(g_, n, w), 0};
        if (n.op == "Conv") p.input_quant = QuantParams{DType::I8, {}, {}, -1, 0};
        // A MatMul/Gemm with weights that no MatMul, Gemm or Conv reads keeps its output float:
        // the INT8 result would only be dequantised again, with a static scale's rounding and
        // clipping added (BERT-base, every projection int8 with 8-bit weights: KL 1.05e-3 with
        // INT8 outputs, 6.6e-4 with float ones, at the same speed).
        if (w != kNoValue && (n.op == "MatMul" || n.op == "Gemm") && !feeds_int8_reader(n)) {
          p.storage = DType::F32;
          return;
        }
        p.activation_quant = QuantParams{DType::I8, {}, {}, -1, 0};
        return;
      case Mode::int4_weights:
        if (w == kNoValue || (n.op != "MatMul" && n.op != "Gemm" && n.op != "Gather")) {
          p.mode = Mode::fp32;  // nothing to quantise
          return;
        }
        p.weights = DType::I4;
        p.weight_quant = QuantParams{DType::I4, {}, {}, -1, 32};
        return;
    }
  }

  // One warning per (wanted, used, reason), naming the first nodes.
  void warn_fallbacks() const {
    std::map<std::tuple<Mode, Mode, std::string>, std::vector<std::string>> groups;
    for (const Fallback& f : fallbacks_) groups[{f.wanted, f.used, f.reason}].push_back(f.node);
    for (const auto& [key, nodes] : groups) {
      const auto& [wanted, used, reason] = key;
      std::string names;
      for (size_t k = 0; k < nodes.size() && k < 5; ++k)
        names += (k ? ", '" : "'") + nodes[k] + "'";
      if (nodes.size() > 5) names += " and " + std::to_string(nodes.size() - 5) + " more";
      log(LogLevel::warn, "precision policy: " + std::to_string(nodes.size()) +
                              " node(s) asked for " + mode_name(wanted) + " but " + reason +
                              "; they use " + mode_name(used) + ": " + names);
    }
  }

  const Graph& g_;
  const Policy& policy_;
  const DeviceFormats& device_;
  std::vector<NodeClass> classes_;
  std::vector<Mode> modes_;  // resolved mode per node id, filled in topological order
  std::vector<Fallback> fallbacks_;
};

}  // namespace

ValueId weight_input(const Graph& g, const Node& n) {
  int k = -1;
  if (n.op == "MatMul" || n.op == "Gemm" || n.op == "Conv" || n.op == "ConvTranspose") k = 1;
  if (n.op == "Gather") k = 0;
  if (k < 0 || k >= static_cast<int>(n.inputs.size())) return kNoValue;
  const ValueId v = n.inputs[k];
  return v != kNoValue && g.constant(v) && is_float(g.value(v).dtype) ? v : kNoValue;
}

Expected<Plan> plan_from_policy(const Graph& g, const Policy& policy, const DeviceFormats& device,
                                std::vector<Fallback>* fallbacks) {
  return PolicyResolver(g, policy, device).run(fallbacks);
}

}  // namespace hpf
