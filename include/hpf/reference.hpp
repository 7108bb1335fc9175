// The reference interpreter: runs any valid Graph on the host, op by op, with ONNX semantics.
// It is libhpf's ground truth: every backend is checked against it.
//
// Ground-truth mode (no Emulation): float data is held in FP32 and matrix products,
// convolutions and reductions accumulate in FP64. A value whose graph dtype is a narrower float
// format (say, the output of a Cast to F16) holds exactly the values that format can represent.
//
// Emulated mode: an Emulation says, per value, which format its data is rounded to after it is
// computed, and per node, which format its accumulators are rounded to after every addition.
// This measures the accuracy of a precision plan without a device.
//
// Control flow (If, Loop, Scan) runs its subgraphs with this interpreter in ground-truth mode,
// whatever the enclosing run's emulation.
//
// Thread-safety: run() only reads the graph; concurrent runs of one const Graph are fine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/tensor.hpp"

namespace hpf::ref {

struct Emulation {
  // Storage format of each float value, by value name; float values not listed use
  // default_format. Graph inputs and initializers are rounded too (weights in BF16, ...).
  std::map<std::string, DType> value_format;
  DType default_format = DType::F32;
  // Accumulation format of each node, by node name (F32, BF16, F16, ...); nodes not listed use
  // default_accumulation; FP64 when neither is set.
  std::map<std::string, DType> accumulation;
  std::optional<DType> default_accumulation;
  Overflow overflow = Overflow::saturate;  // for FP8 storage
};

struct RunOptions {
  const Emulation* emulation = nullptr;  // not owned; nullptr = ground truth
};

// The largest tensor (in elements) the interpreter creates: a node asking for more (a model whose
// data-dependent shapes request absurd sizes) fails with an error naming it instead of
// exhausting memory. Default 2^32; process-wide; thread-safe.
void set_max_tensor_elements(int64_t elements);
int64_t max_tensor_elements();

// Runs `graph` on `inputs` (one per graph input, in order). Each input's dtype must equal the
// graph input's dtype and its shape must match every known dimension; a symbolic dimension
// takes the size first seen and must agree everywhere else. Returns the graph outputs in order,
// each in its graph dtype. Errors name the input or the node that failed.
Expected<std::vector<Tensor>> run(const Graph& graph, const std::vector<Tensor>& inputs,
                                  const RunOptions& options = {});

// Same, with inputs and outputs by name.
Expected<std::map<std::string, Tensor>> run_named(const Graph& graph,
                                                  const std::map<std::string, Tensor>& inputs,
                                            const RunOptions& options = {});

}  // namespace hpf::ref

namespace hpf {
// Constant folding: evaluates, with the reference interpreter, every node whose inputs are all
// constants (and Shape nodes whose input shape is fully known), turns its outputs into
// initializers and removes the nodes. Nodes whose output would exceed `max_bytes` stay.
// Returns the number of nodes folded.
Expected<int> fold_constants(Graph& graph, size_t max_bytes = size_t{64} << 20);
}  // namespace hpf
