#include "plugins/cpu/host_memory.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace hpf::cpu {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPageBytes = 4096;

bool huge_pages_wanted() {
  const char* env = std::getenv("HPF_HUGE_PAGES");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

// `length` bytes (a multiple of 4 KiB) at a 2 MiB boundary: map 2 MiB more, unmap the ends.
void* map_aligned(size_t length) {
  const size_t span = length + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + length;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, length, MADV_HUGEPAGE);  // refused without THP in the kernel: ordinary pages
  return block;
}

}  // namespace

HostBlock allocate_host(size_t bytes) {
  if (bytes >= kHugePageBytes && bytes <= SIZE_MAX - 2 * kHugePageBytes && huge_pages_wanted()) {
    const size_t length = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    if (void* block = map_aligned(length)) return {block, length};
  }
  if (bytes > SIZE_MAX - kAlignment) return {};
  const size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return {std::aligned_alloc(kAlignment, rounded), 0};
}

void free_host(const HostBlock& block) {
  if (block.mapped > 0)
    munmap(block.data, block.mapped);
  else
    std::free(block.data);
}

}  // namespace hpf::cpu
