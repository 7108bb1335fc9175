// Gather and Transpose in C: element moves with index arithmetic baked in; values are copied
// in their storage format, never converted.
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_prelude.hpp"

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
