// MaxPool (output 0), AveragePool (2-D NCHW, 1-D through lift_1d; pads, auto_pad, strides,
// dilations, ceil_mode, count_include_pad), GlobalAveragePool and GlobalMaxPool (any rank) in C,
// FP32 in registers whatever the storage format. Windowed pools take one output row per work item, like Conv: kernel rows
// outside the input are skipped per row, the output-column range of each kernel column is baked
// in, the output column loop is innermost and free of bounds tests. Semantics follow the
// reference: padding never wins a max, a max window over padding only gives the lowest float,
// NaN propagates exactly when the window's first real cell is NaN; average divisors count the
// explicit padding (count_include_pad) but never the ceil_mode overhang.
#include <algorithm>
#include <span>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

namespace {

// Windowed pools with up to this many kernel columns unroll them (one loop each, constant bounds).
constexpr int64_t kUnrolledColumns = 8;

Expected<GeneratedKernel> global_average_pool(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (X.shape.size() < 3) return Status::unsupported("C codegen: GlobalAveragePool of " + shape_string(X.shape));
  const int64_t planes = X.shape[0] * X.shape[1];
  const int64_t size = planes ? numel(X.shape) / planes : 0;
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[1];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const " << xt << "* restrict xp = X + r * " << L(size) << ";\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = 0; j < " << L(size) << "; ++j) sum += " << c_load(X.dtype, "xp[j]") << ";\n"
    << "    Y[r] = " << c_store(Y.dtype, "sum / " + std::to_string(size) + ".0f") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), planes, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, size))};
}

// GlobalMaxPool: each [N, C] plane's largest value; the plane's first NaN if it holds one (the
// reference's scan, exactly).
Expected<GeneratedKernel> global_max_pool(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (X.shape.size() < 3) return Status::unsupported("C codegen: GlobalMaxPool of " + shape_string(X.shape));
  const int64_t planes = X.shape[0] * X.shape[1];
  const int64_t size = numel(std::span(X.shape).subspan(2));
  if (size == 0) return Status::unsupported("C codegen: GlobalMaxPool of an empty plane " + shape_string(X.shape));
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[1];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const " << xt << "* restrict xp = X + r * " << L(size) << ";\n"
    << "    float m = " << c_load(X.dtype, "xp[0]") << ";\n"
    << "    for (i64 j = 1; j < " << L(size) << " && m == m; ++j) {\n"
    << "      const float v = " << c_load(X.dtype, "xp[j]") << ";\n"
    << "      if (v != v || v > m) m = v;\n"
    << "    }\n"
    << "    Y[r] = " << c_store(Y.dtype, "m") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), planes, std::max<int64_t>(1, 65536 / size)};
}

}  // namespace

Expected<GeneratedKernel> generate_c_pool(const KernelSpec& in_spec, const std::string& name) {
  if (in_spec.inputs.size() != 1 || in_spec.outputs.size() != 1)
    return Status::unsupported("C codegen: " + in_spec.family + " needs one input and one output (no MaxPool indices)");
  // 1-D windows as 2-D ones with a unit H axis (GlobalAveragePool takes any rank as it is).
  const bool lift = in_spec.family != "globalavgpool" && in_spec.family != "globalmaxpool" && in_spec.inputs[0].shape.size() == 3;
  const KernelSpec spec = lift ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(X.dtype) || !is_float(Y.dtype))
    return Status::unsupported("C codegen: " + spec.family + " on " + std::string(dtype_name(X.dtype)));
  if (spec.family == "globalavgpool") return global_average_pool(spec, name);
  if (spec.family == "globalmaxpool") return global_max_pool(spec, name);
  const bool is_max = spec.family == "maxpool";
  if (X.shape.size() != 4) return Status::unsupported("C codegen: pooling other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  if (attr_i(spec.attrs, "storage_order", 0) != 0 && !is_max) return Status::invalid("pool: storage_order");
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const std::vector<int64_t> in{H, W};
  HPF_ASSIGN_OR_RETURN(auto g, ir::window_geometry(in, attr_ints(spec.attrs, "kernel_shape"), attr_ints(spec.attrs, "strides"),
                                                   attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                   attr_s(spec.attrs, "auto_pad"), attr_i(spec.attrs, "ceil_mode", 0) != 0));
  const int64_t OH = g.out[0], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  if (Y.shape != std::vector<int64_t>{N, C, OH, OW})
    return Status::invalid("pool: output " + shape_string(Y.shape) + " does not match the geometry");
  const int64_t SH = g.strides[0], SW = g.strides[1], DH = g.dilations[0], DW = g.dilations[1];
  const int64_t PH = g.pads_begin[0], PW = g.pads_begin[1], PHE = g.pads_end[0], PWE = g.pads_end[1];
  const bool include_pad = attr_i(spec.attrs, "count_include_pad", 0) != 0;
  // Per kernel column: output columns [lo, hi) whose input column is inside. Per output column:
  // its inside count and count_include_pad count.
  std::vector<int64_t> lo(KW), hi(KW), cnt(OW, 0), pcnt(OW, 0);
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * DW - PW;
    lo[kw] = std::max<int64_t>(0, ceil_div(-off, SW));
    hi[kw] = std::max(lo[kw], std::min(OW, floor_div(W - 1 - off, SW) + 1));
  }
  for (int64_t ow = 0; ow < OW; ++ow)
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t p = ow * SW + kw * DW - PW;
      if (p >= 0 && p < W) ++cnt[ow];
      if (p >= -PW && p < W + PWE) ++pcnt[ow];
    }
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  // With a column stride SW > 1 each input row is first split into SW phases of WT values (phase
  // q: columns q, q + SW, ...; converted to FP32), so that every kernel column reads its output
  // columns' inputs contiguously: kernel column kw (offset off = kw * DW - PW) reads phase
  // phq[kw] = off mod SW at j + phb[kw], phb[kw] = floor(off / SW). A strided read kept the loop
  // scalar (ResNet-50's 3x3 stride-2 MaxPool: 0.2 ms against ONNX Runtime's 0.07).
  const int64_t WT = (W + SW - 1) / SW;
  std::vector<int64_t> phq(KW), phb(KW);
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * DW - PW;
    phb[kw] = floor_div(off, SW);
    phq[kw] = off - phb[kw] * SW;
  }
  const std::string x_at = SW == 1 ? c_load(X.dtype, "xr[j + off]") : "ph[phq[kw] * " + L(WT) + " + j + phb[kw]]";
  // The same read for a constant kernel column.
  auto x_at_kw = [&](int64_t kw) {
    const int64_t off = kw * DW - PW;
    return SW == 1 ? c_load(X.dtype, "xr[j + " + L(off) + "]") : "ph[" + L(phq[kw] * WT + phb[kw]) + " + j]";
  };
  // Up to kUnrolledColumns kernel columns get a loop each, with constant bounds and offsets;
  // wider kernels loop over the tables (lo, hi, phq, phb).
  const bool tables = KW > kUnrolledColumns;
  auto column_passes = [&](const std::string& update) {
    std::string out;
    if (!tables) {
      for (int64_t kw = 0; kw < KW; ++kw)
        if (lo[kw] < hi[kw])
          out += "      for (i64 j = " + L(lo[kw]) + "; j < " + L(hi[kw]) + "; ++j) { const float v = " + x_at_kw(kw) +
                 "; " + update + " }\n";
      return out;
    }
    return "      for (i64 kw = 0; kw < " + L(KW) + "; ++kw) {\n" + "        const i64 off = kw * " + L(DW) + " - " + L(PW) +
           ", j1 = hi[kw];\n" + "        (void)off;\n" + "        for (i64 j = lo[kw]; j < j1; ++j) { const float v = " +
           x_at + "; " + update + " }\n" + "      }\n";
  };
  // The statements splitting row `xr` into `ph` (nothing without a stride).
  const std::string split =
      SW == 1 ? ""
              : "      for (i64 c = 0; c < " + L(W) + "; ++c) rf[c] = " + c_load(X.dtype, "xr[c]") + ";\n" +
                    "      for (i64 t = 0; t < " + L(WT) + "; ++t)\n#pragma clang loop unroll(full)\n" +
                    "        for (int q = 0; q < " + std::to_string(SW) + "; ++q) ph[q * " + L(WT) + " + t] = rf[t * " +
                    std::to_string(SW) + " + q];\n";
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[1];\n"
    << (tables ? array("i64", "lo", lo) + array("i64", "hi", hi) : "");
  if (!is_max) s << array("i32", "cnt", include_pad ? pcnt : cnt);
  if (SW > 1)
    s << (tables ? array("i64", "phq", phq) + array("i64", "phb", phb) : "") << "  float rf[" << WT * SW << "], ph[" << WT * SW << "];\n"
      << "  for (i64 c = " << L(W) << "; c < " << L(WT * SW) << "; ++c) rf[c] = 0.0f;\n";
  s << "  float acc[" << std::max<int64_t>(1, OW) << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 oh = r % " << L(OH) << ", plane = r / " << L(OH) << ";\n"
    << "    const " << xt << "* restrict xc = X + plane * " << L(H * W) << ";\n"
    << "    " << yt << "* restrict yr = Y + r * " << L(OW) << ";\n"
    << "    const i64 ih0 = oh * " << L(SH) << " - " << L(PH) << ";\n"
    << "    i64 kh_lo = 0, kh_hi = " << L(KH) << ";\n"
    << "    while (kh_lo < kh_hi && kh_lo * " << L(DH) << " + ih0 < 0) ++kh_lo;\n"
    << "    while (kh_hi > kh_lo && (kh_hi - 1) * " << L(DH) << " + ih0 >= " << L(H) << ") --kh_hi;\n";
  if (is_max) {
    // Start from each window's first inside cell (row kh_lo; per output column, its first kernel
    // column inside: runs of equal ones, read as the passes read them), then take strictly
    // greater values: the first cell wins ties and a NaN there stays, a NaN later never wins.
    std::string init;
    for (int64_t j = 0; j < OW;) {
      int64_t kwf = -1;
      for (int64_t kw = 0; kw < KW && kwf < 0; ++kw)
        if (j >= lo[kw] && j < hi[kw]) kwf = kw;
      int64_t e = j + 1;
      for (; e < OW; ++e) {
        int64_t k2 = -1;
        for (int64_t kw = 0; kw < KW && k2 < 0; ++kw)
          if (e >= lo[kw] && e < hi[kw]) k2 = kw;
        if (k2 != kwf) break;
      }
      init += "        for (i64 j = " + L(j) + "; j < " + L(e) + "; ++j) acc[j] = " +
              (kwf < 0 ? std::string("-3.40282347e+38f") : x_at_kw(kwf)) + ";\n";
      j = e;
    }
    s << "    if (kh_lo >= kh_hi) {\n"
      << "      for (i64 j = 0; j < " << L(OW) << "; ++j) yr[j] = " << c_store(Y.dtype, "-3.40282347e+38f") << ";\n"
      << "      continue;\n    }\n"
      << "    for (i64 kh = kh_lo; kh < kh_hi; ++kh) {\n"
      << "      const " << xt << "* restrict xr = xc + (ih0 + kh * " << L(DH) << ") * " << L(W) << ";\n"
      << split
      << "      if (kh == kh_lo) {\n" << init << "      }\n"
      << column_passes("acc[j] = v > acc[j] ? v : acc[j];")
      << "    }\n"
      << "    for (i64 j = 0; j < " << L(OW) << "; ++j) yr[j] = " << c_store(Y.dtype, "acc[j]") << ";\n";
  } else {
    // Rows of the window counted for the divisor: inside rows, or rows inside the explicit pads.
    if (include_pad)
      s << "    i64 rows = 0;\n"
        << "    for (i64 kh = 0; kh < " << L(KH) << "; ++kh) { const i64 p = ih0 + kh * " << L(DH) << "; rows += p >= -"
        << L(PH) << " && p < " << L(H + PHE) << "; }\n";
    else
      s << "    const i64 rows = kh_hi > kh_lo ? kh_hi - kh_lo : 0;\n";
    s << "    for (i64 j = 0; j < " << L(OW) << "; ++j) acc[j] = 0.0f;\n"
      << "    for (i64 kh = kh_lo; kh < kh_hi; ++kh) {\n"
      << "      const " << xt << "* restrict xr = xc + (ih0 + kh * " << L(DH) << ") * " << L(W) << ";\n"
      << split
      << column_passes("acc[j] += v;")
      << "    }\n"
      // A window over padding only (without count_include_pad) divides 0 by 0: NaN, as the reference.
      << "    for (i64 j = 0; j < " << L(OW) << "; ++j) yr[j] = " << c_store(Y.dtype, "acc[j] / (float)(rows * cnt[j])") << ";\n";
  }
  s << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, OW * KH * KW);
  return GeneratedKernel{name, s.str(), N * C * OH, std::max<int64_t>(1, 65536 / per_item)};
}

}  // namespace hpf::jit
