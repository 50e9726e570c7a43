// SPDX-License-Identifier: Apache-2.0
// GstGL interop, the GstGLSyncMeta half: every consumer of ours that reads a
// buffer (or hands it on to a CPU reader) waits for the GstGLSyncMeta it
// carries first. The metas here are GstGL's own type with wait vfuncs of the
// test: the frame's final bytes are written only when the meta is waited
// for, so an element that reads without waiting sees the stale bytes. Then a
// real GstGL pipeline (glupload ! gldownload, under Xvfb) into our elements,
// byte-exact against the same pipeline without them.
#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/gl/gl.h>
#include <gst/tensormem/tensormem.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kWidth = 33, kHeight = 17;
constexpr const char *kCaps = "video/x-raw,format=RGBA,width=33,height=17,framerate=30/1";

/* A frame whose producer "finishes" it only when its GstGLSyncMeta is
 * waited for (like a GPU write that completes at the fence). */
struct LateFrame {
  std::vector<guint8> bytes;
  std::vector<guint8> final_bytes;
  std::atomic<int> waits{0};
};

void finish_frame(GstGLSyncMeta *sync, GstGLContext *) {
  auto *frame = static_cast<LateFrame *>(sync->data);
  std::copy(frame->final_bytes.begin(), frame->final_bytes.end(),
            frame->bytes.begin()); // in place: the buffer wraps it
  frame->waits++;
}

void copy_sync(GstGLSyncMeta *src, GstBuffer *, GstGLSyncMeta *dest, GstBuffer *) { dest->data = src->data; }

void free_sync(GstGLSyncMeta *, GstGLContext *) {}

/* A GstGLContext object for the metas (never made current: the vfuncs of
 * these metas do no GL), or null with `why` set where GstGL has no display. */
GstGLContext *meta_context(std::string *why) {
  GstGLDisplay *display = gst_gl_display_new();
  GstGLContext *context = display ? gst_gl_context_new(display) : nullptr;
  if (display)
    gst_object_unref(display);
  if (!context)
    *why = "GstGL made no context object (no window system: run under xvfb-run)";
  return context;
}

/* A buffer over frame->bytes (stale until waited for) with a GstGLSyncMeta
 * whose CPU wait finishes the frame. */
GstBuffer *late_buffer(GstGLContext *context, LateFrame *frame) {
  const gsize size = static_cast<gsize>(kWidth) * kHeight * 4;
  frame->bytes.assign(size, 0x11);
  frame->final_bytes.resize(size);
  for (gsize i = 0; i < size; ++i)
    frame->final_bytes[i] = static_cast<guint8>(i * 7 + 3);
  GstBuffer *buffer =
      gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), frame->bytes.data(), size, 0, size, nullptr, nullptr);
  GstGLSyncMeta *sync = gst_buffer_add_gl_sync_meta_full(context, buffer, frame);
  sync->wait_cpu = finish_frame;
  sync->copy = copy_sync;
  sync->free = free_sync;
  GST_BUFFER_PTS(buffer) = 0;
  GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
  return buffer;
}

struct ElementCase {
  const char *name;
  const char *middle;
};

/* appsrc ! middle ! appsink with one late frame: what the sink got (a
 * buffer that must not outlive `frame`, whose bytes it may wrap). */
void run_late_frame(const char *middle, GstGLContext *context, LateFrame *frame, GstBuffer **got,
                    guint64 *sync_waited) {
  const std::string description =
      std::string("appsrc name=src format=time caps=\"") + kCaps + "\" ! " + middle + " ! appsink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << description << ": " << error->message;
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), late_buffer(context, frame)), GST_FLOW_OK);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstSample *sample = nullptr;
  g_signal_emit_by_name(sink, "pull-sample", &sample);
  ASSERT_NE(sample, nullptr) << description;
  *got = gst_buffer_ref(gst_sample_get_buffer(sample));
  gst_sample_unref(sample);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  EXPECT_TRUE(end.eos) << description << ": " << end.error;
  if (GstElement *tsync = gst_bin_get_by_name(GST_BIN(pipeline), "tsync")) {
    g_object_get(tsync, "waited", sync_waited, nullptr);
    gst_object_unref(tsync);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(src);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
}

/* Whether `buffer` (any layout: our storages may pad rows) holds the
 * frame's final bytes. */
::testing::AssertionResult final_bytes_in(GstBuffer *buffer, const LateFrame &frame) {
  const GstVideoInfo info = tmtest::info_from_string(kCaps);
  GstBuffer *expected = gst_buffer_new_memdup(frame.final_bytes.data(), frame.final_bytes.size());
  ::testing::AssertionResult same = tmtest::frames_equal(buffer, expected, &info);
  gst_buffer_unref(expected);
  return same;
}

class GlSyncMetaHonoured : public ::testing::TestWithParam<ElementCase> {};

/* Each element, on its own, waits for the meta before it reads the frame or
 * hands it on: the sink sees the final bytes, and the meta was waited for
 * (once per buffer that reached a consumer of ours). With the wait removed
 * from gst_buffer_wait_tensor_mem_gl_sync_metas() every case sees 0x11 bytes. */
TEST_P(GlSyncMetaHonoured, WaitsBeforeReading) {
  std::string why;
  GstGLContext *context = meta_context(&why);
  if (!context)
    GTEST_SKIP() << why;
  LateFrame frame;
  GstBuffer *got = nullptr;
  guint64 sync_waited = 0;
  run_late_frame(GetParam().middle, context, &frame, &got, &sync_waited);
  ASSERT_NE(got, nullptr);
  EXPECT_GE(frame.waits.load(), 1) << GetParam().middle << " never waited for the GstGLSyncMeta";
  EXPECT_TRUE(final_bytes_in(got, frame)) << GetParam().middle << " passed on bytes written before the sync point";
  gst_buffer_unref(got);
  if (std::strstr(GetParam().middle, "tensorsync")) {
    EXPECT_EQ(sync_waited, 1u) << "tensorsync counts the GstGLSyncMeta it waited for";
  }
  gst_object_unref(context);
}

/* tensorupload storage=system copies the frame (appsrc does not take its
 * pool): waiting after the copy would be too late even though the meta
 * travels on to tensordownload. */
INSTANTIATE_TEST_SUITE_P(
    Elements, GlSyncMetaHonoured,
    ::testing::Values(ElementCase{"upload", "tensorupload storage=system"},
                      ElementCase{"upload_download", "tensorupload storage=system ! tensordownload"},
                      ElementCase{"download", "tensordownload"}, ElementCase{"inspect", "tensorinspect"},
                      ElementCase{"sync", "tensorsync name=tsync"}),
    [](const ::testing::TestParamInfo<ElementCase> &info) { return std::string(info.param.name); });

/* Whether GstGL's download marks its output with a GstGLSyncMeta (1.22:
 * gldownload's buffers keep the GL memory and the meta glupload set), and
 * that our elements behind it give the same bytes as the plain pipeline. */
TEST(GlSyncMeta, GstGlPipelineByteExact) {
  for (const char *name : {"glupload", "gldownload", "videotestsrc"}) {
    if (!tmtest::element_available(name))
      GTEST_SKIP() << name << " is not installed (GStreamer's opengl plugin)";
  }
  // glupload needs a real GL context, not just the object the metas use:
  // without a window system (a headless shell, plain meson test) GstGL has
  // a display object but no context, and the test skips saying so.
  std::string why;
  GstGLContext *probe_context = meta_context(&why);
  if (!probe_context)
    GTEST_SKIP() << why;
  GError *error = nullptr;
  const gboolean created = gst_gl_context_create(probe_context, nullptr, &error);
  const std::string failure = error ? error->message : "no reason given";
  g_clear_error(&error);
  if (created)
    gst_gl_context_destroy(probe_context);
  gst_object_unref(probe_context);
  if (!created)
    GTEST_SKIP() << "GstGL cannot create a GL context here (" << failure << "): run under xvfb-run";
  const std::string head =
      std::string("videotestsrc num-buffers=6 pattern=ball ! ") + kCaps + " ! glupload ! gldownload";
  tmtest::PipelineRun ours, plain;
  tmtest::run_pipeline(head + " ! tensorupload name=up storage=system ! tensordownload name=down ! appsink name=sink",
                       &ours);
  tmtest::run_pipeline(head + " ! appsink name=sink", &plain);
  ASSERT_TRUE(ours.eos) << ours.error_debug;
  ASSERT_TRUE(plain.eos) << plain.error_debug;
  ASSERT_EQ(ours.samples.size(), 6u);
  ASSERT_EQ(plain.samples.size(), 6u);
  const GstVideoInfo info = tmtest::info_from_string(kCaps);
  int with_meta = 0;
  for (std::size_t i = 0; i < ours.samples.size(); ++i) {
    EXPECT_TRUE(
        tmtest::frames_equal(gst_sample_get_buffer(ours.samples[i]), gst_sample_get_buffer(plain.samples[i]), &info))
        << "frame " << i;
    with_meta += gst_buffer_get_gl_sync_meta(gst_sample_get_buffer(plain.samples[i])) != nullptr;
  }
  std::printf("gldownload output carrying a GstGLSyncMeta: %d of %zu frames\n", with_meta, plain.samples.size());
}

} // namespace
