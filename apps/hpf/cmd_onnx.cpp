// hpf onnx-test: ONNX backend conformance tests (model.onnx + test_data_set_*/) through a
// device plugin's generated kernels (ops without a generator run as counted reference
// fallbacks), or on the reference interpreter alone. Each test runs in a child process, so a
// crash or a hang in one test is reported as that test's failure and the run goes on.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hpf/cli.hpp"
#include "hpf/onnx.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"

namespace hpf::cli {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
constexpr unsigned kTestTimeoutS = 120;

struct Result {
  std::string name;
  std::string status;  // "passed", "failed", "unsupported"
  std::string detail;
  int64_t kernels = 0;    // generated kernels the test's model ran (device runs)
  int64_t fallbacks = 0;  // nodes it ran on the reference interpreter (device runs)
};

Result outcome(const std::string& name, const Status& s, const std::string& where = "") {
  return {name, s.code() == StatusCode::unsupported ? "unsupported" : "failed", where + s.to_string()};
}

// Runs `g` on `device` ("reference": the interpreter alone; else a plugin name), counting the
// device's kernels and fallbacks into `r`.
Expected<std::vector<Tensor>> run_model(const Graph& g, const std::vector<Tensor>& inputs, const std::string& device,
                                        Result& r) {
  if (device == "reference") return ref::run(g, inputs);
  SessionOptions options;
  options.plugin = device;
  HPF_ASSIGN_OR_RETURN(Session session, Session::create(options));
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  HPF_ASSIGN_OR_RETURN(Executable exe, session.compile(g, shapes));
  r.kernels = std::max(r.kernels, exe.compile_stats().kernels);
  r.fallbacks = std::max(r.fallbacks, exe.compile_stats().fallbacks);
  return exe.run(inputs);
}

// Files `prefix`N.pb in `dir`, by N.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && e.path().extension() == ".pb")
      found.emplace_back(std::atoi(f.c_str() + prefix.size()), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [k, p] : found) out.push_back(p);
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// "" when `got` matches `want` within ONNX's tolerances; else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return "shape " + shape_string(got.shape()) + ", want " + shape_string(want.shape());
  if (is_float(want.dtype()) != is_float(got.dtype()))
    return "dtype " + std::string(dtype_name(got.dtype())) + ", want " + std::string(dtype_name(want.dtype()));
  if (!is_float(want.dtype())) {
    auto g = got.to_i64(), w = want.to_i64();
    for (size_t k = 0; k < w.size(); ++k)
      if (g[k] != w[k])
        return "element " + std::to_string(k) + ": got " + std::to_string(g[k]) + ", want " + std::to_string(w[k]);
    return "";
  }
  auto g = got.to_f32(), w = want.to_f32();
  double worst = 0;
  size_t at = 0;
  size_t bad = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    const double a = g[k], b = w[k];
    double excess = 0;
    if (std::isnan(b) || std::isnan(a)) {
      excess = std::isnan(a) == std::isnan(b) ? 0 : INFINITY;
    } else if (std::isinf(b) || std::isinf(a)) {
      excess = a == b ? 0 : INFINITY;
    } else {
      excess = std::fabs(a - b) - (kAtol + kRtol * std::fabs(b));
    }
    if (excess > 0) {
      ++bad;
      if (excess > worst || bad == 1) worst = excess, at = k;
    }
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(w.size()) + " elements differ; worst element " +
         std::to_string(at) + ": got " + num(g[at]) + ", want " + num(w[at]);
}

Result run_test(const fs::path& dir, const std::string& device) {
  Result r{dir.filename().string(), "passed", ""};
  auto g = import_onnx((dir / "model.onnx").string());
  if (!g.ok()) {
    r.status = g.status().code() == StatusCode::unsupported ? "unsupported" : "failed";
    r.detail = g.status().to_string();
    return r;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {r.name, "failed", "no test_data_set_* folder"};
  for (const fs::path& set : sets) {
    const std::string where = set.filename().string() + ": ";
    std::vector<Tensor> inputs, wants;
    for (const auto& p : numbered(set, "input_")) {
      auto t = load_tensor_pb(p.string());
      if (!t.ok()) return outcome(r.name, t.status(), where);
      inputs.push_back(std::move(t).value());
    }
    for (const auto& p : numbered(set, "output_")) {
      auto t = load_tensor_pb(p.string());
      if (!t.ok()) return outcome(r.name, t.status(), where);
      wants.push_back(std::move(t).value());
    }
    auto got = run_model(*g, inputs, device, r);
    if (!got.ok()) return outcome(r.name, got.status(), where);
    if (got->size() != wants.size())
      return {r.name, "failed",
              where + std::to_string(got->size()) + " outputs, want " + std::to_string(wants.size())};
    for (size_t k = 0; k < wants.size(); ++k) {
      std::string diff = compare((*got)[k], wants[k]);
      if (!diff.empty()) {
        r.status = "failed";
        r.detail = where + "output " + std::to_string(k) + " '" + g->value(g->outputs()[k]).name + "': " + diff;
        return r;
      }
    }
  }
  return r;
}

// Runs one test in a child process; a crash or timeout is a failure.
Result run_isolated(const fs::path& dir, const std::string& device) {
  int fds[2];
  if (pipe(fds) != 0) return run_test(dir, device);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_test(dir, device);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(kTestTimeoutS);
    Result r = run_test(dir, device);
    std::string msg = r.status + "\n" + std::to_string(r.kernels) + " " + std::to_string(r.fallbacks) + "\n" + r.detail;
    for (size_t off = 0; off < msg.size();) {
      ssize_t n = write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  Result r{dir.filename().string(), "failed", ""};
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    r.detail = sig == SIGALRM ? "timed out after " + std::to_string(kTestTimeoutS) + " s"
                              : "crashed (signal " + std::to_string(sig) + ": " + strsignal(sig) + ")";
    return r;
  }
  const size_t nl = msg.find('\n'), nl2 = nl == std::string::npos ? nl : msg.find('\n', nl + 1);
  if (nl2 == std::string::npos) {
    r.detail = "the test process ended without a result";
    return r;
  }
  r.status = msg.substr(0, nl);
  std::sscanf(msg.c_str() + nl + 1, "%lld %lld", reinterpret_cast<long long*>(&r.kernels),
              reinterpret_cast<long long*>(&r.fallbacks));
  r.detail = msg.substr(nl2 + 1);
  return r;
}

}  // namespace

int cmd_onnx_test(const std::vector<std::string>& argv) {
  auto args = parse_args("onnx-test", argv, {"--json"}, {"--filter", "--device"});
  if (!args.ok()) return fail(args.status().message(), 2);
  if (args->positional.size() != 1) return fail("onnx-test needs one DIR (see hpf --help)", 2);
  if (!onnx_import_available()) return fail("onnx-test: libhpf was built without ONNX import");
  const fs::path root = args->positional[0];
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return fail("onnx-test: '" + root.string() + "' is not a directory");
  std::regex filter;
  const bool filtered = args->options.count("--filter") > 0;
  try {
    if (filtered) filter = std::regex(args->option("--filter"));
  } catch (const std::regex_error& e) {
    return fail("onnx-test: bad --filter regex '" + args->option("--filter") + "': " + e.what(), 2);
  }

  std::vector<fs::path> tests;
  if (fs::exists(root / "model.onnx")) {
    tests.push_back(root);
  } else {
    for (const auto& e : fs::directory_iterator(root))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
    std::sort(tests.begin(), tests.end());
  }
  if (filtered)
    tests.erase(std::remove_if(tests.begin(), tests.end(),
                               [&](const fs::path& p) { return !std::regex_search(p.filename().string(), filter); }),
                tests.end());

  const std::string device = args->options.count("--device") ? args->option("--device") : "cpu";
  if (device != "reference") {
    // Checked once here (in a child: plugins start threads, which must not precede the forks).
    SessionOptions options;
    options.plugin = device;
    pid_t pid = fork();
    if (pid == 0) _exit(Session::create(options).ok() ? 0 : 1);
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      auto s = Session::create(options);
      return fail("onnx-test --device " + device + ": " + (s.ok() ? "the device check crashed" : s.status().message()) +
                  " (--device reference runs the interpreter alone)");
    }
  }
  const bool json = args->flag("--json");
  std::map<std::string, int> counts;
  int64_t kernels = 0, fallbacks = 0;
  std::vector<Result> results;
  for (const fs::path& t : tests) {
    Result r = run_isolated(t, device);
    ++counts[r.status];
    if (r.status == "passed") kernels += r.kernels, fallbacks += r.fallbacks;
    if (!json)
      std::printf("%-12s %s%s%s\n", r.status.c_str(), r.name.c_str(), r.detail.empty() ? "" : ": ",
                  r.detail.c_str());
    results.push_back(std::move(r));
  }
  if (json) {
    nlohmann::ordered_json j;
    j["total"] = results.size();
    j["passed"] = counts["passed"];
    j["failed"] = counts["failed"];
    j["unsupported"] = counts["unsupported"];
    j["device"] = device;
    j["kernels"] = kernels;      // over the passed tests
    j["fallbacks"] = fallbacks;  // nodes the passed tests ran on the reference interpreter
    j["tests"] = nlohmann::ordered_json::array();
    for (const Result& r : results)
      j["tests"].push_back({{"name", r.name},
                            {"status", r.status},
                            {"detail", r.detail},
                            {"kernels", r.kernels},
                            {"fallbacks", r.fallbacks}});
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%d passed, %d failed, %d unsupported of %zu (device %s", counts["passed"], counts["failed"],
                counts["unsupported"], results.size(), device.c_str());
    if (device != "reference")
      std::printf("; the passed tests ran %lld generated kernels and %lld nodes on the reference",
                  static_cast<long long>(kernels), static_cast<long long>(fallbacks));
    std::printf(")\n");
  }
  return 0;
}

}  // namespace hpf::cli
