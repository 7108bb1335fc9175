// Selection ops whose output size depends on the data: TopK, Unique, Compress, NonZero.
// Values are moved, never converted; orderings put NaN above every number (as numpy sorts) and
// break ties by the lower index.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

void copy_elem(const Buf& s, int64_t si, Buf& d, int64_t di) {
  if (s.is_float())
    d.f[di] = s.f[si];
  else
    d.i[di] = s.i[si];
}

Buf empty_like(const Buf& x, std::vector<int64_t> shape) {
  return x.is_float() ? Buf::floats(std::move(shape), x.dtype)
                      : Buf::ints(std::move(shape), x.dtype);
}

// Three-way comparison of elements a and b of x: NaN above every number, NaN equal to NaN.
int compare_elems(const Buf& x, int64_t a, int64_t b) {
  if (!x.is_float()) return x.i[a] < x.i[b] ? -1 : x.i[a] > x.i[b] ? 1 : 0;
  const float va = x.f[a], vb = x.f[b];
  const bool na = std::isnan(va), nb = std::isnan(vb);
  if (na || nb) return na == nb ? 0 : na ? 1 : -1;
  return va < vb ? -1 : va > vb ? 1 : 0;
}

// [outer, axis, inner] sizes of a shape around `axis`.
struct Split3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
Split3 split_at(const std::vector<int64_t>& shape, int64_t axis) {
  Split3 s;
  for (int64_t k = 0; k < axis; ++k) s.outer *= shape[k];
  s.mid = shape[axis];
  for (size_t k = axis + 1; k < shape.size(); ++k) s.inner *= shape[k];
  return s;
}

Status top_k_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis)
    return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " +
                   std::to_string(x.rank()));
  int64_t k = 0;
  if (c.has(1)) {
    const auto kv = c.in(1).as_ints();
    if (kv.size() != 1) return c.error("k must hold one value, holds " + std::to_string(kv.size()));
    k = kv[0];
  } else if (c.has_attr("k")) {
    k = c.attr_int("k");
  } else {
    return c.error("k is missing (an input from opset 10, an attribute before)");
  }
  const Split3 s = split_at(x.shape, *axis);
  if (k < 0 || k > s.mid)
    return c.error("k " + std::to_string(k) + " is outside [0, " + std::to_string(s.mid) +
                   "] (axis " + std::to_string(*axis) + " of " + shape_string(x.shape) + ")");
  const bool largest = c.attr_int("largest") != 0;
  std::vector<int64_t> shape = x.shape;
  shape[*axis] = k;
  Buf values = empty_like(x, shape), indices = Buf::ints(shape);
  std::vector<int64_t> order(s.mid);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t j) { return (o * s.mid + j) * s.inner + in; };
      std::iota(order.begin(), order.end(), 0);
      // A total order (index breaks ties), so the unstable partial sort is deterministic.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
        const int cmp = compare_elems(x, at(a), at(b));
        return cmp != 0 ? (largest ? cmp > 0 : cmp < 0) : a < b;
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * s.inner + in;
        copy_elem(x, at(order[j]), values, dst);
        indices.i[dst] = order[j];
      }
    }
  c.out[0] = std::move(values);
  if (c.out.size() > 1) c.out[1] = std::move(indices);
  return {};
}

// Unique over slices along an axis (or over elements when there is no axis). Slices compare
// lexicographically over their elements in row-major order, as numpy.unique(axis=...) does.
Status unique_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  Split3 s{1, x.numel(), 1};
  int64_t axis = -1;
  if (c.has_attr("axis")) {
    auto a = ir::normalize_axis(c.attr_int("axis"), x.rank());
    if (!a)
      return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " +
                     std::to_string(x.rank()));
    axis = *a;
    s = split_at(x.shape, axis);
  }
  const int64_t n = s.mid, slice = s.outer * s.inner;
  auto elem = [&](int64_t j, int64_t p) { return (p / s.inner * n + j) * s.inner + p % s.inner; };
  auto cmp_slices = [&](int64_t a, int64_t b) {
    for (int64_t p = 0; p < slice; ++p)
      if (int r = compare_elems(x, elem(a, p), elem(b, p))) return r;
    return 0;
  };
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return cmp_slices(a, b) < 0; });
  // Groups of equal slices in sorted order; a group's first member is its first occurrence.
  std::vector<int64_t> first, count, group_of(n);
  for (int64_t r = 0; r < n; ++r) {
    if (r == 0 || cmp_slices(order[r - 1], order[r]) != 0) {
      first.push_back(order[r]);
      count.push_back(0);
    }
    group_of[order[r]] = static_cast<int64_t>(first.size()) - 1;
    ++count.back();
  }
  const auto u = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank(u);  // output position of each group
  std::iota(rank.begin(), rank.end(), 0);
  if (c.attr_int("sorted") == 0) {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t r = 0; r < u; ++r) rank[by_first[r]] = r;
  }
  std::vector<int64_t> shape{u};
  if (axis >= 0) {
    shape = x.shape;
    shape[axis] = u;
  }
  Buf y = empty_like(x, shape), indices = Buf::ints({u}), inverse = Buf::ints({n}),
      counts = Buf::ints({u});
  for (int64_t g = 0; g < u; ++g) {
    const int64_t r = rank[g];
    for (int64_t p = 0; p < slice; ++p)
      copy_elem(x, elem(first[g], p), y, (p / s.inner * u + r) * s.inner + p % s.inner);
    indices.i[r] = first[g];
    counts.i[r] = count[g];
  }
  for (int64_t j = 0; j < n; ++j) inverse.i[j] = rank[group_of[j]];
  Buf* outs[] = {&y, &indices, &inverse, &counts};
  for (size_t o = 0; o < c.out.size(); ++o) c.out[o] = std::move(*outs[o]);
  return {};
}

// Compress: the slices along axis (or elements of the flattened input) whose condition is true.
// A condition shorter than the axis selects from its length only; a longer one may only be
// false beyond the axis.
Status compress_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &cond = c.in(1);
  if (cond.rank() != 1)
    return c.error("condition must be 1-D, has shape " + shape_string(cond.shape));
  Split3 s{1, x.numel(), 1};
  int64_t axis = -1;
  if (c.has_attr("axis")) {
    auto a = ir::normalize_axis(c.attr_int("axis"), x.rank());
    if (!a)
      return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " +
                     std::to_string(x.rank()));
    axis = *a;
    s = split_at(x.shape, axis);
  }
  std::vector<int64_t> kept;
  for (int64_t j = 0; j < cond.numel(); ++j) {
    if (cond.i[j] == 0) continue;
    if (j >= s.mid)
      return c.error("condition is true at " + std::to_string(j) + ", beyond the " +
                     std::to_string(s.mid) + " entries selected from");
    kept.push_back(j);
  }
  const auto m = static_cast<int64_t>(kept.size());
  std::vector<int64_t> shape{m};
  if (axis >= 0) {
    shape = x.shape;
    shape[axis] = m;
  }
  Buf y = empty_like(x, shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t in = 0; in < s.inner; ++in)
        copy_elem(x, (o * s.mid + kept[j]) * s.inner + in, y, (o * m + j) * s.inner + in);
  c.out[0] = std::move(y);
  return {};
}

// NonZero: [rank, count] coordinates of the non-zero elements in row-major order (NaN counts).
Status non_zero_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  std::vector<int64_t> hits;
  for (int64_t e = 0; e < x.numel(); ++e)
    if (x.is_float() ? x.f[e] != 0.0f : x.i[e] != 0) hits.push_back(e);
  const auto m = static_cast<int64_t>(hits.size());
  Buf y = Buf::ints({x.rank(), m});
  const auto strides = strides_of(x.shape);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t d = 0; d < x.rank(); ++d) y.i[d * m + j] = hits[j] / strides[d] % x.shape[d];
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_select_kernels(KernelTable& t) {
  t["TopK"] = top_k_kernel;
  t["Unique"] = unique_kernel;
  t["Compress"] = compress_kernel;
  t["NonZero"] = non_zero_kernel;
}

}  // namespace hpf::ref
