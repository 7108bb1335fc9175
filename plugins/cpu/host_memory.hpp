// Host memory for the CPU plugin's buffers (weights, activations, the Session's slots).
//
// A block of kHugePageBytes (2 MiB) or more is mapped on its own, 2 MiB aligned, and marked
// MADV_HUGEPAGE: where the kernel's transparent huge pages are `always` or `madvise` (Debian's
// default), the block is backed by 2 MiB pages and a kernel that walks it (a B matrix read
// column block by column block, 3 KiB apart row to row) takes one TLB entry per 2 MiB instead
// of per 4 KiB. Only the whole 2 MiB ranges inside the block can be huge pages, and the first
// touch of one may make all of its 2 MiB resident; the tail past the last whole range is
// ordinary pages. Where huge pages are `never` the advice is taken but nothing changes; a kernel
// built without them refuses it, and the block is ordinary pages. Smaller blocks come from
// aligned_alloc. HPF_HUGE_PAGES=0 (exactly) maps nothing and takes every block from
// aligned_alloc.
//
// Every block is at least 64-byte aligned and its contents are unspecified (mapped blocks read
// as zeros). Thread-safe (they keep no state; HPF_HUGE_PAGES is read at each allocation of 2 MiB
// or more, so it must not be set meanwhile by another thread).
#ifndef HPF_PLUGINS_CPU_HOST_MEMORY_HPP_
#define HPF_PLUGINS_CPU_HOST_MEMORY_HPP_

#include <cstddef>

namespace hpf::cpu {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

struct HostBlock {
  void* data = nullptr;  // null: the allocation failed
  size_t mapped = 0;     // bytes mapped with mmap (free_host unmaps them); 0: aligned_alloc
};

// At least `bytes` (0 counts as 1), 64-byte aligned; owned by the caller until free_host.
HostBlock allocate_host(size_t bytes);
void free_host(const HostBlock& block);

}  // namespace hpf::cpu

#endif  // HPF_PLUGINS_CPU_HOST_MEMORY_HPP_
