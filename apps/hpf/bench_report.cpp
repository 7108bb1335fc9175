// hpf bench's markdown report and SVG chart (bench_report.hpp).
#include "apps/hpf/bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/hpf/run_common.hpp"

namespace hpf::cli {
namespace {

using json = nlohmann::json;

std::string fmt(const char* f, double v) { return format_double(f, v); }
// A number as `f`, or "-" when the JSON has none (null: NaN or Inf).
std::string num(const json& v, const char* f) { return v.is_number() ? fmt(f, v.get<double>()) : "-"; }
std::string field(const json& o, const char* key, const char* f) {
  return o.is_object() && o.contains(key) ? num(o[key], f) : "-";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

const char* kColours[] = {"#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"};

}  // namespace

std::string format_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string bench_svg_path(const std::string& markdown_path) {
  std::filesystem::path p(markdown_path);
  if (p.extension() == ".md") return p.replace_extension(".svg").string();
  return markdown_path + ".svg";
}

std::string bench_svg(const json& j) {
  const json& plans = j["plans"];
  const int rows = std::max<int>(1, static_cast<int>(plans.size()));
  const int row_h = 30, top = 78, label_w = 120;
  const int lat_x = label_w + 10, lat_w = 300;
  const int kl_x = lat_x + lat_w + 70, kl_w = 270;
  const int width = kl_x + kl_w + 30, height = top + rows * row_h + 46;

  double max_ms = 0, max_kl = 0, min_kl = 1;
  for (const json& p : plans) {
    if (!p.contains("latency_ms")) continue;
    max_ms = std::max(max_ms, p["latency_ms"]["max"].get<double>());
    const json& kl = p["fidelity"]["kl"];
    if (kl.is_number() && kl.get<double>() > 0) {
      max_kl = std::max(max_kl, kl.get<double>());
      min_kl = std::min(min_kl, kl.get<double>());
    }
  }
  if (max_ms <= 0) max_ms = 1;
  const double budget = j.value("kl_budget", 1e-3);
  // Log axis over whole decades from below the smallest divergence to above the budget.
  const double lo_dec = std::floor(std::log10(std::min({min_kl, budget, 1e-6}))) - 1;
  const double hi_dec = std::ceil(std::log10(std::max({max_kl, budget * 10, 1e-2})));
  auto kl_pos = [&](double v) {
    const double t = (std::log10(v) - lo_dec) / (hi_dec - lo_dec);
    return kl_x + kl_w * std::clamp(t, 0.0, 1.0);
  };
  auto lat_pos = [&](double ms) { return lat_x + lat_w * ms / (max_ms * 1.15); };

  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"white\"/>\n"
    << "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">hpf bench "
    << xml_escape(j.value("model", "")) << "</text>\n"
    << "<text x=\"10\" y=\"38\" fill=\"#444\">" << xml_escape(j.value("device", "")) << ", threads "
    << xml_escape(j["threads"].is_number() ? std::to_string(j["threads"].get<int>()) : j["threads"].get<std::string>())
    << "</text>\n"
    << "<text x=\"" << lat_x << "\" y=\"" << top - 12
    << "\" font-weight=\"bold\">median latency, ms (line: min to max)</text>\n"
    << "<text x=\"" << kl_x << "\" y=\"" << top - 12
    << "\" font-weight=\"bold\">divergence from the FP32 reference (log)</text>\n";
  // Axes.
  const int axis_y = top + rows * row_h + 4;
  s << "<line x1=\"" << lat_x << "\" y1=\"" << top - 4 << "\" x2=\"" << lat_x << "\" y2=\"" << axis_y
    << "\" stroke=\"#000\"/>\n"
    << "<line x1=\"" << lat_x << "\" y1=\"" << axis_y << "\" x2=\"" << lat_x + lat_w << "\" y2=\"" << axis_y
    << "\" stroke=\"#000\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    const double ms = max_ms * 1.15 * t / 4;
    const double x = lat_pos(ms);
    s << "<line x1=\"" << x << "\" y1=\"" << axis_y << "\" x2=\"" << x << "\" y2=\"" << axis_y + 4
      << "\" stroke=\"#000\"/>\n<text x=\"" << x << "\" y=\"" << axis_y + 17 << "\" text-anchor=\"middle\">"
      << fmt("%.3g", ms) << "</text>\n";
  }
  s << "<line x1=\"" << kl_x << "\" y1=\"" << axis_y << "\" x2=\"" << kl_x + kl_w << "\" y2=\"" << axis_y
    << "\" stroke=\"#000\"/>\n";
  const int step = hi_dec - lo_dec > 8 ? 2 : 1;
  for (int d = static_cast<int>(lo_dec); d <= static_cast<int>(hi_dec); d += step) {
    const double x = kl_pos(std::pow(10.0, d));
    s << "<line x1=\"" << x << "\" y1=\"" << top - 4 << "\" x2=\"" << x << "\" y2=\"" << axis_y + 4
      << "\" stroke=\"#ddd\"/>\n<text x=\"" << x << "\" y=\"" << axis_y + 17 << "\" text-anchor=\"middle\">1e"
      << d << "</text>\n";
  }
  const double bx = kl_pos(budget);
  s << "<line x1=\"" << bx << "\" y1=\"" << top - 4 << "\" x2=\"" << bx << "\" y2=\"" << axis_y
    << "\" stroke=\"#d62728\" stroke-dasharray=\"4,3\"/>\n<text x=\"" << bx << "\" y=\"" << axis_y + 32
    << "\" text-anchor=\"middle\" fill=\"#d62728\">KL budget " << fmt("%.0e", budget) << "</text>\n";
  // One row per plan.
  for (size_t k = 0; k < plans.size(); ++k) {
    const json& p = plans[k];
    const int y = top + static_cast<int>(k) * row_h;
    const char* colour = kColours[k % (sizeof kColours / sizeof kColours[0])];
    s << "<text x=\"" << label_w << "\" y=\"" << y + 19 << "\" text-anchor=\"end\" font-weight=\"bold\">"
      << xml_escape(p.value("plan", "")) << "</text>\n";
    if (!p.contains("latency_ms")) {
      s << "<text x=\"" << lat_x + 6 << "\" y=\"" << y + 19 << "\" fill=\"#d62728\">error: "
        << xml_escape(p.value("error", "").substr(0, 90)) << "</text>\n";
      continue;
    }
    const json& l = p["latency_ms"];
    const double med = l["median"].get<double>(), lo = l["min"].get<double>(), hi = l["max"].get<double>();
    s << "<rect x=\"" << lat_x << "\" y=\"" << y + 6 << "\" width=\"" << lat_pos(med) - lat_x
      << "\" height=\"18\" fill=\"" << colour << "\"/>\n"
      << "<line x1=\"" << lat_pos(lo) << "\" y1=\"" << y + 15 << "\" x2=\"" << lat_pos(hi) << "\" y2=\"" << y + 15
      << "\" stroke=\"#000\" stroke-width=\"1.5\"/>\n"
      << "<text x=\"" << lat_pos(hi) + 5 << "\" y=\"" << y + 19 << "\">" << fmt("%.3g", med)
      << "</text>\n";
    const json& kl = p["fidelity"]["kl"];
    if (kl.is_number() && kl.get<double>() > 0) {
      const double v = kl.get<double>();
      s << "<rect x=\"" << kl_x << "\" y=\"" << y + 6 << "\" width=\"" << kl_pos(v) - kl_x << "\" height=\"18\" fill=\""
        << colour << "\" fill-opacity=\"0.75\"/>\n<text x=\"" << kl_pos(v) + 5 << "\" y=\"" << y + 19 << "\">"
        << fmt("%.2e", v) << "</text>\n";
    } else {
      s << "<text x=\"" << kl_x + 5 << "\" y=\"" << y + 19 << "\">" << (kl.is_number() ? "0 (exact)" : "inf / NaN")
        << "</text>\n";
    }
  }
  s << "</svg>\n";
  return s.str();
}

Status write_bench_report(const json& j, const std::string& markdown_path) {
  const std::string svg_path = bench_svg_path(markdown_path);
  const std::filesystem::path parent = std::filesystem::path(markdown_path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Status::io_error("--report: cannot create " + parent.string() + ": " + ec.message());
  {
    std::ofstream svg(svg_path);
    svg << bench_svg(j);
    if (!svg) return Status::io_error("--report: cannot write " + svg_path);
  }
  std::ostringstream m;
  m << "# hpf bench: " << md_escape(j.value("model", "")) << "\n\n";
  m << "- device: " << md_escape(j.value("device", "")) << "; threads: "
    << (j["threads"].is_number() ? std::to_string(j["threads"].get<int>()) : j["threads"].get<std::string>())
    << " (hardware threads " << j.value("hardware_threads", 0) << "); batch " << j.value("batch", 1) << "\n";
  m << "- model: " << j.value("nodes", 0) << " nodes, " << fmt("%.4g", j.value("flops", 0.0) / 1e9)
    << " GFLOP per inference; inputs:";
  for (const json& in : j["inputs"])
    m << " `" << in.value("name", "") << "` " << in.value("dtype", "") << in["shape"].dump() << " ("
      << in.value("source", "") << ")";
  m << "\n- reference interpreter (FP32 storage, FP64 accumulation): " << fmt("%.1f", j.value("reference_ms", 0.0))
    << " ms\n\n";
  m << "![median latency and divergence per plan](" << std::filesystem::path(svg_path).filename().string() << ")\n\n";

  m << "## Per plan\n\n"
    << "| plan | KL vs FP32 ref | top-1 | max rel err | median ms | min ms | max ms | inf/s | GFLOP/s | peak memory "
       "| weights | TOPS/W (est.) | J/inference (est.) | cold start ms | warm cache ms | recompiles |\n"
    << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> errors;
  for (const json& p : j["plans"]) {
    if (p.contains("error")) {
      errors.push_back(p.value("plan", "") + ": " + p.value("error", ""));
      m << "| " << md_escape(p.value("plan", "")) << " | error (below) |||||||||||||||\n";
      continue;
    }
    const json& f = p["fidelity"];
    const json& l = p["latency_ms"];
    const json cs = p.value("cold_start", json::object());
    m << "| " << md_escape(p.value("plan", "")) << " | " << num(f["kl"], "%.3e") << " | "
      << (f.contains("top1_agreement") ? fmt("%.0f%%", 100 * f["top1_agreement"].get<double>()) : "-") << " | "
      << num(f["max_rel_error"], "%.3e") << " | " << num(l["median"], "%.3f") << " | " << num(l["min"], "%.3f")
      << " | " << num(l["max"], "%.3f") << " | " << num(p["inferences_per_s"], "%.1f") << " | "
      << num(p["gflops"], "%.2f") << " | " << human_bytes(p["memory"]["peak_bytes"].get<double>()) << " | "
      << human_bytes(p["memory"]["weight_bytes"].get<double>()) << " | " << num(p["energy"]["tops_per_w"], "%.4f")
      << " | " << num(p["energy"]["joules_per_inference"], "%.3g") << " | " << field(cs, "empty_cache_ms", "%.0f")
      << " | " << field(cs, "warm_cache_ms", "%.0f") << " | " << p["recompiles"].size() << " |\n";
  }
  m << "\n";
  bool any_modes = false;
  for (const json& p : j["plans"]) any_modes = any_modes || p.contains("modes");
  if (any_modes) {
    m << "Node modes per plan (a mode the device lacks falls back, see `hpf run --plan`):\n\n";
    for (const json& p : j["plans"]) {
      if (!p.contains("modes")) continue;
      m << "- " << md_escape(p.value("plan", "")) << ":";
      for (const auto& [mode, n] : p["modes"].items()) m << " " << mode << " " << n.dump();
      if (p.contains("planner"))
        m << " (planner: divergence " << num(p["planner"]["divergence"], "%.3e") << " on its calibration inputs, "
          << fmt("%.1f", p["planner"].value("seconds", 0.0)) << " s)";
      m << "\n";
    }
    m << "\n";
  }
  if (j.contains("consistency")) {
    m << "## Cross-platform consistency\n\nThe FP32 plan on every loaded backend whose device scores above 0, and the "
         "reference interpreter; KL(a || b) with a as the reference.\n\n"
      << "| a | b | KL(a \\|\\| b) | max rel err | top-1 |\n|---|---|---:|---:|---:|\n";
    for (const json& p : j["consistency"]["pairs"])
      m << "| " << p.value("a", "") << " | " << p.value("b", "") << " | " << num(p["kl"], "%.3e") << " | "
        << num(p["max_rel_error"], "%.3e") << " | "
        << (p["top1_agreement"].is_number() ? fmt("%.0f%%", 100 * p["top1_agreement"].get<double>()) : "-") << " |\n";
    for (const json& b : j["consistency"]["backends"])
      if (b.contains("error")) errors.push_back("backend " + b.value("name", "") + ": " + b.value("error", ""));
    m << "\n";
  }
  if (!errors.empty()) {
    m << "## Errors\n\n";
    for (const std::string& e : errors) m << "- " << e << "\n";
    m << "\n";
  }
  const json first_energy = [&] {
    for (const json& p : j["plans"])
      if (p.contains("energy")) return p["energy"];
    return json::object();
  }();
  m << "## How the figures are made\n\n"
    << "- Latency: median, min and max of `runs` timed runs after `warmup` untimed ones, on a live executable "
       "whose overflow healing watches the first run and whose slow-kernel re-planning is off (each plan is "
       "measured as planned). inf/s = batch / median.\n"
    << "- KL: per output the planner's metric (`output_metrics_for`: KL over softmax of the last axis for logits, "
       "KL of probabilities, Bernoulli KL of sigmoid outputs), then the largest over the outputs; top-1 and rel-L2 "
       "on the output `"
    << md_escape([&] {
         for (const json& p : j["plans"])
           if (p.contains("fidelity") && p["fidelity"].contains("watched")) return p["fidelity"]["watched"].get<std::string>();
         return std::string("-");
       }())
    << "`; max rel err = max|device - reference| / max|reference|, the largest over the float outputs.\n"
    << "- FLOPs: " << md_escape(j.value("flop_count", "")) << ". GFLOP/s = FLOPs / median.\n"
    << "- Energy: " << md_escape(first_energy.value("source", j.value("energy_source", "no TDP in hwdb"))) << ".\n"
    << "- Cold start: time from creating the executable to its first output with an empty temporary kernel "
       "cache (every kernel compiled), then again on that cache (every kernel loaded); plugins were already loaded.\n"
    << "- Memory: peak = weights in their storage formats plus the peak of the reused activation arena.\n";
  std::ofstream md(markdown_path);
  md << m.str();
  if (!md) return Status::io_error("--report: cannot write " + markdown_path);
  return Status();
}

}  // namespace hpf::cli
