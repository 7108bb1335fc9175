// INT8 x INT8 MatMul / Gemm ("matmul_i8"): u8 activations x s8 weights -> s32, for int8 plans
// and for ONNX MatMulInteger with constant INT8 weights.
//
// Float A (int8 plans): activations are quantised on the fly, exactly as hpf::quantize does (x / s
// rounded half to even, NaN -> 0, clamped to [-128, 127]), with s the per-tensor attr a_scale
// (static, calibrated) or, with attr a_dynamic, one scale per row chosen from the row as
// hpf::fake_quantize_rows_i8 does (s = max|row| / 127; the output then also multiplies by the
// row's s), and stored as u8 = q + 128. Output (float) = (acc - 128 * colsum[n]) * S[n], then
// the epilogue: the zero point is compensated with the weights' column sums,
//   sum_k (q_a + 128) q_w = sum_k q_a q_w + 128 * colsum[n],
// so the s32 result is exact. With attr a_u7 as well, each row gets a scale and a zero point z
// (hpf::fake_quantize_rows_u7: u = q + z in 0..127) and the output is
// (acc - z * colsum[n]) * S[n] * s: u <= 127 lets AVX2's vpmaddubsw take 8-bit weights exactly
// (2 * 127 * 128 <= 32767). With attr a_s16 instead (W8A16), rows are quantised to 16 bits
// (hpf::fake_quantize_rows_s16: s = max|row| / rows_s16_qmax(k), so that k products with 8-bit
// weights sum exactly in 32 bits) and multiplied with the weights widened to 16 bits (vpmaddwd:
// a tile of 2 rows x 16 columns, 4 k a step); the output is acc * S[n] * s. With attr w16 too
// (the planner's int16: I16 weights packed two bytes each in the same order, i16vnni), both
// operands take int16_operand_qmax(k) levels (k products sum exactly in 32 bits), the weights
// are loaded as they are (the same 2 x 16 tile: 1.51-1.63x libhpf's FP32 GEMM on BERT-base's
// shapes, as fast as with 8-bit weights; a 6 x 8 tile, fewer bytes of weights a multiply, measured
// the same).
// Inputs: A (float), W, S (F32 [P*16], s_a * s_w[n]), Z, optional C;
// attrs k, n, a_scale | a_dynamic (| a_u7 | a_s16 (| w16)) and the epilogue's (alpha, beta, out_scale).
// U8 or I8 A (MatMulInteger): A is already quantised; its rows are copied (the sign bit flipped
// where the dot product's operand is of the other signedness) and the output is the exact s32
//   sum_k (a - za) q_w = acc - (za - off) * colsum[n]
// with za the scalar zero point (optional input 3, U8/I8 like A; absent: 0) and off what the copy
// subtracted (0 or +-128). Inputs: A, W, Z; output I32; no epilogue. Exact while K * 255 * 128
// fits in 31 bits (K < 65793), as the vpdpbusd sums are 32-bit.
// Weights come pre-packed (runtime/session/weight_packing.hpp): panels of 16 columns, K padded
// to a multiple of 4, each group of 4 k one 64-byte vector
//   W[p][k / 4][lane][k % 4] (s8; the padding 0),
// the order vpdpbusd multiplies; Z (I32 [P*16]) the column sums of the INT8 weights.
//
// The dot products, chosen by the preprocessor on the host's features:
//   AMX-INT8      (MatMul only, where attr amx says the device has the tiles, K is a multiple
//                 of 64 up to 16384 and M at least 16) TDPBUSD: 16 x 16 x 64 multiply-adds per
//                 instruction; blocks of 32 rows x 32 columns in 4 accumulator tiles over the whole K, the
//                 weights' panels read as they are packed (a group of 16 k-quads of a panel is
//                 one B tile, 64-byte rows), A's tiles from the quantised chunk (32-row blocks,
//                 chunks of up to 256 KiB);
//   AVX512-VNNI   vpdpbusd zmm: 64 multiply-adds per instruction; tile 6 rows x 64 columns
//                 (24 accumulators);
//   AVX-VNNI      vpdpbusd ymm (VEX): tile 4 rows x 16 columns;
//   AVX2, weights of at most 7 bits (attr w_max_abs <= 64: the planner quantises W8A8 weights
//                 so on such a device, DeviceFormats::int8_weight_max) or u7 rows (a_u7)
//                 vpmaddubsw on u8 = q + 128 (or u7) and q_w, vpmaddwd by ones: pair sums
//                 <= 2 * 255 * 64 = 32640 (2 * 127 * 128 = 32512), exact, the throughput of
//                 oneDNN's (saturating) AVX2 kernel; u7 with 7-bit weights has room for four
//                 products (4 * 127 * 64 = 32512): i8_dp2 adds two k-groups' vpmaddubsw before
//                 one vpmaddwd (I8_PAIR, conv_i8's tiles);
//   AVX2          vpmaddubsw, exact: A is stored signed (no zero point) and the sign moves to
//                 the weights (vpsignb), so the u8 operand is |q_a| <= 128 and the s8 one
//                 |q_w| <= 127 (symmetric weights never reach -128; attr w_max_abs <= 127 says so),
//                 pair sums <= 32512 < 32767; vpmaddwd by ones adds the pairs into 32 bits.
//                 (u8 = q + 128 with vpmaddubsw would saturate: 255 * 127 * 2 > 32767.)
//   otherwise     (or weights holding -128) bytes widened to 16 bits and multiplied pairwise into
//                 32 bits (vpmaddwd), exact.
// Chunks of rows (about 4 items of 12 rows, an even number of chunks sharing the row tiles
// evenly), whose rows are quantised (or copied) once into a row-major buffer; work items are
// (chunk, column group); per block of
// panels (~128 KiB of weights, kept in L2 across the chunk), per group of panels (kept in L1
// across the chunk's rows), every row tile runs over the whole K
// (the packed panels are already in the multiply's order: nothing of B is repacked at run time).
#include <algorithm>
#include <sstream>

#include "hpf/dtype.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

namespace {
constexpr int64_t kRows = 12;
}  // namespace

std::string int8_weight_defines(const Attributes& attrs) {
  const int64_t m = attr_i(attrs, "w_max_abs", 128);
  return "#define I8_W_HAS_M128 " + std::to_string(m > 127 ? 1 : 0) + "\n#define I8_W_LE64 " + std::to_string(m <= 64 ? 1 : 0) +
         "\n#define I8_A_NONNEG " + std::to_string(attr_i(attrs, "a_nonneg", 0) != 0 ? 1 : 0) + "\n";
}

const char* int8_dot_source() {
  return R"(
typedef i32 i8_v16 __attribute__((vector_size(64), aligned(4)));  /* unaligned loads: buffers are not 64-aligned everywhere */
typedef i32 i8_v8 __attribute__((vector_size(32), aligned(4)));
typedef u8 i8_u8x16 __attribute__((vector_size(16)));
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#if I8_TRY_AMX && defined(__AMX_TILE__) && defined(__AMX_INT8__)
#define I8_AMX 1  /* the matmul's tiles on AMX (TDPBUSD): blocks of 32 rows x 32 columns */
#define I8_MR 32
#else
#define I8_MR 6
#endif
#define I8_NP 4
static inline __attribute__((always_inline)) i8_v16 i8_dp(i8_v16 acc, i8_v16 a, i8_v16 b) {
  return (i8_v16)__builtin_ia32_vpdpbusd512((i8_v16)acc, a, b);
}
#elif defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define I8_MR 4
#define I8_NP 1
static inline __attribute__((always_inline)) i8_v16 i8_dp(i8_v16 acc, i8_v16 a, i8_v16 b) {
  i8_v8 lo = __builtin_shufflevector(acc, acc, 0, 1, 2, 3, 4, 5, 6, 7);
  i8_v8 hi = __builtin_shufflevector(acc, acc, 8, 9, 10, 11, 12, 13, 14, 15);
  i8_v8 alo = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7);
  i8_v8 ahi = __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
  lo = (i8_v8)__builtin_ia32_vpdpbusd256(lo, alo, __builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7));
  hi = (i8_v8)__builtin_ia32_vpdpbusd256(hi, ahi, __builtin_shufflevector(b, b, 8, 9, 10, 11, 12, 13, 14, 15));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#define I8_HALF 1
static inline __attribute__((always_inline)) i8_v8 i8_dp8(i8_v8 acc, i8_v8 a, i8_v8 b) {
  return (i8_v8)__builtin_ia32_vpdpbusd256(acc, a, b);
}
#elif defined(__AVX2__) && (I8_W_LE64 || I8_U7 || I8_A_NONNEG)
/* AVX2 without VNNI, weights of at most 7 bits (|q_w| <= 64, as the planner quantises them for
   such a device: DeviceFormats::int8_weight_max): vpmaddubsw on u8 = q_a + 128 (<= 255) and q_w,
   then vpmaddwd by ones. Each 16-bit pair sum is at most 2 * 255 * 64 = 32640 < 32767 (u7 rows,
   any weights: 2 * 127 * 128 = 32512): exact,
   never saturating, without the sign path's vpsignb (one Zen 3 core, u8 A, 2048^3: 126.9 ->
   90.2 ms, see bench/README.md). */
#define I8_MR 4
#define I8_NP 1
typedef char i8_c32 __attribute__((vector_size(32)));
typedef short i8_h16 __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) i8_v16 i8_dp(i8_v16 acc, i8_v16 a, i8_v16 b) {
  const i8_h16 ones = (i8_h16){} + 1;
  const i8_v8 dl = (i8_v8)__builtin_ia32_pmaddwd256((i8_h16)__builtin_ia32_pmaddubsw256(
      (i8_c32)__builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7), (i8_c32)__builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7)), ones);
  const i8_v8 dh = (i8_v8)__builtin_ia32_pmaddwd256((i8_h16)__builtin_ia32_pmaddubsw256(
      (i8_c32)__builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15), (i8_c32)__builtin_shufflevector(b, b, 8, 9, 10, 11, 12, 13, 14, 15)), ones);
  return acc + __builtin_shufflevector(dl, dh, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#define I8_HALF 1
static inline __attribute__((always_inline)) i8_v8 i8_dp8(i8_v8 acc, i8_v8 a, i8_v8 b) {
  return acc + (i8_v8)__builtin_ia32_pmaddwd256((i8_h16)__builtin_ia32_pmaddubsw256((i8_c32)a, (i8_c32)b), (i8_h16){} + 1);
}
#if I8_W_LE64 && (I8_U7 || I8_A_NONNEG)
/* u7 activations and 7-bit weights: the 16-bit sums of two k-groups' pairs (4 products) stay
   within 4 * 127 * 64 = 32512, exact: two vpmaddubsw added (vpaddw) before one vpmaddwd, 3
   multiplies for 8 k instead of 4 (i8_dp2 = i8_dp(i8_dp(acc, a, b), a2, b2)). */
#define I8_PAIR 1
static const i8_h16 i8_ones = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static inline __attribute__((always_inline)) i8_v16 i8_dp2(i8_v16 acc, i8_v16 a, i8_v16 b, i8_v16 a2, i8_v16 b2) {
#define I8_HALF_SUM(l0, l1, l2, l3, l4, l5, l6, l7) \
  ((i8_h16)__builtin_ia32_pmaddubsw256((i8_c32)__builtin_shufflevector(a, a, l0, l1, l2, l3, l4, l5, l6, l7), \
                                       (i8_c32)__builtin_shufflevector(b, b, l0, l1, l2, l3, l4, l5, l6, l7)) + \
   (i8_h16)__builtin_ia32_pmaddubsw256((i8_c32)__builtin_shufflevector(a2, a2, l0, l1, l2, l3, l4, l5, l6, l7), \
                                       (i8_c32)__builtin_shufflevector(b2, b2, l0, l1, l2, l3, l4, l5, l6, l7)))
  i8_h16 sl = I8_HALF_SUM(0, 1, 2, 3, 4, 5, 6, 7), sh = I8_HALF_SUM(8, 9, 10, 11, 12, 13, 14, 15);
#undef I8_HALF_SUM
  /* the ones from memory: in a register they leave a 4 x 16 tile's 8 sums one short (a spill) */
  __asm__("vpmaddwd %1, %0, %0" : "+x"(sl) : "m"(i8_ones));
  __asm__("vpmaddwd %1, %0, %0" : "+x"(sh) : "m"(i8_ones));
  return acc + __builtin_shufflevector((i8_v8)sl, (i8_v8)sh, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#endif
#elif defined(__AVX2__) && !I8_W_HAS_M128
/* AVX2 without VNNI: vpmaddubsw on |q_a| (u8, <= 128) and q_w * sign(q_a) (s8, |q_w| <= 127),
   then vpmaddwd by ones. Each 16-bit pair sum is at most 2 * 128 * 127 = 32512 < 32767: exact,
   never saturating (weights holding -128 take the widening path below). A is stored signed. */
#define I8_MR 4
#define I8_NP 1
#define I8_SIGNED 1
typedef char i8_c32 __attribute__((vector_size(32)));
typedef short i8_h16 __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) i8_v16 i8_dp(i8_v16 acc, i8_v16 a, i8_v16 b) {
  const i8_c32 al = (i8_c32)__builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7);
  const i8_c32 ah = (i8_c32)__builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
  const i8_h16 ones = (i8_h16){} + 1;
  const i8_c32 bl = __builtin_ia32_psignb256((i8_c32)__builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7), al);
  const i8_c32 bh = __builtin_ia32_psignb256((i8_c32)__builtin_shufflevector(b, b, 8, 9, 10, 11, 12, 13, 14, 15), ah);
  const i8_v8 dl = (i8_v8)__builtin_ia32_pmaddwd256((i8_h16)__builtin_ia32_pmaddubsw256(__builtin_elementwise_abs(al), bl), ones);
  const i8_v8 dh = (i8_v8)__builtin_ia32_pmaddwd256((i8_h16)__builtin_ia32_pmaddubsw256(__builtin_elementwise_abs(ah), bh), ones);
  return acc + __builtin_shufflevector(dl, dh, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#define I8_HALF 1
static inline __attribute__((always_inline)) i8_v8 i8_dp8(i8_v8 acc, i8_v8 a, i8_v8 b) {
  const i8_c32 ac = (i8_c32)a;
  return acc + (i8_v8)__builtin_ia32_pmaddwd256(
                   (i8_h16)__builtin_ia32_pmaddubsw256(__builtin_elementwise_abs(ac), __builtin_ia32_psignb256((i8_c32)b, ac)),
                   (i8_h16){} + 1);
}
#else
#define I8_MR 4
#define I8_NP 1
typedef short i8_s16x32 __attribute__((vector_size(64)));
typedef unsigned char i8_u8x64 __attribute__((vector_size(64)));
typedef signed char i8_s8x64 __attribute__((vector_size(64)));
/* Lane j of the result: sum over its 4 bytes of u8(a) * s8(b), exact in 32 bits. */
static inline __attribute__((always_inline)) i8_v16 i8_dp(i8_v16 acc, i8_v16 a, i8_v16 b) {
  i8_s16x32 a0 = __builtin_convertvector(__builtin_shufflevector((i8_u8x64)a, (i8_u8x64)a, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31), i8_s16x32);
  i8_s16x32 a1 = __builtin_convertvector(__builtin_shufflevector((i8_u8x64)a, (i8_u8x64)a, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63), i8_s16x32);
  i8_s16x32 b0 = __builtin_convertvector(__builtin_shufflevector((i8_s8x64)b, (i8_s8x64)b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31), i8_s16x32);
  i8_s16x32 b1 = __builtin_convertvector(__builtin_shufflevector((i8_s8x64)b, (i8_s8x64)b, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63), i8_s16x32);
#if defined(__AVX2__)
#define I8_MADD(x, y, o) (i8_v8)__builtin_ia32_pmaddwd256(__builtin_shufflevector(x, x, o + 0, o + 1, o + 2, o + 3, o + 4, o + 5, o + 6, o + 7, o + 8, o + 9, o + 10, o + 11, o + 12, o + 13, o + 14, o + 15), __builtin_shufflevector(y, y, o + 0, o + 1, o + 2, o + 3, o + 4, o + 5, o + 6, o + 7, o + 8, o + 9, o + 10, o + 11, o + 12, o + 13, o + 14, o + 15))
  /* pair sums (k, k+1) and (k+2, k+3) of 4 lanes per 16 shorts; then the two pairs of a lane. */
  i8_v8 p0 = I8_MADD(a0, b0, 0), p1 = I8_MADD(a0, b0, 16), p2 = I8_MADD(a1, b1, 0), p3 = I8_MADD(a1, b1, 16);
#undef I8_MADD
  i8_v16 pa = __builtin_shufflevector(p0, p1, 0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  i8_v16 pb = __builtin_shufflevector(p0, p1, 1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
  i8_v16 pc = __builtin_shufflevector(p2, p3, 0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  i8_v16 pd = __builtin_shufflevector(p2, p3, 1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
  i8_v16 lo = pa + pb, hi = pc + pd;
  return acc + __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
#else
  i8_v16 r = acc;
  for (int j = 0; j < 16; ++j)
    r[j] += (i32)((j < 8 ? a0 : a1)[(j % 8) * 4 + 0]) * (j < 8 ? b0 : b1)[(j % 8) * 4 + 0] +
            (i32)((j < 8 ? a0 : a1)[(j % 8) * 4 + 1]) * (j < 8 ? b0 : b1)[(j % 8) * 4 + 1] +
            (i32)((j < 8 ? a0 : a1)[(j % 8) * 4 + 2]) * (j < 8 ? b0 : b1)[(j % 8) * 4 + 2] +
            (i32)((j < 8 ? a0 : a1)[(j % 8) * 4 + 3]) * (j < 8 ? b0 : b1)[(j % 8) * 4 + 3];
  return r;
#endif
}
#endif
#ifndef I8_PAIR
#define I8_PAIR 0
#endif
#ifndef I8_HALF
#define I8_HALF 0 /* i8_dp8 (lanes 0-7 of i8_dp) where 256-bit vectors are the native width */
#endif
#if defined(I8_SIGNED) || I8_A_NONNEG || I8_S16
#define I8_ZP 0   /* A stored as s8 q (or never negative: u7 q; or 16-bit q); no zero point to compensate */
#else
#define I8_ZP 128 /* A stored as u8 q + 128: 128 times the weights' column sums to subtract */
#endif
/* x (already divided by the scale) quantised as hpf::quantize does it: NaN -> 0, rounded half to
   even, clamped to [-128, 127]; plus the zero point. With AVX-512 three instructions do the
   NaN mask, the rounding and the conversion (vcvtps2dq, round to nearest even, masked), with the
   clamp above done first in floats (past 2^31 it would convert to INT_MIN) and below in integers. */
static inline __attribute__((always_inline)) i8_v16 i8_quant(hpf_f32x16 x) {
#if defined(__AVX512F__)
  const unsigned short ord = __builtin_ia32_cmpps512_mask(x, x, 7 /* ordered */, 0xffff, 4);
  const i8_v16 q = __builtin_ia32_cvtps2dq512_mask(__builtin_elementwise_min(x, (hpf_f32x16){} + 127.0f), (i8_v16){},
                                                   ord, 8 /* nearest even, no exceptions */);
  return __builtin_elementwise_max(q, (i8_v16){} - 128) + I8_ZP;
#else
  x = (hpf_f32x16)((hpf_u32x16)x & (hpf_u32x16)(x == x));
  x = __builtin_elementwise_min(__builtin_elementwise_max(x, (hpf_f32x16){} - 128.0f), (hpf_f32x16){} + 127.0f);
#if defined(__AVX__)
  /* vcvtps2dq rounds in the current mode, as rint does (nearest even): one instruction, not two */
  typedef float i8_f8 __attribute__((vector_size(32)));
  const i8_v8 lo = (i8_v8)__builtin_ia32_cvtps2dq256((i8_f8)__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7));
  const i8_v8 hi = (i8_v8)__builtin_ia32_cvtps2dq256((i8_f8)__builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) + I8_ZP;
#else
  return __builtin_convertvector(__builtin_elementwise_rint(x), i8_v16) + I8_ZP;
#endif
#endif
}
)";
}

// 16-bit rows (a_s16): a tile of 2 rows x 16 columns, 4 k a step. A k-group's 64 bytes of
// weights (16 columns x 4 k) are widened to 16 bits as four vectors of 4 columns x 4 k; the
// row's 4 values, broadcast, multiply each by vpmaddwd into 4 columns x 2 partial sums (the
// pairs k0 k1 and k2 k3), added at the end. |acc| <= k * qmax * 128 < 2^31 (rows_s16_qmax).
// Zen 3: ~24 multiply-adds a cycle (u7 rows ~31, the vpsignb path for s8 x s8 ~22, FP32 FMA 16).
const char* int8_s16_source() {
  return R"(
#undef I8_MR
#define I8_MR 2
#undef I8_NP
#define I8_NP 1
typedef short i8s_h16 __attribute__((vector_size(32)));
typedef i32 i8s_v8 __attribute__((vector_size(32)));
typedef signed char i8s_c16 __attribute__((vector_size(16)));
typedef long long i8s_q4 __attribute__((vector_size(32)));
/* Lane j: a[2j] b[2j] + a[2j+1] b[2j+1], exact in 32 bits. */
static inline __attribute__((always_inline)) i8s_v8 i8s_madd(i8s_h16 a, i8s_h16 b) {
#if defined(__AVX2__)
  return (i8s_v8)__builtin_ia32_pmaddwd256(a, b);
#else
  i8s_v8 r;
  for (int j = 0; j < 8; ++j) r[j] = (i32)a[2 * j] * b[2 * j] + (i32)a[2 * j + 1] * b[2 * j + 1];
  return r;
#endif
}
)";
}

Expected<GeneratedKernel> generate_c_matmul_i8(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1) return Status::invalid("matmul_i8: needs A, W, Z (and S for a float A) and one output");
  const TensorDesc &A = spec.inputs[0], &Y = spec.outputs[0];
  // U8/I8 A (MatMulInteger): copied, not quantised; an exact I32 output.
  const bool integer = A.dtype == DType::U8 || A.dtype == DType::I8;
  if (integer ? Y.dtype != DType::I32 || !spec.epilogue.empty() || spec.inputs.size() > 4 ||
                    (spec.inputs.size() == 4 && spec.inputs[3].dtype != A.dtype)
              : !is_float(A.dtype) || !is_float(Y.dtype) || spec.inputs.size() < 4)
    return Status::unsupported("C codegen: matmul_i8 on " + std::string(dtype_name(A.dtype)) + " -> " +
                               std::string(dtype_name(Y.dtype)));
  const int64_t K = attr_i(spec.attrs, "k", 0), N = attr_i(spec.attrs, "n", 0);
  const float a_scale = attr_f(spec.attrs, "a_scale", 0.0f);
  const bool dynamic = attr_i(spec.attrs, "a_dynamic", 0) != 0;
  const bool u7 = attr_i(spec.attrs, "a_u7", 0) != 0;
  const bool s16 = attr_i(spec.attrs, "a_s16", 0) != 0;
  if ((u7 || s16) && !dynamic)
    return Status::invalid("matmul_i8: a_u7 and a_s16 need a_dynamic (such rows are chosen at run time)");
  if (u7 && s16) return Status::invalid("matmul_i8: a_u7 and a_s16 together");
  const bool w16 = attr_i(spec.attrs, "w16", 0) != 0;  // I16 weights (i16vnni), with 16-bit rows only
  if (w16 && !s16) return Status::invalid("matmul_i8: w16 needs a_s16 (16-bit weights meet 16-bit rows)");
  if (K <= 0 || N <= 0 || (!integer && dynamic == (a_scale > 0)) || A.shape.empty() || A.shape.back() != K ||
      Y.shape.empty() || Y.shape.back() != N)
    return Status::invalid("matmul_i8: inconsistent k/n/a_scale for A " + shape_string(A.shape) + " and Y " +
                           shape_string(Y.shape));
  const int64_t M = numel(Y.shape) / N, P = (N + 15) / 16, KG = (K + 3) / 4, KP = (K + 15) / 16 * 16, KR = KP / 4;
  const int64_t PB = KG * (w16 ? 128 : 64);  // bytes of a packed panel
  // Rows quantised at once (a chunk: up to 4 row items, at most ~192 KiB of u8 on the stack) and
  // panels per column block (~128 KiB of weights, a multiple of 4 panels). Work item = one chunk
  // of rows and one of CS groups of PG panels (chunk-major). The columns are split where the rows
  // alone would give few items: a GEMV-like M (so that every thread streams its share of the
  // weights) or fewer than 4 chunks. A range quantises each of its chunks once, however many of
  // the chunk's groups it holds.
  const int64_t row_items = (M + kRows - 1) / kRows;
  // AMX: chunks of whole 32-row blocks, up to 256 KiB of A (each panel pair's weights are read
  // once per chunk, so the deeper the chunk the less weight traffic per tile multiply).
  // (K at most 16384: a 32-row chunk, at least, on the stack.)
  const bool amx = attr_i(spec.attrs, "amx", 0) != 0 && K % 64 == 0 && K <= 16384 && M >= 16 && !s16;
  // Words per row of the quantised buffer: KR, or for AMX one cache line more, so that a tile's
  // 16 rows do not share a few L1 sets when K is a multiple of 1 KiB (2048^3 with u8 A on one
  // core: 14.6 -> 8.5 ms).
  // 16-bit rows (s16): two words per k-group.
  const int64_t AR = s16 ? 2 * KR : amx ? KR + 16 : KR, AW = s16 ? 2 * KG : KG;
  const int64_t rows_wanted = amx ? 32 * std::clamp<int64_t>(262144 / (KP * 32), 1, 8)
                              : row_items < 4 ? kRows
                                              : kRows * std::clamp<int64_t>(196608 / (AW * 4 * kRows), 1, 4);
  // The chunks share the row tiles evenly (chunk rc: tiles [rc T / RC, (rc + 1) T / RC) of the
  // T = ceil(M / I8_MR), I8_MR the host's tile rows), an even number of them where there are
  // several, as the threads take ranges of equal counts: in chunks of whole 12-row items, two
  // threads had shared BERT's 128 rows as 72 against 56 and 1024 rows as 528 against 496 (INT8
  // GEMM with two threads 2-4% short of oneDNN's).
  int64_t RC = (M + rows_wanted - 1) / rows_wanted;
  if (RC > 1 && RC % 2 == 1) ++RC;
  // Rows of the largest chunk (its buffer's), for any tile height (4 or 6 rows; AMX: 32).
  int64_t chunk = 0;
  for (int64_t mr : {2, 4, 6, amx ? 32 : 4}) chunk = std::max(chunk, ((M + mr - 1) / mr + RC - 1) / RC * mr);
  const int64_t CS0 = row_items < 4 ? std::clamp<int64_t>(P / 8, 1, 8)
                      : RC >= 4     ? 1
                                    : std::clamp<int64_t>((4 + RC - 1) / RC, 1, std::max<int64_t>(1, P / 8));
  const int64_t PG = (P + CS0 - 1) / CS0, CS = (P + PG - 1) / PG;
  const int64_t block = std::max<int64_t>(4, (131072 / PB) / 4 * 4);
  const size_t zi = integer ? 2 : 3;  // the column sums' input
  std::string out_fn;
  if (!integer) {
    HPF_ASSIGN_OR_RETURN(out_fn, c_matmul_epilogue(spec, 4));
  }
  // The stored value of an output: (acc - zc * colsum) exactly (I32) or dequantised.
  const std::string out_value =
      integer ? "(i32)((u32)o[jj] - (u32)zc * (u32)Z[j])"
              : c_store(Y.dtype, "wq_out((float)(o[jj] - (I8_U7 ? zr[r] : zc) * Z[j]) * S[j] * (I8_DYNAMIC ? rs[r] : 1.0f), args, i0 + r, j)");
  std::ostringstream s;
  s << c_prelude() << "#define I8_TRY_AMX " << (amx ? 1 : 0) << "\n" << int8_weight_defines(spec.attrs)
    << "#define I8_DYNAMIC " << (dynamic ? 1 : 0) << "\n#define I8_U7 " << (u7 ? 1 : 0) << "\n#define I8_S16 "
    << (s16 ? 1 : 0) << "\n#define I8_W16 " << (w16 ? 1 : 0) << "\n#define I8_QMAX "
    << (w16 ? int16_operand_qmax(K) : s16 ? rows_s16_qmax(K) : 127) << ".0f\n"
    << int8_dot_source() << (s16 ? int8_s16_source() : "") << out_fn
    // The 16 outputs of row r (of the rows from i0) in panel pc from their s32 sums o.
    << "static inline __attribute__((always_inline)) void i8_row_out(const i32* restrict o, const float* restrict rs,\n"
    << "    const i32* restrict zr,\n"
    << "    const float* restrict S, const i32* restrict Z, const i32 zc, void* const* args, " << c_storage_type(Y.dtype)
    << "* restrict Y, i64 i0, int r, i64 pc) {\n"
    << "  (void)rs; (void)zr; (void)S; (void)args;\n"
    // A whole panel's 16 columns without a bound check, so that the loop vectorises; not
    // unrolled: -O3 unrolled it whole and left it scalar where the epilogue reads a bias
    // (BERT-base's 768 x 768 Gemm with one thread: 0.90 -> 0.82 ms); a vector register wide
    // (left to itself clang took 4 lanes: BERT-base's FFN GEMM with its GELU epilogue, one
    // thread, 4.0 -> 3.65 ms, the epilogue's share halved).
    << "  const int full = " << (N % 16 == 0 ? "1" : "pc * 16 + 16 <= " + L(N)) << ";\n"
    << "#if defined(__AVX512F__)\n#pragma clang loop unroll(disable) vectorize_width(16)\n"
    << "#else\n#pragma clang loop unroll(disable) vectorize_width(8)\n#endif\n"
    << "  for (i64 jj = 0; jj < 16; ++jj) { const i64 j = pc * 16 + jj; if (!full && j >= " << L(N) << ") break;\n"
    << "    Y[(i0 + r) * " << L(N) << " + j] = " << out_value << "; }\n"
    << "}\n"
    // One tile: rows [0, I8_MR) of the quantised block (row-major, AR words a row), NP
    // panels from p; accumulators over the whole K, then the epilogue. `pf` (or 0): the next
    // panels' weights, asked into L2 line by line as this tile reads its own (weights larger than
    // the last-level cache arrive from memory: the first row tile of each panel waited on them,
    // BERT-base's INT8 FFN GEMMs ~13% slower in the model than with a hot weight).
    << "static inline __attribute__((always_inline, min_vector_width(512))) void i8_tile(\n"
    << "    const i32* restrict ap, const float* restrict rs, const i32* restrict zr, const u8* restrict W, const float* restrict S, const i32* restrict Z,\n"
    << "    const i32 zc, void* const* args, " << c_storage_type(Y.dtype) << "* restrict Y, i64 i0, i64 mr, i64 p, const int np,\n"
    << "    const u8* restrict pf) {\n"
    << "  (void)rs; (void)zr; (void)S; (void)args;\n"
    << "  i8_v16 acc[I8_MR][I8_NP];\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int r = 0; r < I8_MR; ++r)\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int c = 0; c < I8_NP; ++c) acc[r][c] = (i8_v16){};\n"
    // The tile's output lines, asked for now and written after the whole K: stored cold, each
    // would wait for its read-for-ownership (1024^3 on one Zen 4 core: 5.40 -> 5.15 ms).
    << "  for (int r = 0; r < mr; ++r) hpf_prefetch_w(Y + (i0 + r) * " << L(N) << " + p * 16, np * 16 * (i64)sizeof(*Y));\n"
    << "  const u8* restrict wp = W + p * " << L(KG * 64) << ";\n"
    << "  for (i64 g = 0; g < " << L(KG) << "; ++g) {\n"
    << "    i8_v16 b[I8_NP];\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int c = 0; c < I8_NP; ++c) if (c < np) b[c] = *(const i8_v16*)(wp + c * " << L(KG * 64) << " + g * 64);\n"
    << "    if (pf)\n"
    << "#pragma clang loop unroll(full)\n"
    << "      for (int c = 0; c < I8_NP; ++c) if (c < np) __builtin_prefetch(pf + c * " << L(KG * 64) << " + g * 64, 0, 2);\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int r = 0; r < I8_MR; ++r) {\n"
    << "      const i8_v16 a = (i8_v16){} + ap[r * " << L(AR) << " + g];\n"
    << "#pragma clang loop unroll(full)\n"
    << "      for (int c = 0; c < I8_NP; ++c) if (c < np) acc[r][c] = i8_dp(acc[r][c], a, b[c]);\n"
    << "    }\n"
    << "  }\n"
    << "  for (int r = 0; r < mr; ++r)\n"
    << "    for (int c = 0; c < np; ++c) {\n"
    << "      i32 o[16]; __builtin_memcpy(o, &acc[r][c], 64);\n"
    << "      i8_row_out(o, rs, zr, S, Z, zc, args, Y, i0, r, p + c);\n"
    << "    }\n"
    << "}\n";
  if (s16)
    s << "static inline __attribute__((always_inline)) void i8s_tile(\n"
      << "    const i32* restrict ap, const float* restrict rs, const i32* restrict zr, const u8* restrict W, const float* restrict S, const i32* restrict Z,\n"
      << "    const i32 zc, void* const* args, " << c_storage_type(Y.dtype) << "* restrict Y, i64 i0, i64 mr, i64 p,\n"
      << "    const u8* restrict pf) {\n"
      << "  i8s_v8 acc[2][4];\n"
      << "#pragma clang loop unroll(full)\n"
      << "  for (int r = 0; r < 2; ++r)\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < 4; ++c) acc[r][c] = (i8s_v8){};\n"
      << "  for (int r = 0; r < mr; ++r) hpf_prefetch_w(Y + (i0 + r) * " << L(N) << " + p * 16, 16 * (i64)sizeof(*Y));\n"
      << "  const u8* restrict wp = W + p * " << L(PB) << ";\n"
      << "  const short* restrict a0 = (const short*)ap;\n"
      << "  const short* restrict a1 = a0 + " << L(2 * AR) << ";\n"
      << "  for (i64 g = 0; g < " << L(KG) << "; ++g) {\n"
      << "    i8s_h16 b[4];\n"
      << "#pragma clang loop unroll(full)\n"
      << "#if I8_W16\n"
      << "    for (int c = 0; c < 4; ++c) __builtin_memcpy(&b[c], wp + g * 128 + c * 32, 32);\n"
      << "    if (pf) { __builtin_prefetch(pf + g * 128, 0, 2); __builtin_prefetch(pf + g * 128 + 64, 0, 2); }\n"
      << "#else\n"
      << "    for (int c = 0; c < 4; ++c) { i8s_c16 wb; __builtin_memcpy(&wb, wp + g * 64 + c * 16, 16); b[c] = __builtin_convertvector(wb, i8s_h16); }\n"
      << "    if (pf) __builtin_prefetch(pf + g * 64, 0, 2);\n"
      << "#endif\n"
      << "    long long q0, q1; __builtin_memcpy(&q0, a0 + 4 * g, 8); __builtin_memcpy(&q1, a1 + 4 * g, 8);\n"
      << "    const i8s_h16 v0 = (i8s_h16)((i8s_q4){} + q0), v1 = (i8s_h16)((i8s_q4){} + q1);\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < 4; ++c) { acc[0][c] += i8s_madd(v0, b[c]); acc[1][c] += i8s_madd(v1, b[c]); }\n"
      << "  }\n"
      << "  for (int r = 0; r < mr; ++r) {\n"
      << "    i32 o[16];\n"
      << "    for (int c = 0; c < 4; ++c)\n"
      << "      for (int q = 0; q < 4; ++q) o[4 * c + q] = acc[r][c][2 * q] + acc[r][c][2 * q + 1];\n"
      << "    i8_row_out(o, rs, zr, S, Z, zc, args, Y, i0, r, p);\n"
      << "  }\n"
      << "}\n";
  s << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(A.dtype) << "* restrict A = (const " << c_storage_type(A.dtype) << "*)args[0];\n"
    << "  const u8* restrict W = (const u8*)args[1];\n"
    << "  const float* restrict S = " << (integer ? "0" : "(const float*)args[2]") << ";\n"
    << "  const i32* restrict Z = (const i32*)args[" << zi << "];\n"
    << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[" << spec.inputs.size()
    << "];\n";
  if (integer) {
    // What the copy subtracts from a (u8 a as is for a u8 operand, as a - 128 for the signed
    // one; s8 a the other way round) and so the multiple of the column sums to take off.
    const bool u8a = A.dtype == DType::U8;
    s << "#if defined(I8_SIGNED)\n  enum { I8_OFF = " << (u8a ? 128 : 0) << ", I8_FLIP = " << (u8a ? "0x80" : "0") << " };\n"
      << "#else\n  enum { I8_OFF = " << (u8a ? 0 : -128) << ", I8_FLIP = " << (u8a ? "0" : "0x80") << " };\n#endif\n"
      << "  const i32 zc = " << (spec.inputs.size() == 4 ? "(i32)((const " + std::string(c_storage_type(A.dtype)) + "*)args[3])[0]" : "0")
      << " - I8_OFF;\n";
  } else {
    s << "  enum { I8_FLIP = 0 };\n  const i32 zc = I8_ZP;\n";
  }
  const std::string tiles = "((" + L(M) + " + I8_MR - 1) / I8_MR)";
  s << "  i32 ap[" << AR * chunk << "] __attribute__((aligned(64)));\n"
    << "#if I8_AMX\n  i32 cb[32 * 32] __attribute__((aligned(64)));\n  hpf_amx_configure();\n#endif\n"
    << "  float rs[" << chunk << "];  /* per-row scales (a_dynamic) */\n"
    << "  i32 zr[" << (u7 ? chunk : 1) << "];  /* per-row zero points (a_u7) */\n"
    << "  for (i64 w = begin; w < end;) {\n"
    // This chunk's column groups in the range: [cg0, wl - rc * CS).
    << "    const i64 rc = w / " << L(CS) << ", cg0 = w % " << L(CS) << ", wl = (rc + 1) * " << L(CS) << " < end ? (rc + 1) * "
    << L(CS) << " : end;\n"
    << "    const i64 i0 = rc * " << tiles << " / " << L(RC) << " * I8_MR, i1 = (rc + 1) * " << tiles << " / " << L(RC)
    << " * I8_MR < " << L(M) << " ? (rc + 1) * " << tiles << " / " << L(RC) << " * I8_MR : " << L(M) << ";\n"
    << "    const i64 rows = i1 - i0, rpad = (rows + I8_MR - 1) / I8_MR * I8_MR;\n"
    << "    const i64 p0 = cg0 * " << L(PG) << ", p1 = (wl - rc * " << L(CS) << ") * " << L(PG) << " < " << L(P) << " ? (wl - rc * "
    << L(CS) << ") * " << L(PG) << " : " << L(P) << ";\n"
    << "    w = wl;\n"
    << "    for (i64 r = 0; r < rpad; ++r) {\n"
    << "      if (r >= rows) { for (i64 g = 0; g < " << L(AW) << "; ++g) ap[r * " << L(AR) << " + g] = (i32)(I8_ZP * 0x01010101u); continue; }\n"
    << "      const i64 i = i0 + r;\n";
  if (integer) {
    // Copy the row (the padding past K multiplies zero weights). Always copied: A read in place
    // where its rows are whole 16-byte words (as until session 32) ran 1-12% slower on Zen 3
    // (AVX2), one and two threads, 256^3 to 2048^3 and BERT's shapes, timed in turn in one
    // process (bench/README.md); the copied chunk is then this core's, in L1/L2.
    s << "      u8* restrict dst = (u8*)(ap + r * " << L(AR) << ");\n"
      << "      const u8* restrict src = (const u8*)(A + i * " << L(K) << ");\n"
      << "      for (i64 k = 0; k < " << L(K) << "; ++k) dst[k] = (u8)(src[k] ^ I8_FLIP);\n"
      << "      for (i64 k = " << L(K) << "; k < " << L(KP) << "; ++k) dst[k] = 0;\n"
      << "    }\n";
  } else {
    // Quantise the chunk's rows: u8 = clamp(rne(a / s), -128, 127) + 128; padding 128 (times a 0
    // weight). A row is staged in FP32 (unless it is FP32 whole vectors already), then 16 lanes
    // at a time (the division, NaN -> 0, clamp and rint as hpf::quantize does them, per lane),
    // 4 k-groups of its row of the buffer per step.
    s << (A.dtype == DType::F32 && K == KP
              ? "      const float* restrict xr = A + i * " + L(K) + ";\n"
              : "      float xr[" + std::to_string(KP) + "] __attribute__((aligned(64)));\n"
                "      for (i64 k = 0; k < " + L(K) + "; ++k) xr[k] = " + c_load_operand(A.dtype, "A[i * " + L(K) + " + k]") + ";\n"
                "      for (i64 k = " + L(K) + "; k < " + L(KP) + "; ++k) xr[k] = 0.0f;\n")
      << "      float s = " << (dynamic ? "1.0f" : c_float(a_scale)) << ";\n"
      << "#if I8_U7\n"
      // u7 rows: [lo, hi] spans 0 and the row (NaN ignored); s and z as fake_quantize_rows_u7.
      << "      float zf;\n"
      << "      {\n"
      << "        hpf_f32x16 mn = (hpf_f32x16){}, mx = (hpf_f32x16){};\n"
      << "        for (i64 k = 0; k < " << L(KP) << "; k += 16) {\n"
      << "          hpf_f32x16 x; __builtin_memcpy(&x, xr + k, 64);\n"
      << "          x = (hpf_f32x16)((hpf_u32x16)x & (hpf_u32x16)(x == x));\n"
      << "          mn = __builtin_elementwise_min(mn, x);\n"
      << "          mx = __builtin_elementwise_max(mx, x);\n"
      << "        }\n"
      << "        const float lo = __builtin_reduce_min(mn), hi = __builtin_reduce_max(mx);\n"
      << "        s = hi - lo == 0.0f ? 1.0f : (hi - lo) / 127.0f;\n"
      << "        s = s < 1.17549435e-38f ? 1.17549435e-38f : s;\n"
      << "        zf = __builtin_rintf(-lo / s);\n"
      << "        zf = zf == zf ? (zf < 0.0f ? 0.0f : zf > 127.0f ? 127.0f : zf) : 0.0f;\n"
      << "        zr[r] = (i32)zf;\n"
      << "      }\n"
      << "      rs[r] = s;\n"
      << "#elif I8_DYNAMIC\n"
      << "      {\n"
      << "        hpf_f32x16 m = (hpf_f32x16){};\n"
      << "        for (i64 k = 0; k < " << L(KP) << "; k += 16) {\n"
      << "          hpf_f32x16 x; __builtin_memcpy(&x, xr + k, 64);\n"
      << "          x = (hpf_f32x16)((hpf_u32x16)x & (hpf_u32x16)(x == x));  /* NaN -> 0: ignored by the max */\n"
      << "          m = __builtin_elementwise_max(m, __builtin_elementwise_abs(x));\n"
      << "        }\n"
      << "        const float amax = __builtin_reduce_max(m);\n"
      << "        s = amax == 0.0f ? 1.0f : amax / I8_QMAX;\n"
      << "        s = s < 1.17549435e-38f ? 1.17549435e-38f : s;\n"
      << "      }\n"
      << "      rs[r] = s;\n"
      << "#endif\n"
      << "      const hpf_f32x16 sv = (hpf_f32x16){} + s;\n"
      << "      for (i64 k = 0; k < " << L(KP) << "; k += 16) {\n"
      << "        hpf_f32x16 x; __builtin_memcpy(&x, xr + k, 64);\n"
      << "#if I8_U7\n"
      // x / s, NaN -> 0, clamped to [-z, 127 - z] (integers: as clamping after rounding), + z.
      << "        hpf_f32x16 v = x / sv;\n"
      << "        v = (hpf_f32x16)((hpf_u32x16)v & (hpf_u32x16)(v == v));\n"
      << "        v = __builtin_elementwise_min(__builtin_elementwise_max(v, (hpf_f32x16){} - zf), (hpf_f32x16){} + (127.0f - zf));\n"
      << "        const i8_v16 qi = __builtin_convertvector(__builtin_elementwise_rint(v), i8_v16) + zr[r];\n"
      << "#elif I8_S16\n"
      // x / s, NaN -> 0, clamped to [-qmax, qmax], rounded half to even: 16 shorts.
      << "        hpf_f32x16 v = x / sv;\n"
      << "        v = (hpf_f32x16)((hpf_u32x16)v & (hpf_u32x16)(v == v));\n"
      << "        v = __builtin_elementwise_min(__builtin_elementwise_max(v, (hpf_f32x16){} - I8_QMAX), (hpf_f32x16){} + I8_QMAX);\n"
      << "        const i8s_h16 qs = __builtin_convertvector(__builtin_convertvector(__builtin_elementwise_rint(v), i8_v16), i8s_h16);\n"
      << "        __builtin_memcpy((short*)(ap + r * " << L(AR) << ") + k, &qs, 32);\n"
      << "#else\n"
      << "        const i8_v16 qi = i8_quant(x / sv);\n"
      << "#endif\n"
      << "#if !I8_S16\n"
      << "        const i8_u8x16 qb = __builtin_convertvector(qi, i8_u8x16);\n"
      << "        __builtin_memcpy(ap + r * " << L(AR) << " + (k >> 2), &qb, 16);\n"
      << "#endif\n"
      << "      }\n"
      << "    }\n";
  }
  // Column blocks of B small enough to stay in L2 across the chunk's rows; inside a block, the
  // row tiles run under one group of NP panels at a time, which stays in L1 meanwhile.
  // AMX: per pair of panels (32 columns) every 32-row block of the chunk, 4 accumulator tiles
  // (tiles 0-3; A in 4-5, B in 6-7) over the whole K, stored to cb and finished per row.
  s << "#if I8_AMX\n"
    << "    for (i64 p = p0; p < p1; p += 2) {\n"
    << "      const int np = p + 2 <= p1 ? 2 : 1;\n"
    << "      const u8* restrict b0 = W + p * " << L(KG * 64) << ";\n"
    << "      for (i64 r0 = 0; r0 < rows; r0 += 32) {\n"
    << "        const int mr = rows - r0 < 32 ? (int)(rows - r0) : 32;\n"
    << "        const char* restrict at = (const char*)(ap + r0 * " << L(AR) << ");\n"
    << "        const i64 lda = " << L(AR * 4) << ";\n"
    << "        __builtin_ia32_tilezero(0); __builtin_ia32_tilezero(1);\n"
    << "        __builtin_ia32_tilezero(2); __builtin_ia32_tilezero(3);\n"
    // A lone last panel (np == 1) leaves tiles 1 and 3 at zero.
    << "        for (i64 g = 0; g < " << L(KG) << "; g += 16) {\n"
    << "          __builtin_ia32_tileloadd64(4, at + g * 4, lda);\n"
    << "          __builtin_ia32_tileloadd64(5, at + g * 4 + 16 * lda, lda);\n"
    << "          __builtin_ia32_tileloadd64(6, b0 + g * 64, 64);\n"
    << "          __builtin_ia32_tdpbusd(0, 4, 6); __builtin_ia32_tdpbusd(2, 5, 6);\n"
    << "          if (np == 2) {\n"
    << "            __builtin_ia32_tileloadd64(7, b0 + " << L(KG * 64) << " + g * 64, 64);\n"
    << "            __builtin_ia32_tdpbusd(1, 4, 7); __builtin_ia32_tdpbusd(3, 5, 7);\n"
    << "          }\n"
    << "        }\n"
    << "        __builtin_ia32_tilestored64(0, cb, 128); __builtin_ia32_tilestored64(1, cb + 16, 128);\n"
    << "        __builtin_ia32_tilestored64(2, cb + 512, 128); __builtin_ia32_tilestored64(3, cb + 528, 128);\n"
    << "        for (int r = 0; r < mr; ++r)\n"
    << "          for (int c = 0; c < np; ++c) i8_row_out(cb + r * 32 + c * 16, rs + r0, zr + r0, S, Z, zc, args, Y, i0 + r0, r, p + c);\n"
    << "      }\n"
    << "    }\n"
    << "#else\n"
    << "    for (i64 pb = p0; pb < p1; pb += " << block << ") {\n"
    << "      const i64 pe = pb + " << block << " < p1 ? pb + " << block << " : p1;\n"
    << "      for (i64 p = pb; p < pe;) {\n"
    << "        const int np = p + I8_NP <= pe ? I8_NP : 1;\n"
    << "        for (i64 r0 = 0; r0 < rows; r0 += I8_MR) {\n"
    << "          const i64 mr = rows - r0 < I8_MR ? rows - r0 : I8_MR;\n"
    << "          const i32* restrict at = ap + r0 * " << L(AR) << ";\n"
    // The first row tile of a panel group asks for the next group's weights.
    << "          const u8* restrict pf = r0 == 0 && p + np < p1 ? W + (p + np) * " << L(PB) << " : 0;\n"
    << "#if I8_S16\n"
    << "          i8s_tile(at, rs + r0, zr + r0, W, S, Z, zc, args, Y, i0 + r0, mr, p, pf);\n"
    << "#else\n"
    << "          if (np == I8_NP) i8_tile(at, rs + r0, zr + r0, W, S, Z, zc, args, Y, i0 + r0, mr, p, I8_NP, pf);\n"
    << "          else i8_tile(at, rs + r0, zr + r0, W, S, Z, zc, args, Y, i0 + r0, mr, p, 1, pf);\n"
    << "#endif\n"
    << "        }\n"
    << "        p += np;\n"
    << "      }\n"
    << "    }\n"
    << "#endif\n"
    << "  }\n"
    << "#if I8_AMX\n  __builtin_ia32_tilerelease();\n#endif\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), RC * CS, 1};
}

}  // namespace hpf::jit
