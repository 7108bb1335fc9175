// What the kernel benchmarks share: median timing, and the CPU plugin loaded through its C
// table to compile, load and launch a generated kernel (only kernel_launch is timed).
// Single-threaded use; the plugin is never unloaded (the process exits).
#pragma once

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "hpf/plugin.h"
#include "jit/codegen/kernel_spec.hpp"
#include "plugins/cpu/host_memory.hpp"

namespace hpf::bench {

// Wall time, or with `thread_clock` set the calling thread's CPU time: on a shared machine that
// leaves out the time the thread waited for a core (meaningful only for single-threaded runs).
inline bool thread_clock = false;
inline double now_ms() {
  if (thread_clock) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Storage as the CPU plugin's buffers (buffer_alloc), from which the Session's kernels read
// weights and activations: 64-byte aligned (a std::vector's large blocks are 16-byte aligned,
// which splits every 64-byte load from them across two cache lines: libhpf's packed FP32 GEMM
// 1024^3 in a C harness 5% slower with its operands 16 bytes off), and from 2 MiB on mapped on
// huge pages where the system has them (plugins/cpu/host_memory.hpp). Every peer's operands
// come from here alike.
inline std::mutex host_blocks_mutex;
inline std::map<void*, cpu::HostBlock> host_blocks;
inline void* host_allocate(size_t bytes) {
  const cpu::HostBlock b = cpu::allocate_host(bytes);
  if (b.data == nullptr) throw std::bad_alloc();
  try {
    std::lock_guard<std::mutex> lock(host_blocks_mutex);
    host_blocks[b.data] = b;
  } catch (...) {
    cpu::free_host(b);
    throw;
  }
  return b.data;
}
inline void host_free(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(host_blocks_mutex);
  const auto it = host_blocks.find(p);
  if (it == host_blocks.end()) std::abort();  // not host_allocate's: a bug in the bench
  cpu::free_host(it->second);
  host_blocks.erase(it);
}
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(host_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t) { host_free(p); }
  friend bool operator==(const Aligned64&, const Aligned64&) { return true; }
};
template <class T>
using AlignedVector = std::vector<T, Aligned64<T>>;

// The median of `v` (the upper one of an even count); -1 for none.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall time of fn over `runs` timed calls after two warm-up calls (and more until `warm_ms`
// have passed).
inline double median_ms(const std::function<void()>& fn, int runs, double warm_ms = 0) {
  fn();
  fn();
  for (const double w0 = now_ms(); now_ms() - w0 < warm_ms;) fn();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const double t0 = now_ms();
    fn();
    t.push_back(now_ms() - t0);
  }
  return median_of(std::move(t));
}

// Medians in ms of `fns` timed in turn, round after round (two untimed rounds first): on a shared
// machine a neighbour's burst then falls on every variant alike, not on the one timed meanwhile.
// `settle` (if any) runs untimed after every round.
inline std::vector<double> medians_interleaved(const std::vector<std::function<void()>>& fns, int runs,
                                               const std::function<void()>& settle = {}) {
  for (int w = 0; w < 2; ++w) {
    for (const auto& fn : fns) fn();
    if (settle) settle();
  }
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < fns.size(); ++i) {
      const double t0 = now_ms();
      fns[i]();
      t[i].push_back(now_ms() - t0);
    }
    if (settle) settle();
  }
  std::vector<double> out;
  for (auto& v : t) out.push_back(median_of(std::move(v)));
  return out;
}

// The medians of `fns` interleaved with one thread; with more, in blocks: each variant's runs back
// to back (median_ms) after at least 100 ms of untimed calls, every variant in turn, `rounds`
// times, and the median of each variant's block medians. The runtimes' idle threads spin for a
// while after their work (libhpf's pool 200 us, OpenMP's longer, OpenBLAS's about 2^28 cycles),
// and on a machine of two cores the variant timed next would share the cores with the spinners
// (oneDNN's 256^3 with two threads: 0.1 ms alone, 4.7 interleaved; its BERT shapes right after
// OpenBLAS's 0.43 -> 7.5 ms): the untimed calls outlast them. Not a pause: after a quarter second
// asleep, this VM ran the next block's two-thread kernels up to twice as slow for a while (the
// 16-bit-row kernel on BERT's 128x768x768, 0.53 ms back to back, 1.2-1.4 ms after a pause). The
// rounds spread a neighbour's burst over the variants (one block each: the same kernel moved
// 20-40% between the tables of one two-thread run).
inline std::vector<double> medians(const std::vector<std::function<void()>>& fns, int runs, int threads,
                                   int rounds = 3) {
  if (threads <= 1) return medians_interleaved(fns, runs);
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i) t[i].push_back(median_ms(fns[i], runs, 100));
  std::vector<double> out;
  for (auto& v : t) out.push_back(median_of(std::move(v)));
  return out;
}

struct Plugin {
  const hpf_plugin_api* api = nullptr;
  hpf_plugin* p = nullptr;
  std::string error;
  bool fail(hpf_error* e, const char* what) {
    if (!e) return false;
    error = std::string(what) + ": " + api->error_message(e);
    api->error_destroy(e);
    return true;
  }
  bool init() {
    void* h = dlopen(HPF_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!h) return error = dlerror(), false;
    auto get = reinterpret_cast<hpf_get_plugin_api_fn>(dlsym(h, HPF_PLUGIN_ENTRY_POINT));
    if (!get) return error = "no entry point", false;
    api = get();
    return !fail(api->plugin_init(&p), "plugin_init");
  }
  // Whether the device compiles for AMX-BF16 (the Session then packs BF16 Conv weights for it).
  bool amx_bf16() const { return has_feature("+amx-bf16") && has_feature("+amx-tile"); }
  // Whether it compiles for AMX-INT8 (the Session then asks matmul_i8 kernels for tiles: attr amx).
  bool amx_int8() const { return has_feature("+amx-int8") && has_feature("+amx-tile"); }
  // The largest |q| the device's plans give W8A8 weights: 64 where its matmul formats carry the
  // hint "i8w7" (plugin.h), else 127.
  int int8_weight_max() const {
    const hpf_device_info* d = api->device_info(p, 0);
    for (size_t i = 0; d && i < d->precision_count; ++i)
      if (std::string(d->precisions[i].op_class) == "matmul" &&
          ("," + std::string(d->precisions[i].formats) + ",").find(",i8w7,") != std::string::npos)
        return 64;
    return 127;
  }
  bool has_feature(const char* flag) const {
    const hpf_device_info* d = api->device_info(p, 0);
    const std::string f = d && d->compile_flags ? d->compile_flags : "";
    return f.find(flag) != std::string::npos;
  }
  // Compiles and loads `k`; false with `error` set on failure.
  // Compiles and loads `k`; with HPF_BENCH_DUMP=DIR its source is also written to DIR/NAME.c.
  bool load(const jit::GeneratedKernel& k, hpf_kernel*& kern) {
    if (const char* dir = std::getenv("HPF_BENCH_DUMP")) {
      if (FILE* f = std::fopen((std::string(dir) + "/" + k.name + ".c").c_str(), "w")) {
        std::fputs(k.source.c_str(), f);
        std::fclose(f);
      }
    }
    hpf_blob* blob = nullptr;
    if (fail(api->program_compile(p, 0, k.source.c_str(), k.source.size(), &blob), "compile")) return false;
    hpf_program* prog = nullptr;
    hpf_error* e = api->program_load(p, 0, blob->data, blob->size, &prog);
    api->blob_free(p, blob);
    if (fail(e, "load")) return false;
    return !fail(api->kernel_get(p, prog, k.name.c_str(), &kern), "kernel_get");
  }
  // One launch of `kern` over `args` (kept by the closure).
  std::function<void()> launcher(const jit::GeneratedKernel& k, hpf_kernel* kern, std::vector<void*> args) {
    return [this, kern, args, items = k.work_items, grain = k.grain]() mutable {
      hpf_launch l{};
      l.struct_size = sizeof l;
      l.args = args.data();
      l.arg_count = args.size();
      l.work_items = items;
      l.grain = grain;
      api->kernel_launch(p, kern, &l);
    };
  }
  // Times launches of `kern` over `args`: the median in ms.
  double time(const jit::GeneratedKernel& k, hpf_kernel* kern, std::vector<void*> args, int runs) {
    return median_ms(launcher(k, kern, std::move(args)), runs);
  }
};

}  // namespace hpf::bench
