// The meta text of a kernel cache entry as a JSON object: what the Session keeps beside a kernel
// (measured run times, `by_units`; autotuning choices, `tiles_by_units`). Writers read it, change
// their own member and write it back whole, so the others' members stay.
#pragma once

#include <nlohmann/json.hpp>

#include "hpf/kernel_cache.hpp"

namespace hpf {

// The entry's meta as an object; an empty object when there is no entry, no meta, or text that
// is not a JSON object. Thread-safe as KernelCache::meta is.
inline nlohmann::json cached_meta(KernelCache& cache, const CacheKey& key) {
  const std::optional<std::string> text = cache.meta(key);
  if (!text || text->empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace hpf
