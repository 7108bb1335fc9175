// Small helpers the C generators share: reading KernelSpec attributes, and writing C literals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

inline int64_t attr_i(const Attributes& a, const char* n, int64_t d) {
  auto it = a.find(n);
  if (it == a.end()) return d;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return d;
}
// Floats may arrive as integers (ONNX exporters write alpha=1).
inline float attr_f(const Attributes& a, const char* n, float d) {
  auto it = a.find(n);
  if (it == a.end()) return d;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<float>(*v);
  return d;
}
inline std::vector<int64_t> attr_ints(const Attributes& a, const char* n) {
  auto it = a.find(n);
  if (it == a.end()) return {};
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return {};
}
inline std::string attr_s(const Attributes& a, const char* n) {
  auto it = a.find(n);
  if (it == a.end()) return "";
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return "";
}

inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// The start of a kernel `name`: the prelude, the signature, one `const T* restrict` per input of
// `spec` named `inputs[k]`, and the output pointer `output` (args after the inputs).
inline std::string kernel_begin(const std::string& name, const KernelSpec& spec, const std::vector<std::string>& inputs,
                                const std::string& output) {
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n";
  for (size_t k = 0; k < inputs.size() && k < spec.inputs.size(); ++k) {
    const char* t = c_storage_type(spec.inputs[k].dtype);
    s << "  const " << t << "* restrict " << inputs[k] << " = (const " << t << "*)args[" << k << "];\n";
  }
  const char* yt = c_storage_type(spec.outputs[0].dtype);
  s << "  " << yt << "* restrict " << output << " = (" << yt << "*)args[" << spec.inputs.size() << "];\n";
  return s.str();
}

// Statements declaring `float out` = the sum over q < n of `term` (an expression of buffer
// `buf` at q), in 16 lanes: lane l sums the terms q = l (mod 16) below the last multiple of 16,
// then the lanes and the tail are added in order.
inline std::string sum16(const std::string& buf, const std::string& out, int64_t n, const std::string& term) {
  std::ostringstream s;
  const std::string lanes = out + "_l", vec = "(*(const hpf_f32x16*)(" + buf + " + q))";
  std::string vterm = term;
  for (size_t at; (at = vterm.find(buf + "[q]")) != std::string::npos;) vterm.replace(at, buf.size() + 3, vec);
  s << "    hpf_f32x16 " << lanes << " = {};\n"
    << "    for (i64 q = 0; q + 16 <= " << n << "LL; q += 16) " << lanes << " += " << vterm << ";\n"
    << "    float " << out << " = 0.0f;\n"
    << "    for (int l = 0; l < 16; ++l) " << out << " += " << lanes << "[l];\n"
    << "    for (i64 q = " << n / 16 * 16 << "LL; q < " << n << "LL; ++q) " << out << " += " << term << ";\n";
  return s.str();
}

// An i64 literal: "42LL".
inline std::string L(int64_t v) { return std::to_string(v) + "LL"; }

// "  static const TYPE NAME[n] = {...};" (one zero element when v is empty: C has no empty arrays).
inline std::string array(const char* type, const std::string& name, const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "  static const " << type << " " << name << "[" << std::max<size_t>(1, v.size()) << "] = {";
  for (size_t k = 0; k < v.size(); ++k) s << (k ? ", " : "") << v[k];
  if (v.empty()) s << "0";
  s << "};\n";
  return s.str();
}

// A 1-D windowed op ([N, C, L] data) as the 2-D one over [N, C, 1, L]: every rank-3 input and
// output gains a unit H axis, and the window attributes a trivial H entry (kernel 1, stride 1,
// dilation 1, no padding), so the 2-D generators serve 1-D unchanged.
inline KernelSpec lift_1d(const KernelSpec& spec) {
  KernelSpec s = spec;
  for (auto* ts : {&s.inputs, &s.outputs})
    for (TensorDesc& t : *ts)
      if (t.shape.size() == 3) t.shape.insert(t.shape.begin() + 2, 1);
  auto prepend = [&](const char* n, int64_t v) {
    auto it = s.attrs.find(n);
    if (it == s.attrs.end()) return;
    auto* x = std::get_if<std::vector<int64_t>>(&it->second);
    if (!x || x->size() != 1) return;  // the generator's geometry reports the mismatch
    x->insert(x->begin(), v);
  };
  prepend("kernel_shape", 1);
  prepend("strides", 1);
  prepend("dilations", 1);
  prepend("output_padding", 0);
  if (auto it = s.attrs.find("output_shape"); it != s.attrs.end())
    if (auto* x = std::get_if<std::vector<int64_t>>(&it->second); x && !x->empty()) *x = {1, x->back()};
  if (auto it = s.attrs.find("pads"); it != s.attrs.end())
    if (auto* x = std::get_if<std::vector<int64_t>>(&it->second); x && x->size() == 2) *x = {0, (*x)[0], 0, (*x)[1]};
  return s;
}

}  // namespace hpf::jit
