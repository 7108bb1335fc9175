// Data movement and shape ops. They work on any dtype: values are moved, never converted.
#include <algorithm>
#include <cmath>

#include "core/ir/op_geometry.hpp"
#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

void copy_elem(const Buf& s, int64_t si, Buf& d, int64_t di) {
  if (s.is_float()) d.f[di] = s.f[si];
  else d.i[di] = s.i[si];
}

Buf empty_like(const Buf& x, std::vector<int64_t> shape) {
  return x.is_float() ? Buf::floats(std::move(shape), x.dtype) : Buf::ints(std::move(shape), x.dtype);
}

Buf with_shape(const Buf& x, std::vector<int64_t> shape) {
  Buf y = x;
  y.shape = std::move(shape);
  return y;
}

Status gather_kernel(KernelContext& c) {
  const Buf &data = c.in(0), &idx = c.in(1);
  auto axis = ir::normalize_axis(c.attr_int("axis"), data.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(data.rank()));
  if (idx.is_float()) return c.error("indices must be integers");
  std::vector<int64_t> out_shape(data.shape.begin(), data.shape.begin() + *axis);
  out_shape.insert(out_shape.end(), idx.shape.begin(), idx.shape.end());
  out_shape.insert(out_shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  const int64_t dim = data.shape[*axis];
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= data.shape[k];
  for (int64_t k = *axis + 1; k < data.rank(); ++k) inner *= data.shape[k];
  const int64_t ni = idx.numel();
  Buf y = empty_like(data, out_shape);
  for (int64_t j = 0; j < ni; ++j) {
    int64_t ix = idx.i[j];
    if (ix < -dim || ix >= dim)
      return c.error("index " + std::to_string(ix) + " is out of range for axis " + std::to_string(*axis) +
                     " of size " + std::to_string(dim));
    if (ix < 0) ix += dim;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in)
        copy_elem(data, (o * dim + ix) * inner + in, y, (o * ni + j) * inner + in);
  }
  c.out[0] = std::move(y);
  return {};
}

// GatherElements: out[i] = data[i with axis coordinate replaced by indices[i]].
Status gather_elements_kernel(KernelContext& c) {
  const Buf &data = c.in(0), &idx = c.in(1);
  auto axis = ir::normalize_axis(c.attr_int("axis"), data.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(data.rank()));
  if (idx.is_float()) return c.error("indices must be integers");
  if (idx.rank() != data.rank()) return c.error("indices and data ranks differ");
  const auto ds = strides_of(data.shape), is = strides_of(idx.shape);
  const int64_t dim = data.shape[*axis];
  Buf y = empty_like(data, idx.shape);
  const int64_t n = idx.numel();
  for (int64_t j = 0; j < n; ++j) {
    int64_t ix = idx.i[j];
    if (ix < -dim || ix >= dim)
      return c.error("index " + std::to_string(ix) + " is out of range for axis " + std::to_string(*axis) +
                     " of size " + std::to_string(dim));
    if (ix < 0) ix += dim;
    int64_t src = 0, rem = j;
    for (int64_t d = 0; d < idx.rank(); ++d) {
      const int64_t coord = rem / is[d];
      rem %= is[d];
      src += (d == *axis ? ix : coord) * ds[d];
    }
    copy_elem(data, src, y, j);
  }
  c.out[0] = std::move(y);
  return {};
}

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes.
Status trilu_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (x.rank() < 2) return c.error("input must have rank >= 2");
  int64_t k = 0;
  if (c.has(1)) {
    const auto kv = c.in(1).as_ints();
    if (kv.size() != 1) return c.error("k must be a scalar");
    k = kv[0];
  }
  const bool upper = c.attr_int("upper") != 0;
  const int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  Buf y = Buf::like(x);
  const int64_t n = x.numel();
  for (int64_t e = 0; e < n; ++e) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    if (upper ? j - i >= k : j - i <= k) copy_elem(x, e, y, e);
  }
  c.out[0] = std::move(y);
  return {};
}

// Tile: repeats[d] copies of the input along each axis d.
Status tile_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  const auto reps = c.in(1).as_ints();
  if (static_cast<int64_t>(reps.size()) != x.rank())
    return c.error("repeats has " + std::to_string(reps.size()) + " entries, input has rank " + std::to_string(x.rank()));
  std::vector<int64_t> out_shape(x.shape);
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) return c.error("repeats must be non-negative");
    out_shape[d] *= reps[d];
  }
  const auto xs = strides_of(x.shape), ys = strides_of(out_shape);
  Buf y = empty_like(x, out_shape);
  const int64_t n = y.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0, rem = e;
    for (int64_t d = 0; d < x.rank(); ++d) {
      const int64_t coord = rem / ys[d];
      rem %= ys[d];
      src += (coord % x.shape[d]) * xs[d];
    }
    copy_elem(x, src, y, e);
  }
  c.out[0] = std::move(y);
  return {};
}

Status reshape_kernel(KernelContext& c) {
  auto target = ir::reshape_target(c.in(0).shape, c.in(1).as_ints(), c.attr_int("allowzero") != 0);
  if (!target.ok()) return c.error(target.status().message());
  c.out[0] = with_shape(c.in(0), *target);
  return {};
}

Status transpose_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t k = x.rank() - 1; k >= 0; --k) perm.push_back(k);
  if (static_cast<int64_t>(perm.size()) != x.rank())
    return c.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.rank()));
  auto p = ir::normalize_axes(perm, x.rank());
  if (!p.ok()) return c.error("perm: " + p.status().message());
  std::vector<int64_t> out_shape;
  for (int64_t a : *p) out_shape.push_back(x.shape[a]);
  Buf y = empty_like(x, out_shape);
  const auto in_strides = strides_of(x.shape);
  // Walk the output in order with an odometer over its index, tracking the input offset.
  const int64_t n = y.numel(), r = x.rank();
  std::vector<int64_t> idx(r, 0);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    copy_elem(x, src, y, k);
    for (int64_t d = r - 1; d >= 0; --d) {
      src += in_strides[(*p)[d]];
      if (++idx[d] < out_shape[d]) break;
      src -= in_strides[(*p)[d]] * out_shape[d];
      idx[d] = 0;
    }
  }
  c.out[0] = std::move(y);
  return {};
}

Status flatten_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  int64_t axis = c.attr_int("axis");
  if (axis < -x.rank() || axis > x.rank()) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(x.rank()));
  if (axis < 0) axis += x.rank();
  int64_t a = 1, b = 1;
  for (int64_t k = 0; k < x.rank(); ++k) (k < axis ? a : b) *= x.shape[k];
  c.out[0] = with_shape(x, {a, b});
  return {};
}

std::vector<int64_t> axes_arg(KernelContext& c) {
  return c.has(1) ? c.in(1).as_ints() : c.attr_ints("axes");
}

Status squeeze_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  auto axes = ir::normalize_axes(axes_arg(c), x.rank());
  if (!axes.ok()) return c.error(axes.status().message());
  std::vector<int64_t> out;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const bool named = std::find(axes->begin(), axes->end(), k) != axes->end();
    if (axes->empty() ? x.shape[k] == 1 : named) {
      if (x.shape[k] != 1) return c.error("cannot squeeze axis " + std::to_string(k) + " of size " + std::to_string(x.shape[k]));
      continue;
    }
    out.push_back(x.shape[k]);
  }
  c.out[0] = with_shape(x, out);
  return {};
}

Status unsqueeze_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  const std::vector<int64_t> raw = axes_arg(c);
  const int64_t rank = x.rank() + static_cast<int64_t>(raw.size());
  auto axes = ir::normalize_axes(raw, rank);
  if (!axes.ok()) return c.error(axes.status().message());
  std::vector<int64_t> out;
  size_t j = 0;
  for (int64_t k = 0; k < rank; ++k)
    out.push_back(std::find(axes->begin(), axes->end(), k) != axes->end() ? 1 : x.shape[j++]);
  c.out[0] = with_shape(x, out);
  return {};
}

Status concat_kernel(KernelContext& c) {
  const Buf& x0 = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x0.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x0.rank()));
  std::vector<int64_t> out_shape = x0.shape;
  out_shape[*axis] = 0;
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const Buf& x = c.in(k);
    if (x.rank() != x0.rank() || x.dtype != x0.dtype)
      return c.error("input " + std::to_string(k) + " " + std::string(dtype_name(x.dtype)) + shape_string(x.shape) +
                     " does not match input 0 " + std::string(dtype_name(x0.dtype)) + shape_string(x0.shape));
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != *axis && x.shape[d] != x0.shape[d])
        return c.error("input " + std::to_string(k) + " " + shape_string(x.shape) + " differs from input 0 " +
                       shape_string(x0.shape) + " outside axis " + std::to_string(*axis));
    out_shape[*axis] += x.shape[*axis];
  }
  Buf y = empty_like(x0, out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= out_shape[k];
  for (int64_t k = *axis + 1; k < x0.rank(); ++k) inner *= out_shape[k];
  const int64_t out_row = out_shape[*axis] * inner;
  int64_t offset = 0;
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const Buf& x = c.in(k);
    const int64_t row = x.shape[*axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < row; ++e) copy_elem(x, o * row + e, y, o * out_row + offset + e);
    offset += row;
  }
  c.out[0] = std::move(y);
  return {};
}

Status split_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  auto axis = ir::normalize_axis(c.attr_int("axis"), x.rank());
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " + std::to_string(x.rank()));
  std::vector<int64_t> sp = c.has(1) ? c.in(1).as_ints() : c.attr_ints("split");
  if (!sp.empty() && sp.size() != c.out.size())
    return c.error("split has " + std::to_string(sp.size()) + " sizes for " + std::to_string(c.out.size()) + " outputs");
  auto sizes = ir::split_sizes(x.shape[*axis], sp, static_cast<int64_t>(c.out.size()));
  if (!sizes.ok()) return c.error(sizes.status().message());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= x.shape[k];
  for (int64_t k = *axis + 1; k < x.rank(); ++k) inner *= x.shape[k];
  const int64_t in_row = x.shape[*axis] * inner;
  int64_t offset = 0;
  for (size_t o = 0; o < c.out.size(); ++o) {
    std::vector<int64_t> shape = x.shape;
    shape[*axis] = (*sizes)[o];
    Buf y = empty_like(x, shape);
    const int64_t row = (*sizes)[o] * inner;
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t e = 0; e < row; ++e) copy_elem(x, r * in_row + offset + e, y, r * row + e);
    offset += row;
    c.out[o] = std::move(y);
  }
  return {};
}

Status slice_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  std::vector<int64_t> starts = c.attr_ints("starts"), ends = c.attr_ints("ends"),
                       axes = c.attr_ints("axes"), steps;
  if (c.num_inputs() > 1) {
    starts = c.in(1).as_ints();
    ends = c.in(2).as_ints();
    axes = c.has(3) ? c.in(3).as_ints() : std::vector<int64_t>{};
    steps = c.has(4) ? c.in(4).as_ints() : std::vector<int64_t>{};
  }
  auto r = ir::slice_ranges(x.shape, starts, ends, axes, steps);
  if (!r.ok()) return c.error(r.status().message());
  std::vector<int64_t> out_shape;
  for (const auto& a : *r) out_shape.push_back(a.count);
  Buf y = empty_like(x, out_shape);
  const auto in_strides = strides_of(x.shape);
  const int64_t n = y.numel(), rank = x.rank();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += ((*r)[d].start + idx[d] * (*r)[d].step) * in_strides[d];
    copy_elem(x, src, y, k);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  c.out[0] = std::move(y);
  return {};
}

Status expand_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  std::vector<std::vector<int64_t>> shapes{x.shape, c.in(1).as_ints()};
  auto out_shape = broadcast(shapes);
  if (!out_shape.ok()) return c.error(out_shape.status().message());
  Buf y = empty_like(x, *out_shape);
  BroadcastIndexer ix(x.shape, *out_shape);
  for (int64_t k = 0; k < y.numel(); ++k) copy_elem(x, ix(k), y, k);
  c.out[0] = std::move(y);
  return {};
}

Status shape_kernel(KernelContext& c) {
  const auto rank = c.in(0).rank();
  int64_t start = c.attr_int("start"), end = c.has_attr("end") ? c.attr_int("end") : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  Buf y = Buf::ints({std::max<int64_t>(0, end - start)});
  for (int64_t k = start; k < end; ++k) y.i[k - start] = c.in(0).shape[k];
  c.out[0] = std::move(y);
  return {};
}

Status constant_of_shape_kernel(KernelContext& c) {
  const std::vector<int64_t> shape = c.in(0).as_ints();
  for (int64_t d : shape)
    if (d < 0) return c.error("negative dimension in shape " + shape_string(shape));
  const Tensor* v = c.attr_tensor("value");
  Buf value = v ? to_buf(*v) : Buf::floats({1});
  if (value.numel() != 1) return c.error("value must hold one element");
  Buf y = empty_like(value, shape);
  if (y.is_float()) std::fill(y.f.begin(), y.f.end(), value.f[0]);
  else std::fill(y.i.begin(), y.i.end(), value.i[0]);
  c.out[0] = std::move(y);
  return {};
}

Status range_kernel(KernelContext& c) {
  for (size_t k = 0; k < 3; ++k)
    if (c.in(k).numel() != 1) return c.error("input " + std::to_string(k) + " must be a scalar");
  const Buf& s = c.in(0);
  const double start = s.get(0), limit = c.in(1).get(0), delta = c.in(2).get(0);
  if (delta == 0) return c.error("delta is 0");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  Buf y = empty_like(s, {n});
  for (int64_t k = 0; k < n; ++k) {
    if (y.is_float()) y.f[k] = static_cast<float>(start + k * delta);
    else y.i[k] = s.i[0] + k * c.in(2).i[0];
  }
  c.out[0] = std::move(y);
  return {};
}

Status constant_kernel(KernelContext& c) {
  const Tensor* v = c.attr_tensor("value");
  if (!v) return c.error("Constant needs a 'value' tensor attribute");
  c.out[0] = to_buf(*v);
  return {};
}

// DepthToSpace (DCR: depth is blocks then channels; CRD: channels then blocks) and SpaceToDepth.
Status space_depth_kernel(KernelContext& c, bool to_space) {
  const Buf& x = c.in(0);
  const int64_t b = c.attr_int("blocksize");
  if (x.rank() != 4) return c.error("input must have rank 4, has rank " + std::to_string(x.rank()));
  if (b <= 0) return c.error("blocksize must be positive");
  const bool crd = to_space && c.attr_string("mode") == "CRD";
  // Space-side geometry: channels C, spatial H x W (the larger spatial sizes).
  int64_t n = x.shape[0], C, H, W;
  if (to_space) {
    if (x.shape[1] % (b * b) != 0) return c.error("channels are not a multiple of blocksize^2");
    C = x.shape[1] / (b * b), H = x.shape[2] * b, W = x.shape[3] * b;
  } else {
    if (x.shape[2] % b != 0 || x.shape[3] % b != 0) return c.error("spatial sizes are not multiples of blocksize");
    C = x.shape[1], H = x.shape[2], W = x.shape[3];
  }
  const int64_t h = H / b, w = W / b, D = C * b * b;
  Buf y = empty_like(x, to_space ? std::vector<int64_t>{n, C, H, W} : std::vector<int64_t>{n, D, h, w});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t yy = 0; yy < H; ++yy)
        for (int64_t xx = 0; xx < W; ++xx) {
          const int64_t bi = yy % b, bj = xx % b;
          const int64_t d = crd ? (ch * b + bi) * b + bj : (bi * b + bj) * C + ch;
          const int64_t space = ((in * C + ch) * H + yy) * W + xx;
          const int64_t depth = ((in * D + d) * h + yy / b) * w + xx / b;
          if (to_space) copy_elem(x, depth, y, space);
          else copy_elem(x, space, y, depth);
        }
  c.out[0] = std::move(y);
  return {};
}

// OneHot: indices (negative ones count from depth), depth, values [off, on]; out-of-range
// indices give an all-off row.
Status one_hot_kernel(KernelContext& c) {
  const Buf &idx = c.in(0), &dep = c.in(1), &vals = c.in(2);
  if (dep.numel() != 1) return c.error("depth must have one element");
  if (vals.numel() != 2) return c.error("values must have two elements [off, on]");
  const int64_t depth = static_cast<int64_t>(dep.get(0));
  if (depth < 0) return c.error("depth must be non-negative");
  auto axis = ir::normalize_axis(c.attr_int("axis"), idx.rank() + 1);
  if (!axis) return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range");
  std::vector<int64_t> shape = idx.shape;
  shape.insert(shape.begin() + *axis, depth);
  Buf y = empty_like(vals, shape);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= idx.shape[k];
  for (int64_t k = *axis; k < idx.rank(); ++k) inner *= idx.shape[k];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t v = static_cast<int64_t>(idx.get(o * inner + in));
      if (v < 0) v += depth;
      for (int64_t d = 0; d < depth; ++d) copy_elem(vals, d == v ? 1 : 0, y, (o * depth + d) * inner + in);
    }
  c.out[0] = std::move(y);
  return {};
}

// EyeLike: ones on the k-th diagonal (j - i == k) of a 2-D tensor shaped like the input, in the
// `dtype` attribute's type or else the input's.
Status eye_like_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (x.rank() != 2) return c.error("input must be 2-D, has shape " + shape_string(x.shape));
  DType t = x.dtype;
  if (c.has_attr("dtype")) {
    auto d = ir::dtype_from_onnx(c.attr_int("dtype"));
    if (!d.ok()) return c.error(d.status().message());
    t = *d;
  }
  Buf y = is_float(t) ? Buf::floats(x.shape, t) : Buf::ints(x.shape, t);
  const int64_t rows = x.shape[0], cols = x.shape[1], k = c.attr_int("k");
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j < 0 || j >= cols) continue;
    if (y.is_float())
      y.f[i * cols + j] = 1.0f;
    else
      y.i[i * cols + j] = 1;
  }
  c.out[0] = std::move(y);
  return {};
}

// ReverseSequence: for batch entry b, the first sequence_lens[b] steps along time_axis in
// reverse order, the rest as they are.
Status reverse_sequence_kernel(KernelContext& c) {
  const Buf &x = c.in(0), &lens = c.in(1);
  const int64_t ba = c.attr_int("batch_axis"), ta = c.attr_int("time_axis");
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    return c.error("batch_axis and time_axis must be 0 and 1 in some order");
  if (x.rank() < 2) return c.error("input must have rank >= 2, has shape " + shape_string(x.shape));
  if (lens.is_float() || lens.rank() != 1 || lens.shape[0] != x.shape[ba])
    return c.error("sequence_lens " + shape_string(lens.shape) +
                   " must hold one integer length per batch entry of " + shape_string(x.shape));
  for (int64_t len : lens.i)
    if (len < 0 || len > x.shape[ta])
      return c.error("sequence length " + std::to_string(len) + " is outside [0, " +
                     std::to_string(x.shape[ta]) + "]");
  const auto st = strides_of(x.shape);
  Buf y = Buf::like(x);
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t b = e / st[ba] % x.shape[ba], t = e / st[ta] % x.shape[ta], len = lens.i[b];
    const int64_t src = t < len ? e + (len - 1 - 2 * t) * st[ta] : e;
    copy_elem(x, src, y, e);
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_shape_kernels(KernelTable& t) {
  t["EyeLike"] = eye_like_kernel;
  t["ReverseSequence"] = reverse_sequence_kernel;
  t["Gather"] = gather_kernel;
  t["DepthToSpace"] = [](KernelContext& c) { return space_depth_kernel(c, true); };
  t["SpaceToDepth"] = [](KernelContext& c) { return space_depth_kernel(c, false); };
  t["OneHot"] = one_hot_kernel;
  t["GatherElements"] = gather_elements_kernel;
  t["Trilu"] = trilu_kernel;
  t["Tile"] = tile_kernel;
  t["Reshape"] = reshape_kernel;
  t["Transpose"] = transpose_kernel;
  t["Flatten"] = flatten_kernel;
  t["Squeeze"] = squeeze_kernel;
  t["Unsqueeze"] = unsqueeze_kernel;
  t["Concat"] = concat_kernel;
  t["Split"] = split_kernel;
  t["Slice"] = slice_kernel;
  t["Expand"] = expand_kernel;
  t["Shape"] = shape_kernel;
  t["Size"] = [](KernelContext& c) -> Status {
    Buf y = Buf::ints({}, DType::I64);
    y.i[0] = c.in(0).numel();
    c.out[0] = std::move(y);
    return {};
  };
  t["ConstantOfShape"] = constant_of_shape_kernel;
  t["Range"] = range_kernel;
  t["Constant"] = constant_kernel;
}

}  // namespace hpf::ref
