// SPDX-License-Identifier: Apache-2.0
#include "pipeline_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <ostream>
#include <string>
#include <vector>

namespace {

constexpr guint kFrames = 8;

using tmtest::PipelineRun;
using tmtest::element_available;
using tmtest::run_pipeline;

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
