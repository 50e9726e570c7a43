// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensord3d11device.h: the D3D11 device object over a libtensormem D3D11 context.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensord3d11device.h>

#include <memory>

namespace tensormem {
class D3d11Context;
class D3d11FenceTimeline;
} // namespace tensormem

GST_TENSOR_MEM_API
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_device_new_wrapped(std::shared_ptr<tensormem::D3d11Context> context);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11Context> gst_tensor_mem_d3d11_device_get_d3d11_context(GstTensorMemD3D11Device *device);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11FenceTimeline>
gst_tensor_mem_d3d11_device_get_fence_timeline(GstTensorMemD3D11Device *device);
