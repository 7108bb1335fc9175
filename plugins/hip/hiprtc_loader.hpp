// hipRTC and the HIP runtime (both in libamdhip64.so.5) and the code object manager's ISA list
// (libamd_comgr.so.2), found with dlopen, never linked: the functions this plugin calls, and why
// a library is missing when it is.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hpf_hip {

typedef struct _hiprtcProgram* hiprtcProgram;  // hipRTC's own opaque handle type
using hiprtcResult = int;                       // 0 = HIPRTC_SUCCESS
using hipError_t = int;                         // 0 = hipSuccess, 100 = hipErrorNoDevice

struct Hip {
  void* lib = nullptr;
  std::string path;    // the file that was opened
  std::string reason;  // why lib is null
  int runtime_version = 0;  // HIP_VERSION: major * 10^7 + minor * 10^5 + patch (50221153 = 5.2.21153)
  const char* (*GetErrorString)(hiprtcResult) = nullptr;
  hiprtcResult (*CreateProgram)(hiprtcProgram*, const char*, const char*, int, const char**, const char**) = nullptr;
  hiprtcResult (*DestroyProgram)(hiprtcProgram*) = nullptr;
  hiprtcResult (*CompileProgram)(hiprtcProgram, int, const char**) = nullptr;
  hiprtcResult (*GetProgramLogSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*GetProgramLog)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*GetCodeSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*GetCode)(hiprtcProgram, char*) = nullptr;
  hipError_t (*GetDeviceCount)(int*) = nullptr;
  const char* (*GetErrorName)(hipError_t) = nullptr;
  bool ok() const { return lib != nullptr; }
  std::string version() const;  // "5.2.21153"
};

// libamdhip64.so.5 by soname, or only $HPF_HIP_LIBRARY when that is set (a missing path
// disables HIP, which is how tests run "without libamdhip64").
Hip load_hip();

// The GPU architectures ("gfx90a", ...) this hipRTC can compile for, and where the list came
// from. Targets outside it (gfx940-942 and gfx11xx for ROCm 5.2) crash hipRTC instead of failing,
// so they must be refused before compiling.
struct IsaList {
  std::vector<std::string> targets;
  std::string source;  // "comgr 2.4 ISA list" or "built-in list (...)"
};
// From amd_comgr_get_isa_count/name of libamd_comgr.so.2 (the library hipRTC compiles with);
// where comgr cannot be opened, the list measured for ROCm 5.2.3 (TOOLCHAIN.md).
IsaList load_isa_list();

}  // namespace hpf_hip
