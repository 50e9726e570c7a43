// SPDX-License-Identifier: Apache-2.0
// The elements' one frame copy (gsttensorframecopy-private.cpp, rows through
// tensormem::copy_rows) byte for byte: frames whose rows are odd lengths
// (not multiples of 16), whose planes start off any alignment and whose
// strides differ from the output's, through tensordownload (into the
// default layout) and tensorupload storage=system (into 64-byte strides).
// meson runs it twice: as it comes (cached stores at these sizes) and with
// glibc's non-temporal threshold at its minimum, where every frame here is
// larger than it and the rows are streamed.
#include "test_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include <cstring>
#include <string>
#include <tuple>

namespace {

struct Case {
  const char *format;
  int width, height;
};

// Each frame is larger than glibc's smallest non-temporal threshold (0x4040).
constexpr Case kCases[] = {
    {"RGBA", 333, 61},                                         // 1332-byte rows
    {"RGB", 333, 61},                                          // 999-byte rows
    {"GRAY8", 1001, 37}, {"NV12", 334, 62}, {"I420", 334, 62}, // 167-byte chroma rows
};

/* A frame of `c` whose planes start `misalign` bytes past the buffer's
 * start and whose rows are `pad` bytes longer than their pixels, described
 * by a GstVideoMeta; every byte set from a pattern. */
GstBuffer *strided_frame(const Case &c, gsize misalign, gsize pad) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, gst_video_format_from_string(c.format), c.width, c.height);
  gsize offset[GST_VIDEO_MAX_PLANES] = {0};
  gint stride[GST_VIDEO_MAX_PLANES] = {0};
  gsize at = misalign;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(info.finfo, p, comp);
    const gsize row = static_cast<gsize>(GST_VIDEO_INFO_COMP_WIDTH(&info, comp[0])) *
                      static_cast<gsize>(GST_VIDEO_INFO_COMP_PSTRIDE(&info, comp[0]));
    offset[p] = at;
    stride[p] = static_cast<gint>(row + pad);
    at += static_cast<gsize>(stride[p]) * static_cast<gsize>(GST_VIDEO_INFO_COMP_HEIGHT(&info, comp[0]));
  }
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, at, nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  guint32 x = static_cast<guint32>(c.width * 7 + misalign);
  for (gsize i = 0; i < map.size; ++i) {
    x = x * 1664525u + 1013904223u;
    map.data[i] = static_cast<guint8>(x >> 24);
  }
  gst_buffer_unmap(buffer, &map);
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info), c.width, c.height,
                                 GST_VIDEO_INFO_N_PLANES(&info), offset, stride);
  return buffer;
}

/* The number of picture bytes that differ between two frames of `caps`
 * (each laid out as its own GstVideoMeta or the default layout says). */
gsize differing_bytes(const std::string &caps, GstBuffer *a, GstBuffer *b) {
  GstVideoInfo info;
  GstCaps *parsed = gst_caps_from_string(caps.c_str());
  EXPECT_TRUE(gst_video_info_from_caps(&info, parsed));
  gst_caps_unref(parsed);
  GstVideoFrame fa, fb;
  if (!gst_video_frame_map(&fa, &info, a, GST_MAP_READ)) {
    ADD_FAILURE() << "cannot map the first frame";
    return G_MAXSIZE;
  }
  if (!gst_video_frame_map(&fb, &info, b, GST_MAP_READ)) {
    gst_video_frame_unmap(&fa);
    ADD_FAILURE() << "cannot map the second frame";
    return G_MAXSIZE;
  }
  gsize differ = 0;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&fa); ++p) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(info.finfo, p, comp);
    const gsize row = static_cast<gsize>(GST_VIDEO_FRAME_COMP_WIDTH(&fa, comp[0])) *
                      static_cast<gsize>(GST_VIDEO_FRAME_COMP_PSTRIDE(&fa, comp[0]));
    for (gint y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT(&fa, comp[0]); ++y) {
      const auto *ra = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&fa, p)) +
                       static_cast<gsize>(y) * static_cast<gsize>(GST_VIDEO_FRAME_PLANE_STRIDE(&fa, p));
      const auto *rb = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&fb, p)) +
                       static_cast<gsize>(y) * static_cast<gsize>(GST_VIDEO_FRAME_PLANE_STRIDE(&fb, p));
      for (gsize i = 0; i < row; ++i)
        differ += ra[i] != rb[i] ? 1 : 0;
    }
  }
  gst_video_frame_unmap(&fb);
  gst_video_frame_unmap(&fa);
  return differ;
}

class FrameCopy : public ::testing::TestWithParam<std::tuple<const char *, Case>> {};

TEST_P(FrameCopy, OddRowsAndUnalignedPlanesArriveByteExact) {
  const auto &[element, c] = GetParam();
  const std::string caps = std::string("video/x-raw,format=") + c.format + ",width=" + std::to_string(c.width) +
                           ",height=" + std::to_string(c.height) + ",framerate=30/1";
  GstHarness *h = gst_harness_new_parse((std::string(element) + " name=el").c_str());
  gst_harness_set_caps_str(h, caps.c_str(), caps.c_str());
  for (gsize misalign : {gsize{0}, gsize{3}, gsize{13}})
    for (gsize pad : {gsize{0}, gsize{7}, gsize{256}}) {
      GstBuffer *in = strided_frame(c, misalign, pad);
      ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(in)), GST_FLOW_OK);
      GstBuffer *out = gst_harness_pull(h);
      ASSERT_NE(out, nullptr);
      EXPECT_EQ(differing_bytes(caps, in, out), 0u) << element << ", " << c.format << " " << c.width << "x" << c.height
                                                    << ", planes " << misalign << " bytes off, rows padded by " << pad;
      gst_buffer_unref(out);
      gst_buffer_unref(in);
    }
  guint64 copied = 0;
  GstElement *el = gst_bin_get_by_name(GST_BIN(h->element), "el");
  ASSERT_NE(el, nullptr);
  g_object_get(el, "copied-bytes", &copied, nullptr);
  gst_object_unref(el);
  EXPECT_GT(copied, 0u) << "no frame went through the copy";
  gst_harness_teardown(h);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<const char *, Case>> &info) {
  const auto &[element, c] = info.param;
  std::string name = std::string(std::strncmp(element, "tensordownload", 14) == 0 ? "download" : "upload") + "_" +
                     c.format + "_" + std::to_string(c.width) + "x" + std::to_string(c.height);
  return name;
}

INSTANTIATE_TEST_SUITE_P(Elements, FrameCopy,
                         ::testing::Combine(::testing::Values("tensordownload", "tensorupload storage=system"),
                                            ::testing::ValuesIn(kCases)),
                         case_name);

} // namespace
