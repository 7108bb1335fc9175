// MatMul / Gemm in C: batched, numpy broadcasting of batch dimensions, operands in any float
// format converted to FP32 in registers, FP32 accumulation over a row tile the compiler
// vectorises. (Packing and register blocking come with the performance work.)
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {
namespace {

int64_t attr_i(const Attributes& a, const char* n, int64_t d) {
  auto it = a.find(n);
  return it == a.end() ? d : std::get<int64_t>(it->second);
}
float attr_f(const Attributes& a, const char* n, float d) {
  auto it = a.find(n);
  if (it == a.end()) return d;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  return static_cast<float>(std::get<int64_t>(it->second));
}

// Offset expression of batch index `t` of an operand with batch shape `in` broadcast to `out`.
std::string batch_offset(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t matrix) {
  std::string e = "0";
  int64_t stride = matrix;
  const size_t off = out.size() - in.size();
  std::vector<int64_t> st(out.size(), 0);
  for (size_t d = in.size(); d-- > 0;) {
    if (in[d] != 1) st[off + d] = stride;
    stride *= in[d];
  }
  int64_t div = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (st[d]) e += " + ((t / " + std::to_string(div) + "LL) % " + std::to_string(out[d]) + "LL) * " + std::to_string(st[d]) + "LL";
    div *= out[d];
  }
  return e;
}

}  // namespace

Expected<GeneratedKernel> generate_c_matmul(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) return Status::invalid("matmul: needs A, B and one output");
  const TensorDesc &A = spec.inputs[0], &B = spec.inputs[1], &Y = spec.outputs[0];
  for (const TensorDesc* t : {&A, &B, &Y})
    if (!is_float(t->dtype)) return Status::unsupported("C codegen: matmul on " + std::string(dtype_name(t->dtype)));
  const bool gemm = spec.attrs.count("gemm") > 0;
  const bool ta = attr_i(spec.attrs, "transA", 0), tb = attr_i(spec.attrs, "transB", 0);
  std::vector<int64_t> sa = A.shape, sb = B.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t M = ta ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t K = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t N = tb ? sb[sb.size() - 2] : sb[sb.size() - 1];
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t br = std::max(ba.size(), bb.size());
  std::vector<int64_t> bo(br, 1);
  for (size_t d = 0; d < br; ++d) {
    const int64_t x = d + ba.size() >= br ? ba[d + ba.size() - br] : 1;
    const int64_t y = d + bb.size() >= br ? bb[d + bb.size() - br] : 1;
    bo[d] = std::max(x, y);
  }
  const int64_t batches = numel(bo);
  // Element (i,k) of A and (k,j) of B within one matrix.
  const std::string a_ik = ta ? "p * " + std::to_string(M) + "LL + i" : "i * " + std::to_string(K) + "LL + p";
  const std::string b_kj = tb ? "j * " + std::to_string(K) + "LL + p" : "p * " + std::to_string(N) + "LL + j";
  const int64_t tile = std::min<int64_t>(N, 256);
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(A.dtype) << "* restrict A = (const " << c_storage_type(A.dtype) << "*)args[0];\n"
    << "  const " << c_storage_type(B.dtype) << "* restrict B = (const " << c_storage_type(B.dtype) << "*)args[1];\n";
  const bool has_c = gemm && spec.inputs.size() > 2;
  if (has_c)
    s << "  const " << c_storage_type(spec.inputs[2].dtype) << "* restrict C = (const " << c_storage_type(spec.inputs[2].dtype)
      << "*)args[2];\n";
  s << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[" << spec.inputs.size()
    << "];\n"
    << "  float acc[" << tile << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 t = r / " << M << "LL, i = r % " << M << "LL;\n"
    << "    const i64 a0 = " << batch_offset(ba, bo, M * K) << ", b0 = " << batch_offset(bb, bo, K * N) << ";\n"
    << "    for (i64 j0 = 0; j0 < " << N << "LL; j0 += " << tile << "LL) {\n"
    << "      const i64 jn = " << N << "LL - j0 < " << tile << "LL ? " << N << "LL - j0 : " << tile << "LL;\n"
    << "      for (i64 j = 0; j < jn; ++j) acc[j] = 0.0f;\n"
    << "      for (i64 p = 0; p < " << K << "LL; ++p) {\n"
    << "        const float a = " << c_load(A.dtype, "A[a0 + " + a_ik + "]") << ";\n"
    << "        for (i64 jj = 0; jj < jn; ++jj) { const i64 j = j0 + jj; acc[jj] += a * "
    << c_load(B.dtype, "B[b0 + " + b_kj + "]") << "; }\n"
    << "      }\n"
    << "      for (i64 jj = 0; jj < jn; ++jj) {\n"
    << "        const i64 j = j0 + jj;\n"
    << "        float v = acc[jj]";
  if (gemm) {
    const float alpha = attr_f(spec.attrs, "alpha", 1.0f), beta = attr_f(spec.attrs, "beta", 1.0f);
    if (alpha != 1.0f) s << " * " << c_float(alpha);
    if (has_c && beta != 0.0f) {
      const auto& cs = spec.inputs[2].shape;
      std::string idx = numel(cs) == 1 ? "0" : cs.size() == 1 ? "j" : (cs[0] == 1 ? "j" : (cs[1] == 1 ? "i" : "i * " + std::to_string(N) + "LL + j"));
      s << " + " << c_float(beta) << " * " << c_load(spec.inputs[2].dtype, "C[" + idx + "]");
    }
  }
  s << ";\n        Y[r * " << N << "LL + j] = " << c_store(Y.dtype, "v") << ";\n"
    << "      }\n    }\n  }\n}\n";
  return GeneratedKernel{name, s.str(), batches * M, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, N * K))};
}

}  // namespace hpf::jit
