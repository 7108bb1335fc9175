#include "core/ref/kernel.hpp"
namespace hpf::ref {
void add_resize_pad_kernels(KernelTable&) {}
}  // namespace hpf::ref
