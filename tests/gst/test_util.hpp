// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstring>
#include <string>

namespace tmtest {

/* An error or warning message as "SOURCE: message | debug". */
inline std::string problem_text(GstMessage *msg) {
  GError *err = nullptr;
  gchar *debug = nullptr;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR)
    gst_message_parse_error(msg, &err, &debug);
  else
    gst_message_parse_warning(msg, &err, &debug);
  std::string text = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + (err ? err->message : "?") + " | " +
                     (debug ? debug : "");
  g_clear_error(&err);
  g_free(debug);
  return text;
}

/* Drops the caller's reference to a pipeline that has run and waits (at most
 * 10 s, then fails) until it is finalized. GstBin finishes asynchronous
 * state changes through gst_element_call_async, whose closure holds its own
 * reference to the pipeline on a GLib pool thread; that thread can drop the
 * last reference, and with it every element, pool and pooled memory, a
 * moment after this unref. Counting leftovers before then would blame us for
 * objects that are merely not yet released. */
inline void release_pipeline(GstElement *pipeline) {
  struct Gone {
    GMutex lock;
    GCond cond;
    bool done = false;
  };
  // On the heap: if the wait times out, the notify may still come later.
  auto *gone = new Gone;
  g_mutex_init(&gone->lock);
  g_cond_init(&gone->cond);
  g_object_weak_ref(
      G_OBJECT(pipeline),
      [](gpointer data, GObject *) {
        auto *g = static_cast<Gone *>(data);
        g_mutex_lock(&g->lock);
        g->done = true;
        g_cond_signal(&g->cond);
        g_mutex_unlock(&g->lock);
      },
      gone);
  gst_object_unref(pipeline);
  const gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&gone->lock);
  while (!gone->done && g_cond_wait_until(&gone->cond, &gone->lock, deadline)) {
  }
  const bool done = gone->done;
  g_mutex_unlock(&gone->lock);
  if (!done) {
    ADD_FAILURE() << "the pipeline was not finalized within 10 s of the last unref";
    return; // `gone` stays allocated for the notify that may still come
  }
  g_cond_clear(&gone->cond);
  g_mutex_clear(&gone->lock);
  delete gone;
}

inline GstVideoInfo info_from_string(const char *caps_str) {
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstVideoInfo info;
  gst_video_info_init(&info);
  EXPECT_TRUE(caps && gst_video_info_from_caps(&info, caps)) << caps_str;
  if (caps)
    gst_caps_unref(caps);
  return info;
}

/* Bytes of one row of `plane` that belong to the picture (no padding). */
inline gsize row_bytes(const GstVideoFrame *frame, guint plane) {
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(frame->info.finfo, plane, comp);
  return static_cast<gsize>(GST_VIDEO_FRAME_COMP_WIDTH(frame, comp[0])) * GST_VIDEO_FRAME_COMP_PSTRIDE(frame, comp[0]);
}

inline guint plane_rows(const GstVideoFrame *frame, guint plane) {
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(frame->info.finfo, plane, comp);
  return GST_VIDEO_FRAME_COMP_HEIGHT(frame, comp[0]);
}

/* Fills every picture byte of `buffer` (laid out per its GstVideoMeta or
 * `info`) with a pattern that depends on plane, row, column and `seed`. */
inline void fill_frame(GstBuffer *buffer, const GstVideoInfo *info, guint seed) {
  GstVideoFrame frame;
  ASSERT_TRUE(gst_video_frame_map(&frame, info, buffer, GST_MAP_WRITE));
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    auto *base = static_cast<guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    for (guint y = 0; y < plane_rows(&frame, p); ++y)
      for (gsize x = 0; x < row_bytes(&frame, p); ++x)
        base[y * stride + x] = static_cast<guint8>(seed * 31 + p * 71 + y * 13 + x * 7);
  }
  gst_video_frame_unmap(&frame);
}

/* Compares the picture bytes of two buffers row by row, each read through
 * its own layout (GstVideoMeta if present, else `info`'s default). */
inline ::testing::AssertionResult frames_equal(GstBuffer *a, GstBuffer *b, const GstVideoInfo *info) {
  GstVideoFrame fa, fb;
  if (!gst_video_frame_map(&fa, info, a, GST_MAP_READ))
    return ::testing::AssertionFailure() << "cannot map the first frame";
  if (!gst_video_frame_map(&fb, info, b, GST_MAP_READ)) {
    gst_video_frame_unmap(&fa);
    return ::testing::AssertionFailure() << "cannot map the second frame";
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&fa) && result; ++p) {
    const auto *pa = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&fa, p));
    const auto *pb = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&fb, p));
    for (guint y = 0; y < plane_rows(&fa, p); ++y) {
      if (std::memcmp(pa + y * GST_VIDEO_FRAME_PLANE_STRIDE(&fa, p), pb + y * GST_VIDEO_FRAME_PLANE_STRIDE(&fb, p),
                      row_bytes(&fa, p)) != 0) {
        result = ::testing::AssertionFailure() << "plane " << p << " row " << y << " differs";
        break;
      }
    }
  }
  gst_video_frame_unmap(&fb);
  gst_video_frame_unmap(&fa);
  return result;
}

inline guint64 copied_bytes(GstElement *element) {
  guint64 bytes = 0;
  g_object_get(element, "copied-bytes", &bytes, nullptr);
  return bytes;
}

} // namespace tmtest
