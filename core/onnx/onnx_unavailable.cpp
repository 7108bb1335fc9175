// ONNX import when libhpf is built without protobuf/ONNX: every entry point says so.
#include "hpf/onnx.hpp"

namespace hpf {
namespace {
Status no_onnx(const std::string& what) {
  return Status::unsupported(what + ": libhpf was built without ONNX import (protobuf/ONNX not found)");
}
}  // namespace

bool onnx_import_available() { return false; }
Expected<Graph> import_onnx(const std::string& path) { return no_onnx(path); }
Expected<Graph> import_onnx_bytes(std::span<const std::byte>, const std::string& name, const std::string&) {
  return no_onnx(name);
}
Expected<Tensor> load_tensor_pb(const std::string& path) { return no_onnx(path); }
Expected<Tensor> load_tensor_pb_bytes(std::span<const std::byte>, const std::string& name, std::string*) {
  return no_onnx(name);
}

}  // namespace hpf
