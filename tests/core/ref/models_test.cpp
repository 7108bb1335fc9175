// Built-in models: deterministic weights, they run, and their outputs behave.
#include <doctest/doctest.h>

#include <cmath>

#include "hpf/divergence.hpp"
#include "hpf/models.hpp"
#include "hpf/reference.hpp"

using namespace hpf;

TEST_CASE("models: bert-tiny builds with the expected structure and runs") {
  auto g = models::bert(models::bert_tiny());
  REQUIRE(g.ok());
  auto ids = g->find_value("input_ids");
  REQUIRE(ids);
  CHECK(to_string(g->value(*ids).shape) == "[batch,32]");
  CHECK(to_string(g->value(*g->find_value("logits")).shape) == "[batch,2]");
  CHECK(to_string(g->value(*g->find_value("last_hidden_state")).shape) == "[batch,32,128]");
  int matmuls = 0;
  for (const auto& n : g->nodes()) matmuls += n.op == "MatMul";
  CHECK(matmuls == 2 * 8 + 2);  // 6 dense + 2 attention products per layer, pooler, classifier
  auto in = models::example_inputs(*g, 7, 3);
  REQUIRE(in.ok());
  CHECK((*in)[0].shape() == std::vector<int64_t>{3, 32});
  for (int64_t id : (*in)[0].to_i64()) CHECK((id >= 0 && id < 1000));
  auto out = ref::run(*g, *in);
  REQUIRE(out.ok());
  // Post-LayerNorm hidden states: every token vector has mean ~0 and variance ~1.
  auto h = (*out)[0].to_f32();
  for (int64_t t = 0; t < 3 * 32; ++t) {
    double m = 0, v = 0;
    for (int j = 0; j < 128; ++j) m += h[t * 128 + j];
    m /= 128;
    for (int j = 0; j < 128; ++j) v += (h[t * 128 + j] - m) * (h[t * 128 + j] - m);
    CHECK(std::abs(m) < 1e-5);
    CHECK(v / 128 == doctest::Approx(1.0).epsilon(1e-3));
  }
}

TEST_CASE("models: lstm-lm builds with the expected structure and runs") {
  models::LstmConfig c;
  c.vocab = 50;
  c.embed = 8;
  c.hidden = 16;
  c.sequence = 5;
  auto g = models::lstm_lm(c);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(to_string(g->value(*g->find_value("input_ids")).shape) == "[5,batch]");
  CHECK(to_string(g->value(*g->find_value("logits")).shape) == "[5,batch,50]");
  int lstms = 0;
  for (const auto& n : g->nodes()) lstms += n.op == "LSTM";
  CHECK(lstms == 2);
  auto in = models::example_inputs(*g, 7, 2);
  REQUIRE(in.ok());
  for (int64_t id : (*in)[0].to_i64()) CHECK((id >= 0 && id < 50));
  auto out = ref::run(*g, *in);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  CHECK((*out)[0].shape() == std::vector<int64_t>{5, 2, 50});
  for (float v : (*out)[0].to_f32()) CHECK(std::isfinite(v));
  CHECK(models::builtin("builtin:lstm-lm").ok());  // the default size
}

TEST_CASE("models: same seed, same weights and outputs, another seed differs") {
  auto a = models::bert(models::bert_tiny());
  auto b = models::bert(models::bert_tiny());
  auto cfg = models::bert_tiny();
  cfg.seed = 2;
  auto c = models::bert(cfg);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  const Tensor* wa = a->constant(*a->find_value("layer0/attention/query/weight"));
  const Tensor* wb = b->constant(*b->find_value("layer0/attention/query/weight"));
  const Tensor* wc = c->constant(*c->find_value("layer0/attention/query/weight"));
  CHECK(wa->to_f32() == wb->to_f32());
  CHECK(wa->to_f32() != wc->to_f32());
}

TEST_CASE("models: lower formats diverge more, and FP32 storage not at all") {
  for (std::string name : {"cnn-small", "mlp", "bert-tiny"}) {
    CAPTURE(name);
    auto g = models::builtin(name);
    REQUIRE(g.ok());
    auto in = models::example_inputs(*g, 11, 2);
    REQUIRE(in.ok());
    auto ref_out = ref::run(*g, *in);
    REQUIRE_MESSAGE(ref_out.ok(), ref_out.status().to_string());
    const Tensor& logits = ref_out->back();
    auto err = [&](DType t) {
      ref::Emulation e;
      e.default_format = t;
      ref::RunOptions o;
      o.emulation = &e;
      auto out = ref::run(*g, *in, o);
      REQUIRE(out.ok());
      auto d = compare(logits, out->back());
      REQUIRE(d.ok());
      return d->rel_l2;
    };
    const double f32 = err(DType::F32), f16 = err(DType::F16), bf16 = err(DType::BF16), e4m3 = err(DType::F8E4M3);
    CHECK(f32 == 0.0);
    CHECK(f16 > 0.0);
    CHECK(f16 < bf16);
    CHECK(bf16 < e4m3);
    CHECK(e4m3 < 0.5);
  }
}

TEST_CASE("models: unknown names list the known ones") {
  auto g = models::builtin("builtin:resnet");
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().message() == "no built-in model 'resnet' (built-in models: bert-base, bert-layer, bert-tiny, cnn-small, lstm-lm, mlp)");
}

TEST_CASE("divergence: KL, rel-L2, top-1 on hand-computed logits") {
  Tensor p = *Tensor::from_f32({2, 2}, std::vector<float>{0, 0, 1, 0});
  Tensor q = *Tensor::from_f32({2, 2}, std::vector<float>{0, std::log(3.0f), 1, 0});
  auto d = compare(p, q);
  REQUIRE(d.ok());
  // Row 0: P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3). Row 1 identical: 0.
  const double row0 = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
  CHECK(d->kl == doctest::Approx(row0 / 2).epsilon(1e-6));
  CHECK(d->top1_agreement == 0.5);  // row 0 argmax 0 vs 1
  CHECK(d->max_abs_error == doctest::Approx(std::log(3.0)).epsilon(1e-6));
  CHECK(d->rel_l2 == doctest::Approx(std::log(3.0) / 1.0).epsilon(1e-6));
  Tensor inf = *Tensor::from_f32({2, 2}, std::vector<float>{0, INFINITY, 1, 0});
  auto di = compare(p, inf);
  CHECK(di->non_finite);
  CHECK(std::isinf(di->kl));
  auto bad = compare(p, *Tensor::from_f32({4}, std::vector<float>(4)));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "compare: shapes [2,2] and [4] must be equal");
  // Scalars compare as one row of one element: errors count, KL of a one-way softmax is 0.
  auto scalar = compare(Tensor::scalar_f32(2.0f), Tensor::scalar_f32(2.5f));
  REQUIRE(scalar.ok());
  CHECK(scalar->max_abs_error == 0.5);
  CHECK(scalar->rel_l2 == 0.25);
  CHECK(scalar->kl == 0);
}
