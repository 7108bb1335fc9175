// hpf bench gemm: one MatMul (A [M, K] input, B [K, N] constant) compiled by the Session with
// the plan a --dtype names, timed through Executable::run (median, min and max after warm-up).
//   f32    libhpf's FP32 GEMM kernel
//   bf16w  fp16w  int8w  int4w   weights in that format (INT8 per channel, INT4 groups of 32),
//          FP32 activations and compute (matmul_wq kernels)
//   int8   the int8 plan with A held in INT8 (an Identity with a calibrated scale before the
//          MatMul): u8 x s8 -> s32 (matmul_i8), the output fake-quantised with its scale
//   u8s8s32  ONNX MatMulInteger: u8 A, a constant s8 B, s32 C (matmul_i8 with an integer A)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <nlohmann/json.hpp>

#include "apps/hpf/cli.hpp"
#include "hpf/calibration.hpp"
#include "hpf/planner.hpp"
#include "hpf/precision.hpp"
#include "hpf/session.hpp"

namespace hpf::cli {
namespace {

const char* kUsage =
    "usage: hpf bench gemm --m M --n N --k K [--dtype f32|int8|bf16w|fp16w|int8w|int4w|u8s8s32] [--threads N]\n"
    "                      [--runs N] [--json]\n";

Expected<int64_t> positive(const Args& a, const std::string& name, int64_t def) {
  const std::string v = a.option(name);
  if (v.empty()) {
    if (def > 0) return def;
    return Status::invalid(name + " is required");
  }
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (!end || *end || x <= 0) return Status::invalid(name + " " + v + ": expected a positive integer");
  return static_cast<int64_t>(x);
}

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(numel(shape));
  for (float& x : v) x = d(g);
  return *Tensor::from_f32(shape, v);
}

// Bytes uniform over 0..255 as a tensor of `t` (U8 or I8).
Tensor random_bytes(DType t, std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 g(seed);
  Tensor x(t, std::move(shape));
  for (std::byte& b : x.bytes()) b = static_cast<std::byte>(g() & 0xff);
  return x;
}

// The plan for --dtype on the one-node graph `g` (null for f32), calibrated on `a`.
Expected<std::shared_ptr<Plan>> plan_for(const std::string& dtype, const Graph& g, const DeviceFormats& f,
                                         const Tensor& a) {
  Mode m;
  if (dtype == "f32" || dtype == "u8s8s32") return std::shared_ptr<Plan>();
  if (dtype == "bf16w") m = Mode::bf16;
  else if (dtype == "fp16w") m = Mode::fp16;
  else if (dtype == "int8w" || dtype == "int8") m = Mode::int8;
  else if (dtype == "int4w") m = Mode::int4_weights;
  else return Status::invalid("--dtype " + dtype + ": expected f32, int8, bf16w, fp16w, int8w, int4w or u8s8s32");
  HPF_ASSIGN_OR_RETURN(Plan plan, plan_from_policy(g, Policy::uniform(m), f));
  NodePlan& p = plan.nodes[0];
  if (plan.nodes.back().mode != m)
    return Status::unsupported("--dtype " + dtype + ": the device has no " + mode_name(m) + " MatMul (plan gave " +
                               mode_name(plan.nodes.back().mode) + ")");
  NodePlan& mm = plan.nodes.back();
  if (dtype == "int8w") {  // weight-only: activations, accumulation and output stay FP32
    mm.activation_quant.reset();
    mm.storage = DType::F32;
    mm.accumulation = DType::F32;
  }
  std::vector<std::string> observed;
  if (dtype == "int8") {  // A held in INT8 by its producer (an Identity): u8 x s8 -> s32
    p.mode = Mode::int8;
    p.storage = DType::I8;
    p.activation_quant = QuantParams{DType::I8, {}, {}, -1, 0};
    observed.push_back(g.value(g.node(0).outputs[0]).name);
  }
  if (mm.activation_quant) observed.push_back("y");
  std::map<std::string, Observer> obs;
  if (!observed.empty()) HPF_RETURN_IF_ERROR(observe_values(g, {{a}}, observed, obs));
  PlannerOptions po;
  po.device = f;  // the device's INT8 weight range
  HPF_RETURN_IF_ERROR(calibrate_plan(g, plan, obs, po));
  return std::make_shared<Plan>(std::move(plan));
}

}  // namespace

int cmd_bench_gemm(const std::vector<std::string>& argv) {
  auto parsed = parse_args("bench gemm", argv, {"--json", "--help"}, {"--m", "--n", "--k", "--dtype", "--threads", "--runs"});
  if (!parsed.ok()) return fail(parsed.status().message() + "\n" + kUsage, 2);
  const Args& a = *parsed;
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  auto M = positive(a, "--m", 0), N = positive(a, "--n", 0), K = positive(a, "--k", 0);
  auto runs = positive(a, "--runs", 10), threads = positive(a, "--threads", -1);
  for (const auto* e : {&M, &N, &K, &runs})
    if (!e->ok()) return fail(e->status().message() + "\n" + kUsage, 2);
  if (!a.option("--threads").empty()) {
    if (!threads.ok()) return fail(threads.status().message(), 2);
    setenv("HPF_NUM_THREADS", std::to_string(*threads).c_str(), 1);  // read when the plugin starts
  }
  const std::string dtype = a.option("--dtype", "f32");

  const bool integer = dtype == "u8s8s32";
  GraphBuilder b("gemm");
  auto x = b.input("a", integer ? DType::U8 : DType::F32, make_shape(std::vector<int64_t>{*M, *K}));
  auto w = b.constant("b", integer ? random_bytes(DType::I8, {*K, *N}, 2) : random_tensor(std::vector<int64_t>{*K, *N}, 2));
  if (dtype == "int8") x = b.op1("Identity", {x}, {}, "a_int8");  // holds A quantised (no kernel: a view)
  b.output(b.op1(integer ? "MatMulInteger" : "MatMul", {x, w}, {}, "mm"), "y");
  auto g = b.build();
  if (!g.ok()) return fail(g.status().to_string());
  const Tensor in = integer ? random_bytes(DType::U8, {*M, *K}, 1) : random_tensor(std::vector<int64_t>{*M, *K}, 1);

  SessionOptions so;
  so.use_cache = true;
  auto session = Session::create(so);
  if (!session.ok()) return fail(session.status().to_string());
  auto plan = plan_for(dtype, *g, session->device_formats(), in);
  if (!plan.ok()) return fail(plan.status().message(), plan.status().code() == StatusCode::invalid_argument ? 2 : 1);
  session->set_plan(*plan);
  auto exe = session->compile(*g);
  if (!exe.ok()) return fail(exe.status().to_string());
  const CompileStats& st = exe->compile_stats();
  if (dtype != "f32" && st.packed_weight_nodes.empty())
    return fail("--dtype " + dtype + ": the MatMul did not get a packed-weight kernel");
  if ((dtype == "int8" || integer) && st.int8_compute_nodes.empty())
    return fail("--dtype " + dtype + ": the MatMul did not get an INT8 kernel");

  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  const std::vector<Tensor> inputs{in};  // built once: a copy per run would be timed too
  for (int64_t r = -2; r < *runs; ++r) {  // two warm-up runs
    const auto t0 = Clock::now();
    auto out = exe->run(inputs);
    const double t = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!out.ok()) return fail(out.status().to_string());
    if (r >= 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  const double gflops = 2.0 * double(*M) * double(*N) * double(*K) / (median * 1e6);
  const char* env_threads = std::getenv("HPF_NUM_THREADS");
  const int64_t nthreads = env_threads ? std::atoll(env_threads) : 0;  // 0: the plugin's default
  if (a.flag("--json")) {
    nlohmann::json j = {{"dtype", dtype},     {"m", *M},          {"n", *N},           {"k", *K},
                        {"threads", nthreads}, {"runs", *runs},    {"median_ms", median}, {"min_ms", ms.front()},
                        {"max_ms", ms.back()}, {"gflops", gflops}, {"weight_bytes", st.weight_bytes},
                        {"kernel", !st.int8_compute_nodes.empty() ? "matmul_i8" : st.packed_weight_nodes.empty() ? "matmul" : "matmul_wq"}, {"device", st.device}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("gemm %lldx%lldx%lld %s, %s threads, %lld runs: median %.4f ms (min %.4f, max %.4f), %.2f GFLOP/s, "
                "weights %lld bytes\n",
                static_cast<long long>(*M), static_cast<long long>(*N), static_cast<long long>(*K), dtype.c_str(),
                nthreads ? std::to_string(nthreads).c_str() : "default", static_cast<long long>(*runs), median,
                ms.front(), ms.back(), gflops, static_cast<long long>(st.weight_bytes));
  }
  return 0;
}

}  // namespace hpf::cli
