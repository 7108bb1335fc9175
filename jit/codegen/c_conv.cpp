// Conv (2-D NCHW, and 1-D as 2-D with a unit H axis; groups incl. depthwise, strides, dilations, pads/auto_pad, optional bias) and
// inference BatchNormalization in C. Direct convolution, one output row per work item: the
// row accumulates in FP32 over input channel, kernel row and kernel column, output column
// innermost. Kernel rows outside the input are skipped once per row; for each kernel column the
// range of output columns reading inside the input is baked in as constants, so the hot loop
// has no bounds tests. Inputs in a 16-bit format are converted to FP32 stack scratch once per
// range (see below). Terms are summed in the reference's order (channel, then taps
// row-major).
#include <algorithm>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {
namespace {
// Stack scratch for FP32 copies of 16-bit conv inputs (bytes): kernels run on the caller's
// thread too, whose stack may be smaller than a worker's.
constexpr int64_t kMaxPlaneScratch = 256 * 1024;
constexpr int64_t kMaxWeightScratch = 32 * 1024;
}  // namespace

Expected<GeneratedKernel> generate_c_conv(const KernelSpec& in_spec, const std::string& name) {
  if (in_spec.inputs.size() < 2 || in_spec.inputs.size() > 3 || in_spec.outputs.size() != 1)
    return Status::invalid("conv: needs X, W, optional B and one output");
  const KernelSpec spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;  // 1-D as 2-D
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = spec.inputs.size() == 3;
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported("C codegen: Conv on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported("C codegen: Conv to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported("C codegen: Conv other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t M = Wt.shape[0], CG = Wt.shape[1], KH = Wt.shape[2], KW = Wt.shape[3];
  const int64_t group = attr_i(spec.attrs, "group", 1);
  if (group < 1 || C != CG * group || M % group != 0)
    return Status::invalid("conv: input " + shape_string(X.shape) + ", weight " + shape_string(Wt.shape) +
                           " and group " + std::to_string(group) + " disagree");
  if (has_b && numel(spec.inputs[2].shape) != M) return Status::invalid("conv: bias must have " + std::to_string(M) + " values");
  const std::vector<int64_t> in{H, W};
  HPF_ASSIGN_OR_RETURN(auto g, ir::window_geometry(in, {KH, KW}, attr_ints(spec.attrs, "strides"),
                                                   attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                   attr_s(spec.attrs, "auto_pad"), false));
  const int64_t OH = g.out[0], OW = g.out[1];
  if (Y.shape != std::vector<int64_t>{N, M, OH, OW})
    return Status::invalid("conv: output " + shape_string(Y.shape) + " does not match the geometry");
  const int64_t SH = g.strides[0], SW = g.strides[1], DH = g.dilations[0], DW = g.dilations[1];
  const int64_t PH = g.pads_begin[0], PW = g.pads_begin[1];
  const int64_t MG = M / group;
  // Per kernel column: output columns [lo, hi) whose input column ow*SW + kw*DW - PW is inside.
  std::vector<int64_t> lo(KW), hi(KW);
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * DW - PW;
    lo[kw] = std::max<int64_t>(0, ceil_div(-off, SW));
    hi[kw] = std::max(lo[kw], std::min(OW, floor_div(W - 1 - off, SW) + 1));
  }
  // BF16 inputs are converted to FP32 scratch on the stack once per range, not once per use:
  // the group's input plane row by row as rows are first needed (consecutive work items are
  // neighbouring output rows and channels of one group, which read the same input rows), and the
  // output channel's weights when the channel changes. FP32 holds 16-bit values exactly, so the
  // sums are the same. Planes or weights too big for the stack, and F16, convert an input row per
  // kernel row and a weight per use.
  const bool x16 = X.dtype != DType::F32 && X.dtype != DType::TF32;
  // Only for BF16: measured on cnn-small, F16 (hardware F16C loads) ran slower with the scratch.
  const bool x_plane = X.dtype == DType::BF16 && CG * H * W * 4 <= kMaxPlaneScratch;
  const bool w_buf = Wt.dtype == DType::BF16 && CG * KH * KW * 4 <= kMaxWeightScratch;
  const bool convert_rows = x16 && !x_plane;
  const char* xt = c_storage_type(X.dtype);
  const char* wt = c_storage_type(Wt.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << kernel_begin(name, spec, {"X", "Wt", "B"}, "Y") << array("i64", "lo", lo) << array("i64", "hi", hi) << "  float acc[" << std::max<int64_t>(1, OW) << "];\n";
  if (convert_rows) s << "  float xbuf[" << std::max<int64_t>(1, W) << "];\n";
  if (x_plane)
    s << "  float xplane[" << std::max<int64_t>(1, CG * H * W) << "];\n"
      << "  u8 have[" << std::max<int64_t>(1, H) << "];\n"
      << "  i64 xkey = -1;\n";
  if (w_buf) s << "  float wbuf[" << std::max<int64_t>(1, CG * KH * KW) << "];\n  i64 wkey = -1;\n";
  s
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 oh = r % " << L(OH) << ", m = (r / " << L(OH) << ") % " << L(M) << ", n = r / " << L(OH * M) << ";\n"
    << "    const i64 c0 = (m / " << L(MG) << ") * " << L(CG) << ";\n"
    << "    const i64 ih0 = oh * " << L(SH) << " - " << L(PH) << ";\n"
    // Kernel rows reading inside the input: kh*DH + ih0 in [0, H).
    << "    i64 kh_lo = 0, kh_hi = " << L(KH) << ";\n"
    << "    while (kh_lo < kh_hi && kh_lo * " << L(DH) << " + ih0 < 0) ++kh_lo;\n"
    << "    while (kh_hi > kh_lo && (kh_hi - 1) * " << L(DH) << " + ih0 >= " << L(H) << ") --kh_hi;\n";
  if (x_plane)
    s << "    const i64 key = n * " << L(C) << " + c0;\n"
      << "    if (key != xkey) {\n"
      << "      xkey = key;\n"
      << "      for (i64 i = 0; i < " << L(H) << "; ++i) have[i] = 0;\n"
      << "    }\n"
      << "    for (i64 kh = kh_lo; kh < kh_hi; ++kh) {\n"
      << "      const i64 ih = ih0 + kh * " << L(DH) << ";\n"
      << "      if (have[ih]) continue;\n"
      << "      have[ih] = 1;\n"
      << "      for (i64 c = 0; c < " << L(CG) << "; ++c) {\n"
      << "        const " << xt << "* restrict xs = X + ((n * " << L(C) << " + c0 + c) * " << L(H) << " + ih) * " << L(W) << ";\n"
      << "        float* restrict xd = xplane + (c * " << L(H) << " + ih) * " << L(W) << ";\n"
      << "        for (i64 j = 0; j < " << L(W) << "; ++j) xd[j] = " << c_load_operand(X.dtype, "xs[j]") << ";\n"
      << "      }\n    }\n";
  if (w_buf)
    s << "    if (m != wkey) {\n"
      << "      wkey = m;\n"
      << "      const " << wt << "* restrict wm = Wt + m * " << L(CG * KH * KW) << ";\n"
      << "      for (i64 i = 0; i < " << L(CG * KH * KW) << "; ++i) wbuf[i] = " << c_load_operand(Wt.dtype, "wm[i]") << ";\n"
      << "    }\n";
  s << "    for (i64 j = 0; j < " << L(OW) << "; ++j) acc[j] = 0.0f;\n"
    << "    for (i64 c = 0; c < " << L(CG) << "; ++c) {\n";
  if (x_plane)
    s << "      const float* restrict xc = xplane + c * " << L(H * W) << ";\n";
  else
    s << "      const " << xt << "* restrict xc = X + ((n * " << L(C) << " + c0 + c) * " << L(H) << ") * " << L(W) << ";\n";
  if (w_buf)
    s << "      const float* restrict wc = wbuf + c * " << L(KH * KW) << ";\n";
  else
    s << "      const " << wt << "* restrict wc = Wt + (m * " << L(CG) << " + c) * " << L(KH * KW) << ";\n";
  s << "      for (i64 kh = kh_lo; kh < kh_hi; ++kh) {\n"
    << "        const " << (x_plane ? "float" : xt) << "* restrict xs = xc + (ih0 + kh * " << L(DH) << ") * " << L(W) << ";\n";
  if (convert_rows)
    s << "        for (i64 j = 0; j < " << L(W) << "; ++j) xbuf[j] = " << c_load_operand(X.dtype, "xs[j]") << ";\n"
      << "        const float* restrict xr = xbuf;\n";
  else
    s << "        const float* restrict xr = xs;\n";
  const std::string wk = "wc[kh * " + L(KW) + " + kw]";
  s << "        for (i64 kw = 0; kw < " << L(KW) << "; ++kw) {\n"
    << "          const float w = " << (w_buf ? wk : c_load_operand(Wt.dtype, wk)) << ";\n"
    << "          const i64 off = kw * " << L(DW) << " - " << L(PW) << ", j1 = hi[kw];\n"
    << "          for (i64 j = lo[kw]; j < j1; ++j) acc[j] += w * " << (SW == 1 ? "xr[j + off]" : "xr[j * " + L(SW) + " + off]")
    << ";\n"
    << "        }\n      }\n    }\n";
  if (has_b) s << "    const float b = " << c_load(spec.inputs[2].dtype, "B[m]") << ";\n";
  s << "    " << yt << "* restrict yr = Y + r * " << L(OW) << ";\n";
  if (Y.dtype == DType::BF16) {
    // 16 stores at a time (vcvtneps2bf16 where the host has it), same bits as hpf_f32_bf16.
    if (has_b) s << "    for (i64 j = 0; j < " << L(OW) << "; ++j) acc[j] += b;\n";
    s << "    hpf_store_bf16_row(yr, acc, " << L(OW) << ");\n";
  } else {
    s << "    for (i64 j = 0; j < " << L(OW) << "; ++j) yr[j] = " << c_store(Y.dtype, has_b ? "acc[j] + b" : "acc[j]") << ";\n";
  }
  s << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, OW * CG * KH * KW);
  return GeneratedKernel{name, s.str(), N * M * OH, std::max<int64_t>(1, 65536 / per_item)};
}

// BatchNormalization (inference): y = x * scale[c] + shift[c], scale = gamma / sqrt(var + eps),
// shift = beta - mean * scale, in FP32. One (n, c) plane per work item.
Expected<GeneratedKernel> generate_c_batchnorm(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() != 5 || spec.outputs.size() != 1)
    return Status::invalid("batchnorm: needs X, scale, B, mean, var and one output");
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported("C codegen: BatchNormalization on " + std::string(dtype_name(t.dtype)));
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(Y.dtype) || X.shape.size() < 2) return Status::unsupported("C codegen: BatchNormalization of " + shape_string(X.shape));
  if (attr_i(spec.attrs, "training_mode", 0)) return Status::unsupported("C codegen: BatchNormalization training_mode=1");
  const int64_t ch = X.shape[1], planes = X.shape[0] * ch, inner = ch ? numel(X.shape) / std::max<int64_t>(1, planes) : 0;
  for (size_t k = 1; k < 5; ++k)
    if (numel(spec.inputs[k].shape) != ch) return Status::invalid("batchnorm: parameter " + std::to_string(k) + " size");
  float eps = 1e-5f;
  if (auto it = spec.attrs.find("epsilon"); it != spec.attrs.end()) {
    if (auto* f = std::get_if<float>(&it->second)) eps = *f;
  }
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n";
  for (int k = 1; k < 5; ++k) {
    const char* pt = c_storage_type(spec.inputs[k].dtype);
    s << "  const " << pt << "* restrict P" << k << " = (const " << pt << "*)args[" << k << "];\n";
  }
  auto p = [&](int k) { return c_load(spec.inputs[k].dtype, "P" + std::to_string(k) + "[c]"); };
  s << "  " << yt << "* restrict Y = (" << yt << "*)args[5];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 c = r % " << L(ch) << ";\n"
    << "    const float scale = " << p(1) << " / sqrtf(" << p(4) << " + " << c_float(eps) << ");\n"
    << "    const float shift = " << p(2) << " - " << p(3) << " * scale;\n"
    << "    const i64 o = r * " << L(inner) << ";\n"
    << "    for (i64 j = 0; j < " << L(inner) << "; ++j) Y[o + j] = "
    << c_store(Y.dtype, c_load(X.dtype, "X[o + j]") + " * scale + shift") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), planes, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, inner))};
}

}  // namespace hpf::jit
