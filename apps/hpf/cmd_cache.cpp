// hpf cache: placeholder until the kernel cache lands.
#include "apps/hpf/cli.hpp"

namespace hpf::cli {
int cmd_cache(const std::vector<std::string>&) { return fail("the kernel cache is not built yet", 1); }
}  // namespace hpf::cli
