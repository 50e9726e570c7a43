// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: DMA-BUF tensor memory on per-buffer paths.
 * Not installed. */
#pragma once

#include <gst/gst.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <tensormem/tensor.hpp>

namespace gst_tensormem {

/* The tensor behind `mem` when this library's DMA-BUF allocator made it
 * (that exact type), found without the allocator interface lookup that
 * gst_tensor_mem_memory_get_tensor() makes; nullptr for every other memory,
 * including a GstFdMemory of any other allocator. */
const tensormem::Tensor *own_dmabuf_tensor(GstMemory *mem) noexcept;

} // namespace gst_tensormem
