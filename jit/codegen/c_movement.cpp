// Concat, Slice, Pad, Expand and Resize in C. Slice, Pad, Expand and nearest Resize are one
// kernel shape: per output axis, a map from output coordinate to input coordinate (-1: the pad
// value), computed here with the shapes and operands baked in; affine maps become index
// arithmetic, others static tables. Linear Resize interpolates over the last two axes with
// baked source rows/columns and weights. Values move in their storage format: no conversion
// unless input and output formats differ. One work item is one output row (last axis).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/ir/op_geometry.hpp"
#include "core/ir/op_table.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_prelude.hpp"

namespace hpf::jit {
namespace {

// ---- attribute access (node attributes may omit defaults) ----

template <typename T>
T attr_or(const Attributes& a, const std::string& key, T def) {
  auto it = a.find(key);
  if (it == a.end()) return def;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return def;
}

std::vector<int64_t> ints_of(const Attributes& a, const std::string& key) {
  return attr_or(a, key, std::vector<int64_t>{});
}

// ---- storage types and element moves ----

// Unsigned type of the same width: moves copy bits.
const char* bits_type(DType t) {
  switch (bit_width(t)) {
    case 8: return "u8";
    case 16: return "u16";
    case 32: return "u32";
    case 64: return "i64";
    default: return nullptr;
  }
}

// How to read input `in` and write output `out`: raw bits when the formats agree, else
// through FP32 with the format conversions of the prelude.
struct Move {
  std::string tin, tout;
  DType in, out;
  bool same = true;
  std::string operator()(const std::string& e) const {
    if (same) return e;
    std::string v = c_store(out, c_load(in, e));
    return out == DType::F32 || out == DType::TF32 ? "hpf_bits(" + v + ")" : v;
  }
};

Expected<Move> move_of(DType in, DType out) {
  Move m{"", "", in, out, in == out};
  const char* to = bits_type(out);
  const char* ti = m.same ? bits_type(in) : c_storage_type(in);
  if (!to || !ti || (!m.same && !c_storage_type(out)))
    return Status::unsupported("C codegen: moving " + std::string(dtype_name(in)) + " to " + std::string(dtype_name(out)));
  m.tin = ti;
  m.tout = to;
  return m;
}

// `value` encoded in `t`, as a literal of bits_type(t).
std::string value_bits(DType t, double value) {
  Expected<Tensor> e = is_float(t) ? Tensor::from_f32({1}, std::vector<float>{static_cast<float>(value)}, t)
                                   : Tensor::from_i64({1}, std::vector<int64_t>{static_cast<int64_t>(value)}, t);
  uint64_t bits = 0;
  if (e.ok()) std::memcpy(&bits, e->bytes().data(), std::min<size_t>(sizeof bits, e->nbytes()));
  return std::string("((") + bits_type(t) + ")" + std::to_string(bits) + "ULL)";
}

std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

bool affine(const std::vector<int64_t>& m) {
  if (m.empty()) return true;
  const int64_t step = m.size() > 1 ? m[1] - m[0] : 0;
  for (size_t j = 0; j < m.size(); ++j)
    if (m[j] < 0 || m[j] != m[0] + static_cast<int64_t>(j) * step) return false;
  return true;
}

std::string table(const std::string& name, const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "static const i64 " << name << "[" << std::max<size_t>(v.size(), 1) << "] = {";
  for (size_t j = 0; j < v.size(); ++j) s << (j ? "," : "") << v[j];
  if (v.empty()) s << "0";
  s << "};\n";
  return s.str();
}

std::string ftable(const std::string& name, const std::vector<double>& v) {
  std::ostringstream s;
  s << "static const float " << name << "[" << std::max<size_t>(v.size(), 1) << "] = {";
  for (size_t j = 0; j < v.size(); ++j) s << (j ? "," : "") << c_float(static_cast<float>(v[j]));
  if (v.empty()) s << "0.0f";
  s << "};\n";
  return s.str();
}

int64_t grain_for(int64_t row) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row)); }

// The index-map kernel: maps[k][j] = input coordinate of output coordinate j on axis k, -1 for
// the pad value. `in_shape` has the output's rank (Expand pads it with leading 1s).
Expected<GeneratedKernel> index_map_kernel(const KernelSpec& spec, const std::string& name,
                                           std::vector<int64_t> in_shape, std::vector<std::vector<int64_t>> maps,
                                           double pad_value) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  HPF_ASSIGN_OR_RETURN(Move mv, move_of(X.dtype, Y.dtype));
  std::vector<int64_t> out = Y.shape;
  if (out.empty()) {  // a scalar is a one-element row
    out = {1};
    in_shape = {1};
    maps = {{0}};
  }
  const size_t rank = out.size();
  const auto st = strides(in_shape);
  const int64_t L = out.back(), rows = L ? numel(out) / L : 0;
  bool any_pad = false;
  std::ostringstream tabs, body;
  // Outer axes, innermost first: r decomposes into their coordinates.
  body << "    i64 rem = r, src = 0; int pad = 0;\n";
  for (size_t k = rank - 1; k-- > 0;) {
    const auto& m = maps[k];
    const std::string idx = "(rem % " + std::to_string(out[k]) + "LL)";
    if (affine(m)) {
      const int64_t a = m.empty() ? 0 : m[0], step = m.size() > 1 ? m[1] - m[0] : 0;
      body << "    src += (" << a << "LL + " << idx << " * " << step << "LL) * " << st[k] << "LL;";
    } else {
      std::vector<int64_t> off(m.size());
      bool has_pad = false;
      for (size_t j = 0; j < m.size(); ++j) {
        off[j] = m[j] < 0 ? -1 : m[j] * st[k];
        has_pad |= m[j] < 0;
      }
      any_pad |= has_pad;
      tabs << table("M" + std::to_string(k), off);
      body << "    { const i64 m = M" << k << "[" << idx << "]; " << (has_pad ? "if (m < 0) pad = 1; " : "") << "src += m; }";
    }
    body << " rem /= " << out[k] << "LL;\n";
  }
  const auto& last = maps[rank - 1];
  const std::string pad_lit = value_bits(Y.dtype, pad_value);
  body << "    " << mv.tout << "* restrict y = Y + r * " << L << "LL;\n";
  if (any_pad) body << "    if (pad) { for (i64 j = 0; j < " << L << "LL; ++j) y[j] = " << pad_lit << "; continue; }\n";
  if (affine(last)) {
    const int64_t a = last.empty() ? 0 : last[0], step = last.size() > 1 ? last[1] - last[0] : 0;
    body << "    const " << mv.tin << "* restrict x = X + src + " << a << "LL;\n"
         << "    for (i64 j = 0; j < " << L << "LL; ++j) y[j] = " << mv("x[j * " + std::to_string(step) + "LL]") << ";\n";
  } else {
    bool has_pad = std::any_of(last.begin(), last.end(), [](int64_t v) { return v < 0; });
    tabs << table("ML", last);
    body << "    for (i64 j = 0; j < " << L << "LL; ++j) y[j] = "
         << (has_pad ? "ML[j] < 0 ? " + pad_lit + " : " : "") << mv("X[src + ML[j]]") << ";\n";
  }
  std::ostringstream s;
  s << c_prelude() << "\n" << tabs.str() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << mv.tin << "* restrict X = (const " << mv.tin << "*)args[0];\n"
    << "  " << mv.tout << "* restrict Y = (" << mv.tout << "*)args[" << spec.inputs.size() << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << body.str() << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, grain_for(L)};
}

// ---- Pad ----


// ---- Resize ----



// Per-axis scales as the reference derives them: from `resize_scales`, else out / in.
std::vector<double> resize_scales(const KernelSpec& spec) {
  const auto& in = spec.inputs.at(0).shape;
  const auto& out = spec.outputs.at(0).shape;
  std::vector<double> sc(in.size(), 1.0);
  auto given = attr_or(spec.attrs, "resize_scales", std::vector<float>{});
  for (size_t k = 0; k < in.size(); ++k)
    sc[k] = given.size() == in.size() ? double(given[k]) : (in[k] > 0 ? double(out[k]) / double(in[k]) : 1.0);
  return sc;
}

// Does the reference interpolate axis k (it copies axes left at scale 1)?
bool resized(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::vector<double>& sc, size_t k) {
  return out[k] != in[k] || sc[k] != 1.0;
}

struct LinearAxis {
  std::vector<int64_t> i0, i1;
  std::vector<double> w0, w1;
};
LinearAxis linear_axis(int64_t in, int64_t out, double scale, const std::string& mode) {
  LinearAxis a;
  for (int64_t j = 0; j < out; ++j) {
    const double v = std::clamp(ir::resize_source_coordinate(double(j), in, out, scale, mode), 0.0, double(in - 1));
    const auto i0 = static_cast<int64_t>(std::floor(v));
    a.i0.push_back(i0);
    a.i1.push_back(std::min(i0 + 1, in - 1));
    a.w1.push_back(v - double(i0));
    a.w0.push_back(1 - (v - double(i0)));
  }
  return a;
}

Expected<GeneratedKernel> resize_linear(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const char* tx = c_storage_type(X.dtype);
  const char* ty = c_storage_type(Y.dtype);
  if (!tx || !ty || !is_float(X.dtype) || !is_float(Y.dtype))
    return Status::unsupported("C codegen: linear Resize of " + std::string(dtype_name(X.dtype)));
  const std::string coord = attr_or(spec.attrs, "coordinate_transformation_mode", std::string("half_pixel"));
  const auto sc = resize_scales(spec);
  const size_t rank = X.shape.size();
  if (rank == 0) return Status::unsupported("C codegen: linear Resize of a scalar");
  for (size_t k = 0; k + 2 < rank; ++k)
    if (resized(X.shape, Y.shape, sc, k)) return Status::unsupported("C codegen: linear Resize beyond the last two axes");
  const size_t w = rank - 1;
  const bool has_h = rank >= 2, rh = has_h && resized(X.shape, Y.shape, sc, rank - 2), rw = resized(X.shape, Y.shape, sc, w);
  const int64_t IW = X.shape[w], OW = Y.shape[w], IH = has_h ? X.shape[rank - 2] : 1, OH = has_h ? Y.shape[rank - 2] : 1;
  const int64_t rows = OW ? numel(Y.shape) / OW : 0;
  std::ostringstream s;
  s << c_prelude() << "\n";
  if (rh) {
    auto a = linear_axis(IH, OH, sc[rank - 2], coord);
    for (auto& v : a.i0) v *= IW;
    for (auto& v : a.i1) v *= IW;
    s << table("H0", a.i0) << table("H1", a.i1) << ftable("HW0", a.w0) << ftable("HW1", a.w1);
  }
  if (rw) {
    auto a = linear_axis(IW, OW, sc[w], coord);
    s << table("W0", a.i0) << table("W1", a.i1) << ftable("WW0", a.w0) << ftable("WW1", a.w1);
  }
  auto ld = [&](const std::string& e) { return c_load(X.dtype, e); };
  // Along W from one input row `p`.
  auto along_w = [&](const std::string& p) {
    return rw ? "(WW0[j] * " + ld(p + "[W0[j]]") + " + WW1[j] * " + ld(p + "[W1[j]]") + ")" : ld(p + "[j]");
  };
  s << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << "  const " << tx << "* restrict X = (const " << tx << "*)args[0];\n"
    << "  " << ty << "* restrict Y = (" << ty << "*)args[" << spec.inputs.size() << "];\n"
    << "  for (i64 r = begin; r < end; ++r) {\n"
    << "    const i64 h = r % " << OH << "LL, o = r / " << OH << "LL;\n"
    << "    const " << tx << "* base = X + o * " << IH * IW << "LL;\n"
    << "    " << ty << "* restrict y = Y + r * " << OW << "LL;\n";
  if (rh) {
    // H first, then W, as the reference's one-pass-per-axis order.
    s << "    const " << tx << "* a = base + H0[h];\n"
      << "    const " << tx << "* b = base + H1[h];\n"
      << "    const float wa = HW0[h], wb = HW1[h];\n";
    if (rw)
      s << "    for (i64 j = 0; j < " << OW << "LL; ++j) {\n"
        << "      const float v0 = wa * " << ld("a[W0[j]]") << " + wb * " << ld("b[W0[j]]") << ";\n"
        << "      const float v1 = wa * " << ld("a[W1[j]]") << " + wb * " << ld("b[W1[j]]") << ";\n"
        << "      y[j] = " << c_store(Y.dtype, "WW0[j] * v0 + WW1[j] * v1") << ";\n"
        << "    }\n";
    else
      s << "    for (i64 j = 0; j < " << OW << "LL; ++j) y[j] = " << c_store(Y.dtype, "wa * " + ld("a[j]") + " + wb * " + ld("b[j]"))
        << ";\n";
  } else {
    s << "    const " << tx << "* a = base + h * " << IW << "LL;\n"
      << "    for (i64 j = 0; j < " << OW << "LL; ++j) y[j] = " << c_store(Y.dtype, along_w("a")) << ";\n";
  }
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), rows, grain_for(OW)};
}

}  // namespace

// ---- lowering: which nodes these generators take, with their constant operands ----

std::string bake_movement(const Graph& g, const Node& n, Attributes& attrs) {
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kNoValue) return "";
  const Value& x = g.value(n.inputs[0]);
  const Value& y = g.value(n.outputs[0]);
  if (!x.has_shape || !y.has_shape) return "";
  const auto in = concrete(x.shape), out = concrete(y.shape);
  if (!in || !out) return "";
  const auto rank = static_cast<int64_t>(in->size());
  if (!bits_type(x.dtype) || !bits_type(y.dtype)) return "";  // sub-byte formats: reference
  for (ValueId v : n.inputs)
    if (n.op == "Concat" && v != kNoValue && !bits_type(g.value(v).dtype)) return "";
  // The constant behind optional input k, or nullptr (absent: `absent` set).
  auto const_in = [&](size_t k, bool& absent) -> const Tensor* {
    absent = k >= n.inputs.size() || n.inputs[k] == kNoValue;
    return absent ? nullptr : g.constant(n.inputs[k]);
  };
  bool absent = false;
  if (n.op == "Concat") {
    auto axis = ir::normalize_axis(attr_or(n.attrs, "axis", int64_t{0}), rank);
    if (!axis || !n.attrs.count("axis")) return "";
    for (ValueId v : n.inputs)
      if (v == kNoValue) return "";
    attrs["op"] = n.op;
    attrs["axis"] = *axis;
    return "concat";
  }
  if (n.op == "Expand") {
    attrs["op"] = n.op;  // the output shape says it all
    return "expand";
  }
  if (n.op == "Slice") {
    std::vector<int64_t> starts = ints_of(n.attrs, "starts"), ends = ints_of(n.attrs, "ends"), axes = ints_of(n.attrs, "axes"),
                         steps;
    if (n.inputs.size() > 1) {
      const Tensor *s = const_in(1, absent), *e = const_in(2, absent);
      if (!s || !e) return "";
      starts = s->to_i64();
      ends = e->to_i64();
      const Tensor* a = const_in(3, absent);
      if (!a && !absent) return "";
      axes = a ? a->to_i64() : std::vector<int64_t>{};
      const Tensor* st = const_in(4, absent);
      if (!st && !absent) return "";
      steps = st ? st->to_i64() : std::vector<int64_t>{};
    }
    if (!ir::slice_ranges(*in, starts, ends, axes, steps).ok()) return "";
    attrs["op"] = n.op;
    attrs["slice_starts"] = starts;
    attrs["slice_ends"] = ends;
    attrs["slice_axes"] = axes;
    attrs["slice_steps"] = steps;
    return "slice";
  }
  if (n.op == "Pad") {
    const std::string mode = attr_or(n.attrs, "mode", std::string("constant"));
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") return "";
    std::vector<int64_t> pads = ints_of(n.attrs, "pads");
    float value = attr_or(n.attrs, "value", 0.0f);
    if (n.inputs.size() > 1) {
      const Tensor* p = const_in(1, absent);
      if (!p) return "";
      pads = p->to_i64();
      if (const Tensor* v = const_in(2, absent)) {
        auto f = v->to_f32();
        if (!f.empty()) value = f[0];
      } else if (!absent) {
        return "";
      }
    }
    std::vector<int64_t> axes;
    if (const Tensor* a = const_in(3, absent)) {
      auto norm = ir::normalize_axes(a->to_i64(), rank);
      if (!norm.ok()) return "";
      axes = *norm;
    } else if (!absent) {
      return "";
    } else {
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    if (pads.size() != 2 * axes.size()) return "";
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t j = 0; j < axes.size(); ++j) {
      full[axes[j]] = pads[j];
      full[rank + axes[j]] = pads[j + axes.size()];
    }
    for (int64_t k = 0; k < rank; ++k)
      if (!ir::pad_source_map(mode, (*in)[k], full[k], full[rank + k]).ok()) return "";
    attrs["op"] = n.op;
    attrs["mode"] = mode;
    attrs["pad_pads"] = full;  // every axis: [b0..bn-1, e0..en-1]
    attrs["pad_value"] = value;
    return "pad";
  }
  if (n.op == "Resize") {
    const std::string mode = attr_or(n.attrs, "mode", std::string("nearest"));
    const std::string coord = attr_or(n.attrs, "coordinate_transformation_mode", std::string("half_pixel"));
    const std::string nearest = attr_or(n.attrs, "nearest_mode", std::string("round_prefer_floor"));
    if (!ir::is_resize_coordinate_mode(coord)) return "";
    if (mode == "nearest" ? !ir::is_resize_nearest_mode(nearest) : mode != "linear") return "";
    if (attr_or(n.attrs, "antialias", int64_t{0}) != 0 || n.attrs.count("axes") ||
        attr_or(n.attrs, "keep_aspect_ratio_policy", std::string("stretch")) != "stretch")
      return "";
    if (mode == "linear" && !is_float(x.dtype)) return "";
    std::vector<float> scales;
    const Tensor* sz = const_in(3, absent);
    if (!sz && !absent) return "";
    if (!sz || sz->numel() == 0) {
      const Tensor* s = const_in(2, absent);
      if (!s || s->numel() != rank) return "";
      scales = s->to_f32();
      for (int64_t k = 0; k < rank; ++k)
        if (!(scales[k] > 0) || static_cast<int64_t>(std::floor(double((*in)[k]) * scales[k])) != (*out)[k]) return "";
    } else if (sz->to_i64() != *out) {
      return "";
    }
    for (int64_t k = 0; k < rank; ++k)
      if ((*in)[k] == 0 && (*out)[k] > 0) return "";
    if (mode == "linear") {
      std::vector<double> sc(rank);
      for (int64_t k = 0; k < rank; ++k)
        sc[k] = scales.empty() ? ((*in)[k] > 0 ? double((*out)[k]) / double((*in)[k]) : 1.0) : double(scales[k]);
      for (int64_t k = 0; k + 2 < rank; ++k)
        if (resized(*in, *out, sc, k)) return "";
      if (rank == 0) return "";
    }
    attrs["op"] = n.op;
    attrs["mode"] = mode;
    attrs["coordinate_transformation_mode"] = coord;
    attrs["nearest_mode"] = nearest;
    if (!scales.empty()) attrs["resize_scales"] = scales;
    return "resize";
  }
  return "";
}

Expected<GeneratedKernel> generate_c_concat(const KernelSpec& spec, const std::string& name) {
  const TensorDesc& Y = spec.outputs.at(0);
  const auto rank = static_cast<int64_t>(Y.shape.size());
  auto axis = ir::normalize_axis(attr_or(spec.attrs, "axis", int64_t{0}), rank);
  if (!axis) return Status::invalid("C codegen: Concat axis out of range for " + shape_string(Y.shape));
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= Y.shape[k];
  for (int64_t k = *axis + 1; k < rank; ++k) inner *= Y.shape[k];
  const int64_t out_axis = Y.shape[*axis];
  std::vector<Move> mv;
  std::vector<int64_t> len;
  int64_t total = 0;
  for (const TensorDesc& X : spec.inputs) {
    HPF_ASSIGN_OR_RETURN(Move m, move_of(X.dtype, Y.dtype));
    if (static_cast<int64_t>(X.shape.size()) != rank) return Status::invalid("C codegen: Concat inputs of another rank");
    mv.push_back(m);
    len.push_back(X.shape[*axis]);
    total += X.shape[*axis];
  }
  if (total != out_axis) return Status::invalid("C codegen: Concat inputs do not add up to " + shape_string(Y.shape));
  std::ostringstream s;
  s << c_prelude() << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n";
  for (size_t k = 0; k < spec.inputs.size(); ++k)
    s << "  const " << mv[k].tin << "* restrict X" << k << " = (const " << mv[k].tin << "*)args[" << k << "];\n";
  s << "  " << mv[0].tout << "* restrict Y = (" << mv[0].tout << "*)args[" << spec.inputs.size() << "];\n";
  int64_t items, row;
  if (inner > 1) {
    // One item = one slab of `inner` elements at output position (o, p) on the axis.
    items = outer * out_axis;
    row = inner;
    s << "  for (i64 w = begin; w < end; ++w) {\n"
      << "    const i64 o = w / " << out_axis << "LL, p = w % " << out_axis << "LL;\n"
      << "    " << mv[0].tout << "* restrict y = Y + w * " << inner << "LL;\n";
    int64_t off = 0;
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      if (len[k] == 0) continue;
      s << "    " << (off ? "else " : "") << "if (p < " << off + len[k] << "LL) {\n"
        << "      const " << mv[k].tin << "* restrict x = X" << k << " + (o * " << len[k] << "LL + p - " << off << "LL) * " << inner
        << "LL;\n"
        << "      for (i64 j = 0; j < " << inner << "LL; ++j) y[j] = " << mv[k]("x[j]") << ";\n    }\n";
      off += len[k];
    }
    s << "  }\n}\n";
  } else {
    // One item = one output row along the (innermost) axis: each input's piece in turn.
    items = out_axis ? outer : 0;
    row = out_axis;
    s << "  for (i64 o = begin; o < end; ++o) {\n"
      << "    " << mv[0].tout << "* restrict y = Y + o * " << out_axis << "LL;\n";
    int64_t off = 0;
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      if (len[k] == 0) continue;
      s << "    for (i64 j = 0; j < " << len[k] << "LL; ++j) y[" << off << "LL + j] = " << mv[k]("X" + std::to_string(k) + "[o * " + std::to_string(len[k]) + "LL + j]")
        << ";\n";
      off += len[k];
    }
    s << "  }\n}\n";
  }
  if (numel(Y.shape) == 0) items = 0;
  return GeneratedKernel{name, s.str(), items, grain_for(row)};
}

Expected<GeneratedKernel> generate_c_slice(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  auto r = ir::slice_ranges(X.shape, ints_of(spec.attrs, "slice_starts"), ints_of(spec.attrs, "slice_ends"),
                            ints_of(spec.attrs, "slice_axes"), ints_of(spec.attrs, "slice_steps"));
  if (!r.ok()) return r.status();
  std::vector<std::vector<int64_t>> maps;
  for (size_t k = 0; k < r->size(); ++k) {
    const auto& a = (*r)[k];
    if (k >= Y.shape.size() || a.count != Y.shape[k])
      return Status::invalid("C codegen: Slice of " + shape_string(X.shape) + " does not give " + shape_string(Y.shape));
    std::vector<int64_t> m(a.count);
    for (int64_t j = 0; j < a.count; ++j) m[j] = a.start + j * a.step;
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, X.shape, std::move(maps), 0.0);
}

Expected<GeneratedKernel> generate_c_pad(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  const auto rank = static_cast<int64_t>(X.shape.size());
  const std::string mode = attr_or(spec.attrs, "mode", std::string("constant"));
  const auto pads = ints_of(spec.attrs, "pad_pads");
  if (static_cast<int64_t>(pads.size()) != 2 * rank) return Status::invalid("C codegen: Pad needs pad_pads for every axis");
  std::vector<std::vector<int64_t>> maps;
  for (int64_t k = 0; k < rank; ++k) {
    HPF_ASSIGN_OR_RETURN(auto m, ir::pad_source_map(mode, X.shape[k], pads[k], pads[rank + k]));
    if (static_cast<int64_t>(m.size()) != Y.shape[k]) return Status::invalid("C codegen: Pad output " + shape_string(Y.shape));
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, X.shape, std::move(maps), attr_or(spec.attrs, "pad_value", 0.0f));
}

Expected<GeneratedKernel> generate_c_expand(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  if (X.shape.size() > Y.shape.size()) return Status::invalid("C codegen: Expand to a lower rank");
  std::vector<int64_t> in(Y.shape.size() - X.shape.size(), 1);
  in.insert(in.end(), X.shape.begin(), X.shape.end());
  std::vector<std::vector<int64_t>> maps;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != Y.shape[k] && in[k] != 1)
      return Status::invalid("C codegen: Expand of " + shape_string(X.shape) + " to " + shape_string(Y.shape));
    std::vector<int64_t> m(Y.shape[k]);
    for (int64_t j = 0; j < Y.shape[k]; ++j) m[j] = in[k] == 1 ? 0 : j;
    maps.push_back(std::move(m));
  }
  return index_map_kernel(spec, name, in, std::move(maps), 0.0);
}

Expected<GeneratedKernel> generate_c_resize(const KernelSpec& spec, const std::string& name) {
  const TensorDesc &X = spec.inputs.at(0), &Y = spec.outputs.at(0);
  if (X.shape.size() != Y.shape.size()) return Status::invalid("C codegen: Resize changes the rank");
  const std::string mode = attr_or(spec.attrs, "mode", std::string("nearest"));
  const std::string coord = attr_or(spec.attrs, "coordinate_transformation_mode", std::string("half_pixel"));
  if (!ir::is_resize_coordinate_mode(coord)) return Status::unsupported("C codegen: Resize coordinate mode '" + coord + "'");
  if (mode == "linear") return resize_linear(spec, name);
  if (mode != "nearest") return Status::unsupported("C codegen: Resize mode '" + mode + "'");
  const std::string nearest = attr_or(spec.attrs, "nearest_mode", std::string("round_prefer_floor"));
  if (!ir::is_resize_nearest_mode(nearest)) return Status::unsupported("C codegen: Resize nearest_mode '" + nearest + "'");
  const auto sc = resize_scales(spec);
  std::vector<std::vector<int64_t>> maps(X.shape.size());
  for (size_t k = 0; k < X.shape.size(); ++k)
    for (int64_t j = 0; j < Y.shape[k]; ++j)
      maps[k].push_back(ir::resize_nearest_index(ir::resize_source_coordinate(double(j), X.shape[k], Y.shape[k], sc[k], coord), nearest, X.shape[k]));
  return index_map_kernel(spec, name, X.shape, std::move(maps), 0.0);
}

}  // namespace hpf::jit
