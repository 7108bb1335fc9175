// The CUDA backend conformance suite: generated CUDA kernels run on the GPU through the plugin
// API and compared with the reference interpreter (include/hpf/reference.hpp).
//   - every MatMul/Gemm and Conv case of tests/plugins/cuda/cuda_cases.hpp (every instruction
//     and format, odd shapes, edges, transposes, broadcast batches, groups, padding);
//   - every elementwise, softmax, matmul and conv kernel of the built-in models bert-tiny and
//     cnn-small, in f32, f16 and bf16 storage, each fed the reference's values of its inputs
//     and compared with the reference's value of its output.
// Whole models through the Session on the GPU: cuda_session_test.cpp.
// Without a GPU every case prints "skipped: <reason>" (ctest counts it as skipped).
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "cuda_cases.hpp"
#include "doctest/doctest.h"
#include "gpu_kernel_runner.hpp"
#include "hpf/models.hpp"
#include "hpf/reference.hpp"
#include "jit/codegen/cuda_codegen.hpp"
#include "jit/codegen/cuda_gemm.hpp"
#include "jit/codegen/lowering.hpp"

using namespace hpf;

namespace {

// The build's plugin directory, or $HPF_DEVICE_PLUGIN_DIR (a build carried to a GPU machine
// by scripts/device-check.sh lives elsewhere).
device::GpuTarget& gpu() {
  static device::GpuTarget t = [] {
    const char* dir = std::getenv("HPF_DEVICE_PLUGIN_DIR");
    return device::find_gpu(dir && *dir ? dir : HPF_TEST_PLUGIN_OUTPUT_DIR);
  }();
  return t;
}

#define NEED_GPU()                                   \
  if (!gpu().plugin) {                               \
    MESSAGE("skipped: " << gpu().why);               \
    return;                                          \
  }

std::vector<std::byte> to_bytes(DType t, const std::vector<float>& v) {
  std::vector<std::byte> b(storage_bytes(t, v.size()));
  REQUIRE(encode_span(t, v, b).ok());
  return b;
}

std::vector<float> from_bytes(DType t, const std::vector<std::byte>& b, size_t n) {
  std::vector<float> v(n);
  REQUIRE(decode_span(t, b, v).ok());
  return v;
}

// Error of `y` against `ref`: max |y - ref| over max |ref| (non-finite references must match).
double normalized_error(const std::vector<float>& y, const std::vector<float>& ref) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::isfinite(ref[i])) scale = std::max(scale, double(std::fabs(ref[i])));
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i])) {
      if (!(std::isnan(ref[i]) ? std::isnan(y[i]) : y[i] == ref[i])) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(double(y[i]) - ref[i]));
  }
  return worst / scale;
}

// What a kernel storing format t after FP32 accumulation may deviate by (relative to max |ref|).
double tolerance(DType y, bool tf32_compute) {
  double t = 1e-5;
  switch (y) {
    case DType::F16: t = 2e-3; break;
    case DType::BF16: t = 1.6e-2; break;
    case DType::TF32: t = 2e-3; break;
    case DType::F8E4M3: t = 1.3e-1; break;
    case DType::F8E5M2: t = 2.6e-1; break;
    case DType::I32: t = 0; break;
    default: break;
  }
  return std::max(t, tf32_compute ? 4e-3 : 0.0);
}

// Random operand values exactly representable in t: normal(0,1) rounded (integers in range).
std::vector<float> random_values(DType t, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ud(t == DType::U8 ? 0 : -128, t == DType::U8 ? 255 : 127);
  std::vector<float> v(n);
  for (float& x : v) x = (t == DType::I8 || t == DType::U8) ? float(ud(rng)) : round_to(t, nd(rng));
  return v;
}

// The reference for a case: the case's op on FP32 inputs holding the operands' values.
std::vector<float> reference(const cuda_cases::Case& c, const std::vector<std::vector<float>>& values) {
  Graph g("case");
  std::vector<ValueId> ins;
  std::vector<Tensor> tensors;
  for (size_t k = 0; k < c.spec.inputs.size(); ++k) {
    const auto& shape = c.spec.inputs[k].shape;
    auto v = g.add_input("in" + std::to_string(k), DType::F32, make_shape(shape));
    REQUIRE(v.ok());
    ins.push_back(*v);
    auto t = Tensor::from_f32(shape, values[k]);
    REQUIRE(t.ok());
    tensors.push_back(std::move(t).value());
  }
  Attributes attrs = c.spec.attrs;
  attrs.erase("gemm");
  auto n = g.add_node(c.op, "op", ins, {"y"}, attrs);
  REQUIRE_MESSAGE(n.ok(), n.status().message());
  REQUIRE(g.add_output(g.node(*n).outputs[0]).ok());
  REQUIRE(g.infer_shapes().ok());
  auto out = ref::run(g, tensors);
  REQUIRE_MESSAGE(out.ok(), c.label << ": " << out.status().message());
  return (*out)[0].to_f32();
}

// Runs one case on the GPU; returns its error (or fails the test).
void run_case(const cuda_cases::Case& c) {
  auto k = jit::generate_cuda(c.spec);
  REQUIRE_MESSAGE(k.ok(), c.label << ": " << k.status().message());
  std::vector<std::vector<float>> values;
  std::vector<std::vector<std::byte>> bytes;
  uint64_t seed = 11;
  for (const auto& in : c.spec.inputs) {
    values.push_back(random_values(in.dtype, static_cast<size_t>(numel(in.shape)), seed++));
    bytes.push_back(to_bytes(in.dtype, values.back()));
  }
  const auto& y = c.spec.outputs[0];
  const size_t n = static_cast<size_t>(numel(y.shape));
  auto l = device::LoadedKernel::make(gpu(), *k, bytes, storage_bytes(y.dtype, n));
  REQUIRE_MESSAGE(l.ok(), c.label << ": " << l.status().message());
  REQUIRE_MESSAGE(l->launch().ok(), c.label);
  auto out = l->output();
  REQUIRE_MESSAGE(out.ok(), c.label << ": " << out.status().message());
  const std::vector<float> got = from_bytes(y.dtype, *out, n), want = reference(c, values);
  const bool tf32 = jit::cuda_gemm_instruction(c.spec.inputs[0].dtype, c.spec.inputs[1].dtype, c.spec.accumulation) ==
                    "mma.tf32";
  const double err = normalized_error(got, want), tol = tolerance(y.dtype, tf32);
  MESSAGE(c.label << ": max error " << err << " (tolerance " << tol << ")");
  CHECK_MESSAGE(err <= tol, c.label << ": max error " << err << " > " << tol);
}

}  // namespace

TEST_CASE("device cuda: MatMul/Gemm in every format against the reference") {
  NEED_GPU();
  MESSAGE("GPU: " << gpu().label());
  for (const auto& f : cuda_cases::matmul_formats())
    for (const auto& c : cuda_cases::matmul_cases(f, true)) run_case(c);
}

TEST_CASE("device cuda: Conv (grouped, depthwise, 1-D) in every format against the reference") {
  NEED_GPU();
  for (const auto& f : cuda_cases::conv_formats())
    for (const auto& c : cuda_cases::conv_cases(f.a, f.b, f.y)) run_case(c);
}

TEST_CASE("device cuda: every CUDA kernel of bert-tiny and cnn-small in f32 f16 bf16 against the reference") {
  NEED_GPU();
  for (const char* model : {"bert-tiny", "cnn-small"}) {
    auto g = cuda_cases::concrete_builtin(model);
    REQUIRE_MESSAGE(g.ok(), g.status().message());
    auto inputs = models::example_inputs(*g);
    REQUIRE(inputs.ok());
    // The reference's value of every node output: all of them made graph outputs.
    Graph all = *g;
    std::vector<bool> is_out(all.values().size(), false);
    for (ValueId v : all.outputs()) is_out[v] = true;
    for (const Node& n : all.nodes())
      for (ValueId v : n.outputs)
        if (v != kNoValue && !is_out[v]) {
          REQUIRE(all.add_output(v).ok());
          is_out[v] = true;
        }
    auto outs = ref::run(all, *inputs);
    REQUIRE_MESSAGE(outs.ok(), outs.status().message());
    std::map<ValueId, std::vector<float>> value;
    for (size_t k = 0; k < all.outputs().size(); ++k) value[all.outputs()[k]] = (*outs)[k].to_f32();
    for (size_t k = 0; k < g->inputs().size(); ++k) value[g->inputs()[k]] = (*inputs)[k].to_f32();
    for (size_t v = 0; v < g->values().size(); ++v)
      if (g->values()[v].constant) value[static_cast<ValueId>(v)] = g->values()[v].constant->to_f32();

    for (DType format : {DType::F32, DType::F16, DType::BF16}) {
      std::vector<DType> storage(g->values().size());
      for (size_t v = 0; v < storage.size(); ++v)
        storage[v] = g->values()[v].dtype == DType::F32 ? format : g->values()[v].dtype;
      auto steps = jit::lower(*g, storage, {}, jit::kGpuLowering);
      REQUIRE_MESSAGE(steps.ok(), steps.status().message());
      int ran = 0;
      for (const auto& s : *steps) {
        if (s.kind != jit::LoweredStep::Kind::kernel) continue;
        auto k = jit::generate_cuda(s.spec);
        if (!k.ok()) continue;  // a family without a CUDA generator: not this suite's concern
        std::vector<std::vector<std::byte>> bytes;
        for (size_t i = 0; i < s.inputs.size(); ++i) {
          // Inputs arrive as stored in their format (rounded once from the reference's value).
          bytes.push_back(to_bytes(s.spec.inputs[i].dtype, value.at(s.inputs[i])));
        }
        const auto& y = s.spec.outputs[0];
        const size_t n = static_cast<size_t>(numel(y.shape));
        auto l = device::LoadedKernel::make(gpu(), *k, bytes, storage_bytes(y.dtype, n));
        REQUIRE_MESSAGE(l.ok(), model << " " << s.label << ": " << l.status().message());
        REQUIRE(l->launch().ok());
        auto out = l->output();
        REQUIRE(out.ok());
        const std::vector<float> got = from_bytes(y.dtype, *out, n);
        const double err = normalized_error(got, value.at(s.outputs[0]));
        // Inputs rounded to the format, then every fused step rounded: a few units of the format.
        const double tol = format == DType::F32 ? 1e-4 : format == DType::F16 ? 1e-2 : 6e-2;
        CHECK_MESSAGE(err <= tol, model << " " << dtype_name(format) << " " << s.spec.family << " " << s.label
                                        << ": max error " << err << " > " << tol);
        ++ran;
      }
      MESSAGE(model << " " << dtype_name(format) << ": " << ran << " kernels ran on " << gpu().label());
      CHECK(ran > 3);
    }
  }
}

TEST_CASE("device cuda: plugin memory, timer and errors on the GPU") {
  NEED_GPU();
  Plugin& p = *gpu().plugin;
  const DeviceRecord& d = p.devices()[gpu().device];
  CHECK(d.score > 0);
  CHECK(d.architecture.rfind("sm_", 0) == 0);
  CHECK(d.memory_bytes > 0);
  CHECK(d.compute_units > 0);
  auto b = p.alloc(gpu().device, 1024);
  REQUIRE(b.ok());
  std::vector<uint8_t> in(1024), out(1024);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(b->copy_in(0, in.data(), in.size()).ok());
  REQUIRE(b->copy_out(0, out.data(), out.size()).ok());
  CHECK(in == out);
  auto t = p.create_timer(gpu().device);
  REQUIRE(t.ok());
  REQUIRE(t->start().ok());
  auto ns = t->stop();
  REQUIRE(ns.ok());
  CHECK(*ns < 1000000000ull);
  // A binary that is neither CUBIN nor PTX, and a missing kernel name, are clear errors.
  const std::byte junk[8] = {};
  auto bad = p.load(gpu().device, junk);
  CHECK_FALSE(bad.ok());
  auto bin = p.compile(gpu().device, "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }");
  REQUIRE(bin.ok());
  auto prog = p.load(gpu().device, *bin);
  REQUIRE(prog.ok());
  auto none = prog->kernel("not_there");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::not_found);
}
