// Gather and Transpose in C: element moves with index arithmetic baked in; values are copied
// in their storage format, never converted.
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_gather(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &D = spec.inputs.at(0), &I = spec.inputs.at(1), &Y = spec.outputs.at(0);
  // Different float formats (a plan storing the table and the rows differently) convert per
  // element; otherwise the bytes are copied.
  const bool convert = D.dtype != Y.dtype;
  if (convert && !(is_float(D.dtype) && is_float(Y.dtype)))
    return Status::unsupported("C codegen: gather from " + std::string(dtype_name(D.dtype)) + " to " +
                               std::string(dtype_name(Y.dtype)));
  if (I.dtype != DType::I64 && I.dtype != DType::I32) return Status::unsupported("C codegen: gather indices of " + std::string(dtype_name(I.dtype)));
  auto it = spec.attrs.find("axis");
  int64_t axis = it == spec.attrs.end() ? 0 : std::get<int64_t>(it->second);
  if (axis < 0) axis += static_cast<int64_t>(D.shape.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= D.shape[d];
  for (size_t d = axis + 1; d < D.shape.size(); ++d) inner *= D.shape[d];
  const int64_t dim = D.shape[axis], ni = numel(I.shape);
  const char* t = c_storage_type(D.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  const std::string elem = convert ? c_store(Y.dtype, c_load(D.dtype, "d[ix]")) : std::string("d[ix]");
  if (inner == 1) {
    // Single elements (a gather along the last axis): one work item = one outer row, every
    // index of it, so that no element pays for a division. Out-of-range indices give zeros.
    s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
      << "  const " << t << "* restrict D = (const " << t << "*)args[0];\n"
      << "  const " << c_storage_type(I.dtype) << "* restrict I = (const " << c_storage_type(I.dtype) << "*)args[1];\n"
      << "  " << yt << "* restrict Y = (" << yt << "*)args[2];\n"
      << "  for (i64 o = begin; o < end; ++o) {\n"
      << "    const " << t << "* d = D + o * " << dim << "LL;\n"
      << "    " << yt << "* y = Y + o * " << ni << "LL;\n"
      << "    for (i64 j = 0; j < " << ni << "LL; ++j) {\n"
      << "      i64 ix = (i64)I[j];\n"
      << "      if (ix < 0) ix += " << dim << "LL;\n"
      << "      y[j] = ix >= 0 && ix < " << dim << "LL ? " << elem << " : 0;\n"
      << "    }\n  }\n}\n";
    return GeneratedKernel{name, s.str(), outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ni))};
  }
  // One work item = one (outer, index) row of `inner` elements. Out-of-range indices read
  // nothing and write zeros (validated by the caller before the launch).
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << t << "* restrict D = (const " << t << "*)args[0];\n"
    << "  const " << c_storage_type(I.dtype) << "* restrict I = (const " << c_storage_type(I.dtype) << "*)args[1];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[2];\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 o = w / " << ni << "LL, j = w % " << ni << "LL;\n"
    << "    i64 ix = (i64)I[j];\n"
    << "    if (ix < 0) ix += " << dim << "LL;\n"
    << "    " << yt << "* y = Y + w * " << inner << "LL;\n"
    << "    if (ix < 0 || ix >= " << dim << "LL) { for (i64 k = 0; k < " << inner << "LL; ++k) y[k] = 0; continue; }\n"
    << "    const " << t << "* d = D + (o * " << dim << "LL + ix) * " << inner << "LL;\n"
    << "    for (i64 k = 0; k < " << inner << "LL; ++k) y[k] = "
    << (convert ? c_store(Y.dtype, c_load(D.dtype, "d[k]")) : std::string("d[k]")) << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), outer * ni, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner))};
}

// Gather from a table quantised by the runtime (runtime/session/weight_packing.hpp,
// lower_quantised_gathers): inputs the packed table (U8: INT8 bytes, or INT4 two per byte, the
// even element in the low nibble, as hpf::quantize packs them), one FP32 scale per `group`
// consecutive elements, the indices; attributes wformat (i8 | i4), rows, width, group. Output
// element = q * scale in FP32, stored in the output's format. One work item per index.
Expected<GeneratedKernel> generate_c_gather_q(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1) return Status::invalid("gather_q: needs table, scales, indices");
  const TensorDesc &I = spec.inputs[2], &Y = spec.outputs[0];
  const std::string format = attr_s(spec.attrs, "wformat");
  const int64_t rows = attr_i(spec.attrs, "rows", 0), width = attr_i(spec.attrs, "width", 0),
                group = attr_i(spec.attrs, "group", 0);
  if ((format != "i8" && format != "i4") || rows <= 0 || width <= 0 || group <= 0 ||
      (width % group != 0 && group != rows * width))
    return Status::invalid("gather_q: wformat '" + format + "', rows " + std::to_string(rows) + ", width " +
                           std::to_string(width) + ", group " + std::to_string(group));
  if (I.dtype != DType::I64 && I.dtype != DType::I32)
    return Status::unsupported("C codegen: gather indices of " + std::string(dtype_name(I.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported("C codegen: gather_q into " + std::string(dtype_name(Y.dtype)));
  const int64_t ni = numel(I.shape), gw = width % group == 0 ? group : width;  // elements under one scale
  const std::string q = format == "i8" ? "(float)(i8)Q[f]" : "(float)((i32)(((Q[f >> 1] >> ((f & 1) * 4)) & 15u) ^ 8u) - 8)";
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const u8* restrict Q = (const u8*)args[0];\n"
    << "  const float* restrict S = (const float*)args[1];\n"
    << "  const " << c_storage_type(I.dtype) << "* restrict I = (const " << c_storage_type(I.dtype) << "*)args[2];\n"
    << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[3];\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    i64 ix = (i64)I[w];\n"
    << "    if (ix < 0) ix += " << L(rows) << ";\n"
    << "    " << c_storage_type(Y.dtype) << "* y = Y + w * " << L(width) << ";\n"
    << "    if (ix < 0 || ix >= " << L(rows) << ") { for (i64 k = 0; k < " << L(width) << "; ++k) y[k] = 0; continue; }\n"
    // Groups within a row (INT4, INT8 per row), else one scale for the table.
    << "    for (i64 g = 0; g < " << L(width) << "; g += " << L(gw) << ") {\n"
    << "      const float sc = S[" << (width % group == 0 ? "(ix * " + L(width) + " + g) / " + L(group) : std::string("0")) << "];\n"
    << "      for (i64 k = g; k < g + " << L(gw) << "; ++k) {\n"
    << "        const i64 f = ix * " << L(width) << " + k;\n"
    << "        y[k] = " << c_store(Y.dtype, q + " * sc") << ";\n"
    << "      }\n"
    << "    }\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), ni, std::max<int64_t>(1, 16384 / width)};
}

Expected<GeneratedKernel> generate_c_transpose(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const auto rank = static_cast<int64_t>(X.shape.size());
  std::vector<int64_t> perm;
  if (auto it = spec.attrs.find("perm"); it != spec.attrs.end()) perm = std::get<std::vector<int64_t>>(it->second);
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  std::vector<int64_t> in_strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * X.shape[d];
  const bool convert = X.dtype != Y.dtype;  // float formats convert per element
  if (convert && !(is_float(X.dtype) && is_float(Y.dtype)))
    return Status::unsupported("C codegen: transpose from " + std::string(dtype_name(X.dtype)) + " to " +
                               std::string(dtype_name(Y.dtype)));
  const char* t = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  // One work item = one output row (last output axis), so the inner loop is a strided gather.
  const int64_t last = rank ? Y.shape.back() : 1;
  const int64_t rows = last ? numel(Y.shape) / last : 0;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << t << "* restrict X = (const " << t << "*)args[0];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[1];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    i64 rem = r, src = 0;\n";
  for (int64_t d = rank - 2; d >= 0; --d)
    s << "    src += (rem % " << Y.shape[d] << "LL) * " << in_strides[perm[d]] << "LL; rem /= " << Y.shape[d] << "LL;\n";
  const std::string x = "X[src + k * " + std::to_string(rank ? in_strides[perm[rank - 1]] : 1) + "LL]";
  s << "    for (i64 k = 0; k < " << last << "LL; ++k) Y[r * " << last << "LL + k] = "
    << (convert ? c_store(Y.dtype, c_load(X.dtype, x)) : x) << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, last))};
}

}  // namespace hpf::jit
