// Built-in models: graphs built in C++ with seeded random weights, for the `hpf` tool, tests and
// benchmarks when no model file is at hand. Each builder returns a validated graph with shapes
// inferred. Same config and seed -> bit-identical weights on every machine (std::mt19937_64 with
// a portable Box-Muller transform, not std::normal_distribution, whose output is
// implementation-defined).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpf/graph.hpp"

namespace hpf::models {

struct BertConfig {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t intermediate = 3072;
  int64_t sequence = 128;
  int64_t vocab = 30522;
  int64_t labels = 2;  // classifier head on the first token
  uint64_t seed = 1;
};
BertConfig bert_base();
BertConfig bert_tiny();   // 2 layers, hidden 128, 2 heads, sequence 32, vocab 1000
BertConfig bert_layer();  // one encoder layer of BERT-base shape (hidden 768, 12 heads, 3072, seq 128), vocab 1000

// BERT encoder: input "input_ids" i64[batch, sequence]; outputs "last_hidden_state"
// f32[batch, sequence, hidden] and "logits" f32[batch, labels]. Post-LayerNorm, exact GELU,
// no attention mask (every token attends to every token).
Expected<Graph> bert(const BertConfig& config);

// A small residual CNN classifier: input "image" f32[batch,3,32,32]; output "logits"
// f32[batch,10]. Conv+BatchNorm+Relu, a residual block, MaxPool, a strided conv,
// GlobalAveragePool, Gemm.
Expected<Graph> cnn_small(uint64_t seed = 1);

// A two-layer MLP: input "x" f32[batch,64]; output "logits" f32[batch,10].
Expected<Graph> mlp(uint64_t seed = 1);

// An LSTM language model: input "input_ids" i64[sequence, batch] (time-major, as ONNX LSTM's
// layout 0); output "logits" f32[sequence, batch, vocab]. Embedding (Gather), `layers` stacked
// forward LSTMs (PyTorch's initialisation), a MatMul + Add projection onto the vocabulary.
struct LstmConfig {
  int64_t vocab = 4096, embed = 256, hidden = 512, sequence = 64;
  int layers = 2;
};
Expected<Graph> lstm_lm(const LstmConfig& config = {}, uint64_t seed = 1);

struct BuiltinInfo {
  std::string name;
  std::string description;
};
std::vector<BuiltinInfo> builtin_models();
// "bert-base", "bert-layer", "bert-tiny", "cnn-small", "lstm-lm", "mlp" (with or without
// "builtin:").
Expected<Graph> builtin(const std::string& name);

// Seeded example inputs for a graph: integer ids in [0, bound) for i64 inputs named *ids
// (bound = the vocabulary when the graph has a Gather on its first input, else 100), standard
// normal values for float inputs; symbolic dimensions take `batch` for the first, 1 otherwise.
Expected<std::vector<Tensor>> example_inputs(const Graph& g, uint64_t seed = 7, int64_t batch = 1);

}  // namespace hpf::models
