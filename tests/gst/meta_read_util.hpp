// SPDX-License-Identifier: Apache-2.0
/* Pipelines whose buffers carry a GstTensorMeta (GStreamer 1.26), for the
 * tests of our elements reading one: tensorinspect's per-tensor reports,
 * the samples, the outcome, and an appsrc fed by the test. */
#pragma once

#include "test_util.hpp"

#include <gst/analytics/analytics.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <xxhash.h>

namespace tmtest {

/* One `tensorinspect-tensor` message. */
struct TensorReport {
  guint64 frame = 0;
  guint index = 0;
  std::string id, type, dims, dims_order, checksum, path;
  guint64 bytes = 0;
  guint min = 0, max = 0;
  gdouble mean = 0;
};

struct MetaRun {
  bool eos = false;
  std::string error; // the first error's message and debug text
  std::vector<std::string> warnings;
  std::vector<TensorReport> tensors;
  guint64 frames = 0;          // tensorinspect's per-frame messages
  guint64 summary_tensors = 0; // its EOS summary's `tensors`
  guint64 download_copied = 0; // copied-bytes of the element named "down"
  guint64 upload_copied = 0;   // copied-bytes of the element named "up"
  std::vector<GstSample *> samples;
  std::vector<GstSample *> others; // from an appsink named "other" (a second branch), kept as long

  MetaRun() = default;
  MetaRun(const MetaRun &) = delete;
  MetaRun &operator=(const MetaRun &) = delete;
  ~MetaRun() {
    for (GstSample *s : samples)
      gst_sample_unref(s);
    for (GstSample *s : others)
      gst_sample_unref(s);
  }
};

inline std::string text_field(const GstStructure *s, const char *name) {
  const gchar *v = gst_structure_get_string(s, name);
  return v ? v : "";
}

inline TensorReport tensor_report_of(const GstStructure *s) {
  TensorReport r;
  gst_structure_get_uint64(s, "frame", &r.frame);
  gst_structure_get_uint(s, "index", &r.index);
  r.id = text_field(s, "id");
  r.type = text_field(s, "type");
  r.dims = text_field(s, "dims");
  r.dims_order = text_field(s, "dims-order");
  r.checksum = text_field(s, "checksum");
  r.path = text_field(s, "path");
  gst_structure_get_uint64(s, "bytes", &r.bytes);
  gst_structure_get_uint(s, "min", &r.min);
  gst_structure_get_uint(s, "max", &r.max);
  gst_structure_get_double(s, "mean", &r.mean);
  return r;
}

/* Hands `buffer` over (transfer full): the test keeps no reference, so no
 * element downstream sees it shared and copies it, a copy that would drop
 * the GstTensorMeta (GStreamer 1.26's has no transform function). */
inline GstFlowReturn push(GstElement *appsrc, GstBuffer *buffer) {
  return gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);
}

/* `source` (ending in "! ") into a tee: `element` on one branch, into the
 * appsink "sink", and an appsink "other" keeping every frame on the other
 * (run_meta_pipeline() holds its samples to the end). The element sees each
 * frame shared, as behind any tee, so a copy it makes to write the frame's
 * metadata must keep what GStreamer's copy drops (the GstTensorMeta), and
 * leave the other branch's frame as it was. */
inline std::string tee_before(const std::string &source, const std::string &element) {
  return source + "tee name=t t. ! " + element + " ! appsink name=sink async=false " +
         "t. ! queue ! appsink name=other async=false";
}

/* Keeps every sample of `appsink` in `*kept` (so their buffers stay shared). */
inline void keep_samples(GstElement *appsink, std::vector<GstSample *> *kept) {
  g_object_set(appsink, "emit-signals", TRUE, "sync", FALSE, nullptr);
  g_signal_connect(appsink, "new-sample", G_CALLBACK(+[](GstElement *sink, gpointer data) -> GstFlowReturn {
                     GstSample *sample = nullptr;
                     g_signal_emit_by_name(sink, "pull-sample", &sample);
                     if (sample)
                       static_cast<std::vector<GstSample *> *>(data)->push_back(sample);
                     return GST_FLOW_OK;
                   }),
                   kept);
}

/* Runs `description` to EOS or the first error. An appsrc named "src" is
 * handed to `feed` once the pipeline plays, then ended; appsinks named
 * "sink" and "other" keep every sample. */
inline void run_meta_pipeline(const std::string &description, MetaRun *run,
                              const std::function<void(GstElement *)> &feed = nullptr) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (!pipeline || error) { // a pipeline with an error is one that could not be linked
    ADD_FAILURE() << description << ": " << (error ? error->message : "?");
    g_clear_error(&error);
    if (pipeline)
      gst_object_unref(pipeline);
    return;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  if (sink)
    keep_samples(sink, &run->samples);
  if (GstElement *other = gst_bin_get_by_name(GST_BIN(pipeline), "other")) {
    keep_samples(other, &run->others);
    gst_object_unref(other);
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  if (GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src")) {
    if (feed)
      feed(src);
    GstFlowReturn ret;
    g_signal_emit_by_name(src, "end-of-stream", &ret);
    gst_object_unref(src);
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  const auto types = static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING |
                                                 GST_MESSAGE_ELEMENT);
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, types);
    if (!msg) {
      ADD_FAILURE() << description << ": neither EOS nor an error within 30 s";
      break;
    }
    bool done = false;
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
      run->eos = done = true;
    } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR || GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
      const std::string text = problem_text(msg);
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        run->error = text;
        done = true;
      } else {
        run->warnings.push_back(text);
      }
    } else if (const GstStructure *s = gst_message_get_structure(msg)) {
      if (gst_structure_has_name(s, "tensorinspect-tensor"))
        run->tensors.push_back(tensor_report_of(s));
      else if (gst_structure_has_name(s, "tensorinspect"))
        ++run->frames;
      else if (gst_structure_has_name(s, "tensorinspect-summary"))
        gst_structure_get_uint64(s, "tensors", &run->summary_tensors);
    }
    gst_message_unref(msg);
    if (done)
      break;
  }
  gst_object_unref(bus);
  for (auto [name, copied] : {std::pair{"down", &run->download_copied}, std::pair{"up", &run->upload_copied}})
    if (GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name)) {
      g_object_get(element, "copied-bytes", copied, nullptr);
      gst_object_unref(element);
    }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (sink)
    gst_object_unref(sink);
  gst_object_unref(pipeline);
}

inline std::vector<guint8> bytes_of(GstBuffer *buffer) {
  std::vector<guint8> bytes(gst_buffer_get_size(buffer));
  gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
  return bytes;
}

/* tensorinspect's checksum, computed here: 64-bit XXH3, seed 0, 16 hex digits. */
inline std::string xxh3_hex(const std::vector<guint8> &bytes) {
  gchar text[17];
  g_snprintf(text, sizeof text, "%016" G_GINT64_MODIFIER "x",
             static_cast<guint64>(XXH3_64bits(bytes.data(), bytes.size())));
  return text;
}

inline void expect_byte_stats(const TensorReport &r, const std::vector<guint8> &bytes) {
  ASSERT_FALSE(bytes.empty());
  guint64 sum = 0;
  for (guint8 b : bytes)
    sum += b;
  EXPECT_EQ(r.min, *std::min_element(bytes.begin(), bytes.end()));
  EXPECT_EQ(r.max, *std::max_element(bytes.begin(), bytes.end()));
  EXPECT_NEAR(r.mean, static_cast<double>(sum) / static_cast<double>(bytes.size()), 1e-9);
}

} // namespace tmtest
