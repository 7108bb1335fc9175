#include "hpf/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace hpf {

int64_t numel(std::span<const int64_t> shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace detail {
void storage_mismatch(DType t, const char* requested) {
  std::fprintf(stderr, "hpf: Tensor::data<%s>() on a %s tensor\n", requested,
               std::string(dtype_name(t)).c_str());
  std::abort();
}
}  // namespace detail

Tensor::Tensor() : bytes_(storage_bytes(DType::F32, 1)) {}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(storage_bytes(dtype, hpf::numel(shape_))) {}

Expected<Tensor> Tensor::from_f32(std::vector<int64_t> shape, std::span<const float> values,
                                  DType dtype, Overflow mode) {
  const int64_t n = hpf::numel(shape);
  if (static_cast<int64_t>(values.size()) != n) {
    return Status::invalid("Tensor::from_f32: " + std::to_string(values.size()) +
                           " values for shape " + shape_string(shape) + " (" + std::to_string(n) +
                           " elements)");
  }
  Tensor t(dtype, std::move(shape));
  if (dtype == DType::I64) {
    auto out = t.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      float v = std::nearbyint(values[i]);
      out[i] = std::isnan(v) ? 0
               : v >= 9.2233720e18f ? std::numeric_limits<int64_t>::max()
               : v <= -9.2233720e18f ? std::numeric_limits<int64_t>::min()
                                     : static_cast<int64_t>(v);
    }
    return t;
  }
  HPF_RETURN_IF_ERROR(encode_span(dtype, values, t.bytes(), mode));
  return t;
}

Expected<Tensor> Tensor::from_i64(std::vector<int64_t> shape, std::span<const int64_t> values,
                                  DType dtype) {
  const int64_t n = hpf::numel(shape);
  if (static_cast<int64_t>(values.size()) != n) {
    return Status::invalid("Tensor::from_i64: " + std::to_string(values.size()) +
                           " values for shape " + shape_string(shape) + " (" + std::to_string(n) +
                           " elements)");
  }
  Tensor t(dtype, std::move(shape));
  switch (dtype) {
    case DType::I64: std::copy(values.begin(), values.end(), t.data<int64_t>().begin()); break;
    case DType::I32: {
      auto out = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<int32_t>(std::clamp<int64_t>(values[i], INT32_MIN, INT32_MAX));
      break;
    }
    case DType::BOOL: {
      auto out = t.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = values[i] != 0;
      break;
    }
    default: {
      std::vector<float> f(values.begin(), values.end());
      HPF_RETURN_IF_ERROR(encode_span(dtype, f, t.bytes()));
    }
  }
  return t;
}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::F32, {});
  t.data<float>()[0] = v;
  return t;
}

Tensor Tensor::scalar_i64(int64_t v) {
  Tensor t(DType::I64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

Expected<Tensor> Tensor::from_bytes(DType dtype, std::vector<int64_t> shape,
                                    std::vector<std::byte> bytes) {
  for (int64_t d : shape)
    if (d < 0) return Status::invalid("Tensor::from_bytes: negative dimension in " + shape_string(shape));
  const size_t want = storage_bytes(dtype, hpf::numel(shape));
  if (bytes.size() != want) {
    return Status::invalid("Tensor::from_bytes: " + std::string(dtype_name(dtype)) +
                           shape_string(shape) + " needs " + std::to_string(want) + " bytes, got " +
                           std::to_string(bytes.size()));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.bytes_ = std::move(bytes);
  return t;
}

std::vector<float> Tensor::to_f32() const {
  const int64_t n = numel();
  std::vector<float> out(n);
  if (dtype_ == DType::I64) {
    auto in = data<int64_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
    return out;
  }
  Status s = decode_span(dtype_, bytes_, out);
  (void)s;  // sizes match by construction
  return out;
}

std::vector<int64_t> Tensor::to_i64() const {
  const int64_t n = numel();
  std::vector<int64_t> out(n);
  switch (dtype_) {
    case DType::I64: if (n) std::memcpy(out.data(), bytes_.data(), n * sizeof(int64_t)); break;
    case DType::I32: {
      auto in = data<int32_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = in[i];
      break;
    }
    default: {
      std::vector<float> f = to_f32();
      for (int64_t i = 0; i < n; ++i) {
        float v = std::nearbyint(f[i]);
        out[i] = std::isnan(v) ? 0 : static_cast<int64_t>(v);
      }
    }
  }
  return out;
}

Tensor Tensor::cast(DType to, Overflow mode) const {
  if (to == dtype_) return *this;
  if (!is_float(dtype_) && !is_float(to)) {
    auto v = to_i64();
    return std::move(from_i64(shape_, v, to)).value();
  }
  if (dtype_ == DType::I64 && is_float(to)) {
    auto v = to_i64();
    return std::move(from_i64(shape_, v, to)).value();
  }
  auto v = to_f32();
  return std::move(from_f32(shape_, v, to, mode)).value();
}

Expected<Tensor> Tensor::reshaped(std::vector<int64_t> shape) const {
  if (hpf::numel(shape) != numel()) {
    return Status::invalid("cannot reshape " + describe() + " to " + shape_string(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_string(shape_); }

}  // namespace hpf
