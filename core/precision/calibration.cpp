// Calibration: observers of |x|, max / percentile / KL-entropy thresholds, weight scales.
#include "hpf/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <future>
#include <limits>
#include <numeric>
#include <thread>

#include "hpf/reference.hpp"

namespace hpf {
namespace {

Status check_pct(const char* fn, double pct) {
  if (pct > 0 && pct <= 100) return {};
  return Status::invalid(fmt::format("{}: percentile {} is outside (0, 100]", fn, pct));
}

// The public implementations' smoothing (MXNet/TVM `_smooth_distribution`): every empty bin
// gets eps, taken evenly from the non-empty ones, so KL stays finite where Q misses a bin of P.
void smooth(std::vector<double>& d) {
  constexpr double eps = 1e-4;
  const auto zeros = static_cast<double>(std::count(d.begin(), d.end(), 0.0));
  const double nonzeros = static_cast<double>(d.size()) - zeros;
  if (zeros == 0 || nonzeros == 0) return;
  const double take = eps * zeros / nonzeros;
  for (double& v : d) v = v == 0 ? eps : v - take;
}

// KL(P || Q) of two count vectors, each normalised to sum 1 (natural log).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  const double sp = std::accumulate(p.begin(), p.end(), 0.0);
  const double sq = std::accumulate(q.begin(), q.end(), 0.0);
  double kl = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] <= 0) continue;
    const double pk = p[k] / sp, qk = q[k] / sq;
    if (qk <= 0) return std::numeric_limits<double>::infinity();
    kl += pk * std::log(pk / qk);
  }
  return kl;
}

// KL(P || Q) for clipping the histogram at `i` bins and quantising the kept range to `levels`.
double clipped_divergence(std::span<const int64_t> h, size_t i, size_t levels, double outliers) {
  std::vector<double> p(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i));
  p[i - 1] += outliers;  // clipping maps everything beyond the threshold onto it
  // Q: the kept bins (without the outliers: that difference is what clipping costs) merged into
  // `levels` groups of i / levels bins, the last taking the remainder, then spread evenly over
  // the bins where P is non-empty (an empty bin stays empty: quantisation does not create data).
  std::vector<double> q(i, 0.0);
  const size_t merged = i / levels;
  for (size_t g = 0; g < levels; ++g) {
    const size_t start = g * merged, stop = g + 1 == levels ? i : start + merged;
    double sum = 0;
    size_t nonempty = 0;
    for (size_t k = start; k < stop; ++k) {
      sum += static_cast<double>(h[k]);
      nonempty += p[k] != 0 ? 1 : 0;
    }
    if (nonempty == 0) continue;
    for (size_t k = start; k < stop; ++k)
      if (p[k] != 0) q[k] = sum / static_cast<double>(nonempty);
  }
  smooth(p);
  smooth(q);
  return kl_divergence(p, q);
}

// Right-closed bins (j w, (j + 1) w], 0 in bin 0: ceil(v / w) - 1. Unlike floor, the largest
// value (v == range) needs no clamp, and doubling the range maps bin j to exactly j / 2.
size_t bin_of(float v, float range, size_t bins) {
  const double x = std::ceil(static_cast<double>(v) / range * static_cast<double>(bins));
  return x <= 1 ? 0 : std::min(static_cast<size_t>(x) - 1, bins - 1);
}

Expected<std::vector<float>> float_values(const char* fn, const Tensor& t) {
  if (!is_float(t.dtype()))
    return Status::invalid(fmt::format("{}: needs a float tensor, got {}", fn, t.describe()));
  return t.to_f32();
}

}  // namespace

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::max:
      return "max";
    case CalibrationMethod::percentile:
      return "percentile";
    case CalibrationMethod::entropy:
      return "entropy";
  }
  return "?";
}

Expected<CalibrationMethod> parse_calibration_method(std::string_view name) {
  for (auto m : {CalibrationMethod::max, CalibrationMethod::percentile, CalibrationMethod::entropy})
    if (name == calibration_method_name(m)) return m;
  if (name == "kl") return CalibrationMethod::entropy;
  return Status::invalid(
      fmt::format("unknown calibration method '{}' (expected max, percentile or entropy)", name));
}

// ---- Observer ---------------------------------------------------------------------------------

// Pairs of bins must merge when the range doubles: an even count, at least 2.
Observer::Observer(int bins) : hist_(static_cast<size_t>(std::max(2, bins + (bins & 1))), 0) {}

Status Observer::observe(std::span<const float> x) {
  float batch_amax = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!std::isfinite(x[k]))
      return Status::invalid(fmt::format("Observer: value {} of the batch is {}", k, x[k]));
    batch_amax = std::max(batch_amax, std::fabs(x[k]));
  }
  count_ += static_cast<int64_t>(x.size());
  zeros_ += std::count(x.begin(), x.end(), 0.0f);
  amax_ = std::max(amax_, batch_amax);
  if (range_ == 0) {
    if (batch_amax == 0) {
      pending_zeros_ += static_cast<int64_t>(x.size());
      return {};
    }
    range_ = batch_amax;
    hist_[0] += pending_zeros_;
    pending_zeros_ = 0;
  }
  grow_to(batch_amax);
  for (float v : x) ++hist_[bin_of(std::fabs(v), range_, hist_.size())];
  return {};
}

Status Observer::observe(const Tensor& t) {
  HPF_ASSIGN_OR_RETURN(auto v, float_values("Observer", t));
  return observe(v);
}

void Observer::grow_to(float amax) {
  const size_t n = hist_.size();
  while (range_ < amax) {
    range_ *= 2;  // exact; the bin boundaries of the old histogram are boundaries of the new
    for (size_t j = 0; j < n / 2; ++j) hist_[j] = hist_[2 * j] + hist_[2 * j + 1];
    std::fill(hist_.begin() + static_cast<std::ptrdiff_t>(n / 2), hist_.end(), 0);
  }
}

Expected<float> Observer::percentile(double pct) const {
  HPF_RETURN_IF_ERROR(check_pct("Observer::percentile", pct));
  if (count_ == 0) return Status::invalid("Observer::percentile: nothing observed");
  if (range_ == 0) return 0.0f;
  const double target = pct / 100.0 * static_cast<double>(count_);
  const double w = bin_width();
  double cum = 0;
  for (size_t j = 0; j < hist_.size(); ++j) {
    const auto c = static_cast<double>(hist_[j]);
    if (c > 0 && cum + c >= target) {
      const double t = (static_cast<double>(j) + std::clamp((target - cum) / c, 0.0, 1.0)) * w;
      return std::min(static_cast<float>(t), amax_);
    }
    cum += c;
  }
  return amax_;
}

Expected<float> Observer::threshold(const CalibrationOptions& o) const {
  if (count_ == 0) return Status::invalid("Observer: nothing observed");
  switch (o.method) {
    case CalibrationMethod::max:
      return amax_;
    case CalibrationMethod::percentile:
      return percentile(o.percentile);
    case CalibrationMethod::entropy:
      if (range_ == 0) return 0.0f;
      std::vector<int64_t> h = hist_;
      h[0] -= zeros_;
      HPF_ASSIGN_OR_RETURN(const float t, entropy_threshold(h, bin_width(), o.levels, o.first_bin));
      return std::min(t, amax_);  // the upper bin edge can pass the largest value seen
  }
  return amax_;
}

// ---- thresholds and parameters ----------------------------------------------------------------

Expected<float> entropy_threshold(std::span<const int64_t> h, float bin_width, int levels,
                                  int first_bin) {
  const char* fn = "entropy_threshold";
  if (levels < 2) return Status::invalid(fmt::format("{}: levels {} is below 2", fn, levels));
  if (first_bin < levels)
    return Status::invalid(
        fmt::format("{}: first_bin {} is below levels {}", fn, first_bin, levels));
  size_t n = h.size();
  while (n > 0 && h[n - 1] == 0) --n;
  if (n == 0) return Status::invalid(fmt::format("{}: the histogram is empty", fn));
  const auto first = static_cast<size_t>(first_bin);
  if (n <= first) return static_cast<float>(static_cast<double>(n) * bin_width);
  // Counts beyond candidate i, for every i, from the top down.
  std::vector<double> beyond(n + 1, 0.0);
  for (size_t k = n; k-- > 0;) beyond[k] = beyond[k + 1] + static_cast<double>(h[k]);
  size_t best = n;
  double best_kl = std::numeric_limits<double>::infinity();
  for (size_t i = first; i <= n; ++i) {
    const double kl = clipped_divergence(h.first(n), i, static_cast<size_t>(levels), beyond[i]);
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return static_cast<float>(static_cast<double>(best) * bin_width);
}

Expected<float> percentile_abs(std::span<const float> x, double pct) {
  HPF_RETURN_IF_ERROR(check_pct("percentile_abs", pct));
  if (x.empty()) return Status::invalid("percentile_abs: no values");
  std::vector<float> a(x.size());
  std::transform(x.begin(), x.end(), a.begin(), [](float v) { return std::fabs(v); });
  // Nearest rank: the smallest value with at least pct% of the values at or below it.
  // The epsilon keeps 99.99% of 10000 at rank 9999 whatever the last bit of pct / 100.
  const auto rank =
      static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(a.size()) - 1e-9));
  const size_t k = std::clamp<size_t>(rank, 1, a.size()) - 1;
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k), a.end());
  return a[k];
}

QuantParams int8_symmetric(float threshold) {
  QuantParams p;
  p.type = DType::I8;
  const float s = threshold / 127.0f;
  p.scales = {s > 0 && std::isfinite(s) ? std::max(s, std::numeric_limits<float>::min()) : 1.0f};
  return p;
}

Expected<QuantParams> int8_activation_params(const Observer& obs,
                                             const CalibrationOptions& options) {
  HPF_ASSIGN_OR_RETURN(const float t, obs.threshold(options));
  return int8_symmetric(t);
}

Expected<WeightAxes> weight_axes(std::string_view op, size_t input, int64_t rank, bool trans_b) {
  const int r = static_cast<int>(rank);
  if (op == "MatMul" && input <= 1 && rank >= 1) {
    if (rank == 1) return WeightAxes{-1, 0};  // a vector: per tensor, groups along it
    return input == 1 ? WeightAxes{r - 1, r - 2} : WeightAxes{r - 2, r - 1};
  }
  if (op == "Gemm" && input == 1 && rank == 2) return trans_b ? WeightAxes{0, 1} : WeightAxes{1, 0};
  if (op == "Conv" && input == 1 && rank >= 3) return WeightAxes{0, 1};
  if (op == "ConvTranspose" && input == 1 && rank >= 3) return WeightAxes{1, 0};
  return Status::invalid(
      fmt::format("weight_axes: input {} of rank {} of {} is not a weight with known channel axes",
                  input, rank, op));
}

Expected<QuantParams> int8_weight_params(const Tensor& w, int axis, int qmax) {
  if (qmax < 1 || qmax > 127)
    return Status::invalid(fmt::format("int8_weight_params: qmax {} is outside [1, 127]", qmax));
  HPF_ASSIGN_OR_RETURN(auto v, float_values("int8_weight_params", w));
  HPF_ASSIGN_OR_RETURN(QuantParams p, choose_quant_params(v, w.shape(), DType::I8, true, axis));
  // amax / 127 -> amax / qmax: |w| / s then rounds to at most qmax (the ratio is within an ulp).
  if (qmax != 127)
    for (float& s : p.scales) s = s * 127.0f / static_cast<float>(qmax);
  return p;
}

Expected<QuantParams> int16_weight_params(const Tensor& w, int axis, int qmax) {
  if (qmax < 1 || qmax > 32767)
    return Status::invalid(fmt::format("int16_weight_params: qmax {} is outside [1, 32767]", qmax));
  HPF_ASSIGN_OR_RETURN(auto v, float_values("int16_weight_params", w));
  HPF_ASSIGN_OR_RETURN(QuantParams p, choose_quant_params(v, w.shape(), DType::I16, true, axis));
  for (float& s : p.scales) s = s * 32767.0f / static_cast<float>(qmax);  // as int8_weight_params
  return p;
}

Expected<QuantParams> int4_weight_params(const Tensor& w, int axis, int group_size) {
  HPF_ASSIGN_OR_RETURN(auto v, float_values("int4_weight_params", w));
  if (group_size <= 0)
    return Status::invalid(
        fmt::format("int4_weight_params: group_size {} is not positive", group_size));
  HPF_ASSIGN_OR_RETURN(QuantParams p, choose_quant_params(v, w.shape(), DType::I4, true, axis, group_size));
  for (float& s : p.scales) {  // up to the next BF16 value (the magnitude: scales are positive)
    const auto b = std::bit_cast<uint32_t>(s);
    if ((b & 0xFFFFu) == 0) continue;
    const float up = std::bit_cast<float>((b | 0xFFFFu) + 1);
    if (std::isfinite(up)) s = up;
  }
  return p;
}

Expected<QuantParams> fp8_params(float amax, DType format) {
  if (format != DType::F8E4M3 && format != DType::F8E5M2)
    return Status::invalid(fmt::format("fp8_params: {} is not an FP8 format", dtype_name(format)));
  if (!(amax >= 0) || !std::isfinite(amax))
    return Status::invalid(fmt::format("fp8_params: amax {} is not finite and >= 0", amax));
  QuantParams p;
  p.type = format;
  const float s = amax / float_format(format).max;
  p.scales = {amax == 0 ? 1.0f : std::max(s, std::numeric_limits<float>::min())};
  return p;
}

Status observe_values(const Graph& graph, const std::vector<std::vector<Tensor>>& batches,
                      const std::vector<std::string>& values,
                      std::map<std::string, Observer>& observers) {
  Graph g = graph;  // the same graph with every observed value as an extra output
  const size_t first_extra = g.outputs().size();
  for (const std::string& name : values) {
    auto id = g.find_value(name);
    if (!id)
      return Status::invalid(
          fmt::format("observe_values: graph '{}' has no value '{}'", g.name(), name));
    if (!is_float(g.value(*id).dtype))
      return Status::invalid(fmt::format("observe_values: value '{}' is {}, not a float value",
                                         name, dtype_name(g.value(*id).dtype)));
    HPF_RETURN_IF_ERROR(g.add_output(*id));
  }
  // The interpreter is single-threaded: batches run side by side, as many at a time as there
  // are cores, and are observed in batch order (a histogram depends on the order it grows in).
  const size_t wave = std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t first = 0; first < batches.size(); first += wave) {
    std::vector<std::future<Expected<std::vector<Tensor>>>> runs;
    for (size_t b = first; b < std::min(batches.size(), first + wave); ++b)
      runs.push_back(std::async(std::launch::async, [&g, &batches, b] { return ref::run(g, batches[b]); }));
    for (size_t r = 0; r < runs.size(); ++r) {
      const size_t b = first + r;
      auto outs = runs[r].get();
      if (!outs.ok())
        return Status(outs.status().code(),
                      fmt::format("observe_values: batch {}: {}", b, outs.status().message()));
      for (size_t k = 0; k < values.size(); ++k) {
        Status s = observers[values[k]].observe((*outs)[first_extra + k]);
        if (!s.ok())
          return Status::invalid(
              fmt::format("observe_values: batch {}, value '{}': {}", b, values[k], s.message()));
      }
    }
  }
  return {};
}

}  // namespace hpf
