// MaxPool (output 0) and AveragePool (2-D NCHW; 1-D through lift_1d; pads, auto_pad, strides,
// dilations, ceil_mode, count_include_pad) in the GPU dialects: one thread per output element
// walking its window in FP32. Semantics as the C generator's: padding never wins a max, a window
// over padding only gives the lowest float, NaN propagates when the window's first real cell is
// NaN; average divisors count the explicit padding (count_include_pad) but never the ceil_mode
// overhang.
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_pool(const KernelSpec& in_spec, const std::string& name, GpuDialect d) {
  if (in_spec.family == "globalavgpool" || in_spec.family == "globalmaxpool")
    return generate_gpu_global_pool(in_spec, name, d);
  const std::string what = std::string(gpu_dialect_name(d)) + " " + in_spec.family + ": ";
  if (in_spec.inputs.size() != 1 || in_spec.outputs.size() != 1)
    return Status::unsupported(what + "needs one input and one output (no MaxPool indices)");
  const KernelSpec spec = in_spec.inputs[0].shape.size() == 3 ? lift_1d(in_spec) : in_spec;
  const TensorDesc &X = spec.inputs[0], &Y = spec.outputs[0];
  if (!is_float(X.dtype) || !is_float(Y.dtype)) return Status::unsupported(what + "on " + std::string(dtype_name(X.dtype)));
  if (X.shape.size() != 4) return Status::unsupported(what + "other than 1-D or 2-D (input " + shape_string(X.shape) + ")");
  const bool is_max = spec.family == "maxpool";
  if (attr_i(spec.attrs, "storage_order", 0) != 0 && !is_max) return Status::invalid(what + "storage_order");
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const std::vector<int64_t> in{H, W};
  HPF_ASSIGN_OR_RETURN(auto g, ir::window_geometry(in, attr_ints(spec.attrs, "kernel_shape"), attr_ints(spec.attrs, "strides"),
                                                   attr_ints(spec.attrs, "dilations"), attr_ints(spec.attrs, "pads"),
                                                   attr_s(spec.attrs, "auto_pad"), attr_i(spec.attrs, "ceil_mode", 0) != 0));
  const int64_t OH = g.out[0], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  if (Y.shape != std::vector<int64_t>{N, C, OH, OW})
    return Status::invalid(what + "output " + shape_string(Y.shape) + " does not match the geometry");
  const int64_t n = numel(Y.shape);
  HPF_ASSIGN_OR_RETURN(std::string head, gpu_kernel_begin(d, name, 256, spec, {"X"}, "Y"));
  std::ostringstream s;
  s << head << "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < " << L(n)
    << "; i += (i64)gridDim.x * blockDim.x) {\n"
    << "    const i64 ow = i % " << L(OW) << ", oh = (i / " << L(OW) << ") % " << L(OH) << ", plane = i / "
    << L(OH * OW) << ";\n"
    << "    const auto* xc = X + plane * " << L(H * W) << ";\n"
    << "    const i64 ih0 = oh * " << L(g.strides[0]) << " - " << L(g.pads_begin[0]) << ", iw0 = ow * "
    << L(g.strides[1]) << " - " << L(g.pads_begin[1]) << ";\n"
    << "    float acc = 0.0f;\n"
    << "    int seen = 0, padded = 0;\n"
    << "    for (i64 kh = 0; kh < " << L(KH) << "; ++kh) {\n"
    << "      const i64 ih = ih0 + kh * " << L(g.dilations[0]) << ";\n"
    << "      const int row_in = ih >= 0 && ih < " << L(H) << ", row_pad = ih >= -" << L(g.pads_begin[0]) << " && ih < "
    << L(H + g.pads_end[0]) << ";\n"
    << "      for (i64 kw = 0; kw < " << L(KW) << "; ++kw) {\n"
    << "        const i64 iw = iw0 + kw * " << L(g.dilations[1]) << ";\n"
    << "        padded += row_pad && iw >= -" << L(g.pads_begin[1]) << " && iw < " << L(W + g.pads_end[1]) << ";\n"
    << "        if (!row_in || iw < 0 || iw >= " << L(W) << ") continue;\n"
    << "        const float v = " << gpu_load(d, X.dtype, "xc[ih * " + L(W) + " + iw]") << ";\n";
  if (is_max)  // the first inside cell starts the max; later cells win only when strictly greater
    s << "        acc = !seen || v > acc ? v : acc;\n";
  else
    s << "        acc += v;\n";
  s << "        ++seen;\n      }\n    }\n";
  if (is_max)
    s << "    Y[i] = " << gpu_store(d, Y.dtype, "seen ? acc : -3.40282347e+38f") << ";\n";
  else if (attr_i(spec.attrs, "count_include_pad", 0) != 0)
    s << "    Y[i] = " << gpu_store(d, Y.dtype, "acc / (float)padded") << ";\n";
  else  // a window over padding only divides 0 by 0: NaN, as the reference
    s << "    Y[i] = " << gpu_store(d, Y.dtype, "acc / (float)seen") << ";\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), n, 256};
}

}  // namespace hpf::jit
