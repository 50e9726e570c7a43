// SPDX-License-Identifier: Apache-2.0
#include "d3d11_test_device.hpp"

#include <tensormem/internal/d3d11_software_device.hpp>

namespace d3d11test {

/// \brief The reference device as wished (256-byte pitches by default).
std::shared_ptr<tensormem::D3d11Device> make_device(const DeviceWish &wish, std::string *why) {
  tensormem::SoftwareD3d11Device::Options o;
  o.pitch_alignment = wish.pitch_alignment;
  o.still_drawing_polls = wish.still_drawing_polls;
  o.capabilities = wish.capabilities;
  auto device = tensormem::SoftwareD3d11Device::create(o);
  if (!device) {
    *why = device.error().message();
    return nullptr;
  }
  return *device;
}

} // namespace d3d11test
