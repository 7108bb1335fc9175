// MatMul / Gemm in C: batched, numpy broadcasting of batch dimensions, operands in any float
// format converted to FP32 while packing, FP32 accumulation.
//
// Schedule, FP32 A and Y (not transposed A): column blocks of B packed once per slice of K for
// many row tiles (generate_c_matmul below). Otherwise
// (GotoBLAS-like, sized so every buffer lives on the stack, 68 KiB in all):
//   work item = a block of kRowBlock rows of one batch matrix; a launch range is cut into
//   chunks of MC rows; per chunk, for each NC-column block, for each KC-deep slice:
//   B[KC x NC] is packed into NR-wide panels (zero padded), then per MR rows A[MR x KC] is
//   packed k-major and the MR x NR register-blocked microkernel runs over each panel,
//   accumulating into an FP32 MC x NC tile. alpha, beta*C and the output format are applied
//   when the tile is complete. The vector width is chosen in the kernel by the preprocessor
//   (AVX-512: 6x64 = 24 zmm accumulators; otherwise 6x16 = 12 ymm accumulators), so the
//   source does not depend on the host; clang vector extensions, no intrinsics headers.
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

namespace {

// Offset expression of batch index `t` of an operand with batch shape `in` broadcast to `out`.
std::string batch_offset(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t matrix) {
  std::string e = "0";
  int64_t stride = matrix;
  const size_t off = out.size() - in.size();
  std::vector<int64_t> st(out.size(), 0);
  for (size_t d = in.size(); d-- > 0;) {
    if (in[d] != 1) st[off + d] = stride;
    stride *= in[d];
  }
  int64_t div = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (st[d]) e += " + ((t / " + std::to_string(div) + "LL) % " + std::to_string(out[d]) + "LL) * " + std::to_string(st[d]) + "LL";
    div *= out[d];
  }
  return e;
}

// Rows per work item: a multiple of the microkernel's MR (6), so ranges cut on whole tiles.
constexpr int64_t kRowBlock = 6;
// The schedule of column blocks (an FP32 A and Y, below): work items wanted at least, and rows per
// item at least (as M allows); the depth of a packed slice of B at most (a whole K of 2048: 512
// KiB; fewer rows: kGemmSliceKC) and at most on the stack (128 KiB); B prefetched this many rows
// ahead into L1 by the microkernel, from the packed block and (kPackPrefetch) from B's own rows
// as the first tile packs them. Items wanted: 16, where each row part packs its blocks again
// (1024^3, when its items were 64 columns: one part of 1024 rows, 16 items, against two parts
// with 32; C harness, one core, against OpenBLAS in the same run, 21 alternations, three times:
// 1.02, 1.02 and 1.00x the two parts; two threads 12.7-16.6 ms against 12.9-18.0).
constexpr int64_t kBlockItems = 16, kBlockMinRows = 256;
constexpr int64_t kBlockKCMax = 2048, kBlockKCStack = 512;
constexpr int kBlockPrefetch = 16, kPackPrefetch = 8;

std::string ll(int64_t v) { return std::to_string(v) + "LL"; }

// C statements that pack B[pc.., jc..] (kc x nc of matrix b0; element (p, j) at B[b0 + b_pj])
// into the NR-wide panels of `width` columns, `stride` floats apart, k-major, zero past nc;
// `prefetch` > 0: B's rows (not transposed) that many ahead prefetched into L1 as each is read.
std::string pack_b(bool tb, DType bt, const std::string& b_pj, const std::string& stride, const std::string& width,
                   int64_t K, int64_t N, int prefetch, const std::string& in) {
  const std::string load = c_load_operand(bt, "B[b0 + " + b_pj + "]");
  std::ostringstream s;
  if (tb) {
    s << in << "for (i64 jj = 0; jj < " << width << "; ++jj) {\n"
      << in << "  float* restrict d = bpack + (jj / HPF_NR) * " << stride << " * HPF_NR + jj % HPF_NR;\n"
      << in << "  if (jj < nc) { const i64 j = jc + jj;\n"
      << in << "    for (i64 q = 0; q < kc; ++q) { const i64 p = pc + q; d[q * HPF_NR] = " << load << "; }\n"
      << in << "  } else for (i64 q = 0; q < kc; ++q) d[q * HPF_NR] = 0.0f;\n"
      << in << "}\n";
    return s.str();
  }
  s << in << "for (i64 q = 0; q < kc; ++q) {\n" << in << "  const i64 p = pc + q;\n";
  if (prefetch > 0)
    s << in << "  if (p + " << prefetch << " < " << ll(K) << ")\n"
      << in << "    for (i64 l = 0; l < nc; l += 16) __builtin_prefetch(&B[b0 + (p + " << prefetch << ") * " << ll(N)
      << " + jc + l], 0, 3);\n";
  s << in << "  for (i64 jp = 0; jp < " << width << "; jp += HPF_NR) {\n"
    << in << "    float* restrict d = bpack + jp * " << stride << " + q * HPF_NR;\n"
    << in << "    if (jp + HPF_NR <= nc) {\n"
    << in << "      for (i64 jj = 0; jj < HPF_NR; ++jj) { const i64 j = jc + jp + jj; d[jj] = " << load << "; }\n"
    << in << "    } else {\n"
    << in << "      for (i64 jj = 0; jj < HPF_NR; ++jj) { const i64 j = jc + jp + jj; d[jj] = jp + jj < nc ? " << load
    << " : 0.0f; }\n"
    << in << "    }\n"
    << in << "  }\n"
    << in << "}\n";
  return s.str();
}

}  // namespace

const char* gemm_micro_source() {
  return R"(
#if defined(__AVX512F__)
typedef float hpf_vf __attribute__((vector_size(64)));
typedef float hpf_vfu __attribute__((vector_size(64), aligned(4)));
#define HPF_VW 16
#define HPF_NV 4
#else
typedef float hpf_vf __attribute__((vector_size(32)));
typedef float hpf_vfu __attribute__((vector_size(32), aligned(4)));
#define HPF_VW 8
#define HPF_NV 2
#endif
typedef int hpf_vi __attribute__((vector_size(sizeof(hpf_vf))));
#define HPF_MR 6
#define HPF_NR (HPF_VW * HPF_NV)
#define HPF_KC 128
#define HPF_NC 64
#define HPF_MC 132
/* acc (mr x NR, row stride ldc) += A (mr x kc: a(i, p) at ap[p * ask + i * asi]) times B (kc x NR:
   vector v of row p at bp + p * bsk + v * bsv), over the first nv vectors of the NR columns only.
   mr and nv are constants at every call (the full tile or a piece of a ragged one), so the rows
   and vectors past them vanish when this is inlined.
   min_vector_width: hosts tuned to prefer 256-bit vectors would otherwise split the zmm
   accumulators in two and spill them.
   hpf_mm_micro_sums leaves the sums in c (registers, once inlined) for the caller to finish;
   hpf_mm_micro_rnz stores them to acc. bpf > 0 (a constant): each k also prefetches B's row
   k + bpf into L1, for a B that streams from L2 (a whole depth of K, hpf_mm_micro_bx0_pf).
   bcopy (null at most calls): B's row k is also stored to bcopy + k * HPF_NR, 64-byte aligned
   (packing B as its first tile reads it, hpf_mm_micro_pack). */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_sums(
    int zero, int mr, int nv, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk,
    i64 bsv, const float* restrict acc, i64 ldc, hpf_vf c[HPF_MR][HPF_NV], int bpf, float* restrict bcopy) {
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v)
      if (i < mr && v < nv) c[i][v] = zero ? (hpf_vf){} : *(const hpf_vf*)(acc + i * ldc + v * HPF_VW);
  for (i64 p = 0; p < kc; ++p) {
    hpf_vf b[HPF_NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v)
      if (v < nv) b[v] = *(const hpf_vfu*)(bp + p * bsk + v * bsv);  /* any alignment */
    if (bcopy)
#pragma clang loop unroll(full)
      for (int v = 0; v < HPF_NV; ++v)
        if (v < nv) *(hpf_vf*)(bcopy + p * HPF_NR + v * HPF_VW) = b[v];
    if (bpf > 0 && p + bpf < kc)
#pragma clang loop unroll(full)
      for (int v = 0; v < HPF_NV; ++v)
        if (v < nv) __builtin_prefetch(bp + (p + bpf) * bsk + v * bsv, 0, 3);
#pragma clang loop unroll(full)
    for (int i = 0; i < HPF_MR; ++i) {
      if (i < mr) {
        const float a = ap[p * ask + i * asi];
#pragma clang loop unroll(full)
        for (int v = 0; v < HPF_NV; ++v)
          if (v < nv) c[i][v] += a * b[v];
      }
    }
  }
}
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_rnz(
    int zero, int mr, int nv, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk,
    i64 bsv, float* restrict acc, i64 ldc, int bpf, float* restrict bcopy) {
  hpf_vf c[HPF_MR][HPF_NV];
  hpf_mm_micro_sums(zero, mr, nv, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc, c, bpf, bcopy);
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v)
      if (i < mr && v < nv) *(hpf_vf*)(acc + i * ldc + v * HPF_VW) = c[i][v];
}
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_rn(
    int mr, int nv, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc) {
  hpf_mm_micro_rnz(0, mr, nv, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc, 0, 0);
}
/* All NR columns. */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_r(
    int mr, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc) {
  hpf_mm_micro_rn(mr, HPF_NV, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);
}
#define hpf_mm_micro_bx(kc, ap, ask, asi, bp, bsk, bsv, acc, ldc) \
  hpf_mm_micro_r(HPF_MR, (kc), (ap), (ask), (asi), (bp), (bsk), (bsv), (acc), (ldc))
/* A full tile whose sums start at zero (acc is only written): the whole K in one slice. */
#define hpf_mm_micro_bx0(kc, ap, ask, asi, bp, bsk, bsv, acc, ldc) \
  hpf_mm_micro_rnz(1, HPF_MR, HPF_NV, (kc), (ap), (ask), (asi), (bp), (bsk), (bsv), (acc), (ldc), 0, 0)
/* The same with B prefetched bpf rows ahead (see hpf_mm_micro_sums). */
#define hpf_mm_micro_bx0_pf(kc, ap, ask, asi, bp, bsk, bsv, acc, ldc, bpf) \
  hpf_mm_micro_rnz(1, HPF_MR, HPF_NV, (kc), (ap), (ask), (asi), (bp), (bsk), (bsv), (acc), (ldc), (bpf), 0)
/* A full tile (sums from zero where zero) over NR columns of B read in place, row k at bp + k *
   bsk, prefetched bpf rows ahead, each row also stored to the NR-wide panel bcopy. */
#define hpf_mm_micro_pack(zero, kc, ap, asi, bp, bsk, bcopy, acc, ldc, bpf) \
  hpf_mm_micro_rnz((zero), HPF_MR, HPF_NV, (kc), (ap), 1, (asi), (bp), (bsk), HPF_VW, (acc), (ldc), (bpf), (bcopy))
/* A full tile (sums from zero where zero, else added to acc) over NR columns of B (vector v of
   row k at bp + k * bsk + v * bsv, any alignment, prefetched 16 rows ahead into L1 within the kc
   rows), A's rows read in place (a(i, p) at ap[i * asi + p]), that also prefetches into L2 the B
   that the thread reads next: rows d0, d0 + 1, .. below d1 (at most kc / 16 of them), row d at
   pfr + d * pfs, each four lines pls floats apart; one row per 16 k, so that the rows reach L2
   ahead of the tile that first reads them; returns how many it prefetched. The k loop runs in
   steps of 16 so that the prefetch costs no test per k (tested per k, a C harness of
   128x768x3072 ran 5% slower). */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_step(
    i64 p, int pf, const float* restrict ap, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    hpf_vf c[HPF_MR][HPF_NV]) {
  hpf_vf b[HPF_NV];
#pragma clang loop unroll(full)
  for (int v = 0; v < HPF_NV; ++v) b[v] = *(const hpf_vfu*)(bp + p * bsk + v * bsv);
  if (pf)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) __builtin_prefetch(bp + (p + 16) * bsk + v * bsv, 0, 3);
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i) {
    const float a = ap[i * asi + p];
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) c[i][v] += a * b[v];
  }
}
static inline __attribute__((always_inline)) void hpf_mm_prefetch_l2(const float* q, i64 pls) {
  __builtin_prefetch(q, 0, 2);
  __builtin_prefetch(q + pls, 0, 2);
  __builtin_prefetch(q + 2 * pls, 0, 2);
  __builtin_prefetch(q + 3 * pls, 0, 2);
}
static inline __attribute__((always_inline, min_vector_width(512))) i64 hpf_mm_micro_ahead(
    int zero, i64 kc, const float* restrict ap, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc, const float* pfr, i64 d0, i64 d1, i64 pfs, i64 pls) {
  hpf_vf c[HPF_MR][HPF_NV];
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) c[i][v] = zero ? (hpf_vf){} : *(const hpf_vf*)(acc + i * ldc + v * HPF_VW);
  i64 p = 0, d = d0;
  for (; p + 32 <= kc; p += 16) {  /* rows p + 16 .. p + 31 into L1: inside the kc rows */
    if (d < d1) hpf_mm_prefetch_l2(pfr + d++ * pfs, pls);
#pragma clang loop unroll_count(4)
    for (int u = 0; u < 16; ++u) hpf_mm_micro_step(p + u, 1, ap, asi, bp, bsk, bsv, c);
  }
  for (; p + 16 <= kc; p += 16) {  /* the last 16 rows or more */
    if (d < d1) hpf_mm_prefetch_l2(pfr + d++ * pfs, pls);
#pragma clang loop unroll_count(4)
    for (int u = 0; u < 16; ++u) hpf_mm_micro_step(p + u, 0, ap, asi, bp, bsk, bsv, c);
  }
  for (; p < kc; ++p) hpf_mm_micro_step(p, 0, ap, asi, bp, bsk, bsv, c);
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) *(hpf_vf*)(acc + i * ldc + v * HPF_VW) = c[i][v];
  return d - d0;
}
/* A ragged tile of mr < HPF_MR rows, exactly: pieces of 4, 2 and 1 rows (no padded rows computed,
   none read past mr), over nv vectors. */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_rest_n(
    i64 mr, int nv, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc) {
  if (mr & 4) {
    hpf_mm_micro_rn(4, nv, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);
    ap += 4 * asi;
    acc += 4 * ldc;
  }
  if (mr & 2) {
    hpf_mm_micro_rn(2, nv, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);
    ap += 2 * asi;
    acc += 2 * ldc;
  }
  if (mr & 1) hpf_mm_micro_rn(1, nv, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);
}
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_rest(
    i64 mr, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc) {
  hpf_mm_micro_rest_n(mr, HPF_NV, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);
}
/* Any mr <= HPF_MR rows and the first `cols` columns (1 <= cols <= HPF_NR, both run-time values),
   computed in whole vectors: a ragged last panel (columns past `cols` up to the next vector are
   computed from whatever B holds there, and stored to acc). */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_cols(
    i64 mr, i64 cols, i64 kc, const float* restrict ap, i64 ask, i64 asi, const float* restrict bp, i64 bsk, i64 bsv,
    float* restrict acc, i64 ldc) {
#define HPF_MM_COLS(n)                                                                  \
  do {                                                                                  \
    if (mr == HPF_MR) hpf_mm_micro_rn(HPF_MR, (n), kc, ap, ask, asi, bp, bsk, bsv, acc, ldc); \
    else hpf_mm_micro_rest_n(mr, (n), kc, ap, ask, asi, bp, bsk, bsv, acc, ldc);        \
  } while (0)
  const i64 nv = (cols + HPF_VW - 1) / HPF_VW;
  if (nv == 1) HPF_MM_COLS(1);
#if HPF_NV > 2
  else if (nv == 2) HPF_MM_COLS(2);
  else if (nv == 3) HPF_MM_COLS(3);
#endif
  else HPF_MM_COLS(HPF_NV);
#undef HPF_MM_COLS
}
#define hpf_mm_micro_ex(kc, ap, ask, asi, bp, acc, ldc) hpf_mm_micro_bx((kc), (ap), (ask), (asi), (bp), HPF_NR, HPF_VW, (acc), (ldc))
#define hpf_mm_micro(kc, ap, bp, acc) hpf_mm_micro_ex((kc), (ap), HPF_MR, 1, (bp), (acc), HPF_NC)
)";
}

const char* gemm_micro_bf16_source() {
  return R"(
#if defined(__AVX512BF16__) && defined(__AVX512F__) && \
    (defined(HPF_PREFER_BF16_DOT) || defined(__znver4__) || defined(__znver5__))
#define HPF_BF16_DOT 1
typedef __bf16 hpf_bf16x32 __attribute__((vector_size(64)));
typedef u32 hpf_u32x16v __attribute__((vector_size(64)));
/* acc[i * ldc + j] += sum over pairs pp < kp of a(i, 2pp) b(2pp, j) + a(i, 2pp+1) b(2pp+1, j):
   vdpbf16ps, each BF16 product exact in FP32, the pair's two products added to the lane in
   turn (round to nearest even, denormals read and written as zero). */
static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_bf16(
    i64 kp, const u16* restrict ap, i64 asi, const u32* restrict bp, float* restrict acc, i64 ldc) {
  hpf_vf c[HPF_MR][HPF_NV];
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) c[i][v] = *(const hpf_vf*)(acc + i * ldc + v * HPF_VW);
  for (i64 pp = 0; pp < kp; ++pp) {
    hpf_bf16x32 b[HPF_NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) b[v] = *(const hpf_bf16x32*)(bp + pp * HPF_NR + v * HPF_VW);
#pragma clang loop unroll(full)
    for (int i = 0; i < HPF_MR; ++i) {
      u32 a2;
      __builtin_memcpy(&a2, ap + i * asi + 2 * pp, 4);
      const hpf_bf16x32 a = (hpf_bf16x32)((hpf_u32x16v){} + a2);
#pragma clang loop unroll(full)
      for (int v = 0; v < HPF_NV; ++v) c[i][v] = __builtin_ia32_dpbf16ps_512(c[i][v], a, b[v]);
    }
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < HPF_MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < HPF_NV; ++v) *(hpf_vf*)(acc + i * ldc + v * HPF_VW) = c[i][v];
}
#endif
)";
}

Expected<GeneratedKernel> generate_c_matmul(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) return Status::invalid("matmul: needs A, B and one output");
  const TensorDesc &A = spec.inputs[0], &B = spec.inputs[1], &Y = spec.outputs[0];
  for (const TensorDesc* t : {&A, &B, &Y})
    if (!is_float(t->dtype)) return Status::unsupported("C codegen: matmul on " + std::string(dtype_name(t->dtype)));
  const bool gemm = spec.attrs.count("gemm") > 0;
  const bool ta = attr_i(spec.attrs, "transA", 0), tb = attr_i(spec.attrs, "transB", 0);
  std::vector<int64_t> sa = A.shape, sb = B.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t M = ta ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t K = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t N = tb ? sb[sb.size() - 2] : sb[sb.size() - 1];
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t br = std::max(ba.size(), bb.size());
  std::vector<int64_t> bo(br, 1);
  for (size_t d = 0; d < br; ++d) {
    const int64_t x = d + ba.size() >= br ? ba[d + ba.size() - br] : 1;
    const int64_t y = d + bb.size() >= br ? bb[d + bb.size() - br] : 1;
    bo[d] = std::max(x, y);
  }
  const int64_t batches = numel(bo);
  const int64_t nb = std::max<int64_t>(1, (M + kRowBlock - 1) / kRowBlock);  // row blocks per matrix
  // Element (i,p) of A and (p,j) of B within one matrix.
  const std::string a_ip = ta ? "p * " + ll(M) + " + i" : "i * " + ll(K) + " + p";
  const std::string b_pj = tb ? "j * " + ll(K) + " + p" : "p * " + ll(N) + " + j";
  const size_t own_inputs = spec.inputs.size() - spec.epilogue_inputs;
  const bool has_c = gemm && own_inputs > 2;
  HPF_ASSIGN_OR_RETURN(std::string epi_ptrs, epilogue_pointers(spec, static_cast<int>(Y.shape.size()) - 1));
  // What turns a sum v at row i, column j of matrix t into the output: alpha, beta * C, the
  // epilogue (statements on v; empty when there is nothing to do).
  std::string finish;
  if (gemm) {
    const float alpha = attr_f(spec.attrs, "alpha", 1.0f), beta = attr_f(spec.attrs, "beta", 1.0f);
    if (alpha != 1.0f) finish += "v = v * " + c_float(alpha) + ";\n";
    if (has_c && beta != 0.0f) {
      const auto& cs = spec.inputs[2].shape;
      std::string idx = numel(cs) == 1 ? "0" : cs.size() == 1 ? "j" : (cs[0] == 1 ? "j" : (cs[1] == 1 ? "i" : "i * " + ll(N) + " + j"));
      finish += "v = v + " + c_float(beta) + " * " + c_load(spec.inputs[2].dtype, "C[" + idx + "]") + ";\n";
    }
  }
  // The epilogue's operands: a scalar, one per column, or one per element of Y.
  HPF_ASSIGN_OR_RETURN(std::string epi, c_epilogue(spec, "v", [&](int k) {
    const int kind = epilogue_operand_kind(spec.inputs[k].shape, Y.shape, static_cast<int>(Y.shape.size()) - 1);
    const std::string idx = kind == 0 ? "0" : kind == 1 ? "j" : "(t * " + ll(M) + " + i) * " + ll(N) + " + j";
    return c_load(spec.inputs[k].dtype, "P" + std::to_string(k) + "[" + idx + "]");
  }));
  finish += epi;
  std::ostringstream s;
  s << c_prelude() << gemm_micro_source() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(A.dtype) << "* restrict A = (const " << c_storage_type(A.dtype) << "*)args[0];\n"
    << "  const " << c_storage_type(B.dtype) << "* restrict B = (const " << c_storage_type(B.dtype) << "*)args[1];\n";
  if (has_c)
    s << "  const " << c_storage_type(spec.inputs[2].dtype) << "* restrict C = (const " << c_storage_type(spec.inputs[2].dtype)
      << "*)args[2];\n";
  s << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[" << spec.inputs.size()
    << "];\n"
    << epi_ptrs;
  if (A.dtype == DType::F32 && !ta && Y.dtype == DType::F32 && M > 0 && N > 0 && K > 0) {
    // FP32 rows of A and an FP32 Y, which holds the sums: an item is one NC block of columns of one
    // matrix (or several: gemm_wide_blocks) and as many rows as leave kBlockItems items or more
    // (rows split no finer than kBlockMinRows: each part packs the block again). The items of one
    // matrix and row part that a range holds make a run, done slice by slice of K (the whole K up
    // to kBlockKCMax, or kGemmSliceKC for few rows; else even slices) over all its blocks, so that
    // the rows' slice of A serves every block. Per slice a block's B is packed once into NR-wide
    // panels (on the stack up to kBlockKCStack rows, else in the thread's scratch buffer) and
    // serves every row tile, each tile's sums in registers across the slice and added into Y across
    // slices, A's rows read in place. An FP32 B of rows (not transposed) is packed by the first row
    // tile as it reads it (where that tile is whole and writes Y itself), and the run's next block
    // is prefetched into L2 meanwhile, a few rows by each full tile (hpf_mm_micro_ahead): the
    // packing tile then finds it there instead of waiting on L3 (C harness, one core, against the
    // same schedule without: 2048^3 113-116 -> 107-109 ms, 128x768x3072 4.0-4.1 -> 3.8). A ragged
    // last panel goes through a tile on the stack (its columns past N are not Y's), and so does
    // every panel where Y's rows are not aligned whole vectors (N % 16 != 0, or Y itself).
    const int64_t blocks = (N + kGemmNC - 1) / kGemmNC;
    const int64_t parts = std::max<int64_t>(
        1, std::min(M / kBlockMinRows, (kBlockItems + blocks * batches - 1) / (blocks * batches)));
    const int64_t RT = ((M + parts - 1) / parts + kGemmMR - 1) / kGemmMR * kGemmMR, tiles = (M + RT - 1) / RT;
    const int64_t kc_max = RT <= kGemmSliceRows ? kGemmSliceKC : kBlockKCMax;
    const int64_t slices = (K + kc_max - 1) / kc_max, KC = (K + slices - 1) / slices;
    // Many rows: wide blocks where K is deep (c_gemm_micro.hpp).
    const int64_t wide = RT > kGemmSliceRows ? gemm_wide_blocks(N, K, tiles * batches) : 1;
    const int64_t NB = wide * kGemmNC, groups = (N + NB - 1) / NB;
    const int64_t group = wide > 1 ? kGemmGroupTiles : 1;
    if (KC * wide <= kBlockKCStack)
      s << "  float bpack[" << KC * NB << "] __attribute__((aligned(64)));\n"
        << "  const i64 kcs = " << ll(KC) << ";\n";
    else  // the thread's scratch buffer, else shallower slices on the stack
      s << "  float bstack[" << kBlockKCStack << " * HPF_NC] __attribute__((aligned(64)));\n"
        << "  float* restrict bpack = (float*)hpf_scratch(" << ll(KC * NB * 4) << ");\n"
        << "  i64 kcs = " << ll(KC) << ";\n"
        << "  if (!bpack) {\n    bpack = bstack;\n    kcs = " << ll(kBlockKCStack / wide) << ";\n  }\n";
    const bool pack_first = !tb && B.dtype == DType::F32 && N % 16 == 0;
    // The run's next block prefetched into L2 as the tiles go (64-column blocks: wide ones, whose
    // B the L2 does not hold anyway, ran 0.5-1% faster without).
    const bool ahead = pack_first && wide == 1;
    s << "  float tmp[HPF_MR * HPF_NR] __attribute__((aligned(64)));\n"
      // Y's rows hold the sums where they are whole vectors, aligned (the Session's buffers are;
      // a caller's own may not be)
      << "  const int ya = " << (N % 16 == 0 ? "((__UINTPTR_TYPE__)Y & (sizeof(hpf_vf) - 1)) == 0" : "0") << ";\n"
      << "  for (i64 run = begin; run < end;) {\n"
      << "    const i64 t = run / " << ll(groups * tiles) << ", g0 = run % " << ll(groups * tiles) << " / " << ll(groups)
      << " * " << ll(groups) << ";\n"
      << "    const i64 rend = t * " << ll(groups * tiles) << " + g0 + " << ll(groups) << " < end ? t * " << ll(groups * tiles)
      << " + g0 + " << ll(groups) << " : end;\n"
      << "    const i64 a0 = " << batch_offset(ba, bo, M * K) << ", b0 = " << batch_offset(bb, bo, K * N) << ";\n"
      << "    const i64 ic = g0 / " << ll(groups) << " * " << ll(RT) << ", mc = " << ll(M) << " - ic < " << ll(RT) << " ? "
      << ll(M) << " - ic : " << ll(RT) << ";\n"
      << "    for (i64 pc = 0; pc < " << ll(K) << "; pc += kcs) {\n"
      << "      const i64 kc = " << ll(K) << " - pc < kcs ? " << ll(K) << " - pc : kcs;\n"
      << "      for (i64 w = run; w < rend; ++w) {\n"
      << "        const i64 jc = w % " << ll(groups) << " * " << ll(NB) << ", nc = " << ll(N) << " - jc < " << ll(NB) << " ? "
      << ll(N) << " - jc : " << ll(NB) << ";\n"
      << "        float* restrict yb = Y + (t * " << ll(M) << " + ic) * " << ll(N) << " + jc;\n";
    // B[pc.., jc..] into NR-wide panels of kc rows, k-major, zero past nc: an FP32 B of rows (not
    // transposed) by the first row tile as it reads them (pack_first), where that tile is whole,
    // over a whole block, and writes an aligned Y; else in a pass of its own.
    s << "        const int pk = " << (pack_first ? "ya && nc == " + ll(NB) + " && mc >= HPF_MR" : "0") << ";\n";
    if (ahead)
      // The block this thread packs next: the run's next one, else its first at the next slice,
      // else the next item's first slice (the next range's, which the thread most often runs
      // next: plugins/cpu/thread_pool.hpp). Its rows are prefetched into L2 by this block's full
      // tiles, shared out among them; a ragged block is left to its packing tile.
      s << "        i64 nx = w + 1, npc = pc;\n"
        << "        if (w + 1 == rend) {\n"
        << "          if (pc + kcs < " << ll(K) << ") {\n            nx = run;\n            npc = pc + kcs;\n          } else {\n"
        << "            npc = 0;\n          }\n        }\n"
        << "        const i64 nj = nx % " << ll(groups) << " * HPF_NC;\n"
        << "        const i64 pfrows = nx < " << ll(batches * tiles * groups) << " && nj + HPF_NC <= " << ll(N) << " ? ("
        << ll(K) << " - npc < kcs ? " << ll(K) << " - npc : kcs) : 0;\n"
        << "        const float* pfr = B;\n"
        << "        if (pfrows) {\n"
        << "          const i64 t = nx / " << ll(groups * tiles) << ";\n"
        << "          pfr = B + " << batch_offset(bb, bo, K * N) << " + npc * " << ll(N) << " + nj;\n"
        << "        }\n"
        << "        const i64 pft = mc / HPF_MR * (HPF_NC / HPF_NR) - (pk ? HPF_NC / HPF_NR : 0);\n"
        << "        const i64 pfper = pft > 0 ? (pfrows + pft - 1) / pft : 0;\n"
        << "        i64 pfdone = 0;\n";
    s << "        if (!pk)\n";
    s << pack_b(tb, B.dtype, b_pj, "kc", ll(NB), K, N, kPackPrefetch, "        ");
    // Wide blocks: the row tiles in groups of kGemmGroupTiles, each panel for every tile of the
    // group in turn (c_gemm_micro.hpp); the first tile still packs each panel before the others
    // of its group read it.
    s << "        for (i64 ig = 0; ig < mc; ig += " << ll(group * kGemmMR) << ") {\n"
      << "          const i64 ie = mc - ig < " << ll(group * kGemmMR) << " ? mc : ig + " << ll(group * kGemmMR) << ";\n"
      << "          for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
      << "          for (i64 ir = ig; ir < ie; ir += HPF_MR) {\n"
      << "            const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
      << "            const float* restrict ar = A + a0 + (ic + ir) * " << ll(K) << " + pc;\n"
      << "            float* restrict yt = yb + ir * " << ll(N) << ";\n"
      << "            const float* restrict bp = bpack + jp * kc;\n"
      << "            if (ya && jp + HPF_NR <= nc) {\n"
      << "              ";
    if (pack_first)  // (only then: B is FP32)
      s << "if (pk && ir == 0) hpf_mm_micro_pack(pc == 0, kc, ar, " << ll(K) << ", B + b0 + pc * " << ll(N) << " + jc + jp, "
        << ll(N) << ", bpack + jp * kc, yt + jp, " << ll(N) << ", " << kPackPrefetch << ");\n"
        << "              else if (mr == HPF_MR)\n"
        << (ahead ? "                pfdone += " : "                ") << "hpf_mm_micro_ahead(pc == 0, kc, ar, " << ll(K)
        << ", bp, HPF_NR, HPF_VW, yt + jp, " << ll(N)
        << (ahead ? ", pfr, pfdone, pfdone + pfper < pfrows ? pfdone + pfper : pfrows, " : ", B, 0, 0, ") << ll(N) << ", 16);\n";
    else
      s << "if (mr == HPF_MR) hpf_mm_micro_rnz(pc == 0, HPF_MR, HPF_NV, kc, ar, 1, " << ll(K) << ", bp, HPF_NR, HPF_VW, yt + jp, "
        << ll(N) << ", " << kBlockPrefetch << ", 0);\n";
    s << "              else {  // a ragged tile: exactly mr rows, from zero in the first slice\n"
      << "                if (pc == 0) for (i64 r = 0; r < mr; ++r) for (i64 j = 0; j < HPF_NR; ++j) yt[r * " << ll(N) << " + jp + j] = 0.0f;\n"
      << "                hpf_mm_micro_rest(mr, kc, ar, 1, " << ll(K) << ", bp, HPF_NR, HPF_VW, yt + jp, " << ll(N) << ");\n"
      << "              }\n"
      << "            } else {  // a ragged last panel, or rows of Y not aligned to vectors: through tmp\n"
      << "              for (i64 r = 0; r < HPF_MR; ++r)\n"
      << "                for (i64 j = 0; j < HPF_NR; ++j) tmp[r * HPF_NR + j] = pc > 0 && r < mr && jp + j < nc ? yt[r * " << ll(N)
      << " + jp + j] : 0.0f;\n"
      << "              hpf_mm_micro_cols(mr, nc - jp < HPF_NR ? nc - jp : HPF_NR, kc, ar, 1, " << ll(K) << ", bp, HPF_NR, HPF_VW, tmp, HPF_NR);\n"
      << "              for (i64 r = 0; r < mr; ++r)\n"
      << "                for (i64 j = 0; j < HPF_NR && jp + j < nc; ++j) yt[r * " << ll(N) << " + jp + j] = tmp[r * HPF_NR + j];\n"
      << "            }\n"
      << "          }\n"
      << "        }\n";
    if (!finish.empty())
      s << "        if (pc + kc == " << ll(K) << ")  // the item's sums are whole\n"
        << "          for (i64 ii = 0; ii < mc; ++ii) {\n"
        << "            const i64 i = ic + ii;\n"
        << "            for (i64 jj = 0; jj < nc; ++jj) {\n"
        << "              const i64 j = jc + jj;\n"
        << "              (void)i;\n"
        << "              (void)j;\n"
        << "              float v = yb[ii * " << ll(N) << " + jj];\n"
        << finish << "              yb[ii * " << ll(N) << " + jj] = v;\n"
        << "            }\n"
        << "          }\n";
    s << "      }\n    }\n    run = rend;\n  }\n}\n";
    return GeneratedKernel{name, s.str(), batches * tiles * groups, 1};
  }
  s << "  float bpack[HPF_KC * HPF_NC] __attribute__((aligned(64)));\n"
    << "  float apack[HPF_KC * HPF_MR] __attribute__((aligned(64)));\n"
    << "  float acc[HPF_MC * HPF_NC] __attribute__((aligned(64)));\n"
    // One batch matrix at a time: the range may start or end inside one.
    << "  for (i64 w = begin; w < end;) {\n"
    << "    const i64 t = w / " << ll(nb) << ", wend = (t + 1) * " << ll(nb) << " < end ? (t + 1) * " << ll(nb) << " : end;\n"
    << "    const i64 a0 = " << batch_offset(ba, bo, M * K) << ", b0 = " << batch_offset(bb, bo, K * N) << ";\n"
    << "    const i64 r0 = (w - t * " << ll(nb) << ") * " << kRowBlock << "LL;\n"
    << "    const i64 r1 = (wend - t * " << ll(nb) << ") * " << kRowBlock << "LL < " << ll(M) << " ? (wend - t * " << ll(nb)
    << ") * " << kRowBlock << "LL : " << ll(M) << ";\n"
    << "    w = wend;\n"
    << "    for (i64 ic = r0; ic < r1; ic += HPF_MC) {\n"
    << "      const i64 mc = r1 - ic < HPF_MC ? r1 - ic : HPF_MC;\n"
    << "      for (i64 jc = 0; jc < " << ll(N) << "; jc += HPF_NC) {\n"
    << "        const i64 nc = " << ll(N) << " - jc < HPF_NC ? " << ll(N) << " - jc : HPF_NC;\n"
    << "        for (i64 x = 0; x < HPF_MC * HPF_NC; ++x) acc[x] = 0.0f;\n"
    << "        for (i64 pc = 0; pc < " << ll(K) << "; pc += HPF_KC) {\n"
    << "          const i64 kc = " << ll(K) << " - pc < HPF_KC ? " << ll(K) << " - pc : HPF_KC;\n";
  s << pack_b(tb, B.dtype, b_pj, "HPF_KC", "HPF_NC", K, N, 0, "          ");
  s << "          for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
    << "            const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n";
  // Pack A[ic+ir.., pc..] k-major (MR values per k), zero rows past mr.
  if (ta)
    s << "            for (i64 q = 0; q < kc; ++q) { const i64 p = pc + q;\n"
      << "              for (i64 ii = 0; ii < HPF_MR; ++ii) { const i64 i = ic + ir + ii; apack[q * HPF_MR + ii] = ii < mr ? "
      << c_load_operand(A.dtype, "A[a0 + " + a_ip + "]") << " : 0.0f; }\n"
      << "            }\n";
  else {
    if (A.dtype == DType::F32)
      // FP32 rows need no packing: a block is read in place (MR row streams, one broadcast each
      // per k), which saves a copy of A per column block; a ragged one exactly (pieces of 4, 2, 1).
      s << "            {\n"
        << "              const float* restrict ar = A + a0 + (ic + ir) * " << ll(K) << " + pc;\n"
        << "              for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
        << "                if (mr == HPF_MR) hpf_mm_micro_ex(kc, ar, 1, " << ll(K) << ", bpack + jp * HPF_KC, acc + ir * HPF_NC + jp, HPF_NC);\n"
        << "                else hpf_mm_micro_rest(mr, kc, ar, 1, " << ll(K) << ", bpack + jp * HPF_KC, HPF_NR, HPF_VW, acc + ir * HPF_NC + jp, HPF_NC);\n"
        << "              continue;\n"
        << "            }\n";
    else
      // A full MR block row by row across k: MR loads and one contiguous store of MR values per k
      // (the vectoriser would otherwise turn the strided stores of a column-wise loop into scatters).
      s << "            if (mr == HPF_MR) {\n"
        << "#pragma clang loop vectorize(disable)\n"
        << "              for (i64 q = 0; q < kc; ++q) { const i64 p = pc + q;\n"
        << "#pragma clang loop unroll(full)\n"
        << "                for (i64 ii = 0; ii < HPF_MR; ++ii) { const i64 i = ic + ir + ii; apack[q * HPF_MR + ii] = "
        << c_load_operand(A.dtype, "A[a0 + " + a_ip + "]") << "; }\n"
        << "              }\n"
        << "            } else {  // a ragged block column by column (the rows past mr are not read)\n"
        << "              for (i64 ii = 0; ii < mr; ++ii) {\n"
        << "                const i64 i = ic + ir + ii;\n"
        << "                for (i64 q = 0; q < kc; ++q) { const i64 p = pc + q; apack[q * HPF_MR + ii] = "
        << c_load_operand(A.dtype, "A[a0 + " + a_ip + "]") << "; }\n"
        << "              }\n"
        << "            }\n";
  }
  s << "            for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
    << "              if (mr == HPF_MR) hpf_mm_micro(kc, apack, bpack + jp * HPF_KC, acc + ir * HPF_NC + jp);\n"
    << "              else hpf_mm_micro_rest(mr, kc, apack, HPF_MR, 1, bpack + jp * HPF_KC, HPF_NR, HPF_VW, acc + ir * HPF_NC + jp, HPF_NC);\n"
    << "          }\n"
    << "        }\n"
    // The tile is complete: alpha, beta * C, output format.
    << "        for (i64 ii = 0; ii < mc; ++ii) {\n"
    << "          const i64 i = ic + ii;\n"
    << "          " << c_storage_type(Y.dtype) << "* restrict y = Y + (t * " << ll(M) << " + i) * " << ll(N) << " + jc;\n"
    << "          for (i64 jj = 0; jj < nc; ++jj) {\n"
    << "            const i64 j = jc + jj;\n"
    << "            (void)j;\n"
    << "            float v = acc[ii * HPF_NC + jj];\n"
    << finish << "            y[jj] = " << c_store(Y.dtype, "v") << ";\n"
    << "          }\n        }\n      }\n    }\n  }\n}\n";
  // A range should hold enough rows to pay for packing B: >= 60 rows, more when N*K is small.
  const int64_t grain_rows = std::max<int64_t>(60, 65536 / std::max<int64_t>(1, N * K));
  return GeneratedKernel{name, s.str(), batches * (M > 0 ? nb : 0), (grain_rows + kRowBlock - 1) / kRowBlock};
}

}  // namespace hpf::jit
