// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensord3d11.h: D3D11 texture memory: its tensor, storage and texture.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensord3d11.h>

#include <tensormem/d3d11_storage.hpp>
#include <tensormem/tensor.hpp>

#include <memory>

GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_d3d11_memory_get_tensor(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11TextureStorage> gst_tensor_mem_d3d11_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11Texture> gst_tensor_mem_d3d11_memory_get_texture(GstMemory *mem);
