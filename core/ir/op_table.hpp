// The op table: one row per op. A row says what the op takes and gives (input/output counts,
// attribute schema with defaults), how its output shapes follow from its inputs, which class
// the planner files it under, which formats it may run in, and what must stay wide.
// Adding an op = one row here (op_table.cpp) + its shape function + its implementations.
//
// The table is immutable and built once; lookups are thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hpf/graph.hpp"

namespace hpf::ir {

enum class OpClass {
  matmul,
  conv,
  attention,
  normalization,
  softmax,
  embedding,
  elementwise,
  data_movement,
  quantization,
};
const char* op_class_name(OpClass c);

enum class AttrType { int_, float_, string, ints, floats, strings, tensor, graph };
const char* attr_type_name(AttrType t);
// Whether `v` has type `t` (an integer where a float is expected counts, as exporters write them).
bool attr_matches(const AttrValue& v, AttrType t);

struct AttrDef {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // nullopt and !required: absent means "not given"
  bool required = false;
};

// What a shape function sees: the node, its inputs' dtypes/shapes and constant values (for
// shape-like inputs such as Reshape's shape), and attributes with the table's defaults applied.
class InferContext {
 public:
  InferContext(const Graph& g, const Node& n);
  const Node& node() const { return node_; }
  size_t num_inputs() const { return node_.inputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != kNoValue; }
  const Value& input(size_t i) const { return graph_.value(node_.inputs.at(i)); }
  // Constant value of input i when it is an initializer, else nullptr.
  const Tensor* const_input(size_t i) const;
  // Shape of input i, or nullptr when unknown.
  const Shape* shape(size_t i) const;

  int64_t attr_int(const std::string& name) const;
  float attr_float(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<float> attr_floats(const std::string& name) const;
  bool has_attr(const std::string& name) const { return node_.attrs.count(name) > 0; }

  // Results.
  size_t num_outputs() const { return node_.outputs.size(); }
  void set_output(size_t i, DType dtype, Shape shape);
  void set_output_unknown_shape(size_t i, DType dtype);

  // An invalid_argument Status naming this node and op.
  Status error(const std::string& message) const;

  struct Out {
    DType dtype = DType::F32;
    Shape shape;
    bool has_shape = false;
  };
  std::vector<Out> outputs;

 private:
  const Graph& graph_;
  const Node& node_;
};

using ShapeFn = std::function<Status(InferContext&)>;

struct OpDef {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  std::vector<AttrDef> attrs;
  OpClass op_class = OpClass::elementwise;
  // Formats the op's floating-point data may be computed in (the planner's candidates).
  std::vector<DType> precisions;
  // Inputs that stay FP32 whatever the plan says (e.g. normalisation scale/bias, BN statistics).
  std::vector<int> wide_inputs;
  // What the op accumulates internally in FP32 or wider, whatever the plan ("" if nothing).
  std::string wide_internals;
  ShapeFn infer;

  const AttrDef* attr(std::string_view attr_name) const;
};

const OpDef* find_op(std::string_view name);
std::span<const OpDef> all_ops();

// The attribute `name` of `node`, or the table's default; nullopt when neither exists.
std::optional<AttrValue> attr_or_default(const Node& node, const OpDef& def,
                                         const std::string& name);

// Broadcasts shapes numpy-style; invalid_argument naming both shapes when incompatible.
Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// ONNX TensorProto.DataType codes, used by Cast's `to` and by model import
// (FLOAT=1, UINT8=2, INT8=3, INT32=6, INT64=7, BOOL=9, FLOAT16=10, BFLOAT16=16,
// FLOAT8E4M3FN=17, FLOAT8E5M2=19, INT4=22).
Expected<DType> dtype_from_onnx(int64_t code);
int64_t dtype_to_onnx(DType t);  // TF32 maps to FLOAT

// Normalises a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);

}  // namespace hpf::ir
