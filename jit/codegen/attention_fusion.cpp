#include "jit/codegen/attention_fusion.hpp"

#include <algorithm>
#include <numeric>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

using Kind = LoweredStep::Kind;

// A MatMul step (not Gemm, no quantisation attributes) with its two operands and one output.
bool plain_matmul(const LoweredStep& st) {
  return st.kind == Kind::kernel && st.spec.family == "matmul" && st.spec.attrs.empty() && st.outputs.size() == 1 &&
         st.inputs.size() - static_cast<size_t>(st.spec.epilogue_inputs) == 2;
}

// F32, BF16 and TF32 keep an overflow finite where FP32 does.
bool wide(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::TF32; }

// The perm of a Transpose step that only moves values (one input, same format), or empty.
std::vector<int64_t> transpose_perm(const LoweredStep& st) {
  if (st.kind != Kind::kernel || st.spec.family != "transpose" || st.inputs.size() != 1 || st.outputs.size() != 1 ||
      st.spec.inputs.size() != 1 || st.spec.inputs[0].dtype != st.spec.outputs[0].dtype)
    return {};
  std::vector<int64_t> perm = attr_ints(st.spec.attrs, "perm");
  if (perm.empty()) {  // ONNX's default: the axes reversed
    perm.resize(st.spec.inputs[0].shape.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

}  // namespace

void fuse_attention(const Graph& g, std::vector<LoweredStep>& steps, const std::vector<int>& uses) {
  std::vector<int> step_of(g.values().size(), -1), reader_of(g.values().size(), -1);
  for (size_t i = 0; i < steps.size(); ++i) {
    for (ValueId o : steps[i].outputs)
      if (o != kNoValue) step_of[o] = static_cast<int>(i);
    for (ValueId v : steps[i].inputs)
      if (v != kNoValue) reader_of[v] = static_cast<int>(i);  // meaningful where uses[v] == 1
  }
  std::vector<bool> drop(steps.size(), false);
  for (size_t bi = 0; bi < steps.size(); ++bi) {
    const LoweredStep& b = steps[bi];
    if (!plain_matmul(b) || !b.spec.epilogue.empty()) continue;
    const ValueId p = b.inputs[0];
    const int si = step_of[p];
    if (si < 0 || uses[p] != 1 || b.inputs[1] == p) continue;
    const LoweredStep& sm = steps[si];
    const auto rank = static_cast<int64_t>(sm.spec.outputs.empty() ? 0 : sm.spec.outputs[0].shape.size());
    const int64_t axis = attr_i(sm.spec.attrs, "axis", -1);
    if (sm.kind != Kind::kernel || sm.spec.family != "softmax" || sm.spec.attrs.count("log") || sm.outputs.size() != 1 ||
        (axis < 0 ? axis + rank : axis) != rank - 1)
      continue;
    const ValueId x = sm.inputs[0];
    const int xi = step_of[x];
    if (xi < 0 || uses[x] != 1) continue;
    // The scores' producer: the MatMul, or an elementwise chain over its result (a mask that is
    // no epilogue operand of the MatMul's, [B, 1, 1, Sk] with B > 1, keeps the Add apart).
    int ai = xi, ci = -1;
    ValueId scores = x;  // the MatMul's own output
    if (const LoweredStep& c = steps[xi]; c.kind == Kind::kernel && c.spec.family == "elementwise") {
      ci = xi;
      int found = 0;
      for (ValueId v : c.inputs)
        if (v != kNoValue && step_of[v] >= 0 && uses[v] == 1 && plain_matmul(steps[step_of[v]]) &&
            steps[step_of[v]].outputs[0] == v) {
          ++found;
          ai = step_of[v];
          scores = v;
        }
      if (found != 1) continue;  // none, or two MatMul results: not attention's shape
    }
    if (!plain_matmul(steps[ai])) continue;
    const LoweredStep& a = steps[ai];
    // Constant K or V are weights: the session packs a MatMul's constant second operand in the
    // plan's weight format (INT8, INT4, BF16 panels), which this kernel would bypass.
    if (g.constant(a.inputs[1]) || g.constant(b.inputs[1])) continue;
    // Formats: see the header.
    const DType score_format = sm.spec.inputs[0].dtype, prob_format = sm.spec.outputs[0].dtype;
    bool formats = wide(score_format) && wide(a.spec.outputs[0].dtype) && (wide(prob_format) || prob_format == DType::F16);
    for (const ElementwiseStep& e : a.spec.epilogue) formats = formats && wide(e.dtype);
    if (ci >= 0)
      for (const ElementwiseStep& e : steps[ci].spec.chain)
        formats = formats && wide(e.dtype) && epilogue_takes(e.op) && e.op != "BatchNormalization";
    if (!formats) continue;

    LoweredStep f;
    f.kind = Kind::kernel;
    f.spec.family = "attention";
    f.spec.accumulation = DType::F32;
    f.spec.attrs["score_format"] = std::string(dtype_name(score_format));
    f.spec.attrs["prob_format"] = std::string(dtype_name(prob_format));
    f.inputs = {a.inputs[0], a.inputs[1], b.inputs[1]};
    f.spec.inputs = {a.spec.inputs[0], a.spec.inputs[1], b.spec.inputs[1]};
    for (size_t k = 2; k < a.inputs.size(); ++k) {  // the epilogue's inputs, one place further on
      f.inputs.push_back(a.inputs[k]);
      f.spec.inputs.push_back(a.spec.inputs[k]);
    }
    f.spec.epilogue = a.spec.epilogue;
    f.spec.epilogue_inputs = a.spec.epilogue_inputs;
    for (ElementwiseStep& e : f.spec.epilogue)
      for (int& o : e.operands)
        if (o >= 2) ++o;
    if (ci >= 0) {  // the chain's steps after the MatMul's own epilogue, on the value it stores
      const LoweredStep& c = steps[ci];
      auto& epi = f.spec.epilogue;
      if (epi.empty() && a.spec.outputs[0].dtype != DType::F32) {  // read back rounded, as stored
        ElementwiseStep r;
        r.op = "Identity";
        r.operands = {kProducerResult};
        r.dtype = a.spec.outputs[0].dtype;
        epi.push_back(std::move(r));
      }
      const int base = static_cast<int>(epi.size());
      const int stored = epi.empty() ? kProducerResult : -base;  // the MatMul's value as the chain reads it
      for (const ElementwiseStep& e : c.spec.chain) {
        ElementwiseStep m = e;
        for (int& o : m.operands) {
          if (o == kAbsentOperand) continue;
          if (o < 0) {
            o = -1 - (base + (-1 - o));  // an earlier chain step
          } else if (c.inputs[o] == scores) {
            o = stored;
          } else {
            f.inputs.push_back(c.inputs[o]);
            f.spec.inputs.push_back(c.spec.inputs[o]);
            ++f.spec.epilogue_inputs;
            o = static_cast<int>(f.inputs.size()) - 1;
          }
        }
        epi.push_back(std::move(m));
      }
    }
    f.outputs = b.outputs;
    f.spec.outputs = b.spec.outputs;

    // Q, K, V and O as the kernel sees them: one rank, one batch shape, sizes that chain and fit.
    const std::vector<int64_t>&qs = f.spec.inputs[0].shape, &ks = f.spec.inputs[1].shape,
          &vs = f.spec.inputs[2].shape, &os = f.spec.outputs[0].shape;
    const size_t r = qs.size();
    if (r < 2 || ks.size() != r || vs.size() != r || os.size() != r || !std::equal(qs.begin(), qs.end() - 2, ks.begin()) ||
        !std::equal(qs.begin(), qs.end() - 2, vs.begin()) || !std::equal(qs.begin(), qs.end() - 2, os.begin()) ||
        ks[r - 2] != qs[r - 1] || vs[r - 2] != ks[r - 1] || !attention_fits(qs[r - 1], ks[r - 1], vs[r - 1]))
      continue;
    // The epilogue's operands broadcast to the scores [.., Sq, Sk] (numpy rules).
    std::vector<int64_t> ss(qs.begin(), qs.end() - 2);
    ss.push_back(qs[r - 2]);
    ss.push_back(ks[r - 1]);
    bool broadcast = true;
    for (size_t k = 3; k < f.spec.inputs.size(); ++k) {
      const std::vector<int64_t>& es = f.spec.inputs[k].shape;
      broadcast = broadcast && is_float(f.spec.inputs[k].dtype) && es.size() <= r;
      for (size_t d = 0; broadcast && d < es.size(); ++d)
        broadcast = es[d] == 1 || es[d] == ss[r - es.size() + d];
    }
    if (!broadcast) continue;

    // Transposes that only feed Q, K or V, or only read O.
    std::vector<int> folded;
    const char* perms[3] = {"q_perm", "k_perm", "v_perm"};
    for (int k = 0; k < 3; ++k) {
      const ValueId v = f.inputs[k];
      const int ti = v == kNoValue ? -1 : step_of[v];
      if (ti < 0 || uses[v] != 1 || drop[ti]) continue;
      const std::vector<int64_t> perm = transpose_perm(steps[ti]);
      if (perm.empty()) continue;
      f.spec.attrs[perms[k]] = perm;
      f.inputs[k] = steps[ti].inputs[0];
      f.spec.inputs[k] = steps[ti].spec.inputs[0];
      folded.push_back(ti);
    }
    std::sort(folded.begin(), folded.end());
    for (int ti : folded) {
      drop[ti] = true;
      f.fused.insert(f.fused.end(), steps[ti].fused.begin(), steps[ti].fused.end());
      f.label += steps[ti].label + "+";
    }
    f.fused.insert(f.fused.end(), a.fused.begin(), a.fused.end());
    f.label += a.label + "+";
    if (ci >= 0) {
      f.fused.insert(f.fused.end(), steps[ci].fused.begin(), steps[ci].fused.end());
      f.label += steps[ci].label + "+";
      drop[ci] = true;
    }
    for (const LoweredStep* st : {&sm, &b}) f.fused.insert(f.fused.end(), st->fused.begin(), st->fused.end());
    f.label += sm.label + "+" + b.label;
    f.node = b.node;
    const ValueId o = b.outputs[0];
    if (const int ti = reader_of[o]; ti >= 0 && uses[o] == 1) {
      const std::vector<int64_t> perm = transpose_perm(steps[ti]);
      if (!perm.empty() && steps[ti].inputs[0] == o) {
        f.spec.attrs["o_perm"] = perm;
        f.outputs = steps[ti].outputs;
        f.spec.outputs = steps[ti].spec.outputs;
        f.fused.insert(f.fused.end(), steps[ti].fused.begin(), steps[ti].fused.end());
        f.label += "+" + steps[ti].label;
        f.node = steps[ti].node;
        drop[ti] = true;
        for (ValueId v : f.outputs) step_of[v] = static_cast<int>(bi);
      }
    }
    drop[ai] = drop[si] = true;
    steps[bi] = std::move(f);
  }
  size_t kept = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    if (!drop[i]) {
      if (kept != i) steps[kept] = std::move(steps[i]);
      ++kept;
    }
  steps.resize(kept);
}

}  // namespace hpf::jit
