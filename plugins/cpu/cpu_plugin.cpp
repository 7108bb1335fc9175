// The CPU backend behind include/hpf/plugin.h: host memory, kernels compiled by in-process
// clang 19 and loaded with LLVM ORC, launched over a thread pool. One device: this machine.
#include <hpf/plugin.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "plugins/cpu/clang_compiler.hpp"
#include "plugins/cpu/host_memory.hpp"
#include "plugins/cpu/orc_loader.hpp"
#include "plugins/cpu/thread_pool.hpp"

struct hpf_error {
  hpf_error_code code;
  std::string message;
  bool preallocated = false;  // the out-of-memory error: never freed
};

struct hpf_buffer {
  void* data;
  size_t size;
  hpf::cpu::HostBlock block;  // what data came from (plugins/cpu/host_memory.hpp)
};

struct hpf_kernel {
  using Fn = void (*)(void* const* args, int64_t begin, int64_t end);
  Fn fn;
};

// Kernels belong to their program: the ABI has no kernel release, so they live until unload.
struct hpf_program {
  hpf::cpu::JitProgram* jit;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<hpf_kernel>, std::less<>> kernels;
};

struct hpf_timer {
  std::chrono::steady_clock::time_point start;
  bool running = false;
};

struct hpf_plugin {
  hpf_plugin_info info{};
  hpf::cpu::ClangCompiler compiler;
  hpf::cpu::ThreadPool pool;
  std::mutex loader_mutex;
  std::unique_ptr<hpf::cpu::OrcLoader> loader;  // created on the first program_load

  std::string device_name, compiler_name, features;
  std::vector<hpf_precision_support> precisions;
  std::vector<hpf_kv> fingerprint;
  hpf_device_info device{};

  explicit hpf_plugin(int threads) : pool(threads) {}
};

namespace {

constexpr const char* kPluginVersion = "0.1.0";

hpf_error out_of_memory_error{HPF_ERROR_OUT_OF_MEMORY, "cpu: out of memory", true};

hpf_error* make_error(hpf_error_code code, std::string message) {
  try {
    return new hpf_error{code, "cpu: " + std::move(message)};
  } catch (...) {
    return &out_of_memory_error;
  }
}

// Runs `body` so that no exception crosses the C boundary.
template <typename F>
hpf_error* guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  } catch (const std::exception& e) {
    return make_error(HPF_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return make_error(HPF_ERROR_INTERNAL, std::string(function) + ": unknown exception");
  }
}

hpf_error* check_device(const char* function, int32_t device) {
  if (device == 0) return nullptr;
  return make_error(HPF_ERROR_NOT_FOUND, std::string(function) + ": no device " +
                                             std::to_string(device) +
                                             " (the CPU plugin has device 0)");
}

// HPF_NUM_THREADS, or every hardware thread.
hpf_error* thread_count(int* threads) {
  const unsigned hw = std::thread::hardware_concurrency();
  *threads = hw == 0 ? 1 : static_cast<int>(hw);
  const char* env = std::getenv("HPF_NUM_THREADS");
  if (env == nullptr || *env == '\0') return nullptr;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, std::string("plugin_init: HPF_NUM_THREADS='") +
                                                      env +
                                                      "' is not a thread count between 1 and 4096");
  *threads = static_cast<int>(n);
  return nullptr;
}

std::string cpu_brand(const std::string& fallback) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) break;
    auto first = line.find_first_not_of(" \t", colon + 1);
    auto last = line.find_last_not_of(" \t\r");
    if (first != std::string::npos) return line.substr(first, last - first + 1);
  }
  return "CPU (" + fallback + ")";
}

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
             : 0;
}

void describe_device(hpf_plugin& p) {
  static const hpf_precision_support kPrecisions[] = {
      // What libhpf's C kernels do for this backend: every listed format is storage, converted
      // to FP32 in registers, with FP32 accumulation. MatMul/Gemm also take constant weights in
      // INT8 (per channel) and INT4 (group-wise), dequantised in registers (matmul_wq), or with
      // INT8 activations as u8 x s8 dot products (matmul_i8); Conv in INT8 as u8 x s8 (conv_i8).
      {sizeof(hpf_precision_support), "matmul", "f32,bf16,f16,i8,i4"},
      {sizeof(hpf_precision_support), "conv", "f32,bf16,f16,i8"},
      {sizeof(hpf_precision_support), "elementwise", "f32,bf16,f16"},
      {sizeof(hpf_precision_support), "attention", "f32,bf16,f16"},
      {sizeof(hpf_precision_support), "normalization", "f32,bf16,f16"},
      {sizeof(hpf_precision_support), "softmax", "f32,bf16,f16"},
      {sizeof(hpf_precision_support), "embedding", "f32,bf16,f16"},
      {sizeof(hpf_precision_support), "data_movement", "f32,bf16,f16"},
  };
  // AVX2 without VNNI: the INT8 kernels' vpmaddubsw is exact without the sign path's extra
  // vpsignb only for 7-bit weights (jit/codegen/c_matmul_int8.cpp), so ask the planner for them.
  static const hpf_precision_support kPrecisionsW7[] = {
      {sizeof(hpf_precision_support), "matmul", "f32,bf16,f16,i8,i4,i8w7"},
      {sizeof(hpf_precision_support), "conv", "f32,bf16,f16,i8,i8w7"},
  };
  const auto& target = p.compiler.target();
  auto has = [&](const char* f) {
    return std::find(target.features.begin(), target.features.end(), std::string("+") + f) != target.features.end();
  };
  // (Under HPF_CPU_TARGET the feature list is empty, implied by the CPU name: no hint then.)
  const bool w7 = has("avx2") && !has("avx512vnni") && !has("avxvnni");
  p.device_name = cpu_brand(target.cpu);
  p.compiler_name = "clang " + target.clang_version;
  for (const auto& f : target.features) {
    if (f[0] != '+') continue;
    if (!p.features.empty()) p.features += ',';
    p.features += f.substr(1);
  }
  p.precisions.assign(std::begin(kPrecisions), std::end(kPrecisions));
  if (w7)  // the classes' entries with the hint in place of the plain ones
    for (const hpf_precision_support& h : kPrecisionsW7)
      for (hpf_precision_support& q : p.precisions)
        if (std::strcmp(q.op_class, h.op_class) == 0) q = h;
  p.fingerprint = {
      {sizeof(hpf_kv), "cpu", target.cpu.c_str()},
      {sizeof(hpf_kv), "features", p.features.c_str()},
      {sizeof(hpf_kv), "clang", target.clang_full_version.c_str()},
      {sizeof(hpf_kv), "triple", target.triple.c_str()},
  };
  hpf_device_info& d = p.device;
  d.struct_size = sizeof(hpf_device_info);
  d.name = p.device_name.c_str();
  d.architecture = target.cpu.c_str();
  d.dialect = "c";
  d.score = 100;
  d.score_reason = "";
  d.memory_bytes = physical_memory();
  d.compute_units = p.pool.size();
  d.precisions = p.precisions.data();
  d.precision_count = p.precisions.size();
  d.fingerprint = p.fingerprint.data();
  d.fingerprint_count = p.fingerprint.size();
  d.compiler = p.compiler_name.c_str();
  d.compile_flags = p.compiler.flags().c_str();
}

// ---- lifetime and self-description ----

hpf_error* plugin_init(hpf_plugin** out) {
  if (out == nullptr) return make_error(HPF_ERROR_INVALID_ARGUMENT, "plugin_init: out is null");
  *out = nullptr;
  return guarded("plugin_init", [&]() -> hpf_error* {
    int threads = 1;
    if (hpf_error* e = thread_count(&threads)) return e;
    auto p = std::make_unique<hpf_plugin>(threads);
    p->info = {sizeof(hpf_plugin_info), "cpu", kPluginVersion};
    describe_device(*p);
    *out = p.release();
    return nullptr;
  });
}

void plugin_destroy(hpf_plugin* plugin) { delete plugin; }

const hpf_plugin_info* plugin_info(const hpf_plugin* plugin) {
  return plugin ? &plugin->info : nullptr;
}

// ---- errors ----

hpf_error_code error_code(const hpf_error* error) {
  return error ? error->code : HPF_ERROR_INTERNAL;
}

const char* error_message(const hpf_error* error) { return error ? error->message.c_str() : ""; }

void error_destroy(hpf_error* error) {
  if (error != nullptr && !error->preallocated) delete error;
}

// ---- device ----

int32_t device_count(const hpf_plugin*) { return 1; }

const hpf_device_info* device_info(const hpf_plugin* plugin, int32_t device) {
  return plugin != nullptr && device == 0 ? &plugin->device : nullptr;
}

// Launches run to completion before kernel_launch returns: nothing is ever pending.
hpf_error* device_synchronize(hpf_plugin*, int32_t device) {
  return check_device("device_synchronize", device);
}

// ---- memory ----

hpf_error* buffer_alloc(hpf_plugin*, int32_t device, size_t bytes, hpf_buffer** out) {
  if (out == nullptr) return make_error(HPF_ERROR_INVALID_ARGUMENT, "buffer_alloc: out is null");
  *out = nullptr;
  if (hpf_error* e = check_device("buffer_alloc", device)) return e;
  return guarded("buffer_alloc", [&]() -> hpf_error* {
    const hpf::cpu::HostBlock block = hpf::cpu::allocate_host(bytes);
    if (block.data == nullptr)
      return make_error(HPF_ERROR_OUT_OF_MEMORY,
                        "buffer_alloc: cannot allocate " + std::to_string(bytes) + " bytes");
    *out = new hpf_buffer{block.data, bytes, block};
    return nullptr;
  });
}

void buffer_free(hpf_plugin*, hpf_buffer* buffer) {
  if (buffer == nullptr) return;
  hpf::cpu::free_host(buffer->block);
  delete buffer;
}

void* buffer_pointer(hpf_plugin*, hpf_buffer* buffer) { return buffer ? buffer->data : nullptr; }

hpf_error* check_range(const char* function, const hpf_buffer* buffer, size_t offset,
                       const void* host, size_t bytes) {
  if (buffer == nullptr || (host == nullptr && bytes > 0))
    return make_error(HPF_ERROR_INVALID_ARGUMENT,
                      std::string(function) + ": null buffer or host pointer");
  if (offset > buffer->size || bytes > buffer->size - offset)
    return make_error(HPF_ERROR_INVALID_ARGUMENT,
                      std::string(function) + ": bytes [" + std::to_string(offset) + ", " +
                          std::to_string(offset) + "+" + std::to_string(bytes) +
                          ") outside a buffer of " + std::to_string(buffer->size));
  return nullptr;
}

hpf_error* buffer_copy_in(hpf_plugin*, hpf_buffer* dst, size_t offset, const void* src,
                          size_t bytes) {
  if (hpf_error* e = check_range("buffer_copy_in", dst, offset, src, bytes)) return e;
  if (bytes > 0) std::memcpy(static_cast<char*>(dst->data) + offset, src, bytes);
  return nullptr;
}

hpf_error* buffer_copy_out(hpf_plugin*, const hpf_buffer* src, size_t offset, void* dst,
                           size_t bytes) {
  if (hpf_error* e = check_range("buffer_copy_out", src, offset, dst, bytes)) return e;
  if (bytes > 0) std::memcpy(dst, static_cast<const char*>(src->data) + offset, bytes);
  return nullptr;
}

// ---- program ----

hpf_error* program_compile(hpf_plugin* plugin, int32_t device, const char* source,
                           size_t source_size, hpf_blob** out) {
  if (plugin == nullptr || out == nullptr || (source == nullptr && source_size > 0))
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "program_compile: null plugin, source or out");
  *out = nullptr;
  if (hpf_error* e = check_device("program_compile", device)) return e;
  return guarded("program_compile", [&]() -> hpf_error* {
    std::string object, log;
    if (!plugin->compiler.compile(std::string_view(source ? source : "", source_size), &object,
                                  &log))
      return make_error(HPF_ERROR_COMPILE, "program_compile: clang rejected the source:\n" + log);
    auto bytes = std::make_unique<char[]>(object.size());
    std::memcpy(bytes.get(), object.data(), object.size());
    *out = new hpf_blob{sizeof(hpf_blob), bytes.release(), object.size()};
    return nullptr;
  });
}

void blob_free(hpf_plugin*, hpf_blob* blob) {
  if (blob == nullptr) return;
  delete[] static_cast<const char*>(blob->data);
  delete blob;
}

hpf_error* program_load(hpf_plugin* plugin, int32_t device, const void* data, size_t size,
                        hpf_program** out) {
  if (plugin == nullptr || out == nullptr || data == nullptr || size == 0)
    return make_error(HPF_ERROR_INVALID_ARGUMENT,
                      "program_load: null plugin, data or out, or an empty binary");
  *out = nullptr;
  if (hpf_error* e = check_device("program_load", device)) return e;
  return guarded("program_load", [&]() -> hpf_error* {
    hpf::cpu::OrcLoader* loader;
    {
      std::lock_guard lock(plugin->loader_mutex);
      if (!plugin->loader) {
        std::string error;
        plugin->loader = hpf::cpu::OrcLoader::create(&error);
        if (!plugin->loader) return make_error(HPF_ERROR_DEVICE, "program_load: " + error);
      }
      loader = plugin->loader.get();
    }
    std::string error;
    hpf::cpu::JitProgram* jit = loader->load(data, size, &error);
    if (jit == nullptr)
      return make_error(HPF_ERROR_INVALID_ARGUMENT, "program_load: cannot load a binary of " +
                                                        std::to_string(size) + " bytes: " + error);
    auto program = std::make_unique<hpf_program>();
    program->jit = jit;
    *out = program.release();
    return nullptr;
  });
}

void program_unload(hpf_plugin* plugin, hpf_program* program) {
  if (plugin == nullptr || program == nullptr) return;
  plugin->loader->unload(program->jit);
  delete program;
}

hpf_error* kernel_get(hpf_plugin* plugin, hpf_program* program, const char* name,
                      hpf_kernel** out) {
  if (plugin == nullptr || program == nullptr || name == nullptr || out == nullptr)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_get: null plugin, program, name or out");
  *out = nullptr;
  return guarded("kernel_get", [&]() -> hpf_error* {
    std::lock_guard lock(program->mutex);
    auto it = program->kernels.find(std::string_view(name));
    if (it != program->kernels.end()) {
      *out = it->second.get();
      return nullptr;
    }
    void* address = nullptr;
    std::string message;
    switch (plugin->loader->lookup(program->jit, name, &address, &message)) {
      case hpf::cpu::LookupStatus::ok:
        break;
      case hpf::cpu::LookupStatus::not_found:
        return make_error(HPF_ERROR_NOT_FOUND,
                          std::string("kernel_get: the program defines no kernel '") + name + "'");
      case hpf::cpu::LookupStatus::failed:
        return make_error(HPF_ERROR_INTERNAL,
                          std::string("kernel_get: '") + name + "': " + message);
    }
    auto kernel =
        std::make_unique<hpf_kernel>(hpf_kernel{reinterpret_cast<hpf_kernel::Fn>(address)});
    *out = kernel.get();
    program->kernels.emplace(name, std::move(kernel));
    return nullptr;
  });
}

hpf_error* kernel_launch(hpf_plugin* plugin, hpf_kernel* kernel, const hpf_launch* launch) {
  if (plugin == nullptr || kernel == nullptr || launch == nullptr)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_launch: null plugin, kernel or launch");
  if (launch->struct_size < offsetof(hpf_launch, grain) + sizeof(launch->grain))
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_launch: hpf_launch.struct_size " +
                                                      std::to_string(launch->struct_size) +
                                                      " is too small");
  if (launch->work_items < 0 || launch->grain < 0)
    return make_error(HPF_ERROR_INVALID_ARGUMENT,
                      "kernel_launch: work_items " + std::to_string(launch->work_items) +
                          " and grain " + std::to_string(launch->grain) + " must not be negative");
  if (launch->args == nullptr && launch->arg_count > 0)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_launch: args is null");
  return guarded("kernel_launch", [&]() -> hpf_error* {
    struct Call {
      hpf_kernel::Fn fn;
      void* const* args;
    } call{kernel->fn, launch->args};
    plugin->pool.parallel_for(
        launch->work_items, launch->grain,
        [](void* context, int64_t begin, int64_t end) {
          auto* c = static_cast<Call*>(context);
          c->fn(c->args, begin, end);
        },
        &call);
    return nullptr;
  });
}

// ---- timer ----

hpf_error* timer_create(hpf_plugin*, int32_t device, hpf_timer** out) {
  if (out == nullptr) return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_create: out is null");
  *out = nullptr;
  if (hpf_error* e = check_device("timer_create", device)) return e;
  return guarded("timer_create", [&]() -> hpf_error* {
    *out = new hpf_timer();
    return nullptr;
  });
}

void timer_destroy(hpf_plugin*, hpf_timer* timer) { delete timer; }

hpf_error* timer_start(hpf_plugin*, hpf_timer* timer) {
  if (timer == nullptr) return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_start: timer is null");
  timer->running = true;
  timer->start = std::chrono::steady_clock::now();
  return nullptr;
}

hpf_error* timer_stop(hpf_plugin*, hpf_timer* timer, uint64_t* elapsed_ns) {
  const auto now = std::chrono::steady_clock::now();
  if (timer == nullptr || elapsed_ns == nullptr)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_stop: timer or elapsed_ns is null");
  if (!timer->running)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_stop: the timer was not started");
  timer->running = false;
  *elapsed_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - timer->start).count());
  return nullptr;
}

const hpf_plugin_api kApi = {
    .struct_size = sizeof(hpf_plugin_api),
    .abi_major = HPF_PLUGIN_ABI_MAJOR,
    .abi_minor = HPF_PLUGIN_ABI_MINOR,
    .plugin_init = plugin_init,
    .plugin_destroy = plugin_destroy,
    .plugin_info = plugin_info,
    .error_code = error_code,
    .error_message = error_message,
    .error_destroy = error_destroy,
    .device_count = device_count,
    .device_info = device_info,
    .device_synchronize = device_synchronize,
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .buffer_pointer = buffer_pointer,
    .buffer_copy_in = buffer_copy_in,
    .buffer_copy_out = buffer_copy_out,
    .program_compile = program_compile,
    .blob_free = blob_free,
    .program_load = program_load,
    .program_unload = program_unload,
    .kernel_get = kernel_get,
    .kernel_launch = kernel_launch,
    .timer_create = timer_create,
    .timer_destroy = timer_destroy,
    .timer_start = timer_start,
    .timer_stop = timer_stop,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const hpf_plugin_api* hpf_get_plugin_api(void) {
  return &kApi;
}
