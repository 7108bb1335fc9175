// ONNX import: models built with ONNX's protobuf API, imported and run on the reference
// interpreter; the error messages users see for bad files and unsupported ops.
#include "hpf/onnx.hpp"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
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

// ---- Older opset forms: each is imported and run, and checked against the newest form ----------

void attr_i(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_f(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_s(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr_is(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void init_f32(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<float>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}
void init_i64(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t x : v) t->add_int64_data(x);
}

// A one-node model at `opset`: float graph inputs `xs` (name, shape), the node, its outputs as
// graph outputs (their declared types do not matter to the importer).
struct OneNode {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  onnx::NodeProto* n;
};
OneNode one_node(int64_t opset, const std::vector<std::pair<std::string, std::vector<Dim>>>& xs,
                 const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  OneNode r{new_model(opset), nullptr, nullptr};
  r.g = r.m.mutable_graph();
  for (const auto& [name, dims] : xs) add_io(r.g->add_input(), name, dims);
  r.n = add_node(r.g, op, op, std::move(in), out);
  for (const auto& o : out) add_io(r.g->add_output(), o, {});
  return r;
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  auto t = Tensor::from_f32(std::move(shape), v);
  REQUIRE(t.ok());
  return std::move(t).value();
}

// Imports and runs `m`; every output decoded to float, with its shape.
struct Out {
  std::vector<int64_t> shape;
  DType dtype;
  std::vector<float> v;
  bool operator==(const Out&) const = default;
};
std::vector<Out> run_model(const onnx::ModelProto& m, std::vector<Tensor> in) {
  auto g = import(m);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto out = hpf::ref::run(*g, std::move(in));
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  std::vector<Out> r;
  for (const Tensor& t : *out) r.push_back({t.shape(), t.dtype(), t.to_f32()});
  return r;
}

std::string import_error(const onnx::ModelProto& m) {
  auto g = import(m);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == StatusCode::unsupported);
  return g.status().message();
}

TEST_CASE("onnx: opsets above 21 are refused, forms before opset 7 are read op by op") {
  auto m = one_node(22, {{"x", {2}}}, "Relu", {"x"}, {"y"});
  CHECK(import_error(m.m) == "model.onnx: default-domain (ai.onnx) opset 22 is not supported (libhpf reads opsets up to 21)");
  // Relu at opset 6 is Relu-6, today's form; at opset 1 it had consumed_inputs, ignored.
  auto relu = one_node(1, {{"x", {2}}}, "Relu", {"x"}, {"y"});
  attr_is(relu.n, "consumed_inputs", {0});
  CHECK(run_model(relu.m, {f32({2}, {-1, 2})})[0].v == std::vector<float>{0, 2});
  // Tile before opset 6 took (input, tiles, axis); the trigonometric ops did not exist before 7.
  auto tile = one_node(5, {{"x", {2}}, {"t", {}}, {"a", {}}}, "Tile", {"x", "t", "a"}, {"y"});
  CHECK(import_error(tile.m) ==
        "model.onnx: node 'Tile' (Tile): Tile at opset 5 is not supported (libhpf reads its form of opset 6 and later)");
  auto cos = one_node(6, {{"x", {2}}}, "Cos", {"x"}, {"y"});
  CHECK(import_error(cos.m) ==
        "model.onnx: node 'Cos' (Cos): Cos at opset 6 is not supported (libhpf reads its form of opset 7 and later)");
  // An attribute no form of the op has, at an old opset, is named.
  auto bad = one_node(9, {{"x", {2}}}, "Relu", {"x"}, {"y"});
  attr_i(bad.n, "consumed_inputs", 1);
  CHECK(import_error(bad.m) == "model.onnx: node 'Relu' (Relu): attribute 'consumed_inputs' (opset 9) is not supported");
}

TEST_CASE("onnx: forms before opset 7: legacy broadcast, Gemm broadcast, PRelu per channel, is_test, Cast names") {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  // Add-6 with broadcast=1, axis=1: B (3) lines up with A's dimension 1 of (2, 3, 2).
  auto add6 = one_node(6, {{"a", {2, 3, 2}}, {"b", {3}}}, "Add", {"a", "b"}, {"y"});
  attr_i(add6.n, "broadcast", 1);
  attr_i(add6.n, "axis", 1);
  auto add7 = one_node(7, {{"a", {2, 3, 2}}, {"b", {3, 1}}}, "Add", {"a", "b"}, {"y"});
  CHECK(run_model(add6.m, {f32({2, 3, 2}, a), f32({3}, {10, 20, 30})}) ==
        run_model(add7.m, {f32({2, 3, 2}, a), f32({3, 1}, {10, 20, 30})}));
  CHECK(run_model(add6.m, {f32({2, 3, 2}, a), f32({3}, {10, 20, 30})})[0].v[2] == 23);

  // Gemm-6 with broadcast=1 is Gemm-13.
  auto gemm6 = one_node(6, {{"a", {2, 2}}, {"b", {2, 2}}, {"c", {2}}}, "Gemm", {"a", "b", "c"}, {"y"});
  attr_i(gemm6.n, "broadcast", 1);
  auto gemm13 = one_node(13, {{"a", {2, 2}}, {"b", {2, 2}}, {"c", {2}}}, "Gemm", {"a", "b", "c"}, {"y"});
  const std::vector<Tensor> gin = {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 0, 0, 1}), f32({2}, {5, 6})};
  CHECK(run_model(gemm6.m, gin) == run_model(gemm13.m, gin));

  // PRelu-6: a slope of shape [C] applies per channel of (N, C, H).
  auto prelu6 = one_node(6, {{"x", {1, 2, 2}}, {"s", {2}}}, "PRelu", {"x", "s"}, {"y"});
  CHECK(run_model(prelu6.m, {f32({1, 2, 2}, {-1, -1, -1, 2}), f32({2}, {0.5f, 3})})[0].v ==
        std::vector<float>{-0.5f, -0.5f, -3, 2});

  // BatchNormalization-6 and Dropout-6: is_test=1 is inference; without it, training (refused).
  auto bn6 = one_node(6, {{"x", {1, 1, 2}}, {"s", {1}}, {"b", {1}}, {"m", {1}}, {"v", {1}}}, "BatchNormalization",
                      {"x", "s", "b", "m", "v"}, {"y"});
  CHECK(import_error(bn6.m) == "model.onnx: node 'BatchNormalization' (BatchNormalization): BatchNormalization at "
                               "opset 6: is_test=0 (training mode, the default before opset 7) is not supported");
  attr_i(bn6.n, "is_test", 1);
  attr_is(bn6.n, "consumed_inputs", {0, 0, 0, 1, 1});
  const std::vector<Tensor> bin = {f32({1, 1, 2}, {1, 3}), f32({1}, {2}), f32({1}, {1}), f32({1}, {2}), f32({1}, {1})};
  auto bn_out = run_model(bn6.m, bin)[0].v;
  CHECK(bn_out[0] == doctest::Approx(1 + 2 * -1 / std::sqrt(1 + 1e-5)));
  auto drop6 = one_node(6, {{"x", {2}}}, "Dropout", {"x"}, {"y", "mask"});
  attr_i(drop6.n, "is_test", 1);
  attr_f(drop6.n, "ratio", 0.3f);
  auto drop_out = run_model(drop6.m, {f32({2}, {1, 2})});
  CHECK(drop_out[0].v == std::vector<float>{1, 2});
  CHECK(drop_out[1].dtype == DType::F32);  // the mask had the input's type before opset 10

  // Cast-1 names the type; Concat-1's axis defaults to 1; Reshape-1 and Pad-1 take attributes.
  auto cast1 = one_node(1, {{"x", {2}}}, "Cast", {"x"}, {"y"});
  attr_s(cast1.n, "to", "INT32");
  auto cast_out = run_model(cast1.m, {f32({2}, {1.0f, -2.0f})})[0];
  CHECK(cast_out.dtype == DType::I32);
  CHECK(cast_out.v == std::vector<float>{1, -2});
  auto concat1 = one_node(1, {{"x", {1, 1}}, {"z", {1, 1}}}, "Concat", {"x", "z"}, {"y"});
  CHECK(run_model(concat1.m, {f32({1, 1}, {1}), f32({1, 1}, {2})})[0].shape == std::vector<int64_t>{1, 2});
  auto reshape1 = one_node(1, {{"x", {2, 2}}}, "Reshape", {"x"}, {"y"});
  attr_is(reshape1.n, "shape", {4, 1});
  CHECK(run_model(reshape1.m, {f32({2, 2}, {1, 2, 3, 4})})[0].shape == std::vector<int64_t>{4, 1});
  auto pad1 = one_node(1, {{"x", {2}}}, "Pad", {"x"}, {"y"});
  attr_is(pad1.n, "paddings", {1, 2});
  attr_f(pad1.n, "value", 7);
  CHECK(run_model(pad1.m, {f32({2}, {1, 2})})[0].v == std::vector<float>{7, 1, 2, 7, 7});
}

// Resize-10 (X, scales) with scales from a Constant node, as PyTorch exports nn.Upsample at
// opset 10.
OneNode resize10(const std::string& mode, std::vector<float> scales) {
  auto r = one_node(10, {{"x", {1, 1, 2, 4}}}, "Resize", {"x", "scales"}, {"y"});
  auto* c = r.g->add_node();
  c->set_op_type("Constant");
  c->add_output("scales");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(4);
  for (float s : scales) a->mutable_t()->add_float_data(s);
  r.g->mutable_node()->SwapElements(0, 1);  // the Constant first
  r.n = r.g->mutable_node(1);
  attr_s(r.n, "mode", mode);
  return r;
}

TEST_CASE("onnx: Resize-10 is asymmetric, its nearest floors when enlarging and ceils when shrinking") {
  const Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // ONNX's opset-10 backend tests: upsample nearest (1,1,2,3)... here on 2x4; downsample 0.6.
  auto up = run_model(resize10("nearest", {1, 1, 2, 1.5f}).m, {x})[0];
  CHECK(up.shape == std::vector<int64_t>{1, 1, 4, 6});
  CHECK(std::vector<float>(up.v.begin(), up.v.begin() + 6) == std::vector<float>{1, 1, 2, 3, 3, 4});
  auto down = run_model(resize10("nearest", {1, 1, 0.6f, 0.6f}).m, {x})[0];
  CHECK(down.shape == std::vector<int64_t>{1, 1, 1, 2});
  CHECK(down.v == std::vector<float>{1, 3});
  auto lin_down = run_model(resize10("linear", {1, 1, 0.6f, 0.6f}).m, {x})[0];
  CHECK(lin_down.v[0] == 1);
  CHECK(lin_down.v[1] == doctest::Approx(2.6666665f));
  // Mixed: rows shrink (ceil), columns grow (floor); the same as the two resizes done apart.
  auto mixed = run_model(resize10("nearest", {1, 1, 0.5f, 2}).m, {x})[0];
  CHECK(mixed.v == std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4});

  // The newest form with the same meaning gives the same result.
  auto newest = one_node(13, {{"x", {1, 1, 2, 4}}}, "Resize", {"x", "", "s"}, {"y"});
  init_f32(newest.g, "s", {4}, {1, 1, 2, 1.5f});
  attr_s(newest.n, "coordinate_transformation_mode", "asymmetric");
  attr_s(newest.n, "nearest_mode", "floor");
  CHECK(run_model(newest.m, {x})[0] == up);

  // Scales known only at run time take the same path, split at run time.
  auto dyn = one_node(10, {{"x", {1, 1, 2, 4}}, {"s", {4}}}, "Resize", {"x", "s"}, {"y"});
  CHECK(run_model(dyn.m, {x, f32({4}, {1, 1, 0.5f, 2})})[0].v == mixed.v);
  CHECK(run_model(dyn.m, {x, f32({4}, {1, 1, 0.6f, 0.6f})})[0].v == down.v);

  // Resize-10 had only `mode`.
  auto extra = resize10("nearest", {1, 1, 2, 2});
  attr_s(extra.n, "coordinate_transformation_mode", "half_pixel");
  CHECK(import_error(extra.m) ==
        "model.onnx: node 'Resize' (Resize): attribute 'coordinate_transformation_mode' (opset 10) is not supported");
}

TEST_CASE("onnx: Hardmax before opset 13 works on the input flattened to 2-D at axis") {
  auto h11 = one_node(11, {{"x", {1, 2, 2}}}, "Hardmax", {"x"}, {"y"});
  auto out = run_model(h11.m, {f32({1, 2, 2}, {1, 3, 2, 0})})[0];
  CHECK(out.shape == std::vector<int64_t>{1, 2, 2});
  CHECK(out.v == std::vector<float>{0, 1, 0, 0});  // one maximum over all four
  auto h13 = one_node(13, {{"x", {1, 4}}}, "Hardmax", {"x"}, {"y"});
  CHECK(run_model(h13.m, {f32({1, 4}, {1, 3, 2, 0})})[0].v == out.v);
}

TEST_CASE("onnx: BatchNormalization before opset 9: spatial") {
  const std::vector<float> xs = {1, 2, 3, 4, 5, 6, 7, 8};
  auto bn = [](int64_t opset, std::optional<int64_t> spatial, std::vector<Dim> pshape) {
    auto r = one_node(opset, {{"x", {2, 2, 2}}, {"s", pshape}, {"b", pshape}, {"m", pshape}, {"v", pshape}},
                      "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
    if (spatial) attr_i(r.n, "spatial", *spatial);
    attr_f(r.n, "epsilon", 0.25f);
    return r;
  };
  // spatial=1 is the later form.
  const std::vector<Tensor> per_c = {f32({2, 2, 2}, xs), f32({2}, {2, 3}), f32({2}, {1, -1}), f32({2}, {1, 2}),
                                     f32({2}, {0.75f, 3.75f})};
  CHECK(run_model(bn(7, 1, {2}).m, per_c) == run_model(bn(15, std::nullopt, {2}).m, per_c));
  // spatial=0: statistics per activation, shape (C, D1).
  const std::vector<Tensor> per_a = {f32({2, 2, 2}, xs), f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {0, 1, 0, 1}),
                                     f32({2, 2}, {1, 1, 2, 2}), f32({2, 2}, {0.75f, 3.75f, 0.75f, 3.75f})};
  auto y = run_model(bn(8, 0, {2, 2}).m, per_a)[0];
  CHECK(y.shape == std::vector<int64_t>{2, 2, 2});
  // y = (x - m) * s / sqrt(v + 0.25) + b, elementwise over (C, D1), repeated over N.
  const std::vector<float> want = {0, 1 + 2 * 1 / 2.0f, 3 * 1 / 1.0f, 1 + 4 * 2 / 2.0f,
                                   4, 1 + 2 * 5 / 2.0f, 3 * 5 / 1.0f, 1 + 4 * 6 / 2.0f};
  for (size_t k = 0; k < want.size(); ++k) CHECK(y.v[k] == doctest::Approx(want[k]));
  // spatial is gone from opset 9.
  CHECK(import_error(bn(9, 1, {2}).m) ==
        "model.onnx: node 'BatchNormalization' (BatchNormalization): attribute 'spatial' (opset 9) is not supported");
}

TEST_CASE("onnx: attributes that became inputs give the newest form's results") {
  const std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  const Tensor x = f32({2, 3}, xs);
  // Slice-1 attributes vs Slice-13 inputs.
  auto s1 = one_node(9, {{"x", {2, 3}}}, "Slice", {"x"}, {"y"});
  attr_is(s1.n, "starts", {0, 1});
  attr_is(s1.n, "ends", {1, 1000});
  attr_is(s1.n, "axes", {0, -1});
  auto s13 = one_node(13, {{"x", {2, 3}}}, "Slice", {"x", "st", "en", "ax"}, {"y"});
  init_i64(s13.g, "st", {2}, {0, 1});
  init_i64(s13.g, "en", {2}, {1, 1000});
  init_i64(s13.g, "ax", {2}, {0, -1});
  CHECK(run_model(s1.m, {x}) == run_model(s13.m, {x}));
  CHECK(run_model(s1.m, {x})[0].v == std::vector<float>{2, 3});

  // Squeeze/Unsqueeze-11 axes attribute vs the 13 input.
  auto u11 = one_node(11, {{"x", {2, 3}}}, "Unsqueeze", {"x"}, {"y"});
  attr_is(u11.n, "axes", {0, -1});
  auto u13 = one_node(13, {{"x", {2, 3}}}, "Unsqueeze", {"x", "ax"}, {"y"});
  init_i64(u13.g, "ax", {2}, {0, -1});
  CHECK(run_model(u11.m, {x}) == run_model(u13.m, {x}));
  CHECK(run_model(u11.m, {x})[0].shape == std::vector<int64_t>{1, 2, 3, 1});
  auto q11 = one_node(11, {{"x", {1, 3, 1}}}, "Squeeze", {"x"}, {"y"});
  attr_is(q11.n, "axes", {-1});
  auto q13 = one_node(13, {{"x", {1, 3, 1}}}, "Squeeze", {"x", "ax"}, {"y"});
  init_i64(q13.g, "ax", {1}, {-1});
  const Tensor x131 = f32({1, 3, 1}, {1, 2, 3});
  CHECK(run_model(q11.m, {x131}) == run_model(q13.m, {x131}));
  CHECK(run_model(q11.m, {x131})[0].shape == std::vector<int64_t>{1, 3});

  // Pad-2 attributes (pads, value, mode) vs Pad-13 inputs.
  for (const char* mode : {"constant", "reflect", "edge"}) {
    CAPTURE(mode);
    auto p2 = one_node(9, {{"x", {2, 3}}}, "Pad", {"x"}, {"y"});
    attr_s(p2.n, "mode", mode);
    attr_is(p2.n, "pads", {0, 2, 1, 1});
    attr_f(p2.n, "value", 1.5f);
    auto p13 = one_node(13, {{"x", {2, 3}}}, "Pad", {"x", "pads", "value"}, {"y"});
    attr_s(p13.n, "mode", mode);
    init_i64(p13.g, "pads", {4}, {0, 2, 1, 1});
    init_f32(p13.g, "value", {}, {1.5f});
    CHECK(run_model(p2.m, {x}) == run_model(p13.m, {x}));
  }

  // Split-11 split attribute vs the 13 input.
  auto sp11 = one_node(11, {{"x", {2, 3}}}, "Split", {"x"}, {"a", "b"});
  attr_i(sp11.n, "axis", -1);
  attr_is(sp11.n, "split", {1, 2});
  auto sp13 = one_node(13, {{"x", {2, 3}}}, "Split", {"x", "sp"}, {"a", "b"});
  attr_i(sp13.n, "axis", -1);
  init_i64(sp13.g, "sp", {2}, {1, 2});
  CHECK(run_model(sp11.m, {x}) == run_model(sp13.m, {x}));
  CHECK(run_model(sp11.m, {x})[1].v == std::vector<float>{2, 3, 5, 6});

  // ReduceSum-11 (axes attribute) vs 13 (input); ReduceMean-17 vs 18; no axes: all of them.
  for (auto [op, old_opset, new_opset] : {std::tuple{"ReduceSum", 11, 13}, std::tuple{"ReduceMean", 17, 18},
                                           std::tuple{"ReduceMax", 12, 18}}) {
    CAPTURE(op);
    auto r_old = one_node(old_opset, {{"x", {2, 3}}}, op, {"x"}, {"y"});
    attr_is(r_old.n, "axes", {-1});
    attr_i(r_old.n, "keepdims", 0);
    auto r_new = one_node(new_opset, {{"x", {2, 3}}}, op, {"x", "ax"}, {"y"});
    init_i64(r_new.g, "ax", {1}, {-1});
    attr_i(r_new.n, "keepdims", 0);
    CHECK(run_model(r_old.m, {x}) == run_model(r_new.m, {x}));
    auto all_old = one_node(old_opset, {{"x", {2, 3}}}, op, {"x"}, {"y"});
    auto all_new = one_node(new_opset, {{"x", {2, 3}}}, op, {"x"}, {"y"});
    CHECK(run_model(all_old.m, {x}) == run_model(all_new.m, {x}));
    CHECK(run_model(all_old.m, {x})[0].shape == std::vector<int64_t>{1, 1});
  }

  // TopK-1 (k attribute) vs TopK-11 (k input).
  auto t1 = one_node(9, {{"x", {2, 3}}}, "TopK", {"x"}, {"v", "i"});
  attr_i(t1.n, "k", 2);
  auto t11 = one_node(11, {{"x", {2, 3}}}, "TopK", {"x", "k"}, {"v", "i"});
  init_i64(t11.g, "k", {1}, {2});
  CHECK(run_model(t1.m, {x}) == run_model(t11.m, {x}));
  CHECK(run_model(t1.m, {x})[1].v == std::vector<float>{2, 1, 2, 1});

  // Clip-6 (min/max attributes) vs Clip-11 (inputs); either bound alone.
  auto c6 = one_node(9, {{"x", {2, 3}}}, "Clip", {"x"}, {"y"});
  attr_f(c6.n, "min", 2);
  attr_f(c6.n, "max", 4.5f);
  auto c11 = one_node(11, {{"x", {2, 3}}}, "Clip", {"x", "lo", "hi"}, {"y"});
  init_f32(c11.g, "lo", {}, {2});
  init_f32(c11.g, "hi", {}, {4.5f});
  CHECK(run_model(c6.m, {x}) == run_model(c11.m, {x}));
  CHECK(run_model(c6.m, {x})[0].v == std::vector<float>{2, 2, 3, 4, 4.5f, 4.5f});
  auto c6max = one_node(9, {{"x", {2, 3}}}, "Clip", {"x"}, {"y"});
  attr_f(c6max.n, "max", 3);
  CHECK(run_model(c6max.m, {x})[0].v == std::vector<float>{1, 2, 3, 3, 3, 3});

  // Dropout-7 ratio attribute and a mask in the input's type; Dropout-10's mask is bool.
  auto d7 = one_node(7, {{"x", {2, 3}}}, "Dropout", {"x"}, {"y", "mask"});
  attr_f(d7.n, "ratio", 0.25f);
  auto d7_out = run_model(d7.m, {x});
  CHECK(d7_out[0].v == xs);
  CHECK(d7_out[1].dtype == DType::F32);
  CHECK(d7_out[1].v == std::vector<float>(6, 1.0f));
  auto d10 = one_node(10, {{"x", {2, 3}}}, "Dropout", {"x"}, {"y", "mask"});
  attr_f(d10.n, "ratio", 0.25f);
  auto d10_out = run_model(d10.m, {x});
  CHECK(d10_out[0] == d7_out[0]);
  CHECK(d10_out[1].dtype == DType::BOOL);
}

}  // namespace

namespace {

TEST_CASE("onnx: an attribute of the wrong type is an error naming it (found by the fuzzer)") {
  for (int64_t opset : {11, 13}) {  // pre-13 Softmax is translated, reading axis on the way
    CAPTURE(opset);
    auto m = new_model(opset);
    auto* g = m.mutable_graph();
    add_io(g->add_input(), "x", {2, 3});
    auto* n = add_node(g, "Softmax", "sm", {"x"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(1.0f);
    add_io(g->add_output(), "y", {2, 3});
    auto r = import(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "model.onnx: node 'sm' (Softmax): attribute 'axis' is float, expected int");
  }
}

}  // namespace
