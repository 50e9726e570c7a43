// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorbatch
 * @title: tensorbatch
 *
 * Gathers one tensor from each of several streams (`other/tensors`, one
 * tensor each, all of one type and shape) into one batched tensor, slot i
 * holding stream i's (the batch axis is the tensor's outermost axis where
 * that is 1, else a new outermost one). A GstAggregator: its pads,
 * flushing, live latency and EOS.
 *
 * Slots are written in place: each sink pad answers the allocation query
 * with a pool of windows of the batch being made, so each stream's
 * `tensorconvert` writes straight into its slot (system memory, DMA-BUF,
 * or, on its GL path, one PBO per batch) and the batch goes downstream as
 * one buffer without a copy. A foreign buffer is copied into its slot
 * (`copied-bytes`; refused under `require-zero-copy`). On GStreamer 1.28 a
 * stream may also send video frames with their tensor beside them
 * (`tensorconvert output=meta`, whose caps describe it): the tensor is
 * written into the slot the same way, and the batch meta keeps the frame
 * for `tensorunbatch`, which sends it on with the slot's model outputs.
 *
 * Batches follow the streams' running time (a slower stream's slot is
 * empty and flagged between its frames). A batch leaves when every stream
 * that has not ended filled or passed its slot; after `timeout`; and, where
 * the streams are live, at its first frame's running time plus their
 * latency plus `max-latency`. Empty slots hold `pad-value` and are
 * flagged; a late frame is dropped and counted on its pad. Each batch
 * carries a #GstTensorMemBatchMeta (per slot: its stream, timestamps,
 * filled or copied, the fit), and GstTensorMeta on GStreamer 1.26+; each
 * stream's segment, tags and end follow as custom events, for
 * `tensorunbatch`. Pads come and go while playing; a fixed `batch-size`
 * keeps the shape. docs/tensorbatch.md has the whole behaviour.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 tensorbatch name=b ! fakesink \
 *     videotestsrc num-buffers=30 ! tensorconvert width=224 height=224 ! b.sink_0 \
 *     videotestsrc num-buffers=30 pattern=ball ! tensorconvert width=224 height=224 ! b.sink_1
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorbatch.h"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbatchaggregator-private.h>
#include <gst/tensormem/gsttensorbatchassembler-private.h>
#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorcaps.h>

#include <gio/gio.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_batch_debug);
#define GST_CAT_DEFAULT gst_tensor_batch_debug

namespace {
using Assembler = gst_tensormem::BatchAssembler;
using gst_tensormem::BatchReason;
} // namespace

struct _GstTensorMemBatchPad {
  GstAggregatorPad parent;
  guint id;
  std::atomic<guint64> dropped; // this stream's frames that came after their batch left
};

G_DEFINE_TYPE(GstTensorMemBatchPad, gst_tensor_batch_pad, GST_TYPE_AGGREGATOR_PAD)

static void gst_tensor_batch_pad_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  if (prop_id == 1)
    g_value_set_uint64(value, GST_TENSOR_BATCH_PAD(object)->dropped.load());
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_tensor_batch_pad_class_init(GstTensorMemBatchPadClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->get_property = gst_tensor_batch_pad_get_property;
  g_object_class_install_property(
      gobject_class, 1,
      g_param_spec_uint64("dropped", "Dropped",
                          "This stream's frames that came after their batch had left (timeout) and were dropped", 0,
                          G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
}

static void gst_tensor_batch_pad_init(GstTensorMemBatchPad *self) { new (&self->dropped) std::atomic<guint64>(0); }

struct _GstTensorMemBatch {
  GstAggregator parent;
  std::shared_ptr<Assembler> *assembler;  // shared with the slot pools and the timer
  std::thread *timer;                     // the non-live timeout and the assembler's kicks
  GCancellable *waits;                    // cancels fence waits on flush and PAUSED→READY
  gst_tensormem::ElementBackend *devices; // the GL worker of PBO batches, shared through GstContext
};

/* max-latency is GstAggregator's latency; the others are the assembler's
 * (batch_install_properties), from PROP_ASSEMBLER on. */
enum { PROP_0, PROP_MAX_LATENCY, PROP_ASSEMBLER };


G_DEFINE_TYPE(GstTensorMemBatch, gst_tensor_batch, GST_TYPE_AGGREGATOR)

namespace {

Assembler &assembler_of(GstTensorMemBatch *self) { return **self->assembler; }

guint stream_id(GstAggregatorPad *pad) { return GST_TENSOR_BATCH_PAD(pad)->id; }

GstFlowReturn pump(GstTensorMemBatch *self, BatchReason why, BatchReason then = BatchReason::Complete) {
  return gst_tensormem::batch_aggregator_send(GST_AGGREGATOR_CAST(self), assembler_of(self), why, then);
}

} // namespace

/* Frames are placed here, in each stream's thread, never queued on the
 * pad: a frame of a later batch waits there for the front one to leave.
 * What leaves is sent by the source task, which this wakes. */
static GstFlowReturn gst_tensor_batch_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer) {
  auto *self = GST_TENSOR_BATCH(parent);
  bool late = false;
  const GstFlowReturn ret = gst_tensormem::batch_aggregator_place(
      GST_AGGREGATOR_CAST(self), assembler_of(self), pad, GST_TENSOR_BATCH_PAD(pad)->id, buffer, self->waits, &late);
  if (late)
    GST_TENSOR_BATCH_PAD(pad)->dropped.fetch_add(1);
  return ret;
}

static GstFlowReturn gst_tensor_batch_aggregate(GstAggregator *agg, gboolean timeout) {
  auto *self = GST_TENSOR_BATCH(agg);
  Assembler &s = assembler_of(self);
  const guint64 before = s.batches.load();
  // A live deadline that passed sends the front batch as it is.
  GstFlowReturn ret = pump(self, timeout ? BatchReason::Drain : BatchReason::Complete);
  if (ret != GST_FLOW_OK)
    return ret;
  if (gst_tensormem::batch_aggregator_all_ended(agg)) {
    ret = pump(self, BatchReason::Drain, BatchReason::Drain);
    return ret == GST_FLOW_OK ? GST_FLOW_EOS : ret;
  }
  if (s.batches.load() == before) {
    // Nothing could leave (the front batch waits for a window still being
    // written): the aggregator would call again at once, so wait for the
    // assembler to move (briefly: a wake may come meanwhile).
    std::unique_lock<std::mutex> lock(s.lock);
    s.cond.wait_for(lock, std::chrono::milliseconds(5));
  }
  return GST_FLOW_OK;
}

/* A stream's own events, in its thread and in order with its frames
 * (which the chain places there, never queueing them): its caps, segment,
 * tags and end reach the assembler before its next frame. What the
 * aggregator needs of them is queued after. */
static GstFlowReturn gst_tensor_batch_sink_event_pre_queue(GstAggregator *agg, GstAggregatorPad *pad, GstEvent *event) {
  auto *self = GST_TENSOR_BATCH(agg);
  Assembler &s = assembler_of(self);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS:
  case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY: // before 1.28, the description of a stream of frames' tensor
    if (!gst_tensormem::batch_aggregator_take_caps(agg, s, *self->devices, stream_id(pad), GST_PAD_CAST(pad),
                                                   event)) {
      gst_event_unref(event);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    break;
  case GST_EVENT_SEGMENT: {
    // Each stream's own segment follows as a stream-segment event, so that
    // the split gives each stream its own; the first stream's is the
    // batches'.
    const GstSegment *segment = nullptr;
    gst_event_parse_segment(event, &segment);
    s.stream_segment(stream_id(pad), segment);
    break;
  }
  case GST_EVENT_TAG: {
    // A stream's tags go to its own pad after the split, never onto the
    // batch (whose other streams they do not describe).
    GstTagList *tags = nullptr;
    gst_event_parse_tag(event, &tags);
    s.stream_tags(stream_id(pad), tags);
    gst_event_unref(event);
    return GST_FLOW_OK;
  }
  case GST_EVENT_EOS: s.stream_ended(stream_id(pad)); break;
  default: break;
  }
  return GST_AGGREGATOR_CLASS(gst_tensor_batch_parent_class)->sink_event_pre_queue(agg, pad, event);
}

static gboolean gst_tensor_batch_sink_event(GstAggregator *agg, GstAggregatorPad *pad, GstEvent *event) {
  auto *self = GST_TENSOR_BATCH(agg);
  Assembler &s = assembler_of(self);
  const auto parent = GST_AGGREGATOR_CLASS(gst_tensor_batch_parent_class);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS: // the assembler took them before they were queued
    gst_event_unref(event);
    return TRUE;
  case GST_EVENT_SEGMENT: return parent->sink_event(agg, pad, event);
  case GST_EVENT_EOS: {
    // The front batch may wait for this stream no longer (once the
    // aggregator marks it ended, so that a last stream's end drains).
    const gboolean ok = parent->sink_event(agg, pad, event);
    pump(self, BatchReason::Complete);
    return ok;
  }
  case GST_EVENT_FLUSH_START:
    s.flush_started(stream_id(pad));
    g_cancellable_cancel(self->waits);
    return parent->sink_event(agg, pad, event);
  case GST_EVENT_FLUSH_STOP: s.flush_stopped(stream_id(pad)); return parent->sink_event(agg, pad, event);
  case GST_EVENT_CUSTOM_DOWNSTREAM:
    if (BatchReason why; gst_tensormem::batch_aggregator_is_wake(event, &why)) {
      gst_event_unref(event);
      pump(self, why);
      return TRUE;
    }
    break;
  case GST_EVENT_STREAM_START: return parent->sink_event(agg, pad, event);
  default: break;
  }
  if (static_cast<guint>(GST_EVENT_TYPE(event)) & static_cast<guint>(GST_EVENT_TYPE_SERIALIZED)) {
    // One stream's gaps and the like say nothing about the batch.
    gst_event_unref(event);
    return TRUE;
  }
  return parent->sink_event(agg, pad, event);
}

static gboolean gst_tensor_batch_sink_query(GstAggregator *agg, GstAggregatorPad *pad, GstQuery *query) {
  auto *self = GST_TENSOR_BATCH(agg);
  // A caps query is answered with the template (GstAggregator's default),
  // not the first stream's tensor: a stream with another tensor then
  // reaches its caps event and is refused there by name.
  switch (GST_QUERY_TYPE(query)) {
  case GST_QUERY_ALLOCATION:
    // The slot pool: windows of the batch this stream's next frame is for.
    gst_tensormem::batch_answer_allocation(*self->assembler, stream_id(pad), query);
    return TRUE;
  case GST_QUERY_CONTEXT:
    if (self->devices->handle_context_query(query))
      return TRUE;
    break;
  default: break;
  }
  return GST_AGGREGATOR_CLASS(gst_tensor_batch_parent_class)->sink_query(agg, pad, query);
}

static gboolean gst_tensor_batch_src_query(GstAggregator *agg, GstQuery *query) {
  auto *self = GST_TENSOR_BATCH(agg);
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS) {
    Assembler &s = assembler_of(self);
    GstCaps *caps = nullptr, *filter = nullptr;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      caps = s.negotiated ? s.batch_caps(s.n_slots) : gst_pad_get_pad_template_caps(agg->srcpad);
    }
    gst_query_parse_caps(query, &filter);
    GstCaps *result = filter ? gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST) : gst_caps_ref(caps);
    gst_query_set_caps_result(query, result);
    gst_caps_unref(result);
    gst_caps_unref(caps);
    return TRUE;
  }
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT && self->devices->handle_context_query(query))
    return TRUE;
  if (!GST_AGGREGATOR_CLASS(gst_tensor_batch_parent_class)->src_query(agg, query))
    return FALSE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    // max-latency (the aggregator's latency) counts where a stream is live
    // only: a non-live answer keeps the streams' own.
    gboolean live = FALSE;
    GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
    gst_query_parse_latency(query, &live, &min, &max);
    if (!live) {
      guint64 ours = 0;
      g_object_get(agg, "latency", &ours, nullptr);
      gst_query_set_latency(query, FALSE, min >= ours ? min - ours : 0,
                            GST_CLOCK_TIME_IS_VALID(max) && max >= ours ? max - ours : max);
    }
  }
  return TRUE;
}

/* The running time the live deadline counts from: the front batch's first
 * frame (frames are placed as they come, never queued on the pads). NONE:
 * nothing to wait for. */
static GstClockTime gst_tensor_batch_get_next_time(GstAggregator *agg) {
  return assembler_of(GST_TENSOR_BATCH(agg)).front_time();
}

/* A repeated seek (once per stream after a split) goes upstream once. */
static gboolean gst_tensor_batch_src_event(GstAggregator *agg, GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_SEEK &&
      gst_tensormem::batch_aggregator_seek_again(assembler_of(GST_TENSOR_BATCH(agg)), event)) {
    GST_DEBUG_OBJECT(agg, "seek %u again: dropped", gst_event_get_seqnum(event));
    gst_event_unref(event);
    return TRUE;
  }
  return GST_AGGREGATOR_CLASS(gst_tensor_batch_parent_class)->src_event(agg, event);
}

/* The source caps are the batch's, set where a batch leaves. */
static gboolean gst_tensor_batch_negotiate(GstAggregator *) { return TRUE; }

static GstFlowReturn gst_tensor_batch_flush(GstAggregator *agg) {
  auto *self = GST_TENSOR_BATCH(agg);
  g_cancellable_reset(self->waits);
  assembler_of(self).flushed();
  return GST_FLOW_OK;
}

static GstAggregatorPad *gst_tensor_batch_create_new_pad(GstAggregator *agg, GstPadTemplate *templ,
                                                         const gchar *req_name, const GstCaps *) {
  auto *self = GST_TENSOR_BATCH(agg);
  std::string name, refused;
  const guint id = assembler_of(self).new_stream(req_name, &name, &refused);
  if (id == G_MAXUINT) {
    if (!refused.empty())
      GST_ELEMENT_WARNING(self, CORE, PAD, ("%s", refused.c_str()), (nullptr));
    else
      GST_WARNING_OBJECT(self, "pad %s exists", req_name);
    return nullptr;
  }
  auto *pad = GST_TENSOR_BATCH_PAD(g_object_new(GST_TYPE_TENSOR_BATCH_PAD, "name", name.c_str(), "direction",
                                                GST_PAD_SINK, "template", templ, nullptr));
  pad->id = id;
  // Frames go to the assembler as they come, never into the aggregator's
  // queue (which would hold a stream's frame until every pad had one).
  gst_pad_set_chain_function(GST_PAD_CAST(pad), gst_tensor_batch_chain);
  return GST_AGGREGATOR_PAD_CAST(pad);
}

static void gst_tensor_batch_release_pad(GstElement *element, GstPad *pad) {
  auto *self = GST_TENSOR_BATCH(element);
  Assembler &s = assembler_of(self);
  guint dropped;
  {
    // Its frames in the batches being made go with it (counted), and its
    // stream's end follows the batches already sent.
    std::lock_guard<std::mutex> guard(s.lock);
    dropped = s.remove_stream(GST_TENSOR_BATCH_PAD(pad)->id);
  }
  if (dropped)
    GST_INFO_OBJECT(self, "%s released: %u frames in open batches dropped", GST_PAD_NAME(pad), dropped);
  GST_ELEMENT_CLASS(gst_tensor_batch_parent_class)->release_pad(element, pad);
  // The front batch may wait for that stream no longer.
  gst_tensormem::batch_aggregator_wake(GST_AGGREGATOR_CAST(self), s, BatchReason::Complete);
}

static GstStateChangeReturn gst_tensor_batch_change_state(GstElement *element, GstStateChange transition) {
  auto *self = GST_TENSOR_BATCH(element);
  Assembler &s = assembler_of(self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    if (std::string refused = s.begin(); !refused.empty()) {
      GST_ELEMENT_ERROR(self, CORE, PAD, ("%s", refused.c_str()), (nullptr));
      return GST_STATE_CHANGE_FAILURE;
    }
    g_cancellable_reset(self->waits);
    // The timer: the non-live timeout and the assembler's kicks wake the
    // source task (the live deadline is GstAggregator's own).
    self->timer = new std::thread([self, shared = *self->assembler] {
      gst_tensormem::batch_timer_run(shared, [self, shared](BatchReason why) {
        gst_tensormem::batch_aggregator_wake(GST_AGGREGATOR_CAST(self), *shared, why);
      });
    });
  } else if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    s.halt(); // every wait (a pool's acquire, a chain's, a fence) ends now
    g_cancellable_cancel(self->waits);
  }
  const GstStateChangeReturn ret = GST_ELEMENT_CLASS(gst_tensor_batch_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    if (self->timer) {
      self->timer->join();
      delete self->timer;
      self->timer = nullptr;
    }
    // One line per run saying what the element did (GST_DEBUG=tensorbatch:4).
    GST_INFO_OBJECT(self, "summary: %s", s.finish().c_str());
  } else if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    s.release();
    self->devices->close();
  }
  return ret;
}

static void gst_tensor_batch_set_context(GstElement *element, GstContext *context) {
  GST_TENSOR_BATCH(element)->devices->handle_set_context(context);
  GST_ELEMENT_CLASS(gst_tensor_batch_parent_class)->set_context(element, context);
}

static void gst_tensor_batch_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (prop_id == PROP_MAX_LATENCY) // GstAggregator's latency (see the property)
    g_object_set(object, "latency", g_value_get_uint64(value), nullptr);
  else if (!assembler_of(GST_TENSOR_BATCH(object)).set_property(pspec, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_tensor_batch_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  if (prop_id == PROP_MAX_LATENCY) {
    guint64 latency = 0;
    g_object_get(object, "latency", &latency, nullptr);
    g_value_set_uint64(value, latency);
  } else if (!assembler_of(GST_TENSOR_BATCH(object)).get_property(pspec, value)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void gst_tensor_batch_finalize(GObject *object) {
  auto *self = GST_TENSOR_BATCH(object);
  delete self->assembler;
  delete self->devices;
  g_clear_object(&self->waits);
  G_OBJECT_CLASS(gst_tensor_batch_parent_class)->finalize(object);
}

static void gst_tensor_batch_class_init(GstTensorMemBatchClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  gobject_class->set_property = gst_tensor_batch_set_property;
  gobject_class->get_property = gst_tensor_batch_get_property;
  gobject_class->finalize = gst_tensor_batch_finalize;
  g_object_class_install_property(
      gobject_class, PROP_MAX_LATENCY,
      g_param_spec_uint64("max-latency", "Maximum latency",
                          "Where the streams are live: nanoseconds a batch waits, beyond their own latency, after "
                          "the running time of its first frame before it leaves partial (a late or dead stream's slot "
                          "empty and flagged, its late frame dropped and counted on its pad); added to the latency "
                          "the element reports. Not used where no stream is live (see timeout)",
                          0, G_MAXUINT64, 0,
                          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                   GST_PARAM_MUTABLE_PLAYING)));
  gst_tensormem::batch_install_properties(gobject_class, PROP_ASSEMBLER);
  GstCaps *sink_caps = gst_tensormem::batch_template_caps(GST_PAD_SINK);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new_with_gtype("sink_%u", GST_PAD_SINK,
                                                                                    GST_PAD_REQUEST, sink_caps,
                                                                                    GST_TYPE_TENSOR_BATCH_PAD));
  GstCaps *src_caps = gst_tensormem::batch_template_caps(GST_PAD_SRC);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new_with_gtype("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                                                                                    src_caps, GST_TYPE_AGGREGATOR_PAD));
  gst_caps_unref(sink_caps);
  gst_caps_unref(src_caps);
  gst_element_class_set_static_metadata(element_class, "Tensor batch", "Filter/Tensor",
                                        "Gathers one tensor per stream into one batched tensor, each stream writing "
                                        "its slot in place",
                                        GST_TENSOR_MEM_AUTHOR);
  element_class->release_pad = gst_tensor_batch_release_pad;
  element_class->change_state = gst_tensor_batch_change_state;
  element_class->set_context = gst_tensor_batch_set_context;
  auto *agg_class = GST_AGGREGATOR_CLASS(klass);
  agg_class->aggregate = gst_tensor_batch_aggregate;
  agg_class->sink_event = gst_tensor_batch_sink_event;
  agg_class->sink_event_pre_queue = gst_tensor_batch_sink_event_pre_queue;
  agg_class->sink_query = gst_tensor_batch_sink_query;
  agg_class->src_query = gst_tensor_batch_src_query;
  agg_class->src_event = gst_tensor_batch_src_event;
  agg_class->get_next_time = gst_tensor_batch_get_next_time;
  agg_class->negotiate = gst_tensor_batch_negotiate;
  agg_class->flush = gst_tensor_batch_flush;
  agg_class->create_new_pad = gst_tensor_batch_create_new_pad;
  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_BATCH_PAD, static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_tensor_batch_debug, "tensorbatch", 0, "tensorbatch");
}

static void gst_tensor_batch_init(GstTensorMemBatch *self) {
  self->assembler = new std::shared_ptr<Assembler>(std::make_shared<Assembler>());
  self->timer = nullptr;
  self->waits = g_cancellable_new();
  // The device of whichever family the streams negotiate (a GL worker for
  // PBO batches), found through GstContext.
  self->devices = new gst_tensormem::ElementBackend(GST_ELEMENT_CAST(self), GST_TENSOR_MEM_STORAGE_AUTO);
}
