// The hardware database: schema constraints, figures against datasheet values written here,
// the decision tree, and CPU matching.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "hpf/hwdb.hpp"
#include "hpf/planner.hpp"

using namespace hpf;

namespace {

hwdb::Database open_db() {
  auto db = hwdb::Database::open();
  REQUIRE_MESSAGE(db.ok(), db.status().to_string());
  return std::move(db).value();
}

double peak(const hwdb::Product& p, const std::string& f) {
  auto it = p.peak.find(f);
  return it == p.peak.end() ? -1 : it->second.dense;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// An in-memory database with the real schema, to try rows the constraints must refuse.
struct SchemaOnly {
  sqlite3* db = nullptr;
  SchemaOnly() {
    REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
    const std::string schema = slurp(std::string(HPF_SOURCE_DIR) + "/hwdb/schema.sql");
    REQUIRE(!schema.empty());
    REQUIRE(exec(schema.c_str()));
    REQUIRE(exec("INSERT INTO source VALUES ('s', 'A datasheet', NULL);"
                 "INSERT INTO architecture (name, vendor, kind, family, source) VALUES ('a', 'V', 'gpu', 'A', 's');"
                 "INSERT INTO product (name, short_name, vendor, arch, segment, source) "
                 "VALUES ('P', 'p', 'V', 'a', 'datacenter', 's');"));
  }
  ~SchemaOnly() { sqlite3_close(db); }
  bool exec(const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }
};

}  // namespace

TEST_CASE("hwdb schema: constraints refuse bad rows") {
  SchemaOnly s;
  CHECK(s.exec("INSERT INTO peak VALUES ('P', 'fp16', 10, 'matrix', 's')"));
  CHECK_FALSE(s.exec("INSERT INTO peak VALUES ('P', 'fp32', -1, 'vector', 's')"));      // negative peak
  CHECK_FALSE(s.exec("INSERT INTO peak VALUES ('P', 'fp12', 1, 'vector', 's')"));       // unknown format
  CHECK_FALSE(s.exec("INSERT INTO peak VALUES ('Q', 'fp32', 1, 'vector', 's')"));       // unknown product
  CHECK_FALSE(s.exec("INSERT INTO peak VALUES ('P', 'bf16', 1, 'vector', 'nope')"));    // unknown source
  CHECK_FALSE(s.exec("INSERT INTO peak VALUES ('P', 'fp16', 11, 'matrix', 's')"));      // one peak per format
  CHECK_FALSE(s.exec("INSERT INTO support VALUES ('a', 'matrix', 'fp8', 'maybe', 's')")); // bad level
  CHECK_FALSE(s.exec("INSERT INTO support VALUES ('a', 'tensor', 'fp8', 'native', 's')")); // bad op class
  CHECK_FALSE(s.exec("INSERT INTO architecture (name, vendor, kind, family, source) VALUES ('b', 'V', 'fpga', 'B', 's')"));
  CHECK_FALSE(s.exec("INSERT INTO architecture (name, vendor, kind, family, fp8_flavor, source) "
                     "VALUES ('c', 'V', 'gpu', 'C', 'e4m3', 's')"));
  CHECK_FALSE(s.exec("INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, source) "
                     "VALUES ('R', 'r', 'V', 'a', 'datacenter', 0, 's')"));                // memory must be > 0
  CHECK_FALSE(s.exec("INSERT INTO product (name, short_name, vendor, arch, segment) "
                     "VALUES ('R', 'r', 'V', 'a', 'datacenter')"));                        // no source
}

TEST_CASE("hwdb data: complete, sourced and consistent") {
  auto db = open_db();
  auto archs = db.architectures();
  CHECK(archs.size() >= 20);
  for (const auto& a : archs) {
    CAPTURE(a.name);
    CHECK(a.support.size() == 18);  // every (matrix|vector) x 9 formats
    CHECK(!a.source.empty());
  }
  auto products = db.products();
  CHECK(products.size() >= 30);
  for (const auto& p : products) {
    CAPTURE(p.name);
    CHECK(!p.source.empty());
    for (const auto& [f, pk] : p.peak) {
      CAPTURE(f);
      CHECK(!pk.source.empty());
      CHECK(pk.dense > 0);
      // A published peak implies the format runs on those units.
      CHECK(p.arch.level(pk.op_class, f) != "absent");
      CHECK(pk.unit == (f.rfind("int", 0) == 0 ? "tops" : "tflops"));
    }
  }
  // Every product named in the issue is there.
  for (const char* n : {"v100-sxm2-32gb", "t4", "a100-sxm-80gb", "a100-pcie-80gb", "a10", "rtx-3090", "l4", "l40s",
                        "rtx-4090", "h100-sxm", "h100-pcie", "h200-sxm", "b200", "rtx-5090", "mi100", "mi210", "mi250x",
                        "mi300x", "rx-6900-xt", "rx-7900-xtx"}) {
    CAPTURE(n);
    CHECK(db.product(n).ok());
  }
}

TEST_CASE("hwdb data: figures match the datasheets") {
  auto db = open_db();
  // NVIDIA H100 SXM5 datasheet: FP8 3,958 and BF16 1,979 TFLOPS with sparsity (dense: half),
  // TF32 989 sparse, FP64 Tensor Core 67, 80 GB HBM3 at 3.35 TB/s, up to 700 W.
  auto h100 = *db.product("h100-sxm");
  CHECK(peak(h100, "fp8") == doctest::Approx(1979).epsilon(0.002));
  CHECK(peak(h100, "bf16") == doctest::Approx(989.5).epsilon(0.002));
  CHECK(peak(h100, "tf32") == doctest::Approx(494.5).epsilon(0.002));
  CHECK(*h100.memory_gib == 80);
  CHECK(*h100.memory_bandwidth_gbs == 3350);
  CHECK(*h100.tdp_w == 700);
  CHECK(h100.arch.compute_capability == "9.0");
  CHECK(h100.arch.fp8_flavor == "ocp");
  CHECK(h100.arch.level("matrix", "fp8") == "native");
  // A100 SXM 80GB: BF16/FP16 312, TF32 156, INT8 624, INT4 1248, 2,039 GB/s, 400 W; no FP8.
  auto a100 = *db.product("a100-sxm-80gb");
  CHECK(peak(a100, "bf16") == 312);
  CHECK(peak(a100, "tf32") == 156);
  CHECK(peak(a100, "int8") == 624);
  CHECK(peak(a100, "int4") == 1248);
  CHECK(*a100.memory_bandwidth_gbs == 2039);
  CHECK(a100.arch.level("matrix", "fp8") == "absent");
  // T4: FP16 65, INT8 130, INT4 260, 16 GB at 320 GB/s, 70 W.
  auto t4 = *db.product("t4");
  CHECK(peak(t4, "fp16") == 65);
  CHECK(peak(t4, "int8") == 130);
  CHECK(peak(t4, "int4") == 260);
  CHECK(*t4.tdp_w == 70);
  CHECK(t4.arch.level("matrix", "bf16") == "absent");
  // V100: tensor FP16 125, HBM2 900 GB/s.
  auto v100 = *db.product("v100-sxm2-32gb");
  CHECK(peak(v100, "fp16") == 125);
  CHECK(*v100.memory_bandwidth_gbs == 900);
  // L4: FP8 485 sparse -> 242.5 dense, 72 W.
  auto l4 = *db.product("l4");
  CHECK(peak(l4, "fp8") == doctest::Approx(242.5).epsilon(0.002));
  CHECK(*l4.tdp_w == 72);
  // H200: 141 GB HBM3e at 4.8 TB/s.
  auto h200 = *db.product("h200-sxm");
  CHECK(*h200.memory_gib == 141);
  CHECK(*h200.memory_bandwidth_gbs == 4800);
  // B200 has FP4 matrix units.
  CHECK(db.product("b200")->arch.level("matrix", "fp4") == "native");
  // MI300X: FP16/BF16 1,307.4, FP8 2,614.9, 192 GB HBM3 at 5.3 TB/s, 750 W, gfx942, FNUZ FP8.
  auto mi300 = *db.product("mi300x");
  CHECK(peak(mi300, "fp16") == doctest::Approx(1307.4));
  CHECK(peak(mi300, "fp8") == doctest::Approx(2614.9));
  CHECK(*mi300.memory_gib == 192);
  CHECK(*mi300.tdp_w == 750);
  CHECK(mi300.arch.gfx_target == "gfx942");
  CHECK(mi300.arch.fp8_flavor == "fnuz");
  // MI250X: FP16 383; MI100 (gfx908) has no FP8.
  CHECK(peak(*db.product("mi250x"), "fp16") == 383);
  CHECK(db.product("mi100")->arch.level("matrix", "fp8") == "absent");
  // CPUs: EPYC 7763 is 64 Zen 3 cores.
  auto epyc = *db.product("epyc-7763");
  CHECK(*epyc.units == 64);
  CHECK(epyc.arch.name == "zen3");
}

TEST_CASE("hwdb lookups: names, short names, architectures, errors") {
  auto db = open_db();
  CHECK(db.product("NVIDIA H100 SXM5 80GB")->short_name == "h100-sxm");
  CHECK(db.product("H100-SXM")->name == "NVIDIA H100 SXM5 80GB");
  CHECK(db.architecture("sm_90")->name == "hopper");
  CHECK(db.architecture("gfx942")->name == "cdna3");
  CHECK(db.architecture("Hopper")->name == "hopper");
  auto missing = db.product("h1000");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "hwdb: no product 'h1000' (see hpf hwdb list)");
  auto no_file = hwdb::Database::open("/nonexistent/hwdb.sqlite");
  REQUIRE_FALSE(no_file.ok());
  CHECK(no_file.status().message().find("no database at '/nonexistent/hwdb.sqlite'") != std::string::npos);
  auto not_db = hwdb::Database::open(std::string(HPF_SOURCE_DIR) + "/hwdb/schema.sql");
  REQUIRE_FALSE(not_db.ok());
  CHECK(not_db.status().message().find("is not a libhpf hardware database") != std::string::npos);
}

TEST_CASE("hwdb match_device: a driver's board name to its datasheet row") {
  auto db = open_db();
  const uint64_t gib = 1ull << 30;
  auto match = [&](hwdb::DeviceQuery q) {
    auto p = db.match_device(q);
    REQUIRE_MESSAGE(p.ok(), q.name, ": ", p.status().message());
    return *p;
  };
  // What the H200 run's plugin reported (143771 MiB): the only H200 row.
  auto h200 = match({"NVIDIA H200", "sm_90", 132, 143771ull << 20});
  CHECK(h200.name == "NVIDIA H200 SXM 141GB");
  CHECK(h200.note == "matched 'NVIDIA H200' by its model 'h200' and unit count (132)");
  // The SXM H100's driver name says neither SXM nor PCIe: its 132 SMs tell (the PCIe board has 114).
  CHECK(match({"NVIDIA H100 80GB HBM3", "sm_90", 132, 80 * gib}).short_name == "h100-sxm");
  CHECK(match({"NVIDIA H100 PCIe", "sm_90", 114, 80 * gib}).short_name == "h100-pcie");
  // Same SM count: the words in common decide.
  CHECK(match({"NVIDIA A100-SXM4-80GB", "sm_80", 108, 80 * gib}).short_name == "a100-sxm-80gb");
  CHECK(match({"NVIDIA A100 80GB PCIe", "sm_80", 108, 80 * gib}).short_name == "a100-pcie-80gb");
  // Nothing tells the two A100s apart: the first is taken and the note names the other.
  auto a100 = match({"NVIDIA A100", "", 0, 0});
  CHECK(a100.note.find("as good a match: ") != std::string::npos);
  // An exact name needs no note; the architecture is not consulted then.
  auto mi300 = match({"AMD Instinct MI300X", "gfx942", 304, 192 * gib});
  CHECK(mi300.short_name == "mi300x");
  CHECK(mi300.note.empty());
  // Errors name what was looked for.
  auto wrong_arch = db.match_device({"NVIDIA H200", "sm_80", 132, 0});
  REQUIRE_FALSE(wrong_arch.ok());
  CHECK(wrong_arch.status().message() ==
        "hwdb: no product 'NVIDIA H200' and none named with 'h200' of architecture ampere-ga100 (see hpf hwdb list)");
  auto no_model = db.match_device({"Some Accelerator", "", 0, 0});
  REQUIRE_FALSE(no_model.ok());
  CHECK(no_model.status().message() == "hwdb: no product 'Some Accelerator', and the name has no model number to match by");
  // The planner's roofline for a GPU takes the matched row.
  auto model = DeviceModel::device({"NVIDIA H200", "sm_90", 132, 0});
  CHECK(model.name == "NVIDIA H200 SXM 141GB");
  CHECK(model.bandwidth_gbs == 4800);
}

TEST_CASE("hwdb recommend: a ranked, reasoned choice per scenario, consistent with the data") {
  auto db = open_db();
  for (const char* s : {"large-training", "realtime-inference", "edge"}) {
    CAPTURE(s);
    auto r = db.recommend(s);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    REQUIRE(!r->ranked.empty());
    CHECK(!r->criterion.empty());
    for (size_t k = 1; k < r->ranked.size(); ++k) CHECK(r->ranked[k - 1].score >= r->ranked[k].score);
    const auto& best = r->ranked.front();
    CHECK(best.reasons.size() >= 2);
    // The score is the peak per watt of the format named first in the combination.
    const std::string first = best.formats.substr(0, best.formats.find(' '));
    CHECK(best.product.arch.level("matrix", first) == "native");
    CHECK(best.score == doctest::Approx(peak(best.product, first) / *best.product.tdp_w));
    // No qualifying part beats it.
    for (const auto& p : db.products()) {
      if (!p.tdp_w || peak(p, first) < 0 || p.arch.level("matrix", first) != "native") continue;
      const bool qualifies = std::string(s) == "edge"
                                 ? (p.segment == "edge" || *p.tdp_w <= 75)
                                 : p.segment == "datacenter" && p.memory_gib &&
                                       *p.memory_gib >= (std::string(s) == "large-training" ? 64 : 16);
      if (qualifies) CHECK(peak(p, first) / *p.tdp_w <= best.score + 1e-9);
    }
  }
  auto training = db.recommend("large-training");
  CHECK(training->ranked.front().formats.find("fp32") != std::string::npos);
  auto bad = db.recommend("gaming");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "hwdb: unknown scenario 'gaming' (expected large-training, realtime-inference or edge)");
}

TEST_CASE("hwdb match_cpu: by features, then core count, generic rows say so") {
  auto db = open_db();
  CpuInfo zen3;
  zen3.isa = "x86-64";
  zen3.vendor = "AuthenticAMD";
  zen3.brand = "AMD EPYC 7763 64-Core Processor";
  zen3.flags = {"sse4_2", "avx", "avx2", "fma", "f16c"};
  zen3.cores = 64;
  zen3.clock_ghz = 3.5;
  auto m = db.match_cpu(zen3);
  REQUIRE(m.ok());
  CHECK(m->name == "AMD EPYC 7763");
  CHECK_FALSE(m->generic);

  zen3.cores = 2;
  zen3.clock_ghz = 3.0;
  m = db.match_cpu(zen3);
  REQUIRE(m.ok());
  CHECK(m->generic);
  CHECK(m->arch.name == "zen3");
  CHECK(m->note.find("generic row") != std::string::npos);
  // AVX2 + 2 FMA pipes: 32 FP32 FLOPs per cycle per core.
  CHECK(peak(*m, "fp32") == doctest::Approx(2 * 3.0 * 32 / 1000.0));

  CpuInfo spr = zen3;
  spr.vendor = "GenuineIntel";
  spr.flags = {"avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
               "amx_bf16", "amx_int8", "avx_vnni"};
  m = db.match_cpu(spr);
  REQUIRE(m.ok());
  CHECK(m->arch.name == "sapphire-rapids");
  CHECK(m->arch.level("matrix", "bf16") == "native");

  CpuInfo arm;
  arm.isa = "aarch64";
  arm.vendor = "ARM";
  arm.flags = {"fp", "asimd", "asimdhp", "asimddp"};
  arm.cores = 64;
  arm.clock_ghz = 2.5;
  m = db.match_cpu(arm);
  REQUIRE(m.ok());
  CHECK(m->name == "AWS Graviton2");

  CpuInfo old;
  old.isa = "x86-64";
  old.vendor = "GenuineIntel";
  old.flags = {"sse2", "sse4_2"};
  old.cores = 4;
  old.clock_ghz = 2.0;
  m = db.match_cpu(old);
  REQUIRE(m.ok());
  CHECK(m->generic);
  CHECK(m->arch.name == "generic-x86-64");
  CHECK(m->note.find("no CPU architecture in the database matches") != std::string::npos);
  CHECK(m->arch.level("matrix", "int8") == "absent");
}

TEST_CASE("hwdb match_cpu: the machine running this test") {
  auto db = open_db();
  const CpuInfo cpu = detect_cpu();
  CHECK(cpu.cores > 0);
  CHECK(!cpu.flags.empty());
  auto m = db.match_cpu(cpu);
  REQUIRE(m.ok());
  MESSAGE("this CPU: " << cpu.brand << " -> " << m->name << " [" << m->arch.name << "] " << m->note);
  // Whatever it matched, the architecture's vector FP32 is native and the CPU has its flags.
  CHECK(m->arch.level("vector", "fp32") != "absent");
}
