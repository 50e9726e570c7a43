// SPDX-License-Identifier: Apache-2.0
#include "d3d11_test_device.hpp"

namespace d3d11test {

/// \brief The reference device with its default (256-byte) pitch alignment.
std::shared_ptr<tensormem::D3d11Device> make_device(std::string *why) {
  auto device = tensormem::create_software_d3d11_device();
  if (!device) {
    *why = device.error().message();
    return nullptr;
  }
  return *device;
}

} // namespace d3d11test
