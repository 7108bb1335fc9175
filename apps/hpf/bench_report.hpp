// The report of `hpf bench --report FILE.md`: a markdown file with the tables, and beside it an
// SVG chart (median latency with its min-max range, and the divergence from the FP32 reference,
// per plan) that the markdown links. Both are made from the JSON `hpf bench --json` prints.
// Plain functions writing files; no state.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hpf/status.hpp"

namespace hpf::cli {

// `v` through printf's `format` (one double conversion), e.g. format_double("%.3e", kl).
std::string format_double(const char* format, double v);

// FILE.md -> FILE.svg (any other name gets ".svg" appended).
std::string bench_svg_path(const std::string& markdown_path);

// The chart alone, as SVG 1.1 text (hand-written, no external resources).
std::string bench_svg(const nlohmann::json& bench);

// Writes the markdown to `markdown_path` and the chart to bench_svg_path(markdown_path);
// io_error naming the file that could not be written.
Status write_bench_report(const nlohmann::json& bench, const std::string& markdown_path);

}  // namespace hpf::cli
