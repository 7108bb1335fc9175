// The GPU dialects' generators, one per op family (dispatched by generate_gpu). Each takes the
// kernel's name and the dialect; see gpu_codegen.hpp for the launch rule and the prelude.
// Errors name the dialect and family: "<dialect> <family>: ...".
#pragma once

#include "jit/codegen/gpu_codegen.hpp"

namespace hpf::jit {

// Elementwise chains: one thread per element, grid-stride loop, each step in FP32 rounded to
// its format, casts included; inputs broadcast by strides baked in as constants.
Expected<GeneratedKernel> generate_gpu_elementwise(const KernelSpec& spec, const std::string& name, GpuDialect d);
// Softmax / LogSoftmax over the last axis: one block per row, block reductions in FP32.
Expected<GeneratedKernel> generate_gpu_softmax(const KernelSpec& spec, const std::string& name, GpuDialect d);
// LayerNormalization: one block per row; BatchNormalization (inference): one thread per element.
Expected<GeneratedKernel> generate_gpu_layernorm(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_batchnorm(const KernelSpec& spec, const std::string& name, GpuDialect d);
// reduce (ReduceSum/Mean/Max; one thread per output), globalavgpool/globalmaxpool (a block per
// plane), maxpool/avgpool (one thread per output; generate_gpu_pool takes all four families).
Expected<GeneratedKernel> generate_gpu_reduce(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_global_pool(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_pool(const KernelSpec& spec, const std::string& name, GpuDialect d);
// Data movement, one thread per output element, bits copied when formats agree.
Expected<GeneratedKernel> generate_gpu_gather(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_transpose(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_concat(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_slice(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_pad(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_expand(const KernelSpec& spec, const std::string& name, GpuDialect d);
// Attention (attention_form.hpp): a block per query row, scores and probabilities in shared
// memory, the scores' epilogue (scale, mask) applied in the kernel.
Expected<GeneratedKernel> generate_gpu_attention(const KernelSpec& spec, const std::string& name, GpuDialect d);
// LSTM (lstm_form.hpp): a block per (direction, batch row), a warp per gate row, state in shared
// memory.
Expected<GeneratedKernel> generate_gpu_lstm(const KernelSpec& spec, const std::string& name, GpuDialect d);

// The shared-memory tiled GEMM schedule (gpu_tiled_matmul.cpp): C[bt][i][j] = sum over p of
// A(bt, i, p) * B(bt, p, j) for bt < batches, i < M, j < N, p < K, FP32 accumulation.
// The operands are code: a_setup/b_setup are statements (may `return 0.0f;` for a zero element)
// and a_value/b_value float expressions over i64 bt, i, p / bt, p, j and the kernel's parameters;
// the bounds i < M, p < K, j < N are checked before them. epilogue: statements storing float `v`
// for element (bt, i, j). Launch: 256 threads per block, one block per 64 x 64 tile.
struct TiledGemm {
  GpuDialect dialect = GpuDialect::cuda;
  int64_t batches = 1, M = 0, N = 0, K = 0;
  bool packed_f16 = false;  // both operands f16: HIP stages half2 pairs and uses v_dot2_f32_f16
  // Both operands 8-bit integers (HIP): a_value/b_value are int expressions of the stored
  // values, staged as 4-byte words along K, multiplied by v_dot4 (sdot4 for s8 x s8, udot4 for
  // u8 x u8, where the target has them; exact integer multiply-adds otherwise) into INT32
  // accumulators; the epilogue's `v` is then that int.
  bool int8 = false, a_unsigned = false, b_unsigned = false;
  std::string a_setup, a_value, b_setup, b_value, epilogue;
};
// Device helpers the body needs, to go between the prelude and the kernel ("" if none).
std::string gpu_tiled_gemm_helpers(const TiledGemm& g);
// The kernel's body after its parameter list's "{", through its closing brace.
std::string gpu_tiled_gemm_body(const TiledGemm& g);
// MatMul / Gemm (transA/transB, alpha, beta, C broadcast; batch dimensions broadcast) and Conv
// on the tiled schedule.
Expected<GeneratedKernel> generate_gpu_matmul(const KernelSpec& spec, const std::string& name, GpuDialect d);
Expected<GeneratedKernel> generate_gpu_conv(const KernelSpec& spec, const std::string& name, GpuDialect d);

// CUDA only (inline PTX mma.sync): MatMul/Gemm and Conv on the tensor-core GEMM machinery of
// cuda_gemm.hpp, the instruction chosen from the operand formats.
Expected<GeneratedKernel> generate_cuda_matmul(const KernelSpec& spec, const std::string& name);
Expected<GeneratedKernel> generate_cuda_conv(const KernelSpec& spec, const std::string& name);

}  // namespace hpf::jit
