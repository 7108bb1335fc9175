// The CUDA GEMM machinery shared by MatMul/Gemm (cuda_matmul.cpp) and Conv as implicit GEMM
// (cuda_conv.cpp): one tiled kernel Y[bz](i, j) = epilogue(sum_k A[bz](i, k) * B[bz](j, k)),
// where the generators say how an element of A and B is addressed (affine or gathered) and what
// the epilogue does; this file chooses the matrix instruction and writes the schedule.
//
// Matrix instruction, from the operands' storage formats (the plan's formats; converted on load,
// so no conversion runs as a separate pass):
//   f16 x f16, f16 x f8           mma.sync m16n8k16 f16, FP32 accumulation       (sm_80+)
//   bf16 x bf16, bf16 x f8        mma.sync m16n8k16 bf16, FP32 accumulation      (sm_80+)
//   tf32 x {tf32, f32}            mma.sync m16n8k8 tf32, FP32 accumulation       (sm_80+)
//     (also f32 x f32 when the spec's accumulation is TF32: "use TF32 tensor cores")
//   {i8, u8} x {i8, u8}           mma.sync m16n8k32 s8/u8, INT32 accumulation    (sm_80+)
//   {e4m3, e5m2} x {e4m3, e5m2}   mma.sync m16n8k32 e4m3/e5m2, FP32 accumulation (sm_89+);
//                                 below sm_89 the same kernel (by __CUDA_ARCH__) converts
//                                 the FP8 operands to f16 and runs the f16 instruction
//   anything else (f32, mixed)    FP32 FMA, 8x8 outputs per thread
// Every conversion above is exact (FP8 values are f16 and bf16 values), so results differ from
// the FP32 reference only by the order of FP32 additions.
//
// Schedule (both paths): 256 threads, 128x128 output tiles, a grid-stride loop over
// (batch, tile row, tile column), shared-memory stages filled while others are multiplied.
// When both operands' rows are K-contiguous, 16-byte aligned and already in the instruction's
// format: cp.async only (16-byte copies, zero-filled past the edges), four stages of 8 words
// of k, three in flight. Otherwise two stages of 16 words: the next k-slice comes through
// registers (loaded and converted before the multiply, stored after it) or cp.async per operand.
// Tensor-core path: 8 warps as 2x4, each 64x32 (4x4 mma tiles); shared memory holds both
// operands K-contiguous in 32-bit words (rows of words + 4: ldmatrix fragment loads are
// bank-conflict-free), which makes the fragment layout the same for every format. Edge tiles:
// loads past M, N or K read zero, stores past M or N are skipped, so any M, N, K works.
#pragma once

#include <string>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

// How element (r, k) of an operand (r = row of A or column of B) is found, in generated C++
// over `i64 bz, r, k` (bz: the batch index; r < rows and k < K are checked by the caller):
// `setup` statements, then the element is p[index] when `valid` holds, zero otherwise.
struct GemmOperand {
  DType dtype = DType::F32;
  std::string setup;          // statements defining names `valid`/`index` use ("" if none)
  std::string valid = "true";
  std::string index;          // element index into the operand's pointer
  // Affine operands (index = batch_offset + r * ld_r + k * ld_k): cp.async needs ld_k == 1 and
  // ld_r and batch_stride_bytes multiples of 16 bytes. 0 = not affine (a gather).
  int64_t ld_r = 0, ld_k = 0;
  bool batch_aligned_16 = false;  // every batch offset is a multiple of 16 bytes
};

struct GemmProblem {
  int64_t batches = 1, M = 0, N = 0, K = 0;
  GemmOperand a, b;
  DType accumulation = DType::F32;  // TF32 asks for TF32 tensor cores on f32 operands
  // Kernel parameters after A and B (e.g. "const float* __restrict__ C, __half* __restrict__ Y").
  std::string extra_params;
  // Statements storing the result `v` (float; int for integer operands when `int_result`) of
  // output (bz, i, j), i < M and j < N already checked.
  std::string epilogue;
  bool int_result = false;
  // The kernel takes B's pointer first (Conv: the op's inputs are X, then the weights).
  bool b_first = false;
};

// The kernel's parameter list: "const TA* __restrict__ pA, const TB* __restrict__ pB[, extra]",
// A and B swapped when b_first.
std::string cuda_gemm_params(const GemmProblem& p);

// The matrix instruction generate_cuda_gemm picks for these operand formats ("fma" when none):
// "mma.f16", "mma.bf16", "mma.tf32", "mma.int8", "mma.fp8".
std::string cuda_gemm_instruction(DType a, DType b, DType accumulation = DType::F32);

// The kernel `name(<cuda_gemm_params(p)>)`, with its launch geometry.
// Errors: a storage format the CUDA kernels do not read.
Expected<GeneratedKernel> generate_cuda_gemm(const GemmProblem& p, const std::string& name);

// The GPU dialect's storage helpers (gpu_codegen.hpp) plus FP8 (stored as unsigned char,
// decoded exactly, encoded round-to-nearest-even saturating to the largest finite value) and
// INT32 accumulator results stored as they are.
const char* cuda_gemm_storage_type(DType t);
std::string cuda_gemm_load(DType t, const std::string& at);
std::string cuda_gemm_store(DType t, const std::string& v);
// Device functions those expressions use (FP8 decoding); after cuda_prelude().
const char* cuda_format_helpers();

// The sm_90a form (cuda_wgmma.cpp): warpgroup MMA from shared-memory descriptors, for f16 x f16
// and bf16 x bf16 with both operands by cp.async. generate_cuda_gemm puts it under
// __CUDA_ARCH_FEAT_SM90_ALL (targets compiled as sm_90a) beside the mma.sync kernel.
bool cuda_wgmma_fits(const GemmProblem& p, bool async_a, bool async_b);
// The kernel (after cuda_prelude, the format helpers and cp.async helpers).
std::string cuda_wgmma_kernel(const GemmProblem& p, const std::string& name);

}  // namespace hpf::jit
