// Encoding, checked against a reference that knows nothing about bit manipulation: it lists
// every finite value of the format in double, finds the two neighbours of the input by binary
// search, picks the nearer (ties to the even code), then applies the overflow rule.
// Also the integer encoders and the bulk span conversions.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "hpf/dtype.hpp"

namespace {

// doctest stringifies each streamed item on its own, so std::hex would not stick.
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

using hpf::DType;
using hpf::Overflow;

uint32_t f32_bits(float x) { return std::bit_cast<uint32_t>(x); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t encode_f16(float x) { return hpf::encode(DType::F16, x); }

constexpr float kInf = std::numeric_limits<float>::infinity();

struct RefFormat {
  DType type;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;
  bool ieee_overflow;  // F16/BF16/TF32: overflow is always Inf
};

constexpr RefFormat kF16{DType::F16, 5, 10, 15, true, true};
constexpr RefFormat kBF16{DType::BF16, 8, 7, 127, true, true};
constexpr RefFormat kTF32{DType::TF32, 8, 10, 127, true, true};
constexpr RefFormat kE4M3{DType::F8E4M3, 4, 3, 7, false, false};
constexpr RefFormat kE5M2{DType::F8E5M2, 5, 2, 15, true, false};

// All non-negative finite values of a format with their codes, in increasing order.
struct Table {
  RefFormat f;
  std::vector<double> values;
  std::vector<uint32_t> codes;

  explicit Table(const RefFormat& fmt) : f(fmt) {
    // Enumerate (exponent field, mantissa field) pairs; the finite ones are value-ordered.
    const int max_exp_field = (1 << f.exponent_bits) - 1;
    const int mant_count = 1 << f.mantissa_bits;
    for (int ef = 0; ef <= max_exp_field; ++ef) {
      for (int mf = 0; mf < mant_count; ++mf) {
        if (ef == max_exp_field && (f.has_inf || mf == mant_count - 1)) continue;  // Inf/NaN
        const double v = ef == 0 ? std::ldexp(mf, 1 - f.bias - f.mantissa_bits)
                                 : std::ldexp(mant_count + mf, ef - f.bias - f.mantissa_bits);
        values.push_back(v);
        codes.push_back(static_cast<uint32_t>(ef << f.mantissa_bits | mf));
      }
    }
  }

  int sign_shift() const { return f.exponent_bits + f.mantissa_bits; }
  double max() const { return values.back(); }
  // The value one step past max, were the exponent range unbounded.
  double beyond_max() const { return max() + (values.back() - values[values.size() - 2]); }

  uint32_t overflow_code(Overflow mode) const {
    const uint32_t inf = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
    if (f.ieee_overflow) return inf;
    if (mode == Overflow::saturate) return codes.back();
    return f.has_inf ? inf : (1u << sign_shift()) - 1;  // E4M3: S.1111.111 is the NaN
  }

  // Reference code for a non-NaN input (in the format's own bits, not yet shifted for TF32).
  uint32_t encode(float x, Overflow mode) const {
    const uint32_t sign = std::signbit(x) ? 1u << sign_shift() : 0u;
    const double a = std::fabs(static_cast<double>(x));
    if (std::isinf(a)) return sign | overflow_code(mode);
    const auto it = std::upper_bound(values.begin(), values.end(), a);
    const size_t lo = static_cast<size_t>(it - values.begin()) - 1;  // values[0] == 0 <= a
    if (values[lo] == a) return sign | codes[lo];
    const bool top = lo + 1 == values.size();
    const double hi_value = top ? beyond_max() : values[lo + 1];
    const double mid = (values[lo] + hi_value) / 2;  // exact: one bit more than the format
    bool up;
    if (a != mid)
      up = a > mid;
    else
      up = (codes[lo] & 1) != 0;  // tie: the neighbour with the even code
    if (!up) return sign | codes[lo];
    if (top) return sign | overflow_code(mode);
    return sign | codes[lo + 1];
  }
};

uint32_t lib_encode(const RefFormat& f, float x, Overflow mode) {
  const uint32_t bits = hpf::encode(f.type, x, mode);
  return f.type == DType::TF32 ? bits >> 13 : bits;
}

// Every representable value, every halfway point between neighbours (including the one above
// max), and the FP32 neighbours of both, with both signs.
void check_all_boundaries(const Table& t, Overflow mode) {
  std::vector<float> points;
  auto add = [&](double v) {
    const float f = static_cast<float>(v);
    REQUIRE(static_cast<double>(f) == v);  // every point of interest is an FP32 value
    for (float p : {f, std::nextafter(f, -kInf), std::nextafter(f, kInf)}) {
      points.push_back(p);
      points.push_back(-p);
    }
  };
  for (size_t i = 0; i < t.values.size(); ++i) {
    add(t.values[i]);
    const double next = i + 1 < t.values.size() ? t.values[i + 1] : t.beyond_max();
    add((t.values[i] + next) / 2);
  }
  int failures = 0;
  for (float x : points) {
    const uint32_t want = t.encode(x, mode);
    const uint32_t got = lib_encode(t.f, x, mode);
    if (want != got && ++failures <= 10)
      FAIL_CHECK(hpf::dtype_name(t.f.type) << " x=" << x << " (" << hex(f32_bits(x)) << "): got "
                                           << hex(got) << ", want " << hex(want));
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("encode: every F16 boundary matches the reference") {
  check_all_boundaries(Table(kF16), Overflow::saturate);
  check_all_boundaries(Table(kF16), Overflow::propagate);
}

TEST_CASE("encode: every BF16 boundary matches the reference") {
  check_all_boundaries(Table(kBF16), Overflow::saturate);
}

TEST_CASE("encode: every TF32 boundary matches the reference") {
  check_all_boundaries(Table(kTF32), Overflow::saturate);
}

TEST_CASE("encode: every FP8 boundary matches the reference in both overflow modes") {
  for (Overflow mode : {Overflow::saturate, Overflow::propagate}) {
    check_all_boundaries(Table(kE4M3), mode);
    check_all_boundaries(Table(kE5M2), mode);
  }
}

TEST_CASE("encode: random FP32 patterns match the reference for every float format") {
  std::mt19937 rng(12345);
  for (const RefFormat& f : {kF16, kBF16, kTF32, kE4M3, kE5M2}) {
    const Table t(f);
    int failures = 0;
    for (int i = 0; i < 300000; ++i) {
      uint32_t bits = rng();
      // Half the samples near the format's range, where most of the rounding happens.
      if (i % 2) {
        const int lo = 127 - f.bias - f.mantissa_bits - 2;
        const int span = (1 << f.exponent_bits) + f.mantissa_bits + 4;
        const uint32_t e =
            static_cast<uint32_t>(std::clamp(lo + static_cast<int>(rng() % span), 0, 255));
        bits = (bits & 0x807FFFFFu) | (e << 23);
      }
      const float x = from_bits(bits);
      if (std::isnan(x)) continue;
      const Overflow mode = i % 4 < 2 ? Overflow::saturate : Overflow::propagate;
      const uint32_t want = t.encode(x, mode), got = lib_encode(f, x, mode);
      if (want != got && ++failures <= 10)
        FAIL_CHECK(hpf::dtype_name(f.type)
                   << " bits " << hex(bits) << ": got " << hex(got) << ", want " << hex(want));
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("encode: F16 by hand") {
  CHECK(encode_f16(1.0f) == 0x3C00);
  CHECK(encode_f16(65504.0f) == 0x7BFF);    // max
  CHECK(encode_f16(65519.996f) == 0x7BFF);  // just below the halfway point
  CHECK(encode_f16(65520.0f) == 0x7C00);    // halfway above max: tie -> Inf
  CHECK(encode_f16(-65520.0f) == 0xFC00);
  CHECK(hpf::encode(DType::F16, 1e6f, Overflow::saturate) == 0x7C00);  // mode is ignored
  CHECK(encode_f16(0x1p-14f) == 0x0400);                               // min normal
  CHECK(encode_f16(0x1p-14f - 0x1p-25f) == 0x0400);  // tie between 0x3FF and 0x400
  CHECK(encode_f16(0x1p-24f) == 0x0001);             // min subnormal
  CHECK(encode_f16(0x1p-25f) == 0x0000);             // half of it: tie to even 0
  CHECK(encode_f16(-0x1p-25f) == 0x8000);
  CHECK(encode_f16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(encode_f16(0x1.8p-24f) == 0x0002);       // 1.5 ulp: tie to even 2
  CHECK(encode_f16(1.0f + 0x1p-11f) == 0x3C00);  // tie to even
  CHECK(encode_f16(1.0f + 0x3p-11f) == 0x3C02);
  CHECK(encode_f16(2047.0f / 1024.0f + 0x1p-11f) == 0x4000);  // carry into the exponent
  CHECK(encode_f16(0.0f) == 0x0000);
  CHECK(encode_f16(-0.0f) == 0x8000);
  CHECK(encode_f16(kInf) == 0x7C00);
  CHECK(encode_f16(-kInf) == 0xFC00);
  // FP32 subnormals are far below half the F16 min subnormal.
  CHECK(encode_f16(from_bits(0x00000001u)) == 0x0000);
  CHECK(encode_f16(from_bits(0x807FFFFFu)) == 0x8000);
  // NaN: quiet, sign and top payload bits kept.
  CHECK(encode_f16(from_bits(0x7FC00000u)) == 0x7E00);
  CHECK(encode_f16(from_bits(0xFFC00000u)) == 0xFE00);
  CHECK(encode_f16(from_bits(0x7F800001u)) == 0x7E00);  // payload below F16's bits: still NaN
  CHECK(encode_f16(from_bits(0x7FA02000u)) == 0x7F01);
  CHECK(encode_f16(from_bits(0xFFFFFFFFu)) == 0xFFFF);
}

TEST_CASE("encode: BF16 and TF32 by hand") {
  CHECK(hpf::encode(DType::BF16, 1.0f) == 0x3F80);
  CHECK(hpf::encode(DType::BF16, 1.0f + 0x1p-8f) == 0x3F80);  // tie to even
  CHECK(hpf::encode(DType::BF16, 1.0f + 0x3p-8f) == 0x3F82);
  CHECK(hpf::encode(DType::BF16, std::numeric_limits<float>::max()) == 0x7F80);  // past max
  CHECK(hpf::encode(DType::BF16, from_bits(0x7F7F7FFFu)) == 0x7F7F);
  CHECK(hpf::encode(DType::BF16, from_bits(0x7F7F8000u)) == 0x7F80);  // halfway above max
  CHECK(hpf::encode(DType::BF16, from_bits(0x00008000u)) == 0x0000);  // FP32 subnormal tie
  CHECK(hpf::encode(DType::BF16, from_bits(0x00018000u)) == 0x0002);
  CHECK(hpf::encode(DType::BF16, from_bits(0x80008001u)) == 0x8001);
  CHECK(hpf::encode(DType::BF16, -0.0f) == 0x8000);
  CHECK(hpf::encode(DType::BF16, -kInf) == 0xFF80);
  CHECK(hpf::encode(DType::BF16, from_bits(0x7F800001u)) == 0x7FC0);
  CHECK(hpf::encode(DType::BF16, from_bits(0xFFA10000u)) == 0xFFE1);

  CHECK(hpf::encode(DType::TF32, 1.0f + 0x1p-11f) == 0x3F800000u);  // tie to even
  CHECK(hpf::encode(DType::TF32, 1.0f + 0x3p-11f) == 0x3F804000u);
  CHECK(hpf::encode(DType::TF32, from_bits(0x3F801001u)) == 0x3F802000u);
  CHECK(hpf::encode(DType::TF32, std::numeric_limits<float>::max()) == 0x7F800000u);
  CHECK(hpf::encode(DType::TF32, from_bits(0x7F7FEFFFu)) == 0x7F7FE000u);  // max
  CHECK(hpf::encode(DType::TF32, from_bits(0x7F7FF000u)) == 0x7F800000u);  // halfway: Inf
  CHECK(hpf::encode(DType::TF32, from_bits(0x00001000u)) == 0x00000000u);  // subnormal tie
  CHECK(hpf::encode(DType::TF32, from_bits(0x80001001u)) == 0x80002000u);
  CHECK(hpf::encode(DType::TF32, -kInf) == 0xFF800000u);
  // NaN: quiet bit set, low 13 bits cleared, sign kept.
  CHECK(hpf::encode(DType::TF32, from_bits(0x7F800001u)) == 0x7FC00000u);
  CHECK(hpf::encode(DType::TF32, from_bits(0xFFABCDEFu)) == 0xFFEBC000u);
  CHECK(hpf::round_to(DType::TF32, 1.0f + 0x1p-10f + 0x1p-20f) == 1.0f + 0x1p-10f);
  CHECK(hpf::round_to(DType::F32, 1.0f + 0x1p-20f) == 1.0f + 0x1p-20f);
  CHECK(hpf::encode(DType::F32, from_bits(0x7FA00001u)) == 0x7FA00001u);
}

TEST_CASE("encode: FP8 overflow modes by hand") {
  const auto e4 = [](float x, Overflow m) { return hpf::encode(DType::F8E4M3, x, m); };
  const auto e5 = [](float x, Overflow m) { return hpf::encode(DType::F8E5M2, x, m); };
  for (Overflow m : {Overflow::saturate, Overflow::propagate}) {
    CAPTURE(static_cast<int>(m));
    CHECK(e4(448.0f, m) == 0x7E);
    CHECK(e4(464.0f, m) == 0x7E);  // tie between 448 and the missing 480: even code 0x7E
    CHECK(e4(-464.0f, m) == 0xFE);
    CHECK(e4(0x1p-6f, m) == 0x08);   // min normal
    CHECK(e4(0x1p-9f, m) == 0x01);   // min subnormal
    CHECK(e4(0x1p-10f, m) == 0x00);  // half of it: tie to 0
    CHECK(e4(-0x1p-10f, m) == 0x80);
    CHECK(e4(std::nextafter(0x1p-10f, 1.0f), m) == 0x01);
    CHECK(e4(from_bits(0x7FC00000u), m) == 0x7F);
    CHECK(e4(from_bits(0xFF800001u), m) == 0xFF);
    CHECK(e5(57344.0f, m) == 0x7B);
    CHECK(e5(std::nextafter(61440.0f, 0.0f), m) == 0x7B);
    CHECK(e5(0x1p-16f, m) == 0x01);
    CHECK(e5(0x1p-14f, m) == 0x04);
    CHECK(e5(from_bits(0x7FC00000u), m) == 0x7E);
    CHECK(e5(from_bits(0xFFE00000u), m) == 0xFF);
    CHECK(e5(-0.0f, m) == 0x80);
  }
  CHECK(e4(465.0f, Overflow::saturate) == 0x7E);
  CHECK(e4(465.0f, Overflow::propagate) == 0x7F);
  CHECK(e4(-1e9f, Overflow::propagate) == 0xFF);
  CHECK(e4(kInf, Overflow::saturate) == 0x7E);
  CHECK(e4(-kInf, Overflow::saturate) == 0xFE);
  CHECK(e4(kInf, Overflow::propagate) == 0x7F);
  CHECK(e5(61440.0f, Overflow::saturate) == 0x7B);
  CHECK(e5(61440.0f, Overflow::propagate) == 0x7C);  // tie: 0x7B is odd, so up into Inf
  CHECK(e5(-61440.0f, Overflow::propagate) == 0xFC);
  CHECK(e5(kInf, Overflow::saturate) == 0x7B);
  CHECK(e5(-kInf, Overflow::saturate) == 0xFB);
  CHECK(e5(kInf, Overflow::propagate) == 0x7C);
  CHECK(std::isnan(hpf::round_to(DType::F8E4M3, 500.0f, Overflow::propagate)));
  CHECK(hpf::round_to(DType::F8E4M3, 500.0f) == 448.0f);
}

TEST_CASE("encode: integer formats round half to even, then clamp") {
  struct Case {
    DType t;
    float x;
    uint32_t want;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Case cases[] = {
      {DType::I8, 0.5f, 0},
      {DType::I8, 1.5f, 2},
      {DType::I8, 2.5f, 2},
      {DType::I8, -0.5f, 0},
      {DType::I8, -1.5f, 0xFE},
      {DType::I8, -2.5f, 0xFE},
      {DType::I8, 126.5f, 126},
      {DType::I8, 127.5f, 127},
      {DType::I8, 1e10f, 127},
      {DType::I8, -128.5f, 0x80},
      {DType::I8, -kInf, 0x80},
      {DType::I8, nan, 0},
      {DType::U8, -1.0f, 0},
      {DType::U8, 254.5f, 254},
      {DType::U8, 255.5f, 255},
      {DType::U8, 3.7f, 4},
      {DType::U8, kInf, 255},
      {DType::U8, nan, 0},
      {DType::I4, 7.5f, 7},
      {DType::I4, 6.5f, 6},
      {DType::I4, -8.5f, 8},
      {DType::I4, -3.0f, 0xD},
      {DType::I4, -100.0f, 8},
      {DType::I4, nan, 0},
      {DType::I32, -1.0f, 0xFFFFFFFFu},
      {DType::I32, 2147483648.0f, 0x7FFFFFFFu},
      {DType::I32, -2147483648.0f, 0x80000000u},
      {DType::I32, 2147483520.0f, 2147483520u},
      {DType::I32, -1e20f, 0x80000000u},
      {DType::I32, 8388609.5f, 8388610u},
      {DType::I32, nan, 0},
      {DType::I64, -7.5f, static_cast<uint32_t>(-8)},
      {DType::BOOL, 0.0f, 0},
      {DType::BOOL, -0.0f, 0},
      {DType::BOOL, 0.1f, 1},
      {DType::BOOL, -kInf, 1},
      {DType::BOOL, nan, 1},
  };
  for (const Case& c : cases) {
    CAPTURE(hpf::dtype_name(c.t));
    CAPTURE(c.x);
    CHECK(hpf::encode(c.t, c.x) == c.want);
  }
  CHECK(hpf::round_to(DType::I64, 3e9f) == 3e9f);  // round_to keeps the int64 range
  CHECK(hpf::round_to(DType::I64, -0x1p40f - 0.5f) == -0x1p40f);
  CHECK(hpf::round_to(DType::I64, 1e30f) == 0x1p63f);
  CHECK(hpf::round_to(DType::I8, 300.0f) == 127.0f);
}

TEST_CASE("encode: integer formats agree with nearbyint + clamp on random values") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> wide(-3e9, 3e9);
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    // Mix of half-integers (ties) and arbitrary values at several magnitudes.
    float x;
    if (i % 3 == 0)
      x = static_cast<float>(static_cast<int>(rng() % 601) - 300) + 0.5f;
    else if (i % 3 == 1)
      x = std::ldexp(static_cast<float>(static_cast<int32_t>(rng())), -24);
    else
      x = static_cast<float>(wide(rng));
    const double r = std::nearbyint(static_cast<double>(x));  // default mode: ties to even
    auto want_in = [&](double lo, double hi) {
      return static_cast<int64_t>(std::clamp(r, lo, hi));
    };
    const uint32_t want_i8 = static_cast<uint8_t>(want_in(-128, 127));
    const uint32_t want_u8 = static_cast<uint32_t>(want_in(0, 255));
    const uint32_t want_i4 = static_cast<uint32_t>(want_in(-8, 7)) & 0xF;
    const uint32_t want_i32 = static_cast<uint32_t>(want_in(-2147483648.0, 2147483647.0));
    if ((hpf::encode(DType::I8, x) != want_i8 || hpf::encode(DType::U8, x) != want_u8 ||
         hpf::encode(DType::I4, x) != want_i4 || hpf::encode(DType::I32, x) != want_i32) &&
        ++failures <= 10)
      FAIL_CHECK("x = " << x);
  }
  CHECK(failures == 0);
}

// ---- bulk spans --------------------------------------------------------------------------------

namespace {

// Values that `t` represents exactly, including signed zeros and extremes.
std::vector<float> representable_values(DType t, std::mt19937& rng, size_t n) {
  std::vector<float> v;
  while (v.size() < n) {
    float x;
    switch (t) {
      case DType::F32:
        x = from_bits(rng());
        break;
      case DType::TF32:
        x = from_bits(rng() & 0xFFFFE000u);
        break;
      case DType::BF16:
      case DType::F16:
        x = hpf::decode(t, rng() & 0xFFFF);
        break;
      case DType::F8E4M3:
      case DType::F8E5M2:
        x = hpf::decode(t, rng() & 0xFF);
        break;
      case DType::I8:
        x = static_cast<float>(static_cast<int>(rng() % 256) - 128);
        break;
      case DType::U8:
        x = static_cast<float>(rng() % 256);
        break;
      case DType::I4:
        x = static_cast<float>(static_cast<int>(rng() % 16) - 8);
        break;
      case DType::I32:
      case DType::I64:
        x = static_cast<float>(static_cast<int32_t>(rng()) >> (rng() % 32));
        break;
      case DType::BOOL:
        x = static_cast<float>(rng() % 2);
        break;
      default:
        x = 0;
    }
    if (t != DType::F32 && std::isnan(x)) continue;  // NaN codes decode to a quieted NaN
    v.push_back(x);
  }
  return v;
}

}  // namespace

TEST_CASE("spans: encode then decode round-trips every dtype, byte-compatible with encode()") {
  std::mt19937 rng(99);
  for (DType t : hpf::kAllDTypes) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      CAPTURE(hpf::dtype_name(t));
      CAPTURE(n);
      const std::vector<float> values = representable_values(t, rng, n);
      std::vector<std::byte> bytes(hpf::storage_bytes(t, n), std::byte{0xAA});
      // propagate keeps +-Inf as +-Inf in E5M2 (saturate would map it to max).
      REQUIRE(hpf::encode_span(t, values, bytes, Overflow::propagate).ok());
      std::vector<float> back(n, -123.0f);
      REQUIRE(hpf::decode_span(t, bytes, back).ok());
      int failures = 0;
      for (size_t i = 0; i < n; ++i) {
        // Element i as encode() sees it, read back little-endian from the packed bytes.
        uint64_t stored = 0;
        if (t == DType::I4) {
          stored = (static_cast<uint32_t>(bytes[i / 2]) >> (4 * (i % 2))) & 0xF;
        } else {
          const size_t w = static_cast<size_t>(hpf::bit_width(t) / 8);
          for (size_t b = 0; b < w; ++b) stored |= uint64_t(bytes[i * w + b]) << (8 * b);
        }
        const uint64_t want = t == DType::I64
                                  ? static_cast<uint64_t>(static_cast<int64_t>(values[i]))
                                  : hpf::encode(t, values[i], Overflow::propagate);
        if ((stored != want || f32_bits(back[i]) != f32_bits(values[i])) && ++failures <= 5)
          FAIL_CHECK("element " << i << " value " << values[i] << " stored " << hex(stored)
                                << " back " << back[i]);
      }
      CHECK(failures == 0);
      if (t == DType::I4 && n % 2 == 1) CHECK((static_cast<unsigned>(bytes.back()) >> 4) == 0);
    }
  }
}

TEST_CASE("spans: F8 and F16 spans honour the overflow mode and NaN rules") {
  const std::vector<float> v = {1e6f, -1e6f, kInf, std::numeric_limits<float>::quiet_NaN()};
  std::vector<std::byte> b(4);
  REQUIRE(hpf::encode_span(DType::F8E4M3, v, b, Overflow::propagate).ok());
  CHECK(b ==
        std::vector<std::byte>{std::byte{0x7F}, std::byte{0xFF}, std::byte{0x7F}, std::byte{0x7F}});
  REQUIRE(hpf::encode_span(DType::F8E5M2, v, b, Overflow::saturate).ok());
  CHECK(b ==
        std::vector<std::byte>{std::byte{0x7B}, std::byte{0xFB}, std::byte{0x7B}, std::byte{0x7E}});
  std::vector<std::byte> h(8);
  REQUIRE(hpf::encode_span(DType::F16, v, h).ok());
  CHECK(h == std::vector<std::byte>{std::byte{0x00}, std::byte{0x7C}, std::byte{0x00},
                                    std::byte{0xFC}, std::byte{0x00}, std::byte{0x7C},
                                    std::byte{0x00}, std::byte{0x7E}});
}

TEST_CASE("spans: I4 packs element 0 into the low nibble") {
  const std::vector<float> v = {1.0f, -2.0f, 3.0f};
  std::vector<std::byte> b(2);
  REQUIRE(hpf::encode_span(DType::I4, v, b).ok());
  CHECK(b[0] == std::byte{0xE1});
  CHECK(b[1] == std::byte{0x03});
  const std::vector<std::byte> packed = {std::byte{0x8F}, std::byte{0x70}};
  std::vector<float> out(4);
  REQUIRE(hpf::decode_span(DType::I4, packed, out).ok());
  CHECK(out == std::vector<float>{-1.0f, -8.0f, 0.0f, 7.0f});
}

TEST_CASE("spans: I64 stores 8 little-endian bytes and clamps to the int64 range") {
  const std::vector<float> v = {-1.0f, 0x1p40f, 1e30f, -1e30f, 2.5f};
  std::vector<std::byte> b(40);
  REQUIRE(hpf::encode_span(DType::I64, v, b).ok());
  auto at = [&](size_t i) {
    uint64_t x = 0;
    for (size_t k = 0; k < 8; ++k) x |= uint64_t(b[8 * i + k]) << (8 * k);
    return static_cast<int64_t>(x);
  };
  CHECK(at(0) == -1);
  CHECK(at(1) == (int64_t{1} << 40));
  CHECK(at(2) == std::numeric_limits<int64_t>::max());
  CHECK(at(3) == std::numeric_limits<int64_t>::min());
  CHECK(at(4) == 2);
  std::vector<float> back(5);
  REQUIRE(hpf::decode_span(DType::I64, b, back).ok());
  CHECK(back == std::vector<float>{-1.0f, 0x1p40f, 0x1p63f, -0x1p63f, 2.0f});
}

TEST_CASE("spans: size mismatches are invalid_argument naming dtype, count and byte counts") {
  std::vector<float> v(3);
  std::vector<std::byte> b(5);
  const hpf::Status e = hpf::encode_span(DType::F16, v, b);
  CHECK(e.code() == hpf::StatusCode::invalid_argument);
  CHECK(e.message() == "encode_span: 3 elements of f16 need 6 bytes, got 5");
  std::vector<float> five(5);
  std::vector<std::byte> two(2);
  const hpf::Status d = hpf::decode_span(DType::I4, two, five);
  CHECK(d.code() == hpf::StatusCode::invalid_argument);
  CHECK(d.message() == "decode_span: 5 elements of i4 need 3 bytes, got 2");
  std::vector<std::byte> sixteen(16);
  CHECK(hpf::decode_span(DType::I64, sixteen, v).message() ==
        "decode_span: 3 elements of i64 need 24 bytes, got 16");
  CHECK(!hpf::encode_span(DType::F32, v, sixteen).ok());
}
