// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:gsttensorcudameta
 * @title: GstTensorMemCudaMeta
 * @short_description: CUDA device pointer for tensor memory
 *
 * A #GstTensorMemCudaMeta gives CUDA access to a buffer whose single memory is
 * PBO or DMA-BUF tensor memory. `tensorcudaimport` attaches it; consumers
 * call gst_tensor_mem_cuda_meta_map() (or _map_mut()) and exactly one
 * gst_tensor_mem_cuda_meta_unmap() per successful map. The meta keeps the CUDA
 * handle alive; an outstanding map is released when the meta is freed.
 *
 * GStreamer's buffer copies drop the meta; our elements that make a buffer
 * writable keep it, unmapped, on their copy (see #GstTensorMemCudaMeta). For
 * a GL buffer, unmap before CPU-mapping the memory.
 *
 * Since: 0.1
 */
#include "gsttensorcudameta.h"

#include "gsttensorcudameta-private.h"
#include "gsttensormemallocator.h"
#include <gst/tensormem/gsttensorcudameta.hpp>
#include <gst/tensormem/gsttensormemallocator.hpp>

#include <tensormem/cuda_import.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <mutex>
#include <new>
#include <optional>
#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_cuda_meta_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_cuda_meta_debug

struct _GstTensorMemCudaMetaPrivate {
  std::shared_ptr<tensormem::CudaHandle> handle;
  std::optional<tensormem::CudaMap> map;
  gsize offset = 0;
  std::mutex mu;
};

namespace {

gboolean cuda_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstTensorMemCudaMeta *>(meta);
  m->kind = GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY;
  m->size = 0;
  m->priv = new _GstTensorMemCudaMetaPrivate();
  return TRUE;
}

void cuda_meta_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstTensorMemCudaMeta *>(meta);
  // An outstanding map is released here (CudaMap's destructor), then the
  // handle reference goes; the memory's cache may still hold the handle.
  delete m->priv;
  m->priv = nullptr;
}

/* Dropped from every copy GStreamer makes: the transform cannot tell a
 * shallow copy, whose memories are the source's, from a deep one, whose
 * device pointer would still be the source's. Code that knows the copy shares
 * the memories carries it (gst_tensormem::copy_buffer_metas()). It returns
 * TRUE having added nothing, as a meta that chooses not to follow a copy
 * does: FALSE would make every copy log "failed to copy meta" at ERROR level
 * (a tee before an element that writes its frame does that per buffer). */
gboolean cuda_meta_transform(GstBuffer *, GstMeta *, GstBuffer *, GQuark, gpointer) { return TRUE; }

/* The CUDA handle of each storage lives in libtensormem's one cache of
 * imports (tensormem/cuda_import.hpp), keyed on the storage's identity: every
 * GstMemory over one storage (a pooled memory, or a new wrapper per frame of
 * one imported DMA-BUF) shares one import, dropped when the storage dies. A
 * meta only holds a reference for its mapping. */

void ensure_debug() {
  static std::once_flag once;
  std::call_once(once, [] {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_cuda_meta_debug, "tensormemcudameta", 0,
                            "Tensor CUDA meta and import cache");
  });
}

gboolean map_impl(GstTensorMemCudaMeta *meta, bool writable, gpointer *device_ptr, gsize *size, GError **error) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  _GstTensorMemCudaMetaPrivate *p = meta->priv;
  std::lock_guard lock(p->mu);
  if (p->map) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_BUSY, "the CUDA meta is already mapped");
    return FALSE;
  }
  tensormem::Result<tensormem::CudaMap> m = writable ? p->handle->map_mut() : p->handle->map();
  if (!m) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "CUDA map failed: %s",
                m.error().message().c_str());
    return FALSE;
  }
  tensormem::CudaMap map = std::move(m).value();
  if (!map.narrow(p->offset, meta->size)) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED,
                "CUDA mapping of %" G_GSIZE_FORMAT " bytes cannot hold [%" G_GSIZE_FORMAT ", +%" G_GSIZE_FORMAT ")",
                map.length(), p->offset, meta->size);
    return FALSE; // map released by its destructor
  }
  if (device_ptr)
    *device_ptr = map.device_ptr();
  if (size)
    *size = map.length();
  p->map.emplace(std::move(map));
  return TRUE;
}

} // namespace

/**
 * gst_tensor_mem_cuda_meta_api_get_type:
 *
 * Returns: the #GType of the "GstTensorMemCudaMetaAPI" meta API (tags: memory).
 *
 * Since: 0.1
 */
GType gst_tensor_mem_cuda_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {GST_META_TAG_MEMORY_STR, nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstTensorMemCudaMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

/**
 * gst_tensor_mem_cuda_meta_get_info:
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstTensorMemCudaMeta.
 *
 * Since: 0.1
 */
const GstMetaInfo *gst_tensor_mem_cuda_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    ensure_debug();
    const GstMetaInfo *i =
        gst_meta_register(GST_TENSOR_MEM_CUDA_META_API_TYPE, "GstTensorMemCudaMeta", sizeof(GstTensorMemCudaMeta),
                          cuda_meta_init, cuda_meta_free, cuda_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

/**
 * gst_buffer_get_tensor_mem_cuda_meta:
 * @buffer: a #GstBuffer
 *
 * Returns: (transfer none) (nullable): the buffer's #GstTensorMemCudaMeta.
 *
 * Since: 0.1
 */
GstTensorMemCudaMeta *gst_buffer_get_tensor_mem_cuda_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return reinterpret_cast<GstTensorMemCudaMeta *>(gst_buffer_get_meta(buffer, GST_TENSOR_MEM_CUDA_META_API_TYPE));
}

/**
 * gst_tensor_mem_cuda_meta_map:
 * @meta: a #GstTensorMemCudaMeta
 * @device_ptr: (out): the device address of the memory's first byte
 * @size: (out) (optional): bytes it covers
 * @error: a #GError, or %NULL
 *
 * Maps the memory for CUDA reads. A map is outstanding until
 * gst_tensor_mem_cuda_meta_unmap(); a second map before that fails. For GL
 * buffers this is a round trip to the GL worker.
 *
 * Returns: %TRUE on success.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_cuda_meta_map(GstTensorMemCudaMeta *meta, gpointer *device_ptr, gsize *size, GError **error) {
  return map_impl(meta, false, device_ptr, size, error);
}

/**
 * gst_tensor_mem_cuda_meta_map_mut:
 * @meta: a #GstTensorMemCudaMeta
 * @device_ptr: (out): the device address of the memory's first byte
 * @size: (out) (optional): bytes it covers
 * @error: a #GError, or %NULL
 *
 * Like gst_tensor_mem_cuda_meta_map(), for CUDA writes.
 *
 * Returns: %TRUE on success.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_cuda_meta_map_mut(GstTensorMemCudaMeta *meta, gpointer *device_ptr, gsize *size,
                                          GError **error) {
  return map_impl(meta, true, device_ptr, size, error);
}

/**
 * gst_tensor_mem_cuda_meta_unmap:
 * @meta: a #GstTensorMemCudaMeta
 *
 * Ends the outstanding map (a GL unmap on the worker for GL buffers). Does
 * nothing when none is outstanding.
 *
 * Since: 0.1
 */
void gst_tensor_mem_cuda_meta_unmap(GstTensorMemCudaMeta *meta) {
  g_return_if_fail(meta != nullptr && meta->priv != nullptr);
  std::optional<tensormem::CudaMap> map;
  {
    std::lock_guard lock(meta->priv->mu);
    map.swap(meta->priv->map);
  }
  if (map)
    map->release();
}

/**
 * gst_tensor_mem_cuda_meta_is_mapped:
 * @meta: a #GstTensorMemCudaMeta
 *
 * Returns: whether a map is outstanding.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_cuda_meta_is_mapped(GstTensorMemCudaMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  std::lock_guard lock(meta->priv->mu);
  return meta->priv->map.has_value();
}

/**
 * gst_tensor_mem_cuda_kind_to_string:
 * @kind: a #GstTensorMemCudaKind
 *
 * Returns: (transfer none): "external-memory" or "gl-buffer".
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_cuda_kind_to_string(GstTensorMemCudaKind kind) {
  switch (kind) {
  case GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY: return "external-memory";
  case GST_TENSOR_MEM_CUDA_KIND_GL_BUFFER: return "gl-buffer";
  case GST_TENSOR_MEM_CUDA_KIND_D3D11_TEXTURE: return "d3d11-texture";
  }
  return "unknown";
}

GstTensorMemCudaMeta *gst_buffer_add_tensor_mem_cuda_meta(GstBuffer *buffer,
                                                          std::shared_ptr<tensormem::CudaHandle> handle, gsize offset,
                                                          gsize size) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  if (!handle)
    return nullptr;
  GstTensorMemCudaKind kind;
  switch (handle->kind()) {
  case tensormem::CudaHandleKind::ExternalMemory: kind = GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY; break;
  case tensormem::CudaHandleKind::GlBuffer: kind = GST_TENSOR_MEM_CUDA_KIND_GL_BUFFER; break;
  case tensormem::CudaHandleKind::D3d11: kind = GST_TENSOR_MEM_CUDA_KIND_D3D11_TEXTURE; break;
  default: return nullptr;
  }
  if (offset > handle->size() || size > handle->size() - offset)
    return nullptr;
  auto *meta =
      reinterpret_cast<GstTensorMemCudaMeta *>(gst_buffer_add_meta(buffer, GST_TENSOR_MEM_CUDA_META_INFO, nullptr));
  if (!meta)
    return nullptr;
  meta->kind = kind;
  meta->size = size;
  meta->priv->handle = std::move(handle);
  meta->priv->offset = offset;
  return meta;
}

namespace gst_tensormem {

GstTensorMemCudaMeta *copy_cuda_meta(GstTensorMemCudaMeta *from, GstBuffer *to) {
  g_return_val_if_fail(from != nullptr && from->priv != nullptr, nullptr);
  return gst_buffer_add_tensor_mem_cuda_meta(to, from->priv->handle, from->priv->offset, from->size);
}

} // namespace gst_tensormem

std::shared_ptr<tensormem::CudaHandle> gst_tensor_mem_cuda_meta_get_handle(GstTensorMemCudaMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, nullptr);
  return meta->priv->handle;
}

std::shared_ptr<tensormem::CudaHandle> gst_tensor_mem_memory_peek_cuda(GstMemory *mem) {
  g_return_val_if_fail(mem != nullptr, nullptr);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  return tensor ? tensormem::cached_cuda_handle(*tensor->storage()) : nullptr;
}

tensormem::Result<std::shared_ptr<tensormem::CudaHandle>> gst_tensor_mem_memory_import_cuda(GstMemory *mem,
                                                                                            gboolean *imported) {
  ensure_debug();
  if (imported)
    *imported = FALSE;
  if (!mem)
    return tensormem::Error::invalid_argument("no memory");
  GstMemory *root = mem;
  while (root->parent)
    root = root->parent;
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(root);
  if (!tensor)
    return tensormem::Error::not_implemented("memory is not tensor memory");
  tensormem::Storage &storage_of_mem = *tensor->storage(); // kept alive by `mem`, which the caller holds
  if (auto cached = tensormem::cached_cuda_handle(storage_of_mem))
    return cached;

  std::shared_ptr<const tensormem::CudaRuntime> rt = tensormem::CudaRuntime::get();
  if (!rt->available())
    return rt->unavailable_error("tensor memory import");

  /* The storage's exported handle says how CUDA reaches it (fd import, GL
   * registration, D3D11 texture). Two importers racing (a tee) may both
   * import: the first handle cached wins, the other is released. */
  bool fresh = false;
  tensormem::Result<std::shared_ptr<tensormem::CudaHandle>> cached =
      tensormem::import_cuda_cached(storage_of_mem, rt, &fresh);
  if (!cached || !fresh)
    return cached;
  if (imported)
    *imported = TRUE;
  GST_DEBUG("imported memory %p into CUDA: %s", static_cast<void *>(root), (*cached)->describe().c_str());
  return cached;
}

/**
 * gst_tensor_mem_cuda_meta_read:
 * @meta: a #GstTensorMemCudaMeta, not mapped
 * @dest: (array length=dest_size) (element-type guint8): host memory
 * @dest_size: bytes at @dest, at least @meta's size
 * @error: a #GError, or %NULL
 *
 * Copies the @meta->size bytes the meta's device pointer covers into @dest
 * with a device-to-host copy (map, copy, unmap): what a consumer that checks
 * or logs a tensor on the host reads, through CUDA rather than a CPU map of
 * the memory.
 *
 * Returns: %TRUE when @dest holds the bytes.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_cuda_meta_read(GstTensorMemCudaMeta *meta, gpointer dest, gsize dest_size, GError **error) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  g_return_val_if_fail(dest != nullptr || meta->size == 0, FALSE);
  if (dest_size < meta->size) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
                "%" G_GSIZE_FORMAT " host bytes cannot hold the %" G_GSIZE_FORMAT " device bytes", dest_size,
                meta->size);
    return FALSE;
  }
  gpointer device = nullptr;
  gsize size = 0;
  if (!map_impl(meta, false, &device, &size, error))
    return FALSE;
  gboolean copied = FALSE;
  tensormem::Result<void> done = tensormem::CudaRuntime::get()->memcpy_device_to_host(dest, device, size);
  if (done)
    copied = TRUE;
  else
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, "device-to-host copy failed: %s",
                done.error().message().c_str());
  gst_tensor_mem_cuda_meta_unmap(meta);
  return copied;
}

/**
 * gst_tensor_mem_cuda_get_status:
 * @api: (out) (optional) (transfer none): "runtime" or "driver" for the CUDA
 *   API in use, "none" when CUDA is unavailable
 * @library: (out) (optional) (transfer none): the path of the loaded CUDA
 *   library ("" when none)
 * @n_devices: (out) (optional): devices the API reports (0 when unavailable)
 * @reason: (out) (optional) (transfer none): why CUDA is unavailable ("" when
 *   it is available)
 *
 * What the process-wide CUDA loader found (the first call loads it, through
 * `dlopen`). The strings live as long as the process.
 *
 * Returns: %TRUE when CUDA is available.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_cuda_get_status(const gchar **api, const gchar **library, gint *n_devices,
                                        const gchar **reason) {
  std::shared_ptr<const tensormem::CudaRuntime> rt;
  rt = tensormem::CudaRuntime::get();
  const bool available = rt && rt->available();
  if (api)
    *api = tensormem::cuda_backend_name(available ? rt->backend() : tensormem::CudaBackend::None);
  if (library)
    *library = rt ? rt->runtime_path().c_str() : "";
  if (n_devices)
    *n_devices = available ? rt->device_count() : 0;
  if (reason)
    *reason = !rt ? "probing the CUDA loader ran out of memory" : available ? "" : rt->reason().c_str();
  return available;
}
