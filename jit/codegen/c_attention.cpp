// Attention in C: O = softmax(epilogue(Q K)) V over the last axis, per batch matrix, in one kernel
// (family "attention"; lowering makes it from MatMul -> [scale, mask] -> Softmax -> MatMul, see
// jit/codegen/attention_fusion.cpp). The scores and probabilities never leave the stack.
//
// The spec's form (inputs, perms, formats, epilogue): attention_form.hpp.
//
// Schedule: work item = a block of RB query rows of one batch matrix (RB a multiple of the
// microkernel's 6 rows, as many as keep the block's scores within 64 KiB; the whole matrix where
// there are matrices enough for the threads, see item_rows). Per item: the Q rows
// in FP32; per 64 keys, that K panel in FP32 and the microkernel over it into the scores; the
// epilogue, the rounding and the softmax per row (as the softmax kernel computes it); then per
// 64 keys a V chunk in FP32 and the microkernel over the probabilities into O's accumulators.
// Every buffer is on the stack (attention_fits bounds them).
#include <sstream>

#include "jit/codegen/attention_form.hpp"
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

int64_t stack_floats(int64_t d, int64_t sk, int64_t dv, int64_t rb) {
  const int64_t dvp = round_up(std::max<int64_t>(dv, 1), kPanel);
  return rb * d + d * kPanel + rb * round_up(std::max<int64_t>(sk, 1), kPanel) + kPanel * dvp + rb * dvp;
}
int64_t stack_floats(int64_t d, int64_t sk, int64_t dv) { return stack_floats(d, sk, dv, rows_per_item(sk)); }

// A whole batch matrix per work item where there are kMinItems of them (BERT-base: 12 heads of
// 128 rows) and its buffers fit: K and V are then converted once per matrix, not once per block
// of rows (BERT-base's 12 heads on one Zen 3 core in a C harness: 0.93 -> 0.86 ms); else blocks
// of rows_per_item.
constexpr int64_t kMinItems = 8;
constexpr int64_t kWholeScoreFloats = 24576;  // a whole matrix's scores: 96 KiB
int64_t item_rows(int64_t batches, int64_t sq, int64_t d, int64_t sk, int64_t dv) {
  const int64_t whole = round_up(std::max<int64_t>(sq, 1), kGemmMR);
  if (batches >= kMinItems && whole * round_up(std::max<int64_t>(sk, 1), kPanel) <= kWholeScoreFloats &&
      stack_floats(d, sk, dv, whole) <= kStackFloats)
    return whole;
  return rows_per_item(sk);
}

}  // namespace

bool attention_fits(int64_t d, int64_t sk, int64_t dv) {
  return d > 0 && sk > 0 && dv > 0 && stack_floats(d, sk, dv) <= kStackFloats;
}

Expected<GeneratedKernel> generate_c_attention(const KernelSpec& spec, const std::string& name) {
  HPF_ASSIGN_OR_RETURN(const AttentionForm f, attention_form(spec, "C codegen"));
  const AttentionForm::Strided &q = f.q, &k = f.k, &v = f.v, &o = f.o;
  const DType prob_format = f.prob_format, score_format = f.score_format;
  const int64_t SQ = f.SQ, D = f.D, SK = f.SK, DV = f.DV;
  if (!attention_fits(D, SK, DV))
    return Status::unsupported("C codegen: attention with D=" + std::to_string(D) + ", Sk=" + std::to_string(SK) +
                               ", Dv=" + std::to_string(DV) + " exceeds the kernel's stack buffers");
  const int64_t batches = f.batches;
  const int64_t RB = item_rows(batches, SQ, D, SK, DV), NB = (SQ + RB - 1) / RB, SKP = round_up(SK, kPanel), DVP = round_up(DV, kPanel);

  // The epilogue reads its operands at score (qi, j) of batch matrix t.
  KernelSpec scores = spec;
  scores.outputs = {f.scores()};
  std::string epi_ptrs;
  for (size_t in = 3; in < spec.inputs.size(); ++in) {
    const char* ct = c_storage_type(spec.inputs[in].dtype);
    epi_ptrs += std::string("  const ") + ct + "* restrict P" + std::to_string(in) + " = (const " + ct + "*)args[" +
                std::to_string(in) + "];\n";
  }
  HPF_ASSIGN_OR_RETURN(std::string epi, c_epilogue(scores, "v", [&](int in) {
    return c_load(spec.inputs[in].dtype, "P" + std::to_string(in) + "[" + f.epilogue_index[in] + "]");
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
  const int64_t qrs = q.row_stride(), qcs = q.col_stride(), krs = k.row_stride(), kcs = k.col_stride();
  const int64_t vrs = v.row_stride(), vcs = v.col_stride(), ors = o.row_stride(), ocs = o.col_stride();
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
    << "    const i64 qo = " << attention_batch_offset(q) << ", ko = " << attention_batch_offset(k)
    << ", vo = " << attention_batch_offset(v) << ", oo = " << attention_batch_offset(o) << ";\n"
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
