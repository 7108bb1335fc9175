// Small CNN and MLP classifiers built with GraphBuilder.
#include <cmath>

#include "core/models/random.hpp"
#include "hpf/models.hpp"

namespace hpf::models {
namespace {

Tensor tensor(std::vector<int64_t> shape, std::vector<float> v) {
  return std::move(Tensor::from_f32(std::move(shape), v)).value();
}

struct CnnWriter {
  Rng rng;
  GraphBuilder b{"cnn-small"};

  // He-initialised conv + BatchNorm (random statistics) + optional Relu.
  ValueId conv_bn(ValueId x, int64_t cin, int64_t cout, int64_t stride, const std::string& name, bool relu = true) {
    const float std_w = std::sqrt(2.0f / float(cin * 9));
    ValueId w = b.constant(name + "/weight", tensor({cout, cin, 3, 3}, rng.normals(cout * cin * 9, std_w)));
    ValueId bias = b.constant(name + "/bias", tensor({cout}, rng.normals(cout, 0.01f)));
    ValueId y = b.op1("Conv", {x, w, bias},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{stride, stride}}},
                      name + "/conv");
    std::vector<float> gamma(cout), beta(cout), mean(cout), var(cout);
    for (int64_t k = 0; k < cout; ++k) {
      gamma[k] = 1.0f + 0.1f * rng.normal();
      beta[k] = 0.1f * rng.normal();
      mean[k] = 0.1f * rng.normal();
      var[k] = 0.5f + rng.uniform();
    }
    y = b.op1("BatchNormalization",
              {y, b.constant(name + "/bn_gamma", tensor({cout}, gamma)), b.constant(name + "/bn_beta", tensor({cout}, beta)),
               b.constant(name + "/bn_mean", tensor({cout}, mean)), b.constant(name + "/bn_var", tensor({cout}, var))},
              {}, name + "/bn");
    return relu ? b.op1("Relu", {y}, {}, name + "/relu") : y;
  }
};

}  // namespace

Expected<Graph> cnn_small(uint64_t seed) {
  CnnWriter w{Rng(seed)};
  GraphBuilder& b = w.b;
  ValueId x = b.input("image", DType::F32, {Dim::sym("batch"), 3, 32, 32});
  x = w.conv_bn(x, 3, 16, 1, "stem");
  ValueId r = w.conv_bn(w.conv_bn(x, 16, 16, 1, "block1/a"), 16, 16, 1, "block1/b", false);
  x = b.op1("Relu", {b.op1("Add", {r, x}, {}, "block1/residual")}, {}, "block1/relu");
  x = b.op1("MaxPool", {x}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}, "pool");
  x = w.conv_bn(x, 16, 32, 2, "down");
  x = b.op1("GlobalAveragePool", {x}, {}, "gap");
  x = b.op1("Flatten", {x}, {{"axis", int64_t{1}}}, "flatten");
  ValueId fc_w = b.constant("fc/weight", tensor({10, 32}, w.rng.normals(320, std::sqrt(1.0f / 32))));
  ValueId fc_b = b.constant("fc/bias", tensor({10}, w.rng.normals(10, 0.01f)));
  b.output(b.op1("Gemm", {x, fc_w, fc_b}, {{"transB", int64_t{1}}}, "fc"), "logits");
  return b.build();
}

Expected<Graph> mlp(uint64_t seed) {
  Rng rng(seed);
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::F32, {Dim::sym("batch"), 64});
  ValueId w1 = b.constant("fc1/weight", tensor({64, 128}, rng.normals(64 * 128, 0.125f)));
  ValueId b1 = b.constant("fc1/bias", tensor({128}, rng.normals(128, 0.01f)));
  ValueId w2 = b.constant("fc2/weight", tensor({128, 10}, rng.normals(1280, 0.09f)));
  ValueId b2 = b.constant("fc2/bias", tensor({10}, rng.normals(10, 0.01f)));
  ValueId h = b.op1("Relu", {b.op1("Add", {b.op1("MatMul", {x, w1}, {}, "fc1/matmul"), b1}, {}, "fc1/bias_add")}, {}, "fc1/relu");
  b.output(b.op1("Add", {b.op1("MatMul", {h, w2}, {}, "fc2/matmul"), b2}, {}, "fc2/bias_add"), "logits");
  return b.build();
}

std::vector<BuiltinInfo> builtin_models() {
  return {{"bert-base", "BERT-base encoder: 12 layers, hidden 768, 12 heads, sequence 128 (110M parameters)"},
          {"bert-layer", "one BERT-base encoder layer: hidden 768, 12 heads, FFN 3072, sequence 128"},
          {"bert-tiny", "BERT encoder: 2 layers, hidden 128, 2 heads, sequence 32"},
          {"cnn-small", "residual CNN classifier, 3x32x32 images, Conv/BatchNorm/Relu/MaxPool/Gemm"},
          {"lstm-lm", "LSTM language model: embedding 256, 2 LSTM layers of 512, sequence 64, vocabulary 4096"},
          {"mlp", "two-layer perceptron, 64 -> 128 -> 10"}};
}

Expected<Graph> builtin(const std::string& name) {
  std::string n = name.rfind("builtin:", 0) == 0 ? name.substr(8) : name;
  if (n == "bert-base") return bert(bert_base());
  if (n == "bert-tiny") return bert(bert_tiny());
  if (n == "bert-layer") return bert(bert_layer());
  if (n == "cnn-small") return cnn_small();
  if (n == "lstm-lm") return lstm_lm();
  if (n == "mlp") return mlp();
  std::string known;
  for (const auto& m : builtin_models()) known += (known.empty() ? "" : ", ") + m.name;
  return Status::not_found("no built-in model '" + n + "' (built-in models: " + known + ")");
}

Expected<std::vector<Tensor>> example_inputs(const Graph& g, uint64_t seed, int64_t batch) {
  Rng rng(seed);
  std::vector<Tensor> out;
  for (ValueId id : g.inputs()) {
    const Value& v = g.value(id);
    if (!v.has_shape) return Status::invalid("input '" + v.name + "' has no shape");
    std::vector<int64_t> shape;
    bool first_symbol = true;
    for (const Dim& d : v.shape) {
      shape.push_back(d.known() ? d.value : (first_symbol ? batch : 1));
      if (!d.known()) first_symbol = false;
    }
    if (is_float(v.dtype)) {
      auto vals = rng.normals(numel(shape), 1.0f);
      HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_f32(shape, vals, v.dtype));
      out.push_back(std::move(t));
    } else {
      // Ids index a Gather table when one reads this input: stay below its first dimension.
      int64_t bound = 100;
      for (const Node& n : g.nodes())
        if (n.op == "Gather" && n.inputs.size() == 2 && n.inputs[1] == id && g.value(n.inputs[0]).has_shape &&
            g.value(n.inputs[0]).shape[0].known())
          bound = g.value(n.inputs[0]).shape[0].value;
      std::vector<int64_t> vals(numel(shape));
      for (int64_t& x : vals) x = v.dtype == DType::BOOL ? rng.below(2) : rng.below(bound);
      HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_i64(shape, vals, v.dtype));
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace hpf::models
