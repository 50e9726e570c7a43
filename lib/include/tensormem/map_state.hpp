// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/types.hpp>

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace tensormem {

/// What a backend hands back from a successful map: an address and the
/// number of bytes it claims are addressable there.
struct BackendMapping {
  std::byte *data = nullptr;
  std::size_t length = 0;
};

/// The port through which MapState reaches a backend. Both calls block until
/// the backend has done its work and must not throw.
class MapPort {
public:
  /// Map the whole allocation of `size` bytes for `access` (never None).
  virtual Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept = 0;
  /// Undo the one live backend mapping.
  virtual Result<void> backend_unmap() noexcept = 0;
  /// Runs before backend_map, with the map published as Mapping and no lock
  /// held: the place to wait for GPU writes the CPU must see. `may_block` is
  /// false for a Wait::NoWait map, which must answer WouldBlock instead of
  /// waiting. A failure fails the map and leaves the state Unmapped.
  virtual Result<void> order_before_map(CpuAccess access, bool may_block) noexcept {
    (void)access;
    (void)may_block;
    return {};
  }
  /// True when a map for `access`, and the unmap after it, is address
  /// arithmetic only: order_before_map has nothing to wait for, backend_map
  /// neither blocks nor calls into a driver and cannot be observed half done
  /// (heap memory; a kept mapping with no cache maintenance). MapState then
  /// runs backend_map and backend_unmap under its own lock, in one step,
  /// instead of publishing Mapping and Unmapping around them. Asked with
  /// MapState's lock held: it must not block or take a lock MapState's
  /// callers may hold.
  virtual bool map_is_immediate(CpuAccess access) const noexcept {
    (void)access;
    return false;
  }

protected:
  ~MapPort() = default;
};

/// The CPU-map state machine shared by every storage (the seed's PBO one,
/// generalised). Readers share one backend mapping; a writer is exclusive;
/// backend calls run with the lock released and are published as
/// Mapping/Unmapping so other threads wait on the condition variable instead
/// of on the backend.
class TENSORMEM_API MapState {
public:
  enum class Phase { Unmapped, Mapping, Exclusive, Shared, Unmapping };
  enum class Wait { Block, NoWait };

  MapState() = default;
  MapState(const MapState &) = delete;
  MapState &operator=(const MapState &) = delete;

  /// One acquisition of `size` bytes. With Wait::NoWait a map or unmap in
  /// flight on another thread is reported as WouldBlock instead of waited out.
  Result<std::byte *> acquire(MapPort &port, std::size_t size, CpuAccess access, Wait wait);

  /// One more holder of the map live now, whatever its access: an owner of a
  /// writable map that hands a view of it to someone who may outlive the
  /// owner's own release. Each retain is matched by one release(). Mapped
  /// when nothing is live (or a map or unmap is in flight).
  Result<std::byte *> retain();

  /// Releases one acquisition; the last holder unmaps the backend. A release
  /// with no matching acquisition is ignored.
  void release(MapPort &port) noexcept;

  /// False only when Unmapped: an in-flight map or unmap counts.
  bool is_mapped() const noexcept;
  Phase phase() const noexcept;
  std::size_t readers() const noexcept;

private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Phase phase_ = Phase::Unmapped;
  std::size_t readers_ = 0;
  std::byte *data_ = nullptr;
  std::size_t retained_ = 0; // retain()s of an Exclusive map not yet released
  bool immediate_ = false;   // the live mapping was made in one step; so is its unmap
};

} // namespace tensormem
