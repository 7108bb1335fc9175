// The functions JIT-compiled kernels may call: libm, memcpy/memset, the compiler-rt
// conversion helpers clang emits for _Float16 and __bf16, and libhpf's scratch memory:
//   void* hpf_scratch(i64 bytes)  (declared by the C prelude, jit/codegen/c_prelude.cpp)
//       the calling thread's scratch buffer, at least `bytes` long and 64-byte aligned, or null
//       where it cannot be had (the kernel then falls back on its stack); valid until the same
//       thread's next call or its exit: a kernel asks once per work range and is done with it
//       when the range returns (a thread runs one range at a time). The buffer is kept for the
//       next range and freed when the thread exits; its contents are not kept.
//
// The plugin is loaded RTLD_LOCAL, so the JIT cannot find these through the process scope;
// the loader defines each name explicitly at the address this table gives.
#ifndef HPF_PLUGINS_CPU_RUNTIME_SYMBOLS_HPP_
#define HPF_PLUGINS_CPU_RUNTIME_SYMBOLS_HPP_

#include <cstdint>
#include <vector>

namespace hpf::cpu {

struct RuntimeSymbol {
  const char* name;
  void* address;
};

// Every symbol kernels may call, with its address in this process. Stable for the process.
const std::vector<RuntimeSymbol>& runtime_symbols();

// Round-to-nearest-even conversions behind the compiler-rt helpers (bit patterns).
uint16_t f32_to_f16_bits(float x);
uint16_t f64_to_f16_bits(double x);
uint16_t f32_to_bf16_bits(float x);
uint16_t f64_to_bf16_bits(double x);
float f16_bits_to_f32(uint16_t h);

}  // namespace hpf::cpu

#endif  // HPF_PLUGINS_CPU_RUNTIME_SYMBOLS_HPP_
