// Shape functions of the elementwise, matrix, window, normalisation, reduction and data-movement
// ops (the other families: shape_functions_selection.cpp, shape_functions_recurrent_signal.cpp,
// shape_control.cpp).
#include "core/ir/shape_functions.hpp"

#include <algorithm>
#include <cmath>

#include "core/ir/op_geometry.hpp"
#include "core/ir/shape_fn_util.hpp"

namespace hpf::ir::shape_fn {

Status same_as_input0(InferContext& c) {
  if (!shapes_known(c, c.input(0).dtype)) return {};
  c.set_output(0, c.input(0).dtype, *c.shape(0));
  return {};
}

namespace {
Status broadcast_impl(InferContext& c, bool same_kind) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  Shape s = *c.shape(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    if (same_kind && is_float(t) != is_float(c.input(i).dtype))
      return c.error("input " + std::to_string(i) + " is " + std::string(dtype_name(c.input(i).dtype)) +
                     ", input 0 is " + std::string(dtype_name(t)));
    auto b = broadcast_shapes(s, *c.shape(i));
    if (!b.ok()) return c.error(b.status().message());
    s = *b;
  }
  c.set_output(0, t, s);
  return {};
}

}  // namespace

Status broadcast(InferContext& c) { return broadcast_impl(c, true); }
Status broadcast_mixed(InferContext& c) { return broadcast_impl(c, false); }

Status compare(InferContext& c) {
  if (!shapes_known(c, DType::BOOL)) return {};
  auto b = broadcast_shapes(*c.shape(0), *c.shape(1));
  if (!b.ok()) return c.error(b.status().message());
  c.set_output(0, DType::BOOL, *b);
  return {};
}

Status logical_not(InferContext& c) {
  if (c.input(0).dtype != DType::BOOL) return c.error("input must be bool, is " + std::string(dtype_name(c.input(0).dtype)));
  return same_as_input0(c);
}

Status to_bool(InferContext& c) {
  if (!shapes_known(c, DType::BOOL)) return {};
  c.set_output(0, DType::BOOL, *c.shape(0));
  return {};
}

Status size_of(InferContext& c) {
  c.set_output(0, DType::I64, {});
  return {};
}

Status dropout(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (c.has_input(2)) {
    // Training mode draws a random mask unless the ratio is 0; only that case is deterministic.
    const Tensor* m = c.const_input(2);
    const Tensor* r = c.has_input(1) ? c.const_input(1) : nullptr;
    const bool random = !c.has_input(1) || (r && r->numel() == 1 && r->to_f32()[0] != 0.0f);
    if (m && m->numel() == 1 && m->to_i64()[0] != 0 && random)
      return Status::unsupported("node '" + c.node().name +
                                 "' (Dropout): training_mode=true with a non-zero ratio draws a random mask");
  }
  if (!c.shape(0)) {
    c.set_output_unknown_shape(0, t);
    if (c.num_outputs() > 1) c.set_output_unknown_shape(1, DType::BOOL);
    return {};
  }
  c.set_output(0, t, *c.shape(0));
  if (c.num_outputs() > 1) c.set_output(1, DType::BOOL, *c.shape(0));
  return {};
}

Status where(InferContext& c) {
  const DType t = c.input(1).dtype;
  if (c.input(0).dtype != DType::BOOL) return c.error("condition must be bool");
  if (!shapes_known(c, t)) return {};
  auto b = broadcast_shapes(*c.shape(0), *c.shape(1));
  if (!b.ok()) return c.error(b.status().message());
  auto b2 = broadcast_shapes(*b, *c.shape(2));
  if (!b2.ok()) return c.error(b2.status().message());
  c.set_output(0, t, *b2);
  return {};
}

Status cast(InferContext& c) {
  auto to = dtype_from_onnx(c.attr_int("to"));
  if (!to.ok()) return c.error(to.status().message());
  if (!shapes_known(c, *to)) return {};
  c.set_output(0, *to, *c.shape(0));
  return {};
}

Status cast_like(InferContext& c) {
  const DType to = c.input(1).dtype;
  if (!shapes_known(c, to)) return {};
  c.set_output(0, to, *c.shape(0));
  return {};
}

Status arg_reduce(InferContext& c) {
  if (!shapes_known(c, DType::I64)) return {};
  const Shape& x = *c.shape(0);
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x.size())));
  Shape out;
  for (size_t k = 0; k < x.size(); ++k) {
    if (int64_t(k) != axis) out.push_back(x[k]);
    else if (c.attr_int("keepdims") != 0) out.push_back(Dim(1));
  }
  c.set_output(0, DType::I64, out);
  return {};
}

Status matmul(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  Shape a = *c.shape(0), b = *c.shape(1);
  if (a.empty() || b.empty()) return c.error("MatMul inputs must have rank >= 1");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), Dim(1));
  if (b1) b.push_back(Dim(1));
  const Dim& k1 = a.back();
  const Dim& k2 = b[b.size() - 2];
  if (k1.known() && k2.known() && k1.value != k2.value)
    return c.error("inner dimensions differ: " + to_string(*c.shape(0)) + " x " + to_string(*c.shape(1)));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch.ok()) return c.error("batch dimensions: " + batch.status().message());
  Shape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  c.set_output(0, t, out);
  return {};
}

Status gemm(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape &a = *c.shape(0), &b = *c.shape(1);
  if (a.size() != 2 || b.size() != 2)
    return c.error("Gemm needs rank-2 A and B, got " + to_string(a) + " and " + to_string(b));
  const Dim m = c.attr_int("transA") ? a[1] : a[0];
  const Dim ka = c.attr_int("transA") ? a[0] : a[1];
  const Dim kb = c.attr_int("transB") ? b[1] : b[0];
  const Dim n = c.attr_int("transB") ? b[0] : b[1];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return c.error("inner dimensions differ: A " + to_string(a) + ", B " + to_string(b));
  Shape out{m, n};
  if (c.has_input(2)) {
    auto bc = broadcast_shapes(out, *c.shape(2));
    if (!bc.ok() || !(*bc == out || concrete(*bc) == std::nullopt))
      return c.error("C " + to_string(*c.shape(2)) + " does not broadcast to " + to_string(out));
  }
  c.set_output(0, t, out);
  return {};
}

Status conv(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &w = *c.shape(1);
  if (x.size() < 3) return c.error("input must be [N,C,spatial...], got " + to_string(x));
  if (w.size() != x.size()) return c.error("weight " + to_string(w) + " and input " + to_string(x) + " differ in rank");
  const int64_t group = c.attr_int("group");
  if (group < 1) return c.error("group must be >= 1");
  if (x[1].known() && w[1].known() && x[1].value != w[1].value * group)
    return c.error("input has " + std::to_string(x[1].value) + " channels, weight expects " +
                   std::to_string(w[1].value) + " x group " + std::to_string(group));
  if (w[0].known() && w[0].value % group != 0)
    return c.error(std::to_string(w[0].value) + " output channels do not divide into " + std::to_string(group) + " groups");
  if (c.has_input(2) && c.shape(2)->size() != 1) return c.error("bias must be 1-D");
  std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  auto wsz = sizes(w);
  if (ks.empty()) ks.assign(wsz.begin() + 2, wsz.end());
  if (std::find(ks.begin(), ks.end(), -1) != ks.end()) { c.set_output_unknown_shape(0, t); return {}; }
  auto xs = sizes(x);
  auto g = window_geometry(std::span(xs).subspan(2), ks, c.attr_ints("strides"), c.attr_ints("dilations"),
                           c.attr_ints("pads"), c.attr_string("auto_pad"), false);
  if (!g.ok()) return wrap(c, g.status());
  Shape out{x[0], w[0]};
  for (int64_t o : g->out) out.push_back(o >= 0 ? Dim(o) : Dim());
  c.set_output(0, t, out);
  return {};
}

Status conv_transpose(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &w = *c.shape(1);
  if (x.size() < 3 || w.size() != x.size())
    return c.error("input " + to_string(x) + " and weight " + to_string(w) + " must be [N,C,spatial...] of equal rank");
  const int64_t group = c.attr_int("group");
  if (group < 1) return c.error("group must be >= 1");
  if (x[1].known() && w[0].known() && x[1].value != w[0].value)
    return c.error("input has " + std::to_string(x[1].value) + " channels, weight " + to_string(w) + " expects " + std::to_string(w[0].value));
  std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  auto wsz = sizes(w);
  if (ks.empty()) ks.assign(wsz.begin() + 2, wsz.end());
  auto xs = sizes(x);
  auto g = conv_transpose_geometry(std::span(xs).subspan(2), ks, c.attr_ints("strides"),
                                   c.attr_ints("dilations"), c.attr_ints("pads"),
                                   c.attr_ints("output_padding"), c.attr_ints("output_shape"),
                                   c.attr_string("auto_pad"));
  if (!g.ok()) return wrap(c, g.status());
  Shape out{x[0], w[1].known() ? Dim(w[1].value * group) : Dim()};
  for (int64_t o : g->out) out.push_back(o >= 0 ? Dim(o) : Dim());
  c.set_output(0, t, out);
  return {};
}

Status pool(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() < 3) return c.error("input must be [N,C,spatial...], got " + to_string(x));
  auto xs = sizes(x);
  auto g = window_geometry(std::span(xs).subspan(2), c.attr_ints("kernel_shape"), c.attr_ints("strides"),
                           c.attr_ints("dilations"), c.attr_ints("pads"), c.attr_string("auto_pad"),
                           c.attr_int("ceil_mode") != 0);
  if (!g.ok()) return wrap(c, g.status());
  Shape out{x[0], x[1]};
  for (int64_t o : g->out) out.push_back(o >= 0 ? Dim(o) : Dim());
  c.set_output(0, t, out);
  if (c.num_outputs() > 1) c.set_output(1, DType::I64, out);
  return {};
}

Status global_pool(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  Shape s = *c.shape(0);
  if (s.size() < 3) return c.error("input must be [N,C,spatial...], got " + to_string(s));
  for (size_t i = 2; i < s.size(); ++i) s[i] = Dim(1);
  c.set_output(0, t, s);
  return {};
}

Status batch_norm(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() < 2) return c.error("input must be [N,C,...], got " + to_string(x));
  for (size_t i = 1; i < 5; ++i) {
    const Shape& p = *c.shape(i);
    if (p.size() != 1 || (p[0].known() && x[1].known() && p[0].value != x[1].value))
      return c.error("input " + std::to_string(i) + " has shape " + to_string(p) + ", expected [" +
                     to_string({x[1]}).substr(1));
  }
  c.set_output(0, t, x);
  // Training mode (opset 14+): running mean and variance, in the statistics' own type.
  if (c.num_outputs() > 1 && c.attr_int("training_mode") == 0)
    return c.error("running_mean/running_var outputs need training_mode=1");
  for (size_t o = 1; o < c.num_outputs(); ++o) c.set_output(o, c.input(o + 2).dtype, {x[1]});
  return {};
}

Status layer_norm(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x.size())));
  Shape normalized(x.begin() + axis, x.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    auto b = broadcast_shapes(normalized, *c.shape(i));
    if (!b.ok() || *b != normalized)
      return c.error("input " + std::to_string(i) + " " + to_string(*c.shape(i)) +
                     " does not broadcast to the normalized shape " + to_string(normalized));
  }
  c.set_output(0, t, x);
  Shape stats(x.begin(), x.begin() + axis);
  for (size_t i = axis; i < x.size(); ++i) stats.push_back(Dim(1));
  for (size_t o = 1; o < c.num_outputs(); ++o) c.set_output(o, DType::F32, stats);
  return {};
}

Status softmax(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  auto axis = axis_of(c, c.attr_int("axis"), static_cast<int64_t>(c.shape(0)->size()));
  if (!axis.ok()) return axis.status();
  c.set_output(0, t, *c.shape(0));
  return {};
}

Status reduce(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (c.has_input(1)) {
    auto a = const_ints(c, 1);
    if (!a) {
      c.set_output_unknown_shape(0, t);
      return {};
    }
    axes = *a;
  }
  auto norm = normalize_axes(axes, static_cast<int64_t>(x.size()));
  if (!norm.ok()) return wrap(c, norm.status());
  const bool keep = c.attr_int("keepdims") != 0;
  const bool all = norm->empty() && c.attr_int("noop_with_empty_axes") == 0;
  if (norm->empty() && !all) {
    c.set_output(0, t, x);
    return {};
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool reduced = all || std::find(norm->begin(), norm->end(), int64_t(i)) != norm->end();
    if (!reduced) out.push_back(x[i]);
    else if (keep) out.push_back(Dim(1));
  }
  c.set_output(0, t, out);
  return {};
}

Status resize(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  const std::string mode = c.attr_string("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return Status::unsupported("node '" + c.node().name + "' (Resize): mode '" + mode + "' is not supported (nearest, linear, cubic)");
  // Opset 11-12 exports pass an empty tensor for whichever of scales/sizes they do not use.
  const Shape* sizes_shape = c.has_input(3) ? c.shape(3) : nullptr;
  if (sizes_shape && !(sizes_shape->size() == 1 && (*sizes_shape)[0] == Dim(0))) {
    auto s = const_ints(c, 3);
    if (!s) { c.set_output_unknown_shape(0, t); return {}; }
    if (s->size() != x.size()) return c.error("sizes has " + std::to_string(s->size()) + " values for rank " + std::to_string(x.size()));
    c.set_output(0, t, from_sizes(*s));
    return {};
  }
  if (c.has_input(2)) {
    const Tensor* st = c.const_input(2);
    if (!st) { c.set_output_unknown_shape(0, t); return {}; }
    auto scales = st->to_f32();
    if (scales.empty()) return c.error("Resize needs non-empty scales or sizes");
    if (scales.size() != x.size()) return c.error("scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(x.size()));
    Shape out;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!(scales[i] > 0)) return c.error("scales must be positive");
      out.push_back(x[i].known() ? Dim(static_cast<int64_t>(std::floor(x[i].value * double(scales[i])))) : Dim());
    }
    c.set_output(0, t, out);
    return {};
  }
  return c.error("Resize needs scales or sizes");
}

Status gather(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (is_float(c.input(1).dtype)) return c.error("indices must be integers, are " + std::string(dtype_name(c.input(1).dtype)));
  if (!shapes_known(c, t)) return {};
  const Shape &d = *c.shape(0), &idx = *c.shape(1);
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(d.size())));
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  c.set_output(0, t, out);
  return {};
}

Status gather_elements(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (is_float(c.input(1).dtype)) return c.error("indices must be integers, are " + std::string(dtype_name(c.input(1).dtype)));
  if (!shapes_known(c, t)) return {};
  const Shape &d = *c.shape(0), &idx = *c.shape(1);
  if (d.size() != idx.size())
    return c.error("indices rank " + std::to_string(idx.size()) + " differs from data rank " + std::to_string(d.size()));
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(d.size())));
  (void)axis;
  c.set_output(0, t, idx);
  return {};
}

Status trilu(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  if (c.shape(0)->size() < 2) return c.error("input must have rank >= 2, has rank " + std::to_string(c.shape(0)->size()));
  c.set_output(0, t, *c.shape(0));
  return {};
}

Status tile(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  auto reps = const_ints(c, 1);
  if (!reps) {
    c.set_output(0, t, Shape(x.size(), Dim()));
    return {};
  }
  if (reps->size() != x.size())
    return c.error("repeats has " + std::to_string(reps->size()) + " entries, input has rank " + std::to_string(x.size()));
  Shape out;
  for (size_t k = 0; k < x.size(); ++k) {
    if ((*reps)[k] < 0) return c.error("repeats must be non-negative, got " + std::to_string((*reps)[k]));
    out.push_back(x[k].known() ? Dim(x[k].value * (*reps)[k]) : Dim());
  }
  c.set_output(0, t, out);
  return {};
}

Status reshape(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  auto target = const_ints(c, 1);
  if (!target) {
    const Shape* s = c.shape(1);
    if (s && s->size() == 1 && (*s)[0].known())
      c.set_output(0, t, Shape((*s)[0].value, Dim()));
    else
      c.set_output_unknown_shape(0, t);
    return {};
  }
  const Shape& x = *c.shape(0);
  auto r = reshape_target(sizes(x), *target, c.attr_int("allowzero") != 0);
  if (!r.ok()) return wrap(c, r.status());
  Shape out = from_sizes(*r);
  // Keep symbols for dimensions copied with 0.
  for (size_t i = 0; i < target->size() && i < x.size(); ++i)
    if ((*target)[i] == 0 && !c.attr_int("allowzero")) out[i] = x[i];
  c.set_output(0, t, out);
  return {};
}

Status transpose(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = static_cast<int64_t>(x.size()) - 1; i >= 0; --i) perm.push_back(i);
  if (perm.size() != x.size()) return c.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.size()));
  auto norm = normalize_axes(perm, static_cast<int64_t>(x.size()));
  if (!norm.ok()) return c.error("perm: " + norm.status().message());
  Shape out;
  for (int64_t p : *norm) out.push_back(x[p]);
  c.set_output(0, t, out);
  return {};
}

Status flatten(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  int64_t axis = c.attr_int("axis");
  if (axis < -rank || axis > rank) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  auto prod = [&](int64_t b, int64_t e) {
    int64_t p = 1;
    for (int64_t i = b; i < e; ++i) {
      if (!x[i].known()) return Dim();
      p *= x[i].value;
    }
    return Dim(p);
  };
  c.set_output(0, t, {prod(0, axis), prod(axis, rank)});
  return {};
}

Status squeeze(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (c.has_input(1)) {
    auto a = const_ints(c, 1);
    if (!a) { c.set_output_unknown_shape(0, t); return {}; }
    axes = *a;
  }
  auto norm = normalize_axes(axes, static_cast<int64_t>(x.size()));
  if (!norm.ok()) return wrap(c, norm.status());
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool named = std::find(norm->begin(), norm->end(), int64_t(i)) != norm->end();
    if (norm->empty()) {
      if (!x[i].known()) { c.set_output_unknown_shape(0, t); return {}; }
      if (x[i].value == 1) continue;
    } else if (named) {
      if (x[i].known() && x[i].value != 1)
        return c.error("cannot squeeze axis " + std::to_string(i) + " of size " + std::to_string(x[i].value));
      continue;
    }
    out.push_back(x[i]);
  }
  c.set_output(0, t, out);
  return {};
}

Status unsqueeze(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (c.has_input(1)) {
    auto a = const_ints(c, 1);
    if (!a) { c.set_output_unknown_shape(0, t); return {}; }
    axes = *a;
  }
  const auto rank = static_cast<int64_t>(x.size() + axes.size());
  auto norm = normalize_axes(axes, rank);
  if (!norm.ok()) return wrap(c, norm.status());
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(norm->begin(), norm->end(), i) != norm->end()) out.push_back(Dim(1));
    else out.push_back(x[j++]);
  }
  c.set_output(0, t, out);
  return {};
}

Status concat(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  Shape out = *c.shape(0);
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(out.size())));
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    const Shape& s = *c.shape(i);
    if (c.input(i).dtype != t) return c.error("input " + std::to_string(i) + " is " + std::string(dtype_name(c.input(i).dtype)) + ", input 0 is " + std::string(dtype_name(t)));
    if (s.size() != out.size()) return c.error("input " + std::to_string(i) + " " + to_string(s) + " differs in rank from input 0 " + to_string(*c.shape(0)));
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        out[d] = out[d].known() && s[d].known() ? Dim(out[d].value + s[d].value) : Dim();
      } else if (out[d].known() && s[d].known() && out[d].value != s[d].value) {
        return c.error("input " + std::to_string(i) + " " + to_string(s) + " differs from input 0 " + to_string(*c.shape(0)) + " outside axis " + std::to_string(axis));
      }
    }
  }
  c.set_output(0, t, out);
  return {};
}

Status split(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x.size())));
  std::vector<int64_t> sp = c.attr_ints("split");
  if (c.has_input(1)) {
    auto s = const_ints(c, 1);
    if (!s) { for (size_t o = 0; o < c.num_outputs(); ++o) c.set_output_unknown_shape(o, t); return {}; }
    sp = *s;
  }
  if (!sp.empty() && sp.size() != c.num_outputs())
    return c.error("split has " + std::to_string(sp.size()) + " sizes for " + std::to_string(c.num_outputs()) + " outputs");
  auto sz = split_sizes(x[axis].known() ? x[axis].value : -1, sp, static_cast<int64_t>(c.num_outputs()));
  if (!sz.ok()) return wrap(c, sz.status());
  for (size_t o = 0; o < c.num_outputs(); ++o) {
    Shape s = x;
    s[axis] = (*sz)[o] >= 0 ? Dim((*sz)[o]) : Dim();
    c.set_output(o, t, s);
  }
  return {};
}

Status slice(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  std::vector<int64_t> starts = c.attr_ints("starts"), ends = c.attr_ints("ends"),
                       axes = c.attr_ints("axes"), steps;
  if (c.num_inputs() > 1) {  // opset >= 10: starts/ends/axes/steps are inputs
    auto s = const_ints(c, 1), e = const_ints(c, 2);
    auto a = c.has_input(3) ? const_ints(c, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    auto st = c.has_input(4) ? const_ints(c, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    if (!s || !e || !a || !st) {
      c.set_output(0, t, Shape(x.size(), Dim()));
      return {};
    }
    starts = *s, ends = *e, axes = *a, steps = *st;
  }
  auto r = slice_ranges(sizes(x), starts, ends, axes, steps);
  if (!r.ok()) return wrap(c, r.status());
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    const SliceAxis& sa = (*r)[i];
    if (sa.whole) out.push_back(x[i]);
    else out.push_back(sa.count >= 0 ? Dim(sa.count) : Dim());
  }
  c.set_output(0, t, out);
  return {};
}

Status pad(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> pads = c.attr_ints("pads");
  if (c.has_input(1)) {
    auto p = const_ints(c, 1);
    if (!p) { c.set_output(0, t, Shape(x.size(), Dim())); return {}; }
    pads = *p;
  }
  std::vector<int64_t> axes;
  if (c.has_input(3)) {
    auto a = const_ints(c, 3);
    if (!a) { c.set_output(0, t, Shape(x.size(), Dim())); return {}; }
    auto n = normalize_axes(*a, rank);
    if (!n.ok()) return wrap(c, n.status());
    axes = *n;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    return c.error("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * axes.size()));
  Shape out = x;
  const size_t na = axes.size();
  for (size_t j = 0; j < na; ++j) {
    Dim& d = out[axes[j]];
    if (!d.known()) continue;
    d = Dim(d.value + pads[j] + pads[j + na]);
    if (d.value < 0) return c.error("pads make axis " + std::to_string(axes[j]) + " negative");
  }
  c.set_output(0, t, out);
  return {};
}

Status expand(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  auto target = const_ints(c, 1);
  if (!target) { c.set_output_unknown_shape(0, t); return {}; }
  auto b = broadcast_shapes(*c.shape(0), from_sizes(*target));
  if (!b.ok()) return c.error(b.status().message());
  c.set_output(0, t, *b);
  return {};
}

Status shape_of(InferContext& c) {
  if (!shapes_known(c, DType::I64)) {
    return {};
  }
  const auto rank = static_cast<int64_t>(c.shape(0)->size());
  int64_t start = c.attr_int("start"), end = c.has_attr("end") ? c.attr_int("end") : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  c.set_output(0, DType::I64, {std::max<int64_t>(0, end - start)});
  return {};
}

Status constant_of_shape(InferContext& c) {
  DType t = DType::F32;
  if (c.has_attr("value")) {
    const auto& v = std::get<Tensor>(c.node().attrs.at("value"));
    if (v.numel() != 1) return c.error("value must hold one element, holds " + std::to_string(v.numel()));
    t = v.dtype();
  }
  auto s = const_ints(c, 0);
  if (!s) {
    const Shape* in = c.shape(0);
    if (in && in->size() == 1 && (*in)[0].known()) c.set_output(0, t, Shape((*in)[0].value, Dim()));
    else c.set_output_unknown_shape(0, t);
    return {};
  }
  for (int64_t d : *s)
    if (d < 0) return c.error("negative dimension in shape");
  c.set_output(0, t, from_sizes(*s));
  return {};
}

Status range(InferContext& c) {
  const DType t = c.input(0).dtype;
  const Tensor *s = c.const_input(0), *l = c.const_input(1), *d = c.const_input(2);
  if (!s || !l || !d) {
    c.set_output(0, t, {Dim()});
    return {};
  }
  const double start = s->to_f32()[0], limit = l->to_f32()[0], delta = d->to_f32()[0];
  if (delta == 0) return c.error("delta is 0");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  c.set_output(0, t, {n});
  return {};
}

Status constant(InferContext& c) {
  auto it = c.node().attrs.find("value");
  if (it == c.node().attrs.end()) return c.error("Constant needs a 'value' tensor attribute");
  const Tensor& v = std::get<Tensor>(it->second);
  c.set_output(0, v.dtype(), make_shape(v.shape()));
  return {};
}

Status quantize_linear(InferContext& c) {
  const DType t = c.has_input(2) ? c.input(2).dtype : DType::U8;
  if (t != DType::U8 && t != DType::I8 && t != DType::I4)
    return c.error("zero point type " + std::string(dtype_name(t)) + " is not u8, i8 or i4");
  if (!shapes_known(c, t)) return {};
  c.set_output(0, t, *c.shape(0));
  return {};
}

Status dequantize_linear(InferContext& c) {
  const DType t = c.input(1).dtype;
  if (!shapes_known(c, t)) return {};
  c.set_output(0, t, *c.shape(0));
  return {};
}

namespace {
Status loss_output(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (is_float(c.input(1).dtype)) return c.error("target must be integers, is " + std::string(dtype_name(c.input(1).dtype)));
  const std::string red = c.attr_string("reduction");
  if (red != "mean" && red != "sum" && red != "none")
    return c.error("reduction must be 'mean', 'sum' or 'none', is '" + red + "'");
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &y = *c.shape(1);
  if (x.size() < 2) return c.error("input must have rank >= 2, has rank " + std::to_string(x.size()));
  if (y.size() + 1 != x.size())
    return c.error("target rank " + std::to_string(y.size()) + " must be input rank " + std::to_string(x.size()) + " - 1");
  c.set_output(0, t, red == "none" ? y : Shape{});
  return {};
}
}  // namespace

Status nll_loss(InferContext& c) { return loss_output(c); }

Status softmax_cross_entropy(InferContext& c) {
  HPF_RETURN_IF_ERROR(loss_output(c));
  if (c.num_outputs() > 1) {
    if (c.shape(0)) c.set_output(1, c.input(0).dtype, *c.shape(0));
    else c.set_output_unknown_shape(1, c.input(0).dtype);
  }
  return {};
}

namespace {
Status space_depth(InferContext& c, bool to_space) {
  const DType t = c.input(0).dtype;
  const int64_t b = c.attr_int("blocksize");
  if (b <= 0) return c.error("blocksize must be positive, is " + std::to_string(b));
  if (to_space) {
    const std::string mode = c.attr_string("mode");
    if (mode != "DCR" && mode != "CRD") return c.error("mode must be 'DCR' or 'CRD', is '" + mode + "'");
  }
  if (!shapes_known(c, t)) return {};
  std::vector<int64_t> x = sizes(*c.shape(0));
  if (x.size() != 4) return c.error("input must have rank 4, has rank " + std::to_string(x.size()));
  if (to_space) {
    if (x[1] >= 0 && x[1] % (b * b) != 0)
      return c.error("channels " + std::to_string(x[1]) + " are not a multiple of blocksize^2");
    if (x[1] >= 0) x[1] /= b * b;
    for (int k = 2; k < 4; ++k) if (x[k] >= 0) x[k] *= b;
  } else {
    for (int k = 2; k < 4; ++k) {
      if (x[k] >= 0 && x[k] % b != 0)
        return c.error("spatial size " + std::to_string(x[k]) + " is not a multiple of blocksize");
      if (x[k] >= 0) x[k] /= b;
    }
    if (x[1] >= 0) x[1] *= b * b;
  }
  c.set_output(0, t, from_sizes(x));
  return {};
}
}  // namespace

Status depth_to_space(InferContext& c) { return space_depth(c, true); }
Status space_to_depth(InferContext& c) { return space_depth(c, false); }

Status one_hot(InferContext& c) {
  const DType t = c.input(2).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& idx = *c.shape(0);
  const int64_t r = static_cast<int64_t>(idx.size());
  HPF_ASSIGN_OR_RETURN(int64_t axis, axis_of(c, c.attr_int("axis"), r + 1));
  Dim depth;
  if (const Tensor* d = c.const_input(1)) {
    auto v = d->to_f32();
    if (v.size() != 1) return c.error("depth must have one element");
    depth = Dim(static_cast<int64_t>(v[0]));
  }
  Shape out = idx;
  out.insert(out.begin() + axis, depth);
  c.set_output(0, t, out);
  return {};
}

}  // namespace hpf::ir::shape_fn
