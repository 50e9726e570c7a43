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
  if (gst_buffer_n_memory(buffer) == 1 && gst_is_tensor_d3d11_memory(gst_buffer_peek_memory(buffer, 0)))
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
  auto reports = [](const std::string &description, std::vector<std::string> *fences,
                    std::vector<std::string> *checksums) {
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
    ASSERT_EQ(error, nullptr) << description << ": " << (error ? error->message : "");
    GstBus *bus = gst_element_get_bus(pipeline);
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    for (;;) {
      GstMessage *msg = gst_bus_timed_pop_filtered(
          bus, tmtest::kTimeout,
          static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT));
      ASSERT_NE(msg, nullptr) << "timed out: " << description;
      const GstMessageType type = GST_MESSAGE_TYPE(msg);
      if (type == GST_MESSAGE_ELEMENT) {
        const GstStructure *s = gst_message_get_structure(msg);
        if (gst_structure_has_name(s, "tensorinspect")) {
          const gchar *fence = gst_structure_get_string(s, "fence");
          const gchar *checksum = gst_structure_get_string(s, "checksum");
          fences->push_back(fence ? fence : "");
          checksums->push_back(checksum ? checksum : "");
        }
      }
      gst_message_unref(msg);
      if (type == GST_MESSAGE_ERROR) {
        ADD_FAILURE() << "error from " << description;
        break;
      }
      if (type == GST_MESSAGE_EOS)
        break;
    }
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref(bus);
    tmtest::release_pipeline(pipeline);
  };
  const std::string src = "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=4 ! ";
  std::vector<std::string> plain_fences, plain_sums, fences, sums;
  ASSERT_NO_FATAL_FAILURE(
      reports(src + "tensorupload storage=system ! tensorinspect ! fakesink", &plain_fences, &plain_sums));
  ASSERT_NO_FATAL_FAILURE(reports(src + "tensorupload storage=d3d11 ! tensorcudaimport ! tensorinspect ! "
                                        "tensordownload ! fakesink",
                                  &fences, &sums));
  ASSERT_EQ(fences.size(), 2u);
  ASSERT_EQ(plain_sums.size(), 2u);
  for (std::size_t i = 0; i < fences.size(); ++i) {
    EXPECT_EQ(fences[i].rfind("d3d11:", 0), 0u) << "frame " << i << ": " << fences[i];
    EXPECT_FALSE(sums[i].empty()) << "frame " << i << ": no checksum";
    EXPECT_EQ(sums[i], plain_sums[i]) << "frame " << i;
  }
  EXPECT_NE(fences[0], fences[1]) << "each write has its own fence value";
}
