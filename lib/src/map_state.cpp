// SPDX-License-Identifier: Apache-2.0
#include <tensormem/log.hpp>
#include <tensormem/map_state.hpp>

#include <string>

namespace tensormem {

namespace {

/// A mapping the backend made but that cannot be used (null,
/// or shorter than the allocation) is unmapped again before the error goes
/// back; the caller publishes Unmapped only after that.
Result<void> check_backend_mapping(MapPort &port, const BackendMapping &mapped, std::size_t size) {
  if (mapped.data != nullptr && mapped.length >= size)
    return {};
  (void)port.backend_unmap();
  if (mapped.data == nullptr)
    return Error::invalid_size(size, "map: the backend returned a null address for " + std::to_string(size) + " bytes");
  return Error::insufficient_capacity(size, mapped.length, "map: the backend mapped fewer bytes than the allocation");
}

} // namespace

Result<std::byte *> MapState::acquire(MapPort &port, std::size_t size, CpuAccess access, Wait wait) {
  if (access == CpuAccess::None)
    return Error::invalid_argument("map: access None grants no CPU access; ask for read, write or read-write");
  const bool writable = access_writes(access);

  {
    std::unique_lock lock(mu_);
    // Wait out in-flight backend calls, re-checking after every wake-up.
    while (phase_ == Phase::Mapping || phase_ == Phase::Unmapping) {
      if (wait == Wait::NoWait)
        return Error::would_block(std::string("map: another thread is ") +
                                  (phase_ == Phase::Mapping ? "mapping" : "unmapping") + " this buffer");
      cv_.wait(lock);
    }
    switch (phase_) {
    case Phase::Shared:
      if (!writable) {
        ++readers_;
        return data_;
      }
      return Error::mapped("map for " + std::string(access_name(access)) + ": " + std::to_string(readers_) +
                           " read map(s) are live on this buffer");
    case Phase::Exclusive:
      return Error::mapped(std::string("map for ") + access_name(access) + ": a writable map is live on this buffer");
    default: break;
    }
    if (port.map_is_immediate(access)) {
      // Nothing to order and nothing that blocks: map in the same critical
      // section, so no other thread ever sees this map half made.
      Result<BackendMapping> mapped = port.backend_map(size, access);
      if (!mapped)
        return std::move(mapped).error();
      if (Result<void> usable = check_backend_mapping(port, *mapped, size); !usable)
        return std::move(usable).error();
      phase_ = writable ? Phase::Exclusive : Phase::Shared;
      readers_ = writable ? 0 : 1;
      data_ = mapped->data;
      immediate_ = true;
      return data_;
    }
    phase_ = Phase::Mapping;
  }

  auto publish = [&](Phase phase, std::byte *data) {
    std::lock_guard lock(mu_);
    phase_ = phase;
    readers_ = phase == Phase::Shared ? 1 : 0;
    data_ = data;
    cv_.notify_all();
  };

  // Fences: the wait for a recorded GPU write runs without the lock like any
  // backend call; nothing is mapped yet, so a failure has nothing to undo.
  Result<void> ordered = port.order_before_map(access, wait == Wait::Block);
  if (!ordered) {
    publish(Phase::Unmapped, nullptr);
    return std::move(ordered).error();
  }

  // The backend call runs without the lock.
  Result<BackendMapping> mapped = port.backend_map(size, access);

  if (!mapped) {
    publish(Phase::Unmapped, nullptr); // nothing to undo
    return std::move(mapped).error();
  }
  // The backend considers the buffer mapped, so release it
  // while still in Mapping; publishing Unmapped first would let a waiter start
  // a fresh map that races this cleanup.
  if (Result<void> usable = check_backend_mapping(port, *mapped, size); !usable) {
    publish(Phase::Unmapped, nullptr);
    return std::move(usable).error();
  }
  publish(writable ? Phase::Exclusive : Phase::Shared, mapped->data);
  return mapped->data;
}

Result<std::byte *> MapState::retain() {
  std::lock_guard lock(mu_);
  switch (phase_) {
  case Phase::Shared: ++readers_; return data_;
  case Phase::Exclusive: ++retained_; return data_;
  default: return Error::mapped("retain: no map is live on this buffer");
  }
}

void MapState::release(MapPort &port) noexcept {
  {
    std::lock_guard lock(mu_);
    switch (phase_) {
    case Phase::Shared:
      if (readers_ > 1) {
        --readers_;
        return;
      }
      break;
    case Phase::Exclusive:
      if (retained_ > 0) {
        --retained_;
        return;
      }
      break;
    default: return; // a release with no acquisition behind it
    }
    if (immediate_) {
      Result<void> unmapped = port.backend_unmap();
      if (!unmapped)
        log(LogLevel::Warning, "unmap failed, the buffer is treated as unmapped: " + unmapped.error().message());
      phase_ = Phase::Unmapped;
      readers_ = 0;
      data_ = nullptr;
      immediate_ = false;
      cv_.notify_all();
      return;
    }
    phase_ = Phase::Unmapping;
    readers_ = 0;
    data_ = nullptr;
  }

  Result<void> unmapped = port.backend_unmap();
  if (!unmapped)
    log(LogLevel::Warning, "unmap failed, the buffer is treated as unmapped: " + unmapped.error().message());

  std::lock_guard lock(mu_);
  phase_ = Phase::Unmapped;
  cv_.notify_all();
}

bool MapState::is_mapped() const noexcept {
  std::lock_guard lock(mu_);
  return phase_ != Phase::Unmapped;
}

MapState::Phase MapState::phase() const noexcept {
  std::lock_guard lock(mu_);
  return phase_;
}

std::size_t MapState::readers() const noexcept {
  std::lock_guard lock(mu_);
  return readers_;
}

} // namespace tensormem
