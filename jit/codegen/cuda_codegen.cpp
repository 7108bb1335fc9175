// generate_cuda: dispatch by op family for the CUDA dialect.
#include "jit/codegen/cuda_codegen.hpp"

#include <cstdio>

namespace hpf::jit {

std::string cuda_prelude() {
  return
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "typedef long long i64;\n"
    "static __device__ __forceinline__ float hpf_maxf(float a, float b) {\n"
    "  return (a != a || b != b) ? a + b : (a > b ? a : b);\n}\n"
    "static __device__ __forceinline__ float hpf_minf(float a, float b) {\n"
    "  return (a != a || b != b) ? a + b : (a < b ? a : b);\n}\n"
    "static __device__ __forceinline__ float hpf_round_f16(float x) { return __half2float(__float2half_rn(x)); }\n"
    "static __device__ __forceinline__ float hpf_round_bf16(float x) {\n"
    "  return __bfloat162float(__float2bfloat16_rn(x));\n}\n"
    // Block-wide reductions (blockDim.x a multiple of 32, at most 1024): every thread gets the
    // result. `scratch` holds 32 floats of shared memory.
    "static __device__ __forceinline__ float hpf_warp_max(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n  return v;\n}\n"
    "static __device__ __forceinline__ float hpf_warp_sum(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n  return v;\n}\n"
    "static __device__ float hpf_block_max(float v, float* scratch) {\n"
    "  v = hpf_warp_max(v);\n  __syncthreads();\n"
    "  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;\n  __syncthreads();\n"
    "  v = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : __int_as_float(0xff800000);\n"
    "  return hpf_warp_max(v);\n}\n"
    "static __device__ float hpf_block_sum(float v, float* scratch) {\n"
    "  v = hpf_warp_sum(v);\n  __syncthreads();\n"
    "  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;\n  __syncthreads();\n"
    "  v = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : 0.0f;\n"
    "  return hpf_warp_sum(v);\n}\n";
}

const char* cuda_storage_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::I8: return "signed char";
    case DType::U8: return "unsigned char";
    case DType::BOOL: return "unsigned char";
    default: return nullptr;
  }
}

std::string cuda_load(DType t, const std::string& at, bool wide) {
  if (t == DType::F16) return "__half2float(" + at + ")";
  if (t == DType::BF16) return "__bfloat162float(" + at + ")";
  return std::string(wide ? "(double)(" : "(float)(") + at + ")";
}


Expected<GeneratedKernel> generate_cuda(const KernelSpec& spec) {
  // FNV-1a over the canonical text names the kernel, as in generate_c.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : spec.canonical()) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "hpf_%s_%016llx", spec.family.c_str(), static_cast<unsigned long long>(h));
  if (spec.family == "elementwise") return generate_cuda_elementwise(spec, name);
  if (spec.family == "softmax") return generate_cuda_softmax(spec, name);
  if (spec.family == "matmul") return generate_cuda_matmul(spec, name);
  if (spec.family == "conv") return generate_cuda_conv(spec, name);
  return Status::unsupported("op family '" + spec.family + "' is unsupported in the cuda dialect");
}

}  // namespace hpf::jit
