#include "hpf/version.hpp"

namespace hpf {
const char* version() { return HPF_VERSION_STRING; }
}  // namespace hpf
