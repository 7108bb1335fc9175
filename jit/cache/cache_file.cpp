// The kernel cache's SQLite file: where it lives, opening it, checking it, and moving a bad one
// aside. Opening and moving aside hold an flock on "<file>.lock" so that concurrent processes
// never judge a file another one is creating, nor move aside a file another one just made.
#include "jit/cache/cache_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include "hpf/log.hpp"

namespace hpf {

KernelCache::Impl::~Impl() { sqlite3_close_v2(db); }

namespace cache_detail {
namespace {

namespace fs = std::filesystem;
using Impl = KernelCache::Impl;

constexpr int64_t kDefaultMaxBytes = int64_t{1} << 30;

constexpr const char* kSchema = R"sql(
CREATE TABLE kernel (
  id TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  compiler TEXT NOT NULL,
  flags TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  binary BLOB NOT NULL,
  content_hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  compile_ms REAL NOT NULL DEFAULT 0,
  created INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  meta TEXT NOT NULL DEFAULT ''
);
CREATE INDEX kernel_lru ON kernel(last_used, size);
CREATE TABLE fingerprint (
  digest TEXT PRIMARY KEY,
  description TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE miss (
  id TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  compiler TEXT NOT NULL,
  flags TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  at INTEGER NOT NULL,
  count INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX miss_at ON miss(at);
)sql";

constexpr const char* kKernelColumns[] = {
    "id",     "fingerprint",  "compiler", "flags",      "source_hash", "schema_version",
    "binary", "content_hash", "size",     "compile_ms", "created",     "last_used",
    "hits",   "meta"};

class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      error_ = std::strerror(errno);
      return;
    }
    int rc;
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      error_ = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
  }
  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

// The result of looking at a file: usable (db set), bad (move it aside), or an error that
// moving it aside would not fix (unwritable, busy for longer than the timeout).
struct Verdict {
  enum Kind { ok, bad, error } kind;
  std::string why;
};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

Expected<int64_t> parse_bytes(std::string_view s) {
  size_t i = 0;
  int64_t n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (n > (int64_t{1} << 50)) return Status::invalid("too large");
    n = n * 10 + (s[i++] - '0');
  }
  if (i == 0) return Status::invalid("expected a number of bytes, optionally with K, M or G");
  std::string suffix;
  for (; i < s.size(); ++i)
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  int shift = -1;
  if (suffix.empty() || suffix == "b") shift = 0;
  if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
  if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
  if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
  if (shift < 0) return Status::invalid("unknown unit '" + suffix + "' (K, M or G)");
  if (n <= 0) return Status::invalid("must be positive");
  return n << shift;
}

Expected<std::string> resolve_dir(const KernelCacheOptions& options) {
  if (!options.dir.empty()) return options.dir;
  if (const char* d = env("HPF_CACHE_DIR")) return std::string(d);
  if (const char* x = env("XDG_CACHE_HOME"); x && x[0] == '/') return std::string(x) + "/hpf";
  if (const char* h = env("HOME")) return std::string(h) + "/.cache/hpf";
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir && *pw->pw_dir)
    return std::string(pw->pw_dir) + "/.cache/hpf";
  return Status::not_found("no cache directory (set HPF_CACHE_DIR, XDG_CACHE_HOME or HOME)");
}

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Keeps the bad file (and its WAL) under a new name; the shared-memory index is rebuilt anyway.
void move_aside(Impl& m, const std::string& why) {
  std::error_code ec;
  std::string aside = m.path + ".corrupt-" + utc_stamp();
  for (int n = 2; fs::exists(aside, ec); ++n)
    aside = m.path + ".corrupt-" + utc_stamp() + "-" + std::to_string(n);
  fs::rename(m.path, aside, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    log(LogLevel::warn, fmt::format("kernel cache: '{}' {}, and moving it aside failed: {}", m.path,
                                    why, ec.message()));
    return;
  }
  for (const char* suffix : {"-wal", "-journal"})
    if (fs::exists(m.path + suffix, ec)) fs::rename(m.path + suffix, aside + suffix, ec);
  fs::remove(m.path + "-shm", ec);
  log(LogLevel::warn, fmt::format("kernel cache: '{}' {}; moved it aside to '{}' and started a new "
                                  "cache (cached kernels will be recompiled)",
                                  m.path, why, aside));
}

int exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }

Verdict bad_or_error(sqlite3* db, int rc, const std::string& doing) {
  const std::string msg = sqlite3_errmsg(db);
  if (is_corrupt(rc)) return {Verdict::bad, "is not a usable SQLite database (" + msg + ")"};
  return {Verdict::error, doing + ": " + msg};
}

// Inside BEGIN IMMEDIATE: makes the schema in an empty database, or checks it is ours.
Verdict classify_or_create(sqlite3* db) {
  int64_t values[3] = {0, 0, 0};
  const char* queries[3] = {"PRAGMA application_id", "PRAGMA user_version",
                            "SELECT count(*) FROM sqlite_schema"};
  for (int k = 0; k < 3; ++k) {
    sql::Stmt s(db, queries[k]);
    if (!s.step()) return bad_or_error(db, s.rc(), "reading the header");
    values[k] = s.integer(0);
  }
  const auto [app, version, objects] = values;
  if (app == 0 && version == 0 && objects == 0) {
    const std::string sql = std::string(kSchema) +
                            fmt::format("PRAGMA application_id = {};\nPRAGMA user_version = {};\n",
                                        kApplicationId, kCacheSchemaVersion);
    if (int rc = exec(db, sql.c_str())) return bad_or_error(db, rc, "creating the tables");
    return {Verdict::ok, ""};
  }
  if (app != kApplicationId)
    return {Verdict::bad, fmt::format("is an SQLite database but not an hpf kernel cache "
                                      "(application_id {:#x}, {} schema objects)",
                                      app, objects)};
  if (version != kCacheSchemaVersion)
    return {Verdict::bad, fmt::format("is a kernel cache of schema version {}; this libhpf uses "
                                      "version {}",
                                      version, kCacheSchemaVersion)};
  std::set<std::string> have;
  {
    sql::Stmt s(db, "SELECT name FROM pragma_table_info('kernel')");
    while (s.step()) have.insert(s.text(0));
    if (!s.done()) return bad_or_error(db, s.rc(), "reading the schema");
  }
  std::string missing;
  for (const char* c : kKernelColumns)
    if (!have.count(c)) missing += std::string(missing.empty() ? "" : ", ") + c;
  sql::Stmt t(db,
              "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('miss', "
              "'fingerprint')");
  if (!t.step()) return bad_or_error(db, t.rc(), "reading the schema");
  if (!missing.empty() || t.integer(0) != 2)
    return {Verdict::bad, "fails the schema check (" +
                              (missing.empty() ? std::string("tables miss/fingerprint absent")
                                               : "kernel lacks columns " + missing) +
                              ")"};
  return {Verdict::ok, ""};
}

// Opens m.path and checks it; on ok, m.db is the connection.
Verdict check_and_open(Impl& m) {
  sqlite3* raw = nullptr;
  const int orc =
      sqlite3_open_v2(m.path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw);
  if (orc != SQLITE_OK) {
    if (!raw) return {Verdict::error, "cannot open '" + m.path + "': out of memory"};
    return bad_or_error(raw, orc, "cannot open '" + m.path + "'");
  }
  sqlite3_busy_timeout(db.get(), m.busy_timeout_ms);
  // Switching to WAL can report BUSY without calling the busy handler: wait here instead.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(m.busy_timeout_ms);
  std::string mode;
  for (;;) {
    sql::Stmt s(db.get(), "PRAGMA journal_mode = WAL");
    if (s.step()) {
      mode = s.text(0);
      break;
    }
    const int rc = s.rc() & 0xff;
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    return bad_or_error(db.get(), s.rc(), "setting WAL mode on '" + m.path + "'");
  }
  if (mode != "wal")
    log(LogLevel::debug,
        "kernel cache: WAL unavailable for '" + m.path + "', journal mode " + mode);
  exec(db.get(), "PRAGMA synchronous = NORMAL");
  if (int rc = exec(db.get(), "BEGIN IMMEDIATE"))
    return bad_or_error(db.get(), rc, "locking '" + m.path + "'");
  const Verdict v = classify_or_create(db.get());
  if (v.kind != Verdict::ok) {
    exec(db.get(), "ROLLBACK");
    return v;
  }
  if (int rc = exec(db.get(), "COMMIT")) {
    Verdict e = bad_or_error(db.get(), rc, "writing '" + m.path + "'");
    exec(db.get(), "ROLLBACK");
    return e;
  }
  m.db = db.release();
  return {Verdict::ok, ""};
}

// Reads every page, so it runs without the flock: processes opening a large cache check it in
// parallel. Not bad: ok, even when the check itself could not run (busy, out of memory).
Verdict quick_check(Impl& m) {
  sql::Stmt q(m.db, "PRAGMA quick_check");
  if (!q.step()) {
    const Verdict v = bad_or_error(m.db, q.rc(), "checking '" + m.path + "'");
    if (v.kind == Verdict::error) log(LogLevel::debug, "kernel cache: " + v.why);
    return v.kind == Verdict::bad ? v : Verdict{Verdict::ok, ""};
  }
  if (q.text(0) != "ok") return {Verdict::bad, "fails PRAGMA quick_check (" + q.text(0) + ")"};
  return {Verdict::ok, ""};
}

// With the flock held: open, moving a bad file aside (at most twice).
Status open_locked(Impl& m) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const Verdict v = check_and_open(m);
    if (v.kind == Verdict::ok) {
      struct stat st {};
      if (::stat(m.path.c_str(), &st) == 0) {
        m.dev = st.st_dev;
        m.ino = st.st_ino;
      }
      return {};
    }
    if (v.kind == Verdict::error) return Status::io_error(v.why);
    move_aside(m, v.why);
  }
  return Status::io_error("cannot make a new cache file at '" + m.path + "'");
}

std::unique_ptr<Impl> disable(std::unique_ptr<Impl> m, std::string reason, bool warn) {
  if (warn)
    log(LogLevel::warn, "kernel cache: " + reason + "; running without a kernel cache");
  else
    log(LogLevel::debug, "kernel cache: " + reason);
  m->disabled_reason = std::move(reason);
  return m;
}

}  // namespace

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_corrupt(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

Expected<std::unique_ptr<Impl>> open_cache(const KernelCacheOptions& options) {
  if (options.max_bytes && *options.max_bytes <= 0)
    return Status::invalid("kernel cache: max_bytes must be positive, not " +
                           std::to_string(*options.max_bytes));
  if (options.busy_timeout_ms < 0)
    return Status::invalid("kernel cache: busy_timeout_ms must not be negative");
  auto m = std::make_unique<Impl>();
  m->busy_timeout_ms = options.busy_timeout_ms;
  m->max_bytes = kDefaultMaxBytes;
  if (options.max_bytes) {
    m->max_bytes = *options.max_bytes;
  } else if (const char* e = env("HPF_CACHE_MAX_BYTES")) {
    auto n = parse_bytes(e);
    if (n.ok())
      m->max_bytes = *n;
    else
      log(LogLevel::warn, fmt::format("ignoring HPF_CACHE_MAX_BYTES='{}' ({}); using 1 GiB", e,
                                      n.status().message()));
  }
  if (options.disabled) return disable(std::move(m), "turned off by the caller", false);
  if (const char* e = env("HPF_CACHE")) {
    std::string v;
    for (const char* p = e; *p; ++p)
      v += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    if (v == "0" || v == "off" || v == "false" || v == "no")
      return disable(std::move(m), std::string("turned off by HPF_CACHE=") + e, false);
  }
  auto dir = resolve_dir(options);
  if (!dir.ok()) return disable(std::move(m), dir.status().message(), true);
  std::error_code ec;
  fs::create_directories(*dir, ec);
  if (ec)
    return disable(std::move(m),
                   "cannot create the cache directory '" + *dir + "': " + ec.message(), true);
  if (::access(dir->c_str(), W_OK | X_OK) != 0)
    return disable(std::move(m),
                   "the cache directory '" + *dir + "' is not writable: " + std::strerror(errno),
                   true);
  m->dir = *dir;
  m->path = (fs::path(*dir) / "kernels.sqlite").string();
  {
    FileLock lock(m->path + ".lock");
    if (!lock.ok())
      return disable(std::move(m), "cannot lock '" + m->path + ".lock': " + lock.error(), true);
    if (Status s = open_locked(*m); !s.ok()) return disable(std::move(m), s.message(), true);
  }
  if (const Verdict v = quick_check(*m); v.kind == Verdict::bad) recover(*m, v.why);
  return m;
}

void recover(Impl& m, const std::string& why) {
  sqlite3_close_v2(m.db);
  m.db = nullptr;
  FileLock lock(m.path + ".lock");
  if (!lock.ok()) {
    m.disabled_reason = "cannot lock '" + m.path + ".lock': " + lock.error();
    log(LogLevel::warn, "kernel cache: " + m.disabled_reason + "; running without a kernel cache");
    return;
  }
  struct stat st {};
  if (::stat(m.path.c_str(), &st) == 0 && st.st_dev == m.dev && st.st_ino == m.ino)
    move_aside(m, why);
  if (Status s = open_locked(m); !s.ok()) {
    m.disabled_reason = s.message();
    log(LogLevel::warn, "kernel cache: " + s.message() + "; running without a kernel cache");
  }
}

Status write_transaction(Impl& m, const std::string& what, const std::function<int()>& body) {
  for (int attempt = 0; attempt < 2 && m.db; ++attempt) {
    int rc = exec(m.db, "BEGIN IMMEDIATE");
    std::string msg;
    if (rc == SQLITE_OK) {
      rc = body();
      if (rc == SQLITE_OK || rc == SQLITE_DONE) rc = exec(m.db, "COMMIT");
      if (rc != SQLITE_OK) {
        msg = sqlite3_errmsg(m.db);
        exec(m.db, "ROLLBACK");
      }
    } else {
      msg = sqlite3_errmsg(m.db);
    }
    if (rc == SQLITE_OK) return {};
    if (!is_corrupt(rc))
      return Status::io_error(fmt::format("kernel cache: {} in '{}': {}", what, m.path, msg));
    recover(m, "is corrupt (" + what + ": " + msg + ")");
  }
  return {};  // the cache went off while recovering (warned): nothing stored, as when disabled
}

Expected<DbPtr> open_foreign_cache(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return Status::not_found("kernel cache: no file '" + path + "'");
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return Status::io_error("kernel cache: cannot open '" + path +
                            "': " + (raw ? sqlite3_errmsg(raw) : "out of memory"));
  sqlite3_busy_timeout(db.get(), 5000);
  int64_t values[2] = {0, 0};
  const char* queries[2] = {"PRAGMA application_id", "PRAGMA user_version"};
  for (int k = 0; k < 2; ++k) {
    sql::Stmt s(db.get(), queries[k]);
    if (!s.step())
      return Status::invalid("kernel cache: '" + path + "' is not an SQLite database (" +
                             s.error() + ")");
    values[k] = s.integer(0);
  }
  if (values[0] != kApplicationId)
    return Status::invalid("kernel cache: '" + path + "' is not an hpf kernel cache");
  if (values[1] != kCacheSchemaVersion)
    return Status::invalid(
        fmt::format("kernel cache: '{}' is a kernel cache of schema version {}; "
                    "this libhpf reads version {}",
                    path, values[1], kCacheSchemaVersion));
  return db;
}

}  // namespace cache_detail
}  // namespace hpf
