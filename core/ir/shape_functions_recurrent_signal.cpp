// Shape functions: recurrent, integer/quantised linear algebra, sampling, signal, local normalisation.
#include "core/ir/shape_functions.hpp"

#include <algorithm>
#include <cmath>

#include "core/ir/op_geometry.hpp"
#include "core/ir/shape_fn_util.hpp"

namespace hpf::ir::shape_fn {
namespace {

// numpy matmul of shapes a and b (rank >= 1); error message without node context.
Expected<Shape> matmul_shape(Shape a, Shape b) {
  if (a.empty() || b.empty()) return Status::invalid("inputs must have rank >= 1");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), Dim(1));
  if (b1) b.push_back(Dim(1));
  const Dim &k1 = a.back(), &k2 = b[b.size() - 2];
  if (k1.known() && k2.known() && k1.value != k2.value)
    return Status::invalid("inner dimensions differ: " + to_string(a) + " x " + to_string(b));
  HPF_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)));
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  return out;
}

// Conv output shape for input x and weight w (attributes of the node); nullopt when a size it
// needs is unknown.
Expected<std::optional<Shape>> conv_shape(InferContext& c, const Shape& x, const Shape& w) {
  if (x.size() < 3) return c.error("input must be [N,C,spatial...], got " + to_string(x));
  if (w.size() != x.size()) return c.error("weight " + to_string(w) + " and input " + to_string(x) + " differ in rank");
  const int64_t group = c.attr_int("group");
  if (group < 1) return c.error("group must be >= 1");
  if (x[1].known() && w[1].known() && x[1].value != w[1].value * group)
    return c.error("input has " + std::to_string(x[1].value) + " channels, weight expects " +
                   std::to_string(w[1].value) + " x group " + std::to_string(group));
  std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  auto wsz = sizes(w);
  if (ks.empty()) ks.assign(wsz.begin() + 2, wsz.end());
  if (std::find(ks.begin(), ks.end(), -1) != ks.end()) return std::optional<Shape>();
  auto xs = sizes(x);
  auto g = window_geometry(std::span(xs).subspan(2), ks, c.attr_ints("strides"), c.attr_ints("dilations"),
                           c.attr_ints("pads"), c.attr_string("auto_pad"), false);
  if (!g.ok()) return wrap(c, g.status());
  Shape out{x[0], w[0]};
  for (int64_t o : g->out) out.push_back(o >= 0 ? Dim(o) : Dim());
  return std::optional<Shape>(out);
}

Status require_8bit(InferContext& c, size_t i, const char* what) {
  const DType t = c.input(i).dtype;
  if (t != DType::I8 && t != DType::U8)
    return c.error(std::string(what) + " must be int8 or uint8, is " + std::string(dtype_name(t)));
  return {};
}

// ONNX output_datatype code to a format; DOUBLE is held as F32 as everywhere in libhpf.
Expected<DType> float_output_type(InferContext& c) {
  const int64_t code = c.attr_int("output_datatype");
  auto t = dtype_from_onnx(code == 11 ? 1 : code);
  if (!t.ok()) return c.error(t.status().message());
  return *t;
}

// A constant integer scalar input, or nullopt.
std::optional<int64_t> const_scalar(InferContext& c, size_t i) {
  auto v = c.has_input(i) ? const_ints(c, i) : std::nullopt;
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

}  // namespace

Status recurrent(InferContext& c) {
  const DType t = c.input(0).dtype;
  const std::string op = c.node().op;
  const std::string dir = c.attr_string("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return c.error("direction must be forward, reverse or bidirectional, is '" + dir + "'");
  const int64_t layout = c.attr_int("layout");
  if (layout != 0 && layout != 1) return c.error("layout must be 0 or 1, is " + std::to_string(layout));
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &w = *c.shape(1);
  if (x.size() != 3) return c.error("X must have rank 3, has shape " + to_string(x));
  if (w.size() != 3) return c.error("W must have rank 3, has shape " + to_string(w));
  const int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (w[0].known() && w[0].value != dirs)
    return c.error("W " + to_string(w) + " has " + std::to_string(w[0].value) + " directions, direction '" + dir +
                   "' needs " + std::to_string(dirs));
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  Dim hidden;
  if (c.has_attr("hidden_size")) hidden = Dim(c.attr_int("hidden_size"));
  else if (w[1].known()) hidden = Dim(w[1].value / gates);
  if (hidden.known() && w[1].known() && w[1].value != gates * hidden.value)
    return c.error("W " + to_string(w) + " must have " + std::to_string(gates) + " x hidden_size rows");
  const Dim seq = layout == 0 ? x[0] : x[1], batch = layout == 0 ? x[1] : x[0];
  const Shape state = layout == 0 ? Shape{Dim(dirs), batch, hidden} : Shape{batch, Dim(dirs), hidden};
  if (c.num_outputs() > 0)
    c.set_output(0, t, layout == 0 ? Shape{seq, Dim(dirs), batch, hidden} : Shape{batch, seq, Dim(dirs), hidden});
  for (size_t o = 1; o < c.num_outputs(); ++o) c.set_output(o, t, state);
  return {};
}

Status matmul_integer(InferContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "A"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 1, "B"));
  if (!shapes_known(c, DType::I32)) return {};
  auto s = matmul_shape(*c.shape(0), *c.shape(1));
  if (!s.ok()) return c.error(s.status().message());
  c.set_output(0, DType::I32, *s);
  return {};
}

Status qlinear_matmul(InferContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "a"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 3, "b"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 7, "y_zero_point"));
  const DType t = c.input(7).dtype;
  if (!shapes_known(c, t)) return {};
  auto s = matmul_shape(*c.shape(0), *c.shape(3));
  if (!s.ok()) return c.error(s.status().message());
  c.set_output(0, t, *s);
  return {};
}

Status conv_integer(InferContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "x"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 1, "w"));
  if (!shapes_known(c, DType::I32)) return {};
  HPF_ASSIGN_OR_RETURN(auto s, conv_shape(c, *c.shape(0), *c.shape(1)));
  if (s) c.set_output(0, DType::I32, *s);
  else c.set_output_unknown_shape(0, DType::I32);
  return {};
}

Status qlinear_conv(InferContext& c) {
  HPF_RETURN_IF_ERROR(require_8bit(c, 0, "x"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 3, "w"));
  HPF_RETURN_IF_ERROR(require_8bit(c, 7, "y_zero_point"));
  const DType t = c.input(7).dtype;
  if (!shapes_known(c, t)) return {};
  HPF_ASSIGN_OR_RETURN(auto s, conv_shape(c, *c.shape(0), *c.shape(3)));
  if (s) c.set_output(0, t, *s);
  else c.set_output_unknown_shape(0, t);
  return {};
}

Status dynamic_quantize_linear(InferContext& c) {
  if (!is_float(c.input(0).dtype)) return c.error("input must be a float format, is " + std::string(dtype_name(c.input(0).dtype)));
  if (!c.shape(0)) c.set_output_unknown_shape(0, DType::U8);
  else c.set_output(0, DType::U8, *c.shape(0));
  c.set_output(1, DType::F32, {});
  c.set_output(2, DType::U8, {});
  return {};
}

Status grid_sample(InferContext& c) {
  const DType t = c.input(0).dtype;
  const std::string mode = c.attr_string("mode"), pad = c.attr_string("padding_mode");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic" && mode != "linear" && mode != "cubic")
    return c.error("mode must be bilinear, nearest or bicubic (linear, cubic), is '" + mode + "'");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return c.error("padding_mode must be zeros, border or reflection, is '" + pad + "'");
  if (!shapes_known(c, t)) return {};
  const Shape &x = *c.shape(0), &g = *c.shape(1);
  if (x.size() != 4) return c.error("X must be [N,C,H,W], has shape " + to_string(x));
  if (g.size() != 4 || (g[3].known() && g[3].value != 2))
    return c.error("grid must be [N,H_out,W_out,2], has shape " + to_string(g));
  c.set_output(0, t, {x[0], x[1], g[1], g[2]});
  return {};
}

Status instance_norm(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() < 2) return c.error("input must be [N,C,...], has shape " + to_string(x));
  for (size_t i = 1; i < 3; ++i) {
    const Shape& s = *c.shape(i);
    if (s.size() != 1 || (s[0].known() && x[1].known() && s[0].value != x[1].value))
      return c.error(std::string(i == 1 ? "scale" : "B") + " " + to_string(s) + " must be [C] for input " + to_string(x));
  }
  c.set_output(0, t, x);
  return {};
}

Status prelu(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  // The slope is unidirectionally broadcast to X: the result has X's shape.
  auto b = broadcast_shapes(*c.shape(0), *c.shape(1));
  if (!b.ok() || b->size() != c.shape(0)->size())
    return c.error("slope " + to_string(*c.shape(1)) + " does not broadcast to X " + to_string(*c.shape(0)));
  c.set_output(0, t, *c.shape(0));
  return {};
}

Status window(InferContext& c) {
  HPF_ASSIGN_OR_RETURN(DType t, float_output_type(c));
  if (is_float(c.input(0).dtype)) return c.error("size must be an integer scalar");
  if (auto n = const_scalar(c, 0)) {
    if (*n < 0) return c.error("size must be >= 0, is " + std::to_string(*n));
    c.set_output(0, t, {Dim(*n)});
  } else {
    c.set_output(0, t, {Dim()});
  }
  return {};
}

Status dft(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  Shape y = *c.shape(0);
  if (y.size() < 2) return c.error("input must have rank >= 2 ([..., 1 or 2]), has shape " + to_string(y));
  if (y.back().known() && y.back().value != 1 && y.back().value != 2)
    return c.error("the last dimension must be 1 (real) or 2 (complex), input is " + to_string(y));
  const int64_t r = static_cast<int64_t>(y.size());
  // Accepted axes: [0, r-2] and [-r, -2] (the last dimension holds real/imaginary parts).
  const int64_t axis = c.attr_int("axis");
  if (axis < -r || axis > r - 2 || axis == -1)
    return c.error("axis " + std::to_string(axis) + " is out of range for input " + to_string(y));
  const int64_t a = axis < 0 ? axis + r : axis;
  Dim len = y[a];
  if (c.has_input(1)) {
    auto n = const_scalar(c, 1);
    len = n ? Dim(*n) : Dim();
  }
  if (c.attr_int("onesided") != 0 && c.attr_int("inverse") != 0)
    return c.error("onesided and inverse cannot both be set");
  y[a] = c.attr_int("onesided") && len.known() ? Dim(len.value / 2 + 1) : c.attr_int("onesided") ? Dim() : len;
  y.back() = Dim(2);
  c.set_output(0, t, y);
  return {};
}

Status stft(InferContext& c) {
  const DType t = c.input(0).dtype;
  if (!shapes_known(c, t)) return {};
  const Shape& x = *c.shape(0);
  if (x.size() != 3) return c.error("signal must be [batch, length, 1 or 2], has shape " + to_string(x));
  auto step = const_scalar(c, 1);
  std::optional<int64_t> len;
  if (c.has_input(3)) len = const_scalar(c, 3);
  else if (c.has_input(2) && c.shape(2)->size() == 1 && (*c.shape(2))[0].known()) len = (*c.shape(2))[0].value;
  Dim frames, bins;
  if (step && len && x[1].known() && *step > 0 && *len > 0) frames = Dim((x[1].value - *len) / *step + 1);
  if (len) bins = c.attr_int("onesided") ? Dim(*len / 2 + 1) : Dim(*len);
  c.set_output(0, t, {x[0], frames, bins, Dim(2)});
  return {};
}

Status mel_weight_matrix(InferContext& c) {
  HPF_ASSIGN_OR_RETURN(DType t, float_output_type(c));
  auto bins = const_scalar(c, 0), len = const_scalar(c, 1);
  c.set_output(0, t, {len ? Dim(*len / 2 + 1) : Dim(), bins ? Dim(*bins) : Dim()});
  return {};
}

}  // namespace hpf::ir::shape_fn
