// Seeded uniform random F32 tensors for the runtime tests (header-only; test code).
#pragma once

#include <cmath>
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

// `t` with every 7th element replaced by a value a quantiser must take care of: NaN, +-inf,
// +-1e30 and +-3e9 (past what 32-bit integers hold), -0.
inline Tensor with_special_values(const Tensor& t) {
  std::vector<float> v = t.to_f32();
  const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 3e9f, -3e9f, -0.0f};
  for (size_t k = 0; k < v.size(); k += 7) v[k] = special[(k / 7) % 8];
  return *Tensor::from_f32(t.shape(), v);
}

}  // namespace hpf::test
