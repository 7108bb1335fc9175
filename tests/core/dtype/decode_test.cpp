// Decoding, checked against a reference that evaluates the IEEE-style formula
// sign * significand * 2^exponent in double from the bit fields, and the dtype metadata.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>

#include "hpf/dtype.hpp"

namespace {

// doctest stringifies each streamed item on its own, so std::hex would not stick.
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

using hpf::DType;

struct RefFormat {
  DType type;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;  // false: E4M3FN, whose only non-finite code is S.1111.111
};

constexpr RefFormat kF16{DType::F16, 5, 10, 15, true};
constexpr RefFormat kBF16{DType::BF16, 8, 7, 127, true};
constexpr RefFormat kE4M3{DType::F8E4M3, 4, 3, 7, false};
constexpr RefFormat kE5M2{DType::F8E5M2, 5, 2, 15, true};

// The reference value of a code; NaN for NaN codes (its sign is the code's sign).
double ref_decode(const RefFormat& f, uint32_t code) {
  const int width = f.exponent_bits + f.mantissa_bits;
  const bool negative = (code >> width) & 1;
  const uint32_t exp_all = (1u << f.exponent_bits) - 1;
  const uint32_t mant_all = (1u << f.mantissa_bits) - 1;
  const uint32_t exp = (code >> f.mantissa_bits) & exp_all;
  const uint32_t mant = code & mant_all;
  double v;
  if (exp == exp_all && f.has_inf) {
    v = mant == 0 ? std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == exp_all && mant == mant_all) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else {
    const double significand = exp == 0 ? mant : mant + std::ldexp(1.0, f.mantissa_bits);
    const int e = (exp == 0 ? 1 : static_cast<int>(exp)) - f.bias - f.mantissa_bits;
    v = std::ldexp(significand, e);
  }
  return negative ? -std::fabs(v) : std::fabs(v);
}

// Compares decode() with the reference over every code of the format. NaN: a NaN with the
// code's sign and the quiet bit set; everything else bit-exact (so -0 must stay -0).
void check_all_codes(const RefFormat& f) {
  const uint32_t n = 1u << (1 + f.exponent_bits + f.mantissa_bits);
  int failures = 0;
  for (uint32_t code = 0; code < n; ++code) {
    const double want = ref_decode(f, code);
    const float got = hpf::decode(f.type, code);
    const uint32_t got_bits = std::bit_cast<uint32_t>(got);
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got) && std::signbit(got) == std::signbit(want) && (got_bits & 0x400000u);
    } else {
      ok = got_bits == std::bit_cast<uint32_t>(static_cast<float>(want));
    }
    if (!ok && ++failures <= 10)
      FAIL_CHECK(hpf::dtype_name(f.type) << " code " << hex(code) << ": got " << got << " ("
                                         << hex(got_bits) << "), want " << want);
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("decode: every F16 pattern matches the reference") { check_all_codes(kF16); }
TEST_CASE("decode: every BF16 pattern matches the reference") { check_all_codes(kBF16); }
TEST_CASE("decode: every F8E4M3 code matches the reference") { check_all_codes(kE4M3); }
TEST_CASE("decode: every F8E5M2 code matches the reference") { check_all_codes(kE5M2); }

TEST_CASE("decode: known values") {
  CHECK(hpf::decode(DType::F16, 0x3C00) == 1.0f);
  CHECK(hpf::decode(DType::F16, 0x7BFF) == 65504.0f);
  CHECK(hpf::decode(DType::F16, 0x0001) == 0x1p-24f);
  CHECK(std::signbit(hpf::decode(DType::F16, 0x8000)));
  CHECK(hpf::decode(DType::BF16, 0x3F80) == 1.0f);
  CHECK(hpf::decode(DType::BF16, 0x0001) == 0x1p-133f);
  CHECK(hpf::decode(DType::F8E4M3, 0x7E) == 448.0f);
  CHECK(hpf::decode(DType::F8E4M3, 0xFE) == -448.0f);
  CHECK(hpf::decode(DType::F8E4M3, 0x01) == 0x1p-9f);
  CHECK(hpf::decode(DType::F8E4M3, 0x78) == 256.0f);  // all-ones exponent is finite in E4M3FN
  CHECK(std::isnan(hpf::decode(DType::F8E4M3, 0x7F)));
  CHECK(hpf::decode(DType::F8E5M2, 0x7B) == 57344.0f);
  CHECK(hpf::decode(DType::F8E5M2, 0x7C) == std::numeric_limits<float>::infinity());
  CHECK(hpf::decode(DType::F8E5M2, 0x01) == 0x1p-16f);
  // Only the low bits of the pattern count.
  CHECK(hpf::decode(DType::F16, 0xABCD3C00u) == 1.0f);
  CHECK(hpf::decode(DType::F8E4M3, 0x1238u) == 1.0f);
}

TEST_CASE("decode: NaN payloads are kept and quieted") {
  // F16 signalling NaN 0x7C01 -> quiet bit set, payload bit shifted up by 13.
  CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::F16, 0x7C01)) == 0x7FC02000u);
  CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::F16, 0xFE00)) == 0xFFC00000u);
  CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::BF16, 0x7F81)) == 0x7FC10000u);
  CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::F8E5M2, 0xFD)) == 0xFFE00000u);
  CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::F8E4M3, 0x7F)) == 0x7FF00000u);
}

TEST_CASE("decode: F32 and TF32 are the FP32 bits") {
  for (uint32_t bits : {0u, 0x80000000u, 0x3F800000u, 0x00000001u, 0x7F800000u, 0x7F800001u,
                        0xFFC12345u, 0x3FAAA000u}) {
    CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::F32, bits)) == bits);
    CHECK(std::bit_cast<uint32_t>(hpf::decode(DType::TF32, bits)) == bits);
  }
}

TEST_CASE("decode: integer formats") {
  for (uint32_t b = 0; b < 256; ++b) {
    const int s8 = b < 128 ? static_cast<int>(b) : static_cast<int>(b) - 256;
    CHECK(hpf::decode(DType::I8, b) == static_cast<float>(s8));
    CHECK(hpf::decode(DType::U8, b) == static_cast<float>(b));
    const int s4 = (b & 15) < 8 ? static_cast<int>(b & 15) : static_cast<int>(b & 15) - 16;
    CHECK(hpf::decode(DType::I4, b) == static_cast<float>(s4));  // high nibble ignored
    CHECK(hpf::decode(DType::BOOL, b) == (b != 0 ? 1.0f : 0.0f));
  }
  CHECK(hpf::decode(DType::I8, 0x1FFu) == -1.0f);
  CHECK(hpf::decode(DType::I32, 0xFFFFFFFFu) == -1.0f);
  CHECK(hpf::decode(DType::I32, 0x80000000u) == -2147483648.0f);
  CHECK(hpf::decode(DType::I32, 0x01000001u) == 16777216.0f);  // beyond 2^24: nearest float
  CHECK(hpf::decode(DType::I64, 0xFFFFFFFEu) == -2.0f);
  CHECK(hpf::decode(DType::BOOL, 0x100u) == 1.0f);
}

TEST_CASE("dtype names parse back, aliases are accepted, unknown names are errors") {
  for (DType t : hpf::kAllDTypes) {
    auto parsed = hpf::parse_dtype(hpf::dtype_name(t));
    REQUIRE(parsed.ok());
    CHECK(*parsed == t);
  }
  const std::pair<const char*, DType> aliases[] = {
      {"fp32", DType::F32},       {"float32", DType::F32},    {"fp16", DType::F16},
      {"float16", DType::F16},    {"bfloat16", DType::BF16},  {"int8", DType::I8},
      {"uint8", DType::U8},       {"int4", DType::I4},        {"int32", DType::I32},
      {"int64", DType::I64},      {"fp8e4m3", DType::F8E4M3}, {"e4m3", DType::F8E4M3},
      {"fp8e5m2", DType::F8E5M2}, {"e5m2", DType::F8E5M2},
  };
  for (const auto& [name, t] : aliases) {
    auto parsed = hpf::parse_dtype(name);
    REQUIRE_MESSAGE(parsed.ok(), name);
    CHECK(*parsed == t);
  }
  auto bad = hpf::parse_dtype("xyz");
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == hpf::StatusCode::invalid_argument);
  CHECK(bad.status().message() ==
        "unknown dtype 'xyz' (expected one of f32, tf32, bf16, f16, f8e4m3, f8e5m2, i8, u8, i16, i4, "
        "i32, i64, bool)");
  CHECK(!hpf::parse_dtype("F16").ok());  // names are case-sensitive
  CHECK(!hpf::parse_dtype("").ok());
}

TEST_CASE("dtype classes, widths and storage sizes") {
  struct Row {
    DType t;
    bool is_float, is_integer;
    int bits;
    size_t bytes_for_3;
  };
  const Row rows[] = {
      {DType::F32, true, false, 32, 12},  {DType::TF32, true, false, 32, 12},
      {DType::BF16, true, false, 16, 6},  {DType::F16, true, false, 16, 6},
      {DType::F8E4M3, true, false, 8, 3}, {DType::F8E5M2, true, false, 8, 3},
      {DType::I8, false, true, 8, 3},     {DType::U8, false, true, 8, 3},
      {DType::I4, false, true, 4, 2},     {DType::I32, false, true, 32, 12},
      {DType::I64, false, true, 64, 24},  {DType::BOOL, false, false, 8, 3},
  };
  for (const Row& r : rows) {
    CAPTURE(hpf::dtype_name(r.t));
    CHECK(hpf::is_float(r.t) == r.is_float);
    CHECK(hpf::is_integer(r.t) == r.is_integer);
    CHECK(hpf::bit_width(r.t) == r.bits);
    CHECK(hpf::storage_bytes(r.t, 3) == r.bytes_for_3);
    CHECK(hpf::storage_bytes(r.t, 0) == 0);
  }
  CHECK(hpf::storage_bytes(DType::I4, 4) == 2);
  CHECK(hpf::storage_bytes(DType::I4, 1) == 1);
}

TEST_CASE("float_format facts agree with the reference decode") {
  for (const RefFormat& f : {kF16, kBF16, kE4M3, kE5M2}) {
    CAPTURE(hpf::dtype_name(f.type));
    const hpf::FloatFormat ff = hpf::float_format(f.type);
    CHECK(ff.exponent_bits == f.exponent_bits);
    CHECK(ff.mantissa_bits == f.mantissa_bits);
    CHECK(ff.bias == f.bias);
    CHECK(ff.has_inf == f.has_inf);
    double max = 0;
    const uint32_t positive_codes = 1u << (f.exponent_bits + f.mantissa_bits);
    for (uint32_t c = 0; c < positive_codes; ++c) {
      const double v = ref_decode(f, c);
      if (std::isfinite(v)) max = std::max(max, v);
    }
    CHECK(ff.max == max);
    CHECK(ff.min_subnormal == ref_decode(f, 1));
    CHECK(ff.min_normal == ref_decode(f, 1u << f.mantissa_bits));
  }
  const hpf::FloatFormat tf32 = hpf::float_format(DType::TF32);
  CHECK(tf32.mantissa_bits == 10);
  CHECK(tf32.exponent_bits == 8);
  CHECK(tf32.max == std::bit_cast<float>(0x7F7FE000u));
  CHECK(tf32.min_normal == 0x1p-126f);
  CHECK(tf32.min_subnormal == 0x1p-136f);
  const hpf::FloatFormat f32 = hpf::float_format(DType::F32);
  CHECK(f32.mantissa_bits == 23);
  CHECK(f32.max == std::numeric_limits<float>::max());
  CHECK(f32.min_subnormal == std::numeric_limits<float>::denorm_min());
}
