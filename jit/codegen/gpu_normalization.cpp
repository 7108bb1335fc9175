// LayerNormalization and inference BatchNormalization in the GPU dialects, statistics in FP32.
// LayerNorm: one block (256 threads) per row of the normalised axes; the mean, then the variance
// of the centred values, are block sums (two passes, as the reference). BatchNorm: one thread
// per element, scale and shift per channel.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {
namespace {

float epsilon_of(const KernelSpec& spec) {
  auto it = spec.attrs.find("epsilon");
  if (it != spec.attrs.end())
    if (auto* f = std::get_if<float>(&it->second)) return *f;
  return 1e-5f;
}

}  // namespace

Expected<GeneratedKernel> generate_gpu_layernorm(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " layernorm: ";
  if (spec.inputs.empty() || spec.inputs.size() > 3 || spec.outputs.size() != 1)
    return Status::invalid(what + "needs X, optional scale and bias, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported(what + "on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported(what + "to " + std::string(dtype_name(Y.dtype)));
  const auto rank = static_cast<int64_t>(X.shape.size());
  int64_t axis = attr_i(spec.attrs, "axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return Status::invalid(what + "axis out of range for " + shape_string(X.shape));
  int64_t cols = 1;
  for (int64_t a = axis; a < rank; ++a) cols *= X.shape[a];
  const int64_t rows = cols ? numel(X.shape) / cols : 0;
  for (size_t k = 1; k < spec.inputs.size(); ++k)
    if (numel(spec.inputs[k].shape) != cols && numel(spec.inputs[k].shape) != 1)
      return Status::unsupported(what + "scale/bias that only partly broadcast");
  auto param = [&](size_t k) {
    const TensorDesc& p = spec.inputs[k];
    return gpu_load(d, p.dtype, "P" + std::to_string(k) + "[" + (numel(p.shape) == 1 ? "0" : "j") + "]");
  };
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X", "P1", "P2"}, "Y"));
  const std::string x = gpu_load(d, X.dtype, "x[j]");
  std::ostringstream s;
  s << head << "  __shared__ float scratch[32];\n"
    << "  for (i64 r = blockIdx.x; r < " << L(rows) << "; r += gridDim.x) {\n"
    << "    const auto* x = X + r * " << L(cols) << ";\n"
    << "    auto* y = Y + r * " << L(cols) << ";\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) sum += " << x << ";\n"
    << "    const float mean = hpf_block_sum(sum, scratch) / " << cols << ".0f;\n"
    << "    float sq = 0.0f;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) { const float c = " << x
    << " - mean; sq += c * c; }\n"
    << "    const float inv = 1.0f / sqrtf(hpf_block_sum(sq, scratch) / " << cols << ".0f + " << c_float(epsilon_of(spec))
    << ");\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) {\n"
    << "      float v = (" << x << " - mean) * inv;\n";
  if (spec.inputs.size() > 1) s << "      v = v * " << param(1) << ";\n";
  if (spec.inputs.size() > 2) s << "      v = v + " << param(2) << ";\n";
  s << "      y[j] = " << gpu_store(d, Y.dtype, "v") << ";\n    }\n  }\n}\n";
  return GeneratedKernel{name, s.str(), rows * 256, 256};
}

Expected<GeneratedKernel> generate_gpu_batchnorm(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " batchnorm: ";
  if (spec.inputs.size() != 5 || spec.outputs.size() != 1)
    return Status::invalid(what + "needs X, scale, B, mean, var and one output");
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported(what + "on " + std::string(dtype_name(t.dtype)));
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(Y.dtype) || X.shape.size() < 2) return Status::unsupported(what + "of " + shape_string(X.shape));
  if (attr_i(spec.attrs, "training_mode", 0)) return Status::unsupported(what + "training_mode=1");
  const int64_t ch = X.shape[1], n = numel(X.shape), inner = ch && X.shape[0] ? n / (X.shape[0] * ch) : 0;
  for (size_t k = 1; k < 5; ++k)
    if (numel(spec.inputs[k].shape) != ch) return Status::invalid(what + "parameter " + std::to_string(k) + " size");
  auto p = [&](int k) { return gpu_load(d, spec.inputs[k].dtype, "P" + std::to_string(k) + "[c]"); };
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X", "P1", "P2", "P3", "P4"}, "Y"));
  std::ostringstream s;
  s << head << "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < " << L(n)
    << "; i += (i64)gridDim.x * blockDim.x) {\n"
    << "    const i64 c = (i / " << L(std::max<int64_t>(inner, 1)) << ") % " << L(std::max<int64_t>(ch, 1)) << ";\n"
    << "    const float scale = " << p(1) << " / sqrtf(" << p(4) << " + " << c_float(epsilon_of(spec)) << ");\n"
    << "    const float shift = " << p(2) << " - " << p(3) << " * scale;\n"
    << "    Y[i] = " << gpu_store(d, Y.dtype, gpu_load(d, X.dtype, "X[i]") + " * scale + shift") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), n, 256};
}

}  // namespace hpf::jit
