// FP32 GEMM throughput of libhpf's generated MatMul kernel, run through the CPU plugin's C
// table (only kernel_launch is timed), against OpenBLAS cblas_sgemm and oneDNN dnnl_sgemm on the
// same shapes and thread counts. Each thread count runs in a child process, since the plugin
// reads HPF_NUM_THREADS once when it initialises. Prints medians; never fails on time.
//
//   hpf-gemm-bench [--threads 1,2] [--runs 7]
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/plugin.h"
#include "bench/bench_plugin.hpp"
#include "jit/codegen/lowering.hpp"

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

using bench::median_ms;
using bench::Plugin;

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
  auto gk = jit::generate_c((*steps)[0].spec);
  if (!gk.ok()) return cpu.error = gk.status().to_string(), false;
  k = *gk;
  return cpu.load(k, kern);
}

double gflops(const Shape3& s, double ms) { return 2.0 * s.m * s.n * s.k / (ms * 1e6); }

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
    std::vector<float> A(s.m * s.k), B(s.k * s.n), C(s.m * s.n), R(s.m * s.n);
    for (float& x : A) x = d(gen);
    for (float& x : B) x = d(gen);
    jit::GeneratedKernel k;
    hpf_kernel* kern = nullptr;
    double hpf_ms = -1, blas_ms = -1, dnnl_ms = -1;
    double err = 0;
    if (hpf_kernel_for(cpu, s, k, kern)) {
      hpf_ms = cpu.time(k, kern, {A.data(), B.data(), C.data()}, runs);
    } else {
      std::printf("  %s: libhpf kernel failed: %s\n", s.tag, cpu.error.c_str());
    }
#ifdef HPF_BENCH_OPENBLAS
    blas_ms = median_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, A.data(), s.k, B.data(), s.n, 0.0f,
                  R.data(), s.n);
    }, runs);
    for (size_t i = 0; i < R.size(); ++i) err = std::max(err, double(std::abs(R[i] - C[i])));
#endif
#ifdef HPF_BENCH_DNNL
    dnnl_ms = median_ms([&] {
      dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, A.data(), s.k, B.data(), s.n, 0.0f, R.data(), s.n);
    }, runs);
#endif
    auto cell = [&](double ms) {
      if (ms < 0) return std::string("          -");
      char b[64];
      std::snprintf(b, sizeof b, "%6.2f %5.1f", ms, gflops(s, ms));
      return std::string(b);
    };
    auto ratio = [&](double ms) {
      if (ms < 0 || hpf_ms < 0) return std::string("    -");
      char b[32];
      std::snprintf(b, sizeof b, "%5.2f", ms / hpf_ms);  // = GFLOP/s(libhpf) / GFLOP/s(peer)
      return std::string(b);
    };
    std::printf("%2d  %-16s %s  %s  %s   %s   %s   %.1e\n", threads, s.tag, cell(hpf_ms).c_str(),
                cell(blas_ms).c_str(), cell(dnnl_ms).c_str(), ratio(blas_ms).c_str(), ratio(dnnl_ms).c_str(), err);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads{1, 2};
  int runs = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--threads")) {
      threads.clear();
      for (char* t = std::strtok(argv[i + 1], ","); t; t = std::strtok(nullptr, ",")) threads.push_back(std::atoi(t));
    }
  }
  const std::vector<Shape3> shapes{{256, 256, 256, "256^3"},          {512, 512, 512, "512^3"},
                                   {1024, 1024, 1024, "1024^3"},      {128, 768, 768, "bert 128x768x768"},
                                   {128, 3072, 768, "bert 128x3072x768"}, {128, 768, 3072, "bert 128x768x3072"}};
  std::printf("FP32 GEMM, M x N x K, row-major, C = A*B; median of %d runs after 2 warm-ups\n", runs);
#ifndef HPF_BENCH_OPENBLAS
  std::printf("OpenBLAS: not found at build time, column left out\n");
#endif
#ifndef HPF_BENCH_DNNL
  std::printf("oneDNN: not found at build time, column left out\n");
#endif
  std::printf("cells: ms GFLOP/s; ratio = libhpf GFLOP/s / peer GFLOP/s; maxdiff = max |libhpf - OpenBLAS|\n");
  std::printf("thr shape            libhpf ms  GF  OpenBLAS ms GF  oneDNN ms  GF  hpf/oblas hpf/dnnl  maxdiff\n");
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
