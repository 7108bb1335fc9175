// Conv and ConvTranspose on the reference interpreter: hand-computed cases plus randomized
// checks against direct formulas written here.
#include <random>

#include "ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

using Ints = std::vector<int64_t>;

std::vector<float> iota_f(int64_t n, float start = 1.0f) {
  std::vector<float> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + static_cast<float>(k);
  return v;
}

TEST_CASE("Conv 2-D with padding and stride") {
  // Padded 5x5 input, 2x2 kernel [[1,2],[3,4]] at stride 2.
  auto y = run1("Conv", {in(f32({1, 1, 3, 3}, iota_f(9))), cst(f32({1, 1, 2, 2}, {1, 2, 3, 4}))},
                {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  check_close(y, {1, 1, 2, 2}, {4, 18, 36, 77});
}

TEST_CASE("Conv 2-D with dilation") {
  // x(r,c) = 4r+c; a 2x2 kernel of ones dilated by 2 sums x[i][j], x[i][j+2], x[i+2][j],
  // x[i+2][j+2].
  auto y =
      run1("Conv", {in(f32({1, 1, 4, 4}, iota_f(16, 0))), cst(f32({1, 1, 2, 2}, {1, 1, 1, 1}))},
           {{"dilations", Ints{2, 2}}});
  check_close(y, {1, 1, 2, 2}, {20, 24, 36, 40});
}

TEST_CASE("Conv with groups uses each group's own input channels") {
  // Output 0 reads channels 0,1; output 1 reads channels 2,3.
  auto y =
      run1("Conv", {in(f32({1, 4, 1, 2}, iota_f(8))), cst(f32({2, 2, 1, 1}, {1, 10, 100, 1000}))},
           {{"group", int64_t{2}}});
  check_close(y, {1, 2, 1, 2}, {31, 42, 7500, 8600});
}

TEST_CASE("Conv depthwise with bias") {
  auto y = run1("Conv",
                {in(f32({1, 3, 1, 3}, iota_f(9))), cst(f32({3, 1, 1, 2}, {1, 0, 0, 1, 1, -1})),
                 cst(f32({3}, {10, 20, 30}))},
                {{"group", int64_t{3}}});
  check_close(y, {1, 3, 1, 2}, {11, 12, 25, 26, 29, 29});
}

TEST_CASE("Conv 1-D") {
  auto y = run1("Conv", {in(f32({1, 1, 5}, iota_f(5))), cst(f32({1, 1, 3}, {1, 0, -1}))},
                {{"pads", Ints{1, 1}}});
  check_close(y, {1, 1, 5}, {-2, -2, -2, -2, 4});
}

TEST_CASE("Conv 3-D") {
  // x(d,h,w) = 4d+2h+w+1.
  SUBCASE("full window") {
    auto y = run1("Conv", {in(f32({1, 1, 2, 2, 2}, iota_f(8))),
                           cst(f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.0f)))});
    check_close(y, {1, 1, 1, 1, 1}, {36});
  }
  SUBCASE("kernel along depth only") {
    auto y =
        run1("Conv", {in(f32({1, 1, 2, 2, 2}, iota_f(8))), cst(f32({1, 1, 2, 1, 1}, {1, 10}))});
    check_close(y, {1, 1, 1, 2, 2}, {51, 62, 73, 84});
  }
}

TEST_CASE("Conv auto_pad") {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = f32({1, 1, 2}, {1, 2});
  SUBCASE("SAME_UPPER pads the end") {
    check_close(run1("Conv", {in(x), cst(w)}, {{"auto_pad", std::string("SAME_UPPER")}}), {1, 1, 4},
                {5, 8, 11, 4});
  }
  SUBCASE("SAME_LOWER pads the start") {
    check_close(run1("Conv", {in(x), cst(w)}, {{"auto_pad", std::string("SAME_LOWER")}}), {1, 1, 4},
                {2, 5, 8, 11});
  }
  SUBCASE("VALID pads nothing") {
    check_close(run1("Conv", {in(x), cst(w)}, {{"auto_pad", std::string("VALID")}}), {1, 1, 3},
                {5, 8, 11});
  }
}

TEST_CASE("Conv batch of one and of zero") {
  const Tensor w = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attributes attrs{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}};
  SUBCASE("batch 2 repeats the batch-1 result per image") {
    auto x = iota_f(9);
    for (int k = 0; k < 9; ++k) x.push_back(2.0f * static_cast<float>(k + 1));
    check_close(run1("Conv", {in(f32({2, 1, 3, 3}, x)), cst(w)}, attrs), {2, 1, 2, 2},
                {4, 18, 36, 77, 8, 36, 72, 154});
  }
  SUBCASE("batch 0") {
    auto y = run1("Conv", {in(f32({0, 1, 3, 3}, {})), cst(w)}, attrs);
    CHECK(y.shape() == Ints{0, 1, 2, 2});
    CHECK(y.numel() == 0);
  }
}

TEST_CASE("Conv channel mismatch names the node and the shapes") {
  SUBCASE("caught by shape inference") {
    auto r = run_op("Conv", {in(f32({1, 3, 3, 3}, iota_f(27))), cst(f32({1, 2, 2, 2}, iota_f(8)))});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK(r.status().message().find("node 'node'") != std::string::npos);
    CHECK(r.status().message().find("3 channels") != std::string::npos);
  }
  SUBCASE("caught by the kernel when the channel count is symbolic") {
    GraphBuilder b("conv_mismatch");
    auto x = b.input("x", DType::F32, {1, Dim::sym("c"), 3, 3});
    auto w = b.constant("w", f32({1, 2, 2, 2}, iota_f(8)));
    b.output(b.op1("Conv", {x, w}, {}, "conv1"));
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    auto r = ref::run(*g, {f32({1, 3, 3, 3}, iota_f(27))});
    REQUIRE_FALSE(r.ok());
    const std::string& m = r.status().message();
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK_MESSAGE(m.find("node 'conv1' (Conv)") != std::string::npos, m);
    CHECK_MESSAGE(m.find("[1,3,3,3]") != std::string::npos, m);
    CHECK_MESSAGE(m.find("[1,2,2,2]") != std::string::npos, m);
  }
}

// ---- ConvTranspose ----

TEST_CASE("ConvTranspose 1-D stride 2, output_padding, pads, output_shape") {
  // Each input x[i] adds x[i] * w to outputs 2i..2i+2: [1,1,3,2,5,3,3] before cropping.
  const Tensor x = f32({1, 1, 3}, {1, 2, 3});
  const Tensor w = f32({1, 1, 3}, {1, 1, 1});
  SUBCASE("plain") {
    check_close(run1("ConvTranspose", {in(x), cst(w)}, {{"strides", Ints{2}}}), {1, 1, 7},
                {1, 1, 3, 2, 5, 3, 3});
  }
  SUBCASE("output_padding extends the end") {
    check_close(
        run1("ConvTranspose", {in(x), cst(w)}, {{"strides", Ints{2}}, {"output_padding", Ints{1}}}),
        {1, 1, 8}, {1, 1, 3, 2, 5, 3, 3, 0});
  }
  SUBCASE("pads crop both ends") {
    check_close(
        run1("ConvTranspose", {in(x), cst(w)}, {{"strides", Ints{2}}, {"pads", Ints{1, 1}}}),
        {1, 1, 5}, {1, 3, 2, 5, 3});
  }
  SUBCASE("output_shape crops the odd pad at the start (NOTSET)") {
    check_close(
        run1("ConvTranspose", {in(x), cst(w)}, {{"strides", Ints{2}}, {"output_shape", Ints{6}}}),
        {1, 1, 6}, {1, 3, 2, 5, 3, 3});
  }
}

TEST_CASE("ConvTranspose 2-D stride 2 places a scaled kernel per input pixel") {
  auto y = run1("ConvTranspose",
                {in(f32({1, 1, 2, 2}, {1, 2, 3, 4})), cst(f32({1, 1, 2, 2}, {1, 2, 3, 4}))},
                {{"strides", Ints{2, 2}}});
  check_close(y, {1, 1, 4, 4}, {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16});
}

TEST_CASE("ConvTranspose groups: output channels are W.shape[1] * group") {
  // W [C=2, M/group=2, 1]: group 0 maps channel 0 to outputs 0,1; group 1 channel 1 to 2,3.
  auto y = run1("ConvTranspose",
                {in(f32({1, 2, 2}, {1, 2, 3, 4})), cst(f32({2, 2, 1}, {1, 2, 3, 4})),
                 cst(f32({4}, {0, 0, 0, 1}))},
                {{"group", int64_t{2}}});
  check_close(y, {1, 4, 2}, {1, 2, 2, 4, 9, 12, 13, 17});
}

// ---- randomized checks against direct formulas ----

struct ConvCase {
  int64_t n, c, m, group, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

ConvCase random_case(std::mt19937& rng) {
  ConvCase k;
  k.group = pick(rng, 1, 3);
  k.c = k.group * pick(rng, 1, 3);
  k.m = k.group * pick(rng, 1, 3);
  k.n = pick(rng, 1, 2);
  k.kh = pick(rng, 1, 3), k.kw = pick(rng, 1, 3);
  k.sh = pick(rng, 1, 3), k.sw = pick(rng, 1, 3);
  k.dh = pick(rng, 1, 2), k.dw = pick(rng, 1, 2);
  k.pt = pick(rng, 0, 2), k.pl = pick(rng, 0, 2), k.pb = pick(rng, 0, 2), k.pr = pick(rng, 0, 2);
  k.h = pick(rng, (k.kh - 1) * k.dh + 1, 9), k.w = pick(rng, (k.kw - 1) * k.dw + 1, 9);
  return k;
}

std::vector<float> random_values(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST_CASE("Conv matches the direct formula on random cases") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 40; ++trial) {
    const ConvCase k = random_case(rng);
    const int64_t cg = k.c / k.group, mg = k.m / k.group;
    const int64_t oh = (k.h + k.pt + k.pb - ((k.kh - 1) * k.dh + 1)) / k.sh + 1;
    const int64_t ow = (k.w + k.pl + k.pr - ((k.kw - 1) * k.dw + 1)) / k.sw + 1;
    const auto x = random_values(rng, k.n * k.c * k.h * k.w);
    const auto w = random_values(rng, k.m * cg * k.kh * k.kw);
    const auto b = random_values(rng, k.m);
    std::vector<float> want;
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t m = 0; m < k.m; ++m)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double s = b[m];
            for (int64_t cl = 0; cl < cg; ++cl)
              for (int64_t u = 0; u < k.kh; ++u)
                for (int64_t v = 0; v < k.kw; ++v) {
                  const int64_t r = i * k.sh + u * k.dh - k.pt, q = j * k.sw + v * k.dw - k.pl;
                  if (r < 0 || r >= k.h || q < 0 || q >= k.w) continue;
                  const int64_t c = (m / mg) * cg + cl;
                  s += double(x[((n * k.c + c) * k.h + r) * k.w + q]) *
                       w[((m * cg + cl) * k.kh + u) * k.kw + v];
                }
            want.push_back(static_cast<float>(s));
          }
    CAPTURE(trial);
    auto y = run1(
        "Conv",
        {in(f32({k.n, k.c, k.h, k.w}, x)), cst(f32({k.m, cg, k.kh, k.kw}, w)), cst(f32({k.m}, b))},
        {{"group", k.group},
         {"strides", Ints{k.sh, k.sw}},
         {"dilations", Ints{k.dh, k.dw}},
         {"pads", Ints{k.pt, k.pl, k.pb, k.pr}}});
    check_close(y, {k.n, k.m, oh, ow}, want);
  }
}

TEST_CASE("ConvTranspose matches the direct formula on random cases") {
  std::mt19937 rng(4321);
  for (int trial = 0; trial < 40; ++trial) {
    ConvCase k = random_case(rng);
    // Keep the pads below the kernel extent so the output is never empty.
    k.pt = std::min(k.pt, (k.kh - 1) * k.dh), k.pb = std::min(k.pb, (k.kh - 1) * k.dh);
    k.pl = std::min(k.pl, (k.kw - 1) * k.dw), k.pr = std::min(k.pr, (k.kw - 1) * k.dw);
    const int64_t cg = k.c / k.group, mg = k.m / k.group;
    const int64_t oh = k.sh * (k.h - 1) + (k.kh - 1) * k.dh + 1 - k.pt - k.pb;
    const int64_t ow = k.sw * (k.w - 1) + (k.kw - 1) * k.dw + 1 - k.pl - k.pr;
    const auto x = random_values(rng, k.n * k.c * k.h * k.w);
    const auto w = random_values(rng, k.c * mg * k.kh * k.kw);
    std::vector<float> want;
    // Gather form: output (i,j) takes input (r,q) through tap (u,v) when r*s + u*d - pad = i.
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t m = 0; m < k.m; ++m)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double s = 0;
            for (int64_t cl = 0; cl < cg; ++cl)
              for (int64_t u = 0; u < k.kh; ++u)
                for (int64_t v = 0; v < k.kw; ++v) {
                  const int64_t rr = i + k.pt - u * k.dh, qq = j + k.pl - v * k.dw;
                  if (rr % k.sh != 0 || qq % k.sw != 0) continue;
                  const int64_t r = rr / k.sh, q = qq / k.sw;
                  if (r < 0 || r >= k.h || q < 0 || q >= k.w) continue;
                  const int64_t c = (m / mg) * cg + cl;
                  s += double(x[((n * k.c + c) * k.h + r) * k.w + q]) *
                       w[((c * mg + m % mg) * k.kh + u) * k.kw + v];
                }
            want.push_back(static_cast<float>(s));
          }
    CAPTURE(trial);
    auto y = run1("ConvTranspose",
                  {in(f32({k.n, k.c, k.h, k.w}, x)), cst(f32({k.c, mg, k.kh, k.kw}, w))},
                  {{"group", k.group},
                   {"strides", Ints{k.sh, k.sw}},
                   {"dilations", Ints{k.dh, k.dw}},
                   {"pads", Ints{k.pt, k.pl, k.pb, k.pr}}});
    check_close(y, {k.n, k.m, oh, ow}, want);
  }
}

}  // namespace
}  // namespace hpf::test
