// hpf run / models / ops: running a model on the best device and on the reference interpreter.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/op_table.hpp"
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "apps/hpf/cli.hpp"
#include "apps/hpf/run_common.hpp"
#include "hpf/fingerprint.hpp"
#include "hpf/live.hpp"
#include "hpf/onnx.hpp"
#include "hpf/session.hpp"
#include "hpf/hpf.hpp"

namespace hpf::cli {
namespace {

using hpf::DType;

std::string preview(const hpf::Tensor& t, size_t n = 4) {
  std::ostringstream os;
  auto v = t.to_f32();
  os << "[";
  for (size_t k = 0; k < std::min(n, v.size()); ++k) os << (k ? ", " : "") << v[k];
  if (v.size() > n) os << ", ...";
  os << "]";
  return os.str();
}

}  // namespace

int cmd_models() {
  for (const auto& m : hpf::models::builtin_models())
    std::printf("builtin:%-10s %s\n", m.name.c_str(), m.description.c_str());
  return 0;
}

int cmd_ops() {
  std::printf("%-20s %-14s %-44s %s\n", "op", "class", "formats", "stays wide");
  for (const auto& op : hpf::ir::all_ops()) {
    std::string formats;
    for (DType t : op.precisions) formats += (formats.empty() ? "" : ",") + std::string(hpf::dtype_name(t));
    std::string wide = op.wide_internals;
    if (!op.wide_inputs.empty()) {
      std::string ins;
      for (int i : op.wide_inputs) ins += (ins.empty() ? "" : ",") + std::to_string(i);
      wide += (wide.empty() ? "" : "; ") + std::string("inputs ") + ins;
    }
    std::printf("%-20s %-14s %-44s %s\n", op.name.c_str(), hpf::ir::op_class_name(op.op_class), formats.c_str(),
                wide.empty() ? "-" : wide.c_str());
  }
  return 0;
}

namespace {

// ModelSpec: --input, --dim, --batch, --random-inputs, --kl-budget, --calib.
struct RunArgs : ModelSpec {
  std::string model = "builtin:bert-tiny";
  std::string output_dir;
  int64_t repeat = 10;
  int threads = 0;  // 0: the plugin's default (all cores)
  bool profile = false, json = false, reference_only = false, autotune = false;
  DType precision = DType::F32;
  std::string plan;       // --plan: a mode (fp32, bf16, ...) or a plan file
  std::string save_plan;  // --save-plan FILE
  std::vector<DType> formats = {DType::F32, DType::TF32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2};
};

hpf::Expected<RunArgs> parse_run(const std::vector<std::string>& argv) {
  HPF_ASSIGN_OR_RETURN(Args a, parse_args("run", argv, {"--profile", "--json", "--reference-only", "--autotune"},
                                          {"--batch", "--seed", "--random-inputs", "--repeat", "--threads", "--formats",
                                           "--precision", "--input", "--dim", "--output-dir", "--plan", "--save-plan",
                                           "--kl-budget", "--kl-margin", "--calib", "--device"}));
  RunArgs r;
  if (a.positional.size() > 1) return hpf::Status::invalid("unexpected argument '" + a.positional[1] + "'");
  if (!a.positional.empty()) r.model = a.positional[0];
  HPF_RETURN_IF_ERROR(parse_model_spec(a, r));
  r.output_dir = a.option("--output-dir");
  HPF_ASSIGN_OR_RETURN(r.repeat, int_option(a, "--repeat", 1, r.repeat));
  HPF_ASSIGN_OR_RETURN(int64_t threads, int_option(a, "--threads", 1, 0));
  r.threads = static_cast<int>(threads);
  r.profile = a.flag("--profile");
  r.json = a.flag("--json");
  r.reference_only = a.flag("--reference-only");
  r.autotune = a.flag("--autotune");
  r.plan = a.option("--plan");
  r.save_plan = a.option("--save-plan");
  if ((a.options.count("--kl-budget") || a.options.count("--kl-margin") || !r.calib.empty()) && r.plan.empty())
    return hpf::Status::invalid("--kl-budget and --calib go with --plan auto (or a policy with auto in it)");
  if (!r.plan.empty() && a.options.count("--precision"))
    return hpf::Status::invalid("--plan and --precision both set the formats; give one");
  if (a.options.count("--precision")) {
    HPF_ASSIGN_OR_RETURN(r.precision, hpf::parse_dtype(a.option("--precision")));
    if (!hpf::is_float(r.precision)) return hpf::Status::invalid("--precision: " + a.option("--precision") + " is not a float format");
  }
  if (a.options.count("--formats")) {
    r.formats.clear();
    const std::string v = a.option("--formats");
    if (v != "none") {
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) {
        HPF_ASSIGN_OR_RETURN(DType t, hpf::parse_dtype(item));
        if (!hpf::is_float(t)) return hpf::Status::invalid("--formats: " + item + " is not a float format");
        r.formats.push_back(t);
      }
    }
  }
  return r;
}

// A file name for output `name`: characters other than letters, digits, '.', '-' and '_' become
// '_'; a name taken already gets a numeric suffix.
std::string output_file_name(const std::string& name, std::set<std::string>& taken) {
  std::string base;
  for (char c : name) base += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  if (base.empty() || base[0] == '.') base = "output" + base;
  std::string file = base + ".npy";
  for (int k = 1; taken.count(file); ++k) file = base + "_" + std::to_string(k) + ".npy";
  taken.insert(file);
  return file;
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  auto args = parse_run(argv);
  if (!args.ok()) return fail(args.status().message(), 2);
  // The CPU plugin reads HPF_NUM_THREADS when it initialises, which happens below.
  if (args->threads > 0) setenv("HPF_NUM_THREADS", std::to_string(args->threads).c_str(), 1);
  const bool quiet = args->json;
  auto say = [&](const char* fmt, auto... xs) {
    if (!quiet) std::printf(fmt, xs...);
  };

  auto t0 = std::chrono::steady_clock::now();
  // builtin:NAME, or an ONNX file (inputs: seeded random values of the declared shapes).
  auto graph = load_model(args->model);
  if (!graph.ok()) return fail(graph.status().message());
  const double build_ms = ms_since(t0);
  hpf::Graph& g = *graph;

  std::map<std::string, int> op_counts, class_counts;
  size_t params = 0;
  for (const auto& n : g.nodes()) {
    ++op_counts[n.op];
    ++class_counts[hpf::ir::op_class_name(hpf::ir::find_op(n.op)->op_class)];
  }
  for (const auto& v : g.values())
    if (v.constant) params += static_cast<size_t>(v.constant->numel());

  say("libhpf %s\n\n", hpf::version());
  say("model    %s: %zu nodes, %zu values, %.2fM parameters (%s of weights), built in %.0f ms\n", args->model.c_str(),
      g.nodes().size(), g.values().size(), params / 1e6, human_bytes(static_cast<double>(g.weight_bytes())).c_str(),
      build_ms);
  std::string ops;
  for (const auto& [op, n] : op_counts) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  say("ops      %s\n", ops.c_str());
  std::string classes;
  for (const auto& [c, n] : class_counts) classes += (classes.empty() ? "" : ", ") + c + " " + std::to_string(n);
  say("classes  %s\n", classes.c_str());

  std::vector<std::string> sources;
  auto inputs = make_inputs(g, *args, sources);
  if (!inputs.ok()) return fail(inputs.status().message());
  for (size_t k = 0; k < inputs->size(); ++k)
    say("input    %s %s (%s)\n", g.value(g.inputs()[k]).name.c_str(), (*inputs)[k].describe().c_str(),
        sources[k].c_str());

  t0 = std::chrono::steady_clock::now();
  auto ref = hpf::ref::run(g, *inputs);
  if (!ref.ok()) return fail(ref.status().to_string());
  const double ref_ms = ms_since(t0);
  say("reference  ground truth (FP32 storage, FP64 accumulation): %.1f ms\n", ref_ms);
  // The output the comparisons use: "logits" if there is one, else the first float output.
  size_t watched = ref->size();
  for (size_t k = 0; k < ref->size(); ++k)
    if (watched == ref->size() && hpf::is_float((*ref)[k].dtype())) watched = k;
  if (watched == ref->size()) watched = 0;
  for (size_t k = 0; k < ref->size(); ++k) {
    const std::string& name = g.value(g.outputs()[k]).name;
    if (name == "logits") watched = k;
    say("output   %s %s %s\n", name.c_str(), (*ref)[k].describe().c_str(), preview((*ref)[k]).c_str());
  }

  nlohmann::json j;
  std::vector<hpf::Tensor> results = *ref;  // what --output-dir writes: the device's, when it ran
  if (!args->reference_only) {
    hpf::SessionOptions so;
    so.precision = args->precision;
    so.plugin = args->device;
    const bool progress = !quiet && isatty(fileno(stderr));
    if (progress)
      so.progress = [](size_t done, size_t total) {
        std::fprintf(stderr, "\rcompiling %zu/%zu", done, total);
        if (done == total) std::fprintf(stderr, "\r%*s\r", 24, "");
      };
    auto session = hpf::Session::create(so);
    if (!session.ok()) return fail(session.status().message());
    // --plan: a plan file, or a mode every node gets (where the device has it).
    std::string plan_label = std::string(hpf::dtype_name(args->precision)) + " storage";
    if (!args->plan.empty()) {
      bool usage_error = false;
      auto chosen = choose_plan(g, *args, args->plan, so, session->device_formats(), quiet, j, &usage_error);
      if (!chosen.ok()) return fail(chosen.status().message(), usage_error ? 2 : 1);
      plan_label = chosen->label;
      so.plan = chosen->plan;
    }
    so.autotune = args->autotune;  // not while planning: the planner's trial plans run untuned
    if (so.plan || so.autotune) {
      session = hpf::Session::create(so);
      if (!session.ok()) return fail(session.status().message());
    }
    // A live executable: compiled on the first run, healed (overflow) and re-planned (slow
    // kernels) as it runs; each recompilation is an event (live.hpp).
    hpf::LiveOptions lo;
    lo.session = so;
    lo.overflow_watch_runs = 1;  // the same inputs every run: watching the first is enough
    lo.batch_buckets = 0;        // one input shape: its own variant, no padding
    auto live = hpf::LiveExecutable::create(g, lo);
    if (!live.ok()) return fail(live.status().to_string());
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& t : *inputs) shapes.push_back(t.shape());
    if (auto ready = live->prepare(shapes); !ready.ok()) return fail(ready.to_string());
    std::vector<double> times;
    hpf::Expected<std::vector<hpf::Tensor>> out = hpf::Status::internal("not run");
    for (int64_t r = 0; r < args->repeat; ++r) {
      t0 = std::chrono::steady_clock::now();
      out = live->run(*inputs);
      if (!out.ok()) return fail(out.status().to_string());
      times.push_back(ms_since(t0));
    }
    const hpf::Executable* exe = live->current();
    const std::shared_ptr<const hpf::Plan> run_plan = so.plan ? live->plan() : nullptr;  // healed, if it was
    const auto& st = exe->compile_stats();
    results = *out;
    auto d = hpf::compare((*ref)[watched], (*out)[watched]);
    say("\ndevice   %s, %s\n", st.device.c_str(), plan_label.c_str());
    say("compile  %lld kernels, %lld cache hits, %lld misses, %lld reference fallbacks, %.0f ms\n",
        static_cast<long long>(st.kernels), static_cast<long long>(st.cache_hits), static_cast<long long>(st.cache_misses),
        static_cast<long long>(st.fallbacks), st.ms);
    if (args->autotune) {
      int64_t measured = 0;
      for (const std::string& t : st.tuned_kernels) measured += t.find("(measured)") != std::string::npos;
      say("autotune %zu kernels with tile choices: %lld measured now, %lld from the kernel cache\n",
          st.tuned_kernels.size(), static_cast<long long>(measured),
          static_cast<long long>(st.tuned_kernels.size()) - static_cast<long long>(measured));
    }
    if (!st.fallback_nodes.empty()) {
      std::string list;
      for (size_t k = 0; k < st.fallback_nodes.size() && k < 8; ++k) list += (k ? ", " : "") + st.fallback_nodes[k];
      if (st.fallback_nodes.size() > 8) list += ", ...";
      say("fallback %s\n", list.c_str());
    }
    for (const hpf::RecompileEvent& e : live->events())
      if (e.cause != "new_shape")  // the first compile is the one reported above
        say("recompile %s (run %lld)\n", e.describe().c_str(), static_cast<long long>(e.run));
    say("latency  median %.3f ms, min %.3f, max %.3f over %lld runs\n", median(times),
        *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
        static_cast<long long>(args->repeat));
    say("memory   %s (weights %s and a reused activation arena; %lld outputs written over an input); %lld "
        "standalone cast kernels\n",
        human_bytes(double(exe->peak_memory_bytes())).c_str(), human_bytes(double(st.weight_bytes)).c_str(),
        static_cast<long long>(st.in_place_steps), static_cast<long long>(st.standalone_casts));
    if (d.ok())
      say("vs ref   '%s': rel-L2 %.3e, max|err| %.3e, KL %.3e, top-1 %.0f%%%s\n", g.value(g.outputs()[watched]).name.c_str(),
          d->rel_l2, d->max_abs_error, d->kl, 100 * d->top1_agreement,
          d->non_finite ? "  (NaN or Inf on the device where the reference is finite)" : "");
    else  // integer or bool output: exact
      say("vs ref   '%s': %s\n", g.value(g.outputs()[watched]).name.c_str(),
          (*ref)[watched].to_i64() == (*out)[watched].to_i64() ? "identical" : "DIFFERENT");
    if (args->profile) {
      auto prof = exe->profile();
      double total = 0;
      for (const auto& p : prof) total += p.total_ms;
      say("\n%-52s %-9s %10s %7s\n", "step", "kind", "ms/run", "share");
      for (const auto& p : prof)
        say("%-52.52s %-9s %10.4f %6.1f%%\n", p.label.c_str(), p.kind.c_str(), p.total_ms / std::max<int64_t>(1, p.calls),
            total > 0 ? 100 * p.total_ms / total : 0.0);
    }
    j["model"] = args->model;
    j["device"] = st.device;
    j["precision"] = std::string(hpf::dtype_name(args->precision));
    j["latency_ms"] = {{"median", median(times)},
                       {"min", *std::min_element(times.begin(), times.end())},
                       {"max", *std::max_element(times.begin(), times.end())},
                       {"runs", args->repeat}};
    j["compile"] = {{"kernels", st.kernels}, {"cache_hits", st.cache_hits}, {"cache_misses", st.cache_misses},
                    {"fallbacks", st.fallbacks}, {"fallback_nodes", st.fallback_nodes}, {"ms", st.ms},
                    {"packed_weight_nodes", st.packed_weight_nodes}, {"packed_conv_nodes", st.packed_conv_nodes},
                    {"int8_compute_nodes", st.int8_compute_nodes}, {"tuned_kernels", st.tuned_kernels}};
    j["peak_memory_bytes"] = exe->peak_memory_bytes();
    j["weight_bytes"] = st.weight_bytes;
    j["standalone_casts"] = st.standalone_casts;
    j["recompiles"] = nlohmann::json::array();
    for (const hpf::RecompileEvent& e : live->events()) {
      if (e.cause == "new_shape" && e.run == 0) continue;  // the initial compile, in "compile"
      nlohmann::json r = {{"cause", e.cause}, {"run", e.run}, {"shapes", e.shapes}, {"ms", e.compile_ms}};
      if (!e.node.empty()) r.update({{"node", e.node}, {"from", e.from}, {"to", e.to}});
      if (!e.requested.empty()) r["requested_shapes"] = e.requested;
      if (e.cause == "overflow") r["fp32_amax"] = e.fp32_amax;
      if (e.cause == "slow_kernel") r.update({{"measured_ms", e.measured_ms}, {"predicted_ms", e.predicted_ms}});
      j["recompiles"].push_back(r);
    }
    if (d.ok()) j["kl_vs_fp32"] = d->kl;
    if (run_plan) {
      nlohmann::json nodes = nlohmann::json::array();
      for (const hpf::NodePlan& n : run_plan->nodes)
        nodes.push_back({{"name", n.name}, {"op", n.op}, {"class", hpf::node_class_name(n.node_class)},
                         {"precision", hpf::mode_name(n.mode)}, {"storage", std::string(hpf::dtype_name(n.storage))}});
      j["plan"] = {{"source", plan_label}, {"nodes", nodes}};
    }
    if (!args->save_plan.empty()) {
      hpf::Plan plan = run_plan ? *run_plan : hpf::Plan{};
      if (!run_plan) {
        auto made = hpf::plan_from_policy(g, hpf::Policy::uniform(hpf::Mode::fp32), session->device_formats());
        if (!made.ok()) return fail(made.status().to_string());
        plan = std::move(made).value();
      }
      if (d.ok()) plan.divergence = d->kl;
      hpf::Status saved = plan.save(args->save_plan);
      if (!saved.ok()) return fail(saved.message());
      say("plan     saved to %s\n", args->save_plan.c_str());
    }
    j["outputs"] = nlohmann::json::array();
    for (size_t k = 0; k < out->size(); ++k)
      j["outputs"].push_back({{"name", exe->output_names()[k]},
                              {"shape", (*out)[k].shape()},
                              {"dtype", std::string(hpf::dtype_name((*out)[k].dtype()))},
                              {"hash", hpf::hash128_hex(std::string_view(reinterpret_cast<const char*>((*out)[k].bytes().data()),
                                                                         (*out)[k].nbytes()))}});
    // (JSON has no Inf: a non-finite figure prints as null, and non_finite says why.)
    if (d.ok()) j["vs_reference"] = {{"output", g.value(g.outputs()[watched]).name}, {"rel_l2", d->rel_l2},
                                     {"max_abs_error", d->max_abs_error}, {"kl", d->kl},
                                     {"non_finite", d->non_finite}};
    if (args->profile) {
      j["profile"] = nlohmann::json::array();
      for (const auto& p : exe->profile())
        j["profile"].push_back({{"step", p.label}, {"kind", p.kind}, {"calls", p.calls}, {"total_ms", p.total_ms}});
    }
  }
  if (!args->output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args->output_dir, ec);
    if (ec) return fail("--output-dir " + args->output_dir + ": " + ec.message());
    std::set<std::string> taken;
    nlohmann::json files = nlohmann::json::array();
    for (size_t k = 0; k < results.size(); ++k) {
      const std::string& name = g.value(g.outputs()[k]).name;
      const std::string path = (std::filesystem::path(args->output_dir) / output_file_name(name, taken)).string();
      hpf::Status s = hpf::save_npy(path, results[k]);
      if (!s.ok()) return fail(s.message());
      say("wrote    %s (output '%s', %s)\n", path.c_str(), name.c_str(), results[k].describe().c_str());
      files.push_back({{"output", name}, {"file", path}});
    }
    j["output_files"] = files;
  }
  if (args->json) {
    j["reference_ms"] = ref_ms;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (args->formats.empty()) return 0;
  if (!hpf::is_float((*ref)[watched].dtype())) {
    std::printf("\n(no float output: the format table is skipped)\n");
    return 0;
  }

  std::printf("\nEmulated formats on the reference: every float tensor (weights, activations) stored in the\n"
              "format, FP32 accumulation; divergence of '%s' from the ground truth (KL over softmax of the last axis)\n\n",
              g.value(g.outputs()[watched]).name.c_str());
  std::printf("%-8s %12s %12s %12s %8s %10s\n", "format", "KL", "rel-L2", "max|err|", "top-1", "time");
  for (DType t : args->formats) {
    hpf::ref::Emulation emu;
    emu.default_format = t;
    emu.default_accumulation = DType::F32;
    hpf::ref::RunOptions opt;
    opt.emulation = &emu;
    t0 = std::chrono::steady_clock::now();
    auto out = hpf::ref::run(g, *inputs, opt);
    if (!out.ok()) return fail(out.status().to_string());
    const double ms = ms_since(t0);
    auto d = hpf::compare((*ref)[watched], (*out)[watched]);
    if (!d.ok()) return fail(d.status().to_string());
    std::printf("%-8s %12.3e %12.3e %12.3e %7.0f%% %8.1f ms%s\n", std::string(hpf::dtype_name(t)).c_str(), d->kl,
                d->rel_l2, d->max_abs_error, 100 * d->top1_agreement, ms, d->non_finite ? "  (non-finite values)" : "");
  }
  return 0;
}

}  // namespace hpf::cli
