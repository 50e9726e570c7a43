// SPDX-License-Identifier: Apache-2.0
#include <tensormem/storage.hpp>

#include <tensormem/cuda_handle.hpp>

namespace tensormem {

/// The keep-alive behind a scoped pin: it holds the storage and releases the
/// one MapState acquisition when the last holder drops it, so each map
/// releases exactly once however many pin shares exist (PBO-MAP-10).
class MapLease {
public:
  explicit MapLease(std::shared_ptr<Storage> storage) noexcept : storage_(std::move(storage)) {}
  MapLease(const MapLease &) = delete;
  MapLease &operator=(const MapLease &) = delete;
  ~MapLease() { storage_->state_.release(*storage_); }

private:
  std::shared_ptr<Storage> storage_;
};

Result<HostPin> Storage::map(CpuAccess access, MapState::Wait wait) {
  Result<std::byte *> data = state_.acquire(*this, size_, access, wait);
  if (!data)
    return std::move(data).error();
  auto lease = std::make_shared<MapLease>(shared_from_this());
  return HostPin(std::move(lease), *data, size_);
}

Storage::~Storage() { run_destroy_hooks(); }

void Storage::run_destroy_hooks() noexcept {
  // No lock: nobody else holds a reference to a storage being destroyed.
  std::vector<std::function<void()>> hooks;
  hooks.swap(destroy_hooks_);
  for (auto &hook : hooks)
    hook();
}

void Storage::on_destroy(std::function<void()> hook) {
  std::lock_guard lock(hooks_mu_);
  destroy_hooks_.push_back(std::move(hook));
}

Result<std::shared_ptr<CudaHandle>> Storage::import_cuda(std::shared_ptr<const CudaRuntime>) {
  return Error::not_implemented(std::string("import_cuda: ") + storage_kind_name(kind()) +
                                " storage has no CUDA import (only DMA-BUF and PBO storages have one)");
}

Result<HostPin> Storage::pin_host(CpuAccess) {
  return Error::not_implemented(std::string("pin_host: ") + storage_kind_name(kind()) +
                                " storage has no host address that outlives a map; use map()");
}

} // namespace tensormem
