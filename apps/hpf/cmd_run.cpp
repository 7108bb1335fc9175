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
#include "apps/hpf/cli.hpp"
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
  std::vector<DType> formats = {DType::F32, DType::TF32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2};
};

hpf::Expected<RunArgs> parse_run(const std::vector<std::string>& args) {
  RunArgs r;
  bool model_set = false;
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    auto value = [&]() -> hpf::Expected<std::string> {
      if (k + 1 >= args.size()) return hpf::Status::invalid("option " + a + " needs a value");
      return args[++k];
    };
    if (a == "--batch" || a == "--seed") {
      HPF_ASSIGN_OR_RETURN(std::string v, value());
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end || n < (a == "--batch" ? 1 : 0)) return hpf::Status::invalid("option " + a + ": bad value '" + v + "'");
      if (a == "--batch") r.batch = n;
      else r.seed = static_cast<uint64_t>(n);
    } else if (a == "--formats") {
      HPF_ASSIGN_OR_RETURN(std::string v, value());
      r.formats.clear();
      if (v == "none") continue;
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) {
        HPF_ASSIGN_OR_RETURN(DType t, hpf::parse_dtype(item));
        if (!hpf::is_float(t)) return hpf::Status::invalid("--formats: " + item + " is not a float format");
        r.formats.push_back(t);
      }
    } else if (!a.empty() && a[0] == '-') {
      return hpf::Status::invalid("unknown option '" + a + "' for run (see hpf --help)");
    } else if (!model_set) {
      r.model = a;
      model_set = true;
    } else {
      return hpf::Status::invalid("unexpected argument '" + a + "'");
    }
  }
  return r;
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  auto args = parse_run(argv);
  if (!args.ok()) return fail(args.status().message(), 2);
  if (args->model.rfind("builtin:", 0) != 0)
    return fail("'" + args->model + "': only built-in models can be run so far (builtin:NAME; see hpf models)", 2);

  auto t0 = std::chrono::steady_clock::now();
  auto graph = hpf::models::builtin(args->model);
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

  std::printf("libhpf %s - reference interpreter\n\n", hpf::version());
  std::printf("model    %s: %zu nodes, %zu values, %.2fM parameters (%s of weights), built in %.0f ms\n",
              args->model.c_str(), g.nodes().size(), g.values().size(), params / 1e6,
              human_bytes(static_cast<double>(g.weight_bytes())).c_str(), build_ms);
  std::string ops;
  for (const auto& [op, n] : op_counts) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::printf("ops      %s\n", ops.c_str());
  std::string classes;
  for (const auto& [c, n] : class_counts) classes += (classes.empty() ? "" : ", ") + c + " " + std::to_string(n);
  std::printf("classes  %s\n", classes.c_str());

  auto inputs = hpf::models::example_inputs(g, args->seed, args->batch);
  if (!inputs.ok()) return fail(inputs.status().message());
  for (size_t k = 0; k < inputs->size(); ++k)
    std::printf("input    %s %s (seed %llu)\n", g.value(g.inputs()[k]).name.c_str(), (*inputs)[k].describe().c_str(),
                static_cast<unsigned long long>(args->seed));

  t0 = std::chrono::steady_clock::now();
  auto ref = hpf::ref::run(g, *inputs);
  if (!ref.ok()) return fail(ref.status().to_string());
  std::printf("run      ground truth (FP32 storage, FP64 accumulation): %.1f ms\n", ms_since(t0));
  size_t watched = 0;  // the output the format table compares: "logits" if there is one
  for (size_t k = 0; k < ref->size(); ++k) {
    const std::string& name = g.value(g.outputs()[k]).name;
    if (name == "logits") watched = k;
    std::printf("output   %s %s %s\n", name.c_str(), (*ref)[k].describe().c_str(), preview((*ref)[k]).c_str());
  }
  if (args->formats.empty()) return 0;

  std::printf("\nEmulated formats: every float tensor (weights, activations) stored in the format,\n"
              "FP32 accumulation; divergence of '%s' from the ground truth (KL over softmax of the last axis)\n\n",
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
