// MatMul/Gemm with FP32, BF16, F16, INT8 and INT4 constant weights (matmul_wq kernels) through the
// Session against the reference interpreter's emulation of the same plan: odd shapes (M = 1, 3,
// 7 and larger, N and K off the vector width, INT4 groups of 8 and of the whole K), GEMV and
// GEMM schedules, Gemm with transB, alpha and a bias; the weights really packed (weight_bytes).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "hpf/calibration.hpp"
#include "hpf/planner.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/precision.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "tests/runtime/quantised_diff.hpp"
#include "tests/runtime/random_tensor.hpp"
#include "runtime/session/weight_packing.hpp"

using namespace hpf;

namespace {

Tensor random(std::vector<int64_t> shape, uint32_t seed, float lo = -1, float hi = 1) {
  return test::random_tensor(std::move(shape), seed, lo, hi);
}

// Whether the Session's device compiles for AMX-BF16 tiles (as the Session decides it: from the
// plugin's compile flags), where a BF16 MatMul whose A arrives BF16 takes the "bf16t" layout.
bool device_has_amx_bf16() {
  auto d = PluginHost::shared().best_device();
  if (!d.ok()) return false;
  return d->info().compiles_for("+amx-tile") && d->info().compiles_for("+amx-bf16");
}

struct Case {
  int64_t m, n, k;
  bool gemm = false, trans_b = false;
  int64_t batch = 0;  // > 0: A is [batch, m, k]
  bool epilogue = false;  // mm -> Add(bias) -> Relu: consumers the lowering would fuse into mm
  bool pre_relu = false;  // a -> Relu -> mm: in a 16-bit plan A arrives in that format (BF16: the pair kernel)
  int int4_group = 0;     // > 0: the plan's INT4 weights in groups of this many rows (as a plan file may say)
};

Graph build(const Case& c) {
  GraphBuilder b("wq");
  const std::vector<int64_t> as = c.batch ? std::vector<int64_t>{c.batch, c.m, c.k} : std::vector<int64_t>{c.m, c.k};
  auto a = b.input("a", DType::F32, make_shape(as));
  if (c.pre_relu) a = b.op1("Relu", {a}, {}, "pre");
  auto w = b.constant("w", random(c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n}, 7));
  ValueId y;
  if (c.gemm) {
    auto bias = b.constant("bias", random({c.n}, 9));
    y = b.op1("Gemm", {a, w, bias}, {{"transB", int64_t{c.trans_b}}, {"alpha", 0.5f}, {"beta", 2.0f}}, "mm");
  } else {
    y = b.op1("MatMul", {a, w}, {}, "mm");
  }
  if (c.epilogue) {
    auto bias = b.constant("bias_add.b", random({c.n}, 13));
    y = b.op1("Relu", {b.op1("Add", {y, bias}, {}, "bias_add")}, {}, "relu");
  }
  b.output(y, "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

// The plan `mode` asks for on the CPU device, calibrated on the test's own input.
// `weight_max` < 127: as for a device asking for narrower INT8 operands (int8_weight_max);
// `s16_rows`: as for one taking 16-bit rows where int8 keeps 8-bit weights (int8_s16_rows).
Plan calibrated_plan(const Graph& g, Mode mode, const DeviceFormats& f, const Tensor& a,
                     const std::vector<std::string>& observed = {"y"}, int weight_max = 127, bool s16_rows = false) {
  auto plan = plan_from_policy(g, Policy::uniform(mode), f);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  // bf16/fp16: the graph output stays F32 on the device (graph outputs keep their dtype); the
  // emulation rounds what the plan says, so say F32 (weights-only BF16/F16).
  if (mode == Mode::bf16 || mode == Mode::fp16) plan->nodes.back().storage = DType::F32;
  std::map<std::string, Observer> obs;
  REQUIRE(observe_values(g, {{a}}, observed, obs).ok());
  PlannerOptions po;
  po.device.int8_weight_max = weight_max;
  po.device.int8_s16_rows = s16_rows;
  Status s = calibrate_plan(g, *plan, obs, po);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return std::move(plan).value();
}

struct Result {
  double worst = 0;        // max |got - want| / (1 + |want|)
  int64_t step_diffs = 0;  // int8 outputs one quantisation step apart
  int64_t elements = 0;
  CompileStats stats;
  bool u7 = false;     // the plan's mm quantises its rows to u7
  bool s16 = false;    // ... to s16
  int weight_max = 0;  // the largest |q| of its INT8 weights (0: none)
};

// `specials`: planned on random values, run with special values among them (test::with_special_values).
// `w16`: the int8 plan's weights in I16 (int16_weight_params, int16_operand_qmax(k) levels), as
// the planner's int16 candidate has them.
Result run_case(const Case& c, Mode mode, bool specials = false, int weight_max = 127, bool s16_rows = false,
                bool w16 = false) {
  Result r;
  const Graph g = build(c);
  Tensor a = random(c.batch ? std::vector<int64_t>{c.batch, c.m, c.k} : std::vector<int64_t>{c.m, c.k}, 3, -2, 2);
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto plan = std::make_shared<Plan>(calibrated_plan(g, mode, s->device_formats(), a,
                                                         c.epilogue ? std::vector<std::string>{"y", "mm:out"}
                                                                    : std::vector<std::string>{"y"},
                                                         weight_max, s16_rows));
  REQUIRE(plan->find("mm")->mode == mode);
  r.u7 = plan->find("mm")->dynamic_rows == RowQuant::u7;
  r.s16 = plan->find("mm")->dynamic_rows == RowQuant::s16;
  if (const auto& q = plan->find("mm")->weight_quant; q && q->type == DType::I8)
    r.weight_max = test::int8_max_abs(*g.value(*g.find_value("w")).constant, *q);
  if (w16) {
    NodePlan& np = plan->nodes[static_cast<size_t>(*g.find_node("mm"))];
    auto q = int16_weight_params(*g.value(*g.find_value("w")).constant, c.trans_b ? 0 : 1, int16_operand_qmax(c.k));
    REQUIRE_MESSAGE(q.ok(), q.status().to_string());
    np.weight_quant = *q;
    np.weights = DType::I16;
    np.dynamic_rows = RowQuant::s16;
  }
  if (c.int4_group > 0) {
    const Tensor& w = *g.value(*g.find_value("w")).constant;
    auto q = int4_weight_params(w, c.trans_b ? 1 : 0, c.int4_group);
    REQUIRE_MESSAGE(q.ok(), q.status().to_string());
    plan->nodes[static_cast<size_t>(*g.find_node("mm"))].weight_quant = *q;
  }
  if (specials) a = test::with_special_values(a);
  auto emu = emulation_for_plan(g, *plan);
  REQUIRE_MESSAGE(emu.ok(), emu.status().to_string());
  ref::RunOptions ro;
  ro.emulation = &*emu;
  auto want = ref::run(g, {a}, ro);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  s->set_plan(plan);
  auto exe = s->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  r.stats = exe->compile_stats();
  auto got = exe->run({a});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  REQUIRE((*got)[0].numel() == (*want)[0].numel());
  const NodePlan& p = *plan->find(c.epilogue ? "relu" : "mm");
  const float step = p.activation_quant ? p.activation_quant->scales[0] : 0.0f;
  const test::QuantisedDiff diff = test::quantised_diff((*got)[0], (*want)[0], step);
  r.worst = diff.worst;
  r.step_diffs = diff.step_diffs;
  r.elements = diff.elements;
  return r;
}

const Case kCases[] = {
    {1, 37, 40},  {3, 37, 40},       {7, 37, 40},         {1, 16, 13},  {1, 300, 256},
    {70, 150, 200}, {5, 33, 64, true, true}, {2, 20, 24, true, false}, {9, 65, 136, true, true},
    {3, 40, 48, false, false, 2},
    {70, 150, 200, false, false, 0, false, true}, {9, 65, 137, true, true, 0, false, true},
    {3, 40, 48, false, false, 2, false, true},
    // 2..4 rows at once (gemv_rows) with a fused epilogue, and with A in the plan's 16-bit format
    {2, 37, 40, false, false, 0, true}, {3, 40, 48, false, false, 0, false, true},
    // 5..8 rows at once, whole items of 4 panels in two passes (INT8/INT4; FP32/16-bit past 6
    // rows) and a ragged item
    {7, 90, 40}, {8, 70, 136, true, true},
    // N a multiple of 64 with M > 8 (the GEMM): the sums accumulate in an FP32 Y, K slice by
    // slice or (FP32) whole (ragged row tiles, a ragged last slice; many row tiles take column
    // groups of 512). FP32 with few rows: slices of 512 at most over all of a range's blocks
    // (13 x 192 x 1100: a Gemm in three slices, alpha, beta and its bias applied once at the
    // last; 20 x 4096 x 600: 64 items, ranges of several blocks; 140 x 1088 x 600: two row parts
    // of 17 blocks, ranges of two items with two threads, one of them across the parts).
    {139, 256, 300}, {600, 512, 140, true, false}, {13, 64, 129}, {13, 192, 1100, true, false}, {20, 4096, 600},
    {140, 1088, 600},
};

}  // namespace

TEST_CASE("matmul_wq: FP32, BF16, F16, INT8 (A quantised per row) and INT4 plans match their emulation") {
  for (Mode mode : {Mode::fp32, Mode::bf16, Mode::fp16, Mode::int4_weights, Mode::int8}) {
    for (const Case& c : kCases) {
      const std::string mname = mode_name(mode);
      CAPTURE(mname);
      CAPTURE(c.m);
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(c.gemm);
      CAPTURE(c.trans_b);
      const Result r = run_case(c, mode);
      CHECK(r.stats.fallbacks == 0);
      REQUIRE(r.stats.packed_weight_nodes == std::vector<std::string>{"mm"});
      // int8: u8 x s8 with A quantised per row, except a GEMV (<= 4 rows), which stays weight-only.
      const bool w8a8 = mode == Mode::int8 && c.m * std::max<int64_t>(c.batch, 1) > 4;
      CHECK(r.stats.int8_compute_nodes == (w8a8 ? std::vector<std::string>{"mm"} : std::vector<std::string>{}));
      const int64_t P = (c.n + 15) / 16;
      int64_t want_bytes = 0;
      if (mode == Mode::fp32) want_bytes = P * c.k * 16 * 4 + 4;  // FP32 weights packed too
      if (mode == Mode::bf16 || mode == Mode::fp16) want_bytes = P * c.k * 16 * 2 + 4;  // + a placeholder scale
      // BF16 A on AMX: tile pairs, K padded to the tile depth, panels in pairs (weight_packing.cpp)
      if (mode == Mode::bf16 && c.pre_relu && device_has_amx_bf16())
        want_bytes = (P + 1) / 2 * 2 * jit::amx_bf16_padded_k(c.k) * 16 * 2 + 4;
      // int8: u8 x s8 (A quantised per row as it arrives): K padded to 4, scales, column sums
      if (mode == Mode::int8) want_bytes = P * ((c.k + 3) / 4 * 4) * 16 + P * 16 * 4 * (w8a8 ? 2 : 1);
      // int4: the scales BF16 (int4_weight_params chooses BF16 values)
      if (mode == Mode::int4_weights) want_bytes = P * ((c.k + 7) / 8) * 64 + P * (c.k / int4_group_for(c.k, 32)) * 16 * 2;
      if (c.gemm) want_bytes += c.n * 4;  // the bias: Gemm's C is a wide input, kept FP32
      // the epilogue's bias, stored as the plan stores the Add (FP32 in fp32 and int4-weights)
      if (c.epilogue) want_bytes += c.n * (mode == Mode::fp32 || mode == Mode::int4_weights ? 4 : 2);
      CHECK(r.stats.weight_bytes == want_bytes);
      // FP32 sums in another order than the emulation's (FP64 for int8, sequential FP32
      // otherwise): a few ulps of the dot products, which grow as sqrt(K) (20 x 4096 x 600 in
      // slices of 300: 2.2e-5 worst over its 82k outputs).
      const double tol = 2e-5 * std::sqrt(std::max(1.0, c.k / 300.0));
      CHECK_MESSAGE(r.worst <= tol, "worst relative error " << r.worst);
      // int8 outputs are fake-quantised: an FP32 sum within an ulp of a rounding boundary may
      // land one step away from the FP64 one; rare.
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  }
}

TEST_CASE("matmul_wq: INT4 groups that are not whole blocks of 8 rows (a plan file's) match their emulation") {
  // Calibrated groups are multiples of 8 rows or all of K; a plan file may say 4 or 12: the GEMV
  // then decodes row by row, the GEMM as always.
  for (const Case& c : {Case{1, 37, 40, false, false, 0, false, false, 4}, Case{3, 20, 48, true, true, 0, false, false, 12},
                        Case{9, 37, 40, false, false, 0, false, false, 4}}) {
    CAPTURE(c.m);
    CAPTURE(c.int4_group);
    const Result r = run_case(c, Mode::int4_weights);
    CHECK(r.stats.fallbacks == 0);
    CHECK(r.stats.packed_weight_nodes == std::vector<std::string>{"mm"});
    CHECK_MESSAGE(r.worst <= 2e-5, "worst relative error " << r.worst);
  }
}

TEST_CASE("matmul_i8: NaN, infinities and values past the INT32 range in A quantise as the emulation's") {
  // u8 x s8 (A quantised per row as it arrives): NaN -> 0, the rest clamped; finite outputs.
  for (const Case& c : {Case{70, 150, 200}, Case{9, 65, 137, true, true}}) {
    CAPTURE(c.m);
    const Result r = run_case(c, Mode::int8, true);
    CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"mm"});
    CHECK_MESSAGE(r.worst <= 2e-5, "worst relative error " << r.worst);
    CHECK(r.step_diffs * 100 <= r.elements);
  }
}

TEST_CASE("matmul_i8: u7 rows with 8-bit weights (a device asking for narrower operands) match the emulation") {
  // calibrate_plan narrows a MatMul quantising its rows at run time to u7 rows (a scale and zero
  // point per row, 0..127) and keeps its 8-bit weights; the kernel (vpmaddubsw on AVX2, exact
  // for u7 and any s8) computes the emulation's integers, special values included.
  for (const Case& c : kCases) {
    if (c.m * std::max<int64_t>(c.batch, 1) <= 4) continue;  // GEMVs stay weight-only
    for (const bool specials : {false, true}) {
      CAPTURE(c.m);
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(specials);
      const Result r = run_case(c, Mode::int8, specials, 64);
      CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"mm"});
      CHECK(r.u7);
      CHECK(r.weight_max == 127);
      const double tol = 2e-5 * std::sqrt(std::max(1.0, c.k / 300.0));
      CHECK_MESSAGE(r.worst <= tol, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  }
}

TEST_CASE("matmul_i8: 16-bit rows with 8-bit weights (W8A16, int8_s16_rows) match the emulation") {
  // Where int8 keeps 8-bit operands on a device with int8_s16_rows, calibrate_plan gives a MatMul
  // quantising its rows at run time 16-bit rows (rows_s16_qmax(k) levels each side); the kernel
  // (2 x 16 tiles of vpmaddwd on the weights widened to 16 bits) computes the emulation's
  // integers, special values included. Weights keep every bit; GEMVs stay weight-only.
  for (const Case& c : kCases) {
    for (const bool specials : {false, true}) {
      CAPTURE(c.m);
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(specials);
      const Result r = run_case(c, Mode::int8, specials, 127, true);
      const bool gemv = c.m * std::max<int64_t>(c.batch, 1) <= 4;
      CHECK(r.s16 == !gemv);
      CHECK(!r.u7);
      CHECK(r.weight_max == 127);
      if (!gemv) CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"mm"});
      const double tol = 2e-5 * std::sqrt(std::max(1.0, c.k / 300.0));
      CHECK_MESSAGE(r.worst <= tol, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  }
  // A narrowing device's u7 rows come first (int8_weight_max < 127: policy plans).
  const Result r = run_case(Case{70, 150, 200}, Mode::int8, false, 64, true);
  CHECK(r.u7);
}

TEST_CASE("matmul_i8: 16-bit weights and rows (W16A16, the planner's int16) match the emulation") {
  // I16 weights per channel and rows at run time, int16_operand_qmax(k) levels each (so that k
  // products sum exactly in 32 bits); the kernel loads the packed 16-bit weights as they are into
  // the W8A16 tiles. GEMVs have no int16 (int8_input: not dynamic): the weights stay FP32 there.
  for (const Case& c : kCases) {
    if (c.m * std::max<int64_t>(c.batch, 1) <= 4) continue;
    for (const bool specials : {false, true}) {
      CAPTURE(c.m);
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(specials);
      const Result r = run_case(c, Mode::int8, specials, 127, true, true);
      CHECK(r.s16);
      CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"mm"});
      const double tol = 2e-5 * std::sqrt(std::max(1.0, c.k / 300.0));
      CHECK_MESSAGE(r.worst <= tol, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  }
}

TEST_CASE("matmul_wq: a MatMul with a fused bias and activation gets packed weights and keeps the epilogue") {
  // BERT's MatMul + Add(bias) [+ activation]: the packed kernel applies the fused consumers.
  for (Mode mode : {Mode::bf16, Mode::int4_weights, Mode::int8, Mode::fp32}) {
    for (const Case& c : {Case{1, 300, 256, false, false, 0, true}, Case{70, 150, 200, false, false, 0, true},
                          Case{3, 37, 40, true, true, 0, true}, Case{139, 256, 300, false, false, 0, true}}) {
      const std::string mname = mode_name(mode);
      CAPTURE(mname);
      CAPTURE(c.m);
      CAPTURE(c.gemm);
      const Result r = run_case(c, mode);
      CHECK(r.stats.fallbacks == 0);
      CHECK(r.stats.packed_weight_nodes == std::vector<std::string>{"mm"});
      CHECK(r.stats.kernels == 1);  // the Add and the Relu run in the packed kernel's epilogue
      CHECK_MESSAGE(r.worst <= 2e-5, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  }
}

TEST_CASE("matmul_wq: packed INT8/INT4 weights decode to hpf::dequantize's values") {
  for (bool trans_b : {false, true}) {
    CAPTURE(trans_b);
    for (const auto& [K, group] : {std::pair<int64_t, int>{40, 8}, {40, 4}, {13, 13}})
    for (DType t : {DType::I8, DType::I4})
    for (bool bf16_scales : {true, false}) {
      if (t == DType::I8 && !bf16_scales) continue;
      CAPTURE(K);
      CAPTURE(bf16_scales);
      const int64_t N = 90;  // an item of 4 panels and one of 2
      const Tensor w = random(trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 11);
      auto q = t == DType::I8 ? int8_weight_params(w, trans_b ? 0 : 1) : int4_weight_params(w, trans_b ? 1 : 0, group);
      REQUIRE(q.ok());
      // INT4: int4_weight_params's scales are BF16 values and pack as BF16; a plan's others
      // (one ulp more) pack as F32.
      if (!bf16_scales) q->scales[1] = std::nextafter(q->scales[1], 1e30f);
      std::vector<std::byte> qs(storage_bytes(t, K * N));
      REQUIRE(quantize(w.to_f32(), w.shape(), *q, qs).ok());
      std::vector<float> deq(K * N);
      REQUIRE(dequantize(qs, w.shape(), *q, deq).ok());
      auto pw = pack_weights(w, trans_b, t == DType::I8 ? "i8" : "i4", &*q);
      REQUIRE_MESSAGE(pw.ok(), pw.status().to_string());
      CHECK(pw->scales.dtype() == (t == DType::I4 && bf16_scales ? DType::BF16 : DType::F32));
      const auto* d = reinterpret_cast<const uint8_t*>(pw->data.bytes().data());
      const std::byte* sb = pw->scales.bytes().data();
      auto sc = [&](int64_t i) {
        if (pw->scales.dtype() == DType::F32) return reinterpret_cast<const float*>(sb)[i];
        return std::bit_cast<float>(uint32_t{reinterpret_cast<const uint16_t*>(sb)[i]} << 16);
      };
      const int64_t NG = K / pw->group;
      int64_t mismatches = 0;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) {
          const int64_t p = n / 16, j = n % 16, P = (N + 15) / 16;
          // blocks of B rows: the u32 of column j holds row Bb + r at bits (32 / B) r
          const int64_t B = t == DType::I8 ? 4 : 8;
          uint32_t word;
          std::memcpy(&word, d + (packed_unit(p, k / B, (K + B - 1) / B, P) * 16 + j) * 4, 4);
          float v;
          if (t == DType::I8) {
            v = float(int8_t(word >> (8 * (k % 4)))) * sc(p * 16 + j);
          } else {
            const int u = static_cast<int>((word >> (4 * (k % 8))) & 15);
            v = float(u - 8) * sc(packed_unit(p, k / pw->group, NG, P) * 16 + j);
          }
          mismatches += v != deq[trans_b ? n * K + k : k * N + n];
        }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("pack_weights: i16vnni holds I16 weights in matmul_i8's order and refuses any past int16_operand_qmax(K)") {
  for (bool trans_b : {false, true}) {
    CAPTURE(trans_b);
    const int64_t K = 37, N = 20;  // K not a multiple of 4, a ragged second panel
    const Tensor w = random(trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 11);
    auto q = int16_weight_params(w, trans_b ? 0 : 1, int16_operand_qmax(K));
    REQUIRE(q.ok());
    std::vector<std::byte> qs(storage_bytes(DType::I16, K * N));
    REQUIRE(quantize(w.to_f32(), w.shape(), *q, qs).ok());
    auto pw = pack_weights(w, trans_b, "i16vnni", &*q);
    REQUIRE_MESSAGE(pw.ok(), pw.status().to_string());
    const int64_t P = (N + 15) / 16, KG = (K + 3) / 4;
    REQUIRE(pw->data.nbytes() == size_t(P * KG * 128));
    const auto* d = reinterpret_cast<const int16_t*>(pw->data.bytes().data());
    const auto* stored = reinterpret_cast<const int16_t*>(qs.data());
    const auto* sums = reinterpret_cast<const int32_t*>(pw->column_sums.bytes().data());
    int64_t mismatches = 0;
    for (int64_t n = 0; n < P * 16; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < KG * 4; ++k) {
        const int16_t want = n < N && k < K ? stored[trans_b ? n * K + k : k * N + n] : 0;
        mismatches += d[(((n / 16) * KG + k / 4) * 16 + n % 16) * 4 + k % 4] != want;
        sum += want;
      }
      mismatches += sums[n] != sum;
    }
    CHECK(mismatches == 0);
    CHECK(pw->max_abs == int16_operand_qmax(K));
    // Wider weights would let the kernel's 32-bit sums overflow.
    auto wide = int16_weight_params(w, trans_b ? 0 : 1, 32767);
    REQUIRE(wide.ok());
    CHECK(pack_weights(w, trans_b, "i16vnni", &*wide).status().message() ==
          "pack_weights: i16 weights reach 32767, past " + std::to_string(int16_operand_qmax(K)) +
              " (int16_operand_qmax of K 37)");
  }
}

// An embedding whose table the plan quantises (int4-weights: groups along the width; INT8 per
// row as a plan file may ask): the Session packs it and gathers from the packed bytes, giving the
// emulation's values bit for bit, out-of-range and negative indices included.
TEST_CASE("gather_q: INT4 and INT8 tables are packed and dequantised as the emulation stores them") {
  for (int64_t width : {64, 24})
    for (DType t : {DType::I4, DType::I8}) {
      CAPTURE(width);
      CAPTURE(dtype_name(t));
      const int64_t rows = 50;
      GraphBuilder b("embed");
      auto ids = b.input("ids", DType::I64, {3, 7});
      b.output(b.op1("Gather", {b.constant("table", random({rows, width}, 21, -3, 3)), ids}, {}, "gather"), "y");
      const Graph g = *b.build();
      SessionOptions o;
      o.use_cache = false;
      auto s = Session::create(o);
      REQUIRE(s.ok());
      auto plan = plan_from_policy(g, Policy::uniform(Mode::int4_weights), s->device_formats());
      REQUIRE(plan.ok());
      NodePlan& np = plan->nodes[static_cast<size_t>(*g.find_node("gather"))];
      REQUIRE(np.weight_quant);
      if (t == DType::I8) np.weight_quant = QuantParams{DType::I8};
      REQUIRE(calibrate_plan(g, *plan, {}).ok());
      REQUIRE(np.weight_quant->type == t);
      std::vector<int64_t> v(21);
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int64_t>(k * 7 % rows);
      v[3] = -1;   // the last row
      v[5] = -rows;
      const Tensor in = *Tensor::from_i64({3, 7}, v);
      auto emu = emulation_for_plan(g, *plan);
      REQUIRE_MESSAGE(emu.ok(), emu.status().to_string());
      ref::RunOptions ro;
      ro.emulation = &*emu;
      auto want = ref::run(g, {in}, ro);
      REQUIRE_MESSAGE(want.ok(), want.status().to_string());
      s->set_plan(std::make_shared<Plan>(*plan));
      auto exe = s->compile(g);
      REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
      const CompileStats& st = exe->compile_stats();
      CHECK(st.packed_weight_nodes == std::vector<std::string>{"gather"});
      CHECK(st.fallbacks == 0);
      const int64_t scales = static_cast<int64_t>(np.weight_quant->scales.size());
      CHECK(st.weight_bytes == static_cast<int64_t>(storage_bytes(t, rows * width)) + scales * 4);
      auto got = exe->run({in});
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      const std::vector<float> gv = (*got)[0].to_f32(), wv = (*want)[0].to_f32();
      REQUIRE(gv.size() == wv.size());
      int64_t diffs = 0;
      for (size_t k = 0; k < gv.size(); ++k) diffs += gv[k] != wv[k];
      CHECK(diffs == 0);
      // and they are the quantised values, not the table's
      const std::vector<float> table = random({rows, width}, 21, -3, 3).to_f32();
      int64_t changed = 0;
      for (size_t k = 0; k < v.size(); ++k)
        for (int64_t j = 0; j < width; ++j)
          changed += gv[k * width + j] != table[((v[k] + rows) % rows) * width + j];
      CHECK(changed > int64_t(v.size()) * width / 2);
    }
}

TEST_CASE("matmul_i8: an int8 chain runs u8 x s8 -> s32 with dynamic and static A scales, matching the emulation") {
  // a -> mm1 (int8: A is a graph input without a scale, so quantised per row as it arrives; its
  // output fake-quantised with its calibrated scale) -> mm2 (int8, A = mm1's output with that
  // static scale). Both u8 x s8 -> s32.
  // squeeze: mm2's weight scales halved, so weights saturate at -128 and 127 (the AVX2 kernel's
  // vpmaddubsw form needs |q| <= 127 and must step aside for them).
  struct Chain {
    int64_t m, k, n1, n2;
    bool gemm, squeeze = false, epilogue = false;  // epilogue: y = Relu(mm2 + bias), fused into mm2
  };
  for (const Chain& c : {Chain{1, 37, 45, 70, false}, Chain{3, 64, 33, 17, true}, Chain{13, 40, 96, 50, false},
                         Chain{50, 100, 130, 81, true}, Chain{14, 24, 40, 33, false, true}, Chain{9, 40, 64, 48, false, false, true},
                         Chain{2, 40, 64, 48, true, false, true},
                         // mm1: 3 chunks of rows, columns in 2 groups (work items split a chunk's
                         // columns between threads); a GEMV-like M with 300 columns in groups.
                         Chain{100, 64, 256, 130, false}, Chain{2, 40, 300, 48, false},
                         // K multiples of 64, at least 16 rows: AMX-INT8 tiles where the host has them.
                         Chain{40, 64, 128, 96, false}, Chain{70, 128, 64, 50, true, false, true}})
  // w7: planned for a device asking for narrower INT8 operands (AVX2 without VNNI;
  // DeviceFormats::int8_weight_max 64), whose kernels then take the plain vpmaddubsw: mm2, reading
  // mm1's INT8 output, gets weights of |q| <= 64; mm1 quantises its rows at run time: u7 rows
  // and 8-bit weights (a GEMV mm1 is weight-only: 8-bit weights). Otherwise 8-bit weights, and
  // mm1's rows in 16 bits where the device says int8_s16_rows.
  for (const bool w7 : {false, true}) {
    if (w7 && c.squeeze) continue;
    CAPTURE(c.m);
    CAPTURE(c.n1);
    CAPTURE(c.gemm);
    CAPTURE(w7);
    GraphBuilder b("i8chain");
    auto a = b.input("a", DType::F32, make_shape(std::vector<int64_t>{c.m, c.k}));
    auto h = b.op1("MatMul", {a, b.constant("w1", random({c.k, c.n1}, 5))}, {}, "mm1");
    ValueId y;
    if (c.gemm)
      y = b.op1("Gemm", {h, b.constant("w2", random({c.n2, c.n1}, 6)), b.constant("bias", random({c.n2}, 8))},
                {{"transB", int64_t{1}}}, "mm2");
    else
      y = b.op1("MatMul", {h, b.constant("w2", random({c.n1, c.n2}, 6))}, {}, "mm2");
    if (c.epilogue) y = b.op1("Relu", {b.op1("Add", {y, b.constant("b2", random({c.n2}, 10))}, {}, "add")}, {}, "relu");
    b.output(y, "y");
    auto g = b.build();
    REQUIRE(g.ok());
    const Tensor x = random({c.m, c.k}, 4, -2, 2);
    const auto dump = std::filesystem::temp_directory_path() / ("hpf-i8chain-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dump);
    SessionOptions o;
    o.use_cache = false;
    o.dump_dir = dump.string();
    auto s = Session::create(o);
    REQUIRE(s.ok());
    auto plan = plan_from_policy(*g, Policy::uniform(Mode::int8), s->device_formats());
    REQUIRE(plan.ok());
    std::map<std::string, Observer> obs;
    std::vector<std::string> observed{g->value(h).name, "y"};
    if (c.epilogue) observed.push_back("mm2:out");
    REQUIRE(observe_values(*g, {{x}}, observed, obs).ok());
    PlannerOptions po;
    po.device = s->device_formats();
    po.device.int8_weight_max = w7 ? 64 : 127;
    REQUIRE(calibrate_plan(*g, *plan, obs, po).ok());
    for (const std::string mm : {"mm1", "mm2"}) {  // the weights' largest |q|: the range asked for
      const int32_t mx =
          test::int8_max_abs(*g->constant(g->node(*g->find_node(mm)).inputs[1]), *plan->find(mm)->weight_quant);
      CHECK(mx == (w7 && mm == "mm2" ? 64 : 127));
    }
    // Unnarrowed, a device with int8_s16_rows (this one, on AVX2 without VNNI) takes them in 16 bits.
    const RowQuant rows1 = c.m <= 4 ? RowQuant::s8 : w7 ? RowQuant::u7 : po.device.int8_s16_rows ? RowQuant::s16 : RowQuant::s8;
    CHECK(plan->find("mm1")->dynamic_rows == rows1);
    CHECK(plan->find("mm2")->dynamic_rows == RowQuant::s8);
    if (c.epilogue)  // the int8 plan gives Add and Relu bf16 (int8 is for matmul and conv); keep them f32
      for (NodePlan& np : plan->nodes)
        if (np.name == "add" || np.name == "relu") np.storage = DType::F32;
    if (c.squeeze)
      for (NodePlan& np : plan->nodes)
        if (np.name == "mm2")
          for (float& sc : np.weight_quant->scales) sc *= 0.5f;
    auto emu = emulation_for_plan(*g, *plan);
    REQUIRE_MESSAGE(emu.ok(), emu.status().to_string());
    ref::RunOptions ro;
    ro.emulation = &*emu;
    auto want = ref::run(*g, {x}, ro);
    REQUIRE(want.ok());
    s->set_plan(std::make_shared<Plan>(*plan));
    auto exe = s->compile(*g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(exe->compile_stats().fallbacks == 0);
    CHECK(exe->compile_stats().packed_weight_nodes == std::vector<std::string>{"mm1", "mm2"});
    // mm1 reads a graph input: per-row scales, unless it is a GEMV (<= 4 rows: weight-only).
    CHECK(exe->compile_stats().int8_compute_nodes ==
          (c.m > 4 ? std::vector<std::string>{"mm1", "mm2"} : std::vector<std::string>{"mm2"}));
    CHECK(exe->compile_stats().kernels == 2);  // with the epilogue: Add and Relu inside mm2's kernel
    // The kernels know the weights' range: mm2's, and mm1's where it computes in INT8.
    int le64 = 0, u7 = 0, i8_kernels = 0;
    for (const auto& e : std::filesystem::directory_iterator(dump)) {
      std::ifstream f(e.path());
      const std::string src((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (src.find("i8_dp(") == std::string::npos) continue;
      ++i8_kernels;
      le64 += src.find("#define I8_W_LE64 1") != std::string::npos;
      u7 += src.find("#define I8_U7 1") != std::string::npos;
    }
    std::filesystem::remove_all(dump);
    CHECK(i8_kernels == (c.m > 4 ? 2 : 1));
    CHECK(le64 == (w7 ? 1 : 0));
    CHECK(u7 == (w7 && c.m > 4 ? 1 : 0));
    auto got = exe->run({x});
    REQUIRE(got.ok());
    // mm2 reads mm1's output as INT8, so mm1 stores it so; nothing reads mm2's as INT8: float.
    CHECK(plan->find("mm1")->activation_quant);
    CHECK(!plan->find("mm2")->activation_quant);
    CHECK(plan->find("mm2")->storage == DType::F32);
    // Integer sums are exact; only the final FP32 scaling (and the epilogue's FP32 arithmetic)
    // differs from the emulation's FP64: a few ulps. Except where one of mm1's outputs lies
    // within those ulps of a rounding boundary of its INT8 scale: stored one step apart, it
    // moves mm2's whole row by that step times a row of mm2's weights (k, the sign found from
    // the row's largest difference). At most one such row.
    const std::vector<float> gv = (*got)[0].to_f32(), wv = (*want)[0].to_f32();
    const float sh = plan->find("mm1")->activation_quant->scales[0];
    std::vector<float> w2 = g->constant(g->node(*g->find_node("mm2")).inputs[1])->to_f32();
    REQUIRE(fake_quantize(w2, g->constant(g->node(*g->find_node("mm2")).inputs[1])->shape(),
                          *plan->find("mm2")->weight_quant).ok());
    auto w2_at = [&](int64_t k, int64_t j) { return c.gemm ? w2[j * c.n1 + k] : w2[k * c.n2 + j]; };
    int stepped_rows = 0;
    for (int64_t i = 0; i < c.m; ++i) {
      auto close = [&](int64_t j, double shift) {
        const double d = std::abs(double(gv[i * c.n2 + j]) - wv[i * c.n2 + j] - shift);
        return d <= 1e-5 * (std::abs(wv[i * c.n2 + j]) + 1);
      };
      int64_t worst = 0;
      for (int64_t j = 0; j < c.n2; ++j)
        if (std::abs(gv[i * c.n2 + j] - wv[i * c.n2 + j]) > std::abs(gv[i * c.n2 + worst] - wv[i * c.n2 + worst])) worst = j;
      if (close(worst, 0)) continue;
      const double dw = double(gv[i * c.n2 + worst]) - wv[i * c.n2 + worst];
      bool explained = false;
      for (int64_t k = 0; k < c.n1 && !explained; ++k)
        for (const double sg : {1.0, -1.0}) {
          if (!close(worst, sg * sh * w2_at(k, worst))) continue;
          explained = true;
          for (int64_t j = 0; j < c.n2; ++j)  // a Relu after mm2 may clip either side
            explained = explained && (close(j, sg * sh * w2_at(k, j)) ||
                                      ((gv[i * c.n2 + j] == 0 || wv[i * c.n2 + j] == 0) &&
                                       std::abs(gv[i * c.n2 + j] - wv[i * c.n2 + j]) <= sh * std::abs(w2_at(k, j)) * 1.0001));
          if (explained) break;
        }
      CHECK_MESSAGE(explained, "row " << i << ": " << gv[i * c.n2 + worst] << " vs " << wv[i * c.n2 + worst] << " (" << dw << ")");
      ++stepped_rows;
    }
    CHECK(stepped_rows <= 1);
  }
}

TEST_CASE("WeightCache: a second compile of the same model reuses the packed weights, bit for bit") {
  const Case c{70, 150, 200, false, false, 0, true};
  const Graph g = build(c);
  const Tensor a = random({c.m, c.k}, 3, -2, 2);
  SessionOptions o;
  o.use_cache = false;
  o.weight_cache = WeightCache::create();
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto plan = std::make_shared<Plan>(calibrated_plan(g, Mode::int8, s->device_formats(), a, {"y", "mm:out"}));
  s->set_plan(plan);
  std::vector<std::vector<float>> outs;
  for (int k = 0; k < 2; ++k) {
    auto exe = s->compile(g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(exe->compile_stats().int8_compute_nodes == std::vector<std::string>{"mm"});
    auto got = exe->run({a});
    REQUIRE(got.ok());
    outs.push_back((*got)[0].to_f32());
  }
  CHECK(o.weight_cache->entries() == 1);
  CHECK(o.weight_cache->hits() == 1);
  CHECK(o.weight_cache->bytes() > 0);
  CHECK(outs[0] == outs[1]);
  // Other scales are another entry, not a stale hit.
  auto plan2 = std::make_shared<Plan>(*plan);
  for (NodePlan& np : plan2->nodes)
    if (np.name == "mm")
      for (float& sc : np.weight_quant->scales) sc *= 2.0f;
  s->set_plan(plan2);
  auto exe = s->compile(g);
  REQUIRE(exe.ok());
  CHECK(o.weight_cache->entries() == 2);
  CHECK(o.weight_cache->hits() == 1);
}
