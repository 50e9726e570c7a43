// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME:
 *
 * The name of the system tensor allocator and of the memory type it makes.
 *
 * Since: 0.1
 */
#define GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME "TensorSystemMemory"

typedef struct _GstTensorMemory GstTensorMemory;
typedef struct _GstTensorMemoryPrivate GstTensorMemoryPrivate;

/**
 * GstTensorMemory:
 * @mem: the parent #GstMemory
 *
 * A #GstMemory whose bytes belong to a tensormem storage. Every CPU map goes
 * through the storage's map-state machine, so GStreamer and non-GStreamer
 * users of one storage obey the same reader/writer rules.
 *
 * Since: 0.1
 */
struct _GstTensorMemory {
  GstMemory mem;

  /*< private >*/
  GstTensorMemoryPrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

#define GST_TYPE_TENSOR_SYSTEM_ALLOCATOR (gst_tensor_system_allocator_get_type())
#define GST_TENSOR_SYSTEM_ALLOCATOR(obj)                                                                               \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_SYSTEM_ALLOCATOR, GstTensorMemSystemAllocator))
#define GST_IS_TENSOR_SYSTEM_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_SYSTEM_ALLOCATOR))
#define GST_TENSOR_SYSTEM_ALLOCATOR_CAST(obj) ((GstTensorMemSystemAllocator *)(obj))

typedef struct _GstTensorMemSystemAllocator GstTensorMemSystemAllocator;
typedef struct _GstTensorMemSystemAllocatorClass GstTensorMemSystemAllocatorClass;

/**
 * GstTensorMemSystemAllocator:
 *
 * Allocates #GstTensorMemory in 64-byte aligned heap storage.
 *
 * Since: 0.1
 */
struct _GstTensorMemSystemAllocator {
  GstAllocator parent;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemSystemAllocatorClass {
  GstAllocatorClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSORMEM_API
GType gst_tensor_system_allocator_get_type(void);

GST_TENSORMEM_API
GstAllocator *gst_tensor_system_allocator_get(void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemSystemAllocator, gst_object_unref)

G_END_DECLS
