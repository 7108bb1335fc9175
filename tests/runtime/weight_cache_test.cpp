// WeightCache: executables compiled from one graph share the device copies of its large weights
// (planner evaluations, LiveExecutable shape variants), each format separately, and never serve
// a copy of a tensor that no longer exists.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <optional>

#include "hpf/live.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "tests/runtime/random_tensor.hpp"

using namespace hpf;

namespace {

// y = x @ w + c: w [256, 256] (256 KiB, packed for the GEMM), c [rows, 256].
Graph model(uint32_t seed, int64_t rows = 8) {
  GraphBuilder b("shared");
  auto x = b.input("x", DType::F32, Shape{rows, 256});
  auto w = b.constant("w", test::random_tensor({256, 256}, seed));
  auto c = b.constant("c", test::random_tensor({rows, 256}, seed + 1));
  const ValueId mm = b.op1("MatMul", {x, w}, {}, "mm");
  b.output(b.op1("Add", {mm, c}, {}, "add"), "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

std::vector<float> run(Executable& exe, const Tensor& x) {
  auto out = exe.run({x});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  return (*out)[0].to_f32();
}

void check_matches_reference(const Graph& g, const Tensor& x, const std::vector<float>& got) {
  auto want = ref::run(g, {x});
  REQUIRE(want.ok());
  const std::vector<float> w = (*want)[0].to_f32();
  REQUIRE(w.size() == got.size());
  size_t off = 0;
  for (size_t i = 0; i < w.size(); ++i) off += !(std::abs(got[i] - w[i]) <= 1e-4f * (1 + std::abs(w[i])));
  CHECK(off == 0);
}

SessionOptions options(std::shared_ptr<WeightCache> cache) {
  SessionOptions o;
  o.use_cache = false;
  o.weight_cache = std::move(cache);
  return o;
}

}  // namespace

TEST_CASE("WeightCache: compiles of one graph share the device copies of its large weights") {
  const Graph g = model(5);
  const Tensor x = test::random_tensor({8, 256}, 11);
  auto cache = WeightCache::create();
  auto s = Session::create(options(cache));
  REQUIRE(s.ok());
  std::optional<Executable> first(s->compile(g).value());
  const int64_t entries = cache->entries();
  // w's packed FP32 panels and their device copy; c (8 KiB, under the 64 KiB threshold) is
  // uploaded by each executable.
  CHECK(entries == 2);
  CHECK(cache->hits() == 0);
  const std::vector<float> y1 = run(*first, x);
  check_matches_reference(g, x, y1);

  auto second = s->compile(g);
  REQUIRE(second.ok());
  CHECK(cache->entries() == entries);
  CHECK(cache->hits() == 2);  // the packed panels and their device copy
  first.reset();              // the shared buffer outlives the executable that made it
  CHECK(run(*second, x) == y1);

  // Another storage format is another copy: w stored as BF16 (128 KiB).
  SessionOptions o = options(cache);
  o.precision = DType::BF16;
  auto s16 = Session::create(o);
  REQUIRE(s16.ok());
  auto bf16 = s16->compile(g);
  REQUIRE_MESSAGE(bf16.ok(), bf16.status().to_string());
  CHECK(cache->entries() == entries + 1);
  CHECK(cache->hits() == 2);
  CHECK(run(*second, x) == y1);
}

TEST_CASE("WeightCache: a device copy is never served for another tensor, and dead ones are dropped") {
  auto cache = WeightCache::create();
  auto s = Session::create(options(cache));
  REQUIRE(s.ok());
  const Tensor x = test::random_tensor({8, 256}, 11);
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    // A new graph each round, its constant of the same name, shape and format but new values
    // (an elementwise graph: nothing is packed, only device copies are cached).
    GraphBuilder b("elementwise");
    auto in = b.input("x", DType::F32, Shape{8, 256});
    auto c = b.constant("c", test::random_tensor({64, 8, 256}, seed));  // 512 KiB
    b.output(b.op1("Add", {in, c}, {}, "add"), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    auto exe = s->compile(*g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    check_matches_reference(*g, x, run(*exe, x));
    CHECK(cache->entries() == 1);  // the previous round's copy died with its graph and executable
  }
  CHECK(cache->hits() == 0);
}

TEST_CASE("WeightCache: a LiveExecutable's shape variants share the weights on the device") {
  GraphBuilder b("live_shared");
  auto x = b.input("x", DType::F32, Shape{Dim::sym("rows"), Dim(256)});
  auto w = b.constant("w", test::random_tensor({256, 256}, 3));
  b.output(b.op1("MatMul", {x, w}, {}, "mm"), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  LiveOptions o;
  o.session = options(WeightCache::create());
  auto live = LiveExecutable::create(*g, o);
  REQUIRE(live.ok());
  for (int64_t rows : {8, 24}) {
    const Tensor in = test::random_tensor({rows, 256}, static_cast<uint32_t>(rows));
    auto out = live->run({in});
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    check_matches_reference(*g, in, (*out)[0].to_f32());
  }
  CHECK(o.session.weight_cache->hits() >= 2);  // the second variant's packed panels and device copy
}

// FP32 Conv weights are packed once at compile (jit/codegen/conv_packing.hpp): a weight read by
// two Conv nodes is packed once, a depthwise Conv keeps its own, and the packed form is shared
// between compiles through the cache.
TEST_CASE("WeightCache: Conv weights packed once, shared by nodes and compiles") {
  GraphBuilder b("convs");
  auto x = b.input("x", DType::F32, Shape{1, 20, 9, 11});
  auto w = b.constant("w", test::random_tensor({20, 20, 3, 3}, 3));
  auto bias = b.constant("bias", test::random_tensor({20}, 4));
  const Attributes pad{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto c1 = b.op1("Conv", {x, w, bias}, pad, "c1");
  auto r = b.op1("Relu", {c1}, {}, "relu");
  auto c2 = b.op1("Conv", {r, w}, pad, "c2");  // the same weight again
  auto dw = b.op1("Conv", {c2, b.constant("wd", test::random_tensor({20, 1, 3, 3}, 5))},
                  {{"group", int64_t{20}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "dw");
  b.output(dw, "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  const Tensor in = test::random_tensor({1, 20, 9, 11}, 6);
  auto cache = WeightCache::create();
  auto s = Session::create(options(cache));
  REQUIRE(s.ok());
  auto first = s->compile(*g);
  REQUIRE_MESSAGE(first.ok(), first.status().to_string());
  CHECK(first->compile_stats().packed_conv_nodes == std::vector<std::string>{"c1", "c2"});
  CHECK(first->compile_stats().fallbacks == 0);
  // The original weight is read by no step: only its packed form (20 rows padded to 24) counts.
  CHECK(first->compile_stats().weight_bytes == 4 * (24 * 180 + 20 + 20 * 9));
  check_matches_reference(*g, in, run(*first, in));
  const int64_t hits = cache->hits();
  auto second = s->compile(*g);
  REQUIRE(second.ok());
  CHECK(cache->hits() > hits);
  check_matches_reference(*g, in, run(*second, in));
}

// A weight read by two MatMul nodes is packed once (it used to fail the compile: the second
// packed initializer took the first one's name).
TEST_CASE("Packed MatMul weights: a weight read by two nodes is packed once") {
  auto build = [](bool twice) {
    GraphBuilder b("tied");
    auto x = b.input("x", DType::F32, Shape{8, 64});
    auto w = b.constant("w", test::random_tensor({64, 64}, 7));
    ValueId y = b.op1("MatMul", {x, w}, {}, "m1");
    if (twice) y = b.op1("MatMul", {y, w}, {}, "m2");
    b.output(y, "y");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    return std::move(g).value();
  };
  const Tensor x = test::random_tensor({8, 64}, 8);
  auto s = Session::create(options(nullptr));
  REQUIRE(s.ok());
  auto one = s->compile(build(false));
  REQUIRE_MESSAGE(one.ok(), one.status().to_string());
  const Graph g = build(true);
  auto two = s->compile(g);
  REQUIRE_MESSAGE(two.ok(), two.status().to_string());
  CHECK(two->compile_stats().packed_weight_nodes == std::vector<std::string>{"m1", "m2"});
  CHECK(two->compile_stats().weight_bytes == one->compile_stats().weight_bytes);
  check_matches_reference(g, x, run(*two, x));
}
