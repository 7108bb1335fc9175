// `hpf run MODEL --input NAME=FILE --output-dir DIR --dim NAME=VALUE --json`, end to end: the
// tool is started as a user would, and the .npy files it writes are read back and compared with
// the ONNX test suite's expected outputs.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "hpf/npy.hpp"
#include "hpf/onnx.hpp"

using namespace hpf;
namespace fs = std::filesystem;

namespace {

const std::string kGemm = "/usr/share/libonnx-testdata/data/node/test_gemm_all_attributes";

struct Run {
  int status = -1;
  std::string out;  // stdout and stderr
};

// `hpf run ARGS` with the environment assignments `env` (default: no kernel cache).
Run hpf_run(const std::string& args, const std::string& env = "HPF_CACHE=0") {
  Run r;
  const std::string cmd = env + " " + HPF_CLI + " run " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int ws = pclose(p);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return r;
}

fs::path temp_dir(const char* tag) {
  fs::path d = fs::temp_directory_path() / ("hpf-run-files-" + std::string(tag) + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void check_close(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  auto g = got.to_f32(), w = want.to_f32();
  for (size_t k = 0; k < w.size(); ++k) CHECK(std::fabs(g[k] - w[k]) <= 1e-5f + 1e-4f * std::fabs(w[k]));
}

}  // namespace

TEST_CASE("hpf run: inputs from .pb and .npy files, outputs written as .npy") {
  if (!fs::exists(kGemm)) {
    MESSAGE("skipped: " << kGemm << " is missing (Debian package libonnx-testdata)");
    return;
  }
  const fs::path dir = temp_dir("gemm");
  const std::string set = kGemm + "/test_data_set_0/";
  auto want = load_tensor_pb(set + "output_0.pb");
  REQUIRE(want.ok());

  // The suite's TensorProto files as they are.
  Run pb = hpf_run(kGemm + "/model.onnx --input a=" + set + "input_0.pb --input b=" + set + "input_1.pb --input c=" +
                   set + "input_2.pb --output-dir " + (dir / "pb").string() + " --json");
  REQUIRE_MESSAGE(pb.status == 0, pb.out);
  CHECK(pb.out.find("\"output_files\"") != std::string::npos);
  auto y = load_npy((dir / "pb" / "y.npy").string());
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_close(*y, *want);

  // The same inputs as .npy files; c is left out, so it is random (seeded) and y differs.
  for (int k = 0; k < 2; ++k) {
    auto t = load_tensor_pb(set + "input_" + std::to_string(k) + ".pb");
    REQUIRE(t.ok());
    REQUIRE(save_npy((dir / (k == 0 ? "a.npy" : "b.npy")).string(), *t).ok());
  }
  Run npy = hpf_run(kGemm + "/model.onnx --input a=" + (dir / "a.npy").string() + " --input b=" +
                    (dir / "b.npy").string() + " --random-inputs 3 --output-dir " + (dir / "npy").string());
  REQUIRE_MESSAGE(npy.status == 0, npy.out);
  CHECK(npy.out.find("input    c f32[1,5] (seed 3)") != std::string::npos);
  auto y2 = load_npy((dir / "npy" / "y.npy").string());
  REQUIRE(y2.ok());
  CHECK(y2->shape() == want->shape());
  CHECK(y2->to_f32() != want->to_f32());
  fs::remove_all(dir);
}

TEST_CASE("hpf run: --dim binds a symbolic dimension; bad inputs are clear errors") {
  Run dim = hpf_run("builtin:mlp --dim batch=3 --json --repeat 1");
  REQUIRE_MESSAGE(dim.status == 0, dim.out);
  CHECK(dim.out.find("\"shape\": [\n        3,") != std::string::npos);

  Run unknown = hpf_run("builtin:mlp --input nope=x.npy");
  CHECK(unknown.status == 1);
  CHECK(unknown.out.find("hpf: --input nope=x.npy: the model has no input 'nope' (inputs: x)") != std::string::npos);

  Run ext = hpf_run("builtin:mlp --input x=x.txt");
  CHECK(ext.status == 1);
  CHECK(ext.out.find("unknown file type (.npy or .pb)") != std::string::npos);

  const fs::path dir = temp_dir("bad");
  REQUIRE(save_npy((dir / "x.npy").string(), Tensor(DType::F32, {2, 5})).ok());
  Run shape = hpf_run("builtin:mlp --input x=" + (dir / "x.npy").string());
  CHECK(shape.status == 1);
  CHECK(shape.out.find("has shape [2,5], the model takes [batch,") != std::string::npos);
  REQUIRE(save_npy((dir / "i.npy").string(), Tensor(DType::I64, {2, 64})).ok());
  Run kind = hpf_run("builtin:mlp --input x=" + (dir / "i.npy").string());
  CHECK(kind.status == 1);
  CHECK(kind.out.find("holds i64, the model takes f32") != std::string::npos);
  Run pair = hpf_run("builtin:mlp --dim batch");
  CHECK(pair.status == 2);
  CHECK(pair.out.find("option --dim: 'batch' is not NAME=VALUE") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hpf run: a plan saved by one process reproduces the outputs bit for bit in another") {
  const fs::path dir = temp_dir("plan");
  const std::string plan = (dir / "bert-tiny.plan.json").string();
  auto hash_of = [](const std::string& out) {
    const size_t at = out.find("\"hash\": \"");
    return at == std::string::npos ? std::string() : out.substr(at + 9, 32);
  };
  Run made = hpf_run("builtin:bert-tiny --plan bf16 --save-plan " + plan + " --json --repeat 1");
  REQUIRE_MESSAGE(made.status == 0, made.out);
  CHECK(made.out.find("\"standalone_casts\": 0") != std::string::npos);
  Run again = hpf_run("builtin:bert-tiny --plan " + plan + " --json --repeat 1");
  REQUIRE_MESSAGE(again.status == 0, again.out);
  CHECK(!hash_of(made.out).empty());
  CHECK(hash_of(again.out) == hash_of(made.out));
  Run fp32 = hpf_run("builtin:bert-tiny --plan fp32 --json --repeat 1");
  REQUIRE(fp32.status == 0);
  CHECK(hash_of(fp32.out) != hash_of(made.out));  // BF16 storage changed the bits
  Run bad = hpf_run("builtin:bert-tiny --plan int3");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--plan int3: neither a plan file nor a mode") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hpf run: --plan takes a policy file; auto classes in it are planned within the budget") {
  const fs::path dir = temp_dir("policy");
  const fs::path policy = dir / "policy.json";
  {
    std::FILE* f = std::fopen(policy.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(R"({"attention": "fp16", "ffn": "auto", "default": "fp32"})", f);
    std::fclose(f);
  }
  Run r = hpf_run("builtin:bert-tiny --plan " + policy.string() + " --kl-budget 1e-3 --json --repeat 1");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  // Every attention node as asked (keys print sorted: class ... precision), the planner reported.
  size_t attention = 0, attention_fp16 = 0;
  for (size_t at = r.out.find("\"class\": \"attention\""); at != std::string::npos;
       at = r.out.find("\"class\": \"attention\"", at + 1)) {
    ++attention;
    const size_t end = r.out.find('}', at);
    attention_fp16 += r.out.substr(at, end - at).find("\"precision\": \"fp16\"") != std::string::npos;
  }
  CHECK(attention == 6);
  CHECK(attention_fp16 == 6);
  CHECK(r.out.find("\"planner\"") != std::string::npos);
  Run bad = hpf_run("builtin:bert-tiny --kl-budget 1e-3");
  CHECK(bad.status == 2);
  fs::remove_all(dir);
}

// Choices are kept per thread count: another count measures again.
TEST_CASE("hpf run --autotune: the first run measures the Conv tile choices, the next takes them from the cache") {
  const fs::path dir = temp_dir("autotune");
  auto run = [&](int threads) {
    return hpf_run("builtin:cnn-small --autotune --repeat 1",
                   "HPF_NUM_THREADS=" + std::to_string(threads) + " HPF_CACHE_DIR=" + dir.string());
  };
  // "autotune N kernels with tile choices: M measured now, K from the kernel cache"
  auto counts = [](const std::string& out) {
    int n = -1, m = -1, k = -1;
    const size_t at = out.find("autotune ");
    if (at != std::string::npos)
      std::sscanf(out.c_str() + at, "autotune %d kernels with tile choices: %d measured now, %d from", &n, &m, &k);
    return std::array<int, 3>{n, m, k};
  };
  const Run first = run(1);
  REQUIRE_MESSAGE(first.status == 0, first.out);
  const auto a = counts(first.out);
  CHECK(a[0] > 0);
  CHECK(a[1] == a[0]);
  CHECK(a[2] == 0);
  const Run second = run(1);
  REQUIRE_MESSAGE(second.status == 0, second.out);
  const auto b = counts(second.out);
  CHECK(b[0] == a[0]);
  CHECK(b[1] == 0);
  CHECK(b[2] == a[0]);
  const Run other = run(2);
  REQUIRE_MESSAGE(other.status == 0, other.out);
  const auto c = counts(other.out);
  CHECK(c[0] == a[0]);
  CHECK(c[1] == a[0]);
  CHECK(c[2] == 0);
  fs::remove_all(dir);
}
