// Every generated C kernel against the reference interpreter, through the CPU plugin, for each
// format it claims, on odd shapes (sizes that are not multiples of the vector width, size 1).
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "hpf/graph.hpp"
#include "hpf/plugin.h"
#include "hpf/reference.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

// The CPU plugin loaded directly through its C table (the host has its own tests).
struct CpuPlugin {
  const hpf_plugin_api* api = nullptr;
  hpf_plugin* p = nullptr;
  std::string skip;
  CpuPlugin() {
    void* h = dlopen(HPF_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      skip = std::string("CPU plugin not loadable: ") + dlerror();
      return;
    }
    auto get = reinterpret_cast<hpf_get_plugin_api_fn>(dlsym(h, HPF_PLUGIN_ENTRY_POINT));
    REQUIRE(reinterpret_cast<void*>(get) != nullptr);
    api = get();
    REQUIRE(api->plugin_init(&p) == nullptr);
  }
  std::string err(hpf_error* e) {
    std::string m = api->error_message(e);
    api->error_destroy(e);
    return m;
  }
  // Compiles, loads and runs `k` on host buffers (the CPU plugin's memory is host memory).
  void run(const jit::GeneratedKernel& k, std::vector<void*> args) {
    hpf_blob* blob = nullptr;
    hpf_error* e = api->program_compile(p, 0, k.source.c_str(), k.source.size(), &blob);
    REQUIRE_MESSAGE(e == nullptr, (e ? err(e) : "") << "\n" << k.source);
    hpf_program* prog = nullptr;
    e = api->program_load(p, 0, blob->data, blob->size, &prog);
    api->blob_free(p, blob);
    REQUIRE_MESSAGE(e == nullptr, (e ? err(e) : ""));
    hpf_kernel* kern = nullptr;
    e = api->kernel_get(p, prog, k.name.c_str(), &kern);
    REQUIRE_MESSAGE(e == nullptr, (e ? err(e) : ""));
    hpf_launch l{};
    l.struct_size = sizeof l;
    l.args = args.data();
    l.arg_count = args.size();
    l.work_items = k.work_items;
    l.grain = k.grain;
    e = api->kernel_launch(p, kern, &l);
    REQUIRE_MESSAGE(e == nullptr, (e ? err(e) : ""));
    api->program_unload(p, prog);
  }
};

CpuPlugin& plugin() {
  static CpuPlugin instance;
  return instance;
}

Tensor random_tensor(std::vector<int64_t> shape, DType t, uint32_t seed, float lo = -2,
                     float hi = 2) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(numel(shape));
  for (float& x : v) x = d(g);
  if (t == DType::I64) {
    std::vector<int64_t> iv(v.size());
    for (size_t k = 0; k < v.size(); ++k)
      iv[k] = static_cast<int64_t>(std::abs(v[k]) * 1000) % static_cast<int64_t>(hi);
    return *Tensor::from_i64(shape, iv);
  }
  return *Tensor::from_f32(shape, v, t);
}

// Builds the graph, lowers it with every value in its graph dtype, runs each kernel step on the
// plugin over host copies, and compares the graph output with the reference interpreter.
void check_graph(GraphBuilder& b, const std::vector<Tensor>& inputs, double tol) {
  auto& cpu = plugin();
  if (!cpu.skip.empty()) {
    MESSAGE("skipped: " << cpu.skip);
    return;
  }
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto want = ref::run(*g, inputs);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  auto steps = jit::lower(*g, {});
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  std::vector<Tensor> vals(g->values().size());
  for (size_t k = 0; k < inputs.size(); ++k) vals[g->inputs()[k]] = inputs[k];
  for (size_t v = 0; v < g->values().size(); ++v)
    if (g->values()[v].constant) vals[v] = *g->values()[v].constant;
  for (const auto& st : *steps) {
    if (st.kind == jit::LoweredStep::Kind::alias) {
      const Value& out = g->value(st.outputs[0]);
      vals[st.outputs[0]] = *vals[st.inputs[0]].reshaped(*concrete(out.shape));
      continue;
    }
    REQUIRE_MESSAGE(st.kind == jit::LoweredStep::Kind::kernel, "no generator for " << st.label);
    auto k = jit::generate_c(st.spec);
    REQUIRE_MESSAGE(k.ok(), k.status().to_string());
    std::vector<void*> args;
    for (ValueId v : st.inputs) args.push_back(vals[v].bytes().data());
    for (size_t o = 0; o < st.outputs.size(); ++o) {
      vals[st.outputs[o]] = Tensor(st.spec.outputs[o].dtype, st.spec.outputs[o].shape);
      args.push_back(vals[st.outputs[o]].bytes().data());
    }
    cpu.run(*k, args);
  }
  const Tensor& got = vals[g->outputs()[0]];
  REQUIRE(got.shape() == (*want)[0].shape());
  REQUIRE(got.dtype() == (*want)[0].dtype());
  auto gv = got.to_f32(), wv = (*want)[0].to_f32();
  double worst = 0;
  for (size_t k = 0; k < gv.size(); ++k) {
    const double e = std::abs(double(gv[k]) - wv[k]) / (1.0 + std::abs(double(wv[k])));
    if (std::isnan(wv[k]))
      CHECK(std::isnan(gv[k]));
    else
      worst = std::max(worst, e);
  }
  CHECK_MESSAGE(worst <= tol, "worst relative error " << worst);
}

}  // namespace

TEST_CASE("codegen: fused elementwise chain with broadcasting, every float format") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("ew");
    auto x = b.input("x", t, {3, 5, 17});
    auto y = b.input("y", t, {5, 1});
    auto z = b.op1("Gelu", {b.op1("Mul", {b.add(x, y), b.constant(random_tensor({17}, t, 3))})});
    z = b.op1("Clip", {b.op1("LeakyRelu", {b.sub(z, y)}, {{"alpha", 0.1f}})},
              {{"min", -0.5f}, {"max", 1.5f}});
    b.output(b.op1("Sigmoid", {b.op1("Tanh", {z})}), "out");
    // Per-op rounding to the format happens in both; only FP32 math differences remain.
    check_graph(b, {random_tensor({3, 5, 17}, t, 1), random_tensor({5, 1}, t, 2)},
                t == DType::F32 ? 1e-5 : 1e-2);
  }
}

TEST_CASE("codegen: casts between formats inside a chain") {
  GraphBuilder b("cast");
  auto x = b.input("x", DType::F32, {7, 9});
  auto h = b.op1("Cast", {x}, {{"to", int64_t{10}}});
  auto s = b.op1("Add", {h, h});
  auto back = b.op1("Cast", {s}, {{"to", int64_t{16}}});
  b.output(b.op1("Cast", {back}, {{"to", int64_t{1}}}), "out");
  check_graph(b, {random_tensor({7, 9}, DType::F32, 4, -70000, 70000)}, 0);  // bit-exact
}

TEST_CASE("codegen: MatMul batched and broadcast, Gemm with transposes and bias") {
  for (DType t : {DType::F32, DType::BF16}) {
    GraphBuilder b("mm");
    auto x = b.input("x", t, {2, 1, 5, 33});
    auto w = b.constant(random_tensor({3, 33, 7}, t, 5));
    b.output(b.matmul(x, w), "out");
    check_graph(b, {random_tensor({2, 1, 5, 33}, t, 6)}, t == DType::F32 ? 1e-5 : 1e-2);
  }
  GraphBuilder g("gemm");
  auto a = g.input("a", DType::F32, {13, 1});
  auto w = g.constant(random_tensor({9, 1}, DType::F32, 7));
  auto c = g.constant(random_tensor({9}, DType::F32, 8));
  g.output(g.op1("Gemm", {a, w, c}, {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}),
           "out");
  check_graph(g, {random_tensor({13, 1}, DType::F32, 9)}, 1e-6);
}

TEST_CASE("codegen: Softmax, LogSoftmax and LayerNormalization over odd rows") {
  GraphBuilder b("sm");
  auto x = b.input("x", DType::F32, {3, 4, 37});
  b.output(b.op1("LogSoftmax", {b.softmax(x)}), "out");
  check_graph(b, {random_tensor({3, 4, 37}, DType::F32, 10, -30, 30)}, 1e-5);
  GraphBuilder l("ln");
  auto y = l.input("y", DType::F32, {5, 1, 23});
  l.output(l.layer_norm(y, l.constant(random_tensor({23}, DType::F32, 11)),
                        l.constant(random_tensor({23}, DType::F32, 12))),
           "out");
  check_graph(l, {random_tensor({5, 1, 23}, DType::F32, 13)}, 1e-5);
}

TEST_CASE("codegen: Gather and Transpose move values exactly") {
  GraphBuilder b("gt");
  auto ids = b.input("ids", DType::I64, {2, 3});
  auto table = b.constant(random_tensor({11, 6}, DType::F16, 14));
  auto e = b.op1("Gather", {table, ids});
  b.output(b.transpose(e, {2, 0, 1}), "out");
  check_graph(b, {random_tensor({2, 3}, DType::I64, 15, 0, 11)}, 0);
}
