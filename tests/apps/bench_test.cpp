// `hpf bench`, end to end: the tool is started as a user would, its JSON is checked for every
// field with sane values, and --report's markdown and SVG are read back. No timing assertions:
// only that times are positive and ordered.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Run {
  int status = -1;
  std::string out;  // stdout (stderr too when `merge`)
};

fs::path temp_dir(const char* tag) {
  fs::path d = fs::temp_directory_path() / ("hpf-bench-test-" + std::string(tag) + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Run hpf_bench(const std::string& args, const fs::path& cache, bool merge = false) {
  Run r;
  const std::string cmd = "HPF_CACHE_DIR=" + cache.string() + " " + HPF_CLI + " bench " + args + (merge ? " 2>&1" : "");
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int ws = pclose(p);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Minimal XML well-formedness: every tag closes in order, attributes are quoted, the root is
// <svg>. Returns "" or what is wrong.
std::string check_xml(const std::string& s, int& rects, int& texts) {
  std::vector<std::string> stack;
  size_t k = 0;
  bool root_seen = false;
  while ((k = s.find('<', k)) != std::string::npos) {
    const size_t end = s.find('>', k);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(k);
    std::string tag = s.substr(k + 1, end - k - 1);
    k = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "</" + name + "> closes " + (stack.empty() ? "nothing" : stack.back());
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2) return "unbalanced quotes in <" + name + ">";
    if (stack.empty()) {
      if (root_seen || name != "svg") return "root element is <" + name + ">, not one <svg>";
      root_seen = true;
    }
    rects += name == "rect";
    texts += name == "text";
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return root_seen ? "" : "no <svg> element";
}

}  // namespace

TEST_CASE("hpf bench builtin:mlp --json: every field, sane values") {
  const fs::path dir = temp_dir("json");
  Run r = hpf_bench("builtin:mlp --plans fp32,bf16 --runs 3 --warmup 1 --threads 1 --json", dir / "cache");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  json j = json::parse(r.out);
  CHECK(j["model"] == "builtin:mlp");
  CHECK(j["threads"] == 1);
  CHECK(j["device_threads"] == 1);  // the CPU plugin's pool took --threads
  CHECK(j["device"].get<std::string>().rfind("cpu:", 0) == 0);
  // MatMul 2*64*128 + Add 128 + Relu 128 + MatMul 2*128*10 + Add 10.
  CHECK(j["flops"].get<double>() == doctest::Approx(19210));
  CHECK(j["flops_by_op"]["MatMul"].get<double>() == doctest::Approx(2 * 64 * 128 + 2 * 128 * 10));
  CHECK(j["reference_ms"].get<double>() > 0);
  REQUIRE(j["plans"].size() == 2);
  for (const json& p : j["plans"]) {
    INFO(p.dump());
    REQUIRE_FALSE(p.contains("error"));
    const json& l = p["latency_ms"];
    CHECK(l["runs"] == 3);
    CHECK(l["min"].get<double>() > 0);
    CHECK(l["min"].get<double>() <= l["median"].get<double>());
    CHECK(l["median"].get<double>() <= l["max"].get<double>());
    CHECK(p["inferences_per_s"].get<double>() > 0);
    CHECK(p["gflops"].get<double>() > 0);
    CHECK(p["memory"]["peak_bytes"].get<double>() > 0);
    CHECK(p["memory"]["weight_bytes"].get<double>() > 0);
    CHECK(p["memory"]["peak_bytes"].get<double>() >= p["memory"]["weight_bytes"].get<double>());
    const json& f = p["fidelity"];
    CHECK(f["watched"] == "logits");
    CHECK(f["top1_agreement"].get<double>() >= 0);
    CHECK(f["top1_agreement"].get<double>() <= 1);
    CHECK(f["max_rel_error"].get<double>() >= 0);
    CHECK(f["outputs"][0]["metric"] == "kl-softmax");
    const json& e = p["energy"];
    const std::string source = e["source"];
    if (e["tops_per_w"].is_number()) {
      CHECK(e["tops_per_w"].get<double>() > 0);
      CHECK(e["joules_per_inference"].get<double>() > 0);
      CHECK(source.find("estimate") != std::string::npos);
    } else {
      CHECK(source.find("no TDP in hwdb") != std::string::npos);
    }
    const json& c = p["cold_start"];
    CHECK(c["empty_cache_ms"].get<double>() > 0);
    CHECK(c["warm_cache_ms"].get<double>() > 0);
    CHECK(c["empty_cache"]["cache_misses"].get<int>() > 0);  // a fresh cache compiles every kernel
    CHECK(c["warm_cache"]["cache_misses"] == 0);             // and the second executable loads them all
    CHECK(c["warm_cache"]["cache_hits"].get<int>() > 0);
  }
  const json& fp32 = j["plans"][0];
  const json& bf16 = j["plans"][1];
  CHECK(fp32["plan"] == "fp32");
  CHECK(fp32["fidelity"]["kl"].get<double>() < 1e-9);
  CHECK(fp32["fidelity"]["top1_agreement"].get<double>() == 1.0);
  CHECK(fp32["fidelity"]["max_rel_error"].get<double>() < 1e-5);
  CHECK(bf16["modes"]["bf16"].get<int>() > 0);
  CHECK(bf16["fidelity"]["kl"].get<double>() > fp32["fidelity"]["kl"].get<double>());
  CHECK(bf16["fidelity"]["kl"].get<double>() < 1e-2);
  CHECK(bf16["memory"]["weight_bytes"].get<double>() < fp32["memory"]["weight_bytes"].get<double>());
  // The FP32 plan on the CPU against the reference interpreter.
  const json& pairs = j["consistency"]["pairs"];
  REQUIRE(pairs.size() >= 1);
  CHECK(pairs[0]["a"] == "reference");
  CHECK(pairs[0]["b"] == "cpu");
  CHECK(pairs[0]["kl"].get<double>() < 1e-9);
  CHECK(pairs[0]["max_rel_error"].get<double>() < 1e-5);
  fs::remove_all(dir);
}

TEST_CASE("hpf bench --report writes a markdown file and a well-formed SVG chart") {
  const fs::path dir = temp_dir("report");
  const fs::path md = dir / "mlp.md";
  Run r = hpf_bench("builtin:mlp --plans fp32,bf16 --runs 2 --warmup 0 --skip cold-start --report " + md.string(),
                    dir / "cache", /*merge=*/true);
  REQUIRE_MESSAGE(r.status == 0, r.out);
  CHECK(r.out.find("plan") != std::string::npos);
  CHECK(r.out.find("report   " + md.string()) != std::string::npos);
  const std::string text = read_file(md);
  CHECK(text.find("# hpf bench: builtin:mlp") != std::string::npos);
  CHECK(text.find("](mlp.svg)") != std::string::npos);
  CHECK(text.find("| fp32 | ") != std::string::npos);
  CHECK(text.find("| bf16 | ") != std::string::npos);
  CHECK(text.find("## Cross-platform consistency") != std::string::npos);
  CHECK(text.find("| reference | cpu | ") != std::string::npos);
  const std::string svg = read_file(dir / "mlp.svg");
  REQUIRE_FALSE(svg.empty());
  int rects = 0, texts = 0;
  CHECK(check_xml(svg, rects, texts) == "");
  CHECK(rects >= 1 + 2 + 1);  // background, a latency bar per plan, bf16's divergence bar
  CHECK(texts >= 6);
  CHECK(svg.find(">fp32</text>") != std::string::npos);
  CHECK(svg.find(">bf16</text>") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hpf bench: bad usage and a plan that fails are clear") {
  const fs::path dir = temp_dir("bad");
  Run none = hpf_bench("", dir / "cache", true);
  CHECK(none.status == 2);
  CHECK(none.out.find("hpf: bench needs a MODEL") != std::string::npos);
  Run skip = hpf_bench("builtin:mlp --skip nothing", dir / "cache", true);
  CHECK(skip.status == 2);
  CHECK(skip.out.find("--skip: unknown part 'nothing'") != std::string::npos);
  Run bad = hpf_bench("builtin:mlp --plans fp32,nope --runs 1 --warmup 0 --skip cold-start,consistency --json", dir / "cache");
  CHECK(bad.status == 1);
  json j = json::parse(bad.out);
  REQUIRE(j["plans"].size() == 2);
  CHECK(j["plans"][0]["latency_ms"]["median"].get<double>() > 0);
  CHECK(j["plans"][1]["error"].get<std::string>().find("--plan nope: neither a plan file nor a mode") == 0);
  fs::remove_all(dir);
}

TEST_CASE("hpf bench --save-plan writes the auto plan, which benches again as a file without planning") {
  const fs::path dir = temp_dir("save");
  const fs::path plan = dir / "auto.json";
  Run first = hpf_bench("builtin:mlp --plans fp32,auto --runs 2 --warmup 0 --threads 1 --skip cold-start,consistency --json "
                        "--save-plan " + plan.string(), dir / "cache");
  REQUIRE_MESSAGE(first.status == 0, first.out);
  const json a = json::parse(first.out);
  REQUIRE(a["plans"].size() == 2);
  CHECK_FALSE(a["plans"][0].contains("saved_to"));  // fp32: nothing planned
  CHECK(a["plans"][1]["saved_to"] == plan.string());
  REQUIRE(fs::exists(plan));
  CHECK(read_file(plan).find("libhpf-plan") != std::string::npos);
  Run again = hpf_bench("builtin:mlp --plans " + plan.string() + " --runs 2 --warmup 0 --threads 1 --skip cold-start,consistency --json",
                        dir / "cache");
  REQUIRE_MESSAGE(again.status == 0, again.out);
  const json b = json::parse(again.out);
  REQUIRE(b["plans"].size() == 1);
  CHECK_FALSE(b["plans"][0].contains("planner"));  // read, not planned
  CHECK(b["plans"][0]["modes"] == a["plans"][1]["modes"]);
  CHECK(b["plans"][0]["fidelity"]["kl"].get<double>() == doctest::Approx(a["plans"][1]["fidelity"]["kl"].get<double>()));
  // A file that cannot be written fails the plan with the reason, not the process.
  Run bad = hpf_bench("builtin:mlp --plans auto --runs 1 --warmup 0 --threads 1 --skip cold-start,consistency --json "
                      "--save-plan " + (dir / "no-such-dir" / "p.json").string(), dir / "cache");
  CHECK(bad.status == 1);
  const json c = json::parse(bad.out);
  CHECK(c["plans"][0].contains("error"));
  fs::remove_all(dir);
}
