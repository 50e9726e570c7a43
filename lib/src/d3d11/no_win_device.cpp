// SPDX-License-Identifier: Apache-2.0
// Off Windows there is no COM device: the factory says so, and how to get
// the reference device instead.
#include <tensormem/d3d11_device.hpp>

namespace tensormem {

/// \brief NotImplemented: the real Direct3D 11 device exists only on Windows.
Result<std::shared_ptr<D3d11Device>> create_windows_d3d11_device(D3d11DriverType) {
  return Error::not_implemented("the Direct3D 11 COM device exists only on Windows; TENSORMEM_D3D11_DEVICE=software "
                                "selects the reference software device");
}

} // namespace tensormem
