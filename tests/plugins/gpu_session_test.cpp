// The Session on GPU-dialect devices, without a GPU: mock plugins (gpu_mock_plugin.c) speaking
// "cuda" and "hip" take the generated source only if it is GPU-dialect source, keep device memory
// on the host and record each launch instead of running it. Checked: every kernel step of the
// built-in models is a GPU kernel launched once per run with its arguments inside the
// executable's buffers; a node no GPU generator takes runs on the reference between GPU buffers
// with the reference's result; the formats offered to the planner are those the GPU lowering
// stores; an unknown dialect is refused by name. The kernels' results are the device suite's
// (tests/device) to check, on a GPU.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "hpf/models.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "tests/runtime/random_tensor.hpp"

using namespace hpf;

namespace {

struct GmLaunch {  // gm_launch in gpu_mock_plugin.c
  char name[64];
  int64_t work_items, grain;
  uint32_t grid0, block0;
  size_t arg_count;
  int args_in_buffers;
};
using LaunchesFn = const GmLaunch* (*)(size_t*, int);

// HPF_PLUGIN_PATH is read when the shared plugin host is first used: before any test runs.
const bool kPathSet = [] { return setenv("HPF_PLUGIN_PATH", HPF_GPU_MOCK_DIR, 1) == 0; }();

LaunchesFn launches_of(const std::string& plugin) {
  const std::string path = std::string(HPF_GPU_MOCK_DIR) + "/libhpf-plugin-" + plugin + ".so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);  // the plugin host's own copy
  REQUIRE_MESSAGE(lib, "plugin " << path << " is not loaded");
  auto fn = reinterpret_cast<LaunchesFn>(dlsym(lib, "gm_launches"));
  REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
  return fn;
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor>& t) {
  std::vector<std::vector<int64_t>> s;
  for (const Tensor& x : t) s.push_back(x.shape());
  return s;
}

Session mock_session(const std::string& plugin, std::shared_ptr<const Plan> plan = nullptr) {
  REQUIRE(kPathSet);
  SessionOptions so;
  so.plugin = plugin;
  so.use_cache = false;
  so.plan = std::move(plan);
  auto s = Session::create(so);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  return std::move(s).value();
}

}  // namespace

TEST_CASE("gpu session: every kernel of the built-in models is a GPU kernel, launched once per run inside its buffers") {
  for (const char* plugin : {"gpu_mock", "gpu_mock_hip"}) {
    Session s = mock_session(plugin);
    CHECK(s.device().find("mock GPU (sm_90)") != std::string::npos);
    const LaunchesFn launches = launches_of(plugin);
    for (const char* model : {"mlp", "bert-tiny", "cnn-small", "lstm-lm"}) {
      CAPTURE(plugin);
      CAPTURE(model);
      auto g = models::builtin(model);
      REQUIRE(g.ok());
      auto inputs = models::example_inputs(*g, 7, 2);
      REQUIRE(inputs.ok());
      auto exe = s.compile(*g, shapes_of(*inputs));
      REQUIRE_MESSAGE(exe.ok(), exe.status().message());
      CHECK(exe->compile_stats().fallbacks == 0);
      CHECK(exe->compile_stats().kernels > 0);
      size_t n = 0;
      launches(&n, /*reset=*/1);
      REQUIRE(exe->run(*inputs).ok());  // untimed: a GPU's steps are not timed by default
      for (const StepProfile& p : exe->profile())
        if (p.kind == "kernel") CHECK(p.calls == 0);
      launches(&n, 0);
      const size_t untimed = n;
      launches(&n, 1);
      exe->set_step_timing(true);
      REQUIRE(exe->run(*inputs).ok());
      const GmLaunch* l = launches(&n, 0);
      int64_t kernel_steps = 0;
      for (const StepProfile& p : exe->profile())
        if (p.kind == "kernel") kernel_steps += p.calls;
      CHECK(kernel_steps > 0);
      CHECK(static_cast<int64_t>(n) == kernel_steps);
      CHECK(untimed == n);
      for (size_t k = 0; k < n; ++k) {
        CAPTURE(l[k].name);
        CHECK(std::string(l[k].name).rfind("hpf_", 0) == 0);
        CHECK(l[k].args_in_buffers == 1);
        CHECK(l[k].arg_count >= 2);
        // No grid or block of its own: the GPU launch rule, grain threads per block.
        CHECK(l[k].grid0 == 0);
        CHECK(l[k].block0 == 0);
        CHECK(l[k].grain >= 32);
        CHECK(l[k].grain <= 1024);
        CHECK(l[k].work_items > 0);
      }
    }
  }
}

TEST_CASE("gpu session: a node without a GPU generator runs on the reference between GPU buffers") {
  // ConvTranspose has no GPU generator: the reference computes it from the downloaded input and
  // uploads the result, which the graph's output then reads back.
  GraphBuilder b("deconv");
  const ValueId x = b.input("x", DType::F32, make_shape(std::vector<int64_t>{1, 3, 5, 5}));
  const ValueId w = b.constant("w", test::random_tensor({3, 2, 3, 3}, 11));
  const ValueId y = b.op1("ConvTranspose", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}});
  b.output(y);
  auto g = b.build();
  REQUIRE(g.ok());
  const Tensor in = test::random_tensor({1, 3, 5, 5}, 12);
  Session s = mock_session("gpu_mock");
  auto exe = s.compile(*g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().message());
  CHECK(exe->compile_stats().fallbacks == 1);
  auto out = exe->run({in});
  REQUIRE(out.ok());
  auto ref = ref::run(*g, {in});
  REQUIRE(ref.ok());
  REQUIRE((*out)[0].shape() == (*ref)[0].shape());
  CHECK((*out)[0].to_f32() == (*ref)[0].to_f32());
}

TEST_CASE("gpu session: the planner is offered the float formats the GPU lowering stores, no INT8 or FP8 compute") {
  Session s = mock_session("gpu_mock");
  const DeviceFormats f = s.device_formats();
  CHECK_FALSE(f.int8_compute);
  CHECK_FALSE(f.fp8_compute);
  CHECK(f.int8_classes.empty());
  for (DType t : {DType::F32, DType::TF32, DType::BF16, DType::F16})
    CHECK(std::find(f.storage.begin(), f.storage.end(), t) != f.storage.end());
  for (DType t : {DType::F8E4M3, DType::F8E5M2, DType::I8, DType::I4})
    CHECK(std::find(f.storage.begin(), f.storage.end(), t) == f.storage.end());
}

TEST_CASE("gpu session: a plan's INT8 nodes still compile on a GPU device, computing in their storage formats") {
  auto g = models::builtin("mlp");
  REQUIRE(g.ok());
  auto plan = std::make_shared<Plan>();
  plan->graph = g->name();
  for (const Node& n : g->nodes()) {
    NodePlan p;
    p.name = n.name;
    p.op = n.op;
    if (n.op == "MatMul" || n.op == "Gemm") {
      p.mode = Mode::int8;
      p.weights = DType::I8;
      p.accumulation = DType::I32;
    }
    plan->nodes.push_back(p);
  }
  Session s = mock_session("gpu_mock", plan);
  auto inputs = models::example_inputs(*g, 7, 1);
  REQUIRE(inputs.ok());
  auto exe = s.compile(*g, shapes_of(*inputs));
  REQUIRE_MESSAGE(exe.ok(), exe.status().message());
  CHECK(exe->compile_stats().int8_compute_nodes.empty());
  CHECK(exe->compile_stats().fallbacks == 0);
}

TEST_CASE("gpu session: a device speaking a dialect libhpf has no generators for is refused by name") {
  REQUIRE(kPathSet);
  SessionOptions so;
  so.plugin = "gpu_mock_vulkan";
  so.use_cache = false;
  auto s = Session::create(so);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("speaks dialect 'vulkan'; this libhpf generates c, cuda and hip kernels") !=
        std::string::npos);
}
