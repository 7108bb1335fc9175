// BatchNormalization (inference and training mode), LayerNormalization, Softmax, LogSoftmax, and
// the reductions (ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp), ArgMax/ArgMin,
// CumSum, InstanceNormalization, LRN, MeanVarianceNormalization.
// Statistics and exponential sums are computed in FP64 whatever the plan (the op table marks
// them wide); ReduceSum/ReduceMean follow the plan's accumulation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ref/kernel.hpp"
#include "core/ir/op_geometry.hpp"

namespace hpf::ref {
namespace {

// Splits a shape around `axis` into [outer, axis, inner] sizes.
struct Split3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
Split3 split_at(const std::vector<int64_t>& shape, int64_t axis) {
  Split3 s;
  for (int64_t k = 0; k < axis; ++k) s.outer *= shape[k];
  s.mid = shape[axis];
  for (size_t k = axis + 1; k < shape.size(); ++k) s.inner *= shape[k];
  return s;
}

// Training mode (opset 14+): Y is normalised with the batch's own mean and population variance
// over every axis but 1; outputs 1 and 2 are the running statistics moved toward them,
// running = input * momentum + batch * (1 - momentum).
Status batch_norm_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (x.rank() < 2) return c.error("input must be [N,C,...], got " + shape_string(x.shape));
  const int64_t ch = x.shape[1];
  for (size_t k = 1; k < 5; ++k)
    if (c.in(k).numel() != ch)
      return c.error("input " + std::to_string(k) + " has " + std::to_string(c.in(k).numel()) +
                     " values for " + std::to_string(ch) + " channels");
  const bool training = c.attr_int("training_mode") != 0;
  if (!training && c.out.size() > 1)
    return c.error("running_mean/running_var outputs need training_mode=1");
  const double eps = c.attr_float("epsilon"), momentum = c.attr_float("momentum");
  const Split3 s = split_at(x.shape, 1);
  Buf y = Buf::like(x);
  std::vector<Buf> stats{Buf::floats({ch}, c.in(3).dtype), Buf::floats({ch}, c.in(4).dtype)};
  for (int64_t ci = 0; ci < ch; ++ci) {
    double mean = c.in(3).get(ci), var = c.in(4).get(ci);
    if (training) {
      double sum = 0, sq = 0;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) sum += x.f[(o * ch + ci) * s.inner + k];
      const double count = double(s.outer * s.inner);
      mean = sum / count;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k)
          sq += std::pow(x.f[(o * ch + ci) * s.inner + k] - mean, 2);
      var = sq / count;
      stats[0].f[ci] = static_cast<float>(c.in(3).get(ci) * momentum + mean * (1 - momentum));
      stats[1].f[ci] = static_cast<float>(c.in(4).get(ci) * momentum + var * (1 - momentum));
    }
    const double scale = c.in(1).get(ci) / std::sqrt(var + eps);
    const double shift = c.in(2).get(ci) - mean * scale;
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * ch + ci) * s.inner;
      for (int64_t k = 0; k < s.inner; ++k) y.f[base + k] = static_cast<float>(x.f[base + k] * scale + shift);
    }
  }
  c.out[0] = std::move(y);
  for (size_t o = 1; o < c.out.size(); ++o) c.out[o] = std::move(stats[o - 1]);
  return {};
}

Status layer_norm_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  const double eps = c.attr_float("epsilon");
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < x.rank(); ++k) (k < *axis ? rows : cols) *= x.shape[k];
  const std::vector<int64_t> norm_shape(x.shape.begin() + *axis, x.shape.end());
  // Scale and bias broadcast to the normalised shape.
  std::vector<double> scale(cols, 1.0), bias(cols, 0.0);
  for (size_t k = 1; k < 3; ++k) {
    if (!c.has(k)) continue;
    const Buf& p = c.in(k);
    std::vector<std::vector<int64_t>> shapes{norm_shape, p.shape};
    auto bs = broadcast(shapes);
    if (!bs.ok() || *bs != norm_shape)
      return c.error("input " + std::to_string(k) + " " + shape_string(p.shape) +
                     " does not broadcast to the normalized shape " + shape_string(norm_shape));
    BroadcastIndexer ip(p.shape, norm_shape);
    for (int64_t j = 0; j < cols; ++j) (k == 1 ? scale : bias)[j] = p.get(ip(j));
  }
  Buf y = Buf::like(x);
  std::vector<int64_t> stat_shape(x.shape.begin(), x.shape.begin() + *axis);
  stat_shape.resize(x.shape.size(), 1);
  Buf mean_out = Buf::floats(stat_shape), inv_out = Buf::floats(stat_shape);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.f.data() + r * cols;
    double mean = 0;
    for (int64_t j = 0; j < cols; ++j) mean += xr[j];
    mean /= double(cols);
    double var = 0;
    for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= double(cols);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < cols; ++j)
      y.f[r * cols + j] = static_cast<float>((xr[j] - mean) * inv * scale[j] + bias[j]);
    mean_out.f[r] = static_cast<float>(mean);
    inv_out.f[r] = static_cast<float>(inv);
  }
  c.out[0] = std::move(y);
  if (c.out.size() > 1) c.out[1] = std::move(mean_out);
  if (c.out.size() > 2) c.out[2] = std::move(inv_out);
  return {};
}

Status softmax_kernel(KernelContext& c, bool log) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  const Split3 s = split_at(x.shape, *axis);
  Buf y = Buf::like(x);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t j) { return (o * s.mid + j) * s.inner + in; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.mid; ++j) mx = std::max(mx, double(x.f[at(j)]));
      double sum = 0;
      for (int64_t j = 0; j < s.mid; ++j) sum += std::exp(x.f[at(j)] - mx);
      for (int64_t j = 0; j < s.mid; ++j) {
        const double v = x.f[at(j)] - mx;
        y.f[at(j)] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  c.out[0] = std::move(y);
  return {};
}

enum class Reduce { sum, mean, max, min, prod, l1, l2, sum_square, log_sum, log_sum_exp };

Status reduce_kernel(KernelContext& c, Reduce kind) {
  const Buf& x = c.in(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (c.has(1)) axes = c.in(1).as_ints();
  auto norm = ir::normalize_axes(axes, x.rank());
  if (!norm.ok()) return c.error(norm.status().message());
  const bool keep = c.attr_int("keepdims") != 0;
  if (norm->empty()) {
    if (c.attr_int("noop_with_empty_axes")) {
      c.out[0] = x;
      return {};
    }
    for (int64_t k = 0; k < x.rank(); ++k) norm->push_back(k);
  }
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : *norm) reduced[a] = true;
  std::vector<int64_t> out_shape, kept_shape;  // kept_shape: rank preserved, reduced axes 1
  for (int64_t k = 0; k < x.rank(); ++k) {
    kept_shape.push_back(reduced[k] ? 1 : x.shape[k]);
    if (!reduced[k]) out_shape.push_back(x.shape[k]);
    else if (keep) out_shape.push_back(1);
  }
  const int64_t n_out = numel(kept_shape), n_in = x.numel();
  Buf y = x.is_float() ? Buf::floats(out_shape, x.dtype) : Buf::ints(out_shape, x.dtype);
  // Map each input element to its output slot.
  const auto in_strides = strides_of(x.shape);
  const auto out_strides = strides_of(kept_shape);
  std::vector<int64_t> slot(n_in);
  for (int64_t e = 0; e < n_in; ++e) {
    int64_t rem = e, o = 0;
    for (int64_t k = 0; k < x.rank(); ++k) {
      const int64_t idx = rem / in_strides[k];
      rem %= in_strides[k];
      if (!reduced[k]) o += idx * out_strides[k];
    }
    slot[e] = o;
  }
  const int64_t count = n_out ? n_in / n_out : 0;
  const bool extreme = kind == Reduce::max || kind == Reduce::min;
  if (!x.is_float()) {
    if (kind == Reduce::l2 || kind == Reduce::log_sum || kind == Reduce::log_sum_exp)
      return c.unsupported("integer input (" + std::string(dtype_name(x.dtype)) + ")");
    // Integers reduce exactly in int64 (wrapping). An empty max gives the type's minimum, an
    // empty min its maximum (ONNX ReduceMax/ReduceMin-18).
    const int64_t lowest = x.dtype == DType::I64   ? std::numeric_limits<int64_t>::min()
                           : x.dtype == DType::I32 ? std::numeric_limits<int32_t>::min()
                           : x.dtype == DType::BOOL ? 0
                                                    : qmin(x.dtype);
    const int64_t highest = x.dtype == DType::I64   ? std::numeric_limits<int64_t>::max()
                            : x.dtype == DType::I32 ? std::numeric_limits<int32_t>::max()
                            : x.dtype == DType::BOOL ? 1
                                                     : qmax(x.dtype);
    std::fill(y.i.begin(), y.i.end(), kind == Reduce::max ? lowest : kind == Reduce::min ? highest
                                                          : kind == Reduce::prod      ? 1
                                                                                      : 0);
    for (int64_t e = 0; e < n_in; ++e) {
      int64_t& o = y.i[slot[e]];
      const uint64_t v = uint64_t(x.i[e]);
      switch (kind) {
        case Reduce::max: o = std::max(o, x.i[e]); break;
        case Reduce::min: o = std::min(o, x.i[e]); break;
        case Reduce::prod: o = static_cast<int64_t>(uint64_t(o) * v); break;
        case Reduce::l1: o = static_cast<int64_t>(uint64_t(o) + (x.i[e] < 0 ? 0 - v : v)); break;
        case Reduce::sum_square: o = static_cast<int64_t>(uint64_t(o) + v * v); break;
        default: o = static_cast<int64_t>(uint64_t(o) + v); break;
      }
    }
    if (kind == Reduce::mean)
      for (int64_t& o : y.i) o = count ? o / count : 0;
  } else if (extreme) {
    // An empty max gives -inf and an empty min +inf, the identities (ONNX ReduceMax/Min-18); NaN
    // propagates.
    const bool is_max = kind == Reduce::max;
    std::vector<double> m(n_out, is_max ? -std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::infinity());
    std::vector<bool> nan(n_out, false);
    for (int64_t e = 0; e < n_in; ++e) {
      const double v = x.f[e];
      if (std::isnan(v)) nan[slot[e]] = true;
      m[slot[e]] = is_max ? std::max(m[slot[e]], v) : std::min(m[slot[e]], v);
    }
    for (int64_t o = 0; o < n_out; ++o) y.f[o] = nan[o] ? NAN : static_cast<float>(m[o]);
  } else {
    // LogSumExp subtracts each slot's maximum before exponentiating (log(sum(exp(x - m))) + m).
    std::vector<double> shift(n_out, 0.0);
    if (kind == Reduce::log_sum_exp) {
      std::vector<double> m(n_out, -std::numeric_limits<double>::infinity());
      for (int64_t e = 0; e < n_in; ++e) m[slot[e]] = std::max(m[slot[e]], double(x.f[e]));
      for (int64_t o = 0; o < n_out; ++o) shift[o] = std::isfinite(m[o]) ? m[o] : 0.0;
    }
    with_accumulation(c.accumulation(), [&](auto zero, auto round) {
      using T = decltype(zero);
      std::vector<T> s(n_out, kind == Reduce::prod ? T(1) : zero);
      for (int64_t e = 0; e < n_in; ++e) {
        const double v = x.f[e];
        T& acc = s[slot[e]];
        switch (kind) {
          case Reduce::prod: acc = round(acc * T(v)); break;
          case Reduce::l1: acc = round(acc + T(std::abs(v))); break;
          case Reduce::l2:
          case Reduce::sum_square: acc = round(acc + T(v * v)); break;
          case Reduce::log_sum_exp: acc = round(acc + T(std::exp(v - shift[slot[e]]))); break;
          default: acc = round(acc + T(v)); break;
        }
      }
      for (int64_t o = 0; o < n_out; ++o) {
        const double v = double(s[o]);
        double r = v;
        switch (kind) {
          case Reduce::mean: r = v / double(count); break;
          case Reduce::l2: r = std::sqrt(v); break;
          case Reduce::log_sum: r = std::log(v); break;
          case Reduce::log_sum_exp: r = std::log(v) + shift[o]; break;
          default: break;
        }
        y.f[o] = static_cast<float>(r);
      }
      return 0;
    });
  }
  c.out[0] = std::move(y);
  return {};
}

// ArgMax/ArgMin: index of the first (or, with select_last_index, last) extreme along `axis`.
Status arg_kernel(KernelContext& c, bool is_max) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  const Split3 s = split_at(x.shape, *axis);
  if (s.mid == 0) return c.error("cannot take ArgMax/ArgMin of an empty axis");
  const bool last = c.attr_int("select_last_index") != 0;
  std::vector<int64_t> out_shape = x.shape;
  if (c.attr_int("keepdims") != 0) out_shape[*axis] = 1;
  else out_shape.erase(out_shape.begin() + *axis);
  Buf y = Buf::ints(out_shape, DType::I64);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t best = 0;
      double bv = x.get(o * s.mid * s.inner + in);
      for (int64_t m = 1; m < s.mid; ++m) {
        const double v = x.get((o * s.mid + m) * s.inner + in);
        const bool better = is_max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
        if (better) {
          best = m;
          bv = v;
        }
      }
      y.i[o * s.inner + in] = best;
    }
  c.out[0] = std::move(y);
  return {};
}

// CumSum along the axis given by input 1 (exclusive: the element itself is left out; reverse:
// sums run from the end). Floats sum in FP64, integers in int64.
Status cumsum_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  const auto a = c.in(1).as_ints();
  if (a.size() != 1) return c.error("axis must be a scalar or a 1-element tensor");
  auto axis = ir::normalize_axis(a[0], x.rank());
  if (!axis) return c.error("axis " + std::to_string(a[0]) + " is out of range for rank " + std::to_string(x.rank()));
  const bool exclusive = c.attr_int("exclusive") != 0, reverse = c.attr_int("reverse") != 0;
  const Split3 s = split_at(x.shape, *axis);
  Buf y = Buf::like(x);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      double fs = 0;
      int64_t is = 0;
      for (int64_t m = 0; m < s.mid; ++m) {
        const int64_t mm = reverse ? s.mid - 1 - m : m;
        const int64_t k = (o * s.mid + mm) * s.inner + in;
        if (x.is_float()) {
          if (!exclusive) fs += x.f[k];
          y.f[k] = static_cast<float>(fs);
          if (exclusive) fs += x.f[k];
        } else {
          if (!exclusive) is += x.i[k];
          y.i[k] = is;
          if (exclusive) is += x.i[k];
        }
      }
    }
  c.out[0] = std::move(y);
  return {};
}

// Hardmax: one-hot of the first maximum along `axis`.
Status hardmax_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  const Split3 s = split_at(x.shape, *axis);
  Buf y = Buf::floats(x.shape, x.dtype);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      if (s.mid == 0) continue;
      int64_t best = 0;
      for (int64_t m = 1; m < s.mid; ++m)
        if (x.f[(o * s.mid + m) * s.inner + in] > x.f[(o * s.mid + best) * s.inner + in]) best = m;
      y.f[(o * s.mid + best) * s.inner + in] = 1.0f;
    }
  c.out[0] = std::move(y);
  return {};
}

// Negative log-likelihood of `logp` ([N, C, d...]) at `target` ([N, d...]), weighted by the
// optional class weights; targets equal to ignore_index add nothing (and no weight). Sums in FP64.
Status nll(KernelContext& c, const Buf& logp, Buf& out) {
  const Buf& tgt = c.in(1);
  const Buf* w = c.has(2) ? &c.in(2) : nullptr;
  if (logp.rank() < 2) return c.error("input must have rank >= 2");
  if (tgt.rank() + 1 != logp.rank()) return c.error("target rank must be input rank - 1");
  const int64_t n = logp.shape[0], cls = logp.shape[1];
  const Split3 s = split_at(logp.shape, 1);
  if (tgt.numel() != n * s.inner) return c.error("target shape does not match input");
  if (w && w->numel() != cls) return c.error("weight must have C elements");
  const std::string red = c.attr_string("reduction");
  if (red != "mean" && red != "sum" && red != "none")
    return c.error("reduction must be 'mean', 'sum' or 'none', is '" + red + "'");
  const bool has_ignore = c.has_attr("ignore_index");
  const int64_t ignore = has_ignore ? c.attr_int("ignore_index") : 0;
  Buf loss = Buf::floats(tgt.shape, logp.dtype);
  double total = 0, wsum = 0;
  for (int64_t o = 0; o < n; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const int64_t k = o * s.inner + in;
      const int64_t t = tgt.i[k];
      if (has_ignore && t == ignore) continue;
      if (t < 0 || t >= cls) return c.error("target " + std::to_string(t) + " is out of range [0, " + std::to_string(cls) + ")");
      const double wt = w ? w->get(t) : 1.0;
      const double l = -double(logp.f[(o * cls + t) * s.inner + in]) * wt;
      loss.f[k] = static_cast<float>(l);
      total += l;
      wsum += wt;
    }
  if (red == "none") {
    out = std::move(loss);
  } else {
    out = Buf::floats({}, logp.dtype);
    out.f[0] = static_cast<float>(red == "sum" ? total : total / wsum);
  }
  return {};
}

Status nll_kernel(KernelContext& c) {
  if (!c.in(0).is_float()) return c.unsupported("integer input");
  return nll(c, c.in(0), c.out[0]);
}

Status softmax_cross_entropy_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer scores");
  if (x.rank() < 2) return c.error("scores must have rank >= 2");
  const Split3 s = split_at(x.shape, 1);
  Buf logp = Buf::floats(x.shape, x.dtype);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      double mx = -INFINITY;
      for (int64_t m = 0; m < s.mid; ++m) mx = std::max(mx, double(x.f[(o * s.mid + m) * s.inner + in]));
      double sum = 0;
      for (int64_t m = 0; m < s.mid; ++m) sum += std::exp(double(x.f[(o * s.mid + m) * s.inner + in]) - mx);
      const double lse = mx + std::log(sum);
      for (int64_t m = 0; m < s.mid; ++m) {
        const int64_t k = (o * s.mid + m) * s.inner + in;
        logp.f[k] = static_cast<float>(double(x.f[k]) - lse);
      }
    }
  HPF_RETURN_IF_ERROR(nll(c, logp, c.out[0]));
  if (c.out.size() > 1) c.out[1] = std::move(logp);
  return {};
}

// InstanceNormalization: each (n, c) plane normalised by its own mean and variance, then
// scale[c] and B[c] applied.
Status instance_norm_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer input");
  if (x.rank() < 2) return c.error("input must be [N,C,...], got " + shape_string(x.shape));
  const int64_t ch = x.shape[1];
  for (size_t k = 1; k < 3; ++k)
    if (c.in(k).numel() != ch)
      return c.error(std::string(k == 1 ? "scale" : "B") + " has " + std::to_string(c.in(k).numel()) + " values for " +
                     std::to_string(ch) + " channels");
  const double eps = c.attr_float("epsilon");
  const int64_t plane = x.rank() > 2 ? numel(std::span(x.shape).subspan(2)) : 1;
  Buf y = Buf::like(x);
  for (int64_t p = 0; p < x.shape[0] * ch; ++p) {
    const float* xp = x.f.data() + p * plane;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < plane; ++k) mean += xp[k];
    mean /= double(plane);
    for (int64_t k = 0; k < plane; ++k) var += (xp[k] - mean) * (xp[k] - mean);
    var /= double(plane);
    const double scale = c.in(1).get(p % ch) / std::sqrt(var + eps), bias = c.in(2).get(p % ch);
    for (int64_t k = 0; k < plane; ++k) y.f[p * plane + k] = static_cast<float>((xp[k] - mean) * scale + bias);
  }
  c.out[0] = std::move(y);
  return {};
}

// LRN across channels: x / (bias + alpha / size * sum of squares over the channel window)^beta,
// the window reaching floor((size-1)/2) channels back and ceil((size-1)/2) forward.
Status lrn_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer input");
  if (x.rank() < 3) return c.error("input must be [N,C,spatial...], got " + shape_string(x.shape));
  const int64_t size = c.attr_int("size");
  if (size < 1) return c.error("size must be >= 1, is " + std::to_string(size));
  const double alpha = c.attr_float("alpha"), beta = c.attr_float("beta"), bias = c.attr_float("bias");
  const Split3 s = split_at(x.shape, 1);
  const int64_t back = (size - 1) / 2, fwd = size - 1 - back;
  Buf y = Buf::like(x);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t ci = 0; ci < s.mid; ++ci)
      for (int64_t in = 0; in < s.inner; ++in) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, ci - back); j <= std::min(s.mid - 1, ci + fwd); ++j) {
          const double v = x.f[(o * s.mid + j) * s.inner + in];
          sq += v * v;
        }
        const int64_t k = (o * s.mid + ci) * s.inner + in;
        y.f[k] = static_cast<float>(x.f[k] / std::pow(bias + alpha / double(size) * sq, beta));
      }
  c.out[0] = std::move(y);
  return {};
}

// MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes` (default [0, 2, 3]), with
// the standard deviation from E[x^2] - E[x]^2 as ONNX defines it.
Status mvn_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer input");
  std::vector<int64_t> axes = c.has_attr("axes") ? c.attr_ints("axes") : std::vector<int64_t>{0, 2, 3};
  auto ax = ir::normalize_axes(axes, x.rank());
  if (!ax.ok()) return c.error(ax.status().message());
  // Each element's group: its flat index with the reduced axes dropped.
  std::vector<int64_t> kept_shape = x.shape;
  for (int64_t a : *ax) kept_shape[a] = 1;
  BroadcastIndexer group(kept_shape, x.shape);
  const int64_t groups = numel(kept_shape), per = groups ? x.numel() / groups : 0;
  std::vector<double> sum(groups, 0.0), sq(groups, 0.0);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const double v = x.f[k];
    sum[group(k)] += v;
    sq[group(k)] += v * v;
  }
  Buf y = Buf::like(x);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t g = group(k);
    const double mean = sum[g] / double(per), var = std::max(0.0, sq[g] / double(per) - mean * mean);
    y.f[k] = static_cast<float>((x.f[k] - mean) / (std::sqrt(var) + 1e-9));
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_normalization_kernels(KernelTable& t) {
  t["InstanceNormalization"] = instance_norm_kernel;
  t["LRN"] = lrn_kernel;
  t["MeanVarianceNormalization"] = mvn_kernel;
  t["ArgMax"] = [](KernelContext& c) { return arg_kernel(c, true); };
  t["ArgMin"] = [](KernelContext& c) { return arg_kernel(c, false); };
  t["CumSum"] = cumsum_kernel;
  t["Hardmax"] = hardmax_kernel;
  t["NegativeLogLikelihoodLoss"] = nll_kernel;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_kernel;
  t["BatchNormalization"] = batch_norm_kernel;
  t["LayerNormalization"] = layer_norm_kernel;
  t["Softmax"] = [](KernelContext& c) { return softmax_kernel(c, false); };
  t["LogSoftmax"] = [](KernelContext& c) { return softmax_kernel(c, true); };
  t["ReduceSum"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::sum); };
  t["ReduceMean"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::mean); };
  t["ReduceMax"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::max); };
  t["ReduceMin"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::min); };
  t["ReduceProd"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::prod); };
  t["ReduceL1"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::l1); };
  t["ReduceL2"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::l2); };
  t["ReduceSumSquare"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::sum_square); };
  t["ReduceLogSum"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::log_sum); };
  t["ReduceLogSumExp"] = [](KernelContext& c) { return reduce_kernel(c, Reduce::log_sum_exp); };
}

}  // namespace hpf::ref
