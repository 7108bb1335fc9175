#include "plugins/cpu/runtime_symbols.hpp"

#include <math.h>
#include <string.h>

#include <bit>
#include <cstdint>
#include <cstdlib>

namespace hpf::cpu {

namespace {

// Rounds a double to a binary format with `E` exponent bits and `M` mantissa bits, once
// (float inputs widen exactly, so f32 -> f16 is not double-rounded). NaN stays a quiet NaN.
template <int E, int M>
uint16_t round_from_f64(double x) {
  const uint64_t b = std::bit_cast<uint64_t>(x);
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (E + M);
  const int e = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t m = b & ((uint64_t{1} << 52) - 1);
  const uint32_t inf = ((uint32_t{1} << E) - 1) << M;
  if (e == 0x7ff) {
    if (m == 0) return static_cast<uint16_t>(sign | inf);
    return static_cast<uint16_t>(sign | inf | (uint32_t{1} << (M - 1)) |
                                 static_cast<uint32_t>(m >> (52 - M)));
  }
  if (e == 0)
    return static_cast<uint16_t>(sign);  // zero or a double subnormal: far below both targets
  const int bias = (1 << (E - 1)) - 1;
  int exp = e - 1023 + bias;
  const uint64_t sig = m | (uint64_t{1} << 52);
  int shift = 52 - M;
  if (exp <= 0) {  // subnormal in the target
    shift += 1 - exp;
    exp = 0;
  }
  if (shift > 62) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  uint64_t kept = sig >> shift;
  const uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;
  // A subnormal that rounds up to 2^M becomes the smallest normal by the same encoding; a
  // mantissa carry moves into the exponent by the addition.
  const uint64_t bits =
      exp == 0 ? kept : (static_cast<uint64_t>(exp) << M) + (kept - (uint64_t{1} << M));
  if (bits >= inf) return static_cast<uint16_t>(sign | inf);
  return static_cast<uint16_t>(sign | bits);
}

// The helpers take and return _Float16/__bf16, which the C++ compiler building this plugin may
// not have (GCC 12). On x86-64 and AArch64 both half types travel in the low 16 bits of the
// first vector register, exactly where a float does: a float-typed parameter carries the half's
// bits, and returning a float whose low 16 bits are the result hands back a half.
#if defined(__x86_64__) || defined(__aarch64__)
#define HPF_CPU_HALF_HELPERS 1
float half_in_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h)); }
uint16_t half_of_float(float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f)); }

float truncsfhf2(float x) { return half_in_float(f32_to_f16_bits(x)); }
float truncdfhf2(double x) { return half_in_float(f64_to_f16_bits(x)); }
float truncsfbf2(float x) { return half_in_float(f32_to_bf16_bits(x)); }
float truncdfbf2(double x) { return half_in_float(f64_to_bf16_bits(x)); }
float extendhfsf2(float h) { return f16_bits_to_f32(half_of_float(h)); }
double extendhfdf2(float h) { return f16_bits_to_f32(half_of_float(h)); }
#endif

// The calling thread's scratch buffer (see runtime_symbols.hpp): grown in steps of 64 KiB, kept
// until the thread exits.
void* scratch(int64_t bytes) {
  struct Buffer {
    void* data = nullptr;
    int64_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (bytes <= 0) return nullptr;
  if (buffer.size < bytes) {
    const int64_t size = (bytes + 65535) / 65536 * 65536;
    std::free(buffer.data);
    buffer.data = std::aligned_alloc(64, static_cast<size_t>(size));
    buffer.size = buffer.data ? size : 0;
  }
  return buffer.data;
}

template <typename F>
void* address(F* f) {
  return reinterpret_cast<void*>(f);
}

}  // namespace

uint16_t f32_to_f16_bits(float x) { return round_from_f64<5, 10>(static_cast<double>(x)); }
uint16_t f64_to_f16_bits(double x) { return round_from_f64<5, 10>(x); }
uint16_t f32_to_bf16_bits(float x) { return round_from_f64<8, 7>(static_cast<double>(x)); }
uint16_t f64_to_bf16_bits(double x) { return round_from_f64<8, 7>(x); }

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1f;
  const uint32_t m = h & 0x3ff;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
  const float magnitude = static_cast<float>(m) * 0x1p-24f;  // subnormal or zero, exact
  return sign ? -magnitude : magnitude;
}

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> table = {
      // libm, float
      {"expf", address<float(float)>(&::expf)},
      {"exp2f", address<float(float)>(&::exp2f)},
      {"expm1f", address<float(float)>(&::expm1f)},
      {"logf", address<float(float)>(&::logf)},
      {"log2f", address<float(float)>(&::log2f)},
      {"log1pf", address<float(float)>(&::log1pf)},
      {"tanhf", address<float(float)>(&::tanhf)},
      {"erff", address<float(float)>(&::erff)},
      {"sqrtf", address<float(float)>(&::sqrtf)},
      {"sinf", address<float(float)>(&::sinf)},
      {"cosf", address<float(float)>(&::cosf)},
      {"tanf", address<float(float)>(&::tanf)},
      {"asinf", address<float(float)>(&::asinf)},
      {"acosf", address<float(float)>(&::acosf)},
      {"atanf", address<float(float)>(&::atanf)},
      {"sinhf", address<float(float)>(&::sinhf)},
      {"coshf", address<float(float)>(&::coshf)},
      {"asinhf", address<float(float)>(&::asinhf)},
      {"acoshf", address<float(float)>(&::acoshf)},
      {"atanhf", address<float(float)>(&::atanhf)},
      {"floorf", address<float(float)>(&::floorf)},
      {"ceilf", address<float(float)>(&::ceilf)},
      {"roundf", address<float(float)>(&::roundf)},
      {"rintf", address<float(float)>(&::rintf)},
      {"nearbyintf", address<float(float)>(&::nearbyintf)},
      {"truncf", address<float(float)>(&::truncf)},
      {"fabsf", address<float(float)>(&::fabsf)},
      {"powf", address<float(float, float)>(&::powf)},
      {"fmodf", address<float(float, float)>(&::fmodf)},
      {"fmaxf", address<float(float, float)>(&::fmaxf)},
      {"fminf", address<float(float, float)>(&::fminf)},
      {"fmaf", address<float(float, float, float)>(&::fmaf)},
      // libm, double
      {"exp", address<double(double)>(&::exp)},
      {"log", address<double(double)>(&::log)},
      {"tanh", address<double(double)>(&::tanh)},
      {"erf", address<double(double)>(&::erf)},
      {"sqrt", address<double(double)>(&::sqrt)},
      {"floor", address<double(double)>(&::floor)},
      {"ceil", address<double(double)>(&::ceil)},
      {"round", address<double(double)>(&::round)},
      {"rint", address<double(double)>(&::rint)},
      {"nearbyint", address<double(double)>(&::nearbyint)},
      {"fabs", address<double(double)>(&::fabs)},
      {"pow", address<double(double, double)>(&::pow)},
      {"fmod", address<double(double, double)>(&::fmod)},
      {"fmax", address<double(double, double)>(&::fmax)},
      {"fmin", address<double(double, double)>(&::fmin)},
      {"fma", address<double(double, double, double)>(&::fma)},
      // libc
      {"memcpy", address<void*(void*, const void*, size_t)>(&::memcpy)},
      {"memmove", address<void*(void*, const void*, size_t)>(&::memmove)},
      {"memset", address<void*(void*, int, size_t)>(&::memset)},
      // libhpf's own
      {"hpf_scratch", address(&scratch)},
  // compiler-rt conversion helpers
#ifdef HPF_CPU_HALF_HELPERS
      {"__truncsfhf2", address(&truncsfhf2)},
      {"__truncdfhf2", address(&truncdfhf2)},
      {"__truncsfbf2", address(&truncsfbf2)},
      {"__truncdfbf2", address(&truncdfbf2)},
      {"__extendhfsf2", address(&extendhfsf2)},
      {"__extendhfdf2", address(&extendhfdf2)},
#endif
  };
  return table;
}

}  // namespace hpf::cpu
