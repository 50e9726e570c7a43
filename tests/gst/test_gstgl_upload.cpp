// SPDX-License-Identifier: Apache-2.0
// GstGL interop, the texture half: `tensorupload storage=pbo` takes
// memory:GLMemory from GstGL elements. With GstGL on EGL a worker sharing
// GstGL's context reads each texture into a PBO with no CPU copy (every
// readback path, TENSORMEM_GL_TEXTURE_READ); with GstGL on GLX (its X11
// default) GstGL downloads the texture and the frame is copied into PBO
// memory, counted, and refused under require-zero-copy=true. Byte-exact
// against GstGL's own gldownload, at odd sizes, in each accepted format,
// with SMPTE bars (a swap of channels, a flip of rows or columns shows);
// the GstGLSyncMeta GstGL attaches is waited for on the GPU; a missing GstGL
// context and bad caps are element errors that say why. GstGL needs a window
// system: run under xvfb-run.
#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/gl/gl.h>
#include <gst/tensormem/tensormem.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>

namespace {

/* Sets (or, with NULL, unsets) an environment variable for one test and
 * restores it after. */
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value)
      g_setenv(name, value, TRUE);
    else
      g_unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      g_setenv(name_, old_.c_str(), TRUE);
    else
      g_unsetenv(name_);
  }

private:
  const char *name_;
  bool had_ = false;
  std::string old_;
};

/* GST_GL_PLATFORM for one test (NULL: GstGL's default). */
class GlPlatform : public ScopedEnv {
public:
  explicit GlPlatform(const char *platform) : ScopedEnv("GST_GL_PLATFORM", platform) {}
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
  if (gst_is_tensor_mem_pbo_memory(mem) && gst_tensor_mem_gl_worker_shares_with_gstgl(gst_tensor_mem_pbo_memory_get_gl_worker(mem)))
    (*static_cast<std::atomic<int> *>(data))++;
  return GST_PAD_PROBE_OK;
}

struct Size {
  int width, height;
  const char *format;
};

void PrintTo(const Size &size, std::ostream *os) { *os << size.format << " " << size.width << "x" << size.height; }

/* What one run of `head ! tensorupload ! tensordownload ! appsink` against
 * `head ! gldownload ! appsink` gave. */
struct Compared {
  int frames = 0;
  int equal = 0;
  int shared_pbo_buffers = 0; // PBO memory of a worker sharing GstGL's context
  guint64 gpu_copied = 0;
  guint64 cpu_copied = 0;
  guint64 frame_bytes = 0;
};

void compare_with_gldownload(const std::string &head, const std::string &caps, const char *upload_props,
                             Compared *out) {
  tmtest::PipelineRun ours, reference;
  GstElement *up = nullptr; // kept past the pipeline's end to read its counter
  std::atomic<int> shared_pbo_buffers{0};
  tmtest::run_pipeline(
      head + " ! tensorupload name=up storage=pbo " + upload_props + " ! tensordownload name=down ! appsink name=sink",
      &ours, nullptr, [&](GstElement *pipeline) {
        up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
        GstPad *src = gst_element_get_static_pad(up, "src");
        gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_shared_pbo_buffers, &shared_pbo_buffers, nullptr);
        gst_object_unref(src);
      });
  ASSERT_NE(up, nullptr);
  out->gpu_copied = gpu_copied_bytes(up);
  gst_object_unref(up);
  tmtest::run_pipeline(head + " ! gldownload ! appsink name=sink", &reference);
  ASSERT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_TRUE(reference.eos) << reference.error_debug;
  ASSERT_EQ(ours.samples.size(), reference.samples.size());
  const GstVideoInfo info = tmtest::info_from_string(caps.c_str());
  out->frames = static_cast<int>(ours.samples.size());
  for (std::size_t i = 0; i < ours.samples.size(); ++i) {
    const bool equal = tmtest::frames_equal(gst_sample_get_buffer(ours.samples[i]),
                                            gst_sample_get_buffer(reference.samples[i]), &info);
    EXPECT_TRUE(equal) << "frame " << i;
    out->equal += equal ? 1 : 0;
  }
  out->shared_pbo_buffers = shared_pbo_buffers.load();
  out->cpu_copied = ours.upload_copied;
  out->frame_bytes = GST_VIDEO_INFO_SIZE(&info);
}

std::string caps_of(const Size &size) {
  return std::string("video/x-raw,format=") + size.format + ",width=" + std::to_string(size.width) +
         ",height=" + std::to_string(size.height) + ",framerate=30/1";
}

constexpr int kFrames = 7;

/* The GstGL source of the tests: SMPTE bars (every column band and the
 * bottom rows differ) through glupload ! glcolorconvert. */
std::string gl_head(const std::string &caps) {
  return "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=smpte ! " + caps +
         " ! glupload ! glcolorconvert";
}

class GlMemoryUpload : public ::testing::TestWithParam<std::tuple<Size, const char *>> {};

/* videotestsrc ! glupload ! glcolorconvert ! tensorupload storage=pbo
 * require-zero-copy=true ! tensordownload, byte-exact against glupload !
 * glcolorconvert ! gldownload, by each readback path (where GstGL's
 * context lacks one, the worker reads by the pack readback); every frame
 * read on the GPU (gpu-copied-bytes = frames × frame bytes), none on the CPU
 * (copied-bytes 0). */
TEST_P(GlMemoryUpload, ByteExactAgainstGlDownload) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform egl("egl");
  const auto &[size, path] = GetParam();
  ScopedEnv read_path("TENSORMEM_GL_TEXTURE_READ", std::strcmp(path, "auto") == 0 ? nullptr : path);
  const std::string caps = caps_of(size);
  Compared got;
  compare_with_gldownload(gl_head(caps), caps, "require-zero-copy=true", &got);
  EXPECT_EQ(got.frames, kFrames);
  EXPECT_EQ(got.equal, got.frames);
  EXPECT_EQ(got.shared_pbo_buffers, kFrames) << "tensorupload's output is PBO memory of a worker sharing GstGL's";
  EXPECT_EQ(got.cpu_copied, 0u) << "a CPU copy was made";
  EXPECT_EQ(got.gpu_copied, static_cast<guint64>(kFrames) * got.frame_bytes);
}

INSTANTIATE_TEST_SUITE_P(SizesAndPaths, GlMemoryUpload,
                         ::testing::Combine(::testing::Values(Size{33, 17, "RGBA"}, Size{321, 241, "RGBA"},
                                                              Size{35, 19, "BGRA"}, Size{19, 7, "RGBx"},
                                                              Size{7, 3, "BGRx"}),
                                            ::testing::Values("auto", "readpixels", "gettexture", "compute", "mapped")),
                         [](const ::testing::TestParamInfo<std::tuple<Size, const char *>> &info) {
                           const Size &size = std::get<0>(info.param);
                           return std::string(size.format) + "_" + std::to_string(size.width) + "x" +
                                  std::to_string(size.height) + "_" + std::get<1>(info.param);
                         });

/* A GstGL source that makes its context only after the caps (gltestsrc does
 * it in decide_allocation, so nobody answers the context query at set_caps):
 * the worker is made from the first texture's context. */
TEST(GlMemoryUploadSource, ContextKnownOnlyFromTheFirstTexture) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  if (!tmtest::element_available("gltestsrc"))
    GTEST_SKIP() << "gltestsrc is not installed (GStreamer's opengl plugin)";
  GlPlatform egl("egl");
  const std::string caps = "video/x-raw,format=RGBA,width=45,height=29,framerate=30/1";
  Compared got;
  compare_with_gldownload("gltestsrc num-buffers=5 pattern=smpte ! video/x-raw(memory:GLMemory),format=RGBA,"
                          "width=45,height=29,framerate=30/1",
                          caps, "require-zero-copy=true", &got);
  EXPECT_EQ(got.frames, 5);
  EXPECT_EQ(got.equal, 5);
  EXPECT_EQ(got.shared_pbo_buffers, 5);
  EXPECT_EQ(got.cpu_copied, 0u);
}

/* GstGL's defaults under X11, where it would pick GLX: tensorupload
 * storage=pbo answers GstGL's display query with an EGL display, so GstGL
 * makes an EGL context, our worker shares it and every frame is read on the
 * GPU (require-zero-copy=true holds), byte-exact. */
TEST(GlMemoryUploadDefaults, EglDisplayOfferedSoFramesStayOnTheGpu) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform platform_default(nullptr);
  const std::string caps = caps_of(Size{33, 17, "RGBA"});
  Compared got;
  compare_with_gldownload(gl_head(caps), caps, "require-zero-copy=true", &got);
  EXPECT_EQ(got.frames, kFrames);
  EXPECT_EQ(got.equal, got.frames);
  EXPECT_EQ(got.shared_pbo_buffers, kFrames) << "GstGL did not take the EGL display offered";
  EXPECT_EQ(got.cpu_copied, 0u);
  EXPECT_EQ(got.gpu_copied, static_cast<guint64>(kFrames) * got.frame_bytes);
}

/* GstGL on GLX (GST_GL_PLATFORM=glx, which tensorupload then does not
 * override): our EGL worker cannot share its context, so GstGL downloads
 * each texture on its own thread and the frame is copied into PBO memory:
 * byte-exact, every byte counted in copied-bytes, nothing on the GPU. */
class GlMemoryUploadGlx : public ::testing::TestWithParam<Size> {};

TEST_P(GlMemoryUploadGlx, CopiedOnTheCpuByteExact) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform glx("glx");
  const std::string caps = caps_of(GetParam());
  Compared got;
  compare_with_gldownload(gl_head(caps), caps, "", &got);
  if (got.shared_pbo_buffers > 0)
    GTEST_SKIP() << "GstGL made an EGL context here (no GLX): the GPU path ran";
  EXPECT_EQ(got.frames, kFrames);
  EXPECT_EQ(got.equal, got.frames);
  EXPECT_EQ(got.cpu_copied, static_cast<guint64>(kFrames) * got.frame_bytes) << "each frame one counted CPU copy";
  EXPECT_EQ(got.gpu_copied, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GlMemoryUploadGlx,
                         ::testing::Values(Size{33, 17, "RGBA"}, Size{35, 19, "BGRA"}, Size{19, 7, "RGBx"},
                                           Size{7, 3, "BGRx"}),
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

/* require-zero-copy=true refuses the CPU copy GstGL on GLX needs, saying
 * why and naming the variable that enables the zero-copy path. */
TEST(GlMemoryUploadErrors, GstGlOnGlxRefusedUnderRequireZeroCopy) {
  const std::string missing = gstgl_missing();
  if (!missing.empty())
    GTEST_SKIP() << missing;
  GlPlatform glx("glx");
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=33,height=17 ! glupload ! "
                       "glcolorconvert ! tensorupload storage=pbo require-zero-copy=true ! tensordownload ! fakesink",
                       &run);
  if (run.eos)
    GTEST_SKIP() << "GstGL made no GLX context here";
  EXPECT_NE(run.error_debug.find("require-zero-copy=true"), std::string::npos) << run.error_debug;
  EXPECT_NE(run.error_debug.find("GST_GL_PLATFORM=egl"), std::string::npos) << run.error_debug;
  EXPECT_NE(run.error_debug.find("glx"), std::string::npos) << run.error_debug;
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
  ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
  EXPECT_FALSE(gst_tensor_mem_gl_worker_shares_with_gstgl(gst_tensor_mem_pbo_memory_get_gl_worker(mem)));
}

} // namespace
