// BERT encoder built with GraphBuilder (the layout of Hugging Face's BertModel exports, without
// the attention mask).
#include <cmath>

#include "core/models/random.hpp"
#include "hpf/models.hpp"

namespace hpf::models {
namespace {

class BertWriter {
 public:
  BertWriter(const BertConfig& c) : c_(c), rng_(c.seed), b_("bert") {}

  Expected<Graph> build() {
    if (c_.hidden % c_.heads != 0)
      return Status::invalid("bert: hidden size " + std::to_string(c_.hidden) + " is not a multiple of " +
                             std::to_string(c_.heads) + " heads");
    const Dim batch = Dim::sym("batch");
    ValueId ids = b_.input("input_ids", DType::I64, {batch, c_.sequence});
    ValueId words = b_.constant("embeddings/word", weight({c_.vocab, c_.hidden}));
    ValueId positions = b_.constant("embeddings/position", weight({c_.sequence, c_.hidden}));
    ValueId x = b_.op1("Gather", {words, ids}, {{"axis", int64_t{0}}}, "embeddings/gather");
    x = b_.op1("Add", {x, positions}, {}, "embeddings/add_position");
    x = layer_norm(x, "embeddings/norm");
    for (int64_t l = 0; l < c_.layers; ++l) x = layer(x, "layer" + std::to_string(l));
    b_.output(b_.op1("Identity", {x}, {}, "last_hidden_state"), "last_hidden_state");
    // Classifier on the first token: Gather index 0 along the sequence axis.
    ValueId first = b_.op1("Gather", {x, b_.constant(Tensor::scalar_i64(0))}, {{"axis", int64_t{1}}},
                           "pooler/first_token");
    ValueId pooled = b_.op1("Tanh", {dense(first, c_.hidden, c_.hidden, "pooler/dense")}, {}, "pooler/tanh");
    b_.output(dense(pooled, c_.hidden, c_.labels, "classifier"), "logits");
    return b_.build();
  }

 private:
  Tensor weight(std::vector<int64_t> shape, float stddev = 0.02f) {
    auto v = rng_.normals(numel(shape), stddev);
    return std::move(Tensor::from_f32(std::move(shape), v)).value();
  }
  Tensor filled(std::vector<int64_t> shape, float value) {
    std::vector<float> v(numel(shape), value);
    return std::move(Tensor::from_f32(std::move(shape), v)).value();
  }

  ValueId dense(ValueId x, int64_t in, int64_t out, const std::string& name) {
    ValueId w = b_.constant(name + "/weight", weight({in, out}));
    ValueId bias = b_.constant(name + "/bias", weight({out}));
    return b_.op1("Add", {b_.op1("MatMul", {x, w}, {}, name + "/matmul"), bias}, {}, name + "/bias_add");
  }

  ValueId layer_norm(ValueId x, const std::string& name) {
    ValueId g = b_.constant(name + "/gamma", filled({c_.hidden}, 1.0f));
    ValueId beta = b_.constant(name + "/beta", filled({c_.hidden}, 0.0f));
    return b_.op1("LayerNormalization", {x, g, beta}, {{"epsilon", 1e-12f}, {"axis", int64_t{-1}}}, name);
  }

  ValueId layer(ValueId x, const std::string& p) {
    const int64_t head_dim = c_.hidden / c_.heads;
    auto heads = [&](ValueId v, const std::string& n, std::vector<int64_t> perm) {
      ValueId r = b_.op1("Reshape", {v, b_.constant_i64({0, 0, c_.heads, head_dim})}, {}, p + "/attention/" + n + "_split");
      return b_.op1("Transpose", {r}, {{"perm", std::move(perm)}}, p + "/attention/" + n + "_heads");
    };
    ValueId q = heads(dense(x, c_.hidden, c_.hidden, p + "/attention/query"), "q", {0, 2, 1, 3});
    ValueId k = heads(dense(x, c_.hidden, c_.hidden, p + "/attention/key"), "k", {0, 2, 3, 1});
    ValueId v = heads(dense(x, c_.hidden, c_.hidden, p + "/attention/value"), "v", {0, 2, 1, 3});
    ValueId scores = b_.op1("MatMul", {q, k}, {}, p + "/attention/qk");
    scores = b_.op1("Mul", {scores, b_.scalar(1.0f / std::sqrt(float(head_dim)))}, {}, p + "/attention/scale");
    ValueId probs = b_.op1("Softmax", {scores}, {{"axis", int64_t{-1}}}, p + "/attention/softmax");
    ValueId ctx = b_.op1("MatMul", {probs, v}, {}, p + "/attention/av");
    ctx = b_.op1("Transpose", {ctx}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, p + "/attention/merge_heads");
    ctx = b_.op1("Reshape", {ctx, b_.constant_i64({0, 0, c_.hidden})}, {}, p + "/attention/merge");
    ValueId attn = dense(ctx, c_.hidden, c_.hidden, p + "/attention/output");
    x = layer_norm(b_.op1("Add", {attn, x}, {}, p + "/attention/residual"), p + "/attention/norm");
    ValueId h = b_.op1("Gelu", {dense(x, c_.hidden, c_.intermediate, p + "/ffn/up")}, {}, p + "/ffn/gelu");
    ValueId out = dense(h, c_.intermediate, c_.hidden, p + "/ffn/down");
    return layer_norm(b_.op1("Add", {out, x}, {}, p + "/ffn/residual"), p + "/ffn/norm");
  }

  BertConfig c_;
  Rng rng_;
  GraphBuilder b_;
};

}  // namespace

BertConfig bert_base() { return {}; }

BertConfig bert_tiny() {
  BertConfig c;
  c.layers = 2;
  c.hidden = 128;
  c.heads = 2;
  c.intermediate = 512;
  c.sequence = 32;
  c.vocab = 1000;
  return c;
}

BertConfig bert_layer() {
  BertConfig c;
  c.layers = 1;
  c.vocab = 1000;
  return c;
}

Expected<Graph> bert(const BertConfig& config) { return BertWriter(config).build(); }

}  // namespace hpf::models
