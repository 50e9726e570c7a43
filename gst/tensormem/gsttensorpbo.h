// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorbasememory.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_CAPS_FEATURE_MEMORY_TENSOR_PBO:
 *
 * The caps feature of video whose buffers hold #GstTensorMemPboMemory: OpenGL
 * pixel buffer objects of a headless GL worker, CPU-mappable only between
 * gst_memory_map() and gst_memory_unmap().
 *
 * Since: 0.1
 */
#define GST_CAPS_FEATURE_MEMORY_TENSOR_PBO "memory:TensorPBO"

/**
 * GST_TENSOR_MEM_PBO_MEMORY_TYPE_NAME:
 *
 * The memory type of #GstTensorMemPboMemory (gst_memory_is_type()).
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_PBO_MEMORY_TYPE_NAME "TensorPboMemory"

typedef struct _GstTensorMemPboMemory GstTensorMemPboMemory;

/**
 * GstTensorMemPboMemory:
 * @base: the #GstTensorMemBaseMemory it is
 *
 * A tensor memory whose bytes are one OpenGL pixel buffer object (a
 * tensormem PBO storage). Every CPU map goes through the storage's map
 * state: readers share one glMapBufferRange, a writer is exclusive, and the
 * buffer is unmapped from GL when the last map ends. The GL buffer is
 * deleted when the last reference to the storage goes.
 *
 * Since: 0.1
 */
struct _GstTensorMemPboMemory {
  GstTensorMemBaseMemory base;
};

#define GST_TYPE_TENSOR_MEM_PBO_ALLOCATOR (gst_tensor_mem_pbo_allocator_get_type())
#define GST_TENSOR_MEM_PBO_ALLOCATOR(obj)                                                                                  \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_PBO_ALLOCATOR, GstTensorMemPboAllocator))
#define GST_IS_TENSOR_MEM_PBO_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_PBO_ALLOCATOR))
#define GST_TENSOR_MEM_PBO_ALLOCATOR_CAST(obj) ((GstTensorMemPboAllocator *)(obj))

typedef struct _GstTensorMemPboAllocator GstTensorMemPboAllocator;
typedef struct _GstTensorMemPboAllocatorClass GstTensorMemPboAllocatorClass;

/**
 * GstTensorMemPboAllocator:
 *
 * Allocates #GstTensorMemPboMemory: each allocation is a new GL buffer
 * (glBufferData) of the allocator's GL worker, which it keeps running for
 * as long as the allocator or any of its memories lives. There is one
 * allocator per worker; it is not registered by name.
 *
 * Since: 0.1
 */
struct _GstTensorMemPboAllocator {
  GstTensorMemBaseAllocator parent;

  /*< private >*/
  GstTensorMemGlWorker *worker;
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemPboAllocatorClass {
  GstTensorMemBaseAllocatorClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_pbo_allocator_get_type(void);

GST_TENSOR_MEM_API
GstAllocator *gst_tensor_mem_pbo_allocator_new(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
gboolean gst_is_tensor_mem_pbo_memory(GstMemory *mem);

GST_TENSOR_MEM_API
guint gst_tensor_mem_pbo_memory_get_buffer_id(GstMemory *mem);

GST_TENSOR_MEM_API
GstTensorMemGlWorker *gst_tensor_mem_pbo_memory_get_gl_worker(GstMemory *mem);

GST_TENSOR_MEM_API
gboolean gst_buffer_tensor_mem_pbo_cpu_writes_need_fence(GstBuffer *buffer);

GST_TENSOR_MEM_API
void gst_tensor_mem_get_gl_stats(guint64 *pbos, guint64 *fences);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemPboAllocator, gst_object_unref)

G_END_DECLS

