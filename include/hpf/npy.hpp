// NumPy .npy files (format versions 1.0, 2.0 and 3.0, C order) as Tensors: how `hpf run` takes
// inputs and writes outputs, and how calibration data reaches the planner.
//
// Element types: <f4 F32, <f2 F16, <f8 (read as F32, rounded to nearest even), i1 I8, u1 U8,
// <i4 I32, <i8 I64, b1 BOOL; big-endian files are byte-swapped. Formats NumPy has no type for
// (TF32, BF16, FP8, INT4) are written as <f4 (floats) or i1 (INT4) values.
// Errors name the file and what is wrong (bad magic, truncated data, Fortran order, a dtype
// libhpf does not hold). Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

Expected<Tensor> load_npy(const std::string& path);
// `name` only labels errors.
Expected<Tensor> parse_npy(std::span<const std::byte> bytes, const std::string& name = "<memory>");

// Writes `t` to `path` (replacing it) through a temporary file renamed into place, so a reader
// never sees half a file.
Status save_npy(const std::string& path, const Tensor& t);
std::vector<std::byte> encode_npy(const Tensor& t);

}  // namespace hpf
