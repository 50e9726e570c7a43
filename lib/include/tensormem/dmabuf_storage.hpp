// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/storage.hpp>
#include <tensormem/unique_fd.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tensormem {

/// Row strides of every DMA-BUF image are multiples of this (packed, planar
/// and semi-planar alike); use with image_layout().
inline constexpr std::size_t kDmaBufStrideAlign = 64;

/// Where a new DMA-BUF storage gets its memory.
enum class DmaBufSource : std::uint8_t {
  Default, ///< TENSORMEM_DMABUF_SOURCE: "memfd" → Memfd; "heap" or unset → Heap
  Heap,    ///< a DMA heap (/dev/dma_heap/…), importable by GPU drivers
  Memfd,   ///< memfd: CPU-shareable and fd-passable, NOT importable by a GPU driver
};

/// What an fd turned out to be, by its filesystem magic (never its device).
enum class DmaBufFdKind : std::uint8_t { DmaBuf, Memfd };

/// The DMA_BUF_IOCTL_SYNC call: returns 0 or an errno value. Replaceable so
/// tests can observe directions on memfd, where the real ioctl is ENOTTY.
using DmaBufSyncFn = int (*)(int fd, std::uint64_t flags);

struct DmaBufOptions {
  DmaBufSource source = DmaBufSource::Default;
  /// Heaps tried in order under /dev/dma_heap/.
  std::vector<std::string> heaps = {"system", "linux,cma", "reserved"};
  /// nullptr: the real ioctl.
  DmaBufSyncFn sync = nullptr;
};

/// Counters a test or a benchmark can read.
struct DmaBufStats {
  std::uint64_t mmaps = 0;
  std::uint64_t munmaps = 0;
  std::uint64_t sync_calls = 0; ///< ioctl attempts, including retries
};

/// DMA-BUF (or memfd) storage. CPU maps go through MapState: readers share
/// one mmap, a writer is exclusive, and each backend map/unmap brackets the
/// access with DMA_BUF_IOCTL_SYNC START/END in the access's direction.
class TENSORMEM_API DmaBufStorage final : public Storage {
public:
  /// A new buffer of `size` bytes from the source the options select.
  static Result<std::shared_ptr<DmaBufStorage>> allocate(std::size_t size, const DmaBufOptions &options = {});
  /// Wraps an existing fd, which stays the caller's: the storage keeps a dup.
  /// `size` 0 means the whole buffer; a larger size than the buffer is
  /// InsufficientCapacity. An fd that is neither DMA-BUF nor memfd/shm is
  /// InvalidArgument carrying the filesystem magic.
  static Result<std::shared_ptr<DmaBufStorage>> import(int fd, std::size_t size = 0, const DmaBufOptions &options = {});
  /// Whether allocate() with `options` can work here, without allocating:
  /// the source the environment selects is valid, and for DMA heaps one of
  /// the heap nodes opens. The error names every heap tried and the switch
  /// to memfd-backed buffers.
  static Result<void> check_source(const DmaBufOptions &options = {});
  /// Classifies `fd` by fstatfs magic.
  static Result<DmaBufFdKind> classify(int fd);
  /// The identity a storage imported from `fd` would have (its device and
  /// inode), without importing it: what caches of imports are keyed on.
  static Result<BufferIdentity> identity_of(int fd);
  ~DmaBufStorage() override;

  StorageKind kind() const noexcept override { return StorageKind::DmaBuf; }
  /// Derived from the fd's (device, inode): re-imports of one buffer agree.
  BufferIdentity identity() const noexcept override { return BufferIdentity::derived(StorageKind::DmaBuf, key_); }
  /// A long-lived address of the whole buffer. Maps and pins share one mmap
  /// made on first use and kept for the storage's life (the pin keeps the
  /// storage). Pin holders order their own accesses with sync_for_cpu/device.
  Result<HostPin> pin_host(CpuAccess access) override;
  /// The storage's own fd (borrowed) over the whole buffer (DmaBufHandle).
  Result<StorageHandle> export_handle() override;

  /// The storage's own fd (borrowed: valid while the storage lives).
  int fd() const noexcept { return fd_.get(); }
  /// A new fd of the same buffer for the caller to own.
  Result<UniqueFd> dup_fd() const;
  DmaBufFdKind fd_kind() const noexcept { return fd_kind_; }
  bool writable() const noexcept { return writable_; }

  /// DMA_BUF_IOCTL_SYNC START / END for pin holders.
  Result<void> sync_for_cpu(CpuAccess access);
  Result<void> sync_for_device(CpuAccess access);

  DmaBufStats stats() const noexcept;

private:
  struct Token {};

public:
  DmaBufStorage(Token, UniqueFd fd, std::size_t size, DmaBufFdKind kind, bool writable, std::uint64_t key,
                DmaBufSyncFn sync) noexcept;

private:
  static Result<std::shared_ptr<DmaBufStorage>> adopt(UniqueFd fd, std::size_t size, const DmaBufOptions &options,
                                                      const char *what);
  Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept override;
  Result<void> backend_unmap() noexcept override;
  bool backend_is_immediate(CpuAccess access) const noexcept override;
  Result<std::byte *> mapping();
  Result<void> sync(std::uint64_t flags, const char *what);

  UniqueFd fd_;
  DmaBufFdKind fd_kind_;
  bool writable_;
  std::uint64_t key_;
  DmaBufSyncFn sync_fn_;

  std::mutex mu_;
  std::byte *data_ = nullptr;      // the one mmap, made on first use, unmapped at destruction
  std::uint64_t mapped_flags_ = 0; // direction of the live map
  bool sync_unsupported_ = false;  // ENOTTY seen once: memfd
  // Set under mu_ once data_ exists and sync_unsupported_ is known: a CPU
  // map is then the kept address alone, read without mu_.
  std::atomic<bool> plain_mapping_{false};
  std::atomic<std::uint64_t> mmaps_{0};
  std::atomic<std::uint64_t> munmaps_{0};
  std::atomic<std::uint64_t> sync_calls_{0};
};

} // namespace tensormem
