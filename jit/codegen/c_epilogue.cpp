// Epilogues: elementwise steps the matmul and conv kernels apply to each result before storing
// it, so a bias, an activation, a residual Add or a cast needs no pass of its own. The per-op
// expressions are c_elementwise's (step_expr); BatchNormalization (inference, per channel) is
// the batchnorm kernel's formula, x * scale + shift.
#include <set>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {

int epilogue_operand_kind(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int axis) {
  if (numel(in) == 1) return 0;
  if (in == out) return 2;
  if (in.size() > out.size() || axis < 0 || axis >= static_cast<int>(out.size())) return -1;
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    const bool on_axis = static_cast<int>(d + off) == axis;
    if (in[d] != 1 && !(on_axis && in[d] == out[d + off])) return -1;
  }
  return 1;
}

bool epilogue_takes(const std::string& op) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "Clip", "Sigmoid",
                                            "HardSigmoid", "HardSwish", "Gelu", "Erf", "Tanh", "Cast", "Identity",
                                            "BatchNormalization"};
  return ops.count(op) > 0;
}

Expected<std::string> epilogue_pointers(const KernelSpec& spec, int axis) {
  std::ostringstream s;
  const int first = static_cast<int>(spec.inputs.size()) - spec.epilogue_inputs;
  if (spec.epilogue_inputs < 0 || first < 0 || spec.outputs.size() != 1)
    return Status::invalid("epilogue: " + std::to_string(spec.epilogue_inputs) + " inputs of " +
                           std::to_string(spec.inputs.size()));
  for (int k = first; k < static_cast<int>(spec.inputs.size()); ++k) {
    const TensorDesc& t = spec.inputs[k];
    if (!is_float(t.dtype) || epilogue_operand_kind(t.shape, spec.outputs[0].shape, axis) < 0)
      return Status::invalid("epilogue: input " + std::to_string(k) + " " + std::string(dtype_name(t.dtype)) +
                             shape_string(t.shape) + " does not broadcast to " + shape_string(spec.outputs[0].shape) +
                             " as a scalar, per channel or in full");
    const char* ct = c_storage_type(t.dtype);
    s << "  const " << ct << "* restrict P" << k << " = (const " << ct << "*)args[" << k << "];\n";
  }
  for (const ElementwiseStep& st : spec.epilogue)
    if (!epilogue_takes(st.op)) return Status::unsupported("C codegen: epilogue op '" + st.op + "'");
  return s.str();
}

Expected<std::string> c_epilogue(const KernelSpec& spec, const std::string& acc,
                                 const std::function<std::string(int)>& operand, std::string* setup) {
  if (spec.epilogue.empty()) return std::string();
  std::ostringstream s;
  s << "{\n";
  for (size_t k = 0; k < spec.epilogue.size(); ++k) {
    const ElementwiseStep& st = spec.epilogue[k];
    std::vector<std::string> in;
    for (int o : st.operands) {
      if (o == kProducerResult) in.push_back("(" + acc + ")");
      else if (o == kAbsentOperand) in.emplace_back();
      else if (o < 0) in.push_back("E" + std::to_string(-1 - o));
      else if (o >= static_cast<int>(spec.inputs.size()) - spec.epilogue_inputs && o < static_cast<int>(spec.inputs.size()))
        in.push_back(operand(o));
      else return Status::invalid("epilogue step " + st.op + ": operand " + std::to_string(o) + " is not an epilogue input");
    }
    std::string e;
    if (st.op == "BatchNormalization") {
      if (in.size() != 5) return Status::invalid("epilogue BatchNormalization: needs 5 operands");
      // scale and shift as the batchnorm kernel computes them, once per channel where the
      // caller has a place for that (libm's sqrtf keeps a loop scalar, and errno keeps it there).
      const std::string scale = "(" + in[1] + " / sqrtf(" + in[4] + " + " + c_float(attr_f(st.attrs, "epsilon", 1e-5f)) + "))";
      const std::string shift = "(" + in[2] + " - " + in[3] + " * " + scale + ")";
      if (setup) {
        const std::string sn = "BNs" + std::to_string(k), bn = "BNb" + std::to_string(k);
        *setup += "const float " + sn + " = " + scale + ";\n" + "const float " + bn + " = " + in[2] + " - " + in[3] +
                  " * " + sn + ";\n";
        e = "(" + in[0] + " * " + sn + " + " + bn + ")";
      } else {
        e = "(" + in[0] + " * " + scale + " + " + shift + ")";
      }
    } else {
      HPF_ASSIGN_OR_RETURN(e, step_expr(st, in, false));
    }
    // Relu and Identity of values already in the step's format are exact: no rounding.
    bool exact = (st.op == "Relu" || st.op == "Identity") && !st.operands.empty();
    for (int o : st.operands)
      exact = exact && o < 0 && o != kProducerResult && o != kAbsentOperand && spec.epilogue[-1 - o].dtype == st.dtype;
    s << "  const float E" << k << " = " << (exact ? e : round_to_format(st.dtype, e, false)) << ";\n";
  }
  s << "  " << acc << " = E" << spec.epilogue.size() - 1 << ";\n}\n";
  return s.str();
}

Expected<std::string> c_epilogue_vector(const KernelSpec& spec, const std::string& acc,
                                        const std::function<std::string(int)>& operand) {
  const int first = static_cast<int>(spec.inputs.size()) - spec.epilogue_inputs;
  std::ostringstream s;
  s << "{\n";
  for (size_t k = 0; k < spec.epilogue.size(); ++k) {
    const ElementwiseStep& st = spec.epilogue[k];
    if (st.dtype != DType::F32)
      return Status::unsupported("vector epilogue: step " + st.op + " rounds to " + std::string(dtype_name(st.dtype)));
    std::vector<std::string> in;
    for (int o : st.operands) {
      if (o == kProducerResult) in.push_back(acc);
      else if (o == kAbsentOperand) in.emplace_back();
      else if (o < 0) in.push_back("E" + std::to_string(-1 - o));
      else if (o >= first && o < static_cast<int>(spec.inputs.size()) && spec.inputs[o].dtype == DType::F32)
        in.push_back("(" + operand(o) + ")");
      else return Status::unsupported("vector epilogue: operand " + std::to_string(o) + " of " + st.op);
    }
    const std::string e = "E" + std::to_string(k);
    // A vector of x, scalar or vector: x - (+0) is x exactly, a -0 and a NaN included.
    auto vec = [](const std::string& x) { return "((" + x + ") - (hpf_vf){})"; };
    auto need = [&](size_t n) { return in.size() >= n && !in[0].empty() && (n < 2 || !in[1].empty()); };
    if ((st.op == "Add" || st.op == "Sub" || st.op == "Mul" || st.op == "Div") && need(2)) {
      const char* o = st.op == "Add" ? " + " : st.op == "Sub" ? " - " : st.op == "Mul" ? " * " : " / ";
      s << "  const hpf_vf " << e << " = " << vec(in[0]) << o << in[1] << ";\n";
    } else if (st.op == "Identity" && need(1)) {
      s << "  const hpf_vf " << e << " = " << vec(in[0]) << ";\n";
    } else if (st.op == "Relu" && need(1)) {
      // a > 0 ? a : (a != a ? a : 0): the bits of a where a > 0 or a is NaN, else +0.
      s << "  hpf_vf " << e << " = " << vec(in[0]) << ";\n"
        << "  " << e << " = (hpf_vf)((hpf_vi)" << e << " & ((" << e << " > 0.0f) | (" << e << " != " << e << ")));\n";
    } else if (st.op == "Clip" && need(1)) {
      std::string lo = st.attrs.count("min") ? c_float(attr_f(st.attrs, "min", 0)) : (in.size() > 1 ? in[1] : "");
      std::string hi = st.attrs.count("max") ? c_float(attr_f(st.attrs, "max", 0)) : (in.size() > 2 ? in[2] : "");
      // As the scalar form: e < lo ? lo : e, then e > hi ? hi : e (a NaN stays).
      s << "  hpf_vf " << e << " = " << vec(in[0]) << ";\n";
      for (int side = 0; side < 2; ++side) {
        const std::string& b = side == 0 ? lo : hi;
        if (b.empty()) continue;
        s << "  { const hpf_vf b = " << vec(b) << "; const hpf_vi m = " << e << (side == 0 ? " < " : " > ")
          << "b; " << e << " = (hpf_vf)(((hpf_vi)" << e << " & ~m) | ((hpf_vi)b & m)); }\n";
      }
    } else {
      return Status::unsupported("vector epilogue: op " + st.op);
    }
  }
  if (!spec.epilogue.empty()) s << "  " << acc << " = E" << spec.epilogue.size() - 1 << ";\n";
  s << "}\n";
  return s.str();
}

}  // namespace hpf::jit
