// SPDX-License-Identifier: Apache-2.0
// The device the port conformance suite and the storage suite run against:
// the software device on every platform (d3d11_test_device_software.cpp);
// the Windows build adds a variant over the real COM device under Wine
// (d3d11_test_device_windows.cpp).
#pragma once

#include <tensormem/d3d11_device.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace d3d11test {

/// What a test would like of its device. The software device honours all
/// of it; the real device cannot be chosen and ignores it, so tests read
/// what they got from the device (capabilities(), a staging map's pitch).
struct DeviceWish {
  std::uint32_t pitch_alignment = 256;
  std::uint32_t still_drawing_polls = 1;
  tensormem::D3d11Capabilities capabilities{};
};

/// A fresh device, or null with `*why` saying why none can be made here.
std::shared_ptr<tensormem::D3d11Device> make_device(const DeviceWish &wish, std::string *why);
inline std::shared_ptr<tensormem::D3d11Device> make_device(std::string *why) { return make_device(DeviceWish{}, why); }

} // namespace d3d11test
