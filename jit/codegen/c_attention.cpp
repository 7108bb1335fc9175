// Attention in C: O = softmax(epilogue(Q K)) V over the last axis, per batch matrix, in one kernel
// (family "attention"; lowering makes it from MatMul -> [scale, mask] -> Softmax -> MatMul, see
// jit/codegen/attention_fusion.cpp). The scores and probabilities never leave the stack.
//
// Spec: inputs Q [.., Sq, D], K [.., D, Sk] (the scores MatMul's second operand), V [.., Sk, Dv],
// then the epilogue's inputs; output O [.., Sq, Dv]; one batch shape for all four. Attributes:
//   q_perm, k_perm, v_perm  the input given is the source of a Transpose with this perm, the
//                           operand its transpose (read through strides; no copy is made);
//   o_perm                  the output is O transposed by this perm (written through strides);
//   score_format, prob_format  the formats the graph stores the scores (after the epilogue) and
//                           the probabilities in: each value is rounded to them as the unfused
//                           kernels would store it, so fusion changes no value beyond the order
//                           of FP32 sums.
// Epilogue: KernelSpec::epilogue on each score, its operands broadcast to the scores by numpy's
// rules (a scale, a mask [B, 1, 1, Sk] or [B, 1, Sq, Sk], a bias of the scores' shape).
//
// Schedule: work item = a block of RB query rows of one batch matrix (RB a multiple of the
// microkernel's 6 rows, as many as keep the block's scores within 64 KiB). Per item: the Q rows
// in FP32; per 64 keys, that K panel in FP32 and the microkernel over it into the scores; the
// epilogue, the rounding and the softmax per row (as the softmax kernel computes it); then per
// 64 keys a V chunk in FP32 and the microkernel over the probabilities into O's accumulators.
// Every buffer is on the stack (attention_fits bounds them).
#include <numeric>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

constexpr int64_t kPanel = 64;                 // keys per K panel and per V chunk; padding of Sk and Dv
constexpr int64_t kScoreFloats = 16384;        // a block's scores: 64 KiB
constexpr int64_t kStackFloats = 200 * 256;    // every buffer: 200 KiB

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t rows_per_item(int64_t sk) {
  const int64_t rb = kScoreFloats / round_up(std::max<int64_t>(sk, 1), kPanel) / kGemmMR * kGemmMR;
  return std::clamp<int64_t>(rb, kGemmMR, 8 * kGemmMR);
}

int64_t stack_floats(int64_t d, int64_t sk, int64_t dv) {
  const int64_t rb = rows_per_item(sk), dvp = round_up(std::max<int64_t>(dv, 1), kPanel);
  return rb * d + d * kPanel + rb * round_up(std::max<int64_t>(sk, 1), kPanel) + kPanel * dvp + rb * dvp;
}

// An operand as the kernel reads it: its logical shape and the element strides of each axis in
// the buffer it is given.
struct Strided {
  std::vector<int64_t> shape, stride;
};

Expected<Strided> strided(const TensorDesc& t, const std::vector<int64_t>& perm, const char* what) {
  const size_t r = t.shape.size();
  std::vector<int64_t> st(r, 1);
  for (size_t d = r; d-- > 1;) st[d - 1] = st[d] * t.shape[d];
  if (perm.empty()) return Strided{t.shape, st};
  std::vector<int64_t> seen(r, 0);
  Strided s;
  for (int64_t p : perm) {
    if (perm.size() != r || p < 0 || p >= static_cast<int64_t>(r) || seen[p]++)
      return Status::invalid(std::string("attention: ") + what + " perm is not a permutation of " + shape_string(t.shape));
    s.shape.push_back(t.shape[p]);
    s.stride.push_back(st[p]);
  }
  return s;
}

// The output written through o_perm: O's axis d is the output's axis i where perm[i] = d, so O
// is the output read through the inverse permutation (strided checks it is one).
Expected<Strided> strided_output(const TensorDesc& y, const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] >= 0 && perm[i] < static_cast<int64_t>(perm.size())) inverse[perm[i]] = static_cast<int64_t>(i);
  return strided(y, inverse, "o");
}

// Offset expression of batch matrix `t` (row-major over the batch axes) in operand `x`.
std::string batch_offset(const Strided& x) {
  std::string e = "0";
  int64_t div = 1;
  for (size_t d = x.shape.size() - 2; d-- > 0;) {
    if (x.shape[d] != 1) e += " + ((t / " + L(div) + ") % " + L(x.shape[d]) + ") * " + L(x.stride[d]);
    div *= x.shape[d];
  }
  return e;
}

Expected<DType> format_attr(const KernelSpec& spec, const char* name) {
  const std::string v = attr_s(spec.attrs, name);
  if (v.empty()) return Status::invalid(std::string("attention: no ") + name);
  return parse_dtype(v);
}

}  // namespace

bool attention_fits(int64_t d, int64_t sk, int64_t dv) {
  return d > 0 && sk > 0 && dv > 0 && stack_floats(d, sk, dv) <= kStackFloats;
}

Expected<GeneratedKernel> generate_c_attention(const KernelSpec& spec, const std::string& name) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1 || spec.epilogue_inputs < 0 ||
      static_cast<size_t>(spec.epilogue_inputs) > spec.inputs.size() - 3)
    return Status::invalid("attention: needs Q, K, V, the epilogue's inputs and one output");
  for (const TensorDesc& t : {spec.inputs[0], spec.inputs[1], spec.inputs[2], spec.outputs[0]})
    if (!is_float(t.dtype)) return Status::unsupported("C codegen: attention on " + std::string(dtype_name(t.dtype)));
  HPF_ASSIGN_OR_RETURN(Strided q, strided(spec.inputs[0], attr_ints(spec.attrs, "q_perm"), "q"));
  HPF_ASSIGN_OR_RETURN(Strided k, strided(spec.inputs[1], attr_ints(spec.attrs, "k_perm"), "k"));
  HPF_ASSIGN_OR_RETURN(Strided v, strided(spec.inputs[2], attr_ints(spec.attrs, "v_perm"), "v"));
  HPF_ASSIGN_OR_RETURN(Strided o, strided_output(spec.outputs[0], attr_ints(spec.attrs, "o_perm")));
  HPF_ASSIGN_OR_RETURN(DType score_format, format_attr(spec, "score_format"));
  HPF_ASSIGN_OR_RETURN(DType prob_format, format_attr(spec, "prob_format"));
  const size_t r = q.shape.size();
  if (r < 2 || k.shape.size() != r || v.shape.size() != r || o.shape.size() != r)
    return Status::invalid("attention: Q, K, V and O need one rank of at least 2");
  const std::vector<int64_t> batch(q.shape.begin(), q.shape.end() - 2);
  for (const Strided* x : {&k, &v, &o})
    if (!std::equal(batch.begin(), batch.end(), x->shape.begin()))
      return Status::invalid("attention: Q, K, V and O have different batch axes");
  const int64_t SQ = q.shape[r - 2], D = q.shape[r - 1], SK = k.shape[r - 1], DV = v.shape[r - 1];
  if (k.shape[r - 2] != D || v.shape[r - 2] != SK || o.shape[r - 2] != SQ || o.shape[r - 1] != DV)
    return Status::invalid("attention: Q" + shape_string(q.shape) + " K" + shape_string(k.shape) + " V" +
                           shape_string(v.shape) + " O" + shape_string(o.shape) + " do not chain");
  if (!attention_fits(D, SK, DV))
    return Status::unsupported("C codegen: attention with D=" + std::to_string(D) + ", Sk=" + std::to_string(SK) +
                               ", Dv=" + std::to_string(DV) + " exceeds the kernel's stack buffers");
  const int64_t batches = std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
  const int64_t RB = rows_per_item(SK), NB = (SQ + RB - 1) / RB, SKP = round_up(SK, kPanel), DVP = round_up(DV, kPanel);

  // The epilogue reads its operands at score (qi, j) of batch matrix t.
  KernelSpec scores = spec;
  std::vector<int64_t> sshape = batch;
  sshape.push_back(SQ);
  sshape.push_back(SK);
  scores.outputs = {TensorDesc{score_format, sshape}};
  // Operands broadcast to the scores by numpy's rules (a mask [B, 1, 1, Sk], a scale, a bias of
  // the scores' shape): the offset of score (t, qi, j) in each, over its non-broadcast axes.
  std::string epi_ptrs;
  std::vector<std::string> epi_index(spec.inputs.size());
  for (size_t in = 3; in < spec.inputs.size(); ++in) {
    const TensorDesc& e = spec.inputs[in];
    if (!is_float(e.dtype) || e.shape.size() > r)
      return Status::invalid("attention: epilogue input " + std::to_string(in) + shape_string(e.shape) +
                             " does not broadcast to the scores " + shape_string(sshape));
    std::string idx = "0";
    int64_t stride = 1, div = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t at = static_cast<int64_t>(d) - static_cast<int64_t>(r - e.shape.size());
      const int64_t size = at >= 0 ? e.shape[at] : 1;
      if (size != 1 && size != sshape[d])
        return Status::invalid("attention: epilogue input " + std::to_string(in) + shape_string(e.shape) +
                               " does not broadcast to the scores " + shape_string(sshape));
      const std::string pos = d == r - 1 ? "j" : d == r - 2 ? "qi" : "((t / " + L(div) + ") % " + L(sshape[d]) + ")";
      if (size != 1) idx += " + " + pos + " * " + L(stride);
      stride *= size;
      if (d < r - 2) div *= sshape[d];
    }
    epi_index[in] = idx;
    const char* ct = c_storage_type(e.dtype);
    epi_ptrs += std::string("  const ") + ct + "* restrict P" + std::to_string(in) + " = (const " + ct + "*)args[" +
                std::to_string(in) + "];\n";
  }
  HPF_ASSIGN_OR_RETURN(std::string epi, c_epilogue(scores, "v", [&](int in) {
    return c_load(spec.inputs[in].dtype, "P" + std::to_string(in) + "[" + epi_index[in] + "]");
  }));
  for (const ElementwiseStep& st : spec.epilogue)
    if (!epilogue_takes(st.op) || st.op == "BatchNormalization")
      return Status::unsupported("C codegen: attention epilogue op '" + st.op + "'");
  if (spec.epilogue.empty() && score_format != DType::F32) epi = "v = " + round_to_format(score_format, "v", false) + ";\n";

  const TensorDesc &QT = spec.inputs[0], &KT = spec.inputs[1], &VT = spec.inputs[2], &OT = spec.outputs[0];
  auto ptr = [](const char* n, const TensorDesc& t, size_t at) {
    const char* ct = c_storage_type(t.dtype);
    return std::string("  const ") + ct + "* restrict " + n + " = (const " + ct + "*)args[" + std::to_string(at) + "];\n";
  };
  const int64_t qrs = q.stride[r - 2], qcs = q.stride[r - 1], krs = k.stride[r - 2], kcs = k.stride[r - 1];
  const int64_t vrs = v.stride[r - 2], vcs = v.stride[r - 1], ors = o.stride[r - 2], ocs = o.stride[r - 1];
  std::ostringstream s;
  s << c_prelude() << gemm_micro_source() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << ptr("Q", QT, 0) << ptr("K", KT, 1) << ptr("V", VT, 2) << epi_ptrs << "  " << c_storage_type(OT.dtype)
    << "* restrict O = (" << c_storage_type(OT.dtype) << "*)args[" << spec.inputs.size() << "];\n"
    << "  float qb[" << RB * D << "] __attribute__((aligned(64)));\n"
    << "  float kp[" << D * kPanel << "] __attribute__((aligned(64)));\n"
    << "  float sc[" << RB * SKP << "] __attribute__((aligned(64)));\n"
    << "  float vp[" << kPanel * DVP << "] __attribute__((aligned(64)));\n"
    << "  float ob[" << RB * DVP << "] __attribute__((aligned(64)));\n"
    << "  for (i64 w = begin; w < end; ++w) {\n"
    << "    const i64 t = w / " << L(NB) << ", r0 = (w % " << L(NB) << ") * " << L(RB) << ";\n"
    << "    const i64 rows = " << L(SQ) << " - r0 < " << L(RB) << " ? " << L(SQ) << " - r0 : " << L(RB) << ";\n"
    << "    const i64 mrows = (rows + HPF_MR - 1) / HPF_MR * HPF_MR;\n"
    << "    const i64 qo = " << batch_offset(q) << ", ko = " << batch_offset(k) << ", vo = " << batch_offset(v)
    << ", oo = " << batch_offset(o) << ";\n"
    // Q rows in FP32, zero rows up to a whole microkernel tile.
    << "    for (i64 i = 0; i < mrows; ++i)\n"
    << "      for (i64 d = 0; d < " << L(D) << "; ++d) qb[i * " << L(D) << " + d] = i < rows ? "
    << c_load_operand(QT.dtype, "Q[qo + (r0 + i) * " + L(qrs) + " + d * " + L(qcs) + "]") << " : 0.0f;\n"
    << "    for (i64 x = 0; x < mrows * " << L(SKP) << "; ++x) sc[x] = 0.0f;\n"
    << "    for (i64 jc = 0; jc < " << L(SK) << "; jc += " << kPanel << ") {\n"
    << "      const i64 nc = " << L(SK) << " - jc < " << kPanel << " ? " << L(SK) << " - jc : " << kPanel << ";\n";
  // The K panel [D][64], zero past the last key; the loop order follows K's unit stride.
  const std::string kload = c_load_operand(KT.dtype, "K[ko + d * " + L(krs) + " + (jc + jj) * " + L(kcs) + "]");
  if (kcs == 1 || krs != 1)
    s << "      for (i64 d = 0; d < " << L(D) << "; ++d)\n"
      << "        for (i64 jj = 0; jj < " << kPanel << "; ++jj) kp[d * " << kPanel << " + jj] = jj < nc ? " << kload
      << " : 0.0f;\n";
  else
    s << "      for (i64 jj = 0; jj < " << kPanel << "; ++jj)\n"
      << "        if (jj < nc) for (i64 d = 0; d < " << L(D) << "; ++d) kp[d * " << kPanel << " + jj] = " << kload << ";\n"
      << "        else for (i64 d = 0; d < " << L(D) << "; ++d) kp[d * " << kPanel << " + jj] = 0.0f;\n";
  s << "      for (i64 ir = 0; ir < mrows; ir += HPF_MR)\n"
    << "        for (i64 jp = 0; jp < " << kPanel << "; jp += HPF_NR)\n"
    << "          hpf_mm_micro_bx(" << L(D) << ", qb + ir * " << L(D) << ", 1, " << L(D) << ", kp + jp, " << kPanel
    << ", HPF_VW, sc + ir * " << L(SKP) << " + jc + jp, " << L(SKP) << ");\n"
    << "    }\n"
    // Per row: the epilogue and the scores' rounding, then the softmax kernel's computation.
    << "    for (i64 i = 0; i < rows; ++i) {\n"
    << "      float* restrict e = sc + i * " << L(SKP) << ";\n";
  if (!epi.empty())
    s << "      const i64 qi = r0 + i;\n"
      << "      (void)qi;\n"
      << "#pragma clang loop vectorize_width(16)\n"
      << "      for (i64 j = 0; j < " << L(SK) << "; ++j) {\n"
      << "        float v = e[j];\n"
      << epi << "        e[j] = v;\n"
      << "      }\n";
  // 16 lanes where the host prefers 8 (here and for the epilogue above): exp is most of the
  // softmax's work, and BF16 roundings are long integer sequences per value.
  s
    << "      hpf_f32x16 mv = (hpf_f32x16){} - (1.0f / 0.0f);\n"
    << "      i64 j = 0;\n"
    << "      for (; j + 16 <= " << L(SK) << "; j += 16) mv = __builtin_elementwise_max(mv, *(const hpf_f32x16*)(e + j));\n"
    << "      float m = -(1.0f / 0.0f);\n"
    << "      for (int l = 0; l < 16; ++l) m = mv[l] > m ? mv[l] : m;\n"
    << "      for (; j < " << L(SK) << "; ++j) m = e[j] > m ? e[j] : m;\n"
    << "#pragma clang loop vectorize_width(16)\n"
    << "      for (i64 q = 0; q < " << L(SK) << "; ++q) e[q] = hpf_vexp(e[q] - m);\n"
    << sum16("e", "sum", SK, "e[q]") << "      const float inv = 1.0f / sum;\n"
    << "#pragma clang loop vectorize_width(16)\n"
    << "      for (i64 q = 0; q < " << L(SK) << "; ++q) e[q] = " << round_to_format(prob_format, "e[q] * inv", false)
    << ";\n"
    << "    }\n"
    // O = P V, 64 keys at a time.
    << "    for (i64 x = 0; x < mrows * " << L(DVP) << "; ++x) ob[x] = 0.0f;\n"
    << "    for (i64 kc = 0; kc < " << L(SK) << "; kc += " << kPanel << ") {\n"
    << "      const i64 kv = " << L(SK) << " - kc < " << kPanel << " ? " << L(SK) << " - kc : " << kPanel << ";\n"
    << "      for (i64 p = 0; p < kv; ++p)\n"
    << "        for (i64 c = 0; c < " << L(DVP) << "; ++c) vp[p * " << L(DVP) << " + c] = c < " << L(DV) << " ? "
    << c_load_operand(VT.dtype, "V[vo + (kc + p) * " + L(vrs) + " + c * " + L(vcs) + "]") << " : 0.0f;\n"
    << "      for (i64 ir = 0; ir < mrows; ir += HPF_MR)\n"
    << "        for (i64 jp = 0; jp < " << L(DVP) << "; jp += HPF_NR)\n"
    << "          hpf_mm_micro_bx(kv, sc + ir * " << L(SKP) << " + kc, 1, " << L(SKP) << ", vp + jp, " << L(DVP)
    << ", HPF_VW, ob + ir * " << L(DVP) << " + jp, " << L(DVP) << ");\n"
    << "    }\n"
    << "    for (i64 i = 0; i < rows; ++i)\n"
    << "      for (i64 c = 0; c < " << L(DV) << "; ++c) O[oo + (r0 + i) * " << L(ors) << " + c * " << L(ocs)
    << "] = " << c_store(OT.dtype, "ob[i * " + L(DVP) + " + c]") << ";\n"
    << "  }\n}\n";
  return GeneratedKernel{name, s.str(), batches * NB, 1};
}

}  // namespace hpf::jit
