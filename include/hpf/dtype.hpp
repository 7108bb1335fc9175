// Numeric formats of libhpf and exact conversions between them.
//
// Float formats and their encodings (bit patterns are returned in the low bits of a uint32_t):
//   F32      IEEE binary32.
//   TF32     1.8.10: FP32 with the mantissa rounded to 10 bits; stored as FP32 (low 13 bits 0).
//   BF16     1.8.7, IEEE-like (infinities, NaN).
//   F16      IEEE binary16, 1.5.10.
//   F8E4M3   OCP E4M3FN, 1.4.3, bias 7: no infinities, S.1111.111 is NaN, max 448.
//   F8E5M2   OCP E5M2, 1.5.2, bias 15: IEEE-like with infinities, max 57344.
// Integer formats: I8, U8, I16 (quantised tensors), I4 (signed, two per byte, low nibble first),
// I32, I64 (indices, shapes), BOOL (one byte, 0 or 1).
//
// Conversions from FP32 round to nearest, ties to even; subnormals are kept (no flush to zero);
// a NaN stays a NaN with its sign (quiet, top payload bits kept where the format has room);
// +0 and -0 are kept. Overflow:
//   * F16, BF16, TF32 follow IEEE 754: a value that rounds past the largest finite number
//     becomes +-Inf, and +-Inf stays +-Inf. `Overflow` does not affect them.
//   * F8E4M3 and F8E5M2 follow the two OCP FP8 conversion modes (the same table as ONNX Cast):
//       Overflow::saturate:  +-Inf and values rounding past max -> +-max
//       Overflow::propagate: -> NaN for E4M3 (it has no Inf), -> +-Inf for E5M2.
//     Rounding happens first: E4M3 464.0 is a tie between 448 and the (non-existent) 480 and
//     rounds to 448 in both modes.
//
// All functions here are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hpf/status.hpp"

namespace hpf {

enum class DType : uint8_t {
  F32,
  TF32,
  BF16,
  F16,
  F8E4M3,
  F8E5M2,
  I8,
  U8,
  I4,
  I32,
  I64,
  BOOL,
  I16,  // after BOOL: the earlier values keep their numbers
};

inline constexpr DType kAllDTypes[] = {DType::F32,    DType::TF32,   DType::BF16, DType::F16,
                                       DType::F8E4M3, DType::F8E5M2, DType::I8,   DType::U8,
                                       DType::I16,    DType::I4,     DType::I32,    DType::I64,  DType::BOOL};

enum class Overflow : uint8_t { saturate, propagate };

// "f32", "tf32", "bf16", "f16", "f8e4m3", "f8e5m2", "i8", "u8", "i16", "i4", "i32", "i64", "bool".
std::string_view dtype_name(DType t);
// Parses the names above (also "fp32", "fp16", "float32", "float16", "bfloat16", "int8",
// "uint8", "int16", "int4", "int32", "int64", "fp8e4m3", "e4m3", "fp8e5m2", "e5m2").
Expected<DType> parse_dtype(std::string_view name);

bool is_float(DType t);    // F32, TF32, BF16, F16, F8E4M3, F8E5M2
bool is_integer(DType t);  // I8, U8, I16, I4, I32, I64
int bit_width(DType t);    // storage bits per element: 32 for TF32, 4 for I4, 8 for BOOL
// Bytes needed to store `count` elements (I4 rounds up to whole bytes); SIZE_MAX when that
// does not fit a size_t, so an allocation of it fails instead of coming out small.
size_t storage_bytes(DType t, size_t count);

// Format facts for the float formats (F32 for the others is an error in debug builds).
struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;
  float max;             // largest finite value
  float min_normal;      // smallest positive normal
  float min_subnormal;   // smallest positive subnormal
};
FloatFormat float_format(DType t);

// Decodes one element. Float formats: `bits` holds the encoding (F32/TF32: the FP32 bits).
// Integer formats: the low bits are the two's-complement (or unsigned) value; BOOL: 0 or 1.
// Exact for every format (all of them embed in FP32) except I32/I64 beyond 2^24.
float decode(DType t, uint32_t bits);

// Encodes one FP32 value. Float formats: see the rules at the top of this file. Integer formats:
// round to nearest even, then clamp to the type's range (NaN -> 0); BOOL: value != 0.
// Integer results are two's-complement bits in the low bit_width bits (I8 -1 -> 0xFF, I4 -1 ->
// 0xF). The 32-bit result cannot hold an I64, so encode/decode treat I64 as I32 (clamped to the
// int32 range); round_to, encode_span and decode_span use the full int64 range.
uint32_t encode(DType t, float value, Overflow mode = Overflow::saturate);

// encode then decode: the FP32 value nearest to `value` that `t` can represent.
float round_to(DType t, float value, Overflow mode = Overflow::saturate);

// Bulk conversions between FP32 and the packed storage of `t` (little-endian, I4 two per byte
// with element 0 in the low nibble). `bytes` must hold exactly storage_bytes(t, values.size()).
// Returns invalid_argument on a size mismatch.
Status encode_span(DType t, std::span<const float> values, std::span<std::byte> bytes,
                   Overflow mode = Overflow::saturate);
Status decode_span(DType t, std::span<const std::byte> bytes, std::span<float> values);

// ---- Integer quantisation -------------------------------------------------------------------
//
// q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax);  x' = (q - zero_point) * scale.
// The division is done in FP32, as ONNX QuantizeLinear does.
//
// Granularity:
//   per tensor:   scales.size() == 1, axis ignored;
//   per channel:  scales.size() == shape[axis] (INT8, e.g. one scale per output channel);
//   group-wise:   group_size > 0: the group axis (`axis`, or the last axis when axis is -1) is
//                 cut into groups of group_size consecutive elements (32, 64 or 128 for INT4,
//                 along a weight's reduction axis), one scale per group per position of the
//                 other axes, so scales.size() == numel / group_size. The scales are laid out
//                 row-major over the shape with the group axis divided by group_size: for the
//                 last axis, element i uses scales[i / group_size].
// Zero points: empty means all zero (symmetric); otherwise the same count as scales.
struct QuantParams {
  DType type = DType::I8;               // I8, U8, I16 or I4 (fake_quantize also F8E4M3, F8E5M2)
  std::vector<float> scales;            // > 0 and finite
  std::vector<int32_t> zero_points;     // empty: symmetric
  int axis = -1;                        // per channel: the axis the scales run along;
                                        // group-wise: the group axis (-1: the last)
  int group_size = 0;                   // group-wise when > 0
};

// Range of the quantised type: I8 [-128,127], U8 [0,255], I16 [-32768,32767], I4 [-8,7].
int32_t qmin(DType t);
int32_t qmax(DType t);

// Chooses parameters from the data. Symmetric: zero point 0, scale = max|x| / qmax
// (I8 127, I16 32767, I4 7). Asymmetric (I8/U8): scale = (max - min) / (qmax - qmin) over the range
// widened to include 0, zero point rounded so that 0 is exact. All-zero data gets scale 1.
// `axis` >= 0 gives one set of parameters per index of that axis; `group_size` > 0 one per group
// along `axis` (the last axis when axis is -1).
Expected<QuantParams> choose_quant_params(std::span<const float> x, std::span<const int64_t> shape,
                                          DType type, bool symmetric, int axis = -1,
                                          int group_size = 0);

// Quantises `x` (of `shape`) into packed storage `q` (storage_bytes(p.type, numel) bytes).
Status quantize(std::span<const float> x, std::span<const int64_t> shape, const QuantParams& p,
                std::span<std::byte> q);
// Dequantises packed storage back to FP32.
Status dequantize(std::span<const std::byte> q, std::span<const int64_t> shape,
                  const QuantParams& p, std::span<float> x);

// Fake quantisation in place: x = dequantize(quantize(x)), the values a quantised tensor holds,
// in FP32, without packed storage (what the reference interpreter's emulation stores).
// Integer types (I8, U8, I16, I4) round half to even and saturate exactly as quantize does. Scaled
// FP8 (F8E4M3, F8E5M2; symmetric only, any granularity): x = round_to(type, x / scale, mode) *
// scale, so `scale` maps the data's amax onto the format's max (448 for E4M3). The product is
// rounded to FP32 (|q| * scale needs up to 31 significant bits; the error is 2^-24 relative).
Status fake_quantize(std::span<float> x, std::span<const int64_t> shape, const QuantParams& p,
                     Overflow mode = Overflow::saturate);

// Dynamic INT8 quantisation of rows, faked in place: each run of `row` consecutive elements gets
// its own symmetric scale s = max|x| / 127 (NaN ignored; 1 for an all-zero row; at least the
// smallest normal), chosen from the data as it arrives, and x = clamp(rne(x / s), -128, 127) * s
// (NaN -> 0). A row holding an infinity has s = inf and becomes NaN, as its product would. This is
// what an int8 MatMul does to a float input that no calibrated scale describes (the CPU kernel
// `matmul_i8` with a_dynamic computes the same s and the same integers). `row` must divide
// x.size().
Status fake_quantize_rows_i8(std::span<float> x, int64_t row);

// Dynamic asymmetric 7-bit quantisation of rows ("u7"), faked in place: each run of `row`
// consecutive elements spans [lo, hi] = [min(0, min x), max(0, max x)] (NaN ignored) with
//   s = (hi - lo) / 127 (1 when hi == lo; at least the smallest normal),
//   z = rne(-lo / s) in [0, 127] (0 when that is NaN: a row from -inf to inf),
//   x = clamp(rne(x / s), -z, 127 - z) * s (NaN -> 0),
// so the stored u = q + z fits 0..127 and 0 is exact. A row holding an infinity has s = inf and
// becomes NaN, as its product would. The CPU kernel `matmul_i8` with a_dynamic and a_u7 computes
// the same s, z and integers: with u <= 127, AVX2's vpmaddubsw adds two u x s8 products exactly
// for any 8-bit weight (NodePlan::dynamic_rows). `row` must divide x.size().
Status fake_quantize_rows_u7(std::span<float> x, int64_t row);

// The largest |q| of 16-bit rows of length k (fake_quantize_rows_s16): min(32767,
// (2^31 - 1) / (128 k)), so that a row's dot product with any 8-bit weights, k products of at
// most 128 |q|, sums exactly in 32 bits (k = 768: 21845, k = 3072: 5461). At least 1.
int32_t rows_s16_qmax(int64_t k);

// The largest |q| of both operands of a 16-bit integer dot product of length k (int8 nodes with
// I16 weights, "int16" in the planner: weights per channel and rows at run time, both in 16
// bits): floor(sqrt((2^31 - 1) / k)), at most 32767, so that k products sum exactly in 32 bits
// (k = 768: 1672, k = 3072: 836; about 11 bits each side). At least 1.
int32_t int16_operand_qmax(int64_t k);

// Dynamic symmetric 16-bit quantisation of rows ("s16", W8A16), faked in place: each run of
// `row` consecutive elements gets s = max|x| / rows_s16_qmax(row) (NaN ignored; 1 for an all-zero
// row; at least the smallest normal) and x = clamp(rne(x / s), -qmax, qmax) * s (NaN -> 0). A row
// holding an infinity becomes NaN. The CPU kernel `matmul_i8` with a_dynamic and a_s16 computes
// the same s and integers and multiplies them with 8-bit weights by vpmaddwd (exact in 32 bits).
// `qmax` > 0 replaces rows_s16_qmax(row): int16_operand_qmax(row) for rows meeting I16 weights.
Status fake_quantize_rows_s16(std::span<float> x, int64_t row, int32_t qmax = 0);

}  // namespace hpf
