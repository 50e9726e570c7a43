// SPDX-License-Identifier: Apache-2.0
// The device the port conformance suite runs against: the software device
// on every platform (d3d11_test_device_software.cpp); the Windows build adds
// a variant over the real COM device under Wine.
#pragma once

#include <tensormem/d3d11_device.hpp>

#include <memory>
#include <string>

namespace d3d11test {

/// A fresh device, or null with `*why` saying why none can be made here.
std::shared_ptr<tensormem::D3d11Device> make_device(std::string *why);

} // namespace d3d11test
