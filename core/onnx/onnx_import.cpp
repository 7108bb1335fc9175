// ONNX import: ModelProto -> Graph, TensorProto -> Tensor. The only file that sees protobuf and
// ONNX headers. Semantics follow the op table (latest opset forms plus the older attribute
// forms it accepts); opset-specific rewrites happen here.
#include "hpf/onnx.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/ir/op_table.hpp"
#include "core/onnx/onnx_opset_forms.hpp"
#include "hpf/dtype.hpp"
#include "hpf/log.hpp"

namespace hpf {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kOnnxDouble = 11;

Expected<std::vector<std::byte>> read_file(const std::string& path, uint64_t offset = 0, int64_t length = -1) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::not_found(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error(path + ": cannot open for reading");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (offset > size) return Status::invalid(path + ": offset " + std::to_string(offset) + " is past the end");
  const uint64_t n = length < 0 ? size - offset : static_cast<uint64_t>(length);
  if (offset + n > size)
    return Status::invalid(path + ": " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                           " run past the end (file has " + std::to_string(size) + ")");
  std::vector<std::byte> bytes(n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(n));
  if (!in) return Status::io_error(path + ": read failed");
  return bytes;
}

// Importer's view of an ONNX element type: the libhpf format, with DOUBLE held as F32.
Expected<DType> import_dtype(int64_t code) {
  if (code == kOnnxDouble) return DType::F32;
  if (code == 22) return Status::unsupported("ONNX data type INT4 is not supported by the importer");
  return ir::dtype_from_onnx(code);
}

std::string onnx_type_name(int64_t code) {
  if (onnx::TensorProto_DataType_IsValid(static_cast<int>(code)))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
  return std::to_string(code);
}

// `base_dir` locates external data ("" : not allowed). Messages are relative to the tensor.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir) {
  const int64_t code = t.data_type();
  auto dt = import_dtype(code);
  if (!dt.ok()) return Status::unsupported("data type " + onnx_type_name(code) + " is not supported");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) return Status::invalid("negative dimension " + std::to_string(d));
  // The element count, refused before it could overflow (2^48 elements is far beyond any file).
  constexpr int64_t kMaxElements = int64_t{1} << 48;
  int64_t n = std::find(shape.begin(), shape.end(), 0) != shape.end() ? 0 : 1;
  for (int64_t d : shape) {
    if (n == 0) break;
    if (d > kMaxElements / n) return Status::invalid("shape " + shape_string(shape) + " has more than 2^48 elements");
    n *= d;
  }
  if (t.has_segment()) return Status::unsupported("segmented tensors are not supported");

  // The little-endian bytes of the tensor in its ONNX element type, when stored as raw bytes.
  std::vector<std::byte> raw;
  bool have_raw = false;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    int64_t length = -1;
    for (const auto& kv : t.external_data()) {
      try {
        if (kv.key() == "location") location = kv.value();
        else if (kv.key() == "offset") offset = std::stoull(kv.value());
        else if (kv.key() == "length") length = std::stoll(kv.value());
      } catch (const std::exception&) {
        return Status::invalid("external data " + kv.key() + " '" + kv.value() + "' is not a number");
      }
    }
    if (location.empty()) return Status::invalid("external data without a location");
    if (base_dir.empty()) return Status::invalid("external data '" + location + "' but no model directory");
    HPF_ASSIGN_OR_RETURN(raw, read_file((fs::path(base_dir) / location).string(), offset, length));
    have_raw = true;
  } else if (t.has_raw_data()) {
    const std::string& r = t.raw_data();
    const auto* b = reinterpret_cast<const std::byte*>(r.data());
    raw.assign(b, b + r.size());
    have_raw = true;
  }

  auto count_error = [&](size_t got) {
    return Status::invalid("holds " + std::to_string(got) + " elements, shape " + shape_string(shape) +
                           " needs " + std::to_string(n));
  };
  if (code == kOnnxDouble) {
    std::vector<double> d;
    if (have_raw) {
      if (raw.size() != static_cast<size_t>(n) * 8) return count_error(raw.size() / 8);
      d.resize(n);
      if (!raw.empty()) std::memcpy(d.data(), raw.data(), raw.size());
    } else {
      d.assign(t.double_data().begin(), t.double_data().end());
      if (d.size() != static_cast<size_t>(n)) return count_error(d.size());
    }
    log(LogLevel::info, "ONNX import: DOUBLE tensor '" + t.name() + "' converted to F32");
    std::vector<float> f(d.begin(), d.end());
    return Tensor::from_f32(shape, f);
  }
  const DType type = *dt;
  if (have_raw) {
    const size_t want = storage_bytes(type, static_cast<size_t>(n));
    if (raw.size() != want)
      return Status::invalid("raw data has " + std::to_string(raw.size()) + " bytes, shape " + shape_string(shape) +
                             " of " + std::string(dtype_name(type)) + " needs " + std::to_string(want));
    return Tensor::from_bytes(type, shape, std::move(raw));
  }
  // Typed fields: counts are checked before anything is allocated.
  if (type == DType::F32) {
    if (t.float_data_size() != n) return count_error(t.float_data_size());
    Tensor out(type, shape);
    std::copy(t.float_data().begin(), t.float_data().end(), out.data<float>().begin());
    return out;
  }
  if (type == DType::I64) {
    if (t.int64_data_size() != n) return count_error(t.int64_data_size());
    Tensor out(type, shape);
    std::copy(t.int64_data().begin(), t.int64_data().end(), out.data<int64_t>().begin());
    return out;
  }
  // Everything else lives in int32_data (F16/BF16 as their bit patterns).
  if (t.int32_data_size() != n) return count_error(t.int32_data_size());
  Tensor out(type, shape);
  const auto& v = t.int32_data();
  switch (type) {
    case DType::I32: std::copy(v.begin(), v.end(), out.data<int32_t>().begin()); break;
    case DType::I8:
      for (int64_t k = 0; k < n; ++k) out.data<int8_t>()[k] = static_cast<int8_t>(v[k]);
      break;
    case DType::U8:
    case DType::BOOL:
    case DType::F8E4M3:
    case DType::F8E5M2:
      for (int64_t k = 0; k < n; ++k) out.data<uint8_t>()[k] = static_cast<uint8_t>(v[k]);
      break;
    case DType::F16:
    case DType::BF16:
      for (int64_t k = 0; k < n; ++k) out.data<uint16_t>()[k] = static_cast<uint16_t>(v[k]);
      break;
    default: return Status::unsupported("typed data of " + std::string(dtype_name(type)) + " is not supported");
  }
  return out;
}

// An attribute of the op table's form must have its type before any translation reads it.
Status check_attr_type(const ir::OpDef* def, const std::string& name, const AttrValue& v, const std::string& where) {
  const ir::AttrDef* ad = def ? def->attr(name) : nullptr;
  if (!ad || ir::attr_matches(v, ad->type)) return {};
  return Status::invalid(where + ": attribute '" + name + "' is " + attr_type_name(v) + ", expected " +
                         ir::attr_type_name(ad->type));
}

Expected<AttrValue> attr_from_proto(const onnx::AttributeProto& a, const std::string& base_dir) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: return AttrValue(a.i());
    case A::FLOAT: return AttrValue(a.f());
    case A::STRING: return AttrValue(a.s());
    case A::INTS: return AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case A::FLOATS: return AttrValue(std::vector<float>(a.floats().begin(), a.floats().end()));
    case A::STRINGS: return AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case A::TENSOR: {
      auto t = tensor_from_proto(a.t(), base_dir);
      if (!t.ok()) return t.status().with_context("tensor attribute '" + a.name() + "'");
      return AttrValue(std::move(t).value());
    }
    default:
      return Status::unsupported("attribute '" + a.name() + "' of type " + A::AttributeType_Name(a.type()) +
                                 " is not supported");
  }
}

// Builds the Graph from a parsed model; errors without the model name (the caller adds it).
class Importer {
 public:
  Importer(const onnx::ModelProto& m, std::string base_dir) : m_(m), base_dir_(std::move(base_dir)) {}

  Expected<Graph> run() {
    if (!m_.has_graph()) return Status::invalid("the model has no graph");
    for (const auto& o : m_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    HPF_RETURN_IF_ERROR(onnx_forms::check_opset(opset_));
    const onnx::GraphProto& gp = m_.graph();
    g_ = Graph(gp.name().empty() ? "onnx" : gp.name());
    HPF_RETURN_IF_ERROR(build(gp, nullptr));
    return std::move(g_);
  }

 private:
  // What an enclosing graph tells a subgraph's importer: the formal inputs' dtypes where the
  // subgraph leaves them out (Loop and Scan bodies may), and the captured values, which become
  // inputs after the formal ones.
  struct Scope {
    std::vector<std::optional<DType>> input_dtypes;
    struct Capture {
      std::string name;
      DType dtype;
      Shape shape;
      bool has_shape;
    };
    std::vector<Capture> captures;
  };

  Importer(const Importer& parent, const onnx::GraphProto& gp)
      : m_(parent.m_), base_dir_(parent.base_dir_), g_(gp.name().empty() ? "subgraph" : gp.name()),
        opset_(parent.opset_) {}

  // Fills g_ from `gp`; `scope` is set for a subgraph.
  Status build(const onnx::GraphProto& gp, const Scope* scope) {
    std::set<std::string> init_names;
    for (const auto& t : gp.initializer()) {
      auto tensor = tensor_from_proto(t, base_dir_);
      if (!tensor.ok()) return tensor.status().with_context("initializer '" + t.name() + "'");
      HPF_RETURN_IF_ERROR(g_.add_initializer(t.name(), std::move(tensor).value()).status());
      init_names.insert(t.name());
    }
    if (gp.sparse_initializer_size() > 0) return Status::unsupported("sparse initializers are not supported");
    size_t formal = 0;
    for (const auto& in : gp.input()) {
      if (init_names.count(in.name())) continue;
      std::optional<DType> hint;
      if (scope && formal < scope->input_dtypes.size()) hint = scope->input_dtypes[formal];
      HPF_RETURN_IF_ERROR(add_input(in, hint));
      ++formal;
    }
    if (scope)
      for (const auto& c : scope->captures) {
        HPF_ASSIGN_OR_RETURN(ValueId id, g_.add_input(c.name, c.dtype, c.shape));
        g_.value(id).has_shape = c.has_shape;
      }
    for (const auto& n : gp.node()) node_names_.insert(n.name());
    for (int k = 0; k < gp.node_size(); ++k) HPF_RETURN_IF_ERROR(add_node(gp.node(k), k));
    for (const auto& o : gp.output()) {
      auto v = g_.find_value(o.name());
      if (!v) return Status::invalid("graph output '" + o.name() + "' is produced by no node, input or initializer");
      HPF_RETURN_IF_ERROR(g_.add_output(*v));
    }
    return {};
  }

  // `hint`: the dtype to use when the input declares none (subgraph inputs only).
  Status add_input(const onnx::ValueInfoProto& in, std::optional<DType> hint = std::nullopt) {
    const onnx::TypeProto& type = in.type();
    const bool untyped = type.value_case() == onnx::TypeProto::VALUE_NOT_SET ||
                         (type.has_tensor_type() && type.tensor_type().elem_type() == 0);
    if (hint && untyped) {
      HPF_ASSIGN_OR_RETURN(ValueId id, g_.add_input(in.name(), *hint, {}));
      g_.value(id).has_shape = false;
      return {};
    }
    if (!in.type().has_tensor_type())
      return Status::unsupported("graph input '" + in.name() + "' is not a tensor (sequence/map/optional)");
    const auto& tt = in.type().tensor_type();
    auto dt = import_dtype(tt.elem_type());
    if (!dt.ok())
      return Status::unsupported("graph input '" + in.name() + "': data type " + onnx_type_name(tt.elem_type()) +
                                 " is not supported");
    Shape shape;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) shape.push_back(Dim(d.dim_value()));
      else if (d.has_dim_param() && !d.dim_param().empty()) shape.push_back(Dim::sym(d.dim_param()));
      else shape.push_back(Dim());
    }
    HPF_ASSIGN_OR_RETURN(ValueId id, g_.add_input(in.name(), *dt, shape));
    if (!tt.has_shape()) g_.value(id).has_shape = false;
    return {};
  }

  std::string unique_node_name(const std::string& wanted, const std::string& op, int index) {
    std::string base = wanted.empty() ? op + "_" + std::to_string(index) : wanted;
    std::string name = base;
    for (int k = 1; used_names_.count(name) || (wanted.empty() && node_names_.count(name)); ++k)
      name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  Status constant_node(const onnx::NodeProto& n, const std::string& where) {
    if (n.output_size() != 1 || n.attribute_size() != 1)
      return Status::invalid(where + ": a Constant needs one output and one value attribute");
    const auto& a = n.attribute(0);
    Expected<Tensor> t = Status::internal("unset");
    if (a.name() == "value") t = tensor_from_proto(a.t(), base_dir_);
    else if (a.name() == "value_float") t = Tensor::scalar_f32(a.f());
    else if (a.name() == "value_int") t = Tensor::scalar_i64(a.i());
    else if (a.name() == "value_floats") {
      std::vector<float> v(a.floats().begin(), a.floats().end());
      t = Tensor::from_f32({static_cast<int64_t>(v.size())}, v);
    } else if (a.name() == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      t = Tensor::from_i64({static_cast<int64_t>(v.size())}, v);
    } else {
      return Status::unsupported(where + ": attribute '" + a.name() + "' is not supported");
    }
    if (!t.ok()) return t.status().with_context(where);
    return g_.add_initializer(n.output(0), std::move(t).value()).status().with_context(where);
  }

  Status add_node(const onnx::NodeProto& n, int index) {
    const std::string& domain = n.domain();
    const std::string shown_domain = domain.empty() ? "ai.onnx" : domain;
    const std::string name = unique_node_name(n.name(), n.op_type(), index);
    const std::string where = "node '" + name + "' (" + n.op_type() + ")";
    if (!domain.empty() && domain != "ai.onnx")
      return Status::unsupported("node '" + name + "': op " + n.op_type() + " of domain '" + shown_domain +
                                 "' is not supported");
    if (n.op_type() == "Constant") return constant_node(n, where);
    if (n.op_type() == "Upsample") return upsample_node(n, name, where);
    std::string op = current_op_name(n.op_type());
    const ir::OpDef* def = ir::find_op(op);
    if (!def)
      return Status::unsupported("node '" + name + "': op " + n.op_type() + " (domain '" + shown_domain +
                                 "', opset " + std::to_string(opset_) + ") is not supported");

    std::vector<ValueId> inputs;
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& in = n.input(k);
      if (in.empty()) {
        inputs.push_back(kNoValue);
        continue;
      }
      auto v = g_.find_value(in);
      if (!v)
        return Status::invalid(where + ": input " + std::to_string(k) + " '" + in +
                               "' is neither a graph input, an initializer nor the output of an earlier node");
      inputs.push_back(*v);
    }
    while (!inputs.empty() && inputs.back() == kNoValue) inputs.pop_back();

    std::vector<std::string> outputs(n.output().begin(), n.output().end());
    while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
    if (static_cast<int>(outputs.size()) > def->max_outputs)
      return Status::unsupported(where + ": " + std::to_string(outputs.size()) + " outputs requested, libhpf gives " +
                                 std::to_string(def->max_outputs) + " (e.g. no training-mode outputs)");
    for (size_t k = 0; k < outputs.size(); ++k)
      if (outputs[k].empty()) outputs[k] = name + ":unused" + std::to_string(k);

    if (has_subgraph(n)) return add_control_node(n, name, where, *def, std::move(inputs), std::move(outputs));

    Attributes attrs;
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty())
        return Status::unsupported(where + ": attribute '" + a.name() + "' refers to a function attribute");
      if (!def->attr(a.name()) && !onnx_forms::is_older_form_attribute(n.op_type(), opset_, a.name()))
        return Status::unsupported(where + ": attribute '" + a.name() + "' (opset " + std::to_string(opset_) +
                                   ") is not supported");
      auto v = attr_from_proto(a, base_dir_);
      if (!v.ok()) return v.status().with_context(where);
      if (!onnx_forms::is_older_form_attribute(n.op_type(), opset_, a.name()))
        HPF_RETURN_IF_ERROR(check_attr_type(def, a.name(), *v, where));
      attrs[a.name()] = std::move(v).value();
    }
    bool added = false;
    HPF_RETURN_IF_ERROR(translate_older_form(n.op_type(), op, name, where, inputs, outputs, attrs, added));
    if (added) return {};
    // DOUBLE is held as F32: a Cast to DOUBLE is a Cast to FLOAT.
    if (n.op_type() == "Cast")
      if (auto it = attrs.find("to"); it != attrs.end())
        if (auto* to = std::get_if<int64_t>(&it->second)) {
          if (*to == kOnnxDouble) *to = 1;
          if (!import_dtype(*to).ok())
            return Status::unsupported(where + ": Cast to data type " + onnx_type_name(*to) + " is not supported");
        }

    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13)
      return add_coerced_softmax(op, name, inputs, outputs, attrs);
    HPF_RETURN_IF_ERROR(apply_older_forms(op, attrs, outputs.size(), where));

    auto r = g_.add_node(op, name, std::move(inputs), std::move(outputs), std::move(attrs));
    return r.status();
  }

  // Upsample (opsets 7-9; scales an attribute before opset 9, an input from it) is Resize with
  // asymmetric coordinates, nearest picking the floor: output size floor(in * scale).
  Status upsample_node(const onnx::NodeProto& n, const std::string& name, const std::string& where) {
    std::string mode = "nearest";
    std::vector<float> attr_scales;
    for (const auto& a : n.attribute()) {
      if (a.name() == "mode") mode = a.s();
      else if (a.name() == "scales") attr_scales.assign(a.floats().begin(), a.floats().end());
      else return Status::unsupported(where + ": attribute '" + a.name() + "' is not supported");
    }
    if (mode != "nearest" && mode != "linear")
      return Status::unsupported(where + ": mode '" + mode + "' is not supported (nearest, linear)");
    if (n.output_size() != 1 || n.input_size() < 1 || n.input_size() > 2)
      return Status::invalid(where + ": Upsample takes X (and scales from opset 9) and gives one output");
    std::vector<ValueId> inputs;
    for (const std::string& in : n.input()) {
      auto v = g_.find_value(in);
      if (!v) return Status::invalid(where + ": input '" + in + "' is not defined before this node");
      inputs.push_back(*v);
    }
    ValueId scales = inputs.size() == 2 ? inputs[1] : kNoValue;
    if (scales == kNoValue) {
      if (attr_scales.empty()) return Status::invalid(where + ": Upsample needs scales");
      HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_f32({static_cast<int64_t>(attr_scales.size())}, attr_scales));
      HPF_ASSIGN_OR_RETURN(scales, g_.add_initializer(name + "/scales", std::move(t)));
    }
    Attributes attrs{{"mode", mode},
                     {"coordinate_transformation_mode", std::string("asymmetric")},
                     {"nearest_mode", std::string("floor")}};
    return g_.add_node("Resize", name, {inputs[0], kNoValue, scales}, {n.output(0)}, std::move(attrs)).status();
  }

  // Older forms (core/onnx/onnx_opset_forms.cpp): rewrites the node's parts in place, or adds the
  // node itself (`added`).
  Status translate_older_form(const std::string& op_type, std::string& op, const std::string& name,
                              const std::string& where, std::vector<ValueId>& inputs,
                              std::vector<std::string>& outputs, Attributes& attrs, bool& added) {
    onnx_forms::NodeDraft d{op_type, op, name, where, std::move(inputs), std::move(outputs), std::move(attrs)};
    onnx_forms::FormContext c{g_, opset_, [this](const std::string& wanted) { return unique_node_name(wanted, "", 0); }};
    Status s = onnx_forms::translate(c, d, added);
    op = std::move(d.op);
    inputs = std::move(d.inputs);
    outputs = std::move(d.outputs);
    attrs = std::move(d.attrs);
    return s;
  }

  // Ops renamed by later opsets: the deprecated Scatter (opset 9-10) is ScatterElements.
  static std::string current_op_name(const std::string& op) {
    return op == "Scatter" ? "ScatterElements" : op;
  }

  // Older or narrower forms of attributes, rewritten into the op table's form.
  Status apply_older_forms(const std::string& op, Attributes& attrs, size_t num_outputs,
                           const std::string& where) const {
    if (op == "EyeLike")  // DOUBLE is held as F32
      if (auto it = attrs.find("dtype"); it != attrs.end())
        if (auto* d = std::get_if<int64_t>(&it->second); d && *d == kOnnxDouble) *d = 1;
    // RoiAlign before opset 16 had no coordinate_transformation_mode and worked as
    // output_half_pixel does.
    if (op == "RoiAlign" && opset_ < 16 && !attrs.count("coordinate_transformation_mode"))
      attrs["coordinate_transformation_mode"] = std::string("output_half_pixel");
    if (op == "BatchNormalization" && opset_ < 14 && num_outputs > 1)
      return Status::unsupported(where + ": training outputs before opset 14 are not supported");
    return {};
  }

  // Softmax before opset 13 flattens the input to 2-D at `axis` (default 1) and normalises over
  // the second dimension: Shape -> Flatten -> Softmax(-1) -> Reshape, unless axis is -1.
  Status add_coerced_softmax(const std::string& op, const std::string& name, std::vector<ValueId> inputs,
                             std::vector<std::string> outputs, Attributes attrs) {
    int64_t axis = 1;
    if (auto it = attrs.find("axis"); it != attrs.end()) axis = std::get<int64_t>(it->second);
    if (axis == -1 || inputs.size() != 1 || outputs.size() != 1)
      return g_.add_node(op, name, std::move(inputs), std::move(outputs), {{"axis", int64_t{-1}}}).status();
    const ValueId x = inputs[0];
    const std::string pre = name + "/coerced2d/";
    // The original shape: a constant when it is known here (so later shapes stay known), else
    // computed by a Shape node.
    ValueId shape_value = kNoValue;
    if (g_.infer_shapes().ok() && g_.value(x).has_shape)
      if (auto sizes = concrete(g_.value(x).shape)) {
        HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_i64({static_cast<int64_t>(sizes->size())}, *sizes));
        HPF_ASSIGN_OR_RETURN(shape_value, g_.add_initializer(pre + "shape", std::move(t)));
      }
    if (shape_value == kNoValue) {
      HPF_ASSIGN_OR_RETURN(int32_t shape_node, g_.add_node("Shape", unique_node_name(pre + "shape", "", 0), {x},
                                                           {pre + "shape"}));
      shape_value = g_.node(shape_node).outputs[0];
    }
    HPF_ASSIGN_OR_RETURN(int32_t flat_node, g_.add_node("Flatten", unique_node_name(pre + "flatten", "", 0), {x},
                                                        {pre + "flat"}, {{"axis", axis}}));
    HPF_ASSIGN_OR_RETURN(int32_t sm_node, g_.add_node(op, name, {g_.node(flat_node).outputs[0]}, {pre + "out2d"},
                                                      {{"axis", int64_t{-1}}}));
    return g_.add_node("Reshape", unique_node_name(pre + "reshape", "", 0),
                       {g_.node(sm_node).outputs[0], shape_value}, {outputs[0]})
        .status();
  }

  // ---- Control flow: If, Loop, Scan ----
  //
  // Closure conversion: an ONNX subgraph may read values of the enclosing graphs by name. Here
  // each such value (a capture) becomes an explicit input of the node, after its ONNX inputs,
  // and an input of every subgraph of the node, after its formal inputs, in the same order;
  // "num_captures" says how many there are. A value read several levels down is captured by
  // every graph in between, so each node is self-contained.

  static bool has_subgraph(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return true;
    return false;
  }

  // Names `g` reads (node inputs, graph outputs, its subgraphs' free names) but does not define,
  // in order of first use.
  static std::vector<std::string> free_names(const onnx::GraphProto& g) {
    std::set<std::string> defined;
    for (const auto& v : g.input()) defined.insert(v.name());
    for (const auto& t : g.initializer()) defined.insert(t.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output()) defined.insert(o);
    std::vector<std::string> names;
    std::set<std::string> seen;
    auto use = [&](const std::string& v) {
      if (!v.empty() && !defined.count(v) && seen.insert(v).second) names.push_back(v);
    };
    for (const auto& n : g.node()) {
      for (const auto& in : n.input()) use(in);
      for (const auto& a : n.attribute()) {
        if (a.has_g())
          for (const auto& v : free_names(a.g())) use(v);
        for (const auto& sub : a.graphs())
          for (const auto& v : free_names(sub)) use(v);
      }
    }
    for (const auto& o : g.output()) use(o.name());
    return names;
  }

  Status add_control_node(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                          const ir::OpDef& def, std::vector<ValueId> inputs, std::vector<std::string> outputs) {
    Attributes attrs;
    const bool scan8 = n.op_type() == "Scan" && opset_ < 9;
    if (scan8) HPF_RETURN_IF_ERROR(translate_scan8(where, inputs, attrs));
    if (n.op_type() == "Loop" && inputs.size() < 2) inputs.resize(2, kNoValue);  // M and cond may both be absent

    // The captures: every name a subgraph of this node reads from the enclosing graphs.
    std::vector<std::string> captured;
    for (const auto& a : n.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH)
        for (const auto& v : free_names(a.g()))
          if (std::find(captured.begin(), captured.end(), v) == captured.end()) captured.push_back(v);
    // Their dtypes (and the node inputs') must be known to type the subgraph's inputs.
    HPF_RETURN_IF_ERROR(g_.infer_shapes().with_context(where));
    Scope scope;
    std::vector<ValueId> capture_ids;
    for (const std::string& v : captured) {
      auto id = g_.find_value(v);
      if (!id)
        return Status::invalid(where + ": a subgraph reads '" + v +
                               "', which no enclosing graph defines before this node");
      const Value& val = g_.value(*id);
      scope.captures.push_back({v, val.dtype, val.shape, val.has_shape});
      capture_ids.push_back(*id);
    }
    scope.input_dtypes = subgraph_input_dtypes(n.op_type(), inputs);

    for (const auto& a : n.attribute()) {
      const std::string key = scan8 && a.name() == "directions" ? "scan_input_directions" : a.name();
      if (!a.ref_attr_name().empty())
        return Status::unsupported(where + ": attribute '" + a.name() + "' refers to a function attribute");
      if (!def.attr(key))
        return Status::unsupported(where + ": attribute '" + a.name() + "' (opset " + std::to_string(opset_) +
                                   ") is not supported");
      if (a.type() == onnx::AttributeProto::GRAPH) {
        auto sub = import_subgraph(a.g(), scope);
        if (!sub.ok()) return sub.status().with_context(where + ": subgraph '" + a.name() + "'");
        attrs[key] = GraphAttr(std::make_shared<const Graph>(std::move(sub).value()));
        continue;
      }
      auto v = attr_from_proto(a, base_dir_);
      if (!v.ok()) return v.status().with_context(where);
      HPF_RETURN_IF_ERROR(check_attr_type(&def, a.name(), *v, where));
      attrs[key] = std::move(v).value();
    }
    // Outputs left off at the end still exist in the subgraph: give them names.
    const char* main_graph = n.op_type() == "If" ? "then_branch" : "body";
    if (auto it = attrs.find(main_graph); it != attrs.end()) {
      const size_t skip = n.op_type() == "Loop" ? 1 : 0;  // the body's cond
      const size_t produced = std::get<GraphAttr>(it->second)->outputs().size();
      for (size_t k = outputs.size(); k + skip < produced; ++k) outputs.push_back(name + ":unused" + std::to_string(k));
    }
    attrs["num_captures"] = static_cast<int64_t>(capture_ids.size());
    inputs.insert(inputs.end(), capture_ids.begin(), capture_ids.end());
    return g_.add_node(n.op_type(), name, std::move(inputs), std::move(outputs), std::move(attrs)).status();
  }

  // The dtypes a subgraph's formal inputs take from the node, for bodies that leave them out.
  std::vector<std::optional<DType>> subgraph_input_dtypes(const std::string& op,
                                                          const std::vector<ValueId>& inputs) const {
    std::vector<std::optional<DType>> dtypes;
    auto dtype_of = [&](ValueId v) { return v == kNoValue ? std::nullopt : std::optional(g_.value(v).dtype); };
    if (op == "Loop") {
      dtypes = {DType::I64, DType::BOOL};  // iteration number, cond
      for (size_t k = 2; k < inputs.size(); ++k) dtypes.push_back(dtype_of(inputs[k]));
    } else if (op == "Scan") {
      for (ValueId v : inputs) dtypes.push_back(dtype_of(v));  // states, then one slab of each scan input
    }
    return dtypes;
  }

  // Scan before opset 9: a leading sequence_lens input (only its absent form is supported), a
  // batch dimension on every input, and "directions" for scan_input_directions.
  static Status translate_scan8(const std::string& where, std::vector<ValueId>& inputs, Attributes& attrs) {
    if (inputs.empty()) return Status::invalid(where + ": Scan (opset 8) needs sequence_lens before its inputs");
    if (inputs[0] != kNoValue)
      return Status::unsupported(where + ": Scan (opset 8) with sequence_lens (sequences of differing lengths) is "
                                 "not supported");
    inputs.erase(inputs.begin());
    attrs["scan_batched"] = int64_t{1};
    return {};
  }

  Expected<Graph> import_subgraph(const onnx::GraphProto& gp, const Scope& scope) {
    Importer sub(*this, gp);
    HPF_RETURN_IF_ERROR(sub.build(gp, &scope));
    HPF_RETURN_IF_ERROR(sub.g_.validate());
    HPF_RETURN_IF_ERROR(sub.g_.infer_shapes());
    return std::move(sub.g_);
  }

  const onnx::ModelProto& m_;
  std::string base_dir_;
  Graph g_;
  int64_t opset_ = 1;
  std::set<std::string> node_names_;  // names the model gives its nodes
  std::set<std::string> used_names_;  // names given so far
};

}  // namespace

bool onnx_import_available() { return true; }

Expected<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& name,
                                  const std::string& base_dir) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return Status::unsupported(name + ": models over 2 GiB in one file are not supported (use external data)");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Status::invalid(name + ": not a valid ONNX model (protobuf parsing failed; truncated or corrupt file?)");
  auto g = Importer(model, base_dir).run();
  if (!g.ok()) return g.status().with_context(name);
  Status s = g->validate();
  if (s.ok()) s = g->infer_shapes();
  if (!s.ok()) return s.with_context(name);
  return g;
}

Expected<Graph> import_onnx(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes.ok()) return bytes.status();
  return import_onnx_bytes(*bytes, path, fs::path(path).parent_path().string().empty()
                                             ? std::string(".")
                                             : fs::path(path).parent_path().string());
}

Expected<Tensor> load_tensor_pb_bytes(std::span<const std::byte> bytes, const std::string& name,
                                      std::string* tensor_name) {
  onnx::TensorProto t;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Status::invalid(name + ": not a valid ONNX TensorProto (protobuf parsing failed)");
  if (tensor_name) *tensor_name = t.name();
  auto r = tensor_from_proto(t, fs::path(name).parent_path().string());
  if (!r.ok()) return r.status().with_context(name);
  return r;
}

Expected<Tensor> load_tensor_pb(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes.ok()) return bytes.status();
  return load_tensor_pb_bytes(*bytes, path);
}

}  // namespace hpf
