// The precision planner: a cost model per node and mode, evaluators that measure a plan's
// divergence from FP32, and `plan_auto`, which picks a mode for every `auto` node under a
// divergence budget by progressive precision annealing.
//
//   Graph g = models::builtin("bert-tiny").value();
//   auto batches = random_calibration_inputs(g, 2, /*seed=*/7).value();  // or load_calibration_dir
//   RefEvaluator ev = RefEvaluator::create(g, batches).value();          // reference interpreter
//   PlannerOptions o;                                                     // kl_budget 1e-3, ...
//   o.device = {{DType::F32, DType::BF16, DType::F16, DType::I4}, true, true};
//   Plan plan = plan_auto(g, o, ev.evaluators(), &batches).value();
//
// Ownership: plain values; RefEvaluator shares its state between copies (and with the
// std::functions evaluators() returns), which keeps it alive as long as any of them.
// Thread-safety: a CostModel is not synchronised (set_measured writes); a RefEvaluator may be
// used from several threads (it only reads its state); plan_auto calls its evaluators from the
// calling thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpf/calibration.hpp"
#include "hpf/graph.hpp"
#include "hpf/hwdb.hpp"
#include "hpf/precision.hpp"
#include "hpf/session.hpp"
#include "hpf/reference.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

// ---------------------------------------------------------------------------------------------
// Roofline figures of a device.

// Defaults where the hwdb has no figure (stated in DeviceModel::notes when used):
inline constexpr double kDefaultPeakTflops = 0.1;     // FP32, 2 cores of AVX2 FMA at ~3 GHz
inline constexpr double kDefaultBandwidthGbs = 20.0;  // one DDR4 channel, as measured by STREAM

struct DeviceModel {
  std::string name;
  // Dense peaks in TFLOPS (TOPS for int8) by hwdb format name ("fp32", "bf16", "int8", ...),
  // for matrix units (MatMul, Gemm, Conv, ConvTranspose) and vector units (everything else).
  std::map<std::string, double> matrix_tflops, vector_tflops;
  double bandwidth_gbs = kDefaultBandwidthGbs;
  std::vector<std::string> notes;  // how the hwdb row was matched; which defaults were used, and why

  // The peak a node of mode `m` reaches: the format's peak on those units; a format without
  // one computes at the FP32 peak (converted on load: no faster than FP32); no FP32 peak:
  // kDefaultPeakTflops. int4-weights computes in FP32.
  double peak_tflops(Mode m, bool matrix) const;

  // From a hwdb product: a format's peak counts for matrix nodes, and for vector nodes too
  // when the hwdb says the vector units reach it (else vector nodes use the FP32 peak).
  static DeviceModel from_product(const hwdb::Product& p);
  // The host CPU as the hwdb matches it (Database::open(), match_cpu(detect_cpu())); when the
  // database cannot be opened, the defaults, with a note saying why.
  static DeviceModel host();
  // The hwdb product of an accelerator as its plugin describes it (Database::match_device:
  // "NVIDIA H200" is the row "NVIDIA H200 SXM 141GB"); when there is none, the defaults, with a
  // note saying why.
  static DeviceModel device(const hwdb::DeviceQuery& device);
};

// ---------------------------------------------------------------------------------------------
// Cost model.

struct NodeCost {
  double flops = 0;          // 2*M*N*K for matrix products, elements otherwise
  int64_t weight_bytes = 0;  // initializer inputs in the mode's formats (scales included)
  int64_t output_bytes = 0;  // outputs in the mode's storage format (scales included)
  int64_t input_bytes = 0;   // non-weight inputs read, in the mode's compute format
  double predicted_ms = 0;   // roofline
  double measured_ms = -1;   // set_measured's figure, -1 when none
  bool matrix = false;       // runs on matrix units
  int64_t bytes() const { return weight_bytes + output_bytes; }  // memory held
  double ms() const { return measured_ms >= 0 ? measured_ms : predicted_ms; }
};

// Per node and mode, from the graph's concrete shapes (symbolic dimensions count as 1):
//   FLOPs   MatMul 2*numel(Y)*K; Gemm 2*M*N*K (+ M*N with C); Conv 2*numel(Y)*C/g*prod(k);
//           ConvTranspose 2*numel(X)*M/g*prod(k); every other op the larger of its input and
//           output element counts;
//   bytes   weights (initializer inputs) and outputs exactly as stored: F32/TF32 4, BF16/F16 2,
//           FP8/I8 1 byte per element, I4 half a byte (rounded up); quantised tensors add 4
//           bytes per scale (per channel, per group, per tensor); inputs the op table keeps wide
//           (norm scales, BN statistics) and integer inputs stay in their own format;
//   latency max(flops / peak(mode, units), traffic / bandwidth) with traffic = weights + inputs
//           + outputs, the inputs counted in the node's own storage format (casts where
//           precisions meet are assumed fused into the producer's epilogue);
// and the measured time replaces the prediction once set_measured gave one.
class CostModel {
 public:
  CostModel(const Graph& g, DeviceModel device);

  // The cost of node `node` (an id of the graph) computing as `p` says (mode, formats, quant).
  NodeCost cost(int32_t node, const NodePlan& p) const;
  // Sum over the nodes of a plan (one NodePlan per node, in graph order).
  double plan_ms(const Plan& plan) const;
  int64_t plan_bytes(const Plan& plan) const;

  void set_measured(const std::string& node, Mode mode, double ms);
  std::optional<double> measured(const std::string& node, Mode mode) const;

  const DeviceModel& device() const { return device_; }
  const Graph& graph() const { return g_; }

 private:
  Graph g_;
  DeviceModel device_;
  std::map<std::pair<std::string, Mode>, double> measured_;
};

// ---------------------------------------------------------------------------------------------
// Evaluators: the planner never runs a model itself.

// A plan run on the calibration inputs: its divergence and, where the evaluator times it, its
// end-to-end milliseconds per run (-1: not measured).
struct Evaluation {
  double divergence = 0;
  double ms = -1;
  // Peak memory of the plan as compiled (weights and the activation arena's peak,
  // Executable::peak_memory_bytes); -1 when the evaluator does not compile plans.
  int64_t peak_bytes = -1;
};

struct Evaluators {
  // End-to-end divergence of the model outputs from FP32 on the calibration inputs (required).
  std::function<Expected<double>(const Plan&)> divergence;
  // Measured milliseconds per node name for a plan (optional).
  std::function<Expected<std::map<std::string, double>>(const Plan&)> measure_ms;
  // Divergence and measured end-to-end time in one go (optional; used instead of divergence
  // when set): the planner then refuses plans measured slower than FP32
  // (PlannerOptions::max_latency_ratio), which catches what per-node costs miss (fusion the
  // formats allow or break, conversions at format boundaries, kernels slower than the roofline).
  std::function<Expected<Evaluation>(const Plan&)> evaluate;
  // The FP32 values of graph values (by name) on each of `batches`, in batch order (optional;
  // without it the planner runs the reference interpreter for its calibration observers itself).
  // An evaluator that computes a ground truth on the same batches does both in one pass.
  std::function<Expected<std::vector<std::vector<Tensor>>>(const std::vector<std::vector<Tensor>>& batches,
                                                           const std::vector<std::string>& values)>
      reference_values;
};

// The reference interpreter's emulation of a plan. For every node whose mode is not fp32 (or
// auto): its float outputs are stored in `storage`, or fake-quantised with `activation_quant`
// when that has scales; its weight input (MatMul/Gemm B, Conv W, Gather's table) takes
// `weight_quant` when that has scales, else every float initializer input except the op
// table's wide inputs is rounded to `weights` (a float format); its accumulation is
// `accumulation`. FP32 nodes keep the ground truth (FP64 accumulation), so the all-FP32 plan
// diverges by exactly 0. An initializer shared by nodes of different plans takes the first
// lowering node's format, in graph order. Known optimism: the inputs of a lowered node are
// not rounded where its producer is FP32 (a device casts them; the emulation rounds values, not
// edges). Errors: a plan for another graph; an I8/I4/FP8 node without calibrated scales.
Expected<ref::Emulation> emulation_for_plan(const Graph& g, const Plan& plan);

// How an output is compared, per output (chosen from its FP32 values on the calibration
// inputs unless the metric is rel-l2):
//   kl_logits         KL(softmax(ref) || softmax(test)) over the last axis, mean over rows;
//   kl_probabilities  values in [0, 1] whose rows sum to 1 (within 1e-3): KL(ref || test) as-is
//                     (test clamped to >= 1e-12), mean over rows;
//   kl_bernoulli      values in [0, 1] otherwise (a sigmoid): per-element Bernoulli KL, mean
//                     over elements (test clamped to [1e-12, 1 - 1e-12]);
//   rel_l2            ||test - ref|| / ||ref||.
// NaN or Inf in the test output where the reference is finite is an infinite divergence.
enum class OutputMetric { kl_logits, kl_probabilities, kl_bernoulli, rel_l2 };
const char* output_metric_name(OutputMetric m);  // "kl-softmax", "kl-probabilities", ...
Expected<double> output_divergence(OutputMetric m, const Tensor& reference, const Tensor& test);
// The metric for an output from its reference values over the batches (as above).
OutputMetric detect_output_metric(const std::vector<const Tensor*>& refs);
// The metric of each output of `g` ("rel-l2" for all, or per output from its reference values
// over the batches when `metric` is "kl"); errors for another metric or a non-float output.
Expected<std::vector<OutputMetric>> output_metrics_for(const Graph& g,
                                                       const std::vector<std::vector<Tensor>>& reference,
                                                       const std::string& metric);

class RefEvaluator {
 public:
  // Runs the FP32 ground truth once per batch (inputs in graph order). `metric`: "kl" or
  // "rel-l2". Errors: no batches, a failing run, an unknown metric, a non-float output.
  static Expected<RefEvaluator> create(const Graph& g, std::vector<std::vector<Tensor>> batches,
                                       const std::string& metric = "kl");

  // The divergence of `plan`: per output the largest over batches of its metric, then the
  // largest over the outputs (every output on every batch must stay within the budget: a mean
  // let a BERT-base plan pass on two batches and leave the budget on a third input).
  Expected<double> divergence(const Plan& plan) const;
  // Per output, the metric used, and a line naming them ("logits: kl-softmax, ...").
  const std::vector<OutputMetric>& output_metrics() const;
  std::string describe() const;
  const std::string& metric() const;  // "kl" or "rel-l2"
  int evaluations() const;            // divergence() calls so far
  Evaluators evaluators() const;      // divergence only

 private:
  struct State;
  explicit RefEvaluator(std::shared_ptr<State> s) : s_(std::move(s)) {}
  std::shared_ptr<State> s_;
};

// Plans run on a device: each divergence() compiles the plan with a Session (kernels through the
// kernel cache, so a format's kernels compile once) and runs the batches; the FP32 ground truth
// comes from the reference interpreter once, on first use. measure_ms() gives per node the time of the step
// computing it (a fused step's time all its first node's: the MatMul/Conv holding an epilogue,
// a chain's first op; the others 0), median over `runs`.
class DeviceEvaluator {
 public:
  static Expected<DeviceEvaluator> create(SessionOptions options, const Graph& g,
                                          std::vector<std::vector<Tensor>> batches,
                                          const std::string& metric = "kl", int runs = 3);
  Expected<double> divergence(const Plan& plan) const;
  // The divergence, and the fastest of the batches' runs as the plan's end-to-end time (the
  // batches run again in turn, timed only, until the runs took 40 ms in all or 16 runs: a
  // burst of load on a shared machine covers a small model's few milliseconds of runs).
  Expected<Evaluation> evaluate(const Plan& plan) const;
  Expected<std::map<std::string, double>> measure_ms(const Plan& plan) const;
  // Evaluators::reference_values: on this evaluator's own batches, the first call also gives
  // the FP32 ground truth (one reference pass, not two); other batches run on their own.
  Expected<std::vector<std::vector<Tensor>>> reference_values(const std::vector<std::vector<Tensor>>& batches,
                                                              const std::vector<std::string>& values) const;
  std::string describe() const;  // the metric per output, as RefEvaluator::describe
  int evaluations() const;
  int timed_runs() const;        // plan runs evaluate() timed so far (divergence() runs each batch once)
  int reference_passes() const;  // reference runs over its batches so far (1 once it has its ground truth)
  Evaluators evaluators() const;  // divergence, evaluate, measure_ms and reference_values

 private:
  struct State;
  explicit DeviceEvaluator(std::shared_ptr<State> s) : s_(std::move(s)) {}
  std::shared_ptr<State> s_;
};

// ---------------------------------------------------------------------------------------------
// Calibration inputs.

// `count` batches of seeded random inputs of the graph's shapes (models::example_inputs with
// seeds seed, seed+1, ...; symbolic batch dimension `batch`).
Expected<std::vector<std::vector<Tensor>>> random_calibration_inputs(const Graph& g, int count,
                                                                     uint64_t seed = 7,
                                                                     int64_t batch = 1);
// .npy files named after the graph inputs: DIR/NAME.npy (one batch), or DIR/<sub>/NAME.npy for
// several batches (sub-directories in name order; each must hold every input). Characters of
// a name that cannot be in a file name ('/', ':') are read as '_'. Errors name the directory
// and the missing input, or the file that does not load or whose dtype differs from the input.
Expected<std::vector<std::vector<Tensor>>> load_calibration_dir(const Graph& g,
                                                                const std::string& dir);

// ---------------------------------------------------------------------------------------------
// The planner.

struct PlannerOptions {
  double kl_budget = 1e-3;    // divergence budget (in the evaluator's metric)
  // The search and the final check keep the divergence on the calibration inputs within
  // margin * kl_budget, so that the plan stays within kl_budget on inputs it was not planned on
  // (a BERT-base plan searched up to the full budget measured 1.36e-3 against 1e-3 on other
  // inputs). 1 plans right up to the budget.
  double margin = 0.5;
  std::string metric = "kl";  // the evaluator's metric, recorded in the plan ("kl", "rel-l2")
  // Objective, minimised among plans within the budget:
  //   alpha * latency / latency(FP32 plan) + beta * bytes / bytes(FP32 plan)
  //     + gamma * divergence / budget
  // so each term is normalised: alpha = 1 weighs a plan twice as fast as FP32 at 0.5, beta the
  // same for memory, gamma = 0.1 charges a plan using its whole budget one tenth of the FP32
  // latency. Only the ratios matter.
  // The latency term is the cost model's sum over the nodes (measured kernel times where
  // measure_ms gives them, else the roofline).
  double alpha = 1.0, beta = 0.5, gamma = 0.1;
  // With measured times, a plan measured slower than max_latency_ratio x the FP32 plan is never
  // chosen, whatever it saves in memory (auto is for speed first; raise it to trade time for
  // bytes). The 5% above 1 is timing noise on a shared machine, not a slowdown allowed.
  double max_latency_ratio = 1.05;
  // With measured times, a move whose plan measures slower than max_move_slowdown x the plan it
  // leaves is rejected too (rejected_slower), whatever the per-node costs promise: they miss what
  // a node's format does to its neighbours' kernels (an F16 LayerNorm keeps the BF16 MatMul it
  // feeds off the AMX tiles, which take BF16 only: BERT-base's FFN projection 1.3 -> 8 ms). The
  // 10% is timing noise on a shared machine.
  double max_move_slowdown = 1.1;
  // The same for a move the cost model does not expect to be faster by at least this margin
  // (for bytes or divergence alone, nearly): a node fused
  // into a MatMul's epilogue costs nothing in the model's measured times, but a BF16 GELU there
  // rounds six times (BERT-base's FFN GEMM with its GELU epilogue in BF16: 4.45 ms against 3.65
  // in FP32 with one Zen 3 thread). Such a move timed slower once is refused; else it is judged
  // on the medians of three timings each of it and of the plan it leaves, taken alternately
  // (PlannerReport::retimings).
  double max_memory_move_slowdown = 1.02;
  // With measured peaks (Evaluation::peak_bytes), rounds of the peak pass: the FP32 auto nodes
  // whose outputs are live at the plan's peak are lowered to 16 bits while that pays (see
  // plan_auto). 0 turns the pass off.
  int peak_rounds = 4;
  DeviceFormats device;  // candidate modes: bf16, fp16, tf32, fp8, int8, int4-weights
                         // as the device has them (plan_from_policy's availability)
  Policy policy = Policy::uniform(Mode::auto_);  // `auto` nodes are planned, others fixed
  std::optional<DeviceModel> device_model;       // roofline figures; DeviceModel::host() if unset
  uint64_t seed = 1;
  int max_evaluations = 200;             // divergence evaluations in all
  int max_sensitivity_evaluations = 64;  // of those, for the sensitivity pass
  int max_sweeps = 4;                    // annealing sweeps over the proposals
  double initial_temperature = 0.01;     // in objective units (fractions of the FP32 plan)
  double cooling = 0.5;                  // temperature factor per sweep
  CalibrationMethod int8_method = CalibrationMethod::entropy;
  // A static activation scale (INT8, FP8) is a range guessed from the calibration data: the
  // planner offers int8/fp8 to an auto node only when the calibration batches showed its output
  // at least this many rows (vectors along its last axis). BERT's pooler and classifier see one
  // row per input: calibrated on 8 inputs, a held-out input's logits went past the range and
  // clipped (KL 3.7e-3 against a budget of 1e-3).
  int64_t min_calibration_rows = 64;
  int int4_group = 32;  // INT4 weight group (the largest of 32/64/128... dividing K)
};

struct PlannerReport {
  std::string metric;   // the evaluator's metric ("kl" / "rel-l2")
  int evaluations = 0;  // divergence evaluations made (max_evaluations)
  int retimings = 0;    // and more to time a move for memory alone again (not counted above)
  int sensitivity_evaluations = 0;
  int groups = 0;     // lowering groups (nodes of one class in one block, or single nodes; splits included)
  int proposals = 0;  // (group, mode) pairs within budget alone
  int accepted = 0, rejected_budget = 0, rejected_metropolis = 0, rejected_slower = 0, backed_off = 0;
  double fp32_ms = 0, plan_ms = 0;  // cost model totals
  double fp32_measured_ms = -1, plan_measured_ms = -1;  // end to end, where measured
  int64_t fp32_peak_bytes = -1, plan_peak_bytes = -1;    // Evaluation::peak_bytes, where measured
  int restored = 0;                                      // 16-bit nodes step 3a moved back to FP32
  int peak_moves = 0;                                    // moves the peak pass kept
  int64_t fp32_bytes = 0, plan_bytes = 0;
  double objective = 0;
  std::map<std::string, int> modes;  // nodes per mode in the result ("int8-narrow": int8 with
                                     // the device's narrower operands: u7 rows or 7-bit weights,
                                     // DeviceFormats::int8_weight_max; "int16": int8 with 16-bit
                                     // weights and rows)
};

// Plans every node whose policy mode is `auto` (options.policy; other nodes keep what the
// policy gives them). `calibration` (inputs in graph order, one vector per batch) gives the
// INT8 activation scales (observe_values) and FP8 amax scales; without it the candidate modes
// int8 and fp8 are left out. Algorithm (progressive precision annealing):
//   1. start from FP32 for the auto nodes; measure per node and mode with measure_ms when given;
//   2. group the auto nodes: single nodes when (nodes x modes) fits
//      max_sensitivity_evaluations, else nodes of one class within one block (a block is the
//      name prefix up to the first '/'-separated component holding a digit, "layer3"), else
//      one class; measure each (group, mode) lowered alone: its sensitivity; a group over half
//      the search budget whose lowering would pay is split in two (its changed members, in
//      graph order) and the halves measured in turn, while max_sensitivity_evaluations last
//      (no two such groups fit together; their parts might). On a device that prefers narrower
//      INT8 operands (DeviceFormats::int8_weight_max < 127) int8 is offered twice to W8A8
//      nodes, with 8-bit weights and rows (16-bit rows where the node quantises its rows at run
//      time and the device says DeviceFormats::int8_s16_rows) and narrowed as calibrate_plan
//      narrows them (u7 rows where the node quantises its rows at run time, else 7-bit weights;
//      "int8-narrow" in PlannerReport::modes): faster there, less exact; where the device says
//      DeviceFormats::int8_s16_rows, int8 is also offered with 16-bit weights and rows to the
//      MatMul/Gemm nodes quantising their rows at run time ("int16": I16 weight_quant,
//      int16_operand_qmax(K) levels each side, RowQuant::s16): near FP16's divergence
//      (BERT-base's later attention projections: 3.1e-6 against 2.2e-4 with 8-bit weights) at
//      about 1.2-1.5x FP32's speed on Zen 3, where FP16 weights run at 0.93x;
//   3. order the proposals by gain (alpha dlatency + beta dmemory, normalised) per unit of
//      sensitivity; the walk starts from the best plan with one mode other than int8 (BF16,
//      FP16, INT4 weights, int16) over the whole graph that fits the budget and beats FP32, if any (a whole
//      graph in int8 within the budget leaves no room to narrow a group, and no single move out
//      of it pays); sweep over them: a proposal is evaluated end to end, rejected when the whole
//      plan leaves the budget, else accepted when it lowers the objective, or with probability
//      exp(-delta / T) when it raises it (Metropolis; moves back to higher precision are
//      proposals too, so the search can leave a local minimum); with Evaluators::evaluate, a
//      plan measured slower than max_latency_ratio x FP32, or than max_move_slowdown x the
//      plan the move leaves (max_memory_move_slowdown where the cost model expects the move to
//      be faster by less than that margin), is rejected too (a plan timed over either limit is
//      timed again alternately with the plan it leaves and judged, with the FP32 plan's, on
//      these fresh timings only); T falls
//      geometrically per sweep; sweeps end when one accepts nothing or the evaluations run out;
//      the best plan wins;
//   3a. with Evaluators::evaluate, the 16-bit auto nodes of the best plan that hold fewer bytes
//      of weights than they output (elementwise, norms, softmax, MatMuls of two activations) go
//      back to FP32 all at once (that plan over the search budget: class by class, the largest
//      first) where alpha * dms / ms(FP32) + beta * dbytes / bytes(FP32) < 0
//      (bytes: the measured peaks where the evaluator gives them) on the two plans timed
//      alternately (the fastest of each; found no faster, three rounds more;
//      PlannerReport::restored): a walk started from a whole graph in BF16 moves the
//      weighted nodes on to int8 and leaves these, each group of which gains less than the
//      timing noise alone (BERT-base, two threads: 174 BF16 nodes, 96.6 ms against 79);
//   3b. with measured peaks (Evaluation::peak_bytes), the peak pass: the objective's memory term
//      counts the bytes each node moves, not what is live at once, and a class lowered whole
//      can measure too slow where a few nodes would not (MobileNetV2's 112x112 activations set
//      its peak; all of its elementwise nodes in BF16 measured 18% slower on one core, those of
//      the first blocks a few %). Per round: the FP32 auto nodes producing the values live at
//      the plan's peak (a walk of the graph in order, each value in its plan's storage) move to
//      their 16-bit candidate (BF16, else FP16), kept when the plan stays within the budget,
//      its measured peak falls, and alpha * dms / ms(FP32) + beta * dpeak / peak(FP32) < 0 on
//      fresh times of the two and the FP32 plan taken alternately (peak_rounds rounds at most,
//      ending at the first refusal; a move found too slow is timed three rounds more, and
//      judged on the fastest of all, before it is refused);
//   4. final end-to-end check; if over the budget, the last accepted moves are undone until
//      it fits; with measured times, then also while the plan, timed alternately with the FP32
//      plan, is slower than max_latency_ratio x FP32 (found slower, both are timed three rounds
//      more and judged on the fastest of all before a move is undone).
// The plan records per node predicted_ms, measured_ms, bytes and sensitivity (of its group
// lowered alone to the node's final mode; for FP32 nodes, to their least aggressive
// candidate), and Plan::divergence. Errors: no divergence evaluator, an evaluator's error, a
// policy the graph does not satisfy.
Expected<Plan> plan_auto(const Graph& g, const PlannerOptions& options, const Evaluators& ev,
                         const std::vector<std::vector<Tensor>>* calibration = nullptr,
                         PlannerReport* report = nullptr);

// Fills the scales of a plan's quantised nodes: INT8 activations from observers of the node
// outputs (options.int8_method), quantised inputs (NodePlan::input_quant) from observers of
// the node's first input by the same rules, INT8 weights per output channel, INT4 weights
// group-wise along the reduction axis, FP8 per-tensor from amax (activations: observed amax;
// weights: their own). On a device asking for narrower INT8 operands (options.device.
// int8_weight_max < 127) a W8A8 node that quantises its rows at run time gets u7 rows
// (NodePlan::dynamic_rows) and 8-bit weights, one reading a static INT8 scale 7-bit weights;
// otherwise, with options.device.int8_s16_rows, one quantising its rows at run time gets
// 16-bit rows (RowQuant::s16) and 8-bit weights. An int8 node whose weight_quant is I16 gets
// 16-bit weights and rows, int16_operand_qmax(K) levels each side (W16A16).
// Nodes whose scales are already set are left alone. Errors: a quantised
// activation without an observer, a weight shape the axes do not fit.
Status calibrate_plan(const Graph& g, Plan& plan,
                      const std::map<std::string, Observer>& activation_observers,
                      const PlannerOptions& options = {});

// The values calibrate_plan needs observers of for `plan`: each node's first float output where
// its activation scales are unset, and its first input where its input_quant scales are (each
// value once, in node order).
std::vector<std::string> values_to_observe(const Graph& g, const Plan& plan);

}  // namespace hpf
