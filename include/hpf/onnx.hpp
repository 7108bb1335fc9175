// ONNX import: reads an ONNX model (ModelProto) into a libhpf Graph, and ONNX TensorProto files
// (the .pb test data of the ONNX backend tests) into Tensors.
//
// What is imported:
//   * initializers (raw_data or the typed fields; FLOAT, FLOAT16, BFLOAT16, INT8, UINT8, INT32,
//     INT64, BOOL as themselves, DOUBLE converted to F32 with a logged note), including
//     external data files beside the model (location / offset / length);
//   * Constant nodes (value, value_float(s), value_int(s)) become initializers;
//   * graph inputs (those that are also initializers are initializers), with symbolic
//     dimensions (dim_param) as Dim::sym; names of inputs, outputs and values are kept;
//   * nodes of the default ONNX domain whose op is in libhpf's op table, with their attributes.
//     An empty or repeated node name gets a unique generated one. Softmax/LogSoftmax of
//     opset < 13 (coerced-2D semantics) are translated when axis is the last one, else
//     unsupported.
// The result is validated and its shapes inferred.
//
// Errors: io_error / not_found for unreadable or missing files (model or external data),
// invalid_argument for malformed protobuf or inconsistent models, unsupported for ops outside
// the op table (naming op type, node name and domain) and data types libhpf has no format for.
// Every message names the model file.
//
// When libhpf is built without protobuf/ONNX (see onnx_import_available()), every function
// returns an unsupported Status. All functions are thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "hpf/graph.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

// Whether this libhpf was built with ONNX import.
bool onnx_import_available();

// Imports the model file at `path`; external data is looked up beside it.
Expected<Graph> import_onnx(const std::string& path);
// Imports a serialized ModelProto. `name` appears in error messages; `base_dir` is where
// external data files are looked up ("" : external data is an error).
Expected<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& name = "<memory>",
                                  const std::string& base_dir = "");

// Reads a serialized TensorProto (e.g. test_data_set_0/input_0.pb). DOUBLE becomes F32.
Expected<Tensor> load_tensor_pb(const std::string& path);
// Same, from bytes (`name` for messages). Also returns the tensor's name when `tensor_name`
// is not null.
Expected<Tensor> load_tensor_pb_bytes(std::span<const std::byte> bytes, const std::string& name = "<memory>",
                                      std::string* tensor_name = nullptr);

}  // namespace hpf
