// SPDX-License-Identifier: Apache-2.0
// Real pipelines through tensorupload storage=dmabuf (memfd-backed here, see
// tests/gst/meson.build): bytes, copy counts, memory:DMABuf negotiation,
// storage=auto, strict mode and fd hygiene.
#include "../dma_heap_probe.hpp"
#include "pipeline_util.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/tensormem.h>

#include <ostream>
#include <string>

namespace {

using tmtest::element_available;
using tmtest::PipelineRun;
using tmtest::run_pipeline;

constexpr guint kFrames = 6;

std::string frames() { return "num-buffers=" + std::to_string(kFrames); }

bool caps_have_dmabuf(GstCaps *caps) {
  return gst_caps_features_contains(gst_caps_get_features(caps, 0), GST_CAPS_FEATURE_MEMORY_DMABUF);
}

struct FormatCase {
  const char *name;
  const char *caps;
};

void PrintTo(const FormatCase &c, std::ostream *os) { *os << c.caps; }

class DmaBufPipelines : public ::testing::TestWithParam<FormatCase> {
protected:
  void SetUp() override {
    for (const char *element : {"videotestsrc", "appsink"}) {
      if (!element_available(element))
        GTEST_SKIP() << element << " is not installed (gstreamer1.0-plugins-base)";
    }
  }
  std::string source(const char *pattern = "smpte") const {
    return "videotestsrc " + frames() + " pattern=" + pattern + " ! " + GetParam().caps;
  }
};

TEST_P(DmaBufPipelines, BytesEqualThePlainPipelineWithZeroCopies) {
  PipelineRun plain, ours;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source() + " ! appsink name=sink sync=false", &plain));
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source() + " ! tensorupload name=up storage=dmabuf require-zero-copy=true"
                                                  " ! tensordownload ! appsink name=sink sync=false caps=video/x-raw",
                                       &ours));
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_EQ(plain.samples.size(), kFrames);
  ASSERT_EQ(ours.samples.size(), kFrames);
  EXPECT_EQ(ours.upload_copied, 0u) << "videotestsrc writes into the offered DMA-BUF pool";
  GstVideoInfo info = tmtest::info_from_string(GetParam().caps);
  for (guint i = 0; i < kFrames; ++i) {
    EXPECT_FALSE(caps_have_dmabuf(gst_sample_get_caps(ours.samples[i])));
    EXPECT_TRUE(
        tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), gst_sample_get_buffer(ours.samples[i]), &info))
        << "frame " << i;
  }
}

TEST_P(DmaBufPipelines, DownstreamTakingMemoryDmaBufGetsDmaBufCapsAndOurMemory) {
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source() + " ! tensorupload name=up storage=dmabuf require-zero-copy=true"
                                                  " ! appsink name=sink sync=false caps=video/x-raw(memory:DMABuf)",
                                       &run));
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), kFrames);
  for (GstSample *sample : run.samples) {
    EXPECT_TRUE(caps_have_dmabuf(gst_sample_get_caps(sample)));
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
    EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(gst_buffer_peek_memory(buffer, 0)));
    ASSERT_NE(gst_buffer_get_video_meta(buffer), nullptr);
    EXPECT_EQ(gst_buffer_get_video_meta(buffer)->stride[0] % 64, 0);
  }
}

TEST_P(DmaBufPipelines, DownstreamWithoutMemoryDmaBufGetsPlainCapsOverTheSameMemory) {
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source() + " ! tensorupload name=up storage=dmabuf"
                                                  " ! appsink name=sink sync=false caps=video/x-raw",
                                       &run));
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), kFrames);
  EXPECT_EQ(run.upload_copied, 0u);
  for (GstSample *sample : run.samples) {
    EXPECT_FALSE(caps_have_dmabuf(gst_sample_get_caps(sample)));
    EXPECT_TRUE(gst_is_dmabuf_memory(gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0)));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, DmaBufPipelines,
                         ::testing::Values(FormatCase{"Rgba320x240", "video/x-raw,format=RGBA,width=320,height=240"},
                                           FormatCase{"Nv12_640x480", "video/x-raw,format=NV12,width=640,height=480"},
                                           FormatCase{"Rgba321x17", "video/x-raw,format=RGBA,width=321,height=17"},
                                           FormatCase{"Nv12_321x17", "video/x-raw,format=NV12,width=321,height=17"}),
                         [](const ::testing::TestParamInfo<FormatCase> &info) { return std::string(info.param.name); });

TEST(DmaBufPipeline, JpegDecoderWritesIntoOurPoolWithZeroCopies) {
  for (const char *element : {"videotestsrc", "jpegenc", "jpegdec", "appsink"}) {
    if (!element_available(element))
      GTEST_SKIP() << element << " is not installed (jpegenc/jpegdec: gstreamer1.0-plugins-good)";
  }
  /* Sizes whose rows jpegdec decodes directly into the output frame. For
   * other sizes (e.g. 321x17) jpegdec 1.22 takes its "indirect" path, which
   * copies GST_VIDEO_FRAME_COMP_STRIDE bytes per row out of scratch lines
   * allocated ROUND_UP_32(width) wide: with our 64-byte aligned strides
   * (384 for width 321) that reads past its own scratch buffer (an upstream
   * bug that ASan reports inside libgstjpeg), so those sizes are not run. */
  for (const char *caps :
       {"video/x-raw,format=I420,width=320,height=240", "video/x-raw,format=I420,width=640,height=480"}) {
    PipelineRun run;
    ASSERT_NO_FATAL_FAILURE(run_pipeline("videotestsrc " + frames() + " ! " + caps +
                                             " ! jpegenc ! jpegdec ! tensorupload name=up storage=dmabuf"
                                             " ! appsink name=sink sync=false caps=video/x-raw(memory:DMABuf)",
                                         &run));
    ASSERT_TRUE(run.eos) << caps << ": " << run.error_debug;
    ASSERT_EQ(run.samples.size(), kFrames) << caps;
    /* jpegdec is a GstVideoDecoder: it takes the pool tensorupload proposes
     * (a DMA-BUF GstTensorMemBufferPool with GstVideoMeta) in decide_allocation
     * and allocates every output frame from it, so nothing is copied. */
    EXPECT_EQ(run.upload_copied, 0u) << caps;
    for (GstSample *sample : run.samples)
      EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0))) << caps;
  }
}

TEST(DmaBufPipeline, SystemMemoryInputIsCopiedOnceOrRefusedInStrictMode) {
  for (const char *element : {"videotestsrc", "identity", "appsink"}) {
    if (!element_available(element))
      GTEST_SKIP() << element << " is not installed";
  }
  // identity drop-allocation=true hides our pool from videotestsrc: its buffers are plain system memory.
  const std::string source =
      "videotestsrc " + frames() + " ! video/x-raw,format=NV12,width=321,height=17 ! identity drop-allocation=true";
  const GstVideoInfo info = tmtest::info_from_string("video/x-raw,format=NV12,width=321,height=17");
  PipelineRun copied;
  ASSERT_NO_FATAL_FAILURE(
      run_pipeline(source + " ! tensorupload name=up storage=dmabuf ! appsink name=sink sync=false", &copied));
  ASSERT_TRUE(copied.eos) << copied.error_debug;
  EXPECT_EQ(copied.upload_copied, kFrames * GST_VIDEO_INFO_SIZE(&info));
  for (GstSample *sample : copied.samples)
    EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0)));

  PipelineRun strict;
  ASSERT_NO_FATAL_FAILURE(
      run_pipeline(source + " ! tensorupload name=up storage=dmabuf require-zero-copy=true ! fakesink", &strict));
  EXPECT_FALSE(strict.eos);
  EXPECT_EQ(strict.error_domain, GST_STREAM_ERROR);
  EXPECT_NE(strict.error_debug.find("require-zero-copy=true forbids it"), std::string::npos) << strict.error_debug;
  EXPECT_EQ(strict.upload_copied, 0u);
}

TEST(DmaBufPipeline, StorageAutoPicksWhatTheMachineHas) {
  if (!element_available("videotestsrc") || !element_available("appsink"))
    GTEST_SKIP() << "videotestsrc/appsink not installed";
  const GstTensorMemStorage expected = gst_tensor_mem_storage_resolve(GST_TENSOR_MEM_STORAGE_AUTO);
  const tmtest::DmaHeapProbe heap = tmtest::probe_dma_heap();
  EXPECT_EQ(expected, heap.present() ? GST_TENSOR_MEM_STORAGE_DMABUF : GST_TENSOR_MEM_STORAGE_SYSTEM)
      << (heap.present() ? heap.node : heap.why);
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline("videotestsrc " + frames() +
                                           " ! video/x-raw,format=RGBA,width=64,height=48"
                                           " ! tensorupload name=up storage=auto ! appsink name=sink sync=false",
                                       &run));
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), static_cast<size_t>(kFrames));
  for (GstSample *sample : run.samples) {
    GstMemory *mem = gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0);
    ASSERT_TRUE(gst_is_tensor_mem_memory(mem));
    EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), expected);
    EXPECT_EQ(caps_have_dmabuf(gst_sample_get_caps(sample)), expected == GST_TENSOR_MEM_STORAGE_DMABUF);
  }
}

TEST(DmaBufPipeline, RunsLeaveNoFdBehindAndReturnToNull) {
  if (!element_available("videotestsrc"))
    GTEST_SKIP() << "videotestsrc not installed";
  const std::string description = "videotestsrc " + frames() +
                                  " ! video/x-raw,format=NV12,width=640,height=480"
                                  " ! tensorupload name=up storage=dmabuf ! tensordownload ! fakesink";
  PipelineRun warmup; // first run: GLib's and GStreamer's lazily created fds
  ASSERT_NO_FATAL_FAILURE(run_pipeline(description, &warmup));
  ASSERT_TRUE(warmup.eos) << warmup.error_debug;
  const int before = tmtest::fd_count();
  for (int i = 0; i < 3; ++i) {
    PipelineRun run;
    ASSERT_NO_FATAL_FAILURE(run_pipeline(description, &run));
    ASSERT_TRUE(run.eos) << run.error_debug;
  }
  EXPECT_EQ(tmtest::fd_count(), before);
}

} // namespace
