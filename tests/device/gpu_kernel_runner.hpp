// Running one generated GPU kernel through the plugin API (plugin_host.hpp): compile, load,
// copy the inputs in, launch with the kernel's own geometry, copy the output back. Used by the
// device suite and by bench/gpu_gemm_bench.cpp. Header-only; not thread-safe (one GpuTarget
// per thread).
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hpf/plugin_host.hpp"
#include "jit/codegen/kernel_spec.hpp"

namespace hpf::device {

// The first GPU of the CUDA plugin in `plugin_dir`, or why there is none.
struct GpuTarget {
  std::unique_ptr<PluginHost> host;
  Plugin* plugin = nullptr;
  int32_t device = -1;
  std::string why;  // set when plugin is null
  std::string label() const {
    return plugin ? plugin->devices()[device].name + " (" + plugin->devices()[device].architecture + ")" : why;
  }
};

inline GpuTarget find_gpu(const std::string& plugin_dir, const std::string& plugin_name = "cuda") {
  GpuTarget t;
  unsetenv("HPF_CUDA_TARGETS");
  PluginHostOptions o;
  o.dirs = {plugin_dir};
  o.use_env_path = false;
  o.use_installed_dir = false;
  t.host = std::make_unique<PluginHost>(o);
  Plugin* p = t.host->plugin(plugin_name);
  if (!p) {
    t.why = "no " + plugin_name + " plugin in " + plugin_dir;
    for (const auto& r : t.host->records())
      if (r.name == plugin_name) t.why = plugin_name + " plugin unusable: " + r.reason;
    return t;
  }
  for (const DeviceRecord& d : p->devices())
    if (d.score > 0) {
      t.plugin = p;
      t.device = d.index;
      return t;
    }
  t.why = "no GPU: " + (p->devices().empty() ? std::string("no device") : p->devices()[0].score_reason);
  return t;
}

// A compiled and loaded kernel with its buffers: inputs (bytes as stored), one output.
class LoadedKernel {
 public:
  static Expected<LoadedKernel> make(GpuTarget& t, const jit::GeneratedKernel& k,
                                     const std::vector<std::vector<std::byte>>& inputs, size_t output_bytes) {
    LoadedKernel l;
    l.gen_ = k;
    HPF_ASSIGN_OR_RETURN(auto bin, t.plugin->compile(t.device, k.source));
    HPF_ASSIGN_OR_RETURN(l.program_, t.plugin->load(t.device, bin));
    HPF_ASSIGN_OR_RETURN(l.kernel_, l.program_.kernel(k.name));
    for (const auto& in : inputs) {
      HPF_ASSIGN_OR_RETURN(Buffer b, t.plugin->alloc(t.device, in.size()));
      HPF_RETURN_IF_ERROR(b.copy_in(0, in.data(), in.size()));
      l.buffers_.push_back(std::move(b));
    }
    HPF_ASSIGN_OR_RETURN(Buffer out, t.plugin->alloc(t.device, output_bytes));
    l.buffers_.push_back(std::move(out));
    for (const Buffer& b : l.buffers_) l.args_.push_back(b.device_pointer());
    return l;
  }

  // Queues one launch: no grid or block given, so the plugin applies the GPU launch rule
  // (gpu_codegen.hpp: grain threads a block, ceil(work_items / grain) blocks).
  Status launch() const {
    Launch l;
    l.args = args_;
    l.work_items = gen_.work_items;
    l.grain = gen_.grain;
    return kernel_.launch(l);
  }

  Expected<std::vector<std::byte>> output() const {
    std::vector<std::byte> out(buffers_.back().size());
    HPF_RETURN_IF_ERROR(buffers_.back().copy_out(0, out.data(), out.size()));
    return out;
  }

 private:
  jit::GeneratedKernel gen_;
  Program program_;
  Kernel kernel_;
  std::vector<Buffer> buffers_;
  std::vector<void*> args_;
};

}  // namespace hpf::device
