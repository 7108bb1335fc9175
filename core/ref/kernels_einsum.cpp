// Einsum as the reference computes it: a naive loop over the whole index space (output labels
// outside, summed labels inside), products and sums in FP64 (wrapping int64 for integers).
// The equation is parsed by core/ir/einsum_equation, the same code shape inference uses.
#include "core/ir/einsum_equation.hpp"
#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// Steps a row-major odometer over `sizes`; false once it wraps around.
bool next(std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  for (size_t k = idx.size(); k-- > 0;) {
    if (++idx[k] < sizes[k]) return true;
    idx[k] = 0;
  }
  return false;
}

Status einsum_kernel(KernelContext& c) {
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> shapes;
  const bool floats = c.in(0).is_float();
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    if (c.in(k).dtype != c.in(0).dtype)
      return c.error("input " + std::to_string(k) + " is " +
                     std::string(dtype_name(c.in(k).dtype)) + ", input 0 is " +
                     std::string(dtype_name(c.in(0).dtype)));
    ranks.push_back(c.in(k).rank());
    shapes.push_back(c.in(k).shape);
  }
  auto eq = ir::parse_einsum(c.attr_string("equation"), ranks);
  if (!eq.ok()) return c.error(eq.status().message());
  auto size = ir::einsum_label_sizes(*eq, shapes);
  if (!size.ok()) return c.error(size.status().message());

  // Stride of every label in every operand: repeated labels add up (a diagonal), broadcast
  // dimensions of size 1 stay put.
  const size_t nl = static_cast<size_t>(eq->num_labels);
  std::vector<std::vector<int64_t>> stride(c.num_inputs(), std::vector<int64_t>(nl, 0));
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const auto st = strides_of(shapes[k]);
    for (size_t d = 0; d < shapes[k].size(); ++d)
      if (shapes[k][d] != 1 || (*size)[eq->inputs[k][d]] == 1) stride[k][eq->inputs[k][d]] += st[d];
  }
  std::vector<bool> in_output(nl, false);
  for (int l : eq->output) in_output[l] = true;
  std::vector<int> summed;
  for (size_t l = 0; l < nl; ++l)
    if (!in_output[l]) summed.push_back(static_cast<int>(l));

  std::vector<int64_t> out_shape, out_idx(eq->output.size(), 0), sum_sizes,
      sum_idx(summed.size(), 0);
  for (int l : eq->output) out_shape.push_back((*size)[l]);
  for (int l : summed) sum_sizes.push_back((*size)[l]);
  const DType t = c.in(0).dtype;
  Buf y = floats ? Buf::floats(out_shape, t) : Buf::ints(out_shape, t);
  if (y.numel() == 0) {
    c.out[0] = std::move(y);
    return {};
  }
  const bool empty_sum = numel(sum_sizes) == 0;
  std::vector<int64_t> at(nl, 0);  // current index of every label
  int64_t o = 0;
  do {
    for (size_t d = 0; d < out_idx.size(); ++d) at[eq->output[d]] = out_idx[d];
    double fsum = 0;
    int64_t isum = 0;
    std::fill(sum_idx.begin(), sum_idx.end(), 0);
    if (!empty_sum) do {
        for (size_t d = 0; d < sum_idx.size(); ++d) at[summed[d]] = sum_idx[d];
        double fp = 1;
        uint64_t ip = 1;
        for (size_t k = 0; k < c.num_inputs(); ++k) {
          int64_t off = 0;
          for (size_t l = 0; l < nl; ++l) off += at[l] * stride[k][l];
          if (floats)
            fp *= c.in(k).f[off];
          else
            ip *= static_cast<uint64_t>(c.in(k).i[off]);
        }
        fsum += fp;
        isum = static_cast<int64_t>(uint64_t(isum) + ip);
      } while (next(sum_idx, sum_sizes));
    if (floats)
      y.f[o] = static_cast<float>(fsum);
    else
      y.i[o] = isum;
    ++o;
  } while (next(out_idx, out_shape));
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_einsum_kernels(KernelTable& t) { t["Einsum"] = einsum_kernel; }

}  // namespace hpf::ref
