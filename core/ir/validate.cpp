// Graph::validate: structural and per-op checks with errors that name the node, op and the
// offending input or attribute.
#include <variant>

#include "core/ir/op_table.hpp"

namespace hpf {
namespace {

std::string where(const Node& n) { return "node '" + n.name + "' (" + n.op + ")"; }

// A node's subgraphs are valid graphs themselves, and its trailing captured inputs exist.
Status validate_subgraphs(const Node& n) {
  for (const auto& [name, value] : n.attrs)
    if (const GraphAttr* g = std::get_if<GraphAttr>(&value))
      HPF_RETURN_IF_ERROR((*g)->validate().with_context(where(n) + ": subgraph '" + name + "'"));
  auto it = n.attrs.find("num_captures");
  if (it == n.attrs.end()) return {};
  const int64_t* k = std::get_if<int64_t>(&it->second);
  if (k && (*k < 0 || *k > static_cast<int64_t>(n.inputs.size())))
    return Status::invalid(where(n) + ": num_captures is " + std::to_string(*k) + " but the node has " +
                           std::to_string(n.inputs.size()) + " inputs");
  return {};
}

}  // namespace

Status Graph::validate() const {
  const auto nv = static_cast<ValueId>(values_.size());
  std::vector<int> produced(values_.size(), 0);
  for (ValueId v : inputs_) ++produced[v];
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].constant) ++produced[v];

  for (const Node& n : nodes_) {
    const ir::OpDef* def = ir::find_op(n.op);
    if (!def) return Status::unsupported(where(n) + ": unknown op '" + n.op + "'");
    const auto ni = static_cast<int>(n.inputs.size());
    const auto no = static_cast<int>(n.outputs.size());
    if (ni < def->min_inputs || ni > def->max_inputs)
      return Status::invalid(where(n) + ": has " + std::to_string(ni) + " inputs, expected " +
                             (def->min_inputs == def->max_inputs
                                  ? std::to_string(def->min_inputs)
                                  : std::to_string(def->min_inputs) + " to " +
                                        std::to_string(def->max_inputs)));
    if (no < def->min_outputs || no > def->max_outputs)
      return Status::invalid(where(n) + ": has " + std::to_string(no) + " outputs, expected " +
                             std::to_string(def->min_outputs) + " to " +
                             std::to_string(def->max_outputs));
    for (int i = 0; i < ni; ++i) {
      ValueId v = n.inputs[i];
      if (v == kNoValue) {
        if (i < def->min_inputs)
          return Status::invalid(where(n) + ": required input " + std::to_string(i) + " is missing");
        continue;
      }
      if (v < 0 || v >= nv)
        return Status::invalid(where(n) + ": input " + std::to_string(i) + " refers to value id " +
                               std::to_string(v) + " which does not exist");
    }
    for (ValueId o : n.outputs) {
      if (o < 0 || o >= nv)
        return Status::invalid(where(n) + ": output refers to value id " + std::to_string(o) +
                               " which does not exist");
      ++produced[o];
    }
    for (const auto& [name, value] : n.attrs) {
      const ir::AttrDef* ad = def->attr(name);
      if (!ad) return Status::invalid(where(n) + ": unknown attribute '" + name + "'");
      if (!ir::attr_matches(value, ad->type))
        return Status::invalid(where(n) + ": attribute '" + name + "' is " +
                               attr_type_name(value) + ", expected " + ir::attr_type_name(ad->type));
    }
    for (const ir::AttrDef& ad : def->attrs)
      if (ad.required && !n.attrs.count(ad.name))
        return Status::invalid(where(n) + ": required attribute '" + ad.name + "' is missing");
    HPF_RETURN_IF_ERROR(validate_subgraphs(n));
  }
  for (size_t v = 0; v < values_.size(); ++v) {
    if (produced[v] > 1)
      return Status::invalid("graph '" + name_ + "': value '" + values_[v].name +
                             "' is produced more than once");
  }
  for (const Node& n : nodes_)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueId v = n.inputs[i];
      if (v != kNoValue && produced[v] == 0)
        return Status::invalid(where(n) + ": input " + std::to_string(i) + " '" + values_[v].name +
                               "' is neither a graph input, an initializer nor a node output");
    }
  for (ValueId v : outputs_)
    if (v < 0 || v >= nv || produced[v] == 0)
      return Status::invalid("graph '" + name_ + "': output " +
                             (v >= 0 && v < nv ? "'" + values_[v].name + "'" : std::to_string(v)) +
                             " is never produced");
  if (outputs_.empty()) return Status::invalid("graph '" + name_ + "' has no outputs");
  auto order = topological_order();
  if (!order.ok()) return order.status();
  return {};
}

}  // namespace hpf
