// LiveExecutable: variants per input shape, overflow healing and slow-kernel re-planning on top
// of Session::compile and Executable::run (see live.hpp for the rules).
#include <algorithm>
#include <cstdio>
#include <list>
#include <map>
#include <set>

#include "core/ir/batch_axis.hpp"
#include "hpf/live.hpp"
#include "hpf/log.hpp"
#include "hpf/reference.hpp"

namespace hpf {
namespace {

bool low_precision(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 || t == DType::F8E5M2;
}

Mode mode_of(DType t) {
  switch (t) {
    case DType::TF32:
      return Mode::tf32;
    case DType::BF16:
      return Mode::bf16;
    case DType::F16:
      return Mode::fp16;
    case DType::F8E4M3:
    case DType::F8E5M2:
      return Mode::fp8;
    default:
      return Mode::fp32;
  }
}

std::string shapes_string(const std::vector<std::vector<int64_t>>& shapes) {
  std::string s;
  for (const auto& sh : shapes) s += (s.empty() ? "" : ", ") + shape_string(sh);
  return s;
}

// The uniform-precision session as a plan: every node stores and reads weights in `t` (the
// session then gives the same formats as SessionOptions::precision = t).
Plan uniform_plan(const Graph& g, DType t) {
  Plan p;
  p.graph = g.name();
  for (const Node& n : g.nodes()) {
    NodePlan np;
    np.name = n.name;
    np.op = n.op;
    np.mode = mode_of(t);
    np.storage = np.weights = t;
    p.nodes.push_back(std::move(np));
  }
  return p;
}

// A bucket's outputs: where each holds the batch, and its shape.
struct Traced {
  std::vector<ir::BatchAxis> axes;
  std::vector<std::vector<int64_t>> shapes;
};

struct Variant {
  std::vector<std::vector<int64_t>> shapes;
  std::optional<Executable> exe;
  uint64_t generation = 0;            // of the plan it was compiled with
  int64_t runs = 0;                   // runs since it was compiled
  int64_t clean_runs = 0;             // consecutive runs without overflow while watched
  std::vector<StepProfile> baseline;  // profile at the start of the timing window
  std::map<size_t, int> slow_streak;  // step -> windows in a row it was slow in
  // A batch-bucket variant: where each output holds the batch (traced before its first padded
  // run).
  std::optional<Traced> traced;
};

bool byte_sized(DType t) { return bit_width(t) % 8 == 0; }

// `t` padded to `to` entries along its batch axis `axis`: copies of its last entry.
Tensor pad_batch(const Tensor& t, int axis, int64_t to) {
  std::vector<int64_t> shape = t.shape();
  const int64_t batch = shape[axis];
  int64_t outer = 1;
  for (int k = 0; k < axis; ++k) outer *= shape[k];
  shape[axis] = to;
  Tensor out(t.dtype(), shape);
  const auto row = static_cast<std::ptrdiff_t>(t.nbytes() / static_cast<size_t>(outer * batch));
  auto src = t.bytes().begin();
  auto dst = out.bytes().begin();
  for (int64_t o = 0; o < outer; ++o) {
    dst = std::copy(src, src + row * batch, dst);
    src += row * batch;
    for (int64_t b = batch; b < to; ++b) dst = std::copy(src - row, src, dst);
  }
  return out;
}

// The first `batch` entries of `t` along its batch axis `a` (outer x batch' x inner).
Tensor cut_batch(const Tensor& t, ir::BatchAxis a, int64_t batch) {
  if (a.axis < 0) return t;
  std::vector<int64_t> shape = t.shape();
  int64_t blocks = a.outer, rest = a.inner;  // runs of whole entries, and the size of one entry
  for (int k = 0; k < a.axis; ++k) blocks *= shape[k];
  for (size_t k = a.axis + 1; k < shape.size(); ++k) rest *= shape[k];
  const size_t elem = static_cast<size_t>(bit_width(t.dtype()) / 8);
  const int64_t padded = shape[a.axis] / (a.outer * a.inner);
  const auto in_run = static_cast<std::ptrdiff_t>(static_cast<size_t>(padded * rest) * elem);
  const auto out_run = static_cast<std::ptrdiff_t>(static_cast<size_t>(batch * rest) * elem);
  shape[a.axis] = a.outer * batch * a.inner;
  Tensor out(t.dtype(), shape);
  for (int64_t o = 0; o < blocks; ++o)
    std::copy(t.bytes().begin() + o * in_run, t.bytes().begin() + o * in_run + out_run, out.bytes().begin() + o * out_run);
  return out;
}

}  // namespace

std::optional<DType> promoted_format(DType storage) {
  switch (storage) {
    case DType::F8E4M3:
    case DType::F8E5M2:
      return DType::F16;
    case DType::F16:
      return DType::BF16;
    case DType::BF16:
      return DType::F32;
    default:
      return std::nullopt;
  }
}

int64_t batch_bucket(int64_t batch, int per_doubling) {
  if (per_doubling <= 0 || batch <= 1) return batch;
  int64_t pow2 = 1;
  while (pow2 <= batch / 2) pow2 *= 2;
  const int64_t step = std::max<int64_t>(pow2 / per_doubling, 1);
  return (batch + step - 1) / step * step;
}

std::string RecompileEvent::describe() const {
  char buf[160];
  std::string s = cause + ": ";
  if (cause == "new_shape") {
    std::snprintf(buf, sizeof buf, " (%.1f ms)", compile_ms);
    return s + "compiled a variant for inputs " + shapes_string(shapes) +
           (requested.empty() ? "" : ", the batch bucket of " + shapes_string(requested)) + buf;
  }
  s += "node '" + node + "' " + from + " -> " + to;
  if (cause == "overflow")
    std::snprintf(buf, sizeof buf, " (|x| up to %.4g in FP32)", fp32_amax);
  else
    std::snprintf(buf, sizeof buf, " (measured %.4g ms, predicted %.4g ms)", measured_ms,
                  predicted_ms);
  s += buf;
  if (compile_ms > 0) {
    std::snprintf(buf, sizeof buf, ", recompiled in %.1f ms", compile_ms);
    s += buf;
  }
  return s;
}

struct LiveExecutable::Impl {
  Graph graph;
  LiveOptions options;
  std::optional<Session> session;
  std::shared_ptr<const Plan> plan;
  std::vector<DType> device_storage;
  uint64_t generation = 0;
  std::list<Variant> variants;  // most recently used first
  std::vector<RecompileEvent> events;
  int64_t runs = 0;
  std::set<std::string> stuck;  // nodes reported as not promotable (logged once)
  std::vector<int> batch_axes;  // per graph input: its dimension that is the batch axis, or -1
  std::string no_buckets;       // why runs use exact shapes ("" while buckets are on)
  std::map<std::vector<std::vector<int64_t>>, bool> checked;  // input shapes -> cut_matches

  explicit Impl(const Graph& g) : graph(g) {}

  void buckets_off(const std::string& why) {
    no_buckets = why;
    log(LogLevel::info, "live: graph '" + graph.name() + "': batch buckets off, exact-shape variants: " + why);
  }

  // The batch of these input shapes when a run of them is padded to a bucket (`padded`: the
  // shapes with the bucket's size on the batch axis), else 0.
  int64_t padding(const std::vector<std::vector<int64_t>>& shapes,
                  std::vector<std::vector<int64_t>>& padded) const {
    if (!no_buckets.empty() || shapes.size() != batch_axes.size()) return 0;
    int64_t batch = -1;
    for (size_t k = 0; k < shapes.size(); ++k) {
      const int a = batch_axes[k];
      if (a < 0) continue;
      if (static_cast<size_t>(a) >= shapes[k].size() || (batch >= 0 && shapes[k][a] != batch)) return 0;
      batch = shapes[k][a];
    }
    const int64_t to = batch_bucket(batch, options.batch_buckets);
    if (batch < 1 || to == batch) return 0;
    padded = shapes;
    for (size_t k = 0; k < shapes.size(); ++k)
      if (batch_axes[k] >= 0) padded[k][batch_axes[k]] = to;
    return batch;
  }

  // Where the outputs of the graph for input `shapes` hold the batch, and their shapes; an
  // unsupported Status when the graph mixes batch entries (other errors: the shapes' own).
  Expected<Traced> trace(const std::vector<std::vector<int64_t>>& shapes) const {
    HPF_ASSIGN_OR_RETURN(Graph g, specialize(graph, shapes));
    int64_t batch = 0;
    for (size_t k = 0; k < batch_axes.size() && batch == 0; ++k)
      if (batch_axes[k] >= 0) batch = shapes[k][batch_axes[k]];
    Traced t;
    HPF_ASSIGN_OR_RETURN(t.axes, ir::trace_batch_axis(g, batch_axes, batch));
    for (size_t k = 0; k < t.axes.size(); ++k) {
      const Value& out = g.value(g.outputs()[k]);
      if (t.axes[k].axis >= 0 && !byte_sized(out.dtype))
        return Status::unsupported("output '" + out.name + "' packs sub-byte elements");
      t.shapes.push_back(*concrete(out.shape));  // the trace checked every shape is concrete
    }
    return t;
  }

  // Whether the bucket's outputs, cut to `batch`, have the shapes the graph gives for inputs of
  // `shapes` (a reshape to a constant shape can agree with the bucket's size by coincidence, a
  // value sized by the batch can be an output the trace sees as batch-free): checked once per
  // input shapes. An error: the shapes' own (the caller then runs them as they are).
  Expected<bool> cut_matches(const std::vector<std::vector<int64_t>>& shapes, const Traced& t, int64_t batch) {
    if (auto it = checked.find(shapes); it != checked.end()) return it->second;
    auto exact = specialize(graph, shapes);
    if (!exact.ok()) return exact.status();
    bool same = true;
    for (size_t k = 0; k < t.axes.size() && same; ++k) {
      std::vector<int64_t> cut = t.shapes[k];
      if (t.axes[k].axis >= 0) cut[t.axes[k].axis] = t.axes[k].outer * batch * t.axes[k].inner;
      const auto want = concrete(exact->value(exact->outputs()[k]).shape);
      if (!want || *want != cut) {
        same = false;
        buckets_off("output '" + exact->value(exact->outputs()[k]).name + "' of inputs " + shapes_string(shapes) +
                    " is " + (want ? shape_string(*want) : std::string("of no concrete shape")) +
                    ", not the bucket's output cut to " + shape_string(cut));
      }
    }
    if (checked.size() >= 4096) checked.clear();
    checked[shapes] = same;
    return same;
  }

  bool watch_overflow() const {
    if (!options.check_overflow || !plan) return false;
    return std::any_of(plan->nodes.begin(), plan->nodes.end(),
                       [](const NodePlan& n) { return low_precision(n.storage); });
  }

  // (Re)compiles `v` with the current plan; the compile time in ms.
  Expected<double> compile(Variant& v) {
    session->set_plan(plan);
    auto exe = session->compile(graph, v.shapes);
    if (!exe.ok()) return exe.status();
    exe->set_overflow_watch(watch_overflow());
    v.exe.emplace(std::move(exe).value());
    v.generation = generation;
    v.runs = v.clean_runs = 0;
    v.baseline.clear();
    return v.exe->compile_stats().ms;
  }

  // The variant a run of inputs of `shapes` uses, and the batch its outputs are cut back to
  // (0: no padding; the variant is for `shapes` themselves).
  Expected<std::pair<Variant*, int64_t>> resolve(const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<std::vector<int64_t>> padded;
    if (const int64_t batch = padding(shapes, padded)) {
      // Traced once per bucket, before its variant is compiled.
      auto held = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.shapes == padded; });
      std::optional<Traced> traced;
      if (held != variants.end() && held->traced) traced = held->traced;
      if (!traced) {
        auto t = trace(padded);
        if (t.ok())
          traced = std::move(t).value();
        else if (t.status().code() == StatusCode::unsupported)
          buckets_off(t.status().message());
      }
      auto same = traced ? cut_matches(shapes, *traced, batch) : Expected<bool>(false);
      if (same.ok() && *same) {
        HPF_ASSIGN_OR_RETURN(Variant * v, variant(padded, shapes));
        v->traced = std::move(traced);
        return std::make_pair(v, batch);
      }
    }
    HPF_ASSIGN_OR_RETURN(Variant * v, variant(shapes));
    return std::make_pair(v, int64_t{0});
  }

  // The variant for `shapes`, made the most recent; compiled when missing (event) or stale.
  Expected<Variant*> variant(const std::vector<std::vector<int64_t>>& shapes,
                             const std::vector<std::vector<int64_t>>& requested = {}) {
    auto it = std::find_if(variants.begin(), variants.end(),
                           [&](const Variant& v) { return v.shapes == shapes; });
    if (it != variants.end()) {
      variants.splice(variants.begin(), variants, it);
      Variant& v = variants.front();
      if (v.generation != generation) {
        log(LogLevel::debug, "live: recompiling the variant for " + shapes_string(shapes) +
                                 " with the current plan");
        HPF_RETURN_IF_ERROR(compile(v).status());
      }
      return &v;
    }
    Variant v;
    v.shapes = shapes;
    HPF_ASSIGN_OR_RETURN(double ms, compile(v));
    variants.push_front(std::move(v));
    while (variants.size() > std::max<size_t>(options.max_variants, 1)) variants.pop_back();
    RecompileEvent e;
    e.cause = "new_shape";
    e.shapes = shapes;
    e.requested = requested;
    e.compile_ms = ms;
    record(std::move(e));
    return &variants.front();
  }

  void record(RecompileEvent e) {
    e.run = runs;
    log(LogLevel::info, "live: " + e.describe());
    events.push_back(std::move(e));
  }

  // The next wider format the device stores, from `t`.
  std::optional<DType> next_format(DType t) const {
    for (auto f = promoted_format(t); f; f = promoted_format(*f))
      if (*f == DType::F32 ||
          std::find(device_storage.begin(), device_storage.end(), *f) != device_storage.end())
        return f;
    return std::nullopt;
  }

  // Promotes `node` in `p` one step; false when it cannot be (not low-precision in the plan).
  bool promote(NodePlan& node, DType& from, DType& to) const {
    auto next = low_precision(node.storage) ? next_format(node.storage) : std::nullopt;
    if (!next) return false;
    from = node.storage;
    to = *next;
    if (node.weights == node.storage) node.weights = to;
    node.storage = to;
    node.mode = mode_of(to);
    node.predicted_ms = node.measured_ms = -1;  // both were for the old format
    return true;
  }

  NodePlan* find(Plan& p, const std::string& name) {
    for (NodePlan& n : p.nodes)
      if (n.name == name) return &n;
    return nullptr;
  }

  void give_up(const std::string& node, const std::string& why, LogLevel level) {
    if (stuck.insert(node + "\n" + why).second)
      log(level, "live: node '" + node + "' " + why + "; left as it is");
  }

  // Promotes the overflowing nodes of the last run; the events (not recorded yet), empty when
  // nothing could be promoted.
  std::vector<RecompileEvent> promote_overflows(const Variant& v, Plan& next) {
    std::vector<RecompileEvent> out;
    std::set<std::string> done;
    for (const OverflowHit& h : v.exe->overflow_hits()) {
      if (!done.insert(h.node).second) continue;
      NodePlan* n = find(next, h.node);
      DType from, to;
      if (!n || !promote(*n, from, to)) {
        give_up(h.node,
                "overflows " + std::string(dtype_name(h.storage)) +
                    " but its plan format cannot be promoted",
                LogLevel::warn);
        continue;
      }
      RecompileEvent e;
      e.cause = "overflow";
      e.node = h.node;
      e.from = dtype_name(from);
      e.to = dtype_name(to);
      e.shapes = v.shapes;
      e.fp32_amax = h.fp32_amax;
      out.push_back(std::move(e));
    }
    return out;
  }

  // Kernel steps slower than slow_factor x their prediction over the last window: re-planned.
  std::vector<RecompileEvent> replan_slow(Variant& v, Plan& next) {
    std::vector<RecompileEvent> out;
    std::vector<StepProfile> now = v.exe->profile();
    for (size_t k = 0; k < now.size() && k < v.baseline.size(); ++k) {
      const StepProfile& p = now[k];
      const int64_t calls = p.calls - v.baseline[k].calls;
      if (p.kind != "kernel" || calls <= 0 || p.nodes.empty()) continue;
      const double measured = (p.total_ms - v.baseline[k].total_ms) / static_cast<double>(calls);
      double predicted = 0;
      bool all = true;
      for (const std::string& name : p.nodes) {
        const NodePlan* n = plan->find(name);
        // What the plan expects: its own measurement of the kernel when it has one (the
        // planner's device evaluator), else the cost model's prediction.
        const double expected = n ? (n->measured_ms > 0 ? n->measured_ms : n->predicted_ms) : -1;
        all = all && expected > 0;
        if (all) predicted += expected;
      }
      if (!all || measured < options.slow_min_ms || measured <= options.slow_factor * predicted) {
        v.slow_streak.erase(k);
        continue;
      }
      if (++v.slow_streak[k] < std::max(options.slow_windows, 1)) continue;
      v.slow_streak.erase(k);
      for (const std::string& name : p.nodes) {
        NodePlan* n = find(next, name);
        if (!n) continue;
        const NodePlan before = *n;
        DType from = n->storage, to = n->storage;
        bool changed =
            options.replan ? options.replan(*n, measured, predicted) : promote(*n, from, to);
        if (options.replan) {
          to = n->storage;
          if (changed && n->predicted_ms == before.predicted_ms) n->predicted_ms = n->measured_ms = -1;
        }
        if (!changed) {
          give_up(name,
                  options.replan ? "is slower than predicted; the re-plan callback kept it"
                                 : "is slower than predicted but has no wider format",
                  LogLevel::info);
          n->predicted_ms = n->measured_ms = -1;  // not compared again
          continue;
        }
        RecompileEvent e;
        e.cause = "slow_kernel";
        e.node = name;
        e.from = dtype_name(from);
        e.to = dtype_name(to);
        e.shapes = v.shapes;
        e.measured_ms = measured;
        e.predicted_ms = predicted;
        out.push_back(std::move(e));
      }
    }
    v.baseline = std::move(now);
    return out;
  }

  // Applies `next` and records `events`, the first carrying the recompilation time of `v`.
  Status adopt(Plan next, Variant& v, std::vector<RecompileEvent> events) {
    plan = std::make_shared<const Plan>(std::move(next));
    ++generation;
    HPF_ASSIGN_OR_RETURN(double ms, compile(v));
    for (size_t k = 0; k < events.size(); ++k) {
      events[k].compile_ms = k == 0 ? ms : 0;
      record(std::move(events[k]));
    }
    return Status();
  }
};

LiveExecutable::LiveExecutable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LiveExecutable::LiveExecutable(LiveExecutable&&) noexcept = default;
LiveExecutable& LiveExecutable::operator=(LiveExecutable&&) noexcept = default;
LiveExecutable::~LiveExecutable() = default;

Expected<LiveExecutable> LiveExecutable::create(const Graph& graph, LiveOptions options) {
  auto impl = std::make_unique<Impl>(graph);
  impl->plan = options.session.plan;
  if (!impl->plan && options.session.precision != DType::F32)
    impl->plan = std::make_shared<const Plan>(uniform_plan(graph, options.session.precision));
  if (impl->plan)
    HPF_RETURN_IF_ERROR(impl->plan->check_matches(graph).with_context("live executable"));
  // Variants of one graph share its weights on the device instead of holding a copy each.
  if (!options.session.weight_cache) options.session.weight_cache = WeightCache::create();
  HPF_ASSIGN_OR_RETURN(Session s, Session::create(options.session));
  impl->device_storage = s.device_formats().storage;
  // The batch axis: each input's first dimension that is not a known size, where it has the
  // symbol of the first such dimension of any input (unnamed dimensions match unnamed ones).
  std::optional<std::string> symbol;
  for (ValueId v : graph.inputs()) {
    const Value& in = graph.value(v);
    int axis = -1;
    for (size_t d = 0; in.has_shape && d < in.shape.size() && axis < 0; ++d)
      if (!in.shape[d].known()) axis = static_cast<int>(d);
    if (axis >= 0 && !symbol) symbol = in.shape[axis].symbol;
    if (axis >= 0 && in.shape[axis].symbol != *symbol) axis = -1;
    if (axis >= 0 && !byte_sized(in.dtype))
      impl->no_buckets = "input '" + in.name + "' packs sub-byte elements";
    impl->batch_axes.push_back(axis);
  }
  if (options.batch_buckets <= 0) {
    impl->no_buckets = "batch_buckets is 0";
  } else if (!symbol) {
    impl->no_buckets = "no input has a dynamic dimension";
  } else if (impl->no_buckets.empty()) {
    Status shapes = ir::check_shape_values(graph, *symbol);
    if (impl->no_buckets.empty() && !shapes.ok()) impl->buckets_off(shapes.message());
  }
  impl->session.emplace(std::move(s));
  impl->options = std::move(options);
  return LiveExecutable(std::move(impl));
}

Expected<std::vector<Tensor>> LiveExecutable::run(const std::vector<Tensor>& inputs) {
  Impl& m = *impl_;
  ++m.runs;
  std::vector<std::vector<int64_t>> shapes, padded;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  HPF_ASSIGN_OR_RETURN(auto resolved, m.resolve(shapes));
  auto [v, batch] = resolved;
  std::vector<Tensor> feed;  // the inputs padded to the bucket
  if (batch > 0)
    for (size_t k = 0; k < inputs.size(); ++k)
      feed.push_back(m.batch_axes[k] >= 0 ? pad_batch(inputs[k], m.batch_axes[k], v->shapes[k][m.batch_axes[k]])
                                          : inputs[k]);
  Expected<std::vector<Tensor>> out = Status::internal("not run");
  {  // steps are timed through the slow-kernel windows (on a GPU each timed step waits for the device)
    const LiveOptions& o = m.options;
    const int64_t end = o.warmup_runs + int64_t{std::max(o.slow_window, 1)} * std::max(o.slow_windows, 1);
    v->exe->set_step_timing(o.check_slow_kernels && m.plan && v->runs >= o.warmup_runs && v->runs < end);
  }
  for (int attempt = 0;; ++attempt) {
    out = v->exe->run(batch > 0 ? feed : inputs);
    if (!out.ok() || v->exe->overflow_hits().empty()) break;
    if (attempt >= m.options.max_heal_attempts) {
      log(LogLevel::warn, "live: still overflowing after " + std::to_string(attempt) +
                              " recompilations; giving up for this run");
      break;
    }
    Plan next = *m.plan;
    auto events = m.promote_overflows(*v, next);
    if (events.empty()) break;
    HPF_RETURN_IF_ERROR(m.adopt(std::move(next), *v, std::move(events)));
  }
  if (!out.ok()) return out;
  if (batch > 0)
    for (size_t k = 0; k < out->size(); ++k) (*out)[k] = cut_batch((*out)[k], v->traced->axes[k], batch);
  ++v->runs;
  const LiveOptions& o = m.options;
  if (v->exe->overflow_hits().empty() && o.overflow_watch_runs > 0 &&
      ++v->clean_runs == o.overflow_watch_runs)
    v->exe->set_overflow_watch(false);
  if (o.check_slow_kernels && m.plan) {
    if (v->runs == o.warmup_runs) {
      v->baseline = v->exe->profile();
    } else if (v->runs > o.warmup_runs &&
               (v->runs - o.warmup_runs) % std::max(o.slow_window, 1) == 0) {
      Plan next = *m.plan;
      auto events = m.replan_slow(*v, next);
      if (!events.empty())
        HPF_RETURN_IF_ERROR(m.adopt(std::move(next), *v, std::move(events)));
      else
        m.plan = std::make_shared<const Plan>(std::move(next));  // nodes given up on
    }
  }
  return out;
}

Status LiveExecutable::prepare(const std::vector<std::vector<int64_t>>& shapes) {
  return impl_->resolve(shapes).status();
}

const std::vector<RecompileEvent>& LiveExecutable::events() const { return impl_->events; }
std::shared_ptr<const Plan> LiveExecutable::plan() const { return impl_->plan; }
const Executable* LiveExecutable::current() const {
  return impl_->variants.empty() ? nullptr : &*impl_->variants.front().exe;
}
size_t LiveExecutable::variants() const { return impl_->variants.size(); }
const std::string& LiveExecutable::device() const { return impl_->session->device(); }

}  // namespace hpf
