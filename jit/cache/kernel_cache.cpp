// The kernel cache's entries: get, put, eviction, listing, explain, export and import.
// Opening the file, its checks and moving a bad file aside are in cache_file.cpp.
#include "hpf/kernel_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "hpf/log.hpp"
#include "jit/cache/cache_file.hpp"

namespace hpf {
namespace {

namespace fs = std::filesystem;
using cache_detail::is_corrupt;
using cache_detail::now_us;

constexpr const char* kEntryColumns =
    "id, fingerprint, compiler, flags, source_hash, schema_version, size, content_hash, "
    "compile_ms, created, last_used, hits, meta";

CacheEntry read_entry(const sql::Stmt& s) {
  CacheEntry e;
  e.id = s.text(0);
  e.key = {s.text(1), s.text(2), s.text(3), s.text(4), static_cast<int>(s.integer(5))};
  e.size = s.integer(6);
  e.content_hash = s.text(7);
  e.compile_ms = s.real(8);
  e.created_us = s.integer(9);
  e.last_used_us = s.integer(10);
  e.hits = s.integer(11);
  e.meta = s.text(12);
  return e;
}

// Keeps the most recently used entries whose sizes add up to at most the cap; one statement.
Expected<int64_t> evict(KernelCache::Impl& m) {
  sql::Stmt e(m.db,
              "DELETE FROM kernel WHERE id IN (SELECT id FROM (SELECT id, sum(size) OVER "
              "(ORDER BY last_used DESC, id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
              "AS running FROM kernel) WHERE running > ?1)");
  e.bind(1, m.max_bytes);
  e.step();
  if (!e.done()) return Status::io_error("kernel cache: evicting: " + e.error());
  const int64_t n = sqlite3_changes(m.db);
  if (n)
    log(LogLevel::debug,
        fmt::format("kernel cache: evicted {} entries to stay under {} bytes", n, m.max_bytes));
  return n;
}

// The miss table only serves explain(): the last 1000 misses are plenty.
int trim_misses(KernelCache::Impl& m) {
  sql::Stmt t(
      m.db,
      "DELETE FROM miss WHERE at < (SELECT at FROM miss ORDER BY at DESC LIMIT 1 OFFSET 999)");
  t.step();
  return t.done() ? SQLITE_OK : t.rc();
}

std::string lower_hex(std::string_view id) {
  std::string out;
  for (char c : id) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    out += c;
  }
  return out;
}

std::set<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string t; in >> t;) out.insert(t);
  return out;
}

std::string token_detail(const std::string& wanted, const std::string& stored) {
  if (wanted.find(' ') == std::string::npos || stored.find(' ') == std::string::npos) return "";
  const auto w = tokens(wanted), s = tokens(stored);
  std::string only_w, only_s;
  for (const auto& t : w)
    if (!s.count(t)) only_w += (only_w.empty() ? "" : " ") + t;
  for (const auto& t : s)
    if (!w.count(t)) only_s += (only_s.empty() ? "" : " ") + t;
  if (only_w.empty() && only_s.empty()) return "the same items in another order";
  std::string out;
  if (!only_w.empty()) out = "wanted has " + only_w;
  if (!only_s.empty()) out += (out.empty() ? "" : "; ") + ("stored has " + only_s);
  return out;
}

std::vector<KeyPartDiff> diff_fields(const Fingerprint& wanted, const Fingerprint& stored) {
  std::vector<KeyPartDiff> out;
  std::set<std::string> keys;
  for (const auto& [k, v] : wanted.fields) keys.insert(k);
  for (const auto& [k, v] : stored.fields) keys.insert(k);
  for (const auto& k : keys) {
    const std::string* w = wanted.find(k);
    const std::string* s = stored.find(k);
    if (w && s && *w == *s) continue;
    KeyPartDiff d{k, w ? *w : "(absent)", s ? *s : "(absent)", ""};
    if (w && s) d.detail = token_detail(*w, *s);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::string hash_source(std::string_view source) { return hash128_hex(source); }

std::string CacheKey::id() const {
  std::string bytes;
  for (const std::string* s : {&fingerprint, &compiler, &flags, &source_hash}) {
    bytes += std::to_string(s->size());
    bytes += ':';
    bytes += *s;
  }
  bytes += "schema:" + std::to_string(schema_version);
  return hash128_hex(bytes);
}

std::string CacheExplanation::summary() const {
  if (entry)
    return fmt::format("hit: entry {} ({} bytes, {} hits)", entry->id, entry->size, entry->hits);
  if (!nearest) return "miss: the cache holds no entries";
  std::string parts;
  for (const auto& d : differing) parts += (parts.empty() ? "" : ", ") + d.part;
  std::string fields;
  for (const auto& d : fingerprint_fields)
    fields += (fields.empty() ? "" : "; ") + d.part + (d.detail.empty() ? "" : ": " + d.detail);
  return fmt::format("miss: nearest entry {} differs in {}{}", nearest->id, parts,
                     fields.empty() ? "" : " (" + fields + ")");
}

KernelCache::KernelCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KernelCache::KernelCache(KernelCache&&) noexcept = default;
KernelCache& KernelCache::operator=(KernelCache&&) noexcept = default;
KernelCache::~KernelCache() = default;

Expected<KernelCache> KernelCache::open(const KernelCacheOptions& options) {
  HPF_ASSIGN_OR_RETURN(auto impl, cache_detail::open_cache(options));
  return KernelCache(std::move(impl));
}

bool KernelCache::enabled() const {
  std::lock_guard lock(impl_->mu);
  return impl_->db != nullptr;
}

std::string KernelCache::path() const {
  std::lock_guard lock(impl_->mu);
  return impl_->db ? impl_->path : "";
}

std::optional<std::vector<std::byte>> KernelCache::get(const CacheKey& key) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return std::nullopt;
  const std::string id = key.id();
  auto miss = [&]() -> std::optional<std::vector<std::byte>> {
    ++m.misses;
    if (!m.db) return std::nullopt;
    sql::Stmt r(
        m.db,
        "INSERT INTO miss(id, fingerprint, compiler, flags, source_hash, schema_version, at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT(id) DO UPDATE SET at = excluded.at, count = count + 1");
    r.bind(1, id).bind(2, key.fingerprint).bind(3, key.compiler).bind(4, key.flags);
    r.bind(5, key.source_hash).bind(6, int64_t{key.schema_version}).bind(7, now_us());
    r.step();
    if (!r.done()) log(LogLevel::debug, "kernel cache: could not record a miss: " + r.error());
    return std::nullopt;
  };

  sql::Stmt s(m.db,
              "SELECT fingerprint, compiler, flags, source_hash, schema_version, binary, "
              "content_hash, size FROM kernel WHERE id = ?1");
  s.bind(1, id);
  if (!s.step()) {
    if (is_corrupt(s.rc())) {
      cache_detail::recover(m, "is corrupt (reading entry " + id + ": " + s.error() + ")");
    } else if (!s.done()) {
      log(LogLevel::warn, fmt::format("kernel cache: reading entry {} from '{}' failed ({}); "
                                      "treating it as a miss",
                                      id, m.path, s.error()));
    }
    return miss();
  }
  const CacheKey stored{s.text(0), s.text(1), s.text(2), s.text(3), static_cast<int>(s.integer(4))};
  const std::span<const std::byte> blob = s.blob(5);
  const std::string want_hash = s.text(6);
  std::string why;
  if (stored != key) {
    why = "its key parts do not match its id";
  } else if (static_cast<int64_t>(blob.size()) != s.integer(7)) {
    why = fmt::format("its size is {} bytes, {} recorded", blob.size(), s.integer(7));
  } else if (hash128_hex({reinterpret_cast<const char*>(blob.data()), blob.size()}) != want_hash) {
    why = "its content hash does not match";
  }
  if (!why.empty()) {
    s.reset();
    ++m.bad_rows;
    log(LogLevel::warn, fmt::format("kernel cache: entry {} in '{}' is bad ({}); removed it, "
                                    "the kernel will be recompiled",
                                    id, m.path, why));
    // Only the bad version: another process may have stored a good one meanwhile.
    sql::Stmt d(m.db, "DELETE FROM kernel WHERE id = ?1 AND content_hash IS ?2");
    d.bind(1, id).bind(2, want_hash);
    d.step();
    if (!d.done()) log(LogLevel::debug, "kernel cache: could not delete a bad entry: " + d.error());
    return miss();
  }
  std::vector<std::byte> out(blob.begin(), blob.end());
  s.reset();

  sql::Stmt u(m.db,
              "UPDATE kernel SET hits = hits + 1, "
              "last_used = max(?2, (SELECT max(last_used) FROM kernel) + 1) WHERE id = ?1");
  u.bind(1, id).bind(2, now_us());
  u.step();
  if (!u.done()) log(LogLevel::debug, "kernel cache: could not update the last use: " + u.error());
  ++m.hits;
  return out;
}

Status KernelCache::put(const CacheKey& key, std::span<const std::byte> blob, double compile_ms,
                        std::string_view metadata) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return {};
  if (static_cast<int64_t>(blob.size()) > m.max_bytes) {
    log(LogLevel::debug, fmt::format("kernel cache: not storing {} ({} bytes > the cap of {})",
                                     key.id(), blob.size(), m.max_bytes));
    return {};
  }
  const std::string id = key.id();
  const std::string hash = hash128_hex({reinterpret_cast<const char*>(blob.data()), blob.size()});
  int64_t evicted = 0;
  Status st = cache_detail::write_transaction(m, "storing entry " + id, [&]() -> int {
    sql::Stmt up(
        m.db,
        "INSERT INTO kernel(id, fingerprint, compiler, flags, source_hash, schema_version, "
        "binary, content_hash, size, compile_ms, created, last_used, hits, meta) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
        "max(?11, coalesce((SELECT max(last_used) FROM kernel), 0) + 1), 0, ?12) "
        "ON CONFLICT(id) DO UPDATE SET fingerprint = excluded.fingerprint, "
        "compiler = excluded.compiler, flags = excluded.flags, "
        "source_hash = excluded.source_hash, schema_version = excluded.schema_version, "
        "binary = excluded.binary, content_hash = excluded.content_hash, "
        "size = excluded.size, compile_ms = excluded.compile_ms, "
        "last_used = excluded.last_used, "
        "meta = CASE WHEN excluded.meta <> '' THEN excluded.meta ELSE kernel.meta END");
    up.bind(1, id).bind(2, key.fingerprint).bind(3, key.compiler).bind(4, key.flags);
    up.bind(5, key.source_hash).bind(6, int64_t{key.schema_version}).bind_blob(7, blob);
    up.bind(8, hash).bind(9, static_cast<int64_t>(blob.size())).bind(10, compile_ms);
    up.bind(11, now_us()).bind_text(12, metadata);
    up.step();
    if (!up.done()) return up.rc();
    auto ev = evict(m);
    if (!ev.ok()) return SQLITE_ERROR;
    evicted = *ev;
    return trim_misses(m);
  });
  if (!st.ok()) return st;
  ++m.puts;
  m.evictions += evicted;
  return {};
}

std::optional<std::string> KernelCache::meta(const CacheKey& key) {
  std::lock_guard lock(impl_->mu);
  if (!impl_->db) return std::nullopt;
  sql::Stmt s(impl_->db, "SELECT meta FROM kernel WHERE id = ?1");
  s.bind(1, key.id());
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

Status KernelCache::set_meta(const CacheKey& key, std::string_view metadata) {
  std::lock_guard lock(impl_->mu);
  if (!impl_->db) return {};
  sql::Stmt s(impl_->db, "UPDATE kernel SET meta = ?2 WHERE id = ?1");
  s.bind(1, key.id()).bind_text(2, metadata);
  s.step();
  if (!s.done())
    return Status::io_error("kernel cache: storing meta of " + key.id() + ": " + s.error());
  if (sqlite3_changes(impl_->db) == 0)
    return Status::not_found("kernel cache: no entry " + key.id());
  return {};
}

Status KernelCache::register_fingerprint(const Fingerprint& fingerprint) {
  std::lock_guard lock(impl_->mu);
  if (!impl_->db) return {};
  sql::Stmt s(impl_->db,
              "INSERT INTO fingerprint(digest, description, created) VALUES(?1, ?2, ?3) "
              "ON CONFLICT(digest) DO NOTHING");
  s.bind(1, fingerprint.digest()).bind(2, fingerprint.describe()).bind(3, now_us());
  s.step();
  if (!s.done()) return Status::io_error("kernel cache: storing a fingerprint: " + s.error());
  return {};
}

CacheStats KernelCache::stats() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  CacheStats st;
  st.enabled = m.db != nullptr;
  st.disabled_reason = m.disabled_reason;
  st.max_bytes = m.max_bytes;
  st.hits = m.hits;
  st.misses = m.misses;
  st.bad_rows = m.bad_rows;
  st.puts = m.puts;
  st.evictions = m.evictions;
  if (!m.db) return st;
  st.path = m.path;
  sql::Stmt s(m.db, "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(hits), 0) FROM kernel");
  if (s.step()) {
    st.entries = s.integer(0);
    st.bytes = s.integer(1);
    st.total_hits = s.integer(2);
  }
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto n = fs::file_size(m.path + suffix, ec);
    if (!ec) st.file_bytes += static_cast<int64_t>(n);
  }
  return st;
}

std::vector<CacheEntry> KernelCache::list() {
  std::lock_guard lock(impl_->mu);
  std::vector<CacheEntry> out;
  if (!impl_->db) return out;
  sql::Stmt s(impl_->db,
              fmt::format("SELECT {} FROM kernel ORDER BY last_used DESC", kEntryColumns).c_str());
  while (s.step()) out.push_back(read_entry(s));
  return out;
}

Expected<int64_t> KernelCache::clear() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return int64_t{0};
  int64_t removed = 0;
  // Fingerprint descriptions stay: running processes registered them once and still use them.
  HPF_RETURN_IF_ERROR(cache_detail::write_transaction(m, "clearing", [&]() -> int {
    if (int rc = sqlite3_exec(m.db, "DELETE FROM kernel", nullptr, nullptr, nullptr)) return rc;
    removed = sqlite3_changes(m.db);
    return sqlite3_exec(m.db, "DELETE FROM miss", nullptr, nullptr, nullptr);
  }));
  // Give the space back; not needed for correctness, so a busy file just keeps its size.
  if (sqlite3_exec(m.db, "VACUUM", nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(m.db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) != SQLITE_OK)
    log(LogLevel::debug,
        std::string("kernel cache: compacting after clear: ") + sqlite3_errmsg(m.db));
  return removed;
}

namespace {

Expected<CacheExplanation> explain_key(KernelCache::Impl& m, const CacheKey& key,
                                       std::string origin) {
  CacheExplanation ex;
  ex.id = key.id();
  ex.key = key;
  ex.origin = std::move(origin);
  {
    sql::Stmt s(m.db, fmt::format("SELECT {} FROM kernel WHERE id = ?1", kEntryColumns).c_str());
    s.bind(1, ex.id);
    if (s.step()) {
      ex.entry = read_entry(s);
      return ex;
    }
  }
  sql::Stmt n(m.db, fmt::format("SELECT {} FROM kernel ORDER BY (fingerprint = ?1) + "
                                "(compiler = ?2) + (flags = ?3) + (source_hash = ?4) + "
                                "(schema_version = ?5) DESC, source_hash = ?4 DESC, "
                                "last_used DESC LIMIT 1",
                                kEntryColumns)
                        .c_str());
  n.bind(1, key.fingerprint).bind(2, key.compiler).bind(3, key.flags).bind(4, key.source_hash);
  n.bind(5, int64_t{key.schema_version});
  if (!n.step()) {
    if (!n.done()) return Status::io_error("kernel cache: explain: " + n.error());
    return ex;
  }
  ex.nearest = read_entry(n);
  const CacheKey& s = ex.nearest->key;
  auto part = [&](const char* name, const std::string& w, const std::string& st) {
    if (w != st) ex.differing.push_back({name, w, st, ""});
  };
  part("fingerprint", key.fingerprint, s.fingerprint);
  part("compiler", key.compiler, s.compiler);
  part("flags", key.flags, s.flags);
  part("source_hash", key.source_hash, s.source_hash);
  part("schema_version", std::to_string(key.schema_version), std::to_string(s.schema_version));
  if (key.fingerprint != s.fingerprint) {
    auto described = [&](const std::string& digest) -> std::optional<Fingerprint> {
      sql::Stmt f(m.db, "SELECT description FROM fingerprint WHERE digest = ?1");
      f.bind(1, digest);
      if (!f.step()) return std::nullopt;
      auto fp = Fingerprint::parse(f.text(0));
      return fp.ok() ? std::optional<Fingerprint>(*fp) : std::nullopt;
    };
    const auto w = described(key.fingerprint), st = described(s.fingerprint);
    if (w && st) ex.fingerprint_fields = diff_fields(*w, *st);
  }
  return ex;
}

}  // namespace

Expected<CacheExplanation> KernelCache::explain(std::string_view id) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return Status::unsupported("the kernel cache is off: " + m.disabled_reason);
  const std::string prefix = lower_hex(id);
  if (prefix.size() < 4 || prefix.size() > 32)
    return Status::invalid("kernel cache: '" + std::string(id) +
                           "' is not a key id (4 to 32 hex digits; see hpf cache ls)");
  for (const char* table : {"kernel", "miss"}) {
    sql::Stmt s(m.db, fmt::format("SELECT id, fingerprint, compiler, flags, source_hash, "
                                  "schema_version FROM {} WHERE substr(id, 1, ?2) = ?1 LIMIT 2",
                                  table)
                          .c_str());
    s.bind(1, prefix).bind(2, static_cast<int64_t>(prefix.size()));
    if (!s.step()) continue;
    const std::string found = s.text(0);
    const CacheKey key{s.text(1), s.text(2), s.text(3), s.text(4), static_cast<int>(s.integer(5))};
    if (s.step())
      return Status::invalid("kernel cache: id prefix '" + prefix +
                             "' is ambiguous; give more digits");
    auto ex = explain_key(m, key, table == std::string("kernel") ? "entry" : "recorded miss");
    if (ex.ok()) ex->id = found;
    return ex;
  }
  return Status::not_found("kernel cache: no entry or recorded miss with id '" + prefix + "' in '" +
                           m.path + "' (see hpf cache ls)");
}

Expected<CacheExplanation> KernelCache::explain(const CacheKey& key) {
  std::lock_guard lock(impl_->mu);
  if (!impl_->db) return Status::unsupported("the kernel cache is off: " + impl_->disabled_reason);
  return explain_key(*impl_, key, "given");
}

Expected<int64_t> KernelCache::export_to(const std::string& path) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return Status::unsupported("the kernel cache is off: " + m.disabled_reason);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  sql::Stmt v(m.db, "VACUUM INTO ?1");
  v.bind(1, tmp);
  v.step();
  if (!v.done()) {
    fs::remove(tmp, ec);
    return Status::io_error("kernel cache: exporting to '" + path + "': " + v.error());
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::io_error("kernel cache: exporting to '" + path + "': " + ec.message());
  }
  auto src = cache_detail::open_foreign_cache(path);
  if (!src.ok()) return src.status();
  sql::Stmt c(src->get(), "SELECT count(*) FROM kernel");
  return c.step() ? c.integer(0) : int64_t{0};
}

Expected<ImportReport> KernelCache::import_from(const std::string& path) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.db) return Status::unsupported("the kernel cache is off: " + m.disabled_reason);
  HPF_ASSIGN_OR_RETURN(auto src, cache_detail::open_foreign_cache(path));
  ImportReport report;
  std::string read_error;
  const Status st = cache_detail::write_transaction(m, "importing '" + path + "'", [&]() -> int {
    report = {};
    sql::Stmt in(src.get(),
                 "SELECT id, fingerprint, compiler, flags, source_hash, schema_version, binary, "
                 "content_hash, size, compile_ms, created, last_used, hits, meta FROM kernel");
    sql::Stmt out(m.db,
                  "INSERT INTO kernel(id, fingerprint, compiler, flags, source_hash, "
                  "schema_version, binary, content_hash, size, compile_ms, created, last_used, "
                  "hits, meta) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
                  "ON CONFLICT(id) DO NOTHING");
    while (in.step()) {
      const CacheKey key{in.text(1), in.text(2), in.text(3), in.text(4),
                         static_cast<int>(in.integer(5))};
      const auto blob = in.blob(6);
      const std::string hash = in.text(7);
      if (key.id() != in.text(0) || static_cast<int64_t>(blob.size()) != in.integer(8) ||
          hash128_hex({reinterpret_cast<const char*>(blob.data()), blob.size()}) != hash) {
        ++report.skipped_bad;
        continue;
      }
      out.reset();
      out.bind(1, in.text(0)).bind(2, key.fingerprint).bind(3, key.compiler).bind(4, key.flags);
      out.bind(5, key.source_hash).bind(6, int64_t{key.schema_version}).bind_blob(7, blob);
      out.bind(8, hash).bind(9, in.integer(8)).bind(10, in.real(9)).bind(11, in.integer(10));
      out.bind(12, in.integer(11)).bind(13, in.integer(12)).bind(14, in.text(13));
      out.step();
      if (!out.done()) return out.rc();
      ++(sqlite3_changes(m.db) ? report.imported : report.already_present);
    }
    if (!in.done()) {
      read_error = in.error();
      return SQLITE_ERROR;
    }
    sql::Stmt fps(src.get(), "SELECT digest, description, created FROM fingerprint");
    sql::Stmt fp_out(m.db,
                     "INSERT INTO fingerprint(digest, description, created) "
                     "VALUES(?1, ?2, ?3) ON CONFLICT(digest) DO NOTHING");
    while (fps.step()) {
      fp_out.reset();
      fp_out.bind(1, fps.text(0)).bind(2, fps.text(1)).bind(3, fps.integer(2));
      fp_out.step();
    }
    auto ev = evict(m);
    if (!ev.ok()) return SQLITE_ERROR;
    report.evicted = *ev;
    return SQLITE_OK;
  });
  if (!read_error.empty())
    return Status::invalid("kernel cache: reading '" + path + "': " + read_error);
  if (!st.ok()) return st;
  if (report.skipped_bad)
    log(LogLevel::warn, fmt::format("kernel cache: import of '{}' skipped {} entries whose content "
                                    "hash or key did not check",
                                    path, report.skipped_bad));
  m.evictions += report.evicted;
  return report;
}

}  // namespace hpf
