// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:gsttensorfencemeta
 * @title: GstTensorMemFenceMeta
 * @short_description: GPU completion travelling with a buffer
 *
 * A #GstTensorMemFenceMeta says that a buffer's memory is written (by a GPU,
 * or by any producer that completes later than it hands the buffer on) until
 * a timeline reaches a value. Producers attach it (`tensorupload` after it
 * writes into PBO memory, with the GL worker's EGL fence); consumers that
 * read on the CPU wait for it, bounded (gst_tensor_mem_fence_meta_wait_cpu(),
 * gst_buffer_wait_tensor_mem_fences(), `tensorsync`); consumers on the GPU
 * queue the wait there where the API allows
 * (gst_tensor_mem_fence_meta_wait_gpu()).
 *
 * A meta whose wait has succeeded is marked satisfied: later waits on it (on
 * this buffer or a copy) return at once. The fence stays on the buffer, so
 * downstream still sees where the completion came from.
 *
 * Since: 0.1
 */
#include <gst/tensormem/gsttensorfencemeta.h>

#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemconfig.h>

#include <gst/tensormem/gsttensorcancel-private.h>
#include <gst/tensormem/gsttensorfencemeta.hpp>
#include <gst/tensormem/gsttensormemallocator.hpp>
#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#endif

#include <tensormem/gl_worker.hpp>
#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>
#include <tensormem/unique_fd.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#ifndef _WIN32
#include <fcntl.h>
#endif

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_fence_meta_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_fence_meta_debug

struct _GstTensorMemFenceMetaPrivate {
  std::shared_ptr<tensormem::Timeline> timeline; // null: an empty meta
  tensormem::UniqueFd fd;                        // SyncFile: the meta's own duplicate
  // Set once a wait succeeded; only ever goes false -> true while the fence
  // is set (a reached value stays reached), so a reader of a shared buffer
  // may set it.
  std::atomic<bool> satisfied{false};
};

namespace {

void ensure_debug() {
  static std::once_flag once;
  std::call_once(once, [] {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_fence_meta_debug, "tensormemfencemeta", 0, "Tensor fence meta");
  });
}

GstTensorMemFenceKind kind_of(tensormem::TimelineKind kind) {
  switch (kind) {
  case tensormem::TimelineKind::Software: return GST_TENSOR_MEM_FENCE_KIND_SOFTWARE;
  case tensormem::TimelineKind::EglSync: return GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC;
  case tensormem::TimelineKind::SyncFile: return GST_TENSOR_MEM_FENCE_KIND_SYNC_FILE;
  case tensormem::TimelineKind::D3d11Fence: return GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE;
  }
  return GST_TENSOR_MEM_FENCE_KIND_NONE;
}

GstTensorMemFenceMeta *as_fence(GstMeta *meta) { return reinterpret_cast<GstTensorMemFenceMeta *>(meta); }

/* A duplicate of `fd` that this process closes on exec; invalid on failure. */
tensormem::UniqueFd duplicate_fd(gint fd) {
#ifndef _WIN32
  return tensormem::UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
#else
  (void)fd;
  return tensormem::UniqueFd();
#endif
}

/* "<kind>:<value>" or "none". */
std::string describe(const GstTensorMemFenceMeta *meta) {
  if (meta->kind == GST_TENSOR_MEM_FENCE_KIND_NONE)
    return "none";
  return std::string(gst_tensor_mem_fence_kind_to_string(meta->kind)) + ":" + std::to_string(meta->value);
}

bool has_fence(const GstTensorMemFenceMeta *meta) { return meta->priv && meta->priv->timeline && meta->value > 0; }

/* Points the meta at `timeline`/`value`; an fd it held for another point goes. */
void set_fence(GstTensorMemFenceMeta *meta, std::shared_ptr<tensormem::Timeline> timeline, guint64 value,
               tensormem::UniqueFd fd, bool satisfied) {
  meta->kind = kind_of(timeline->kind());
  meta->value = value;
  meta->priv->timeline = std::move(timeline);
  meta->priv->fd = std::move(fd);
  meta->priv->satisfied.store(satisfied);
}

gboolean fence_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = as_fence(meta);
  m->kind = GST_TENSOR_MEM_FENCE_KIND_NONE;
  m->value = 0;
  m->priv = new _GstTensorMemFenceMetaPrivate();
  return TRUE;
}

/* The meta's own references go: the timeline (the last one may destroy EGL
 * syncs) and its fd duplicate, closed exactly once, here. */
void fence_meta_free(GstMeta *meta, GstBuffer *) {
  auto *m = as_fence(meta);
  delete m->priv;
  m->priv = nullptr;
}

/* The meta on `buffer` that a fence on `timeline` belongs in: the one for
 * that timeline, else an empty one; NULL when neither exists. */
GstTensorMemFenceMeta *slot_for(GstBuffer *buffer, const tensormem::Timeline *timeline) {
  GstTensorMemFenceMeta *empty = nullptr;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *m = as_fence(meta);
    if (m->priv && m->priv->timeline.get() == timeline)
      return m;
    if (!empty && m->priv && !m->priv->timeline)
      empty = m;
  }
  return empty;
}

/* Puts a fence (and its own fd duplicate) on `buffer`; a newer value on the
 * same timeline replaces an older one, an older one changes nothing. */
GstTensorMemFenceMeta *put_fence(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline, guint64 value,
                                 tensormem::UniqueFd fd, bool satisfied) {
  GstTensorMemFenceMeta *meta = slot_for(buffer, timeline.get());
  if (meta && meta->priv->timeline && meta->value >= value)
    return meta;
  if (!meta)
    meta = as_fence(gst_buffer_add_meta(buffer, GST_TENSOR_MEM_FENCE_META_INFO, nullptr));
  if (!meta || !meta->priv)
    return nullptr;
  set_fence(meta, std::move(timeline), value, std::move(fd), satisfied);
  return meta;
}

/* Copies (shallow or deep) carry the fence with handles of their own: the
 * timeline is shared by reference, a sync_file fd is duplicated. A copy that
 * cannot get its own fd keeps the fence without it (waits go through the
 * timeline) and says so, rather than losing the fence. Other transforms
 * (scaling, conversions into new memory) drop it: it describes writes into
 * the source's memory. */
gboolean fence_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type))
    return FALSE;
  auto *m = as_fence(meta);
  if (!has_fence(m))
    return TRUE; // an empty meta carries nothing
  tensormem::UniqueFd fd;
  if (m->priv->fd.valid()) {
    fd = duplicate_fd(m->priv->fd.get());
    if (!fd.valid())
      GST_WARNING("copying fence %s: cannot duplicate fd %d (%s); the copy waits through the timeline only",
                  describe(m).c_str(), m->priv->fd.get(), g_strerror(errno));
  }
  return put_fence(dest, m->priv->timeline, m->value, std::move(fd), m->priv->satisfied.load()) != nullptr;
}

void set_error_from(GError **error, const GstTensorMemFenceMeta *meta, const tensormem::Error &e, const char *what) {
  if (e.kind() == tensormem::ErrorKind::Cancelled) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s for fence %s was cancelled", what, describe(meta).c_str());
    return;
  }
  const gint code = e.kind() == tensormem::ErrorKind::WouldBlock
                        ? GST_RESOURCE_ERROR_BUSY
                        : (e.kind() == tensormem::ErrorKind::InvalidArgument ? GST_RESOURCE_ERROR_SETTINGS
                                                                             : GST_RESOURCE_ERROR_FAILED);
  g_set_error(error, GST_RESOURCE_ERROR, code, "%s for fence %s failed: %s", what, describe(meta).c_str(),
              e.message().c_str());
}

std::chrono::nanoseconds to_duration(GstClockTime timeout_ns) {
  // GST_CLOCK_TIME_NONE and other huge values are capped by the core.
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::min<GstClockTime>(timeout_ns, G_MAXINT64)));
}

} // namespace

/**
 * gst_tensor_mem_fence_meta_api_get_type:
 *
 * Returns: the #GType of the "GstTensorMemFenceMetaAPI" meta API (tags:
 * memory).
 *
 * Since: 0.1
 */
GType gst_tensor_mem_fence_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {GST_META_TAG_MEMORY_STR, nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstTensorMemFenceMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

/**
 * gst_tensor_mem_fence_meta_get_info:
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstTensorMemFenceMeta.
 *
 * Since: 0.1
 */
const GstMetaInfo *gst_tensor_mem_fence_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    ensure_debug();
    const GstMetaInfo *i =
        gst_meta_register(GST_TENSOR_MEM_FENCE_META_API_TYPE, "GstTensorMemFenceMeta", sizeof(GstTensorMemFenceMeta),
                          fence_meta_init, fence_meta_free, fence_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

/**
 * gst_tensor_mem_fence_kind_to_string:
 * @kind: a #GstTensorMemFenceKind
 *
 * Returns: (transfer none): "none", "software", "egl", "sync_file" or
 * "d3d11" (the core's timeline kind names).
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_fence_kind_to_string(GstTensorMemFenceKind kind) {
  switch (kind) {
  case GST_TENSOR_MEM_FENCE_KIND_NONE: return "none";
  case GST_TENSOR_MEM_FENCE_KIND_SOFTWARE: return tensormem::timeline_kind_name(tensormem::TimelineKind::Software);
  case GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC: return tensormem::timeline_kind_name(tensormem::TimelineKind::EglSync);
  case GST_TENSOR_MEM_FENCE_KIND_SYNC_FILE: return tensormem::timeline_kind_name(tensormem::TimelineKind::SyncFile);
  case GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE: return tensormem::timeline_kind_name(tensormem::TimelineKind::D3d11Fence);
  }
  return "unknown";
}

/**
 * gst_buffer_get_tensor_mem_fence_meta:
 * @buffer: a #GstBuffer
 *
 * Returns: (transfer none) (nullable): the first fence meta of @buffer that
 * holds a fence (empty pool metas are skipped); iterate with
 * gst_buffer_iterate_meta_filtered() for all of them.
 *
 * Since: 0.1
 */
GstTensorMemFenceMeta *gst_buffer_get_tensor_mem_fence_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    if (has_fence(as_fence(meta)))
      return as_fence(meta);
  }
  return nullptr;
}

/**
 * gst_buffer_add_tensor_mem_fence_meta_empty:
 * @buffer: a writable #GstBuffer
 *
 * Adds a fence meta holding no fence, for a producer (or a pool) to fill in
 * later with gst_buffer_add_tensor_mem_fence_meta().
 *
 * Returns: (transfer none): the new meta.
 *
 * Since: 0.1
 */
GstTensorMemFenceMeta *gst_buffer_add_tensor_mem_fence_meta_empty(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return as_fence(gst_buffer_add_meta(buffer, GST_TENSOR_MEM_FENCE_META_INFO, nullptr));
}

GstTensorMemFenceMeta *gst_buffer_add_tensor_mem_fence_meta(GstBuffer *buffer,
                                                            std::shared_ptr<tensormem::Timeline> timeline,
                                                            guint64 value, gint sync_file_fd, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(gst_buffer_is_writable(buffer), nullptr);
  if (!timeline) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "a fence needs a timeline");
    return nullptr;
  }
  // A value nothing will ever signal is refused where it appears.
  tensormem::Result<void> issued = timeline->check_issued(value, "gst_buffer_add_tensor_mem_fence_meta");
  if (!issued) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "%s", issued.error().message().c_str());
    return nullptr;
  }
  if (value == 0)
    return nullptr;
  tensormem::UniqueFd fd;
  if (sync_file_fd >= 0) {
    if (timeline->kind() != tensormem::TimelineKind::SyncFile) {
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "fd %d given for a fence on %s", sync_file_fd,
                  timeline->label().c_str());
      return nullptr;
    }
    fd = duplicate_fd(sync_file_fd);
    if (!fd.valid()) {
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "cannot duplicate sync_file fd %d: %s",
                  sync_file_fd, g_strerror(errno));
      return nullptr;
    }
  }
  GstTensorMemFenceMeta *meta = put_fence(buffer, std::move(timeline), value, std::move(fd), false);
  if (!meta)
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "cannot add a fence meta");
  return meta;
}

gboolean gst_buffer_add_tensor_mem_fences_from_memory(GstBuffer *buffer, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(buffer, i));
    if (!tensor)
      continue;
    for (tensormem::GpuCompletion &write : tensor->storage()->gpu_completion()) {
      if (write.value > 0 &&
          !gst_buffer_add_tensor_mem_fence_meta(buffer, std::move(write.timeline), write.value, -1, error))
        return FALSE;
    }
  }
  return TRUE;
}

std::shared_ptr<tensormem::Timeline> gst_tensor_mem_fence_meta_get_timeline(GstTensorMemFenceMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, nullptr);
  return meta->priv->timeline;
}

/**
 * gst_tensor_mem_fence_meta_is_signalled:
 * @meta: a #GstTensorMemFenceMeta
 *
 * Whether the fence has signalled, without waiting. An empty or satisfied
 * meta has; a timeline that cannot be queried answers %FALSE (and logs why).
 *
 * Returns: %TRUE once the timeline has reached the meta's value.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_fence_meta_is_signalled(GstTensorMemFenceMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  if (!has_fence(meta) || meta->priv->satisfied.load())
    return TRUE;
  tensormem::Result<bool> done = meta->priv->timeline->signalled(meta->value);
  if (!done) {
    GST_WARNING("querying fence %s: %s", describe(meta).c_str(), done.error().message().c_str());
    return FALSE;
  }
  return *done;
}

/**
 * gst_tensor_mem_fence_meta_wait_cpu:
 * @meta: a #GstTensorMemFenceMeta
 * @timeout_ns: the longest wait, in nanoseconds (0 polls once;
 *   %GST_CLOCK_TIME_NONE is capped at a year by the core, never infinite)
 * @error: a #GError, or %NULL
 *
 * Blocks the calling thread until the fence signals, for at most
 * @timeout_ns. On success the meta is marked satisfied.
 *
 * Returns: %TRUE once signalled; %FALSE with @error set when the time ran
 * out (%GST_RESOURCE_ERROR_BUSY; the message names the kind, the value and
 * the timeline) or the timeline failed.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_fence_meta_wait_cpu(GstTensorMemFenceMeta *meta, GstClockTime timeout_ns, GError **error) {
  return gst_tensor_mem_fence_meta_wait_cpu_cancellable(meta, timeout_ns, nullptr, error);
}

/**
 * gst_tensor_mem_fence_meta_wait_cpu_cancellable:
 * @meta: a #GstTensorMemFenceMeta
 * @timeout_ns: the longest wait, in nanoseconds
 * @cancellable: (nullable): ends the wait early once cancelled
 * @error: a #GError, or %NULL
 *
 * gst_tensor_mem_fence_meta_wait_cpu() that also returns within a few
 * milliseconds of @cancellable being cancelled (from any thread), whatever
 * kind of fence it waits on: how an element releases its streaming thread on
 * a flush or on the way down to READY.
 *
 * Returns: %TRUE once signalled; %FALSE with @error set as for
 * gst_tensor_mem_fence_meta_wait_cpu(), or %G_IO_ERROR_CANCELLED when
 * @cancellable ended the wait (the meta is not marked satisfied then).
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_fence_meta_wait_cpu_cancellable(GstTensorMemFenceMeta *meta, GstClockTime timeout_ns,
                                                        GCancellable *cancellable, GError **error) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  if (!has_fence(meta) || meta->priv->satisfied.load())
    return TRUE;
  const gst_tensormem::CancellableWait cancel(cancellable);
  tensormem::Result<void> waited = meta->priv->timeline->wait_cpu(meta->value, to_duration(timeout_ns), cancel.get());
  if (!waited) {
    set_error_from(error, meta, waited.error(), "CPU wait");
    return FALSE;
  }
  meta->priv->satisfied.store(true);
  return TRUE;
}

/**
 * gst_tensor_mem_fence_meta_wait_gpu:
 * @meta: a #GstTensorMemFenceMeta
 * @worker: the GL worker whose command queue must wait
 * @error: a #GError, or %NULL
 *
 * Queues the wait for the fence on @worker's GL context (eglWaitSyncKHR for
 * an EGL fence), so GL commands the worker runs afterwards see the
 * producer's bytes without the CPU waiting. Kinds a GL context cannot wait
 * for answer %GST_CORE_ERROR_NOT_IMPLEMENTED: wait on the CPU instead.
 *
 * Returns: %TRUE when the wait was queued (or there is nothing to wait for).
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_fence_meta_wait_gpu(GstTensorMemFenceMeta *meta, GstTensorMemGlWorker *worker, GError **error) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  if (!has_fence(meta) || meta->priv->satisfied.load())
    return TRUE;
  if (meta->kind != GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC) {
    g_set_error(error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED,
                "a GL context cannot wait for fence %s on the GPU; wait on the CPU", describe(meta).c_str());
    return FALSE;
  }
  std::shared_ptr<tensormem::GlWorker> gl = worker ? gst_tensor_mem_gl_worker_get_core_gl_worker(worker) : nullptr;
  if (!gl) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, "no GL worker to wait for fence %s on",
                describe(meta).c_str());
    return FALSE;
  }
  tensormem::Result<void> queued = meta->priv->timeline->wait_gpu(meta->value, *gl);
  if (!queued && queued.error().kind() == tensormem::ErrorKind::NotImplemented) {
    g_set_error(error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED, "GPU wait for fence %s: %s",
                describe(meta).c_str(), queued.error().message().c_str());
    return FALSE;
  }
  if (!queued) {
    set_error_from(error, meta, queued.error(), "GPU wait");
    return FALSE;
  }
  return TRUE;
}

/**
 * gst_tensor_mem_fence_meta_is_satisfied:
 * @meta: a #GstTensorMemFenceMeta
 *
 * Returns: %TRUE when a wait on this fence (here or on the buffer it was
 * copied from) has succeeded, or the meta is empty.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_fence_meta_is_satisfied(GstTensorMemFenceMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, FALSE);
  return !has_fence(meta) || meta->priv->satisfied.load();
}

/**
 * gst_tensor_mem_fence_meta_set_satisfied:
 * @meta: a #GstTensorMemFenceMeta
 *
 * Marks the fence as known signalled, so later waits return at once. Only
 * for a caller that has seen it signal (a successful wait does this itself).
 *
 * Since: 0.1
 */
void gst_tensor_mem_fence_meta_set_satisfied(GstTensorMemFenceMeta *meta) {
  g_return_if_fail(meta != nullptr && meta->priv != nullptr);
  meta->priv->satisfied.store(true);
}

/**
 * gst_tensor_mem_fence_meta_clear:
 * @meta: a #GstTensorMemFenceMeta of a writable buffer
 *
 * Empties the meta: the timeline reference and any fd go. A pool does this
 * before it hands a recycled buffer to a new producer.
 *
 * Since: 0.1
 */
void gst_tensor_mem_fence_meta_clear(GstTensorMemFenceMeta *meta) {
  g_return_if_fail(meta != nullptr && meta->priv != nullptr);
  meta->kind = GST_TENSOR_MEM_FENCE_KIND_NONE;
  meta->value = 0;
  meta->priv->timeline.reset();
  meta->priv->fd.reset();
  meta->priv->satisfied.store(false);
}

/**
 * gst_tensor_mem_fence_meta_get_fd:
 * @meta: a #GstTensorMemFenceMeta
 *
 * Returns: the meta's own duplicate of its sync_file fd (owned by the meta:
 * dup() it to keep it), or -1.
 *
 * Since: 0.1
 */
gint gst_tensor_mem_fence_meta_get_fd(GstTensorMemFenceMeta *meta) {
  g_return_val_if_fail(meta != nullptr && meta->priv != nullptr, -1);
  return meta->priv->fd.get();
}

/**
 * gst_tensor_mem_fence_meta_describe:
 * @meta: a #GstTensorMemFenceMeta
 *
 * Returns: (transfer full): "<kind>:<value>" (e.g. "egl:12"), or "none" for
 * an empty meta.
 *
 * Since: 0.1
 */
gchar *gst_tensor_mem_fence_meta_describe(GstTensorMemFenceMeta *meta) {
  g_return_val_if_fail(meta != nullptr, nullptr);
  return g_strdup(describe(meta).c_str());
}

/**
 * gst_buffer_has_tensor_mem_fence:
 * @buffer: a #GstBuffer
 *
 * Returns: %TRUE when @buffer carries at least one fence (empty metas do not
 * count).
 *
 * Since: 0.1
 */
gboolean gst_buffer_has_tensor_mem_fence(GstBuffer *buffer) {
  return gst_buffer_get_tensor_mem_fence_meta(buffer) != nullptr;
}

/**
 * gst_buffer_describe_tensor_mem_fences:
 * @buffer: a #GstBuffer
 *
 * Returns: (transfer full): the fences of @buffer, "<kind>:<value>" each,
 * separated by commas, or "none".
 *
 * Since: 0.1
 */
gchar *gst_buffer_describe_tensor_mem_fences(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  std::string out;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    if (!has_fence(as_fence(meta)))
      continue;
    if (!out.empty())
      out += ",";
    out += describe(as_fence(meta));
  }
  return g_strdup(out.empty() ? "none" : out.c_str());
}

/**
 * gst_buffer_wait_tensor_mem_fences:
 * @buffer: a #GstBuffer
 * @timeout_ns: the longest wait for all fences together, in nanoseconds
 * @waited: (out) (optional): how many fences were not satisfied before
 *   (each was waited for)
 * @error: a #GError, or %NULL
 *
 * Waits on the CPU for every fence of @buffer within one deadline; each that
 * signals is marked satisfied. What consumers that read the memory on the
 * CPU call before they read. A #GstGLSyncMeta on @buffer is waited for first
 * (gst_buffer_wait_tensor_mem_gl_sync_metas(), counted in @waited).
 *
 * Returns: %TRUE when all have signalled; %FALSE with @error naming the
 * first fence that did not.
 *
 * Since: 0.1
 */
gboolean gst_buffer_wait_tensor_mem_fences(GstBuffer *buffer, GstClockTime timeout_ns, guint *waited, GError **error) {
  return gst_buffer_wait_tensor_mem_fences_cancellable(buffer, timeout_ns, nullptr, waited, error);
}

/**
 * gst_buffer_wait_tensor_mem_fences_cancellable:
 * @buffer: a #GstBuffer
 * @timeout_ns: the longest wait for all fences together, in nanoseconds
 * @cancellable: (nullable): ends the wait early once cancelled
 * @waited: (out) (optional): how many fences were waited for
 * @error: a #GError, or %NULL
 *
 * gst_buffer_wait_tensor_mem_fences() that also returns within a few
 * milliseconds of @cancellable being cancelled, with %G_IO_ERROR_CANCELLED.
 *
 * Returns: %TRUE when all have signalled.
 *
 * Since: 0.1
 */
gboolean gst_buffer_wait_tensor_mem_fences_cancellable(GstBuffer *buffer, GstClockTime timeout_ns,
                                                       GCancellable *cancellable, guint *waited, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  // A GstGLSyncMeta (GstGL producers) first: GstGL bounds its own wait.
  const guint gl_waited = gst_buffer_wait_tensor_mem_gl_sync_metas(buffer);
  if (waited)
    *waited = gl_waited;
  // One deadline for all; capped like the core's waits so it cannot wrap.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::min<std::chrono::nanoseconds>(to_duration(timeout_ns), std::chrono::hours(24 * 365));
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *m = as_fence(meta);
    if (gst_tensor_mem_fence_meta_is_satisfied(m))
      continue;
    const auto left =
        std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
    const auto left_ns = static_cast<GstClockTime>(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
    if (!gst_tensor_mem_fence_meta_wait_cpu_cancellable(m, left_ns, cancellable, error))
      return FALSE;
    if (waited)
      ++*waited;
  }
  return TRUE;
}

/**
 * gst_tensor_mem_element_post_fence_error:
 * @element: the element that waited
 * @buffer: the buffer whose fence did not signal
 * @timeout_ns: the bound the wait had
 * @error: (nullable): the wait's error
 *
 * Posts the element error for a fence wait that failed
 * (%GST_RESOURCE_ERROR_BUSY): its text names the first fence of @buffer not
 * yet satisfied ("<kind>:<value>") and the bound, its debug detail is
 * @error's message (the timeline's own words).
 *
 * Returns: %GST_FLOW_ERROR.
 *
 * Since: 0.1
 */
GstFlowReturn gst_tensor_mem_element_post_fence_error(GstElement *element, GstBuffer *buffer, GstClockTime timeout_ns,
                                                      const GError *error) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), GST_FLOW_ERROR);
  std::string fence = "none";
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    if (!gst_tensor_mem_fence_meta_is_satisfied(as_fence(meta))) {
      fence = describe(as_fence(meta));
      break;
    }
  }
  GST_ELEMENT_ERROR(
      element, RESOURCE, BUSY,
      ("Fence %s of a buffer did not signal within %" GST_TIME_FORMAT ".", fence.c_str(), GST_TIME_ARGS(timeout_ns)),
      ("%s", error ? error->message : "the wait failed"));
  return GST_FLOW_ERROR;
}

/**
 * gst_tensor_mem_element_wait_fences:
 * @element: the element about to read @buffer
 * @buffer: a #GstBuffer
 * @timeout_ns: the longest wait for all fences of @buffer together
 * @cancellable: (nullable): the element's own, cancelled on flush-start and
 *   on PAUSED→READY (gst_tensor_mem_transform_watch_event(),
 *   gst_tensor_mem_transform_watch_state_change())
 * @waited: (out) (optional): how many fences were waited for
 *
 * gst_buffer_wait_tensor_mem_fences_cancellable() for an element: when a
 * fence does not signal in time it posts the element error of
 * gst_tensor_mem_element_post_fence_error(); when @cancellable ends the wait
 * nothing is posted and the buffer must not be passed on.
 *
 * Returns: %GST_FLOW_OK; %GST_FLOW_FLUSHING when the wait was cancelled;
 * %GST_FLOW_ERROR after the error was posted.
 *
 * Since: 0.1
 */
GstFlowReturn gst_tensor_mem_element_wait_fences(GstElement *element, GstBuffer *buffer, GstClockTime timeout_ns,
                                                 GCancellable *cancellable, guint *waited) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), GST_FLOW_ERROR);
  GError *error = nullptr;
  if (gst_buffer_wait_tensor_mem_fences_cancellable(buffer, timeout_ns, cancellable, waited, &error))
    return GST_FLOW_OK;
  if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    GST_DEBUG_OBJECT(element, "fence wait for %" GST_PTR_FORMAT " cancelled: %s", buffer, error->message);
    g_clear_error(&error);
    return GST_FLOW_FLUSHING;
  }
  const GstFlowReturn ret = gst_tensor_mem_element_post_fence_error(element, buffer, timeout_ns, error);
  g_clear_error(&error);
  return ret;
}

/**
 * gst_tensor_mem_transform_interrupt_waits:
 * @trans: a #GstBaseTransform that waits for fences on its streaming thread
 * @cancellable: the element's #GCancellable for those waits
 * @interrupt: %TRUE to release every wait now and refuse new ones, %FALSE to
 *   allow waiting again
 *
 * Cancels (or resets) @cancellable and sets the element's output pool
 * flushing (or not), so that a streaming thread blocked on a fence that
 * never signals, or on a pool buffer a reader still holds, returns
 * %GST_FLOW_FLUSHING within milliseconds. Elements call it through
 * gst_tensor_mem_transform_watch_event() and
 * gst_tensor_mem_transform_watch_state_change().
 *
 * Since: 0.1
 */
void gst_tensor_mem_transform_interrupt_waits(GstBaseTransform *trans, GCancellable *cancellable, gboolean interrupt) {
  g_return_if_fail(GST_IS_BASE_TRANSFORM(trans) && G_IS_CANCELLABLE(cancellable));
  GST_DEBUG_OBJECT(trans, "%s the streaming thread's waits", interrupt ? "interrupting" : "allowing");
  if (interrupt)
    g_cancellable_cancel(cancellable);
  else
    g_cancellable_reset(cancellable);
  if (GstBufferPool *pool = gst_base_transform_get_buffer_pool(trans)) {
    if (gst_buffer_pool_is_active(pool))
      gst_buffer_pool_set_flushing(pool, interrupt);
    gst_object_unref(pool);
  }
}

/**
 * gst_tensor_mem_transform_watch_event:
 * @trans: the element
 * @cancellable: the element's #GCancellable for its streaming-thread waits
 * @event: an event arriving on @trans's sink pad
 *
 * What an element's sink_event calls first: flush-start interrupts the
 * waits, flush-stop allows them again.
 *
 * Since: 0.1
 */
void gst_tensor_mem_transform_watch_event(GstBaseTransform *trans, GCancellable *cancellable, GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_START)
    gst_tensor_mem_transform_interrupt_waits(trans, cancellable, TRUE);
  else if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP)
    gst_tensor_mem_transform_interrupt_waits(trans, cancellable, FALSE);
}

/**
 * gst_tensor_mem_transform_watch_state_change:
 * @trans: the element
 * @cancellable: the element's #GCancellable for its streaming-thread waits
 * @transition: the transition about to be made
 *
 * What an element's change_state calls before chaining up: PAUSED→READY
 * interrupts the waits (the pads cannot be deactivated while the streaming
 * thread is blocked in one), READY→PAUSED allows them again.
 *
 * Since: 0.1
 */
void gst_tensor_mem_transform_watch_state_change(GstBaseTransform *trans, GCancellable *cancellable,
                                                 GstStateChange transition) {
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_tensor_mem_transform_interrupt_waits(trans, cancellable, TRUE);
  else if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_tensor_mem_transform_interrupt_waits(trans, cancellable, FALSE);
}
