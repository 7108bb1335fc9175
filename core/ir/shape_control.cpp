// Shape functions of the control-flow ops (If, Loop, Scan). Each specialises a copy of the
// subgraph to what the node gives it (dtypes, shapes, constant captures), infers the copy's
// shapes and reads its outputs; the subgraph attached to the node is never changed.
#include <algorithm>
#include <variant>

#include "core/ir/shape_functions.hpp"

namespace hpf::ir::shape_fn {
namespace {

// What is known about one value crossing the subgraph boundary.
struct Fact {
  DType dtype = DType::F32;
  Shape shape;
  bool has_shape = false;
  const Tensor* constant = nullptr;  // only for captures: loop-carried values change

  bool same_type(const Fact& o) const {
    return dtype == o.dtype && has_shape == o.has_shape && shape == o.shape;
  }
};

std::string type_name(DType t) { return std::string(dtype_name(t)); }

Fact fact_of(const Value& v) { return {v.dtype, v.shape, v.has_shape, nullptr}; }

Fact input_fact(const InferContext& c, size_t i) {
  Fact f = fact_of(c.input(i));
  f.constant = c.const_input(i);
  return f;
}

const Graph* subgraph(const InferContext& c, const std::string& name) {
  auto it = c.node().attrs.find(name);
  if (it == c.node().attrs.end()) return nullptr;
  const GraphAttr* g = std::get_if<GraphAttr>(&it->second);
  return g ? g->get() : nullptr;
}

// Float formats are interchangeable at the boundary (a plan may store a captured value in BF16;
// the kernel hands the subgraph its declared format); other formats must match exactly.
bool compatible(DType a, DType b) { return a == b || (is_float(a) && is_float(b)); }

// Output facts of `body` when its inputs are `in`.
Expected<std::vector<Fact>> run_body(const InferContext& c, const std::string& attr,
                                     const Graph& body, const std::vector<Fact>& in) {
  if (in.size() != body.inputs().size())
    return c.error("subgraph '" + attr + "' takes " + std::to_string(body.inputs().size()) +
                   " inputs, the node gives " + std::to_string(in.size()));
  Graph g = body;  // initializers and nested subgraphs are shared, not copied
  for (size_t k = 0; k < in.size(); ++k) {
    const ValueId id = g.inputs()[k];
    Value& v = g.value(id);
    if (!compatible(v.dtype, in[k].dtype))
      return c.error("subgraph '" + attr + "' input '" + v.name + "' is " + type_name(v.dtype) +
                     ", the node gives " + type_name(in[k].dtype));
    v.shape = in[k].shape;
    v.has_shape = in[k].has_shape;
    if (in[k].constant && in[k].constant->dtype() == v.dtype) g.set_constant(id, *in[k].constant);
  }
  Status s = g.infer_shapes();
  if (!s.ok())
    return s.with_context("node '" + c.node().name + "' (" + c.node().op + "): subgraph '" + attr +
                          "'");
  std::vector<Fact> out;
  for (ValueId o : g.outputs()) out.push_back(fact_of(g.value(o)));
  return out;
}

// The type a value has whichever of `a` and `b` it is: dims that disagree become unknown.
Fact merge(const Fact& a, const Fact& b) {
  Fact m{a.dtype, {}, false, nullptr};
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return m;
  m.has_shape = true;
  for (size_t k = 0; k < a.shape.size(); ++k)
    m.shape.push_back(a.shape[k] == b.shape[k] ? a.shape[k] : Dim());
  return m;
}

// Loop-carried values (Loop, Scan states): body inputs [first_in, first_in + n) come back as body
// outputs [first_out, first_out + n). Widens the carried types until one more trip through the
// body changes nothing, so they hold for every iteration. Returns the body's outputs; `in` ends
// with the carried types.
Expected<std::vector<Fact>> carried_fixpoint(const InferContext& c, const Graph& body,
                                             std::vector<Fact>& in, size_t first_in,
                                             size_t first_out, size_t n) {
  for (int round = 0;; ++round) {
    HPF_ASSIGN_OR_RETURN(auto out, run_body(c, "body", body, in));
    if (out.size() < first_out + n)
      return c.error("body has " + std::to_string(out.size()) + " outputs, expected at least " +
                     std::to_string(first_out + n));
    bool changed = false;
    for (size_t j = 0; j < n; ++j) {
      Fact& carried = in[first_in + j];
      const Fact& next = out[first_out + j];
      if (!compatible(carried.dtype, next.dtype))
        return c.error("loop-carried value " + std::to_string(j) + " enters the body as " +
                       type_name(carried.dtype) + " and leaves it as " + type_name(next.dtype));
      Fact m = merge(carried, next);
      // Shape functions only lose information as inputs do, so this ends; the bound is a guard.
      if (round >= 8) m = Fact{m.dtype, {}, false, nullptr};
      if (!m.same_type(carried)) {
        carried = m;
        changed = true;
      }
    }
    if (!changed) return out;
  }
}

size_t num_captures(const InferContext& c) {
  const int64_t k = c.attr_int("num_captures");
  return k > 0 && static_cast<size_t>(k) <= c.num_inputs() ? static_cast<size_t>(k) : 0;
}

std::vector<Fact> capture_facts(const InferContext& c) {
  std::vector<Fact> f;
  for (size_t i = c.num_inputs() - num_captures(c); i < c.num_inputs(); ++i)
    f.push_back(input_fact(c, i));
  return f;
}

void set_output(InferContext& c, size_t i, const Fact& f) {
  if (f.has_shape)
    c.set_output(i, f.dtype, f.shape);
  else
    c.set_output_unknown_shape(i, f.dtype);
}

// `shape` with `dim` inserted at `axis`.
Shape with_dim(Shape shape, size_t axis, Dim dim) {
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(std::min(axis, shape.size())), dim);
  return shape;
}

// Whether the body passes its cond input straight to its cond output (a for loop written with a
// cond that never changes).
bool cond_passes_through(const Graph& body) {
  if (body.inputs().size() < 2 || body.outputs().empty()) return false;
  const ValueId in = body.inputs()[1], out = body.outputs()[0];
  if (in == out) return true;
  const int32_t p = body.value(out).producer;
  return p >= 0 && body.node(p).op == "Identity" && body.node(p).inputs.size() == 1 &&
         body.node(p).inputs[0] == in;
}

// Number of Loop iterations when it follows from constants, else an unknown dim.
Dim loop_trip_count(const InferContext& c, const Graph& body) {
  const Tensor* m = c.const_input(0);
  if (!m || m->numel() != 1) return Dim();
  const int64_t trips = std::max<int64_t>(m->to_i64()[0], 0);
  if (!c.has_input(1)) return Dim(trips);
  const Tensor* cond = c.const_input(1);
  if (cond && cond->numel() == 1 && cond->to_i64()[0] != 0 && cond_passes_through(body))
    return Dim(trips);
  return Dim();
}

}  // namespace

Status if_(InferContext& c) {
  const Graph* then_g = subgraph(c, "then_branch");
  const Graph* else_g = subgraph(c, "else_branch");
  if (!then_g || !else_g) return c.error("then_branch and else_branch must both be graphs");
  if (c.num_inputs() - num_captures(c) != 1)
    return c.error("If takes one input (cond) besides its captures");
  const auto caps = capture_facts(c);
  HPF_ASSIGN_OR_RETURN(auto then_out, run_body(c, "then_branch", *then_g, caps));
  HPF_ASSIGN_OR_RETURN(auto else_out, run_body(c, "else_branch", *else_g, caps));
  if (then_out.size() != c.num_outputs() || else_out.size() != c.num_outputs())
    return c.error("the branches give " + std::to_string(then_out.size()) + " and " +
                   std::to_string(else_out.size()) + " outputs, the node has " +
                   std::to_string(c.num_outputs()));
  // A constant cond picks its branch; otherwise the output is whatever both branches agree on.
  const Tensor* cond = c.const_input(0);
  const bool known = cond && cond->numel() == 1;
  const bool take_then = known && cond->to_i64()[0] != 0;
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    if (then_out[i].dtype != else_out[i].dtype)
      return c.error("output " + std::to_string(i) + " is " + type_name(then_out[i].dtype) +
                     " in then_branch and " + type_name(else_out[i].dtype) + " in else_branch");
    set_output(c, i,
               known ? (take_then ? then_out[i] : else_out[i]) : merge(then_out[i], else_out[i]));
  }
  return {};
}

Status loop(InferContext& c) {
  const Graph* body = subgraph(c, "body");
  if (!body) return c.error("body must be a graph");
  const size_t own = c.num_inputs() - num_captures(c);
  if (own < 2)
    return c.error("Loop takes M and cond (either may be absent) before its loop-carried values");
  const size_t n = own - 2;
  if (c.has_input(0) && c.input(0).dtype != DType::I64) return c.error("M must be INT64");
  if (c.has_input(1) && c.input(1).dtype != DType::BOOL) return c.error("cond must be BOOL");
  std::vector<Fact> in = {{DType::I64, {}, true, nullptr}, {DType::BOOL, {}, true, nullptr}};
  for (size_t j = 0; j < n; ++j) {
    if (!c.has_input(2 + j))
      return c.error("loop-carried input " + std::to_string(j) + " is missing");
    in.push_back(fact_of(c.input(2 + j)));
  }
  for (const Fact& f : capture_facts(c)) in.push_back(f);
  HPF_ASSIGN_OR_RETURN(auto out, carried_fixpoint(c, *body, in, 2, 1, n));
  if (out[0].dtype != DType::BOOL) return c.error("the body's first output (cond) must be BOOL");
  const size_t k = out.size() - 1 - n;
  if (c.num_outputs() != n + k)
    return c.error("the body gives " + std::to_string(n) + " loop-carried values and " +
                   std::to_string(k) + " scan outputs, the node has " +
                   std::to_string(c.num_outputs()) + " outputs");
  for (size_t j = 0; j < n; ++j) set_output(c, j, in[2 + j]);
  const Dim trips = loop_trip_count(c, *body);
  for (size_t j = 0; j < k; ++j) {
    Fact f = out[1 + n + j];
    if (f.has_shape) f.shape = with_dim(f.shape, 0, trips);
    set_output(c, n + j, f);
  }
  return {};
}

Status scan(InferContext& c) {
  const Graph* body = subgraph(c, "body");
  if (!body) return c.error("body must be a graph");
  const size_t own = c.num_inputs() - num_captures(c);
  const int64_t m = c.attr_int("num_scan_inputs");
  if (m < 1 || static_cast<size_t>(m) > own)
    return c.error("num_scan_inputs is " + std::to_string(m) + " with " + std::to_string(own) +
                   " inputs");
  const size_t n = own - static_cast<size_t>(m);
  const bool batched = c.attr_int("scan_batched") != 0;
  auto in_axes = c.attr_ints("scan_input_axes");
  if (!in_axes.empty() && in_axes.size() != static_cast<size_t>(m))
    return c.error("scan_input_axes has " + std::to_string(in_axes.size()) + " entries for " +
                   std::to_string(m) + " scan inputs");
  in_axes.resize(static_cast<size_t>(m), 0);

  std::vector<Fact> in;
  Dim batch;
  // Opset 8: every input has a leading batch dimension the body does not see.
  auto strip_batch = [&](Fact f) {
    if (batched && f.has_shape && !f.shape.empty()) {
      if (!batch.known()) batch = f.shape[0];
      f.shape.erase(f.shape.begin());
    }
    return f;
  };
  for (size_t j = 0; j < n; ++j) in.push_back(strip_batch(fact_of(c.input(j))));
  Dim length;
  for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
    Fact f = strip_batch(fact_of(c.input(n + j)));
    if (f.has_shape) {
      auto axis = normalize_axis(in_axes[j], static_cast<int64_t>(f.shape.size()));
      if (!axis)
        return c.error("scan_input_axes[" + std::to_string(j) +
                       "] = " + std::to_string(in_axes[j]) + " is out of range for rank " +
                       std::to_string(f.shape.size()));
      if (!length.known()) length = f.shape[*axis];
      f.shape.erase(f.shape.begin() + *axis);
    }
    in.push_back(f);
  }
  for (const Fact& f : capture_facts(c)) in.push_back(f);
  HPF_ASSIGN_OR_RETURN(auto out, carried_fixpoint(c, *body, in, 0, 0, n));
  const size_t k = out.size() - n;
  if (c.num_outputs() != n + k)
    return c.error("the body gives " + std::to_string(n) + " states and " + std::to_string(k) +
                   " scan outputs, the node has " + std::to_string(c.num_outputs()) + " outputs");
  auto out_axes = c.attr_ints("scan_output_axes");
  out_axes.resize(k, 0);
  auto add_batch = [&](Fact f) {
    if (batched && f.has_shape) f.shape = with_dim(f.shape, 0, batch);
    return f;
  };
  for (size_t j = 0; j < n; ++j) set_output(c, j, add_batch(in[j]));
  for (size_t j = 0; j < k; ++j) {
    Fact f = out[n + j];
    if (f.has_shape) {
      auto axis = normalize_axis(out_axes[j], static_cast<int64_t>(f.shape.size()) + 1);
      if (!axis)
        return c.error("scan_output_axes[" + std::to_string(j) +
                       "] = " + std::to_string(out_axes[j]) + " is out of range for rank " +
                       std::to_string(f.shape.size() + 1));
      f.shape = with_dim(f.shape, static_cast<size_t>(*axis), length);
    }
    set_output(c, n + j, add_batch(f));
  }
  return {};
}

}  // namespace hpf::ir::shape_fn
