// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorbasememory.h>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/**
 * GST_CAPS_FEATURE_MEMORY_TENSOR_D3D11:
 *
 * The caps feature of video whose buffers hold #GstTensorMemD3D11Memory:
 * Direct3D 11 textures of the process device, CPU-mappable (through their
 * staging texture) only between gst_memory_map() and gst_memory_unmap().
 *
 * Since: 0.1
 */
#define GST_CAPS_FEATURE_MEMORY_TENSOR_D3D11 "memory:TensorD3D11"

/**
 * GST_TENSOR_MEM_D3D11_MEMORY_TYPE_NAME:
 *
 * The memory type of #GstTensorMemD3D11Memory (gst_memory_is_type()).
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_D3D11_MEMORY_TYPE_NAME "TensorD3D11Memory"

typedef struct _GstTensorMemD3D11Memory GstTensorMemD3D11Memory;

/**
 * GstTensorMemD3D11Memory:
 * @base: the #GstTensorMemBaseMemory it is
 *
 * A tensor memory whose bytes are one Direct3D 11 texture (a tensormem
 * D3D11 texture storage) as its CPU backing lays them out: texture rows at
 * the backing pitch, so the memory is pitch × texture rows bytes. Every CPU
 * map goes through the storage's map state; a map refreshes the staging
 * texture from the texture and an unmap after a write publishes it back.
 *
 * Since: 0.1
 */
struct _GstTensorMemD3D11Memory {
  GstTensorMemBaseMemory base;
};

#define GST_TYPE_TENSOR_MEM_D3D11_ALLOCATOR (gst_tensor_mem_d3d11_allocator_get_type())
#define GST_TENSOR_MEM_D3D11_ALLOCATOR(obj)                                                                                \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_D3D11_ALLOCATOR, GstTensorMemD3D11Allocator))
#define GST_IS_TENSOR_MEM_D3D11_ALLOCATOR(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_D3D11_ALLOCATOR))
#define GST_TENSOR_MEM_D3D11_ALLOCATOR_CAST(obj) ((GstTensorMemD3D11Allocator *)(obj))

typedef struct _GstTensorMemD3D11Allocator GstTensorMemD3D11Allocator;
typedef struct _GstTensorMemD3D11AllocatorClass GstTensorMemD3D11AllocatorClass;

/**
 * GstTensorMemD3D11Allocator:
 *
 * Allocates #GstTensorMemD3D11Memory on one #GstTensorMemD3D11Device: each
 * allocation is a new shared texture with a staging texture (CPU read and
 * write), described by a #GstVideoInfo
 * (gst_tensor_mem_d3d11_allocator_alloc_video()). A plain gst_allocator_alloc()
 * has no image to make a texture of: it is refused with a warning. One
 * allocator per device; not registered by name.
 *
 * Since: 0.1
 */
struct _GstTensorMemD3D11Allocator {
  GstTensorMemBaseAllocator parent;

  /*< private >*/
  GstTensorMemD3D11Device *device;
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemD3D11AllocatorClass {
  GstTensorMemBaseAllocatorClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_d3d11_allocator_get_type(void);

GST_TENSOR_MEM_API
GstAllocator *gst_tensor_mem_d3d11_allocator_new(GstTensorMemD3D11Device *device);

GST_TENSOR_MEM_API
GstMemory *gst_tensor_mem_d3d11_allocator_alloc_video(GstAllocator *allocator, const GstVideoInfo *info);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_d3d11_has_texture_layout(const GstVideoInfo *info);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_d3d11_memory_get_plane_layout(GstMemory *mem, const GstVideoInfo *info,
                                                  gsize offset[GST_VIDEO_MAX_PLANES],
                                                  gint stride[GST_VIDEO_MAX_PLANES]);

GST_TENSOR_MEM_API
gboolean gst_is_tensor_mem_d3d11_memory(GstMemory *mem);

GST_TENSOR_MEM_API
gboolean gst_buffer_fence_tensor_mem_d3d11_writes(GstBuffer *buffer, GError **error);

GST_TENSOR_MEM_API
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_memory_get_device(GstMemory *mem);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemD3D11Allocator, gst_object_unref)

G_END_DECLS

