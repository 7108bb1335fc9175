// Fused elementwise chains in the GPU dialects: the steps of c_elementwise.cpp (the shared
// expression table), each computed in FP32 and rounded to its storage format, so casts need no
// pass of their own. One thread per output element over a grid-stride loop; each input's offset
// comes from the output index by broadcast strides baked in as constants.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/elementwise_expr.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_elementwise(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const ExprSpelling sp{d == GpuDialect::cuda ? "CUDA" : "HIP", "fabsf", "fabs", "expf", "erff"};
  const std::string what = std::string(sp.dialect) + " codegen: ";
  if (spec.outputs.size() != 1) return Status::unsupported(what + "elementwise kernels have one output");
  const TensorDesc& out = spec.outputs[0];
  const int64_t n = numel(out.shape);
  const int rank = static_cast<int>(out.shape.size());
  const char* ot = gpu_storage_type(d, out.dtype);
  if (!ot) return Status::unsupported(what + "output dtype " + std::string(dtype_name(out.dtype)));
  // 32/64-bit integers are exact in double (to 2^53), not in float.
  auto wide_int = [](DType t) { return t == DType::I32 || t == DType::I64; };
  bool wide = wide_int(out.dtype);
  for (const TensorDesc& in : spec.inputs) wide = wide || wide_int(in.dtype);
  for (const ElementwiseStep& st : spec.chain) wide = wide || wide_int(st.dtype);
  const char* ct = wide ? "double" : "float";

  std::ostringstream src;
  src << gpu_prelude(d) << "\n" << gpu_kernel_head(name, 0);
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const char* t = gpu_storage_type(d, spec.inputs[k].dtype);
    if (!t) return Status::unsupported(what + "input dtype " + std::string(dtype_name(spec.inputs[k].dtype)));
    src << "const " << t << "* __restrict__ in" << k << ", ";
  }
  src << ot << "* __restrict__ out) {\n"
      << "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < " << L(n)
      << "; i += (i64)gridDim.x * blockDim.x) {\n";
  // Coordinates of i over the output's axes (innermost first), then each input's offset.
  if (rank > 0) src << "    i64 rem = i;\n";
  for (int a = rank - 1; a >= 0; --a)
    src << "    const i64 c" << a << " = rem % " << L(out.shape[a]) << "; rem /= " << L(out.shape[a]) << ";\n";
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const auto& ish = spec.inputs[k].shape;
    const int off = rank - static_cast<int>(ish.size());
    std::string o = "0";
    int64_t st = 1;
    for (int a = rank - 1; a >= off && a >= 0; --a) {
      const int64_t ext = ish[a - off];
      if (ext != 1) o += " + c" + std::to_string(a) + " * " + L(st);
      st *= ext;
    }
    src << "    const " << ct << " v" << k << " = "
        << gpu_load(d, spec.inputs[k].dtype, "in" + std::to_string(k) + "[" + o + "]", wide) << ";\n";
  }
  std::string last = spec.inputs.empty() ? "0.0f" : "v0";
  for (size_t s = 0; s < spec.chain.size(); ++s) {
    const ElementwiseStep& step = spec.chain[s];
    std::vector<std::string> ops;
    for (int o : step.operands)
      ops.push_back(o == kAbsentOperand ? std::string() : o >= 0 ? "v" + std::to_string(o) : "T" + std::to_string(-1 - o));
    HPF_ASSIGN_OR_RETURN(std::string e, elementwise_expr(step, ops, wide, sp));
    src << "    const " << ct << " T" << s << " = " << gpu_round(step.dtype, e, wide) << ";\n";
    last = "T" + std::to_string(s);
  }
  src << "    out[i] = " << gpu_store(d, out.dtype, last, wide) << ";\n  }\n}\n";
  return GeneratedKernel{name, src.str(), n, 256};
}

}  // namespace hpf::jit
