// Integer quantisation: hand-computed cases, ties, saturation, error bounds on random data and
// the messages for bad parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hpf/dtype.hpp"

namespace {

using hpf::DType;
using hpf::QuantParams;
using Shape = std::vector<int64_t>;

// Quantises and returns the stored integers, unpacked and sign-extended by hand.
std::vector<int> quantize_ints(const std::vector<float>& x, const Shape& shape,
                               const QuantParams& p) {
  std::vector<std::byte> q(hpf::storage_bytes(p.type, x.size()));
  const hpf::Status s = hpf::quantize(x, shape, p, q);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  std::vector<int> out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (p.type == DType::I4) {
      const int nib = (static_cast<int>(q[i / 2]) >> (4 * (i % 2))) & 0xF;
      out.push_back(nib >= 8 ? nib - 16 : nib);
    } else if (p.type == DType::I8) {
      out.push_back(static_cast<int8_t>(q[i]));
    } else {
      out.push_back(static_cast<int>(q[i]));
    }
  }
  return out;
}

QuantParams params(DType t, std::vector<float> scales, std::vector<int32_t> zps = {}, int axis = -1,
                   int group = 0) {
  QuantParams p;
  p.type = t;
  p.scales = std::move(scales);
  p.zero_points = std::move(zps);
  p.axis = axis;
  p.group_size = group;
  return p;
}

std::string quantize_error(const std::vector<float>& x, const Shape& shape, const QuantParams& p,
                           size_t bytes) {
  std::vector<std::byte> q(bytes);
  const hpf::Status s = hpf::quantize(x, shape, p, q);
  CHECK(s.code() == hpf::StatusCode::invalid_argument);
  return s.message();
}

std::string choose_error(const std::vector<float>& x, const Shape& shape, DType t, bool sym,
                         int axis = -1, int group = 0) {
  auto r = hpf::choose_quant_params(x, shape, t, sym, axis, group);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == hpf::StatusCode::invalid_argument);
  return r.status().message();
}

}  // namespace

TEST_CASE("quantize: ranges of the quantised types") {
  CHECK(hpf::qmin(DType::I8) == -128);
  CHECK(hpf::qmax(DType::I8) == 127);
  CHECK(hpf::qmin(DType::U8) == 0);
  CHECK(hpf::qmax(DType::U8) == 255);
  CHECK(hpf::qmin(DType::I4) == -8);
  CHECK(hpf::qmax(DType::I4) == 7);
}

TEST_CASE("quantize: per tensor symmetric I8, with ties to even") {
  const std::vector<float> x = {-127, 63.5f, 64.5f, 127, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0};
  const Shape shape = {10};
  auto p = hpf::choose_quant_params(x, shape, DType::I8, true);
  REQUIRE(p.ok());
  CHECK(p->scales == std::vector<float>{1.0f});
  CHECK(p->zero_points.empty());
  CHECK(p->axis == -1);
  CHECK(quantize_ints(x, shape, *p) == std::vector<int>{-127, 64, 64, 127, 0, 0, 2, 2, -2, 0});

  // Ties in units of a non-unit scale: x / 0.5 = 0.5, 1.5, 2.5, -0.5, -1.5, 127.5.
  const std::vector<float> y = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, 63.75f};
  CHECK(quantize_ints(y, {6}, params(DType::I8, {0.5f})) == std::vector<int>{0, 2, 2, 0, -2, 127});

  std::vector<std::byte> q(10);
  REQUIRE(hpf::quantize(x, shape, *p, q).ok());
  std::vector<float> back(10);
  REQUIRE(hpf::dequantize(q, shape, *p, back).ok());
  CHECK(back == std::vector<float>{-127, 64, 64, 127, 0, 0, 2, 2, -2, 0});
}

TEST_CASE("quantize: per tensor asymmetric U8 and I8") {
  {
    const std::vector<float> x = {-51, 204, 0, 10.5f, 11.5f, 100};
    auto p = hpf::choose_quant_params(x, Shape{6}, DType::U8, false);
    REQUIRE(p.ok());
    CHECK(p->scales == std::vector<float>{1.0f});  // (204 - -51) / 255
    CHECK(p->zero_points == std::vector<int32_t>{51});
    CHECK(quantize_ints(x, {6}, *p) == std::vector<int>{0, 255, 51, 61, 63, 151});
  }
  {
    const std::vector<float> x = {-10, 245, 0, 3.5f};
    auto p = hpf::choose_quant_params(x, Shape{4}, DType::I8, false);
    REQUIRE(p.ok());
    CHECK(p->scales == std::vector<float>{1.0f});
    CHECK(p->zero_points == std::vector<int32_t>{-118});
    CHECK(quantize_ints(x, {4}, *p) == std::vector<int>{-128, 127, -118, -114});
  }
  {
    // The range is widened to include 0: positive data keeps zero point qmin.
    auto p = hpf::choose_quant_params(std::vector<float>{2, 4, 3}, Shape{3}, DType::U8, false);
    REQUIRE(p.ok());
    CHECK(p->scales[0] == 4.0f / 255.0f);
    CHECK(p->zero_points == std::vector<int32_t>{0});
    auto n = hpf::choose_quant_params(std::vector<float>{-3, -1}, Shape{2}, DType::I8, false);
    REQUIRE(n.ok());
    CHECK(n->scales[0] == 3.0f / 255.0f);
    CHECK(n->zero_points == std::vector<int32_t>{127});
  }
  {
    // 0 is exact: it quantises to the zero point and comes back as 0.
    const std::vector<float> x = {-1, 2, 0};
    auto p = hpf::choose_quant_params(x, Shape{3}, DType::U8, false);
    REQUIRE(p.ok());
    CHECK(p->zero_points == std::vector<int32_t>{85});
    std::vector<std::byte> q(3);
    REQUIRE(hpf::quantize(x, Shape{3}, *p, q).ok());
    CHECK(q[2] == std::byte{85});
    std::vector<float> back(3);
    REQUIRE(hpf::dequantize(q, Shape{3}, *p, back).ok());
    CHECK(back[2] == 0.0f);
  }
  {
    // Ties are rounded before the zero point is added.
    CHECK(quantize_ints({0.5f, 1.5f, 2.5f, -0.5f}, {4}, params(DType::U8, {1.0f}, {3})) ==
          std::vector<int>{3, 5, 5, 3});
  }
  for (bool symmetric : {true, false}) {
    auto z = hpf::choose_quant_params(std::vector<float>(4, 0.0f), Shape{4}, DType::I8, symmetric);
    REQUIRE(z.ok());
    CHECK(z->scales == std::vector<float>{1.0f});
    if (!symmetric) CHECK(z->zero_points == std::vector<int32_t>{0});
  }
}

TEST_CASE("quantize: per channel") {
  CHECK(quantize_ints({1, 2, 3, 1, 2, 3}, {2, 3}, params(DType::I8, {1.0f, 0.5f}, {}, 0)) ==
        std::vector<int>{1, 2, 3, 2, 4, 6});
  CHECK(quantize_ints({4, 4, 4, 8, 8, 8}, {2, 3}, params(DType::I8, {1, 2, 4}, {}, 1)) ==
        std::vector<int>{4, 2, 1, 8, 4, 2});
  // A middle axis: element (i, j, k) uses scales[j].
  CHECK(
      quantize_ints(std::vector<float>(12, 8.0f), {2, 3, 2}, params(DType::I8, {1, 2, 4}, {}, 1)) ==
      std::vector<int>{8, 8, 4, 4, 2, 2, 8, 8, 4, 4, 2, 2});
  // Per-channel zero points.
  CHECK(quantize_ints({0, 100, 0, 100}, {2, 2}, params(DType::U8, {1, 1}, {10, 200}, 0)) ==
        std::vector<int>{10, 110, 200, 255});

  const std::vector<float> x = {-127, 1, 2, -254, 0, 0.5f};
  auto rows = hpf::choose_quant_params(x, Shape{3, 2}, DType::I8, true, 0);
  REQUIRE(rows.ok());
  CHECK(rows->axis == 0);
  CHECK(rows->scales == std::vector<float>{1.0f, 2.0f, 0.5f / 127.0f});
  auto cols = hpf::choose_quant_params(x, Shape{3, 2}, DType::I8, true, 1);
  REQUIRE(cols.ok());
  CHECK(cols->axis == 1);
  CHECK(cols->scales == std::vector<float>{1.0f, 2.0f});
  CHECK(quantize_ints(x, {3, 2}, *cols) == std::vector<int>{-127, 0, 2, -127, 0, 0});
}

TEST_CASE("quantize: I4 group-wise, hand-computed") {
  // Two groups of 32 along the last axis: max |x| 7 and 14 give scales 1 and 2.
  std::vector<float> x(64, 0.0f);
  x[0] = 7;
  x[1] = -7;
  x[2] = 2.5f;   // tie -> 2
  x[3] = -3.5f;  // tie -> -4
  x[32] = 14;
  x[33] = -3;  // -1.5 -> -2
  x[34] = 5;   // 2.5 -> 2
  x[63] = -14;
  auto p = hpf::choose_quant_params(x, Shape{1, 64}, DType::I4, true, -1, 32);
  REQUIRE(p.ok());
  CHECK(p->group_size == 32);
  CHECK(p->scales == std::vector<float>{1.0f, 2.0f});
  std::vector<int> want(64, 0);
  want[0] = 7, want[1] = -7, want[2] = 2, want[3] = -4;
  want[32] = 7, want[33] = -2, want[34] = 2, want[63] = -7;
  CHECK(quantize_ints(x, {1, 64}, *p) == want);
  // Nibble order in the bytes: element 0 low.
  std::vector<std::byte> q(32);
  REQUIRE(hpf::quantize(x, Shape{1, 64}, *p, q).ok());
  CHECK(q[0] == std::byte{0x97});  // 7, -7
  CHECK(q[1] == std::byte{0xC2});  // 2, -4
}

TEST_CASE("quantize: I4 group-wise with groups of 32, 64 and 128") {
  const Shape shape = {2, 256};
  for (int g : {32, 64, 128}) {
    CAPTURE(g);
    // Group n gets scale 2^(n % 5 - 2) and the integer pattern -7..7, so every group reaches
    // |q| = 7 and the chosen scale is exact.
    std::vector<float> x(512);
    std::vector<int> want(512);
    for (size_t i = 0; i < x.size(); ++i) {
      const int k = static_cast<int>(i % 15) - 7;
      const float s = std::ldexp(1.0f, static_cast<int>((i / g) % 5) - 2);
      x[i] = static_cast<float>(k) * s;
      want[i] = k;
    }
    auto p = hpf::choose_quant_params(x, shape, DType::I4, true, -1, g);
    REQUIRE(p.ok());
    REQUIRE(p->scales.size() == 512 / static_cast<size_t>(g));
    for (size_t n = 0; n < p->scales.size(); ++n)
      CHECK(p->scales[n] == std::ldexp(1.0f, static_cast<int>(n % 5) - 2));
    CHECK(quantize_ints(x, shape, *p) == want);
    std::vector<std::byte> q(256);
    REQUIRE(hpf::quantize(x, shape, *p, q).ok());
    std::vector<float> back(512);
    REQUIRE(hpf::dequantize(q, shape, *p, back).ok());
    CHECK(back == x);
  }
}

TEST_CASE("quantize: saturation at both ends, NaN to the zero point") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(quantize_ints({200, -200, 127.5f, -128.5f, -129, inf, -inf, nan}, {8},
                      params(DType::I8, {1.0f})) ==
        std::vector<int>{127, -128, 127, -128, -128, 127, -128, 0});
  CHECK(quantize_ints({200, -200, nan}, {3}, params(DType::U8, {1.0f}, {128})) ==
        std::vector<int>{255, 0, 128});
  CHECK(quantize_ints({100, -100, 7.5f, -8.5f, 6.5f}, {5}, params(DType::I4, {1.0f})) ==
        std::vector<int>{7, -8, 7, -8, 6});
  CHECK(quantize_ints({1e30f, -1e30f}, {2}, params(DType::I8, {1e-30f})) ==
        std::vector<int>{127, -128});
}

TEST_CASE("quantize: dequantised values are within scale/2 on random data") {
  std::mt19937 rng(4242);
  std::normal_distribution<float> normal(0.5f, 3.0f);
  const Shape shape = {8, 128};
  std::vector<float> x(1024);
  for (float& v : x) v = normal(rng);
  struct Config {
    DType t;
    bool symmetric;
    int axis, group;
  };
  const Config configs[] = {
      {DType::I8, true, -1, 0},  {DType::I8, false, -1, 0},  {DType::U8, false, -1, 0},
      {DType::I8, true, 0, 0},   {DType::U8, false, 1, 0},   {DType::I4, true, -1, 32},
      {DType::I4, true, -1, 64}, {DType::I4, true, -1, 128}, {DType::I4, false, -1, 32},
  };
  for (const Config& c : configs) {
    CAPTURE(hpf::dtype_name(c.t));
    CAPTURE(c.symmetric);
    CAPTURE(c.axis);
    CAPTURE(c.group);
    auto p = hpf::choose_quant_params(x, shape, c.t, c.symmetric, c.axis, c.group);
    REQUIRE(p.ok());
    std::vector<std::byte> q(hpf::storage_bytes(c.t, x.size()));
    REQUIRE(hpf::quantize(x, shape, *p, q).ok());
    std::vector<float> back(x.size());
    REQUIRE(hpf::dequantize(q, shape, *p, back).ok());
    int failures = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t slot = c.group > 0   ? i / static_cast<size_t>(c.group)
                          : c.axis == 0 ? i / 128
                          : c.axis == 1 ? i % 128
                                        : 0;
      const float s = p->scales[slot];
      // Half a step, plus slack for the FP32 division and product.
      const float bound = s * 0.5f * (1 + 1e-4f) + 1e-6f * std::fabs(x[i]);
      if (!(std::fabs(back[i] - x[i]) <= bound) && ++failures <= 5)
        FAIL_CHECK("element " << i << ": " << x[i] << " -> " << back[i] << ", scale " << s);
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("quantize: a scalar and an empty tensor") {
  CHECK(quantize_ints({3.0f}, {}, params(DType::I8, {1.5f})) == std::vector<int>{2});
  std::vector<std::byte> none;
  CHECK(hpf::quantize({}, Shape{0, 4}, params(DType::I4, {1.0f}), none).ok());
}

TEST_CASE("quantize: bad parameters are invalid_argument with a message naming them") {
  const std::vector<float> x6(6, 1.0f);
  CHECK(quantize_error(x6, {2, 3}, params(DType::F16, {1}), 12) ==
        "quantize: type f16 is not a quantised type (expected i8, u8, i16 or i4)");
  CHECK(quantize_error(x6, {2, 3}, params(DType::I8, {1, 1}), 6) ==
        "quantize: 2 scales need 1 (per tensor), a per-channel axis in [0, 2) or group_size > 0; "
        "axis is -1");
  CHECK(quantize_error(x6, {2, 3}, params(DType::I8, {1, 1}, {}, 2), 6) ==
        "quantize: 2 scales need 1 (per tensor), a per-channel axis in [0, 2) or group_size > 0; "
        "axis is 2");
  CHECK(quantize_error(std::vector<float>(12), {3, 4}, params(DType::I8, {1, 1, 1, 1}, {}, 0),
                       12) == "quantize: per-channel axis 0 of shape [3,4] needs 3 scales, got 4");
  CHECK(quantize_error(std::vector<float>(96), {2, 48}, params(DType::I4, {1, 1, 1}, {}, -1, 32),
                       48) ==
        "quantize: group_size 32 does not divide the last dimension 48 of shape [2,48]");
  CHECK(quantize_error(std::vector<float>(128), {2, 64}, params(DType::I4, {1, 1}, {}, -1, 32),
                       64) == "quantize: group_size 32 over shape [2,64] needs 4 scales, got 2");
  CHECK(quantize_error(x6, {6}, params(DType::I8, {1}, {}, -1, -4), 6) ==
        "quantize: group_size -4 is negative");
  CHECK(quantize_error(x6, {2, 3}, params(DType::I8, {1, 0}, {}, 0), 6) ==
        "quantize: scales[1] = 0 is not positive and finite");
  CHECK(quantize_error(x6, {6}, params(DType::I8, {-1.5f}), 6) ==
        "quantize: scales[0] = -1.5 is not positive and finite");
  CHECK(quantize_error(x6, {6}, params(DType::I8, {std::numeric_limits<float>::infinity()}), 6) ==
        "quantize: scales[0] = inf is not positive and finite");
  CHECK(quantize_error(x6, {6}, params(DType::I8, {std::nanf("")}), 6) ==
        "quantize: scales[0] = nan is not positive and finite");
  CHECK(quantize_error(x6, {2, 3}, params(DType::U8, {1, 1}, {0}, 0), 6) ==
        "quantize: 1 zero points for 2 scales (expected 2 or none)");
  CHECK(quantize_error(x6, {6}, params(DType::U8, {1}, {-1}), 6) ==
        "quantize: zero_points[0] = -1 is outside the u8 range [0, 255]");
  CHECK(quantize_error(x6, {6}, params(DType::U8, {1}, {256}), 6) ==
        "quantize: zero_points[0] = 256 is outside the u8 range [0, 255]");
  CHECK(quantize_error(x6, {6}, params(DType::I4, {1}, {8}), 3) ==
        "quantize: zero_points[0] = 8 is outside the i4 range [-8, 7]");
  CHECK(quantize_error(std::vector<float>(5), {2, 3}, params(DType::I8, {1}), 6) ==
        "quantize: x has 5 elements but shape [2,3] has 6");
  CHECK(quantize_error(x6, {2, -3}, params(DType::I8, {1}), 6) ==
        "quantize: shape [2,-3] has a negative dimension -3 at axis 1");
  CHECK(quantize_error(x6, {2, 3}, params(DType::I8, {1}), 5) ==
        "quantize: q has 5 bytes but 6 elements of i8 need 6");

  std::vector<std::byte> q4(4);
  std::vector<float> out5(5);
  const hpf::Status d = hpf::dequantize(q4, Shape{5}, params(DType::I4, {1}), out5);
  CHECK(d.code() == hpf::StatusCode::invalid_argument);
  CHECK(d.message() == "dequantize: q has 4 bytes but 5 elements of i4 need 3");
  std::vector<std::byte> q6(6);
  CHECK(hpf::dequantize(q6, Shape{2, 3}, params(DType::I8, {1}), out5).message() ==
        "dequantize: x has 5 elements but shape [2,3] has 6");
}

TEST_CASE("choose_quant_params: bad arguments are invalid_argument with a message") {
  const std::vector<float> x12(12, 1.0f);
  CHECK(choose_error(x12, {3, 4}, DType::BF16, true) ==
        "choose_quant_params: type bf16 is not a quantised type (expected i8, u8, i16 or i4)");
  CHECK(choose_error(x12, {3, 4}, DType::U8, true) ==
        "choose_quant_params: symmetric quantisation needs a signed type (i8, i16 or i4), got u8");
  CHECK(choose_error(x12, {3, 4}, DType::I8, true, 2) ==
        "choose_quant_params: axis 2 is out of range for shape [3,4] (-1 for none)");
  CHECK(choose_error(x12, {3, 4}, DType::I8, true, -2) ==
        "choose_quant_params: axis -2 is out of range for shape [3,4] (-1 for none)");
  CHECK(choose_error(x12, {3, 4}, DType::I4, true, 0, 2) ==
        "choose_quant_params: group_size 2 does not divide dimension 3 (axis 0) of shape [3,4]");
  CHECK(choose_error(std::vector<float>(96), {2, 48}, DType::I4, true, -1, 32) ==
        "choose_quant_params: group_size 32 does not divide the last dimension 48 of shape [2,48]");
  CHECK(choose_error(x12, {3, 5}, DType::I8, true) ==
        "choose_quant_params: x has 12 elements but shape [3,5] has 15");
  std::vector<float> bad = x12;
  bad[1] = std::numeric_limits<float>::infinity();
  CHECK(choose_error(bad, {3, 4}, DType::I8, false) ==
        "choose_quant_params: x[1] = inf is not finite");
}

TEST_CASE("quantize: I4 group-wise along a non-last axis (a [K, N] MatMul weight)") {
  // Shape [4, 3], groups of 2 along axis 0: scales laid out as [2, 3], element (k, n) uses
  // scales[(k / 2) * 3 + n].
  const std::vector<float> x = {7, -14, 1,   //
                                -3, 2, 0.6f,  //
                                21, 1, -3.5f,  //
                                0, -7, 7};
  auto p = hpf::choose_quant_params(x, Shape{4, 3}, DType::I4, true, 0, 2);
  REQUIRE(p.ok());
  CHECK(p->axis == 0);
  CHECK(p->group_size == 2);
  CHECK(p->scales == std::vector<float>{1, 2, 1.0f / 7, 3, 1, 1});
  // 0.6 / (1/7) = 4.2 -> 4; -3.5 / 1 -> -4 (tie to even).
  CHECK(quantize_ints(x, {4, 3}, *p) == std::vector<int>{7, -7, 7, -3, 1, 4, 7, 1, -4, 0, -7, 7});
  std::vector<float> fq = x;
  REQUIRE(hpf::fake_quantize(fq, Shape{4, 3}, *p).ok());
  CHECK(fq[4] == 2.0f);
  CHECK(fq[5] == 4.0f * (1.0f / 7));
}

TEST_CASE("fake_quantize: integer and scaled FP8 types") {
  // I8 per tensor, scale 0.5: 0.75 -> 1.5 -> 2 (tie to even) -> 1.0; 100 saturates at 127 -> 63.5.
  std::vector<float> x = {0.75f, 0.25f, -0.3f, 100, -100};
  REQUIRE(hpf::fake_quantize(x, Shape{5}, params(DType::I8, {0.5f})).ok());
  CHECK(x == std::vector<float>{1.0f, 0.0f, -0.5f, 63.5f, -64.0f});
  // E4M3 with scale 2: 1000 / 2 = 500 saturates at 448 -> 896; 3 / 2 = 1.5 exact -> 3;
  // 2.3 / 2 = 1.15 -> 1.125 (3 mantissa bits) -> 2.25.
  std::vector<float> y = {1000, 3, 2.3f};
  REQUIRE(hpf::fake_quantize(y, Shape{3}, params(DType::F8E4M3, {2.0f})).ok());
  CHECK(y == std::vector<float>{896, 3, 2.25f});
  std::vector<float> z = {1000};
  REQUIRE(hpf::fake_quantize(z, Shape{1}, params(DType::F8E4M3, {2.0f}), hpf::Overflow::propagate).ok());
  CHECK(std::isnan(z[0]));
  CHECK(hpf::fake_quantize(y, Shape{3}, params(DType::F8E4M3, {1.0f}, {0})).message() ==
        "fake_quantize: scaled f8e4m3 is symmetric; got 1 zero points");
  CHECK(hpf::fake_quantize(y, Shape{3}, params(DType::BF16, {1.0f})).message() ==
        "fake_quantize: type bf16 is not a quantised type (expected i8, u8, i4, f8e4m3 or f8e5m2)");
}

TEST_CASE("fake_quantize_rows_i8: one scale per row, max|row| / 127, NaN and infinity") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Row 0: amax 2.54 -> s = 0.02: 2.54 -> 127, -1.27 -> -63.5 -> -64 (tie to even) -> -1.28,
  // 0.011 -> 0.55 -> 1 -> 0.02. Row 1: all zero (s = 1). Row 2: NaN ignored by the max, stored 0.
  // Row 3: an infinity makes s = inf: the row becomes NaN.
  std::vector<float> x = {2.54f, -1.27f, 0.011f, 0, 0, 0, nan, 1.27f, -0.635f, inf, 1, 2};
  REQUIRE(hpf::fake_quantize_rows_i8(x, 3).ok());
  const float s0 = 2.54f / 127.0f, s2 = 1.27f / 127.0f;
  CHECK(x[0] == 127 * s0);
  CHECK(x[1] == -64 * s0);
  CHECK(x[2] == 1 * s0);
  CHECK((x[3] == 0 && x[4] == 0 && x[5] == 0));
  CHECK(x[6] == 0);
  CHECK(x[7] == 127 * s2);
  CHECK(x[8] == std::nearbyint(-0.635f / s2) * s2);
  CHECK((std::isnan(x[9]) && std::isnan(x[10]) && std::isnan(x[11])));
  // Rows are independent: a large row does not coarsen a small one.
  std::vector<float> y = {1000, 1, 0.001f, 0.002f};
  REQUIRE(hpf::fake_quantize_rows_i8(y, 2).ok());
  CHECK(y[3] == 127 * (0.002f / 127.0f));
  CHECK(y[2] == std::nearbyint(0.001f / (0.002f / 127.0f)) * (0.002f / 127.0f));
  CHECK(hpf::fake_quantize_rows_i8(y, 3).message() == "fake_quantize_rows_i8: rows of 3 do not divide 4 elements");
}

TEST_CASE("fake_quantize_rows_u7: a scale and zero point per row over [min(0, x), max(0, x)], 0..127") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Row 0: [-0.5, 2.04]: s = 2.54 / 127 = 0.02, z = rne(25) = 25; 2.04 -> 102 (u 127),
  //   -0.5 -> -25 (u 0), 0.07 -> 3.5 (to even: 4, within float rounding of the tie).
  // Row 1: one-sided [0, 1.27] (the 0 spans it): s = 0.01, z = 0, -0 stays 0, 0.004 -> 0.
  // Row 2: all zero (s = 1). Row 3: NaN ignored by the range, stored 0.
  // Row 4: an infinity makes s = inf: the row becomes NaN. Row 5: -inf and inf: z is NaN -> 0, NaN.
  std::vector<float> x = {2.04f, -0.5f, 0.07f, 1.27f, -0.0f, 0.004f, 0, 0, 0,
                          nan, -1.27f, 0.5f, inf, 1, -2, -inf, inf, 1};
  REQUIRE(hpf::fake_quantize_rows_u7(x, 3).ok());
  const float s0 = (2.04f + 0.5f) / 127.0f, s1 = 1.27f / 127.0f, s3 = (0.5f + 1.27f) / 127.0f;
  CHECK(std::nearbyint(0.5f / s0) == 25);
  CHECK(x[0] == 102 * s0);
  CHECK(x[1] == -25 * s0);
  CHECK(x[2] == std::nearbyint(0.07f / s0) * s0);
  CHECK(x[3] == 127 * s1);
  CHECK((x[4] == 0 && x[5] == 0));
  CHECK((x[6] == 0 && x[7] == 0 && x[8] == 0));
  const float z3 = std::nearbyint(1.27f / s3);
  CHECK(x[9] == 0);
  CHECK(x[10] == -z3 * s3);
  CHECK(x[11] == std::nearbyint(0.5f / s3) * s3);
  for (int i = 12; i < 18; ++i) CHECK(std::isnan(x[i]));
  // Each row's 128 levels cover its own span: a row from 0 to 1 keeps steps of 1 / 127.
  std::vector<float> y = {1, 0.25f, -100, 100};
  REQUIRE(hpf::fake_quantize_rows_u7(y, 2).ok());
  CHECK(y[0] == 127 * (1.0f / 127.0f));
  CHECK(y[1] == 32 * (1.0f / 127.0f));
  CHECK(hpf::fake_quantize_rows_u7(y, 3).message() == "fake_quantize_rows_u7: rows of 3 do not divide 4 elements");
}

TEST_CASE("fake_quantize_rows_s16: a scale per row, rows_s16_qmax(row) levels each side, exact 32-bit sums") {
  // qmax keeps row * qmax * 128 within INT32: 32767 up to 512, then (2^31 - 1) / (128 row).
  CHECK(hpf::rows_s16_qmax(1) == 32767);
  CHECK(hpf::rows_s16_qmax(512) == 32767);
  CHECK(hpf::rows_s16_qmax(768) == 21845);
  CHECK(hpf::rows_s16_qmax(3072) == 5461);
  CHECK(hpf::rows_s16_qmax(int64_t{1} << 40) == 1);
  for (int64_t k : {513, 768, 1000, 3072, 65536})
    CHECK(double(k) * hpf::rows_s16_qmax(k) * 128 <= 2147483647.0);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Row 0: s = 3 / 32767; 1 -> rne(10922.33) = 10922; -3 -> -32767. Row 1: all zero (s = 1).
  // Row 2: NaN ignored by the max, stored 0. Row 3: an infinity makes the row NaN.
  std::vector<float> x = {1, -3, 0.5f, 0, 0, 0, nan, 2, -1, inf, 1, 2};
  REQUIRE(hpf::fake_quantize_rows_s16(x, 3).ok());
  const float s0 = 3.0f / 32767.0f, s2 = 2.0f / 32767.0f;
  CHECK(x[0] == std::nearbyint(1.0f / s0) * s0);
  CHECK(x[1] == -32767 * s0);
  CHECK(x[2] == std::nearbyint(0.5f / s0) * s0);
  CHECK((x[3] == 0 && x[4] == 0 && x[5] == 0));
  CHECK(x[6] == 0);
  CHECK(x[7] == 32767 * s2);
  CHECK(x[8] == std::nearbyint(-1.0f / s2) * s2);
  for (int i = 9; i < 12; ++i) CHECK(std::isnan(x[i]));
  // A long row: fewer levels (768: 21845), the error within half a step.
  std::vector<float> y(768);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::sin(float(i)) * 4.0f;
  const std::vector<float> y0 = y;
  REQUIRE(hpf::fake_quantize_rows_s16(y, 768).ok());
  float amax = 0;
  for (float v : y0) amax = std::max(amax, std::fabs(v));
  const float s = amax / 21845.0f;
  for (size_t i = 0; i < y.size(); ++i) CHECK(std::fabs(y[i] - y0[i]) <= 0.5f * s * 1.0001f);
  CHECK(hpf::fake_quantize_rows_s16(y, 5).message() == "fake_quantize_rows_s16: rows of 5 do not divide 768 elements");
}

TEST_CASE("I16: int16_operand_qmax, quantise and dequantise, the rows' qmax for 16-bit weights") {
  // Both operands of a k-long 16-bit dot product within floor(sqrt((2^31 - 1) / k)): exact sums.
  CHECK(hpf::int16_operand_qmax(1) == 32767);
  CHECK(hpf::int16_operand_qmax(2) == 32767);
  CHECK(hpf::int16_operand_qmax(3) == 26754);
  CHECK(hpf::int16_operand_qmax(768) == 1672);
  CHECK(hpf::int16_operand_qmax(3072) == 836);
  CHECK(hpf::int16_operand_qmax(int64_t{1} << 40) == 1);
  for (int64_t k : {3, 7, 768, 1000, 3072, 65536, 1000003}) {
    const double q = hpf::int16_operand_qmax(k);
    CHECK(double(k) * q * q <= 2147483647.0);
    CHECK(double(k) * (q + 1) * (q + 1) > 2147483647.0);
  }
  // Storage: two bytes, little-endian, rounded half to even and saturated at the type's range.
  CHECK(hpf::bit_width(DType::I16) == 16);
  CHECK(hpf::is_integer(DType::I16));
  CHECK(hpf::parse_dtype("int16").value() == DType::I16);
  CHECK(hpf::qmin(DType::I16) == -32768);
  CHECK(hpf::qmax(DType::I16) == 32767);
  CHECK(hpf::round_to(DType::I16, 2.5f) == 2.0f);
  CHECK(hpf::round_to(DType::I16, -40000.0f) == -32768.0f);
  const QuantParams p{DType::I16, {0.5f}, {}, -1, 0};
  const std::vector<float> x = {1.25f, -3.0f, 20000.0f, -16383.75f};
  std::vector<std::byte> q(hpf::storage_bytes(DType::I16, x.size()));
  REQUIRE(q.size() == 8);
  REQUIRE(hpf::quantize(x, std::vector<int64_t>{4}, p, q).ok());
  CHECK((q[0] == std::byte{2} && q[1] == std::byte{0}));        // 2.5 -> 2
  CHECK((q[2] == std::byte{0xFA} && q[3] == std::byte{0xFF}));  // -6
  CHECK((q[4] == std::byte{0xFF} && q[5] == std::byte{0x7F}));  // 40000 -> 32767
  std::vector<float> back(4);
  REQUIRE(hpf::dequantize(q, std::vector<int64_t>{4}, p, back).ok());
  CHECK(back == std::vector<float>{1.0f, -3.0f, 16383.5f, -16384.0f});  // -32767.5 to even
  // 16-bit rows meeting 16-bit weights: qmax given (int16_operand_qmax), not rows_s16_qmax.
  std::vector<float> y = {1.0f, -0.3f, 0.7f};
  REQUIRE(hpf::fake_quantize_rows_s16(y, 3, 100).ok());
  CHECK(y == std::vector<float>{1.0f, -30 * 0.01f, 70 * 0.01f});
  CHECK(hpf::fake_quantize_rows_s16(y, 3, 40000).message() == "fake_quantize_rows_s16: qmax 40000 is outside [0, 32767]");
}

TEST_CASE("quantize: rounds half to even like nearbyint, on ties and near them") {
  std::mt19937 g(5);
  std::uniform_int_distribution<int> halves(-300, 300);
  std::uniform_real_distribution<float> u(-140.0f, 140.0f);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) {
    const float h = static_cast<float>(halves(g)) * 0.5f;  // exact ties and integers
    x.push_back(h);
    x.push_back(std::nextafter(h, 1000.0f));
    x.push_back(std::nextafter(h, -1000.0f));
    x.push_back(u(g));
  }
  std::vector<std::byte> q(x.size());
  REQUIRE(hpf::quantize(x, Shape{static_cast<int64_t>(x.size())}, params(DType::I8, {1.0f}), q).ok());
  int64_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::clamp(std::nearbyint(x[i]), -128.0f, 127.0f);  // default mode: to even
    wrong += static_cast<int8_t>(q[i]) != static_cast<int>(want);
  }
  CHECK(wrong == 0);
}
