// Session and Executable: built-in models compiled for the CPU plugin, run, and compared with
// the reference interpreter; cache hits on a second compile; input errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "hpf/divergence.hpp"
#include "hpf/kernel_cache.hpp"
#include "hpf/models.hpp"
#include "hpf/planner.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/precision.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "runtime/session/conv_rewrites.hpp"
#include "runtime/session/weight_cache.hpp"
#include "tests/runtime/random_tensor.hpp"

using namespace hpf;

namespace {

std::string temp_cache_dir(const char* tag) {
  auto d = std::filesystem::temp_directory_path() / ("hpf-session-test-" + std::string(tag) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

// A session without the kernel cache, and `g` compiled for its own shapes.
Expected<Executable> compile_uncached(const Graph& g) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  if (!s.ok()) return s.status();
  return s->compile(g);
}

}  // namespace

TEST_CASE("session: built-in models run on the CPU plugin and match the reference") {
  for (std::string name : {"mlp", "bert-tiny", "cnn-small"}) {
    CAPTURE(name);
    auto g = models::builtin(name);
    REQUIRE(g.ok());
    auto inputs = models::example_inputs(*g, 3, 2);
    REQUIRE(inputs.ok());
    SessionOptions o;
    o.cache_dir = temp_cache_dir(name.c_str());
    auto s = Session::create(o);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    std::vector<std::vector<int64_t>> shapes;
    for (const Tensor& t : *inputs) shapes.push_back(t.shape());
    auto exe = s->compile(*g, shapes);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(exe->compile_stats().kernels > 0);
    CHECK(exe->compile_stats().cache_misses == exe->compile_stats().kernels);
    auto got = exe->run(*inputs);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    auto want = ref::run(*g, *inputs);
    REQUIRE(want.ok());
    REQUIRE(got->size() == want->size());
    for (size_t k = 0; k < got->size(); ++k) {
      auto d = compare((*want)[k], (*got)[k]);
      REQUIRE(d.ok());
      CHECK_MESSAGE(d->rel_l2 < 1e-5, "output " << k << " rel-L2 " << d->rel_l2);
    }
    CHECK(exe->peak_memory_bytes() > 0);
    // Same graph again: every kernel from the cache, same bits.
    auto exe2 = s->compile(*g, shapes);
    REQUIRE(exe2.ok());
    CHECK(exe2->compile_stats().cache_misses == 0);
    CHECK(exe2->compile_stats().cache_hits == exe->compile_stats().kernels);
    auto got2 = exe2->run(*inputs);
    REQUIRE(got2.ok());
    for (size_t k = 0; k < got->size(); ++k) CHECK((*got)[k].to_f32() == (*got2)[k].to_f32());
    std::filesystem::remove_all(o.cache_dir);
  }
}

TEST_CASE("session: BF16 storage stays close to the reference's BF16 emulation") {
  auto g = models::builtin("bert-tiny");
  REQUIRE(g.ok());
  auto inputs = models::example_inputs(*g, 5, 1);
  SessionOptions o;
  o.precision = DType::BF16;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(*g, {(*inputs)[0].shape()});
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  auto got = exe->run(*inputs);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  auto truth = ref::run(*g, *inputs);
  auto d = compare(truth->back(), got->back());
  CHECK(d->rel_l2 > 0);     // really lower precision
  CHECK(d->rel_l2 < 0.05);  // and still the same model
}

TEST_CASE("session: input errors name the input and what was expected") {
  auto g = models::builtin("mlp");
  REQUIRE(g.ok());
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(*g, {{4, 64}});
  REQUIRE(exe.ok());
  auto bad_shape = exe->run({*Tensor::from_f32({2, 64}, std::vector<float>(128))});
  REQUIRE_FALSE(bad_shape.ok());
  CHECK(bad_shape.status().message() == "run: input 'x': compiled for shape [4,64], got [2,64]");
  auto bad_dtype = exe->run({Tensor(DType::F16, {4, 64})});
  REQUIRE_FALSE(bad_dtype.ok());
  CHECK(bad_dtype.status().message() == "run: input 'x': expected dtype f32, got f16");
  auto bad_compile = s->compile(*g, {{4, 65}});
  REQUIRE_FALSE(bad_compile.ok());
  CHECK(bad_compile.status().message() == "compile: input 'x' expects [batch,64], got [4,65]");
}

TEST_CASE("session: dump_dir receives each distinct kernel's source, headed by its step") {
  auto g = models::builtin("mlp");
  REQUIRE(g.ok());
  const std::string dir = temp_cache_dir("dump") + "/sources";  // created by compile
  SessionOptions o;
  o.use_cache = false;
  o.dump_dir = dir;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(*g, {{4, 64}});
  REQUIRE(exe.ok());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  CHECK(static_cast<int64_t>(files.size()) == exe->compile_stats().kernels);
  for (const std::string& f : files) {
    CAPTURE(f);
    REQUIRE(f.size() > 2);
    CHECK(f.substr(f.size() - 2) == ".c");
    std::ifstream in(dir + "/" + f);
    std::string first, text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    first = text.substr(0, text.find('\n'));
    CHECK(first.rfind("/* step: ", 0) == 0);
    CHECK(text.find("void " + f.substr(0, f.size() - 2) + "(void* const* args, i64 begin, i64 end)") != std::string::npos);
  }
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST_CASE("session: forms without a generator run on the reference and are counted") {
  GraphBuilder b("fallbacks");
  auto x = b.input("x", DType::F32, {3, 4});
  auto s0 = b.softmax(x, 0);  // not the last axis: the generator declines, the reference runs it
  auto w = b.constant(*Tensor::from_f32({4, 5}, std::vector<float>(20, 0.25f)));
  auto y = b.op1("Gemm", {s0, w, kNoValue});  // absent C at the end: still a kernel
  b.output(b.op1("Clip", {y, kNoValue, b.scalar(0.6f)}), "out");
  auto g = b.build();
  REQUIRE(g.ok());
  auto exe = compile_uncached(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().fallbacks == 1);
  CHECK(exe->compile_stats().kernels == 1);  // the Clip runs in the Gemm kernel's epilogue
  std::vector<float> xv(12);
  for (int k = 0; k < 12; ++k) xv[k] = 0.3f * k - 1.0f;
  const Tensor in = *Tensor::from_f32({3, 4}, xv);
  auto got = exe->run({in});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  auto want = ref::run(*g, {in});
  REQUIRE(want.ok());
  auto d = compare((*want)[0], (*got)[0]);
  CHECK(d->max_abs_error < 1e-6);
  bool fallback_listed = false;
  for (const auto& p : exe->profile()) fallback_listed |= p.kind == "fallback" && p.calls == 1;
  CHECK(fallback_listed);
}

TEST_CASE("session: a Reshape to a shape read from an input runs as the dynamic region") {
  // y = Relu(Reshape(x, shape)) has a value-dependent shape; z = x * 2 does not.
  GraphBuilder b("dynamic");
  auto x = b.input("x", DType::F32, {12});
  auto shape = b.input("shape", DType::I64, {2});
  b.output(b.op1("Relu", {b.op1("Reshape", {x, shape})}), "y");
  b.output(b.op1("Mul", {x, b.scalar(2.0f)}), "z");
  auto g = b.build();
  REQUIRE(g.ok());
  auto exe = compile_uncached(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().fallbacks == 2);  // Reshape and the Relu after it
  CHECK(exe->compile_stats().kernels == 1);    // the Mul
  REQUIRE(exe->compile_stats().fallback_nodes.size() == 2);
  std::vector<float> xv(12);
  for (int k = 0; k < 12; ++k) xv[k] = k - 5.5f;
  const Tensor xt = *Tensor::from_f32({12}, xv);
  for (std::vector<int64_t> sv : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{2, -1}}) {
    const Tensor st = *Tensor::from_i64({2}, sv);
    auto got = exe->run({xt, st});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    auto want = ref::run(*g, {xt, st});
    REQUIRE(want.ok());
    CHECK((*got)[0].shape() == (*want)[0].shape());
    CHECK((*got)[0].to_f32() == (*want)[0].to_f32());
    CHECK((*got)[1].to_f32() == (*want)[1].to_f32());
  }
  bool listed = false;
  for (const auto& p : exe->profile()) listed |= p.kind == "fallback" && p.label.find("dynamic region") == 0 && p.calls == 2;
  CHECK(listed);
}

TEST_CASE("session: a Shape -> Gather -> Concat -> Reshape chain folds once input shapes are known") {
  GraphBuilder b("folded");
  auto x = b.input("x", DType::F32, {Dim::sym("batch"), 6});
  auto n = b.op1("Gather", {b.op1("Shape", {x}), b.constant(Tensor::scalar_i64(0))}, {{"axis", int64_t{0}}});
  auto shape = b.op1("Concat", {b.op1("Unsqueeze", {n, b.constant_i64({0})}), b.constant_i64({3, 2})},
                     {{"axis", int64_t{0}}});
  b.output(b.op1("Relu", {b.op1("Reshape", {x, shape})}), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(*g, {{2, 6}});
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().fallbacks == 0);
  std::vector<float> xv(12);
  for (int k = 0; k < 12; ++k) xv[k] = k - 5.5f;
  auto got = exe->run({*Tensor::from_f32({2, 6}, xv)});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  CHECK((*got)[0].shape() == std::vector<int64_t>{2, 3, 2});
  CHECK((*got)[0].to_f32()[11] == 5.5f);
}

TEST_CASE("session: 64-bit integer arithmetic in generated kernels is exact beyond 2^24") {
  GraphBuilder b("int64");
  auto x = b.input("x", DType::I64, {3});
  auto y = b.input("y", DType::I64, {3});
  b.output(b.op1("Max", {b.op1("Add", {x, y}), b.op1("Mul", {x, y})}), "out");
  auto g = b.build();
  REQUIRE(g.ok());
  auto exe = compile_uncached(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().fallbacks == 0);
  const int64_t big = (int64_t{1} << 40) + 1;
  const Tensor xt = *Tensor::from_i64({3}, std::vector<int64_t>{big, -big, 3}, DType::I64);
  const Tensor yt = *Tensor::from_i64({3}, std::vector<int64_t>{3, 1, 16777217}, DType::I64);
  auto got = exe->run({xt, yt});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  CHECK((*got)[0].to_i64() == std::vector<int64_t>{3 * big, -big + 1, 3 * 16777217});
}

TEST_CASE("session: an elementwise chain does not absorb a node whose other operand comes later") {
  // a = x + x; t = Transpose(z); y = a + t. Fusing y into a's kernel would read t before the
  // Transpose wrote it (found by tools/onnx_models on an FPN-style detector).
  GraphBuilder b("late_operand");
  auto x = b.input("x", DType::F32, {3, 4});
  auto z = b.input("z", DType::F32, {4, 3});
  auto a = b.op1("Add", {x, x});
  auto t = b.op1("Transpose", {z}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op1("Add", {a, t}), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  auto exe = compile_uncached(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<float> xv(12), zv(12);
  for (int k = 0; k < 12; ++k) xv[k] = 0.5f * k, zv[k] = 1.0f - k;
  const Tensor xt = *Tensor::from_f32({3, 4}, xv), zt = *Tensor::from_f32({4, 3}, zv);
  for (int run = 0; run < 2; ++run) {  // the second run would see the first run's stale values
    auto got = exe->run({xt, zt});
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    auto want = ref::run(*g, {xt, zt});
    REQUIRE(want.ok());
    CHECK((*got)[0].to_f32() == (*want)[0].to_f32());
  }
}

TEST_CASE("session: a Cast after a kernel is fused into it; a Cast of a graph input stays a kernel") {
  GraphBuilder b("casts");
  auto x = b.input("x", DType::F32, {3, 5});
  auto w = b.constant(*Tensor::from_f32({5, 4}, std::vector<float>(20, 0.3f)));
  auto y = b.op1("MatMul", {x, w});
  b.output(b.op1("Cast", {y}, {{"to", int64_t{10}}}), "y16");                      // F16
  b.output(b.op1("Cast", {x}, {{"to", int64_t{16}}}), "x_bf16");                   // BF16
  auto g = b.build();
  REQUIRE(g.ok());
  auto exe = compile_uncached(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().kernels == 2);           // the MatMul (writing F16) and x's Cast
  CHECK(exe->compile_stats().standalone_casts == 1);  // x's Cast has no neighbour kernel
  std::vector<float> xv(15);
  for (int k = 0; k < 15; ++k) xv[k] = 0.37f * k - 2.0f;
  const Tensor xt = *Tensor::from_f32({3, 5}, xv);
  auto got = exe->run({xt});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  auto want = ref::run(*g, {xt});
  REQUIRE(want.ok());
  CHECK((*got)[0].dtype() == DType::F16);
  CHECK((*got)[0].to_f32() == (*want)[0].to_f32());
  CHECK((*got)[1].to_f32() == (*want)[1].to_f32());
}

// A bottleneck block (ResNet's): the last Conv's residual Add reads the block's input, which
// dies there, so the Conv writes its output over it; the next block reads that output, the
// graph's output is apart. Two runs (the second starts from the first's arena) against the
// reference; with the block's input read by a later step, or in BF16 storage (the overflow
// watch reads a low-precision step's inputs after it ran), no output takes its memory.
TEST_CASE("session: a Conv writes its output over the residual that dies at its Add") {
  for (int variant = 0; variant < 3; ++variant) {
    const bool read_after = variant == 1, bf16 = variant == 2;
    CAPTURE(variant);
    GraphBuilder b("bottleneck");
    auto x = b.input("x", DType::F32, {1, 32, 14, 14});
    auto conv = [&](ValueId in, int64_t m, int64_t c, int64_t k, uint32_t seed) {
      return b.op1("Conv", {in, b.constant(test::random_tensor({m, c, k, k}, seed, -0.2f, 0.2f)),
                            b.constant(test::random_tensor({m}, seed + 1))},
                   {{"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}}});
    };
    auto r = b.op1("Relu", {conv(x, 32, 32, 1, 600)});  // the block's input: an intermediate
    auto h = b.op1("Relu", {conv(r, 16, 32, 1, 602)});
    h = b.op1("Relu", {conv(h, 16, 16, 3, 604)});
    auto y = b.op1("Relu", {b.op1("Add", {conv(h, 32, 16, 1, 606), r})});
    b.output(conv(y, 8, 32, 1, 608), "out");
    if (read_after) b.output(b.op1("Sigmoid", {r}), "after");  // r read by a later step
    auto g = b.build();
    REQUIRE(g.ok());
    SessionOptions o;
    o.use_cache = false;
    if (bf16) o.precision = DType::BF16;
    auto session = Session::create(o);
    REQUIRE(session.ok());
    auto exe = session->compile(*g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(exe->compile_stats().in_place_steps == (variant == 0 ? 1 : 0));
    const Tensor xt = test::random_tensor({1, 32, 14, 14}, 610);
    auto want = ref::run(*g, {xt});
    REQUIRE(want.ok());
    for (int run = 0; run < 2; ++run) {
      auto got = exe->run({xt});
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      const std::vector<float> gv = (*got)[0].to_f32(), wv = (*want)[0].to_f32();
      double worst = 0;
      for (size_t k = 0; k < gv.size(); ++k) worst = std::max(worst, std::abs(double(gv[k]) - wv[k]) / (1 + std::abs(wv[k])));
      CHECK_MESSAGE(worst <= (bf16 ? 0.05 : 1e-5), "worst relative error " << worst);
    }
  }
}

TEST_CASE("session: a precision plan sets storage per node; a saved plan reproduces outputs bit for bit") {
  auto g = models::builtin("bert-tiny");
  REQUIRE(g.ok());
  auto inputs = models::example_inputs(*g, 5, 2);
  REQUIRE(inputs.ok());
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : *inputs) shapes.push_back(t.shape());
  SessionOptions o;
  o.cache_dir = temp_cache_dir("plan");
  auto s32 = Session::create(o);
  REQUIRE(s32.ok());
  auto fp32 = s32->compile(*g, shapes);
  REQUIRE(fp32.ok());
  auto want = fp32->run(*inputs);
  REQUIRE(want.ok());

  auto policy = Policy::from_json(R"({"default": "bf16", "embedding": "fp32", "output": "fp32"})");
  REQUIRE(policy.ok());
  auto plan = plan_from_policy(*g, *policy, s32->device_formats());
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  const auto path = std::filesystem::path(o.cache_dir) / "plan.json";
  REQUIRE(plan->save(path.string()).ok());

  std::vector<std::vector<std::byte>> first;
  for (int round = 0; round < 2; ++round) {  // the plan object, then the plan read back from disk
    SessionOptions po = o;
    if (round == 0) po.plan = std::make_shared<Plan>(*plan);
    else po.plan = std::make_shared<Plan>(Plan::load(path.string()).value());
    auto s = Session::create(po);
    REQUIRE(s.ok());
    auto exe = s->compile(*g, shapes);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    // BF16 weights: half the bytes of FP32 ones, except the embedding tables kept in FP32.
    CHECK(exe->compile_stats().weight_bytes < fp32->compile_stats().weight_bytes);
    CHECK(exe->compile_stats().weight_bytes > fp32->compile_stats().weight_bytes / 2);
    auto got = exe->run(*inputs);
    REQUIRE(got.ok());
    auto d = compare((*want)[0], (*got)[0]);
    REQUIRE(d.ok());
    CHECK(d->max_abs_error > 0);     // BF16 storage changed something
    CHECK(d->rel_l2 < 5e-2);         // and not much
    std::vector<std::vector<std::byte>> bytes;
    for (const Tensor& t : *got) bytes.emplace_back(t.bytes().begin(), t.bytes().end());
    if (round == 0) first = bytes;
    else CHECK(bytes == first);
  }
  // A plan made for another graph is refused.
  auto mlp = models::builtin("mlp");
  REQUIRE(mlp.ok());
  SessionOptions bad = o;
  bad.plan = std::make_shared<Plan>(*plan);
  auto s = Session::create(bad);
  REQUIRE(s.ok());
  CHECK_FALSE(s->compile(*mlp).ok());
  std::filesystem::remove_all(o.cache_dir);
}

TEST_CASE("session: Gather and Transpose convert when a plan stores their input and output differently") {
  GraphBuilder b("movement_formats");
  auto ids = b.input("ids", DType::I64, {3});
  auto table = b.constant(*Tensor::from_f32({4, 6}, std::vector<float>{0.1f, 1.3f, -2.7f, 3.3f, 4.9f, 5.1f,
                                                                        6.7f, 7.5f, 8.2f, -9.9f, 10.3f, 11.1f,
                                                                        12.7f, 13.3f, 14.9f, 15.1f, 16.3f, 17.7f,
                                                                        18.1f, 19.9f, 20.5f, 21.3f, 22.7f, 23.9f}));
  auto rows = b.op1("Gather", {table, ids}, {{"axis", int64_t{0}}}, "rows");
  b.output(b.op1("Relu", {b.op1("Transpose", {rows}, {{"perm", std::vector<int64_t>{1, 0}}}, "t")}), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  // Table in F32, gathered rows stored BF16, the transpose's output F16.
  auto plan = plan_from_policy(*g, Policy::from_json(R"({"default": "fp32", "nodes": {"rows": "bf16", "t": "fp16"}})").value(),
                               s->device_formats());
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  o.plan = std::make_shared<Plan>(*plan);
  auto sp = Session::create(o);
  REQUIRE(sp.ok());
  auto exe = sp->compile(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().fallbacks == 0);
  const Tensor idt = *Tensor::from_i64({3}, std::vector<int64_t>{2, 0, 3});
  auto got = exe->run({idt});
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  auto want = ref::run(*g, {idt});
  REQUIRE(want.ok());
  // Every value goes through BF16 (8 bits of mantissa) then F16: exact for BF16-rounded values.
  std::vector<float> expect = (*want)[0].to_f32();
  for (float& v : expect) v = Tensor::from_f32({1}, std::vector<float>{v}, DType::BF16).value().to_f32()[0];
  CHECK((*got)[0].to_f32() == expect);
}

TEST_CASE("session: kernel times saved beside the kernels are seen by the next compile") {
  auto g = models::builtin("mlp");
  REQUIRE(g.ok());
  auto inputs = models::example_inputs(*g, 3, 2);
  REQUIRE(inputs.ok());
  SessionOptions o;
  o.cache_dir = temp_cache_dir("timings");
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(*g, {(*inputs)[0].shape()});
  REQUIRE(exe.ok());
  for (const auto& p : exe->profile())
    if (p.kind == "kernel") CHECK(p.cached_ms == -1);  // nothing measured yet
  for (int r = 0; r < 3; ++r) REQUIRE(exe->run(*inputs).ok());
  REQUIRE(exe->save_timings().ok());
  exe->clear_profile();  // e.g. after warm-up runs
  for (const auto& p : exe->profile()) CHECK((p.calls == 0 && p.total_ms == 0));
  auto s2 = Session::create(o);
  REQUIRE(s2.ok());
  auto again = s2->compile(*g, {(*inputs)[0].shape()});
  REQUIRE(again.ok());
  int kernels = 0;
  for (const auto& p : again->profile())
    if (p.kind == "kernel") {
      ++kernels;
      CHECK(p.cached_ms > 0);
    }
  CHECK(kernels > 0);
  // Times are kept per thread count: entries holding only another count's time (or the
  // unit-less form of earlier versions) give no time here.
  auto best = PluginHost::shared().best_device();
  REQUIRE(best.ok());
  const int32_t units = best->plugin->devices()[best->device].compute_units;
  KernelCacheOptions co;
  co.dir = o.cache_dir;
  auto cache = KernelCache::open(co);
  REQUIRE(cache.ok());
  const auto entries = cache->list();
  REQUIRE(!entries.empty());
  for (const auto& e : entries)
    REQUIRE(cache->set_meta(e.key, "{\"run_ms\": 1.0, \"runs\": 5, \"by_units\": {\"" +
                                       std::to_string(units + 1) + "\": {\"run_ms\": 2.0, \"runs\": 3}}}")
                .ok());
  auto other = s2->compile(*g, {(*inputs)[0].shape()});
  REQUIRE(other.ok());
  for (const auto& p : other->profile())
    if (p.kind == "kernel") CHECK(p.cached_ms == -1);
  std::filesystem::remove_all(o.cache_dir);
}

TEST_CASE("session: the kernel cache keeps the fastest of the saved measurements and their count") {
  // A shared machine only slows a kernel down: a slower measurement leaves the time as it was, a
  // faster one replaces it; the count says how many there were (entries of earlier versions, a
  // running mean without one, count as one).
  auto g = models::builtin("mlp");
  REQUIRE(g.ok());
  auto inputs = models::example_inputs(*g, 3, 2);
  REQUIRE(inputs.ok());
  SessionOptions o;
  o.cache_dir = temp_cache_dir("fastest");
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto best = PluginHost::shared().best_device();
  REQUIRE(best.ok());
  const std::string units = std::to_string(best->plugin->devices()[best->device].compute_units);
  KernelCacheOptions co;
  co.dir = o.cache_dir;
  for (const double stored : {1e-9, 1e9}) {
    CAPTURE(stored);
    auto exe = s->compile(*g, {(*inputs)[0].shape()});
    REQUIRE(exe.ok());
    {
      auto cache = KernelCache::open(co);
      REQUIRE(cache.ok());
      for (const auto& e : cache->list())
        REQUIRE(cache->set_meta(e.key, "{\"by_units\": {\"" + units + "\": {\"run_ms\": " + (std::ostringstream() << stored).str() +
                                           ", \"runs\": 4}}}")
                    .ok());
    }
    REQUIRE(exe->run(*inputs).ok());
    REQUIRE(exe->save_timings().ok());
    auto again = s->compile(*g, {(*inputs)[0].shape()});
    REQUIRE(again.ok());
    int kernels = 0;
    for (const auto& p : again->profile())
      if (p.kind == "kernel") {
        ++kernels;
        CHECK(p.cached_measurements == 2);
        if (stored < 1) CHECK(p.cached_ms == doctest::Approx(stored));
        else CHECK(p.cached_ms < 1e3);
      }
    CHECK(kernels > 0);
  }
  std::filesystem::remove_all(o.cache_dir);
}

// BF16 Convs off AMX: their weights, rounded to BF16 as the plan stores them, are packed widened
// to F32 for the FP32 kernels, which convert the BF16 input as they read it: a 3x3 layer runs
// Winograd's kernel, a 1x1 one the pointwise kernel (before, the generic unpacked kernel ran
// ResNet-50's BF16 plan 27% slower than FP32 on Zen 3). The results are the BF16 plan's.
TEST_CASE("session: BF16 Convs without AMX run the FP32 kernels on widened weights (3x3 by Winograd)") {
  auto d = PluginHost::shared().best_device();
  REQUIRE(d.ok());
  if (d->info().compiles_for("+amx-tile") && d->info().compiles_for("+amx-bf16")) {
    MESSAGE("skipped: this host has AMX-BF16 (its BF16 Convs run on the tiles)");
    return;
  }
  GraphBuilder b("bf16conv");
  auto x = b.input("x", DType::F32, {1, 32, 14, 14});
  auto h = b.op1("Conv", {x, b.constant(test::random_tensor({48, 32, 1, 1}, 71, -0.2f, 0.2f))}, {}, "c1");
  b.output(b.op1("Conv", {b.op1("Relu", {h}), b.constant(test::random_tensor({64, 48, 3, 3}, 72, -0.2f, 0.2f))},
                 {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "c3"),
           "y");
  auto g = b.build();
  REQUIRE(g.ok());
  const std::vector<Tensor> inputs = {test::random_tensor({1, 32, 14, 14}, 73)};
  const std::string dir = temp_cache_dir("bf16conv") + "/sources";
  SessionOptions o;
  o.use_cache = false;
  o.dump_dir = dir;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto plan = plan_from_policy(*g, Policy::uniform(Mode::bf16), s->device_formats());
  REQUIRE(plan.ok());
  s->set_plan(std::make_shared<Plan>(*plan));
  auto exe = s->compile(*g, {{1, 32, 14, 14}});
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->compile_stats().packed_conv_nodes == std::vector<std::string>{"c1", "c3"});
  int winograd = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path());
    const std::string src((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    winograd += src.find("float win[") != std::string::npos && src.find("const u16* restrict X") != std::string::npos;
  }
  CHECK(winograd == 1);  // c3, reading the Relu's BF16 output
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
  // Against the plan's emulation, which holds the graph output in the plan's BF16 where the
  // Session hands it out in F32 (so it is rounded here): Winograd's FP32 rounding differs from
  // direct summation by a few FP32 ulps, so only the odd output lands one BF16 step away.
  auto emu = emulation_for_plan(*g, *plan);
  REQUIRE_MESSAGE(emu.ok(), emu.status().to_string());
  ref::RunOptions ro;
  ro.emulation = &*emu;
  auto want = ref::run(*g, inputs, ro);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  auto got = exe->run(inputs);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  const std::vector<float> gv = got->front().cast(DType::BF16).to_f32(), wv = want->front().to_f32();
  REQUIRE(gv.size() == wv.size());
  int64_t off = 0;
  for (size_t k = 0; k < gv.size(); ++k) {
    CHECK_MESSAGE(std::abs(gv[k] - wv[k]) <= 0.016f * (std::abs(wv[k]) + 0.05f), k << ": " << gv[k] << " vs " << wv[k]);
    off += gv[k] != wv[k];
  }
  CHECK(off * 20 <= int64_t(gv.size()));
}

// SessionOptions::autotune: Conv kernels with packed weights offer tile configurations (FP32:
// rows per work item; BF16 on AMX: pixels and slice depth); the first compile measures them and
// keeps the choice in the kernel cache, the next replays it (same kernels, same bits) without
// measuring; the results stay the plan's. BF16 is tunable only where the host has AMX.
TEST_CASE("session: autotuning measures tile choices once, keeps them in the kernel cache, replays them") {
  GraphBuilder b("tuned");
  auto x = b.input("x", DType::F32, {1, 24, 14, 14});
  auto h = b.op1("Conv", {b.op1("Relu", {x}), b.constant(test::random_tensor({40, 24, 3, 3}, 61, -0.2f, 0.2f))},
                 {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output(b.op1("Conv", {b.op1("Relu", {h}), b.constant(test::random_tensor({16, 40, 1, 1}, 62, -0.2f, 0.2f))}), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  const std::vector<Tensor> inputs = {test::random_tensor({1, 24, 14, 14}, 63)};
  auto truth = ref::run(*g, inputs);
  REQUIRE(truth.ok());
  for (DType precision : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(precision));
    SessionOptions o;
    o.precision = precision;
    o.autotune = true;
    o.cache_dir = temp_cache_dir("autotune");
    auto s = Session::create(o);
    REQUIRE(s.ok());
    auto exe = s->compile(*g, {{1, 24, 14, 14}});
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    const CompileStats& first = exe->compile_stats();
    if (precision == DType::BF16 && first.packed_conv_nodes.empty()) {
      MESSAGE("BF16 skipped: no AMX-BF16 on this host (its BF16 Conv kernels have no tile choices)");
      std::filesystem::remove_all(o.cache_dir);
      continue;
    }
    REQUIRE(first.tuned_kernels.size() == 2);
    for (const std::string& t : first.tuned_kernels) CHECK(t.find("(measured)") != std::string::npos);
    auto got = exe->run(inputs);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    auto d = compare(truth->front(), got->front());
    REQUIRE(d.ok());
    CHECK(d->rel_l2 < (precision == DType::F32 ? 1e-5 : 0.02));

    // The choice is in the default kernel's cache entry.
    KernelCacheOptions co;
    co.dir = o.cache_dir;
    auto cache = KernelCache::open(co);
    REQUIRE(cache.ok());
    int with_choice = 0;
    for (const auto& e : cache->list()) with_choice += e.meta.find("\"tile\"") != std::string::npos;
    CHECK(with_choice == 2);

    auto s2 = Session::create(o);
    REQUIRE(s2.ok());
    auto again = s2->compile(*g, {{1, 24, 14, 14}});
    REQUIRE(again.ok());
    const CompileStats& second = again->compile_stats();
    REQUIRE(second.tuned_kernels.size() == 2);
    for (size_t k = 0; k < 2; ++k) {
      CHECK(second.tuned_kernels[k].find("(cached)") != std::string::npos);
      const std::string a = first.tuned_kernels[k], c = second.tuned_kernels[k];
      CHECK(a.substr(0, a.find(" (")) == c.substr(0, c.find(" (")));  // same label, same tile
    }
    CHECK(second.cache_misses == 0);
    auto got2 = again->run(inputs);
    REQUIRE(got2.ok());
    CHECK(got->front().to_f32() == got2->front().to_f32());
    std::filesystem::remove_all(o.cache_dir);
  }
}

namespace {

// A plan of every node of `g` in FP32 but `narrowed`, in BF16.
Plan plan_narrowing(const Graph& g, const std::string& narrowed) {
  Plan plan;
  plan.graph = g.name();
  for (const Node& node : g.nodes()) {
    NodePlan np;
    np.name = node.name;
    np.op = node.op;
    if (node.name == narrowed) np.mode = Mode::bf16;
    plan.nodes.push_back(np);
  }
  return plan;
}

// Each output of `got` within `tol` (relative, plus 1) of `ref`'s.
void check_close(const std::vector<Tensor>& got, const std::vector<Tensor>& ref, float tol) {
  REQUIRE(got.size() == ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    const std::vector<float> a = got[k].to_f32(), r = ref[k].to_f32();
    REQUIRE(a.size() == r.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - r[i]) <= tol * (1.0f + std::fabs(r[i])));
  }
}

}  // namespace

TEST_CASE("session: a strided 1x1 Conv runs as a Slice and a unit-stride 1x1 Conv, with the same values") {
  GraphBuilder b("strided_pointwise");
  auto x = b.input("x", DType::F32, make_shape(std::vector<int64_t>{1, 12, 9, 7}));
  auto s22 = b.op1("Conv", {x, b.constant(test::random_tensor({8, 12, 1, 1}, 71)), b.constant(test::random_tensor({8}, 72))},
                   {{"strides", std::vector<int64_t>{2, 2}}}, "s22");
  b.output(b.op1("Relu", {s22}), "y22");
  b.output(b.op1("Conv", {x, b.constant(test::random_tensor({5, 12, 1, 1}, 73))}, {{"strides", std::vector<int64_t>{3, 2}}},
                 "s32"),
           "y32");
  b.output(b.op1("Relu", {x}), "x_relu");  // x has other readers: it stays as it is
  auto g = b.build();
  REQUIRE(g.ok());
  const std::vector<Tensor> in = {test::random_tensor({1, 12, 9, 7}, 74)};
  auto want = ref::run(*g, in);
  REQUIRE(want.ok());

  Graph rewritten = *g;
  auto n = subsample_strided_pointwise_convs(rewritten, nullptr);
  REQUIRE(n.ok());
  CHECK(*n == 2);
  for (const Node& node : rewritten.nodes())
    if (node.op == "Conv") CHECK(std::get<std::vector<int64_t>>(node.attrs.at("strides")) == std::vector<int64_t>{1, 1});
  auto same = ref::run(rewritten, in);
  REQUIRE(same.ok());
  for (size_t k = 0; k < want->size(); ++k) CHECK((*same)[k].to_f32() == (*want)[k].to_f32());  // an exact rewrite

  // A plan that quantises or narrows the Conv keeps its strided kernel.
  const Plan plan = plan_narrowing(*g, "s22");
  Graph kept = *g;
  auto m = subsample_strided_pointwise_convs(kept, &plan);
  REQUIRE(m.ok());
  CHECK(*m == 1);  // s32 only

  auto s = Session::create({});
  REQUIRE(s.ok());
  auto exe = s->compile(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().message());
  auto got = exe->run(in);
  REQUIRE(got.ok());
  check_close(*got, *want, 1e-5f);
}

TEST_CASE("session: a Conv over a small map runs as gathered patches and a 1x1 Conv, with the same values") {
  using V = std::vector<int64_t>;
  GraphBuilder b("small_map");
  auto x = b.input("x", DType::F32, make_shape(V{1, 32, 7, 7}));
  // 3x3 with padding (fused Relu), strided and dilated without padding, asymmetric pads.
  auto c1 = b.op1("Conv", {x, b.constant(test::random_tensor({24, 32, 3, 3}, 81)), b.constant(test::random_tensor({24}, 82))},
                  {{"pads", V{1, 1, 1, 1}}}, "c1");
  b.output(b.op1("Relu", {c1}), "y1");
  b.output(b.op1("Conv", {x, b.constant(test::random_tensor({16, 32, 3, 3}, 83))},
                 {{"strides", V{2, 1}}, {"dilations", V{1, 2}}}, "c2"),
           "y2");
  b.output(b.op1("Conv", {x, b.constant(test::random_tensor({8, 32, 2, 5}, 84))}, {{"pads", V{0, 2, 1, 0}}}, "c3"), "y3");
  // Left alone: grouped; 1x1; fewer than 256 multiply-adds per output (2 channels, 9 taps);
  // Winograd's (below).
  b.output(b.op1("Conv", {x, b.constant(test::random_tensor({32, 16, 3, 3}, 85))}, {{"group", int64_t{2}}}, "grouped"), "y4");
  b.output(b.op1("Conv", {x, b.constant(test::random_tensor({8, 32, 1, 1}, 86))}, {}, "pointwise"), "y5");
  auto x2 = b.input("x2", DType::F32, make_shape(V{1, 2, 7, 7}));
  b.output(b.op1("Conv", {x2, b.constant(test::random_tensor({4, 2, 3, 3}, 87))}, {}, "shallow"), "y6");
  // A map over kSmallMapPositions: 16x16.
  auto x3 = b.input("x3", DType::F32, make_shape(V{1, 32, 16, 16}));
  b.output(b.op1("Conv", {x3, b.constant(test::random_tensor({8, 32, 3, 3}, 88))}, {{"pads", V{1, 1, 1, 1}}}, "large"), "y7");
  // 3x3 with unit strides filling 64 output channels, two images (32 tiles): the Winograd kernel's.
  auto x4 = b.input("x4", DType::F32, make_shape(V{2, 32, 7, 7}));
  b.output(b.op1("Conv", {x4, b.constant(test::random_tensor({64, 32, 3, 3}, 92))}, {{"pads", V{1, 1, 1, 1}}}, "winograd"),
           "y8");
  auto g = b.build();
  REQUIRE(g.ok());
  const std::vector<Tensor> in = {test::random_tensor({1, 32, 7, 7}, 89), test::random_tensor({1, 2, 7, 7}, 90),
                                  test::random_tensor({1, 32, 16, 16}, 91), test::random_tensor({2, 32, 7, 7}, 93)};
  auto want = ref::run(*g, in);
  REQUIRE(want.ok());

  Graph rewritten = *g;
  auto cache = std::make_shared<SharedWeights>();
  auto n = gather_small_map_convs(rewritten, nullptr, cache.get());
  REQUIRE_MESSAGE(n.ok(), n.status().message());
  CHECK(*n == 3);  // c1, c2, c3
  for (const Node& node : rewritten.nodes())
    if (node.op == "Conv" && (node.name == "c1" || node.name == "c2" || node.name == "c3"))
      CHECK(std::get<V>(node.attrs.at("kernel_shape")) == V{1, 1});
    else if (node.name == "winograd")
      CHECK(rewritten.constant(node.inputs[1])->shape() == V{64, 32, 3, 3});
  auto same = ref::run(rewritten, in);
  REQUIRE(same.ok());
  check_close(*same, *want, 1e-6f);  // the same products (the reference sums in FP64)

  // Another compile of the model shares the reshaped weights through the cache.
  Graph again = *g;
  REQUIRE(gather_small_map_convs(again, nullptr, cache.get()).ok());
  CHECK(again.constant(*again.find_value("c1/patch_weights")) == rewritten.constant(*rewritten.find_value("c1/patch_weights")));

  // A plan that narrows c1 keeps its kernel.
  const Plan plan = plan_narrowing(*g, "c1");
  Graph kept = *g;
  auto m = gather_small_map_convs(kept, &plan, nullptr);
  REQUIRE(m.ok());
  CHECK(*m == 2);

  auto s = Session::create({});
  REQUIRE(s.ok());
  auto exe = s->compile(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().message());
  auto got = exe->run(in);
  REQUIRE(got.ok());
  check_close(*got, *want, 1e-5f);
}
