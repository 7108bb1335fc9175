// ConvTranspose (2-D NCHW, and 1-D through lift_1d; groups, strides, dilations, pads,
// output_padding, output_shape/auto_pad as core/ir/op_geometry resolves them, optional bias) in
// C. Direct kernel, one output row per work item: input position p meets output position
// q = p*stride + tap*dilation - pad_begin, so for each input channel and kernel row the input
// row is fixed (or absent: the row offset is not a multiple of the stride), and each kernel
// column scatters a baked range of input columns into the row's FP32 accumulator. Terms reach
// each output in the reference's order (channel, then taps row-major).
#include <algorithm>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_conv_transpose(const KernelSpec& in_spec, const std::string& name) {
  if (in_spec.inputs.size() < 2 || in_spec.inputs.size() > 3 || in_spec.outputs.size() != 1)
    return Status::invalid("conv_transpose: needs X, W, optional B and one output");
  const KernelSpec spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = spec.inputs.size() == 3;
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported("C codegen: ConvTranspose on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported("C codegen: ConvTranspose to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported("C codegen: ConvTranspose other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t MG = Wt.shape[1], KH = Wt.shape[2], KW = Wt.shape[3];
  const int64_t group = attr_i(spec.attrs, "group", 1);
  const std::vector<int64_t> ks = attr_ints(spec.attrs, "kernel_shape");
  // Forms the reference rejects stay with it (unsupported: the session falls back), so the
  // error reads the same.
  if (group < 1 || Wt.shape[0] != C || C % group != 0 || (!ks.empty() && ks != std::vector<int64_t>{KH, KW}))
    return Status::unsupported("C codegen: ConvTranspose input " + shape_string(X.shape) + ", weight " +
                               shape_string(Wt.shape) + " and group " + std::to_string(group) + " disagree");
  const int64_t M = MG * group, CG = C / group;
  if (has_b && (spec.inputs[2].shape != std::vector<int64_t>{M}))
    return Status::unsupported("C codegen: ConvTranspose bias " + shape_string(spec.inputs[2].shape));
  const std::vector<int64_t> in{H, W};
  auto geo = ir::conv_transpose_geometry(in, {KH, KW}, attr_ints(spec.attrs, "strides"), attr_ints(spec.attrs, "dilations"),
                                         attr_ints(spec.attrs, "pads"), attr_ints(spec.attrs, "output_padding"),
                                         attr_ints(spec.attrs, "output_shape"), attr_s(spec.attrs, "auto_pad"));
  if (!geo.ok()) return Status::unsupported("C codegen: ConvTranspose geometry: " + geo.status().message());
  const ir::WindowGeometry& g = *geo;
  const int64_t OH = g.out[0], OW = g.out[1];
  if (Y.shape != std::vector<int64_t>{N, M, OH, OW})
    return Status::invalid("conv_transpose: output " + shape_string(Y.shape) + " does not match the geometry");
  const int64_t SH = g.strides[0], SW = g.strides[1], DH = g.dilations[0], DW = g.dilations[1];
  const int64_t PH = g.pads_begin[0], PW = g.pads_begin[1];
  // Per kernel column: input columns [lo, hi) whose output column iw*SW + kw*DW - PW is inside.
  std::vector<int64_t> lo(KW), hi(KW);
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * DW - PW;
    lo[kw] = std::max<int64_t>(0, ceil_div(-off, SW));
    hi[kw] = std::max(lo[kw], std::min(W, floor_div(OW - 1 - off, SW) + 1));
  }
  const char* xt = c_storage_type(X.dtype);
  const char* wt = c_storage_type(Wt.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << kernel_begin(name, spec, {"X", "Wt", "B"}, "Y") << array("i64", "lo", lo) << array("i64", "hi", hi) << "  float acc[" << std::max<int64_t>(1, OW) << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 oh = r % " << L(OH) << ", m = (r / " << L(OH) << ") % " << L(M) << ", n = r / " << L(OH * M) << ";\n"
    << "    const i64 c0 = (m / " << L(MG) << ") * " << L(CG) << ", ml = m % " << L(MG) << ";\n"
    << "    for (i64 j = 0; j < " << L(OW) << "; ++j) acc[j] = 0.0f;\n"
    << "    for (i64 c = c0; c < c0 + " << L(CG) << "; ++c) {\n"
    << "      const " << xt << "* restrict xc = X + (n * " << L(C) << " + c) * " << L(H * W) << ";\n"
    << "      const " << wt << "* restrict wc = Wt + (c * " << L(MG) << " + ml) * " << L(KH * KW) << ";\n"
    << "      for (i64 kh = 0; kh < " << L(KH) << "; ++kh) {\n"
    // The input row feeding output row oh through kernel row kh, if any.
    << "        const i64 t = oh + " << L(PH) << " - kh * " << L(DH) << ";\n"
    << "        if (t < 0 || t % " << L(SH) << " != 0 || t / " << L(SH) << " >= " << L(H) << ") continue;\n"
    << "        const " << xt << "* restrict xr = xc + (t / " << L(SH) << ") * " << L(W) << ";\n"
    << "        for (i64 kw = 0; kw < " << L(KW) << "; ++kw) {\n"
    << "          const float w = " << c_load(Wt.dtype, "wc[kh * " + L(KW) + " + kw]") << ";\n"
    << "          const i64 off = kw * " << L(DW) << " - " << L(PW) << ", j1 = hi[kw];\n"
    << "          for (i64 j = lo[kw]; j < j1; ++j) acc[" << (SW == 1 ? "j + off" : "j * " + L(SW) + " + off")
    << "] += w * " << c_load(X.dtype, "xr[j]") << ";\n"
    << "        }\n      }\n    }\n";
  if (has_b) s << "    const float b = " << c_load(spec.inputs[2].dtype, "B[m]") << ";\n";
  s << "    " << yt << "* restrict yr = Y + r * " << L(OW) << ";\n"
    << "    for (i64 j = 0; j < " << L(OW) << "; ++j) yr[j] = " << c_store(Y.dtype, has_b ? "acc[j] + b" : "acc[j]") << ";\n"
    << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, W * CG * KW * std::max<int64_t>(1, KH / std::max<int64_t>(1, SH)));
  return GeneratedKernel{name, s.str(), N * M * OH, std::max<int64_t>(1, 65536 / per_item)};
}

}  // namespace hpf::jit
