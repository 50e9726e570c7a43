// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensormemory.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_tensor_buffer_pool_debug

G_DEFINE_TYPE_WITH_CODE(GstTensorBufferPool, gst_tensor_buffer_pool, GST_TYPE_VIDEO_BUFFER_POOL,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_buffer_pool_debug, "tensorbufferpool", 0,
                                                "tensor buffer pool"))

namespace {

constexpr guint kStrideAlignMask = GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN - 1;

/* Makes the config name a tensor allocator with at least the stride
 * alignment (so the video pool need not fix it up); FALSE when the asked
 * alignment is beyond what tensor memory guarantees. */
bool force_tensor_allocator(GstBufferPool *pool, GstStructure *config) {
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_buffer_pool_config_get_allocator(config, &allocator, &params);
  if (params.align > kStrideAlignMask) {
    GST_WARNING_OBJECT(pool, "alignment mask %" G_GSIZE_FORMAT " exceeds the %u-byte alignment of tensor memory",
                       params.align, GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN);
    return false;
  }
  params.align |= kStrideAlignMask;
  if (allocator && GST_IS_TENSOR_SYSTEM_ALLOCATOR(allocator)) {
    gst_buffer_pool_config_set_allocator(config, allocator, &params);
    return true;
  }
  if (allocator)
    GST_DEBUG_OBJECT(pool, "replacing allocator %" GST_PTR_FORMAT " with the tensor system allocator", allocator);
  GstAllocator *tensor_allocator = gst_tensor_system_allocator_get();
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
  if (!force_tensor_allocator(pool, config))
    return FALSE;

  // Merge with an alignment already asked for: its padding is kept, masks are widened to 64 bytes.
  GstVideoAlignment align;
  if (!gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT) ||
      !gst_buffer_pool_config_get_video_alignment(config, &align))
    gst_video_alignment_reset(&align);
  for (guint &mask : align.stride_align) {
    /* GstVideoBufferPool turns the largest stride mask into the allocation
     * alignment, and tensor memory guarantees 64 bytes, no more. */
    if (mask > kStrideAlignMask) {
      GST_WARNING_OBJECT(pool, "stride alignment mask %u exceeds the %u-byte alignment of tensor memory", mask,
                         GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN);
      return FALSE;
    }
    mask |= kStrideAlignMask;
  }
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  gst_buffer_pool_config_set_video_alignment(config, &align);

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

static void gst_tensor_buffer_pool_class_init(GstTensorBufferPoolClass *klass) {
  GST_BUFFER_POOL_CLASS(klass)->set_config = gst_tensor_buffer_pool_set_config;
}

static void gst_tensor_buffer_pool_init(GstTensorBufferPool *) {}

/**
 * gst_tensor_buffer_pool_new:
 *
 * A pool of video buffers in tensor memory. Whatever its config asks for, it
 * uses a tensor allocator and adds a #GstVideoMeta with every plane stride
 * aligned to %GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN bytes; read the config back
 * after gst_buffer_pool_set_config() for the resulting buffer size. The
 * config's caps must be raw video.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_buffer_pool_new(void) {
  auto *pool = static_cast<GstBufferPool *>(g_object_new(GST_TYPE_TENSOR_BUFFER_POOL, nullptr));
  gst_object_ref_sink(pool);
  return pool;
}
