// hpf run / models / ops: running models on the reference interpreter.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/op_table.hpp"
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "apps/hpf/cli.hpp"
#include "hpf/fingerprint.hpp"
#include "hpf/onnx.hpp"
#include "hpf/session.hpp"
#include "hpf/hpf.hpp"

namespace hpf::cli {
namespace {

using hpf::DType;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1 << 20) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else if (b >= 1 << 10) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

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

struct RunArgs {
  std::string model = "builtin:bert-tiny";
  int64_t batch = 1;
  uint64_t seed = 7;
  int64_t repeat = 10;
  int threads = 0;  // 0: the plugin's default (all cores)
  bool profile = false, json = false, reference_only = false;
  DType precision = DType::F32;
  std::vector<DType> formats = {DType::F32, DType::TF32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2};
};

hpf::Expected<RunArgs> parse_run(const std::vector<std::string>& argv) {
  HPF_ASSIGN_OR_RETURN(Args a, parse_args("run", argv, {"--profile", "--json", "--reference-only"},
                                          {"--batch", "--seed", "--repeat", "--threads", "--formats", "--precision"}));
  RunArgs r;
  if (a.positional.size() > 1) return hpf::Status::invalid("unexpected argument '" + a.positional[1] + "'");
  if (!a.positional.empty()) r.model = a.positional[0];
  auto number = [&](const char* opt, int64_t min, int64_t def) -> hpf::Expected<int64_t> {
    if (!a.options.count(opt)) return def;
    const std::string v = a.option(opt);
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || n < min) return hpf::Status::invalid("option " + std::string(opt) + ": bad value '" + v + "'");
    return n;
  };
  HPF_ASSIGN_OR_RETURN(r.batch, number("--batch", 1, r.batch));
  HPF_ASSIGN_OR_RETURN(int64_t seed, number("--seed", 0, 7));
  r.seed = static_cast<uint64_t>(seed);
  HPF_ASSIGN_OR_RETURN(r.repeat, number("--repeat", 1, r.repeat));
  HPF_ASSIGN_OR_RETURN(int64_t threads, number("--threads", 1, 0));
  r.threads = static_cast<int>(threads);
  r.profile = a.flag("--profile");
  r.json = a.flag("--json");
  r.reference_only = a.flag("--reference-only");
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
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
  auto graph = args->model.rfind("builtin:", 0) == 0 ? hpf::models::builtin(args->model) : hpf::import_onnx(args->model);
  if (!graph.ok()) return fail(graph.status().message());
  const double build_ms = ms_since(t0);
  const hpf::Graph& g = *graph;

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

  auto inputs = hpf::models::example_inputs(g, args->seed, args->batch);
  if (!inputs.ok()) return fail(inputs.status().message());
  for (size_t k = 0; k < inputs->size(); ++k)
    say("input    %s %s (seed %llu)\n", g.value(g.inputs()[k]).name.c_str(), (*inputs)[k].describe().c_str(),
        static_cast<unsigned long long>(args->seed));

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
  if (!args->reference_only) {
    hpf::SessionOptions so;
    so.precision = args->precision;
    const bool progress = !quiet && isatty(fileno(stderr));
    if (progress)
      so.progress = [](size_t done, size_t total) {
        std::fprintf(stderr, "\rcompiling %zu/%zu", done, total);
        if (done == total) std::fprintf(stderr, "\r%*s\r", 24, "");
      };
    auto session = hpf::Session::create(so);
    if (!session.ok()) return fail(session.status().message());
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& t : *inputs) shapes.push_back(t.shape());
    auto exe = session->compile(g, shapes);
    if (!exe.ok()) return fail(exe.status().to_string());
    std::vector<double> times;
    hpf::Expected<std::vector<hpf::Tensor>> out = hpf::Status::internal("not run");
    for (int64_t r = 0; r < args->repeat; ++r) {
      t0 = std::chrono::steady_clock::now();
      out = exe->run(*inputs);
      if (!out.ok()) return fail(out.status().to_string());
      times.push_back(ms_since(t0));
    }
    const auto& st = exe->compile_stats();
    auto d = hpf::compare((*ref)[watched], (*out)[watched]);
    say("\ndevice   %s, %s storage\n", st.device.c_str(), std::string(hpf::dtype_name(args->precision)).c_str());
    say("compile  %lld kernels, %lld cache hits, %lld misses, %lld reference fallbacks, %.0f ms\n",
        static_cast<long long>(st.kernels), static_cast<long long>(st.cache_hits), static_cast<long long>(st.cache_misses),
        static_cast<long long>(st.fallbacks), st.ms);
    say("latency  median %.3f ms, min %.3f, max %.3f over %lld runs\n", median(times),
        *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
        static_cast<long long>(args->repeat));
    say("memory   %s (weights and a reused activation arena)\n", human_bytes(double(exe->peak_memory_bytes())).c_str());
    if (d.ok())
      say("vs ref   '%s': rel-L2 %.3e, max|err| %.3e, KL %.3e, top-1 %.0f%%\n", g.value(g.outputs()[watched]).name.c_str(),
          d->rel_l2, d->max_abs_error, d->kl, 100 * d->top1_agreement);
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
                    {"fallbacks", st.fallbacks}, {"ms", st.ms}};
    j["peak_memory_bytes"] = exe->peak_memory_bytes();
    j["outputs"] = nlohmann::json::array();
    for (size_t k = 0; k < out->size(); ++k)
      j["outputs"].push_back({{"name", exe->output_names()[k]},
                              {"shape", (*out)[k].shape()},
                              {"dtype", std::string(hpf::dtype_name((*out)[k].dtype()))},
                              {"hash", hpf::hash128_hex(std::string_view(reinterpret_cast<const char*>((*out)[k].bytes().data()),
                                                                         (*out)[k].nbytes()))}});
    if (d.ok()) j["vs_reference"] = {{"output", g.value(g.outputs()[watched]).name}, {"rel_l2", d->rel_l2},
                                     {"max_abs_error", d->max_abs_error}, {"kl", d->kl}};
    if (args->profile) {
      j["profile"] = nlohmann::json::array();
      for (const auto& p : exe->profile())
        j["profile"].push_back({{"step", p.label}, {"kind", p.kind}, {"calls", p.calls}, {"total_ms", p.total_ms}});
    }
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
