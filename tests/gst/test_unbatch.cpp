// SPDX-License-Identifier: Apache-2.0
/* tensorunbatch: streams batched by tensorbatch come back out, each on its
 * own pad, every tensor byte-exact against the stream converted alone, with
 * the stream's own timestamps, as views of the batch (no copy); a stream that
 * ends early sends nothing for the empty slots; a buffer that is no batch, or
 * tensors without the batch axis outermost, are one element error, and NULL
 * stays reachable. */
#include "batch_test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/tensormem.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#endif

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

const char *const kPatterns[] = {"smpte", "ball", "circular"};
constexpr gsize kTensorBytes = 32 * 24 * 3 * sizeof(float);

std::string source(const char *pattern, int frames) {
  return std::string("videotestsrc pattern=") + pattern + " num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! ";
}

std::string convert() {
  return "tensorconvert width=32 height=24 resize=letterbox mean=<0.5,0.4,0.3> std=<0.2,0.25,0.3>";
}

/* What one stream's sink received: its samples, to EOS. */
struct Streams {
  std::map<guint, std::vector<GstSample *>> samples;
  bool eos = false;
  std::string error;
  guint64 slots_out = 0, copied = 0;
  ~Streams() {
    for (auto &[k, list] : samples)
      for (GstSample *s : list)
        gst_sample_unref(s);
  }
};

/* Plays `frames[i]` frames of stream i through tensorbatch and
 * tensorunbatch into appsink s<i>, to EOS or an error. A queue after each
 * source pad, as after any demuxer: one thread pushes every stream, and a
 * sink blocks it while prerolling. */
void run_split(const std::vector<int> &frames, Streams *out, const std::string &convert_extra = "") {
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (std::size_t i = 0; i < frames.size(); ++i)
    d += source(kPatterns[i], frames[i]) + convert() + convert_extra + " ! batch.sink_" + std::to_string(i) + " ";
  for (std::size_t i = 0; i < frames.size(); ++i)
    d += "split.src_" + std::to_string(i) + " ! queue ! appsink name=s" + std::to_string(i) +
         " sync=false wait-on-eos=false ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d << ": " << error->message;
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  out->eos = end.eos;
  out->error = end.error;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(i)).c_str());
    for (;;) {
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "try-pull-sample", 0, &sample);
      if (!sample)
        break;
      out->samples[static_cast<guint>(i)].push_back(sample);
    }
    gst_object_unref(sink);
  }
  GstElement *split = gst_bin_get_by_name(GST_BIN(pipeline), "split");
  g_object_get(split, "slots-out", &out->slots_out, nullptr);
  gst_object_unref(split);
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  g_object_get(batch, "copied-bytes", &out->copied, nullptr);
  gst_object_unref(batch);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

/* The timestamps of one stream converted alone. */
std::vector<GstClockTime> timestamps_alone(const char *pattern, int frames) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline(source(pattern, frames) + convert() + " ! appsink name=sink", &run);
  std::vector<GstClockTime> out;
  for (GstSample *s : run.samples)
    out.push_back(GST_BUFFER_PTS(gst_sample_get_buffer(s)));
  return out;
}

std::vector<std::uint8_t> bytes_of(GstSample *sample) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  std::vector<std::uint8_t> bytes(gst_buffer_get_size(buffer));
  gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
  return bytes;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* Video frames, each with its tensor beside it (tensorconvert output=meta,
 * whose 1.28 caps describe the tensor, and before 1.28 its frame-tensor
 * event), are batched with every tensor
 * written in place into its slot, and each stream gets its own frames back:
 * the same picture, its timestamps, its caps, and in its GstTensorMeta its
 * slot of the batch (here no model ran: the slot holds its own tensor). */
TEST(TensorUnbatch, FramesComeBackWithTheirSlotInTheirTensorMeta) {
  constexpr int kFrames = 5;
  Streams s;
  run_split({kFrames, kFrames, kFrames}, &s, " output=meta");
  ASSERT_TRUE(s.eos) << s.error;
  EXPECT_EQ(s.slots_out, 3u * kFrames);
  EXPECT_EQ(s.copied, 0u) << "a slot was copied: tensorconvert output=meta did not write into the slot pool";
  for (guint i = 0; i < 3; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const auto tensors = batchtest::tensors_of(source(kPatterns[i], kFrames) + convert() + " ! appsink name=sink");
    const auto frames = batchtest::tensors_of(source(kPatterns[i], kFrames) + "appsink name=sink");
    const auto pts = timestamps_alone(kPatterns[i], kFrames);
    ASSERT_EQ(s.samples[i].size(), static_cast<std::size_t>(kFrames));
    ASSERT_EQ(tensors.size(), static_cast<std::size_t>(kFrames));
    ASSERT_EQ(frames.size(), static_cast<std::size_t>(kFrames));
    for (int f = 0; f < kFrames; ++f) {
      SCOPED_TRACE("frame " + std::to_string(f));
      GstSample *sample = s.samples[i][f];
      const GstStructure *caps = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
      EXPECT_TRUE(gst_structure_has_name(caps, "video/x-raw"));
      EXPECT_FALSE(gst_structure_has_field(caps, "tensors")) << "the caps still describe the input tensor";
      EXPECT_EQ(bytes_of(sample), frames[f]);
      GstBuffer *buffer = gst_sample_get_buffer(sample);
      EXPECT_EQ(GST_BUFFER_PTS(buffer), pts[f]);
      EXPECT_EQ(gst_buffer_get_tensor_mem_batch_meta(buffer), nullptr);
      GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
      ASSERT_NE(meta, nullptr);
      ASSERT_EQ(meta->num_tensors, 1u);
      const GstTensor *t = meta->tensors[0];
      ASSERT_EQ(t->num_dims, 4u);
      EXPECT_EQ(t->dims[0], 1u);
      EXPECT_EQ(t->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
      std::vector<std::uint8_t> bytes(gst_buffer_get_size(t->data));
      gst_buffer_extract(t->data, 0, bytes.data(), bytes.size());
      EXPECT_EQ(bytes, tensors[f]);
      // A view of the batch: a share of its memory, not a copy.
      ASSERT_EQ(gst_buffer_n_memory(t->data), 1u);
      EXPECT_NE(gst_buffer_peek_memory(t->data, 0)->parent, nullptr);
    }
  }
}
#endif

TEST(TensorUnbatch, EachStreamGetsItsOwnTensorsBackWithItsTimestamps) {
  constexpr int kFrames = 5;
  Streams s;
  run_split({kFrames, kFrames, kFrames}, &s);
  ASSERT_TRUE(s.eos) << s.error;
  EXPECT_EQ(s.slots_out, 3u * kFrames);
  for (guint i = 0; i < 3; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const auto ref = batchtest::tensors_of(source(kPatterns[i], kFrames) + convert() + " ! appsink name=sink");
    const auto pts = timestamps_alone(kPatterns[i], kFrames);
    ASSERT_EQ(s.samples[i].size(), static_cast<std::size_t>(kFrames));
    ASSERT_EQ(ref.size(), static_cast<std::size_t>(kFrames));
    for (int f = 0; f < kFrames; ++f) {
      GstSample *sample = s.samples[i][f];
      EXPECT_EQ(bytes_of(sample), ref[f]) << "frame " << f;
      GstBuffer *buffer = gst_sample_get_buffer(sample);
      EXPECT_EQ(gst_buffer_get_size(buffer), kTensorBytes);
      EXPECT_EQ(GST_BUFFER_PTS(buffer), pts[f]) << "frame " << f;
      // A view of the batch: a share of its memory, not a copy.
      ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
      EXPECT_NE(gst_buffer_peek_memory(buffer, 0)->parent, nullptr);
      EXPECT_EQ(gst_buffer_get_tensor_mem_batch_meta(buffer), nullptr);
      const GstStructure *caps = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
      EXPECT_STREQ(gst_structure_get_string(caps, "dimensions"), "32:24:3:1");
      EXPECT_STREQ(gst_structure_get_string(caps, "types"), "float32");
    }
  }
}

TEST(TensorUnbatch, AStreamThatEndsEarlySendsNothingForItsEmptySlots) {
  Streams s;
  run_split({6, 2}, &s);
  ASSERT_TRUE(s.eos) << s.error;
  EXPECT_EQ(s.samples[0].size(), 6u);
  EXPECT_EQ(s.samples[1].size(), 2u);
  EXPECT_EQ(s.slots_out, 8u);
  const auto ref = batchtest::tensors_of(source(kPatterns[0], 6) + convert() + " ! appsink name=sink");
  for (std::size_t f = 0; f < s.samples[0].size(); ++f)
    EXPECT_EQ(bytes_of(s.samples[0][f]), ref[f]) << "frame " << f;
}

/* Waits until `done` holds, for at most tmtest::kTimeout. */
bool eventually(const std::function<bool()> &done) {
  const gint64 give_up = g_get_monotonic_time() + tmtest::kTimeout / 1000;
  while (!done()) {
    if (g_get_monotonic_time() > give_up)
      return false;
    g_usleep(10 * 1000);
  }
  return true;
}

/* Whether an appsink has had EOS, dropping what it holds before (appsink
 * says EOS only once its queue is empty). */
bool sink_eos(GstElement *sink) {
  GstSample *held = nullptr;
  while (g_signal_emit_by_name(sink, "try-pull-sample", 0, &held), held)
    gst_sample_unref(held);
  gboolean eos = FALSE;
  g_object_get(sink, "eos", &eos, nullptr);
  return eos;
}

/* The next sample of an appsink, within the timeout (NULL at EOS). */
GstSample *next_sample(GstElement *sink) {
  GstSample *sample = nullptr;
  g_signal_emit_by_name(sink, "try-pull-sample", tmtest::kTimeout, &sample);
  return sample;
}

/* A stream that ends while the others go on gets its own EOS, after its
 * last frame, on its own pad: its sink does not wait for every stream. */
TEST(TensorUnbatch, AStreamThatEndsGetsItsEosWhileTheOthersGoOn) {
  GError *error = nullptr;
  const std::string d = "tensorbatch name=batch ! tensorunbatch name=split " + source(kPatterns[0], 3) + convert() +
                        " ! batch.sink_0 " + source(kPatterns[1], -1) + convert() +
                        " ! batch.sink_1 split.src_0 ! queue ! appsink name=s0 sync=false "
                        "split.src_1 ! queue ! appsink name=s1 sync=false max-buffers=2 drop=true";
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  GstElement *s0 = gst_bin_get_by_name(GST_BIN(pipeline), "s0");
  GstElement *s1 = gst_bin_get_by_name(GST_BIN(pipeline), "s1");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const auto ref = batchtest::tensors_of(source(kPatterns[0], 3) + convert() + " ! appsink name=sink");
  for (std::size_t f = 0; f < 3; ++f) {
    GstSample *sample = next_sample(s0);
    ASSERT_NE(sample, nullptr) << "frame " << f;
    EXPECT_EQ(bytes_of(sample), ref[f]) << "frame " << f;
    gst_sample_unref(sample);
  }
  EXPECT_TRUE(eventually([&] { return sink_eos(s0); })) << "stream 0 ended without its EOS";
  EXPECT_EQ(next_sample(s0), nullptr);
  // The other stream goes on.
  for (int i = 0; i < 5; ++i) {
    GstSample *sample = next_sample(s1);
    ASSERT_NE(sample, nullptr);
    gst_sample_unref(sample);
  }
  EXPECT_FALSE(sink_eos(s1));
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(s0);
  gst_object_unref(s1);
  tmtest::release_pipeline(pipeline);
}

/* One stream of the pipeline below: source, convert, linked to a requested
 * sink pad of tensorbatch. */
struct Stream {
  GstElement *bin = nullptr;
  GstPad *pad = nullptr; // tensorbatch's
};

Stream add_stream(GstElement *pipeline, GstElement *batch, const char *pattern) {
  Stream st;
  GError *error = nullptr;
  st.bin = gst_parse_bin_from_description((source(pattern, -1) + convert()).c_str(), TRUE, &error);
  EXPECT_EQ(error, nullptr);
  gst_bin_add(GST_BIN(pipeline), st.bin);
  st.pad = gst_element_request_pad_simple(batch, "sink_%u");
  GstPad *out = gst_element_get_static_pad(st.bin, "src");
  EXPECT_EQ(gst_pad_link(out, st.pad), GST_PAD_LINK_OK);
  gst_object_unref(out);
  gst_element_sync_state_with_parent(st.bin);
  return st;
}

void remove_stream(GstElement *pipeline, GstElement *batch, Stream *st) {
  gst_element_set_state(st->bin, GST_STATE_NULL);
  GstPad *out = gst_element_get_static_pad(st->bin, "src");
  gst_pad_unlink(out, st->pad);
  gst_object_unref(out);
  gst_element_release_request_pad(batch, st->pad);
  gst_object_unref(st->pad);
  gst_bin_remove(GST_BIN(pipeline), st->bin);
  *st = Stream();
}

void link_to_branch(GstElement *split, GstPad *pad, gpointer pipeline) {
  gchar *name = gst_pad_get_name(pad);
  const std::string queue = std::string("q") + (name + 4); // src_K → qK
  g_free(name);
  GstElement *q = gst_bin_get_by_name(GST_BIN(pipeline), queue.c_str());
  if (!q)
    return;
  GstPad *in = gst_element_get_static_pad(q, "sink");
  if (!gst_pad_is_linked(in))
    gst_pad_link(pad, in);
  gst_object_unref(in);
  gst_object_unref(q);
  (void)split;
}

/* Streams joining and leaving a playing pipeline: a new stream gets a new
 * source pad with its frames; a stream whose sink pad is released ends on
 * its pad (EOS), and that pad goes; the others go on throughout. */
TEST(TensorUnbatch, AStreamAddedAndOneReleasedWhilePlaying) {
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (int k = 0; k < 3; ++k)
    d += "queue name=q" + std::to_string(k) + " ! appsink name=s" + std::to_string(k) +
         " sync=false async=false max-buffers=2 drop=true ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  GstElement *split = gst_bin_get_by_name(GST_BIN(pipeline), "split");
  g_signal_connect(split, "pad-added", G_CALLBACK(link_to_branch), pipeline);
  GstElement *sinks[3];
  for (int k = 0; k < 3; ++k)
    sinks[k] = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
  Stream streams[3];
  streams[0] = add_stream(pipeline, batch, kPatterns[0]);
  streams[1] = add_stream(pipeline, batch, kPatterns[1]);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const auto circular = batchtest::tensors_of(source(kPatterns[2], 1) + convert() + " ! appsink name=sink");
  for (int k = 0; k < 2; ++k) {
    GstSample *sample = next_sample(sinks[k]);
    ASSERT_NE(sample, nullptr) << "stream " << k;
    gst_sample_unref(sample);
  }
  // A third stream joins: its frames (a still pattern) come out on src_2.
  streams[2] = add_stream(pipeline, batch, kPatterns[2]);
  GstSample *third = next_sample(sinks[2]);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(bytes_of(third), circular[0]);
  gst_sample_unref(third);
  // The second leaves: its pad ends and goes, the others go on.
  remove_stream(pipeline, batch, &streams[1]);
  EXPECT_TRUE(eventually([&] { return sink_eos(sinks[1]); })) << "the stream that left got no EOS";
  EXPECT_TRUE(eventually([&] {
    GstPad *gone = gst_element_get_static_pad(split, "src_1");
    if (gone)
      gst_object_unref(gone);
    return gone == nullptr;
  })) << "src_1 outlived its stream";
  for (int k : {0, 2}) {
    for (int i = 0; i < 3; ++i) {
      GstSample *sample = next_sample(sinks[k]);
      ASSERT_NE(sample, nullptr) << "stream " << k << " after stream 1 left";
      gst_sample_unref(sample);
    }
  }
  guint64 dropped = 0;
  g_object_get(batch, "dropped-frames", &dropped, nullptr);
  guint64 late = 0; // frames of the streams that stay, dropped as late (none here: no timeout)
  for (Stream &st : streams)
    if (st.pad) {
      guint64 on_pad = 0;
      g_object_get(st.pad, "dropped", &on_pad, nullptr);
      late += on_pad;
    }
  EXPECT_EQ(late, 0u);
  EXPECT_LE(dropped, 2u); // at most its frames in the two batches being made
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  for (GstElement *sink : sinks)
    gst_object_unref(sink);
  for (Stream &st : streams)
    if (st.pad)
      gst_object_unref(st.pad); // the pipeline releases it
  gst_object_unref(split);
  gst_object_unref(batch);
  tmtest::release_pipeline(pipeline);
}

/* A flushing seek of the whole pipeline through the split: each stream's
 * pad then gives that stream's frames from the seek position on, in order,
 * and its EOS. */
TEST(TensorUnbatch, AFlushingSeekStartsEveryStreamAgain) {
  // The seek ends at 19.5 frames: after it each stream has exactly its
  // first 20 frames (pts 0 to 19/30 s), however many it made before it
  // came (the sources' own num-buffers count those too, so they stop no
  // sooner than the seek's end).
  constexpr std::size_t kAfter = 20;
  const char *const balls[] = {"ball foreground-color=0xff00ff00", "ball foreground-color=0xffff00ff"};
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (int k = 0; k < 2; ++k)
    d += source(balls[k], 1000) + convert() + " ! batch.sink_" + std::to_string(k) + " split.src_" + std::to_string(k) +
         " ! queue ! appsink name=s" + std::to_string(k) + " sync=false ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, tmtest::kTimeout), GST_STATE_CHANGE_SUCCESS);
  const gint64 stop = static_cast<gint64>(GST_SECOND * (2 * kAfter - 1) / 60); // 19.5 frames at 30 fps
  ASSERT_TRUE(gst_element_seek(pipeline, 1.0, GST_FORMAT_TIME,
                               static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE),
                               GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_SET, stop));
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(std::string("stream ") + std::to_string(k));
    const auto ref =
        batchtest::tensors_of(source(balls[k], static_cast<int>(kAfter)) + convert() + " ! appsink name=sink");
    ASSERT_EQ(ref.size(), kAfter);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
    std::size_t f = 0;
    while (GstSample *sample = next_sample(sink)) {
      ASSERT_LT(f, ref.size());
      EXPECT_EQ(bytes_of(sample), ref[f]) << "frame " << f << " after the seek";
      gst_sample_unref(sample);
      ++f;
    }
    EXPECT_EQ(f, kAfter);
    EXPECT_TRUE(sink_eos(sink));
    gst_object_unref(sink);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

/* Stream 1's segment moved 7 s on (base), as a stream joined later or
 * seeked alone would have it. */
GstPadProbeReturn move_segment(GstPad *, GstPadProbeInfo *info, gpointer) {
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
  if (GST_EVENT_TYPE(event) != GST_EVENT_SEGMENT)
    return GST_PAD_PROBE_OK;
  const GstSegment *segment = nullptr;
  gst_event_parse_segment(event, &segment);
  GstSegment moved;
  gst_segment_copy_into(segment, &moved);
  moved.base = 7 * GST_SECOND;
  GstEvent *replaced = gst_event_new_segment(&moved);
  gst_event_set_seqnum(replaced, gst_event_get_seqnum(event));
  gst_event_unref(event);
  GST_PAD_PROBE_INFO_DATA(info) = replaced;
  return GST_PAD_PROBE_OK;
}

/* Each stream's frames come out with that stream's own segment (the batch
 * carries only the first stream's), so their running times stay each
 * stream's own. */
TEST(TensorUnbatch, EachStreamKeepsItsOwnSegment) {
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (int k = 0; k < 2; ++k)
    d += source(kPatterns[k], 3) + convert() + " name=c" + std::to_string(k) + " ! batch.sink_" + std::to_string(k) +
         " split.src_" + std::to_string(k) + " ! queue ! appsink name=s" + std::to_string(k) + " sync=false ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  GstElement *c1 = gst_bin_get_by_name(GST_BIN(pipeline), "c1");
  GstPad *out = gst_element_get_static_pad(c1, "src");
  gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, move_segment, nullptr, nullptr);
  gst_object_unref(out);
  gst_object_unref(c1);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  for (int k = 0; k < 2; ++k) {
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
    int frames = 0;
    while (GstSample *sample = next_sample(sink)) {
      const GstSegment *segment = gst_sample_get_segment(sample);
      ASSERT_NE(segment, nullptr);
      EXPECT_EQ(segment->base, k ? 7 * GST_SECOND : 0) << "stream " << k << ", frame " << frames;
      const GstClockTime pts = GST_BUFFER_PTS(gst_sample_get_buffer(sample));
      EXPECT_EQ(gst_segment_to_running_time(segment, GST_FORMAT_TIME, pts), pts + (k ? 7 * GST_SECOND : 0));
      gst_sample_unref(sample);
      ++frames;
    }
    EXPECT_EQ(frames, 3) << "stream " << k;
    gst_object_unref(sink);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

/* A tag event pushed on a pad before its `at`-th buffer. */
struct TagAt {
  int at;
  GstTagList *tags; // owned until pushed
  int seen = 0;
};

GstPadProbeReturn push_tags_at(GstPad *pad, GstPadProbeInfo *, gpointer data) {
  auto *t = static_cast<TagAt *>(data);
  if (t->seen++ != t->at)
    return GST_PAD_PROBE_OK;
  gst_pad_push_event(pad, gst_event_new_tag(t->tags));
  t->tags = nullptr;
  return GST_PAD_PROBE_REMOVE;
}

/* Every tag event reaching a pad, as "scope:tag=value" strings. */
struct SeenTags {
  std::mutex mu;
  std::vector<std::string> tags;
};

GstPadProbeReturn note_tags(GstPad *, GstPadProbeInfo *info, gpointer data) {
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
  if (GST_EVENT_TYPE(event) != GST_EVENT_TAG)
    return GST_PAD_PROBE_OK;
  GstTagList *list = nullptr;
  gst_event_parse_tag(event, &list);
  auto *seen = static_cast<SeenTags *>(data);
  const char *scope = gst_tag_list_get_scope(list) == GST_TAG_SCOPE_GLOBAL ? "global" : "stream";
  std::lock_guard<std::mutex> lock(seen->mu);
  for (const char *tag : {GST_TAG_TITLE, GST_TAG_ARTIST}) {
    gchar *value = nullptr;
    if (gst_tag_list_get_string(list, tag, &value))
      seen->tags.push_back(std::string(scope) + ":" + tag + "=" + value);
    g_free(value);
  }
  return GST_PAD_PROBE_OK;
}

/* Each stream's tags reach its own pad after the split, with their scope,
 * and never the batch or another stream: stream 0's before any pad of the
 * split exists (kept for the pad made later), stream 1's once its pad is
 * there. */
TEST(TensorUnbatch, EachStreamKeepsItsOwnTags) {
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (int k = 0; k < 2; ++k)
    d += source(kPatterns[k], 4) + convert() + " name=c" + std::to_string(k) + " ! batch.sink_" + std::to_string(k) +
         " split.src_" + std::to_string(k) + " ! queue ! appsink name=s" + std::to_string(k) +
         " sync=false wait-on-eos=false ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  TagAt injected[2] = {{0, gst_tag_list_new(GST_TAG_TITLE, "camera 0", nullptr)},
                       {2, gst_tag_list_new(GST_TAG_ARTIST, "site B", nullptr)}};
  gst_tag_list_set_scope(injected[1].tags, GST_TAG_SCOPE_GLOBAL);
  SeenTags seen[2], on_batch;
  for (int k = 0; k < 2; ++k) {
    GstElement *c = gst_bin_get_by_name(GST_BIN(pipeline), ("c" + std::to_string(k)).c_str());
    GstPad *out = gst_element_get_static_pad(c, "src");
    gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BUFFER, push_tags_at, &injected[k], nullptr);
    gst_object_unref(out);
    gst_object_unref(c);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
    GstPad *in = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(in, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, note_tags, &seen[k], nullptr);
    gst_object_unref(in);
    gst_object_unref(sink);
  }
  GstElement *split = gst_bin_get_by_name(GST_BIN(pipeline), "split");
  GstPad *split_in = gst_element_get_static_pad(split, "sink");
  gst_pad_add_probe(split_in, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, note_tags, &on_batch, nullptr);
  gst_object_unref(split_in);
  gst_object_unref(split);

  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  ASSERT_TRUE(end.eos) << end.error;
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
  for (TagAt &t : injected) {
    EXPECT_EQ(t.tags, nullptr) << "a tag event was never pushed";
    if (t.tags)
      gst_tag_list_unref(t.tags);
  }
  EXPECT_EQ(seen[0].tags, std::vector<std::string>{"stream:" GST_TAG_TITLE "=camera 0"});
  EXPECT_EQ(seen[1].tags, std::vector<std::string>{"global:" GST_TAG_ARTIST "=site B"});
  EXPECT_TRUE(on_batch.tags.empty()) << "a stream's tags reached the batch: " << on_batch.tags.front();
}

/* Streams at different frame rates: batches follow the faster stream's
 * times, and each holds of each stream the frame of its time; the slower
 * stream's slot is empty (flagged) in the batches between its frames.
 * After the split each stream has every one of its frames, once, in order. */
TEST(TensorUnbatch, StreamsAtDifferentRatesPairFramesOfTheSameTime) {
  auto at_rate = [](const char *pattern, int frames, int fps) {
    return std::string("videotestsrc pattern=") + pattern + " num-buffers=" + std::to_string(frames) +
           " ! video/x-raw,format=RGBA,width=64,height=48,framerate=" + std::to_string(fps) + "/1 ! ";
  };
  const std::string streams[2] = {at_rate(kPatterns[0], 10, 30), at_rate(kPatterns[1], 5, 15)};
  std::string d = "tensorbatch name=batch ! tee name=t ! queue ! tensorunbatch name=split "
                  "t. ! queue ! appsink name=batches sync=false wait-on-eos=false ";
  for (int k = 0; k < 2; ++k)
    d += streams[k] + convert() + " ! batch.sink_" + std::to_string(k) + " split.src_" + std::to_string(k) +
         " ! queue ! appsink name=s" + std::to_string(k) + " sync=false wait-on-eos=false ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  ASSERT_TRUE(end.eos) << end.error;
  // Every batch: both slots filled only with frames of the same time.
  GstElement *batches = gst_bin_get_by_name(GST_BIN(pipeline), "batches");
  int n_batches = 0, both = 0;
  while (GstSample *sample = next_sample(batches)) {
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    const GstTensorMemBatchSlot *a = gst_tensor_mem_batch_meta_get_slot(meta, 0);
    const GstTensorMemBatchSlot *b = gst_tensor_mem_batch_meta_get_slot(meta, 1);
    if (a->filled && b->filled) {
      EXPECT_EQ(a->pts, b->pts) << "batch " << n_batches;
      ++both;
    }
    ++n_batches;
    gst_sample_unref(sample);
  }
  gst_object_unref(batches);
  EXPECT_EQ(n_batches, 10); // one per frame time of the faster stream
  EXPECT_EQ(both, 5);
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("stream " + std::to_string(k));
    const auto ref = batchtest::tensors_of(streams[k] + convert() + " ! appsink name=sink");
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
    std::size_t f = 0;
    while (GstSample *sample = next_sample(sink)) {
      ASSERT_LT(f, ref.size());
      EXPECT_EQ(bytes_of(sample), ref[f]) << "frame " << f;
      gst_sample_unref(sample);
      ++f;
    }
    EXPECT_EQ(f, ref.size());
    gst_object_unref(sink);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorUnbatch, BatchesThatEndBeforeAnyFrameAreAnElementError) {
  Streams s;
  run_split({0, 0}, &s);
  EXPECT_FALSE(s.eos);
  EXPECT_NE(s.error.find("ended before any stream's frame"), std::string::npos) << s.error;
}

/* One buffer of `caps` (and `slots` batch slots when not 0) pushed into
 * tensorunbatch; the element error it ends in. The pipeline reaches NULL. */
std::string error_of(const char *caps, gsize bytes, guint slots) {
  GError *error = nullptr;
  GstElement *pipeline =
      gst_parse_launch("appsrc name=src format=time ! tensorunbatch name=split split.src_0 ! fakesink", &error);
  EXPECT_EQ(error, nullptr);
  if (!pipeline)
    return "";
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstCaps *c = gst_caps_from_string(caps);
  g_object_set(src, "caps", c, nullptr);
  gst_caps_unref(c);
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  gst_buffer_memset(buffer, 0, 0, bytes);
  if (slots) {
    GstTensorMemBatchMeta *meta = gst_buffer_add_tensor_mem_batch_meta(buffer, slots);
    for (guint i = 0; i < slots; ++i) {
      GstTensorMemBatchSlot *slot = gst_tensor_mem_batch_meta_get_slot(meta, i);
      slot->filled = TRUE;
      slot->stream = g_intern_string(("sink_" + std::to_string(i)).c_str());
    }
    meta->n_filled = slots;
  }
  gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(src);
  tmtest::release_pipeline(pipeline);
  return end.error;
}

TEST(TensorUnbatch, ABufferThatIsNoBatchIsAnElementError) {
  const std::string error = error_of(
      "other/tensors,format=(string)static,num_tensors=(int)1,types=(string)uint8,dimensions=(string)4:2", 8, 0);
  EXPECT_NE(error.find("no GstTensorMemBatchMeta"), std::string::npos) << error;
}

TEST(TensorUnbatch, ATensorWithoutTheBatchAxisOutermostIsAnElementError) {
  // Two outputs; the second has 2 rows where the batch has 3 slots.
  const std::string error = error_of("other/tensors,format=(string)static,num_tensors=(int)2,"
                                     "types=(string)\"uint8,float32\",dimensions=(string)\"4:3,5:2\"",
                                     12 + 40, 3);
  EXPECT_NE(error.find("Tensor 1's first dimension is 2, not the batch's 3 slots"), std::string::npos) << error;
}

TEST(TensorUnbatch, TensorsItCannotReadAreANegotiationError) {
  const std::string error = error_of(
      "other/tensors,format=(string)static,num_tensors=(int)2,types=(string)uint8,dimensions=(string)4:3", 12, 3);
  EXPECT_NE(error.find("Cannot split these tensors"), std::string::npos) << error;
}

} // namespace
