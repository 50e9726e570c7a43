// SPDX-License-Identifier: Apache-2.0
// A storage whose backend is a plain byte array, with the fault modes of the
// spec's PBO fakes (counting, null, short, failing) and hooks that let a test
// stop a backend call half-way. It checks the MapState contract from the
// backend's side: never two backend maps at once, every map size equal to the
// allocation, unmaps never without a map.
#pragma once

#include <tensormem/tensormem.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace tmtest {

enum class FakeMode { Counting, Null, Short, Failing, Disconnected, LongMapping };

class FakeStorage final : public tensormem::Storage {
public:
  FakeStorage(std::size_t size, FakeMode mode, std::uint64_t key)
      : Storage(size), mode_(mode), key_(key), bytes_(size) {}
  ~FakeStorage() override;

  static std::shared_ptr<FakeStorage> make(std::size_t size, FakeMode mode = FakeMode::Counting, std::uint64_t key = 0);

  tensormem::StorageKind kind() const noexcept override { return tensormem::StorageKind::Pbo; }
  tensormem::BufferIdentity identity() const noexcept override {
    return tensormem::BufferIdentity::derived(tensormem::StorageKind::Pbo, key_);
  }

  // Fill byte i with (i mod 256): a window at the wrong origin cannot match by accident.
  void fill_ramp();
  std::vector<std::byte> &bytes() { return bytes_; }

  std::atomic<int> maps{0};
  std::atomic<int> unmaps{0};
  std::atomic<int> violations{0};
  std::atomic<int> live{0};
  std::atomic<tensormem::CpuAccess> last_access{tensormem::CpuAccess::None};
  // Run inside backend_map / backend_unmap (on the calling thread), for tests
  // that observe or block the state machine mid-call.
  std::function<void()> on_map;
  std::function<void()> on_unmap;
  std::atomic<bool> unmap_fails{false};
  // Declares backend_map/backend_unmap address arithmetic (as heap storage
  // does), so MapState makes them in one step under its lock. on_map and
  // on_unmap then run with that lock held and must not ask the map state.
  std::atomic<bool> immediate{false};
  // Incremented when the fake is destroyed (lifetime tests).
  std::atomic<int> *destroyed = nullptr;

private:
  tensormem::Result<tensormem::BackendMapping> backend_map(std::size_t size,
                                                           tensormem::CpuAccess access) noexcept override;
  tensormem::Result<void> backend_unmap() noexcept override;
  bool backend_is_immediate(tensormem::CpuAccess) const noexcept override { return immediate.load(); }

  FakeMode mode_;
  std::uint64_t key_;
  std::vector<std::byte> bytes_;
};

} // namespace tmtest
