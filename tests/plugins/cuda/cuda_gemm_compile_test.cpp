// The CUDA GEMM and Conv generators, compile-verified with NVRTC (no GPU needed): every case of
// cuda_cases.hpp for sm_80 and sm_90, the FP8 cases also for sm_89 (where the FP8 instruction
// is used), the wgmma ones also for sm_90a — plus the instruction each format gets, read from the
// generated source.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cuda_cases.hpp"
#include "doctest/doctest.h"
#include "hpf/models.hpp"
#include "hpf/plugin_host.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "jit/codegen/gpu_codegen.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

std::unique_ptr<PluginHost> compile_host() {
  setenv("HPF_CUDA_TARGETS", "sm_80,sm_89,sm_90,sm_90a", 1);
  PluginHostOptions o;
  o.dirs = {HPF_TEST_PLUGIN_OUTPUT_DIR};
  o.use_env_path = false;
  o.use_installed_dir = false;
  return std::make_unique<PluginHost>(o);
}

// The compile-only device of `arch` ("sm_90") on `p`; -1 when absent.
int32_t target(Plugin& p, const std::string& arch) {
  for (const DeviceRecord& d : p.devices())
    if (d.architecture == arch && d.score == 0) return d.index;
  return -1;
}

// Compiles every case for its architectures; returns how many compiled.
int compile_all(Plugin& p, const std::vector<cuda_cases::Case>& cases) {
  int compiled = 0;
  for (const auto& c : cases) {
    auto k = jit::generate_cuda(c.spec);
    REQUIRE_MESSAGE(k.ok(), c.label << ": " << k.status().message());
    CHECK(k->grain == 256);  // the GPU launch rule: 256 threads a block
    CHECK(k->work_items >= 256);
    std::vector<std::string> archs{"sm_80", "sm_90"};
    if (c.fp8) archs.push_back("sm_89");
    if (k->source.find("__CUDA_ARCH_FEAT_SM90_ALL") != std::string::npos) archs.push_back("sm_90a");  // wgmma
    for (const std::string& arch : archs) {
      auto bin = p.compile(target(p, arch), k->source);
      CHECK_MESSAGE(bin.ok(), c.label << " " << arch << ": " << bin.status().message());
      if (bin.ok()) {
        CHECK(std::memcmp(bin->data(), "\x7f" "ELF", 4) == 0);
        ++compiled;
      }
    }
  }
  return compiled;
}

// The CUDA source generated for a case (which must generate).
std::string src(const cuda_cases::Case& c) {
  auto k = jit::generate_cuda(c.spec);
  REQUIRE_MESSAGE(k.ok(), c.label << ": " << k.status().message());
  return k->source;
}

// The storage types of a generated kernel's pointer parameters, in order ("__half", "float", ...).
std::vector<std::string> param_types(const jit::GeneratedKernel& k) {
  const size_t open = k.source.find(k.name + "(");
  REQUIRE(open != std::string::npos);
  const size_t begin = open + k.name.size() + 1, end = k.source.find(')', begin);
  std::vector<std::string> types;
  std::string params = k.source.substr(begin, end - begin) + ",";
  for (size_t at = 0, comma; (comma = params.find(',', at)) != std::string::npos; at = comma + 1) {
    std::string p = params.substr(at, comma - at);
    p = p.substr(0, p.find('*'));
    for (const char* word : {"const ", "__restrict__"})
      for (size_t w; (w = p.find(word)) != std::string::npos;) p.erase(w, std::strlen(word));
    p.erase(0, p.find_first_not_of(' '));
    p.erase(p.find_last_not_of(' ') + 1);
    types.push_back(p);
  }
  return types;
}

// The steps of built-in `model` lowered for a GPU, its FP32 values stored in `format`.
std::vector<jit::LoweredStep> gpu_steps(const char* model, DType format) {
  auto g = cuda_cases::concrete_builtin(model);
  REQUIRE_MESSAGE(g.ok(), g.status().message());
  std::vector<DType> storage(g->values().size());
  for (size_t v = 0; v < storage.size(); ++v) {
    const DType t = g->value(static_cast<ValueId>(v)).dtype;
    storage[v] = t == DType::F32 ? format : t;
  }
  auto steps = jit::lower(*g, storage, {}, jit::kGpuLowering);
  REQUIRE_MESSAGE(steps.ok(), steps.status().message());
  return std::move(steps).value();
}

bool nvrtc_missing(Plugin* p) {
  if (p->devices()[0].compiler != "none") return false;
  WARN_MESSAGE(false, "skipped: NVRTC is not available here (" << p->devices()[0].score_reason << ")");
  return true;
}

}  // namespace

TEST_CASE("cuda gemm: the matrix instruction follows the operand formats") {
  CHECK(jit::cuda_gemm_instruction(DType::F16, DType::F16) == "mma.f16");
  CHECK(jit::cuda_gemm_instruction(DType::F8E4M3, DType::F16) == "mma.f16");
  CHECK(jit::cuda_gemm_instruction(DType::BF16, DType::BF16) == "mma.bf16");
  CHECK(jit::cuda_gemm_instruction(DType::F8E5M2, DType::BF16) == "mma.bf16");
  CHECK(jit::cuda_gemm_instruction(DType::TF32, DType::F32) == "mma.tf32");
  CHECK(jit::cuda_gemm_instruction(DType::F32, DType::F32, DType::TF32) == "mma.tf32");
  CHECK(jit::cuda_gemm_instruction(DType::F32, DType::F32) == "fma");
  CHECK(jit::cuda_gemm_instruction(DType::F16, DType::F32) == "fma");
  CHECK(jit::cuda_gemm_instruction(DType::F16, DType::BF16) == "fma");
  CHECK(jit::cuda_gemm_instruction(DType::I8, DType::U8) == "mma.int8");
  CHECK(jit::cuda_gemm_instruction(DType::F8E4M3, DType::F8E5M2) == "mma.fp8");
}

TEST_CASE("cuda gemm: sources carry the format's mma.sync, cp.async where rows are aligned, the sm_89 guard for FP8") {
  using cuda_cases::matmul;
  const std::string f16 = src(matmul({DType::F16, DType::F16, DType::F16}, {130, 256}, {136, 256}, {130, 136}, true,
                                     false, true, {136}));
  CHECK(f16.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
  CHECK(f16.find("hpf_cp_async16(&As") != std::string::npos);
  CHECK(f16.find("hpf_cp_async16(&Bs") != std::string::npos);
  CHECK(f16.find("hpf_ldmatrix_x4(a[mt]") != std::string::npos);
  const std::string odd = src(matmul({DType::BF16, DType::BF16, DType::BF16}, {37, 29}, {29, 53}, {37, 53}));
  CHECK(odd.find("m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
  CHECK(odd.find("hpf_cp_async16(&") == std::string::npos);  // K = 29: rows not 16-byte aligned
  const std::string i8 = src(matmul({DType::U8, DType::I8, DType::I32}, {37, 64}, {64, 53}, {37, 53}));
  CHECK(i8.find("m16n8k32.row.col.s32.u8.s8.s32") != std::string::npos);
  const std::string f8 = src(matmul({DType::F8E4M3, DType::F8E5M2, DType::F16}, {64, 64}, {64, 64}, {64, 64}));
  CHECK(f8.find("#if __CUDA_ARCH__ >= 890") != std::string::npos);
  CHECK(f8.find("m16n8k32.row.col.f32.e4m3.e5m2.f32") != std::string::npos);
  CHECK(f8.find("m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);  // the fallback
  const std::string tf32 = src(matmul({DType::F32, DType::F32, DType::F32, DType::TF32}, {8, 8}, {8, 8}, {8, 8}));
  CHECK(tf32.find("m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  const std::string f32 = src(matmul({DType::F32, DType::F32, DType::F32}, {8, 8}, {8, 8}, {8, 8}));
  CHECK(f32.find("mma.sync") == std::string::npos);
  CHECK(f32.find("fmaf(") != std::string::npos);
  // Mismatched shapes are an error naming them.
  auto bad = jit::generate_cuda(matmul({DType::F16, DType::F16, DType::F16}, {4, 5}, {6, 7}, {4, 7}).spec);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("inner dimensions differ ([4,5] x [6,7])") != std::string::npos);
}

TEST_CASE("cuda gemm: f16 and bf16 GEMMs with both operands by cp.async take wgmma on sm_90a, mma.sync elsewhere") {
  using cuda_cases::matmul;
  for (DType t : {DType::F16, DType::BF16}) {
    const std::string aligned = src(matmul({t, t, DType::F32}, {130, 256}, {136, 256}, {130, 136}, true, false, true, {136}));
    CHECK(aligned.find("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)") != std::string::npos);
    CHECK(aligned.find(std::string("wgmma.mma_async.sync.aligned.m64n128k16.f32.") +
                       (t == DType::F16 ? "f16.f16" : "bf16.bf16")) != std::string::npos);
    CHECK(aligned.find("fence.proxy.async.shared::cta") != std::string::npos);
    CHECK(aligned.find("mma.sync.aligned.m16n8k16") != std::string::npos);  // the other targets' kernel
    // B as [K, N] (not K-contiguous), odd K, or an integer/float mix: mma.sync only.
    CHECK(src(matmul({t, t, DType::F32}, {128, 256}, {256, 128}, {128, 128})).find("wgmma") == std::string::npos);
    CHECK(src(matmul({t, t, t}, {37, 29}, {29, 53}, {37, 53})).find("wgmma") == std::string::npos);
  }
  CHECK(src(matmul({DType::I8, DType::I8, DType::I32}, {130, 256}, {136, 256}, {130, 136}, true, false, true))
            .find("wgmma") == std::string::npos);

  // PTX for sm_90a has the warpgroup instructions; for sm_90 the same source has none.
  setenv("HPF_CUDA_PTX", "1", 1);
  auto host = compile_host();
  unsetenv("HPF_CUDA_PTX");
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  if (nvrtc_missing(p)) return;
  const std::string f16 =
      src(matmul({DType::F16, DType::F16, DType::F16}, {130, 256}, {136, 256}, {130, 136}, true, false, true, {136}));
  auto ptx_of = [&](const char* arch) {
    auto ptx = p->compile(target(*p, arch), f16);
    REQUIRE_MESSAGE(ptx.ok(), arch << ": " << ptx.status().message());
    return std::string(reinterpret_cast<const char*>(ptx->data()), ptx->size());
  };
  const std::string a = ptx_of("sm_90a"), b = ptx_of("sm_90");
  CHECK(a.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") != std::string::npos);
  CHECK(a.find("wgmma.wait_group.sync.aligned 0") != std::string::npos);
  CHECK(b.find("wgmma") == std::string::npos);
  CHECK(b.find("mma.sync.aligned.m16n8k16") != std::string::npos);
}

TEST_CASE("cuda gemm and conv: a kernel's parameters are the spec's inputs, then its outputs, in their storage types") {
  // The plugin passes the step's buffers in that order; a kernel taking its GEMM operands in
  // another order (Conv: X is the B operand) would read the weights as the image.
  std::vector<cuda_cases::Case> cases;
  for (const auto& f : cuda_cases::matmul_formats())
    for (auto& c : cuda_cases::matmul_cases(f, true)) cases.push_back(std::move(c));
  for (const auto& f : cuda_cases::conv_formats())
    for (auto& c : cuda_cases::conv_cases(f.a, f.b, f.y)) cases.push_back(std::move(c));
  int mixed = 0;
  for (const auto& c : cases) {
    CAPTURE(c.label);
    auto k = jit::generate_cuda(c.spec);
    REQUIRE_MESSAGE(k.ok(), k.status().message());
    std::vector<std::string> want;
    for (const auto& t : c.spec.inputs) want.push_back(jit::cuda_gemm_storage_type(t.dtype));
    for (const auto& t : c.spec.outputs) want.push_back(jit::cuda_gemm_storage_type(t.dtype));
    CHECK(param_types(*k) == want);
    mixed += c.spec.inputs[0].dtype != c.spec.inputs[1].dtype;
  }
  CHECK(mixed >= 6);  // cases where the order shows in the types
}

TEST_CASE("gpu dialects: every kernel of the built-in models takes the step's inputs, then its outputs, in their storage types") {
  // The Session passes a step's buffers in that order (kNoValue inputs as null pointers).
  int checked = 0;
  for (const char* model : {"mlp", "bert-tiny", "cnn-small", "lstm-lm", "bert-layer"})
    for (DType format : {DType::F32, DType::F16, DType::BF16}) {
      for (const auto& s : gpu_steps(model, format)) {
        if (s.kind != jit::LoweredStep::Kind::kernel) continue;
        for (jit::GpuDialect d : {jit::GpuDialect::cuda, jit::GpuDialect::hip}) {
          auto k = jit::generate_gpu(s.spec, d);
          if (!k.ok()) continue;  // no generator (the reference runs it)
          CAPTURE(model);
          CAPTURE(s.label);
          CAPTURE(s.spec.family);
          std::vector<std::string> want;
          for (const auto& t : s.spec.inputs) want.push_back(jit::gpu_storage_type(d, t.dtype));
          for (const auto& t : s.spec.outputs) want.push_back(jit::gpu_storage_type(d, t.dtype));
          CHECK(param_types(*k) == want);
          ++checked;
        }
      }
    }
  CHECK(checked > 100);
}

TEST_CASE("cuda gemm: NVRTC compiles MatMul/Gemm in every format on odd and aligned shapes for sm_80 sm_90 (sm_89 FP8)") {
  auto host = compile_host();
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  if (nvrtc_missing(p)) return;
  int compiled = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : cuda_cases::matmul_formats()) {
    const bool all = f.a == f.b && (f.a == DType::F16 || f.a == DType::I8);  // compile time: ~0.6 s a kernel
    compiled += compile_all(*p, cuda_cases::matmul_cases(f, all));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(compiled << " MatMul/Gemm kernels compiled in " << s << " s");
  CHECK(compiled >= 60);
}

TEST_CASE("cuda conv: NVRTC compiles grouped, depthwise and 1-D Conv in every format for sm_80 sm_90 (sm_89 FP8)") {
  auto host = compile_host();
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  if (nvrtc_missing(p)) return;
  int compiled = 0;
  for (const auto& f : cuda_cases::conv_formats()) compiled += compile_all(*p, cuda_cases::conv_cases(f.a, f.b, f.y));
  CHECK(compiled >= 30);
}

TEST_CASE("cuda dialect: every kernel of bert-tiny and cnn-small generates and compiles for sm_80 and sm_90 in f32 f16 bf16") {
  auto host = compile_host();
  Plugin* p = host->plugin("cuda");
  REQUIRE(p != nullptr);
  const bool compile = !nvrtc_missing(p);
  int generated = 0, compiled = 0;
  std::set<std::string> seen;  // equal specs give equal kernels: compile each once
  for (const char* model : {"bert-tiny", "cnn-small"})
    for (DType format : {DType::F32, DType::F16, DType::BF16}) {
      for (const auto& s : gpu_steps(model, format)) {
        if (s.kind != jit::LoweredStep::Kind::kernel) continue;
        if (s.spec.family != "elementwise" && s.spec.family != "softmax" && s.spec.family != "matmul" &&
            s.spec.family != "conv")
          continue;  // families without a CUDA generator yet
        auto k = jit::generate_cuda(s.spec);
        if (!k.ok() && k.status().code() == StatusCode::unsupported) {
          MESSAGE(model << " " << s.label << ": " << k.status().message());
          continue;
        }
        REQUIRE_MESSAGE(k.ok(), model << " " << s.label << ": " << k.status().message());
        ++generated;
        if (!compile || (s.spec.family != "matmul" && s.spec.family != "conv") || !seen.insert(k->name).second) continue;
        for (const char* arch : {"sm_80", "sm_90"}) {
          auto bin = p->compile(target(*p, arch), k->source);
          CHECK_MESSAGE(bin.ok(), model << " " << dtype_name(format) << " " << arch << " " << s.label << ": "
                                        << bin.status().message());
          compiled += bin.ok();
        }
      }
    }
  CHECK(generated > 20);
  if (compile) CHECK(compiled > 10);
}
