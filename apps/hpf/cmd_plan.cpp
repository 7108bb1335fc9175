// hpf plan show: a saved precision plan as a table (or its JSON).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "apps/hpf/cli.hpp"
#include "hpf/precision.hpp"

namespace hpf::cli {
namespace {

const char* kPlanUsage =
    "usage: hpf plan show PLAN.json [--json]\n"
    "  show PLAN.json   each node's class, mode, formats, predicted and measured time, bytes and\n"
    "                   sensitivity (divergence of the outputs when only that node is lowered),\n"
    "                   with totals; --json prints the plan file's JSON\n";

// "-" for what was not measured (negative), else the value in `fmt`.
std::string measured(double x, const char* fmt) {
  if (x < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string human_bytes(int64_t n) {
  char buf[32];
  if (n < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  else if (n < (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else if (n < (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  return buf;
}

// Long names keep their end, where the distinguishing part usually is.
std::string fit(const std::string& s, size_t width) {
  return s.size() <= width ? s : "..." + s.substr(s.size() - (width - 3));
}

void print_header(const Plan& p) {
  std::map<std::string, int> modes;
  for (const NodePlan& n : p.nodes) ++modes[mode_name(n.mode)];
  std::string mix;
  for (const auto& [m, count] : modes)
    mix += (mix.empty() ? "" : ", ") + m + " " + std::to_string(count);
  std::printf("plan for graph '%s': %zu nodes (%s)\n", p.graph.c_str(), p.nodes.size(),
              mix.c_str());
  std::printf("metric %s, budget %.3g, divergence %s\n\n", p.metric.c_str(), p.budget,
              p.divergence < 0 ? "not measured" : measured(p.divergence, "%.3e").c_str());
}

void print_table(const Plan& p) {
  size_t width = 5, op_width = 2;
  for (const NodePlan& n : p.nodes)
    width = std::max(width, n.name.size()), op_width = std::max(op_width, n.op.size());
  width = std::min<size_t>(width, 48);
  op_width = std::min<size_t>(op_width, 18);
  const char* row = "%-*s %-*s %-11s %-12s %-7s %-7s %-5s %10s %10s %10s %11s\n";
  std::printf(row, int(width), "node", int(op_width), "op", "class", "mode", "storage", "weights",
              "accum", "pred ms", "meas ms", "bytes", "sensitivity");
  double predicted = 0, measured_ms = 0, sensitivity = 0;
  int64_t bytes = 0;
  int n_predicted = 0, n_measured = 0, n_sensitivity = 0;
  for (const NodePlan& n : p.nodes) {
    std::printf(
        row, int(width), fit(n.name, width).c_str(), int(op_width), fit(n.op, op_width).c_str(),
        node_class_name(n.node_class), mode_name(n.mode),
        std::string(dtype_name(n.storage)).c_str(), std::string(dtype_name(n.weights)).c_str(),
        std::string(dtype_name(n.accumulation)).c_str(), measured(n.predicted_ms, "%.4f").c_str(),
        measured(n.measured_ms, "%.4f").c_str(), n.bytes > 0 ? human_bytes(n.bytes).c_str() : "-",
        measured(n.sensitivity, "%.2e").c_str());
    if (n.predicted_ms >= 0) predicted += n.predicted_ms, ++n_predicted;
    if (n.measured_ms >= 0) measured_ms += n.measured_ms, ++n_measured;
    if (n.sensitivity >= 0) sensitivity += n.sensitivity, ++n_sensitivity;
    bytes += n.bytes;
  }
  std::printf(row, int(width), "total", int(op_width), "", "", "", "", "", "",
              n_predicted ? measured(predicted, "%.4f").c_str() : "-",
              n_measured ? measured(measured_ms, "%.4f").c_str() : "-", human_bytes(bytes).c_str(),
              n_sensitivity ? measured(sensitivity, "%.2e").c_str() : "-");
  std::printf(
      "\n(totals over the nodes that have them: time predicted for %d, measured for %d; the sum of "
      "%d\n"
      " sensitivities is a first-order estimate of the plan's divergence)\n",
      n_predicted, n_measured, n_sensitivity);
}

int plan_show(const std::vector<std::string>& argv) {
  auto args = parse_args("plan show", argv, {"--json"}, {});
  if (!args.ok()) return fail(args.status().message(), 2);
  if (args->positional.size() != 1)
    return fail(std::string("plan show needs one plan file\n") + kPlanUsage, 2);
  auto plan = Plan::load(args->positional[0]);
  if (!plan.ok()) return fail(plan.status().message());
  if (args->flag("--json")) {
    std::fputs(plan->to_json().c_str(), stdout);
    return 0;
  }
  print_header(*plan);
  print_table(*plan);
  return 0;
}

}  // namespace

int cmd_plan(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    std::fputs(kPlanUsage, argv.empty() ? stderr : stdout);
    return argv.empty() ? 2 : 0;
  }
  if (argv[0] == "show") return plan_show({argv.begin() + 1, argv.end()});
  return fail("unknown plan command '" + argv[0] + "'\n" + kPlanUsage, 2);
}

}  // namespace hpf::cli
