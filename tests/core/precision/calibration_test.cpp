// Calibration (max, percentile, KL entropy, weight scales) and the reference interpreter's
// emulation of quantised plans (fake quantisation, exact integer accumulation).
#include "hpf/calibration.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "hpf/divergence.hpp"
#include "hpf/models.hpp"
#include "hpf/reference.hpp"

using namespace hpf;

namespace {

Tensor f32(std::vector<int64_t> shape, const std::vector<float>& v) {
  return std::move(Tensor::from_f32(std::move(shape), v)).value();
}

// Portable uniform in (0, 1) from the raw 64-bit generator (std distributions are
// implementation-defined).
struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  double uniform() { return (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53; }
  float laplace(double b) {  // inverse CDF: |x| is exponential, the sign a fair coin
    const double m = -b * std::log(uniform());
    return static_cast<float>((g() & 1) ? m : -m);
  }
};

std::vector<float> pm_ramp(int n) {  // +-1, +-2, ..., +-n with alternating signs
  std::vector<float> x(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k)
    x[static_cast<size_t>(k)] = static_cast<float>(k % 2 ? -(k + 1) : k + 1);
  return x;
}

float run_threshold(const Observer& obs, CalibrationMethod m) {
  CalibrationOptions o;
  o.method = m;
  auto t = obs.threshold(o);
  REQUIRE_MESSAGE(t.ok(), t.status().to_string());
  return *t;
}

}  // namespace

TEST_CASE("calibration: max and percentile on known data") {
  const std::vector<float> x = pm_ramp(10000);
  CHECK(*percentile_abs(x, 100) == 10000.0f);
  CHECK(*percentile_abs(x, 99.99) == 9999.0f);
  CHECK(*percentile_abs(x, 50) == 5000.0f);
  CHECK(*percentile_abs(x, 0.01) == 1.0f);
  CHECK(percentile_abs(x, 0).status().message() ==
        "percentile_abs: percentile 0 is outside (0, 100]");
  CHECK(percentile_abs({}, 50).status().message() == "percentile_abs: no values");

  Observer obs;
  REQUIRE(obs.observe(x).ok());
  CHECK(obs.count() == 10000);
  CHECK(obs.amax() == 10000.0f);
  CHECK(run_threshold(obs, CalibrationMethod::max) == 10000.0f);
  // From the histogram: within one bin (10000 / 2048) of the exact percentile.
  const float w = obs.bin_width();
  CHECK(std::fabs(*obs.percentile(99.99) - 9999.0f) <= w);
  CHECK(std::fabs(*obs.percentile(50) - 5000.0f) <= w);
  CHECK(std::fabs(run_threshold(obs, CalibrationMethod::percentile) - 9999.0f) <= w);
  auto p = int8_activation_params(obs, {CalibrationMethod::max});
  REQUIRE(p.ok());
  CHECK(p->type == DType::I8);
  CHECK(p->zero_points.empty());
  CHECK(p->scales == std::vector<float>{10000.0f / 127.0f});

  Observer empty;
  CHECK(empty.threshold({}).status().message() == "Observer: nothing observed");
  const float inf = INFINITY;
  CHECK(obs.observe(std::vector<float>{1, inf}).message() ==
        "Observer: value 1 of the batch is inf");
  CHECK(obs.count() == 10000);  // the bad batch left nothing behind
}

TEST_CASE("calibration: the observer's histogram grows by merging bins, exactly") {
  // 8 bins. Batch 1 sets the range to 1 (bins of 0.125, right-closed): 0.1 -> 0, 0.5 -> 3,
  // 1.0 -> 7. Batch 2 reaches 3.5: the range doubles twice to 4 (bins of 0.5) and the old bins
  // merge 0 -> 0, 3 -> 0, 7 -> 1; 3.5 -> 6, 0.3 -> 0. The same as binning everything over [0, 4].
  Observer obs(8);
  REQUIRE(obs.observe(std::vector<float>{0, 0}).ok());  // zeros before any range: kept aside
  CHECK(obs.range() == 0.0f);
  REQUIRE(obs.observe(std::vector<float>{0.1f, -0.5f, 1.0f}).ok());
  CHECK(obs.range() == 1.0f);
  CHECK(obs.histogram() == std::vector<int64_t>{3, 0, 0, 1, 0, 0, 0, 1});
  REQUIRE(obs.observe(std::vector<float>{-3.5f, 0.3f}).ok());
  CHECK(obs.range() == 4.0f);
  CHECK(obs.amax() == 3.5f);
  CHECK(obs.count() == 7);
  CHECK(obs.histogram() == std::vector<int64_t>{5, 1, 0, 0, 0, 0, 1, 0});
  // Tensor input; integer tensors are refused.
  Observer t;
  REQUIRE(t.observe(f32({2, 2}, {1, -2, 3, -4})).ok());
  CHECK(t.amax() == 4.0f);
  auto ints = Tensor::from_i64({2}, std::vector<int64_t>{1, 2});
  REQUIRE(ints.ok());
  CHECK(!t.observe(*ints).ok());
}

TEST_CASE("calibration: KL entropy clips a heavy tail and keeps a uniform range") {
  Rng rng(42);
  SUBCASE("Laplacian with outliers: threshold well below the max") {
    std::vector<float> x(200000);
    for (float& v : x) v = rng.laplace(1.0);
    for (int k = 0; k < 20; ++k)
      x[static_cast<size_t>(k) * 1000] = (k % 2 ? -1.0f : 1.0f) * (60.0f + 2.0f * k);
    Observer obs;
    // Several batches, so the range grows on the way.
    for (size_t b = 0; b < 4; ++b)
      REQUIRE(obs.observe(std::span<const float>(x).subspan(b * 50000, 50000)).ok());
    const float t = run_threshold(obs, CalibrationMethod::entropy);
    MESSAGE("laplace: amax " << obs.amax() << ", entropy threshold " << t);
    CHECK(obs.amax() == 98.0f);
    CHECK(t < 0.25f * obs.amax());
    CHECK(t > 4.0f);  // still covers the bulk (99% of |x| is below ln(100) = 4.6)
    // The percentile sits between, the max at the outliers.
    CHECK(run_threshold(obs, CalibrationMethod::max) == 98.0f);
  }
  SUBCASE("uniform: threshold near the max") {
    std::vector<float> x(200000);
    for (float& v : x) v = static_cast<float>(2 * rng.uniform() - 1);
    Observer obs;
    REQUIRE(obs.observe(x).ok());
    const float t = run_threshold(obs, CalibrationMethod::entropy);
    MESSAGE("uniform: amax " << obs.amax() << ", entropy threshold " << t);
    CHECK(t > 0.95f * obs.amax());
    CHECK(t <= obs.amax());
  }
  SUBCASE("ReLU-like: half exact zeros do not pull the threshold down") {
    // A ReLU of Laplacian data: half exact zeros, half exponential.
    std::vector<float> x(200000, 0.0f), positive;
    for (size_t k = 0; k < x.size(); k += 2) positive.push_back(x[k] = std::fabs(rng.laplace(1.0)));
    Observer obs, obs_positive;
    REQUIRE(obs.observe(x).ok());
    REQUIRE(obs_positive.observe(positive).ok());
    CHECK(obs.zeros() == 100000);
    const float t = run_threshold(obs, CalibrationMethod::entropy);
    CHECK(t == run_threshold(obs_positive, CalibrationMethod::entropy));
    // The same histogram with the zeros left in (the method as published) clips far lower.
    auto with_zeros = entropy_threshold(obs.histogram(), obs.bin_width());
    REQUIRE(with_zeros.ok());
    MESSAGE("relu-like: amax " << obs.amax() << ", entropy " << t << ", with zeros "
                               << *with_zeros);
    CHECK(*with_zeros < 0.5f * t);
  }
  SUBCASE("errors") {
    const std::vector<int64_t> h(256, 1);
    CHECK(entropy_threshold(h, 1.0f, 1).status().message() ==
          "entropy_threshold: levels 1 is below 2");
    CHECK(entropy_threshold(h, 1.0f, 128, 64).status().message() ==
          "entropy_threshold: first_bin 64 is below levels 128");
    CHECK(entropy_threshold(std::vector<int64_t>(256, 0), 1.0f).status().message() ==
          "entropy_threshold: the histogram is empty");
    // Shorter than the first candidate: the whole histogram.
    CHECK(*entropy_threshold(std::vector<int64_t>(100, 1), 0.5f) == 50.0f);
  }
}

TEST_CASE("calibration: per-channel INT8, group-wise INT4 and FP8 weight scales") {
  // MatMul weight [K=3, N=2]: channels along axis 1.
  auto axes = weight_axes("MatMul", 1, 2);
  REQUIRE(axes.ok());
  CHECK(axes->output == 1);
  CHECK(axes->reduction == 0);
  const Tensor w = f32({3, 2}, {1.27f, -4, -2.54f, 0.5f, 0.635f, 2});
  auto p8 = int8_weight_params(w, axes->output);
  REQUIRE(p8.ok());
  CHECK(p8->type == DType::I8);
  CHECK(p8->axis == 1);
  CHECK(p8->scales == std::vector<float>{2.54f / 127, 4.0f / 127});
  // 7-bit weights (a device whose dot product wants |q| <= 64): every channel's amax -> +-64.
  auto p7 = int8_weight_params(w, axes->output, 64);
  REQUIRE(p7.ok());
  REQUIRE(p7->scales.size() == 2);
  CHECK(p7->scales[0] == doctest::Approx(2.54 / 64).epsilon(1e-6));
  CHECK(p7->scales[1] == doctest::Approx(4.0 / 64).epsilon(1e-6));
  std::vector<std::byte> q7(6);
  REQUIRE(quantize(w.to_f32(), w.shape(), *p7, q7).ok());
  std::vector<int> got7;
  for (std::byte b : q7) got7.push_back(static_cast<int8_t>(b));
  CHECK(got7 == std::vector<int>{32, -64, -64, 8, 16, 32});
  CHECK(int8_weight_params(w, 1, 0).status().message() == "int8_weight_params: qmax 0 is outside [1, 127]");
  CHECK(!int8_weight_params(w, 1, 128).ok());

  CHECK(weight_axes("Gemm", 1, 2, true)->output == 0);
  CHECK(weight_axes("Gemm", 1, 2, true)->reduction == 1);
  CHECK(weight_axes("Conv", 1, 4)->output == 0);
  CHECK(weight_axes("Conv", 1, 4)->reduction == 1);
  CHECK(weight_axes("Relu", 0, 2).status().message() ==
        "weight_axes: input 0 of rank 2 of Relu is not a weight with known channel axes");

  // INT4, [K=64, N=2], groups of 32 along K: scales laid out [2 groups, 2 columns]; group g of
  // column n holds amax 7 * (g * 2 + n + 1) at row g * 32 + n.
  std::vector<float> v(128, 0.25f);
  for (int g = 0; g < 2; ++g)
    for (int n = 0; n < 2; ++n)
      v[static_cast<size_t>((g * 32 + n) * 2 + n)] = -7.0f * static_cast<float>(g * 2 + n + 1);
  auto p4 = int4_weight_params(f32({64, 2}, v), 0, 32);
  REQUIRE(p4.ok());
  CHECK(p4->type == DType::I4);
  CHECK(p4->group_size == 32);
  CHECK(p4->axis == 0);
  CHECK(p4->scales == std::vector<float>{1, 2, 3, 4});
  CHECK(int4_weight_params(f32({64, 2}, v), 0, 0).status().message() ==
        "int4_weight_params: group_size 0 is not positive");
  CHECK(!int4_weight_params(f32({48, 2}, std::vector<float>(96)), 0, 32).ok());
  // amax / 7 that is no BF16 value rounds up to the next one (the packed kernels store BF16):
  // 7.7 / 7 = 1.1 -> 1.1015625 (0x3F8D0000); 1e-3 / 7 likewise, a BF16 value stays.
  std::vector<float> w3(64, 0.0f);
  w3[0] = 7.7f;
  w3[33] = -1e-3f;
  auto p3 = int4_weight_params(f32({64, 1}, w3), 0, 32);
  REQUIRE(p3.ok());
  REQUIRE(p3->scales.size() == 2);
  CHECK(p3->scales[0] == std::bit_cast<float>(uint32_t{0x3F8D0000}));
  const float small = 1e-3f / 7.0f;
  CHECK(p3->scales[1] > small);
  CHECK(p3->scales[1] <= small * (1.0f + 1.0f / 128));
  CHECK((std::bit_cast<uint32_t>(p3->scales[1]) & 0xFFFFu) == 0);

  auto e4 = fp8_params(896.0f);
  REQUIRE(e4.ok());
  CHECK(e4->type == DType::F8E4M3);
  CHECK(e4->scales == std::vector<float>{2.0f});
  CHECK(fp8_params(57344.0f * 4, DType::F8E5M2)->scales == std::vector<float>{4.0f});
  CHECK(fp8_params(0.0f)->scales == std::vector<float>{1.0f});
  CHECK(fp8_params(1.0f, DType::I8).status().message() == "fp8_params: i8 is not an FP8 format");
}

namespace {

// y = x @ w, x an input [2, 3], w a weight [3, 2].
Graph matmul_graph(const std::vector<float>& w) {
  GraphBuilder b("mm");
  ValueId x = b.input("x", DType::F32, {2, 3});
  ValueId wv = b.constant("w", f32({3, 2}, w));
  b.output(b.op1("MatMul", {x, wv}, {}, "mm"), "y");
  return std::move(b.build()).value();
}

QuantParams params(DType t, std::vector<float> scales, int axis = -1) {
  QuantParams p;
  p.type = t;
  p.scales = std::move(scales);
  p.axis = axis;
  return p;
}

}  // namespace

TEST_CASE("emulation: an int8 MatMul equals the hand-computed quantised result") {
  // Powers of two as scales, so every step is exact and the result can be compared bit for bit.
  // x / (1/64):  [[0.5, -1, 0.2578125], [2.5, 0.1, -0.74]] -> [[32, -64, 16 (16.5, tie to
  //              even)], [127 (160 saturates), 6 (6.4), -47 (-47.36)]]
  // w per column, scales 1/64 and 1/512:
  //              [[0.5, 0.0302734375], [-0.25, 0.06], [1, -0.125]] -> columns [32, -16, 64] and
  //              [16 (15.5, tie to even), 31 (30.72), -64]
  // sums:        y00 = 1024 + 1024 + 1024 = 3072        -> 3072 / 4096  = 0.75
  //              y01 = 512 - 1984 - 1024 = -2496        -> -2496 / 32768
  //              y10 = 4064 - 96 - 3008 = 960           -> 960 / 4096   = 0.234375
  //              y11 = 2032 + 186 + 3008 = 5226         -> 5226 / 32768
  Graph g = matmul_graph({0.5f, 0.0302734375f, -0.25f, 0.06f, 1, -0.125f});
  const Tensor x = f32({2, 3}, {0.5f, -1, 0.2578125f, 2.5f, 0.1f, -0.74f});
  ref::Emulation e;
  e.value_quant["x"] = params(DType::I8, {1.0f / 64});
  e.value_quant["w"] = params(DType::I8, {1.0f / 64, 1.0f / 512}, 1);
  e.accumulation["mm"] = DType::I32;
  ref::RunOptions o;
  o.emulation = &e;
  auto r = ref::run(g, {x}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const std::vector<float> want = {0.75f, -2496.0f / 32768, 0.234375f, 5226.0f / 32768};
  CHECK((*r)[0].to_f32() == want);
  // FP32 accumulation gives the same here (every partial sum is exact); the FP32 plan does not.
  e.accumulation["mm"] = DType::F32;
  CHECK((*ref::run(g, {x}, o))[0].to_f32() == want);
  CHECK((*ref::run(g, {x}))[0].to_f32() != want);

  // Non-power-of-two scales: within FP32 rounding of the same integer sums.
  e.accumulation["mm"] = DType::I32;
  e.value_quant["x"] = params(DType::I8, {2.5f / 127});
  e.value_quant["w"] = params(DType::I8, {1.0f / 127, 0.125f / 127}, 1);
  auto r2 = ref::run(g, {x}, o);
  REQUIRE(r2.ok());
  // q_x = round(x * 127 / 2.5) = [[25, -51, 13], [127, 5, -38]]; q_w = [[64, 31], [-32, 61], [127,
  // -127]] (w00 = 0.5 -> 63.5 -> 64, w01 = 0.0302734375 -> 30.76 -> 31, w11 = 0.06 -> 60.96 -> 61).
  const int qx[2][3] = {{25, -51, 13}, {127, 5, -38}};
  const int qw[3][2] = {{64, 31}, {-32, 61}, {127, -127}};
  const double sx = 2.5f / 127, sw[2] = {1.0f / 127, 0.125f / 127};
  const std::vector<float> got = (*r2)[0].to_f32();
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) {
      int acc = 0;
      for (int k = 0; k < 3; ++k) acc += qx[m][k] * qw[k][n];
      const double expect = sx * sw[n] * acc;
      CAPTURE(m);
      CAPTURE(n);
      CHECK(std::fabs(got[static_cast<size_t>(m * 2 + n)] - expect) <= 4e-7 * std::fabs(expect));
    }

  // Mistakes are errors naming the value.
  e.value_quant["nope"] = params(DType::I8, {1});
  CHECK(ref::run(g, {x}, o).status().message() ==
        "emulation: value_quant names 'nope', which graph 'mm' does not have");
  e.value_quant.erase("nope");
  e.value_quant["w"] = params(DType::I8, {1, 1, 1}, 1);
  CHECK(ref::run(g, {x}, o).status().message() ==
        "emulation: value 'w': fake_quantize: per-channel axis 1 of shape [3,2] needs 2 scales, "
        "got 3");
}

TEST_CASE("emulation: dynamic_int8_rows quantises a MatMul's A per row") {
  // Row 0 amax 1: s = 1/127, x -> [64 (63.5, to even), -127, 33 (32.8)];
  // row 1 amax 0.0127 (80x smaller, its own scale): s = 1e-4, [127, 10, -64 (-63.5, to even)].
  Graph g = matmul_graph({1, 0, 0, 1, 0, 0});  // w picks columns 0 and 1 of x
  const Tensor x = f32({2, 3}, {0.5f, -1, 0.258f, 0.0127f, 0.001f, -0.00635f});
  ref::Emulation e;
  e.dynamic_int8_rows.insert("mm");
  ref::RunOptions o;
  o.emulation = &e;
  auto r = ref::run(g, {x}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  std::vector<float> q = x.to_f32();
  REQUIRE(fake_quantize_rows_i8(q, 3).ok());
  const std::vector<float> got = (*r)[0].to_f32();
  CHECK(got == std::vector<float>{q[0], q[1], q[3], q[4]});
  const float s0 = 1.0f / 127, s1 = 0.0127f / 127;
  CHECK(got == std::vector<float>{64 * s0, -127 * s0, 127 * s1, 10 * s1});
  e.dynamic_int8_rows = {"nope"};
  CHECK(ref::run(g, {x}, o).status().message() ==
        "emulation: dynamic_int8_rows names node 'nope', which graph 'mm' does not have");
  // u7 rows: fake_quantize_rows_u7's values (row 0 spans [-1, 0.5]: s = 1.5 / 127, z = 85).
  e.dynamic_int8_rows.clear();
  e.dynamic_u7_rows = {"mm"};
  r = ref::run(g, {x}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  q = x.to_f32();
  REQUIRE(fake_quantize_rows_u7(q, 3).ok());
  CHECK((*r)[0].to_f32() == std::vector<float>{q[0], q[1], q[3], q[4]});
  CHECK(q[1] == -85 * (1.5f / 127));
  e.dynamic_int8_rows = {"mm"};
  CHECK(ref::run(g, {x}, o).status().message() == "emulation: node 'mm' is in both dynamic_int8_rows and dynamic_u7_rows");
  // 16-bit rows: fake_quantize_rows_s16's values (row 0: s = 1 / 32767).
  e.dynamic_int8_rows.clear();
  e.dynamic_u7_rows.clear();
  e.dynamic_s16_rows = {"mm"};
  r = ref::run(g, {x}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  q = x.to_f32();
  REQUIRE(fake_quantize_rows_s16(q, 3).ok());
  CHECK((*r)[0].to_f32() == std::vector<float>{q[0], q[1], q[3], q[4]});
  CHECK(q[0] == 16384 * (1.0f / 32767));  // 0.5 * 32767 = 16383.5, to even
  e.dynamic_u7_rows = {"mm"};
  CHECK(ref::run(g, {x}, o).status().message() == "emulation: node 'mm' is in dynamic_s16_rows and another rows set");
  // Rows meeting 16-bit weights: int16_operand_qmax(3) levels (26754; row 0: s = 1 / 26754).
  e.dynamic_u7_rows.clear();
  e.s16_rows_w16 = {"mm"};
  r = ref::run(g, {x}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  q = x.to_f32();
  REQUIRE(fake_quantize_rows_s16(q, 3, int16_operand_qmax(3)).ok());
  CHECK((*r)[0].to_f32() == std::vector<float>{q[0], q[1], q[3], q[4]});
  CHECK(q[0] == 13377 * (1.0f / 26754));
  e.dynamic_s16_rows.clear();
  CHECK(ref::run(g, {x}, o).status().message() == "emulation: s16_rows_w16 names node 'mm', which is not in dynamic_s16_rows");
}

TEST_CASE("int16_weight_params: per channel, |q| <= qmax, within half a step") {
  const Tensor w = *Tensor::from_f32({3, 2}, std::vector<float>{0.5f, -2.0f, -1.0f, 1.0f, 0.25f, 0.3f});
  auto p = int16_weight_params(w, 1, 1000);
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(p->type == DType::I16);
  CHECK(p->axis == 1);
  REQUIRE(p->scales.size() == 2);
  CHECK(p->scales[0] == doctest::Approx(1.0 / 1000).epsilon(1e-6));
  CHECK(p->scales[1] == doctest::Approx(2.0 / 1000).epsilon(1e-6));
  std::vector<std::byte> q(storage_bytes(DType::I16, 6));
  REQUIRE(quantize(w.to_f32(), w.shape(), *p, q).ok());
  std::vector<float> back(6);
  REQUIRE(dequantize(q, w.shape(), *p, back).ok());
  const std::vector<float> x = w.to_f32();
  for (size_t i = 0; i < 6; ++i) {
    CHECK(std::fabs(back[i] - x[i]) <= 0.5f * p->scales[i % 2] * 1.0001f);
    CHECK(std::fabs(back[i] / p->scales[i % 2]) <= 1000.5f);
  }
  CHECK(int16_weight_params(w, 1, 0).status().message() == "int16_weight_params: qmax 0 is outside [1, 32767]");
}

TEST_CASE("emulation: an int8 Conv with per-output-channel weight scales") {
  // X [1,1,1,2] / (1/64): [0.5, -0.2578125] -> [32, -16 (-16.5, tie to even)];
  // W [2,1,1,1], scales 1/64 and 1/512 along axis 0: [0.5, 0.0302734375] -> [32, 16 (15.5)].
  // y[c, j] = q_x[j] * q_w[c] * s_x * s_w[c].
  GraphBuilder b("conv");
  ValueId x = b.input("x", DType::F32, {1, 1, 1, 2});
  ValueId w = b.constant("w", f32({2, 1, 1, 1}, {0.5f, 0.0302734375f}));
  b.output(b.op1("Conv", {x, w}, {}, "conv"), "y");
  Graph g = std::move(b.build()).value();
  ref::Emulation e;
  e.value_quant["x"] = params(DType::I8, {1.0f / 64});
  e.value_quant["w"] =
      params(DType::I8, {1.0f / 64, 1.0f / 512}, weight_axes("Conv", 1, 4)->output);
  e.accumulation["conv"] = DType::I32;
  ref::RunOptions o;
  o.emulation = &e;
  const Tensor in = f32({1, 1, 1, 2}, {0.5f, -0.2578125f});
  auto r = ref::run(g, {in}, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0].to_f32() == std::vector<float>{0.25f, -0.125f, 0.015625f, -0.0078125f});
  CHECK((*ref::run(g, {in}))[0].to_f32()[1] == -0.12890625f);  // FP32: unquantised
}

namespace {

// The MLP's float values that feed its MatMuls: activations (x, the Relu output) and weights.
struct MlpValues {
  std::vector<std::string> activations, weights;
  std::vector<std::string> matmuls;
};
MlpValues mlp_values(const Graph& g) {
  MlpValues v;
  for (const Node& n : g.nodes())
    if (n.op == "MatMul") {
      v.matmuls.push_back(n.name);
      v.activations.push_back(g.value(n.inputs[0]).name);
      v.weights.push_back(g.value(n.inputs[1]).name);
    }
  return v;
}

double mlp_kl(const Graph& g, const std::vector<Tensor>& inputs, const ref::Emulation& e) {
  auto want = ref::run(g, inputs);
  ref::RunOptions o;
  o.emulation = &e;
  auto got = ref::run(g, inputs, o);
  REQUIRE(want.ok());
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  auto d = compare((*want)[0], (*got)[0]);
  REQUIRE(d.ok());
  MESSAGE("kl " << d->kl << ", rel_l2 " << d->rel_l2 << ", top1 agreement " << d->top1_agreement);
  return d->kl;
}

}  // namespace

TEST_CASE("emulation: int8 weights and activations of builtin:mlp stay close to FP32") {
  auto gm = models::builtin("builtin:mlp");
  REQUIRE(gm.ok());
  const Graph& g = *gm;
  const MlpValues mv = mlp_values(g);
  REQUIRE(mv.matmuls.size() == 2);

  // Calibrate on four batches, evaluate on another.
  std::vector<std::vector<Tensor>> calib;
  for (uint64_t s = 1; s <= 4; ++s) calib.push_back(*models::example_inputs(g, 100 + s, 256));
  std::map<std::string, Observer> obs;
  REQUIRE(observe_values(g, calib, mv.activations, obs).ok());
  REQUIRE(obs.size() == 2);
  for (const auto& [name, o] : obs)
    CHECK(o.count() == (name == "x" ? 4 * 256 * 64 : 4 * 256 * 128));
  for (const auto& [name, o] : obs)
    MESSAGE(name << ": amax " << o.amax() << ", p99.99 "
                 << *o.threshold({CalibrationMethod::percentile}) << ", entropy "
                 << *o.threshold({CalibrationMethod::entropy}));
  const std::vector<Tensor> eval = *models::example_inputs(g, 7, 64);

  auto int8_plan = [&](CalibrationMethod m) {
    ref::Emulation e;
    for (const std::string& a : mv.activations)
      e.value_quant[a] = *int8_activation_params(obs.at(a), {m});
    for (const std::string& w : mv.weights) {
      const Tensor& t = *g.value(*g.find_value(w)).constant;
      e.value_quant[w] = *int8_weight_params(t, weight_axes("MatMul", 1, t.rank())->output);
    }
    for (const std::string& n : mv.matmuls) e.accumulation[n] = DType::I32;
    return e;
  };
  double kl_max = 0;
  for (auto m :
       {CalibrationMethod::max, CalibrationMethod::percentile, CalibrationMethod::entropy}) {
    CAPTURE(calibration_method_name(m));
    const double kl = mlp_kl(g, eval, int8_plan(m));
    CHECK(kl > 0);  // the emulation really quantised something
    CHECK(kl < 1e-3);
    if (m == CalibrationMethod::max) kl_max = kl;
  }

  // INT4 weights (groups of 32 along K), FP32 activations; and FP8 E4M3 everywhere.
  ref::Emulation w4;
  ref::Emulation f8;
  for (const std::string& w : mv.weights) {
    const Tensor& t = *g.value(*g.find_value(w)).constant;
    w4.value_quant[w] = *int4_weight_params(t, weight_axes("MatMul", 1, t.rank())->reduction, 32);
    float amax = 0;
    for (float v : t.to_f32()) amax = std::max(amax, std::fabs(v));
    f8.value_quant[w] = *fp8_params(amax);
  }
  for (const std::string& a : mv.activations) f8.value_quant[a] = *fp8_params(obs.at(a).amax());
  const double kl4 = mlp_kl(g, eval, w4), kl8 = mlp_kl(g, eval, f8);
  CHECK(kl4 > 0);
  CHECK(kl4 < 1e-2);
  CHECK(kl8 > 0);
  CHECK(kl8 < 2e-3);

  // An absurd activation scale (every input quantises to 0 or +-1 step of 10) diverges.
  ref::Emulation bad = int8_plan(CalibrationMethod::max);
  bad.value_quant["x"] = params(DType::I8, {10.0f});
  const double kl_bad = mlp_kl(g, eval, bad);
  CHECK(kl_bad > 1e-2);
  CHECK(kl_bad > 100 * kl_max);
}
