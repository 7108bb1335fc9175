// Policy: the precisions users ask for, per class, node glob and op type, read from and written
// to JSON.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/ir/op_table.hpp"
#include "hpf/precision.hpp"

namespace hpf {
namespace {

// Ordered: "nodes" rules apply in the order written (the last match wins).
using json = nlohmann::ordered_json;

Expected<Mode> mode_at(const json& v, const std::string& where) {
  if (!v.is_string())
    return Status::invalid("policy: " + where + ": expected a mode name, got " + v.dump());
  auto m = parse_mode(v.get<std::string>());
  if (!m.ok()) return Status::invalid("policy: " + where + ": " + m.status().message());
  return m;
}

Expected<std::vector<std::string>> op_list(const json& v, const std::string& key) {
  if (!v.is_array())
    return Status::invalid("policy: \"" + key + "\": expected a list of op types, got " + v.dump());
  std::vector<std::string> ops;
  for (const json& e : v) {
    if (!e.is_string())
      return Status::invalid("policy: \"" + key + "\": expected op type names, got " + e.dump());
    const std::string op = e.get<std::string>();
    if (!ir::find_op(op))
      return Status::invalid("policy: \"" + key + "\": unknown op type '" + op + "'");
    ops.push_back(op);
  }
  return ops;
}

Status read_node_rules(const json& v, Policy& p) {
  if (!v.is_object())
    return Status::invalid("policy: \"nodes\": expected an object of \"glob\": \"mode\", got " +
                           v.dump());
  for (const auto& [glob, mode] : v.items()) {
    HPF_ASSIGN_OR_RETURN(Mode m, mode_at(mode, "\"nodes\": \"" + glob + "\""));
    p.by_node.emplace_back(glob, m);
  }
  return {};
}

// An op type in two lists would make the outcome depend on an unwritten precedence.
Status check_lists_disjoint(const Policy& p) {
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"lower", &p.always_lower}, {"follow", &p.follow_inputs}, {"never", &p.never_lower}};
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = a + 1; b < 3; ++b)
      for (const std::string& op : *lists[a].second)
        for (const std::string& other : *lists[b].second)
          if (op == other)
            return Status::invalid("policy: op type '" + op + "' is in both \"" + lists[a].first +
                                   "\" and \"" + lists[b].first + "\"");
  return {};
}

Status read_key(const std::string& key, const json& v, Policy& p) {
  if (key == "default") {
    HPF_ASSIGN_OR_RETURN(p.default_mode, mode_at(v, "\"default\""));
  } else if (key == "lower_to") {
    HPF_ASSIGN_OR_RETURN(Mode m, mode_at(v, "\"lower_to\""));
    p.lower_to = m;
  } else if (key == "nodes") {
    HPF_RETURN_IF_ERROR(read_node_rules(v, p));
  } else if (key == "lower" || key == "follow" || key == "never") {
    HPF_ASSIGN_OR_RETURN(auto ops, op_list(v, key));
    (key == "lower"    ? p.always_lower
     : key == "follow" ? p.follow_inputs
                       : p.never_lower) = std::move(ops);
  } else if (auto c = parse_node_class(key); c.ok()) {
    HPF_ASSIGN_OR_RETURN(p.by_class[*c], mode_at(v, "\"" + key + "\""));
  } else {
    return Status::invalid(
        "policy: unknown key '" + key +
        "' (expected a node class, \"default\", \"nodes\", \"lower\", \"lower_to\", "
        "\"follow\" or \"never\"; " +
        c.status().message() + ")");
  }
  return {};
}

}  // namespace

Expected<Policy> Policy::from_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Status::invalid("policy: not valid JSON: " + std::string(text.substr(0, 80)));
  if (!j.is_object()) return Status::invalid("policy: expected a JSON object, got " + j.dump());
  Policy p;
  for (const auto& [key, v] : j.items()) HPF_RETURN_IF_ERROR(read_key(key, v, p));
  HPF_RETURN_IF_ERROR(check_lists_disjoint(p));
  return p;
}

Policy Policy::uniform(Mode m) {
  Policy p;
  p.default_mode = m;
  return p;
}

std::string Policy::to_json() const {
  json j;
  j["default"] = mode_name(default_mode);
  for (const auto& [c, m] : by_class) j[node_class_name(c)] = mode_name(m);
  if (!by_node.empty()) {
    json nodes = json::object();
    for (const auto& [glob, m] : by_node) nodes[glob] = mode_name(m);
    j["nodes"] = nodes;
  }
  if (!always_lower.empty()) j["lower"] = always_lower;
  if (lower_to) j["lower_to"] = mode_name(*lower_to);
  if (!follow_inputs.empty()) j["follow"] = follow_inputs;
  if (!never_lower.empty()) j["never"] = never_lower;
  return j.dump();
}

}  // namespace hpf
