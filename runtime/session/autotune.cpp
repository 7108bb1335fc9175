// Autotuning of tile configurations (autotune.hpp).
#include "runtime/session/autotune.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "hpf/log.hpp"
#include "runtime/session/cache_meta.hpp"

namespace hpf {
namespace {

using Clock = std::chrono::steady_clock;

// A tunable kernel of the compile: its step, its variants' generated kernels (index 0 the
// default; nullopt where generating failed) and the default's cache key.
struct Tunable {
  size_t step = 0;
  std::vector<std::string> tiles;
  std::vector<std::optional<jit::GeneratedKernel>> kernels;
  CacheKey key;
  nlohmann::json meta = nlohmann::json::object();
};

// Scratch buffers for a kernel's arguments (inputs then outputs), inputs holding 0x3c bytes
// (about 0.0115 as FP32 or BF16: finite, no denormals, small products).
Expected<std::vector<Buffer>> scratch_for(Plugin& plugin, int32_t device, const jit::KernelSpec& spec) {
  std::vector<Buffer> out;
  auto add = [&](const jit::TensorDesc& d, bool fill) -> Status {
    const size_t bytes = std::max<size_t>(64, storage_bytes(d.dtype, static_cast<size_t>(numel(d.shape))));
    HPF_ASSIGN_OR_RETURN(Buffer b, plugin.alloc(device, bytes));
    if (fill) {
      const std::vector<unsigned char> pattern(bytes, 0x3c);
      HPF_RETURN_IF_ERROR(b.copy_in(0, pattern.data(), bytes));
    }
    out.push_back(std::move(b));
    return Status();
  };
  for (const jit::TensorDesc& d : spec.inputs) HPF_RETURN_IF_ERROR(add(d, true));
  for (const jit::TensorDesc& d : spec.outputs) HPF_RETURN_IF_ERROR(add(d, false));
  return out;
}

// Median wall time of kTuneRuns launches of `k` (one untimed first), in ms.
Expected<double> time_kernel(Plugin& plugin, int32_t device, const Kernel& k, const jit::GeneratedKernel& g,
                             const std::vector<void*>& args) {
  Launch l;
  l.args = args;
  l.work_items = g.work_items;
  l.grain = g.grain;
  HPF_RETURN_IF_ERROR(k.launch(l));
  HPF_RETURN_IF_ERROR(plugin.synchronize(device));
  std::vector<double> ms;
  for (int r = 0; r < kTuneRuns; ++r) {
    const auto t0 = Clock::now();
    HPF_RETURN_IF_ERROR(k.launch(l));
    HPF_RETURN_IF_ERROR(plugin.synchronize(device));
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

Status autotune_kernels(Plugin& plugin, int32_t device, KernelCache* cache, const CacheKey& base,
                        const std::vector<jit::LoweredStep>& steps,
                        std::vector<std::optional<Expected<jit::GeneratedKernel>>>& sources,
                        const CompileKernels& compile, CompileStats& stats) {
  const std::string units = std::to_string(plugin.devices()[device].compute_units);  // the launches' threads
  // The distinct tunable kernels, with their variants generated.
  std::vector<Tunable> tunables;
  std::map<std::string, size_t> by_name;  // default kernel name -> tunables index
  std::vector<size_t> tunable_of(steps.size(), SIZE_MAX);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!sources[i] || !sources[i]->ok()) continue;
    const std::vector<std::string> tiles = jit::c_tile_variants(steps[i].spec);
    if (tiles.size() < 2) continue;
    const jit::GeneratedKernel& def = **sources[i];
    auto [it, added] = by_name.try_emplace(def.name, tunables.size());
    tunable_of[i] = it->second;
    if (!added) continue;
    Tunable t;
    t.step = i;
    t.tiles = tiles;
    t.key = base;
    t.key.source_hash = hash_source(def.source);
    if (cache && cache->enabled()) t.meta = cached_meta(*cache, t.key);
    t.kernels.push_back(def);
    for (size_t v = 1; v < tiles.size(); ++v) {
      jit::KernelSpec s = steps[i].spec;
      s.attrs["tile"] = tiles[v];
      Expected<jit::GeneratedKernel> k = jit::generate_c(s);
      if (k.ok()) t.kernels.push_back(std::move(k).value());
      else {
        log(LogLevel::warn, "autotune: '" + steps[i].label + "' tile " + tiles[v] + ": " + k.status().message());
        t.kernels.push_back(std::nullopt);
      }
    }
    tunables.push_back(std::move(t));
  }
  if (tunables.empty()) return Status();

  // The choice recorded in the cache, or none (index -1) for those to measure.
  std::vector<int> chosen(tunables.size(), -1);
  std::vector<jit::LoweredStep> vsteps;
  std::vector<std::optional<Expected<jit::GeneratedKernel>>> vsources;
  for (size_t t = 0; t < tunables.size(); ++t) {
    const Tunable& u = tunables[t];
    const nlohmann::json recorded =
        u.meta.value(nlohmann::json::json_pointer("/tiles_by_units/" + units + "/tile"), nlohmann::json());
    if (recorded.is_string()) {
      const auto f = std::find(u.tiles.begin(), u.tiles.end(), recorded.get<std::string>());
      if (f != u.tiles.end() && u.kernels[f - u.tiles.begin()]) {
        chosen[t] = static_cast<int>(f - u.tiles.begin());
        continue;
      }
    }
    for (const auto& k : u.kernels)
      if (k) {
        vsteps.push_back(steps[u.step]);
        vsources.emplace_back(*k);
      }
  }
  std::map<std::string, std::vector<std::byte>> binaries;
  bool compiled = true;
  if (!vsteps.empty()) {
    auto made = compile(vsteps, vsources);
    if (!made.ok()) log(LogLevel::warn, "autotune: " + made.status().message() + "; the default tiles run");
    if (made.ok()) binaries = std::move(made).value();
    compiled = made.ok();
  }
  for (size_t t = 0; t < tunables.size(); ++t) {
    Tunable& u = tunables[t];
    const bool measure = chosen[t] < 0;
    if (measure && !compiled) {
      chosen[t] = 0;
      stats.tuned_kernels.push_back(steps[u.step].label + ": " + u.tiles[0] + " (default: a variant failed to compile)");
      continue;
    }
    if (measure) {
      HPF_ASSIGN_OR_RETURN(std::vector<Buffer> bufs, scratch_for(plugin, device, steps[u.step].spec));
      std::vector<void*> args;
      for (const Buffer& b : bufs) args.push_back(b.device_pointer());
      double best = std::numeric_limits<double>::infinity();
      nlohmann::json times = nlohmann::json::object();
      for (size_t v = 0; v < u.kernels.size(); ++v) {
        if (!u.kernels[v] || !binaries.count(u.kernels[v]->name)) continue;
        HPF_ASSIGN_OR_RETURN(Program p, plugin.load(device, binaries.at(u.kernels[v]->name)));
        HPF_ASSIGN_OR_RETURN(Kernel k, p.kernel(u.kernels[v]->name));
        HPF_ASSIGN_OR_RETURN(double ms, time_kernel(plugin, device, k, *u.kernels[v], args));
        times[u.tiles[v]] = ms;
        // The default (measured first) is left only for a variant clearly faster than it: a
        // difference inside the timing noise is no reason to run another kernel.
        if (chosen[t] < 0 || ms < best * (v == 0 ? 1.0 : kTuneMargin)) {
          best = ms;
          chosen[t] = static_cast<int>(v);
        }
      }
      if (chosen[t] < 0) chosen[t] = 0;
      if (!u.meta["tiles_by_units"].is_object()) u.meta["tiles_by_units"] = nlohmann::json::object();
      u.meta["tiles_by_units"][units] = {{"tile", u.tiles[chosen[t]]}, {"ms", times}};
      if (cache && cache->enabled()) {
        const Status s = cache->set_meta(u.key, u.meta.dump());
        if (!s.ok()) log(LogLevel::warn, "autotune: keeping the choice in the kernel cache: " + s.message());
      }
      log(LogLevel::info, "autotune: '" + steps[u.step].label + "': " + times.dump() + " -> " + u.tiles[chosen[t]]);
    }
    stats.tuned_kernels.push_back(steps[u.step].label + ": " + u.tiles[chosen[t]] + (measure ? " (measured)" : " (cached)"));
  }
  for (size_t i = 0; i < steps.size(); ++i)
    if (tunable_of[i] != SIZE_MAX) {
      const Tunable& u = tunables[tunable_of[i]];
      sources[i] = *u.kernels[chosen[tunable_of[i]]];
    }
  return Status();
}

}  // namespace hpf
