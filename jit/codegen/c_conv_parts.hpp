// Pieces the C Conv generators share (c_conv.cpp, c_conv_amx.cpp): the geometry of one
// convolution and the code finishing and storing an output row. Internal to jit/codegen.
// Pure functions; safe from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "hpf/status.hpp"
#include "jit/codegen/conv_geometry.hpp"
#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit::conv {

// A 2-D convolution (1-D lifted to 2-D): batch N, input channels C in G groups of CG, input
// H x W, output channels M (MG per group), kernel KH x KW, output OH x OW, strides, dilations
// and the leading pads.
struct Shape {
  int64_t N, C, H, W, M, CG, MG, G, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW;
};

// The bias (if any) and epilogue of one value at column expression `j` of the output row
// starting at flat offset `yoff`, output channel `mo`: the per-channel setup (statements before
// the row's loop) and the per-value statements, on the float local `v`.
struct Finish {
  std::string setup, per_value;
  // The loop applying it to `n` values of the FP32 row `row`, in place, setup first: empty when
  // there is nothing to apply. `as_loop`: vectorised as a loop rather than unrolled first, for
  // short rows of a constant length: unrolled, the straight-line code of an epilogue rounding to
  // BF16 stayed scalar, and the accumulators with it (a BF16 7x7 depthwise layer with a Clip:
  // 0.066 -> 0.036 ms); rows of 32 in registers are faster unrolled.
  std::string loop(const std::string& row, const std::string& n, bool as_loop = false) const {
    if (per_value.empty()) return "";
    return "      {\n" + setup + (as_loop ? "#pragma clang loop vectorize(enable) unroll(disable)\n" : "") +
           "      for (i64 jj = 0; jj < " + n + "; ++jj) {\n        float v = " + row + "[jj];\n" + per_value +
           "        " + row + "[jj] = v;\n      }\n      }\n";
  }
};
// `kinds`: per input, how an epilogue operand broadcasts (epilogue_operand_kind); `bias`: the
// input holding the bias (`B` in the kernel; -1: none), epilogue operands `P<k>`. `after_bias`:
// statements on `v` between the bias and the epilogue (the INT8 kernel's output fake
// quantisation).
Expected<Finish> finish_value(const KernelSpec& lifted, const std::vector<int>& kinds, int bias,
                              const std::string& yoff, const std::string& j, const std::string& after_bias = "");

// A tile of sums in registers (hpf_vf c[HPF_MR][HPF_NV]) finished and stored to an FP32 Y: row i
// is output channel mo = `mo0` + i, its values at Y + yo, yo = (n * M + mo) * `plane` + `at`; the
// bias (when `has_b`, an FP32 B) added and the epilogue applied as vectors, the first `nv`
// vectors (a constant) stored. Empty where that cannot be: Y or the bias not FP32, or an
// epilogue step or operand with no vector form (c_epilogue_vector); an operand with a value per
// output is read at P<k> + yo as Y is written.
std::string tile_finish_vectors(const KernelSpec& spec, const std::vector<int>& kinds, bool has_b, int64_t M,
                                int64_t plane, const std::string& mo0, const std::string& at, const std::string& nv);

// The declarations opening a float Conv kernel: X (args[0]) in its format, the weight Wt as C
// type `wt` (args[1]), the bias B (args[2]) when `has_b`, the epilogue's operands (`epi_ptrs`)
// and the output Y (the argument after the inputs).
std::string kernel_args(const KernelSpec& spec, const char* wt, bool has_b, const std::string& epi_ptrs);

// Stores `n` finished FP32 values of `row` at `dst`, spec's output (its format and epilogue).
std::string store_row(const KernelSpec& spec, const std::string& dst, const std::string& row, const std::string& n);
// `fin` applied to `n` values of the FP32 row `row` and the values stored at `dst`, in one pass
// where the output is FP32 or F16, or BF16 from an epilogue rounding to BF16 last (finishing the
// row in place, then copying it, cost ResNet-50's stem with its Relu 20%); other BF16 rows are
// finished, then stored by store_row (16 conversions at once).
std::string finish_store(const KernelSpec& spec, const Finish& fin, const std::string& dst, const std::string& row,
                         const std::string& n);

// The C statement of a work item's block of output channels: `ic`, its first in the group, and
// `mc`, how many (MT, or fewer in the group's last block), from the block index `mb`.
std::string channel_block(int64_t MG, int64_t MT);

// C statements fetching into L2 tile `tile`'s share (one of `tiles` equal parts) of the `lines`
// cache lines from `base` (contiguous): the next slice of weights, read over this slice's tiles.
std::string prefetch_share(const std::string& base, const std::string& lines, const std::string& tile,
                           const std::string& tiles, const std::string& indent);

// C text (after gemm_micro_source()) defining
//   hpf_tile_cols(src, ni, dst, ldd): dst[j * ldd + i] = src[i * 64 + j] for i < ni, j < 64,
// which turns a position-major tile of 64 output channels (the "cols" kernels' accumulator) into
// one row per channel. With AVX-512, ni a multiple of 16 (src holds that many rows; the extra ones
// land past the caller's count) and blocks of 16 x 16 are transposed in registers by four stages of
// two-vector shuffles; otherwise one value at a time.
const char* tile_cols_source();

// C statements filling the window of a block of output rows from oh0 (the direct and the
// phase-plane kernels): for each of the group's CG channels (input `xg`, storage type `xt`, format
// `x`), window rows y < `rows_y` (padded coordinates from oh0 * SH - PH) split by strides into
// SH x SW phase planes of `wpp` columns, plane (y % SH, pw) row y / SH holding padded columns
// col * SW + pw; `plane` floats per plane, `cplane` per channel; zeros where the padding is.
// Each row's in-bounds columns are one strided copy (vectorised), its padding two fills.
std::string fill_window(const Shape& z, const char* xt, DType x, int64_t rows_y, int64_t wpp, int64_t plane,
                        int64_t cplane);

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline Shape shape_of(const ConvGeometry& g) {
  return {g.N, g.C, g.H, g.W, g.M, g.CG, g.M / g.group, g.group, g.KH, g.KW, g.OH, g.OW, g.SH, g.SW, g.DH, g.DW, g.PH, g.PW};
}

// The implicit GEMM's view of the input plane: a 1x1, unit-stride, unpadded convolution reads
// pixel p of the input for output pixel p, so its plane is taken as one long row (H = 1).
struct Plane {
  bool flat;
  int64_t H, W, OW, SH, SW, PH, PW;
};
inline Plane plane_of(const Shape& z) {
  const bool flat = z.KH == 1 && z.KW == 1 && z.SH == 1 && z.SW == 1 && z.PH == 0 && z.PW == 0 && z.OH == z.H &&
                    z.OW == z.W;
  if (flat) return {true, 1, z.H * z.W, z.OH * z.OW, 1, 1, 0, 0};
  return {false, z.H, z.W, z.OW, z.SH, z.SW, z.PH, z.PW};
}

// Output channels per work item of a group of MG: MT rows (a multiple of `gran`) in MB blocks,
// as few blocks as `max_rows` allows (each packs the pixels' patches again), but at least
// `min_items` work items in all (`items` without the split) so that two threads share the work;
// rows split evenly.
struct RowBlocks {
  int64_t MB, MT;
};
inline RowBlocks row_blocks(int64_t MG, int64_t items, int64_t max_rows, int64_t gran, int64_t min_items = 4) {
  int64_t MB = std::max((MG + max_rows - 1) / max_rows, (min_items + items - 1) / items);
  MB = std::max<int64_t>(1, std::min(MB, (MG + gran - 1) / gran));
  const int64_t MT = round_up((MG + MB - 1) / MB, gran);
  return {(MG + MT - 1) / MT, MT};
}

// The AMX kernel for BF16 input and weights packed in the "amx" layout (conv_packing.hpp);
// `head` is the prelude, `epi_ptrs` the epilogue operands' declarations. Attribute "tile"
// picks one of amx_tile_variants() (the first is the default, the kernel without it).
std::vector<std::string> amx_tile_variants();
// The FP32 implicit GEMM with "rows"-packed weights: attribute "tile" = "r<rows>", the most
// output channels per work item (the first, r240, is the default).
std::vector<std::string> gemm_tile_variants();
// The FP32 direct kernel (c_conv_direct.cpp) for a Conv with "cols"-packed weights that is not
// pointwise: whether it takes `z` (more than one tap, at least 16 input channels per group, one
// output row's input window within its stack budget), and the kernel.
bool direct_fits(const Shape& z);
Expected<GeneratedKernel> direct(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                 const std::string& head, const std::string& epi_ptrs, const std::string& name);
// The FP32 kernel for a Conv with "rows"-packed weights reading stride-phase planes in place
// (c_conv_phase.cpp): whether it takes `z` (more than one tap, fewer than 16 input channels per
// group, output rows long enough), and the kernel (`max_rows`: output channels per work item, at most).
bool phase_fits(const Shape& z);
Expected<GeneratedKernel> phase_rows(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                     int64_t max_rows, const std::string& head, const std::string& epi_ptrs,
                                     const std::string& name);
// The FP32 Winograd F(2x2, 3x3) kernel (c_conv_winograd.cpp) for weights packed in the "wino"
// layout: whether it takes `z` (3x3, unit strides and dilations, one group, at least 16 input
// channels, output channels filling 64-wide blocks, its accumulators within the stack budget),
// and the kernel (FP32 input).
bool winograd_fits(const Shape& z);
Expected<GeneratedKernel> winograd(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                   const std::string& head, const std::string& epi_ptrs, const std::string& name);
Expected<GeneratedKernel> amx_gemm(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                   const std::string& head, const std::string& epi_ptrs, const std::string& name);

}  // namespace hpf::jit::conv
