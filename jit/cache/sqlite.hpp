// A thin RAII layer over SQLite prepared statements, shared by the kernel cache and the hwdb
// reader. Statements belong to one connection and one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hpf/status.hpp"

namespace hpf::sql {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc_ != SQLITE_OK) {
      error_ = sqlite3_errmsg(db);
      sqlite3_finalize(stmt_);
      stmt_ = nullptr;
    }
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  bool ok() const { return stmt_ != nullptr; }
  const std::string& error() const { return error_; }

  Stmt& bind(int i, const std::string& v) {
    if (stmt_) sqlite3_bind_text(stmt_, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, double v) {
    if (stmt_) sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    if (stmt_) sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& bind_text(int i, std::string_view v) {
    if (stmt_) sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // The bytes are copied; an empty span binds a zero-length blob, not NULL.
  Stmt& bind_blob(int i, std::span<const std::byte> v) {
    if (stmt_) sqlite3_bind_blob64(stmt_, i, v.empty() ? "" : static_cast<const void*>(v.data()),
                                   v.size(), SQLITE_TRANSIENT);
    return *this;
  }
  // True while a row is available.
  bool step() {
    if (!stmt_) return false;
    rc_ = sqlite3_step(stmt_);
    if (rc_ != SQLITE_ROW && rc_ != SQLITE_DONE) error_ = sqlite3_errmsg(db_);
    return rc_ == SQLITE_ROW;
  }
  // Result code of the last step() (SQLITE_ROW, SQLITE_DONE or an error), or of preparing.
  int rc() const { return rc_; }
  // The last step() finished the statement without an error.
  bool done() const { return rc_ == SQLITE_DONE; }
  // Ready to step again with the same bindings (or re-bound ones).
  void reset() {
    if (stmt_) sqlite3_reset(stmt_);
  }
  // Valid until the next step(), reset() or destruction.
  std::span<const std::byte> blob(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::span<const std::byte>(static_cast<const std::byte*>(p), static_cast<size_t>(n))
             : std::span<const std::byte>();
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<double> opt_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }
  std::optional<int64_t> opt_integer(int col) const {
    return is_null(col) ? std::nullopt : std::optional<int64_t>(integer(col));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  std::string error_;
};

}  // namespace hpf::sql
