// The hardware feature database (hwdb.sqlite): which formats each architecture runs natively,
// how fast each product is per format, its memory and power. Built from hwdb/schema.sql and
// hwdb/data/*.sql; every figure carries the datasheet it comes from.
//
// A Database is opened read-only and owns its SQLite connection (opened in serialized mode, so
// one Database may be used from several threads). Move-only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpf/cpu_info.hpp"
#include "hpf/status.hpp"

struct sqlite3;

namespace hpf::hwdb {

// The formats the database speaks about, in display order.
inline const char* const kFormats[] = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"};

struct SupportEntry {
  std::string op_class;  // "matrix" or "vector"
  std::string format;
  std::string level;     // "native", "emulated", "absent"
  std::string source;
};

struct Architecture {
  std::string name, vendor, kind, family;
  std::string compute_capability, gfx_target;  // empty where not applicable
  std::string fp8_flavor;                      // "ocp", "fnuz", "none"
  std::string source;
  std::vector<SupportEntry> support;           // every (op_class, format)
  // The support level of a format for an op class ("absent" when the database has no row).
  std::string level(const std::string& op_class, const std::string& format) const;
};

struct Peak {
  double dense = 0;       // TFLOPS (float formats) or TOPS (integer formats), no sparsity
  std::string unit;       // "tflops" or "tops"
  std::string op_class;   // which units reach it
  std::string source;
};

// An accelerator as its plugin describes it (hpf_device_info).
struct DeviceQuery {
  std::string name;          // "NVIDIA H200"
  std::string architecture;  // "sm_90", "gfx942"; may be empty
  int64_t units = 0;         // SMs or CUs; 0 = unknown
  uint64_t memory_bytes = 0; // 0 = unknown
};

struct Product {
  std::string name, short_name, vendor, segment, source;
  Architecture arch;
  std::optional<double> memory_gib, memory_bandwidth_gbs, tdp_w, boost_clock_ghz;
  std::optional<int64_t> units;
  std::map<std::string, Peak> peak;  // by format; a format without a published peak is absent
  bool generic = false;              // derived from a device's features, not a database row
  std::string note;                  // why it is generic, or how it was matched
};

struct Recommendation {
  std::string scenario;
  std::string criterion;                 // what the ranking maximises, in words
  struct Choice {
    Product product;
    std::string formats;                 // e.g. "fp8 + fp32"
    double score = 0;                    // the criterion's value
    std::vector<std::string> reasons;    // figures behind the choice
  };
  std::vector<Choice> ranked;            // best first
};

class Database {
 public:
  // Opens `path`, or when empty: $HPF_HWDB, else hpf/hwdb.sqlite beside the loaded libhpf
  // (installed: <libdir>/hpf/hwdb.sqlite), else the build tree's copy. Errors name the path
  // tried and why it failed (missing, not a database, wrong schema).
  static Expected<Database> open(const std::string& path = "");

  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  const std::string& path() const { return path_; }

  std::vector<Product> products() const;
  std::vector<Architecture> architectures() const;
  // A product by its full or short name, case-insensitive.
  Expected<Product> product(const std::string& name) const;
  // An architecture by name, family, gfx target ("gfx942") or compute capability ("sm_90",
  // "9.0"), case-insensitive.
  Expected<Architecture> architecture(const std::string& name) const;

  // The hardware decision tree: "large-training", "realtime-inference" or "edge".
  Expected<Recommendation> recommend(const std::string& scenario) const;

  // Maps the host CPU to a database row: the CPU architecture of the same ISA whose features
  // the CPU all has (the most capable such architecture), and a product of it with the same core
  // count if there is one; otherwise a generic product whose peaks are computed from the CPU's
  // cores, clock and per-core throughput of its best features, with a note saying so.
  Expected<Product> match_cpu(const CpuInfo& cpu) const;

  // Maps an accelerator, as its plugin describes it, to a database row. Drivers name boards
  // more briefly than datasheets ("NVIDIA H200" is the row "NVIDIA H200 SXM 141GB", "NVIDIA
  // A100-SXM4-80GB" the row "NVIDIA A100 SXM4 80GB"): an exact full or short name first; else
  // the products of the device's architecture (when the database knows it) whose name holds
  // the device name's model token (its first word with a digit: "h200", "a100", "mi300x"),
  // ranked by the same unit count, then by the most words in common, then by the nearest memory
  // size. The product's note says how it was matched and which rows tied. Not found: no
  // product has the model token.
  Expected<Product> match_device(const DeviceQuery& device) const;

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Architecture load_architecture(const std::string& name) const;
  Product load_product(const std::string& name) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace hpf::hwdb
