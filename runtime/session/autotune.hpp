// Autotuning (SessionOptions::autotune): for each distinct kernel whose generator offers tile
// configurations (jit::c_tile_variants), the configuration to run on this device.
//
// The choice is kept in the kernel cache, in the meta text of the default configuration's entry,
// per number of compute units the launches use (the CPU plugin's threads: the best split of the
// work depends on them): {"tiles_by_units": {"<units>": {"tile": "<variant>", "ms": {"<variant>":
// ms, ...}}}}. So it is measured once per device fingerprint, compiler, flags and thread count,
// and replayed by every later compile in any process sharing the cache (or importing it). Without a choice there, every variant is compiled (through the
// cache), launched on scratch buffers holding small finite values (one warm-up, then the median
// of kTuneRuns launches, wall time) and the fastest kept: the default unless another takes at
// most kTuneMargin of its time. A variant that fails to generate or compile is left out; if none
// but the default remains, the default runs.
//
// Not thread-safe by itself: the Session calls it from compile(), one at a time per Session.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hpf/kernel_cache.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/session.hpp"
#include "jit/codegen/lowering.hpp"

namespace hpf {

inline constexpr int kTuneRuns = 7;
inline constexpr double kTuneMargin = 0.97;

// Compiles (or fetches from the cache) the binary of every generated kernel among `sources`,
// by kernel name; the Session's binaries_of.
using CompileKernels = std::function<Expected<std::map<std::string, std::vector<std::byte>>>(
    const std::vector<jit::LoweredStep>& steps,
    const std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources)>;

// Replaces each tunable kernel in `sources` (parallel to `steps`) by the chosen variant and adds
// one line per distinct tuned kernel to stats.tuned_kernels ("<label>: <tile> (measured|cached)",
// or "(default: ...)" when the variants could not be compiled).
// `base` holds the fingerprint, compiler and flags of the device's cache keys. `cache` may be null
// or disabled (nothing is kept then). Errors: only a failure to allocate or launch on the device.
Status autotune_kernels(Plugin& plugin, int32_t device, KernelCache* cache, const CacheKey& base,
                        const std::vector<jit::LoweredStep>& steps,
                        std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources,
                        const CompileKernels& compile, CompileStats& stats);

}  // namespace hpf
