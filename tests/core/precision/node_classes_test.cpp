// classify_nodes on the built-in models and on small graphs written for one pattern each.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "hpf/models.hpp"
#include "hpf/precision.hpp"

using namespace hpf;

namespace {

std::map<std::string, int> class_counts(const Graph& g) {
  std::map<std::string, int> n;
  for (NodeClass c : classify_nodes(g)) ++n[node_class_name(c)];
  return n;
}

NodeClass class_of(const Graph& g, const std::string& node) {
  auto id = g.find_node(node);
  REQUIRE_MESSAGE(id, "no node " << node);
  return classify_nodes(g)[*id];
}

Tensor filled(std::vector<int64_t> shape, float v) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return std::move(Tensor::from_f32(std::move(shape), std::vector<float>(n, v))).value();
}

}  // namespace

TEST_CASE("classes: bert-tiny, per class, from the model's definition") {
  auto g = models::builtin("bert-tiny");
  REQUIRE(g.ok());
  // Per layer: qk, softmax, av (attention); ffn up/down (ffn); two LayerNorms; 10 elementwise
  // (q/k/v/output/up/down bias adds, scale, gelu, two residuals); 12 other (q/k/v/output
  // projections, 3 splits, 3 head transposes, merge transpose and reshape). Around the layers:
  // the embedding Gather, its position Add and LayerNorm; the pooler dense + tanh and the
  // classifier (a two-projection head: ffn); the Identity and the classifier's bias Add produce
  // the outputs; the first-token Gather reads activations (other).
  auto n = class_counts(*g);
  CHECK(n["attention"] == 2 * 3);
  CHECK(n["ffn"] == 2 * 2 + 2);
  CHECK(n["norm"] == 2 * 2 + 1);
  CHECK(n["embedding"] == 1);
  CHECK(n["output"] == 2);
  CHECK(n["elementwise"] == 2 * 10 + 1 + 2);
  CHECK(n["other"] == 2 * 12 + 1);
  CHECK(n["softmax"] == 0);
  CHECK(n["conv"] == 0);
  CHECK(class_of(*g, "layer1/attention/qk") == NodeClass::attention);
  CHECK(class_of(*g, "layer1/attention/softmax") == NodeClass::attention);
  CHECK(class_of(*g, "layer1/attention/av") == NodeClass::attention);
  CHECK(class_of(*g, "layer1/attention/scale") == NodeClass::elementwise);
  CHECK(class_of(*g, "layer1/attention/query/matmul") == NodeClass::other);
  CHECK(class_of(*g, "layer0/ffn/up/matmul") == NodeClass::ffn);
  CHECK(class_of(*g, "layer0/ffn/down/matmul") == NodeClass::ffn);
  CHECK(class_of(*g, "layer0/ffn/gelu") == NodeClass::elementwise);
  CHECK(class_of(*g, "embeddings/gather") == NodeClass::embedding);
  CHECK(class_of(*g, "pooler/first_token") == NodeClass::other);
  CHECK(class_of(*g, "last_hidden_state") == NodeClass::output);
  CHECK(class_of(*g, "classifier/bias_add") == NodeClass::output);
  CHECK(class_of(*g, "classifier/matmul") == NodeClass::ffn);
}

TEST_CASE("classes: bert-layer, cnn-small and mlp") {
  auto bert = models::builtin("bert-layer");
  REQUIRE(bert.ok());
  auto b = class_counts(*bert);
  CHECK(b["attention"] == 3);
  CHECK(b["ffn"] == 4);
  CHECK(b["norm"] == 3);
  CHECK(b["elementwise"] == 13);
  CHECK(b["other"] == 13);

  auto cnn = models::builtin("cnn-small");
  REQUIRE(cnn.ok());
  auto c = class_counts(*cnn);
  CHECK(c["conv"] == 4);
  CHECK(c["norm"] == 4);         // BatchNormalization after every conv
  CHECK(c["elementwise"] == 6);  // 4 Relus, the residual Add, GlobalAveragePool
  CHECK(c["other"] == 2);        // MaxPool, Flatten
  CHECK(c["output"] == 1);       // the Gemm producing the logits
  CHECK(c["ffn"] == 0);
  CHECK(class_of(*cnn, "fc") == NodeClass::output);

  auto mlp = models::builtin("mlp");
  REQUIRE(mlp.ok());
  CHECK(class_of(*mlp, "fc1/matmul") == NodeClass::ffn);
  CHECK(class_of(*mlp, "fc2/matmul") == NodeClass::ffn);
  CHECK(class_of(*mlp, "fc1/relu") == NodeClass::elementwise);
  CHECK(class_of(*mlp, "fc2/bias_add") == NodeClass::output);
}

TEST_CASE("classes: masked attention with Div scaling; a classifier softmax is not attention") {
  GraphBuilder b("attn");
  auto q = b.input("q", DType::F32, {1, 4, 8});
  auto k = b.input("k", DType::F32, {1, 8, 4});
  auto v = b.input("v", DType::F32, {1, 4, 8});
  auto mask = b.input("mask", DType::F32, {1, 4, 4});
  auto s = b.op1("MatMul", {q, k}, {}, "qk");
  s = b.op1("Div", {s, b.scalar(2.0f)}, {}, "scale");
  s = b.op1("Add", {s, mask}, {}, "mask");
  auto p = b.op1("Softmax", {s}, {{"axis", int64_t{2}}}, "probs");
  auto ctx = b.op1("MatMul", {p, v}, {}, "pv");
  // A classifier head: MatMul -> Add -> Softmax, nothing multiplies the probabilities.
  auto w = b.constant("head/w", filled({8, 3}, 0.1f));
  auto logits =
      b.op1("Add", {b.op1("MatMul", {ctx, w}, {}, "head"), b.constant("head/b", filled({3}, 0.0f))},
            {}, "head/bias");
  auto probs = b.op1("Softmax", {logits}, {{"axis", int64_t{-1}}}, "head/softmax");
  b.output(b.op1("Relu", {probs}, {}, "out"));
  // A softmax over a middle axis is no attention either.
  auto side = b.op1("Softmax", {b.op1("MatMul", {q, k}, {}, "qk2")}, {{"axis", int64_t{1}}},
                    "side_softmax");
  b.output(b.op1("MatMul", {side, v}, {}, "pv2"));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(class_of(*g, "qk") == NodeClass::attention);
  CHECK(class_of(*g, "probs") == NodeClass::attention);
  CHECK(class_of(*g, "pv") == NodeClass::attention);
  CHECK(class_of(*g, "scale") == NodeClass::elementwise);
  CHECK(class_of(*g, "head") == NodeClass::other);
  CHECK(class_of(*g, "head/softmax") == NodeClass::softmax);
  CHECK(class_of(*g, "side_softmax") == NodeClass::softmax);
  CHECK(class_of(*g, "qk2") == NodeClass::other);
  CHECK(class_of(*g, "pv2") == NodeClass::output);
}

TEST_CASE("classes: ffn around an exact-GELU subgraph and x*sigmoid(x); not across a residual") {
  GraphBuilder b("ffn");
  auto x = b.input("x", DType::F32, {2, 8});
  auto up = b.op1("MatMul", {x, b.constant("up/w", filled({8, 16}, 0.1f))}, {}, "up");
  auto h = b.op1("Add", {up, b.constant("up/b", filled({16}, 0.0f))}, {}, "up/bias");
  // 0.5 * h * (1 + erf(h / sqrt(2))), as PyTorch exports nn.GELU.
  auto e = b.op1("Erf", {b.op1("Div", {h, b.scalar(1.4142135f)}, {}, "gelu/div")}, {}, "gelu/erf");
  auto a =
      b.op1("Mul",
            {b.op1("Mul", {h, b.op1("Add", {e, b.scalar(1.0f)}, {}, "gelu/add")}, {}, "gelu/mul"),
             b.scalar(0.5f)},
            {}, "gelu/half");
  auto down = b.op1("MatMul", {a, b.constant("down/w", filled({16, 8}, 0.1f))}, {}, "down");
  // SiLU between two Gemms.
  auto g1 =
      b.op1("Gemm",
            {down, b.constant("g1/w", filled({8, 8}, 0.1f)), b.constant("g1/b", filled({8}, 0.f))},
            {}, "g1");
  auto silu = b.op1("Mul", {g1, b.op1("Sigmoid", {g1}, {}, "silu/sigmoid")}, {}, "silu/mul");
  auto g2 =
      b.op1("Gemm",
            {silu, b.constant("g2/w", filled({8, 8}, 0.1f)), b.constant("g2/b", filled({8}, 0.f))},
            {}, "g2");
  // A projection reading a residual sum (which includes a graph input) is no ffn.
  auto r = b.op1("Relu", {b.op1("Add", {g2, x}, {}, "residual")}, {}, "relu");
  auto last = b.op1("MatMul", {r, b.constant("last/w", filled({8, 4}, 0.1f))}, {}, "last");
  b.output(b.op1("Identity", {last}, {}, "y"));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(class_of(*g, "up") == NodeClass::ffn);
  CHECK(class_of(*g, "down") == NodeClass::ffn);
  CHECK(class_of(*g, "gelu/erf") == NodeClass::elementwise);
  CHECK(class_of(*g, "g1") == NodeClass::ffn);
  CHECK(class_of(*g, "g2") == NodeClass::ffn);
  CHECK(class_of(*g, "last") == NodeClass::other);
  CHECK(class_of(*g, "y") == NodeClass::output);
}

TEST_CASE("classes: decomposed LayerNorm; a Gather from activations is not an embedding") {
  GraphBuilder b("ln");
  auto x = b.input("x", DType::F32, {2, 8});
  const Attributes last = {{"axes", std::vector<int64_t>{-1}}};
  auto mean = b.op1("ReduceMean", {x}, last, "ln/mean");
  auto centred = b.op1("Sub", {x, mean}, {}, "ln/sub");
  auto var =
      b.op1("ReduceMean", {b.op1("Pow", {centred, b.scalar(2.0f)}, {}, "ln/pow")}, last, "ln/var");
  auto den = b.op1("Sqrt", {b.op1("Add", {var, b.scalar(1e-5f)}, {}, "ln/eps")}, {}, "ln/sqrt");
  auto y = b.op1("Div", {centred, den}, {}, "ln/div");
  y = b.op1("Mul", {y, b.constant("ln/gamma", filled({8}, 1.0f))}, {}, "ln/gamma_mul");
  y = b.op1("Add", {y, b.constant("ln/beta", filled({8}, 0.0f))}, {}, "ln/beta_add");
  auto picked = b.op1("Gather", {y, b.constant_i64({0})}, {{"axis", int64_t{0}}}, "pick");
  b.output(b.op1("Relu", {picked}, {}, "out"));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  for (const char* n : {"ln/mean", "ln/sub", "ln/pow", "ln/var", "ln/eps", "ln/sqrt", "ln/div",
                        "ln/gamma_mul", "ln/beta_add"})
    CHECK_MESSAGE(class_of(*g, n) == NodeClass::norm, n);
  CHECK(class_of(*g, "pick") == NodeClass::other);
}
