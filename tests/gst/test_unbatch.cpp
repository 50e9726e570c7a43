// SPDX-License-Identifier: Apache-2.0
/* tensorunbatch: streams batched by tensorbatch come back out, each on its
 * own pad, every tensor byte-exact against the stream converted alone, with
 * the stream's own timestamps, as views of the batch (no copy); a stream that
 * ends early sends nothing for the empty slots; a buffer that is no batch, or
 * tensors without the batch axis outermost, are one element error, and NULL
 * stays reachable. */
#include "batch_test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/tensormem/tensormem.h>

#include <map>
#include <string>
#include <vector>

namespace {

const char *const kPatterns[] = {"smpte", "ball", "circular"};
constexpr gsize kTensorBytes = 32 * 24 * 3 * sizeof(float);

std::string source(const char *pattern, int frames) {
  return std::string("videotestsrc pattern=") + pattern + " num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! ";
}

std::string convert() { return "tensorconvert width=32 height=24 resize=letterbox mean=<0.5,0.4,0.3> std=<0.2,0.25,0.3>"; }

/* What one stream's sink received: its samples, to EOS. */
struct Streams {
  std::map<guint, std::vector<GstSample *>> samples;
  bool eos = false;
  std::string error;
  guint64 slots_out = 0;
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
void run_split(const std::vector<int> &frames, Streams *out) {
  std::string d = "tensorbatch name=batch ! tensorunbatch name=split ";
  for (std::size_t i = 0; i < frames.size(); ++i)
    d += source(kPatterns[i], frames[i]) + convert() + " ! batch.sink_" + std::to_string(i) + " ";
  for (std::size_t i = 0; i < frames.size(); ++i)
    d += "split.src_" + std::to_string(i) + " ! queue ! appsink name=s" + std::to_string(i) + " sync=false wait-on-eos=false ";
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
  const std::string error =
      error_of("other/tensors,format=(string)static,num_tensors=(int)2,types=(string)uint8,dimensions=(string)4:3", 12, 3);
  EXPECT_NE(error.find("Cannot split these tensors"), std::string::npos) << error;
}

} // namespace
