// The GPU dialects (CUDA through NVRTC, HIP through hipRTC): one set of generators, parametrised
// by vendor. A kernel is one `extern "C" __global__` function taking one pointer per input, then
// the output(s); every size is baked in as a constant.
//
// Launch rule (every GPU kernel): `grain` threads per block, ceil(work_items / grain) blocks.
// Every kernel walks its work with a grid-stride loop, so a smaller grid is still correct.
// Row kernels (softmax, layernorm, reduce) give one block per row: work_items = rows * grain.
//
// Writing a generator: start the source with gpu_prelude(d), read stored values with gpu_load,
// write them with gpu_store; compute in FP32 (helpers named hpf_* in the prelude are the same in
// both dialects). Thread-safety: all functions here are pure.
#pragma once

#include <string>

#include "jit/codegen/kernel_spec.hpp"

namespace hpf::jit {

enum class GpuDialect { cuda, hip };

// "cuda" | "hip": the dialect name a plugin's device reports.
const char* gpu_dialect_name(GpuDialect d);

// Dispatch by op family. Names as generate_c's (a hash of the spec). Errors: a family or format
// without a generator in the dialect, "... unsupported in the <dialect> dialect".
Expected<GeneratedKernel> generate_gpu(const KernelSpec& spec, GpuDialect d);

// The head of every kernel: format types and conversions, and these device helpers, spelled the
// same in both dialects:
//   hpf_ld_f16/hpf_ld_bf16 (stored -> float), hpf_st_f16/hpf_st_bf16 (float -> stored, RNE),
//   hpf_round_f16/hpf_round_bf16 (float -> float rounded to the format), hpf_maxf/hpf_minf (NaN
//   propagating), hpf_softplus, hpf_mod, HPF_NEG_INF, HPF_WARP (threads per warp: 32 on NVIDIA,
//   the target's wavefront on AMD: 64 on gfx9, 32 on gfx10+), hpf_warp_sum/max and
//   hpf_block_sum/max(v, scratch) (blockDim.x a multiple of HPF_WARP, at most 1024; scratch: 32
//   floats of shared memory; every thread gets the result).
// CUDA stores f16 as __half and bf16 as __nv_bfloat16; HIP stores f16 as _Float16 (packed
// arithmetic through hpf_half2) and bf16 as unsigned short (hipRTC 5.2 has no bf16 type).
std::string gpu_prelude(GpuDialect d);

// The C type storing a format in the dialect; nullptr: not stored by GPU kernels.
const char* gpu_storage_type(GpuDialect d, DType t);

// A stored value of format t at `at` as float (double when `wide`).
std::string gpu_load(GpuDialect d, DType t, const std::string& at, bool wide = false);

// The stored form in format t of the float (double when `wide`) expression v: floats round to
// nearest even; integers truncate toward zero and saturate, NaN -> 0; bool is v != 0.
std::string gpu_store(GpuDialect d, DType t, const std::string& v, bool wide = false);

// v rounded to format t and kept as float, as a graph's intermediate value of format t.
std::string gpu_round(DType t, const std::string& v, bool wide = false);

// `extern "C" __global__ void __launch_bounds__(threads) name(` — parameters follow.
std::string gpu_kernel_head(const std::string& name, int threads);

}  // namespace hpf::jit
