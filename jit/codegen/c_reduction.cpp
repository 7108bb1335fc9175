// Softmax and LayerNormalization in C over the last axis (one row per work item): statistics
// and sums in FP32 whatever the storage format, one pass to read, one to write.
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

// Softmax and LayerNorm rows up to this many values are staged in a stack buffer (64 KiB).
constexpr int64_t kRowBuffer = 16384;

int64_t axis_of(const KernelSpec& s, int64_t def) {
  auto it = s.attrs.find("axis");
  int64_t a = it == s.attrs.end() ? def : std::get<int64_t>(it->second);
  const auto rank = static_cast<int64_t>(s.inputs[0].shape.size());
  return a < 0 ? a + rank : a;
}

}  // namespace

Expected<GeneratedKernel> generate_c_softmax(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const int64_t rank = static_cast<int64_t>(X.shape.size());
  if (axis_of(spec, -1) != rank - 1) return Status::unsupported("C codegen: Softmax over an axis other than the last");
  const bool log = spec.attrs.count("log") > 0;
  const int64_t cols = X.shape.back(), rows = cols ? numel(X.shape) / cols : 0;
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(X.dtype) << "* restrict X = (const " << c_storage_type(X.dtype) << "*)args[0];\n"
    << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[1];\n";
  if (cols <= kRowBuffer) {
    // The row in FP32 on the stack; max, exp (hpf_vexp, vectorised) and sum over it, the max and
    // the sum in 16 lanes (FP32 sums in another order than the reference's FP64 one).
    s << "  float e[" << std::max<int64_t>(cols, 1) << "] __attribute__((aligned(64)));\n"
      << "  for (i64 r = begin; r < end; ++r) {\n"
      << "    const i64 o = r * " << cols << "LL;\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) e[j] = " << c_load(X.dtype, "X[o + j]") << ";\n"
      << "    hpf_f32x16 mv = (hpf_f32x16){} - (1.0f / 0.0f);\n"
      << "    i64 j = 0;\n"
      << "    for (; j + 16 <= " << cols << "LL; j += 16) mv = __builtin_elementwise_max(mv, *(const hpf_f32x16*)(e + j));\n"
      << "    float m = -(1.0f / 0.0f);\n"
      << "    for (int l = 0; l < 16; ++l) m = mv[l] > m ? mv[l] : m;\n"
      << "    for (; j < " << cols << "LL; ++j) m = e[j] > m ? e[j] : m;\n"
      << "    for (i64 q = 0; q < " << cols << "LL; ++q) e[q] = hpf_vexp(e[q] - m);\n"
      << sum16("e", "sum", cols, "e[q]");
    if (log)
      s << "    const float ls = logf(sum);\n"
        << "    for (i64 q = 0; q < " << cols << "LL; ++q) Y[o + q] = "
        << c_store(Y.dtype, c_load(X.dtype, "X[o + q]") + " - m - ls") << ";\n";
    else
      s << "    const float inv = 1.0f / sum;\n"
        << "    for (i64 q = 0; q < " << cols << "LL; ++q) Y[o + q] = " << c_store(Y.dtype, "e[q] * inv") << ";\n";
    s << "  }\n}\n";
    return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols))};
  }
  s << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 o = r * " << cols << "LL;\n"
    << "    float m = -(1.0f / 0.0f);\n"
    << "    for (i64 j = 0; j < " << cols << "LL; ++j) { const float v = " << c_load(X.dtype, "X[o + j]") << "; m = v > m ? v : m; }\n"
    << "    float sum = 0.0f;\n"
    << "    for (i64 j = 0; j < " << cols << "LL; ++j) sum += hpf_vexp(" << c_load(X.dtype, "X[o + j]") << " - m);\n";
  if (log)
    s << "    const float ls = logf(sum);\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) Y[o + j] = " << c_store(Y.dtype, c_load(X.dtype, "X[o + j]") + " - m - ls") << ";\n";
  else
    s << "    const float inv = 1.0f / sum;\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) Y[o + j] = " << c_store(Y.dtype, "hpf_vexp(" + c_load(X.dtype, "X[o + j]") + " - m) * inv")
      << ";\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols))};
}

Expected<GeneratedKernel> generate_c_layernorm(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const int64_t axis = axis_of(spec, -1);
  int64_t cols = 1;
  for (size_t d = axis; d < X.shape.size(); ++d) cols *= X.shape[d];
  const int64_t rows = cols ? numel(X.shape) / cols : 0;
  float eps = 1e-5f;
  if (auto it = spec.attrs.find("epsilon"); it != spec.attrs.end()) eps = std::get<float>(it->second);
  for (size_t k = 1; k < spec.inputs.size(); ++k)
    if (numel(spec.inputs[k].shape) != cols && numel(spec.inputs[k].shape) != 1)
      return Status::unsupported("C codegen: LayerNormalization scale/bias that only partly broadcast");
  auto param = [&](size_t k) {
    const TensorDesc& p = spec.inputs[k];
    return c_load(p.dtype, "P" + std::to_string(k) + "[" + (numel(p.shape) == 1 ? "0" : "j") + "]");
  };
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << c_storage_type(X.dtype) << "* restrict X = (const " << c_storage_type(X.dtype) << "*)args[0];\n";
  for (size_t k = 1; k < spec.inputs.size(); ++k)
    s << "  const " << c_storage_type(spec.inputs[k].dtype) << "* restrict P" << k << " = (const "
      << c_storage_type(spec.inputs[k].dtype) << "*)args[" << k << "];\n";
  s << "  " << c_storage_type(Y.dtype) << "* restrict Y = (" << c_storage_type(Y.dtype) << "*)args[" << spec.inputs.size() << "];\n";
  if (cols <= kRowBuffer) {
    // The row in FP32 on the stack; mean and variance summed in 16 lanes (vectorised; FP32 sums
    // in another order than the reference's FP64 ones).
    s << "  float e[" << std::max<int64_t>(cols, 1) << "] __attribute__((aligned(64)));\n"
      << "  for (i64 r = begin; r < end; ++r) {\n"
      << "    const i64 o = r * " << cols << "LL;\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) e[j] = " << c_load(X.dtype, "X[o + j]") << ";\n"
      << sum16("e", "mean", cols, "e[q]")
      << "    mean /= " << cols << ".0f;\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) e[j] -= mean;\n"
      << sum16("e", "var", cols, "e[q] * e[q]")
      << "    const float inv = 1.0f / sqrtf(var / " << cols << ".0f + " << c_float(eps) << ");\n"
      << "    for (i64 j = 0; j < " << cols << "LL; ++j) {\n"
      << "      float v = e[j] * inv;\n";
    if (spec.inputs.size() > 1) s << "      v = v * " << param(1) << ";\n";
    if (spec.inputs.size() > 2) s << "      v = v + " << param(2) << ";\n";
    s << "      Y[o + j] = " << c_store(Y.dtype, "v") << ";\n    }\n  }\n}\n";
    return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols))};
  }
  s << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 o = r * " << cols << "LL;\n"
    << "    float mean = 0.0f;\n"
    << "    for (i64 j = 0; j < " << cols << "LL; ++j) mean += " << c_load(X.dtype, "X[o + j]") << ";\n"
    << "    mean /= " << cols << ".0f;\n"
    << "    float var = 0.0f;\n"
    << "    for (i64 j = 0; j < " << cols << "LL; ++j) { const float d = " << c_load(X.dtype, "X[o + j]") << " - mean; var += d * d; }\n"
    << "    const float inv = 1.0f / sqrtf(var / " << cols << ".0f + " << c_float(eps) << ");\n"
    << "    for (i64 j = 0; j < " << cols << "LL; ++j) {\n"
    << "      float v = (" << c_load(X.dtype, "X[o + j]") << " - mean) * inv;\n";
  if (spec.inputs.size() > 1) s << "      v = v * " << param(1) << ";\n";
  if (spec.inputs.size() > 2) s << "      v = v + " << param(2) << ";\n";
  s << "      Y[o + j] = " << c_store(Y.dtype, "v") << ";\n    }\n  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols))};
}

}  // namespace hpf::jit
