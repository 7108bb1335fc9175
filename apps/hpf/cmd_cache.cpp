// hpf cache stats|ls|clear|explain|export|import: the kernel cache from the command line.
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/hpf/cli.hpp"
#include "hpf/kernel_cache.hpp"

namespace hpf::cli {
namespace {

using nlohmann::json;

const char* kCacheUsage =
    "usage: hpf cache COMMAND [--json]\n"
    "  stats            where the cache is, how many entries, how big, hits\n"
    "  ls               entries, most recently used first\n"
    "  clear            remove every entry\n"
    "  explain KEY      the parts of a key (an entry's or a recorded miss's id, or a unique "
    "prefix\n"
    "                   of 4+ digits) and, for a miss, which parts differ from the nearest entry;\n"
    "                   or give the parts: --fingerprint D --compiler C --flags F --source-hash H\n"
    "                   [--schema N]\n"
    "  export FILE      copy the cache into FILE (an SQLite file)\n"
    "  import FILE      merge the entries of FILE; entries that fail their checks are skipped\n"
    "environment: HPF_CACHE_DIR (directory), HPF_CACHE=0 (off), HPF_CACHE_MAX_BYTES (cap)\n";

std::string when(int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string bytes(int64_t n) {
  char buf[32];
  if (n < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  else if (n < (1 << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else if (n < (1 << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  return buf;
}

// Long values (a CPU's flag list) in full only in --json.
std::string elide(const std::string& s) { return s.size() <= 80 ? s : s.substr(0, 77) + "..."; }

json key_json(const CacheKey& k) {
  return {{"fingerprint", k.fingerprint},
          {"compiler", k.compiler},
          {"flags", k.flags},
          {"source_hash", k.source_hash},
          {"schema_version", k.schema_version}};
}

json entry_json(const CacheEntry& e) {
  return {{"id", e.id},
          {"key", key_json(e.key)},
          {"size", e.size},
          {"content_hash", e.content_hash},
          {"compile_ms", e.compile_ms},
          {"created", when(e.created_us)},
          {"last_used", when(e.last_used_us)},
          {"hits", e.hits},
          {"meta", e.meta}};
}

json diffs_json(const std::vector<KeyPartDiff>& diffs) {
  json a = json::array();
  for (const auto& d : diffs) {
    json j = {{"part", d.part}, {"wanted", d.wanted}, {"stored", d.stored}};
    if (!d.detail.empty()) j["detail"] = d.detail;
    a.push_back(j);
  }
  return a;
}

int stats(KernelCache& cache, bool as_json) {
  const CacheStats s = cache.stats();
  if (as_json) {
    json j = {{"enabled", s.enabled},       {"path", s.path},
              {"entries", s.entries},       {"bytes", s.bytes},
              {"file_bytes", s.file_bytes}, {"max_bytes", s.max_bytes},
              {"total_hits", s.total_hits}, {"schema_version", kCacheSchemaVersion}};
    if (!s.enabled) j["disabled_reason"] = s.disabled_reason;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (!s.enabled) {
    std::printf("kernel cache  off: %s\n", s.disabled_reason.c_str());
    return 0;
  }
  std::printf("kernel cache  %s\n", s.path.c_str());
  std::printf("entries       %lld\n", static_cast<long long>(s.entries));
  std::printf("size          %s of %s (%.0f%%)\n", bytes(s.bytes).c_str(),
              bytes(s.max_bytes).c_str(),
              100.0 * static_cast<double>(s.bytes) / static_cast<double>(s.max_bytes));
  std::printf("file          %s\n", bytes(s.file_bytes).c_str());
  std::printf("hits          %lld\n", static_cast<long long>(s.total_hits));
  std::printf("schema        %d\n", kCacheSchemaVersion);
  return 0;
}

int ls(KernelCache& cache, bool as_json) {
  const auto entries = cache.list();
  if (as_json) {
    json a = json::array();
    for (const auto& e : entries) a.push_back(entry_json(e));
    std::printf("%s\n", a.dump(2).c_str());
    return 0;
  }
  std::printf("%-12s %10s %6s %10s  %-20s  %-20s %s\n", "id", "size", "hits", "compile ms",
              "last used", "compiler", "flags");
  for (const auto& e : entries)
    std::printf("%-12s %10s %6lld %10.1f  %-20s  %-20s %s\n", e.id.substr(0, 12).c_str(),
                bytes(e.size).c_str(), static_cast<long long>(e.hits), e.compile_ms,
                when(e.last_used_us).c_str(), e.key.compiler.c_str(), e.key.flags.c_str());
  if (!cache.enabled())
    std::printf("(the kernel cache is off: %s)\n", cache.stats().disabled_reason.c_str());
  else
    std::printf("%zu entries in %s\n", entries.size(), cache.path().c_str());
  return 0;
}

int explain(KernelCache& cache, const Args& args, bool as_json) {
  Expected<CacheExplanation> ex = Status::invalid("");
  if (args.positional.size() == 1) {
    ex = cache.explain(args.positional[0]);
  } else if (args.positional.empty() && !args.options.empty()) {
    CacheKey key{args.option("--fingerprint"), args.option("--compiler"), args.option("--flags"),
                 args.option("--source-hash")};
    if (args.options.count("--schema")) {
      try {
        key.schema_version = std::stoi(args.option("--schema"));
      } catch (...) {
        return fail("cache explain: --schema needs a number, not '" + args.option("--schema") + "'",
                    2);
      }
    }
    ex = cache.explain(key);
  } else {
    return fail("cache explain needs one KEY, or the key's parts as options (see hpf cache --help)",
                2);
  }
  if (!ex.ok())
    return fail(ex.status().message(), ex.status().code() == StatusCode::invalid_argument ? 2 : 1);
  if (as_json) {
    json j = {{"id", ex->id},
              {"origin", ex->origin},
              {"key", key_json(ex->key)},
              {"hit", ex->hit()},
              {"entry", ex->entry ? entry_json(*ex->entry) : json(nullptr)},
              {"nearest", ex->nearest ? entry_json(*ex->nearest) : json(nullptr)},
              {"differing", diffs_json(ex->differing)},
              {"fingerprint_fields", diffs_json(ex->fingerprint_fields)},
              {"summary", ex->summary()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("key %s (%s)\n", ex->id.c_str(), ex->origin.c_str());
  const CacheKey& k = ex->key;
  std::printf(
      "  fingerprint     %s\n  compiler        %s\n  flags           %s\n  source_hash     %s\n"
      "  schema_version  %d\n",
      k.fingerprint.c_str(), k.compiler.c_str(), k.flags.c_str(), k.source_hash.c_str(),
      k.schema_version);
  std::printf("%s\n", ex->summary().c_str());
  for (const auto& d : ex->differing)
    std::printf("  %-15s wanted '%s'\n  %-15s stored '%s'\n", d.part.c_str(), d.wanted.c_str(), "",
                d.stored.c_str());
  for (const auto& d : ex->fingerprint_fields) {
    if (!d.detail.empty())
      std::printf("  fingerprint field %s: %s\n", d.part.c_str(), d.detail.c_str());
    else
      std::printf("  fingerprint field %s: wanted '%s', stored '%s'\n", d.part.c_str(),
                  elide(d.wanted).c_str(), elide(d.stored).c_str());
  }
  return 0;
}

}  // namespace

int cmd_cache(const std::vector<std::string>& argv) {
  if (!argv.empty() && (argv[0] == "--help" || argv[0] == "-h")) {
    std::fputs(kCacheUsage, stdout);
    return 0;
  }
  if (argv.empty()) return fail(std::string("cache needs a command\n") + kCacheUsage, 2);
  const std::string sub = argv[0];
  if (sub != "stats" && sub != "ls" && sub != "clear" && sub != "explain" && sub != "export" &&
      sub != "import")
    return fail("unknown cache command '" + sub + "' (stats, ls, clear, explain, export, import)",
                2);
  const std::set<std::string> options =
      sub == "explain" ? std::set<std::string>{"--fingerprint", "--compiler", "--flags",
                                               "--source-hash", "--schema"}
                       : std::set<std::string>{};
  auto args = parse_args("cache " + sub, {argv.begin() + 1, argv.end()}, {"--json"}, options);
  if (!args.ok()) return fail(args.status().message(), 2);
  const bool as_json = args->flag("--json");
  const size_t want_positional = (sub == "export" || sub == "import") ? 1 : 0;
  if (sub != "explain" && args->positional.size() != want_positional)
    return fail("cache " + sub + (want_positional ? " needs one FILE" : " takes no arguments"), 2);

  auto cache = KernelCache::open();
  if (!cache.ok()) return fail(cache.status().message());
  if (sub == "stats") return stats(*cache, as_json);
  if (sub == "ls") return ls(*cache, as_json);
  if (sub == "explain") return explain(*cache, *args, as_json);
  if (!cache->enabled()) return fail("the kernel cache is off: " + cache->stats().disabled_reason);
  const std::string path = cache->path();
  if (sub == "clear") {
    auto n = cache->clear();
    if (!n.ok()) return fail(n.status().message());
    if (as_json)
      std::printf("%s\n", json({{"removed", *n}, {"path", path}}).dump(2).c_str());
    else
      std::printf("removed %lld entries from %s\n", static_cast<long long>(*n), path.c_str());
    return 0;
  }
  const std::string file = args->positional[0];
  if (sub == "export") {
    auto n = cache->export_to(file);
    if (!n.ok()) return fail(n.status().message());
    if (as_json)
      std::printf("%s\n", json({{"exported", *n}, {"file", file}}).dump(2).c_str());
    else
      std::printf("exported %lld entries to %s\n", static_cast<long long>(*n), file.c_str());
    return 0;
  }
  auto r = cache->import_from(file);
  if (!r.ok()) return fail(r.status().message());
  if (as_json) {
    std::printf("%s\n", json({{"imported", r->imported},
                              {"already_present", r->already_present},
                              {"skipped_bad", r->skipped_bad},
                              {"evicted", r->evicted},
                              {"file", file}})
                            .dump(2)
                            .c_str());
  } else {
    std::printf(
        "imported %lld entries from %s (%lld already present, %lld skipped: failed their checks, "
        "%lld evicted)\n",
        static_cast<long long>(r->imported), file.c_str(),
        static_cast<long long>(r->already_present), static_cast<long long>(r->skipped_bad),
        static_cast<long long>(r->evicted));
  }
  return 0;
}

}  // namespace hpf::cli
