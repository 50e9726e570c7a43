// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GstTensorMemCudaKind:
 * @GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY: CUDA external memory imported from
 *   a DMA-BUF fd (persistent device pointer; maps are free)
 * @GST_TENSOR_MEM_CUDA_KIND_GL_BUFFER: a GL buffer (PBO) registered with CUDA
 *   (each map/unmap is a round trip to the GL worker thread)
 * @GST_TENSOR_MEM_CUDA_KIND_D3D11_TEXTURE: a Direct3D 11 texture imported into
 *   CUDA (a linear buffer or an array copied in and out; a recorded D3D11
 *   write is waited for on the stream through the fence's semaphore)
 */
typedef enum {
  GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY = 0,
  GST_TENSOR_MEM_CUDA_KIND_GL_BUFFER = 1,
  GST_TENSOR_MEM_CUDA_KIND_D3D11_TEXTURE = 2,
} GstTensorMemCudaKind;

#define GST_TENSOR_MEM_CUDA_META_API_TYPE (gst_tensor_mem_cuda_meta_api_get_type())
#define GST_TENSOR_MEM_CUDA_META_INFO (gst_tensor_mem_cuda_meta_get_info())

typedef struct _GstTensorMemCudaMeta GstTensorMemCudaMeta;
typedef struct _GstTensorMemCudaMetaPrivate GstTensorMemCudaMetaPrivate;

/**
 * GstTensorMemCudaMeta:
 * @meta: parent #GstMeta
 * @kind: how the buffer's memory is reached from CUDA
 * @size: bytes the device pointer covers (the memory's size)
 *
 * CUDA access to the single memory of a buffer, attached by
 * `tensorcudaimport`. The meta holds the CUDA handle (cached on the memory,
 * so a pooled buffer imports once) and at most one live mapping.
 *
 * Copies: the meta's transform function never shares a mapping between two
 * buffers: gst_buffer_copy() and gst_buffer_copy_deep() DROP the meta. A copy
 * gets CUDA access again when it passes `tensorcudaimport`. Our elements
 * that make a shared buffer writable keep a meta (the same handle, no
 * mapping) on their copy, whose memories are the source's.
 */
struct _GstTensorMemCudaMeta {
  GstMeta meta;

  GstTensorMemCudaKind kind;
  gsize size;

  /*< private >*/
  GstTensorMemCudaMetaPrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_cuda_meta_api_get_type(void);

GST_TENSOR_MEM_API
const GstMetaInfo *gst_tensor_mem_cuda_meta_get_info(void);

GST_TENSOR_MEM_API
GstTensorMemCudaMeta *gst_buffer_get_tensor_mem_cuda_meta(GstBuffer *buffer);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_cuda_meta_map(GstTensorMemCudaMeta *meta, gpointer *device_ptr, gsize *size, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_cuda_meta_map_mut(GstTensorMemCudaMeta *meta, gpointer *device_ptr, gsize *size, GError **error);

GST_TENSOR_MEM_API
void gst_tensor_mem_cuda_meta_unmap(GstTensorMemCudaMeta *meta);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_cuda_meta_is_mapped(GstTensorMemCudaMeta *meta);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_cuda_kind_to_string(GstTensorMemCudaKind kind);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_cuda_meta_read(GstTensorMemCudaMeta *meta, gpointer dest, gsize dest_size, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_cuda_get_status(const gchar **api, const gchar **library, gint *n_devices, const gchar **reason);

G_END_DECLS

