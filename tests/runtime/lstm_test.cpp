// LSTM on the CPU plugin ("lstm" kernels) against the reference interpreter: directions, optional
// inputs (B, sequence_lens, initial_h/c, peepholes) and outputs, widths off the vector length,
// BF16 weights; forms the kernel declines run on the reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "tests/runtime/random_tensor.hpp"

using namespace hpf;

namespace {

Tensor random(std::vector<int64_t> shape, uint32_t seed, float lo = -0.5f, float hi = 0.5f) {
  return test::random_tensor(std::move(shape), seed, lo, hi);
}

struct Case {
  int64_t T, B, I, H;
  std::string direction = "forward";
  bool bias = true, lens = false, init = false, peep = false;
  int outputs = 7;  // graph outputs, bits: Y, Y_h, Y_c
  Attributes extra = {};
};

struct Built {
  Graph g;
  std::vector<Tensor> inputs;
};

Built build(const Case& c) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = 4 * c.H;
  GraphBuilder b("lstm");
  std::vector<Tensor> feeds = {random({c.T, c.B, c.I}, 1, -2, 2)};
  // PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)): a contractive recurrence, so FP32 and FP64
  // stay close over long sequences (with much larger R, rounding differences grow chaotically).
  const float k = 1.0f / std::sqrt(static_cast<float>(c.H));
  std::vector<ValueId> in = {b.input("x", DType::F32, make_shape(std::vector<int64_t>{c.T, c.B, c.I})),
                             b.constant("w", random({D, G, c.I}, 2, -k, k)), b.constant("r", random({D, G, c.H}, 3, -k, k))};
  in.push_back(c.bias ? b.constant("b", random({D, 2 * G}, 4, -k, k)) : kNoValue);
  if (c.lens) {
    std::vector<int32_t> l(static_cast<size_t>(c.B));
    for (int64_t k = 0; k < c.B; ++k) l[static_cast<size_t>(k)] = static_cast<int32_t>((c.T - k) > 0 ? c.T - k : 0);
    Tensor lt(DType::I32, {c.B});
    std::memcpy(lt.bytes().data(), l.data(), l.size() * 4);
    in.push_back(b.input("lens", DType::I32, make_shape(std::vector<int64_t>{c.B})));
    feeds.push_back(lt);
  } else {
    in.push_back(kNoValue);
  }
  if (c.init) {
    in.push_back(b.input("h0", DType::F32, make_shape(std::vector<int64_t>{D, c.B, c.H})));
    in.push_back(b.input("c0", DType::F32, make_shape(std::vector<int64_t>{D, c.B, c.H})));
    feeds.push_back(random({D, c.B, c.H}, 5, -1, 1));
    feeds.push_back(random({D, c.B, c.H}, 6, -1, 1));
  } else if (c.peep) {
    in.push_back(kNoValue);
    in.push_back(kNoValue);
  }
  if (c.peep) in.push_back(b.constant("p", random({D, 3 * c.H}, 7, -k, k)));
  while (!in.empty() && in.back() == kNoValue) in.pop_back();
  Attributes a = c.extra;
  a["direction"] = c.direction;
  a["hidden_size"] = c.H;
  // outputs == 1: the node has Y alone; else all three, the graph reading those in the bits.
  auto node = b.op("LSTM", in, a, c.outputs == 1 ? 1 : 3, "lstm");
  for (int k = 0; k < 3; ++k)
    if ((c.outputs >> k) & 1) b.output(node[static_cast<size_t>(k)], "y" + std::to_string(k));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return {std::move(g).value(), feeds};
}

// The model compiled and run on the CPU plugin (storage `precision`), with its compile stats.
struct DeviceRun {
  std::vector<Tensor> outputs;
  CompileStats stats;
};
DeviceRun run_on_cpu(const Built& m, DType precision = DType::F32) {
  SessionOptions o;
  o.use_cache = false;
  o.precision = precision;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(m.g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  auto got = exe->run(m.inputs);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  return {std::move(got).value(), exe->compile_stats()};
}

}  // namespace

TEST_CASE("lstm: the CPU kernel matches the reference") {
  const Case cases[] = {
      {5, 1, 13, 20},
      {4, 3, 32, 16, "reverse"},
      {6, 2, 40, 33, "bidirectional", true, true, true, true},
      {3, 2, 17, 24, "forward", false, false, true, false, 2},
      {4, 3, 8, 16, "bidirectional", true, true, false, true, 5},
      {64, 1, 64, 128},
      {7, 2, 16, 16, "reverse", true, true, false, false, 1},
      // several chunks of steps (32768 / 4H per chunk): 16 and 32
      {40, 1, 24, 512},
      {70, 2, 20, 256, "bidirectional", true, true, true, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.T);
    CAPTURE(c.H);
    CAPTURE(c.direction);
    Built m = build(c);
    auto want = ref::run(m.g, m.inputs);
    REQUIRE_MESSAGE(want.ok(), want.status().to_string());
    const DeviceRun got = run_on_cpu(m);
    CHECK(got.stats.fallbacks == 0);
    REQUIRE(got.outputs.size() == want->size());
    for (size_t k = 0; k < got.outputs.size(); ++k) {
      const std::vector<float> gv = got.outputs[k].to_f32(), wv = (*want)[k].to_f32();
      REQUIRE(gv.size() == wv.size());
      double worst = 0;
      for (size_t i = 0; i < gv.size(); ++i) worst = std::max(worst, std::abs(double(gv[i]) - wv[i]));
      // FP32 gates and states (a few ulps per step, accumulated over the sequence) against FP64.
      CHECK_MESSAGE(worst <= 1e-6, "output " << k << ": worst absolute error " << worst);
    }
  }
}

TEST_CASE("lstm: BF16 weights and storage stay close to the reference's BF16 emulation") {
  Built m = build({8, 2, 48, 32, "bidirectional", true, false, true, false});
  const DeviceRun got = run_on_cpu(m, DType::BF16);
  CHECK(got.stats.fallbacks == 0);
  ref::Emulation e;
  e.default_format = DType::BF16;
  ref::RunOptions ro;
  ro.emulation = &e;
  auto want = ref::run(m.g, m.inputs, ro);
  REQUIRE(want.ok());
  for (size_t k = 0; k < got.outputs.size(); ++k) {
    const std::vector<float> gv = got.outputs[k].to_f32(), wv = (*want)[k].to_f32();
    double worst = 0;
    for (size_t i = 0; i < gv.size(); ++i) worst = std::max(worst, std::abs(double(gv[i]) - wv[i]));
    // Outputs rounded to BF16 (2^-9 relative) on both sides, |values| < 1: at most a step or two.
    CHECK_MESSAGE(worst <= 8e-3, "output " << k << ": worst absolute error " << worst);
  }
}

TEST_CASE("lstm: forms the kernel does not take run on the reference") {
  for (const auto& [what, extra] : std::vector<std::pair<std::string, Attributes>>{
           {"clip", {{"clip", 0.5f}}},
           {"activations", {{"activations", std::vector<std::string>{"Sigmoid", "Relu", "Tanh"}}}},
           {"input_forget", {{"input_forget", int64_t{1}}}}}) {
    CAPTURE(what);
    Case c{4, 2, 8, 16};
    c.extra = extra;
    Built m = build(c);
    auto want = ref::run(m.g, m.inputs);
    REQUIRE(want.ok());
    const DeviceRun got = run_on_cpu(m);
    CHECK(got.stats.fallbacks == 1);
    CHECK(got.outputs[0].to_f32() == (*want)[0].to_f32());
  }
}
