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
// a graph output is `output`. See classify_nodes for the exact patterns.
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
// The names above ("int4_weights" is accepted too); an unknown name is invalid_argument naming it
// and listing the modes.
Expected<Mode> parse_mode(std::string_view name);

enum class NodeClass { attention, ffn, embedding, conv, norm, softmax, elementwise, output, other };
const char* node_class_name(NodeClass c);  // "attention", ...
Expected<NodeClass> parse_node_class(std::string_view name);

// The initializer input holding a node's weights (MatMul/Gemm B, Conv/ConvTranspose W, Gather's
// table) when it is a float constant, else kNoValue.
ValueId weight_input(const Graph& g, const Node& n);

// One class per node id of `g`. In order of precedence:
//   output      a node producing a graph output: it wins over every other class, so a policy
//               such as {"output": "fp32"} keeps what the caller reads in FP32;
//   attention   Q.K^T: a MatMul of two non-constant operands whose output reaches a Softmax over
//               the last axis through at most 4 Div/Mul/Add(mask)/Reshape/Transpose nodes; that
//               Softmax; and P.V: a MatMul reading the Softmax's output. All three, or none (a
//               classifier's MatMul -> Add -> Softmax is not attention). The Q/K/V and output
//               projections are ordinary MatMuls (`other`); the scale Mul is `elementwise`;
//   ffn         MatMul/Gemm with a weight operand -> activation -> MatMul/Gemm with a weight
//               operand: both projections. The activation is a region of at most 12 elementwise
//               nodes (bias Adds included) containing an activation function (Relu, Gelu, Erf,
//               Tanh, Sigmoid, ...), which covers exact and tanh-approximated GELU subgraphs and
//               x*sigmoid(x); the region's nodes stay `elementwise`;
//   norm        LayerNormalization/BatchNormalization/InstanceNormalization/LRN/MVN (the op
//               table's class), and the decomposed LayerNorm ReduceMean-Sub-Pow-ReduceMean-Add-
//               Sqrt-Div with a following Mul(constant)/Add(constant) pair;
//   embedding   a Gather whose data input is an initializer (other Gathers are `other`);
//   then the op table's class: conv -> conv, softmax -> softmax, elementwise -> elementwise,
//   matmul / data movement / quantization -> other.
std::vector<NodeClass> classify_nodes(const Graph& g);

// A policy as users write it: JSON object with class names, "default", and optional
//   "nodes": {"glob": "mode", ...}            per node name (fnmatch globs: * ? [..], `*` also
//                                             matches '/'), in order: the last match wins
//   "lower": ["MatMul", ...]                  op types always lowered (to "lower_to", else to the
//                                             class's mode, else the default, when those are
//                                             lower than fp32, else bf16)
//   "lower_to": "fp16"                        the mode "lower" lowers to
//   "follow": ["Reshape", ...]                op types that take their input's precision (the
//                                             mode of their first float input's producer; fp32
//                                             when that is a graph input or a weight)
//   "never": ["Softmax", ...]                 op types kept in FP32
// Which rule decides a node: a matching "nodes" glob, else the op-type lists, else its class's
// mode, else "default". Unknown keys, classes, modes and op types (not in the op table) are
// errors naming them, and so is an op type in two lists.
struct Policy {
  Mode default_mode = Mode::fp32;
  std::map<NodeClass, Mode> by_class;
  std::vector<std::pair<std::string, Mode>> by_node;  // glob -> mode, in order
  std::vector<std::string> always_lower, follow_inputs, never_lower;
  std::optional<Mode> lower_to;

  static Expected<Policy> from_json(std::string_view json);
  static Policy uniform(Mode m);  // "fp32", "bf16", ... as a --plan argument
  std::string to_json() const;
};

// Quantisation parameters of a tensor are hpf::QuantParams (dtype.hpp): type (I8, I4; F8E4M3
// for FP8's per-tensor scale), scales, zero_points (empty: symmetric), axis (per channel, else
// -1), group_size and group axis (INT4 groups, else 0). A plan made from a policy carries the
// granularity with empty scales; calibration (calibration.hpp) fills the scales.

// How an int8 MatMul/Gemm's rows are quantised at run time (NodePlan::dynamic_rows).
enum class RowQuant { s8, u7, s16 };

// The plan of one node.
struct NodePlan {
  std::string name;  // node name in the graph
  std::string op;
  NodeClass node_class = NodeClass::other;
  Mode mode = Mode::fp32;
  DType storage = DType::F32;       // format of the node's float outputs
  DType weights = DType::F32;       // format of its initializer inputs (I8 / I16 / I4 when quantised)
  DType accumulation = DType::F32;  // F32, I32 (int8), or F16 where a plan says so
  std::optional<QuantParams> weight_quant, activation_quant;
  // An int8 Conv's first input, quantised per tensor before the node reads it (its scale
  // calibrated on that input; the value itself, read by other nodes too, stays as it is).
  std::optional<QuantParams> input_quant;
  // An int8 MatMul/Gemm that quantises its float input per row at run time (Int8Input::dynamic):
  // s8, symmetric INT8 rows (hpf::fake_quantize_rows_i8), or u7, asymmetric 7-bit rows with a
  // zero point each (hpf::fake_quantize_rows_u7), which AVX2 without VNNI multiplies exactly
  // with 8-bit weights at the speed 7-bit weights get there (DeviceFormats::int8_weight_max),
  // or s16, symmetric 16-bit rows (hpf::fake_quantize_rows_s16: W8A16, the weights' error
  // alone, nearly; DeviceFormats::int8_s16_rows). In plan files "dynamic_rows": "u7" or "s16",
  // written only when it is not s8. Ignored on other nodes.
  RowQuant dynamic_rows = RowQuant::s8;
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

// How an int8 MatMul/Gemm that quantises activations (INT32 accumulation, as int8 plans have
// it; with FP32 accumulation the node is weight-only) reads its float input A (the session's
// kernels do this and the planner's emulation repeats it):
//   static:  the producer's plan stores A as INT8 with one symmetric scale: that scale;
//   dynamic: otherwise, when the node is int8 with INT8 (or I16) weights in a rank-2 float initializer
//            (MatMul, or Gemm without transA) and A has more than 4 rows or a symbolic row count
//            (a GEMV streams the weights either way and stays weight-only): per row of A, scale
//            max|row| / 127 chosen at run
//            time (hpf::fake_quantize_rows_i8), as ONNX Runtime's dynamic quantisation does, or
//            with dynamic_rows u7 a scale and zero point per row (hpf::fake_quantize_rows_u7),
//            with s16 a scale per row and 16-bit integers (hpf::fake_quantize_rows_s16);
//            I16 weights (W16A16: both operands int16_operand_qmax(K) levels each side) always
//            take s16 rows of that many levels, a static producer scale or not;
//   neither: A stays float and only the weights are INT8.
// Both make the product u8 x s8 -> s32 on the CPU.
struct Int8Input {
  float static_scale = 0;  // > 0: static
  bool dynamic = false;
  RowQuant rows = RowQuant::s8;  // dynamic: the node's dynamic_rows
};
Int8Input int8_input(const Graph& g, const Plan& plan, const Node& n);

// Whether value `v` is never negative by construction (NaN aside): the output of a Relu, of a
// Clip whose min is a constant >= 0, or of a MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity or Concat whose float
// inputs all are. An int8 Conv reading such a value quantises it to 0..127 (u7 as it is, no
// zero point), which AVX2's vpmaddubsw multiplies exactly with 8-bit weights.
bool never_negative(const Graph& g, ValueId v);

// What a device can compute in, for turning modes into formats (from the plugin's description
// and the hwdb): tf32/bf16/fp16 need TF32/BF16/F16 in `storage`, int8 needs int8_compute, fp8
// needs fp8_compute, int4-weights needs I4 in `storage`.
struct DeviceFormats {
  std::vector<DType> storage = {DType::F32};  // formats its kernels read and write
  bool int8_compute = false;
  bool fp8_compute = false;
  // The op classes ("matmul", "conv", ... as the op table names them) whose kernels compute in
  // INT8 where the device says so per class; empty: every class with int8_compute. The planner
  // offers int8 only to those: elsewhere an int8 node would compute in FP32 on dequantised
  // weights, slower than FP32 and no smaller in its activations.
  std::vector<std::string> int8_classes;
  // The largest |q| the planner gives an INT8 weight (int8_weight_params' qmax): 127, or 64 where
  // the device's INT8 dot product is exact and fastest with 7-bit weights (plugin format hint
  // "i8w7": AVX2 without VNNI, whose vpmaddubsw adds two u8 x s8 products in 16 bits, exact
  // while 2 * 255 * |q_w| <= 32767; wider weights take a path about 1.5x slower there). Such a
  // device is as fast with 8-bit weights and u7 rows (2 * 127 * 127 <= 32767), so calibrate_plan
  // narrows an int8 node that quantises its input per row at run time (Int8Input::dynamic) that
  // way, keeping 8-bit weights (on BERT-base's projections: divergence 1.0e-3 against 1.9e-3
  // with 7-bit weights), and only the others' weights to this range. Policy plans (--plan int8)
  // use it; plan_auto offers int8 with 8-bit weights and rows and narrowed ("int8-narrow") per
  // group (the narrower operands cost divergence).
  int int8_weight_max = 127;
  // Where int8 keeps its 8-bit operands (the planner's plain int8 candidate), a node that
  // quantises its rows at run time takes them in 16 bits (RowQuant::s16) instead of 8: AVX2
  // without VNNI multiplies s8 x s8 only through vpsignb (about 22 multiply-adds a cycle a Zen 3
  // core), s16 x s8 with vpmaddwd at about 25, and 16-bit rows leave the weights' error alone
  // (BERT-base: see calibrate_plan). Set with int8_weight_max from the "i8w7" hint. The planner
  // then also offers int16 (I16 weights with 16-bit rows, plan_auto).
  bool int8_s16_rows = false;
};

// A node that did not get the mode its policy asked for, and why.
struct Fallback {
  std::string node;
  Mode wanted = Mode::fp32;
  Mode used = Mode::fp32;
  std::string reason;  // e.g. "the device has no int8 compute", "Add has no i8 kernel"
};

// The plan a policy asks for on a device (no measurement: costs left at -1, bytes 0; `auto`
// nodes keep mode auto with FP32 formats, the planner replaces them).
// Modes to formats (storage / weights / accumulation):
//   fp32 f32/f32/f32; tf32 tf32/tf32/f32; bf16 bf16/bf16/f32; fp16 f16/f16/f32;
//   fp8 f8e4m3/f8e4m3/f32 (per-tensor scales); int8 i8/i8/i32, only on matmul- and conv-class
//   ops (weights per output channel, activations per tensor), except that a MatMul/Gemm with
//   weights whose output no MatMul, Gemm or Conv reads stores it f32 (no activation_quant: its
//   INT32 result is scaled straight to float); int4-weights f32/i4/f32, group 32,
//   only on MatMul/Gemm/Gather reading a weight initializer (elsewhere it means fp32, silently).
// A mode the device or the node's op lacks (the op table's formats) falls back along
//   int8 -> bf16 -> fp16 -> fp32,  fp8 -> fp16 -> bf16 -> fp32,  fp16 -> bf16 -> fp32,
//   bf16 -> fp32,  tf32 -> fp32,  int4-weights -> fp32
// with one warning per (wanted, used) pair naming the nodes; `fallbacks`, when given, receives
// every one. Nodes without float outputs (shape arithmetic, indices, masks) are fp32 / F32 and
// never fall back.
Expected<Plan> plan_from_policy(const Graph& g, const Policy& policy, const DeviceFormats& device,
                                std::vector<Fallback>* fallbacks = nullptr);

}  // namespace hpf
