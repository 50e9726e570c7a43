// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensorpbo.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbasememory-private.h>
#include <gst/tensormem/gsttensorbufferpool-private.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorfencemeta.hpp>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#include <gst/tensormem/gsttensorpbo.hpp>
#endif

#include <tensormem/gl_worker.hpp>
#include <tensormem/host_pin.hpp>
#include <tensormem/storage.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_pbo_debug);
#define GST_CAT_DEFAULT gst_tensor_pbo_debug

G_DEFINE_TYPE_WITH_CODE(GstTensorMemPboAllocator, gst_tensor_mem_pbo_allocator, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_pbo_debug, "tensormempbo", 0, "OpenGL PBO tensor memory"))

namespace {

/* Zeroes the prefix and/or padding of a new buffer when the params ask for it
 * (glBufferData with no data leaves the contents undefined). */
bool zero_edges(GstTensorMemBaseAllocator *allocator, const tensormem::Tensor &tensor,
                const GstAllocationParams *params, gsize bytes) noexcept {
  const bool prefix = (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && params->prefix > 0;
  const bool padding = (params->flags & GST_MEMORY_FLAG_ZERO_PADDED) && params->padding > 0;
  if (!prefix && !padding)
    return true;
  auto pin = tensor.storage()->map(tensormem::CpuAccess::Write);
  if (!pin) {
    GST_WARNING_OBJECT(allocator, "cannot map a new PBO to zero its edges: %s", pin.error().message().c_str());
    return false;
  }
  if (prefix)
    std::memset(pin->data(), 0, params->prefix);
  if (padding)
    std::memset(pin->data() + bytes - params->padding, 0, params->padding);
  return true;
}

/* A new GL buffer of the allocator's worker. */
std::optional<tensormem::Tensor> create_storage(GstTensorMemBaseAllocator *allocator, gsize bytes,
                                                const GstAllocationParams *params) noexcept {
  auto *self = GST_TENSOR_MEM_PBO_ALLOCATOR_CAST(allocator);
  if (!self->worker) {
    GST_WARNING_OBJECT(allocator, "no GL worker: make the allocator with gst_tensor_mem_pbo_allocator_new()");
    return std::nullopt;
  }
  auto worker = gst_tensor_mem_gl_worker_get_core_gl_worker(self->worker);
  if (!worker)
    return std::nullopt;
#if GST_TENSOR_MEM_HAVE_GL
  auto tensor = worker->create_pbo(bytes, {bytes}, tensormem::DType::U8, GST_TENSOR_MEM_PBO_MEMORY_TYPE_NAME,
                                   tensormem::PboUsage::Upload);
#else
  tensormem::Result<tensormem::Tensor> tensor =
      tensormem::Error::not_implemented("gst-tensormem was built without OpenGL");
#endif
  if (!tensor) {
    GST_WARNING_OBJECT(allocator, "%" G_GSIZE_FORMAT "-byte PBO: %s", bytes, tensor.error().message().c_str());
    return std::nullopt;
  }
  if (!zero_edges(allocator, *tensor, params, bytes))
    return std::nullopt;
  GST_LOG_OBJECT(allocator, "GL buffer %u, %" G_GSIZE_FORMAT " bytes", tensormem::pbo_storage_of(*tensor)->buffer_id(),
                 bytes);
  return std::move(*tensor);
}

/* The base's map, plus a check of the one thing GL (not we) decides: the
 * address of the map. */
gpointer map_checked(GstTensorMemBaseMemory *mem, GstMapInfo *info, gsize maxsize) noexcept {
  auto *base_class = GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(gst_tensor_mem_pbo_allocator_parent_class);
  gpointer data = base_class->map(mem, info, maxsize);
  const gsize align = GST_MEMORY_CAST(mem)->align;
  if (data && (reinterpret_cast<std::uintptr_t>(data) & align) != 0)
    GST_WARNING("memory %p: GL mapped it at %p, not aligned to the %" G_GSIZE_FORMAT " bytes asked", mem, data,
                align + 1);
  return data;
}

} // namespace

static void gst_tensor_mem_pbo_allocator_dispose(GObject *object) {
  auto *self = GST_TENSOR_MEM_PBO_ALLOCATOR(object);
  // Memories hold a reference to the allocator, so none is left by now.
  gst_clear_object(&self->worker);
  G_OBJECT_CLASS(gst_tensor_mem_pbo_allocator_parent_class)->dispose(object);
}

static void gst_tensor_mem_pbo_allocator_class_init(GstTensorMemPboAllocatorClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = gst_tensor_mem_pbo_allocator_dispose;
  auto *base_class = GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass);
  base_class->storage = GST_TENSOR_MEM_STORAGE_PBO;
  gst_tensormem::base_allocator_class_set_create_tensor(base_class, create_storage);
  base_class->map = map_checked;
  // Freeing a memory (the base's) drops its storage reference; the last one
  // deletes the GL buffer, on the worker.
}

static void gst_tensor_mem_pbo_allocator_init(GstTensorMemPboAllocator *self) {
  GST_ALLOCATOR_CAST(self)->mem_type = GST_TENSOR_MEM_PBO_MEMORY_TYPE_NAME;
}

/**
 * gst_tensor_mem_pbo_allocator_new:
 * @worker: the GL worker whose context owns the buffers
 *
 * A new allocator of PBO memory on @worker. gst_allocator_alloc() on it
 * makes a GL buffer of prefix + size + padding bytes (at least one); the
 * alignment asked may be up to 64 bytes, which GL guarantees for the address
 * of a map.
 *
 * Returns: (transfer full): the allocator.
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_mem_pbo_allocator_new(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_GL_WORKER(worker), nullptr);
  auto *self = static_cast<GstTensorMemPboAllocator *>(g_object_new(GST_TYPE_TENSOR_MEM_PBO_ALLOCATOR, nullptr));
  gst_object_ref_sink(self);
  self->worker = GST_TENSOR_MEM_GL_WORKER(gst_object_ref(worker));
  return GST_ALLOCATOR_CAST(self);
}

/**
 * gst_is_tensor_mem_pbo_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem was made by a #GstTensorMemPboAllocator (shares
 * included).
 *
 * Since: 0.1
 */
gboolean gst_is_tensor_mem_pbo_memory(GstMemory *mem) {
  return mem != nullptr && mem->allocator != nullptr && GST_IS_TENSOR_MEM_PBO_ALLOCATOR(mem->allocator);
}

/**
 * gst_tensor_mem_pbo_memory_get_buffer_id:
 * @mem: a PBO tensor #GstMemory
 *
 * Returns: the GL name of the buffer behind @mem, valid in the context of
 * its GL worker; 0 when @mem is not PBO memory.
 *
 * Since: 0.1
 */
guint gst_tensor_mem_pbo_memory_get_buffer_id(GstMemory *mem) {
  g_return_val_if_fail(gst_is_tensor_mem_pbo_memory(mem), 0);
  auto storage = gst_tensor_mem_pbo_memory_get_storage(mem);
  return storage ? storage->buffer_id() : 0;
}

/**
 * gst_tensor_mem_pbo_memory_get_gl_worker:
 * @mem: a PBO tensor #GstMemory
 *
 * Returns: (transfer none) (nullable): the GL worker whose context owns the
 * buffer. Valid while @mem is alive.
 *
 * Since: 0.1
 */
GstTensorMemGlWorker *gst_tensor_mem_pbo_memory_get_gl_worker(GstMemory *mem) {
  g_return_val_if_fail(gst_is_tensor_mem_pbo_memory(mem), nullptr);
  return GST_TENSOR_MEM_PBO_ALLOCATOR_CAST(mem->allocator)->worker;
}

/**
 * gst_buffer_tensor_mem_pbo_cpu_writes_need_fence:
 * @buffer: a #GstBuffer
 *
 * Whether bytes the CPU just wrote into @buffer's PBO memory need a fence
 * (gst_buffer_fence_tensor_mem_pbo_writes()) before GL or another API reads
 * them. A PBO mapped per call does: its unmap, which hands the bytes to GL,
 * is a GL command of the worker's context. A PBO mapped persistently and
 * coherently (see docs/pbo.md) does not: a CPU write into it is visible to
 * every GL command issued after the write returns, in any context, with no
 * GL command of ours in between, so the bytes are complete when the write
 * returns, as in system memory. GPU writes into either kind still need
 * their fence.
 *
 * Returns: %TRUE when some memory of @buffer is PBO memory mapped per call
 * (or of a worker that is gone); %FALSE when @buffer has no PBO memory or
 * all of it is persistently and coherently mapped.
 *
 * Since: 0.1
 */
gboolean gst_buffer_tensor_mem_pbo_cpu_writes_need_fence(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), TRUE);
#if GST_TENSOR_MEM_HAVE_GL
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    if (!gst_is_tensor_mem_pbo_memory(mem))
      continue;
    std::shared_ptr<tensormem::GlWorker> worker = gst_tensor_mem_pbo_memory_get_core_gl_worker(mem);
    if (!worker || !worker->info().persistent_maps)
      return TRUE;
  }
#endif
  return FALSE; // (without OpenGL no PBO memory exists)
}

/**
 * gst_tensor_mem_pbo_memory_get_tensor: (skip)
 * @mem: a #GstMemory
 *
 * C++ only. Like gst_tensor_mem_memory_get_tensor(), for PBO tensor memory: a
 * 1-D u8 tensor over the whole GL buffer.
 *
 * Returns: (transfer none) (nullable): the tensor, or %NULL when @mem is not
 * PBO tensor memory. Valid while @mem is alive.
 *
 * Since: 0.1
 */
const tensormem::Tensor *gst_tensor_mem_pbo_memory_get_tensor(GstMemory *mem) {
  return gst_is_tensor_mem_pbo_memory(mem) ? gst_tensor_mem_memory_get_tensor(mem) : nullptr;
}

/**
 * gst_tensor_mem_pbo_memory_get_storage: (skip)
 * @mem: a #GstMemory
 *
 * C++ only.
 *
 * Returns: the PBO storage behind @mem (a new reference), or an empty pointer
 * when @mem is not PBO tensor memory.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::PboStorage> gst_tensor_mem_pbo_memory_get_storage(GstMemory *mem) {
  const tensormem::Tensor *tensor = gst_tensor_mem_pbo_memory_get_tensor(mem);
  return tensor ? tensormem::pbo_storage_of(*tensor) : nullptr;
}

/**
 * gst_tensor_mem_pbo_memory_get_core_gl_worker: (skip)
 * @mem: a #GstMemory
 *
 * C++ only.
 *
 * Returns: the core GL worker that owns @mem's buffer (a new reference), or
 * an empty pointer when @mem is not PBO tensor memory.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_pbo_memory_get_core_gl_worker(GstMemory *mem) {
  if (!gst_is_tensor_mem_pbo_memory(mem))
    return nullptr;
  GstTensorMemGlWorker *worker = GST_TENSOR_MEM_PBO_ALLOCATOR_CAST(mem->allocator)->worker;
  return worker ? gst_tensor_mem_gl_worker_get_core_gl_worker(worker) : nullptr;
}

/**
 * gst_buffer_fence_tensor_mem_pbo_writes:
 * @buffer: a writable #GstBuffer
 * @error: a #GError, or %NULL
 *
 * For a buffer just written into PBO memory: the memory's GL worker fences
 * the GL commands queued so far (the unmap that hands the CPU's bytes to GL
 * included) and records the fence on each PBO storage, and the buffer gets
 * the fence metas of every write recorded on its storages. Does nothing for
 * a buffer without PBO memory, or a worker without EGL_KHR_fence_sync.
 *
 * Returns: %FALSE with @error set when fencing or attaching failed.
 *
 * Since: 0.1
 */
gboolean gst_buffer_fence_tensor_mem_pbo_writes(GstBuffer *buffer, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
#if GST_TENSOR_MEM_HAVE_GL
  bool any = false;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    std::shared_ptr<tensormem::PboStorage> storage = gst_tensor_mem_pbo_memory_get_storage(mem);
    std::shared_ptr<tensormem::GlWorker> worker = gst_tensor_mem_pbo_memory_get_core_gl_worker(mem);
    if (!storage || !worker)
      continue;
    tensormem::Result<std::uint64_t> fenced = worker->fence_write(*storage);
    if (!fenced) {
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "fencing the write into memory %u: %s", i,
                  fenced.error().message().c_str());
      return FALSE;
    }
    any = true;
  }
  return !any || gst_buffer_add_tensor_mem_fences_from_memory(buffer, error);
#else
  (void)error;
  return TRUE;
#endif
}

/**
 * gst_tensor_mem_get_gl_stats:
 * @pbos: (out) (optional): GL buffers (PBOs) the GL workers of this process
 *   made and have not deleted yet; a worker that shut down no longer counts
 *   its own, which its context took with it
 * @fences: (out) (optional): EGL fence syncs alive in this process (fences
 *   of PBO writes that buffers, storages or timelines still hold)
 *
 * The GL objects of gst-tensormem alive now, for leak checks (the soak,
 * tests/soak, samples them): a steady pipeline holds a steady number. Both
 * are 0 in a build without OpenGL.
 *
 * Since: 0.1
 */
void gst_tensor_mem_get_gl_stats(guint64 *pbos, guint64 *fences) {
#if GST_TENSOR_MEM_HAVE_GL
  const tensormem::GlWorker::LiveObjects live = tensormem::GlWorker::live_objects();
#else
  const struct { guint64 pbos = 0, fences = 0; } live;
#endif
  if (pbos)
    *pbos = live.pbos;
  if (fences)
    *fences = live.fences;
}

/**
 * gst_tensor_mem_buffer_pool_new_for_pbo:
 * @allocator: a #GstTensorMemPboAllocator (gst_tensor_mem_pbo_allocator_new())
 *
 * A pool of video buffers in OpenGL PBO memory of @allocator's GL worker:
 * one GL buffer per pool buffer, a #GstVideoMeta with every plane stride
 * aligned to %GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN bytes. A PBO allocator in
 * a later config replaces @allocator.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_pbo(GstAllocator *allocator) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_PBO_ALLOCATOR(allocator), nullptr);
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_PBO);
  gst_tensormem::pool_set_device_allocator(pool, allocator);
  return pool;
}

/* ---- the PBO backend: a GL worker shared through GstContext ---- */

namespace gst_tensormem {

namespace {
gboolean pbo_ensure_device(GstElement *element, GstObject **slot, GError **error) {
  return gst_tensor_mem_gl_worker_ensure(element, reinterpret_cast<GstTensorMemGlWorker **>(slot), error);
}
gboolean pbo_handle_set_context(GstElement *element, GstContext *context, GstObject **slot) {
  return gst_tensor_mem_gl_worker_handle_set_context(element, context, reinterpret_cast<GstTensorMemGlWorker **>(slot));
}
gboolean pbo_handle_context_query(GstElement *element, GstQuery *query, GstObject **slot) {
  return gst_tensor_mem_gl_worker_handle_context_query(element, query, reinterpret_cast<GstTensorMemGlWorker **>(slot));
}
void pbo_describe_device(GstElement *element, GstObject *device) {
  auto *worker = GST_TENSOR_MEM_GL_WORKER(device);
  GST_INFO_OBJECT(element, "PBO memory of GL worker %" GST_PTR_FORMAT " (%s, %s)", worker,
                  gst_tensor_mem_gl_worker_get_renderer(worker), gst_tensor_mem_gl_worker_get_version(worker));
}
GstAllocator *pbo_new_allocator(GstObject *device) {
  return device ? gst_tensor_mem_pbo_allocator_new(GST_TENSOR_MEM_GL_WORKER(device)) : nullptr;
}
} // namespace

const Backend &pbo_backend() {
  static const Backend backend = {
      .storage = GST_TENSOR_MEM_STORAGE_PBO,
      .memory_name = "PBO",
      .caps_feature = GST_CAPS_FEATURE_MEMORY_TENSOR_PBO,
      .kind = tensormem::StorageKind::Pbo,
      // GL guarantees GL_MIN_MAP_BUFFER_ALIGNMENT (at least 64) for maps of the
      // whole buffer from offset 0, the only kind the worker makes.
      .max_align_mask = 64 - 1,
      .ensure_device = pbo_ensure_device,
      .handle_set_context = pbo_handle_set_context,
      .handle_context_query = pbo_handle_context_query,
      .device_at_ready = false,
      .device_error = GST_RESOURCE_ERROR_FAILED,
      .device_failure = "storage=pbo: %s; use storage=system or storage=dmabuf on a machine without a usable EGL",
      .describe_device = pbo_describe_device,
      .new_allocator = pbo_new_allocator,
      .cpu_writes_need_fence = gst_buffer_tensor_mem_pbo_cpu_writes_need_fence,
      .fence_writes = gst_buffer_fence_tensor_mem_pbo_writes,
      .shares_gstgl_display = true,
      .written_by_gl_pass = true,
      .holds_batches = true,
      .allocator_type = gst_tensor_mem_pbo_allocator_get_type,
      .owns_memory = gst_is_tensor_mem_pbo_memory,
      .new_pool = gst_tensor_mem_buffer_pool_new_for_pbo,
      .new_window = gst_tensor_mem_base_memory_new_window,
  };
  return backend;
}

} // namespace gst_tensormem
