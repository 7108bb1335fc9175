// The reference interpreter as the planner's evaluator: a plan becomes an Emulation, its outputs
// are compared with the FP32 ground truth computed once.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "hpf/divergence.hpp"
#include "hpf/planner.hpp"
#include "runtime/planner/plan_util.hpp"

namespace hpf {
namespace {

bool lowered(Mode m) { return m != Mode::fp32 && m != Mode::auto_; }

bool has_scales(const std::optional<QuantParams>& q) { return q && !q->scales.empty(); }

Status uncalibrated(const NodePlan& p, const char* what) {
  return Status::invalid("emulation: node '" + p.name + "' (" + p.op + ", " + mode_name(p.mode) +
                         ") has no calibrated " + what + " scales (calibrate_plan fills them)");
}

// Outputs of a lowered node.
Status add_outputs(const Graph& g, const Node& n, const NodePlan& p, ref::Emulation& e) {
  for (ValueId v : n.outputs) {
    if (v == kNoValue || !is_float(g.value(v).dtype)) continue;
    const std::string& name = g.value(v).name;
    if (has_scales(p.activation_quant))
      e.value_quant[name] = *p.activation_quant;
    else if (p.activation_quant || !is_float(p.storage))
      return uncalibrated(p, "activation");
    else if (p.storage != DType::F32)
      e.value_format[name] = p.storage;
  }
  return Status();
}

// Initializer inputs of a lowered node; the first node to claim an initializer sets it.
Status add_weights(const Graph& g, const Node& n, const NodePlan& p, ref::Emulation& e) {
  const ValueId w = weight_input(g, n);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueId v = n.inputs[k];
    if (v == kNoValue || !g.constant(v) || !is_float(g.value(v).dtype)) continue;
    if (planner_detail::is_wide_input(n, k)) continue;
    const std::string& name = g.value(v).name;
    if (e.value_quant.count(name) || e.value_format.count(name)) continue;
    if (v == w && p.weight_quant) {
      if (!has_scales(p.weight_quant)) return uncalibrated(p, "weight");
      e.value_quant[name] = *p.weight_quant;
    } else if (is_float(p.weights) && p.weights != DType::F32) {
      e.value_format[name] = p.weights;
    }
  }
  return Status();
}

double bernoulli_kl(double p, double q) {
  constexpr double eps = 1e-12;
  q = std::clamp(q, eps, 1 - eps);
  double kl = 0;
  if (p > 0) kl += p * std::log(p / q);
  if (p < 1) kl += (1 - p) * std::log((1 - p) / (1 - q));
  return std::max(0.0, kl);
}

}  // namespace

OutputMetric detect_output_metric(const std::vector<const Tensor*>& refs) {
  bool unit = true, rows_sum_to_one = true;
  for (const Tensor* t : refs) {
    const std::vector<float> x = t->to_f32();
    const int64_t cols = t->rank() ? t->shape().back() : 1;
    for (float v : x) unit = unit && v >= 0 && v <= 1;
    if (cols < 2) rows_sum_to_one = false;
    for (size_t r = 0; cols >= 2 && r + cols <= x.size(); r += cols) {
      double s = 0;
      for (int64_t j = 0; j < cols; ++j) s += x[r + j];
      rows_sum_to_one = rows_sum_to_one && std::abs(s - 1) <= 1e-3;
    }
  }
  if (!unit) return OutputMetric::kl_logits;
  return rows_sum_to_one ? OutputMetric::kl_probabilities : OutputMetric::kl_bernoulli;
}

Expected<ref::Emulation> emulation_for_plan(const Graph& g, const Plan& plan) {
  HPF_RETURN_IF_ERROR(plan.check_matches(g));
  ref::Emulation e;
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<int32_t>(id));
    const NodePlan* p = plan.find(n.name);
    if (!p || !lowered(p->mode)) continue;
    HPF_RETURN_IF_ERROR(add_outputs(g, n, *p, e));
    HPF_RETURN_IF_ERROR(add_weights(g, n, *p, e));
    e.accumulation[n.name] = p->accumulation;
    if (const Int8Input in = int8_input(g, plan, n); in.dynamic) {
      (in.rows == RowQuant::u7 ? e.dynamic_u7_rows : in.rows == RowQuant::s16 ? e.dynamic_s16_rows : e.dynamic_int8_rows).insert(n.name);
      if (p->weight_quant->type == DType::I16) e.s16_rows_w16.insert(n.name);
    }
    if (p->input_quant) {
      if (!has_scales(p->input_quant)) return uncalibrated(*p, "input");
      e.input_quant[n.name] = *p->input_quant;
    }
  }
  return e;
}

const char* output_metric_name(OutputMetric m) {
  switch (m) {
    case OutputMetric::kl_logits:
      return "kl-softmax";
    case OutputMetric::kl_probabilities:
      return "kl-probabilities";
    case OutputMetric::kl_bernoulli:
      return "kl-bernoulli";
    case OutputMetric::rel_l2:
      return "rel-l2";
  }
  return "?";
}

Expected<double> output_divergence(OutputMetric m, const Tensor& reference, const Tensor& test) {
  HPF_ASSIGN_OR_RETURN(Divergence d, compare(reference, test));
  if (d.non_finite) return std::numeric_limits<double>::infinity();
  if (m == OutputMetric::kl_logits) return d.kl;
  if (m == OutputMetric::rel_l2) return d.rel_l2;
  const std::vector<float> p = reference.to_f32(), q = test.to_f32();
  if (p.empty()) return 0.0;
  if (m == OutputMetric::kl_bernoulli) {
    double s = 0;
    for (size_t k = 0; k < p.size(); ++k) s += bernoulli_kl(p[k], q[k]);
    return s / double(p.size());
  }
  const size_t cols = reference.rank() ? static_cast<size_t>(reference.shape().back()) : 1;
  double s = 0;
  for (size_t r = 0; r + cols <= p.size(); r += cols) {
    double kl = 0;
    for (size_t j = r; j < r + cols; ++j)
      if (p[j] > 0) kl += p[j] * std::log(double(p[j]) / std::max(double(q[j]), 1e-12));
    s += std::max(0.0, kl);
  }
  return s / double(p.size() / cols);
}

struct RefEvaluator::State {
  Graph graph;
  std::vector<std::vector<Tensor>> batches;
  std::vector<std::vector<Tensor>> reference;  // per batch, the outputs
  std::vector<OutputMetric> metrics;
  std::string metric;
  mutable std::atomic<int> evaluations{0};
};

Expected<std::vector<OutputMetric>> output_metrics_for(const Graph& g,
                                                       const std::vector<std::vector<Tensor>>& reference,
                                                       const std::string& metric) {
  if (metric != "kl" && metric != "rel-l2") return Status::invalid("unknown metric '" + metric + "' (kl, rel-l2)");
  std::vector<OutputMetric> out;
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const Value& v = g.value(g.outputs()[o]);
    if (!is_float(v.dtype))
      return Status::invalid("output '" + v.name + "' is " + std::string(dtype_name(v.dtype)) +
                             ", not a float tensor");
    std::vector<const Tensor*> refs;
    for (const auto& r : reference) refs.push_back(&r[o]);
    out.push_back(metric == "rel-l2" ? OutputMetric::rel_l2 : detect_output_metric(refs));
  }
  return out;
}

Expected<RefEvaluator> RefEvaluator::create(const Graph& g,
                                            std::vector<std::vector<Tensor>> batches,
                                            const std::string& metric) {
  if (batches.empty()) return Status::invalid("reference evaluator: no calibration batches");
  auto s = std::make_shared<State>();
  s->graph = g;
  s->metric = metric;
  for (const auto& b : batches) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, ref::run(g, b));
    s->reference.push_back(std::move(out));
  }
  s->batches = std::move(batches);
  auto metrics = output_metrics_for(g, s->reference, metric);
  if (!metrics.ok()) return metrics.status().with_context("reference evaluator");
  s->metrics = std::move(metrics).value();
  return RefEvaluator(std::move(s));
}

Expected<double> RefEvaluator::divergence(const Plan& plan) const {
  ++s_->evaluations;
  HPF_ASSIGN_OR_RETURN(ref::Emulation e, emulation_for_plan(s_->graph, plan));
  ref::RunOptions opt;
  opt.emulation = &e;
  std::vector<double> per_output(s_->metrics.size(), 0.0);
  for (size_t b = 0; b < s_->batches.size(); ++b) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> out, ref::run(s_->graph, s_->batches[b], opt));
    for (size_t o = 0; o < out.size(); ++o) {
      HPF_ASSIGN_OR_RETURN(double d,
                           output_divergence(s_->metrics[o], s_->reference[b][o], out[o]));
      per_output[o] = std::max(per_output[o], std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
    }
  }
  double worst = 0;
  for (double d : per_output)
    worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
  return worst;
}

const std::vector<OutputMetric>& RefEvaluator::output_metrics() const { return s_->metrics; }

std::string RefEvaluator::describe() const {
  std::string s;
  for (size_t o = 0; o < s_->metrics.size(); ++o)
    s += (o ? ", " : "") + s_->graph.value(s_->graph.outputs()[o]).name + ": " +
         output_metric_name(s_->metrics[o]);
  return s;
}

const std::string& RefEvaluator::metric() const { return s_->metric; }
int RefEvaluator::evaluations() const { return s_->evaluations.load(); }

Evaluators RefEvaluator::evaluators() const {
  Evaluators ev;
  RefEvaluator self = *this;
  ev.divergence = [self](const Plan& p) { return self.divergence(p); };
  return ev;
}

}  // namespace hpf
