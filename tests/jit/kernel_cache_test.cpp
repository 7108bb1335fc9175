// The kernel cache: round trips, keys, content checks, LRU eviction, bad files, a cache that
// cannot be written, explain, export/import, and 8 processes on one empty directory.
#include "hpf/kernel_cache.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "cache_test_util.hpp"

using namespace hpf;
using namespace hpf::testing;

TEST_CASE("kernel cache: put then get gives the same bytes, and hits, meta and stats follow") {
  ScopedEnv env;
  TempDir dir;
  KernelCache cache = open_cache(dir.path());
  REQUIRE(cache.enabled());
  CHECK(cache.path() == dir.file("kernels.sqlite"));
  const CacheKey k = key_for("void f() {}");
  CHECK_FALSE(cache.get(k).has_value());
  const auto blob =
      bytes_of(std::string("\x7f"
                           "ELF\0binary\0bytes",
                           17));
  REQUIRE(cache.put(k, blob, 12.5, R"({"ms": 0.25})").ok());
  auto got = cache.get(k);
  REQUIRE(got.has_value());
  CHECK(*got == blob);
  CHECK(cache.get(k).has_value());
  CHECK_FALSE(cache.get(key_for("void g() {}")).has_value());
  CHECK(cache.meta(k) == std::optional<std::string>(R"({"ms": 0.25})"));
  // A put without metadata keeps the old one; set_meta replaces it.
  REQUIRE(cache.put(k, blob, 11.0).ok());
  CHECK(cache.meta(k) == std::optional<std::string>(R"({"ms": 0.25})"));
  REQUIRE(cache.set_meta(k, "tuned").ok());
  CHECK(cache.meta(k) == std::optional<std::string>("tuned"));
  CHECK(cache.set_meta(key_for("absent"), "x").code() == StatusCode::not_found);
  // An empty binary is a valid entry.
  REQUIRE(cache.put(key_for("empty"), {}, 0).ok());
  auto empty = cache.get(key_for("empty"));
  REQUIRE(empty.has_value());
  CHECK(empty->empty());

  const CacheStats s = cache.stats();
  CHECK(s.enabled);
  CHECK(s.entries == 2);
  CHECK(s.bytes == 17);
  CHECK(s.total_hits == 3);
  CHECK(s.hits == 3);
  CHECK(s.misses == 2);
  CHECK(s.max_bytes == int64_t{1} << 30);
  CHECK(s.file_bytes > 0);
  const auto entries = cache.list();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].id == key_for("empty").id());  // most recently used first
  CHECK(entries[1].id == k.id());
  CHECK(entries[1].key == k);
  CHECK(entries[1].hits == 2);
  CHECK(entries[1].compile_ms == 11.0);
  CHECK(entries[1].size == 17);

  // Persisted: a second object (as another process would) sees the entry.
  KernelCache again = open_cache(dir.path());
  CHECK(again.get(k) == std::optional<std::vector<std::byte>>(blob));
  REQUIRE(again.clear().ok());
  CHECK(again.stats().entries == 0);
  CHECK_FALSE(cache.get(k).has_value());
}

TEST_CASE("kernel cache: each key part changes the id") {
  const CacheKey base{hash128_hex("fp"), "clang 19.1.7", "-O3", hash_source("src"),
                      kCacheSchemaVersion};
  const std::string id = base.id();
  CHECK(id.size() == 32);
  CHECK(CacheKey(base).id() == id);
  std::set<std::string> ids{id};
  CacheKey k = base;
  k.fingerprint = hash128_hex("other fp");
  ids.insert(k.id());
  k = base;
  k.compiler = "clang 18.1.8";
  ids.insert(k.id());
  k = base;
  k.flags = "-O2";
  ids.insert(k.id());
  k = base;
  k.source_hash = hash_source("src2");
  ids.insert(k.id());
  k = base;
  k.schema_version = kCacheSchemaVersion + 1;
  ids.insert(k.id());
  // Part boundaries count: moving text from compiler to flags is another key.
  k = base;
  k.compiler = "clang 19.1.7 -O3";
  k.flags = "";
  ids.insert(k.id());
  CHECK(ids.size() == 7);
}

TEST_CASE("kernel cache: a binary whose content hash fails is a miss, removed, with a warning") {
  ScopedEnv env;
  TempDir dir;
  KernelCache cache = open_cache(dir.path());
  const CacheKey k = key_for("kernel");
  REQUIRE(cache.put(k, bytes_of("the real binary"), 1).ok());
  CHECK(sql_value(dir.file("kernels.sqlite"),
                  "UPDATE kernel SET binary = X'DEADBEEF', size = 4 "
                  "WHERE id = '" +
                      k.id() + "' RETURNING id") == k.id());
  {
    CaptureStderr err;
    CHECK_FALSE(cache.get(k).has_value());
    CHECK(err.text().find("kernel cache: entry " + k.id() + " in '" + dir.file("kernels.sqlite") +
                          "' is bad (its content hash does not match); removed it, the kernel will "
                          "be recompiled") != std::string::npos);
  }
  CHECK(sql_value(dir.file("kernels.sqlite"), "SELECT count(*) FROM kernel") == "0");
  CHECK(cache.stats().bad_rows == 1);
  // Recompiled and stored again: a hit.
  REQUIRE(cache.put(k, bytes_of("the real binary"), 1).ok());
  CHECK(cache.get(k) == std::optional<std::vector<std::byte>>(bytes_of("the real binary")));
  // A row whose size or key parts disagree is bad too.
  sql_value(dir.file("kernels.sqlite"), "UPDATE kernel SET compiler = 'gcc' RETURNING id");
  {
    CaptureStderr err;
    CHECK_FALSE(cache.get(k).has_value());
    CHECK(err.text().find("its key parts do not match its id") != std::string::npos);
  }
}

TEST_CASE("kernel cache: over the cap, the least recently used entries are evicted") {
  ScopedEnv env;
  TempDir dir;
  KernelCache cache = open_cache(dir.path(), 3000);
  const std::vector<std::byte> blob(1000, std::byte{7});
  const CacheKey a = key_for("a"), b = key_for("b"), c = key_for("c"), d = key_for("d");
  REQUIRE(cache.put(a, blob, 1).ok());
  REQUIRE(cache.put(b, blob, 1).ok());
  REQUIRE(cache.put(c, blob, 1).ok());
  REQUIRE(cache.get(a).has_value());  // a is now more recent than b and c
  REQUIRE(cache.put(d, blob, 1).ok());
  CHECK(cache.stats().entries == 3);
  CHECK(cache.stats().bytes == 3000);
  CHECK(cache.stats().evictions == 1);
  CHECK_FALSE(cache.get(b).has_value());
  CHECK(cache.get(a).has_value());
  CHECK(cache.get(c).has_value());
  CHECK(cache.get(d).has_value());
  // One binary bigger than the whole cap is not stored (and evicts nothing).
  REQUIRE(cache.put(key_for("huge"), std::vector<std::byte>(3001), 1).ok());
  CHECK_FALSE(cache.get(key_for("huge")).has_value());
  CHECK(cache.stats().entries == 3);

  SUBCASE("HPF_CACHE_MAX_BYTES sets the cap; a bad value is a warning and the default") {
    env.set("HPF_CACHE_MAX_BYTES", "2K");
    CHECK(open_cache(dir.path()).stats().max_bytes == 2048);
    env.set("HPF_CACHE_MAX_BYTES", "lots");
    CaptureStderr err;
    CHECK(open_cache(dir.path()).stats().max_bytes == int64_t{1} << 30);
    CHECK(err.text().find("ignoring HPF_CACHE_MAX_BYTES='lots'") != std::string::npos);
  }
  SUBCASE("a non-positive max_bytes option is an error") {
    KernelCacheOptions o;
    o.dir = dir.path();
    o.max_bytes = 0;
    auto bad = KernelCache::open(o);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message() == "kernel cache: max_bytes must be positive, not 0");
  }
}

TEST_CASE(
    "kernel cache: a file overwritten with random bytes is moved aside and nothing else is lost") {
  ScopedEnv env;
  TempDir dir;
  {
    KernelCache cache = open_cache(dir.path());
    REQUIRE(cache.put(key_for("k"), bytes_of("binary"), 1).ok());
  }
  std::string noise(64 * 1024, '\0');
  std::mt19937 rng(42);
  for (char& ch : noise) ch = static_cast<char>(rng());
  std::ofstream(dir.file("kernels.sqlite"), std::ios::binary | std::ios::trunc) << noise;
  std::ofstream(dir.file("notes.txt")) << "keep me";

  CaptureStderr err;
  KernelCache cache = open_cache(dir.path());
  REQUIRE(cache.enabled());
  const std::string log = err.text();
  CHECK(log.find("kernel cache: '" + dir.file("kernels.sqlite") +
                 "' is not a usable SQLite database "
                 "(file is not a database); moved it aside to '" +
                 dir.file("kernels.sqlite.corrupt-")) != std::string::npos);
  CHECK(count_of(log, "warning") == 1);
  const auto aside = files_starting(dir.path(), "kernels.sqlite.corrupt-");
  REQUIRE(aside.size() == 1);
  std::ifstream in(aside[0], std::ios::binary);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(kept == noise);
  CHECK(std::filesystem::exists(dir.file("notes.txt")));
  // The new cache works: a miss, then a round trip.
  CHECK_FALSE(cache.get(key_for("k")).has_value());
  REQUIRE(cache.put(key_for("k"), bytes_of("binary"), 1).ok());
  CHECK(cache.get(key_for("k")).has_value());
  CHECK(sql_value(dir.file("kernels.sqlite"), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("kernel cache: a truncated file is moved aside") {
  ScopedEnv env;
  TempDir dir;
  {
    KernelCache cache = open_cache(dir.path());
    for (int i = 0; i < 40; ++i)
      REQUIRE(
          cache.put(key_for("k" + std::to_string(i)), std::vector<std::byte>(6000, std::byte(i)), 1)
              .ok());
  }
  const auto size = std::filesystem::file_size(dir.file("kernels.sqlite"));
  REQUIRE(size > 100000);
  std::filesystem::resize_file(dir.file("kernels.sqlite"), size / 3);
  CaptureStderr err;
  KernelCache cache = open_cache(dir.path());
  REQUIRE(cache.enabled());
  CHECK(err.text().find("moved it aside") != std::string::npos);
  CHECK(files_starting(dir.path(), "kernels.sqlite.corrupt-").size() == 1);
  CHECK(cache.stats().entries == 0);
}

TEST_CASE("kernel cache: a foreign SQLite file, or another schema version, is moved aside") {
  ScopedEnv env;
  TempDir dir;
  SUBCASE("someone else's database") {
    sql_value(dir.file("kernels.sqlite"), "CREATE TABLE photos(id INTEGER, name TEXT)");
    CaptureStderr err;
    KernelCache cache = open_cache(dir.path());
    REQUIRE(cache.enabled());
    CHECK(err.text().find("is an SQLite database but not an hpf kernel cache (application_id 0x0, "
                          "1 schema objects); moved it aside") != std::string::npos);
    const auto aside = files_starting(dir.path(), "kernels.sqlite.corrupt-");
    REQUIRE(aside.size() == 1);
    CHECK(sql_value(aside[0], "SELECT count(*) FROM sqlite_schema WHERE name = 'photos'") == "1");
  }
  SUBCASE("a kernel cache of another schema version") {
    { open_cache(dir.path()); }
    sql_value(dir.file("kernels.sqlite"), "PRAGMA user_version = 99");
    CaptureStderr err;
    KernelCache cache = open_cache(dir.path());
    REQUIRE(cache.enabled());
    CHECK(err.text().find("is a kernel cache of schema version 99; this libhpf uses version 1") !=
          std::string::npos);
    CHECK(sql_value(dir.file("kernels.sqlite"), "PRAGMA user_version") == "1");
  }
  SUBCASE("our application id but a table missing a column") {
    { open_cache(dir.path()); }
    sql_value(dir.file("kernels.sqlite"), "ALTER TABLE kernel DROP COLUMN meta");
    CaptureStderr err;
    KernelCache cache = open_cache(dir.path());
    CHECK(err.text().find("fails the schema check (kernel lacks columns meta)") !=
          std::string::npos);
  }
}

TEST_CASE("kernel cache: an unwritable directory means no cache, one warning, no crash") {
  ScopedEnv env;
  TempDir dir;
  auto use_disabled = [](KernelCache& cache) {
    CHECK_FALSE(cache.enabled());
    CHECK(cache.path().empty());
    CHECK(cache.put(key_for("k"), bytes_of("b"), 1).ok());
    CHECK_FALSE(cache.get(key_for("k")).has_value());
    CHECK_FALSE(cache.stats().enabled);
    CHECK(cache.list().empty());
    CHECK(cache.explain(key_for("k")).status().code() == StatusCode::unsupported);
    CHECK_FALSE(cache.export_to("/nonexistent/x").ok());
  };
  SUBCASE("a directory that cannot be created (its parent is a file)") {
    std::ofstream(dir.file("plain-file")) << "x";
    CaptureStderr err;
    KernelCache cache = open_cache(dir.file("plain-file/cache"));
    const std::string log = err.text();
    CHECK(count_of(log, "warning") == 1);
    CHECK(log.find("kernel cache: cannot create the cache directory '" +
                   dir.file("plain-file/cache") +
                   "': Not a directory; running without a kernel cache") != std::string::npos);
    use_disabled(cache);
    CHECK(cache.stats().disabled_reason.find("cannot create the cache directory") == 0);
  }
  SUBCASE("a directory without write permission") {
    const std::string ro = dir.file("readonly");
    std::filesystem::create_directory(ro);
    ::chmod(ro.c_str(), 0500);
    // root (and CAP_DAC_OVERRIDE) writes regardless of the mode bits: nothing to test then.
    const bool writes_anyway = ::access(ro.c_str(), W_OK) == 0;
    if (writes_anyway) {
      MESSAGE(
          "skipped: this process can write to a mode-0500 directory (running as root), so the "
          "permission check cannot be exercised");
      return;
    }
    CaptureStderr err;
    KernelCache cache = open_cache(ro);
    CHECK(count_of(err.text(), "warning") == 1);
    CHECK(err.text().find("is not writable") != std::string::npos);
    use_disabled(cache);
  }
}

TEST_CASE("kernel cache: HPF_CACHE=0 or the disabled option turns it off quietly") {
  ScopedEnv env;
  TempDir dir;
  CaptureStderr err;
  env.set("HPF_CACHE", "0");
  KernelCache off = open_cache(dir.path());
  CHECK_FALSE(off.enabled());
  CHECK(off.stats().disabled_reason == "turned off by HPF_CACHE=0");
  CHECK(off.put(key_for("k"), bytes_of("b"), 1).ok());
  CHECK_FALSE(off.get(key_for("k")).has_value());
  CHECK_FALSE(std::filesystem::exists(dir.file("kernels.sqlite")));
  env.unset("HPF_CACHE");
  KernelCacheOptions o;
  o.dir = dir.path();
  o.disabled = true;
  auto by_option = KernelCache::open(o);
  REQUIRE(by_option.ok());
  CHECK_FALSE(by_option->enabled());
  CHECK(err.text().find("warning") == std::string::npos);
  // HPF_CACHE_DIR is used when no directory is given.
  env.set("HPF_CACHE_DIR", dir.file("from-env"));
  auto from_env = KernelCache::open();
  REQUIRE(from_env.ok());
  CHECK(from_env->path() == dir.file("from-env/kernels.sqlite"));
}

TEST_CASE("kernel cache: explain names the parts of a key and, for a miss, what differs") {
  ScopedEnv env;
  TempDir dir;
  KernelCache cache = open_cache(dir.path());
  CpuInfo cpu;
  cpu.vendor = "GenuineIntel";
  cpu.flags = {"avx2", "fma", "avx512f"};
  const Fingerprint here = cpu_fingerprint(cpu);
  cpu.flags.erase("avx512f");
  cpu.flags.insert("sse4a");
  const Fingerprint there = cpu_fingerprint(cpu);
  REQUIRE(cache.register_fingerprint(here).ok());
  REQUIRE(cache.register_fingerprint(there).ok());

  const CacheKey stored{there.digest(), "clang 19.1.7", "-O3", hash_source("kernel")};
  REQUIRE(cache.put(stored, bytes_of("bin"), 1).ok());
  {
    auto ex = cache.explain(stored.id().substr(0, 8));
    REQUIRE(ex.ok());
    CHECK(ex->hit());
    CHECK(ex->origin == "entry");
    CHECK(ex->id == stored.id());
    CHECK(ex->key == stored);
    CHECK(ex->summary().rfind("hit: entry " + stored.id(), 0) == 0);
  }
  // A miss with another compiler and another CPU: recorded, then explained by its id.
  CacheKey wanted = stored;
  wanted.fingerprint = here.digest();
  wanted.compiler = "clang 19.1.8";
  CHECK_FALSE(cache.get(wanted).has_value());
  auto ex = cache.explain(wanted.id());
  REQUIRE(ex.ok());
  CHECK_FALSE(ex->hit());
  CHECK(ex->origin == "recorded miss");
  CHECK(ex->key == wanted);
  REQUIRE(ex->nearest.has_value());
  CHECK(ex->nearest->id == stored.id());
  REQUIRE(ex->differing.size() == 2);
  CHECK(ex->differing[0].part == "fingerprint");
  CHECK(ex->differing[1].part == "compiler");
  CHECK(ex->differing[1].wanted == "clang 19.1.8");
  CHECK(ex->differing[1].stored == "clang 19.1.7");
  REQUIRE(ex->fingerprint_fields.size() == 1);
  CHECK(ex->fingerprint_fields[0].part == "cpu.flags");
  CHECK(ex->fingerprint_fields[0].detail == "wanted has avx512f; stored has sse4a");
  CHECK(ex->summary() == "miss: nearest entry " + stored.id() +
                             " differs in fingerprint, compiler (cpu.flags: wanted has avx512f; "
                             "stored has sse4a)");
  // Only the flags differ: the nearest of two entries is the one sharing more parts.
  CacheKey other_src = stored;
  other_src.source_hash = hash_source("another kernel");
  other_src.flags = "-O1";
  REQUIRE(cache.put(other_src, bytes_of("bin2"), 1).ok());
  CacheKey flags_only = stored;
  flags_only.flags = "-O2";
  auto ex2 = cache.explain(flags_only);
  REQUIRE(ex2.ok());
  CHECK(ex2->origin == "given");
  REQUIRE(ex2->nearest.has_value());
  CHECK(ex2->nearest->id == stored.id());
  REQUIRE(ex2->differing.size() == 1);
  CHECK(ex2->differing[0].part == "flags");

  CHECK(cache.explain("zz").status().message() ==
        "kernel cache: 'zz' is not a key id (4 to 32 hex digits; see hpf cache ls)");
  CHECK(cache.explain("0000ffff").status().code() == StatusCode::not_found);
  REQUIRE(cache.clear().ok());
  auto empty = cache.explain(stored);
  REQUIRE(empty.ok());
  CHECK(empty->summary() == "miss: the cache holds no entries");
}

TEST_CASE("kernel cache: export and import round-trip, and bad rows and bad files are refused") {
  ScopedEnv env;
  TempDir a_dir, b_dir, out;
  KernelCache a = open_cache(a_dir.path());
  for (int i = 0; i < 3; ++i)
    REQUIRE(
        a.put(key_for("k" + std::to_string(i)), bytes_of("bin" + std::to_string(i)), i, "m").ok());
  auto n = a.export_to(out.file("export.sqlite"));
  REQUIRE_MESSAGE(n.ok(), n.status().to_string());
  CHECK(*n == 3);
  CHECK(sql_value(out.file("export.sqlite"), "PRAGMA integrity_check") == "ok");

  KernelCache b = open_cache(b_dir.path());
  REQUIRE(b.put(key_for("k0"), bytes_of("bin0"), 0).ok());
  auto r = b.import_from(out.file("export.sqlite"));
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->imported == 2);
  CHECK(r->already_present == 1);
  CHECK(r->skipped_bad == 0);
  for (int i = 0; i < 3; ++i)
    CHECK(b.get(key_for("k" + std::to_string(i))) ==
          std::optional<std::vector<std::byte>>(bytes_of("bin" + std::to_string(i))));
  CHECK(b.meta(key_for("k2")) == std::optional<std::string>("m"));

  // A row whose binary was changed in the file is skipped, with a warning.
  sql_value(out.file("export.sqlite"), "UPDATE kernel SET binary = X'00' WHERE id = '" +
                                           key_for("k1").id() + "' RETURNING id");
  TempDir c_dir;
  KernelCache c = open_cache(c_dir.path());
  CaptureStderr err;
  auto r2 = c.import_from(out.file("export.sqlite"));
  REQUIRE(r2.ok());
  CHECK(r2->imported == 2);
  CHECK(r2->skipped_bad == 1);
  CHECK(err.text().find("skipped 1 entries whose content hash or key did not check") !=
        std::string::npos);
  CHECK_FALSE(c.get(key_for("k1")).has_value());

  std::ofstream(out.file("noise.bin")) << std::string(4096, 'x');
  auto bad = c.import_from(out.file("noise.bin"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("is not an SQLite database") != std::string::npos);
  sql_value(out.file("other.sqlite"), "CREATE TABLE t(x)");
  CHECK(c.import_from(out.file("other.sqlite")).status().message() ==
        "kernel cache: '" + out.file("other.sqlite") + "' is not an hpf kernel cache");
  CHECK(c.import_from(out.file("absent.sqlite")).status().code() == StatusCode::not_found);
}

TEST_CASE("kernel cache: one KernelCache shared by threads") {
  ScopedEnv env;
  TempDir dir;
  KernelCache cache = open_cache(dir.path());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const CacheKey k = key_for("t" + std::to_string(t) + "/" + std::to_string(i));
        const auto blob = bytes_of("binary " + std::to_string(t * 100 + i));
        if (!cache.put(k, blob, 1).ok() ||
            cache.get(k) != std::optional<std::vector<std::byte>>(blob))
          ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(cache.stats().entries == 100);
}

namespace {

// One child of the multi-process test: 50 puts and gets, 10 of them on keys every child shares.
int child_work(const std::string& dir, int child) {
  try {
    KernelCacheOptions o;
    o.dir = dir;
    auto cache = KernelCache::open(o);
    if (!cache.ok() || !cache->enabled()) return 2;
    for (int j = 0; j < 50; ++j) {
      const std::string name = j < 10 ? "shared/" + std::to_string(j)
                                      : "child" + std::to_string(child) + "/" + std::to_string(j);
      const CacheKey k = key_for(name);
      const auto blob =
          bytes_of("binary of " + name + std::string(static_cast<size_t>(j) * 40, '.'));
      if (!cache->put(k, blob, j).ok()) return 3;
      auto got = cache->get(k);
      if (!got || *got != blob) return 4;
    }
    return cache->stats().bad_rows == 0 ? 0 : 5;
  } catch (...) {
    return 6;
  }
}

}  // namespace

TEST_CASE("kernel cache: 8 processes started at once on one empty directory all succeed") {
  ScopedEnv env;
  TempDir dir;
  const std::string cache_dir = dir.file("shared-cache");  // not even created yet
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      char ch;
      while (::read(go[0], &ch, 1) < 0 && errno == EINTR) {
      }  // returns 0 when the parent closes its end: all start together
      ::_exit(child_work(cache_dir, i));
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    REQUIRE(::waitpid(children[i], &status, 0) == children[i]);
    CHECK_MESSAGE(WIFEXITED(status), "child " << i << " did not exit normally");
    CHECK_MESSAGE(WEXITSTATUS(status) == 0,
                  "child " << i << " failed with code " << WEXITSTATUS(status));
  }
  const std::string file = cache_dir + "/kernels.sqlite";
  CHECK(sql_value(file, "PRAGMA integrity_check") == "ok");
  CHECK(sql_value(file, "SELECT count(*) FROM kernel") == std::to_string(10 + 8 * 40));
  CHECK(sql_value(file, "PRAGMA journal_mode") == "wal");
  CHECK(files_starting(cache_dir, "kernels.sqlite.corrupt-").empty());
}
