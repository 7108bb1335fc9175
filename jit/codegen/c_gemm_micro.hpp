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
//   hpf_mm_micro_bx(kc, ap, ask, asi, bp, bsk, bsv, acc, ldc)
//       the same with B read through strides: vector v of row p at bp + p * bsk + v * bsv
//       (hpf_mm_micro_ex is bsk = HPF_NR, bsv = HPF_VW), e.g. straight from 16-column panels;
//       B needs only float alignment (acc stays 64-byte aligned)
//   hpf_mm_micro(kc, ap, bp, acc)  the packed form, ldc = HPF_NC.
//   hpf_mm_micro_r(mr, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc)  the first mr rows only (mr a
//       constant); hpf_mm_micro_rest(mr, ...) any mr < HPF_MR at run time, in pieces of 4, 2, 1;
//       hpf_mm_micro_rn / hpf_mm_micro_rest_n(mr, nv, ...) the same over the first nv vectors of
//       the NR columns (nv a constant); hpf_mm_micro_bx0(...) as hpf_mm_micro_bx with the sums
//       starting at zero (acc only written: the first slice of K)
//   hpf_mm_micro_pack(zero, kc, ap, asi, bp, bsk, bcopy, acc, ldc, bpf)  a full tile of A rows in
//       place over B read in place (row k at bp + k * bsk, any alignment), each B row also stored
//       to the 64-byte aligned NR-wide panel bcopy (B packed by the first tile that reads it)
//   hpf_mm_micro_ahead(zero, kc, ap, asi, bp, bsk, bsv, acc, ldc, pfr, d0, d1, pfs, pls)  a full
//       tile of A rows in place (sums from zero where zero, else added to acc) over B through
//       strides (any alignment), that also prefetches into L2 the B the thread reads next: rows
//       d0 .. d1 - 1 (at most kc / 16), row d at pfr + d * pfs, four lines pls floats apart each,
//       one row per 16 k; returns how many rows it prefetched
//   hpf_mm_micro_cols(mr, cols, kc, ap, ask, asi, bp, bsk, bsv, acc, ldc)  any mr <= HPF_MR rows
//       and the first `cols` (1..HPF_NR, run time) columns in whole vectors: a ragged last panel
//       (the lanes past `cols` in its last vector are computed from what B holds there).
// The vector width is chosen by the preprocessor in the kernel (AVX-512: 6x64, else 6x16), so
// the source does not depend on the host. Pure text: no state, safe from any thread.
#pragma once

#include <cstdint>

namespace hpf::jit {

const char* gemm_micro_source();

// After gemm_micro_source(), where the host has AVX512-BF16 and the BF16 dot product outruns
// FP32 FMA (the preprocessor decides; nothing otherwise): HPF_BF16_DOT, and
//   hpf_mm_micro_bf16(kp, ap, asi, bp, acc, ldc)
//       acc[i * ldc + j] += sum over k < 2*kp of a(i, k) * b(k, j) in BF16 pairs (vdpbf16ps):
//       a(i, k) = ap[i * asi + k] (BF16 bits, rows of even length); bp holds per pair of k an
//       NR-wide row of u32, each the BF16 of b(2pp, j) (low half) and b(2pp+1, j) (high half).
// Numerics: every product is exact in FP32; a pair's two products are added to the FP32 lane one
// after the other (odd k first), rounding to nearest even each time, as the FP32 kernel would
// add them apart from contraction; BF16 denormals are read as zero and FP32 denormal sums
// flushed to zero.
// When: vdpbf16ps does 32 multiply-adds per instruction against FMA's 16, but Intel cores
// (Sapphire Rapids) issue it on one port against FMA's two, so it only ties, and the pair
// interleave of the packing then makes it slower there (measured, bench/README.md). AMD Zen 4/5
// run 512-bit FMA at half rate and the dot at full: selected there (__znver4__, __znver5__), or
// anywhere by defining HPF_PREFER_BF16_DOT before this text (the tests do, to check it).
const char* gemm_micro_bf16_source();

// The host-independent tile constants (HPF_NR is not one: 16 or 64 by the preprocessor).
inline constexpr int64_t kGemmMR = 6;
inline constexpr int64_t kGemmKC = 128;
inline constexpr int64_t kGemmNC = 64;
inline constexpr int64_t kGemmMC = 132;
// The FP32 GEMMs that keep a tile's sums in registers across a slice of K (B an input, and
// packed FP32 weights): work items of kGemmSliceRows rows or fewer run K in slices of at most
// kGemmSliceKC, over all the column blocks of a range before the next slice, so that the rows'
// slice of A (512 KiB at most) serves every block from L2; more rows stream A from L3 anyway and
// run the whole K (up to 2048) per block. C harnesses, one core: 128x768x3072 with B an input
// 4.0 -> 3.7 ms against slices of 1536, with packed weights 3.57 -> 3.50 (whole K); 1024^3 (516
// rows) 3% slower in slices, 2048^3 5%.
inline constexpr int64_t kGemmSliceRows = 256;
inline constexpr int64_t kGemmSliceKC = 512;
// Those GEMMs' items of more rows, which run the whole K per row tile: where K is deeper than
// kGemmWideK, an item is up to kGemmWide NC-column blocks wide, as long as kGemmWideItems items
// remain, so that each row tile reads its rows of A (6 x K floats, 48 KiB at 2048: not in L1)
// for more panels (the 64-column block of B, 512 KiB at 2048, fills Zen 3's L2 and the rows of A
// came from L3 again for each panel). C harnesses, one core, 2048^3 against OpenBLAS in the same
// run: B an input, blocks of 64 columns 0.95-0.98x, 128 0.97, 256 0.98-1.00, 512 0.99-1.00 (slices
// of K instead 0.92-0.94; row parts of 256 rows with wide blocks 0.92-0.96, B packed again for
// each). At 1024^3 (K = 1024 > kGemmWideK: 8 items of 128 columns), whose 64-column blocks fit the
// L2, each item reads all of A (4 MiB) from L3 again, 16 times with 64-column items: alone the two
// ran alike (OpenBLAS / libhpf 0.99 against 1.00; ungrouped 256-column items had run 1.01 ->
// 0.97x), but with the other core thrashing 12 MiB of the L3, as this VM's neighbours do,
// 0.94-0.995 against 0.91-0.975, and with two threads 0.905-0.937 against 0.87-0.91 (C harnesses,
// three runs each; bench/README session 36).
inline constexpr int64_t kGemmWideK = 512;
inline constexpr int64_t kGemmWide = 8;
inline constexpr int64_t kGemmWideItems = 8;
// In those wide items (several NC blocks, so K x NC floats of B beyond the L2), the row tiles go
// in groups of kGemmGroupTiles: per 16-column panel of B (K x 16, 128 KiB at 2048) each tile of the
// group in turn, so that the panel comes from L3 once per group instead of once per tile, from L2
// for the others (the group's rows of A, 4 x 48 KiB at 2048, stay in L2 over the panels). C
// harness, one core, 2048^3, B an input, 11 alternations each against the ungrouped order in the
// same run: groups of 2, 3, 4, 8 tiles 1.03-1.06x, 1.07x, 1.02-1.07x, 1.02x; OpenBLAS / grouped
// 1.00-1.01 where OpenBLAS / ungrouped was 0.93-0.99. The generated kernels, 11 alternations:
// B an input 1.02x (twice), packed FP32 weights (matmul_wq) 1.03x (three times).
inline constexpr int64_t kGemmGroupTiles = 4;
// How many NC-column blocks an item of those GEMMs spans (1, 2, 4 or 8) for N columns, depth K and
// `other` items per column block (row parts times batches).
inline int64_t gemm_wide_blocks(int64_t N, int64_t K, int64_t other) {
  int64_t wide = 1;
  while (K > kGemmWideK && wide < kGemmWide &&
         (N + 2 * wide * kGemmNC - 1) / (2 * wide * kGemmNC) * other >= kGemmWideItems)
    wide *= 2;
  return wide;
}

}  // namespace hpf::jit
