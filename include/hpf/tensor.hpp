// hpf::Tensor: an owning, dense, row-major tensor in one of libhpf's formats.
//
// Storage is the packed encoding of the dtype (F16 as 2-byte IEEE halves, I4 two per byte, ...),
// so a Tensor can hold exactly what a model file or a user buffer holds. A Tensor owns its bytes;
// copies are deep. Not synchronised: share const Tensors between threads, not mutable ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "hpf/dtype.hpp"
#include "hpf/status.hpp"

namespace hpf {

// Number of elements of a concrete shape (1 for a scalar, 0 if any dimension is 0); saturates at
// INT64_MAX rather than overflowing.
int64_t numel(std::span<const int64_t> shape);
// "[2,3,4]".
std::string shape_string(std::span<const int64_t> shape);

class Tensor {
 public:
  // An F32 scalar 0.
  Tensor();
  // Zero-filled storage of `dtype` and `shape` (all dimensions >= 0).
  Tensor(DType dtype, std::vector<int64_t> shape);

  // Encodes FP32 values into `dtype` (float or integer formats); values.size() must equal the
  // shape's element count, else invalid_argument.
  static Expected<Tensor> from_f32(std::vector<int64_t> shape, std::span<const float> values,
                                   DType dtype = DType::F32, Overflow mode = Overflow::saturate);
  // Stores integers into an integer or BOOL dtype (clamped to its range), or converts to a float
  // dtype.
  static Expected<Tensor> from_i64(std::vector<int64_t> shape, std::span<const int64_t> values,
                                   DType dtype = DType::I64);
  static Tensor scalar_f32(float v);
  static Tensor scalar_i64(int64_t v);
  // Wraps already-encoded bytes (size must be storage_bytes(dtype, numel)).
  static Expected<Tensor> from_bytes(DType dtype, std::vector<int64_t> shape,
                                     std::vector<std::byte> bytes);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return hpf::numel(shape_); }
  size_t nbytes() const { return bytes_.size(); }

  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }

  // Typed view of the storage. T must match the dtype's storage: float for F32/TF32,
  // uint16_t for F16/BF16, uint8_t for F8*/U8/BOOL, int8_t for I8, int32_t, int64_t. Aborts on
  // a mismatch (a programming error, not an input error).
  template <typename T>
  std::span<T> data();
  template <typename T>
  std::span<const T> data() const;

  // Decoded copies. to_f32 works for every dtype (I64 beyond 2^24 loses precision);
  // to_i64 rounds float formats to nearest even.
  std::vector<float> to_f32() const;
  std::vector<int64_t> to_i64() const;

  // Converts to another dtype (float<->float with RNE and `mode`, float->int rounds and clamps).
  Tensor cast(DType to, Overflow mode = Overflow::saturate) const;

  // Same bytes, new shape with the same element count; invalid_argument otherwise.
  Expected<Tensor> reshaped(std::vector<int64_t> shape) const;

  // "f32[2,3]".
  std::string describe() const;

 private:
  template <typename T>
  void check_type() const;
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;
};

namespace detail {
template <typename T>
constexpr bool storage_is(DType t) {
  switch (t) {
    case DType::F32:
    case DType::TF32: return std::is_same_v<T, float>;
    case DType::F16:
    case DType::BF16: return std::is_same_v<T, uint16_t>;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::U8:
    case DType::BOOL:
    case DType::I4: return std::is_same_v<T, uint8_t>;
    case DType::I8: return std::is_same_v<T, int8_t>;
    case DType::I16: return std::is_same_v<T, int16_t>;
    case DType::I32: return std::is_same_v<T, int32_t>;
    case DType::I64: return std::is_same_v<T, int64_t>;
  }
  return false;
}
[[noreturn]] void storage_mismatch(DType t, const char* requested);
}  // namespace detail

template <typename T>
void Tensor::check_type() const {
  if (!detail::storage_is<std::remove_const_t<T>>(dtype_)) detail::storage_mismatch(dtype_, typeid(T).name());
}
template <typename T>
std::span<T> Tensor::data() {
  check_type<T>();
  return {reinterpret_cast<T*>(bytes_.data()), bytes_.size() / sizeof(T)};
}
template <typename T>
std::span<const T> Tensor::data() const {
  check_type<T>();
  return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
}

}  // namespace hpf
