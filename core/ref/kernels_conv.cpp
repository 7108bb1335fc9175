#include "core/ref/kernel.hpp"
namespace hpf::ref {
void add_conv_kernels(KernelTable&) {}
}  // namespace hpf::ref
