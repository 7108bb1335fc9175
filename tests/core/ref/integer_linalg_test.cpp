// Reference interpreter: MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv against
// hand-computed sums (zero points subtracted first; requantisation rounds half to even and
// saturates).
#include <doctest/doctest.h>

#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

Tensor typed(std::vector<int64_t> shape, std::vector<int64_t> v, DType t) {
  return std::move(Tensor::from_i64(std::move(shape), v, t)).value();
}
Tensor u8(std::vector<int64_t> shape, std::vector<int64_t> v) { return typed(std::move(shape), std::move(v), DType::U8); }
Tensor i8(std::vector<int64_t> shape, std::vector<int64_t> v) { return typed(std::move(shape), std::move(v), DType::I8); }

}  // namespace

TEST_CASE("ref integer linalg: MatMulInteger with per-row and per-column zero points") {
  // A' = A - [1, 4] per row = [[0,1,2],[0,1,2]]; B' = B - [1, 0] per column = [[0,-1],[1,0],[2,1]].
  auto y = run1("MatMulInteger", {in(u8({2, 3}, {1, 2, 3, 4, 5, 6})), in(i8({3, 2}, {1, -1, 2, 0, 3, 1})),
                                  in(u8({2}, {1, 4})), in(i8({2}, {1, 0}))});
  CHECK(y.dtype() == DType::I32);
  check_ints(y, {2, 2}, {5, 2, 5, 2});
  // No zero points, batched and broadcast: [2,1,2] x [2,1] -> [2,1,1].
  check_ints(run1("MatMulInteger", {in(u8({2, 1, 2}, {255, 255, 1, 2})), in(i8({2, 1}, {-128, 127}))}), {2, 1, 1},
             {255 * -128 + 255 * 127, 1 * -128 + 2 * 127});
}

TEST_CASE("ref integer linalg: ConvInteger with padding and a per-channel weight zero point") {
  // x' = x - 1 = 0..8 on a 3x3 grid; both output channels have w' = 1 everywhere on 2x2.
  const Tensor x = u8({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = u8({2, 1, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
  auto y = run1("ConvInteger", {in(x), in(w), in(u8({}, {1})), in(u8({2}, {0, 1}))},
                {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  CHECK(y.dtype() == DType::I32);
  const std::vector<int64_t> plane = {0, 1, 3, 2, 3, 8, 12, 7, 9, 20, 24, 13, 6, 13, 15, 8};
  std::vector<int64_t> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  check_ints(y, {1, 2, 4, 4}, want);
  // Without zero points or padding: the 2x2 window sums of 1..9.
  check_ints(run1("ConvInteger", {in(x), in(u8({1, 1, 2, 2}, {1, 1, 1, 1}))}), {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST_CASE("ref integer linalg: QLinearMatMul rounds half to even and saturates") {
  // a' = [0, 10]; sums [20, 40]; multiplier 0.5 * 0.25 / 1 = 0.125 -> 2.5, 5.
  const Tensor a = u8({1, 2}, {10, 20}), b = u8({2, 2}, {1, 2, 2, 4});
  auto y = run1("QLinearMatMul", {in(a), in(f32({}, {0.5f})), in(u8({}, {10})), in(b), in(f32({}, {0.25f})),
                                  in(u8({}, {0})), in(f32({}, {1})), in(u8({}, {252}))});
  CHECK(y.dtype() == DType::U8);
  check_ints(y, {1, 2}, {254, 255});  // 2.5 -> 2 (+252); 5 + 252 saturates to 255
  auto z = run1("QLinearMatMul", {in(a), in(f32({}, {0.5f})), in(u8({}, {10})), in(b), in(f32({}, {0.25f})),
                                  in(u8({}, {0})), in(f32({}, {1})), in(u8({}, {5}))});
  check_ints(z, {1, 2}, {7, 10});
}

TEST_CASE("ref integer linalg: QLinearConv with per-channel weight scale and bias") {
  // x' = [0, 2, 4, 6]; channel 0: (x' + 1) * 0.5 / 0.25; channel 1: -2 x' * 0.25 / 0.25.
  auto y = run1("QLinearConv", {in(u8({1, 1, 2, 2}, {2, 4, 6, 8})), in(f32({}, {0.5f})), in(u8({}, {2})),
                                in(i8({2, 1, 1, 1}, {1, -2})), in(f32({2}, {1, 0.5f})), in(i8({}, {0})),
                                in(f32({}, {0.25f})), in(i8({}, {0})),
                                in(typed({2}, {1, 0}, DType::I32))});
  CHECK(y.dtype() == DType::I8);
  check_ints(y, {1, 2, 2, 2}, {2, 6, 10, 14, 0, -4, -8, -12});
}

TEST_CASE("ref integer linalg: errors") {
  // Float data is not integer linear algebra.
  check_error(run_op("MatMulInteger", {in(f32({1, 1}, {1})), in(u8({1, 1}, {1}))}), {"A must be int8 or uint8"});
  check_error(run_op("MatMulInteger", {in(u8({1, 2}, {1, 1})), in(u8({3, 1}, {1, 1, 1}))}), {"inner dimensions"});
  check_error(run_op("ConvInteger", {in(u8({1, 1, 3, 3}, std::vector<int64_t>(9, 1))), in(u8({1, 1, 2, 2}, {1, 1, 1, 1})),
                                     in(u8({}, {0})), in(u8({3}, {0, 0, 0}))}),
              {"w_zero_point has 3 values"});
}

}  // namespace hpf::test
