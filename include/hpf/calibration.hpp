// Calibration: quantisation parameters (hpf::QuantParams, dtype.hpp) from observed data.
//
//   Observer obs;                                    // one per activation tensor
//   for (const Tensor& batch : batches) obs.observe(batch);
//   QuantParams a = int8_activation_params(obs, {CalibrationMethod::entropy}).value();
//   QuantParams w = int8_weight_params(weight, weight_axes("MatMul", 1, 2).output).value();
//
// Activations (INT8, symmetric, per tensor: scale = threshold / 127) take one of three
// thresholds of |x|:
//   max         the largest |x| seen;
//   percentile  the given percentile of |x| (99.99 by default);
//   entropy     TensorRT's KL-divergence calibration ("8-bit Inference with TensorRT", Migacz,
//               GTC 2017): a 2048-bin histogram of |x|; for every candidate i from 128 bins up,
//               P = the first i bins with the counts beyond them added to bin i-1, Q = the same
//               i bins (without those outliers) merged into 128 levels and expanded back over
//               P's non-empty bins; the threshold is the i minimising KL(P || Q).
//               One deliberate departure: exact zeros are left out of the histogram the
//               search runs on. They are exact at any scale, and a ReLU output's zero spike
//               (half its values) sits in bin 0, which Q spreads over the first merged level
//               (i / 128 bins wide); that penalty shrinks with i and drags the threshold down
//               (on builtin:mlp's ReLU output: 1.1 instead of 4.4 for amax 4.8, KL of the
//               logits 0.026 instead of 5e-5). Without zeros in the data nothing changes.
// Weights: INT8 per output channel (amax / 127), INT4 group-wise along the reduction axis
// (groups of 32, 64 or 128, amax / 7), FP8 per tensor (amax / 448 for E4M3, / 57344 for E5M2).
//
// Ownership: plain values. Thread-safety: an Observer is not synchronised (one per thread or
// a lock); the free functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hpf/dtype.hpp"
#include "hpf/graph.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"

namespace hpf {

enum class CalibrationMethod { max, percentile, entropy };
const char* calibration_method_name(CalibrationMethod m);  // "max", "percentile", "entropy"
Expected<CalibrationMethod> parse_calibration_method(std::string_view name);

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::entropy;
  double percentile = 99.99;  // of |x|, in (0, 100]
  int levels = 128;           // entropy: quantised levels (INT8: 128 magnitudes)
  int first_bin = 128;        // entropy: the smallest candidate threshold, in bins
};

// Statistics of |x| over any number of calibration batches: count, running amax and a
// histogram of `bins` equal bins over [0, range()).
//
// Bins are right-closed, (j w, (j + 1) w] with 0 in bin 0, so |x| == range lands in the last
// bin. The range is set by the first batch with a non-zero value (its amax). When a later batch
// exceeds the range, the range doubles (as often as needed) and each pair of adjacent bins merges
// into one. Old bins nest exactly in the new ones, so no count is smeared or approximated: the
// histogram always equals the one that would have been built over the final range from the start.
// The cost: the final range can be up to twice the final amax, so between bins/2 and bins of the
// bins hold data (at least 1024 of 2048). Zeros seen before the range exists are kept aside and
// land in bin 0.
class Observer {
 public:
  static constexpr int kDefaultBins = 2048;
  explicit Observer(int bins = kDefaultBins);

  // Adds a batch. Non-finite values are an error (a calibration run that overflowed); nothing
  // of the batch is recorded then.
  Status observe(std::span<const float> x);
  Status observe(const Tensor& t);  // float tensors only

  int64_t count() const { return count_; }
  int64_t zeros() const { return zeros_; }  // exact zeros among them (in bin 0 of the histogram)
  float amax() const { return amax_; }
  float range() const { return range_; }  // 0 until a non-zero value was seen
  int bins() const { return static_cast<int>(hist_.size()); }
  float bin_width() const { return range_ / static_cast<float>(hist_.size()); }
  const std::vector<int64_t>& histogram() const { return hist_; }  // all zeros while range() == 0

  // Thresholds of |x| (0 when nothing non-zero was seen); entropy leaves exact zeros out (see
  // the top of this file), max and percentile count them. Errors: nothing observed; a
  // percentile outside (0, 100]; entropy options out of range.
  Expected<float> threshold(const CalibrationOptions& options) const;
  // The percentile from the histogram: linear interpolation inside the bin where the
  // cumulative count reaches pct% (within one bin width of the exact value).
  Expected<float> percentile(double pct) const;

 private:
  void grow_to(float amax);
  std::vector<int64_t> hist_;
  int64_t count_ = 0, zeros_ = 0, pending_zeros_ = 0;
  float amax_ = 0, range_ = 0;
};

// TensorRT's entropy threshold on a histogram of |x| (bins of equal `bin_width` from 0):
// candidates i = first_bin .. number of bins (trailing empty bins excluded, the histogram
// shorter than first_bin gives its full range); returns i * bin_width for the i of least
// KL(P || Q), the upper edge of the last bin kept (NVIDIA's slides write (i + 0.5) * width,
// half a bin further; the clipped distribution spans exactly [0, i * width)). Zero bins of P
// and Q are smoothed with eps = 1e-4 before the divergence, as the public implementations do,
// so a Q that misses a bin P has costs a finite amount. Errors: levels < 2, first_bin < levels,
// an all-zero histogram.
Expected<float> entropy_threshold(std::span<const int64_t> histogram, float bin_width,
                                  int levels = 128, int first_bin = 128);

// The pct-th percentile of |x| of one batch, exactly: the nearest-rank value (the smallest |x|
// with at least pct% of the values <= it). Errors: empty x, pct outside (0, 100].
Expected<float> percentile_abs(std::span<const float> x, double pct);

// INT8 per-tensor symmetric parameters for threshold t: scale t / 127 (1 when t is 0).
QuantParams int8_symmetric(float threshold);
// INT8 activation parameters from an observer with the chosen method.
Expected<QuantParams> int8_activation_params(const Observer& obs,
                                             const CalibrationOptions& options = {});

// Where a weight's output channels and reduction run, for a node input that is a weight.
struct WeightAxes {
  int output = -1;     // per-channel INT8 scales run along this axis
  int reduction = -1;  // INT4 groups run along this axis
};
// MatMul B [.., K, N]: output N (last), reduction K; Gemm B: [K, N], or [N, K] with transB;
// Conv / ConvTranspose W: [M, C/g, k..]: output 0, reduction 1 (ConvTranspose [C, M/g, k..]:
// output 1, reduction 0). Errors: another op or input, or a rank that does not fit.
Expected<WeightAxes> weight_axes(std::string_view op, size_t input, int64_t rank,
                                 bool trans_b = false);

// Per-channel INT8 weight scales: amax over everything but `axis`, / qmax, symmetric, so that
// |q| <= qmax (1..127; 64 where the device's dot product wants 7-bit weights,
// DeviceFormats::int8_weight_max). Errors: qmax out of range, w not float.
Expected<QuantParams> int8_weight_params(const Tensor& w, int axis, int qmax = 127);
// The same in I16 with |q| <= qmax (1..32767): an int8 node's 16-bit weights, qmax =
// int16_operand_qmax(K) (dtype.hpp). Errors: qmax out of range, w not float.
Expected<QuantParams> int16_weight_params(const Tensor& w, int axis, int qmax);
// Group-wise INT4 weight scales: groups of `group_size` (32, 64 or 128; any positive size
// dividing the axis is accepted) along `axis`, amax / 7 rounded up to a BF16 value (less
// than 2^-7 more: every q still within -7..7), symmetric. BF16 scales pack in 2 bytes (the CPU
// kernels read a fifth fewer bytes with groups of 32), as GGML's Q4_0 stores an FP16 per 32.
Expected<QuantParams> int4_weight_params(const Tensor& w, int axis, int group_size);
// FP8 per-tensor scale: amax / max of `format` (448 for F8E4M3, 57344 for F8E5M2); 1 for amax
// 0. Errors: a non-FP8 format, a negative or non-finite amax.
Expected<QuantParams> fp8_params(float amax, DType format = DType::F8E4M3);

// Runs `graph` with the reference interpreter on each batch (inputs in graph order) and feeds
// every value named in `values` (float values anywhere in the graph) into its observer, created
// on first use. Errors: a name the graph lacks or that is not float, a failing run.
Status observe_values(const Graph& graph, const std::vector<std::vector<Tensor>>& batches,
                      const std::vector<std::string>& values,
                      std::map<std::string, Observer>& observers);

}  // namespace hpf
