// The fixed head of every generated C kernel: integer types from compiler builtins (the
// in-process compiler has no system headers), math declarations the plugin resolves, and
// exact format conversions (round to nearest even, NaN kept): portable C, or the host's
// conversion instructions where they give the same bits.
#pragma once

#include <string>

#include "hpf/dtype.hpp"

namespace hpf::jit {

const char* c_prelude();
// C storage type of a format ("float", "u16", "u8", "i8", "i32", "i64").
const char* c_storage_type(DType t);
// Expression converting `expr` (a value of c_storage_type(t)) to float, and back.
std::string c_load(DType t, const std::string& expr);
// c_load for a value that only feeds arithmetic (a product, a sum), which quiets a signalling
// NaN by itself: BF16 then skips the load's own quieting, a compare and a select per value.
std::string c_load_operand(DType t, const std::string& expr);
std::string c_store(DType t, const std::string& float_expr);
// A float literal that round-trips exactly ("0.100000001f", "1.0f").
std::string c_float(float v);

}  // namespace hpf::jit
