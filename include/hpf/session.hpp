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

// Weights a Session derives from a graph's constant initializers at compile (packed panels,
// quantised copies) and the device copies of the weights (in each storage format), kept for other
// compiles: the planner compiles one graph under dozens of plans, a LiveExecutable one graph for
// many shapes; BERT-base's 85M weights took seconds to quantise, pack and upload each time.
// Packed entries are keyed by initializer name, shape, format and quantisation parameters, so a
// cache must be shared only between compiles of graphs whose equally named initializers hold
// equal values (one model). Device copies (weights of 64 KiB and more) are keyed by the
// initializer tensor itself, so executables compiled from copies of one Graph share them; they
// are read-only to kernels. It holds every entry until destroyed, except device copies of
// tensors no longer alive anywhere; an Executable keeps the entries it uses. Thread-safe.
class WeightCache {
 public:
  static std::shared_ptr<WeightCache> create();
  virtual ~WeightCache() = default;
  virtual int64_t entries() const = 0;
  virtual int64_t bytes() const = 0;
  virtual int64_t hits() const = 0;
};

struct SessionOptions {
  std::string plugin;                 // plugin name ("cpu"); empty: the best-scoring device
  DType precision = DType::F32;       // storage format of weights and intermediate values
  // A precision plan (precision.hpp), which then decides each node's storage and weight formats
  // instead of `precision`. Formats the device's kernels do not read or write fall back to F32
  // (logged). The plan must match the graph given to compile (Plan::check_matches).
  std::shared_ptr<const Plan> plan;
  bool use_cache = true;              // HPF_CACHE=0 also turns the cache off
  std::string cache_dir;              // empty: HPF_CACHE_DIR, else the XDG cache
  // Called as the binaries of the distinct kernels are ready (done, total: from the kernel cache,
  // or compiled), for progress displays; never concurrently, maybe from a compiling thread. May
  // be empty.
  std::function<void(size_t done, size_t total)> progress;
  // Packed weights and device copies of weights shared with other compiles of the same model
  // (see WeightCache); may be null. A LiveExecutable creates one when this is null.
  std::shared_ptr<WeightCache> weight_cache;
  // Autotuning: kernels whose generator offers tile configurations (Conv with packed weights)
  // run the configuration measured fastest on this device: chosen once and kept in the kernel
  // cache (runtime/session/autotune.hpp), so a later compile replays it. The first compile of
  // such a kernel compiles and times every configuration (seconds for ResNet-50).
  bool autotune = false;
  // Where compile() writes the source of every kernel it generates, one file each
  // (<kernel name>.c, .cu or .hip, headed by the step's label), for reading and for timing
  // outside the runtime; the directory is created. Empty: HPF_DUMP_DIR, else nowhere. A file
  // that cannot be written is logged and skipped.
  std::string dump_dir;
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
  // MatMul/Gemm nodes whose constant weights the plan stores as INT8, INT4, BF16 or F16, or
  // whose F32 weights serve a GEMV (at most 4 rows): packed once at compile in 16-column panels
  // (weight_bytes counts the packed bytes) and run by matmul_wq / matmul_i8 kernels; and Gather
  // nodes whose table (an embedding) the plan quantises to INT8 or INT4, run by gather_q kernels.
  std::vector<std::string> packed_weight_nodes;
  // Conv nodes whose constant weights were packed once at compile in the order their kernel reads
  // them (jit/codegen/conv_packing.hpp): FP32 weights for the implicit GEMM, and BF16 weights of
  // a BF16 Conv for the AMX kernel on a device with AMX-BF16.
  std::vector<std::string> packed_conv_nodes;
  // Nodes computing in INT8 (u8 x s8 -> s32): int8 MatMul/Gemm nodes (of packed_weight_nodes)
  // whose input is quantised with a calibrated or a per-row run-time scale (hpf::int8_input),
  // and int8 Conv nodes (their input quantised with NodePlan::input_quant).
  std::vector<std::string> int8_compute_nodes;
  // With SessionOptions::autotune: per distinct tuned kernel, "<step label>: <tile> (measured)",
  // "... (cached)" when the kernel cache held the choice, or "... (default: ...)" when the
  // variants could not be compiled.
  std::vector<std::string> tuned_kernels;
  // Kernel steps whose output took the memory of an input that dies there (a Conv's residual
  // Add: the output written over the residual, element by element; runtime/session/memory_plan.hpp).
  int64_t in_place_steps = 0;
  double ms = 0;             // wall time of compile()
  std::string device;        // "<plugin>: <device name> (<architecture>)"
};

struct StepProfile {
  std::string label;  // node name(s) fused into the step
  std::string kind;   // "kernel", "fallback"
  int64_t calls = 0;
  double total_ms = 0;
  std::vector<std::string> nodes;  // names of the graph nodes the step computes (empty: the
                                   // dynamic region)
  // A kernel step's time per launch as recorded in the kernel cache by earlier
  // Executable::save_timings (any process on this device with as many compute units: the CPU
  // plugin's threads): the fastest of `cached_measurements` saved measurements; -1 (and 0) when
  // none.
  double cached_ms = -1;
  int64_t cached_measurements = 0;
};

// A node whose low-precision output overflowed in the last run() (see
// Executable::set_overflow_watch): its step's inputs were finite, the step recomputed in FP32 from
// those inputs gives this node a finite value, and that value does not fit `storage` (rounds to
// Inf, or to NaN for F8E4M3, or saturates there) — so the FP32 plan would not have the Inf/NaN.
struct OverflowHit {
  std::string node;   // graph node name
  std::string value;  // its output value
  DType storage = DType::F32;  // the format the executable stored it in
  int64_t elements = 0;        // elements of the FP32 result that do not fit `storage`
  double fp32_amax = 0;        // largest |x| of the FP32 result
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
  // Stores each kernel's mean time per launch over the runs so far beside its binary in the
  // kernel cache as one measurement, merged with those earlier runs with the same number of
  // compute units stored: the fastest of them is kept (a shared machine only ever slows a kernel
  // down, for minutes at a time), with their count, so the next plan or process can use it
  // without measuring again (StepProfile::cached_ms). A no-op without a cache. Not synchronised
  // with other Executables of the same Session.
  Status save_timings();
  // Per-step times accumulated over every run() so far, in launch order.
  std::vector<StepProfile> profile() const;
  // Per-step timing on a device that queues launches (the GPU dialects): on, each kernel step
  // waits for the device, so its time is the device's (and runs are slower by that wait); off
  // (the default there), kernel steps are not timed: their calls and times stay 0. Devices that
  // run launches synchronously (the CPU plugin) time every step either way.
  void set_step_timing(bool on);
  // Forgets the times and calls accumulated so far (e.g. after warm-up runs), for profile() and
  // save_timings().
  void clear_profile();
  const std::vector<std::string>& output_names() const;

  // Overflow watch, for live recompilation (live.hpp). Off by default. When on, run() reads back
  // every step output stored in a low-precision float format (F16, BF16, F8E4M3, F8E5M2) right
  // after the step, through Buffer::copy_out, and tests its bits for Inf/NaN (F8E4M3, which has
  // no Inf: NaN or +-448). A kernel that keeps an F16 value in registers (a Conv/MatMul whose
  // epilogue absorbed overflow-transparent consumers: Add, Sub, Mul, Div, BatchNormalization,
  // Cast, Relu, LeakyRelu) has its output read whatever its format: an overflow there arrives as
  // Inf/NaN, or (Relu of -Inf) as the value FP32 gives too, which changes nothing and is not
  // reported. That one pass over those outputs is the whole cost while nothing overflows. A step with such a value whose float inputs are all finite is then
  // recomputed in FP32 on the reference interpreter from those inputs (still live: a step's
  // outputs never share memory with its inputs), with the graph's FP32 weights, and every node of
  // the step whose FP32 result is finite but does not fit its storage format is reported in
  // overflow_hits(). Inf/NaN that FP32 has too (Log(0), 1/0) or that came in through the inputs
  // are not reported. Intermediate values are not readable after run() in general — the memory
  // plan reuses their bytes — which is why the check runs inside run().
  void set_overflow_watch(bool on);
  // The hits of the last run(), in step order (empty with the watch off).
  const std::vector<OverflowHit>& overflow_hits() const;

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
  // Replaces SessionOptions::plan for later compile() calls (nullptr: `precision` again);
  // executables already compiled keep their formats. Live recompilation (live.hpp) uses it.
  void set_plan(std::shared_ptr<const Plan> plan);
  const std::shared_ptr<const Plan>& plan() const;
  // The formats the device's kernels take, for making plans (plan_from_policy, the planner).
  DeviceFormats device_formats() const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpf
