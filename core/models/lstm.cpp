// A recurrent language model built with GraphBuilder: embedding, two stacked LSTM layers, a
// vocabulary projection.
#include <cmath>

#include "core/models/random.hpp"
#include "hpf/models.hpp"

namespace hpf::models {

namespace {

// U(-k, k) values, PyTorch's LSTM and Linear initialisation with k = 1/sqrt(fan).
Tensor uniform(Rng& rng, std::vector<int64_t> shape, float k) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (float& x : v) x = (2.0f * rng.uniform() - 1.0f) * k;
  return std::move(Tensor::from_f32(std::move(shape), v)).value();
}

}  // namespace

Expected<Graph> lstm_lm(const LstmConfig& c, uint64_t seed) {
  Rng rng(seed);
  GraphBuilder b("lstm-lm");
  ValueId ids = b.input("input_ids", DType::I64, {c.sequence, Dim::sym("batch")});
  ValueId x = b.op1("Gather", {b.constant("embedding/weight", std::move(Tensor::from_f32({c.vocab, c.embed},
                                                                                        rng.normals(c.vocab * c.embed, 1.0f)))
                                                                  .value()),
                               ids},
                    {}, "embedding");
  int64_t in = c.embed;
  const float k = 1.0f / std::sqrt(static_cast<float>(c.hidden));
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "lstm" + std::to_string(l);
    auto outs = b.op("LSTM",
                     {x, b.constant(p + "/W", uniform(rng, {1, 4 * c.hidden, in}, k)),
                      b.constant(p + "/R", uniform(rng, {1, 4 * c.hidden, c.hidden}, k)),
                      b.constant(p + "/B", uniform(rng, {1, 8 * c.hidden}, k))},
                     {{"hidden_size", c.hidden}, {"direction", std::string("forward")}}, 3, p);
    x = b.op1("Squeeze", {outs[0], b.constant_i64({1})}, {}, p + "/squeeze");  // [T, 1, B, H] -> [T, B, H]
    in = c.hidden;
  }
  ValueId w = b.constant("decoder/weight", uniform(rng, {c.hidden, c.vocab}, k));
  ValueId bias = b.constant("decoder/bias", uniform(rng, {c.vocab}, k));
  b.output(b.op1("Add", {b.op1("MatMul", {x, w}, {}, "decoder/matmul"), bias}, {}, "decoder/bias_add"), "logits");
  return b.build();
}

}  // namespace hpf::models
