// Plan as data: versioned JSON that round-trips bit for bit, saved atomically, checked against
// the graph it is applied to.
#include <unistd.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "hpf/precision.hpp"

namespace hpf {
namespace {

using json = nlohmann::ordered_json;
constexpr const char* kFormat = "libhpf-plan";

// ---- writing -----------------------------------------------------------------------------------

// JSON has no Inf/NaN (nlohmann would write null): those are written as strings. Finite numbers
// are written with enough digits to parse back to the same bits.
json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

// A float as the shortest decimal that reads back (through double, as JSON readers do) to the
// same float: 0.0021 rather than 0.0020999999251... When a decimal that short would round twice
// onto another float, the float's exact value is written instead.
json number(float x) {
  if (!std::isfinite(x)) return number(double(x));
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
  const double shortest = std::strtod(std::string(buf, end).c_str(), nullptr);
  const bool same =
      std::bit_cast<uint32_t>(static_cast<float>(shortest)) == std::bit_cast<uint32_t>(x);
  return same ? shortest : double(x);
}

json quant_json(const QuantParams& q) {
  json scales = json::array();
  for (float s : q.scales) scales.push_back(number(s));
  return {{"type", std::string(dtype_name(q.type))},
          {"scales", scales},
          {"zero_points", q.zero_points},
          {"axis", q.axis},
          {"group_size", q.group_size}};
}

json node_json(const NodePlan& n) {
  json j = {{"name", n.name},
            {"op", n.op},
            {"class", node_class_name(n.node_class)},
            {"mode", mode_name(n.mode)},
            {"storage", std::string(dtype_name(n.storage))},
            {"weights", std::string(dtype_name(n.weights))},
            {"accumulation", std::string(dtype_name(n.accumulation))}};
  if (n.weight_quant) j["weight_quant"] = quant_json(*n.weight_quant);
  if (n.activation_quant) j["activation_quant"] = quant_json(*n.activation_quant);
  if (n.input_quant) j["input_quant"] = quant_json(*n.input_quant);
  if (n.dynamic_rows != RowQuant::s8) j["dynamic_rows"] = n.dynamic_rows == RowQuant::u7 ? "u7" : "s16";
  j["predicted_ms"] = number(n.predicted_ms);
  j["measured_ms"] = number(n.measured_ms);
  j["bytes"] = n.bytes;
  j["sensitivity"] = number(n.sensitivity);
  return j;
}

// ---- reading: every error names the field and the value ----------------------------------------

class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  Status error(const std::string& key, const std::string& what) const {
    return Status::invalid("plan: " + where_ + key + ": " + what);
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  const json& at(const std::string& key) const { return j_.at(key); }

  Status string(const std::string& key, std::string& out, bool required = true) const {
    if (!has(key)) return required ? error(key, "missing") : Status();
    if (!at(key).is_string()) return error(key, "expected a string, got " + at(key).dump());
    out = at(key).get<std::string>();
    return {};
  }
  Status real(const std::string& key, double& out) const {
    if (!has(key)) return {};
    return to_double(at(key), key, out);
  }
  template <typename Int>
  Status integer(const std::string& key, Int& out) const {
    if (!has(key)) return {};
    const json& v = at(key);
    if (!v.is_number_integer()) return error(key, "expected an integer, got " + v.dump());
    const int64_t x = v.get<int64_t>();
    if (x < std::numeric_limits<Int>::min() || x > std::numeric_limits<Int>::max())
      return error(key, "value " + v.dump() + " is out of range");
    out = static_cast<Int>(x);
    return {};
  }
  // A string field parsed by `parse` (mode, class, dtype names).
  template <typename T, typename Parse>
  Status named(const std::string& key, T& out, Parse parse, bool required = true) const {
    std::string s;
    HPF_RETURN_IF_ERROR(string(key, s, required));
    if (!has(key)) return {};
    auto v = parse(s);
    if (!v.ok()) return error(key, v.status().message());
    out = *v;
    return {};
  }
  Status to_double(const json& v, const std::string& key, double& out) const {
    if (v.is_number()) {
      out = v.get<double>();
      return {};
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "nan")
        out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf")
        out = std::numeric_limits<double>::infinity();
      else if (s == "-inf")
        out = -std::numeric_limits<double>::infinity();
      else
        return error(key, "expected a number, got " + v.dump());
      return {};
    }
    return error(key, "expected a number, got " + v.dump());
  }
  Status only_keys(std::initializer_list<const char*> keys) const {
    for (const auto& [k, v] : j_.items()) {
      bool known = false;
      for (const char* allowed : keys) known = known || k == allowed;
      if (!known) return error(k, "unknown field");
    }
    return {};
  }

 private:
  const json& j_;
  std::string where_;
};

Expected<QuantParams> read_quant(const json& j, const std::string& where) {
  if (!j.is_object())
    return Status::invalid("plan: " + where + ": expected an object, got " + j.dump());
  Reader r(j, where + ".");
  HPF_RETURN_IF_ERROR(r.only_keys({"type", "scales", "zero_points", "axis", "group_size"}));
  QuantParams q;
  HPF_RETURN_IF_ERROR(r.named("type", q.type, parse_dtype));
  if (r.has("scales")) {
    if (!r.at("scales").is_array())
      return r.error("scales", "expected a list, got " + r.at("scales").dump());
    for (const json& s : r.at("scales")) {
      double x = 0;
      HPF_RETURN_IF_ERROR(r.to_double(s, "scales", x));
      q.scales.push_back(static_cast<float>(x));  // written from a float: exact
    }
  }
  if (r.has("zero_points")) {
    const json& z = r.at("zero_points");
    if (!z.is_array()) return r.error("zero_points", "expected a list, got " + z.dump());
    for (const json& e : z) {
      if (!e.is_number_integer())
        return r.error("zero_points", "expected integers, got " + e.dump());
      q.zero_points.push_back(e.get<int32_t>());
    }
  }
  HPF_RETURN_IF_ERROR(r.integer("axis", q.axis));
  HPF_RETURN_IF_ERROR(r.integer("group_size", q.group_size));
  return q;
}

Expected<NodePlan> read_node(const json& j, size_t index) {
  std::string where = "nodes[" + std::to_string(index) + "]";
  if (!j.is_object())
    return Status::invalid("plan: " + where + ": expected an object, got " + j.dump());
  if (j.contains("name") && j["name"].is_string())
    where += " ('" + j["name"].get<std::string>() + "')";
  Reader r(j, where + ".");
  HPF_RETURN_IF_ERROR(r.only_keys({"name", "op", "class", "mode", "storage", "weights",
                                   "accumulation", "weight_quant", "activation_quant", "input_quant",
                                   "dynamic_rows", "predicted_ms", "measured_ms", "bytes", "sensitivity"}));
  NodePlan n;
  HPF_RETURN_IF_ERROR(r.string("name", n.name));
  HPF_RETURN_IF_ERROR(r.string("op", n.op));
  HPF_RETURN_IF_ERROR(r.named("class", n.node_class, parse_node_class));
  HPF_RETURN_IF_ERROR(r.named("mode", n.mode, parse_mode));
  HPF_RETURN_IF_ERROR(r.named("storage", n.storage, parse_dtype));
  n.weights = n.storage;
  HPF_RETURN_IF_ERROR(r.named("weights", n.weights, parse_dtype, false));
  HPF_RETURN_IF_ERROR(r.named("accumulation", n.accumulation, parse_dtype, false));
  for (auto [key, field] : {std::pair{"weight_quant", &n.weight_quant}, std::pair{"activation_quant", &n.activation_quant},
                             std::pair{"input_quant", &n.input_quant}}) {
    if (!r.has(key)) continue;
    HPF_ASSIGN_OR_RETURN(QuantParams q, read_quant(r.at(key), where + "." + key));
    *field = std::move(q);
  }
  if (r.has("dynamic_rows")) {
    std::string rows;
    HPF_RETURN_IF_ERROR(r.string("dynamic_rows", rows));
    if (rows != "s8" && rows != "u7" && rows != "s16") return r.error("dynamic_rows", "'" + rows + "' is not s8, u7 or s16");
    n.dynamic_rows = rows == "u7" ? RowQuant::u7 : rows == "s16" ? RowQuant::s16 : RowQuant::s8;
  }
  HPF_RETURN_IF_ERROR(r.real("predicted_ms", n.predicted_ms));
  HPF_RETURN_IF_ERROR(r.real("measured_ms", n.measured_ms));
  HPF_RETURN_IF_ERROR(r.integer("bytes", n.bytes));
  HPF_RETURN_IF_ERROR(r.real("sensitivity", n.sensitivity));
  return n;
}

Status read_header(const json& j, Plan& p) {
  Reader r(j, "");
  HPF_RETURN_IF_ERROR(
      r.only_keys({"format", "version", "graph", "metric", "budget", "divergence", "nodes"}));
  std::string format;
  HPF_RETURN_IF_ERROR(r.string("format", format));
  if (format != kFormat)
    return r.error("format", "'" + format + "' is not a libhpf plan (expected '" + kFormat + "')");
  if (!r.has("version")) return r.error("version", "missing");
  int64_t version = 0;
  HPF_RETURN_IF_ERROR(r.integer("version", version));
  if (version != Plan::kVersion)
    return r.error("version", std::to_string(version) +
                                  " is not supported (this libhpf reads version " +
                                  std::to_string(Plan::kVersion) + ")");
  HPF_RETURN_IF_ERROR(r.string("graph", p.graph));
  HPF_RETURN_IF_ERROR(r.string("metric", p.metric, false));
  if (p.metric != "kl" && p.metric != "rel-l2")
    return r.error("metric", "unknown metric '" + p.metric + "' (metrics: kl, rel-l2)");
  HPF_RETURN_IF_ERROR(r.real("budget", p.budget));
  HPF_RETURN_IF_ERROR(r.real("divergence", p.divergence));
  if (!r.has("nodes")) return r.error("nodes", "missing");
  if (!r.at("nodes").is_array())
    return r.error("nodes", "expected a list, got " + r.at("nodes").dump().substr(0, 80));
  return {};
}

}  // namespace

const NodePlan* Plan::find(const std::string& node) const {
  for (const NodePlan& n : nodes)
    if (n.name == node) return &n;
  return nullptr;
}

std::string Plan::to_json() const {
  // One node per line, so two plans of a model diff line by line. Names from a model file may
  // hold bytes that are not UTF-8: replaced rather than thrown on.
  auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  const json header = {{"format", kFormat},        {"version", kVersion},
                       {"graph", graph},           {"metric", metric},
                       {"budget", number(budget)}, {"divergence", number(divergence)}};
  std::string out = dump(header);
  out.pop_back();  // the closing brace: the nodes follow
  out += ",\"nodes\":[";
  for (size_t k = 0; k < nodes.size(); ++k) out += (k ? ",\n " : "\n ") + dump(node_json(nodes[k]));
  return out + "\n]}\n";
}

Expected<Plan> Plan::from_json(std::string_view text) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::invalid("plan: not valid JSON");
  if (!j.is_object()) return Status::invalid("plan: expected a JSON object");
  Plan p;
  HPF_RETURN_IF_ERROR(read_header(j, p));
  std::set<std::string> names;
  for (size_t k = 0; k < j["nodes"].size(); ++k) {
    HPF_ASSIGN_OR_RETURN(NodePlan n, read_node(j["nodes"][k], k));
    if (!names.insert(n.name).second)
      return Status::invalid("plan: nodes[" + std::to_string(k) + "].name: node '" + n.name +
                             "' appears twice");
    p.nodes.push_back(std::move(n));
  }
  return p;
}

Status Plan::save(const std::string& path) const {
  // A reader never sees half a plan: write beside the target, then rename over it.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::io_error("cannot write plan '" + tmp + "'");
    f << to_json();
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      return Status::io_error("writing plan '" + tmp + "' failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::io_error("cannot rename plan '" + tmp + "' to '" + path + "'");
  }
  return {};
}

Expected<Plan> Plan::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::not_found("cannot open plan '" + path + "'");
  std::ostringstream text;
  text << f.rdbuf();
  auto p = from_json(text.str());
  if (!p.ok()) return p.status().with_context(path);
  return p;
}

Status Plan::check_matches(const Graph& g) const {
  const std::string made_for = " (the plan was made for graph '" + graph + "' with " +
                               std::to_string(nodes.size()) + " nodes; this graph '" + g.name() +
                               "' has " + std::to_string(g.nodes().size()) + ")";
  for (const Node& n : g.nodes()) {
    const NodePlan* p = find(n.name);
    if (!p)
      return Status::invalid("node '" + n.name + "' (" + n.op + ") is not in the plan" + made_for);
    if (p->op != n.op)
      return Status::invalid("node '" + n.name + "' is " + n.op + " but " + p->op + " in the plan" +
                             made_for);
  }
  if (nodes.size() != g.nodes().size()) {
    for (const NodePlan& p : nodes)
      if (!g.find_node(p.name))
        return Status::invalid("plan node '" + p.name + "' is not in the graph" + made_for);
  }
  if (graph != g.name())
    return Status::invalid("the plan was made for graph '" + graph + "', not '" + g.name() + "'");
  return {};
}

}  // namespace hpf
