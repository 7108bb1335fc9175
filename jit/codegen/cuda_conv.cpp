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

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_cuda_conv(const KernelSpec& in_spec, const std::string& name) {
  if (in_spec.inputs.size() < 2 || in_spec.inputs.size() > 3 || in_spec.outputs.size() != 1)
    return Status::invalid("conv: needs X, W, optional B and one output");
  const KernelSpec spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = spec.inputs.size() == 3;
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported("CUDA codegen: Conv on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported("CUDA codegen: Conv to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported("CUDA codegen: Conv other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  const int64_t NB = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t M = Wt.shape[0], CG = Wt.shape[1], KH = Wt.shape[2], KW = Wt.shape[3];
  const int64_t group = attr_i(spec.attrs, "group", 1);
  if (group < 1 || C != CG * group || M % group != 0)
    return Status::invalid("conv: input " + shape_string(X.shape) + ", weight " + shape_string(Wt.shape) +
                           " and group " + std::to_string(group) + " disagree");
  if (has_b && numel(spec.inputs[2].shape) != M) return Status::invalid("conv: bias must have " + std::to_string(M) + " values");
  const std::vector<int64_t> in{H, W};
  HPF_ASSIGN_OR_RETURN(auto geo, ir::window_geometry(in, {KH, KW}, attr_ints(spec.attrs, "strides"),
                                                     attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                     attr_s(spec.attrs, "auto_pad"), false));
  const int64_t OH = geo.out[0], OW = geo.out[1];
  if (Y.shape != std::vector<int64_t>{NB, M, OH, OW})
    return Status::invalid("conv: output " + shape_string(Y.shape) + " does not match the geometry");
  const int64_t SH = geo.strides[0], SW = geo.strides[1], DH = geo.dilations[0], DW = geo.dilations[1];
  const int64_t PH = geo.pads_begin[0], PW = geo.pads_begin[1];
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
  p.extra_params = bias_param + yt + "* __restrict__ Y";
  p.epilogue = "const i64 m = bz * " + L(MG) + " + i, n_ = j / " + L(OHW) + ";\n        Y[(n_ * " + L(M) + " + m) * " +
               L(OHW) + " + (j - n_ * " + L(OHW) + ")] = " + cuda_gemm_store(Y.dtype, "v" + bias) + ";";
  return generate_cuda_gemm(p, name);
}

}  // namespace hpf::jit
