// Softmax / LogSoftmax over the last axis in CUDA: one block (256 threads) per row over a
// grid-stride loop of rows; the row max and the sum of exponentials are block reductions in FP32,
// the result rounded once to the output's format. Launch: work_items = rows (grid), grain =
// threads per block.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_codegen.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_cuda_softmax(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.empty() || spec.outputs.size() != 1) return Status::invalid("CUDA softmax: one input, one output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  const int64_t rank = static_cast<int64_t>(X.shape.size());
  int64_t axis = attr_i(spec.attrs, "axis", -1);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1) return Status::unsupported("CUDA codegen: Softmax over an axis other than the last");
  auto is_stored_float = [](DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; };
  if (!is_stored_float(X.dtype) || !is_stored_float(Y.dtype))
    return Status::unsupported("CUDA codegen: Softmax of " + std::string(dtype_name(X.dtype)) + " to " +
                               std::string(dtype_name(Y.dtype)));
  const bool log = spec.attrs.count("log") > 0;
  const int64_t cols = X.shape.back(), rows = cols ? numel(X.shape) / cols : 0;
  const std::string xt = cuda_storage_type(X.dtype), yt = cuda_storage_type(Y.dtype);
  auto x = [&](const std::string& j) { return cuda_load(X.dtype, "x[" + j + "]"); };
  const std::string to_y = Y.dtype == DType::F32   ? ""
                           : Y.dtype == DType::F16 ? "__float2half_rn"
                                                   : "__float2bfloat16_rn";
  std::ostringstream s;
  s << cuda_prelude() << "\nextern \"C\" __global__ void __launch_bounds__(256) " << name << "(const " << xt
    << "* __restrict__ X, " << yt << "* __restrict__ Y) {\n"
    << "  __shared__ float scratch[32];\n"
    << "  for (i64 r = blockIdx.x; r < " << L(rows) << "; r += gridDim.x) {\n"
    << "    const " << xt << "* x = X + r * " << L(cols) << ";\n"
    << "    " << yt << "* y = Y + r * " << L(cols) << ";\n"
    << "    float m = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h macros)\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) m = fmaxf(m, " << x("j") << ");\n"
    << "    m = hpf_block_max(m, scratch);\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) sum += expf(" << x("j") << " - m);\n"
    << "    sum = hpf_block_sum(sum, scratch);\n";
  if (log)
    s << "    const float ls = logf(sum);\n"
      << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) y[j] = " << to_y << "(" << x("j")
      << " - m - ls);\n";
  else
    s << "    const float inv = 1.0f / sum;\n"
      << "    for (i64 j = threadIdx.x; j < " << L(cols) << "; j += blockDim.x) y[j] = " << to_y << "(expf(" << x("j")
      << " - m) * inv);\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, 256};
}

}  // namespace hpf::jit
