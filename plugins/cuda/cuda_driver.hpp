// The CUDA driver API, found with dlopen("libcuda.so.1") and dlsym (never linked): the
// functions the plugin calls, the GPUs it finds, and why there are none when there are none.
//
// Ownership: a Driver is created once per plugin instance and lives as long as it; the library
// is never closed (plugins never unload). Each GPU's primary context is retained at discovery
// and released by ~Driver. Thread-safety: the function pointers are immutable after load;
// callers make the device's context current (use()) on their own thread before each call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpf_cuda {

using CUresult = int;  // 0 = CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;

struct Gpu {
  CUdevice device = 0;
  std::string name;          // "NVIDIA H200"
  std::string architecture;  // "sm_90"
  std::string pci_bus_id;    // "0000:19:00.0", for NVML
  int cc_major = 0, cc_minor = 0, sms = 0, clock_khz = 0;
  uint64_t memory_bytes = 0;
  CUcontext context = nullptr;  // retained primary context
  CUstream stream = nullptr;    // the plugin's stream on this GPU (non-blocking)
};

struct Driver {
  void* lib = nullptr;
  std::string reason;  // why there is no usable GPU ("" when gpus is non-empty)
  int version = 0;     // cuDriverGetVersion: 13000 = CUDA 13.0
  std::vector<Gpu> gpus;

  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DriverGetVersion)(int*) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**) = nullptr;
  CUresult (*StreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*StreamDestroy)(CUstream) = nullptr;
  CUresult (*StreamSynchronize)(CUstream) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventDestroy)(CUevent) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventSynchronize)(CUevent) = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;

  Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  ~Driver();

  // "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string error(const char* function, CUresult r) const;
  // Makes gpus[g]'s context current on the calling thread.
  CUresult use(size_t g) const { return CtxSetCurrent(gpus[g].context); }
};

// Opens libcuda.so.1 (only $HPF_CUDA_DRIVER_LIBRARY when set: a test can point it at the CUDA
// stubs, whose cuInit fails), initialises it and describes every GPU: name, sm_XY, SMs, clock,
// memory; retains each primary context and creates a stream. Any failure leaves `gpus` empty and
// says why in `reason` ("no CUDA driver (libcuda.so.1 not found)", "cuInit: ...", "no CUDA
// device"); a GPU whose context cannot be set up is left out with its reason.
void load_driver(Driver& d);

}  // namespace hpf_cuda
