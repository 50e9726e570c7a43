// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensorpbo.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_tensor_buffer_pool_debug

namespace {

struct GstTensorMemBufferPoolPrivate {
  GstTensorMemStorage storage; // SYSTEM, DMABUF or PBO, fixed at construction
  GstAllocator *pbo_allocator; // PBO: the GstTensorMemPboAllocator to use (owned); NULL until known
  /* Unpadded configs: the strides and offsets every buffer's meta carries,
   * from the core's image_layout (one layout engine for pool and core). */
  bool core_layout;
  tensormem::ImageLayout layout;
};

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemBufferPool, gst_tensor_buffer_pool, GST_TYPE_VIDEO_BUFFER_POOL,
                        G_ADD_PRIVATE(GstTensorMemBufferPool);
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_buffer_pool_debug, "tensormempool", 0, "tensor buffer pool"))

static GstTensorMemBufferPoolPrivate *pool_priv(GstBufferPool *pool) {
  return static_cast<GstTensorMemBufferPoolPrivate *>(
      gst_tensor_buffer_pool_get_instance_private(GST_TENSOR_BUFFER_POOL_CAST(pool)));
}

static GstTensorMemStorage pool_storage(GstBufferPool *pool) { return pool_priv(pool)->storage; }

namespace {

using gst_tensormem::max_align_mask;

constexpr guint kStrideAlignMask = GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN - 1;

const char *memory_name(GstTensorMemStorage storage) {
  switch (storage) {
  case GST_TENSOR_STORAGE_DMABUF: return "DMA-BUF";
  case GST_TENSOR_STORAGE_PBO: return "PBO";
  default: break;
  }
  return "system";
}

/* PBO memory has no process-wide allocator: each belongs to one GL worker.
 * The config's allocator wins when it is a PBO allocator (and is kept for
 * later configs), else the one the pool was made with. */
bool force_pbo_allocator(GstBufferPool *pool, GstStructure *config, GstAllocator *allocator,
                         GstAllocationParams *params) {
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  if (allocator && GST_IS_TENSOR_PBO_ALLOCATOR(allocator)) {
    if (priv->pbo_allocator != allocator)
      gst_object_replace(reinterpret_cast<GstObject **>(&priv->pbo_allocator), GST_OBJECT_CAST(allocator));
  } else if (!priv->pbo_allocator) {
    GST_WARNING_OBJECT(pool,
                       "a PBO pool needs a GstTensorMemPboAllocator, in its config or from "
                       "gst_tensor_buffer_pool_new_for_pbo(); config has %" GST_PTR_FORMAT,
                       allocator);
    return false;
  } else if (allocator) {
    GST_DEBUG_OBJECT(pool, "replacing allocator %" GST_PTR_FORMAT " with %" GST_PTR_FORMAT, allocator,
                     priv->pbo_allocator);
  }
  gst_buffer_pool_config_set_allocator(config, priv->pbo_allocator, params);
  return true;
}

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
  if (storage == GST_TENSOR_STORAGE_PBO)
    return force_pbo_allocator(pool, config, allocator, &params);
  const bool ours = allocator && (storage == GST_TENSOR_STORAGE_DMABUF ? GST_IS_TENSOR_DMABUF_ALLOCATOR(allocator)
                                                                       : GST_IS_TENSOR_SYSTEM_ALLOCATOR(allocator));
  if (ours) {
    gst_buffer_pool_config_set_allocator(config, allocator, &params);
    return true;
  }
  GstAllocator *tensor_allocator =
      storage == GST_TENSOR_STORAGE_DMABUF ? gst_tensor_dmabuf_allocator_get() : gst_tensor_system_allocator_get();
  if (allocator)
    GST_DEBUG_OBJECT(pool, "replacing allocator %" GST_PTR_FORMAT " with %" GST_PTR_FORMAT, allocator,
                     tensor_allocator);
  gst_buffer_pool_config_set_allocator(config, tensor_allocator, &params);
  gst_object_unref(tensor_allocator);
  return true;
}

} // namespace

static gboolean gst_tensor_buffer_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  GstCaps *caps = nullptr;
  guint size, min_buffers, max_buffers;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min_buffers, &max_buffers) || !caps) {
    GST_WARNING_OBJECT(pool, "config has no caps");
    return FALSE;
  }
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) {
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
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  gst_buffer_pool_config_set_video_alignment(config, &align);

  /* Without padding the frame layout is the core's: image_layout's strides
   * replace GStreamer's in every buffer's meta (alloc_buffer), and the buffer
   * size covers both. Padding asked for by a peer is only expressible in
   * GStreamer's terms, so padded configs keep gst_video_info_align's layout. */
  GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  priv->core_layout = false;
  tensormem::PixelFormat format;
  const bool padded = align.padding_top || align.padding_bottom || align.padding_left || align.padding_right;
  if (!padded && gst_tensor_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    auto layout = tensormem::image_layout(format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                                          GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN);
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
                       GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN);
    return FALSE;
  }
  if (aligned.size > G_MAXUINT) {
    GST_WARNING_OBJECT(pool, "aligned frame of %" G_GSIZE_FORMAT " bytes does not fit a pool config", aligned.size);
    return FALSE;
  }
  size = MAX(size, static_cast<guint>(aligned.size));
  GST_DEBUG_OBJECT(pool, "%" GST_PTR_FORMAT ": stride[0] %d, %u bytes per buffer", caps, aligned.stride[0], size);
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, max_buffers);

  return GST_BUFFER_POOL_CLASS(gst_tensor_buffer_pool_parent_class)->set_config(pool, config);
}

static GstFlowReturn gst_tensor_buffer_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                                         GstBufferPoolAcquireParams *params) {
  const GstFlowReturn ret =
      GST_BUFFER_POOL_CLASS(gst_tensor_buffer_pool_parent_class)->alloc_buffer(pool, buffer, params);
  const GstTensorMemBufferPoolPrivate *priv = pool_priv(pool);
  if (ret != GST_FLOW_OK)
    return ret;
  // Lets a copy asked of these memories be a share holding this buffer.
  gst_tensormem::link_pool_buffer(*buffer);
  if (!priv->core_layout)
    return ret;
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
  return ret;
}

static void gst_tensor_buffer_pool_dispose(GObject *object) {
  gst_clear_object(&pool_priv(GST_BUFFER_POOL_CAST(object))->pbo_allocator);
  G_OBJECT_CLASS(gst_tensor_buffer_pool_parent_class)->dispose(object);
}

static void gst_tensor_buffer_pool_class_init(GstTensorMemBufferPoolClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = gst_tensor_buffer_pool_dispose;
  GST_BUFFER_POOL_CLASS(klass)->set_config = gst_tensor_buffer_pool_set_config;
  GST_BUFFER_POOL_CLASS(klass)->alloc_buffer = gst_tensor_buffer_pool_alloc_buffer;
}

static void gst_tensor_buffer_pool_init(GstTensorMemBufferPool *self) {
  static_cast<GstTensorMemBufferPoolPrivate *>(gst_tensor_buffer_pool_get_instance_private(self))->storage =
      GST_TENSOR_STORAGE_SYSTEM;
}

/**
 * gst_tensor_buffer_pool_new:
 *
 * A pool of video buffers in tensor memory. Whatever its config asks for, it
 * uses a tensor allocator and adds a #GstVideoMeta with every plane stride
 * aligned to %GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN bytes; read the config back
 * after gst_buffer_pool_set_config() for the resulting buffer size. The
 * config's caps must be raw video.
 *
 * Returns: (transfer full): a new #GstBufferPool of system tensor memory.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_buffer_pool_new(void) {
  return gst_tensor_buffer_pool_new_for_storage(GST_TENSOR_STORAGE_SYSTEM);
}

/**
 * gst_tensor_buffer_pool_new_for_storage:
 * @storage: the storage of the buffers; %GST_TENSOR_STORAGE_AUTO is resolved
 *   with gst_tensor_storage_resolve()
 *
 * Like gst_tensor_buffer_pool_new(), for a chosen storage. With
 * %GST_TENSOR_STORAGE_DMABUF every buffer holds one memory of the DMA-BUF
 * tensor allocator (one fd per buffer), its #GstVideoMeta carrying the
 * 64-byte aligned strides and plane offsets; a #GstVideoAlignment in the
 * config is honoured (masks up to the page size). With
 * %GST_TENSOR_STORAGE_PBO the config must name a #GstTensorMemPboAllocator
 * (gst_buffer_pool_config_set_allocator()); gst_tensor_buffer_pool_new_for_pbo()
 * makes a pool that already has one.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_buffer_pool_new_for_storage(GstTensorMemStorage storage) {
  auto *pool = static_cast<GstBufferPool *>(g_object_new(GST_TYPE_TENSOR_BUFFER_POOL, nullptr));
  gst_object_ref_sink(pool);
  static_cast<GstTensorMemBufferPoolPrivate *>(
      gst_tensor_buffer_pool_get_instance_private(GST_TENSOR_BUFFER_POOL_CAST(pool)))
      ->storage = gst_tensor_storage_resolve(storage);
  return pool;
}

/**
 * gst_tensor_buffer_pool_new_for_pbo:
 * @allocator: a #GstTensorMemPboAllocator (gst_tensor_pbo_allocator_new())
 *
 * A pool of video buffers in OpenGL PBO memory of @allocator's GL worker:
 * one GL buffer per pool buffer, a #GstVideoMeta with every plane stride
 * aligned to %GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN bytes. A PBO allocator in
 * a later config replaces @allocator.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_buffer_pool_new_for_pbo(GstAllocator *allocator) {
  g_return_val_if_fail(GST_IS_TENSOR_PBO_ALLOCATOR(allocator), nullptr);
  GstBufferPool *pool = gst_tensor_buffer_pool_new_for_storage(GST_TENSOR_STORAGE_PBO);
  pool_priv(pool)->pbo_allocator = GST_ALLOCATOR_CAST(gst_object_ref(allocator));
  return pool;
}

/**
 * gst_tensor_buffer_pool_get_storage:
 * @pool: a #GstTensorMemBufferPool
 *
 * Returns: the storage of @pool's buffers (never %GST_TENSOR_STORAGE_AUTO).
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_buffer_pool_get_storage(GstBufferPool *pool) {
  g_return_val_if_fail(GST_IS_TENSOR_BUFFER_POOL(pool), GST_TENSOR_STORAGE_AUTO);
  return pool_storage(pool);
}
