#include "runtime/session/weight_cache.hpp"

namespace hpf {

std::shared_ptr<WeightCache> WeightCache::create() { return std::make_shared<SharedWeights>(); }

std::shared_ptr<const PackedWeights> SharedWeights::find_packed(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = packed_.find(key);
  if (it == packed_.end()) return nullptr;
  ++hits_;
  return it->second;
}

std::shared_ptr<const PackedWeights> SharedWeights::put_packed(const std::string& key, PackedWeights w) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = packed_.emplace(key, nullptr);
  if (added) {
    packed_bytes_ += static_cast<int64_t>(w.data.nbytes() + w.scales.nbytes() + w.column_sums.nbytes());
    it->second = std::make_shared<const PackedWeights>(std::move(w));
  }
  return it->second;
}

Expected<std::shared_ptr<Buffer>> SharedWeights::device_copy(const std::shared_ptr<const Tensor>& t, DType format,
                                                              Plugin* plugin, int32_t device, size_t bytes,
                                                              const std::function<Status(Buffer&)>& upload) {
  std::lock_guard<std::mutex> lock(mu_);
  const DeviceKey key{t.get(), format, plugin, device};
  if (auto it = device_.find(key); it != device_.end() && it->second.tensor.lock() == t) {
    ++hits_;
    return it->second.buffer;
  }
  std::erase_if(device_, [](const auto& e) { return e.second.tensor.expired(); });
  HPF_ASSIGN_OR_RETURN(Buffer b, plugin->alloc(device, bytes));
  auto buffer = std::make_shared<Buffer>(std::move(b));
  HPF_RETURN_IF_ERROR(upload(*buffer));
  device_[key] = DeviceEntry{t, buffer};
  return buffer;
}

int64_t SharedWeights::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(packed_.size() + device_.size());
}

int64_t SharedWeights::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = packed_bytes_;
  for (const auto& [key, e] : device_) b += static_cast<int64_t>(e.buffer->size());
  return b;
}

int64_t SharedWeights::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

}  // namespace hpf
