// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h> // not gstvideopool.h alone: on 1.28 it needs video.h first

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_MEM_BUFFER_POOL (gst_tensor_mem_buffer_pool_get_type())
#define GST_TENSOR_MEM_BUFFER_POOL(obj)                                                                                    \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_BUFFER_POOL, GstTensorMemBufferPool))
#define GST_IS_TENSOR_MEM_BUFFER_POOL(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_BUFFER_POOL))
#define GST_TENSOR_MEM_BUFFER_POOL_CAST(obj) ((GstTensorMemBufferPool *)(obj))

/**
 * GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN:
 *
 * Every plane stride of a #GstTensorMemBufferPool buffer is a multiple of this
 * many bytes.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN 64

typedef struct _GstTensorMemBufferPool GstTensorMemBufferPool;
typedef struct _GstTensorMemBufferPoolClass GstTensorMemBufferPoolClass;

/**
 * GstTensorMemBufferPool:
 *
 * A video buffer pool whose buffers are tensor memory (system, DMA-BUF or
 * OpenGL PBO) carrying a #GstVideoMeta with 64-byte aligned plane strides.
 *
 * A buffer that comes back with a #GstTensorMemFenceMeta that has not
 * signalled is handed out again only once it has: acquire waits, bounded by
 * gst_tensor_mem_buffer_pool_config_set_fence_timeout() (5 s by default), and a
 * buffer whose fence never signals leaves the pool (the acquire fails). The
 * read-only properties `fence-waits` and `fence-timeouts` count both.
 * %GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META gives every buffer a pooled
 * fence meta producers fill in.
 *
 * Since: 0.1
 */
struct _GstTensorMemBufferPool {
  GstVideoBufferPool parent;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemBufferPoolClass {
  GstVideoBufferPoolClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_buffer_pool_get_type(void);

GST_TENSOR_MEM_API
GstBufferPool *gst_tensor_mem_buffer_pool_new(void);

GST_TENSOR_MEM_API
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_storage(GstTensorMemStorage storage);

GST_TENSOR_MEM_API
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_pbo(GstAllocator *allocator);

GST_TENSOR_MEM_API
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_d3d11(GstAllocator *allocator);

GST_TENSOR_MEM_API
GstTensorMemStorage gst_tensor_mem_buffer_pool_get_storage(GstBufferPool *pool);

GST_TENSOR_MEM_API
void gst_tensor_mem_buffer_pool_config_set_fence_timeout(GstStructure *config, GstClockTime timeout);

GST_TENSOR_MEM_API
void gst_tensor_mem_buffer_pool_get_live_stats(guint64 *pools, guint64 *buffers);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemBufferPool, gst_object_unref)

G_END_DECLS
