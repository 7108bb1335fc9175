// The CUDA plugin (compile-only) and the CUDA dialect's elementwise generator. Cases that need
// NVRTC say so and return where it is absent (MESSAGE "skipped: ..."), never passing silently.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "doctest/doctest.h"
#include "hpf/models.hpp"
#include "hpf/plugin_host.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

// A host that sees only the build's plugin directory, its CUDA plugin describing `targets`.
std::unique_ptr<PluginHost> host_for(const char* targets) {
  if (targets) setenv("HPF_CUDA_TARGETS", targets, 1);
  else unsetenv("HPF_CUDA_TARGETS");
  PluginHostOptions o;
  o.dirs = {HPF_TEST_PLUGIN_OUTPUT_DIR};
  o.use_env_path = false;
  o.use_installed_dir = false;
  return std::make_unique<PluginHost>(o);
}

bool have_driver() {
  static const bool yes = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr;
  return yes;
}

// bert-tiny's storage under one format: every float intermediate and weight, views alike.
std::vector<DType> storage_of(const Graph& g, DType format) {
  std::vector<DType> s(g.values().size());
  std::vector<bool> boundary(s.size(), false);
  for (ValueId v : g.inputs()) boundary[v] = true;
  for (ValueId v : g.outputs()) boundary[v] = true;
  for (size_t v = 0; v < s.size(); ++v) {
    const DType t = g.value(static_cast<ValueId>(v)).dtype;
    s[v] = !boundary[v] && t == DType::F32 ? format : t;
  }
  auto order = g.topological_order();
  REQUIRE(order.ok());
  for (int32_t id : *order) {
    const Node& n = g.node(id);
    if (jit::is_view_op(n.op)) s[n.outputs[0]] = s[n.inputs[0]];
  }
  return s;
}

// bert-tiny's elementwise kernels and its softmax (inside the fused attention kernels),
// generated in the cuda dialect.
std::vector<jit::GeneratedKernel> elementwise_kernels(DType format) {
  auto g = models::builtin("bert-tiny");
  REQUIRE(g.ok());
  for (ValueId id : g->inputs())  // batch 1
    for (Dim& d : g->value(id).shape)
      if (!d.known()) d = Dim(1);
  REQUIRE(g->infer_shapes().ok());
  auto steps = jit::lower(*g, storage_of(*g, format), {}, jit::kGpuLowering);
  REQUIRE_MESSAGE(steps.ok(), steps.status().message());
  std::vector<jit::GeneratedKernel> out;
  for (const auto& s : *steps) {
    if (s.kind != jit::LoweredStep::Kind::kernel || (s.spec.family != "elementwise" && s.spec.family != "softmax" &&
                                                       s.spec.family != "attention"))
      continue;
    auto k = jit::generate_cuda(s.spec);
    REQUIRE_MESSAGE(k.ok(), s.label << ": " << k.status().message());
    out.push_back(std::move(k).value());
  }
  return out;
}

}  // namespace

TEST_CASE("cuda plugin: loads without a GPU with one compile-only device per target and score 0 with the reason") {
  auto host = host_for("sm_80,sm_90");
  Plugin* p = host->plugin("cuda");
  REQUIRE_MESSAGE(p != nullptr, "libhpf-plugin-cuda.so not found in " << HPF_TEST_PLUGIN_OUTPUT_DIR);
  if (have_driver()) {
    WARN_MESSAGE(false, "skipped: a CUDA driver is installed here (the device suite covers it)");
    return;
  }
  REQUIRE(p->devices().size() == 2);
  CHECK(p->devices()[0].architecture == "sm_80");
  CHECK(p->devices()[1].architecture == "sm_90");
  for (const DeviceRecord& d : p->devices()) {
    CHECK(d.dialect == "cuda");
    CHECK(d.score == 0);
    if (!have_driver()) CHECK(d.score_reason.rfind("no CUDA driver (libcuda.so.1 not found)", 0) == 0);
  }
  CHECK_FALSE(p->usable());
  // Anything needing the GPU is refused with the reason, never a crash.
  auto b = p->alloc(0, 64);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == StatusCode::unsupported);
}

TEST_CASE("cuda plugin: without HPF_CUDA_TARGETS compiles ask for a target") {
  auto host = host_for(nullptr);
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  REQUIRE(p->devices().size() == 1);
  auto bin = p->compile(0, "extern \"C\" __global__ void k() {}");
  REQUIRE_FALSE(bin.ok());
  CHECK(bin.status().code() == StatusCode::unsupported);
}

TEST_CASE("cuda dialect: elementwise chains per format and softmax per row and other families unsupported") {
  auto f32 = elementwise_kernels(DType::F32);
  auto bf16 = elementwise_kernels(DType::BF16);
  auto f16 = elementwise_kernels(DType::F16);
  REQUIRE(!f32.empty());
  CHECK(f32[0].source.find("extern \"C\" __global__ void ") != std::string::npos);
  CHECK(f32[0].source.find(" " + f32[0].name + "(") != std::string::npos);
  bool rounds_bf16 = false, rounds_f16 = false;
  for (const auto& k : bf16) rounds_bf16 = rounds_bf16 || k.source.find("hpf_round_bf16(") != std::string::npos;
  for (const auto& k : f16) rounds_f16 = rounds_f16 || k.source.find("__half*") != std::string::npos;
  CHECK(rounds_bf16);
  CHECK(rounds_f16);
  bool block_softmax = false;
  for (const auto& k : f32) block_softmax = block_softmax || k.source.find("hpf_block_sum(sum, scratch)") != std::string::npos;
  CHECK(block_softmax);
  jit::KernelSpec mm;
  mm.family = "resize";
  auto k = jit::generate_cuda(mm);
  REQUIRE_FALSE(k.ok());
  CHECK(k.status().message().find("unsupported in the cuda dialect") != std::string::npos);
}

TEST_CASE("cuda plugin: NVRTC compiles bert-tiny elementwise and softmax kernels for sm_80 and sm_90 in f32 f16 bf16") {
  auto host = host_for("sm_80,sm_90");
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  if (p->devices()[0].compiler == "none") {
    WARN_MESSAGE(false, "skipped: NVRTC is not available here (" << p->devices()[0].score_reason << ")");
    return;
  }
  int compiled = 0;
  for (DType format : {DType::F32, DType::F16, DType::BF16})
    for (int32_t device : {0, 1})
      for (const auto& k : elementwise_kernels(format)) {
        auto bin = p->compile(device, k.source);
        CHECK_MESSAGE(bin.ok(), dtype_name(format) << " " << p->devices()[device].architecture << " " << k.name << ": "
                                                   << bin.status().message());
        if (bin.ok()) {
          CHECK(bin->size() > 4);
          CHECK(std::memcmp(bin->data(), "\x7f" "ELF", 4) == 0);  // CUBIN is an ELF file
          ++compiled;
        }
      }
  CHECK(compiled >= 12);
}

TEST_CASE("cuda plugin: a broken source is a compile error carrying NVRTC's log") {
  auto host = host_for("sm_90");
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  if (p->devices()[0].compiler == "none") {
    WARN_MESSAGE(false, "skipped: NVRTC is not available here (" << p->devices()[0].score_reason << ")");
    return;
  }
  hpf_blob* blob = nullptr;
  const std::string src = "extern \"C\" __global__ void k(float* y) { y[0] = undeclared_thing; }";
  hpf_error* e = p->api().program_compile(p->handle(), 0, src.data(), src.size(), &blob);
  REQUIRE(e != nullptr);
  CHECK(blob == nullptr);
  CHECK(p->api().error_code(e) == HPF_ERROR_COMPILE);
  const std::string log = p->api().error_message(e);
  p->api().error_destroy(e);
  CHECK(log.find("undeclared_thing") != std::string::npos);
  CHECK(log.find("error") != std::string::npos);
}

TEST_CASE("cuda plugin: a driver that finds no GPU (the CUDA stub library) scores 0 with cuInit's reason") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub)) {
    MESSAGE("skipped: no CUDA stub library at " << stub);
    return;
  }
  setenv("HPF_CUDA_DRIVER_LIBRARY", stub, 1);
  auto host = host_for("sm_90");
  unsetenv("HPF_CUDA_DRIVER_LIBRARY");
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  REQUIRE(p->devices().size() == 1);
  CHECK(p->devices()[0].score == 0);
  CHECK_MESSAGE(p->devices()[0].score_reason.rfind("cuInit: CUDA_ERROR_", 0) == 0, p->devices()[0].score_reason);
  auto b = p->alloc(0, 64);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("buffer_alloc: cuInit: CUDA_ERROR_") != std::string::npos);
  // The fingerprint names what changes the binary.
  std::string keys;
  for (const auto& [k, v] : p->devices()[0].fingerprint) keys += k + "=" + v + ";";
  CHECK(keys.find("architecture=sm_90;") != std::string::npos);
  CHECK(keys.find("nvrtc=") != std::string::npos);
  CHECK(keys.find("driver=none;") != std::string::npos);
}
