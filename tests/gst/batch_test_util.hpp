// SPDX-License-Identifier: Apache-2.0
/* What the tensorbatch tests share (test_batch.cpp, test_batch_gl.cpp):
 * running a line with a tensorbatch named "batch" into an appsink named
 * "sink" until EOS or an error, and the tensors a line without tensorbatch
 * makes, to compare slots with. */
#pragma once

#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace batchtest {

// A GStreamer critical or warning (a NULL stream id, data before
// stream-start) fails the program here, as gst_check_init() makes it do.
inline const bool g_fatal_warnings = [] {
  g_log_set_always_fatal(static_cast<GLogLevelFlags>(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING));
  return true;
}();

struct BatchRun {
  std::vector<GstSample *> samples;
  bool eos = false;
  std::string error;
  guint64 copied = 0, batches = 0, partial = 0;
  ~BatchRun() {
    for (GstSample *s : samples)
      gst_sample_unref(s);
  }
};

/* A probe on pad `pad_name` of the element named `element` in `pipeline`. */
inline void add_probe(GstElement *pipeline, const char *element, const char *pad_name, GstPadProbeType type,
                      GstPadProbeCallback callback, gpointer data) {
  GstElement *e = gst_bin_get_by_name(GST_BIN(pipeline), element);
  ASSERT_NE(e, nullptr) << element;
  GstPad *pad = gst_element_get_static_pad(e, pad_name);
  ASSERT_NE(pad, nullptr) << element << "." << pad_name;
  gst_pad_add_probe(pad, type, callback, data, nullptr);
  gst_object_unref(pad);
  gst_object_unref(e);
}

/* Plays `description` (a tensorbatch named "batch", an appsink named
 * "sink") to EOS or an error; `during`, when given, runs once it plays;
 * `prepare`, when given, before it leaves NULL (to give it a context). */
inline void run(const std::string &description, BatchRun *out, const std::function<void(GstElement *)> &during = {},
                const std::function<void(GstElement *)> &prepare = {}) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << description << ": " << error->message;
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
  if (prepare)
    prepare(pipeline);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  if (during)
    during(pipeline);
  // Samples until EOS; an error ends the run too (appsink would wait on).
  GstBus *bus = gst_element_get_bus(pipeline);
  // Gives up after kTimeout without a sample or a message; before the first
  // sample three times that, which the GL tests' shader compiles (one per
  // tensorconvert, slow under valgrind) may take.
  gint64 give_up = g_get_monotonic_time() + 3 * tmtest::kTimeout / 1000;
  bool timed_out = false;
  for (;;) {
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "try-pull-sample", 50 * GST_MSECOND, &sample);
    if (sample) {
      out->samples.push_back(sample);
      give_up = g_get_monotonic_time() + tmtest::kTimeout / 1000;
      continue;
    }
    GstMessage *msg = gst_bus_pop_filtered(bus, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (msg) {
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
        out->eos = true;
        // The samples before EOS are all in the appsink by now.
        while (g_signal_emit_by_name(sink, "try-pull-sample", 0, &sample), sample)
          out->samples.push_back(sample);
      } else {
        GError *err = nullptr;
        gchar *debug = nullptr;
        gst_message_parse_error(msg, &err, &debug);
        out->error = std::string(err->message) + " | " + (debug ? debug : "");
        g_error_free(err);
        g_free(debug);
      }
      gst_message_unref(msg);
      break;
    }
    if (g_get_monotonic_time() > give_up) {
      timed_out = true;
      break;
    }
  }
  gst_object_unref(bus);
  EXPECT_FALSE(timed_out) << description << ": neither a sample, EOS nor an error for " << tmtest::kTimeout / GST_SECOND
                          << " s";
  g_object_get(batch, "copied-bytes", &out->copied, "batches", &out->batches, "partial-batches", &out->partial,
               nullptr);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(batch);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
}

/* The tensors, in order, that `description` (ending in an appsink named
 * "sink") hands its appsink before EOS. */
inline std::vector<std::vector<std::uint8_t>> tensors_of(const std::string &description) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  EXPECT_EQ(error, nullptr) << description;
  if (!pipeline)
    return {};
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  std::vector<std::vector<std::uint8_t>> tensors;
  for (;;) {
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "pull-sample", &sample);
    if (!sample)
      break;
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    std::vector<std::uint8_t> bytes(gst_buffer_get_size(buffer));
    gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
    tensors.push_back(std::move(bytes));
    gst_sample_unref(sample);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
  return tensors;
}

inline std::string dims_of(GstSample *sample) {
  const char *dims = gst_structure_get_string(gst_caps_get_structure(gst_sample_get_caps(sample), 0), "dimensions");
  return dims ? dims : "";
}

/* Plays `description` (an appsink named "sink", max-buffers=1) to EOS,
 * starting a read (gst_buffer_begin_tensor_mem_read) of the first batch
 * that outlives its buffer, and ends that read only after the last batch.
 * Returns what `identity` says of each batch's allocation, in order (a
 * DMA-BUF's fd, a PBO's GL name); `prepare` sees the pipeline before it
 * starts. */
inline std::vector<guint64> allocations_while_first_is_read(const std::string &description,
                                                            const std::function<guint64(GstMemory *)> &identity,
                                                            const std::function<void(GstElement *)> &prepare = {}) {
  std::vector<guint64> ids;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  EXPECT_EQ(error, nullptr) << (error ? error->message : "");
  if (!pipeline)
    return ids;
  if (prepare)
    prepare(pipeline);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstTensorMemReadCompletion *read = nullptr;
  for (;;) {
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "pull-sample", &sample);
    if (!sample)
      break;
    GstBuffer *batch = gst_sample_get_buffer(sample);
    ids.push_back(identity(gst_buffer_peek_memory(batch, 0)));
    if (!read) {
      read = gst_buffer_begin_tensor_mem_read(batch, &error);
      EXPECT_NE(read, nullptr) << (error ? error->message : "");
      g_clear_error(&error);
    }
    gst_sample_unref(sample); // the buffer goes; the read of its allocation goes on
  }
  if (read) {
    gst_tensor_mem_read_completion_done(read);
    gst_tensor_mem_read_completion_unref(read);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
  return ids;
}

/* `ids` (allocations_while_first_is_read's) never name the first batch's
 * allocation again, and name fewer allocations than batches (the others
 * went round). */
inline void expect_first_kept_others_reused(const std::vector<guint64> &ids, std::size_t batches) {
  ASSERT_EQ(ids.size(), batches);
  for (std::size_t k = 1; k < ids.size(); ++k)
    EXPECT_NE(ids[k], ids[0]) << "batch " << k << " reuses the allocation still being read";
  std::vector<guint64> distinct(ids);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_LT(distinct.size(), ids.size()) << "the other allocations go round";
}

} // namespace batchtest
