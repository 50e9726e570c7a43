// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and its elements: how a batching element
 * assembles batches from several streams, whatever memory family they live
 * in and however the element gets its frames.
 *
 * A BatchAssembler holds the open batches (allocations of a BatchStore, in
 * the family the streams negotiated), one record per stream, and the time
 * grid that says which batch a frame of a given running time belongs to.
 * Producers write their slot in place through the slot pool
 * (batch_answer_allocation: windows of the batch their frame belongs to);
 * each frame is placed in its stream's thread (place_waiting), and
 * batch_send_ready takes each batch that may leave (take_front), turns it
 * into one buffer (batch_make_output) and hands it to a BatchOutput.
 * gsttensorbatchaggregator-private.h drives both from a GstAggregator. The
 * timer (batch_timer_run) sends batches that waited the wall-clock
 * `timeout`; a live deadline is the element's (its GstAggregator's wait on
 * the pipeline clock, from the front batch's first_running_time). Everything is under `lock`; `cond` wakes whoever
 * waits.
 * C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbatchstore-private.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/tensormem-prelude.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gst_tensormem {

constexpr guint kBatchNoSlot = G_MAXUINT;
/* How many batches may be open at once: the one being filled and the next,
 * which a stream that is a frame ahead writes into. */
constexpr guint64 kBatchDepth = 2;
/* Returned allocations a store keeps beyond those in use. */
constexpr gsize kBatchFreeKept = 4;

/* One stream (a sink pad of the element) as the assembler sees it. */
struct BatchStream {
  guint id = 0;
  std::string name;
  guint slot = kBatchNoSlot;
  guint64 next_acquire = 0;
  bool eos = false, flushing = false;
  bool flush_stopped = false; // a flush-stop since the batch's flush went downstream
  bool has_caps = false;      // its caps came (the time grid needs every stream's frame rate)
  // It sends video frames with their tensor beside them (GstTensorMeta),
  // not other/tensors: the batch keeps each frame for tensorunbatch.
  bool frames = false;
  // Before GStreamer 1.28 a stream of frames' caps and the description of
  // their tensor (the producer's GST_TENSOR_MEM_FRAME_TENSOR_EVENT) come
  // apart; each is kept here, and the second to come makes the stream's caps.
  GstCaps *frame_caps = nullptr, *described = nullptr;

  BatchStream() = default;
  BatchStream(const BatchStream &) = delete;
  BatchStream &operator=(const BatchStream &) = delete;
  ~BatchStream() { forget_description(); }
  void forget_description() {
    gst_clear_caps(&frame_caps);
    gst_clear_caps(&described);
  }
};

struct BatchSlotRecord {
  GstBuffer *frame = nullptr; // the stream's buffer, kept for its metas until the batch leaves
  bool filled = false, copied = false;
  bool is_video_frame = false; // `frame` is a video frame (its tensor beside it), handed on in the batch meta
  bool acquired = false; // a window of this slot is out, not yet placed
  std::string stream;
};

/* A stream that ended or left while the others go on: its stream-end event
 * goes downstream once the batches holding its frames have (cur_seq has
 * reached go_at). */
struct BatchStreamEnd {
  guint64 go_at = 0;
  std::string stream;
  bool released = false;
};

struct OpenBatch {
  BatchAllocation *storage = nullptr; // one reference
  std::vector<BatchSlotRecord> slots;
  guint filled = 0;
  bool cpu_written = false; // a slot copied or filled by the CPU (the family may need a fence for it)
  gint64 first_fill = 0;    // monotonic µs
  // The running time of the first frame in it (its stream's segment): where
  // upstream is live, the element's deadline counts from it.
  GstClockTime first_running_time = GST_CLOCK_TIME_NONE;

  void release() {
    for (BatchSlotRecord &slot : slots)
      gst_clear_buffer(&slot.frame);
    if (storage)
      batch_allocation_unref(storage);
    storage = nullptr;
  }
};

/* Why the front batch may leave: every stream filled or passed it; it
 * waited `timeout`; or it goes as it is (every stream ended, or the
 * element's live deadline passed). */
enum class BatchReason { Complete, Timeout, Drain };

/* What place() did with a frame. */
enum class PlaceStatus {
  Placed,         // in its slot (taken); `complete`: the front batch may leave
  Wait,           // its batch is not the front one yet, or its slot there is full: wait on `cond`, try again
  Late,           // its batch left without it: drop it (counted in `dropped`)
  NeedsFenceWait, // it must be copied: wait for its fences (without the lock), then try again
  Flushing,       // the stream or the element is not running
  NotNegotiated,  // no caps came before it
  Refused,        // an element error: `what`, `detail`
};

struct PlaceResult {
  PlaceResult(PlaceStatus s, bool c = false, std::string w = {}, std::string d = {})
      : status(s), complete(c), what(std::move(w)), detail(std::move(d)) {}
  PlaceStatus status;
  bool complete;
  std::string what, detail;
};

/* The front batch, taken off by take_front() to go downstream. */
struct TakenBatch {
  OpenBatch batch;
  guint64 seq = 0;
  bool partial = false;
  GstCaps *caps = nullptr; // new source caps to send first (owned), or NULL
  TensorCaps tensor;
  double pad_value = 0.0;
  const Backend *family = nullptr;
};

struct BatchAssembler {
  BatchAssembler();
  ~BatchAssembler();
  BatchAssembler(const BatchAssembler &) = delete;
  BatchAssembler &operator=(const BatchAssembler &) = delete;

  std::mutex lock;
  std::condition_variable cond;

  // Settings (the element's properties).
  guint batch_size = 0;
  GstClockTime timeout = 0;
  double pad_value = 0.0; // every element of an empty slot
  bool require_zero_copy = false;
  GstTensorMemStorage storage = GST_TENSOR_MEM_STORAGE_AUTO; // for caps without a memory feature

  // Negotiation: the per-stream tensor and the layout of a batch.
  bool negotiated = false;
  GstCaps *stream_caps = nullptr; // the first stream's, without framerate
  std::string first_stream;       // the stream whose caps made stream_caps
  TensorCaps tensor;
  const Backend *family;
  GstObject *device = nullptr; // the family's shared object the batches belong to (one reference), or NULL
  gsize slot_bytes = 0;
  guint n_slots = 0;
  bool relayout = false; // streams changed under batch-size 0: a new layout at the next boundary
  bool caps_changed = false;

  std::vector<std::unique_ptr<BatchStream>> streams;
  guint next_stream_id = 0;
  std::deque<OpenBatch> open; // open[k] is batch cur_seq + k
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
  std::shared_ptr<BatchStore> store;

  bool running = false; // READY→PAUSED .. PAUSED→READY
  bool kick = false;    // the timer should check whether the front batch can leave
  // A wake the element could not send (every pad busy), and its reason:
  // the next stream that waits in place_waiting() sends it.
  bool wake_pending = false;
  BatchReason wake_reason = BatchReason::Complete;
  // The batches' segment (the first stream's), and whether it went
  // downstream in this run (or since the last flush).
  GstSegment segment;
  bool have_segment = false, segment_sent = false;
  guint32 seek_seqnum = GST_SEQNUM_INVALID; // the last seek sent upstream
  GstFlowReturn last_flow = GST_FLOW_OK;
  std::atomic<guint64> copied_bytes{0}, batches{0}, partial_batches{0}, dropped{0};
  std::vector<BatchStreamEnd> ends; // stream-end events not yet sent
  // Each stream's latest segment and tags not yet sent (stream-segment and
  // stream-tags events), sent before the next batch. Keyed by the stream's
  // name and what the event replaces: its segment, its stream-scope tags,
  // its global-scope tags; a newer event of a key takes the older's place.
  std::vector<std::pair<std::string, GstEvent *>> stream_events;
  // Whether every stream is flushing (no batch leaves until every stream has
  // flushed and stopped).
  bool flush_downstream = false;

  BatchStream *stream(guint id);
  /* Whether the front batch is past `timeout` after its first frame came
   * (wall clock). */
  bool front_is_due() const;
  /* The batch of running time `t` on the grid (the grid starts at `first`
   * where it has no base yet); may be before cur_seq. */
  guint64 seq_of_time(GstClockTime t, guint64 first);
  /* Batch `seq` (>= cur_seq, < cur_seq + kBatchDepth), opened with its
   * allocation where it was not yet; NULL when no allocation can be made. */
  OpenBatch *batch(guint64 seq);
  /* Whether batch `seq` (`b`) may leave: a frame is in it, no flush is
   * downstream, and every stream has passed it (below). */
  bool complete(const OpenBatch &b, guint64 seq) const;
  /* Whether every stream that has not ended has filled its slot of `b`
   * (batch `seq`) or gone past it: no window of the slot is out and its
   * next frame is for a later batch. */
  bool passed(const OpenBatch &b, guint64 seq) const;
  /* A flushed (or released) stream's frames leave the open batches, and its
   * next window is of the front batch again. How many left. */
  guint forget_frames_of(BatchStream &p);
  /* Where a stream-end of `p` may go: after the last open batch holding a
   * frame of it (now, where none does). */
  guint64 end_of_frames(const BatchStream &p) const;
  bool all_ended() const;
  /* The slots, one per stream (batch-size 0) or the lowest free one each. */
  void assign_slots();
  /* Forgets the open batches (windows out of them, of the old layout, are
   * copied when they come). */
  void discard_open();
  /* A new layout for batch-size 0 after streams came or went. */
  void apply_relayout();
  /* A stream came: a slot now, or at the next batch boundary where a batch
   * is filling. */
  void add_stream(guint id, std::string name);
  /* A stream for a request of `req_name` ("sink_%u", or NULL for the next
   * free number), added: its id, its name in `*name`. G_MAXUINT where the
   * number is taken, or where a fixed batch-size has no slot for one more
   * stream while running (`*refused` then says so; it is checked at start
   * otherwise, since batch-size may still change). Takes the lock. */
  guint new_stream(const char *req_name, std::string *name, std::string *refused);
  /* A stream left: its frames in the open batches are dropped (counted,
   * and how many returned) and its end goes after the batches sent. */
  guint remove_stream(guint id);
  /* Stream `id` (`pad_name`) has caps `caps`: its tensor is parsed, the
   * batches' family is the memory the caps name (or, for plain caps, the
   * storage setting's), whose device `devices` finds, and set_stream_caps()
   * takes them. Takes the lock. FALSE with the element error's `*what` and
   * `*detail` where refused; `*resource`: the device is missing (a
   * resource error, not a negotiation one). */
  bool take_stream_caps(guint id, const char *pad_name, GstCaps *caps, ElementBackend &devices, std::string *what,
                        std::string *detail, bool *resource);
  /* Stream `id`'s frames carry the tensor `tensor_caps` describes (a
   * GST_TENSOR_MEM_FRAME_TENSOR_EVENT): before GStreamer 1.28, where their
   * caps cannot say it, the stream's caps are taken now if they came
   * (take_stream_caps(), whose FALSE and outputs this returns), else when
   * they do. Where caps describe tensors (1.28) they alone count. */
  bool take_frame_tensor(guint id, const char *pad_name, GstCaps *tensor_caps, ElementBackend &devices,
                         std::string *what, std::string *detail, bool *resource);
  /* Stream `id`'s caps `caps` came, its tensor `t` (parsed by the
   * caller), to be batched in `family` (`*device`: its shared object, taken
   * where the batch's layout is made now). The first stream's make the
   * layout; the others' must carry the same tensor. Under the lock; FALSE
   * with the element error's `*what` and `*detail` where refused. */
  bool set_stream_caps(guint id, GstCaps *caps, const TensorCaps &t, const Backend *family, GstObject **device,
                       std::string *what, std::string *detail);
  /* Why the streams, with `more` still to come, do not fit a fixed
   * batch-size (empty where they do), naming the property and the count. */
  std::string too_many_streams(gsize more) const;

  void keep_stream_event(std::string key, GstEvent *event);
  /* All of them, or (after a flush, which ends segments but not tags) the
   * segments only. */
  void clear_stream_events(bool segments_only = false);

  /* Places `buffer` (the frame of stream `id`, of running time
   * `running_time`; `fences_waited`: its fences were waited for) in its
   * slot of the front batch. Under the lock; the buffer is taken where
   * Placed. */
  PlaceResult place(guint id, GstBuffer *buffer, GstClockTime running_time, bool fences_waited);
  /* place(), waiting where it says to (in the stream's own thread): on
   * `cond` until its batch is the front one, and for its fences
   * (`wait_fences`, called without the lock; a flow other than OK ends it
   * with NeedsFenceWait and that flow in `*flow`). A pending wake is sent
   * first (`wake`, without the lock). Takes the lock. Placed: the buffer
   * is taken and `*flow` is the last flow downstream; otherwise the buffer
   * stays the caller's. */
  PlaceResult place_waiting(guint id, GstBuffer *buffer, GstClockTime running_time,
                            const std::function<GstFlowReturn(GstBuffer *)> &wait_fences,
                            const std::function<void(BatchReason)> &wake, GstFlowReturn *flow);
  /* A wake the element could not send now: the next stream that waits in
   * place_waiting() sends it (the strongest reason of those pending).
   * Takes the lock. */
  void wake_later(BatchReason why);
  /* The streams flushed: the first segment after it is the batches'.
   * Takes the lock. */
  void flushed();

  /* The front batch when `why` holds for it (`src_has_caps`: whether the
   * source pad has caps yet). Under the lock. */
  bool take_front(BatchReason why, bool src_has_caps, TakenBatch *out);
  /* The running time of the front batch's first frame (GstAggregator's
   * next time for a live pipeline); NONE while it holds none. Takes the
   * lock. */
  GstClockTime front_time();
  /* The source caps of a batch of `slots` slots (under the lock). */
  GstCaps *batch_caps(guint slots) const;
  /* Stream ends whose last batch has gone (under the lock). */
  std::vector<BatchStreamEnd> take_due_ends();
  /* A stream's events (each takes the lock). Its segment and tags are
   * kept to go downstream before the next batch as stream-segment and
   * stream-tags events. */
  void stream_segment(guint id, const GstSegment *segment);
  void stream_tags(guint id, GstTagList *tags);
  /* The stream ended: its end goes after the batches holding its frames.
   * TRUE where every stream has ended. */
  bool stream_ended(guint id);
  /* A flush-start on stream `id`: its frames leave the open batches. TRUE
   * where every stream is flushing now, so the flush is the batches' too
   * (no batch leaves until every stream has flushed and stopped). */
  bool flush_started(guint id);
  /* A flush-stop on stream `id`. TRUE where the flush downstream ends now
   * (every stream has stopped flushing). */
  bool flush_stopped(guint id);

  /* The state of a new run (READY→PAUSED) and after one (PAUSED→READY). */
  void start();
  void stop();

  /* A property batch_install_properties() installed, set or read under the
   * lock; FALSE where `pspec` is none of them. */
  bool set_property(const GParamSpec *pspec, const GValue *value);
  bool get_property(const GParamSpec *pspec, GValue *value);

  /* A run's life, each taking the lock. begin(): READY→PAUSED, a new run,
   * or why the streams do not fit (an element error, no run). halt():
   * before PAUSED→READY, every wait (a pool's acquire, a chain's) ends.
   * finish(): after it, the run's one-line summary. release(): READY→NULL,
   * the device and the kept allocations go (the next run takes the device
   * shared then). */
  std::string begin();
  void halt();
  std::string finish();
  void release();
};

/* The enum of a batching element's storage property, built from the
 * backend table: auto, then each family that holds batches and maps as
 * system memory (so it can be picked for plain caps), its value the
 * family's GstTensorMemStorage and its nick the storage property's. A
 * family that holds batches behind a caps feature of its own (PBO) is
 * picked by the streams' caps instead. */
GType batch_storage_enum_type();

/* The caps of a batching element's pads: one tensor per stream in, and
 * the batch out, in the memory of every family of the backend table that
 * holds batches; where GstTensorMeta exists (GStreamer 1.26), the sink
 * also takes video frames whose tensor is beside them. */
GstCaps *batch_template_caps(GstPadDirection direction);

/* A batching element's properties that are the assembler's settings and
 * counters (batch-size, timeout, pad-value, storage, require-zero-copy,
 * copied-bytes, batches, partial-batches, dropped-frames), installed on
 * `klass` with ids from `first_id` on; BatchAssembler::set_property and
 * get_property serve them. */
void batch_install_properties(GObjectClass *klass, guint first_id);

/* The batch `b` (batch `seq`) as one buffer: its memory over the whole
 * allocation, the empty slots filled with `pad_value`, the slots' fences,
 * the batch meta (and GstTensorMeta where GStreamer has it). Takes `b`;
 * NULL with `*why` set when no memory over the allocation can be made or it
 * cannot be written or fenced. */
GstBuffer *batch_make_output(OpenBatch &b, guint64 seq, const Backend &family, const TensorCaps &tensor,
                             double pad_value, std::string *why);

/* Answers an allocation query on stream `id`'s pad with a slot pool: its
 * buffers are windows of the batch the stream's next frame belongs to. */
void batch_answer_allocation(const std::shared_ptr<BatchAssembler> &assembler, guint id, GstQuery *query);

/* A frame of `buffer` reached the element: its window stops being watched
 * (a window freed while watched tells its batch it will not come). */
void batch_window_delivered(GstBuffer *buffer);

/* Where a batching element sends what leaves, from the one thread that
 * pushes (its source task). */
class BatchOutput {
public:
  virtual ~BatchOutput() = default;
  virtual bool has_caps() = 0;
  /* The caps of the batches from here on (taken); the segment of a run's
   * batches (or of those after a flush), before its first one. */
  virtual void set_caps(GstCaps *caps) = 0;
  virtual void set_segment(const GstSegment &segment) = 0;
  virtual void push_event(GstEvent *event) = 0;
  virtual GstFlowReturn push(GstBuffer *batch) = 0;
  /* Batch `seq` cannot be made (an element error). */
  virtual void failed(guint64 seq, const std::string &why) = 0;
};

/* Sends every batch that may leave: the front one for `why`, the next ones
 * for `then`; before each, the streams' pending events, and after it the
 * stream ends it makes due. A flow other than OK from downstream is the
 * last flow (the streams' chains return it) and ends the sending. Takes the
 * lock as it needs. */
GstFlowReturn batch_send_ready(BatchAssembler &assembler, BatchReason why, BatchReason then, BatchOutput &out);

/* The thread that sends batches which waited `timeout`, and what a kick
 * asks for: `emit` sends the front batch for a reason. Runs until the
 * assembler stops running. */
void batch_timer_run(const std::shared_ptr<BatchAssembler> &assembler, const std::function<void(BatchReason)> &emit);

} // namespace gst_tensormem
