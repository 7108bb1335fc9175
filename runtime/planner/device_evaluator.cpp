// DeviceEvaluator: plans measured on the device a Session picks, against the reference's FP32
// ground truth.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <mutex>

#include "hpf/log.hpp"
#include "hpf/planner.hpp"
#include "runtime/planner/plan_util.hpp"

namespace hpf {

struct DeviceEvaluator::State {
  SessionOptions options;
  Graph graph;
  std::vector<std::vector<Tensor>> batches;
  std::vector<std::vector<int64_t>> shapes;  // of the first batch (every batch has them)
  std::string metric;
  int runs = 3;
  std::atomic<int> evaluations{0};
  std::atomic<int> timed_runs{0};  // plan runs evaluate() timed
  // The FP32 ground truth, computed on first use (reference_values() computes it in the same
  // reference pass as the values the planner observes).
  std::mutex mutex;
  std::atomic<bool> have_reference{false};
  int reference_passes = 0;  // reference runs over the evaluator's own batches
  std::vector<std::vector<Tensor>> reference;
  std::vector<OutputMetric> metrics;

  // The graph's outputs and then `extra` values, per batch, from the reference interpreter,
  // batches in parallel (it is single-threaded; BERT-base takes seconds per batch).
  Expected<std::vector<std::vector<Tensor>>> run_reference(const std::vector<std::vector<Tensor>>& inputs,
                                                           const std::vector<std::string>& extra) const {
    Graph g = graph;
    for (const std::string& name : extra) {
      auto id = g.find_value(name);
      if (!id) return Status::invalid("graph '" + g.name() + "' has no value '" + name + "'");
      HPF_RETURN_IF_ERROR(g.add_output(*id));
    }
    std::vector<std::future<Expected<std::vector<Tensor>>>> runs_;
    for (const auto& b : inputs) runs_.push_back(std::async(std::launch::async, [&g, &b] { return ref::run(g, b); }));
    std::vector<std::vector<Tensor>> out;
    for (auto& f : runs_) {
      HPF_ASSIGN_OR_RETURN(std::vector<Tensor> o, f.get());
      out.push_back(std::move(o));
    }
    return out;
  }

  // Takes the graph-output part of `runs` as the ground truth (nothing changes on an error).
  Status set_reference(const std::vector<std::vector<Tensor>>& runs) {
    const size_t n = graph.outputs().size();
    std::vector<std::vector<Tensor>> truth;
    for (const auto& r : runs) truth.emplace_back(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n));
    auto m = output_metrics_for(graph, truth, metric);
    if (!m.ok()) return m.status().with_context("device evaluator");
    reference = std::move(truth);
    metrics = std::move(m).value();
    ++reference_passes;
    have_reference = true;
    return Status();
  }

  Status ensure_reference() {
    if (have_reference) return Status();
    std::lock_guard<std::mutex> lock(mutex);
    if (have_reference) return Status();
    auto runs_ = run_reference(batches, {});
    if (!runs_.ok()) return runs_.status().with_context("device evaluator: FP32 ground truth");
    return set_reference(*runs_);
  }
};

Expected<DeviceEvaluator> DeviceEvaluator::create(SessionOptions options, const Graph& g,
                                                  std::vector<std::vector<Tensor>> batches, const std::string& metric,
                                                  int runs) {
  if (batches.empty()) return Status::invalid("device evaluator: no calibration batches");
  auto s = std::make_shared<State>();
  s->options = std::move(options);
  s->options.progress = nullptr;
  if (!s->options.weight_cache) s->options.weight_cache = WeightCache::create();  // one model, many plans
  s->graph = g;
  s->runs = std::max(1, runs);
  for (const Tensor& t : batches[0]) s->shapes.push_back(t.shape());
  for (const auto& b : batches)
    for (size_t k = 0; k < b.size() && k < s->shapes.size(); ++k)
      if (b[k].shape() != s->shapes[k])
        return Status::invalid("device evaluator: calibration batches must share their shapes (input " +
                               std::to_string(k) + ": " + shape_string(b[k].shape()) + " vs " +
                               shape_string(s->shapes[k]) + ")");
  if (metric != "kl" && metric != "rel-l2") return Status::invalid("device evaluator: unknown metric '" + metric + "' (kl, rel-l2)");
  for (ValueId v : g.outputs())
    if (!is_float(g.value(v).dtype))
      return Status::invalid("device evaluator: output '" + g.value(v).name + "' is " +
                             std::string(dtype_name(g.value(v).dtype)) + ", not a float tensor");
  s->metric = metric;
  s->batches = std::move(batches);
  return DeviceEvaluator(std::move(s));
}

namespace {

// evaluate() times runs until they took this long in all, or this many runs.
constexpr double kMinTimedMs = 40;
constexpr int kMaxTimedRuns = 16;

Expected<Executable> compile_plan(const SessionOptions& base, const Graph& g,
                                  const std::vector<std::vector<int64_t>>& shapes, const Plan& plan) {
  SessionOptions o = base;
  o.plan = std::make_shared<Plan>(plan);
  HPF_ASSIGN_OR_RETURN(Session session, Session::create(o));
  return session.compile(g, shapes);
}

}  // namespace

Expected<Evaluation> DeviceEvaluator::evaluate(const Plan& plan) const {
  HPF_RETURN_IF_ERROR(s_->ensure_reference());
  ++s_->evaluations;
  HPF_ASSIGN_OR_RETURN(Executable exe, compile_plan(s_->options, s_->graph, s_->shapes, plan));
  std::vector<double> per_output(s_->metrics.size(), 0.0);
  double fastest = std::numeric_limits<double>::infinity(), timed = 0;
  int runs = 0;
  auto run = [&](size_t b) -> Expected<std::vector<Tensor>> {
    const auto t0 = std::chrono::steady_clock::now();
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, exe.run(s_->batches[b]));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    fastest = std::min(fastest, ms);
    timed += ms;
    ++runs;
    ++s_->timed_runs;
    return out;
  };
  for (size_t b = 0; b < s_->batches.size(); ++b) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, run(b));
    for (size_t o = 0; o < out.size() && o < per_output.size(); ++o) {
      HPF_ASSIGN_OR_RETURN(double d, output_divergence(s_->metrics[o], s_->reference[b][o], out[o]));
      per_output[o] = std::max(per_output[o], std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
    }
  }
  // A small model's runs take a few milliseconds in all, which one burst of load covers:
  // MobileNetV2's plans (5 ms a run with two threads) timed 40-70% slow for a whole evaluation.
  for (size_t b = 0; timed < kMinTimedMs && runs < kMaxTimedRuns && !s_->batches.empty(); ++b)
    HPF_RETURN_IF_ERROR(run(b % s_->batches.size()).status());
  Evaluation e;
  for (double d : per_output)
    e.divergence = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.divergence, d);
  e.ms = fastest;
  e.peak_bytes = static_cast<int64_t>(exe.peak_memory_bytes());
  return e;
}

Expected<double> DeviceEvaluator::divergence(const Plan& plan) const {
  HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(plan));
  return e.divergence;
}

Expected<std::map<std::string, double>> DeviceEvaluator::measure_ms(const Plan& plan) const {
  HPF_ASSIGN_OR_RETURN(Executable exe, compile_plan(s_->options, s_->graph, s_->shapes, plan));
  // A step's time goes to its first node (the MatMul/Conv whose epilogue holds the rest, a
  // chain's first op), the others it computes 0: split evenly, BERT-base's FFN GEMM with its
  // bias and GELU epilogue (7 nodes) showed the planner a seventh of the difference between its
  // int8 row formats, and GELU nodes in F16 (their own kernel, 0.86 ms a layer) as cheaper than
  // in FP32 (fused, a seventh of the GEMM's time each).
  auto split = [](const StepProfile& p, double ms, std::map<std::string, std::vector<double>>& into) {
    for (size_t k = 0; k < p.nodes.size(); ++k) into[p.nodes[k]].push_back(k == 0 ? ms : 0.0);
  };
  // Kernels timed before (this process or an earlier one) are read from the kernel cache, once
  // it holds the fastest of kTimeMeasurements measurements of each (one measurement alone may
  // have fallen in one of a shared machine's slow minutes, and would be replayed by every later
  // plan).
  std::map<std::string, std::vector<double>> samples;
  bool all_cached = true;
  for (const StepProfile& p : exe.profile())
    if (p.kind == "kernel") {
      all_cached = all_cached && p.cached_ms > 0 && p.cached_measurements >= planner_detail::kTimeMeasurements;
      if (p.cached_ms > 0) split(p, p.cached_ms, samples);
    }
  if (all_cached) {
    std::map<std::string, double> out;
    for (auto& [name, v] : samples) out[name] = v.front();
    return out;
  }
  samples.clear();
  exe.set_step_timing(true);  // a GPU's steps then wait for the device: device times
  HPF_RETURN_IF_ERROR(exe.run(s_->batches[0]).status());  // warm-up: first touches, not kept
  exe.clear_profile();
  std::vector<StepProfile> last;
  for (int r = 0; r < s_->runs; ++r) {
    HPF_RETURN_IF_ERROR(exe.run(s_->batches[0]).status());
    std::vector<StepProfile> now = exe.profile();
    for (size_t k = 0; k < now.size(); ++k) {
      const double ms = now[k].total_ms - (k < last.size() ? last[k].total_ms : 0.0);
      split(now[k], ms, samples);
    }
    last = std::move(now);
  }
  Status saved = exe.save_timings();
  if (!saved.ok()) log(LogLevel::warn, "kernel cache: " + saved.message());
  std::map<std::string, double> out;
  for (auto& [name, v] : samples) out[name] = planner_detail::median(std::move(v));
  return out;
}

Expected<std::vector<std::vector<Tensor>>> DeviceEvaluator::reference_values(
    const std::vector<std::vector<Tensor>>& batches, const std::vector<std::string>& values) const {
  auto same = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k].dtype() != b[k].dtype() || a[k].shape() != b[k].shape() ||
          !std::equal(a[k].bytes().begin(), a[k].bytes().end(), b[k].bytes().begin()))
        return false;
    return true;
  };
  bool mine = batches.size() == s_->batches.size();
  for (size_t b = 0; mine && b < batches.size(); ++b) mine = same(batches[b], s_->batches[b]);
  const size_t n = s_->graph.outputs().size();
  std::unique_lock<std::mutex> lock(s_->mutex, std::defer_lock);
  if (mine) lock.lock();  // the pass may make the ground truth: evaluate() waits for it
  auto ran = s_->run_reference(batches, values);
  if (!ran.ok()) return ran.status().with_context("device evaluator: reference values");
  auto runs = std::move(ran).value();
  if (mine && !s_->have_reference)
    HPF_RETURN_IF_ERROR(s_->set_reference(runs));
  else if (mine)
    ++s_->reference_passes;  // the ground truth came from an earlier pass
  for (auto& r : runs) r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n));
  return runs;
}

std::string DeviceEvaluator::describe() const {
  if (Status s = s_->ensure_reference(); !s.ok()) return "(no reference: " + s.message() + ")";
  std::string s;
  for (size_t o = 0; o < s_->metrics.size(); ++o)
    s += (o ? ", " : "") + s_->graph.value(s_->graph.outputs()[o]).name + ": " + output_metric_name(s_->metrics[o]);
  return s;
}

int DeviceEvaluator::evaluations() const { return s_->evaluations.load(); }
int DeviceEvaluator::timed_runs() const { return s_->timed_runs.load(); }

int DeviceEvaluator::reference_passes() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->reference_passes;
}

Evaluators DeviceEvaluator::evaluators() const {
  Evaluators ev;
  DeviceEvaluator self = *this;
  ev.divergence = [self](const Plan& p) { return self.divergence(p); };
  ev.evaluate = [self](const Plan& p) { return self.evaluate(p); };
  ev.measure_ms = [self](const Plan& p) { return self.measure_ms(p); };
  ev.reference_values = [self](const std::vector<std::vector<Tensor>>& batches, const std::vector<std::string>& values) {
    return self.reference_values(batches, values);
  };
  return ev;
}

}  // namespace hpf
