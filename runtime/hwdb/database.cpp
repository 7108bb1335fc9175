// Opening hwdb.sqlite and reading products and architectures.
#include <dlfcn.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "hpf/hwdb.hpp"
#include "jit/cache/sqlite.hpp"

namespace hpf::hwdb {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// hpf/hwdb.sqlite next to the libhpf shared object this code is in.
std::string beside_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&beside_library), &info) == 0 || !info.dli_fname) return "";
  return (std::filesystem::path(info.dli_fname).parent_path() / "hpf" / "hwdb.sqlite").string();
}

}  // namespace

std::string Architecture::level(const std::string& op_class, const std::string& format) const {
  for (const SupportEntry& s : support)
    if (s.op_class == op_class && s.format == format) return s.level;
  return "absent";
}

Expected<Database> Database::open(const std::string& requested) {
  std::string path = requested;
  std::string origin = "given";
  if (path.empty()) {
    if (const char* env = std::getenv("HPF_HWDB"); env && *env) {
      path = env;
      origin = "HPF_HWDB";
    } else {
      path = beside_library();
      origin = "installed";
    }
  }
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec))
    return Status::not_found("hwdb: no database at '" + path + "' (" + origin +
                             " path; set HPF_HWDB to an hwdb.sqlite file)");
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::io_error("hwdb: cannot open '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db, 2000);
  {
    sql::Stmt check(db, "SELECT count(*) FROM product JOIN architecture ON product.arch = architecture.name");
    if (!check.ok() || !check.step()) {
      std::string why = check.error();
      sqlite3_close(db);
      return Status::invalid("hwdb: '" + path + "' is not a libhpf hardware database (" + why + ")");
    }
  }
  return Database(db, path);
}

Database::Database(Database&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
Database& Database::operator=(Database&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}
Database::~Database() { sqlite3_close(db_); }

Architecture Database::load_architecture(const std::string& name) const {
  Architecture a;
  sql::Stmt s(db_, "SELECT name, vendor, kind, family, coalesce(compute_capability,''), coalesce(gfx_target,''), "
                   "fp8_flavor, source FROM architecture WHERE name = ?");
  s.bind(1, name);
  if (s.step()) {
    a = {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), {}};
  }
  sql::Stmt sup(db_, "SELECT op_class, format, level, source FROM support WHERE arch = ? ORDER BY op_class, format");
  sup.bind(1, name);
  while (sup.step()) a.support.push_back({sup.text(0), sup.text(1), sup.text(2), sup.text(3)});
  return a;
}

Product Database::load_product(const std::string& name) const {
  Product p;
  sql::Stmt s(db_, "SELECT name, short_name, vendor, segment, source, arch, memory_gib, memory_bandwidth_gbs, "
                   "tdp_w, boost_clock_ghz, units FROM product WHERE name = ?");
  s.bind(1, name);
  if (!s.step()) return p;
  p.name = s.text(0);
  p.short_name = s.text(1);
  p.vendor = s.text(2);
  p.segment = s.text(3);
  p.source = s.text(4);
  p.arch = load_architecture(s.text(5));
  p.memory_gib = s.opt_real(6);
  p.memory_bandwidth_gbs = s.opt_real(7);
  p.tdp_w = s.opt_real(8);
  p.boost_clock_ghz = s.opt_real(9);
  p.units = s.opt_integer(10);
  sql::Stmt pk(db_, "SELECT peak.format, dense, unit, op_class, source FROM peak JOIN format ON format.name = peak.format "
                    "WHERE product = ?");
  pk.bind(1, name);
  while (pk.step()) p.peak[pk.text(0)] = {pk.real(1), pk.text(2), pk.text(3), pk.text(4)};
  return p;
}

std::vector<Product> Database::products() const {
  std::vector<std::string> names;
  sql::Stmt s(db_, "SELECT name FROM product ORDER BY vendor, arch, name");
  while (s.step()) names.push_back(s.text(0));
  std::vector<Product> out;
  for (const auto& n : names) out.push_back(load_product(n));
  return out;
}

std::vector<Architecture> Database::architectures() const {
  std::vector<std::string> names;
  sql::Stmt s(db_, "SELECT name FROM architecture ORDER BY vendor, name");
  while (s.step()) names.push_back(s.text(0));
  std::vector<Architecture> out;
  for (const auto& n : names) out.push_back(load_architecture(n));
  return out;
}

Expected<Product> Database::product(const std::string& name) const {
  sql::Stmt s(db_, "SELECT name FROM product WHERE lower(name) = ?1 OR lower(short_name) = ?1");
  s.bind(1, lower(name));
  if (s.step()) return load_product(s.text(0));
  return Status::not_found("hwdb: no product '" + name + "' (see hpf hwdb list)");
}

Expected<Architecture> Database::architecture(const std::string& name) const {
  std::string key = lower(name);
  if (key.rfind("sm_", 0) == 0 && key.size() >= 5) key = key.substr(3, key.size() - 4) + "." + key.back();
  sql::Stmt s(db_, "SELECT name FROM architecture WHERE lower(name) = ?1 OR lower(family) = ?1 "
                   "OR lower(gfx_target) = ?1 OR compute_capability = ?1");
  s.bind(1, key);
  if (s.step()) return load_architecture(s.text(0));
  return Status::not_found("hwdb: no architecture '" + name + "'");
}

}  // namespace hpf::hwdb
