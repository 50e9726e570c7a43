// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormem.h>

#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensorpbo.h>

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/log.hpp>

#include <string>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensormem_debug);
#define GST_CAT_DEFAULT gst_tensormem_debug

namespace {

GstDebugLevel to_gst_level(tensormem::LogLevel level) noexcept {
  switch (level) {
  case tensormem::LogLevel::Error: return GST_LEVEL_ERROR;
  case tensormem::LogLevel::Warning: return GST_LEVEL_WARNING;
  case tensormem::LogLevel::Info: return GST_LEVEL_INFO;
  case tensormem::LogLevel::Debug: break;
  }
  return GST_LEVEL_DEBUG;
}

void route_core_log(tensormem::LogLevel level, std::string_view message, void *) {
  GST_CAT_LEVEL_LOG(gst_tensormem_debug, to_gst_level(level), nullptr, "%.*s", static_cast<int>(message.size()),
                    message.data());
}

} // namespace

/**
 * gst_tensor_storage_get_type:
 *
 * Returns: the #GType of #GstTensorMemStorage.
 *
 * Since: 0.1
 */
GType gst_tensor_storage_get_type(void) {
  static gsize type = 0;
  static const GEnumValue values[] = {
      {GST_TENSOR_STORAGE_AUTO, "Pick the best storage available", "auto"},
      {GST_TENSOR_STORAGE_SYSTEM, "64-byte aligned system memory", "system"},
      {GST_TENSOR_STORAGE_DMABUF, "DMA-BUF shared by file descriptor (DMA heap, or memfd by environment)", "dmabuf"},
      {GST_TENSOR_STORAGE_PBO, "OpenGL pixel buffer objects of a headless GL worker shared through GstContext", "pbo"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemStorage", values));
  return type;
}

/**
 * gst_tensor_storage_resolve:
 * @storage: a storage choice
 *
 * Resolves %GST_TENSOR_STORAGE_AUTO: DMA-BUF when a DMA heap the process may
 * allocate from exists (`/dev/dma_heap/system`, `linux,cma` or `reserved`,
 * readable and writable), system memory otherwise. The heaps are looked at
 * once per process. Other values are returned as they are.
 *
 * Returns: a storage other than %GST_TENSOR_STORAGE_AUTO.
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_storage_resolve(GstTensorMemStorage storage) {
  if (storage != GST_TENSOR_STORAGE_AUTO)
    return storage;
  static gsize resolved = 0;
  if (g_once_init_enter(&resolved)) {
    gsize value = GST_TENSOR_STORAGE_SYSTEM + 1;
    try {
      for (const std::string &heap : tensormem::DmaBufOptions{}.heaps) {
        if (::access(("/dev/dma_heap/" + heap).c_str(), R_OK | W_OK) == 0) {
          value = GST_TENSOR_STORAGE_DMABUF + 1;
          break;
        }
      }
    } catch (...) {
    }
    g_once_init_leave(&resolved, value);
  }
  return static_cast<GstTensorMemStorage>(resolved - 1);
}

/**
 * gst_tensormem_init:
 *
 * Initialises the library: registers every type it defines (allocators,
 * buffer pool, GL worker, storage enum, CUDA meta) and its debug categories,
 * and routes the diagnostics of the core tensormem library into the
 * `tensormem` GStreamer debug category. Call it after gst_init(); calling it
 * again does nothing.
 *
 * Since: 0.1
 */
void gst_tensormem_init(void) {
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  GST_DEBUG_CATEGORY_INIT(gst_tensormem_debug, "tensormem", 0, "tensormem core library");
  tensormem::set_log_handler(route_core_log, nullptr);
  gst_tensor_memory_init_once();
  g_type_ensure(GST_TYPE_TENSOR_STORAGE);
  g_type_ensure(GST_TYPE_TENSOR_PBO_ALLOCATOR);
  g_type_ensure(GST_TYPE_TENSOR_GL_WORKER);
  g_type_ensure(GST_TYPE_TENSOR_BUFFER_POOL);
  gst_tensor_cuda_meta_get_info();
  g_once_init_leave(&done, 1);
}
