// Kernel compile cost on the CPU plugin:
//   cold: generate_c + program_compile per distinct kernel of a model (no cache involved);
//   warm: Session::compile twice into a fresh temporary cache dir; the first compiles and
//         stores every kernel, the second loads each from the cache. Per kernel = ms / kernels.
// Prints medians; never fails on time.
//
//   hpf-compile-bench [model ...]      (default: bert-tiny mlp cnn-small)
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "hpf/models.hpp"
#include "hpf/plugin.h"
#include "hpf/session.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Plugin {
  const hpf_plugin_api* api = nullptr;
  hpf_plugin* p = nullptr;
  bool init() {
    void* h = dlopen(HPF_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    auto get = reinterpret_cast<hpf_get_plugin_api_fn>(dlsym(h, HPF_PLUGIN_ENTRY_POINT));
    if (!get) return false;
    api = get();
    return api->plugin_init(&p) == nullptr;
  }
};

void bench_model(Plugin& cpu, const std::string& model) {
  auto g = models::builtin(model);
  if (!g.ok()) return (void)std::printf("%s: %s\n", model.c_str(), g.status().to_string().c_str());
  auto inputs = models::example_inputs(*g, 7, 1);
  if (!inputs.ok()) return (void)std::printf("%s: %s\n", model.c_str(), inputs.status().to_string().c_str());
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : *inputs) shapes.push_back(t.shape());

  // Cold: every distinct kernel generated and compiled, timed one by one.
  Graph cg = *g;
  for (size_t k = 0; k < shapes.size(); ++k) {
    Value& v = cg.value(cg.inputs()[k]);
    v.shape = make_shape(shapes[k]);
    v.has_shape = true;
  }
  std::vector<double> gen_ms, cc_ms, total_ms;
  std::string worst;
  double worst_ms = 0;
  if (cg.infer_shapes().ok()) {
    auto steps = jit::lower(cg, {});
    std::set<std::string> seen;
    for (const auto& st : steps.ok() ? *steps : std::vector<jit::LoweredStep>{}) {
      if (st.kind != jit::LoweredStep::Kind::kernel) continue;
      const auto t0 = Clock::now();
      auto k = jit::generate_c(st.spec);
      const double tg = ms_since(t0);
      if (!k.ok() || !seen.insert(k->name).second) continue;
      const auto t1 = Clock::now();
      hpf_blob* blob = nullptr;
      hpf_error* e = cpu.api->program_compile(cpu.p, 0, k->source.c_str(), k->source.size(), &blob);
      const double tc = ms_since(t1);
      if (e) {
        cpu.api->error_destroy(e);
        continue;
      }
      cpu.api->blob_free(cpu.p, blob);
      gen_ms.push_back(tg);
      cc_ms.push_back(tc);
      total_ms.push_back(tg + tc);
      if (tg + tc > worst_ms) worst_ms = tg + tc, worst = st.spec.family;
    }
  }

  // Warm: two Session compiles into a fresh cache.
  const auto dir = std::filesystem::temp_directory_path() / ("hpf-compile-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SessionOptions o;
  o.plugin = "cpu";
  o.cache_dir = dir.string();
  double first_ms = -1, second_ms = -1;
  int64_t kernels = 0, hits = 0, misses = 0;
  if (auto s = Session::create(o); s.ok()) {
    auto e1 = s->compile(*g, shapes);
    auto e2 = s->compile(*g, shapes);
    if (e1.ok() && e2.ok()) {
      first_ms = e1->compile_stats().ms;
      second_ms = e2->compile_stats().ms;
      kernels = e2->compile_stats().kernels;
      hits = e2->compile_stats().cache_hits;
      misses = e1->compile_stats().cache_misses;
    } else {
      std::printf("%s: session compile failed: %s\n", model.c_str(),
                  (e1.ok() ? e2.status() : e1.status()).to_string().c_str());
    }
  } else {
    std::printf("%s: %s\n", model.c_str(), s.status().to_string().c_str());
  }
  std::filesystem::remove_all(dir);

  const double k = std::max<int64_t>(1, kernels);
  std::printf("%-10s %7zu %9.2f %9.1f %9.1f %9.1f (%s)  | %7lld %6lld/%-6lld %9.1f %9.1f %8.2f %8.2f\n", model.c_str(),
              cc_ms.size(), median(gen_ms), median(cc_ms), median(total_ms), worst_ms, worst.c_str(),
              static_cast<long long>(kernels), static_cast<long long>(misses), static_cast<long long>(hits), first_ms,
              second_ms, first_ms / k, second_ms / k);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models{"bert-tiny", "mlp", "cnn-small"};
  if (argc > 1) models.assign(argv + 1, argv + argc);
  Plugin cpu;
  if (!cpu.init()) {
    std::printf("CPU plugin unusable\n");
    return 1;
  }
  std::printf("cold: per distinct kernel, generate_c + plugin program_compile (median ms); max = slowest kernel\n");
  std::printf("warm: Session::compile twice into a fresh cache dir (1st: compile+store, 2nd: cache loads)\n");
  std::printf("%-10s %7s %9s %9s %9s %9s          | %7s %13s %9s %9s %8s %8s\n", "model", "kernels", "gen ms",
              "cc ms", "cold ms", "max ms", "kernels", "miss/hit", "1st ms", "2nd ms", "1st/k", "2nd/k");
  for (const auto& m : models) bench_model(cpu, m);
  return 0;
}
