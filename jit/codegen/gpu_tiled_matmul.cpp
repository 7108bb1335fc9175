// A shared-memory tiled GEMM for the GPU dialects (the schedule), and MatMul / Gemm on it (the
// operands). Conv uses the same schedule as an implicit GEMM (gpu_tiled_conv.cpp).
//
// Schedule: 256 threads per block compute a 64 x 64 tile of one batch matrix, 4 x 4 outputs per
// thread (rows ty + 16r, columns tx + 16c), K in slices of 16 staged in shared memory, converted
// to FP32 on load (or, packed f16, kept as pairs of halves along K); FP32 accumulation; the
// epilogue converts once to the output format. Tiles are walked by a grid-stride loop.
// Packed f16 (HIP, both operands f16): each shared slice holds half2 pairs and the inner product
// is v_dot2_f32_f16 (two f16 products summed into an FP32 accumulator) on targets that have it
// (gfx906, gfx908, gfx90a, gfx1011/1012, gfx103x), two FMAs elsewhere.
// INT8 (HIP, both operands i8/u8): each shared slice holds 4-byte words of four k, and the inner
// product is v_dot4_i32_i8 / v_dot4_u32_u8 (four 8-bit products summed into an INT32
// accumulator, exact: no saturation with clamp off) on the same targets; mixed signs, and
// targets without them, take four exact integer multiply-adds.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

std::string gpu_tiled_gemm_body(const TiledGemm& g) {
  const bool packed = g.packed_f16 && g.dialect == GpuDialect::hip;
  const bool int8 = g.int8 && g.dialect == GpuDialect::hip;
  const char* elem = int8 ? "int" : "float";
  const char* zero = int8 ? "0" : "0.0f";
  const int64_t tiles_m = (g.M + 63) / 64, tiles_n = (g.N + 63) / 64;
  std::ostringstream s;
  s << "  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;\n"
    << "  auto a_at = [&](i64 bt, i64 i, i64 p) -> " << elem << " {\n"
    << "    if (i >= " << L(g.M) << " || p >= " << L(g.K) << ") return " << zero << ";\n"
    << g.a_setup << "    return " << g.a_value << ";\n  };\n"
    << "  auto b_at = [&](i64 bt, i64 p, i64 j) -> " << elem << " {\n"
    << "    if (p >= " << L(g.K) << " || j >= " << L(g.N) << ") return " << zero << ";\n"
    << g.b_setup << "    return " << g.b_value << ";\n  };\n";
  if (packed)
    s << "  __shared__ hpf_half2 As[8][68];\n  __shared__ hpf_half2 Bs[8][68];\n";
  else if (int8)
    s << "  __shared__ int As[4][68];\n  __shared__ int Bs[4][68];\n";
  else
    s << "  __shared__ float As[16][68];\n  __shared__ float Bs[16][68];\n";
  s << "  for (i64 t = blockIdx.x; t < " << L(g.batches * tiles_m * tiles_n) << "; t += gridDim.x) {\n"
    << "    const i64 bt = t / " << L(tiles_m * tiles_n) << ";\n"
    << "    const i64 m0 = (t / " << L(tiles_n) << ") % " << L(tiles_m) << " * 64, n0 = t % " << L(tiles_n) << " * 64;\n"
    << "    " << elem << " acc[4][4];\n"
    << "    for (int r = 0; r < 4; ++r)\n      for (int c = 0; c < 4; ++c) acc[r][c] = " << zero << ";\n"
    << "    for (i64 k0 = 0; k0 < " << L(g.K) << "; k0 += 16) {\n";
  if (int8)
    s << "      for (int e = threadIdx.x; e < 256; e += 256) {\n"
      << "        const int ii = e / 4, q = e % 4;\n"
      << "        As[q][ii] = hpf_pack4(a_at(bt, m0 + ii, k0 + 4 * q), a_at(bt, m0 + ii, k0 + 4 * q + 1),\n"
      << "                              a_at(bt, m0 + ii, k0 + 4 * q + 2), a_at(bt, m0 + ii, k0 + 4 * q + 3));\n"
      << "        const int jj = e % 64, q2 = e / 64;\n"
      << "        Bs[q2][jj] = hpf_pack4(b_at(bt, k0 + 4 * q2, n0 + jj), b_at(bt, k0 + 4 * q2 + 1, n0 + jj),\n"
      << "                               b_at(bt, k0 + 4 * q2 + 2, n0 + jj), b_at(bt, k0 + 4 * q2 + 3, n0 + jj));\n"
      << "      }\n"
      << "      __syncthreads();\n"
      << "      for (int q = 0; q < 4; ++q) {\n"
      << "        int a[4], b[4];\n"
      << "        for (int r = 0; r < 4; ++r) a[r] = As[q][ty + 16 * r];\n"
      << "        for (int c = 0; c < 4; ++c) b[c] = Bs[q][tx + 16 * c];\n"
      << "        for (int r = 0; r < 4; ++r)\n"
      << "          for (int c = 0; c < 4; ++c) acc[r][c] = hpf_dot4(a[r], b[c], acc[r][c]);\n"
      << "      }\n";
  else if (packed)
    s << "      for (int e = threadIdx.x; e < 512; e += 256) {\n"
      << "        const int ii = e / 8, q = e % 8;\n"
      << "        As[q][ii] = hpf_pack2(a_at(bt, m0 + ii, k0 + 2 * q), a_at(bt, m0 + ii, k0 + 2 * q + 1));\n"
      << "        const int jj = e % 64, q2 = e / 64;\n"
      << "        Bs[q2][jj] = hpf_pack2(b_at(bt, k0 + 2 * q2, n0 + jj), b_at(bt, k0 + 2 * q2 + 1, n0 + jj));\n"
      << "      }\n"
      << "      __syncthreads();\n"
      << "      for (int q = 0; q < 8; ++q) {\n"
      << "        hpf_half2 a[4], b[4];\n"
      << "        for (int r = 0; r < 4; ++r) a[r] = As[q][ty + 16 * r];\n"
      << "        for (int c = 0; c < 4; ++c) b[c] = Bs[q][tx + 16 * c];\n"
      << "        for (int r = 0; r < 4; ++r)\n"
      << "          for (int c = 0; c < 4; ++c) acc[r][c] = hpf_dot2(a[r], b[c], acc[r][c]);\n"
      << "      }\n";
  else
    s << "      for (int e = threadIdx.x; e < 1024; e += 256) {\n"
      << "        const int ii = e / 16, pp = e % 16;\n"
      << "        As[pp][ii] = a_at(bt, m0 + ii, k0 + pp);\n"
      << "        const int jj = e % 64, pb = e / 64;\n"
      << "        Bs[pb][jj] = b_at(bt, k0 + pb, n0 + jj);\n"
      << "      }\n"
      << "      __syncthreads();\n"
      << "      for (int pp = 0; pp < 16; ++pp) {\n"
      << "        float a[4], b[4];\n"
      << "        for (int r = 0; r < 4; ++r) a[r] = As[pp][ty + 16 * r];\n"
      << "        for (int c = 0; c < 4; ++c) b[c] = Bs[pp][tx + 16 * c];\n"
      << "        for (int r = 0; r < 4; ++r)\n"
      << "          for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);\n"
      << "      }\n";
  s << "      __syncthreads();\n    }\n"
    << "    for (int r = 0; r < 4; ++r)\n"
    << "      for (int c = 0; c < 4; ++c) {\n"
    << "        const i64 i = m0 + ty + 16 * r, j = n0 + tx + 16 * c;\n"
    << "        if (i >= " << L(g.M) << " || j >= " << L(g.N) << ") continue;\n"
    << "        const " << elem << " v = acc[r][c];\n"
    << g.epilogue << "      }\n  }\n}\n";
  return s.str();
}

namespace {
// The preprocessor test for AMD targets with the dot instructions (v_dot2_f32_f16, v_dot4_i32_i8,
// v_dot4_u32_u8).
constexpr const char* kHipDotTargets =
    "#if defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx1011__) || \\\n"
    "    defined(__gfx1012__) || defined(__gfx1030__) || defined(__gfx1031__) || defined(__gfx1032__) || \\\n"
    "    defined(__gfx1033__) || defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__)\n";
}  // namespace

std::string gpu_tiled_gemm_helpers(const TiledGemm& g) {
  if (g.int8 && g.dialect == GpuDialect::hip) {
    // Operand words: four k of one row, k ascending from the low byte (as v_dot4 pairs them).
    std::string h =
        "static __device__ __forceinline__ int hpf_pack4(int x0, int x1, int x2, int x3) {\n"
        "  return (x0 & 255) | (x1 & 255) << 8 | (x2 & 255) << 16 | (int)((unsigned)(x3 & 255) << 24);\n}\n";
    auto lane = [](bool is_unsigned, const char* w, int k) {
      return std::string(is_unsigned ? "(int)(((unsigned)" : "(int)(signed char)(((unsigned)") + w + " >> " +
             std::to_string(8 * k) + ") & 255u)";
    };
    std::string exact = "static __device__ __forceinline__ int hpf_dot4(int a, int b, int c) {\n  return c";
    for (int k = 0; k < 4; ++k) exact += " + " + lane(g.a_unsigned, "a", k) + " * " + lane(g.b_unsigned, "b", k);
    exact += ";\n}\n";
    if (g.a_unsigned != g.b_unsigned) return h + exact;  // no mixed-sign v_dot4 before gfx11
    const char* builtin = g.a_unsigned ? "(int)__builtin_amdgcn_udot4((unsigned)(a), (unsigned)(b), (unsigned)(c), false)"
                                       : "__builtin_amdgcn_sdot4(a, b, c, false)";
    return h + kHipDotTargets + "#define hpf_dot4(a, b, c) " + builtin + "\n#else\n" + exact + "#endif\n";
  }
  if (!(g.packed_f16 && g.dialect == GpuDialect::hip)) return "";
  return std::string("static __device__ __forceinline__ hpf_half2 hpf_pack2(float x, float y) {\n"
                     "  hpf_half2 h;\n  h.x = (_Float16)x;\n  h.y = (_Float16)y;\n  return h;\n}\n") +
         kHipDotTargets +
         "#define hpf_dot2(a, b, c) __builtin_amdgcn_fdot2(a, b, c, false)\n"
         "#else\n"
         "static __device__ __forceinline__ float hpf_dot2(hpf_half2 a, hpf_half2 b, float c) {\n"
         "  return fmaf((float)a.y, (float)b.y, fmaf((float)a.x, (float)b.x, c));\n}\n"
         "#endif\n";
}

namespace {

// Offset expression of batch `bt` of an operand whose batch shape `in` broadcasts to `out`.
std::string batch_offset(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t matrix) {
  std::string e = "0";
  int64_t stride = matrix, div = 1;
  std::vector<int64_t> st(out.size(), 0);
  for (size_t k = in.size(); k-- > 0;) {
    if (in[k] != 1) st[out.size() - in.size() + k] = stride;
    stride *= in[k];
  }
  for (size_t k = out.size(); k-- > 0;) {
    if (st[k]) e += " + ((bt / " + L(div) + ") % " + L(out[k]) + ") * " + L(st[k]);
    div *= out[k];
  }
  return e;
}

}  // namespace

Expected<GeneratedKernel> generate_gpu_matmul(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string what = std::string(gpu_dialect_name(d)) + " matmul: ";
  if (spec.inputs.size() < 2 || spec.inputs.size() > 3 || spec.outputs.size() != 1)
    return Status::invalid(what + "needs A, B, optional C and one output");
  const TensorDesc &A = spec.inputs[0], &B = spec.inputs[1], &Y = spec.outputs[0];
  auto byte_int = [](DType t) { return t == DType::I8 || t == DType::U8; };
  const bool int8 = d == GpuDialect::hip && byte_int(A.dtype) && byte_int(B.dtype);
  for (const TensorDesc* t : {&A, &B})
    if (!is_float(t->dtype) && !int8) return Status::unsupported(what + "on " + std::string(dtype_name(t->dtype)));
  if (!is_float(Y.dtype) && !(int8 && Y.dtype == DType::I32))
    return Status::unsupported(what + "to " + std::string(dtype_name(Y.dtype)));
  const bool gemm = spec.attrs.count("gemm") > 0;
  const bool ta = attr_i(spec.attrs, "transA", 0), tb = attr_i(spec.attrs, "transB", 0);
  std::vector<int64_t> sa = A.shape, sb = B.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  if (sa.size() < 2 || sb.size() < 2) return Status::invalid(what + "scalar operand");
  const int64_t M = ta ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t K = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t KB = tb ? sb[sb.size() - 1] : sb[sb.size() - 2];
  const int64_t N = tb ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (K != KB) return Status::invalid(what + shape_string(A.shape) + " x " + shape_string(B.shape));
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t br = std::max(ba.size(), bb.size());
  std::vector<int64_t> bo(br, 1);
  for (size_t k = 0; k < br; ++k) {
    const int64_t x = k + ba.size() >= br ? ba[k + ba.size() - br] : 1;
    const int64_t y = k + bb.size() >= br ? bb[k + bb.size() - br] : 1;
    bo[k] = std::max(x, y);
  }
  TiledGemm g;
  g.dialect = d;
  g.batches = numel(bo);
  g.M = M;
  g.N = N;
  g.K = K;
  g.packed_f16 = A.dtype == DType::F16 && B.dtype == DType::F16;
  g.int8 = int8;
  g.a_unsigned = A.dtype == DType::U8;
  g.b_unsigned = B.dtype == DType::U8;
  const std::string a_ip = ta ? "p * " + L(M) + " + i" : "i * " + L(K) + " + p";
  const std::string b_pj = tb ? "j * " + L(K) + " + p" : "p * " + L(N) + " + j";
  const std::string a_at = "A[" + batch_offset(ba, bo, M * K) + " + " + a_ip + "]";
  const std::string b_at = "B[" + batch_offset(bb, bo, K * N) + " + " + b_pj + "]";
  g.a_value = int8 ? "(int)" + a_at : gpu_load(d, A.dtype, a_at);
  g.b_value = int8 ? "(int)" + b_at : gpu_load(d, B.dtype, b_at);
  std::string v = int8 ? "(float)v" : "v";
  const bool has_c = gemm && spec.inputs.size() == 3;
  if (gemm) {
    const float alpha = attr_f(spec.attrs, "alpha", 1.0f), beta = attr_f(spec.attrs, "beta", 1.0f);
    if (alpha != 1.0f) v += " * " + c_float(alpha);
    if (has_c && beta != 0.0f) {
      const auto& cs = spec.inputs[2].shape;
      const std::string idx = numel(cs) == 1   ? "0"
                              : cs.size() == 1 ? "j"
                              : cs[0] == 1     ? "j"
                              : cs[1] == 1     ? "i"
                                               : "i * " + L(N) + " + j";
      v += " + " + c_float(beta) + " * " + gpu_load(d, spec.inputs[2].dtype, "C[" + idx + "]");
    }
  }
  if (int8 && Y.dtype == DType::I32 && v == "(float)v") v = "v";  // the exact INT32 sum
  g.epilogue = "        Y[bt * " + L(M * N) + " + i * " + L(N) + " + j] = " +
               (v == "v" && Y.dtype == DType::I32 ? v : gpu_store(d, Y.dtype, v)) + ";\n";
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"A", "B", "C"}, "Y"));
  const std::string helpers = gpu_tiled_gemm_helpers(g);
  head.insert(head.find("\n" + gpu_kernel_head(name, 256)) + 1, helpers);
  const int64_t tiles = g.batches * ((M + 63) / 64) * ((N + 63) / 64);
  return GeneratedKernel{name, head + gpu_tiled_gemm_body(g), tiles * 256, 256};
}

}  // namespace hpf::jit
