// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorcudameta.h: CUDA access of a buffer and of a memory (CUDA handles).
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorcudameta.h>

#include <tensormem/cuda_handle.hpp>
#include <tensormem/result.hpp>

#include <memory>

/**
 * gst_buffer_add_tensor_mem_cuda_meta: (skip)
 *
 * C++ only. Attaches CUDA access to @buffer: @handle covers the whole storage, the
 * meta's device pointer starts @offset bytes into it and covers @size bytes.
 * NULL for an empty handle, a detached handle or a range outside it. */
GST_TENSOR_MEM_API
GstTensorMemCudaMeta *gst_buffer_add_tensor_mem_cuda_meta(GstBuffer *buffer, std::shared_ptr<tensormem::CudaHandle> handle,
                                                      gsize offset, gsize size);

/**
 * gst_tensor_mem_cuda_meta_get_handle: (skip)
 *
 * C++ only. The CUDA handle the meta maps.
 */
GST_TENSOR_MEM_API
std::shared_ptr<tensormem::CudaHandle> gst_tensor_mem_cuda_meta_get_handle(GstTensorMemCudaMeta *meta);

/**
 * gst_tensor_mem_memory_import_cuda: (skip)
 *
 * C++ only. The CUDA handle for tensor @mem (PBO or DMA-BUF memory), cached on the
 * memory's root (qdata) so later calls return the same handle. *@imported is
 * set to TRUE when this call made the import. PBO registration runs on the
 * memory's GL worker. Errors: NotImplemented (no CUDA, or memory of another
 * kind), or the runtime's error. */
GST_TENSOR_MEM_API
tensormem::Result<std::shared_ptr<tensormem::CudaHandle>> gst_tensor_mem_memory_import_cuda(GstMemory *mem,
                                                                                        gboolean *imported);

/**
 * gst_tensor_mem_memory_peek_cuda: (skip)
 *
 * C++ only. The cached handle of @mem, or empty.
 */
GST_TENSOR_MEM_API
std::shared_ptr<tensormem::CudaHandle> gst_tensor_mem_memory_peek_cuda(GstMemory *mem);
