// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/host_pin.hpp>
#include <tensormem/map_state.hpp>
#include <tensormem/storage_handle.hpp>
#include <tensormem/timeline.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tensormem {

/// One backend allocation: it owns the resource, its identity and its map
/// state. Storages live in std::shared_ptr (tensors, views and pins share
/// them); concrete storages are made by factories that return one.
class TENSORMEM_API Storage : public std::enable_shared_from_this<Storage>, protected MapPort {
public:
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  virtual ~Storage();

  virtual StorageKind kind() const noexcept = 0;
  virtual BufferIdentity identity() const noexcept = 0;
  /// Bytes in the allocation.
  std::size_t size_bytes() const noexcept { return size_; }

  /// A scoped pin of the whole allocation: one MapState acquisition that is
  /// released when the pin (and every share of it) has gone.
  Result<HostPin> map(CpuAccess access, MapState::Wait wait = MapState::Wait::Block);

  /// One map-state acquisition without a pin, for an owner that counts its
  /// own maps (a GstMemory) and calls release_map() exactly once for it; the
  /// owner keeps the storage alive meanwhile. The address of the whole
  /// allocation. Everyone else uses map(), whose pin releases by itself.
  Result<std::byte *> acquire_map(CpuAccess access, MapState::Wait wait = MapState::Wait::Block);
  /// Gives back one acquisition taken with acquire_map() (or retained by
  /// pin_live_map()).
  void release_map() noexcept { state_.release(*this); }
  /// A scoped pin of the map live now, whatever its access (MapState::retain):
  /// for the owner of an acquisition who hands the bytes to someone who may
  /// outlive the owner's own release. Mapped when no map is live.
  Result<HostPin> pin_live_map();

  /// A long-lived host address of the whole allocation that outlives every
  /// map. The default refuses: only storages with a stable host
  /// address give one.
  virtual Result<HostPin> pin_host(CpuAccess access);

  /// Whether a CPU map of `bytes` bytes at `offset` for `access` may be
  /// taken (a Tensor asks before every map). The default allows every window
  /// inside the allocation; a storage whose release publishes more than the
  /// window refuses the windows that would publish undefined bytes.
  virtual Result<void> check_cpu_window(CpuAccess access, std::size_t offset, std::size_t bytes) const {
    (void)access;
    (void)offset;
    (void)bytes;
    return {};
  }

  bool is_mapped() const noexcept { return state_.is_mapped(); }
  const MapState &map_state() const noexcept { return state_; }

  /// How long a CPU map waits for the recorded GPU writes unless told otherwise.
  static constexpr std::chrono::seconds kDefaultFenceTimeout{5};

  /// Records that the GPU writes this storage until `timeline` reaches `value`.
  Result<void> record_write(std::shared_ptr<Timeline> timeline, std::uint64_t value);
  /// The newest recorded write per timeline; empty when none was recorded.
  std::vector<GpuCompletion> gpu_completion() const;
  /// Records that a reader (a GPU kernel, an inference step running after
  /// the buffer was handed on) reads this storage until `timeline` reaches
  /// `value`: CPU maps that write wait for every recorded read first (write
  /// after read), and pools wait for them before they recycle the memory.
  /// Per timeline the newest value wins; reads known complete are forgotten
  /// when the next one is recorded.
  Result<void> record_read(std::shared_ptr<Timeline> timeline, std::uint64_t value);
  /// The recorded reads not yet complete (each is polled once; those found
  /// complete are forgotten).
  Result<std::vector<GpuCompletion>> pending_reads();
  /// Waits on the CPU for every recorded read, all together bounded by
  /// `timeout` (0 polls once), and forgets them. Returns how many had not
  /// completed when the wait began; WouldBlock naming the first read still
  /// running when the time ran out; Cancelled soon after `cancel` (when
  /// given) is cancelled.
  Result<std::size_t> wait_for_reads(std::chrono::nanoseconds timeout, const WaitCancel *cancel = nullptr);
  /// The bound on the CPU wait a map makes for the recorded writes (and, for
  /// a map that writes, the recorded reads).
  void set_fence_timeout(std::chrono::nanoseconds timeout) noexcept;
  std::chrono::nanoseconds fence_timeout() const noexcept;

  /// The scope in which identity() is unique: null where it is unique in the
  /// process (heap serials, DMA-BUF device/inode); the GL port for a PBO,
  /// whose GL names repeat from one context to the next. Caches keyed on
  /// identity key on (identity, scope).
  virtual const void *identity_scope() const noexcept { return nullptr; }

  /// How another API reaches this storage's bytes (storage_handle.hpp): the
  /// storage says what it is, each importer decides what to do with it. Borrowed parts stay valid while the storage
  /// lives. The default refuses with NotImplemented naming the kind.
  virtual Result<StorageHandle> export_handle();

  /// Runs `hook` once when the storage is destroyed, before its backend
  /// resource is released: side data kept elsewhere for this storage (another
  /// API's import of its buffer, an imported copy's bookkeeping) goes
  /// first, while the resource it refers to still exists. Hooks must not
  /// throw; they run in the order they were added.
  void on_destroy(std::function<void()> hook);

protected:
  explicit Storage(std::size_t size) noexcept : size_(size) {}

  /// Runs the on_destroy hooks (once). Concrete storages call it first in
  /// their destructor, before they release the resource; the base destructor
  /// runs it for any that do not.
  void run_destroy_hooks() noexcept;

  /// Runs at the end of the map ordering (after the recorded CPU-visible
  /// writes were waited for), with the map's `may_block`: a storage whose
  /// backend map itself orders on the GPU (D3D11) learns here whether this
  /// map may wait. The default does nothing.
  virtual Result<void> order_backend_map(CpuAccess access, bool may_block) noexcept {
    (void)access;
    (void)may_block;
    return {};
  }

  /// Whether backend_map and backend_unmap for `access` are address
  /// arithmetic alone right now (see MapPort::map_is_immediate); asked under
  /// the map state's lock, so it reads atomics only. The default says no.
  virtual bool backend_is_immediate(CpuAccess access) const noexcept {
    (void)access;
    return false;
  }

private:
  Result<void> order_before_map(CpuAccess access, bool may_block) noexcept final;
  bool map_is_immediate(CpuAccess access) const noexcept final;
  /// Checks a completion to be recorded; false (with `*result` set) when
  /// there is nothing to record: an error, or value 0.
  static bool accept_completion(const Timeline *timeline, std::uint64_t value, const char *what, Result<void> *result);
  void note_recorded() noexcept; // under writes_mu_

  std::size_t size_;
  MapState state_;
  mutable std::mutex writes_mu_;
  std::vector<GpuCompletion> writes_;
  std::vector<GpuCompletion> reads_; // under writes_mu_
  // Whether writes_ or reads_ holds anything: written under writes_mu_, read
  // without it by every map, which skips the lists' lock while both are empty.
  std::atomic<bool> ordering_recorded_{false};
  std::atomic<std::int64_t> fence_timeout_ns_{std::chrono::nanoseconds(kDefaultFenceTimeout).count()};
  std::mutex hooks_mu_;
  std::vector<std::function<void()>> destroy_hooks_;
};

/// Which buffer a storage is, for caches of side data kept per buffer: its
/// identity in the scope where that is unique (Storage::identity_scope).
struct StorageKey {
  BufferIdentity id;
  const void *scope = nullptr;

  static StorageKey of(const Storage &storage) noexcept { return {storage.identity(), storage.identity_scope()}; }
  friend bool operator<(const StorageKey &a, const StorageKey &b) noexcept {
    if (a.id.kind != b.id.kind)
      return a.id.kind < b.id.kind;
    if (a.id.key != b.id.key)
      return a.id.key < b.id.key;
    return std::less<const void *>()(a.scope, b.scope);
  }
};

/// Heap storage: a 64-byte aligned allocation of its own, or host bytes
/// adopted from another allocator, that obeys the same reader/writer rules as
/// the GPU storages because it maps through the same MapState.
class TENSORMEM_API MemStorage final : public Storage {
public:
  static constexpr std::size_t kAlignment = 64;

  /// `size` bytes, zero-filled. InvalidSize(0) for an empty allocation.
  static Result<std::shared_ptr<MemStorage>> allocate(std::size_t size);
  /// The `size` bytes at `data`, allocated by someone else and left as they
  /// are (not zero-filled, aligned as they were made); `release` (may be
  /// empty) runs once, after the destroy hooks, when the storage goes. The
  /// bytes are the storage's from the call on: when it fails (InvalidArgument
  /// for null `data`, InvalidSize(0) for no bytes) `release` has already run.
  static Result<std::shared_ptr<MemStorage>> adopt(std::byte *data, std::size_t size, std::function<void()> release);
  ~MemStorage() override;

  StorageKind kind() const noexcept override { return StorageKind::Mem; }
  BufferIdentity identity() const noexcept override { return BufferIdentity::derived(StorageKind::Mem, serial_); }
  Result<HostPin> pin_host(CpuAccess access) override;
  /// The heap address (HostMemoryHandle).
  Result<StorageHandle> export_handle() override;

private:
  struct Token {};

public:
  MemStorage(Token, std::byte *data, std::size_t size, std::uint64_t serial, std::function<void()> release) noexcept
      : Storage(size), data_(data), serial_(serial), release_(std::move(release)) {}

private:
  Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept override;
  Result<void> backend_unmap() noexcept override { return {}; }
  bool backend_is_immediate(CpuAccess) const noexcept override { return true; }

  std::byte *data_;
  std::uint64_t serial_;
  std::function<void()> release_; // frees data_
};

} // namespace tensormem
