// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

typedef struct _GstTensorMemBaseMemory GstTensorMemBaseMemory;
typedef struct _GstTensorMemBaseMemoryPrivate GstTensorMemBaseMemoryPrivate;

/**
 * GstTensorMemBaseMemory:
 * @mem: the parent #GstMemory
 *
 * The part every #GstTensorMemBaseAllocator memory starts with: a
 * #GstMemory and, privately, the tensor over the whole allocation (and so a
 * reference to its storage) with the map state of this #GstMemory. Every CPU
 * map goes through the storage's map-state machine, so GStreamer and
 * non-GStreamer users of one storage obey the same reader/writer rules.
 * Dropping the memory drops its reference to the storage.
 *
 * Since: 0.1
 */
struct _GstTensorMemBaseMemory {
  GstMemory mem;

  /*< private >*/
  GstTensorMemBaseMemoryPrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

#define GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR (gst_tensor_mem_base_allocator_get_type())
#define GST_TENSOR_MEM_BASE_ALLOCATOR(obj)                                                                             \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, GstTensorMemBaseAllocator))
#define GST_IS_TENSOR_MEM_BASE_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR))
#define GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass)                                                                     \
  (G_TYPE_CHECK_CLASS_CAST((klass), GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, GstTensorMemBaseAllocatorClass))
#define GST_TENSOR_MEM_BASE_ALLOCATOR_GET_CLASS(obj)                                                                   \
  (G_TYPE_INSTANCE_GET_CLASS((obj), GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, GstTensorMemBaseAllocatorClass))
#define GST_TENSOR_MEM_BASE_ALLOCATOR_CAST(obj) ((GstTensorMemBaseAllocator *)(obj))

typedef struct _GstTensorMemBaseAllocator GstTensorMemBaseAllocator;
typedef struct _GstTensorMemBaseAllocatorClass GstTensorMemBaseAllocatorClass;

/**
 * GstTensorMemBaseAllocator:
 *
 * The abstract allocator of every tensor memory that is a plain
 * #GstAllocator (system and OpenGL PBO memory). It implements
 * #GstTensorMemAllocatorInterface and fills GstAllocator's memory functions
 * (map, unmap, share, copy, is-span) once; a subclass only says how its
 * storage is made (#GstTensorMemBaseAllocatorClass.create) and overrides
 * the other vfuncs where its storage differs. The DMA-BUF allocator cannot
 * derive from it (it must stay a #GstDmaBufAllocator) and joins through the
 * interface alone.
 *
 * Since: 0.1
 */
struct _GstTensorMemBaseAllocator {
  GstAllocator parent;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

/**
 * GstTensorMemBaseAllocatorClass:
 * @parent_class: the parent class
 * @storage: the storage kind of every memory of this class; decides the
 *   largest alignment an allocation may ask for. Set in class_init.
 * @create: makes the storage of a new memory in CPU memory the subclass
 *   owns: returns the address of at least @bytes bytes (at least one),
 *   aligned as the mask @params->align asks, and sets *@free_func (may stay
 *   %NULL) and *@free_data to what releases them. The base calls
 *   @free_func (@free_data) exactly once: when the last memory over the
 *   storage is freed, or at once when it refuses the storage (a misaligned
 *   address). @params are the checked allocation params; the base zeroes
 *   the prefix and padding they ask for. %NULL after a warning, with nothing
 *   to release. Abstract; implementable in C. The library's own allocators
 *   make their storages another way and leave it %NULL; a subclass of theirs
 *   that fills it in replaces their storage.
 * @map: the CPU map of @mem (GstAllocator's mem_map_full): the base address
 *   of the whole allocation or %NULL. The default maps through the storage's
 *   map state.
 * @unmap: ends a map made by @map. The default releases what the default
 *   @map took.
 * @copy: a new memory holding a copy of @size bytes at @offset
 *   (GstAllocator's mem_copy). The default allocates from @mem's allocator
 *   and copies through CPU maps.
 * @share: a read-only memory over the same storage (GstAllocator's
 *   mem_share). The default makes a #GstTensorMemBaseMemory of the same
 *   allocator whose parent is @mem's root.
 *
 * Since: 0.1
 */
struct _GstTensorMemBaseAllocatorClass {
  GstAllocatorClass parent_class;

  GstTensorMemStorage storage;
  gpointer (*create)(GstTensorMemBaseAllocator *allocator, gsize bytes, const GstAllocationParams *params,
                     GDestroyNotify *free_func, gpointer *free_data);
  gpointer (*map)(GstTensorMemBaseMemory *mem, GstMapInfo *info, gsize maxsize);
  void (*unmap)(GstTensorMemBaseMemory *mem, GstMapInfo *info);
  GstMemory *(*copy)(GstTensorMemBaseMemory *mem, gssize offset, gssize size);
  GstMemory *(*share)(GstTensorMemBaseMemory *mem, gssize offset, gssize size);

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_base_allocator_get_type(void);

GST_TENSOR_MEM_API
gboolean gst_is_tensor_mem_base_memory(GstMemory *mem);

GST_TENSOR_MEM_API
GstMemory *gst_tensor_mem_base_memory_new_window(GstMemory *mem, gsize offset, gsize size);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemBaseAllocator, gst_object_unref)

G_END_DECLS
