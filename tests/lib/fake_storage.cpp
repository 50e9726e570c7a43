// SPDX-License-Identifier: Apache-2.0
#include "fake_storage.hpp"

namespace tmtest {

using namespace tensormem;

std::shared_ptr<FakeStorage> FakeStorage::make(std::size_t size, FakeMode mode, std::uint64_t key) {
  return std::make_shared<FakeStorage>(size, mode, key);
}

FakeStorage::~FakeStorage() {
  if (destroyed)
    destroyed->fetch_add(1);
}

void FakeStorage::fill_ramp() {
  for (std::size_t i = 0; i < bytes_.size(); ++i)
    bytes_[i] = static_cast<std::byte>(i & 0xff);
}

Result<BackendMapping> FakeStorage::backend_map(std::size_t size, CpuAccess access) noexcept {
  maps.fetch_add(1);
  last_access = access;
  if (size != size_bytes())
    violations.fetch_add(1); // PBO-MAP-03: always the whole allocation
  if (live.fetch_add(1) != 0)
    violations.fetch_add(1); // two backend maps at once
  if (on_map)
    on_map();
  switch (mode_) {
  case FakeMode::Counting: return BackendMapping{bytes_.data(), size};
  case FakeMode::LongMapping: return BackendMapping{bytes_.data(), size + 16};
  case FakeMode::Null: return BackendMapping{nullptr, size};
  case FakeMode::Short: return BackendMapping{bytes_.data(), size / 2};
  case FakeMode::Failing: live.fetch_sub(1); return Error::invalid_operation("fake: map refused");
  case FakeMode::Disconnected: live.fetch_sub(1); return Error::disconnected("fake: the context is gone");
  }
  return Error::invalid_operation("fake: unknown mode");
}

Result<void> FakeStorage::backend_unmap() noexcept {
  unmaps.fetch_add(1);
  if (live.fetch_sub(1) != 1)
    violations.fetch_add(1); // unmap without a live map
  if (on_unmap)
    on_unmap();
  if (unmap_fails)
    return Error::invalid_operation("fake: unmap refused");
  return {};
}

} // namespace tmtest
