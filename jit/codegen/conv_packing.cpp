// Conv weight packing (layout in conv_packing.hpp).
#include "jit/codegen/conv_packing.hpp"

#include <algorithm>

#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {

int64_t conv_packed_size(int64_t groups, int64_t rows, int64_t k) {
  return groups * (rows + kGemmMR - 1) / kGemmMR * kGemmMR * k;
}

void pack_conv_weights(const float* w, int64_t groups, int64_t rows, int64_t k, float* out) {
  const int64_t tiles = (rows + kGemmMR - 1) / kGemmMR;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t s0 = 0; s0 < k; s0 += kGemmKC) {
      const int64_t kc = std::min(kGemmKC, k - s0);
      for (int64_t t = 0; t < tiles; ++t) {
        float* d = out + g * tiles * kGemmMR * k + s0 * tiles * kGemmMR + t * kc * kGemmMR;
        for (int64_t i = 0; i < kGemmMR; ++i) {
          const int64_t m = t * kGemmMR + i;
          const float* src = m < rows ? w + (g * rows + m) * k + s0 : nullptr;
          for (int64_t q = 0; q < kc; ++q) d[q * kGemmMR + i] = src ? src[q] : 0.0f;
        }
      }
    }
}

bool conv_takes_packed_weights(const KernelSpec& spec) {
  if (spec.family != "conv" || spec.inputs.size() < 2 || spec.attrs.count("w_shape")) return false;
  const TensorDesc& w = spec.inputs[1];
  // Depthwise (one input channel per group) runs the direct kernel, which reads rows of taps.
  return w.dtype == DType::F32 && (w.shape.size() == 3 || w.shape.size() == 4) && w.shape[1] > 1;
}

KernelSpec conv_spec_with_packed_weights(const KernelSpec& spec) {
  KernelSpec s = spec;
  const std::vector<int64_t>& ws = spec.inputs[1].shape;
  int64_t k = 1;
  for (size_t d = 1; d < ws.size(); ++d) k *= ws[d];
  const int64_t groups = std::max<int64_t>(1, attr_i(spec.attrs, "group", 1));
  s.attrs["w_shape"] = ws;
  s.inputs[1] = TensorDesc{DType::F32, {conv_packed_size(groups, ws[0] / groups, k)}};
  return s;
}

}  // namespace hpf::jit
