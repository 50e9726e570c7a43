// SPDX-License-Identifier: Apache-2.0
// GstGL interop, the texture half: `tensorupload storage=pbo` takes
// memory:GLMemory from GstGL elements and fills PBO memory on the GPU (a
// worker sharing GstGL's EGL context reads each texture into a PBO), with no
// CPU copy. Byte-exact against GstGL's own gldownload, at odd sizes; the
// GstGLSyncMeta GstGL attaches is waited for on the GPU; a missing GstGL
// context, GstGL on GLX and bad caps are element errors that say why.
// GstGL needs a window system: run under xvfb-run. GstGL picks GLX on X11
// unless GST_GL_PLATFORM=egl, which these tests set (the GLX case sets
// glx).
#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/gl/gl.h>
#include <gst/tensormem/tensormem.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace {

/* Sets GST_GL_PLATFORM for one test and restores it after. */
class GlPlatform {
public:
  explicit GlPlatform(const char *platform) {
    if (const char *old = std::getenv("GST_GL_PLATFORM")) {
      had_ = true;
      old_ = old;
    }
    g_setenv("GST_GL_PLATFORM", platform, TRUE);
  }
  ~GlPlatform() {
    if (had_)
      g_setenv("GST_GL_PLATFORM", old_.c_str(), TRUE);
    else
      g_unsetenv("GST_GL_PLATFORM");
  }

private:
  bool had_ = false;
  std::string old_;
};

/* Why GstGL cannot run here ("" when it can): its elements installed and
 * a display to open. */
std::string gstgl_missing() {
  for (const char *name : {"glupload", "glcolorconvert", "gldownload", "videotestsrc"}) {
    if (!tmtest::element_available(name))
      return std::string(name) + " is not installed (GStreamer's opengl plugin)";
  }
  if (!g_getenv("DISPLAY") && !g_getenv("WAYLAND_DISPLAY"))
    return "no window system for GstGL (run under xvfb-run)";
  return "";
}

guint64 gpu_copied_bytes(GstElement *element) {
  guint64 bytes = 0;
  g_object_get(element, "gpu-copied-bytes", &bytes, nullptr);
  return bytes;
}

/* Buffer probe: counts (into the std::atomic<int> at `data`) buffers of PBO
 * memory whose GL worker shares GstGL's context. */
GstPadProbeReturn count_shared_pbo_buffers(GstPad *, GstPadProbeInfo *info, gpointer data) {
  GstMemory *mem = gst_buffer_peek_memory(GST_PAD_PROBE_INFO_BUFFER(info), 0);
  if (gst_is_tensor_pbo_memory(mem) && gst_tensor_gl_worker_shares_with_gstgl(gst_tensor_pbo_memory_get_gl_worker(mem)))
    (*static_cast<std::atomic<int> *>(data))++;
  return GST_PAD_PROBE_OK;
}

struct Size {
  int width, height;
  const char *format;
};

class GlMemoryUpload : public ::testing::TestWithParam<Size> {};

/* videotestsrc ! glupload ! glcolorconvert ! tensorupload storage=pbo
 * require-zero-copy=true ! tensordownload, byte-exact against glupload !
 * glcolorconvert ! gldownload; every frame read on the GPU (gpu-copied-bytes
 * = frames × frame bytes), none on the CPU (copied-bytes 0). */
TEST_P(GlMemoryUpload, ByteExactAgainstGlDownload) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform egl("egl");
  const Size size = GetParam();
  constexpr int kFrames = 7;
  const std::string caps = std::string("video/x-raw,format=") + size.format + ",width=" + std::to_string(size.width) +
                           ",height=" + std::to_string(size.height) + ",framerate=30/1";
  const std::string head = "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=ball ! " + caps +
                           " ! glupload ! glcolorconvert";
  tmtest::PipelineRun ours, reference;
  GstElement *up = nullptr; // kept past the pipeline's end to read its counter
  std::atomic<int> shared_pbo_buffers{0};
  tmtest::run_pipeline(
      head +
          " ! tensorupload name=up storage=pbo require-zero-copy=true ! tensordownload name=down ! appsink name=sink",
      &ours, nullptr, [&](GstElement *pipeline) {
        up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
        GstPad *src = gst_element_get_static_pad(up, "src");
        gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_shared_pbo_buffers, &shared_pbo_buffers, nullptr);
        gst_object_unref(src);
      });
  ASSERT_NE(up, nullptr);
  const guint64 gpu_copied = gpu_copied_bytes(up);
  gst_object_unref(up);
  tmtest::run_pipeline(head + " ! gldownload ! appsink name=sink", &reference);
  ASSERT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_TRUE(reference.eos) << reference.error_debug;
  ASSERT_EQ(ours.samples.size(), static_cast<std::size_t>(kFrames));
  ASSERT_EQ(reference.samples.size(), static_cast<std::size_t>(kFrames));
  const GstVideoInfo info = tmtest::info_from_string(caps.c_str());
  for (int i = 0; i < kFrames; ++i) {
    GstBuffer *got = gst_sample_get_buffer(ours.samples[i]);
    EXPECT_TRUE(tmtest::frames_equal(got, gst_sample_get_buffer(reference.samples[i]), &info)) << "frame " << i;
  }
  EXPECT_EQ(shared_pbo_buffers.load(), kFrames) << "tensorupload's output is PBO memory of a worker sharing GstGL's";
  EXPECT_EQ(ours.upload_copied, 0u) << "a CPU copy was made";
  EXPECT_EQ(gpu_copied, static_cast<guint64>(kFrames) * GST_VIDEO_INFO_SIZE(&info));
}

INSTANTIATE_TEST_SUITE_P(Sizes, GlMemoryUpload,
                         ::testing::Values(Size{33, 17, "RGBA"}, Size{321, 241, "RGBA"}, Size{35, 19, "BGRA"}),
                         [](const ::testing::TestParamInfo<Size> &info) {
                           return std::string(info.param.format) + "_" + std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height);
                         });

/* glupload's GstGLSyncMeta is honoured on the GPU: a probe wraps the meta
 * of each buffer entering tensorupload with a `wait` vfunc that counts and
 * then does GstGL's own GPU-side wait, so the bytes stay right and each
 * buffer's meta was waited for once. */
struct SyncCount {
  std::atomic<int> gpu_waits{0};
  std::atomic<int> buffers{0};
};

SyncCount *g_sync_count = nullptr;

void counting_wait(GstGLSyncMeta *meta, GstGLContext *context) {
  g_sync_count->gpu_waits++;
  meta->wait = nullptr; // GstGL's own path from here: wait_gl on the context's thread
  gst_gl_sync_meta_wait(meta, context);
}

TEST(GlMemoryUploadSync, GstGlSyncMetaWaitedOnTheGpu) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform egl("egl");
  SyncCount count;
  g_sync_count = &count;
  tmtest::PipelineRun run;
  tmtest::run_pipeline(
      "videotestsrc num-buffers=5 ! video/x-raw,format=RGBA,width=33,height=17 ! glupload ! glcolorconvert ! "
      "tensorupload name=up storage=pbo require-zero-copy=true ! tensordownload ! appsink name=sink",
      &run, nullptr, [](GstElement *pipeline) {
        GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
        GstPad *sink = gst_element_get_static_pad(up, "sink");
        gst_pad_add_probe(
            sink, GST_PAD_PROBE_TYPE_BUFFER,
            +[](GstPad *, GstPadProbeInfo *info, gpointer) -> GstPadProbeReturn {
              GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
              g_sync_count->buffers++;
              if (GstGLSyncMeta *meta = gst_buffer_get_gl_sync_meta(buffer))
                meta->wait = counting_wait;
              return GST_PAD_PROBE_OK;
            },
            nullptr, nullptr);
        gst_object_unref(sink);
        gst_object_unref(up);
      });
  g_sync_count = nullptr;
  ASSERT_TRUE(run.eos) << run.error_debug;
  EXPECT_EQ(count.buffers.load(), 5);
  EXPECT_EQ(count.gpu_waits.load(), 5) << "glcolorconvert's buffers carry a GstGLSyncMeta; each must be waited for";
}

/* The errors that say why: memory:GLMemory with nobody upstream who has a
 * GstGLContext (an appsrc claiming textures), and GstGL on GLX. */
TEST(GlMemoryUploadErrors, NoGstGlContextUpstream) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline("appsrc is-live=true caps=\"video/x-raw(memory:GLMemory),format=RGBA,width=16,height=16,"
                       "framerate=30/1,texture-target=2D\" ! tensorupload storage=pbo ! fakesink",
                       &run, nullptr, [](GstElement *pipeline) {
                         GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "appsrc0");
                         GstBuffer *buffer = gst_buffer_new_allocate(nullptr, 16 * 16 * 4, nullptr);
                         gst_buffer_memset(buffer, 0, 0, 16 * 16 * 4);
                         gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
                         gst_app_src_end_of_stream(GST_APP_SRC(src));
                         gst_object_unref(src);
                       });
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error_debug.find("gst.gl.local_context"), std::string::npos) << run.error_debug;
}

TEST(GlMemoryUploadErrors, GstGlOnGlx) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform glx("glx");
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=33,height=17 ! glupload ! "
                       "glcolorconvert ! tensorupload storage=pbo ! tensordownload ! fakesink",
                       &run);
  if (run.eos)
    GTEST_SKIP() << "GstGL made no GLX context here";
  EXPECT_NE(run.error_debug.find("GST_GL_PLATFORM=egl"), std::string::npos) << run.error_debug;
}

/* Without GstGL elements nothing changes: the same element, storage=pbo,
 * on system-memory input takes the headless worker as before (no GstGL
 * context is made). */
TEST(GlMemoryUploadDefault, HeadlessWorkerWithoutGstGl) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=33,height=17 ! "
                       "tensorupload name=up storage=pbo ! appsink name=sink",
                       &run);
  if (!run.eos && run.error_debug.find("EGL") != std::string::npos)
    GTEST_SKIP() << "no headless GL here: " << run.error_debug;
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 3u);
  GstMemory *mem = gst_buffer_peek_memory(gst_sample_get_buffer(run.samples[0]), 0);
  ASSERT_TRUE(gst_is_tensor_pbo_memory(mem));
  EXPECT_FALSE(gst_tensor_gl_worker_shares_with_gstgl(gst_tensor_pbo_memory_get_gl_worker(mem)));
}

} // namespace
