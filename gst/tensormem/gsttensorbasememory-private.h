// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: the C++ route by which the library's own
 * GstTensorMemBaseAllocator subclasses make their storages, and making a
 * GstTensorMemBaseMemory over a tensor a subclass already has, for
 * allocators whose storages are not made from a byte count (D3D11 textures
 * need an image description). Not installed. */
#pragma once

#include <gst/gst.h>

#include <tensormem/tensor.hpp>

#include <optional>

// Declared, not included: gsttensorbasememory.cpp includes this header.
typedef struct _GstTensorMemBaseAllocator GstTensorMemBaseAllocator;
typedef struct _GstTensorMemBaseAllocatorClass GstTensorMemBaseAllocatorClass;

namespace gst_tensormem {

/* A new storage of `bytes` bytes (at least one) with a 1-D u8 tensor over all
 * of it; `params` as for the public create. Nothing after a warning. */
using CreateTensorFunc = std::optional<tensormem::Tensor> (*)(GstTensorMemBaseAllocator *allocator, gsize bytes,
                                                              const GstAllocationParams *params) noexcept;

/* Sets the C++ route of `klass` (and, by GLib's copy of class data, of its
 * subclasses), in its class_init. The base takes it while the class's public
 * create is NULL, so a subclass that fills in create still wins. */
void base_allocator_class_set_create_tensor(GstTensorMemBaseAllocatorClass *klass, CreateTensorFunc create) noexcept;

/* A new root memory of `allocator` (a GstTensorMemBaseAllocator) over all of
 * `tensor`, aligned to `align_mask`; NULL after a warning. */
GstMemory *base_memory_new_over(GstAllocator *allocator, const tensormem::Tensor &tensor, gsize align_mask) noexcept;

} // namespace gst_tensormem
