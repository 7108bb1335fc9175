// The WeightCache implementation (include/hpf/session.hpp): packed weights by key, and device
// copies of constant tensors, so compiles of one model under many plans (the planner) or many
// shapes (LiveExecutable's variants) quantise, pack, convert and upload each weight once.
//
// Ownership: entries are shared_ptrs; an Executable keeps the ones it uses alive after the cache
// is gone. Device copies are keyed by the tensor's identity and hold only a weak reference to
// it: an entry whose tensor has died is dropped at the next insertion. Thread-safety: internally
// locked; an upload runs under the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "hpf/plugin_host.hpp"
#include "hpf/session.hpp"
#include "runtime/session/weight_packing.hpp"

namespace hpf {

class SharedWeights final : public WeightCache {
 public:
  // Constants smaller than this are uploaded by each executable (shape constants, scales).
  static constexpr size_t kMinDeviceBytes = 64 * 1024;

  std::shared_ptr<const PackedWeights> find_packed(const std::string& key);
  // Stores `w` under `key` (or keeps the entry already there) and returns the stored one.
  std::shared_ptr<const PackedWeights> put_packed(const std::string& key, PackedWeights w);

  // The buffer holding `t` in storage `format` on `device` of `plugin`: shared with earlier
  // callers, or allocated (`bytes`) and filled by `upload` on first use. An upload error leaves
  // nothing behind.
  Expected<std::shared_ptr<Buffer>> device_copy(const std::shared_ptr<const Tensor>& t, DType format,
                                                Plugin* plugin, int32_t device, size_t bytes,
                                                const std::function<Status(Buffer&)>& upload);

  int64_t entries() const override;
  int64_t bytes() const override;
  int64_t hits() const override;

 private:
  using DeviceKey = std::tuple<const Tensor*, DType, const Plugin*, int32_t>;
  struct DeviceEntry {
    std::weak_ptr<const Tensor> tensor;
    std::shared_ptr<Buffer> buffer;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const PackedWeights>> packed_;
  std::map<DeviceKey, DeviceEntry> device_;
  int64_t packed_bytes_ = 0, hits_ = 0;
};

}  // namespace hpf
