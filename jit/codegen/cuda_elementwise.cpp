// Fused elementwise chains in CUDA: the same steps as c_elementwise.cpp (a subset of its ops),
// each computed in FP32 and rounded to its storage format, so casts need no pass of their own.
// One thread per output element over a grid-stride loop; each input's offset comes from the
// output index by broadcast strides baked in as constants.
#include <cstdio>
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_codegen.hpp"

namespace hpf::jit {
namespace {

std::string f(float v) { return c_float(v); }

std::string round_to_format(DType t, const std::string& e, bool wide) {
  switch (t) {
    case DType::F32: return wide ? "(double)(float)(" + e + ")" : e;
    case DType::F16: return "hpf_round_f16(" + e + ")";
    case DType::BF16: return "hpf_round_bf16(" + e + ")";
    default: return e;
  }
}

Expected<std::string> step_expr(const ElementwiseStep& s, const std::vector<std::string>& in, bool wide) {
  if (in.empty()) return Status::invalid("elementwise " + s.op + ": needs an operand");
  const std::string& a = in[0];
  auto call = [&](const char* fn) { return std::string(fn) + "(" + a + ")"; };
  if (s.op == "Identity" || s.op == "Cast") return a;  // Cast: the rounding is the step's format
  if (s.op == "Neg") return "(-" + a + ")";
  if (s.op == "Abs") return (wide ? "fabs(" : "fabsf(") + a + ")";
  if (s.op == "Sqrt") return call("sqrtf");
  if (s.op == "Exp") return call("expf");
  if (s.op == "Log") return call("logf");
  if (s.op == "Erf") return call("erff");
  if (s.op == "Tanh") return call("tanhf");
  if (s.op == "Reciprocal") return "(1.0f / " + a + ")";
  if (s.op == "Sigmoid") return "(1.0f / (1.0f + expf(-" + a + ")))";
  if (s.op == "Relu") return "(" + a + " > 0.0f ? " + a + " : (" + a + " != " + a + " ? " + a + " : 0.0f))";
  if (s.op == "Gelu") {
    if (attr_s(s.attrs, "approximate") == "tanh")
      return "(0.5f * " + a + " * (1.0f + tanhf(0.7978845608f * (" + a + " + 0.044715f * " + a + " * " + a + " * " + a +
             "))))";
    return "(0.5f * " + a + " * (1.0f + erff(" + a + " * 0.70710678118654752f)))";
  }
  if (s.op == "Not") return "(float)(" + a + " == 0)";
  if (s.op == "Where") {
    if (in.size() < 3) return Status::invalid("elementwise Where: needs 3 operands");
    return "(" + a + " != 0 ? " + in[1] + " : " + in[2] + ")";
  }
  if (s.op == "Clip") {
    std::string lo = s.attrs.count("min") ? f(attr_f(s.attrs, "min", 0)) : (in.size() > 1 ? in[1] : "");
    std::string hi = s.attrs.count("max") ? f(attr_f(s.attrs, "max", 0)) : (in.size() > 2 ? in[2] : "");
    std::string e = a;
    if (!lo.empty()) e = "(" + e + " < " + lo + " ? " + lo + " : " + e + ")";
    if (!hi.empty()) e = "(" + e + " > " + hi + " ? " + hi + " : " + e + ")";
    return e;
  }
  if (s.op == "Max" || s.op == "Min" || s.op == "Sum") {  // variadic
    std::string e = a;
    for (size_t k = 1; k < in.size(); ++k) {
      if (s.op == "Sum") e = "(" + e + " + " + in[k] + ")";
      else if (!wide) e = std::string(s.op == "Max" ? "hpf_maxf(" : "hpf_minf(") + e + ", " + in[k] + ")";
      else e = std::string(s.op == "Max" ? "fmax(" : "fmin(") + e + ", " + in[k] + ")";
    }
    return e;
  }
  if (in.size() < 2 || in[1].empty()) return Status::unsupported("CUDA codegen: elementwise op '" + s.op + "'");
  const std::string& b = in[1];
  if (s.op == "Add") return "(" + a + " + " + b + ")";
  if (s.op == "Sub") return "(" + a + " - " + b + ")";
  if (s.op == "Mul") return "(" + a + " * " + b + ")";
  if (s.op == "Div") return "(" + a + " / " + b + ")";
  if (s.op == "Pow") return (wide ? "pow(" : "powf(") + a + ", " + b + ")";
  if (s.op == "Equal") return "(float)(" + a + " == " + b + ")";
  if (s.op == "Less") return "(float)(" + a + " < " + b + ")";
  if (s.op == "Greater") return "(float)(" + a + " > " + b + ")";
  if (s.op == "LessOrEqual") return "(float)(" + a + " <= " + b + ")";
  if (s.op == "GreaterOrEqual") return "(float)(" + a + " >= " + b + ")";
  if (s.op == "And") return "(float)(" + a + " != 0 && " + b + " != 0)";
  if (s.op == "Or") return "(float)(" + a + " != 0 || " + b + " != 0)";
  return Status::unsupported("CUDA codegen: elementwise op '" + s.op + "'");
}

// The stored form of `v` in format t (float to integer: truncate, saturate, NaN -> 0).
std::string store(DType t, const std::string& v, bool wide) {
  if (t == DType::F32) return "(float)(" + v + ")";
  if (t == DType::F16) return "__float2half_rn(" + v + ")";
  if (t == DType::BF16) return "__float2bfloat16_rn(" + v + ")";
  if (t == DType::BOOL) return "(unsigned char)(" + v + " != 0)";
  const double lo = t == DType::I64 ? -9223372036854775808.0 : t == DType::I32 ? -2147483648.0 : qmin(t);
  const double hi = t == DType::I64 ? 9223372036854774784.0 : t == DType::I32 ? 2147483647.0 : qmax(t);
  char buf[256];
  const char* tr = wide ? "trunc" : "truncf";
  std::snprintf(buf, sizeof buf, "(%s)(%s != %s ? 0 : %s(%s) < %.17g ? %.17g : %s(%s) > %.17g ? %.17g : %s(%s))",
                cuda_storage_type(t), v.c_str(), v.c_str(), tr, v.c_str(), lo, lo, tr, v.c_str(), hi, hi, tr, v.c_str());
  return buf;
}

}  // namespace

Expected<GeneratedKernel> generate_cuda_elementwise(const KernelSpec& spec, const std::string& name) {
  if (spec.outputs.size() != 1) return Status::unsupported("CUDA codegen: elementwise kernels have one output");
  const TensorDesc& out = spec.outputs[0];
  const int64_t n = numel(out.shape);
  const int rank = static_cast<int>(out.shape.size());
  const char* ot = cuda_storage_type(out.dtype);
  if (!ot) return Status::unsupported("CUDA codegen: output dtype " + std::string(dtype_name(out.dtype)));
  auto wide_int = [](DType t) { return t == DType::I32 || t == DType::I64; };
  bool wide = wide_int(out.dtype);
  for (const TensorDesc& in : spec.inputs) wide = wide || wide_int(in.dtype);
  for (const ElementwiseStep& st : spec.chain) wide = wide || wide_int(st.dtype);
  const char* ct = wide ? "double" : "float";

  std::ostringstream src;
  src << cuda_prelude() << "\nextern \"C\" __global__ void " << name << "(";
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const char* t = cuda_storage_type(spec.inputs[k].dtype);
    if (!t) return Status::unsupported("CUDA codegen: input dtype " + std::string(dtype_name(spec.inputs[k].dtype)));
    src << "const " << t << "* __restrict__ in" << k << ", ";
  }
  src << ot << "* __restrict__ out) {\n"
      << "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < " << L(n)
      << "; i += (i64)gridDim.x * blockDim.x) {\n";
  // Coordinates of i over the output's axes (innermost first), then each input's offset.
  if (rank > 0) src << "    i64 rem = i;\n";
  for (int d = rank - 1; d >= 0; --d)
    src << "    const i64 c" << d << " = rem % " << L(out.shape[d]) << "; rem /= " << L(out.shape[d]) << ";\n";
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const auto& ish = spec.inputs[k].shape;
    const int off = rank - static_cast<int>(ish.size());
    std::string o = "0";
    int64_t st = 1;
    for (int d = rank - 1; d >= off && d >= 0; --d) {
      const int64_t ext = ish[d - off];
      if (ext != 1) o += " + c" + std::to_string(d) + " * " + L(st);
      st *= ext;
    }
    src << "    const " << ct << " v" << k << " = " << cuda_load(spec.inputs[k].dtype, "in" + std::to_string(k) + "[" + o + "]", wide)
        << ";\n";
  }
  std::string last = spec.inputs.empty() ? "0.0f" : "v0";
  for (size_t s = 0; s < spec.chain.size(); ++s) {
    const ElementwiseStep& step = spec.chain[s];
    std::vector<std::string> ops;
    for (int o : step.operands)
      ops.push_back(o == kAbsentOperand ? std::string() : o >= 0 ? "v" + std::to_string(o) : "T" + std::to_string(-1 - o));
    HPF_ASSIGN_OR_RETURN(std::string e, step_expr(step, ops, wide));
    src << "    const " << ct << " T" << s << " = " << round_to_format(step.dtype, e, wide) << ";\n";
    last = "T" + std::to_string(s);
  }
  src << "    out[i] = " << store(out.dtype, last, wide) << ";\n  }\n}\n";
  return GeneratedKernel{name, src.str(), n, 256};
}

}  // namespace hpf::jit
