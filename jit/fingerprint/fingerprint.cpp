#include "hpf/fingerprint.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace hpf {
namespace {

// Bumped when the set or spelling of cpu_fingerprint's fields changes, so that old digests
// never match new ones by accident.
constexpr const char* kCpuFingerprintVersion = "1";

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\' || c == '=') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> sorted(
    std::vector<std::pair<std::string, std::string>> fields) {
  std::sort(fields.begin(), fields.end());
  return fields;
}

}  // namespace

std::string hash128_hex(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  XXH128_canonical_t canonical;  // big-endian: the same text on every machine
  XXH128_canonicalFromHash(&canonical, h);
  static const char* kHex = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = kHex[canonical.digest[i] >> 4];
    out[2 * i + 1] = kHex[canonical.digest[i] & 0xf];
  }
  return out;
}

Fingerprint& Fingerprint::set(std::string key, std::string value) {
  for (auto& [k, v] : fields) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  fields.emplace_back(std::move(key), std::move(value));
  return *this;
}

Fingerprint& Fingerprint::merge(const std::vector<std::pair<std::string, std::string>>& more,
                                std::string_view prefix) {
  for (const auto& [k, v] : more) set(std::string(prefix) + k, v);
  return *this;
}

Fingerprint& Fingerprint::add_toolchain(std::string_view compiler, std::string_view flags) {
  set("toolchain.compiler", std::string(compiler));
  if (!flags.empty()) set("toolchain.flags", std::string(flags));
  return *this;
}

const std::string* Fingerprint::find(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

std::string Fingerprint::digest() const {
  // Length-prefixed so that no two different field sets serialise to the same bytes.
  std::string bytes;
  for (const auto& [k, v] : sorted(fields)) {
    for (const std::string* s : {&k, &v}) {
      bytes += std::to_string(s->size());
      bytes += ':';
      bytes += *s;
    }
  }
  return hash128_hex(bytes);
}

std::string Fingerprint::describe() const {
  std::string out;
  for (const auto& [k, v] : sorted(fields)) out += escape(k) + "=" + escape(v) + "\n";
  return out;
}

Expected<Fingerprint> Fingerprint::parse(std::string_view described) {
  Fingerprint fp;
  size_t line_no = 0;
  while (!described.empty()) {
    ++line_no;
    const size_t end = described.find('\n');
    const std::string_view line = described.substr(0, end);
    described = end == std::string_view::npos ? std::string_view() : described.substr(end + 1);
    if (line.empty()) continue;
    std::string key, value;
    std::string* cur = &key;
    bool seen_eq = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '\\' && i + 1 < line.size()) {
        const char e = line[++i];
        *cur += e == 'n' ? '\n' : e;
      } else if (c == '=' && !seen_eq) {
        seen_eq = true;
        cur = &value;
      } else {
        *cur += c;
      }
    }
    if (!seen_eq)
      return Status::invalid("fingerprint description line " + std::to_string(line_no) +
                             " has no '=': '" + std::string(line) + "'");
    fp.set(std::move(key), std::move(value));
  }
  return fp;
}

Fingerprint cpu_fingerprint(const CpuInfo& cpu) {
  Fingerprint fp;
  fp.set("fingerprint.version", kCpuFingerprintVersion);
  fp.set("cpu.isa", cpu.isa);
  fp.set("cpu.vendor", cpu.vendor);
  fp.set("cpu.family", std::to_string(cpu.family));
  fp.set("cpu.model", std::to_string(cpu.model));
  fp.set("cpu.brand", cpu.brand);
  std::string flags;  // std::set: already sorted
  for (const auto& f : cpu.flags) {
    if (!flags.empty()) flags += ' ';
    flags += f;
  }
  fp.set("cpu.flags", flags);
  fp.set("cpu.l1d_bytes", std::to_string(cpu.l1d_bytes));
  fp.set("cpu.l2_bytes", std::to_string(cpu.l2_bytes));
  fp.set("cpu.l3_bytes", std::to_string(cpu.l3_bytes));
  return fp;
}

const Fingerprint& host_cpu_fingerprint() {
  static const Fingerprint fp = cpu_fingerprint(detect_cpu());
  return fp;
}

}  // namespace hpf
