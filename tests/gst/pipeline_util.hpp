// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "../proc_util.hpp"
#include "test_util.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tmtest {

inline constexpr GstClockTime kTimeout = 20 * GST_SECOND;

/* One per-frame report of a tensorinspect element (its "tensorinspect"
 * element message); strings are empty where the message has none. */
struct InspectReport {
  guint64 frame = 0;
  std::string checksum;
  std::string fence;
  std::string path;
  guint min = 0;
  guint max = 0;
  gdouble mean = 0;
};

/* The report in `s` when it is a tensorinspect report. */
inline std::optional<InspectReport> inspect_report_of(const GstStructure *s) {
  if (!s || !gst_structure_has_name(s, "tensorinspect"))
    return std::nullopt;
  auto text = [s](const char *field) {
    const gchar *value = gst_structure_get_string(s, field);
    return std::string(value ? value : "");
  };
  InspectReport report;
  gst_structure_get_uint64(s, "frame", &report.frame);
  report.checksum = text("checksum");
  report.fence = text("fence");
  report.path = text("path");
  gst_structure_get_uint(s, "min", &report.min);
  gst_structure_get_uint(s, "max", &report.max);
  gst_structure_get_double(s, "mean", &report.mean);
  return report;
}

/* What a pipeline run produced: every sample from the appsink named "sink",
 * the bus outcome, the reports of its tensorinspect elements in the order
 * they were posted, and the copy counts of the tensorupload named "up" and
 * the tensordownload named "down" (when there are such elements). */
struct PipelineRun {
  std::vector<GstSample *> samples;
  bool eos = false;
  std::string error_debug;
  GQuark error_domain = 0;
  guint64 upload_copied = 0;
  guint64 download_copied = 0;
  std::vector<InspectReport> inspected;

  PipelineRun() = default;
  PipelineRun(const PipelineRun &) = delete;
  PipelineRun &operator=(const PipelineRun &) = delete;
  ~PipelineRun() {
    for (GstSample *s : samples)
      gst_sample_unref(s);
  }
};

inline bool element_available(const char *name) {
  GstElementFactory *factory = gst_element_factory_find(name);
  if (!factory)
    return false;
  gst_object_unref(factory);
  return true;
}

/* How a running pipeline ended: EOS, an error (its message and debug text,
 * its domain) or neither within kTimeout. */
struct PipelineEnd {
  bool eos = false;
  bool timed_out = false;
  std::string error;
  GQuark error_domain = 0;
};

/* Pops `pipeline`'s bus until EOS or an error, or, when `count` is not 0,
 * until `count` tensorinspect reports have arrived. When `reports` is given,
 * every tensorinspect report popped on the way is appended to it. */
inline PipelineEnd wait_for_inspect_reports(GstElement *pipeline, std::vector<InspectReport> *reports,
                                            std::size_t count = 0) {
  PipelineEnd end;
  GstBus *bus = gst_element_get_bus(pipeline);
  const auto types = static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
                                                 (reports ? GST_MESSAGE_ELEMENT : GST_MESSAGE_UNKNOWN));
  std::size_t seen = 0;
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, kTimeout, types);
    if (!msg) {
      end.timed_out = true;
      end.error = count ? "fewer tensorinspect reports than asked for within the timeout"
                        : "neither EOS nor an error within the timeout";
      break;
    }
    const GstMessageType type = GST_MESSAGE_TYPE(msg);
    if (type == GST_MESSAGE_EOS) {
      end.eos = true;
    } else if (type == GST_MESSAGE_ERROR) {
      GError *err = nullptr;
      gchar *debug = nullptr;
      gst_message_parse_error(msg, &err, &debug);
      end.error_domain = err->domain;
      end.error = std::string(err->message) + " | " + (debug ? debug : "");
      g_error_free(err);
      g_free(debug);
    } else if (std::optional<InspectReport> report = inspect_report_of(gst_message_get_structure(msg))) {
      reports->push_back(std::move(*report));
      ++seen;
    }
    gst_message_unref(msg);
    if (type != GST_MESSAGE_ELEMENT || (count && seen == count))
      break;
  }
  gst_object_unref(bus);
  return end;
}

/* Waits on `pipeline`'s bus for EOS or an error. */
inline PipelineEnd wait_for_end(GstElement *pipeline) { return wait_for_inspect_reports(pipeline, nullptr); }

/* Runs `description` to EOS or error and sets it back to NULL, checking
 * that the state change back succeeds. `late_caps`, when given, are set on
 * the capsfilter named "cf" after parsing, so that a bad format reaches the
 * elements at run time instead of failing the link in gst_parse_launch.
 * `prepare`, when given, sees the parsed pipeline before it starts (to set a
 * context, or to make an element answer queries). */
inline void run_pipeline(const std::string &description, PipelineRun *run, const char *late_caps = nullptr,
                         const std::function<void(GstElement *pipeline)> &prepare = {}) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    if (pipeline)
      gst_object_unref(pipeline);
    return;
  }
  ASSERT_NE(pipeline, nullptr);
  if (late_caps) {
    GstElement *capsfilter = gst_bin_get_by_name(GST_BIN(pipeline), "cf");
    GstCaps *caps = gst_caps_from_string(late_caps);
    g_object_set(capsfilter, "caps", caps, nullptr);
    gst_caps_unref(caps);
    gst_object_unref(capsfilter);
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement *upload = gst_bin_get_by_name(GST_BIN(pipeline), "up");
  GstElement *download = gst_bin_get_by_name(GST_BIN(pipeline), "down");
  if (prepare)
    prepare(pipeline);

  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  if (sink) {
    // pull-sample blocks until a sample arrives and returns NULL at EOS or on error.
    for (;;) {
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "pull-sample", &sample);
      if (!sample)
        break;
      run->samples.push_back(sample);
    }
  }
  const PipelineEnd end = wait_for_inspect_reports(pipeline, &run->inspected);
  EXPECT_FALSE(end.timed_out) << description << ": " << end.error;
  run->eos = end.eos;
  if (!end.eos && !end.timed_out) {
    run->error_domain = end.error_domain;
    run->error_debug = end.error;
  }
  if (upload)
    run->upload_copied = tmtest::copied_bytes(upload);
  if (download)
    run->download_copied = tmtest::copied_bytes(download);

  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  GstState state = GST_STATE_VOID_PENDING;
  EXPECT_EQ(gst_element_get_state(pipeline, &state, nullptr, 0), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(state, GST_STATE_NULL);
  if (upload)
    gst_object_unref(upload);
  if (download)
    gst_object_unref(download);
  if (sink)
    gst_object_unref(sink);
  release_pipeline(pipeline);
}

/* Open file descriptors of this process. */
inline int fd_count() { return open_fd_count(); }

} // namespace tmtest
