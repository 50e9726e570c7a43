// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorbatch
 * @title: tensorbatch
 *
 * Gathers one tensor from each of several streams into one batched tensor:
 * N streams of `other/tensors` (one tensor each, all of the same type and
 * dimensions) become one `other/tensors` stream whose tensor has a batch
 * axis of `batch-size` slots, slot i holding stream i's tensor (NCHW in,
 * N×C×H×W out; NHWC in, N×H×W×C out). The batch axis is the per-stream
 * tensor's outermost axis where that is 1 (the batch of one tensorconvert
 * makes), else a new outermost axis.
 *
 * Slots are written in place: each sink pad answers its allocation query
 * with a pool whose buffers are windows of the batch being assembled, and
 * `tensorconvert` takes such a pool (on its GL path too, where the batch is
 * a PBO; see Memory below), so each stream's tensor is
 * written straight into its slot and the whole batch goes downstream as one
 * buffer over one allocation, without a copy. A buffer that is not its
 * slot's window (a producer that ignored the pool) is copied into the slot,
 * counted in `copied-bytes` and refused under `require-zero-copy`; a window
 * whose batch left without it (the timeout) is dropped and counted on its
 * pad (`dropped`) and in `dropped-frames`. Fences on the slots' buffers travel with the
 * batch; a batch's allocation is used again only when every buffer over it
 * (the batch and each slot's window) has been released.
 *
 * Batches follow the streams' running time: each stands for one step of a
 * grid whose step is the shortest frame duration among the streams, and
 * holds of each stream the frame of its time (tensorconvert tells the slot
 * pool each frame's running time); a slower stream's slot is empty and
 * flagged in the batches between its frames.
 *
 * A batch leaves when every stream that has not ended has filled its slot
 * or passed it;
 * with `timeout` set, also when that long has passed since its first slot
 * was filled (a partial batch: the empty slots hold `pad-value`, 0 by
 * default, and are flagged), so a
 * stalled stream does not stall the others. Where the streams are live, a
 * batch also leaves at its first frame's running time plus their latency
 * plus `max-latency`, which is added to the latency it reports. Each batch carries a
 * #GstTensorMemBatchMeta saying per slot which stream it came from, its
 * timestamps, whether it was filled (or copied) and how the frame was fitted
 * (from #GstTensorMemResizeMeta), so results map back to each stream's frame;
 * on GStreamer 1.26 also a GstTensorMeta with the batched dims. The batch's
 * timestamp is the earliest of its frames'. A stream that ends stops being
 * waited for, and a #GST_TENSOR_MEM_STREAM_END_EVENT follows the last batch
 * holding its frames (tensorunbatch ends that stream's pad on it); EOS goes
 * out when every stream has ended. A sink pad released while its frames
 * are in the batches being made drops them (`dropped-frames`).
 *
 * `batch-size` 0 (the default) makes one slot per sink pad; pads requested
 * or released while playing change the batch (and the caps) at the next
 * batch boundary. A fixed `batch-size` keeps the tensor's shape, for models
 * exported with a fixed batch: slots no pad feeds stay empty, and more pads
 * than slots are refused with a message naming batch-size and the pad
 * count: an element error when the element starts (so gst-launch prints
 * it), a warning and no pad when one is requested while it runs.
 *
 * Memory: system memory, or one DMA-BUF per batch where the streams
 * negotiate `memory:DMABuf`, or one PBO per batch where they negotiate
 * `memory:TensorPBO` (tensorconvert's GL path): the slots are then windows
 * of that PBO, and each stream's GL pass writes its slot in place where it
 * runs on the batch's GL worker (found through GstContext, as tensorconvert
 * finds its own, so a pipeline shares one) and its tensor is a whole number
 * of 32-bit words; the batch carries every slot's EGL fence.
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
#include <gst/tensormem/gsttensorbatchassembler-private.h>
#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemconfig.h>

#include <gio/gio.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_batch_debug);
#define GST_CAT_DEFAULT gst_tensor_batch_debug

namespace {

using Assembler = gst_tensormem::BatchAssembler;
using gst_tensormem::BatchReason;
using gst_tensormem::kBatchNoSlot;

} // namespace

/* ---- the element ---- */

struct _GstTensorMemBatchPad {
  GstPad parent;
  guint id;
  std::atomic<guint64> dropped; // this stream's frames that came after their batch left
};

G_DEFINE_TYPE(GstTensorMemBatchPad, gst_tensor_batch_pad, GST_TYPE_PAD)

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
  GstElement parent;
  GstPad *srcpad;
  std::shared_ptr<Assembler> *assembler; // shared with the slot pools and the timer
  std::mutex *push_lock; // one batch downstream at a time, in order; taken before the assembler's lock
  std::thread *timer;
  GCancellable *waits;                    // cancels fence waits on flush and PAUSED→READY
  gst_tensormem::ElementBackend *devices; // the GL worker of PBO batches, shared through GstContext
  // Streaming state of the source pad, under push_lock.
  bool sent_stream_start, sent_segment;
  GstEvent *segment; // the first stream's segment, sent before the first batch
};

enum {
  PROP_0,
  PROP_BATCH_SIZE,
  PROP_TIMEOUT,
  PROP_MAX_LATENCY,
  PROP_PAD_VALUE,
  PROP_STORAGE,
  PROP_REQUIRE_ZERO_COPY,
  PROP_COPIED_BYTES,
  PROP_BATCHES,
  PROP_PARTIAL,
  PROP_DROPPED
};

/* One tensor per stream in, and the batch out, in the memory of every
 * family of the backend table that holds batches (holds_batches: system,
 * DMA-BUF, PBO where built): a new family joins by its table entry. */
#define BATCH_TENSOR_CAPS "other/tensors, format=(string)static, num_tensors=(int)1"

G_DEFINE_TYPE(GstTensorMemBatch, gst_tensor_batch, GST_TYPE_ELEMENT)

namespace {

/* The batch stream's start (under push_lock). Its id is made here, as
 * GstAggregator makes its own: gst_pad_create_stream_id() derives an id
 * from the one sink pad of an element, and this one has several. */
void push_stream_start(GstTensorMemBatch *self) {
  gchar *id = g_strdup_printf("%s-%08x", GST_OBJECT_NAME(self), g_random_int());
  gst_pad_push_event(self->srcpad, gst_event_new_stream_start(id));
  g_free(id);
  self->sent_stream_start = true;
}

Assembler &assembler_of(GstTensorMemBatch *self) { return **self->assembler; }

/* The element's clock (a new reference) and base time while PLAYING; NULL
 * before, or without a clock. */
GstClock *playing_clock(GstTensorMemBatch *self, GstClockTime *base) {
  GstElement *element = GST_ELEMENT_CAST(self);
  GST_OBJECT_LOCK(element);
  GstClock *clock = GST_STATE(element) == GST_STATE_PLAYING && element->clock
                        ? GST_CLOCK_CAST(gst_object_ref(element->clock))
                        : nullptr;
  *base = element->base_time;
  GST_OBJECT_UNLOCK(element);
  return clock;
}

/* The pipeline's running time now; NONE before PLAYING or without a clock. */
GstClockTime running_time_now(GstTensorMemBatch *self) {
  GstClockTime base = 0;
  GstClock *clock = playing_clock(self, &base);
  if (!clock)
    return GST_CLOCK_TIME_NONE;
  const GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  return now >= base ? now - base : 0;
}

/* Sends the front batch downstream when `why` holds for it. Called under
 * the push lock, without the assembler's lock. */
GstFlowReturn emit_batch(GstTensorMemBatch *self, BatchReason why) {
  Assembler &s = assembler_of(self);
  const GstClockTime now = why == BatchReason::Timeout ? running_time_now(self) : GST_CLOCK_TIME_NONE;
  std::unique_lock<std::mutex> lock(s.lock);
  gst_tensormem::TakenBatch taken;
  if (!s.take_front(why, now, gst_pad_has_current_caps(self->srcpad), &taken))
    return s.last_flow;
  lock.unlock();
  const guint64 seq = taken.seq;
  const bool partial = taken.partial;
  GstCaps *caps = taken.caps;
  std::string failure;
  GstBuffer *out =
      gst_tensormem::batch_make_output(taken.batch, seq, *taken.family, taken.tensor, taken.pad_value, &failure);
  if (!out) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot hand batch %" G_GUINT64_FORMAT " on", seq),
                      ("%s", failure.c_str()));
    gst_clear_caps(&caps);
    lock.lock();
    s.last_flow = GST_FLOW_ERROR;
    return GST_FLOW_ERROR;
  }
  ++s.batches;
  if (partial)
    ++s.partial_batches;
  if (!self->sent_stream_start)
    push_stream_start(self);
  if (caps) {
    GstCaps *current = gst_pad_get_current_caps(self->srcpad);
    if (!current || !gst_caps_is_equal(caps, current))
      gst_pad_push_event(self->srcpad, gst_event_new_caps(caps));
    gst_clear_caps(&current);
    gst_caps_unref(caps);
  }
  if (!self->sent_segment) {
    GstEvent *segment = nullptr;
    GST_OBJECT_LOCK(self);
    if (self->segment)
      segment = gst_event_ref(self->segment);
    GST_OBJECT_UNLOCK(self);
    if (!segment) {
      GstSegment time;
      gst_segment_init(&time, GST_FORMAT_TIME);
      segment = gst_event_new_segment(&time);
    }
    gst_pad_push_event(self->srcpad, segment);
    self->sent_segment = true;
  }
  std::vector<std::pair<std::string, GstEvent *>> stream_events;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    stream_events.swap(s.stream_events);
  }
  for (auto &[key, event] : stream_events)
    gst_pad_push_event(self->srcpad, event);
  GST_LOG_OBJECT(self, "batch %" G_GUINT64_FORMAT "%s: %" GST_PTR_FORMAT, seq, partial ? " (partial)" : "", out);
  const GstFlowReturn ret = gst_pad_push(self->srcpad, out);
  lock.lock();
  s.last_flow = ret;
  return ret;
}

/* Sends the stream-end events whose streams' last batches have gone (under
 * the push lock). Where no batch went downstream yet, no frame of the
 * stream did either, and its end is dropped. */
void send_due_ends(GstTensorMemBatch *self) {
  Assembler &s = assembler_of(self);
  std::vector<gst_tensormem::BatchStreamEnd> due;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    due = s.take_due_ends();
  }
  for (const auto &e : due) {
    GST_DEBUG_OBJECT(self, "stream %s %s", e.stream.c_str(), e.released ? "left" : "ended");
    if (self->sent_stream_start)
      gst_pad_push_event(self->srcpad, gst_tensor_mem_stream_end_event_new(e.stream.c_str(), e.released));
  }
}

/* Sends the front batch downstream when `why` holds for it, then the
 * stream ends that are due. Called with no lock held; one caller at a time
 * pushes. */
GstFlowReturn emit(GstTensorMemBatch *self, BatchReason why) {
  std::lock_guard<std::mutex> pushing(*self->push_lock);
  Assembler &s = assembler_of(self);
  GstFlowReturn ret;
  for (;;) {
    const guint64 before = s.cur_seq;
    ret = emit_batch(self, why);
    send_due_ends(self);
    // The next batch may be complete already: every stream filled it or
    // passed it (on the time grid).
    std::lock_guard<std::mutex> guard(s.lock);
    if (ret != GST_FLOW_OK || s.cur_seq == before || s.open.empty() || !s.complete(s.open.front(), s.cur_seq))
      break;
    why = BatchReason::Complete;
  }
  return ret;
}

guint stream_id(GstPad *pad) { return GST_TENSOR_BATCH_PAD(pad)->id; }

GstFlowReturn refuse(GstTensorMemBatch *self, GstBuffer *buffer, const std::string &what, const std::string &detail) {
  gst_buffer_unref(buffer);
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", what.c_str()), ("%s", detail.c_str()));
  return GST_FLOW_ERROR;
}

} // namespace

namespace {

/* `buffer`'s running time in its stream's segment; NONE without a time. */
GstClockTime frame_running_time(GstPad *pad, GstBuffer *buffer) {
  if (!GST_BUFFER_PTS_IS_VALID(buffer))
    return GST_CLOCK_TIME_NONE;
  GstEvent *event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
  if (!event)
    return GST_CLOCK_TIME_NONE;
  const GstSegment *segment = nullptr;
  gst_event_parse_segment(event, &segment);
  const GstClockTime t = segment->format == GST_FORMAT_TIME
                             ? gst_segment_to_running_time(segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buffer))
                             : GST_CLOCK_TIME_NONE;
  gst_event_unref(event);
  return t;
}

} // namespace

static GstFlowReturn gst_tensor_batch_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer) {
  auto *self = GST_TENSOR_BATCH(parent);
  Assembler &s = assembler_of(self);
  // Delivered: the window's watch goes (before the lock: the buffer may be
  // dropped under it below).
  gst_tensormem::batch_window_delivered(buffer);
  const GstClockTime running_time = frame_running_time(pad, buffer);
  bool waited = false;
  std::unique_lock<std::mutex> lock(s.lock);
  for (;;) {
    gst_tensormem::PlaceResult r = s.place(stream_id(pad), buffer, running_time, waited);
    switch (r.status) {
    case gst_tensormem::PlaceStatus::Placed: {
      const GstFlowReturn last = s.last_flow;
      lock.unlock();
      if (r.complete)
        return emit(self, BatchReason::Complete);
      return last == GST_FLOW_FLUSHING ? GST_FLOW_OK : last;
    }
    case gst_tensormem::PlaceStatus::Wait: s.cond.wait(lock); continue;
    case gst_tensormem::PlaceStatus::Late:
      // Dropped and counted on its pad too (the element's count is in place()).
      lock.unlock();
      GST_TENSOR_BATCH_PAD(pad)->dropped.fetch_add(1);
      gst_buffer_unref(buffer);
      return GST_FLOW_OK;
    case gst_tensormem::PlaceStatus::NeedsFenceWait: {
      // A copy reads the frame: its producer's writes first, without the lock.
      lock.unlock();
      const GstFlowReturn fenced = gst_tensor_mem_element_wait_fences(
          GST_ELEMENT_CAST(self), buffer, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, self->waits, nullptr);
      if (fenced != GST_FLOW_OK) {
        gst_buffer_unref(buffer);
        return fenced;
      }
      waited = true;
      lock.lock();
      continue;
    }
    case gst_tensormem::PlaceStatus::Flushing: gst_buffer_unref(buffer); return GST_FLOW_FLUSHING;
    case gst_tensormem::PlaceStatus::NotNegotiated:
      lock.unlock();
      gst_buffer_unref(buffer);
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s", r.what.c_str()), (nullptr));
      return GST_FLOW_NOT_NEGOTIATED;
    case gst_tensormem::PlaceStatus::Refused: lock.unlock(); return refuse(self, buffer, r.what, r.detail);
    }
  }
}

namespace {

/* Answers a caps query with `caps` (taken) as the query's filter allows. */
gboolean answer_caps_query(GstQuery *query, GstCaps *caps) {
  GstCaps *filter = nullptr;
  gst_query_parse_caps(query, &filter);
  if (filter) {
    GstCaps *both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = both;
  }
  gst_query_set_caps_result(query, caps);
  gst_caps_unref(caps);
  return TRUE;
}

/* The per-stream tensor of `caps`, checked against the batch's. */
gboolean sink_set_caps(GstTensorMemBatch *self, GstPad *pad, GstCaps *caps) {
  Assembler &s = assembler_of(self);
  const GstStructure *st = gst_caps_get_structure(caps, 0);
  gst_tensormem::TensorCaps tensor;
  std::string why;
  if (!gst_tensormem::parse_tensor_caps(st, &tensor, &why)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s: %s", GST_PAD_NAME(pad), why.c_str()),
                      ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  // The batches live in the memory the streams' caps name (one PBO per
  // batch for the GL path's tensors, on the GL worker the pipeline
  // shares), or in the storage property's for plain caps.
  const gst_tensormem::Backend *family = gst_tensormem::backend_of_caps(caps, 0);
  if (!family || !family->new_window) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s: no batch can be made in this memory", GST_PAD_NAME(pad)),
                      ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  GstTensorMemStorage storage;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    storage = s.storage;
  }
  if (!family->caps_feature && storage != GST_TENSOR_MEM_STORAGE_AUTO)
    family = &gst_tensormem::backend_for(storage);
  GstObject *device = nullptr;
  if (family->ensure_device) {
    GError *error = nullptr;
    if (!self->devices->find_device(*family, &error)) {
      GST_ELEMENT_ERROR(self, RESOURCE, FAILED,
                        ("%s: batches of %s memory need its device: %s", GST_PAD_NAME(pad), family->memory_name,
                         error ? error->message : "none"),
                        ("caps %" GST_PTR_FORMAT, caps));
      g_clear_error(&error);
      return FALSE;
    }
    device = self->devices->device_of(*family);
  }
  std::string what, detail;
  bool ok;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    ok = s.set_stream_caps(stream_id(pad), caps, tensor, family, &device, &what, &detail);
  }
  gst_clear_object(&device);
  if (!ok)
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s", what.c_str()), ("%s", detail.c_str()));
  return ok;
}

} // namespace

static gboolean gst_tensor_batch_sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
  auto *self = GST_TENSOR_BATCH(parent);
  Assembler &s = assembler_of(self);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS: {
    GstCaps *caps = nullptr;
    gst_event_parse_caps(event, &caps);
    const gboolean ok = sink_set_caps(self, pad, caps);
    gst_event_unref(event);
    return ok;
  }
  case GST_EVENT_SEGMENT: {
    GST_OBJECT_LOCK(self);
    if (!self->segment)
      self->segment = gst_event_ref(event);
    GST_OBJECT_UNLOCK(self);
    // Each stream's own segment follows as a stream-segment event, so that
    // the split gives each stream its own; its tags go to its own pad
    // after the split too, never onto the batch (whose other streams they
    // do not describe).
    const GstSegment *segment = nullptr;
    gst_event_parse_segment(event, &segment);
    s.stream_segment(stream_id(pad), segment);
    gst_event_unref(event);
    return TRUE;
  }
  case GST_EVENT_TAG: {
    GstTagList *tags = nullptr;
    gst_event_parse_tag(event, &tags);
    s.stream_tags(stream_id(pad), tags);
    gst_event_unref(event);
    return TRUE;
  }
  case GST_EVENT_STREAM_START: gst_event_unref(event); return TRUE;
  case GST_EVENT_EOS: {
    const bool all = s.stream_ended(stream_id(pad));
    gst_event_unref(event);
    if (!all) { // the others go on; the front batch may wait for this stream no longer
      emit(self, BatchReason::Complete);
      return TRUE;
    }
    emit(self, BatchReason::Drain);
    std::lock_guard<std::mutex> pushing(*self->push_lock);
    if (!self->sent_stream_start)
      push_stream_start(self);
    return gst_pad_push_event(self->srcpad, gst_event_new_eos());
  }
  case GST_EVENT_FLUSH_START: {
    const bool forward = s.flush_started(stream_id(pad), gst_event_get_seqnum(event));
    if (!forward) {
      gst_event_unref(event);
      return TRUE;
    }
    g_cancellable_cancel(self->waits);
    GST_OBJECT_LOCK(self);
    gst_clear_event(&self->segment); // the streams send new ones: the first is the batch's
    GST_OBJECT_UNLOCK(self);
    return gst_pad_push_event(self->srcpad, event);
  }
  case GST_EVENT_FLUSH_STOP: {
    // Under the push lock: no batch may reach downstream between the last
    // stream's flush-stop here and ours there (it would be flushed away).
    std::lock_guard<std::mutex> pushing(*self->push_lock);
    const bool done = s.flush_stopped(stream_id(pad));
    if (!done) {
      gst_event_unref(event);
      return TRUE;
    }
    g_cancellable_reset(self->waits);
    self->sent_segment = false;
    return gst_pad_push_event(self->srcpad, event);
  }
  default: break;
  }
  if (static_cast<guint>(GST_EVENT_TYPE(event)) & static_cast<guint>(GST_EVENT_TYPE_SERIALIZED)) {
    // One stream's gaps and the like say nothing about the batch.
    gst_event_unref(event);
    return TRUE;
  }
  return gst_pad_event_default(pad, parent, event);
}

static gboolean gst_tensor_batch_sink_query(GstPad *pad, GstObject *parent, GstQuery *query) {
  auto *self = GST_TENSOR_BATCH(parent);
  switch (GST_QUERY_TYPE(query)) {
  case GST_QUERY_CAPS:
    // The template, not the first stream's tensor: a stream with another
    // tensor then reaches set_caps and is refused there by name, instead of
    // failing upstream as a bare not-negotiated.
    return answer_caps_query(query, gst_pad_get_pad_template_caps(pad));
  case GST_QUERY_ALLOCATION:
    // The slot pool: windows of the batch this stream's next frame is for.
    gst_tensormem::batch_answer_allocation(*self->assembler, stream_id(pad), query);
    return TRUE;
  case GST_QUERY_CONTEXT:
    if (self->devices->handle_context_query(query))
      return TRUE;
    return gst_pad_query_default(pad, parent, query);
  default: return gst_pad_query_default(pad, parent, query);
  }
}

/* A flushing seek goes to every stream; its seqnum tells its flush-starts. */
static gboolean gst_tensor_batch_src_event(GstPad *pad, GstObject *parent, GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_SEEK) {
    GstSeekFlags flags;
    gst_event_parse_seek(event, nullptr, nullptr, &flags, nullptr, nullptr, nullptr, nullptr);
    if (flags & GST_SEEK_FLAG_FLUSH) {
      Assembler &s = assembler_of(GST_TENSOR_BATCH(parent));
      std::lock_guard<std::mutex> guard(s.lock);
      s.seek_seqnum = gst_event_get_seqnum(event);
    }
  }
  return gst_pad_event_default(pad, parent, event);
}

static gboolean gst_tensor_batch_src_query(GstPad *pad, GstObject *parent, GstQuery *query) {
  auto *self = GST_TENSOR_BATCH(parent);
  Assembler &s = assembler_of(self);
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS) {
    GstCaps *caps = nullptr;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (s.negotiated)
        caps = s.batch_caps(s.n_slots);
    }
    return answer_caps_query(query, caps ? caps : gst_pad_get_pad_template_caps(pad));
  }
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT && self->devices->handle_context_query(query))
    return TRUE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    // Every stream's answer (GStreamer's default: live if any is, the
    // largest minimum); where live, a batch may wait max-latency more.
    if (!gst_pad_query_default(pad, parent, query))
      return FALSE;
    gboolean live = FALSE;
    GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
    gst_query_parse_latency(query, &live, &min, &max);
    GstClockTime ours;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.live = live;
      s.upstream_latency = min;
      ours = s.max_latency;
      s.cond.notify_all();
    }
    if (live) {
      GST_DEBUG_OBJECT(self, "live streams, latency %" GST_TIME_FORMAT " + max-latency %" GST_TIME_FORMAT,
                       GST_TIME_ARGS(min), GST_TIME_ARGS(ours));
      gst_query_set_latency(query, live, min + ours, GST_CLOCK_TIME_IS_VALID(max) ? max + ours : max);
    }
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

static GstPad *gst_tensor_batch_request_new_pad(GstElement *element, GstPadTemplate *templ, const gchar *req_name,
                                                const GstCaps *) {
  auto *self = GST_TENSOR_BATCH(element);
  Assembler &s = assembler_of(self);
  // Until the element starts, batch-size may still change, so the count is
  // checked then (READY→PAUSED); gst-launch links every pad before it starts
  // and prints only "could not link" for a pad refused here.
  std::string refused;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    if (s.running)
      refused = s.too_many_streams(1);
  }
  if (!refused.empty()) {
    GST_ELEMENT_WARNING(self, CORE, PAD, ("%s", refused.c_str()), (nullptr));
    return nullptr;
  }
  guint id;
  std::string name;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    guint used = 0;
    for (auto &p : s.streams)
      used = std::max(used, p->id + 1);
    id = s.next_stream_id;
    if (req_name && sscanf(req_name, "sink_%u", &id) == 1) {
      if (s.stream(id)) {
        GST_WARNING_OBJECT(self, "pad %s exists", req_name);
        return nullptr;
      }
    } else {
      id = std::max(s.next_stream_id, used);
    }
    s.next_stream_id = std::max(s.next_stream_id, id + 1);
    name = "sink_" + std::to_string(id);
  }
  GstPad *pad = GST_PAD_CAST(g_object_new(GST_TYPE_TENSOR_BATCH_PAD, "name", name.c_str(), "direction", GST_PAD_SINK,
                                          "template", templ, nullptr));
  GST_TENSOR_BATCH_PAD(pad)->id = id;
  gst_pad_set_chain_function(pad, gst_tensor_batch_chain);
  gst_pad_set_event_function(pad, gst_tensor_batch_sink_event);
  gst_pad_set_query_function(pad, gst_tensor_batch_sink_query);
  {
    std::lock_guard<std::mutex> guard(s.lock);
    s.add_stream(id, name);
  }
  if (!gst_element_add_pad(element, pad)) {
    std::lock_guard<std::mutex> guard(s.lock);
    s.streams.erase(std::remove_if(s.streams.begin(), s.streams.end(), [id](const auto &p) { return p->id == id; }),
                    s.streams.end());
    gst_object_unref(pad);
    return nullptr;
  }
  return pad;
}

static void gst_tensor_batch_release_pad(GstElement *element, GstPad *pad) {
  auto *self = GST_TENSOR_BATCH(element);
  Assembler &s = assembler_of(self);
  guint dropped;
  {
    // Its frames in the batches being made go with it (counted), and its
    // stream's end follows the batches already sent; the timer sends the
    // front batch where it is complete without this stream.
    std::lock_guard<std::mutex> guard(s.lock);
    dropped = s.remove_stream(stream_id(pad));
  }
  if (dropped)
    GST_INFO_OBJECT(self, "%s released: %u frames in open batches dropped", GST_PAD_NAME(pad), dropped);
  gst_element_remove_pad(element, pad);
}

static GstStateChangeReturn gst_tensor_batch_change_state(GstElement *element, GstStateChange transition) {
  auto *self = GST_TENSOR_BATCH(element);
  Assembler &s = assembler_of(self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    std::string refused;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      refused = s.too_many_streams(0);
    }
    if (!refused.empty()) {
      GST_ELEMENT_ERROR(self, CORE, PAD, ("%s", refused.c_str()), (nullptr));
      return GST_STATE_CHANGE_FAILURE;
    }
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.start();
    }
    g_cancellable_reset(self->waits);
    self->sent_stream_start = self->sent_segment = false;
    self->timer = new std::thread([self, shared = *self->assembler] {
      gst_tensormem::batch_timer_run(
          shared, [self](GstClockTime *base) { return playing_clock(self, base); },
          [self](BatchReason why) { emit(self, why); });
    });
  } else if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    // Every wait (a pool's acquire, a chain waiting for its batch, a fence)
    // ends now, so the pads can deactivate.
    std::lock_guard<std::mutex> guard(s.lock);
    s.running = false;
    s.cond.notify_all();
    g_cancellable_cancel(self->waits);
  }
  const GstStateChangeReturn ret = GST_ELEMENT_CLASS(gst_tensor_batch_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    if (self->timer) {
      self->timer->join();
      delete self->timer;
      self->timer = nullptr;
    }
    std::lock_guard<std::mutex> guard(s.lock);
    // One line per run saying what the element did, as the transforms log
    // theirs (GST_DEBUG=tensorbatch:4; the demo prints it).
    GST_INFO_OBJECT(self,
                    "summary: %" G_GUINT64_FORMAT " batches, %" G_GUINT64_FORMAT " partial, of %u slots in %s; "
                    "copied-bytes=%" G_GUINT64_FORMAT,
                    s.batches.load(), s.partial_batches.load(), s.n_slots, s.family->memory_name,
                    s.copied_bytes.load());
    s.stop();
    GST_OBJECT_LOCK(self);
    gst_clear_event(&self->segment);
    GST_OBJECT_UNLOCK(self);
  } else if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    // The next run takes the device shared then; the kept allocations go
    // with this one (a new store: the old one frees them, and those still
    // out are freed when they come back).
    std::shared_ptr<gst_tensormem::BatchStore> old;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      gst_clear_object(&s.device);
      old = std::exchange(s.store, gst_tensormem::BatchStore::create(gst_tensormem::kBatchFreeKept));
    }
    old.reset();
    self->devices->close();
  }
  return ret;
}

static void gst_tensor_batch_set_context(GstElement *element, GstContext *context) {
  GST_TENSOR_BATCH(element)->devices->handle_set_context(context);
  GST_ELEMENT_CLASS(gst_tensor_batch_parent_class)->set_context(element, context);
}

static void gst_tensor_batch_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (prop_id == PROP_MAX_LATENCY) {
    Assembler &s = assembler_of(GST_TENSOR_BATCH(object));
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.max_latency = g_value_get_uint64(value);
      s.cond.notify_all();
    }
    // The pipeline's latency changes with it: sinks query it again.
    gst_element_post_message(GST_ELEMENT(object), gst_message_new_latency(GST_OBJECT(object)));
    return;
  }
  Assembler &s = assembler_of(GST_TENSOR_BATCH(object));
  std::lock_guard<std::mutex> guard(s.lock);
  switch (prop_id) {
  case PROP_BATCH_SIZE: s.batch_size = g_value_get_uint(value); break;
  case PROP_TIMEOUT:
    s.timeout = g_value_get_uint64(value);
    s.cond.notify_all();
    break;
  case PROP_PAD_VALUE: s.pad_value = g_value_get_double(value); break;
  case PROP_REQUIRE_ZERO_COPY: s.require_zero_copy = g_value_get_boolean(value); break;
  case PROP_STORAGE: s.storage = static_cast<GstTensorMemStorage>(g_value_get_enum(value)); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_batch_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  Assembler &s = assembler_of(GST_TENSOR_BATCH(object));
  std::lock_guard<std::mutex> guard(s.lock);
  switch (prop_id) {
  case PROP_BATCH_SIZE: g_value_set_uint(value, s.batch_size); break;
  case PROP_TIMEOUT: g_value_set_uint64(value, s.timeout); break;
  case PROP_MAX_LATENCY: g_value_set_uint64(value, s.max_latency); break;
  case PROP_PAD_VALUE: g_value_set_double(value, s.pad_value); break;
  case PROP_REQUIRE_ZERO_COPY: g_value_set_boolean(value, s.require_zero_copy); break;
  case PROP_STORAGE: g_value_set_enum(value, s.storage); break;
  case PROP_COPIED_BYTES: g_value_set_uint64(value, s.copied_bytes.load()); break;
  case PROP_BATCHES: g_value_set_uint64(value, s.batches.load()); break;
  case PROP_PARTIAL: g_value_set_uint64(value, s.partial_batches.load()); break;
  case PROP_DROPPED: g_value_set_uint64(value, s.dropped.load()); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_batch_finalize(GObject *object) {
  auto *self = GST_TENSOR_BATCH(object);
  delete self->assembler;
  delete self->push_lock;
  delete self->devices;
  g_clear_object(&self->waits);
  gst_clear_event(&self->segment);
  G_OBJECT_CLASS(gst_tensor_batch_parent_class)->finalize(object);
}

static void gst_tensor_batch_class_init(GstTensorMemBatchClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  gobject_class->set_property = gst_tensor_batch_set_property;
  gobject_class->get_property = gst_tensor_batch_get_property;
  gobject_class->finalize = gst_tensor_batch_finalize;
  constexpr auto kRw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  constexpr auto kRo = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint("batch-size", "Batch size",
                        "Slots per batch (the tensor's batch axis); 0: one per sink pad, following pads as they come "
                        "and go",
                        0, 1024, 0, static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_TIMEOUT,
      g_param_spec_uint64("timeout", "Timeout",
                          "Nanoseconds after its first slot is filled that a batch leaves partial (empty slots hold "
                          "pad-value and are flagged); 0: wait for every stream that has not ended",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_MAX_LATENCY,
      g_param_spec_uint64("max-latency", "Maximum latency",
                          "Where the streams are live: nanoseconds a batch waits, beyond their own latency, after "
                          "the running time of its first frame before it leaves partial (a late or dead stream's slot "
                          "empty and flagged, its late frame dropped and counted on its pad); added to the latency "
                          "the element reports. Not used where no stream is live (see timeout)",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_PAD_VALUE,
      g_param_spec_double("pad-value", "Pad value",
                          "Every element of an empty slot (a partial batch's, or one no stream feeds), in the tensor's "
                          "type (rounded and clamped for integer types)",
                          -G_MAXDOUBLE, G_MAXDOUBLE, 0.0, static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum("storage", "Storage",
                        "Where batches live: system memory (auto, system) or one DMA-BUF per batch (dmabuf; also "
                        "where the streams negotiate memory:DMABuf); streams of memory:TensorPBO (tensorconvert's GL "
                        "path) are batched in one PBO per batch whatever this says",
                        gst_tensormem::batch_storage_enum_type(), GST_TENSOR_MEM_STORAGE_AUTO,
                        static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_REQUIRE_ZERO_COPY,
      g_param_spec_boolean("require-zero-copy", "Require zero copy",
                           "Fail with an element error instead of copying a stream's tensor into its slot", FALSE,
                           static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(gobject_class, PROP_COPIED_BYTES,
                                  g_param_spec_uint64("copied-bytes", "Copied bytes",
                                                      "Bytes copied into slots (0 when every producer wrote its slot "
                                                      "in place)",
                                                      0, G_MAXUINT64, 0, kRo));
  g_object_class_install_property(
      gobject_class, PROP_BATCHES,
      g_param_spec_uint64("batches", "Batches", "Batches sent downstream", 0, G_MAXUINT64, 0, kRo));
  g_object_class_install_property(gobject_class, PROP_PARTIAL,
                                  g_param_spec_uint64("partial-batches", "Partial batches",
                                                      "Batches that left with empty slots (timeout, ended streams)", 0,
                                                      G_MAXUINT64, 0, kRo));
  g_object_class_install_property(gobject_class, PROP_DROPPED,
                                  g_param_spec_uint64("dropped-frames", "Dropped frames",
                                                      "Frames that never left in a batch: those that came after their "
                                                      "batch left (timeout; each pad's own count is its dropped "
                                                      "property), and those in the batches being made when their "
                                                      "sink pad was released",
                                                      0, G_MAXUINT64, 0, kRo));
  GstCaps *caps = gst_tensormem::template_caps(BATCH_TENSOR_CAPS, gst_tensormem::TemplateFamilies::Batches);
  gst_element_class_add_pad_template(
      element_class,
      gst_pad_template_new_with_gtype("sink_%u", GST_PAD_SINK, GST_PAD_REQUEST, caps, GST_TYPE_TENSOR_BATCH_PAD));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(element_class, "Tensor batch", "Filter/Tensor",
                                        "Gathers one tensor per stream into one batched tensor, each stream writing "
                                        "its slot in place",
                                        GST_TENSOR_MEM_AUTHOR);
  element_class->request_new_pad = gst_tensor_batch_request_new_pad;
  element_class->release_pad = gst_tensor_batch_release_pad;
  element_class->change_state = gst_tensor_batch_change_state;
  element_class->set_context = gst_tensor_batch_set_context;
  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_BATCH_PAD, static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_tensor_batch_debug, "tensorbatch", 0, "tensorbatch");
}

static void gst_tensor_batch_init(GstTensorMemBatch *self) {
  self->assembler = new std::shared_ptr<Assembler>(std::make_shared<Assembler>());
  self->push_lock = new std::mutex();
  self->timer = nullptr;
  self->waits = g_cancellable_new();
  // The device of whichever family the streams negotiate (a GL worker for
  // PBO batches), found through GstContext.
  self->devices = new gst_tensormem::ElementBackend(GST_ELEMENT_CAST(self), GST_TENSOR_MEM_STORAGE_AUTO);
  self->segment = nullptr;
  self->sent_stream_start = self->sent_segment = false;
  self->srcpad =
      gst_pad_new_from_template(gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(self), "src"), "src");
  gst_pad_set_query_function(self->srcpad, gst_tensor_batch_src_query);
  gst_pad_set_event_function(self->srcpad, gst_tensor_batch_src_event);
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT_CAST(self), self->srcpad);
}
