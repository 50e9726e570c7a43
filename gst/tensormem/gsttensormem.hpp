// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ entry points of libgsttensormem: the calls that take or return
 * libtensormem objects (storages, timelines, CUDA handles, tensors). The C
 * headers next to this one are plain C and carry none of them; a C++ element
 * that hands libtensormem objects to a GstBuffer includes this header.
 * Not introspected: bindings use the C API. */

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensorreadcompletion.h>

#include <tensormem/cuda_handle.hpp>
#include <tensormem/d3d11_storage.hpp>
#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/pixel_format.hpp>
#include <tensormem/result.hpp>
#include <tensormem/tensor.hpp>
#include <tensormem/timeline.hpp>

#include <memory>

namespace tensormem {
class D3d11Context;
class D3d11FenceTimeline;
class GlWorker;
} // namespace tensormem

/* gsttensorcudameta.h */
/**
 * gst_buffer_add_tensor_cuda_meta: (skip)
 *
 * C++ only. Attaches CUDA access to @buffer: @handle covers the whole storage, the
 * meta's device pointer starts @offset bytes into it and covers @size bytes.
 * NULL for an empty handle, a detached handle or a range outside it. */
GST_TENSOR_MEM_API
GstTensorMemCudaMeta *gst_buffer_add_tensor_cuda_meta(GstBuffer *buffer, std::shared_ptr<tensormem::CudaHandle> handle,
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

/* gsttensord3d11device.h */
GST_TENSOR_MEM_API
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_device_new_wrapped(std::shared_ptr<tensormem::D3d11Context> context);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11Context> gst_tensor_mem_d3d11_device_get_d3d11_context(GstTensorMemD3D11Device *device);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11FenceTimeline>
gst_tensor_mem_d3d11_device_get_fence_timeline(GstTensorMemD3D11Device *device);

/* gsttensord3d11.h */
GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_d3d11_memory_get_tensor(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11TextureStorage> gst_tensor_mem_d3d11_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::D3d11Texture> gst_tensor_mem_d3d11_memory_get_texture(GstMemory *mem);

/* gsttensordmabuf.h */
GST_TENSOR_MEM_API
GstMemory *gst_tensor_mem_dmabuf_allocator_import(GstAllocator *allocator,
                                              std::shared_ptr<tensormem::DmaBufStorage> storage);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::DmaBufStorage> gst_tensor_mem_dmabuf_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
tensormem::Result<std::shared_ptr<tensormem::DmaBufStorage>> gst_tensor_mem_dmabuf_memory_import_storage(GstMemory *mem);

/* gsttensorfencemeta.h */
/**
 * gst_buffer_add_tensor_mem_fence_meta: (skip)
 *
 * C++ only (a std::shared_ptr<tensormem::Timeline>). Records on @buffer that its memory is written until @timeline
 * reaches
 * @value: the buffer's fence meta for @timeline (or an empty one) is updated
 * to the newer value, else a new meta is added. @sync_file_fd (SyncFile
 * timelines only, -1 otherwise) is duplicated, never taken. NULL, with
 * @error set, for a value the timeline never issued or an fd that
 * cannot be duplicated. Value 0 records nothing and returns NULL without an
 * error. */
GST_TENSOR_MEM_API
GstTensorMemFenceMeta *gst_buffer_add_tensor_mem_fence_meta(GstBuffer *buffer,
                                                            std::shared_ptr<tensormem::Timeline> timeline,
                                                            guint64 value, gint sync_file_fd, GError **error);

/**
 * gst_buffer_add_tensor_mem_fences_from_memory: (skip)
 *
 * Declared for C++ only. Every GPU write recorded on the storages of @buffer's tensor memories
 * (tensormem::Storage::gpu_completion()), as fence metas; FALSE with @error
 * set when one could not be added. */
GST_TENSOR_MEM_API
gboolean gst_buffer_add_tensor_mem_fences_from_memory(GstBuffer *buffer, GError **error);

/**
 * gst_tensor_mem_fence_meta_get_timeline: (skip)
 *
 * C++ only. The timeline the meta refers to; null for an empty meta.
 */
GST_TENSOR_MEM_API
std::shared_ptr<tensormem::Timeline> gst_tensor_mem_fence_meta_get_timeline(GstTensorMemFenceMeta *meta);

/* gsttensorformat.h */
GST_TENSOR_MEM_API
gboolean gst_tensor_mem_pixel_format_from_video_format(GstVideoFormat format, tensormem::PixelFormat *out);

GST_TENSOR_MEM_API
GstVideoFormat gst_tensor_mem_pixel_format_to_video_format(tensormem::PixelFormat format);

/* gsttensormemallocator.h */
GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_memory_get_tensor(GstMemory *mem);

/* gsttensorreadcompletion.h */
/**
 * gst_buffer_add_tensor_mem_read_completion: (skip)
 *
 * C++ only (a std::shared_ptr<tensormem::Timeline>). Records on the storage
 * of every tensor memory of @buffer that a reader
 * reads it until @timeline reaches @value (a GPU stream's completion, an
 * inference step's): a CPU map that writes the memory, and the pool before
 * it hands the buffer to a producer again, wait for it. The buffer need not
 * be writable (the record is on the memory, which copies share). FALSE with
 * @error set for a value the timeline never issued or a buffer
 * without tensor memory. */
GST_TENSOR_MEM_API
gboolean gst_buffer_add_tensor_mem_read_completion(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline,
                                                   guint64 value, GError **error);

#if GST_TENSOR_MEM_HAVE_GL
#include <tensormem/pbo_storage.hpp>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensorpbo.h>

/* gsttensorglcontext.h */
GST_TENSOR_MEM_API
GstTensorMemGlWorker *gst_tensor_mem_gl_worker_new_wrapped(std::shared_ptr<tensormem::GlWorker> worker);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_gl_worker_get_core_gl_worker(GstTensorMemGlWorker *worker);

/* gsttensorpbo.h */
GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_pbo_memory_get_tensor(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::PboStorage> gst_tensor_mem_pbo_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_pbo_memory_get_core_gl_worker(GstMemory *mem);

#endif /* GST_TENSOR_MEM_HAVE_GL */
