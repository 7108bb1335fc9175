// The FP32 register-blocked GEMM microkernel as C source text, shared by the generators that
// reduce to GEMM (MatMul/Gemm, Conv as implicit GEMM). The text defines, after c_prelude():
//   hpf_vf, HPF_VW, HPF_NV      one vector of floats, its width, vectors per row of the tile
//   HPF_MR, HPF_NR              the register tile (MR rows x NR columns)
//   HPF_KC, HPF_NC, HPF_MC      cache blocks: depth of a packed slice, columns and rows of a tile
//   hpf_mm_micro_ex(kc, ap, ask, asi, bp, acc, ldc)
//       acc[i * ldc + j] += sum_p ap[p * ask + i * asi] * bp[p * HPF_NR + j]
//       for i < HPF_MR, j < HPF_NR, p < kc; bp is a k-major NR-wide panel (64-byte aligned);
//       acc rows are 64-byte aligned (ldc a multiple of HPF_NR); A is read through strides,
//       so a caller may point it at packed MR-interleaved rows (ask = HPF_MR, asi = 1) or
//       straight at row-major FP32 rows (ask = 1, asi = row length).
//   hpf_mm_micro(kc, ap, bp, acc)  the packed form, ldc = HPF_NC.
// The vector width is chosen by the preprocessor in the kernel (AVX-512: 6x64, else 6x16), so
// the source does not depend on the host. Pure text: no state, safe from any thread.
#pragma once

#include <cstdint>

namespace hpf::jit {

const char* gemm_micro_source();

// The host-independent tile constants (HPF_NR is not one: 16 or 64 by the preprocessor).
inline constexpr int64_t kGemmMR = 6;
inline constexpr int64_t kGemmKC = 128;
inline constexpr int64_t kGemmNC = 64;
inline constexpr int64_t kGemmMC = 96;

}  // namespace hpf::jit
