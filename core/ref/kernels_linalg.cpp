// MatMul (numpy semantics, batched with broadcasting), Gemm and Det. Dot products accumulate in
// FP64 by default, or in the plan's format in emulated mode; Det factorises in FP64.
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// C = A * B in FP64, every element summed exactly as the scalar loop
//   double s = 0.0; for (p = 0; p < k; ++p) s = s + double(a[i][p]) * double(b[p][j]);
// (same order, each sum rounded; the products of floats are exact), then rounded to float.
// Tiles of R rows x NV vectors of columns keep their sums in registers while p runs, so a strip
// of B (k x one tile's columns) is read once per R rows from cache. The ground truth of every
// planner evaluation runs through here (BERT-base: seconds per batch).

// One tile: rows i0 .. i0+Rows-1 of A times `strip`, B's columns of the tile as FP64, [k][NV*L]
// contiguous; the sums go to C's columns j0 .. j0+NV*L-1.
template <typename VD, typename VF, int Rows, int NV>
inline __attribute__((always_inline)) void matmul_f64_tile(const float* __restrict a, const double* __restrict strip,
                                                           float* __restrict c, int64_t k, int64_t n, int64_t i0,
                                                           int64_t j0) {
  constexpr int L = sizeof(VD) / sizeof(double);
  VD acc[Rows][NV] = {};
  for (int64_t p = 0; p < k; ++p) {
    VD bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], strip + (p * NV + v) * L, sizeof(VD));
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      const VD av = a[(i0 + r) * k + p] - VD{};  // broadcast (x - +0 is x, signed zeros too)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const VD prod = av * bv[v];
        acc[r][v] = acc[r][v] + prod;
      }
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < NV; ++v) {
      const VF out = __builtin_convertvector(acc[r][v], VF);
      std::memcpy(c + (i0 + r) * n + j0 + v * L, &out, sizeof out);
    }
}

template <int VB, int R, int NV>  // vector bytes, rows per tile, vectors per tile row
inline __attribute__((always_inline)) void matmul_f64_tiles(const float* a, const float* b, float* c, int64_t m,
                                                            int64_t k, int64_t n) {
  typedef double vd __attribute__((vector_size(VB)));
  typedef float vf __attribute__((vector_size(VB / 2)));
  constexpr int W = VB / 8 * NV;  // columns per tile
  // A strip of B is read once per R rows: copied contiguous (B's rows are n floats apart, which
  // maps a strip onto few cache sets and many pages) and converted to FP64 once.
  std::vector<double> strip(static_cast<size_t>(k) * W);
  int64_t j0 = 0;
  for (; j0 + W <= n; j0 += W) {
    for (int64_t p = 0; p < k; ++p)
      for (int j = 0; j < W; ++j) strip[p * W + j] = b[p * n + j0 + j];
    int64_t i0 = 0;
    for (; i0 + R <= m; i0 += R) matmul_f64_tile<vd, vf, R, NV>(a, strip.data(), c, k, n, i0, j0);
    for (; i0 < m; ++i0) matmul_f64_tile<vd, vf, 1, NV>(a, strip.data(), c, k, n, i0, j0);
  }
  for (int64_t i = 0; i < m; ++i)  // the last columns (fewer than a tile)
    for (int64_t j = j0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double prod = static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
        s = s + prod;
      }
      c[i * n + j] = static_cast<float>(s);
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// A product of two floats is exact in FP64, so a fused multiply-add (the avx512f clone may
// contract to one) rounds exactly as the separate product and sum.
__attribute__((target("avx512f"))) void matmul_f64_avx512(const float* a, const float* b, float* c, int64_t m,
                                                          int64_t k, int64_t n) {
  matmul_f64_tiles<64, 6, 4>(a, b, c, m, k, n);  // 24 zmm sums, 4 of B and a broadcast of A
}
__attribute__((target("avx2"))) void matmul_f64_avx2(const float* a, const float* b, float* c, int64_t m, int64_t k,
                                                     int64_t n) {
  matmul_f64_tiles<32, 4, 2>(a, b, c, m, k, n);
}
#endif

void matmul_f64(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const int isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  if (isa == 2) return matmul_f64_avx512(a, b, c, m, k, n);
  if (isa == 1) return matmul_f64_avx2(a, b, c, m, k, n);
#endif
  matmul_f64_tiles<16, 4, 2>(a, b, c, m, k, n);
}

// C[m,n] = sum_k A[m,k] * B[k,n], all row-major and contiguous. FP64 accumulation through the
// tiles above; a narrower format row by row in i-k-j order (contiguous in B and C), each sum
// rounded to it.
void matmul_2d(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
               Accumulation acc) {
  if (!acc || is_integer(*acc)) return matmul_f64(a, b, c, m, k, n);
  with_accumulation(acc, [&](auto zero, auto round) {
    using T = decltype(zero);
    std::vector<T> row(n);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), zero);
      for (int64_t p = 0; p < k; ++p) {
        const T av = a[i * k + p];
        const float* bp = b + p * n;
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
