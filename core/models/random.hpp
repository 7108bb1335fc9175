// Portable seeded random numbers for built-in weights and example inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace hpf::models {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [0, 1) from the top 24 bits: identical on every platform.
  float uniform() { return static_cast<float>(gen_() >> 40) * (1.0f / 16777216.0f); }
  // Box-Muller on two uniforms (std::normal_distribution differs between standard libraries).
  float normal() {
    const double u1 = (static_cast<double>(gen_() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    const double u2 = static_cast<double>(gen_() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  int64_t below(int64_t bound) { return static_cast<int64_t>(gen_() % static_cast<uint64_t>(bound)); }
  std::vector<float> normals(int64_t n, float stddev) {
    std::vector<float> v(n);
    for (float& x : v) x = normal() * stddev;
    return v;
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace hpf::models
