// plan_auto: progressive precision annealing under a divergence budget.
//
// The state is one mode per node. Every candidate (node, mode) has its NodePlan precomputed
// (plan_from_policy's formats, calibrated scales), so a state becomes a Plan by lookup, and the
// cost model prices a state without running anything; only the divergence needs the evaluator,
// and each distinct state is evaluated at most once.
#include "hpf/planner.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "core/ir/op_table.hpp"
#include "hpf/log.hpp"
#include "runtime/planner/plan_util.hpp"

namespace hpf {
namespace {

using planner_detail::has_float_output;

// Candidate modes, least aggressive first.
constexpr Mode kCandidates[] = {Mode::tf32, Mode::bf16, Mode::fp16,
                                Mode::fp8,  Mode::int8, Mode::int4_weights};

bool device_has(const DeviceFormats& d, Mode m) {
  auto storage = [&](DType t) {
    return std::find(d.storage.begin(), d.storage.end(), t) != d.storage.end();
  };
  switch (m) {
    case Mode::tf32:
      return storage(DType::TF32);
    case Mode::bf16:
      return storage(DType::BF16);
    case Mode::fp16:
      return storage(DType::F16);
    case Mode::fp8:
      return d.fp8_compute;
    case Mode::int8:
      return d.int8_compute;
    case Mode::int4_weights:
      return storage(DType::I4);
    default:
      return true;
  }
}

// Whether op `op` has kernels for mode `m` (the op table's formats), so a uniform policy of `m`
// can put it into `never` instead of letting plan_from_policy warn about its fallback.
bool op_has(const std::string& op, Mode m) {
  const ir::OpDef* def = ir::find_op(op);
  if (!def) return false;
  auto has = [&](DType t) {
    return std::find(def->precisions.begin(), def->precisions.end(), t) != def->precisions.end();
  };
  switch (m) {
    case Mode::tf32:
      return has(DType::TF32);
    case Mode::bf16:
      return has(DType::BF16);
    case Mode::fp16:
      return has(DType::F16);
    case Mode::fp8:
      return has(DType::F8E4M3);
    case Mode::int8:
      return (def->op_class == ir::OpClass::matmul || def->op_class == ir::OpClass::conv) &&
             has(DType::I8);
    case Mode::int4_weights:
      return (op != "MatMul" && op != "Gemm" && op != "Gather") || has(DType::I4);
    default:
      return true;
  }
}

bool needs_calibration(Mode m) { return m == Mode::int8 || m == Mode::fp8; }

// What an auto node may become: a mode and, for int8 nodes whose weights meet INT8 activations
// (W8A8), whether an operand narrows as the device asks (DeviceFormats::int8_weight_max: on AVX2
// without VNNI u7 rows or 7-bit weights make vpmaddubsw exact without the sign trick, about
// 1.3x faster) or both keep 8 bits (more exact). Both are candidates; the search picks per group.
// Where the device takes 16-bit rows (DeviceFormats::int8_s16_rows), int8 with 16-bit weights
// too (W16A16, "int16": I16 weight_quant, int16_operand_qmax(K) levels each side) for the nodes
// quantising their rows at run time: about as exact as FP16 there, at the 16-bit kernel's speed.
struct Choice {
  Mode mode = Mode::fp32;
  bool narrow = false;
  bool wide = false;
  friend auto operator<=>(const Choice&, const Choice&) = default;
};
constexpr Choice kFp32{};
constexpr Choice kInt8Narrow{Mode::int8, true};
constexpr Choice kInt16{Mode::int8, false, true};

std::string choice_name(Choice c) {
  return c.wide ? "int16" : std::string(mode_name(c.mode)) + (c.narrow ? "-narrow" : "");
}

struct Group {
  std::string name;
  std::vector<int32_t> members;
};

struct Proposal {
  size_t group = 0;
  Choice choice;
  double sensitivity = 0;  // divergence with only this group lowered
  double score = 0;
};

using State = std::vector<Choice>;  // per node id

// The final latency check times the FP32 plan and the chosen one alternately this many times.
constexpr int kFinalTimingRounds = 2;
// A check that finds the plan slower times the plans alternately this many rounds more before it
// acts on that, judging on the fastest of all its rounds (PlannerReport::retimings): one timing
// moves by 10-30% on a shared machine, and a burst of load can cover the first rounds. MobileNetV2
// with two threads, its plan at 4.9-5.2 ms, timed 7.3-8.8 ms twice against FP32's 5.9-6.6: the
// final check backed off to FP32, or the peak pass lost its BF16 move (peak 0.37 -> 0.55 of FP32).
constexpr int kConfirmTimingRounds = 3;
// A move for memory alone: the current plan and the new one timed alternately this many more
// times (Planner::anneal).
constexpr int kMemoryMoveRetimings = 2;

class Planner {
 public:
  Planner(const Graph& g, const PlannerOptions& o, const Evaluators& ev,
          const std::vector<std::vector<Tensor>>* calib, PlannerReport& r)
      : g_(g),
        o_(o),
        ev_(ev),
        calib_(calib),
        report_(r),
        cost_(g, o.device_model ? *o.device_model : DeviceModel::host()),
        rng_(o.seed) {}

  // What plans must stay within on the calibration inputs (PlannerOptions::margin).
  double search_budget() const { return o_.kl_budget * o_.margin; }

  Expected<Plan> run() {
    if (!ev_.divergence) return Status::invalid("plan_auto: no divergence evaluator");
    if (!(o_.kl_budget > 0)) return Status::invalid("plan_auto: the budget must be > 0");
    if (!(o_.margin > 0 && o_.margin <= 1)) return Status::invalid("plan_auto: the margin must be in (0, 1]");
    HPF_RETURN_IF_ERROR(prepare_plans());
    start_.assign(g_.nodes().size(), kFp32);
    for (size_t id = 0; id < start_.size(); ++id)
      if (!is_auto(id)) start_[id] = {base_.nodes[id].mode};
    HPF_RETURN_IF_ERROR(measure_times());
    l0_ = std::max(plan_ms(start_), 1e-12);
    b0_ = std::max<double>(double(plan_bytes(start_)), 1.0);
    HPF_ASSIGN_OR_RETURN(Evaluation e0, evaluate(start_));
    const double d0 = e0.divergence;
    d0_ = d0;
    // The first runs in a process are often slow, so this errs towards letting plans through;
    // the final check times the chosen plan against FP32 on equal terms.
    ms0_ = e0.ms;
    if (d0 > search_budget())
      log(LogLevel::warn, "plan_auto: the policy's fixed nodes alone diverge by " +
                              std::to_string(d0) + ", over the search budget " +
                              std::to_string(search_budget()) + " (margin x budget); auto nodes stay fp32");
    make_groups();
    if (d0 <= search_budget()) {
      HPF_RETURN_IF_ERROR(measure_sensitivity());
      HPF_RETURN_IF_ERROR(anneal());
      HPF_RETURN_IF_ERROR(restore_activation_nodes());
      HPF_RETURN_IF_ERROR(reduce_peak());
    }
    return finish();
  }

 private:
  bool is_auto(size_t id) const { return base_.nodes[id].mode == Mode::auto_; }

  // Whether the device computes op `op` in INT8 (DeviceFormats::int8_classes).
  bool int8_class(const std::string& op) const {
    const std::vector<std::string>& c = o_.device.int8_classes;
    const ir::OpDef* def = ir::find_op(op);
    return c.empty() || (def && std::find(c.begin(), c.end(), ir::op_class_name(def->op_class)) != c.end());
  }

  // The policy's plan, and for every candidate mode the plan of every node in that mode.
  Status prepare_plans() {
    HPF_ASSIGN_OR_RETURN(base_, plan_from_policy(g_, o_.policy, o_.device));
    candidates_.assign(g_.nodes().size(), {});
    for (Mode m : kCandidates) {
      if (!device_has(o_.device, m)) continue;
      if (needs_calibration(m) && !calib_) continue;  // no data to calibrate scales on
      Policy p = Policy::uniform(m);
      std::set<std::string> never;
      for (const Node& n : g_.nodes())
        if (!op_has(n.op, m) || (m == Mode::int8 && !int8_class(n.op))) never.insert(n.op);
      p.never_lower.assign(never.begin(), never.end());
      HPF_ASSIGN_OR_RETURN(Plan pm, plan_from_policy(g_, p, o_.device));
      bool any = false;
      for (size_t id = 0; id < g_.nodes().size(); ++id) {
        if (!is_auto(id) || pm.nodes[id].mode != m || !has_float_output(g_, g_.node(id))) continue;
        candidates_[id].push_back({m});
        any = true;
      }
      if (any) mode_plans_[{m}] = std::move(pm);
    }
    // int8 with the device's narrower operands, for the W8A8 nodes (weight-only INT8 keeps 8
    // bits; after calibration a node the narrowing leaves as it is loses the candidate).
    if (const auto i8 = mode_plans_.find({Mode::int8}); i8 != mode_plans_.end() && o_.device.int8_weight_max < 127) {
      bool any = false;
      for (size_t id = 0; id < g_.nodes().size(); ++id) {
        const NodePlan& p = i8->second.nodes[id];
        if (!has_candidate(id, {Mode::int8}) || !p.weight_quant || p.accumulation != DType::I32) continue;
        candidates_[id].push_back(kInt8Narrow);
        any = true;
      }
      if (any) mode_plans_[kInt8Narrow] = i8->second;  // uncalibrated yet: calibrate() sets its scales
    }
    // int16 for the MatMul/Gemm nodes with INT8 weights and INT32 accumulation (uncalibrated too).
    if (const auto i8 = mode_plans_.find({Mode::int8}); i8 != mode_plans_.end() && o_.device.int8_s16_rows) {
      Plan wide = i8->second;
      bool any = false;
      for (size_t id = 0; id < g_.nodes().size(); ++id) {
        NodePlan& p = wide.nodes[id];
        if (!has_candidate(id, {Mode::int8}) || (p.op != "MatMul" && p.op != "Gemm") || !p.weight_quant ||
            p.weight_quant->type != DType::I8 || p.accumulation != DType::I32)
          continue;
        p.weight_quant->type = DType::I16;
        p.weights = DType::I16;
        // The output stays float: an INT8 output scale would undo the 16 bits (the next node
        // quantises its own rows).
        if (p.storage == DType::I8) p.storage = DType::F32;
        p.activation_quant.reset();
        candidates_[id].push_back(kInt16);
        any = true;
      }
      if (any) mode_plans_[kInt16] = std::move(wide);
    }
    HPF_RETURN_IF_ERROR(calibrate());
    if (const auto w = mode_plans_.find(kInt16); w != mode_plans_.end())
      for (size_t id = 0; id < g_.nodes().size(); ++id)  // only where the rows are quantised at run time (not a GEMV)
        if (has_candidate(id, kInt16) && !int8_input(g_, w->second, g_.node(static_cast<int32_t>(id))).dynamic)
          std::erase(candidates_[id], kInt16);
    if (const auto nw = mode_plans_.find(kInt8Narrow); nw != mode_plans_.end()) {
      const Plan& i8 = mode_plans_.at({Mode::int8});
      for (size_t id = 0; id < g_.nodes().size(); ++id) {  // narrowed as it was (weight-only INT8)
        const NodePlan &a = nw->second.nodes[id], &b = i8.nodes[id];
        if (a.dynamic_rows == b.dynamic_rows && a.weight_quant && b.weight_quant && a.weight_quant->scales == b.weight_quant->scales)
          std::erase(candidates_[id], kInt8Narrow);
      }
    }
    for (size_t id = 0; id < g_.nodes().size(); ++id) {  // static scales on too few rows
      auto& c = candidates_[id];
      const auto rows = calibration_rows_.find(static_cast<int32_t>(id));
      if (rows == calibration_rows_.end() || rows->second >= o_.min_calibration_rows) continue;
      const size_t before = c.size();
      c.erase(std::remove_if(c.begin(), c.end(), [](Choice k) { return needs_calibration(k.mode); }), c.end());
      if (c.size() != before)
        log(LogLevel::debug, "planner: node '" + g_.node(static_cast<int32_t>(id)).name + "': no int8/fp8 (" +
                                 std::to_string(rows->second) + " calibration rows)");
    }
    for (size_t id = 0; id < g_.nodes().size(); ++id) {
      NodePlan f = base_.nodes[id];
      if (is_auto(id)) f.mode = Mode::fp32;  // auto nodes keep F32 formats in the policy's plan
      fp32_nodes_.push_back(std::move(f));
    }
    return Status();
  }

  // Observers of every output a quantised plan stores with activation scales and of every
  // input it quantises (int8 Conv), then the scales.
  Status calibrate() {
    std::vector<std::string> values;
    std::set<std::string> seen;
    auto want = [&](const Plan& p) {
      for (std::string& v : values_to_observe(g_, p))
        if (seen.insert(v).second) values.push_back(std::move(v));
    };
    want(base_);
    for (const auto& [c, p] : mode_plans_) want(p);
    std::map<std::string, Observer> observers;
    if (!values.empty() && calib_ && ev_.reference_values) {
      // The evaluator's reference pass, which also makes its ground truth.
      HPF_ASSIGN_OR_RETURN(auto runs, ev_.reference_values(*calib_, values));
      for (size_t b = 0; b < runs.size(); ++b)
        for (size_t k = 0; k < values.size() && k < runs[b].size(); ++k) {
          Status s = observers[values[k]].observe(runs[b][k]);
          if (!s.ok())
            return Status::invalid("calibration batch " + std::to_string(b) + ", value '" + values[k] + "': " + s.message());
        }
    } else if (!values.empty() && calib_) {
      HPF_RETURN_IF_ERROR(observe_values(g_, *calib_, values, observers));
    }
    // INT8 operands keep all 8 bits except in the int8-narrow plan (Choice): on Zen 3, 7-bit weights
    // everywhere diverged by 1.04e-3 on ResNet-50's calibration inputs against 3e-4 with 8 bits.
    PlannerOptions full = o_;
    full.device.int8_weight_max = 127;
    HPF_RETURN_IF_ERROR(calibrate_plan(g_, base_, observers, full));
    for (auto& [c, p] : mode_plans_) HPF_RETURN_IF_ERROR(calibrate_plan(g_, p, observers, c.narrow ? o_ : full));
    for (const auto& [c, p] : mode_plans_)  // rows seen per node with a static activation scale
      for (size_t id = 0; id < p.nodes.size(); ++id) {
        if (!p.nodes[id].activation_quant) continue;
        for (ValueId v : g_.node(static_cast<int32_t>(id)).outputs) {
          const auto it = v == kNoValue ? observers.end() : observers.find(g_.value(v).name);
          if (it == observers.end()) continue;
          const Shape& shape = g_.value(v).shape;
          const int64_t width = !shape.empty() && shape.back().known() && shape.back().value > 0 ? shape.back().value : 1;
          calibration_rows_[static_cast<int32_t>(id)] = it->second.count() / width;
          break;
        }
      }
    return Status();
  }

  const NodePlan& node_plan(size_t id, Choice c) const {
    if (!is_auto(id)) return base_.nodes[id];
    if (c == kFp32) return fp32_nodes_[id];
    return mode_plans_.at(c).nodes[id];
  }

  // Every candidate in the order the search tries them, least aggressive first.
  static std::vector<Choice> all_choices() {
    std::vector<Choice> v;
    for (Mode m : kCandidates) {
      if (m == Mode::int8) v.push_back(kInt16);
      v.push_back({m});
      if (m == Mode::int8) v.push_back(kInt8Narrow);
    }
    return v;
  }

  bool has_candidate(size_t id, Choice c) const {
    return std::find(candidates_[id].begin(), candidates_[id].end(), c) != candidates_[id].end();
  }
  // What node `id` becomes when its group moves to `c`: c, or for int8-narrow plain int8 (a
  // node whose weights stay 8-bit or that has none), or nothing.
  std::optional<Choice> take(size_t id, Choice c) const {
    if (c == kFp32 || has_candidate(id, c)) return c;
    if (c == kInt8Narrow && has_candidate(id, {Mode::int8})) return Choice{Mode::int8};
    return std::nullopt;
  }

  // The cost model's figures for node `id` as `c`, with the time measured for it (measure_times).
  NodeCost cost_of(size_t id, Choice c) const {
    NodeCost nc = cost_.cost(static_cast<int32_t>(id), node_plan(id, c));
    const auto it = measured_.find({id, c});
    if (it != measured_.end()) nc.measured_ms = it->second;
    return nc;
  }
  double plan_ms(const State& s) const {
    double ms = 0;
    for (size_t id = 0; id < s.size(); ++id) ms += cost_of(id, s[id]).ms();
    return ms;
  }
  int64_t plan_bytes(const State& s) const {
    int64_t b = 0;
    for (size_t id = 0; id < s.size(); ++id) b += cost_of(id, s[id]).bytes();
    return b;
  }

  Plan to_plan(const State& s) const {
    Plan p;
    p.graph = g_.name();
    p.metric = o_.metric;
    p.budget = o_.kl_budget;
    p.nodes.reserve(s.size());
    for (size_t id = 0; id < s.size(); ++id) p.nodes.push_back(node_plan(id, s[id]));
    return p;
  }

  // Measured times, when an evaluator measures: the FP32 plan and one plan per candidate.
  // Per node and mode, the fastest of up to kTimeMeasurements measurements of the mode's
  // uniform plan, every mode's in turn each round: a shared machine runs slower for minutes at a
  // time, and one measurement per mode put such a phase on some modes and not others (BERT-base
  // with one Zen 3 thread: its cost model put FP32 at 479 ms where the plan ran in 248 and the
  // int8 projections at 3-5x their time, and never took the int16 plan it measured at 188 ms).
  // A round that measures what the one before did (an evaluator answering from its cache) ends
  // them.
  Status measure_times() {
    if (!ev_.measure_ms) return Status();
    std::vector<std::pair<Choice, State>> plans = {{kFp32, start_}};
    for (const auto& [c, p] : mode_plans_) {
      State s = start_;
      for (size_t id = 0; id < s.size(); ++id)
        if (is_auto(id) && has_candidate(id, c)) s[id] = c;
      plans.emplace_back(c, std::move(s));
    }
    std::vector<std::map<std::string, double>> last;
    for (int round = 0; round < planner_detail::kTimeMeasurements; ++round) {
      std::vector<std::map<std::string, double>> now;
      for (const auto& [c, s] : plans) {
        HPF_ASSIGN_OR_RETURN(auto times, ev_.measure_ms(to_plan(s)));
        for (size_t id = 0; id < s.size(); ++id) {
          const auto it = times.find(g_.node(id).name);
          if (it == times.end() || !(s[id] == c || c == kFp32)) continue;
          const auto [at, fresh] = measured_.try_emplace({id, s[id]}, it->second);
          if (!fresh) at->second = std::min(at->second, it->second);
        }
        now.push_back(std::move(times));
      }
      if (now == last) break;
      last = std::move(now);
    }
    return Status();
  }

  // A plan's divergence and (with Evaluators::evaluate) measured time, evaluated once per state
  // unless `fresh`; `counted` against max_evaluations, else a retiming.
  Expected<Evaluation> evaluate(const State& s, bool fresh = false, bool counted = true) {
    if (!fresh)
      if (const auto it = seen_.find(s); it != seen_.end()) return it->second;
    Evaluation e;
    if (ev_.evaluate) {
      HPF_ASSIGN_OR_RETURN(e, ev_.evaluate(to_plan(s)));
    } else {
      HPF_ASSIGN_OR_RETURN(e.divergence, ev_.divergence(to_plan(s)));
    }
    ++(counted ? report_.evaluations : report_.retimings);
    if (std::isnan(e.divergence)) e.divergence = std::numeric_limits<double>::infinity();
    if (log_level() <= LogLevel::debug) {
      std::map<std::string, int> modes;
      for (Choice c : s) ++modes[choice_name(c)];
      std::string text;
      for (const auto& [m, n] : modes) text += " " + m + "=" + std::to_string(n);
      log(LogLevel::debug, "plan_auto: " + std::string(counted ? "evaluation " : "retiming after evaluation ") +
                               std::to_string(report_.evaluations) + ": divergence " +
                               std::to_string(e.divergence) + ", " + std::to_string(e.ms) + " ms;" + text);
    }
    seen_[s] = e;
    return e;
  }
  // Times `plans` alternately `rounds` times, fresh (as retimings where not `counted`), keeping
  // the fastest timing of each in `fastest` (resized to plans.size(); infinity: none measured).
  Status time_alternately(const std::vector<const State*>& plans, int rounds, bool counted, std::vector<double>& fastest) {
    fastest.resize(plans.size(), std::numeric_limits<double>::infinity());
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < plans.size(); ++i) {
        HPF_ASSIGN_OR_RETURN(const Evaluation e, evaluate(*plans[i], true, counted));
        if (e.ms > 0) fastest[i] = std::min(fastest[i], e.ms);
      }
    return Status();
  }
  // Measured slower than max_latency_ratio x the FP32 plan (only when both are measured).
  bool too_slow(const Evaluation& e) const {
    return ms0_ > 0 && e.ms > 0 && e.ms > o_.max_latency_ratio * ms0_;
  }

  // alpha * latency + beta * bytes (normalised by the FP32 plan) of node `id` as `k`.
  double node_cost(size_t id, Choice k) const {
    const NodeCost c = cost_of(id, k);
    return o_.alpha * c.ms() / l0_ + o_.beta * double(c.bytes()) / b0_;
  }
  // The objective: the cost model's latency and bytes, and the divergence. Measured end-to-end
  // times only veto (too_slow): one group's share of them is often within the timing noise, and
  // a noisy objective keeps the sweeps accepting moves.
  double objective(const State& s, double d) const {
    double j = 0;
    for (size_t id = 0; id < s.size(); ++id) j += node_cost(id, s[id]);
    return j + o_.gamma * d / o_.kl_budget;
  }

  // Groups of auto nodes with candidates: single nodes when their (node, mode) pairs fit the
  // sensitivity budget, else one class within one block, else one class.
  void make_groups() {
    std::vector<int32_t> nodes;
    size_t pairs = 0;
    for (size_t id = 0; id < g_.nodes().size(); ++id)
      if (!candidates_[id].empty()) {
        nodes.push_back(static_cast<int32_t>(id));
        pairs += candidates_[id].size();
      }
    const std::vector<NodeClass> classes = classify_nodes(g_);
    auto grouped = [&](bool by_block) {
      std::map<std::string, Group> m;
      for (int32_t id : nodes) {
        std::string key = node_class_name(classes[id]);
        if (by_block) key = planner_detail::block_of(g_.node(id).name) + ":" + key;
        m[key].name = key;
        m[key].members.push_back(id);
      }
      std::vector<Group> v;
      for (auto& [k, gr] : m) v.push_back(std::move(gr));
      return v;
    };
    auto pair_count = [&](const std::vector<Group>& gs) {
      size_t n = 0;
      for (const Group& gr : gs) {
        std::set<Choice> modes;
        for (int32_t id : gr.members) modes.insert(candidates_[id].begin(), candidates_[id].end());
        n += modes.size();
      }
      return n;
    };
    const size_t limit = static_cast<size_t>(std::max(o_.max_sensitivity_evaluations, 1));
    if (pairs <= limit) {
      for (int32_t id : nodes) groups_.push_back({g_.node(id).name, {id}});
    } else {
      groups_ = grouped(true);
      if (pair_count(groups_) > limit) groups_ = grouped(false);
    }
    report_.groups = static_cast<int>(groups_.size());
  }

  // `s` with the members of group `gi` moved to `c` where they can take it (take()).
  State with(const State& s, size_t gi, Choice c) const {
    State t = s;
    for (int32_t id : groups_[gi].members)
      if (const auto k = take(static_cast<size_t>(id), c)) t[static_cast<size_t>(id)] = *k;
    return t;
  }

  // The index of the group of exactly `members`, added if new.
  size_t group_of(std::vector<int32_t> members, std::string name) {
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (groups_[gi].members == members) return gi;
    groups_.push_back({std::move(name), std::move(members)});
    return groups_.size() - 1;
  }

  // Each (group, candidate) lowered alone. A group over half the budget whose lowering would pay
  // is split in two (its members that change, in graph order) and the halves measured in turn,
  // while the sensitivity evaluations last: the search then has the parts that fit (BERT-base's
  // 24 FFN projections in INT8 diverged 6.8e-4 on its calibration inputs, over a search budget of
  // 5e-4, and a whole class was the finest group its 500 nodes allowed).
  Status measure_sensitivity() {
    const double j0 = objective(start_, 0);
    std::deque<std::pair<size_t, Choice>> todo;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (Choice c : all_choices())
        for (int32_t id : groups_[gi].members)
          if (has_candidate(static_cast<size_t>(id), c)) {
            todo.push_back({gi, c});
            break;
          }
    while (!todo.empty() && report_.sensitivity_evaluations < o_.max_sensitivity_evaluations) {
      const auto [gi, c] = todo.front();
      todo.pop_front();
      const State s = with(start_, gi, c);
      HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(s));
      const double d = e.divergence;
      ++report_.sensitivity_evaluations;
      sensitivity_[{gi, c}] = d;
      const double gain = j0 - objective(s, 0);
      if (gain <= 0) continue;
      // Over half the budget: no two such groups fit together, so the halves are measured too
      // (while a node's average share could fit the budget).
      std::vector<int32_t> moved;
      for (int32_t id : groups_[gi].members)
        if (s[static_cast<size_t>(id)] != start_[static_cast<size_t>(id)]) moved.push_back(id);
      if (d > 0.5 * search_budget() && moved.size() >= 2 && d <= search_budget() * double(moved.size())) {
        const auto half = moved.begin() + static_cast<std::ptrdiff_t>(moved.size() / 2);
        const std::string name = groups_[gi].name;
        todo.push_back({group_of({moved.begin(), half}, name + "/1"), c});
        todo.push_back({group_of({half, moved.end()}, name + "/2"), c});
      }
      if (!(d <= search_budget())) continue;
      // Gain per unit of sensitivity; a floor keeps harmless lowerings ordered by gain.
      const double sens = std::max(d - d0_, 0.0) + 1e-6 * search_budget();
      proposals_.push_back({gi, c, d, gain / sens});
    }
    report_.groups = static_cast<int>(groups_.size());
    std::stable_sort(proposals_.begin(), proposals_.end(),
                     [](const Proposal& a, const Proposal& b) { return a.score > b.score; });
    report_.proposals = static_cast<int>(proposals_.size());
    // Moves back to FP32 close the list: the way out of a local minimum.
    std::set<size_t> lowered;
    for (const Proposal& p : proposals_) lowered.insert(p.group);
    for (size_t gi : lowered) moves_.push_back({gi, kFp32, 0, 0});
    moves_.insert(moves_.begin(), proposals_.begin(), proposals_.end());
    return Status();
  }

  double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

  Status anneal() {
    State cur = start_;
    double d_cur = d0_, j_cur = objective(cur, d_cur), ms_cur = ms0_;
    // Measured slower than the FP32 plan (max_latency_ratio) or than the plan it would replace
    // (max_move_slowdown). One timing moves by 10-30% on a shared machine (MobileNetV2's BF16
    // moves with two threads were refused on single timings, and its auto plan kept FP32 memory):
    // a plan that looks slow is timed again after those two, and judged on the fastest of each.
    // A move the cost model does not expect to be faster by that much (for bytes or divergence
    // alone: a node fused into an epilogue costs nothing in its measured times) may not measure
    // slower than max_memory_move_slowdown.
    double allowed = o_.max_move_slowdown;
    auto slower_now = [&](const Evaluation& e) {
      return too_slow(e) || (ms_cur > 0 && e.ms > 0 && e.ms > allowed * ms_cur);
    };
    auto slower = [&](const State& s, Evaluation& e) -> Expected<bool> {
      // Expected faster by at least the strict allowance's margin (a group of elementwise nodes,
      // some fused and some not, can promise a fraction of a percent).
      const bool memory_move = !(plan_ms(s) < plan_ms(cur) * (2 - o_.max_memory_move_slowdown));
      allowed = memory_move ? o_.max_memory_move_slowdown : o_.max_move_slowdown;
      if (memory_move && ms_cur > 0 && e.ms > 0) {
        // Its allowance (2%) lies far inside one timing's noise (10-30% on a shared machine),
        // and a lucky first timing let slower plans through (BERT-base's BF16 elementwise nodes
        // and GELU epilogues with two threads: 113 ms where the walk reaches 78). Timed slower
        // once, it is refused (only bytes are lost); else it is judged on the medians of three
        // timings each, the two plans timed alternately (PlannerReport::retimings: these do not
        // count against max_evaluations, which bounds the search, not its checks).
        if (slower_now(e)) return true;
        std::vector<double> a{ms_cur}, b{e.ms};
        for (int k = 0; k < kMemoryMoveRetimings; ++k) {
          HPF_ASSIGN_OR_RETURN(const Evaluation c, evaluate(cur, true, false));
          HPF_ASSIGN_OR_RETURN(const Evaluation n, evaluate(s, true, false));
          if (c.ms > 0) a.push_back(c.ms);
          if (n.ms > 0) b.push_back(n.ms);
        }
        ms_cur = planner_detail::median(std::move(a));
        e.ms = planner_detail::median(std::move(b));
        return e.ms > allowed * ms_cur;
      }
      if (!slower_now(e)) return false;
      // Timed slow: judged again on fresh timings only, the plan it would replace before and
      // after this one's (each plan the fastest of its two), and the FP32 plan's. ms_cur and ms0_
      // may come from a faster phase of the machine (minutes at a time 20-100% slower): against
      // them every move timed in a slow phase looked slower, and the walk stopped.
      HPF_ASSIGN_OR_RETURN(const Evaluation c1, evaluate(cur, true));
      HPF_ASSIGN_OR_RETURN(const Evaluation n, evaluate(s, true));
      HPF_ASSIGN_OR_RETURN(const Evaluation c2, evaluate(cur, true));
      if (!(c1.ms > 0 && n.ms > 0 && c2.ms > 0)) return slower_now(e);
      ms_cur = std::min(c1.ms, c2.ms);
      e.ms = std::min(e.ms, n.ms);
      double fp32 = ms_cur;
      if (cur != start_) {
        HPF_ASSIGN_OR_RETURN(const Evaluation f, evaluate(start_, true));
        fp32 = f.ms;
      }
      if (fp32 > 0) ms0_ = std::min(ms0_, fp32);
      const bool slow = (fp32 > 0 && e.ms > o_.max_latency_ratio * fp32) || e.ms > allowed * ms_cur;
      if (slow)
        log(LogLevel::debug, "plan_auto: refused as slower: " + std::to_string(e.ms) + " ms against " +
                                 std::to_string(ms_cur) + " (the plan it leaves) and " + std::to_string(fp32) + " (FP32)");
      return slow;
    };
    history_ = {cur};
    best_ = cur;
    double j_best = j_cur;
    // Each mode over the whole graph first, the walk starting from the best within the budget:
    // lowering group by group pays for conversions between formats on the way, which can hide
    // the gain of the whole (ResNet-50 on AMX: half its convs in BF16 measured no faster than
    // FP32, all of them twice as fast). Not int8 (its rows and weights in the kernel's formats
    // already): a whole-graph int8 plan within the budget leaves no room to narrow a group, and
    // no single move out of it pays (BERT-base with 16-bit rows: all 74 MatMuls at 4.8e-4 of
    // 5e-4, 96 ms with two threads, where the walk from FP32 reaches 84 ms). int16 leaves room.
    for (Choice c : all_choices()) {
      if (c.mode == Mode::int8 && !c.wide) continue;
      State s = start_;
      for (size_t gi = 0; gi < groups_.size(); ++gi) s = with(s, gi, c);
      if (s == start_ || report_.evaluations >= o_.max_evaluations) continue;
      HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(s));
      if (!(e.divergence <= search_budget())) continue;
      const double j = objective(s, e.divergence);
      if (j >= j_cur) continue;  // before the timings: slower() may time the plans again
      HPF_ASSIGN_OR_RETURN(const bool slow, slower(s, e));
      if (slow) continue;
      cur = s;
      d_cur = e.divergence;
      j_cur = j;
      if (e.ms > 0) ms_cur = e.ms;
      history_.push_back(cur);
      if (j < j_best) {
        j_best = j;
        best_ = cur;
      }
    }
    double t = o_.initial_temperature;
    for (int sweep = 0; sweep < o_.max_sweeps; ++sweep) {
      int accepted = 0;
      for (const Proposal& mv : moves_) {
        if (report_.evaluations >= o_.max_evaluations) break;
        const State next = with(cur, mv.group, mv.choice);
        if (next == cur) continue;
        const double cost_delta = objective(next, 0) - objective(cur, 0);
        // A move that costs: its divergence can at best fall to 0, so this bounds its delta
        // from below, and Metropolis may refuse it without an evaluation.
        const double best_case = cost_delta - o_.gamma * d_cur / o_.kl_budget;
        if (best_case > 0 && !(t > 0 && uniform() < std::exp(-best_case / t))) {
          ++report_.rejected_metropolis;
          continue;
        }
        HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(next));
        const double d = e.divergence;
        if (!(d <= search_budget())) {
          ++report_.rejected_budget;
          continue;
        }
        const double j = objective(next, d), delta = j - j_cur;
        if (delta > 0 && !(t > 0 && uniform() < std::exp(-delta / t))) {
          ++report_.rejected_metropolis;
          continue;
        }
        HPF_ASSIGN_OR_RETURN(const bool slow, slower(next, e));  // after: it may time the plans again
        if (slow) {
          ++report_.rejected_slower;
          continue;
        }
        cur = next;
        d_cur = d;
        j_cur = j;
        if (e.ms > 0) ms_cur = e.ms;
        history_.push_back(cur);
        ++accepted;
        ++report_.accepted;
        if (j < j_best) {
          j_best = j;
          best_ = cur;
        }
      }
      t *= o_.cooling;
      if (accepted == 0 || report_.evaluations >= o_.max_evaluations) break;
    }
    return Status();
  }

  // The node's 16-bit candidate (BF16, else FP16; FP32 when it has neither).
  Choice sixteen_bit(size_t id) const {
    for (Mode m : {Mode::bf16, Mode::fp16})
      if (has_candidate(id, {m})) return {m};
    return kFp32;
  }

  // The FP32 auto nodes with a 16-bit candidate whose outputs are live at the peak of `s`: the
  // graph walked in order, each value (constants aside) held from its producer to its last
  // reader, in its producer's storage format (graph inputs and outputs in their own).
  std::vector<int32_t> live_at_peak(const State& s) const {
    auto order = g_.topological_order();
    if (!order.ok()) return {};
    const size_t steps = order->size(), nv = g_.values().size();
    std::vector<size_t> at(g_.nodes().size(), 0);
    for (size_t i = 0; i < steps; ++i) at[static_cast<size_t>((*order)[i])] = i;
    std::vector<size_t> first(nv, steps), last(nv, 0);
    std::vector<double> bytes(nv, 0);
    std::vector<bool> boundary(nv, false);
    for (ValueId v : g_.inputs()) boundary[v] = true, first[v] = 0;
    for (ValueId v : g_.outputs()) boundary[v] = true, last[v] = steps;
    for (size_t id = 0; id < g_.nodes().size(); ++id) {
      const Node& n = g_.node(static_cast<int32_t>(id));
      for (ValueId v : n.outputs)
        if (v != kNoValue) first[v] = at[id];
      for (ValueId v : n.inputs)
        if (v != kNoValue) last[v] = std::max(last[v], at[id]);
    }
    for (size_t v = 0; v < nv; ++v) {
      const Value& val = g_.value(static_cast<ValueId>(v));
      if (g_.constant(static_cast<ValueId>(v)) || first[v] >= steps) continue;
      const DType t = !boundary[v] && val.producer >= 0 && val.dtype == DType::F32
                          ? node_plan(static_cast<size_t>(val.producer), s[static_cast<size_t>(val.producer)]).storage
                          : val.dtype;
      bytes[v] = double(planner_detail::elements(val)) * bit_width(t) / 8;
    }
    std::vector<double> live(steps + 1, 0);
    for (size_t v = 0; v < nv; ++v)
      for (size_t t = first[v]; bytes[v] > 0 && t <= last[v] && t < steps; ++t) live[t] += bytes[v];
    const size_t peak = static_cast<size_t>(std::max_element(live.begin(), live.end()) - live.begin());
    std::set<int32_t> nodes;
    for (size_t v = 0; v < nv; ++v) {
      const int32_t p = g_.value(static_cast<ValueId>(v)).producer;
      if (bytes[v] > 0 && !boundary[v] && p >= 0 && first[v] <= peak && peak <= last[v] && is_auto(static_cast<size_t>(p)) &&
          s[static_cast<size_t>(p)] == kFp32 && sixteen_bit(static_cast<size_t>(p)) != kFp32)
        nodes.insert(p);
    }
    return {nodes.begin(), nodes.end()};
  }

  // plan_auto's step 3a, on the best plan of the annealing: its 16-bit auto nodes that hold fewer
  // bytes of weights than they output (elementwise, norms, softmax, MatMuls of two activations)
  // back to FP32, all at once, else (that plan over the search budget) class by class, the
  // largest first; each move kept where it measures faster than the memory it costs (alpha * dms
  // / ms(FP32) + beta * dbytes / bytes(FP32) < 0), the two plans timed alternately, on the
  // fastest of each (found no faster, three rounds more). A walk that starts from a whole graph
  // in BF16 (its weights' bytes halved at FP32's speed) moves the weighted nodes on to int8 and
  // leaves the others in 16 bits, where each group moved back alone gains less than the timing
  // noise: BERT-base with two threads, 174 BF16 nodes, 96.6 ms where the walk from FP32 reached
  // 79; all of them back at once measured 5.2e-4 of a 5e-4 search budget. The peak pass, after,
  // lowers again what its memory pays for.
  Status restore_activation_nodes() {
    if (!ev_.evaluate || !(ms0_ > 0)) return Status();
    State cur = best_.empty() ? start_ : best_;
    std::map<ir::OpClass, std::vector<size_t>> by_class;
    std::vector<size_t> all;
    for (size_t id = 0; id < cur.size(); ++id) {
      if (!is_auto(id) || (cur[id].mode != Mode::bf16 && cur[id].mode != Mode::fp16)) continue;
      const ir::OpDef* def = ir::find_op(g_.node(static_cast<int32_t>(id)).op);
      const NodeCost c = cost_of(id, cur[id]);
      if (!def || c.weight_bytes >= c.output_bytes) continue;
      by_class[def->op_class].push_back(id);
      all.push_back(id);
    }
    // `ids` back to FP32, kept where it pays; false where that plan leaves the search budget.
    auto restore = [&](const std::vector<size_t>& ids) -> Expected<bool> {
      State next = cur;
      for (size_t id : ids) next[id] = kFp32;
      HPF_ASSIGN_OR_RETURN(const Evaluation e, evaluate(next));
      if (!(e.divergence <= search_budget())) return false;
      // The memory: the measured peaks where the evaluator gives them (an activation arena holds
      // few of these outputs at once, but each counts in the cost model's bytes: BERT-base's 171
      // came to tens of MiB there), else the cost model's bytes.
      HPF_ASSIGN_OR_RETURN(const Evaluation e0, evaluate(start_));
      HPF_ASSIGN_OR_RETURN(const Evaluation ec, evaluate(cur));
      const double dbytes = e0.peak_bytes > 0 && ec.peak_bytes > 0 && e.peak_bytes > 0
                                ? double(e.peak_bytes - ec.peak_bytes) / double(e0.peak_bytes)
                                : double(plan_bytes(next) - plan_bytes(cur)) / b0_;
      std::vector<double> t;  // cur, next
      auto pays = [&] { return o_.alpha * (t[1] - t[0]) / ms0_ + o_.beta * dbytes < 0; };
      HPF_RETURN_IF_ERROR(time_alternately({&cur, &next}, kFinalTimingRounds, true, t));
      if (!pays()) HPF_RETURN_IF_ERROR(time_alternately({&cur, &next}, kConfirmTimingRounds, false, t));
      if (!pays()) return true;
      log(LogLevel::debug, "plan_auto: " + std::to_string(ids.size()) + " nodes back to FP32: " + std::to_string(t[0]) +
                               " -> " + std::to_string(t[1]) + " ms");
      report_.restored += static_cast<int>(ids.size());
      cur = next;
      best_ = next;
      history_.push_back(next);
      return true;
    };
    if (all.empty() || report_.evaluations >= o_.max_evaluations) return Status();
    HPF_ASSIGN_OR_RETURN(const bool within, restore(all));
    if (within || by_class.size() == 1) return Status();
    std::vector<std::vector<size_t>> classes;
    for (auto& [k, ids] : by_class) classes.push_back(std::move(ids));
    std::stable_sort(classes.begin(), classes.end(), [](const auto& x, const auto& y) { return x.size() > y.size(); });
    for (const auto& ids : classes) {
      if (report_.evaluations >= o_.max_evaluations) break;
      HPF_RETURN_IF_ERROR(restore(ids).status());
    }
    return Status();
  }

  // The peak pass (plan_auto's step 3b), from the best plan of the annealing.
  Status reduce_peak() {
    if (!ev_.evaluate || o_.peak_rounds <= 0 || !(ms0_ > 0)) return Status();
    State cur = best_.empty() ? start_ : best_;
    HPF_ASSIGN_OR_RETURN(const Evaluation e0, evaluate(start_));
    HPF_ASSIGN_OR_RETURN(Evaluation ec, evaluate(cur));
    if (e0.peak_bytes <= 0 || ec.peak_bytes <= 0) return Status();
    for (int round = 0; round < o_.peak_rounds && report_.evaluations < o_.max_evaluations; ++round) {
      State next = cur;
      for (int32_t id : live_at_peak(cur)) next[static_cast<size_t>(id)] = sixteen_bit(static_cast<size_t>(id));
      if (next == cur) break;
      HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(next));
      if (!(e.divergence <= search_budget())) {
        ++report_.rejected_budget;
        break;
      }
      if (!(e.peak_bytes >= 0 && e.peak_bytes < ec.peak_bytes)) break;
      // Both timed alternately with the FP32 plan, on fresh timings only: one timing moves by
      // 10-30% on a shared machine, and ec's and ms0_ may come from a faster phase of it. A move
      // that looks too slow is timed kConfirmTimingRounds more before it is refused.
      std::vector<const State*> plans{&start_, &cur, &next};
      if (cur == start_) plans.erase(plans.begin());
      std::vector<double> t;  // [FP32,] cur, next
      double ms_cur = 0, ms_next = 0, fp32 = 0;
      auto refused = [&] {
        ms_next = t.back();
        ms_cur = t[t.size() - 2];
        fp32 = t.size() == 3 ? t[0] : ms_cur;
        const double gain = o_.alpha * (ms_next - ms_cur) / fp32 +
                            o_.beta * double(e.peak_bytes - ec.peak_bytes) / double(e0.peak_bytes);
        return ms_next > o_.max_move_slowdown * ms_cur || ms_next > o_.max_latency_ratio * fp32 || !(gain < 0);
      };
      HPF_RETURN_IF_ERROR(time_alternately(plans, kFinalTimingRounds, true, t));
      if (refused()) HPF_RETURN_IF_ERROR(time_alternately(plans, kConfirmTimingRounds, false, t));
      const bool refuse = refused();
      ms0_ = std::min(ms0_, fp32);
      Evaluation timed = e;
      timed.ms = ms_next;
      if (refuse) {
        ++report_.rejected_slower;
        break;
      }
      log(LogLevel::debug, "plan_auto: peak pass: " + std::to_string(ec.peak_bytes) + " -> " + std::to_string(e.peak_bytes) +
                               " bytes, " + std::to_string(ms_cur) + " -> " + std::to_string(ms_next) + " ms");
      cur = next;
      ec = timed;
      history_.push_back(cur);
      ++report_.peak_moves;
    }
    best_ = cur;
    return Status();
  }

  // The final end-to-end check (a fresh evaluation, not the cache), backing off along the
  // accepted moves while over the budget, then, with measured times, while slower than the FP32
  // plan (max_latency_ratio), timed against it alternately.
  Expected<Plan> finish() {
    State s = best_.empty() ? start_ : best_;
    auto pos = std::find(history_.rbegin(), history_.rend(), s);
    auto back_off = [&]() -> bool {
      if (pos == history_.rend() || std::next(pos) == history_.rend()) return false;
      ++pos;
      ++report_.backed_off;
      s = *pos;
      return true;
    };
    HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(s, true));
    while (!(e.divergence <= search_budget()) && back_off()) {
      HPF_ASSIGN_OR_RETURN(e, evaluate(s, true));
    }
    if (!(e.divergence <= search_budget()) && s != start_) {
      s = start_;
      HPF_ASSIGN_OR_RETURN(e, evaluate(s, true));
    }
    if (ev_.evaluate && e.ms > 0) {
      while (s != start_) {
        std::vector<double> t;  // FP32's fastest, the plan's (as many timings each)
        auto fast_enough = [&] { return t[1] <= o_.max_latency_ratio * t[0]; };
        HPF_RETURN_IF_ERROR(time_alternately({&start_, &s}, kFinalTimingRounds, true, t));
        if (!fast_enough()) HPF_RETURN_IF_ERROR(time_alternately({&start_, &s}, kConfirmTimingRounds, false, t));
        const double fastest = t[1], fp32 = t[0];
        ms0_ = std::min(ms0_, fp32);
        e.ms = fastest;
        if (fast_enough()) break;
        log(LogLevel::info, "plan_auto: the chosen plan measures " + std::to_string(fastest) + " ms against FP32's " +
                                std::to_string(fp32) + " ms; backing off");
        ++report_.rejected_slower;
        if (!back_off()) s = start_;
        HPF_ASSIGN_OR_RETURN(e, evaluate(s, true));
      }
    }
    Plan plan = to_plan(s);
    plan.divergence = e.divergence;
    record(s, plan, e);
    return plan;
  }

  void record(const State& s, Plan& plan, const Evaluation& e) {
    for (size_t id = 0; id < s.size(); ++id) {
      NodePlan& p = plan.nodes[id];
      const NodeCost c = cost_of(id, s[id]);
      p.predicted_ms = c.predicted_ms;
      p.measured_ms = c.measured_ms;
      p.bytes = c.bytes();
      p.sensitivity = node_sensitivity(id, s[id]);
      ++report_.modes[choice_name(is_auto(id) ? s[id] : Choice{p.mode})];
    }
    report_.metric = o_.metric;
    report_.fp32_ms = l0_;
    report_.fp32_bytes = static_cast<int64_t>(b0_);
    report_.plan_ms = plan_ms(s);
    report_.plan_bytes = plan_bytes(s);
    report_.fp32_measured_ms = ms0_;
    report_.plan_measured_ms = e.ms;
    if (const auto it = seen_.find(start_); it != seen_.end()) report_.fp32_peak_bytes = it->second.peak_bytes;
    report_.plan_peak_bytes = e.peak_bytes;
    report_.objective = objective(s, e.divergence);
  }

  // The sensitivity of the smallest measured group holding node `id` as `c`.
  double node_sensitivity(size_t id, Choice c) const {
    if (c == kFp32 && !candidates_[id].empty()) c = candidates_[id].front();
    double d = -1;
    size_t size = 0;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const auto& mem = groups_[gi].members;
      const auto it = sensitivity_.find({gi, c});
      if (it == sensitivity_.end() || (size && mem.size() >= size) ||
          std::find(mem.begin(), mem.end(), static_cast<int32_t>(id)) == mem.end())
        continue;
      d = it->second;
      size = mem.size();
    }
    return d;
  }

  const Graph& g_;
  const PlannerOptions& o_;
  const Evaluators& ev_;
  const std::vector<std::vector<Tensor>>* calib_;
  PlannerReport& report_;
  CostModel cost_;
  std::mt19937_64 rng_;

  Plan base_;
  std::map<Choice, Plan> mode_plans_;
  std::vector<NodePlan> fp32_nodes_;
  std::vector<std::vector<Choice>> candidates_;  // per node, least aggressive first
  std::map<std::pair<size_t, Choice>, double> measured_;  // (node, candidate) -> measured ms
  std::map<int32_t, int64_t> calibration_rows_;  // node -> rows its observer saw (static scales)
  State start_, best_;
  double l0_ = 1, b0_ = 1, d0_ = 0;
  double ms0_ = -1;  // the FP32 plan's measured end-to-end time (-1: not measured)
  std::vector<Group> groups_;
  std::map<std::pair<size_t, Choice>, double> sensitivity_;
  std::vector<Proposal> proposals_, moves_;
  std::vector<State> history_;
  std::map<State, Evaluation> seen_;
};

}  // namespace

Expected<Plan> plan_auto(const Graph& g, const PlannerOptions& options, const Evaluators& ev,
                         const std::vector<std::vector<Tensor>>* calibration,
                         PlannerReport* report) {
  PlannerReport local;
  Planner p(g, options, ev, calibration, report ? *report : local);
  if (report) *report = PlannerReport{};
  auto plan = p.run();
  if (!plan.ok()) return plan;
  const PlannerReport& r = report ? *report : local;
  std::string modes;
  for (const auto& [m, n] : r.modes) modes += " " + m + "=" + std::to_string(n);
  log(LogLevel::info, "plan_auto '" + g.name() + "': divergence " +
                          std::to_string(plan->divergence) + " (" + r.metric + ", budget " +
                          std::to_string(options.kl_budget) + ") after " +
                          std::to_string(r.evaluations) + " evaluations; modes" + modes);
  return plan;
}

}  // namespace hpf
