// plan_from_policy: which rule decides each node, modes to formats, fallbacks on a device.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "hpf/models.hpp"
#include "hpf/precision.hpp"

using namespace hpf;

namespace {

Graph model(const char* name) {
  auto g = models::builtin(name);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

Plan plan_for(const Graph& g, const char* policy, const DeviceFormats& d,
              std::vector<Fallback>* fb = nullptr) {
  auto p = Policy::from_json(policy);
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  auto plan = plan_from_policy(g, *p, d, fb);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  REQUIRE(plan->nodes.size() == g.nodes().size());
  return std::move(plan).value();
}

const NodePlan& node(const Plan& p, const std::string& name) {
  const NodePlan* n = p.find(name);
  REQUIRE_MESSAGE(n, "no node " << name);
  return *n;
}

// A GPU-like device: every float format and int8/fp8 compute.
DeviceFormats full_device() {
  DeviceFormats d;
  d.storage = {DType::F32,    DType::TF32, DType::BF16, DType::F16,
               DType::F8E4M3, DType::I8,   DType::I4};
  d.int8_compute = d.fp8_compute = true;
  return d;
}

DeviceFormats float_device() {
  DeviceFormats d;
  d.storage = {DType::F32, DType::BF16, DType::F16};
  return d;
}

}  // namespace

TEST_CASE("plan_from_policy: bert-tiny with attention fp16, ffn bf16, embedding fp32") {
  const Graph g = model("bert-tiny");
  std::vector<Fallback> fb;
  const Plan p = plan_for(g, R"({"attention": "fp16", "ffn": "bf16", "embedding": "fp32"})",
                          float_device(), &fb);
  CHECK(fb.empty());
  CHECK(p.graph == "bert");
  CHECK(p.check_matches(g).ok());
  std::map<NodeClass, int> count;
  for (const NodePlan& n : p.nodes) {
    CAPTURE(n.name);
    ++count[n.node_class];
    CHECK(n.accumulation == DType::F32);
    CHECK_FALSE(n.weight_quant);
    CHECK(n.predicted_ms == -1);
    CHECK(n.measured_ms == -1);
    CHECK(n.sensitivity == -1);
    switch (n.node_class) {
      case NodeClass::attention:
        CHECK(n.mode == Mode::fp16);
        CHECK(n.storage == DType::F16);
        break;
      case NodeClass::ffn:
        CHECK(n.mode == Mode::bf16);
        CHECK(n.storage == DType::BF16);
        CHECK(n.weights == DType::BF16);
        break;
      default:
        CHECK(n.mode == Mode::fp32);
        CHECK(n.storage == DType::F32);
    }
  }
  CHECK(count[NodeClass::attention] == 6);
  CHECK(count[NodeClass::ffn] == 6);
  CHECK(node(p, "layer0/attention/softmax").storage == DType::F16);
  CHECK(node(p, "layer1/ffn/down/matmul").storage == DType::BF16);
  CHECK(node(p, "embeddings/gather").mode == Mode::fp32);
}

TEST_CASE(
    "plan_from_policy: node globs beat op-type lists, which beat classes, which beat the default") {
  const Graph g = model("bert-tiny");
  const Plan p = plan_for(g, R"({"default": "bf16", "output": "fp32", "attention": "fp16",
      "nodes": {"layer0/*": "fp16", "layer0/attention/softmax": "fp32", "layer1/attention/softmax": "bf16"},
      "never": ["Softmax", "LayerNormalization"], "follow": ["Reshape", "Transpose"], "lower": ["Gelu"],
      "lower_to": "fp16"})",
                          float_device());
  CHECK(node(p, "layer0/attention/query/matmul").mode == Mode::fp16);  // glob
  CHECK(node(p, "layer0/attention/norm").mode == Mode::fp16);          // glob beats "never"
  CHECK(node(p, "layer0/attention/softmax").mode == Mode::fp32);       // the later glob wins
  CHECK(node(p, "layer1/attention/softmax").mode == Mode::bf16);
  CHECK(node(p, "layer1/attention/norm").mode == Mode::fp32);          // never
  CHECK(node(p, "layer1/ffn/gelu").mode == Mode::fp16);                // lower, to lower_to
  CHECK(node(p, "layer1/attention/qk").mode == Mode::fp16);            // class
  CHECK(node(p, "layer1/attention/query/matmul").mode == Mode::bf16);  // default
  CHECK(node(p, "classifier/bias_add").mode == Mode::fp32);            // output class
  CHECK(node(p, "last_hidden_state").mode == Mode::fp32);
  // follow: the split takes the query projection's mode, the head transpose the split's.
  CHECK(node(p, "layer1/attention/q_split").mode == Mode::bf16);
  CHECK(node(p, "layer1/attention/q_heads").mode == Mode::bf16);
  CHECK(node(p, "layer1/attention/merge_heads").mode == Mode::fp16);  // after av (attention)
  CHECK(node(p, "layer1/attention/merge_heads").storage == DType::F16);
}

TEST_CASE(
    "plan_from_policy: lower without lower_to takes the class's mode, else the default, else "
    "bf16") {
  const Graph g = model("mlp");
  CHECK(
      node(plan_for(g, R"({"lower": ["Relu"], "ffn": "fp16"})", float_device()), "fc1/relu").mode ==
      Mode::bf16);
  CHECK(
      node(plan_for(g, R"({"lower": ["Relu"], "elementwise": "fp16"})", float_device()), "fc1/relu")
          .mode == Mode::fp16);
  CHECK(node(plan_for(g, R"({"lower": ["Relu"], "default": "fp16", "elementwise": "fp32"})",
                      float_device()),
             "fc1/relu")
            .mode == Mode::fp16);
  // follow from a graph input: fp32.
  CHECK(node(plan_for(g, R"({"default": "fp16", "follow": ["MatMul"]})", float_device()),
             "fc1/matmul")
            .mode == Mode::fp32);
}

TEST_CASE("plan_from_policy: int8 on a device without int8 falls back, naming node and reason") {
  const Graph g = model("bert-tiny");
  std::vector<Fallback> fb;
  DeviceFormats bf16_only;
  bf16_only.storage = {DType::F32, DType::BF16};
  const Plan p =
      plan_for(g, R"({"ffn": "int8", "attention": "fp8", "norm": "fp16", "default": "fp32"})",
               bf16_only, &fb);
  const NodePlan& up = node(p, "layer0/ffn/up/matmul");
  CHECK(up.mode == Mode::bf16);
  CHECK(up.storage == DType::BF16);
  CHECK(up.accumulation == DType::F32);
  CHECK_FALSE(up.weight_quant);
  CHECK(node(p, "layer0/attention/qk").mode == Mode::bf16);    // fp8 -> fp16 (absent) -> bf16
  CHECK(node(p, "layer0/attention/norm").mode == Mode::bf16);  // fp16 -> bf16
  std::map<std::string, const Fallback*> by_node;
  for (const Fallback& f : fb) by_node[f.node] = &f;
  CHECK(fb.size() == 6 + 6 + 5);  // every ffn, attention and norm node
  REQUIRE(by_node.count("layer0/ffn/up/matmul"));
  CHECK(by_node["layer0/ffn/up/matmul"]->wanted == Mode::int8);
  CHECK(by_node["layer0/ffn/up/matmul"]->used == Mode::bf16);
  CHECK(by_node["layer0/ffn/up/matmul"]->reason == "the device has no int8 compute");
  CHECK(by_node["layer1/attention/softmax"]->reason == "the device has no fp8 compute");
  CHECK(by_node["embeddings/norm"]->reason == "the device has no f16 storage");

  // Nothing but FP32: everything ends there.
  fb.clear();
  const Plan f32 = plan_for(g, R"({"default": "int8"})", DeviceFormats{}, &fb);
  for (const NodePlan& n : f32.nodes) CHECK(n.mode == Mode::fp32);
  CHECK(fb.size() == f32.nodes.size());
}

TEST_CASE("plan_from_policy: int8 formats and granularity; only matmul and conv ops take it") {
  std::vector<Fallback> fb;
  const Graph cnn = model("cnn-small");
  const Plan p = plan_for(cnn, R"({"default": "int8"})", full_device(), &fb);
  const NodePlan& conv = node(p, "stem/conv");
  CHECK(conv.mode == Mode::int8);
  CHECK(conv.storage == DType::I8);
  CHECK(conv.weights == DType::I8);
  CHECK(conv.accumulation == DType::I32);
  REQUIRE(conv.weight_quant);
  CHECK(conv.weight_quant->type == DType::I8);
  CHECK(conv.weight_quant->axis == 0);  // output channels of OIHW
  CHECK(conv.weight_quant->scales.empty());
  REQUIRE(conv.activation_quant);
  CHECK(conv.activation_quant->axis == -1);
  CHECK(node(p, "fc").weight_quant->axis == 0);  // Gemm with transB: B is [N, K]
  // Elementwise and normalisation ops fall back to bf16 (the device has it).
  CHECK(node(p, "stem/relu").mode == Mode::bf16);
  CHECK(node(p, "stem/bn").mode == Mode::bf16);
  bool relu_reason = false;
  for (const Fallback& f : fb)
    relu_reason |= f.node == "stem/relu" &&
                   f.reason == "int8 applies to matmul and conv ops only" && f.used == Mode::bf16;
  CHECK(relu_reason);

  const Graph mlp = model("mlp");
  const Plan m = plan_for(mlp, R"({"ffn": "int8"})", full_device());
  CHECK(node(m, "fc1/matmul").weight_quant->axis == 1);  // MatMul B is [K, N]
  CHECK(node(m, "fc1/bias_add").mode == Mode::fp32);
  // No MatMul, Gemm or Conv reads fc1's or fc2's output: both keep float outputs (INT32
  // accumulation, no activation scale), unlike the Convs above, whose outputs Convs read.
  for (const char* mm : {"fc1/matmul", "fc2/matmul"}) {
    CAPTURE(mm);
    CHECK(node(m, mm).mode == Mode::int8);
    CHECK(node(m, mm).accumulation == DType::I32);
    CHECK(node(m, mm).storage == DType::F32);
    CHECK_FALSE(node(m, mm).activation_quant);
  }
  // A MatMul feeding a MatMul stores INT8 for it.
  GraphBuilder b("chain");
  auto x = b.input("x", DType::F32, {4, 8});
  auto h = b.op1("MatMul", {x, b.constant("w1", *Tensor::from_f32({8, 8}, std::vector<float>(64, 0.5f)))}, {}, "mm1");
  b.output(b.op1("MatMul", {h, b.constant("w2", *Tensor::from_f32({8, 2}, std::vector<float>(16, 0.5f)))}, {}, "mm2"));
  const Plan c = plan_for(*b.build(), R"({"default": "int8"})", full_device());
  CHECK(node(c, "mm1").storage == DType::I8);
  CHECK(node(c, "mm1").activation_quant);
  CHECK(node(c, "mm2").storage == DType::F32);
  CHECK_FALSE(node(c, "mm2").activation_quant);
}

TEST_CASE("plan_from_policy: fp8 and int4 weights") {
  const Graph g = model("bert-tiny");
  std::vector<Fallback> fb;
  const Plan p =
      plan_for(g, R"({"ffn": "int4-weights", "attention": "fp8", "embedding": "int4-weights",
                                 "elementwise": "int4-weights"})",
               full_device(), &fb);
  // int4-weights on nodes without weights is plain fp32, no warning; Softmax has no fp8 kernel.
  REQUIRE(fb.size() == 2);
  for (const Fallback& f : fb) {
    CHECK(f.node.find("/attention/softmax") != std::string::npos);
    CHECK(f.reason == "Softmax has no f8e4m3 kernel");
    CHECK(f.used == Mode::fp16);
  }
  const NodePlan& up = node(p, "layer0/ffn/up/matmul");
  CHECK(up.mode == Mode::int4_weights);
  CHECK(up.storage == DType::F32);
  CHECK(up.weights == DType::I4);
  REQUIRE(up.weight_quant);
  CHECK(up.weight_quant->type == DType::I4);
  CHECK(up.weight_quant->group_size == 32);
  CHECK_FALSE(up.activation_quant);
  CHECK(node(p, "embeddings/gather").weights == DType::I4);
  CHECK(node(p, "layer0/ffn/gelu").mode == Mode::fp32);
  const NodePlan& qk = node(p, "layer0/attention/qk");
  CHECK(qk.mode == Mode::fp8);
  CHECK(qk.storage == DType::F8E4M3);
  CHECK_FALSE(qk.weight_quant);  // two activations: no weights
  REQUIRE(qk.activation_quant);
  CHECK(qk.activation_quant->type == DType::F8E4M3);
  CHECK(node(p, "layer0/attention/softmax").mode == Mode::fp16);

  DeviceFormats no_i4 = full_device();
  no_i4.storage = {DType::F32, DType::BF16};
  fb.clear();
  const Plan q = plan_for(g, R"({"ffn": "int4-weights"})", no_i4, &fb);
  CHECK(node(q, "layer0/ffn/up/matmul").mode == Mode::fp32);
  CHECK(node(q, "layer0/ffn/up/matmul").weights == DType::F32);
  CHECK(fb.size() == 6);
  CHECK(fb[0].reason == "the device has no i4 storage");
}

TEST_CASE("plan_from_policy: shape arithmetic stays as it is; auto is left to the planner") {
  GraphBuilder b("shapes");
  auto x = b.input("x", DType::F32, {2, 3});
  auto shape = b.op1("Shape", {x}, {}, "shape");
  auto y = b.op1("Reshape", {b.op1("Relu", {x}, {}, "relu"), shape}, {}, "reshape");
  b.output(b.op1("Tanh", {y}, {}, "out"));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  std::vector<Fallback> fb;
  const Plan p = plan_for(*g, R"({"default": "fp16", "elementwise": "auto"})", float_device(), &fb);
  CHECK(fb.empty());
  CHECK(node(p, "shape").mode == Mode::fp32);
  CHECK(node(p, "shape").storage == DType::F32);
  CHECK(node(p, "reshape").mode == Mode::fp16);
  CHECK(node(p, "relu").mode == Mode::auto_);
  CHECK(node(p, "relu").storage == DType::F32);
}

TEST_CASE("never_negative: Relu, Clip from 0 up and what passes them through") {
  GraphBuilder b("nn");
  auto x = b.input("x", DType::F32, {1, 4, 6, 6});
  auto relu = b.op1("Relu", {x}, {}, "relu");
  auto pool = b.op1("MaxPool", {relu}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, "pool");
  auto flat = b.op1("Flatten", {pool}, {}, "flat");
  auto clip0 = b.op1("Clip", {x, b.constant("lo0", Tensor::scalar_f32(0.0f)), b.constant("hi", Tensor::scalar_f32(6.0f))}, {}, "clip0");
  auto clipn = b.op1("Clip", {x, b.constant("lon", Tensor::scalar_f32(-1.0f))}, {}, "clipn");
  auto clip_none = b.op1("Clip", {x}, {}, "clip_none");
  auto cat = b.op1("Concat", {relu, clip0}, {{"axis", int64_t{1}}}, "cat");
  auto mixed = b.op1("Concat", {relu, x}, {{"axis", int64_t{1}}}, "mixed");
  auto add = b.op1("Add", {relu, relu}, {}, "add");
  int k = 0;
  for (ValueId v : {flat, clipn, clip_none, cat, mixed, add}) b.output(v, "y" + std::to_string(k++));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(never_negative(*g, relu));
  CHECK(never_negative(*g, pool));
  CHECK(never_negative(*g, flat));
  CHECK(never_negative(*g, clip0));
  CHECK(never_negative(*g, cat));
  CHECK(!never_negative(*g, x));          // a graph input
  CHECK(!never_negative(*g, clipn));      // min -1
  CHECK(!never_negative(*g, clip_none));  // no min
  CHECK(!never_negative(*g, mixed));      // one input may be negative
  CHECK(!never_negative(*g, add));        // not followed through arithmetic
}
