// Live recompilation: an executable that keeps itself fit without the caller restarting.
//
//   auto live = LiveExecutable::create(graph, options).value();  // options.session.plan: the plan
//   auto out = live.run(inputs).value();        // compiles for these shapes on first sight
//   for (const RecompileEvent& e : live.events()) ...
//
// What run() does beyond Executable::run:
//   * new_shape: inputs of shapes it has no variant for get one compiled for exactly those
//     shapes (through the kernel cache, so a shape seen before in this or another process costs
//     a cache lookup per kernel, not a compile). At most `max_variants` are kept, least recently
//     used dropped first.
//     Batch buckets (`batch_buckets`): the batch axis is the first input's first dimension that
//     is not a known size (a symbol such as "batch", or unknown), and in every other input the
//     first such dimension when it has the same symbol ([batch, seq] ids and mask; [seq, batch]
//     for a sequence-first LSTM whose seq is fixed). A run with batch B uses the
//     variant for the bucket size B' = batch_bucket(B) instead of one for B: the inputs are
//     padded to B' by repeating their last entry (so the padding overflows only where a real
//     entry does, and a maximum over the batch does not change) and every output is cut back to
//     B along its batch axis. That is exact only when no node mixes batch entries, which
//     core/ir/batch_axis.hpp checks per op, conservatively, before the first padded run: a graph
//     that reduces, normalises, softmaxes or reshapes across the batch, broadcasts a constant
//     sized along it, or uses a batch size as data (Shape -> Cast -> Div) runs exact-shape
//     variants, and the reason is logged once (info). The first run of each input shape also
//     checks that the bucket's outputs, cut back, have the shapes the graph gives for it (a
//     Reshape to a constant shape can fit the bucket's size by coincidence); if not, buckets
//     are turned off the same way. Other dimensions (a sequence axis) are
//     never padded: Softmax, LayerNorm or a MatMul over a padded axis would change results.
//   * overflow: with `check_overflow` on (default), every node whose plan stores its output in
//     F16, BF16 or FP8 is watched (Executable::set_overflow_watch, one pass over those outputs);
//     a node whose output has Inf/NaN where its step's inputs were finite and the FP32 result is
//     finite is promoted F8E4M3/F8E5M2 -> F16 -> BF16 -> F32, F16 -> BF16 -> F32, BF16 -> F32
//     (storage, and its float weights when they were in the same format), the plan is updated,
//     the variant recompiled and the run recomputed, at most `max_heal_attempts` times per run.
//     A node that cannot be promoted further is left as it is (logged).
//   * slow_kernel: with `check_slow_kernels` on (default), after `warmup_runs` runs of a variant,
//     each kernel step's mean time over the next `slow_window` runs (when at least `slow_min_ms`)
//     is compared with the sum of what the plan expects of its nodes (each node's measured_ms when
//     the planner measured it, else its predicted_ms; only when every node has one); a step more
//     than `slow_factor` times slower in `slow_windows` windows in a row is re-planned: `replan` decides for each of its nodes
//     (default: promote one format, as above), the variant is recompiled and the windows start
//     again. A promoted node's measured_ms and predicted_ms are set to -1 (both were for the old
//     format), so it is not re-planned again on a stale figure. On a device that queues launches
//     (a GPU) steps are timed (Executable::set_step_timing) only through those first
//     `slow_windows` windows after warm-up, each timed step waiting for the device; later runs
//     are not slowed, and not checked.
// Nodes are promoted in the plan, which all variants share: every other variant is recompiled
// (without an event) when next used. Each event is logged (hpf/log.hpp, info) and kept in
// events().
//
// Without a plan (SessionOptions::plan empty) and with SessionOptions::precision not F32, the
// uniform precision is turned into the equivalent plan (every node storing and reading weights
// in that format), so it can be healed too; with F32 there is nothing to heal.
//
// Ownership: a LiveExecutable owns its graph copy, its Session, the current plan and its
// variants. Not synchronised: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"
#include "hpf/session.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

struct RecompileEvent {
  std::string cause;     // "new_shape", "overflow", "slow_kernel"
  std::string node;      // overflow / slow_kernel: the node re-planned; new_shape: empty
  std::string from, to;  // overflow / slow_kernel: storage formats ("f16" -> "bf16")
  std::vector<std::vector<int64_t>> shapes;    // the input shapes of the variant concerned
  // new_shape of a batch bucket: the input shapes of the run that asked for it (else empty).
  std::vector<std::vector<int64_t>> requested;
  double measured_ms = -1, predicted_ms = -1;  // slow_kernel: the step's mean time and prediction
  double fp32_amax = -1;  // overflow: largest |x| of the node's output recomputed in FP32
  double compile_ms = 0;  // the recompilation this event caused (0 when shared with another event)
  int64_t run = 0;        // 1-based index of the run() that caused it
  std::string describe()
      const;  // one line, e.g. "overflow: node 'big' f16 -> bf16 (|x| up to 1.2e+05)"
};

struct LiveOptions {
  SessionOptions session;   // plugin, plan, cache, ...
  size_t max_variants = 8;  // input-shape variants kept (LRU)
  // Bucket sizes per doubling of the batch (see above): 2 gives 1, 2, 3, 4, 6, 8, 12, 16, 24, ...
  // (at most a third of a padded run is padding, two variants per doubling); 0: exact shapes.
  int batch_buckets = 2;
  bool check_overflow = true;
  // Stop watching a variant after this many consecutive runs without overflow (0: watch every
  // run). The watch costs a read of every low-precision output per run; a benchmark that feeds
  // the same inputs again and again needs it on the first run only.
  int overflow_watch_runs = 0;
  int max_heal_attempts = 4;  // recompile-and-recompute rounds per run
  bool check_slow_kernels = true;
  int warmup_runs = 3;       // runs of a variant before its kernels are timed
  int slow_window = 3;       // runs averaged per comparison
  double slow_factor = 2.0;  // measured > slow_factor * predicted: re-plan
  // Windows in a row a step must be slow in before it is re-planned: on a shared machine one
  // window can run 2x slow for reasons that are not the kernel's (a recompile costs ~1 s).
  int slow_windows = 2;
  // Steps whose mean time is below this are never re-planned: launch overhead and timer noise
  // dominate there, not the format.
  double slow_min_ms = 0.05;
  // Re-plans a node of a slow step: edits `node` and returns true, or returns false to leave it.
  // Empty: promote to the next wider format (false when it is F32 already).
  std::function<bool(NodePlan& node, double measured_ms, double predicted_ms)> replan;
};

// The next wider format on the promotion ladder (F8E4M3/F8E5M2 -> F16 -> BF16 -> F32); nullopt
// for F32 and formats that are not low-precision floats.
std::optional<DType> promoted_format(DType storage);

// The batch size a run of `batch` entries is padded to with `per_doubling` bucket sizes between
// consecutive powers of two: the smallest multiple of max(1, 2^floor(log2 batch) / per_doubling)
// that is >= batch. `batch` itself when per_doubling <= 0 or batch <= 1.
int64_t batch_bucket(int64_t batch, int per_doubling);

class LiveExecutable {
 public:
  // Copies `graph`, creates the Session. Errors: the session's, a plan that does not match.
  static Expected<LiveExecutable> create(const Graph& graph, LiveOptions options = {});
  LiveExecutable(LiveExecutable&&) noexcept;
  LiveExecutable& operator=(LiveExecutable&&) noexcept;
  ~LiveExecutable();

  // Inputs in graph-input order, of any shapes the graph accepts.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // Compiles the variant for these input shapes now (a new_shape event when it is new, with run
  // 0 before the first run), so that the first run() of them does not pay for it.
  Status prepare(const std::vector<std::vector<int64_t>>& shapes);

  const std::vector<RecompileEvent>& events() const;
  // The plan as it stands (promotions applied); nullptr with an F32 run without a plan.
  std::shared_ptr<const Plan> plan() const;
  // The variant the last run() used (nullptr before the first run).
  const Executable* current() const;
  size_t variants() const;  // variants held now
  const std::string& device() const;

  struct Impl;

 private:
  explicit LiveExecutable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpf
