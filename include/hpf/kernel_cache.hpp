// The kernel cache: compiled kernel binaries kept across runs in one SQLite file.
//
// Where: `$XDG_CACHE_HOME/hpf/kernels.sqlite` (falling back to `~/.cache/hpf/`); the directory
// `HPF_CACHE_DIR` replaces that default; `HPF_CACHE=0` (or off/false/no) turns the cache off.
// `HPF_CACHE_MAX_BYTES` (bytes, or with a K/M/G suffix, powers of 1024; default 1 GiB) caps the
// total size of the stored binaries; past it the least recently used entries are evicted.
//
// Key: every part that can change a binary, each stored as its own column so that a miss can be
// explained (explain()): the device + toolchain fingerprint digest (include/hpf/fingerprint.hpp),
// compiler name and version, compile flags, hash of the kernel source, and the cache schema
// version. Value: the binary, its content hash (checked on every load), size, compile time,
// created, last used, hit count, and `meta`, free-form text for the caller (measured timings,
// autotuning results).
//
// Failures are misses, never errors or wrong binaries:
// - a file that is not a database, is truncated or corrupt (open() runs PRAGMA quick_check, which
//   reads the whole file: about 0.2 s for 300 MiB), or is an SQLite database that is not a kernel
//   cache of this schema version, is moved aside to `kernels.sqlite.corrupt-<time>` (kept, never
//   deleted) and a new one is made, with a warning; so is a file found corrupt later, mid-use;
// - a row whose binary fails its content hash (or whose key parts do not match its id) is
//   deleted and reported as a miss with a warning, so the caller recompiles it;
// - a cache directory that cannot be created or written makes the cache disabled (enabled() is
//   false) with one warning; get() then always misses and put() does nothing.
//
// Concurrency: any number of processes may use one cache file at once (WAL mode, a busy timeout,
// every write a single statement or a `BEGIN IMMEDIATE` transaction; opening and moving a bad
// file aside are serialised by an flock on `kernels.sqlite.lock` beside it). Within a process a
// KernelCache owns one SQLite connection, guarded by a mutex: every member function is safe to
// call from several threads at once. A KernelCache is movable, not copyable (a moved-from one
// may only be destroyed or assigned to); it owns its connection and closes it when destroyed.
// Results (binaries, entries, explanations) are plain values owned by the caller.
//
// The table, for tools and tests that read the file directly:
//   kernel(id TEXT UNIQUE, fingerprint, compiler, flags, source_hash TEXT, schema_version INT,
//          binary BLOB, content_hash TEXT, size INT, compile_ms REAL, created INT,
//          last_used INT, hits INT, meta TEXT)   -- times: microseconds since the Unix epoch
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hpf/fingerprint.hpp"
#include "hpf/status.hpp"

namespace hpf {

// Version of the cache's table layout and of the meaning of its key parts; a file of another
// version is moved aside, and keys carry it so entries of another version never match.
inline constexpr int kCacheSchemaVersion = 1;

// The source_hash part of a key: hash128_hex of the kernel source text.
std::string hash_source(std::string_view source);

struct CacheKey {
  std::string fingerprint;  // Fingerprint::digest() of the device and toolchain
  std::string compiler;     // compiler name and version, e.g. "clang 19.1.7"
  std::string flags;        // compile flags, as one string
  std::string source_hash;  // hash_source(source)
  int schema_version = kCacheSchemaVersion;

  // 32 hex digits, a hash of all five parts: the entry's primary key.
  std::string id() const;
  bool operator==(const CacheKey&) const = default;
};

struct KernelCacheOptions {
  std::string dir;  // empty: HPF_CACHE_DIR, else $XDG_CACHE_HOME/hpf, else ~/.cache/hpf
  std::optional<int64_t> max_bytes;  // empty: HPF_CACHE_MAX_BYTES, else 1 GiB
  bool disabled = false;             // true, or HPF_CACHE=0 in the environment: no cache
  int busy_timeout_ms = 10000;       // how long a write waits for other processes' writes
};

struct CacheEntry {
  std::string id;
  CacheKey key;
  int64_t size = 0;  // bytes of the binary
  std::string content_hash;
  double compile_ms = 0;
  int64_t created_us = 0, last_used_us = 0;  // since the Unix epoch
  int64_t hits = 0;
  std::string meta;
};

struct CacheStats {
  bool enabled = false;
  std::string disabled_reason;  // when not enabled
  std::string path;             // the SQLite file
  int64_t entries = 0;
  int64_t bytes = 0;       // sum of the binaries' sizes (what the cap limits)
  int64_t file_bytes = 0;  // the file and its WAL on disk
  int64_t max_bytes = 0;
  int64_t total_hits = 0;  // over all entries' lifetimes
  // This KernelCache object only:
  int64_t hits = 0, misses = 0, bad_rows = 0, puts = 0, evictions = 0;
};

// One key part (or fingerprint field) that differs between the key asked for and a stored entry.
struct KeyPartDiff {
  std::string part;  // "fingerprint", "compiler", "flags", "source_hash", "schema_version", or a
                     // fingerprint field such as "cpu.flags"
  std::string wanted, stored;  // "(absent)" for a fingerprint field only one side has
  std::string detail;          // e.g. "wanted has avx512f; stored has sse4a" for a list of flags
};

struct CacheExplanation {
  std::string id;
  CacheKey key;                        // the parts explained
  std::string origin;                  // "entry", "recorded miss" or "given"
  std::optional<CacheEntry> entry;     // the entry with exactly this key: a hit
  std::optional<CacheEntry> nearest;   // for a miss: the stored entry sharing the most key parts
  std::vector<KeyPartDiff> differing;  // key parts: wanted vs nearest
  std::vector<KeyPartDiff> fingerprint_fields;  // when the fingerprints differ and both were
                                                // registered (register_fingerprint)
  bool hit() const { return entry.has_value(); }
  // One line: "hit: ..." or "miss: nearest entry <id> differs in compiler, flags" or
  // "miss: the cache is empty".
  std::string summary() const;
};

struct ImportReport {
  int64_t imported = 0;
  int64_t already_present = 0;  // same id stored already: kept as it was
  int64_t skipped_bad = 0;      // content hash or key check failed: not imported
  int64_t evicted = 0;          // entries evicted afterwards to stay under the cap
};

class KernelCache {
 public:
  // Never fails for a missing, unwritable or corrupt cache: those give a disabled cache or a new
  // file, with a warning (see above). An error is returned only for bad options.
  static Expected<KernelCache> open(const KernelCacheOptions& options = {});

  KernelCache(KernelCache&&) noexcept;
  KernelCache& operator=(KernelCache&&) noexcept;
  ~KernelCache();

  bool enabled() const;
  std::string path() const;  // the SQLite file ("" when disabled)

  // The binary stored under `key` after checking its content hash, or nullopt (a miss). A hit
  // bumps the entry's last-used time and hit count in one UPDATE. A miss is recorded (its key
  // parts, in a small table) so that `explain(key.id())` can say why later.
  std::optional<std::vector<std::byte>> get(const CacheKey& key);

  // Stores (or replaces) the binary for `key`, then evicts least recently used entries while the
  // total exceeds the cap; one `BEGIN IMMEDIATE` transaction. A binary larger than the whole cap
  // is not stored. `metadata` replaces the entry's meta text when not empty. A no-op returning
  // ok when the cache is disabled; an io_error when the file could not be written.
  Status put(const CacheKey& key, std::span<const std::byte> blob, double compile_ms,
             std::string_view metadata = "");

  // The meta text of an entry (nullopt: no such entry), and replacing it.
  std::optional<std::string> meta(const CacheKey& key);
  Status set_meta(const CacheKey& key, std::string_view metadata);

  // Remembers a fingerprint's fields under its digest, so that explain() can name the fields
  // (e.g. one ISA flag) in which two fingerprints differ. Cheap to call once per process.
  Status register_fingerprint(const Fingerprint& fingerprint);

  CacheStats stats();
  std::vector<CacheEntry> list();  // most recently used first; binaries not included
  Expected<int64_t> clear();       // removes every entry; returns how many

  // For an id (or a unique prefix of at least 4 digits) of an entry or of a recorded miss: its
  // parts and, for a miss, which parts differ from the nearest stored entry. not_found for an
  // id that is neither.
  Expected<CacheExplanation> explain(std::string_view id);
  Expected<CacheExplanation> explain(const CacheKey& key);

  // A consistent copy of the whole cache into a new SQLite file at `path` (replaced if it
  // exists); returns the number of entries. import_from merges the entries of such a file:
  // entries already present are kept, entries whose hash or key check fails are skipped.
  Expected<int64_t> export_to(const std::string& path);
  Expected<ImportReport> import_from(const std::string& path);

  struct Impl;  // jit/cache/kernel_cache.cpp

 private:
  explicit KernelCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpf
