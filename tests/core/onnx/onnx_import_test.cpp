// ONNX import: models built with ONNX's protobuf API, imported and run on the reference
// interpreter; the error messages users see for bad files and unsupported ops.
#include "hpf/onnx.hpp"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../ir/ir_test_util.hpp"
#include "hpf/reference.hpp"

namespace {

namespace fs = std::filesystem;
using hpf::Dim;
using hpf::DType;
using hpf::StatusCode;
using hpf::Tensor;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hpf_onnx_test_" + std::to_string(getpid()) + "_" + name);
  fs::create_directories(d);
  return d;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

onnx::ModelProto new_model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

void add_io(onnx::ValueInfoProto* v, const std::string& name, std::vector<Dim> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else dim->set_dim_param(d.symbol);
  }
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

std::string raw_floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// y = Relu(x[batch,3] @ W + B), W an initializer (raw data, or external when `external_file`
// is set), B from a Constant node; the MatMul has no name.
onnx::ModelProto mlp_model(const std::string& external_file = "") {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {Dim::sym("batch"), 3});
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(2);
  const std::string w_bytes = raw_floats({1, 0, 0, 1, 1, -1});
  if (external_file.empty()) {
    w->set_raw_data(w_bytes);
  } else {
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(external_file);
    kv = w->add_external_data();
    kv->set_key("offset");
    kv->set_value("8");
    kv = w->add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(w_bytes.size()));
  }
  auto* c = add_node(g, "Constant", "bias", {}, {"B"});
  auto* a = c->add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(0.5f);
  a->add_floats(-0.5f);
  add_node(g, "MatMul", "", {"x", "W"}, {"xw"});
  add_node(g, "Add", "add", {"xw", "B"}, {"xwb"});
  add_node(g, "Relu", "relu", {"xwb"}, {"y"});
  add_io(g->add_output(), "y", {Dim::sym("batch"), 2});
  return m;
}

std::vector<float> run_f32(const hpf::Graph& g, std::vector<int64_t> shape, std::vector<float> x) {
  auto in = Tensor::from_f32(shape, x);
  REQUIRE(in.ok());
  auto out = hpf::ref::run(g, {*in});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  REQUIRE(out->size() == 1);
  return (*out)[0].to_f32();
}

hpf::Expected<hpf::Graph> import(const onnx::ModelProto& m, const std::string& name = "model.onnx") {
  const std::string bytes = m.SerializeAsString();
  return hpf::import_onnx_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, name);
}

TEST_CASE("onnx: MatMul+Add+Relu with an initializer, a Constant and a symbolic batch") {
  REQUIRE(hpf::onnx_import_available());
  auto g = import(mlp_model());
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  REQUIRE(g->inputs().size() == 1);
  const auto& x = g->value(g->inputs()[0]);
  CHECK(x.name == "x");
  CHECK(x.shape == hpf::Shape{Dim::sym("batch"), 3});
  CHECK(g->value(g->outputs()[0]).name == "y");
  CHECK(g->value(g->outputs()[0]).shape == hpf::Shape{Dim::sym("batch"), 2});
  CHECK(g->constant(*g->find_value("B")) != nullptr);  // the Constant node became an initializer
  CHECK(g->nodes().size() == 3);
  CHECK(g->nodes()[0].name == "MatMul_1");  // unnamed node: a generated, unique name
  // x @ W = [[4,-1],[0,-2]]; + B = [[4.5,-1.5],[0.5,-2.5]]; Relu.
  CHECK(run_f32(*g, {2, 3}, {1, 2, 3, -1, 0, 1}) == std::vector<float>{4.5f, 0, 0.5f, 0});
  CHECK(run_f32(*g, {1, 3}, {0, 0, 1}) == std::vector<float>{1.5f, 0});
}

TEST_CASE("onnx: files: external data beside the model, truncated and missing files") {
  const fs::path dir = temp_dir("files");
  // External weights at offset 8 of weights.bin.
  write_file(dir / "weights.bin", std::string(8, '\x7f') + raw_floats({1, 0, 0, 1, 1, -1}));
  const std::string model = mlp_model("weights.bin").SerializeAsString();
  write_file(dir / "model.onnx", model);
  auto g = hpf::import_onnx((dir / "model.onnx").string());
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(run_f32(*g, {1, 3}, {1, 2, 3}) == std::vector<float>{4.5f, 0});

  fs::remove(dir / "weights.bin");
  auto missing_ext = hpf::import_onnx((dir / "model.onnx").string());
  REQUIRE_FALSE(missing_ext.ok());
  CHECK(missing_ext.status().code() == StatusCode::not_found);
  CHECK(missing_ext.status().message() == (dir / "model.onnx").string() + ": initializer 'W': " +
                                              (dir / "weights.bin").string() + ": no such file");

  write_file(dir / "truncated.onnx", mlp_model().SerializeAsString().substr(0, model.size() / 2));
  auto truncated = hpf::import_onnx((dir / "truncated.onnx").string());
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.status().code() == StatusCode::invalid_argument);
  CHECK(truncated.status().message() ==
        (dir / "truncated.onnx").string() +
            ": not a valid ONNX model (protobuf parsing failed; truncated or corrupt file?)");

  auto none = hpf::import_onnx((dir / "nope.onnx").string());
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() == (dir / "nope.onnx").string() + ": no such file");
  fs::remove_all(dir);
}

TEST_CASE("onnx: unknown ops name the op, the node and the domain") {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {2});
  add_node(g, "FancyOp", "fancy", {"x"}, {"y"});
  add_io(g->add_output(), "y", {2});
  auto r = import(m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::unsupported);
  CHECK(r.status().message() == "model.onnx: node 'fancy': op FancyOp (domain 'ai.onnx', opset 17) is not supported");

  g->mutable_node(0)->set_domain("com.example");
  auto d = import(m);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message() == "model.onnx: node 'fancy': op FancyOp of domain 'com.example' is not supported");
}

TEST_CASE("onnx: a missing initializer names the node and the input") {
  auto m = mlp_model();
  m.mutable_graph()->clear_initializer();
  auto r = import(m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "model.onnx: node 'MatMul_1' (MatMul): input 1 'W' is neither a graph input, an "
                                "initializer nor the output of an earlier node");
}

TEST_CASE("onnx: Softmax before opset 13 normalises over the flattened trailing dimensions") {
  auto m = new_model(11);
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {1, 2, 2});
  add_node(g, "Softmax", "sm", {"x"}, {"y"});  // axis defaults to 1: softmax over 4 elements
  add_io(g->add_output(), "y", {1, 2, 2});
  auto r = import(m);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->value(r->outputs()[0]).shape == hpf::Shape{1, 2, 2});
  CHECK(run_f32(*r, {1, 2, 2}, {1, 1, 1, 1}) == std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f});
}

TEST_CASE("onnx: TensorProto files (typed fields, DOUBLE as F32)") {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(onnx::TensorProto::DOUBLE);
  t.add_dims(2);
  t.add_double_data(1.5);
  t.add_double_data(-2);
  const std::string bytes = t.SerializeAsString();
  std::string name;
  auto r = hpf::load_tensor_pb_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "t.pb", &name);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(name == "t");
  CHECK(r->dtype() == DType::F32);
  CHECK(r->to_f32() == std::vector<float>{1.5f, -2});

  t.set_data_type(onnx::TensorProto::INT64);
  t.clear_double_data();
  t.add_int64_data(7);
  const std::string short_bytes = t.SerializeAsString();
  auto bad = hpf::load_tensor_pb_bytes({reinterpret_cast<const std::byte*>(short_bytes.data()), short_bytes.size()},
                                       "t.pb");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "t.pb: holds 1 elements, shape [2] needs 2");
}

TEST_CASE("onnx: Upsample (scales attribute or input) becomes Resize with floor-nearest asymmetric") {
  for (int64_t opset : {7, 9}) {
    CAPTURE(opset);
    auto m = new_model(opset);
    auto* g = m.mutable_graph();
    add_io(g->add_input(), "x", {1, 1, 1, 2});
    auto* n = add_node(g, "Upsample", "up", opset == 7 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "s"},
                       {"y"});
    if (opset == 7) {
      auto* a = n->add_attribute();
      a->set_name("scales");
      a->set_type(onnx::AttributeProto::FLOATS);
      for (float v : {1.0f, 1.0f, 2.0f, 2.5f}) a->add_floats(v);
    } else {
      auto* s = g->add_initializer();
      s->set_name("s");
      s->set_data_type(onnx::TensorProto::FLOAT);
      s->add_dims(4);
      s->set_raw_data(raw_floats({1, 1, 2, 2.5f}));
    }
    add_io(g->add_output(), "y", {1, 1, 2, 5});
    auto r = import(m);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->value(r->outputs()[0]).shape == hpf::Shape{1, 1, 2, 5});
    // Width 2 -> 5 (floor(2 * 2.5)): source floor(j / 2.5) = 0, 0, 0, 1, 1.
    CHECK(run_f32(*r, {1, 1, 1, 2}, {1, 2}) == std::vector<float>{1, 1, 1, 2, 2, 1, 1, 1, 2, 2});
  }
}

// ---- Control flow ----------------------------------------------------------------------------

void add_bool_io(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::BOOL);
  tt->mutable_shape();  // a scalar
}

onnx::GraphProto* add_graph_attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// y = x * x; r = If(c, then: y + x, else: If(d, then: y - x, else: -y)). The branches read x, y
// and d from the enclosing graphs by name; the inner If reads them two levels up.
onnx::ModelProto if_model() {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {3});
  add_bool_io(g->add_input(), "c");
  add_bool_io(g->add_input(), "d");
  add_node(g, "Mul", "square", {"x", "x"}, {"y"});
  auto* outer = add_node(g, "If", "if", {"c"}, {"r"});
  auto* then_g = add_graph_attr(outer, "then_branch");
  add_node(then_g, "Add", "add", {"y", "x"}, {"t"});
  add_io(then_g->add_output(), "t", {3});
  auto* else_g = add_graph_attr(outer, "else_branch");
  auto* inner = add_node(else_g, "If", "inner", {"d"}, {"e"});
  auto* inner_then = add_graph_attr(inner, "then_branch");
  add_node(inner_then, "Sub", "sub", {"y", "x"}, {"u"});
  add_io(inner_then->add_output(), "u", {3});
  auto* inner_else = add_graph_attr(inner, "else_branch");
  add_node(inner_else, "Neg", "neg", {"y"}, {"v"});
  add_io(inner_else->add_output(), "v", {3});
  add_io(else_g->add_output(), "e", {3});
  add_io(g->add_output(), "r", {3});
  return m;
}

TEST_CASE("onnx: If reading enclosing values becomes a node with explicit captures") {
  auto g = import(if_model());
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  const hpf::Node& n = g->node(*g->find_node("if"));
  // cond, then the captures in order of first use: y, x (then_branch), d (else_branch).
  std::vector<std::string> names;
  for (hpf::ValueId v : n.inputs) names.push_back(g->value(v).name);
  CHECK(names == std::vector<std::string>{"c", "y", "x", "d"});
  CHECK(std::get<int64_t>(n.attrs.at("num_captures")) == 3);
  CHECK(g->value(g->outputs()[0]).shape == hpf::Shape{3});
  // Every branch takes all the node's captures; the inner If captures y and x from its branch.
  const auto& else_g = *std::get<hpf::GraphAttr>(n.attrs.at("else_branch"));
  CHECK(else_g.inputs().size() == 3);
  const hpf::Node& inner = else_g.node(*else_g.find_node("inner"));
  CHECK(std::get<int64_t>(inner.attrs.at("num_captures")) == 2);
  CHECK(else_g.value(inner.inputs[0]).name == "d");

  auto run = [&](bool c, bool d) {
    auto b = [](bool v) { return std::move(Tensor::from_i64({}, std::vector<int64_t>{v}, DType::BOOL)).value(); };
    auto out = hpf::ref::run(*g, {std::move(Tensor::from_f32({3}, std::vector<float>{1, 2, 3})).value(), b(c), b(d)});
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    return (*out)[0].to_f32();
  };
  CHECK(run(true, false) == std::vector<float>{2, 6, 12});
  CHECK(run(false, true) == std::vector<float>{0, 2, 6});
  CHECK(run(false, false) == std::vector<float>{-1, -4, -9});

  // Closure conversion keeps dead-node removal honest: y is used only inside the branches.
  hpf::Graph copy = *g;
  CHECK(copy.remove_dead_nodes() == 0);
}

TEST_CASE("onnx: a subgraph reading a name nothing defines") {
  auto m = if_model();
  m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_input(1, "ghost");
  auto r = import(m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::invalid_argument);
  CHECK(r.status().message() ==
        "model.onnx: node 'if' (If): a subgraph reads 'ghost', which no enclosing graph defines before this node");
}

TEST_CASE("onnx: Loop with an untyped body input, a capture and a scan output left off") {
  auto m = new_model(16);
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {2});
  auto* trips = g->add_initializer();
  trips->set_name("M");
  trips->set_data_type(onnx::TensorProto::INT64);
  trips->add_int64_data(3);
  add_node(g, "Add", "twice", {"x", "x"}, {"w"});
  auto* loop = add_node(g, "Loop", "loop", {"M", "", "x"}, {"final"});
  auto* body = add_graph_attr(loop, "body");
  auto* i = body->add_input();
  i->set_name("i");
  i->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  add_bool_io(body->add_input(), "cond_in");
  body->add_input()->set_name("acc");  // no type: it is the type of x
  add_node(body, "Identity", "keep", {"cond_in"}, {"cond_out"});
  add_node(body, "Add", "step", {"acc", "w"}, {"next"});
  add_node(body, "Identity", "record", {"next"}, {"seen"});
  for (const char* o : {"cond_out", "next", "seen"}) body->add_output()->set_name(o);
  add_io(g->add_output(), "final", {2});

  auto r = import(m);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const hpf::Node& n = r->node(*r->find_node("loop"));
  CHECK(n.inputs.size() == 4);  // M, cond (absent), x, then the capture w
  CHECK(n.inputs[1] == hpf::kNoValue);
  CHECK(r->value(n.inputs[3]).name == "w");
  CHECK(n.outputs.size() == 2);  // the scan output the model left off has a name
  CHECK(r->value(n.outputs[1]).shape == hpf::Shape{3, 2});
  // final = x + 3 * (2x) = 7x.
  CHECK(run_f32(*r, {2}, {1, -2}) == std::vector<float>{7, -14});
}

TEST_CASE(
    "onnx: older forms: Scatter is ScatterElements, EyeLike to DOUBLE, RoiAlign before opset 16") {
  auto m = new_model(10);
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "data", {1, 3});
  auto* idx = g->add_initializer();
  idx->set_name("idx");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_dims(1);
  idx->add_dims(1);
  idx->add_int64_data(2);
  auto* upd = g->add_initializer();
  upd->set_name("upd");
  upd->set_data_type(onnx::TensorProto::FLOAT);
  upd->add_dims(1);
  upd->add_dims(1);
  upd->add_float_data(9);
  auto* sc = add_node(g, "Scatter", "sc", {"data", "idx", "upd"}, {"y"});
  auto* axis = sc->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  auto* eye = add_node(g, "EyeLike", "eye", {"data"}, {"e"});
  auto* dt = eye->add_attribute();
  dt->set_name("dtype");
  dt->set_type(onnx::AttributeProto::INT);
  dt->set_i(onnx::TensorProto::DOUBLE);
  add_io(g->add_output(), "y", {1, 3});
  add_io(g->add_output(), "e", {1, 3});
  auto r = import(m);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->node(*r->find_node("sc")).op == "ScatterElements");
  auto in = Tensor::from_f32({1, 3}, std::vector<float>{1, 2, 3});
  REQUIRE(in.ok());
  auto out = hpf::ref::run(*r, {*in});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  CHECK((*out)[0].to_f32() == std::vector<float>{1, 2, 9});
  CHECK((*out)[1].dtype() == DType::F32);
  CHECK((*out)[1].to_f32() == std::vector<float>{1, 0, 0});

  // RoiAlign at opset 10 had no coordinate_transformation_mode: it behaved as output_half_pixel.
  auto ra = new_model(10);
  auto* rg = ra.mutable_graph();
  add_io(rg->add_input(), "x", {1, 1, 2, 2});
  add_io(rg->add_input(), "rois", {1, 4});
  auto* bi = rg->add_initializer();
  bi->set_name("bi");
  bi->set_data_type(onnx::TensorProto::INT64);
  bi->add_dims(1);
  bi->add_int64_data(0);
  add_node(rg, "RoiAlign", "roi", {"x", "rois", "bi"}, {"y"});
  add_io(rg->add_output(), "y", {1, 1, 1, 1});
  auto rr = import(ra);
  REQUIRE_MESSAGE(rr.ok(), rr.status().to_string());
  const auto& attrs = rr->node(*rr->find_node("roi")).attrs;
  REQUIRE(attrs.count("coordinate_transformation_mode") == 1);
  CHECK(std::get<std::string>(attrs.at("coordinate_transformation_mode")) == "output_half_pixel");
}

}  // namespace
