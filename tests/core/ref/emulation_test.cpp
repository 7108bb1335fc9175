// Emulated precision: values rounded to the plan's format, accumulators rounded to the plan's
// accumulation format; ground truth without an Emulation.
#include <doctest/doctest.h>

#include <cmath>

#include "ref_test_util.hpp"

using namespace hpf;
using namespace hpf::test;

namespace {

// y = x @ w with w's values chosen so each format rounds them differently.
Graph matmul_graph(std::vector<float> w, int64_t k) {
  GraphBuilder b("mm");
  ValueId x = b.input("x", DType::F32, {1, k});
  ValueId wv = b.constant("w", f32({k, 1}, std::move(w)));
  b.output(b.op1("MatMul", {x, wv}, {}, "mm"), "y");
  return std::move(b.build()).value();
}

float run1(const Graph& g, const Tensor& x, const ref::Emulation* emu) {
  ref::RunOptions o;
  o.emulation = emu;
  auto r = ref::run(g, {x}, o);
  REQUIRE(r.ok());
  return (*r)[0].to_f32()[0];
}

}  // namespace

TEST_CASE("emulation: storage format rounds weights and activations") {
  // 1 + 2^-9 is exact in F16 (10 mantissa bits) but rounds to 1 in BF16 (7 bits).
  const float v = 1.0f + std::ldexp(1.0f, -9);
  Graph g = matmul_graph({v}, 1);
  Tensor x = f32({1, 1}, {1.0f});
  CHECK(run1(g, x, nullptr) == v);
  ref::Emulation e;
  e.default_format = DType::F16;
  CHECK(run1(g, x, &e) == v);
  e.default_format = DType::BF16;
  CHECK(run1(g, x, &e) == 1.0f);
  // Per-value override: only the weight in BF16, everything else FP32.
  ref::Emulation only_w;
  only_w.value_format["w"] = DType::BF16;
  CHECK(run1(g, x, &only_w) == 1.0f);
  ref::Emulation only_x;
  only_x.value_format["x"] = DType::BF16;
  CHECK(run1(g, x, &only_x) == v);
}

TEST_CASE("emulation: FP8 storage saturates or overflows per the Overflow mode") {
  Graph g = matmul_graph({1.0f}, 1);
  Tensor x = f32({1, 1}, {1000.0f});
  ref::Emulation e;
  e.value_format["x"] = DType::F8E4M3;
  CHECK(run1(g, x, &e) == 448.0f);
  e.overflow = Overflow::propagate;
  CHECK(std::isnan(run1(g, x, &e)));
  e.value_format["x"] = DType::F8E5M2;  // 1000 fits E5M2 (max 57344); 1e5 does not
  CHECK(run1(g, x, &e) == 1024.0f);
  CHECK(std::isinf(run1(g, f32({1, 1}, {1e5f}), &e)));
}

TEST_CASE("emulation: accumulation format rounds every partial sum") {
  // 2048 + 1 + 1 + ... : in F16 (11 significant bits) 2048 + 1 rounds back to 2048 (tie to
  // even), so an F16 accumulator never moves; FP32 and FP64 get 2048 + n exactly.
  const int64_t n = 16;
  std::vector<float> w(n + 1, 1.0f);
  Graph g = matmul_graph(w, n + 1);
  std::vector<float> xs(n + 1, 1.0f);
  xs[0] = 2048.0f;
  Tensor x = f32({1, n + 1}, xs);
  CHECK(run1(g, x, nullptr) == 2048.0f + n);
  ref::Emulation e;
  e.accumulation["mm"] = DType::F32;
  CHECK(run1(g, x, &e) == 2048.0f + n);
  e.accumulation["mm"] = DType::F16;
  CHECK(run1(g, x, &e) == 2048.0f);
  e.accumulation.clear();
  e.default_accumulation = DType::BF16;  // 8 significant bits: 2048 + 1 -> 2048 as well
  CHECK(run1(g, x, &e) == 2048.0f);
}

TEST_CASE("ground truth: FP64 accumulation where FP32 would lose the answer") {
  // 1e8 + 1 - 1e8: FP32 left to right gives 0, FP64 gives 1.
  Graph g = matmul_graph({1.0f, 1.0f, 1.0f}, 3);
  Tensor x = f32({1, 3}, {1e8f, 1.0f, -1e8f});
  CHECK(run1(g, x, nullptr) == 1.0f);
  ref::Emulation e;
  e.default_accumulation = DType::F32;
  CHECK(run1(g, x, &e) == 0.0f);
}

TEST_CASE("narrow graph dtypes hold exactly representable values without emulation") {
  // Cast to F16 then Add: the F16 output is rounded to F16 even in ground-truth mode.
  GraphBuilder b("cast");
  ValueId x = b.input("x", DType::F32, {2});
  ValueId h = b.op1("Cast", {x}, {{"to", int64_t{10}}});
  ValueId s = b.op1("Add", {h, h});
  b.output(s, "y");
  auto g = b.build();
  REQUIRE(g.ok());
  CHECK(g->value(*g->find_value("y")).dtype == DType::F16);
  auto r = ref::run(*g, {f32({2}, {1.0f + std::ldexp(1.0f, -12), 40000.0f})});
  REQUIRE(r.ok());
  CHECK((*r)[0].dtype() == DType::F16);
  auto v = (*r)[0].to_f32();
  CHECK(v[0] == 2.0f);               // 1 + 2^-12 rounds to 1 in F16
  CHECK(std::isinf(v[1]));           // 80000 overflows F16 (IEEE: to Inf)
}

TEST_CASE("run: input checks name the input and the dimension") {
  GraphBuilder b("chk");
  ValueId x = b.input("x", DType::F32, {Dim::sym("batch"), 4});
  ValueId y = b.input("y", DType::F32, {Dim::sym("batch"), 4});
  b.output(b.add(x, y), "z");
  auto g = b.build();
  REQUIRE(g.ok());
  auto wrong_dim = ref::run(*g, {f32({2, 4}, std::vector<float>(8)), f32({2, 3}, std::vector<float>(6))});
  REQUIRE_FALSE(wrong_dim.ok());
  CHECK(wrong_dim.status().message() == "input 'y': expected shape [batch,4], got [2,3] (dimension 1)");
  auto symbol = ref::run(*g, {f32({2, 4}, std::vector<float>(8)), f32({3, 4}, std::vector<float>(12))});
  REQUIRE_FALSE(symbol.ok());
  CHECK(symbol.status().message() == "input 'y': dimension 'batch' is 3 here but 2 in an earlier input");
  auto dtype = ref::run(*g, {f32({2, 4}, std::vector<float>(8)), i64({2, 4}, std::vector<int64_t>(8))});
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.status().message() == "input 'y': expected dtype f32, got i64");
  auto count = ref::run(*g, {f32({2, 4}, std::vector<float>(8))});
  REQUIRE_FALSE(count.ok());
  CHECK(count.status().message() == "graph 'chk' takes 2 inputs (x, y), got 1");
  std::map<std::string, Tensor> named{{"x", f32({1, 4}, std::vector<float>(4))}, {"q", f32({1, 4}, std::vector<float>(4))}};
  auto by_name = ref::run_named(*g, named);
  REQUIRE_FALSE(by_name.ok());
  CHECK(by_name.status().message() == "graph 'chk': input 'y' is missing");
}

TEST_CASE("run: a runtime error names the node and the graph survives it") {
  GraphBuilder b("gather");
  ValueId table = b.constant("table", f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  ValueId ids = b.input("ids", DType::I64, {2});
  b.output(b.op1("Gather", {table, ids}, {}, "lookup"), "rows");
  auto g = b.build();
  REQUIRE(g.ok());
  auto bad = ref::run(*g, {i64({2}, {0, 7})});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "node 'lookup' (Gather): index 7 is out of range for axis 0 of size 3");
  auto good = ref::run(*g, {i64({2}, {2, -3})});
  REQUIRE(good.ok());
  check_close((*good)[0], {2, 2}, {5, 6, 1, 2});
}
