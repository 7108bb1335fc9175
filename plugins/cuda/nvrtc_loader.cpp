// dlopen of NVRTC; see nvrtc_loader.hpp.
#include "plugins/cuda/nvrtc_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

namespace hpf_cuda {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::vector<std::string> cuda_roots() {
  std::vector<std::string> r;
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) r.push_back(h);
  if (const char* h = std::getenv("CUDA_PATH"); h && *h) r.push_back(h);
  r.push_back("/usr/local/cuda");
  return r;
}

template <class F>
bool sym(void* lib, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out) missing += std::string(missing.empty() ? "" : ", ") + name;
  return out != nullptr;
}

}  // namespace

Nvrtc load_nvrtc() {
  Nvrtc n;
  std::vector<std::string> candidates;
  // HPF_NVRTC_LIBRARY names the one file to open (a particular NVRTC; a missing path disables it).
  const char* chosen = std::getenv("HPF_NVRTC_LIBRARY");
  if (chosen && *chosen) candidates.push_back(chosen);
  else for (const char* so : {"libnvrtc.so.13", "libnvrtc.so.12"}) {
    candidates.push_back(so);
    for (const std::string& root : cuda_roots()) candidates.push_back(root + "/lib64/" + so);
  }
  std::string tried;
  for (const std::string& c : candidates) {
    if (c.find('/') != std::string::npos && !exists(c)) continue;
    n.lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (n.lib) {
      n.path = c;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (!n.lib) {
    n.reason = chosen && *chosen ? std::string("NVRTC not found (HPF_NVRTC_LIBRARY=") + chosen + ")"
                                 : "NVRTC not found (libnvrtc.so.13 or .so.12, also under /usr/local/cuda/lib64)";
    return n;
  }
  std::string missing;
  sym(n.lib, "nvrtcGetErrorString", n.GetErrorString, missing);
  sym(n.lib, "nvrtcVersion", n.Version, missing);
  sym(n.lib, "nvrtcCreateProgram", n.CreateProgram, missing);
  sym(n.lib, "nvrtcDestroyProgram", n.DestroyProgram, missing);
  sym(n.lib, "nvrtcCompileProgram", n.CompileProgram, missing);
  sym(n.lib, "nvrtcGetProgramLogSize", n.GetProgramLogSize, missing);
  sym(n.lib, "nvrtcGetProgramLog", n.GetProgramLog, missing);
  sym(n.lib, "nvrtcGetCUBINSize", n.GetCUBINSize, missing);
  sym(n.lib, "nvrtcGetCUBIN", n.GetCUBIN, missing);
  sym(n.lib, "nvrtcGetPTXSize", n.GetPTXSize, missing);
  sym(n.lib, "nvrtcGetPTX", n.GetPTX, missing);
  if (!missing.empty()) {
    n.reason = n.path + " lacks " + missing;
    n.lib = nullptr;  // left loaded: plugins never unload anything
    return n;
  }
  if (n.Version(&n.major, &n.minor) != 0) n.major = n.minor = 0;
  return n;
}

std::string cuda_include_dir() {
  for (const std::string& root : cuda_roots())
    if (exists(root + "/include/cuda_fp16.h")) return root + "/include";
  return "";
}

}  // namespace hpf_cuda
