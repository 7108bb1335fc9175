#include "runtime/session/strided_pointwise.hpp"

#include <algorithm>

#include "jit/codegen/c_helpers.hpp"

namespace hpf {

Expected<int> subsample_strided_pointwise_convs(Graph& g, const Plan* plan) {
  int rewritten = 0;
  const size_t count = g.nodes().size();  // nodes added below are Slices
  for (size_t id = 0; id < count; ++id) {
    const Node n = g.node(static_cast<int32_t>(id));  // a copy: adding nodes may move the table
    if (n.op != "Conv" || n.inputs.size() < 2 || n.inputs[0] == kNoValue) continue;
    const Value& x = g.value(n.inputs[0]);
    const Tensor* w = g.constant(n.inputs[1]);
    if (!w || x.dtype != DType::F32 || !x.has_shape || x.shape.size() != 4 || w->rank() != 4 ||
        w->shape()[2] != 1 || w->shape()[3] != 1)
      continue;
    if (const NodePlan* p = plan ? plan->find(n.name) : nullptr; p && p->mode != Mode::fp32) continue;
    const std::vector<int64_t> strides = jit::attr_ints(n.attrs, "strides"), pads = jit::attr_ints(n.attrs, "pads");
    const std::string auto_pad = jit::attr_s(n.attrs, "auto_pad");
    if (strides.size() != 2 || (strides[0] == 1 && strides[1] == 1) || strides[0] < 1 || strides[1] < 1 ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }) ||
        (!auto_pad.empty() && auto_pad != "NOTSET" && auto_pad != "VALID"))
      continue;
    if (!std::all_of(x.shape.begin(), x.shape.end(), [](const Dim& d) { return d.known(); })) continue;  // run-time shape
    const int64_t H = x.shape[2].value, W = x.shape[3].value;
    auto i64s = [&](const std::string& what, std::vector<int64_t> v) -> Expected<ValueId> {
      HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_i64({static_cast<int64_t>(v.size())}, v));
      return g.add_initializer(n.name + "/subsample_" + what, std::move(t));
    };
    HPF_ASSIGN_OR_RETURN(ValueId starts, i64s("starts", {0, 0}));
    HPF_ASSIGN_OR_RETURN(ValueId ends, i64s("ends", {H, W}));
    HPF_ASSIGN_OR_RETURN(ValueId axes, i64s("axes", {2, 3}));
    HPF_ASSIGN_OR_RETURN(ValueId steps, i64s("steps", strides));
    HPF_ASSIGN_OR_RETURN(int32_t slice, g.add_node("Slice", n.name + "/subsample", {n.inputs[0], starts, ends, axes, steps},
                                                   {n.name + "/subsampled"}));
    Node& conv = g.node(static_cast<int32_t>(id));
    conv.inputs[0] = g.node(slice).outputs[0];
    conv.attrs["strides"] = std::vector<int64_t>{1, 1};
    ++rewritten;
  }
  if (rewritten) {
    HPF_RETURN_IF_ERROR(g.sort_topologically());
    HPF_RETURN_IF_ERROR(g.infer_shapes());
  }
  return rewritten;
}

}  // namespace hpf
