// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: what a storage family's own pool subclass
 * (gsttensord3d11.cpp's) takes from GstTensorMemBufferPool, the shared base
 * that keeps fence and reader recycling, the pool-buffer links and the
 * counters for every family. Not installed. */
#pragma once

#include <gst/gst.h>
#include <gst/tensormem/gsttensorstorage.h>

namespace gst_tensormem {

/* Right after g_object_new() of a subclass: the storage of its buffers. */
void pool_set_storage(GstBufferPool *pool, GstTensorMemStorage storage);

/* The config's allocator when it is of `type` (kept in `slot` for later
 * configs), else the one in `slot`; FALSE after a warning when neither is
 * there. The config then names it, with `params`. */
bool pool_force_device_allocator(GstBufferPool *pool, GstStructure *config, GstAllocator *allocator,
                                 GstAllocationParams *params, GType type, GstAllocator **slot, const char *what);

/* The config's fence-meta option and fence timeout, kept in the base. */
void pool_read_fence_config(GstBufferPool *pool, GstStructure *config);

/* GstBufferPool's set_config, past GstVideoBufferPool's (whose alignment
 * would replace a layout the memory decides). */
gboolean pool_set_config_unaligned(GstBufferPool *pool, GstStructure *config);

/* What every new buffer of the base gets (counters, the links that let a
 * copy be a share, the pooled fence meta); the subclass's alloc_buffer
 * returns this after it made `*buffer`. */
GstFlowReturn pool_adopt_buffer(GstBufferPool *pool, GstBuffer **buffer);

/* Right after construction, for a family with a device (PBO): the
 * allocator of that device that configs without one get (a new reference
 * is taken). */
void pool_set_device_allocator(GstBufferPool *pool, GstAllocator *allocator);

/* The D3D11 family's pool (gsttensord3d11.cpp). */
GstBufferPool *d3d11_buffer_pool_new(GstAllocator *allocator);

} // namespace gst_tensormem

/* Its type (G_DEFINE_TYPE in gsttensord3d11.cpp; not installed). */
GType gst_tensor_mem_d3d11_buffer_pool_get_type(void);
