// SPDX-License-Identifier: Apache-2.0
#include "fake_pbo_ops.hpp"

#include <cstring>

namespace tmtest {

using namespace tensormem;

Result<BackendMapping> FakePboOps::map_buffer(std::uint32_t buffer_id, std::size_t size, CpuAccess access) noexcept {
  maps.fetch_add(1);
  last_id = buffer_id;
  last_access = access;
  switch (mode_) {
  case PboFake::Counting:
    if (size != bytes_.size())
      violations.fetch_add(1); // PBO-MAP-03: the whole allocation, always
    live_.fetch_add(1);
    return BackendMapping{bytes_.data(), size};
  case PboFake::Null: live_.fetch_add(1); return BackendMapping{nullptr, size};
  case PboFake::Short:
    // The array really shrinks: a slice of the requested size would overrun
    // it, which is what the storage must refuse (HAZ-01).
    bytes_.assign(size / 2, std::byte{0});
    bytes_.shrink_to_fit();
    live_.fetch_add(1);
    return BackendMapping{bytes_.data(), size / 2};
  case PboFake::Failing: return Error::invalid_operation("fake PBO: map refused");
  case PboFake::Disconnected: return Error::disconnected("fake PBO: the GL context is gone");
  }
  return Error::invalid_operation("fake PBO: unknown mode");
}

Result<void> FakePboOps::unmap_buffer(std::uint32_t buffer_id) noexcept {
  unmaps.fetch_add(1);
  last_id = buffer_id;
  if (mode_ == PboFake::Failing)
    return Error::invalid_operation("fake PBO: unmap refused");
  if (mode_ == PboFake::Disconnected)
    return Error::disconnected("fake PBO: the GL context is gone");
  if (live_.fetch_sub(1) != 1)
    violations.fetch_add(1);
  return {};
}

void FakePboOps::delete_buffer(std::uint32_t buffer_id) noexcept {
  last_id = buffer_id;
  deletes.fetch_add(1);
}

void FakePboOps::fill_ramp() {
  for (std::size_t i = 0; i < bytes_.size(); ++i)
    bytes_[i] = static_cast<std::byte>(i & 0xff);
}

void FakePboOps::fill(std::uint8_t value) { std::memset(bytes_.data(), value, bytes_.size()); }

} // namespace tmtest
