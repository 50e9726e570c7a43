// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorstorage-private.h>

#include <tensormem/dmabuf_storage.hpp>

#include <new>
#include <string>
#include <unistd.h>

/**
 * gst_tensor_mem_storage_get_type:
 *
 * Returns: the #GType of #GstTensorMemStorage.
 *
 * Since: 0.1
 */
GType gst_tensor_mem_storage_get_type(void) {
  static gsize type = 0;
  static const GEnumValue values[] = {
      {GST_TENSOR_MEM_STORAGE_AUTO, "Pick the best storage available", "auto"},
      {GST_TENSOR_MEM_STORAGE_SYSTEM, "64-byte aligned system memory", "system"},
      {GST_TENSOR_MEM_STORAGE_DMABUF, "DMA-BUF shared by file descriptor (DMA heap, or memfd by environment)",
       "dmabuf"},
      {GST_TENSOR_MEM_STORAGE_PBO, "OpenGL pixel buffer objects of a headless GL worker shared through GstContext",
       "pbo"},
      {GST_TENSOR_MEM_STORAGE_D3D11,
       "Direct3D 11 textures of the process device shared through GstContext (elsewhere than Windows only with "
       "TENSORMEM_D3D11_DEVICE=software)",
       "d3d11"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemStorage", values));
  return type;
}

/**
 * gst_tensor_mem_storage_resolve:
 * @storage: a storage choice
 *
 * Resolves %GST_TENSOR_MEM_STORAGE_AUTO: DMA-BUF when a DMA heap the process may
 * allocate from exists (`/dev/dma_heap/system`, `linux,cma` or `reserved`,
 * readable and writable), system memory otherwise. The heaps are looked at
 * once per process. Other values are returned as they are.
 *
 * Returns: a storage other than %GST_TENSOR_MEM_STORAGE_AUTO.
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_mem_storage_resolve(GstTensorMemStorage storage) {
  if (storage != GST_TENSOR_MEM_STORAGE_AUTO)
    return storage;
  static gsize resolved = 0;
  if (g_once_init_enter(&resolved)) {
    gsize value = GST_TENSOR_MEM_STORAGE_SYSTEM + 1;
    for (const std::string &heap : tensormem::DmaBufOptions{}.heaps) {
      if (::access(("/dev/dma_heap/" + heap).c_str(), R_OK | W_OK) == 0) {
        value = GST_TENSOR_MEM_STORAGE_DMABUF + 1;
        break;
      }
    }
    g_once_init_leave(&resolved, value);
  }
  return static_cast<GstTensorMemStorage>(resolved - 1);
}

namespace gst_tensormem {

GstTensorMemStorage storage_of_kind(tensormem::StorageKind kind) {
  // One row per family, beside the enum's own values above.
  static constexpr struct {
    tensormem::StorageKind kind;
    GstTensorMemStorage storage;
  } kRows[] = {
      {tensormem::StorageKind::Mem, GST_TENSOR_MEM_STORAGE_SYSTEM},
      {tensormem::StorageKind::DmaBuf, GST_TENSOR_MEM_STORAGE_DMABUF},
      {tensormem::StorageKind::Pbo, GST_TENSOR_MEM_STORAGE_PBO},
      {tensormem::StorageKind::D3d11, GST_TENSOR_MEM_STORAGE_D3D11},
  };
  for (const auto &row : kRows) {
    if (row.kind == kind)
      return row.storage;
  }
  return GST_TENSOR_MEM_STORAGE_AUTO;
}

} // namespace gst_tensormem
