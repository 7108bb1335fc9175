// Shared by the IR tests: doctest printers so failed checks show shapes as "[batch,4]".
#pragma once

#include <doctest/doctest.h>

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
