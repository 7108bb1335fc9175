// MatMul / Gemm with constant weights in a low-precision format, FP32 compute ("matmul_wq").
//
// The runtime packs the weights once (runtime/session/weight_packing.hpp) into panels of 16
// output columns, k-major inside a panel, so one row k of a panel is one 16-lane vector:
//   f32  float[P][K][16]     bf16 / f16  u16[P][K][16]
//   i8, i4  blocks of B rows (B = 4, 8; K padded with rows of q = 0): the u32 of column j holds
//        rows Bb..Bb+B-1, row Bb + r at bits (32 / B) r: i8 as its byte (two's complement), i4
//        as q + 8 (0..15), so that one 64-byte load gives B rows of the panel. The panels come in
//        items of 4 (the GEMV's work item; the last may have fewer), an item's blocks
//        interleaved: block b of its panels one after the other (wq_at, packed_unit), so that
//        the GEMV reads one stream (INT4 4096x4096 on one Zen 4 core: 0.53 -> 0.45 ms in a C
//        harness, against a stream per panel). For i4 with AVX-512 row 0 is one vpermps of a
//        table of -8..7 (it reads each lane's low 4 bits; no mask, no convert), rows 1-3 the
//        float trick (below), rows 4-7 a shift and a vpermps. (Rows as 64-bit words, broadcast
//        and shifted per lane, took a broadcast and a variable shift per row: 0.61 -> 0.55 ms.)
// with P = ceil(N / 16) and the columns past N zero (q = 0). Scales (input 2, F32): i8 one per
// column, [P][16]; i4 one per column and group of `group` rows of K, 16 per panel and group in
// the blocks' order (a group in place of a block); the float formats take none (a one-element
// placeholder).
//
// Inputs: A (any float format, [.., M, K] row-major, not transposed), W (U8 bytes), S (F32),
// optional C (Gemm bias, broadcast as ONNX says), then the epilogue's inputs (KernelSpec::epilogue:
// the consumers lowering fused, applied to each output before it is stored); output Y [.., M, N]. Attributes: wformat
// (f32|bf16|f16|i8|i4), k, n, group (i4), alpha/beta (Gemm), out_scale (optional: the output is
// fake-quantised to INT8 with that per-tensor scale, as an int8 plan's emulation stores it).
//
// Two schedules, chosen by M:
//   M <= 8 (GEMV, memory-bound): work item = 4 panels (64 columns); the panels stream once,
//     dequantised in registers, accumulating in FP32: 2..8 rows at once (gemv_rows; 5..8 only
//     there, else the GEMM), one row at a time (M <= 4) where those rows would not fit the
//     stack or i4 groups are not whole blocks. One row: per-column (i8) and per-group (i4)
//     scales are factored out of the sums, i8's once at the end, i4's per group as s * sum a*q,
//     so the inner loop is a load, a decode and an FMA (gemv_blocked for i8 / i4); 2..8 rows
//     likewise (gemv_rows).
//   M > 8 (or 5..8 where gemv_rows does not apply; GEMM): work item = up to 132 rows (M split
//     evenly) x 128 columns (512 from 4 row tiles); the FP32 GEMM's
//     microkernel (gemm_micro_source); B is dequantised exactly (q * s, the emulation's values)
//     while its KC x NC block is packed, or read in place (F32); A rows in place (F32) or
//     converted to FP32 rows per block; F32 weights and A with an F32 Y of whole 64-column
//     blocks: each row tile runs the whole depth of K in registers, B's panels from L2. BF16
//     weights with a BF16 A, where the host prefers the BF16 dot product (HPF_BF16_DOT,
//     c_gemm_micro.hpp): B packed in pairs of k as stored, A read in place, vdpbf16ps (products
//     exact in FP32, as the FP32 kernel's on the same values).
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

namespace {

constexpr int64_t kGemvMaxRows = 4;
// The GEMV of 2..8 rows at once (gemv_rows; 5..8 where it applies, else the GEMM) holds the rows
// of A as FP32 on the stack, at most this many bytes (else each row streams the weights on its
// own, or the GEMM runs).
constexpr int64_t kGemvRowsMax = 8;
constexpr int64_t kGemvRowsStackBytes = 128 * 1024;
constexpr int64_t kColGroup = 128;    // GEMM columns per work item (two NC blocks)
constexpr int64_t kPanelsPerItem = 4;  // GEMV panels per work item
constexpr int64_t kWholeKItems = 32;   // the FP32 whole-K GEMM's work items, at least (as M allows)
// The GEMV prefetches its weights this far ahead, one cache line at a time: the hardware
// prefetcher alone left the 16-bit and integer formats 10-25% short of the bandwidth the FP32
// GEMV gets on one core (4096x4096 on Zen 5: F16 0.96 -> 0.80 ms, INT8 0.53 -> 0.42, INT4 0.45
// -> 0.33; FP32 unchanged). The block formats (one stream per item): each line 1024 bytes ahead
// into L1 and 4096 bytes ahead into L2 (prefetcht1): on the Intel AMX VM, weights in memory, INT8
// 1.12 -> 1.00 ms and INT4 0.70 -> 0.69 (at the memory's bandwidth) in a C harness, 3
// alternations, against 2048 bytes into L1 alone, which 4096-16384 into L1 alone did worse than
// (on Zen 4 2048-8192 alike). The row formats (a stream per panel): on Zen 4 (__znver4__) 256
// bytes, which made FP32, BF16 and F16 5-15% faster than 2048 (FP32 2.4 -> 2.2 ms, BF16 1.31 ->
// 1.11, F16 1.35 -> 1.15; none at all about as 256), elsewhere the Zen 5 measurement's 2048.
constexpr int64_t kGemvBlockPrefetchL1 = 1024, kGemvBlockPrefetchL2 = 4096;
// The block formats' GEMV reads an item's blocks in this many streams at once (K in as many
// parts, chunk by chunk), each 64 KiB or more from the next in a 4096x4096: one stream left the
// core's prefetchers idle at each 4 KiB page; with four, INT8 4096x4096 from memory on the
// Intel AMX VM took 1.03 ms instead of 1.19 (16.3 GB/s, the FP32 GEMV's bandwidth; a C
// harness, weights rotated over 1 GiB), against 1.11 with two; from L3 3% slower (0.58 ms).
// With AVX-512; 256-bit vectors take fewer (gemv_blocked: their sums need twice the registers).
constexpr int64_t kGemvStreams = 4;
// The i4 GEMV's scales (a fifth of its bytes with F32 scales per 32 rows), prefetched this many
// chunks ahead into L1 and into L2 as each chunk's are read: without, the scale streams' misses
// left INT4 4096x4096 from memory at 13.7 GB/s (the weights' own prefetch keeps INT8 at 16.6); a
// C harness on the Intel AMX VM, 3 alternations, 0.77 -> 0.73 ms (8 chunks ahead: 0.79).
constexpr int64_t kGemvScalePrefetchL1 = 4, kGemvScalePrefetchL2 = 16;
const char* const kGemvRowPrefetch =
    "#if defined(__znver4__)\n#define WQ_PF 256\n#else\n#define WQ_PF 2048\n#endif\n";

// Loads of one panel row as 16 floats, per format. `wq_row(p, k)` reads panel p, row k; for
// i4 it gives q (the signed value), as `wq_i4(block, r)` does for row r of a loaded block.
// `wq_sc(p)`: the 16 scales at p (wq_s_t, F32 or, with `bf16_scales`, BF16) as floats.
std::string row_loader(const std::string& f, int64_t K, int64_t P, bool bf16_scales) {
  std::ostringstream s;
  s << "typedef i32 wq_i32x16 __attribute__((vector_size(64), aligned(4)));\n"
    << "typedef u16 wq_u16x16 __attribute__((vector_size(32), aligned(2)));\n";
  if (bf16_scales)
    s << "typedef u16 wq_s_t;\n"
      << "static inline __attribute__((always_inline)) hpf_f32x16 wq_sc(const wq_s_t* restrict p) {\n"
      << "  return (hpf_f32x16)(__builtin_convertvector(*(const wq_u16x16*)p, hpf_u32x16) << 16);\n}\n";
  else
    s << "typedef float wq_s_t;\n"
      << "static inline __attribute__((always_inline)) hpf_f32x16 wq_sc(const wq_s_t* restrict p) {\n"
      << "  return *(const hpf_f32x16*)p;\n}\n";
  if (f == "i4" || f == "i8")  // the 16-word unit of panel p's block (or scale group) b of nb
    s << "static inline __attribute__((always_inline)) i64 wq_at(i64 p, i64 b, i64 nb) {\n"
      << "  const i64 it = p >> 2, npi = " << L(P) << " - 4 * it < 4 ? " << L(P) << " - 4 * it : 4;\n"
      << "  return it * 4 * nb + b * npi + (p & 3);\n}\n";
  if (f == "i8")  // row r (0..3) of a block x holding q + 128 (xs = x >> 16): the float trick
    s << "static inline __attribute__((always_inline)) hpf_f32x16 wq_i8c(hpf_u32x16 x, hpf_u32x16 xs, int r) {\n"
      << "  const int h = r & 1;\n"
      << "  const hpf_u32x16 m = ((r < 2 ? x : xs) & (255u << (8 * h))) | ((u32)(150 - 8 * h) << 23);\n"
      << "  return (hpf_f32x16)m - (float)((1 << (23 - 8 * h)) + 128);\n}\n";
  if (f == "i4")  // row r (0..7) of a block: each lane's bits 4r..4r+3 as q = u - 8
    s << "static inline __attribute__((always_inline)) hpf_f32x16 wq_i4(hpf_u32x16 x, i64 r) {\n"
      << "  const hpf_u32x16 u = x >> (u32)(4 * r);\n"
      << "#if defined(__AVX512F__)\n"  // vpermps reads the low 4 bits of each index
      << "  const hpf_f32x16 q = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};\n"
      << "  return __builtin_ia32_permvarsf512(q, (wq_i32x16)u);\n"
      << "#else\n"
      << "  return __builtin_convertvector((wq_i32x16)(u & 15u), hpf_f32x16) - 8.0f;\n"
      << "#endif\n"
      << "}\n"
      // Row r of a loaded block, r a constant: rows 1..3 by float arithmetic instead, which
      // spreads the decode over the FP adders (the GEMV 4096x4096 on one Zen 4 core 0.54 ->
      // 0.51 ms): (x & 15 << 4r) | the bits of 2^(23 - 4r) is the float 2^(23 - 4r) + u (u at
      // mantissa bits 4r.., whose unit is 1 there), minus 2^(23 - 4r) + 8 is q, exactly.
      << "static inline __attribute__((always_inline)) hpf_f32x16 wq_i4c(hpf_u32x16 x, int r) {\n"
      << "  if (r >= 1 && r <= 3) {\n"
      << "    const hpf_u32x16 m = (x & (15u << (4 * r))) | ((u32)(150 - 4 * r) << 23);\n"
      << "    return (hpf_f32x16)m - (float)((1 << (23 - 4 * r)) + 8);\n"
      << "  }\n"
      << "  return wq_i4(x, r);\n"
      << "}\n";
  s << "static inline __attribute__((always_inline)) hpf_f32x16 wq_row(const void* restrict W, i64 p, i64 k) {\n";
  if (f != "i4" && f != "i8") s << "  const i64 r = p * " << L(K) << " + k;\n";
  if (f == "f32") {
    s << "  return *(const hpf_f32x16*)((const float*)W + r * 16);\n";
  } else if (f == "bf16") {
    s << "  hpf_u32x16 u = __builtin_convertvector(*(const wq_u16x16*)((const u16*)W + r * 16), hpf_u32x16);\n"
      << "  return (hpf_f32x16)(u << 16);\n";
  } else if (f == "f16") {
    s << "#if defined(__F16C__) || defined(__AVX512FP16__)\n"
      << "  typedef _Float16 wq_h16 __attribute__((vector_size(32), aligned(2)));\n"
      << "  return __builtin_convertvector(*(const wq_h16*)((const u16*)W + r * 16), hpf_f32x16);\n"
      << "#else\n"
      << "  hpf_f32x16 v; const u16* h = (const u16*)W + r * 16;\n"
      << "  for (int j = 0; j < 16; ++j) v[j] = hpf_f16_f32(h[j]);\n"
      << "  return v;\n"
      << "#endif\n";
  } else if (f == "i8") {  // row k of block k / 4: byte k % 4 of each lane
    s << "  const hpf_u32x16 x = *(const hpf_u32x16*)((const u32*)W + wq_at(p, k >> 2, " << L((K + 3) / 4) << ") * 16);\n"
      << "  return __builtin_convertvector((wq_i32x16)(x << (u32)(24 - 8 * (k & 3))) >> 24, hpf_f32x16);\n";
  } else {  // i4: row k of block k / 8
    s << "  return wq_i4(*(const hpf_u32x16*)((const u32*)W + wq_at(p, k >> 3, " << L((K + 7) / 8) << ") * 16), k & 7);\n";
  }
  s << "}\n";
  return s.str();
}

// The i4 GEMV's block of 4 panels x 8 rows, denormal decode, with 256-bit vectors (AVX2 without
// AVX-512, WQ_DENORM): the sums t[0..3] as 8 ymm, rows 0-3 from x & 15 << 4r, rows 4-7 from
// (x >> 16) & 15 << 4(r - 4) (wq_u), two masks in registers and two read with the AND, the rows'
// a as 4 broadcasts at a time: 16 ymm, no spill. x >> 16 is a second load 2 bytes on (its lanes'
// low halves are x's high halves; the AND drops the rest), but for the block's last 8 columns,
// whose load would read past the block: Zen 3 spreads the ANDs over all four FP pipes, the two
// FMA pipes among them, and the shifts took two of them more (a block in L1, 8 shifts -> 1:
// 48-51 -> 41-45 cycles; the 4096x4096 GEMV from memory, one thread in a C harness,
// 1.015-1.049x, median of seven 1.037x; bench/README.md, session 35). In C clang kept x and
// x >> 16 of all 4 panels live (16 ymm) and spilled the sums: Zen 3, GEMV 4096x4096 one thread
// in a C harness, the weights in L2 0.71 -> 0.58 ms, from memory 0.68-0.71 -> 0.56 (llvm-mca: 68
// -> 50 cycles of FP work per block; the floor is 64 FMAs on two pipes, 32). Each line
// prefetched 4 KiB ahead (from memory 0.58 ms at 1 KiB ahead, 0.55-0.56 at 2-6 KiB, 0.57 at 8,
// 0.64-0.66 with none).
// Summing each 4 rows with vmulps + 3 FMAs, then one vaddps into the sums (a shorter chain of
// dependent FMAs) took 0.86-0.93 ms.
const char* const kI4BlockAvx2 = R"(#if defined(WQ_DENORM) && defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
#define WQ_I4_ASM 1
typedef float wq_f8 __attribute__((vector_size(32)));
static const u32 wq_i4_masks[32] __attribute__((aligned(32))) = {
  15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 240u, 240u, 240u, 240u, 240u, 240u, 240u, 240u,
  3840u, 3840u, 3840u, 3840u, 3840u, 3840u, 3840u, 3840u, 61440u, 61440u, 61440u, 61440u, 61440u, 61440u, 61440u, 61440u};
#define WQ_I4_F(T) \
  "vpand %%ymm12, %%ymm14, %%ymm15\n\tvfmadd231ps %%ymm15, %%ymm8, %[" #T "]\n\t" \
  "vpand %%ymm13, %%ymm14, %%ymm15\n\tvfmadd231ps %%ymm15, %%ymm9, %[" #T "]\n\t" \
  "vpand 64(%[m]), %%ymm14, %%ymm15\n\tvfmadd231ps %%ymm15, %%ymm10, %[" #T "]\n\t" \
  "vpand 96(%[m]), %%ymm14, %%ymm15\n\tvfmadd231ps %%ymm15, %%ymm11, %[" #T "]\n\t"
#define WQ_I4_LO(q, T) "vmovdqu " #q "*32(%[x]), %%ymm14\n\t" WQ_I4_F(T)
#define WQ_I4_HI(q, T) "vmovdqu " #q "*32+2(%[x]), %%ymm14\n\t" WQ_I4_F(T)
static inline __attribute__((always_inline)) void wq_i4_block(const u32* x, const float* a, hpf_f32x16* t) {
  wq_f8 t0 = __builtin_shufflevector(t[0], t[0], 0, 1, 2, 3, 4, 5, 6, 7), t1 = __builtin_shufflevector(t[0], t[0], 8, 9, 10, 11, 12, 13, 14, 15);
  wq_f8 t2 = __builtin_shufflevector(t[1], t[1], 0, 1, 2, 3, 4, 5, 6, 7), t3 = __builtin_shufflevector(t[1], t[1], 8, 9, 10, 11, 12, 13, 14, 15);
  wq_f8 t4 = __builtin_shufflevector(t[2], t[2], 0, 1, 2, 3, 4, 5, 6, 7), t5 = __builtin_shufflevector(t[2], t[2], 8, 9, 10, 11, 12, 13, 14, 15);
  wq_f8 t6 = __builtin_shufflevector(t[3], t[3], 0, 1, 2, 3, 4, 5, 6, 7), t7 = __builtin_shufflevector(t[3], t[3], 8, 9, 10, 11, 12, 13, 14, 15);
  __asm__(
    "prefetcht0 4096(%[x])\n\tprefetcht0 4160(%[x])\n\tprefetcht0 4224(%[x])\n\tprefetcht0 4288(%[x])\n\t"
    "vmovdqa (%[m]), %%ymm12\n\tvmovdqa 32(%[m]), %%ymm13\n\t"
    "vbroadcastss (%[a]), %%ymm8\n\tvbroadcastss 4(%[a]), %%ymm9\n\tvbroadcastss 8(%[a]), %%ymm10\n\tvbroadcastss 12(%[a]), %%ymm11\n\t"
    WQ_I4_LO(0, t0) WQ_I4_LO(1, t1) WQ_I4_LO(2, t2) WQ_I4_LO(3, t3) WQ_I4_LO(4, t4) WQ_I4_LO(5, t5) WQ_I4_LO(6, t6) WQ_I4_LO(7, t7)
    "vbroadcastss 16(%[a]), %%ymm8\n\tvbroadcastss 20(%[a]), %%ymm9\n\tvbroadcastss 24(%[a]), %%ymm10\n\tvbroadcastss 28(%[a]), %%ymm11\n\t"
    WQ_I4_HI(0, t0) WQ_I4_HI(1, t1) WQ_I4_HI(2, t2) WQ_I4_HI(3, t3) WQ_I4_HI(4, t4) WQ_I4_HI(5, t5) WQ_I4_HI(6, t6)
    "vmovdqu 7*32(%[x]), %%ymm14\n\tvpsrld $16, %%ymm14, %%ymm14\n\t" WQ_I4_F(t7)
    : [t0] "+x"(t0), [t1] "+x"(t1), [t2] "+x"(t2), [t3] "+x"(t3), [t4] "+x"(t4), [t5] "+x"(t5), [t6] "+x"(t6), [t7] "+x"(t7)
    : [x] "r"(x), [a] "r"(a), [m] "r"(wq_i4_masks), "m"(*(const u32(*)[64])x), "m"(*(const float(*)[8])a)
    : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  t[0] = __builtin_shufflevector(t0, t1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  t[1] = __builtin_shufflevector(t2, t3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  t[2] = __builtin_shufflevector(t4, t5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  t[3] = __builtin_shufflevector(t6, t7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#endif
)";

// The GEMV of the block formats (i8; i4 in groups of whole blocks or one group): the body of the
// kernel after its pointers A, W, S, Y. Work item = an item of 4 panels; per row of A, per chunk
// of CB blocks, sums into a set of accumulators per stream (kGemvStreams chunks at once with
// AVX-512, else 2 (i8) or 1 (i4); K in as many parts; the chunks left over alone, into two sets,
// even and odd rows: FMA latency), then per chunk acc += sum (i8; its column scales at the end)
// or sum * the group's scale (i4).
//
// Decode, two ways:
//   exact q: i4 as wq_i4c; i8 by the float trick on each byte (x ^ 0x80808080 holds q + 128).
//   denormal (WQ_DENORM, a row whose largest |a| is finite and below 2^100): the masked field u
//     (q + 8, q + 128) read as the float u * 2^(s - 149), s its bit offset (0..12: the fields
//     past bit 15 are read from the block shifted by 16), times a * 2^(S - s) (the row scaled
//     once; S = 253 - the exponent of the largest |a|, so nothing overflows): the product a*u
//     * 2^(S - 149) exactly, and one AND per 16 weights instead of a permute or an AND and a
//     subtraction (Zen 4, GEMV 4096x4096 INT4 in a C harness: 0.50 -> 0.39 ms with the weights
//     in L2). Per chunk the offset comes off: sum - off * sum(a) * 2^(S - 149) (off = 8 or 128;
//     chunks of at most 32 rows keep that cancellation to a few bits of FP32), and the outputs are
//     times 2^(149 - S), exactly. Denormal operands need DAZ off: the kernel clears DAZ and FTZ
//     in MXCSR while it runs and restores them. Chosen on Zen 3/4/5 (__znver3__ .. __znver5__),
//     whose FMA takes denormal operands at full speed (Zen 3, GEMV 4096x4096 one thread: INT4
//     1.36 -> 0.80-0.83 ms, INT8 1.14 -> 1.09-1.16), or where HPF_PREFER_WQ_DENORMAL is
//     defined before the source (the tests do, to check it on any host); other hosts (Intel
//     takes a microcode assist per denormal operand) and other rows decode exact q.
// Rows of K per packed block: i4 8, i8 4, the float formats 1 (a row is a unit).
int64_t block_rows(const std::string& f) { return f == "i4" ? 8 : f == "i8" ? 4 : 1; }

// The GEMV's store of panel c's 16 sums `sums` (row i, item panels from p0) to Y, through the
// epilogue, columns past N left out: the lines inside the loops over i and c.
std::string gemv_store(const std::string& sums, int64_t N, DType y_dtype) {
  return "        float o[16]; __builtin_memcpy(o, &" + sums + ", 64);\n"
         "        for (i64 jj = 0; jj < 16; ++jj) { const i64 j = (p0 + c) * 16 + jj; if (j >= " + L(N) + ") break;\n"
         "          Y[i * " + L(N) + " + j] = " + c_store(y_dtype, "wq_out(o[jj], args, i, j)") + "; }\n";
}

struct GemvSource {
  std::string helpers, body;  // before the kernel; the kernel after its pointers
};
GemvSource gemv_blocked(const std::string& f, int64_t K, int64_t N, int64_t M, int64_t G, const std::string& a_load,
                         DType y_dtype) {
  const bool i4 = f == "i4";
  const int64_t B = block_rows(f), KBn = (K + B - 1) / B, KP = KBn * B, P = (N + 15) / 16, NG = K / G;
  // Blocks per chunk: i4 a divisor of the group's blocks (at most 4), i8 8 (32 rows).
  const int64_t GB = G % 8 == 0 ? G / 8 : KBn;
  const int64_t CB = !i4 ? 8 : NG == 1 ? 4 : GB % 4 == 0 ? 4 : GB % 2 == 0 ? 2 : 1;
  const int64_t NCH = (KBn + CB - 1) / CB;
  const std::string x_of = i4 ? "" : " ^ 0x80808080u";
  std::ostringstream s;
  s << "  float arow[" << KP << "] __attribute__((aligned(64)));\n"
    << "  float cg[" << NCH << "];\n"
    << "  float ps = 1.0f;\n"
    << "  (void)cg; (void)ps;\n"
    << "#if defined(WQ_DENORM)\n"
    << "  const u32 mxcsr = __builtin_ia32_stmxcsr();\n"
    << "  __builtin_ia32_ldmxcsr(mxcsr & ~0x8040u);  // DAZ, FTZ off\n"
    << "#endif\n"
    << "  for (i64 p = " << L(K) << "; p < " << L(KP) << "; ++p) arow[p] = 0.0f;  // rows past K\n"
    << "  for (i64 i = 0; i < " << L(M) << "; ++i) {\n"
    << "    for (i64 p = 0; p < " << L(K) << "; ++p) arow[p] = " << a_load << ";\n"
    << "    int dn = 0;\n"
    << "#if defined(WQ_DENORM)\n"
    << "    dn = wq_prep(arow, cg, &ps);\n"
    << "#endif\n"
    << "    for (i64 w = begin; w < end; ++w) {\n"
    << "      const i64 p0 = w * 4, np = " << L(P) << " - p0 < 4 ? " << L(P) << " - p0 : 4;\n"
    << "      const u32* restrict wb = (const u32*)W + w * " << L(4 * KBn * 16) << ";\n"
    << "      const wq_s_t* restrict sb = S + w * " << L(i4 ? 4 * NG * 16 : 0) << ";\n"
    << "      hpf_f32x16 acc[4];\n"
    << "      for (int c = 0; c < 4; ++c) acc[c] = (hpf_f32x16){};\n"
    << "      if (np == 4) {\n"
    << "#if defined(WQ_DENORM)\n"
    << "        if (dn) wq_item(wb, 4, sb, arow, cg, acc, 4, 1); else\n"
    << "#endif\n"
    << "        wq_item(wb, 4, sb, arow, cg, acc, 4, 0);\n"
    << "      } else {\n"
    << "        for (i64 c0 = 0; c0 < np; ++c0) {\n"
    << "#if defined(WQ_DENORM)\n"
    << "          if (dn) wq_item(wb + c0 * 16, np, sb + c0 * 16, arow, cg, acc + c0, 1, 1); else\n"
    << "#endif\n"
    << "          wq_item(wb + c0 * 16, np, sb + c0 * 16, arow, cg, acc + c0, 1, 0);\n"
    << "        }\n"
    << "      }\n"
    << "      for (int c = 0; c < np; ++c) {\n"
    << (i4 ? "" : "        acc[c] *= *(const hpf_f32x16*)(S + (p0 + c) * 16);\n")
    << "        if (dn) acc[c] *= ps;\n"
    << gemv_store("acc[c]", N, y_dtype)
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "#if defined(WQ_DENORM)\n"
    << "  __builtin_ia32_ldmxcsr(mxcsr);\n"
    << "#endif\n"
    << "}\n";
  const std::string body = s.str();

  // Helpers, before the kernel: decodes, wq_prep, wq_item.
  std::ostringstream h;
  h << "#if defined(__znver3__) || defined(__znver4__) || defined(__znver5__) || defined(HPF_PREFER_WQ_DENORMAL)\n"
    << "#define WQ_DENORM 1\n"
    << "#endif\n"
    // exact q of row r of a block (x: the block's words, xs = x >> 16)
    << "static inline __attribute__((always_inline)) hpf_f32x16 wq_q(hpf_u32x16 x, hpf_u32x16 xs, int r) {\n"
    << (i4 ? "  (void)xs;\n  return wq_i4c(x, r);\n" : "  return wq_i8c(x, xs, r);\n") << "}\n"
    << "#if defined(WQ_DENORM)\n"
    // the field of row r as a denormal: u * 2^(s - 149), s its bit offset in x or xs
    << "static inline __attribute__((always_inline)) hpf_f32x16 wq_u(hpf_u32x16 x, hpf_u32x16 xs, int r) {\n"
    << (i4 ? "  return (hpf_f32x16)(r < 4 ? x & (15u << (4 * r)) : xs & (15u << (4 * (r - 4))));\n"
           : "  return (hpf_f32x16)((r < 2 ? x : xs) & (255u << (8 * (r & 1))));\n")
    << "}\n"
    << "static inline float wq_pow2(i32 e) { const u32 b = (u32)(e + 127) << 23; float v; __builtin_memcpy(&v, &b, 4); return v; }\n"
    // Scales the row in place (a * 2^(S - s) per row of a block) and fills the chunks' offset
    // terms and the output factor; 0 (nothing changed) where the row is not for this path.
    << "static inline int wq_prep(float* restrict a, float* restrict cg, float* restrict ps) {\n"
    << "  u32 mx = 0;\n"
    << "  for (i64 k = 0; k < " << L(K) << "; ++k) { u32 b; __builtin_memcpy(&b, a + k, 4); b &= 0x7fffffffu; mx = b > mx ? b : mx; }\n"
    << "  const i32 E = (i32)(mx >> 23);\n"
    << "  if (E >= 227) return 0;  // |a| >= 2^100, infinite or NaN\n"
    << "  const i32 S = E >= 126 ? 253 - E : 127;\n"
    << "  const float off = wq_pow2(S - 149 + " << (i4 ? 3 : 7) << ");\n"
    // Each chunk's sum of the row as it is and the row scaled, in one pass, 8 at a time (a sum of
    // its own per lane, then the lanes'; chunks start at multiples of 8 rows). One float at a time
    // the sums and the scaling took 1.9 of the 2.2 us a call of the 4096x4096 INT4 GEMV spent
    // here (Zen 3; a call per range of 2 items, 16 a thread with two threads); in vectors, a
    // pass each, a call (the row's copy and this) 1.09 us; in one pass 0.70-1.0 (C harness).
    << "  typedef float wq_v8 __attribute__((vector_size(32), aligned(4)));\n"
    << "  float sc[8];\n"
    << "  for (int r = 0; r < 8; ++r) sc[r] = wq_pow2(S - " << (i4 ? "4 * (r & 3)" : "8 * (r & 1)") << ");\n"
    << "  wq_v8 sv; __builtin_memcpy(&sv, sc, 32);\n"
    << "  for (i64 ch = 0; ch < " << L(NCH) << "; ++ch) {\n"
    << "    const i64 k1 = (ch + 1) * " << L(CB * B) << " < " << L(KP) << " ? (ch + 1) * " << L(CB * B) << " : " << L(KP) << ";\n"
    << "    i64 k = ch * " << L(CB * B) << ";\n"
    << "    wq_v8 v = {};\n"
    << "    for (; k + 8 <= k1; k += 8) { wq_v8 x; __builtin_memcpy(&x, a + k, 32); v += x; x *= sv; __builtin_memcpy(a + k, &x, 32); }\n"
    << "    float sum = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));\n"
    << "    for (; k < k1; ++k) { sum += a[k]; a[k] *= sc[k & 7]; }\n"
    << "    cg[ch] = sum * off;\n"
    << "  }\n"
    << "  *ps = wq_pow2(149 - S);\n"
    << "  return 1;\n"
    << "}\n"
    << "#endif\n"
    << (i4 ? kI4BlockAvx2 : "")
    // Panels 0..nc-1 of the blocks at wb (a block row every npi units of 16 words), their
    // scales at sb (i4), over the whole K; dn: denormal decode (a scaled, cg the offsets). The
    // first NS * NCHS chunks in NS streams (stream s: chunks s * NCHS ..), the rest one by one.
    << "static inline __attribute__((always_inline)) void wq_item(const u32* restrict wb, i64 npi, const wq_s_t* restrict sb,\n"
    << "    const float* restrict a, const float* restrict cg, hpf_f32x16* restrict acc, const int nc, const int dn) {\n"
    << "  (void)sb; (void)cg;\n";
  // One block of the panels: loads (prefetching ahead) and the FMAs of its rows into T[c].
  const std::string cs = "for (int c = 0; c < nc; ++c)";
  auto block = [&](const std::string& b, const std::string& t, const std::string& t2, const std::string& ind) {
    std::ostringstream o;
    if (i4 && t2.empty())
      o << "#if defined(WQ_I4_ASM)\n"
        << ind << "if (dn && nc == 4) wq_i4_block(wb + (" << b << ") * npi * 16, a + (" << b << ") * 8, " << t << "); else\n"
        << "#endif\n";
    o << ind << "{\n"
      << ind << "  hpf_u32x16 x[4], xs[4];\n"
      << "#pragma clang loop unroll(full)\n"
      << ind << "  " << cs << " {\n"
      << ind << "    __builtin_prefetch((const u8*)(wb + ((" << b << ") * npi + c) * 16) + " << kGemvBlockPrefetchL1 << ");\n"
      << ind << "    __builtin_prefetch((const u8*)(wb + ((" << b << ") * npi + c) * 16) + " << kGemvBlockPrefetchL2 << ", 0, 2);\n"
      << ind << "    x[c] = *(const hpf_u32x16*)(wb + ((" << b << ") * npi + c) * 16)" << x_of << ";\n"
      << ind << "    xs[c] = x[c] >> 16;\n"
      << ind << "  }\n"
      << "#pragma clang loop unroll(full)\n"
      << ind << "  for (int r = 0; r < " << B << "; ++r) {\n"
      << ind << "    const float av = a[(" << b << ") * " << B << " + r];\n"
      << "#pragma clang loop unroll(full)\n"
      << ind << "    " << cs << " {\n"
      << "#if defined(WQ_DENORM)\n"
      << ind << "      const hpf_f32x16 m = dn ? wq_u(x[c], xs[c], r) : wq_q(x[c], xs[c], r);\n"
      << "#else\n"
      << ind << "      const hpf_f32x16 m = wq_q(x[c], xs[c], r);\n"
      << "#endif\n"
      << ind << "      " << (t2.empty() ? t + "[c] += av * m;" : "if (r & 1) " + t2 + "[c] += av * m; else " + t + "[c] += av * m;") << "\n"
      << ind << "    }\n"
      << ind << "  }\n"
      << ind << "}\n";
    return o.str();
  };
  // A chunk's sums into acc, times the group's scale (i4). Its sums start from minus the offset
  // term (denormal decode): one subtraction per chunk and panel fewer.
  auto finish = [&](const std::string& v, const std::string& ch, const std::string& ind) {
    std::ostringstream o;
    o << "#pragma clang loop unroll(full)\n"
      << ind << cs << " {\n"
      << ind << "  hpf_f32x16 v = " << v << ";\n"
      << ind << (i4 ? "  acc[c] += v * wq_sc(sb + ((" + ch + ") * " + L(CB) + " / " + L(GB) + " * npi + c) * 16);\n" +
                          ind + "  __builtin_prefetch(sb + ((" + ch + " + " + L(kGemvScalePrefetchL1) + ") * " + L(CB) + " / " + L(GB) + " * npi + c) * 16);\n" +
                          ind + "  __builtin_prefetch(sb + ((" + ch + " + " + L(kGemvScalePrefetchL2) + ") * " + L(CB) + " / " + L(GB) + " * npi + c) * 16, 0, 2);\n"
                    : "  acc[c] += v;\n")
      << ind << "}\n";
    return o.str();
  };
  // The chunks of NS streams, every panel of a block at once (streams x panels sums), then the
  // chunks left over one by one. AVX-512: 4 streams (16 zmm of sums). With 256-bit vectors each
  // hpf_f32x16 is two registers: i8 takes 2 streams (16 ymm of sums; the decode spills a little),
  // i4 one (8 ymm). Zen 3, GEMV 4096x4096 one thread in a C harness, the weights from memory:
  // the panels one after another within a chunk (4 streams x 1 panel, session 22) read each
  // stream's lines 4 apart, then the next panel's, and got 15-16 GB/s of the 24 the FP32 GEMV
  // reads: INT8 1.06-1.10 -> 0.80-0.84 ms, INT4 0.79-0.80 -> 0.67 (then bound by its decode,
  // as fast from L2: wq_i4_block).
  auto streams = [&](int64_t NS) {
    const int64_t NCHS = (NCH - (KBn % CB != 0)) / NS;  // whole chunks per stream; a ragged last one with the rest
    std::ostringstream o;
    if (NCHS > 0)
      o << "  for (i64 c0 = 0; c0 < " << L(NCHS) << "; ++c0) {\n"
        << "    hpf_f32x16 t[" << NS << "][4];\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int s = 0; s < " << NS << "; ++s)\n"
        << "#pragma clang loop unroll(full)\n"
        << "      for (int c = 0; c < nc; ++c) t[s][c] = (hpf_f32x16){} - (dn ? cg[s * " << L(NCHS) << " + c0] : 0.0f);\n"
        << "    for (i64 kb = 0; kb < " << L(CB) << "; ++kb) {\n"
        << "#pragma clang loop unroll(full)\n"
        << "      for (int s = 0; s < " << NS << "; ++s)\n"
        << block("(s * " + L(NCHS) + " + c0) * " + L(CB) + " + kb", "t[s]", "", "      ")
        << "    }\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int s = 0; s < " << NS << "; ++s)\n"
        << finish("t[s][c]", "s * " + L(NCHS) + " + c0", "    ")
        << "  }\n";
    if (NCH > NS * NCHS)
      o << "  for (i64 ch = " << L(NS * NCHS) << "; ch < " << L(NCH) << "; ++ch) {\n"
        << "    hpf_f32x16 t[4], t2[4];\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int c = 0; c < nc; ++c) t[c] = (hpf_f32x16){} - (dn ? cg[ch] : 0.0f), t2[c] = (hpf_f32x16){};\n"
        << "    const i64 kb1 = (ch + 1) * " << L(CB) << " < " << L(KBn) << " ? (ch + 1) * " << L(CB) << " : " << L(KBn) << ";\n"
        << "    for (i64 kb = ch * " << L(CB) << "; kb < kb1; ++kb)\n"
        << block("kb", "t", "t2", "    ")
        << finish("t[c] + t2[c]", "ch", "    ")
        << "  }\n";
    return o.str();
  };
  h << "#if defined(__AVX512F__)\n" << streams(kGemvStreams) << "#else\n" << streams(i4 ? 1 : 2) << "#endif\n";
  h << "}\n";
  return {h.str(), body};
}

// The GEMV of M = 2..8 rows, every format: each weight is loaded and decoded once for all M rows
// (rows of A as FP32 on the stack, zero past K), the sums of M rows x PC panels in registers (an
// item's 4 panels in one pass or two). Row by row (the single-row GEMVs above, M times) read and
// decoded the weights M times: 4096x4096 with one thread, weights in L3, FP32 4.6 ms at M = 2 and
// 9.3 at M = 4 against 2.35 at M = 1 and the GEMM's 3.9 at M = 5; INT4 2.0 ms at M = 4 against
// 0.49 at M = 1. Against the GEMM at M = 5..8 (which dequantises the weights into panels for
// its 6-row tiles, a ragged one among them): FP32 3.3-3.5 -> 2.4-2.6 ms, BF16 2.4-3.0 -> 1.3-2.0,
// INT4 2.8-3.3 -> 1.5-2.1; FP32 at M = 6 alike. i4 (groups of whole blocks, or one group) sums
// a * q per group and adds the sums times the group's scale, i8 takes its column scales at the
// end, as the single-row GEMV does.
GemvSource gemv_rows(const std::string& f, int64_t K, int64_t N, int64_t M, int64_t G, const std::string& a_load,
                     DType y_dtype) {
  const bool block = f == "i4" || f == "i8", i4 = f == "i4";
  const int64_t B = block_rows(f), KBn = (K + B - 1) / B, KP = KBn * B, P = (N + 15) / 16, NG = K / G;
  // Panels per pass over the weights: M x PC sums in registers, at most 24 (the FP32 GEMM's
  // tile) for the row formats, 16 for the block formats (their decode holds 8 to 12 vectors).
  const int64_t PC = M * 4 <= (block ? 16 : 24) ? 4 : 2;
  std::ostringstream h;
  if (!block) h << kGemvRowPrefetch;
  // Panels c < nc of an item (block formats: their blocks every npi units from wb, scales at
  // sb; else panels p0..): the sums of rows i < M into res[i * 4 + c].
  h << "static inline __attribute__((always_inline)) void wq_rows(const void* restrict W, const u32* restrict wb, i64 npi,\n"
    << "    const wq_s_t* restrict sb, i64 p0, const float* restrict a, hpf_f32x16* restrict res, const int nc) {\n"
    << "  (void)W; (void)wb; (void)npi; (void)sb; (void)p0;\n"
    << "  hpf_f32x16 t[" << M << "][4];\n";
  if (!i4)
    h << "#pragma clang loop unroll(full)\n"
      << "  for (int i = 0; i < " << M << "; ++i)\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < 4; ++c) t[i][c] = (hpf_f32x16){};\n";
  if (block) {
    // i4: per scale group of GB blocks, the sums of a * q, then res += sums * the group's scale
    // (a multiply per group and column, not per decoded row; INT4 4096x4096, one thread, 2
    // alternations: M = 2 0.79-0.85 -> 0.66-0.67 ms, M = 4 1.13-1.15 -> 0.97-1.02, M = 8
    // 2.10-2.19 -> 1.96-2.01); i8: one group of all blocks.
    const int64_t GB = i4 && G % 8 == 0 ? G / 8 : KBn, NGB = (KBn + GB - 1) / GB;
    if (i4)
      h << "#pragma clang loop unroll(full)\n"
        << "  for (int i = 0; i < " << M << "; ++i)\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int c = 0; c < nc; ++c) res[i * 4 + c] = (hpf_f32x16){};\n";
    h << "  for (i64 gi = 0; gi < " << L(NGB) << "; ++gi) {\n";
    if (i4)
      h << "    hpf_f32x16 sc[4];\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int c = 0; c < nc; ++c) sc[c] = wq_sc(sb + (gi * npi + c) * 16);\n"
        << "#pragma clang loop unroll(full)\n"
        << "    for (int i = 0; i < " << M << "; ++i)\n"
        << "#pragma clang loop unroll(full)\n"
        << "      for (int c = 0; c < 4; ++c) t[i][c] = (hpf_f32x16){};\n";
    h << "  for (i64 kb = gi * " << L(GB) << "; kb < (gi + 1) * " << L(GB) << " && kb < " << L(KBn) << "; ++kb) {\n"
      << "    hpf_u32x16 x[4], xs[4];\n"
      << "    (void)xs;\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < nc; ++c) {\n"
      << "      const u32* restrict u = wb + (kb * npi + c) * 16;\n"
      << "      __builtin_prefetch((const u8*)u + " << kGemvBlockPrefetchL1 << ");\n"
      << "      __builtin_prefetch((const u8*)u + " << kGemvBlockPrefetchL2 << ", 0, 2);\n"
      << "      x[c] = *(const hpf_u32x16*)u" << (i4 ? "" : " ^ 0x80808080u") << ";\n"
      << (i4 ? "" : "      xs[c] = x[c] >> 16;\n")
      << "    }\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int r = 0; r < " << B << "; ++r)\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int c = 0; c < nc; ++c) {\n"
      << "        const hpf_f32x16 m = " << (i4 ? "wq_i4c(x[c], r)" : "wq_i8c(x[c], xs[c], r)") << ";\n"
      << "#pragma clang loop unroll(full)\n"
      << "        for (int i = 0; i < " << M << "; ++i) t[i][c] += a[i * " << L(KP) << " + kb * " << B << " + r] * m;\n"
      << "      }\n"
      << "  }\n";
    if (i4)
      h << "#pragma clang loop unroll(full)\n"
        << "    for (int i = 0; i < " << M << "; ++i)\n"
        << "#pragma clang loop unroll(full)\n"
        << "      for (int c = 0; c < nc; ++c) res[i * 4 + c] += t[i][c] * sc[c];\n";
    h << "  }\n";
  } else {
    const int64_t row_bytes = f == "f32" ? 64 : 32, rows_per_line = 64 / row_bytes;
    h << "  for (i64 k = 0; k < " << L(K) << "; ++k) {\n"
      << "    if (nc == " << PC << (rows_per_line > 1 ? " && (k & " + std::to_string(rows_per_line - 1) + ") == 0" : "") << ")\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int c = 0; c < " << PC << "; ++c) __builtin_prefetch((const u8*)W + ((p0 + c) * " << L(K) << " + k + WQ_PF / "
      << row_bytes << ") * " << row_bytes << ");\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < nc; ++c) {\n"
      << "      const hpf_f32x16 m = wq_row(W, p0 + c, k);\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int i = 0; i < " << M << "; ++i) t[i][c] += a[i * " << L(KP) << " + k] * m;\n"
      << "    }\n"
      << "  }\n";
  }
  if (!i4)
    h << "#pragma clang loop unroll(full)\n"
      << "  for (int i = 0; i < " << M << "; ++i)\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < nc; ++c) res[i * 4 + c] = t[i][c];\n";
  h << "}\n";

  std::ostringstream s;
  const std::string wb = "(const u32*)W + w * " + L(4 * KBn * 16), sb = "S + w * " + L(i4 ? 4 * NG * 16 : 0);
  s << "  float arow[" << M * KP << "] __attribute__((aligned(64)));\n"
    << "  for (i64 i = 0; i < " << L(M) << "; ++i) {\n"
    << "    for (i64 p = 0; p < " << L(K) << "; ++p) arow[i * " << L(KP) << " + p] = " << a_load << ";\n"
    << "    for (i64 p = " << L(K) << "; p < " << L(KP) << "; ++p) arow[i * " << L(KP) << " + p] = 0.0f;\n"
    << "  }\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 p0 = w * 4, np = " << L(P) << " - p0 < 4 ? " << L(P) << " - p0 : 4;\n"
    << "    hpf_f32x16 res[" << M * 4 << "];\n"
    << "    if (np == 4)\n"
    << "      for (int cp = 0; cp < 4; cp += " << PC << ") wq_rows(W, " << wb << " + cp * 16, 4, " << sb << " + cp * 16, p0 + cp, arow, res + cp, " << PC << ");\n"
    << "    else\n"
    << "      for (i64 c0 = 0; c0 < np; ++c0) wq_rows(W, " << wb << " + c0 * 16, np, " << sb << " + c0 * 16, p0 + c0, arow, res + c0, 1);\n"
    << "    for (i64 i = 0; i < " << L(M) << "; ++i)\n"
    << "      for (int c = 0; c < np; ++c) {\n"
    << (f == "i8" ? "        res[i * 4 + c] *= *(const hpf_f32x16*)(S + (p0 + c) * 16);\n" : "")
    << gemv_store("res[i * 4 + c]", N, y_dtype)
    << "      }\n"
    << "  }\n"
    << "}\n";
  return {h.str(), s.str()};
}

}  // namespace

Expected<std::string> c_matmul_epilogue(const KernelSpec& spec, size_t c_input) {
  const int64_t N = attr_i(spec.attrs, "n", 0);
  const size_t own_inputs = spec.inputs.size() - spec.epilogue_inputs;
  const bool has_c = own_inputs > c_input;
  const float alpha = attr_f(spec.attrs, "alpha", 1.0f), beta = attr_f(spec.attrs, "beta", 1.0f);
  const bool fq = spec.attrs.count("out_scale") > 0;
  const float out_scale = attr_f(spec.attrs, "out_scale", 1.0f);
  const TensorDesc& Y = spec.outputs[0];
  HPF_ASSIGN_OR_RETURN(std::string epi_ptrs, epilogue_pointers(spec, static_cast<int>(Y.shape.size()) - 1));
  std::ostringstream s;
  s << "static inline float wq_out(float v, void* const* args, i64 i, i64 j) {\n  (void)args; (void)i; (void)j;\n"
    << epi_ptrs;
  if (alpha != 1.0f) s << "  v *= " << c_float(alpha) << ";\n";
  if (has_c && beta != 0.0f) {
    const TensorDesc& C = spec.inputs[c_input];
    const auto& cs = C.shape;
    const std::string idx = numel(cs) == 1 ? "0" : cs.size() == 1 ? "j" : (cs[0] == 1 ? "j" : (cs[1] == 1 ? "i" : "i * " + L(N) + " + j"));
    s << "  const " << c_storage_type(C.dtype) << "* restrict C = (const " << c_storage_type(C.dtype) << "*)args["
      << c_input << "];\n"
      << "  v += " << c_float(beta) << " * " << c_load(C.dtype, "C[" + idx + "]") << ";\n";
  }
  if (fq)  // fake_quantize: x / s rounded half to even, NaN -> 0, clamped to [-128, 127], times s
    s << "  float r = v / " << c_float(out_scale) << ";\n"
      << "  r = r != r ? 0.0f : (__builtin_fabsf(r) < 8388608.0f ? __builtin_rintf(r) : r);\n"
      << "  r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);\n"
      << "  v = r * " << c_float(out_scale) << ";\n";
  // Fused consumers (bias, activation, residual): operands a scalar, one per column, or one per
  // element of Y (row i of the flattened [M, N] output).
  HPF_ASSIGN_OR_RETURN(std::string epi, c_epilogue(spec, "v", [&](int k) {
    const int kind = epilogue_operand_kind(spec.inputs[k].shape, Y.shape, static_cast<int>(Y.shape.size()) - 1);
    const std::string idx = kind == 0 ? "0" : kind == 1 ? "j" : "i * " + L(N) + " + j";
    return c_load(spec.inputs[k].dtype, "P" + std::to_string(k) + "[" + idx + "]");
  }));
  s << epi << "  return v;\n}\n";
  return s.str();
}

Expected<GeneratedKernel> generate_c_matmul_wq(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1) return Status::invalid("matmul_wq: needs A, W, S and one output");
  const TensorDesc &A = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(A.dtype) || !is_float(Y.dtype))
    return Status::unsupported("C codegen: matmul_wq on " + std::string(dtype_name(A.dtype)) + " -> " + std::string(dtype_name(Y.dtype)));
  const std::string f = attr_s(spec.attrs, "wformat");
  if (f == "bf16t") return generate_c_matmul_amx(spec, name);
  if (f != "f32" && f != "bf16" && f != "f16" && f != "i8" && f != "i4")
    return Status::unsupported("C codegen: matmul_wq weight format '" + f + "'");
  const int64_t K = attr_i(spec.attrs, "k", 0), N = attr_i(spec.attrs, "n", 0);
  const int64_t G = f == "i4" ? attr_i(spec.attrs, "group", 0) : K;
  if (K <= 0 || N <= 0 || G <= 0 || K % G != 0 || A.shape.empty() || A.shape.back() != K || Y.shape.empty() ||
      Y.shape.back() != N)
    return Status::invalid("matmul_wq: inconsistent k/n/group for A " + shape_string(A.shape) + " and Y " + shape_string(Y.shape));
  const int64_t M = numel(Y.shape) / N, P = (N + 15) / 16, NG = K / G;
  // The GEMV: of 2..8 rows at once (rows on the stack within kGemvRowsStackBytes; i4 groups of
  // whole blocks, or one group); else up to kGemvMaxRows rows one at a time: the block formats'
  // (i4 groups likewise), else row by row.
  const bool whole_blocks = f == "i8" || (f == "i4" && (G % 8 == 0 || NG == 1));
  const int64_t KP = (K + block_rows(f) - 1) / block_rows(f) * block_rows(f);  // K padded to whole blocks
  const bool rows_at_once = M >= 2 && M <= kGemvRowsMax && M * KP * 4 <= kGemvRowsStackBytes &&
                            (f != "i4" || whole_blocks);
  const bool gemv = M <= kGemvMaxRows || rows_at_once;
  const DType s_dtype = spec.inputs[2].dtype;
  if (s_dtype != DType::F32 && !(s_dtype == DType::BF16 && f == "i4"))
    return Status::invalid("matmul_wq: " + std::string(dtype_name(s_dtype)) + " scales for weight format '" + f +
                           "' (F32, or BF16 for i4)");
  const bool bf16_scales = s_dtype == DType::BF16;

  // BF16 weights and a BF16 A: where the BF16 pair dot product is preferred (HPF_BF16_DOT), the
  // GEMM packs B in pairs of k as stored and multiplies with vdpbf16ps (A read in place).
  const bool pairs = !gemv && f == "bf16" && A.dtype == DType::BF16;
  HPF_ASSIGN_OR_RETURN(std::string out_fn, c_matmul_epilogue(spec, 3));
  const std::string a_load = c_load_operand(A.dtype, "A[i * " + L(K) + " + p]");
  GemvSource blocked;
  if (rows_at_once)
    blocked = gemv_rows(f, K, N, M, G, a_load, Y.dtype);
  else if (gemv && whole_blocks)
    blocked = gemv_blocked(f, K, N, M, G, a_load, Y.dtype);
  std::ostringstream s;
  s << c_prelude() << (gemv ? "" : gemm_micro_source()) << (pairs ? gemm_micro_bf16_source() : "")
    << row_loader(f, K, P, bf16_scales) << out_fn << blocked.helpers;

  s << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(A.dtype) << "* restrict A = (const " << c_storage_type(A.dtype) << "*)args[0];\n"
    << "  const void* restrict W = args[1];\n"
    << "  const wq_s_t* restrict S = (const wq_s_t*)args[2];\n"
    << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[" << spec.inputs.size()
    << "];\n  (void)S;\n";
  if (!blocked.body.empty()) {
    s << blocked.body;
    return GeneratedKernel{name, s.str(), M > 0 ? (P + kPanelsPerItem - 1) / kPanelsPerItem : 0, 2};
  }
  if (gemv) {
    // Row by row: the float formats, and i4 groups that are not whole blocks (a plan file's).
    const int64_t row_bytes = f == "f32" ? 64 : f == "i4" ? 0 : 32;  // of a panel row (i4: not prefetched)
    // Emitted right after `av` is read, at the loop's indentation: a line per panel (whole items).
    auto prefetch = [&](const std::string& indent) -> std::string {
      if (row_bytes == 0) return "";
      const int64_t rows_per_line = 64 / row_bytes;
      return indent + "if (nc == " + std::to_string(kPanelsPerItem) + (rows_per_line > 1 ? " && (k & " + std::to_string(rows_per_line - 1) + ") == 0" : "") +
             ")\n" + indent + "  for (int c = 0; c < " + std::to_string(kPanelsPerItem) +
             "; ++c) __builtin_prefetch((const u8*)W + ((p0 + c) * " + L(K) + " + k + WQ_PF / " + std::to_string(row_bytes) +
             ") * " + std::to_string(row_bytes) + ");\n";
    };
    s << kGemvRowPrefetch;
    // Rows k0..k1 one at a time: into `full` (indexed by c) for a whole item of panels, else
    // into `one` for panel c0.
    auto row_loop = [&](const std::string& in, const std::string& k0, const std::string& k1, const std::string& full,
                        const std::string& one) {
      return in + "for (i64 k = " + k0 + "; k < " + k1 + "; ++k) {\n" + in + "  const float av = arow[k];\n" +
             prefetch(in + "  ") + in + "  if (nc == " + std::to_string(kPanelsPerItem) + ") {\n" +
             "#pragma clang loop unroll(full)\n" + in + "    for (int c = 0; c < " + std::to_string(kPanelsPerItem) +
             "; ++c) " + full + " += av * wq_row(W, p0 + c, k);\n" + in + "  } else " + one +
             " += av * wq_row(W, p0 + c0, k);\n" + in + "}\n";
    };
    s << "  float arow[" << K << "] __attribute__((aligned(64)));\n"
      << "  for (i64 i = 0; i < " << L(M) << "; ++i) {\n"
      << "    for (i64 p = 0; p < " << L(K) << "; ++p) arow[p] = " << a_load << ";\n";
    s << "    for (i64 w = begin; w < end; ++w) {\n"
      << "      const i64 p0 = w * " << kPanelsPerItem << ", np = " << L(P) << " - p0 < " << kPanelsPerItem << " ? " << L(P)
      << " - p0 : " << kPanelsPerItem << ";\n"
      << "      hpf_f32x16 acc[" << kPanelsPerItem << "];\n"
      << "      for (int c = 0; c < " << kPanelsPerItem << "; ++c) acc[c] = (hpf_f32x16){};\n"
      // Full blocks with np constant after unrolling; the last block panel by panel.
      << "      for (i64 c0 = 0; c0 < np; c0 += (np == " << kPanelsPerItem << " ? " << kPanelsPerItem << " : 1)) {\n"
      << "        const int nc = np == " << kPanelsPerItem << " ? " << kPanelsPerItem << " : 1;\n";
    if (f == "i4") {
      s << "        for (i64 g = 0; g < " << L(NG) << "; ++g) {\n"
        << "          hpf_f32x16 t[" << kPanelsPerItem << "];\n"
        << "#pragma clang loop unroll(full)\n"
        << "          for (int c = 0; c < " << kPanelsPerItem << "; ++c) t[c] = (hpf_f32x16){};\n"
        << row_loop("          ", "g * " + L(G), "(g + 1) * " + L(G), "t[c]", "t[0]")
        << "          for (int c = 0; c < nc; ++c)\n"
        << "            acc[c0 + c] += t[c] * wq_sc(S + wq_at(p0 + c0 + c, g, " << L(NG) << ") * 16);\n"
        << "        }\n";
    } else {
      s << row_loop("        ", "0", L(K), "acc[c]", "acc[c0]");
    }
    s << "      }\n";
    s << "      for (int c = 0; c < np; ++c) {\n"
      << gemv_store("acc[c]", N, Y.dtype)
      << "      }\n"
      << "    }\n  }\n}\n";
    return GeneratedKernel{name, s.str(), M > 0 ? (P + kPanelsPerItem - 1) / kPanelsPerItem : 0, 2};
  }

  // GEMM: work item = a tile of up to MC rows (M split evenly) and a group of kColGroup
  // columns, so that two threads share even BERT's 128 rows and each dequantises only its own
  // columns of B; per NC columns, per KC slice: dequantise B (F32: read in place), convert A,
  // micro.
  int64_t tiles = (M + kGemmMC - 1) / kGemmMC, RT = (M + tiles - 1) / tiles;
  // With many row tiles there is parallelism enough: wider groups read A fewer times.
  int64_t col_group = tiles >= 4 ? 4 * kColGroup : kColGroup;
  int64_t groups = (N + col_group - 1) / col_group;
  // An FP32 Y of whole NC blocks holds the sums itself: K slice by slice over all the item's
  // columns, so that a slice of the item's A rows (RT x KC, in L2) serves every NC block before the
  // next is read, instead of the item's whole depth of A once per NC block (at 2048^3 1 MiB of A
  // per item, read 8 times; in a C harness on one core 101 -> 96 ms, 6 alternations). The
  // epilogue runs over the item's outputs at the end.
  const bool yacc = Y.dtype == DType::F32 && !pairs && N % kGemmNC == 0;
  const bool whole_k = yacc && f == "f32" && A.dtype == DType::F32;
  if (whole_k) {
    // Whole K per row tile (below): an item is one NC block of columns and as many rows as
    // leave kWholeKItems items or more (rows split no finer than kGemmMC), whole row tiles but the
    // last. Each NC block's panels (K x NC) then come from L3 into L2 once per item and serve all
    // its row tiles, the rows of A streaming from L3 (2 bytes a cycle at the FMA rate) instead:
    // items of 128 rows x 512 columns fetched a block's panels once per 21 tiles. C harness on
    // one core, the two alternating run by run: 2048^3 4.7-4.8% faster (all 2048 rows per item),
    // 1024^3 1-3% (512 rows), 512^3 and BERT's shapes alike (128 rows).
    col_group = kGemmNC;
    groups = N / kGemmNC;
    const int64_t parts = std::max<int64_t>(1, std::min((M + kGemmMC - 1) / kGemmMC, (kWholeKItems + groups - 1) / groups));
    RT = ((M + parts - 1) / parts + kGemmMR - 1) / kGemmMR * kGemmMR;
    tiles = (M + RT - 1) / RT;
    // Many rows: items of several NC blocks where K is deep (gemm_wide_blocks; C harness, one
    // core, 2048^3 against OpenBLAS in the same run: 0.96 -> 0.985x with 256 columns).
    if (RT > kGemmSliceRows) {
      col_group = gemm_wide_blocks(N, K, tiles) * kGemmNC;
      groups = (N + col_group - 1) / col_group;
    }
  }
  const std::string item = "    const i64 ic = (w / " + L(groups) + ") * " + L(RT) + ", mc = " + L(M) + " - ic < " + L(RT) +
                           " ? " + L(M) + " - ic : " + L(RT) + ";\n" + "    const i64 j0 = (w % " + L(groups) + ") * " +
                           L(col_group) + ", j1 = j0 + " + L(col_group) + " < " + L(N) + " ? j0 + " + L(col_group) +
                           " : " + L(N) + ";\n";
  const std::string epilogue = "    for (i64 i = ic; i < ic + mc; ++i)\n      for (i64 j = j0; j < j1; ++j) Y[i * " + L(N) +
                               " + j] = wq_out(Y[i * " + L(N) + " + j], args, i, j);\n";
  // A vector v of a B row read in place: the next panel (AVX-512: 16 lanes) or the second half
  // of the same one (8 lanes).
  s << "#define WQ_BSV (HPF_VW == 16 ? " << L(K * 16) << " : 8LL)\n";
  if (whole_k) {
    // FP32 weights and rows of A, sums in Y: each row tile keeps its sums in registers over a
    // slice of K (the whole K, or slices of kGemmSliceKC for items of kGemmSliceRows rows or
    // fewer: c_gemm_micro.hpp) and adds them into Y once per slice; the NC block's panels (K x NC,
    // 512 KiB at K = 2048) stream from L2 to every row tile, row k + 16 prefetched into L1 as row
    // k is read (C harnesses of the dumped kernels on one core, 4 alternations, against the sums
    // added in memory per 128 of K: 2048^3 105.4 -> 96.3 ms, BERT's 128 x 768 x 768 0.82 -> 0.79,
    // 128 x 3072 x 768 3.65 -> 3.52, 128 x 768 x 3072 3.65 -> 3.52). The items of one row part
    // that a range holds run slice by slice over all their blocks, and each block's full tiles
    // prefetch into L2 the panels the thread reads next (the next block's, else the first
    // block's next slice, else the next item's), a few rows each, so that no tile waits on L3
    // for them (C harness, 128 x 768 x 3072: 3.52-3.71 -> 3.33-3.42 ms).
    const int64_t items = tiles * groups;
    const int64_t kc_max = RT <= kGemmSliceRows ? kGemmSliceKC : K;
    const int64_t kslices = (K + kc_max - 1) / kc_max, KC = (K + kslices - 1) / kslices;
    // (64-column blocks: wide ones, whose panels the L2 does not hold anyway, ran 0.5-1% faster
    // without)
    const bool ahead = col_group == kGemmNC;
    s << "  for (i64 run = begin; run < end;) {\n"
      << "    const i64 rend = run / " << L(groups) << " * " << L(groups) << " + " << L(groups) << " < end ? run / " << L(groups)
      << " * " << L(groups) << " + " << L(groups) << " : end;\n"
      << "    const i64 ic = (run / " << L(groups) << ") * " << L(RT) << ", mc = " << L(M) << " - ic < " << L(RT) << " ? "
      << L(M) << " - ic : " << L(RT) << ";\n"
      << "    for (i64 pc = 0; pc < " << L(K) << "; pc += " << L(KC) << ") {\n"
      << "      const i64 kc = " << L(K) << " - pc < " << L(KC) << " ? " << L(K) << " - pc : " << L(KC) << ";\n"
      << "      for (i64 w = run; w < rend; ++w) {\n"
      << "        const i64 j0 = (w % " << L(groups) << ") * " << L(col_group) << ", j1 = j0 + " << L(col_group) << " < "
      << L(N) << " ? j0 + " << L(col_group) << " : " << L(N) << ";\n";
    if (ahead)
      // the panels this thread reads next (see above), prefetched by the full tiles
      s << "        i64 nx = w + 1, npc = pc;\n"
        << "        if (w + 1 == rend) {\n"
        << "          if (pc + kc < " << L(K) << ") {\n            nx = run;\n            npc = pc + kc;\n          } else {\n"
        << "            npc = 0;\n          }\n        }\n"
        << "        const i64 pfrows = nx < " << L(items) << " ? (" << L(K) << " - npc < " << L(KC) << " ? " << L(K) << " - npc : "
        << L(KC) << ") : 0;\n"
        << "        const float* pfr = (const float*)W + (pfrows ? nx % " << L(groups) << " * HPF_NC / 16 * " << L(K * 16)
        << " + npc * 16 : 0);\n"
        << "        const i64 pft = mc / HPF_MR * (HPF_NC / HPF_NR), pfper = pft > 0 ? (pfrows + pft - 1) / pft : 0;\n"
        << "        i64 pfdone = 0;\n";
    // Wide groups: the row tiles in groups of kGemmGroupTiles, each panel for every tile of the
    // group in turn (c_gemm_micro.hpp).
    const int64_t tg = (ahead ? 1 : kGemmGroupTiles) * kGemmMR;
    s << "        for (i64 ig = 0; ig < mc; ig += " << L(tg) << ") {\n"
      << "          const i64 ie = mc - ig < " << L(tg) << " ? mc : ig + " << L(tg) << ";\n"
      << "          for (i64 jp = 0; jp < j1 - j0; jp += HPF_NR)\n"
      << "          for (i64 ir = ig; ir < ie; ir += HPF_MR) {\n"
      << "            const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
      << "            const float* restrict ar = A + (ic + ir) * " << L(K) << " + pc;\n"
      << "            const float* restrict bp = (const float*)W + (j0 + jp) / 16 * " << L(K * 16) << " + pc * 16;\n"
      << "            float* restrict yt = Y + (ic + ir) * " << L(N) << " + j0 + jp;\n"
      << "            if (mr == HPF_MR) {\n"
      << (ahead ? "              pfdone += " : "              ") << "hpf_mm_micro_ahead(pc == 0, kc, ar, " << L(K)
      << ", bp, 16, WQ_BSV, yt, " << L(N)
      << (ahead ? ", pfr, pfdone, pfdone + pfper < pfrows ? pfdone + pfper : pfrows, " : ", (const float*)W, 0, 0, ") << "16, "
      << L(K * 16) << ");\n"
      << "            } else {  // a ragged tile: exactly mr rows, from zero in the first slice\n"
      << "              if (pc == 0)\n"
      << "                for (i64 r = 0; r < mr; ++r)\n"
      << "                  for (i64 j = 0; j < HPF_NR; ++j) yt[r * " << L(N) << " + j] = 0.0f;\n"
      << "              hpf_mm_micro_rest(mr, kc, ar, 1, " << L(K) << ", bp, 16, WQ_BSV, yt, " << L(N) << ");\n"
      << "            }\n"
      << "          }\n"
      << "        }\n"
      << "        if (pc + kc == " << L(K) << ")  // the item's sums are whole\n"
      << "  " << epilogue
      << "      }\n"
      << "    }\n"
      << "    run = rend;\n"
      << "  }\n}\n";
    return GeneratedKernel{name, s.str(), items, 1};
  }
  std::string deq = "wq_row(W, pp, k)";
  if (f == "i8") deq = "wq_row(W, pp, k) * *(const hpf_f32x16*)(S + pp * 16)";
  if (f == "i4") deq = "wq_row(W, pp, k) * wq_sc(S + wq_at(pp, k / " + L(G) + ", " + L(NG) + ") * 16)";
  s << (pairs ? "#if defined(HPF_BF16_DOT)\n#define WQ_PAIRS 1\n#endif\n" : "")
    << "#if defined(WQ_PAIRS)\n"
    << "  u32 bpack2[HPF_KC / 2 * HPF_NC] __attribute__((aligned(64)));\n"
    << "  u16 apack2[HPF_MR * HPF_KC] __attribute__((aligned(64)));\n"
    << "#endif\n"
    << "  float bpack[HPF_KC * HPF_NC] __attribute__((aligned(64)));\n"
    << (A.dtype == DType::F32 ? "" : "  float apack[HPF_KC * HPF_MR] __attribute__((aligned(64)));\n")
    << (yacc ? "" : "  float acc[HPF_MC * HPF_NC] __attribute__((aligned(64)));\n")
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << item;
  if (yacc)
    // The rows of a ragged tile start at zero in Y; whole tiles start their sums at zero in
    // registers in the first slice (hpf_mm_micro_bx0).
    s << "    for (i64 ii = mc / HPF_MR * HPF_MR; ii < mc; ++ii)\n"
      << "      for (i64 j = j0; j < j1; ++j) Y[(ic + ii) * " << L(N) << " + j] = 0.0f;\n"
      << "    for (i64 pc = 0; pc < " << L(K) << "; pc += HPF_KC) {\n"
      << "      const i64 kc = " << L(K) << " - pc < HPF_KC ? " << L(K) << " - pc : HPF_KC;\n"
      << "      for (i64 jc = j0; jc < j1; jc += HPF_NC) {\n"
      << "        const i64 nc = HPF_NC;\n";
  else
    s << "    for (i64 jc = j0; jc < j1; jc += HPF_NC) {\n"
      << "      const i64 nc = " << L(N) << " - jc < HPF_NC ? " << L(N) << " - jc : HPF_NC;\n"
      // Whole tiles of whole panels (the FP32 microkernel) start their sums at zero in registers
      // in the first slice instead of zeroing acc and loading it (hpf_mm_micro_bx0).
      << "#if defined(WQ_PAIRS)\n"
      << "      const int fresh = 0;\n"
      << "#else\n"
      << "      const int fresh = mc % HPF_MR == 0 && nc % HPF_NR == 0;\n"
      << "#endif\n"
      << "      if (!fresh) for (i64 x = 0; x < HPF_MC * HPF_NC; ++x) acc[x] = 0.0f;\n"
      << "      for (i64 pc = 0; pc < " << L(K) << "; pc += HPF_KC) {\n"
      << "        const i64 kc = " << L(K) << " - pc < HPF_KC ? " << L(K) << " - pc : HPF_KC;\n";
  if (pairs)
    // Per 16-column panel and pair of k: 16 u32, BF16 of row k low, of row k + 1 high (zero
    // past K and past N), at the pair's row of the NR-wide panel of bpack2. A: rows in place
    // (even K, whole tiles), else copied into apack2 with a zero past an odd kc.
    s << "#if defined(WQ_PAIRS)\n"
      << "        const i64 kp = (kc + 1) >> 1;\n"
      << "        for (i64 c = 0; c < HPF_NC / 16; ++c) {\n"
      << "          const i64 pp16 = jc / 16 + c;\n"
      << "          u32* restrict d = bpack2 + ((c * 16) / HPF_NR) * (HPF_KC / 2) * HPF_NR + (c * 16) % HPF_NR;\n"
      << "          const u16* restrict wp = (const u16*)W + (pp16 * " << L(K) << " + pc) * 16;\n"
      << "          for (i64 q = 0; q < kp; ++q) {\n"
      << "            hpf_u32x16 lo = (hpf_u32x16){}, hi = (hpf_u32x16){};\n"
      << "            if (pp16 < " << L(P) << ") {\n"
      << "              lo = __builtin_convertvector(*(const wq_u16x16*)(wp + 2 * q * 16), hpf_u32x16);\n"
      << "              if (2 * q + 1 < kc) hi = __builtin_convertvector(*(const wq_u16x16*)(wp + (2 * q + 1) * 16), hpf_u32x16);\n"
      << "            }\n"
      << "            *(hpf_u32x16*)(d + q * HPF_NR) = lo | (hi << 16);\n"
      << "          }\n"
      << "        }\n"
      << "        for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
      << "          const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
      << "          const u16* restrict ap = (const u16*)A + (ic + ir) * " << L(K) << " + pc;\n"
      << "          i64 asi = " << L(K) << ";\n"
      << "          if (mr < HPF_MR || " << (K % 2 ? "1" : "0") << ") {\n"
      << "            for (i64 ii = 0; ii < HPF_MR; ++ii)\n"
      << "              for (i64 q = 0; q < 2 * kp; ++q)\n"
      << "                apack2[ii * HPF_KC + q] = ii < mr && q < kc ? ap[ii * " << L(K) << " + q] : (u16)0;\n"
      << "            ap = apack2;\n"
      << "            asi = HPF_KC;\n"
      << "          }\n"
      << "          for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
      << "            hpf_mm_micro_bf16(kp, ap, asi, bpack2 + jp * (HPF_KC / 2), acc + ir * HPF_NC + jp, HPF_NC);\n"
      << "        }\n"
      << "        continue;\n"
      << "#endif\n";
  // 16-column panels of the packed weights into the NR-wide panels of bpack (zero past N).
  // F32 panels need no dequantising: whole NC blocks are read in place (direct).
  s << "        const int direct = " << (f == "f32" ? "jc / 16 + HPF_NC / 16 <= " + L(P) : std::string("0")) << ";\n"
    << "        if (!direct) for (i64 c = 0; c < HPF_NC / 16; ++c) {\n"
    << "          const i64 pp = jc / 16 + c;\n"
    << "          float* restrict d = bpack + ((c * 16) / HPF_NR) * HPF_KC * HPF_NR + (c * 16) % HPF_NR;\n"
    << "          if (pp < " << L(P) << ") for (i64 q = 0; q < kc; ++q) { const i64 k = pc + q;\n"
    << "            *(hpf_f32x16*)(d + q * HPF_NR) = " << deq << "; }\n"
    << "          else for (i64 q = 0; q < kc; ++q) *(hpf_f32x16*)(d + q * HPF_NR) = (hpf_f32x16){};\n"
    << "        }\n"
    << "        for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
    << "          const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
    << (yacc ? "          const int fresh = mr == HPF_MR;\n" : "");
  // FP32 weights read in place, sums in Y: each row tile fetches its share of the next slice's
  // lines of B (the next NC block, else the next KC slice, else the next work item's first) into
  // L2. The first tile of a slice otherwise waits on memory for all of it (32 KiB: 4 panels x KC
  // rows, a line each), which the other tiles then read from L1. In a C harness of 128x768x3072
  // (BERT's FFN) on one core, B out of cache: 3.79 -> 3.58-3.63 ms (4 alternations).
  if (yacc && f == "f32")
    s << "          {\n"
      << "            i64 npc = pc, njc = jc + HPF_NC;\n"
      << "            if (njc >= j1) { njc = j0; npc = pc + HPF_KC; }\n"
      << "            if (npc >= " << L(K) << " && w + 1 < end) { npc = 0; njc = ((w + 1) % " << L(groups) << ") * "
      << L(col_group) << "; }\n"
      << "            if (npc < " << L(K) << ") {\n"
      << "              const char* nb = (const char*)((const float*)W + (njc / 16 * " << L(K) << " + npc) * 16);\n"
      << "              const i64 nkc = " << L(K) << " - npc < HPF_KC ? " << L(K) << " - npc : HPF_KC;\n"
      << "              const i64 nt = (mc + HPF_MR - 1) / HPF_MR, per = (HPF_NC / 16 * nkc + nt - 1) / nt;\n"
      << "              for (i64 l = ir / HPF_MR * per; l < (ir / HPF_MR + 1) * per && l < HPF_NC / 16 * nkc; ++l)\n"
      << "                __builtin_prefetch(nb + (l / nkc) * " << L(K * 64) << " + (l % nkc) * 64, 0, 2);\n"
      << "            }\n"
      << "          }\n";
  // FP32 rows are read in place (see c_matmul.cpp); 16-bit rows are converted row by row into
  // FP32 rows of apack first (contiguous, so the conversion vectorises). A ragged last block
  // (mr < MR) is computed exactly, in pieces of 4, 2 and 1 rows.
  if (A.dtype == DType::F32)
    s << "          const float* restrict ar = A + (ic + ir) * " << L(K) << " + pc;\n"
      << "          const i64 asi = " << L(K) << ";\n";
  else
    s << "          for (i64 ii = 0; ii < mr; ++ii) {\n"
      << "            float* restrict ad = apack + ii * HPF_KC;\n"
      << "            const i64 i = ic + ir + ii;\n"
      << "            for (i64 q = 0; q < kc; ++q) { const i64 p = pc + q; ad[q] = " << a_load << "; }\n"
      << "          }\n"
      << "          const float* restrict ar = apack;\n"
      << "          const i64 asi = HPF_KC;\n";
  // B in place (direct) or from bpack, each with constant strides in the microkernel.
  const std::string at = yacc ? "Y + (ic + ir) * " + L(N) + " + jc + jp, " + L(N) : "acc + ir * HPF_NC + jp, HPF_NC";
  auto micro = [&](const std::string& indent, const std::string& b) {
    return indent + "if (fresh && pc == 0) hpf_mm_micro_bx0(kc, ar, 1, asi, " + b + ", " + at + ");\n" +
           indent + "else if (mr == HPF_MR) hpf_mm_micro_bx(kc, ar, 1, asi, " + b + ", " + at + ");\n" +
           indent + "else hpf_mm_micro_rest(mr, kc, ar, 1, asi, " + b + ", " + at + ");\n";
  };
  s << "          for (i64 jp = 0; jp < nc; jp += HPF_NR) {\n"
    << "            if (direct) {\n"
    << micro("              ", "(const float*)W + ((jc + jp) / 16 * " + L(K) + " + pc) * 16, 16, WQ_BSV")
    << "            } else {\n"
    << micro("              ", "bpack + jp * HPF_KC, HPF_NR, HPF_VW")
    << "            }\n"
    << "          }\n"
    << "        }\n"
    << "      }\n";
  if (yacc)
    s << "    }\n" << epilogue << "  }\n}\n";
  else
    s << "      for (i64 ii = 0; ii < mc; ++ii) { const i64 i = ic + ii;\n"
      << "        for (i64 jj = 0; jj < nc; ++jj) { const i64 j = jc + jj;\n"
      << "          Y[i * " << L(N) << " + j] = " << c_store(Y.dtype, "wq_out(acc[ii * HPF_NC + jj], args, i, j)") << "; }\n"
      << "      }\n"
      << "    }\n  }\n}\n";
  return GeneratedKernel{name, s.str(), tiles * groups, 1};
}

}  // namespace hpf::jit
