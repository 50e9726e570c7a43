// SPDX-License-Identifier: Apache-2.0
// tensordownload hands a consumer that has not shown it reads GstVideoMeta
// (ANY caps like filesink, or no video meta in its allocation answer) only
// the default GstVideoInfo layout: the bytes it receives are those of the
// same pipeline without our elements, although tensorupload storage=dmabuf
// pads every row to 64 bytes. A consumer that announces the meta still gets
// the padded buffers without a copy.
#include "pipeline_util.hpp"

#include <glib/gstdio.h>
#include <gst/tensormem/tensormem.h>

#include <string>
#include <vector>

namespace {

using tmtest::PipelineRun;
using tmtest::run_pipeline;

constexpr guint kFrames = 5;
// Odd widths: the pool's strides (64-byte aligned) differ from the default
// ones. RGBA rows have no default padding, so the whole file is defined;
// RGB rows of 99 bytes are padded to 100 by default, and that padding byte
// is whatever the producer's memory held (videotestsrc leaves it unset).
constexpr const char *kRgba33 = "video/x-raw,format=RGBA,width=33,height=17";
constexpr const char *kRgb33 = "video/x-raw,format=RGB,width=33,height=17";
// 64 RGBA pixels make a 256-byte row: the pool's layout is the default one.
constexpr const char *kRgba64 = "video/x-raw,format=RGBA,width=64,height=48";

std::string source(const char *caps) {
  return "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=smpte ! " + caps;
}

std::string ours(const char *caps, const char *download_props = "") {
  return source(caps) + " ! tensorupload name=up storage=dmabuf ! tensordownload name=down " + download_props;
}

std::string read_file(const std::string &path) {
  gchar *contents = nullptr;
  gsize length = 0;
  GError *error = nullptr;
  if (!g_file_get_contents(path.c_str(), &contents, &length, &error)) {
    ADD_FAILURE() << path << ": " << error->message;
    g_error_free(error);
    return {};
  }
  std::string bytes(contents, length);
  g_free(contents);
  return bytes;
}

/* A scratch directory removed with its files at the end of the test. */
class ScratchDir {
public:
  ScratchDir() {
    GError *error = nullptr;
    gchar *dir = g_dir_make_tmp("tensormem-layout-XXXXXX", &error);
    EXPECT_NE(dir, nullptr) << (error ? error->message : "");
    g_clear_error(&error);
    path_ = dir ? dir : "";
    g_free(dir);
  }
  ~ScratchDir() {
    for (const std::string &file : files_)
      g_unlink(file.c_str());
    g_rmdir(path_.c_str());
  }
  std::string file(const char *name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

private:
  std::string path_;
  std::vector<std::string> files_;
};

/* The plain bytes a reader that ignores GstVideoMeta sees in `buffer`. */
std::string buffer_bytes(GstBuffer *buffer) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    ADD_FAILURE() << "cannot map the buffer";
    return {};
  }
  std::string bytes(reinterpret_cast<const char *>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
  return bytes;
}

TEST(DownloadLayout, FilesinkWritesTheBytesOfThePipelineWithoutOurElements) {
  ScratchDir dir;
  const std::string plain_file = dir.file("plain.raw"), ours_file = dir.file("ours.raw");
  PipelineRun plain, run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source(kRgba33) + " ! filesink location=" + plain_file, &plain));
  ASSERT_NO_FATAL_FAILURE(run_pipeline(ours(kRgba33) + " ! filesink location=" + ours_file, &run));
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_TRUE(run.eos) << run.error_debug;
  const GstVideoInfo info = tmtest::info_from_string(kRgba33);
  const std::string expected = read_file(plain_file), got = read_file(ours_file);
  ASSERT_EQ(expected.size(), kFrames * GST_VIDEO_INFO_SIZE(&info));
  ASSERT_EQ(got.size(), expected.size()) << "filesink received padded rows";
  EXPECT_TRUE(got == expected) << "the bytes differ from the pipeline without tensorupload/tensordownload";
  EXPECT_EQ(run.upload_copied, 0u) << "videotestsrc writes into the DMA-BUF pool";
  EXPECT_EQ(run.download_copied, kFrames * GST_VIDEO_INFO_SIZE(&info)) << "each padded frame copied once, counted";
}

TEST(DownloadLayout, AppsinkWithAnyCapsGetsTheDefaultLayout) {
  PipelineRun plain, run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source(kRgb33) + " ! appsink name=sink sync=false", &plain));
  ASSERT_NO_FATAL_FAILURE(run_pipeline(ours(kRgb33) + " ! appsink name=sink sync=false", &run));
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(plain.samples.size(), kFrames);
  ASSERT_EQ(run.samples.size(), kFrames);
  const GstVideoInfo info = tmtest::info_from_string(kRgb33);
  const gsize stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), row = 33 * 3;
  for (guint i = 0; i < kFrames; ++i) {
    GstBuffer *buffer = gst_sample_get_buffer(run.samples[i]);
    const std::string expected = buffer_bytes(gst_sample_get_buffer(plain.samples[i]));
    const std::string got = buffer_bytes(buffer);
    ASSERT_EQ(got.size(), expected.size()) << "frame " << i;
    // Every picture byte where the default layout puts it; the padding byte
    // after each row is undefined in both pipelines.
    for (gint y = 0; y < GST_VIDEO_INFO_HEIGHT(&info); ++y) {
      ASSERT_EQ(got.compare(y * stride, row, expected, y * stride, row), 0) << "frame " << i << " row " << y;
    }
    const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    if (meta) {
      EXPECT_EQ(meta->stride[0], static_cast<gint>(stride)) << "a meta, if any, must describe the default layout";
    }
  }
  EXPECT_EQ(run.download_copied, kFrames * GST_VIDEO_INFO_SIZE(&info));
}

/* Makes the appsink named "sink" answer allocation queries with the video
 * meta, as a consumer that reads GstVideoMeta does. */
void announce_video_meta(GstElement *pipeline) {
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      [](GstPad *, GstPadProbeInfo *info, gpointer) {
        GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
        if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION)
          return GST_PAD_PROBE_OK;
        gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
        GST_PAD_PROBE_INFO_DATA(info) = query;
        return GST_PAD_PROBE_HANDLED;
      },
      nullptr, nullptr);
  gst_object_unref(pad);
  gst_object_unref(sink);
}

TEST(DownloadLayout, AConsumerThatAnnouncesVideoMetaGetsThePaddedBuffersWithoutACopy) {
  PipelineRun plain, run;
  ASSERT_NO_FATAL_FAILURE(run_pipeline(source(kRgb33) + " ! appsink name=sink sync=false", &plain));
  ASSERT_NO_FATAL_FAILURE(
      run_pipeline(ours(kRgb33, "require-zero-copy=true") + " ! appsink name=sink sync=false caps=video/x-raw", &run,
                   nullptr, announce_video_meta));
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), kFrames);
  EXPECT_EQ(run.download_copied, 0u);
  const GstVideoInfo info = tmtest::info_from_string(kRgb33);
  for (guint i = 0; i < kFrames; ++i) {
    GstBuffer *buffer = gst_sample_get_buffer(run.samples[i]);
    const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->stride[0] % GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN, 0) << "the pool's padded layout, not a copy";
    EXPECT_TRUE(tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), buffer, &info)) << "frame " << i;
  }
}

TEST(DownloadLayout, RequireZeroCopyRefusesTheCopyForAConsumerWithAnyCaps) {
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(
      run_pipeline(ours(kRgb33, "require-zero-copy=true") + " ! appsink name=sink sync=false", &run));
  EXPECT_FALSE(run.eos);
  EXPECT_EQ(run.error_domain, GST_STREAM_ERROR);
  EXPECT_NE(run.error_debug.find("has not shown it reads GstVideoMeta"), std::string::npos) << run.error_debug;
  EXPECT_NE(run.error_debug.find("require-zero-copy"), std::string::npos) << run.error_debug;
  EXPECT_EQ(run.download_copied, 0u);
}

/* Issue 13: memory a CPU consumer maps as it is (system and DMA-BUF tensor
 * memory here; PBO memory in gst-pbo-pipelines) reaches filesink without a
 * copy when its layout is the default one, and filesink writes the bytes of
 * the pipeline without our elements. */
TEST(DownloadLayout, DefaultLayoutTensorMemoryReachesFilesinkWithoutACopy) {
  for (const char *storage : {"system", "dmabuf"}) {
    SCOPED_TRACE(storage);
    ScratchDir dir;
    const std::string plain_file = dir.file("plain.raw"), ours_file = dir.file("ours.raw");
    PipelineRun plain, run;
    ASSERT_NO_FATAL_FAILURE(run_pipeline(source(kRgba64) + " ! filesink location=" + plain_file, &plain));
    ASSERT_NO_FATAL_FAILURE(
        run_pipeline(source(kRgba64) + " ! tensorupload name=up storage=" + storage +
                         " ! tensordownload name=down require-zero-copy=true ! filesink location=" + ours_file,
                     &run));
    ASSERT_TRUE(plain.eos) << plain.error_debug;
    ASSERT_TRUE(run.eos) << run.error_debug;
    const GstVideoInfo info = tmtest::info_from_string(kRgba64);
    const std::string expected = read_file(plain_file), got = read_file(ours_file);
    ASSERT_EQ(expected.size(), kFrames * GST_VIDEO_INFO_SIZE(&info));
    EXPECT_TRUE(got == expected) << "the bytes differ from the pipeline without tensorupload/tensordownload";
    EXPECT_EQ(run.upload_copied, 0u);
    EXPECT_EQ(run.download_copied, 0u) << "tensor memory in the default layout passes through";
  }
}

/* What left tensordownload, seen by a probe on its source pad. */
struct CopyCount {
  guint buffers = 0;
  guint fresh = 0;    // buffers whose memory the probe had not seen before
  guint unpooled = 0; // buffers that did not come from a buffer pool
};

GQuark seen_quark() { return g_quark_from_static_string("tensormem-test-seen"); }

GstPadProbeReturn count_copies(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *count = static_cast<CopyCount *>(user_data);
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  count->buffers++;
  if (!buffer->pool)
    count->unpooled++;
  /* A recycled buffer keeps its memory, and the mark on it; a new
   * allocation, even at a reused address, has none. */
  auto *mem = GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, 0));
  if (!gst_mini_object_get_qdata(mem, seen_quark())) {
    count->fresh++;
    gst_mini_object_set_qdata(mem, seen_quark(), GINT_TO_POINTER(1), nullptr);
  }
  return GST_PAD_PROBE_OK;
}

/* A consumer that cannot read the pool's padded layout gets copies, and the
 * copies come from a pool of default-layout frames that is recycled: over
 * 100 frames only the few buffers downstream ever held at once are made. */
TEST(DownloadLayout, CopiesForAConsumerThatCannotReadTheLayoutAreRecycledFromAPool) {
  constexpr guint kManyFrames = 100;
  CopyCount count;
  PipelineRun run;
  const std::string description = "videotestsrc num-buffers=" + std::to_string(kManyFrames) + " ! " + kRgba33 +
                                  " ! tensorupload name=up storage=dmabuf ! tensordownload name=down ! "
                                  "fakesink sync=false";
  ASSERT_NO_FATAL_FAILURE(run_pipeline(description, &run, nullptr, [&count](GstElement *pipeline) {
    GstElement *down = gst_bin_get_by_name(GST_BIN(pipeline), "down");
    GstPad *src = gst_element_get_static_pad(down, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_copies, &count, nullptr);
    gst_object_unref(src);
    gst_object_unref(down);
  }));
  ASSERT_TRUE(run.eos) << run.error_debug;
  const GstVideoInfo info = tmtest::info_from_string(kRgba33);
  EXPECT_EQ(count.buffers, kManyFrames);
  EXPECT_EQ(run.download_copied, kManyFrames * GST_VIDEO_INFO_SIZE(&info)) << "every padded frame is copied";
  EXPECT_EQ(count.unpooled, 0u) << "a copy was allocated outside a pool";
  // fakesink lets go of each buffer before the next: two suffice, four is slack.
  EXPECT_LE(count.fresh, 4u) << "copies were allocated per frame instead of recycled";
  EXPECT_GE(count.fresh, 1u);
}

} // namespace
