// The hardware decision tree: scenario -> hardware -> precision combination, computed by
// queries over the database (throughput per watt among the parts that qualify), never fixed text.
#include <cmath>
#include <cstdio>

#include "hpf/hwdb.hpp"
#include "jit/cache/sqlite.hpp"

namespace hpf::hwdb {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Every query returns: product name, compute format, its dense peak, peak per watt.
struct Scenario {
  const char* name;
  const char* criterion;
  const char* sql;
};

const Scenario kScenarios[] = {
    {"large-training",
     "dense matrix throughput per watt in the training format (FP8 where the matrix units run it "
     "natively, else BF16), among data-centre GPUs with at least 64 GiB of memory",
     R"(SELECT p.name,
               CASE WHEN s8.level = 'native' AND k8.dense IS NOT NULL THEN 'fp8' ELSE 'bf16' END,
               CASE WHEN s8.level = 'native' AND k8.dense IS NOT NULL THEN k8.dense ELSE k16.dense END AS t,
               (CASE WHEN s8.level = 'native' AND k8.dense IS NOT NULL THEN k8.dense ELSE k16.dense END) / p.tdp_w AS w
        FROM product p
        JOIN architecture a ON a.name = p.arch AND a.kind = 'gpu'
        JOIN support s16 ON s16.arch = p.arch AND s16.op_class = 'matrix' AND s16.format = 'bf16' AND s16.level = 'native'
        JOIN peak k16 ON k16.product = p.name AND k16.format = 'bf16'
        LEFT JOIN support s8 ON s8.arch = p.arch AND s8.op_class = 'matrix' AND s8.format = 'fp8'
        LEFT JOIN peak k8 ON k8.product = p.name AND k8.format = 'fp8'
        WHERE p.segment = 'datacenter' AND p.memory_gib >= 64 AND p.tdp_w > 0
        ORDER BY w DESC, p.memory_gib DESC)"},
    {"realtime-inference",
     "dense INT8 matrix throughput per watt, among data-centre accelerators with at least 16 GiB of "
     "memory whose matrix units run INT8 natively",
     R"(SELECT p.name, 'int8', k.dense, k.dense / p.tdp_w AS w
        FROM product p
        JOIN architecture a ON a.name = p.arch AND a.kind IN ('gpu', 'npu')
        JOIN support s ON s.arch = p.arch AND s.op_class = 'matrix' AND s.format = 'int8' AND s.level = 'native'
        JOIN peak k ON k.product = p.name AND k.format = 'int8'
        WHERE p.segment = 'datacenter' AND p.memory_gib >= 16 AND p.tdp_w > 0
        ORDER BY w DESC, p.memory_bandwidth_gbs DESC)"},
    {"edge",
     "dense low-bit throughput per watt (INT4 where the matrix units run it natively, else INT8), "
     "among edge parts and accelerators of at most 75 W",
     R"(SELECT p.name,
               CASE WHEN s4.level = 'native' AND k4.dense IS NOT NULL THEN 'int4' ELSE 'int8' END,
               CASE WHEN s4.level = 'native' AND k4.dense IS NOT NULL THEN k4.dense ELSE k8.dense END,
               (CASE WHEN s4.level = 'native' AND k4.dense IS NOT NULL THEN k4.dense ELSE k8.dense END) / p.tdp_w AS w
        FROM product p
        JOIN support s8 ON s8.arch = p.arch AND s8.op_class = 'matrix' AND s8.format = 'int8' AND s8.level = 'native'
        JOIN peak k8 ON k8.product = p.name AND k8.format = 'int8'
        LEFT JOIN support s4 ON s4.arch = p.arch AND s4.op_class = 'matrix' AND s4.format = 'int4'
        LEFT JOIN peak k4 ON k4.product = p.name AND k4.format = 'int4'
        WHERE (p.segment = 'edge' OR p.tdp_w <= 75) AND p.tdp_w > 0
        ORDER BY w DESC)"},
};

// The precision combination for a chosen part, from its support matrix.
std::string combination(const std::string& scenario, const std::string& compute, const Architecture& a,
                        std::vector<std::string>& reasons) {
  const bool fp16_vec = a.level("vector", "fp16") == "native";
  if (scenario == "large-training") {
    reasons.push_back(compute + " matrix units: " + a.level("matrix", compute) + "; master weights, "
                      "optimizer state and accumulation in fp32");
    return compute + " + fp32";
  }
  if (scenario == "realtime-inference") {
    const std::string wide = fp16_vec ? "fp16" : "fp32";
    reasons.push_back("int8 for matrix products; " + wide + " for softmax, normalisation and outputs (" + wide +
                      " vector: " + a.level("vector", wide) + ")");
    return "int8 + " + wide;
  }
  const std::string wide = fp16_vec || a.level("matrix", "fp16") == "native" ? "fp16" : "int8";
  if (compute == "int4") {
    reasons.push_back("int4 weights quantised group-wise, activations quantised dynamically to int8 at run time");
    return "int4 (dynamic) + int8" + (wide == "fp16" ? std::string(" + fp16") : std::string());
  }
  reasons.push_back("int8 weights and activations; int4 matrix support: " + a.level("matrix", "int4"));
  return "int8" + (wide == "fp16" ? std::string(" + fp16") : std::string());
}

}  // namespace

Expected<Recommendation> Database::recommend(const std::string& scenario) const {
  const Scenario* sc = nullptr;
  for (const Scenario& s : kScenarios)
    if (scenario == s.name) sc = &s;
  if (!sc)
    return Status::invalid("hwdb: unknown scenario '" + scenario +
                           "' (expected large-training, realtime-inference or edge)");
  Recommendation r;
  r.scenario = sc->name;
  r.criterion = sc->criterion;
  sql::Stmt q(db_, sc->sql);
  if (!q.ok()) return Status::internal("hwdb: recommend query: " + q.error());
  struct Row {
    std::string name, format;
    double peak, per_watt;
  };
  std::vector<Row> rows;
  while (q.step()) rows.push_back({q.text(0), q.text(1), q.real(2), q.real(3)});
  if (!q.error().empty()) return Status::internal("hwdb: recommend query: " + q.error());
  for (const Row& row : rows) {
    Recommendation::Choice c;
    c.product = load_product(row.name);
    c.score = row.per_watt;
    const std::string unit = row.format.rfind("int", 0) == 0 ? "TOPS" : "TFLOPS";
    c.reasons.push_back(row.format + " dense peak " + fmt("%.1f ", row.peak) + unit + " at " +
                        fmt("%.0f W", *c.product.tdp_w) + " = " + fmt("%.2f ", row.per_watt) + unit + "/W");
    if (c.product.memory_gib)
      c.reasons.push_back(fmt("%.0f GiB", *c.product.memory_gib) +
                          (c.product.memory_bandwidth_gbs ? fmt(" at %.0f GB/s", *c.product.memory_bandwidth_gbs) : ""));
    c.formats = combination(r.scenario, row.format, c.product.arch, c.reasons);
    c.reasons.push_back("architecture " + c.product.arch.family + " (" + c.product.arch.name + ")" +
                        (c.product.arch.fp8_flavor != "none" ? ", FP8 flavour " + c.product.arch.fp8_flavor : ""));
    r.ranked.push_back(std::move(c));
  }
  if (r.ranked.empty())
    return Status::not_found("hwdb: no product in '" + path_ + "' qualifies for " + r.scenario);
  return r;
}

}  // namespace hpf::hwdb
