// The graph IR of libhpf and a builder for writing graphs in C++.
//
// A Graph is plain data: values (typed, shaped edges), nodes (ops with typed attributes) and
// initializers (weights). Values and nodes are addressed by dense integer ids; names are unique
// and kept as the model gave them. Copying a Graph is cheap for weights: initializers are shared,
// immutable Tensors. A Graph is not synchronised: mutate it from one thread; const access from
// many is fine.
//
// Shapes may be partly symbolic: a Dim is either a known size or a named symbol ("batch",
// "seq"). A Value whose shape is not known at all (e.g. produced by Reshape from a runtime shape)
// has has_shape == false.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hpf/dtype.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // set when value < 0 and the size has a name; empty: unknown, unnamed

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from a size, so {2, 3} is a Shape
  static Dim sym(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};
using Shape = std::vector<Dim>;

// "[batch,128,768]", unknown unnamed dims print as "?".
std::string to_string(const Shape& shape);
// Concrete sizes when every dimension is known.
std::optional<std::vector<int64_t>> concrete(const Shape& shape);
Shape make_shape(std::span<const int64_t> sizes);

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an absent optional input

class Graph;
// A graph-valued attribute: the branches of If, the body of Loop and Scan. Shared and immutable:
// copying a Node (or a Graph) shares the subgraph, and nothing mutates it once it is attached;
// a pass that wants a changed subgraph builds a new Graph and attaches that. The subgraph is
// self-contained: every value it uses from an enclosing graph arrives as one of its inputs
// (see the op table's "num_captures"), so it never refers to the enclosing graph's values.
// Two graph attributes compare equal when they hold the same Graph object.
using GraphAttr = std::shared_ptr<const Graph>;

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor, GraphAttr>;
using Attributes = std::map<std::string, AttrValue>;
// "int", "float", "string", "ints", "floats", "strings", "tensor", "graph".
const char* attr_type_name(const AttrValue& v);

struct Value {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  bool has_shape = false;
  int32_t producer = -1;                   // node id, -1 for graph inputs and initializers
  std::shared_ptr<const Tensor> constant;  // set for initializers (weights)
};

struct Node {
  std::string name;
  std::string op;
  std::vector<ValueId> inputs;  // kNoValue marks an absent optional input
  std::vector<ValueId> outputs;
  Attributes attrs;

  // An integer attribute used as a flag (transA, transB, ...): set and non-zero.
  bool flag(const std::string& attr) const {
    auto it = attrs.find(attr);
    const auto* v = it == attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
    return v && *v != 0;
  }
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  // Adding things. Names must be unique among values (and among nodes); an empty node name gets
  // "<op>_<id>". Errors: duplicate name, dangling value id.
  Expected<ValueId> add_input(std::string name, DType dtype, Shape shape);
  Expected<ValueId> add_initializer(std::string name, Tensor value);
  // The same sharing `value` (not null) with its other owners.
  Expected<ValueId> add_initializer(std::string name, std::shared_ptr<const Tensor> value);
  // Adds a node whose outputs are new values named `output_names` (dtype/shape filled by
  // infer_shapes). Returns the node id.
  Expected<int32_t> add_node(std::string op, std::string name, std::vector<ValueId> inputs,
                             std::vector<std::string> output_names, Attributes attrs = {});
  Status add_output(ValueId v);
  // Renames a value; the new name must be unused.
  Status rename_value(ValueId v, std::string name);

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const Value& value(ValueId id) const { return values_.at(id); }
  Value& value(ValueId id) { return values_.at(id); }
  const Node& node(int32_t id) const { return nodes_.at(id); }
  Node& node(int32_t id) { return nodes_.at(id); }
  std::optional<ValueId> find_value(const std::string& name) const;
  std::optional<int32_t> find_node(const std::string& name) const;
  const Tensor* constant(ValueId id) const {
    return id >= 0 && values_[id].constant ? values_[id].constant.get() : nullptr;
  }
  // Number of weight bytes held as initializers.
  size_t weight_bytes() const;

  // Structural and per-op checks: ids in range, each value produced once, no cycles, op known,
  // input/output counts, attribute names and types, required attributes present. The first
  // problem is returned, naming the node, the op and the offending input or attribute.
  Status validate() const;
  // Fills dtype and shape of every node output, in topological order, via the op table's shape
  // functions; errors name the node, op and input shapes.
  Status infer_shapes();
  // Node ids in an order where producers come first; error on a cycle.
  Expected<std::vector<int32_t>> topological_order() const;
  // Reorders nodes_ topologically (ids change).
  Status sort_topologically();
  // Removes nodes whose outputs reach no graph output, and values nothing uses any more
  // (graph inputs are kept). Returns how many nodes were removed.
  int remove_dead_nodes();

  // Low-level edits used by passes: turns value `id` into a constant (its producer is left
  // dangling until remove_dead_nodes runs).
  void set_constant(ValueId id, Tensor t);

 private:
  Status check_new_value_name(const std::string& name) const;
  ValueId new_value(std::string name);
  void rebuild_producers();

  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::map<std::string, ValueId> value_by_name_;
};

// Builds a Graph in C++. Every method records the first error and returns kNoValue-like handles
// afterwards; build() reports it, so a chain of calls needs one check at the end:
//
//   GraphBuilder b("mlp");
//   auto x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
//   auto w = b.constant("w", *Tensor::from_f32({16, 4}, weights));
//   auto y = b.relu(b.matmul(x, w));
//   b.output(y);
//   Expected<Graph> g = b.build();   // validated, shapes inferred
//
// Not thread-safe; one builder per thread.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "graph") : g_(std::move(graph_name)) {}

  ValueId input(std::string name, DType dtype, Shape shape);
  ValueId constant(std::string name, Tensor value);
  // A constant with a generated name.
  ValueId constant(Tensor value);
  ValueId constant_i64(std::vector<int64_t> values);  // 1-D I64, e.g. for shapes and axes
  ValueId scalar(float v);                            // F32 scalar

  // Any op of the op table with `num_outputs` outputs; returns the output ids.
  std::vector<ValueId> op(const std::string& op_type, std::vector<ValueId> inputs,
                          Attributes attrs = {}, int num_outputs = 1, std::string name = "");
  // Single-output form.
  ValueId op1(const std::string& op_type, std::vector<ValueId> inputs, Attributes attrs = {},
              std::string name = "");

  // Conveniences for common ops (ONNX semantics, attributes as in ONNX).
  ValueId add(ValueId a, ValueId b) { return op1("Add", {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op1("Sub", {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op1("Mul", {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op1("Div", {a, b}); }
  ValueId matmul(ValueId a, ValueId b) { return op1("MatMul", {a, b}); }
  ValueId relu(ValueId x) { return op1("Relu", {x}); }
  ValueId gelu(ValueId x) { return op1("Gelu", {x}); }
  ValueId tanh(ValueId x) { return op1("Tanh", {x}); }
  ValueId sigmoid(ValueId x) { return op1("Sigmoid", {x}); }
  ValueId softmax(ValueId x, int64_t axis = -1) { return op1("Softmax", {x}, {{"axis", axis}}); }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    return op1("Transpose", {x}, {{"perm", std::move(perm)}});
  }
  ValueId reshape(ValueId x, std::vector<int64_t> shape) {
    return op1("Reshape", {x, constant_i64(std::move(shape))});
  }
  ValueId layer_norm(ValueId x, ValueId scale, ValueId bias, float epsilon = 1e-5f,
                     int64_t axis = -1) {
    return op1("LayerNormalization", {x, scale, bias}, {{"epsilon", epsilon}, {"axis", axis}});
  }
  ValueId gemm(ValueId a, ValueId b, ValueId c, bool trans_b = false) {
    return op1("Gemm", {a, b, c}, {{"transB", int64_t{trans_b}}});
  }
  ValueId conv(ValueId x, ValueId w, ValueId b, std::vector<int64_t> pads,
               std::vector<int64_t> strides, int64_t group = 1) {
    return op1("Conv", {x, w, b},
               {{"pads", std::move(pads)}, {"strides", std::move(strides)}, {"group", group}});
  }

  // Marks `v` as a graph output (optionally renaming the value).
  void output(ValueId v, std::string rename = "");

  // Validates, infers shapes and returns the graph, or the first error recorded.
  Expected<Graph> build();

  const Status& status() const { return status_; }

 private:
  std::string fresh_name(const std::string& base);
  Graph g_;
  Status status_;
  int counter_ = 0;
};

}  // namespace hpf
