// What `hpf run` and `hpf bench` share (run_common.hpp).
#include "apps/hpf/run_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "hpf/onnx.hpp"
#include "hpf/plugin_host.hpp"

namespace hpf::cli {
namespace {

// Seeded random calibration batches when --calib is not given. The plan must hold on each (the
// divergence is the worst batch's): with 2, a BERT-base plan within 0.5 x budget on both left
// the budget on other inputs, whose divergence varies over orders of magnitude.
constexpr int kCalibrationBatches = 4;

using hpf::DType;

// A tensor from a .npy or ONNX TensorProto (.pb) file, in `want`'s dtype when both are float or
// both integer (a float file for an integer input, or the reverse, is an error).
hpf::Expected<hpf::Tensor> load_input(const std::string& name, const std::string& path, DType want) {
  const std::string ext = std::filesystem::path(path).extension().string();
  hpf::Expected<hpf::Tensor> t = hpf::Status::internal("unset");
  if (ext == ".npy") t = hpf::load_npy(path);
  else if (ext == ".pb") t = hpf::load_tensor_pb(path);
  else return hpf::Status::invalid("--input " + name + "=" + path + ": unknown file type (.npy or .pb)");
  if (!t.ok()) return t.status().with_context("input '" + name + "'");
  if (t->dtype() == want) return t;
  if (hpf::is_float(t->dtype()) != hpf::is_float(want) || (want == DType::BOOL) != (t->dtype() == DType::BOOL))
    return hpf::Status::invalid("input '" + name + "': " + path + " holds " + std::string(hpf::dtype_name(t->dtype())) +
                                ", the model takes " + std::string(hpf::dtype_name(want)));
  return t->cast(want);
}

}  // namespace

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1 << 20) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else if (b >= 1 << 10) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

hpf::Expected<int64_t> int_option(const Args& a, const char* opt, int64_t min, int64_t def) {
  if (!a.options.count(opt)) return def;
  const std::string v = a.option(opt);
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || n < min) return hpf::Status::invalid("option " + std::string(opt) + ": bad value '" + v + "'");
  return n;
}

hpf::Status parse_model_spec(const Args& a, ModelSpec& r) {
  HPF_ASSIGN_OR_RETURN(r.batch, int_option(a, "--batch", 1, r.batch));
  HPF_ASSIGN_OR_RETURN(int64_t seed, int_option(a, "--seed", 0, 7));
  HPF_ASSIGN_OR_RETURN(seed, int_option(a, "--random-inputs", 0, seed));
  r.seed = static_cast<uint64_t>(seed);
  auto pairs = [&](const char* opt) -> hpf::Expected<std::vector<std::pair<std::string, std::string>>> {
    std::vector<std::pair<std::string, std::string>> out;
    auto it = a.lists.find(opt);
    if (it == a.lists.end()) return out;
    for (const std::string& v : it->second) {
      const size_t eq = v.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return hpf::Status::invalid("option " + std::string(opt) + ": '" + v + "' is not NAME=VALUE");
      out.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    }
    return out;
  };
  HPF_ASSIGN_OR_RETURN(r.input_files, pairs("--input"));
  HPF_ASSIGN_OR_RETURN(auto dims, pairs("--dim"));
  for (const auto& [name, v] : dims) {
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (*end || n < 0) return hpf::Status::invalid("option --dim: '" + v + "' is not a size for '" + name + "'");
    r.dims[name] = n;
  }
  r.calib = a.option("--calib");
  r.device = a.option("--device");
  if (a.options.count("--kl-budget")) {
    char* end = nullptr;
    r.kl_budget = std::strtod(a.option("--kl-budget").c_str(), &end);
    if (*end || !(r.kl_budget > 0)) return hpf::Status::invalid("--kl-budget: '" + a.option("--kl-budget") + "' is not a positive number");
  }
  if (a.options.count("--kl-margin")) {
    char* end = nullptr;
    r.kl_margin = std::strtod(a.option("--kl-margin").c_str(), &end);
    if (*end || !(r.kl_margin > 0 && r.kl_margin <= 1))
      return hpf::Status::invalid("--kl-margin: '" + a.option("--kl-margin") + "' is not in (0, 1]");
  }
  return hpf::Status();
}

hpf::Expected<hpf::Graph> load_model(const std::string& model) {
  return model.rfind("builtin:", 0) == 0 ? hpf::models::builtin(model) : hpf::import_onnx(model);
}

hpf::Expected<std::vector<hpf::Tensor>> make_inputs(hpf::Graph& g, const ModelSpec& a, std::vector<std::string>& sources) {
  std::map<std::string, int64_t> bound = a.dims;
  std::map<std::string, std::string> bound_by;
  for (const auto& [sym, v] : a.dims) bound_by[sym] = "--dim " + sym + "=" + std::to_string(v);
  std::map<ValueId, hpf::Tensor> given;
  for (const auto& [name, path] : a.input_files) {
    auto id = g.find_value(name);
    if (!id || std::find(g.inputs().begin(), g.inputs().end(), *id) == g.inputs().end()) {
      std::string names;
      for (ValueId v : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(v).name;
      return hpf::Status::invalid("--input " + name + "=" + path + ": the model has no input '" + name +
                                  "' (inputs: " + names + ")");
    }
    if (given.count(*id)) return hpf::Status::invalid("--input: '" + name + "' is given twice");
    const hpf::Value& v = g.value(*id);
    HPF_ASSIGN_OR_RETURN(hpf::Tensor t, load_input(name, path, v.dtype));
    if (v.has_shape) {
      if (t.rank() != static_cast<int64_t>(v.shape.size()))
        return hpf::Status::invalid("input '" + name + "': " + path + " has shape " + hpf::shape_string(t.shape()) +
                                    ", the model takes " + hpf::to_string(v.shape));
      for (size_t d = 0; d < v.shape.size(); ++d) {
        const hpf::Dim& dim = v.shape[d];
        const int64_t got = t.shape()[d];
        if (dim.known() && dim.value != got)
          return hpf::Status::invalid("input '" + name + "': " + path + " has shape " + hpf::shape_string(t.shape()) +
                                      ", the model takes " + hpf::to_string(v.shape));
        if (!dim.known() && !dim.symbol.empty()) {
          auto [it, fresh] = bound.emplace(dim.symbol, got);
          if (!fresh && it->second != got)
            return hpf::Status::invalid("input '" + name + "': dimension '" + dim.symbol + "' is " + std::to_string(got) +
                                        " in " + path + " but " + std::to_string(it->second) + " from " +
                                        bound_by[dim.symbol]);
          bound_by.emplace(dim.symbol, path);
        }
      }
    }
    given.emplace(*id, std::move(t));
  }
  // Bind the remaining symbols and fix the input shapes.
  for (ValueId id : g.inputs()) {
    hpf::Value& v = g.value(id);
    if (given.count(id)) {
      v.shape = hpf::make_shape(given.at(id).shape());
      v.has_shape = true;
      continue;
    }
    if (!v.has_shape) return hpf::Status::invalid("input '" + v.name + "' has no shape in the model; give it with --input");
    bool first = true;
    for (hpf::Dim& d : v.shape) {
      if (d.known()) continue;
      int64_t value = first ? a.batch : 1;
      if (!d.symbol.empty()) value = bound.emplace(d.symbol, value).first->second;
      d = hpf::Dim(value);
      first = false;
    }
  }
  HPF_RETURN_IF_ERROR(g.infer_shapes());
  HPF_ASSIGN_OR_RETURN(auto random, hpf::models::example_inputs(g, a.seed, a.batch));
  std::vector<hpf::Tensor> out;
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    auto it = given.find(g.inputs()[k]);
    if (it != given.end()) {
      out.push_back(std::move(it->second));
      for (const auto& [name, path] : a.input_files)
        if (name == g.value(g.inputs()[k]).name) sources.push_back(path);
    } else {
      out.push_back(std::move(random[k]));
      sources.push_back("seed " + std::to_string(a.seed));
    }
  }
  return out;
}

// The calibration inputs: --calib, or seeded random batches.
hpf::Expected<std::vector<std::vector<hpf::Tensor>>> calibration_batches(const hpf::Graph& g, const ModelSpec& a) {
  if (!a.calib.empty()) return hpf::load_calibration_dir(g, a.calib);
  return hpf::random_calibration_inputs(g, kCalibrationBatches, a.seed + 1000, a.batch);
}

// The plan of a policy without `auto`, its activation and input scales (int8, fp8) calibrated
// on the calibration inputs, as the planner calibrates its own.
hpf::Expected<hpf::Plan> calibrated_policy_plan(const hpf::Graph& g, const ModelSpec& a, const hpf::Policy& policy,
                                                const hpf::DeviceFormats& formats) {
  HPF_ASSIGN_OR_RETURN(hpf::Plan plan, hpf::plan_from_policy(g, policy, formats));
  const std::vector<std::string> values = hpf::values_to_observe(g, plan);
  std::map<std::string, hpf::Observer> observers;
  if (!values.empty()) {
    HPF_ASSIGN_OR_RETURN(auto calib, calibration_batches(g, a));
    HPF_RETURN_IF_ERROR(hpf::observe_values(g, calib, values, observers));
  }
  hpf::PlannerOptions po;
  po.device = formats;  // the device's INT8 weight range
  HPF_RETURN_IF_ERROR(hpf::calibrate_plan(g, plan, observers, po).with_context("calibrating the plan"));
  return plan;
}

hpf::Expected<hpf::Plan> plan_automatically(const hpf::Graph& g, const ModelSpec& a, const hpf::SessionOptions& so,
                                            const hpf::Policy& policy, const hpf::DeviceFormats& formats, bool quiet,
                                            nlohmann::json& j) {
  const auto t0 = std::chrono::steady_clock::now();
  HPF_ASSIGN_OR_RETURN(auto calib, calibration_batches(g, a));
  HPF_ASSIGN_OR_RETURN(hpf::DeviceEvaluator ev, hpf::DeviceEvaluator::create(so, g, calib));
  hpf::PlannerOptions po;
  po.kl_budget = a.kl_budget;
  po.margin = a.kl_margin;
  po.device = formats;
  po.policy = policy;
  // The roofline of the device the plans run on: the host CPU's by default, a GPU's from the hwdb.
  if (hpf::Plugin* p = so.plugin.empty() || so.plugin == "cpu" ? nullptr : hpf::PluginHost::shared().plugin(so.plugin);
      p && !p->devices().empty()) {
    const hpf::DeviceRecord& d = p->best_device();
    po.device_model = hpf::DeviceModel::device({d.name, d.architecture, d.compute_units, d.memory_bytes});
  }
  hpf::PlannerReport report;
  HPF_ASSIGN_OR_RETURN(hpf::Plan plan, hpf::plan_auto(g, po, ev.evaluators(), &calib, &report));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string modes;
  for (const auto& [m, n] : report.modes) modes += (modes.empty() ? "" : ", ") + m + " " + std::to_string(n);
  if (!quiet) {
    std::printf("planner  %s; %d evaluations (%d for sensitivity, %d groups, %d retimings more) in %.1f s; calibration: %s\n",
                ev.describe().c_str(), report.evaluations, report.sensitivity_evaluations, report.groups, report.retimings, ms / 1000,
                a.calib.empty() ? (std::to_string(kCalibrationBatches) + " seeded random batches").c_str() : a.calib.c_str());
    std::printf("planner  nodes: %s; divergence %.3e (budget %.1e); predicted %.3f -> %.3f ms, bytes %lld -> %lld\n",
                modes.c_str(), plan.divergence, a.kl_budget, report.fp32_ms, report.plan_ms,
                static_cast<long long>(report.fp32_bytes), static_cast<long long>(report.plan_bytes));
    if (report.fp32_measured_ms > 0 && report.plan_measured_ms > 0)
      std::printf("planner  measured on the calibration batches: %.3f -> %.3f ms (%d slower plans refused, %d nodes back "
                  "to FP32)\n",
                  report.fp32_measured_ms, report.plan_measured_ms, report.rejected_slower, report.restored);
    if (report.fp32_peak_bytes > 0 && report.plan_peak_bytes > 0)
      std::printf("planner  peak memory %s -> %s (%d peak-pass moves)\n", human_bytes(double(report.fp32_peak_bytes)).c_str(),
                  human_bytes(double(report.plan_peak_bytes)).c_str(), report.peak_moves);
  }
  j["planner"] = {{"metric", ev.describe()}, {"evaluations", report.evaluations}, {"retimings", report.retimings},
                  {"seconds", ms / 1000},
                  {"budget", a.kl_budget}, {"divergence", plan.divergence}, {"modes", report.modes},
                  {"predicted_ms", {{"fp32", report.fp32_ms}, {"plan", report.plan_ms}}},
                  {"measured_ms", {{"fp32", report.fp32_measured_ms}, {"plan", report.plan_measured_ms}}},
                  {"rejected_slower", report.rejected_slower}, {"restored", report.restored},
                  {"peak_bytes", {{"fp32", report.fp32_peak_bytes}, {"plan", report.plan_peak_bytes}}},
                  {"peak_moves", report.peak_moves},
                  {"bytes", {{"fp32", report.fp32_bytes}, {"plan", report.plan_bytes}}}};
  return plan;
}

hpf::Expected<ChosenPlan> choose_plan(const hpf::Graph& g, const ModelSpec& spec, const std::string& plan_arg,
                                      const hpf::SessionOptions& so, const hpf::DeviceFormats& formats, bool quiet,
                                      nlohmann::json& j, bool* usage_error) {
  // Every error is returned with the whole text to print as its message.
  auto failed = [](const hpf::Status& s, const std::string& text) { return hpf::Status(s.code(), text); };
  auto plan = std::make_shared<hpf::Plan>();
  std::string label;
  if (std::filesystem::exists(plan_arg)) {
    // A saved plan ("format": "libhpf-plan"), or a policy ({"attention": "fp16", ...}).
    std::ifstream in(plan_arg);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\"libhpf-plan\"") != std::string::npos) {
      auto loaded = hpf::Plan::load(plan_arg);
      if (!loaded.ok()) return failed(loaded.status(), loaded.status().message());
      *plan = std::move(loaded).value();
    } else {
      auto policy = hpf::Policy::from_json(text);
      if (!policy.ok())
        return failed(policy.status(), "--plan " + plan_arg + ": neither a plan nor a policy: " + policy.status().message());
      bool any_auto = policy->default_mode == hpf::Mode::auto_;
      for (const auto& [c, m] : policy->by_class) any_auto = any_auto || m == hpf::Mode::auto_;
      for (const auto& [glob, m] : policy->by_node) any_auto = any_auto || m == hpf::Mode::auto_;
      auto made = any_auto ? plan_automatically(g, spec, so, *policy, formats, quiet, j)
                           : calibrated_policy_plan(g, spec, *policy, formats);
      if (!made.ok()) return failed(made.status(), made.status().to_string());
      *plan = std::move(made).value();
    }
    label = "plan " + plan_arg;
  } else if (plan_arg == "auto") {
    auto planned = plan_automatically(g, spec, so, hpf::Policy::uniform(hpf::Mode::auto_), formats, quiet, j);
    if (!planned.ok()) return failed(planned.status(), planned.status().to_string());
    *plan = std::move(planned).value();
    label = "plan auto";
  } else {
    auto mode = hpf::parse_mode(plan_arg);
    if (!mode.ok()) {
      if (usage_error) *usage_error = true;
      return failed(mode.status(), "--plan " + plan_arg + ": neither a plan file nor a mode (" + mode.status().message() + ")");
    }
    auto made = calibrated_policy_plan(g, spec, hpf::Policy::uniform(*mode), formats);
    if (!made.ok()) return failed(made.status(), made.status().to_string());
    *plan = std::move(made).value();
    label = std::string("plan ") + hpf::mode_name(*mode);
  }
  return ChosenPlan{std::move(plan), std::move(label)};
}

}  // namespace hpf::cli
