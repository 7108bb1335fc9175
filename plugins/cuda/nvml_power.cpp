// NVML power readings; see nvml_power.hpp.
#include "plugins/cuda/nvml_power.hpp"

#include <dlfcn.h>

namespace hpf_cuda {

std::string Nvml::init() {
  std::call_once(once_, [this] {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      reason_ = "no NVML (libnvidia-ml.so.1 not found)";
      return;
    }
    init_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    error_string_ = reinterpret_cast<const char* (*)(int)>(dlsym(lib_, "nvmlErrorString"));
    by_pci_ = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib_, "nvmlDeviceGetPowerUsage"));
    energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
    if (!init_ || !by_pci_ || !power_) {
      reason_ = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetPowerUsage";
      return;
    }
    if (int r = init_(); r != 0)
      reason_ = "nvmlInit: " + std::string(error_string_ ? error_string_(r) : "NVML error " + std::to_string(r));
  });
  return reason_;
}

std::string Nvml::handle(const std::string& pci_bus_id, void** out) {
  if (std::string why = init(); !why.empty()) return why;
  if (pci_bus_id.empty()) return "the GPU's PCI bus id is unknown";
  if (int r = by_pci_(pci_bus_id.c_str(), out); r != 0)
    return "nvmlDeviceGetHandleByPciBusId(" + pci_bus_id + "): " + (error_string_ ? error_string_(r) : std::to_string(r));
  return "";
}

std::string Nvml::power_mw(const std::string& pci_bus_id, uint32_t* out) {
  void* h = nullptr;
  if (std::string why = handle(pci_bus_id, &h); !why.empty()) return why;
  unsigned mw = 0;
  if (int r = power_(h, &mw); r != 0)
    return "nvmlDeviceGetPowerUsage: " + std::string(error_string_ ? error_string_(r) : std::to_string(r));
  *out = mw;
  return "";
}

std::string Nvml::energy_mj(const std::string& pci_bus_id, uint64_t* out) {
  void* h = nullptr;
  if (std::string why = handle(pci_bus_id, &h); !why.empty()) return why;
  if (!energy_) return "libnvidia-ml.so.1 lacks nvmlDeviceGetTotalEnergyConsumption";
  unsigned long long mj = 0;
  if (int r = energy_(h, &mj); r != 0)
    return "nvmlDeviceGetTotalEnergyConsumption: " + std::string(error_string_ ? error_string_(r) : std::to_string(r));
  *out = mj;
  return "";
}

}  // namespace hpf_cuda
