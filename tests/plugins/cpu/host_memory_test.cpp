// The CPU plugin's host memory (plugins/cpu/host_memory.hpp), compiled in: alignment, huge-page
// advice on the blocks of 2 MiB or more, HPF_HUGE_PAGES=0, contents kept to the last byte.
#include "plugins/cpu/host_memory.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

using hpf::cpu::HostBlock;
using hpf::cpu::kHugePageBytes;

namespace {

// The VmFlags line of /proc/self/smaps for the mapping that holds `p` ("" if none is found).
std::string vm_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// Every byte written and read back: nothing past `bytes` is needed, everything up to it is kept.
void fill_and_check(const HostBlock& b, size_t bytes) {
  auto* c = static_cast<unsigned char*>(b.data);
  for (size_t i = 0; i < bytes; ++i) c[i] = static_cast<unsigned char>(i * 131 + 7);
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) bad += c[i] != static_cast<unsigned char>(i * 131 + 7);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("host memory: 64-byte aligned below 2 MiB, mapped 2 MiB aligned with MADV_HUGEPAGE from 2 MiB") {
  unsetenv("HPF_HUGE_PAGES");
  const bool thp = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
  if (!thp) MESSAGE("no transparent huge pages in this kernel: the madvise flag is not checked");
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, kHugePageBytes - 1, kHugePageBytes,
                       5 * kHugePageBytes + 3}) {
    CAPTURE(bytes);
    const HostBlock b = hpf::cpu::allocate_host(bytes);
    REQUIRE(b.data != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(b.data) % 64 == 0);
    if (bytes >= kHugePageBytes) {
      CHECK(b.mapped >= bytes);
      CHECK(b.mapped % 4096 == 0);
      CHECK(reinterpret_cast<uintptr_t>(b.data) % kHugePageBytes == 0);
      if (thp) CHECK(vm_flags(b.data).find(" hg") != std::string::npos);
    } else {
      CHECK(b.mapped == 0);
    }
    fill_and_check(b, bytes);
    hpf::cpu::free_host(b);
  }
}

TEST_CASE("host memory: HPF_HUGE_PAGES=0 takes every block from aligned_alloc") {
  setenv("HPF_HUGE_PAGES", "0", 1);
  const HostBlock b = hpf::cpu::allocate_host(3 * kHugePageBytes);
  unsetenv("HPF_HUGE_PAGES");
  REQUIRE(b.data != nullptr);
  CHECK(b.mapped == 0);
  CHECK(reinterpret_cast<uintptr_t>(b.data) % 64 == 0);
  fill_and_check(b, 3 * kHugePageBytes);
  hpf::cpu::free_host(b);
}

TEST_CASE("host memory: a size no address space holds is a null block, not a crash") {
  // SIZE_MAX / 4: mmap refuses it and aligned_alloc then too; SIZE_MAX - 8: past the guards.
  for (size_t bytes : {SIZE_MAX / 4, SIZE_MAX - 8}) {
    const HostBlock b = hpf::cpu::allocate_host(bytes);
    CHECK(b.data == nullptr);
    CHECK(b.mapped == 0);
    hpf::cpu::free_host(b);  // a null block frees nothing
  }
}
