// Precision plans: which numeric format every node of a graph computes and stores in, how users
// ask for one (a Policy), and the plan as data (versioned JSON).
//
//   Policy p = Policy::from_json(R"({"attention": "fp16", "ffn": "bf16", "embedding": "fp32"})").value();
//   Plan plan = plan_from_policy(graph, p, caps).value();   // or the planner's `auto` (planner.hpp)
//   plan.save("plan.json");
//
// Classes: every node gets one op class (NodeClass below) from the op table and from graph
// patterns: the MatMuls and Softmax of an attention block are `attention`, the two projections
// around an activation are `ffn`, a Gather from a weight table is `embedding`, the node producing
// a graph output is `output`.
//
// Ownership: plain values. Thread-safety: no shared state; functions only read their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hpf/dtype.hpp"
#include "hpf/graph.hpp"
#include "hpf/status.hpp"

namespace hpf {

// What a policy may ask for, per class or node.
enum class Mode {
  fp32,
  tf32,
  bf16,
  fp16,
  fp8,           // E4M3 activations and weights with per-tensor scales from amax (E5M2 for gradients: n/a)
  int8,          // weights (per-channel scales) and activations (calibrated scales), INT32 accumulation
  int4_weights,  // weight-only, group-wise scales; activations and compute stay FP32 (or the class's float mode)
  auto_,         // the planner decides
};
const char* mode_name(Mode m);  // "fp32", ..., "int4-weights", "auto"
Expected<Mode> parse_mode(std::string_view name);

enum class NodeClass { attention, ffn, embedding, conv, norm, softmax, elementwise, output, other };
const char* node_class_name(NodeClass c);  // "attention", ...
Expected<NodeClass> parse_node_class(std::string_view name);

// One class per node id of `g` (graph patterns first, then the op table's class).
std::vector<NodeClass> classify_nodes(const Graph& g);

// A policy as users write it: JSON object with class names, "default", and optional
//   "nodes": {"glob": "mode", ...}            per node name (shell globs: * ? [..]), later wins
//   "lower": ["MatMul", ...]                  op types always lowered to the class's mode
//   "follow": ["Reshape", ...]                op types that take their input's precision
//   "never": ["Softmax", ...]                 op types kept in FP32
// Unknown keys, classes and modes are errors naming them.
struct Policy {
  Mode default_mode = Mode::fp32;
  std::map<NodeClass, Mode> by_class;
  std::vector<std::pair<std::string, Mode>> by_node;  // glob -> mode, in order
  std::vector<std::string> always_lower, follow_inputs, never_lower;

  static Expected<Policy> from_json(std::string_view json);
  static Policy uniform(Mode m);  // "fp32", "bf16", ... as a --plan argument
  std::string to_json() const;
};

// Quantisation parameters of one tensor: hpf::QuantParams of dtype.hpp (type, scales, zero
// points, per-channel axis, group size and group axis), chosen by calibration.hpp.

// The plan of one node.
struct NodePlan {
  std::string name;  // node name in the graph
  std::string op;
  NodeClass node_class = NodeClass::other;
  Mode mode = Mode::fp32;
  DType storage = DType::F32;       // format of the node's float outputs
  DType weights = DType::F32;       // format of its initializer inputs (I8 / I4 when quantised)
  DType accumulation = DType::F32;  // F32, I32 (int8), or F16 where a plan says so
  std::optional<QuantParams> weight_quant, activation_quant;
  // Costs: predicted (roofline) and measured (profiled kernel; -1 when not measured) times,
  // bytes of weights and activations in this format, and the divergence of the model outputs
  // when only this node is lowered (-1 when not measured).
  double predicted_ms = -1, measured_ms = -1;
  int64_t bytes = 0;
  double sensitivity = -1;
};

struct Plan {
  static constexpr int kVersion = 1;
  std::string graph;             // graph name, checked when the plan is applied
  std::string metric = "kl";     // "kl" or "rel-l2"
  double budget = 1e-3;          // divergence budget the plan was made for
  double divergence = -1;        // measured end to end on the calibration inputs (-1: not measured)
  std::vector<NodePlan> nodes;   // one per node, in graph order

  const NodePlan* find(const std::string& node) const;
  std::string to_json() const;
  // Errors: not JSON, another kVersion, unknown fields' values (mode, dtype, class).
  static Expected<Plan> from_json(std::string_view json);
  Status save(const std::string& path) const;  // written to a temporary file and renamed
  static Expected<Plan> load(const std::string& path);
  // Every node of `g` must appear in the plan under its name with its op; errors name the first
  // that does not (a plan made for another graph).
  Status check_matches(const Graph& g) const;
};

// What a device can compute in, for turning modes into formats (from the plugin's description
// and the hwdb). A mode the device lacks falls back (int8 -> bf16/fp16 -> fp32, fp8 -> fp16,
// ...) with a warning naming the node and the fallback.
struct DeviceFormats {
  std::vector<DType> storage = {DType::F32};  // formats its kernels read and write
  bool int8_compute = false;
  bool fp8_compute = false;
};

// The plan a policy asks for on a device (no measurement: costs left at -1; `auto` nodes get
// FP32 here, the planner replaces them).
Expected<Plan> plan_from_policy(const Graph& g, const Policy& policy, const DeviceFormats& device);

}  // namespace hpf
