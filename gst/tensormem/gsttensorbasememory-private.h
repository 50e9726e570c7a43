// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: making a GstTensorMemBaseMemory over a tensor a
 * subclass already has, for allocators whose storages are not made from a
 * byte count (D3D11 textures need an image description). Not installed. */
#pragma once

#include <gst/gst.h>

#include <tensormem/tensor.hpp>

namespace gst_tensormem {

/* A new root memory of `allocator` (a GstTensorMemBaseAllocator) over all of
 * `tensor`, aligned to `align_mask`; NULL after a warning. */
GstMemory *base_memory_new_over(GstAllocator *allocator, const tensormem::Tensor &tensor, gsize align_mask) noexcept;

} // namespace gst_tensormem
