// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorsync
 * @title: tensorsync
 *
 * Waits on the CPU for the fences a buffer carries (#GstTensorMemFenceMeta),
 * for consumers downstream that read the memory without waiting themselves
 * (a foreign element, an appsink whose application reads the bytes). Every
 * wait is bounded by #GstTensorMemSync:timeout; a fence that does not signal
 * in time is an element error (%GST_RESOURCE_ERROR_BUSY) whose text names
 * the fence's kind and value ("software:7") and whose debug detail names the
 * timeline, and the buffer is not pushed.
 *
 * A fence that signalled is marked satisfied and stays on the buffer, so
 * later waits on it (downstream, or on copies) return at once and
 * `tensorinspect` still shows where the completion came from. A buffer
 * without a fence passes through untouched; buffers are never copied or
 * written.
 *
 * A wait never holds the pipeline: a flush (flushing seek) or setting the
 * pipeline to READY or NULL ends it within milliseconds, and the buffer is
 * dropped (%GST_FLOW_FLUSHING), not passed on unfinished.
 *
 * #GstTensorMemSync:waited counts the fences it waited for (those not
 * satisfied yet when they arrived), #GstTensorMemSync:timed-out the fences
 * that did not signal in time.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload storage=pbo ! tensorsync timeout=1000000000 ! tensordownload ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorsync.h"

#include <gst/tensormem/gsttensorfencemeta.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_sync_debug);
#define GST_CAT_DEFAULT gst_tensor_sync_debug

struct _GstTensorMemSync {
  GstBaseTransform parent;
  GstClockTime timeout; // object lock
  guint64 waited;       // object lock
  guint64 timed_out;    // object lock
  GCancellable *waits;  // cancelled on flush-start and PAUSED→READY
};

namespace {

enum { PROP_0, PROP_TIMEOUT, PROP_WAITED, PROP_TIMED_OUT };

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemSync, gst_tensor_sync, GST_TYPE_BASE_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_sync_debug, "tensorsync", 0,
                                                "CPU wait for tensor memory fences"))

static void gst_tensor_sync_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_SYNC(object);
  switch (prop_id) {
  case PROP_TIMEOUT:
    GST_OBJECT_LOCK(self);
    self->timeout = g_value_get_uint64(value);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_sync_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_SYNC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_TIMEOUT: g_value_set_uint64(value, self->timeout); break;
  case PROP_WAITED: g_value_set_uint64(value, self->waited); break;
  case PROP_TIMED_OUT: g_value_set_uint64(value, self->timed_out); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static GstFlowReturn gst_tensor_sync_transform_ip(GstBaseTransform *trans, GstBuffer *buffer) {
  auto *self = GST_TENSOR_SYNC(trans);
  GST_OBJECT_LOCK(self);
  const GstClockTime timeout = self->timeout;
  GST_OBJECT_UNLOCK(self);
  guint waited = 0;
  GError *error = nullptr;
  const gboolean done = gst_buffer_wait_tensor_mem_fences_cancellable(buffer, timeout, self->waits, &waited, &error);
  if (!done && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    GST_DEBUG_OBJECT(self, "%s; %" GST_PTR_FORMAT " not passed on", error->message, buffer);
    g_clear_error(&error);
    return GST_FLOW_FLUSHING;
  }
  // Counted before the error is posted: an application reading the counter on the error sees it.
  GST_OBJECT_LOCK(self);
  self->waited += waited;
  if (!done)
    self->timed_out++;
  GST_OBJECT_UNLOCK(self);
  if (done) {
    if (waited)
      GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT ": %u fence(s) signalled", buffer, waited);
    return GST_FLOW_OK;
  }
  const GstFlowReturn ret = gst_tensor_mem_element_post_fence_error(GST_ELEMENT(self), buffer, timeout, error);
  g_clear_error(&error);
  return ret;
}

static gboolean gst_tensor_sync_sink_event(GstBaseTransform *trans, GstEvent *event) {
  gst_tensor_mem_transform_watch_event(trans, GST_TENSOR_SYNC(trans)->waits, event);
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_sync_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn gst_tensor_sync_change_state(GstElement *element, GstStateChange transition) {
  gst_tensor_mem_transform_watch_state_change(GST_BASE_TRANSFORM(element), GST_TENSOR_SYNC(element)->waits,
                                              transition);
  return GST_ELEMENT_CLASS(gst_tensor_sync_parent_class)->change_state(element, transition);
}

static void gst_tensor_sync_finalize(GObject *object) {
  g_clear_object(&GST_TENSOR_SYNC(object)->waits);
  G_OBJECT_CLASS(gst_tensor_sync_parent_class)->finalize(object);
}

static void gst_tensor_sync_class_init(GstTensorMemSyncClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_tensor_sync_set_property;
  gobject_class->get_property = gst_tensor_sync_get_property;
  gobject_class->finalize = gst_tensor_sync_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_tensor_sync_change_state);

  g_object_class_install_property(
      gobject_class, PROP_TIMEOUT,
      g_param_spec_uint64(
          "timeout", "Timeout",
          "Longest CPU wait, in nanoseconds, for the fences of one buffer; a fence that does not "
          "signal in time is an element error naming it",
          0, G_MAXUINT64, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_WAITED,
      g_param_spec_uint64("waited", "Waited", "Fences waited for (not yet satisfied when their buffer arrived)", 0,
                          G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_TIMED_OUT,
      g_param_spec_uint64("timed-out", "Timed out", "Buffers whose fence did not signal within the timeout", 0,
                          G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "Tensor sync", "Filter/Video",
                                        "Waits on the CPU, bounded, for the GPU completion fences a buffer carries "
                                        "(GstTensorMemFenceMeta), for consumers that cannot wait themselves",
                                        GST_TENSOR_MEM_AUTHOR);

  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_tensor_sync_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_tensor_sync_sink_event);
  trans_class->passthrough_on_same_caps = TRUE;
  trans_class->transform_ip_on_passthrough = TRUE;
}

static void gst_tensor_sync_init(GstTensorMemSync *self) {
  self->timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT;
  self->waited = 0;
  self->timed_out = 0;
  self->waits = g_cancellable_new();
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
