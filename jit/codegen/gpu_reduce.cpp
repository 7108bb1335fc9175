// ReduceSum, ReduceMean and ReduceMax (over the axes lowering resolved into reduce_axes) and
// GlobalAveragePool / GlobalMaxPool in the GPU dialects, accumulated in FP32.
// Reduce: one thread per output element; its kept coordinates give a base offset, nested loops
// walk the reduced axes (innermost last, so a thread reads contiguous memory when the last axis
// is reduced). Global pools: one block per [N, C] plane, block reductions.
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_reduce(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " reduce: ";
  if (spec.inputs.empty() || spec.outputs.size() != 1) return Status::invalid(what + "one input, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  const std::string kind = attr_s(spec.attrs, "reduce_kind");
  auto axes_it = spec.attrs.find("reduce_axes");
  if (kind.empty() || axes_it == spec.attrs.end())
    return Status::invalid(what + "spec without reduce_kind/reduce_axes (set by lowering)");
  if (kind != "sum" && kind != "mean" && kind != "max") return Status::unsupported(what + "reduction '" + kind + "'");
  if (!is_float(X.dtype) || !is_float(Y.dtype)) return Status::unsupported(what + "over " + std::string(dtype_name(X.dtype)));
  const auto rank = static_cast<int64_t>(X.shape.size());
  HPF_ASSIGN_OR_RETURN(auto axes, ir::normalize_axes(std::get<std::vector<int64_t>>(axes_it->second), rank));
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int64_t> stride(rank, 1);
  for (int64_t a = rank - 1; a > 0; --a) stride[a - 1] = stride[a] * X.shape[a];
  int64_t count = 1, n_out = 1;
  for (int64_t a = 0; a < rank; ++a) (reduced[a] ? count : n_out) *= X.shape[a];
  if (numel(Y.shape) != n_out)
    return Status::invalid(what + "output " + shape_string(Y.shape) + " does not match input " + shape_string(X.shape));

  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X"}, "Y"));
  std::ostringstream s;
  s << head << "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < " << L(n_out)
    << "; o += (i64)gridDim.x * blockDim.x) {\n"
    << "    i64 rem = o, base = 0;\n";
  for (int64_t a = rank - 1; a >= 0; --a)
    if (!reduced[a] && X.shape[a] != 1)
      s << "    base += (rem % " << L(X.shape[a]) << ") * " << L(stride[a]) << "; rem /= " << L(X.shape[a]) << ";\n";
  s << "    float acc = " << (kind == "max" ? "HPF_NEG_INF" : "0.0f") << ";\n";
  std::string ind = "    ", off = "base";
  int loops = 0;
  for (int64_t a = 0; a < rank; ++a) {
    if (!reduced[a] || X.shape[a] == 1) continue;
    const std::string i = "i" + std::to_string(a), o = "o" + std::to_string(a);
    s << ind << "for (i64 " << i << " = 0; " << i << " < " << L(X.shape[a]) << "; ++" << i << ") {\n";
    ind += "  ";
    s << ind << "const i64 " << o << " = " << off << " + " << i << " * " << L(stride[a]) << ";\n";
    off = o;
    ++loops;
  }
  const std::string v = gpu_load(d, X.dtype, "X[" + off + "]");
  s << ind << (kind == "max" ? "acc = hpf_maxf(acc, " + v + ");\n" : "acc += " + v + ";\n");
  for (; loops > 0; --loops) {
    ind.resize(ind.size() - 2);
    s << ind << "}\n";
  }
  const std::string result = kind == "mean" ? "acc / " + std::to_string(count) + ".0f" : "acc";
  s << "    Y[o] = " << gpu_store(d, Y.dtype, result) << ";\n  }\n}\n";
  return GeneratedKernel{name, s.str(), n_out, 256};
}

Expected<GeneratedKernel> generate_gpu_global_pool(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " " + spec.family + ": ";
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) return Status::invalid(what + "one input, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (X.shape.size() < 3 || !is_float(X.dtype) || !is_float(Y.dtype))
    return Status::unsupported(what + "of " + std::string(dtype_name(X.dtype)) + shape_string(X.shape));
  const bool is_max = spec.family == "globalmaxpool";
  const int64_t planes = X.shape[0] * X.shape[1], size = planes ? numel(X.shape) / planes : 0;
  if (size == 0) return Status::unsupported(what + "of an empty plane " + shape_string(X.shape));
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X"}, "Y"));
  const std::string x = gpu_load(d, X.dtype, "x[j]");
  std::ostringstream s;
  s << head << "  __shared__ float scratch[32];\n"
    << "  for (i64 r = blockIdx.x; r < " << L(planes) << "; r += gridDim.x) {\n"
    << "    const auto* x = X + r * " << L(size) << ";\n";
  if (is_max)  // NaN propagates (fmaxf would drop it): any NaN in the plane gives NaN
    s << "    float m = HPF_NEG_INF, nan = 0.0f;\n"
      << "    for (i64 j = threadIdx.x; j < " << L(size) << "; j += blockDim.x) { const float v = " << x
      << "; if (v != v) nan = 1.0f; else m = fmaxf(m, v); }\n"
      << "    m = hpf_block_max(m, scratch);\n"
      << "    nan = hpf_block_max(nan, scratch);\n"
      << "    if (threadIdx.x == 0) Y[r] = " << gpu_store(d, Y.dtype, "nan > 0.0f ? __int_as_float(0x7fc00000) : m")
      << ";\n";
  else
    s << "    float sum = 0.0f;\n"
      << "    for (i64 j = threadIdx.x; j < " << L(size) << "; j += blockDim.x) sum += " << x << ";\n"
      << "    sum = hpf_block_sum(sum, scratch);\n"
      << "    if (threadIdx.x == 0) Y[r] = " << gpu_store(d, Y.dtype, "sum / " + std::to_string(size) + ".0f") << ";\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), planes * 256, 256};
}

}  // namespace hpf::jit
