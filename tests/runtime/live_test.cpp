// LiveExecutable on the CPU plugin: a node overflowing FP16 heals itself, new input shapes get
// variants (reused on a revisit), kernels slower than their plan's prediction are re-planned.
#include "hpf/live.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "hpf/divergence.hpp"
#include "hpf/reference.hpp"

using namespace hpf;

namespace {

std::string temp_cache_dir(const char* tag) {
  auto d = std::filesystem::temp_directory_path() /
           ("hpf-live-test-" + std::string(tag) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

// y = (x @ W) * 1e-3 with x in [-4, 4] and W around 2000: x @ W reaches ~1e5, past FP16's 65504,
// while y stays near 100. The MatMul is named "big", the Mul "scale".
Graph overflowing_graph() {
  GraphBuilder b("overflow");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
  std::vector<float> w(16 * 8);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 1500.0f + 37.0f * static_cast<float>(k % 23);
  auto h = b.op1("MatMul", {x, b.constant("w", *Tensor::from_f32({16, 8}, w))}, {}, "big");
  b.output(b.op1("Mul", {h, b.scalar(1e-3f)}, {}, "scale"), "y");
  return b.build().value();
}

Tensor input(int64_t batch, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(batch * 16));
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = lo + (hi - lo) * static_cast<float>((k * 7919) % 101) / 100.0f;
  return Tensor::from_f32({batch, 16}, v).value();
}

std::shared_ptr<Plan> uniform(const Graph& g, Mode m) {
  auto s = Session::create({});
  REQUIRE(s.ok());
  auto p = plan_from_policy(g, Policy::uniform(m), s->device_formats());
  REQUIRE(p.ok());
  return std::make_shared<Plan>(std::move(p).value());
}

int count(const std::vector<RecompileEvent>& ev, const std::string& cause) {
  return static_cast<int>(std::count_if(ev.begin(), ev.end(),
                                        [&](const RecompileEvent& e) { return e.cause == cause; }));
}

bool all_finite(const Tensor& t) {
  for (float f : t.to_f32())
    if (!std::isfinite(f)) return false;
  return true;
}

}  // namespace

TEST_CASE("live: a node overflowing FP16 is promoted, recompiled and the run recomputed") {
  const Graph g = overflowing_graph();
  const Tensor x = input(2, 2.0f, 4.0f);
  const auto want = ref::run(g, {x}).value();
  REQUIRE(all_finite(want[0]));
  auto plan = uniform(g, Mode::fp16);
  REQUIRE(plan->find("big")->storage == DType::F16);

  LiveOptions o;
  o.session.cache_dir = temp_cache_dir("heal");
  o.session.plan = plan;
  o.check_slow_kernels = false;
  SUBCASE("without the watch the FP16 plan gives Inf") {
    o.check_overflow = false;
    auto live = LiveExecutable::create(g, o);
    REQUIRE_MESSAGE(live.ok(), live.status().to_string());
    auto got = live->run({x});
    REQUIRE(got.ok());
    CHECK_FALSE(all_finite((*got)[0]));
    CHECK(count(live->events(), "overflow") == 0);
  }
  SUBCASE("with it the node heals") {
    auto live = LiveExecutable::create(g, o);
    REQUIRE_MESSAGE(live.ok(), live.status().to_string());
    auto got = live->run({x});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE(all_finite((*got)[0]));
    auto d = compare(want[0], (*got)[0]);
    REQUIRE(d.ok());
    CHECK(d->rel_l2 < 1e-2);  // BF16 storage of the MatMul's output: 8 mantissa bits
    const auto& ev = live->events();
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].cause == "new_shape");
    CHECK(ev[1].cause == "overflow");
    CHECK(ev[1].node == "big");
    CHECK(ev[1].from == "f16");
    CHECK(ev[1].to == "bf16");
    CHECK(ev[1].fp32_amax > 65504);
    CHECK(ev[1].run == 1);
    CHECK(live->plan()->find("big")->storage == DType::BF16);
    CHECK(live->plan()->find("scale")->storage == DType::F16);  // untouched
    // The healed plan holds: no new event, same answer.
    auto again = live->run({x});
    REQUIRE(again.ok());
    CHECK(live->events().size() == 2);
    CHECK((*again)[0].to_f32() == (*got)[0].to_f32());
    // A plan saved from it reproduces the healed outputs in a fresh executable.
    SessionOptions so = o.session;
    so.plan = live->plan();
    auto s = Session::create(so);
    REQUIRE(s.ok());
    auto exe = s->compile(g, {x.shape()});
    REQUIRE(exe.ok());
    CHECK(exe->run({x})->at(0).to_f32() == (*got)[0].to_f32());
  }
  SUBCASE("a watch limited to the first clean runs misses a later overflow") {
    o.overflow_watch_runs = 1;
    auto live = LiveExecutable::create(g, o);
    REQUIRE(live.ok());
    REQUIRE(live->run({input(2, -0.5f, 0.5f)}).ok());  // fits FP16: the watch ends here
    auto got = live->run({input(2, 2.0f, 4.0f)});
    REQUIRE(got.ok());
    CHECK_FALSE(all_finite((*got)[0]));
    CHECK(count(live->events(), "overflow") == 0);
  }
  std::filesystem::remove_all(o.session.cache_dir);
}

TEST_CASE("live: uniform FP16 precision without a plan heals the same way") {
  const Graph g = overflowing_graph();
  const Tensor x = input(3, 2.0f, 4.0f);
  LiveOptions o;
  o.session.use_cache = false;
  o.session.precision = DType::F16;
  o.check_slow_kernels = false;
  auto live = LiveExecutable::create(g, o);
  REQUIRE(live.ok());
  auto got = live->run({x});
  REQUIRE(got.ok());
  CHECK(all_finite((*got)[0]));
  CHECK(count(live->events(), "overflow") == 1);
}

TEST_CASE("live: Inf that FP32 has too is not an overflow; the watch leaves it") {
  // Log(x) with a zero in x: -Inf in every format. Stored in F16 before the MatMul reads it.
  GraphBuilder b("log");
  auto x = b.input("x", DType::F32, {2, 4});
  auto l = b.op1("Log", {x}, {}, "log");
  b.output(b.op1("MatMul",
                 {l, b.constant("w", *Tensor::from_f32({4, 2}, std::vector<float>(8, 0.5f)))}, {},
                 "mm"));
  const Graph g = b.build().value();
  LiveOptions o;
  o.session.use_cache = false;
  o.session.plan = uniform(g, Mode::fp16);
  REQUIRE(o.session.plan->find("log")->storage == DType::F16);
  auto live = LiveExecutable::create(g, o);
  REQUIRE(live.ok());
  const Tensor in = Tensor::from_f32({2, 4}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}).value();
  auto got = live->run({in});
  REQUIRE(got.ok());
  CHECK(live->current()->overflow_hits().empty());
  CHECK(count(live->events(), "overflow") == 0);
  CHECK(live->plan()->find("log")->storage == DType::F16);
}

TEST_CASE("live: each new input shape gets a variant; a revisit reuses it") {
  const Graph g = overflowing_graph();
  LiveOptions o;
  o.session.cache_dir = temp_cache_dir("shapes");
  o.check_slow_kernels = false;
  o.batch_buckets = 0;  // exact shapes; buckets have their own test below
  auto live = LiveExecutable::create(g, o);
  REQUIRE(live.ok());
  for (int64_t batch : {2, 5, 2}) {
    CAPTURE(batch);
    const Tensor x = input(batch, -1.0f, 1.0f);
    auto got = live->run({x});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE((*got)[0].shape() == std::vector<int64_t>{batch, 8});
    auto d = compare(ref::run(g, {x}).value()[0], (*got)[0]);
    REQUIRE(d.ok());
    CHECK(d->rel_l2 < 1e-5);
  }
  const auto& ev = live->events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].cause == "new_shape");
  CHECK(ev[0].shapes == std::vector<std::vector<int64_t>>{{2, 16}});
  CHECK(ev[1].cause == "new_shape");
  CHECK(ev[1].shapes == std::vector<std::vector<int64_t>>{{5, 16}});
  CHECK(live->variants() == 2);
  // The second variant's kernels are the first's source with other sizes; a third variant of a
  // shape seen before in another executable comes from the kernel cache.
  auto other = LiveExecutable::create(g, o);
  REQUIRE(other.ok());
  REQUIRE(other->run({input(5, -1.0f, 1.0f)}).ok());
  CHECK(other->current()->compile_stats().cache_misses == 0);
  // At most max_variants kept: the least recently used goes.
  o.max_variants = 1;
  auto small = LiveExecutable::create(g, o);
  REQUIRE(small.ok());
  for (int64_t batch : {2, 5, 2}) REQUIRE(small->run({input(batch, -1.0f, 1.0f)}).ok());
  CHECK(small->variants() == 1);
  CHECK(count(small->events(), "new_shape") == 3);
  std::filesystem::remove_all(o.session.cache_dir);
}

TEST_CASE("live: batch bucket sizes") {
  std::vector<int64_t> got;
  for (int64_t b : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 17, 100}) got.push_back(batch_bucket(b, 2));
  CHECK(got == std::vector<int64_t>{0, 1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 16, 24, 128});
  CHECK(batch_bucket(9, 4) == 10);
  CHECK(batch_bucket(9, 1) == 16);
  CHECK(batch_bucket(9, 0) == 9);
}

TEST_CASE("live: a batch runs in its bucket's variant, padded, and gives its own outputs") {
  // Rows are independent here (MatMul on the rows, Softmax along them), so batches 5 and 6
  // share the variant for 6, and 7 and 8 the one for 8; 3 is a bucket of its own.
  GraphBuilder b("rows");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
  std::vector<float> w(16 * 8);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.01f * static_cast<float>(static_cast<int>(k % 19) - 9);
  auto h = b.matmul(x, b.constant("w", *Tensor::from_f32({16, 8}, w)));
  b.output(b.softmax(h, -1), "p");
  b.output(b.op1("ReduceMax", {h}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}}), "m");
  const Graph rows = b.build().value();
  LiveOptions o;
  o.session.use_cache = false;
  o.check_slow_kernels = false;
  auto live = LiveExecutable::create(rows, o);
  REQUIRE(live.ok());
  for (int64_t batch : {5, 6, 3, 7, 8, 5}) {
    CAPTURE(batch);
    const Tensor in = input(batch, -3.0f, 3.0f);
    auto got = live->run({in});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    const auto want = ref::run(rows, {in}).value();
    for (size_t k = 0; k < 2; ++k) {
      REQUIRE((*got)[k].shape() == want[k].shape());
      auto d = compare(want[k], (*got)[k]);
      REQUIRE(d.ok());
      CHECK(d->max_abs_error < 1e-6);
    }
  }
  const auto& ev = live->events();
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].shapes == std::vector<std::vector<int64_t>>{{6, 16}});
  CHECK(ev[0].requested == std::vector<std::vector<int64_t>>{{5, 16}});
  CHECK(ev[0].describe().find("the batch bucket of [5,16]") != std::string::npos);
  CHECK(ev[1].shapes == std::vector<std::vector<int64_t>>{{3, 16}});
  CHECK(ev[1].requested.empty());
  CHECK(ev[2].shapes == std::vector<std::vector<int64_t>>{{8, 16}});
  CHECK(live->variants() == 3);

  SUBCASE("the batch inside a dimension, and a vector head") {
    // x [4, batch, 8]: the batch is dimension 1; [4*B, 8] holds it between 4 blocks and the
    // rows (PyTorch's attention reshapes this way); x @ v[8] is [4, B].
    GraphBuilder c("inner");
    auto y = c.input("x", DType::F32, {4, Dim::sym("batch"), 8});
    c.output(c.op1("Reshape", {y, c.constant_i64({-1, 8})}), "rows");
    c.output(c.matmul(y, c.constant("v", *Tensor::from_f32({8}, std::vector<float>{1, -2, 3, -4, 5, -6, 7, -8}))), "head");
    const Graph inner = c.build().value();
    auto padded = LiveExecutable::create(inner, o);
    REQUIRE(padded.ok());
    for (int64_t batch : {5, 7}) {
      CAPTURE(batch);
      std::vector<float> v(static_cast<size_t>(4 * batch * 8));
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k % 29) - 14.0f;
      const Tensor in = Tensor::from_f32({4, batch, 8}, v).value();
      auto got = padded->run({in});
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      const auto want = ref::run(inner, {in}).value();
      for (size_t k = 0; k < 2; ++k) {
        REQUIRE((*got)[k].shape() == want[k].shape());
        CHECK((*got)[k].to_f32() == want[k].to_f32());
      }
    }
    REQUIRE(padded->events().size() == 2);
    CHECK(padded->events()[1].shapes == std::vector<std::vector<int64_t>>{{4, 8, 8}});
  }
  SUBCASE("outputs whose shapes the bucket does not give run exact shapes") {
    // [batch, 12] reshaped to [6, -1]: with 6 entries that is [6, 12], the bucket of 5 entries,
    // whose exact output is [6, 10].
    GraphBuilder c("coincidence");
    auto y = c.input("x", DType::F32, {Dim::sym("batch"), 12});
    c.output(c.op1("Reshape", {y, c.constant_i64({6, -1})}), "six");
    const Graph six = c.build().value();
    auto exact = LiveExecutable::create(six, o);
    REQUIRE(exact.ok());
    std::vector<float> v(60);
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k);
    const Tensor in = Tensor::from_f32({5, 12}, v).value();
    auto got = exact->run({in});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    CHECK((*got)[0].shape() == std::vector<int64_t>{6, 10});
    CHECK((*got)[0].to_f32() == v);
    REQUIRE(exact->events().size() == 1);
    CHECK(exact->events()[0].shapes == std::vector<std::vector<int64_t>>{{5, 12}});
  }
  SUBCASE("a graph that mixes batch entries runs exact shapes") {
    GraphBuilder c("columns");
    auto y = c.input("x", DType::F32, {Dim::sym("batch"), 16});
    c.output(c.softmax(y, 0), "p");  // over the batch: padding would change every entry
    const Graph cols = c.build().value();
    auto exact = LiveExecutable::create(cols, o);
    REQUIRE(exact.ok());
    const Tensor in = input(5, -3.0f, 3.0f);
    auto got = exact->run({in});
    REQUIRE(got.ok());
    auto d = compare(ref::run(cols, {in}).value()[0], (*got)[0]);
    REQUIRE(d.ok());
    CHECK(d->max_abs_error < 1e-6);
    REQUIRE(exact->events().size() == 1);
    CHECK(exact->events()[0].shapes == std::vector<std::vector<int64_t>>{{5, 16}});
  }
  SUBCASE("an FP16 overflow in a padded run heals as in an exact one") {
    const Graph g = overflowing_graph();
    o.session.plan = uniform(g, Mode::fp16);
    auto heal = LiveExecutable::create(g, o);
    REQUIRE(heal.ok());
    const Tensor in = input(5, 2.0f, 4.0f);
    auto got = heal->run({in});
    REQUIRE(got.ok());
    REQUIRE((*got)[0].shape() == std::vector<int64_t>{5, 8});
    CHECK(all_finite((*got)[0]));
    auto d = compare(ref::run(g, {in}).value()[0], (*got)[0]);
    REQUIRE(d.ok());
    CHECK(d->rel_l2 < 1e-2);
    REQUIRE(count(heal->events(), "overflow") == 1);
    CHECK(heal->events().back().shapes == std::vector<std::vector<int64_t>>{{6, 16}});
  }
}

TEST_CASE("live: a kernel far slower than its predicted time is re-planned after warm-up") {
  const Graph g = overflowing_graph();
  const Tensor x = input(4, -1.0f, 1.0f);
  LiveOptions o;
  o.session.use_cache = false;
  o.warmup_runs = 2;
  o.slow_window = 2;
  o.slow_windows = 1;  // the subcases count runs for one window; the default 2 is checked last
  o.slow_min_ms = 0;  // these kernels take microseconds
  SUBCASE("two slow windows in a row by default") {
    auto plan = uniform(g, Mode::fp16);
    for (NodePlan& n : plan->nodes) n.predicted_ms = 1e-9;
    o.session.plan = plan;
    o.slow_windows = LiveOptions{}.slow_windows;
    REQUIRE(o.slow_windows == 2);
    auto live = LiveExecutable::create(g, o);
    REQUIRE(live.ok());
    for (int r = 0; r < 5; ++r) REQUIRE(live->run({x}).ok());
    CHECK(count(live->events(), "slow_kernel") == 0);  // slow in the first window only so far
    REQUIRE(live->run({x}).ok());
    CHECK(count(live->events(), "slow_kernel") == 2);
    CHECK(live->events().back().run == 6);
  }
  SUBCASE("an absurd prediction") {
    // The MatMul and its scale fuse into one kernel (F16 -> Mul is overflow-transparent): the
    // step is compared with the sum of its nodes' predictions and both are re-planned.
    auto plan = uniform(g, Mode::fp16);
    for (NodePlan& n : plan->nodes) n.predicted_ms = 1e-9;
    o.session.plan = plan;
    auto live = LiveExecutable::create(g, o);
    REQUIRE(live.ok());
    for (int r = 0; r < 3; ++r) REQUIRE(live->run({x}).ok());
    CHECK(count(live->events(), "slow_kernel") == 0);  // still warming up and measuring
    REQUIRE(live->run({x}).ok());
    REQUIRE(count(live->events(), "slow_kernel") == 2);
    const RecompileEvent& e = live->events()[live->events().size() - 2];
    CHECK(e.node == "big");
    CHECK(live->events().back().node == "scale");
    CHECK(e.from == "f16");
    CHECK(e.to == "bf16");
    CHECK(e.predicted_ms == doctest::Approx(2e-9));
    CHECK(e.measured_ms > 2e-9);
    CHECK(e.run == 4);
    CHECK(live->plan()->find("big")->storage == DType::BF16);
    CHECK(live->plan()->find("big")->predicted_ms < 0);  // the old format's prediction is gone
    // No prediction any more: no further re-planning, and the outputs stay right.
    for (int r = 0; r < 6; ++r) REQUIRE(live->run({x}).ok());
    CHECK(count(live->events(), "slow_kernel") == 2);
    auto d = compare(ref::run(g, {x}).value()[0], live->run({x}).value()[0]);
    CHECK(d->rel_l2 < 1e-2);
  }
  SUBCASE("a callback decides") {
    auto plan = uniform(g, Mode::fp16);
    for (NodePlan& n : plan->nodes) n.predicted_ms = 1e-9;
    o.session.plan = plan;
    std::vector<std::string> asked;
    o.replan = [&](NodePlan& n, double, double) {
      asked.push_back(n.name);
      if (n.name != "big") return false;
      n.storage = n.weights = DType::F32;
      n.mode = Mode::fp32;
      return true;
    };
    auto live = LiveExecutable::create(g, o);
    REQUIRE(live.ok());
    for (int r = 0; r < 8; ++r) REQUIRE(live->run({x}).ok());
    CHECK(std::count(asked.begin(), asked.end(), "big") == 1);
    REQUIRE(count(live->events(), "slow_kernel") == 1);
    CHECK(live->events().back().to == "f32");
    CHECK(live->plan()->find("big")->storage == DType::F32);
  }
  SUBCASE("no predictions, no re-planning") {
    o.session.plan = uniform(g, Mode::fp16);
    auto live = LiveExecutable::create(g, o);
    REQUIRE(live.ok());
    for (int r = 0; r < 10; ++r) REQUIRE(live->run({x}).ok());
    CHECK(count(live->events(), "slow_kernel") == 0);
    CHECK(live->events().size() == 1);  // new_shape only
  }
}

// The overflowing MatMul followed by Relu and the scale: with F16 storage the three fuse into one
// kernel (Relu and Mul are overflow-transparent), so the MatMul's F16 value is never stored.
TEST_CASE("live: an FP16 MatMul overflowing inside a fused kernel (Relu epilogue) still heals") {
  GraphBuilder b("overflow_relu");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 16});
  std::vector<float> w(16 * 8);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 1500.0f + 37.0f * static_cast<float>(k % 23);
  auto h = b.op1("MatMul", {x, b.constant("w", *Tensor::from_f32({16, 8}, w))}, {}, "big");
  auto r = b.op1("Relu", {h}, {}, "relu");
  b.output(b.op1("Mul", {r, b.scalar(1e-3f)}, {}, "scale"), "y");
  const Graph g = b.build().value();
  LiveOptions o;
  o.session.use_cache = false;
  o.session.plan = uniform(g, Mode::fp16);
  o.check_slow_kernels = false;
  REQUIRE(o.session.plan->find("big")->storage == DType::F16);
  auto live = LiveExecutable::create(g, o);
  REQUIRE(live.ok());
  auto fused = [&] {
    REQUIRE(live->current());
    for (const StepProfile& p : live->current()->profile())
      if (p.nodes == std::vector<std::string>{"big", "relu", "scale"}) return true;
    return false;
  };
  SUBCASE("positive overflow: Inf reaches the output, the MatMul is named and promoted") {
    const Tensor in = input(2, 2.0f, 4.0f);
    const auto want = ref::run(g, {in}).value();
    auto got = live->run({in});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE(all_finite((*got)[0]));
    CHECK(compare(want[0], (*got)[0])->rel_l2 < 1e-2);
    // The MatMul and the Relu after it (its FP32 value, ~1e5, does not fit F16 either).
    REQUIRE(count(live->events(), "overflow") == 2);
    auto it = std::find_if(live->events().begin(), live->events().end(),
                           [](const RecompileEvent& e) { return e.cause == "overflow" && e.node == "big"; });
    REQUIRE(it != live->events().end());
    const RecompileEvent& e = *it;
    CHECK(e.from == "f16");
    CHECK(e.to == "bf16");
    CHECK(e.fp32_amax > 65504);
    CHECK(live->plan()->find("big")->storage == DType::BF16);
    CHECK(fused());  // the healed plan (BF16 MatMul) fuses the same way
  }
  SUBCASE("negative overflow: Relu(-Inf) = 0 is FP32's value too; nothing to heal") {
    const Tensor in = input(2, -4.0f, -2.0f);
    const auto want = ref::run(g, {in}).value();
    auto got = live->run({in});
    REQUIRE(got.ok());
    CHECK(fused());
    CHECK((*got)[0].to_f32() == want[0].to_f32());
    CHECK(count(live->events(), "overflow") == 0);
  }
}
