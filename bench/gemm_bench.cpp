// FP32 GEMM throughput of libhpf's generated MatMul kernel, run through the CPU plugin's C
// table (only kernel_launch is timed), against OpenBLAS cblas_sgemm and oneDNN dnnl_sgemm on the
// same shapes and thread counts; then INT8 GEMM (libhpf matmul_i8 vs its FP32 and oneDNN's
// dnnl_gemm_u8s8s32) and GEMV 4096x4096 with FP32/BF16/F16/INT8/INT4 weights (matmul_wq vs
// libhpf's FP32 kernel and OpenBLAS sgemv). Each thread count runs in a child process, since the plugin
// reads HPF_NUM_THREADS once when it initialises. Prints medians; never fails on time. With
// HPF_DUMP_DIR set, each generated kernel's source goes there (NAME.c), as the Session writes them.
//
//   hpf-gemm-bench [--threads 1,2] [--runs 7] [--rounds 5] [--only NAME-PART]
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <random>
#include <string>
#include <vector>

#include "hpf/calibration.hpp"
#include "hpf/graph.hpp"
#include "hpf/plugin.h"
#include "bench/bench_plugin.hpp"
#include "jit/codegen/lowering.hpp"
#include "runtime/session/weight_packing.hpp"

#ifdef HPF_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef HPF_BENCH_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

using namespace hpf;

namespace {

struct Shape3 {
  int64_t m, n, k;
  const char* tag;
};

using bench::AlignedVector;
using bench::Plugin;

// Rounds of blocks with more than one thread (--rounds; bench::medians): five, so that two
// blocks caught by a neighbour's burst do not move a median (with three, a 0.2 ms 256^3 table
// with two threads once gave one variant 0.35 ms against 0.20 for its neighbours).
int g_rounds = 5;

// A table's variants, each under a slot (an enum of the table's columns), timed together
// (bench::medians); a slot left empty (its kernel failed, its peer not built in) times as -1.
struct Variants {
  std::vector<std::function<void()>> fns;
  std::vector<int> at;  // slot -> index in fns, or -1
  explicit Variants(int slots) : at(size_t(slots), -1) {}
  void add(int slot, std::function<void()> fn) {
    at[size_t(slot)] = int(fns.size());
    fns.push_back(std::move(fn));
  }
  bool has(int slot) const { return at[size_t(slot)] >= 0; }
  std::vector<double> medians(int runs, int threads) const {
    const std::vector<double> m = bench::medians(fns, runs, threads, g_rounds);
    std::vector<double> out(at.size(), -1.0);
    for (size_t i = 0; i < at.size(); ++i)
      if (at[i] >= 0) out[i] = m[size_t(at[i])];
    return out;
  }
};

// `spec`'s kernel, compiled and loaded by the plugin.
bool compile_spec(Plugin& cpu, const jit::KernelSpec& spec, jit::GeneratedKernel& k, hpf_kernel*& kern) {
  auto gk = jit::generate_c(spec);
  if (!gk.ok()) return cpu.error = gk.status().to_string(), false;
  k = *gk;
  if (const char* dir = std::getenv("HPF_DUMP_DIR")) {  // each kernel's source, as the Session writes them
    if (std::FILE* f = std::fopen((std::string(dir) + "/" + k.name + ".c").c_str(), "w")) {
      std::fputs(k.source.c_str(), f);
      std::fclose(f);
    }
  }
  return cpu.load(k, kern);
}

// The generated kernel for an M x K by K x N FP32 MatMul, compiled and loaded by the plugin.
bool hpf_kernel_for(Plugin& cpu, const Shape3& s, jit::GeneratedKernel& k, hpf_kernel*& kern) {
  GraphBuilder b("gemm");
  auto a = b.input("a", DType::F32, {s.m, s.k});
  auto w = b.input("w", DType::F32, {s.k, s.n});
  b.output(b.matmul(a, w), "y");
  auto g = b.build();
  if (!g.ok()) return cpu.error = g.status().to_string(), false;
  auto steps = jit::lower(*g, {});
  if (!steps.ok() || steps->size() != 1) return cpu.error = "lowering did not give one kernel", false;
  return compile_spec(cpu, (*steps)[0].spec, k, kern);
}

// Packed tensors' bytes, 64-byte aligned as in the Session's buffers.
using Held = std::vector<AlignedVector<std::byte>>;
AlignedVector<std::byte> aligned_copy(const Tensor& t) { return {t.bytes().begin(), t.bytes().end()}; }

// The packed-weight kernel (matmul_wq, or matmul_i8 for "i8vnni") for B [K, N] in `format`,
// weights packed as the Session packs them; `held` gets the packed tensors (aligned copies).
// `rows` (i8vnni): empty, A in one static scale `a_scale` and the device's W8A8 weights; "s8",
// "u7" or "s16", A quantised per row at run time (a_dynamic) and 8-bit weights, as plan_auto's
// int8 candidates have them (NodePlan::dynamic_rows); "i16vnni" with "s16": 16-bit weights too
// (the int16 candidate).
bool packed_kernel_for(Plugin& cpu, const Shape3& s, const std::string& format, const Tensor& B, float a_scale,
                       jit::GeneratedKernel& k, hpf_kernel*& kern, Held& held, const std::string& rows = "") {
  std::optional<QuantParams> q;
  if (format == "i8") q = *int8_weight_params(B, 1);
  if (format == "i8vnni") q = *int8_weight_params(B, 1, rows.empty() ? cpu.int8_weight_max() : 127);  // as the planner quantises W8A8
  if (format == "i4") q = *int4_weight_params(B, 0, int4_group_for(s.k, 32));
  if (format == "i16vnni") q = *int16_weight_params(B, 1, int16_operand_qmax(s.k));  // the planner's int16
  auto pw = pack_weights(B, false, format, q ? &*q : nullptr);
  if (!pw.ok()) return cpu.error = pw.status().to_string(), false;
  jit::KernelSpec spec;
  const bool vnni = format == "i8vnni" || format == "i16vnni";
  spec.family = vnni ? "matmul_i8" : "matmul_wq";
  spec.inputs = {{DType::F32, {s.m, s.k}}, {DType::U8, pw->data.shape()}, {pw->scales.dtype(), pw->scales.shape()}};
  spec.outputs = {{DType::F32, {s.m, s.n}}};
  spec.attrs["wformat"] = format;
  spec.attrs["k"] = s.k;
  spec.attrs["n"] = s.n;
  spec.attrs["group"] = pw->group;
  if (vnni) {
    spec.inputs.push_back({DType::I32, pw->column_sums.shape()});
    if (rows.empty()) {
      for (float& x : std::span<float>(reinterpret_cast<float*>(pw->scales.bytes().data()), size_t(pw->scales.numel())))
        x *= a_scale;
      spec.attrs["a_scale"] = a_scale;
    } else {
      spec.attrs["a_dynamic"] = int64_t{1};
      if (format == "i16vnni") spec.attrs["w16"] = spec.attrs["a_s16"] = int64_t{1};
      else if (rows != "s8") spec.attrs["a_" + rows] = int64_t{1};
    }
    spec.attrs["w_max_abs"] = int64_t{pw->max_abs};
    if (cpu.amx_int8()) spec.attrs["amx"] = int64_t{1};  // as the Session asks
  }
  held = {aligned_copy(pw->data), aligned_copy(pw->scales), aligned_copy(pw->column_sums)};
  return compile_spec(cpu, spec, k, kern);
}

double gflops(const Shape3& s, double ms) { return 2.0 * s.m * s.n * s.k / (ms * 1e6); }

// Table cells of the INT8 sections: ms (9 wide, "-" when not measured) and a / b (`width` wide).
std::string ms_cell(double v) {
  if (v < 0) return "        -";
  char b[32];
  std::snprintf(b, sizeof b, "%9.3f", v);
  return b;
}
std::string ratio_cell(double a, double b, int width) {
  if (a < 0 || b < 0) return std::string(static_cast<size_t>(width - 1), ' ') + "-";
  char r[32];
  std::snprintf(r, sizeof r, "%*.2f", width, a / b);
  return r;
}

// The int8 MatMul's row formats (A quantised per row at run time, 8-bit weights, FP32 output):
// s8 rows, u7 rows, 16-bit rows (W8A16), 16-bit rows and weights (W16A16, the planner's int16),
// each against libhpf's FP32 GEMM on the same shapes.
void rows_section(Plugin& cpu, int threads, int runs, const std::vector<Shape3>& shapes) {
  std::printf("\n%d thread(s): INT8 rows quantised at run time (ms; ratio = FP32 ms / this ms; s8 and u7 rows\n"
              "W8A8, s16 rows W8A16: NodePlan::dynamic_rows; w16: 16-bit rows and I16 weights, W16A16)\n", threads);
  std::printf("thr shape            hpf f32   s8 rows   u7 rows  s16 rows       w16  f32/s8  f32/u7 f32/s16 f32/w16\n");
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Shape3& s : shapes) {
    if (s.m * s.n * s.k > (int64_t{1} << 31)) continue;  // the BERT shapes and up to 1024^3
    AlignedVector<float> A(s.m * s.k), C(s.m * s.n), bv(s.k * s.n);
    for (float& x : A) x = d(gen);
    for (float& x : bv) x = d(gen);
    Tensor B = *Tensor::from_f32({s.k, s.n}, bv);
    jit::GeneratedKernel k;
    hpf_kernel* kern = nullptr;
    // FP32 (slot 0), then the four formats.
    Variants v(5);
    if (hpf_kernel_for(cpu, s, k, kern)) v.add(0, cpu.launcher(k, kern, {A.data(), bv.data(), C.data()}));
    const char* const formats[4] = {"s8", "u7", "s16", "s16"};
    std::deque<Held> held;
    for (int f = 0; f < 4; ++f) {
      Held& h = held.emplace_back();
      if (packed_kernel_for(cpu, s, f == 3 ? "i16vnni" : "i8vnni", B, 0.0f, k, kern, h, formats[f]))
        v.add(f + 1, cpu.launcher(k, kern, {A.data(), h[0].data(), h[1].data(), h[2].data(), C.data()}));
      else
        std::printf("  %s: %s rows: %s\n", s.tag, formats[f], cpu.error.c_str());
    }
    const std::vector<double> med = v.medians(runs, threads);
    const double f32_ms = med[0], ms[4] = {med[1], med[2], med[3], med[4]};
    auto cell = ms_cell;
    auto ratio = [](double a, double b) { return ratio_cell(a, b, 6); };
    std::printf("%2d  %-16s%s %s %s %s %s  %s  %s  %s  %s\n", threads, s.tag, cell(f32_ms).c_str(), cell(ms[0]).c_str(),
                cell(ms[1]).c_str(), cell(ms[2]).c_str(), cell(ms[3]).c_str(), ratio(f32_ms, ms[0]).c_str(),
                ratio(f32_ms, ms[1]).c_str(), ratio(f32_ms, ms[2]).c_str(), ratio(f32_ms, ms[3]).c_str());
    std::fflush(stdout);
  }
}

// The integer-A matmul_i8 kernel (as for MatMulInteger): u8 A [M, K] x s8 `B` [K, N] -> s32,
// no zero points; `held` gets the packed weight and its column sums (aligned copies).
bool integer_kernel_for(Plugin& cpu, const Shape3& s, const Tensor& B, jit::GeneratedKernel& k, hpf_kernel*& kern,
                        Held& held) {
  auto pw = pack_int8_weights(B);
  if (!pw.ok()) return cpu.error = pw.status().to_string(), false;
  jit::KernelSpec spec;
  spec.family = "matmul_i8";
  spec.inputs = {{DType::U8, {s.m, s.k}}, {DType::U8, pw->data.shape()}, {DType::I32, pw->column_sums.shape()}};
  spec.outputs = {{DType::I32, {s.m, s.n}}};
  spec.attrs["k"] = s.k;
  spec.attrs["n"] = s.n;
  spec.attrs["w_max_abs"] = int64_t{pw->max_abs};
  if (cpu.amx_int8()) spec.attrs["amx"] = int64_t{1};
  held = {aligned_copy(pw->data), aligned_copy(pw->column_sums)};
  return compile_spec(cpu, spec, k, kern);
}

// INT8 GEMM: libhpf's matmul_i8 (A quantised on the fly, u8 x s8 -> s32, dequantised FP32
// output) against its own FP32 GEMM; and the same kernel given u8 A as MatMulInteger gives it
// (s32 output) against oneDNN's dnnl_gemm_u8s8s32 (integer GEMM alone: u8 A, s32 output) on the
// same integers; same shapes and threads.
void int8_section(Plugin& cpu, int threads, int runs, const std::vector<Shape3>& shapes) {
  std::fflush(stdout);
  std::printf("\n%d thread(s): INT8 GEMM (ms; ratio = other ms / libhpf ms; f32 in: A quantised, output dequantised;\n"
              "u8 in: A given as u8, s32 output, as oneDNN's; same: libhpf's s32 equal to oneDNN's)\n", threads);
  std::printf("thr shape            hpf f32  hpf int8 f32 in  hpf u8s8s32  dnnl u8s8s32  f32/int8  dnnl/u8  int8-f32-in/u8  same\n");
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Shape3& s : shapes) {
    AlignedVector<float> A(s.m * s.k), C(s.m * s.n);
    for (float& x : A) x = d(gen);
    AlignedVector<float> bv(s.k * s.n);
    for (float& x : bv) x = d(gen);
    Tensor B = *Tensor::from_f32({s.k, s.n}, bv);
    // The integers both integer GEMMs take: u8 A, s8 B in the range the device's plans quantise
    // W8A8 weights to (|q| <= 64 on AVX2 without VNNI, where wider ones saturate oneDNN's pairs).
    AlignedVector<uint8_t> au(s.m * s.k);
    Tensor bs(DType::I8, {s.k, s.n});
    auto* bsd = reinterpret_cast<int8_t*>(bs.bytes().data());
    for (size_t i = 0; i < au.size(); ++i) au[i] = uint8_t(int(A[i] * 127) + 128);
    const int wmax = cpu.int8_weight_max();
    for (size_t i = 0; i < bv.size(); ++i) bsd[i] = int8_t(bv[i] * wmax);
    AlignedVector<int32_t> ch(s.m * s.n, 0), ci(s.m * s.n, 1);
    // libhpf's FP32 and INT8 kernels and oneDNN's.
    enum { kF32, kI8, kU8, kDnnl, kCount };
    Variants v(kCount);
    jit::GeneratedKernel k;
    hpf_kernel* kern = nullptr;
    if (hpf_kernel_for(cpu, s, k, kern)) v.add(kF32, cpu.launcher(k, kern, {A.data(), bv.data(), C.data()}));
    Held held, held_u8;
    if (packed_kernel_for(cpu, s, "i8vnni", B, 1.0f / 127.0f, k, kern, held))
      v.add(kI8, cpu.launcher(k, kern, {A.data(), held[0].data(), held[1].data(), held[2].data(), C.data()}));
    else
      std::printf("  %s: libhpf int8 kernel failed: %s\n", s.tag, cpu.error.c_str());
    if (integer_kernel_for(cpu, s, bs, k, kern, held_u8))
      v.add(kU8, cpu.launcher(k, kern, {au.data(), held_u8[0].data(), held_u8[1].data(), ch.data()}));
    else
      std::printf("  %s: libhpf integer kernel failed: %s\n", s.tag, cpu.error.c_str());
#ifdef HPF_BENCH_DNNL
    const int32_t co = 0;
    v.add(kDnnl, [&] {
      dnnl_gemm_u8s8s32('N', 'N', 'F', s.m, s.n, s.k, 1.0f, au.data(), s.k, 0, bsd, s.n, 0, 0.0f, ci.data(), s.n, &co);
    });
#endif
    const std::vector<double> med = v.medians(runs, threads);
    const double f32_ms = med[kF32], i8_ms = med[kI8], u8_ms = med[kU8], dnnl_ms = med[kDnnl];
    auto ms = ms_cell;
    auto ratio = [](double v, double over) { return ratio_cell(v, over, 5); };
    const char* same = dnnl_ms < 0 || u8_ms < 0 ? "-" : ch == ci ? "yes" : "NO";
    std::printf("%2d  %-16s %s  %s        %s     %s     %s    %s       %s  %s\n", threads, s.tag, ms(f32_ms).c_str(),
                ms(i8_ms).c_str(), ms(u8_ms).c_str(), ms(dnnl_ms).c_str(), ratio(f32_ms, i8_ms).c_str(),
                ratio(dnnl_ms, u8_ms).c_str(), ratio(i8_ms, u8_ms).c_str(), same);
    std::fflush(stdout);
  }
}

// GEMV 1 x 4096 x 4096 (y = a B): libhpf's FP32 GEMM kernel and the packed-weight kernels (f32,
// bf16, f16, i8, i4 weights, FP32 compute) against OpenBLAS cblas_sgemv.
void gemv_section(Plugin& cpu, int threads, int runs) {
  const Shape3 s{1, 4096, 4096, "gemv 4096x4096"};
  std::printf("\n%d thread(s): GEMV 1x4096x4096 (ms; ratio = libhpf f32-weights GEMV ms / this ms: the FP32 GEMV the\n"
              "Session runs; the FP32 GEMM kernel with B as an input, first row, is for scale)\n", threads);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-1, 1);
  AlignedVector<float> A(s.k), C(s.n), bv(s.k * s.n);
  for (float& x : A) x = d(gen);
  for (float& x : bv) x = d(gen);
  Tensor B = *Tensor::from_f32({s.k, s.n}, bv);
  jit::GeneratedKernel k;
  hpf_kernel* kern = nullptr;
  // Every variant timed in turn per round (medians_interleaved), with any thread count: these
  // GEMVs stream 8-64 MiB from memory, whose bandwidth a neighbour's burst moves by 20-40%, and
  // timed back to back a variant's weights stay in this host's large L3 (FP32 4096x4096 with two
  // threads 1.2 ms instead of 2). OpenBLAS, timed last in a round, leaves its threads spinning for
  // about 2^28 cycles (77 ms here): longer than a whole round of the others (18 ms with two
  // threads), which it would time on one core and a half (two threads, after the BERT shapes'
  // tables: INT4 0.83 ms, 3.9x FP32's GEMV; with OPENBLAS_THREAD_TIMEOUT=4, 0.39 ms, 6.2x). With
  // more than one thread each round is followed by 100 ms of busy waiting, untimed: not asleep,
  // after which this VM runs the next kernels slowly for a while (bench::medians).
  std::vector<std::string> names;
  std::vector<std::function<void()>> fns;
  std::deque<Held> held;  // each variant's packed weights (references stay valid)
  if (hpf_kernel_for(cpu, s, k, kern)) {
    names.push_back("libhpf f32 (matmul, B input)");
    fns.push_back(cpu.launcher(k, kern, {A.data(), bv.data(), C.data()}));
  }
  size_t base = SIZE_MAX;  // the f32-weights GEMV
  for (const char* f : {"f32", "bf16", "f16", "i8", "i4"}) {
    Held& h = held.emplace_back();
    if (!packed_kernel_for(cpu, s, f, B, 0, k, kern, h)) {
      std::printf("  %s: %s\n", f, cpu.error.c_str());
      continue;
    }
    if (std::string(f) == "f32") base = fns.size();
    names.push_back(std::string("libhpf ") + f + " weights (matmul_wq)");
    fns.push_back(cpu.launcher(k, kern, {A.data(), h[0].data(), h[1].data(), C.data()}));
  }
#ifdef HPF_BENCH_OPENBLAS
  // OpenBLAS reads weights of its own (bv is the first variant's, which it would find in L3).
  const AlignedVector<float> ob(bv.begin(), bv.end());
  names.push_back("OpenBLAS sgemv f32");
  fns.push_back([&] { cblas_sgemv(CblasRowMajor, CblasTrans, s.k, s.n, 1.0f, ob.data(), s.n, A.data(), 1, 0.0f, C.data(), 1); });
#endif
  const std::vector<double> med = bench::medians_interleaved(fns, runs, [threads] {
    if (threads > 1)
      for (const double t0 = bench::now_ms(); bench::now_ms() - t0 < 100;) {
      }
  });
  const double base_ms = base < med.size() ? med[base] : -1;
  for (size_t i = 0; i < names.size(); ++i)
    std::printf("%2d  %-30s %9.3f  %5.2f\n", threads, names[i].c_str(), med[i], base_ms > 0 ? base_ms / med[i] : 0.0);
  std::fflush(stdout);
}

int run_child(int threads, int runs, const std::vector<Shape3>& shapes) {
  setenv("HPF_NUM_THREADS", std::to_string(threads).c_str(), 1);
  Plugin cpu;
  if (!cpu.init()) {
    std::printf("threads=%d: CPU plugin unusable: %s\n", threads, cpu.error.c_str());
    return 1;
  }
#ifdef HPF_BENCH_OPENBLAS
  openblas_set_num_threads(threads);
#endif
#ifdef HPF_BENCH_DNNL
  omp_set_num_threads(threads);
#endif
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Shape3& s : shapes) {
    AlignedVector<float> A(s.m * s.k), B(s.k * s.n), C(s.m * s.n), P(s.m * s.n), R(s.m * s.n);
    for (float& x : A) x = d(gen);
    for (float& x : B) x = d(gen);
    // Each peer reads a B of its own, as libhpf's packed kernel does: sharing one, the peer timed
    // right after the other found B in the L3 the other had just filled (oneDNN's 128x768x3072
    // 3.32-3.34 ms after OpenBLAS, 3.54-3.82 with a copy of its own).
    const AlignedVector<float> Bb(B.begin(), B.end()), Bd(B.begin(), B.end());
    // Timed together (bench::medians: in turn with one thread, in rounds of blocks with more), so
    // that the load a neighbour puts on the machine falls on each alike.
    enum { kHpf, kPacked, kBlas, kDnnl, kCount };
    Variants v(kCount);
    jit::GeneratedKernel k, kp;
    hpf_kernel *kern = nullptr, *kern_p = nullptr;
    if (hpf_kernel_for(cpu, s, k, kern))
      v.add(kHpf, cpu.launcher(k, kern, {A.data(), B.data(), C.data()}));
    else
      std::printf("  %s: libhpf kernel failed: %s\n", s.tag, cpu.error.c_str());
    // B constant, packed once as the Session packs FP32 weights (matmul_wq, wformat f32).
    Held held;
    if (packed_kernel_for(cpu, s, "f32", *Tensor::from_f32({s.k, s.n}, B), 0, kp, kern_p, held))
      v.add(kPacked, cpu.launcher(kp, kern_p, {A.data(), held[0].data(), held[1].data(), P.data()}));
    else
      std::printf("  %s: libhpf packed kernel failed: %s\n", s.tag, cpu.error.c_str());
#ifdef HPF_BENCH_OPENBLAS
    v.add(kBlas, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, A.data(), s.k, Bb.data(), s.n, 0.0f,
                  R.data(), s.n);
    });
#endif
#ifdef HPF_BENCH_DNNL
    v.add(kDnnl, [&] { dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, A.data(), s.k, Bd.data(), s.n, 0.0f, R.data(), s.n); });
#endif
    const std::vector<double> med = v.medians(runs, threads);
    const double hpf_ms = med[kHpf], packed_ms = med[kPacked], blas_ms = med[kBlas], dnnl_ms = med[kDnnl];
    // Against the last peer's result (R), else libhpf's two kernels against each other.
    double err = 0;
    const AlignedVector<float>& ref = v.has(kBlas) || v.has(kDnnl) ? R : C;
    for (size_t i = 0; i < C.size(); ++i) {
      if (v.has(kHpf)) err = std::max(err, double(std::abs(C[i] - ref[i])));
      if (v.has(kPacked)) err = std::max(err, double(std::abs(P[i] - ref[i])));
    }
    auto cell = [&](double ms) {
      if (ms < 0) return std::string("          -");
      char b[64];
      std::snprintf(b, sizeof b, "%6.2f %5.1f", ms, gflops(s, ms));
      return std::string(b);
    };
    auto ratio = [&](double ms, double ours) {
      if (ms < 0 || ours < 0) return std::string("    -");
      char b[32];
      std::snprintf(b, sizeof b, "%5.2f", ms / ours);  // = GFLOP/s(libhpf) / GFLOP/s(peer)
      return std::string(b);
    };
    std::printf("%2d  %-16s %s  %s  %s  %s   %s   %s   %s   %s   %.1e\n", threads, s.tag, cell(hpf_ms).c_str(),
                cell(packed_ms).c_str(), cell(blas_ms).c_str(), cell(dnnl_ms).c_str(), ratio(blas_ms, hpf_ms).c_str(),
                ratio(dnnl_ms, hpf_ms).c_str(), ratio(blas_ms, packed_ms).c_str(), ratio(dnnl_ms, packed_ms).c_str(), err);
    std::fflush(stdout);
  }
  int8_section(cpu, threads, runs, shapes);
  rows_section(cpu, threads, runs, shapes);
  gemv_section(cpu, threads, runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads{1, 2};
  int runs = 7;
  std::string only;  // --only TEXT: the shapes whose tag contains TEXT ("bert", "256^3")
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--rounds")) g_rounds = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--threads")) {
      threads.clear();
      for (char* t = std::strtok(argv[i + 1], ","); t; t = std::strtok(nullptr, ",")) threads.push_back(std::atoi(t));
    }
  }
  const std::vector<Shape3> all_shapes{{256, 256, 256, "256^3"},          {512, 512, 512, "512^3"},
                                   {1024, 1024, 1024, "1024^3"},      {2048, 2048, 2048, "2048^3"},
                                   {128, 768, 768, "bert 128x768x768"},
                                   {128, 3072, 768, "bert 128x3072x768"}, {128, 768, 3072, "bert 128x768x3072"}};
  std::vector<Shape3> shapes;
  for (const Shape3& s : all_shapes)
    if (std::string(s.tag).find(only) != std::string::npos) shapes.push_back(s);
  std::printf("FP32 GEMM, M x N x K, row-major, C = A*B; each table's variants timed together (bench::medians): one\n"
              "thread, in turn for %d rounds after 2 warm-ups, the median; more, in blocks of %d runs after 100 ms of\n"
              "warm-up, every variant in turn, %d rounds, the median of the block medians\n", runs, runs, g_rounds);
#ifndef HPF_BENCH_OPENBLAS
  std::printf("OpenBLAS: not found at build time, column left out\n");
#endif
#ifndef HPF_BENCH_DNNL
  std::printf("oneDNN: not found at build time, column left out\n");
#endif
  std::printf("cells: ms GFLOP/s; ratio = libhpf GFLOP/s / peer GFLOP/s; maxdiff = max |libhpf - peer| (oneDNN's result,\n"
              "else OpenBLAS's); libhpf: B an input (the MatMul kernel); packed: B constant, packed once (as the Session\n"
              "runs weights); every operand 64-byte aligned, as in the Session's buffers\n");
  std::printf("thr shape            libhpf ms  GF  packed ms  GF  OpenBLAS ms GF  oneDNN ms  GF  hpf/oblas hpf/dnnl"
              "  pk/oblas  pk/dnnl  maxdiff\n");
  std::fflush(stdout);
  for (int t : threads) {
    const pid_t pid = fork();
    if (pid == 0) _exit(run_child(t, runs, shapes));
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) std::printf("threads=%d: child failed (status %d)\n", t, st);
  }
  return 0;
}
