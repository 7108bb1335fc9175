// hpf bench MODEL: per precision plan, fidelity against the FP32 reference, throughput, memory,
// estimated energy and cold start; and the same model on every loaded backend and on the
// reference interpreter, compared pairwise. Text table, --json, or a markdown report with an SVG
// chart (bench_report.hpp).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "apps/hpf/bench_report.hpp"
#include "apps/hpf/cli.hpp"
#include "apps/hpf/flop_count.hpp"
#include "apps/hpf/run_common.hpp"
#include "hpf/cpu_info.hpp"
#include "hpf/divergence.hpp"
#include "hpf/hpf.hpp"
#include "hpf/hwdb.hpp"
#include "hpf/live.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/session.hpp"
#include "plugins/cuda/cuda_power.h"

namespace hpf::cli {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct BenchArgs : ModelSpec {
  std::string model;
  std::vector<std::string> plans = {"fp32", "bf16", "auto"};
  int threads = 0;  // 0: the plugin's default
  int64_t runs = 10, warmup = 2;
  bool json = false, autotune = false;
  std::string report;          // --report FILE.md
  std::string save_plan;       // --save-plan FILE: the first planned plan (auto or a policy)
  std::set<std::string> skip;  // --skip cold-start,consistency
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Expected<BenchArgs> parse_bench(const std::vector<std::string>& argv) {
  HPF_ASSIGN_OR_RETURN(Args a, parse_args("bench", argv, {"--json", "--autotune"},
                                          {"--plans", "--threads", "--runs", "--warmup", "--report", "--skip", "--batch",
                                           "--seed", "--random-inputs", "--input", "--dim", "--kl-budget", "--kl-margin", "--calib", "--device",
                                           "--save-plan"}));
  BenchArgs r;
  if (a.positional.empty()) return Status::invalid("bench needs a MODEL (an ONNX file or builtin:NAME)");
  if (a.positional.size() > 1) return Status::invalid("unexpected argument '" + a.positional[1] + "'");
  r.model = a.positional[0];
  HPF_RETURN_IF_ERROR(parse_model_spec(a, r));
  if (a.options.count("--plans")) r.plans = split_commas(a.option("--plans"));
  if (r.plans.empty()) return Status::invalid("--plans: no plan given");
  HPF_ASSIGN_OR_RETURN(int64_t threads, int_option(a, "--threads", 1, 0));
  r.threads = static_cast<int>(threads);
  HPF_ASSIGN_OR_RETURN(r.runs, int_option(a, "--runs", 1, r.runs));
  HPF_ASSIGN_OR_RETURN(r.warmup, int_option(a, "--warmup", 0, r.warmup));
  r.json = a.flag("--json");
  r.autotune = a.flag("--autotune");
  r.report = a.option("--report");
  r.save_plan = a.option("--save-plan");
  for (const std::string& s : split_commas(a.option("--skip"))) {
    if (s != "cold-start" && s != "consistency")
      return Status::invalid("--skip: unknown part '" + s + "' (cold-start, consistency)");
    r.skip.insert(s);
  }
  return r;
}

// "cpu" from "cpu: AMD EPYC ... (zen3)" (CompileStats::device, Session::device).
std::string plugin_of(const std::string& device) { return device.substr(0, device.find(':')); }

// Per output, how it is compared (the planner's metric: kl-softmax for logits, ...); nullopt for
// integer and bool outputs, which must match exactly.
std::vector<std::optional<OutputMetric>> metrics_of(const Graph& g, const std::vector<Tensor>& ref) {
  std::vector<std::optional<OutputMetric>> out(ref.size());
  auto all = output_metrics_for(g, {ref}, "kl");  // every output float: the planner's own choice
  for (size_t o = 0; o < ref.size(); ++o) {
    if (all.ok()) out[o] = (*all)[o];
    else if (is_float(ref[o].dtype())) out[o] = detect_output_metric({&ref[o]});
  }
  return out;
}

// A JSON number, or null for NaN/Inf (JSON has neither).
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// `test` against `ref` (both the graph's outputs): the divergence the planner budgets (per
// output its metric, then the largest), top-1 agreement and rel-L2 of the watched output, and
// the largest relative error max|test - ref| / max|ref| over the float outputs.
json compare_outputs(const Graph& g, const std::vector<Tensor>& ref, const std::vector<Tensor>& test,
                     const std::vector<std::optional<OutputMetric>>& metrics, size_t watched) {
  json per_output = json::array();
  double kl = 0, max_rel = 0;
  bool non_finite = false, ints_identical = true;
  for (size_t o = 0; o < ref.size() && o < test.size(); ++o) {
    const std::string& name = g.value(g.outputs()[o]).name;
    if (!metrics[o]) {
      const bool same = ref[o].shape() == test[o].shape() && ref[o].to_i64() == test[o].to_i64();
      ints_identical = ints_identical && same;
      per_output.push_back({{"name", name}, {"metric", "exact"}, {"identical", same}});
      continue;
    }
    auto d = output_divergence(*metrics[o], ref[o], test[o]);
    const double div = d.ok() ? *d : std::numeric_limits<double>::infinity();
    const std::vector<float> r = ref[o].to_f32(), t = test[o].to_f32();
    double amax = 0, emax = 0;
    for (size_t k = 0; k < r.size() && k < t.size(); ++k) {
      amax = std::max(amax, std::fabs(double(r[k])));
      const double e = std::fabs(double(t[k]) - double(r[k]));
      if (std::isfinite(r[k]) && !std::isfinite(t[k])) non_finite = true;
      emax = std::isnan(e) ? emax : std::max(emax, e);
    }
    const double rel = emax / std::max(amax, 1e-30);
    kl = std::isnan(div) ? std::numeric_limits<double>::infinity() : std::max(kl, div);
    max_rel = std::max(max_rel, rel);
    per_output.push_back({{"name", name}, {"metric", output_metric_name(*metrics[o])}, {"divergence", number(div)},
                          {"max_rel_error", number(rel)}});
  }
  json j = {{"kl", number(kl)}, {"max_rel_error", number(max_rel)}, {"non_finite", non_finite},
            {"outputs", per_output}};
  if (!ints_identical) j["integer_outputs_identical"] = false;
  if (watched < ref.size() && metrics[watched]) {
    auto d = compare(ref[watched], test[watched]);
    if (d.ok())
      j.update({{"watched", g.value(g.outputs()[watched]).name}, {"top1_agreement", d->top1_agreement},
                {"rel_l2", number(d->rel_l2)}, {"max_abs_error", number(d->max_abs_error)}});
  }
  return j;
}

// What the energy estimate rests on: the hwdb product of the bench's device and its TDP.
struct PowerSource {
  std::string product;          // hwdb product name ("" when none matched)
  std::optional<double> tdp_w;  // from the hwdb row
  std::string note;             // how it was matched, or why there is no figure
};

// The device a Session with SessionOptions::plugin = `name` takes: that plugin's best-scoring one.
Expected<DeviceChoice> device_of_plugin(const std::string& name) {
  Plugin* p = PluginHost::shared().plugin(name);
  if (!p || p->devices().empty()) return Status::not_found("--device: no plugin '" + name + "' is loaded (hpf info lists them)");
  return DeviceChoice{p, p->best_device().index};
}

PowerSource power_source(const DeviceChoice& device) {
  PowerSource p;
  auto db = hwdb::Database::open();
  if (!db.ok()) {
    p.note = "no hwdb: " + db.status().message();
    return p;
  }
  const DeviceRecord& d = device.info();
  auto product = device.plugin->name() == "cpu" ? db->match_cpu(detect_cpu())
                                                : db->match_device({d.name, d.architecture, d.compute_units, d.memory_bytes});
  if (!product.ok()) {
    p.note = "no hwdb row for " + device.info().name + ": " + product.status().message();
    return p;
  }
  p.product = product->name;
  p.tdp_w = product->tdp_w;
  p.note = product->note;
  if (!p.tdp_w) p.note = "no TDP in hwdb" + (product->note.empty() ? "" : " (" + product->note + ")");
  return p;
}

// The device's energy counter in millijoules, where its plugin has one: the CUDA plugin's NVML
// extension (plugins/cuda/cuda_power.h), found on the plugin file the host loaded. Empty: none
// (other plugins, no NVML, a compile-only target), and TOPS/W stays an estimate.
std::function<std::optional<uint64_t>()> energy_counter(const DeviceChoice& d) {
  if (d.plugin->name() != "cuda") return {};
  void* so = dlopen(d.plugin->path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  auto get = so ? reinterpret_cast<hpf_cuda_power_api_fn>(dlsym(so, HPF_CUDA_POWER_ENTRY_POINT)) : nullptr;
  const hpf_cuda_power_api* api = get ? get() : nullptr;
  if (!api || api->struct_size < offsetof(hpf_cuda_power_api, energy_mj) + sizeof(api->energy_mj)) return {};
  Plugin* plugin = d.plugin;
  const int32_t device = d.device;
  auto read = [api, plugin, device]() -> std::optional<uint64_t> {
    uint64_t mj = 0;
    if (hpf_error* e = api->energy_mj(plugin->handle(), device, &mj)) {
      plugin->api().error_destroy(e);
      return std::nullopt;
    }
    return mj;
  };
  if (!read()) return {};
  return read;
}

json energy_json(double flops, double median_ms, const PowerSource& p, std::optional<double> measured_w) {
  const double seconds = median_ms / 1000;
  if (measured_w && *measured_w > 0 && seconds > 0)
    return {{"tops_per_w", flops / seconds / 1e12 / *measured_w}, {"joules_per_inference", *measured_w * seconds},
            {"watts", *measured_w}, {"source", "measured: the device's energy counter over the timed runs"}};
  if (!p.tdp_w || seconds <= 0)
    return {{"tops_per_w", nullptr}, {"joules_per_inference", nullptr},
            {"source", p.note.empty() ? "no TDP in hwdb" : p.note}};
  return {{"tops_per_w", flops / seconds / 1e12 / *p.tdp_w},
          {"joules_per_inference", *p.tdp_w * seconds},
          {"watts", *p.tdp_w},
          {"source", "estimate: hwdb TDP of " + p.product + " (" + std::to_string(int(std::lround(*p.tdp_w))) +
                         " W) times the measured median latency, as if the package drew its full TDP"}};
}

std::map<std::string, int> modes_of(const Plan& plan) {
  std::map<std::string, int> m;
  for (const NodePlan& n : plan.nodes) ++m[mode_name(n.mode)];
  return m;
}

struct Timed {
  std::vector<double> ms;
  std::vector<Tensor> outputs;
  std::optional<double> watts;  // measured over the timed runs, where the device has a counter
};

// `warmup` untimed runs, then `runs` timed ones; with an energy counter, the mean power over the
// timed runs.
Expected<Timed> time_runs(LiveExecutable& live, const std::vector<Tensor>& inputs, int64_t warmup, int64_t runs,
                          const std::function<std::optional<uint64_t>()>& energy_mj) {
  Timed t;
  for (int64_t r = 0; r < warmup; ++r) HPF_RETURN_IF_ERROR(live.run(inputs).status());
  const std::optional<uint64_t> first = energy_mj ? energy_mj() : std::nullopt;
  const uint64_t e0 = first.value_or(0);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    HPF_ASSIGN_OR_RETURN(t.outputs, live.run(inputs));
    t.ms.push_back(ms_since(t0));
  }
  const double seconds = ms_since(start) / 1000;
  if (first) {
    const std::optional<uint64_t> e1 = energy_mj();
    if (e1 && *e1 > e0 && seconds > 0) t.watts = double(*e1 - e0) / 1000 / seconds;
  }
  return t;
}

// Time to the first output: LiveExecutable::create, its compile on first sight, the first run.
struct FirstRun {
  double ms = 0;
  LiveExecutable live;
};
Expected<FirstRun> first_output(const Graph& g, const LiveOptions& lo, const std::vector<Tensor>& inputs) {
  const auto t0 = std::chrono::steady_clock::now();
  HPF_ASSIGN_OR_RETURN(LiveExecutable live, LiveExecutable::create(g, lo));
  HPF_RETURN_IF_ERROR(live.run(inputs).status());
  return FirstRun{ms_since(t0), std::move(live)};
}

LiveOptions live_options(const SessionOptions& so) {
  LiveOptions lo;
  lo.session = so;
  lo.overflow_watch_runs = 1;       // the same inputs every run: watching the first is enough
  lo.check_slow_kernels = false;    // each plan is measured as planned, not re-planned mid-run
  lo.batch_buckets = 0;             // the batch measured is the batch run, unpadded
  return lo;
}

struct Context {
  const BenchArgs& args;
  Graph& g;
  const std::vector<Tensor>& inputs;
  const std::vector<Tensor>& reference;
  const std::vector<std::optional<OutputMetric>>& metrics;
  size_t watched;
  double flops;
  const PowerSource& power;
  std::function<std::optional<uint64_t>()> energy_mj;  // the device's counter (empty: none)
  std::map<std::string, std::vector<Tensor>>& fp32_by_plugin;  // for the consistency table
  bool plan_saved = false;  // --save-plan written
};

// One plan end to end. Errors are the plan's own; the caller records them and goes on.
Expected<json> bench_plan(Context& c, const std::string& plan_arg, int index) {
  json j = {{"plan", plan_arg}};
  SessionOptions so;
  so.plugin = c.args.device;
  HPF_ASSIGN_OR_RETURN(Session session, Session::create(so));
  json planner;
  bool usage_error = false;
  const auto tp = std::chrono::steady_clock::now();
  auto chosen = choose_plan(c.g, c.args, plan_arg, so, session.device_formats(), /*quiet=*/true, planner, &usage_error);
  if (!chosen.ok()) return chosen.status();
  const double plan_ms = ms_since(tp);
  j["label"] = chosen->label;
  j["plan_ms"] = plan_ms;
  if (planner.contains("planner")) j["planner"] = planner["planner"];
  so.plan = chosen->plan;
  so.autotune = c.args.autotune;  // not while planning: the planner's trial plans run untuned
  if (!c.args.save_plan.empty() && planner.contains("planner") && !c.plan_saved) {
    // The plan the planner made, to bench again later without planning (bench/ort_e2e.py's rounds).
    HPF_RETURN_IF_ERROR(chosen->plan->save(c.args.save_plan));
    c.plan_saved = true;
    j["saved_to"] = c.args.save_plan;
  }

  // Cold start: a fresh, empty kernel cache; then a second executable on that cache (warm).
  // The cache is removed on every way out, after the executables that use it (declared first,
  // destroyed last).
  struct TempCache {
    fs::path dir;
    ~TempCache() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cache;
  std::optional<LiveExecutable> live;
  const bool cold = !c.args.skip.count("cold-start");
  if (cold) {
    cache.dir = fs::temp_directory_path() / ("hpf-bench-cache-" + std::to_string(::getpid()) + "-" + std::to_string(index));
    fs::remove_all(cache.dir);
    so.cache_dir = cache.dir.string();
    HPF_ASSIGN_OR_RETURN(FirstRun first, first_output(c.g, live_options(so), c.inputs));
    const CompileStats cold_stats = first.live.current()->compile_stats();
    HPF_ASSIGN_OR_RETURN(FirstRun second, first_output(c.g, live_options(so), c.inputs));
    const CompileStats& warm_stats = second.live.current()->compile_stats();
    j["cold_start"] = {{"empty_cache_ms", first.ms},
                       {"warm_cache_ms", second.ms},
                       {"empty_cache", {{"compile_ms", cold_stats.ms}, {"cache_misses", cold_stats.cache_misses},
                                        {"cache_hits", cold_stats.cache_hits}}},
                       {"warm_cache", {{"compile_ms", warm_stats.ms}, {"cache_misses", warm_stats.cache_misses},
                                       {"cache_hits", warm_stats.cache_hits}}},
                       {"note", "in-process time from LiveExecutable::create to the first output (compile, load, "
                                "first run); plugins already loaded; a temporary kernel cache"}};
    live.emplace(std::move(second.live));
  } else {
    HPF_ASSIGN_OR_RETURN(LiveExecutable l, LiveExecutable::create(c.g, live_options(so)));
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& t : c.inputs) shapes.push_back(t.shape());
    HPF_RETURN_IF_ERROR(live.emplace(std::move(l)).prepare(shapes));
  }
  auto timed = time_runs(*live, c.inputs, c.args.warmup, c.args.runs, c.energy_mj);
  if (!timed.ok()) return timed.status();

  const Executable* exe = live->current();
  const CompileStats& st = exe->compile_stats();
  const double med = median(timed->ms);
  const double lo = *std::min_element(timed->ms.begin(), timed->ms.end());
  const double hi = *std::max_element(timed->ms.begin(), timed->ms.end());
  j["device"] = st.device;
  j["fidelity"] = compare_outputs(c.g, c.reference, timed->outputs, c.metrics, c.watched);
  j["latency_ms"] = {{"median", med}, {"min", lo}, {"max", hi}, {"runs", c.args.runs}, {"warmup", c.args.warmup}};
  j["inferences_per_s"] = med > 0 ? 1000.0 * double(c.args.batch) / med : 0.0;
  j["gflops"] = med > 0 ? c.flops / (med / 1000) / 1e9 : 0.0;
  j["memory"] = {{"peak_bytes", exe->peak_memory_bytes()}, {"weight_bytes", st.weight_bytes}};
  j["energy"] = energy_json(c.flops, med, c.power, timed->watts);
  j["compile"] = {{"kernels", st.kernels}, {"fallbacks", st.fallbacks}, {"fallback_nodes", st.fallback_nodes},
                  {"standalone_casts", st.standalone_casts}, {"tuned_kernels", st.tuned_kernels}};
  json events = json::array();
  for (const RecompileEvent& e : live->events())
    if (e.cause != "new_shape") events.push_back(e.describe());
  j["recompiles"] = events;
  if (auto p = live->plan()) j["modes"] = modes_of(*p);
  else j["modes"] = {{"fp32", c.g.nodes().size()}};
  if (plan_arg == "fp32" && !c.fp32_by_plugin.count(plugin_of(st.device)))
    c.fp32_by_plugin[plugin_of(st.device)] = timed->outputs;
  return j;
}

// The FP32 plan on every usable plugin (a device scoring above 0) and on the reference
// interpreter; each pair compared, KL(first || second).
json consistency(Context& c) {
  std::vector<std::pair<std::string, const std::vector<Tensor>*>> runs = {{"reference", &c.reference}};
  json backends = json::array({{{"name", "reference"}, {"device", "reference interpreter (FP32 storage, FP64 accumulation)"}}});
  const PluginHost& host = PluginHost::shared();
  for (size_t k = 0; k < host.records().size(); ++k) {
    const PluginRecord& rec = host.records()[k];
    if (!rec.usable || !host.plugin_at(k)) continue;
    json b = {{"name", rec.name}};
    auto have = c.fp32_by_plugin.find(rec.name);
    if (have == c.fp32_by_plugin.end()) {
      SessionOptions so;
      so.plugin = rec.name;
      auto session = Session::create(so);
      auto plan = session.ok() ? plan_from_policy(c.g, Policy::uniform(Mode::fp32), session->device_formats())
                               : Expected<Plan>(session.status());
      if (!plan.ok()) {
        b["error"] = plan.status().to_string();
        backends.push_back(b);
        continue;
      }
      so.plan = std::make_shared<const Plan>(std::move(plan).value());
      auto live = LiveExecutable::create(c.g, live_options(so));
      auto out = live.ok() ? live->run(c.inputs) : Expected<std::vector<Tensor>>(live.status());
      if (!out.ok()) {
        b["error"] = out.status().to_string();
        backends.push_back(b);
        continue;
      }
      b["device"] = live->device();
      have = c.fp32_by_plugin.emplace(rec.name, std::move(out).value()).first;
    }
    backends.push_back(b);
    runs.emplace_back(rec.name, &have->second);
  }
  json pairs = json::array();
  for (size_t a = 0; a < runs.size(); ++a)
    for (size_t b = a + 1; b < runs.size(); ++b) {
      json cmp = compare_outputs(c.g, *runs[a].second, *runs[b].second, metrics_of(c.g, *runs[a].second), c.watched);
      pairs.push_back({{"a", runs[a].first}, {"b", runs[b].first}, {"kl", cmp["kl"]},
                       {"max_rel_error", cmp["max_rel_error"]}, {"top1_agreement", cmp.value("top1_agreement", json(nullptr))}});
    }
  return {{"plan", "fp32"}, {"backends", backends}, {"pairs", pairs}};
}

std::string fmt(const char* f, double v) { return format_double(f, v); }
std::string fmt_or_dash(const char* f, const json& v) { return v.is_number() ? fmt(f, v.get<double>()) : "-"; }

void print_text(const json& j) {
  std::printf("libhpf %s  hpf bench %s\n", hpf::version(), j["model"].get<std::string>().c_str());
  std::printf("device   %s, threads %s (device pool %d)\n", j["device"].get<std::string>().c_str(),
              j["threads"].is_number() ? std::to_string(j["threads"].get<int>()).c_str() : "plugin default",
              j["device_threads"].get<int>());
  std::printf("model    %lld nodes, %.4g GFLOP per inference (2 per multiply-add; --json flop_count says how)\n",
              j["nodes"].get<long long>(), j["flops"].get<double>() / 1e9);
  std::printf("ref      %.1f ms on the reference interpreter\n", j["reference_ms"].get<double>());
  std::printf("energy   %s\n\n", j["energy_source"].get<std::string>().c_str());
  std::printf("%-10s %10s %6s %10s %10s %9s %9s %9s %9s %10s %10s %9s %9s %9s\n", "plan", "KL", "top-1", "max rel",
              "median ms", "min", "max", "inf/s", "GFLOP/s", "peak", "weights", "TOPS/W*", "cold ms", "warm ms");
  for (const json& p : j["plans"]) {
    if (p.contains("error")) {
      std::printf("%-10s error: %s\n", p["plan"].get<std::string>().c_str(), p["error"].get<std::string>().c_str());
      continue;
    }
    const json& f = p["fidelity"];
    const json& l = p["latency_ms"];
    const json cs = p.value("cold_start", json::object());
    std::printf("%-10s %10s %5s%% %10s %10.3f %9.3f %9.3f %9.1f %9.2f %10s %10s %9s %9s %9s\n",
                p["plan"].get<std::string>().c_str(), fmt_or_dash("%.3e", f["kl"]).c_str(),
                f.contains("top1_agreement") ? fmt("%.0f", 100 * f["top1_agreement"].get<double>()).c_str() : "-",
                fmt_or_dash("%.3e", f["max_rel_error"]).c_str(), l["median"].get<double>(), l["min"].get<double>(),
                l["max"].get<double>(), p["inferences_per_s"].get<double>(), p["gflops"].get<double>(),
                human_bytes(p["memory"]["peak_bytes"].get<double>()).c_str(),
                human_bytes(p["memory"]["weight_bytes"].get<double>()).c_str(),
                fmt_or_dash("%.4f", p["energy"]["tops_per_w"]).c_str(),
                fmt_or_dash("%.0f", cs.value("empty_cache_ms", json(nullptr))).c_str(),
                fmt_or_dash("%.0f", cs.value("warm_cache_ms", json(nullptr))).c_str());
  }
  std::printf("(* TOPS/W: %s)\n", j["plans"].empty() || !j["plans"][0].contains("energy")
                                      ? "-"
                                      : j["plans"][0]["energy"]["source"].get<std::string>().c_str());
  if (j.contains("consistency")) {
    std::printf("\nconsistency (fp32 plan on each backend; KL(a || b))\n%-12s %-12s %12s %12s %7s\n", "a", "b", "KL",
                "max rel", "top-1");
    for (const json& p : j["consistency"]["pairs"])
      std::printf("%-12s %-12s %12s %12s %6s%%\n", p["a"].get<std::string>().c_str(), p["b"].get<std::string>().c_str(),
                  fmt_or_dash("%.3e", p["kl"]).c_str(), fmt_or_dash("%.3e", p["max_rel_error"]).c_str(),
                  p["top1_agreement"].is_number() ? fmt("%.0f", 100 * p["top1_agreement"].get<double>()).c_str() : "-");
    for (const json& b : j["consistency"]["backends"])
      if (b.contains("error"))
        std::printf("backend %s: %s\n", b["name"].get<std::string>().c_str(), b["error"].get<std::string>().c_str());
  }
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  auto args = parse_bench(argv);
  if (!args.ok()) return fail(args.status().message(), 2);
  // The CPU plugin reads HPF_NUM_THREADS in plugin_init, which runs when the plugins are first
  // loaded (below): set it before anything touches PluginHost::shared().
  if (args->threads > 0) setenv("HPF_NUM_THREADS", std::to_string(args->threads).c_str(), 1);
  auto say = [&](const char* fmt, auto... xs) {
    if (!args->json && isatty(fileno(stderr))) std::fprintf(stderr, fmt, xs...);
  };

  auto graph = load_model(args->model);
  if (!graph.ok()) return fail(graph.status().message());
  Graph& g = *graph;
  std::vector<std::string> sources;
  auto inputs = make_inputs(g, *args, sources);
  if (!inputs.ok()) return fail(inputs.status().message());
  const FlopCount flops = count_flops(g);

  auto device = args->device.empty() ? PluginHost::shared().best_device() : device_of_plugin(args->device);
  if (!device.ok()) return fail(device.status().message());
  const PowerSource power = power_source(*device);

  say("reference run...\n");
  auto t0 = std::chrono::steady_clock::now();
  auto ref = ref::run(g, *inputs);
  if (!ref.ok()) return fail(ref.status().to_string());
  const double ref_ms = ms_since(t0);
  const auto metrics = metrics_of(g, *ref);
  size_t watched = ref->size();
  for (size_t k = 0; k < ref->size(); ++k)
    if (watched == ref->size() && metrics[k]) watched = k;
  for (size_t k = 0; k < ref->size(); ++k)
    if (g.value(g.outputs()[k]).name == "logits" && metrics[k]) watched = k;

  std::map<std::string, std::vector<Tensor>> fp32_by_plugin;
  Context c{*args, g, *inputs, *ref, metrics, watched, flops.total, power, energy_counter(*device), fp32_by_plugin};

  json j;
  j["model"] = args->model;
  j["device"] = device->plugin->name() + ": " + device->info().name + " (" + device->info().architecture + ")";
  j["threads"] = args->threads > 0 ? json(args->threads) : json("plugin default");
  j["hardware_threads"] = std::thread::hardware_concurrency();
  // The device's own count (the CPU plugin: its thread pool), which shows --threads took effect.
  j["device_threads"] = device->info().compute_units;
  j["batch"] = args->batch;
  j["nodes"] = g.nodes().size();
  j["inputs"] = json::array();
  for (size_t k = 0; k < inputs->size(); ++k)
    j["inputs"].push_back({{"name", g.value(g.inputs()[k]).name}, {"shape", (*inputs)[k].shape()},
                           {"dtype", std::string(dtype_name((*inputs)[k].dtype()))}, {"source", sources[k]}});
  j["flops"] = flops.total;
  j["flops_by_op"] = flops.by_op;
  j["flop_count"] = flop_count_rule();
  if (!flops.unknown.empty()) j["flops_unknown_nodes"] = flops.unknown;
  j["reference_ms"] = ref_ms;
  j["kl_budget"] = args->kl_budget;
  j["hwdb"] = {{"product", power.product}, {"tdp_w", power.tdp_w ? json(*power.tdp_w) : json(nullptr)},
               {"note", power.note}};
  j["energy_source"] = c.energy_mj ? "measured: the device's energy counter over the timed runs"
                       : power.tdp_w ? "estimate from the hwdb TDP of " + power.product
                                     : (power.note.empty() ? std::string("no TDP in hwdb") : power.note);
  j["plans"] = json::array();
  bool failed = false;
  for (size_t k = 0; k < args->plans.size(); ++k) {
    say("plan %s...\n", args->plans[k].c_str());
    auto p = bench_plan(c, args->plans[k], static_cast<int>(k));
    if (!p.ok()) {
      failed = true;
      j["plans"].push_back({{"plan", args->plans[k]}, {"error", p.status().message()}});
    } else {
      j["plans"].push_back(std::move(p).value());
    }
  }
  if (!args->skip.count("consistency")) {
    say("consistency...\n");
    j["consistency"] = consistency(c);
  }
  if (!args->report.empty()) {
    auto written = write_bench_report(j, args->report);
    if (!written.ok()) return fail(written.message());
    j["report"] = {{"markdown", args->report}, {"svg", bench_svg_path(args->report)}};
  }
  if (args->json) std::printf("%s\n", j.dump(2).c_str());
  else {
    print_text(j);
    if (!args->report.empty()) std::printf("\nreport   %s (chart %s)\n", args->report.c_str(), bench_svg_path(args->report).c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace hpf::cli
