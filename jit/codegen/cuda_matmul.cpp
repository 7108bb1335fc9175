// MatMul / Gemm in CUDA, on the GEMM machinery of cuda_gemm.hpp: batched with numpy
// broadcasting of batch dimensions (a broadcast operand's batch stride is 0), transA/transB,
// Gemm's alpha, beta and C (scalar, row, column or full), operands in any float format (or
// I8/U8 pairs) converted on load, FP32 (INT32 for integers) accumulation, the output's format
// applied on store. Spec conventions are generate_c_matmul's.
#include <algorithm>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {
namespace {

// Element offset of batch `bz` of an operand with batch shape `in` (right-aligned) within the
// broadcast batch shape `out`, each matrix `matrix` elements.
std::string batch_offset(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t matrix) {
  std::string e = "0";
  int64_t stride = matrix, div = 1;
  const size_t shift = out.size() - in.size();
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t d = in.size(); d-- > 0; stride *= in[d])
    if (in[d] != 1) strides[shift + d] = stride;
  for (size_t d = out.size(); d-- > 0; div *= out[d])
    if (strides[d]) e += " + ((bz / " + L(div) + ") % " + L(out[d]) + ") * " + L(strides[d]);
  return e;
}

}  // namespace

Expected<GeneratedKernel> generate_cuda_matmul(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) return Status::invalid("matmul: needs A, B and one output");
  const TensorDesc &A = spec.inputs[0], &B = spec.inputs[1], &Y = spec.outputs[0];
  const bool gemm = spec.attrs.count("gemm") > 0;
  const bool ta = attr_i(spec.attrs, "transA", 0), tb = attr_i(spec.attrs, "transB", 0);
  std::vector<int64_t> sa = A.shape, sb = B.shape;
  if (sa.empty() || sb.empty()) return Status::invalid("matmul: scalar operand");
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t M = ta ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t K = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t KB = tb ? sb[sb.size() - 1] : sb[sb.size() - 2];
  const int64_t N = tb ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (K != KB)
    return Status::invalid("matmul: inner dimensions differ (" + shape_string(A.shape) + " x " + shape_string(B.shape) + ")");
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(ba.size(), bb.size());
  std::vector<int64_t> bo(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + ba.size() >= rank ? ba[d + ba.size() - rank] : 1;
    const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return Status::invalid("matmul: batch dimensions do not broadcast");
    bo[d] = std::max(x, y);
  }
  const int64_t batches = numel(bo);
  if (numel(Y.shape) != batches * M * N)
    return Status::invalid("matmul: output " + shape_string(Y.shape) + " does not hold " + std::to_string(batches) + "x" +
                           std::to_string(M) + "x" + std::to_string(N));
  const bool int_ops = (A.dtype == DType::I8 || A.dtype == DType::U8) && (B.dtype == DType::I8 || B.dtype == DType::U8);
  const char* yt = cuda_gemm_storage_type(Y.dtype);
  if (!yt || (!is_float(Y.dtype) && !(int_ops && Y.dtype == DType::I32)))
    return Status::unsupported("CUDA codegen: matmul to " + std::string(dtype_name(Y.dtype)));

  GemmProblem p;
  p.batches = batches, p.M = M, p.N = N, p.K = K;
  p.accumulation = spec.accumulation;
  p.int_result = int_ops;
  auto operand = [&](const TensorDesc& t, const std::vector<int64_t>& bshape, int64_t rows, bool k_inner) {
    GemmOperand o;
    o.dtype = t.dtype;
    o.ld_r = k_inner ? K : 1;
    o.ld_k = k_inner ? 1 : rows;
    o.index = "(" + batch_offset(bshape, bo, rows * K) + ") + r * " + L(o.ld_r) + " + k * " + L(o.ld_k);
    const int64_t es = std::max<int64_t>(1, bit_width(t.dtype) / 8);
    o.batch_aligned_16 = (rows * K * es) % 16 == 0;
    return o;
  };
  p.a = operand(A, ba, M, !ta);  // A[i][k] is k-contiguous unless transposed
  p.b = operand(B, bb, N, tb);   // B[k][j] is k-contiguous only when transposed
  const bool has_c = gemm && spec.inputs.size() > 2;
  if (has_c) {
    const char* ct = cuda_gemm_storage_type(spec.inputs[2].dtype);
    if (!ct) return Status::unsupported("CUDA codegen: Gemm C in " + std::string(dtype_name(spec.inputs[2].dtype)));
    p.extra_params = "const " + std::string(ct) + "* __restrict__ C, ";
  }
  p.extra_params += std::string(yt) + "* __restrict__ Y";
  std::string v = int_ops ? "(float)v" : "v";
  if (gemm) {
    const float alpha = attr_f(spec.attrs, "alpha", 1.0f), beta = attr_f(spec.attrs, "beta", 1.0f);
    if (alpha != 1.0f) v = v + " * " + c_float(alpha);
    if (has_c && beta != 0.0f) {
      const auto& cs = spec.inputs[2].shape;
      const std::string idx = numel(cs) == 1     ? "0"
                              : cs.size() == 1   ? "j"
                              : cs[0] == 1       ? "j"
                              : cs[1] == 1       ? "i"
                                                 : "i * " + L(N) + " + j";
      v += " + " + c_float(beta) + " * " + cuda_gemm_load(spec.inputs[2].dtype, "C[" + idx + "]");
    }
  }
  if (int_ops && Y.dtype == DType::I32 && v == "(float)v") v = "v";  // exact INT32 result
  p.epilogue = "Y[(bz * " + L(M) + " + i) * " + L(N) + " + j] = " + cuda_gemm_store(Y.dtype, v) + ";";
  return generate_cuda_gemm(p, name);
}

}  // namespace hpf::jit
