// The live runtime: Session::compile turns a graph into an Executable for the best device a
// loaded plugin offers — kernels generated per shape and format, looked up in the kernel cache
// or compiled by the plugin and stored, loaded, and a memory plan that reuses buffers.
// Executable::run feeds inputs, launches the kernels, and returns the outputs.
//
// Ownership: a Session owns its kernel cache connection; plugins belong to the process-wide
// PluginHost::shared() and live until exit. An Executable owns its loaded programs and device
// buffers and may outlive the Session that made it. Neither is synchronised: one thread per
// Executable at a time (different Executables may run concurrently).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

struct SessionOptions {
  std::string plugin;                 // plugin name ("cpu"); empty: the best-scoring device
  DType precision = DType::F32;       // storage format of weights and intermediate values
  // A precision plan (precision.hpp), which then decides each node's storage and weight formats
  // instead of `precision`. Formats the device's kernels do not read or write fall back to F32
  // (logged). The plan must match the graph given to compile (Plan::check_matches).
  std::shared_ptr<const Plan> plan;
  bool use_cache = true;              // HPF_CACHE=0 also turns the cache off
  std::string cache_dir;              // empty: HPF_CACHE_DIR, else the XDG cache
  // Called after each kernel is ready (done, total), for progress displays. May be empty.
  std::function<void(size_t done, size_t total)> progress;
};

struct CompileStats {
  int64_t kernels = 0;       // distinct kernels the executable launches
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;  // compiled by the plugin (and stored)
  int64_t standalone_casts = 0;  // kernels that only convert formats (casts not fused away)
  int64_t weight_bytes = 0;      // device bytes of the weights in their storage formats
  int64_t fallbacks = 0;     // nodes run by the reference interpreter (no generator, or
                             // value-dependent shapes)
  std::vector<std::string> fallback_nodes;  // "name (Op)" of each
  double ms = 0;             // wall time of compile()
  std::string device;        // "<plugin>: <device name> (<architecture>)"
};

struct StepProfile {
  std::string label;  // node name(s) fused into the step
  std::string kind;   // "kernel", "fallback"
  int64_t calls = 0;
  double total_ms = 0;
};

class Executable {
 public:
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  // Inputs in graph-input order, each of the graph input's dtype and of the shape the
  // executable was compiled for; errors name the input and what was expected.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);

  const CompileStats& compile_stats() const;
  // Bytes of device memory the executable holds: weights plus the peak of the reused arena.
  size_t peak_memory_bytes() const;
  // Per-step times accumulated over every run() so far, in launch order.
  std::vector<StepProfile> profile() const;
  const std::vector<std::string>& output_names() const;

  struct Impl;
  explicit Executable(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  // Loads plugins (PluginHost::shared()), picks the device, opens the kernel cache. Errors: no
  // usable device (with every plugin's reason), the named plugin missing or unusable.
  static Expected<Session> create(SessionOptions options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Compiles `graph` for concrete input shapes (one per graph input; empty: the graph's own
  // shapes, which must then be fully known).
  Expected<Executable> compile(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes = {});

  const std::string& device() const;
  // The formats the device's kernels take, for making plans (plan_from_policy, the planner).
  DeviceFormats device_formats() const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpf
