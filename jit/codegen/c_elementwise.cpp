// Fused elementwise chains in C: every input broadcast to the output by strides baked in as
// constants, each step computed in FP32 and rounded to its format, casts included, so a format
// conversion never needs a pass of its own.
#include <cstdio>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/elementwise_expr.hpp"

namespace hpf::jit {

namespace {

const ExprSpelling kC{"C", "__builtin_fabsf", "__builtin_fabs", "hpf_vexp", "hpf_verf"};

}  // namespace

Expected<std::string> step_expr(const ElementwiseStep& s, const std::vector<std::string>& in, bool wide) {
  return elementwise_expr(s, in, wide, kC);
}

// Rounds a float expression to `t` and back, as the graph's intermediate value of format t.
// A wide (double) chain rounds FP32 results too, as the graph's FP32 value would be.
std::string round_to_format(DType t, const std::string& e, bool wide) {
  switch (t) {
    case DType::F32: return wide ? "(double)(float)(" + e + ")" : e;
    case DType::BF16: return "hpf_rbf16(" + e + ")";  // a stored NaN is quiet
    case DType::F16: return "hpf_f16_f32(hpf_f32_f16(" + e + "))";
    case DType::TF32: return "hpf_tf32(" + e + ")";
    default: return e;
  }
}

namespace {

// Whether a step's C expression calls a libm function (which keeps its loop scalar).
bool calls_libm(const std::string& e) {
  for (const char* fn : {"expf(", "logf(", "erff(", "tanhf(", "sqrtf(", "powf(", "pow(", "sinf(", "cosf(", "tanf(",
                         "asinf(", "acosf(", "atanf(", "sinhf(", "coshf(", "asinhf(", "acoshf(", "atanhf(",
                         "expm1f(", "log1pf(", "fmod(", "hpf_mod(", "hpf_softplus("})
    if (e.find(fn) != std::string::npos) return true;
  return false;
}

}  // namespace

Expected<GeneratedKernel> generate_c_elementwise(const KernelSpec& spec, const std::string& name) {
  if (spec.outputs.size() != 1) return Status::unsupported("C codegen: elementwise kernels have one output");
  const TensorDesc& out = spec.outputs[0];
  const int64_t n = numel(out.shape);
  const int rank = static_cast<int>(out.shape.size());
  std::ostringstream src;
  src << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n";
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const char* t = c_storage_type(spec.inputs[k].dtype);
    if (!t) return Status::unsupported("C codegen: input dtype " + std::string(dtype_name(spec.inputs[k].dtype)));
    src << "  const " << t << "* restrict in" << k << " = (const " << t << "*)args[" << k << "];\n";
  }
  const char* ot = c_storage_type(out.dtype);
  if (!ot) return Status::unsupported("C codegen: output dtype " + std::string(dtype_name(out.dtype)));
  src << "  " << ot << "* restrict out = (" << ot << "*)args[" << spec.inputs.size() << "];\n";
  // Broadcast strides of each input over the output's axes; adjacent axes every input walks
  // alike are merged, so the loop runs along rows of the innermost merged axis, where each
  // input is contiguous (stride 1) or repeated (stride 0): vectorisable, no per-element index.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(spec.inputs.size());
  for (int d = 0; d < rank; ++d) {
    if (out.shape[d] == 1) continue;
    dims.push_back(out.shape[d]);
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const auto& ish = spec.inputs[k].shape;
      const int off = rank - static_cast<int>(ish.size());
      int64_t st = 0;
      if (d >= off && ish[d - off] != 1) {
        st = 1;
        for (size_t e = d - off + 1; e < ish.size(); ++e) st *= ish[e];
      }
      strides[k].push_back(st);
    }
  }
  for (size_t d = dims.size(); d-- > 1;) {  // merge axis d into d-1 where every input allows
    bool ok = true;
    for (auto& st : strides) ok = ok && st[d - 1] == st[d] * dims[d];
    if (!ok) continue;
    dims[d - 1] *= dims[d];
    dims.erase(dims.begin() + d);
    for (auto& st : strides) st.erase(st.begin() + (d - 1));  // the merged axis steps as the inner one
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& st : strides) st.push_back(0);
  }
  const int64_t inner = dims.back();
  const int nd = static_cast<int>(dims.size());
  src << "  for (i64 i = begin; i < end;) {\n"
      << "    const i64 j0 = i % " << L(inner) << ";\n"
      << "    const i64 n = " << L(inner) << " - j0 < end - i ? " << L(inner) << " - j0 : end - i;\n";
  if (nd > 1) src << "    i64 rem = i / " << L(inner) << ";\n";
  for (int d = nd - 2; d >= 0; --d)
    src << "    const i64 c" << d << " = rem % " << L(dims[d]) << "; rem /= " << L(dims[d]) << ";\n";
  // 32/64-bit integers are exact in double (to 2^53), not in float.
  auto wide_int = [](DType t) { return t == DType::I32 || t == DType::I64; };
  bool wide = wide_int(out.dtype);
  for (const TensorDesc& in : spec.inputs) wide = wide || wide_int(in.dtype);
  for (const ElementwiseStep& st : spec.chain) wide = wide || wide_int(st.dtype);
  const char* ct = wide ? "double" : "float";
  // Chains calling libm (erff in Gelu, expf, tanhf ...) cannot vectorise as one loop: they run
  // step by step over 64-element buffers, so only the calls stay scalar and the rest (arithmetic,
  // BF16/F16 rounding between steps) vectorises.
  // Step s's value is T<s>[q] (a buffer, staged) or T<s>_ (a scalar, one loop).
  auto build_exprs = [&](bool arrays) -> Expected<std::vector<std::string>> {
    std::vector<std::string> es;
    for (const ElementwiseStep& st : spec.chain) {
      std::vector<std::string> ops;
      for (int o : st.operands)
        ops.push_back(o == kAbsentOperand ? std::string()
                      : o >= 0            ? "v" + std::to_string(o)
                                          : "T" + std::to_string(-1 - o) + (arrays ? "[q]" : "_"));
      HPF_ASSIGN_OR_RETURN(std::string e, elementwise_expr(st, ops, wide, kC));
      es.push_back(std::move(e));
    }
    return es;
  };
  HPF_ASSIGN_OR_RETURN(std::vector<std::string> exprs, build_exprs(false));
  bool staged = false;
  for (const std::string& e : exprs) staged = staged || calls_libm(e);
  if (staged) {
    HPF_ASSIGN_OR_RETURN(exprs, build_exprs(true));
  }
  const bool bf16_out = out.dtype == DType::BF16;
  const bool chunked = bf16_out || staged;
  // Row base of each input, and the offset expression of element q of the row (index `x`).
  const std::string x = chunked ? "(j + q)" : "q";
  std::vector<std::string> offsets;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::string base = "0";
    for (int d = 0; d < nd - 1; ++d)
      if (strides[k][d]) base += " + c" + std::to_string(d) + " * " + L(strides[k][d]);
    const int64_t s_in = strides[k][nd - 1];
    if (s_in) base += " + j0 * " + L(s_in);
    src << "    const i64 b" << k << " = " << base << ";\n";
    offsets.push_back("b" + std::to_string(k) + (s_in == 0 ? "" : s_in == 1 ? " + " + x : " + " + x + " * " + L(s_in)));
  }
  // Inputs only ever operands of + - * / (which quiet a signalling NaN themselves) skip the
  // load's own NaN quieting.
  std::vector<bool> arith_only(spec.inputs.size(), true);
  for (const ElementwiseStep& st : spec.chain) {
    const bool arith = st.op == "Add" || st.op == "Sub" || st.op == "Mul" || st.op == "Div";
    for (int o : st.operands)
      if (o >= 0 && static_cast<size_t>(o) < arith_only.size() && !arith) arith_only[o] = false;
  }
  auto emit_loads = [&](const std::string& ind) {  // unused ones are dropped by the compiler
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const std::string at = "in" + std::to_string(k) + "[" + offsets[k] + "]";
      const DType t = spec.inputs[k].dtype;
      src << ind << "const " << ct << " v" << k << " = "
          << (wide && !is_float(t) ? "(double)(" + at + ")" : arith_only[k] ? c_load_operand(t, at) : c_load(t, at)) << ";\n";
    }
  };
  // The stored value `last` at element q of the row, into orow[q] / the BF16 buffer.
  auto emit_store = [&](const std::string& ind, const std::string& last, const std::string& dst) {
    if (dst == "buf[q]" || is_float(out.dtype) || out.dtype == DType::BOOL) {
      src << ind << dst << " = " << (dst == "buf[q]" ? last : c_store(out.dtype, last)) << ";\n";
      return;
    }
    // Float to integer: truncate toward zero, saturate, NaN -> 0 (the reference's Cast).
    // (I64's upper bound: the largest double below 2^63.)
    const double lo = out.dtype == DType::I64 ? -9223372036854775808.0 : out.dtype == DType::I32 ? -2147483648.0 : qmin(out.dtype);
    const double hi = out.dtype == DType::I64 ? 9223372036854774784.0 : out.dtype == DType::I32 ? 2147483647.0 : qmax(out.dtype);
    char clamp[160];
    std::snprintf(clamp, sizeof clamp, "r = r != r ? 0 : r < %.17g ? %.17g : r > %.17g ? %.17g : r;\n", lo, lo, hi, hi);
    src << ind << ct << " r = " << (wide ? "__builtin_trunc(" : "__builtin_truncf(") << last << ");\n"
        << ind << clamp << ind << dst << " = (" << ot << ")r;\n";
  };
  const std::string dst = bf16_out ? "buf[q]" : "orow[q]";
  // 16 lanes where the host prefers 8 (AVX-512 hosts LLVM tunes for 256-bit vectors): the
  // roundings between BF16 steps are long integer sequences per value, and twice the lanes per
  // instruction nearly halve a BF16 GELU (1.0-1.3 -> 0.7 ms over [128, 3072]); FP32 chains
  // measured the same either way.
  const char* lanes = "#pragma clang loop vectorize_width(16)\n";
  if (!chunked) {
    src << "    " << ot << "* restrict orow = out + i;\n" << lanes << "    for (i64 q = 0; q < n; ++q) {\n";
    emit_loads("      ");
    std::string last = spec.inputs.empty() ? "0.0f" : "v0";
    for (size_t st = 0; st < exprs.size(); ++st) {
      // One loop: T<s>[q] names the step's value, a scalar here.
      src << "      const " << ct << " T" << st << "_ = " << round_to_format(spec.chain[st].dtype, exprs[st], wide) << ";\n";
      last = "T" + std::to_string(st) + "_";
    }
    emit_store("      ", last, dst);
    src << "    }\n";
  } else {
    src << "    for (i64 j = 0; j < n; j += 64) {\n"
        << "      const i64 m = n - j < 64 ? n - j : 64;\n"
        << "      " << ot << "* restrict orow = out + i + j;\n"
        << "      float buf[64];\n";
    std::string last = spec.inputs.empty() ? "0.0f" : "v0";
    if (!staged) {
      // Four vectors at a time where rows fill the 64-value chunks: each value's chain (a BF16
      // rounding after every step) is long and serial, and one vector at a time left the core
      // waiting on it (a BF16 GELU over [128, 3072] on one Zen 4 core: 0.48 -> 0.38 ms). Short
      // rows (a 7x7 map's 49) keep one: four vectors would leave them all to the scalar tail.
      src << (inner >= 256 ? "#pragma clang loop vectorize_width(16) interleave_count(4)\n" : lanes)
          << "      for (i64 q = 0; q < m; ++q) {\n";
      emit_loads("        ");
      for (size_t st = 0; st < exprs.size(); ++st) {
        src << "        const " << ct << " T" << st << "_ = " << round_to_format(spec.chain[st].dtype, exprs[st], wide) << ";\n";
        last = "T" + std::to_string(st) + "_";
      }
      emit_store("        ", last, dst);
      src << "      }\n";
    } else {
      for (size_t st = 0; st < exprs.size(); ++st) {
        const std::string T = "T" + std::to_string(st);
        src << "      " << ct << " " << T << "[64];\n      for (i64 q = 0; q < m; ++q) {\n";
        emit_loads("        ");
        src << "        " << T << "[q] = " << exprs[st] << ";\n      }\n";
        const std::string r = round_to_format(spec.chain[st].dtype, T + "[q]", wide);
        if (r != T + "[q]") src << "      for (i64 q = 0; q < m; ++q) " << T << "[q] = " << r << ";\n";
        last = T + "[q]";
      }
      src << "      for (i64 q = 0; q < m; ++q) {\n";
      if (exprs.empty()) emit_loads("        ");
      emit_store("        ", last, dst);
      src << "      }\n";
    }
    if (bf16_out) src << "      hpf_store_bf16_row(orow, buf, m);\n";
    else src << "      (void)buf;\n";
    src << "    }\n";
  }
  src << "    i += n;\n  }\n}\n";
  return GeneratedKernel{name, src.str(), n, 4096};
}

}  // namespace hpf::jit
