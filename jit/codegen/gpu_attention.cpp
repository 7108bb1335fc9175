// Attention in the GPU dialects ("attention", the form attention_form.hpp describes): O =
// softmax(epilogue(Q K)) V in one kernel; the scores and probabilities of a query row stay in
// shared memory.
//
// One block of 128 threads per (batch matrix, query row), over a grid-stride loop of them: the
// Q row into shared memory; a thread per key computes its score (FP32 over D), the epilogue and
// the rounding to the scores' format; a block max and a block sum of the exponentials give the
// probabilities, each rounded to the probabilities' format as the softmax kernel stores it; then
// a thread per output column sums probabilities times V's column (FP32) and stores it in O's
// format. Shared memory: D + Sk floats (at most 12288: every shape attention_fits admits).
#include <sstream>

#include "jit/codegen/attention_form.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/elementwise_expr.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_attention(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const ExprSpelling sp{d == GpuDialect::cuda ? "CUDA" : "HIP", "fabsf", "fabs", "expf", "erff"};
  const std::string who = std::string(gpu_dialect_name(d)) + " codegen";
  HPF_ASSIGN_OR_RETURN(const AttentionForm f, attention_form(spec, who));
  if (f.D + f.SK > 12288)
    return Status::unsupported(who + ": attention with D + Sk = " + std::to_string(f.D + f.SK) +
                               " floats of shared memory (at most 12288)");
  // The epilogue on score `v`, each step rounded to its format; operands read at (t, qi, j).
  std::string epi;
  for (size_t st = 0; st < spec.epilogue.size(); ++st) {
    const ElementwiseStep& step = spec.epilogue[st];
    std::vector<std::string> ops;
    for (int o : step.operands) {
      if (o == kProducerResult) ops.push_back("v");
      else if (o == kAbsentOperand) ops.emplace_back();
      else if (o < 0) ops.push_back("e" + std::to_string(-1 - o));
      else if (o >= 3 && o < static_cast<int>(spec.inputs.size()))
        ops.push_back(gpu_load(d, spec.inputs[o].dtype, "P" + std::to_string(o) + "[" + f.epilogue_index[o] + "]"));
      else return Status::invalid("attention: epilogue operand " + std::to_string(o) + " is not an epilogue input");
    }
    HPF_ASSIGN_OR_RETURN(std::string e, elementwise_expr(step, ops, false, sp));
    epi += "      const float e" + std::to_string(st) + " = " + gpu_round(step.dtype, e) + ";\n";
  }
  const std::string score = spec.epilogue.empty() ? gpu_round(f.score_format, "v")
                                                  : "e" + std::to_string(spec.epilogue.size() - 1);
  std::vector<std::string> names = {"Q", "K", "V"};
  for (size_t in = 3; in < spec.inputs.size(); ++in) names.push_back("P" + std::to_string(in));
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 128, spec, names, "O"));
  const TensorDesc &QT = spec.inputs[0], &KT = spec.inputs[1], &VT = spec.inputs[2], &OT = spec.outputs[0];
  std::ostringstream s;
  s << head << "  __shared__ float qs[" << f.D << "], p[" << f.SK << "], scratch[32];\n"
    << "  for (i64 item = blockIdx.x; item < " << L(f.batches * f.SQ) << "; item += gridDim.x) {\n"
    << "    const i64 t = item / " << L(f.SQ) << ", qi = item % " << L(f.SQ) << ";\n"
    << "    const i64 qo = " << attention_batch_offset(f.q) << ", ko = " << attention_batch_offset(f.k)
    << ", vo = " << attention_batch_offset(f.v) << ", oo = " << attention_batch_offset(f.o) << ";\n"
    << "    for (i64 c = threadIdx.x; c < " << L(f.D) << "; c += blockDim.x)\n"
    << "      qs[c] = " << gpu_load(d, QT.dtype, "Q[qo + qi * " + L(f.q.row_stride()) + " + c * " + L(f.q.col_stride()) + "]")
    << ";\n"
    << "    __syncthreads();\n"
    << "    float m = HPF_NEG_INF;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(f.SK) << "; j += blockDim.x) {\n"
    << "      float v = 0.0f;\n"
    << "      for (i64 c = 0; c < " << L(f.D) << "; ++c)\n"
    << "        v = fmaf(qs[c], " << gpu_load(d, KT.dtype, "K[ko + c * " + L(f.k.row_stride()) + " + j * " + L(f.k.col_stride()) + "]")
    << ", v);\n"
    << epi << "      const float x = " << score << ";\n"
    << "      p[j] = x;\n"
    << "      m = hpf_maxf(m, x);\n"
    << "    }\n"
    << "    m = hpf_block_max(m, scratch);\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(f.SK) << "; j += blockDim.x) {\n"
    << "      const float e = expf(p[j] - m);\n"
    << "      p[j] = e;\n"
    << "      sum += e;\n"
    << "    }\n"
    << "    sum = hpf_block_sum(sum, scratch);\n"
    << "    const float inv = 1.0f / sum;\n"
    << "    for (i64 j = threadIdx.x; j < " << L(f.SK) << "; j += blockDim.x) p[j] = "
    << gpu_round(f.prob_format, "p[j] * inv") << ";\n"
    << "    __syncthreads();\n"
    << "    for (i64 c = threadIdx.x; c < " << L(f.DV) << "; c += blockDim.x) {\n"
    << "      float acc = 0.0f;\n"
    << "      for (i64 j = 0; j < " << L(f.SK) << "; ++j)\n"
    << "        acc = fmaf(p[j], " << gpu_load(d, VT.dtype, "V[vo + j * " + L(f.v.row_stride()) + " + c * " + L(f.v.col_stride()) + "]")
    << ", acc);\n"
    << "      O[oo + qi * " << L(f.o.row_stride()) << " + c * " << L(f.o.col_stride()) << "] = "
    << gpu_store(d, OT.dtype, "acc") << ";\n"
    << "    }\n"
    << "    __syncthreads();\n"
    << "  }\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), f.batches * f.SQ * 128, 128};
}

}  // namespace hpf::jit
