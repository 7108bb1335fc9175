// Softmax / LogSoftmax over the last axis in the GPU dialects: one block (256 threads) per row
// over a grid-stride loop of rows; the row max and the sum of exponentials are block reductions
// in FP32, the result rounded once to the output's format.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_softmax(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " softmax: ";
  if (spec.inputs.empty() || spec.outputs.size() != 1) return Status::invalid(what + "one input, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  const int64_t rank = static_cast<int64_t>(X.shape.size());
  int64_t axis = attr_i(spec.attrs, "axis", -1);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1) return Status::unsupported(what + "an axis other than the last");
  if (!is_float(X.dtype) || !is_float(Y.dtype) || !gpu_storage_type(d, X.dtype) || !gpu_storage_type(d, Y.dtype))
    return Status::unsupported(what + std::string(dtype_name(X.dtype)) + " to " + std::string(dtype_name(Y.dtype)));
  const bool log = spec.attrs.count("log") > 0;
  const int64_t cols = X.shape.back(), rows = cols ? numel(X.shape) / cols : 0;
  const std::string xt = gpu_storage_type(d, X.dtype), yt = gpu_storage_type(d, Y.dtype);
  auto x = [&](const std::string& j) { return gpu_load(d, X.dtype, "x[" + j + "]"); };
  auto y = [&](const std::string& v) { return gpu_store(d, Y.dtype, v); };
  std::ostringstream s;
  s << gpu_prelude(d) << "\n" << gpu_kernel_head(name, 256) << "const " << xt << "* __restrict__ X, " << yt
    << "* __restrict__ Y) {\n"
    << "  __shared__ float scratch[32];\n"
    << "  for (i64 r = blockIdx.x; r < " << L(rows) << "; r += gridDim.x) {\n"
    << "    const " << xt << "* x = X + r * " << L(cols) << ";\n"
    << "    " << yt << "* y = Y + r * " << L(cols) << ";\n"
    << "    float m = HPF_NEG_INF;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) m = fmaxf(m, " << x("j") << ");\n"
    << "    m = hpf_block_max(m, scratch);\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) sum += expf(" << x("j") << " - m);\n"
    << "    sum = hpf_block_sum(sum, scratch);\n";
  if (log)
    s << "    const float ls = logf(sum);\n"
      << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) y[j] = " << y(x("j") + " - m - ls")
      << ";\n";
  else
    s << "    const float inv = 1.0f / sum;\n"
      << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) y[j] = "
      << y("expf(" + x("j") + " - m) * inv") << ";\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows * 256, 256};
}

}  // namespace hpf::jit
