// The HIP plugin, compile-only: hipRTC turns "hip" dialect source into an AMD GPU code object for
// each target architecture. Running kernels (HIP runtime: memory, modules, launches) is not
// there yet, so every device scores 0 with the reason, and compile-only use (hpf compile-check)
// works on any machine with libamdhip64.so.5, GPU or not.
//
// Devices. One per target of HPF_HIP_TARGETS (comma-separated gfxNNN, read at plugin_init).
// Unset: one device "hip (no target)" whose compiles fail asking for HPF_HIP_TARGETS.
//
// Targets. hipRTC 5.2 crashes the process on an architecture it does not know (gfx940-942,
// gfx11xx), so every target is checked against the compiler's own ISA list (comgr) first and
// refused with "unsupported target gfxNNN (known: ...)".
//
// Threads. Compiles are serialised by a mutex (hipRTC's thread-safety is not documented for 5.2).
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "hpf/plugin.h"
#include "plugins/common/plugin_common.hpp"
#include "plugins/hip/hiprtc_loader.hpp"

#define HPF_HIP_EXPORT __attribute__((visibility("default")))

namespace {

using namespace hpf_hip;

hpf_error out_of_memory_error{HPF_ERROR_OUT_OF_MEMORY, "hip: out of memory", true};

hpf_error* make_error(hpf_error_code code, std::string message) {
  return hpf_plugin_common::make_error(&out_of_memory_error, "hip", code, std::move(message));
}

struct Device {
  std::string name, architecture;
  std::vector<hpf_kv> fingerprint;
};

}  // namespace

struct hpf_plugin {
  hpf_plugin_info info{};
  Hip hip;
  std::string reason;    // why every device scores 0
  std::string compiler;  // "hiprtc 5.2.21153"
  std::string flags;     // common flags, part of the cache key
  std::string version;
  std::vector<Device> devices;
  std::vector<hpf_device_info> infos;
  std::vector<hpf_precision_support> precisions;
  std::once_flag isa_once;
  IsaList isa;           // loaded on the first compile
  std::mutex compile_mutex;
};

namespace {

const char* kFlags = "-O3";

// gfx followed by 3-4 hex digits, then optional target features (":xnack-", ":sramecc+").
bool valid_target(const std::string& t) {
  const std::string base = t.substr(0, t.find(':'));
  if (base.size() < 6 || base.size() > 7 || base.compare(0, 3, "gfx") != 0) return false;
  for (size_t k = 3; k < base.size(); ++k)
    if (!std::isxdigit(static_cast<unsigned char>(base[k]))) return false;
  return true;
}

// Why this machine cannot run kernels (every device's score is 0).
std::string no_run_reason(const Hip& hip) {
  if (!hip.ok()) return hip.reason;
  int n = 0;
  const hipError_t r = hip.GetDeviceCount(&n);
  if (r != 0) {
    const char* name = hip.GetErrorName ? hip.GetErrorName(r) : nullptr;
    return std::string("no AMD GPU (hipGetDeviceCount: ") + (name ? name : std::to_string(r)) +
           "); compile-only use works";
  }
  if (n == 0) return "no AMD GPU (hipGetDeviceCount: 0 devices); compile-only use works";
  return "compile-only: running kernels on AMD GPUs is not implemented yet";
}

hpf_error* hip_plugin_init(hpf_plugin** out) {
  *out = nullptr;
  try {
    auto p = std::make_unique<hpf_plugin>();
    p->info = {sizeof(hpf_plugin_info), "hip", "0.1.0"};
    p->hip = load_hip();
    p->reason = no_run_reason(p->hip);
    p->version = p->hip.ok() ? p->hip.version() : "none";
    p->compiler = p->hip.ok() ? "hiprtc " + p->version : "none";
    p->flags = kFlags;
    // MatMul also multiplies 8-bit integers (v_dot4 where the target has it, exact integer
    // multiply-adds elsewhere: jit/codegen/gpu_tiled_matmul.cpp).
    for (const char* cls : {"elementwise", "normalization", "reduction", "data_movement", "matmul", "conv"})
      p->precisions.push_back(
          {sizeof(hpf_precision_support), cls, std::string(cls) == "matmul" ? "f32,f16,bf16,i8,u8" : "f32,f16,bf16"});
    std::vector<std::string> targets = hpf_plugin_common::targets_from_env("HPF_HIP_TARGETS");
    if (targets.empty()) targets.push_back("");
    p->devices.reserve(targets.size());
    for (const std::string& t : targets) {
      Device d;
      d.architecture = t;
      d.name = t.empty() ? "hip (no target: set HPF_HIP_TARGETS)" : "hip compile target " + t;
      p->devices.push_back(std::move(d));
    }
    for (Device& d : p->devices) {
      d.fingerprint = {{sizeof(hpf_kv), "architecture", d.architecture.c_str()},
                       {sizeof(hpf_kv), "hip", p->version.c_str()}};
      hpf_device_info i{};
      i.struct_size = sizeof i;
      i.name = d.name.c_str();
      i.architecture = d.architecture.c_str();
      i.dialect = "hip";
      i.score = 0;
      i.score_reason = p->reason.c_str();
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

void hip_plugin_destroy(hpf_plugin* p) { delete p; }
const hpf_plugin_info* hip_plugin_info(const hpf_plugin* p) { return &p->info; }
hpf_error_code hip_error_code(const hpf_error* e) { return e->code; }
const char* hip_error_message(const hpf_error* e) { return e->message.c_str(); }
void hip_error_destroy(hpf_error* e) {
  if (e && !e->is_static) delete e;
}

int32_t hip_device_count(const hpf_plugin* p) { return static_cast<int32_t>(p->infos.size()); }
const hpf_device_info* hip_device_info(const hpf_plugin* p, int32_t d) {
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

// Null when hipRTC knows `arch`; the "unsupported target" error otherwise.
hpf_error* check_target(hpf_plugin* p, const std::string& arch) {
  if (arch.empty())
    return make_error(HPF_ERROR_UNSUPPORTED, "program_compile: no target architecture (set HPF_HIP_TARGETS=gfx90a,...)");
  if (!valid_target(arch)) return make_error(HPF_ERROR_UNSUPPORTED, "unsupported target '" + arch + "' (not gfxNNN)");
  std::call_once(p->isa_once, [p] { p->isa = load_isa_list(); });
  const std::string base = arch.substr(0, arch.find(':'));
  std::string known;
  for (const std::string& t : p->isa.targets) {
    if (t == base) return nullptr;
    if (t.rfind("gfx9", 0) == 0 || t.rfind("gfx10", 0) == 0) known += (known.empty() ? "" : ", ") + t;
  }
  return make_error(HPF_ERROR_UNSUPPORTED, "unsupported target " + base + " (known to hipRTC " + p->version + ": " +
                                               known + "; from " + p->isa.source + ")");
}

struct Program {
  hpf_plugin* plugin;
  hiprtcProgram prog = nullptr;
  ~Program() {
    if (prog) plugin->hip.DestroyProgram(&prog);
  }
};

std::string hiprtc_error(const hpf_plugin* p, hiprtcResult r) {
  const char* s = p->hip.GetErrorString ? p->hip.GetErrorString(r) : nullptr;
  return s ? s : "hipRTC error " + std::to_string(r);
}

hpf_error* hip_program_compile(hpf_plugin* p, int32_t d, const char* source, size_t size, hpf_blob** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  if (!source && size) return make_error(HPF_ERROR_INVALID_ARGUMENT, "NULL source");
  if (!p->hip.ok()) return make_error(HPF_ERROR_UNSUPPORTED, "program_compile: " + p->hip.reason);
  const std::string& arch = p->devices[d].architecture;
  try {
    if (hpf_error* e = check_target(p, arch)) return e;
    const std::string src(source ? source : "", size);
    std::lock_guard<std::mutex> lock(p->compile_mutex);
    Program prog{p};
    hiprtcResult r = p->hip.CreateProgram(&prog.prog, src.c_str(), "hpf_kernel.hip", 0, nullptr, nullptr);
    if (r != 0) return make_error(HPF_ERROR_INTERNAL, "hiprtcCreateProgram: " + hiprtc_error(p, r));
    const std::string gpu = "--gpu-architecture=" + arch;
    const char* opts[] = {gpu.c_str(), kFlags};
    r = p->hip.CompileProgram(prog.prog, 2, opts);
    size_t log_size = 0;
    std::string log;
    if (p->hip.GetProgramLogSize(prog.prog, &log_size) == 0 && log_size > 1) {
      log.resize(log_size);
      p->hip.GetProgramLog(prog.prog, log.data());
      log.resize(std::strlen(log.c_str()));
    }
    if (r != 0) return make_error(HPF_ERROR_COMPILE, "hiprtc (" + arch + "): " + hiprtc_error(p, r) + "\n" + log);
    size_t n = 0;
    r = p->hip.GetCodeSize(prog.prog, &n);
    if (r != 0 || n == 0) return make_error(HPF_ERROR_COMPILE, "hiprtcGetCodeSize: " + hiprtc_error(p, r) + "\n" + log);
    auto* blob = static_cast<hpf_blob*>(std::malloc(sizeof(hpf_blob) + n));
    if (!blob) return &out_of_memory_error;
    char* bytes = reinterpret_cast<char*>(blob + 1);
    r = p->hip.GetCode(prog.prog, bytes);
    if (r != 0) {
      std::free(blob);
      return make_error(HPF_ERROR_COMPILE, "hiprtcGetCode: " + hiprtc_error(p, r));
    }
    blob->struct_size = sizeof(hpf_blob);
    blob->data = bytes;
    blob->size = n;
    *out = blob;
    return nullptr;
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  } catch (const std::exception& e) {
    return make_error(HPF_ERROR_INTERNAL, std::string("program_compile: ") + e.what());
  }
}

void hip_blob_free(hpf_plugin*, hpf_blob* b) { std::free(b); }

// The device-side roles, refused with the reason until the HIP runtime path exists.
hpf_error* hip_device_synchronize(hpf_plugin* p, int32_t d) { return check_device(p, d); }  // nothing is queued
hpf_error* hip_buffer_alloc(hpf_plugin* p, int32_t d, size_t, hpf_buffer** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "buffer_alloc");
}
void hip_buffer_free(hpf_plugin*, hpf_buffer*) {}
void* hip_buffer_pointer(hpf_plugin*, hpf_buffer*) { return nullptr; }
hpf_error* hip_buffer_copy_in(hpf_plugin* p, hpf_buffer*, size_t, const void*, size_t) { return no_gpu(p, "buffer_copy_in"); }
hpf_error* hip_buffer_copy_out(hpf_plugin* p, const hpf_buffer*, size_t, void*, size_t) {
  return no_gpu(p, "buffer_copy_out");
}
hpf_error* hip_program_load(hpf_plugin* p, int32_t d, const void*, size_t, hpf_program** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "program_load");
}
void hip_program_unload(hpf_plugin*, hpf_program*) {}
hpf_error* hip_kernel_get(hpf_plugin* p, hpf_program*, const char*, hpf_kernel** out) {
  *out = nullptr;
  return no_gpu(p, "kernel_get");
}
hpf_error* hip_kernel_launch(hpf_plugin* p, hpf_kernel*, const hpf_launch*) { return no_gpu(p, "kernel_launch"); }
hpf_error* hip_timer_create(hpf_plugin* p, int32_t d, hpf_timer** out) {
  *out = nullptr;
  if (hpf_error* e = check_device(p, d)) return e;
  return no_gpu(p, "timer_create");
}
void hip_timer_destroy(hpf_plugin*, hpf_timer*) {}
hpf_error* hip_timer_start(hpf_plugin* p, hpf_timer*) { return no_gpu(p, "timer_start"); }
hpf_error* hip_timer_stop(hpf_plugin* p, hpf_timer*, uint64_t*) { return no_gpu(p, "timer_stop"); }

const hpf_plugin_api kApi = {
    sizeof(hpf_plugin_api), HPF_PLUGIN_ABI_MAJOR, HPF_PLUGIN_ABI_MINOR,
    hip_plugin_init, hip_plugin_destroy, hip_plugin_info,
    hip_error_code, hip_error_message, hip_error_destroy,
    hip_device_count, hip_device_info, hip_device_synchronize,
    hip_buffer_alloc, hip_buffer_free, hip_buffer_pointer, hip_buffer_copy_in, hip_buffer_copy_out,
    hip_program_compile, hip_blob_free, hip_program_load, hip_program_unload, hip_kernel_get,
    hip_kernel_launch,
    hip_timer_create, hip_timer_destroy, hip_timer_start, hip_timer_stop,
};

}  // namespace

extern "C" HPF_HIP_EXPORT const hpf_plugin_api* hpf_get_plugin_api(void) { return &kApi; }
