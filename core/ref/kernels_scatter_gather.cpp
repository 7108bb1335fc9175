// ScatterElements (and the deprecated Scatter, imported as it), ScatterND and GatherND.
// Indices may be negative (counted from the end of their axis); updates are applied in index
// order, so with reduction 'none' the last of duplicate indices wins.
#include <algorithm>
#include <cmath>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

enum class Reduction { none, add, mul, max, min };

std::optional<Reduction> reduction_of(const std::string& r) {
  if (r == "none") return Reduction::none;
  if (r == "add") return Reduction::add;
  if (r == "mul") return Reduction::mul;
  if (r == "max") return Reduction::max;
  if (r == "min") return Reduction::min;
  return std::nullopt;
}

// y[di] = reduce(y[di], u[ui]); floats in double, integers in wrapping int64.
void apply(Reduction r, const Buf& u, int64_t ui, Buf& y, int64_t di) {
  if (y.is_float()) {
    const double a = y.f[di], b = u.f[ui];
    double v = b;
    switch (r) {
      case Reduction::none:
        break;
      case Reduction::add:
        v = a + b;
        break;
      case Reduction::mul:
        v = a * b;
        break;
      case Reduction::max:
        v = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
        break;
      case Reduction::min:
        v = std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
        break;
    }
    y.f[di] = static_cast<float>(v);
    return;
  }
  const int64_t a = y.i[di], b = u.i[ui];
  switch (r) {
    case Reduction::none:
      y.i[di] = b;
      break;
    case Reduction::add:
      y.i[di] = static_cast<int64_t>(uint64_t(a) + uint64_t(b));
      break;
    case Reduction::mul:
      y.i[di] = static_cast<int64_t>(uint64_t(a) * uint64_t(b));
      break;
    case Reduction::max:
      y.i[di] = std::max(a, b);
      break;
    case Reduction::min:
      y.i[di] = std::min(a, b);
      break;
  }
}

Expected<Reduction> reduction_arg(KernelContext& c) {
  auto r = reduction_of(c.attr_string("reduction"));
  if (!r)
    return c.error("reduction must be 'none', 'add', 'mul', 'max' or 'min', is '" +
                   c.attr_string("reduction") + "'");
  return *r;
}

// An index into an axis of size `dim`, negative counting from the end; nullopt when outside.
std::optional<int64_t> wrap_index(int64_t ix, int64_t dim) {
  if (ix < -dim || ix >= dim) return std::nullopt;
  return ix < 0 ? ix + dim : ix;
}

Status check_updates(KernelContext& c) {
  if (c.in(2).dtype != c.in(0).dtype)
    return c.error("updates are " + std::string(dtype_name(c.in(2).dtype)) + ", data " +
                   std::string(dtype_name(c.in(0).dtype)));
  if (c.in(1).is_float()) return c.error("indices must be integers");
  return {};
}

// ScatterElements: y = data; y[idx with axis coordinate replaced by indices[idx]] op= updates[idx].
Status scatter_elements_kernel(KernelContext& c) {
  const Buf &data = c.in(0), &idx = c.in(1), &upd = c.in(2);
  HPF_RETURN_IF_ERROR(check_updates(c));
  HPF_ASSIGN_OR_RETURN(Reduction red, reduction_arg(c));
  auto axis = ir::normalize_axis(c.attr_int("axis"), data.rank());
  if (!axis)
    return c.error("axis " + std::to_string(c.attr_int("axis")) + " is out of range for rank " +
                   std::to_string(data.rank()));
  if (idx.rank() != data.rank() || upd.shape != idx.shape)
    return c.error("indices " + shape_string(idx.shape) + " and updates " +
                   shape_string(upd.shape) + " must have one shape, of the rank of data " +
                   shape_string(data.shape));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != *axis && idx.shape[d] > data.shape[d])
      return c.error("indices " + shape_string(idx.shape) + " exceed data " +
                     shape_string(data.shape) + " outside axis " + std::to_string(*axis));
  const auto ds = strides_of(data.shape), is = strides_of(idx.shape);
  Buf y = data;
  for (int64_t j = 0; j < idx.numel(); ++j) {
    auto ix = wrap_index(idx.i[j], data.shape[*axis]);
    if (!ix)
      return c.error("index " + std::to_string(idx.i[j]) + " is out of range for axis " +
                     std::to_string(*axis) + " of size " + std::to_string(data.shape[*axis]));
    int64_t dst = 0;
    for (int64_t d = 0; d < idx.rank(); ++d)
      dst += (d == *axis ? *ix : j / is[d] % idx.shape[d]) * ds[d];
    apply(red, upd, j, y, dst);
  }
  c.out[0] = std::move(y);
  return {};
}

// ScatterND: each row of indices (length k) names a slice data[i0, ..., ik-1, :, ...] that the
// matching slice of updates is written into.
Status scatter_nd_kernel(KernelContext& c) {
  const Buf &data = c.in(0), &idx = c.in(1), &upd = c.in(2);
  HPF_RETURN_IF_ERROR(check_updates(c));
  HPF_ASSIGN_OR_RETURN(Reduction red, reduction_arg(c));
  if (idx.rank() < 1) return c.error("indices must have rank >= 1");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > data.rank())
    return c.error("indices' last dimension " + std::to_string(k) + " must be in [1, data rank " +
                   std::to_string(data.rank()) + "]");
  std::vector<int64_t> want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (upd.shape != want)
    return c.error("updates " + shape_string(upd.shape) + " must have shape " + shape_string(want));
  const auto ds = strides_of(data.shape);
  const int64_t slice = k < data.rank() ? ds[k - 1] : 1, rows = idx.numel() / k;
  Buf y = data;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    for (int64_t d = 0; d < k; ++d) {
      auto ix = wrap_index(idx.i[r * k + d], data.shape[d]);
      if (!ix)
        return c.error("index " + std::to_string(idx.i[r * k + d]) + " is out of range for axis " +
                       std::to_string(d) + " of size " + std::to_string(data.shape[d]));
      base += *ix * ds[d];
    }
    for (int64_t e = 0; e < slice; ++e) apply(red, upd, r * slice + e, y, base + e);
  }
  c.out[0] = std::move(y);
  return {};
}

// GatherND: the slices of data that the rows of indices name, within each of the batch_dims
// leading (shared) dimensions.
Status gather_nd_kernel(KernelContext& c) {
  const Buf &data = c.in(0), &idx = c.in(1);
  if (idx.is_float()) return c.error("indices must be integers");
  const int64_t b = c.attr_int("batch_dims"), r = data.rank(), q = idx.rank();
  if (q < 1 || r < 1) return c.error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    return c.error("batch_dims " + std::to_string(b) + " must be in [0, min(ranks))");
  for (int64_t d = 0; d < b; ++d)
    if (idx.shape[d] != data.shape[d])
      return c.error("batch dimension " + std::to_string(d) + " differs: data " +
                     shape_string(data.shape) + ", indices " + shape_string(idx.shape));
  const int64_t k = idx.shape.back();
  if (k < 1 || k > r - b)
    return c.error("indices' last dimension " + std::to_string(k) +
                   " must be in [1, data rank - batch_dims = " + std::to_string(r - b) + "]");
  std::vector<int64_t> shape(idx.shape.begin(), idx.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + b + k, data.shape.end());
  Buf y = data.is_float() ? Buf::floats(shape, data.dtype) : Buf::ints(shape, data.dtype);
  const auto ds = strides_of(data.shape);
  int64_t batches = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.shape[d];
  const int64_t batch_stride = b > 0 ? ds[b - 1] : data.numel();
  const int64_t slice = b + k < r ? ds[b + k - 1] : 1;
  const int64_t rows = batches > 0 ? idx.numel() / k / batches : 0;
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t row = bi * rows + j;
      int64_t base = bi * batch_stride;
      for (int64_t d = 0; d < k; ++d) {
        auto ix = wrap_index(idx.i[row * k + d], data.shape[b + d]);
        if (!ix)
          return c.error("index " + std::to_string(idx.i[row * k + d]) +
                         " is out of range for axis " + std::to_string(b + d) + " of size " +
                         std::to_string(data.shape[b + d]));
        base += *ix * ds[b + d];
      }
      for (int64_t e = 0; e < slice; ++e) {
        if (y.is_float())
          y.f[row * slice + e] = data.f[base + e];
        else
          y.i[row * slice + e] = data.i[base + e];
      }
    }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_scatter_gather_kernels(KernelTable& t) {
  t["ScatterElements"] = scatter_elements_kernel;
  t["ScatterND"] = scatter_nd_kernel;
  t["GatherND"] = gather_nd_kernel;
}

}  // namespace hpf::ref
