// MaxPool, AveragePool and GlobalAveragePool on the reference interpreter, hand-computed.
#include "ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

using Ints = std::vector<int64_t>;

std::vector<Tensor> run_n(const std::string& op, std::vector<Arg> args, Attributes attrs,
                          int outputs = 1) {
  auto r = run_op(op, std::move(args), std::move(attrs), outputs);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  REQUIRE(r->size() == static_cast<size_t>(outputs));
  return *r;
}
Tensor run1(const std::string& op, std::vector<Arg> args, Attributes attrs) {
  return run_n(op, std::move(args), std::move(attrs))[0];
}

TEST_CASE("MaxPool 2x2 stride 2") {
  std::vector<float> x(16);
  for (int k = 0; k < 16; ++k) x[k] = static_cast<float>(k);
  auto y = run1("MaxPool", {in(f32({1, 1, 4, 4}, x))},
                {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  check_close(y, {1, 1, 2, 2}, {5, 7, 13, 15});
}

TEST_CASE("MaxPool: padding never wins, indices point into the input") {
  // All inputs negative: a padding cell counted as 0 would win every window.
  auto ys =
      run_n("MaxPool", {in(f32({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9}))},
            {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}, 2);
  check_close(ys[0], {1, 1, 2, 2}, {-1, -2, -4, -5});
  check_ints(ys[1], {1, 1, 2, 2}, {0, 1, 3, 4});
}

TEST_CASE("MaxPool indices count batch and channel planes, storage_order 1 is column-major") {
  const Tensor x = f32({1, 2, 2, 2}, {1, 4, 3, 2, 5, 6, 8, 7});
  const Attributes row_major{{"kernel_shape", Ints{2, 2}}};
  auto ys = run_n("MaxPool", {in(x)}, row_major, 2);
  check_close(ys[0], {1, 2, 1, 1}, {4, 8});
  check_ints(ys[1], {1, 2, 1, 1}, {1, 6});
  auto cm =
      run_n("MaxPool", {in(x)}, {{"kernel_shape", Ints{2, 2}}, {"storage_order", int64_t{1}}}, 2);
  check_ints(cm[1], {1, 2, 1, 1}, {2, 5});
}

TEST_CASE("Pools with pads and stride 2, count_include_pad both ways") {
  // 3x3 input 1..9, 3x3 windows at stride 2 starting at (-1,-1): each window holds 4 real cells.
  const Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Attributes a{
      {"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  auto ys = run_n("MaxPool", {in(x)}, a, 2);
  check_close(ys[0], {1, 1, 2, 2}, {5, 6, 8, 9});
  check_ints(ys[1], {1, 1, 2, 2}, {4, 5, 7, 8});
  check_close(run1("AveragePool", {in(x)}, a), {1, 1, 2, 2}, {3, 4, 6, 7});
  Attributes inc = a;
  inc["count_include_pad"] = int64_t{1};
  check_close(run1("AveragePool", {in(x)}, inc), {1, 1, 2, 2},
              {12.0f / 9, 16.0f / 9, 24.0f / 9, 28.0f / 9});
}

TEST_CASE("ceil_mode adds a partial window") {
  const Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  const Attributes floor_mode{{"kernel_shape", Ints{2}}, {"strides", Ints{2}}};
  Attributes ceil_mode = floor_mode;
  ceil_mode["ceil_mode"] = int64_t{1};
  check_close(run1("MaxPool", {in(x)}, floor_mode), {1, 1, 2}, {2, 4});
  check_close(run1("MaxPool", {in(x)}, ceil_mode), {1, 1, 3}, {2, 4, 5});
  check_close(run1("AveragePool", {in(x)}, ceil_mode), {1, 1, 3}, {1.5f, 3.5f, 5});
  // With no pads the overhang never counts, even with count_include_pad.
  ceil_mode["count_include_pad"] = int64_t{1};
  check_close(run1("AveragePool", {in(x)}, ceil_mode), {1, 1, 3}, {1.5f, 3.5f, 5});
}

TEST_CASE("ceil_mode drops a window that would start in the end padding") {
  // in 4, kernel 2, stride 2, pads [0,1]: a third window would start at 4, inside the padding.
  auto y = run1("MaxPool", {in(f32({1, 1, 4}, {1, 2, 3, 4}))},
                {{"kernel_shape", Ints{2}},
                 {"strides", Ints{2}},
                 {"pads", Ints{0, 1}},
                 {"ceil_mode", int64_t{1}}});
  check_close(y, {1, 1, 2}, {2, 4});
}

TEST_CASE("count_include_pad counts explicit pads but not the ceil_mode overhang") {
  // in 6, kernel 3, stride 2, pads [1,1], ceil: windows start at -1, 1, 3, 5. The last covers 5
  // (real), 6 (end pad) and 7 (beyond the padded input).
  const Tensor x = f32({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  Attributes a{{"kernel_shape", Ints{3}},
               {"strides", Ints{2}},
               {"pads", Ints{1, 1}},
               {"ceil_mode", int64_t{1}}};
  check_close(run1("MaxPool", {in(x)}, a), {1, 1, 4}, {2, 4, 6, 6});
  check_close(run1("AveragePool", {in(x)}, a), {1, 1, 4}, {1.5f, 3, 5, 6});
  a["count_include_pad"] = int64_t{1};
  check_close(run1("AveragePool", {in(x)}, a), {1, 1, 4}, {1, 3, 5, 3});
}

TEST_CASE("Pools with dilations") {
  const Tensor x = f32({1, 1, 5}, {1, 5, 2, 4, 3});
  const Attributes a{{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}};
  check_close(run1("MaxPool", {in(x)}, a), {1, 1, 3}, {2, 5, 3});
  check_close(run1("AveragePool", {in(x)}, a), {1, 1, 3}, {1.5f, 4.5f, 2.5f});
  // Windows start at -1, 1, 3 with taps (-1,1), (1,3), (3,5); -1 and 5 are padding, so with
  // count_include_pad every window divides by 2.
  const Attributes p{{"kernel_shape", Ints{2}},
                     {"dilations", Ints{2}},
                     {"pads", Ints{1, 1}},
                     {"strides", Ints{2}},
                     {"count_include_pad", int64_t{1}}};
  check_close(run1("AveragePool", {in(x)}, p), {1, 1, 3}, {2.5f, 4.5f, 2});
}

TEST_CASE("AveragePool SAME_UPPER") {
  auto y = run1("AveragePool", {in(f32({1, 1, 4}, {1, 2, 3, 4}))},
                {{"kernel_shape", Ints{3}}, {"auto_pad", std::string("SAME_UPPER")}});
  check_close(y, {1, 1, 4}, {1.5f, 2, 3, 3.5f});
}

TEST_CASE("GlobalAveragePool") {
  auto y = run1("GlobalAveragePool", {in(f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40}))}, {});
  check_close(y, {1, 2, 1, 1}, {2.5f, 25});
  auto y3 = run1("GlobalAveragePool", {in(f32({2, 1, 1, 1, 3}, {1, 2, 6, -1, -2, -6}))}, {});
  check_close(y3, {2, 1, 1, 1, 1}, {3, -3});
}

TEST_CASE("GlobalMaxPool on floats, NaN and integers") {
  check_close(run1("GlobalMaxPool", {in(f32({1, 2, 2, 2}, {1, 5, 3, 4, -10, -20, -3, -40}))}, {}),
              {1, 2, 1, 1}, {5, -3});
  check_close(run1("GlobalMaxPool", {in(f32({1, 1, 3}, {1, NAN, 2}))}, {}), {1, 1, 1}, {NAN});
  check_ints(run1("GlobalMaxPool", {in(i64({2, 1, 2}, {-5, -7, 3, 9}))}, {}), {2, 1, 1}, {-5, 9});
}

TEST_CASE("MaxUnpool scatters to MaxPool's input positions") {
  const Tensor x = f32({1, 1, 2, 2}, {5, 6, 7, 8});
  const Attributes k2s2 = {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  check_close(run1("MaxUnpool", {in(x), in(i64({1, 1, 2, 2}, {5, 7, 13, 15}))}, k2s2), {1, 1, 4, 4},
              {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8});
  // pads shrink the unpooled shape: (2 - 1) * 2 + 2 - 1 = 3.
  Attributes padded = k2s2;
  padded["pads"] = Ints{0, 0, 1, 1};
  check_close(run1("MaxUnpool", {in(x), in(i64({1, 1, 2, 2}, {0, 2, 6, 8}))}, padded), {1, 1, 3, 3},
              {5, 0, 6, 0, 0, 0, 7, 0, 8});
  // A larger output_shape keeps the unpooled values in the leading corner.
  check_close(
      run1("MaxUnpool", {in(x), in(i64({1, 1, 2, 2}, {0, 2, 6, 8})), in(i64({4}, {1, 1, 4, 3}))},
           padded),
      {1, 1, 4, 3}, {5, 0, 6, 0, 0, 0, 7, 0, 8, 0, 0, 0});
  auto r = run_op("MaxUnpool", {in(x), in(i64({1, 1, 2, 2}, {0, 1, 2, 16}))}, k2s2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("index 16 is outside the unpooled tensor [1,1,4,4]") !=
        std::string::npos);
}

}  // namespace
}  // namespace hpf::test
