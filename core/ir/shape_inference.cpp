// Graph::infer_shapes and the context shape functions run in.
#include <variant>

#include "core/ir/op_table.hpp"

namespace hpf {
namespace ir {

InferContext::InferContext(const Graph& g, const Node& n) : graph_(g), node_(n) {
  outputs.resize(n.outputs.size());
}

const Tensor* InferContext::const_input(size_t i) const {
  return has_input(i) ? graph_.constant(node_.inputs[i]) : nullptr;
}

const Shape* InferContext::shape(size_t i) const {
  if (!has_input(i)) return nullptr;
  const Value& v = input(i);
  return v.has_shape ? &v.shape : nullptr;
}

namespace {
template <typename T>
T get_attr(const InferContext& c, const std::string& name) {
  const OpDef* def = find_op(c.node().op);
  auto v = attr_or_default(c.node(), *def, name);
  if (!v) return T{};
  if constexpr (std::is_same_v<T, float>) {
    if (auto* i = std::get_if<int64_t>(&*v)) return static_cast<float>(*i);
  }
  if (auto* t = std::get_if<T>(&*v)) return *t;
  return T{};
}
}  // namespace

int64_t InferContext::attr_int(const std::string& n) const { return get_attr<int64_t>(*this, n); }
float InferContext::attr_float(const std::string& n) const { return get_attr<float>(*this, n); }
std::string InferContext::attr_string(const std::string& n) const {
  return get_attr<std::string>(*this, n);
}
std::vector<int64_t> InferContext::attr_ints(const std::string& n) const {
  return get_attr<std::vector<int64_t>>(*this, n);
}
std::vector<float> InferContext::attr_floats(const std::string& n) const {
  return get_attr<std::vector<float>>(*this, n);
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  outputs.at(i) = {dtype, std::move(shape), true};
}
void InferContext::set_output_unknown_shape(size_t i, DType dtype) {
  outputs.at(i) = {dtype, {}, false};
}

Status InferContext::error(const std::string& message) const {
  return Status::invalid("node '" + node_.name + "' (" + node_.op + "): " + message);
}

std::optional<AttrValue> attr_or_default(const Node& node, const OpDef& def,
                                         const std::string& name) {
  auto it = node.attrs.find(name);
  if (it != node.attrs.end()) return it->second;
  if (const AttrDef* a = def.attr(name)) return a->default_value;
  return std::nullopt;
}

Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (*da == *db) { out[i] = *da; continue; }
    if (da->known() && da->value == 1) { out[i] = *db; continue; }
    if (db->known() && db->value == 1) { out[i] = *da; continue; }
    if (da->known() && db->known())
      return Status::invalid("shapes " + to_string(a) + " and " + to_string(b) +
                             " cannot be broadcast");
    // One symbolic, one known > 1 (or two different symbols): the result is the known size,
    // or an unknown dimension when both are symbolic.
    out[i] = da->known() ? *da : db->known() ? *db : Dim();
  }
  return out;
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ir

Status Graph::infer_shapes() {
  HPF_ASSIGN_OR_RETURN(auto order, topological_order());
  for (int32_t id : order) {
    const Node& n = nodes_[id];
    const ir::OpDef* def = ir::find_op(n.op);
    if (!def) return Status::unsupported("node '" + n.name + "': unknown op '" + n.op + "'");
    // Shape functions index inputs and outputs by the op's arity: check it first (an imported
    // graph is inferred before it is validated).
    const auto ni = static_cast<int>(n.inputs.size()), no = static_cast<int>(n.outputs.size());
    if (ni < def->min_inputs || ni > def->max_inputs || no < def->min_outputs || no > def->max_outputs)
      return Status::invalid("node '" + n.name + "' (" + n.op + "): has " + std::to_string(ni) + " inputs and " +
                             std::to_string(no) + " outputs; the op takes " + std::to_string(def->min_inputs) +
                             "-" + std::to_string(def->max_inputs) + " inputs and " +
                             std::to_string(def->min_outputs) + "-" + std::to_string(def->max_outputs) + " outputs");
    for (int i = 0; i < def->min_inputs; ++i)
      if (n.inputs[i] == kNoValue)
        return Status::invalid("node '" + n.name + "' (" + n.op + "): required input " + std::to_string(i) +
                               " is missing");
    ir::InferContext ctx(*this, n);
    Status s;
    try {
      s = def->infer(ctx);
    } catch (const std::exception& e) {  // a shape function's bug must not take the process down
      s = Status::internal("node '" + n.name + "' (" + n.op + "): shape inference failed: " + e.what());
    }
    if (!s.ok()) {
      std::string shapes;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (i) shapes += ", ";
        if (n.inputs[i] == kNoValue) {
          shapes += "<none>";
          continue;
        }
        const Value& v = values_[n.inputs[i]];
        shapes += "'" + v.name + "' " + std::string(dtype_name(v.dtype)) +
                  (v.has_shape ? to_string(v.shape) : "[?]");
      }
      return Status(s.code(), s.message() + " (inputs: " + shapes + ")");
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Value& v = values_[n.outputs[i]];
      if (v.constant) continue;
      v.dtype = ctx.outputs[i].dtype;
      v.shape = ctx.outputs[i].shape;
      v.has_shape = ctx.outputs[i].has_shape;
    }
  }
  return {};
}

}  // namespace hpf
