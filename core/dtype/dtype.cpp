#include "hpf/dtype.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace hpf {
namespace {

// Layout of a float format narrower than FP32. One template serves every format so that the
// rounding logic exists once; instantiating it per format lets the compiler fold the constants
// into the plain loops of the bulk paths.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;        // IEEE-like: all-ones exponent is Inf/NaN. Else only S.1..1.1..1 is NaN.
  bool ieee_overflow;  // overflow always goes to Inf (ignores Overflow)
};

constexpr Format kTF32{8, 10, 127, true, true};
constexpr Format kBF16{8, 7, 127, true, true};
constexpr Format kF16{5, 10, 15, true, true};
constexpr Format kE4M3{4, 3, 7, false, false};
constexpr Format kE5M2{5, 2, 15, true, false};

template <Format F>
constexpr uint32_t exponent_mask() {
  return (1u << F.exponent_bits) - 1;
}
template <Format F>
constexpr uint32_t inf_code() {
  return exponent_mask<F>() << F.mantissa_bits;
}
template <Format F>
constexpr uint32_t max_code() {
  // Without infinities the all-ones exponent still holds finite values; only its top mantissa
  // code is NaN.
  return F.has_inf ? inf_code<F>() - 1 : (inf_code<F>() | ((1u << F.mantissa_bits) - 1)) - 1;
}

// Encodes FP32 bits into the format's bits (sign in bit E+M). Exact integer arithmetic, so the
// result does not depend on the FPU's rounding mode or FTZ/DAZ flags.
template <Format F>
inline uint32_t encode_bits(uint32_t x, Overflow mode) {
  constexpr int M = F.mantissa_bits;
  constexpr int S = 23 - M;  // FP32 mantissa bits dropped in the normal range
  // FP32 bits of the format's smallest normal.
  constexpr uint32_t min_normal32 = static_cast<uint32_t>(128 - F.bias) << 23;
  const uint32_t sign = (x >> 31) << (F.exponent_bits + M);
  const uint32_t abs = x & 0x7FFFFFFFu;
  const uint32_t mant32 = abs & 0x7FFFFFu;
  if (abs > 0x7F800000u) {
    // Quiet NaN keeping the top payload bits, as x86 F16C does for F16.
    if constexpr (F.has_inf) return sign | inf_code<F>() | (1u << (M - 1)) | (mant32 >> S);
    return sign | inf_code<F>() | ((1u << M) - 1);
  }
  uint32_t mag;
  if (abs >= min_normal32) {
    // The common case, kept to a fixed shift so that bulk loops stay cheap. Rebiasing the
    // exponent in place makes the fields line up with the target's; the rounding increment
    // then carries from the mantissa into the exponent by itself, up to Inf's code.
    const uint32_t v = abs - (static_cast<uint32_t>(127 - F.bias) << 23);
    mag = (v + ((1u << (S - 1)) - 1) + ((v >> S) & 1)) >> S;
  } else {
    // Subnormal result: shift the significand (hidden bit included) further right, by how far
    // the exponent lies below the format's minimum. A round-up to 1 << M is exactly min normal.
    const int e32 = static_cast<int>(abs >> 23);
    const uint32_t m = e32 != 0 ? mant32 | 0x800000u : mant32;  // FP32 subnormals: no hidden bit
    const int shift = std::min(S + 128 - F.bias - std::max(e32, 1), 31);  // >= 25 gives 0
    mag = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    mag += (rem > half || (rem == half && (mag & 1))) ? 1 : 0;
  }
  if (mag <= max_code<F>()) return sign | mag;
  // Inf inputs land here too: their magnitude is above every finite code.
  if constexpr (F.ieee_overflow) return sign | inf_code<F>();
  if (mode == Overflow::saturate) return sign | max_code<F>();
  if constexpr (F.has_inf) return sign | inf_code<F>();
  return sign | inf_code<F>() | ((1u << M) - 1);
}

template <Format F>
inline float decode_bits(uint32_t c) {
  constexpr int M = F.mantissa_bits;
  constexpr uint32_t mant_mask = (1u << M) - 1;
  const uint32_t sign = ((c >> (F.exponent_bits + M)) & 1u) << 31;
  const uint32_t exp = (c >> M) & exponent_mask<F>();
  const uint32_t mant = c & mant_mask;
  const bool special = exp == exponent_mask<F>() && (F.has_inf || mant == mant_mask);
  if (special) {
    if (F.has_inf && mant == 0) return std::bit_cast<float>(sign | 0x7F800000u);
    // Quiet bit set, payload kept: what F16C's vcvtph2ps does.
    return std::bit_cast<float>(sign | 0x7FC00000u | (mant << (23 - M)));
  }
  if (exp == 0 && F.bias != 127) {
    // mant * 2^(1 - bias - M): the scale is a normal FP32 power of two and mant is small, so
    // the product is exact and normal.
    constexpr uint32_t scale_bits = static_cast<uint32_t>(1 - F.bias - M + 127) << 23;
    const float v = static_cast<float>(mant) * std::bit_cast<float>(scale_bits);
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(v));
  }
  // With bias 127 (BF16, TF32) the format's subnormals are FP32 subnormals, bit for bit.
  return std::bit_cast<float>(sign | ((exp - F.bias + 127) << 23) | (mant << (23 - M)));
}

// Round half to even without depending on the FPU rounding mode.
inline float round_half_even(float v) {
  if (!(std::fabs(v) < 8388608.0f)) return v;  // already integral, Inf or NaN
  const float f = std::floor(v);
  const float d = v - f;  // exact below 2^23
  if (d > 0.5f || (d == 0.5f && std::fmod(f, 2.0f) != 0.0f)) return f + 1.0f;
  return f;
}

// Rounds and clamps to [lo, hi]; NaN -> 0. The comparisons happen in float so huge values never
// reach an out-of-range integer conversion.
template <typename Int>
inline Int round_clamp(float v, Int lo, Int hi) {
  if (std::isnan(v)) return 0;
  const float r = round_half_even(v);
  // For 32/64-bit types float(hi) rounds up to 2^(bits-1), which is exactly the first value
  // that no longer fits, so >= is the right test for every width.
  if (r >= static_cast<float>(hi)) return hi;
  if (r <= static_cast<float>(lo)) return lo;
  return static_cast<Int>(r);
}

int64_t encode_i64(float v) {
  return round_clamp<int64_t>(v, std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max());
}

void put_le(std::byte* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
uint64_t get_le(const std::byte* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

Status size_error(const char* fn, DType t, size_t count, size_t expected, size_t got) {
  return Status::invalid(fmt::format("{}: {} elements of {} need {} bytes, got {}", fn, count,
                                     dtype_name(t), expected, got));
}

}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::TF32:
      return "tf32";
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "f16";
    case DType::F8E4M3:
      return "f8e4m3";
    case DType::F8E5M2:
      return "f8e5m2";
    case DType::I8:
      return "i8";
    case DType::U8:
      return "u8";
    case DType::I16:
      return "i16";
    case DType::I4:
      return "i4";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::BOOL:
      return "bool";
  }
  return "unknown";
}

Expected<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name == dtype_name(t)) return t;
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"fp32", DType::F32},       {"float32", DType::F32},    {"fp16", DType::F16},
      {"float16", DType::F16},    {"bfloat16", DType::BF16},  {"int8", DType::I8},
      {"uint8", DType::U8},       {"int16", DType::I16},      {"int4", DType::I4},        {"int32", DType::I32},
      {"int64", DType::I64},      {"fp8e4m3", DType::F8E4M3}, {"e4m3", DType::F8E4M3},
      {"fp8e5m2", DType::F8E5M2}, {"e5m2", DType::F8E5M2},
  };
  for (const Alias& a : kAliases)
    if (name == a.name) return a.type;
  std::string expected;
  for (DType t : kAllDTypes) {
    if (!expected.empty()) expected += ", ";
    expected += dtype_name(t);
  }
  return Status::invalid(fmt::format("unknown dtype '{}' (expected one of {})", name, expected));
}

bool is_float(DType t) {
  switch (t) {
    case DType::F32:
    case DType::TF32:
    case DType::BF16:
    case DType::F16:
    case DType::F8E4M3:
    case DType::F8E5M2:
      return true;
    default:
      return false;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::I4:
    case DType::I32:
    case DType::I64:
      return true;
    default:
      return false;
  }
}

int bit_width(DType t) {
  switch (t) {
    case DType::F32:
    case DType::TF32:
    case DType::I32:
      return 32;
    case DType::BF16:
    case DType::F16:
    case DType::I16:
      return 16;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::I8:
    case DType::U8:
    case DType::BOOL:
      return 8;
    case DType::I4:
      return 4;
    case DType::I64:
      return 64;
  }
  return 0;
}

size_t storage_bytes(DType t, size_t count) {
  if (t == DType::I4) return count / 2 + count % 2;
  size_t bytes;
  if (__builtin_mul_overflow(count, static_cast<size_t>(bit_width(t) / 8), &bytes)) return SIZE_MAX;
  return bytes;
}

FloatFormat float_format(DType t) {
  auto facts = [](int e, int m, int bias, bool has_inf, float max) {
    return FloatFormat{
        e, m, bias, has_inf, max, std::ldexp(1.0f, 1 - bias), std::ldexp(1.0f, 1 - bias - m)};
  };
  switch (t) {
    case DType::TF32:
      return facts(8, 10, 127, true, std::ldexp(2.0f - 0x1p-10f, 127));
    case DType::BF16:
      return facts(8, 7, 127, true, std::ldexp(2.0f - 0x1p-7f, 127));
    case DType::F16:
      return facts(5, 10, 15, true, 65504.0f);
    case DType::F8E4M3:
      return facts(4, 3, 7, false, 448.0f);
    case DType::F8E5M2:
      return facts(5, 2, 15, true, 57344.0f);
    case DType::F32:
      break;
    default:
      assert(false && "float_format of a non-float dtype");
      break;
  }
  return facts(8, 23, 127, true, std::numeric_limits<float>::max());
}

float decode(DType t, uint32_t bits) {
  switch (t) {
    case DType::F32:
    case DType::TF32:
      return std::bit_cast<float>(bits);
    case DType::BF16:
      return decode_bits<kBF16>(bits & 0xFFFFu);
    case DType::F16:
      return decode_bits<kF16>(bits & 0xFFFFu);
    case DType::F8E4M3:
      return decode_bits<kE4M3>(bits & 0xFFu);
    case DType::F8E5M2:
      return decode_bits<kE5M2>(bits & 0xFFu);
    case DType::I8:
      return static_cast<int8_t>(bits & 0xFFu);
    case DType::U8:
      return static_cast<float>(bits & 0xFFu);
    case DType::I16:
      return static_cast<int16_t>(bits & 0xFFFFu);
    case DType::I4:
      return static_cast<float>(static_cast<int>((bits & 0xFu) ^ 0x8u) - 8);
    // The single-element API carries 32 bits, so I64 is read as an int32 here; the bulk
    // span functions handle the full 64-bit range.
    case DType::I32:
    case DType::I64:
      return static_cast<float>(static_cast<int32_t>(bits));
    case DType::BOOL:
      return bits != 0 ? 1.0f : 0.0f;
  }
  return 0.0f;
}

uint32_t encode(DType t, float value, Overflow mode) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  switch (t) {
    case DType::F32:
      return x;
    case DType::TF32:
      return encode_bits<kTF32>(x, mode) << 13;
    case DType::BF16:
      return encode_bits<kBF16>(x, mode);
    case DType::F16:
      return encode_bits<kF16>(x, mode);
    case DType::F8E4M3:
      return encode_bits<kE4M3>(x, mode);
    case DType::F8E5M2:
      return encode_bits<kE5M2>(x, mode);
    case DType::I8:
      return static_cast<uint8_t>(round_clamp<int8_t>(value, -128, 127));
    case DType::U8:
      return round_clamp<uint8_t>(value, 0, 255);
    case DType::I16:
      return static_cast<uint16_t>(round_clamp<int16_t>(value, -32768, 32767));
    case DType::I4:
      return static_cast<uint32_t>(round_clamp<int8_t>(value, -8, 7)) & 0xFu;
    // I64: see decode; clamped to the int32 range so that decode(encode(v)) stays monotonic.
    case DType::I32:
    case DType::I64:
      return static_cast<uint32_t>(round_clamp<int32_t>(value, std::numeric_limits<int32_t>::min(),
                                                        std::numeric_limits<int32_t>::max()));
    case DType::BOOL:
      return value != 0.0f ? 1u : 0u;  // NaN != 0, as in C
  }
  return 0;
}

float round_to(DType t, float value, Overflow mode) {
  // I64 through the 32-bit encoding would clamp at 2^31; go through int64 as the spans do.
  if (t == DType::I64) return static_cast<float>(encode_i64(value));
  return decode(t, encode(t, value, mode));
}

Status encode_span(DType t, std::span<const float> values, std::span<std::byte> bytes,
                   Overflow mode) {
  const size_t n = values.size();
  const size_t need = storage_bytes(t, n);
  if (bytes.size() != need) return size_error("encode_span", t, n, need, bytes.size());
  const float* v = values.data();
  std::byte* out = bytes.data();
  switch (t) {
    case DType::F32:
      if (n != 0) std::memcpy(out, v, n * 4);
      break;
    case DType::TF32:
      for (size_t i = 0; i < n; ++i) put_le(out + 4 * i, encode(t, v[i], mode), 4);
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i)
        put_le(out + 2 * i, encode_bits<kBF16>(std::bit_cast<uint32_t>(v[i]), mode), 2);
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i)
        put_le(out + 2 * i, encode_bits<kF16>(std::bit_cast<uint32_t>(v[i]), mode), 2);
      break;
    case DType::I16:
      for (size_t i = 0; i < n; ++i) put_le(out + 2 * i, encode(t, v[i], mode), 2);
      break;
    case DType::I4:
      for (size_t i = 0; i < n; ++i) {
        const auto nib = static_cast<uint8_t>(encode(t, v[i], mode));
        // Odd counts leave the last high nibble 0.
        if (i % 2 == 0)
          out[i / 2] = static_cast<std::byte>(nib);
        else
          out[i / 2] |= static_cast<std::byte>(nib << 4);
      }
      break;
    case DType::I32:
      for (size_t i = 0; i < n; ++i) put_le(out + 4 * i, encode(t, v[i], mode), 4);
      break;
    case DType::I64:
      for (size_t i = 0; i < n; ++i)
        put_le(out + 8 * i, static_cast<uint64_t>(encode_i64(v[i])), 8);
      break;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::I8:
    case DType::U8:
    case DType::BOOL:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(encode(t, v[i], mode));
      break;
  }
  return {};
}

Status decode_span(DType t, std::span<const std::byte> bytes, std::span<float> values) {
  const size_t n = values.size();
  const size_t need = storage_bytes(t, n);
  if (bytes.size() != need) return size_error("decode_span", t, n, need, bytes.size());
  const std::byte* in = bytes.data();
  float* v = values.data();
  switch (t) {
    case DType::F32:
      if (n != 0) std::memcpy(v, in, n * 4);
      break;
    case DType::TF32:
      for (size_t i = 0; i < n; ++i) v[i] = std::bit_cast<float>(uint32_t(get_le(in + 4 * i, 4)));
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) v[i] = decode_bits<kBF16>(uint32_t(get_le(in + 2 * i, 2)));
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) v[i] = decode_bits<kF16>(uint32_t(get_le(in + 2 * i, 2)));
      break;
    case DType::I16:
      for (size_t i = 0; i < n; ++i) v[i] = decode(t, uint32_t(get_le(in + 2 * i, 2)));
      break;
    case DType::I4:
      for (size_t i = 0; i < n; ++i)
        v[i] = decode(t, static_cast<uint32_t>(in[i / 2]) >> (4 * (i % 2)));
      break;
    case DType::I32:
      for (size_t i = 0; i < n; ++i) v[i] = decode(t, uint32_t(get_le(in + 4 * i, 4)));
      break;
    case DType::I64:
      for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(static_cast<int64_t>(get_le(in + 8 * i, 8)));
      break;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::I8:
    case DType::U8:
    case DType::BOOL:
      for (size_t i = 0; i < n; ++i) v[i] = decode(t, static_cast<uint32_t>(in[i]));
      break;
  }
  return {};
}

}  // namespace hpf
