/* The CUDA plugin's power extension: board power and energy readings (NVML) for `hpf bench`.
 *
 * Not part of the plugin ABI (include/hpf/plugin.h): an extra symbol of libhpf-plugin-cuda.so,
 * found with dlsym on the file the host loaded (Plugin::path()), e.g.
 *
 *     void* so = dlopen(plugin.path().c_str(), RTLD_NOW | RTLD_NOLOAD);
 *     auto get = (hpf_cuda_power_api_fn)dlsym(so, HPF_CUDA_POWER_ENTRY_POINT);
 *     const hpf_cuda_power_api* pw = get ? get() : NULL;
 *     uint32_t mw; hpf_error* e = pw->power_mw(plugin.handle(), device, &mw);
 *
 * `plugin` must be an instance of that same library (its hpf_plugin*). Errors are that plugin's
 * hpf_error objects (release with its error_destroy): HPF_ERROR_UNSUPPORTED when NVML is absent
 * or the device is a compile-only target. Readings take ~1 ms; NVML's power figure is averaged
 * over about a second by the driver, so sample energy_mj before and after a run for joules.
 * Thread-safe. Fields are only appended (struct_size says which the plugin has). */
#ifndef HPF_CUDA_POWER_H_
#define HPF_CUDA_POWER_H_

#include "hpf/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HPF_CUDA_POWER_ENTRY_POINT "hpf_cuda_get_power_api"

typedef struct hpf_cuda_power_api {
  size_t struct_size;
  /* Board power now, milliwatts (nvmlDeviceGetPowerUsage). */
  hpf_error* (*power_mw)(hpf_plugin* plugin, int32_t device, uint32_t* milliwatts);
  /* Energy since the driver was loaded, millijoules (nvmlDeviceGetTotalEnergyConsumption). */
  hpf_error* (*energy_mj)(hpf_plugin* plugin, int32_t device, uint64_t* millijoules);
} hpf_cuda_power_api;

typedef const hpf_cuda_power_api* (*hpf_cuda_power_api_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* HPF_CUDA_POWER_H_ */
