// The CUDA GEMM schedule (see cuda_gemm.hpp): instruction choice, operand loaders, the
// two-stage main loop and the epilogue loop, written as CUDA C++ text.
#include "jit/codegen/cuda_gemm.hpp"

#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_codegen.hpp"

namespace hpf::jit {
namespace {

bool is_f8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }
bool is_i8(DType t) { return t == DType::I8 || t == DType::U8; }

// The instruction family and its element width.
enum class Mma { fma, f16, bf16, tf32, int8, fp8 };

Mma choose(DType a, DType b, DType acc) {
  auto both = [&](auto pred) { return pred(a) && pred(b); };
  if (both(is_i8)) return Mma::int8;
  if (both(is_f8)) return Mma::fp8;
  if (both([](DType t) { return t == DType::F16 || is_f8(t); })) return Mma::f16;
  if (both([](DType t) { return t == DType::BF16 || is_f8(t); })) return Mma::bf16;
  if (both([](DType t) { return t == DType::F32 || t == DType::TF32; }) &&
      (a == DType::TF32 || b == DType::TF32 || acc == DType::TF32))
    return Mma::tf32;
  return Mma::fma;
}

int elems_per_word(Mma m) {
  switch (m) {
    case Mma::f16: case Mma::bf16: return 2;
    case Mma::int8: case Mma::fp8: return 4;
    default: return 1;
  }
}

// Whether format t is stored exactly as instruction m consumes it (no conversion on load).
bool raw_for(Mma m, DType t) {
  switch (m) {
    case Mma::f16: return t == DType::F16;
    case Mma::bf16: return t == DType::BF16;
    case Mma::tf32: return t == DType::TF32;
    case Mma::int8: return is_i8(t);
    case Mma::fp8: return is_f8(t);
    default: return false;
  }
}

// The 32-bit-word (low bits) form of stored element `x` of format t for instruction m.
std::string pack(Mma m, DType t, const std::string& x) {
  switch (m) {
    case Mma::f16:
      return t == DType::F16 ? "(unsigned)__half_as_ushort(" + x + ")"
                             : "(unsigned)__half_as_ushort(__float2half_rn(" + cuda_gemm_load(t, x) + "))";
    case Mma::bf16:
      return t == DType::BF16 ? "(unsigned)__bfloat16_as_ushort(" + x + ")"
                              : "(unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(" + cuda_gemm_load(t, x) + "))";
    case Mma::tf32:
      return t == DType::TF32 ? "__float_as_uint(" + x + ")" : "__float_as_uint(hpf_round_tf32(" + cuda_gemm_load(t, x) + "))";
    case Mma::int8: case Mma::fp8: return "(unsigned)(unsigned char)(" + x + ")";
    case Mma::fma: return "__float_as_uint(" + cuda_gemm_load(t, x) + ")";
  }
  return x;
}

const char* ptx_type(DType t) {
  switch (t) {
    case DType::I8: return "s8";
    case DType::U8: return "u8";
    case DType::F8E4M3: return "e4m3";
    case DType::F8E5M2: return "e5m2";
    default: return "";
  }
}

// hpf_mma(acc[4], a[4], b[2]): one m16n8kK instruction, D = A * B + D.
std::string mma_function(Mma m, DType a, DType b) {
  std::string shape = "m16n8k16", types = "f32.f16.f16.f32", acc = "float", c = "f";
  if (m == Mma::bf16) types = "f32.bf16.bf16.f32";
  if (m == Mma::tf32) shape = "m16n8k8", types = "f32.tf32.tf32.f32";
  if (m == Mma::int8) shape = "m16n8k32", types = std::string("s32.") + ptx_type(a) + "." + ptx_type(b) + ".s32", acc = "int", c = "r";
  if (m == Mma::fp8) shape = "m16n8k32", types = std::string("f32.") + ptx_type(a) + "." + ptx_type(b) + ".f32";
  return "static __device__ __forceinline__ void hpf_mma(" + acc + "* d, const unsigned* a, const unsigned* b) {\n"
         "  asm volatile(\"mma.sync.aligned." + shape + ".row.col." + types +
         " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
         "      : \"+" + c + "\"(d[0]), \"+" + c + "\"(d[1]), \"+" + c + "\"(d[2]), \"+" + c + "\"(d[3])\n"
         "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n";
}

}  // namespace

const char* cuda_format_helpers() {
  return R"(#include <cuda_fp8.h>
static __device__ __forceinline__ float hpf_e4m3_to_float(unsigned char x) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)x, __NV_E4M3)));
}
static __device__ __forceinline__ float hpf_e5m2_to_float(unsigned char x) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)x, __NV_E5M2)));
}
)";
}

namespace {

const char* async_helpers() {
  return R"(/* 16 bytes global -> shared without registers; zero-filled when !ok (gmem must still be valid). */
static __device__ __forceinline__ void hpf_cp_async16(void* smem, const void* gmem, bool ok) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(ok ? 16 : 0));
}
/* Four 8x8 b16 matrices from shared memory: lanes 8i..8i+7 give matrix i's row addresses. */
static __device__ __forceinline__ void hpf_ldmatrix_x4(unsigned* r, const unsigned* smem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
}
static __device__ __forceinline__ void hpf_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
static __device__ __forceinline__ void hpf_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
/* Waits until at most N committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void hpf_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
)";
}

// The schedule: the instruction, which operands arrive by cp.async, and the shared-memory
// pipeline. Two stages of 16 words of k (any loaders); with both operands by cp.async, four
// stages of 8 words (48 KiB, the most static shared memory a block may have), so three k-slices
// are in flight while one is multiplied. Rows are `words + 4` words apart: with 20 or 12, the
// eight rows one ldmatrix phase reads fall in distinct banks.
struct Variant {
  Mma mma;
  bool async_a, async_b;
  int stages = 2, words = 16;
  int row_words() const { return words + 4; }
};

Variant variant(Mma m, bool async_a, bool async_b) {
  Variant v{m, async_a, async_b};
  if (async_a && async_b) v.stages = 4, v.words = 8;
  return v;
}

constexpr int kTile = 128;      // BM = BN
constexpr int kFmaWords = 16;   // FMA: k per stage
constexpr int kFmaStride = kTile + 4;

std::string elem_function(const char* fn, const GemmOperand& op, Mma m) {
  std::ostringstream s;
  s << "static __device__ __forceinline__ unsigned " << fn << "(const " << cuda_gemm_storage_type(op.dtype)
    << "* __restrict__ p, i64 bz, i64 r, i64 k) {\n  (void)bz;\n";
  if (!op.setup.empty()) s << "  " << op.setup << "\n";
  s << "  if (!(" << op.valid << ")) return 0u;\n  return " << pack(m, op.dtype, "p[" + op.index + "]") << ";\n}\n";
  return s.str();
}

// Fetch of k-slice `kt` of one operand (rows [r0, r0+128) of `rows`): cp.async into stage
// `buf`, or global loads into registers `reg` (then `store` puts them into stage `buf`).
struct Loader {
  std::string issue, store;
};

Loader loader(const char* X, const char* fn, const GemmOperand& op, bool async, const Variant& v, int64_t rows,
              int64_t K) {
  const Mma m = v.mma;
  const int epw = elems_per_word(m), bits = 32 / epw;
  const bool tc = m != Mma::fma;
  const int words = tc ? v.words : kFmaWords;
  Loader l;
  std::ostringstream s;
  if (async) {
    // 128 rows x words/4 chunks of 16 bytes: one or two chunks per thread.
    const int chunks = words / 4;
    s << "#pragma unroll\n      for (int j = 0; j < " << kTile * chunks / 256 << "; ++j) {\n"
      << "        const int c = tid + 256 * j, rr = c / " << chunks << ", q = c % " << chunks << ";\n"
      << "        const i64 r = r0" << X << " + rr, k = kt * " << words * epw << "LL + q * " << 4 * epw << ";\n"
      << "        const bool ok = r < " << L(rows) << " && k < " << L(K) << ";\n"
      << "        hpf_cp_async16(&" << X << "s[buf][rr * " << v.row_words() << " + q * 4], ok ? p" << X << " + ("
      << op.index << ") : p" << X << ", ok);\n      }\n";
    l.issue = s.str();
    return l;
  }
  // Thread -> (row rr, word w): along k when the operand's rows are k-contiguous (coalesced), else
  // along rows.
  const bool along_k = op.ld_k == 1;
  const std::string rr = along_k ? "(tid >> 4) + 16 * j" : "tid & 127";
  const std::string w = along_k ? "tid & 15" : "(tid >> 7) + 2 * j";
  s << "#pragma unroll\n      for (int j = 0; j < 8; ++j) {\n"
    << "        const int rr = " << rr << ", w = " << w << ";\n"
    << "        const i64 r = r0" << X << " + rr;\n"
    << "        unsigned word = 0u;\n"
    << "#pragma unroll\n        for (int e = 0; e < " << epw << "; ++e) {\n"
    << "          const i64 k = kt * " << words * epw << "LL + w * " << epw << " + e;\n"
    << "          if (r < " << L(rows) << " && k < " << L(K) << ") word |= " << fn << "(p" << X << ", bz, r, k) << (e * "
    << bits << ");\n"
    << "        }\n        reg" << X << "[j] = word;\n      }\n";
  l.issue = s.str();
  std::ostringstream t;
  const std::string at = tc ? "rr * " + std::to_string(v.row_words()) + " + w" : "w * " + std::to_string(kFmaStride) + " + rr";
  t << "#pragma unroll\n      for (int j = 0; j < 8; ++j) {\n"
    << "        const int rr = " << rr << ", w = " << w << ";\n"
    << "        " << X << "s[buf][" << at << "] = reg" << X << "[j];\n      }\n";
  l.store = t.str();
  return l;
}

std::string kernel(const GemmProblem& p, const std::string& name, const Variant& v) {
  const Mma m = v.mma;
  const bool tc = m != Mma::fma;
  const int epw = elems_per_word(m);
  const int words = tc ? v.words : kFmaWords, row_words = v.row_words();
  const int64_t bk = static_cast<int64_t>(words) * epw;
  const int64_t kt_count = (p.K + bk - 1) / bk;
  const int64_t tm = (p.M + kTile - 1) / kTile, tn = (p.N + kTile - 1) / kTile;
  const int64_t tiles = p.batches * tm * tn;
  const int stage = tc ? kTile * row_words : kFmaWords * kFmaStride;
  const Loader la = loader("A", "hpf_elem_a", p.a, v.async_a, v, p.M, p.K);
  const Loader lb = loader("B", "hpf_elem_b", p.b, v.async_b, v, p.N, p.K);
  const std::string acc = p.int_result ? "int" : "float";
  std::ostringstream s;
  if (tc) s << mma_function(m, p.a.dtype, p.b.dtype);
  s << elem_function("hpf_elem_a", p.a, m) << elem_function("hpf_elem_b", p.b, m);
  s << "\nextern \"C\" __global__ void __launch_bounds__(256) " << name << "(" << cuda_gemm_params(p) << ") {\n"
    << "  __shared__ __align__(16) unsigned As[" << v.stages << "][" << stage << "];\n"
    << "  __shared__ __align__(16) unsigned Bs[" << v.stages << "][" << stage << "];\n"
    << "  const int tid = threadIdx.x;\n";
  if (tc)
    s << "  const int lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3, g = lane >> 2, tg = lane & 3;\n";
  else
    s << "  const int tx = tid & 15, ty = tid >> 4;\n";
  s << "  for (i64 tile = blockIdx.x; tile < " << L(tiles) << "; tile += gridDim.x) {\n"
    << "    const i64 bz = tile / " << L(tm * tn) << ", tr = tile % " << L(tm * tn) << ";\n"
    << "    const i64 r0A = (tr / " << L(tn) << ") * " << kTile << ", r0B = (tr % " << L(tn) << ") * " << kTile << ";\n"
    << "    unsigned regA[8], regB[8];\n    (void)regA; (void)regB;\n";
  if (tc) s << "    " << acc << " acc[4][4][4];\n";
  else s << "    float acc[8][8];\n";
  s << "#pragma unroll\n    for (int x = 0; x < " << (tc ? 64 : 64) << "; ++x) (&acc[0][0]" << (tc ? "[0]" : "")
    << ")[x] = 0;\n";
  if (v.stages == 2) {
    // Stage 0, then per k-slice: fetch the next into the other stage, multiply this one, store
    // the fetched registers, wait for the copies.
    s << "    {\n      const i64 kt = 0;\n      const int buf = 0;\n"
      << la.issue << lb.issue << la.store << lb.store
      << "      hpf_cp_async_commit();\n      hpf_cp_async_wait_all();\n      __syncthreads();\n    }\n";
    s << "    for (i64 kt0 = 0; kt0 < " << L(kt_count) << "; ++kt0) {\n"
      << "      const int cur = (int)(kt0 & 1);\n"
      << "      if (kt0 + 1 < " << L(kt_count) << ") {\n"
      << "        const i64 kt = kt0 + 1;\n        const int buf = cur ^ 1;\n"
      << la.issue << lb.issue << "        hpf_cp_async_commit();\n      }\n";
  } else {
    // cp.async only: slices 0..S-2 in flight first; per slice: wait for it (at most S-2 groups
    // pending), barrier (also: everyone is done with the stage refilled next), fetch slice
    // kt0+S-1 into the stage slice kt0-1 used, multiply this one. One group per slice, empty
    // past the end, so the counting holds.
    const int S = v.stages;
    s << "#pragma unroll\n    for (int s0 = 0; s0 < " << S - 1 << "; ++s0) {\n"
      << "      const i64 kt = s0;\n      const int buf = s0;\n"
      << "      if (kt < " << L(kt_count) << ") {\n" << la.issue << lb.issue << "      }\n"
      << "      hpf_cp_async_commit();\n    }\n";
    s << "    for (i64 kt0 = 0; kt0 < " << L(kt_count) << "; ++kt0) {\n"
      << "      const int cur = (int)(kt0 % " << S << ");\n"
      << "      hpf_cp_async_wait<" << S - 2 << ">();\n      __syncthreads();\n"
      << "      {\n        const i64 kt = kt0 + " << S - 1 << ";\n        const int buf = (int)(kt % " << S << ");\n"
      << "        if (kt < " << L(kt_count) << ") {\n" << la.issue << lb.issue << "        }\n"
      << "        hpf_cp_async_commit();\n      }\n";
  }
  if (tc)
    s << "#pragma unroll\n      for (int ks = 0; ks < " << words << "; ks += 8) {\n"
      << "        unsigned a[4][4], b[4][2];\n"
      // ldmatrix.x4 hands lane l the word (row l/4, word l%4) of each of four 8x4-word
      // matrices, which is the mma fragment layout for every format here (they are all
      // 32-bit words along k): A = rows 0-7 | 8-15 x words ks | ks+4; B = two n8 tiles.
      << "#pragma unroll\n        for (int mt = 0; mt < 4; ++mt)\n"
      << "          hpf_ldmatrix_x4(a[mt], &As[cur][(wm * 64 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * "
      << row_words << " + ks + (lane >> 4) * 4]);\n"
      << "#pragma unroll\n        for (int nt = 0; nt < 4; nt += 2) {\n"
      << "          unsigned r[4];\n"
      << "          hpf_ldmatrix_x4(r, &Bs[cur][(wn * 32 + nt * 8 + (lane & 7) + (lane >> 4) * 8) * " << row_words
      << " + ks + ((lane >> 3) & 1) * 4]);\n"
      << "          b[nt][0] = r[0]; b[nt][1] = r[1]; b[nt + 1][0] = r[2]; b[nt + 1][1] = r[3];\n        }\n"
      << "#pragma unroll\n        for (int mt = 0; mt < 4; ++mt)\n"
      << "#pragma unroll\n          for (int nt = 0; nt < 4; ++nt) hpf_mma(acc[mt][nt], a[mt], b[nt]);\n      }\n";
  else
    s << "#pragma unroll\n      for (int kk = 0; kk < " << kFmaWords << "; ++kk) {\n"
      << "        float a[8], b[8];\n"
      << "#pragma unroll\n        for (int x = 0; x < 8; ++x) {\n"
      << "          a[x] = __uint_as_float(As[cur][kk * " << kFmaStride << " + ty + 16 * x]);\n"
      << "          b[x] = __uint_as_float(Bs[cur][kk * " << kFmaStride << " + tx + 16 * x]);\n        }\n"
      << "#pragma unroll\n        for (int x = 0; x < 8; ++x)\n"
      << "#pragma unroll\n          for (int y = 0; y < 8; ++y) acc[x][y] = fmaf(a[x], b[y], acc[x][y]);\n      }\n";
  if (v.stages == 2)
    s << "      if (kt0 + 1 < " << L(kt_count) << ") {\n        const int buf = cur ^ 1;\n"
      << la.store << lb.store << "      }\n"
      << "      hpf_cp_async_wait_all();\n      __syncthreads();\n    }\n";
  else  // drain the (empty) groups; nobody refills a stage of this tile while another reads it
    s << "    }\n    hpf_cp_async_wait_all();\n    __syncthreads();\n";
  // Epilogue: each accumulator to its output element.
  if (tc)
    s << "#pragma unroll\n    for (int x = 0; x < 64; ++x) {\n"
      << "      const int mt = x >> 4, nt = (x >> 2) & 3, h = (x >> 1) & 1, c = x & 1;\n"
      << "      const i64 i = r0A + wm * 64 + mt * 16 + g + 8 * h, j = r0B + wn * 32 + nt * 8 + tg * 2 + c;\n"
      << "      const " << acc << " v = acc[mt][nt][h * 2 + c];\n";
  else
    s << "#pragma unroll\n    for (int x = 0; x < 64; ++x) {\n"
      << "      const i64 i = r0A + ty + 16 * (x >> 3), j = r0B + tx + 16 * (x & 7);\n"
      << "      const float v = acc[x >> 3][x & 7];\n";
  s << "      if (i < " << L(p.M) << " && j < " << L(p.N) << ") {\n        " << p.epilogue << "\n      }\n    }\n";
  s << "  }\n}\n";
  return s.str();
}

bool async_ok(const GemmOperand& op, Mma m, int64_t K) {
  if (m == Mma::fma || !raw_for(m, op.dtype) || op.ld_k != 1 || !op.batch_aligned_16) return false;
  const int64_t es = 4 / elems_per_word(m);
  return (op.ld_r * es) % 16 == 0 && (K * es) % 16 == 0;
}

}  // namespace

const char* cuda_gemm_storage_type(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2 ? "unsigned char" : cuda_storage_type(t);
}

std::string cuda_gemm_load(DType t, const std::string& at) {
  if (t == DType::F8E4M3) return "hpf_e4m3_to_float(" + at + ")";
  if (t == DType::F8E5M2) return "hpf_e5m2_to_float(" + at + ")";
  return cuda_load(t, at);
}

std::string cuda_gemm_store(DType t, const std::string& v) {
  if (t == DType::F8E4M3) return "(unsigned char)__nv_cvt_float_to_fp8(" + v + ", __NV_SATFINITE, __NV_E4M3)";
  if (t == DType::F8E5M2) return "(unsigned char)__nv_cvt_float_to_fp8(" + v + ", __NV_SATFINITE, __NV_E5M2)";
  if (t == DType::I32) return "(int)(" + v + ")";  // INT32 accumulators, exact
  return gpu_store(GpuDialect::cuda, t, v);
}

std::string cuda_gemm_params(const GemmProblem& p) {
  const std::string a = "const " + std::string(cuda_gemm_storage_type(p.a.dtype)) + "* __restrict__ pA",
                    b = "const " + std::string(cuda_gemm_storage_type(p.b.dtype)) + "* __restrict__ pB";
  return (p.b_first ? b + ", " + a : a + ", " + b) + (p.extra_params.empty() ? "" : ", " + p.extra_params);
}

std::string cuda_gemm_instruction(DType a, DType b, DType accumulation) {
  switch (choose(a, b, accumulation)) {
    case Mma::f16: return "mma.f16";
    case Mma::bf16: return "mma.bf16";
    case Mma::tf32: return "mma.tf32";
    case Mma::int8: return "mma.int8";
    case Mma::fp8: return "mma.fp8";
    default: return "fma";
  }
}

Expected<GeneratedKernel> generate_cuda_gemm(const GemmProblem& p, const std::string& name) {
  for (DType t : {p.a.dtype, p.b.dtype})
    if (!is_float(t) && !is_i8(t))
      return Status::unsupported("CUDA codegen: GEMM operand in " + std::string(dtype_name(t)));
  const Mma m = choose(p.a.dtype, p.b.dtype, p.accumulation);
  if (p.int_result != (m == Mma::int8))
    return Status::invalid("CUDA GEMM: integer results need integer operands (and the reverse)");
  std::ostringstream s;
  s << cuda_prelude() << cuda_format_helpers() << async_helpers();
  if (m == Mma::fp8) {
    // FP8 instructions from sm_89; before that the same kernel runs f16 on exact conversions.
    s << "#if __CUDA_ARCH__ >= 890\n"
      << kernel(p, name, variant(m, async_ok(p.a, m, p.K), async_ok(p.b, m, p.K))) << "#else\n"
      << kernel(p, name, variant(Mma::f16, false, false)) << "#endif\n";
  } else if (const bool aa = async_ok(p.a, m, p.K), ab = async_ok(p.b, m, p.K); cuda_wgmma_fits(p, aa, ab)) {
    // Warpgroup MMA where the target is sm_90a; mma.sync elsewhere.
    s << "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n" << cuda_wgmma_kernel(p, name) << "#else\n"
      << kernel(p, name, variant(m, aa, ab)) << "#endif\n";
  } else {
    s << kernel(p, name, variant(m, aa, ab));
  }
  const int64_t tiles = p.batches * ((p.M + kTile - 1) / kTile) * ((p.N + kTile - 1) / kTile);
  // The GPU launch rule (gpu_codegen.hpp): one block of 256 threads per output tile.
  return GeneratedKernel{name, s.str(), tiles * 256, 256};
}

}  // namespace hpf::jit
