// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensordownload
 * @title: tensordownload
 *
 * Hands tensor memory (or any system memory) to elements that expect plain
 * system-memory video. A buffer passes through untouched when downstream
 * has shown it reads #GstVideoMeta (its allocation answer carries
 * %GST_VIDEO_META_API_TYPE and its caps are not ANY) or when its planes
 * already sit where the default layout for the caps puts them; otherwise it
 * is copied once into a default-layout buffer and the bytes are counted in
 * #GstTensorMemDownload:copied-bytes. A consumer such as `filesink` therefore
 * receives the same bytes as without tensor elements.
 *
 * Before a buffer is passed on or copied, tensordownload waits on the CPU for
 * the #GstTensorMemFenceMeta fences it carries (bounded by
 * %GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT; a fence that does not signal in time
 * is an element error naming it), so system-memory consumers read complete
 * bytes.
 *
 * DMA-BUF memory is CPU-mappable as it is, so it passes through the same
 * way. The sink pad takes `video/x-raw(memory:DMABuf)` as well as plain
 * caps; the source pad keeps `memory:DMABuf` when downstream's own caps list
 * it and drops the feature (plain system-memory caps) otherwise, ANY caps
 * included.
 *
 * OpenGL PBO memory (`video/x-raw(memory:TensorPBO)`, #GstTensorPboMemory)
 * is CPU-addressable only between gst_memory_map() and gst_memory_unmap(),
 * and the GL buffer goes back to its producer's pool, so it is always copied
 * once into a default-layout system-memory buffer (counted in
 * #GstTensorMemTransform:copied-bytes; an error under `require-zero-copy=true`).
 * The source caps are then plain system-memory caps.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload ! tensordownload ! fakesink
 * gst-launch-1.0 videotestsrc ! tensorupload storage=pbo ! tensordownload ! autovideosink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensordownload.h"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormem.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorpbo.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_download_debug);
#define GST_CAT_DEFAULT gst_tensor_download_debug

struct _GstTensorMemDownload {
  GstTensorMemTransform parent;
  gboolean downstream_video_meta; // learnt in decide_allocation, streaming thread only
  gboolean output_dmabuf;         // the source caps carry memory:DMABuf; set in set_caps
};

namespace {

#define DOWNLOAD_DMABUF_CAPS GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_DMABUF, GST_TENSOR_VIDEO_FORMATS)
#define DOWNLOAD_PLAIN_CAPS GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)
#define DOWNLOAD_PBO_CAPS                                                                                              \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_TENSOR_PBO, GST_TENSOR_VIDEO_FORMATS)

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(DOWNLOAD_PLAIN_CAPS "; " DOWNLOAD_DMABUF_CAPS "; " DOWNLOAD_PBO_CAPS));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(DOWNLOAD_DMABUF_CAPS "; " DOWNLOAD_PLAIN_CAPS));

bool structure_has_dmabuf(GstCaps *caps, guint i) {
  return gst_tensor_transform_caps_has_feature(caps, i, GST_CAPS_FEATURE_MEMORY_DMABUF);
}

/* The require-zero-copy error for a buffer of PBO memory. */
constexpr const char *kPboCopyMessage = "OpenGL PBO memory needs a copy and require-zero-copy is set.";
constexpr const char *kPboCopyDetail = "holds PBO memory (memory:TensorPBO), which is CPU-addressable only while "
                                       "mapped; tensordownload always copies it into system memory, and "
                                       "require-zero-copy=true forbids that copy";

/* The require-zero-copy error for a padded buffer whose consumer has not
 * shown it reads GstVideoMeta. */
constexpr const char *kLayoutCopyMessage =
    "The frame is padded, downstream has not shown it reads GstVideoMeta (no video meta in its allocation answer, or "
    "ANY caps), so it needs a copy into the default layout, and require-zero-copy is set.";

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

/* Whether the peer of the source pad answers a caps query with ANY: it has
 * not said it reads video at all, so it has not proven it reads GstVideoMeta
 * either, whatever its allocation answer holds. */
bool downstream_caps_any(GstBaseTransform *trans) {
  GstCaps *peer = gst_pad_peer_query_caps(trans->srcpad, nullptr);
  const bool any = !peer || gst_caps_is_any(peer);
  if (peer)
    gst_caps_unref(peer);
  return any;
}

/* Whether the peer of the source pad lists memory:DMABuf itself (ANY caps
 * and ANY caps features do not count). */
bool downstream_names_dmabuf(GstBaseTransform *trans) {
  GstCaps *peer = gst_pad_peer_query_caps(trans->srcpad, nullptr);
  bool names = false;
  for (guint i = 0; peer && i < gst_caps_get_size(peer) && !names; ++i)
    names = structure_has_dmabuf(peer, i);
  if (peer)
    gst_caps_unref(peer);
  return names;
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemDownload, gst_tensor_download, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_download_debug, "tensordownload", 0,
                                                "tensor memory to system memory"))

/* Sink caps → source caps: memory:DMABuf input may stay memory:DMABuf
 * (first choice) or become plain caps over the same buffers; plain and
 * memory:TensorPBO input become plain. Source caps → sink caps:
 * memory:DMABuf output needs memory:DMABuf input; plain output takes plain,
 * memory:DMABuf or memory:TensorPBO input. */
static GstCaps *gst_tensor_download_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                   GstCaps *filter) {
  GstCaps *result;
  if (gst_caps_is_any(caps)) {
    result = gst_pad_get_pad_template_caps(direction == GST_PAD_SINK ? trans->srcpad : trans->sinkpad);
  } else {
    GstCaps *first = gst_caps_new_empty();
    GstCaps *second = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      const bool dmabuf = structure_has_dmabuf(caps, i);
      if (direction == GST_PAD_SINK) {
        if (dmabuf)
          gst_tensor_transform_caps_append_with_feature(first, caps, i, GST_CAPS_FEATURE_MEMORY_DMABUF);
        gst_tensor_transform_caps_append_with_feature(second, caps, i, nullptr);
      } else {
        if (dmabuf) {
          gst_tensor_transform_caps_append_with_feature(first, caps, i, GST_CAPS_FEATURE_MEMORY_DMABUF);
        } else {
          gst_tensor_transform_caps_append_with_feature(first, caps, i, nullptr);
          gst_tensor_transform_caps_append_with_feature(second, caps, i, GST_CAPS_FEATURE_MEMORY_DMABUF);
          gst_tensor_transform_caps_append_with_feature(second, caps, i, GST_CAPS_FEATURE_MEMORY_TENSOR_PBO);
        }
      }
    }
    result = gst_caps_merge(first, second);
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  GST_DEBUG_OBJECT(trans, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src",
                   caps, result);
  return result;
}

/* Sink caps → source caps: memory:DMABuf only for a downstream whose own
 * caps name it. A downstream with ANY caps (filesink, a bare appsink) takes
 * memory:DMABuf by intersection yet reads plain bytes: it gets plain caps. */
static GstCaps *gst_tensor_download_fixate_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                GstCaps *othercaps) {
  if (direction == GST_PAD_SINK && !downstream_names_dmabuf(trans)) {
    GstCaps *plain = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(othercaps); ++i) {
      if (!structure_has_dmabuf(othercaps, i))
        gst_caps_append_structure_full(plain, gst_structure_copy(gst_caps_get_structure(othercaps, i)),
                                       gst_caps_features_copy(gst_caps_get_features(othercaps, i)));
    }
    if (gst_caps_is_empty(plain)) {
      gst_caps_unref(plain);
    } else {
      GST_DEBUG_OBJECT(trans, "downstream does not name memory:DMABuf: plain caps only");
      gst_caps_unref(othercaps);
      othercaps = plain;
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->fixate_caps(trans, direction, caps, othercaps);
}

static gboolean gst_tensor_download_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  if (!GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->set_caps(trans, incaps, outcaps))
    return FALSE;
  self->output_dmabuf = structure_has_dmabuf(outcaps, 0);
  GST_DEBUG_OBJECT(self, "output caps %s memory:DMABuf", self->output_dmabuf ? "keep" : "drop");
  return TRUE;
}

/* Any layout is welcome upstream: a padded one is copied only if downstream
 * cannot read it. */
static gboolean gst_tensor_download_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
                                                       GstQuery *query) {
  if (decide_query &&
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->propose_allocation(trans, decide_query, query))
    return FALSE;
  if (!gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr))
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

static gboolean gst_tensor_download_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  self->downstream_video_meta =
      gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr) && !downstream_caps_any(trans);
  GST_DEBUG_OBJECT(self, "downstream %s GstVideoMeta", self->downstream_video_meta ? "reads" : "does not read");
  return TRUE;
}

static GstFlowReturn gst_tensor_download_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                               GstBuffer **outbuf) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  const GstVideoInfo *info = gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM(self));
  GstFlowReturn check = gst_tensor_mem_element_validate_buffer(GST_ELEMENT(self), inbuf, info);
  if (check == GST_FLOW_OK) // downstream reads the bytes, passed through or copied: they must be complete
    check = gst_tensor_mem_element_wait_fences(GST_ELEMENT(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, nullptr);
  if (check != GST_FLOW_OK)
    return check;
  if (self->output_dmabuf) {
    /* memory:DMABuf downstream wants these very fds; a consumer of DMA-BUF
     * caps reads GstVideoMeta (DMA-BUF layouts are padded as a rule). */
    for (guint i = 0; i < gst_buffer_n_memory(inbuf); ++i) {
      if (!gst_is_dmabuf_memory(gst_buffer_peek_memory(inbuf, i))) {
        GST_ELEMENT_ERROR(self, STREAM, FAILED, ("memory:DMABuf caps on a buffer that is not DMA-BUF."),
                          ("memory %u of %" GST_PTR_FORMAT " is not DMA-BUF memory", i, inbuf));
        return GST_FLOW_ERROR;
      }
    }
    GST_LOG_OBJECT(self, "passing DMA-BUF %" GST_PTR_FORMAT " through", inbuf);
    *outbuf = inbuf;
    return GST_FLOW_OK;
  }
  /* PBO memory is always copied: downstream would hold the GL buffer's CPU
   * address past our unmap (transform() copies it out, and counts it). */
  const bool pbo = gst_tensor_transform_any_memory(inbuf, gst_is_tensor_pbo_memory);
  if (!pbo && (self->downstream_video_meta || has_default_layout(inbuf, info))) {
    GST_LOG_OBJECT(self, "passing %" GST_PTR_FORMAT " through", inbuf);
    *outbuf = inbuf;
    return GST_FLOW_OK;
  }
  const GstFlowReturn ret = gst_tensor_transform_allow_copy(
      GST_TENSOR_TRANSFORM(self), inbuf, pbo ? kPboCopyMessage : kLayoutCopyMessage, pbo ? kPboCopyDetail : nullptr);
  if (ret != GST_FLOW_OK)
    return ret;
  *outbuf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(info), nullptr);
  if (!*outbuf) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate an output frame."),
                      ("%" G_GSIZE_FORMAT " bytes", GST_VIDEO_INFO_SIZE(info)));
    return GST_FLOW_ERROR;
  }
  gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM(self), inbuf, *outbuf);
  return GST_FLOW_OK;
}

static void gst_tensor_download_class_init(GstTensorMemDownloadClass *klass) {
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gst_element_class_set_static_metadata(element_class, "Tensor download", "Filter/Video",
                                        "Hands tensor memory (system, DMA-BUF or OpenGL PBO) to system-memory video "
                                        "consumers: zero-copy when downstream reads GstVideoMeta or the layout is "
                                        "already the default one (never for PBO memory), one counted copy into the "
                                        "default layout otherwise",
                                        "gst-tensormem developers");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  trans_class->transform_caps = gst_tensor_download_transform_caps;
  trans_class->fixate_caps = gst_tensor_download_fixate_caps;
  trans_class->set_caps = gst_tensor_download_set_caps;
  trans_class->propose_allocation = gst_tensor_download_propose_allocation;
  trans_class->decide_allocation = gst_tensor_download_decide_allocation;
  trans_class->prepare_output_buffer = gst_tensor_download_prepare_output_buffer;
}

static void gst_tensor_download_init(GstTensorMemDownload *) {}
