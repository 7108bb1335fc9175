// What the host CPU is: read from /proc/cpuinfo and /sys on Linux. Plain data; detect() is
// thread-safe and cheap enough to call once per process.
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace hpf {

struct CpuInfo {
  std::string isa;          // "x86-64" or "aarch64"
  std::string vendor;       // "GenuineIntel", "AuthenticAMD", "ARM", ...
  std::string brand;        // model name as the CPU reports it
  int family = 0;           // x86 family / arm implementer
  int model = 0;            // x86 model / arm part
  int cores = 0;            // logical CPUs available to this process
  double clock_ghz = 0;     // maximum (or current, when no maximum is exposed)
  std::set<std::string> flags;  // /proc/cpuinfo flags (x86) or Features (arm)
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;

  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
};

// Reads the running machine's CPU.
CpuInfo detect_cpu();

}  // namespace hpf
