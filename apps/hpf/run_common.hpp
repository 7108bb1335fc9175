// What `hpf run` and `hpf bench` share: loading a model, making its inputs, and turning a --plan
// argument into a precision plan (a mode, a plan or policy file, or the planner's `auto`).
// Plain functions; nothing here keeps state between calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hpf/cli.hpp"
#include "hpf/hpf.hpp"
#include "hpf/session.hpp"

namespace hpf::cli {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The median of `v` (0 for none; the mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// "1.5 MiB", "12.0 KiB", "512 B".
std::string human_bytes(double bytes);

// Where a model's inputs come from and how `auto` plans it (the options hpf run and hpf bench
// share).
struct ModelSpec {
  std::vector<std::pair<std::string, std::string>> input_files;  // --input NAME=FILE
  std::map<std::string, int64_t> dims;                             // --dim NAME=VALUE
  int64_t batch = 1;
  uint64_t seed = 7;
  double kl_budget = 1e-3;  // --kl-budget, for --plan auto
  double kl_margin = 0.5;   // --kl-margin: the planner searches within margin * budget
  std::string calib;        // --calib DIR, for --plan auto
  std::string device;       // --device PLUGIN: run there ("": the best device the plugins offer)
};

// An integer option at least `min` (`def` when absent); "option --x: bad value 'v'" otherwise.
Expected<int64_t> int_option(const Args& a, const char* option, int64_t min, int64_t def);

// Reads --batch, --seed, --random-inputs (a synonym of --seed that wins), --input NAME=FILE,
// --dim NAME=VALUE, --kl-budget, --calib and --device into `spec`; the caller's parse_args must accept them.
Status parse_model_spec(const Args& a, ModelSpec& spec);

// builtin:NAME, or an ONNX file.
Expected<Graph> load_model(const std::string& model);

// The inputs of `g`: the files given, seeded random values for the rest. Symbolic dimensions
// are bound from --dim, then from the files' shapes; the rest get `batch` (the first symbol of
// an input) or 1. `g`'s input shapes are made concrete to match. `sources` gets, per input, the
// file it came from or "seed N".
Expected<std::vector<Tensor>> make_inputs(Graph& g, const ModelSpec& spec, std::vector<std::string>& sources);

// --plan auto: the planner with plans measured on the device, on calibration inputs from
// spec.calib or seeded random ones (not the run's own inputs, which then check the plan).
// Prints two lines unless `quiet`; j["planner"] gets the planner's figures.
Expected<Plan> plan_automatically(const Graph& g, const ModelSpec& spec, const SessionOptions& so,
                                  const Policy& policy, const DeviceFormats& formats, bool quiet,
                                  nlohmann::json& j);

struct ChosenPlan {
  std::shared_ptr<const Plan> plan;
  std::string label;  // "plan bf16", "plan auto", "plan FILE"
};

// A --plan argument: an existing file holding a saved plan ("format": "libhpf-plan") or a policy
// ({"attention": "fp16", ...}, planned automatically where it says auto), "auto", or a mode every
// node gets where the device has it. Errors carry the full message to print; `usage_error` is
// set when `plan` is neither a file nor a mode (a usage error).
Expected<ChosenPlan> choose_plan(const Graph& g, const ModelSpec& spec, const std::string& plan,
                                 const SessionOptions& so, const DeviceFormats& formats, bool quiet,
                                 nlohmann::json& j, bool* usage_error = nullptr);

}  // namespace hpf::cli
