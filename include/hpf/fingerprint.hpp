// A stable description of a device and its toolchain: everything that can change the code a
// compiler generates for a kernel. Its digest is the `fingerprint` part of a kernel cache key
// (include/hpf/kernel_cache.hpp), so two machines, or two runs, share cached binaries exactly
// when their fingerprints are equal.
//
// A Fingerprint is plain data (copyable, no shared state, safe to pass between threads). It is
// built from the host CPU (cpu_fingerprint) and/or from what a plugin reports for its device
// (the `fingerprint` key/value pairs, `compiler` and `compile_flags` of hpf_device_info in
// include/hpf/plugin.h), passed here as plain strings: this header does not depend on the ABI.
//
// Stability: the digest depends only on the set of (key, value) pairs, not on the order they were
// added in. Fields that vary from run to run without changing generated code (current clock,
// number of online cores) are deliberately not part of cpu_fingerprint.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hpf/cpu_info.hpp"
#include "hpf/status.hpp"

namespace hpf {

struct Fingerprint {
  // (key, value) pairs; keys are unique (set() replaces). Keys are dotted names by convention:
  // "cpu.vendor", "cpu.flags", "toolchain.compiler", "device.<plugin key>".
  std::vector<std::pair<std::string, std::string>> fields;

  // Adds or replaces one field.
  Fingerprint& set(std::string key, std::string value);
  // Adds or replaces each pair, with `prefix` put before each key (e.g. "device.").
  Fingerprint& merge(const std::vector<std::pair<std::string, std::string>>& more,
                     std::string_view prefix = "");
  // The toolchain part: "toolchain.compiler" (name and version, e.g. "clang 19.1.7") and,
  // when not empty, "toolchain.flags".
  Fingerprint& add_toolchain(std::string_view compiler, std::string_view flags = "");
  // The value of `key`, or nullptr. The pointer lives as long as this Fingerprint is unchanged.
  const std::string* find(std::string_view key) const;

  // 32 lower-case hex digits: XXH3-128 of the fields sorted by key. Equal field sets give equal
  // digests on every machine and in every run; any changed, added or removed field changes it.
  std::string digest() const;
  // One "key=value" line per field, sorted by key; '\\', '\n' and '=' inside keys and values
  // are escaped with a backslash so that parse() gives the fields back.
  std::string describe() const;
  static Expected<Fingerprint> parse(std::string_view described);
};

// vendor, family/model, brand string, ISA and ISA features (flags), cache sizes of `cpu`.
Fingerprint cpu_fingerprint(const CpuInfo& cpu);

// cpu_fingerprint(detect_cpu()), computed once per process (thread-safe).
const Fingerprint& host_cpu_fingerprint();

// 32 lower-case hex digits of XXH3-128 over `bytes`: the hash used for fingerprints, kernel
// source and cached binaries.
std::string hash128_hex(std::string_view bytes);

}  // namespace hpf
