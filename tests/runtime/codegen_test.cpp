// Every generated C kernel against the reference interpreter, through the CPU plugin, for each
// format it claims, on odd shapes (sizes that are not multiples of the vector width, size 1).
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include <xmmintrin.h>

#include "hpf/calibration.hpp"
#include "hpf/graph.hpp"
#include "hpf/plugin.h"
#include "hpf/reference.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_gemm_micro.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/conv_packing.hpp"
#include "jit/codegen/lowering.hpp"
#include "runtime/session/weight_packing.hpp"

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
  // Put before every kernel's source (a test's preprocessor switch), normally empty.
  std::string source_prefix;
  // Compiles, loads and runs `k` on host buffers (the CPU plugin's memory is host memory).
  void run(const jit::GeneratedKernel& k, std::vector<void*> args) {
    hpf_blob* blob = nullptr;
    const std::string src = source_prefix + k.source;
    hpf_error* e = api->program_compile(p, 0, src.c_str(), src.size(), &blob);
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
// plugin over host copies: the device's first graph output and the reference interpreter's;
// false (with a message) when the plugin is not loadable. `pack_conv`: Conv steps with constant
// FP32 weights, or BF16 weights and input, read them packed as the Session gives them
// (jit/codegen/conv_packing.hpp; BF16 in the "amx" layout, which runs on AMX tiles where the
// host has them and in plain C elsewhere).
// The "tile" attribute given to Conv kernels with packed weights ("": the default).
std::string conv_tile;
// Outputs written over the input jit::c_in_place_input names (a copy of it), as the Session's
// memory plan lets them where that input dies at the step.
bool outputs_in_place = false;
// >= 0: every operand is copied to memory this many bytes past a 64-byte boundary for the
// kernel (0: aligned, as the Session's buffers are; 4: rows off every vector boundary); -1: the
// kernel runs on the Tensors' own memory (malloc's alignment).
int64_t operand_offset = -1;

bool run_both(GraphBuilder& b, const std::vector<Tensor>& inputs, Tensor* got_out, Tensor* want_out,
              bool pack_conv = false) {
  auto& cpu = plugin();
  if (!cpu.skip.empty()) {
    MESSAGE("skipped: " << cpu.skip);
    return false;
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
    jit::KernelSpec spec = st.spec;
    Tensor packed;
    // F32 weights, or BF16 ones in the AMX layout (its plain-C fallback here unless the host has AMX)
    const bool pack = pack_conv && jit::conv_takes_packed_weights(spec) && !jit::conv_bf16_as_f32(spec, true) &&
                      g->values()[st.inputs[1]].constant;
    if (pack) {
      spec = jit::conv_spec_with_packed_weights(spec);
      if (!conv_tile.empty()) spec.attrs["tile"] = conv_tile;
      packed = Tensor(spec.inputs[1].dtype, spec.inputs[1].shape);
      const std::byte* w = vals[st.inputs[1]].bytes().data();
      if (packed.dtype() == DType::BF16)
        jit::pack_conv_weights(spec, reinterpret_cast<const uint16_t*>(w), reinterpret_cast<uint16_t*>(packed.bytes().data()));
      else
        jit::pack_conv_weights(spec, reinterpret_cast<const float*>(w), reinterpret_cast<float*>(packed.bytes().data()));
    }
    auto k = jit::generate_c(spec);
    REQUIRE_MESSAGE(k.ok(), k.status().to_string());
    std::vector<void*> args;
    for (ValueId v : st.inputs) args.push_back(vals[v].bytes().data());
    if (pack) args[1] = packed.bytes().data();
    const int over = outputs_in_place ? jit::c_in_place_input(spec) : -1;
    for (size_t o = 0; o < st.outputs.size(); ++o) {
      vals[st.outputs[o]] = Tensor(st.spec.outputs[o].dtype, st.spec.outputs[o].shape);
      if (o == 0 && over >= 0) {  // the operand's values in the output's memory, read there
        const Tensor& in = vals[st.inputs[over]];
        REQUIRE(in.nbytes() == vals[st.outputs[0]].nbytes());
        std::memcpy(vals[st.outputs[0]].bytes().data(), in.bytes().data(), in.nbytes());
        args[over] = vals[st.outputs[0]].bytes().data();
      }
      args.push_back(vals[st.outputs[o]].bytes().data());
    }
    std::vector<std::unique_ptr<std::byte[]>> moved;  // operand copies at operand_offset
    if (operand_offset >= 0) {
      for (void*& a : args) {
        const Tensor* t = nullptr;  // the Tensor whose memory `a` is
        for (const Tensor& v : vals)
          if (v.nbytes() > 0 && v.bytes().data() == a) t = &v;
        if (pack && a == packed.bytes().data()) t = &packed;
        REQUIRE(t != nullptr);
        moved.emplace_back(new std::byte[t->nbytes() + 64 + operand_offset]);
        const uintptr_t at = (reinterpret_cast<uintptr_t>(moved.back().get()) + 63) / 64 * 64 + operand_offset;
        std::memcpy(reinterpret_cast<void*>(at), a, t->nbytes());
        a = reinterpret_cast<void*>(at);
      }
    }
    cpu.run(*k, args);
    if (operand_offset >= 0)
      for (size_t o = 0; o < st.outputs.size(); ++o) {
        Tensor& t = vals[st.outputs[o]];
        std::memcpy(t.bytes().data(), args[args.size() - st.outputs.size() + o], t.nbytes());
      }
  }
  *got_out = vals[g->outputs()[0]];
  *want_out = (*want)[0];
  return true;
}

// run_both, then the outputs compared: relative error up to `tol`, NaN and Inf where the
// reference has them.
void check_graph(GraphBuilder& b, const std::vector<Tensor>& inputs, double tol, bool pack_conv = false) {
  Tensor got, want;
  if (!run_both(b, inputs, &got, &want, pack_conv)) return;
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  auto gv = got.to_f32(), wv = want.to_f32();
  double worst = 0;
  for (size_t k = 0; k < gv.size(); ++k) {
    const double e = std::abs(double(gv[k]) - wv[k]) / (1.0 + std::abs(double(wv[k])));
    if (std::isnan(wv[k]))
      CHECK(std::isnan(gv[k]));
    else if (std::isinf(wv[k]))
      CHECK(gv[k] == wv[k]);
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

// The generated conversions (hardware F16C/AVX512-FP16 where the host has them, portable C
// otherwise) give the reference's bits: every F16 code to F32, and F32 values at every exponent
// with the rounding-sensitive mantissas (halfway cases, sticky bits, NaN payloads) to F16 and BF16.
TEST_CASE("codegen: F16 and BF16 conversions match the reference bit for bit") {
  auto bits_equal = [](const Tensor& got, const Tensor& want) {
    REQUIRE(got.dtype() == want.dtype());
    REQUIRE(got.nbytes() == want.nbytes());
    size_t diff = 0, first = 0;
    for (size_t k = 0; k < got.nbytes(); ++k)
      if (got.bytes()[k] != want.bytes()[k] && diff++ == 0) first = k;
    CHECK_MESSAGE(diff == 0, diff << " bytes differ, first at byte " << first);
  };
  for (DType t : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    Tensor codes(t, {65536});
    for (uint32_t c = 0; c < 65536; ++c) std::memcpy(codes.bytes().data() + 2 * c, &c, 2);  // little endian
    GraphBuilder b("from_lowp");
    auto x = b.input("x", t, {65536});
    b.output(b.op1("Cast", {x}, {{"to", int64_t{1}}}), "out");
    Tensor got, want;
    if (run_both(b, {codes}, &got, &want)) bits_equal(got, want);
  }
  std::vector<uint32_t> f32;
  const uint32_t mants[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0x18000, 0xfff, 0x1000, 0x1001, 0x3000, 0x1fff,
                            0x2000, 0x400000, 0x7fe000, 0x7ff000, 0x7fffff, 0x123456, 0x5a5a5a};
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : mants)
      for (uint32_t sign : {0u, 1u}) f32.push_back(sign << 31 | e << 23 | m);
  for (DType t : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    const int64_t n = static_cast<int64_t>(f32.size());
    Tensor xs(DType::F32, {n});
    std::memcpy(xs.bytes().data(), f32.data(), 4 * f32.size());
    GraphBuilder b("to_lowp");
    auto x = b.input("x", DType::F32, {n});
    b.output(b.op1("Cast", {x}, {{"to", int64_t{t == DType::F16 ? 10 : 16}}}), "out");
    Tensor got, want;
    if (run_both(b, {xs}, &got, &want)) bits_equal(got, want);
  }
}

// F32 -> BF16 stores of rows (16 conversions at a time: vcvtneps2bf16 where the host has
// AVX512-BF16, with denormal lanes redone in software; vectorised integer rounding otherwise)
// against the reference, bit for bit: every BF16 code as the top half (zeros, denormals, normals,
// infinities, NaN payloads signalling and quiet, both signs) under the low halves that decide
// the rounding (exact, just below/at/above the halfway point, all ones), shuffled so denormal
// lanes share vectors with every other class; an odd length leaves a tail for the scalar path.
TEST_CASE("codegen: F32 to BF16 row stores match the reference bit for bit") {
  auto bits_equal = [](const Tensor& got, const Tensor& want) {
    REQUIRE(got.dtype() == want.dtype());
    REQUIRE(got.nbytes() == want.nbytes());
    size_t diff = 0, first = 0;
    for (size_t k = 0; k < got.nbytes(); ++k)
      if (got.bytes()[k] != want.bytes()[k] && diff++ == 0) first = k;
    CHECK_MESSAGE(diff == 0, diff << " bytes differ, first at byte " << first);
  };
  std::vector<uint32_t> f32;
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) f32.push_back(hi << 16 | lo);
  std::shuffle(f32.begin(), f32.end(), std::mt19937(11));
  f32.resize(f32.size() - 5);
  const int64_t n = static_cast<int64_t>(f32.size());
  Tensor xs(DType::F32, {n});
  std::memcpy(xs.bytes().data(), f32.data(), 4 * f32.size());
  {
    GraphBuilder b("to_bf16_rows");
    auto x = b.input("x", DType::F32, {n});
    b.output(b.op1("Cast", {x}, {{"to", int64_t{16}}}), "out");
    Tensor got, want;
    if (run_both(b, {xs}, &got, &want)) bits_equal(got, want);
  }
  {  // rows of a broadcast chain (x + zeros, exact) stored as BF16: row starts off the vector grid
    const int64_t cols = 37, rows = 4000;
    Tensor xr(DType::F32, {rows, cols});
    std::memcpy(xr.bytes().data(), f32.data(), 4 * rows * cols);
    GraphBuilder b("to_bf16_bcast");
    auto x = b.input("x", DType::F32, {rows, cols});
    auto z = b.input("z", DType::F32, {cols});
    b.output(b.op1("Cast", {b.add(x, z)}, {{"to", int64_t{16}}}), "out");
    Tensor got, want;
    if (run_both(b, {xr, Tensor(DType::F32, {cols})}, &got, &want)) bits_equal(got, want);
  }
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

  // Single elements along the last axis (a row per work item), negative indices counting from
  // the end.
  GraphBuilder c("gather_last");
  auto x = c.input("x", DType::F32, {5, 9});
  auto idx = c.constant(*Tensor::from_i64({2, 3}, std::vector<int64_t>{-1, 0, 4, 8, -9, 2}));
  c.output(c.op1("Gather", {x, idx}, {{"axis", int64_t{1}}}), "out");
  check_graph(c, {random_tensor({5, 9}, DType::F32, 16)}, 0);
}

namespace {

using Ints = std::vector<int64_t>;

// One Conv (X an input, W and optional B constants) through check_graph.
void check_conv(DType t, Ints xs, Ints ws, bool bias, Attributes attrs, uint32_t seed) {
  CAPTURE(dtype_name(t));
  CAPTURE(shape_string(xs));
  CAPTURE(shape_string(ws));
  GraphBuilder b("conv");
  auto x = b.input("x", t, Shape(xs.begin(), xs.end()));
  std::vector<ValueId> in{x, b.constant(random_tensor(ws, t, seed))};
  if (bias) in.push_back(b.constant(random_tensor({ws[0]}, t, seed + 1)));
  b.output(b.op1("Conv", in, attrs), "out");
  // F16, BF16: both sum in FP32 and round once; only FP32 contraction differences remain (they
  // may move a result by one unit in the last place). Those grow with the terms per output, K.
  const double k_terms = double(ws[1] * ws[2] * (ws.size() > 3 ? ws[3] : 1));
  const double tol = (t == DType::F32 ? 1e-5 : t == DType::F16 ? 2e-3 : 8e-3) * std::max(1.0, k_terms / 64);
  check_graph(b, {random_tensor(xs, t, seed + 2)}, tol);
  if ((t == DType::F32 || t == DType::BF16) && ws[1] > 1) {  // weights packed, as the Session runs them
    INFO("weights packed");
    check_graph(b, {random_tensor(xs, t, seed + 2)}, tol, true);
  }
}

}  // namespace

// A BF16 input plane over the kernel's stack scratch (256 KiB as FP32) takes the row-by-row path.
TEST_CASE("codegen: Conv on a BF16 plane too large for the FP32 scratch") {
  check_conv(DType::BF16, {1, 2, 200, 180}, {3, 2, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 50);
}

TEST_CASE("codegen: Conv 2-D: pads, strides, dilations, groups, depthwise, auto_pad, bias or not") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    // Odd sizes, asymmetric pads, stride 2 by 1.
    check_conv(t, {2, 3, 7, 9}, {5, 3, 3, 3}, true, {{"pads", Ints{1, 0, 2, 1}}, {"strides", Ints{2, 1}}}, 20);
    // Dilation, no bias.
    check_conv(t, {1, 3, 7, 9}, {4, 3, 3, 2}, false, {{"pads", Ints{2, 1, 1, 3}}, {"dilations", Ints{2, 3}}}, 23);
    // Two groups, stride along the width.
    check_conv(t, {1, 4, 7, 9}, {6, 2, 3, 3}, true,
               {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{1, 2}}}, 26);
    // Groups of 5 output channels: a full channel block and a ragged one per group.
    check_conv(t, {2, 4, 5, 6}, {10, 2, 3, 3}, true, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}}, 47);
    // Depthwise.
    check_conv(t, {2, 6, 7, 9}, {6, 1, 3, 3}, true, {{"group", int64_t{6}}, {"pads", Ints{1, 1, 1, 1}}}, 29);
    // auto_pad both ways with an even kernel and stride 2; VALID.
    check_conv(t, {1, 3, 7, 9}, {5, 3, 4, 4}, true, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}}, 32);
    check_conv(t, {1, 3, 7, 9}, {5, 3, 4, 4}, false, {{"auto_pad", std::string("SAME_LOWER")}, {"strides", Ints{2, 2}}}, 35);
    check_conv(t, {1, 3, 7, 9}, {2, 3, 2, 5}, true, {{"auto_pad", std::string("VALID")}, {"strides", Ints{3, 2}}}, 38);
    // Stride 2 over output rows of 32 and more (read as words of twice the width, the last value
    // of each run alone): a stem-like 7x7 and a 1x1.
    check_conv(t, {1, 3, 9, 80}, {5, 3, 7, 7}, true, {{"pads", Ints{3, 3, 3, 3}}, {"strides", Ints{2, 2}}}, 48);
    check_conv(t, {1, 6, 5, 71}, {4, 6, 1, 1}, false, {{"strides", Ints{2, 2}}}, 49);
    // Kernel wider than the input: every output column reads padding on some taps.
    check_conv(t, {1, 2, 2, 3}, {3, 2, 3, 5}, true, {{"pads", Ints{1, 2, 1, 2}}}, 41);
    // 1x1.
    check_conv(t, {3, 8, 5, 1}, {7, 8, 1, 1}, false, {}, 44);
  }
}

// The implicit-GEMM conv's blocks: pixel blocks across output rows and ragged at the end, more
// output channels than one tile and than the microkernel's rows, K over several slices, the 1x1
// plain-GEMM form; the depthwise kernel with a channel multiplier, strides and wide rows.
TEST_CASE("codegen: Conv implicit GEMM and depthwise blocks: ragged tiles, deep K, 1x1, multipliers") {
  for (DType t : {DType::F32, DType::BF16}) {
    // 130 pixels (3 blocks, the last ragged) x 250 channels (two tiles, ragged rows), K = 3*3*17 = 153.
    check_conv(t, {1, 17, 10, 13}, {250, 17, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 300);
    // Stride 2 with K = 8*5*5 = 200 over two slices, pads only on one side.
    check_conv(t, {2, 8, 15, 11}, {13, 8, 5, 5}, false, {{"pads", Ints{2, 0, 0, 2}}, {"strides", Ints{2, 2}}}, 303);
    // 1x1 as plain GEMM: 7x9 = 63 pixels, 140 input channels (two slices); and 1x1 with stride 2 (not plain).
    check_conv(t, {2, 140, 7, 9}, {20, 140, 1, 1}, true, {}, 306);
    // 100 output channels: a full block of 64 and one of 36 (three of its four column vectors).
    check_conv(t, {1, 24, 9, 11}, {100, 24, 1, 1}, true, {}, 330);
    check_conv(t, {1, 12, 7, 9}, {8, 12, 1, 1}, true, {{"strides", Ints{2, 2}}}, 309);
    // Grouped, groups of 3 channels in and 7 out.
    check_conv(t, {1, 9, 8, 8}, {21, 3, 3, 3}, true, {{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}}, 312);
    // Output rows of 32 and more are packed in runs of a row (shorter ones through an offset
    // table, as all the cases above): 45 wide, and 34 wide with a stride and a dilation.
    check_conv(t, {1, 5, 6, 45}, {7, 5, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 321);
    check_conv(t, {1, 4, 5, 70}, {6, 4, 3, 3}, false,
               {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{1, 2}}, {"dilations", Ints{1, 2}}}, 324);
    // Depthwise with multiplier 2, stride 2, a 37-wide row (two column blocks), dilation.
    check_conv(t, {2, 4, 9, 37}, {8, 1, 3, 3}, true,
               {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 315);
    // Stride 2 over rows of 13, 6 and 4 whole column pairs (blocks of 8 and 4, overlapping) and of 3.
    for (int64_t w : {28, 14, 9, 7})
      check_conv(t, {1, 3, 6, w}, {3, 1, 3, 3}, true,
                 {{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 340 + static_cast<uint32_t>(w));
    check_conv(t, {1, 3, 9, 40}, {3, 1, 5, 3}, false,
               {{"group", int64_t{3}}, {"pads", Ints{2, 3, 2, 1}}, {"dilations", Ints{1, 2}}}, 318);
    // Column strides read the row split into phases: stride 3 with dilation 2 and a 4-wide kernel
    // (taps at offsets 0, 2, 4, 6: phases 0, 2, 1, 0), asymmetric pads.
    check_conv(t, {1, 3, 8, 41}, {3, 1, 3, 4}, true,
               {{"group", int64_t{3}}, {"pads", Ints{1, 2, 1, 3}}, {"strides", Ints{1, 3}}, {"dilations", Ints{1, 2}}}, 319);
    // A plane tall enough for several blocks of output rows per channel (each block copies the
    // input rows its taps read once), stride 2 down the rows.
    check_conv(t, {1, 2, 150, 45}, {2, 1, 3, 3}, true,
               {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}, 320);
  }
}

// The BF16 pair microkernel (vdpbf16ps), forced on where the host has AVX512-BF16: odd K (a
// zero half pair), ragged rows, 1x1, grouped, stride 2.
TEST_CASE("codegen: Conv BF16 through the vdpbf16ps microkernel") {
  if (!__builtin_cpu_supports("avx512bf16")) {
    MESSAGE("skipped: the host has no AVX512-BF16");
    return;
  }
  plugin().source_prefix = "#define HPF_PREFER_BF16_DOT 1\n";
  check_conv(DType::BF16, {1, 17, 10, 13}, {250, 17, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 500);
  check_conv(DType::BF16, {2, 8, 15, 11}, {13, 8, 5, 5}, false, {{"pads", Ints{2, 0, 0, 2}}, {"strides", Ints{2, 2}}}, 503);
  check_conv(DType::BF16, {2, 140, 7, 9}, {20, 140, 1, 1}, true, {}, 506);
  check_conv(DType::BF16, {1, 9, 8, 8}, {21, 3, 3, 3}, true, {{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}}, 509);
  check_conv(DType::BF16, {1, 3, 7, 9}, {5, 3, 4, 4}, true, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}}, 512);
  plugin().source_prefix.clear();
}

// BF16 weights in the "amx" layout where the target has no AMX (forced here by hiding the
// feature from the kernel source): the plain-C sums of the packed operands. Odd channel counts
// (a zero channel in each pair), taps past a 32-step, ragged rows and pixels, several slices.
// Every tile configuration autotuning may pick (jit::c_tile_variants): FP32 with rows-packed
// weights (rows per work item 240 down to 48), and BF16 on the AMX layout (on AMX where the host
// has it: pixel blocks of 32 to 128, slices of 256 and 512), over ragged pixels, rows and k.
TEST_CASE("codegen: Conv with packed weights, every tile configuration") {
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder probe("probe");
    auto x = probe.input("x", t, {1, 12, 10, 13});
    probe.output(probe.op1("Conv", {x, probe.constant(random_tensor({250, 12, 3, 3}, t, 1))}),
                 "y");  // 12 input channels: FP32 takes the rows layout (the direct kernel wants 16)
    auto g = probe.build();
    REQUIRE(g.ok());
    auto steps = jit::lower(*g, {});
    REQUIRE(steps.ok());
    const std::vector<std::string> tiles =
        jit::c_tile_variants(jit::conv_spec_with_packed_weights((*steps)[0].spec));
    REQUIRE(tiles.size() >= 2);
    for (const std::string& tile : tiles) {
      CAPTURE(tile);
      conv_tile = tile;
      check_conv(t, {1, 12, 10, 13}, {250, 12, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}, 530);
      check_conv(t, {2, 40, 7, 9}, {20, 40, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 533);
      check_conv(t, {1, 3, 20, 22}, {16, 3, 7, 7}, false, {{"pads", Ints{3, 3, 3, 3}}, {"strides", Ints{2, 2}}}, 536);
    }
    conv_tile.clear();
  }
}

TEST_CASE("codegen: Conv BF16 with AMX-packed weights on a target without AMX") {
  plugin().source_prefix = "#undef __AMX_TILE__\n";
  check_conv(DType::BF16, {1, 17, 10, 13}, {250, 17, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 520);
  check_conv(DType::BF16, {2, 3, 15, 11}, {13, 3, 5, 5}, false, {{"pads", Ints{2, 0, 0, 2}}, {"strides", Ints{2, 2}}}, 523);
  check_conv(DType::BF16, {2, 140, 7, 9}, {20, 140, 1, 1}, true, {}, 526);
  check_conv(DType::BF16, {1, 9, 8, 8}, {21, 3, 3, 3}, true, {{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}}, 529);
  plugin().source_prefix.clear();
}

// The INT8 dot product of both INT8 kernels (jit::int8_dot_source) on every path the host can
// run, forced by switching its features off in the preprocessor: lane j of the result adds the
// 4 bytes of lane j of a times those of lane j of b, whatever the other lanes hold (matmul_i8
// broadcasts a, conv_i8 broadcasts b; the 256-bit paths once reused a's low half for both).
TEST_CASE("codegen: the INT8 dot product, every instruction path, lane by lane") {
  const std::string kernel = std::string(jit::c_prelude()) + "#ifndef I8_W_HAS_M128\n#define I8_W_HAS_M128 1\n#endif\n" +
                             "#ifndef I8_W_LE64\n#define I8_W_LE64 0\n#endif\n" +
                             jit::int8_dot_source() + R"(
void hpf_test_i8_dp(void* const* args, i64 begin, i64 end) {
  const i32* restrict A = (const i32*)args[0];
  const i32* restrict B = (const i32*)args[1];
  i32* restrict Y = (i32*)args[2];
  for (i64 w = begin; w < end; ++w) {
    i8_v16 a, b, acc;
    __builtin_memcpy(&a, A + w * 16, 64);
    __builtin_memcpy(&b, B + w * 16, 64);
    __builtin_memcpy(&acc, Y + w * 16, 64);
    acc = i8_dp(acc, a, b);
    __builtin_memcpy(Y + w * 16, &acc, 64);
#if I8_HALF  /* lanes 0-7 in one 256-bit vector */
    i8_v8 a8, b8, acc8;
    __builtin_memcpy(&a8, A + w * 16, 32);
    __builtin_memcpy(&b8, B + w * 16, 32);
    __builtin_memcpy(&acc8, (i32*)args[4] + w * 8, 32);
    acc8 = i8_dp8(acc8, a8, b8);
    __builtin_memcpy((i32*)args[4] + w * 8, &acc8, 32);
#endif
#if I8_PAIR  /* vector w and its neighbour w ^ 1 in one step */
    i8_v16 a2, b2, acc2;
    __builtin_memcpy(&a2, A + (w ^ 1) * 16, 64);
    __builtin_memcpy(&b2, B + (w ^ 1) * 16, 64);
    __builtin_memcpy(&acc2, (i32*)args[6] + w * 16, 64);
    acc2 = i8_dp2(acc2, a, b, a2, b2);
    __builtin_memcpy((i32*)args[6] + w * 16, &acc2, 64);
#endif
  }
  *(i32*)args[3] = I8_ZP;  /* how a's bytes are read: u8 (128) or s8 (0) */
  *(i32*)args[5] = I8_HALF;
  *(i32*)args[7] = I8_PAIR;
}
)";
  const int64_t n = 64;  // vectors
  std::mt19937 rng(77);
  std::vector<int8_t> a_any(n * 64), b_full(n * 64);
  for (auto& v : a_any) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  for (auto& v : b_full) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);  // never -128
  // 7-bit weights (|q| <= 64), the first 16 vectors at the 16-bit pair sums' edge: a's bytes all
  // 0xff (255 read unsigned), b's pairs both +64 or both -64 (+-32640; 32767 is the limit).
  std::vector<int8_t> b7(n * 64);
  for (auto& v : b7) v = static_cast<int8_t>(static_cast<int>(rng() % 129) - 64);
  for (int64_t i = 0; i < 16 * 64; ++i) {
    a_any[i] = -1;
    b7[i] = (i % 64 / 2) % 3 == 0 ? -64 : 64;  // the same in every vector: i8_dp2's sums of 4 at +-32512 too
  }
  // u7 activations (0..127: matmul_i8's u7 rows, conv_i8's never negative input) with any 8-bit
  // weights, -128 included, the first 16 vectors at the edge: 127 x pairs of -128 (-32512).
  std::vector<int8_t> a7(n * 64), b8(n * 64);
  for (auto& v : a7) v = static_cast<int8_t>(rng() % 128);
  for (auto& v : b8) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  for (int64_t i = 0; i < 16 * 64; ++i) {
    a7[i] = 127;
    b8[i] = (i / 2) % 3 == 0 ? 127 : -128;
  }
  struct Path { const char* name; const char* prefix; bool w7; bool u7 = false; };
  const Path paths[] = {
      {"host", "", false},
      {"no AVX512-VNNI", "#undef __AVX512VNNI__\n", false},
      {"AVX2 vpmaddubsw, 7-bit weights", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_W_LE64 1\n", true},
      {"host, 7-bit weights", "#define I8_W_LE64 1\n", true},
      {"AVX2 vpmaddubsw, u7 rows", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_U7 1\n", false, true},
      {"AVX2 vpmaddubsw, never negative input", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_A_NONNEG 1\n", false, true},
      {"host, never negative input", "#define I8_A_NONNEG 1\n", false, true},
      {"AVX2 vpmaddubsw, never negative input, 7-bit weights", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_A_NONNEG 1\n#define I8_W_LE64 1\n", true, true},
      {"AVX2 vpmaddubsw, u7 rows, 7-bit weights", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_U7 1\n#define I8_W_LE64 1\n", true, true},
      {"AVX2 vpmaddubsw", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#define I8_W_HAS_M128 0\n", false},
      {"AVX2 widening", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n", false},
      {"plain C", "#undef __AVX512VNNI__\n#undef __AVXVNNI__\n#undef __AVX2__\n", false},
  };
  for (const auto& [name, prefix, w7, u7] : paths) {
    std::vector<int8_t>& b = w7 ? b7 : u7 ? b8 : b_full;  // u7 and w7: i8_dp2's operands
    std::vector<int8_t>& a = u7 ? a7 : a_any;
    const std::string what = name;
    CAPTURE(what);
    if (!plugin().skip.empty()) {
      MESSAGE("skipped: " << plugin().skip);
      return;
    }
    std::vector<int32_t> y(n * 16), y8(n * 8);
    for (int64_t i = 0; i < n * 16; ++i) y[i] = static_cast<int32_t>(i) - 500;
    for (int64_t i = 0; i < n * 8; ++i) y8[i] = y[i / 8 * 16 + i % 8];
    std::vector<int32_t> y2 = y;
    int32_t zero_point = -1, half = -1, pair = -1;
    plugin().source_prefix = prefix;
    plugin().run(jit::GeneratedKernel{"hpf_test_i8_dp", kernel, n, 4},
                 {a.data(), b.data(), y.data(), &zero_point, y8.data(), &half, y2.data(), &pair});
    plugin().source_prefix.clear();
    REQUIRE((zero_point == 0 || zero_point == 128));
    const bool a_unsigned = zero_point == 128;
    int64_t wrong = 0;
    for (int64_t i = 0; i < n * 16; ++i) {
      int64_t want = i - 500;
      for (int k = 0; k < 4; ++k) {
        const int8_t av = a[i * 4 + k];
        want += (a_unsigned ? static_cast<int64_t>(static_cast<uint8_t>(av)) : av) * b[i * 4 + k];
      }
      wrong += y[i] != want;
      if (half == 1 && i % 16 < 8) wrong += y8[i / 16 * 8 + i % 16] != want;  // i8_dp8: the same lanes
      if (pair == 1) {  // i8_dp2: lane i of vector w and of vector w ^ 1
        const int64_t j = (i / 16 ^ 1) * 16 + i % 16;
        for (int k = 0; k < 4; ++k) {
          const int8_t av = a[j * 4 + k];
          want += (a_unsigned ? static_cast<int64_t>(static_cast<uint8_t>(av)) : av) * b[j * 4 + k];
        }
        wrong += y2[i] != want;
      }
    }
    CHECK(wrong == 0);
    // 256-bit vectors' paths have i8_dp8 (I8_HALF); AVX-512 and plain C do not.
    CHECK((half == 0 || half == 1));
    if (std::string(name).starts_with("AVX2 vpmaddubsw") && __builtin_cpu_supports("avx2")) {
      CHECK(half == 1);
      CHECK(pair == (u7 && w7 ? 1 : 0));  // i8_dp2 exactly where u7 meets 7-bit weights
    }
  }
}

TEST_CASE("codegen: MaxPool, AveragePool (pads, ceil_mode, count_include_pad), GlobalAveragePool") {
  for (DType t : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(t));
    const Ints xs{2, 3, 7, 9};
    const std::vector<Attributes> windows = {
        {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
        {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 2}}, {"ceil_mode", int64_t{1}}},
        {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{2, 3}}, {"ceil_mode", int64_t{1}}},
        {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 3}}, {"pads", Ints{1, 2, 0, 1}}},
        {{"kernel_shape", Ints{3, 2}}, {"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}},
        {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}},
    };
    for (size_t k = 0; k < windows.size(); ++k) {
      CAPTURE(k);
      {
        GraphBuilder b("maxpool");
        auto x = b.input("x", t, Shape(xs.begin(), xs.end()));
        b.output(b.op1("MaxPool", {x}, windows[k]), "out");
        check_graph(b, {random_tensor(xs, t, 50 + k)}, 0);  // a max moves values exactly
      }
      for (int64_t include : {0, 1}) {
        CAPTURE(include);
        if (windows[k].count("dilations")) continue;  // AveragePool dilations: opset 19
        Attributes a = windows[k];
        a["count_include_pad"] = include;
        GraphBuilder b("avgpool");
        auto x = b.input("x", t, Shape(xs.begin(), xs.end()));
        b.output(b.op1("AveragePool", {x}, a), "out");
        check_graph(b, {random_tensor(xs, t, 60 + k)}, t == DType::F32 ? 1e-6 : 1e-3);
      }
    }
    for (Ints gs : {Ints{2, 5, 7, 9}, Ints{2, 3, 11}}) {
      GraphBuilder b("gap");
      auto x = b.input("x", t, Shape(gs.begin(), gs.end()));
      b.output(b.op1("GlobalAveragePool", {x}), "out");
      check_graph(b, {random_tensor(gs, t, 70)}, t == DType::F32 ? 1e-6 : 1e-3);
    }
  }
}

TEST_CASE("codegen: MaxPool NaN: kept when a window's first real cell is NaN, otherwise ignored") {
  std::vector<float> v(2 * 5 * 6);
  for (size_t k = 0; k < v.size(); ++k) v[k] = float((k * 7) % 11) - 5.0f;
  for (size_t k : {0u, 3u, 8u, 14u, 29u, 31u, 47u}) v[k] = NAN;
  const Tensor x0 = *Tensor::from_f32({1, 2, 5, 6}, v);
  GraphBuilder b("maxpool_nan");
  auto x = b.input("x", DType::F32, {1, 2, 5, 6});
  b.output(b.op1("MaxPool", {x}, {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{1, 2}}, {"pads", Ints{1, 1, 0, 1}}}), "out");
  check_graph(b, {x0}, 0);
}

TEST_CASE("codegen: Conv + BatchNormalization + Relu (a cnn-small block) has no fallback") {
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("block");
    auto x = b.input("x", t, {2, 3, 9, 7});
    auto y = b.op1("Conv", {x, b.constant(random_tensor({4, 3, 3, 3}, t, 80)), b.constant(random_tensor({4}, t, 81))},
                   {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
    y = b.op1("BatchNormalization", {y, b.constant(random_tensor({4}, t, 82)), b.constant(random_tensor({4}, t, 83)),
                                     b.constant(random_tensor({4}, t, 84)), b.constant(random_tensor({4}, t, 85, 0.5f, 2))},
              {{"epsilon", 1e-3f}});
    y = b.op1("MaxPool", {b.op1("Relu", {y})}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    b.output(b.op1("GlobalAveragePool", {y}), "out");
    check_graph(b, {random_tensor({2, 3, 9, 7}, t, 86)}, t == DType::F32 ? 1e-5 : 2e-2);
  }
}

// Packed, register-blocked MatMul: sizes that are not multiples of the row block, the
// microkernel tile or the K/N cache blocks, size 1, 1-D operands, ranges that span batch
// matrices, and BF16 weights under FP32 activations.
TEST_CASE("codegen: MatMul tiles with ragged edges, 1-D operands and BF16 weights") {
  struct Case {
    std::vector<int64_t> a, b;
  };
  for (const Case& c : std::vector<Case>{{{67, 129}, {129, 35}},
                                         {{1, 1}, {1, 1}},
                                         {{1, 768}, {768, 768}},
                                         {{131, 260}, {260, 200}},
                                         {{5, 3, 7, 20}, {3, 20, 9}},
                                         {{129}, {129, 70}},
                                         {{70, 129}, {129}},
                                         {{129}, {129}}}) {
    for (DType t : {DType::F32, DType::BF16}) {  // BF16: the BF16 dot-product path where the host has it
      CAPTURE(c.a.size());
      CAPTURE(c.b.back());
      CAPTURE(dtype_name(t));
      GraphBuilder b("mm");
      auto x = b.input("x", t, Shape(c.a.begin(), c.a.end()));
      auto w = b.constant(random_tensor(c.b, t, 21));
      b.output(b.matmul(x, w), "out");
      // FP32 sums of up to 768 terms; BF16 output: the last place may differ.
      check_graph(b, {random_tensor(c.a, t, 22)}, t == DType::F32 ? 1e-4 : 1e-2);
    }
  }
  for (DType wt : {DType::BF16, DType::F16}) {
    GraphBuilder b("mm_lowp_weights");
    auto x = b.input("x", DType::F32, {67, 129});
    auto w = b.constant(random_tensor({129, 35}, wt, 23));
    b.output(b.matmul(x, b.op1("Cast", {w}, {{"to", int64_t{1}}})), "out");
    check_graph(b, {random_tensor({67, 129}, DType::F32, 24)}, 1e-5);
  }
  {
    GraphBuilder b("mm_bf16");
    auto x = b.input("x", DType::BF16, {1, 768});
    auto w = b.constant(random_tensor({768, 768}, DType::BF16, 25));
    b.output(b.matmul(x, w), "out");
    check_graph(b, {random_tensor({1, 768}, DType::BF16, 26)}, 1e-2);
  }
}

TEST_CASE("codegen: Gemm transposes and C broadcasts across the K and N blocks") {
  struct Case {
    int64_t ta, tb;
    std::vector<int64_t> c;
  };
  const int64_t M = 67, N = 129;
  for (DType t : {DType::F32, DType::BF16})
    for (const int64_t K : {260, 131})  // 131: an odd last K block (a half-empty BF16 pair)
      for (const Case& c : std::vector<Case>{{0, 0, {N}}, {1, 0, {M, 1}}, {0, 1, {M, N}}, {1, 1, {1, N}}, {1, 1, {1}}}) {
        CAPTURE(c.ta);
        CAPTURE(c.tb);
        CAPTURE(K);
        CAPTURE(dtype_name(t));
        GraphBuilder g("gemm");
        const Shape ashape = c.ta ? Shape{K, M} : Shape{M, K};
        auto a = g.input("a", t, ashape);
        auto w = g.constant(random_tensor(c.tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, t, 27));
        auto bias = g.constant(random_tensor(c.c, t, 28));
        g.output(g.op1("Gemm", {a, w, bias},
                       {{"transA", c.ta}, {"transB", c.tb}, {"alpha", 0.75f}, {"beta", -1.5f}}),
                 "out");
        check_graph(g, {random_tensor(c.ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, t, 29)},
                    t == DType::F32 ? 1e-4 : 1e-2);
      }
}

// The FP32 MatMul/Gemm with B an input (column blocks, c_matmul.cpp): K in one slice on the stack
// (<= 512), in the thread's scratch buffer, and in two slices (> 2048, the second adding to Y);
// B packed apart and while the first row tile reads it; several row parts of a block; ragged
// column blocks and row tiles; batches, broadcast or not; transB, alpha, beta and C; a fused
// epilogue; few rows in slices of 512 at most, each slice over all the blocks of a range (13 x
// 1100 x 200: three slices, a ragged block; 4 x 13 x 1100 x 1040 with a fused epilogue: 68 items,
// with two threads (ctest runs this case so too) ranges of several blocks that end inside a
// matrix and cross into the next, each block prefetching the next one's B, the epilogue once per
// item after its last slice). Each with every operand 64-byte aligned (where N % 16 == 0, Y's rows
// hold the sums) and 4 bytes off (through a tile on the stack).
TEST_CASE("codegen: MatMul and Gemm with B an input: K slices, row parts, ragged blocks, Y aligned or not") {
  struct Case {
    std::vector<int64_t> a, b;
    bool gemm = false, epilogue = false;
  };
  struct Offset {  // operand_offset for one check, -1 again however it ends
    explicit Offset(int64_t o) { operand_offset = o; }
    ~Offset() { operand_offset = -1; }
  };
  for (const Case& c : std::vector<Case>{{{13, 600}, {600, 128}},
                                         {{13, 2100}, {2100, 64}},
                                         {{520, 600}, {600, 80}},
                                         {{12, 300}, {300, 192}},
                                         {{2, 3, 9, 700}, {3, 700, 70}},
                                         {{2, 7, 600}, {2, 600, 64}},
                                         {{30, 530}, {96, 530}, true},
                                         {{25, 96}, {96, 144}, false, true},
                                         {{13, 1100}, {1100, 200}},
                                         {{4, 13, 1100}, {4, 1100, 1040}, false, true}})
    for (const int64_t offset : {0, 4}) {
      CAPTURE(c.a.front());
      CAPTURE(c.b.back());
      CAPTURE(offset);
      GraphBuilder g("mm_b_input");
      auto a = g.input("a", DType::F32, Shape(c.a.begin(), c.a.end()));
      auto w = g.input("b", DType::F32, Shape(c.b.begin(), c.b.end()));
      ValueId y;
      if (c.gemm) {  // B [N, K], transposed
        auto bias = g.constant(random_tensor({c.b.front()}, DType::F32, 31));
        y = g.op1("Gemm", {a, w, bias}, {{"transB", int64_t{1}}, {"alpha", 0.75f}, {"beta", -1.5f}});
      } else {
        y = g.matmul(a, w);
      }
      if (c.epilogue)
        y = g.op1("Relu", {g.add(y, g.constant(random_tensor({c.b.back()}, DType::F32, 32)))});
      g.output(y, "out");
      {  // one kernel: the epilogue fused into the MatMul
        auto built = g.build();
        REQUIRE_MESSAGE(built.ok(), built.status().to_string());
        auto steps = jit::lower(*built, {});
        REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
        CHECK(steps->size() == 1);
      }
      Offset at(offset);
      check_graph(g, {random_tensor(c.a, DType::F32, 33), random_tensor(c.b, DType::F32, 34)}, 1e-4);
    }
}

// ---- reductions and data movement (reduce, concat, slice, pad, expand, resize families) ----

namespace {

Tensor f32_tensor(std::vector<int64_t> shape, std::vector<float> v) { return *Tensor::from_f32(shape, v); }

}  // namespace

TEST_CASE("codegen: ReduceMean/Sum/Max over axis sets, keepdims both ways, axes as attribute or input") {
  struct Case {
    std::vector<int64_t> axes;
    int64_t keepdims;
    bool as_input;
  };
  const Case cases[] = {{{1, -1}, 0, false}, {{0, 2}, 1, true}, {{-2}, 1, true}, {{-2}, 0, false},
                        {{}, 0, false},      {{0, 1, 2, 3}, 1, true}, {{3}, 1, false}};
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax"})
    for (const Case& c : cases) {
      CAPTURE(op);
      CAPTURE(c.keepdims);
      CAPTURE(shape_string(c.axes));
      GraphBuilder b("reduce");
      auto x = b.input("x", DType::F32, {3, 1, 5, 7});
      Attributes a{{"keepdims", c.keepdims}};
      ValueId y;
      if (c.as_input) {
        y = b.op1(op, {x, b.constant_i64(c.axes)}, a);
      } else {
        if (!c.axes.empty()) a["axes"] = c.axes;
        y = b.op1(op, {x}, a);
      }
      b.output(y, "out");
      check_graph(b, {random_tensor({3, 1, 5, 7}, DType::F32, 20)}, 1e-5);
    }
}

TEST_CASE("codegen: ReduceMean in F16 storage, ReduceMax NaN, empty axes as a no-op") {
  for (int64_t keep : {0, 1}) {
    GraphBuilder b("mean16");
    auto x = b.input("x", DType::F16, {2, 9, 1, 33});
    b.output(b.op1("ReduceMean", {x, b.constant_i64({-1, 1})}, {{"keepdims", keep}}), "out");
    check_graph(b, {random_tensor({2, 9, 1, 33}, DType::F16, 21)}, 2e-3);
  }
  {
    std::vector<float> v(2 * 3 * 4);
    for (size_t k = 0; k < v.size(); ++k) v[k] = float(k % 7) - 3;
    v[5] = NAN;   // row (0, 1): NaN in the middle
    v[12] = NAN;  // row (1, 0): NaN first
    GraphBuilder b("maxnan");
    auto x = b.input("x", DType::F32, {2, 3, 4});
    b.output(b.op1("ReduceMax", {x}, {{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{0}}}), "out");
    check_graph(b, {f32_tensor({2, 3, 4}, v)}, 0);
  }
  {
    GraphBuilder b("noop");
    auto x = b.input("x", DType::BF16, {4, 3});
    b.output(b.op1("ReduceSum", {x, b.constant_i64({})}, {{"noop_with_empty_axes", int64_t{1}}}), "out");
    check_graph(b, {random_tensor({4, 3}, DType::BF16, 22)}, 0);
  }
}

TEST_CASE("codegen: Concat of three inputs on a middle axis and on the last axis, F32 and F16") {
  for (DType t : {DType::F32, DType::F16})
    for (int64_t axis : {1, -2}) {
      CAPTURE(dtype_name(t));
      GraphBuilder b("concat");
      auto x0 = b.input("x0", t, {2, 3, 5});
      auto x1 = b.input("x1", t, {2, 1, 5});
      auto x2 = b.input("x2", t, {2, 4, 5});
      b.output(b.op1("Concat", {x0, x1, x2}, {{"axis", axis}}), "out");
      check_graph(b, {random_tensor({2, 3, 5}, t, 23), random_tensor({2, 1, 5}, t, 24), random_tensor({2, 4, 5}, t, 25)},
                  0);
    }
  GraphBuilder b("concat_last");
  auto x0 = b.input("x0", DType::F16, {3, 2});
  auto x1 = b.input("x1", DType::F16, {3, 1});
  b.output(b.op1("Concat", {x0, b.constant(random_tensor({3, 4}, DType::F16, 26)), x1}, {{"axis", int64_t{-1}}}), "out");
  check_graph(b, {random_tensor({3, 2}, DType::F16, 27), random_tensor({3, 1}, DType::F16, 28)}, 0);
}

TEST_CASE("codegen: Slice with constant starts/ends/axes/steps, negative steps and axes, attribute form") {
  {
    GraphBuilder b("slice");
    auto x = b.input("x", DType::F32, {5, 1, 9, 4});
    auto y = b.op1("Slice", {x, b.constant_i64({-1, 1, 3}), b.constant_i64({-100, 8, 0}), b.constant_i64({0, 2, -1}),
                             b.constant_i64({-2, 3, -1})});
    b.output(y, "out");
    check_graph(b, {random_tensor({5, 1, 9, 4}, DType::F32, 30)}, 0);
  }
  {
    GraphBuilder b("slice_noaxes");  // axes and steps absent: the first axes, step 1
    auto x = b.input("x", DType::F16, {7, 3});
    b.output(b.op1("Slice", {x, b.constant_i64({2, -2}), b.constant_i64({INT64_MAX, 3})}), "out");
    check_graph(b, {random_tensor({7, 3}, DType::F16, 31)}, 0);
  }
  {
    GraphBuilder b("slice_attr");
    auto x = b.input("x", DType::F32, {6, 5});
    b.output(b.op1("Slice", {x}, {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{-1}},
                                  {"axes", std::vector<int64_t>{-1}}}),
             "out");
    check_graph(b, {random_tensor({6, 5}, DType::F32, 32)}, 0);
  }
}

TEST_CASE("codegen: Pad constant/reflect/edge/wrap with constant pads, axes and crops") {
  struct Case {
    const char* mode;
    std::vector<int64_t> pads;
    std::vector<int64_t> axes;  // empty: every axis
    float value;
  };
  const Case cases[] = {{"reflect", {0, 2, 1, 1, 3, 2}, {}, 0},
                        {"edge", {1, 4, 0, 2}, {-1, 0}, 0},
                        {"constant", {1, -1, 0, 0, 2, -2}, {}, 1.5f},
                        {"wrap", {0, 1, 3, 0, 0, 1}, {}, 0},
                        {"reflect", {0, 0, 7, 0, 0, 0}, {}, 0}};  // longer than the axis
  for (DType t : {DType::F32, DType::F16})
    for (const Case& c : cases) {
      CAPTURE(c.mode);
      CAPTURE(dtype_name(t));
      GraphBuilder b("pad");
      auto x = b.input("x", t, {3, 4, 5});
      std::vector<ValueId> in{x, b.constant_i64(c.pads)};
      in.push_back(c.value != 0 ? b.constant(*Tensor::from_f32({}, std::vector<float>{c.value}, t)) : kNoValue);
      if (!c.axes.empty()) in.push_back(b.constant_i64(c.axes));
      while (in.back() == kNoValue) in.pop_back();
      b.output(b.op1("Pad", in, {{"mode", std::string(c.mode)}}), "out");
      check_graph(b, {random_tensor({3, 4, 5}, t, 33)}, 0);
    }
}

TEST_CASE("codegen: Expand broadcasts size-1 axes and adds leading ones") {
  for (DType t : {DType::F32, DType::F16}) {
    GraphBuilder b("expand");
    auto x = b.input("x", t, {3, 1, 5});
    b.output(b.op1("Expand", {x, b.constant_i64({2, 3, 4, 1})}), "out");
    check_graph(b, {random_tensor({3, 1, 5}, t, 34)}, 0);
  }
  GraphBuilder b("expand_col");
  auto x = b.input("x", DType::F32, {4, 1});
  b.output(b.op1("Expand", {x, b.constant_i64({1, 7})}), "out");
  check_graph(b, {random_tensor({4, 1}, DType::F32, 35)}, 0);
}

TEST_CASE("codegen: Resize nearest (every nearest_mode, several coordinate modes) and linear up/down") {
  auto scales = [](std::vector<float> s) { return *Tensor::from_f32({static_cast<int64_t>(s.size())}, s); };
  const std::pair<const char*, const char*> nearest[] = {{"asymmetric", "floor"},
                                                         {"half_pixel", "round_prefer_floor"},
                                                         {"align_corners", "round_prefer_ceil"},
                                                         {"tf_half_pixel_for_nearest", "ceil"},
                                                         {"pytorch_half_pixel", "round_prefer_floor"},
                                                         {"half_pixel_symmetric", "round_prefer_ceil"}};
  for (const auto& [coord, nm] : nearest) {
    CAPTURE(coord);
    GraphBuilder b("nearest2x");
    auto x = b.input("x", DType::F16, {1, 2, 3, 5});
    b.output(b.op1("Resize", {x, kNoValue, b.constant(scales({1, 1, 2, 2}))},
                   {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string(coord)},
                    {"nearest_mode", std::string(nm)}}),
             "out");
    check_graph(b, {random_tensor({1, 2, 3, 5}, DType::F16, 36)}, 0);
    GraphBuilder d("nearest_down");  // sizes, a non-integer ratio
    auto y = d.input("y", DType::F32, {2, 1, 7, 9});
    d.output(d.op1("Resize", {y, kNoValue, kNoValue, d.constant_i64({2, 1, 4, 5})},
                   {{"coordinate_transformation_mode", std::string(coord)}, {"nearest_mode", std::string(nm)}}),
             "out");
    check_graph(d, {random_tensor({2, 1, 7, 9}, DType::F32, 37)}, 0);
  }
  for (const char* coord : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"}) {
    CAPTURE(coord);
    const Attributes a{{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string(coord)}};
    GraphBuilder up("linear_up");
    auto x = up.input("x", DType::F32, {1, 3, 4, 5});
    up.output(up.op1("Resize", {x, kNoValue, up.constant(scales({1, 1, 2.5f, 1.5f}))}, a), "out");
    check_graph(up, {random_tensor({1, 3, 4, 5}, DType::F32, 38)}, 1e-5);
    GraphBuilder down("linear_down");
    auto y = down.input("y", DType::F32, {2, 1, 9, 7});
    down.output(down.op1("Resize", {y, down.constant(Tensor(DType::F32, {0})), down.constant(Tensor(DType::F32, {0})),
                                    down.constant_i64({2, 1, 4, 3})},
                         a),
                "out");
    check_graph(down, {random_tensor({2, 1, 9, 7}, DType::F32, 39)}, 1e-5);
    GraphBuilder w("linear_w");  // only W resized; BF16 storage
    auto z = w.input("z", DType::BF16, {1, 2, 3, 6});
    w.output(w.op1("Resize", {z, kNoValue, w.constant(scales({1, 1, 1, 0.5f}))}, a), "out");
    check_graph(w, {random_tensor({1, 2, 3, 6}, DType::BF16, 40)}, 1e-2);
  }
}

TEST_CASE("codegen: reduce/movement cases without a generator stay reference fallbacks") {
  auto kinds = [](GraphBuilder& b) {
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    auto steps = jit::lower(*g, {});
    REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
    std::vector<jit::LoweredStep::Kind> k;
    for (const auto& st : *steps) k.push_back(st.kind);
    return k;
  };
  using K = jit::LoweredStep::Kind;
  {
    GraphBuilder b("slice_dyn");  // starts known only at run time
    auto x = b.input("x", DType::F32, {4, 6});
    auto starts = b.input("starts", DType::I64, {1});
    b.output(b.op1("Slice", {x, starts, b.constant_i64({3})}), "s");
    if (auto g = b.build(); g.ok()) {
      auto steps = jit::lower(*g, {});
      if (steps.ok())
        for (const auto& st : *steps) CHECK(st.kind == K::fallback);
    }
  }
  {
    GraphBuilder b("linear_c");  // linear over the channel axis
    auto x = b.input("x", DType::F32, {1, 2, 4, 4});
    b.output(b.op1("Resize", {x, kNoValue, b.constant(*Tensor::from_f32({4}, std::vector<float>{1, 2, 1, 1}))},
                   {{"mode", std::string("linear")}}),
             "y");
    CHECK(kinds(b) == std::vector<K>{K::fallback});
  }
  {
    GraphBuilder b("sum_i64");  // integer reductions are exact in int64 on the reference
    auto x = b.input("x", DType::I64, {3, 4});
    b.output(b.op1("ReduceSum", {x, b.constant_i64({1})}), "y");
    CHECK(kinds(b) == std::vector<K>{K::fallback});
  }
}

TEST_CASE("codegen: control flow (a node with a subgraph) is a reference fallback") {
  GraphBuilder tb("then");
  tb.output(tb.op1("Identity", {tb.input("x", DType::F32, {4})}));
  auto then_g = tb.build();
  REQUIRE_MESSAGE(then_g.ok(), then_g.status().to_string());
  auto branch = GraphAttr(std::make_shared<const Graph>(std::move(then_g).value()));
  GraphBuilder b("if");
  auto c = b.input("c", DType::BOOL, {});
  auto x = b.input("x", DType::F32, {4});
  auto y = b.op1("If", {c, x}, {{"then_branch", branch}, {"else_branch", branch}, {"num_captures", int64_t{1}}});
  b.output(b.relu(y), "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto steps = jit::lower(*g, {});
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  REQUIRE(steps->size() == 2);
  CHECK((*steps)[0].kind == jit::LoweredStep::Kind::fallback);
  CHECK((*steps)[0].inputs == std::vector<ValueId>{c, x});
  CHECK((*steps)[1].kind == jit::LoweredStep::Kind::kernel);
}

// ---- elementwise ops beyond the basic set: float maths, activations, integer and bool ops ----

namespace {

// Random values in [lo, hi) with NaN, infinities, signed zeros and halves (Round's ties) first.
Tensor special_tensor(std::vector<int64_t> shape, DType t, uint32_t seed, float lo = -2, float hi = 2) {
  std::vector<float> v = random_tensor(shape, DType::F32, seed, lo, hi).to_f32();
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 1.0f, -1.0f};
  for (size_t k = 0; k < v.size() && k < std::size(specials); ++k) v[k] = specials[k];
  return *Tensor::from_f32(shape, v, t);
}

Tensor ints(std::vector<int64_t> shape, std::vector<int64_t> v, DType t = DType::I64) {
  return *Tensor::from_i64(shape, v, t);
}

// Integers in [lo, hi] (zero replaced by `nonzero` when given), deterministic.
Tensor int_tensor(std::vector<int64_t> shape, DType t, uint32_t seed, int64_t lo, int64_t hi, int64_t nonzero = 0) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(numel(shape));
  for (auto& x : v) {
    x = d(g);
    if (x == 0 && nonzero) x = nonzero;
  }
  return ints(shape, v, t);
}

std::vector<jit::LoweredStep::Kind> step_kinds(GraphBuilder& b) {
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto steps = jit::lower(*g, {});
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  std::vector<jit::LoweredStep::Kind> k;
  for (const auto& st : *steps) k.push_back(st.kind);
  return k;
}

}  // namespace

TEST_CASE("codegen: unary float maths and activations, NaN/inf/zeros/halves, every float format") {
  const std::vector<std::pair<const char*, Attributes>> ops = {
      {"Sin", {}}, {"Cos", {}}, {"Tan", {}}, {"Asin", {}}, {"Acos", {}}, {"Atan", {}}, {"Sinh", {}}, {"Cosh", {}},
      {"Asinh", {}}, {"Acosh", {}}, {"Atanh", {}}, {"Floor", {}}, {"Ceil", {}}, {"Round", {}}, {"Reciprocal", {}},
      {"Sign", {}}, {"Softplus", {}}, {"Softsign", {}}, {"Mish", {}},
      {"Elu", {}}, {"Elu", {{"alpha", 0.5f}}}, {"Selu", {}}, {"Selu", {{"alpha", 2.0f}, {"gamma", 0.75f}}},
      {"Celu", {}}, {"Celu", {{"alpha", 1.5f}}}, {"ThresholdedRelu", {}}, {"ThresholdedRelu", {{"alpha", -0.25f}}},
      {"Shrink", {}}, {"Shrink", {{"bias", 0.25f}, {"lambd", 1.0f}}},
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const auto& [op, attrs] : ops) {
      CAPTURE(dtype_name(t));
      CAPTURE(op);
      GraphBuilder b("unary");
      auto x = b.input("x", t, {3, 1, 13});
      b.output(b.op1(op, {x}, attrs), "out");
      CHECK(step_kinds(b) == std::vector<jit::LoweredStep::Kind>{jit::LoweredStep::Kind::kernel});
      // Each op rounds once to the format in both; FP32 libm against the reference's double.
      check_graph(b, {special_tensor({3, 1, 13}, t, 100)}, t == DType::F32 ? 2e-6 : t == DType::F16 ? 1e-3 : 8e-3);
    }
}

TEST_CASE("codegen: a long chain of the new ops fuses between branch points") {
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("chain");
    auto x = b.input("x", t, {2, 3, 11});
    auto slope = b.constant(random_tensor({3, 1}, t, 101, 0.1f, 0.9f));
    auto y = b.op1("PRelu", {b.op1("Sin", {x}), slope});
    y = b.op1("Mish", {b.op1("Softsign", {y})});
    y = b.op1("Sum", {y, b.op1("Round", {b.op1("Elu", {y}, {{"alpha", 0.3f}})}), x});
    y = b.op1("Mean", {y, b.constant(random_tensor({11}, t, 102))});
    b.output(b.op1("Celu", {b.op1("Reciprocal", {b.op1("Cosh", {y})})}), "out");
    auto kinds = step_kinds(b);
    // Mish's result has two uses (Elu, Sum): the chain ends there; Elu, Round and Sum..Celu fuse
    // (Sum continues the Round chain through its second operand).
    CHECK(kinds.size() == 2);
    for (auto k : kinds) CHECK(k == jit::LoweredStep::Kind::kernel);
    check_graph(b, {special_tensor({2, 3, 11}, t, 103)}, t == DType::F32 ? 1e-5 : 2e-2);
  }
}

TEST_CASE("codegen: PRelu slope broadcast, Sum and Mean variadic with broadcasting") {
  for (DType t : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("prelu");
    auto x = b.input("x", t, {2, 3, 4, 5});
    b.output(b.op1("PRelu", {x, b.constant(random_tensor({3, 1, 1}, t, 104))}), "out");
    check_graph(b, {special_tensor({2, 3, 4, 5}, t, 105)}, 0);  // one product, rounded once in both
    for (const char* op : {"Sum", "Mean"}) {
      CAPTURE(op);
      GraphBuilder v("variadic");
      auto a = v.input("a", t, {4, 1, 7});
      auto c = v.input("c", t, {3, 1});
      v.output(v.op1(op, {a, c, v.constant(random_tensor({7}, t, 106))}), "out");
      check_graph(v, {special_tensor({4, 1, 7}, t, 107), random_tensor({3, 1}, t, 108)}, 0);
      GraphBuilder one("single");
      auto z = one.input("z", t, {5});
      one.output(one.op1(op, {z}), "out");
      check_graph(one, {special_tensor({5}, t, 109)}, 0);
    }
  }
  GraphBuilder b("sum_i32");
  auto a = b.input("a", DType::I32, {3, 4});
  b.output(b.op1("Sum", {a, b.constant(int_tensor({4}, DType::I32, 110, -1000000, 1000000)), a}), "out");
  check_graph(b, {int_tensor({3, 4}, DType::I32, 111, -500000000, 500000000)}, 0);
}

TEST_CASE("codegen: Mod, fmod 0 and 1, float and integer, signs of both operands") {
  for (int64_t fm : {0, 1}) {
    CAPTURE(fm);
    for (DType t : {DType::F32, DType::F16}) {
      CAPTURE(dtype_name(t));
      GraphBuilder b("modf");
      auto x = b.input("x", t, {3, 7});
      auto y = b.input("y", t, {7});
      b.output(b.op1("Mod", {x, y}, {{"fmod", fm}}), "out");
      std::vector<float> d = random_tensor({7}, DType::F32, 112, -3, 3).to_f32();
      d[0] = -1.5f;
      d[1] = 2.0f;
      d[2] = INFINITY;
      check_graph(b, {special_tensor({3, 7}, t, 113, -9, 9), *Tensor::from_f32({7}, d, t)}, 0);
    }
    for (DType t : {DType::I64, DType::I32, DType::I8}) {
      CAPTURE(dtype_name(t));
      GraphBuilder b("modi");
      auto x = b.input("x", t, {4, 5});
      auto y = b.input("y", t, {4, 1});
      b.output(b.op1("Mod", {x, y}, {{"fmod", fm}}), "out");
      const int64_t big = t == DType::I64 ? (int64_t{1} << 52) : t == DType::I32 ? 2000000000 : 120;
      auto xs = int_tensor({4, 5}, t, 114, -big, big);
      check_graph(b, {xs, ints({4, 1}, {7, -3, -1, 100}, t)}, 0);
    }
  }
}

TEST_CASE("codegen: comparisons (float with NaN, f16, integers) give BOOL; And/Or/Xor/Not; IsNaN/IsInf") {
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    CAPTURE(op);
    for (DType t : {DType::F32, DType::F16}) {
      CAPTURE(dtype_name(t));
      GraphBuilder b("cmp");
      auto x = b.input("x", t, {3, 1, 5});
      auto y = b.input("y", t, {4, 5});
      b.output(b.op1(op, {x, y}), "out");
      auto xs = special_tensor({3, 1, 5}, t, 115, -2, 2);
      // Equal needs equal values to be interesting: y repeats some of x's.
      std::vector<float> yv = random_tensor({4, 5}, DType::F32, 116).to_f32();
      auto xv = xs.to_f32();
      for (size_t k = 0; k < 8; ++k) yv[k] = xv[(k * 3) % xv.size()];
      check_graph(b, {xs, *Tensor::from_f32({4, 5}, yv, t)}, 0);
    }
    GraphBuilder b("cmpi");
    auto x = b.input("x", DType::I64, {6});
    b.output(b.op1(op, {x, b.constant(ints({1}, {3}))}), "out");
    check_graph(b, {ints({6}, {-5, 3, 2, 4, 3, 1000000007})}, 0);
  }
  const Tensor p = ints({2, 1, 3}, {1, 0, 1, 0, 0, 1}, DType::BOOL), q = ints({4, 3}, {1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1}, DType::BOOL);
  for (const char* op : {"And", "Or", "Xor"}) {
    CAPTURE(op);
    GraphBuilder b("logic");
    auto x = b.input("x", DType::BOOL, {2, 1, 3});
    auto y = b.input("y", DType::BOOL, {4, 3});
    b.output(b.op1("Not", {b.op1(op, {x, y})}), "out");
    check_graph(b, {p, q}, 0);
  }
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("isnan");
    auto x = b.input("x", t, {17});
    b.output(b.op1("IsNaN", {b.op1("Sqrt", {x})}), "out");  // NaN from the input and from Sqrt(<0)
    check_graph(b, {special_tensor({17}, t, 117)}, 0);
    for (int64_t pos : {0, 1})
      for (int64_t neg : {0, 1}) {
        CAPTURE(pos);
        CAPTURE(neg);
        GraphBuilder c("isinf");
        auto z = c.input("z", t, {17});
        c.output(c.op1("IsInf", {c.op1("Reciprocal", {z})}, {{"detect_positive", pos}, {"detect_negative", neg}}), "out");
        check_graph(c, {special_tensor({17}, t, 118)}, 0);
      }
  }
}

TEST_CASE("codegen: Where with a broadcast BOOL condition from a comparison, float and integer branches") {
  for (DType t : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("where");
    auto x = b.input("x", t, {3, 4, 5});
    auto cond = b.op1("Greater", {x, b.constant(random_tensor({5}, t, 119))});
    b.output(b.op1("Where", {cond, b.op1("Tanh", {x}), b.constant(random_tensor({4, 1}, t, 120))}), "out");
    check_graph(b, {special_tensor({3, 4, 5}, t, 121)}, t == DType::F32 ? 1e-6 : 1e-3);
  }
  GraphBuilder b("where_i64");
  auto c = b.input("c", DType::BOOL, {2, 1});
  auto x = b.input("x", DType::I64, {2, 3});
  b.output(b.op1("Where", {c, x, b.constant(ints({3}, {-7, (int64_t{1} << 50) + 1, 0}))}), "out");
  check_graph(b, {ints({2, 1}, {0, 1}, DType::BOOL), ints({2, 3}, {1, -2, 3, -(int64_t{1} << 51) - 3, 5, 6})}, 0);
  GraphBuilder s("sign_i64");
  auto y = s.input("y", DType::I64, {5});
  s.output(s.op1("Sign", {y}), "out");
  check_graph(s, {ints({5}, {-9, 0, 4, -1, 1})}, 0);
}

TEST_CASE("codegen: elementwise operand types the reference does not take stay fallbacks") {
  using K = jit::LoweredStep::Kind;
  {
    GraphBuilder b("floor_i64");  // float-only maths on integers: the reference's unsupported
    b.output(b.op1("Floor", {b.input("x", DType::I64, {3})}), "y");
    CHECK(step_kinds(b) == std::vector<K>{K::fallback});
  }
  {
    GraphBuilder b("mean_i32");
    auto x = b.input("x", DType::I32, {3});
    b.output(b.op1("Mean", {x, x}), "y");
    CHECK(step_kinds(b) == std::vector<K>{K::fallback});
  }
  {
    GraphBuilder b("and_f32");  // logical ops take BOOL only
    auto x = b.input("x", DType::F32, {3});
    b.output(b.op1("And", {x, x}), "y");
    if (auto g = b.build(); g.ok()) {
      auto steps = jit::lower(*g, {});
      if (steps.ok())
        for (const auto& st : *steps) CHECK(st.kind == K::fallback);
    }
  }
}

// ---- ConvTranspose (1-D, 2-D) and 1-D Conv/pools ----

namespace {

void check_windowed(const char* op, DType t, Ints xs, Ints ws, bool bias, Attributes attrs, uint32_t seed) {
  CAPTURE(op);
  CAPTURE(dtype_name(t));
  CAPTURE(shape_string(xs));
  CAPTURE(shape_string(ws));
  GraphBuilder b("windowed");
  auto x = b.input("x", t, Shape(xs.begin(), xs.end()));
  std::vector<ValueId> in{x, b.constant(random_tensor(ws, t, seed))};
  const int64_t m = std::string(op) == "Conv" ? ws[0] : ws[1] * (attrs.count("group") ? std::get<int64_t>(attrs["group"]) : 1);
  if (bias) in.push_back(b.constant(random_tensor({m}, t, seed + 1)));
  b.output(b.op1(op, in, attrs), "out");
  CHECK(step_kinds(b) == std::vector<jit::LoweredStep::Kind>{jit::LoweredStep::Kind::kernel});
  check_graph(b, {random_tensor(xs, t, seed + 2)}, t == DType::F32 ? 1e-5 : 2e-3);
}

}  // namespace

TEST_CASE("codegen: ConvTranspose 2-D: strides, pads, dilations, output_padding, groups, output_shape, auto_pad") {
  for (DType t : {DType::F32, DType::F16}) {
    check_windowed("ConvTranspose", t, {2, 3, 5, 7}, {3, 4, 3, 3}, true, {}, 130);
    // Stride 2 by 3 with output_padding, asymmetric pads.
    check_windowed("ConvTranspose", t, {1, 3, 4, 5}, {3, 2, 3, 4}, true,
                   {{"strides", Ints{2, 3}}, {"output_padding", Ints{1, 2}}, {"pads", Ints{1, 0, 0, 2}}}, 133);
    // Dilation, no bias.
    check_windowed("ConvTranspose", t, {1, 2, 5, 4}, {2, 3, 2, 3}, false, {{"dilations", Ints{2, 3}}, {"pads", Ints{1, 1, 2, 0}}}, 136);
    // Groups: 4 input channels in 2 groups, 3 outputs per group.
    check_windowed("ConvTranspose", t, {2, 4, 3, 5}, {4, 3, 3, 2}, true, {{"group", int64_t{2}}, {"strides", Ints{2, 1}}}, 139);
    // Depthwise-like: group == channels, one output each.
    check_windowed("ConvTranspose", t, {1, 3, 4, 4}, {3, 1, 3, 3}, true, {{"group", int64_t{3}}, {"strides", Ints{2, 2}}}, 142);
    // output_shape (the pads follow from it), larger than the full result on one axis.
    check_windowed("ConvTranspose", t, {1, 2, 3, 3}, {2, 2, 3, 3}, true,
                   {{"strides", Ints{3, 2}}, {"output_shape", Ints{10, 8}}}, 145);
    check_windowed("ConvTranspose", t, {1, 2, 3, 4}, {2, 2, 3, 3}, false,
                   {{"strides", Ints{2, 2}}, {"output_shape", Ints{1, 2, 6, 9}}}, 148);
    // auto_pad both ways.
    check_windowed("ConvTranspose", t, {1, 2, 3, 5}, {2, 3, 4, 3}, true,
                   {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}, 151);
    check_windowed("ConvTranspose", t, {1, 2, 3, 5}, {2, 3, 4, 3}, true,
                   {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}, 154);
    // 1x1 kernel, stride 1; kernel larger than the input.
    check_windowed("ConvTranspose", t, {3, 5, 2, 1}, {5, 4, 1, 1}, false, {}, 157);
    check_windowed("ConvTranspose", t, {1, 1, 2, 2}, {1, 2, 5, 4}, true, {{"pads", Ints{2, 1, 1, 2}}}, 160);
  }
}

TEST_CASE("codegen: 1-D Conv, ConvTranspose, MaxPool and AveragePool through the 2-D kernels") {
  for (DType t : {DType::F32, DType::F16}) {
    check_windowed("Conv", t, {2, 3, 11}, {4, 3, 3}, true, {{"pads", Ints{1, 2}}, {"strides", Ints{2}}}, 170);
    check_windowed("Conv", t, {1, 4, 9}, {6, 2, 2}, false, {{"group", int64_t{2}}, {"dilations", Ints{3}}}, 173);
    check_windowed("Conv", t, {1, 2, 8}, {3, 2, 4}, true, {{"auto_pad", std::string("SAME_LOWER")}, {"strides", Ints{3}}}, 176);
    check_windowed("ConvTranspose", t, {2, 3, 6}, {3, 2, 3}, true,
                   {{"strides", Ints{2}}, {"output_padding", Ints{1}}, {"pads", Ints{0, 1}}}, 179);
    check_windowed("ConvTranspose", t, {1, 2, 5}, {2, 2, 3}, false, {{"strides", Ints{3}}, {"output_shape", Ints{16}}}, 182);
    const std::vector<Attributes> windows = {
        {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{1, 2}}},
        {{"kernel_shape", Ints{4}}, {"strides", Ints{3}}, {"ceil_mode", int64_t{1}}},
        {{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2}}},
        // Wider than kUnrolledColumns (8): the kernel columns loop over the tables.
        {{"kernel_shape", Ints{10}}, {"strides", Ints{2}}, {"pads", Ints{4, 3}}},
    };
    for (size_t k = 0; k < windows.size(); ++k) {
      CAPTURE(k);
      GraphBuilder b("maxpool1d");
      auto x = b.input("x", t, {2, 3, 13});
      b.output(b.op1("MaxPool", {x}, windows[k]), "out");
      check_graph(b, {special_tensor({2, 3, 13}, t, 185 + k)}, 0);
      for (int64_t include : {0, 1}) {
        Attributes a = windows[k];
        a["count_include_pad"] = include;
        GraphBuilder c("avgpool1d");
        auto y = c.input("y", t, {2, 3, 13});
        c.output(c.op1("AveragePool", {y}, a), "out");
        check_graph(c, {random_tensor({2, 3, 13}, t, 190 + k)}, t == DType::F32 ? 1e-6 : 1e-3);
      }
    }
  }
}

TEST_CASE("codegen: GlobalMaxPool over ranks 3 to 5, a NaN anywhere in a plane wins") {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (Ints xs : {Ints{2, 3, 7}, Ints{2, 5, 3, 3}, Ints{1, 2, 2, 3, 5}, Ints{3, 1, 1, 1}}) {
      CAPTURE(dtype_name(t));
      CAPTURE(shape_string(xs));
      std::vector<float> v = random_tensor(xs, DType::F32, 200, -50, 50).to_f32();
      const size_t plane = v.size() / (xs[0] * xs[1]);
      if (plane > 2) {
        v[plane + 1] = NAN;  // plane 1: NaN after its first cell
        v[0] = -INFINITY;
      }
      v.back() = NAN;  // the last plane: NaN last
      GraphBuilder b("gmp");
      auto x = b.input("x", t, Shape(xs.begin(), xs.end()));
      b.output(b.op1("GlobalMaxPool", {x}), "out");
      CHECK(step_kinds(b) == std::vector<jit::LoweredStep::Kind>{jit::LoweredStep::Kind::kernel});
      check_graph(b, {*Tensor::from_f32(xs, v, t)}, 0);
    }
}

// ---- Epilogue fusion: elementwise consumers folded into the producing Conv / MatMul ----
namespace {
// The lowered steps' labels (each step's node names joined by '+').
std::vector<std::string> step_labels(GraphBuilder& b) {
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto steps = jit::lower(*g, {});
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  std::vector<std::string> l;
  for (const auto& st : *steps) l.push_back(st.label);
  return l;
}
}  // namespace

TEST_CASE("codegen: Conv epilogue: bias Add, BatchNormalization, residual Add, activations in one kernel") {
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("conv_epilogue");
    auto x = b.input("x", t, {2, 5, 9, 11});
    auto r = b.input("r", t, {2, 6, 9, 11});  // a residual of the output's shape
    auto y = b.op1("Conv", {x, b.constant(random_tensor({6, 5, 3, 3}, t, 400))}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
    y = b.op1("Add", {y, b.constant(random_tensor({6, 1, 1}, t, 401))}, {}, "bias");
    y = b.op1("BatchNormalization", {y, b.constant(random_tensor({6}, t, 402)), b.constant(random_tensor({6}, t, 403)),
                    b.constant(random_tensor({6}, t, 404)), b.constant(random_tensor({6}, t, 405, 0.5f, 2))}, {{"epsilon", 1e-3f}}, "bn");
    y = b.op1("Add", {r, y}, {}, "residual");  // the producer's value as the second operand
    y = b.op1("Relu", {y}, {}, "relu");
    y = b.op1("Mul", {y, b.scalar(0.5f)}, {}, "scale");
    y = b.op1("HardSwish", {y}, {}, "hswish");
    y = b.op1("Clip", {y, kNoValue, b.scalar(1.5f)}, {}, "clip");
    b.output(y, "out");
    CHECK(step_labels(b) == std::vector<std::string>{"conv+bias+bn+residual+relu+scale+hswish+clip"});
    check_graph(b, {random_tensor({2, 5, 9, 11}, t, 406), random_tensor({2, 6, 9, 11}, t, 407)},
                t == DType::F32 ? 1e-5 : 2e-2);
  }
}

// A residual Add of two convs (ResNet's down-projection blocks): it joins the later conv's
// epilogue, reading the earlier one's output; either operand order.
TEST_CASE("codegen: a residual Add of two convs joins the later conv") {
  for (bool later_first : {true, false}) {
    CAPTURE(later_first);
    GraphBuilder b("two_convs");
    auto x = b.input("x", DType::F32, {1, 4, 6, 7});
    auto down = b.op1("Conv", {x, b.constant(random_tensor({8, 4, 1, 1}, DType::F32, 420))}, {}, "down");
    auto main = b.op1("Conv", {x, b.constant(random_tensor({8, 4, 3, 3}, DType::F32, 421))}, {{"pads", Ints{1, 1, 1, 1}}},
                      "main");
    auto y = later_first ? b.op1("Add", {main, down}, {}, "add") : b.op1("Add", {down, main}, {}, "add");
    b.output(b.op1("Relu", {y}, {}, "relu"), "out");
    CHECK(step_labels(b) == std::vector<std::string>{"down", "main+add+relu"});
    check_graph(b, {random_tensor({1, 4, 6, 7}, DType::F32, 422)}, 1e-5);
  }
}

// Each Conv kernel writing its output over its residual operand (c_in_place_input), as the
// Session's memory plan has it where the residual dies at the Conv: the pointwise rows and cols
// layouts, the direct (stride 2), Winograd, phase-plane (stem), implicit-GEMM and depthwise
// kernels, FP32 and BF16 (AMX tiles where the host has them), one and two images; against the
// reference.
TEST_CASE("codegen: Conv kernels write their output over the residual operand") {
  struct Case {
    Ints x, w;
    int64_t stride, pad, group;
  };
  const std::vector<Case> cases = {
      {{1, 32, 16, 16}, {64, 32, 1, 1}, 1, 0, 1},     // pointwise, rows layout
      {{2, 160, 7, 7}, {70, 160, 1, 1}, 1, 0, 1},     // pointwise, cols layout, a ragged block
      {{1, 32, 15, 15}, {64, 32, 3, 3}, 2, 1, 1},     // direct, stride 2
      {{1, 32, 12, 12}, {48, 32, 3, 3}, 1, 1, 1},     // Winograd
      {{1, 3, 40, 40}, {24, 3, 7, 7}, 2, 3, 1},       // phase planes (a stem)
      {{1, 6, 11, 13}, {20, 6, 5, 5}, 1, 2, 1},       // implicit GEMM
      {{2, 24, 14, 14}, {24, 1, 3, 3}, 1, 1, 24},     // depthwise
      {{1, 12, 9, 9}, {16, 3, 3, 3}, 1, 1, 4}};       // groups
  outputs_in_place = true;
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases) {
      CAPTURE(dtype_name(t));
      CAPTURE(shape_string(c.x));
      CAPTURE(shape_string(c.w));
      const int64_t o = (c.x[2] + 2 * c.pad - c.w[2]) / c.stride + 1, ow = (c.x[3] + 2 * c.pad - c.w[3]) / c.stride + 1;
      const Ints ys{c.x[0], c.w[0], o, ow};
      GraphBuilder b("conv_over_residual");
      auto x = b.input("x", t, Shape(c.x.begin(), c.x.end()));
      auto r = b.input("r", t, Shape(ys.begin(), ys.end()));
      auto y = b.op1("Conv", {x, b.constant(random_tensor(c.w, t, 430)), b.constant(random_tensor({c.w[0]}, t, 431))},
                     {{"strides", Ints{c.stride, c.stride}}, {"pads", Ints{c.pad, c.pad, c.pad, c.pad}}, {"group", c.group}},
                     "conv");
      y = b.op1("Add", {y, r}, {}, "residual");
      b.output(b.op1("Relu", {y}, {}, "relu"), "out");
      auto g = b.build();
      REQUIRE(g.ok());
      auto steps = jit::lower(*g, {});
      REQUIRE(steps.ok());
      REQUIRE(steps->size() == 1);
      CHECK(jit::c_in_place_input((*steps)[0].spec) == 3);  // x, w, b, then the residual
      check_graph(b, {random_tensor(c.x, t, 432), random_tensor(ys, t, 433)}, t == DType::F32 ? 1e-5 : 2e-2, true);
    }
  outputs_in_place = false;
}

// FP32 weights packed as the Session packs them (jit/codegen/conv_packing.hpp): the pointwise
// "cols" layout (deep K, small maps) with a ragged channel block, groups, a batch of two and the
// fused epilogue; and the "rows" layout next to it.
TEST_CASE("codegen: Conv with packed weights: pointwise cols layout, epilogue, groups") {
  jit::KernelSpec probe;
  probe.family = "conv";
  probe.inputs = {{DType::F32, {2, 300, 7, 7}}, {DType::F32, {120, 300, 1, 1}}};
  probe.outputs = {{DType::F32, {2, 120, 7, 7}}};
  REQUIRE(jit::conv_takes_packed_weights(probe));
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "cols");
  probe.inputs[1].shape = {120, 300, 3, 3};
  probe.attrs["pads"] = Ints{1, 1, 1, 1};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "wino");  // 3x3, unit strides
  probe.attrs["pads"] = Ints{2, 2, 2, 2};
  probe.attrs["dilations"] = Ints{2, 2};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "cols");  // the direct kernel
  probe.attrs.erase("dilations");
  probe.attrs["pads"] = Ints{1, 1, 1, 1};
  probe.inputs[1].shape = {20, 300, 3, 3};  // 20 channels would fill a third of a 64-wide block
  probe.outputs[0].shape = {2, 20, 7, 7};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "rows");
  // A 7x7 map from K = 128 (MobileNetV2's 160 -> 960) takes the cols layout, shallower the rows.
  probe.attrs.erase("pads");
  probe.inputs = {{DType::F32, {1, 160, 7, 7}}, {DType::F32, {192, 160, 1, 1}}};
  probe.outputs = {{DType::F32, {1, 192, 7, 7}}};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "cols");
  probe.inputs = {{DType::F32, {1, 96, 7, 7}}, {DType::F32, {192, 96, 1, 1}}};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "rows");
  check_conv(DType::F32, {1, 160, 7, 7}, {192, 160, 1, 1}, true, {}, 604);
  // 120 channels (blocks of 64 and 56), K = 300 in five slices of 64 (the last 44: a 7x7 map's
  // slices fit L1 at 64), 49 pixels (9 tiles, ragged).
  check_conv(DType::F32, {2, 300, 7, 7}, {120, 300, 1, 1}, true, {}, 600);
  // Two groups of 300 -> 120 on 30 pixels.
  check_conv(DType::F32, {1, 600, 5, 6}, {240, 300, 1, 1}, false, {{"group", int64_t{2}}}, 603);
  GraphBuilder b("pointwise_epilogue");
  auto x = b.input("x", DType::F32, {1, 256, 5, 7});
  auto r = b.input("r", DType::F32, {1, 64, 5, 7});
  auto y = b.op1("Conv", {x, b.constant(random_tensor({64, 256, 1, 1}, DType::F32, 606)),
                          b.constant(random_tensor({64}, DType::F32, 607))}, {}, "conv");
  y = b.op1("Add", {r, y}, {}, "residual");
  y = b.op1("Relu", {y}, {}, "relu");
  b.output(y, "out");
  CHECK(step_labels(b) == std::vector<std::string>{"conv+residual+relu"});
  check_graph(b, {random_tensor({1, 256, 5, 7}, DType::F32, 608), random_tensor({1, 64, 5, 7}, DType::F32, 609)},
              4e-5, true);
}

// A pointwise Conv on maps that fill 64-pixel blocks takes the "rows" layout and its own kernel
// (c_conv.cpp, conv_pointwise_rows): whole blocks read in place, a ragged last one (and 16-bit
// input) copied; K over several slices, channel tiles ragged at a block's end, row blocks of every
// tile configuration, groups, a batch, an epilogue with a residual operand.
TEST_CASE("codegen: Conv with packed weights: pointwise rows layout") {
  jit::KernelSpec probe;
  probe.family = "conv";
  probe.inputs = {{DType::F32, {2, 300, 10, 15}}, {DType::F32, {40, 300, 1, 1}}};
  probe.outputs = {{DType::F32, {2, 40, 10, 15}}};
  const jit::KernelSpec packed = jit::conv_spec_with_packed_weights(probe);
  REQUIRE(jit::attr_s(packed.attrs, "w_layout") == "rows");  // 40 of 64 channels: worse than 150 of 192 pixels
  const std::vector<std::string> tiles = jit::c_tile_variants(packed);
  REQUIRE(tiles.size() >= 2);
  for (const std::string& tile : tiles) {
    CAPTURE(tile);
    conv_tile = tile;
    // 150 pixels: two whole blocks and 22; K = 300 over three slices; 40 channels: 6 tiles and 4 rows.
    check_conv(DType::F32, {2, 300, 10, 15}, {40, 300, 1, 1}, true, {}, 690);
    // Two groups of 40 -> 45 channels on 128 pixels (whole blocks only), no bias.
    check_conv(DType::F32, {1, 80, 8, 16}, {90, 40, 1, 1}, false, {{"group", int64_t{2}}}, 693);
  }
  conv_tile.clear();
  GraphBuilder b("pointwise_rows_epilogue");
  auto x = b.input("x", DType::F32, {1, 64, 12, 12});
  auto r = b.input("r", DType::F32, {1, 200, 12, 12});
  auto y = b.op1("Conv", {x, b.constant(random_tensor({200, 64, 1, 1}, DType::F32, 696)),
                          b.constant(random_tensor({200}, DType::F32, 697))}, {}, "conv");
  y = b.op1("Relu", {b.op1("Add", {r, y}, {}, "residual")}, {}, "relu");
  b.output(y, "out");
  CHECK(step_labels(b) == std::vector<std::string>{"conv+residual+relu"});
  check_graph(b, {random_tensor({1, 64, 12, 12}, DType::F32, 698), random_tensor({1, 200, 12, 12}, DType::F32, 699)},
              4e-5, true);
  // F16 input with FP32 weights (activations narrowed, weights kept): whole blocks converted too.
  if (!plugin().skip.empty()) return;
  jit::KernelSpec mixed;
  mixed.family = "conv";
  mixed.inputs = {{DType::F16, {1, 40, 8, 16}}, {DType::F32, {30, 40, 1, 1}}};
  mixed.outputs = {{DType::F32, {1, 30, 8, 16}}};
  const jit::KernelSpec mp = jit::conv_spec_with_packed_weights(mixed);
  REQUIRE(jit::attr_s(mp.attrs, "w_layout") == "rows");
  const Tensor x16 = random_tensor({1, 40, 8, 16}, DType::F16, 700), w = random_tensor({30, 40, 1, 1}, DType::F32, 701);
  Tensor wp(DType::F32, mp.inputs[1].shape), out(DType::F32, {1, 30, 8, 16});
  jit::pack_conv_weights(mp, reinterpret_cast<const float*>(w.bytes().data()), reinterpret_cast<float*>(wp.bytes().data()));
  auto k = jit::generate_c(mp);
  REQUIRE(k.ok());
  plugin().run(*k, {const_cast<std::byte*>(x16.bytes().data()), wp.bytes().data(), out.bytes().data()});
  GraphBuilder rb("pointwise_f32");
  auto rx = rb.input("x", DType::F32, {1, 40, 8, 16});
  rb.output(rb.op1("Conv", {rx, rb.constant(w)}), "y");
  auto rg = rb.build();
  REQUIRE(rg.ok());
  const std::vector<float> xv = x16.to_f32();
  auto want = ref::run(*rg, {*Tensor::from_f32({1, 40, 8, 16}, xv)});
  REQUIRE(want.ok());
  const std::vector<float> got = out.to_f32(), ref_v = (*want)[0].to_f32();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - ref_v[i]) / (1.0 + std::abs(ref_v[i])));
  CHECK(worst <= 1e-5);
}

// The rows pointwise kernel finishes a group of whole tiles over a whole pixel block in
// registers (the vector epilogue, c_epilogue_vector) where every step has a vector form, and
// through its FP32 tile otherwise: both against the reference, with operands a scalar, per
// channel and in full, one slice of K and three, a NaN input pixel (Relu and Clip keep NaN), and
// channel tiles ragged at a block's end (those groups finish through the tile).
namespace {
// The C source of the graph's first step, a Conv, with its weights packed as the Session packs
// them, in `layout`.
std::string packed_conv_source(GraphBuilder& b, const std::string& layout) {
  auto g = b.build();
  REQUIRE(g.ok());
  auto steps = jit::lower(*g, {});
  REQUIRE(steps.ok());
  const jit::KernelSpec packed = jit::conv_spec_with_packed_weights((*steps)[0].spec);
  CHECK(jit::attr_s(packed.attrs, "w_layout") == layout);
  auto k = jit::generate_c(packed);
  REQUIRE(k.ok());
  return k->source;
}
}  // namespace

TEST_CASE("codegen: pointwise rows kernel finishes whole tiles in registers") {
  auto fused = [](GraphBuilder& b) {  // whether the Conv's kernel finishes tiles in registers
    const std::string src = packed_conv_source(b, "rows");
    return src.find("hpf_mm_micro_sums(1, HPF_MR") != std::string::npos ||
           src.find("hpf_mm_micro_sums(0, HPF_MR") != std::string::npos;
  };
  for (int64_t c : {40, 300}) {  // K: one slice, three
    CAPTURE(c);
    // 16 x 16 = 4 whole pixel blocks; 50 channels: whole tiles, then a ragged one of 2.
    Tensor x = random_tensor({1, c, 16, 16}, DType::F32, 720);
    x.data<float>()[5 * 256 + 37] = std::numeric_limits<float>::quiet_NaN();  // channel 5, pixel 37
    const Tensor r = random_tensor({1, 50, 16, 16}, DType::F32, 721);
    {
      GraphBuilder b("vector_epilogue");
      auto xi = b.input("x", DType::F32, {1, c, 16, 16});
      auto ri = b.input("r", DType::F32, {1, 50, 16, 16});
      auto y = b.op1("Conv", {xi, b.constant(random_tensor({50, c, 1, 1}, DType::F32, 722)),
                              b.constant(random_tensor({50}, DType::F32, 723))}, {}, "conv");
      y = b.op1("Mul", {y, b.constant(random_tensor({50, 1, 1}, DType::F32, 724))}, {}, "scale");
      y = b.op1("Sub", {y, b.scalar(0.25f)}, {}, "shift");
      y = b.op1("Add", {ri, y}, {}, "residual");
      y = b.op1("Relu", {y}, {}, "relu");
      y = b.op1("Div", {y, b.scalar(3.0f)}, {}, "div");
      b.output(b.op1("Clip", {y, b.scalar(0.05f), b.scalar(0.4f)}, {}, "clip"), "out");
      REQUIRE(step_labels(b) == std::vector<std::string>{"conv+scale+shift+residual+relu+div+clip"});
      CHECK(fused(b));
      check_graph(b, {x, r}, 4e-5, true);
      Tensor got, want;
      REQUIRE(run_both(b, {x, r}, &got, &want, true));
      for (int64_t m = 0; m < 50; ++m) CHECK(std::isnan(got.data<float>()[m * 256 + 37]));
    }
    {
      GraphBuilder b("scalar_epilogue");  // Sigmoid has no vector form: the tile path
      auto xi = b.input("x", DType::F32, {1, c, 16, 16});
      auto y = b.op1("Conv", {xi, b.constant(random_tensor({50, c, 1, 1}, DType::F32, 725))}, {}, "conv");
      b.output(b.op1("Sigmoid", {y}, {}, "sigmoid"), "out");
      REQUIRE(step_labels(b) == std::vector<std::string>{"conv+sigmoid"});
      CHECK_FALSE(fused(b));
      check_graph(b, {x}, 1e-5, true);
    }
  }
}

// Shallow Convs of several taps (fewer than 16 input channels per group) with "rows"-packed
// weights read stride-phase planes in place (c_conv_phase.cpp): ResNet's 7x7 stride-2 stem and
// MobileNetV2's 3x3 one over 3 channels, a batch of two and several row blocks; channel tiles
// ragged at the end; K over two slices; asymmetric pads larger than the kernel's reach with a
// dilation and unequal strides; groups; every tile configuration; a fused Clip.
TEST_CASE("codegen: Conv phase-plane kernel for shallow inputs") {
  auto kernel_of = [](Ints xs, Ints ws, Attributes attrs) {
    GraphBuilder b("probe");
    auto x = b.input("x", DType::F32, Shape(xs.begin(), xs.end()));
    b.output(b.op1("Conv", {x, b.constant(random_tensor(ws, DType::F32, 1))}, attrs), "y");
    return packed_conv_source(b, "rows");
  };
  const Attributes stem{{"pads", Ints{3, 3, 3, 3}}, {"strides", Ints{2, 2}}};
  CHECK(kernel_of({2, 3, 30, 64}, {64, 3, 7, 7}, stem).find("hpf_mm_micro_tab") != std::string::npos);
  // Output rows of 7 would compute 2 positions past each of them for every 7: the implicit GEMM.
  CHECK(kernel_of({1, 3, 7, 7}, {8, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}).find("hpf_mm_micro_tab") ==
        std::string::npos);
  for (const std::string& tile : jit::c_tile_variants(jit::conv_spec_with_packed_weights([] {
         jit::KernelSpec k;
         k.family = "conv";
         k.inputs = {{DType::F32, {1, 3, 30, 64}}, {DType::F32, {64, 3, 7, 7}}};
         k.outputs = {{DType::F32, {1, 64, 15, 32}}};
         return k;
       }()))) {
    CAPTURE(tile);
    conv_tile = tile;
    check_conv(DType::F32, {2, 3, 30, 64}, {64, 3, 7, 7}, true, stem, 700);
    check_conv(DType::F32, {1, 3, 33, 66}, {32, 3, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 703);
  }
  conv_tile.clear();
  // Output rows of 112 and 80 (AVX-512: panels of 64 and 48, of 64 and 16 positions), 32
  // channels: full tiles finished in registers over 4, 3 and 1 vectors, a ragged one in memory.
  check_conv(DType::F32, {1, 3, 12, 224}, {32, 3, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 714);
  check_conv(DType::F32, {1, 3, 9, 160}, {32, 3, 3, 3}, false, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 715);
  check_conv(DType::F32, {1, 8, 12, 40}, {10, 8, 5, 5}, false, {{"pads", Ints{2, 2, 2, 2}}}, 706);  // K = 200
  check_conv(DType::F32, {1, 5, 11, 50}, {7, 5, 3, 3}, true,
             {{"pads", Ints{3, 0, 1, 4}}, {"strides", Ints{1, 2}}, {"dilations", Ints{2, 1}}}, 709);
  check_conv(DType::F32, {2, 8, 9, 36}, {12, 4, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{2}}}, 712);
  GraphBuilder b("phase_epilogue");
  auto x = b.input("x", DType::F32, {1, 3, 32, 48});
  auto y = b.op1("Conv", {x, b.constant(random_tensor({20, 3, 3, 3}, DType::F32, 715)),
                          b.constant(random_tensor({20}, DType::F32, 716))},
                 {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, "conv");
  y = b.op1("Clip", {y, b.scalar(0.0f), b.scalar(0.5f)}, {}, "clip");
  b.output(y, "out");
  CHECK(step_labels(b) == std::vector<std::string>{"conv+clip"});
  check_graph(b, {random_tensor({1, 3, 32, 48}, DType::F32, 717)}, 4e-5, true);
  // A value per output in the epilogue (a residual Add) over rows of 32: full tiles finished in
  // registers read it as vectors, the ragged tile through memory.
  GraphBuilder r("phase_residual");
  auto xr = r.input("x", DType::F32, {1, 3, 32, 64});
  auto res = r.input("r", DType::F32, {1, 20, 16, 32});
  auto yr = r.op1("Conv", {xr, r.constant(random_tensor({20, 3, 3, 3}, DType::F32, 718)),
                           r.constant(random_tensor({20}, DType::F32, 719))},
                  {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, "conv");
  yr = r.op1("Add", {yr, res}, {}, "residual");
  yr = r.op1("Relu", {yr}, {}, "relu");
  r.output(yr, "out");
  CHECK(step_labels(r) == std::vector<std::string>{"conv+residual+relu"});
  check_graph(r, {random_tensor({1, 3, 32, 64}, DType::F32, 720), random_tensor({1, 20, 16, 32}, DType::F32, 721)},
              4e-5, true);
}

// The depthwise kernel finishes FP32 rows in registers where its epilogue has a vector form: a
// Clip over rows of 14 (a vector, 2 lanes short), 7 (8 lanes, 1 short), 24 (a vector and 8
// lanes) and 20 (a vector and 4 of 8 lanes), with and without a bias, over 14, 11, 9 and 13
// rows (blocks of 8, 4, 2 and 1 rows where a row is one vector).
TEST_CASE("codegen: depthwise Conv rows finished in registers") {
  const std::vector<std::tuple<int64_t, int64_t, bool>> cases{{14, 14, true}, {11, 7, false}, {9, 24, true}, {13, 20, true}};
  for (const auto& [h, w, bias] : cases) {
    CAPTURE(h);
    CAPTURE(w);
    GraphBuilder b("dw_epilogue");
    auto x = b.input("x", DType::F32, {1, 6, h, w});
    std::vector<ValueId> in{x, b.constant(random_tensor({6, 1, 3, 3}, DType::F32, 720))};
    if (bias) in.push_back(b.constant(random_tensor({6}, DType::F32, 721)));
    auto y = b.op1("Conv", in, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{6}}}, "conv");
    y = b.op1("Clip", {y, b.scalar(-0.25f), b.scalar(0.25f)}, {}, "clip");
    b.output(y, "out");
    CHECK(step_labels(b) == std::vector<std::string>{"conv+clip"});
    check_graph(b, {random_tensor({1, 6, h, w}, DType::F32, 722)}, 4e-5);
  }
}

// The direct kernel (FP32 weights in the "cols" layout, c_conv_direct.cpp): the window's padding
// (asymmetric, larger than the kernel's reach), dilations, 5x5 and 1-D kernels, groups, a ragged
// second channel block, several row blocks with a short last one, a batch of two, strides
// (phase planes), and a fused residual epilogue.
TEST_CASE("codegen: Conv direct kernel") {
  jit::KernelSpec probe;
  probe.family = "conv";
  probe.inputs = {{DType::F32, {1, 64, 56, 56}}, {DType::F32, {64, 64, 3, 3}}};
  probe.outputs = {{DType::F32, {1, 64, 56, 56}}};
  probe.attrs["pads"] = Ints{2, 2, 2, 2};
  probe.attrs["dilations"] = Ints{2, 2};  // 3x3 with unit strides and dilations runs Winograd's
  REQUIRE(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "cols");
  check_conv(DType::F32, {1, 64, 56, 56}, {64, 64, 3, 3}, true, {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}}, 640);
  check_conv(DType::F32, {2, 70, 9, 11}, {120, 70, 3, 3}, false, {{"pads", Ints{2, 0, 1, 3}}}, 643);
  check_conv(DType::F32, {1, 32, 12, 10}, {64, 32, 3, 3}, true, {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}}, 646);
  check_conv(DType::F32, {1, 16, 9, 9}, {64, 16, 5, 5}, true, {{"pads", Ints{2, 2, 2, 2}}}, 649);
  check_conv(DType::F32, {1, 40, 7, 7}, {128, 20, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{2}}}, 652);
  check_conv(DType::F32, {2, 24, 50}, {64, 24, 5}, true, {{"pads", Ints{2, 2}}}, 655);
  // Rows cut as row_plan says: 11 = 6 + 4 + a column down 13 rows (6 + 6 + 1), 5 = 4 + a column.
  check_conv(DType::F32, {1, 24, 13, 11}, {64, 24, 5, 5}, true, {{"pads", Ints{2, 2, 2, 2}}}, 656);
  check_conv(DType::F32, {1, 16, 8, 5}, {64, 16, 5, 5}, false, {{"pads", Ints{2, 2, 2, 2}}}, 657);
  // Strides: phase planes (3x3 stride 2 as ResNet's, strides 3 x 2 with a dilation).
  check_conv(DType::F32, {1, 32, 15, 14}, {64, 32, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 662);
  check_conv(DType::F32, {2, 20, 17, 16}, {64, 20, 3, 2}, true,
             {{"pads", Ints{1, 0, 2, 1}}, {"strides", Ints{3, 2}}, {"dilations", Ints{2, 1}}}, 668);
  GraphBuilder b("direct_epilogue");
  auto x = b.input("x", DType::F32, {1, 48, 14, 14});
  auto r = b.input("r", DType::F32, {1, 64, 14, 14});
  auto y = b.op1("Conv", {x, b.constant(random_tensor({64, 48, 3, 3}, DType::F32, 658)),
                          b.constant(random_tensor({64}, DType::F32, 659))}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
  y = b.op1("Relu", {b.op1("Add", {y, r}, {}, "residual")}, {}, "relu");
  b.output(y, "out");
  CHECK(step_labels(b) == std::vector<std::string>{"conv+residual+relu"});
  check_graph(b, {random_tensor({1, 48, 14, 14}, DType::F32, 660), random_tensor({1, 64, 14, 14}, DType::F32, 661)},
              4e-5, true);
}

// The Winograd F(2x2, 3x3) kernel (FP32 weights in the "wino" layout, c_conv_winograd.cpp; at
// least 32 tiles of 2x2 outputs): odd output sizes (tiles half outside), input channels over
// several slices of 64 (150 = 64 + 64 +
// 22), two blocks of output channels, a batch of two, asymmetric pads, ragged tile groups, and a
// fused residual epilogue; ResNet-50's 56x56 layer and its 7x7 one in a batch of two (one image
// has too few tiles).
TEST_CASE("codegen: Conv Winograd kernel") {
  jit::KernelSpec probe;
  probe.family = "conv";
  probe.inputs = {{DType::F32, {2, 150, 9, 7}}, {DType::F32, {128, 150, 3, 3}}};
  probe.outputs = {{DType::F32, {2, 128, 9, 7}}};
  probe.attrs["pads"] = Ints{1, 1, 1, 1};
  REQUIRE(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "wino");
  check_conv(DType::F32, {2, 150, 9, 7}, {128, 150, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 730);
  check_conv(DType::F32, {2, 16, 10, 13}, {64, 16, 3, 3}, false, {{"pads", Ints{0, 2, 1, 0}}}, 733);
  check_conv(DType::F32, {12, 32, 5, 6}, {64, 32, 3, 3}, true, {}, 736);  // no padding: 3x4 outputs
  check_conv(DType::F32, {2, 512, 7, 7}, {512, 512, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 739);  // 32 tiles
  probe.inputs = {{DType::F32, {1, 512, 7, 7}}, {DType::F32, {512, 512, 3, 3}}};
  probe.outputs = {{DType::F32, {1, 512, 7, 7}}};
  CHECK(jit::attr_s(jit::conv_spec_with_packed_weights(probe).attrs, "w_layout") == "cols");  // 16 tiles: direct
  check_conv(DType::F32, {1, 64, 56, 56}, {64, 64, 3, 3}, true, {{"pads", Ints{1, 1, 1, 1}}}, 742);
  GraphBuilder b("winograd_epilogue");
  auto x = b.input("x", DType::F32, {1, 40, 12, 11});
  auto r = b.input("r", DType::F32, {1, 64, 12, 11});
  auto y = b.op1("Conv", {x, b.constant(random_tensor({64, 40, 3, 3}, DType::F32, 745)),
                          b.constant(random_tensor({64}, DType::F32, 746))}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
  y = b.op1("Relu", {b.op1("Add", {y, r}, {}, "residual")}, {}, "relu");
  b.output(y, "out");
  CHECK(step_labels(b) == std::vector<std::string>{"conv+residual+relu"});
  check_graph(b, {random_tensor({1, 40, 12, 11}, DType::F32, 747), random_tensor({1, 64, 12, 11}, DType::F32, 748)},
              4e-5, true);
}

// F16 outputs do not fuse: an overflow there must stay where the session's watch sees it.
TEST_CASE("codegen: depthwise and 1-D Conv epilogues, Sigmoid/Tanh/LeakyRelu/HardSigmoid/Gelu") {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(t));
    {
      GraphBuilder b("dw_epilogue");
      auto x = b.input("x", t, {1, 4, 7, 10});
      auto y = b.op1("Conv", {x, b.constant(random_tensor({4, 1, 3, 3}, t, 410)), b.constant(random_tensor({4}, t, 411))},
                     {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}});
      y = b.op1("Sigmoid", {y});
      y = b.op1("LeakyRelu", {b.op1("Sub", {y, b.constant(random_tensor({1, 4, 1, 1}, t, 412))})}, {{"alpha", 0.2f}});
      b.output(b.op1("Tanh", {y}), "out");
      CHECK(step_labels(b).size() == (t == DType::F16 ? 2u : 1u));
      check_graph(b, {random_tensor({1, 4, 7, 10}, t, 413)}, t == DType::F32 ? 1e-5 : t == DType::F16 ? 2e-3 : 2e-2);
    }
    {
      GraphBuilder b("conv1d_epilogue");
      auto x = b.input("x", t, {2, 3, 12});
      auto y = b.op1("Conv", {x, b.constant(random_tensor({5, 3, 3}, t, 414))}, {{"pads", Ints{1, 1}}});
      y = b.op1("Add", {y, b.constant(random_tensor({5, 1}, t, 415))});  // per channel of [N, C, L]
      y = b.op1("HardSigmoid", {y}, {{"alpha", 0.3f}});
      b.output(b.op1("Gelu", {y}), "out");
      CHECK(step_labels(b).size() == (t == DType::F16 ? 2u : 1u));
      check_graph(b, {random_tensor({2, 3, 12}, t, 416)}, t == DType::F32 ? 1e-5 : t == DType::F16 ? 2e-3 : 2e-2);
    }
  }
}

TEST_CASE("codegen: MatMul epilogue: bias per column, Gelu, a cast to BF16") {
  GraphBuilder b("mm_epilogue");
  auto x = b.input("x", DType::F32, {2, 7, 33});
  auto y = b.op1("MatMul", {x, b.constant(random_tensor({33, 70}, DType::F32, 420))});
  y = b.op1("Add", {b.constant(random_tensor({70}, DType::F32, 421)), y});
  y = b.op1("Gelu", {y}, {{"approximate", std::string("tanh")}});
  b.output(b.op1("Cast", {y}, {{"to", int64_t{16}}}), "out");  // ONNX BFLOAT16
  CHECK(step_labels(b).size() == 1);
  check_graph(b, {random_tensor({2, 7, 33}, DType::F32, 422)}, 8e-3);
}

namespace {
// Attention as exporters write it: Q, K and V taken from [B, S, H, D] activations by Transposes
// (K's to [B, H, D, Sk]), scores scaled (and masked, per key), Softmax, the context transposed back.
struct Attention {
  int64_t b, h, sq, sk, d, dv;
  bool mask, out_transpose;
};
void attention_graph(GraphBuilder& g, DType t, const Attention& c) {
  auto q = g.op1("Transpose", {g.input("q", t, {c.b, c.sq, c.h, c.d})}, {{"perm", Ints{0, 2, 1, 3}}}, "tq");
  auto k = g.op1("Transpose", {g.input("k", t, {c.b, c.sk, c.h, c.d})}, {{"perm", Ints{0, 2, 3, 1}}}, "tk");
  auto v = g.op1("Transpose", {g.input("v", t, {c.b, c.sk, c.h, c.dv})}, {{"perm", Ints{0, 2, 1, 3}}}, "tv");
  auto s = g.op1("MatMul", {q, k}, {}, "qk");
  s = g.op1("Mul", {s, g.constant(*Tensor::from_f32(std::vector<int64_t>{}, std::vector<float>{0.3f}, t))}, {}, "scale");
  // One mask row per batch entry: per key for one (the MatMul's epilogue), else an Add of its own
  // the fusion takes in.
  if (c.mask) s = g.op1("Add", {s, g.constant(random_tensor({c.b, 1, 1, c.sk}, t, 450, -3, 0))}, {}, "mask");
  auto o = g.op1("MatMul", {g.op1("Softmax", {s}, {{"axis", int64_t{-1}}}, "softmax"), v}, {}, "av");
  if (c.out_transpose) o = g.op1("Transpose", {o}, {{"perm", Ints{0, 2, 1, 3}}}, "to");
  g.output(o, "out");
}
std::vector<std::string> step_families(GraphBuilder& b) {
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto steps = jit::lower(*g, {});
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  std::vector<std::string> f;
  for (const auto& st : *steps) f.push_back(st.kind == jit::LoweredStep::Kind::kernel ? st.spec.family : st.label);
  return f;
}
std::vector<Tensor> attention_inputs(DType t, const Attention& c) {
  return {random_tensor({c.b, c.sq, c.h, c.d}, t, 451), random_tensor({c.b, c.sk, c.h, c.d}, t, 452),
          random_tensor({c.b, c.sk, c.h, c.dv}, t, 453)};
}
}  // namespace

TEST_CASE("codegen: attention in one kernel: transposes, scale, masks per key and per batch, ragged and long sequences, F32 and BF16") {
  // The last two have 8 and 12 batch matrices: a whole matrix per work item (c_attention.cpp).
  for (DType t : {DType::F32, DType::BF16})
    for (const Attention& c : {Attention{1, 3, 77, 77, 40, 40, true, true}, Attention{2, 2, 33, 130, 24, 70, true, true},
                               Attention{1, 2, 5, 512, 64, 64, true, false}, Attention{1, 1, 130, 1, 8, 3, false, false},
                               Attention{1, 8, 50, 70, 16, 24, true, true}, Attention{2, 6, 128, 128, 64, 64, true, false}}) {
      CAPTURE(dtype_name(t));
      CAPTURE(c.sq);
      CAPTURE(c.sk);
      GraphBuilder b("attention");
      attention_graph(b, t, c);
      CHECK(step_families(b) == std::vector<std::string>{"attention"});
      check_graph(b, attention_inputs(t, c), t == DType::F32 ? 1e-5 : 1e-2);
    }
}

TEST_CASE("lowering: attention stays unfused past F16 scores, an op no epilogue takes, a second reader, weights, too large a head") {
  auto count = [](const std::vector<std::string>& f, const char* what) { return std::count(f.begin(), f.end(), what); };
  {  // F16 scores: an overflow inside the kernel would hide from the session's overflow watch
    GraphBuilder b("f16");
    attention_graph(b, DType::F16, {1, 2, 9, 9, 8, 8, false, true});
    const auto f = step_families(b);
    CHECK(count(f, "attention") == 0);
    CHECK(count(f, "softmax") == 1);
    check_graph(b, attention_inputs(DType::F16, {1, 2, 9, 9, 8, 8, false, true}), 1e-2);
  }
  {  // an op between the scores and the Softmax that no epilogue takes (Exp)
    GraphBuilder b("exp");
    auto q = b.input("q", DType::F32, {2, 2, 7, 8});
    auto k = b.input("k", DType::F32, {2, 2, 8, 7});
    auto s = b.op1("Exp", {b.op1("Add", {b.op1("MatMul", {q, k}), b.constant(random_tensor({2, 1, 1, 7}, DType::F32, 454))})});
    b.output(b.op1("MatMul", {b.op1("Softmax", {s}), b.input("v", DType::F32, {2, 2, 7, 5})}), "out");
    CHECK(count(step_families(b), "attention") == 0);
    check_graph(b, {random_tensor({2, 2, 7, 8}, DType::F32, 457, -0.5f, 0.5f), random_tensor({2, 2, 8, 7}, DType::F32, 458, -0.5f, 0.5f),
                    random_tensor({2, 2, 7, 5}, DType::F32, 459)}, 1e-5);
  }
  {  // the probabilities are an output too
    GraphBuilder b("reader");
    auto p = b.op1("Softmax", {b.op1("MatMul", {b.input("q", DType::F32, {3, 7, 8}), b.input("k", DType::F32, {3, 8, 7})})});
    b.output(b.op1("MatMul", {p, b.input("v", DType::F32, {3, 7, 5})}), "out");
    b.output(p, "probs");
    CHECK(count(step_families(b), "attention") == 0);
  }
  {  // constant K and V are weights, packed in the plan's format by the session's MatMul path
    GraphBuilder b("weights");
    auto s = b.op1("MatMul", {b.input("x", DType::F32, {5, 8}), b.constant(random_tensor({8, 7}, DType::F32, 455))});
    b.output(b.op1("MatMul", {b.op1("Softmax", {s}), b.constant(random_tensor({7, 4}, DType::F32, 456))}), "out");
    CHECK(count(step_families(b), "attention") == 0);
  }
  {  // 512-wide heads: the kernel's stack buffers would not hold them
    GraphBuilder b("large");
    attention_graph(b, DType::F32, {1, 1, 4, 2048, 512, 512, false, false});
    CHECK(count(step_families(b), "attention") == 0);
  }
}

TEST_CASE("codegen: epilogue fusion stops at a second reader, a late operand, a row broadcast") {
  GraphBuilder b("no_fuse");
  auto x = b.input("x", DType::F32, {1, 3, 6, 6});
  auto w = b.constant(random_tensor({4, 3, 3, 3}, DType::F32, 430));
  auto c1 = b.op1("Conv", {x, w}, {{"pads", Ints{1, 1, 1, 1}}}, "c1");
  auto r1 = b.op1("Relu", {c1}, {}, "r1");
  auto s1 = b.op1("Sigmoid", {c1}, {}, "s1");  // c1 has two readers: neither fuses
  auto c2 = b.op1("Conv", {x, w}, {{"pads", Ints{1, 1, 1, 1}}}, "c2");
  auto c2b = b.op1("Conv", {x, w}, {{"pads", Ints{1, 1, 1, 1}}}, "c2b");
  auto late = b.op1("Exp", {c2b}, {}, "late");  // a kernel of its own after c2's
  auto a2 = b.op1("Add", {c2, late}, {}, "a2");  // c2's epilogue would read it too early
  auto c3 = b.op1("Conv", {a2, b.constant(random_tensor({4, 4, 1, 1}, DType::F32, 431))}, {}, "c3");
  auto m3 = b.op1("Mul", {c3, b.constant(random_tensor({1, 1, 6, 1}, DType::F32, 432))}, {}, "m3");
  b.output(b.op1("Add", {m3, b.op1("Add", {s1, r1})}, {}, "out"), "out");
  const auto labels = step_labels(b);
  CHECK(std::find(labels.begin(), labels.end(), "c1") != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), "c2") != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), "late+a2") != labels.end());  // late's chain, not c2's epilogue
  CHECK(std::find(labels.begin(), labels.end(), "c3") != labels.end());  // [1,1,6,1] is neither per channel nor full
  check_graph(b, {random_tensor({1, 3, 6, 6}, DType::F32, 433)}, 1e-4);  // Exp magnifies the conv's rounding
}

TEST_CASE("lowering: a chain reading a MatMul/Conv result twice (GELU, HardSwish as exported) joins its epilogue") {
  auto scalar = [](GraphBuilder& b, float v) { return b.constant(*Tensor::from_f32(std::vector<int64_t>{}, std::vector<float>{v})); };
  {  // x * 0.5 * (1 + erf(x / sqrt 2)) after a MatMul and its bias: one kernel
    GraphBuilder b("gelu_exported");
    auto x = b.input("x", DType::F32, {2, 9, 40});
    auto y = b.op1("MatMul", {x, b.constant(random_tensor({40, 70}, DType::F32, 470))}, {}, "mm");
    y = b.op1("Add", {y, b.constant(random_tensor({70}, DType::F32, 471))}, {}, "bias");
    auto e = b.op1("Erf", {b.op1("Div", {y, scalar(b, 1.4142135f)}, {}, "div")}, {}, "erf");
    auto g = b.op1("Mul", {y, b.op1("Add", {e, scalar(b, 1.0f)}, {}, "add1")}, {}, "mul");
    b.output(b.op1("Mul", {g, scalar(b, 0.5f)}, {}, "half"), "out");
    CHECK(step_labels(b) == std::vector<std::string>{"mm+bias+div+erf+add1+mul+half"});
    check_graph(b, {random_tensor({2, 9, 40}, DType::F32, 472, -3, 3)}, 1e-5);
  }
  {  // HardSwish as x * Clip(x + 3, 0, 6) / 6 after a Conv; then the same with x read outside
    for (const bool second_reader : {false, true}) {
      CAPTURE(second_reader);
      GraphBuilder b("hardswish_exported");
      auto x = b.input("x", DType::F32, {1, 3, 8, 8});
      auto c = b.op1("Conv", {x, b.constant(random_tensor({5, 3, 3, 3}, DType::F32, 473))}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
      auto r = b.op1("Clip", {b.op1("Add", {c, scalar(b, 3.0f)}, {}, "add3"), scalar(b, 0.0f), scalar(b, 6.0f)}, {}, "clip");
      auto h = b.op1("Div", {b.op1("Mul", {c, r}, {}, "mul"), scalar(b, 6.0f)}, {}, "div");
      b.output(h, "out");
      if (second_reader) b.output(b.op1("Sigmoid", {c}, {}, "other"), "other");  // conv's value must stay stored
      const auto labels = step_labels(b);
      if (second_reader)
        CHECK(std::find(labels.begin(), labels.end(), "conv") != labels.end());
      else
        CHECK(labels == std::vector<std::string>{"conv+add3+clip+mul+div"});
      check_graph(b, {random_tensor({1, 3, 8, 8}, DType::F32, 474, -2, 2)}, 1e-5);
    }
  }
}

// An F16-stored MatMul fuses overflow-transparent consumers (Relu, Add) into its epilogue, but
// not one that could hide its Inf behind a finite value (Sigmoid(Inf) = 1); FP8 never fuses.
TEST_CASE("lowering: F16 producers fuse only overflow-transparent epilogue steps") {
  GraphBuilder b("f16fuse");
  auto x = b.input("x", DType::F32, {2, 4});
  auto w = b.constant("w", *Tensor::from_f32({4, 4}, std::vector<float>(16, 0.5f)));
  auto m1 = b.op1("MatMul", {x, w}, {}, "m1");
  auto r = b.op1("Relu", {m1}, {}, "r");
  auto a = b.op1("Add", {r, b.scalar(1.0f)}, {}, "a");
  auto m2 = b.op1("MatMul", {a, w}, {}, "m2");
  b.output(b.op1("Sigmoid", {m2}, {}, "s"), "y");
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto labels = [&](DType t) {
    std::vector<DType> storage(g->values().size(), DType::F32);
    for (ValueId v : {m1, r, a, m2}) storage[v] = t;
    auto steps = jit::lower(*g, storage);
    REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
    std::vector<std::string> out;
    for (const auto& s : *steps) out.push_back(s.label);
    return out;
  };
  CHECK(labels(DType::F16) == std::vector<std::string>{"m1+r+a", "m2", "s"});
  CHECK(labels(DType::BF16) == std::vector<std::string>{"m1+r+a", "m2+s"});
  CHECK(labels(DType::F8E4M3) == std::vector<std::string>{"m1", "r+a", "m2", "s"});
}

TEST_CASE("codegen: Exp, Erf, Sigmoid and Gelu without libm (hpf_vexp, hpf_verf) over their whole range") {
  // Dense inputs across every range the approximations handle differently: the underflow to
  // denormals and zero, the overflow to Inf, erf's clamp at +-4; and NaN, +-Inf, +-0.
  std::vector<float> v;
  for (int k = 0; k <= 40000; ++k) v.push_back(-110.0f + 205.0f * k / 40000.0f);
  for (int k = 0; k <= 4000; ++k) v.push_back(-6.0f + 12.0f * k / 4000.0f);
  for (float e = -40; e <= 0; e += 0.25f) v.push_back(std::ldexp(1.0f, int(e)) * 1.1f), v.push_back(-v.back());
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7228f, 88.7229f, -87.3365f, -103.97f, -104.0f, 89.0f})
    v.push_back(x);
  const int64_t n = static_cast<int64_t>(v.size());
  struct Op {
    const char* name;
    double ulps, abs;  // allowed error: ulps of the reference's value, or an absolute bound
  };
  // Gelu's 1 + erf(x / sqrt 2) cancels for x < -4: there the bound is erf's absolute error times
  // |x| / 2. Results below F32's normal range (Sigmoid of x < -87 is 1 / (1 + Inf) = 0 in FP32,
  // the reference's FP64 gives a denormal) may be off by less than the smallest normal.
  for (const Op& op : {Op{"Exp", 2, 0}, Op{"Erf", 8, 5e-7}, Op{"Sigmoid", 3, 0}, Op{"Gelu", 8, 2e-6}}) {
    const std::string name = op.name;
    CAPTURE(name);
    GraphBuilder b("libm-free");
    auto x = b.input("x", DType::F32, {n});
    b.output(b.op1(op.name, {x}), "out");
    Tensor got, want;
    if (!run_both(b, {*Tensor::from_f32({n}, v)}, &got, &want)) return;
    const auto gv = got.to_f32(), wv = want.to_f32();
    int bad = 0;
    for (int64_t k = 0; k < n; ++k) {
      const float g = gv[k], w = wv[k];
      if (std::isnan(w) || std::isinf(w)) {
        bad += !(std::isnan(w) ? std::isnan(g) : g == w);
        continue;
      }
      const double ulp = std::nextafter(std::abs(w), INFINITY) - std::abs(w);
      const double d = std::abs(double(g) - w);
      if (d > op.ulps * ulp && d > op.abs && !(std::abs(w) < 1.2e-38f && d < 1.2e-38)) {
        if (++bad <= 5) MESSAGE(op.name << "(" << v[k] << ") = " << g << ", reference " << w);
      }
    }
    CHECK(bad == 0);
  }
}

namespace {

// Row i of a [., K] times column j of w [K, N] in FP64, and the sum of the products' magnitudes.
struct Fp64Dot {
  double sum = 0, mag = 0;
};
Fp64Dot fp64_dot(const std::vector<float>& a, const std::vector<float>& w, int64_t K, int64_t N, int64_t i, int64_t j) {
  Fp64Dot d;
  for (int64_t p = 0; p < K; ++p) {
    d.sum += double(a[i * K + p]) * w[p * N + j];
    d.mag += std::abs(double(a[i * K + p]) * w[p * N + j]);
  }
  return d;
}

}  // namespace

// matmul_wq "bf16t": BF16 activations and weights on AMX tiles where the plugin compiles for them
// (elsewhere the same source's plain-C sums), against FP64 sums of the same BF16 values: ragged
// rows, columns and K (the copied A block, zero padding), and a block read in place.
TEST_CASE("codegen: matmul_wq bf16t (AMX tiles) against FP64 sums of the BF16 values") {
  auto& cpu = plugin();
  if (!cpu.skip.empty()) {
    MESSAGE("skipped: " << cpu.skip);
    return;
  }
  for (const Ints& mnk : {Ints{37, 50, 70}, Ints{64, 64, 96}, Ints{130, 40, 32}}) {
    const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    const Tensor a = random_tensor({M, K}, DType::BF16, 700), w = random_tensor({K, N}, DType::F32, 701);
    auto pw = pack_weights(w, false, "bf16t");
    REQUIRE_MESSAGE(pw.ok(), pw.status().to_string());
    jit::KernelSpec spec;
    spec.family = "matmul_wq";
    spec.inputs = {{DType::BF16, {M, K}}, {DType::U8, pw->data.shape()}, {DType::F32, pw->scales.shape()}};
    spec.outputs = {{DType::F32, {M, N}}};
    spec.attrs = {{"wformat", std::string("bf16t")}, {"k", K}, {"n", N}, {"group", pw->group}};
    auto k = jit::generate_c(spec);
    REQUIRE_MESSAGE(k.ok(), k.status().to_string());
    Tensor y(DType::F32, {M, N});
    cpu.run(*k, {const_cast<std::byte*>(a.bytes().data()), pw->data.bytes().data(), pw->scales.bytes().data(),
                 y.bytes().data()});
    const std::vector<float> av = a.to_f32(), wv = w.cast(DType::BF16).to_f32(), yv = y.to_f32();
    double worst = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const Fp64Dot d = fp64_dot(av, wv, K, N, i, j);
        worst = std::max(worst, std::abs(yv[i * N + j] - d.sum) / (1 + d.mag));
      }
    CHECK_MESSAGE(worst <= 1e-5, "worst error relative to the sum of |products|: " << worst);
  }
}

namespace {

// matmul_wq on packed INT8 / INT4 weights, FP32 A of M rows.
jit::KernelSpec wq_spec(DType t, int64_t M, const PackedWeights& pw) {
  jit::KernelSpec spec;
  spec.family = "matmul_wq";
  spec.inputs = {{DType::F32, {M, pw.k}}, {DType::U8, pw.data.shape()}, {pw.scales.dtype(), pw.scales.shape()}};
  spec.outputs = {{DType::F32, {M, pw.n}}};
  spec.attrs = {{"wformat", std::string(t == DType::I8 ? "i8" : "i4")}, {"k", pw.k}, {"n", pw.n}, {"group", pw.group}};
  return spec;
}

}  // namespace

// matmul_wq's GEMV on INT8 / INT4 blocks, 4 rows at once and one at a time, both decodes: the host's (on Zen 4/5 the
// denormal one for rows it takes), the denormal one forced on any host, and, in the x86-64-v3 run,
// the exact one; against FP64 sums of the dequantised weights (hpf::dequantize). Rows the denormal
// decode takes (random, all positive, magnitudes from 1e-20 to 1e3) and one it leaves (a value of
// 2^110); ragged N (an item of fewer than 4 panels) and K (padded blocks), groups of 8, 32, 128 rows,
// all of K and 4 rows (row by row); K in streams of chunks with and without chunks left over
// (296: INT8 8 chunks in streams and a whole and a ragged one after; INT4 in groups of 8, 36 and
// 1); NaN and infinities; and DAZ/FTZ set by the caller, which the
// kernel must neither depend on nor leave changed.
TEST_CASE("codegen: matmul_wq INT8/INT4 GEMV, exact and denormal decodes, against FP64 sums") {
  auto& cpu = plugin();
  if (!cpu.skip.empty()) {
    MESSAGE("skipped: " << cpu.skip);
    return;
  }
  struct Shape {
    int64_t k, n;
    int group;
  };
  for (const char* prefix : {"", "#define HPF_PREFER_WQ_DENORMAL 1\n"}) {
    cpu.source_prefix = prefix;
    CAPTURE(prefix);
    for (DType t : {DType::I8, DType::I4})
      for (bool f32_scales : {false, true})
      for (const Shape& sh : {Shape{40, 90, 8}, Shape{13, 20, 13}, Shape{256, 70, 32}, Shape{256, 40, 128}, Shape{44, 33, 4},
                               Shape{296, 70, 8}}) {
        if (f32_scales && (t == DType::I8 || *prefix)) continue;  // i8's are F32; the scales read alike
        const int64_t K = sh.k, N = sh.n, M = 4;
        CAPTURE(dtype_name(t));
        CAPTURE(K);
        CAPTURE(N);
        CAPTURE(f32_scales);
        const Tensor w = random_tensor({K, N}, DType::F32, 900 + static_cast<uint32_t>(K + N));
        auto q = t == DType::I8 ? int8_weight_params(w, 1) : int4_weight_params(w, 0, sh.group);
        REQUIRE(q.ok());
        // INT4 scales that are not BF16 values (a plan file's) stay F32 in the packing.
        if (f32_scales)
          for (float& x : q->scales) x = std::nextafter(x, 1e30f);
        std::vector<std::byte> qs(storage_bytes(t, K * N));
        REQUIRE(quantize(w.to_f32(), w.shape(), *q, qs).ok());
        std::vector<float> wv(K * N);
        REQUIRE(dequantize(qs, w.shape(), *q, wv).ok());
        auto pw = pack_weights(w, false, t == DType::I8 ? "i8" : "i4", &*q);
        REQUIRE_MESSAGE(pw.ok(), pw.status().to_string());
        CHECK(pw->scales.dtype() == (t == DType::I4 && !f32_scales ? DType::BF16 : DType::F32));
        // The 4 rows at once (gemv_rows: exact decode), and one at a time (the single-row GEMV,
        // either decode).
        auto kern = jit::generate_c(wq_spec(t, M, *pw));
        REQUIRE_MESSAGE(kern.ok(), kern.status().to_string());
        auto kern1 = jit::generate_c(wq_spec(t, 1, *pw));
        REQUIRE_MESSAGE(kern1.ok(), kern1.status().to_string());
        // Rows: random; all positive (the offset's cancellation at its worst); magnitudes
        // 1e-20..1e3; random with one value of 2^110 (past the denormal decode's range).
        std::vector<float> a = random_tensor({M, K}, DType::F32, 901).to_f32();
        for (int64_t p = 0; p < K; ++p) {
          a[K + p] = std::abs(a[K + p]) * 1.5f;
          a[2 * K + p] = a[2 * K + p] * std::pow(10.0f, float(p % 24) - 20.0f);
        }
        a[3 * K + K / 2] = std::ldexp(1.0f, 110);
        auto check = [&](const std::vector<float>& av, int64_t rows) {
          for (bool one_row : {false, true}) {
            CAPTURE(one_row);
            Tensor y(DType::F32, {M, N});
            if (!one_row)
              cpu.run(*kern, {const_cast<float*>(av.data()), pw->data.bytes().data(), pw->scales.bytes().data(),
                              y.bytes().data()});
            else
              for (int64_t i = 0; i < M; ++i)
                cpu.run(*kern1, {const_cast<float*>(av.data() + i * K), pw->data.bytes().data(), pw->scales.bytes().data(),
                                 y.bytes().data() + i * N * 4});
            const std::vector<float> yv = y.to_f32();
            int64_t bad = 0;
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < N; ++j) {
                const auto [want, mag] = fp64_dot(av, wv, K, N, i, j);
                const double got = yv[i * N + j];
                const bool ok = std::isnan(want) ? std::isnan(got)
                                : std::isinf(want) ? got == want
                                                   : std::abs(got - want) <= 1e-5 * mag + 1e-35;
                if (!ok && bad++ < 3) MESSAGE("row " << i << " column " << j << ": " << got << " want " << want << " (sum of |products| " << mag << ")");
              }
            CHECK(bad == 0);
          }
        };
        check(a, M);
        // NaN and infinities in A (the denormal decode leaves such rows to the exact one).
        std::vector<float> special = a;
        special[1] = std::numeric_limits<float>::quiet_NaN();
        special[K + 2] = std::numeric_limits<float>::infinity();
        special[2 * K + K - 1] = -std::numeric_limits<float>::infinity();
        check(special, M);
      }
  }
  // DAZ and FTZ set in the calling thread (which runs a launch of one range): the same results,
  // and MXCSR as it was.
  cpu.source_prefix = "#define HPF_PREFER_WQ_DENORMAL 1\n";
  const int64_t K = 64, N = 48;
  const Tensor w = random_tensor({K, N}, DType::F32, 950);
  auto q = int4_weight_params(w, 0, 32);
  REQUIRE(q.ok());
  auto pw = pack_weights(w, false, "i4", &*q);
  REQUIRE(pw.ok());
  auto kern = jit::generate_c(wq_spec(DType::I4, 1, *pw));
  REQUIRE(kern.ok());
  const Tensor a = random_tensor({1, K}, DType::F32, 951);
  Tensor y0(DType::F32, {1, N}), y1(DType::F32, {1, N});
  auto args = [&](Tensor& y) {
    return std::vector<void*>{const_cast<std::byte*>(a.bytes().data()), pw->data.bytes().data(), pw->scales.bytes().data(),
                              y.bytes().data()};
  };
  cpu.run(*kern, args(y0));
  const unsigned before = _mm_getcsr();
  _mm_setcsr(before | 0x8040u);  // FTZ, DAZ
  cpu.run(*kern, args(y1));
  const unsigned after = _mm_getcsr();
  _mm_setcsr(before);
  CHECK(after == (before | 0x8040u));
  CHECK(std::memcmp(y0.bytes().data(), y1.bytes().data(), y0.nbytes()) == 0);
  cpu.source_prefix.clear();
}

// The FP32 GEMMs' items of many rows over a deep K span several 64-column blocks
// (jit::gemm_wide_blocks): B an input (packed by each block's first row tile) with a ragged last
// block of 16 columns, Y aligned and not, an epilogue; packed FP32 weights (matmul_wq); each with a
// ragged last row tile. The kernels are checked to take wide blocks and to run the row tiles in
// groups per panel (the last group short), and their outputs against the reference interpreter and
// FP64 sums.
TEST_CASE("codegen: FP32 GEMM in wide column blocks (many rows, deep K), B an input and packed weights") {
  CHECK(jit::gemm_wide_blocks(2048, 2048, 1) == 4);  // 8 items of 256 columns
  CHECK(jit::gemm_wide_blocks(2048, 512, 2) == 1);   // K not deeper than kGemmWideK
  CHECK(jit::gemm_wide_blocks(1024, 1024, 1) == 2);  // 1024^3: 8 items of 128 columns
  CHECK(jit::gemm_wide_blocks(1040, 1030, 1) == 2);  // 9 items of 128 columns, the last 16 wide
  CHECK(jit::gemm_wide_blocks(448, 2048, 1) == 1);   // 7 blocks: too few items to widen
  CHECK(jit::gemm_wide_blocks(448, 2048, 4) == 4);   // 4 row parts: 8 items of 256 columns
  const int64_t M = 262, K = 1030;  // one row part (264 rows: more than kGemmSliceRows), 43 tiles and 4 rows
  const Tensor a = random_tensor({M, K}, DType::F32, 960);
  {
    const int64_t N = 1040;
    GraphBuilder g("wide_b_input");
    auto x = g.input("a", DType::F32, {M, K});
    auto w = g.input("b", DType::F32, {K, N});
    g.output(g.op1("Relu", {g.add(g.matmul(x, w), g.constant(random_tensor({N}, DType::F32, 961)))}), "out");
    auto built = g.build();
    REQUIRE(built.ok());
    auto steps = jit::lower(*built, {});
    REQUIRE(steps.ok());
    REQUIRE(steps->size() == 1);
    auto k = jit::generate_c((*steps)[0].spec);
    REQUIRE(k.ok());
    CHECK(k->work_items == 9);
    CHECK(k->source.find("const i64 jc = w % 9LL * 128LL") != std::string::npos);
    // row tiles in groups of kGemmGroupTiles per panel (11 groups, the last of 2 tiles and 4 rows)
    CHECK(k->source.find("ig += " + std::to_string(jit::kGemmGroupTiles * jit::kGemmMR) + "LL") != std::string::npos);
    const Tensor b = random_tensor({K, N}, DType::F32, 962);
    struct Offset {  // operand_offset for one check, -1 again however it ends
      explicit Offset(int64_t o) { operand_offset = o; }
      ~Offset() { operand_offset = -1; }
    };
    for (const int64_t offset : {-1, 4}) {  // Y aligned, and not (every panel through the tile)
      CAPTURE(offset);
      Offset at(offset);
      check_graph(g, {a, b}, 1e-4);
    }
  }
  auto& cpu = plugin();
  if (!cpu.skip.empty()) {
    MESSAGE("skipped: " << cpu.skip);
    return;
  }
  const int64_t N = 2048;  // 32 blocks: one row part, 8 items of 256 columns
  const Tensor w = random_tensor({K, N}, DType::F32, 963);
  auto pw = pack_weights(w, false, "f32", nullptr);
  REQUIRE_MESSAGE(pw.ok(), pw.status().to_string());
  jit::KernelSpec spec;
  spec.family = "matmul_wq";
  spec.inputs = {{DType::F32, {M, K}}, {DType::U8, pw->data.shape()}, {pw->scales.dtype(), pw->scales.shape()}};
  spec.outputs = {{DType::F32, {M, N}}};
  spec.attrs = {{"wformat", std::string("f32")}, {"k", K}, {"n", N}, {"group", pw->group}};
  auto k = jit::generate_c(spec);
  REQUIRE_MESSAGE(k.ok(), k.status().to_string());
  CHECK(k->work_items == 8);
  CHECK(k->source.find("* 256LL, j1 = j0 + 256LL") != std::string::npos);
  CHECK(k->source.find("ig += " + std::to_string(jit::kGemmGroupTiles * jit::kGemmMR) + "LL") != std::string::npos);
  // Y 64-byte aligned, as the Session's buffers are (the kernel stores whole vectors to it)
  std::vector<float> ybuf(M * N + 16);
  float* yv = ybuf.data() + (64 - reinterpret_cast<uintptr_t>(ybuf.data()) % 64) % 64 / sizeof(float);
  cpu.run(*k, {const_cast<std::byte*>(a.bytes().data()), pw->data.bytes().data(), pw->scales.bytes().data(), yv});
  const std::vector<float> av = a.to_f32(), wv = w.to_f32();
  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const auto [want, mag] = fp64_dot(av, wv, K, N, i, j);
      if (std::abs(yv[i * N + j] - want) > 1e-5 * mag && bad++ < 3)
        MESSAGE("row " << i << " column " << j << ": " << yv[i * N + j] << " want " << want);
    }
  CHECK(bad == 0);
}
