// Small facts about nodes shared by the planner's files (not installed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/precision.hpp"

namespace hpf::planner_detail {

// Runs on matrix units: MatMul, Gemm, Conv, ConvTranspose (and the op table's other matmul /
// conv class ops).
bool is_matrix(const Node& n);
bool has_float_output(const Graph& g, const Node& n);
// Element count of a value with every unknown or symbolic dimension taken as 1.
int64_t elements(const Value& v);
// The input indices the op table keeps wide (FP32 whatever the plan).
bool is_wide_input(const Node& n, size_t input);
// The block of a node name: the prefix up to and including the first '/'-separated component
// holding a digit ("layer3/attn/q" -> "layer3"); "" when none does.
std::string block_of(const std::string& name);
// The median of timings (the upper one of an even count); `v` must not be empty.
double median(std::vector<double> v);

// The planner's per-node times are the fastest of this many measurements of each mode's plan,
// taken in turn with the other modes' (Planner::measure_times); the device evaluator measures a
// plan again until the kernel cache holds as many for each of its kernels.
inline constexpr int kTimeMeasurements = 3;

}  // namespace hpf::planner_detail
