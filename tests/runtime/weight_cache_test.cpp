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
