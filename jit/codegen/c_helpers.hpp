// Small helpers the C generators share: reading KernelSpec attributes, and writing C literals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "hpf/graph.hpp"

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

}  // namespace hpf::jit
