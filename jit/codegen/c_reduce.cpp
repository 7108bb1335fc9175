// ReduceSum, ReduceMean and ReduceMax in C over any set of axes. Adjacent axes of the same kind
// (reduced or kept) are merged and size-1 axes dropped, so the kernel sees an alternating list
// of kept and reduced extents with baked-in strides. One work item is one output row: the
// innermost kept extent when the last axis is kept (accumulated in blocks, so the inner loop
// runs along contiguous memory), else one output element whose innermost reduction loop is
// contiguous. Accumulation is FP32 whatever the storage format.
#include <algorithm>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {
namespace {

struct Extent {
  int64_t size = 1, stride = 1;  // stride: in input elements
  bool reduced = false;
};

const char* reduce_kind(const std::string& op) {
  if (op == "ReduceSum") return "sum";
  if (op == "ReduceMean") return "mean";
  if (op == "ReduceMax") return "max";
  return nullptr;
}

}  // namespace

std::string bake_reduce(const Graph& g, const Node& n, Attributes& attrs) {
  const char* kind = reduce_kind(n.op);
  if (!kind || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kNoValue) return "";
  const Value& x = g.value(n.inputs[0]);
  if (!is_float(x.dtype) || !x.has_shape) return "";  // integers reduce exactly in int64: reference
  std::vector<int64_t> axes;
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) {
    const Tensor* c = g.constant(n.inputs[1]);
    if (!c) return "";  // axes computed at run time
    axes = c->to_i64();
  } else if (auto it = n.attrs.find("axes"); it != n.attrs.end()) {
    axes = std::get<std::vector<int64_t>>(it->second);
  }
  const auto rank = static_cast<int64_t>(x.shape.size());
  auto norm = ir::normalize_axes(axes, rank);
  if (!norm.ok()) return "";  // the reference reports it
  axes = *norm;
  auto noop = n.attrs.find("noop_with_empty_axes");
  if (axes.empty() && !(noop != n.attrs.end() && std::get<int64_t>(noop->second) != 0))
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  attrs["op"] = n.op;
  attrs["reduce_kind"] = std::string(kind);
  attrs["reduce_axes"] = axes;  // resolved: normalised, empty = copy
  return "reduce";
}

Expected<GeneratedKernel> generate_c_reduce(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  auto kind_it = spec.attrs.find("reduce_kind");
  auto axes_it = spec.attrs.find("reduce_axes");
  if (kind_it == spec.attrs.end() || axes_it == spec.attrs.end())
    return Status::invalid("C codegen: reduce spec without reduce_kind/reduce_axes (set by lowering)");
  const std::string kind = std::get<std::string>(kind_it->second);
  if (kind != "sum" && kind != "mean" && kind != "max") return Status::unsupported("C codegen: reduction '" + kind + "'");
  const char* tx = c_storage_type(X.dtype);
  const char* ty = c_storage_type(Y.dtype);
  if (!tx || !ty || !is_float(X.dtype)) return Status::unsupported("C codegen: reduction over " + std::string(dtype_name(X.dtype)));
  const auto rank = static_cast<int64_t>(X.shape.size());
  auto axes = ir::normalize_axes(std::get<std::vector<int64_t>>(axes_it->second), rank);
  if (!axes.ok()) return axes.status();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : *axes) reduced[a] = true;

  // Merge: drop size-1 axes, fuse neighbours of the same kind. Strides of the input.
  std::vector<Extent> ext;
  int64_t stride = 1;
  std::vector<Extent> rev;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t size = X.shape[d];
    if (size != 1) {
      if (!rev.empty() && rev.back().reduced == reduced[d] && rev.back().stride * rev.back().size == stride)
        rev.back().size *= size;
      else
        rev.push_back({size, stride, bool(reduced[d])});
    }
    stride *= size;
  }
  ext.assign(rev.rbegin(), rev.rend());
  int64_t count = 1, n_out = 1;
  for (const Extent& e : ext) (e.reduced ? count : n_out) *= e.size;
  if (numel(Y.shape) != n_out)
    return Status::invalid("C codegen: reduce output " + shape_string(Y.shape) + " does not match input " +
                           shape_string(X.shape));

  // Row = innermost kept extent (V elements) when the last extent is kept, else one element.
  const bool vec = !ext.empty() && !ext.back().reduced;
  const int64_t V = vec ? ext.back().size : 1;
  const int64_t rows = V ? n_out / V : 0;
  const int64_t B = std::min<int64_t>(std::max<int64_t>(V, 1), 64);
  std::vector<Extent> outer_kept, red;
  for (size_t k = 0; k + (vec ? 1 : 0) < ext.size(); ++k) (ext[k].reduced ? red : outer_kept).push_back(ext[k]);

  const std::string init = kind == "max" ? "(-(1.0f / 0.0f))" : "0.0f";
  auto combine = [&](const std::string& acc, const std::string& v) {
    return kind == "max" ? acc + " = hpf_maxf(" + acc + ", " + v + ");" : acc + " += " + v + ";";
  };
  auto finish = [&](const std::string& acc) {
    return kind == "mean" ? "(" + acc + " / " + std::to_string(count) + ".0f)" : acc;
  };
  const std::string acc = vec ? "acc[k]" : "acc";
  const std::string elem = vec ? "X[off + c0 + k]" : "X[off]";

  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << tx << "* restrict X = (const " << tx << "*)args[0];\n"
    << "  " << ty << "* restrict Y = (" << ty << "*)args[" << spec.inputs.size() << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    i64 rem = r, base = 0;\n";
  for (auto it = outer_kept.rbegin(); it != outer_kept.rend(); ++it)
    s << "    base += (rem % " << it->size << "LL) * " << it->stride << "LL; rem /= " << it->size << "LL;\n";
  std::string ind = "    ";
  if (vec) {
    s << ind << "for (i64 c0 = 0; c0 < " << V << "LL; c0 += " << B << "LL) {\n";
    ind += "  ";
    s << ind << "const i64 n = " << V << "LL - c0 < " << B << "LL ? " << V << "LL - c0 : " << B << "LL;\n"
      << ind << "float acc[" << B << "];\n"
      << ind << "for (i64 k = 0; k < n; ++k) acc[k] = " << init << ";\n";
  } else {
    s << ind << "float acc = " << init << ";\n";
  }
  std::string off = "base";
  for (size_t k = 0; k < red.size(); ++k) {
    const std::string o = "o" + std::to_string(k), i = "i" + std::to_string(k);
    s << ind << "for (i64 " << i << " = 0; " << i << " < " << red[k].size << "LL; ++" << i << ") {\n";
    ind += "  ";
    s << ind << "const i64 " << o << " = " << off << " + " << i << " * " << red[k].stride << "LL;\n";
    off = o;
  }
  s << ind << "const i64 off = " << off << ";\n";
  if (vec)
    s << ind << "for (i64 k = 0; k < n; ++k) { const float v = " << c_load(X.dtype, elem) << "; " << combine(acc, "v") << " }\n";
  else
    s << ind << "{ const float v = " << c_load(X.dtype, elem) << "; " << combine(acc, "v") << " }\n";
  for (size_t k = 0; k < red.size(); ++k) {
    ind.resize(ind.size() - 2);
    s << ind << "}\n";
  }
  if (vec) {
    s << ind << "for (i64 k = 0; k < n; ++k) Y[r * " << V << "LL + c0 + k] = " << c_store(Y.dtype, finish(acc)) << ";\n";
    ind.resize(ind.size() - 2);
    s << ind << "}\n";
  } else {
    s << ind << "Y[r] = " << c_store(Y.dtype, finish(acc)) << ";\n";
  }
  s << "  }\n}\n";
  const int64_t per_row = std::max<int64_t>(1, V * std::max<int64_t>(count, 1));
  return GeneratedKernel{name, s.str(), rows, std::max<int64_t>(1, 16384 / per_row)};
}

}  // namespace hpf::jit
