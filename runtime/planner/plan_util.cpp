#include "runtime/planner/plan_util.hpp"

#include <algorithm>
#include <cctype>

#include "core/ir/op_table.hpp"

namespace hpf::planner_detail {

bool is_matrix(const Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  return def && (def->op_class == ir::OpClass::matmul || def->op_class == ir::OpClass::conv);
}

bool has_float_output(const Graph& g, const Node& n) {
  return std::any_of(n.outputs.begin(), n.outputs.end(),
                     [&](ValueId v) { return v != kNoValue && is_float(g.value(v).dtype); });
}

int64_t elements(const Value& v) {
  if (v.constant) return v.constant->numel();
  int64_t n = 1;
  for (const Dim& d : v.shape)
    if (d.known()) n *= d.value;
  return n;
}

bool is_wide_input(const Node& n, size_t input) {
  const ir::OpDef* def = ir::find_op(n.op);
  return def && std::find(def->wide_inputs.begin(), def->wide_inputs.end(),
                          static_cast<int>(input)) != def->wide_inputs.end();
}

std::string block_of(const std::string& name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) return "";  // the last component is the node itself
    if (std::any_of(name.begin() + start, name.begin() + end,
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return name.substr(0, end);
    start = end + 1;
  }
  return "";
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace hpf::planner_detail
