// SPDX-License-Identifier: Apache-2.0
#include <tensormem/storage.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#ifdef _WIN32
#include <malloc.h>
#endif

namespace tensormem {
namespace {
// Heap buffers are keyed by a serial, not their address: a freed address is
// reused by the next allocation, which would make two different buffers share
// an identity in a consumer's import cache.
std::atomic<std::uint64_t> g_serial{1};

// C++17 aligned_alloc is missing from the Microsoft C runtime that MinGW
// links against; its own pair must be used there (and never mixed with free).
void *aligned_bytes(std::size_t alignment, std::size_t size) noexcept {
#ifdef _WIN32
  return _aligned_malloc(size, alignment);
#else
  return std::aligned_alloc(alignment, size);
#endif
}

void free_aligned_bytes(void *data) noexcept {
#ifdef _WIN32
  _aligned_free(data);
#else
  std::free(data);
#endif
}
} // namespace

Result<std::shared_ptr<MemStorage>> MemStorage::allocate(std::size_t size) {
  if (size == 0)
    return Error::invalid_size(0, "MemStorage::allocate: zero bytes");
  std::size_t rounded;
  if (__builtin_add_overflow(size, kAlignment - 1, &rounded))
    return Error::invalid_size(size, "MemStorage::allocate: " + std::to_string(size) + " bytes overflows when aligned");
  rounded &= ~(kAlignment - 1);
  void *data = aligned_bytes(kAlignment, rounded);
  if (!data)
    return Error::io(ENOMEM, "MemStorage::allocate: " + std::to_string(size) + " bytes");
  std::memset(data, 0, rounded);
  auto serial = g_serial.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<MemStorage>(Token{}, static_cast<std::byte *>(data), size, serial,
                                      [data] { free_aligned_bytes(data); });
}

Result<std::shared_ptr<MemStorage>> MemStorage::adopt(std::byte *data, std::size_t size,
                                                      std::function<void()> release) {
  // The caller gave the bytes away with the call: a refusal must not leak them.
  if (!data || size == 0) {
    if (release)
      release();
    if (!data)
      return Error::invalid_argument("MemStorage::adopt: no bytes at a null address");
    return Error::invalid_size(0, "MemStorage::adopt: zero bytes");
  }
  auto serial = g_serial.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<MemStorage>(Token{}, data, size, serial, std::move(release));
}

MemStorage::~MemStorage() {
  run_destroy_hooks();
  if (release_)
    release_();
}

Result<BackendMapping> MemStorage::backend_map(std::size_t size, CpuAccess) noexcept {
  return BackendMapping{data_, size};
}

Result<HostPin> MemStorage::pin_host(CpuAccess access) {
  if (access == CpuAccess::None)
    return Error::invalid_argument("pin_host: access None grants no CPU access");
  return HostPin(shared_from_this(), data_, size_bytes());
}

Result<StorageHandle> MemStorage::export_handle() { return StorageHandle(HostMemoryHandle{data_, size_bytes()}); }

} // namespace tensormem
