// hpf compile-check: every kernel a model needs, generated in a GPU dialect and compiled for each
// requested target, without a GPU: sm_NN through the CUDA plugin (NVRTC), gfxNNN through the HIP
// plugin (hipRTC). Per target: kernels, compiled, failed (with the compiler's log), unsupported
// families, bytes of binary; or an error for the whole target (compiler absent, target unknown).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hpf/cli.hpp"
#include "hpf/graph.hpp"
#include "hpf/models.hpp"
#include "hpf/onnx.hpp"
#include "hpf/plugin_host.hpp"
#include "jit/codegen/gpu_codegen.hpp"
#include "jit/codegen/lowering.hpp"

namespace hpf::cli {
namespace {

const char* kCompileCheckUsage =
    "usage: hpf compile-check MODEL --target sm_80,sm_90[,gfx90a] [--plan fp32|tf32|bf16|fp16] [--json]\n"
    "  MODEL is builtin:NAME or an ONNX file (unknown dimensions are taken as 1). Each kernel the\n"
    "  model lowers to is generated in the target's dialect and compiled (sm_NN: NVRTC through the\n"
    "  CUDA plugin; gfxNNN: hipRTC through the HIP plugin, which refuses targets its compiler does\n"
    "  not know). Families without a generator in the dialect are listed as unsupported.\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

// The model with every shape concrete (unknown dimensions 1) and its storage formats under the
// plan: every float intermediate and weight in the plan's format, graph inputs and outputs kept,
// a view sharing its input's format.
Status prepare(Graph& g, DType format, std::vector<DType>& storage) {
  for (ValueId id : g.inputs()) {
    Value& v = g.value(id);
    if (!v.has_shape) return Status::invalid("input '" + v.name + "' has no shape in the model");
    for (Dim& d : v.shape)
      if (!d.known()) d = Dim(1);
  }
  HPF_RETURN_IF_ERROR(g.infer_shapes());
  const size_t nv = g.values().size();
  std::vector<bool> boundary(nv, false);
  for (ValueId v : g.inputs()) boundary[v] = true;
  for (ValueId v : g.outputs()) boundary[v] = true;
  storage.resize(nv);
  for (size_t v = 0; v < nv; ++v) {
    const DType t = g.value(static_cast<ValueId>(v)).dtype;
    storage[v] = !boundary[v] && t == DType::F32 ? format : t;
  }
  HPF_ASSIGN_OR_RETURN(auto order, g.topological_order());
  for (int32_t id : order) {
    const Node& n = g.node(id);
    if (jit::is_view_op(n.op) && !n.inputs.empty()) storage[n.outputs[0]] = storage[n.inputs[0]];
  }
  return {};
}

struct Kernel {
  std::string label, family;
  jit::GeneratedKernel code;
};

struct Generated {
  std::vector<Kernel> kernels;                // distinct kernels (by name)
  std::map<std::string, int> unsupported;     // family -> steps
  std::map<std::string, std::string> why;     // family -> first reason
  int fallbacks = 0;                          // steps no generator of any dialect takes
};

Expected<Generated> generate_kernels(const Graph& g, const std::vector<DType>& storage, jit::GpuDialect dialect) {
  HPF_ASSIGN_OR_RETURN(auto steps, jit::lower(g, storage, {}, jit::kGpuLowering));
  Generated out;
  std::map<std::string, bool> seen;
  for (const auto& s : steps) {
    if (s.kind == jit::LoweredStep::Kind::fallback) ++out.fallbacks;
    if (s.kind != jit::LoweredStep::Kind::kernel) continue;
    auto k = jit::generate_gpu(s.spec, dialect);
    if (!k.ok()) {
      ++out.unsupported[s.spec.family];
      out.why.emplace(s.spec.family, k.status().message());
      continue;
    }
    if (seen.emplace(k->name, true).second) out.kernels.push_back({s.label, s.spec.family, std::move(k).value()});
  }
  return out;
}

}  // namespace

int cmd_compile_check(const std::vector<std::string>& argv) {
  if (!argv.empty() && (argv[0] == "--help" || argv[0] == "-h")) {
    std::fputs(kCompileCheckUsage, stdout);
    return 0;
  }
  auto args = parse_args("compile-check", argv, {"--json"}, {"--target", "--plan"});
  if (!args.ok()) return fail(args.status().message(), 2);
  if (args->positional.size() != 1 || args->option("--target").empty())
    return fail(std::string("compile-check needs a MODEL and --target\n") + kCompileCheckUsage, 2);
  const std::string model = args->positional[0], plan = args->option("--plan", "fp32");
  // The formats the GPU lowering stores (Session::device_formats on a GPU): INT8/FP8 have no
  // whole-model GPU lowering yet (their GEMM kernels are compile-checked in ctest by spec).
  const std::map<std::string, DType> plans{
      {"fp32", DType::F32}, {"tf32", DType::TF32}, {"bf16", DType::BF16}, {"fp16", DType::F16}};
  if (!plans.count(plan)) return fail("--plan takes fp32, tf32, bf16 or fp16 here, not '" + plan + "'", 2);
  const bool json = args->flag("--json");
  const std::vector<std::string> targets = split(args->option("--target"));

  auto graph = model.rfind("builtin:", 0) == 0 ? models::builtin(model) : import_onnx(model);
  if (!graph.ok()) return fail(graph.status().message());
  std::vector<DType> storage;
  if (Status s = prepare(*graph, plans.at(plan), storage); !s.ok()) return fail(s.message());
  // Kernels per dialect, generated once for all targets of that dialect.
  std::map<jit::GpuDialect, Generated> gen;
  for (const std::string& t : targets) {
    const jit::GpuDialect d = t.rfind("gfx", 0) == 0 ? jit::GpuDialect::hip : jit::GpuDialect::cuda;
    if (gen.count(d)) continue;
    auto g = generate_kernels(*graph, storage, d);
    if (!g.ok()) return fail(g.status().message());
    gen.emplace(d, std::move(g).value());
  }

  // Each plugin describes one compile-only device per target of its variable, in order.
  std::vector<std::string> sm, gfx;
  for (const std::string& t : targets) {
    if (t.rfind("sm_", 0) == 0) sm.push_back(t);
    if (t.rfind("gfx", 0) == 0) gfx.push_back(t);
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& t : v) s += (s.empty() ? "" : ",") + t;
    return s;
  };
  setenv("HPF_CUDA_TARGETS", joined(sm).c_str(), 1);
  setenv("HPF_HIP_TARGETS", joined(gfx).c_str(), 1);
  PluginHost host;
  Plugin* cuda = host.plugin("cuda");
  Plugin* hip = host.plugin("hip");

  nlohmann::json report = {{"model", model}, {"plan", plan}, {"targets", nlohmann::json::array()}};
  int failures = 0;
  size_t sm_index = 0, gfx_index = 0;
  for (const std::string& target : targets) {
    nlohmann::json t = {{"target", target}};
    const bool is_hip = target.rfind("gfx", 0) == 0;
    const Generated& g = gen.at(is_hip ? jit::GpuDialect::hip : jit::GpuDialect::cuda);
    nlohmann::json unsupported = nlohmann::json::array();
    for (const auto& [family, count] : g.unsupported)
      unsupported.push_back({{"family", family}, {"steps", count}, {"reason", g.why.at(family)}});
    Plugin* plugin = is_hip ? hip : cuda;
    const int32_t device = static_cast<int32_t>(is_hip ? gfx_index++ : sm_index++);
    if (!is_hip && target.rfind("sm_", 0) != 0) {
      t["error"] = "unknown target (sm_NN or gfxNNN)";
      ++failures;
    } else if (!plugin) {
      t["error"] = std::string("the ") + (is_hip ? "HIP plugin (libhpf-plugin-hip.so)" : "CUDA plugin (libhpf-plugin-cuda.so)") +
                   " was not found";
    } else if (plugin->devices()[device].compiler == "none") {
      t["error"] = plugin->devices()[device].score_reason;  // compiler absent: the plugin says why
    } else {
      int compiled = 0;
      int64_t bytes = 0;
      nlohmann::json failed = nlohmann::json::array(), times = nlohmann::json::array();
      for (const Kernel& k : g.kernels) {
        const auto t0 = std::chrono::steady_clock::now();
        auto bin = plugin->compile(device, k.code.source);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!bin.ok() && bin.status().code() == StatusCode::unsupported) {
          t["error"] = bin.status().message();  // the target itself (unknown to the compiler, malformed)
          break;
        }
        times.push_back(ms);
        if (bin.ok()) {
          ++compiled;
          bytes += static_cast<int64_t>(bin->size());
        } else {
          failed.push_back({{"kernel", k.code.name}, {"label", k.label}, {"log", bin.status().message()}});
        }
      }
      if (t.contains("error")) {
        ++failures;
      } else {
        failures += static_cast<int>(failed.size());
        t["compiled"] = compiled;
        t["failed"] = failed;
        t["bytes"] = bytes;
        t["compile_ms"] = times;
        t["compiler"] = plugin->devices()[device].compiler;
      }
    }
    t["dialect"] = is_hip ? "hip" : "cuda";
    t["kernels"] = g.kernels.size();
    t["fallbacks"] = g.fallbacks;
    t["unsupported"] = unsupported;
    report["targets"].push_back(t);
  }

  if (json) {
    std::puts(report.dump(2).c_str());
  } else {
    std::printf("%s, plan %s\n", model.c_str(), plan.c_str());
    for (const auto& t : report["targets"]) {
      std::printf("\n%s (%s dialect, %zu distinct kernels, %d steps left to the reference): ",
                  t["target"].get<std::string>().c_str(), t["dialect"].get<std::string>().c_str(),
                  t["kernels"].get<size_t>(), t["fallbacks"].get<int>());
      if (t.contains("error")) {
        std::printf("%s\n", t["error"].get<std::string>().c_str());
        continue;
      }
      double total = 0, worst = 0;
      for (const auto& ms : t["compile_ms"]) total += ms.get<double>(), worst = std::max(worst, ms.get<double>());
      const size_t n = t["compile_ms"].size();
      std::printf("%d of %zu compiled (%s), %lld bytes, %.0f ms per kernel (max %.0f)\n", t["compiled"].get<int>(),
                  t["kernels"].get<size_t>(), t["compiler"].get<std::string>().c_str(),
                  static_cast<long long>(t["bytes"].get<int64_t>()), n ? total / n : 0.0, worst);
      for (const auto& f : t["failed"])
        std::printf("  FAILED %s (%s):\n%s\n", f["kernel"].get<std::string>().c_str(),
                    f["label"].get<std::string>().c_str(), f["log"].get<std::string>().c_str());
      for (const auto& u : t["unsupported"])
        std::printf("  unsupported: %s (%d steps)\n", u["family"].get<std::string>().c_str(), u["steps"].get<int>());
    }
  }
  return failures ? 1 : 0;
}

}  // namespace hpf::cli
