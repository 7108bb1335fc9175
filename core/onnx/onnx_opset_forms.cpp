// Older ONNX op forms rewritten into the op table's forms (see onnx_opset_forms.hpp). Sources:
// ONNX's Changelog.md (what each version changed), its version converter adapters, and ONNX
// Runtime where ONNX left behaviour open (Resize-10's nearest rounding).
#include "core/onnx/onnx_opset_forms.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/ir/op_table.hpp"

namespace hpf::onnx_forms {
namespace {

std::string opset_text(int64_t opset) { return "opset " + std::to_string(opset); }

int64_t int_attr(const Attributes& a, const std::string& name, int64_t fallback) {
  auto it = a.find(name);
  if (it == a.end()) return fallback;
  auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : fallback;
}

// Whether the node has inputs 0..n-1 (malformed nodes are left to the graph's validation).
bool has_inputs(const NodeDraft& d, size_t n) {
  if (d.inputs.size() < n) return false;
  return std::none_of(d.inputs.begin(), d.inputs.begin() + static_cast<std::ptrdiff_t>(n),
                      [](ValueId v) { return v == kNoValue; });
}

// A helper initializer named after the node.
Expected<ValueId> add_constant(FormContext& c, const NodeDraft& d, const std::string& what, Tensor t) {
  return c.graph.add_initializer(d.name + "/" + what, std::move(t));
}

// A helper node named after the node; returns its (single) output.
Expected<ValueId> add_helper(FormContext& c, const NodeDraft& d, const std::string& op, const std::string& what,
                             std::vector<ValueId> inputs, Attributes attrs = {}) {
  HPF_ASSIGN_OR_RETURN(int32_t id, c.graph.add_node(op, c.unique_name(d.name + "/" + what), std::move(inputs),
                                                    {d.name + "/" + what}, std::move(attrs)));
  return c.graph.node(id).outputs[0];
}

// Shapes (and dtypes) of everything added so far, for translations that depend on them.
Status infer(FormContext& c, const NodeDraft& d) { return c.graph.infer_shapes().with_context(d.where); }

Status unsupported_form(const NodeDraft& d, int64_t opset, const std::string& what) {
  return Status::unsupported(d.where + ": " + d.op_type + " at " + opset_text(opset) + ": " + what +
                             " is not supported");
}

// ---- Forms before opset 7 --------------------------------------------------------------------

// Ops whose form changed between opsets 2 and 7 and that have no translation here, with the
// opset their opset-7 form dates from (the trigonometric ops did not exist before 7).
const std::map<std::string, int64_t>& untranslated_before_7() {
  static const std::map<std::string, int64_t> m = {
      {"Tile", 6},  {"GRU", 7}, {"LSTM", 7}, {"RNN", 7}, {"Upsample", 7}, {"Acos", 7},
      {"Asin", 7},  {"Atan", 7}, {"Cos", 7}, {"Sin", 7}, {"Tan", 7},
  };
  return m;
}

const std::set<std::string>& legacy_broadcast_ops() {
  static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow", "And",
                                          "Or",  "Xor", "Equal", "Greater", "Less"};
  return s;
}

// Before opset 7 the binary ops broadcast only when broadcast=1: B's shape matched a suffix of
// A's, or, with `axis`, A's dimensions from axis on. The suffix case is numpy broadcasting; the
// axis case becomes it once B gets trailing 1s.
Status legacy_broadcast(FormContext& c, NodeDraft& d) {
  const int64_t broadcast = int_attr(d.attrs, "broadcast", 0);
  const bool has_axis = d.attrs.count("axis") > 0;
  const int64_t axis = int_attr(d.attrs, "axis", 0);
  d.attrs.erase("broadcast");
  d.attrs.erase("axis");
  if (broadcast == 0 || !has_axis || d.inputs.size() != 2 || !has_inputs(d, 2)) return {};  // equal shapes, or a suffix
  HPF_RETURN_IF_ERROR(infer(c, d));
  const Value& a = c.graph.value(d.inputs[0]);
  const Value& b = c.graph.value(d.inputs[1]);
  if (!a.has_shape || !b.has_shape)
    return unsupported_form(d, c.opset, "broadcast=1 with axis on inputs of unknown rank");
  const int64_t ra = static_cast<int64_t>(a.shape.size()), rb = static_cast<int64_t>(b.shape.size());
  const int64_t start = axis < 0 ? axis + ra : axis;
  if (start < 0 || start + rb > ra)
    return Status::invalid(d.where + ": axis " + std::to_string(axis) + " does not place B (rank " + std::to_string(rb) +
                           ") inside A (rank " + std::to_string(ra) + ")");
  if (start + rb == ra) return {};
  std::vector<int64_t> trailing;
  for (int64_t k = rb; k < ra - start; ++k) trailing.push_back(k);
  HPF_ASSIGN_OR_RETURN(d.inputs[1], add_helper(c, d, "Unsqueeze", "legacy_broadcast", {d.inputs[1]},
                                               {{"axes", trailing}}));
  return {};
}

// BatchNormalization and Dropout before opset 7 ran in training mode unless is_test was set.
Status require_test_mode(const NodeDraft& d, Attributes& attrs, int64_t opset) {
  const int64_t is_test = int_attr(attrs, "is_test", 0);
  attrs.erase("is_test");
  if (is_test == 0) return unsupported_form(d, opset, "is_test=0 (training mode, the default before opset 7)");
  return {};
}

// PRelu before opset 7 took a slope per channel (shape [C]) rather than a numpy-broadcast one.
Status prelu_per_channel(FormContext& c, NodeDraft& d) {
  if (d.inputs.size() != 2 || !has_inputs(d, 2)) return {};
  HPF_RETURN_IF_ERROR(infer(c, d));
  const Value& x = c.graph.value(d.inputs[0]);
  const Value& slope = c.graph.value(d.inputs[1]);
  if (!x.has_shape || !slope.has_shape) return unsupported_form(d, c.opset, "a slope or input of unknown rank");
  const int64_t rx = static_cast<int64_t>(x.shape.size());
  if (slope.shape.size() != 1 || rx < 3 || slope.shape[0] == Dim(1)) return {};
  std::vector<int64_t> axes;
  for (int64_t k = 1; k < rx - 1; ++k) axes.push_back(k);
  HPF_ASSIGN_OR_RETURN(d.inputs[1], add_helper(c, d, "Unsqueeze", "slope_per_channel", {d.inputs[1]}, {{"axes", axes}}));
  return {};
}

// Cast before opset 6 named the target type as a string ("FLOAT").
Status cast_to_name(const NodeDraft& d, Attributes& attrs, int64_t opset) {
  auto it = attrs.find("to");
  if (it == attrs.end()) return {};
  auto* s = std::get_if<std::string>(&it->second);
  if (!s) return {};
  static const std::map<std::string, int64_t> codes = {
      {"FLOAT", 1},  {"UINT8", 2},  {"INT8", 3},    {"UINT16", 4},   {"INT16", 5},  {"INT32", 6},  {"INT64", 7},
      {"STRING", 8}, {"BOOL", 9},   {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
  auto code = codes.find(*s);
  if (code == codes.end()) return unsupported_form(d, opset, "attribute 'to' = '" + *s + "'");
  it->second = code->second;
  return {};
}

// Reshape before opset 5 took the shape as an attribute.
Status reshape_shape_attribute(FormContext& c, NodeDraft& d) {
  auto it = d.attrs.find("shape");
  if (it == d.attrs.end()) return {};
  auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  if (!v) return Status::invalid(d.where + ": attribute 'shape' must be ints");
  HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_i64({static_cast<int64_t>(v->size())}, *v));
  d.attrs.erase(it);
  HPF_ASSIGN_OR_RETURN(ValueId shape, add_constant(c, d, "shape", std::move(t)));
  d.inputs.resize(1);
  d.inputs.push_back(shape);
  return {};
}

Status translate_before_7(FormContext& c, NodeDraft& d) {
  if (auto it = untranslated_before_7().find(d.op_type); it != untranslated_before_7().end() && c.opset < it->second)
    return Status::unsupported(d.where + ": " + d.op_type + " at " + opset_text(c.opset) +
                               " is not supported (libhpf reads its form of opset " + std::to_string(it->second) +
                               " and later)");
  d.attrs.erase("consumed_inputs");  // an optimisation hint of opset 1, without meaning for results
  if (legacy_broadcast_ops().count(d.op)) return legacy_broadcast(c, d);
  if (d.op == "Gemm") {
    d.attrs.erase("broadcast");  // C broadcast to (M, N) or was (M, N): Gemm-7 reads both
    return {};
  }
  if (d.op == "BatchNormalization" || d.op == "Dropout") return require_test_mode(d, d.attrs, c.opset);
  if (d.op == "PRelu") return prelu_per_channel(c, d);
  if (d.op == "Cast") return cast_to_name(d, d.attrs, c.opset);
  if (d.op == "Concat" && !d.attrs.count("axis")) d.attrs["axis"] = int64_t{1};  // optional before opset 4
  if (d.op == "Reshape") return reshape_shape_attribute(c, d);
  if (d.op == "Pad")
    if (auto it = d.attrs.find("paddings"); it != d.attrs.end()) {  // renamed pads in opset 2
      d.attrs["pads"] = it->second;
      d.attrs.erase("paddings");
    }
  return {};
}

// ---- Forms from opset 7 ----------------------------------------------------------------------

// Resize-10 took (X, scales) and knew neither roi, sizes nor coordinate modes: coordinates were
// asymmetric (x_in = x_out / scale). Nearest rounded down when enlarging and up when shrinking a
// dimension: ONNX's opset-10 backend test (scales 0.6 pick columns 0 and 2) and ONNX Runtime's
// opset-10 Resize both do so. A dimension either grows or shrinks, so mixed scales run as two
// Resizes, the growing dimensions (floor) first, then the shrinking ones (ceil); nearest picks
// each dimension independently, so the result is the same.
Status resize_10(FormContext& c, NodeDraft& d) {
  for (const auto& [k, v] : d.attrs)
    if (k != "mode") return Status::unsupported(d.where + ": attribute '" + k + "' (" + opset_text(c.opset) + ") is not supported");
  if (d.inputs.size() != 2 || !has_inputs(d, 2))
    return Status::invalid(d.where + ": Resize at " + opset_text(c.opset) + " takes X and scales");
  std::string mode = "nearest";
  if (auto it = d.attrs.find("mode"); it != d.attrs.end())
    if (auto* s = std::get_if<std::string>(&it->second)) mode = *s;
  const ValueId x = d.inputs[0], scales = d.inputs[1];
  auto attrs = [&](const char* nearest) {
    Attributes a{{"mode", mode}, {"coordinate_transformation_mode", std::string("asymmetric")}};
    if (mode == "nearest") a["nearest_mode"] = std::string(nearest);
    return a;
  };
  d.inputs = {x, kNoValue, scales};
  d.attrs = attrs("floor");
  if (mode != "nearest") return {};

  ValueId up = kNoValue, down = kNoValue;
  if (const Tensor* st = c.graph.constant(scales)) {
    const std::vector<float> s = st->to_f32();
    std::vector<float> su(s), sd(s);
    bool grows = false, shrinks = false;
    for (size_t k = 0; k < s.size(); ++k) {
      grows |= s[k] > 1.0f;
      shrinks |= s[k] < 1.0f;
      (s[k] < 1.0f ? su : sd)[k] = 1.0f;
    }
    if (!shrinks) return {};
    if (!grows) {
      d.attrs = attrs("ceil");
      return {};
    }
    HPF_ASSIGN_OR_RETURN(Tensor tu, Tensor::from_f32({static_cast<int64_t>(su.size())}, su));
    HPF_ASSIGN_OR_RETURN(Tensor td, Tensor::from_f32({static_cast<int64_t>(sd.size())}, sd));
    HPF_ASSIGN_OR_RETURN(up, add_constant(c, d, "scales_up", std::move(tu)));
    HPF_ASSIGN_OR_RETURN(down, add_constant(c, d, "scales_down", std::move(td)));
  } else {  // scales known at run time: split them there
    HPF_ASSIGN_OR_RETURN(ValueId one, add_constant(c, d, "one", Tensor::scalar_f32(1.0f)));
    HPF_ASSIGN_OR_RETURN(ValueId shrinking, add_helper(c, d, "Less", "shrinking", {scales, one}));
    HPF_ASSIGN_OR_RETURN(up, add_helper(c, d, "Where", "scales_up", {shrinking, one, scales}));
    HPF_ASSIGN_OR_RETURN(down, add_helper(c, d, "Where", "scales_down", {shrinking, scales, one}));
  }
  HPF_ASSIGN_OR_RETURN(ValueId grown, add_helper(c, d, "Resize", "grown", {x, kNoValue, up}, attrs("floor")));
  d.inputs = {grown, kNoValue, down};
  d.attrs = attrs("ceil");
  return {};
}

// BatchNormalization before opset 9 had `spatial` (default 1, the later behaviour). spatial=0
// normalised per activation: scale, B, mean and var have shape (C, D1, ..., Dn), which
// broadcasts against X (N, C, D1, ..., Dn), so it is written out elementwise.
Status batch_norm_spatial(FormContext& c, NodeDraft& d) {
  auto it = d.attrs.find("spatial");
  if (it == d.attrs.end()) return {};
  const int64_t spatial = int_attr(d.attrs, "spatial", 1);
  d.attrs.erase(it);
  if (spatial != 0) return {};
  if (!has_inputs(d, 5)) return {};  // left to validation
  if (d.outputs.size() != 1)
    return unsupported_form(d, c.opset, "spatial=0 with training outputs");
  HPF_RETURN_IF_ERROR(infer(c, d));
  const Value& x = c.graph.value(d.inputs[0]);
  if (!x.has_shape) return unsupported_form(d, c.opset, "spatial=0 on an input of unknown rank");
  for (size_t k = 1; k < 5; ++k) {
    const Value& p = c.graph.value(d.inputs[k]);
    if (!p.has_shape || p.shape.size() + 1 != x.shape.size())
      return Status::invalid(d.where + ": spatial=0 needs inputs 1-4 of shape (C, D1, ..., Dn) for X " +
                             to_string(x.shape) + ", input " + std::to_string(k) + " is " +
                             (p.has_shape ? to_string(p.shape) : std::string("of unknown shape")));
  }
  float epsilon = 1e-5f;
  if (auto e = d.attrs.find("epsilon"); e != d.attrs.end())
    if (auto* f = std::get_if<float>(&e->second)) epsilon = *f;
  // y = (x - mean) * (scale / sqrt(var + epsilon)) + B
  HPF_ASSIGN_OR_RETURN(ValueId eps, add_constant(c, d, "epsilon", Tensor::scalar_f32(epsilon)));
  HPF_ASSIGN_OR_RETURN(ValueId var_eps, add_helper(c, d, "Add", "var_eps", {d.inputs[4], eps}));
  HPF_ASSIGN_OR_RETURN(ValueId stddev, add_helper(c, d, "Sqrt", "stddev", {var_eps}));
  HPF_ASSIGN_OR_RETURN(ValueId gain, add_helper(c, d, "Div", "gain", {d.inputs[1], stddev}));
  HPF_ASSIGN_OR_RETURN(ValueId centred, add_helper(c, d, "Sub", "centred", {d.inputs[0], d.inputs[3]}));
  HPF_ASSIGN_OR_RETURN(ValueId scaled, add_helper(c, d, "Mul", "scaled", {centred, gain}));
  d.op = "Add";
  d.inputs = {scaled, d.inputs[2]};
  d.attrs.clear();
  return {};
}

// Dropout before opset 10 gave its mask in the input's type (later: bool). The node is added
// here with a bool mask, then cast.
Status dropout_typed_mask(FormContext& c, NodeDraft& d, bool& added) {
  if (!has_inputs(d, 1)) return {};
  HPF_RETURN_IF_ERROR(infer(c, d));
  const DType t = c.graph.value(d.inputs[0]).dtype;
  const std::string mask = d.outputs[1];
  d.outputs[1] = d.name + "/mask_bool";
  HPF_ASSIGN_OR_RETURN(int32_t id, c.graph.add_node(d.op, d.name, d.inputs, d.outputs, d.attrs));
  const ValueId mask_bool = c.graph.node(id).outputs[1];
  HPF_RETURN_IF_ERROR(c.graph
                          .add_node("Cast", c.unique_name(d.name + "/mask"), {mask_bool}, {mask},
                                    {{"to", ir::dtype_to_onnx(t)}})
                          .status());
  added = true;
  return {};
}

}  // namespace

Status check_opset(int64_t opset) {
  if (opset < 1) return Status::invalid("default-domain (ai.onnx) opset " + std::to_string(opset) + " is not valid");
  if (opset > kMaxOpset)
    return Status::unsupported("default-domain (ai.onnx) opset " + std::to_string(opset) +
                               " is not supported (libhpf reads opsets up to " + std::to_string(kMaxOpset) + ")");
  return {};
}

bool is_older_form_attribute(const std::string& op_type, int64_t opset, const std::string& attr) {
  if (opset < kFullOpset) {
    if (attr == "consumed_inputs") return true;
    if (legacy_broadcast_ops().count(op_type) && (attr == "broadcast" || attr == "axis")) return true;
    if (op_type == "Gemm" && attr == "broadcast") return true;
    if ((op_type == "BatchNormalization" || op_type == "Dropout") && attr == "is_test") return true;
    if (op_type == "Reshape" && attr == "shape") return true;
    if (op_type == "Pad" && attr == "paddings") return true;
    if (op_type == "Cast" && attr == "to") return true;  // a type name before opset 6
  }
  return op_type == "BatchNormalization" && opset < 9 && attr == "spatial";
}

Status translate(FormContext& c, NodeDraft& d, bool& added) {
  added = false;
  if (c.opset < kFullOpset) HPF_RETURN_IF_ERROR(translate_before_7(c, d));
  if (d.op == "Resize" && c.opset < 11) return resize_10(c, d);
  if (d.op == "BatchNormalization" && c.opset < 9) return batch_norm_spatial(c, d);
  if (d.op == "Dropout" && c.opset < 10 && d.outputs.size() > 1) return dropout_typed_mask(c, d, added);
  return {};
}

}  // namespace hpf::onnx_forms
