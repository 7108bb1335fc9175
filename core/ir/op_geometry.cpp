#include "core/ir/op_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpf::ir {
namespace {

std::string list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Status fill_defaults(size_t n, std::vector<int64_t>& strides, std::vector<int64_t>& dilations,
                     std::vector<int64_t>& pads) {
  if (strides.empty()) strides.assign(n, 1);
  if (dilations.empty()) dilations.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (strides.size() != n) return Status::invalid("strides " + list(strides) + " do not match " + std::to_string(n) + " spatial dimensions");
  if (dilations.size() != n) return Status::invalid("dilations " + list(dilations) + " do not match " + std::to_string(n) + " spatial dimensions");
  if (pads.size() != 2 * n) return Status::invalid("pads " + list(pads) + " need " + std::to_string(2 * n) + " values");
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1) return Status::invalid("strides " + list(strides) + " must be >= 1");
    if (dilations[i] < 1) return Status::invalid("dilations " + list(dilations) + " must be >= 1");
    if (pads[i] < 0 || pads[n + i] < 0) return Status::invalid("pads " + list(pads) + " must be >= 0");
  }
  return {};
}

}  // namespace

Expected<WindowGeometry> window_geometry(std::span<const int64_t> in, std::vector<int64_t> kernel,
                                         std::vector<int64_t> strides,
                                         std::vector<int64_t> dilations, std::vector<int64_t> pads,
                                         const std::string& auto_pad, bool ceil_mode) {
  const size_t n = in.size();
  if (kernel.size() != n)
    return Status::invalid("kernel_shape " + list(kernel) + " does not match " + std::to_string(n) + " spatial dimensions");
  for (int64_t k : kernel)
    if (k < 1) return Status::invalid("kernel_shape " + list(kernel) + " must be >= 1");
  HPF_RETURN_IF_ERROR(fill_defaults(n, strides, dilations, pads));
  WindowGeometry g;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = dilations;
  g.pads_begin.assign(pads.begin(), pads.begin() + n);
  g.pads_end.assign(pads.begin() + n, pads.end());
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    if (in[i] < 0) {
      g.out[i] = -1;
      continue;
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * strides[i] + extent - in[i]);
      const int64_t small = total / 2, big = total - small;
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      g.pads_end[i] = auto_pad == "SAME_UPPER" ? big : small;
      continue;
    }
    if (auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
    else if (auto_pad != "NOTSET" && !auto_pad.empty())
      return Status::invalid("auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    const int64_t span = in[i] + g.pads_begin[i] + g.pads_end[i] - extent;
    if (span < 0)
      return Status::invalid("window of extent " + std::to_string(extent) + " does not fit input size " +
                             std::to_string(in[i]) + " with pads " + list(pads));
    g.out[i] = (ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
    // A window may not start in the end padding only (ONNX/PyTorch ceil_mode rule).
    if (ceil_mode && (g.out[i] - 1) * strides[i] >= in[i] + g.pads_begin[i]) --g.out[i];
  }
  return g;
}

Expected<WindowGeometry> conv_transpose_geometry(
    std::span<const int64_t> in, std::vector<int64_t> kernel, std::vector<int64_t> strides,
    std::vector<int64_t> dilations, std::vector<int64_t> pads, std::vector<int64_t> output_padding,
    std::vector<int64_t> output_shape, const std::string& auto_pad) {
  const size_t n = in.size();
  if (kernel.size() != n)
    return Status::invalid("kernel_shape " + list(kernel) + " does not match " + std::to_string(n) + " spatial dimensions");
  HPF_RETURN_IF_ERROR(fill_defaults(n, strides, dilations, pads));
  if (output_padding.empty()) output_padding.assign(n, 0);
  if (output_padding.size() != n) return Status::invalid("output_padding " + list(output_padding) + " does not match the spatial rank");
  if (output_shape.size() > n) output_shape.erase(output_shape.begin(), output_shape.end() - n);
  if (!output_shape.empty() && output_shape.size() != n)
    return Status::invalid("output_shape " + list(output_shape) + " does not match the spatial rank");
  WindowGeometry g;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = dilations;
  g.pads_begin.assign(pads.begin(), pads.begin() + n);
  g.pads_end.assign(pads.begin() + n, pads.end());
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    if (in[i] < 0) {
      g.out[i] = output_shape.empty() ? -1 : output_shape[i];
      continue;
    }
    const int64_t full = strides[i] * (in[i] - 1) + output_padding[i] + extent;
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t target = output_shape.empty() ? in[i] * strides[i] : output_shape[i];
      const int64_t total = full - target;
      // A target larger than the full result gives negative pads: the extra cells get no
      // contribution (bias only), as in the ONNX reference.
      // ONNX: SAME_UPPER puts the smaller half at the start; otherwise the larger half.
      const int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2), big = total - small;  // floor, as ONNX's Python
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      g.pads_end[i] = auto_pad == "SAME_UPPER" ? big : small;
      g.out[i] = target;
      continue;
    }
    if (auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
    g.out[i] = full - g.pads_begin[i] - g.pads_end[i];
    if (g.out[i] < 0) return Status::invalid("pads " + list(pads) + " exceed the transposed convolution's output");
  }
  return g;
}

Expected<std::vector<int64_t>> reshape_target(std::span<const int64_t> in,
                                              std::span<const int64_t> shape, bool allowzero) {
  std::vector<int64_t> out(shape.begin(), shape.end());
  int infer_at = -1;
  bool unknown = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size())
        return Status::invalid("shape " + list(shape) + ": 0 at position " + std::to_string(i) +
                               " copies a dimension the input (rank " + std::to_string(in.size()) + ") lacks");
      out[i] = in[i];
      if (out[i] < 0) unknown = true;
    } else if (out[i] == -1) {
      if (infer_at >= 0) return Status::invalid("shape " + list(shape) + " has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (out[i] < -1) {
      return Status::invalid("shape " + list(shape) + " has a negative size");
    }
  }
  int64_t in_n = 1;
  for (int64_t d : in) {
    if (d < 0) unknown = true;
    in_n *= d;
  }
  if (unknown) {
    if (infer_at >= 0) out[infer_at] = -1;
    return out;
  }
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i)
    if (static_cast<int>(i) != infer_at) known *= out[i];
  if (infer_at >= 0) {
    if (known == 0 || in_n % known != 0)
      return Status::invalid("cannot reshape " + list(in) + " (" + std::to_string(in_n) + " elements) to " + list(shape));
    out[infer_at] = in_n / known;
  } else if (known != in_n) {
    return Status::invalid("cannot reshape " + list(in) + " (" + std::to_string(in_n) +
                           " elements) to " + list(shape) + " (" + std::to_string(known) + " elements)");
  }
  return out;
}

Expected<std::vector<SliceAxis>> slice_ranges(std::span<const int64_t> in,
                                              std::span<const int64_t> starts,
                                              std::span<const int64_t> ends,
                                              std::span<const int64_t> axes,
                                              std::span<const int64_t> steps) {
  const auto rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size())
    return Status::invalid("starts " + list(starts) + " and ends " + list(ends) + " differ in length");
  std::vector<int64_t> ax(axes.begin(), axes.end());
  if (ax.empty())
    for (size_t i = 0; i < starts.size(); ++i) ax.push_back(static_cast<int64_t>(i));
  if (ax.size() != starts.size()) return Status::invalid("axes " + list(axes) + " and starts " + list(starts) + " differ in length");
  if (!steps.empty() && steps.size() != starts.size()) return Status::invalid("steps " + list(steps) + " and starts " + list(starts) + " differ in length");
  HPF_ASSIGN_OR_RETURN(ax, normalize_axes(ax, rank));
  std::vector<SliceAxis> r(in.size());
  for (int64_t i = 0; i < rank; ++i) r[i] = {0, 1, in[i]};
  for (size_t j = 0; j < ax.size(); ++j) {
    const int64_t a = ax[j], dim = in[a];
    const int64_t step = steps.empty() ? 1 : steps[j];
    if (step == 0) return Status::invalid("steps " + list(steps) + " contain 0");
    if (dim < 0) {
      // Unknown size: only "from 0 to the end" (exporters write INT32_MAX or INT64_MAX) keeps it.
      r[a] = {0, step, -1, starts[j] == 0 && step == 1 && ends[j] >= std::numeric_limits<int32_t>::max()};
      continue;
    }
    auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    int64_t s = starts[j] < 0 ? starts[j] + dim : starts[j];
    int64_t e = ends[j] < 0 ? ends[j] + dim : ends[j];
    if (step > 0) {
      s = clampi(s, 0, dim);
      e = clampi(e, 0, dim);
      r[a] = {s, step, e > s ? (e - s + step - 1) / step : 0, false};
      r[a].whole = s == 0 && step == 1 && r[a].count == dim;
    } else {
      s = clampi(s, 0, dim - 1);
      e = clampi(e, -1, dim - 1);
      r[a] = {s, step, s > e ? (s - e + (-step) - 1) / (-step) : 0, false};
    }
  }
  return r;
}

Expected<std::vector<int64_t>> split_sizes(int64_t dim, std::span<const int64_t> split,
                                           int64_t num_outputs) {
  if (!split.empty()) {
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) return Status::invalid("split " + list(split) + " has a negative size");
      total += s;
    }
    if (dim >= 0 && total != dim)
      return Status::invalid("split " + list(split) + " sums to " + std::to_string(total) +
                             ", the axis has size " + std::to_string(dim));
    return std::vector<int64_t>(split.begin(), split.end());
  }
  if (num_outputs < 1) return Status::invalid("split needs at least one output");
  if (dim < 0) return std::vector<int64_t>(num_outputs, -1);
  const int64_t piece = (dim + num_outputs - 1) / num_outputs;
  std::vector<int64_t> out;
  int64_t left = dim;
  for (int64_t i = 0; i < num_outputs; ++i) {
    out.push_back(std::min(piece, left));
    left -= out.back();
  }
  if (left != 0 || (dim % num_outputs != 0 && out.back() <= 0))
    return Status::invalid("cannot split size " + std::to_string(dim) + " into " + std::to_string(num_outputs) + " outputs");
  return out;
}

double resize_source_coordinate(double x, int64_t in, int64_t out, double scale, const std::string& mode) {
  if (mode == "asymmetric") return x / scale;
  // ONNX measures the resized length as in * scale, before flooring to the output size.
  const double length = double(in) * scale;
  if (mode == "align_corners") return length == 1.0 ? 0.0 : x * double(in - 1) / (length - 1.0);
  if (mode == "pytorch_half_pixel") return length > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nn" || mode == "tf_half_pixel_for_nearest") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = double(out) / (scale * double(in));
    const double offset = double(in) / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t resize_nearest_index(double v, const std::string& mode, int64_t in) {
  const double fl = std::floor(v);
  double r;
  if (mode == "floor") r = fl;
  else if (mode == "ceil") r = std::ceil(v);
  else if (v - fl == 0.5) r = mode == "round_prefer_ceil" ? fl + 1 : fl;  // ties are exact in double
  else r = std::round(v);
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

bool is_resize_coordinate_mode(const std::string& m) {
  for (const char* k : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                        "tf_half_pixel_for_nn", "tf_half_pixel_for_nearest"})
    if (m == k) return true;
  return false;
}

double resize_crop_coordinate(double x, int64_t in, int64_t out, double start, double end) {
  const double span = double(in - 1);
  if (out == 1) return (end - start) * span / 2 + start * span;
  return x * (end - start) * span / double(out - 1) + start * span;
}

bool is_resize_nearest_mode(const std::string& m) {
  return m == "round_prefer_floor" || m == "round_prefer_ceil" || m == "floor" || m == "ceil";
}

Expected<std::vector<int64_t>> pad_source_map(const std::string& mode, int64_t len, int64_t begin, int64_t end) {
  const int64_t crop_b = std::max<int64_t>(0, -begin), crop_e = std::max<int64_t>(0, -end);
  const int64_t add_b = std::max<int64_t>(0, begin), add_e = std::max<int64_t>(0, end);
  const int64_t kept = len - crop_b - crop_e, out = len + begin + end;
  if (out < 0) return Status::invalid("pads make an axis negative");
  if (mode != "constant" && (add_b > 0 || add_e > 0) && kept <= 0)
    return Status::invalid("mode '" + mode + "' cannot pad an axis with no elements left");
  std::vector<int64_t> map(out);
  for (int64_t j = 0; j < out; ++j) {
    int64_t p = j - add_b;
    if (p < 0 || p >= kept) {
      if (mode == "constant") {
        map[j] = -1;
        continue;
      }
      if (mode == "edge") {
        p = std::clamp<int64_t>(p, 0, kept - 1);
      } else if (mode == "wrap") {
        p = ((p % kept) + kept) % kept;
      } else if (kept == 1) {
        p = 0;
      } else {
        const int64_t period = 2 * (kept - 1);
        p = ((p % period) + period) % period;
        if (p >= kept) p = period - p;
      }
    }
    map[j] = crop_b + p;
  }
  return map;
}

Expected<std::vector<int64_t>> normalize_axes(std::span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return Status::invalid("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    int64_t n = a < 0 ? a + rank : a;
    if (std::find(out.begin(), out.end(), n) != out.end())
      return Status::invalid("axes " + list(axes) + " repeat axis " + std::to_string(n));
    out.push_back(n);
  }
  return out;
}

}  // namespace hpf::ir
