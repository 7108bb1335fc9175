// The reference interpreter: runs any valid Graph on the host, op by op, with ONNX semantics.
// It is libhpf's ground truth: every backend is checked against it.
//
// Ground-truth mode (no Emulation): float data is held in FP32 and matrix products,
// convolutions and reductions accumulate in FP64. A value whose graph dtype is a narrower float
// format (say, the output of a Cast to F16) holds exactly the values that format can represent.
//
// Emulated mode: an Emulation says, per value, which format its data is rounded to after it is
// computed (or which quantised format it is stored in), and per node, which format its
// accumulators are rounded to after every addition. This measures the accuracy of a precision
// plan without a device.
//
// Quantised plans (INT8, INT4 weights, scaled FP8) are emulated by fake quantisation: a value in
// Emulation::value_quant holds, in FP32, exactly what its quantised storage dequantises to
// (hpf::fake_quantize: x / scale rounded half to even and saturated to the type's range, then
// times scale). Weights (initializers) take per-channel or group-wise parameters, activations
// per-tensor ones. Kernels then compute on these values as usual. With accumulation I32 (or
// any integer format) a node accumulates in FP64, which is what an INT32 accumulator computes:
// each product of two dequantised INT8 values q_a*s_a * q_w*s_w is exact in FP64 (24 + 24
// significant bits), and sums of |q_a*q_w| <= 2^14 stay exact in FP64's 53 bits up to 2^39
// terms, far beyond any real reduction (an INT32 accumulator itself overflows after 2^17 worst-
// case terms). So an emulated int8 MatMul/Gemm/Conv equals s_a*s_w*sum(q_a*q_w), rounded once
// to FP32, with the only approximation the FP32 rounding of each dequantised value (2^-24
// relative: a scale is not a power of two in general).
//
// Control flow (If, Loop, Scan) runs its subgraphs with this interpreter in ground-truth mode,
// whatever the enclosing run's emulation.
//
// Thread-safety: run() only reads the graph; concurrent runs of one const Graph are fine.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hpf/dtype.hpp"
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
  // Quantised storage of float values, by value name: QuantParams::type is the stored format
  // (I8, U8 or I4 with scales and zero points; F8E4M3 / F8E5M2 with scales, symmetric), its
  // scales per tensor, per channel (axis) or per group (group_size along axis) as dtype.hpp
  // describes. A value listed here is fake-quantised instead of rounded to its value_format or
  // default_format (scaled FP8 uses `overflow`). Graph inputs, initializers and node outputs
  // all follow it. Errors: a name that is not a float value of the graph, parameters that do
  // not fit the value's shape (reported naming the value).
  std::map<std::string, QuantParams> value_quant;
  // Nodes (by name) whose first input is quantised per row to INT8 on the fly, with a scale per
  // row of its last axis (hpf::fake_quantize_rows_i8), before the node reads it: an int8
  // MatMul/Gemm whose float input has no calibrated scale. The value itself is unchanged for its
  // other consumers. Errors: a name that is not a node of the graph with a float first input.
  std::set<std::string> dynamic_int8_rows;
  // The same with asymmetric 7-bit rows (hpf::fake_quantize_rows_u7; NodePlan::dynamic_rows u7)
  // and with 16-bit rows (hpf::fake_quantize_rows_s16; dynamic_rows s16). Errors as above, and a
  // node named in two of the sets.
  std::set<std::string> dynamic_u7_rows;
  std::set<std::string> dynamic_s16_rows;
  // Nodes of dynamic_s16_rows whose rows take int16_operand_qmax(k) levels each side instead of
  // rows_s16_qmax(k): those with I16 weights. Errors: a node not in dynamic_s16_rows.
  std::set<std::string> s16_rows_w16;
  // Nodes (by name) whose first input is fake-quantised with these per-tensor parameters before
  // the node reads it (an int8 Conv: NodePlan::input_quant); the value itself is unchanged for
  // its other consumers. Errors: a name that is not a node with a float first input.
  std::map<std::string, QuantParams> input_quant;
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
// `graph` for concrete input shapes (in graph-input order; empty: as declared): the inputs get
// those shapes, every shape is inferred again and values computed from shapes alone (Shape ->
// Gather -> Concat -> Reshape, as exporters write them) are folded into constants. Errors: a
// count, rank or known size that does not match, naming the input.
Expected<Graph> specialize(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes);
}  // namespace hpf
