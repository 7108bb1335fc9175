// MatMul (numpy semantics, batched with broadcasting), Gemm and Det. Dot products accumulate in
// FP64 by default, or in the plan's format in emulated mode; Det factorises in FP64.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// row[j] += av * b[j] for j < n, in FP64, each element exactly as the scalar expression (no
// reassociation, no fused multiply-add: neither clone has FMA), four lanes at a time. The ground
// truth of every planner evaluation runs through here (BERT-base: seconds per batch).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target_clones("avx2", "default")))
#endif
void axpy_f64(double* __restrict row, double av, const float* __restrict b, int64_t n) {
  typedef double v4d __attribute__((vector_size(32)));
  typedef float v4f __attribute__((vector_size(16)));
  const v4d a = {av, av, av, av};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    v4f bf;
    v4d r;
    std::memcpy(&bf, b + j, sizeof bf);
    std::memcpy(&r, row + j, sizeof r);
    const v4d p = a * __builtin_convertvector(bf, v4d);
    r = r + p;
    std::memcpy(row + j, &r, sizeof r);
  }
  for (; j < n; ++j) {
    const double p = av * static_cast<double>(b[j]);
    row[j] = row[j] + p;
  }
}

// C[m,n] = sum_k A[m,k] * B[k,n], all row-major and contiguous. The i-k-j loop order keeps the
// innermost loop contiguous in B and C so it vectorises.
void matmul_2d(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
               Accumulation acc) {
  with_accumulation(acc, [&](auto zero, auto round) {
    using T = decltype(zero);
    std::vector<T> row(n);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), zero);
      for (int64_t p = 0; p < k; ++p) {
        const T av = a[i * k + p];
        const float* bp = b + p * n;
        if constexpr (std::is_same_v<T, double>)
          axpy_f64(row.data(), av, bp, n);  // round is the identity in FP64
        else
          for (int64_t j = 0; j < n; ++j) row[j] = round(row[j] + av * T(bp[j]));
      }
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<float>(row[j]);
    }
    return 0;
  });
}

std::vector<float> transposed(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

Status matmul_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &b = c.in(1);
  if (!a.is_float() || !b.is_float())
    return c.unsupported("integer MatMul (use MatMulInteger or DequantizeLinear)");
  if (a.rank() == 0 || b.rank() == 0) return c.error("inputs must have rank >= 1");
  std::vector<int64_t> sa = a.shape, sb = b.shape;
  if (a.rank() == 1) sa.insert(sa.begin(), 1);
  if (b.rank() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    return c.error("inner dimensions differ: " + shape_string(a.shape) + " x " + shape_string(b.shape));
  std::vector<std::vector<int64_t>> batch{{sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2}};
  auto bshape = broadcast(batch);
  if (!bshape.ok()) return c.error("batch dimensions: " + bshape.status().message());
  std::vector<int64_t> out_shape = *bshape;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  Buf y = Buf::floats(out_shape, a.dtype);
  const int64_t nb = numel(*bshape);
  BroadcastIndexer ia(batch[0], *bshape), ib(batch[1], *bshape);
  for (int64_t t = 0; t < nb; ++t)
    matmul_2d(a.f.data() + ia(t) * m * k, b.f.data() + ib(t) * k * n, y.f.data() + t * m * n, m, k, n,
              c.accumulation());
  c.out[0] = std::move(y);
  return {};
}

Status gemm_kernel(KernelContext& c) {
  const Buf &a = c.in(0), &b = c.in(1);
  if (a.rank() != 2 || b.rank() != 2)
    return c.error("A and B must be 2-D, got " + shape_string(a.shape) + " and " + shape_string(b.shape));
  if (!a.is_float() || !b.is_float()) return c.unsupported("integer Gemm");
  const bool ta = c.attr_int("transA") != 0, tb = c.attr_int("transB") != 0;
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb) return c.error("inner dimensions differ: A " + shape_string(a.shape) + ", B " + shape_string(b.shape));
  const std::vector<float> at = ta ? transposed(a.f, a.shape[0], a.shape[1]) : std::vector<float>();
  const std::vector<float> bt = tb ? transposed(b.f, b.shape[0], b.shape[1]) : std::vector<float>();
  Buf y = Buf::floats({m, n}, a.dtype);
  matmul_2d(ta ? at.data() : a.f.data(), tb ? bt.data() : b.f.data(), y.f.data(), m, k, n, c.accumulation());
  const double alpha = c.attr_float("alpha"), beta = c.attr_float("beta");
  if (alpha != 1.0)
    for (float& v : y.f) v = static_cast<float>(alpha * v);
  if (c.has(2) && beta != 0.0) {
    const Buf& cc = c.in(2);
    std::vector<std::vector<int64_t>> shapes{y.shape, cc.shape};
    auto bs = broadcast(shapes);
    if (!bs.ok() || *bs != y.shape)
      return c.error("C " + shape_string(cc.shape) + " does not broadcast to [" + std::to_string(m) + "," + std::to_string(n) + "]");
    BroadcastIndexer ic(cc.shape, y.shape);
    for (int64_t t = 0; t < m * n; ++t) y.f[t] = static_cast<float>(double(y.f[t]) + beta * cc.get(ic(t)));
  }
  c.out[0] = std::move(y);
  return {};
}

// Determinant of an n x n row-major matrix by LU factorisation with partial pivoting.
double determinant(std::vector<double> a, int64_t n) {
  double det = 1;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    if (a[pivot * n + col] == 0) return 0;
    if (pivot != col) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[pivot * n + k], a[col * n + k]);
      det = -det;
    }
    const double p = a[col * n + col];
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / p;
      for (int64_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
    }
  }
  return det;
}

// Det: one determinant per [M, M] matrix in the trailing two dimensions.
Status det_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float())
    return c.error("input must be floating point, is " + std::string(dtype_name(x.dtype)));
  const int64_t r = x.rank();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2])
    return c.error("input must be [..., M, M], got " + shape_string(x.shape));
  const int64_t n = x.shape[r - 1];
  Buf y = Buf::floats({x.shape.begin(), x.shape.end() - 2}, x.dtype);
  for (int64_t b = 0; b < y.numel(); ++b) {
    const float* m = x.f.data() + b * n * n;
    y.f[b] = static_cast<float>(determinant(std::vector<double>(m, m + n * n), n));
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_linalg_kernels(KernelTable& t) {
  t["MatMul"] = matmul_kernel;
  t["Gemm"] = gemm_kernel;
  t["Det"] = det_kernel;
}

}  // namespace hpf::ref
