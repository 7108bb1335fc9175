#include "hpf/graph.hpp"

#include <algorithm>

namespace hpf {

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    const Dim& d = shape[i];
    s += d.known() ? std::to_string(d.value) : d.symbol.empty() ? "?" : d.symbol;
  }
  return s + "]";
}

std::optional<std::vector<int64_t>> concrete(const Shape& shape) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const Dim& d : shape) {
    if (!d.known()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

Shape make_shape(std::span<const int64_t> sizes) { return Shape(sizes.begin(), sizes.end()); }

const char* attr_type_name(const AttrValue& v) {
  static const char* names[] = {"int", "float", "string", "ints", "floats", "strings", "tensor", "graph"};
  return names[v.index()];
}

Status Graph::check_new_value_name(const std::string& name) const {
  if (name.empty()) return Status::invalid("graph '" + name_ + "': empty value name");
  if (value_by_name_.count(name))
    return Status::invalid("graph '" + name_ + "': value name '" + name + "' is already used");
  return {};
}

ValueId Graph::new_value(std::string name) {
  auto id = static_cast<ValueId>(values_.size());
  value_by_name_[name] = id;
  Value v;
  v.name = std::move(name);
  values_.push_back(std::move(v));
  return id;
}

Expected<ValueId> Graph::add_input(std::string name, DType dtype, Shape shape) {
  HPF_RETURN_IF_ERROR(check_new_value_name(name));
  for (const Dim& d : shape)
    if (!d.known() && d.value != -1)
      return Status::invalid("input '" + name + "': bad dimension " + std::to_string(d.value));
  ValueId id = new_value(std::move(name));
  values_[id].dtype = dtype;
  values_[id].shape = std::move(shape);
  values_[id].has_shape = true;
  inputs_.push_back(id);
  return id;
}

Expected<ValueId> Graph::add_initializer(std::string name, Tensor t) {
  HPF_RETURN_IF_ERROR(check_new_value_name(name));
  ValueId id = new_value(std::move(name));
  set_constant(id, std::move(t));
  return id;
}

Expected<ValueId> Graph::add_initializer(std::string name, std::shared_ptr<const Tensor> t) {
  if (!t) return Status::invalid("graph '" + name_ + "': initializer '" + name + "' has no tensor");
  HPF_ASSIGN_OR_RETURN(ValueId id, add_initializer(std::move(name), Tensor()));
  Value& v = values_[id];
  v.dtype = t->dtype();
  v.shape = make_shape(t->shape());
  v.constant = std::move(t);
  return id;
}

void Graph::set_constant(ValueId id, Tensor t) {
  Value& v = values_.at(id);
  v.dtype = t.dtype();
  v.shape = make_shape(t.shape());
  v.has_shape = true;
  v.producer = -1;
  v.constant = std::make_shared<const Tensor>(std::move(t));
}

Expected<int32_t> Graph::add_node(std::string op, std::string name, std::vector<ValueId> inputs,
                                  std::vector<std::string> output_names, Attributes attrs) {
  auto id = static_cast<int32_t>(nodes_.size());
  if (name.empty()) name = op + "_" + std::to_string(id);
  if (find_node(name)) {
    return Status::invalid("graph '" + name_ + "': node name '" + name + "' is already used");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId v = inputs[i];
    if (v != kNoValue && (v < 0 || v >= static_cast<ValueId>(values_.size())))
      return Status::invalid("node '" + name + "' (" + op + "): input " + std::to_string(i) +
                             " refers to value id " + std::to_string(v) + " which does not exist");
  }
  for (size_t k = 0; k < output_names.size(); ++k) {
    const std::string& o = output_names[k];
    Status s = check_new_value_name(o);
    if (s.ok() && std::find(output_names.begin(), output_names.begin() + k, o) != output_names.begin() + k)
      s = Status::invalid("graph '" + name_ + "': value name '" + o + "' is already used");
    if (!s.ok()) return s.with_context("node '" + name + "' (" + op + ") output");
  }
  Node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (std::string& o : output_names) {
    ValueId v = new_value(std::move(o));
    values_[v].producer = id;
    n.outputs.push_back(v);
  }
  nodes_.push_back(std::move(n));
  return id;
}

Status Graph::add_output(ValueId v) {
  if (v < 0 || v >= static_cast<ValueId>(values_.size()))
    return Status::invalid("graph '" + name_ + "': output refers to value id " +
                           std::to_string(v) + " which does not exist");
  outputs_.push_back(v);
  return {};
}

Status Graph::rename_value(ValueId v, std::string name) {
  if (values_.at(v).name == name) return {};
  HPF_RETURN_IF_ERROR(check_new_value_name(name));
  value_by_name_.erase(values_[v].name);
  value_by_name_[name] = v;
  values_[v].name = std::move(name);
  return {};
}

std::optional<ValueId> Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  if (it == value_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> Graph::find_node(const std::string& name) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return static_cast<int32_t>(i);
  return std::nullopt;
}

size_t Graph::weight_bytes() const {
  size_t n = 0;
  for (const Value& v : values_)
    if (v.constant) n += v.constant->nbytes();
  return n;
}

void Graph::rebuild_producers() {
  for (Value& v : values_) v.producer = -1;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (ValueId o : nodes_[i].outputs) values_[o].producer = static_cast<int32_t>(i);
  // Constants have no producer even if a node used to compute them.
  for (Value& v : values_)
    if (v.constant) v.producer = -1;
}

// ---- GraphBuilder ---------------------------------------------------------------------------

std::string GraphBuilder::fresh_name(const std::string& base) {
  std::string n;
  do {
    n = base + "_" + std::to_string(counter_++);
  } while (g_.find_value(n) || g_.find_node(n));
  return n;
}

ValueId GraphBuilder::input(std::string name, DType dtype, Shape shape) {
  if (!status_.ok()) return kNoValue;
  auto r = g_.add_input(std::move(name), dtype, std::move(shape));
  if (!r.ok()) status_ = r.status();
  return r.ok() ? *r : kNoValue;
}

ValueId GraphBuilder::constant(std::string name, Tensor value) {
  if (!status_.ok()) return kNoValue;
  auto r = g_.add_initializer(std::move(name), std::move(value));
  if (!r.ok()) status_ = r.status();
  return r.ok() ? *r : kNoValue;
}

ValueId GraphBuilder::constant(Tensor value) { return constant(fresh_name("const"), std::move(value)); }

ValueId GraphBuilder::constant_i64(std::vector<int64_t> values) {
  auto n = static_cast<int64_t>(values.size());
  return constant(std::move(Tensor::from_i64({n}, values)).value());
}

ValueId GraphBuilder::scalar(float v) { return constant(Tensor::scalar_f32(v)); }

std::vector<ValueId> GraphBuilder::op(const std::string& op_type, std::vector<ValueId> inputs,
                                      Attributes attrs, int num_outputs, std::string name) {
  std::vector<ValueId> none(num_outputs, kNoValue);
  if (!status_.ok()) return none;
  if (name.empty()) name = fresh_name(op_type);
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i)
    outs.push_back(num_outputs == 1 ? name + ":out" : name + ":out" + std::to_string(i));
  auto r = g_.add_node(op_type, name, std::move(inputs), std::move(outs), std::move(attrs));
  if (!r.ok()) {
    status_ = r.status();
    return none;
  }
  return g_.node(*r).outputs;
}

ValueId GraphBuilder::op1(const std::string& op_type, std::vector<ValueId> inputs, Attributes attrs,
                          std::string name) {
  return op(op_type, std::move(inputs), std::move(attrs), 1, std::move(name))[0];
}

void GraphBuilder::output(ValueId v, std::string rename) {
  if (!status_.ok()) return;
  if (v == kNoValue) {
    status_ = Status::invalid("GraphBuilder::output: no value given");
    return;
  }
  if (!rename.empty()) {
    Status s = g_.rename_value(v, std::move(rename));
    if (!s.ok()) {
      status_ = s;
      return;
    }
  }
  status_ = g_.add_output(v);
}

Expected<Graph> GraphBuilder::build() {
  if (!status_.ok()) return status_;
  HPF_RETURN_IF_ERROR(g_.validate());
  HPF_RETURN_IF_ERROR(g_.infer_shapes());
  return g_;
}

}  // namespace hpf
