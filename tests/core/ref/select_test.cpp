// Reference interpreter: selection ops with data-dependent output sizes (TopK, Unique, Compress,
// NonZero). Expectations are worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor bools(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v, DType::BOOL)).value();
}

std::vector<Tensor> run_n(const std::string& op, std::vector<Arg> args, Attributes attrs, int n) {
  auto r = run_op(op, std::move(args), std::move(attrs), n);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("ref select: TopK largest and smallest along an axis, ties keep the lower index") {
  const Tensor x = f32({2, 4}, {3, 1, 3, 2, 0, 5, -1, 5});
  SUBCASE("k as a runtime input, default axis -1, largest") {
    auto r = run_n("TopK", {in(x), in(i64({1}, {3}))}, {}, 2);
    check_close(r[0], {2, 3}, {3, 3, 2, 5, 5, 0});
    check_ints(r[1], {2, 3}, {0, 2, 3, 1, 3, 0});
  }
  SUBCASE("smallest, axis 0, constant k") {
    auto r = run_n("TopK", {in(x), cst(i64({1}, {1}))},
                   {{"axis", int64_t{0}}, {"largest", int64_t{0}}}, 2);
    check_close(r[0], {1, 4}, {0, 1, -1, 2});
    check_ints(r[1], {1, 4}, {1, 0, 1, 0});
  }
  SUBCASE("k as an attribute (before opset 10), k = 0 gives an empty axis") {
    auto r = run_n("TopK", {in(x)}, {{"k", int64_t{2}}}, 2);
    check_ints(r[1], {2, 2}, {0, 2, 1, 3});
    auto e = run_n("TopK", {in(x), in(i64({1}, {0}))}, {}, 2);
    check_close(e[0], {2, 0}, {});
  }
  SUBCASE("integers and NaN: NaN counts as the largest value") {
    auto r = run_n("TopK", {in(i64({4}, {7, -3, 9, 7})), in(i64({1}, {2}))}, {}, 2);
    check_ints(r[0], {2}, {9, 7});
    check_ints(r[1], {2}, {2, 0});
    auto n = run_n("TopK", {in(f32({3}, {1, kNaN, 2})), in(i64({1}, {2}))}, {}, 2);
    CHECK(std::isnan(n[0].to_f32()[0]));
    check_ints(n[1], {2}, {1, 2});
  }
  SUBCASE("k larger than the axis is an error") {
    check_error(run_op("TopK", {in(x), in(i64({1}, {5}))}, {}, 2),
                {"node 'node' (TopK)", "k 5 is outside [0, 4]"});
  }
}

TEST_CASE("ref select: Unique without an axis, sorted and in order of first occurrence") {
  const Tensor x = f32({7}, {4, 1, 4, 0, 1, 1, -2});
  auto s = run_n("Unique", {in(x)}, {}, 4);
  check_close(s[0], {4}, {-2, 0, 1, 4});
  check_ints(s[1], {4}, {6, 3, 1, 0});
  check_ints(s[2], {7}, {3, 2, 3, 1, 2, 2, 0});
  check_ints(s[3], {4}, {1, 1, 3, 2});
  auto u = run_n("Unique", {in(x)}, {{"sorted", int64_t{0}}}, 4);
  check_close(u[0], {4}, {4, 1, 0, -2});
  check_ints(u[1], {4}, {0, 1, 3, 6});
  check_ints(u[2], {7}, {0, 1, 0, 2, 1, 1, 3});
  check_ints(u[3], {4}, {2, 3, 1, 1});
  // A 2-D input is flattened; a single output is fine.
  check_ints(run1("Unique", {in(i64({2, 2}, {5, 5, 2, 5}))}), {2}, {2, 5});
}

TEST_CASE("ref select: Unique along an axis compares whole slices") {
  // Columns of [[1,0,1],[2,3,2]]: (1,2), (0,3), (1,2).
  const Tensor x = f32({2, 3}, {1, 0, 1, 2, 3, 2});
  auto r = run_n("Unique", {in(x)}, {{"axis", int64_t{1}}}, 4);
  check_close(r[0], {2, 2}, {0, 1, 3, 2});
  check_ints(r[1], {2}, {1, 0});
  check_ints(r[2], {3}, {1, 0, 1});
  check_ints(r[3], {2}, {1, 2});
  auto u = run_n("Unique", {in(x)}, {{"axis", int64_t{-1}}, {"sorted", int64_t{0}}}, 4);
  check_close(u[0], {2, 2}, {1, 0, 2, 3});
  check_ints(u[2], {3}, {0, 1, 0});
  check_error(run_op("Unique", {in(x)}, {{"axis", int64_t{2}}}, 1), {"axis 2 is out of range"});
}

TEST_CASE("ref select: Compress along an axis and flattened") {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  check_close(run1("Compress", {in(x), in(bools({3}, {1, 0, 1}))}, {{"axis", int64_t{0}}}), {2, 2},
              {1, 2, 5, 6});
  check_close(run1("Compress", {in(x), in(bools({2}, {0, 1}))}, {{"axis", int64_t{-1}}}), {3, 1},
              {2, 4, 6});
  // A shorter condition selects from its length only; without an axis the input is flattened.
  check_close(run1("Compress", {in(x), in(bools({4}, {0, 1, 0, 1}))}), {2}, {2, 4});
  check_close(run1("Compress", {in(x), in(bools({1}, {0}))}, {{"axis", int64_t{1}}}), {3, 0}, {});
  check_error(run_op("Compress", {in(x), in(bools({4}, {0, 0, 0, 1}))}, {{"axis", int64_t{0}}}),
              {"condition is true at 3, beyond the 3 entries"});
}

TEST_CASE("ref select: NonZero lists coordinates row-major") {
  check_ints(run1("NonZero", {in(f32({2, 3}, {0, 2, 0, kNaN, 0, -1}))}), {2, 3},
             {0, 1, 1, 1, 0, 2});
  check_ints(run1("NonZero", {in(i64({4}, {0, 7, 0, 0}))}), {1, 1}, {1});
  check_ints(run1("NonZero", {in(bools({2, 2}, {0, 0, 0, 0}))}), {2, 0}, {});
}

}  // namespace hpf::test
