// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensordownload
 * @title: tensordownload
 *
 * Hands tensor memory (or any system memory) to elements that expect plain
 * system-memory video. A buffer passes through untouched when downstream
 * reads #GstVideoMeta or when its planes already sit where the default
 * layout for the caps puts them; otherwise it is copied once into a
 * default-layout buffer and the bytes are counted in
 * #GstTensorDownload:copied-bytes.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload ! tensordownload ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensordownload.h"

#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormem.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_download_debug);
#define GST_CAT_DEFAULT gst_tensor_download_debug

struct _GstTensorDownload {
  GstTensorTransform parent;
  gboolean downstream_video_meta; // learnt in decide_allocation, streaming thread only
};

namespace {

enum { PROP_0, PROP_STORAGE };

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)));

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
    if (meta->offset[i] != GST_VIDEO_INFO_PLANE_OFFSET(info, i) || meta->stride[i] != GST_VIDEO_INFO_PLANE_STRIDE(info, i))
      return false;
  }
  return true;
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorDownload, gst_tensor_download, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_download_debug, "tensordownload", 0,
                                                "tensor memory to system memory"))

static void gst_tensor_download_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  switch (prop_id) {
  case PROP_STORAGE:
    g_value_set_enum(value, GST_TENSOR_STORAGE_SYSTEM);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
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
  self->downstream_video_meta = gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  GST_DEBUG_OBJECT(self, "downstream %s GstVideoMeta", self->downstream_video_meta ? "reads" : "does not read");
  return TRUE;
}

static GstFlowReturn gst_tensor_download_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                               GstBuffer **outbuf) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  const GstVideoInfo *info = gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM(self));
  if (self->downstream_video_meta || has_default_layout(inbuf, info)) {
    GST_LOG_OBJECT(self, "passing %" GST_PTR_FORMAT " through", inbuf);
    *outbuf = inbuf;
    return GST_FLOW_OK;
  }
  const GstFlowReturn ret = gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM(self), inbuf);
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

static void gst_tensor_download_class_init(GstTensorDownloadClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->get_property = gst_tensor_download_get_property;

  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum("storage", "Storage",
                        "Storage of the output buffers: always system memory (read-only, for symmetry with "
                        "tensorupload)",
                        GST_TYPE_TENSOR_STORAGE, GST_TENSOR_STORAGE_SYSTEM,
                        static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_set_static_metadata(element_class, "Tensor download", "Filter/Video",
                                        "Hands tensor memory to system-memory video consumers: zero-copy when "
                                        "downstream reads GstVideoMeta or the layout is already the default one, "
                                        "one counted copy into the default layout otherwise",
                                        "gst-tensormem developers");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  trans_class->propose_allocation = gst_tensor_download_propose_allocation;
  trans_class->decide_allocation = gst_tensor_download_decide_allocation;
  trans_class->prepare_output_buffer = gst_tensor_download_prepare_output_buffer;
}

static void gst_tensor_download_init(GstTensorDownload *) {}
