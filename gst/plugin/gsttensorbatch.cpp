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
#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorbatchstore-private.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/tensormem/gsttensorpbo.h>
#include <gst/tensormem/gsttensorreadcompletion.h>

#include <gio/gio.h>
#include <gst/allocators/allocators.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
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

constexpr guint kNoSlot = G_MAXUINT;
/* How many batches may be open at once: the one being filled and the next,
 * which a stream that is a frame ahead writes into. */
constexpr guint64 kDepth = 2;
constexpr gsize kFreeKept = 4; // returned allocations kept beyond those in use

/* The storage property: only the storages a batch can live in (so that
 * gst-launch refuses storage=pbo when it parses the line). Its own enum,
 * values and nicks as GstTensorMemStorage's. */
enum BatchStorage {
  BATCH_STORAGE_AUTO = GST_TENSOR_MEM_STORAGE_AUTO,
  BATCH_STORAGE_SYSTEM = GST_TENSOR_MEM_STORAGE_SYSTEM,
  BATCH_STORAGE_DMABUF = GST_TENSOR_MEM_STORAGE_DMABUF
};

GType batch_storage_get_type() {
  static GType type = 0;
  if (g_once_init_enter(&type)) {
    static const GEnumValue values[] = {
        {BATCH_STORAGE_AUTO, "System memory, or DMA-BUF where the streams negotiate memory:DMABuf", "auto"},
        {BATCH_STORAGE_SYSTEM, "System memory", "system"},
        {BATCH_STORAGE_DMABUF, "One DMA-BUF per batch", "dmabuf"},
        {0, nullptr, nullptr}};
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemBatchStorage", values));
  }
  return type;
}

struct PadState {
  guint id = 0;
  GstPad *pad = nullptr; // not owned: the pad owns its state's lifetime through the element
  std::string name;
  guint slot = kNoSlot;
  guint64 next_acquire = 0;
  bool eos = false, flushing = false;
  bool flush_stopped = false; // a flush-stop since the batch's flush went downstream
  bool has_caps = false;      // its caps came (the time grid needs every stream's frame rate)
};

struct SlotRecord {
  GstBuffer *frame = nullptr; // the stream's buffer, kept for its metas until the batch leaves
  bool filled = false, copied = false;
  bool acquired = false; // a window of this slot is out, not yet back in a chain
  std::string stream;
};

/* A stream that ended or left while the others go on: its stream-end event
 * goes downstream once the batches holding its frames have (cur_seq has
 * reached go_at). */
struct StreamEnd {
  guint64 go_at = 0;
  std::string stream;
  bool released = false;
};

struct Batch {
  gst_tensormem::BatchAllocation *storage = nullptr; // one reference
  std::vector<SlotRecord> slots;
  guint filled = 0;
  bool cpu_written = false; // a slot copied or zeroed by the CPU (the family may need a fence for it)
  gint64 first_fill = 0;    // monotonic µs
  // The running time of the first frame in it (its stream's segment): where
  // upstream is live, the batch is due at that time plus the latency.
  GstClockTime first_running_time = GST_CLOCK_TIME_NONE;
};

void release_batch(Batch &batch) {
  for (SlotRecord &slot : batch.slots)
    gst_clear_buffer(&slot.frame);
  if (batch.storage)
    gst_tensormem::batch_allocation_unref(batch.storage);
  batch.storage = nullptr;
}

/* Everything the streaming threads, the pools and the timer share, under
 * `lock`. Pools hold it by weak reference, so a pool upstream keeps
 * nothing of a disposed element alive. The batches' allocations come from
 * `store`, in the memory family the streams negotiated. */
struct Shared {
  std::mutex lock;
  std::condition_variable cond;

  // Properties.
  guint batch_size = 0;
  GstClockTime timeout = 0;
  GstClockTime max_latency = 0;
  // What the last latency query upstream answered (through our source pad):
  // where the streams are live, a batch leaves at its first frame's running
  // time plus their latency plus max_latency, whoever is missing.
  bool live = false;
  GstClockTime upstream_latency = 0;
  bool deadline_fired = false; // the pipeline clock reached the live deadline the timer waits for

  /* The running time at which the front batch is due in a live pipeline;
   * NONE where upstream is not live or no frame with a time is in it. */
  GstClockTime live_due() const {
    if (!live || open.empty() || open.front().filled == 0 || !GST_CLOCK_TIME_IS_VALID(open.front().first_running_time))
      return GST_CLOCK_TIME_NONE;
    return open.front().first_running_time + upstream_latency + max_latency;
  }
  double pad_value = 0.0; // every element of an empty slot
  bool require_zero_copy = false;
  BatchStorage storage = BATCH_STORAGE_AUTO;

  // Negotiation: the per-stream tensor and the layout of a batch.
  bool negotiated = false;
  GstCaps *stream_caps = nullptr; // the first stream's, without framerate
  std::string first_pad;          // the pad whose caps made stream_caps
  gst_tensormem::TensorCaps tensor;
  const gst_tensormem::Backend *family = &gst_tensormem::backend_at(0);
  GstObject *device = nullptr; // the family's shared object the batches belong to (one reference), or NULL
  gsize slot_bytes = 0;
  guint n_slots = 0;
  bool relayout = false; // pads changed under batch-size 0: a new layout at the next boundary
  bool caps_changed = false;

  std::vector<std::unique_ptr<PadState>> pads;
  guint next_pad_id = 0;
  std::deque<Batch> open; // open[k] is batch cur_seq + k
  guint64 cur_seq = 0;
  guint64 layout_start = 0; // the first batch of the current layout: windows before it are of an older one
  // The time grid: batch base_seq + k holds the frames whose running time is
  // nearest t_base + k × period, period the shortest frame duration of the
  // streams (NONE: no frame rate known, batches pair the streams' frames in
  // order). t_base is set by the first frame placed by time, and again after
  // a flush or a new period.
  GstClockTime period = GST_CLOCK_TIME_NONE;
  GstClockTime t_base = GST_CLOCK_TIME_NONE;
  guint64 base_seq = 0;

  /* The batch of running time `t` on the grid (the grid starts at
   * `first` where it has no base yet); may be before cur_seq. */
  guint64 seq_of_time(GstClockTime t, guint64 first) {
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
  std::shared_ptr<gst_tensormem::BatchStore> store = gst_tensormem::BatchStore::create(kFreeKept);

  bool running = false; // READY→PAUSED .. PAUSED→READY
  bool kick = false;    // the timer thread should check whether the front batch can leave
  GstFlowReturn last_flow = GST_FLOW_OK;
  std::atomic<guint64> copied_bytes{0}, batches{0}, partial_batches{0}, dropped{0};
  std::vector<StreamEnd> ends; // stream-end events not yet sent
  // Each stream's latest segment and tags not yet sent (stream-segment and
  // stream-tags events), sent before the next batch. Keyed by the stream's
  // name and what the event replaces: its segment, its stream-scope tags,
  // its global-scope tags; a newer event of a key takes the older's place.
  std::vector<std::pair<std::string, GstEvent *>> stream_events;

  void keep_stream_event(std::string key, GstEvent *event) {
    auto same = std::find_if(stream_events.begin(), stream_events.end(), [&](const auto &e) { return e.first == key; });
    if (same != stream_events.end())
      gst_event_take(&same->second, event);
    else
      stream_events.emplace_back(std::move(key), event);
  }
  // All of them, or (after a flush, which ends segments but not tags) the
  // segments only.
  void clear_stream_events(bool segments_only = false) {
    // A partition, not remove_if: every element stays whole, so those past
    // `gone` can be let go.
    auto gone = std::stable_partition(stream_events.begin(), stream_events.end(), [&](const auto &e) {
      return segments_only && !gst_tensor_mem_stream_segment_event_parse(e.second, nullptr, nullptr);
    });
    for (auto it = gone; it != stream_events.end(); ++it)
      gst_event_unref(it->second);
    stream_events.erase(gone, stream_events.end());
  }
  // Flushes: the seqnum of the last flushing seek sent upstream through us,
  // and whether a flush is downstream now (no batch leaves until every
  // stream has flushed and stopped).
  guint32 seek_seqnum = GST_SEQNUM_INVALID;
  bool flush_downstream = false;

  ~Shared() {
    clear_stream_events();
    for (Batch &batch : open)
      release_batch(batch);
    gst_clear_caps(&stream_caps);
    gst_clear_object(&device);
  }

  PadState *pad(guint id) {
    for (auto &p : pads)
      if (p->id == id)
        return p.get();
    return nullptr;
  }

  /* Batch `seq` (>= cur_seq, < cur_seq + kDepth), opened with its
   * allocation where it was not yet; NULL when no allocation can be made. */
  Batch *batch(guint64 seq) {
    while (open.size() <= seq - cur_seq) {
      Batch b;
      b.storage = store->acquire(*family, device, slot_bytes, n_slots);
      if (!b.storage)
        return nullptr;
      b.slots.resize(n_slots);
      open.push_back(std::move(b));
    }
    return &open[seq - cur_seq];
  }

  /* Whether every stream that has not ended has filled its slot of `b`
   * (batch `seq`), or has passed it: its next frame is for a later batch
   * (a slower stream, on the time grid, has no frame of this time). */
  bool complete(const Batch &b, guint64 seq) const {
    if (b.filled == 0 || flush_downstream)
      return false;
    for (const auto &p : pads) {
      if (p->slot == kNoSlot || p->slot >= b.slots.size() || p->eos)
        continue;
      const SlotRecord &rec = b.slots[p->slot];
      if (!rec.filled && (rec.acquired || p->next_acquire <= seq))
        return false;
    }
    return true;
  }

  /* A flushed (or released) stream's frames leave the open batches, and its
   * next window is of the front batch again. How many left. */
  guint forget_frames_of(PadState &p) {
    p.next_acquire = cur_seq;
    guint forgotten = 0;
    if (p.slot == kNoSlot)
      return forgotten;
    for (Batch &b : open) {
      if (p.slot >= b.slots.size())
        continue;
      SlotRecord &rec = b.slots[p.slot];
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

  /* Where a stream-end of `p` may go: after the last open batch holding a
   * frame of it (now, where none does). */
  guint64 end_of_frames(const PadState &p) const {
    guint64 at = cur_seq;
    for (std::size_t k = 0; p.slot != kNoSlot && k < open.size(); ++k)
      if (p.slot < open[k].slots.size() && open[k].slots[p.slot].filled)
        at = cur_seq + k + 1;
    return at;
  }

  bool all_ended() const {
    for (const auto &p : pads)
      if (!p->eos)
        return false;
    return true;
  }

  /* The slots, one per pad (batch-size 0) or the lowest free one each. */
  void assign_slots() {
    if (batch_size == 0) {
      guint i = 0;
      for (auto &p : pads)
        p->slot = i++;
      return;
    }
    std::vector<bool> used(batch_size, false);
    for (auto &p : pads)
      if (p->slot != kNoSlot && p->slot < batch_size && !used[p->slot])
        used[p->slot] = true;
      else
        p->slot = kNoSlot;
    for (auto &p : pads) {
      if (p->slot != kNoSlot)
        continue;
      for (guint i = 0; i < batch_size; ++i)
        if (!used[i]) {
          used[i] = true;
          p->slot = i;
          break;
        }
    }
  }

  /* Forgets the open batches (windows out of them, of the old layout, are copied) and
   * the spare allocations of another size. */
  void discard_open() {
    const guint64 skipped = open.size() + kDepth;
    cur_seq += skipped;
    for (Batch &b : open)
      release_batch(b);
    open.clear();
    layout_start = cur_seq;
    // The grid goes on in time: the front batch is again the time the
    // discarded front one had.
    base_seq += skipped;
  }

  /* A new layout for batch-size 0 after pads came or went; only where no
   * frame is waiting in the front batch. */
  void apply_relayout() {
    discard_open();
    const guint n = batch_size ? batch_size : std::max<guint>(1, static_cast<guint>(pads.size()));
    if (n != n_slots) {
      n_slots = n;
      caps_changed = true;
    }
    assign_slots();
    relayout = false;
  }
};

/* A CPU write of `size` bytes at `offset` of batch `b`'s allocation:
 * `write` gets the bytes, and the batch remembers that a CPU wrote (its
 * family may need a fence for that). FALSE when they cannot be mapped. */
template <typename Write> bool write_on_cpu(Batch &b, gsize offset, gsize size, Write &&write) {
  if (!gst_tensormem::batch_write_on_cpu(b.storage, offset, size, std::forward<Write>(write)))
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

/* The batched tensor's shape, outermost first. */
std::vector<std::int64_t> batched_shape(const gst_tensormem::TensorCaps &t, guint n) {
  std::vector<std::int64_t> shape = t.shape;
  if (!shape.empty() && shape.front() == 1)
    shape.front() = n;
  else
    shape.insert(shape.begin(), n);
  return shape;
}

} // namespace

/* ---- the slot pool: windows of the batch a pad fills next ---- */

#define GST_TYPE_TENSOR_BATCH_SLOT_POOL (gst_tensor_batch_slot_pool_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemBatchSlotPool, gst_tensor_batch_slot_pool, GST, TENSOR_BATCH_SLOT_POOL, GstBufferPool)

struct _GstTensorMemBatchSlotPool {
  GstBufferPool parent;
  std::weak_ptr<Shared> *shared;
  guint pad_id;
};

namespace {

/* A window handed to a producer, watched until it comes back in a chain: a
 * producer or an element between may drop it instead (a leaky queue, a
 * frame dropper), and its slot must then stop waiting for it, or the batch
 * (with no timeout) would wait forever. Kept as qdata on the window's
 * buffer; the chain takes it off first thing, and a buffer freed with it on
 * was never delivered. */
struct WindowWatch {
  std::weak_ptr<Shared> shared;
  guint64 seq;
  guint slot;
};

GQuark window_watch_quark() {
  static const GQuark quark = g_quark_from_static_string("GstTensorMemBatchWindowWatch");
  return quark;
}

/* A window's buffer went without reaching the chain: its slot is no longer
 * being written. Runs where the buffer is freed, never under the shared
 * lock (the chain takes the watch off before locking, and no other buffer
 * of a producer is freed under it). */
void window_dropped(gpointer data) {
  std::unique_ptr<WindowWatch> watch(static_cast<WindowWatch *>(data));
  std::shared_ptr<Shared> shared = watch->shared.lock();
  if (!shared)
    return;
  std::lock_guard<std::mutex> guard(shared->lock);
  Shared &s = *shared;
  if (watch->seq < s.cur_seq || watch->seq < s.layout_start || watch->seq - s.cur_seq >= s.open.size())
    return; // its batch left, or belongs to an older layout
  Batch &b = s.open[watch->seq - s.cur_seq];
  if (watch->slot >= b.slots.size() || b.slots[watch->slot].filled || !b.slots[watch->slot].acquired)
    return;
  b.slots[watch->slot].acquired = false;
  GST_DEBUG("a window of batch %" G_GUINT64_FORMAT " slot %u went without reaching tensorbatch", watch->seq,
            watch->slot);
  s.kick = true; // the batch may be complete without it now
  s.cond.notify_all();
}

} // namespace

G_DEFINE_TYPE(GstTensorMemBatchSlotPool, gst_tensor_batch_slot_pool, GST_TYPE_BUFFER_POOL)

static const gchar **gst_tensor_batch_slot_pool_get_options(GstBufferPool *) {
  static const gchar *options[] = {GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT, nullptr};
  return options;
}

/* Each buffer is made for the batch its pad fills next, so nothing is kept:
 * released buffers are freed (their window's reference to the batch goes). */
static GstFlowReturn gst_tensor_batch_slot_pool_acquire(GstBufferPool *pool, GstBuffer **buffer,
                                                        GstBufferPoolAcquireParams *params) {
  // The frame's running time, where its producer says it (tensorconvert).
  const GstClockTime t = params && params->format == GST_FORMAT_TIME && params->start >= 0
                             ? static_cast<GstClockTime>(params->start)
                             : GST_CLOCK_TIME_NONE;
  auto *self = GST_TENSOR_BATCH_SLOT_POOL(pool);
  std::shared_ptr<Shared> shared = self->shared->lock();
  if (!shared)
    return GST_FLOW_FLUSHING;
  std::unique_lock<std::mutex> lock(shared->lock);
  bool waited_for_rates = false;
  for (;;) {
    if (GST_BUFFER_POOL_IS_FLUSHING(pool) || !shared->running)
      return GST_FLOW_FLUSHING;
    PadState *pad = shared->pad(self->pad_id);
    if (!pad || pad->flushing)
      return GST_FLOW_FLUSHING;
    if (!shared->negotiated)
      return GST_FLOW_NOT_NEGOTIATED;
    if (pad->slot == kNoSlot) { // a pad that came while a batch was filling: a slot at the next boundary
      shared->cond.wait(lock);
      continue;
    }
    guint64 seq = std::max(pad->next_acquire, shared->cur_seq);
    if (GST_CLOCK_TIME_IS_VALID(t) && !waited_for_rates) {
      // The grid's period is the shortest frame duration of every stream:
      // wait for the streams' caps (up to the timeout where one is set).
      waited_for_rates = true;
      auto unknown = [&] {
        return std::any_of(shared->pads.begin(), shared->pads.end(),
                           [](const auto &p) { return p->slot != kNoSlot && !p->eos && !p->has_caps; });
      };
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(shared->timeout);
      while (unknown() && shared->running && !GST_BUFFER_POOL_IS_FLUSHING(pool)) {
        if (shared->timeout == 0)
          shared->cond.wait(lock);
        else if (shared->cond.wait_until(lock, until) == std::cv_status::timeout)
          break;
      }
      continue;
    }
    if (GST_CLOCK_TIME_IS_VALID(t) && GST_CLOCK_TIME_IS_VALID(shared->period) && shared->period > 0) {
      // On the grid: the batch of its time (a slower stream skips those
      // between; a frame whose time's batch left goes into the front one).
      seq = std::max(seq, shared->seq_of_time(t, seq));
      if (seq > pad->next_acquire) {
        // The batches it skips no longer wait for it.
        pad->next_acquire = std::min(seq, shared->cur_seq + kDepth);
        shared->kick = true;
        shared->cond.notify_all();
      }
    }
    if (seq >= shared->cur_seq + kDepth) { // a frame ahead already: wait for the front batch to leave
      shared->cond.wait(lock);
      continue;
    }
    Batch *batch = shared->batch(seq);
    if (!batch)
      return GST_FLOW_ERROR;
    if (batch->slots[pad->slot].filled) { // its slot there holds a copied frame already: the next batch
      pad->next_acquire = seq + 1;
      continue;
    }
    GstMemory *mem =
        gst_tensormem::batch_window(batch->storage, seq, pad->slot, pad->slot * shared->slot_bytes, shared->slot_bytes);
    if (!mem)
      return GST_FLOW_ERROR;
    batch->slots[pad->slot].acquired = true;
    pad->next_acquire = seq + 1;
    *buffer = gst_buffer_new();
    gst_buffer_append_memory(*buffer, mem);
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(*buffer), window_watch_quark(),
                              new WindowWatch{*self->shared, seq, pad->slot}, window_dropped);
    return GST_FLOW_OK;
  }
}

static void gst_tensor_batch_slot_pool_release(GstBufferPool *, GstBuffer *buffer) { gst_buffer_unref(buffer); }

static void gst_tensor_batch_slot_pool_flush_start(GstBufferPool *pool) {
  auto *self = GST_TENSOR_BATCH_SLOT_POOL(pool);
  if (std::shared_ptr<Shared> shared = self->shared->lock()) {
    std::lock_guard<std::mutex> guard(shared->lock);
    shared->cond.notify_all();
  }
}

static void gst_tensor_batch_slot_pool_finalize(GObject *object) {
  delete GST_TENSOR_BATCH_SLOT_POOL(object)->shared;
  G_OBJECT_CLASS(gst_tensor_batch_slot_pool_parent_class)->finalize(object);
}

static void gst_tensor_batch_slot_pool_class_init(GstTensorMemBatchSlotPoolClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_batch_slot_pool_finalize;
  auto *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->get_options = gst_tensor_batch_slot_pool_get_options;
  pool_class->acquire_buffer = gst_tensor_batch_slot_pool_acquire;
  pool_class->release_buffer = gst_tensor_batch_slot_pool_release;
  pool_class->flush_start = gst_tensor_batch_slot_pool_flush_start;
}

static void gst_tensor_batch_slot_pool_init(GstTensorMemBatchSlotPool *self) {
  self->shared = new std::weak_ptr<Shared>();
}

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
  std::shared_ptr<Shared> *shared;
  std::mutex *push_lock; // one batch downstream at a time, in order; taken before shared->lock
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

enum class Reason { Complete, Timeout, Drain };

/* The batch stream's start (under push_lock). Its id is made here, as
 * GstAggregator makes its own: gst_pad_create_stream_id() derives an id
 * from the one sink pad of an element, and this one has several. */
void push_stream_start(GstTensorMemBatch *self) {
  gchar *id = g_strdup_printf("%s-%08x", GST_OBJECT_NAME(self), g_random_int());
  gst_pad_push_event(self->srcpad, gst_event_new_stream_start(id));
  g_free(id);
  self->sent_stream_start = true;
}

/* The source caps of a batch of `n_slots` slots (under the lock). */
GstCaps *batch_caps_locked(const Shared &s, guint n_slots) {
  GstCaps *caps = gst_caps_copy(s.stream_caps);
  gst_caps_set_simple(caps, "dimensions", G_TYPE_STRING, dims_string(batched_shape(s.tensor, n_slots)).c_str(),
                      nullptr);
  return caps;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* GStreamer's description of the batch (1.26): its data a buffer over the
 * same memory. */
void attach_tensor_meta(GstBuffer *out, const gst_tensormem::TensorCaps &t, guint n) {
  GstTensorDataType type;
  if (!gst_tensormem::tensor_data_type_of(t.code, t.bits, &type))
    return;
  const std::vector<std::int64_t> shape = batched_shape(t, n);
  const std::vector<gsize> dims(shape.begin(), shape.end());
  gst_tensormem::set_tensor_meta(out, nullptr, g_quark_from_static_string("batch"), type, dims.data(), dims.size());
}
#endif

/* `bytes` bytes at `to`, every element `value` in `t`'s type. */
void fill(std::byte *to, gsize bytes, const gst_tensormem::TensorCaps &t, double value) {
  std::vector<std::uint8_t> element;
  if (value == 0.0 || !gst_tensormem::element_bytes(t, value, &element) || element.empty()) {
    std::memset(to, 0, bytes);
    return;
  }
  for (gsize at = 0; at + element.size() <= bytes; at += element.size())
    std::memcpy(to + at, element.data(), element.size());
}

/* The batch `b` as one buffer: its memory over the whole allocation, the
 * empty slots filled with `pad_value`, the slots' fences, the batch meta. Takes `b`; NULL
 * with `*why` set when no memory over the allocation can be made or a PBO
 * cannot be written or fenced. */
GstBuffer *make_output(Batch &b, guint64 seq, const gst_tensormem::Backend &family,
                       const gst_tensormem::TensorCaps &tensor, double pad_value, std::string *why) {
  const gsize slot_bytes = gst_tensormem::batch_allocation_slot_bytes(b.storage);
  GstMemory *whole = gst_tensormem::batch_window(b.storage, seq, gst_tensormem::kBatchWhole, 0,
                                                 slot_bytes * gst_tensormem::batch_allocation_n_slots(b.storage));
  if (!whole) {
    *why = std::string("no memory over its ") + family.memory_name + " allocation could be made";
    release_batch(b);
    return nullptr;
  }
  GstBuffer *out = gst_buffer_new();
  gst_buffer_append_memory(out, whole);
  GstTensorMemBatchMeta *meta = gst_buffer_add_tensor_mem_batch_meta(out, static_cast<guint>(b.slots.size()));
  GstClockTime pts = GST_CLOCK_TIME_NONE, duration = GST_CLOCK_TIME_NONE;
  for (guint i = 0; i < b.slots.size(); ++i) {
    SlotRecord &rec = b.slots[i];
    GstTensorMemBatchSlot *slot = gst_tensor_mem_batch_meta_get_slot(meta, i);
    if (!rec.stream.empty())
      slot->stream = g_intern_string(rec.stream.c_str());
    if (!rec.filled) {
      // A window still out is a frame being written late: its bytes are its
      // writer's (the slot says it is not filled); the others are zero.
      if (!rec.acquired && !write_on_cpu(b, i * slot_bytes, slot_bytes,
                                         [&](std::byte *to) { fill(to, slot_bytes, tensor, pad_value); })) {
        *why = "slot " + std::to_string(i) + " of its " + family.memory_name +
               " allocation cannot be mapped to be "
               "filled";
        gst_buffer_unref(out);
        release_batch(b);
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
    if (const GstTensorMemResizeMeta *r = gst_buffer_get_tensor_mem_resize_meta(frame)) {
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
    release_batch(b);
    return nullptr;
  }
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = duration;
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  attach_tensor_meta(out, tensor, static_cast<guint>(b.slots.size()));
#else
  (void)tensor;
#endif
  release_batch(b);
  return out;
}

Shared &shared_of(GstTensorMemBatch *self) { return **self->shared; }

/* Why the sink pads, with `more` still to come, do not fit a fixed
 * batch-size (empty where they do), naming the property and the count: the
 * text of the element error or warning the user reads. */
std::string too_many_pads_locked(const Shared &s, gsize more) {
  const gsize pads = s.pads.size() + more;
  if (s.batch_size == 0 || pads <= s.batch_size)
    return {};
  return std::to_string(pads) + " sink pads for batch-size=" + std::to_string(s.batch_size) +
         ": a fixed batch has one slot per stream; set batch-size to 0 (one slot per pad) or to at least " +
         std::to_string(pads);
}

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

/* Whether the front batch is past its deadline: `timeout` after its first
 * frame came (wall clock), or, upstream being live, its first frame's
 * running time plus the latency (`now`: the running time now). */
bool front_is_due(const Shared &s, GstClockTime now) {
  if (s.open.empty() || s.open.front().filled == 0)
    return false;
  if (s.timeout > 0 && g_get_monotonic_time() >= s.open.front().first_fill + static_cast<gint64>(s.timeout / 1000))
    return true;
  const GstClockTime due = s.live_due();
  return GST_CLOCK_TIME_IS_VALID(due) && GST_CLOCK_TIME_IS_VALID(now) && now >= due;
}

/* Sends the front batch downstream when `why` holds for it. Called under
 * the push lock, without the shared lock. */
GstFlowReturn emit_batch(GstTensorMemBatch *self, Reason why) {
  Shared &s = shared_of(self);
  const GstClockTime now = why == Reason::Timeout ? running_time_now(self) : GST_CLOCK_TIME_NONE;
  std::unique_lock<std::mutex> lock(s.lock);
  if (s.open.empty() || !s.running || s.flush_downstream)
    return s.last_flow;
  Batch &front = s.open.front();
  bool go = false;
  switch (why) {
  case Reason::Complete: go = s.complete(front, s.cur_seq); break;
  case Reason::Timeout: go = front_is_due(s, now); break;
  case Reason::Drain: go = front.filled > 0; break;
  }
  if (!go)
    return s.last_flow;
  Batch batch = std::move(front);
  const guint64 seq = s.cur_seq;
  s.open.pop_front();
  ++s.cur_seq;
  const bool partial = batch.filled < batch.slots.size();
  // An empty slot still names the stream it waited for, where one feeds it.
  for (const auto &p : s.pads)
    if (p->slot < batch.slots.size() && !batch.slots[p->slot].filled)
      batch.slots[p->slot].stream = p->name;
  if (s.relayout)
    s.apply_relayout();
  GstCaps *caps = nullptr;
  if (s.caps_changed || !gst_pad_has_current_caps(self->srcpad)) {
    // The caps of the batch leaving now, which a relayout above may not share.
    caps = batch_caps_locked(s, static_cast<guint>(batch.slots.size()));
    s.caps_changed = s.n_slots != batch.slots.size();
  }
  const gst_tensormem::TensorCaps tensor = s.tensor;
  const double pad_value = s.pad_value;
  const gst_tensormem::Backend &family = *s.family;
  s.cond.notify_all();
  lock.unlock();

  std::string failure;
  GstBuffer *out = make_output(batch, seq, family, tensor, pad_value, &failure);
  if (!out) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot hand batch %" G_GUINT64_FORMAT " on", seq),
                      ("%s", failure.c_str()));
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
  Shared &s = shared_of(self);
  std::vector<StreamEnd> due;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    if (!s.running || s.flush_downstream)
      return;
    auto gone =
        std::stable_partition(s.ends.begin(), s.ends.end(), [&s](const StreamEnd &e) { return e.go_at > s.cur_seq; });
    due.assign(std::make_move_iterator(gone), std::make_move_iterator(s.ends.end()));
    s.ends.erase(gone, s.ends.end());
  }
  for (const StreamEnd &e : due) {
    GST_DEBUG_OBJECT(self, "stream %s %s", e.stream.c_str(), e.released ? "left" : "ended");
    if (self->sent_stream_start)
      gst_pad_push_event(self->srcpad, gst_tensor_mem_stream_end_event_new(e.stream.c_str(), e.released));
  }
}

/* Sends the front batch downstream when `why` holds for it, then the
 * stream ends that are due. Called with no lock held; one caller at a time
 * pushes. */
GstFlowReturn emit(GstTensorMemBatch *self, Reason why) {
  std::lock_guard<std::mutex> pushing(*self->push_lock);
  Shared &s = shared_of(self);
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
    why = Reason::Complete;
  }
  return ret;
}

/* The timer's wait on the pipeline clock for the front batch's live
 * deadline: one single-shot clock id at a time, whose callback wakes the
 * timer. The deadline is the clock's, not the wall's: a clock that runs at
 * another rate (an audio device's, a test clock) decides when a batch is
 * due. Used by the timer thread only. */
class LiveAlarm {
public:
  explicit LiveAlarm(std::weak_ptr<Shared> shared) : shared_(std::move(shared)) {}
  ~LiveAlarm() { disarm(); }
  LiveAlarm(const LiveAlarm &) = delete;
  LiveAlarm &operator=(const LiveAlarm &) = delete;

  /* Waits on `self`'s clock for running time `due` (no lock held); false
   * where there is no clock to wait on yet (before PLAYING). */
  bool arm(GstTensorMemBatch *self, GstClockTime due) {
    GstClockTime base = 0;
    GstClock *clock = playing_clock(self, &base);
    if (!clock) {
      disarm();
      return false;
    }
    if (id_ && clock == clock_ && due == due_ && base == base_) {
      gst_object_unref(clock);
      return true;
    }
    disarm();
    clock_ = clock;
    due_ = due;
    base_ = base;
    id_ = gst_clock_new_single_shot_id(clock, base + due);
    gst_clock_id_wait_async(id_, fired, new std::weak_ptr<Shared>(shared_),
                            [](gpointer data) { delete static_cast<std::weak_ptr<Shared> *>(data); });
    return true;
  }

  bool armed() const { return id_ != nullptr; }

  void disarm() {
    if (id_) {
      gst_clock_id_unschedule(id_);
      gst_clock_id_unref(id_);
      id_ = nullptr;
    }
    gst_clear_object(&clock_);
  }

private:
  static gboolean fired(GstClock *, GstClockTime, GstClockID, gpointer data) {
    if (std::shared_ptr<Shared> shared = static_cast<std::weak_ptr<Shared> *>(data)->lock()) {
      std::lock_guard<std::mutex> guard(shared->lock);
      shared->deadline_fired = true;
      shared->cond.notify_all();
    }
    return TRUE;
  }

  std::weak_ptr<Shared> shared_;
  GstClockID id_ = nullptr;
  GstClock *clock_ = nullptr;
  GstClockTime due_ = GST_CLOCK_TIME_NONE, base_ = GST_CLOCK_TIME_NONE;
};

void timer_loop(GstTensorMemBatch *self, std::shared_ptr<Shared> shared) {
  Shared &s = *shared;
  LiveAlarm alarm(shared);
  std::unique_lock<std::mutex> lock(s.lock);
  while (s.running) {
    if (s.kick) {
      s.kick = false;
      const bool drain = s.all_ended();
      lock.unlock();
      emit(self, drain ? Reason::Drain : Reason::Complete);
      lock.lock();
      continue;
    }
    if (s.flush_downstream || s.open.empty() || s.open.front().filled == 0) {
      if (alarm.armed()) { // no batch waits for it now (let go without the lock, as armed)
        lock.unlock();
        alarm.disarm();
        lock.lock();
        continue;
      }
      s.cond.wait(lock);
      continue;
    }
    // The clock is armed and read without the shared lock (they take the
    // element's); the front may change meanwhile, which a notify, the
    // alarm or the next round sees.
    s.deadline_fired = false;
    GstClockTime now = GST_CLOCK_TIME_NONE;
    bool on_clock = false;
    const GstClockTime due = s.live_due();
    if (GST_CLOCK_TIME_IS_VALID(due)) {
      lock.unlock();
      on_clock = alarm.arm(self, due);
      now = running_time_now(self);
      lock.lock();
      if (!s.running)
        break;
    }
    if (front_is_due(s, now)) {
      lock.unlock();
      emit(self, Reason::Timeout);
      lock.lock();
      continue;
    }
    if (s.deadline_fired || s.kick)
      continue; // came while the lock was let go: look again
    // Until the wall-clock timeout, the alarm's call or a notify; a live
    // deadline with no clock yet (before PLAYING) is looked at again in 10 ms.
    gint64 wait_us = G_MAXINT64;
    if (s.timeout > 0)
      wait_us = s.open.front().first_fill + static_cast<gint64>(s.timeout / 1000) - g_get_monotonic_time();
    if (GST_CLOCK_TIME_IS_VALID(due) && !on_clock)
      wait_us = std::min<gint64>(wait_us, 10000);
    if (wait_us == G_MAXINT64)
      s.cond.wait(lock);
    else
      s.cond.wait_for(lock, std::chrono::microseconds(std::max<gint64>(wait_us, 1)));
  }
}

PadState *pad_state(Shared &s, GstPad *pad) { return s.pad(GST_TENSOR_BATCH_PAD(pad)->id); }

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
  Shared &s = shared_of(self);
  // Delivered: the window's watch goes (before the lock: the buffer may be
  // dropped under it below).
  delete static_cast<WindowWatch *>(gst_mini_object_steal_qdata(GST_MINI_OBJECT_CAST(buffer), window_watch_quark()));
  const gst_tensormem::BatchWindowTag *tag = gst_tensormem::batch_window_tag(buffer);
  const GstClockTime running_time = frame_running_time(pad, buffer);
  bool waited = false;
  bool complete = false;
  std::unique_lock<std::mutex> lock(s.lock);
  for (;;) {
    PadState *p = pad_state(s, pad);
    if (!s.running || !p || p->flushing) {
      gst_buffer_unref(buffer);
      return GST_FLOW_FLUSHING;
    }
    if (!s.negotiated) {
      gst_buffer_unref(buffer);
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s: no caps before the first buffer", p->name.c_str()), (nullptr));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    if (p->slot == kNoSlot) { // a pad that came while a batch was filling: a slot at the next boundary
      s.cond.wait(lock);
      continue;
    }
    const bool own_window = tag && tag->slot == p->slot && tag->seq >= s.layout_start &&
                            gst_tensormem::batch_allocation_n_slots(tag->allocation) == s.n_slots &&
                            gst_tensormem::batch_allocation_slot_bytes(tag->allocation) == s.slot_bytes;
    if (own_window && tag->seq < s.cur_seq) {
      // Its batch left without it (the timeout): the frame is too late for
      // any batch, dropped and counted on its pad; the stream's next window
      // is of a batch still open.
      const std::string name = p->name;
      ++s.dropped;
      lock.unlock();
      GST_TENSOR_BATCH_PAD(pad)->dropped.fetch_add(1);
      GST_DEBUG_OBJECT(self, "%s: frame of batch %" G_GUINT64_FORMAT " came after it left: dropped", name.c_str(),
                       tag->seq);
      gst_buffer_unref(buffer);
      return GST_FLOW_OK;
    }
    if (own_window && tag->seq > s.cur_seq) { // a frame ahead: its batch is the next one
      s.cond.wait(lock);
      continue;
    }
    Batch *b = s.batch(s.cur_seq);
    if (!b) {
      lock.unlock();
      return refuse(self, buffer, "Cannot allocate a batch",
                    std::to_string(s.slot_bytes * s.n_slots) + " bytes of " + s.family->memory_name + " memory");
    }
    SlotRecord &rec = b->slots[p->slot];
    if (rec.filled) { // this stream's frame of the front batch is in: wait for it to leave
      s.cond.wait(lock);
      continue;
    }
    const bool in_place = own_window && tag->seq == s.cur_seq && tag->allocation == b->storage;
    if (!in_place) {
      const gsize size = gst_buffer_get_size(buffer);
      if (size < s.slot_bytes) {
        const std::string name = p->name;
        lock.unlock();
        return refuse(self, buffer,
                      name + "'s buffer holds " + std::to_string(size) + " bytes; its tensor needs " +
                          std::to_string(s.slot_bytes),
                      "a buffer smaller than its caps say");
      }
      if (s.require_zero_copy) {
        const std::string name = p->name;
        lock.unlock();
        return refuse(self, buffer, name + "'s tensor would be copied into its batch slot and require-zero-copy is set",
                      tag ? "the buffer is a window of a batch of another layout (pads came or went since)"
                          : "the buffer is not a window of the batch: its producer did not take the slot pool "
                            "tensorbatch proposed (tensorconvert takes it on its CPU path, and on its GL path where "
                            "it runs on the batch's GL worker and its tensor is a whole number of 32-bit words)");
      }
      if (!waited && gst_buffer_has_tensor_mem_fence(buffer)) {
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
      bool read = false;
      const bool mapped = write_on_cpu(*b, p->slot * s.slot_bytes, s.slot_bytes, [&](std::byte *to) {
        read = gst_buffer_extract(buffer, 0, to, s.slot_bytes) == s.slot_bytes;
      });
      if (!mapped || !read) {
        const std::string name = p->name;
        lock.unlock();
        return refuse(self, buffer, mapped ? name + "'s buffer cannot be read" : name + "'s slot cannot be mapped",
                      mapped ? "gst_buffer_extract failed"
                             : std::string("mapping a window of ") + s.family->memory_name + " memory");
      }
      s.copied_bytes += s.slot_bytes;
    }
    rec.filled = true;
    rec.copied = !in_place;
    rec.stream = p->name;
    if (in_place)
      rec.acquired = false;
    rec.frame = buffer;
    if (b->filled++ == 0) {
      b->first_fill = g_get_monotonic_time();
      b->first_running_time = running_time;
    }
    complete = s.complete(*b, s.cur_seq);
    break;
  }
  const GstFlowReturn last = s.last_flow;
  s.cond.notify_all();
  lock.unlock();
  if (complete)
    return emit(self, Reason::Complete);
  return last == GST_FLOW_FLUSHING ? GST_FLOW_OK : last;
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

/* `pad`'s caps came (under the lock): the time grid's period is the
 * shortest frame duration of the streams' caps, and a new one starts the
 * grid again. */
void note_stream_caps(Shared &s, GstPad *pad, GstCaps *caps) {
  if (PadState *p = s.pad(GST_TENSOR_BATCH_PAD(pad)->id))
    p->has_caps = true;
  s.cond.notify_all();
  gint n = 0, d = 1;
  if (!gst_structure_get_fraction(gst_caps_get_structure(caps, 0), "framerate", &n, &d) || n <= 0 || d <= 0)
    return;
  const GstClockTime duration = gst_util_uint64_scale_int(GST_SECOND, d, n);
  if (duration > 0 && (!GST_CLOCK_TIME_IS_VALID(s.period) || duration < s.period)) {
    s.period = duration;
    s.t_base = GST_CLOCK_TIME_NONE;
  }
}

/* The per-stream tensor of `caps`, checked against the batch's. */
gboolean sink_set_caps(GstTensorMemBatch *self, GstPad *pad, GstCaps *caps) {
  Shared &s = shared_of(self);
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
  // shares), or in DMA-BUF for plain caps where storage=dmabuf asks.
  const gst_tensormem::Backend *family = gst_tensormem::backend_of_caps(caps, 0);
  if (!family || !family->new_window) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s: no batch can be made in this memory", GST_PAD_NAME(pad)),
                      ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (!family->caps_feature && s.storage != BATCH_STORAGE_AUTO)
    family = &gst_tensormem::backend_for(static_cast<GstTensorMemStorage>(s.storage));
  GstObject *worker = nullptr;
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
    worker = self->devices->device_of(*family);
  }
  GstCaps *plain = gst_caps_copy(caps);
  gst_structure_remove_field(gst_caps_get_structure(plain, 0), "framerate");
  std::lock_guard<std::mutex> guard(s.lock);
  if (!s.negotiated)
    std::swap(s.device, worker); // the old one (if any) is let go below
  gst_clear_object(&worker);
  if (s.negotiated) {
    note_stream_caps(s, pad, caps);
    if (!gst_caps_is_equal(plain, s.stream_caps)) {
      gchar *theirs = gst_caps_to_string(plain);
      gchar *ours = gst_caps_to_string(s.stream_caps);
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                        ("%s's tensor differs from the batch's (%s's): every stream of a batch must carry the same "
                         "tensor (type, dimensions, memory)",
                         GST_PAD_NAME(pad), s.first_pad.c_str()),
                        ("%s is %s; %s is %s", GST_PAD_NAME(pad), theirs, s.first_pad.c_str(), ours));
      g_free(theirs);
      g_free(ours);
      gst_caps_unref(plain);
      return FALSE;
    }
    gst_caps_unref(plain);
    return TRUE;
  }
  // batch-size lowered after the element started (the start checks it too).
  if (const std::string refused = too_many_pads_locked(s, 0); !refused.empty()) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("%s", refused.c_str()), (nullptr));
    gst_caps_unref(plain);
    return FALSE;
  }
  if (tensor.bytes == 0 || tensor.bytes > G_MAXUINT) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("%s: a %" G_GUINT64_FORMAT "-byte tensor cannot be batched", GST_PAD_NAME(pad),
                       static_cast<guint64>(tensor.bytes)),
                      ("caps %" GST_PTR_FORMAT, caps));
    gst_caps_unref(plain);
    return FALSE;
  }
  s.stream_caps = plain;
  s.first_pad = GST_PAD_NAME(pad);
  s.tensor = tensor;
  note_stream_caps(s, pad, caps);
  s.family = family;
  s.slot_bytes = static_cast<gsize>(tensor.bytes);
  s.n_slots = 0;
  s.negotiated = true;
  s.apply_relayout();
  s.caps_changed = true;
  GST_INFO_OBJECT(self, "batches of %u × %" G_GSIZE_FORMAT "-byte tensors in %s", s.n_slots, s.slot_bytes,
                  family->memory_name);
  s.cond.notify_all();
  return TRUE;
}

} // namespace

static gboolean gst_tensor_batch_sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
  auto *self = GST_TENSOR_BATCH(parent);
  Shared &s = shared_of(self);
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
    // the split gives each stream its own.
    const GstSegment *segment = nullptr;
    gst_event_parse_segment(event, &segment);
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (PadState *p = pad_state(s, pad))
        s.keep_stream_event(p->name + "/segment", gst_tensor_mem_stream_segment_event_new(p->name.c_str(), segment));
    }
    gst_event_unref(event);
    return TRUE;
  }
  case GST_EVENT_TAG: {
    // A stream's tags are that stream's: they go to its own pad after the
    // split, as a stream-tags event, never onto the batch (whose other
    // streams they do not describe).
    GstTagList *tags = nullptr;
    gst_event_parse_tag(event, &tags);
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (PadState *p = pad_state(s, pad)) {
        const bool global = gst_tag_list_get_scope(tags) == GST_TAG_SCOPE_GLOBAL;
        s.keep_stream_event(p->name + (global ? "/tags-global" : "/tags-stream"),
                            gst_tensor_mem_stream_tags_event_new(p->name.c_str(), tags));
      }
    }
    gst_event_unref(event);
    return TRUE;
  }
  case GST_EVENT_STREAM_START: gst_event_unref(event); return TRUE;
  case GST_EVENT_EOS: {
    bool all;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      PadState *p = pad_state(s, pad);
      if (p && !p->eos) {
        p->eos = true;
        s.ends.push_back({s.end_of_frames(*p), p->name, false});
      }
      all = s.all_ended();
      s.cond.notify_all();
    }
    gst_event_unref(event);
    if (!all) { // the others go on; the front batch may wait for this stream no longer
      emit(self, Reason::Complete);
      return TRUE;
    }
    emit(self, Reason::Drain);
    std::lock_guard<std::mutex> pushing(*self->push_lock);
    if (!self->sent_stream_start)
      push_stream_start(self);
    return gst_pad_push_event(self->srcpad, gst_event_new_eos());
  }
  case GST_EVENT_FLUSH_START: {
    bool forward;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (PadState *p = pad_state(s, pad)) {
        p->flushing = true;
        s.forget_frames_of(*p);
      }
      // A flushing seek that went upstream through us flushes downstream at
      // its first flush-start (the streams flush one after the other); a
      // flush of every stream does too; a flush of some streams alone is
      // theirs.
      forward = !s.flush_downstream &&
                ((s.seek_seqnum != GST_SEQNUM_INVALID && gst_event_get_seqnum(event) == s.seek_seqnum) ||
                 std::all_of(s.pads.begin(), s.pads.end(), [](const auto &p) { return p->flushing; }));
      if (forward) {
        s.flush_downstream = true;
        s.ends.clear(); // the streams start again after the flush
        s.clear_stream_events(true);
        for (auto &p : s.pads)
          p->flush_stopped = false;
      }
      s.cond.notify_all();
    }
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
    bool done = false;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (PadState *p = pad_state(s, pad)) {
        p->flushing = false;
        p->eos = false;
        p->flush_stopped = true;
        s.forget_frames_of(*p);
      }
      if (s.flush_downstream &&
          std::all_of(s.pads.begin(), s.pads.end(), [](const auto &p) { return p->flush_stopped && !p->flushing; })) {
        done = true;
        s.flush_downstream = false;
        s.seek_seqnum = GST_SEQNUM_INVALID;
        s.last_flow = GST_FLOW_OK;
        s.t_base = GST_CLOCK_TIME_NONE; // running times start again after the flush
        s.kick = true;                  // frames that came since may make a batch
        s.cond.notify_all();
      }
    }
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
  Shared &s = shared_of(self);
  switch (GST_QUERY_TYPE(query)) {
  case GST_QUERY_CAPS: {
    // The template, not the first stream's tensor: a stream with another
    // tensor then reaches set_caps and is refused there by name, instead of
    // failing upstream as a bare not-negotiated.
    return answer_caps_query(query, gst_pad_get_pad_template_caps(pad));
  }
  case GST_QUERY_ALLOCATION: {
    GstCaps *caps = nullptr;
    gboolean need_pool = FALSE;
    gst_query_parse_allocation(query, &caps, &need_pool);
    gsize bytes = 0;
    GstObject *worker = nullptr;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (s.negotiated) {
        bytes = s.slot_bytes;
        // A GL worker's windows are written in place by a GL producer on
        // that worker only: the pool says which.
        if (s.device && G_TYPE_CHECK_INSTANCE_TYPE(s.device, GST_TYPE_TENSOR_MEM_GL_WORKER))
          worker = GST_OBJECT_CAST(gst_object_ref(s.device));
      }
    }
    if (!caps || bytes == 0) {
      gst_clear_object(&worker);
      return TRUE;
    }
    auto *pool = GST_TENSOR_BATCH_SLOT_POOL(g_object_new(GST_TYPE_TENSOR_BATCH_SLOT_POOL, nullptr));
    gst_object_ref_sink(pool);
    *pool->shared = *self->shared;
    pool->pad_id = GST_TENSOR_BATCH_PAD(pad)->id;
    GstStructure *config = gst_buffer_pool_get_config(GST_BUFFER_POOL(pool));
    gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(bytes), 0, 0);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT);
    if (worker) { // PBO windows: a GL producer writes them in place on this worker only
      gst_structure_set(config, GST_TENSOR_MEM_BATCH_SLOT_POOL_GL_WORKER, GST_TYPE_TENSOR_MEM_GL_WORKER, worker,
                        nullptr);
      gst_object_unref(worker);
    }
    gst_buffer_pool_set_config(GST_BUFFER_POOL(pool), config);
    gst_query_add_allocation_pool(query, GST_BUFFER_POOL(pool), static_cast<guint>(bytes), 0, 0);
    gst_object_unref(pool);
    return TRUE;
  }
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
      Shared &s = shared_of(GST_TENSOR_BATCH(parent));
      std::lock_guard<std::mutex> guard(s.lock);
      s.seek_seqnum = gst_event_get_seqnum(event);
    }
  }
  return gst_pad_event_default(pad, parent, event);
}

static gboolean gst_tensor_batch_src_query(GstPad *pad, GstObject *parent, GstQuery *query) {
  auto *self = GST_TENSOR_BATCH(parent);
  Shared &s = shared_of(self);
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS) {
    GstCaps *caps = nullptr;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (s.negotiated)
        caps = batch_caps_locked(s, s.n_slots);
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
  Shared &s = shared_of(self);
  // Until the element starts, batch-size may still change, so the count is
  // checked then (READY→PAUSED); gst-launch links every pad before it starts
  // and prints only "could not link" for a pad refused here.
  std::string refused;
  {
    std::lock_guard<std::mutex> guard(s.lock);
    if (s.running)
      refused = too_many_pads_locked(s, 1);
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
    for (auto &p : s.pads)
      used = std::max(used, p->id + 1);
    id = s.next_pad_id;
    if (req_name && sscanf(req_name, "sink_%u", &id) == 1) {
      if (s.pad(id)) {
        GST_WARNING_OBJECT(self, "pad %s exists", req_name);
        return nullptr;
      }
    } else {
      id = std::max(s.next_pad_id, used);
    }
    s.next_pad_id = std::max(s.next_pad_id, id + 1);
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
    auto state = std::make_unique<PadState>();
    state->id = id;
    state->pad = pad;
    state->name = name;
    state->next_acquire = s.cur_seq;
    s.pads.push_back(std::move(state));
    if (s.negotiated) {
      if (s.batch_size)
        s.assign_slots();
      else if (s.open.empty() || s.open.front().filled == 0)
        s.apply_relayout();
      else
        s.relayout = true;
    }
  }
  if (!gst_element_add_pad(element, pad)) {
    std::lock_guard<std::mutex> guard(s.lock);
    s.pads.erase(std::remove_if(s.pads.begin(), s.pads.end(), [id](const auto &p) { return p->id == id; }),
                 s.pads.end());
    gst_object_unref(pad);
    return nullptr;
  }
  return pad;
}

static void gst_tensor_batch_release_pad(GstElement *element, GstPad *pad) {
  auto *self = GST_TENSOR_BATCH(element);
  Shared &s = shared_of(self);
  {
    std::lock_guard<std::mutex> guard(s.lock);
    const guint id = GST_TENSOR_BATCH_PAD(pad)->id;
    if (PadState *p = s.pad(id)) {
      // Its frames in the batches being made go with it (counted), and its
      // stream's end follows the batches already sent.
      if (const guint n = s.forget_frames_of(*p)) {
        s.dropped += n;
        GST_INFO_OBJECT(self, "%s released: %u frames in open batches dropped", p->name.c_str(), n);
      }
      if (s.running && p->slot != kNoSlot)
        s.ends.push_back({s.cur_seq, p->name, true});
    }
    s.pads.erase(std::remove_if(s.pads.begin(), s.pads.end(), [id](const auto &p) { return p->id == id; }),
                 s.pads.end());
    if (s.negotiated && s.batch_size == 0) {
      if (s.open.empty() || s.open.front().filled == 0)
        s.apply_relayout();
      else
        s.relayout = true;
    }
    // The front batch may now be complete without this stream: the timer
    // thread sends it (not this application thread).
    s.kick = true;
    s.cond.notify_all();
  }
  gst_element_remove_pad(element, pad);
}

static GstStateChangeReturn gst_tensor_batch_change_state(GstElement *element, GstStateChange transition) {
  auto *self = GST_TENSOR_BATCH(element);
  Shared &s = shared_of(self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    std::string refused;
    {
      std::lock_guard<std::mutex> guard(s.lock);
      refused = too_many_pads_locked(s, 0);
    }
    if (!refused.empty()) {
      GST_ELEMENT_ERROR(self, CORE, PAD, ("%s", refused.c_str()), (nullptr));
      return GST_STATE_CHANGE_FAILURE;
    }
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.running = true;
      s.live = false; // until a latency query says otherwise
      s.upstream_latency = 0;
      s.last_flow = GST_FLOW_OK;
      s.kick = false;
      s.flush_downstream = false;
      s.seek_seqnum = GST_SEQNUM_INVALID;
      s.ends.clear();
      s.clear_stream_events();
      for (auto &p : s.pads)
        p->eos = p->flushing = p->flush_stopped = p->has_caps = false;
    }
    g_cancellable_reset(self->waits);
    self->sent_stream_start = self->sent_segment = false;
    self->timer = new std::thread(timer_loop, self, *self->shared);
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
    s.discard_open();
    s.negotiated = false;
    s.period = s.t_base = GST_CLOCK_TIME_NONE;
    gst_clear_caps(&s.stream_caps);
    for (auto &p : s.pads)
      p->slot = kNoSlot;
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
      old = std::exchange(s.store, gst_tensormem::BatchStore::create(kFreeKept));
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
    Shared &s = shared_of(GST_TENSOR_BATCH(object));
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.max_latency = g_value_get_uint64(value);
      s.cond.notify_all();
    }
    // The pipeline's latency changes with it: sinks query it again.
    gst_element_post_message(GST_ELEMENT(object), gst_message_new_latency(GST_OBJECT(object)));
    return;
  }
  Shared &s = shared_of(GST_TENSOR_BATCH(object));
  std::lock_guard<std::mutex> guard(s.lock);
  switch (prop_id) {
  case PROP_BATCH_SIZE: s.batch_size = g_value_get_uint(value); break;
  case PROP_TIMEOUT:
    s.timeout = g_value_get_uint64(value);
    s.cond.notify_all();
    break;
  case PROP_PAD_VALUE: s.pad_value = g_value_get_double(value); break;
  case PROP_REQUIRE_ZERO_COPY: s.require_zero_copy = g_value_get_boolean(value); break;
  case PROP_STORAGE: s.storage = static_cast<BatchStorage>(g_value_get_enum(value)); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_batch_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  Shared &s = shared_of(GST_TENSOR_BATCH(object));
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
  delete self->shared;
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
                        batch_storage_get_type(), BATCH_STORAGE_AUTO,
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
  self->shared = new std::shared_ptr<Shared>(std::make_shared<Shared>());
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
