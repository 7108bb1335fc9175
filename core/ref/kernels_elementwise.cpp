// Elementwise ops: unary maths and activations, broadcasting binary ops, comparisons, logical
// And/Or/Xor, BitShift, Mod, IsNaN/IsInf, Where, Not, Cast, CastLike, Clip, Shrink, Celu, PRelu,
// Pow, Dropout (inference, or training with ratio 0).
// Maths is done in double and rounded once to FP32.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

using UnaryFn = double (*)(double, const KernelContext&);
using IntUnaryFn = int64_t (*)(int64_t);

// `int_fn` (exact int64) handles integer tensors; ops without one reject them.
Kernel unary(UnaryFn fn, IntUnaryFn int_fn = nullptr) {
  return [fn, int_fn](KernelContext& c) -> Status {
    const Buf& x = c.in(0);
    Buf y = Buf::like(x);
    if (x.is_float()) {
      for (size_t k = 0; k < x.f.size(); ++k) y.f[k] = static_cast<float>(fn(x.f[k], c));
    } else {
      if (!int_fn) return c.unsupported("integer input (" + std::string(dtype_name(x.dtype)) + ")");
      for (size_t k = 0; k < x.i.size(); ++k) y.i[k] = int_fn(x.i[k]);
    }
    c.out[0] = std::move(y);
    return {};
  };
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Applies `op` over the broadcast of all inputs (left fold for variadic Max/Min).
template <typename FloatOp, typename IntOp>
Status broadcast_fold(KernelContext& c, FloatOp fop, IntOp iop) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < c.num_inputs(); ++k) shapes.push_back(c.in(k).shape);
  auto out_shape = broadcast(shapes);
  if (!out_shape.ok()) return c.error(out_shape.status().message());
  const Buf& a0 = c.in(0);
  Buf y = a0.is_float() ? Buf::floats(*out_shape, a0.dtype) : Buf::ints(*out_shape, a0.dtype);
  const int64_t n = y.numel();
  BroadcastIndexer i0(a0.shape, *out_shape);
  for (int64_t k = 0; k < n; ++k) {
    if (y.is_float()) y.f[k] = a0.f[i0(k)];
    else y.i[k] = a0.i[i0(k)];
  }
  for (size_t in = 1; in < c.num_inputs(); ++in) {
    const Buf& b = c.in(in);
    if (b.is_float() != y.is_float())
      return c.error("input " + std::to_string(in) + " is " + std::string(dtype_name(b.dtype)) +
                     ", input 0 is " + std::string(dtype_name(a0.dtype)));
    BroadcastIndexer ib(b.shape, *out_shape);
    if (y.is_float()) {
      for (int64_t k = 0; k < n; ++k) y.f[k] = static_cast<float>(fop(double(y.f[k]), double(b.f[ib(k)])));
    } else {
      for (int64_t k = 0; k < n; ++k) {
        auto r = iop(y.i[k], b.i[ib(k)]);
        if (!r) return c.error("integer division by zero");
        y.i[k] = *r;
      }
    }
  }
  c.out[0] = std::move(y);
  return {};
}

// Integer tensors use exact int64 arithmetic (wrapping, as two's-complement hardware does),
// never a trip through double.
template <typename F, typename I>
Kernel binary(F f, I i) {
  return [f, i](KernelContext& c) {
    return broadcast_fold(c, f, [i](int64_t a, int64_t b) -> std::optional<int64_t> { return i(a, b); });
  };
}
int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) * uint64_t(b)); }

Status div_kernel(KernelContext& c) {
  return broadcast_fold(
      c, [](double a, double b) { return a / b; },
      [](int64_t a, int64_t b) -> std::optional<int64_t> {
        if (b == 0) return std::nullopt;
        return a / b;  // truncation, as numpy/ONNX for integer tensors
      });
}

// Comparisons produce BOOL over the broadcast shape.
template <typename Cmp>
Kernel compare(Cmp cmp) {
  return [cmp](KernelContext& c) -> Status {
    const Buf &a = c.in(0), &b = c.in(1);
    std::vector<std::vector<int64_t>> shapes{a.shape, b.shape};
    auto out_shape = broadcast(shapes);
    if (!out_shape.ok()) return c.error(out_shape.status().message());
    Buf y = Buf::ints(*out_shape, DType::BOOL);
    BroadcastIndexer ia(a.shape, *out_shape), ib(b.shape, *out_shape);
    for (int64_t k = 0; k < y.numel(); ++k) {
      if (a.is_float() || b.is_float()) y.i[k] = cmp(a.get(ia(k)), b.get(ib(k)));
      else y.i[k] = cmp(a.i[ia(k)], b.i[ib(k)]);
    }
    c.out[0] = std::move(y);
    return {};
  };
}

// BitShift on unsigned integers (u8 is the only one libhpf has): shifting by the width or more
// gives 0, as numpy does.
Status bit_shift_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &b = c.in(1);
  if (a.dtype != DType::U8 || b.dtype != DType::U8)
    return c.error("inputs must be unsigned integers (libhpf has u8), are " +
                   std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
  const std::string dir = c.attr_string("direction");
  if (dir != "LEFT" && dir != "RIGHT")
    return c.error("direction must be 'LEFT' or 'RIGHT', is '" + dir + "'");
  std::vector<std::vector<int64_t>> shapes{a.shape, b.shape};
  auto out_shape = broadcast(shapes);
  if (!out_shape.ok()) return c.error(out_shape.status().message());
  Buf y = Buf::ints(*out_shape, DType::U8);
  BroadcastIndexer ia(a.shape, *out_shape), ib(b.shape, *out_shape);
  for (int64_t k = 0; k < y.numel(); ++k) {
    const int64_t v = a.i[ia(k)], s = b.i[ib(k)];
    y.i[k] = s >= 8 ? 0 : dir == "LEFT" ? (v << s) & 0xFF : v >> s;
  }
  c.out[0] = std::move(y);
  return {};
}

Status where_kernel(KernelContext& c) {
  const Buf &cond = c.in(0), &a = c.in(1), &b = c.in(2);
  std::vector<std::vector<int64_t>> shapes{cond.shape, a.shape, b.shape};
  auto out_shape = broadcast(shapes);
  if (!out_shape.ok()) return c.error(out_shape.status().message());
  Buf y = a.is_float() ? Buf::floats(*out_shape, a.dtype) : Buf::ints(*out_shape, a.dtype);
  BroadcastIndexer ic(cond.shape, *out_shape), ia(a.shape, *out_shape), ib(b.shape, *out_shape);
  for (int64_t k = 0; k < y.numel(); ++k) {
    const bool t = cond.i[ic(k)] != 0;
    if (y.is_float()) y.f[k] = t ? a.f[ia(k)] : b.f[ib(k)];
    else y.i[k] = t ? a.i[ia(k)] : b.i[ib(k)];
  }
  c.out[0] = std::move(y);
  return {};
}

Status not_kernel(KernelContext& c) {
  Buf y = Buf::like(c.in(0));
  for (size_t k = 0; k < y.i.size(); ++k) y.i[k] = c.in(0).i[k] == 0;
  c.out[0] = std::move(y);
  return {};
}

int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
    case DType::I8: return static_cast<int8_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::I4: return ((v & 0xF) ^ 8) - 8;
    case DType::BOOL: return v != 0;
    default: return v;
  }
}

Status cast_to(KernelContext& c, const DType* to) {
  const Buf& x = c.in(0);
  const Overflow mode = c.attr_int("saturate") ? Overflow::saturate : Overflow::propagate;
  Buf y = is_float(*to) ? Buf::floats(x.shape, *to) : Buf::ints(x.shape, *to);
  const int64_t n = x.numel();
  for (int64_t k = 0; k < n; ++k) {
    if (is_float(*to)) {
      // int64 -> float is one correctly rounded conversion (through double would round twice).
      const float v = x.is_float() ? x.f[k] : static_cast<float>(x.i[k]);
      y.f[k] = *to == DType::F32 ? v : round_to(*to, v, mode);
    } else if (*to == DType::BOOL) {
      y.i[k] = x.get(k) != 0;
    } else if (x.is_float()) {
      // Float to integer truncates toward zero (C/numpy); out-of-range values saturate.
      const double v = std::trunc(double(x.f[k]));
      if (std::isnan(v)) {
        y.i[k] = 0;
      } else if (*to == DType::I64) {
        y.i[k] = v >= 9.2233720368547758e18 ? std::numeric_limits<int64_t>::max()
                 : v <= -9.2233720368547758e18 ? std::numeric_limits<int64_t>::min()
                                               : static_cast<int64_t>(v);
      } else if (*to == DType::I32) {
        y.i[k] = static_cast<int64_t>(std::clamp(v, double(INT32_MIN), double(INT32_MAX)));
      } else {
        y.i[k] = static_cast<int64_t>(std::clamp(v, double(qmin(*to)), double(qmax(*to))));
      }
    } else {
      y.i[k] = wrap_int(x.i[k], *to);  // integer to integer wraps around, as numpy's astype
    }
  }
  c.out[0] = std::move(y);
  return {};
}

Status cast_kernel(KernelContext& c) {
  auto to = ir::dtype_from_onnx(c.attr_int("to"));
  if (!to.ok()) return c.error(to.status().message());
  return cast_to(c, &*to);
}

// CastLike: Cast to input 1's format.
Status cast_like_kernel(KernelContext& c) {
  const DType to = c.in(1).dtype;
  return cast_to(c, &to);
}

Status clip_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (c.has_attr("min")) lo = c.attr_float("min");
  if (c.has_attr("max")) hi = c.attr_float("max");
  for (size_t k = 1; k < 3; ++k) {
    if (!c.has(k)) continue;
    if (c.in(k).numel() != 1) return c.error("input " + std::to_string(k) + " must be a scalar");
    (k == 1 ? lo : hi) = c.in(k).get(0);
  }
  Buf y = Buf::like(x);
  for (int64_t k = 0; k < x.numel(); ++k) {
    if (x.is_float()) {
      const float v = x.f[k];
      y.f[k] = std::isnan(v) ? v : static_cast<float>(std::min(std::max(double(v), lo), hi));
    } else {
      y.i[k] = static_cast<int64_t>(std::min(std::max(double(x.i[k]), lo), hi));
    }
  }
  c.out[0] = std::move(y);
  return {};
}

// Logical And/Or/Xor over BOOL inputs, broadcast.
template <typename Op>
Kernel logical(Op op) {
  return [op](KernelContext& c) -> Status {
    if (c.in(0).dtype != DType::BOOL || c.in(1).dtype != DType::BOOL) return c.error("inputs must be bool");
    return compare([op](auto a, auto b) { return op(a != 0, b != 0); })(c);
  };
}

// Mod: fmod=0 takes the sign of the divisor (Python's %), fmod=1 that of the dividend (C fmod).
Status mod_kernel(KernelContext& c) {
  const bool c_fmod = c.attr_int("fmod") != 0;
  if (c_fmod) {
    return broadcast_fold(
        c, [](double a, double b) { return std::fmod(a, b); },
        [](int64_t a, int64_t b) -> std::optional<int64_t> {
          if (b == 0) return std::nullopt;
          if (b == -1) return 0;  // INT64_MIN % -1 overflows in C++
          return a % b;
        });
  }
  return broadcast_fold(
      c,
      [](double a, double b) {
        double r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      },
      [](int64_t a, int64_t b) -> std::optional<int64_t> {
        if (b == 0) return std::nullopt;
        if (b == -1) return 0;
        int64_t r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      });
}

// IsNaN / IsInf: BOOL of the input's shape; integer inputs are never NaN or infinite.
template <typename Pred>
Kernel classify(Pred pred) {
  return [pred](KernelContext& c) -> Status {
    const Buf& x = c.in(0);
    Buf y = Buf::ints(x.shape, DType::BOOL);
    if (x.is_float())
      for (size_t k = 0; k < x.f.size(); ++k) y.i[k] = pred(x.f[k], c);
    c.out[0] = std::move(y);
    return {};
  };
}

Status dropout_kernel(KernelContext& c) {
  // Training mode keeps each element with probability 1 - ratio and scales it by 1/(1 - ratio):
  // the identity for ratio 0, a random mask otherwise, which a reference cannot reproduce.
  if (c.has(2) && c.in(2).numel() == 1 && c.in(2).get(0) != 0) {
    const double ratio = c.has(1) ? c.in(1).get(0) : double(c.attr_float("ratio"));
    if (ratio != 0)
      return c.unsupported("training_mode=true with ratio " + std::to_string(ratio) +
                           " draws a random mask (only ratio 0 is deterministic)");
  }
  const Buf& x = c.in(0);
  c.out[0] = x;
  if (c.out.size() > 1) {
    Buf m = Buf::ints(x.shape, DType::BOOL);
    std::fill(m.i.begin(), m.i.end(), 1);
    c.out[1] = std::move(m);
  }
  return {};
}

double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

// ---- Shrink, Celu, PRelu, Pow ----

// A float unary op whose parameters are read once: make(c) returns the per-element function.
template <typename Make>
Kernel unary_with(Make make) {
  return [make](KernelContext& c) -> Status {
    const Buf& x = c.in(0);
    if (!x.is_float()) return c.unsupported("integer input (" + std::string(dtype_name(x.dtype)) + ")");
    auto fn = make(c);
    Buf y = Buf::like(x);
    for (size_t k = 0; k < x.f.size(); ++k) y.f[k] = static_cast<float>(fn(double(x.f[k])));
    c.out[0] = std::move(y);
    return {};
  };
}

// PRelu: x where x >= 0, slope * x elsewhere; the slope broadcasts to X's shape.
Status prelu_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &slope = c.in(1);
  if (!x.is_float() || !slope.is_float()) return c.unsupported("integer X or slope");
  std::vector<std::vector<int64_t>> shapes{x.shape, slope.shape};
  auto b = broadcast(shapes);
  if (!b.ok() || *b != x.shape)
    return c.error("slope " + shape_string(slope.shape) + " does not broadcast to X " + shape_string(x.shape));
  BroadcastIndexer is(slope.shape, x.shape);
  Buf y = Buf::like(x);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const double v = x.f[k];
    y.f[k] = static_cast<float>(v < 0 ? double(slope.f[is(k)]) * v : v);
  }
  c.out[0] = std::move(y);
  return {};
}

// Exact integer power with wrap-around; negative exponents truncate 1/a^-b toward zero.
int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 == 0 ? 1 : -1) : 0;
  uint64_t r = 1, base = static_cast<uint64_t>(a);
  for (; b > 0; b >>= 1, base *= base)
    if (b & 1) r *= base;
  return static_cast<int64_t>(r);
}

// Pow: the result has the base's type. An integer base with a float exponent is computed in
// double and truncated toward zero, as numpy's power(...).astype(base dtype).
Status pow_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &e = c.in(1);
  std::vector<std::vector<int64_t>> shapes{a.shape, e.shape};
  auto out_shape = broadcast(shapes);
  if (!out_shape.ok()) return c.error(out_shape.status().message());
  Buf y = a.is_float() ? Buf::floats(*out_shape, a.dtype) : Buf::ints(*out_shape, a.dtype);
  BroadcastIndexer ia(a.shape, *out_shape), ie(e.shape, *out_shape);
  for (int64_t k = 0; k < y.numel(); ++k) {
    if (a.is_float()) {
      y.f[k] = static_cast<float>(std::pow(double(a.f[ia(k)]), e.get(ie(k))));
    } else if (e.is_float()) {
      const double v = std::trunc(std::pow(double(a.i[ia(k)]), double(e.f[ie(k)])));
      if (!std::isfinite(v) || std::abs(v) >= 9.2e18)
        return c.error("integer power " + std::to_string(a.i[ia(k)]) + "^" + std::to_string(e.f[ie(k)]) +
                       " is not a finite int64");
      y.i[k] = wrap_int(static_cast<int64_t>(v), a.dtype);
    } else {
      y.i[k] = wrap_int(int_pow(a.i[ia(k)], e.i[ie(k)]), a.dtype);
    }
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_elementwise_kernels(KernelTable& t) {
  t["Identity"] = unary([](double x, const KernelContext&) { return x; }, [](int64_t x) { return x; });
  t["Neg"] = unary([](double x, const KernelContext&) { return -x; },
                   [](int64_t x) { return static_cast<int64_t>(0 - uint64_t(x)); });
  t["Abs"] = unary([](double x, const KernelContext&) { return std::abs(x); },
                   [](int64_t x) { return x < 0 ? static_cast<int64_t>(0 - uint64_t(x)) : x; });
  t["Sqrt"] = unary([](double x, const KernelContext&) { return std::sqrt(x); });
  t["Exp"] = unary([](double x, const KernelContext&) { return std::exp(x); });
  t["Log"] = unary([](double x, const KernelContext&) { return std::log(x); });
  t["Erf"] = unary([](double x, const KernelContext&) { return std::erf(x); });
  t["Tanh"] = unary([](double x, const KernelContext&) { return std::tanh(x); });
  t["Sigmoid"] = unary([](double x, const KernelContext&) { return sigmoid(x); });
  t["Relu"] = unary([](double x, const KernelContext&) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); },
                    [](int64_t x) { return x > 0 ? x : int64_t{0}; });
  t["LeakyRelu"] = unary([](double x, const KernelContext& c) { return x >= 0 ? x : x * c.attr_float("alpha"); });
  t["HardSigmoid"] = unary([](double x, const KernelContext& c) {
    if (std::isnan(x)) return x;
    return std::max(0.0, std::min(1.0, double(c.attr_float("alpha")) * x + c.attr_float("beta")));
  });
  t["HardSwish"] = unary([](double x, const KernelContext&) {
    return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  });
  t["Gelu"] = [](KernelContext& c) -> Status {
    const std::string approx = c.attr_string("approximate");
    if (approx != "none" && approx != "tanh")
      return c.error("approximate must be 'none' or 'tanh', is '" + approx + "'");
    return unary(approx == "tanh" ? +[](double x, const KernelContext&) {
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    } : +[](double x, const KernelContext&) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); })(c);
  };
  t["Add"] = binary([](double a, double b) { return a + b; }, wrap_add);
  t["Sub"] = binary([](double a, double b) { return a - b; }, wrap_sub);
  t["Mul"] = binary([](double a, double b) { return a * b; }, wrap_mul);
  t["Div"] = div_kernel;
  t["Pow"] = pow_kernel;
  // NaN propagates through Max/Min, as in ONNX Runtime.
  t["Max"] = binary([](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); },
                    [](int64_t a, int64_t b) { return std::max(a, b); });
  t["Min"] = binary([](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); },
                    [](int64_t a, int64_t b) { return std::min(a, b); });
  t["Sum"] = binary([](double a, double b) { return a + b; }, wrap_add);
  t["Mean"] = [](KernelContext& c) -> Status {
    if (!c.in(0).is_float()) return c.unsupported("integer inputs");
    HPF_RETURN_IF_ERROR(broadcast_fold(c, [](double a, double b) { return a + b; },
                                       [](int64_t a, int64_t) -> std::optional<int64_t> { return a; }));
    const double n = static_cast<double>(c.num_inputs());
    for (float& v : c.out[0].f) v = static_cast<float>(double(v) / n);
    return {};
  };
  t["Equal"] = compare([](auto a, auto b) { return a == b; });
  t["Less"] = compare([](auto a, auto b) { return a < b; });
  t["Greater"] = compare([](auto a, auto b) { return a > b; });
  t["GreaterOrEqual"] = compare([](auto a, auto b) { return a >= b; });
  t["LessOrEqual"] = compare([](auto a, auto b) { return a <= b; });
  t["BitShift"] = bit_shift_kernel;
  t["Where"] = where_kernel;
  t["Not"] = not_kernel;
  t["Cast"] = cast_kernel;
  t["CastLike"] = cast_like_kernel;
  t["Tan"] = unary([](double x, const KernelContext&) { return std::tan(x); });
  t["Asin"] = unary([](double x, const KernelContext&) { return std::asin(x); });
  t["Acos"] = unary([](double x, const KernelContext&) { return std::acos(x); });
  t["Atan"] = unary([](double x, const KernelContext&) { return std::atan(x); });
  t["Sinh"] = unary([](double x, const KernelContext&) { return std::sinh(x); });
  t["Cosh"] = unary([](double x, const KernelContext&) { return std::cosh(x); });
  t["Asinh"] = unary([](double x, const KernelContext&) { return std::asinh(x); });
  t["Acosh"] = unary([](double x, const KernelContext&) { return std::acosh(x); });
  t["Atanh"] = unary([](double x, const KernelContext&) { return std::atanh(x); });
  t["Clip"] = clip_kernel;
  t["Sin"] = unary([](double x, const KernelContext&) { return std::sin(x); });
  t["Cos"] = unary([](double x, const KernelContext&) { return std::cos(x); });
  t["Ceil"] = unary([](double x, const KernelContext&) { return std::ceil(x); });
  t["Floor"] = unary([](double x, const KernelContext&) { return std::floor(x); });
  // Halves round to even (the default rounding mode).
  t["Round"] = unary([](double x, const KernelContext&) { return std::nearbyint(x); });
  t["Reciprocal"] = unary([](double x, const KernelContext&) { return 1.0 / x; });
  t["Sign"] = unary([](double x, const KernelContext&) { return x > 0 ? 1.0 : x < 0 ? -1.0 : std::isnan(x) ? x : 0.0; },
                    [](int64_t x) { return int64_t{x > 0} - int64_t{x < 0}; });
  t["Softplus"] = unary([](double x, const KernelContext&) { return std::isnan(x) ? x : softplus(x); });
  t["Softsign"] = unary([](double x, const KernelContext&) { return x / (1.0 + std::abs(x)); });
  t["Mish"] = unary([](double x, const KernelContext&) { return std::isnan(x) ? x : x * std::tanh(softplus(x)); });
  t["Elu"] = unary([](double x, const KernelContext& c) {
    return x < 0 ? double(c.attr_float("alpha")) * std::expm1(x) : x;
  });
  t["Selu"] = unary([](double x, const KernelContext& c) {
    const double alpha = c.attr_float("alpha"), gamma = c.attr_float("gamma");
    return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
  });
  t["ThresholdedRelu"] = unary([](double x, const KernelContext& c) {
    return x > double(c.attr_float("alpha")) ? x : (std::isnan(x) ? x : 0.0);
  });
  t["IsNaN"] = classify([](float x, const KernelContext&) { return std::isnan(x); });
  t["IsInf"] = classify([](float x, const KernelContext& c) {
    return std::isinf(x) && (x > 0 ? c.attr_int("detect_positive") != 0 : c.attr_int("detect_negative") != 0);
  });
  t["And"] = logical([](bool a, bool b) { return a && b; });
  t["Or"] = logical([](bool a, bool b) { return a || b; });
  t["Xor"] = logical([](bool a, bool b) { return a != b; });
  t["Mod"] = mod_kernel;
  t["Dropout"] = dropout_kernel;
  t["Shrink"] = unary_with([](const KernelContext& c) {
    const double lambd = c.attr_float("lambd"), bias = c.attr_float("bias");
    return [=](double x) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0; };
  });
  t["Celu"] = unary_with([](const KernelContext& c) {
    const double alpha = c.attr_float("alpha");
    return [=](double x) { return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)); };
  });
  t["PRelu"] = prelu_kernel;
}

}  // namespace hpf::ref
