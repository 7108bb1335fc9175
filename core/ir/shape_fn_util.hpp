// Helpers the shape-function files share (internal to core/ir).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ir/op_geometry.hpp"
#include "core/ir/op_table.hpp"

namespace hpf::ir::shape_fn {

// Sizes with -1 for unknown dimensions (symbols are dropped).
inline std::vector<int64_t> sizes(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s) out.push_back(d.known() ? d.value : -1);
  return out;
}
inline Shape from_sizes(std::span<const int64_t> v) {
  Shape s;
  for (int64_t d : v) s.push_back(d >= 0 ? Dim(d) : Dim());
  return s;
}

// Every present input has a known shape; otherwise all outputs get `dtype` and no shape.
inline bool shapes_known(InferContext& c, DType dtype) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i) && !c.shape(i)) {
      for (size_t o = 0; o < c.num_outputs(); ++o) c.set_output_unknown_shape(o, dtype);
      return false;
    }
  return true;
}

// A constant integer input (e.g. Reshape's shape) or nullopt when it is not constant.
inline std::optional<std::vector<int64_t>> const_ints(InferContext& c, size_t i) {
  const Tensor* t = c.const_input(i);
  if (!t) return std::nullopt;
  return t->to_i64();
}

inline Expected<int64_t> axis_of(InferContext& c, int64_t axis, int64_t rank) {
  auto a = normalize_axis(axis, rank);
  if (!a) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return *a;
}

inline Status wrap(InferContext& c, const Status& s) {
  return s.ok() ? s : c.error(s.message());
}

}  // namespace hpf::ir::shape_fn
