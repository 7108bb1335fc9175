// The sm_90a form of the CUDA GEMM (cuda_gemm.hpp): warpgroup MMA (wgmma.mma_async) reading
// both operands from shared memory through matrix descriptors, for f16 and bf16 operands whose
// rows are K-contiguous and 16-byte aligned (the cp.async-only case). Compiled only where the
// target is sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); other targets take the mma.sync kernel of the
// same source.
//
// Schedule: 256 threads = two warpgroups per 128 x 128 output tile, warpgroup w the rows
// 64w..64w+63, one m64n128k16 instruction per 16 k (64 FP32 accumulators a thread). Three
// shared-memory stages of 32 k filled by cp.async (two in flight while one is multiplied; 48 KiB
// of static shared memory), each stage in the no-swizzle canonical layout: core matrices of 8 rows
// x 16 bytes (128 contiguous bytes), the four of one 8-row group along k adjacent (leading byte
// offset 128), 8-row groups 512 bytes apart (stride byte offset). The generic-proxy writes of
// cp.async are fenced (fence.proxy.async) before the barrier that lets wgmma read them; each
// slice's wgmma group is waited for before its stage is refilled.
//
// The accumulator fragment is mma.sync's m16n8 layout per warp and n8 block (PTX ISA, "wgmma
// .m64nNk16 register fragment layout for accumulator matrix D"), so the epilogue maps
// accumulator x of warp q (of 4) to row 16q + lane/4 + 8((x/2)%2), column 8(x/4) + 2(lane%4) + x%2.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_gemm.hpp"

namespace hpf::jit {

namespace {

constexpr int kStages = 3, kBk = 32;             // stages; k (elements) per stage
constexpr int kGroupBytes = kBk / 8 * 128;       // one 8-row group: kBk / 8 core matrices
constexpr int kStageBytes = 128 / 8 * kGroupBytes;  // one operand's 128 rows

std::string wgmma_function(bool bf16) {
  std::ostringstream s;
  s << "static __device__ __forceinline__ unsigned long long hpf_wgmma_desc(const void* smem) {\n"
    << "  const unsigned long long a = (unsigned long long)(unsigned)__cvta_generic_to_shared(smem);\n"
    // start address >> 4 (bits 0-13), leading byte offset 128 >> 4 (16-29), stride byte offset
    // (30-45: the 8-row group pitch >> 4), no swizzle (62-63 zero), base offset 0.
    << "  return ((a & 0x3FFFFull) >> 4) | (8ull << 16) | ((unsigned long long)(" << kGroupBytes << " >> 4) << 32);\n"
    << "}\n"
    << "static __device__ __forceinline__ void hpf_wgmma(float* d, unsigned long long da, unsigned long long db) {\n"
    << "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %66, 0;\\n"
    << "wgmma.mma_async.sync.aligned.m64n128k16.f32." << (bf16 ? "bf16.bf16" : "f16.f16") << " {";
  for (int k = 0; k < 64; ++k) s << (k ? "," : "") << "%" << k;
  s << "}, %64, %65, p, 1, 1, 0, 0;\\n}\\n\"\n      : ";
  for (int k = 0; k < 64; ++k) s << (k ? ", " : "") << "\"+f\"(d[" << k << "])";
  s << "\n      : \"l\"(da), \"l\"(db), \"r\"(1));\n}\n"
    << "static __device__ __forceinline__ void hpf_wgmma_fence() { asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\"); }\n"
    << "static __device__ __forceinline__ void hpf_wgmma_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\"); }\n"
    << "static __device__ __forceinline__ void hpf_wgmma_wait_all() { asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\"); }\n"
    << "static __device__ __forceinline__ void hpf_fence_async_shared() { asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\"); }\n";
  return s.str();
}

// cp.async of k-slice `kt` of one operand into stage `buf`: 128 rows x 4 chunks of 16 bytes (8
// elements), two per thread, chunk (row rr, q) at byte (rr / 8) * group + q * 128 + (rr % 8) * 16.
std::string issue(const char* X, const GemmOperand& op, int64_t rows, int64_t K) {
  std::ostringstream s;
  s << "#pragma unroll\n      for (int j = 0; j < 2; ++j) {\n"
    << "        const int c = tid + 256 * j, rr = c >> 2, q = c & 3;\n"
    << "        const i64 r = r0" << X << " + rr, k = kt * " << kBk << "LL + q * 8;\n"
    << "        const bool ok = r < " << L(rows) << " && k < " << L(K) << ";\n"
    << "        hpf_cp_async16(" << X << "s + buf * " << kStageBytes << " + (rr >> 3) * " << kGroupBytes
    << " + q * 128 + (rr & 7) * 16, ok ? p" << X << " + (" << op.index << ") : p" << X << ", ok);\n      }\n";
  return s.str();
}

}  // namespace

bool cuda_wgmma_fits(const GemmProblem& p, bool async_a, bool async_b) {
  const bool f16 = p.a.dtype == DType::F16 && p.b.dtype == DType::F16;
  const bool bf16 = p.a.dtype == DType::BF16 && p.b.dtype == DType::BF16;
  return (f16 || bf16) && async_a && async_b && !p.int_result;
}

std::string cuda_wgmma_kernel(const GemmProblem& p, const std::string& name) {
  const bool bf16 = p.a.dtype == DType::BF16;
  const int64_t kt_count = (p.K + kBk - 1) / kBk;
  const int64_t tm = (p.M + 127) / 128, tn = (p.N + 127) / 128, tiles = p.batches * tm * tn;
  std::ostringstream s;
  s << wgmma_function(bf16)
    << "\nextern \"C\" __global__ void __launch_bounds__(256) " << name << "(" << cuda_gemm_params(p) << ") {\n"
    << "  __shared__ __align__(128) unsigned char As[" << kStages * kStageBytes << "];\n"
    << "  __shared__ __align__(128) unsigned char Bs[" << kStages * kStageBytes << "];\n"
    << "  const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, q = (tid >> 5) & 3, g = lane >> 2, tg = lane & 3;\n"
    << "  for (i64 tile = blockIdx.x; tile < " << L(tiles) << "; tile += gridDim.x) {\n"
    << "    const i64 bz = tile / " << L(tm * tn) << ", tr = tile % " << L(tm * tn) << ";\n"
    << "    const i64 r0A = (tr / " << L(tn) << ") * 128, r0B = (tr % " << L(tn) << ") * 128;\n"
    << "    float acc[64];\n"
    << "#pragma unroll\n    for (int x = 0; x < 64; ++x) acc[x] = 0.0f;\n"
    // Slices 0..S-2 in flight; per slice: wait for it, fence it for the async proxy, barrier
    // (everyone's copies landed, and everyone's wgmma of the stage refilled next is done), fetch
    // slice kt0+S-1, multiply this one and wait for the multiplies.
    << "#pragma unroll\n    for (int s0 = 0; s0 < " << kStages - 1 << "; ++s0) {\n"
    << "      const i64 kt = s0;\n      const int buf = s0;\n"
    << "      if (kt < " << L(kt_count) << ") {\n" << issue("A", p.a, p.M, p.K) << issue("B", p.b, p.N, p.K) << "      }\n"
    << "      hpf_cp_async_commit();\n    }\n"
    << "    for (i64 kt0 = 0; kt0 < " << L(kt_count) << "; ++kt0) {\n"
    << "      const int cur = (int)(kt0 % " << kStages << ");\n"
    << "      hpf_cp_async_wait<" << kStages - 2 << ">();\n"
    << "      hpf_fence_async_shared();\n"
    << "      __syncthreads();\n"
    << "      {\n        const i64 kt = kt0 + " << kStages - 1 << ";\n        const int buf = (int)(kt % " << kStages
    << ");\n"
    << "        if (kt < " << L(kt_count) << ") {\n" << issue("A", p.a, p.M, p.K) << issue("B", p.b, p.N, p.K)
    << "        }\n        hpf_cp_async_commit();\n      }\n"
    << "      hpf_wgmma_fence();\n"
    << "#pragma unroll\n      for (int ks = 0; ks < " << kBk / 16 << "; ++ks)\n"
    << "        hpf_wgmma(acc, hpf_wgmma_desc(As + cur * " << kStageBytes << " + wg * 8 * " << kGroupBytes
    << " + ks * 256),\n"
    << "                  hpf_wgmma_desc(Bs + cur * " << kStageBytes << " + ks * 256));\n"
    << "      hpf_wgmma_commit();\n"
    << "      hpf_wgmma_wait_all();\n"
    << "    }\n"
    << "    hpf_cp_async_wait_all();\n    __syncthreads();\n"
    << "#pragma unroll\n    for (int x = 0; x < 64; ++x) {\n"
    << "      const i64 i = r0A + wg * 64 + q * 16 + g + 8 * ((x >> 1) & 1), j = r0B + (x >> 2) * 8 + tg * 2 + (x & 1);\n"
    << "      const float v = acc[x];\n"
    << "      if (i < " << L(p.M) << " && j < " << L(p.N) << ") {\n        " << p.epilogue << "\n      }\n    }\n"
    << "  }\n}\n";
  return s.str();
}

}  // namespace hpf::jit
