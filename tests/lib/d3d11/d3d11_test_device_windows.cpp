// SPDX-License-Identifier: Apache-2.0
// The suites' device on Windows: the real COM device, hardware falling back
// to WARP. Nothing of a wish can be chosen here: pitches, timing and
// capabilities are the driver's.
#include "d3d11_test_device.hpp"

namespace d3d11test {

std::shared_ptr<tensormem::D3d11Device> make_device(const DeviceWish &, std::string *why) {
  auto device = tensormem::create_windows_d3d11_device(tensormem::D3d11DriverType::Hardware);
  if (!device) {
    *why = device.error().message();
    return nullptr;
  }
  return *device;
}

} // namespace d3d11test
