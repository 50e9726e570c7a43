// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_MEM_ALLOCATOR (gst_tensor_mem_allocator_get_type())
#define GST_TENSOR_MEM_ALLOCATOR(obj)                                                                                  \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_ALLOCATOR, GstTensorMemAllocator))
#define GST_IS_TENSOR_MEM_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_ALLOCATOR))
#define GST_TENSOR_MEM_ALLOCATOR_GET_IFACE(obj)                                                                        \
  (G_TYPE_INSTANCE_GET_INTERFACE((obj), GST_TYPE_TENSOR_MEM_ALLOCATOR, GstTensorMemAllocatorInterface))

typedef struct _GstTensorMemAllocator GstTensorMemAllocator;
typedef struct _GstTensorMemAllocatorInterface GstTensorMemAllocatorInterface;

/**
 * GstTensorMemAllocatorInterface:
 * @parent_iface: the parent interface
 * @get_tensor: the tensor over the whole allocation behind a memory made by
 *   this allocator (a `const tensormem::Tensor *`, valid while the memory
 *   lives), or %NULL
 *
 * What every tensor allocator is, whatever its GObject parent: the system
 * and PBO allocators derive from #GstAllocator, the DMA-BUF allocator from
 * #GstDmaBufAllocator (so that gst_is_dmabuf_memory() holds for its
 * memories), and all three implement this interface. Its one question, "which
 * tensor is behind this memory", leads to the storage, its identity and its
 * map state; storage-specific questions (CUDA import, the GL worker) are
 * answered by the storage itself.
 *
 * Since: 0.1
 */
struct _GstTensorMemAllocatorInterface {
  GTypeInterface parent_iface;

  gconstpointer (*get_tensor)(GstTensorMemAllocator *allocator, GstMemory *mem);

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_allocator_get_type(void);

GST_TENSOR_MEM_API
gboolean gst_is_tensor_mem_memory(GstMemory *mem);

GST_TENSOR_MEM_API
GstTensorMemStorage gst_tensor_mem_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
void gst_tensor_mem_get_copy_stats(GstTensorMemStorage storage, guint64 *copies, guint64 *bytes);

G_END_DECLS

