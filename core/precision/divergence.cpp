#include "hpf/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpf {

Expected<Divergence> compare(const Tensor& reference, const Tensor& test) {
  if (reference.shape() != test.shape())
    return Status::invalid("compare: shapes " + shape_string(reference.shape()) + " and " +
                           shape_string(test.shape()) + " must be equal");
  if (!is_float(reference.dtype()) || !is_float(test.dtype()))
    return Status::invalid("compare: needs float tensors, got " + reference.describe() + " and " + test.describe());
  const std::vector<float> p = reference.to_f32(), q = test.to_f32();
  const int64_t cols = reference.rank() ? reference.shape().back() : 1;  // a scalar: one row of one
  const int64_t rows = cols ? static_cast<int64_t>(p.size()) / cols : 0;
  Divergence d;
  double diff2 = 0, ref2 = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (!std::isfinite(q[k]) && std::isfinite(p[k])) d.non_finite = true;
    const double e = double(q[k]) - double(p[k]);
    diff2 += e * e;
    ref2 += double(p[k]) * p[k];
    d.max_abs_error = std::max(d.max_abs_error, std::abs(e));
  }
  d.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  if (d.non_finite) {
    d.kl = std::numeric_limits<double>::infinity();
    d.max_abs_error = std::numeric_limits<double>::infinity();
  }
  int64_t agree = 0;
  double kl_sum = 0;
  for (int64_t r = 0; r < rows && !d.non_finite; ++r) {
    const float* pr = p.data() + r * cols;
    const float* qr = q.data() + r * cols;
    // log-softmax of both rows in double, stable.
    const double pm = *std::max_element(pr, pr + cols), qm = *std::max_element(qr, qr + cols);
    double ps = 0, qs = 0;
    for (int64_t j = 0; j < cols; ++j) {
      ps += std::exp(pr[j] - pm);
      qs += std::exp(qr[j] - qm);
    }
    const double plse = pm + std::log(ps), qlse = qm + std::log(qs);
    double kl = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double lp = pr[j] - plse, lq = qr[j] - qlse;
      kl += std::exp(lp) * (lp - lq);
    }
    kl_sum += std::max(0.0, kl);
    agree += (std::max_element(pr, pr + cols) - pr) == (std::max_element(qr, qr + cols) - qr);
  }
  if (!d.non_finite && rows > 0) {
    d.kl = kl_sum / double(rows);
    d.top1_agreement = double(agree) / double(rows);
  }
  return d;
}

}  // namespace hpf
