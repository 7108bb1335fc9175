#include "jit/codegen/lowering.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <variant>

#include "jit/codegen/attention_fusion.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

const std::set<std::string> kElementwise = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sqrt", "Neg", "Abs",
                                            "Exp", "Log", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish",
                                            "Relu", "LeakyRelu", "Gelu", "Clip", "Cast",
                                            // float maths (kFloatOnly), integer-capable, bool results
                                            "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
                                            "Acosh", "Atanh", "Floor", "Ceil", "Round", "Reciprocal", "Softplus",
                                            "Softsign", "Elu", "Selu", "Celu", "Mish", "ThresholdedRelu", "Shrink",
                                            "PRelu", "Mean", "Sign", "Mod", "Sum", "Where", "IsNaN", "IsInf",
                                            "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                            "Xor", "Not", "DequantizeLinear", "QuantizeLinear"};
// The reference takes these on float tensors only (integers are its "unsupported").
const std::set<std::string> kFloatOnly = {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
                                          "Acosh", "Atanh", "Floor", "Ceil", "Round", "Reciprocal", "Softplus",
                                          "Softsign", "Elu", "Selu", "Celu", "Mish", "ThresholdedRelu", "Shrink",
                                          "PRelu", "Mean"};
const std::set<std::string> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};

}  // namespace

bool is_view_op(const std::string& op) { return kViews.count(op) > 0; }

namespace {
// Control flow (If, Loop, Scan) runs its subgraphs on the reference: no generator takes it.
bool has_subgraph(const Node& n) {
  return std::any_of(n.attrs.begin(), n.attrs.end(),
                     [](const auto& a) { return std::holds_alternative<GraphAttr>(a.second); });
}
// Operand types the chain computes as the reference does; other combinations (the reference's
// errors and unsupported cases) stay fallbacks so they report the same way.
bool chain_takes(const Graph& g, const Node& n) {
  std::vector<DType> t;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) {
      if (n.op != "Clip") return false;
      continue;
    }
    t.push_back(g.value(v).dtype);
  }
  if (t.empty()) return false;
  auto all = [&](auto pred, size_t from = 0) {
    return std::all_of(t.begin() + std::min(from, t.size()), t.end(), pred);
  };
  if (kFloatOnly.count(n.op)) return all([](DType d) { return is_float(d); });
  if (n.op == "And" || n.op == "Or" || n.op == "Xor" || n.op == "Not")
    return all([](DType d) { return d == DType::BOOL; });
  if (n.op == "Where")
    return t.size() == 3 && t[0] == DType::BOOL && is_float(t[1]) == is_float(t[2]);
  // QuantizeLinear and DequantizeLinear per tensor, between a float and 8-bit integers (exact in
  // FP32): (x - zp) * scale; rint(x / scale) + zp saturated.
  auto scalar = [&](size_t k) {
    const auto s = concrete(g.value(n.inputs[k]).shape);
    return g.value(n.inputs[k]).has_shape && s && numel(*s) == 1;
  };
  auto int8 = [](DType d) { return d == DType::I8 || d == DType::U8; };
  if (n.op == "DequantizeLinear")
    return int8(t[0]) && t.size() >= 2 && is_float(t[1]) && scalar(1) && (t.size() == 2 || (t[2] == t[0] && scalar(2)));
  if (n.op == "QuantizeLinear")
    return is_float(t[0]) && t.size() >= 2 && is_float(t[1]) && scalar(1) && (t.size() == 2 || (int8(t[2]) && scalar(2))) &&
           int8(g.value(n.outputs[0]).dtype) && !n.flag("block_size");
  if (n.op == "Mod" || n.op == "Sum")  // no mixed float/integer operands
    return all([&](DType d) { return is_float(d) == is_float(t[0]); });
  return true;
}


// Whether op `op`, given an Inf or NaN at operand `at` (its other operands finite), returns a
// non-finite value, or (Relu of -Inf) exactly the value it returns for every finite input beyond
// F16's range of that sign, so that an F16 overflow it consumes inside a fused kernel either
// reaches the kernel's output, where the overflow watch sees it, or changes no value at all.
// Not Clip, HardSigmoid, Sigmoid, Tanh (they map Inf to a bound a finite input may not reach, or
// the argument needs their parameters), nor Div with the value as divisor (finite / Inf = 0).
bool overflow_transparent(const std::string& op, int at) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "BatchNormalization", "Cast", "Relu",
                                            "LeakyRelu"};
  return ops.count(op) > 0 || (op == "Div" && at == 0);
}

// Epilogue fusion: node `n` (elementwise, or an inference BatchNormalization after a conv) joins
// the epilogue of the matmul/conv step that produces one of its inputs (of two, the later step),
// when that value has no other reader, the shapes agree, and every other operand exists before the producer runs (the
// kernel runs where the producer was) and broadcasts to its output as a scalar, per channel or
// in full, and no value it follows is stored in a narrow-range format unless `n` is
// overflow-transparent (F16 only). Returns the step's
// index, or -1 when `n` stays a step of its own.
Expected<int> absorb_into_producer(const Graph& g, const Node& n, int32_t id, std::vector<LoweredStep>& steps,
                                   const std::vector<int>& step_of, const std::vector<int>& uses,
                                   const std::function<Expected<TensorDesc>(ValueId)>& desc) {
  if (n.outputs.size() != 1 || !epilogue_takes(n.op) || n.op == "Identity") return -1;
  const bool bn = n.op == "BatchNormalization";
  if (bn ? n.inputs.size() != 5 || attr_i(n.attrs, "training_mode", 0) != 0 : !chain_takes(g, n)) return -1;
  int at = -1;  // operand position of the producer's value
  int s = -1;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueId v = n.inputs[k];
    if (v == kNoValue || step_of[v] < 0) continue;
    const LoweredStep& p = steps[step_of[v]];
    if (p.kind != LoweredStep::Kind::kernel || (p.spec.family != "conv" && p.spec.family != "matmul") ||
        p.outputs.size() != 1 || p.outputs[0] != v || uses[v] != 1)
      continue;
    if (at >= 0 && n.inputs[at] == v) return -1;  // the producer's value twice (x * x): keep it simple
    // Two producers (a residual Add of two convs): the later one, the other's value exists by then.
    if (at >= 0 && step_of[v] < s) continue;
    at = static_cast<int>(k);
    s = step_of[v];
  }
  if (at < 0 || (bn && at != 0)) return -1;
  LoweredStep& p = steps[s];
  const bool conv = p.spec.family == "conv";
  if (bn && !conv) return -1;  // BatchNormalization's channel axis is the conv's
  for (const TensorDesc& t : p.spec.inputs)
    if (!is_float(t.dtype)) return -1;
  HPF_ASSIGN_OR_RETURN(TensorDesc out, desc(n.outputs[0]));
  const TensorDesc& pout = p.spec.outputs[0];
  if (!is_float(out.dtype) || !is_float(pout.dtype) || out.shape != pout.shape) return -1;
  // Values of the kernel in a narrow-range format: an overflow there (F16 rounds it to Inf) must
  // stay visible to the session's overflow watch, which reads the step's final output. FP8 values
  // stay step outputs (the epilogue does not round to FP8, and E4M3 saturates rather than giving
  // Inf); past an F16 value only overflow-transparent steps are absorbed.
  auto wide = [](DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::TF32; };
  bool narrow_seen = !wide(pout.dtype);
  for (const ElementwiseStep& e : p.spec.epilogue) narrow_seen = narrow_seen || !wide(e.dtype);
  if (narrow_seen) {
    if (!wide(pout.dtype) && pout.dtype != DType::F16) return -1;
    for (const ElementwiseStep& e : p.spec.epilogue)
      if (!wide(e.dtype) && e.dtype != DType::F16) return -1;
    if (!overflow_transparent(n.op, at)) return -1;
  }
  const int axis = conv ? 1 : static_cast<int>(out.shape.size()) - 1;
  // The other operands, checked before anything changes.
  std::vector<TensorDesc> ops(n.inputs.size());
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueId v = n.inputs[k];
    if (static_cast<int>(k) == at) continue;
    if (v == kNoValue) {
      if (n.op != "Clip") return -1;
      continue;
    }
    if (step_of[v] >= s) return -1;  // computed after the producer's kernel runs
    HPF_ASSIGN_OR_RETURN(ops[k], desc(v));
    if (!is_float(ops[k].dtype)) return -1;
    if (bn) {  // per channel by definition: shaped so that it broadcasts along axis 1
      if (numel(ops[k].shape) != out.shape[1]) return -1;
      std::vector<int64_t> sh(out.shape.size(), 1);
      sh[1] = out.shape[1];
      ops[k].shape = sh;
    }
    if (epilogue_operand_kind(ops[k].shape, out.shape, axis) < 0) return -1;
  }
  auto& epi = p.spec.epilogue;
  // The value the graph stores in a 16-bit format is read back rounded.
  if (epi.empty() && pout.dtype != DType::F32) {
    ElementwiseStep r;
    r.op = "Identity";
    r.operands = {kProducerResult};
    r.dtype = pout.dtype;
    epi.push_back(std::move(r));
  }
  ElementwiseStep e;
  e.op = n.op;
  e.attrs = n.attrs;
  e.dtype = out.dtype;
  const int prev = epi.empty() ? kProducerResult : -static_cast<int>(epi.size());
  const size_t first = p.inputs.size() - p.spec.epilogue_inputs;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueId v = n.inputs[k];
    if (static_cast<int>(k) == at) {
      e.operands.push_back(prev);
      continue;
    }
    if (v == kNoValue) {
      e.operands.push_back(kAbsentOperand);
      continue;
    }
    auto pos = std::find(p.inputs.begin() + first, p.inputs.end(), v);
    if (pos == p.inputs.end() || (bn && p.spec.inputs[pos - p.inputs.begin()].shape != ops[k].shape)) {
      p.inputs.push_back(v);
      p.spec.inputs.push_back(ops[k]);
      ++p.spec.epilogue_inputs;
      pos = p.inputs.end() - 1;
    }
    e.operands.push_back(static_cast<int>(pos - p.inputs.begin()));
  }
  epi.push_back(std::move(e));
  p.fused.push_back(id);
  p.label += "+" + n.name;
  p.node = id;
  p.outputs = n.outputs;
  p.spec.outputs = {out};
  return s;
}

// An elementwise chain that reads a MatMul/Conv step's result more than once, and is that
// value's only reader, joins the step's epilogue: GELU exported as x * 0.5 * (1 + erf(x / sqrt 2))
// reads x twice, which absorb_into_producer (one reader, a chain of single steps) leaves as a
// kernel of its own, storing x and reading it back (BERT-base's FFN: 12 passes over 128 x 3072).
// As absorb_into_producer: the chain's other operands exist before the producer runs and
// broadcast to its output; every format on the way is FP32, BF16 or TF32 (no overflow watch to
// keep); the shapes agree. The chain's steps keep their order and formats.
void merge_chains_into_producers(const Graph& g, std::vector<LoweredStep>& steps, const std::vector<int>& uses) {
  auto wide = [](DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::TF32; };
  for (size_t e = 0; e < steps.size(); ++e) {
    LoweredStep& E = steps[e];
    if (E.kind != LoweredStep::Kind::kernel || E.spec.family != "elementwise" || E.outputs.size() != 1) continue;
    std::vector<int> step_of(g.values().size(), -1);
    for (size_t k = 0; k < e; ++k)
      for (ValueId o : steps[k].outputs)
        if (o != kNoValue) step_of[o] = static_cast<int>(k);
    for (size_t i = 0; i < E.inputs.size(); ++i) {
      const ValueId v = E.inputs[i];
      if (v == kNoValue || step_of[v] < 0) continue;
      const size_t ps = static_cast<size_t>(step_of[v]);
      LoweredStep& P = steps[ps];
      if (P.kind != LoweredStep::Kind::kernel || (P.spec.family != "matmul" && P.spec.family != "conv") ||
          P.outputs.size() != 1 || P.outputs[0] != v)
        continue;
      int reads = 0;  // the chain's nodes' reads of v: all of v's (and at least two)
      for (int32_t id : E.fused)
        for (ValueId x : g.node(id).inputs) reads += x == v;
      if (reads < 2 || reads != uses[v]) continue;
      const TensorDesc& pout = P.spec.outputs[0];
      bool ok = E.spec.outputs[0].shape == pout.shape && wide(pout.dtype);
      for (const TensorDesc& t : P.spec.inputs) ok = ok && is_float(t.dtype);
      for (const ElementwiseStep& s : P.spec.epilogue) ok = ok && wide(s.dtype);
      for (const ElementwiseStep& s : E.spec.chain) ok = ok && wide(s.dtype) && epilogue_takes(s.op);
      const int axis = P.spec.family == "conv" ? 1 : static_cast<int>(pout.shape.size()) - 1;
      for (size_t k = 0; ok && k < E.inputs.size(); ++k) {
        if (E.inputs[k] == v) continue;
        const ValueId u = E.inputs[k];
        ok = u != kNoValue && (step_of[u] < 0 || static_cast<size_t>(step_of[u]) < ps) && is_float(E.spec.inputs[k].dtype) &&
             epilogue_operand_kind(E.spec.inputs[k].shape, pout.shape, axis) >= 0;
      }
      if (!ok) continue;
      auto& epi = P.spec.epilogue;
      if (epi.empty() && pout.dtype != DType::F32) {  // v read back rounded to its format
        ElementwiseStep r;
        r.op = "Identity";
        r.operands = {kProducerResult};
        r.dtype = pout.dtype;
        epi.push_back(std::move(r));
      }
      const int base = static_cast<int>(epi.size());
      const int vref = epi.empty() ? kProducerResult : -base;  // v: the epilogue's last result
      const size_t first = P.inputs.size() - static_cast<size_t>(P.spec.epilogue_inputs);
      for (ElementwiseStep s : E.spec.chain) {
        for (int& o : s.operands) {
          if (o == kAbsentOperand) continue;
          if (o < 0) {
            o = -1 - (-1 - o + base);
            continue;
          }
          const ValueId u = E.inputs[static_cast<size_t>(o)];
          if (u == v) {
            o = vref;
            continue;
          }
          auto pos = std::find(P.inputs.begin() + static_cast<std::ptrdiff_t>(first), P.inputs.end(), u);
          if (pos == P.inputs.end()) {
            P.inputs.push_back(u);
            P.spec.inputs.push_back(E.spec.inputs[static_cast<size_t>(o)]);
            ++P.spec.epilogue_inputs;
            pos = P.inputs.end() - 1;
          }
          o = static_cast<int>(pos - P.inputs.begin());
        }
        epi.push_back(std::move(s));
      }
      P.outputs = E.outputs;
      P.spec.outputs = E.spec.outputs;
      P.fused.insert(P.fused.end(), E.fused.begin(), E.fused.end());
      P.label += "+" + E.label;
      P.node = E.node;
      steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(e));
      --e;
      break;
    }
  }
}
}  // namespace

Expected<std::vector<LoweredStep>> lower(const Graph& g, const std::vector<DType>& storage,
                                         const std::vector<bool>& skip, const LowerOptions& options) {
  HPF_ASSIGN_OR_RETURN(auto order, g.topological_order());
  const std::function<Expected<TensorDesc>(ValueId)> desc = [&](ValueId v) -> Expected<TensorDesc> {
    const Value& val = g.value(v);
    auto dims = val.has_shape ? concrete(val.shape) : std::nullopt;
    if (!dims) return Status::invalid("lowering: value '" + val.name + "' has no concrete shape");
    DType t = val.dtype;
    if (static_cast<size_t>(v) < storage.size() && is_float(t)) t = storage[v];
    return TensorDesc{t, *dims};
  };
  // Consumers per value, to know when an intermediate may live only in registers.
  std::vector<int> uses(g.values().size(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++uses[v];
  for (ValueId v : g.outputs()) uses[v] += 1 << 20;

  std::vector<LoweredStep> steps;
  std::vector<int> chain_of(g.values().size(), -1);  // value -> index of the open elementwise step producing it
  std::vector<int> step_of(g.values().size(), -1);   // value -> index of the step producing it (-1: input, weight)
  for (int32_t id : order) {
    if (static_cast<size_t>(id) < skip.size() && skip[id]) continue;
    const Node& n = g.node(id);
    LoweredStep st;
    st.node = id;
    st.fused = {id};
    st.label = n.name;
    auto produced_by = [&](size_t step) {
      for (ValueId o : n.outputs) step_of[o] = static_cast<int>(step);
    };
    if (has_subgraph(n)) {
      st.kind = LoweredStep::Kind::fallback;
      st.inputs = n.inputs;
      st.outputs = n.outputs;
      steps.push_back(std::move(st));
      produced_by(steps.size() - 1);
      continue;
    }
    // A Cast between float formats whose input is already stored in the target format (the
    // session has its producer write that format) only relabels bytes.
    auto stored = [&](ValueId v) {
      const DType t = g.value(v).dtype;
      return is_float(t) && static_cast<size_t>(v) < storage.size() ? storage[v] : t;
    };
    const bool noop_cast = n.op == "Cast" && n.inputs.size() == 1 && is_float(g.value(n.inputs[0]).dtype) &&
                           is_float(g.value(n.outputs[0]).dtype) && stored(n.inputs[0]) == stored(n.outputs[0]);
    if (is_view_op(n.op) || noop_cast) {
      st.kind = LoweredStep::Kind::alias;
      st.inputs = {n.inputs[0]};
      st.outputs = n.outputs;
      steps.push_back(std::move(st));
      produced_by(steps.size() - 1);
      continue;
    }
    if (options.producer_epilogues && (kElementwise.count(n.op) || n.op == "BatchNormalization")) {
      HPF_ASSIGN_OR_RETURN(int into, absorb_into_producer(g, n, id, steps, step_of, uses, desc));
      if (into >= 0) {
        produced_by(static_cast<size_t>(into));
        continue;
      }
    }
    if (kElementwise.count(n.op) && n.outputs.size() == 1 && chain_takes(g, n)) {
      HPF_ASSIGN_OR_RETURN(TensorDesc out, desc(n.outputs[0]));
      // Extend the chain producing one of the inputs (the first that allows it: GELU's x * (1 +
      // erf(x / sqrt 2)) continues the erf chain through its second operand) when this node is
      // its only use and shapes agree. The chain's kernel runs where its first node was: every
      // other operand must exist by then.
      int open = -1;
      for (ValueId x : n.inputs) {
        const int c = x >= 0 ? chain_of[x] : -1;
        if (c < 0 || uses[x] != 1 || steps[c].spec.outputs[0].shape != out.shape) continue;
        bool ready = true;
        for (ValueId v : n.inputs) ready = ready && (v == kNoValue || v == x || step_of[v] < c);
        if (ready) {
          open = c;
          break;
        }
      }
      LoweredStep* s = nullptr;
      if (open >= 0) {
        s = &steps[open];
      } else {
        st.kind = LoweredStep::Kind::kernel;
        st.spec.family = "elementwise";
        steps.push_back(std::move(st));
        s = &steps.back();
      }
      ElementwiseStep e;
      e.op = n.op;
      e.attrs = n.attrs;
      e.dtype = out.dtype;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.inputs[k];
        if (v == kNoValue) {
          e.operands.push_back(kAbsentOperand);  // Clip without one of its bounds
          continue;
        }
        if (s->spec.chain.size() && v == s->outputs[0]) {
          e.operands.push_back(-static_cast<int>(s->spec.chain.size()));  // the previous step
          continue;
        }
        auto pos = std::find(s->inputs.begin(), s->inputs.end(), v);
        if (pos == s->inputs.end()) {
          HPF_ASSIGN_OR_RETURN(TensorDesc d, desc(v));
          s->inputs.push_back(v);
          s->spec.inputs.push_back(d);
          pos = s->inputs.end() - 1;
        }
        e.operands.push_back(static_cast<int>(pos - s->inputs.begin()));
      }
      s->spec.chain.push_back(std::move(e));
      if (s->node != id) {
        s->fused.push_back(id);
        s->label += "+" + n.name;
        chain_of[s->outputs[0]] = -1;
      }
      s->node = id;
      s->outputs = n.outputs;
      s->spec.outputs = {out};
      // An integer or bool result ends the chain: the chain computes in FP32.
      chain_of[n.outputs[0]] = is_float(out.dtype) ? static_cast<int>(s - steps.data()) : -1;
      produced_by(static_cast<size_t>(s - steps.data()));
      continue;
    }
    // Rank of a float input 0 of a single-output node; 0 when that does not hold.
    auto rank0 = [&]() -> size_t {
      if (n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.size() != 1) return 0;
      const Value& x = g.value(n.inputs[0]);
      return x.has_shape && is_float(x.dtype) ? x.shape.size() : 0;
    };
    std::string family;
    Attributes baked;  // reduce and data movement: constant operands (axes, starts, pads, scales) read here
    if (n.op == "MatMul" || n.op == "Gemm") family = "matmul";
    else if (n.op == "MatMulInteger") family = "matmul_integer";  // a kernel where its weight is packed (weight_packing.hpp)
    else if (n.op == "DynamicQuantizeLinear" && n.outputs.size() == 3 && is_float(g.value(n.inputs[0]).dtype))
      family = "dynamic_quantize";
    else if (n.op == "Softmax" || n.op == "LogSoftmax") family = "softmax";
    else if (n.op == "LayerNormalization" && n.outputs.size() == 1) family = "layernorm";
    else if (n.op == "Gather") family = "gather";
    else if (n.op == "Transpose") family = "transpose";
    // Windowed ops (1-D or 2-D NCHW) and BatchNormalization, on a float input, one output; the
    // rest stay reference fallbacks.
    else if ((n.op == "Conv" || n.op == "ConvTranspose") && (rank0() == 3 || rank0() == 4) &&
             (n.inputs.size() == 2 || (n.inputs.size() == 3 && n.inputs[2] != kNoValue)))
      family = n.op == "Conv" ? "conv" : "conv_transpose";
    else if (n.op == "MaxPool" && (rank0() == 3 || rank0() == 4)) family = "maxpool";
    else if (n.op == "AveragePool" && (rank0() == 3 || rank0() == 4)) family = "avgpool";
    else if (n.op == "GlobalAveragePool" && rank0() >= 3) family = "globalavgpool";
    else if (n.op == "GlobalMaxPool" && rank0() >= 3) family = "globalmaxpool";
    else if (n.op == "BatchNormalization" && n.inputs.size() == 5 && rank0() >= 2) family = "batchnorm";
    // LSTM: its optional inputs and outputs may be absent anywhere; the kernel takes the present
    // ones, and masks say which they are.
    if (n.op == "LSTM" && n.inputs.size() >= 3 && n.inputs[0] != kNoValue && is_float(g.value(n.inputs[0]).dtype)) {
      int64_t in_mask = 0, out_mask = 0;
      for (size_t k = 3; k < n.inputs.size() && k < 8; ++k)
        if (n.inputs[k] != kNoValue) in_mask |= int64_t{1} << k;
      for (size_t k = 0; k < n.outputs.size() && k < 3; ++k)
        if (n.outputs[k] != kNoValue) out_mask |= int64_t{1} << k;
      if (out_mask != 0 && n.inputs[1] != kNoValue && n.inputs[2] != kNoValue) {
        st.spec.family = "lstm";
        st.spec.attrs = n.attrs;
        st.spec.attrs["lstm_inputs"] = in_mask;
        st.spec.attrs["lstm_outputs"] = out_mask;
        for (ValueId v : n.inputs)
          if (v != kNoValue) st.inputs.push_back(v);
        for (ValueId v : n.outputs)
          if (v != kNoValue) st.outputs.push_back(v);
        for (ValueId v : st.inputs) {
          HPF_ASSIGN_OR_RETURN(TensorDesc d, desc(v));
          st.spec.inputs.push_back(d);
        }
        for (ValueId v : st.outputs) {
          HPF_ASSIGN_OR_RETURN(TensorDesc d, desc(v));
          st.spec.outputs.push_back(d);
        }
        steps.push_back(std::move(st));
        produced_by(steps.size() - 1);
        continue;
      }
    }
    if (family.empty()) family = bake_reduce(g, n, baked);
    if (family.empty()) family = bake_movement(g, n, baked);
    st.inputs = n.inputs;
    st.outputs = n.outputs;
    // Absent optional inputs at the end (Gemm without C) are simply left out; one in the middle
    // means a form the generators do not take.
    while (!family.empty() && baked.empty() && !st.inputs.empty() && st.inputs.back() == kNoValue) st.inputs.pop_back();
    if (baked.empty() && std::find(st.inputs.begin(), st.inputs.end(), kNoValue) != st.inputs.end()) family.clear();
    if (family.empty()) {
      st.inputs = n.inputs;
      st.kind = LoweredStep::Kind::fallback;
      steps.push_back(std::move(st));
      produced_by(steps.size() - 1);
      continue;
    }
    st.spec.family = family;
    st.spec.attrs = n.attrs;
    if (n.op == "Gemm") st.spec.attrs["gemm"] = int64_t{1};
    if (n.op == "LogSoftmax") st.spec.attrs["log"] = int64_t{1};
    if (!baked.empty()) {  // reduce/movement kernels ignore constant operands; absent ones are dropped
      for (auto& [k, v] : baked) st.spec.attrs[k] = v;
      std::erase(st.inputs, kNoValue);
    }
    for (ValueId v : st.inputs) {
      HPF_ASSIGN_OR_RETURN(TensorDesc d, desc(v));
      st.spec.inputs.push_back(d);
    }
    for (ValueId v : n.outputs) {
      HPF_ASSIGN_OR_RETURN(TensorDesc d, desc(v));
      st.spec.outputs.push_back(d);
    }
    steps.push_back(std::move(st));
    produced_by(steps.size() - 1);
  }
  if (options.attention) fuse_attention(g, steps, uses);
  if (options.producer_epilogues) merge_chains_into_producers(g, steps, uses);
  return steps;
}

}  // namespace hpf::jit
