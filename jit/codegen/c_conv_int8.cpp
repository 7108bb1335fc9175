// INT8 Conv ("conv_i8"): u8 activations x s8 weights -> s32, for int8 plans (2-D NCHW and 1-D as
// 2-D; groups, strides, dilations, pads; not depthwise, which the plan keeps in floats).
//
// The input is quantised per tensor as hpf::quantize does it (x / s rounded half to even, NaN ->
// 0, clamped to [-128, 127]) with attr a_scale (calibrated: NodePlan::input_quant) and held as
// u8 = q + I8_ZP (see int8_dot_source; with attr a_nonneg, an input never negative by
// construction, q is 0..127 and held as it is); padding reads as q = 0. Weights come packed in the "i8"
// layout (conv_packing.hpp: k-groups of 4 channels at one tap, output channels in blocks of 12)
// with their per-channel scales folded into S[m] = s_a * s_w[m] and Z[m] = I8_ZP * the sum of
// channel m's weights, so that
//   y[m, p] = (sum_k u8[k, p] * w[m, k] - Z[m]) * S[m]
// with the sum exact in 32 bits. Then the bias, the output's fake quantisation with attr
// out_scale when the plan stores the output as INT8 (x / s rounded, clamped, times s: the value
// the emulation holds), and the fused epilogue. Inputs: X (float), W (U8 bytes), S (F32 [M]),
// Z (I32 [M]), optional bias, the epilogue's operands.
//
// Implicit GEMM with output pixels as the vector lanes: a work item is one block of 64 output
// pixels and up to MT output channels of one (image, group); where input rows are much wider
// than a block reads, blocks stay inside one output row. Per slice of channel quads it
// quantises the input the block reads once (the rows its output rows read, all their columns,
// or for a block inside one row only the columns it reads; padding included: a window of u32
// words, one per input pixel, each 4 channels), then gathers each tap's words into the packed
// block bp[kg][64] (a 1x1 unpadded Conv quantises straight into bp), and per 12-row weight
// block runs I8_MR x (I8_NP x 16 pixels) register tiles: per k-group, I8_NP loads of pixels and
// I8_MR broadcasts of one row's 4 weights, I8_MR * I8_NP dot products (with 256-bit vectors, a
// block's last 8 pixels or fewer as 8: I8_HALF; 4 or fewer with the output channels in the lanes:
// i8c_tailr). 32-bit accumulators live in a tile on the stack across slices.
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/conv_geometry.hpp"
#include "jit/codegen/conv_packing.hpp"

namespace hpf::jit {
namespace {
// Output pixels per work item: the register tile's 4 vectors of 16. (256 ran ResNet-50 7% slower:
// the packed block and the accumulators then spill out of L1.)
constexpr int64_t kPixels = 64;
constexpr int64_t kMaxRows = 240;         // output channels per work item, at most (a multiple of 12)
constexpr int64_t kMaxRowsFew = 528;      // the same where the map has fewer pixel blocks than kMinItems
constexpr int64_t kMinItems = 4;          // work items, at least (output channels split further)
constexpr int64_t kWindowBytes = 32768;   // the quantised input window of a slice, about
constexpr int64_t kSliceGroups = 96;      // k-groups per slice, at most
constexpr int64_t kReuseGroups = 128;     // the same for a pointwise block kept across channel blocks
// i8c_tailr holds a weight block's rows as 8 + 4 lanes; it computes all 12 of the last block,
// rows past mc too (their weights are zero, and acc holds MT rows, a multiple of 12).
static_assert(kConvI8Rows == 12);
}  // namespace

Expected<GeneratedKernel> generate_c_conv_i8(const KernelSpec& in_spec, const std::string& name) {
  const size_t own = in_spec.inputs.size() - static_cast<size_t>(std::max(0, in_spec.epilogue_inputs));
  if (own < 4 || own > 5 || in_spec.outputs.size() != 1)
    return Status::invalid("conv_i8: needs X, W, S, Z, optional B and one output");
  const bool has_b = own == 5;
  const std::vector<int64_t> w_shape = attr_ints(in_spec.attrs, "w_shape");
  const float a_scale = attr_f(in_spec.attrs, "a_scale", 0.0f);
  if (w_shape.size() != in_spec.inputs[0].shape.size() || !(a_scale > 0))
    return Status::invalid("conv_i8: needs w_shape of the input's rank and a_scale > 0");
  if (in_spec.inputs[1].dtype != DType::U8 || in_spec.inputs[2].dtype != DType::F32 ||
      in_spec.inputs[3].dtype != DType::I32)
    return Status::invalid("conv_i8: W must be U8 bytes, S F32 and Z I32");
  // Epilogue operands broadcast against the output as given (before a 1-D conv is lifted).
  std::vector<int> kinds(in_spec.inputs.size(), -1);
  for (size_t k = own; k < in_spec.inputs.size(); ++k)
    kinds[k] = epilogue_operand_kind(in_spec.inputs[k].shape, in_spec.outputs[0].shape, 1);
  KernelSpec shaped = in_spec;
  shaped.inputs[1].shape = w_shape;
  const KernelSpec spec = shaped.inputs[0].shape.size() == 3 ? lift_1d(shaped) : shaped;
  KernelSpec plain;  // X, W, B: the geometry
  plain.family = "conv";
  plain.inputs = {spec.inputs[0], {DType::F32, spec.inputs[1].shape}};
  if (has_b) plain.inputs.push_back(spec.inputs[4]);
  plain.outputs = spec.outputs;
  plain.attrs = spec.attrs;
  HPF_ASSIGN_OR_RETURN(ConvGeometry cg, conv_geometry(plain, "C codegen"));
  const conv::Shape z = conv::shape_of(cg);
  if (z.OH <= 0 || z.OW <= 0) return Status::invalid("conv_i8: empty output");
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  const int64_t KK = z.KH * z.KW, CQ = (z.CG + 3) / 4, KG = conv_i8_groups(z.CG, KK), P = z.OH * z.OW;
  const int64_t RB = (z.MG + kConvI8Rows - 1) / kConvI8Rows;
  if (numel(in_spec.inputs[1].shape) != conv_i8_packed_bytes(w_shape, z.G) || numel(in_spec.inputs[2].shape) != z.M ||
      numel(in_spec.inputs[3].shape) != z.M)
    return Status::invalid("conv_i8: packed weights " + shape_string(in_spec.inputs[1].shape) + ", S or Z do not fit weight " +
                           shape_string(w_shape));
  // A 1x1 unpadded Conv reads one input pixel per output pixel: its block's pixels are quantised
  // straight into bp, read in place (unit strides: `flat`) or through a table of their offsets.
  const bool flat = conv::plane_of(z).flat;
  const bool pointwise = flat || (z.KH == 1 && z.KW == 1 && z.PH == 0 && z.PW == 0 && (z.OH - 1) * z.SH < z.H &&
                                  (z.OW - 1) * z.SW < z.W && z.H * z.W < (int64_t{1} << 31));
  // Rows much wider than a block reads (a long 1-D row would be quantised whole for every block):
  // blocks stay inside one output row, and the window holds only the columns the block reads.
  const int64_t WP = std::max((z.OW - 1) * z.SW + (z.KW - 1) * z.DW + 1, z.PW + z.W);
  const int64_t span = (kPixels - 1) * z.SW + (z.KW - 1) * z.DW + 1;  // the columns a block inside a row reads
  const bool rowwise = !pointwise && z.OW > kPixels && WP > 2 * span;
  const int64_t PBr = (z.OW + kPixels - 1) / kPixels;  // blocks per output row (rowwise)
  const int64_t PB = rowwise ? z.OH * PBr : (P + kPixels - 1) / kPixels;
  // At least kMinItems work items, output channels split where pixel blocks are fewer; every
  // item quantises its input window again, so a small map (7x7: one block) takes wider items:
  // ResNet-50's 7x7 layers in 8 or 9 items spent a fifth of their time quantising, one core in
  // a C harness 1.59 -> 1.40 ms in 4 (a 1024 -> 2048 downsample, 516 rows an item).
  const int64_t items = z.N * z.G * PB;
  const auto [MB, MT] =
      conv::row_blocks(z.MG, items, items < kMinItems ? kMaxRowsFew : kMaxRows, kConvI8Rows, kMinItems);
  // The window: the input rows a block's output rows read (RW at most), each WX padded columns
  // from the block's first, cx0 (padded column x is input column x - PW).
  const int64_t spans = rowwise ? 1 : std::min<int64_t>(z.OH, (kPixels - 1) / z.OW + 2);
  const int64_t RW = (spans - 1) * z.SH + (z.KH - 1) * z.DH + 1;
  const int64_t WX = rowwise ? span : WP;
  const int64_t CS = std::clamp<int64_t>(
      pointwise ? (MB > 1 && CQ <= kReuseGroups ? CQ : kSliceGroups) : std::min(kSliceGroups / KK, kWindowBytes / (4 * RW * WX)),
      1, CQ);
  const int64_t SG = CS * KK;  // k-groups per slice
  // A pointwise block whose channels fit one slice (up to kReuseGroups quads where the output
  // channels come in blocks: bp 32 KiB) keeps its quantised pixels in bp for the next item:
  // output channel blocks innermost, so a range's items of one pixel block quantise it once.
  // ResNet-50's stride-2 downsamples, one core in a C harness: 256 -> 512 1.45 -> 1.23 ms (its
  // strided reads of the input from L3 had taken a third of the time, once per channel block),
  // 512 -> 1024 (two slices before) 1.38 -> 1.07.
  const bool reuse = pointwise && CS >= CQ && MB > 1;
  const float out_scale = attr_f(in_spec.attrs, "out_scale", 0.0f);
  std::string fq;
  if (out_scale > 0)  // the emulation's fake quantisation of the node's output
    fq = "{ float r = v / " + c_float(out_scale) + ";\n"
         "  r = r != r ? 0.0f : (__builtin_fabsf(r) < 8388608.0f ? __builtin_rintf(r) : r);\n"
         "  r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);\n"
         "  v = r * " + c_float(out_scale) + "; }\n";
  HPF_ASSIGN_OR_RETURN(conv::Finish fin, conv::finish_value(spec, kinds, has_b ? 4 : -1, "yo", "jj", fq));
  HPF_ASSIGN_OR_RETURN(std::string epi_ptrs, epilogue_pointers(in_spec, 1));
  const char* xt = c_storage_type(X.dtype);
  const char* yt = c_storage_type(Y.dtype);
  const std::string HW = L(z.H * z.W);
  // 16 input values (lane u reads src[u]; the first n valid, the rest read as 0, i.e. as
  // padding), quantised into byte ci of the 32-bit lanes of `word`; `floats`: src points at
  // floats (i8c_load's masked loads), else at X's storage type, converted one by one.
  auto quant16 = [&](const std::string& src, const std::string& n, bool floats) {
    std::ostringstream q;
    if (floats) {
      q << "          word |= ((i8c_q(i8c_load(" << src << ", " << n << ")) & 0xff) << (8 * ci));\n";
      return q.str();
    }
    const std::string x = c_load_operand(X.dtype, src + "[u]");
    q << "          float t[16] __attribute__((aligned(64)));\n"
      << "          if (" << n << " == 16) { for (int u = 0; u < 16; ++u) t[u] = " << x << "; }\n"
      << "          else { for (int u = 0; u < 16; ++u) t[u] = u < " << n << " ? " << x << " : 0.0f; }\n"
      << "          hpf_f32x16 x; __builtin_memcpy(&x, t, 64);\n"
      << "          word |= ((i8c_q(x) & 0xff) << (8 * ci));\n";
    return q.str();
  };
  auto tile_fn = [&](const std::string& fname, const std::string& np) {
    std::ostringstream t;
    t << "static inline __attribute__((always_inline, min_vector_width(512))) void " << fname << "(\n"
      << "    const u32* restrict bp, const u8* restrict wb, i32* restrict acc, i64 ng, int first) {\n"
      << "  i8_v16 a[I8_MR][" << np << "];\n"
      << "#pragma clang loop unroll(full)\n"
      << "  for (int r = 0; r < I8_MR; ++r)\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < " << np << "; ++c) a[r][c] = first ? (i8_v16){} : *(const i8_v16*)(acc + r * " << kPixels
      << " + c * 16);\n"
      << "  i64 kg = 0;\n"
      << "#if I8_PAIR\n"  // two k-groups per step (i8_dp2)
      << "  for (; kg + 1 < ng; kg += 2) {\n"
      << "    i8_v16 b[" << np << "], b2[" << np << "];\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < " << np << "; ++c) {\n"
      << "      b[c] = *(const i8_v16*)(bp + kg * " << kPixels << " + c * 16);\n"
      << "      b2[c] = *(const i8_v16*)(bp + (kg + 1) * " << kPixels << " + c * 16);\n"
      << "    }\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int r = 0; r < I8_MR; ++r) {\n"
      << "      i32 w4, w5;\n"
      << "      __builtin_memcpy(&w4, wb + kg * " << kConvI8Rows * 4 << " + r * 4, 4);\n"
      << "      __builtin_memcpy(&w5, wb + (kg + 1) * " << kConvI8Rows * 4 << " + r * 4, 4);\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int c = 0; c < " << np << "; ++c) a[r][c] = i8_dp2(a[r][c], b[c], (i8_v16){} + w4, b2[c], (i8_v16){} + w5);\n"
      << "    }\n"
      << "  }\n"
      << "#endif\n"
      << "  for (; kg < ng; ++kg) {\n"
      << "    i8_v16 b[" << np << "];\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < " << np << "; ++c) b[c] = *(const i8_v16*)(bp + kg * " << kPixels << " + c * 16);\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int r = 0; r < I8_MR; ++r) {\n"
      << "      i32 w4; __builtin_memcpy(&w4, wb + kg * " << kConvI8Rows * 4 << " + r * 4, 4);\n"
      << "      const i8_v16 w = (i8_v16){} + w4;\n"
      << "#pragma clang loop unroll(full)\n"
      << "      for (int c = 0; c < " << np << "; ++c) a[r][c] = i8_dp(a[r][c], b[c], w);\n"
      << "    }\n"
      << "  }\n"
      << "#pragma clang loop unroll(full)\n"
      << "  for (int r = 0; r < I8_MR; ++r)\n"
      << "#pragma clang loop unroll(full)\n"
      << "    for (int c = 0; c < " << np << "; ++c) __builtin_memcpy(acc + r * " << kPixels << " + c * 16, &a[r][c], 64);\n"
      << "}\n";
    return t.str();
  };
  std::ostringstream s;
  s << c_prelude() << int8_weight_defines(in_spec.attrs)
    << int8_dot_source()
    << "#define I8C_PAD ((u32)(I8_ZP * 0x01010101u))\n"
    // n (0..16) consecutive floats, the rest 0 (quantised: the zero point, i.e. padding); with
    // AVX2 masked loads, not 16 branches.
    << "static inline __attribute__((always_inline)) hpf_f32x16 i8c_load(const float* restrict src, i64 n) {\n"
    << "  hpf_f32x16 x;\n"
    << "  if (n == 16) { __builtin_memcpy(&x, src, 64); return x; }\n"
    << "#if defined(__AVX2__) && !defined(__AVX512F__)\n"
    << "  typedef float f32x8 __attribute__((vector_size(32)));\n"
    << "  const i8_v16 m = (i8_v16){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} < (i8_v16){} + (i32)n;\n"
    << "  const f32x8 lo = __builtin_ia32_maskloadps256((const f32x8*)src, __builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7));\n"
    << "  const f32x8 hi = __builtin_ia32_maskloadps256((const f32x8*)(src + 8), __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15));\n"
    << "  x = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);\n"
    << "#else\n"
    << "  float t[16] __attribute__((aligned(64)));\n"
    << "  for (int u = 0; u < 16; ++u) t[u] = u < n ? src[u] : 0.0f;\n"
    << "  __builtin_memcpy(&x, t, 64);\n"
    << "#endif\n"
    << "  return x;\n"
    << "}\n"
    // x / s, NaN -> 0, clamped, rounded half to even, plus the zero point.
    << "static inline __attribute__((always_inline)) i8_v16 i8c_q(hpf_f32x16 x) {\n"
    << "  return i8_quant(x / ((hpf_f32x16){} + " << c_float(a_scale) << "));\n"
    << "}\n"
    // One register tile: I8_MR rows of a weight block (48 bytes per k-group) by NP vectors of
    // 16 pixels, over ng k-groups; the accumulators start at zero (first slice) or from acc.
    // i8c_tile has I8_NP vectors; i8c_tile1..3 serve a ragged last block (a 14x14 map's 196
    // pixels end in a block of 4: one vector, not four).
    << tile_fn("i8c_tile", "I8_NP") << tile_fn("i8c_tile1", "1") << tile_fn("i8c_tile2", "2") << tile_fn("i8c_tile3", "3")
    // With 256-bit vectors (I8_HALF), a last vector of at most 8 pixels in one: a 7x7 map's 49
    // pixels ran as 64 (4 x 16), now 56.
    << "#if I8_HALF\n"
    << "static inline __attribute__((always_inline)) void i8c_tileh(\n"
    << "    const u32* restrict bp, const u8* restrict wb, i32* restrict acc, i64 ng, int first) {\n"
    << "  i8_v8 a[I8_MR];\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int r = 0; r < I8_MR; ++r) a[r] = first ? (i8_v8){} : *(const i8_v8*)(acc + r * " << kPixels << ");\n"
    << "  for (i64 kg = 0; kg < ng; ++kg) {\n"
    << "    const i8_v8 b = *(const i8_v8*)(bp + kg * " << kPixels << ");\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int r = 0; r < I8_MR; ++r) {\n"
    << "      i32 w4; __builtin_memcpy(&w4, wb + kg * " << kConvI8Rows * 4 << " + r * 4, 4);\n"
    << "      a[r] = i8_dp8(a[r], b, (i8_v8){} + w4);\n"
    << "    }\n"
    << "  }\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int r = 0; r < I8_MR; ++r) __builtin_memcpy(acc + r * " << kPixels << ", &a[r], 32);\n"
    << "}\n"
    // A last vector of at most I8C_TAIL pixels (a 14x14 map's 196 end in 4, a 7x7 map's 49 in
    // 1) with the output channels in the lanes instead: per k-group the weight block's 12 rows
    // (48 bytes: rows 0-7 one vector, rows 8-11 half of another) against each pixel's word
    // broadcast, 2 dot products a pixel where i8c_tileh takes 12 for the block's rows whatever
    // the pixels. One Zen 3 core in a C harness: ResNet-50's 3x3 Conv on 7x7 (512 channels)
    // 1.41 -> 1.26 ms, the 512 -> 1024 downsample's last 4 pixels 0.069 -> 0.053.
    << "#define I8C_TAIL 4\n"
    << "static inline __attribute__((always_inline)) void i8c_tailr(\n"
    << "    const u32* restrict bp, const u8* restrict wb, i32* restrict acc, i64 ng, int first, const int np) {\n"
    << "  i8_v8 lo[I8C_TAIL], hi[I8C_TAIL];\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int p = 0; p < I8C_TAIL; ++p) lo[p] = hi[p] = (i8_v8){};\n"
    << "  for (i64 kg = 0; kg < ng; ++kg) {\n"
    << "    i8_v8 w0, w1 = {};\n"
    << "    __builtin_memcpy(&w0, wb + kg * " << kConvI8Rows * 4 << ", 32);\n"
    << "    __builtin_memcpy(&w1, wb + kg * " << kConvI8Rows * 4 << " + 32, 16);\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int p = 0; p < I8C_TAIL; ++p) {\n"
    << "      if (p >= np) break;\n"
    << "      const i8_v8 x = (i8_v8){} + (i32)bp[kg * " << kPixels << " + p];\n"
    << "      lo[p] = i8_dp8(lo[p], x, w0);\n"
    << "      hi[p] = i8_dp8(hi[p], x, w1);\n"
    << "    }\n"
    << "  }\n"
    << "#pragma clang loop unroll(full)\n"
    << "  for (int p = 0; p < I8C_TAIL; ++p) {\n"
    << "    if (p >= np) break;\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int r = 0; r < 8; ++r) acc[r * " << kPixels << " + p] = (first ? 0 : acc[r * " << kPixels << " + p]) + lo[p][r];\n"
    << "#pragma clang loop unroll(full)\n"
    << "    for (int r = 0; r < 4; ++r) acc[(8 + r) * " << kPixels << " + p] = (first ? 0 : acc[(8 + r) * " << kPixels << " + p]) + hi[p][r];\n"
    << "  }\n"
    << "}\n"
    // np as a constant in each call, so that the loops above unroll to exactly np pixels.
    << "static inline __attribute__((always_inline)) void i8c_tail(\n"
    << "    const u32* restrict bp, const u8* restrict wb, i32* restrict acc, i64 ng, int first, i64 np) {\n"
    << "  switch (np) {\n"
    << "    case 1: i8c_tailr(bp, wb, acc, ng, first, 1); break;\n"
    << "    case 2: i8c_tailr(bp, wb, acc, ng, first, 2); break;\n"
    << "    case 3: i8c_tailr(bp, wb, acc, ng, first, 3); break;\n"
    << "    default: i8c_tailr(bp, wb, acc, ng, first, 4); break;\n"
    << "  }\n"
    << "}\n"
    << "#endif\n"
    << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << xt << "* restrict X = (const " << xt << "*)args[0];\n"
    << "  const u8* restrict Wq = (const u8*)args[1];\n"
    << "  const float* restrict S = (const float*)args[2];\n"
    << "  const i32* restrict Z = (const i32*)args[3];\n";
  if (has_b)
    s << "  const " << c_storage_type(spec.inputs[4].dtype) << "* restrict B = (const "
      << c_storage_type(spec.inputs[4].dtype) << "*)args[4];\n";
  s << epi_ptrs << "  " << yt << "* restrict Y = (" << yt << "*)args[" << in_spec.inputs.size() << "];\n"
    << "  u32 bp[" << SG * kPixels << "] __attribute__((aligned(64)));\n"
    << (pointwise ? "" : "  u32 xq[" + std::to_string(CS * RW * WX + 16) + "] __attribute__((aligned(64)));\n")
    << (pointwise && !flat ? "  i32 off[" + std::to_string(kPixels) + "];\n" : "")
    << "  i32 acc[" << MT * kPixels << "] __attribute__((aligned(64)));\n"
    << "  float a[" << kPixels << "] __attribute__((aligned(64)));\n"
    << "  i64 sj[" << kPixels + 1 << "], sl[" << kPixels + 1 << "], sr[" << kPixels + 1 << "], sc[" << kPixels + 1
    << "];\n"
    << (reuse ? "  i64 held = -1;  // the pixel block bp holds (w / MB)\n  for (i64 w = begin; w < end; held = w / " + L(MB) +
                    ", ++w) {\n"
              : "  for (i64 w = begin; w < end; ++w) {\n");
  {
    // Pixel blocks innermost (a range continues the same output rows block after block), or
    // channel blocks where the pixels are kept (reuse).
    const char *inner = reuse ? "mb" : "pb", *outer = reuse ? "pb" : "mb";
    const int64_t ni = reuse ? MB : PB, no = reuse ? PB : MB;
    s << "    const i64 " << inner << " = w % " << L(ni) << ", " << outer << " = (w / " << L(ni) << ") % " << L(no)
      << ", g = (w / " << L(MB * PB) << ") % " << L(z.G) << ", n = w / " << L(MB * PB * z.G) << ";\n";
  }
  if (rowwise)
    s << "    const i64 bx = (pb % " << L(PBr) << ") * " << kPixels << ", p0 = (pb / " << L(PBr) << ") * " << L(z.OW)
      << " + bx, nc = " << L(z.OW) << " - bx < " << kPixels << " ? " << L(z.OW) << " - bx : " << kPixels << ";\n"
      << "    const i64 cx0 = bx * " << L(z.SW) << ";\n";
  else
    s << "    const i64 p0 = pb * " << kPixels << ", nc = " << L(P) << " - p0 < " << kPixels << " ? " << L(P)
      << " - p0 : " << kPixels << ", cx0 = 0;\n    (void)cx0;\n";
  s
    << conv::channel_block(z.MG, MT)
    << "    const " << xt << "* restrict xg = X + (n * " << L(z.C) << " + g * " << L(z.CG) << ") * " << HW << ";\n";
  if (pointwise && !flat)
    s << "    for (i64 j = 0; j < nc; ++j) {\n"
      << "      const i64 p = p0 + j;\n"
      << "      off[j] = (i32)((p / " << L(z.OW) << ") * " << L(z.SH * z.W) << " + (p % " << L(z.OW) << ") * " << L(z.SW)
      << ");\n"
      << "    }\n";
  if (!pointwise)
    // Segments of the block: runs inside one output row (window row sr, padded column sc of
    // the first tap); past nc, padding.
    s << "    const i64 oha = p0 / " << L(z.OW) << ", ohb = (p0 + nc - 1) / " << L(z.OW) << ";\n"
      << "    const i64 ih0 = oha * " << L(z.SH) << " - " << L(z.PH) << ", rw = (ohb - oha) * " << L(z.SH) << " + "
      << L((z.KH - 1) * z.DH + 1) << ";\n"
      << "    i64 ns = 0;\n"
      << "    for (i64 j = 0; j < nc;) {\n"
      << "      const i64 p = p0 + j, oh = p / " << L(z.OW) << ", ow = p % " << L(z.OW) << ";\n"
      << "      i64 len = " << L(z.OW) << " - ow < nc - j ? " << L(z.OW) << " - ow : nc - j;\n"
      << "      sj[ns] = j; sl[ns] = len; sr[ns] = (oh - oha) * " << L(z.SH) << "; sc[ns] = ow * " << L(z.SW) << " - cx0;\n"
      << "      ++ns; j += len;\n"
      << "    }\n";
  s << "    for (i64 q0 = 0; q0 < " << L(CQ) << "; q0 += " << L(CS) << ") {\n"
    << "      const i64 cs = " << L(CQ) << " - q0 < " << L(CS) << " ? " << L(CQ) << " - q0 : " << L(CS) << ";\n";
  if (pointwise) {
    // Pointwise: quad q's word of pixel j is bp[q * 64 + j].
    s << (reuse ? "      if (w / " + L(MB) + " != held)\n" : "") << "      for (i64 q = 0; q < cs; ++q) {\n"
      << "        u32* restrict d = bp + q * " << kPixels << ";\n";
    if (!flat)  // the block's pixels of each channel, gathered into floats (16 at a time: 2.5 cycles a value)
      s << "        float tf[4][" << kPixels << "] __attribute__((aligned(64)));\n"
        << "        for (int ci = 0; ci < 4; ++ci) {\n"
        << "          const i64 c = (q0 + q) * 4 + ci;\n"
        << "          if (c >= " << L(z.CG) << ") continue;\n"
        << "          const " << xt << "* restrict src = xg + c * " << HW << ";\n"
        << "          for (i64 j = 0; j < nc; ++j) tf[ci][j] = " << c_load_operand(X.dtype, "src[off[j]]") << ";\n"
        << "        }\n";
    s << "        for (i64 j = 0; j < " << kPixels << "; j += 16) {\n"
      << "          const i64 nv = nc - j >= 16 ? 16 : (nc - j > 0 ? nc - j : 0);\n"
      << "          i8_v16 word = (i8_v16){} + (i32)I8C_PAD;\n"
      << "          if (nv > 0) {\n"
      << "            word = (i8_v16){};\n"
      << "            for (int ci = 0; ci < 4; ++ci) {\n"
      << "              const i64 c = (q0 + q) * 4 + ci;\n"
      << "              if (c >= " << L(z.CG) << ") { word |= (i8_v16){} + (I8_ZP << (8 * ci)); continue; }\n"
      << (flat ? "              const " + std::string(xt) + "* restrict src = xg + c * " + HW + " + p0 + j;\n" +
                     quant16("src", "nv", X.dtype == DType::F32)
               : quant16("tf[ci] + j", "nv", true))
      << "            }\n"
      << "          }\n"
      << "          __builtin_memcpy(d + j, &word, 64);\n"
      << "        }\n"
      << "      }\n";
  } else {
    // The window of the slice's quads: rw rows of WX words from padded column cx0, padding where
    // the taps read outside the input (columns [xlo, xhi) hold input values).
    s << "      const i64 xlo = " << L(z.PW) << " - cx0 > 0 ? " << L(z.PW) << " - cx0 : 0;\n"
      << "      const i64 xhi = " << L(z.PW + z.W) << " - cx0 < " << L(WX) << " ? " << L(z.PW + z.W) << " - cx0 : " << L(WX)
      << ";\n"
      << "      for (i64 q = 0; q < cs; ++q)\n"
      << "        for (i64 ir = 0; ir < rw; ++ir) {\n"
      << "          u32* restrict d = xq + (q * " << L(RW) << " + ir) * " << L(WX) << ";\n"
      << "          const i64 ih = ih0 + ir;\n"
      << "          if ((unsigned long long)ih >= (unsigned long long)" << L(z.H) << " || xhi <= xlo) {\n"
      << "            for (i64 x = 0; x < " << L(WX) << "; ++x) d[x] = I8C_PAD;\n"
      << "            continue;\n"
      << "          }\n"
      << "          for (i64 x = 0; x < xlo; ++x) d[x] = I8C_PAD;\n"
      << "          for (i64 x = xlo; x < xhi; x += 16) {\n"
      << "            const i64 nv = xhi - x < 16 ? xhi - x : 16;\n"
      << "            i8_v16 word = (i8_v16){};\n"
      << "            for (int ci = 0; ci < 4; ++ci) {\n"
      << "              const i64 c = (q0 + q) * 4 + ci;\n"
      << "              if (c >= " << L(z.CG) << ") { word |= (i8_v16){} + (I8_ZP << (8 * ci)); continue; }\n"
      << "              const " << xt << "* restrict src = xg + c * " << HW << " + ih * " << L(z.W) << " + cx0 + x - "
      << L(z.PW) << ";\n"
      << quant16("src", "nv", X.dtype == DType::F32)
      << "            }\n"
      // 16 words: those past nv are pads (the next row's, rewritten with it, or xq's 16 spare).
      << "            __builtin_memcpy(d + x, &word, 64);\n"
      << "          }\n"
      << "          for (i64 x = xhi; x < " << L(WX) << "; ++x) d[x] = I8C_PAD;\n"
      << "        }\n"
      // Each (quad, tap) k-group's words for the block's pixels.
      << "      for (i64 q = 0; q < cs; ++q)\n"
      << "        for (i64 r = 0; r < " << L(KK) << "; ++r) {\n"
      << "          u32* restrict d = bp + (q * " << L(KK) << " + r) * " << kPixels << ";\n"
      << "          const u32* restrict src = xq + (q * " << L(RW) << " + (r / " << L(z.KW) << ") * " << L(z.DH) << ") * "
      << L(WX) << " + (r % " << L(z.KW) << ") * " << L(z.DW) << ";\n"
      << "          for (i64 e = 0; e < ns; ++e) {\n"
      << "            const u32* restrict sp = src + sr[e] * " << L(WX) << " + sc[e];\n"
      << "            u32* restrict dp = d + sj[e];\n"
      << "            for (i64 t = 0; t < sl[e]; ++t) dp[t] = sp[t * " << L(z.SW) << "];\n"
      << "          }\n"
      << "          for (i64 j = nc; j < " << kPixels << "; ++j) d[j] = I8C_PAD;\n"
      << "        }\n";
  }
  // The slice's k-groups: quads q0.. of every tap, at kg0 in the packed weights.
  s << "      const i64 ng = cs * " << L(KK) << ", kg0 = q0 * " << L(KK) << ";\n"
    << "      for (i64 tb = 0; tb * " << kConvI8Rows << " < mc; ++tb) {\n"
    << "        const u8* restrict wb = Wq + ((g * " << L(RB) << " + ic / " << kConvI8Rows << " + tb) * " << L(KG)
    << " + kg0) * " << kConvI8Rows * 4 << ";\n"
    << "        for (int i0 = 0; i0 < " << kConvI8Rows << " && tb * " << kConvI8Rows << " + i0 < mc; i0 += I8_MR)\n"
    << "          for (int pv = 0; pv * 16 < nc; pv += I8_NP) {\n"
    << "            const u32* restrict bv = bp + pv * 16;\n"
    << "            const u8* restrict wv = wb + i0 * 4;\n"
    << "            i32* restrict av = acc + (tb * " << kConvI8Rows << " + i0) * " << kPixels << " + pv * 16;\n"
    << "            const i64 nv = (nc - pv * 16 + 15) / 16;  // vectors of pixels left in the block\n"
    << "#if I8_HALF\n"
    << "            if (nc - pv * 16 <= I8C_TAIL) { if (i0 == 0) i8c_tail(bv, wb, av, ng, q0 == 0, nc - pv * 16); continue; }\n"
    << "            if (nc - pv * 16 <= 8) { i8c_tileh(bv, wv, av, ng, q0 == 0); continue; }\n"
    << "#endif\n"
    << "            if (nv >= I8_NP) i8c_tile(bv, wv, av, ng, q0 == 0);\n"
    << "            else if (nv == 1) i8c_tile1(bv, wv, av, ng, q0 == 0);\n"
    << "            else if (nv == 2) i8c_tile2(bv, wv, av, ng, q0 == 0);\n"
    << "            else i8c_tile3(bv, wv, av, ng, q0 == 0);\n"
    << "          }\n"
    << "      }\n"
    << "    }\n"
    << "    for (i64 ii = 0; ii < mc; ++ii) {\n"
    << "      const i64 mo = g * " << L(z.MG) << " + ic + ii;\n"
    << "      const i64 yo = (n * " << L(z.M) << " + mo) * " << L(P) << " + p0;\n"
    << "      (void)yo;\n"
    << "      const float sm = S[mo];\n"
    << "      const i32 zm = I8_ZP ? Z[mo] : 0;\n"
    << "      const i32* restrict at = acc + ii * " << kPixels << ";\n"
    << "      for (i64 jj = 0; jj < nc; ++jj) a[jj] = (float)(at[jj] - zm) * sm;\n";
  s << conv::finish_store(spec, fin, "(Y + yo)", "a", "nc") << "    }\n  }\n}\n";
  const int64_t per_item = std::max<int64_t>(1, MT * KG * 4 * kPixels);
  return GeneratedKernel{name, s.str(), items * MB, std::max<int64_t>(1, (1 << 21) / per_item)};
}

}  // namespace hpf::jit
