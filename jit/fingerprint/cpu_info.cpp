#include "hpf/cpu_info.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace hpf {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

int64_t parse_size(std::string s) {  // "48K", "2048K", "32M"
  s = trim(s);
  if (s.empty()) return 0;
  int64_t mult = 1;
  if (s.back() == 'K') mult = 1024;
  if (s.back() == 'M') mult = 1024 * 1024;
  try {
    return std::stoll(s) * mult;
  } catch (...) {
    return 0;
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

CpuInfo detect_cpu() {
  CpuInfo c;
#if defined(__x86_64__)
  c.isa = "x86-64";
#elif defined(__aarch64__)
  c.isa = "aarch64";
#else
  c.isa = "unknown";
#endif
  std::ifstream f("/proc/cpuinfo");
  double mhz = 0;
  for (std::string line; std::getline(f, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (!c.flags.empty()) break;  // first processor block is enough
      continue;
    }
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    auto to_int = [](const std::string& v) {
      try {
        return static_cast<int>(std::stol(v, nullptr, 0));
      } catch (...) {
        return 0;
      }
    };
    if (key == "vendor_id") c.vendor = value;
    else if (key == "CPU implementer") { c.vendor = "ARM"; c.family = to_int(value); }
    else if (key == "model name") c.brand = value;
    else if (key == "cpu family") c.family = to_int(value);
    else if (key == "model" || key == "CPU part") c.model = to_int(value);
    else if (key == "cpu MHz" && mhz == 0) mhz = std::stod(value);
    else if (key == "flags" || key == "Features") {
      std::istringstream ss(value);
      for (std::string flag; ss >> flag;) c.flags.insert(flag);
    }
  }
  c.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const std::string max_khz = read_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (!trim(max_khz).empty()) c.clock_ghz = std::stod(max_khz) / 1e6;
  else c.clock_ghz = mhz / 1000.0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = trim(read_file(dir + "level"));
    if (level.empty()) break;
    const std::string type = trim(read_file(dir + "type"));
    const int64_t size = parse_size(read_file(dir + "size"));
    if (level == "1" && type == "Data") c.l1d_bytes = size;
    if (level == "2") c.l2_bytes = size;
    if (level == "3") c.l3_bytes = size;
  }
  return c;
}

}  // namespace hpf
