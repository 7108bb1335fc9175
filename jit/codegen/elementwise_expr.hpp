// The per-op expression table of fused elementwise chains, shared by the C and GPU dialects: one
// ONNX op applied to operand expressions, computed in FP32 (double when `wide`), as the reference
// computes it. Where the dialects spell a function differently, ExprSpelling says how.
#pragma once

#include <string>
#include <vector>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

struct ExprSpelling {
  const char* dialect;  // "C", "CUDA", "HIP": names the dialect in errors
  const char* fabsf;    // |x| of a float: "__builtin_fabsf" (C), "fabsf" (GPU)
  const char* fabs;     // |x| of a double
  const char* expf;     // e^x of a float: "hpf_vexp" (C: the prelude's, which vectorises), "expf" (GPU)
  const char* erff;     // erf of a float: "hpf_verf" (C), "erff" (GPU)
};

// The expression of step `s` over operand expressions `in` (empty: an absent optional operand).
// Bool results are 1.0f/0.0f. The expression may call the prelude's hpf_maxf, hpf_minf,
// hpf_softplus and hpf_mod and libm's float functions. Errors: an op not in the table, too few
// operands.
Expected<std::string> elementwise_expr(const ElementwiseStep& s, const std::vector<std::string>& in, bool wide,
                                       const ExprSpelling& sp);

}  // namespace hpf::jit
