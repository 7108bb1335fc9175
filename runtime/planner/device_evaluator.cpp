// DeviceEvaluator: plans measured on the device a Session picks, against the reference's FP32
// ground truth.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>

#include "hpf/log.hpp"
#include "hpf/planner.hpp"

namespace hpf {

struct DeviceEvaluator::State {
  SessionOptions options;
  Graph graph;
  std::vector<std::vector<Tensor>> batches;
  std::vector<std::vector<int64_t>> shapes;  // of the first batch (every batch has them)
  std::vector<std::vector<Tensor>> reference;
  std::vector<OutputMetric> metrics;
  int runs = 3;
  std::atomic<int> evaluations{0};
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
  // The FP32 ground truth of each batch, batches in parallel (the interpreter is single-threaded;
  // BERT-base takes seconds per batch).
  std::vector<std::future<Expected<std::vector<Tensor>>>> truth;
  for (const auto& b : batches) truth.push_back(std::async(std::launch::async, [&g, &b] { return ref::run(g, b); }));
  for (auto& f : truth) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, f.get());
    s->reference.push_back(std::move(out));
  }
  s->batches = std::move(batches);
  auto metrics = output_metrics_for(g, s->reference, metric);
  if (!metrics.ok()) return metrics.status().with_context("device evaluator");
  s->metrics = std::move(metrics).value();
  return DeviceEvaluator(std::move(s));
}

namespace {

Expected<Executable> compile_plan(const SessionOptions& base, const Graph& g,
                                  const std::vector<std::vector<int64_t>>& shapes, const Plan& plan) {
  SessionOptions o = base;
  o.plan = std::make_shared<Plan>(plan);
  HPF_ASSIGN_OR_RETURN(Session session, Session::create(o));
  return session.compile(g, shapes);
}

}  // namespace

Expected<Evaluation> DeviceEvaluator::evaluate(const Plan& plan) const {
  ++s_->evaluations;
  HPF_ASSIGN_OR_RETURN(Executable exe, compile_plan(s_->options, s_->graph, s_->shapes, plan));
  std::vector<double> per_output(s_->metrics.size(), 0.0);
  double fastest = std::numeric_limits<double>::infinity();
  for (size_t b = 0; b < s_->batches.size(); ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, exe.run(s_->batches[b]));
    fastest = std::min(fastest, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t o = 0; o < out.size() && o < per_output.size(); ++o) {
      HPF_ASSIGN_OR_RETURN(double d, output_divergence(s_->metrics[o], s_->reference[b][o], out[o]));
      per_output[o] = std::max(per_output[o], std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
    }
  }
  Evaluation e;
  for (double d : per_output)
    e.divergence = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.divergence, d);
  e.ms = fastest;
  return e;
}

Expected<double> DeviceEvaluator::divergence(const Plan& plan) const {
  HPF_ASSIGN_OR_RETURN(Evaluation e, evaluate(plan));
  return e.divergence;
}

Expected<std::map<std::string, double>> DeviceEvaluator::measure_ms(const Plan& plan) const {
  HPF_ASSIGN_OR_RETURN(Executable exe, compile_plan(s_->options, s_->graph, s_->shapes, plan));
  auto split = [](const StepProfile& p, double ms, std::map<std::string, std::vector<double>>& into) {
    for (const std::string& n : p.nodes) into[n].push_back(ms / double(p.nodes.size()));
  };
  // Kernels timed before (this process or an earlier one) are read from the kernel cache.
  std::map<std::string, std::vector<double>> samples;
  bool all_cached = true;
  for (const StepProfile& p : exe.profile())
    if (p.kind == "kernel") {
      all_cached = all_cached && p.cached_ms > 0;
      if (p.cached_ms > 0) split(p, p.cached_ms, samples);
    }
  if (all_cached) {
    std::map<std::string, double> out;
    for (auto& [name, v] : samples) out[name] = v.front();
    return out;
  }
  samples.clear();
  HPF_RETURN_IF_ERROR(exe.run(s_->batches[0]).status());  // warm-up: first touches, not kept
  exe.clear_profile();
  std::vector<StepProfile> last;
  for (int r = 0; r < s_->runs; ++r) {
    HPF_RETURN_IF_ERROR(exe.run(s_->batches[0]).status());
    std::vector<StepProfile> now = exe.profile();
    for (size_t k = 0; k < now.size(); ++k) {
      const double ms = now[k].total_ms - (k < last.size() ? last[k].total_ms : 0.0);
      split(now[k], ms, samples);  // a fused step's time split evenly over its nodes
    }
    last = std::move(now);
  }
  Status saved = exe.save_timings();
  if (!saved.ok()) log(LogLevel::warn, "kernel cache: " + saved.message());
  std::map<std::string, double> out;
  for (auto& [name, v] : samples) {
    std::sort(v.begin(), v.end());
    out[name] = v[v.size() / 2];
  }
  return out;
}

std::string DeviceEvaluator::describe() const {
  std::string s;
  for (size_t o = 0; o < s_->metrics.size(); ++o)
    s += (o ? ", " : "") + s_->graph.value(s_->graph.outputs()[o]).name + ": " + output_metric_name(s_->metrics[o]);
  return s;
}

int DeviceEvaluator::evaluations() const { return s_->evaluations.load(); }

Evaluators DeviceEvaluator::evaluators() const {
  Evaluators ev;
  DeviceEvaluator self = *this;
  ev.divergence = [self](const Plan& p) { return self.divergence(p); };
  ev.evaluate = [self](const Plan& p) { return self.evaluate(p); };
  ev.measure_ms = [self](const Plan& p) { return self.measure_ms(p); };
  return ev;
}

}  // namespace hpf
