// Constant MatMul/Gemm weights packed once at compile time for the "matmul_wq" kernels, FP32
// Conv weights for the float conv kernels and INT8 Conv weights for "conv_i8"
// (jit/codegen/c_matmul_wq.cpp and conv_packing.hpp describe the layouts): BF16/F16 in panels
// of 16 columns (BF16 also in AMX tile pairs, "bf16t"), INT8 per output channel and INT4
// group-wise along K with the plan's scales. The integers are the ones hpf::quantize gives for
// the same parameters (the reference emulation's), so a quantised plan computes on exactly the
// weights its emulation measured.
//
// Ownership: plain values. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hpf/precision.hpp"
#include "hpf/session.hpp"
#include "hpf/tensor.hpp"
#include "jit/codegen/lowering.hpp"

namespace hpf {

struct PackedWeights {
  std::string format;  // f32 | bf16 | f16 | i8 | i4 (matmul_wq's wformat) | i8vnni | i16vnni (matmul_i8) | conv_i8
  int64_t k = 0, n = 0, group = 0;
  Tensor data;    // U8 bytes in the panel layout (conv_i8: the "i8" layout of conv_packing.hpp)
  Tensor scales;  // F32: i8 / i8vnni [P*16]; i4 per column and group (packed_unit order; BF16 where exact), float formats one placeholder 0;
                  // conv_i8 [M], s_a * s_w[m]
  Tensor column_sums;  // i8vnni: I32 [P*16], the sum over k of column n (times the zero point: its share);
                       // conv_i8 [M], 128 * the sum of output channel m's weights
  // i8vnni, conv_i8: the weights' largest magnitude |q| (128 where some weight is -128). Without
  // VNNI the AVX2 kernels' dot product depends on it (jit::int8_weight_defines): <= 64 the
  // plain vpmaddubsw, <= 127 with the activations' sign moved onto the weights, else widened.
  int32_t max_abs = 128;
};

// Packs `b` (F32; [K, N], or [N, K] when trans_b) into `format`. i8/i4 need `q`, symmetric,
// with scales: i8 per output column (or one per tensor), i4 groups along K (one scale per
// column and group). i8 and i4 in blocks of 4 and 8 rows, one u32 per column and block, 16 per
// panel and block, the panels' blocks in the order of packed_unit (c_matmul_wq.cpp); i4's scales
// likewise, a group in place of a block, BF16 where every scale is a BF16 value (else F32). i8vnni: the same INT8 values in matmul_i8's order,
// [P][ceil(K/4)][16][4] (K padded with zeros); i16vnni the same with I16 values (two bytes each;
// q of I16 parameters, |q| at most int16_operand_qmax(K), else invalid: matmul_i8's 16-bit rows
// take that many levels). Errors: another layout of parameters (unsupported), a non-F32 or
// non-2-D weight (invalid).
Expected<PackedWeights> pack_weights(const Tensor& b, bool trans_b, const std::string& format,
                                     const QuantParams* q = nullptr);

// Packs an INT8 weight `b` ([K, N], I8: a MatMulInteger's) as is into the i8vnni layout, with its
// column sums (scales: one placeholder). Errors: another dtype or rank (invalid).
Expected<PackedWeights> pack_int8_weights(const Tensor& b);

// Where the 16 words (one per column) of panel p's block b (of nb per panel; or its group b of
// scales) lie among `panels` panels, in units of 16 words: panels in items of 4 (the GEMV's work
// item), an item's blocks interleaved (block b of its panels one after the other), so that the
// GEMV reads one stream.
int64_t packed_unit(int64_t p, int64_t b, int64_t nb, int64_t panels);

// The INT4 group a plan's group size `wanted` gives on a reduction of `k`: the largest of
// wanted, wanted/2, ... dividing k, or k itself when that falls below 8 (as calibrate_plan).
int int4_group_for(int64_t k, int wanted);

struct WeightLoweringStats {
  int64_t kernels = 0;  // MatMul/Gemm steps turned into matmul_wq
  std::vector<std::string> nodes;
  std::vector<std::string> int8_nodes;  // of them, those given matmul_i8
};

// For every single-node MatMul/Gemm kernel step of `steps` whose plan gives its constant 2-D
// weight INT8 or INT4 quantisation or BF16/F16 storage: quantises (scales from the plan, or
// computed from the weight as calibrate_plan does when the plan has none), packs, adds the
// packed bytes and scales to `g` as initializers (extending `storage` and `shapes`), and
// rewrites the step into a matmul_wq kernel reading them (the original weight is then read by
// no step, so it gets no device memory). An int8 node with a calibrated activation scale also
// fake-quantises its output with it in the kernel's epilogue, as the emulation stores it.
// An int8 node that hpf::int8_input gives a static or dynamic input scale becomes a matmul_i8
// kernel (u8 x s8 -> s32) quantising A with it; otherwise its INT8 weights are dequantised to
// FP32 (matmul_wq). With `cache` (a WeightCache::create() one), packed weights are looked up there
// before they are made, stored there after, and shared with the graph without a copy.
// With `amx_bf16` (the device's kernels may use AMX-BF16 tiles), a BF16-weight node whose input
// is stored BF16 gets the "bf16t" tile layout and kernel (jit/codegen/c_matmul_amx.cpp); with
// `amx_int8`, matmul_i8 kernels are asked to run on AMX-INT8 tiles (attr amx; the same packing).
// Steps it cannot take (transposed A, batched B, other layouts) stay as they are.
// Without a plan (or for an fp32 or auto node), an F32 weight is packed as F32 too: the GEMV
// (M <= 8) streams it once, the GEMM copies contiguous panels instead of gathering strided rows
// of the original (BERT-base's projections: ~25% faster).
Expected<WeightLoweringStats> lower_weight_quantised_matmuls(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                             std::vector<std::vector<int64_t>>& shapes,
                                                             std::vector<jit::LoweredStep>& steps,
                                                             WeightCache* cache = nullptr, bool amx_bf16 = false,
                                                             bool amx_int8 = false);

// For every Gather kernel step (axis 0 of a constant 2-D F32 table, an embedding) whose plan
// quantises the table to INT8 or INT4 (int4-weights; scales from the plan, else chosen as
// calibrate_plan would: INT8 per row, INT4 in groups along the width): quantises the table with
// hpf::quantize, adds the packed bytes and scales to `g` as initializers and rewrites the step
// into a gather_q kernel, which dequantises the rows it reads (q * scale in FP32: the values the
// emulation's fake quantisation gives). The F32 table is then read by no step and gets no device
// memory. Other scale layouts keep the F32 table, with a warning. With `cache`, shared across
// compiles as lower_weight_quantised_matmuls does. Returns the names of the Gather nodes rewritten.
Expected<std::vector<std::string>> lower_quantised_gathers(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                           std::vector<std::vector<int64_t>>& shapes,
                                                           std::vector<jit::LoweredStep>& steps,
                                                           WeightCache* cache = nullptr);

// For every MatMulInteger kernel step (u8 or s8 A, a constant 2-D INT8 weight whose zero point
// is absent or 0, A's zero point absent or a scalar): packs the weight once (pack_int8_weights),
// adds it and its column sums to `g` as initializers and rewrites the step into a matmul_i8
// kernel with an integer A (exact I32 output, c_matmul_int8.cpp). Other forms stay as they are
// (the reference runs them). With `cache`, shared across compiles as
// lower_weight_quantised_matmuls does, and so does `amx_int8`. Returns the names of the nodes rewritten.
Expected<std::vector<std::string>> lower_integer_matmuls(Graph& g, std::vector<DType>& storage,
                                                        std::vector<std::vector<int64_t>>& shapes,
                                                        std::vector<jit::LoweredStep>& steps, WeightCache* cache = nullptr,
                                                        bool amx_int8 = false);

// For every Conv kernel step whose plan computes it in INT8 (mode int8 with a calibrated
// per-tensor input_quant; plan_from_policy gives it to 1-D and 2-D Convs that are not
// depthwise): quantises the weight per output channel with hpf::quantize (the plan's scales, or
// calibrate_plan's), packs it in the "i8" layout (jit/codegen/conv_packing.hpp) with S = s_a *
// s_w and Z = 128 * each output channel's sum, adds them to `g` as initializers and rewrites the
// step into a conv_i8 kernel (jit/codegen/c_conv_int8.cpp), which quantises its input as the
// emulation's input_quant does and fake-quantises its output with the node's activation scale.
// Errors: an int8 Conv without a calibrated input scale (the emulation would not match).
// With `cache`, shared across compiles as lower_weight_quantised_matmuls does. Returns the
// names of the Conv nodes rewritten.
Expected<std::vector<std::string>> lower_int8_convs(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                    std::vector<std::vector<int64_t>>& shapes,
                                                    std::vector<jit::LoweredStep>& steps, WeightCache* cache = nullptr);

// For every Conv kernel step whose constant weight is stored F32 (or BF16 with a BF16 input, on
// a device with AMX-BF16: `amx_bf16`) and which the C generator runs as implicit GEMM
// (jit::conv_takes_packed_weights): packs the weight once in the layout of
// jit/codegen/conv_packing.hpp (BF16 values rounded as the storage conversion rounds them), adds
// it to `g` as an initializer (extending `storage` and `shapes`) and points the step at it.
// Weights read by several steps are packed once; with `cache`, shared across compiles as
// lower_weight_quantised_matmuls does. Returns the names of the Conv nodes rewritten.
Expected<std::vector<std::string>> lower_packed_convs(Graph& g, std::vector<DType>& storage, std::vector<std::vector<int64_t>>& shapes,
                                     std::vector<jit::LoweredStep>& steps, WeightCache* cache = nullptr,
                                     bool amx_bf16 = false);

}  // namespace hpf
