#include <math.h>
#include <string.h>
#include <barrier>
struct hpf_dim3 { unsigned x = 0, y = 0, z = 0; };
extern thread_local hpf_dim3 threadIdx, blockIdx;
extern hpf_dim3 blockDim, gridDim;
extern std::barrier<>* hpf_bar;
extern float hpf_xchg[1024];
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
#define __shared__ static
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE 64
#endif
inline void __syncthreads() { hpf_bar->arrive_and_wait(); }
inline float __shfl_xor(float v, int o) {
  __syncthreads(); hpf_xchg[threadIdx.x] = v; __syncthreads();
  float r = hpf_xchg[threadIdx.x ^ o]; return r;
}
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
