// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_MEM_DMABUF_ALLOCATOR_NAME:
 *
 * The name the DMA-BUF tensor allocator is registered under
 * (gst_allocator_find()). Its memories keep the memory type
 * %GST_ALLOCATOR_DMABUF, so gst_memory_is_type(mem, "dmabuf") holds for
 * them as for any other DMA-BUF memory.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_DMABUF_ALLOCATOR_NAME "TensorDmaBufMemory"

#define GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR (gst_tensor_mem_dmabuf_allocator_get_type())
#define GST_TENSOR_MEM_DMABUF_ALLOCATOR(obj)                                                                               \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR, GstTensorMemDmaBufAllocator))
#define GST_IS_TENSOR_MEM_DMABUF_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR))
#define GST_TENSOR_MEM_DMABUF_ALLOCATOR_CAST(obj) ((GstTensorMemDmaBufAllocator *)(obj))

typedef struct _GstTensorMemDmaBufAllocator GstTensorMemDmaBufAllocator;
typedef struct _GstTensorMemDmaBufAllocatorClass GstTensorMemDmaBufAllocatorClass;

/**
 * GstTensorMemDmaBufAllocator:
 *
 * A #GstDmaBufAllocator whose memories are tensormem DMA-BUF storages:
 * gst_is_dmabuf_memory() and gst_dmabuf_memory_get_fd() work on them, and
 * every CPU map goes through the storage's map state (readers share one
 * mmap, a writer is exclusive, DMA_BUF_IOCTL_SYNC brackets each backend map
 * in the direction of the access).
 *
 * Since: 0.1
 */
struct _GstTensorMemDmaBufAllocator {
  GstDmaBufAllocator parent;

  /*< private >*/
  GstMemoryShareFunction fd_share; // GstFdAllocator's share, wrapped by ours
  gpointer _gst_reserved[GST_PADDING - 1];
};

struct _GstTensorMemDmaBufAllocatorClass {
  GstDmaBufAllocatorClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_dmabuf_allocator_get_type(void);

GST_TENSOR_MEM_API
GstAllocator *gst_tensor_mem_dmabuf_allocator_get(void);

GST_TENSOR_MEM_API
gboolean gst_is_tensor_mem_dmabuf_memory(GstMemory *mem);

GST_TENSOR_MEM_API
GstMemory *gst_tensor_mem_dmabuf_memory_import_fd(gint fd, gsize size);

GST_TENSOR_MEM_API
void gst_tensor_mem_dmabuf_forget_foreign_imports(void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemDmaBufAllocator, gst_object_unref)

G_END_DECLS

