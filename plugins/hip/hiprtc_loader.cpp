// dlopen of hipRTC / the HIP runtime and of comgr's ISA list; see hiprtc_loader.hpp.
#include "plugins/hip/hiprtc_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace hpf_hip {
namespace {

template <class F>
void sym(void* lib, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out) missing += std::string(missing.empty() ? "" : ", ") + name;
}

}  // namespace

std::string Hip::version() const {
  const int v = runtime_version;
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." + std::to_string(v % 100000);
}

Hip load_hip() {
  Hip h;
  const char* chosen = std::getenv("HPF_HIP_LIBRARY");
  const std::string file = chosen && *chosen ? chosen : "libamdhip64.so.5";
  h.lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h.lib) {
    h.reason = chosen && *chosen ? "hipRTC not found (HPF_HIP_LIBRARY=" + file + ")"
                                 : "hipRTC not found (libamdhip64.so.5: install libamdhip64-5)";
    return h;
  }
  h.path = file;
  std::string missing;
  sym(h.lib, "hiprtcGetErrorString", h.GetErrorString, missing);
  sym(h.lib, "hiprtcCreateProgram", h.CreateProgram, missing);
  sym(h.lib, "hiprtcDestroyProgram", h.DestroyProgram, missing);
  sym(h.lib, "hiprtcCompileProgram", h.CompileProgram, missing);
  sym(h.lib, "hiprtcGetProgramLogSize", h.GetProgramLogSize, missing);
  sym(h.lib, "hiprtcGetProgramLog", h.GetProgramLog, missing);
  sym(h.lib, "hiprtcGetCodeSize", h.GetCodeSize, missing);
  sym(h.lib, "hiprtcGetCode", h.GetCode, missing);
  sym(h.lib, "hipGetDeviceCount", h.GetDeviceCount, missing);
  sym(h.lib, "hipGetErrorName", h.GetErrorName, missing);
  hipError_t (*runtime_version)(int*) = nullptr;
  sym(h.lib, "hipRuntimeGetVersion", runtime_version, missing);
  if (!missing.empty()) {
    h.reason = file + " lacks " + missing;
    h.lib = nullptr;  // left loaded: plugins never unload anything
    return h;
  }
  if (runtime_version(&h.runtime_version) != 0) h.runtime_version = 0;
  return h;
}

IsaList load_isa_list() {
  IsaList l;
  const char* chosen = std::getenv("HPF_COMGR_LIBRARY");
  const std::string file = chosen && *chosen ? chosen : "libamd_comgr.so.2";
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  using Count = int (*)(size_t*);
  using Name = int (*)(size_t, const char**);
  Count count = lib ? reinterpret_cast<Count>(dlsym(lib, "amd_comgr_get_isa_count")) : nullptr;
  Name name = lib ? reinterpret_cast<Name>(dlsym(lib, "amd_comgr_get_isa_name")) : nullptr;
  size_t n = 0;
  if (count && name && count(&n) == 0) {
    for (size_t k = 0; k < n; ++k) {
      const char* isa = nullptr;  // "amdgcn-amd-amdhsa--gfx90a"
      if (name(k, &isa) != 0 || !isa) continue;
      const std::string s = isa;
      const size_t at = s.rfind("--");
      l.targets.push_back(at == std::string::npos ? s : s.substr(at + 2));
    }
  }
  if (!l.targets.empty()) {
    l.source = "the ISA list of " + file;
    return l;
  }
  // ROCm 5.2.3's list (its comgr reports exactly these from gfx900 on).
  l.targets = {"gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
               "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033",
               "gfx1034", "gfx1035", "gfx1036"};
  l.source = "the built-in list for ROCm 5.2 (" + file + " not usable)";
  return l;
}

}  // namespace hpf_hip
