// Conv weight packing (layouts in conv_packing.hpp).
#include "jit/codegen/conv_packing.hpp"

#include <algorithm>

#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

struct Dims {
  int64_t groups, rows, k, channels;  // rows: output channels per group; channels: input ones
};

Dims dims_of(const std::vector<int64_t>& ws, const Attributes& attrs) {
  int64_t k = 1;
  for (size_t d = 1; d < ws.size(); ++d) k *= ws[d];
  const int64_t groups = std::max<int64_t>(1, attr_i(attrs, "group", 1));
  return {groups, ws[0] / groups, k, ws.size() > 1 ? ws[1] : 1};
}

int64_t blocks(int64_t v, int64_t b) { return (v + b - 1) / b; }

}  // namespace

bool conv_takes_packed_weights(const KernelSpec& spec) {
  if (spec.family != "conv" || spec.inputs.size() < 2 || spec.attrs.count("w_shape")) return false;
  const TensorDesc& w = spec.inputs[1];
  // Depthwise (one input channel per group) runs the direct kernel, which reads rows of taps.
  return (w.dtype == DType::F32 || w.dtype == DType::BF16) && (w.shape.size() == 3 || w.shape.size() == 4) &&
         w.shape[1] > 1;
}

bool conv_bf16_as_f32(const KernelSpec& spec, bool amx_bf16) {
  return spec.inputs.size() >= 2 && spec.inputs[1].dtype == DType::BF16 &&
         !(amx_bf16 && spec.inputs[0].dtype == DType::BF16);
}

bool conv_runs_winograd(const ConvGeometry& g) { return conv::winograd_fits(conv::shape_of(g)); }

KernelSpec conv_spec_with_packed_weights(const KernelSpec& spec) {
  KernelSpec s = spec;
  const std::vector<int64_t>& ws = spec.inputs[1].shape;
  const std::vector<int64_t>& xs = spec.inputs[0].shape;
  const std::vector<int64_t>& ys = spec.outputs[0].shape;
  const Dims d = dims_of(ws, spec.attrs);
  s.attrs["w_shape"] = ws;
  if (spec.inputs[1].dtype == DType::BF16) {
    s.attrs["w_layout"] = std::string("amx");
    s.inputs[1] = TensorDesc{DType::BF16, {d.groups * blocks(d.rows, kConvAmxRows) * kConvAmxRows *
                                           conv_amx_depth(d.channels, d.k / d.channels)}};
    return s;
  }
  // Pointwise: a 1x1 kernel keeping the input's spatial size (so unit strides, no padding).
  bool pointwise = ws.size() == xs.size() && ys.size() == xs.size();
  for (size_t a = 2; pointwise && a < ws.size(); ++a) pointwise = ws[a] == 1 && ys[a] == xs[a];
  for (int64_t st : attr_ints(spec.attrs, "strides")) pointwise = pointwise && st == 1;
  // The "cols" layout serves two kernels, both with the output channels as the microkernel's
  // columns, so both only where the channels fill the 64-wide blocks (a 24-channel layer would
  // compute 64):
  // - pointwise: it pays for gathering each output row from its tile; it wins where the rows
  //   kernel wastes much of its 64-pixel blocks (ResNet-50's 14x14 and 7x7 maps fill 77% of
  //   them) and K is deep enough to hide the gathering: from 128 (MobileNetV2 in C harnesses,
  //   one / two threads: 7x7 160 -> 960 0.105 -> 0.088 / 0.059 -> 0.052 ms, 14x14 192 -> 64
  //   0.040 -> 0.030 / 0.031 -> 0.026; at 64 and 96 deep it lost 3-10%: 14x14 64 -> 384 and
  //   96 -> 576);
  // - direct (c_conv_direct.cpp): kernels of more than one tap with 16 or more input channels
  //   per group, the input read in place from a padded window instead of packed patches
  //   (ResNet-50's 3x3 layers: see bench/README.md).
  int64_t pixels = 1;
  for (size_t a = 2; a < ys.size(); ++a) pixels *= ys[a];
  const bool rows_waste = pixels * 10 < blocks(pixels, kGemmNC) * kGemmNC * 9;
  // The pixels the rows kernel computes: whole 64-pixel blocks, a ragged last one in 16-lane
  // vectors (196 as 208).
  const int64_t rows_pixels = pixels / kGemmNC * kGemmNC + blocks(pixels % kGemmNC, 16) * 16;
  pointwise = pointwise && rows_waste && d.k >= 128;
  bool direct = false;
  KernelSpec own = spec;  // X, W and the bias: the geometry
  own.inputs.resize(spec.inputs.size() - static_cast<size_t>(std::max(0, spec.epilogue_inputs)));
  own.epilogue.clear();
  own.epilogue_inputs = 0;
  auto geo = conv_geometry(own, "conv packing");
  const DType xd = spec.inputs[0].dtype;
  if (geo.ok() && (xd == DType::F32 || xd == DType::BF16 || xd == DType::F16) && conv_runs_winograd(*geo)) {
    s.attrs["w_layout"] = std::string("wino");
    s.inputs[1] = TensorDesc{DType::F32, {16 * blocks(d.rows, kConvColBlock) * kConvColBlock * d.channels}};
    return s;
  }
  if (geo.ok()) direct = conv::direct_fits(conv::shape_of(*geo));
  // Output channels filling their blocks to 10%; for a pointwise Conv, or about as well as the
  // rows layout fills the pixels it computes or better (5% slack: the rows kernel copies a
  // ragged block): MobileNetV2's 7x7 960 -> 160 (160 of 192 channels against 49 of 64 pixels)
  // 0.17 -> 0.11 ms in the model; its 14x14 576 -> 96 (96 of 128 channels against 196 of 208
  // pixels) takes the rows layout (0.28 -> 0.255 ms), ResNet-50's 14x14 layers (256 of 256
  // channels) the cols layout (the rows kernel 1.13 against 0.96 ms for 1024 -> 256).
  const int64_t padded_rows = blocks(d.rows, kConvColBlock) * kConvColBlock;
  // The channels the cols pointwise kernel computes: a ragged last block in 16-lane vectors.
  const int64_t cols_rows = d.rows / kConvColBlock * kConvColBlock + blocks(d.rows % kConvColBlock, 16) * 16;
  const bool cols = (pointwise && d.rows * rows_pixels * 21 > pixels * cols_rows * 20) ||
                    ((pointwise || direct) && padded_rows * 10 <= d.rows * 11);
  s.attrs["w_layout"] = std::string(cols ? "cols" : "rows");
  const int64_t rows = cols ? blocks(d.rows, kConvColBlock) * kConvColBlock : blocks(d.rows, kGemmMR) * kGemmMR;
  s.inputs[1] = TensorDesc{DType::F32, {d.groups * rows * d.k}};
  return s;
}

void pack_conv_weights(const KernelSpec& packed_spec, const float* w, float* out) {
  const Dims d = dims_of(attr_ints(packed_spec.attrs, "w_shape"), packed_spec.attrs);
  auto weight = [&](int64_t g, int64_t m, int64_t k) { return m < d.rows ? w[(g * d.rows + m) * d.k + k] : 0.0f; };
  if (attr_s(packed_spec.attrs, "w_layout") == "wino") {
    // U = G g G^T per output and input channel, in double (G's halves are exact), then FP32.
    static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    const int64_t nb = blocks(d.rows, kConvColBlock), C = d.channels;
    std::fill(out, out + 16 * nb * kConvColBlock * C, 0.0f);
    for (int64_t m = 0; m < d.rows; ++m)
      for (int64_t c = 0; c < C; ++c) {
        const float* g = w + (m * C + c) * 9;
        double gg[4][3];  // G g
        for (int a = 0; a < 4; ++a)
          for (int j = 0; j < 3; ++j) gg[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
        for (int a = 0; a < 4; ++a)
          for (int bb = 0; bb < 4; ++bb) {
            const double u = gg[a][0] * G[bb][0] + gg[a][1] * G[bb][1] + gg[a][2] * G[bb][2];
            const int64_t xi = 4 * a + bb, cb = m / kConvColBlock, j = m % kConvColBlock;
            out[((xi * nb + cb) * C + c) * kConvColBlock + j] = static_cast<float>(u);
          }
      }
    return;
  }
  if (attr_s(packed_spec.attrs, "w_layout") == "cols") {
    const int64_t nb = blocks(d.rows, kConvColBlock);
    for (int64_t g = 0; g < d.groups; ++g)
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t k = 0; k < d.k; ++k)
          for (int64_t j = 0; j < kConvColBlock; ++j)
            out[((g * nb + b) * d.k + k) * kConvColBlock + j] = weight(g, b * kConvColBlock + j, k);
    return;
  }
  const int64_t tiles = blocks(d.rows, kGemmMR);
  for (int64_t g = 0; g < d.groups; ++g)
    for (int64_t t = 0; t < tiles; ++t) {
      float* o = out + (g * tiles + t) * kGemmMR * d.k;
      for (int64_t q = 0; q < d.k; ++q)
        for (int64_t i = 0; i < kGemmMR; ++i) o[q * kGemmMR + i] = weight(g, t * kGemmMR + i, q);
    }
}

void pack_conv_weights(const KernelSpec& packed_spec, const uint16_t* w, uint16_t* out) {
  const Dims d = dims_of(attr_ints(packed_spec.attrs, "w_shape"), packed_spec.attrs);
  const int64_t taps = d.k / d.channels, cgp = (d.channels + 1) / 2 * 2;
  const int64_t R = blocks(d.rows, kConvAmxRows), S = conv_amx_depth(d.channels, taps) / kConvAmxStep;
  for (int64_t g = 0; g < d.groups; ++g)
    for (int64_t b = 0; b < R; ++b)
      for (int64_t st = 0; st < S; ++st) {
        uint16_t* o = out + ((g * R + b) * S + st) * kConvAmxRows * kConvAmxStep;
        for (int64_t i = 0; i < kConvAmxRows; ++i)
          for (int64_t q = 0; q < kConvAmxStep; ++q) {
            const int64_t m = b * kConvAmxRows + i, k = st * kConvAmxStep + q, r = k / cgp, c = k % cgp;
            o[i * kConvAmxStep + q] =
                m < d.rows && r < taps && c < d.channels ? w[(g * d.rows + m) * d.k + c * taps + r] : uint16_t{0};
          }
      }
}

int64_t conv_i8_packed_bytes(const std::vector<int64_t>& w_shape, int64_t group) {
  Attributes a;
  a["group"] = group;
  const Dims d = dims_of(w_shape, a);
  return d.groups * blocks(d.rows, kConvI8Rows) * conv_i8_groups(d.channels, d.k / d.channels) * kConvI8Rows * 4;
}

void pack_conv_weights_i8(const std::vector<int64_t>& w_shape, int64_t group, const int8_t* q, int8_t* out,
                          int32_t* row_sums) {
  Attributes a;
  a["group"] = group;
  const Dims d = dims_of(w_shape, a);
  const int64_t taps = d.k / d.channels, KG = conv_i8_groups(d.channels, taps), R = blocks(d.rows, kConvI8Rows);
  for (int64_t g = 0; g < d.groups; ++g)
    for (int64_t b = 0; b < R; ++b)
      for (int64_t kg = 0; kg < KG; ++kg) {
        int8_t* o = out + ((g * R + b) * KG + kg) * kConvI8Rows * 4;
        const int64_t quad = kg / taps, r = kg % taps;
        for (int64_t i = 0; i < kConvI8Rows; ++i)
          for (int64_t c = 0; c < 4; ++c) {
            const int64_t m = b * kConvI8Rows + i, ch = quad * 4 + c;
            o[i * 4 + c] = m < d.rows && ch < d.channels ? q[(g * d.rows + m) * d.k + ch * taps + r] : int8_t{0};
          }
      }
  for (int64_t m = 0; m < d.groups * d.rows; ++m) {
    int32_t sum = 0;
    for (int64_t k = 0; k < d.k; ++k) sum += q[m * d.k + k];
    row_sums[m] = sum;
  }
}

}  // namespace hpf::jit
