// Data movement in the GPU dialects: Gather, Transpose, Concat, Slice, Pad and Expand, one thread
// per output element with the index arithmetic baked in. Values move in their storage format
// (bits copied) unless input and output formats differ, which converts through FP32.
// Slice, Pad and Expand share one kernel shape: per output axis a map from output coordinate to
// input coordinate (-1: the pad value); affine maps become arithmetic, others device tables.
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "core/ir/op_table.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {
namespace {

std::string what(GpuDialect d, const std::string& op) { return std::string(gpu_dialect_name(d)) + " " + op + ": "; }

// The stored output value of the stored input expression e: the bits when formats agree.
Expected<std::string> move(GpuDialect d, DType in, DType out, const std::string& e) {
  if (in == out) return e;
  if (is_float(in) && is_float(out)) return gpu_store(d, out, gpu_load(d, in, e));
  return Status::unsupported(what(d, "move") + std::string(dtype_name(in)) + " to " + std::string(dtype_name(out)));
}

std::string zero(GpuDialect d, DType t) { return is_float(t) ? gpu_store(d, t, "0.0f") : "0"; }

// "for (i64 i = ...; i < n; i += ...) {" over the output's elements.
std::string element_loop(int64_t n) {
  return "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < " + L(n) +
         "; i += (i64)gridDim.x * blockDim.x) {\n";
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t a = shape.size(); a-- > 1;) s[a - 1] = s[a] * shape[a];
  return s;
}

// maps[k][j]: the input coordinate of output coordinate j on axis k (-1: pad). `in_shape` has
// the output's rank.
Expected<GeneratedKernel> index_map_kernel(const KernelSpec& spec, const std::string& name, GpuDialect d,
                                           const std::vector<int64_t>& in_shape,
                                           const std::vector<std::vector<int64_t>>& maps, float pad_value) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const std::vector<int64_t>& out = Y.shape;
  const auto st = strides_of(in_shape);
  const int64_t n = numel(out);
  std::ostringstream tables, body;
  bool any_pad = false;
  body << "    i64 rem = i, src = 0; int pad = 0;\n";
  for (size_t k = out.size(); k-- > 0;) {
    const auto& m = maps[k];
    const int64_t step = m.size() > 1 ? m[1] - m[0] : 0;
    bool affine = true, has_pad = false;
    for (size_t j = 0; j < m.size(); ++j) {
      affine = affine && m[j] >= 0 && m[j] == m[0] + static_cast<int64_t>(j) * step;
      has_pad = has_pad || m[j] < 0;
    }
    const std::string c = "(rem % " + L(out[k]) + ")";
    if (affine) {
      body << "    src += (" << L(m.empty() ? 0 : m[0]) << " + " << c << " * " << L(step) << ") * " << L(st[k]) << ";";
    } else {
      tables << "static __device__ const long long M" << k << "[" << m.size() << "] = {";
      for (size_t j = 0; j < m.size(); ++j) tables << (j ? "," : "") << (m[j] < 0 ? -1 : m[j] * st[k]);
      tables << "};\n";
      body << "    { const i64 m = M" << k << "[" << c << "]; " << (has_pad ? "if (m < 0) pad = 1; else " : "")
           << "src += m; }";
      any_pad = any_pad || has_pad;
    }
    body << " rem /= " << L(out[k]) << ";\n";
  }
  HPF_ASSIGN_OR_RETURN(std::string v, move(d, X.dtype, Y.dtype, "X[src]"));
  if (any_pad) {
    const std::string p = is_float(Y.dtype) ? gpu_store(d, Y.dtype, c_float(pad_value))
                                            : "(" + std::string(gpu_storage_type(d, Y.dtype)) + ")" +
                                                  std::to_string(static_cast<int64_t>(pad_value));
    body << "    if (pad) { Y[i] = " << p << "; continue; }\n";
  }
  body << "    Y[i] = " << v << ";\n";
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X"}, "Y"));
  const std::string prelude_end = "\n" + gpu_kernel_head(name, 256);
  // Tables go between the prelude and the kernel.
  const size_t at = head.find(prelude_end);
  head.insert(at + 1, tables.str());
  return GeneratedKernel{name, head + element_loop(n) + body.str() + "  }\n}\n", n, 256};
}

}  // namespace

Expected<GeneratedKernel> generate_gpu_gather(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1) return Status::invalid(what(d, "gather") + "data, indices, one output");
  const TensorDesc &D = spec.inputs[0], &I = spec.inputs[1], &Y = spec.outputs[0];
  if (I.dtype != DType::I64 && I.dtype != DType::I32)
    return Status::unsupported(what(d, "gather") + "indices of " + std::string(dtype_name(I.dtype)));
  const auto rank = static_cast<int64_t>(D.shape.size());
  int64_t axis = attr_i(spec.attrs, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return Status::invalid(what(d, "gather") + "axis out of range for " + shape_string(D.shape));
  int64_t inner = 1;
  for (int64_t a = axis + 1; a < rank; ++a) inner *= D.shape[a];
  const int64_t dim = D.shape[axis], ni = numel(I.shape), n = numel(Y.shape);
  HPF_ASSIGN_OR_RETURN(std::string v, move(d, D.dtype, Y.dtype, "D[(o * " + L(dim) + " + ix) * " + L(inner) + " + k]"));
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"D", "I"}, "Y"));
  std::ostringstream s;
  // Out-of-range indices write zeros (the caller validates indices before the launch).
  s << head << element_loop(n) << "    const i64 k = i % " << L(std::max<int64_t>(inner, 1)) << ", w = i / "
    << L(std::max<int64_t>(inner, 1)) << ";\n"
    << "    const i64 j = w % " << L(std::max<int64_t>(ni, 1)) << ", o = w / " << L(std::max<int64_t>(ni, 1)) << ";\n"
    << "    i64 ix = (i64)I[j];\n"
    << "    if (ix < 0) ix += " << L(dim) << ";\n"
    << "    Y[i] = ix < 0 || ix >= " << L(dim) << " ? " << zero(d, Y.dtype) << " : " << v << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), n, 256};
}

Expected<GeneratedKernel> generate_gpu_transpose(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) return Status::invalid(what(d, "transpose") + "one input, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  const auto rank = static_cast<int64_t>(X.shape.size());
  std::vector<int64_t> perm = attr_ints(spec.attrs, "perm");
  if (perm.empty())
    for (int64_t a = rank - 1; a >= 0; --a) perm.push_back(a);
  if (static_cast<int64_t>(perm.size()) != rank || static_cast<int64_t>(Y.shape.size()) != rank)
    return Status::invalid(what(d, "transpose") + "perm does not match " + shape_string(X.shape));
  const auto st = strides_of(X.shape);
  const int64_t n = numel(Y.shape);
  HPF_ASSIGN_OR_RETURN(std::string v, move(d, X.dtype, Y.dtype, "X[src]"));
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X"}, "Y"));
  std::ostringstream s;
  s << head << element_loop(n) << "    i64 rem = i, src = 0;\n";
  for (int64_t a = rank - 1; a >= 0; --a)
    s << "    src += (rem % " << L(Y.shape[a]) << ") * " << L(st[perm[a]]) << "; rem /= " << L(Y.shape[a]) << ";\n";
  s << "    Y[i] = " << v << ";\n  }\n}\n";
  return GeneratedKernel{name, s.str(), n, 256};
}

Expected<GeneratedKernel> generate_gpu_concat(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  if (spec.inputs.empty() || spec.outputs.size() != 1) return Status::invalid(what(d, "concat") + "inputs and one output");
  const TensorDesc& Y = spec.outputs[0];
  const auto rank = static_cast<int64_t>(Y.shape.size());
  const auto axis_or = ir::normalize_axis(attr_i(spec.attrs, "axis", 0), rank);
  if (!axis_or) return Status::invalid(what(d, "concat") + "axis out of range for " + shape_string(Y.shape));
  const int64_t axis = *axis_or;
  int64_t inner = 1, total = 0;
  for (int64_t a = axis + 1; a < rank; ++a) inner *= Y.shape[a];
  const int64_t out_axis = Y.shape[axis], n = numel(Y.shape);
  std::vector<std::string> names;
  std::ostringstream body;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const TensorDesc& X = spec.inputs[k];
    if (static_cast<int64_t>(X.shape.size()) != rank) return Status::invalid(what(d, "concat") + "inputs of another rank");
    const int64_t len = X.shape[axis];
    names.push_back("X" + std::to_string(k));
    if (len == 0) continue;
    HPF_ASSIGN_OR_RETURN(std::string v, move(d, X.dtype, Y.dtype,
                                             names.back() + "[(o * " + L(len) + " + p - " + L(total) + ") * " + L(inner) + " + k]"));
    body << "    " << (total ? "else " : "") << "if (p < " << L(total + len) << ") Y[i] = " << v << ";\n";
    total += len;
  }
  if (total != out_axis) return Status::invalid(what(d, "concat") + "inputs do not add up to " + shape_string(Y.shape));
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, names, "Y"));
  std::ostringstream s;
  s << head << element_loop(n) << "    const i64 k = i % " << L(std::max<int64_t>(inner, 1)) << ", p = (i / "
    << L(std::max<int64_t>(inner, 1)) << ") % " << L(std::max<int64_t>(out_axis, 1)) << ", o = i / "
    << L(std::max<int64_t>(inner * out_axis, 1)) << ";\n"
    << body.str() << "  }\n}\n";
  return GeneratedKernel{name, s.str(), n, 256};
}

Expected<GeneratedKernel> generate_gpu_slice(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  HPF_ASSIGN_OR_RETURN(auto r, ir::slice_ranges(X.shape, attr_ints(spec.attrs, "slice_starts"), attr_ints(spec.attrs, "slice_ends"),
                                                attr_ints(spec.attrs, "slice_axes"), attr_ints(spec.attrs, "slice_steps")));
  std::vector<std::vector<int64_t>> maps;
  for (size_t k = 0; k < r.size(); ++k) {
    if (k >= Y.shape.size() || r[k].count != Y.shape[k])
      return Status::invalid(what(d, "slice") + shape_string(X.shape) + " does not give " + shape_string(Y.shape));
    std::vector<int64_t> m(r[k].count);
    for (int64_t j = 0; j < r[k].count; ++j) m[j] = r[k].start + j * r[k].step;
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, d, X.shape, maps, 0.0f);
}

Expected<GeneratedKernel> generate_gpu_pad(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const auto rank = static_cast<int64_t>(X.shape.size());
  const auto pads = attr_ints(spec.attrs, "pad_pads");
  if (static_cast<int64_t>(pads.size()) != 2 * rank) return Status::invalid(what(d, "pad") + "needs pad_pads for every axis");
  std::string mode = attr_s(spec.attrs, "mode");
  if (mode.empty()) mode = "constant";
  std::vector<std::vector<int64_t>> maps;
  for (int64_t k = 0; k < rank; ++k) {
    HPF_ASSIGN_OR_RETURN(auto m, ir::pad_source_map(mode, X.shape[k], pads[k], pads[rank + k]));
    if (static_cast<int64_t>(m.size()) != Y.shape[k]) return Status::invalid(what(d, "pad") + "output " + shape_string(Y.shape));
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, d, X.shape, maps, attr_f(spec.attrs, "pad_value", 0.0f));
}

Expected<GeneratedKernel> generate_gpu_expand(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  if (X.shape.size() > Y.shape.size()) return Status::invalid(what(d, "expand") + "to a lower rank");
  std::vector<int64_t> in(Y.shape.size() - X.shape.size(), 1);
  in.insert(in.end(), X.shape.begin(), X.shape.end());
  std::vector<std::vector<int64_t>> maps;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != Y.shape[k] && in[k] != 1)
      return Status::invalid(what(d, "expand") + shape_string(X.shape) + " to " + shape_string(Y.shape));
    std::vector<int64_t> m(Y.shape[k]);
    for (int64_t j = 0; j < Y.shape[k]; ++j) m[j] = in[k] == 1 ? 0 : j;
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, d, in, maps, 0.0f);
}

}  // namespace hpf::jit
