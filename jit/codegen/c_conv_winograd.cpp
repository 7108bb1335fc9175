// FP32 3x3 Conv (unit strides and dilations, one group; FP32 input, or BF16/F16 converted as
// the window is copied, with BF16 weights widened to F32 where there is no AMX) by Winograd's minimal
// filtering F(2x2, 3x3): each 2x2 block of outputs (a tile) takes 16 multiplies per input and
// output channel instead of 36. With d the tile's 4x4 input patch and g a 3x3 filter,
//   Y = A^T [ (G g G^T) . (B^T d B) ] A,
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// U = G g G^T is computed once, when the weights are packed ("wino" layout, conv_packing.hpp:
// per transform element xi = 4a + b, blocks of 64 output channels, one row of 64 per input
// channel); per element xi the 16 products summed over the input channels are a GEMM
// M_xi[t][m] = sum_c V_xi[c][t] U_xi[c][m] on the shared FP32 microkernel (tiles as its rows,
// output channels as its columns).
//
// A work item is a block of RT tile rows (all TW tile columns, at most kMaxTiles tiles) and 64
// output channels of one image; tile-row blocks innermost, so that a range keeps its channels'
// U (16 x CG x 64 values) in cache. Per slice of up to kSlice input channels: the slice's input
// rows are copied, zero-padded, into a window (rows of X as they are, vector copies), V = B^T d B
// is computed per tile, vectorised over a tile row's tiles, into V[xi][c][t] (every block of
// output channels transforms its input again, a few percent of its multiply-adds), and per
// element xi the GEMM over the block's tiles (A = V_xi read with the tiles contiguous, U's slice,
// 16 KiB, stays in L1) adds into M[xi][t][64]. (The window was once built with the channels
// innermost, V vectorised over the channels: its scalar transposing stores took 43% of the
// kernel; ResNet-50's 56x56 64 -> 64 layer went 2.05 -> 0.92 ms with this layout.)
// After the last slice the output transform A^T M A turns M's 16 planes into the four quarters
// o = 2 * row + column of each tile's outputs, in place; each quarter is transposed into channel
// rows (hpf_tile_cols), the two column phases interleaved into output rows, finished (bias,
// epilogue) and stored.
//
// Numerics: the transforms add and subtract (and halve, exactly, in G) in FP32; sums run over
// input channels per element, then over the 16 elements: the rounding differs from the direct
// kernel's (errors of a few ulps of the sums' magnitude, as oneDNN's and ONNX Runtime's
// Winograd convolutions have).
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_packing.hpp"

namespace hpf::jit::conv {
namespace {

constexpr int64_t kSlice = 64;                  // input channels per window and V
constexpr int64_t kMaxTiles = 32;               // tiles per work item, at most
constexpr int64_t kMinChannels = 16;
constexpr int64_t kMinTiles = 32;               // tiles per layer, at least

struct Blocking {
  int64_t TH, TW, RT, T, TS, CS, MP;
};

Blocking blocking(const Shape& z) {
  Blocking b{};
  b.TH = (z.OH + 1) / 2, b.TW = (z.OW + 1) / 2;
  b.MP = round_up(z.MG, kConvColBlock);
  const int64_t CB = b.MP / kConvColBlock;
  b.RT = std::clamp<int64_t>(kMaxTiles / std::max<int64_t>(1, b.TW), 1, b.TH);
  while (b.RT > 1 && z.N * CB * ((b.TH + b.RT - 1) / b.RT) < 4) b.RT = (b.RT + 1) / 2;
  b.T = b.RT * b.TW, b.TS = round_up(b.T, 16);
  b.CS = std::min(z.CG, kSlice);
  return b;
}

}  // namespace

bool winograd_fits(const Shape& z) {
  if (z.KH != 3 || z.KW != 3 || z.SH != 1 || z.SW != 1 || z.DH != 1 || z.DW != 1 || z.G != 1 || z.CG < kMinChannels ||
      z.OH < 2 || z.OW < 2)
    return false;
  // The output channels fill their 64-wide blocks (24 channels would compute 64), a tile-row
  // fits a work item, and there are tiles enough to reuse U: its 16 values per filter (1.8x the
  // weights) are read from memory once per layer, which on a 7x7 map (16 tiles) cost more than
  // the multiplies saved (ResNet-50's 7x7 512 -> 512 layer in the model: 1.6 ms against 1.3 for
  // gathered patches; 0.94 alone, its 16 MB of U in cache).
  const Blocking b = blocking(z);
  return b.MP * 10 <= z.MG * 11 && b.TW <= kMaxTiles && z.N * b.TH * b.TW >= kMinTiles;
}

Expected<GeneratedKernel> winograd(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                   const std::string& head, const std::string& epi_ptrs, const std::string& name) {
  const DType xd = spec.inputs[0].dtype;
  if (!winograd_fits(z) || (xd != DType::F32 && xd != DType::BF16 && xd != DType::F16))
    return Status::invalid("conv: the Winograd kernel takes 3x3 Convs of unit strides and dilations, one group, at "
                           "least 16 input channels and FP32, BF16 or F16 input");
  const Blocking b = blocking(z);
  const int64_t TH = b.TH, TW = b.TW, RT = b.RT, TS = b.TS, CS = b.CS, MP = b.MP, CB = MP / kConvColBlock;
  const int64_t RBn = (TH + RT - 1) / RT, WR = 2 * RT + 2, WC = 2 * TW + 2, P = z.OH * z.OW;
  // V's planes one cache line longer than their values: 16 planes a power of two apart would
  // share L1 sets (their stores then take 2.3x as long). Window columns [lo, hi) read X.
  const int64_t VP = CS * TS + 16, lo = std::min(z.PW, WC), hi = std::clamp(z.W + z.PW, lo, WC);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  std::ostringstream s;
  s << head << gemm_micro_source() << tile_cols_source() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << kernel_args(spec, "float", has_b, epi_ptrs)
    // The window: per channel, WR input rows of WC columns, padded coordinates from (2 * tile
    // row 0 - PH, -PW); V[xi][c][t], planes VP apart.
    << "  float win[" << WR * WC * CS << "] __attribute__((aligned(64)));\n"
    << "  float V[" << 16 * VP << "] __attribute__((aligned(64)));\n"
    << "  float Mx[" << 16 * TS * kConvColBlock << "] __attribute__((aligned(64)));\n"
    << "  float ct[" << 4 * kConvColBlock * TS << "] __attribute__((aligned(64)));\n"
    << "  float a[" << 2 * TW << "] __attribute__((aligned(64)));\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 rb = w % " << L(RBn) << ", cb = (w / " << L(RBn) << ") % " << L(CB) << ", n = w / " << L(CB * RBn) << ";\n"
    << "    const i64 tr0 = rb * " << L(RT) << ", trows = " << L(TH) << " - tr0 < " << L(RT) << " ? " << L(TH)
    << " - tr0 : " << L(RT) << ", nt = trows * " << L(TW) << ";\n"
    << "    for (i64 c0 = 0; c0 < " << L(z.CG) << "; c0 += " << L(CS) << ") {\n"
    << "      const i64 cs = " << L(z.CG) << " - c0 < " << L(CS) << " ? " << L(z.CG) << " - c0 : " << L(CS) << ";\n"
    // The window: each channel's WR input rows, zero-padded to WC columns (copies of X's rows).
    << "      for (i64 c = 0; c < cs; ++c)\n"
    << "        for (i64 y = 0; y < " << L(WR) << "; ++y) {\n"
    << "          const i64 ih = 2 * tr0 - " << L(z.PH) << " + y;\n"
    << "          float* restrict d = win + (c * " << L(WR) << " + y) * " << L(WC) << ";\n"
    << "          if ((unsigned long long)ih >= " << L(z.H) << ") {\n"
    << "            for (i64 x = 0; x < " << L(WC) << "; ++x) d[x] = 0.0f;\n"
    << "            continue;\n"
    << "          }\n"
    << "          const " << c_storage_type(xd) << "* restrict src = X + ((n * " << L(z.C) << " + c0 + c) * " << L(z.H)
    << " + ih) * " << L(z.W) << ";\n"
    << "          for (i64 x = 0; x < " << L(lo) << "; ++x) d[x] = 0.0f;\n"
    << "          for (i64 x = " << L(lo) << "; x < " << L(hi) << "; ++x) d[x] = "
    << c_load_operand(xd, "src[x - " + L(z.PW) + "]") << ";\n"
    << "          for (i64 x = " << L(hi) << "; x < " << L(WC) << "; ++x) d[x] = 0.0f;\n"
    << "        }\n"
    // V = B^T d B per tile, vectorised over a tile row's tiles: the tile's 4x4 inputs, rows
    // combined (e0 = r0 - r2, e1 = r1 + r2, e2 = r2 - r1, e3 = r1 - r3), then columns the same way.
    << "      for (i64 c = 0; c < cs; ++c)\n"
    << "        for (i64 tr = 0; tr < trows; ++tr) {\n"
    << "          const float* restrict r = win + (c * " << L(WR) << " + 2 * tr) * " << L(WC) << ";\n"
    << "          float* restrict v = V + c * " << L(TS) << " + tr * " << L(TW) << ";\n"
    << "          for (i64 k = 0; k < " << L(TW) << "; ++k) {\n";
  for (int i = 0; i < 4; ++i) {
    s << "            const float";
    for (int j = 0; j < 4; ++j)
      s << (j ? "," : "") << " d" << i << j << " = r[" << L(i * WC + j) << " + 2 * k]";
    s << ";\n";
  }
  for (int j = 0; j < 4; ++j)
    s << "            const float e0" << j << " = d0" << j << " - d2" << j << ", e1" << j << " = d1" << j << " + d2" << j
      << ", e2" << j << " = d2" << j << " - d1" << j << ", e3" << j << " = d1" << j << " - d3" << j << ";\n";
  for (int q = 0; q < 4; ++q) {
    const std::string e = "e" + std::to_string(q);
    auto at = [&](int xi) { return "            v[" + L(xi * VP) + " + k] = "; };
    s << at(4 * q) << e << "0 - " << e << "2;\n"
      << at(4 * q + 1) << e << "1 + " << e << "2;\n"
      << at(4 * q + 2) << e << "2 - " << e << "1;\n"
      << at(4 * q + 3) << e << "1 - " << e << "3;\n";
  }
  s << "          }\n"
    << "        }\n"
    // The 16 GEMMs, element by element (its U slice, 16 KiB, stays in L1 across the tiles), into
    // M[xi][t][64], summed over the slices.
    << "      for (int xi = 0; xi < 16; ++xi) {\n"
    << "        const float* restrict up = Wt + ((xi * " << L(CB) << " + cb) * " << L(z.CG) << " + c0) * " << kConvColBlock
    << ";\n"
    // The next U slice (the next element's, else the next input channels' first), fetched into
    // L2 over this one's tiles, a share each: U comes from memory once per layer.
    << "        const float* restrict nu = xi < 15 ? up + " << L(CB * z.CG * kConvColBlock) << " : c0 + " << L(CS)
    << " < " << L(z.CG) << " ? Wt + (cb * " << L(z.CG) << " + c0 + " << L(CS) << ") * " << kConvColBlock << " : 0;\n"
    << "        const i64 nl = (xi < 15 ? cs : " << L(z.CG) << " - c0 - cs < " << L(CS) << " ? " << L(z.CG)
    << " - c0 - cs : " << L(CS) << ") * " << kConvColBlock / 16 << ";\n"
    << "        for (i64 t0 = 0; t0 < nt; t0 += HPF_MR) {\n"
    << "          const i64 mr = nt - t0 < HPF_MR ? nt - t0 : HPF_MR;\n"
    << "          if (nu)\n"
    << prefetch_share("nu", "nl", "t0 / HPF_MR", "(nt + HPF_MR - 1) / HPF_MR", "            ")
    << "          const float* restrict vp = V + xi * " << L(VP) << " + t0;\n"
    << "          float* restrict mp = Mx + (xi * " << L(TS) << " + t0) * " << kConvColBlock << ";\n"
    // The first slice starts the sums: at zero in registers for whole tiles, a ragged one's rows
    // cleared first (clearing all of M per work item took 4% of the 56x56 kernel).
    << "          if (c0 == 0 && mr < HPF_MR) for (i64 x = 0; x < mr * " << kConvColBlock << "; ++x) mp[x] = 0.0f;\n"
    << "          for (i64 jp = 0; jp < " << kConvColBlock << "; jp += HPF_NR)\n"
    << "            if (mr == HPF_MR && c0 == 0) hpf_mm_micro_bx0(cs, vp, " << L(TS) << ", 1, up + jp, " << kConvColBlock
    << ", HPF_VW, mp + jp, " << kConvColBlock << ");\n"
    << "            else if (mr == HPF_MR) hpf_mm_micro_bx(cs, vp, " << L(TS) << ", 1, up + jp, " << kConvColBlock
    << ", HPF_VW, mp + jp, " << kConvColBlock << ");\n"
    << "            else hpf_mm_micro_rest(mr, cs, vp, " << L(TS) << ", 1, up + jp, " << kConvColBlock
    << ", HPF_VW, mp + jp, " << kConvColBlock << ");\n"
    << "        }\n"
    << "      }\n"
    << "    }\n"
    // A^T M A, in place: quarter o = 2 * row + column of each tile's outputs into M's first four
    // planes (sums s_b over a of rows 0..2 (output row 0) and 1 - 2 - 3 (output row 1), then
    // the same over b).
    << "    for (i64 i = 0; i < nt * " << kConvColBlock << "; ++i) {\n"
    << "      float m[16];\n"
    << "#pragma clang loop unroll(full)\n"
    << "      for (int xi = 0; xi < 16; ++xi) m[xi] = Mx[xi * " << L(TS * kConvColBlock) << " + i];\n"
    << "      float s0[4], s1[4];\n"
    << "#pragma clang loop unroll(full)\n"
    << "      for (int bb = 0; bb < 4; ++bb) {\n"
    << "        s0[bb] = m[bb] + m[4 + bb] + m[8 + bb];\n"
    << "        s1[bb] = m[4 + bb] - m[8 + bb] - m[12 + bb];\n"
    << "      }\n"
    << "      Mx[i] = s0[0] + s0[1] + s0[2];\n"
    << "      Mx[" << L(TS * kConvColBlock) << " + i] = s0[1] - s0[2] - s0[3];\n"
    << "      Mx[" << L(2 * TS * kConvColBlock) << " + i] = s1[0] + s1[1] + s1[2];\n"
    << "      Mx[" << L(3 * TS * kConvColBlock) << " + i] = s1[1] - s1[2] - s1[3];\n"
    << "    }\n"
    // Per block of 64 output channels: each quarter's tile into channel rows, the two column
    // phases interleaved into output rows, finished and stored.
    << "    {\n"
    << "      const i64 mcn = " << L(z.MG) << " - cb * " << kConvColBlock << " < " << kConvColBlock << " ? " << L(z.MG)
    << " - cb * " << kConvColBlock << " : " << kConvColBlock << ";\n"
    // The quarters' rows up to the next 16 (the transposition's blocks), those past the tiles
    // cleared: never stored, but not left undefined.
    << "      const i64 nt16 = (nt + 15) / 16 * 16;\n"
    << "      for (int o = 0; o < 4; ++o) {\n"
    << "        for (i64 x = nt * " << kConvColBlock << "; x < nt16 * " << kConvColBlock << "; ++x) Mx[o * "
    << L(TS * kConvColBlock) << " + x] = 0.0f;\n"
    << "        hpf_tile_cols(Mx + o * " << L(TS * kConvColBlock) << ", nt16, ct + o * " << L(kConvColBlock * TS) << ", "
    << L(TS) << ");\n"
    << "      }\n"
    << "      for (i64 j = 0; j < mcn; ++j) {\n"
    << "        const i64 mo = cb * " << kConvColBlock << " + j;\n"
    << "        for (i64 tr = 0; tr < trows; ++tr)\n"
    << "          for (i64 rr = 0; rr < 2; ++rr) {\n"
    << "            const i64 oh = 2 * (tr0 + tr) + rr;\n"
    << "            if (oh >= " << L(z.OH) << ") break;\n"
    << "            const float* restrict e0 = ct + ((2 * rr) * " << kConvColBlock << " + j) * " << L(TS) << " + tr * "
    << L(TW) << ";\n"
    << "            const float* restrict e1 = e0 + " << L(kConvColBlock * TS) << ";\n"
    << "            for (i64 k = 0; k < " << L(TW) << "; ++k) {\n"
    << "              a[2 * k] = e0[k];\n"
    << "              a[2 * k + 1] = e1[k];\n"
    << "            }\n"
    << "            const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + oh * " << L(z.OW) << ";\n"
    << "            (void)yo;\n";
  // The next work item continues these channels' rows with the next block of tile rows: their
  // lines are fetched for writing now (rows a plane apart, see conv_pointwise_rows; ResNet-50's
  // 56x56 layer 1.04 -> 1.01 ms with the output out of cache).
  s << finish_store(spec, fin, "(Y + yo)", "a", L(z.OW)) << "          }\n"
    << "        if (rb + 1 < " << L(RBn) << ") hpf_prefetch_w(Y + (n * " << L(z.M) << " + mo) * " << L(P) << " + 2 * (tr0 + "
    << L(RT) << ") * " << L(z.OW) << ", " << L(2 * RT * z.OW) << " * sizeof(*Y));\n"
    << "      }\n"
    << "    }\n"
    << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, b.T * 4 * kConvColBlock * z.CG * 4);
  return GeneratedKernel{name, s.str(), z.N * RBn * CB, std::max<int64_t>(1, (1 << 20) / per_item)};
}

}  // namespace hpf::jit::conv
