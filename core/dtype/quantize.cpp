#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hpf/dtype.hpp"

namespace hpf {
namespace {

// Which parameter slot each element uses.
struct Layout {
  enum class Kind { tensor, channel, group };
  Kind kind = Kind::tensor;
  int64_t numel = 0;
  int64_t inner = 1;     // channel, group: elements after the axis
  int64_t channels = 1;  // channel, group: shape[axis]
  int64_t group = 1;     // group: group_size

  int64_t slots() const {
    switch (kind) {
      case Kind::tensor:
        return 1;
      case Kind::channel:
        return channels;
      case Kind::group:
        return numel / group;
    }
    return 1;
  }
  size_t slot(int64_t i) const {
    switch (kind) {
      case Kind::tensor:
        return 0;
      case Kind::channel:
        return static_cast<size_t>((i / inner) % channels);
      // The group axis is a multiple of the group, so groups never straddle rows: the slot is
      // the row-major index over the shape with the group axis divided by the group (i / group
      // for the last axis, where inner is 1).
      case Kind::group: {
        const int64_t outer = i / (channels * inner), a = (i / inner) % channels, in = i % inner;
        return static_cast<size_t>((outer * (channels / group) + a / group) * inner + in);
      }
    }
    return 0;
  }
};

// Calls f(begin, end, slot) for consecutive runs of elements sharing one scale slot: one run per
// tensor, runs of `inner` per channel, runs of `group` for groups along the last axis, single
// elements otherwise. (Per-element slot() costs two 64-bit divisions; BERT-base's 85M weights
// are quantised on every planner evaluation.)
template <class F>
void for_runs(const Layout& l, F&& f) {
  if (l.kind == Layout::Kind::tensor) {
    f(int64_t{0}, l.numel, size_t{0});
  } else if (l.kind == Layout::Kind::channel) {
    for (int64_t o = 0, c = 0; o < l.numel; o += l.inner, c = c + 1 == l.channels ? 0 : c + 1)
      f(o, o + l.inner, static_cast<size_t>(c));
  } else if (l.inner == 1) {
    for (int64_t o = 0; o < l.numel; o += l.group) f(o, o + l.group, static_cast<size_t>(o / l.group));
  } else {
    for (int64_t i = 0; i < l.numel; ++i) f(i, i + 1, l.slot(i));
  }
}

std::string shape_str(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

bool is_quant_type(DType t) { return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::I4; }
bool is_scaled_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

// Same rule as the FP32 encoders: independent of the FPU rounding mode.
// Branch-free (the weights of a planner evaluation go through here: 85M for BERT-base, half of
// them ties' neighbours): truncate, then step away from zero past a half, or at a half when the
// truncated value is odd. (A zero result is +0; callers convert to integers.)
float round_half_even(float v) {
  if (!(std::fabs(v) < 8388608.0f)) return v;
  const auto t = static_cast<int32_t>(v);  // toward zero, exact below 2^23
  const float r = v - static_cast<float>(t);  // exact, in (-1, 1)
  const int32_t odd = t & 1;
  const int32_t step = static_cast<int32_t>(r > 0.5f) - static_cast<int32_t>(r < -0.5f) +
                       (static_cast<int32_t>(r == 0.5f) & odd) - (static_cast<int32_t>(r == -0.5f) & odd);
  return static_cast<float>(t + step);
}

Status check_type(const char* fn, DType t) {
  if (is_quant_type(t)) return {};
  return Status::invalid(fmt::format("{}: type {} is not a quantised type (expected i8, u8, i16 or i4)",
                                     fn, dtype_name(t)));
}

Expected<int64_t> checked_numel(const char* fn, std::span<const int64_t> shape, size_t count) {
  int64_t numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      return Status::invalid(fmt::format("{}: shape {} has a negative dimension {} at axis {}", fn,
                                         shape_str(shape), shape[d], d));
    numel *= shape[d];
  }
  if (static_cast<size_t>(numel) != count)
    return Status::invalid(fmt::format("{}: x has {} elements but shape {} has {}", fn, count,
                                       shape_str(shape), numel));
  return numel;
}

// The group axis: `axis`, or the last one when axis is -1.
Expected<int> check_group(const char* fn, std::span<const int64_t> shape, int group_size,
                          int axis) {
  const int rank = static_cast<int>(shape.size());
  if (shape.empty())
    return Status::invalid(
        fmt::format("{}: group_size {} needs a tensor with at least one axis", fn, group_size));
  if (axis < -1 || axis >= rank)
    return Status::invalid(fmt::format("{}: group axis {} is out of range for shape {}", fn, axis,
                                       shape_str(shape)));
  const int g = axis < 0 ? rank - 1 : axis;
  const int64_t dim = shape[static_cast<size_t>(g)];
  if (dim % group_size == 0) return g;
  if (g == rank - 1)
    return Status::invalid(
        fmt::format("{}: group_size {} does not divide the last dimension {} of shape {}", fn,
                    group_size, dim, shape_str(shape)));
  return Status::invalid(fmt::format("{}: group_size {} does not divide dimension {} (axis {}) of shape {}",
                                     fn, group_size, dim, g, shape_str(shape)));
}

Layout channel_layout(std::span<const int64_t> shape, int axis, int64_t numel) {
  Layout l;
  l.kind = Layout::Kind::channel;
  l.numel = numel;
  l.channels = shape[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

Layout group_layout(std::span<const int64_t> shape, int axis, int group_size, int64_t numel) {
  Layout l = channel_layout(shape, axis, numel);
  l.kind = Layout::Kind::group;
  l.group = group_size;
  return l;
}

// Checks everything quantize and dequantize share and works out which scale each element uses.
// `scaled_fp8`: also accept F8E4M3/F8E5M2 (fake_quantize), symmetric only.
Expected<Layout> check_params(const char* fn, std::span<const int64_t> shape, size_t count,
                              const QuantParams& p, size_t bytes, bool scaled_fp8 = false) {
  if (scaled_fp8 && is_scaled_fp8(p.type)) {
    if (!p.zero_points.empty())
      return Status::invalid(fmt::format("{}: scaled {} is symmetric; got {} zero points", fn,
                                         dtype_name(p.type), p.zero_points.size()));
  } else if (scaled_fp8 && !is_quant_type(p.type)) {
    return Status::invalid(fmt::format(
        "{}: type {} is not a quantised type (expected i8, u8, i4, f8e4m3 or f8e5m2)", fn,
        dtype_name(p.type)));
  } else {
    HPF_RETURN_IF_ERROR(check_type(fn, p.type));
  }
  HPF_ASSIGN_OR_RETURN(const int64_t numel, checked_numel(fn, shape, count));
  const size_t need = storage_bytes(p.type, static_cast<size_t>(numel));
  if (bytes != need)
    return Status::invalid(fmt::format("{}: q has {} bytes but {} elements of {} need {}", fn,
                                       bytes, numel, dtype_name(p.type), need));
  const size_t n_scales = p.scales.size();
  Layout l;
  l.numel = numel;
  if (p.group_size < 0)
    return Status::invalid(fmt::format("{}: group_size {} is negative", fn, p.group_size));
  if (p.group_size > 0) {
    HPF_ASSIGN_OR_RETURN(const int g, check_group(fn, shape, p.group_size, p.axis));
    l = group_layout(shape, g, p.group_size, numel);
    if (n_scales != static_cast<size_t>(l.slots()))
      return Status::invalid(fmt::format("{}: group_size {} over shape {} needs {} scales, got {}",
                                         fn, p.group_size, shape_str(shape), l.slots(), n_scales));
  } else if (n_scales != 1) {
    const int rank = static_cast<int>(shape.size());
    if (p.axis < 0 || p.axis >= rank)
      return Status::invalid(fmt::format(
          "{}: {} scales need 1 (per tensor), a per-channel axis in [0, {}) or group_size > 0; "
          "axis is {}",
          fn, n_scales, rank, p.axis));
    l = channel_layout(shape, p.axis, numel);
    if (n_scales != static_cast<size_t>(l.channels))
      return Status::invalid(
          fmt::format("{}: per-channel axis {} of shape {} needs {} scales, got {}", fn, p.axis,
                      shape_str(shape), l.channels, n_scales));
  }
  for (size_t i = 0; i < n_scales; ++i) {
    const float s = p.scales[i];
    if (!(s > 0.0f) || !std::isfinite(s))
      return Status::invalid(
          fmt::format("{}: scales[{}] = {} is not positive and finite", fn, i, s));
  }
  if (!p.zero_points.empty() && p.zero_points.size() != n_scales)
    return Status::invalid(fmt::format("{}: {} zero points for {} scales (expected {} or none)", fn,
                                       p.zero_points.size(), n_scales, n_scales));
  const int32_t lo = qmin(p.type), hi = qmax(p.type);
  for (size_t i = 0; i < p.zero_points.size(); ++i) {
    const int32_t z = p.zero_points[i];
    if (z < lo || z > hi)
      return Status::invalid(
          fmt::format("{}: zero_points[{}] = {} is outside the {} range [{}, {}]", fn, i, z,
                      dtype_name(p.type), lo, hi));
  }
  return l;
}

}  // namespace

int32_t qmin(DType t) {
  switch (t) {
    case DType::I8:
      return -128;
    case DType::U8:
      return 0;
    case DType::I16:
      return -32768;
    case DType::I4:
      return -8;
    default:
      return 0;
  }
}

int32_t qmax(DType t) {
  switch (t) {
    case DType::I8:
      return 127;
    case DType::U8:
      return 255;
    case DType::I16:
      return 32767;
    case DType::I4:
      return 7;
    default:
      return 0;
  }
}

Expected<QuantParams> choose_quant_params(std::span<const float> x, std::span<const int64_t> shape,
                                          DType type, bool symmetric, int axis, int group_size) {
  const char* fn = "choose_quant_params";
  HPF_RETURN_IF_ERROR(check_type(fn, type));
  // Symmetric means zero point 0, which for an unsigned type would clip every negative value.
  if (symmetric && type == DType::U8)
    return Status::invalid(
        fmt::format("{}: symmetric quantisation needs a signed type (i8, i16 or i4), got u8", fn));
  HPF_ASSIGN_OR_RETURN(const int64_t numel, checked_numel(fn, shape, x.size()));
  const int rank = static_cast<int>(shape.size());
  if (axis < -1 || axis >= rank)
    return Status::invalid(fmt::format("{}: axis {} is out of range for shape {} (-1 for none)", fn,
                                       axis, shape_str(shape)));
  if (group_size < 0)
    return Status::invalid(fmt::format("{}: group_size {} is negative", fn, group_size));

  Layout l;
  l.numel = numel;
  if (group_size > 0) {
    HPF_ASSIGN_OR_RETURN(const int g, check_group(fn, shape, group_size, axis));
    l = group_layout(shape, g, group_size, numel);
  } else if (axis >= 0) {
    l = channel_layout(shape, axis, numel);
  }

  const auto slots = static_cast<size_t>(l.slots());
  std::vector<float> lo(slots, 0.0f), hi(slots, 0.0f);  // ranges always include 0
  int64_t bad = -1;
  for_runs(l, [&](int64_t b, int64_t e, size_t s) {
    float mn = lo[s], mx = hi[s];
    for (int64_t i = b; i < e; ++i) {
      const float v = x[static_cast<size_t>(i)];
      if (!std::isfinite(v) && bad < 0) bad = i;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    lo[s] = mn;
    hi[s] = mx;
  });
  if (bad >= 0)
    return Status::invalid(fmt::format("{}: x[{}] = {} is not finite", fn, bad, x[static_cast<size_t>(bad)]));

  QuantParams p;
  p.type = type;
  p.axis = l.kind == Layout::Kind::tensor ? -1 : axis;
  p.group_size = group_size;
  p.scales.resize(slots);
  if (!symmetric) p.zero_points.resize(slots);
  const auto q_lo = static_cast<float>(qmin(type)), q_hi = static_cast<float>(qmax(type));
  // A tiny non-zero range could underflow the scale to 0 or a subnormal; the smallest normal
  // still maps such data to the zero point without dividing by zero.
  const float min_scale = std::numeric_limits<float>::min();
  for (size_t s = 0; s < slots; ++s) {
    if (symmetric) {
      const float amax = std::max(-lo[s], hi[s]);
      p.scales[s] = amax == 0.0f ? 1.0f : std::max(amax / q_hi, min_scale);
      continue;
    }
    if (lo[s] == hi[s]) {  // both 0
      p.scales[s] = 1.0f;
      p.zero_points[s] = 0;
      continue;
    }
    const float scale = std::max((hi[s] - lo[s]) / (q_hi - q_lo), min_scale);
    const float zp = round_half_even(q_lo - lo[s] / scale);
    p.scales[s] = scale;
    p.zero_points[s] = static_cast<int32_t>(std::clamp(zp, q_lo, q_hi));
  }
  return p;
}

Status quantize(std::span<const float> x, std::span<const int64_t> shape, const QuantParams& p,
                std::span<std::byte> q) {
  HPF_ASSIGN_OR_RETURN(const Layout l, check_params("quantize", shape, x.size(), p, q.size()));
  const auto q_lo = static_cast<float>(qmin(p.type)), q_hi = static_cast<float>(qmax(p.type));
  const bool i4 = p.type == DType::I4;
  for_runs(l, [&](int64_t b, int64_t e, size_t s) {
    const float zp = p.zero_points.empty() ? 0.0f : static_cast<float>(p.zero_points[s]);
    const float scale = p.scales[s];
    for (int64_t i = b; i < e; ++i) {
      float r = round_half_even(x[static_cast<size_t>(i)] / scale);
      if (std::isnan(r)) r = 0.0f;  // as the integer encoders do: NaN -> the zero point
      // Clamp before converting: r can be far outside int range. r + zp is exact while |r| is
      // below 2^24; beyond that it is clamped anyway.
      const auto v = static_cast<int32_t>(std::clamp(r + zp, q_lo, q_hi));
      const auto bits = static_cast<uint8_t>(v);
      const auto idx = static_cast<size_t>(i);
      if (p.type == DType::I16) {  // two bytes, little-endian
        q[2 * idx] = static_cast<std::byte>(bits);
        q[2 * idx + 1] = static_cast<std::byte>(static_cast<uint16_t>(v) >> 8);
      } else if (!i4) {
        q[idx] = static_cast<std::byte>(bits);
      } else if (idx % 2 == 0) {
        q[idx / 2] = static_cast<std::byte>(bits & 0xF);  // an odd count leaves the last high nibble 0
      } else {
        q[idx / 2] |= static_cast<std::byte>((bits & 0xF) << 4);
      }
    }
  });
  return {};
}

Status dequantize(std::span<const std::byte> q, std::span<const int64_t> shape,
                  const QuantParams& p, std::span<float> x) {
  HPF_ASSIGN_OR_RETURN(const Layout l, check_params("dequantize", shape, x.size(), p, q.size()));
  for_runs(l, [&](int64_t b, int64_t e, size_t s) {
    const int32_t zp = p.zero_points.empty() ? 0 : p.zero_points[s];
    const float scale = p.scales[s];
    for (int64_t i = b; i < e; ++i) {
      const auto idx = static_cast<size_t>(i);
      const uint32_t bits = p.type == DType::I4    ? static_cast<uint32_t>(q[idx / 2]) >> (4 * (idx % 2))
                            : p.type == DType::I16 ? static_cast<uint32_t>(q[2 * idx]) | static_cast<uint32_t>(q[2 * idx + 1]) << 8
                                                   : static_cast<uint32_t>(q[idx]);
      x[idx] = static_cast<float>(static_cast<int32_t>(decode(p.type, bits)) - zp) * scale;
    }
  });
  return {};
}

Status fake_quantize(std::span<float> x, std::span<const int64_t> shape, const QuantParams& p,
                     Overflow mode) {
  const char* fn = "fake_quantize";
  const size_t count = x.size();
  HPF_ASSIGN_OR_RETURN(const Layout l,
                       check_params(fn, shape, count, p, storage_bytes(p.type, count), true));
  if (is_quant_type(p.type)) {
    // Through real packed storage, so emulation and quantize/dequantize cannot drift apart.
    std::vector<std::byte> q(storage_bytes(p.type, count));
    HPF_RETURN_IF_ERROR(quantize(x, shape, p, q));
    return dequantize(q, shape, p, x);
  }
  for (int64_t i = 0; i < l.numel; ++i) {
    float& v = x[static_cast<size_t>(i)];
    const float s = p.scales[l.slot(i)];
    v = round_to(p.type, v / s, mode) * s;
  }
  return {};
}

namespace {

// Runs `quantise_row` on each run of `row` consecutive elements of x (fake_quantize_rows_*,
// `fn` naming it in the error).
template <typename F>
Status for_each_row(const char* fn, std::span<float> x, int64_t row, F quantise_row) {
  if (row <= 0 || x.size() % static_cast<size_t>(row) != 0)
    return Status::invalid(fmt::format("{}: rows of {} do not divide {} elements", fn, row, x.size()));
  for (size_t r0 = 0; r0 < x.size(); r0 += static_cast<size_t>(row)) quantise_row(x.subspan(r0, static_cast<size_t>(row)));
  return {};
}

// v = clamp(rne(v / s), qlo, qhi) * s, NaN -> 0.
void fake_quantize_span(std::span<float> v, float s, float qlo, float qhi) {
  for (float& a : v) {
    float q = round_half_even(a / s);
    if (std::isnan(q)) q = 0.0f;
    a = std::clamp(q, qlo, qhi) * s;
  }
}

}  // namespace

Status fake_quantize_rows_i8(std::span<float> x, int64_t row) {
  return for_each_row("fake_quantize_rows_i8", x, row, [](std::span<float> v) {
    float amax = 0.0f;
    for (float a : v) amax = std::fmax(amax, std::fabs(a));
    const float s = amax == 0.0f ? 1.0f : std::max(amax / 127.0f, std::numeric_limits<float>::min());
    fake_quantize_span(v, s, -128.0f, 127.0f);
  });
}

int32_t rows_s16_qmax(int64_t k) {
  const int64_t q = k > 0 ? int64_t{2147483647} / (int64_t{128} * k) : 32767;
  return static_cast<int32_t>(std::clamp<int64_t>(q, 1, 32767));
}

int32_t int16_operand_qmax(int64_t k) {
  if (k <= 0) return 32767;
  auto q = static_cast<int64_t>(std::sqrt(2147483647.0 / static_cast<double>(k)));
  while (q > 1 && q * q * k > int64_t{2147483647}) --q;  // the square root's rounding
  return static_cast<int32_t>(std::clamp<int64_t>(q, 1, 32767));
}

Status fake_quantize_rows_s16(std::span<float> x, int64_t row, int32_t q) {
  if (q < 0 || q > 32767) return Status::invalid(fmt::format("fake_quantize_rows_s16: qmax {} is outside [0, 32767]", q));
  const float qmax = static_cast<float>(q > 0 ? q : rows_s16_qmax(row));
  return for_each_row("fake_quantize_rows_s16", x, row, [qmax](std::span<float> v) {
    float amax = 0.0f;
    for (float a : v) amax = std::fmax(amax, std::fabs(a));
    const float s = amax == 0.0f ? 1.0f : std::max(amax / qmax, std::numeric_limits<float>::min());
    fake_quantize_span(v, s, -qmax, qmax);
  });
}

Status fake_quantize_rows_u7(std::span<float> x, int64_t row) {
  return for_each_row("fake_quantize_rows_u7", x, row, [](std::span<float> v) {
    float lo = 0.0f, hi = 0.0f;
    for (float a : v) {
      lo = std::fmin(lo, a);  // fmin/fmax ignore NaN
      hi = std::fmax(hi, a);
    }
    const float s = hi - lo == 0.0f ? 1.0f : std::max((hi - lo) / 127.0f, std::numeric_limits<float>::min());
    float z = round_half_even(-lo / s);
    if (std::isnan(z)) z = 0.0f;
    z = std::clamp(z, 0.0f, 127.0f);
    fake_quantize_span(v, s, -z, 127.0f - z);
  });
}

}  // namespace hpf
