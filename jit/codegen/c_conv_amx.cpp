// Conv with BF16 input and BF16 weights packed in the "amx" layout (conv_packing.hpp) on AMX
// tiles: an implicit GEMM Y[m, p] = sum_k W[m, k] * X~[k, p] with k over taps, then channels,
// so that a pair of k (what TDPBF16PS multiplies per step) is two channels at one tap.
//
// A work item is one block of PX output pixels and up to MT output channels (blocks of 32) of one
// (image, group); PX and the slice depth SL come from the "tile" attribute (tiles_of below,
// chosen by autotuning; 64 and 256 by default). Per slice of SL k it packs X~ for its pixels as
// the tile unit reads B: a row of PX pixels per pair of k, each value a pair of channels, built
// straight from the two input rows (no intermediate copy) with masked vector copies: the pixel
// block splits into segments inside one output row, whose bounds are worked out once per (tap,
// segment) and serve every channel pair of the tap (stride 2 reads 32-bit words and keeps their
// low halves). Then per 32 rows x 32 pixels, 2 x 2 accumulator tiles over the slice's steps, A
// tiles streamed from the packed weights (1 KiB each, in order, prefetched ahead), B tiles read
// from the packed rows with a PX * 4 byte stride, kept in the FP32 tile between slices. Bias and
// epilogue are applied to the finished rows.
// Numerics: BF16 products exact, summed in FP32 by the tile unit (denormals read as zero).
//
// Elsewhere (a target without AMX-BF16) the same source sums the packed operands in FP32 with
// plain C: correct, not fast; the Session packs "amx" weights only for a device with AMX.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_packing.hpp"

namespace hpf::jit::conv {
namespace {
// The FP32 tile (output channels x pixels of a work item) is at most this many floats.
constexpr int64_t kMaxTile = 256 * 64;

// A tile configuration: "p<pixels>s<slice>", output pixels per work item (tiles of 16, at least
// two for the 2 x 2 accumulators) and k per packed slice (the slice's B: pixels * slice * 2
// bytes on the stack). The default is what the kernel is without a "tile" attribute.
struct Tiles {
  int64_t pixels = 64, slice = 256;
};
Expected<Tiles> tiles_of(const KernelSpec& spec) {
  Tiles t;
  auto it = spec.attrs.find("tile");
  if (it == spec.attrs.end()) return t;
  const auto* text = std::get_if<std::string>(&it->second);
  long long p = 0, k = 0;
  char end = 0;
  if (!text || std::sscanf(text->c_str(), "p%llds%lld%c", &p, &k, &end) != 2 || (p != 32 && p != 64 && p != 128) ||
      k < 32 || k > 1024 || k % 32)
    return Status::invalid("conv (amx): tile '" + (text ? *text : std::string("?")) +
                           "' is not p<32|64|128>s<k, a multiple of 32 up to 1024>");
  t.pixels = p;
  t.slice = k;
  return t;
}
}  // namespace

std::vector<std::string> amx_tile_variants() { return {"p64s256", "p32s256", "p64s512", "p128s256"}; }

Expected<GeneratedKernel> amx_gemm(const KernelSpec& spec, const Shape& z, const std::vector<int>& kinds, bool has_b,
                                   const std::string& head, const std::string& epi_ptrs, const std::string& name) {
  HPF_ASSIGN_OR_RETURN(Tiles tiles, tiles_of(spec));
  const int64_t PX = tiles.pixels, SL = tiles.slice, max_rows = std::min<int64_t>(256, kMaxTile / PX);
  const TensorDesc& Y = spec.outputs[0];
  const int64_t P = z.OH * z.OW, KK = z.KH * z.KW, CGP = (z.CG + 1) / 2 * 2, KT = conv_amx_depth(z.CG, KK);
  const int64_t RB = (z.MG + kConvAmxRows - 1) / kConvAmxRows, KS = KT / kConvAmxStep;
  // A flat plane (a 1x1 unit-stride unpadded Conv) makes a pixel block one segment.
  [[maybe_unused]] const auto [flat, H, W, OW, SH, SW, PH, PW] = plane_of(z);
  const int64_t PB = std::max<int64_t>(1, (P + PX - 1) / PX);
  const auto [MB, MT] = row_blocks(z.MG, z.N * z.G * PB, max_rows, kConvAmxRows);
  const int64_t HW = H * W, half = SL / 2;  // half: pairs per slice
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  const std::string hi = z.CG % 2 ? "(c0 + 2 * q + 1 < " + L(z.CG) + " ? (u32)xa[" + L(HW) + " + i] << 16 : 0u)"
                                  : "(u32)xa[" + L(HW) + " + i] << 16";
  const std::string hi_pw = z.CG % 2 ? "(c0 + 2 * q + 1 < " + L(z.CG) + " ? pv[t] << 16 : 0u)" : "pv[t] << 16";
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << head << "#if defined(__AMX_TILE__) && defined(__AMX_BF16__)\n#define HPF_CONV_AMX 1\n#endif\n"
    << (SW == 2 ? "typedef u32 hpf_u32p __attribute__((aligned(2), may_alias));\n" : "")
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const u16* restrict X = (const u16*)args[0];\n"
    << "  const u16* restrict Wt = (const u16*)args[1];\n";
  if (has_b)
    s << "  const " << c_storage_type(spec.inputs[2].dtype) << "* restrict B = (const "
      << c_storage_type(spec.inputs[2].dtype) << "*)args[2];\n";
  s << epi_ptrs << "  " << yt << "* restrict Y = (" << yt << "*)args[" << spec.inputs.size() << "];\n"
    << "  u32 bp[" << half * PX << "] __attribute__((aligned(64)));\n"
    << "  float acc[" << MT * PX << "] __attribute__((aligned(64)));\n"
    << "  i64 sj[" << PX + 1 << "], sl[" << PX + 1 << "], sh[" << PX + 1 << "], sw[" << PX + 1 << "];\n"
    << "#if defined(HPF_CONV_AMX)\n  hpf_amx_configure();\n#endif\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    // Pixel blocks innermost: a range continues the same output rows block after block.
    << "    const i64 pb = w % " << L(PB) << ", mb = (w / " << L(PB) << ") % " << L(MB) << ", g = (w / " << L(MB * PB)
    << ") % " << L(z.G) << ", n = w / " << L(MB * PB * z.G) << ";\n"
    << "    const i64 p0 = pb * " << L(PX) << ", nc = " << L(P) << " - p0 < " << L(PX) << " ? " << L(P)
    << " - p0 : " << L(PX) << ";\n"
    << channel_block(z.MG, MT)
    // Segments of the pixel block: inside one output row; past nc, zeros.
    << "    i64 ns = 0;\n"
    << "    for (i64 j = 0; j < " << L(PX) << ";) {\n"
    << "      i64 len = " << L(PX) << " - j;\n"
    << "      if (j < nc) {\n"
    << "        const i64 p = p0 + j, oh = p / " << L(OW) << ", ow = p % " << L(OW) << ";\n"
    << "        if (" << L(OW) << " - ow < len) len = " << L(OW) << " - ow;\n"
    << "        if (nc - j < len) len = nc - j;\n"
    << "        sh[ns] = oh * " << L(SH) << " - " << L(PH) << "; sw[ns] = ow * " << L(SW) << " - " << L(PW) << ";\n"
    << "      } else {\n"
    << "        sh[ns] = -(1LL << 40); sw[ns] = 0;\n"
    << "      }\n"
    << "      sj[ns] = j; sl[ns] = len; ++ns; j += len;\n"
    << "    }\n"
    << "    const u16* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(HW) << ";\n"
    << "#if !defined(HPF_CONV_AMX)\n"
    << "    for (i64 x = 0; x < " << L(MT * PX) << "; ++x) acc[x] = 0.0f;\n"
    << "#endif\n"
    << "    for (i64 pc = 0; pc < " << L(KT) << "; pc += " << L(SL) << ") {\n"
    << "      const i64 kc = " << L(KT) << " - pc < " << L(SL) << " ? " << L(KT) << " - pc : " << L(SL) << ";\n"
    // Pairs pp of the slice, a tap's run of channel pairs at a time.
    << "      for (i64 pp = 0; pp < kc / 2;) {\n"
    << "        const i64 k = pc + 2 * pp, r = k / " << L(CGP) << ", c0 = k % " << L(CGP) << ";\n"
    << "        if (r >= " << L(KK) << ") {  // past the taps: zero\n"
    << "          for (i64 q = pp; q < kc / 2; ++q)\n"
    << "            for (i64 j = 0; j < " << L(PX) << "; ++j) bp[q * " << L(PX) << " + j] = 0;\n"
    << "          break;\n"
    << "        }\n"
    << "        const i64 np = " << L(CGP) << " - c0 < kc - 2 * pp ? (" << L(CGP) << " - c0) / 2 : kc / 2 - pp;\n"
    << "        const i64 dh = (r / " << L(z.KW) << ") * " << L(z.DH) << ", dw = (r % " << L(z.KW) << ") * " << L(z.DW)
    << ";\n"
    << "        for (i64 e = 0; e < ns; ++e) {\n"
    << "          u32* restrict d0 = bp + pp * " << L(PX) << " + sj[e];\n"
    << "          const i64 len = sl[e], ih = sh[e] + dh, iw0 = sw[e] + dw;\n"
    << "          i64 tlo = 0, thi = 0;\n"
    << "          if ((unsigned long long)ih < (unsigned long long)" << L(H) << ") {\n"
    // Columns t with iw0 + t*SW inside [0, W): [tlo, thi).
    << "            tlo = iw0 >= 0 ? 0 : (-iw0 + " << L(SW - 1) << ") / " << L(SW) << ";\n"
    << "            thi = " << L(W) << " - 1 - iw0 < 0 ? 0 : (" << L(W) << " - 1 - iw0) / " << L(SW) << " + 1;\n"
    << "            if (tlo > len) tlo = len;\n"
    << "            if (thi > len) thi = len;\n"
    << "            if (thi < tlo) thi = tlo;\n"
    << "          }\n"
    << "          const u16* restrict x0 = xg + c0 * " << L(HW) << " + ih * " << L(W) << ";\n"
    << "          for (i64 q = 0; q < np; ++q) {\n"
    << "            const u16* restrict xa = x0 + 2 * q * " << L(HW) << ";\n"
    << "            u32* restrict d = d0 + q * " << L(PX) << ";\n"
    << "            for (i64 t = 0; t < tlo; ++t) d[t] = 0;\n"
    << "            i64 t = tlo;\n";
  // Stride 2: the values are the low halves of 32-bit words, read as such (a vector load and a
  // mask, not a gather); the last one alone, as its word would reach past the row.
  if (SW == 2)
    s << "            const hpf_u32p* restrict pw = (const hpf_u32p*)(xa + iw0);\n"
      << "            const hpf_u32p* restrict pv = (const hpf_u32p*)(xa + " << L(HW) << " + iw0);\n"
      << "#pragma clang loop vectorize(enable) vectorize_width(16) vectorize_predicate(enable) interleave_count(1)\n"
      << "            for (; t + 1 < thi; ++t) d[t] = (pw[t] & 0xffffu) | " << hi_pw << ";\n";
  // Short runs: masked vectors (AVX-512), not a scalar remainder.
  s << "#pragma clang loop vectorize(enable) vectorize_width(16) vectorize_predicate(enable) interleave_count(1)\n"
    << "            for (; t < thi; ++t) {\n"
    << "              const i64 i = iw0 + t * " << L(SW) << ";\n"
    << "              d[t] = (u32)xa[i] | " << hi << ";\n"
    << "            }\n"
    << "            for (i64 t = thi; t < len; ++t) d[t] = 0;\n"
    << "          }\n"
    << "        }\n"
    << "        pp += np;\n"
    << "      }\n"
    << "#if defined(HPF_CONV_AMX)\n"
    << "      const i64 nt = (nc + 31) & ~31LL;\n"
    << "      for (i64 ir = 0; ir < mc; ir += 32) {\n"
    << "        const u16* restrict wa = Wt + ((g * " << L(RB) << " + (ic + ir) / 32) * " << L(KS) << " + pc / 32) * 1024;\n"
    << "        for (i64 jp = 0; jp < nt; jp += 32) {\n"
    << "          float* ct = acc + ir * " << L(PX) << " + jp;\n"
    << "          if (pc == 0) {\n"
    << "            __builtin_ia32_tilezero(0); __builtin_ia32_tilezero(1);\n"
    << "            __builtin_ia32_tilezero(2); __builtin_ia32_tilezero(3);\n"
    << "          } else {\n"
    << "            __builtin_ia32_tileloadd64(0, ct, " << L(PX * 4) << ");\n"
    << "            __builtin_ia32_tileloadd64(1, ct + 16, " << L(PX * 4) << ");\n"
    << "            __builtin_ia32_tileloadd64(2, ct + " << L(16 * PX) << ", " << L(PX * 4) << ");\n"
    << "            __builtin_ia32_tileloadd64(3, ct + " << L(16 * PX + 16) << ", " << L(PX * 4) << ");\n"
    << "          }\n"
    << "          const u32* b0 = bp + jp;\n"
    << "          for (i64 st = 0; st < kc / 32; ++st) {\n"
    // The weights come from memory once per row block (the second pixel block finds them in
    // cache): fetched 8 steps ahead, which the tile loads alone do not get from the prefetchers.
    << "            if (jp == 0) hpf_prefetch_r(wa + (st + 8) * 1024, 2048);\n"
    << "            __builtin_ia32_tileloadd64(4, wa + st * 1024, 64);\n"
    << "            __builtin_ia32_tileloadd64(5, wa + st * 1024 + 512, 64);\n"
    << "            __builtin_ia32_tileloadd64(6, b0 + st * " << L(16 * PX) << ", " << L(PX * 4) << ");\n"
    << "            __builtin_ia32_tileloadd64(7, b0 + st * " << L(16 * PX) << " + 16, " << L(PX * 4) << ");\n"
    << "            __builtin_ia32_tdpbf16ps(0, 4, 6); __builtin_ia32_tdpbf16ps(1, 4, 7);\n"
    << "            __builtin_ia32_tdpbf16ps(2, 5, 6); __builtin_ia32_tdpbf16ps(3, 5, 7);\n"
    << "          }\n"
    << "          __builtin_ia32_tilestored64(0, ct, " << L(PX * 4) << ");\n"
    << "          __builtin_ia32_tilestored64(1, ct + 16, " << L(PX * 4) << ");\n"
    << "          __builtin_ia32_tilestored64(2, ct + " << L(16 * PX) << ", " << L(PX * 4) << ");\n"
    << "          __builtin_ia32_tilestored64(3, ct + " << L(16 * PX + 16) << ", " << L(PX * 4) << ");\n"
    << "        }\n"
    << "      }\n"
    << "#else\n"
    << "      for (i64 ii = 0; ii < mc; ++ii) {\n"
    << "        const i64 m = ic + ii;\n"
    << "        const u16* restrict wr = Wt + ((g * " << L(RB) << " + m / 32) * " << L(KS) << " + pc / 32) * 1024 + (m % 32) * 32;\n"
    << "        float* restrict a = acc + ii * " << L(PX) << ";\n"
    << "        for (i64 q = 0; q < kc; ++q) {\n"
    << "          const float wv = hpf_bf16_f32_raw(wr[(q / 32) * 1024 + q % 32]);\n"
    << "          const u32* restrict bq = bp + (q / 2) * " << L(PX) << ";\n"
    << "          for (i64 j = 0; j < " << L(PX) << "; ++j)\n"
    << "            a[j] += wv * hpf_bf16_f32_raw((u16)(bq[j] >> (16 * (q & 1))));\n"
    << "        }\n"
    << "      }\n"
    << "#endif\n"
    << "    }\n"
    << "    for (i64 ii = 0; ii < mc; ++ii) {\n"
    << "      const i64 mo = g * " << L(z.MG) << " + ic + ii;\n"
    << "      const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + p0;\n"
    << "      float* restrict a = acc + ii * " << L(PX) << ";\n"
    << "      (void)yo;\n"
    << finish_store(spec, fin, "(Y + yo)", "a", "nc")
    << "      if (pb + 1 < " << L(PB) << ") hpf_prefetch_w(Y + yo + " << L(PX) << ", " << L(PX) << " * sizeof(*Y));\n"
    << "    }\n  }\n"
    << "#if defined(HPF_CONV_AMX)\n  __builtin_ia32_tilerelease();\n#endif\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), z.N * z.G * PB * MB, 1};
}

}  // namespace hpf::jit::conv
