// Shape functions: selection with data-dependent sizes, scatter/gather, detection, text, Einsum, Det.
#include "core/ir/shape_functions.hpp"

#include <algorithm>
#include <cmath>

#include "core/ir/einsum_equation.hpp"
#include "core/ir/op_geometry.hpp"
#include "core/ir/shape_fn_util.hpp"

namespace hpf::ir::shape_fn {

namespace {
Status require_integer(InferContext& c, size_t i, const char* what) {
  if (c.has_input(i) && (is_float(c.input(i).dtype) || c.input(i).dtype == DType::BOOL))
    return c.error(std::string(what) + " must be integers, is " +
                   std::string(dtype_name(c.input(i).dtype)));
  return {};
}
}  // namespace

Status top_k(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "k"));
  if (!c.has_input(1) && !c.has_attr("k"))
    return c.error("k is missing (an input from opset 10, an attribute before)");
  const Shape* x = c.shape(0);
  if (!x) {
    c.set_output_unknown_shape(0, t);
    if (c.num_outputs() > 1) c.set_output_unknown_shape(1, DType::I64);
    return {};
  }
  HPF_ASSIGN_OR_RETURN(int64_t axis,
                       axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x->size())));
  Dim k;  // unknown unless k is an attribute or a constant input
  if (!c.has_input(1)) {
    k = Dim(c.attr_int("k"));
  } else if (auto kv = const_ints(c, 1)) {
    if (kv->size() != 1)
      return c.error("k must hold one value, holds " + std::to_string(kv->size()));
    k = Dim((*kv)[0]);
  }
  if (k.known() && (k.value < 0 || ((*x)[axis].known() && k.value > (*x)[axis].value)))
    return c.error("k " + std::to_string(k.value) + " is outside [0, " +
                   to_string({(*x)[axis]}).substr(1));
  Shape out = *x;
  out[axis] = k;
  c.set_output(0, t, out);
  if (c.num_outputs() > 1) c.set_output(1, DType::I64, out);
  return {};
}

Status unique(InferContext& c) {
  const DType t = c.input(0).dtype;
  const Shape* x = c.shape(0);
  Shape y{Dim()}, inverse{Dim()};
  if (x && c.has_attr("axis")) {
    HPF_ASSIGN_OR_RETURN(int64_t axis,
                         axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x->size())));
    y = *x;
    y[axis] = Dim();
    inverse = {(*x)[axis]};
  } else if (x) {
    auto n = concrete(*x);
    if (n) inverse = {Dim(numel(*n))};
  }
  if (x)
    c.set_output(0, t, y);
  else
    c.set_output_unknown_shape(0, t);
  for (size_t o = 1; o < c.num_outputs(); ++o) {
    if (!x)
      c.set_output_unknown_shape(o, DType::I64);
    else
      c.set_output(o, DType::I64, o == 2 ? inverse : Shape{Dim()});
  }
  return {};
}

Status compress(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (c.input(1).dtype != DType::BOOL)
    return c.error("condition must be bool, is " + std::string(dtype_name(c.input(1).dtype)));
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &cond = *c.shape(1);
  if (cond.size() != 1) return c.error("condition must be 1-D, has shape " + to_string(cond));
  Dim kept;
  if (const Tensor* ct = c.const_input(1)) {
    int64_t n = 0;
    for (int64_t v : ct->to_i64()) n += v != 0;
    kept = Dim(n);
  }
  if (!c.has_attr("axis")) {
    c.set_output(0, t, {kept});
    return {};
  }
  HPF_ASSIGN_OR_RETURN(int64_t axis,
                       axis_of(c, c.attr_int("axis"), static_cast<int64_t>(x.size())));
  Shape out = x;
  out[axis] = kept;
  c.set_output(0, t, out);
  return {};
}

Status non_zero(InferContext& c) {
  if (!c.shape(0)) {
    c.set_output_unknown_shape(0, DType::I64);
    return {};
  }
  c.set_output(0, DType::I64, {Dim(static_cast<int64_t>(c.shape(0)->size())), Dim()});
  return {};
}

namespace {
Status check_reduction(InferContext& c) {
  const std::string r = c.attr_string("reduction");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return c.error("reduction must be 'none', 'add', 'mul', 'max' or 'min', is '" + r + "'");
  return {};
}
}  // namespace

Status scatter_elements(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "indices"));
  HPF_RETURN_IF_ERROR(check_reduction(c));
  if (c.input(2).dtype != t)
    return c.error("updates are " + std::string(dtype_name(c.input(2).dtype)) + ", data " +
                   std::string(dtype_name(t)));
  if (!shapes_known(c, t)) return {};
  const Shape &d = *c.shape(0), &idx = *c.shape(1), &upd = *c.shape(2);
  if (idx.size() != d.size() || upd != idx)
    return c.error("indices " + to_string(idx) + " and updates " + to_string(upd) +
                   " must have one shape, of the rank of data " + to_string(d));
  HPF_RETURN_IF_ERROR(axis_of(c, c.attr_int("axis"), static_cast<int64_t>(d.size())).status());
  c.set_output(0, t, d);
  return {};
}

Status scatter_nd(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "indices"));
  HPF_RETURN_IF_ERROR(check_reduction(c));
  if (c.input(2).dtype != t)
    return c.error("updates are " + std::string(dtype_name(c.input(2).dtype)) + ", data " +
                   std::string(dtype_name(t)));
  if (!shapes_known(c, t)) return {};
  const Shape &d = *c.shape(0), &idx = *c.shape(1), &upd = *c.shape(2);
  if (idx.empty()) return c.error("indices must have rank >= 1");
  const Dim k = idx.back();
  if (k.known()) {
    if (k.value < 1 || k.value > static_cast<int64_t>(d.size()))
      return c.error("indices' last dimension " + std::to_string(k.value) +
                     " must be in [1, data rank " + std::to_string(d.size()) + "]");
    Shape want(idx.begin(), idx.end() - 1);
    want.insert(want.end(), d.begin() + k.value, d.end());
    bool ok = want.size() == upd.size();
    for (size_t i = 0; ok && i < want.size(); ++i)
      ok = !want[i].known() || !upd[i].known() || want[i].value == upd[i].value;
    if (!ok) return c.error("updates " + to_string(upd) + " must have shape " + to_string(want));
  }
  c.set_output(0, t, d);
  return {};
}

Status gather_nd(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "indices"));
  if (!shapes_known(c, t)) return {};
  const Shape &d = *c.shape(0), &idx = *c.shape(1);
  const int64_t b = c.attr_int("batch_dims"), r = static_cast<int64_t>(d.size()),
                q = static_cast<int64_t>(idx.size());
  if (q < 1 || r < 1) return c.error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    return c.error("batch_dims " + std::to_string(b) + " must be in [0, min(ranks))");
  if (!idx.back().known()) {
    c.set_output_unknown_shape(0, t);
    return {};
  }
  const int64_t k = idx.back().value;
  if (k < 1 || k > r - b)
    return c.error("indices' last dimension " + std::to_string(k) +
                   " must be in [1, data rank - batch_dims = " + std::to_string(r - b) + "]");
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), d.begin() + b + k, d.end());
  c.set_output(0, t, out);
  return {};
}

Status eye_like(InferContext& c) {
  DType t = c.input(0).dtype;
  if (c.has_attr("dtype")) {
    auto d = dtype_from_onnx(c.attr_int("dtype"));
    if (!d.ok()) return c.error(d.status().message());
    t = *d;
  }
  if (!shapes_known(c, t)) return {};
  if (c.shape(0)->size() != 2)
    return c.error("input must be 2-D, has shape " + to_string(*c.shape(0)));
  c.set_output(0, t, *c.shape(0));
  return {};
}

Status reverse_sequence(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "sequence_lens"));
  const int64_t ba = c.attr_int("batch_axis"), ta = c.attr_int("time_axis");
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    return c.error("batch_axis and time_axis must be 0 and 1 in some order, are " +
                   std::to_string(ba) + " and " + std::to_string(ta));
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &lens = *c.shape(1);
  if (x.size() < 2) return c.error("input must have rank >= 2, has shape " + to_string(x));
  if (lens.size() != 1 || (lens[0].known() && x[ba].known() && lens[0].value != x[ba].value))
    return c.error("sequence_lens " + to_string(lens) +
                   " must be 1-D with one length per batch entry of " + to_string(x));
  c.set_output(0, t, x);
  return {};
}

Status bit_shift(InferContext& c) {
  const std::string dir = c.attr_string("direction");
  if (dir != "LEFT" && dir != "RIGHT")
    return c.error("direction must be 'LEFT' or 'RIGHT', is '" + dir + "'");
  for (size_t i = 0; i < 2; ++i)
    if (c.input(i).dtype != DType::U8)
      return c.error("inputs must be unsigned integers (libhpf has u8), input " +
                     std::to_string(i) + " is " + std::string(dtype_name(c.input(i).dtype)));
  return broadcast(c);
}

Status max_unpool(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 1, "indices"));
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() < 3) return c.error("input must be [N,C,spatial...], got " + to_string(x));
  if (c.has_input(2)) {
    auto os = const_ints(c, 2);
    c.set_output(0, t, os ? from_sizes(*os) : Shape(x.size(), Dim()));
    return {};
  }
  const size_t n = x.size() - 2;
  const auto ks = c.attr_ints("kernel_shape"), st = c.attr_ints("strides"),
             pads = c.attr_ints("pads");
  if (ks.size() != n || (!st.empty() && st.size() != n) || (!pads.empty() && pads.size() != 2 * n))
    return c.error("kernel_shape, strides and pads must match the " + std::to_string(n) +
                   " spatial dimensions");
  Shape out{x[0], x[1]};
  for (size_t k = 0; k < n; ++k) {
    const int64_t stride = st.empty() ? 1 : st[k];
    const int64_t pad = pads.empty() ? 0 : pads[k] + pads[k + n];
    out.push_back(x[k + 2].known() ? Dim((x[k + 2].value - 1) * stride + ks[k] - pad) : Dim());
  }
  c.set_output(0, t, out);
  return {};
}

Status roi_align(InferContext& c) {
  const DType t = c.input(0).dtype;
  HPF_RETURN_IF_ERROR(require_integer(c, 2, "batch_indices"));
  const std::string mode = c.attr_string("mode"),
                    ctm = c.attr_string("coordinate_transformation_mode");
  if (mode != "avg" && mode != "max")
    return c.error("mode must be 'avg' or 'max', is '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return c.error(
        "coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', is '" + ctm +
        "'");
  const int64_t oh = c.attr_int("output_height"), ow = c.attr_int("output_width");
  if (oh < 1 || ow < 1) return c.error("output_height and output_width must be positive");
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &rois = *c.shape(1), &bi = *c.shape(2);
  if (x.size() != 4) return c.error("X must be [N,C,H,W], got " + to_string(x));
  if (rois.size() != 2 || (rois[1].known() && rois[1].value != 4))
    return c.error("rois must be [num_rois, 4], got " + to_string(rois));
  if (bi.size() != 1) return c.error("batch_indices must be 1-D, got " + to_string(bi));
  c.set_output(0, t, {rois[0].known() ? rois[0] : bi[0], x[1], Dim(oh), Dim(ow)});
  return {};
}

Status non_max_suppression(InferContext& c) {
  if (c.shape(0) &&
      (c.shape(0)->size() != 3 || ((*c.shape(0))[2].known() && (*c.shape(0))[2].value != 4)))
    return c.error("boxes must be [batches, boxes, 4], got " + to_string(*c.shape(0)));
  if (c.shape(1) && c.shape(1)->size() != 3)
    return c.error("scores must be [batches, classes, boxes], got " + to_string(*c.shape(1)));
  HPF_RETURN_IF_ERROR(require_integer(c, 2, "max_output_boxes_per_class"));
  c.set_output(0, DType::I64, {Dim(), Dim(3)});
  return {};
}

Status tfidf_vectorizer(InferContext& c) {
  const DType xt = c.input(0).dtype;
  if (is_float(xt) || xt == DType::BOOL)
    return c.error("X must be integers (string inputs are not supported), is " +
                   std::string(dtype_name(xt)));
  const auto idx = c.attr_ints("ngram_indexes");
  int64_t width = 0;
  for (int64_t v : idx) {
    if (v < 0) return c.error("ngram_indexes must be non-negative");
    width = std::max(width, v + 1);
  }
  if (!shapes_known(c, DType::F32)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() == 1)
    c.set_output(0, DType::F32, {Dim(width)});
  else if (x.size() == 2)
    c.set_output(0, DType::F32, {x[0], Dim(width)});
  else
    return c.error("X must be [C] or [N, C], got " + to_string(x));
  return {};
}

Status einsum(InferContext& c) {
  const DType t = c.input(0).dtype;
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.input(i).dtype != t)
      return c.error("input " + std::to_string(i) + " is " +
                     std::string(dtype_name(c.input(i).dtype)) + ", input 0 is " +
                     std::string(dtype_name(t)));
  if (!shapes_known(c, t)) return {};
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    ranks.push_back(static_cast<int64_t>(c.shape(i)->size()));
    shapes.push_back(sizes(*c.shape(i)));
  }
  auto eq = parse_einsum(c.attr_string("equation"), ranks);
  if (!eq.ok()) return wrap(c, eq.status());
  auto label = einsum_label_sizes(*eq, shapes);
  if (!label.ok()) return wrap(c, label.status());
  // Unknown sizes keep a symbol when an operand names one for that label.
  std::vector<Dim> symbol(eq->num_labels);
  for (size_t i = 0; i < c.num_inputs(); ++i)
    for (size_t d = 0; d < eq->inputs[i].size(); ++d) {
      const Dim& dim = (*c.shape(i))[d];
      if (!dim.known() && !dim.symbol.empty()) symbol[eq->inputs[i][d]] = dim;
    }
  Shape out;
  for (int l : eq->output) out.push_back((*label)[l] >= 0 ? Dim((*label)[l]) : symbol[l]);
  c.set_output(0, t, out);
  return {};
}

Status det(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!is_float(t))
    return c.error("input must be floating point, is " + std::string(dtype_name(t)));
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  const size_t r = x.size();
  if (r < 2 || (x[r - 1].known() && x[r - 2].known() && x[r - 1].value != x[r - 2].value))
    return c.error("input must be [..., M, M], got " + to_string(x));
  c.set_output(0, t, Shape(x.begin(), x.end() - 2));
  return {};
}

}  // namespace hpf::ir::shape_fn
