// MatMul / Gemm with BF16 activations and constant BF16 weights on AMX tiles ("matmul_wq",
// wformat "bf16t"): TDPBF16PS multiplies 16x32 BF16 tiles into 16x16 FP32 tiles, 16 x 16 x 32
// multiply-adds per instruction (about 9x the FP32 FMA rate of an AVX-512 core, measured).
//
// Weights (runtime/session/weight_packing.cpp, "bf16t"): u16 [P2][Kt/2][16][2], panels of 16
// output columns (P2 = ceil(N / 16) rounded up to even, columns past N zero), K rounded up to
// Kt (a multiple of 32, zero rows), each row of a panel holding a pair of k for 16 columns: the
// tile B operand of k-chunk c of panel p is the 1 KiB at ((p * Kt / 2 + c * 16) * 16) * 2.
// A ([.., M, K] BF16, row-major) is read in place as tiles of 16 rows x 32 k when K is a
// multiple of 32 and the block has 32 rows, else copied into a zero-padded block first.
//
// Work item: up to 128 rows x a group of columns; per 32 x 32 block of the output (row blocks
// innermost, so a column block's weights come from memory once), 4 accumulator tiles (2 x 2)
// over all of K, then stored to a float block and finished by wq_out (alpha, beta * C,
// the fused epilogue) into Y. Numerics: BF16 products exact, summed in FP32 by the tile unit
// (pairs of k per step, denormals read and written as zero); the reference is FP32 accumulation.
//
// The AMX path is compiled where the kernel's target has AMX-BF16 (the CPU plugin turns the
// features off when Linux does not grant this process the tile state); elsewhere the same
// source computes the sums in FP32 with plain C (not fast: the Session picks "bf16t" only for an
// AMX device).
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {

namespace {
constexpr int64_t kAmxRows = 32;        // rows per block (two tiles)
constexpr int64_t kAmxRowGroup = 128;   // rows per work item (blocks of 32)
constexpr int64_t kAmxColGroup = 256;   // columns per work item
}  // namespace

int64_t amx_bf16_padded_k(int64_t k) { return (k + 31) / 32 * 32; }

Expected<GeneratedKernel> generate_c_matmul_amx(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &A = spec.inputs[0], &Y = spec.outputs[0];
  if (A.dtype != DType::BF16)
    return Status::unsupported("C codegen: matmul_wq bf16t needs BF16 activations, got " + std::string(dtype_name(A.dtype)));
  const int64_t K = attr_i(spec.attrs, "k", 0), N = attr_i(spec.attrs, "n", 0);
  if (K <= 0 || N <= 0 || A.shape.empty() || A.shape.back() != K || Y.shape.empty() || Y.shape.back() != N)
    return Status::invalid("matmul_wq: inconsistent k/n for A " + shape_string(A.shape) + " and Y " + shape_string(Y.shape));
  const int64_t M = numel(Y.shape) / N, Kt = amx_bf16_padded_k(K), P2 = (N + 31) / 32 * 2;
  const int64_t RB = (M + kAmxRowGroup - 1) / kAmxRowGroup;  // row groups
  // Column groups of whole 32-column blocks, at least 4 work items in all when there are blocks
  // enough (two threads share the work).
  const int64_t blocks32 = P2 / 2;
  int64_t CG = std::max<int64_t>((N + kAmxColGroup - 1) / kAmxColGroup, (4 + RB - 1) / std::max<int64_t>(RB, 1));
  CG = std::min(CG, blocks32);
  const int64_t CW = (blocks32 + CG - 1) / CG * 32;  // columns per group
  CG = (blocks32 * 32 + CW - 1) / CW;
  const bool in_place = K % 32 == 0;
  HPF_ASSIGN_OR_RETURN(std::string out_fn, c_matmul_epilogue(spec, 3));
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << c_prelude() << out_fn
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const u16* restrict A = (const u16*)args[0];\n"
    << "  const u16* restrict W = (const u16*)args[1];\n"
    << "  " << yt << "* restrict Y = (" << yt << "*)args[" << spec.inputs.size() << "];\n"
    << "  float cb[32 * 32] __attribute__((aligned(64)));\n"
    << "#if defined(__AMX_TILE__) && defined(__AMX_BF16__)\n"
    << "  hpf_amx_configure();\n"
    << "  u16 ap[" << kAmxRows * Kt << "] __attribute__((aligned(64)));\n"
    << "#endif\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 rg = w / " << L(CG) << ", cg = w % " << L(CG) << ";\n"
    << "    const i64 c_end = (cg + 1) * " << L(CW) << " < " << L(N) << " ? (cg + 1) * " << L(CW) << " : " << L(N) << ";\n"
    << "    const i64 r_end = (rg + 1) * " << L(kAmxRowGroup) << " < " << L(M) << " ? (rg + 1) * " << L(kAmxRowGroup)
    << " : " << L(M) << ";\n"
    // Row blocks inside column blocks: a block's weights (2 panels x K) are read from memory
    // once and reused from cache by every row block of the group.
    << "    for (i64 c0 = cg * " << L(CW) << "; c0 < c_end; c0 += 32)\n"
    << "    for (i64 r0 = rg * " << L(kAmxRowGroup) << "; r0 < r_end; r0 += " << L(kAmxRows) << ") {\n"
    << "    const i64 mr = r_end - r0 < " << L(kAmxRows) << " ? r_end - r0 : " << L(kAmxRows) << ";\n"
    << "#if defined(__AMX_TILE__) && defined(__AMX_BF16__)\n"
    // The rows' tiles: in place, or a zero-padded copy (ragged rows, K not a multiple of 32).
    << "    const u16* restrict at = A + r0 * " << L(K) << ";\n"
    << "    i64 lda = " << L(K * 2) << ";\n"
    << "    if (" << (in_place ? "mr < " + L(kAmxRows) : std::string("1")) << ") {\n"
    << "      for (i64 i = 0; i < " << L(kAmxRows) << "; ++i)\n"
    << "        for (i64 k = 0; k < " << L(Kt) << "; ++k)\n"
    << "          ap[i * " << L(Kt) << " + k] = i < mr && k < " << L(K) << " ? A[(r0 + i) * " << L(K) << " + k] : 0;\n"
    << "      at = ap;\n"
    << "      lda = " << L(Kt * 2) << ";\n"
    << "    }\n"
    << "    {\n"
    << "      const u16* restrict b0 = W + (c0 / 16) * " << L(Kt * 16) << ";\n"
    << "      __builtin_ia32_tilezero(0); __builtin_ia32_tilezero(1);\n"
    << "      __builtin_ia32_tilezero(2); __builtin_ia32_tilezero(3);\n"
    << "      for (i64 kk = 0; kk < " << L(Kt) << "; kk += 32) {\n"
    << "        __builtin_ia32_tileloadd64(4, at + kk, lda);\n"
    << "        __builtin_ia32_tileloadd64(5, (const char*)(at + kk) + 16 * lda, lda);\n"
    << "        __builtin_ia32_tileloadd64(6, b0 + kk * 16, 64);\n"
    << "        __builtin_ia32_tileloadd64(7, b0 + " << L(Kt * 16) << " + kk * 16, 64);\n"
    << "        __builtin_ia32_tdpbf16ps(0, 4, 6); __builtin_ia32_tdpbf16ps(1, 4, 7);\n"
    << "        __builtin_ia32_tdpbf16ps(2, 5, 6); __builtin_ia32_tdpbf16ps(3, 5, 7);\n"
    << "      }\n"
    << "      __builtin_ia32_tilestored64(0, cb, 128); __builtin_ia32_tilestored64(1, cb + 16, 128);\n"
    << "      __builtin_ia32_tilestored64(2, cb + 512, 128); __builtin_ia32_tilestored64(3, cb + 528, 128);\n"
    << "#else\n"
    << "    {\n"
    << "      for (i64 i = 0; i < mr; ++i)\n"
    << "        for (i64 jj = 0; jj < 32; ++jj) {\n"
    << "          const i64 j = c0 + jj;\n"
    << "          float v = 0.0f;\n"
    << "          for (i64 k = 0; k < " << L(K) << "; ++k)\n"
    << "            v += hpf_bf16_f32_raw(A[(r0 + i) * " << L(K) << " + k]) *\n"
    << "                 hpf_bf16_f32_raw(W[((j / 16 * " << L(Kt / 2) << " + k / 2) * 16 + j % 16) * 2 + k % 2]);\n"
    << "          cb[i * 32 + jj] = v;\n"
    << "        }\n"
    << "#endif\n"
    << "      const i64 nn = c_end - c0 < 32 ? c_end - c0 : 32;\n"
    << "      for (i64 ii = 0; ii < mr; ++ii) {\n"
    << "        const i64 i = r0 + ii;\n"
    << "        for (i64 jj = 0; jj < nn; ++jj) {\n"
    << "          const i64 j = c0 + jj;\n"
    << "          Y[i * " << L(N) << " + j] = " << c_store(Y.dtype, "wq_out(cb[ii * 32 + jj], args, i, j)") << ";\n"
    << "        }\n"
    << "      }\n"
    << "    }\n"
    << "    }\n"
    << "  }\n"
    << "#if defined(__AMX_TILE__) && defined(__AMX_BF16__)\n"
    << "  __builtin_ia32_tilerelease();\n"
    << "#endif\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), RB * CG, 1};
}

}  // namespace hpf::jit
