// The elementwise expression table (see elementwise_expr.hpp).
#include "jit/codegen/elementwise_expr.hpp"

#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

std::string f(float v) { return c_float(v); }

}  // namespace

Expected<std::string> elementwise_expr(const ElementwiseStep& s, const std::vector<std::string>& in, bool wide,
                                       const ExprSpelling& sp) {
  auto need = [&](size_t n) -> Status {
    if (in.size() < n) return Status::invalid("elementwise " + s.op + ": needs " + std::to_string(n) + " operands");
    return {};
  };
  const std::string& a = in.empty() ? std::string() : in[0];
  HPF_RETURN_IF_ERROR(need(1));
  if (s.op == "Identity") return a;
  if (s.op == "Neg") return "(-" + a + ")";
  if (s.op == "Abs") return (wide ? sp.fabs : sp.fabsf) + std::string("(") + a + ")";
  if (s.op == "Sqrt") return "sqrtf(" + a + ")";
  const std::string expf = std::string(sp.expf) + "(", erff = std::string(sp.erff) + "(";
  if (s.op == "Exp") return expf + a + ")";
  if (s.op == "Log") return "logf(" + a + ")";
  if (s.op == "Erf") return erff + a + ")";
  if (s.op == "Tanh") return "tanhf(" + a + ")";
  if (s.op == "Sigmoid") return "(1.0f / (1.0f + " + expf + "-" + a + ")))";
  if (s.op == "Relu") return "(" + a + " > 0.0f ? " + a + " : (" + a + " != " + a + " ? " + a + " : 0.0f))";
  if (s.op == "LeakyRelu") return "(" + a + " >= 0.0f ? " + a + " : " + a + " * " + f(attr_f(s.attrs, "alpha", 0.01f)) + ")";
  if (s.op == "HardSigmoid")
    return "(" + a + " != " + a + " ? " + a + " : hpf_minf(1.0f, hpf_maxf(0.0f, " + f(attr_f(s.attrs, "alpha", 0.2f)) +
           " * " + a + " + " + f(attr_f(s.attrs, "beta", 0.5f)) + ")))";
  if (s.op == "HardSwish") return "(" + a + " * hpf_minf(1.0f, hpf_maxf(0.0f, " + a + " / 6.0f + 0.5f)))";
  if (s.op == "Gelu") {
    auto it = s.attrs.find("approximate");
    const bool tanh_form = it != s.attrs.end() && std::get<std::string>(it->second) == "tanh";
    if (tanh_form)
      return "(0.5f * " + a + " * (1.0f + tanhf(0.7978845608f * (" + a + " + 0.044715f * " + a + " * " + a + " * " + a + "))))";
    return "(0.5f * " + a + " * (1.0f + " + erff + a + " * 0.70710678118654752f)))";
  }
  // Float-only unary maths (lowering takes them on float inputs only), in FP32 like the rest.
  auto call = [&](const char* fn) { return std::string(fn) + "(" + a + ")"; };
  if (s.op == "Sin") return call("sinf");
  if (s.op == "Cos") return call("cosf");
  if (s.op == "Tan") return call("tanf");
  if (s.op == "Asin") return call("asinf");
  if (s.op == "Acos") return call("acosf");
  if (s.op == "Atan") return call("atanf");
  if (s.op == "Sinh") return call("sinhf");
  if (s.op == "Cosh") return call("coshf");
  if (s.op == "Asinh") return call("asinhf");
  if (s.op == "Acosh") return call("acoshf");
  if (s.op == "Atanh") return call("atanhf");
  if (s.op == "Floor") return call("floorf");
  if (s.op == "Ceil") return call("ceilf");
  if (s.op == "Round") return call("rintf");  // halves to even: the default rounding mode
  if (s.op == "Reciprocal") return "(1.0f / " + a + ")";
  // Sign: integers too; NaN stays, zero of either sign gives +0.
  if (s.op == "Sign") return "(" + a + " > 0 ? 1.0f : " + a + " < 0 ? -1.0f : " + a + " != " + a + " ? " + a + " : 0.0f)";
  if (s.op == "Softplus") return call("hpf_softplus");
  if (s.op == "Softsign") return "(" + a + " / (1.0f + " + sp.fabsf + "(" + a + ")))";
  if (s.op == "Mish") return "(" + a + " * tanhf(hpf_softplus(" + a + ")))";
  if (s.op == "Elu") return "(" + a + " < 0 ? " + f(attr_f(s.attrs, "alpha", 1.0f)) + " * expm1f(" + a + ") : " + a + ")";
  if (s.op == "Selu") {
    const std::string al = f(attr_f(s.attrs, "alpha", 1.67326319217681884765625f));
    const std::string ga = f(attr_f(s.attrs, "gamma", 1.05070102214813232421875f));
    return "(" + a + " > 0 ? " + ga + " * " + a + " : " + ga + " * (" + al + " * " + expf + a + ") - " + al + "))";
  }
  if (s.op == "Celu") {  // max(0, x) + min(0, alpha * expm1(x / alpha)); NaN gives 0, as the reference's std::max/min
    const std::string al = f(attr_f(s.attrs, "alpha", 1.0f));
    const std::string t = "(" + al + " * expm1f(" + a + " / " + al + "))";
    return "((" + a + " > 0 ? " + a + " : 0.0f) + (" + t + " < 0 ? " + t + " : 0.0f))";
  }
  if (s.op == "ThresholdedRelu")
    return "(" + a + " > " + f(attr_f(s.attrs, "alpha", 1.0f)) + " || " + a + " != " + a + " ? " + a + " : 0.0f)";
  if (s.op == "Shrink") {  // NaN gives 0
    const std::string l = f(attr_f(s.attrs, "lambd", 0.5f)), bias = f(attr_f(s.attrs, "bias", 0.0f));
    return "(" + a + " < -" + l + " ? " + a + " + " + bias + " : " + a + " > " + l + " ? " + a + " - " + bias + " : 0.0f)";
  }
  // Bool results: 1 or 0, stored as BOOL by the chain's last step.
  if (s.op == "IsNaN") return "(float)(" + a + " != " + a + ")";
  if (s.op == "IsInf") {
    std::string e;
    if (attr_i(s.attrs, "detect_positive", 1)) e = a + " == (1.0f / 0.0f)";
    if (attr_i(s.attrs, "detect_negative", 1)) e += (e.empty() ? "" : " || ") + a + " == (-1.0f / 0.0f)";
    return e.empty() ? "0.0f" : "(float)(" + e + ")";
  }
  if (s.op == "Not") return "(float)(" + a + " == 0)";
  if (s.op == "Sum" || s.op == "Mean") {  // variadic: a left fold, each sum rounded as the reference's
    std::string e = a;
    for (size_t k = 1; k < in.size(); ++k) e = "(" + e + " + " + in[k] + ")";
    if (s.op == "Mean") e = "(" + e + " / " + std::to_string(in.size()) + ".0f)";
    return e;
  }
  if (s.op == "Where") {
    HPF_RETURN_IF_ERROR(need(3));
    return "(" + a + " != 0 ? " + in[1] + " : " + in[2] + ")";
  }
  if (s.op == "Cast") return a;  // the rounding to the target format happens on the step's result
  if (s.op == "QuantizeLinear") {  // per tensor onto 8 bits: rint(x / scale) + zp in FP32, NaN -> 0, saturated
    const bool u8 = s.dtype == DType::U8;
    const std::string q = "(rintf((float)" + a + " / (float)" + in[1] + ")" +
                          (in.size() > 2 && !in[2].empty() ? " + (float)" + in[2] : std::string()) + ")";
    const std::string lo = u8 ? "0.0f" : "-128.0f", hi = u8 ? "255.0f" : "127.0f";
    return "(" + q + " != " + q + " ? 0.0f : " + q + " < " + lo + " ? " + lo + " : " + q + " > " + hi + " ? " + hi +
           " : " + q + ")";
  }
  if (s.op == "DequantizeLinear")  // 8-bit x and zero point: x - zp is exact, then one rounding
    return in.size() > 2 && !in[2].empty() ? "((" + a + " - " + in[2] + ") * " + in[1] + ")" : "(" + a + " * " + in[1] + ")";
  if (s.op == "Clip") {
    std::string lo = s.attrs.count("min") ? f(attr_f(s.attrs, "min", 0)) : (in.size() > 1 && !in[1].empty() ? in[1] : "");
    std::string hi = s.attrs.count("max") ? f(attr_f(s.attrs, "max", 0)) : (in.size() > 2 && !in[2].empty() ? in[2] : "");
    std::string e = a;
    if (!lo.empty()) e = "(" + e + " < " + lo + " ? " + lo + " : " + e + ")";
    if (!hi.empty()) e = "(" + e + " > " + hi + " ? " + hi + " : " + e + ")";
    return e;
  }
  if (s.op == "Max" || s.op == "Min") {  // variadic, one operand included; NaN propagates
    std::string e = a;
    for (size_t k = 1; k < in.size(); ++k) {
      if (!wide) {
        e = std::string(s.op == "Max" ? "hpf_maxf(" : "hpf_minf(") + e + ", " + in[k] + ")";
        continue;
      }
      const std::string& b = in[k];
      e = "(" + e + " != " + e + " || " + e + (s.op == "Max" ? " > " : " < ") + b + " || " + b + " != " + b +
          " ? (" + b + " != " + b + " ? " + b + " : " + e + ") : " + b + ")";
    }
    return e;
  }
  HPF_RETURN_IF_ERROR(need(2));
  const std::string& b = in[1];
  if (s.op == "Add") return "(" + a + " + " + b + ")";
  if (s.op == "Sub") return "(" + a + " - " + b + ")";
  if (s.op == "Mul") return "(" + a + " * " + b + ")";
  if (s.op == "Div") return "(" + a + " / " + b + ")";
  if (s.op == "Pow") return (wide ? "pow(" : "powf(") + a + ", " + b + ")";
  if (s.op == "PRelu") return "(" + a + " < 0 ? " + b + " * " + a + " : " + a + ")";
  if (s.op == "Mod")  // in double: exact (fmod), then one rounding, as the reference
    return (attr_i(s.attrs, "fmod", 0) ? "fmod((double)" : "hpf_mod((double)") + a + ", (double)" + b + ")";
  if (s.op == "Equal") return "(float)(" + a + " == " + b + ")";
  if (s.op == "Less") return "(float)(" + a + " < " + b + ")";
  if (s.op == "Greater") return "(float)(" + a + " > " + b + ")";
  if (s.op == "LessOrEqual") return "(float)(" + a + " <= " + b + ")";
  if (s.op == "GreaterOrEqual") return "(float)(" + a + " >= " + b + ")";
  if (s.op == "And") return "(float)(" + a + " != 0 && " + b + " != 0)";
  if (s.op == "Or") return "(float)(" + a + " != 0 || " + b + " != 0)";
  if (s.op == "Xor") return "(float)((" + a + " != 0) != (" + b + " != 0))";
  return Status::unsupported(std::string(sp.dialect) + " codegen: elementwise op '" + s.op + "'");
}

}  // namespace hpf::jit
