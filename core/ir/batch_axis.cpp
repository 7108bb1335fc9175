// Batch-axis tracing (see batch_axis.hpp): one rule per kind of op, each saying where the batch
// axis of the op's inputs lands in its outputs, or why the op mixes batch entries.
#include "core/ir/batch_axis.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/ir/op_geometry.hpp"
#include "core/ir/op_table.hpp"

namespace hpf::ir {
namespace {

bool one_of(const std::string& op, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return op == n; });
}

// Ops that compute each output element from the elements at the same (numpy-broadcast) index of
// their inputs.
bool elementwise(const std::string& op) {
  return one_of(op, {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "Where", "Equal",
                     "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "BitShift",
                     "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "PRelu", "Clip", "Dropout", "Cast",
                     "CastLike", "Identity", "Sqrt", "Neg", "Abs", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Relu",
                     "HardSwish", "HardSigmoid", "LeakyRelu", "Gelu", "Tan", "Asin", "Acos", "Atan", "Sinh",
                     "Cosh", "Asinh", "Acosh", "Atanh", "Sin", "Cos", "Ceil", "Floor", "Round", "Reciprocal",
                     "Sign", "Softplus", "Softsign", "Mish", "Elu", "Selu", "ThresholdedRelu", "IsNaN", "IsInf",
                     "Shrink", "Celu"});
}

// Ops over images [N, C, ...] that never look across N.
bool per_image(const std::string& op) {
  return one_of(op, {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                     "LpPool", "BatchNormalization", "InstanceNormalization", "LRN", "DepthToSpace",
                     "SpaceToDepth"});
}

bool reshape_like(const std::string& op) { return one_of(op, {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}); }

bool reduction(const std::string& op) {
  return one_of(op, {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                     "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"});
}

// `a` at another dimension, its factors unchanged.
BatchAxis moved(BatchAxis a, int64_t axis) {
  a.axis = static_cast<int>(axis);
  return a;
}

std::vector<int64_t> ints_of(const Graph& g, const Node& n, size_t input) {
  const Tensor* t = input < n.inputs.size() ? g.constant(n.inputs[input]) : nullptr;
  return t ? t->to_i64() : std::vector<int64_t>{};
}

class Tracer {
 public:
  Tracer(const Graph& g, int64_t batch) : g_(g), batch_(batch), axes_(g.values().size()) {}

  Expected<std::vector<BatchAxis>> run(const std::vector<int>& input_axes) {
    for (size_t k = 0; k < g_.inputs().size(); ++k)
      if (k < input_axes.size() && input_axes[k] >= 0) axes_[g_.inputs()[k]] = BatchAxis{input_axes[k], 1};
    HPF_ASSIGN_OR_RETURN(auto order, g_.topological_order());
    for (int32_t id : order) HPF_RETURN_IF_ERROR(node(g_.node(id)));
    std::vector<BatchAxis> out;
    for (ValueId v : g_.outputs()) out.push_back(axes_[v]);
    return out;
  }

 private:
  Status fail(const Node& n, const std::string& why) const {
    return Status::unsupported("node '" + n.name + "' (" + n.op + ") " + why);
  }
  std::vector<int64_t> dims(ValueId v) const {
    auto d = concrete(g_.value(v).shape);
    return d ? *d : std::vector<int64_t>{};
  }
  int64_t rank(ValueId v) const { return static_cast<int64_t>(g_.value(v).shape.size()); }
  int64_t attr_int(const Node& n, const std::string& name, int64_t fallback) const {
    const OpDef* def = find_op(n.op);
    auto v = def ? attr_or_default(n, *def, name) : std::nullopt;
    const int64_t* i = v ? std::get_if<int64_t>(&*v) : nullptr;
    return i ? *i : fallback;
  }
  std::vector<int64_t> attr_ints(const Node& n, const std::string& name) const {
    auto it = n.attrs.find(name);
    const auto* v = it == n.attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
    return v ? *v : std::vector<int64_t>{};
  }
  // Normalised axis attribute/input value against `r`; -2 when out of range.
  static int64_t norm(int64_t axis, int64_t r) { return normalize_axis(axis, r).value_or(-2); }

  void set_outputs(const Node& n, BatchAxis a) {
    for (ValueId v : n.outputs)
      if (v != kNoValue) axes_[v] = a;
  }
  // The single batched input among `which` (the others must not depend on the batch).
  Expected<BatchAxis> only_carrier(const Node& n, std::initializer_list<size_t> which) const {
    BatchAxis a;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoValue || axes_[n.inputs[i]].axis < 0) continue;
      if (std::find(which.begin(), which.end(), i) == which.end())
        return fail(n, "takes the batch axis in its input " + std::to_string(i) + ", which it has no rule for");
      a = axes_[n.inputs[i]];
    }
    return a;
  }

  Status node(const Node& n) {
    const bool any = std::any_of(n.inputs.begin(), n.inputs.end(),
                                 [&](ValueId v) { return v != kNoValue && axes_[v].axis >= 0; });
    if (!any) return Status();  // outputs independent of the batch entries (weights, shapes)
    if (elementwise(n.op)) return broadcast(n);
    if (per_image(n.op)) {
      HPF_ASSIGN_OR_RETURN(BatchAxis a, only_carrier(n, {0}));
      if (a != BatchAxis{0, 1}) return fail(n, "has the batch axis elsewhere than its images' axis 0");
      if (n.op == "BatchNormalization" && attr_int(n, "training_mode", 0) != 0)
        return fail(n, "computes batch statistics (training_mode)");
      set_outputs(n, a);
      return Status();
    }
    if (reshape_like(n.op)) return reshape(n);
    if (n.op == "MatMul") return matmul(n);
    if (n.op == "Gemm") return gemm(n);
    if (n.op == "Gather") return gather(n);
    if (n.op == "Transpose") {
      const BatchAxis a = axes_[n.inputs[0]];
      std::vector<int64_t> perm = attr_ints(n, "perm");
      if (perm.empty())
        for (int64_t k = rank(n.inputs[0]) - 1; k >= 0; --k) perm.push_back(k);
      auto it = std::find(perm.begin(), perm.end(), a.axis);
      if (it == perm.end()) return fail(n, "has no permutation entry for the batch axis");
      set_outputs(n, moved(a, it - perm.begin()));
      return Status();
    }
    if (one_of(n.op, {"Softmax", "LogSoftmax", "Hardmax", "LayerNormalization", "CumSum", "TopK", "ArgMax",
                      "ArgMin", "Split", "Concat", "GatherElements"}) ||
        reduction(n.op))
      return along_axis(n);
    HPF_ASSIGN_OR_RETURN(BatchAxis a, only_carrier(n, {0}));
    const int64_t r = rank(n.inputs[0]);
    if (n.op == "Expand") {
      set_outputs(n, moved(a, a.axis + rank(n.outputs[0]) - r));
      return Status();
    }
    if (n.op == "Slice" || n.op == "Pad" || n.op == "Tile" || n.op == "Resize") {
      // Whatever else it does, the op must keep every batch entry, in order, where it was.
      const auto in = dims(n.inputs[0]), out = dims(n.outputs[0]);
      bool kept = in.size() == out.size() && in[a.axis] == out[a.axis];
      if (n.op == "Slice") {
        auto r_ = slice_ranges(in, ints_of(g_, n, 1), ints_of(g_, n, 2), ints_of(g_, n, 3), ints_of(g_, n, 4));
        kept = kept && r_.ok() && (*r_)[a.axis].whole;
        if (n.inputs.size() < 2) kept = false;  // opset < 10 attributes: not worth a rule
      }
      if (n.op == "Pad") {
        auto pads = n.inputs.size() > 1 ? ints_of(g_, n, 1) : attr_ints(n, "pads");
        const auto axes = ints_of(g_, n, 3);
        kept = kept && axes.empty() && static_cast<int64_t>(pads.size()) == 2 * r && pads[a.axis] == 0 &&
               pads[a.axis + r] == 0;
      }
      if (n.op == "Resize") {  // a scale of exactly 1 along the batch (sizes: kept above)
        auto it = n.attrs.find("coordinate_transformation_mode");
        const auto* mode = it == n.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
        kept = kept && !(mode && *mode == "tf_crop_and_resize");
        const size_t scales = n.inputs.size() == 2 ? 1 : 2;  // opset 10: (X, scales)
        if (scales < n.inputs.size() && n.inputs[scales] != kNoValue) {
          const Tensor* t = g_.constant(n.inputs[scales]);
          const std::vector<float> f = t ? t->to_f32() : std::vector<float>{};
          kept = kept && (f.empty() ? t && t->numel() == 0 : static_cast<int64_t>(f.size()) == r && f[a.axis] == 1.0f);
        }
      }
      if (!kept) return fail(n, "changes the batch axis (dimension " + std::to_string(a.axis) + ")");
      set_outputs(n, a);
      return Status();
    }
    if (n.op == "Trilu") {
      if (a.axis >= r - 2) return fail(n, "has the batch axis among its matrix dimensions");
      set_outputs(n, a);
      return Status();
    }
    if (n.op == "QuantizeLinear" || n.op == "DequantizeLinear") {
      const Tensor* scale = n.inputs.size() > 1 ? g_.constant(n.inputs[1]) : nullptr;
      const bool per_tensor = scale && scale->numel() == 1;
      if (!per_tensor && (attr_int(n, "block_size", 0) != 0 || norm(attr_int(n, "axis", 1), r) == a.axis))
        return fail(n, "has scales along the batch axis");
      set_outputs(n, a);
      return Status();
    }
    if (one_of(n.op, {"LSTM", "GRU", "RNN"})) return recurrent(n);
    return fail(n, "has no batch-axis rule");
  }

  // Numpy broadcasting: every batched input's axis lands on the same output dimension, where the
  // other inputs have size 1 (or no dimension at all).
  Status broadcast(const Node& n) {
    const int64_t out_rank = rank(n.outputs[0]);
    std::optional<BatchAxis> at;
    for (ValueId v : n.inputs) {
      if (v == kNoValue || axes_[v].axis < 0) continue;
      const BatchAxis here = moved(axes_[v], axes_[v].axis + out_rank - rank(v));
      if (at && *at != here) return fail(n, "combines inputs whose batch axes differ");
      at = here;
    }
    for (ValueId v : n.inputs) {
      if (v == kNoValue || axes_[v].axis >= 0) continue;
      const int64_t d = at->axis - (out_rank - rank(v));
      if (d >= 0 && dims(v)[d] != 1)
        return fail(n, "broadcasts '" + g_.value(v).name + "', which is sized along the batch axis");
    }
    set_outputs(n, *at);
    return Status();
  }

  // `in` -> `out` reinterpreted in row-major order: the batch is a factor of the elements'
  // linear index, with O elements' worth of blocks outside it and I inside; it stays a factor
  // of one output dimension j when the dimensions before j hold a divisor p of O and out[j] is
  // a multiple of (O / p) x batch: j is then (O / p) x batch x out[j] / ((O / p) x batch).
  Status reshape(const Node& n) {
    const BatchAxis a = axes_[n.inputs[0]];
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && axes_[n.inputs[i]].axis >= 0) return fail(n, "takes its shape from the batch");
    const auto in = dims(n.inputs[0]), out = dims(n.outputs[0]);
    int64_t outer = a.outer;
    for (int k = 0; k < a.axis; ++k) outer *= in[k];
    int64_t p = 1;
    for (size_t j = 0; j < out.size() && p <= outer; ++j) {
      if (out[j] > 0 && outer % p == 0 && out[j] % (outer / p * batch_) == 0) {
        BatchAxis b;
        b.axis = static_cast<int>(j);
        b.outer = outer / p;
        b.inner = out[j] / (b.outer * batch_);
        set_outputs(n, b);
        return Status();
      }
      p *= out[j];
    }
    return fail(n, "splits the batch axis across dimensions");
  }

  Status matmul(const Node& n) {
    const int64_t R = rank(n.outputs[0]);
    if (rank(n.inputs[0]) < 2 || rank(n.inputs[1]) < 2) {  // a vector: its dimension drops out
      const bool a_vec = rank(n.inputs[0]) < 2;
      const ValueId m = n.inputs[a_vec ? 1 : 0];  // the matrix
      if (axes_[n.inputs[a_vec ? 0 : 1]].axis >= 0) return fail(n, "takes the batch axis in a vector operand");
      const BatchAxis a = axes_[m];
      const int64_t r = rank(m);
      if (a.axis == (a_vec ? r - 2 : r - 1)) return fail(n, "sums over the batch axis");
      // x[..., M, K] @ v[K] -> [..., M]; v[K] @ x[..., K, N] -> [..., N].
      set_outputs(n, moved(a, a_vec && a.axis == r - 1 ? r - 2 : a.axis));
      return Status();
    }
    std::optional<BatchAxis> at;
    for (int side = 0; side < 2; ++side) {
      const ValueId v = n.inputs[side];
      const BatchAxis a = axes_[v];
      if (a.axis < 0) continue;
      const int64_t r = rank(v);
      if (r < 2) return fail(n, "takes the batch axis in a vector operand");
      const int64_t k_axis = side == 0 ? r - 1 : r - 2;
      if (a.axis == k_axis) return fail(n, "sums over the batch axis");
      int64_t pos = a.axis + R - r;  // a broadcast (leading) dimension
      if (a.axis >= r - 2) pos = side == 0 ? R - 2 : R - 1;
      const BatchAxis here = moved(a, pos);
      if (at && *at != here) return fail(n, "combines operands whose batch axes differ");
      at = here;
    }
    for (int side = 0; side < 2; ++side) {
      const ValueId v = n.inputs[side];
      if (axes_[v].axis >= 0 || at->axis >= R - 2) continue;
      const int64_t d = at->axis - (R - rank(v));
      if (d >= 0 && d < rank(v) - 2 && dims(v)[d] != 1)
        return fail(n, "broadcasts '" + g_.value(v).name + "', which is sized along the batch axis");
    }
    set_outputs(n, *at);
    return Status();
  }

  Status gemm(const Node& n) {
    HPF_ASSIGN_OR_RETURN(BatchAxis a, only_carrier(n, {0}));
    const bool trans = attr_int(n, "transA", 0) != 0;
    if (a.axis != (trans ? 1 : 0)) return fail(n, "sums over the batch axis");
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      const auto c = dims(n.inputs[2]);
      if (c.size() == 2 && c[0] != 1) return fail(n, "adds a bias sized along the batch axis");
    }
    set_outputs(n, moved(a, 0));
    return Status();
  }

  Status gather(const Node& n) {
    const BatchAxis d = axes_[n.inputs[0]], i = axes_[n.inputs[1]];
    if (d.axis >= 0 && i.axis >= 0) return fail(n, "gathers batched data with batched indices");
    const int64_t axis = norm(attr_int(n, "axis", 0), rank(n.inputs[0]));
    if (i.axis >= 0) {
      set_outputs(n, moved(i, axis + i.axis));
      return Status();
    }
    if (d.axis == axis) return fail(n, "selects along the batch axis");
    set_outputs(n, moved(d, d.axis < axis ? d.axis : d.axis + rank(n.inputs[1]) - 1));
    return Status();
  }

  // Ops that work along one axis (or, for reductions and LayerNormalization, several): fine
  // while that is not the batch axis.
  Status along_axis(const Node& n) {
    const bool all_inputs = n.op == "Concat" || n.op == "GatherElements";
    std::optional<BatchAxis> at;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v == kNoValue || (i > 0 && !all_inputs)) continue;
      if (axes_[v].axis < 0) {
        if (all_inputs) return fail(n, "joins '" + g_.value(v).name + "', which is sized along the batch axis");
        continue;
      }
      if (at && *at != axes_[v]) return fail(n, "combines inputs whose batch axes differ");
      at = axes_[v];
    }
    if (!at) return fail(n, "takes the batch axis in an input it has no rule for");
    const int64_t r = rank(n.inputs[0]);
    std::vector<int64_t> axes;  // the axes the op works along
    bool keep = true;
    const bool axes_input = (reduction(n.op) || n.op == "CumSum") && n.inputs.size() > 1 && n.inputs[1] != kNoValue;
    if (axes_input && !g_.constant(n.inputs[1])) return fail(n, "takes its axes from a value computed at run time");
    if (reduction(n.op)) {
      axes = axes_input ? ints_of(g_, n, 1) : attr_ints(n, "axes");
      keep = attr_int(n, "keepdims", 1) != 0;
      if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) == 0) return fail(n, "reduces every axis");
    } else if (n.op == "LayerNormalization") {
      for (int64_t k = norm(attr_int(n, "axis", -1), r); k >= 0 && k < r; ++k) axes.push_back(k);
    } else if (n.op == "CumSum") {
      axes = ints_of(g_, n, 1);
    } else {
      const int64_t fallback = one_of(n.op, {"Softmax", "LogSoftmax", "Hardmax", "TopK"}) ? -1 : 0;
      axes = {attr_int(n, "axis", fallback)};
      if (n.op == "ArgMax" || n.op == "ArgMin") keep = attr_int(n, "keepdims", 1) != 0;
    }
    int removed = 0;
    for (int64_t ax : axes) {
      const int64_t k = norm(ax, r);
      if (k == at->axis || k < -1) return fail(n, "works along the batch axis");
      if (k < at->axis) ++removed;
    }
    set_outputs(n, moved(*at, keep ? at->axis : at->axis - removed));
    return Status();
  }

  // LSTM/GRU/RNN: X is [S, B, I] (layout 0) or [B, S, I] (layout 1); the states and
  // sequence_lens carry the batch too, the weights do not.
  Status recurrent(const Node& n) {
    const bool batch_first = attr_int(n, "layout", 0) != 0;
    const BatchAxis x = axes_[n.inputs[0]];
    if (x != BatchAxis{batch_first ? 0 : 1, 1}) return fail(n, "has the batch axis elsewhere than X's batch dimension");
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v == kNoValue) continue;
      const bool per_entry = i == 4 || i == 5 || i == 6;  // sequence_lens, initial_h, initial_c
      const int expected = i == 4 ? 0 : (batch_first ? 0 : 1);
      if (!per_entry && axes_[v].axis >= 0) return fail(n, "takes the batch axis in a weight");
      if (per_entry && axes_[v] != BatchAxis{expected, 1})
        return fail(n, "has input " + std::to_string(i) + " sized along the batch axis but not batched with X");
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] != kNoValue) axes_[n.outputs[o]] = {batch_first ? 0 : (o == 0 ? 2 : 1), 1};
    return Status();
  }

  const Graph& g_;
  int64_t batch_;
  std::vector<BatchAxis> axes_;
};

}  // namespace

Expected<std::vector<BatchAxis>> trace_batch_axis(const Graph& graph, const std::vector<int>& input_axes,
                                                  int64_t batch) {
  if (batch < 2) return Status::invalid("trace_batch_axis: batch " + std::to_string(batch) + " (needs >= 2)");
  for (const Value& v : graph.values())
    if (!v.has_shape || !concrete(v.shape))
      return Status::unsupported("value '" + v.name + "' has no concrete shape");
  return Tracer(graph, batch).run(input_axes);
}

Status check_shape_values(const Graph& graph, const std::string& batch_symbol) {
  // Per value computed from shapes: which of its elements may hold a batch size. Shape's
  // elements are the dimensions of its input that may be the batch (not a known size, named
  // `batch_symbol` or nothing); everything else is or-ed, except Gather and Slice with constant indices, which pick
  // elements. Such values may make shapes and shape arithmetic, and nothing else.
  std::map<ValueId, std::vector<bool>> taint;
  auto tainted = [&](ValueId v) {
    auto it = taint.find(v);
    return it != taint.end() && std::find(it->second.begin(), it->second.end(), true) != it->second.end();
  };
  auto any_of_inputs = [&](const Node& n) {
    return std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return v != kNoValue && tainted(v); });
  };
  HPF_ASSIGN_OR_RETURN(auto order, graph.topological_order());
  for (int32_t id : order) {
    const Node& n = graph.node(id);
    if (n.op == "Shape" || n.op == "Size") {
      const Value& x = graph.value(n.inputs[0]);
      std::vector<bool> elems;
      for (size_t d = 0; d < x.shape.size() || !x.has_shape; ++d) {
        if (!x.has_shape) {
          elems = {true};
          break;
        }
        elems.push_back(!x.shape[d].known() && (x.shape[d].symbol.empty() || x.shape[d].symbol == batch_symbol));
      }
      if (n.op == "Size") elems = {std::find(elems.begin(), elems.end(), true) != elems.end()};
      if (n.op == "Shape" && x.has_shape) {  // start/end attributes (opset 15)
        const auto r = static_cast<int64_t>(elems.size());
        auto get = [&](const char* a, int64_t def) {
          auto it = n.attrs.find(a);
          const auto* v = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
          int64_t k = v ? *v : def;
          if (k < 0) k += r;
          return std::clamp<int64_t>(k, 0, r);
        };
        const int64_t b = get("start", 0), e = get("end", r);
        elems = std::vector<bool>(elems.begin() + b, elems.begin() + std::max(b, e));
      }
      taint[n.outputs[0]] = elems;
      continue;
    }
    if (!any_of_inputs(n)) continue;
    // Shape operands: where a batch size belongs.
    static const std::map<std::string, std::set<size_t>> kShapeInputs = {
        {"Reshape", {1}}, {"Expand", {1}}, {"Tile", {1}}, {"ConstantOfShape", {0}}, {"Squeeze", {1}},
        {"Unsqueeze", {1}}, {"Pad", {1, 3}}, {"Resize", {1, 2, 3}}, {"Split", {1}}, {"TopK", {1}}};
    auto shape_inputs = kShapeInputs.find(n.op);
    bool data_use = false;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && tainted(n.inputs[i]) &&
          !(shape_inputs != kShapeInputs.end() && shape_inputs->second.count(i)))
        data_use = true;
    if (!data_use) continue;  // the outputs are data of the new shape, checked when traced
    // Shape arithmetic: integer results of integer ops, tainted in turn.
    const bool arithmetic =
        one_of(n.op, {"Gather", "Concat", "Unsqueeze", "Squeeze", "Cast", "Slice", "Range", "Add", "Sub", "Mul", "Div",
                      "Neg", "Identity", "Equal", "Less", "Greater", "Where", "Min", "Max", "Abs", "Mod", "Reshape",
                      "Floor", "Ceil", "Not", "And", "Or", "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax"});
    for (ValueId o : n.outputs) {
      if (o == kNoValue) continue;
      const DType t = graph.value(o).dtype;
      if (!arithmetic || !(t == DType::I64 || t == DType::I32 || t == DType::BOOL))
        return Status::unsupported("node '" + n.name + "' (" + n.op + ") uses a size that may be the batch size as data");
    }
    const std::vector<bool>* first = taint.count(n.inputs[0]) ? &taint[n.inputs[0]] : nullptr;
    std::vector<bool> elems = {any_of_inputs(n)};
    if ((n.op == "Gather" || n.op == "Slice") && first) {  // constant picks from a tainted vector
      elems.clear();
      const Tensor* idx = n.inputs.size() > 1 ? graph.constant(n.inputs[1]) : nullptr;
      const auto sz = static_cast<int64_t>(first->size());
      if (n.op == "Gather" && idx) {
        for (int64_t k : idx->to_i64())
          if (k >= -sz && k < sz) elems.push_back((*first)[k < 0 ? k + sz : k]);
      } else if (n.op == "Slice" && idx && graph.constant(n.inputs[2])) {
        auto r = slice_ranges(std::vector<int64_t>{sz}, idx->to_i64(), graph.constant(n.inputs[2])->to_i64(),
                              ints_of(graph, n, 3), ints_of(graph, n, 4));
        if (r.ok())
          for (int64_t k = 0, at = (*r)[0].start; k < (*r)[0].count; ++k, at += (*r)[0].step) elems.push_back((*first)[at]);
      }
      if (elems.empty()) elems = {any_of_inputs(n)};
    } else if (n.op == "Concat") {  // of 1-D vectors: the elements side by side
      elems.clear();
      for (ValueId v : n.inputs) {
        auto it = taint.find(v);
        auto len = concrete(graph.value(v).shape);
        if (it != taint.end()) {
          elems.insert(elems.end(), it->second.begin(), it->second.end());
        } else if (len && len->size() == 1) {
          elems.insert(elems.end(), static_cast<size_t>((*len)[0]), false);
        } else {
          elems = {true};
          break;
        }
      }
    } else if (one_of(n.op, {"Unsqueeze", "Squeeze", "Cast", "Identity", "Reshape"}) && first) {
      elems = *first;
    }
    for (ValueId o : n.outputs)
      if (o != kNoValue) taint[o] = elems;
  }
  for (ValueId v : graph.outputs())
    if (tainted(v)) return Status::unsupported("graph output '" + graph.value(v).name + "' may hold the batch size");
  return Status();
}

}  // namespace hpf::ir
