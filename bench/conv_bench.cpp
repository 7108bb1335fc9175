// Conv throughput of libhpf's generated kernels (implicit GEMM, depthwise), run through the CPU
// plugin's C table (only kernel_launch is timed), against oneDNN's convolution primitive on the
// same layers and thread counts, in the same run. Layers: ResNet-50's 3x3 stages, a 1x1
// expansion, a stride-2 3x3 and the 7x7 stem; MobileNetV2's depthwise layers and a pointwise
// one. Batch 1, NCHW, with bias. libhpf runs with FP32 storage and with BF16 storage (input,
// weights and output in BF16, FP32 accumulation); oneDNN in FP32 with NCHW activations and
// weights in the layout it prefers (reordered once, untimed, as a deployed model's would be).
// Each thread count runs in a child process (the plugin reads HPF_NUM_THREADS once). Prints
// medians; never fails on time.
//
//   hpf-conv-bench [--threads 1,2] [--runs 7] [--only SUBSTRING-OF-LAYER-NAME] [--clock wall|thread]
// --clock thread times the calling thread's CPU time instead of wall time (with --threads 1 only:
// on a busy shared machine it leaves out the waits for a core).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_plugin.hpp"
#include "hpf/graph.hpp"
#include "jit/codegen/conv_packing.hpp"
#include "jit/codegen/lowering.hpp"

#ifdef HPF_BENCH_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

using namespace hpf;

namespace {

struct Layer {
  const char* tag;
  int64_t c, h, w, m, k, stride, pad, group;
  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
  double flops() const { return 2.0 * m * oh() * ow() * (c / group) * k * k; }
};

// The generated kernel for `l` with every tensor stored as `t`, reading its weights packed
// (conv_packing.hpp) where the Session packs them: `packed` says so.
bool hpf_kernel_for(bench::Plugin& cpu, const Layer& l, DType t, jit::GeneratedKernel& k, hpf_kernel*& kern,
                    jit::KernelSpec* packed = nullptr) {
  GraphBuilder b("conv");
  auto x = b.input("x", t, {1, l.c, l.h, l.w});
  auto w = b.input("w", t, {l.m, l.c / l.group, l.k, l.k});
  auto bias = b.input("b", t, {l.m});
  Attributes a{{"strides", std::vector<int64_t>{l.stride, l.stride}},
               {"pads", std::vector<int64_t>{l.pad, l.pad, l.pad, l.pad}},
               {"group", l.group}};
  b.output(b.op1("Conv", {x, w, bias}, a), "y");
  auto g = b.build();
  if (!g.ok()) return cpu.error = g.status().to_string(), false;
  auto steps = jit::lower(*g, {});
  if (!steps.ok() || steps->size() != 1) return cpu.error = "lowering did not give one kernel", false;
  jit::KernelSpec spec = (*steps)[0].spec;
  if (packed && jit::conv_takes_packed_weights(spec) && !jit::conv_bf16_as_f32(spec, cpu.amx_bf16()))
    *packed = spec = jit::conv_spec_with_packed_weights(spec);
  auto gk = jit::generate_c(spec);
  if (!gk.ok()) return cpu.error = gk.status().to_string(), false;
  k = *gk;
  return cpu.load(k, kern);
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#ifdef HPF_BENCH_DNNL
// oneDNN forward-inference convolution; -1 when a call fails.
double dnnl_conv_ms(const Layer& l, float* x, float* w, float* bias, float* y, int runs) {
  dnnl_engine_t eng;
  dnnl_stream_t st;
  if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&st, eng, dnnl_stream_default_flags)) return -1;
  const int64_t g = l.group;
  dnnl_dims_t src{1, l.c, l.h, l.w}, dst{1, l.m, l.oh(), l.ow()}, bd{l.m};
  dnnl_dims_t wg{g, l.m / g, l.c / g, l.k, l.k}, w1{l.m, l.c, l.k, l.k};
  dnnl_dims_t strides{l.stride, l.stride}, pads{l.pad, l.pad};
  dnnl_memory_desc_t src_md, dst_md, b_md, wu_md, wa_md;
  dnnl_memory_desc_init_by_tag(&src_md, 4, src, dnnl_f32, dnnl_nchw);
  dnnl_memory_desc_init_by_tag(&dst_md, 4, dst, dnnl_f32, dnnl_nchw);
  dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_a);
  if (g > 1) {
    dnnl_memory_desc_init_by_tag(&wu_md, 5, wg, dnnl_f32, dnnl_goihw);
    dnnl_memory_desc_init_by_tag(&wa_md, 5, wg, dnnl_f32, dnnl_format_tag_any);
  } else {
    dnnl_memory_desc_init_by_tag(&wu_md, 4, w1, dnnl_f32, dnnl_oihw);
    dnnl_memory_desc_init_by_tag(&wa_md, 4, w1, dnnl_f32, dnnl_format_tag_any);
  }
  dnnl_convolution_desc_t cd;
  if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wa_md, &b_md,
                                         &dst_md, strides, pads, pads))
    return -1;
  dnnl_primitive_desc_t pd;
  if (dnnl_primitive_desc_create(&pd, &cd, nullptr, eng, nullptr)) return -1;
  const dnnl_memory_desc_t* w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t xm, wum, wm, bm, ym;
  dnnl_memory_create(&xm, &src_md, eng, x);
  dnnl_memory_create(&wum, &wu_md, eng, w);
  dnnl_memory_create(&bm, &b_md, eng, bias);
  dnnl_memory_create(&ym, &dst_md, eng, y);
  dnnl_memory_create(&wm, w_md, eng, DNNL_MEMORY_ALLOCATE);
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t reorder, conv;
  if (dnnl_reorder_primitive_desc_create(&rpd, &wu_md, eng, w_md, eng, nullptr) || dnnl_primitive_create(&reorder, rpd))
    return -1;
  dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, wum}, {DNNL_ARG_TO, wm}};
  dnnl_primitive_execute(reorder, st, 2, rargs);
  dnnl_stream_wait(st);
  if (dnnl_primitive_create(&conv, pd)) return -1;
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}};
  const double ms = bench::median_ms([&] {
    dnnl_primitive_execute(conv, st, 4, args);
    dnnl_stream_wait(st);
  }, runs);
  dnnl_primitive_destroy(conv);
  dnnl_primitive_destroy(reorder);
  dnnl_primitive_desc_destroy(rpd);
  dnnl_primitive_desc_destroy(pd);
  for (dnnl_memory_t mm : {xm, wum, wm, bm, ym}) dnnl_memory_destroy(mm);
  dnnl_stream_destroy(st);
  dnnl_engine_destroy(eng);
  return ms;
}
#endif

int run_child(int threads, int runs, const std::vector<Layer>& layers) {
  setenv("HPF_NUM_THREADS", std::to_string(threads).c_str(), 1);
  bench::Plugin cpu;
  if (!cpu.init()) {
    std::printf("threads=%d: CPU plugin unusable: %s\n", threads, cpu.error.c_str());
    return 1;
  }
#ifdef HPF_BENCH_DNNL
  omp_set_num_threads(threads);
#endif
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Layer& l : layers) {
    const int64_t nx = l.c * l.h * l.w, nw = l.m * (l.c / l.group) * l.k * l.k, ny = l.m * l.oh() * l.ow();
    // 64-byte aligned, as the Session's buffers (bench_plugin.hpp).
    bench::AlignedVector<float> X(nx), Wt(nw), B(l.m), Y(ny), R(ny);
    for (float& v : X) v = d(gen);
    for (float& v : Wt) v = d(gen);
    for (float& v : B) v = d(gen);
    bench::AlignedVector<uint16_t> Xh(nx), Wh(nw), Bh(l.m), Yh(ny);
    for (int64_t i = 0; i < nx; ++i) Xh[i] = to_bf16(X[i]);
    for (int64_t i = 0; i < nw; ++i) Wh[i] = to_bf16(Wt[i]);
    for (int64_t i = 0; i < l.m; ++i) Bh[i] = to_bf16(B[i]);
    double f32_ms = -1, bf16_ms = -1, dnnl_ms = -1, err = -1;
    jit::GeneratedKernel k;
    hpf_kernel* kern = nullptr;
    jit::KernelSpec packed;
    if (hpf_kernel_for(cpu, l, DType::F32, k, kern, &packed)) {
      bench::AlignedVector<float> Wp;
      if (!packed.inputs.empty()) {
        Wp.resize(numel(packed.inputs[1].shape));
        jit::pack_conv_weights(packed, Wt.data(), Wp.data());
      }
      f32_ms = cpu.time(k, kern, {X.data(), Wp.empty() ? Wt.data() : Wp.data(), B.data(), Y.data()}, runs);
    }
    else
      std::printf("  %s: libhpf f32 kernel failed: %s\n", l.tag, cpu.error.c_str());
    packed = {};
    if (hpf_kernel_for(cpu, l, DType::BF16, k, kern, &packed)) {
      bench::AlignedVector<uint16_t> Wp;
      if (!packed.inputs.empty()) {  // the AMX layout, on a device with AMX
        Wp.resize(numel(packed.inputs[1].shape));
        jit::pack_conv_weights(packed, Wh.data(), Wp.data());
      }
      bf16_ms = cpu.time(k, kern, {Xh.data(), Wp.empty() ? Wh.data() : Wp.data(), Bh.data(), Yh.data()}, runs);
    }
    else
      std::printf("  %s: libhpf bf16 kernel failed: %s\n", l.tag, cpu.error.c_str());
#ifdef HPF_BENCH_DNNL
    dnnl_ms = dnnl_conv_ms(l, X.data(), Wt.data(), B.data(), R.data(), runs);
    if (dnnl_ms >= 0) {
      err = 0;
      for (int64_t i = 0; i < ny; ++i) err = std::max(err, double(std::abs(R[i] - Y[i])));
    }
#endif
    auto cell = [&](double ms) {
      if (ms < 0) return std::string("           -");
      char b[64];
      std::snprintf(b, sizeof b, "%7.3f %5.1f", ms, l.flops() / (ms * 1e6));
      return std::string(b);
    };
    auto ratio = [&](double num, double den) {
      if (num < 0 || den < 0) return std::string("    -");
      char b[32];
      std::snprintf(b, sizeof b, "%5.2f", num / den);
      return std::string(b);
    };
    // ratio = GFLOP/s(libhpf) / GFLOP/s(oneDNN) = ms(oneDNN) / ms(libhpf).
    std::printf("%2d  %-26s %s  %s  %s   %s   %s   %.1e\n", threads, l.tag, cell(f32_ms).c_str(), cell(bf16_ms).c_str(),
                cell(dnnl_ms).c_str(), ratio(dnnl_ms, f32_ms).c_str(), ratio(dnnl_ms, bf16_ms).c_str(), err);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads{1, 2};
  int runs = 7;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--clock")) bench::thread_clock = !std::strcmp(argv[i + 1], "thread");
    if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--threads")) {
      threads.clear();
      for (char* t = std::strtok(argv[i + 1], ","); t; t = std::strtok(nullptr, ",")) threads.push_back(std::atoi(t));
    }
  }
  // tag, C, H, W, M, kernel, stride, pad, group
  std::vector<Layer> layers{
      {"r50 56x56 64->64 3x3", 64, 56, 56, 64, 3, 1, 1, 1},
      {"r50 28x28 128->128 3x3", 128, 28, 28, 128, 3, 1, 1, 1},
      {"r50 14x14 256->256 3x3", 256, 14, 14, 256, 3, 1, 1, 1},
      {"r50 7x7 512->512 3x3", 512, 7, 7, 512, 3, 1, 1, 1},
      {"r50 56x56 64->256 1x1", 64, 56, 56, 256, 1, 1, 0, 1},
      {"r50 28x28 512->128 1x1", 512, 28, 28, 128, 1, 1, 0, 1},
      {"r50 28x28 128->512 1x1", 128, 28, 28, 512, 1, 1, 0, 1},
      {"r50 14x14 1024->256 1x1", 1024, 14, 14, 256, 1, 1, 0, 1},
      {"r50 14x14 256->1024 1x1", 256, 14, 14, 1024, 1, 1, 0, 1},
      {"r50 7x7 2048->512 1x1", 2048, 7, 7, 512, 1, 1, 0, 1},
      {"r50 7x7 512->2048 1x1", 512, 7, 7, 2048, 1, 1, 0, 1},
      {"r50 56x56 128->128 3x3 s2", 128, 56, 56, 128, 3, 2, 1, 1},
      {"r50 28x28 512->1024 1x1 s2", 512, 28, 28, 1024, 1, 2, 0, 1},
      {"r50 14x14 512->512 3x3 s2", 512, 14, 14, 512, 3, 2, 1, 1},
      {"r50 stem 224 3->64 7x7 s2", 3, 224, 224, 64, 7, 2, 3, 1},
      {"mbv2 dw 112x112x32", 32, 112, 112, 32, 3, 1, 1, 32},
      {"mbv2 dw 112x112x96 s2", 96, 112, 112, 96, 3, 2, 1, 96},
      {"mbv2 dw 56x56x144", 144, 56, 56, 144, 3, 1, 1, 144},
      {"mbv2 dw 28x28x192", 192, 28, 28, 192, 3, 1, 1, 192},
      {"mbv2 dw 14x14x576", 576, 14, 14, 576, 3, 1, 1, 576},
      {"mbv2 dw 7x7x960", 960, 7, 7, 960, 3, 1, 1, 960},
      {"mbv2 pw 56x56 144->24 1x1", 144, 56, 56, 24, 1, 1, 0, 1},
      {"mbv2 pw 56x56 24->144 1x1", 24, 56, 56, 144, 1, 1, 0, 1},
      {"mbv2 pw 112x112 16->96 1x1", 16, 112, 112, 96, 1, 1, 0, 1},
      {"mbv2 pw 112x112 32->16 1x1", 32, 112, 112, 16, 1, 1, 0, 1},
      {"mbv2 pw 7x7 960->320 1x1", 960, 7, 7, 320, 1, 1, 0, 1},
      {"mbv2 pw 14x14 384->64 1x1", 384, 14, 14, 64, 1, 1, 0, 1},
      {"mbv2 pw 14x14 576->96 1x1", 576, 14, 14, 96, 1, 1, 0, 1},
      {"mbv2 stem 224 3->32 3x3 s2", 3, 224, 224, 32, 3, 2, 1, 1},
      {"cnn-small 32x32 16->16 3x3", 16, 32, 32, 16, 3, 1, 1, 1},
  };
  std::erase_if(layers, [&](const Layer& l) { return std::string(l.tag).find(only) == std::string::npos; });
  std::printf("Conv, batch 1, NCHW, with bias; median of %d runs after 2 warm-ups (%s)\n", runs,
              bench::thread_clock ? "thread CPU time" : "wall time");
#ifndef HPF_BENCH_DNNL
  std::printf("oneDNN: not found at build time, column left out\n");
#endif
  std::printf("cells: ms GFLOP/s; ratio = libhpf GFLOP/s / oneDNN FP32 GFLOP/s; maxdiff = max |libhpf f32 - oneDNN|\n");
  std::printf("thr layer                      libhpf f32 ms GF  libhpf bf16 ms GF  oneDNN f32 ms GF  f32/dnnl bf16/dnnl maxdiff\n");
  std::fflush(stdout);
  for (int t : threads) {
    const pid_t pid = fork();
    if (pid == 0) _exit(run_child(t, runs, layers));
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) std::printf("threads=%d: child failed (status %d)\n", t, st);
  }
  return 0;
}
