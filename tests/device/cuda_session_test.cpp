// Whole models on the GPU through the Session (runtime/session, the CUDA plugin's best device):
//   - every built-in model in FP32 against the reference interpreter;
//   - the `auto` plan made on the GPU (DeviceEvaluator: trial plans compiled and run there)
//     within its budget on the model's own inputs, with the FP32 and auto medians printed.
// Without a GPU every case prints "skipped: <reason>" (ctest counts it as skipped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "doctest/doctest.h"
#include "gpu_kernel_runner.hpp"
#include "hpf/divergence.hpp"
#include "hpf/models.hpp"
#include "hpf/planner.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"

using namespace hpf;

namespace {

const char* plugin_dir() {
  const char* dir = std::getenv("HPF_DEVICE_PLUGIN_DIR");
  return dir && *dir ? dir : HPF_TEST_PLUGIN_OUTPUT_DIR;
}

// Why this machine cannot run the cases ("" when it can). Also points the Session's shared
// plugin host at the same directory (it reads HPF_PLUGIN_PATH on first use).
const std::string& no_gpu() {
  static const std::string why = [] {
    setenv("HPF_PLUGIN_PATH", plugin_dir(), 1);
    device::GpuTarget t = device::find_gpu(plugin_dir());
    return t.plugin ? std::string() : t.why;
  }();
  return why;
}

#define NEED_GPU()                     \
  if (!no_gpu().empty()) {             \
    MESSAGE("skipped: " << no_gpu());  \
    return;                            \
  }

SessionOptions gpu_options() {
  SessionOptions so;
  so.plugin = "cuda";
  // A cache of this run's own: a plan's kernels compile once across the planner's trials.
  so.cache_dir = (std::filesystem::temp_directory_path() / "hpf-device-session-cache").string();
  return so;
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor>& t) {
  std::vector<std::vector<int64_t>> s;
  for (const Tensor& x : t) s.push_back(x.shape());
  return s;
}

// Max |y - ref| over max |ref| across the float outputs; integer outputs must be equal.
double worst_error(const std::vector<Tensor>& y, const std::vector<Tensor>& ref) {
  double worst = 0;
  for (size_t o = 0; o < ref.size(); ++o) {
    if (!is_float(ref[o].dtype())) {
      if (y[o].to_f32() != ref[o].to_f32()) return INFINITY;
      continue;
    }
    const std::vector<float> a = y[o].to_f32(), b = ref[o].to_f32();
    double scale = 1e-30, err = 0;
    for (float v : b) scale = std::max(scale, double(std::fabs(v)));
    for (size_t i = 0; i < b.size(); ++i) err = std::max(err, std::fabs(double(a[i]) - b[i]));
    worst = std::max(worst, err / scale);
  }
  return worst;
}

double median_ms(Executable& exe, const std::vector<Tensor>& in, int runs) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(exe.run(in).ok());
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

TEST_CASE("device cuda session: every built-in model in FP32 on the GPU against the reference") {
  NEED_GPU();
  auto s = Session::create(gpu_options());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  for (const char* model : {"mlp", "cnn-small", "bert-tiny", "lstm-lm", "bert-layer", "bert-base"}) {
    CAPTURE(model);
    auto g = models::builtin(model);
    REQUIRE(g.ok());
    auto in = models::example_inputs(*g, 7, 2);
    REQUIRE(in.ok());
    auto exe = s->compile(*g, shapes_of(*in));
    REQUIRE_MESSAGE(exe.ok(), exe.status().message());
    CHECK(exe->compile_stats().fallbacks == 0);
    auto y = exe->run(*in);
    REQUIRE_MESSAGE(y.ok(), y.status().message());
    auto ref = ref::run(*g, *in);
    REQUIRE(ref.ok());
    const double err = worst_error(*y, *ref);
    std::printf("%-10s fp32 on %s: %lld kernels, max error %.2e of max |ref|, median %.3f ms\n", model,
                s->device().c_str(), static_cast<long long>(exe->compile_stats().kernels), err,
                median_ms(*exe, *in, 10));
    CHECK(err <= 1e-4);
  }
}

TEST_CASE("device cuda session: the auto plan made on the GPU stays within its budget") {
  NEED_GPU();
  for (const char* model : {"cnn-small", "bert-tiny", "bert-base"}) {
    CAPTURE(model);
    auto g = models::builtin(model);
    REQUIRE(g.ok());
    auto calib = random_calibration_inputs(*g, 4, 1007, 1);
    REQUIRE(calib.ok());
    const SessionOptions so = gpu_options();
    auto s = Session::create(so);
    REQUIRE(s.ok());
    auto ev = DeviceEvaluator::create(so, *g, *calib);
    REQUIRE_MESSAGE(ev.ok(), ev.status().message());
    PlannerOptions po;
    po.device = s->device_formats();
    {  // the GPU's roofline from the hwdb, as hpf run --device cuda plans with
      device::GpuTarget t = device::find_gpu(plugin_dir());
      const DeviceRecord& d = t.plugin->devices()[t.device];
      po.device_model = DeviceModel::device({d.name, d.architecture, d.compute_units, d.memory_bytes});
    }
    PlannerReport report;
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = plan_auto(*g, po, ev->evaluators(), &*calib, &report);
    REQUIRE_MESSAGE(plan.ok(), plan.status().message());
    const double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(plan->divergence <= po.kl_budget);

    auto in = models::example_inputs(*g, 7, 1);
    REQUIRE(in.ok());
    auto fp32 = s->compile(*g, shapes_of(*in));
    REQUIRE(fp32.ok());
    SessionOptions with_plan = so;
    with_plan.plan = std::make_shared<const Plan>(*plan);
    auto sp = Session::create(with_plan);
    REQUIRE(sp.ok());
    auto mixed = sp->compile(*g, shapes_of(*in));
    REQUIRE_MESSAGE(mixed.ok(), mixed.status().message());
    auto y = mixed->run(*in);
    REQUIRE(y.ok());
    auto ref = ref::run(*g, *in);
    REQUIRE(ref.ok());
    double kl = 0;
    for (size_t o = 0; o < ref->size(); ++o)
      if (g->value(g->outputs()[o]).name == "logits") {  // the models' KL-compared output
        auto d = compare((*ref)[o], (*y)[o]);
        REQUIRE(d.ok());
        kl = std::max(kl, d->kl);
      }
    std::string modes;
    for (const auto& [m, n] : report.modes) modes += (modes.empty() ? "" : ", ") + m + " " + std::to_string(n);
    const double t32 = median_ms(*fp32, *in, 20), tauto = median_ms(*mixed, *in, 20);
    std::printf("%-10s auto on the GPU: %s; planned in %.1f s, divergence %.2e (budget %.0e), KL on its own input "
                "%.2e (logits); median fp32 %.3f ms, auto %.3f ms (%.2fx)\n",
                model, modes.c_str(), plan_s, plan->divergence, po.kl_budget, kl, t32, tauto, t32 / tauto);
    CHECK(kl <= po.kl_budget);
  }
}
