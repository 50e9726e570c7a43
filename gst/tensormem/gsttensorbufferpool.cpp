// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbufferpool.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbufferpool-private.h>
#include <gst/tensormem/gsttensorcancel-private.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorformat.hpp>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_buffer_pool_debug

namespace {

struct GstTensorMemBufferPoolPrivate {
  GstTensorMemStorage storage;    // fixed at construction (D3D11: the subclass in gsttensord3d11.cpp)
  GstAllocator *device_allocator; // a family with a device (PBO): the allocator to use (owned); NULL until known
  /* Unpadded configs: the strides and offsets every buffer's meta carries,
   * from the core's image_layout (one layout engine for pool and core). */
  bool core_layout;
  tensormem::ImageLayout layout;
  /* GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META: every buffer keeps one
   * (pooled) fence meta. */
  bool fence_meta;
  GstClockTime fence_timeout; // bound on acquire's wait for a recycled buffer's fences
  std::atomic<guint64> fence_waits;
  std::atomic<guint64> fence_timeouts;
  std::atomic<guint64> read_waits;    // recycled buffers acquire waited for because a reader was still reading
  std::atomic<guint64> read_timeouts; // ... whose reader did not finish within the fence timeout
  /* Cancelled while the pool is flushing (gst_buffer_pool_set_flushing(),
   * and deactivation): acquire's fence and reader waits then end at once with
   * GST_FLOW_FLUSHING, so the element acquiring can be stopped. */
  GCancellable *flushing;
  std::atomic<guint64> buffers; // allocated and not yet freed (alloc_buffer - free_buffer)
};

// gst_tensor_mem_buffer_pool_get_live_stats(): over every pool of this process.
std::atomic<guint64> g_live_pools{0};
std::atomic<guint64> g_live_buffers{0};

enum { PROP_0, PROP_FENCE_WAITS, PROP_FENCE_TIMEOUTS, PROP_READ_WAITS, PROP_READ_TIMEOUTS, PROP_STATS };

constexpr const char *kFenceTimeoutField = "tensormem-fence-timeout";

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemBufferPool, gst_tensor_mem_buffer_pool, GST_TYPE_VIDEO_BUFFER_POOL,
                        G_ADD_PRIVATE(GstTensorMemBufferPool);
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_buffer_pool_debug, "tensormempool", 0,
                                                "tensor buffer pool"))

static GstTensorMemBufferPoolPrivate *pool_priv(GstBufferPool *pool) {
  return static_cast<GstTensorMemBufferPoolPrivate *>(
      gst_tensor_mem_buffer_pool_get_instance_private(GST_TENSOR_MEM_BUFFER_POOL_CAST(pool)));
}

static GstTensorMemStorage pool_storage(GstBufferPool *pool) { return pool_priv(pool)->storage; }

namespace {

using gst_tensormem::max_align_mask;

constexpr guint kStrideAlignMask = GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN - 1;

/* Kept by the pool's reset_buffer (GST_META_FLAG_SET does not compile as C++). */
void mark_pooled(GstMeta *meta) { meta->flags = static_cast<GstMetaFlags>(meta->flags | GST_META_FLAG_POOLED); }

const char *memory_name(GstTensorMemStorage storage) { return gst_tensormem::backend_for(storage).memory_name; }

/* Makes the config name the tensor allocator of the pool's storage with at
 * least the stride alignment (so the video pool need not fix it up); FALSE
 * when the asked alignment is beyond what that memory guarantees. */
bool force_tensor_allocator(GstBufferPool *pool, GstTensorMemStorage storage, GstStructure *config) {
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_buffer_pool_config_get_allocator(config, &allocator, &params);
  if (params.align > max_align_mask(storage)) {
    GST_WARNING_OBJECT(
        pool, "alignment mask %" G_GSIZE_FORMAT " exceeds the %" G_GSIZE_FORMAT "-byte alignment of %s tensor memory",
        params.align, max_align_mask(storage) + 1, memory_name(storage));
    return false;
  }
  params.align |= kStrideAlignMask;
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  const gst_tensormem::Backend &backend = gst_tensormem::backend_for(storage);
  if (backend.ensure_device) // no process-wide allocator: the device's
    return gst_tensormem::pool_force_device_allocator(pool, config, allocator, &params, backend.allocator_type(),
                                                      &priv->device_allocator, backend.memory_name);
  if (allocator && G_TYPE_CHECK_INSTANCE_TYPE(allocator, backend.allocator_type())) {
    gst_buffer_pool_config_set_allocator(config, allocator, &params);
    return true;
  }
  GstAllocator *tensor_allocator = backend.new_allocator(nullptr);
  if (allocator)
    GST_DEBUG_OBJECT(pool, "replacing allocator %" GST_PTR_FORMAT " with %" GST_PTR_FORMAT, allocator,
                     tensor_allocator);
  gst_buffer_pool_config_set_allocator(config, tensor_allocator, &params);
  gst_object_unref(tensor_allocator);
  return true;
}

} // namespace

namespace gst_tensormem {

/* PBO and D3D11 memory have no process-wide allocator: each belongs to one
 * GL worker or D3D11 device. */
bool pool_force_device_allocator(GstBufferPool *pool, GstStructure *config, GstAllocator *allocator,
                                 GstAllocationParams *params, GType type, GstAllocator **slot, const char *what) {
  if (allocator && G_TYPE_CHECK_INSTANCE_TYPE(allocator, type)) {
    if (*slot != allocator)
      gst_object_replace(reinterpret_cast<GstObject **>(slot), GST_OBJECT_CAST(allocator));
  } else if (!*slot) {
    GST_WARNING_OBJECT(pool, "a %s pool needs a %s, in its config or from its constructor; config has %" GST_PTR_FORMAT,
                       what, g_type_name(type), allocator);
    return false;
  } else if (allocator) {
    GST_DEBUG_OBJECT(pool, "replacing allocator %" GST_PTR_FORMAT " with %" GST_PTR_FORMAT, allocator, *slot);
  }
  gst_buffer_pool_config_set_allocator(config, *slot, params);
  return true;
}

void pool_set_storage(GstBufferPool *pool, GstTensorMemStorage storage) { pool_priv(pool)->storage = storage; }

void pool_set_device_allocator(GstBufferPool *pool, GstAllocator *allocator) {
  gst_object_replace(reinterpret_cast<GstObject **>(&pool_priv(pool)->device_allocator), GST_OBJECT_CAST(allocator));
}

gboolean pool_set_config_unaligned(GstBufferPool *pool, GstStructure *config) {
  GstBufferPoolClass *grandparent =
      GST_BUFFER_POOL_CLASS(g_type_class_peek_parent(gst_tensor_mem_buffer_pool_parent_class));
  return grandparent->set_config(pool, config);
}

void pool_read_fence_config(GstBufferPool *pool, GstStructure *config) {
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  priv->fence_meta = gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META);
  guint64 timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT;
  gst_structure_get_uint64(config, kFenceTimeoutField, &timeout);
  priv->fence_timeout = timeout;
}

} // namespace gst_tensormem

static gboolean gst_tensor_mem_buffer_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  GstCaps *caps = nullptr;
  guint size, min_buffers, max_buffers;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min_buffers, &max_buffers) || !caps) {
    GST_WARNING_OBJECT(pool, "config has no caps");
    return FALSE;
  }
  GstVideoInfo info;
  if (!gst_tensor_mem_video_info_from_caps(&info, caps, nullptr)) {
    GST_WARNING_OBJECT(pool, "caps %" GST_PTR_FORMAT " do not describe raw video", caps);
    return FALSE;
  }
  const GstTensorMemStorage storage = pool_storage(pool);
  if (!force_tensor_allocator(pool, storage, config))
    return FALSE;

  /* Merge with an alignment already asked for: its padding is kept, masks
   * are widened to 64 bytes (wider masks are kept where the memory's own
   * alignment allows them: DMA-BUF memory is page aligned). */
  GstVideoAlignment align;
  if (!gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT) ||
      !gst_buffer_pool_config_get_video_alignment(config, &align))
    gst_video_alignment_reset(&align);
  for (guint &mask : align.stride_align) {
    /* GstVideoBufferPool turns the largest stride mask into the allocation
     * alignment, and tensor memory guarantees 64 bytes, no more. */
    if (mask > max_align_mask(storage)) {
      GST_WARNING_OBJECT(pool,
                         "stride alignment mask %u exceeds the %" G_GSIZE_FORMAT "-byte alignment of tensor memory",
                         mask, max_align_mask(storage) + 1);
      return FALSE;
    }
    mask |= kStrideAlignMask;
  }
  gst_tensormem::pool_read_fence_config(pool, config);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  gst_buffer_pool_config_set_video_alignment(config, &align);

  /* Without padding the frame layout is the core's: image_layout's strides
   * replace GStreamer's in every buffer's meta (alloc_buffer), and the buffer
   * size covers both. Padding is asked for by decoders, which require our
   * strides to equal those of their own GstVideoBufferPool (gst-libav
   * compares them before it renders into a downstream pool), so padded
   * configs keep gst_video_info_align's layout (docs/architecture-details.md). */
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  priv->core_layout = false;
  tensormem::PixelFormat format;
  const bool padded = align.padding_top || align.padding_bottom || align.padding_left || align.padding_right;
  if (!padded && gst_tensor_mem_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    auto layout = tensormem::image_layout(format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                                          GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN);
    if (!layout) {
      GST_WARNING_OBJECT(pool, "%" GST_PTR_FORMAT ": %s", caps, layout.error().message().c_str());
      return FALSE;
    }
    if (layout->size > G_MAXUINT) {
      GST_WARNING_OBJECT(pool, "frame of %" G_GSIZE_FORMAT " bytes does not fit a pool config", layout->size);
      return FALSE;
    }
    priv->layout = *layout;
    priv->core_layout = true;
    size = MAX(size, static_cast<guint>(layout->size));
  }

  GstVideoInfo aligned = info;
  if (!gst_video_info_align(&aligned, &align)) {
    GST_WARNING_OBJECT(pool, "cannot align %" GST_PTR_FORMAT " to %u-byte strides", caps,
                       GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN);
    return FALSE;
  }
  if (aligned.size > G_MAXUINT) {
    GST_WARNING_OBJECT(pool, "aligned frame of %" G_GSIZE_FORMAT " bytes does not fit a pool config", aligned.size);
    return FALSE;
  }
  size = MAX(size, static_cast<guint>(aligned.size));
  GST_DEBUG_OBJECT(pool, "%" GST_PTR_FORMAT ": stride[0] %d, %u bytes per buffer", caps, aligned.stride[0], size);
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, max_buffers);

  return GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->set_config(pool, config);
}

static GstFlowReturn gst_tensor_mem_buffer_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                                             GstBufferPoolAcquireParams *params) {
  const GstFlowReturn ret =
      GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->alloc_buffer(pool, buffer, params);
  if (ret != GST_FLOW_OK)
    return ret;
  const GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  if (priv->core_layout) {
    GstVideoMeta *meta = gst_buffer_get_video_meta(*buffer);
    if (!meta || meta->n_planes != priv->layout.n_planes) {
      GST_ERROR_OBJECT(pool, "buffer without the video meta of %u planes the layout needs", priv->layout.n_planes);
      gst_buffer_unref(*buffer);
      *buffer = nullptr;
      return GST_FLOW_ERROR;
    }
    for (guint p = 0; p < meta->n_planes; ++p) {
      meta->stride[p] = static_cast<gint>(priv->layout.stride[p]);
      meta->offset[p] = priv->layout.offset[p];
    }
  }
  return gst_tensormem::pool_adopt_buffer(pool, buffer);
}

namespace gst_tensormem {

GstFlowReturn pool_adopt_buffer(GstBufferPool *pool, GstBuffer **buffer) {
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  priv->buffers++;
  g_live_buffers++;
  // Lets a copy asked of these memories be a share holding this buffer.
  link_pool_buffer(*buffer);
  if (priv->fence_meta) {
    GstTensorMemFenceMeta *fence = gst_buffer_add_tensor_mem_fence_meta_empty(*buffer);
    mark_pooled(&fence->meta);
  }
  return GST_FLOW_OK;
}

} // namespace gst_tensormem

/* Recycling rule: a buffer comes back whenever its last reference goes, also
 * when a consumer dropped it before the GPU finished writing it. Its
 * unsignalled fences are kept (pooled) here, without waiting, so that the
 * releasing thread is never blocked; acquire_buffer() waits for them before
 * a producer may write into the memory again. */
static void gst_tensor_mem_buffer_pool_reset_buffer(GstBufferPool *pool, GstBuffer *buffer) {
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *fence = reinterpret_cast<GstTensorMemFenceMeta *>(meta);
    if (!gst_tensor_mem_fence_meta_is_signalled(fence))
      mark_pooled(meta);
    else if (GST_META_FLAG_IS_SET(meta, GST_META_FLAG_POOLED))
      gst_tensor_mem_fence_meta_clear(fence); // an idle buffer holds no timeline or fd
  }
  GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->reset_buffer(pool, buffer);
}

/* After the wait: one empty meta stays with the fence-meta option, the rest go. */
static void drop_fences(GstTensorMemBufferPoolPrivate *priv, GstBuffer *buffer) {
  std::vector<GstMeta *> extra;
  bool kept = !priv->fence_meta;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    if (kept) {
      extra.push_back(meta);
      continue;
    }
    gst_tensor_mem_fence_meta_clear(reinterpret_cast<GstTensorMemFenceMeta *>(meta));
    kept = true;
  }
  for (GstMeta *meta : extra)
    gst_buffer_remove_meta(buffer, meta);
}

/* Gives a recycled buffer back to the pool instead of out: queued again
 * (DONTWAIT), or freed when `discard` (what it holds cannot be reused). */
static void put_back(GstBufferPool *pool, GstBuffer **buffer, bool discard) {
  if (discard)
    GST_BUFFER_FLAG_SET(*buffer, GST_BUFFER_FLAG_TAG_MEMORY); // freed by release, not queued again
  // Not ours to unref yet (GstBufferPool sets buffer->pool after this returns).
  GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->release_buffer(pool, *buffer);
  *buffer = nullptr;
}

/* Hands out a recycled buffer only once every reader that recorded a read of
 * its memory (gst_buffer_begin_tensor_mem_read()) has finished, so a
 * producer never overwrites a frame an inference step still reads: a
 * bounded CPU wait like the fences', or GST_FLOW_EOS at once with
 * GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT. A buffer whose reader does not
 * finish in time leaves the pool and the acquire fails. */
static GstFlowReturn wait_for_readers(GstBufferPool *pool, GstBuffer **buffer, GstBufferPoolAcquireParams *params) {
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  std::vector<tensormem::Storage *> read; // owned by *buffer's memories, which stay put while we wait
  std::string failure;
  for (guint i = 0; i < gst_buffer_n_memory(*buffer) && failure.empty(); ++i) {
    const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(*buffer, i));
    if (!tensor)
      continue;
    tensormem::Result<std::vector<tensormem::GpuCompletion>> running = tensor->storage()->pending_reads();
    if (!running)
      failure = running.error().message();
    else if (!running->empty())
      read.push_back(tensor->storage().get());
  }
  if (read.empty() && failure.empty())
    return GST_FLOW_OK;
  if (failure.empty() && params && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT)) {
    put_back(pool, buffer, false);
    return GST_FLOW_EOS;
  }
  const auto bound = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min<GstClockTime>(
      priv->fence_timeout, static_cast<GstClockTime>(std::chrono::nanoseconds(std::chrono::hours(24 * 365)).count()))));
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (tensormem::Storage *storage : read) {
    if (!failure.empty())
      break;
    const auto left =
        std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
    const gst_tensormem::CancellableWait cancel(priv->flushing);
    tensormem::Result<std::size_t> waited =
        storage->wait_for_reads(std::chrono::duration_cast<std::chrono::nanoseconds>(left), cancel.get());
    if (!waited && waited.error().kind() == tensormem::ErrorKind::Cancelled) {
      put_back(pool, buffer, false); // the reader still holds it; recycled as usual later
      return GST_FLOW_FLUSHING;
    }
    if (!waited)
      failure = waited.error().message();
  }
  if (!failure.empty()) {
    priv->read_timeouts++;
    GST_WARNING_OBJECT(pool, "recycled buffer %p not handed out, a reader of its memory did not finish: %s", *buffer,
                       failure.c_str());
    put_back(pool, buffer, true);
    return GST_FLOW_ERROR;
  }
  priv->read_waits++;
  return GST_FLOW_OK;
}

/* Hands out a recycled buffer only once every fence it came back with has
 * signalled: a bounded CPU wait (the config's fence timeout, 5 s by
 * default), or at once GST_FLOW_EOS (what GstBufferPool answers for "would
 * block") with GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT.
 * A buffer whose fence does not signal in time is never handed out: it
 * leaves the pool (freed; the GL driver keeps a deleted buffer alive for
 * queued commands) and the acquire fails naming the fence. */
static GstFlowReturn gst_tensor_mem_buffer_pool_acquire_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                                               GstBufferPoolAcquireParams *params) {
  GstFlowReturn ret =
      GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->acquire_buffer(pool, buffer, params);
  if (ret != GST_FLOW_OK)
    return ret;
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  bool pending = false;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(*buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE))
    pending = pending || !gst_tensor_mem_fence_meta_is_signalled(reinterpret_cast<GstTensorMemFenceMeta *>(meta));
  if (pending && params && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT)) {
    put_back(pool, buffer, false); // fences kept
    return GST_FLOW_EOS;
  }
  if (pending) {
    GError *error = nullptr;
    if (!gst_buffer_wait_tensor_mem_fences_cancellable(*buffer, priv->fence_timeout, priv->flushing, nullptr, &error)) {
      if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_clear_error(&error);
        put_back(pool, buffer, false); // fences kept
        return GST_FLOW_FLUSHING;
      }
      priv->fence_timeouts++;
      GST_WARNING_OBJECT(pool, "recycled buffer %p not handed out, its GPU write never completed: %s", *buffer,
                         error->message);
      g_clear_error(&error);
      put_back(pool, buffer, true);
      return GST_FLOW_ERROR;
    }
    priv->fence_waits++;
  }
  drop_fences(priv, *buffer);
  return wait_for_readers(pool, buffer, params);
}

static void gst_tensor_mem_buffer_pool_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  GstTensorMemBufferPoolPrivate *priv = pool_priv(GST_BUFFER_POOL_CAST(object));
  switch (prop_id) {
  case PROP_FENCE_WAITS: g_value_set_uint64(value, priv->fence_waits.load()); break;
  case PROP_FENCE_TIMEOUTS: g_value_set_uint64(value, priv->fence_timeouts.load()); break;
  case PROP_READ_WAITS: g_value_set_uint64(value, priv->read_waits.load()); break;
  case PROP_READ_TIMEOUTS: g_value_set_uint64(value, priv->read_timeouts.load()); break;
  case PROP_STATS:
    g_value_take_boxed(
        value, gst_structure_new("tensormem-pool-stats", "fence-waits", G_TYPE_UINT64, priv->fence_waits.load(),
                                 "fence-timeouts", G_TYPE_UINT64, priv->fence_timeouts.load(), "read-waits",
                                 G_TYPE_UINT64, priv->read_waits.load(), "read-timeouts", G_TYPE_UINT64,
                                 priv->read_timeouts.load(), "buffers", G_TYPE_UINT64, priv->buffers.load(), nullptr));
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_mem_buffer_pool_dispose(GObject *object) {
  gst_clear_object(&pool_priv(GST_BUFFER_POOL_CAST(object))->device_allocator);
  G_OBJECT_CLASS(gst_tensor_mem_buffer_pool_parent_class)->dispose(object);
}

static void gst_tensor_mem_buffer_pool_flush_start(GstBufferPool *pool) {
  g_cancellable_cancel(pool_priv(pool)->flushing);
  if (auto flush_start = GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->flush_start)
    flush_start(pool);
}

static void gst_tensor_mem_buffer_pool_flush_stop(GstBufferPool *pool) {
  g_cancellable_reset(pool_priv(pool)->flushing);
  if (auto flush_stop = GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->flush_stop)
    flush_stop(pool);
}

static void gst_tensor_mem_buffer_pool_free_buffer(GstBufferPool *pool, GstBuffer *buffer) {
  pool_priv(pool)->buffers--;
  g_live_buffers--;
  GST_BUFFER_POOL_CLASS(gst_tensor_mem_buffer_pool_parent_class)->free_buffer(pool, buffer);
}

static void gst_tensor_mem_buffer_pool_finalize(GObject *object) {
  g_live_pools--;
  g_clear_object(&pool_priv(GST_BUFFER_POOL_CAST(object))->flushing);
  G_OBJECT_CLASS(gst_tensor_mem_buffer_pool_parent_class)->finalize(object);
}

static void gst_tensor_mem_buffer_pool_class_init(GstTensorMemBufferPoolClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_mem_buffer_pool_finalize;
  GST_BUFFER_POOL_CLASS(klass)->flush_start = gst_tensor_mem_buffer_pool_flush_start;
  GST_BUFFER_POOL_CLASS(klass)->flush_stop = gst_tensor_mem_buffer_pool_flush_stop;
  G_OBJECT_CLASS(klass)->dispose = gst_tensor_mem_buffer_pool_dispose;
  G_OBJECT_CLASS(klass)->get_property = gst_tensor_mem_buffer_pool_get_property;
  GST_BUFFER_POOL_CLASS(klass)->reset_buffer = gst_tensor_mem_buffer_pool_reset_buffer;
  GST_BUFFER_POOL_CLASS(klass)->acquire_buffer = gst_tensor_mem_buffer_pool_acquire_buffer;
  g_object_class_install_property(
      G_OBJECT_CLASS(klass), PROP_FENCE_WAITS,
      g_param_spec_uint64("fence-waits", "Fence waits",
                          "Recycled buffers acquire had to wait for, because a fence they came back with had not "
                          "signalled",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      G_OBJECT_CLASS(klass), PROP_FENCE_TIMEOUTS,
      g_param_spec_uint64("fence-timeouts", "Fence timeouts",
                          "Recycled buffers taken out of the pool because a fence did not signal within the fence "
                          "timeout",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      G_OBJECT_CLASS(klass), PROP_READ_WAITS,
      g_param_spec_uint64("read-waits", "Read waits",
                          "Recycled buffers acquire had to wait for, because a reader of their memory "
                          "(gst_buffer_begin_tensor_mem_read) had not finished",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      G_OBJECT_CLASS(klass), PROP_READ_TIMEOUTS,
      g_param_spec_uint64("read-timeouts", "Read timeouts",
                          "Recycled buffers taken out of the pool because a reader of their memory did not finish "
                          "within the fence timeout",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      G_OBJECT_CLASS(klass), PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "The recycling counters in one structure (tensormem-pool-stats: fence-waits, "
                         "fence-timeouts, read-waits, read-timeouts; buffers: allocated and not yet freed)",
                         GST_TYPE_STRUCTURE, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  GST_BUFFER_POOL_CLASS(klass)->set_config = gst_tensor_mem_buffer_pool_set_config;
  GST_BUFFER_POOL_CLASS(klass)->alloc_buffer = gst_tensor_mem_buffer_pool_alloc_buffer;
  GST_BUFFER_POOL_CLASS(klass)->free_buffer = gst_tensor_mem_buffer_pool_free_buffer;
}

static void gst_tensor_mem_buffer_pool_init(GstTensorMemBufferPool *self) {
  auto *priv = static_cast<GstTensorMemBufferPoolPrivate *>(gst_tensor_mem_buffer_pool_get_instance_private(self));
  priv->storage = GST_TENSOR_MEM_STORAGE_SYSTEM;
  priv->fence_meta = false;
  priv->fence_timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT;
  priv->fence_waits = 0;
  priv->fence_timeouts = 0;
  priv->read_waits = 0;
  priv->read_timeouts = 0;
  priv->flushing = g_cancellable_new();
  priv->buffers = 0;
  g_live_pools++;
}

/**
 * gst_tensor_mem_buffer_pool_get_live_stats:
 * @pools: (out) (optional): tensor buffer pools alive in this process
 * @buffers: (out) (optional): buffers those pools have allocated and not
 *   freed yet, whether in the pool or out in a pipeline
 *
 * For leak checks (the soak, tests/soak, samples them): a steady pipeline
 * holds a steady number of pools and buffers; a pool or buffer that is never
 * released keeps counting. The `stats` property has one pool's `buffers`.
 *
 * Since: 0.1
 */
void gst_tensor_mem_buffer_pool_get_live_stats(guint64 *pools, guint64 *buffers) {
  if (pools)
    *pools = g_live_pools.load();
  if (buffers)
    *buffers = g_live_buffers.load();
}

/**
 * gst_tensor_mem_buffer_pool_new:
 *
 * A pool of video buffers in tensor memory. Whatever its config asks for, it
 * uses a tensor allocator and adds a #GstVideoMeta with every plane stride
 * aligned to %GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN bytes; read the config back
 * after gst_buffer_pool_set_config() for the resulting buffer size. The
 * config's caps must be raw video.
 *
 * Returns: (transfer full): a new #GstBufferPool of system tensor memory.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_mem_buffer_pool_new(void) {
  return gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_SYSTEM);
}

/**
 * gst_tensor_mem_buffer_pool_new_for_storage:
 * @storage: the storage of the buffers; %GST_TENSOR_MEM_STORAGE_AUTO is resolved
 *   with gst_tensor_mem_storage_resolve()
 *
 * Like gst_tensor_mem_buffer_pool_new(), for a chosen storage. With
 * %GST_TENSOR_MEM_STORAGE_DMABUF every buffer holds one memory of the DMA-BUF
 * tensor allocator (one fd per buffer), its #GstVideoMeta carrying the
 * 64-byte aligned strides and plane offsets; a #GstVideoAlignment in the
 * config is honoured (masks up to the page size). With
 * %GST_TENSOR_MEM_STORAGE_PBO the config must name a #GstTensorMemPboAllocator
 * (gst_buffer_pool_config_set_allocator()); gst_tensor_mem_buffer_pool_new_for_pbo()
 * makes a pool that already has one.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_storage(GstTensorMemStorage storage) {
  storage = gst_tensor_mem_storage_resolve(storage);
  // A family with its own pool subclass (D3D11 textures) names it in the table.
  const gst_tensormem::Backend &backend = gst_tensormem::backend_for(storage);
  const GType type = backend.pool_type ? backend.pool_type() : GST_TYPE_TENSOR_MEM_BUFFER_POOL;
  auto *pool = static_cast<GstBufferPool *>(g_object_new(type, nullptr));
  gst_object_ref_sink(pool);
  gst_tensormem::pool_set_storage(pool, storage);
  return pool;
}

/**
 * gst_tensor_mem_buffer_pool_get_storage:
 * @pool: a #GstTensorMemBufferPool
 *
 * Returns: the storage of @pool's buffers (never %GST_TENSOR_MEM_STORAGE_AUTO).
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_mem_buffer_pool_get_storage(GstBufferPool *pool) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_BUFFER_POOL(pool), GST_TENSOR_MEM_STORAGE_AUTO);
  return pool_storage(pool);
}

/**
 * gst_tensor_mem_buffer_pool_config_set_fence_timeout:
 * @config: a #GstBufferPool config
 * @timeout: the longest wait, in nanoseconds, for the fences a recycled
 *   buffer came back with before it is handed out again
 *
 * Since: 0.1
 */
void gst_tensor_mem_buffer_pool_config_set_fence_timeout(GstStructure *config, GstClockTime timeout) {
  g_return_if_fail(config != nullptr);
  gst_structure_set(config, kFenceTimeoutField, G_TYPE_UINT64, static_cast<guint64>(timeout), nullptr);
}
