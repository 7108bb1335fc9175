// dlopen of the CUDA driver and discovery of its GPUs; see cuda_driver.hpp.
#include "plugins/cuda/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace hpf_cuda {
namespace {

constexpr int kAttrClockRate = 13, kAttrSmCount = 16, kAttrCcMajor = 75, kAttrCcMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;

// The first of `names` the library exports (a _v2 entry point before its older name).
template <class F>
void sym(void* lib, std::initializer_list<const char*> names, F& out, std::string& missing) {
  for (const char* n : names)
    if ((out = reinterpret_cast<F>(dlsym(lib, n)))) return;
  missing += std::string(missing.empty() ? "" : ", ") + *names.begin();
}

}  // namespace

Driver::~Driver() {
  for (Gpu& g : gpus) {
    if (g.stream && CtxSetCurrent(g.context) == 0) StreamDestroy(g.stream);
    if (g.context) DevicePrimaryCtxRelease(g.device);
  }
}

std::string Driver::error(const char* function, CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (GetErrorName && GetErrorName(r, &name) != 0) name = nullptr;
  if (GetErrorString && GetErrorString(r, &text) != 0) text = nullptr;
  // The stub library (and a driver too old to name its errors) answer nothing: the common ones.
  if (!name && r == 34) name = "CUDA_ERROR_STUB_LIBRARY", text = "the CUDA stub library, not a driver";
  if (!name && r == 35) name = "CUDA_ERROR_INSUFFICIENT_DRIVER", text = "the driver is older than this CUDA";
  if (!name && r == 100) name = "CUDA_ERROR_NO_DEVICE", text = "no CUDA-capable device";
  std::string s = std::string(function) + ": " + (name ? name : "CUDA error " + std::to_string(r));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void load_driver(Driver& d) {
  const char* chosen = std::getenv("HPF_CUDA_DRIVER_LIBRARY");
  const std::string file = chosen && *chosen ? chosen : "libcuda.so.1";
  d.lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.lib) {
    d.reason = "no CUDA driver (" + file + " not found)";
    return;
  }
  std::string missing;
  sym(d.lib, {"cuGetErrorName"}, d.GetErrorName, missing);
  sym(d.lib, {"cuGetErrorString"}, d.GetErrorString, missing);
  sym(d.lib, {"cuInit"}, d.Init, missing);
  sym(d.lib, {"cuDriverGetVersion"}, d.DriverGetVersion, missing);
  sym(d.lib, {"cuDeviceGetCount"}, d.DeviceGetCount, missing);
  sym(d.lib, {"cuDeviceGet"}, d.DeviceGet, missing);
  sym(d.lib, {"cuDeviceGetName"}, d.DeviceGetName, missing);
  sym(d.lib, {"cuDeviceGetAttribute"}, d.DeviceGetAttribute, missing);
  sym(d.lib, {"cuDeviceGetPCIBusId"}, d.DeviceGetPCIBusId, missing);
  sym(d.lib, {"cuDeviceTotalMem_v2"}, d.DeviceTotalMem, missing);
  sym(d.lib, {"cuDevicePrimaryCtxRetain"}, d.DevicePrimaryCtxRetain, missing);
  sym(d.lib, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, d.DevicePrimaryCtxRelease, missing);
  sym(d.lib, {"cuCtxSetCurrent"}, d.CtxSetCurrent, missing);
  sym(d.lib, {"cuMemAlloc_v2"}, d.MemAlloc, missing);
  sym(d.lib, {"cuMemFree_v2"}, d.MemFree, missing);
  sym(d.lib, {"cuMemcpyHtoDAsync_v2"}, d.MemcpyHtoDAsync, missing);
  sym(d.lib, {"cuMemcpyDtoHAsync_v2"}, d.MemcpyDtoHAsync, missing);
  sym(d.lib, {"cuModuleLoadData"}, d.ModuleLoadData, missing);
  sym(d.lib, {"cuModuleUnload"}, d.ModuleUnload, missing);
  sym(d.lib, {"cuModuleGetFunction"}, d.ModuleGetFunction, missing);
  sym(d.lib, {"cuFuncSetAttribute"}, d.FuncSetAttribute, missing);
  sym(d.lib, {"cuLaunchKernel"}, d.LaunchKernel, missing);
  sym(d.lib, {"cuStreamCreate"}, d.StreamCreate, missing);
  sym(d.lib, {"cuStreamDestroy_v2"}, d.StreamDestroy, missing);
  sym(d.lib, {"cuStreamSynchronize"}, d.StreamSynchronize, missing);
  sym(d.lib, {"cuEventCreate"}, d.EventCreate, missing);
  sym(d.lib, {"cuEventDestroy_v2"}, d.EventDestroy, missing);
  sym(d.lib, {"cuEventRecord"}, d.EventRecord, missing);
  sym(d.lib, {"cuEventSynchronize"}, d.EventSynchronize, missing);
  sym(d.lib, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, d.EventElapsedTime, missing);
  if (!missing.empty()) {
    d.reason = file + " lacks " + missing;
    d.lib = nullptr;
    return;
  }
  if (CUresult r = d.Init(0); r != 0) {
    d.reason = d.error("cuInit", r);
    return;
  }
  if (d.DriverGetVersion(&d.version) != 0) d.version = 0;
  int count = 0;
  if (CUresult r = d.DeviceGetCount(&count); r != 0) {
    d.reason = d.error("cuDeviceGetCount", r);
    return;
  }
  if (count == 0) {
    d.reason = "no CUDA device (the driver reports none)";
    return;
  }
  std::string skipped;
  for (int k = 0; k < count; ++k) {
    Gpu g;
    char buf[256] = {};
    size_t mem = 0;
    CUresult r = d.DeviceGet(&g.device, k);
    if (r == 0) r = d.DeviceGetName(buf, sizeof buf, g.device);
    g.name = buf;
    if (r == 0) r = d.DeviceGetAttribute(&g.cc_major, kAttrCcMajor, g.device);
    if (r == 0) r = d.DeviceGetAttribute(&g.cc_minor, kAttrCcMinor, g.device);
    if (r == 0) r = d.DeviceGetAttribute(&g.sms, kAttrSmCount, g.device);
    if (r == 0) r = d.DeviceGetAttribute(&g.clock_khz, kAttrClockRate, g.device);
    if (r == 0) r = d.DeviceTotalMem(&mem, g.device);
    if (r == 0 && d.DeviceGetPCIBusId(buf, sizeof buf, g.device) == 0) g.pci_bus_id = buf;
    if (r == 0) r = d.DevicePrimaryCtxRetain(&g.context, g.device);
    if (r != 0) {
      skipped += "; GPU " + std::to_string(k) + ": " + d.error("device query", r);
      continue;
    }
    if ((r = d.CtxSetCurrent(g.context)) == 0) r = d.StreamCreate(&g.stream, kStreamNonBlocking);
    if (r != 0) {
      d.DevicePrimaryCtxRelease(g.device);
      skipped += "; GPU " + std::to_string(k) + ": " + d.error("cuStreamCreate", r);
      continue;
    }
    g.memory_bytes = mem;
    g.architecture = "sm_" + std::to_string(g.cc_major) + std::to_string(g.cc_minor);
    d.gpus.push_back(std::move(g));
  }
  if (d.gpus.empty()) d.reason = "no usable CUDA device" + skipped;
}

}  // namespace hpf_cuda
