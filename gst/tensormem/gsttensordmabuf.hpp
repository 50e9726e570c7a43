// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensordmabuf.h: DMA-BUF tensor memory over a libtensormem DMA-BUF storage.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensordmabuf.h>

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/result.hpp>

#include <memory>

GST_TENSOR_MEM_API
GstMemory *gst_tensor_mem_dmabuf_allocator_import(GstAllocator *allocator,
                                              std::shared_ptr<tensormem::DmaBufStorage> storage);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::DmaBufStorage> gst_tensor_mem_dmabuf_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
tensormem::Result<std::shared_ptr<tensormem::DmaBufStorage>> gst_tensor_mem_dmabuf_memory_import_storage(GstMemory *mem);
