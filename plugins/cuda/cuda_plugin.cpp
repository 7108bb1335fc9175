// The CUDA plugin, compile-only slice: NVRTC turns "cuda" dialect source into CUBIN for each
// target architecture; running kernels (driver API: memory, modules, launches) is not there yet,
// so every device scores 0 with the reason, and compile-only use (hpf compile-check) still works.
//
// Devices. One per target of HPF_CUDA_TARGETS (comma-separated sm_NN, read at plugin_init), so a
// machine without a GPU can compile for any architecture NVRTC knows. Unset: one device
// "cuda (no target)" whose compiles fail asking for HPF_CUDA_TARGETS.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "hpf/plugin.h"
#include "plugins/common/plugin_common.hpp"
#include "plugins/cuda/nvrtc_loader.hpp"

#define HPF_CUDA_EXPORT __attribute__((visibility("default")))

namespace {

using namespace hpf_cuda;

hpf_error out_of_memory_error{HPF_ERROR_OUT_OF_MEMORY, "cuda: out of memory", true};

hpf_error* make_error(hpf_error_code code, std::string message) {
  return hpf_plugin_common::make_error(&out_of_memory_error, "cuda", code, std::move(message));
}

struct Device {
  std::string name, architecture;
  std::vector<hpf_kv> fingerprint;
};

}  // namespace

struct hpf_plugin {
  hpf_plugin_info info{};
  Nvrtc nvrtc;
  Driver driver;
  std::string include_dir;
  std::string reason;      // why every device scores 0
  std::string compiler;    // "nvrtc 13.0"
  std::string flags;       // common flags, part of the cache key
  std::vector<Device> devices;
  std::vector<hpf_device_info> infos;
  std::vector<hpf_precision_support> precisions;
  std::string nvrtc_version;
};

namespace {

bool valid_target(const std::string& t) {
  if (t.size() < 5 || t.compare(0, 3, "sm_") != 0) return false;
  for (size_t k = 3; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k])) && !(k == t.size() - 1 && t[k] == 'a')) return false;
  return true;
}

hpf_error* cuda_plugin_init(hpf_plugin** out) {
  *out = nullptr;
  try {
    auto p = std::make_unique<hpf_plugin>();
    p->info = {sizeof(hpf_plugin_info), "cuda", "0.1.0"};
    p->nvrtc = load_nvrtc();
    p->driver = load_driver();
    p->include_dir = cuda_include_dir();
    p->reason = p->driver.lib ? "compile-only: running kernels on the GPU is not implemented yet" : p->driver.reason;
    if (!p->nvrtc.ok()) p->reason += "; " + p->nvrtc.reason;
    p->nvrtc_version = std::to_string(p->nvrtc.major) + "." + std::to_string(p->nvrtc.minor);
    p->compiler = p->nvrtc.ok() ? "nvrtc " + p->nvrtc_version : "none";
    p->flags = "-default-device --std=c++17";
    if (!p->include_dir.empty()) p->flags += " --include-path=" + p->include_dir;
    p->precisions.push_back({sizeof(hpf_precision_support), "elementwise", "f32,f16,bf16"});
    std::vector<std::string> targets = hpf_plugin_common::targets_from_env("HPF_CUDA_TARGETS");
    if (targets.empty()) targets.push_back("");
    p->devices.reserve(targets.size());
    for (const std::string& t : targets) {
      Device d;
      d.architecture = t;
      d.name = t.empty() ? "cuda (no target: set HPF_CUDA_TARGETS)" : "cuda compile target " + t;
      p->devices.push_back(std::move(d));
    }
    for (Device& d : p->devices) {
      d.fingerprint = {{sizeof(hpf_kv), "architecture", d.architecture.c_str()},
                       {sizeof(hpf_kv), "nvrtc", p->nvrtc_version.c_str()}};
      hpf_device_info i{};
      i.struct_size = sizeof i;
      i.name = d.name.c_str();
      i.architecture = d.architecture.c_str();
      i.dialect = "cuda";
      i.score = 0;
      i.score_reason = p->reason.c_str();
      i.compute_units = 0;
      i.precisions = p->precisions.data();
      i.precision_count = p->precisions.size();
      i.fingerprint = d.fingerprint.data();
      i.fingerprint_count = d.fingerprint.size();
      i.compiler = p->compiler.c_str();
      i.compile_flags = p->flags.c_str();
      p->infos.push_back(i);
    }
    *out = p.release();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  } catch (const std::exception& e) {
    return make_error(HPF_ERROR_INTERNAL, std::string("plugin_init: ") + e.what());
  }
}

void cuda_plugin_destroy(hpf_plugin* p) { delete p; }
const hpf_plugin_info* cuda_plugin_info(const hpf_plugin* p) { return &p->info; }
hpf_error_code cuda_error_code(const hpf_error* e) { return e->code; }
const char* cuda_error_message(const hpf_error* e) { return e->message.c_str(); }
void cuda_error_destroy(hpf_error* e) {
  if (e && !e->is_static) delete e;
}

int32_t cuda_device_count(const hpf_plugin* p) { return static_cast<int32_t>(p->infos.size()); }
const hpf_device_info* cuda_device_info(const hpf_plugin* p, int32_t d) {
  return d >= 0 && static_cast<size_t>(d) < p->infos.size() ? &p->infos[d] : nullptr;
}

hpf_error* check_device(const hpf_plugin* p, int32_t d) {
  if (d >= 0 && static_cast<size_t>(d) < p->infos.size()) return nullptr;
  return make_error(HPF_ERROR_INVALID_ARGUMENT, "no device " + std::to_string(d));
}

// Everything that needs the GPU: refused with the reason.
hpf_error* no_gpu(const hpf_plugin* p, const char* what) {
  return make_error(HPF_ERROR_UNSUPPORTED, std::string(what) + ": " + p->reason);
}

hpf_error* cuda_device_synchronize(hpf_plugin* p, int32_t d) {
  if (hpf_error* e = check_device(p, d)) return e;
  return nullptr;  // nothing is ever queued
}
hpf_error* cuda_buffer_alloc(hpf_plugin* p, int32_t d, size_t, hpf_buffer** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "buffer_alloc");
}
void cuda_buffer_free(hpf_plugin*, hpf_buffer*) {}
void* cuda_buffer_pointer(hpf_plugin*, hpf_buffer*) { return nullptr; }
hpf_error* cuda_buffer_copy_in(hpf_plugin* p, hpf_buffer*, size_t, const void*, size_t) {
  return no_gpu(p, "buffer_copy_in");
}
hpf_error* cuda_buffer_copy_out(hpf_plugin* p, const hpf_buffer*, size_t, void*, size_t) {
  return no_gpu(p, "buffer_copy_out");
}

struct Program {
  hpf_plugin* plugin;
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog) plugin->nvrtc.DestroyProgram(&prog);
  }
};

std::string nvrtc_error(const hpf_plugin* p, nvrtcResult r) {
  const char* s = p->nvrtc.GetErrorString ? p->nvrtc.GetErrorString(r) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(r);
}

hpf_error* cuda_program_compile(hpf_plugin* p, int32_t d, const char* source, size_t size, hpf_blob** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  if (!source && size) return make_error(HPF_ERROR_INVALID_ARGUMENT, "NULL source");
  if (!p->nvrtc.ok()) return make_error(HPF_ERROR_UNSUPPORTED, "program_compile: " + p->nvrtc.reason);
  const std::string& arch = p->devices[d].architecture;
  if (arch.empty())
    return make_error(HPF_ERROR_UNSUPPORTED, "program_compile: no target architecture (set HPF_CUDA_TARGETS=sm_80,...)");
  if (!valid_target(arch)) return make_error(HPF_ERROR_INVALID_ARGUMENT, "'" + arch + "' is not an sm_NN target");
  try {
    const std::string src(source ? source : "", size);
    Program prog{p};
    nvrtcResult r = p->nvrtc.CreateProgram(&prog.prog, src.c_str(), "hpf_kernel.cu", 0, nullptr, nullptr);
    if (r != 0) return make_error(HPF_ERROR_INTERNAL, "nvrtcCreateProgram: " + nvrtc_error(p, r));
    const std::string gpu = "--gpu-architecture=" + arch, inc = "--include-path=" + p->include_dir;
    std::vector<const char*> opts{gpu.c_str(), "-default-device", "--std=c++17"};
    if (!p->include_dir.empty()) opts.push_back(inc.c_str());
    r = p->nvrtc.CompileProgram(prog.prog, static_cast<int>(opts.size()), opts.data());
    size_t log_size = 0;
    std::string log;
    if (p->nvrtc.GetProgramLogSize(prog.prog, &log_size) == 0 && log_size > 1) {
      log.resize(log_size);
      p->nvrtc.GetProgramLog(prog.prog, log.data());
      log.resize(std::strlen(log.c_str()));
    }
    if (r != 0)
      return make_error(HPF_ERROR_COMPILE, "nvrtc (" + arch + "): " + nvrtc_error(p, r) + "\n" + log);
    size_t n = 0;
    r = p->nvrtc.GetCUBINSize(prog.prog, &n);
    if (r != 0 || n == 0) return make_error(HPF_ERROR_COMPILE, "nvrtcGetCUBINSize: " + nvrtc_error(p, r));
    auto* blob = static_cast<hpf_blob*>(std::malloc(sizeof(hpf_blob) + n));
    if (!blob) return &out_of_memory_error;
    char* bytes = reinterpret_cast<char*>(blob + 1);
    r = p->nvrtc.GetCUBIN(prog.prog, bytes);
    if (r != 0) {
      std::free(blob);
      return make_error(HPF_ERROR_COMPILE, "nvrtcGetCUBIN: " + nvrtc_error(p, r));
    }
    blob->struct_size = sizeof(hpf_blob);
    blob->data = bytes;
    blob->size = n;
    *out = blob;
    return nullptr;
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  }
}

void cuda_blob_free(hpf_plugin*, hpf_blob* b) { std::free(b); }
hpf_error* cuda_program_load(hpf_plugin* p, int32_t d, const void*, size_t, hpf_program** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "program_load");
}
void cuda_program_unload(hpf_plugin*, hpf_program*) {}
hpf_error* cuda_kernel_get(hpf_plugin* p, hpf_program*, const char*, hpf_kernel** out) {
  *out = nullptr;
  return no_gpu(p, "kernel_get");
}
hpf_error* cuda_kernel_launch(hpf_plugin* p, hpf_kernel*, const hpf_launch*) { return no_gpu(p, "kernel_launch"); }
hpf_error* cuda_timer_create(hpf_plugin* p, int32_t d, hpf_timer** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "timer_create");
}
void cuda_timer_destroy(hpf_plugin*, hpf_timer*) {}
hpf_error* cuda_timer_start(hpf_plugin* p, hpf_timer*) { return no_gpu(p, "timer_start"); }
hpf_error* cuda_timer_stop(hpf_plugin* p, hpf_timer*, uint64_t*) { return no_gpu(p, "timer_stop"); }

const hpf_plugin_api kApi = {
    sizeof(hpf_plugin_api), HPF_PLUGIN_ABI_MAJOR, HPF_PLUGIN_ABI_MINOR,
    cuda_plugin_init, cuda_plugin_destroy, cuda_plugin_info,
    cuda_error_code, cuda_error_message, cuda_error_destroy,
    cuda_device_count, cuda_device_info, cuda_device_synchronize,
    cuda_buffer_alloc, cuda_buffer_free, cuda_buffer_pointer, cuda_buffer_copy_in, cuda_buffer_copy_out,
    cuda_program_compile, cuda_blob_free, cuda_program_load, cuda_program_unload, cuda_kernel_get,
    cuda_kernel_launch,
    cuda_timer_create, cuda_timer_destroy, cuda_timer_start, cuda_timer_stop,
};

}  // namespace

extern "C" HPF_CUDA_EXPORT const hpf_plugin_api* hpf_get_plugin_api(void) { return &kApi; }
