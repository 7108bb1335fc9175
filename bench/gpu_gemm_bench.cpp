// hpf-gpu-gemm-bench: libhpf's generated CUDA GEMM per format against cuBLAS on the first GPU.
//
//   hpf-gpu-gemm-bench [--size 4096[,2048]] [--reps 20] [--formats f32,tf32,f16,bf16,i8,f8e4m3]
//                      [--plugins DIR] [--json FILE]
//
// Y[M,N] = A[M,K] * B[N,K]^T, row-major (the Linear-layer layout: both operands K-contiguous),
// M = N = K = size. libhpf: the kernel generate_cuda writes for that Gemm (transB=1) in the
// format, launched through the CUDA plugin, timed with the plugin's timer (CUDA events) per
// launch. cuBLAS: cublasGemmEx (f32 with COMPUTE_32F, tf32 with COMPUTE_32F_FAST_TF32, f16/bf16
// with FP32 compute, i8 with INT32 compute) and cublasLtMatmul for FP8 (e4m3 x e4m3 -> f16),
// found with dlopen at run time (libcublas.so.13/.12, libcublasLt), timed with driver events
// on the default stream. Each side: 3 warm-up launches, then `reps` timed ones; the median is
// reported with TFLOPS (2*M*N*K / time) and libhpf/cuBLAS speed ratio, plus the largest
// difference between the two outputs over the largest |cuBLAS| value. Figures, never pass/fail;
// without a GPU it prints "skipped: <reason>" and exits 0.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "tests/device/gpu_kernel_runner.hpp"

using namespace hpf;

namespace {

// ---- the few driver and cuBLAS entry points, by dlopen ----
using CUevent = void*;
struct Cu {
  int (*EventCreate)(CUevent*, unsigned) = nullptr;
  int (*EventRecord)(CUevent, void*) = nullptr;
  int (*EventSynchronize)(CUevent) = nullptr;
  int (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  int (*CtxSynchronize)() = nullptr;
};

struct Blas {
  std::string why;
  void* handle = nullptr;
  void* lt = nullptr;
  int (*GemmEx)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*,
                void*, int, int, int, int) = nullptr;
  // cublasLt, for FP8
  int (*LtMatmulDescCreate)(void**, int, int) = nullptr;
  int (*LtMatmulDescSetAttribute)(void*, int, const void*, size_t) = nullptr;
  int (*LtMatrixLayoutCreate)(void**, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*LtMatmulPreferenceCreate)(void**) = nullptr;
  int (*LtMatmulPreferenceSetAttribute)(void*, int, const void*, size_t) = nullptr;
  int (*LtMatmulAlgoGetHeuristic)(void*, void*, void*, void*, void*, void*, void*, int, void*, int*) = nullptr;
  int (*LtMatmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*,
                  void*, void*, const void*, void*, size_t, void*) = nullptr;
};

void* open_first(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    const std::string alt = std::string("/usr/local/cuda/lib64/") + n;
    if (void* h = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <class F>
void sym(void* lib, const char* name, F& f) {
  f = lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

Blas load_blas() {
  Blas b;
  void* lib = open_first({"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
  if (!lib) {
    b.why = "cuBLAS not found (libcublas.so.13/.12)";
    return b;
  }
  int (*create)(void**) = nullptr;
  sym(lib, "cublasCreate_v2", create);
  sym(lib, "cublasGemmEx", b.GemmEx);
  if (!create || !b.GemmEx || create(&b.handle) != 0) {
    b.why = "cublasCreate failed";
    b.handle = nullptr;
  }
  void* ltlib = open_first({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
  int (*ltcreate)(void**) = nullptr;
  sym(ltlib, "cublasLtCreate", ltcreate);
  sym(ltlib, "cublasLtMatmulDescCreate", b.LtMatmulDescCreate);
  sym(ltlib, "cublasLtMatmulDescSetAttribute", b.LtMatmulDescSetAttribute);
  sym(ltlib, "cublasLtMatrixLayoutCreate", b.LtMatrixLayoutCreate);
  sym(ltlib, "cublasLtMatmulPreferenceCreate", b.LtMatmulPreferenceCreate);
  sym(ltlib, "cublasLtMatmulPreferenceSetAttribute", b.LtMatmulPreferenceSetAttribute);
  sym(ltlib, "cublasLtMatmulAlgoGetHeuristic", b.LtMatmulAlgoGetHeuristic);
  sym(ltlib, "cublasLtMatmul", b.LtMatmul);
  if (ltcreate && b.LtMatmul && ltcreate(&b.lt) != 0) b.lt = nullptr;
  return b;
}

// cudaDataType / cublasComputeType values (library_types.h, cublas_api.h).
constexpr int R_32F = 0, R_16F = 2, R_8I = 3, R_32I = 10, R_16BF = 14, R_8F_E4M3 = 28;
constexpr int COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, COMPUTE_32I = 72, OP_N = 0, OP_T = 1;

struct Format {
  std::string name;
  DType a, y;
  DType acc = DType::F32;
  int blas_in, blas_out, blas_compute;
};

Format format_of(const std::string& n) {
  if (n == "tf32") return {n, DType::F32, DType::F32, DType::TF32, R_32F, R_32F, COMPUTE_32F_FAST_TF32};
  if (n == "f16") return {n, DType::F16, DType::F16, DType::F32, R_16F, R_16F, COMPUTE_32F};
  if (n == "bf16") return {n, DType::BF16, DType::BF16, DType::F32, R_16BF, R_16BF, COMPUTE_32F};
  if (n == "i8") return {n, DType::I8, DType::I32, DType::F32, R_8I, R_32I, COMPUTE_32I};
  if (n == "f8e4m3") return {n, DType::F8E4M3, DType::F16, DType::F32, R_8F_E4M3, R_16F, COMPUTE_32F};
  return {"f32", DType::F32, DType::F32, DType::F32, R_32F, R_32F, COMPUTE_32F};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes{4096};
  std::vector<std::string> formats{"f32", "tf32", "f16", "bf16", "i8", "f8e4m3"};
  int reps = 20;
  std::string plugins = HPF_PLUGIN_DIR, json;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--size") {
      sizes.clear();
      for (const auto& s : split(v)) sizes.push_back(std::stoll(s));
    } else if (a == "--reps") reps = std::max(1, std::stoi(v));
    else if (a == "--formats") formats = split(v);
    else if (a == "--plugins") plugins = v;
    else if (a == "--json") json = v;
    else {
      std::fprintf(stderr, "hpf-gpu-gemm-bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  device::GpuTarget gpu = device::find_gpu(plugins);
  if (!gpu.plugin) {
    std::printf("skipped: %s\n", gpu.why.c_str());
    return 0;
  }
  const int sm = std::atoi(gpu.plugin->devices()[gpu.device].architecture.c_str() + 3);
  std::printf("GPU: %s\n", gpu.label().c_str());
  Cu cu;
  void* culib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  sym(culib, "cuEventCreate", cu.EventCreate);
  sym(culib, "cuEventRecord", cu.EventRecord);
  sym(culib, "cuEventSynchronize", cu.EventSynchronize);
  sym(culib, "cuEventElapsedTime_v2", cu.EventElapsedTime);
  if (!cu.EventElapsedTime) sym(culib, "cuEventElapsedTime", cu.EventElapsedTime);
  sym(culib, "cuCtxSynchronize", cu.CtxSynchronize);
  Blas blas = load_blas();
  if (!blas.handle) std::printf("cuBLAS: %s (left out)\n", blas.why.c_str());
  std::ofstream js;
  if (!json.empty()) js.open(json);
  std::printf("%-7s %6s %-10s %10s %9s %10s %9s %7s %10s\n", "format", "size", "instr", "hpf ms", "hpf TF/s", "cuBLAS ms",
              "cuBLAS TF", "ratio", "max diff");
  for (int64_t n : sizes)
    for (const std::string& fname : formats) {
      const Format f = format_of(fname);
      if (f.a == DType::F8E4M3 && sm < 89) {
        std::printf("%-7s %6lld skipped: FP8 needs sm_89 or later\n", fname.c_str(), (long long)n);
        continue;
      }
      jit::KernelSpec spec;
      spec.family = "matmul";
      spec.accumulation = f.acc;
      spec.inputs = {{f.a, {n, n}}, {f.a, {n, n}}};
      spec.outputs = {{f.y, {n, n}}};
      spec.attrs = {{"gemm", int64_t{1}}, {"transB", int64_t{1}}};
      auto k = jit::generate_cuda(spec);
      if (!k.ok()) {
        std::printf("%-7s generate: %s\n", fname.c_str(), k.status().message().c_str());
        continue;
      }
      std::mt19937_64 rng(5);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<std::vector<std::byte>> in;
      for (int t = 0; t < 2; ++t) {
        std::vector<float> v(static_cast<size_t>(n * n));
        for (float& x : v) x = f.a == DType::I8 ? std::round(std::clamp(nd(rng) * 40.0f, -127.0f, 127.0f)) : nd(rng);
        std::vector<std::byte> b(storage_bytes(f.a, v.size()));
        if (!encode_span(f.a, v, b).ok()) return 1;
        in.push_back(std::move(b));
      }
      const size_t out_bytes = storage_bytes(f.y, static_cast<size_t>(n * n));
      auto l = device::LoadedKernel::make(gpu, *k, in, out_bytes);
      if (!l.ok()) {
        std::printf("%-7s %s\n", fname.c_str(), l.status().message().c_str());
        continue;
      }
      auto timer = gpu.plugin->create_timer(gpu.device);
      if (!timer.ok()) return 1;
      std::vector<double> ours;
      bool failed = false;
      for (int r = 0; r < reps + 3 && !failed; ++r) {
        failed = !timer->start().ok() || !l->launch().ok();
        auto ns = timer->stop();
        failed = failed || !ns.ok();
        if (!failed && r >= 3) ours.push_back(*ns * 1e-6);
      }
      if (failed) {
        std::printf("%-7s launch failed\n", fname.c_str());
        continue;
      }
      auto our_out = l->output();
      // cuBLAS on the same inputs.
      std::vector<double> theirs;
      double diff = NAN;
      const bool lt = f.a == DType::F8E4M3;
      std::string blas_note;
      if (blas.handle && (!lt || blas.lt) && cu.EventElapsedTime) {
        auto A = gpu.plugin->alloc(gpu.device, in[0].size());
        auto B = gpu.plugin->alloc(gpu.device, in[1].size());
        auto C = gpu.plugin->alloc(gpu.device, out_bytes);
        auto W = gpu.plugin->alloc(gpu.device, size_t{64} << 20);
        if (!A.ok() || !B.ok() || !C.ok() || !W.ok()) return 1;
        (void)A->copy_in(0, in[0].data(), in[0].size());
        (void)B->copy_in(0, in[1].data(), in[1].size());
        const float one = 1.0f, zero = 0.0f;
        const int32_t ione = 1, izero = 0;
        const void* alpha = f.blas_compute == COMPUTE_32I ? static_cast<const void*>(&ione) : &one;
        const void* beta = f.blas_compute == COMPUTE_32I ? static_cast<const void*>(&izero) : &zero;
        void *op = nullptr, *la = nullptr, *lb = nullptr, *lc = nullptr, *pref = nullptr;
        unsigned char heur[96] = {};  // cublasLtMatmulHeuristicResult_t (algo first)
        int found = 0;
        if (lt) {
          const int t = OP_T, nn = OP_N;
          const size_t ws = size_t{64} << 20;
          blas.LtMatmulDescCreate(&op, COMPUTE_32F, R_32F);
          blas.LtMatmulDescSetAttribute(op, 3, &t, sizeof t);
          blas.LtMatmulDescSetAttribute(op, 4, &nn, sizeof nn);
          blas.LtMatrixLayoutCreate(&la, f.blas_in, n, n, n);
          blas.LtMatrixLayoutCreate(&lb, f.blas_in, n, n, n);
          blas.LtMatrixLayoutCreate(&lc, f.blas_out, n, n, n);
          blas.LtMatmulPreferenceCreate(&pref);
          blas.LtMatmulPreferenceSetAttribute(pref, 1, &ws, sizeof ws);
          if (blas.LtMatmulAlgoGetHeuristic(blas.lt, op, la, lb, lc, lc, pref, 1, heur, &found) != 0 || found == 0)
            blas_note = "cublasLt found no FP8 algorithm";
        }
        // Column-major view: Y^T[N,M] = B[N,K] * A^T, i.e. op(B)=T (lda=K), op(A)=N (ldb=K).
        auto call = [&]() {
          if (lt)
            return blas.LtMatmul(blas.lt, op, &one, B->device_pointer(), la, A->device_pointer(), lb, &zero,
                                 C->device_pointer(), lc, C->device_pointer(), lc, heur, W->device_pointer(),
                                 size_t{64} << 20, nullptr);
          return blas.GemmEx(blas.handle, OP_T, OP_N, (int)n, (int)n, (int)n, alpha, B->device_pointer(), f.blas_in, (int)n,
                             A->device_pointer(), f.blas_in, (int)n, beta, C->device_pointer(), f.blas_out, (int)n,
                             f.blas_compute, -1);
        };
        CUevent e0 = nullptr, e1 = nullptr;
        cu.EventCreate(&e0, 0);
        cu.EventCreate(&e1, 0);
        int rc = blas_note.empty() ? 0 : -1;
        for (int r = 0; r < reps + 3 && rc == 0; ++r) {
          cu.EventRecord(e0, nullptr);
          rc = call();
          cu.EventRecord(e1, nullptr);
          cu.EventSynchronize(e1);
          float ms = 0;
          cu.EventElapsedTime(&ms, e0, e1);
          if (r >= 3) theirs.push_back(ms);
        }
        if (rc != 0 && blas_note.empty()) blas_note = "cuBLAS returned status " + std::to_string(rc);
        cu.CtxSynchronize();
        if (rc == 0 && our_out.ok()) {
          std::vector<std::byte> ref(out_bytes);
          (void)C->copy_out(0, ref.data(), ref.size());
          std::vector<float> x(static_cast<size_t>(n * n)), y(x.size());
          if (decode_span(f.y, *our_out, x).ok() && decode_span(f.y, ref, y).ok()) {
            double worst = 0, scale = 1e-30;
            for (size_t i = 0; i < x.size(); ++i) {
              worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
              scale = std::max(scale, std::fabs(double(y[i])));
            }
            diff = worst / scale;
          }
        }
      } else if (!blas.handle) {
        blas_note = blas.why;
      } else {
        blas_note = lt ? "cublasLt not found" : "no driver events";
      }
      const double flops = 2.0 * n * n * n, ms = median(ours), bms = median(theirs);
      const std::string instr = jit::cuda_gemm_instruction(f.acc == DType::TF32 ? DType::F32 : f.a, f.a, f.acc);
      std::printf("%-7s %6lld %-10s %10.3f %9.1f %10.3f %9.1f %7.2f %10.2e %s\n", fname.c_str(), (long long)n,
                  instr.c_str(), ms, flops / ms * 1e-9, bms, flops / bms * 1e-9, bms / ms, diff, blas_note.c_str());
      std::fflush(stdout);
      if (js)
        js << "{\"format\": \"" << fname << "\", \"size\": " << n << ", \"instruction\": \"" << instr
           << "\", \"hpf_ms\": " << ms << ", \"hpf_tflops\": " << flops / ms * 1e-9 << ", \"cublas_ms\": "
           << (std::isnan(bms) ? std::string("null") : std::to_string(bms)) << ", \"ratio\": "
           << (std::isnan(bms) ? std::string("null") : std::to_string(bms / ms)) << ", \"max_diff\": "
           << (std::isnan(diff) ? std::string("null") : std::to_string(diff)) << ", \"note\": \"" << blas_note
           << "\"}\n";
    }
  return 0;
}
