// SPDX-License-Identifier: Apache-2.0
#include <tensormem/host_pin.hpp>

#include <cstdint>

namespace tensormem {

std::size_t HostPin::alignment() const noexcept {
  constexpr std::size_t cap = 4096;
  auto addr = reinterpret_cast<std::uintptr_t>(data_);
  if (addr == 0)
    return cap;
  std::size_t align = addr & (~addr + 1);
  return align > cap ? cap : align;
}

HostPin HostPin::slice(std::size_t offset, std::size_t length) const noexcept {
  if (!keep_ || offset > length_ || length > length_ - offset)
    return {};
  return HostPin(keep_, data_ + offset, length);
}

} // namespace tensormem
