// Helpers for the kernel cache tests: a temporary directory, a clean environment, stderr capture.
#pragma once

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "hpf/kernel_cache.hpp"

namespace hpf::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hpf-cache-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto& e : std::filesystem::recursive_directory_iterator(path_, ec))
      if (e.is_directory(ec)) ::chmod(e.path().c_str(), 0700);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Unsets (or sets) the cache's environment variables for the scope of a test; restores them.
class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* name : {"HPF_CACHE", "HPF_CACHE_DIR", "HPF_CACHE_MAX_BYTES"}) unset(name);
  }
  ~ScopedEnv() {
    for (auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::string& value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

// Everything written to file descriptor 2 (where libhpf's log goes) while it lives.
class CaptureStderr {
 public:
  CaptureStderr() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    tmp_ = std::tmpfile();
    ::dup2(::fileno(tmp_), 2);
  }
  ~CaptureStderr() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::fclose(tmp_);
  }
  std::string text() {
    std::fflush(stderr);
    std::string out;
    std::rewind(tmp_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, tmp_)) > 0) out.append(buf, n);
    std::fseek(tmp_, 0, SEEK_END);
    return out;
  }

 private:
  int saved_ = -1;
  std::FILE* tmp_ = nullptr;
};

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

inline CacheKey key_for(const std::string& source, const std::string& compiler = "clang 19.1.7",
                        const std::string& flags = "-O3") {
  return {hash128_hex("test fingerprint"), compiler, flags, hash_source(source)};
}

inline KernelCache open_cache(const std::string& dir,
                              std::optional<int64_t> max_bytes = std::nullopt) {
  KernelCacheOptions o;
  o.dir = dir;
  o.max_bytes = max_bytes;
  auto c = KernelCache::open(o);
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  return std::move(c).value();
}

// Runs one SQL statement on a file directly; returns the first column of the first row.
inline std::string sql_value(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out;
  const int prc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  if (prc != SQLITE_OK)
    out = std::string("error: ") + sqlite3_errmsg(db);
  else if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

inline std::vector<std::string> files_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}

}  // namespace hpf::testing
