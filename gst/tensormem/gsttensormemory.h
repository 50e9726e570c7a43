// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorbasememory.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME:
 *
 * The name of the system tensor allocator and of the memory type it makes.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME "TensorSystemMemory"

typedef struct _GstTensorMemSystemMemory GstTensorMemSystemMemory;

/**
 * GstTensorMemSystemMemory:
 * @base: the #GstTensorMemBaseMemory it is
 *
 * A tensor memory whose bytes are a 64-byte aligned heap storage. It adds
 * nothing to #GstTensorMemBaseMemory: the storage holds all its state.
 *
 * Since: 0.1
 */
struct _GstTensorMemSystemMemory {
  GstTensorMemBaseMemory base;
};

#define GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR (gst_tensor_mem_system_allocator_get_type())
#define GST_TENSOR_MEM_SYSTEM_ALLOCATOR(obj)                                                                               \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR, GstTensorMemSystemAllocator))
#define GST_IS_TENSOR_MEM_SYSTEM_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR))
#define GST_TENSOR_MEM_SYSTEM_ALLOCATOR_CAST(obj) ((GstTensorMemSystemAllocator *)(obj))

typedef struct _GstTensorMemSystemAllocator GstTensorMemSystemAllocator;
typedef struct _GstTensorMemSystemAllocatorClass GstTensorMemSystemAllocatorClass;

/**
 * GstTensorMemSystemAllocator:
 *
 * Allocates #GstTensorMemSystemMemory in 64-byte aligned heap storage.
 *
 * Since: 0.1
 */
struct _GstTensorMemSystemAllocator {
  GstTensorMemBaseAllocator parent;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemSystemAllocatorClass {
  GstTensorMemBaseAllocatorClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_system_allocator_get_type(void);

GST_TENSOR_MEM_API
GstAllocator *gst_tensor_mem_system_allocator_get(void);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_memory_get_last_map_failure(void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemSystemAllocator, gst_object_unref)

G_END_DECLS
