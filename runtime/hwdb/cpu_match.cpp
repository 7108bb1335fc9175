// Mapping the host CPU to the database: by ISA features, then by core count.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "hpf/hwdb.hpp"
#include "jit/cache/sqlite.hpp"

namespace hpf::hwdb {
namespace {

struct Feature {
  std::string name, isa;
  std::vector<std::string> requires_flags;
};

bool has_all(const CpuInfo& cpu, const Feature& f) {
  return f.isa == cpu.isa &&
         std::all_of(f.requires_flags.begin(), f.requires_flags.end(), [&](const std::string& r) { return cpu.has(r); });
}

// "GenuineIntel" matches "Intel", "AuthenticAMD" matches "AMD", an Arm implementer "ARM".
bool same_vendor(const std::string& cpu_vendor, const std::string& arch_vendor) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string a = lower(arch_vendor), c = lower(cpu_vendor);
  return !a.empty() && c.find(a) != std::string::npos;
}

}  // namespace

Expected<Product> Database::match_cpu(const CpuInfo& cpu) const {
  std::vector<Feature> features;
  {
    sql::Stmt s(db_, "SELECT name, isa, requires FROM isa_feature");
    while (s.step()) {
      Feature f{s.text(0), s.text(1), {}};
      std::istringstream ss(s.text(2));
      for (std::string r; ss >> r;) f.requires_flags.push_back(r);
      features.push_back(std::move(f));
    }
  }
  std::vector<std::string> present;
  for (const Feature& f : features)
    if (has_all(cpu, f)) present.push_back(f.name);

  // CPU architectures whose every feature this CPU has; prefer the same vendor, then the most
  // capable (most features).
  struct Candidate {
    std::string arch, vendor;
    int nfeatures;
  };
  std::vector<Candidate> candidates;
  {
    sql::Stmt s(db_, "SELECT a.name, a.vendor, count(af.feature) FROM architecture a "
                     "JOIN arch_feature af ON af.arch = a.name WHERE a.kind = 'cpu' GROUP BY a.name");
    while (s.step()) {
      const std::string arch = s.text(0);
      bool all = true;
      sql::Stmt fs(db_, "SELECT feature FROM arch_feature WHERE arch = ?");
      fs.bind(1, arch);
      while (fs.step())
        if (std::find(present.begin(), present.end(), fs.text(0)) == present.end()) all = false;
      if (all) candidates.push_back({arch, s.text(1), static_cast<int>(s.integer(2))});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    const bool va = same_vendor(cpu.vendor, a.vendor), vb = same_vendor(cpu.vendor, b.vendor);
    if (va != vb) return va;
    return a.nfeatures > b.nfeatures;
  });

  Product p;
  if (!candidates.empty()) {
    const std::string arch = candidates.front().arch;
    sql::Stmt s(db_, "SELECT name FROM product WHERE arch = ? AND units = ? ORDER BY boost_clock_ghz DESC");
    s.bind(1, arch).bind(2, static_cast<int64_t>(cpu.cores));
    if (s.step()) {
      p = load_product(s.text(0));
      p.note = "matched by ISA features (architecture " + arch + ") and core count (" + std::to_string(cpu.cores) + ")";
      return p;
    }
    p.arch = load_architecture(arch);
    p.note = "no product of architecture " + arch + " has " + std::to_string(cpu.cores) +
             " cores: generic row, architecture matched by ISA features" +
             (same_vendor(cpu.vendor, candidates.front().vendor) ? std::string()
                                                                 : " (same ISA level, another vendor)") +
             ", peaks computed from this CPU's cores, clock and per-core throughput";
  } else {
    p.arch.name = "generic-" + cpu.isa;
    p.arch.kind = "cpu";
    p.arch.family = "generic " + cpu.isa;
    p.arch.fp8_flavor = "none";
    p.note = "no CPU architecture in the database matches this CPU's features: generic row derived from its "
             "ISA features";
  }
  p.generic = true;
  p.name = (cpu.brand.empty() ? cpu.isa + " CPU" : cpu.brand) + " (" + std::to_string(cpu.cores) + " cores)";
  p.short_name = "host-cpu";
  p.vendor = cpu.vendor;
  p.segment = "server-cpu";
  p.units = cpu.cores;
  if (cpu.clock_ghz > 0) p.boost_clock_ghz = cpu.clock_ghz;
  p.source = "derived";

  // Per-core throughput of the best feature the CPU has, per format; support from the same rows.
  std::map<std::pair<std::string, std::string>, std::string> level;  // (op_class, format) -> level
  sql::Stmt t(db_, "SELECT feature, format, op_class, level, ops_per_cycle, source FROM isa_throughput");
  while (t.step()) {
    if (std::find(present.begin(), present.end(), t.text(0)) == present.end()) continue;
    const std::string format = t.text(1), op_class = t.text(2), lvl = t.text(3);
    auto& l = level[{op_class, format}];
    if (l != "native") l = lvl;
    if (cpu.clock_ghz <= 0) continue;
    const double peak = cpu.cores * cpu.clock_ghz * t.real(4) / 1000.0;  // Gops -> T
    auto it = p.peak.find(format);
    if (it == p.peak.end() || peak > it->second.dense)
      p.peak[format] = {peak, format.rfind("int", 0) == 0 ? "tops" : "tflops", op_class,
                        t.text(5) + " (" + t.text(0) + ", derived)"};
  }
  if (candidates.empty() || p.arch.support.empty()) {
    p.arch.support.clear();
    for (const char* op_class : {"matrix", "vector"})
      for (const char* f : kFormats) {
        auto it = level.find({op_class, f});
        p.arch.support.push_back({op_class, f, it == level.end() ? "absent" : it->second, "derived"});
      }
  }
  return p;
}

}  // namespace hpf::hwdb
