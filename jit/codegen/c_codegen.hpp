// The C dialect's generators, one per op family (dispatched by generate_c).
#pragma once

#include <functional>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_c_elementwise(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_matmul(const KernelSpec& spec, const std::string& name);
// MatMul/Gemm with constant weights pre-packed by the runtime (bf16/f16/i8/i4 panels, see
// c_matmul_wq.cpp for the layout), FP32 compute.
Expected<GeneratedKernel> generate_c_matmul_wq(const KernelSpec& spec, const std::string& name);
// matmul_wq with wformat "bf16t": BF16 activations and weights on AMX tiles (c_matmul_amx.cpp).
Expected<GeneratedKernel> generate_c_matmul_amx(const KernelSpec& spec, const std::string& name);
// K rounded up to the AMX tile depth (32), as the "bf16t" weights are packed.
int64_t amx_bf16_padded_k(int64_t k);
// `static inline float wq_out(float v, void* const* args, i64 i, i64 j)`: the epilogue of output
// element (i, j) of the packed-weight matmuls (args: the kernel's): alpha, beta * C (input
// `c_input` when the spec has more own inputs), INT8 fake quantisation with attr out_scale when
// set, then the fused steps of KernelSpec::epilogue. Attributes n, alpha, beta, out_scale.
Expected<std::string> c_matmul_epilogue(const KernelSpec& spec, size_t c_input);
// u8 x s8 -> s32 MatMul/Gemm ("matmul_i8"): activations quantised on the fly with attr a_scale,
// weights pre-packed in VNNI order; see c_matmul_int8.cpp.
Expected<GeneratedKernel> generate_c_matmul_i8(const KernelSpec& spec, const std::string& name);
// The weights' range as int8_dot_source's preprocessor reads it: I8_W_HAS_M128 (some weight is
// -128) and I8_W_LE64 (every |q_w| <= 64), from attr w_max_abs (the packed weights' largest
// magnitude; absent: 128, nothing assumed).
std::string int8_weight_defines(const Attributes& attrs);
// The INT8 dot product both INT8 kernels use (after c_prelude() and int8_weight_defines()):
// `i8_dp(acc, a, b)` adds to each 32-bit lane of acc the sum of its 4 u8 bytes of a times the 4
// s8 bytes of b, exactly, chosen by the preprocessor on the host's features (see
// c_matmul_int8.cpp); I8_MR x I8_NP is the register tile it suits (rows x 16-lane vectors) and
// I8_ZP the zero point the u8 operand is stored with (128, or 0 where it is stored signed).
const char* int8_dot_source();
// u8 x s8 -> s32 Conv ("conv_i8"): the input quantised per tensor with attr a_scale, weights
// packed by pack_conv_weights_i8 (conv_packing.hpp); see c_conv_int8.cpp.
Expected<GeneratedKernel> generate_c_conv_i8(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_lstm(const KernelSpec& spec, const std::string& name);
// Fused attention (c_attention.cpp has the spec's contract), and whether its stack buffers hold
// head sizes d and dv with sk keys.
Expected<GeneratedKernel> generate_c_attention(const KernelSpec& spec, const std::string& name);
bool attention_fits(int64_t d, int64_t sk, int64_t dv);
Expected<GeneratedKernel> generate_c_softmax(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_layernorm(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_gather(const KernelSpec& spec, const std::string& name);
// Gather from an INT8/INT4 table the runtime quantised (lower_quantised_gathers).
Expected<GeneratedKernel> generate_c_gather_q(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_dynamic_quantize(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_transpose(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_conv(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_conv_transpose(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_batchnorm(const KernelSpec& spec, const std::string& name);
// maxpool | avgpool | globalavgpool | globalmaxpool
Expected<GeneratedKernel> generate_c_pool(const KernelSpec& spec, const std::string& name);
// reduce (ReduceSum/Mean/Max) | concat | slice | pad | expand | resize
Expected<GeneratedKernel> generate_c_reduce(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_concat(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_slice(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_pad(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_expand(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_c_resize(const KernelSpec& spec, const std::string& name);
// One elementwise step as a C float expression of its operand expressions `in` (elementwise_expr
// in the C spelling); `wide`: the chain computes in double. Errors: an op it does not know.
Expected<std::string> step_expr(const ElementwiseStep& s, const std::vector<std::string>& in, bool wide);
// `e` rounded to format `t` and back to float, as the graph's intermediate value of format t.
std::string round_to_format(DType t, const std::string& e, bool wide);

// Epilogues (KernelSpec::epilogue) of the matmul and conv kernels.
// How epilogue operand `in` broadcasts to the output `out`: 0 a scalar, 1 one value per index of
// output axis `axis` (and constant along the others), 2 the output's own shape, -1 none of these.
int epilogue_operand_kind(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int axis);
// Whether an epilogue may hold op `op` (the elementwise ops the kernels apply in place, and
// BatchNormalization with per-channel parameters).
bool epilogue_takes(const std::string& op);
// Declarations `const T* restrict P<k> = args[k]` of the epilogue's inputs, after checking each
// broadcasts to the output (`axis`: the output's channel axis) and every step is one it takes.
Expected<std::string> epilogue_pointers(const KernelSpec& spec, int axis);
// C statements replacing the float lvalue `acc` (the producer's FP32 result) by the epilogue's
// value, each step rounded to its format; `operand(k)` is a float expression of input k at the
// element. Empty when the spec has no epilogue. With `setup`, statements that depend only on the
// output channel (BatchNormalization's scale and shift; its operands are per channel) are
// appended there instead, for the caller to run once per channel before its element loop.
Expected<std::string> c_epilogue(const KernelSpec& spec, const std::string& acc,
                                 const std::function<std::string(int)>& operand, std::string* setup = nullptr);
// The epilogue on the vector lvalue `acc` (hpf_vf, gemm_micro_source's type) of FP32 results,
// for kernels that finish a tile in registers: the same values as c_epilogue's for the steps it
// covers (Add, Sub, Mul, Div, Identity, Relu, Clip, every step and operand FP32); `operand(k)` is
// a scalar or hpf_vf expression of input k. Unsupported otherwise (the caller keeps the scalar
// path). Braces around its statements; none but the braces for an empty epilogue.
Expected<std::string> c_epilogue_vector(const KernelSpec& spec, const std::string& acc,
                                        const std::function<std::string(int)>& operand);

// Lowering helpers: the family that takes node `n` ("" for none: it stays a reference fallback),
// with the operands read from constant inputs (and resolved defaults) added to `attrs`.
std::string bake_reduce(const Graph& g, const Node& n, Attributes& attrs);
std::string bake_movement(const Graph& g, const Node& n, Attributes& attrs);

}  // namespace hpf::jit
