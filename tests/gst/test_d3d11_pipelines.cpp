// SPDX-License-Identifier: Apache-2.0
// tensorupload storage=d3d11 ! tensordownload gives the bytes of the same
// pipeline without our elements, for every texture layout the pool makes
// (padded staging pitches, the combined NV12 plane, odd sizes), without a
// copy when videotestsrc writes into the offered pool; every buffer carries
// the D3D11 fence of its write. Runs on the software reference device.
#include "pipeline_util.hpp"

#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensorfencemeta.h>

#include <string>
#include <vector>

namespace {

// Runs before main, so before gst_init and any D3D11 use.
const bool g_software_device = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

constexpr guint kFrames = 3;

struct D3d11Case {
  const char *name;
  const char *caps;
  const char *pattern;
};

void PrintTo(const D3d11Case &c, std::ostream *os) { *os << c.name << " (" << c.caps << ")"; }

/* Counts, at tensorupload's source pad, the buffers whose memory is D3D11
 * texture memory and carries a D3D11 fence meta. */
struct UploadProbe {
  int d3d11_buffers = 0;
  int fenced_buffers = 0;
  int other_buffers = 0;
};

GstPadProbeReturn count_upload_output(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *probe = static_cast<UploadProbe *>(user_data);
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  if (gst_buffer_n_memory(buffer) == 1 && gst_is_tensor_mem_d3d11_memory(gst_buffer_peek_memory(buffer, 0)))
    probe->d3d11_buffers++;
  else
    probe->other_buffers++;
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(buffer);
  if (meta && meta->kind == GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE)
    probe->fenced_buffers++;
  return GST_PAD_PROBE_OK;
}

std::function<void(GstElement *)> probe_upload(UploadProbe *probe) {
  return [probe](GstElement *pipeline) {
    GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
    ASSERT_NE(up, nullptr);
    GstPad *src = gst_element_get_static_pad(up, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_upload_output, probe, nullptr);
    gst_object_unref(src);
    gst_object_unref(up);
  };
}

class D3d11Pipelines : public ::testing::TestWithParam<D3d11Case> {
protected:
  void SetUp() override { ASSERT_TRUE(g_software_device); }

  std::string source() const {
    return "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=" + GetParam().pattern + " ! " +
           GetParam().caps;
  }
  static std::string sink() { return " ! appsink name=sink sync=false"; }

  /* The plain pipeline and ours (with `middle` between upload and download)
   * give the same frames; `probe` counted what left tensorupload. */
  void expect_same_frames(const std::string &middle, UploadProbe *probe, tmtest::PipelineRun *ours) {
    tmtest::PipelineRun plain;
    ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(source() + sink(), &plain));
    ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(source() +
                                                     " ! tensorupload name=up storage=d3d11 require-zero-copy=true" +
                                                     middle + " ! tensordownload name=down" + sink(),
                                                 ours, nullptr, probe_upload(probe)));
    ASSERT_TRUE(plain.eos) << plain.error_debug;
    ASSERT_TRUE(ours->eos) << ours->error_debug;
    ASSERT_EQ(plain.samples.size(), kFrames);
    ASSERT_EQ(ours->samples.size(), kFrames);
    GstVideoInfo info = tmtest::info_from_string(GetParam().caps);
    for (guint i = 0; i < kFrames; ++i)
      EXPECT_TRUE(
          tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), gst_sample_get_buffer(ours->samples[i]), &info))
          << "frame " << i;
  }
};

} // namespace

TEST_P(D3d11Pipelines, BytesMatchThePlainPipelineWithoutAnUploadCopyAndEveryWriteIsFenced) {
  UploadProbe probe;
  tmtest::PipelineRun ours;
  ASSERT_NO_FATAL_FAILURE(expect_same_frames("", &probe, &ours));
  EXPECT_EQ(ours.upload_copied, 0u) << "videotestsrc wrote straight into the offered texture pool";
  EXPECT_EQ(probe.d3d11_buffers, static_cast<int>(kFrames)) << "every buffer leaving tensorupload is a texture";
  EXPECT_EQ(probe.other_buffers, 0);
  EXPECT_EQ(probe.fenced_buffers, static_cast<int>(kFrames)) << "every write carries its D3D11 fence";
}

TEST_P(D3d11Pipelines, TensorsyncWaitsTheD3d11FenceAndTheBytesStayTheSame) {
  UploadProbe probe;
  tmtest::PipelineRun ours;
  ASSERT_NO_FATAL_FAILURE(expect_same_frames(" ! tensorsync", &probe, &ours));
  EXPECT_EQ(probe.fenced_buffers, static_cast<int>(kFrames));
}

INSTANTIATE_TEST_SUITE_P(
    Formats, D3d11Pipelines,
    ::testing::Values(D3d11Case{"Rgba64x48", "video/x-raw,format=RGBA,width=64,height=48", "smpte"},
                      D3d11Case{"Bgra33x17", "video/x-raw,format=BGRA,width=33,height=17", "ball"},
                      D3d11Case{"Gray8_321x241", "video/x-raw,format=GRAY8,width=321,height=241", "smpte"},
                      D3d11Case{"Nv12_64x48", "video/x-raw,format=NV12,width=64,height=48", "ball"},
                      D3d11Case{"Nv12_321x241", "video/x-raw,format=NV12,width=321,height=241", "smpte"},
                      D3d11Case{"Rgba1x1", "video/x-raw,format=RGBA,width=1,height=1", "smpte"},
                      D3d11Case{"Gray8_641x3", "video/x-raw,format=GRAY8,width=641,height=3", "snow"}),
    [](const ::testing::TestParamInfo<D3d11Case> &info) { return std::string(info.param.name); });

/* A producer that does not take the offered pool (identity drops the
 * allocation query) is copied once into a texture, counted. */
TEST(D3d11Pipeline, InputOutsideTheOfferedPoolIsCopiedOnceIntoATexture) {
  ASSERT_TRUE(g_software_device);
  const char *caps = "video/x-raw,format=NV12,width=65,height=33";
  tmtest::PipelineRun plain, ours;
  const std::string src = std::string("videotestsrc num-buffers=2 ! ") + caps;
  ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(src + " ! appsink name=sink sync=false", &plain));
  ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(src + " ! identity drop-allocation=true ! tensorupload name=up "
                                                     "storage=d3d11 ! tensordownload name=down ! appsink name=sink "
                                                     "sync=false",
                                               &ours));
  ASSERT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_EQ(ours.samples.size(), 2u);
  GstVideoInfo info = tmtest::info_from_string(caps);
  EXPECT_EQ(ours.upload_copied, 2 * GST_VIDEO_INFO_SIZE(&info));
  for (guint i = 0; i < 2; ++i)
    EXPECT_TRUE(
        tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), gst_sample_get_buffer(ours.samples[i]), &info));
}

/* tensorinspect reads D3D11 memory like any tensor memory: it names the
 * D3D11 fence of each write, and its checksum is the plain pipeline's where
 * the layouts agree (64 RGBA pixels fill a 256-byte pitch). tensorcudaimport
 * in a process without CUDA passes the textures on unchanged. */
TEST(D3d11Pipeline, TensorinspectNamesTheD3d11FenceAndTensorcudaimportPassesTexturesOn) {
  ASSERT_TRUE(g_software_device);
  const std::string src = "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=4 ! ";
  tmtest::PipelineRun plain, ours;
  ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(src + "tensorupload storage=system ! tensorinspect ! fakesink", &plain));
  ASSERT_NO_FATAL_FAILURE(tmtest::run_pipeline(src + "tensorupload storage=d3d11 ! tensorcudaimport ! tensorinspect ! "
                                                     "tensordownload ! fakesink",
                                               &ours));
  EXPECT_TRUE(plain.eos) << plain.error_debug;
  EXPECT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_EQ(ours.inspected.size(), 2u);
  ASSERT_EQ(plain.inspected.size(), 2u);
  for (std::size_t i = 0; i < ours.inspected.size(); ++i) {
    const tmtest::InspectReport &report = ours.inspected[i];
    EXPECT_EQ(report.fence.rfind("d3d11:", 0), 0u) << "frame " << i << ": " << report.fence;
    EXPECT_FALSE(report.checksum.empty()) << "frame " << i << ": no checksum";
    EXPECT_EQ(report.checksum, plain.inspected[i].checksum) << "frame " << i;
  }
  EXPECT_NE(ours.inspected[0].fence, ours.inspected[1].fence) << "each write has its own fence value";
}
