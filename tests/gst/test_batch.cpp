// SPDX-License-Identifier: Apache-2.0
/* tensorbatch: four streams of different content, each converted by its own
 * tensorconvert straight into its slot, against the same streams converted
 * alone (byte-exact, system memory and DMA-BUF, no copy); the copy path and
 * require-zero-copy; streams that end early or stall (timeout, partial
 * batches flagged, EOS after the last); pads added and released while
 * playing; NULL while a stream waits for its batch; the settings, caps and
 * pads it refuses. */
#include "batch_test_util.hpp"

#include <gst/allocators/allocators.h>
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/tensormem.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#endif

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace {

using batchtest::BatchRun;
using batchtest::dims_of;
using batchtest::run;

constexpr int kFrames = 5;
constexpr gsize kTensorBytes = 32 * 24 * 3 * sizeof(float);
const char *const kPatterns[] = {"smpte", "ball", "circular", "pinwheel"};
const char *const kTensorCaps =
    "other/tensors,format=(string)static,num_tensors=(int)1,types=(string)float32,dimensions=(string)32:24:3:1";

std::string convert(const std::string &extra = "") {
  return "tensorconvert width=32 height=24 resize=letterbox mean=<0.5,0.4,0.3> std=<0.2,0.25,0.3> " + extra;
}

std::string source(const char *pattern, int frames) {
  return std::string("videotestsrc pattern=") + pattern + " num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! ";
}

/* The tensors of one stream converted alone. */
std::vector<std::vector<std::uint8_t>> alone(const char *pattern, int frames, const std::string &extra = "") {
  return batchtest::tensors_of(source(pattern, frames) + convert(extra) + " ! appsink name=sink");
}

/* Slot `slot` of the batch in `sample`. */
std::vector<std::uint8_t> slot_bytes(GstSample *sample, guint slot) {
  std::vector<std::uint8_t> bytes(kTensorBytes);
  gst_buffer_extract(gst_sample_get_buffer(sample), slot * kTensorBytes, bytes.data(), bytes.size());
  return bytes;
}

bool all_zero(const std::vector<std::uint8_t> &bytes) {
  for (std::uint8_t b : bytes)
    if (b)
      return false;
  return true;
}

std::string four_streams(const std::string &extra, const std::string &batch_props = "", int frames = kFrames) {
  std::string d = "tensorbatch name=batch " + batch_props + " ! appsink name=sink sync=false ";
  for (int i = 0; i < 4; ++i)
    d += source(kPatterns[i], frames) + convert(extra) + " ! batch.sink_" + std::to_string(i) + " ";
  return d;
}

/* Every slot of every batch equals its stream converted alone, in order. */
void expect_slots_equal_alone(const BatchRun &r, const std::string &extra) {
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames)) << r.error;
  for (guint i = 0; i < 4; ++i) {
    const auto ref = alone(kPatterns[i], kFrames, extra);
    ASSERT_EQ(ref.size(), static_cast<std::size_t>(kFrames));
    for (int f = 0; f < kFrames; ++f)
      EXPECT_EQ(slot_bytes(r.samples[f], i), ref[f]) << "stream " << i << " frame " << f;
  }
  for (GstSample *sample : r.samples) {
    EXPECT_EQ(dims_of(sample), "32:24:3:4");
    EXPECT_EQ(gst_buffer_get_size(gst_sample_get_buffer(sample)), 4 * kTensorBytes);
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_slots, 4u);
    EXPECT_EQ(meta->n_filled, 4u);
    for (guint i = 0; i < 4; ++i) {
      const GstTensorMemBatchSlot *slot = gst_tensor_mem_batch_meta_get_slot(meta, i);
      EXPECT_TRUE(slot->filled);
      EXPECT_FALSE(slot->copied);
      EXPECT_STREQ(slot->stream, ("sink_" + std::to_string(i)).c_str());
      // 64x48 letterboxed into 32x24: half scale, no bars.
      EXPECT_TRUE(slot->has_resize);
      EXPECT_EQ(slot->in_width, 64u);
      EXPECT_DOUBLE_EQ(slot->scale_x, 0.5);
      EXPECT_TRUE(GST_CLOCK_TIME_IS_VALID(slot->pts));
    }
    EXPECT_EQ(gst_tensor_mem_batch_meta_get_slot(meta, 4), nullptr);
  }
}

TEST(TensorBatch, FourStreamsWriteTheirSlotsInPlaceSystemMemory) {
  BatchRun r;
  run(four_streams(""), &r);
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(r.copied, 0u);
  EXPECT_EQ(r.batches, static_cast<guint64>(kFrames));
  EXPECT_EQ(r.partial, 0u);
  expect_slots_equal_alone(r, "");
  // One allocation per batch: the whole batch is one memory.
  for (GstSample *sample : r.samples)
    EXPECT_EQ(gst_buffer_n_memory(gst_sample_get_buffer(sample)), 1u);
}

TEST(TensorBatch, FourStreamsWriteTheirSlotsInPlaceDmaBuf) {
  BatchRun r;
  run(four_streams("require-zero-copy=true", "storage=dmabuf require-zero-copy=true"), &r);
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(r.copied, 0u);
  expect_slots_equal_alone(r, "");
  for (GstSample *sample : r.samples)
    EXPECT_TRUE(gst_is_dmabuf_memory(gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0)));
}

/* A reader that outlives a DMA-BUF batch (gst_buffer_begin_tensor_mem_read:
 * a CUDA kernel queued on the imported batch, say) keeps its allocation
 * from reuse until it is done; the others go round as usual. The batch's
 * memory names its allocation by the fd it borrows. */
TEST(TensorBatch, ADmaBufBatchBeingReadIsNotReusedUntilTheReaderIsDone) {
  constexpr int kMany = 12;
  std::string d = "tensorbatch name=batch storage=dmabuf ! appsink name=sink sync=false max-buffers=1 ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kMany) + convert() + " ! batch.sink_" + std::to_string(i) + " ";
  const std::vector<guint64> fds = batchtest::allocations_while_first_is_read(d, [](GstMemory *mem) -> guint64 {
    EXPECT_TRUE(gst_is_dmabuf_memory(mem));
    return gst_is_dmabuf_memory(mem) ? static_cast<guint64>(gst_dmabuf_memory_get_fd(mem)) : 0;
  });
  batchtest::expect_first_kept_others_reused(fds, kMany);
}

TEST(TensorBatch, RequireZeroCopyHoldsOnTheBatch) {
  BatchRun r;
  std::string d = "tensorbatch name=batch require-zero-copy=true ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kFrames) + convert("require-zero-copy=true") + " ! batch.sink_" + std::to_string(i) + " ";
  run(d, &r);
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(r.copied, 0u);
  EXPECT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames));
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
TEST(TensorBatch, CarriesGstTensorMetaWithTheBatchDims) {
  BatchRun r;
  run(four_streams(""), &r);
  ASSERT_FALSE(r.samples.empty()) << r.error;
  GstBuffer *buffer = gst_sample_get_buffer(r.samples[0]);
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  ASSERT_NE(meta, nullptr);
  ASSERT_EQ(meta->num_tensors, 1u);
  const GstTensor *tensor = meta->tensors[0];
  EXPECT_EQ(tensor->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
  ASSERT_EQ(tensor->num_dims, 4u);
  EXPECT_EQ(tensor->dims[0], 4u);
  EXPECT_EQ(tensor->dims[1], 3u);
  EXPECT_EQ(tensor->dims[2], 24u);
  EXPECT_EQ(tensor->dims[3], 32u);
  EXPECT_EQ(gst_buffer_peek_memory(tensor->data, 0), gst_buffer_peek_memory(buffer, 0));
}
#endif

/* appsrc's own buffers are no window of the batch: copied, counted. */
std::string with_appsrc_stream(const std::string &batch_props) {
  return "tensorbatch name=batch " + batch_props + " ! appsink name=sink sync=false " + source(kPatterns[0], kFrames) +
         convert() + " ! batch.sink_0 appsrc name=foreign format=time caps=\"" + kTensorCaps + "\" ! batch.sink_1 ";
}

void feed(GstElement *pipeline, int frames, bool eos) {
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "foreign");
  for (int f = 0; f < frames; ++f) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kTensorBytes, nullptr);
    gst_buffer_memset(buffer, 0, static_cast<guint8>(0x40 + f), kTensorBytes);
    GST_BUFFER_PTS(buffer) = f * GST_SECOND / 30;
    GstFlowReturn ret = GST_FLOW_OK;
    g_signal_emit_by_name(src, "push-buffer", buffer, &ret);
    gst_buffer_unref(buffer);
  }
  if (eos) {
    GstFlowReturn ret = GST_FLOW_OK;
    g_signal_emit_by_name(src, "end-of-stream", &ret);
  }
  gst_object_unref(src);
}

/* `frames` RGBA frames of 64x48 from appsrc "foreign", then its end. */
[[maybe_unused]] void feed_frames(GstElement *pipeline, int frames) {
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "foreign");
  for (int f = 0; f < frames; ++f) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, 64 * 48 * 4, nullptr);
    gst_buffer_memset(buffer, 0, 0x80, 64 * 48 * 4);
    GST_BUFFER_PTS(buffer) = f * GST_SECOND / 30;
    GstFlowReturn ret = GST_FLOW_OK;
    g_signal_emit_by_name(src, "push-buffer", buffer, &ret);
    gst_buffer_unref(buffer);
  }
  GstFlowReturn ret = GST_FLOW_OK;
  g_signal_emit_by_name(src, "end-of-stream", &ret);
  gst_object_unref(src);
}

TEST(TensorBatch, AForeignBufferIsCopiedAndCounted) {
  BatchRun r;
  run(with_appsrc_stream(""), &r, [](GstElement *p) { feed(p, kFrames, true); });
  EXPECT_TRUE(r.eos) << r.error;
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(r.copied, kFrames * kTensorBytes);
  const auto ref = alone(kPatterns[0], kFrames);
  for (int f = 0; f < kFrames; ++f) {
    EXPECT_EQ(slot_bytes(r.samples[f], 0), ref[f]);
    EXPECT_EQ(slot_bytes(r.samples[f], 1),
              std::vector<std::uint8_t>(kTensorBytes, static_cast<std::uint8_t>(0x40 + f)));
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(r.samples[f]));
    EXPECT_FALSE(gst_tensor_mem_batch_meta_get_slot(meta, 0)->copied);
    EXPECT_TRUE(gst_tensor_mem_batch_meta_get_slot(meta, 1)->copied);
  }
}

TEST(TensorBatch, RequireZeroCopyRefusesAForeignBufferByName) {
  BatchRun r;
  run(with_appsrc_stream("require-zero-copy=true"), &r, [](GstElement *p) { feed(p, 1, true); });
  EXPECT_FALSE(r.eos);
  EXPECT_NE(r.error.find("sink_1's tensor would be copied"), std::string::npos) << r.error;
  EXPECT_EQ(r.copied, 0u);
}

/* The batch's push returns `data`'s flow instead of reaching the peer
 * (a handled buffer is the probe's to unref). */
GstPadProbeReturn refuse_push(GstPad *, GstPadProbeInfo *info, gpointer data) {
  gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
  GST_PAD_PROBE_INFO_FLOW_RETURN(info) = static_cast<GstFlowReturn>(GPOINTER_TO_INT(data));
  return GST_PAD_PROBE_HANDLED;
}

/* A downstream error stops the streams: their next frame returns it (an
 * upstream source then pauses and posts it), rather than waiting for
 * batches that no longer leave. Bounded, so a hang fails the test. */
TEST(TensorBatch, ADownstreamErrorReachesEveryStream) {
  GstHarness *h = gst_harness_new_with_padnames("tensorbatch", "sink_0", "src");
  gst_harness_set_src_caps_str(h, kTensorCaps);
  GstPad *src = gst_element_get_static_pad(h->element, "src");
  gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, refuse_push, GINT_TO_POINTER(GST_FLOW_ERROR), nullptr);
  gst_object_unref(src);
  auto pushes = std::async(std::launch::async, [h] {
    for (int f = 0; f < 20; ++f) {
      GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kTensorBytes, nullptr);
      GST_BUFFER_PTS(buffer) = f * GST_SECOND / 30;
      const GstFlowReturn ret = gst_harness_push(h, buffer);
      if (ret != GST_FLOW_OK)
        return ret;
    }
    return GST_FLOW_OK;
  });
  const bool returned = pushes.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "a stream still waits for batches after the downstream error";
  gst_element_set_state(h->element, GST_STATE_NULL); // ends a stream's wait either way
  EXPECT_EQ(pushes.get(), GST_FLOW_ERROR);
  gst_harness_teardown(h);
}

TEST(TensorBatch, AStreamThatEndsEarlyLeavesItsSlotEmptyAndTheOthersGoOn) {
  BatchRun r;
  const std::string d = "tensorbatch name=batch ! appsink name=sink sync=false " + source(kPatterns[0], kFrames) +
                        convert() + " ! batch.sink_0 " + source(kPatterns[1], 2) + convert() + " ! batch.sink_1 ";
  run(d, &r);
  EXPECT_TRUE(r.eos) << r.error; // after the last stream ended
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(r.partial, static_cast<guint64>(kFrames - 2));
  EXPECT_EQ(r.copied, 0u);
  const auto ref0 = alone(kPatterns[0], kFrames), ref1 = alone(kPatterns[1], 2);
  for (int f = 0; f < kFrames; ++f) {
    EXPECT_EQ(slot_bytes(r.samples[f], 0), ref0[f]);
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(r.samples[f]));
    const GstTensorMemBatchSlot *second = gst_tensor_mem_batch_meta_get_slot(meta, 1);
    if (f < 2) {
      EXPECT_EQ(slot_bytes(r.samples[f], 1), ref1[f]);
      EXPECT_TRUE(second->filled);
    } else {
      EXPECT_TRUE(all_zero(slot_bytes(r.samples[f], 1))) << "frame " << f;
      EXPECT_FALSE(second->filled);
      EXPECT_STREQ(second->stream, "sink_1"); // the stream it no longer waits for
      EXPECT_EQ(meta->n_filled, 1u);
    }
  }
}

/* The empty slots hold pad-value in the tensor's own type: a float as it
 * is, an integer rounded and clamped to the type's range. */
TEST(TensorBatch, EmptySlotsHoldThePadValueInTheTensorsType) {
  struct Case {
    const char *dtype;
    const char *pad;
    gsize element;
    std::vector<std::uint8_t> want; // one element
  };
  const float f = -1.25f;
  std::vector<std::uint8_t> f_bytes(sizeof f);
  std::memcpy(f_bytes.data(), &f, sizeof f);
  const Case cases[] = {{"float32", "-1.25", 4, f_bytes}, {"uint8", "300.4", 1, {255}}, {"uint8", "114.5", 1, {114}}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.dtype) + " pad-value=" + c.pad);
    const gsize bytes = 32 * 24 * 3 * c.element;
    BatchRun r;
    const std::string extra = std::string("dtype=") + c.dtype;
    const std::string d = std::string("tensorbatch name=batch pad-value=") + c.pad +
                          " ! appsink name=sink sync=false " + source(kPatterns[0], 3) + convert(extra) +
                          " ! batch.sink_0 " + source(kPatterns[1], 1) + convert(extra) + " ! batch.sink_1 ";
    run(d, &r);
    ASSERT_TRUE(r.eos) << r.error;
    ASSERT_EQ(r.samples.size(), 3u);
    std::vector<std::uint8_t> want;
    for (gsize k = 0; k < bytes / c.element; ++k)
      want.insert(want.end(), c.want.begin(), c.want.end());
    const auto ref1 = alone(kPatterns[1], 1, extra);
    for (guint f = 0; f < 3; ++f) {
      std::vector<std::uint8_t> got(bytes);
      gst_buffer_extract(gst_sample_get_buffer(r.samples[f]), bytes, got.data(), bytes);
      if (f == 0)
        EXPECT_EQ(got, ref1[0]) << "a filled slot is the stream's";
      else
        EXPECT_EQ(got, want) << "batch " << f;
    }
  }
}

TEST(TensorBatch, AStalledStreamDoesNotStallTheOthersAfterTheTimeout) {
  BatchRun r;
  // The foreign stream sends one frame and then nothing until the end.
  GstPad *pad0 = nullptr;
  run(with_appsrc_stream("timeout=30000000"), &r, [&](GstElement *p) {
    feed(p, 1, false);
    GstElement *batch = gst_bin_get_by_name(GST_BIN(p), "batch");
    pad0 = gst_element_get_static_pad(batch, "sink_0");
    // Every frame of the live stream leaves, in partial batches, while the
    // foreign one stalls; then it ends and EOS follows.
    for (int i = 0; i < 500; ++i) {
      guint64 batches = 0;
      g_object_get(batch, "batches", &batches, nullptr);
      if (batches >= static_cast<guint64>(kFrames))
        break;
      g_usleep(20000);
    }
    gst_object_unref(batch);
    feed(p, 0, true);
  });
  EXPECT_TRUE(r.eos) << r.error;
  ASSERT_NE(pad0, nullptr);
  // The foreign frame meets stream 0's first when both come within the
  // timeout of each other. Otherwise (a slow start, under a sanitizer) the
  // first to come leaves alone on the timeout, and stream 0's first frame,
  // if its batch left before it came, is dropped and counted on its pad.
  // Either way every frame of stream 0 leaves in order or is counted, and
  // the foreign one leaves once.
  guint64 dropped = 0;
  g_object_get(pad0, "dropped", &dropped, nullptr);
  gst_object_unref(pad0);
  EXPECT_LE(dropped, 1u);
  ASSERT_GE(r.samples.size(), static_cast<std::size_t>(kFrames) - dropped);
  ASSERT_LE(r.samples.size(), static_cast<std::size_t>(kFrames + 1));
  EXPECT_GE(r.partial, static_cast<guint64>(kFrames - 1));
  const auto ref = alone(kPatterns[0], kFrames);
  std::size_t f = dropped; // a dropped frame is the first
  int foreign = 0;
  for (GstSample *sample : r.samples) {
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    if (gst_tensor_mem_batch_meta_get_slot(meta, 0)->filled) {
      ASSERT_LT(f, ref.size());
      EXPECT_EQ(slot_bytes(sample, 0), ref[f]) << "frame " << f;
      ++f;
    }
    if (gst_tensor_mem_batch_meta_get_slot(meta, 1)->filled) {
      EXPECT_EQ(slot_bytes(sample, 1), std::vector<std::uint8_t>(kTensorBytes, 0x40));
      ++foreign;
    } else {
      EXPECT_TRUE(all_zero(slot_bytes(sample, 1))) << "an empty slot holds pad-value";
    }
  }
  EXPECT_EQ(f, static_cast<std::size_t>(kFrames));
  EXPECT_EQ(foreign, 1);
}

/* Live streams at 10 frames a second into a tensorbatch with max-latency
 * (100 ms). */
std::string live_streams(int frames0, int frames1, const std::string &sink) {
  std::string d = "tensorbatch name=batch max-latency=100000000 ! " + sink + " ";
  const int frames[2] = {frames0, frames1};
  for (int k = 0; k < 2; ++k)
    d += std::string("videotestsrc is-live=true name=v") + std::to_string(k) + " pattern=" + kPatterns[k] +
         " num-buffers=" + std::to_string(frames[k]) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=10/1 ! " + convert("name=c" + std::to_string(k)) +
         " ! batch.sink_" + std::to_string(k) + " ";
  return d;
}

/* Where the streams are live, the latency tensorbatch reports is theirs
 * plus max-latency (the most a batch waits for a late stream); where none
 * is, theirs alone. */
TEST(TensorBatch, ReportsMaxLatencyOnTopOfLiveStreams) {
  for (const bool live : {true, false}) {
    SCOPED_TRACE(live ? "live" : "not live");
    std::string d = live_streams(-1, -1, "fakesink name=out sync=true");
    if (!live)
      d = std::regex_replace(d, std::regex("is-live=true"), "is-live=false");
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
    ASSERT_EQ(error, nullptr) << d;
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
    // What the streams say (at a converter's output) and what the batch says.
    auto latency_at = [&](const char *element, const char *pad_name, gboolean *is_live, GstClockTime *min) {
      GstElement *e = gst_bin_get_by_name(GST_BIN(pipeline), element);
      GstPad *pad = gst_element_get_static_pad(e, pad_name);
      GstQuery *q = gst_query_new_latency();
      const bool answered = gst_pad_peer_query(pad, q);
      GstClockTime max = 0;
      gst_query_parse_latency(q, is_live, min, &max);
      gst_query_unref(q);
      gst_object_unref(pad);
      gst_object_unref(e);
      return answered;
    };
    gboolean stream_live = FALSE, batch_live = FALSE;
    GstClockTime stream_min = 0, batch_min = 0;
    ASSERT_TRUE(latency_at("batch", "sink_0", &stream_live, &stream_min));
    ASSERT_TRUE(latency_at("out", "sink", &batch_live, &batch_min));
    EXPECT_EQ(stream_live, live);
    EXPECT_EQ(batch_live, live);
    if (live) {
      EXPECT_EQ(stream_min, 100 * GST_MSECOND) << "one frame of a live 10/1 source";
      EXPECT_EQ(batch_min, stream_min + 100 * GST_MSECOND);
    } else {
      EXPECT_EQ(batch_min, 0u) << "no live stream: GStreamer's answer has no latency, and max-latency is not added";
    }
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    tmtest::release_pipeline(pipeline);
  }
}

/* Where the streams are live, a batch missing a stream leaves when the
 * pipeline clock reaches its first frame's running time plus the streams'
 * latency plus max-latency: not before, and without waiting longer. Stream 0
 * is a live source at 10 frames a second; stream 1 a live appsrc that sends
 * one frame and then nothing. On a test clock every wait is a clock id the
 * test releases in time order, so the deadline is checked exactly, with no
 * wall-clock time in it. */
struct Arrivals {
  std::mutex mu;
  std::vector<GstClockTime> pts; // of every frame of stream 0 that reached tensorbatch
};

GstPadProbeReturn note_arrival(GstPad *, GstPadProbeInfo *info, gpointer data) {
  auto *a = static_cast<Arrivals *>(data);
  std::lock_guard<std::mutex> lock(a->mu);
  a->pts.push_back(GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)));
  return GST_PAD_PROBE_OK;
}

guint64 batches_of(GstElement *batch) {
  guint64 n = 0;
  g_object_get(batch, "batches", &n, nullptr);
  return n;
}

/* Polls `done` until it holds (at most 20 s: a stall fails the test). */
bool eventually(const std::function<bool()> &done) {
  for (int i = 0; i < 2000; ++i) {
    if (done())
      return true;
    g_usleep(10000);
  }
  return done();
}

TEST(TensorBatch, AMissingLiveStreamDelaysTheOthersByMaxLatencyOnThePipelineClock) {
  constexpr GstClockTime kMaxLatency = 10 * GST_MSECOND;
  const std::string frame = "video/x-raw,format=RGBA,width=64,height=48,framerate=10/1";
  const std::string d =
      "tensorbatch name=batch max-latency=" + std::to_string(kMaxLatency) +
      " ! appsink name=sink sync=false videotestsrc is-live=true num-buffers=3 pattern=" + kPatterns[0] + " ! " +
      frame + " ! " + convert() + " ! batch.sink_0 appsrc name=quiet is-live=true min-latency=0 max-latency=-1 " +
      "format=time caps=\"" + frame + "\" ! " + convert() + " ! batch.sink_1 ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  GstClock *clock = gst_test_clock_new();
  gst_pipeline_use_clock(GST_PIPELINE(pipeline), clock);
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  Arrivals arrived;
  batchtest::add_probe(pipeline, "batch", "sink_0", GST_PAD_PROBE_TYPE_BUFFER, note_arrival, &arrived);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);

  // Stream 1's one frame, at the start. Without a timestamp: the source
  // then hands it on without a wait on the clock (the only waits there are
  // stream 0's frames and tensorbatch's deadlines), and the batch still
  // open takes it, the first.
  GstElement *quiet = gst_bin_get_by_name(GST_BIN(pipeline), "quiet");
  GstBuffer *one = gst_buffer_new_allocate(nullptr, 64 * 48 * 4, nullptr);
  gst_buffer_memset(one, 0, 0x40, 64 * 48 * 4);
  GstFlowReturn pushed = GST_FLOW_ERROR;
  g_signal_emit_by_name(quiet, "push-buffer", one, &pushed);
  gst_buffer_unref(one);
  gst_object_unref(quiet);
  ASSERT_EQ(pushed, GST_FLOW_OK);

  // The source waits on the clock for its first frame, negotiated (at
  // running time 0; the deadline of stream 1's batch may wait beside it,
  // later): the latency through tensorbatch is the streams' plus
  // max-latency.
  const GstClockTime base = gst_element_get_base_time(pipeline);
  ASSERT_TRUE(eventually([&] {
    GstClockID id = nullptr;
    if (!gst_test_clock_peek_next_pending_id(GST_TEST_CLOCK(clock), &id))
      return false;
    const bool source_first = gst_clock_id_get_time(id) == base;
    gst_clock_id_unref(id);
    return source_first;
  })) << "the source never waited for its first frame";
  GstPad *sink_pad = gst_element_get_static_pad(sink, "sink");
  GstQuery *q = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(sink_pad, q));
  gboolean live = FALSE;
  GstClockTime min = 0, max = 0;
  gst_query_parse_latency(q, &live, &min, &max);
  gst_query_unref(q);
  gst_object_unref(sink_pad);
  ASSERT_TRUE(live);
  ASSERT_GE(min, kMaxLatency);
  const GstClockTime upstream = min - kMaxLatency;

  // Release the clock's waits in time order. A wait at a frame's running
  // time plus the latency is tensorbatch's deadline for that frame's batch.
  guint64 left = 0;
  int deadlines = 0;
  for (int step = 0; step < 40 && left < 3; ++step) {
    GstClockID next = nullptr;
    gst_test_clock_wait_for_next_pending_id(GST_TEST_CLOCK(clock), &next);
    const GstClockTime t = gst_clock_id_get_time(next);
    gst_clock_id_unref(next);
    std::vector<GstClockTime> pts;
    {
      std::lock_guard<std::mutex> lock(arrived.mu);
      pts = arrived.pts;
    }
    ASSERT_EQ(batches_of(batch), left) << "a batch left before its deadline (clock at " << GST_TIME_AS_MSECONDS(t)
                                       << " ms)";
    // Each frame of stream 0 is a batch of its own: the front batch's
    // first frame is frame `left`.
    bool deadline = pts.size() > left && t == base + pts[left] + upstream + kMaxLatency;
    ASSERT_EQ(gst_test_clock_crank(GST_TEST_CLOCK(clock)), TRUE);
    // The crank releases the earliest wait pending by then: where the
    // deadline's wait was being made again (tensorbatch woken meanwhile),
    // that is the source's next frame, before it.
    if (deadline && gst_clock_get_time(clock) < t)
      deadline = false;
    if (deadline) {
      ++deadlines;
      ASSERT_TRUE(eventually([&] { return batches_of(batch) == left + 1; }))
          << "the batch did not leave at its deadline";
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "try-pull-sample", 5 * GST_SECOND, &sample);
      ASSERT_NE(sample, nullptr);
      GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
      EXPECT_TRUE(gst_tensor_mem_batch_meta_get_slot(meta, 0)->filled);
      EXPECT_FALSE(gst_tensor_mem_batch_meta_get_slot(meta, 1)->filled);
      EXPECT_EQ(gst_tensor_mem_batch_meta_get_slot(meta, 0)->pts, pts[left]);
      gst_sample_unref(sample);
      ++left;
      continue;
    }
    // Maybe a frame of stream 0: once it is in its batch, that batch is
    // complete (the first, with stream 1's frame) and leaves, or it waits
    // for its deadline, an id on the clock beside the source's next frame.
    const std::size_t before = pts.size();
    auto frames = [&] {
      std::lock_guard<std::mutex> lock(arrived.mu);
      return arrived.pts.size();
    };
    if (!eventually([&] { return frames() > before; }))
      continue;
    auto frame_pts = [&](std::size_t i) {
      std::lock_guard<std::mutex> lock(arrived.mu);
      return arrived.pts[i];
    };
    if (frames() == 1) {
      ASSERT_TRUE(eventually([&] { return batches_of(batch) == 1; })) << "the first batch has both streams' frames";
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "try-pull-sample", 5 * GST_SECOND, &sample);
      ASSERT_NE(sample, nullptr);
      gst_sample_unref(sample);
      left = 1;
      // A deadline tensorbatch set for it before stream 1's frame came is
      // let go: the one wait left is the source's next frame.
      ASSERT_TRUE(eventually([&] {
        GstClockID id = nullptr;
        if (gst_test_clock_peek_id_count(GST_TEST_CLOCK(clock)) != 1 ||
            !gst_test_clock_peek_next_pending_id(GST_TEST_CLOCK(clock), &id))
          return false;
        const bool next_frame = gst_clock_id_get_time(id) == base + frame_pts(0) + 100 * GST_MSECOND;
        gst_clock_id_unref(id);
        return next_frame;
      })) << "a deadline of a batch that left stayed on the clock";
    } else {
      // The source's next frame (while it has one) and the front batch's deadline.
      gst_test_clock_wait_for_multiple_pending_ids(GST_TEST_CLOCK(clock), frames() < 3 ? 2 : 1, nullptr);
    }
  }
  EXPECT_EQ(left, 3u);
  EXPECT_EQ(deadlines, 2) << "batches 1 and 2 wait for stream 1 until their deadlines";
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(sink);
  gst_object_unref(batch);
  gst_object_unref(clock);
  tmtest::release_pipeline(pipeline);
}

/* Stream 1's frames stop after its second (dropped at its source, before
 * its converter, as a camera's that go missing), and it ends only after 40
 * frame times. Stream 0's batches do not wait for it: every
 * one of its 8 frames has left in a batch before stream 1 ends, later ones
 * partial with slot 1 empty. Without the live deadline they would leave
 * only at stream 1's end, 3 seconds later. */
GstPadProbeReturn drop_after_two(GstPad *, GstPadProbeInfo *, gpointer data) {
  return (*static_cast<int *>(data))++ < 2 ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
}

GstPadProbeReturn batches_at_end(GstPad *, GstPadProbeInfo *info, gpointer data) {
  if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS) {
    auto *at = static_cast<std::pair<GstElement *, guint64> *>(data);
    g_object_get(at->first, "batches", &at->second, nullptr);
  }
  return GST_PAD_PROBE_OK;
}

TEST(TensorBatch, ALiveStreamThatGoesQuietDoesNotStallTheOthers) {
  BatchRun r;
  int passed = 0;
  std::pair<GstElement *, guint64> at_end{nullptr, 0};
  run(live_streams(8, 40, "appsink name=sink sync=false"), &r, {}, [&](GstElement *p) {
    batchtest::add_probe(p, "v1", "src", GST_PAD_PROBE_TYPE_BUFFER, drop_after_two, &passed);
    at_end.first = gst_bin_get_by_name(GST_BIN(p), "batch");
    batchtest::add_probe(p, "batch", "sink_1", GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, batches_at_end, &at_end);
  });
  ASSERT_NE(at_end.first, nullptr);
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(at_end.second, 8u) << "batches that had left when the quiet stream ended";
  ASSERT_EQ(r.samples.size(), 8u);
  EXPECT_GE(r.partial, 6u);
  const auto ref = batchtest::tensors_of(std::string("videotestsrc pattern=") + kPatterns[0] +
                                         " num-buffers=8 ! video/x-raw,format=RGBA,width=64,height=48,framerate=10/1 "
                                         "! " +
                                         convert() + " ! appsink name=sink");
  for (std::size_t f = 0; f < r.samples.size(); ++f) {
    EXPECT_EQ(slot_bytes(r.samples[f], 0), ref[f]) << "frame " << f;
    if (f >= 2) {
      GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(r.samples[f]));
      EXPECT_FALSE(gst_tensor_mem_batch_meta_get_slot(meta, 1)->filled) << "batch " << f;
    }
  }
  gst_object_unref(at_end.first);
}

/* A stream's third frame, written into its slot, is dropped on its way to
 * tensorbatch (as a leaky queue or a frame dropper would). With no timeout,
 * that batch does not wait for it forever: it leaves when the stream's next
 * frame has passed it, the slot empty and flagged, and every other frame of
 * both streams is batched in place. */
GstPadProbeReturn drop_third(GstPad *, GstPadProbeInfo *, gpointer data) {
  return (*static_cast<int *>(data))++ == 2 ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

TEST(TensorBatch, AWindowDroppedOnItsWayDoesNotHoldItsBatch) {
  BatchRun r;
  std::string d = "tensorbatch name=batch ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kFrames) + convert("name=c" + std::to_string(i)) + " ! batch.sink_" + std::to_string(i) +
         " ";
  int seen = 0;
  run(d, &r, {},
      [&](GstElement *p) { batchtest::add_probe(p, "c1", "src", GST_PAD_PROBE_TYPE_BUFFER, drop_third, &seen); });
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(r.copied, 0u);
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames));
  const auto ref0 = alone(kPatterns[0], kFrames), ref1 = alone(kPatterns[1], kFrames);
  for (int f = 0; f < kFrames; ++f) {
    SCOPED_TRACE("batch " + std::to_string(f));
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(r.samples[f]));
    EXPECT_EQ(slot_bytes(r.samples[f], 0), ref0[f]);
    EXPECT_EQ(gst_tensor_mem_batch_meta_get_slot(meta, 1)->filled, f != 2);
    if (f != 2) {
      EXPECT_EQ(slot_bytes(r.samples[f], 1), ref1[f]);
    }
  }
  EXPECT_EQ(r.partial, 1u);
}

/* Stream 1 loses every frame after its second on the way (written into its
 * slot, then dropped), and outlives stream 0. The batches only it would have
 * filled stay empty: they go without a trace, so its converter goes on to
 * its end and EOS follows; nothing waits for frames that will never come. */
GstPadProbeReturn drop_from_third(GstPad *, GstPadProbeInfo *, gpointer data) {
  return (*static_cast<int *>(data))++ >= 2 ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

TEST(TensorBatch, BatchesNoStreamFilledGoWithoutATrace) {
  BatchRun r;
  std::string d = "tensorbatch name=batch ! appsink name=sink sync=false " + source(kPatterns[0], 3) + convert() +
                  " ! batch.sink_0 " + source(kPatterns[1], 8) + convert("name=c1") + " ! batch.sink_1 ";
  int seen = 0;
  run(d, &r, {},
      [&](GstElement *p) { batchtest::add_probe(p, "c1", "src", GST_PAD_PROBE_TYPE_BUFFER, drop_from_third, &seen); });
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(seen, 8) << "stream 1's converter did not reach its end";
  ASSERT_EQ(r.samples.size(), 3u) << "only the batches stream 0 filled";
  EXPECT_EQ(r.partial, 1u);
}

/* A frame written in place whose batch left without it (the timeout) is
 * too late for any batch: dropped, not copied, and counted on its pad and
 * the element; the stream's later frames go on in place. Stream 1's first
 * frame is held after it was written until a batch has left without it. */
GstPadProbeReturn hold_first_until_partial(GstPad *, GstPadProbeInfo *, gpointer data) {
  static thread_local bool held = false;
  if (held)
    return GST_PAD_PROBE_OK;
  held = true;
  auto *batch = static_cast<GstElement *>(data);
  for (int i = 0; i < 1000; ++i) {
    guint64 partial = 0;
    g_object_get(batch, "partial-batches", &partial, nullptr);
    if (partial > 0)
      break;
    g_usleep(10000);
  }
  return GST_PAD_PROBE_OK;
}

TEST(TensorBatch, AFrameAfterItsBatchLeftIsDroppedAndCountedOnItsPad) {
  BatchRun r;
  std::string d = "tensorbatch name=batch timeout=20000000 ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kFrames) + convert("name=c" + std::to_string(i)) + " ! batch.sink_" + std::to_string(i) +
         " ";
  GstElement *batch = nullptr;
  GstPad *late_pad = nullptr;
  run(d, &r, {}, [&](GstElement *p) {
    batch = gst_bin_get_by_name(GST_BIN(p), "batch");
    late_pad = gst_element_get_static_pad(batch, "sink_1");
    batchtest::add_probe(p, "c1", "src", GST_PAD_PROBE_TYPE_BUFFER, hold_first_until_partial, batch);
  });
  ASSERT_NE(batch, nullptr);
  EXPECT_TRUE(r.eos) << r.error;
  EXPECT_EQ(r.copied, 0u);
  EXPECT_GE(r.partial, 1u);
  guint64 on_pad = 0, dropped = 0;
  g_object_get(late_pad, "dropped", &on_pad, nullptr);
  g_object_get(batch, "dropped-frames", &dropped, nullptr);
  EXPECT_GE(on_pad, 1u);
  EXPECT_EQ(dropped, on_pad);
  // Stream 1's frames that made it are its own, in order, after the first.
  const auto ref = alone(kPatterns[1], kFrames);
  int last = 0;
  for (GstSample *sample : r.samples) {
    const GstTensorMemBatchSlot *slot =
        gst_tensor_mem_batch_meta_get_slot(gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample)), 1);
    if (!slot->filled)
      continue;
    const auto bytes = slot_bytes(sample, 1);
    const auto at = std::find(ref.begin(), ref.end(), bytes);
    ASSERT_NE(at, ref.end());
    EXPECT_GT(at - ref.begin(), last) << "a dropped frame came out, or frames out of order";
    last = static_cast<int>(at - ref.begin());
  }
  gst_object_unref(late_pad);
  gst_object_unref(batch);
}

TEST(TensorBatch, NullReturnsWhileAStreamWaitsForItsBatch) {
  // No timeout: the live stream's second frame waits for the foreign
  // stream's first, which never comes; NULL must still return.
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(with_appsrc_stream("").c_str(), &error);
  ASSERT_EQ(error, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  g_usleep(300000);
  auto stopped = std::async(std::launch::async, [pipeline] { return gst_element_set_state(pipeline, GST_STATE_NULL); });
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "NULL did not return";
  EXPECT_EQ(stopped.get(), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorBatch, PadsAddedAndReleasedWhilePlaying) {
  GError *error = nullptr;
  std::string d = "tensorbatch name=batch ! appsink name=sink sync=false max-buffers=4 drop=true ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], -1) + convert() + " ! batch.sink_" + std::to_string(i) + " ";
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  auto pull_until = [&](const std::string &dims) {
    for (int i = 0; i < 200; ++i) {
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "try-pull-sample", 5 * GST_SECOND, &sample);
      if (!sample)
        return false;
      const bool match = dims_of(sample) == dims;
      gst_sample_unref(sample);
      if (match)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(pull_until("32:24:3:2"));
  // A third stream joins.
  GstElement *branch = gst_parse_bin_from_description((source(kPatterns[2], -1) + convert()).c_str(), TRUE, &error);
  ASSERT_EQ(error, nullptr);
  gst_bin_add(GST_BIN(pipeline), branch);
  GstPad *third = gst_element_request_pad_simple(batch, "sink_%u");
  ASSERT_NE(third, nullptr);
  GstPad *out = gst_element_get_static_pad(branch, "src");
  ASSERT_EQ(gst_pad_link(out, third), GST_PAD_LINK_OK);
  gst_element_sync_state_with_parent(branch);
  EXPECT_TRUE(pull_until("32:24:3:3"));
  // ... and leaves. Its state locked first: a state change of the pipeline
  // meanwhile must not set it going again (GStreamer's way to take a
  // branch out of a playing pipeline).
  gst_element_set_locked_state(branch, TRUE);
  EXPECT_EQ(gst_element_set_state(branch, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_pad_unlink(out, third);
  gst_element_release_request_pad(batch, third);
  gst_object_unref(third);
  gst_object_unref(out);
  gst_bin_remove(GST_BIN(pipeline), branch);
  EXPECT_TRUE(pull_until("32:24:3:2"));
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(batch);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorBatch, AFlushingSeekOfThePipelineFlushesTheBatchOnce) {
  GError *error = nullptr;
  std::string d = "tensorbatch name=batch ! appsink name=sink sync=false ";
  // Two moving balls of different colours: every frame of each differs.
  const char *const balls[] = {"ball foreground-color=0xff00ff00", "ball foreground-color=0xffff00ff"};
  for (int i = 0; i < 2; ++i)
    d += source(balls[i], 30) + convert() + " ! batch.sink_" + std::to_string(i) + " ";
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, tmtest::kTimeout), GST_STATE_CHANGE_SUCCESS);
  // Back to the start, both streams flushed: the batches start again from
  // each stream's first frame, which slot 0 shows.
  ASSERT_TRUE(gst_element_seek_simple(pipeline, GST_FORMAT_TIME,
                                      static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE), 0));
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  // Every batch after the seek pairs the two streams' same frame, from frame
  // 0 on, in order, to EOS (num-buffers counts the frames made before the
  // seek too, so the last index depends on how far PAUSED ran ahead).
  const auto ref0 = alone(balls[0], 30), ref1 = alone(balls[1], 30);
  auto index_of = [](const std::vector<std::vector<std::uint8_t>> &ref, const std::vector<std::uint8_t> &bytes) {
    for (std::size_t f = 0; f < ref.size(); ++f)
      if (ref[f] == bytes)
        return static_cast<int>(f);
    return -1;
  };
  int expected = 0;
  for (;;) {
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "try-pull-sample", tmtest::kTimeout, &sample);
    if (!sample)
      break;
    // A stream that made more frames before the seek ends first: its slot
    // of the last batches is empty, flagged and zero.
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    for (guint i = 0; i < 2; ++i) {
      if (gst_tensor_mem_batch_meta_get_slot(meta, i)->filled) {
        EXPECT_EQ(index_of(i ? ref1 : ref0, slot_bytes(sample, i)), expected)
            << "slot " << i << " of batch " << expected;
      } else {
        EXPECT_TRUE(all_zero(slot_bytes(sample, i))) << "slot " << i << " of batch " << expected;
        EXPECT_GE(expected, 20) << "only the last batches may miss a frame";
      }
    }
    ++expected;
    gst_sample_unref(sample);
  }
  EXPECT_GE(expected, 20); // most of the clip, after at most a few frames made while PAUSED
  gboolean eos = FALSE;
  g_object_get(sink, "eos", &eos, nullptr);
  EXPECT_TRUE(eos);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorBatch, StreamsOfDifferentTensorsAreRefusedByName) {
  BatchRun r;
  const std::string d = "tensorbatch name=batch ! appsink name=sink sync=false " + source(kPatterns[0], kFrames) +
                        convert() + " ! batch.sink_0 " + source(kPatterns[1], kFrames) +
                        "tensorconvert width=16 height=16 ! batch.sink_1 ";
  run(d, &r);
  EXPECT_FALSE(r.eos);
  EXPECT_NE(r.error.find("differs from the batch's"), std::string::npos) << r.error;
  // Both pads named: whichever negotiated first made the batch's tensor.
  EXPECT_NE(r.error.find("sink_0"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("sink_1"), std::string::npos) << r.error;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* Video frames are taken where their tensor is described: by their caps on
 * 1.28 (the tensors field, as tensorconvert output=meta writes it), before
 * 1.28 by a frame-tensor event (which tensorconvert output=meta sends).
 * Plain frames are one negotiation error naming the pad and what is
 * missing: on 1.28 at their caps, before it at their first frame. */
TEST(TensorBatch, FramesWhoseCapsDescribeNoTensorAreRefusedByName) {
  BatchRun r;
  run("tensorbatch name=batch ! appsink name=sink sync=false " + source(kPatterns[0], kFrames) + "batch.sink_0 ", &r);
  EXPECT_FALSE(r.eos);
  const char *refusal = GST_TENSOR_MEM_HAVE_TENSOR_CAPS
                            ? "sink_0: its caps describe no tensor"
                            : "sink_0: its frames' tensor was not described before its first frame";
  EXPECT_NE(r.error.find(refusal), std::string::npos) << r.error;
  EXPECT_EQ(r.batches, 0u);
}

/* Before 1.28: the description, pushed ahead of `pipeline`'s appsrc
 * "foreign"'s first buffer, as tensorconvert output=meta does. */
[[maybe_unused]] void describe_frames_of_foreign(GstElement *pipeline, const char *dims) {
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "foreign");
  GstPad *pad = gst_element_get_static_pad(src, "src");
  auto *tensor = gst_caps_new_simple("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT, 1,
                                     "types", G_TYPE_STRING, "float32", "dimensions", G_TYPE_STRING, dims, nullptr);
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *p, GstPadProbeInfo *, gpointer caps) {
        gst_pad_push_event(p, gst_tensor_mem_frame_tensor_event_new(static_cast<GstCaps *>(caps)));
        return GST_PAD_PROBE_REMOVE;
      },
      tensor, reinterpret_cast<GDestroyNotify>(gst_caps_unref));
  gst_object_unref(pad);
  gst_object_unref(src);
}

/* A frame whose tensor is described but which carries none (no
 * GstTensorMeta) is one element error naming the pad. */
TEST(TensorBatch, AFrameWithoutItsTensorIsRefusedByName) {
  BatchRun r;
  const std::string d = "tensorbatch name=batch ! appsink name=sink sync=false appsrc name=foreign format=time ! "
                        "batch.sink_0 ";
  auto prepare = [](GstElement *pipeline) {
    GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=64,height=48,framerate=30/1");
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
    gst_tensormem::CapsTensor t;
    t.id = "pixels";
    t.dims = {1, 3, 24, 32};
    gst_tensormem::set_caps_tensor_group(gst_caps_get_structure(caps, 0), "pixels", {t});
#else
    describe_frames_of_foreign(pipeline, "32:24:3:1");
#endif
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "foreign");
    g_object_set(src, "caps", caps, nullptr);
    gst_object_unref(src);
    gst_caps_unref(caps);
  };
  run(d, &r, [](GstElement *p) { feed_frames(p, 1); }, prepare);
  EXPECT_FALSE(r.eos);
  EXPECT_NE(r.error.find("sink_0's frame carries no tensor"), std::string::npos) << r.error;
  EXPECT_EQ(r.batches, 0u);
}
#endif

TEST(TensorBatch, TheStoragePropertyOffersOnlySystemAndDmaBuf) {
  // Batches live in system memory or DMA-BUF; a GL or D3D11 storage is not a
  // value of the property, so gst-launch refuses it when it parses the line.
  GstElement *batch = gst_element_factory_make("tensorbatch", nullptr);
  ASSERT_NE(batch, nullptr);
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(batch), "storage");
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(G_IS_PARAM_SPEC_ENUM(spec));
  GEnumClass *values = G_PARAM_SPEC_ENUM(spec)->enum_class;
  for (const char *nick : {"auto", "system", "dmabuf"})
    EXPECT_NE(g_enum_get_value_by_nick(values, nick), nullptr) << nick;
  for (const char *nick : {"pbo", "d3d11"})
    EXPECT_EQ(g_enum_get_value_by_nick(values, nick), nullptr) << nick;
  gst_object_unref(batch);

  GError *error = nullptr;
  GstElement *line = gst_parse_launch("fakesrc ! tensorbatch storage=pbo ! fakesink", &error);
  ASSERT_NE(error, nullptr);
  // The property refused the value, not some other step of the line.
  EXPECT_TRUE(g_error_matches(error, GST_PARSE_ERROR, GST_PARSE_ERROR_COULD_NOT_SET_PROPERTY)) << error->message;
  if (error)
    g_error_free(error);
  if (line)
    gst_object_unref(line);
}

/* The first message of `type` (an error or a warning) on `pipeline`'s bus,
 * as "SOURCE: message | debug"; empty where there is none. */
std::string problem_on_bus(GstElement *pipeline, GstMessageType type) {
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_pop_filtered(bus, type);
  gst_object_unref(bus);
  if (!msg)
    return "";
  std::string text = tmtest::problem_text(msg);
  gst_message_unref(msg);
  return text;
}

TEST(TensorBatch, MorePadsThanAFixedBatchSizeFailTheStartNamingBatchSize) {
  // The gst-launch line of issue 37: the second pad links (batch-size may
  // still change before the start, so a refused link would only say "could
  // not link"), and the start fails with an element error gst-launch prints.
  std::string d = "tensorbatch name=batch batch-size=1 ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kFrames) + convert() + " ! batch. ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  g_object_add_weak_pointer(G_OBJECT(batch), reinterpret_cast<gpointer *>(&batch));
  gst_object_unref(batch);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  const std::string problem = problem_on_bus(pipeline, GST_MESSAGE_ERROR);
  EXPECT_NE(problem.find("batch: 2 sink pads for batch-size=1"), std::string::npos) << problem;
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
  EXPECT_EQ(batch, nullptr) << "tensorbatch outlives its pipeline";
}

TEST(TensorBatch, APadBeyondAFixedBatchSizeWhileRunningIsRefusedNamingBatchSize) {
  const std::string d = "tensorbatch name=batch batch-size=1 ! appsink name=sink sync=false " +
                        source(kPatterns[0], kFrames) + convert() + " ! batch.sink_0 ";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, tmtest::kTimeout), GST_STATE_CHANGE_SUCCESS);
  GstPad *second = gst_element_request_pad_simple(batch, "sink_%u");
  EXPECT_EQ(second, nullptr);
  const std::string problem = problem_on_bus(pipeline, GST_MESSAGE_WARNING);
  EXPECT_NE(problem.find("batch: 2 sink pads for batch-size=1"), std::string::npos) << problem;
  if (second)
    gst_object_unref(second);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(batch);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorBatch, AFixedBatchLeavesUnfedSlotsEmpty) {
  BatchRun r;
  std::string d = "tensorbatch name=batch batch-size=3 ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += source(kPatterns[i], kFrames) + convert() + " ! batch.sink_" + std::to_string(i) + " ";
  run(d, &r);
  EXPECT_TRUE(r.eos) << r.error;
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kFrames));
  for (GstSample *sample : r.samples) {
    EXPECT_EQ(dims_of(sample), "32:24:3:3");
    EXPECT_TRUE(all_zero(slot_bytes(sample, 2)));
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    EXPECT_EQ(meta->n_filled, 2u);
    EXPECT_FALSE(gst_tensor_mem_batch_meta_get_slot(meta, 2)->filled);
    EXPECT_EQ(gst_tensor_mem_batch_meta_get_slot(meta, 2)->stream, nullptr); // no stream feeds it
  }
  EXPECT_EQ(r.copied, 0u);
}

} // namespace
