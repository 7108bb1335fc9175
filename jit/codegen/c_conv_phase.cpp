// FP32 Conv with weights in the "rows" layout (conv_packing.hpp) read from stride-phase planes
// in place: the kernel for shallow inputs (fewer than 16 channels per group, which the direct
// kernel leaves out), such as the stems of ResNet (7x7 stride 2 over 3 channels) and MobileNetV2.
// Packing their patches (one strided, bounds-checked read per value and tap) took 40% of the
// stem's time.
//
// A work item is a block of RB output rows and MT output channels of one (image, group). It copies
// the input rows the block reads into a zero-padded window split by strides into SH x SW phase
// planes per channel, as the direct kernel does (c_conv_direct.cpp): output position
// q = (oh - oh0) * WPP + ow reads, for tap (c, kh, kw), the value at q + off(c, kh, kw) of the
// window, off a constant per k (a table in the source). So HPF_NR consecutive positions are HPF_NR
// consecutive values for every k, read in place as the microkernel's B row, with the output
// channels as its rows (A: the packed weights). A panel is HPF_NR positions of one output row
// (a row's last panel shorter; the WPP - OW positions past a row are not computed), and per panel
// and tile of HPF_MR channels the sum runs over all of K (slice after slice of the packed
// weights) in registers. A full tile over whole vectors is finished there (bias, epilogue as
// vectors) and stored straight to Y; the others go through a tile in memory, finished and stored
// row by row. (Panels across row ends, every tile through memory: MobileNetV2's 224x224 stem in a
// C harness 0.28 -> 0.19 ms.) Sums run in the weight's k order, as the reference's.
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit::conv {
namespace {
// The window of a block, about: a panel of positions reads a few rows of each plane (in L1), so the
// whole window may be larger, and its rows are copied fewer times (each block copies the
// (KH - 1) / SH rows its last output row reads below it again).
constexpr int64_t kWindowBytes = 128 * 1024;
constexpr int64_t kMaxWindowBytes = 256 * 1024;  // the window on the stack, at most
constexpr int64_t kMaxTaps = 4096;               // K: the offset table's entries
constexpr int64_t kSlack = 64 + 16;              // zeros past the window: a last panel's reads
int64_t plane_cols(const Shape& z) { return z.OW + (z.KW - 1) * z.DW / z.SW; }
int64_t plane_rows(const Shape& z, int64_t rows) { return rows + (z.KH - 1) * z.DH / z.SH; }
int64_t window_floats(const Shape& z, int64_t rows) { return z.CG * z.SH * z.SW * plane_rows(z, rows) * plane_cols(z); }
}  // namespace

bool phase_fits(const Shape& z) {
  // Shallow inputs only (deeper ones take the direct kernel), and at most an eighth of the
  // positions computed past the output rows' ends.
  return z.CG < 16 && z.KH * z.KW > 1 && z.CG * z.KH * z.KW <= kMaxTaps && plane_cols(z) * 7 <= z.OW * 8 &&
         window_floats(z, 1) * 4 <= kMaxWindowBytes;
}

Expected<GeneratedKernel> phase_rows(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                     int64_t max_rows, const std::string& head, const std::string& epi_ptrs,
                                     const std::string& name) {
  if (!phase_fits(z)) return Status::invalid("conv: the phase-plane kernel takes shallow inputs of more than one tap");
  const TensorDesc& X = spec.inputs[0];
  const int64_t KK = z.KH * z.KW, K = z.CG * KK, P = z.OH * z.OW, T = (z.MG + kGemmMR - 1) / kGemmMR;
  const int64_t WPP = plane_cols(z);
  // Output rows per block: the window within kWindowBytes, and at least 4 work items in all where
  // the rows allow (two threads share them).
  int64_t RB = z.OH;
  while (RB > 1 && window_floats(z, RB) * 4 > kWindowBytes) RB = (RB + 1) / 2;
  while (RB > 1 && z.N * z.G * ((z.OH + RB - 1) / RB) < 4) RB = (RB + 1) / 2;
  const int64_t RBn = (z.OH + RB - 1) / RB, RP = plane_rows(z, RB), PLANE = RP * WPP, CPLANE = z.SH * z.SW * PLANE;
  const auto [MB, MT] = row_blocks(z.MG, z.N * z.G * RBn, max_rows, kGemmMR);
  const char* xt = c_storage_type(X.dtype);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  std::ostringstream s;
  s << head << gemm_micro_source()
    // The microkernel with B row p at bp + boff[p] (HPF_NR values, any alignment), A packed
    // HPF_MR-interleaved, the tile HPF_NR wide; mr rows (a constant at each call), as
    // hpf_mm_micro_r.
    << "static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_tab(\n"
    << "    int mr, i64 kc, const float* restrict ap, const float* restrict bp, const i32* restrict boff,\n"
    << "    float* restrict acc) {\n"
    << "  hpf_vf c[HPF_MR][HPF_NV];\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int i = 0; i < HPF_MR; ++i)\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int v = 0; v < HPF_NV; ++v)\n"
    << "      if (i < mr) c[i][v] = *(const hpf_vf*)(acc + i * HPF_NR + v * HPF_VW);\n"
    << "  for (i64 p = 0; p < kc; ++p) {\n"
    << "    const float* restrict b0 = bp + boff[p];\n"
    << "    hpf_vf b[HPF_NV];\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int v = 0; v < HPF_NV; ++v) b[v] = *(const hpf_vfu*)(b0 + v * HPF_VW);\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int i = 0; i < HPF_MR; ++i) {\n"
    << "      if (i < mr) {\n"
    << "        const float a = ap[p * HPF_MR + i];\n"
    << "#pragma clang loop unroll(full)\n"
    << "        for (int v = 0; v < HPF_NV; ++v) c[i][v] += a * b[v];\n"
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int i = 0; i < HPF_MR; ++i)\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int v = 0; v < HPF_NV; ++v)\n"
    << "      if (i < mr) *(hpf_vf*)(acc + i * HPF_NR + v * HPF_VW) = c[i][v];\n"
    << "}\n"
    // The sums of a full tile over its first nv vectors (a constant at each call) added to c, in
    // registers, for a panel finished there.
    << "static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_tab_sums(\n"
    << "    int nv, i64 kc, const float* restrict ap, const float* restrict bp, const i32* restrict boff,\n"
    << "    hpf_vf c[HPF_MR][HPF_NV]) {\n"
    << "  for (i64 p = 0; p < kc; ++p) {\n"
    << "    const float* restrict b0 = bp + boff[p];\n"
    << "    hpf_vf b[HPF_NV];\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int v = 0; v < HPF_NV; ++v)\n"
    << "      if (v < nv) b[v] = *(const hpf_vfu*)(b0 + v * HPF_VW);\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int i = 0; i < HPF_MR; ++i) {\n"
    << "      const float a = ap[p * HPF_MR + i];\n"
    << "#pragma clang loop unroll(full)\n"
    << "      for (int v = 0; v < HPF_NV; ++v)\n"
    << "        if (v < nv) c[i][v] += a * b[v];\n"
    << "    }\n"
    << "  }\n"
    << "}\n"
    // A ragged tile (64 channels: 10 x 6 + 4) exactly, in pieces of 4, 2 and 1 rows.
    << "static inline __attribute__((always_inline, min_vector_width(512))) void hpf_mm_micro_tab_any(\n"
    << "    i64 mr, i64 kc, const float* restrict ap, const float* restrict bp, const i32* restrict boff,\n"
    << "    float* restrict acc) {\n"
    << "  if (mr == HPF_MR) {\n"
    << "    hpf_mm_micro_tab(HPF_MR, kc, ap, bp, boff, acc);\n"
    << "    return;\n"
    << "  }\n"
    << "  if (mr & 4) {\n"
    << "    hpf_mm_micro_tab(4, kc, ap, bp, boff, acc);\n"
    << "    ap += 4;\n"
    << "    acc += 4 * HPF_NR;\n"
    << "  }\n"
    << "  if (mr & 2) {\n"
    << "    hpf_mm_micro_tab(2, kc, ap, bp, boff, acc);\n"
    << "    ap += 2;\n"
    << "    acc += 2 * HPF_NR;\n"
    << "  }\n"
    << "  if (mr & 1) hpf_mm_micro_tab(1, kc, ap, bp, boff, acc);\n"
    << "}\n";
  // Window offset of each k = (c, kh, kw), the weight's order.
  s << "static const i32 hpf_conv_koff[" << K << "] = {";
  for (int64_t k = 0; k < K; ++k) {
    const int64_t c = k / KK, ty = (k % KK) / z.KW * z.DH, tx = (k % z.KW) * z.DW;
    s << (k ? "," : "") << (k % 16 ? "" : "\n  ")
      << c * CPLANE + ((ty % z.SH) * z.SW + tx % z.SW) * PLANE + (ty / z.SH) * WPP + tx / z.SW;
  }
  const std::string wt = "Wt + g * " + L(T * kGemmMR * K) + " + (ic + ir) * " + L(K) + " + pc * HPF_MR";
  // A full tile over whole vectors of a panel is finished in registers (tile_finish_vectors) and
  // stored straight to Y; the other tiles, or every tile where the epilogue has no vector form or
  // Y is not FP32, through acc.
  auto finish = [&](const std::string& nv) {
    return tile_finish_vectors(spec, kinds, has_b, z.M, P, "g * " + L(z.MG) + " + ic + ir", "yrow", nv);
  };
  std::string fused;
  if (!finish("HPF_NV").empty()) {
    // nv: the panel's vectors, a constant in each copy (the last panel of a row may have fewer).
    auto panel = [&](const std::string& nv) {
      return "          {\n"
             "            hpf_vf c[HPF_MR][HPF_NV];\n"
             "#pragma clang loop unroll(full)\n"
             "            for (int i = 0; i < HPF_MR; ++i)\n"
             "#pragma clang loop unroll(full)\n"
             "              for (int q = 0; q < HPF_NV; ++q) c[i][q] = (hpf_vf){};\n"
             "            for (i64 pc = 0; pc < " + L(K) + "; pc += HPF_KC) {\n"
             "              const i64 kc = " + L(K) + " - pc < HPF_KC ? " + L(K) + " - pc : HPF_KC;\n"
             "              hpf_mm_micro_tab_sums(" + nv + ", kc, " + wt + ", win + q0, hpf_conv_koff + pc, c);\n"
             "            }\n" +
             finish(nv) +
             "            continue;\n"
             "          }\n";
    };
    fused = "        if (mr == HPF_MR && len % HPF_VW == 0) {\n"
            "          const i64 nv = len / HPF_VW;\n"
            "          if (nv == HPF_NV)\n" + panel("HPF_NV") +
            "          if (nv == 3)\n" + panel("3") +
            "          if (nv == 2)\n" + panel("2") + panel("1") +
            "        }\n";
  }
  s << "};\n\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << kernel_args(spec, "float", has_b, epi_ptrs)
    << "  float win[" << z.CG * CPLANE + kSlack << "] __attribute__((aligned(64)));\n"
    << "  for (i64 x = " << z.CG * CPLANE << "; x < " << z.CG * CPLANE + kSlack << "; ++x) win[x] = 0.0f;\n"
    << "  float acc[HPF_MR * HPF_NR] __attribute__((aligned(64)));\n"
    // Row blocks innermost: a range continues down the same image's rows.
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 rb = w % " << L(RBn) << ", mb = (w / " << L(RBn) << ") % " << L(MB) << ", g = (w / " << L(RBn * MB)
    << ") % " << L(z.G) << ", n = w / " << L(RBn * MB * z.G) << ";\n"
    << "    const i64 oh0 = rb * " << L(RB) << ", rows = " << L(z.OH) << " - oh0 < " << L(RB) << " ? " << L(z.OH)
    << " - oh0 : " << L(RB) << ";\n"
    << channel_block(z.MG, MT)
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(z.H * z.W) << ";\n"
    << fill_window(z, xt, X.dtype, RP * z.SH, WPP, PLANE, CPLANE)
    // Panels of HPF_NR positions of one output row (the last of a row shorter), so that a panel's
    // outputs are a run of Y: position q0 + j of the window is output (oh0 + ol, ow0 + j).
    << "    for (i64 ol = 0; ol < rows; ++ol)\n"
    << "      for (i64 ow0 = 0; ow0 < " << L(z.OW) << "; ow0 += HPF_NR) {\n"
    << "        const i64 q0 = ol * " << L(WPP) << " + ow0, len = " << L(z.OW) << " - ow0 < HPF_NR ? " << L(z.OW)
    << " - ow0 : HPF_NR;\n"
    << "        const i64 yrow = (oh0 + ol) * " << L(z.OW) << " + ow0;\n"
    // The next panel's output position (-1: none in this block).
    << "        const i64 ny = ow0 + HPF_NR < " << L(z.OW) << " ? yrow + HPF_NR : ol + 1 < rows ? yrow - ow0 + " << L(z.OW)
    << " : -1;\n"
    << "        for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
    << "        const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
    // The tile's outputs of the next panel are fetched while this one computes: short runs in
    // planes far apart, which the hardware prefetchers do not follow (ResNet-50's stem: 3.2 MB
    // of output; 1.31 -> 1.19 ms where it is not in cache).
    << "        if (ny >= 0)\n"
    << "          for (i64 ii = 0; ii < mr; ++ii)\n"
    << "            hpf_prefetch_w(Y + (n * " << L(z.M) << " + g * " << L(z.MG) << " + ic + ir + ii) * " << L(P)
    << " + ny, HPF_NR * sizeof(*Y));\n"
    << fused
    << "        for (i64 x = 0; x < HPF_MR * HPF_NR; ++x) acc[x] = 0.0f;\n"
    << "        for (i64 pc = 0; pc < " << L(K) << "; pc += HPF_KC) {\n"
    << "          const i64 kc = " << L(K) << " - pc < HPF_KC ? " << L(K) << " - pc : HPF_KC;\n"
    << "          hpf_mm_micro_tab_any(mr, kc, " << wt << ", win + q0, hpf_conv_koff + pc, acc);\n"
    << "        }\n"
    << "        for (i64 ii = 0; ii < mr; ++ii) {\n"
    << "          const i64 mo = g * " << L(z.MG) << " + ic + ir + ii;\n"
    << "          const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + yrow;\n"
    << "          float* restrict a = acc + ii * HPF_NR;\n"
    << "          (void)yo;\n";
  s << finish_store(spec, fin, "(Y + yo)", "a", "len")
    << "        }\n"
    << "        }\n"
    << "      }\n"
    << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, RB * z.OW * MT * K);
  return GeneratedKernel{name, s.str(), z.N * z.G * MB * RBn, std::max<int64_t>(1, (1 << 20) / per_item)};
}

}  // namespace hpf::jit::conv
