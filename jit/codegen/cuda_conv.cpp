// Conv in CUDA (2-D NCHW, 1-D as 2-D with a unit H axis; groups, strides, dilations,
// pads/auto_pad, optional bias), spec conventions as generate_c_conv's.
//
// Implicit GEMM on cuda_gemm.hpp's machinery, one GEMM per group (the batch index):
//   rows i = output channel within the group (MG), columns j = output pixel over all images
//   (N*OH*OW), k = (input channel within the group, kernel row, kernel column) (CG*KH*KW);
//   A = the weights, read as stored ([M][CG*KH*KW] is k-contiguous: cp.async when aligned);
//   B = the input gathered per (pixel, k), zero where the tap falls in the padding.
// Depthwise convolutions (one input and one output channel per group) have K = KH*KW and a
// single row per GEMM, so they run as a direct kernel instead: one thread per output value.
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_geometry.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_cuda_conv(const KernelSpec& in_spec, const std::string& name) {
  HPF_ASSIGN_OR_RETURN(const ConvGeometry geo, conv_geometry(in_spec, "CUDA codegen"));
  const KernelSpec& spec = geo.spec;
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = geo.has_bias;
  const int64_t NB = geo.N, C = geo.C, H = geo.H, W = geo.W, M = geo.M, CG = geo.CG, KH = geo.KH, KW = geo.KW;
  const int64_t group = geo.group, OH = geo.OH, OW = geo.OW, SH = geo.SH, SW = geo.SW, DH = geo.DH, DW = geo.DW;
  const int64_t PH = geo.PH, PW = geo.PW;
  const int64_t MG = M / group, K = CG * KH * KW, OHW = OH * OW;
  const std::string xt = cuda_gemm_storage_type(X.dtype), wt = cuda_gemm_storage_type(Wt.dtype),
                    yt = cuda_gemm_storage_type(Y.dtype);
  const std::string bias_param = has_b ? "const " + std::string(cuda_gemm_storage_type(spec.inputs[2].dtype)) + "* __restrict__ Bias, " : "";
  const std::string bias = has_b ? " + " + cuda_gemm_load(spec.inputs[2].dtype, "Bias[m]") : "";
  // The input tap (n_, channel c of group g_, output pixel oh/ow, kernel kh/kw): ih, iw and validity.
  const std::string taps = "const i64 ih = oh * " + L(SH) + " - " + L(PH) + " + kh * " + L(DH) + ", iw = ow * " + L(SW) +
                           " - " + L(PW) + " + kw * " + L(DW) + ";";
  const std::string inside = "ih >= 0 && ih < " + L(H) + " && iw >= 0 && iw < " + L(W);

  if (CG == 1 && MG == 1) {  // depthwise: direct
    const int64_t total = NB * M * OHW;
    std::ostringstream s;
    s << cuda_prelude() << cuda_format_helpers()
      << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const " << xt << "* __restrict__ X, const " << wt
      << "* __restrict__ Wt, " << bias_param << yt << "* __restrict__ Y) {\n"
      << "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < " << L(total) << "; o += (i64)gridDim.x * blockDim.x) {\n"
      << "    const i64 ow = o % " << L(OW) << ", oh = (o / " << L(OW) << ") % " << L(OH) << ", m = (o / " << L(OHW) << ") % "
      << L(M) << ", n_ = o / " << L(M * OHW) << ";\n"
      << "    const " << xt << "* x = X + (n_ * " << L(C) << " + m) * " << L(H * W) << ";\n"
      << "    float acc = 0.0f;\n"
      << "    for (i64 kh = 0; kh < " << L(KH) << "; ++kh)\n"
      << "      for (i64 kw = 0; kw < " << L(KW) << "; ++kw) {\n"
      << "        " << taps << "\n"
      << "        if (" << inside << ") acc += " << cuda_gemm_load(X.dtype, "x[ih * " + L(W) + " + iw]") << " * "
      << cuda_gemm_load(Wt.dtype, "Wt[(m * " + L(KH) + " + kh) * " + L(KW) + " + kw]") << ";\n"
      << "      }\n"
      << "    Y[o] = " << cuda_gemm_store(Y.dtype, "acc" + bias) << ";\n  }\n}\n";
    return GeneratedKernel{name, s.str(), total, 256};
  }

  GemmProblem p;
  p.batches = group, p.M = MG, p.N = NB * OHW, p.K = K;
  p.accumulation = spec.accumulation;
  p.a.dtype = Wt.dtype;
  p.a.index = "bz * " + L(MG * K) + " + r * " + L(K) + " + k";
  p.a.ld_r = K, p.a.ld_k = 1;
  p.a.batch_aligned_16 = (MG * K * std::max(1, bit_width(Wt.dtype) / 8)) % 16 == 0;
  p.b.dtype = X.dtype;
  p.b.setup = "const i64 n_ = r / " + L(OHW) + ", q_ = r - n_ * " + L(OHW) + ", oh = q_ / " + L(OW) + ", ow = q_ - oh * " +
              L(OW) + "; const i64 c = k / " + L(KH * KW) + ", t_ = k - c * " + L(KH * KW) + ", kh = t_ / " + L(KW) +
              ", kw = t_ - kh * " + L(KW) + "; " + taps;
  p.b.valid = inside;
  p.b.index = "((n_ * " + L(C) + " + bz * " + L(CG) + " + c) * " + L(H) + " + ih) * " + L(W) + " + iw";
  p.b_first = true;  // the op's inputs: X, then the weights
  p.extra_params = bias_param + yt + "* __restrict__ Y";
  p.epilogue = "const i64 m = bz * " + L(MG) + " + i, n_ = j / " + L(OHW) + ";\n        Y[(n_ * " + L(M) + " + m) * " +
               L(OHW) + " + (j - n_ * " + L(OHW) + ")] = " + cuda_gemm_store(Y.dtype, "v" + bias) + ";";
  return generate_cuda_gemm(p, name);
}

}  // namespace hpf::jit
