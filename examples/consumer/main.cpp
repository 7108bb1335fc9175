// Builds a small graph with the public API, runs it on the reference interpreter, and measures
// what BF16 storage does to it. Exits non-zero if anything is off.
#include <cmath>
#include <cstdio>
#include <vector>

#include <hpf/hpf.hpp>

int main() {
  using namespace hpf;
  std::printf("libhpf %s (headers %s)\n", version(), HPF_VERSION_STRING);

  // y = softmax(relu(x @ w + b))
  GraphBuilder b("consumer");
  ValueId x = b.input("x", DType::F32, {Dim::sym("batch"), 3});
  std::vector<float> w = {1, 0, -1, 0.5f, 2, 0, -1, 1, 0.25f, 0, 1, 3};
  ValueId wv = b.constant("w", *Tensor::from_f32({3, 4}, w));
  ValueId bias = b.constant("b", *Tensor::from_f32({4}, std::vector<float>{0.1f, -0.2f, 0.3f, 0}));
  b.output(b.softmax(b.relu(b.add(b.matmul(x, wv), bias))), "y");
  Expected<Graph> g = b.build();
  if (!g.ok()) {
    std::fprintf(stderr, "build failed: %s\n", g.status().to_string().c_str());
    return 1;
  }

  Tensor input = *Tensor::from_f32({2, 3}, std::vector<float>{1, 2, 3, -1, 0.5f, 2});
  auto out = ref::run(*g, {input});
  if (!out.ok()) {
    std::fprintf(stderr, "run failed: %s\n", out.status().to_string().c_str());
    return 1;
  }
  const Tensor& y = (*out)[0];
  std::vector<float> v = y.to_f32();
  std::printf("y %s:", y.describe().c_str());
  for (float f : v) std::printf(" %.6f", f);
  std::printf("\n");
  for (int r = 0; r < 2; ++r) {
    float sum = 0;
    for (int c = 0; c < 4; ++c) sum += v[r * 4 + c];
    if (std::abs(sum - 1.0f) > 1e-6f) {
      std::fprintf(stderr, "row %d sums to %f\n", r, sum);
      return 1;
    }
  }

  ref::Emulation bf16;
  bf16.default_format = DType::BF16;
  ref::RunOptions opt;
  opt.emulation = &bf16;
  auto low = ref::run(*g, {input}, opt);
  auto d = compare(y, (*low)[0]);
  std::printf("bf16 storage: KL %.3e, max |error| %.3e\n", d->kl, d->max_abs_error);
  if (!(d->max_abs_error > 0 && d->max_abs_error < 0.05)) return 1;

  // The same graph JIT-compiled for the best device the installed plugins offer.
  auto session = Session::create({.use_cache = false});
  if (session.ok()) {
    auto exe = session->compile(*g, {{2, 3}});
    auto dev = exe.ok() ? exe->run({input}) : Expected<std::vector<Tensor>>(exe.status());
    if (!dev.ok()) {
      std::fprintf(stderr, "device run failed: %s\n", dev.status().to_string().c_str());
      return 1;
    }
    auto dd = compare(y, (*dev)[0]);
    std::printf("device %s: max |error| vs reference %.3e\n", session->device().c_str(), dd->max_abs_error);
    if (!(dd->max_abs_error < 1e-6)) return 1;
  } else {
    std::printf("no device: %s\n", session.status().message().c_str());
  }

  // A bad input is an error, not a crash.
  auto bad = ref::run(*g, {*Tensor::from_f32({2, 2}, std::vector<float>{1, 2, 3, 4})});
  std::printf("wrong shape: %s\n", bad.status().message().c_str());
  return bad.ok() ? 1 : 0;
}
