// INT8 Conv (conv_i8 kernels, u8 x s8 -> s32) through the Session against the reference
// interpreter's emulation of the same calibrated int8 plan (input quantised per tensor with
// NodePlan::input_quant, weights per output channel, the output fake-quantised): 3x3 with
// padding, strides, dilations and groups, pointwise in place and strided, a 7x7 stem on 3
// channels, 1-D, channel counts off the multiples of 4 and 12, several row and pixel blocks, a
// wide row, BF16 input, a fused Relu and residual Add; then the plan's rules (depthwise falls
// back, the scales round-trip in JSON, an uncalibrated input scale is an error).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "hpf/calibration.hpp"
#include "hpf/planner.hpp"
#include "hpf/precision.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "tests/runtime/quantised_diff.hpp"
#include "tests/runtime/random_tensor.hpp"

using namespace hpf;

namespace {

struct Case {
  const char* what;
  int64_t n, c, h, w, m, kh, kw;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  bool bias = true;
  bool one_d = false;    // [N, C, W] input, kernel [M, C/group, kw]
  bool pre_relu = false; // x -> Relu -> Conv: the Relu is BF16 in the int8 plan, so the Conv reads BF16
  bool epilogue = false; // Conv -> Add(residual input) -> Relu, fused into the kernel
};

Graph build(const Case& c) {
  GraphBuilder b("conv_i8");
  const std::vector<int64_t> xs = c.one_d ? std::vector<int64_t>{c.n, c.c, c.w} : std::vector<int64_t>{c.n, c.c, c.h, c.w};
  auto x = b.input("x", DType::F32, make_shape(xs));
  ValueId in = c.pre_relu ? b.op1("Relu", {x}, {}, "pre") : x;
  const std::vector<int64_t> ws = c.one_d ? std::vector<int64_t>{c.m, c.c / c.group, c.kw}
                                          : std::vector<int64_t>{c.m, c.c / c.group, c.kh, c.kw};
  std::vector<ValueId> ins = {in, b.constant("w", test::random_tensor(ws, 7, -0.5f, 0.5f))};
  if (c.bias) ins.push_back(b.constant("b", test::random_tensor({c.m}, 9, -0.5f, 0.5f)));
  Attributes a{{"group", c.group}};
  if (!c.strides.empty()) a["strides"] = c.strides;
  if (!c.pads.empty()) a["pads"] = c.pads;
  if (!c.dilations.empty()) a["dilations"] = c.dilations;
  ValueId y = b.op1("Conv", ins, a, "conv");
  if (c.epilogue) {
    auto r = b.input("r", DType::F32, make_shape(std::vector<int64_t>{c.n, c.m, c.h, c.w}));  // same-size output (stride 1, same pads)
    y = b.op1("Relu", {b.op1("Add", {y, r}, {}, "res")}, {}, "relu");
  }
  b.output(y, "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

std::vector<Tensor> inputs_of(const Graph& g, uint32_t seed) {
  std::vector<Tensor> t;
  for (ValueId v : g.inputs()) {
    std::vector<int64_t> dims;
    for (const Dim& d : g.value(v).shape) dims.push_back(d.value);
    t.push_back(test::random_tensor(dims, seed++, -2, 2));
  }
  return t;
}

// The uniform int8 plan on the CPU device, calibrated on the test's own inputs; `weight_max` < 127:
// as for a device asking for narrower INT8 operands (DeviceFormats::int8_weight_max).
Plan int8_plan(const Graph& g, const DeviceFormats& f, const std::vector<Tensor>& in, int weight_max = 127) {
  auto plan = plan_from_policy(g, Policy::uniform(Mode::int8), f);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  std::map<std::string, Observer> obs;
  REQUIRE(observe_values(g, {in}, values_to_observe(g, *plan), obs).ok());
  PlannerOptions po;
  po.device.int8_weight_max = weight_max;
  Status s = calibrate_plan(g, *plan, obs, po);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return std::move(plan).value();
}

struct Result {
  double worst = 0;        // max |got - want| / (1 + |want|), steps apart aside
  int64_t step_diffs = 0;  // outputs one quantisation step apart
  int64_t elements = 0;
  CompileStats stats;
  int weight_max = 0;  // the plan's largest |q| of the Conv's weights
  bool nonneg = false; // the kernel took the never-negative input path (I8_A_NONNEG)
  bool reuse = false;  // the kernel keeps a pointwise block's quantised pixels across channel blocks
};

// `out_quant`: the plan stores the Conv's output in INT8 (fake-quantised in the kernel), else
// in F32 (the sums themselves are compared, not their rounding to the output's grid).
// `specials`: planned on the random inputs, run on them with special values in the first
// (test::with_special_values).
Result run_case(const Case& c, bool out_quant, bool specials = false, int weight_max = 127) {
  Result r;
  const Graph g = build(c);
  std::vector<Tensor> in = inputs_of(g, 3);
  const auto dump = std::filesystem::temp_directory_path() / ("hpf-conv-i8-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dump);
  SessionOptions o;
  o.use_cache = false;
  o.dump_dir = dump.string();
  auto s = Session::create(o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto plan = std::make_shared<Plan>(int8_plan(g, s->device_formats(), in, weight_max));
  if (specials) in[0] = test::with_special_values(in[0]);
  NodePlan& np = plan->nodes[static_cast<size_t>(*g.find_node("conv"))];
  if (!out_quant) {
    np.activation_quant.reset();
    np.storage = DType::F32;
  }
  REQUIRE(np.mode == Mode::int8);
  REQUIRE(np.input_quant);
  REQUIRE(np.input_quant->scales.size() == 1);
  r.weight_max = test::int8_max_abs(*g.constant(g.node(*g.find_node("conv")).inputs[1]), *np.weight_quant);
  auto emu = emulation_for_plan(g, *plan);
  REQUIRE_MESSAGE(emu.ok(), emu.status().to_string());
  ref::RunOptions ro;
  ro.emulation = &*emu;
  auto want = ref::run(g, in, ro);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  s->set_plan(plan);
  auto exe = s->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  r.stats = exe->compile_stats();
  for (const auto& e : std::filesystem::directory_iterator(dump)) {
    std::ifstream f(e.path());
    const std::string src((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    r.nonneg = r.nonneg || src.find("#define I8_A_NONNEG 1") != std::string::npos;
    r.reuse = r.reuse || src.find("the pixel block bp holds") != std::string::npos;
  }
  std::filesystem::remove_all(dump);
  auto got = exe->run(in);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  REQUIRE((*got)[0].numel() == (*want)[0].numel());
  const float step = out_quant ? np.activation_quant->scales[0] : 0.0f;
  const test::QuantisedDiff diff = test::quantised_diff((*got)[0], (*want)[0], step);
  r.worst = diff.worst;
  r.step_diffs = diff.step_diffs;
  r.elements = diff.elements;
  return r;
}

const Case kCases[] = {
    {"3x3 pad 1, C 20, M 30, two images", 2, 20, 9, 9, 30, 3, 3, {}, {1, 1, 1, 1}, {}},
    {"3x3 stride 2 on 15x13", 1, 8, 15, 13, 16, 3, 3, {2, 2}, {1, 1, 1, 1}, {}},
    {"pointwise in place, 100 pixels, C 70", 1, 70, 10, 10, 40, 1, 1, {}, {}, {}, 1, false},
    {"pointwise stride 2", 1, 16, 14, 14, 24, 1, 1, {2, 2}, {}, {}},
    {"pointwise strides 3 x 2, 130 pixels", 1, 9, 30, 25, 13, 1, 1, {3, 2}, {}, {}},
    {"pointwise stride 2 reading an end pad (a window)", 1, 8, 8, 8, 12, 1, 1, {2, 2}, {0, 0, 1, 1}, {}},
    {"7x7 stride 2 pad 3 on 3 channels", 1, 3, 32, 32, 8, 7, 7, {2, 2}, {3, 3, 3, 3}, {}},
    {"groups 2, dilation 2", 1, 8, 11, 11, 12, 3, 3, {}, {2, 2, 2, 2}, {2, 2}, 2},
    {"1-D, kernel 5", 2, 12, 1, 50, 14, 1, 5, {}, {2, 2}, {}, 1, true, true},
    {"1-D, 700 long (blocks inside the row, a window each)", 1, 8, 1, 700, 12, 1, 5, {}, {2, 2}, {}, 1, true, true},
    {"1-D, stride 2, dilation 3", 1, 8, 1, 401, 12, 1, 3, {2}, {4, 1}, {3}, 1, true, true},
    {"300 output channels (two row blocks), 7x7 map", 1, 36, 7, 7, 300, 3, 3, {}, {1, 1, 1, 1}, {}},
    {"a 300-wide row, asymmetric pads", 1, 5, 3, 300, 6, 3, 3, {}, {0, 2, 1, 0}, {}},
    {"BF16 input (a Relu before it)", 1, 12, 8, 8, 20, 3, 3, {}, {1, 1, 1, 1}, {}, 1, true, false, true},
    {"residual Add and Relu fused", 1, 16, 6, 6, 24, 3, 3, {}, {1, 1, 1, 1}, {}, 1, true, false, false, true},
    {"pointwise, a Relu before it, C 70", 1, 70, 10, 10, 40, 1, 1, {}, {}, {}, 1, true, false, true},
    {"7x7 map, a Relu before it, C 36 (9 k-groups a tap: an odd count)", 1, 36, 7, 7, 30, 3, 3, {}, {1, 1, 1, 1}, {}, 1, true, false, true},
    // Pointwise with one slice of channels and two channel blocks (300 rows): the blocks of one
    // pixel block run in turn and quantise its pixels once (two images, three pixel blocks each).
    {"pointwise in place, 300 output channels, 3 pixel blocks, two images", 2, 40, 12, 12, 300, 1, 1, {}, {}, {}},
    {"pointwise stride 2, 300 output channels, 3 pixel blocks", 1, 40, 23, 24, 300, 1, 1, {2, 2}, {}, {}},
    {"pointwise, C 400 (100 quads: one slice of them), 300 output channels", 1, 400, 9, 9, 300, 1, 1, {}, {}, {}},
    // A block's last vector of at most 4 pixels takes the output channels in its lanes (with
    // 256-bit vectors; 9x9 and 7x7 end in 1, 100 pixels and 6x6 in 4, 130 in 2): 35 pixels end
    // in 3, 44 channels in two slices, 13 output channels in two items of one row block each.
    {"a last vector of 3 pixels (5x7), C 44 in two slices, 13 output channels", 1, 44, 5, 7, 13, 3, 3, {}, {1, 1, 1, 1}, {}},
};

}  // namespace

TEST_CASE("conv_i8: int8 Convs match the emulation of their calibrated plan") {
  for (const Case& c : kCases)
    for (bool out_quant : {true, false}) {
      const std::string what = c.what;
      CAPTURE(what);
      CAPTURE(out_quant);
      const Result r = run_case(c, out_quant);
      CHECK(r.stats.fallbacks == 0);
      CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"conv"});
      if (c.epilogue) CHECK(r.stats.kernels == 1);  // the Add and the Relu run in the conv's epilogue
      if (c.m == 300 && c.kh == 1) CHECK(r.reuse);
      // FP32 sums of exact products against the emulation's FP64 ones: a few ulps.
      CHECK_MESSAGE(r.worst <= 2e-6, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
}

TEST_CASE("conv_i8: NaN, infinities and values past the INT32 range in the input quantise as the emulation's") {
  // NaN -> 0, the rest clamped to [-128, 127]: the outputs are finite and the emulation's.
  for (const Case& c : {kCases[0], kCases[2], kCases[13]})
    for (bool out_quant : {true, false}) {
      const std::string what = c.what;
      CAPTURE(what);
      CAPTURE(out_quant);
      const Result r = run_case(c, out_quant, true);
      CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"conv"});
      CHECK_MESSAGE(r.worst <= 2e-6, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
}

TEST_CASE("conv_i8: 7-bit weights on a device asking for narrower operands; a never negative input keeps 8 bits otherwise") {
  // A Relu's output quantises to 0..127 (u7), read as it is (no zero point). With the device's
  // 7-bit weights (the int8-narrow plan) every input gets them; u7 with 7-bit weights sums two
  // k-groups in 16 bits on AVX2 (I8_PAIR, i8_dp2), the others take vpmaddubsw one k-group at a
  // time. Either way the outputs are the emulation's; special values too (NaN through a Relu
  // stays NaN: quantised to 0). Odd and even k-group counts, pointwise, a 7x7 map, a last
  // vector of 3 pixels.
  for (const Case& c : {kCases[13], kCases[0], kCases[14], kCases[15], kCases[16], kCases[20]})
    for (const bool specials : {false, true}) {
      const std::string what = c.what;
      CAPTURE(what);
      CAPTURE(specials);
      const Result r = run_case(c, true, specials, 64);
      CHECK(r.stats.int8_compute_nodes == std::vector<std::string>{"conv"});
      CHECK(r.weight_max == 64);
      CHECK(r.nonneg == c.pre_relu);
      CHECK_MESSAGE(r.worst <= 2e-6, "worst relative error " << r.worst);
      CHECK(r.step_diffs * 100 <= r.elements);
    }
  // Without the device's preference: 8-bit weights, and a Relu's output still without a zero point.
  for (const Case& c : {kCases[13], kCases[15]}) {
    const Result r = run_case(c, true);
    CHECK(r.weight_max == 127);
    CHECK(r.nonneg);
    CHECK_MESSAGE(r.worst <= 2e-6, "worst relative error " << r.worst);
  }
}

TEST_CASE("conv_i8: the plan's rules for int8 Convs") {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  SUBCASE("a depthwise Conv falls back to bf16; the others get an input scale") {
    GraphBuilder b("dw");
    auto x = b.input("x", DType::F32, make_shape(std::vector<int64_t>{1, 8, 6, 6}));
    auto h = b.op1("Conv", {x, b.constant("wd", test::random_tensor({8, 1, 3, 3}, 1))},
                   {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "depthwise");
    b.output(b.op1("Conv", {h, b.constant("wp", test::random_tensor({4, 8, 1, 1}, 2))}, {}, "pointwise"), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    std::vector<Fallback> fallbacks;
    auto plan = plan_from_policy(*g, Policy::uniform(Mode::int8), s->device_formats(), &fallbacks);
    REQUIRE(plan.ok());
    CHECK(plan->find("depthwise")->mode == Mode::bf16);
    CHECK(!plan->find("depthwise")->input_quant);
    CHECK(plan->find("pointwise")->mode == Mode::int8);
    CHECK(plan->find("pointwise")->input_quant);
    REQUIRE(fallbacks.size() == 1);
    CHECK(fallbacks[0].reason == "a depthwise Conv has no int8 kernel");
    CHECK(values_to_observe(*g, *plan) == std::vector<std::string>{"depthwise:out", "y"});
  }
  const Case c{"plain", 1, 8, 5, 5, 8, 3, 3, {}, {1, 1, 1, 1}, {}};
  const Graph g = build(c);
  const std::vector<Tensor> in = inputs_of(g, 5);
  SUBCASE("input scales are saved and loaded with the plan") {
    const Plan plan = int8_plan(g, s->device_formats(), in);
    auto back = Plan::from_json(plan.to_json());
    REQUIRE_MESSAGE(back.ok(), back.status().to_string());
    REQUIRE(back->find("conv")->input_quant);
    CHECK(back->find("conv")->input_quant->scales == plan.find("conv")->input_quant->scales);
    CHECK(back->to_json() == plan.to_json());
  }
  SUBCASE("an int8 Conv without a calibrated input scale does not compile") {
    auto plan = plan_from_policy(g, Policy::uniform(Mode::int8), s->device_formats());
    REQUIRE(plan.ok());
    s->set_plan(std::make_shared<Plan>(*plan));
    auto exe = s->compile(g);
    REQUIRE(!exe.ok());
    CHECK(exe.status().message().find("node 'conv': an int8 Conv needs a calibrated") != std::string::npos);
  }
}
