// F16 conversions against the CPU's own F16C instructions (vcvtps2ph / vcvtph2ps), bit for bit,
// NaN payloads included. Skipped, with a message, on a CPU without F16C.
#include <doctest/doctest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hpf/dtype.hpp"

namespace {

using hpf::DType;

bool have_f16c() {
  if (__builtin_cpu_supports("f16c")) return true;
  // doctest's skip() decorator is static, so the skip happens at run time, visibly.
  MESSAGE("SKIPPED: this CPU has no F16C instructions; the F16C cross-check did not run");
  return false;
}

// Round to nearest even from the immediate, not from MXCSR.
uint16_t cpu_encode(float x) { return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }
float cpu_decode(uint16_t h) { return _cvtsh_ss(h); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A stream of FP32 patterns: uniformly random bits, values in and around F16's range, F16
// halfway points and their FP32 neighbours, and NaN/Inf/FP32-subnormal specials.
class Samples {
 public:
  explicit Samples(uint32_t seed) : rng_(seed) {}

  uint32_t next(uint64_t i) {
    switch (i % 4) {
      case 0:
        return rng_();
      case 1: {
        // Exponents from below F16's subnormals (2^-26) to above its max (2^17).
        const uint32_t e = 127 - 26 + rng_() % 44;
        return (rng_() & 0x807FFFFFu) | (e << 23);
      }
      case 2: {
        // Halfway between F16 code h and h+1 (both finite), computed with the CPU's decoder;
        // the midpoint of two neighbours is always an FP32 value.
        const uint16_t h = static_cast<uint16_t>(rng_() % 0x7BFF);
        const float a = cpu_decode(h), b = cpu_decode(static_cast<uint16_t>(h + 1));
        float mid = a + (b - a) / 2;
        const uint32_t r = rng_();
        if (r & 2) mid = std::nextafter(mid, (r & 4) ? 1e9f : 0.0f);
        return std::bit_cast<uint32_t>(mid) | (r << 31);
      }
      default: {
        const uint32_t r = rng_();
        const uint32_t sign = r & 0x80000000u;
        switch (r % 3) {
          case 0:
            return sign | 0x7F800000u | (rng_() & 0x7FFFFFu);  // NaN (or Inf if 0)
          case 1:
            return sign | (rng_() & 0x7FFFFFu);  // FP32 subnormal or 0
          default:
            return sign | (0x477FE000u + rng_() % 0x4000u);  // around 65504..65536
        }
      }
    }
  }

 private:
  std::mt19937 rng_;
};

}  // namespace

TEST_CASE("f16c: encode(F16) matches vcvtps2ph on 10^7 FP32 patterns") {
  if (!have_f16c()) return;
  Samples samples(20240601);
  constexpr uint64_t kCount = 10'000'000;
  uint64_t failures = 0;
  for (uint64_t i = 0; i < kCount; ++i) {
    const uint32_t bits = samples.next(i);
    const float x = std::bit_cast<float>(bits);
    const uint32_t want = cpu_encode(x);
    const uint32_t got = hpf::encode(DType::F16, x);
    if (want != got && ++failures <= 10)
      FAIL_CHECK("x bits " << hex(bits) << ": got " << hex(got) << ", F16C " << hex(want));
  }
  CHECK(failures == 0);
}

TEST_CASE("f16c: decode(F16) matches vcvtph2ps on all 2^16 patterns") {
  if (!have_f16c()) return;
  int failures = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t want = std::bit_cast<uint32_t>(cpu_decode(static_cast<uint16_t>(h)));
    const uint32_t got = std::bit_cast<uint32_t>(hpf::decode(DType::F16, h));
    if (want != got && ++failures <= 10)
      FAIL_CHECK("f16 " << hex(h) << ": got " << hex(got) << ", F16C " << hex(want));
  }
  CHECK(failures == 0);
}

TEST_CASE("f16c: the F16 span paths match F16C on 10^6 patterns") {
  if (!have_f16c()) return;
  Samples samples(777);
  constexpr size_t kCount = 1'000'000;
  std::vector<float> x(kCount);
  for (size_t i = 0; i < kCount; ++i) x[i] = std::bit_cast<float>(samples.next(i));
  std::vector<std::byte> bytes(2 * kCount);
  REQUIRE(hpf::encode_span(DType::F16, x, bytes).ok());
  std::vector<float> back(kCount);
  REQUIRE(hpf::decode_span(DType::F16, bytes, back).ok());
  size_t failures = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const uint16_t got = static_cast<uint16_t>(static_cast<unsigned>(bytes[2 * i]) |
                                               static_cast<unsigned>(bytes[2 * i + 1]) << 8);
    const uint16_t want = cpu_encode(x[i]);
    const uint32_t back_want = std::bit_cast<uint32_t>(cpu_decode(want));
    if ((got != want || std::bit_cast<uint32_t>(back[i]) != back_want) && ++failures <= 10)
      FAIL_CHECK("element " << i << " bits " << hex(std::bit_cast<uint32_t>(x[i])) << ": stored "
                            << hex(got) << ", F16C " << hex(want));
  }
  CHECK(failures == 0);
}
