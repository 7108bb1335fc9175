// Pieces every vendor plugin writes the same way: the hpf_error object behind the ABI's opaque
// handle, and the comma-separated target list of an environment variable (HPF_CUDA_TARGETS,
// HPF_HIP_TARGETS). Header-only; each plugin is its own MODULE, so each gets its own copy.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hpf/plugin.h"

// Owned by the plugin that made it; released by its error_destroy unless `is_static` (the
// preallocated out-of-memory error, which must never be freed).
struct hpf_error {
  hpf_error_code code;
  std::string message;
  bool is_static = false;
};

namespace hpf_plugin_common {

// A new error "<prefix>: <message>", or `oom` when even that allocation fails.
inline hpf_error* make_error(hpf_error* oom, const char* prefix, hpf_error_code code, std::string message) {
  try {
    return new hpf_error{code, std::string(prefix) + ": " + std::move(message)};
  } catch (...) {
    return oom;
  }
}

// The targets named by environment variable `var` ("sm_80,sm_90"; commas or spaces between);
// empty when unset.
inline std::vector<std::string> targets_from_env(const char* var) {
  std::vector<std::string> out;
  const char* env = std::getenv(var);
  if (!env) return out;
  std::string cur;
  for (const char* c = env;; ++c) {
    if (*c == ',' || *c == ' ' || *c == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*c == '\0') break;
    } else {
      cur += *c;
    }
  }
  return out;
}

}  // namespace hpf_plugin_common
