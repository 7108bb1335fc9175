// Seeded uniform random F32 tensors for the runtime tests (header-only; test code).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "hpf/tensor.hpp"

namespace hpf::test {

// Values uniform in [lo, hi) from std::mt19937(seed) (same sequence for the same seed).
inline Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (float& x : v) x = d(g);
  return *Tensor::from_f32(shape, v);
}

}  // namespace hpf::test
