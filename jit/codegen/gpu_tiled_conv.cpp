// Conv (2-D NCHW; 1-D through lift_1d; groups, strides, dilations, pads/auto_pad, optional bias)
// in the GPU dialects as an implicit GEMM on the tiled schedule of gpu_tiled_matmul.cpp: per
// group, Y[m][n,oh,ow] = sum over (c,kh,kw) of W[m][c,kh,kw] * X[n][c][oh*SH+kh*DH-PH][ow*SW+kw*DW-PW],
// the input patch gathered while the tile is staged (padding reads as zero), FP32 accumulation,
// the bias added in the epilogue.
#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_conv(const KernelSpec& in_spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " conv: ";
  if (in_spec.inputs.size() < 2 || in_spec.inputs.size() > 3 || in_spec.outputs.size() != 1)
    return Status::invalid(what + "needs X, W, optional B and one output");
  const KernelSpec spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = spec.inputs.size() == 3;
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported(what + "on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported(what + "to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported(what + "other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t M = Wt.shape[0], CG = Wt.shape[1], KH = Wt.shape[2], KW = Wt.shape[3];
  const int64_t group = attr_i(spec.attrs, "group", 1);
  if (group < 1 || C != CG * group || M % group != 0)
    return Status::invalid(what + "input " + shape_string(X.shape) + ", weight " + shape_string(Wt.shape) + " and group " +
                           std::to_string(group) + " disagree");
  if (has_b && numel(spec.inputs[2].shape) != M) return Status::invalid(what + "bias must have " + std::to_string(M) + " values");
  const std::vector<int64_t> in{H, W};
  HPF_ASSIGN_OR_RETURN(auto geo, ir::window_geometry(in, {KH, KW}, attr_ints(spec.attrs, "strides"),
                                                     attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                     attr_s(spec.attrs, "auto_pad"), false));
  const int64_t OH = geo.out[0], OW = geo.out[1], MG = M / group;
  if (Y.shape != std::vector<int64_t>{N, M, OH, OW})
    return Status::invalid(what + "output " + shape_string(Y.shape) + " does not match the geometry");
  TiledGemm g;
  g.dialect = d;
  g.batches = group;
  g.M = MG;
  g.N = N * OH * OW;
  g.K = CG * KH * KW;
  g.packed_f16 = X.dtype == DType::F16 && Wt.dtype == DType::F16;
  g.a_value = gpu_load(d, Wt.dtype, "Wt[(bt * " + L(MG) + " + i) * " + L(g.K) + " + p]");
  g.b_setup = "    const i64 c = p / " + L(KH * KW) + ", kh = p / " + L(KW) + " % " + L(KH) + ", kw = p % " + L(KW) + ";\n" +
              "    const i64 nb = j / " + L(OH * OW) + ", oh = j / " + L(OW) + " % " + L(OH) + ", ow = j % " + L(OW) + ";\n" +
              "    const i64 ih = oh * " + L(geo.strides[0]) + " + kh * " + L(geo.dilations[0]) + " - " + L(geo.pads_begin[0]) +
              ", iw = ow * " + L(geo.strides[1]) + " + kw * " + L(geo.dilations[1]) + " - " + L(geo.pads_begin[1]) + ";\n" +
              "    if (ih < 0 || ih >= " + L(H) + " || iw < 0 || iw >= " + L(W) + ") return 0.0f;\n";
  g.b_value = gpu_load(d, X.dtype, "X[((nb * " + L(C) + " + bt * " + L(CG) + " + c) * " + L(H) + " + ih) * " + L(W) + " + iw]");
  const std::string bias = has_b ? " + " + gpu_load(d, spec.inputs[2].dtype, "B[bt * " + L(MG) + " + i]") : "";
  g.epilogue = "        Y[(j / " + L(OH * OW) + " * " + L(M) + " + bt * " + L(MG) + " + i) * " + L(OH * OW) + " + j % " +
               L(OH * OW) + "] = " + gpu_store(d, Y.dtype, "v" + bias) + ";\n";
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X", "Wt", "B"}, "Y"));
  head.insert(head.find("\n" + gpu_kernel_head(name, 256)) + 1, gpu_tiled_gemm_helpers(g));
  const int64_t tiles = group * ((g.M + 63) / 64) * ((g.N + 63) / 64);
  return GeneratedKernel{name, head + gpu_tiled_gemm_body(g), tiles * 256, 256};
}

}  // namespace hpf::jit
