// Reference interpreter: ScatterElements (with reductions), ScatterND and GatherND (with
// batch_dims). Expectations are worked out by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {

TEST_CASE("ref scatter: ScatterElements along axis 0 and 1, negative indices") {
  const Tensor data = f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor idx = i64({2, 3}, {1, 0, 2, 0, 2, 1});
  const Tensor upd = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run1("ScatterElements", {in(data), in(idx), in(upd)}), {3, 3},
              {4, 2, 0, 1, 0, 6, 0, 5, 3});
  const Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  check_close(
      run1("ScatterElements", {in(row), in(i64({1, 2}, {1, -2})), in(f32({1, 2}, {10, 20}))},
           {{"axis", int64_t{1}}}),
      {1, 5}, {1, 10, 3, 20, 5});
}

TEST_CASE("ref scatter: ScatterElements reductions apply duplicates in order") {
  const Tensor row = f32({1, 4}, {1, 2, 3, 4});
  const Tensor idx = i64({1, 3}, {1, 1, 3});
  const Tensor upd = f32({1, 3}, {5, 7, -2});
  auto with = [&](const char* r) {
    return run1("ScatterElements", {in(row), in(idx), in(upd)},
                {{"axis", int64_t{1}}, {"reduction", std::string(r)}});
  };
  check_close(with("none"), {1, 4}, {1, 7, 3, -2});
  check_close(with("add"), {1, 4}, {1, 14, 3, 2});
  check_close(with("mul"), {1, 4}, {1, 70, 3, -8});
  check_close(with("max"), {1, 4}, {1, 7, 3, 4});
  check_close(with("min"), {1, 4}, {1, 2, 3, -2});
  // Integers stay exact.
  check_ints(run1("ScatterElements",
                  {in(i64({3}, {1, 2, 3})), in(i64({2}, {0, 0})), in(i64({2}, {10, 20}))},
                  {{"reduction", std::string("add")}}),
             {3}, {31, 2, 3});
}

TEST_CASE("ref scatter: ScatterElements errors name the index and the axis") {
  const Tensor row = f32({1, 4}, {1, 2, 3, 4});
  check_error(run_op("ScatterElements", {in(row), in(i64({1, 1}, {4})), in(f32({1, 1}, {0}))},
                     {{"axis", int64_t{1}}}),
              {"node 'node' (ScatterElements)", "index 4 is out of range for axis 1 of size 4"});
  check_error(run_op("ScatterElements", {in(row), in(i64({1, 1}, {0})), in(f32({1, 1}, {0}))},
                     {{"reduction", std::string("avg")}}),
              {"reduction must be"});
}

TEST_CASE("ref scatter: ScatterND writes elements and slices, with reductions") {
  const Tensor data = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // Full index tuples write single elements.
  check_close(run1("ScatterND", {in(data), in(i64({2, 2}, {0, 2, 1, 0})), in(f32({2}, {30, 40}))}),
              {2, 3}, {1, 2, 30, 40, 5, 6});
  // A partial tuple writes a row; duplicates add up with reduction add.
  check_close(
      run1("ScatterND", {in(data), in(i64({2, 1}, {1, 1})), in(f32({2, 3}, {1, 1, 1, 2, 2, 2}))},
           {{"reduction", std::string("add")}}),
      {2, 3}, {1, 2, 3, 7, 8, 9});
  check_close(run1("ScatterND", {in(data), in(i64({1, 1}, {-2})), in(f32({1, 3}, {2, 2, 2}))},
                   {{"reduction", std::string("mul")}}),
              {2, 3}, {2, 4, 6, 4, 5, 6});
  check_error(run_op("ScatterND", {in(data), in(i64({1, 1}, {0})), in(f32({1, 2}, {0, 0}))}),
              {"updates [1,2] must have shape [1,3]"});
}

TEST_CASE("ref gather: GatherND with and without batch_dims") {
  const Tensor data = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  check_ints(run1("GatherND", {in(data), in(i64({2, 3}, {0, 1, 1, 1, 0, 0}))}), {2}, {3, 4});
  check_ints(run1("GatherND", {in(data), in(i64({2, 1}, {1, 0}))}), {2, 2, 2},
             {4, 5, 6, 7, 0, 1, 2, 3});
  check_ints(run1("GatherND", {in(data), in(i64({1, 2}, {-1, 0}))}), {1, 2}, {4, 5});
  // batch_dims 1: each batch entry indexes its own [2,2] slice.
  check_ints(
      run1("GatherND", {in(data), in(i64({2, 1, 2}, {0, 1, 1, 0}))}, {{"batch_dims", int64_t{1}}}),
      {2, 1}, {1, 6});
  check_ints(run1("GatherND", {in(data), in(i64({2, 1}, {1, 0}))}, {{"batch_dims", int64_t{1}}}),
             {2, 2}, {2, 3, 4, 5});
  check_error(run_op("GatherND", {in(data), in(i64({1, 1}, {2}))}),
              {"index 2 is out of range for axis 0 of size 2"});
}

}  // namespace hpf::test
