// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensormem.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/gstvideopool.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_BUFFER_POOL (gst_tensor_buffer_pool_get_type())
#define GST_TENSOR_BUFFER_POOL(obj)                                                                                  \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_BUFFER_POOL, GstTensorBufferPool))
#define GST_IS_TENSOR_BUFFER_POOL(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_BUFFER_POOL))
#define GST_TENSOR_BUFFER_POOL_CAST(obj) ((GstTensorBufferPool *)(obj))

/**
 * GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN:
 *
 * Every plane stride of a #GstTensorBufferPool buffer is a multiple of this
 * many bytes.
 *
 * Since: 0.1
 */
#define GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN 64

typedef struct _GstTensorBufferPool GstTensorBufferPool;
typedef struct _GstTensorBufferPoolClass GstTensorBufferPoolClass;

/**
 * GstTensorBufferPool:
 *
 * A video buffer pool whose buffers are tensor memory (system, DMA-BUF or
 * OpenGL PBO) carrying a #GstVideoMeta with 64-byte aligned plane strides.
 *
 * Since: 0.1
 */
struct _GstTensorBufferPool {
  GstVideoBufferPool parent;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorBufferPoolClass {
  GstVideoBufferPoolClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSORMEM_API
GType gst_tensor_buffer_pool_get_type(void);

GST_TENSORMEM_API
GstBufferPool *gst_tensor_buffer_pool_new(void);

GST_TENSORMEM_API
GstBufferPool *gst_tensor_buffer_pool_new_for_storage(GstTensorStorage storage);

GST_TENSORMEM_API
GstBufferPool *gst_tensor_buffer_pool_new_for_pbo(GstAllocator *allocator);

GST_TENSORMEM_API
GstTensorStorage gst_tensor_buffer_pool_get_storage(GstBufferPool *pool);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorBufferPool, gst_object_unref)

G_END_DECLS
