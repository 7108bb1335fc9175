// generate_c: dispatch by op family; the kernel's name is a hash of its spec, so equal specs
// give byte-identical source (and cache hits).
#include <cstdio>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_conv_parts.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

std::string attr_text(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, std::string>) os << x;
        else if constexpr (std::is_same_v<T, float>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%a", double(x));
          os << buf;
        } else if constexpr (std::is_same_v<T, Tensor>) os << x.describe();
        else if constexpr (std::is_same_v<T, GraphAttr>) os << "graph:" << (x ? x->name() : "null");
        else
          for (const auto& e : x) os << e << ",";
      },
      v);
  return os.str();
}

std::string desc_text(const TensorDesc& t) { return std::string(dtype_name(t.dtype)) + shape_string(t.shape); }

}  // namespace

std::string KernelSpec::canonical() const {
  std::ostringstream os;
  os << family << "|acc=" << dtype_name(accumulation) << "|in=";
  for (const auto& t : inputs) os << desc_text(t) << ";";
  os << "|out=";
  for (const auto& t : outputs) os << desc_text(t) << ";";
  os << "|attrs=";
  for (const auto& [k, v] : attrs) os << k << "=" << attr_text(v) << ";";
  auto steps = [&](const std::vector<ElementwiseStep>& list) {
    for (const auto& s : list) {
      os << "|" << s.op << ":" << dtype_name(s.dtype) << "(";
      for (int o : s.operands) os << o << ",";
      for (const auto& [k, v] : s.attrs) os << k << "=" << attr_text(v) << ";";
      os << ")";
    }
  };
  steps(chain);
  if (!epilogue.empty()) {  // absent from specs without one: their text (and kernel names) stay as before
    os << "|epilogue" << epilogue_inputs;
    steps(epilogue);
  }
  return os.str();
}

Expected<GeneratedKernel> generate_c(const KernelSpec& spec) {
  // FNV-1a over the canonical text names the kernel.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : spec.canonical()) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "hpf_%s_%016llx", spec.family.c_str(), static_cast<unsigned long long>(h));
  if (spec.family == "elementwise") return generate_c_elementwise(spec, name);
  if (spec.family == "matmul") return generate_c_matmul(spec, name);
  if (spec.family == "matmul_wq") return generate_c_matmul_wq(spec, name);
  if (spec.family == "matmul_i8") return generate_c_matmul_i8(spec, name);
  if (spec.family == "conv_i8") return generate_c_conv_i8(spec, name);
  if (spec.family == "attention") return generate_c_attention(spec, name);
  if (spec.family == "softmax") return generate_c_softmax(spec, name);
  if (spec.family == "lstm") return generate_c_lstm(spec, name);
  if (spec.family == "layernorm") return generate_c_layernorm(spec, name);
  if (spec.family == "gather") return generate_c_gather(spec, name);
  if (spec.family == "gather_q") return generate_c_gather_q(spec, name);
  if (spec.family == "dynamic_quantize") return generate_c_dynamic_quantize(spec, name);
  if (spec.family == "transpose") return generate_c_transpose(spec, name);
  if (spec.family == "conv") return generate_c_conv(spec, name);
  if (spec.family == "conv_transpose") return generate_c_conv_transpose(spec, name);
  if (spec.family == "batchnorm") return generate_c_batchnorm(spec, name);
  if (spec.family == "maxpool" || spec.family == "avgpool" || spec.family == "globalavgpool" ||
      spec.family == "globalmaxpool")
    return generate_c_pool(spec, name);
  if (spec.family == "reduce") return generate_c_reduce(spec, name);
  if (spec.family == "concat") return generate_c_concat(spec, name);
  if (spec.family == "slice") return generate_c_slice(spec, name);
  if (spec.family == "pad") return generate_c_pad(spec, name);
  if (spec.family == "expand") return generate_c_expand(spec, name);
  if (spec.family == "resize") return generate_c_resize(spec, name);
  return Status::unsupported("C codegen: no generator for op family '" + spec.family + "'");
}

std::vector<std::string> c_tile_variants(const KernelSpec& spec) {
  if (spec.attrs.count("tile")) return {};
  if (spec.family == "conv" && attr_s(spec.attrs, "w_layout") == "amx") return conv::amx_tile_variants();
  if (spec.family == "conv" && attr_s(spec.attrs, "w_layout") == "rows") return conv::gemm_tile_variants();
  return {};
}

int c_in_place_input(const KernelSpec& spec) {
  if ((spec.family != "conv" && spec.family != "conv_i8") || spec.outputs.size() != 1 || spec.epilogue_inputs <= 0)
    return -1;
  const TensorDesc& y = spec.outputs[0];
  for (size_t k = spec.inputs.size() - static_cast<size_t>(spec.epilogue_inputs); k < spec.inputs.size(); ++k)
    if (spec.inputs[k].dtype == y.dtype && spec.inputs[k].shape == y.shape) return static_cast<int>(k);
  return -1;
}

}  // namespace hpf::jit
