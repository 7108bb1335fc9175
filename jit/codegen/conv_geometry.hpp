// The geometry of a Conv KernelSpec (2-D NCHW, or 1-D lifted to 2-D with a unit H axis):
// sizes, groups, strides, dilations and leading pads, checked against the output shape. For any
// dialect's Conv generator; `who` prefixes the errors ("CUDA codegen", ...). Header-only, pure.
#pragma once

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {

struct ConvGeometry {
  KernelSpec spec;  // the (lifted) spec the numbers below describe
  int64_t N, C, H, W, M, CG, KH, KW, group, OH, OW, SH, SW, DH, DW, PH, PW;
  bool has_bias;
};

inline Expected<ConvGeometry> conv_geometry(const KernelSpec& in_spec, const std::string& who) {
  if (in_spec.inputs.size() < 2 || in_spec.inputs.size() > 3 || in_spec.outputs.size() != 1)
    return Status::invalid("conv: needs X, W, optional B and one output");
  ConvGeometry g{};
  g.spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = g.spec.inputs[0], &Wt = g.spec.inputs[1], &Y = g.spec.outputs[0];
  g.has_bias = g.spec.inputs.size() == 3;
  for (const TensorDesc& t : g.spec.inputs)
    if (!is_float(t.dtype)) return Status::unsupported(who + ": Conv on " + std::string(dtype_name(t.dtype)));
  if (!is_float(Y.dtype)) return Status::unsupported(who + ": Conv to " + std::string(dtype_name(Y.dtype)));
  if (X.shape.size() != 4 || Wt.shape.size() != 4)
    return Status::unsupported(who + ": Conv other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  g.N = X.shape[0], g.C = X.shape[1], g.H = X.shape[2], g.W = X.shape[3];
  g.M = Wt.shape[0], g.CG = Wt.shape[1], g.KH = Wt.shape[2], g.KW = Wt.shape[3];
  g.group = attr_i(g.spec.attrs, "group", 1);
  if (g.group < 1 || g.C != g.CG * g.group || g.M % g.group != 0)
    return Status::invalid("conv: input " + shape_string(X.shape) + ", weight " + shape_string(Wt.shape) +
                           " and group " + std::to_string(g.group) + " disagree");
  if (g.has_bias && numel(g.spec.inputs[2].shape) != g.M)
    return Status::invalid("conv: bias must have " + std::to_string(g.M) + " values");
  const std::vector<int64_t> in{g.H, g.W};
  HPF_ASSIGN_OR_RETURN(auto w, ir::window_geometry(in, {g.KH, g.KW}, attr_ints(g.spec.attrs, "strides"),
                                                   attr_ints(g.spec.attrs, "dilations"), attr_ints(g.spec.attrs, "pads"),
                                                   attr_s(g.spec.attrs, "auto_pad"), false));
  g.OH = w.out[0], g.OW = w.out[1];
  if (Y.shape != std::vector<int64_t>{g.N, g.M, g.OH, g.OW})
    return Status::invalid("conv: output " + shape_string(Y.shape) + " does not match the geometry");
  g.SH = w.strides[0], g.SW = w.strides[1], g.DH = w.dilations[0], g.DW = w.dilations[1];
  g.PH = w.pads_begin[0], g.PW = w.pads_begin[1];
  return g;
}

}  // namespace hpf::jit
