// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GstTensorMemStorage:
 * @GST_TENSOR_MEM_STORAGE_AUTO: let the element pick the best storage available
 * @GST_TENSOR_MEM_STORAGE_SYSTEM: 64-byte aligned system (heap) memory
 * @GST_TENSOR_MEM_STORAGE_DMABUF: DMA-BUF (a DMA heap, or a memfd when
 *   `TENSORMEM_DMABUF_SOURCE=memfd`), shared by file descriptor
 * @GST_TENSOR_MEM_STORAGE_PBO: OpenGL pixel buffer objects of a headless GL
 *   worker shared through a #GstContext (see #GstTensorMemPboAllocator);
 *   never picked by %GST_TENSOR_MEM_STORAGE_AUTO
 * @GST_TENSOR_MEM_STORAGE_D3D11: Direct3D 11 textures of the process device
 *   shared through a #GstContext (see #GstTensorMemD3D11Device): the real
 *   device on Windows, elsewhere the software reference device only with
 *   `TENSORMEM_D3D11_DEVICE=software`; never picked by
 *   %GST_TENSOR_MEM_STORAGE_AUTO
 *
 * The backend a tensor memory lives in. Elements expose it as their
 * `storage` property.
 *
 * Since: 0.1
 */
typedef enum {
  GST_TENSOR_MEM_STORAGE_AUTO = 0,
  GST_TENSOR_MEM_STORAGE_SYSTEM = 1,
  GST_TENSOR_MEM_STORAGE_DMABUF = 2,
  GST_TENSOR_MEM_STORAGE_PBO = 3,
  GST_TENSOR_MEM_STORAGE_D3D11 = 4,
} GstTensorMemStorage;

#define GST_TYPE_TENSOR_MEM_STORAGE (gst_tensor_mem_storage_get_type())

GST_TENSOR_MEM_API
GType gst_tensor_mem_storage_get_type(void);

GST_TENSOR_MEM_API
GstTensorMemStorage gst_tensor_mem_storage_resolve(GstTensorMemStorage storage);

G_END_DECLS
