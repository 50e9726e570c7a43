// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensordownloader.h>

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensorframecopy-private.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensormethodtable-private.h>
#include <gst/tensormem/gsttensorpbo.h>
#include <gst/video/video.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_downloader_debug);
#define GST_CAT_DEFAULT gst_tensor_downloader_debug

namespace gst_tensormem {

namespace {

/* Buffers the copy pool keeps ready; it grows past them only while
 * downstream holds every one, and recycles them as they come back. */
constexpr guint kCopyPoolMinBuffers = 2;

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_downloader_debug, "tensormemdownloader", 0,
                            "download paths out of tensor memory");
    g_once_init_leave(&done, 1);
  }
}

/* The caps feature of structure `i` when it names a family whose memory
 * the CPU reads as it is (DMA-BUF): such memory passes through download
 * keeping its feature. NULL otherwise. */
const char *passing_feature(GstCaps *caps, guint i) {
  const Backend *family = backend_of_caps(caps, i);
  return family && family->caps_feature && family->maps_as_system ? family->caps_feature : nullptr;
}

void append_with_feature(GstCaps *out, GstCaps *caps, guint i, const char *feature) {
  gst_caps_append_structure_full(out, gst_structure_copy(gst_caps_get_structure(caps, i)),
                                 feature ? gst_caps_features_new(feature, nullptr) : nullptr);
}

/* True when `buffer`'s planes sit where `info` (the default layout for the
 * caps) puts them, so a reader that ignores GstVideoMeta reads it right. */
bool has_default_layout(GstBuffer *buffer, const GstVideoInfo *info) {
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  if (!meta)
    return true;
  if (meta->n_planes != static_cast<guint>(GST_VIDEO_INFO_N_PLANES(info)) ||
      meta->width != static_cast<guint>(GST_VIDEO_INFO_WIDTH(info)) ||
      meta->height != static_cast<guint>(GST_VIDEO_INFO_HEIGHT(info)))
    return false;
  for (guint i = 0; i < meta->n_planes; ++i) {
    if (meta->offset[i] != GST_VIDEO_INFO_PLANE_OFFSET(info, i) ||
        meta->stride[i] != GST_VIDEO_INFO_PLANE_STRIDE(info, i))
      return false;
  }
  return true;
}

gboolean propose_nothing(const DownloadContext &, GstQuery *) { return FALSE; }

/* ---- DMA-BUF pass-through: downstream took memory:DMABuf caps ---- */

gboolean dmabuf_accept(const DownloadContext &ctx, GstBuffer *) { return ctx.output_dmabuf; }

/* memory:DMABuf downstream wants these very fds; a consumer of DMA-BUF caps
 * reads GstVideoMeta (DMA-BUF layouts are padded as a rule). */
GstFlowReturn dmabuf_perform(const DownloadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *) {
  for (guint i = 0; i < gst_buffer_n_memory(in); ++i) {
    if (!gst_is_dmabuf_memory(gst_buffer_peek_memory(in, i))) {
      GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("memory:DMABuf caps on a buffer that is not DMA-BUF."),
                        ("memory %u of %" GST_PTR_FORMAT " is not DMA-BUF memory", i, in));
      return GST_FLOW_ERROR;
    }
  }
  GST_LOG_OBJECT(ctx.element, "passing DMA-BUF %" GST_PTR_FORMAT " through", in);
  *out = in;
  return GST_FLOW_OK;
}

/* ---- pass-through: memory a CPU consumer maps as it is ----
 *
 * System, DMA-BUF and PBO tensor memory all map through gst_memory_map (a
 * PBO map runs on its GL worker), so the buffer itself goes downstream under
 * plain caps, as gldownload hands on GL memory. It only has to be in a
 * layout the consumer reads. */

gboolean mappable_accept(const DownloadContext &ctx, GstBuffer *in) {
  return ctx.downstream_video_meta || has_default_layout(in, ctx.info);
}

/* Any layout is welcome upstream: one the consumer cannot read is copied. */
gboolean mappable_propose(const DownloadContext &, GstQuery *query) {
  if (gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr))
    return FALSE;
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

GstFlowReturn mappable_perform(const DownloadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *) {
  GST_LOG_OBJECT(ctx.element, "passing %" GST_PTR_FORMAT " through", in);
  *out = in;
  return GST_FLOW_OK;
}

/* ---- copy: a layout downstream cannot read, into the default one ---- */

gboolean copy_accept(const DownloadContext &, GstBuffer *) { return TRUE; }

GstFlowReturn copy_perform(const DownloadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *copied) {
  const GstFlowReturn ret = copy_frame_into_pool(ctx.element, ctx.copy_pool, ctx.info, in, out, ctx.copy_metadata);
  if (ret == GST_FLOW_OK)
    *copied = GST_VIDEO_INFO_SIZE(ctx.info);
  return ret;
}

const DownloadMethod kMethods[] = {
    {"dmabuf-pass-through", FALSE, dmabuf_accept, propose_nothing, dmabuf_perform},
    {"pass-through", FALSE, mappable_accept, mappable_propose, mappable_perform},
    {"copy", TRUE, copy_accept, propose_nothing, copy_perform},
};

} // namespace

const DownloadMethod &download_method_for(const DownloadContext &ctx, GstBuffer *in) {
  ensure_debug_category();
  return first_accepting(kMethods, ctx, in);
}

gboolean download_propose_allocation(const DownloadContext &ctx, GstQuery *query) {
  ensure_debug_category();
  return propose_all(kMethods, ctx, query);
}

GstCaps *download_transform_caps(GstPadDirection direction, GstCaps *in_caps, GstCaps *filter, GstCaps *template_caps) {
  GstCaps *result;
  if (gst_caps_is_any(in_caps)) { // the template, DMA_DRM structures linear only
    GstCaps *ordinary = caps_without_dma_drm(template_caps);
    result = caps_with_dma_drm(ordinary);
    gst_caps_unref(ordinary);
  } else {
    GstCaps *caps = caps_without_dma_drm(in_caps);
    GstCaps *first = gst_caps_new_empty();
    GstCaps *second = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      const char *passing = passing_feature(caps, i);
      if (direction == GST_PAD_SINK) {
        if (passing)
          append_with_feature(first, caps, i, passing);
        append_with_feature(second, caps, i, nullptr);
      } else if (passing) {
        append_with_feature(first, caps, i, passing);
      } else {
        append_with_feature(first, caps, i, nullptr);
        for (std::size_t f = 0; f < kBackendCount; ++f) {
          if (const char *feature = backend_at(f).caps_feature)
            append_with_feature(second, caps, i, feature);
        }
      }
    }
    gst_caps_unref(caps);
    GstCaps *merged = gst_caps_merge(first, second);
    result = caps_with_dma_drm(merged);
    gst_caps_unref(merged);
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  return result;
}

gboolean download_output_keeps_memory(GstCaps *outcaps) { return passing_feature(outcaps, 0) != nullptr; }

GstCaps *download_restrict_output_caps(GstPad *srcpad, GstCaps *othercaps) {
  GstCaps *peer = gst_pad_peer_query_caps(srcpad, nullptr);
  bool names_feature = false;
  for (guint i = 0; peer && i < gst_caps_get_size(peer) && !names_feature; ++i)
    names_feature = passing_feature(peer, i) != nullptr;
  if (peer)
    gst_caps_unref(peer);
  if (names_feature)
    return othercaps;
  GstCaps *plain = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(othercaps); ++i) {
    if (!passing_feature(othercaps, i))
      gst_caps_append_structure_full(plain, gst_structure_copy(gst_caps_get_structure(othercaps, i)),
                                     gst_caps_features_copy(gst_caps_get_features(othercaps, i)));
  }
  if (gst_caps_is_empty(plain)) {
    gst_caps_unref(plain);
    return othercaps;
  }
  gst_caps_unref(othercaps);
  return plain;
}

gboolean download_downstream_reads_video_meta(GstPad *srcpad, GstQuery *query) {
  if (!gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr))
    return FALSE;
  /* A peer with ANY caps has not said it reads video at all, so it has not
   * proven it reads GstVideoMeta either, whatever its allocation answer holds. */
  GstCaps *peer = gst_pad_peer_query_caps(srcpad, nullptr);
  const bool any = !peer || gst_caps_is_any(peer);
  if (peer)
    gst_caps_unref(peer);
  return !any;
}

GstBufferPool *download_make_copy_pool(GstElement *element, GstCaps *caps) {
  ensure_debug_category();
  GstVideoInfo info;
  if (!caps || !gst_tensor_mem_video_info_from_caps(&info, caps, nullptr)) {
    GST_WARNING_OBJECT(element, "no copy pool for caps %" GST_PTR_FORMAT, caps);
    return nullptr;
  }
  /* Plain caps: a copy is for a consumer that reads the default layout, so
   * the pool must not add a GstVideoMeta of another one. */
  GstCaps *plain = gst_video_info_to_caps(&info); // DMA_DRM caps included
  GstBufferPool *pool = gst_video_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, plain, GST_VIDEO_INFO_SIZE(&info), kCopyPoolMinBuffers, 0);
  gst_caps_unref(plain);
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_WARNING_OBJECT(element, "the system buffer pool refused caps %" GST_PTR_FORMAT, caps);
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}

} // namespace gst_tensormem
