// Session::compile: lower the graph, get every kernel from the cache or the plugin's compiler,
// load it, and plan memory; Executable::run: upload inputs, launch, download outputs.
#include "hpf/session.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "hpf/fingerprint.hpp"
#include "hpf/kernel_cache.hpp"
#include "hpf/log.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/reference.hpp"
#include "jit/codegen/gpu_codegen.hpp"
#include "jit/codegen/lowering.hpp"
#include "runtime/planner/plan_util.hpp"
#include "runtime/session/autotune.hpp"
#include "runtime/session/cache_meta.hpp"
#include "runtime/session/memory_plan.hpp"
#include "runtime/session/conv_rewrites.hpp"
#include "runtime/session/weight_cache.hpp"
#include "runtime/session/weight_packing.hpp"

namespace hpf {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// SessionOptions::dump_dir (else HPF_DUMP_DIR): each distinct generated kernel's source.
void dump_sources(std::string dir, const std::vector<jit::LoweredStep>& steps,
                  const std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources, const char* ext) {
  if (dir.empty())
    if (const char* env = std::getenv("HPF_DUMP_DIR")) dir = env;
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::set<std::string> written;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!sources[i] || !sources[i]->ok() || !written.insert((*sources[i])->name).second) continue;
    const jit::GeneratedKernel& k = **sources[i];
    const std::string path = (std::filesystem::path(dir) / (k.name + ext)).string();
    std::string label = steps[i].label;
    for (size_t at; (at = label.find("*/")) != std::string::npos;) label.replace(at, 2, "* /");
    std::ofstream f(path);
    f << "/* step: " << label << "; work items " << k.work_items << " */\n" << k.source;
    if (!f.flush()) log(LogLevel::warn, "dump: could not write " + path);
  }
}

// A step of the executable: a loaded kernel, or a one-node graph for the reference fallback.
struct Step {
  jit::LoweredStep::Kind kind;
  std::string label;
  Kernel kernel;
  int64_t work_items = 0, grain = 0;
  std::vector<ValueId> inputs, outputs;
  std::shared_ptr<Graph> fallback;  // one node, its inputs as graph inputs
  std::vector<int32_t> nodes;       // graph nodes computed by the step, in order
  std::optional<CacheKey> key;      // kernel steps: the kernel's cache key
  double cached_ms = -1;            // its time per call recorded in the cache earlier (-1: none)
  int64_t cached_measurements = 0;  // how many measurements cached_ms is the fastest of
  int64_t calls = 0;
  double total_ms = 0;
  // The step's nodes as a graph in FP32, built on the overflow watch's first hit here.
  std::shared_ptr<Graph> fp32;
  std::vector<ValueId> fp32_inputs, fp32_outputs;  // values of the executable's graph
  // Some value the step computes but does not store (a fused node's output) is in a
  // low-precision format: the overflow watch then reads every output whatever its format, since
  // an overflow there reaches the output as Inf/NaN (lowering absorbs only overflow-transparent
  // nodes after an F16 value).
  bool hides_low_precision = false;
};

// Nodes whose output sizes depend on input values (NonZero, Unique, a Reshape to a computed
// shape), and every node downstream of one: no kernel can be specialised for them, so they run
// together on the reference interpreter after the kernels (nothing outside depends on them).
struct DynamicRegion {
  std::shared_ptr<Graph> graph;       // the region's nodes; its inputs are `inputs`
  std::vector<ValueId> inputs;        // values of the executable's graph the region reads
  std::vector<ValueId> outputs;       // graph outputs it produces, in its output order
  std::vector<bool> value_in_region;  // by value id of the executable's graph
  int64_t nodes = 0;
  int64_t calls = 0;
  double total_ms = 0;
};

// Formats whose range is narrow enough to overflow where FP32 does not.
bool low_precision(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 || t == DType::F8E5M2;
}

// Whether `t` holds an Inf or NaN (F8E4M3: NaN or +-448, which a saturating store gives on
// overflow), by bit tests on the stored encoding.
bool has_non_finite(const Tensor& t) {
  const std::span<const std::byte> b = t.bytes();
  auto any16 = [&](uint16_t exp_mask) {
    for (size_t k = 0; k + 1 < b.size(); k += 2) {
      uint16_t u;
      std::memcpy(&u, b.data() + k, 2);
      if ((u & exp_mask) == exp_mask) return true;
    }
    return false;
  };
  switch (t.dtype()) {
    case DType::F32:
    case DType::TF32:
      for (float f : t.data<float>())
        if (!std::isfinite(f)) return true;
      return false;
    case DType::F16: return any16(0x7c00);
    case DType::BF16: return any16(0x7f80);
    case DType::F8E5M2:
      return std::any_of(b.begin(), b.end(), [](std::byte x) { return (std::to_integer<unsigned>(x) & 0x7c) == 0x7c; });
    case DType::F8E4M3:
      return std::any_of(b.begin(), b.end(), [](std::byte x) { return (std::to_integer<unsigned>(x) & 0x7e) == 0x7e; });
    default: return false;
  }
}

// The nodes `ids` of `g` as a graph of their own: values read from outside become inputs (of
// the graph's dtype and the executable's concrete shapes), constants keep their FP32 values, and
// every output of every node is an output. `inputs`/`outputs` receive the values of `g` behind
// the new graph's inputs and outputs.
Expected<std::shared_ptr<Graph>> nodes_as_graph(const Graph& g, const std::vector<int32_t>& ids,
                                                const std::vector<std::vector<int64_t>>& shapes,
                                                std::vector<ValueId>& inputs, std::vector<ValueId>& outputs) {
  auto sub = std::make_shared<Graph>(g.name() + "/step");
  std::map<ValueId, ValueId> local;
  for (int32_t id : ids) {
    const Node& n = g.node(id);
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ins.push_back(kNoValue);
        continue;
      }
      auto it = local.find(v);
      if (it == local.end()) {
        const Value& val = g.value(v);
        ValueId l;
        if (const Tensor* c = g.constant(v)) {
          HPF_ASSIGN_OR_RETURN(l, sub->add_initializer(val.name, *c));
        } else {
          HPF_ASSIGN_OR_RETURN(l, sub->add_input(val.name, val.dtype, make_shape(shapes[v])));
          inputs.push_back(v);
        }
        it = local.emplace(v, l).first;
      }
      ins.push_back(it->second);
    }
    std::vector<std::string> outs;
    for (ValueId v : n.outputs) outs.push_back(v == kNoValue ? std::string() : g.value(v).name);
    HPF_ASSIGN_OR_RETURN(int32_t nid, sub->add_node(n.op, n.name, std::move(ins), std::move(outs), n.attrs));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] == kNoValue) continue;
      local[n.outputs[k]] = sub->node(nid).outputs[k];
      HPF_RETURN_IF_ERROR(sub->add_output(sub->node(nid).outputs[k]));
      outputs.push_back(n.outputs[k]);
    }
  }
  HPF_RETURN_IF_ERROR(sub->infer_shapes());
  return sub;
}

bool has_concrete_shape(const Value& v) { return v.has_shape && concrete(v.shape).has_value(); }

// A kernel's measured time per launch kept in its cache entry's meta text (cache_meta.hpp), per
// number of compute units the device ran it with (the CPU plugin's thread count: a time measured
// with two threads says nothing about one), {"by_units": {"2": {"run_ms": fastest, "runs":
// launches, "measurements": count}}}: the fastest of `measurements` saved measurements (each the
// mean over its launches), and how many launches they cover in all; {-1, 0, 0} when none for
// `units`. Entries of earlier versions (a running mean, no count) read as one measurement.
struct CachedTime {
  double ms = -1;
  int64_t runs = 0, measurements = 0;
};
CachedTime cached_run_ms(const nlohmann::json& meta, int32_t units) {
  const auto by = meta.find("by_units");
  if (by == meta.end() || !by->is_object()) return {};
  const auto e = by->find(std::to_string(units));
  if (e == by->end() || !e->is_object() || !e->contains("run_ms") || !(*e)["run_ms"].is_number()) return {};
  return {(*e)["run_ms"].get<double>(), e->value("runs", int64_t{1}), e->value("measurements", int64_t{1})};
}

DeviceFormats formats_of(const DeviceRecord& d) {
  DeviceFormats f;
  f.storage.clear();
  for (const PrecisionSupport& p : d.precisions)
    for (const std::string& name : p.formats) {
      if (name == "i8w7") f.int8_weight_max = 64, f.int8_s16_rows = true;  // a hint, not a format (plugin.h)
      auto t = parse_dtype(name);
      if (!t.ok()) continue;
      if (is_float(*t) && std::find(f.storage.begin(), f.storage.end(), *t) == f.storage.end()) f.storage.push_back(*t);
      if (*t == DType::I8) {
        f.int8_compute = true;
        if (!p.op_class.empty()) f.int8_classes.push_back(p.op_class);
      }
      if (*t == DType::I4 && std::find(f.storage.begin(), f.storage.end(), *t) == f.storage.end()) f.storage.push_back(*t);
      if (*t == DType::F8E4M3) f.fp8_compute = true;
    }
  if (std::find(f.storage.begin(), f.storage.end(), DType::F32) == f.storage.end()) f.storage.push_back(DType::F32);
  return f;
}

// Storage formats of the values of `g` (graph inputs and outputs keep their dtype): from the
// plan per node (outputs: the node's storage; weights: the widest weight format its consumers
// ask for), else `precision` for every float value. Formats the device lacks become F32.
void assign_storage(const Graph& g, const SessionOptions& o, const DeviceFormats& device, std::vector<DType>& storage) {
  const size_t nv = g.values().size();
  std::vector<bool> boundary(nv, false);
  for (ValueId v : g.inputs()) boundary[v] = true;
  for (ValueId v : g.outputs()) boundary[v] = true;
  std::set<DType> refused;
  auto usable = [&](DType t) {
    if (std::find(device.storage.begin(), device.storage.end(), t) != device.storage.end()) return t;
    if (is_float(t) && t != DType::F32) refused.insert(t);
    return DType::F32;
  };
  auto lowerable = [&](ValueId v) { return !boundary[v] && g.value(v).dtype == DType::F32; };
  if (!o.plan) {
    for (size_t v = 0; v < nv; ++v)
      if (lowerable(static_cast<ValueId>(v))) storage[v] = usable(o.precision);
  } else {
    std::vector<int> weight_bits(nv, 0);  // widest weight format asked for, by value
    for (const Node& n : g.nodes()) {
      const NodePlan* p = o.plan->find(n.name);
      if (!p) continue;
      for (ValueId v : n.outputs)
        if (lowerable(v)) storage[v] = usable(p->storage);
      for (size_t k = 0; k < n.inputs.size(); ++k)  // inputs the op keeps wide stay f32, as emulated
        if (const ValueId v = n.inputs[k]; v != kNoValue && g.constant(v) && lowerable(v) && is_float(p->weights) &&
                                           !planner_detail::is_wide_input(n, k)) {
          const DType w = usable(p->weights);
          if (bit_width(w) > weight_bits[v]) weight_bits[v] = bit_width(w), storage[v] = w;
        }
    }
  }
  for (DType t : refused)
    log(LogLevel::warn, "session: the device's kernels do not take " + std::string(dtype_name(t)) +
                            " storage; those values stay f32");
}

// A float-to-float Cast whose input has no other reader: its producer stores in the Cast's
// target format directly (rounding once, as the Cast would), so the Cast only relabels bytes
// and needs no kernel.
void fuse_casts(const Graph& g, const std::vector<bool>& in_region, std::vector<DType>& storage) {
  std::vector<int> readers(g.values().size(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++readers[v];
  for (ValueId v : g.outputs()) ++readers[v];
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& c = g.node(static_cast<int32_t>(id));
    if (c.op != "Cast" || in_region[id] || c.inputs.size() != 1) continue;
    const ValueId x = c.inputs[0], y = c.outputs[0];
    const Value& xv = g.value(x);
    if (!is_float(xv.dtype) || !is_float(g.value(y).dtype) || readers[x] != 1 || xv.producer < 0) continue;
    if (jit::is_view_op(g.node(xv.producer).op)) continue;  // a view's storage is its input's
    storage[x] = storage[y];
  }
}

// Marks the dynamic region's nodes (by id) and values; empty when every shape is concrete.
Expected<DynamicRegion> find_dynamic_region(const Graph& g, std::vector<bool>& node_in_region) {
  DynamicRegion r;
  r.value_in_region.assign(g.values().size(), false);
  node_in_region.assign(g.nodes().size(), false);
  HPF_ASSIGN_OR_RETURN(auto order, g.topological_order());
  std::vector<int32_t> members;
  for (int32_t id : order) {
    const Node& n = g.node(id);
    bool dynamic = false;
    for (ValueId v : n.inputs) dynamic = dynamic || (v != kNoValue && r.value_in_region[v]);
    for (ValueId v : n.outputs) dynamic = dynamic || !has_concrete_shape(g.value(v));
    if (!dynamic) continue;
    node_in_region[id] = true;
    members.push_back(id);
    for (ValueId v : n.outputs) r.value_in_region[v] = true;
  }
  if (members.empty()) return r;
  r.nodes = static_cast<int64_t>(members.size());
  r.graph = std::make_shared<Graph>(g.name() + "/dynamic");
  std::map<ValueId, ValueId> local;  // value of g -> value of the region graph
  auto import_value = [&](ValueId v) -> Expected<ValueId> {
    if (v == kNoValue) return kNoValue;
    if (auto it = local.find(v); it != local.end()) return it->second;
    const Value& val = g.value(v);
    ValueId id;
    if (const Tensor* c = g.constant(v)) {
      HPF_ASSIGN_OR_RETURN(id, r.graph->add_initializer(val.name, *c));
    } else {
      HPF_ASSIGN_OR_RETURN(id, r.graph->add_input(val.name, val.dtype, val.shape));
      r.inputs.push_back(v);
    }
    local[v] = id;
    return id;
  };
  for (int32_t id : members) {
    const Node& n = g.node(id);
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) {
      HPF_ASSIGN_OR_RETURN(ValueId l, import_value(v));
      ins.push_back(l);
    }
    std::vector<std::string> outs;
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    HPF_ASSIGN_OR_RETURN(int32_t nid, r.graph->add_node(n.op, n.name, std::move(ins), std::move(outs), n.attrs));
    for (size_t k = 0; k < n.outputs.size(); ++k) local[n.outputs[k]] = r.graph->node(nid).outputs[k];
  }
  for (ValueId o : g.outputs())
    if (r.value_in_region[o] && std::find(r.outputs.begin(), r.outputs.end(), o) == r.outputs.end()) {
      HPF_RETURN_IF_ERROR(r.graph->add_output(local.at(o)));
      r.outputs.push_back(o);
    }
  HPF_RETURN_IF_ERROR(r.graph->infer_shapes());
  std::string names;
  for (int32_t id : members) {
    const Node& n = g.node(id);
    bool seed = true;  // a node whose inputs are all outside the region: its own shape is value-dependent
    for (ValueId v : n.inputs) seed = seed && !(v != kNoValue && r.value_in_region[v]);
    if (seed) names += (names.empty() ? "'" : ", '") + n.name + "' (" + n.op + ")";
  }
  log(LogLevel::info, "graph '" + g.name() + "': " + names + " give value-dependent shapes; " +
                          std::to_string(members.size()) + " node(s) from there on run on the reference interpreter");
  return r;
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  Plugin* plugin = nullptr;
  int32_t device = 0;
  std::optional<jit::GpuDialect> gpu;  // the device's GPU dialect; none: the C dialect
  std::string device_label;
  std::string fingerprint;  // digest of the device's fingerprint and toolchain
  std::shared_ptr<KernelCache> cache;  // shared with the Executables, for their kernel timings

  struct Binary {
    CacheKey key;
    std::vector<std::byte> blob;
  };
  // The binary of each distinct kernel (by name) among the generated `sources` of `steps`: from
  // the kernel cache, or compiled by the plugin (misses side by side, one per core) and stored.
  // Counts hits and misses in `stats`; reports progress as binaries are ready. Errors: the first
  // failing compile in step order.
  Expected<std::map<std::string, Binary>> binaries_of(
      const std::vector<jit::LoweredStep>& steps,
      const std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources, CompileStats& stats) const;
};

Expected<std::map<std::string, Session::Impl::Binary>> Session::Impl::binaries_of(
    const std::vector<jit::LoweredStep>& steps,
    const std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources, CompileStats& stats) const {
  const DeviceRecord& dev = plugin->devices()[device];
  const bool cached = cache && cache->enabled();
  std::map<std::string, Binary> out;
  struct Miss {
    const jit::GeneratedKernel* kernel;
    const std::string* label;
    std::optional<Expected<std::vector<std::byte>>> blob;
    double ms = 0;
  };
  std::vector<Miss> missing;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!sources[i] || !sources[i]->ok()) continue;
    const jit::GeneratedKernel& k = **sources[i];
    auto [it, added] = out.try_emplace(k.name);
    if (!added) continue;
    it->second.key = CacheKey{fingerprint, dev.compiler, dev.compile_flags, hash_source(k.source)};
    if (cached)
      if (auto blob = cache->get(it->second.key)) {
        it->second.blob = std::move(*blob);
        ++stats.cache_hits;
        continue;
      }
    missing.push_back(Miss{&k, &steps[i].label, std::nullopt});
  }
  std::mutex progress_mutex;
  size_t ready = out.size() - missing.size();
  if (options.progress && ready > 0) options.progress(ready, out.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next++) < missing.size();) {
      const auto t0 = Clock::now();
      missing[j].blob = plugin->compile(device, missing[j].kernel->source);
      missing[j].ms = ms_since(t0);
      if (options.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(++ready, out.size());
      }
    }
  };
  std::vector<std::thread> workers;
  const size_t n = std::min<size_t>(missing.size(), std::max(1u, std::thread::hardware_concurrency()));
  for (size_t w = 1; w < n; ++w) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
  for (Miss& m : missing) {
    if (!m.blob->ok()) return m.blob->status().with_context("compiling kernel for '" + *m.label + "'");
    Binary& b = out.at(m.kernel->name);
    b.blob = std::move(*m.blob).value();
    ++stats.cache_misses;
    if (cached) {
      Status s = cache->put(b.key, b.blob, m.ms);
      if (!s.ok()) log(LogLevel::warn, "kernel cache: " + s.message());
    }
  }
  return out;
}

struct Executable::Impl {
  std::shared_ptr<KernelCache> cache;  // the Session's (null without a cache)
  Plugin* plugin = nullptr;
  int32_t device = 0;
  std::shared_ptr<const Graph> graph;
  std::vector<Program> programs;
  std::vector<Step> steps;
  MemoryPlan plan;
  // One per plan slot; a weight's may be shared with other executables (SessionOptions::weight_cache).
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<int> slot_of;          // value -> buffer index (-1: none)
  std::vector<DType> storage;        // value -> storage format
  std::vector<std::vector<int64_t>> shapes;  // value -> concrete shape
  std::vector<std::vector<int64_t>> input_shapes;
  CompileStats stats;
  std::vector<std::string> output_names;
  DynamicRegion dynamic;
  bool overflow_watch = false;
  bool queued = false;       // the device queues launches (GPU dialects): steps time only on request
  bool step_timing = false;  // set_step_timing
  std::vector<OverflowHit> hits;  // of the last run

  size_t value_bytes(ValueId v) const { return storage_bytes(storage[v], numel(shapes[v])); }
  void* pointer(ValueId v) const {
    return static_cast<std::byte*>(buffers[plan.slot_of[v]]->device_pointer()) + plan.offset_of[v];
  }
  Status upload(ValueId v, const Tensor& t) { return upload_to(*buffers[plan.slot_of[v]], plan.offset_of[v], t, storage[v]); }
  static Status upload_to(Buffer& b, size_t offset, const Tensor& t, DType format) {
    if (t.dtype() == format) return b.copy_in(offset, t.bytes().data(), t.nbytes());
    const Tensor conv = t.cast(format);
    return b.copy_in(offset, conv.bytes().data(), conv.nbytes());
  }
  Expected<Tensor> download(ValueId v) const {
    Tensor t(storage[v], shapes[v]);
    HPF_RETURN_IF_ERROR(buffers[plan.slot_of[v]]->copy_out(plan.offset_of[v], t.bytes().data(), t.nbytes()));
    return t;
  }
  // The overflow watch after step `s` (set_overflow_watch): appends to `hits`.
  Status check_overflow(Step& s);
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;
const std::string& Session::device() const { return impl_->device_label; }
void Session::set_plan(std::shared_ptr<const Plan> plan) { impl_->options.plan = std::move(plan); }
const std::shared_ptr<const Plan>& Session::plan() const { return impl_->options.plan; }

Expected<Session> Session::create(SessionOptions options) {
  auto impl = std::make_unique<Impl>();
  PluginHost& host = PluginHost::shared();
  if (!options.plugin.empty()) {
    Plugin* p = host.plugin(options.plugin);
    if (!p || !p->usable()) {
      std::string why = "no plugin '" + options.plugin + "' is loaded";
      for (const auto& r : host.records())
        if (r.name == options.plugin) why = "plugin '" + options.plugin + "' is unusable: " + r.reason;
      return Status::not_found("session: " + why);
    }
    impl->plugin = p;
    impl->device = p->best_device().index;
  } else {
    auto best = host.best_device();
    if (!best.ok()) return best.status();
    impl->plugin = best->plugin;
    impl->device = best->device;
  }
  const DeviceRecord& d = impl->plugin->devices()[impl->device];
  if (d.dialect == "cuda" || d.dialect == "hip")
    impl->gpu = d.dialect == "cuda" ? jit::GpuDialect::cuda : jit::GpuDialect::hip;
  else if (d.dialect != "c")
    return Status::unsupported("session: device '" + d.name + "' speaks dialect '" + d.dialect +
                               "'; this libhpf generates c, cuda and hip kernels");
  impl->device_label = impl->plugin->name() + ": " + d.name + " (" + d.architecture + ")";
  Fingerprint fp;
  fp.merge(d.fingerprint, "device.");
  fp.add_toolchain(d.compiler, d.compile_flags);
  impl->fingerprint = fp.digest();
  if (options.use_cache) {
    KernelCacheOptions co;
    co.dir = options.cache_dir;
    auto cache = KernelCache::open(co);
    if (cache.ok()) {
      impl->cache = std::make_shared<KernelCache>(std::move(cache).value());
      Status s = impl->cache->register_fingerprint(fp);
      if (!s.ok()) log(LogLevel::warn, "kernel cache: " + s.message());
    } else {
      log(LogLevel::warn, "kernel cache unavailable, compiling without it: " + cache.status().message());
    }
  }
  impl->options = std::move(options);
  return Session(std::move(impl));
}

DeviceFormats Session::device_formats() const {
  DeviceFormats f = formats_of(impl_->plugin->devices()[impl_->device]);
  if (impl_->gpu) {  // the GPU lowering stores floats only and has no INT8/FP8 compute path yet
    std::erase_if(f.storage, [&](DType t) { return !jit::gpu_storage_type(*impl_->gpu, t) || !is_float(t); });
    f.int8_compute = f.fp8_compute = false;
    f.int8_classes.clear();
  }
  return f;
}

Expected<Executable> Session::compile(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes) {
  const auto t0 = Clock::now();
  if (impl_->options.plan) HPF_RETURN_IF_ERROR(impl_->options.plan->check_matches(graph).with_context("compile"));
  auto specialised = specialize(graph, input_shapes);
  if (!specialised.ok()) return specialised.status().with_context("compile");
  auto g = std::make_shared<Graph>(std::move(specialised).value());
  if (!impl_->gpu) {  // the GPU kernels take strides and small maps as they are
    HPF_RETURN_IF_ERROR(subsample_strided_pointwise_convs(*g, impl_->options.plan.get()).status().with_context("compile"));
    HPF_RETURN_IF_ERROR(gather_small_map_convs(*g, impl_->options.plan.get(), impl_->options.weight_cache.get())
                            .status()
                            .with_context("compile"));
  }
  for (ValueId v : g->inputs())
    if (!has_concrete_shape(g->value(v)))
      return Status::invalid("compile: input '" + g->value(v).name + "' has no concrete shape; give its shape");
  std::vector<bool> node_in_region;
  HPF_ASSIGN_OR_RETURN(DynamicRegion dynamic, find_dynamic_region(*g, node_in_region));
  auto impl = std::make_unique<Executable::Impl>();
  impl->dynamic = std::move(dynamic);
  impl->stats.fallbacks = impl->dynamic.nodes;
  for (size_t id = 0; id < node_in_region.size(); ++id)
    if (node_in_region[id]) impl->stats.fallback_nodes.push_back(g->node(id).name + " (" + g->node(id).op + ")");
  impl->plugin = impl_->plugin;
  impl->cache = impl_->cache;
  impl->device = impl_->device;
  impl->queued = impl_->gpu.has_value();
  impl->stats.device = impl_->device_label;
  const size_t nv = g->values().size();
  impl->shapes.resize(nv);
  impl->storage.resize(nv);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g->value(static_cast<ValueId>(v));
    impl->storage[v] = val.dtype;
    if (impl->dynamic.value_in_region[v]) continue;  // sized when the region runs
    auto dims = val.has_shape ? concrete(val.shape) : std::nullopt;
    if (!dims) return Status::invalid("compile: value '" + val.name + "' has no concrete shape");
    impl->shapes[v] = *dims;
  }
  // The plan's format for weights and intermediates; graph inputs and outputs keep theirs.
  const DeviceRecord& dev = impl_->plugin->devices()[impl_->device];
  const std::optional<jit::GpuDialect> gpu = impl_->gpu;
  if (const Plan* plan = impl_->options.plan.get(); gpu && plan) {
    std::string integer;  // nodes the plan computes in INT8/FP8/INT4: no GPU lowering takes them yet
    for (const NodePlan& p : plan->nodes)
      if (p.mode == Mode::int8 || p.mode == Mode::fp8 || p.mode == Mode::int4_weights)
        integer += (integer.empty() ? "'" : ", '") + p.name + "'";
    if (!integer.empty())
      log(LogLevel::warn, "session: on " + impl_->device_label + " the plan's INT8/FP8/INT4 nodes (" + integer +
                              ") compute in their storage formats: the GPU lowering has no integer or FP8 path yet");
  }
  assign_storage(*g, impl_->options, device_formats(), impl->storage);
  fuse_casts(*g, node_in_region, impl->storage);

  // A view shares its input's bytes, so it shares its storage format too.
  HPF_ASSIGN_OR_RETURN(auto order, g->topological_order());
  for (int32_t id : order) {
    const Node& n = g->node(id);
    if (jit::is_view_op(n.op)) impl->storage[n.outputs[0]] = impl->storage[n.inputs[0]];
  }
  HPF_ASSIGN_OR_RETURN(auto lowered, jit::lower(*g, impl->storage, node_in_region,
                                                gpu ? jit::kGpuLowering : jit::LowerOptions{}));
  if (!gpu) {  // constant weights the plan quantises or narrows, and FP32 GEMV weights: packed once, own kernels
    // The CPU plugin compiles for the host's features, AMX among them only where Linux granted
    // this process the tile state (plugins/cpu/clang_compiler.cpp).
    const bool amx_bf16 = dev.compiles_for("+amx-tile") && dev.compiles_for("+amx-bf16");
    const bool amx_int8 = dev.compiles_for("+amx-tile") && dev.compiles_for("+amx-int8");
    HPF_ASSIGN_OR_RETURN(auto packed, lower_weight_quantised_matmuls(*g, impl_->options.plan.get(), impl->storage,
                                                                     impl->shapes, lowered,
                                                                     impl_->options.weight_cache.get(), amx_bf16,
                                                                     amx_int8));
    HPF_ASSIGN_OR_RETURN(auto int8_convs, lower_int8_convs(*g, impl_->options.plan.get(), impl->storage, impl->shapes,
                                                           lowered, impl_->options.weight_cache.get()));
    packed.int8_nodes.insert(packed.int8_nodes.end(), int8_convs.begin(), int8_convs.end());
    HPF_ASSIGN_OR_RETURN(auto integer, lower_integer_matmuls(*g, impl->storage, impl->shapes, lowered,
                                                             impl_->options.weight_cache.get(), amx_int8));
    packed.int8_nodes.insert(packed.int8_nodes.end(), integer.begin(), integer.end());
    packed.nodes.insert(packed.nodes.end(), integer.begin(), integer.end());
    HPF_ASSIGN_OR_RETURN(impl->stats.packed_conv_nodes,
                         lower_packed_convs(*g, impl->storage, impl->shapes, lowered, impl_->options.weight_cache.get(),
                                            amx_bf16));
    impl->stats.packed_weight_nodes = std::move(packed.nodes);
    HPF_ASSIGN_OR_RETURN(auto tables, lower_quantised_gathers(*g, impl_->options.plan.get(), impl->storage, impl->shapes,
                                                              lowered, impl_->options.weight_cache.get()));
    impl->stats.packed_weight_nodes.insert(impl->stats.packed_weight_nodes.end(), tables.begin(), tables.end());
    impl->stats.int8_compute_nodes = std::move(packed.int8_nodes);
  }
  impl->dynamic.value_in_region.resize(g->values().size(), false);
  // Every kernel's source, then the binaries: from the cache, or compiled (misses side by side,
  // one per core: a plugin compiles different programs concurrently).
  std::vector<std::optional<Expected<jit::GeneratedKernel>>> sources(lowered.size());
  for (size_t i = 0; i < lowered.size(); ++i)
    if (lowered[i].kind == jit::LoweredStep::Kind::kernel)
      sources[i] = gpu ? jit::generate_gpu(lowered[i].spec, *gpu) : jit::generate_c(lowered[i].spec);
  if (impl_->options.autotune && gpu) log(LogLevel::info, "autotune: the GPU kernels have no tile choices yet");
  if (impl_->options.autotune && !gpu) {
    const CacheKey base{impl_->fingerprint, dev.compiler, dev.compile_flags, ""};
    auto compile_all = [&](const std::vector<jit::LoweredStep>& steps,
                           const std::vector<std::optional<Expected<jit::GeneratedKernel>>>& srcs)
        -> Expected<std::map<std::string, std::vector<std::byte>>> {
      CompileStats scratch;
      HPF_ASSIGN_OR_RETURN(auto made, impl_->binaries_of(steps, srcs, scratch));
      std::map<std::string, std::vector<std::byte>> out;
      for (auto& [name, b] : made) out.emplace(name, std::move(b.blob));
      return out;
    };
    HPF_RETURN_IF_ERROR(autotune_kernels(*impl_->plugin, impl_->device, impl_->cache.get(), base, lowered, sources,
                                         compile_all, impl->stats));
  }
  dump_sources(impl_->options.dump_dir, lowered, sources, gpu ? (*gpu == jit::GpuDialect::cuda ? ".cu" : ".hip") : ".c");
  HPF_ASSIGN_OR_RETURN(auto binaries, impl_->binaries_of(lowered, sources, impl->stats));
  std::map<std::string, size_t> kernel_index;  // kernel name -> program index (dedup)
  for (size_t i = 0; i < lowered.size(); ++i) {
    jit::LoweredStep& ls = lowered[i];
    Step st;
    st.kind = ls.kind;
    st.label = ls.label;
    st.inputs = ls.inputs;
    st.outputs = ls.outputs;
    // A single op whose generator declines this form (a format or attribute it does not take)
    // runs on the reference instead.
    std::optional<jit::GeneratedKernel> generated;
    if (ls.kind == jit::LoweredStep::Kind::kernel) {
      Expected<jit::GeneratedKernel>& k = *sources[i];
      if (k.ok()) {
        generated = std::move(k).value();
      } else if (k.status().code() == StatusCode::unsupported && ls.fused.size() == 1) {
        log(LogLevel::info, "node '" + ls.label + "': " + k.status().message() + "; using the reference");
        ls.kind = st.kind = jit::LoweredStep::Kind::fallback;
        st.inputs = g->node(ls.node).inputs;
        st.outputs = g->node(ls.node).outputs;  // the kernel's may leave out absent ones (LSTM)
      } else {
        return k.status().with_context("generating the kernel for '" + ls.label + "'");
      }
    }
    if (ls.kind == jit::LoweredStep::Kind::fallback) {
      // One-node graph run by the reference interpreter on host copies.
      const Node& n = g->node(ls.node);
      auto mini = std::make_shared<Graph>("fallback");
      std::vector<ValueId> ins;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] == kNoValue) {
          ins.push_back(kNoValue);
          continue;
        }
        const Value& v = g->value(n.inputs[k]);
        HPF_ASSIGN_OR_RETURN(ValueId id, mini->add_input("in" + std::to_string(k), impl->storage[n.inputs[k]],
                                                         make_shape(impl->shapes[n.inputs[k]])));
        (void)v;
        ins.push_back(id);
      }
      std::vector<std::string> outs;
      for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back("out" + std::to_string(k));
      HPF_ASSIGN_OR_RETURN(int32_t nid, mini->add_node(n.op, n.name, ins, outs, n.attrs));
      for (ValueId o : mini->node(nid).outputs) HPF_RETURN_IF_ERROR(mini->add_output(o));
      HPF_RETURN_IF_ERROR(mini->infer_shapes());
      st.fallback = std::move(mini);
      ++impl->stats.fallbacks;
      impl->stats.fallback_nodes.push_back(n.name + " (" + n.op + ")");
      log(LogLevel::info, "node '" + n.name + "' (" + n.op + ") runs on the reference interpreter (no generator)");
    } else if (ls.kind == jit::LoweredStep::Kind::kernel) {
      const jit::GeneratedKernel& k = *generated;
      st.work_items = k.work_items;
      st.grain = k.grain;
      auto it = kernel_index.find(k.name);
      const Session::Impl::Binary& binary = binaries.at(k.name);
      st.key = binary.key;
      if (impl_->cache && impl_->cache->enabled()) {
        const CachedTime t = cached_run_ms(cached_meta(*impl_->cache, binary.key), dev.compute_units);
        st.cached_ms = t.ms;
        st.cached_measurements = t.measurements;
      }
      if (it == kernel_index.end()) {
        auto program = impl_->plugin->load(impl_->device, binary.blob);
        if (!program.ok()) return program.status().with_context("loading kernel for '" + ls.label + "'");
        impl->programs.push_back(std::move(program).value());
        it = kernel_index.emplace(k.name, impl->programs.size() - 1).first;
      }
      auto kernel = impl->programs[it->second].kernel(k.name);
      if (!kernel.ok()) return kernel.status();
      st.kernel = *kernel;
    }
    st.nodes = ls.fused;
    for (int32_t id : st.nodes)
      for (ValueId v : g->node(id).outputs)
        if (v != kNoValue && low_precision(impl->storage[v]) &&
            std::find(st.outputs.begin(), st.outputs.end(), v) == st.outputs.end())
          st.hides_low_precision = true;
    impl->steps.push_back(std::move(st));
  }
  impl->stats.kernels = static_cast<int64_t>(kernel_index.size());
  for (const auto& ls : lowered)
    if (ls.kind == jit::LoweredStep::Kind::kernel &&
        std::all_of(ls.fused.begin(), ls.fused.end(), [&](int32_t id) { return g->node(id).op == "Cast"; }))
      ++impl->stats.standalone_casts;

  // Memory: weights get their own buffers; everything else shares an arena by lifetime.
  std::vector<std::vector<ValueId>> step_inputs, step_outputs;
  std::vector<bool> alias_step;
  // A C kernel's output over an input that dies there (a residual Add's); not where the overflow
  // watch may look at the step (a low-precision output, or one hidden in it): it reads the step's
  // inputs after the step has run.
  std::vector<int> in_place;
  for (size_t i = 0; i < impl->steps.size(); ++i) {
    const Step& s = impl->steps[i];
    step_inputs.push_back(s.inputs);
    step_outputs.push_back(s.outputs);
    alias_step.push_back(s.kind == jit::LoweredStep::Kind::alias);
    bool watched = s.hides_low_precision;
    for (ValueId v : s.outputs) watched = watched || (v != kNoValue && low_precision(impl->storage[v]));
    in_place.push_back(!gpu && !watched && s.kind == jit::LoweredStep::Kind::kernel ? jit::c_in_place_input(lowered[i].spec)
                                                                                    : -1);
  }
  if (impl->dynamic.graph) {  // runs last; its values live on the host
    step_inputs.push_back(impl->dynamic.inputs);
    step_outputs.emplace_back();
    alias_step.push_back(false);
  }
  std::vector<size_t> bytes(g->values().size());
  for (size_t v = 0; v < bytes.size(); ++v)
    bytes[v] = impl->dynamic.value_in_region[v] ? 0 : impl->value_bytes(static_cast<ValueId>(v));
  impl->plan = plan_memory(*g, bytes, step_inputs, step_outputs, alias_step, in_place);
  impl->stats.in_place_steps = impl->plan.in_place_steps;
  // Weights first: with a weight cache, a large one shares the device copy other executables made
  // of the same tensor in the same format.
  impl->buffers.resize(impl->plan.slot_bytes.size());
  std::vector<bool> filled(impl->buffers.size(), false);
  auto* shared = dynamic_cast<SharedWeights*>(impl_->options.weight_cache.get());
  for (size_t v = 0; v < bytes.size(); ++v) {
    const std::shared_ptr<const Tensor>& c = g->value(static_cast<ValueId>(v)).constant;
    const int slot = impl->plan.slot_of[v];
    if (!c || slot < 0) continue;
    impl->stats.weight_bytes += static_cast<int64_t>(bytes[v]);
    if (!shared || bytes[v] < SharedWeights::kMinDeviceBytes || impl->plan.slot_bytes[slot] != bytes[v]) continue;
    const DType format = impl->storage[v];
    HPF_ASSIGN_OR_RETURN(impl->buffers[slot],
                         shared->device_copy(c, format, impl_->plugin, impl_->device, bytes[v],
                                             [&](Buffer& b) { return Executable::Impl::upload_to(b, 0, *c, format); }));
    filled[slot] = true;
  }
  for (size_t sl = 0; sl < impl->plan.slot_bytes.size(); ++sl) {
    if (impl->buffers[sl]) continue;
    auto b = impl_->plugin->alloc(impl_->device, std::max<size_t>(impl->plan.slot_bytes[sl], 1));
    if (!b.ok()) return b.status();
    impl->buffers[sl] = std::make_shared<Buffer>(std::move(b).value());
  }
  for (size_t v = 0; v < bytes.size(); ++v)
    if (const Tensor* c = g->constant(static_cast<ValueId>(v)); c && impl->plan.slot_of[v] >= 0 && !filled[impl->plan.slot_of[v]])
      HPF_RETURN_IF_ERROR(impl->upload(static_cast<ValueId>(v), *c));
  for (ValueId v : g->inputs()) impl->input_shapes.push_back(impl->shapes[v]);
  for (ValueId v : g->outputs()) impl->output_names.push_back(g->value(v).name);
  impl->graph = std::move(g);
  impl->stats.ms = ms_since(t0);
  return Executable(std::move(impl));
}

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;
const CompileStats& Executable::compile_stats() const { return impl_->stats; }
size_t Executable::peak_memory_bytes() const { return impl_->plan.total_bytes; }
const std::vector<std::string>& Executable::output_names() const { return impl_->output_names; }
void Executable::set_overflow_watch(bool on) { impl_->overflow_watch = on; }
void Executable::set_step_timing(bool on) { impl_->step_timing = on; }
const std::vector<OverflowHit>& Executable::overflow_hits() const { return impl_->hits; }

Status Executable::Impl::check_overflow(Step& s) {
  bool suspect = false;
  for (ValueId v : s.outputs) {  // every step output is materialised (has a slot)
    if (v == kNoValue || !is_float(storage[v]) || (!low_precision(storage[v]) && !s.hides_low_precision) ||
        plan.slot_of[v] < 0)
      continue;
    HPF_ASSIGN_OR_RETURN(Tensor t, download(v));
    if ((suspect = has_non_finite(t))) break;
  }
  if (!suspect) return Status();
  for (ValueId v : s.inputs) {  // Inf/NaN coming in is not this step's doing
    if (v == kNoValue || !is_float(storage[v])) continue;
    HPF_ASSIGN_OR_RETURN(Tensor t, download(v));
    if (has_non_finite(t)) return Status();
  }
  const Graph& g = *graph;
  if (!s.fp32) {
    HPF_ASSIGN_OR_RETURN(s.fp32, nodes_as_graph(g, s.nodes, shapes, s.fp32_inputs, s.fp32_outputs));
  }
  std::vector<Tensor> ins;
  for (ValueId v : s.fp32_inputs) {
    HPF_ASSIGN_OR_RETURN(Tensor t, download(v));
    ins.push_back(t.dtype() == g.value(v).dtype ? std::move(t) : t.cast(g.value(v).dtype));
  }
  HPF_ASSIGN_OR_RETURN(auto outs, ref::run(*s.fp32, ins));
  for (size_t k = 0; k < s.fp32_outputs.size(); ++k) {
    const ValueId v = s.fp32_outputs[k];
    if (!low_precision(storage[v]) || outs[k].dtype() != DType::F32) continue;
    const Tensor stored = outs[k].cast(storage[v], Overflow::propagate);
    const std::vector<float> y = outs[k].to_f32(), z = stored.to_f32();
    OverflowHit h{g.node(g.value(v).producer).name, g.value(v).name, storage[v], 0, 0};
    for (size_t i = 0; i < y.size(); ++i)
      if (std::isfinite(y[i])) {
        h.fp32_amax = std::max(h.fp32_amax, static_cast<double>(std::fabs(y[i])));
        if (!std::isfinite(z[i])) ++h.elements;
      }
    if (h.elements > 0) hits.push_back(std::move(h));
  }
  return Status();
}

Status Executable::save_timings() {
  if (!impl_->cache || !impl_->cache->enabled()) return {};
  // Per kernel (steps may share one): launches and time since compile.
  std::map<std::string, std::pair<const CacheKey*, std::pair<double, int64_t>>> per_kernel;
  for (const Step& st : impl_->steps)
    if (st.key && st.calls > 0) {
      auto& e = per_kernel[st.key->id()];
      e.first = &*st.key;
      e.second.first += st.total_ms;
      e.second.second += st.calls;
    }
  const int32_t units = impl_->plugin->devices()[impl_->device].compute_units;
  for (auto& [id, e] : per_kernel) {
    nlohmann::json meta = cached_meta(*impl_->cache, *e.first);
    const CachedTime old = cached_run_ms(meta, units);
    const double now = e.second.first / double(e.second.second);
    meta.erase("run_ms");  // the unit-less form of earlier versions
    meta.erase("runs");
    if (!meta.contains("by_units") || !meta["by_units"].is_object()) meta["by_units"] = nlohmann::json::object();
    meta["by_units"][std::to_string(units)] = {{"run_ms", old.ms > 0 ? std::min(old.ms, now) : now},
                                               {"runs", old.runs + e.second.second},
                                               {"measurements", old.measurements + 1}};
    HPF_RETURN_IF_ERROR(impl_->cache->set_meta(*e.first, meta.dump()));
  }
  return {};
}

void Executable::clear_profile() {
  for (Step& s : impl_->steps) {
    s.calls = 0;
    s.total_ms = 0;
  }
  impl_->dynamic.calls = 0;
  impl_->dynamic.total_ms = 0;
}

std::vector<StepProfile> Executable::profile() const {
  std::vector<StepProfile> out;
  for (const Step& s : impl_->steps)
    if (s.kind != jit::LoweredStep::Kind::alias) {
      out.push_back({s.label, s.kind == jit::LoweredStep::Kind::kernel ? "kernel" : "fallback", s.calls, s.total_ms, {},
                     s.cached_ms, s.cached_measurements});
      for (int32_t id : s.nodes) out.back().nodes.push_back(impl_->graph->node(id).name);
    }
  const DynamicRegion& d = impl_->dynamic;
  if (d.graph)
    out.push_back({"dynamic region (" + std::to_string(d.nodes) + " nodes)", "fallback", d.calls, d.total_ms, {}});
  return out;
}

Expected<std::vector<Tensor>> Executable::run(const std::vector<Tensor>& inputs) {
  Impl& m = *impl_;
  const Graph& g = *m.graph;
  m.hits.clear();
  if (inputs.size() != g.inputs().size())
    return Status::invalid("run: graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) + " inputs, got " +
                           std::to_string(inputs.size()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueId v = g.inputs()[k];
    const Value& val = g.value(v);
    if (inputs[k].dtype() != val.dtype)
      return Status::invalid("run: input '" + val.name + "': expected dtype " + std::string(dtype_name(val.dtype)) +
                             ", got " + std::string(dtype_name(inputs[k].dtype())));
    if (inputs[k].shape() != m.input_shapes[k])
      return Status::invalid("run: input '" + val.name + "': compiled for shape " + shape_string(m.input_shapes[k]) +
                             ", got " + shape_string(inputs[k].shape()));
    HPF_RETURN_IF_ERROR(m.upload(v, inputs[k]));
  }
  std::vector<void*> args;
  for (Step& s : m.steps) {
    if (s.kind == jit::LoweredStep::Kind::alias) continue;
    const auto t0 = Clock::now();
    if (s.kind == jit::LoweredStep::Kind::kernel) {
      args.clear();
      for (ValueId v : s.inputs) args.push_back(m.pointer(v));
      for (ValueId v : s.outputs) args.push_back(m.pointer(v));
      Launch l;
      l.args = args;
      l.work_items = s.work_items;
      l.grain = s.grain;
      Status st = s.kernel.launch(l);
      if (!st.ok()) return st.with_context("step '" + s.label + "'");
      if (m.queued && m.step_timing) HPF_RETURN_IF_ERROR(m.plugin->synchronize(m.device).with_context("step '" + s.label + "'"));
    } else {
      std::vector<Tensor> ins;
      for (ValueId v : s.inputs) {
        if (v == kNoValue) continue;
        HPF_ASSIGN_OR_RETURN(Tensor t, m.download(v));
        ins.push_back(std::move(t));
      }
      auto outs = ref::run(*s.fallback, ins);
      if (!outs.ok()) return outs.status().with_context("step '" + s.label + "' (reference fallback)");
      for (size_t k = 0; k < s.outputs.size(); ++k)
        if (s.outputs[k] != kNoValue) HPF_RETURN_IF_ERROR(m.upload(s.outputs[k], (*outs)[k]));
    }
    // (A queued launch, untimed, returned before its work was done.)
    if (!m.queued || m.step_timing || s.kind != jit::LoweredStep::Kind::kernel) {
      s.total_ms += ms_since(t0);
      ++s.calls;
    }
    if (m.overflow_watch) HPF_RETURN_IF_ERROR(m.check_overflow(s).with_context("overflow watch, step '" + s.label + "'"));
  }
  std::vector<Tensor> dynamic_out;
  if (DynamicRegion& d = m.dynamic; d.graph) {
    const auto t0 = Clock::now();
    std::vector<Tensor> ins;
    for (ValueId v : d.inputs) {
      HPF_ASSIGN_OR_RETURN(Tensor t, m.download(v));
      ins.push_back(t.dtype() == g.value(v).dtype ? std::move(t) : t.cast(g.value(v).dtype));
    }
    auto outs = ref::run(*d.graph, ins);
    if (!outs.ok()) return outs.status().with_context("dynamic region (reference interpreter)");
    dynamic_out = std::move(outs).value();
    d.total_ms += ms_since(t0);
    ++d.calls;
  }
  std::vector<Tensor> out;
  for (ValueId v : g.outputs()) {
    if (m.dynamic.value_in_region[v]) {
      const auto at = std::find(m.dynamic.outputs.begin(), m.dynamic.outputs.end(), v) - m.dynamic.outputs.begin();
      out.push_back(dynamic_out[at]);
      continue;
    }
    HPF_ASSIGN_OR_RETURN(Tensor t, m.download(v));
    out.push_back(t.dtype() == g.value(v).dtype ? std::move(t) : t.cast(g.value(v).dtype));
  }
  return out;
}

}  // namespace hpf
