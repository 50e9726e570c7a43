// SPDX-License-Identifier: Apache-2.0
/* DMA_DRM caps (GStreamer 1.24 and later): `video/x-raw(memory:DMABuf),
 * format=DMA_DRM, drm-format=FOURCC[:MODIFIER]`, the way VA and V4L2
 * decoders and glupload negotiate DMA-BUFs. Linear frames pass our DMA-BUF
 * pads with no copy and byte-exact; a tiled modifier is refused by name.
 * The producer is appsrc over memfd DMA-BUFs (no hardware here). Built where
 * GStreamer has DMA_DRM caps (the Debian 13 leg of scripts/test.sh). */
#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/app/gstappsrc.h>
#include <gst/tensormem/tensormem.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

constexpr int kFrames = 3;
constexpr guint kWidth = 321; // rows of 1284 bytes, padded to 1344 below
constexpr guint kHeight = 17;
constexpr guint kStride = 1344;

std::string drm_caps(const char *drm_format) {
  return "video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=" + std::string(drm_format) +
         ",width=" + std::to_string(kWidth) + ",height=" + std::to_string(kHeight) + ",framerate=30/1";
}

/* The visible bytes of an RGBA frame, row after row. */
std::vector<guint8> visible_rows(GstBuffer *buffer, const GstVideoInfo *info) {
  GstVideoFrame frame;
  std::vector<guint8> rows;
  if (!gst_video_frame_map(&frame, const_cast<GstVideoInfo *>(info), buffer, GST_MAP_READ))
    return rows;
  const auto *data = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  for (guint y = 0; y < kHeight; ++y)
    rows.insert(rows.end(), data + y * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0),
                data + y * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0) + kWidth * 4);
  gst_video_frame_unmap(&frame);
  return rows;
}

/* Frames a DMA-BUF producer outside GStreamer's pools would hand over: one
 * memfd each (a GstDmaBufAllocator memory), rows of kStride bytes described
 * by a GstVideoMeta, filled with a pattern per seed. */
class DmaDrmProducer {
public:
  DmaDrmProducer() : allocator_(gst_dmabuf_allocator_new()) {
    gst_video_info_set_format(&info_, GST_VIDEO_FORMAT_RGBA, kWidth, kHeight);
  }
  ~DmaDrmProducer() { gst_object_unref(allocator_); }
  DmaDrmProducer(const DmaDrmProducer &) = delete;
  DmaDrmProducer &operator=(const DmaDrmProducer &) = delete;

  GstBuffer *frame(guint seed) {
    const gsize size = static_cast<gsize>(kStride) * kHeight;
    const int fd = memfd_create("dma-drm-frame", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    GstBuffer *buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, gst_dmabuf_allocator_alloc(allocator_, fd, size));
    gsize offsets[GST_VIDEO_MAX_PLANES] = {0};
    gint strides[GST_VIDEO_MAX_PLANES] = {static_cast<gint>(kStride)};
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGBA, kWidth, kHeight, 1,
                                   offsets, strides);
    GstVideoInfo padded = info_;
    padded.stride[0] = static_cast<gint>(kStride);
    padded.size = size;
    tmtest::fill_frame(buffer, &padded, seed);
    expected_.push_back(visible_rows(buffer, &padded));
    GST_BUFFER_PTS(buffer) = seed * GST_SECOND / 30;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    return buffer;
  }

  /* Pushes kFrames frames and EOS into the appsrc named "src". */
  void feed(GstElement *pipeline) {
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    ASSERT_NE(src, nullptr);
    for (int i = 0; i < kFrames; ++i)
      ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), frame(static_cast<guint>(i + 1))), GST_FLOW_OK);
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    gst_object_unref(src);
  }

  const std::vector<std::vector<guint8>> &expected() const { return expected_; }
  const GstVideoInfo *info() const { return &info_; }

private:
  GstAllocator *allocator_;
  GstVideoInfo info_;
  std::vector<std::vector<guint8>> expected_;
};

std::string appsrc(const std::string &caps) { return "appsrc name=src format=time caps=\"" + caps + "\" ! "; }

bool all_dmabuf(GstBuffer *buffer) {
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
    if (!gst_is_dmabuf_memory(gst_buffer_peek_memory(buffer, i)))
      return false;
  return gst_buffer_n_memory(buffer) > 0;
}

GstCaps *sample_caps(GstSample *sample) { return gst_sample_get_caps(sample); }

} // namespace

/* The case: a linear AB24 (RGBA) DMA_DRM stream through
 * tensorupload storage=dmabuf require-zero-copy=true ! tensordownload,
 * byte-exact, no byte copied on the way in. */
TEST(DmaDrm, LinearFramesImportWithoutACopyAndArriveByteExact) {
  DmaDrmProducer producer;
  tmtest::PipelineRun run;
  tmtest::run_pipeline(appsrc(drm_caps("AB24")) +
                           "tensorupload name=up storage=dmabuf require-zero-copy=true ! tensordownload name=down ! "
                           "video/x-raw,format=RGBA ! appsink name=sink sync=false",
                       &run, nullptr, [&](GstElement *pipeline) { producer.feed(pipeline); });
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(run.upload_copied, 0u);
  for (int i = 0; i < kFrames; ++i) {
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, sample_caps(run.samples[i])));
    EXPECT_EQ(visible_rows(gst_sample_get_buffer(run.samples[i]), &info), producer.expected()[i]) << "frame " << i;
  }
}

/* Our DMA-BUF output speaks DMA_DRM to a consumer that takes nothing else,
 * and the frames stay DMA-BUFs down to it. */
TEST(DmaDrm, DmaBufOutputNegotiatesDmaDrmWithALinearModifier) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=64,height=48 ! "
                       "tensorupload name=up storage=dmabuf ! video/x-raw(memory:DMABuf),format=DMA_DRM ! "
                       "appsink name=sink sync=false",
                       &run);
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 3u);
  const GstStructure *s = gst_caps_get_structure(sample_caps(run.samples[0]), 0);
  EXPECT_STREQ(gst_structure_get_string(s, "format"), "DMA_DRM");
  EXPECT_STREQ(gst_structure_get_string(s, "drm-format"), "AB24");
  for (GstSample *sample : run.samples)
    EXPECT_TRUE(all_dmabuf(gst_sample_get_buffer(sample)));
}

/* The same frames through tensordownload's DMA-BUF pass-through (DMA_DRM on
 * both its pads) and tensorinspect: the checksums equal those of the plain
 * system-memory frames. */
TEST(DmaDrm, DownloadPassThroughAndInspectKeepDmaDrm) {
  tmtest::PipelineRun drm, plain;
  const std::string source = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! ";
  tmtest::run_pipeline(source + "tensorupload storage=dmabuf ! video/x-raw(memory:DMABuf),format=DMA_DRM ! "
                                "tensordownload name=down ! video/x-raw(memory:DMABuf),format=DMA_DRM ! "
                                "tensorinspect ! appsink name=sink sync=false",
                       &drm);
  tmtest::run_pipeline(source + "tensorinspect ! fakesink", &plain);
  ASSERT_TRUE(drm.eos) << drm.error_debug;
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  EXPECT_EQ(drm.download_copied, 0u);
  ASSERT_EQ(drm.inspected.size(), 3u);
  ASSERT_EQ(plain.inspected.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(drm.inspected[i].checksum, plain.inspected[i].checksum) << "frame " << i;
  for (GstSample *sample : drm.samples)
    EXPECT_TRUE(all_dmabuf(gst_sample_get_buffer(sample)));
}

/* tensorconvert reads a linear DMA_DRM frame in place: the tensor equals the
 * one made from the same pixels in system memory. */
TEST(DmaDrm, ConvertReadsLinearDmaDrmFrames) {
  tmtest::PipelineRun drm, plain;
  const std::string source = "videotestsrc num-buffers=2 pattern=smpte ! video/x-raw,format=RGBA,width=64,height=48 ! ";
  const std::string convert = "tensorconvert width=32 height=32 layout=nchw ! appsink name=sink sync=false";
  tmtest::run_pipeline(source + "tensorupload storage=dmabuf ! video/x-raw(memory:DMABuf),format=DMA_DRM ! " + convert,
                       &drm);
  tmtest::run_pipeline(source + convert, &plain);
  ASSERT_TRUE(drm.eos) << drm.error_debug;
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_EQ(drm.samples.size(), 2u);
  ASSERT_EQ(plain.samples.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    GstBuffer *a = gst_sample_get_buffer(drm.samples[i]);
    GstBuffer *b = gst_sample_get_buffer(plain.samples[i]);
    ASSERT_EQ(gst_buffer_get_size(a), gst_buffer_get_size(b));
    std::vector<guint8> x(gst_buffer_get_size(a)), y(gst_buffer_get_size(b));
    gst_buffer_extract(a, 0, x.data(), x.size());
    gst_buffer_extract(b, 0, y.data(), y.size());
    EXPECT_EQ(x, y) << "tensor " << i;
  }
}

/* A tiled modifier (I915_FORMAT_MOD_X_TILED here) is never read as rows:
 * an element error names the modifier and the linear drm-format it could
 * take, and the pipeline goes back to NULL. */
TEST(DmaDrm, TiledModifierIsRefusedByName) {
  for (const char *element : {"tensorupload storage=dmabuf", "tensordownload", "tensorinspect", "tensorconvert"}) {
    DmaDrmProducer producer;
    tmtest::PipelineRun run;
    tmtest::run_pipeline(appsrc(drm_caps("AB24:0x0100000000000001")) + element + " ! fakesink", &run, nullptr,
                         [&](GstElement *pipeline) { producer.feed(pipeline); });
    EXPECT_FALSE(run.eos) << element;
    EXPECT_NE(run.error_debug.find("0x0100000000000001"), std::string::npos) << element << ": " << run.error_debug;
    EXPECT_NE(run.error_debug.find("not linear"), std::string::npos) << element << ": " << run.error_debug;
    EXPECT_NE(run.error_debug.find("drm-format = AB24 "), std::string::npos) << element << ": " << run.error_debug;
  }
}

/* The library call behind every set_caps, directly. */
TEST(DmaDrm, VideoInfoFromCapsReadsLinearAndNamesWhatItRefuses) {
  struct Case {
    const char *caps;
    const char *names; // in the error; NULL: accepted
  };
  const Case cases[] = {
      {"video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=NV12,width=64,height=48", nullptr},
      {"video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=NV12:0x0100000000000002,width=64,height=48",
       "0x0100000000000002"},
      {"video/x-raw(memory:DMABuf),format=DMA_DRM,width=64,height=48", "without a drm-format"},
      {"video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=ZZZZ,width=64,height=48", "ZZZZ"},
      {"video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=AB24,width=0,height=48", "width = 0"},
  };
  for (const Case &c : cases) {
    GstCaps *caps = gst_caps_from_string(c.caps);
    ASSERT_NE(caps, nullptr) << c.caps;
    GstVideoInfo info;
    GError *error = nullptr;
    const gboolean ok = gst_tensor_mem_video_info_from_caps(&info, caps, &error);
    if (!c.names) {
      EXPECT_TRUE(ok) << c.caps << ": " << (error ? error->message : "");
      EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_NV12);
      EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&info), 64);
    } else {
      EXPECT_FALSE(ok) << c.caps;
      ASSERT_NE(error, nullptr) << c.caps;
      EXPECT_NE(std::string(error->message).find(c.names), std::string::npos) << error->message;
    }
    g_clear_error(&error);
    gst_caps_unref(caps);
  }
}

/* What tensorupload asks of a DMA_DRM producer upstream (a decoder choosing
 * its modifier from this answer): linear drm-formats only, one per format
 * with a DRM fourcc, AB24 among them. */
TEST(DmaDrm, UploadAsksUpstreamForLinearModifiersOnly) {
  GstElement *upload = gst_element_factory_make("tensorupload", nullptr);
  ASSERT_NE(upload, nullptr);
  g_object_set(upload, "storage", GST_TENSOR_MEM_STORAGE_DMABUF, nullptr);
  GstPad *sink = gst_element_get_static_pad(upload, "sink");
  GstCaps *filter = gst_caps_from_string("video/x-raw(memory:DMABuf),format=DMA_DRM");
  GstCaps *caps = gst_pad_query_caps(sink, filter);
  ASSERT_FALSE(gst_caps_is_empty(caps));
  std::vector<std::string> drm_formats;
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GValue *value = gst_structure_get_value(gst_caps_get_structure(caps, i), "drm-format");
    ASSERT_NE(value, nullptr) << "a DMA_DRM structure with any modifier";
    if (G_VALUE_HOLDS_STRING(value))
      drm_formats.emplace_back(g_value_get_string(value));
    for (guint j = 0; GST_VALUE_HOLDS_LIST(value) && j < gst_value_list_get_size(value); ++j)
      drm_formats.emplace_back(g_value_get_string(gst_value_list_get_value(value, j)));
  }
  EXPECT_NE(std::find(drm_formats.begin(), drm_formats.end(), "AB24"), drm_formats.end());
  for (const std::string &f : drm_formats)
    EXPECT_EQ(f.find(':'), std::string::npos) << f << " is not linear";
  gst_caps_unref(caps);
  gst_caps_unref(filter);
  gst_object_unref(sink);
  gst_object_unref(upload);
}
