// libFuzzer target for the ONNX importer: arbitrary bytes as a ModelProto (import, validation,
// shape inference, then constant folding with the reference kernels on small tensors) and as a
// TensorProto. Any outcome is fine except a crash, a sanitizer report, a hang or a runaway
// allocation. Built by the `fuzz` CMake preset (clang, ASan + UBSan); see fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <span>

#include "hpf/log.hpp"
#include "hpf/onnx.hpp"
#include "hpf/reference.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hpf::set_log_level(hpf::LogLevel::off);
  hpf::ref::set_max_tensor_elements(int64_t{1} << 22);  // 16-32 MiB: keeps inputs inside -rss_limit_mb
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto g = hpf::import_onnx_bytes(bytes, "fuzz.onnx");
  if (g.ok()) (void)hpf::fold_constants(*g, size_t{1} << 20);  // outputs up to 1 MiB per node
  (void)hpf::load_tensor_pb_bytes(bytes, "fuzz.pb");
  return 0;
}
