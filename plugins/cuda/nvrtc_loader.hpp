// NVRTC, found with dlopen (never linked): the functions this plugin calls,
// and why a library is missing when it is.
#pragma once

#include <cstddef>
#include <string>

namespace hpf_cuda {

typedef struct _nvrtcProgram* nvrtcProgram;  // NVRTC's own opaque handle type
using nvrtcResult = int;                      // 0 = NVRTC_SUCCESS

struct Nvrtc {
  void* lib = nullptr;
  std::string path;    // the file that was opened
  std::string reason;  // why lib is null
  int major = 0, minor = 0;
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  bool ok() const { return lib != nullptr; }
};

// libnvrtc.so.13, then .12: by soname, then under $CUDA_HOME/lib64 and /usr/local/cuda/lib64;
// only $HPF_NVRTC_LIBRARY when that is set.
Nvrtc load_nvrtc();

// The CUDA include directory holding cuda_fp16.h ("" when none): $CUDA_HOME/include or
// /usr/local/cuda/include.
std::string cuda_include_dir();

}  // namespace hpf_cuda
