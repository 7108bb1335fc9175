// NVML (libnvidia-ml.so.1, dlopen'd, never linked): board power and energy of a GPU found by
// its PCI bus id, for `hpf bench` energy figures (reached through cuda_power.h).
//
// Lifetime: one Nvml per plugin instance, initialised lazily on the first reading (nvmlInit
// costs tens of milliseconds) and never shut down (plugins never unload). Thread-safety: read()
// calls may come from several threads; NVML itself is thread-safe and init is guarded.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace hpf_cuda {

class Nvml {
 public:
  // Instant power in milliwatts, or "" and the value; otherwise the reason (no NVML, unknown
  // device, the query failed).
  std::string power_mw(const std::string& pci_bus_id, uint32_t* out);
  // Energy in millijoules since the driver was loaded (Volta and later).
  std::string energy_mj(const std::string& pci_bus_id, uint64_t* out);

 private:
  std::string init();
  std::string handle(const std::string& pci_bus_id, void** out);
  std::once_flag once_;
  std::string reason_;  // why NVML is unusable, after init
  void* lib_ = nullptr;
  int (*init_)() = nullptr;
  const char* (*error_string_)(int) = nullptr;
  int (*by_pci_)(const char*, void**) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
};

}  // namespace hpf_cuda
