// Shared by the IR tests: doctest printers so failed checks show shapes as "[batch,4]", a
// substring check, and an F32 tensor maker.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hpf/graph.hpp"

namespace doctest {
template <>
struct StringMaker<hpf::Dim> {
  static String convert(const hpf::Dim& d) { return hpf::to_string(hpf::Shape{d}).c_str(); }
};
template <>
struct StringMaker<hpf::Shape> {
  static String convert(const hpf::Shape& s) { return hpf::to_string(s).c_str(); }
};
}  // namespace doctest

// Evaluates `text` once (it may be a helper call that asserts).
#define CHECK_CONTAINS(text, part)                                                   \
  do {                                                                               \
    const std::string contains_text_ = (text);                                       \
    CHECK_MESSAGE(contains_text_.find(part) != std::string::npos,                    \
                  "'" << contains_text_ << "' does not contain '" << (part) << "'"); \
  } while (0)

namespace hpf::test {
inline Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  auto t = Tensor::from_f32(std::move(shape), values);
  REQUIRE_MESSAGE(t.ok(), t.status().to_string());
  return std::move(t).value();
}
}  // namespace hpf::test
