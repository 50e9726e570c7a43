// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbatchassembler-private.h>

#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/tensormem/gsttensoranalytics-private.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

GST_DEBUG_CATEGORY_STATIC(batch_assembler_debug);
#define GST_CAT_DEFAULT batch_assembler_debug

namespace gst_tensormem {

namespace {

void init_debug() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(batch_assembler_debug, "tensormembatch", 0, "batches assembled from several streams");
    g_once_init_leave(&done, 1);
  }
}

/* A CPU write of `size` bytes at `offset` of batch `b`'s allocation:
 * `write` gets the bytes, and the batch remembers that a CPU wrote (its
 * family may need a fence for that). FALSE when they cannot be mapped. */
template <typename Write> bool write_on_cpu(OpenBatch &b, gsize offset, gsize size, Write &&write) {
  if (!batch_write_on_cpu(b.storage, offset, size, std::forward<Write>(write)))
    return false;
  b.cpu_written = true;
  return true;
}

std::string dims_string(const std::vector<std::int64_t> &outermost_first) {
  std::string out;
  for (auto it = outermost_first.rbegin(); it != outermost_first.rend(); ++it) {
    if (!out.empty())
      out += ':';
    out += std::to_string(*it);
  }
  return out;
}

/* The data of the first tensor in `frame`'s GstTensorMeta (the tensor
 * tensorconvert output=meta writes beside the frame), or NULL. */
GstBuffer *frame_tensor(GstBuffer *frame) {
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  const GstTensorMeta *meta = gst_buffer_get_tensor_meta(frame);
  if (meta && meta->num_tensors > 0 && meta->tensors[0])
    return meta->tensors[0]->data;
#else
  (void)frame;
#endif
  return nullptr;
}

/* The batched tensor's shape, outermost first: the per-stream tensor's
 * outermost axis where it is 1, else a new one. */
std::vector<std::int64_t> batched_shape(const TensorCaps &t, guint n) {
  std::vector<std::int64_t> shape = t.shape;
  if (!shape.empty() && shape.front() == 1)
    shape.front() = n;
  else
    shape.insert(shape.begin(), n);
  return shape;
}

} // namespace

BatchAssembler::BatchAssembler() : family(&backend_at(0)), store(BatchStore::create(kBatchFreeKept)) {
  init_debug();
  gst_segment_init(&segment, GST_FORMAT_TIME);
}

BatchAssembler::~BatchAssembler() {
  clear_stream_events();
  for (OpenBatch &batch : open)
    batch.release();
  gst_clear_caps(&stream_caps);
  gst_clear_object(&device);
}

BatchStream *BatchAssembler::stream(guint id) {
  for (auto &p : streams)
    if (p->id == id)
      return p.get();
  return nullptr;
}

bool BatchAssembler::front_is_due() const {
  return !open.empty() && open.front().filled > 0 && timeout > 0 &&
         g_get_monotonic_time() >= open.front().first_fill + static_cast<gint64>(timeout / 1000);
}

GstClockTime BatchAssembler::front_time() {
  std::lock_guard<std::mutex> guard(lock);
  return !open.empty() && open.front().filled > 0 ? open.front().first_running_time : GST_CLOCK_TIME_NONE;
}

guint64 BatchAssembler::seq_of_time(GstClockTime t, guint64 first) {
  if (!GST_CLOCK_TIME_IS_VALID(t_base)) {
    t_base = t;
    base_seq = first;
  }
  const GstClockTime half = period / 2;
  if (t >= t_base)
    return base_seq + (t - t_base + half) / period;
  const guint64 back = (t_base - t + half) / period;
  return back > base_seq ? 0 : base_seq - back;
}

OpenBatch *BatchAssembler::batch(guint64 seq) {
  while (open.size() <= seq - cur_seq) {
    OpenBatch b;
    b.storage = store->acquire(*family, device, slot_bytes, n_slots);
    if (!b.storage)
      return nullptr;
    b.slots.resize(n_slots);
    open.push_back(std::move(b));
  }
  return &open[seq - cur_seq];
}

bool BatchAssembler::complete(const OpenBatch &b, guint64 seq) const {
  return b.filled > 0 && !flush_downstream && passed(b, seq);
}

bool BatchAssembler::passed(const OpenBatch &b, guint64 seq) const {
  for (const auto &p : streams) {
    if (p->slot == kBatchNoSlot || p->slot >= b.slots.size() || p->eos)
      continue;
    const BatchSlotRecord &rec = b.slots[p->slot];
    if (!rec.filled && (rec.acquired || p->next_acquire <= seq))
      return false;
  }
  return true;
}

guint BatchAssembler::forget_frames_of(BatchStream &p) {
  p.next_acquire = cur_seq;
  guint forgotten = 0;
  if (p.slot == kBatchNoSlot)
    return forgotten;
  for (OpenBatch &b : open) {
    if (p.slot >= b.slots.size())
      continue;
    BatchSlotRecord &rec = b.slots[p.slot];
    rec.acquired = false;
    if (!rec.filled)
      continue;
    gst_clear_buffer(&rec.frame);
    rec.filled = rec.copied = false;
    ++forgotten;
    if (--b.filled == 0) {
      b.first_fill = 0;
      b.first_running_time = GST_CLOCK_TIME_NONE;
    }
  }
  return forgotten;
}

guint64 BatchAssembler::end_of_frames(const BatchStream &p) const {
  guint64 at = cur_seq;
  for (std::size_t k = 0; p.slot != kBatchNoSlot && k < open.size(); ++k)
    if (p.slot < open[k].slots.size() && open[k].slots[p.slot].filled)
      at = cur_seq + k + 1;
  return at;
}

bool BatchAssembler::all_ended() const {
  return std::all_of(streams.begin(), streams.end(), [](const auto &p) { return p->eos; });
}

void BatchAssembler::assign_slots() {
  if (batch_size == 0) {
    guint i = 0;
    for (auto &p : streams)
      p->slot = i++;
    return;
  }
  std::vector<bool> used(batch_size, false);
  for (auto &p : streams)
    if (p->slot != kBatchNoSlot && p->slot < batch_size && !used[p->slot])
      used[p->slot] = true;
    else
      p->slot = kBatchNoSlot;
  for (auto &p : streams) {
    if (p->slot != kBatchNoSlot)
      continue;
    for (guint i = 0; i < batch_size; ++i)
      if (!used[i]) {
        used[i] = true;
        p->slot = i;
        break;
      }
  }
}

void BatchAssembler::discard_open() {
  const guint64 skipped = open.size() + kBatchDepth;
  cur_seq += skipped;
  for (OpenBatch &b : open)
    b.release();
  open.clear();
  layout_start = cur_seq;
  // The grid goes on in time: the front batch is again the time the
  // discarded front one had.
  base_seq += skipped;
}

void BatchAssembler::apply_relayout() {
  discard_open();
  const guint n = batch_size ? batch_size : std::max<guint>(1, static_cast<guint>(streams.size()));
  if (n != n_slots) {
    n_slots = n;
    caps_changed = true;
  }
  assign_slots();
  relayout = false;
}

void BatchAssembler::add_stream(guint id, std::string name) {
  auto state = std::make_unique<BatchStream>();
  state->id = id;
  state->name = std::move(name);
  state->next_acquire = cur_seq;
  streams.push_back(std::move(state));
  if (!negotiated)
    return;
  if (batch_size)
    assign_slots();
  else if (open.empty() || open.front().filled == 0)
    apply_relayout();
  else
    relayout = true;
}

guint BatchAssembler::remove_stream(guint id) {
  guint forgotten = 0;
  if (BatchStream *p = stream(id)) {
    forgotten = forget_frames_of(*p);
    dropped += forgotten;
    if (running && p->slot != kBatchNoSlot)
      ends.push_back({cur_seq, p->name, true});
  }
  streams.erase(std::remove_if(streams.begin(), streams.end(), [id](const auto &p) { return p->id == id; }),
                streams.end());
  if (negotiated && batch_size == 0) {
    if (open.empty() || open.front().filled == 0)
      apply_relayout();
    else
      relayout = true;
  }
  // The front batch may now be complete without this stream: the timer
  // sends it.
  kick = true;
  cond.notify_all();
  return forgotten;
}

std::string BatchAssembler::too_many_streams(gsize more) const {
  const gsize n = streams.size() + more;
  if (batch_size == 0 || n <= batch_size)
    return {};
  return std::to_string(n) + " sink pads for batch-size=" + std::to_string(batch_size) +
         ": a fixed batch has one slot per stream; set batch-size to 0 (one slot per pad) or to at least " +
         std::to_string(n);
}

bool BatchAssembler::take_stream_caps(guint id, const char *pad_name, GstCaps *caps, ElementBackend &devices,
                                      std::string *what, std::string *detail, bool *resource) {
  *resource = false;
  gchar *caps_text = gst_caps_to_string(caps);
  *detail = std::string("caps ") + caps_text;
  g_free(caps_text);
  std::string why;
  // Video frames carry their tensor beside them (GstTensorMeta); GStreamer
  // 1.28's caps describe it, and before 1.28 the producer's frame-tensor
  // event does. The batch is made of that tensor.
  GstCaps *tensor_caps = gst_caps_ref(caps);
  const bool frames = gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw");
  if (frames) {
    gst_caps_unref(tensor_caps);
    tensor_caps = nullptr;
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
    if (!frame_tensor_caps(gst_caps_get_structure(caps, 0), &tensor_caps, &why)) {
      *what = std::string(pad_name) + ": " + why;
      return false;
    }
#else
    {
      std::lock_guard<std::mutex> guard(lock);
      BatchStream *p = stream(id);
      if (p) {
        gst_caps_replace(&p->frame_caps, caps);
        if (p->described)
          tensor_caps = gst_caps_copy(p->described);
      }
    }
    if (!tensor_caps) // described later, before its first frame
      return true;
#endif
    gint num = 0, den = 1;
    if (gst_structure_get_fraction(gst_caps_get_structure(caps, 0), "framerate", &num, &den))
      gst_caps_set_simple(tensor_caps, "framerate", GST_TYPE_FRACTION, num, den, nullptr);
  }
  TensorCaps tensor;
  if (!parse_tensor_caps(gst_caps_get_structure(tensor_caps, 0), &tensor, &why)) {
    *what = std::string(pad_name) + ": " + why;
    gst_caps_unref(tensor_caps);
    return false;
  }
  // The batches live in the memory the streams' caps name (one PBO per
  // batch for the GL path's tensors, on the GL worker the pipeline
  // shares), or in the storage setting's for plain caps and for frames
  // (whose caps name the frame's memory, not the tensor's).
  const Backend *in = frames ? &backend_for(GST_TENSOR_MEM_STORAGE_SYSTEM) : backend_of_caps(caps, 0);
  if (!in || !in->new_window) {
    *what = std::string(pad_name) + ": no batch can be made in this memory";
    gst_caps_unref(tensor_caps);
    return false;
  }
  {
    std::lock_guard<std::mutex> guard(lock);
    if ((frames || !in->caps_feature) && storage != GST_TENSOR_MEM_STORAGE_AUTO)
      in = &backend_for(storage);
  }
  GstObject *dev = nullptr;
  if (in->ensure_device) {
    GError *error = nullptr;
    if (!devices.find_device(*in, &error)) {
      *what = std::string(pad_name) + ": batches of " + in->memory_name +
              " memory need its device: " + (error ? error->message : "none");
      *resource = true;
      g_clear_error(&error);
      gst_caps_unref(tensor_caps);
      return false;
    }
    dev = devices.device_of(*in);
  }
  bool ok;
  {
    std::lock_guard<std::mutex> guard(lock);
    ok = set_stream_caps(id, tensor_caps, tensor, in, &dev, what, detail);
    BatchStream *p = stream(id);
    if (ok && p) {
      // A stream of frames gets its caps back after the split.
      p->frames = frames;
      if (frames)
        keep_stream_event(p->name + "/caps", gst_tensor_mem_stream_caps_event_new(p->name.c_str(), caps));
    }
  }
  gst_caps_unref(tensor_caps);
  gst_clear_object(&dev);
  return ok;
}

bool BatchAssembler::take_frame_tensor(guint id, const char *pad_name, GstCaps *tensor_caps, ElementBackend &devices,
                                       std::string *what, std::string *detail, bool *resource) {
  GstCaps *frame_caps = nullptr;
  {
    std::lock_guard<std::mutex> guard(lock);
    BatchStream *p = stream(id);
    if (!p)
      return true;
    gst_caps_replace(&p->described, tensor_caps);
    if (p->frame_caps)
      frame_caps = gst_caps_ref(p->frame_caps);
  }
  if (GST_TENSOR_MEM_HAVE_TENSOR_CAPS || !frame_caps) {
    gst_clear_caps(&frame_caps);
    return true;
  }
  const bool ok = take_stream_caps(id, pad_name, frame_caps, devices, what, detail, resource);
  gst_caps_unref(frame_caps);
  return ok;
}

bool BatchAssembler::set_stream_caps(guint id, GstCaps *caps, const TensorCaps &t, const Backend *in, GstObject **dev,
                                     std::string *what, std::string *detail) {
  BatchStream *p = stream(id);
  const std::string name = p ? p->name : "a stream";
  if (p)
    p->has_caps = true;
  cond.notify_all();
  // The time grid's period is the shortest frame duration of the streams'
  // caps; a new one starts the grid again.
  gint num = 0, den = 1;
  if (gst_structure_get_fraction(gst_caps_get_structure(caps, 0), "framerate", &num, &den) && num > 0 && den > 0) {
    const GstClockTime duration = gst_util_uint64_scale_int(GST_SECOND, den, num);
    if (duration > 0 && (!GST_CLOCK_TIME_IS_VALID(period) || duration < period)) {
      period = duration;
      t_base = GST_CLOCK_TIME_NONE;
    }
  }
  GstCaps *plain = gst_caps_copy(caps);
  gst_structure_remove_field(gst_caps_get_structure(plain, 0), "framerate");
  if (negotiated) {
    const bool same = gst_caps_is_equal(plain, stream_caps);
    if (!same) {
      gchar *theirs = gst_caps_to_string(plain);
      gchar *ours = gst_caps_to_string(stream_caps);
      *what = name + "'s tensor differs from the batch's (" + first_stream +
              "'s): every stream of a batch must carry the same tensor (type, dimensions, memory)";
      *detail = name + " is " + theirs + "; " + first_stream + " is " + ours;
      g_free(theirs);
      g_free(ours);
    }
    gst_caps_unref(plain);
    return same;
  }
  // batch-size lowered after the element started (the start checks it too).
  if (std::string refused = too_many_streams(0); !refused.empty()) {
    *what = std::move(refused);
    gst_caps_unref(plain);
    return false;
  }
  if (t.bytes == 0 || t.bytes > G_MAXUINT) {
    *what = name + ": a " + std::to_string(static_cast<guint64>(t.bytes)) + "-byte tensor cannot be batched";
    gchar *text = gst_caps_to_string(caps);
    *detail = std::string("caps ") + text;
    g_free(text);
    gst_caps_unref(plain);
    return false;
  }
  std::swap(device, *dev); // the caller lets the old one (if any) go
  stream_caps = plain;
  first_stream = name;
  tensor = t;
  family = in;
  slot_bytes = static_cast<gsize>(t.bytes);
  n_slots = 0;
  negotiated = true;
  apply_relayout();
  caps_changed = true;
  GST_INFO("batches of %u × %" G_GSIZE_FORMAT "-byte tensors in %s", n_slots, slot_bytes, family->memory_name);
  cond.notify_all();
  return true;
}

void BatchAssembler::keep_stream_event(std::string key, GstEvent *event) {
  auto same = std::find_if(stream_events.begin(), stream_events.end(), [&](const auto &e) { return e.first == key; });
  if (same != stream_events.end())
    gst_event_take(&same->second, event);
  else
    stream_events.emplace_back(std::move(key), event);
}

void BatchAssembler::clear_stream_events(bool segments_only) {
  // A partition, not remove_if: every element stays whole, so those past
  // `gone` can be let go.
  auto gone = std::stable_partition(stream_events.begin(), stream_events.end(), [&](const auto &e) {
    return segments_only && !gst_tensor_mem_stream_segment_event_parse(e.second, nullptr, nullptr);
  });
  for (auto it = gone; it != stream_events.end(); ++it)
    gst_event_unref(it->second);
  stream_events.erase(gone, stream_events.end());
}

guint BatchAssembler::new_stream(const char *req_name, std::string *name, std::string *refused) {
  std::lock_guard<std::mutex> guard(lock);
  if (running) {
    *refused = too_many_streams(1);
    if (!refused->empty())
      return G_MAXUINT;
  }
  guint id = 0;
  if (req_name && sscanf(req_name, "sink_%u", &id) == 1) {
    if (stream(id))
      return G_MAXUINT;
  } else {
    id = next_stream_id;
    for (const auto &p : streams)
      id = std::max(id, p->id + 1);
  }
  next_stream_id = std::max(next_stream_id, id + 1);
  *name = "sink_" + std::to_string(id);
  add_stream(id, *name);
  return id;
}

PlaceResult BatchAssembler::place_waiting(guint id, GstBuffer *buffer, GstClockTime running_time,
                                          const std::function<GstFlowReturn(GstBuffer *)> &wait_fences,
                                          const std::function<void(BatchReason)> &wake, GstFlowReturn *flow) {
  bool waited = false;
  std::unique_lock<std::mutex> guard(lock);
  for (;;) {
    if (std::exchange(wake_pending, false)) {
      const BatchReason why = std::exchange(wake_reason, BatchReason::Complete);
      guard.unlock();
      wake(why);
      guard.lock();
      continue;
    }
    PlaceResult r = place(id, buffer, running_time, waited);
    if (r.status == PlaceStatus::Wait) {
      cond.wait(guard);
      continue;
    }
    if (r.status == PlaceStatus::NeedsFenceWait) {
      guard.unlock();
      *flow = wait_fences(buffer);
      if (*flow != GST_FLOW_OK)
        return r;
      waited = true;
      guard.lock();
      continue;
    }
    *flow = last_flow;
    return r;
  }
}

void BatchAssembler::wake_later(BatchReason why) {
  std::lock_guard<std::mutex> guard(lock);
  wake_reason = wake_pending ? std::max(wake_reason, why) : why;
  wake_pending = true;
  cond.notify_all();
}

void BatchAssembler::flushed() {
  std::lock_guard<std::mutex> guard(lock);
  have_segment = segment_sent = false;
}

PlaceResult BatchAssembler::place(guint id, GstBuffer *buffer, GstClockTime running_time, bool fences_waited) {
  BatchStream *p = stream(id);
  if (!running || !p || p->flushing)
    return {PlaceStatus::Flushing};
  if (p->frame_caps && !p->described)
    return {PlaceStatus::NotNegotiated, false,
            p->name + ": its frames' tensor was not described before its first frame: before GStreamer 1.28 "
                      "video caps cannot describe it, and a " GST_TENSOR_MEM_FRAME_TENSOR_EVENT
                      " event must (tensorconvert output=meta sends one)"};
  if (!negotiated)
    return {PlaceStatus::NotNegotiated, false, p->name + ": no caps before the first buffer"};
  if (p->slot == kBatchNoSlot) // a stream that came while a batch was filling: a slot at the next boundary
    return {PlaceStatus::Wait};
  // A frame's tensor is beside it: the data of its GstTensorMeta.
  GstBuffer *data = p->frames ? frame_tensor(buffer) : buffer;
  if (!data)
    return {PlaceStatus::Refused, false, p->name + "'s frame carries no tensor",
            "a video frame reaches tensorbatch with its tensor in a GstTensorMeta (tensorconvert output=meta)"};
  const BatchWindowTag *tag = batch_window_tag(data);
  const bool own_window = tag && tag->slot == p->slot && tag->seq >= layout_start &&
                          batch_allocation_n_slots(tag->allocation) == n_slots &&
                          batch_allocation_slot_bytes(tag->allocation) == slot_bytes;
  if (own_window && tag->seq < cur_seq) {
    // Its batch left without it (the timeout): the frame is too late for
    // any batch; the stream's next window is of a batch still open.
    ++dropped;
    GST_DEBUG("%s: frame of batch %" G_GUINT64_FORMAT " came after it left: dropped", p->name.c_str(), tag->seq);
    return {PlaceStatus::Late};
  }
  if (own_window && tag->seq > cur_seq) // a frame ahead: its batch is the next one
    return {PlaceStatus::Wait};
  OpenBatch *b = batch(cur_seq);
  if (!b)
    return {PlaceStatus::Refused, false, "Cannot allocate a batch",
            std::to_string(slot_bytes * n_slots) + " bytes of " + family->memory_name + " memory"};
  BatchSlotRecord &rec = b->slots[p->slot];
  if (rec.filled) // this stream's frame of the front batch is in: wait for it to leave
    return {PlaceStatus::Wait};
  const bool in_place = own_window && tag->seq == cur_seq && tag->allocation == b->storage;
  if (!in_place) {
    const gsize size = gst_buffer_get_size(data);
    if (size < slot_bytes)
      return {PlaceStatus::Refused, false,
              p->name + "'s buffer holds " + std::to_string(size) + " bytes; its tensor needs " +
                  std::to_string(slot_bytes),
              "a buffer smaller than its caps say"};
    if (require_zero_copy)
      return {PlaceStatus::Refused, false,
              p->name + "'s tensor would be copied into its batch slot and require-zero-copy is set",
              tag ? "the buffer is a window of a batch of another layout (pads came or went since)"
                  : "the buffer is not a window of the batch: its producer did not take the slot pool "
                    "tensorbatch proposed (tensorconvert takes it on its CPU path, and on its GL path where "
                    "it runs on the batch's GL worker and its tensor is a whole number of 32-bit words)"};
    // A copy reads the frame: its producer's writes first.
    if (!fences_waited && gst_buffer_has_tensor_mem_fence(data))
      return {PlaceStatus::NeedsFenceWait};
    bool read = false;
    const bool mapped = write_on_cpu(*b, p->slot * slot_bytes, slot_bytes, [&](std::byte *to) {
      read = gst_buffer_extract(data, 0, to, slot_bytes) == slot_bytes;
    });
    if (!mapped || !read)
      return {PlaceStatus::Refused, false,
              mapped ? p->name + "'s buffer cannot be read" : p->name + "'s slot cannot be mapped",
              mapped ? "gst_buffer_extract failed"
                     : std::string("mapping a window of ") + family->memory_name + " memory"};
    copied_bytes += slot_bytes;
  }
  rec.filled = true;
  rec.copied = !in_place;
  rec.stream = p->name;
  if (in_place)
    rec.acquired = false;
  rec.frame = buffer;
  rec.is_video_frame = p->frames;
  if (b->filled++ == 0) {
    b->first_fill = g_get_monotonic_time();
    b->first_running_time = running_time;
  }
  cond.notify_all();
  return {PlaceStatus::Placed, complete(*b, cur_seq)};
}

GstCaps *BatchAssembler::batch_caps(guint slots) const {
  GstCaps *caps = gst_caps_copy(stream_caps);
  gst_caps_set_simple(caps, "dimensions", G_TYPE_STRING, dims_string(batched_shape(tensor, slots)).c_str(), nullptr);
  return caps;
}

bool BatchAssembler::take_front(BatchReason why, bool src_has_caps, TakenBatch *out) {
  if (open.empty() || !running || flush_downstream)
    return false;
  // A front batch no stream filled and every stream has gone past (each
  // skipped its frame of that time or lost it on the way) will never be
  // filled: it goes without a trace, so that producers waiting for the
  // front batch to leave go on.
  while (!relayout && !open.empty() && open.front().filled == 0 && passed(open.front(), cur_seq)) {
    open.front().release();
    open.pop_front();
    ++cur_seq;
    cond.notify_all();
  }
  if (open.empty())
    return false;
  OpenBatch &front = open.front();
  bool go = false;
  switch (why) {
  case BatchReason::Complete: go = complete(front, cur_seq); break;
  case BatchReason::Timeout: go = front_is_due(); break;
  case BatchReason::Drain: go = front.filled > 0; break;
  }
  if (!go)
    return false;
  out->batch = std::move(front);
  out->seq = cur_seq;
  open.pop_front();
  ++cur_seq;
  OpenBatch &b = out->batch;
  out->partial = b.filled < b.slots.size();
  // An empty slot still names the stream it waited for, where one feeds it.
  for (const auto &p : streams)
    if (p->slot < b.slots.size() && !b.slots[p->slot].filled)
      b.slots[p->slot].stream = p->name;
  if (relayout)
    apply_relayout();
  out->caps = nullptr;
  if (caps_changed || !src_has_caps) {
    // The caps of the batch leaving now, which a relayout above may not share.
    out->caps = batch_caps(static_cast<guint>(b.slots.size()));
    caps_changed = n_slots != b.slots.size();
  }
  out->tensor = tensor;
  out->pad_value = pad_value;
  out->family = family;
  cond.notify_all();
  return true;
}

std::vector<BatchStreamEnd> BatchAssembler::take_due_ends() {
  std::vector<BatchStreamEnd> due;
  if (!running || flush_downstream)
    return due;
  auto gone =
      std::stable_partition(ends.begin(), ends.end(), [this](const BatchStreamEnd &e) { return e.go_at > cur_seq; });
  due.assign(std::make_move_iterator(gone), std::make_move_iterator(ends.end()));
  ends.erase(gone, ends.end());
  return due;
}

void BatchAssembler::stream_segment(guint id, const GstSegment *segment) {
  std::lock_guard<std::mutex> guard(lock);
  if (BatchStream *p = stream(id))
    keep_stream_event(p->name + "/segment", gst_tensor_mem_stream_segment_event_new(p->name.c_str(), segment));
  if (!have_segment) {
    gst_segment_copy_into(segment, &this->segment);
    have_segment = true;
  }
}

void BatchAssembler::stream_tags(guint id, GstTagList *tags) {
  std::lock_guard<std::mutex> guard(lock);
  if (BatchStream *p = stream(id)) {
    const bool global = gst_tag_list_get_scope(tags) == GST_TAG_SCOPE_GLOBAL;
    keep_stream_event(p->name + (global ? "/tags-global" : "/tags-stream"),
                      gst_tensor_mem_stream_tags_event_new(p->name.c_str(), tags));
  }
}

bool BatchAssembler::stream_ended(guint id) {
  std::lock_guard<std::mutex> guard(lock);
  BatchStream *p = stream(id);
  if (p && !p->eos) {
    p->eos = true;
    ends.push_back({end_of_frames(*p), p->name, false});
  }
  cond.notify_all();
  return all_ended();
}

bool BatchAssembler::flush_started(guint id) {
  std::lock_guard<std::mutex> guard(lock);
  if (BatchStream *p = stream(id)) {
    p->flushing = true;
    forget_frames_of(*p);
  }
  // The streams flush one after the other (GstAggregator forwards the
  // flush downstream); a flush of some streams alone is theirs.
  const bool forward =
      !flush_downstream && std::all_of(streams.begin(), streams.end(), [](const auto &p) { return p->flushing; });
  if (forward) {
    flush_downstream = true;
    ends.clear(); // the streams start again after the flush
    clear_stream_events(true);
    for (auto &p : streams)
      p->flush_stopped = false;
  }
  cond.notify_all();
  return forward;
}

bool BatchAssembler::flush_stopped(guint id) {
  std::lock_guard<std::mutex> guard(lock);
  if (BatchStream *p = stream(id)) {
    p->flushing = false;
    p->eos = false;
    p->flush_stopped = true;
    forget_frames_of(*p);
  }
  if (!flush_downstream ||
      !std::all_of(streams.begin(), streams.end(), [](const auto &p) { return p->flush_stopped && !p->flushing; }))
    return false;
  flush_downstream = false;
  last_flow = GST_FLOW_OK;
  t_base = GST_CLOCK_TIME_NONE; // running times start again after the flush
  kick = true;                  // frames that came since may make a batch
  cond.notify_all();
  return true;
}

void BatchAssembler::start() {
  running = true;
  last_flow = GST_FLOW_OK;
  kick = false;
  wake_pending = false;
  have_segment = segment_sent = false;
  flush_downstream = false;
  ends.clear();
  clear_stream_events();
  for (auto &p : streams) {
    p->eos = p->flushing = p->flush_stopped = p->has_caps = false;
    p->forget_description(); // a new run's sticky events come again
  }
}

void BatchAssembler::stop() {
  discard_open();
  negotiated = false;
  period = t_base = GST_CLOCK_TIME_NONE;
  gst_clear_caps(&stream_caps);
  for (auto &p : streams)
    p->slot = kBatchNoSlot;
}

void batch_install_properties(GObjectClass *klass, guint id) {
  constexpr auto kRw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  constexpr auto kRo = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  constexpr auto kReady = static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_READY);
  constexpr auto kPlaying = static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_PLAYING);
  GParamSpec *specs[] = {
      g_param_spec_uint("batch-size", "Batch size",
                        "Slots per batch (the tensor's batch axis); 0: one per sink pad, following pads as they come "
                        "and go",
                        0, 1024, 0, kReady),
      g_param_spec_uint64("timeout", "Timeout",
                          "Nanoseconds after its first slot is filled that a batch leaves partial (empty slots hold "
                          "pad-value and are flagged); 0: wait for every stream that has not ended",
                          0, G_MAXUINT64, 0, kPlaying),
      g_param_spec_double("pad-value", "Pad value",
                          "Every element of an empty slot (a partial batch's, or one no stream feeds), in the tensor's "
                          "type (rounded and clamped for integer types)",
                          -G_MAXDOUBLE, G_MAXDOUBLE, 0.0, kPlaying),
      g_param_spec_enum("storage", "Storage",
                        "Where batches live: system memory (auto, system) or one DMA-BUF per batch (dmabuf; also "
                        "where the streams negotiate memory:DMABuf); streams of memory:TensorPBO (tensorconvert's GL "
                        "path) are batched in one PBO per batch whatever this says",
                        batch_storage_enum_type(), GST_TENSOR_MEM_STORAGE_AUTO, kReady),
      g_param_spec_boolean("require-zero-copy", "Require zero copy",
                           "Fail with an element error instead of copying a stream's tensor into its slot", FALSE,
                           kPlaying),
      g_param_spec_uint64("copied-bytes", "Copied bytes",
                          "Bytes copied into slots (0 when every producer wrote its slot in place)", 0, G_MAXUINT64, 0,
                          kRo),
      g_param_spec_uint64("batches", "Batches", "Batches sent downstream", 0, G_MAXUINT64, 0, kRo),
      g_param_spec_uint64("partial-batches", "Partial batches",
                          "Batches that left with empty slots (timeout, live deadline, ended streams)", 0, G_MAXUINT64,
                          0, kRo),
      g_param_spec_uint64("dropped-frames", "Dropped frames",
                          "Frames that never left in a batch: those that came after their batch left (timeout, live "
                          "deadline; each pad's own count is its dropped property), and those in the batches being "
                          "made when their sink pad was released",
                          0, G_MAXUINT64, 0, kRo),
  };
  for (GParamSpec *spec : specs)
    g_object_class_install_property(klass, id++, spec);
}

bool BatchAssembler::set_property(const GParamSpec *pspec, const GValue *value) {
  const std::string name = pspec->name;
  std::lock_guard<std::mutex> guard(lock);
  if (name == "batch-size")
    batch_size = g_value_get_uint(value);
  else if (name == "timeout")
    timeout = g_value_get_uint64(value);
  else if (name == "pad-value")
    pad_value = g_value_get_double(value);
  else if (name == "require-zero-copy")
    require_zero_copy = g_value_get_boolean(value);
  else if (name == "storage")
    storage = static_cast<GstTensorMemStorage>(g_value_get_enum(value));
  else
    return false;
  cond.notify_all(); // the timer looks at a new timeout
  return true;
}

bool BatchAssembler::get_property(const GParamSpec *pspec, GValue *value) {
  const std::string name = pspec->name;
  std::lock_guard<std::mutex> guard(lock);
  if (name == "batch-size")
    g_value_set_uint(value, batch_size);
  else if (name == "timeout")
    g_value_set_uint64(value, timeout);
  else if (name == "pad-value")
    g_value_set_double(value, pad_value);
  else if (name == "require-zero-copy")
    g_value_set_boolean(value, require_zero_copy);
  else if (name == "storage")
    g_value_set_enum(value, storage);
  else if (name == "copied-bytes")
    g_value_set_uint64(value, copied_bytes.load());
  else if (name == "batches")
    g_value_set_uint64(value, batches.load());
  else if (name == "partial-batches")
    g_value_set_uint64(value, partial_batches.load());
  else if (name == "dropped-frames")
    g_value_set_uint64(value, dropped.load());
  else
    return false;
  return true;
}

std::string BatchAssembler::begin() {
  std::lock_guard<std::mutex> guard(lock);
  std::string refused = too_many_streams(0);
  if (refused.empty())
    start();
  return refused;
}

void BatchAssembler::halt() {
  std::lock_guard<std::mutex> guard(lock);
  running = false;
  cond.notify_all();
}

std::string BatchAssembler::finish() {
  std::lock_guard<std::mutex> guard(lock);
  gchar *text = g_strdup_printf("%" G_GUINT64_FORMAT " batches, %" G_GUINT64_FORMAT " partial, of %u slots in %s; "
                                "copied-bytes=%" G_GUINT64_FORMAT,
                                batches.load(), partial_batches.load(), n_slots, family->memory_name,
                                copied_bytes.load());
  std::string summary(text);
  g_free(text);
  stop();
  return summary;
}

void BatchAssembler::release() {
  std::shared_ptr<BatchStore> old;
  {
    std::lock_guard<std::mutex> guard(lock);
    gst_clear_object(&device);
    old = std::exchange(store, BatchStore::create(kBatchFreeKept));
  }
  old.reset(); // its allocations are freed without the lock
}

GstCaps *batch_template_caps(GstPadDirection direction) {
  GstCaps *caps =
      template_caps("other/tensors, format=(string)static, num_tensors=(int)1", TemplateFamilies::Batches);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (direction == GST_PAD_SINK)
    gst_caps_append(caps, gst_caps_from_string("video/x-raw(ANY)"));
#else
  (void)direction;
#endif
  return caps;
}

GType batch_storage_enum_type() {
  static GType type = 0;
  if (g_once_init_enter(&type)) {
    // Made once and kept for the process, as a registered enum's values are.
    auto *values = g_new0(GEnumValue, kBackendCount + 2);
    guint n = 0;
    values[n++] = {GST_TENSOR_MEM_STORAGE_AUTO,
                   "System memory, or the memory the streams negotiate (a caps feature of a family that holds batches)",
                   "auto"};
    for (std::size_t i = 0; i < kBackendCount; ++i) {
      const Backend &b = backend_at(i);
      if (!b.holds_batches || !b.maps_as_system)
        continue;
      values[n++] = {b.storage,
                     g_intern_string((std::string("One allocation of ") + b.memory_name + " memory per batch").c_str()),
                     storage_nick(b.storage)};
    }
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemBatchStorage", values));
  }
  return type;
}

/* ---- the batch as one buffer ---- */

namespace {

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* GStreamer's description of the batch (1.26): its data a buffer over the
 * same memory. */
void attach_tensor_meta(GstBuffer *out, const TensorCaps &t, guint n) {
  GstTensorDataType type;
  if (!tensor_data_type_of(t.code, t.bits, &type))
    return;
  const std::vector<std::int64_t> shape = batched_shape(t, n);
  const std::vector<gsize> dims(shape.begin(), shape.end());
  set_tensor_meta(out, nullptr, g_quark_from_static_string("batch"), type, dims.data(), dims.size());
}
#endif

/* `bytes` bytes at `to`, every element `value` in `t`'s type. */
void fill(std::byte *to, gsize bytes, const TensorCaps &t, double value) {
  std::vector<std::uint8_t> element;
  if (value == 0.0 || !element_bytes(t, value, &element) || element.empty()) {
    std::memset(to, 0, bytes);
    return;
  }
  for (gsize at = 0; at + element.size() <= bytes; at += element.size())
    std::memcpy(to + at, element.data(), element.size());
}

void copy_resize(GstTensorMemBatchSlot *slot, const GstTensorMemResizeMeta *r) {
  slot->has_resize = TRUE;
  slot->in_width = r->in_width;
  slot->in_height = r->in_height;
  slot->scale_x = r->scale_x;
  slot->scale_y = r->scale_y;
  slot->offset_x = r->offset_x;
  slot->offset_y = r->offset_y;
  slot->content_x = r->content_x;
  slot->content_y = r->content_y;
  slot->content_width = r->content_width;
  slot->content_height = r->content_height;
}

} // namespace

GstBuffer *batch_make_output(OpenBatch &b, guint64 seq, const Backend &family, const TensorCaps &tensor,
                             double pad_value, std::string *why) {
  const gsize slot_bytes = batch_allocation_slot_bytes(b.storage);
  GstMemory *whole = batch_window(b.storage, seq, kBatchWhole, 0, slot_bytes * batch_allocation_n_slots(b.storage));
  if (!whole) {
    *why = std::string("no memory over its ") + family.memory_name + " allocation could be made";
    b.release();
    return nullptr;
  }
  GstBuffer *out = gst_buffer_new();
  gst_buffer_append_memory(out, whole);
  GstTensorMemBatchMeta *meta = gst_buffer_add_tensor_mem_batch_meta(out, static_cast<guint>(b.slots.size()));
  GstClockTime pts = GST_CLOCK_TIME_NONE, duration = GST_CLOCK_TIME_NONE;
  for (guint i = 0; i < b.slots.size(); ++i) {
    BatchSlotRecord &rec = b.slots[i];
    GstTensorMemBatchSlot *slot = gst_tensor_mem_batch_meta_get_slot(meta, i);
    if (!rec.stream.empty())
      slot->stream = g_intern_string(rec.stream.c_str());
    if (!rec.filled) {
      // A window still out is a frame being written late: its bytes are its
      // writer's (the slot says it is not filled); the others are filled.
      if (!rec.acquired && !write_on_cpu(b, i * slot_bytes, slot_bytes,
                                         [&](std::byte *to) { fill(to, slot_bytes, tensor, pad_value); })) {
        *why =
            "slot " + std::to_string(i) + " of its " + family.memory_name + " allocation cannot be mapped to be filled";
        gst_buffer_unref(out);
        b.release();
        return nullptr;
      }
      continue;
    }
    GstBuffer *frame = rec.frame;
    slot->filled = TRUE;
    slot->copied = rec.copied;
    slot->pts = GST_BUFFER_PTS(frame);
    slot->duration = GST_BUFFER_DURATION(frame);
    ++meta->n_filled;
    if (GST_CLOCK_TIME_IS_VALID(slot->pts) && (!GST_CLOCK_TIME_IS_VALID(pts) || slot->pts < pts)) {
      pts = slot->pts;
      duration = slot->duration;
    }
    if (const GstTensorMemResizeMeta *r = gst_buffer_get_tensor_mem_resize_meta(frame))
      copy_resize(slot, r);
    if (rec.is_video_frame)
      slot->frame = gst_buffer_ref(frame);
    // A slot written in place hands its producer's fences on (a copy waited for them).
    if (!rec.copied) {
      gpointer state = nullptr;
      while (GstMeta *fence = gst_buffer_iterate_meta_filtered(frame, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
        GstMetaTransformCopy copy = {FALSE, 0, static_cast<gsize>(-1)};
        fence->info->transform_func(out, fence, frame, _gst_meta_transform_copy, &copy);
      }
    }
  }
  // Bytes the CPU wrote reach the family's GPU readers after a fence where
  // it needs one (PBOs mapped per call).
  GError *error = nullptr;
  if (b.cpu_written && family.cpu_writes_need_fence && family.cpu_writes_need_fence(out) &&
      !family.fence_writes(out, &error)) {
    *why = std::string("the CPU's writes into its ") + family.memory_name +
           " allocation cannot be fenced: " + (error ? error->message : "no reason");
    g_clear_error(&error);
    gst_buffer_unref(out);
    b.release();
    return nullptr;
  }
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = duration;
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  attach_tensor_meta(out, tensor, static_cast<guint>(b.slots.size()));
#else
  (void)tensor;
#endif
  b.release();
  return out;
}

} // namespace gst_tensormem

/* ---- the slot pool: windows of the batch a stream fills next ---- */

using gst_tensormem::BatchAssembler;
using gst_tensormem::BatchStream;
using gst_tensormem::OpenBatch;

#define GST_TYPE_TENSOR_MEM_BATCH_SLOT_POOL (gst_tensor_mem_batch_slot_pool_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemBatchSlotPool, gst_tensor_mem_batch_slot_pool, GST, TENSOR_MEM_BATCH_SLOT_POOL,
                     GstBufferPool)

struct _GstTensorMemBatchSlotPool {
  GstBufferPool parent;
  std::weak_ptr<BatchAssembler> *assembler;
  guint stream_id;
};

namespace {

/* A window handed to a producer, watched until it is placed: a producer or
 * an element between may drop it instead (a leaky queue, a frame dropper),
 * and its slot must then stop waiting for it, or the batch (with no
 * timeout) would wait forever. Kept as qdata on the window's buffer; the
 * element takes it off first thing (batch_window_delivered), and a buffer
 * freed with it on was never delivered. */
struct WindowWatch {
  std::weak_ptr<BatchAssembler> assembler;
  guint64 seq;
  guint slot;
};

GQuark window_watch_quark() {
  static const GQuark quark = g_quark_from_static_string("GstTensorMemBatchWindowWatch");
  return quark;
}

/* A window's buffer went without reaching the element: its slot is no
 * longer being written. Runs where the buffer is freed, never under the
 * assembler's lock (the element takes the watch off before locking, and no
 * other buffer of a producer is freed under it). */
void window_dropped(gpointer data) {
  std::unique_ptr<WindowWatch> watch(static_cast<WindowWatch *>(data));
  std::shared_ptr<BatchAssembler> shared = watch->assembler.lock();
  if (!shared)
    return;
  std::lock_guard<std::mutex> guard(shared->lock);
  BatchAssembler &s = *shared;
  if (watch->seq < s.cur_seq || watch->seq < s.layout_start || watch->seq - s.cur_seq >= s.open.size())
    return; // its batch left, or belongs to an older layout
  OpenBatch &b = s.open[watch->seq - s.cur_seq];
  if (watch->slot >= b.slots.size() || b.slots[watch->slot].filled || !b.slots[watch->slot].acquired)
    return;
  b.slots[watch->slot].acquired = false;
  GST_DEBUG("a window of batch %" G_GUINT64_FORMAT " slot %u went without being placed", watch->seq, watch->slot);
  s.kick = true; // the batch may be complete without it now
  s.cond.notify_all();
}

} // namespace

G_DEFINE_TYPE(GstTensorMemBatchSlotPool, gst_tensor_mem_batch_slot_pool, GST_TYPE_BUFFER_POOL)

static const gchar **gst_tensor_mem_batch_slot_pool_get_options(GstBufferPool *) {
  static const gchar *options[] = {GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT, nullptr};
  return options;
}

/* Each buffer is made for the batch its stream fills next, so nothing is
 * kept: released buffers are freed (their window's reference to the batch
 * goes). */
static GstFlowReturn gst_tensor_mem_batch_slot_pool_acquire(GstBufferPool *pool, GstBuffer **buffer,
                                                            GstBufferPoolAcquireParams *params) {
  using gst_tensormem::kBatchDepth;
  using gst_tensormem::kBatchNoSlot;
  // The frame's running time, where its producer says it (tensorconvert).
  const GstClockTime t = params && params->format == GST_FORMAT_TIME && params->start >= 0
                             ? static_cast<GstClockTime>(params->start)
                             : GST_CLOCK_TIME_NONE;
  auto *self = GST_TENSOR_MEM_BATCH_SLOT_POOL(pool);
  std::shared_ptr<BatchAssembler> shared = self->assembler->lock();
  if (!shared)
    return GST_FLOW_FLUSHING;
  BatchAssembler &s = *shared;
  std::unique_lock<std::mutex> lock(s.lock);
  bool waited_for_rates = false;
  for (;;) {
    if (GST_BUFFER_POOL_IS_FLUSHING(pool) || !s.running)
      return GST_FLOW_FLUSHING;
    BatchStream *p = s.stream(self->stream_id);
    if (!p || p->flushing)
      return GST_FLOW_FLUSHING;
    if (!s.negotiated)
      return GST_FLOW_NOT_NEGOTIATED;
    if (p->slot == kBatchNoSlot) { // a stream that came while a batch was filling: a slot at the next boundary
      s.cond.wait(lock);
      continue;
    }
    guint64 seq = std::max(p->next_acquire, s.cur_seq);
    if (GST_CLOCK_TIME_IS_VALID(t) && !waited_for_rates) {
      // The grid's period is the shortest frame duration of every stream:
      // wait for the streams' caps (up to the timeout where one is set).
      waited_for_rates = true;
      auto unknown = [&] {
        return std::any_of(s.streams.begin(), s.streams.end(),
                           [](const auto &q) { return q->slot != kBatchNoSlot && !q->eos && !q->has_caps; });
      };
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(s.timeout);
      while (unknown() && s.running && !GST_BUFFER_POOL_IS_FLUSHING(pool)) {
        if (s.timeout == 0)
          s.cond.wait(lock);
        else if (s.cond.wait_until(lock, until) == std::cv_status::timeout)
          break;
      }
      continue;
    }
    if (GST_CLOCK_TIME_IS_VALID(t) && GST_CLOCK_TIME_IS_VALID(s.period) && s.period > 0) {
      // On the grid: the batch of its time (a slower stream skips those
      // between; a frame whose time's batch left goes into the front one).
      seq = std::max(seq, s.seq_of_time(t, seq));
      if (seq > p->next_acquire) {
        // The batches it skips no longer wait for it.
        p->next_acquire = std::min(seq, s.cur_seq + kBatchDepth);
        s.kick = true;
        s.cond.notify_all();
      }
    }
    if (seq >= s.cur_seq + kBatchDepth) { // a frame ahead already: wait for the front batch to leave
      s.cond.wait(lock);
      continue;
    }
    OpenBatch *batch = s.batch(seq);
    if (!batch)
      return GST_FLOW_ERROR;
    if (batch->slots[p->slot].filled) { // its slot there holds a copied frame already: the next batch
      p->next_acquire = seq + 1;
      continue;
    }
    GstMemory *mem = gst_tensormem::batch_window(batch->storage, seq, p->slot, p->slot * s.slot_bytes, s.slot_bytes);
    if (!mem)
      return GST_FLOW_ERROR;
    batch->slots[p->slot].acquired = true;
    p->next_acquire = seq + 1;
    *buffer = gst_buffer_new();
    gst_buffer_append_memory(*buffer, mem);
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(*buffer), window_watch_quark(),
                              new WindowWatch{*self->assembler, seq, p->slot}, window_dropped);
    return GST_FLOW_OK;
  }
}

static void gst_tensor_mem_batch_slot_pool_release(GstBufferPool *, GstBuffer *buffer) { gst_buffer_unref(buffer); }

static void gst_tensor_mem_batch_slot_pool_flush_start(GstBufferPool *pool) {
  auto *self = GST_TENSOR_MEM_BATCH_SLOT_POOL(pool);
  if (std::shared_ptr<BatchAssembler> shared = self->assembler->lock()) {
    std::lock_guard<std::mutex> guard(shared->lock);
    shared->cond.notify_all();
  }
}

static void gst_tensor_mem_batch_slot_pool_finalize(GObject *object) {
  delete GST_TENSOR_MEM_BATCH_SLOT_POOL(object)->assembler;
  G_OBJECT_CLASS(gst_tensor_mem_batch_slot_pool_parent_class)->finalize(object);
}

static void gst_tensor_mem_batch_slot_pool_class_init(GstTensorMemBatchSlotPoolClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_mem_batch_slot_pool_finalize;
  auto *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->get_options = gst_tensor_mem_batch_slot_pool_get_options;
  pool_class->acquire_buffer = gst_tensor_mem_batch_slot_pool_acquire;
  pool_class->release_buffer = gst_tensor_mem_batch_slot_pool_release;
  pool_class->flush_start = gst_tensor_mem_batch_slot_pool_flush_start;
}

static void gst_tensor_mem_batch_slot_pool_init(GstTensorMemBatchSlotPool *self) {
  self->assembler = new std::weak_ptr<BatchAssembler>();
}

namespace gst_tensormem {

void batch_window_delivered(GstBuffer *buffer) {
  // A frame's window is its tensor's data.
  for (GstBuffer *b : {buffer, frame_tensor(buffer)})
    if (b)
      delete static_cast<WindowWatch *>(gst_mini_object_steal_qdata(GST_MINI_OBJECT_CAST(b), window_watch_quark()));
}

void batch_answer_allocation(const std::shared_ptr<BatchAssembler> &assembler, guint id, GstQuery *query) {
  GstCaps *caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  gsize bytes = 0;
  GstObject *worker = nullptr;
  {
    std::lock_guard<std::mutex> guard(assembler->lock);
    if (assembler->negotiated) {
      bytes = assembler->slot_bytes;
      // A GL worker's windows are written in place by a GL producer on
      // that worker only: the pool says which.
      if (assembler->device && GST_IS_TENSOR_MEM_GL_WORKER(assembler->device))
        worker = GST_OBJECT_CAST(gst_object_ref(assembler->device));
    }
  }
  if (!caps || bytes == 0) {
    gst_clear_object(&worker);
    return;
  }
  auto *pool = GST_TENSOR_MEM_BATCH_SLOT_POOL(g_object_new(GST_TYPE_TENSOR_MEM_BATCH_SLOT_POOL, nullptr));
  gst_object_ref_sink(pool);
  *pool->assembler = assembler;
  pool->stream_id = id;
  GstStructure *config = gst_buffer_pool_get_config(GST_BUFFER_POOL(pool));
  gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(bytes), 0, 0);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT);
  if (worker) {
    gst_structure_set(config, GST_TENSOR_MEM_BATCH_SLOT_POOL_GL_WORKER, GST_TYPE_TENSOR_MEM_GL_WORKER, worker, nullptr);
    gst_object_unref(worker);
  }
  gst_buffer_pool_set_config(GST_BUFFER_POOL(pool), config);
  gst_query_add_allocation_pool(query, GST_BUFFER_POOL(pool), static_cast<guint>(bytes), 0, 0);
  gst_object_unref(pool);
}

/* ---- sending ---- */

namespace {

/* The front batch to `out` when `why` holds for it; FALSE when none left
 * (`*ret` says why where it failed). */
bool send_front(BatchAssembler &s, BatchReason why, BatchOutput &out, GstFlowReturn *ret) {
  TakenBatch taken;
  std::vector<std::pair<std::string, GstEvent *>> stream_events;
  GstSegment segment; // the batches', where it goes now
  {
    std::lock_guard<std::mutex> guard(s.lock);
    if (!s.take_front(why, out.has_caps(), &taken))
      return false;
    stream_events.swap(s.stream_events);
    if (!std::exchange(s.segment_sent, true) && s.have_segment)
      segment = s.segment;
    else
      segment.format = GST_FORMAT_UNDEFINED;
  }
  if (taken.caps)
    out.set_caps(taken.caps);
  if (segment.format != GST_FORMAT_UNDEFINED)
    out.set_segment(segment);
  for (auto &[key, event] : stream_events)
    out.push_event(event);
  std::string failure;
  GstBuffer *buffer = batch_make_output(taken.batch, taken.seq, *taken.family, taken.tensor, taken.pad_value, &failure);
  if (!buffer) {
    out.failed(taken.seq, failure);
    *ret = GST_FLOW_ERROR;
    return false;
  }
  ++s.batches;
  if (taken.partial)
    ++s.partial_batches;
  GST_LOG("batch %" G_GUINT64_FORMAT "%s: %" GST_PTR_FORMAT, taken.seq, taken.partial ? " (partial)" : "", buffer);
  *ret = out.push(buffer);
  if (*ret != GST_FLOW_OK) {
    std::lock_guard<std::mutex> guard(s.lock);
    s.last_flow = *ret;
    s.cond.notify_all();
  }
  return *ret == GST_FLOW_OK;
}

void send_due_ends(BatchAssembler &s, BatchOutput &out) {
  std::vector<BatchStreamEnd> due;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    due = s.take_due_ends();
  }
  for (const auto &e : due) {
    GST_DEBUG("stream %s %s", e.stream.c_str(), e.released ? "left" : "ended");
    out.push_event(gst_tensor_mem_stream_end_event_new(e.stream.c_str(), e.released));
  }
}

} // namespace

GstFlowReturn batch_send_ready(BatchAssembler &s, BatchReason why, BatchReason then, BatchOutput &out) {
  init_debug();
  GstFlowReturn ret = GST_FLOW_OK;
  while (send_front(s, why, out, &ret)) {
    send_due_ends(s, out);
    why = then;
  }
  send_due_ends(s, out);
  return ret;
}

/* ---- the timer ---- */

void batch_timer_run(const std::shared_ptr<BatchAssembler> &shared, const std::function<void(BatchReason)> &emit) {
  BatchAssembler &s = *shared;
  std::unique_lock<std::mutex> lock(s.lock);
  while (s.running) {
    if (s.kick) {
      s.kick = false;
      const bool drain = s.all_ended();
      lock.unlock();
      emit(drain ? BatchReason::Drain : BatchReason::Complete);
      lock.lock();
      continue;
    }
    if (s.flush_downstream || s.open.empty() || s.open.front().filled == 0 || s.timeout == 0) {
      s.cond.wait(lock);
      continue;
    }
    if (s.front_is_due()) {
      lock.unlock();
      emit(BatchReason::Timeout);
      lock.lock();
      continue;
    }
    // Until the front batch's timeout, or a notify.
    const gint64 wait_us = s.open.front().first_fill + static_cast<gint64>(s.timeout / 1000) - g_get_monotonic_time();
    s.cond.wait_for(lock, std::chrono::microseconds(std::max<gint64>(wait_us, 1)));
  }
}

} // namespace gst_tensormem
