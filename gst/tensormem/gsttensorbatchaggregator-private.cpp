// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbatchaggregator-private.h>

#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorfencemeta.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(batch_aggregator_debug);
#define GST_CAT_DEFAULT batch_aggregator_debug

namespace gst_tensormem {

namespace {

/* The structure name of the wake event. */
constexpr const char *kWake = "GstTensorMemBatchWake";

void init_debug() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(batch_aggregator_debug, "tensormembatch", 0, "batches assembled from several streams");
    g_once_init_leave(&done, 1);
  }
}

/* Sends a wake into `pad`, whose stream lock the caller holds or may take. */
void send_wake(GstPad *pad, BatchReason why) {
  GST_LOG_OBJECT(pad, "waking the source task (reason %d)", static_cast<int>(why));
  GstStructure *st = gst_structure_new(kWake, "reason", G_TYPE_INT, static_cast<gint>(why), nullptr);
  gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, st));
}

/* The sink pads of `agg`, each a new reference. */
std::vector<GstAggregatorPad *> sink_pads(GstAggregator *agg) {
  std::vector<GstAggregatorPad *> pads;
  GST_OBJECT_LOCK(agg);
  for (GList *l = GST_ELEMENT_CAST(agg)->sinkpads; l; l = l->next)
    pads.push_back(GST_AGGREGATOR_PAD(gst_object_ref(l->data)));
  GST_OBJECT_UNLOCK(agg);
  return pads;
}

void unref_all(std::vector<GstAggregatorPad *> &pads) {
  for (GstAggregatorPad *p : pads)
    gst_object_unref(p);
  pads.clear();
}

/* `buffer`'s running time in `pad`'s sticky segment (the aggregator's own
 * copy follows its queue, which frames skip). */
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

/* The source pad of an aggregator, as the assembler sends batches to it. */
class AggregatorOutput final : public BatchOutput {
public:
  explicit AggregatorOutput(GstAggregator *agg) : agg_(agg) {}
  bool has_caps() override { return gst_pad_has_current_caps(agg_->srcpad); }
  void set_caps(GstCaps *caps) override {
    gst_aggregator_set_src_caps(agg_, caps); // stream-start and caps go with the next buffer
    gst_caps_unref(caps);
  }
  void set_segment(const GstSegment &segment) override { gst_aggregator_update_segment(agg_, &segment); }
  void push_event(GstEvent *event) override { gst_pad_push_event(agg_->srcpad, event); }
  GstFlowReturn push(GstBuffer *batch) override { return gst_aggregator_finish_buffer(agg_, batch); }
  void failed(guint64 seq, const std::string &why) override {
    GST_ELEMENT_ERROR(agg_, RESOURCE, FAILED, ("Cannot hand batch %" G_GUINT64_FORMAT " on", seq), ("%s", why.c_str()));
  }

private:
  GstAggregator *agg_;
};

} // namespace

GstFlowReturn batch_aggregator_place(GstAggregator *agg, BatchAssembler &s, GstPad *pad, guint id, GstBuffer *buffer,
                                     GCancellable *waits, bool *late) {
  init_debug();
  *late = false;
  batch_window_delivered(buffer);
  GstFlowReturn flow = GST_FLOW_OK;
  const PlaceResult r = s.place_waiting(
      id, buffer, frame_running_time(pad, buffer),
      [agg, waits](GstBuffer *b) {
        return gst_tensor_mem_element_wait_fences(GST_ELEMENT_CAST(agg), b, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, waits,
                                                  nullptr);
      },
      [pad](BatchReason why) { send_wake(pad, why); }, &flow);
  if (r.status == PlaceStatus::Placed) {
    // A complete batch leaves; an incomplete one may start a live
    // deadline, which the source task computes when it wakes.
    send_wake(pad, BatchReason::Complete);
    return flow == GST_FLOW_FLUSHING ? GST_FLOW_OK : flow;
  }
  gst_buffer_unref(buffer);
  switch (r.status) {
  case PlaceStatus::Late: *late = true; return GST_FLOW_OK;
  case PlaceStatus::NeedsFenceWait: return flow;
  case PlaceStatus::NotNegotiated:
    GST_ELEMENT_ERROR(agg, CORE, NEGOTIATION, ("%s", r.what.c_str()), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  case PlaceStatus::Refused:
    GST_ELEMENT_ERROR(agg, STREAM, FAILED, ("%s", r.what.c_str()), ("%s", r.detail.c_str()));
    return GST_FLOW_ERROR;
  default: return GST_FLOW_FLUSHING;
  }
}

GstFlowReturn batch_aggregator_send(GstAggregator *agg, BatchAssembler &s, BatchReason why, BatchReason then) {
  AggregatorOutput out(agg);
  return batch_send_ready(s, why, then, out);
}

bool batch_aggregator_take_caps(GstAggregator *agg, BatchAssembler &s, ElementBackend &devices, guint id, GstPad *pad,
                                GstEvent *event) {
  std::string what, detail;
  bool resource = false;
  GstCaps *caps = nullptr;
  if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
    gst_event_parse_caps(event, &caps);
    if (s.take_stream_caps(id, GST_PAD_NAME(pad), caps, devices, &what, &detail, &resource))
      return true;
  } else if (!gst_tensor_mem_frame_tensor_event_parse(event, &caps) ||
             s.take_frame_tensor(id, GST_PAD_NAME(pad), caps, devices, &what, &detail, &resource)) {
    return true;
  }
  if (resource)
    GST_ELEMENT_ERROR(agg, RESOURCE, FAILED, ("%s", what.c_str()), ("%s", detail.c_str()));
  else
    GST_ELEMENT_ERROR(agg, CORE, NEGOTIATION, ("%s", what.c_str()), ("%s", detail.c_str()));
  return false;
}

void batch_aggregator_wake(GstAggregator *agg, BatchAssembler &s, BatchReason why) {
  init_debug();
  std::vector<GstAggregatorPad *> pads = sink_pads(agg);
  bool sent = false;
  for (GstAggregatorPad *pad : pads) {
    if (gst_aggregator_pad_is_eos(pad) || !GST_PAD_STREAM_TRYLOCK(GST_PAD_CAST(pad)))
      continue;
    send_wake(GST_PAD_CAST(pad), why);
    GST_PAD_STREAM_UNLOCK(GST_PAD_CAST(pad));
    sent = true;
    break;
  }
  unref_all(pads);
  if (!sent)
    s.wake_later(why);
}

bool batch_aggregator_is_wake(GstEvent *event, BatchReason *why) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_CUSTOM_DOWNSTREAM || !gst_event_has_name(event, kWake))
    return false;
  gint reason = static_cast<gint>(BatchReason::Complete);
  gst_structure_get_int(gst_event_get_structure(event), "reason", &reason);
  *why = static_cast<BatchReason>(reason);
  return true;
}

bool batch_aggregator_all_ended(GstAggregator *agg) {
  std::vector<GstAggregatorPad *> pads = sink_pads(agg);
  bool all = !pads.empty();
  for (GstAggregatorPad *pad : pads)
    all = all && gst_aggregator_pad_is_eos(pad) && !gst_aggregator_pad_has_buffer(pad);
  unref_all(pads);
  return all;
}

bool batch_aggregator_seek_again(BatchAssembler &s, GstEvent *event) {
  const guint32 seqnum = gst_event_get_seqnum(event);
  std::lock_guard<std::mutex> guard(s.lock);
  return std::exchange(s.seek_seqnum, seqnum) == seqnum;
}

} // namespace gst_tensormem
