// hpf hwdb list|show|recommend and hpf info: the hardware database from the command line.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "apps/hpf/cli.hpp"
#include "hpf/hwdb.hpp"
#include "hpf/plugin_host.hpp"

namespace hpf::cli {
namespace {

using nlohmann::json;
using hwdb::kFormats;

json support_json(const hwdb::Architecture& a) {
  json m = json::object();
  for (const char* op_class : {"matrix", "vector"}) {
    json row = json::object();
    for (const char* f : kFormats) row[f] = a.level(op_class, f);
    m[op_class] = row;
  }
  return m;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json product_json(const hwdb::Product& p) {
  json peak = json::object();
  for (const char* f : kFormats) {
    auto it = p.peak.find(f);
    peak[f] = it == p.peak.end() ? json(nullptr) : json(it->second.dense);
  }
  json sources = json::object();
  for (const auto& [f, pk] : p.peak) sources[f] = pk.source;
  json j = {{"name", p.name},
            {"short_name", p.short_name},
            {"vendor", p.vendor},
            {"arch", p.arch.name},
            {"family", p.arch.family},
            {"segment", p.segment},
            {"peak", peak},
            {"peak_units", {{"float", "TFLOPS"}, {"integer", "TOPS"}, {"sparsity", false}}},
            {"memory_gib", opt(p.memory_gib)},
            {"memory_bandwidth_gbs", opt(p.memory_bandwidth_gbs)},
            {"tdp_w", opt(p.tdp_w)},
            {"units", p.units ? json(*p.units) : json(nullptr)},
            {"boost_clock_ghz", opt(p.boost_clock_ghz)},
            {"fp8_flavor", p.arch.fp8_flavor},
            {"support", support_json(p.arch)},
            {"source", p.source},
            {"peak_sources", sources}};
  if (!p.arch.compute_capability.empty()) j["compute_capability"] = p.arch.compute_capability;
  if (!p.arch.gfx_target.empty()) j["gfx_target"] = p.arch.gfx_target;
  if (p.generic) j["generic"] = true;
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

std::string num(const std::optional<double>& v, const char* f = "%.0f") {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

void print_support(const hwdb::Architecture& a) {
  std::printf("  %-8s", "");
  for (const char* f : kFormats) std::printf(" %-9s", f);
  std::printf("\n");
  for (const char* op_class : {"matrix", "vector"}) {
    std::printf("  %-8s", op_class);
    for (const char* f : kFormats) std::printf(" %-9s", a.level(op_class, f).c_str());
    std::printf("\n");
  }
}

void print_product(const hwdb::Product& p) {
  std::printf("%s  [%s]\n", p.name.c_str(), p.short_name.c_str());
  std::printf("  vendor %s, architecture %s (%s)%s%s, %s\n", p.vendor.c_str(), p.arch.family.c_str(), p.arch.name.c_str(),
              p.arch.compute_capability.empty() ? "" : (", compute capability " + p.arch.compute_capability).c_str(),
              p.arch.gfx_target.empty() ? "" : (", " + p.arch.gfx_target).c_str(), p.segment.c_str());
  std::printf("  memory %s GiB at %s GB/s, TDP %s W, %s units at %s GHz\n", num(p.memory_gib).c_str(),
              num(p.memory_bandwidth_gbs).c_str(), num(p.tdp_w).c_str(),
              p.units ? std::to_string(*p.units).c_str() : "-", num(p.boost_clock_ghz, "%.2f").c_str());
  if (p.arch.fp8_flavor != "none") std::printf("  FP8 flavour: %s\n", p.arch.fp8_flavor.c_str());
  std::printf("  dense peak (TFLOPS / TOPS, no sparsity):\n");
  for (const char* f : kFormats) {
    auto it = p.peak.find(f);
    if (it == p.peak.end()) continue;
    std::printf("    %-5s %10.1f  %-6s  %s\n", f, it->second.dense, it->second.op_class.c_str(), it->second.source.c_str());
  }
  std::printf("  support:\n");
  print_support(p.arch);
  std::printf("  source: %s\n", p.source.c_str());
  if (!p.note.empty()) std::printf("  note: %s\n", p.note.c_str());
}

int list(const hwdb::Database& db, bool as_json) {
  auto products = db.products();
  if (as_json) {
    json arr = json::array();
    for (const auto& p : products) arr.push_back(product_json(p));
    std::printf("%s\n", arr.dump(2).c_str());
    return 0;
  }
  std::printf("%-34s %-16s %-10s %-11s %8s %8s %7s %9s %9s\n", "product", "short name", "vendor", "arch", "mem GiB",
              "GB/s", "TDP W", "fp16", "int8");
  for (const auto& p : products) {
    auto pk = [&](const char* f) {
      auto it = p.peak.find(f);
      return it == p.peak.end() ? std::string("-") : num(it->second.dense, "%.1f");
    };
    std::printf("%-34s %-16s %-10s %-11s %8s %8s %7s %9s %9s\n", p.name.c_str(), p.short_name.c_str(), p.vendor.c_str(),
                p.arch.name.c_str(), num(p.memory_gib).c_str(), num(p.memory_bandwidth_gbs).c_str(), num(p.tdp_w).c_str(),
                pk("fp16").c_str(), pk("int8").c_str());
  }
  std::printf("\n%zu products; database %s\n", products.size(), db.path().c_str());
  return 0;
}

int show(const hwdb::Database& db, const std::string& name, bool as_json) {
  if (auto p = db.product(name); p.ok()) {
    if (as_json) std::printf("%s\n", product_json(*p).dump(2).c_str());
    else print_product(*p);
    return 0;
  }
  auto a = db.architecture(name);
  if (!a.ok()) return fail("hwdb: '" + name + "' is neither a product nor an architecture (see hpf hwdb list)");
  std::vector<hwdb::Product> members;
  for (auto& p : db.products())
    if (p.arch.name == a->name) members.push_back(std::move(p));
  if (as_json) {
    json j = {{"name", a->name}, {"vendor", a->vendor}, {"arch", a->name}, {"kind", a->kind},
              {"family", a->family}, {"fp8_flavor", a->fp8_flavor}, {"support", support_json(*a)},
              {"source", a->source}};
    if (!a->compute_capability.empty()) j["compute_capability"] = a->compute_capability;
    if (!a->gfx_target.empty()) j["gfx_target"] = a->gfx_target;
    j["products"] = json::array();
    for (const auto& p : members) j["products"].push_back(product_json(p));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("architecture %s (%s), %s %s\n", a->family.c_str(), a->name.c_str(), a->vendor.c_str(), a->kind.c_str());
  if (!a->compute_capability.empty()) std::printf("  compute capability %s\n", a->compute_capability.c_str());
  if (!a->gfx_target.empty()) std::printf("  target %s\n", a->gfx_target.c_str());
  std::printf("  FP8 flavour: %s\n  support:\n", a->fp8_flavor.c_str());
  print_support(*a);
  std::printf("  products:");
  for (const auto& p : members) std::printf(" %s;", p.short_name.c_str());
  std::printf("\n  source: %s\n", a->source.c_str());
  return 0;
}

int recommend(const hwdb::Database& db, const std::string& scenario, bool as_json) {
  auto r = db.recommend(scenario);
  if (!r.ok()) return fail(r.status().message(), r.status().code() == StatusCode::invalid_argument ? 2 : 1);
  if (as_json) {
    json arr = json::array();
    for (const auto& c : r->ranked)
      arr.push_back({{"product", c.product.name}, {"short_name", c.product.short_name}, {"arch", c.product.arch.name},
                     {"formats", c.formats}, {"score", c.score}, {"reasons", c.reasons}});
    json j = {{"scenario", r->scenario}, {"criterion", r->criterion}, {"recommended", arr.at(0)}, {"ranked", arr}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const auto& best = r->ranked.front();
  std::printf("scenario   %s\nranked by  %s\n\n", r->scenario.c_str(), r->criterion.c_str());
  std::printf("%s -> %s -> %s\n", r->scenario.c_str(), best.product.name.c_str(), best.formats.c_str());
  for (const auto& reason : best.reasons) std::printf("  - %s\n", reason.c_str());
  std::printf("\nrunners-up:\n");
  for (size_t k = 1; k < r->ranked.size() && k < 5; ++k) {
    const auto& c = r->ranked[k];
    std::printf("  %zu. %-34s %-22s %s\n", k + 1, c.product.name.c_str(), c.formats.c_str(), c.reasons.front().c_str());
  }
  return 0;
}

json plugins_json(const PluginHost& host) {
  json arr = json::array();
  for (const PluginRecord& r : host.records()) {
    json devices = json::array();
    for (const DeviceRecord& d : r.devices) {
      json precisions = json::object();
      for (const PrecisionSupport& p : d.precisions) precisions[p.op_class] = p.formats;
      json fingerprint = json::object();
      for (const auto& [k, v] : d.fingerprint) fingerprint[k] = v;
      devices.push_back({{"index", d.index}, {"name", d.name}, {"architecture", d.architecture},
                         {"dialect", d.dialect}, {"score", d.score}, {"score_reason", d.score_reason},
                         {"memory_bytes", d.memory_bytes}, {"compute_units", d.compute_units},
                         {"precisions", precisions}, {"fingerprint", fingerprint}, {"compiler", d.compiler},
                         {"compile_flags", d.compile_flags}});
    }
    arr.push_back({{"path", r.path}, {"name", r.name}, {"version", r.version},
                   {"abi", r.abi_major || r.abi_minor ? json(std::to_string(r.abi_major) + "." + std::to_string(r.abi_minor))
                                                      : json(nullptr)},
                   {"usable", r.usable}, {"reason", r.reason}, {"devices", devices}});
  }
  return arr;
}

// One line per file ("<path>: usable" or "<path>: <why not>"), then the plugin and its devices.
void print_plugins(const PluginHost& host) {
  std::string dirs;
  for (const std::string& d : host.search_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
  if (host.records().empty()) {
    std::printf("plugins  none found (searched %s; set HPF_PLUGIN_PATH)\n", dirs.empty() ? "nothing" : dirs.c_str());
    return;
  }
  std::printf("plugins  searched %s\n", dirs.c_str());
  for (const PluginRecord& r : host.records()) {
    std::printf("  %s: %s\n", r.path.c_str(), r.usable ? "usable" : r.reason.c_str());
    if (r.name.empty()) continue;
    std::printf("    %s %s, ABI %u.%u\n", r.name.c_str(), r.version.c_str(), r.abi_major, r.abi_minor);
    for (const DeviceRecord& d : r.devices) {
      std::printf("    device %d: %s (%s, dialect %s), score %d", d.index, d.name.c_str(), d.architecture.c_str(),
                  d.dialect.c_str(), d.score);
      if (!d.score_reason.empty()) std::printf(" (%s)", d.score_reason.c_str());
      std::printf(", %llu MiB, %d units\n", static_cast<unsigned long long>(d.memory_bytes >> 20), d.compute_units);
      for (const PrecisionSupport& p : d.precisions) {
        std::string formats;
        for (const std::string& f : p.formats) formats += (formats.empty() ? "" : " ") + f;
        std::printf("      %-14s %s\n", p.op_class.c_str(), formats.c_str());
      }
      std::string flags = d.compile_flags;
      if (flags.size() > 100) flags = flags.substr(0, 100) + "... (" + std::to_string(flags.size()) + " characters, see --json)";
      if (!d.compiler.empty())
        std::printf("      compiler %s%s%s\n", d.compiler.c_str(), flags.empty() ? "" : ", flags ", flags.c_str());
    }
  }
}

}  // namespace

int cmd_hwdb(const std::vector<std::string>& argv) {
  if (argv.empty()) return fail("hwdb needs a subcommand: list, show NAME or recommend --scenario S", 2);
  const std::string sub = argv[0];
  auto args = parse_args("hwdb " + sub, {argv.begin() + 1, argv.end()}, {"--json"}, {"--scenario"});
  if (!args.ok()) return fail(args.status().message(), 2);
  auto db = hwdb::Database::open();
  if (!db.ok()) return fail(db.status().message());
  const bool as_json = args->flag("--json");
  if (sub == "list") return list(*db, as_json);
  if (sub == "show") {
    if (args->positional.size() != 1) return fail("hwdb show needs one NAME", 2);
    return show(*db, args->positional[0], as_json);
  }
  if (sub == "recommend") {
    if (!args->options.count("--scenario"))
      return fail("hwdb recommend needs --scenario large-training|realtime-inference|edge", 2);
    return recommend(*db, args->option("--scenario"), as_json);
  }
  return fail("unknown hwdb subcommand '" + sub + "' (list, show, recommend)", 2);
}

int cmd_info(const std::vector<std::string>& argv) {
  auto args = parse_args("info", argv, {"--json"}, {});
  if (!args.ok()) return fail(args.status().message(), 2);
  const CpuInfo cpu = detect_cpu();
  auto db = hwdb::Database::open();
  Expected<hwdb::Product> match = db.ok() ? db->match_cpu(cpu) : Expected<hwdb::Product>(db.status());
  const PluginHost plugins;
  if (args->flag("--json")) {
    json flags = json::array();
    for (const auto& f : cpu.flags) flags.push_back(f);
    json j = {{"cpu",
               {{"isa", cpu.isa}, {"vendor", cpu.vendor}, {"brand", cpu.brand}, {"family", cpu.family},
                {"model", cpu.model}, {"cores", cpu.cores}, {"clock_ghz", cpu.clock_ghz},
                {"cache_bytes", {{"l1d", cpu.l1d_bytes}, {"l2", cpu.l2_bytes}, {"l3", cpu.l3_bytes}}},
                {"flags", flags}}},
              {"hwdb", db.ok() ? json(db->path()) : json(nullptr)},
              {"match", match.ok() ? product_json(*match) : json({{"error", match.status().message()}})},
              {"plugins", plugins_json(plugins)}};
    std::printf("%s\n", j.dump(2).c_str());
    return match.ok() ? 0 : 1;
  }
  std::printf("cpu      %s (%s, %s family %d model %d), %d cores at %.2f GHz\n", cpu.brand.c_str(), cpu.isa.c_str(),
              cpu.vendor.c_str(), cpu.family, cpu.model, cpu.cores, cpu.clock_ghz);
  std::printf("caches   L1d %lld KiB, L2 %lld KiB, L3 %lld KiB\n", static_cast<long long>(cpu.l1d_bytes >> 10),
              static_cast<long long>(cpu.l2_bytes >> 10), static_cast<long long>(cpu.l3_bytes >> 10));
  if (!match.ok()) return fail(match.status().message());
  std::printf("hwdb     %s\n\nmatch    ", db->path().c_str());
  print_product(*match);
  std::printf("\n");
  print_plugins(plugins);
  return 0;
}

}  // namespace hpf::cli
