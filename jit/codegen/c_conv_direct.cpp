// FP32 direct Conv (kernels of more than one tap, any strides, dilations, padding; not depthwise)
// with weights in the "cols" layout (conv_packing.hpp: blocks of 64 output channels, k rows of
// 64). A 1x1 Conv has too few multiply-adds per input value copied (its strided form ran 2x
// slower here than on packed patches).
//
// No patches are packed. A work item is a block of RB output rows and 64 output channels of one
// (image, group); it copies the input rows those output rows read into a zero-padded window
// (converting 16-bit inputs; the row block's other channel blocks, next in the range, reuse
// it), split by strides into SH x SW phase planes per channel: window row y = oh*SH + kh*DH and
// column x = ow*SW + kw*DW (in padded coordinates) go to phase plane (y % SH, x % SW) at row
// y / SH, column x / SW, each plane RP rows of WPP columns. Output pixel
// (oh, ow) of the block at position q = (oh - oh0) * WPP + ow then reads, for tap (kh, kw), the
// plane of that tap's phase at q + (kh*DH / SH) * WPP + kw*DW / SW: linear in q, so runs of 6
// positions along a row (the microkernel's rows), pieces of 4, and tiles down a column for the
// row's last 1-3 positions (row_plan; the WPP - OW positions at the end of each row are not
// computed) are read in place by the shared FP32 microkernel, with the channel as its k
// (stride: one channel's planes) and the output channels as its columns (the weights' rows of
// tap r, KH*KW rows apart). Per 64 channels, per tap, per run: one microkernel call into a
// position-major FP32 tile, whose columns are gathered into output rows, finished (bias,
// epilogue) and stored. Sums run over taps, then channels: the FP32 order differs from the
// reference's (channels, then taps), as contraction does.
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_packing.hpp"

namespace hpf::jit::conv {
namespace {
constexpr int64_t kMaxWindowBytes = 256 * 1024;  // the window on the stack, at most
constexpr int64_t kMaxPositions = 256;           // block positions (RB * WPP), about: the tile is 64 floats each
// Channels per microkernel call: a tap's slice of weights (64 x 64 floats, 16 KiB) and the
// window lines the tiles read then share L1 (at 128, 32 KiB of weights did not leave room):
// ResNet-50's 56x56 128->128 stride-2 layer in a C harness 1.71 -> 1.60 ms, its two stride-2
// direct layers in the model 4.03-4.16 -> 3.90-4.03 ms (3 alternations).
constexpr int64_t kChannelSlice = 64;
// Input channels per group, at least: each microkernel call sums over this many (a 3-channel
// stem would load and store its tile every 3 FMAs per row; the patch-packing kernel sums
// over all taps at once).
constexpr int64_t kMinChannels = 16;
}  // namespace

namespace {
// Columns (WPP) and rows (RP, for `rows` output rows) of one phase plane.
int64_t plane_cols(const Shape& z) { return z.OW + (z.KW - 1) * z.DW / z.SW; }
int64_t plane_rows(const Shape& z, int64_t rows) { return rows + (z.KH - 1) * z.DH / z.SH; }
int64_t window_bytes(const Shape& z, int64_t rows) {
  return z.CG * z.SH * z.SW * plane_rows(z, rows) * plane_cols(z) * 4;
}
}  // namespace

// How an output row's `ow` positions are cut for the microkernel: `sixes` full tiles and `fours`
// 4-row pieces along each row, then the last `cols` positions of every row as tiles down the rows
// (a column's positions are WPP apart). A row's rest of 1-3 positions as pieces of its own would
// run at a third to half the FMA rate (7x7 maps: 6 + 1); 14 = 6 + 4 + 4.
struct RowPlan {
  int64_t sixes, fours, cols;
};
RowPlan row_plan(int64_t ow) {
  const int64_t sixes = ow / kGemmMR, rest = ow % kGemmMR;
  if (rest == 2 && sixes > 0) return {sixes - 1, 2, 0};
  return {sixes, rest / 4, rest % 4};
}

bool direct_fits(const Shape& z) {
  // A plane row within 4 blocks of positions: the tile (64 floats a position) stays in 256 KiB.
  return z.KH * z.KW > 1 && z.CG >= kMinChannels && window_bytes(z, 1) <= kMaxWindowBytes &&
         plane_cols(z) <= 4 * kMaxPositions;
}

Expected<GeneratedKernel> direct(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                 const std::string& head, const std::string& epi_ptrs, const std::string& name) {
  if (!direct_fits(z)) return Status::invalid("conv: the direct kernel takes no depthwise or pointwise Conv, and small windows");
  const TensorDesc& X = spec.inputs[0];
  const int64_t KK = z.KH * z.KW, K = z.CG * KK, CB = (z.MG + kConvColBlock - 1) / kConvColBlock, P = z.OH * z.OW;
  const int64_t WPP = plane_cols(z), PH2 = z.SH * z.SW;  // phase planes per channel
  // Output rows per block: the tile within kMaxPositions positions, the window within its
  // bytes, and at least 4 work items where the rows allow (two threads share them).
  int64_t RB = std::clamp<int64_t>(kMaxPositions / WPP, 1, z.OH);
  while (RB > 1 && window_bytes(z, RB) > kMaxWindowBytes) --RB;
  while (RB > 1 && z.N * z.G * CB * ((z.OH + RB - 1) / RB) < 4) RB = (RB + 1) / 2;
  const int64_t RBn = (z.OH + RB - 1) / RB, RP = plane_rows(z, RB), PLANE = RP * WPP, CPLANE = PH2 * PLANE;
  const int64_t tiles = ((RB - 1) * WPP + z.OW + kGemmMR - 1) / kGemmMR, TP16 = round_up(tiles * kGemmMR, 16);
  // Window rows (padded coordinates) of a block, all phases.
  const int64_t YR = RP * z.SH;
  const char* xt = c_storage_type(X.dtype);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  std::ostringstream s;
  s << head << gemm_micro_source() << tile_cols_source() << "\nvoid " << name
    << "(void* const* args, i64 begin, i64 end) {\n"
    << kernel_args(spec, "float", has_b, epi_ptrs)
    // The window, and past it a few zeros: the last run of a block reads up to 5 positions on.
    << "  float win[" << z.CG * CPLANE + 16 << "] __attribute__((aligned(64)));\n"
    << "  for (i64 x = " << z.CG * CPLANE << "; x < " << z.CG * CPLANE + 16 << "; ++x) win[x] = 0.0f;\n"
    // The tile, rounded up to whole 16-row blocks for the transposition (rows past a block's
    // tiles are transposed, never stored: zero at first), and its columns as rows.
    << "  float acc[" << TP16 * kConvColBlock << "] __attribute__((aligned(64)));\n"
    << "  float ct[" << kConvColBlock * TP16 << "] __attribute__((aligned(64)));\n"
    << "  for (i64 x = 0; x < " << TP16 * kConvColBlock << "; ++x) acc[x] = 0.0f;\n"
    // Channel blocks innermost: the blocks of a row block share its window, copied by the first
    // of them a range holds (ranges are whole row blocks where they can be: the grain). It was
    // copied once per block of 64 output channels: ResNet-50's 56x56 128 -> 128 stride-2 layer
    // 1.95-2.13 -> 1.78-1.83 ms alone.
    << "  i64 filled = -1;\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 cb = w % " << L(CB) << ", rb = (w / " << L(CB) << ") % " << L(RBn) << ", g = (w / " << L(RBn * CB)
    << ") % " << L(z.G) << ", n = w / " << L(RBn * CB * z.G) << ";\n"
    << "    const i64 oh0 = rb * " << L(RB) << ", rows = " << L(z.OH) << " - oh0 < " << L(RB) << " ? " << L(z.OH)
    << " - oh0 : " << L(RB) << ";\n"
    << "    const i64 nt = ((rows - 1) * " << L(WPP) << " + " << L(z.OW) << " + HPF_MR - 1) / HPF_MR;\n"
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(z.H * z.W) << ";\n"
    << "    if (filled != w / " << L(CB) << ") {\n"
    << "      filled = w / " << L(CB) << ";\n"
    << fill_window(z, xt, X.dtype, YR, WPP, PLANE, CPLANE)
    << "    }\n"
    << "    for (i64 x = 0; x < nt * HPF_MR * " << kConvColBlock << "; ++x) acc[x] = 0.0f;\n"
    << "    const float* restrict wp = Wt + (g * " << L(CB) << " + cb) * " << L(K * kConvColBlock) << ";\n"
    << "    for (i64 c0 = 0; c0 < " << L(z.CG) << "; c0 += " << kChannelSlice << ") {\n"
    << "      const i64 kc = " << L(z.CG) << " - c0 < " << kChannelSlice << " ? " << L(z.CG) << " - c0 : " << kChannelSlice
    << ";\n"
    << "      for (i64 r = 0; r < " << L(KK) << "; ++r) {\n"
    << "        const i64 ty = (r / " << L(z.KW) << ") * " << L(z.DH) << ", tx = (r % " << L(z.KW) << ") * " << L(z.DW)
    << ";\n"
    << "        const float* restrict ar = win + c0 * " << L(CPLANE) << " + ((ty % " << L(z.SH) << ") * " << L(z.SW)
    << " + tx % " << L(z.SW) << ") * " << L(PLANE) << " + (ty / " << L(z.SH) << ") * " << L(WPP) << " + tx / " << L(z.SW)
    << ";\n"
    << "        const float* restrict br = wp + (c0 * " << L(KK) << " + r) * " << kConvColBlock << ";\n";
  // Each output row's OW positions (not the row's WPP - OW trailing ones), cut as row_plan says.
  const RowPlan rp = row_plan(z.OW);
  const std::string b = "br + jp, " + L(KK * kConvColBlock) + ", HPF_VW";
  const std::string tile = std::to_string(kConvColBlock);
  s << "        for (i64 jp = 0; jp < " << kConvColBlock << "; jp += HPF_NR) {\n"
    << "          for (i64 oh = 0; oh < rows; ++oh) {\n"
    << "            const float* restrict ao = ar + oh * " << L(WPP) << ";\n"
    << "            float* restrict co = acc + oh * " << L(WPP * kConvColBlock) << " + jp;\n";
  if (rp.sixes > 0)
    s << "            for (i64 q = 0; q < " << L(rp.sixes * kGemmMR) << "; q += HPF_MR)\n"
      << "              hpf_mm_micro_bx(kc, ao + q, " << L(CPLANE) << ", 1, " << b << ", co + q * " << tile << ", " << tile
      << ");\n";
  for (int64_t f = 0; f < rp.fours; ++f) {
    const int64_t q = rp.sixes * kGemmMR + 4 * f;
    s << "            hpf_mm_micro_r(4, kc, ao + " << q << ", " << L(CPLANE) << ", 1, " << b << ", co + " << q * kConvColBlock
      << ", " << tile << ");\n";
  }
  s << "          }\n";
  if (rp.cols > 0) {
    const int64_t q0 = z.OW - rp.cols;
    s << "          for (i64 q = " << q0 << "; q < " << z.OW << "; ++q) {\n"
      << "            i64 oh = 0;\n"
      << "            for (; oh + HPF_MR <= rows; oh += HPF_MR)\n"
      << "              hpf_mm_micro_r(HPF_MR, kc, ar + oh * " << L(WPP) << " + q, " << L(CPLANE) << ", " << L(WPP) << ", " << b
      << ", acc + (oh * " << L(WPP) << " + q) * " << tile << " + jp, " << L(WPP * kConvColBlock) << ");\n"
      << "            if (oh < rows)\n"
      << "              hpf_mm_micro_rest(rows - oh, kc, ar + oh * " << L(WPP) << " + q, " << L(CPLANE) << ", " << L(WPP) << ", "
      << b << ", acc + (oh * " << L(WPP) << " + q) * " << tile << " + jp, " << L(WPP * kConvColBlock) << ");\n"
      << "          }\n";
  }
  s << "        }\n"
    << "      }\n"
    << "    }\n";
  // Each output channel's rows: a column of the tile (transposed into a row), WPP positions per row.
  s << "    const i64 mcn = " << L(z.MG) << " - cb * " << kConvColBlock << " < " << kConvColBlock << " ? " << L(z.MG)
    << " - cb * " << kConvColBlock << " : " << kConvColBlock << ";\n"
    << "    hpf_tile_cols(acc, (nt * HPF_MR + 15) / 16 * 16, ct, " << L(TP16) << ");\n"
    << "    for (i64 j = 0; j < mcn; ++j) {\n"
    << "      const i64 mo = g * " << L(z.MG) << " + cb * " << kConvColBlock << " + j;\n"
    << "      for (i64 oh = 0; oh < rows; ++oh) {\n"
    << "        const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + (oh0 + oh) * " << L(z.OW) << ";\n"
    << "        (void)yo;\n"
    << "        float* restrict a = ct + j * " << L(TP16) << " + oh * " << L(WPP) << ";\n";
  s << finish_store(spec, fin, "(Y + yo)", "a", L(z.OW)) << "      }\n    }\n  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, RB * z.OW * kConvColBlock * K);
  // Ranges of whole row blocks where there are 4 or more (smaller blocks to make them ran
  // ResNet-50's 7x7 layers a third slower): otherwise two threads share a block's channels.
  const int64_t grain = std::max<int64_t>(1, (1 << 20) / per_item);
  return GeneratedKernel{name, s.str(), z.N * z.G * CB * RBn, z.N * z.G * RBn >= 4 ? round_up(grain, CB) : grain};
}

}  // namespace hpf::jit::conv
