// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <ostream>
#include <string>
#include <vector>

namespace {

constexpr guint kFrames = 8;
constexpr GstClockTime kTimeout = 20 * GST_SECOND;

/* What a pipeline run produced: every sample from the appsink named "sink",
 * the bus outcome and tensorupload's copy count (when there is one). */
struct PipelineRun {
  std::vector<GstSample *> samples;
  bool eos = false;
  std::string error_debug;
  GQuark error_domain = 0;
  guint64 upload_copied = 0;

  PipelineRun() = default;
  PipelineRun(const PipelineRun &) = delete;
  PipelineRun &operator=(const PipelineRun &) = delete;
  ~PipelineRun() {
    for (GstSample *s : samples)
      gst_sample_unref(s);
  }
};

bool element_available(const char *name) {
  GstElementFactory *factory = gst_element_factory_find(name);
  if (!factory)
    return false;
  gst_object_unref(factory);
  return true;
}

/* Runs `description` to EOS or error and sets it back to NULL, checking
 * that the state change back succeeds. `late_caps`, when given, are set on
 * the capsfilter named "cf" after parsing, so that a bad format reaches the
 * elements at run time instead of failing the link in gst_parse_launch. */
void run_pipeline(const std::string &description, PipelineRun *run, const char *late_caps = nullptr) {
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

  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  GstBus *bus = gst_element_get_bus(pipeline);
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
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, kTimeout, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  EXPECT_NE(msg, nullptr) << description << ": neither EOS nor an error within the timeout";
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
    run->eos = true;
  } else if (msg) {
    GError *err = nullptr;
    gchar *debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    run->error_domain = err->domain;
    run->error_debug = std::string(err->message) + " | " + (debug ? debug : "");
    g_error_free(err);
    g_free(debug);
  }
  if (msg)
    gst_message_unref(msg);
  if (upload)
    run->upload_copied = tmtest::copied_bytes(upload);

  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  GstState state = GST_STATE_VOID_PENDING;
  EXPECT_EQ(gst_element_get_state(pipeline, &state, nullptr, 0), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(state, GST_STATE_NULL);
  gst_object_unref(bus);
  if (upload)
    gst_object_unref(upload);
  if (sink)
    gst_object_unref(sink);
  gst_object_unref(pipeline);
}

bool has_default_layout(GstBuffer *buffer, const GstVideoInfo *info) {
  if (gst_buffer_get_size(buffer) < GST_VIDEO_INFO_SIZE(info))
    return false;
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  if (!meta)
    return true;
  for (guint p = 0; p < meta->n_planes; ++p) {
    if (meta->stride[p] != GST_VIDEO_INFO_PLANE_STRIDE(info, p) || meta->offset[p] != GST_VIDEO_INFO_PLANE_OFFSET(info, p))
      return false;
  }
  return true;
}

struct PipelineCase {
  const char *name;
  const char *caps;
  const char *pattern;
};

void PrintTo(const PipelineCase &c, std::ostream *os) { *os << c.name << " (" << c.caps << ")"; }

class Pipelines : public ::testing::TestWithParam<PipelineCase> {
protected:
  void SetUp() override {
    for (const char *element : {"videotestsrc", "appsink"}) {
      if (!element_available(element))
        GTEST_SKIP() << element << " is not installed (gstreamer1.0-plugins-base)";
    }
  }

  std::string source() const {
    return "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=" + GetParam().pattern + " ! " +
           GetParam().caps;
  }
  static std::string sink() { return " ! appsink name=sink sync=false"; }

  void expect_same_frames_as_plain(const char *upload_props) {
    PipelineRun plain, ours;
    ASSERT_NO_FATAL_FAILURE(run_pipeline(source() + sink(), &plain));
    ASSERT_NO_FATAL_FAILURE(
        run_pipeline(source() + " ! tensorupload name=up " + upload_props + " ! tensordownload" + sink(), &ours));
    ASSERT_TRUE(plain.eos) << plain.error_debug;
    ASSERT_TRUE(ours.eos) << ours.error_debug;
    ASSERT_EQ(plain.samples.size(), kFrames);
    ASSERT_EQ(ours.samples.size(), kFrames);
    EXPECT_EQ(ours.upload_copied, 0u) << "videotestsrc should have written into the tensor pool";

    GstVideoInfo info = tmtest::info_from_string(GetParam().caps);
    for (guint i = 0; i < kFrames; ++i) {
      GstVideoInfo sample_info;
      ASSERT_TRUE(gst_video_info_from_caps(&sample_info, gst_sample_get_caps(ours.samples[i])));
      ASSERT_TRUE(gst_video_info_is_equal(&sample_info, &info) ||
                  (sample_info.width == info.width && sample_info.height == info.height &&
                   sample_info.finfo == info.finfo));
      GstBuffer *out = gst_sample_get_buffer(ours.samples[i]);
      EXPECT_TRUE(tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), out, &info)) << "frame " << i;
      // appsink does not read GstVideoMeta, so what reaches it must be in the default layout.
      EXPECT_TRUE(has_default_layout(out, &info)) << "frame " << i;
    }
  }
};

TEST_P(Pipelines, UploadDownloadKeepsEveryFrameWithoutUploadCopies) { expect_same_frames_as_plain(""); }

TEST_P(Pipelines, RequireZeroCopyUploadRunsToEos) { expect_same_frames_as_plain("require-zero-copy=true"); }

INSTANTIATE_TEST_SUITE_P(
    Formats, Pipelines,
    ::testing::Values(PipelineCase{"Rgba320x240", "video/x-raw,format=RGBA,width=320,height=240", "smpte"},
                      PipelineCase{"Nv12_320x240", "video/x-raw,format=NV12,width=320,height=240", "ball"},
                      PipelineCase{"Rgba321x17", "video/x-raw,format=RGBA,width=321,height=17", "smpte"},
                      PipelineCase{"Nv12_321x17", "video/x-raw,format=NV12,width=321,height=17", "ball"}),
    [](const ::testing::TestParamInfo<PipelineCase> &info) { return std::string(info.param.name); });

class NegotiationFailure : public ::testing::TestWithParam<const char *> {};

TEST_P(NegotiationFailure, UnsupportedFormatFailsNegotiationAndPipelineReturnsToNull) {
  if (!element_available("videotestsrc"))
    GTEST_SKIP() << "videotestsrc is not installed (gstreamer1.0-plugins-base)";
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(std::string("videotestsrc num-buffers=3 ! capsfilter name=cf ! ") + GetParam() +
                                           " ! fakesink",
                                       &run, "video/x-raw,format=UYVY,width=64,height=48"));
  EXPECT_FALSE(run.eos);
  EXPECT_EQ(run.error_domain, GST_STREAM_ERROR);
  EXPECT_NE(run.error_debug.find("not-negotiated"), std::string::npos) << run.error_debug;
}

TEST_P(NegotiationFailure, UnsupportedFormatFailsTheLinkInParseLaunch) {
  if (!element_available("videotestsrc"))
    GTEST_SKIP() << "videotestsrc is not installed (gstreamer1.0-plugins-base)";
  for (const char *caps : {"video/x-raw,format=UYVY,width=64,height=48", "video/x-bayer,format=bggr,width=64,height=48"}) {
    const std::string description =
        std::string("videotestsrc num-buffers=3 ! ") + caps + " ! " + GetParam() + " ! fakesink";
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
    ASSERT_NE(error, nullptr) << description;
    EXPECT_TRUE(g_error_matches(error, GST_PARSE_ERROR, GST_PARSE_ERROR_LINK)) << error->message;
    g_error_free(error);
    if (pipeline) {
      EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
      gst_object_unref(pipeline);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Elements, NegotiationFailure, ::testing::Values("tensorupload", "tensordownload"));

} // namespace
