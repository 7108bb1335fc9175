#include "runtime/session/conv_rewrites.hpp"

#include <algorithm>
#include <optional>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_packing.hpp"
#include "runtime/session/weight_cache.hpp"

namespace hpf {

namespace {

// A Conv the rewrites may take: input, weights and the input's dimensions.
struct Fp32Conv {
  const Tensor* w;
  int64_t N, C, H, W;
};

std::optional<Fp32Conv> fp32_conv(const Graph& g, const Node& n, const Plan* plan) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.inputs[0] == kNoValue) return std::nullopt;
  const Value& x = g.value(n.inputs[0]);
  const Tensor* w = g.constant(n.inputs[1]);
  if (!w || x.dtype != DType::F32 || !x.has_shape || x.shape.size() != 4 || w->rank() != 4) return std::nullopt;
  if (!std::all_of(x.shape.begin(), x.shape.end(), [](const Dim& d) { return d.known(); })) return std::nullopt;
  if (const NodePlan* p = plan ? plan->find(n.name) : nullptr; p && p->mode != Mode::fp32) return std::nullopt;
  return Fp32Conv{w, x.shape[0].value, x.shape[1].value, x.shape[2].value, x.shape[3].value};
}

Expected<ValueId> add_i64s(Graph& g, const std::string& name, const std::vector<int64_t>& v) {
  HPF_ASSIGN_OR_RETURN(Tensor t, Tensor::from_i64({static_cast<int64_t>(v.size())}, v));
  return g.add_initializer(name, std::move(t));
}

Expected<int> finish(Graph& g, int rewritten) {
  if (rewritten) {
    HPF_RETURN_IF_ERROR(g.sort_topologically());
    HPF_RETURN_IF_ERROR(g.infer_shapes());
  }
  return rewritten;
}

}  // namespace

Expected<int> subsample_strided_pointwise_convs(Graph& g, const Plan* plan) {
  int rewritten = 0;
  const size_t count = g.nodes().size();  // nodes added below are Slices
  for (size_t id = 0; id < count; ++id) {
    const Node n = g.node(static_cast<int32_t>(id));  // a copy: adding nodes may move the table
    const std::optional<Fp32Conv> c = fp32_conv(g, n, plan);
    if (!c || c->w->shape()[2] != 1 || c->w->shape()[3] != 1) continue;
    const std::vector<int64_t> strides = jit::attr_ints(n.attrs, "strides"), pads = jit::attr_ints(n.attrs, "pads");
    const std::string auto_pad = jit::attr_s(n.attrs, "auto_pad");
    if (strides.size() != 2 || (strides[0] == 1 && strides[1] == 1) || strides[0] < 1 || strides[1] < 1 ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }) ||
        (!auto_pad.empty() && auto_pad != "NOTSET" && auto_pad != "VALID"))
      continue;
    auto i64s = [&](const std::string& what, std::vector<int64_t> v) { return add_i64s(g, n.name + "/subsample_" + what, v); };
    HPF_ASSIGN_OR_RETURN(ValueId starts, i64s("starts", {0, 0}));
    HPF_ASSIGN_OR_RETURN(ValueId ends, i64s("ends", {c->H, c->W}));
    HPF_ASSIGN_OR_RETURN(ValueId axes, i64s("axes", {2, 3}));
    HPF_ASSIGN_OR_RETURN(ValueId steps, i64s("steps", strides));
    HPF_ASSIGN_OR_RETURN(int32_t slice, g.add_node("Slice", n.name + "/subsample", {n.inputs[0], starts, ends, axes, steps},
                                                   {n.name + "/subsampled"}));
    Node& conv = g.node(static_cast<int32_t>(id));
    conv.inputs[0] = g.node(slice).outputs[0];
    conv.attrs["strides"] = std::vector<int64_t>{1, 1};
    ++rewritten;
  }
  return finish(g, rewritten);
}

Expected<int> gather_small_map_convs(Graph& g, const Plan* plan, WeightCache* cache) {
  auto* shared = dynamic_cast<SharedWeights*>(cache);
  int rewritten = 0;
  const size_t count = g.nodes().size();  // nodes added below are Pads, Reshapes and Gathers
  for (size_t id = 0; id < count; ++id) {
    const Node n = g.node(static_cast<int32_t>(id));  // a copy: adding nodes may move the table
    const std::optional<Fp32Conv> c = fp32_conv(g, n, plan);
    if (!c) continue;
    const std::string auto_pad = jit::attr_s(n.attrs, "auto_pad");
    if (!auto_pad.empty() && auto_pad != "NOTSET") continue;
    const std::vector<int64_t>& ws = c->w->shape();
    const int64_t M = ws[0], C = ws[1], KH = ws[2], KW = ws[3], N = c->N, H = c->H, W = c->W;
    if (c->w->dtype() != DType::F32 || jit::attr_i(n.attrs, "group", 1) != 1 || c->C != C || KH * KW < 2 ||
        C * KH * KW < 256)
      continue;
    std::vector<int64_t> st = jit::attr_ints(n.attrs, "strides"), di = jit::attr_ints(n.attrs, "dilations"),
                         pads = jit::attr_ints(n.attrs, "pads");
    if (st.empty()) st = {1, 1};
    if (di.empty()) di = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (st.size() != 2 || di.size() != 2 || pads.size() != 4 || st[0] < 1 || st[1] < 1 || di[0] < 1 || di[1] < 1 ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
      continue;
    const int64_t HP = H + pads[0] + pads[2], WP = W + pads[1] + pads[3];
    const int64_t OH = HP >= di[0] * (KH - 1) + 1 ? (HP - di[0] * (KH - 1) - 1) / st[0] + 1 : 0;
    const int64_t OW = WP >= di[1] * (KW - 1) + 1 ? (WP - di[1] * (KW - 1) - 1) / st[1] + 1 : 0;
    if (OH < 1 || OW < 1 || OH * OW > kSmallMapPositions) continue;
    jit::ConvGeometry geo{};
    geo.N = N, geo.C = C, geo.H = H, geo.W = W, geo.M = M, geo.CG = C, geo.KH = KH, geo.KW = KW, geo.group = 1;
    geo.OH = OH, geo.OW = OW, geo.SH = st[0], geo.SW = st[1], geo.DH = di[0], geo.DW = di[1], geo.PH = pads[0], geo.PW = pads[1];
    if (jit::conv_runs_winograd(geo)) continue;  // Winograd's kernel does better than patches

    auto i64s = [&](const std::string& what, std::vector<int64_t> v) { return add_i64s(g, n.name + "/patches_" + what, v); };
    ValueId src = n.inputs[0];
    if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
      HPF_ASSIGN_OR_RETURN(ValueId pv, i64s("pads", {0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]}));
      HPF_ASSIGN_OR_RETURN(int32_t pad, g.add_node("Pad", n.name + "/patches_pad", {src, pv}, {n.name + "/padded"}));
      src = g.node(pad).outputs[0];
    }
    // The patches: the (padded) input's pixels flattened, gathered per channel in (tap, output
    // position) order, which is the weights' own (channel, tap) order once reshaped: [N, C*taps, OH, OW].
    const int64_t T = KH * KW;
    HPF_ASSIGN_OR_RETURN(ValueId flat_shape, i64s("flat_shape", {N, C, HP * WP}));
    HPF_ASSIGN_OR_RETURN(int32_t flat, g.add_node("Reshape", n.name + "/patches_flat", {src, flat_shape}, {n.name + "/flat"}));
    std::vector<int64_t> index;
    index.reserve(static_cast<size_t>(T * OH * OW));
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) index.push_back((oh * st[0] + kh * di[0]) * WP + ow * st[1] + kw * di[1]);
    HPF_ASSIGN_OR_RETURN(Tensor idx, Tensor::from_i64({T, OH, OW}, index));
    HPF_ASSIGN_OR_RETURN(ValueId iv, g.add_initializer(n.name + "/patches_index", std::move(idx)));
    HPF_ASSIGN_OR_RETURN(int32_t gather, g.add_node("Gather", n.name + "/patches_gather", {g.node(flat).outputs[0], iv},
                                                    {n.name + "/gathered"}, {{"axis", int64_t{2}}}));
    HPF_ASSIGN_OR_RETURN(ValueId patch_shape, i64s("shape", {N, C * T, OH, OW}));
    HPF_ASSIGN_OR_RETURN(int32_t patches, g.add_node("Reshape", n.name + "/patches", {g.node(gather).outputs[0], patch_shape},
                                                     {n.name + "/patches"}));
    // The weights as they are, [M, C*taps, 1, 1]: the same values, row-major (channel, tap). A
    // copy (a Tensor owns its bytes), kept once per model in the weight cache where there is one.
    const std::string key = g.value(n.inputs[1]).name + "|patch_weights|" + shape_string(ws);
    std::shared_ptr<const PackedWeights> held = shared ? shared->find_packed(key) : nullptr;
    if (!held) {
      PackedWeights p;
      p.format = "conv_patches";
      HPF_ASSIGN_OR_RETURN(p.data, c->w->reshaped({M, C * T, 1, 1}));
      held = shared ? shared->put_packed(key, std::move(p)) : std::make_shared<const PackedWeights>(std::move(p));
    }
    HPF_ASSIGN_OR_RETURN(ValueId wid, g.add_initializer(n.name + "/patch_weights",
                                                        std::shared_ptr<const Tensor>(held, &held->data)));
    Node& conv = g.node(static_cast<int32_t>(id));
    conv.inputs[0] = g.node(patches).outputs[0];
    conv.inputs[1] = wid;
    conv.attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
    conv.attrs["strides"] = std::vector<int64_t>{1, 1};
    conv.attrs["dilations"] = std::vector<int64_t>{1, 1};
    conv.attrs["pads"] = std::vector<int64_t>{0, 0, 0, 0};
    ++rewritten;
  }
  return finish(g, rewritten);
}

}  // namespace hpf
