// How far a quantised kernel's output is from its plan's emulation (header-only; test code).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hpf/dtype.hpp"
#include "hpf/tensor.hpp"

namespace hpf::test {

struct QuantisedDiff {
  double worst = 0;        // max |got - want| / (1 + |want|), step differences aside
  int64_t step_diffs = 0;  // elements exactly one quantisation step apart
  int64_t elements = 0;
};

// `step`: the output's quantisation step (0: the output is not quantised). An FP32 sum on the
// other side of a rounding boundary than the emulation's FP64 one lands one step away; rare.
inline QuantisedDiff quantised_diff(const Tensor& got, const Tensor& want, float step) {
  const std::vector<float> gv = got.to_f32(), wv = want.to_f32();
  QuantisedDiff r;
  r.elements = static_cast<int64_t>(std::min(gv.size(), wv.size()));
  for (size_t i = 0; i < gv.size() && i < wv.size(); ++i) {
    if (std::isnan(gv[i]) != std::isnan(wv[i])) {  // one side NaN: no distance says how far
      r.worst = INFINITY;
      continue;
    }
    if (std::isnan(gv[i])) continue;
    const double d = std::abs(double(gv[i]) - wv[i]);
    if (step > 0 && d > 0 && std::abs(d - step) <= step * 1e-3) {
      ++r.step_diffs;
      continue;
    }
    r.worst = std::max(r.worst, d / (1.0 + std::abs(wv[i])));
  }
  return r;
}

// The largest |q| of float weights `w` quantised to INT8 with `q` (-1 when they do not quantise):
// the weight range a plan gave them.
inline int32_t int8_max_abs(const Tensor& w, const QuantParams& q) {
  Tensor qs(q.type == DType::I16 ? DType::I16 : DType::I8, w.shape());
  if (!quantize(w.to_f32(), w.shape(), q, qs.bytes()).ok()) return -1;
  int32_t mx = 0;
  for (float v : qs.to_f32()) mx = std::max(mx, static_cast<int32_t>(std::fabs(v)));
  return mx;
}

}  // namespace hpf::test
