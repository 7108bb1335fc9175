// Control flow: If, Loop and Scan run their subgraphs with the reference interpreter (ground
// truth, whatever emulation the enclosing run has). A node's last num_captures inputs are the
// enclosing values its subgraph uses; they become the subgraph's last inputs.
#include <algorithm>
#include <optional>

#include "core/ref/kernel.hpp"
#include "hpf/reference.hpp"

namespace hpf::ref {
namespace {

size_t num_captures(const KernelContext& c) {
  const int64_t k = c.attr_int("num_captures");
  return k > 0 && static_cast<size_t>(k) <= c.num_inputs() ? static_cast<size_t>(k) : 0;
}

// Inputs of the node before its captures.
size_t own_inputs(const KernelContext& c) { return c.num_inputs() - num_captures(c); }

std::vector<Buf> captures(const KernelContext& c) {
  std::vector<Buf> caps;
  for (size_t k = own_inputs(c); k < c.num_inputs(); ++k) caps.push_back(c.in(k));
  return caps;
}

// A float buffer handed over in another float format than the receiver declares (a plan stored
// it in BF16, say) takes the declared format.
void relabel(Buf& b, DType want) {
  if (b.dtype == want || !b.is_float() || !is_float(want)) return;
  b.dtype = want;
  for (float& x : b.f) x = round_to(want, x);
}

Buf scalar(DType t, int64_t v) {
  Buf b = Buf::ints({}, t);
  b.i[0] = v;
  return b;
}

Expected<bool> truth(const KernelContext& c, const Buf& b, const std::string& what) {
  if (b.numel() != 1)
    return c.error(what + " must hold one value, has shape " + shape_string(b.shape));
  return b.get(0) != 0;
}

// Runs `g` on `inputs`; errors keep their code (an op the subgraph uses may be unsupported) and
// name the node and the subgraph.
Expected<std::vector<Buf>> run_subgraph(const KernelContext& c, const std::string& attr,
                                        const Graph& g, std::vector<Buf> inputs) {
  if (inputs.size() != g.inputs().size())
    return c.error("subgraph '" + attr + "' takes " + std::to_string(g.inputs().size()) +
                   " inputs, got " + std::to_string(inputs.size()));
  for (size_t k = 0; k < inputs.size(); ++k) relabel(inputs[k], g.value(g.inputs()[k]).dtype);
  auto out = run_bufs(g, std::move(inputs), RunOptions{});
  if (!out.ok())
    return out.status().with_context("node '" + c.node().name + "' (" + c.node().op +
                                     "): subgraph '" + attr + "'");
  return out;
}

// The slab at `index` along `axis` (the axis removed).
Buf take(const Buf& b, size_t axis, int64_t index) {
  std::vector<int64_t> shape = b.shape;
  const int64_t len = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= b.shape[k];
  for (size_t k = axis + 1; k < b.shape.size(); ++k) inner *= b.shape[k];
  Buf out = b.is_float() ? Buf::floats(shape, b.dtype) : Buf::ints(shape, b.dtype);
  auto copy = [&](auto& dst, const auto& src) {
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(src.begin() + (o * len + index) * inner, inner, dst.begin() + o * inner);
  };
  if (b.is_float())
    copy(out.f, b.f);
  else
    copy(out.i, b.i);
  return out;
}

// Stacks equally shaped slabs along a new `axis`. `empty_shape`: the result when there are none.
Expected<Buf> stack(const KernelContext& c, const std::vector<Buf>& parts, int64_t axis,
                    const std::string& what, const std::vector<int64_t>& empty_shape,
                    DType empty_dtype) {
  if (parts.empty()) {
    Buf b = is_float(empty_dtype) ? Buf::floats(empty_shape, empty_dtype)
                                  : Buf::ints(empty_shape, empty_dtype);
    return b;
  }
  const Buf& first = parts[0];
  auto a = ir::normalize_axis(axis, first.rank() + 1);
  if (!a)
    return c.error(what + ": axis " + std::to_string(axis) + " is out of range for rank " +
                   std::to_string(first.rank() + 1));
  for (size_t t = 1; t < parts.size(); ++t)
    if (parts[t].shape != first.shape || parts[t].dtype != first.dtype)
      return c.error(what + " is " + std::string(dtype_name(first.dtype)) +
                     shape_string(first.shape) + " in iteration 0 but " +
                     std::string(dtype_name(parts[t].dtype)) + shape_string(parts[t].shape) +
                     " in iteration " + std::to_string(t));
  std::vector<int64_t> shape = first.shape;
  const auto n = static_cast<int64_t>(parts.size());
  shape.insert(shape.begin() + *a, n);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *a; ++k) outer *= first.shape[k];
  for (size_t k = static_cast<size_t>(*a); k < first.shape.size(); ++k) inner *= first.shape[k];
  Buf out = first.is_float() ? Buf::floats(shape, first.dtype) : Buf::ints(shape, first.dtype);
  for (int64_t t = 0; t < n; ++t) {
    auto copy = [&](auto& dst, const auto& src) {
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(src.begin() + o * inner, inner, dst.begin() + (o * n + t) * inner);
    };
    if (first.is_float())
      copy(out.f, parts[t].f);
    else
      copy(out.i, parts[t].i);
  }
  return out;
}

// Shape of a scan output that no iteration produced: the body's output shape (unknown dims as 0)
// with a 0 at `axis`.
std::vector<int64_t> empty_scan_shape(const Value& body_out, int64_t axis) {
  std::vector<int64_t> shape;
  if (body_out.has_shape)
    for (const Dim& d : body_out.shape) shape.push_back(d.known() ? d.value : 0);
  auto a = ir::normalize_axis(axis, static_cast<int64_t>(shape.size()) + 1);
  shape.insert(shape.begin() + (a ? *a : 0), 0);
  return shape;
}

Status if_kernel(KernelContext& c) {
  if (own_inputs(c) != 1) return c.error("If takes one input (cond) besides its captures");
  HPF_ASSIGN_OR_RETURN(bool take_then, truth(c, c.in(0), "cond"));
  const std::string attr = take_then ? "then_branch" : "else_branch";
  const Graph* g = c.attr_graph(attr);
  if (!g) return c.error(attr + " is not a graph");
  HPF_ASSIGN_OR_RETURN(auto outs, run_subgraph(c, attr, *g, captures(c)));
  if (outs.size() != c.out.size())
    return c.error(attr + " gives " + std::to_string(outs.size()) + " outputs, the node has " +
                   std::to_string(c.out.size()));
  c.out = std::move(outs);
  return {};
}

// for (i = 0; i < M && cond; ++i) { cond, carried..., scan... = body(i, cond, carried...,
// captures...) } An absent M is no limit; an absent cond is true and the body's cond output is then
// ignored.
Status loop_kernel(KernelContext& c) {
  const Graph* body = c.attr_graph("body");
  if (!body) return c.error("body is not a graph");
  const size_t own = own_inputs(c);
  if (own < 2)
    return c.error("Loop takes M and cond (either may be absent) before its loop-carried values");
  const size_t n = own - 2;
  if (c.out.size() < n)
    return c.error(std::to_string(n) + " loop-carried values but " + std::to_string(c.out.size()) +
                   " outputs");
  const size_t k = c.out.size() - n;
  std::optional<int64_t> max_trips;
  if (c.has(0)) {
    if (c.in(0).numel() != 1)
      return c.error("M must hold one value, has shape " + shape_string(c.in(0).shape));
    max_trips = c.in(0).as_ints()[0];
  }
  bool cond = true;
  if (c.has(1)) {
    HPF_ASSIGN_OR_RETURN(cond, truth(c, c.in(1), "cond"));
  }
  std::vector<Buf> carried;
  for (size_t j = 0; j < n; ++j) {
    if (!c.has(2 + j)) return c.error("loop-carried input " + std::to_string(j) + " is missing");
    carried.push_back(c.in(2 + j));
  }
  const std::vector<Buf> caps = captures(c);
  std::vector<std::vector<Buf>> scans(k);
  for (int64_t it = 0; (!max_trips || it < *max_trips) && cond; ++it) {
    std::vector<Buf> ins = {scalar(DType::I64, it), scalar(DType::BOOL, 1)};
    for (Buf& b : carried) ins.push_back(std::move(b));
    ins.insert(ins.end(), caps.begin(), caps.end());
    HPF_ASSIGN_OR_RETURN(auto outs, run_subgraph(c, "body", *body, std::move(ins)));
    if (outs.size() != 1 + n + k)
      return c.error("body gives " + std::to_string(outs.size()) + " outputs, expected 1 + " +
                     std::to_string(n) + " + " + std::to_string(k));
    if (c.has(1)) {
      HPF_ASSIGN_OR_RETURN(cond, truth(c, outs[0], "the body's cond output"));
    }
    carried.assign(std::make_move_iterator(outs.begin() + 1),
                   std::make_move_iterator(outs.begin() + 1 + n));
    for (size_t j = 0; j < k; ++j) scans[j].push_back(std::move(outs[1 + n + j]));
  }
  for (size_t j = 0; j < n; ++j) {
    relabel(carried[j], c.in(2 + j).dtype);
    c.out[j] = std::move(carried[j]);
  }
  for (size_t j = 0; j < k; ++j) {
    const Value& v = body->value(body->outputs()[1 + n + j]);
    HPF_ASSIGN_OR_RETURN(c.out[n + j], stack(c, scans[j], 0, "scan output " + std::to_string(j),
                                             empty_scan_shape(v, 0), v.dtype));
  }
  return {};
}

struct ScanPlan {
  size_t n = 0, m = 0, k = 0;  // states, scan inputs, scan outputs
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

// One scan (no batch dimension): states and scan inputs in, final states and scan outputs out.
Expected<std::vector<Buf>> scan_once(const KernelContext& c, const Graph& body, const ScanPlan& p,
                                     std::vector<Buf> states, const std::vector<const Buf*>& xs,
                                     const std::vector<Buf>& caps) {
  std::vector<size_t> axis(p.m);
  int64_t len = -1;
  for (size_t j = 0; j < p.m; ++j) {
    auto a = ir::normalize_axis(p.in_axes[j], xs[j]->rank());
    if (!a)
      return c.error("scan_input_axes[" + std::to_string(j) +
                     "] = " + std::to_string(p.in_axes[j]) +
                     " is out of range for scan input of shape " + shape_string(xs[j]->shape));
    axis[j] = static_cast<size_t>(*a);
    const int64_t l = xs[j]->shape[axis[j]];
    if (len >= 0 && l != len)
      return c.error("scan inputs differ in length: " + std::to_string(len) + " and " +
                     std::to_string(l));
    len = l;
  }
  std::vector<std::vector<Buf>> parts(p.k);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Buf> ins = std::move(states);
    for (size_t j = 0; j < p.m; ++j)
      ins.push_back(take(*xs[j], axis[j], p.in_dirs[j] ? len - 1 - t : t));
    ins.insert(ins.end(), caps.begin(), caps.end());
    HPF_ASSIGN_OR_RETURN(auto outs, run_subgraph(c, "body", body, std::move(ins)));
    if (outs.size() != p.n + p.k)
      return c.error("body gives " + std::to_string(outs.size()) + " outputs, expected " +
                     std::to_string(p.n + p.k));
    states.assign(std::make_move_iterator(outs.begin()),
                  std::make_move_iterator(outs.begin() + p.n));
    for (size_t j = 0; j < p.k; ++j) parts[j].push_back(std::move(outs[p.n + j]));
  }
  std::vector<Buf> result = std::move(states);
  for (size_t j = 0; j < p.k; ++j) {
    if (p.out_dirs[j]) std::reverse(parts[j].begin(), parts[j].end());
    const Value& v = body.value(body.outputs()[p.n + j]);
    HPF_ASSIGN_OR_RETURN(Buf s,
                         stack(c, parts[j], p.out_axes[j], "scan output " + std::to_string(j),
                               empty_scan_shape(v, p.out_axes[j]), v.dtype));
    result.push_back(std::move(s));
  }
  return result;
}

// Per-input attribute list of `count` entries (absent: zeros).
Expected<std::vector<int64_t>> per_input(const KernelContext& c, const std::string& name,
                                         size_t count) {
  auto v = c.attr_ints(name);
  if (v.empty()) v.assign(count, 0);
  if (v.size() != count)
    return c.error(name + " has " + std::to_string(v.size()) + " entries, expected " +
                   std::to_string(count));
  return v;
}

Status scan_kernel(KernelContext& c) {
  const Graph* body = c.attr_graph("body");
  if (!body) return c.error("body is not a graph");
  const size_t own = own_inputs(c);
  const int64_t m = c.attr_int("num_scan_inputs");
  if (m < 1 || static_cast<size_t>(m) > own)
    return c.error("num_scan_inputs is " + std::to_string(m) + " with " + std::to_string(own) +
                   " inputs");
  ScanPlan p;
  p.m = static_cast<size_t>(m);
  p.n = own - p.m;
  if (c.out.size() < p.n)
    return c.error(std::to_string(p.n) + " states but " + std::to_string(c.out.size()) +
                   " outputs");
  p.k = c.out.size() - p.n;
  HPF_ASSIGN_OR_RETURN(p.in_axes, per_input(c, "scan_input_axes", p.m));
  HPF_ASSIGN_OR_RETURN(p.in_dirs, per_input(c, "scan_input_directions", p.m));
  HPF_ASSIGN_OR_RETURN(p.out_axes, per_input(c, "scan_output_axes", p.k));
  HPF_ASSIGN_OR_RETURN(p.out_dirs, per_input(c, "scan_output_directions", p.k));
  const std::vector<Buf> caps = captures(c);

  if (!c.attr_int("scan_batched")) {
    std::vector<Buf> states;
    std::vector<const Buf*> xs;
    for (size_t j = 0; j < p.n; ++j) states.push_back(c.in(j));
    for (size_t j = 0; j < p.m; ++j) xs.push_back(&c.in(p.n + j));
    HPF_ASSIGN_OR_RETURN(auto outs, scan_once(c, *body, p, std::move(states), xs, caps));
    for (size_t j = 0; j < p.n; ++j) relabel(outs[j], c.in(j).dtype);
    c.out = std::move(outs);
    return {};
  }
  // Opset 8: axis 0 of every input is a batch; each batch entry is scanned on its own.
  const int64_t batch = own ? (c.in(0).rank() ? c.in(0).shape[0] : -1) : -1;
  for (size_t j = 0; j < own; ++j)
    if (c.in(j).rank() < 1 || c.in(j).shape[0] != batch)
      return c.error("input " + std::to_string(j) + " of shape " + shape_string(c.in(j).shape) +
                     " lacks the batch dimension " + std::to_string(batch) +
                     " the other inputs have");
  std::vector<std::vector<Buf>> per_output(p.n + p.k);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Buf> states, xs_owned;
    for (size_t j = 0; j < p.n; ++j) states.push_back(take(c.in(j), 0, b));
    for (size_t j = 0; j < p.m; ++j) xs_owned.push_back(take(c.in(p.n + j), 0, b));
    std::vector<const Buf*> xs;
    for (const Buf& x : xs_owned) xs.push_back(&x);
    HPF_ASSIGN_OR_RETURN(auto outs, scan_once(c, *body, p, std::move(states), xs, caps));
    for (size_t j = 0; j < outs.size(); ++j) per_output[j].push_back(std::move(outs[j]));
  }
  for (size_t j = 0; j < p.n + p.k; ++j) {
    const Value& v = body->value(body->outputs()[j]);
    HPF_ASSIGN_OR_RETURN(c.out[j],
                         stack(c, per_output[j], 0, "output " + std::to_string(j), {0}, v.dtype));
    if (j < p.n) relabel(c.out[j], c.in(j).dtype);
  }
  return {};
}

}  // namespace

void add_control_kernels(KernelTable& t) {
  t["If"] = if_kernel;
  t["Loop"] = loop_kernel;
  t["Scan"] = scan_kernel;
}

}  // namespace hpf::ref
