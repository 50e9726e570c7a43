// SPDX-License-Identifier: Apache-2.0
#include "gsttensortransform.h"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <atomic>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_transform_debug);
#define GST_CAT_DEFAULT gst_tensor_transform_debug

namespace {

enum { PROP_0, PROP_COPIED_BYTES, PROP_REQUIRE_ZERO_COPY, PROP_FOREIGN_COPIES, PROP_FOREIGN_COPIED_BYTES };

struct GstTensorMemTransformPrivate {
  GstVideoInfo info;
  guint64 copied_bytes; // guarded by the object lock
  /* This run, for the summary logged at stop; atomic, so a buffer that
   * passes through without a copy takes no lock. */
  std::atomic<guint64> buffers;
  guint64 copied_buffers;     // this run
  gboolean require_zero_copy; // guarded by the object lock
  /* gst_tensor_mem_get_copy_stats() when the element was created: the
   * foreign-copies properties count from there. */
  guint64 foreign_copies_base;
  guint64 foreign_bytes_base;
  /* Cancelled on flush-start and PAUSED→READY: the fence and pool waits of
   * the streaming thread end with GST_FLOW_FLUSHING. */
  GCancellable *waits;
};

} // namespace

G_DEFINE_ABSTRACT_TYPE_WITH_CODE(GstTensorMemTransform, gst_tensor_transform, GST_TYPE_BASE_TRANSFORM,
                                 G_ADD_PRIVATE(GstTensorMemTransform);
                                 GST_DEBUG_CATEGORY_INIT(gst_tensor_transform_debug, "tensormemtransform", 0,
                                                         "tensor element base class"))

static GstTensorMemTransformPrivate *get_priv(GstTensorMemTransform *self) {
  return static_cast<GstTensorMemTransformPrivate *>(gst_tensor_transform_get_instance_private(self));
}

/* Process-wide copies of foreign (not tensor) memory, over every storage:
 * the foreign-copies properties report the growth since the element began. */
static void foreign_copy_totals(guint64 *copies, guint64 *bytes) {
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, copies, bytes);
}

static void gst_tensor_transform_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_TRANSFORM(object);
  switch (prop_id) {
  case PROP_REQUIRE_ZERO_COPY:
    GST_OBJECT_LOCK(self);
    get_priv(self)->require_zero_copy = g_value_get_boolean(value);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_transform_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_TRANSFORM(object);
  auto *priv = get_priv(self);
  switch (prop_id) {
  case PROP_COPIED_BYTES:
    GST_OBJECT_LOCK(self);
    g_value_set_uint64(value, priv->copied_bytes);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_REQUIRE_ZERO_COPY:
    GST_OBJECT_LOCK(self);
    g_value_set_boolean(value, priv->require_zero_copy);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_FOREIGN_COPIES:
  case PROP_FOREIGN_COPIED_BYTES: {
    guint64 copies, bytes;
    foreign_copy_totals(&copies, &bytes);
    g_value_set_uint64(value, prop_id == PROP_FOREIGN_COPIES ? copies - priv->foreign_copies_base
                                                             : bytes - priv->foreign_bytes_base);
    break;
  }
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static gboolean gst_tensor_transform_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_TRANSFORM(trans);
  GstVideoInfo in_info, out_info;
  if (!gst_tensor_mem_element_video_info_from_caps(GST_ELEMENT(self), &in_info, incaps) ||
      !gst_tensor_mem_element_video_info_from_caps(GST_ELEMENT(self), &out_info, outcaps))
    return FALSE;
  if (!gst_video_info_is_equal(&in_info, &out_info)) {
    GST_WARNING_OBJECT(self, "input %" GST_PTR_FORMAT " and output %" GST_PTR_FORMAT " differ", incaps, outcaps);
    return FALSE;
  }
  get_priv(self)->info = in_info;
  return TRUE;
}

/* Nothing: each element chooses its path and takes it, copy included, in
 * prepare_output_buffer, and counts the buffer there. */
static GstFlowReturn gst_tensor_transform_transform(GstBaseTransform *, GstBuffer *, GstBuffer *) {
  return GST_FLOW_OK;
}

/* One line per run saying what the element did, for gst-launch users
 * (GST_DEBUG=tensorupload:4) and the demo script. */
static gboolean gst_tensor_transform_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_TRANSFORM(trans);
  auto *priv = get_priv(self);
  GST_OBJECT_LOCK(self);
  const guint64 buffers = priv->buffers.exchange(0), copied = priv->copied_buffers, bytes = priv->copied_bytes;
  priv->copied_buffers = 0;
  GST_OBJECT_UNLOCK(self);
  guint64 foreign_copies, foreign_bytes;
  foreign_copy_totals(&foreign_copies, &foreign_bytes);
  GST_INFO_OBJECT(self,
                  "summary: %" G_GUINT64_FORMAT " buffers, %" G_GUINT64_FORMAT
                  " passed on without a copy, %" G_GUINT64_FORMAT " copied; copied-bytes=%" G_GUINT64_FORMAT
                  "; foreign-copies=%" G_GUINT64_FORMAT " foreign-copied-bytes=%" G_GUINT64_FORMAT,
                  buffers, buffers - copied, copied, bytes, foreign_copies - priv->foreign_copies_base,
                  foreign_bytes - priv->foreign_bytes_base);
  return TRUE;
}

static gboolean gst_tensor_transform_sink_event(GstBaseTransform *trans, GstEvent *event) {
  gst_tensor_mem_transform_watch_event(trans, get_priv(GST_TENSOR_TRANSFORM_CAST(trans))->waits, event);
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_transform_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn gst_tensor_transform_change_state(GstElement *element, GstStateChange transition) {
  gst_tensor_mem_transform_watch_state_change(GST_BASE_TRANSFORM(element),
                                              get_priv(GST_TENSOR_TRANSFORM_CAST(element))->waits, transition);
  return GST_ELEMENT_CLASS(gst_tensor_transform_parent_class)->change_state(element, transition);
}

static void gst_tensor_transform_finalize(GObject *object) {
  g_clear_object(&get_priv(GST_TENSOR_TRANSFORM_CAST(object))->waits);
  G_OBJECT_CLASS(gst_tensor_transform_parent_class)->finalize(object);
}

static void gst_tensor_transform_class_init(GstTensorMemTransformClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_tensor_transform_set_property;
  gobject_class->get_property = gst_tensor_transform_get_property;
  gobject_class->finalize = gst_tensor_transform_finalize;
  GST_ELEMENT_CLASS(klass)->change_state = gst_tensor_transform_change_state;

  g_object_class_install_property(
      gobject_class, PROP_COPIED_BYTES,
      g_param_spec_uint64("copied-bytes", "Copied bytes",
                          "Bytes of frame data this element has copied since it was created (0 while every "
                          "buffer passed through without a copy)",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_FOREIGN_COPIES,
      g_param_spec_uint64("foreign-copies", "Foreign copies",
                          "Copies of tensor memory made by anyone in this process since this element was created: "
                          "gst_memory_copy of any tensor memory, whoever asked (GStreamer making a buffer writable, "
                          "copy-on-write maps, deep copies), all storages and pipelines "
                          "(gst_tensor_mem_get_copy_stats); not the element's own copies, which are copied-bytes. "
                          "0 while the whole process is zero-copy",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_FOREIGN_COPIED_BYTES,
      g_param_spec_uint64("foreign-copied-bytes", "Foreign copied bytes",
                          "Bytes of the copies counted in foreign-copies", 0, G_MAXUINT64, 0,
                          static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_REQUIRE_ZERO_COPY,
      g_param_spec_boolean(
          "require-zero-copy", "Require zero copy",
          "Fail with a stream error instead of copying a buffer that cannot pass through as it is", FALSE,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));

  trans_class->set_caps = gst_tensor_transform_set_caps;
  trans_class->transform = gst_tensor_transform_transform;
  trans_class->stop = gst_tensor_transform_stop;
  trans_class->sink_event = gst_tensor_transform_sink_event;

  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_TRANSFORM, static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_transform_init(GstTensorMemTransform *self) {
  auto *priv = get_priv(self);
  gst_video_info_init(&priv->info);
  priv->waits = g_cancellable_new();
  foreign_copy_totals(&priv->foreign_copies_base, &priv->foreign_bytes_base);
}

const GstVideoInfo *gst_tensor_transform_get_info(GstTensorMemTransform *self) { return &get_priv(self)->info; }

GCancellable *gst_tensor_transform_get_waits(GstTensorMemTransform *self) { return get_priv(self)->waits; }

GstFlowReturn gst_tensor_transform_allow_copy(GstTensorMemTransform *self, GstBuffer *inbuf, const char *message,
                                              const char *detail) {
  GST_OBJECT_LOCK(self);
  const gboolean strict = get_priv(self)->require_zero_copy;
  GST_OBJECT_UNLOCK(self);
  if (!strict)
    return GST_FLOW_OK;
  if (!message)
    message = "A buffer needs a copy and require-zero-copy is set.";
  if (detail) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", message), ("%" GST_PTR_FORMAT " %s", inbuf, detail));
    return GST_FLOW_ERROR;
  }
  const GstVideoInfo *info = &get_priv(self)->info;
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", message),
                    ("a %" G_GSIZE_FORMAT "-byte %dx%d %s frame (%" GST_PTR_FORMAT
                     ") would need a copy; require-zero-copy=true forbids it",
                     GST_VIDEO_INFO_SIZE(info), GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info),
                     GST_VIDEO_INFO_NAME(info), inbuf));
  return GST_FLOW_ERROR;
}

void gst_tensor_transform_copy_metadata(GstTensorMemTransform *self, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *trans_class = GST_BASE_TRANSFORM_GET_CLASS(self);
  if (trans_class->copy_metadata)
    trans_class->copy_metadata(GST_BASE_TRANSFORM(self), inbuf, outbuf);
}

void gst_tensor_transform_count_buffer(GstTensorMemTransform *self, gsize copied_bytes) {
  auto *priv = get_priv(self);
  /* Only the streaming thread (under the sink pad's stream lock) counts, so
   * a plain load and store: a locked add would wait here for the frame's
   * pending stores to drain, on every buffer. */
  priv->buffers.store(priv->buffers.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (copied_bytes == 0)
    return;
  GST_OBJECT_LOCK(self);
  priv->copied_bytes += copied_bytes;
  priv->copied_buffers++;
  const guint64 total = priv->copied_bytes;
  GST_OBJECT_UNLOCK(self);
  GST_DEBUG_OBJECT(self, "copied a %" G_GSIZE_FORMAT "-byte frame, %" G_GUINT64_FORMAT " bytes so far", copied_bytes,
                   total);
}

GstCaps *gst_tensor_transform_caps_with_feature(GstCaps *caps, const char *feature) {
  return gst_tensormem::caps_with_feature(caps, feature);
}
