// Inside the kernel cache (not installed): the state behind a KernelCache and the handling of its
// SQLite file. Every function taking an Impl expects its mutex to be held by the caller, except
// open_cache, which makes the Impl.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "hpf/kernel_cache.hpp"
#include "jit/cache/sqlite.hpp"

namespace hpf {

struct KernelCache::Impl {
  std::mutex mu;
  sqlite3* db = nullptr;  // null: disabled (disabled_reason says why)
  std::string dir, path, disabled_reason;
  int64_t max_bytes = 0;
  int busy_timeout_ms = 10000;
  dev_t dev = 0;  // the file this connection opened, to tell whether another process has
  ino_t ino = 0;  // already moved it aside
  int64_t hits = 0, misses = 0, bad_rows = 0, puts = 0, evictions = 0;
  ~Impl();
};

namespace cache_detail {

inline constexpr int32_t kApplicationId = 0x48504643;  // "HPFC" in the SQLite header

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

int64_t now_us();
// SQLITE_CORRUPT or SQLITE_NOTADB (extended codes included): the file, not the call, is bad.
bool is_corrupt(int rc);

// Resolves the directory and the cap, opens (or makes) the file, moving a bad one aside. A cache
// that cannot be used comes back disabled with a warning logged; errors are for bad options only.
Expected<std::unique_ptr<KernelCache::Impl>> open_cache(const KernelCacheOptions& options);

// After the open file was found corrupt: moves it aside (unless another process already did),
// warning "'<path>' <why>; moved it aside ...", and opens a new one; disables the cache with a
// warning if that fails. `why` is a predicate: "is corrupt (reading entry ...: ...)".
void recover(KernelCache::Impl& m, const std::string& why);

// BEGIN IMMEDIATE; body(); COMMIT, or ROLLBACK when body returns anything but SQLITE_OK or
// SQLITE_DONE. A corrupt file is recovered and the body run once more on the new file.
Status write_transaction(KernelCache::Impl& m, const std::string& what,
                         const std::function<int()>& body);

// Read-only connection to another kernel cache file (import, checking an export): not_found when
// missing, invalid_argument when it is not an hpf kernel cache of this schema version.
Expected<DbPtr> open_foreign_cache(const std::string& path);

}  // namespace cache_detail
}  // namespace hpf
