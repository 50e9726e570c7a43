// SPDX-License-Identifier: Apache-2.0
#include <tensormem/storage.hpp>

#include <tensormem/cuda_handle.hpp>

#include <algorithm>
#include <cerrno>
#include <new>

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

/// \brief Records a GPU write into this storage that completes when
/// `timeline` reaches `value`; CPU maps wait for it first.
///
/// Per timeline the newest value wins: an older value arriving late never
/// replaces a newer one (D3D-FENCE-02). Value 0 records nothing.
/// \return InvalidArgument for a null timeline or for a value the timeline
/// never issued: a map would otherwise wait on a point nothing signals (HAZ-23).
Result<void> Storage::record_write(std::shared_ptr<Timeline> timeline, std::uint64_t value) {
  if (!timeline)
    return Error::invalid_argument("record_write: no timeline");
  Result<void> issued = timeline->check_issued(value, "record_write");
  if (!issued || value == 0)
    return issued;
  std::lock_guard lock(writes_mu_);
  auto same =
      std::find_if(writes_.begin(), writes_.end(), [&](const GpuCompletion &w) { return w.timeline == timeline; });
  if (same == writes_.end())
    writes_.push_back(GpuCompletion{std::move(timeline), value});
  else
    same->value = std::max(same->value, value);
  return {};
}

/// \brief The newest recorded GPU write on each timeline that wrote here.
std::vector<GpuCompletion> Storage::gpu_completion() const {
  std::lock_guard lock(writes_mu_);
  return writes_;
}

/// \brief Bounds the CPU wait of later maps; a negative bound is 0 (poll once).
void Storage::set_fence_timeout(std::chrono::nanoseconds timeout) noexcept {
  fence_timeout_ns_.store(std::max<std::int64_t>(timeout.count(), 0));
}

std::chrono::nanoseconds Storage::fence_timeout() const noexcept {
  return std::chrono::nanoseconds(fence_timeout_ns_.load());
}

/// \brief Orders a CPU map behind every recorded GPU write: a blocking map
/// waits on the CPU, all writes together bounded by fence_timeout(); a
/// non-blocking one answers WouldBlock while any write is outstanding.
Result<void> Storage::order_before_map(CpuAccess access, bool may_block) noexcept {
  try {
    const std::vector<GpuCompletion> writes = gpu_completion();
    const auto deadline = std::chrono::steady_clock::now() + fence_timeout();
    for (const GpuCompletion &w : writes) {
      if (!may_block) {
        Result<bool> done = w.timeline->signalled(w.value);
        if (!done)
          return std::move(done).error();
        if (!*done)
          return Error::would_block("map: the GPU write recorded as value " + std::to_string(w.value) + " on " +
                                    w.timeline->label() + " has not completed");
        continue;
      }
      const auto left =
          std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
      Result<void> waited = w.timeline->wait_cpu(w.value, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
      if (!waited)
        return Error(waited.error().kind(), "map: waiting for the recorded GPU write: " + waited.error().message());
    }
    return order_backend_map(access, may_block);
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "map: ordering behind the recorded GPU writes");
  } catch (...) {
    return Error::device("map: ordering behind the recorded GPU writes failed unexpectedly");
  }
}

} // namespace tensormem
