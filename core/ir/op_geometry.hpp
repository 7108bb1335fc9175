// The arithmetic of op attributes that both shape inference and the kernels need: window
// geometry of Conv/Pool, Reshape targets, Slice ranges, Split sizes, axis lists. One place, so
// the shape a graph promises and the shape a kernel produces cannot disagree.
//
// Sizes are int64; -1 stands for an unknown size and propagates to what depends on it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hpf/status.hpp"

namespace hpf::ir {

struct WindowGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, out;
};

// Conv/MaxPool/AveragePool. `pads` is ONNX's [b1..bn, e1..en] or empty; auto_pad is NOTSET,
// SAME_UPPER, SAME_LOWER or VALID. Errors are messages without node context.
Expected<WindowGeometry> window_geometry(std::span<const int64_t> in, std::vector<int64_t> kernel,
                                         std::vector<int64_t> strides,
                                         std::vector<int64_t> dilations, std::vector<int64_t> pads,
                                         const std::string& auto_pad, bool ceil_mode);

// ConvTranspose: output_shape (spatial, may be empty) overrides and determines the pads.
Expected<WindowGeometry> conv_transpose_geometry(
    std::span<const int64_t> in, std::vector<int64_t> kernel, std::vector<int64_t> strides,
    std::vector<int64_t> dilations, std::vector<int64_t> pads, std::vector<int64_t> output_padding,
    std::vector<int64_t> output_shape, const std::string& auto_pad);

// Reshape's target: 0 copies the input dimension (unless allowzero), one -1 is inferred.
Expected<std::vector<int64_t>> reshape_target(std::span<const int64_t> in,
                                              std::span<const int64_t> shape, bool allowzero);

struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
  bool whole = true;  // every element, in order: the size (known or symbolic) is kept
};
// Per axis of `in`: the first index, step and count ONNX Slice selects (axes not named keep
// everything). Unknown input sizes give count -1.
Expected<std::vector<SliceAxis>> slice_ranges(std::span<const int64_t> in,
                                              std::span<const int64_t> starts,
                                              std::span<const int64_t> ends,
                                              std::span<const int64_t> axes,
                                              std::span<const int64_t> steps);

// Split sizes along one dimension of size `dim`: explicit `split`, else `num_outputs` pieces
// (ONNX: equal, the last one smaller when dim does not divide).
Expected<std::vector<int64_t>> split_sizes(int64_t dim, std::span<const int64_t> split,
                                           int64_t num_outputs);

// Resize: the input coordinate of output coordinate `x` along one axis of size `in` -> `out`
// for an ONNX coordinate_transformation_mode (half_pixel, half_pixel_symmetric,
// pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn (opset 11's name; also
// accepted as tf_half_pixel_for_nearest)), in double as the
// ONNX reference computes it; and the input index a nearest_mode (round_prefer_floor,
// round_prefer_ceil, floor, ceil) picks for it, clamped to [0, in).
double resize_source_coordinate(double x, int64_t in, int64_t out, double scale, const std::string& mode);
int64_t resize_nearest_index(double v, const std::string& mode, int64_t in);
bool is_resize_coordinate_mode(const std::string& mode);
// tf_crop_and_resize (not one of the modes above: it needs the roi): the input coordinate of
// output coordinate x for the normalised crop [start, end] of an axis; callers extrapolate when
// it falls outside [0, in - 1].
double resize_crop_coordinate(double x, int64_t in, int64_t out, double start, double end);
bool is_resize_nearest_mode(const std::string& mode);

// Pad: for each output coordinate along an axis of size `len` padded by [begin, end], the input
// coordinate it copies, or -1 for a constant cell. Negative pads crop first and the mode
// (constant, edge, reflect, wrap) then pads what is left, as the ONNX reference does; reflect
// and wrap repeat periodically like numpy.pad when a pad is longer than the axis.
Expected<std::vector<int64_t>> pad_source_map(const std::string& mode, int64_t len, int64_t begin, int64_t end);

// Normalises each axis against rank; error on out-of-range or repeated axes.
Expected<std::vector<int64_t>> normalize_axes(std::span<const int64_t> axes, int64_t rank);

}  // namespace hpf::ir
