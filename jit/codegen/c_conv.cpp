// Conv (2-D NCHW, and 1-D as 2-D with a unit H axis; groups incl. depthwise, strides, dilations,
// pads/auto_pad, optional bias, an epilogue) and inference BatchNormalization in C.
//
// Conv is an implicit GEMM per group: Y[m, p] = sum_k W[m, k] * X~[k, p] over output pixels p
// and k = (input channel, kernel row, kernel column), the weight's own row-major order, so the
// terms are summed in the reference's order (channel, then taps row-major; FP32 contraction
// aside). A work item is one block of HPF_NC output pixels and up to MT output channels of one
// (image, group); per HPF_KC-deep slice of k it packs X~ for its pixels into the microkernel's
// NR-wide panels (zeros where a tap reads padding), converting 16-bit inputs to FP32 as it
// packs, and runs the shared FP32 microkernel (c_gemm_micro.hpp) with A read straight from FP32
// weights (16-bit weights are converted into a small panel per slice). A pixel block splits into
// segments, each inside one output row and one panel, so the packing copies runs of a row with
// no per-value bounds test. A 1x1 convolution with unit strides and no padding is a plain GEMM
// (pixels of the image taken as one row). Bias and epilogue are applied to the finished FP32
// tile before the store. BF16 inputs and weights also carry a second form, selected by the
// preprocessor where the BF16 pair microkernel is preferred (HPF_BF16_DOT): k packed in pairs
// as stored, multiplied by vdpbf16ps.
//
// BF16 input with BF16 weights packed in the "amx" layout runs on AMX tiles (c_conv_amx.cpp).
//
// Depthwise (one input channel per group) runs a direct kernel instead: a block of output rows
// of one channel per work item (the whole plane when it is small), the input rows it reads
// copied (converted) once into zero-padded stack rows (with a column stride S, each row split
// into S phases, so that taps read contiguous values), then blocks of 4 output rows (AVX-512;
// 8 where a row is one vector) by up to 32 columns accumulate over the taps in registers, each
// input vector loaded once for all the rows it feeds, and are finished there where the epilogue
// has a vector form.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/conv_packing.hpp"

namespace hpf::jit {

namespace conv {

std::vector<std::string> gemm_tile_variants() { return {"r240", "r120", "r48"}; }

Expected<Finish> finish_value(const KernelSpec& lifted, const std::vector<int>& kinds, int bias,
                              const std::string& yoff, const std::string& j, const std::string& after_bias) {
  Finish f;
  if (bias >= 0) {
    f.setup = "const float bias = " + c_load(lifted.inputs[bias].dtype, "B[mo]") + ";\n";
    f.per_value = "v += bias;\n";
  }
  f.per_value += after_bias;
  // Operands constant along the row (one value, or one per output channel) are read once, in the
  // setup: the operand pointers are locals, whose restrict LLVM does not take, so where the output
  // has an operand's type (a BF16 Clip's bounds in front of a BF16 store) the loop read and
  // converted them again for every vector.
  std::set<int> hoisted;
  HPF_ASSIGN_OR_RETURN(std::string epi, c_epilogue(lifted, "v", [&](int k) {
    const int kind = kinds[k];
    const std::string idx = kind == 0 ? "0" : kind == 1 ? "mo" : yoff + " + " + j;
    const std::string load = c_load(lifted.inputs[k].dtype, "P" + std::to_string(k) + "[" + idx + "]");
    if (kind > 1) return load;
    const std::string name = "pv" + std::to_string(k);
    if (hoisted.insert(k).second) f.setup += "const float " + name + " = " + load + ";\n";  // before a use there
    return name;
  }, &f.setup));
  f.per_value += epi;
  return f;
}

std::string channel_block(int64_t MG, int64_t MT) {
  return "    const i64 ic = mb * " + L(MT) + ", mc = " + L(MG) + " - ic < " + L(MT) + " ? " + L(MG) + " - ic : " + L(MT) +
         ";\n";
}

std::string tile_finish_vectors(const KernelSpec& spec, const std::vector<int>& kinds, bool has_b, int64_t M,
                                int64_t plane, const std::string& mo0, const std::string& at, const std::string& nv) {
  if (spec.outputs[0].dtype != DType::F32 || (has_b && spec.inputs[2].dtype != DType::F32)) return "";
  auto epi = c_epilogue_vector(spec, "v", [&](int k) {
    return kinds[k] == 0 ? "P" + std::to_string(k) + "[0]"
         : kinds[k] == 1 ? "P" + std::to_string(k) + "[mo]"
                         : "*(const hpf_vfu*)(P" + std::to_string(k) + " + yo + q * HPF_VW)";
  });
  if (!epi.ok()) return "";
  return "#pragma clang loop unroll(full)\n"
         "for (int i = 0; i < HPF_MR; ++i) {\n"
         "  const i64 mo = " + mo0 + " + i;\n"
         "  const i64 yo = (n * " + L(M) + " + mo) * " + L(plane) + " + " + at + ";\n"
         "  (void)mo;\n" +
         (has_b ? "  const float bias = B[mo];\n" : "") +
         "#pragma clang loop unroll(full)\n"
         "  for (int q = 0; q < HPF_NV; ++q) {\n"
         "    if (q >= " + nv + ") continue;\n"
         "    hpf_vf v = c[i][q];\n" +
         (has_b ? "    v += bias;\n" : "") + *epi +
         "    *(hpf_vfu*)(Y + yo + q * HPF_VW) = v;\n"
         "  }\n"
         "}\n";
}

std::string prefetch_share(const std::string& base, const std::string& lines, const std::string& tile,
                           const std::string& tiles, const std::string& indent) {
  return indent + "for (i64 per = ((" + lines + ") + (" + tiles + ") - 1) / (" + tiles + "), l = (" + tile +
         ") * per; l < ((" + tile + ") + 1) * per && l < (" + lines + "); ++l)\n" + indent +
         "  __builtin_prefetch((const char*)(" + base + ") + l * 64, 0, 2);\n";
}

std::string fill_window(const Shape& z, const char* xt, DType x, int64_t rows_y, int64_t wpp, int64_t plane,
                        int64_t cplane) {
  std::ostringstream s;
  s << "    for (i64 c = 0; c < " << L(z.CG) << "; ++c)\n"
    << "      for (i64 y = 0; y < " << L(rows_y) << "; ++y) {\n"
    << "        const i64 ih = oh0 * " << L(z.SH) << " - " << L(z.PH) << " + y;\n"
    << "        const int in = (unsigned long long)ih < " << L(z.H) << ";\n"
    << "        const " << xt << "* restrict src = xg + c * " << L(z.H * z.W) << " + (in ? ih : 0) * " << L(z.W) << ";\n"
    << "        for (i64 pw = 0; pw < " << L(z.SW) << "; ++pw) {\n"
    << "          float* restrict d = win + c * " << L(cplane) << " + ((y % " << L(z.SH) << ") * " << L(z.SW)
    << " + pw) * " << L(plane) << " + (y / " << L(z.SH) << ") * " << L(wpp) << ";\n"
    // Columns col with iw = col * SW + pw - PW inside [0, W): [lo, hi), zeros around them.
    << "          const i64 o = pw - " << L(z.PW) << ";\n"
    << "          i64 lo = o >= 0 ? 0 : (-o + " << L(z.SW - 1) << ") / " << L(z.SW) << ";\n"
    << "          i64 hi = " << L(z.W) << " - 1 - o < 0 ? 0 : (" << L(z.W) << " - 1 - o) / " << L(z.SW) << " + 1;\n"
    << "          if (!in) lo = hi = 0;\n"
    << "          if (hi > " << L(wpp) << ") hi = " << L(wpp) << ";\n"
    << "          if (lo > hi) lo = hi;\n"
    << "          for (i64 col = 0; col < lo; ++col) d[col] = 0.0f;\n"
    << "          for (i64 col = lo; col < hi; ++col) d[col] = " << c_load_operand(x, "src[col * " + L(z.SW) + " + o]") << ";\n"
    << "          for (i64 col = hi; col < " << L(wpp) << "; ++col) d[col] = 0.0f;\n"
    << "        }\n"
    << "      }\n";
  return s.str();
}

const char* tile_cols_source() {
  static const std::string text = [] {
    // Stage d swaps bit d of the row index with bit d of the column index: rows r and r + d (r
    // without bit d) take columns j without bit d from row r, those with it from row r + d.
    std::ostringstream s;
    s << "\n#if defined(__AVX512F__)\n"
      << "static inline __attribute__((always_inline, min_vector_width(512))) void hpf_tile_cols(\n"
      << "    const float* restrict src, i64 ni, float* restrict dst, i64 ldd) {\n"
      << "  for (i64 i0 = 0; i0 < ni; i0 += 16)\n"
      << "    for (int j0 = 0; j0 < 64; j0 += 16) {\n"
      << "      hpf_vf r[16], t[16];\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int i = 0; i < 16; ++i) r[i] = *(const hpf_vf*)(src + (i0 + i) * 64 + j0);\n";
    for (int d = 8; d >= 1; d /= 2) {
      std::string lo, hi;
      for (int j = 0; j < 16; ++j) {
        lo += (j ? ", " : "") + std::to_string(j & d ? 16 + j - d : j);
        hi += (j ? ", " : "") + std::to_string(j & d ? 16 + j : j + d);
      }
      for (int r = 0; r < 16; ++r) {
        if (r & d) continue;
        s << "      t[" << r << "] = __builtin_shufflevector(r[" << r << "], r[" << r + d << "], " << lo << ");\n"
          << "      t[" << r + d << "] = __builtin_shufflevector(r[" << r << "], r[" << r + d << "], " << hi << ");\n";
      }
      s << "#pragma clang loop unroll(full)\n      for (int i = 0; i < 16; ++i) r[i] = t[i];\n";
    }
    s << "#pragma clang loop unroll(full)\n"
      << "      for (int j = 0; j < 16; ++j) *(hpf_vfu*)(dst + (j0 + j) * ldd + i0) = r[j];\n"
      << "    }\n"
      << "}\n#else\n"
      << "static inline void hpf_tile_cols(const float* restrict src, i64 ni, float* restrict dst, i64 ldd) {\n"
      << "  for (i64 j = 0; j < 64; ++j)\n"
      << "    for (i64 i = 0; i < ni; ++i) dst[j * ldd + i] = src[i * 64 + j];\n"
      << "}\n#endif\n";
    return s.str();
  }();
  return text.c_str();
}

std::string kernel_args(const KernelSpec& spec, const char* wt, bool has_b, const std::string& epi_ptrs) {
  const char* xt = c_storage_type(spec.inputs[0].dtype);
  const char* yt = c_storage_type(spec.outputs[0].dtype);
  std::ostringstream s;
  s << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  const " << wt << "* restrict Wt = (const " << wt << "*)args[1];\n";
  if (has_b)
    s << "  const " << c_storage_type(spec.inputs[2].dtype) << "* restrict B = (const "
      << c_storage_type(spec.inputs[2].dtype) << "*)args[2];\n";
  s << epi_ptrs << "  " << yt << "* restrict Y = (" << yt << "*)args[" << spec.inputs.size() << "];\n";
  return s.str();
}

std::string store_row(const KernelSpec& spec, const std::string& dst, const std::string& row, const std::string& n) {
  const DType t = spec.outputs[0].dtype;
  // An epilogue whose last step rounds to BF16 leaves values BF16 holds exactly: their top halves.
  if (t == DType::BF16 && !spec.epilogue.empty() && spec.epilogue.back().dtype == DType::BF16)
    return "for (i64 jj = 0; jj < " + n + "; ++jj) " + dst + "[jj] = (u16)(hpf_bits(" + row + "[jj]) >> 16);\n";
  if (t == DType::BF16) return "hpf_store_bf16_row(" + dst + ", " + row + ", " + n + ");\n";
  return "for (i64 jj = 0; jj < " + n + "; ++jj) " + dst + "[jj] = " + c_store(t, row + "[jj]") + ";\n";
}

std::string finish_store(const KernelSpec& spec, const Finish& fin, const std::string& dst, const std::string& row,
                         const std::string& n) {
  const DType t = spec.outputs[0].dtype;
  // An epilogue whose last step rounds to BF16 stores the top halves in the same pass (finished
  // in the row, then stored by a second loop, MobileNetV2's INT8 112x112 16 -> 96 Conv with a BF16
  // Clip ran 0.93-0.95 ms in a C harness, 0.85-0.88 in one pass; with an FP32 output 0.56-0.58).
  const bool bf16_top = t == DType::BF16 && !spec.epilogue.empty() && spec.epilogue.back().dtype == DType::BF16;
  if (fin.per_value.empty() || (t == DType::BF16 && !bf16_top))
    return fin.loop(row, n) + "      " + store_row(spec, dst, row, n);
  const std::string stored = bf16_top ? "(u16)(hpf_bits(v) >> 16)" : c_store(t, "v");
  // Whole vectors and one masked (AVX-512) for the rest, not a scalar remainder: the rows are
  // short runs (a 7x7 map's 49 pixels, a stem's panel of a row), whose remainders the default (4
  // interleaved 8-wide vectors) left to up to 31 scalar iterations. MobileNetV2's 224x224 stem in
  // a C harness, every tile finished here: 0.341 -> 0.303 ms (5 alternations); ResNet-50's
  // per-layer profile sums with one thread 54.9 -> 53.7 ms (3 alternations; its 7x7 3x3 layers
  // 0.2 ms faster each). assume_safety: the output may be written over a per-output operand
  // (c_in_place_input), read at the index it stores; a runtime overlap check would send such a
  // loop to its scalar form. Masked with AVX-512 only: AVX2 has no store mask but vmaskmovps,
  // which a predicated loop runs on every iteration, and on Zen 3 that store is slow (an int8
  // Conv 28x28 32->192 with its epilogue in a C harness: 0.221 -> 0.108 ms without the predicate;
  // the remainder then runs as scalars).
  return "      {\n" + fin.setup +
         "#if defined(__AVX512F__)\n"
         "#pragma clang loop vectorize(assume_safety) vectorize_width(16) vectorize_predicate(enable) interleave_count(1)\n"
         "#else\n"
         "#pragma clang loop vectorize(assume_safety) vectorize_width(8) interleave_count(1)\n"
         "#endif\n"
         "      for (i64 jj = 0; jj < " + n + "; ++jj) {\n        float v = " + row + "[jj];\n" +
         fin.per_value + "        " + dst + "[jj] = " + stored + ";\n      }\n      }\n";
}

}  // namespace conv

namespace {
// Output channels per GEMM tile: the FP32 tile (MT x HPF_NC) stays under 64 KiB of stack.
constexpr int64_t kMaxTileRows = 240;
// The depthwise kernel's padded input rows on the stack (bytes); wider rows take the GEMM path.
constexpr int64_t kMaxDepthwiseRows = 128 * 1024;
// The rows a depthwise work item copies, at most (unless one output row needs more).
constexpr int64_t kDepthwiseBlock = 24 * 1024;
// Input rows `rows` consecutive output rows of a depthwise Conv read.
int64_t depthwise_rows(const conv::Shape& z, int64_t rows) { return (rows - 1) * z.SH + (z.KH - 1) * z.DH + 1; }
// The implicit GEMM packs through an offset table below this output row length, for kernels of
// up to this many taps (the table is taps x HPF_NC 32-bit offsets on the stack).
constexpr int64_t kTableRowsBelow = 32;
constexpr int64_t kMaxTableTaps = 64;
// The deepest K the rows pointwise kernel copies a ragged (or 16-bit) pixel block for: its
// K x 64 FP32 panel on the stack (256 KiB, the direct kernel's window budget); deeper ones take
// the implicit GEMM.
constexpr int64_t kPointwiseRowsDepth = 1024;
// Work items of the rows-layout pointwise kernel, at least (channel blocks split further): the
// threads take items one at a time, and a layer of few, large items ends with one thread alone.
constexpr int64_t kPointwiseMinItems = 16;
// Pixel tiles (of HPF_MR) per work item of the cols pointwise kernel: its FP32 tile is 6 x this
// x 64 (twice 54 KiB on the stack, with its transposition). A 14x14 map's 33 tiles make one
// block, so a slice of weights is read once for all its pixels, not once per block of 16 tiles:
// ResNet-50's 14x14 256->1024 in a C harness 0.74 -> 0.69 ms with its operands out of cache,
// 1024->256 0.65 -> 0.60; the whole model 59.3 -> 58.5 ms with one thread, 33.6 -> 33.1 with two
// (4 and 5 alternations).
constexpr int64_t kPointwiseTiles = 36;
// The cols pointwise kernel's shorter K slice, and the L1 bytes its input and weight slices may
// take together to use it (of 48 KiB; the tile's sums need the rest).
constexpr int64_t kPointwiseHalfKC = 64;
constexpr int64_t kPointwiseL1Budget = 40 << 10;

using conv::Finish;
using conv::channel_block;
using conv::finish_value;
using conv::round_up;
using conv::store_row;
using ConvShape = conv::Shape;

// The C statements decoding work item `w` of the "rows" GEMM kernels: the block `mb` of MT output
// channels (ic, mc) innermost, then the pixel block `pb` (HPF_NC of the P output pixels from p0,
// nc of them real), the group g and the image n. A thread runs a contiguous chunk of items
// (ThreadPool), so with channel blocks innermost two threads split the pixels: each reads only
// its half of the input, which the previous layer's same thread wrote (ResNet-50 FP32, two
// threads, 5 alternating runs: 31.3 -> 29.9 ms; its 28x28 512->128 layers 0.42 -> 0.33 ms; one
// thread the same within noise). Consecutive items of a block of channels are MB apart: the
// kernels prefetch the next pixel block's output lines for writing, the hardware prefetchers
// follow the input rows.
// Where a channel's row of P pixels is not whole cache lines (P % 16: 14x14 and 7x7 maps), the
// pixel blocks of two threads would meet inside a line of every output row, which both then write
// (ping-ponging it between their caches); there the pixel blocks are innermost (`pixels_inner`),
// so that two threads split the channels, at rows' boundaries (MobileNetV2's 14x14 64->384 layer
// with two threads in a C harness 0.046 ms, 0.035 with each thread's rows in a buffer of its own).
std::string pixel_item(const ConvShape& z, int64_t PB, int64_t MB, int64_t MT, int64_t P, bool pixels_inner = false) {
  const std::string order = pixels_inner ? "    const i64 pb = w % " + L(PB) + ", mb = (w / " + L(PB) + ") % " + L(MB)
                                         : "    const i64 mb = w % " + L(MB) + ", pb = (w / " + L(MB) + ") % " + L(PB);
  return order + ", g = (w / " + L(MB * PB) +
         ") % " + L(z.G) + ", n = w / " + L(MB * PB * z.G) + ";\n" + "    const i64 p0 = pb * HPF_NC, nc = " + L(P) +
         " - p0 < HPF_NC ? " + L(P) + " - p0 : HPF_NC;\n" + channel_block(z.MG, MT);
}

// Output channels per work item of the "rows" kernels: at most kMaxTileRows, or what the "tile"
// attribute "r<rows>" says (a multiple of the microkernel's rows; autotuning picks among
// conv::gemm_tile_variants()).
Expected<int64_t> tile_rows(const KernelSpec& spec) {
  const auto it = spec.attrs.find("tile");
  if (it == spec.attrs.end()) return kMaxTileRows;
  const auto* text = std::get_if<std::string>(&it->second);
  long long r = 0;
  char end = 0;
  if (!text || std::sscanf(text->c_str(), "r%lld%c", &r, &end) != 1 || r < kGemmMR || r > kMaxTileRows || r % kGemmMR)
    return Status::invalid("conv: tile '" + (text ? *text : std::string("?")) + "' is not r<rows, a multiple of " +
                           std::to_string(kGemmMR) + " up to " + std::to_string(kMaxTileRows) + ">");
  return int64_t{r};
}

Expected<GeneratedKernel> conv_gemm(const KernelSpec& spec, const ConvShape& z, const std::vector<int>& kinds,
                                    bool has_b, bool packed, const std::string& head, const std::string& epi_ptrs,
                                    const std::string& name) {
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1];
  const int64_t K = z.CG * z.KH * z.KW, P = z.OH * z.OW, KK = z.KH * z.KW;
  const auto [flat, H, W, OW, SH, SW, PH, PW] = conv::plane_of(z);  // flat: segments are whole panels
  const int64_t PB = std::max<int64_t>(1, (P + kGemmNC - 1) / kGemmNC);
  HPF_ASSIGN_OR_RETURN(const int64_t max_rows, tile_rows(spec));
  const auto [MB, MT] = conv::row_blocks(z.MG, z.N * z.G * PB, max_rows, kGemmMR);
  const bool w32 = Wt.dtype == DType::F32;
  const char* xt = c_storage_type(X.dtype);
  const char* wt = c_storage_type(Wt.dtype);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  // BF16 input and weights where the BF16 microkernel is preferred (HPF_BF16_DOT, see
  // c_gemm_micro.hpp): pairs of k packed as they are (no conversion) and multiplied by
  // vdpbf16ps; the source holds both forms.
  const bool pairs = X.dtype == DType::BF16 && Wt.dtype == DType::BF16;
  // Short output rows (ResNet-50's 7x7 and 14x14 maps) cut a pixel block into many short runs
  // of input values, each with its bounds worked out again for every k: there, each value is
  // read through a table of its offset in the input plane per tap (-1: padding), made once per
  // work item (7x7x512 3x3: packing 2.0 of 5.1 ms -> a third of that).
  const bool table = !flat && OW < kTableRowsBelow && KK <= kMaxTableTaps && H * W < (int64_t{1} << 31);
  std::string table_init;
  if (table) {
    std::ostringstream t;
    t << "    for (i64 r = 0; r < " << L(KK) << "; ++r)\n"
      << "      for (i64 j = 0; j < HPF_NC; ++j) {\n"
      << "        const i64 p = p0 + j, ih = (p / " << L(OW) << ") * " << L(SH) << " - " << L(PH) << " + (r / " << L(z.KW)
      << ") * " << L(z.DH) << ", iw = (p % " << L(OW) << ") * " << L(SW) << " - " << L(PW) << " + (r % " << L(z.KW)
      << ") * " << L(z.DW) << ";\n"
      << "        off[r * HPF_NC + j] = j < nc && (unsigned long long)ih < " << L(H) << " && (unsigned long long)iw < "
      << L(W) << " ? (i32)(ih * " << L(W) << " + iw) : -1;\n"
      << "      }\n";
    table_init = t.str();
  }
  // One KC slice: pack B, then run the microkernel over the tile's rows.
  auto body = [&](bool bf) {
    const std::string bt = bf ? "u16" : "float", zero = bf ? "0" : "0.0f", at = "[t]";
    std::ostringstream b;
    if (table)  // each value through the item's offset table: no per-run bookkeeping
      b << "      for (i64 q = 0; q < kc; ++q) {\n"
        << "        const i64 k = pc + q, c = k / " << L(KK) << ", r = k % " << L(KK) << ";\n"
        << "        const " << xt << "* restrict xc = xg + c * " << L(H * W) << ";\n"
        << "        const i32* restrict o = off + r * HPF_NC;\n"
        << "        for (i64 jp = 0; jp < HPF_NC; jp += HPF_NR) {\n"
        << "          " << bt << "* restrict d = "
        << (bf ? "btmp + q * HPF_NC + jp" : "bpack + jp * HPF_KC + q * HPF_NR") << ";\n"
        << "          for (i64 jj = 0; jj < HPF_NR; ++jj)\n"
        << "            d[jj] = o[jp + jj] >= 0 ? " << (bf ? "xc[o[jp + jj]]" : c_load_operand(X.dtype, "xc[o[jp + jj]]"))
        << " : " << zero << ";\n"
        << "        }\n"
        << "      }\n";
    else
    b << "      for (i64 q = 0; q < kc; ++q) {\n"
      << "        const i64 k = pc + q, c = k / " << L(KK) << ", r = k % " << L(KK) << ";\n"
      << "        const i64 dh = (r / " << L(z.KW) << ") * " << L(z.DH) << ", dw = (r % " << L(z.KW) << ") * " << L(z.DW)
      << ";\n"
      << "        const " << xt << "* restrict xc = xg + c * " << L(H * W) << ";\n"
      << "        for (i64 e = 0; e < ns; ++e) {\n"
      << "          " << bt << "* restrict d = "
      << (bf ? "btmp + q * HPF_NC + sj[e]" : "bpack + (sj[e] / HPF_NR) * (HPF_KC * HPF_NR) + q * HPF_NR + sj[e] % HPF_NR")
      << ";\n"
      << "          const i64 len = sl[e], ih = sh[e] + dh;\n"
      << "          if ((unsigned long long)ih >= (unsigned long long)" << L(H) << ") {\n"
      << "            for (i64 t = 0; t < len; ++t) d" << at << " = " << zero << ";\n"
      << "            continue;\n"
      << "          }\n"
      << "          const " << xt << "* restrict row = xc + ih * " << L(W) << ";\n"
      << "          const i64 iw0 = sw[e] + dw;\n"
      // Columns t with iw0 + t*SW inside [0, W): [tlo, thi).
      << "          i64 tlo = iw0 >= 0 ? 0 : (-iw0 + " << L(SW - 1) << ") / " << L(SW) << ";\n"
      << "          i64 thi = " << L(W) << " - 1 - iw0 < 0 ? 0 : (" << L(W) << " - 1 - iw0) / " << L(SW) << " + 1;\n"
      << "          if (tlo > len) tlo = len;\n"
      << "          if (thi > len) thi = len;\n"
      << "          if (thi < tlo) thi = tlo;\n"
      << "          for (i64 t = 0; t < tlo; ++t) d" << at << " = " << zero << ";\n"
      // Runs are short (an output row's piece of a panel): a narrow vector body, so that they
      // are not all left to the scalar remainder of a wide unrolled one.
      << "#pragma clang loop vectorize_width(8) interleave_count(1)\n"
      << "          for (i64 t = tlo; t < thi; ++t) d" << at << " = "
      << (bf ? "row[iw0 + t * " + L(SW) + "]" : c_load_operand(X.dtype, "row[iw0 + t * " + L(SW) + "]")) << ";\n"
      << "          for (i64 t = thi; t < len; ++t) d" << at << " = " << zero << ";\n"
      << "        }\n"
      << "      }\n";
    if (bf)  // rows of k side by side in pairs (an odd slice's last pair with a zero)
      b << "      if (kc & 1)\n"
        << "        for (i64 j = 0; j < HPF_NC; ++j) btmp[kc * HPF_NC + j] = 0;\n"
        << "      const i64 kp = (kc + 1) >> 1;\n"
        << "      for (i64 pp = 0; pp < kp; ++pp)\n"
        << "        for (i64 jp = 0; jp < HPF_NC; jp += HPF_NR) {\n"
        << "          const u16* restrict lo = btmp + 2 * pp * HPF_NC + jp;\n"
        << "          u32* restrict o = bpack2 + jp * (HPF_KC / 2) + pp * HPF_NR;\n"
        << "          for (i64 jj = 0; jj < HPF_NR; ++jj) o[jj] = (u32)lo[jj] | (u32)lo[jj + HPF_NC] << 16;\n"
        << "        }\n";
    if (packed) {  // each tile's rows of this slice (conv_packing.hpp), ragged tiles zero-filled
      const int64_t T = (z.MG + kGemmMR - 1) / kGemmMR;
      b << "      const float* restrict wp = Wt + g * " << L(T * kGemmMR * K) << " + ic * " << L(K) << " + pc * HPF_MR;\n"
        << "      for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
        << "        const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
        << "        for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
        << "          if (mr == HPF_MR) hpf_mm_micro_ex(kc, wp + ir * " << L(K) << ", HPF_MR, 1, bpack + jp * HPF_KC, acc + ir * HPF_NC + jp, HPF_NC);\n"
        << "          else hpf_mm_micro_rest(mr, kc, wp + ir * " << L(K) << ", HPF_MR, 1, bpack + jp * HPF_KC, HPF_NR, HPF_VW, acc + ir * HPF_NC + jp, HPF_NC);\n"
        << "      }\n"
        << "    }\n";
      return b.str();
    }
    b << "      for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
      << "        const i64 m0 = g * " << L(z.MG) << " + ic + ir;\n"
      << "        float* restrict at = acc + ir * HPF_NC;\n"
      // The next tile's rows of this slice, fetched while this one computes (the rows are a
      // whole K apart: too short a run each for the hardware prefetchers; conv_packing.hpp).
      << "        if (ir + HPF_MR < mc)\n"
      << "          for (i64 ii = 0; ii < HPF_MR; ++ii) hpf_prefetch_r(Wt + (m0 + HPF_MR + ii) * " << L(K)
      << " + pc, kc * sizeof(*Wt));\n";
    if (w32 && !bf) {  // FP32 rows straight from the weights; a ragged tile exactly (4, 2, 1 rows)
      b << "        const float* restrict ap = Wt + m0 * " << L(K) << " + pc;\n"
        << "        for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
        << "          if (mc - ir >= HPF_MR) hpf_mm_micro_ex(kc, ap, 1, " << L(K) << ", bpack + jp * HPF_KC, at + jp, HPF_NC);\n"
        << "          else hpf_mm_micro_rest(mc - ir, kc, ap, 1, " << L(K) << ", bpack + jp * HPF_KC, HPF_NR, HPF_VW, at + jp, HPF_NC);\n"
        << "      }\n"
        << "    }\n";
      return b.str();
    }
    if (bf && K % 2 == 0)  // full rows straight from the weights
      b << "        if (mc - ir >= HPF_MR) {\n"
        << "          const " << wt << "* restrict ap = Wt + m0 * " << L(K) << " + pc;\n"
        << "          for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
        << "            hpf_mm_micro_bf16(kp, ap, " << L(K) << ", bpack2 + jp * (HPF_KC / 2), at + jp, HPF_NC);\n"
        << "          continue;\n"
        << "        }\n";
    // Ragged rows (16-bit weights in FP32, odd K in pairs): a panel of MR rows, row-major, zero
    // past mc (and past kc).
    b << "        for (i64 ii = 0; ii < HPF_MR; ++ii) {\n"
      << "          " << bt << "* restrict ad = " << (bf ? "apack2" : "apack") << " + ii * HPF_KC;\n"
      << "          if (ir + ii < mc) {\n"
      << "            const " << wt << "* restrict ws = Wt + (m0 + ii) * " << L(K) << " + pc;\n"
      << "            for (i64 q = 0; q < kc; ++q) ad[q] = " << (bf ? "ws[q]" : c_load_operand(Wt.dtype, "ws[q]")) << ";\n"
      << (bf ? "            if (kc & 1) ad[kc] = 0;\n" : "")
      << "          } else {\n"
      << "            for (i64 q = 0; q < " << (bf ? "2 * kp" : "kc") << "; ++q) ad[q] = " << zero << ";\n"
      << "          }\n"
      << "        }\n"
      << "        for (i64 jp = 0; jp < nc; jp += HPF_NR)\n"
      << (bf ? "          hpf_mm_micro_bf16(kp, apack2, HPF_KC, bpack2 + jp * (HPF_KC / 2), at + jp, HPF_NC);\n"
             : "          hpf_mm_micro_ex(kc, apack, 1, HPF_KC, bpack + jp * HPF_KC, at + jp, HPF_NC);\n")
      << "      }\n"
      << "    }\n";
    return b.str();
  };
  std::ostringstream s;
  s << head << gemm_micro_source() << (pairs ? gemm_micro_bf16_source() : "")
    << (pairs ? "#if defined(HPF_BF16_DOT)\n#define HPF_CONV_PAIRS 1\n#endif\n" : "")
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << conv::kernel_args(spec, wt, has_b, epi_ptrs)
    << (pairs ? "#if defined(HPF_CONV_PAIRS)\n"
                "  u16 btmp[HPF_KC * HPF_NC] __attribute__((aligned(64)));\n"
                "  u32 bpack2[HPF_KC / 2 * HPF_NC] __attribute__((aligned(64)));\n"
                "  u16 apack2[HPF_MR * HPF_KC] __attribute__((aligned(64)));\n"

                "#else\n"
              : "")
    << "  float bpack[HPF_KC * HPF_NC] __attribute__((aligned(64)));\n"
    << "  float apack[HPF_MR * HPF_KC] __attribute__((aligned(64)));\n"
    << (pairs ? "#endif\n" : "")
    << "  float acc[" << MT << " * HPF_NC] __attribute__((aligned(64)));\n"
    << (table ? "  i32 off[" + std::to_string(KK) + " * HPF_NC];\n"
              : "  i64 sj[HPF_NC + 1], sl[HPF_NC + 1], sh[HPF_NC + 1], sw[HPF_NC + 1];\n")
    << "  for (i64 w = begin; w < end; ++w) {\n"
    // Channel blocks innermost (see pixel_item).
    << pixel_item(z, PB, MB, MT, P)
    // The offset table, or the segments of the pixel block: inside one output row and one
    // panel; past nc, zeros.
    << (table ? table_init
              : "    i64 ns = 0;\n"
                "    for (i64 j = 0; j < HPF_NC;) {\n"
                "      i64 len = HPF_NR - j % HPF_NR;\n"
                "      if (j < nc) {\n"
                "        const i64 p = p0 + j, oh = p / " + L(OW) + ", ow = p % " + L(OW) + ";\n"
                "        if (" + L(OW) + " - ow < len) len = " + L(OW) + " - ow;\n"
                "        if (nc - j < len) len = nc - j;\n"
                "        sh[ns] = oh * " + L(SH) + " - " + L(PH) + "; sw[ns] = ow * " + L(SW) + " - " + L(PW) + ";\n"
                "      } else {\n"
                "        sh[ns] = -(1LL << 40); sw[ns] = 0;\n"
                "      }\n"
                "      sj[ns] = j; sl[ns] = len; ++ns; j += len;\n"
                "    }\n")
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(H * W) << ";\n"
    << "    for (i64 x = 0; x < " << L(MT) << " * HPF_NC; ++x) acc[x] = 0.0f;\n"
    << "    for (i64 pc = 0; pc < " << L(K) << "; pc += HPF_KC) {\n"
    << "      const i64 kc = " << L(K) << " - pc < HPF_KC ? " << L(K) << " - pc : HPF_KC;\n"
    << (pairs ? "#if defined(HPF_CONV_PAIRS)\n" + body(true) + "#else\n" + body(false) + "#endif\n" : body(false))
    << "    for (i64 ii = 0; ii < mc; ++ii) {\n"
    << "      const i64 mo = g * " << L(z.MG) << " + ic + ii;\n"
    << "      const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + p0;\n"
    << "      float* restrict a = acc + ii * HPF_NC;\n"
    << "      (void)yo;\n";
  // The next work item usually continues these rows with the next pixel block: its lines of the
  // row are fetched while it computes (see hpf_prefetch_w).
  s << finish_store(spec, fin, "(Y + yo)", "a", "nc")
    << "      if (pb + 1 < " << L(PB) << ") hpf_prefetch_w(Y + yo + HPF_NC, HPF_NC * sizeof(*Y));\n"
    << "    }\n  }\n"
    << "}\n";
  const int64_t per_item = std::max<int64_t>(1, MT * K * kGemmNC);
  return GeneratedKernel{name, s.str(), z.N * z.G * PB * MB, std::max<int64_t>(1, (1 << 20) / per_item)};
}

// A pointwise Conv (1x1, unit strides, no padding) with weights in the "rows" layout: Y = W X per
// image, a plain GEMM whose B (X, a channel's pixels contiguous) needs no packing. A work item is
// one block of HPF_NC pixels and up to MT output channels; per tile of HPF_MR channels the
// microkernel sums over all of K in registers, the block's input rows (K x 64 pixels) streaming
// from L2 where they are more than one slice (K > HPF_KC), each row fetched into L1 16 rows
// ahead: the tile's sums are stored once, not per slice. (Before, groups of 4 tiles summed slice
// by slice, each slice's input rows read from L1 by the group's tiles in turn: ResNet-50's 56x56
// 256 -> 64 layer in a C harness, its input out of L2, 0.99 -> 0.80 ms; in L2 0.72 -> 0.67.)
// FP32 pixels are read in place (a ragged block, or 16-bit input, is first copied, converted, into
// a zero-padded K x HPF_NC panel, once per work item), and each tile's rows are finished and
// stored at once, while in L1: no tile of MT rows to clear, reload and finish afterwards, which
// cost ResNet-50's 64-deep layers a fifth of their time. K is at most kPointwiseRowsDepth where
// the panel is copied (it is on the stack).
Expected<GeneratedKernel> conv_pointwise_rows(const KernelSpec& spec, const ConvShape& z, const std::vector<int>& kinds,
                                              bool has_b, const std::string& head, const std::string& epi_ptrs,
                                              const std::string& name) {
  const TensorDesc& X = spec.inputs[0];
  const int64_t P = z.H * z.W, K = z.CG, PB = std::max<int64_t>(1, (P + kGemmNC - 1) / kGemmNC);
  const int64_t T = (z.MG + kGemmMR - 1) / kGemmMR;  // tiles of the packed weights per group
  HPF_ASSIGN_OR_RETURN(const int64_t max_rows, tile_rows(spec));
  // Small maps (a block or two of pixels, copied per work item when ragged) keep few items.
  const auto [MB, MT] = conv::row_blocks(z.MG, z.N * z.G * PB, max_rows, kGemmMR, PB >= 4 ? kPointwiseMinItems : 4);
  const char* xt = c_storage_type(X.dtype);
  const bool x32 = X.dtype == DType::F32, copies = !x32 || P % kGemmNC != 0;
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  std::ostringstream s;
  s << head << gemm_micro_source() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << conv::kernel_args(spec, "float", has_b, epi_ptrs)
    << (copies ? "  float bpanel[" + std::to_string(K * kGemmNC) + "] __attribute__((aligned(64)));\n" : "")
    << "  float acc[" << kGemmMR * kGemmNC << "] __attribute__((aligned(64)));\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << pixel_item(z, PB, MB, MT, P, P % 16 != 0)
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(P) << " + p0;\n";
  if (x32)
    s << "    const float* bp = xg;\n"
      << "    i64 bsk = " << L(P) << ";\n";
  else
    s << "    const float* bp = bpanel;\n"
      << "    i64 bsk = HPF_NC;\n";
  if (copies)
    s << (x32 ? "    if (nc < HPF_NC) {\n" : "    {\n")
      << "      for (i64 k = 0; k < " << L(K) << "; ++k)\n"
      << "        for (i64 j = 0; j < HPF_NC; ++j)\n"
      << "          bpanel[k * HPF_NC + j] = j < nc ? " << c_load_operand(X.dtype, "xg[k * " + L(P) + " + j]") << " : 0.0f;\n"
      << "      bp = bpanel;\n"
      << "      bsk = HPF_NC;\n"
      << "    }\n";
  const std::string wt = "Wt + " + L(T * kGemmMR * K) + " * g + (ic + ir) * " + L(K);
  const std::string bpf = K > kGemmKC ? "16" : "0";  // rows fetched ahead where they stream from L2
  // A whole tile over a whole pixel block is finished in registers: the sums, bias and epilogue
  // (vectors, c_epilogue_vector) stored straight to Y, not stored to acc and read back by a
  // scalar loop (28x28 128->512 with its Relu in a C harness: 0.55 -> 0.53 ms). Where the
  // epilogue has no vector form, or Y is not FP32, every tile finishes through acc.
  std::string tile_fin;
  if (const std::string fin_v = conv::tile_finish_vectors(spec, kinds, has_b, z.M, P, "g * " + L(z.MG) + " + ic + ir",
                                                          "p0 + jp", "HPF_NV");
      !fin_v.empty())
    tile_fin = "      if (fused) {\n"
               "        for (i64 jp = 0; jp < HPF_NC; jp += HPF_NR) {\n"
               "          hpf_vf c[HPF_MR][HPF_NV];\n"
               "          hpf_mm_micro_sums(1, HPF_MR, HPF_NV, " + L(K) + ", " + wt + ", HPF_MR, 1, bp + jp, bsk, HPF_VW, acc, HPF_NC, c, " + bpf + ", 0);\n" +
               fin_v +
               "        }\n"
               // As below: the next pixel block's lines of these rows, for writing.
               "        if (pb + 1 < " + L(PB) + ")\n"
               "          for (int i = 0; i < HPF_MR; ++i)\n"
               "            hpf_prefetch_w(Y + (n * " + L(z.M) + " + g * " + L(z.MG) + " + ic + ir + i) * " + L(P) +
               " + p0 + HPF_NC, HPF_NC * sizeof(*Y));\n"
               "        continue;\n"
               "      }\n";
  s << "    for (i64 ir = 0; ir < mc; ir += HPF_MR) {\n"
    << "      const i64 mr = mc - ir < HPF_MR ? mc - ir : HPF_MR;\n"
    << (tile_fin.empty() ? "" : "      const int fused = nc == HPF_NC && mr == HPF_MR;\n")
    // A full tile of whole panels starts its sums at zero in registers instead of zeroing acc
    // and loading it (MobileNetV2's 112x112 32->32: 0.28 -> 0.26 ms).
    << "      const int fresh = mr == HPF_MR && nc % HPF_NR == 0;\n"
    << "      if (!fresh) for (i64 x = 0; x < HPF_MR * HPF_NC; ++x) acc[x] = 0.0f;\n"
    << tile_fin
    // The packed tile (conv_packing.hpp, "rows"); a ragged last tile (64 channels: 10 x 6 + 4)
    // exactly, in pieces of 4, 2 and 1 rows; the block's HPF_NC pixels in panels of HPF_NR
    // (AVX2: 4), a ragged block's last panel in whole vectors only (MobileNetV2's 14x14 maps: 196
    // pixels computed as 208, not 256).
    << "      for (i64 jp = 0; jp < nc; jp += HPF_NR) {\n"
    << "        const float* restrict bj = bp + jp;\n"
    << "        if (nc - jp < HPF_NR) hpf_mm_micro_cols(mr, nc - jp, " << L(K) << ", " << wt << ", HPF_MR, 1, bj, bsk, HPF_VW, acc + jp, HPF_NC);\n"
    << "        else if (fresh) hpf_mm_micro_bx0_pf(" << L(K) << ", " << wt << ", HPF_MR, 1, bj, bsk, HPF_VW, acc + jp, HPF_NC, " << bpf << ");\n"
    << "        else if (mr == HPF_MR) hpf_mm_micro_bx(" << L(K) << ", " << wt << ", HPF_MR, 1, bj, bsk, HPF_VW, acc + jp, HPF_NC);\n"
    << "        else hpf_mm_micro_rest(mr, " << L(K) << ", " << wt << ", HPF_MR, 1, bj, bsk, HPF_VW, acc + jp, HPF_NC);\n"
    << "      }\n"
    << (tile_fin.empty() ? "" : "      if (!fused)\n")
    << "      for (i64 ii = 0; ii < mr; ++ii) {\n"
    << "        const i64 mo = g * " << L(z.MG) << " + ic + ir + ii;\n"
    << "        const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + p0;\n"
    << "        float* restrict a = acc + ii * HPF_NC;\n"
    << "        (void)yo;\n";
  // As in conv_gemm: the next work item continues these rows with the next pixel block, whose
  // lines are fetched for writing now (rows a plane apart: the hardware prefetchers do not follow
  // them). ResNet-50's 56x56 64->64 layer with its output out of cache, as in the model: 0.38 ->
  // 0.22 ms alone (0.17 with it in cache); the whole model 66.9 -> 65.0 ms.
  s << finish_store(spec, fin, "(Y + yo)", "a", "nc")
    << "        if (pb + 1 < " << L(PB) << ") hpf_prefetch_w(Y + yo + HPF_NC, HPF_NC * sizeof(*Y));\n"
    << "      }\n    }\n  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, MT * K * kGemmNC);
  return GeneratedKernel{name, s.str(), z.N * z.G * PB * MB, std::max<int64_t>(1, (1 << 20) / per_item)};
}

// A pointwise Conv (1x1, unit strides, no padding) with weights in the "cols" layout
// (conv_packing.hpp): Y^T = X^T W^T, output channels as the microkernel's columns, so that any
// number of pixels fills its rows (6 at a time) and the input is read in place, a channel's
// pixels contiguous (ask = the plane size); no patches are packed. A work item is one block of
// up to kPointwiseTiles x 6 pixels and 64 output channels of one (image, group); its FP32 tile
// is pixel-major and each output channel's row is gathered from it, finished and stored.
Expected<GeneratedKernel> conv_pointwise(const KernelSpec& spec, const ConvShape& z, const std::vector<int>& kinds,
                                         bool has_b, const std::string& head, const std::string& epi_ptrs,
                                         const std::string& name) {
  const TensorDesc& X = spec.inputs[0];
  const int64_t P = z.H * z.W, K = z.CG, CB = (z.MG + kConvColBlock - 1) / kConvColBlock;
  // Pixel blocks: as even as the tiles allow, at least 4 work items in all when there are pixels
  // enough, so that two threads share the work.
  const int64_t tiles = std::max<int64_t>(1, (P + kGemmMR - 1) / kGemmMR);
  int64_t PBn = std::max((tiles + kPointwiseTiles - 1) / kPointwiseTiles, (4 + z.N * z.G * CB - 1) / (z.N * z.G * CB));
  PBn = std::min(PBn, tiles);
  const int64_t TPB = (tiles + PBn - 1) / PBn, PX = TPB * kGemmMR, PX16 = round_up(PX, 16);
  PBn = (tiles + TPB - 1) / TPB;
  const char* xt = c_storage_type(X.dtype);
  const bool x32 = X.dtype == DType::F32;
  // K slices of 64 where a slice of the item's input (its pixels are contiguous per channel) and
  // of the weights then fit L1 together, so every tile of the slice reads both from L1; at 128
  // they did not on 7x7 maps (25 + 32 KiB against 48). ResNet-50's three 7x7 3x3 layers (as
  // patches, K = 4608) 6.62 -> 6.29 ms in all with one thread, MobileNetV2's 7x7 1x1 layers 0.94
  // -> 0.90 ms with one thread and 0.57 -> 0.54 with two (3 alternations each); larger maps
  // stream their input through L1 a tile at a time either way, and keep 128.
  const int64_t slice_bytes = kPointwiseHalfKC * (PX + kConvColBlock) * int64_t{sizeof(float)};
  const std::string KCS = L(slice_bytes <= kPointwiseL1Budget ? kPointwiseHalfKC : kGemmKC);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "jj"));
  std::ostringstream s;
  s << head << gemm_micro_source() << conv::tile_cols_source() << "\nvoid " << name
    << "(void* const* args, i64 begin, i64 end) {\n"
    << conv::kernel_args(spec, "float", has_b, epi_ptrs)
    << (x32 ? "" : "  float apack[HPF_KC * HPF_MR] __attribute__((aligned(64)));\n")
    // The tile, rounded up to whole 16-row blocks for the transposition (rows past PX stay zero),
    // and its columns as rows.
    << "  float acc[" << PX16 * kConvColBlock << "] __attribute__((aligned(64)));\n"
    << "  float ct[" << kConvColBlock * PX16 << "] __attribute__((aligned(64)));\n"
    << "  for (i64 x = " << PX * kConvColBlock << "; x < " << PX16 * kConvColBlock << "; ++x) acc[x] = 0.0f;\n"
    << (x32 ? "  const int split = end - begin < " + L(z.N * z.G * PBn * CB) + ";\n" : "")
    // Channel blocks innermost: a range keeps its pixels' input in cache across them.
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 cb = w % " << L(CB) << ", pb = (w / " << L(CB) << ") % " << L(PBn) << ", g = (w / " << L(CB * PBn)
    << ") % " << L(z.G) << ", n = w / " << L(CB * PBn * z.G) << ";\n"
    << "    const i64 p0 = pb * " << L(PX) << ", np = " << L(P) << " - p0 < " << L(PX) << " ? " << L(P) << " - p0 : " << L(PX)
    << ";\n"
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << L(P) << " + p0;\n"
    << "    const float* restrict wp = Wt + (g * " << L(CB) << " + cb) * " << L(K * kConvColBlock) << ";\n"
    << "    const i64 mcn = " << L(z.MG) << " - cb * " << L(kConvColBlock) << " < " << L(kConvColBlock) << " ? " << L(z.MG)
    << " - cb * " << L(kConvColBlock) << " : " << L(kConvColBlock) << ";\n"
    << "    for (i64 pc = 0; pc < " << L(K) << "; pc += " << KCS << ") {\n"
    << "      const i64 kc = " << L(K) << " - pc < " << KCS << " ? " << L(K) << " - pc : " << KCS << ";\n"
    << "      for (i64 t = 0; t * HPF_MR < np; ++t) {\n"
    << "        float* restrict at = acc + t * HPF_MR * " << L(kConvColBlock) << ";\n"
    << "        const i64 mr = np - t * HPF_MR < HPF_MR ? np - t * HPF_MR : HPF_MR;\n"
    // As in conv_pointwise_rows: the first slice of a full tile of whole panels starts its sums
    // at zero in registers; only a ragged tile, or one with a ragged panel, is cleared first
    // (clearing the whole item's tile, 24 KiB, per work item: 14x14 256->1024 in a C harness
    // 0.60 -> 0.58 ms).
    << "        const int fresh = pc == 0 && mr == HPF_MR && mcn % HPF_NR == 0;\n"
    << "        if (pc == 0 && !fresh) for (i64 x = 0; x < HPF_MR * " << L(kConvColBlock) << "; ++x) at[x] = 0.0f;\n";
  // Each tile fetches its share of the next slice of weights (the next KC rows of the block, or
  // the next item's first: the next block, stored right after; nothing past the last block) into
  // L2: the weights of a model's small-map layers come from memory, a slice at a time.
  // MobileNetV2's 7x7 960->320 projection in a C harness, weights out of cache, 0.200 -> 0.188 ms
  // (4 alternations; in cache 0.168 -> 0.171).
  s << "        if ((g * " << L(CB) << " + cb) * " << L(K) << " + pc + " << KCS << " < " << L(z.G * CB * K) << ")\n"
    << conv::prefetch_share("wp + (pc + " + KCS + ") * " + L(kConvColBlock), KCS + " * " + L(kConvColBlock / 16), "t",
                            "(np + HPF_MR - 1) / HPF_MR", "          ");
  // FP32 pixels are read in place, 16-bit ones converted into MR-interleaved rows. A ragged last
  // tile (7x7 maps: 49 = 8 x 6 + 1) is computed exactly, in pieces of 4, 2 and 1 pixels. Where
  // the launch's items are split between threads (a range short of them all), the input was
  // mostly written by the other cores (the layer before split its work another way: the
  // depthwise layers by channels) and its lines come from their caches, which the prefetchers do
  // not follow across the channel rows: the tile two ahead is prefetched. MobileNetV2's 14x14
  // 576->96 projection with two threads in a C harness, its input written by both threads by
  // channel halves: 0.110 -> 0.098 ms; with one thread (not split) it cost 5%.
  if (x32)
    s << "        const float* restrict ap = xg + pc * " << L(P) << " + t * HPF_MR;\n"
      << "        const i64 ask = " << L(P) << ";\n"
      << "        if (split && (t + 2) * HPF_MR < np)\n"
      << "          for (i64 q = 0; q < kc; ++q) __builtin_prefetch(ap + q * " << L(P) << " + 2 * HPF_MR);\n";
  else
    s << "        for (i64 q = 0; q < kc; ++q)\n"
      << "          for (i64 ii = 0; ii < mr; ++ii)\n"
      << "            apack[q * HPF_MR + ii] = " << c_load_operand(X.dtype, "xg[(pc + q) * " + L(P) + " + t * HPF_MR + ii]")
      << ";\n"
      << "        const float* restrict ap = apack;\n"
      << "        const i64 ask = HPF_MR;\n";
  // The block's mcn channels in panels of HPF_NR, a ragged last one in whole vectors only (the
  // weights are zero past mcn): MobileNetV2's 160 channels computed as 160, not 192.
  const std::string b = "wp + pc * " + L(kConvColBlock) + " + jp, " + L(kConvColBlock) + ", HPF_VW, at + jp, " + L(kConvColBlock);
  s << "        for (i64 jp = 0; jp < mcn; jp += HPF_NR)\n"
    << "          if (mcn - jp < HPF_NR) hpf_mm_micro_cols(mr, mcn - jp, kc, ap, ask, 1, " << b << ");\n"
    << "          else if (fresh) hpf_mm_micro_bx0(kc, ap, ask, 1, " << b << ");\n"
    << "          else if (mr == HPF_MR) hpf_mm_micro_bx(kc, ap, ask, 1, " << b << ");\n"
    << "          else hpf_mm_micro_rest(mr, kc, ap, ask, 1, " << b << ");\n"
    << "      }\n"
    << "    }\n"
    // Each output channel's pixels, a column of the tile, transposed into a row, finished and stored.
    << "    hpf_tile_cols(acc, (np + 15) / 16 * 16, ct, " << L(PX16) << ");\n"
    << "    for (i64 j = 0; j < mcn; ++j) {\n"
    << "      const i64 mo = g * " << L(z.MG) << " + cb * " << L(kConvColBlock) << " + j;\n"
    << "      const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + p0;\n"
    << "      (void)yo;\n"
    << "      float* restrict a = ct + j * " << L(PX16) << ";\n";
  s << finish_store(spec, fin, "(Y + yo)", "a", "np") << "    }\n  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, PX * kConvColBlock * K);
  return GeneratedKernel{name, s.str(), z.N * z.G * PBn * CB, std::max<int64_t>(1, (1 << 20) / per_item)};
}

Expected<GeneratedKernel> conv_depthwise(const KernelSpec& spec, const ConvShape& z, const std::vector<int>& kinds,
                                         bool has_b, const std::string& head, const std::string& epi_ptrs,
                                         const std::string& name, int64_t WP, int64_t CB, int64_t RB) {
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1];
  const int64_t KK = z.KH * z.KW, S = z.SW, WT = WP / S;  // WP is a multiple of S (see the caller)
  const int64_t NB = (z.OH + RB - 1) / RB, RR = depthwise_rows(z, RB);
  const char* xt = c_storage_type(X.dtype);
  const char* wt = c_storage_type(Wt.dtype);
  HPF_ASSIGN_OR_RETURN(Finish fin, finish_value(spec, kinds, has_b ? 2 : -1, "yo", "j0 + jj"));
  // A 16-bit output is staged: the block's finished rows in FP32, then converted and stored as
  // one run (rows of 7 or 14 values stored one at a time took a third of a BF16 7x7 layer).
  const bool stage = spec.outputs[0].dtype != DType::F32;
  const bool dbuf = RR * WP * 4 <= 4096;  // two copies of the rows: see below
  std::ostringstream s;
  // Work item `item`: its block of output rows, channel and image, and the input rows its taps
  // read (ib, nr), each copied once (a row of outputs at a time read each input row KH / SH times).
  auto decode = [&](const std::string& item) {
    std::ostringstream d;
    d << "    const i64 ob = " << item << " % " << L(NB) << ", mo = (" << item << " / " << L(NB) << ") % " << L(z.M)
      << ", n = " << item << " / " << L(NB * z.M) << ";\n"
      << "    const i64 c = mo / " << L(z.MG) << ";\n"
      << "    const i64 oh0 = ob * " << L(RB) << ", oh1 = oh0 + " << L(RB) << " < " << L(z.OH) << " ? oh0 + " << L(RB)
      << " : " << L(z.OH) << ";\n"
      << "    const i64 ib = oh0 * " << L(z.SH) << " - " << L(z.PH) << ", nr = (oh1 - 1 - oh0) * " << L(z.SH) << " + "
      << L((z.KH - 1) * z.DH + 1) << ";\n"
      << "    (void)c; (void)ib; (void)nr;\n";
    return d.str();
  };
  // DW_R output rows per register block: R x (CB / 16) accumulators and the taps' weights fit
  // AVX-512's 32 vector registers; AVX2's 16 take two rows.
  s << head
    << "#if defined(__AVX512F__)\n#define DW_R 4\n#else\n#define DW_R 2\n#endif\n"
    << "typedef float hpf_dw8 __attribute__((vector_size(32), aligned(4)));\n"
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << conv::kernel_args(spec, wt, has_b, epi_ptrs)
    << (dbuf ? "  float xpb[2][" + std::to_string(RR * WP) + "] __attribute__((aligned(64)));\n"
             : "  float xp[" + std::to_string(RR * WP) + "] __attribute__((aligned(64)));\n")
    // The padding columns of every row are zero from here on: rows write only the columns
    // their input fills (a row outside the input is zeroed whole). Zeroing them per row took
    // MobileNetV2's 14x14x384 layer 0.048 ms in a C harness, against 0.044.
    << "  for (i64 x = 0; x < " << (dbuf ? 2 : 1) * RR * WP << "; ++x) " << (dbuf ? "xpb[0]" : "xp") << "[x] = 0.0f;\n"
    << (stage ? "  float stg[" + std::to_string(RB * z.OW) + "] __attribute__((aligned(64)));\n" : "")
    << "  float wv[" << KK << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n";
  // The item's input rows into xp (f). No software prefetch: fetching the next block's input and
  // output rows at the start of an item, as this kernel did, made it 7-29% slower on Zen 4 with
  // the rows in L1, L3 or memory alike (MobileNetV2's 112x112x32 and 112x112x96 stride-2 layers,
  // alternated in one process).
  std::ostringstream f;
  f << "    for (i64 i = 0; i < nr; ++i) {\n"
    << "      const i64 ih = ib + i;\n"
    << "      if ((unsigned long long)ih >= " << L(z.H) << ") {  // outside: a zero row\n"
    << "        for (i64 j = 0; j < " << L(WP) << "; ++j) xp[i * " << L(WP) << " + j] = 0.0f;\n"
    << "        continue;\n"
    << "      }\n"
    << "      const " << xt << "* restrict xs = X + ((n * " << L(z.C) << " + c) * " << L(z.H) << " + ih) * " << L(z.W)
    << ";\n";
  // With a stride S the row is split by phase: phase q holds padded columns q, q + S, ..., read
  // straight from the input row: the columns t whose S phases are all inside in one loop over t
  // (the phases of a t side by side, so that it vectorises as wide loads and shuffles), the few
  // others one at a time. (Through a padded copy of the row, the split's loads waited on the
  // copy's stores; phase by phase, each loop read every S-th value, one at a time: MobileNetV2's
  // 56x56x144 stride-2 layer 0.13 -> 0.07 ms.)
  // Stride 2, FP32: blocks of 2V input columns (two loads; past the row's end they read the next
  // rows, so only rows with 2V * NV2 values of X left take this path), split by two permutes into
  // the even and odd columns, the lanes past the row zeroed, each stored as V columns of its phase
  // plane (MobileNetV2's 28x28x192 stride-2 layer in a C harness 0.038 -> 0.029 ms, against 8
  // columns at a time and the rest one by one). V: the widest of 16, 8, 4 whose stores stay in
  // their phase's WT columns.
  int64_t V2 = 0, NV2 = 0;
  if (S == 2 && X.dtype == DType::F32)
    for (int64_t v : {16, 8, 4}) {
      const int64_t nb = (z.W + 2 * v - 1) / (2 * v);
      if (nb * v + (z.PW + 1) / 2 <= WT) {
        V2 = v, NV2 = nb;
        break;
      }
    }
  if (S == 1)
    f << "      float* restrict xd = xp + i * " << L(WP) << ";\n"
      << "      for (i64 j = 0; j < " << L(z.W) << "; ++j) xd[" << L(z.PW) << " + j] = " << c_load_operand(X.dtype, "xs[j]")
      << ";\n";
  else {
    // t with t * S - PW >= 0 and t * S + S - 1 - PW < W.
    const int64_t tlo = std::min(WT, (z.PW + S - 1) / S);
    const int64_t thi = std::max(tlo, std::min(WT, z.W + z.PW - S >= 0 ? (z.W + z.PW - S) / S + 1 : 0));
    f << "      float* restrict xq = xp + i * " << L(WP) << ";\n";
    if (V2) {
      const std::string vb = std::to_string(4 * V2);
      f << "      if (xs + " << L(2 * V2 * NV2) << " <= X + " << L(z.N * z.C * z.H * z.W) << ") {\n"
        << "        typedef float hpf_dwv __attribute__((vector_size(" << vb << "), aligned(4)));\n"
        << "        typedef i32 hpf_dwm __attribute__((vector_size(" << vb << ")));\n";
      for (int64_t b = 0; b < NV2; ++b) {
        const int64_t c0 = 2 * V2 * b;  // the block's first input column
        f << "        {\n"
          << "          const hpf_dwv lo = *(const hpf_dwv*)(xs + " << c0 << "), hi = *(const hpf_dwv*)(xs + " << c0 + V2
          << ");\n";
        for (int odd = 0; odd < 2; ++odd) {
          std::string lanes, mask;
          bool ragged = false;
          for (int64_t l = 0; l < V2; ++l) {
            lanes += (l ? ", " : "") + std::to_string(2 * l + odd);
            const bool in = c0 + 2 * l + odd < z.W;
            mask += std::string(l ? ", " : "") + (in ? "-1" : "0");
            ragged = ragged || !in;
          }
          // Input column c goes to phase (c + PW) % 2, column (c + PW) / 2.
          const int64_t q = (odd + z.PW) % 2, t0 = (c0 + odd + z.PW) / 2;
          const std::string v = "__builtin_shufflevector(lo, hi, " + lanes + ")";
          f << "          *(hpf_dwv*)(xq + " << q * WT + t0 << ") = "
            << (ragged ? "(hpf_dwv)((hpf_dwm)" + v + " & (hpf_dwm){" + mask + "})" : v) << ";\n";
        }
        f << "        }\n";
      }
      f << "      } else {\n";
    }
    // Stride 2, at least 4 columns: blocks of V = 16, 8 or 4 of them (as many as there are).
    const int64_t V = thi - tlo >= 16 ? 16 : thi - tlo >= 8 ? 8 : thi - tlo >= 4 ? 4 : 0;
    if (S == 2 && (X.dtype == DType::F32 || X.dtype == DType::BF16) && V > 0) {
      // 2V inputs (FP32: two loads; BF16: one, widened to FP32 bits), split into the two phases
      // by two permutes; the last block ends at thi, overlapping the one before (the vectorised
      // loop below did 8 at a time, then the rest one by one: the copy took over half of
      // MobileNetV2's 112x112x96 stride-2 layer; its 28x28 and 14x14 layers, 13 and 6 columns,
      // were all scalar copies).
      const bool f32 = X.dtype == DType::F32;
      std::string even, odd;
      for (int64_t l = 0; l < V; ++l) {
        even += (l ? ", " : "") + std::to_string(2 * l);
        odd += (l ? ", " : "") + std::to_string(2 * l + 1);
      }
      auto phase = [&](const std::string& lanes) {
        return f32 ? "__builtin_shufflevector(lo, hi, " + lanes + ")"
                   : "(hpf_dwf)(__builtin_convertvector(__builtin_shufflevector(v, v, " + lanes + "), hpf_dwu) << 16)";
      };
      const std::string at = "xs + t0 * 2 - " + L(z.PW), vb = std::to_string(4 * V);
      f << "      typedef float hpf_dwf __attribute__((vector_size(" << vb << "), aligned(4)));\n"
        << (f32 ? "" : "      typedef u32 hpf_dwu __attribute__((vector_size(" + vb + ")));\n"
                       "      typedef u16 hpf_dwh __attribute__((vector_size(" + vb + "), aligned(2)));\n")
        << "      for (i64 t0 = " << L(tlo) << ";; t0 += " << V << ") {\n"
        << "        if (t0 > " << L(thi - V) << ") t0 = " << L(thi - V) << ";\n"
        << (f32 ? "        const hpf_dwf lo = *(const hpf_dwf*)(" + at + "), hi = *(const hpf_dwf*)(" + at + " + " + std::to_string(V) + ");\n"
                : "        const hpf_dwh v = *(const hpf_dwh*)(" + at + ");\n")
        << "        *(hpf_dwf*)(xq + t0) = " << phase(even) << ";\n"
        << "        *(hpf_dwf*)(xq + " << L(WT) << " + t0) = " << phase(odd) << ";\n"
        << "        if (t0 == " << L(thi - V) << ") break;\n"
        << "      }\n";
    }
    else
      // Left to itself, clang unrolls the loop (its trip count is a constant) into scalar copies.
      f << "#pragma clang loop vectorize(enable) vectorize_width(8) unroll(disable)\n"
        << "      for (i64 t = " << L(tlo) << "; t < " << L(thi) << "; ++t)\n"
        << "#pragma clang loop unroll(full)\n"
        << "        for (int q = 0; q < " << S << "; ++q) xq[q * " << L(WT) << " + t] = "
        << c_load_operand(X.dtype, "xs[t * " + std::to_string(S) + " + q - " + L(z.PW) + "]") << ";\n";
    f << "      for (i64 t = 0; t < " << L(WT) << "; ++t) {\n"
      << "        if (t == " << L(tlo) << ") t = " << L(thi) << ";\n"
      << "        if (t >= " << L(WT) << ") break;\n"
      << "        for (int q = 0; q < " << S << "; ++q) {\n"
      << "          const i64 iw = t * " << S << " + q - " << L(z.PW) << ";\n"
      << "          xq[q * " << L(WT) << " + t] = (unsigned long long)iw < " << L(z.W) << " ? "
      << c_load_operand(X.dtype, "xs[iw]") << " : 0.0f;\n"
      << "        }\n"
      << "      }\n";
    if (V2) f << "      }\n";
  }
  f << "    }\n";
  // Small planes copy the next item's rows into the other of two buffers before computing
  // this one: computed right after the copy, a block's first loads read rows still in the store
  // buffer, which do not forward to loads spanning several stores (7x7x960: FP32 0.030 -> 0.020
  // ms, BF16 0.060 -> 0.027; 14x14x576 FP32 0.046 -> 0.039).
  if (dbuf)
    s << "    if (r == begin) {\n" << decode("r") << "      float* restrict xp = xpb[r & 1];\n" << f.str() << "    }\n"
      << "    if (r + 1 < end) {\n" << decode("(r + 1)") << "      float* restrict xp = xpb[(r + 1) & 1];\n" << f.str()
      << "    }\n"
      << decode("r") << "    const float* restrict xp = xpb[r & 1];\n";
  else
    s << decode("r") << f.str();
  s << "    for (i64 i = 0; i < " << L(KK) << "; ++i) wv[i] = " << c_load_operand(Wt.dtype, "Wt[mo * " + L(KK) + " + i]")
    << ";\n";
  // Blocks of R output rows x up to CB columns, R = DW_R (then the block's last rows one at a
  // time): the accumulators (R rows of vectors) stay in registers while the input rows the R
  // rows read are swept once, each vector loaded once per tap column and added into every row
  // whose taps use it (one row at a time loaded each input vector once per row it fed: three
  // loads per FMA for 3x3, most of them split across cache lines). Rows outside the input are
  // zero rows of xp, so every tap of every row is in the unrolled sum; each output still adds
  // its taps row-major (kh, then kw), the reference's order. Vectors of 16 lanes, and one of 8
  // for a block's width past a multiple of 16.
  const int64_t RI = (z.KH - 1) * z.DH + 1;  // input rows one output row reads
  bool per_output = false;
  for (size_t k = 0; k < kinds.size(); ++k) per_output = per_output || kinds[k] > 1;
  // The epilogue as vectors, where every step has that form and Y is FP32 (no staging) and no
  // operand has a value per output (it would be read past the row): the rows finished in
  // registers, not stored to a row on the stack, finished there and copied (MobileNetV2's
  // 14x14x576 layer in a C harness 0.061 -> 0.036 ms).
  std::string vector_finish;
  if (!stage && !per_output && (!has_b || spec.inputs[2].dtype == DType::F32))
    if (auto v = c_epilogue_vector(spec, "v", [&](int k) {
          return kinds[k] == 0 ? "P" + std::to_string(k) + "[0]" : "P" + std::to_string(k) + "[mo]";
        });
        v.ok())
      vector_finish = *v;
  auto block = [&](const std::string& R, int64_t width) {
    // Computed over whole 8-lane vectors (the window covers them), and finished over them too
    // unless an epilogue operand has a value per output (it would be read past the row): 7
    // lanes as 4 + 3 scalars made a BF16 7x7 layer with a Clip 3x its FP32 time.
    const int64_t cw = round_up(width, 8), fw = per_output ? width : cw, NV = cw / 16, tail = cw % 16;
    std::ostringstream b;
    b << "      hpf_f32x16 acc[" << R << "][" << std::max<int64_t>(NV, 1) << "];\n"
      << (tail ? "      hpf_dw8 acct[" + R + "];\n" : "")
      << "#pragma clang loop unroll(full)\n"
      << "      for (int r = 0; r < " << R << "; ++r) {\n"
      << "#pragma clang loop unroll(full)\n"
      << "        for (int v = 0; v < " << NV << "; ++v) acc[r][v] = (hpf_f32x16){};\n"
      << (tail ? "        acct[r] = (hpf_dw8){};\n" : "")
      << "      }\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int i = 0; i < (" << R << " - 1) * " << z.SH << " + " << RI << "; ++i)\n"
      << "#pragma clang loop unroll(full)\n"
      << "        for (int kw = 0; kw < " << z.KW << "; ++kw) {\n"
      << "          const float* restrict xr = xb + i * " << L(WP) << " + (kw * " << z.DW << " % " << S << ") * " << L(WT)
      << " + kw * " << z.DW << " / " << S << " + j0;\n"
      // The taps (kh, kw) of row r that read input row i: kh = (i - r * SH) / DH.
      << "#define HPF_DW_TAPS(X, ACC) \\\n"
      << "          for (int r = 0; r < " << R << "; ++r) { \\\n"
      << "            const int d = i - r * " << z.SH << "; \\\n"
      << "            if (d >= 0 && d % " << z.DH << " == 0 && d / " << z.DH << " < " << z.KH << ") ACC += wv[d / " << z.DH
      << " * " << z.KW << " + kw] * (X); \\\n"
      << "          }\n"
      << "#pragma clang loop unroll(full)\n"
      << "          for (int v = 0; v < " << NV << "; ++v) {\n"
      << "            const hpf_f32x16 x = *(const hpf_f32x16*)(xr + v * 16);\n"
      << "#pragma clang loop unroll(full)\n"
      << "            HPF_DW_TAPS(x, acc[r][v])\n"
      << "          }\n";
    if (tail)
      b << "          const hpf_dw8 x8 = *(const hpf_dw8*)(xr + " << NV * 16 << ");\n"
        << "#pragma clang loop unroll(full)\n"
        << "          HPF_DW_TAPS(x8, acct[r])\n";
    b << "#undef HPF_DW_TAPS\n"
      << "        }\n"
      // Each row finished and stored.
      << "#pragma clang loop unroll(full)\n"
      << "      for (int r = 0; r < " << R << "; ++r) {\n"
      << "      const i64 yo = ((n * " << L(z.M) << " + mo) * " << L(z.OH) << " + oh + r) * " << L(z.OW) << ";\n"
      << "      (void)yo;\n";
    if (!vector_finish.empty()) {
      // In registers: each vector's bias and epilogue, then stored, the row's last lanes alone.
      auto finish = [&](const std::string& x, int64_t lanes, int64_t at, int64_t valid) {
        std::ostringstream f;
        f << "      {\n"
          << "        typedef float hpf_vf __attribute__((vector_size(" << lanes * 4 << ")));\n"
          << "        typedef int hpf_vi __attribute__((vector_size(" << lanes * 4 << ")));\n"
          << "        hpf_vf v = " << x << ";\n"
          << (has_b ? "        v += bias;\n" : "") << vector_finish;
        if (valid == lanes)
          f << "        *(" << (lanes == 16 ? "hpf_f32x16" : "hpf_dw8") << "*)(Y + yo + j0 + " << at << ") = v;\n";
        else
          f << "#pragma clang loop unroll(full)\n"
            << "        for (int jj = 0; jj < " << valid << "; ++jj) (Y + yo + j0 + " << at << ")[jj] = v[jj];\n";
        f << "      }\n";
        return f.str();
      };
      if (has_b) b << "      const float bias = B[mo];\n";
      for (int64_t q = 0; q < NV; ++q) b << finish("acc[r][" + std::to_string(q) + "]", 16, 16 * q, std::min<int64_t>(16, width - 16 * q));
      if (tail) b << finish("acct[r]", 8, 16 * NV, width - 16 * NV);
      b << "      }\n";
      return b.str();
    }
    b << "      float a[" << cw << "] __attribute__((aligned(64)));\n"
      << (NV ? "      __builtin_memcpy(a, acc[r], " + std::to_string(NV * 64) + ");\n" : "")
      << (tail ? "      __builtin_memcpy(a + " + std::to_string(NV * 16) + ", &acct[r], 32);\n" : "")
      << fin.loop("a", L(fw), cw <= 16);
    if (stage)
      b << "#pragma clang loop unroll(full)\n"
        << "      for (int jj = 0; jj < " << width << "; ++jj) stg[(oh + r - oh0) * " << L(z.OW) << " + j0 + jj] = a[jj];\n";
    else
      b << "      " << store_row(spec, "(Y + yo + j0)", "a", L(width));
    b << "      }\n";
    return b.str();
  };
  const int64_t rest = z.OW % CB;
  auto row_blocks = [&](const std::string& R) {
    std::ostringstream t;
    t << "    const float* restrict xb = xp + (oh - oh0) * " << L(z.SH * WP) << ";\n"
      << "    for (i64 j0 = 0; j0 + " << CB << " <= " << L(z.OW) << "; j0 += " << CB << ") {\n" << block(R, CB) << "    }\n";
    if (rest) t << "    {\n      const i64 j0 = " << L(z.OW - rest) << ";\n" << block(R, rest) << "    }\n";
    return t.str();
  };
  // Rows of one vector (maps up to 16 wide) take blocks of 2 DW_R rows first: a row's taps are a
  // chain of dependent FMAs, DW_R of them too few to fill the FMA units; the last rows in a pair,
  // then alone (C harnesses, rows finished in registers: MobileNetV2's 14x14x576 layer 0.0335 ->
  // 0.0324 ms, 7x7x960 0.0180 -> 0.0176; 7 alternations).
  s << "    i64 oh = oh0;\n";
  if (z.OW <= 16) s << "    for (; oh + 2 * DW_R <= oh1; oh += 2 * DW_R) {\n" << row_blocks("2 * DW_R") << "    }\n";
  s << "    for (; oh + DW_R <= oh1; oh += DW_R) {\n" << row_blocks("DW_R") << "    }\n";
  if (z.OW <= 16) s << "    for (; oh + 2 <= oh1; oh += 2) {\n" << row_blocks("2") << "    }\n";
  s << "    for (; oh < oh1; ++oh) {\n" << row_blocks("1") << "    }\n";
  if (stage)  // the block's rows, contiguous in Y, stored at once
    s << "    " << store_row(spec, "(Y + ((n * " + L(z.M) + " + mo) * " + L(z.OH) + " + oh0) * " + L(z.OW) + ")", "stg",
                           "(oh1 - oh0) * " + L(z.OW));
  s << "  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, RB * z.OW * KK);
  return GeneratedKernel{name, s.str(), z.N * z.M * NB, std::max<int64_t>(1, 65536 / per_item)};
}

}  // namespace

Expected<GeneratedKernel> generate_c_conv(const KernelSpec& in_spec, const std::string& name) {
  const size_t own = in_spec.inputs.size() - std::max(0, in_spec.epilogue_inputs);
  if (own < 2 || own > 3 || in_spec.outputs.size() != 1) return Status::invalid("conv: needs X, W, optional B and one output");
  // Epilogue operands broadcast against the output as given (before a 1-D conv is lifted).
  std::vector<int> kinds(in_spec.inputs.size(), -1);
  for (size_t k = own; k < in_spec.inputs.size(); ++k)
    kinds[k] = epilogue_operand_kind(in_spec.inputs[k].shape, in_spec.outputs[0].shape, 1);
  // Packed weights (conv_packing.hpp): the geometry is the original weight's.
  const bool packed = in_spec.attrs.count("w_shape") > 0;
  KernelSpec shaped = in_spec;
  const std::string layout = packed ? attr_s(in_spec.attrs, "w_layout") : "";
  if (packed) {
    shaped.inputs[1].shape = attr_ints(in_spec.attrs, "w_shape");
    const bool types = layout == "amx" ? in_spec.inputs[0].dtype == DType::BF16 && in_spec.inputs[1].dtype == DType::BF16
                                       : in_spec.inputs[1].dtype == DType::F32;
    if (!types || shaped.inputs[1].shape.size() != in_spec.inputs[0].shape.size())
      return Status::invalid("conv: packed weights must be F32 (BF16 with a BF16 input for layout 'amx') with a "
                             "w_shape of the input's rank");
  }
  const KernelSpec spec = shaped.inputs[0].shape.size() == 3 ? lift_1d(shaped) : shaped;  // 1-D as 2-D
  const TensorDesc &X = spec.inputs[0], &Wt = spec.inputs[1], &Y = spec.outputs[0];
  const bool has_b = own == 3;
  for (size_t k = 0; k < own; ++k)
    if (!is_float(spec.inputs[k].dtype))
      return Status::unsupported("C codegen: Conv on " + std::string(dtype_name(spec.inputs[k].dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported("C codegen: Conv to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported("C codegen: Conv other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  ConvShape z{};
  z.N = X.shape[0], z.C = X.shape[1], z.H = X.shape[2], z.W = X.shape[3];
  z.M = Wt.shape[0], z.CG = Wt.shape[1], z.KH = Wt.shape[2], z.KW = Wt.shape[3];
  z.G = attr_i(spec.attrs, "group", 1);
  if (z.G < 1 || z.C != z.CG * z.G || z.M % z.G != 0)
    return Status::invalid("conv: input " + shape_string(X.shape) + ", weight " + shape_string(Wt.shape) +
                           " and group " + std::to_string(z.G) + " disagree");
  if (has_b && numel(spec.inputs[2].shape) != z.M)
    return Status::invalid("conv: bias must have " + std::to_string(z.M) + " values");
  const std::vector<int64_t> in_hw{z.H, z.W}, k_hw{z.KH, z.KW};
  HPF_ASSIGN_OR_RETURN(auto g, ir::window_geometry(in_hw, k_hw, attr_ints(spec.attrs, "strides"),
                                                   attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                   attr_s(spec.attrs, "auto_pad"), false));
  z.OH = g.out[0], z.OW = g.out[1];
  if (Y.shape != std::vector<int64_t>{z.N, z.M, z.OH, z.OW})
    return Status::invalid("conv: output " + shape_string(Y.shape) + " does not match the geometry");
  z.SH = g.strides[0], z.SW = g.strides[1], z.DH = g.dilations[0], z.DW = g.dilations[1];
  z.PH = g.pads_begin[0], z.PW = g.pads_begin[1];
  z.MG = z.M / z.G;
  const std::string head = c_prelude();
  HPF_ASSIGN_OR_RETURN(std::string epi_ptrs, epilogue_pointers(in_spec, 1));
  if (packed) {
    const int64_t K = z.CG * z.KH * z.KW;
    const bool cols = layout == "cols", amx = layout == "amx", wino = layout == "wino";
    const int64_t block = cols || wino ? kConvColBlock : amx ? kConvAmxRows : kGemmMR;
    const bool pointwise = z.KH == 1 && z.KW == 1 && z.SH == 1 && z.SW == 1 && z.OH == z.H && z.OW == z.W;
    const int64_t depth = amx ? conv_amx_depth(z.CG, z.KH * z.KW) : wino ? 16 * z.CG : K;
    if (z.CG == 1 || (cols && !pointwise && !conv::direct_fits(z)) || (wino && !conv::winograd_fits(z)) ||
        (!cols && !amx && !wino && layout != "rows") || numel(in_spec.inputs[1].shape) != z.G * round_up(z.MG, block) * depth)
      return Status::invalid("conv: packed weights of " + shape_string(in_spec.inputs[1].shape) + " (layout '" +
                             attr_s(in_spec.attrs, "w_layout") + "') for weight " + shape_string(Wt.shape));
    if (amx) return conv::amx_gemm(spec, z, kinds, has_b, head, epi_ptrs, name);
    if (wino) return conv::winograd(spec, z, kinds, has_b, head, epi_ptrs, name);
    if (cols) return pointwise ? conv_pointwise(spec, z, kinds, has_b, head, epi_ptrs, name)
                               : conv::direct(spec, z, kinds, has_b, head, epi_ptrs, name);
    if (pointwise && (z.CG <= kPointwiseRowsDepth || (X.dtype == DType::F32 && (z.H * z.W) % kGemmNC == 0)))
      return conv_pointwise_rows(spec, z, kinds, has_b, head, epi_ptrs, name);
    if (conv::phase_fits(z)) {
      HPF_ASSIGN_OR_RETURN(const int64_t max_rows, tile_rows(spec));
      return conv::phase_rows(spec, z, kinds, has_b, max_rows, head, epi_ptrs, name);
    }
    return conv_gemm(spec, z, kinds, has_b, true, head, epi_ptrs, name);
  }
  if (z.CG == 1 && z.OW > 0 && z.OH > 0) {
    // Columns per register block; the padded row covers every block's last reads. With a
    // column stride S the row is kept split into S phases of WP / S columns (phase q: padded
    // columns q, q + S, ...), so that every tap reads its CB inputs contiguously: a tap at
    // offset o reads phase o % S from column o / S + j (a strided read was a gather, 25x slower
    // per FLOP on MobileNetV2's stride-2 layers). Phase rows cover the last block's reads too.
    const int64_t CB = std::min<int64_t>(32, round_up(z.OW, 8));
    const int64_t WP = round_up(std::max({(round_up(z.OW, CB) - 1) * z.SW + (z.KW - 1) * z.DW + 1, z.PW + z.W,
                                          z.SW * (round_up(z.OW, CB) + (z.KW - 1) * z.DW / z.SW)}),
                                z.SW);
    // Output rows per work item: the input rows they read, copied once, within kDepthwiseBlock
    // bytes (small planes: a whole channel per item).
    int64_t RB = z.OH;
    while (RB > 1 && depthwise_rows(z, RB) * WP * 4 > kDepthwiseBlock) RB = (RB + 1) / 2;
    if (depthwise_rows(z, RB) * WP * 4 <= kMaxDepthwiseRows)
      return conv_depthwise(spec, z, kinds, has_b, head, epi_ptrs, name, WP, CB, RB);
  }
  return conv_gemm(spec, z, kinds, has_b, false, head, epi_ptrs, name);
}

// BatchNormalization (inference): y = x * scale[c] + shift[c], scale = gamma / sqrt(var + eps),
// shift = beta - mean * scale, in FP32. One (n, c) plane per work item.
Expected<GeneratedKernel> generate_c_batchnorm(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() != 5 || spec.outputs.size() != 1)
    return Status::invalid("batchnorm: needs X, scale, B, mean, var and one output");
  for (const TensorDesc& t : spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported("C codegen: BatchNormalization on " + std::string(dtype_name(t.dtype)));
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(Y.dtype) || X.shape.size() < 2) return Status::unsupported("C codegen: BatchNormalization of " + shape_string(X.shape));
  if (attr_i(spec.attrs, "training_mode", 0)) return Status::unsupported("C codegen: BatchNormalization training_mode=1");
  const int64_t ch = X.shape[1], planes = X.shape[0] * ch, inner = ch ? numel(X.shape) / std::max<int64_t>(1, planes) : 0;
  for (size_t k = 1; k < 5; ++k)
    if (numel(spec.inputs[k].shape) != ch) return Status::invalid("batchnorm: parameter " + std::to_string(k) + " size");
  float eps = 1e-5f;
  if (auto it = spec.attrs.find("epsilon"); it != spec.attrs.end()) {
    if (auto* f = std::get_if<float>(&it->second)) eps = *f;
  }
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n";
  for (int k = 1; k < 5; ++k) {
    const char* pt = c_storage_type(spec.inputs[k].dtype);
    s << "  const " << pt << "* restrict P" << k << " = (const " << pt << "*)args[" << k << "];\n";
  }
  auto p = [&](int k) { return c_load(spec.inputs[k].dtype, "P" + std::to_string(k) + "[c]"); };
  s << "  " << yt << "* restrict Y = (" << yt << "*)args[5];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 c = r % " << L(ch) << ";\n"
    << "    const float scale = " << p(1) << " / sqrtf(" << p(4) << " + " << c_float(eps) << ");\n"
    << "    const float shift = " << p(2) << " - " << p(3) << " * scale;\n"
    << "    const i64 o = r * " << L(inner) << ";\n"
    << "    for (i64 j = 0; j < " << L(inner) << "; ++j) Y[o + j] = "
    << c_store(Y.dtype, c_load(X.dtype, "X[o + j]") + " * scale + shift") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), planes, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, inner))};
}

}  // namespace hpf::jit
