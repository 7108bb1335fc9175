// The HIP plugin (compile-only) and the HIP dialect. Cases that need hipRTC say so and return
// where it is absent (MESSAGE "skipped: ..."), never passing silently.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "doctest/doctest.h"
#include "hpf/models.hpp"
#include "hpf/plugin_host.hpp"
#include "jit/codegen/gpu_codegen.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

// A host that sees only the build's plugin directory, its HIP plugin describing `targets`.
std::unique_ptr<PluginHost> host_for(const char* targets) {
  if (targets) setenv("HPF_HIP_TARGETS", targets, 1);
  else unsetenv("HPF_HIP_TARGETS");
  PluginHostOptions o;
  o.dirs = {HPF_TEST_PLUGIN_OUTPUT_DIR};
  o.use_env_path = false;
  o.use_installed_dir = false;
  return std::make_unique<PluginHost>(o);
}

// Where hipRTC is absent: the skip message, naming the plugin's reason.
bool skip_without_hiprtc(Plugin* p) {
  if (p->devices()[0].compiler != "none") return false;
  WARN_MESSAGE(false, "skipped: hipRTC is not available here (" << p->devices()[0].score_reason << ")");
  return true;
}

// A built-in model's storage under one format: every float intermediate and weight, views alike.
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

// Every kernel of a built-in model (batch 1), generated in the hip dialect: none may fail.
std::vector<jit::GeneratedKernel> hip_kernels(const std::string& model, DType format) {
  auto g = models::builtin(model);
  REQUIRE(g.ok());
  for (ValueId id : g->inputs())
    for (Dim& d : g->value(id).shape)
      if (!d.known()) d = Dim(1);
  REQUIRE(g->infer_shapes().ok());
  auto steps = jit::lower(*g, storage_of(*g, format), {}, jit::kGpuLowering);
  REQUIRE_MESSAGE(steps.ok(), steps.status().message());
  std::vector<jit::GeneratedKernel> out;
  for (const auto& s : *steps) {
    CHECK_MESSAGE(s.kind != jit::LoweredStep::Kind::fallback, model << ": " << s.label << " left to the reference");
    if (s.kind != jit::LoweredStep::Kind::kernel) continue;
    auto k = jit::generate_gpu(s.spec, jit::GpuDialect::hip);
    REQUIRE_MESSAGE(k.ok(), model << " " << s.label << " (" << s.spec.family << "): " << k.status().message());
    out.push_back(std::move(k).value());
  }
  return out;
}

bool has(const std::vector<jit::GeneratedKernel>& ks, const std::string& text) {
  for (const auto& k : ks)
    if (k.source.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("hip plugin: loads without a GPU with one compile-only device per target and score 0 with the reason") {
  auto host = host_for("gfx90a,gfx1030");
  Plugin* p = host->plugin("hip");
  REQUIRE_MESSAGE(p != nullptr, "libhpf-plugin-hip.so not found in " << HPF_TEST_PLUGIN_OUTPUT_DIR);
  REQUIRE(p->devices().size() == 2);
  CHECK(p->devices()[0].architecture == "gfx90a");
  CHECK(p->devices()[1].architecture == "gfx1030");
  for (const DeviceRecord& d : p->devices()) {
    CHECK(d.dialect == "hip");
    CHECK(d.score == 0);
    if (d.compiler == "none")
      CHECK(d.score_reason.rfind("hipRTC not found", 0) == 0);
    else  // no machine here has an AMD GPU
      CHECK(d.score_reason.rfind("no AMD GPU (hipGetDeviceCount: ", 0) == 0);
    for (const PrecisionSupport& ps : d.precisions)  // MatMul multiplies 8-bit integers too (v_dot4)
      CHECK((std::find(ps.formats.begin(), ps.formats.end(), "i8") != ps.formats.end()) == (ps.op_class == "matmul"));
  }
  CHECK_FALSE(p->usable());
  auto b = p->alloc(0, 64);  // anything needing the GPU is refused with the reason
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == StatusCode::unsupported);
}

TEST_CASE("hip plugin: without HPF_HIP_TARGETS compiles ask for a target") {
  auto host = host_for(nullptr);
  Plugin* p = host->plugin("hip");
  REQUIRE(p != nullptr);
  REQUIRE(p->devices().size() == 1);
  auto bin = p->compile(0, "extern \"C\" __global__ void k() {}");
  REQUIRE_FALSE(bin.ok());
  CHECK(bin.status().code() == StatusCode::unsupported);
}

TEST_CASE("hip dialect: every kernel of the built-in models generates in f32 f16 bf16, bf16 as 16-bit integers") {
  for (const char* model : {"bert-tiny", "cnn-small", "mlp"}) {
    CAPTURE(model);
    auto f32 = hip_kernels(model, DType::F32);
    auto f16 = hip_kernels(model, DType::F16);
    auto bf16 = hip_kernels(model, DType::BF16);
    REQUIRE(!f32.empty());
    for (const auto& k : f32) CHECK(k.source.find(" " + k.name + "(") != std::string::npos);
    CHECK(has(f32, "extern \"C\" __global__ void __launch_bounds__(256) "));
    CHECK_FALSE(has(f16, "hip_fp16.h"));  // hipRTC 5.2 has _Float16 built in
    CHECK(has(f16, "_Float16* __restrict__"));
    CHECK(has(bf16, "unsigned short* __restrict__"));
    CHECK(has(bf16, "hpf_st_bf16("));
    CHECK(has(f16, "hpf_dot2("));  // packed f16 GEMM
    CHECK_FALSE(has(f32, "hpf_dot2("));
  }
  CHECK(has(hip_kernels("bert-tiny", DType::F32), "hpf_block_sum(sum, scratch)"));
}

TEST_CASE("hip plugin: hipRTC compiles generated kernels for gfx90a (and gfx1030, wave32) to code objects") {
  auto host = host_for("gfx90a,gfx1030");
  Plugin* p = host->plugin("hip");
  REQUIRE(p != nullptr);
  if (skip_without_hiprtc(p)) return;
  // One kernel of each family bert-tiny has in bf16 (the emulated format) and the f16 GEMM.
  std::map<std::string, jit::GeneratedKernel> per_family;
  for (DType f : {DType::BF16, DType::F16})
    for (auto& k : hip_kernels("bert-tiny", f)) {
      const std::string fam = k.name.substr(4, k.name.rfind('_') - 4) + (f == DType::F16 ? "_f16" : "");
      if (f == DType::BF16 || fam == "matmul_f16") per_family.emplace(fam, k);
    }
  REQUIRE(per_family.count("matmul_f16"));
  for (int32_t device : {0, 1})
    for (const auto& [family, k] : per_family) {
      auto bin = p->compile(device, k.source);
      REQUIRE_MESSAGE(bin.ok(), family << " for " << p->devices()[device].architecture << ": " << bin.status().message());
      CHECK(bin->size() > 4);
      CHECK(std::memcmp(bin->data(), "\x7f" "ELF", 4) == 0);  // an AMD GPU code object is an ELF file
    }
}

TEST_CASE("hip plugin: targets hipRTC does not know (gfx942, gfx1100) are refused before compiling, never a crash") {
  auto host = host_for("gfx942,gfx1100,sm_80");
  Plugin* p = host->plugin("hip");
  REQUIRE(p != nullptr);
  if (skip_without_hiprtc(p)) return;
  for (int32_t device : {0, 1, 2}) {
    hpf_blob* blob = nullptr;
    const std::string src = "extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }";
    hpf_error* e = p->api().program_compile(p->handle(), device, src.data(), src.size(), &blob);
    REQUIRE(e != nullptr);
    CHECK(blob == nullptr);
    CHECK(p->api().error_code(e) == HPF_ERROR_UNSUPPORTED);
    const std::string msg = p->api().error_message(e);
    p->api().error_destroy(e);
    if (device == 0) CHECK(msg.rfind("hip: unsupported target gfx942 (known to hipRTC ", 0) == 0);
    if (device == 1) CHECK(msg.rfind("hip: unsupported target gfx1100 (known", 0) == 0);
    if (device == 2) CHECK(msg == "hip: unsupported target 'sm_80' (not gfxNNN)");
    if (device < 2) CHECK(msg.find("gfx90a") != std::string::npos);
  }
}

TEST_CASE("hip plugin: a broken source is a compile error carrying hipRTC's log") {
  auto host = host_for("gfx90a");
  Plugin* p = host->plugin("hip");
  REQUIRE(p != nullptr);
  if (skip_without_hiprtc(p)) return;
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

TEST_CASE("hip dialect: INT8 MatMul multiplies with v_dot4 where the target has it, and compiles with and without") {
  auto spec = [](DType a, DType b, DType y) {
    jit::KernelSpec s;
    s.family = "matmul";
    s.inputs = {{a, {37, 70}}, {b, {70, 53}}};
    s.outputs = {{y, {37, 53}}};
    return s;
  };
  struct Form {
    DType a, b, y;
    const char* dot;  // the builtin the kernel uses where the target has it; nullptr: mixed signs
  };
  const Form forms[] = {{DType::I8, DType::I8, DType::I32, "__builtin_amdgcn_sdot4"},
                        {DType::U8, DType::U8, DType::F32, "__builtin_amdgcn_udot4"},
                        {DType::U8, DType::I8, DType::F32, nullptr}};
  std::vector<std::string> sources;
  for (const Form& f : forms) {
    auto k = jit::generate_gpu(spec(f.a, f.b, f.y), jit::GpuDialect::hip);
    REQUIRE_MESSAGE(k.ok(), k.status().message());
    CHECK(k->source.find("__shared__ int As[4][68]") != std::string::npos);  // 4-byte words of k
    if (f.dot) CHECK(k->source.find(f.dot) != std::string::npos);
    else CHECK(k->source.find("__builtin_amdgcn_") == std::string::npos);
    sources.push_back(k->source);
  }
  // Without a float output the result is the exact INT32 sum; an f16 output or an int8 output is not taken.
  CHECK(jit::generate_gpu(spec(DType::I8, DType::I8, DType::I8), jit::GpuDialect::hip).status().code() ==
        StatusCode::unsupported);
  CHECK(jit::generate_gpu(spec(DType::I8, DType::F32, DType::F32), jit::GpuDialect::hip).status().code() ==
        StatusCode::unsupported);
  auto host = host_for("gfx906,gfx90a,gfx1030,gfx900");
  Plugin* p = host->plugin("hip");
  REQUIRE(p != nullptr);
  if (skip_without_hiprtc(p)) return;
  for (int32_t device = 0; device < 4; ++device)
    for (const std::string& src : sources) {
      auto bin = p->compile(device, src);
      REQUIRE_MESSAGE(bin.ok(), p->devices()[device].architecture << ": " << bin.status().message());
      CHECK(std::memcmp(bin->data(), "\x7f" "ELF", 4) == 0);
    }
}
