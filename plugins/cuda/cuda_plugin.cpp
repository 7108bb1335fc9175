// The CUDA plugin: NVRTC compiles "cuda" dialect source to CUBIN (PTX when HPF_CUDA_PTX=1) and
// the driver API (cuda_driver.hpp) runs it: device memory, modules, launches on one
// non-blocking stream per GPU, events for the timer. Both libraries are dlopen'ed.
//
// Devices. One per GPU the driver reports (architecture sm_XY from its compute capability,
// score 50: usable, but below the CPU plugin's 100 until the Session's GPU path has passed the
// device suite (tests/device) on a GPU; SessionOptions::plugin "cuda" picks it), then one compile-only device per
// target of HPF_CUDA_TARGETS (comma-separated sm_NN, read at plugin_init; score 0 "compile-only
// target"). No driver or no GPU and no targets: one device "cuda (no target)" with score 0 and
// the reason, whose compiles fail asking for HPF_CUDA_TARGETS.
//
// Power: the extra symbol hpf_cuda_get_power_api (cuda_power.h) reads NVML for `hpf bench`.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "hpf/plugin.h"
#include "plugins/common/plugin_common.hpp"
#include "plugins/cuda/cuda_driver.hpp"
#include "plugins/cuda/cuda_power.h"
#include "plugins/cuda/nvml_power.hpp"
#include "plugins/cuda/nvrtc_loader.hpp"

#define HPF_CUDA_EXPORT __attribute__((visibility("default")))

namespace {

using namespace hpf_cuda;

constexpr int32_t kGpuScore = 50;
constexpr int kFuncMaxDynamicShared = 8;

hpf_error out_of_memory_error{HPF_ERROR_OUT_OF_MEMORY, "cuda: out of memory", true};

hpf_error* make_error(hpf_error_code code, std::string message) {
  return hpf_plugin_common::make_error(&out_of_memory_error, "cuda", code, std::move(message));
}

struct Device {
  std::string name, architecture, reason, precisions_matmul, precisions_conv;
  int gpu = -1;  // index into Driver::gpus; -1 = compile-only target
  std::vector<hpf_kv> fingerprint;
  std::vector<hpf_precision_support> precisions;
};

}  // namespace

struct hpf_plugin {
  hpf_plugin_info info{};
  Nvrtc nvrtc;
  Driver driver;
  Nvml nvml;
  std::string include_dir;
  std::string compiler;  // "nvrtc 13.0"
  std::string flags;     // common flags, part of the cache key
  std::string nvrtc_version, driver_version;
  bool ptx = false;      // HPF_CUDA_PTX=1: blobs are PTX text, JIT-compiled by the driver at load
  std::vector<Device> devices;
  std::vector<hpf_device_info> infos;
};

struct hpf_buffer {
  int32_t device;
  CUdeviceptr ptr;
  size_t size;
};

struct hpf_kernel {
  hpf_program* program;
  CUfunction fn;
  uint32_t shared_opt_in = 48 * 1024;  // dynamic shared bytes allowed so far
};

struct hpf_program {
  int32_t device;
  CUmodule module;
  std::map<std::string, std::unique_ptr<hpf_kernel>> kernels;
};

struct hpf_timer {
  int32_t device;
  CUevent start = nullptr, stop = nullptr;
};

namespace {

// An environment switch: set, not empty and not "0".
bool env_flag(const char* var) {
  const char* v = std::getenv(var);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool valid_target(const std::string& t) {
  if (t.size() < 5 || t.compare(0, 3, "sm_") != 0) return false;
  for (size_t k = 3; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k])) && !(k == t.size() - 1 && t[k] == 'a')) return false;
  return true;
}

// sm_89 -> 89 (0 when not a target).
int arch_number(const std::string& t) { return valid_target(t) ? std::atoi(t.c_str() + 3) : 0; }

// What the generated kernels run per op class on an architecture (cuda_gemm.hpp's instructions).
void describe_precisions(Device& d) {
  const int sm = arch_number(d.architecture);
  d.precisions_matmul = sm >= 80 ? "f32,tf32,bf16,f16,i8,u8" : "f32,f16,bf16";
  d.precisions_conv = sm >= 80 ? "f32,tf32,bf16,f16" : "f32,f16,bf16";
  if (sm >= 89) {
    d.precisions_matmul += ",f8e4m3,f8e5m2";
    d.precisions_conv += ",f8e4m3,f8e5m2";
  }
  d.precisions = {{sizeof(hpf_precision_support), "matmul", d.precisions_matmul.c_str()},
                  {sizeof(hpf_precision_support), "conv", d.precisions_conv.c_str()},
                  {sizeof(hpf_precision_support), "elementwise", "f32,f16,bf16"},
                  {sizeof(hpf_precision_support), "normalization", "f32,f16,bf16"},
                  {sizeof(hpf_precision_support), "softmax", "f32,f16,bf16"}};
}

hpf_error* cuda_plugin_init(hpf_plugin** out) {
  *out = nullptr;
  try {
    auto p = std::make_unique<hpf_plugin>();
    p->info = {sizeof(hpf_plugin_info), "cuda", "0.2.0"};
    p->nvrtc = load_nvrtc();
    load_driver(p->driver);
    p->include_dir = cuda_include_dir();
    p->nvrtc_version = std::to_string(p->nvrtc.major) + "." + std::to_string(p->nvrtc.minor);
    p->driver_version = p->driver.version ? std::to_string(p->driver.version / 1000) + "." +
                                                std::to_string(p->driver.version % 1000 / 10)
                                          : "none";
    p->compiler = p->nvrtc.ok() ? "nvrtc " + p->nvrtc_version : "none";
    p->ptx = env_flag("HPF_CUDA_PTX");
    p->flags = "-default-device --std=c++17";
    if (p->ptx) p->flags += " --ptx";
    if (!p->include_dir.empty()) p->flags += " --include-path=" + p->include_dir;
    const std::string no_nvrtc = p->nvrtc.ok() ? "" : "; " + p->nvrtc.reason;
    // HPF_CUDA_WGMMA=1: compile for sm_90a on CC 9.0 GPUs (H100, H200), so the GEMM kernels take
    // their wgmma form (cuda_wgmma.cpp); opt-in until the device suite has passed with it on a GPU.
    const bool arch_specific = env_flag("HPF_CUDA_WGMMA");
    for (size_t g = 0; g < p->driver.gpus.size(); ++g) {
      Device d;
      d.gpu = static_cast<int>(g);
      d.name = p->driver.gpus[g].name;
      d.architecture = p->driver.gpus[g].architecture;
      if (arch_specific && d.architecture == "sm_90") d.architecture = "sm_90a";
      d.reason = p->nvrtc.ok() ? "" : "no kernel compiler" + no_nvrtc;
      p->devices.push_back(std::move(d));
    }
    std::vector<std::string> targets = hpf_plugin_common::targets_from_env("HPF_CUDA_TARGETS");
    if (targets.empty() && p->devices.empty()) targets.push_back("");
    for (const std::string& t : targets) {
      Device d;
      d.architecture = t;
      d.name = t.empty() ? "cuda (no target: set HPF_CUDA_TARGETS)" : "cuda compile target " + t;
      d.reason = (p->driver.gpus.empty() ? p->driver.reason : "compile-only target") + no_nvrtc;
      p->devices.push_back(std::move(d));
    }
    for (Device& d : p->devices) {
      describe_precisions(d);
      d.fingerprint = {{sizeof(hpf_kv), "architecture", d.architecture.c_str()},
                       {sizeof(hpf_kv), "nvrtc", p->nvrtc_version.c_str()},
                       {sizeof(hpf_kv), "driver", p->driver_version.c_str()},
                       {sizeof(hpf_kv), "flags", p->flags.c_str()}};
      hpf_device_info i{};
      i.struct_size = sizeof i;
      i.name = d.name.c_str();
      i.architecture = d.architecture.c_str();
      i.dialect = "cuda";
      i.score = d.gpu >= 0 && d.reason.empty() ? kGpuScore : 0;
      i.score_reason = d.reason.c_str();
      if (d.gpu >= 0) {
        i.memory_bytes = p->driver.gpus[d.gpu].memory_bytes;
        i.compute_units = p->driver.gpus[d.gpu].sms;
      }
      i.precisions = d.precisions.data();
      i.precision_count = d.precisions.size();
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

hpf_error* driver_error(const hpf_plugin* p, const char* function, CUresult r) {
  return make_error(r == 2 ? HPF_ERROR_OUT_OF_MEMORY : HPF_ERROR_DEVICE, p->driver.error(function, r));
}

// Checks `d` is a GPU and makes its context current; `what` names the refused function.
hpf_error* gpu_of(const hpf_plugin* p, int32_t d, const char* what, const Gpu** out) {
  if (hpf_error* e = check_device(p, d)) return e;
  const Device& dev = p->devices[d];
  if (dev.gpu < 0) return make_error(HPF_ERROR_UNSUPPORTED, std::string(what) + ": " + dev.reason);
  if (CUresult r = p->driver.use(dev.gpu); r != 0) return driver_error(p, "cuCtxSetCurrent", r);
  *out = &p->driver.gpus[dev.gpu];
  return nullptr;
}

hpf_error* cuda_device_synchronize(hpf_plugin* p, int32_t d) {
  if (hpf_error* e = check_device(p, d)) return e;
  if (p->devices[d].gpu < 0) return nullptr;  // nothing is ever queued on a compile-only target
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, d, "device_synchronize", &g)) return e;
  if (CUresult r = p->driver.StreamSynchronize(g->stream); r != 0) return driver_error(p, "cuStreamSynchronize", r);
  return nullptr;
}

hpf_error* cuda_buffer_alloc(hpf_plugin* p, int32_t d, size_t bytes, hpf_buffer** out) {
  *out = nullptr;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, d, "buffer_alloc", &g)) return e;
  CUdeviceptr ptr = 0;
  if (CUresult r = p->driver.MemAlloc(&ptr, bytes ? bytes : 1); r != 0) return driver_error(p, "cuMemAlloc", r);
  *out = new (std::nothrow) hpf_buffer{d, ptr, bytes};
  if (!*out) {
    p->driver.MemFree(ptr);
    return &out_of_memory_error;
  }
  return nullptr;
}

void cuda_buffer_free(hpf_plugin* p, hpf_buffer* b) {
  if (!b) return;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, b->device, "buffer_free", &g)) cuda_error_destroy(e);
  else {
    p->driver.StreamSynchronize(g->stream);  // launches still reading it
    p->driver.MemFree(b->ptr);
  }
  delete b;
}

void* cuda_buffer_pointer(hpf_plugin*, hpf_buffer* b) { return b ? reinterpret_cast<void*>(b->ptr) : nullptr; }

hpf_error* copy_range(hpf_plugin* p, const hpf_buffer* b, size_t offset, size_t bytes, const char* what, const Gpu** g) {
  if (!b) return make_error(HPF_ERROR_INVALID_ARGUMENT, std::string(what) + ": NULL buffer");
  if (offset > b->size || bytes > b->size - offset)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, std::string(what) + ": range outside the buffer");
  return gpu_of(p, b->device, what, g);
}

// Copies are ordered with the launches on the device's stream and complete before returning.
hpf_error* cuda_buffer_copy_in(hpf_plugin* p, hpf_buffer* b, size_t offset, const void* src, size_t bytes) {
  const Gpu* g = nullptr;
  if (hpf_error* e = copy_range(p, b, offset, bytes, "buffer_copy_in", &g)) return e;
  if (!bytes) return nullptr;
  if (CUresult r = p->driver.MemcpyHtoDAsync(b->ptr + offset, src, bytes, g->stream); r != 0)
    return driver_error(p, "cuMemcpyHtoDAsync", r);
  if (CUresult r = p->driver.StreamSynchronize(g->stream); r != 0) return driver_error(p, "cuStreamSynchronize", r);
  return nullptr;
}

hpf_error* cuda_buffer_copy_out(hpf_plugin* p, const hpf_buffer* b, size_t offset, void* dst, size_t bytes) {
  const Gpu* g = nullptr;
  if (hpf_error* e = copy_range(p, b, offset, bytes, "buffer_copy_out", &g)) return e;
  if (!bytes) return nullptr;
  if (CUresult r = p->driver.MemcpyDtoHAsync(dst, b->ptr + offset, bytes, g->stream); r != 0)
    return driver_error(p, "cuMemcpyDtoHAsync", r);
  if (CUresult r = p->driver.StreamSynchronize(g->stream); r != 0) return driver_error(p, "cuStreamSynchronize", r);
  return nullptr;
}

struct NvrtcProgram {
  hpf_plugin* plugin;
  nvrtcProgram prog = nullptr;
  ~NvrtcProgram() {
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
    NvrtcProgram prog{p};
    nvrtcResult r = p->nvrtc.CreateProgram(&prog.prog, src.c_str(), "hpf_kernel.cu", 0, nullptr, nullptr);
    if (r != 0) return make_error(HPF_ERROR_INTERNAL, "nvrtcCreateProgram: " + nvrtc_error(p, r));
    // PTX: a virtual architecture (compute_XY), JIT-compiled by the driver at load.
    const std::string gpu = "--gpu-architecture=" + (p->ptx ? "compute_" + arch.substr(3) : arch);
    const std::string inc = "--include-path=" + p->include_dir;
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
    if (r != 0) return make_error(HPF_ERROR_COMPILE, "nvrtc (" + arch + "): " + nvrtc_error(p, r) + "\n" + log);
    size_t n = 0;
    r = p->ptx ? p->nvrtc.GetPTXSize(prog.prog, &n) : p->nvrtc.GetCUBINSize(prog.prog, &n);
    if (r != 0 || n == 0) return make_error(HPF_ERROR_COMPILE, "nvrtcGet{CUBIN,PTX}Size: " + nvrtc_error(p, r));
    auto* blob = static_cast<hpf_blob*>(std::malloc(sizeof(hpf_blob) + n));
    if (!blob) return &out_of_memory_error;
    char* bytes = reinterpret_cast<char*>(blob + 1);
    r = p->ptx ? p->nvrtc.GetPTX(prog.prog, bytes) : p->nvrtc.GetCUBIN(prog.prog, bytes);
    if (r != 0) {
      std::free(blob);
      return make_error(HPF_ERROR_COMPILE, "nvrtcGet{CUBIN,PTX}: " + nvrtc_error(p, r));
    }
    blob->struct_size = sizeof(hpf_blob);
    blob->data = bytes;
    blob->size = n;  // PTX: includes its terminating NUL, as cuModuleLoadData wants
    *out = blob;
    return nullptr;
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  }
}

void cuda_blob_free(hpf_plugin*, hpf_blob* b) { std::free(b); }

hpf_error* cuda_program_load(hpf_plugin* p, int32_t d, const void* data, size_t size, hpf_program** out) {
  *out = nullptr;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, d, "program_load", &g)) return e;
  if (!data || size < 4) return make_error(HPF_ERROR_INVALID_ARGUMENT, "program_load: empty binary");
  // cuModuleLoadData reads PTX up to its NUL: a PTX blob must carry one inside `size`.
  const bool elf = std::memcmp(data, "\x7f" "ELF", 4) == 0;
  if (!elf && std::memchr(data, 0, size) == nullptr)
    return make_error(HPF_ERROR_INVALID_ARGUMENT, "program_load: neither CUBIN (ELF) nor NUL-terminated PTX");
  CUmodule m = nullptr;
  if (CUresult r = p->driver.ModuleLoadData(&m, data); r != 0) return driver_error(p, "cuModuleLoadData", r);
  *out = new (std::nothrow) hpf_program{d, m, {}};
  if (!*out) {
    p->driver.ModuleUnload(m);
    return &out_of_memory_error;
  }
  return nullptr;
}

void cuda_program_unload(hpf_plugin* p, hpf_program* prog) {
  if (!prog) return;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, prog->device, "program_unload", &g)) cuda_error_destroy(e);
  else {
    p->driver.StreamSynchronize(g->stream);
    p->driver.ModuleUnload(prog->module);
  }
  delete prog;
}

hpf_error* cuda_kernel_get(hpf_plugin* p, hpf_program* prog, const char* name, hpf_kernel** out) {
  *out = nullptr;
  if (!prog || !name) return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_get: NULL program or name");
  try {
    auto it = prog->kernels.find(name);
    if (it != prog->kernels.end()) {
      *out = it->second.get();
      return nullptr;
    }
    const Gpu* g = nullptr;
    if (hpf_error* e = gpu_of(p, prog->device, "kernel_get", &g)) return e;
    CUfunction fn = nullptr;
    if (CUresult r = p->driver.ModuleGetFunction(&fn, prog->module, name); r != 0)
      return make_error(r == 500 ? HPF_ERROR_NOT_FOUND : HPF_ERROR_DEVICE,
                        "kernel_get '" + std::string(name) + "': " + p->driver.error("cuModuleGetFunction", r));
    auto k = std::make_unique<hpf_kernel>(hpf_kernel{prog, fn});
    *out = k.get();
    prog->kernels.emplace(name, std::move(k));
    return nullptr;
  } catch (const std::bad_alloc&) {
    return &out_of_memory_error;
  }
}

// Launch geometry: the caller's grid/block when block[0] > 0; otherwise grain (256 when 0)
// threads per block over ceil(work_items / grain) blocks.
hpf_error* cuda_kernel_launch(hpf_plugin* p, hpf_kernel* k, const hpf_launch* l) {
  if (!k || !l) return make_error(HPF_ERROR_INVALID_ARGUMENT, "kernel_launch: NULL kernel or launch");
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, k->program->device, "kernel_launch", &g)) return e;
  uint32_t grid[3] = {l->grid[0], l->grid[1], l->grid[2]}, block[3] = {l->block[0], l->block[1], l->block[2]};
  if (block[0] == 0) {
    const int64_t threads = l->grain > 0 ? std::min<int64_t>(l->grain, 1024) : 256;
    const int64_t blocks = std::max<int64_t>(1, (l->work_items + threads - 1) / threads);
    block[0] = static_cast<uint32_t>(threads), block[1] = block[2] = 1;
    grid[0] = static_cast<uint32_t>(std::min<int64_t>(blocks, 0x7fffffff)), grid[1] = grid[2] = 1;
  }
  for (int a = 0; a < 3; ++a)
    if (grid[a] == 0 || block[a] == 0) return nullptr;  // an empty launch
  if (l->shared_bytes > k->shared_opt_in) {
    if (CUresult r = p->driver.FuncSetAttribute(k->fn, kFuncMaxDynamicShared, static_cast<int>(l->shared_bytes)); r != 0)
      return driver_error(p, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
    k->shared_opt_in = l->shared_bytes;
  }
  // Each argument is one 8-byte value (a device pointer or a scalar widened to 8 bytes);
  // kernelParams points at each.
  std::vector<void*> params(l->arg_count);
  for (size_t a = 0; a < l->arg_count; ++a) params[a] = const_cast<void**>(&l->args[a]);
  if (CUresult r = p->driver.LaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], l->shared_bytes,
                                          g->stream, params.data(), nullptr);
      r != 0)
    return driver_error(p, "cuLaunchKernel", r);
  return nullptr;
}

hpf_error* cuda_timer_create(hpf_plugin* p, int32_t d, hpf_timer** out) {
  *out = nullptr;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, d, "timer_create", &g)) return e;
  auto t = std::unique_ptr<hpf_timer>(new (std::nothrow) hpf_timer{d});
  if (!t) return &out_of_memory_error;
  if (CUresult r = p->driver.EventCreate(&t->start, 0); r != 0) return driver_error(p, "cuEventCreate", r);
  if (CUresult r = p->driver.EventCreate(&t->stop, 0); r != 0) {
    p->driver.EventDestroy(t->start);
    return driver_error(p, "cuEventCreate", r);
  }
  *out = t.release();
  return nullptr;
}

void cuda_timer_destroy(hpf_plugin* p, hpf_timer* t) {
  if (!t) return;
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, t->device, "timer_destroy", &g)) cuda_error_destroy(e);
  else {
    p->driver.EventDestroy(t->start);
    p->driver.EventDestroy(t->stop);
  }
  delete t;
}

hpf_error* cuda_timer_start(hpf_plugin* p, hpf_timer* t) {
  if (!t) return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_start: NULL timer");
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, t->device, "timer_start", &g)) return e;
  if (CUresult r = p->driver.EventRecord(t->start, g->stream); r != 0) return driver_error(p, "cuEventRecord", r);
  return nullptr;
}

hpf_error* cuda_timer_stop(hpf_plugin* p, hpf_timer* t, uint64_t* ns) {
  if (!t || !ns) return make_error(HPF_ERROR_INVALID_ARGUMENT, "timer_stop: NULL timer or result");
  const Gpu* g = nullptr;
  if (hpf_error* e = gpu_of(p, t->device, "timer_stop", &g)) return e;
  if (CUresult r = p->driver.EventRecord(t->stop, g->stream); r != 0) return driver_error(p, "cuEventRecord", r);
  if (CUresult r = p->driver.EventSynchronize(t->stop); r != 0) return driver_error(p, "cuEventSynchronize", r);
  float ms = 0;
  if (CUresult r = p->driver.EventElapsedTime(&ms, t->start, t->stop); r != 0)
    return driver_error(p, "cuEventElapsedTime", r);
  *ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  return nullptr;
}

// -- the power extension (cuda_power.h) --

hpf_error* power_gpu(hpf_plugin* p, int32_t d, const Gpu** g) {
  if (!p) return make_error(HPF_ERROR_INVALID_ARGUMENT, "power: NULL plugin");
  return gpu_of(p, d, "power", g);
}

hpf_error* cuda_power_mw(hpf_plugin* p, int32_t d, uint32_t* mw) {
  const Gpu* g = nullptr;
  if (hpf_error* e = power_gpu(p, d, &g)) return e;
  if (std::string why = p->nvml.power_mw(g->pci_bus_id, mw); !why.empty()) return make_error(HPF_ERROR_UNSUPPORTED, why);
  return nullptr;
}

hpf_error* cuda_energy_mj(hpf_plugin* p, int32_t d, uint64_t* mj) {
  const Gpu* g = nullptr;
  if (hpf_error* e = power_gpu(p, d, &g)) return e;
  if (std::string why = p->nvml.energy_mj(g->pci_bus_id, mj); !why.empty()) return make_error(HPF_ERROR_UNSUPPORTED, why);
  return nullptr;
}

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

const hpf_cuda_power_api kPowerApi = {sizeof(hpf_cuda_power_api), cuda_power_mw, cuda_energy_mj};

}  // namespace

extern "C" HPF_CUDA_EXPORT const hpf_plugin_api* hpf_get_plugin_api(void) { return &kApi; }
extern "C" HPF_CUDA_EXPORT const hpf_cuda_power_api* hpf_cuda_get_power_api(void) { return &kPowerApi; }
