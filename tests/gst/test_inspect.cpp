// SPDX-License-Identifier: Apache-2.0
/* tensorinspect's per-frame report, against a plain reference computed here:
 * the checksum is the 64-bit XXH3 of the visible rows of every plane laid end to end
 * (padding bytes are filled with a marker that must not reach the hash), and
 * min, max and mean are those of the first plane's visible bytes. Frame sizes
 * cover XXH3's short-input paths (up to 16, 128 and 240 bytes) and its
 * streaming path. */
#include "test_util.hpp"

#include <gst/check/gstharness.h>

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr guint8 kPadding = 0xee;

struct PlaneSpec {
  gsize row_bytes; // visible bytes per row
  guint rows;
  gsize stride;
};

struct Frame {
  std::vector<guint8> bytes;   // the buffer, padding included
  std::vector<guint8> visible; // every plane's visible rows, end to end
  std::vector<guint8> first;   // the first plane's visible bytes
  std::vector<gsize> offsets;
  std::vector<gint> strides;
};

/* A frame of `planes` laid out one after another with their strides; the
 * visible bytes random, the padding `kPadding`. */
Frame make_frame(const std::vector<PlaneSpec> &planes, std::uint32_t seed) {
  Frame f;
  std::mt19937 rng(seed);
  for (std::size_t p = 0; p < planes.size(); ++p) {
    const PlaneSpec &spec = planes[p];
    f.offsets.push_back(f.bytes.size());
    f.strides.push_back(static_cast<gint>(spec.stride));
    for (guint y = 0; y < spec.rows; ++y) {
      for (gsize x = 0; x < spec.stride; ++x) {
        const bool visible = x < spec.row_bytes;
        const guint8 b = visible ? static_cast<guint8>(rng() % 200) : kPadding; // never the marker
        f.bytes.push_back(b);
        if (visible) {
          f.visible.push_back(b);
          if (p == 0)
            f.first.push_back(b);
        }
      }
    }
  }
  return f;
}

struct Report {
  std::string checksum;
  guint min = 0, max = 0;
  gdouble mean = 0;
};

/* Pushes `frame` (with a GstVideoMeta carrying its layout) through
 * tensorinspect under `caps` and returns the element message it posted. */
Report inspect(const char *caps, GstVideoFormat format, guint width, guint height, const Frame &frame) {
  Report report;
  GstHarness *h = gst_harness_new("tensorinspect");
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, caps);
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, frame.bytes.size(), nullptr);
  gst_buffer_fill(buf, 0, frame.bytes.data(), frame.bytes.size());
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  std::copy(frame.offsets.begin(), frame.offsets.end(), offsets);
  std::copy(frame.strides.begin(), frame.strides.end(), strides);
  if (format != GST_VIDEO_FORMAT_UNKNOWN) // tensors carry no video meta
    gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, format, width, height,
                                   static_cast<guint>(frame.offsets.size()), offsets, strides);
  GstBuffer *out = gst_harness_push_and_pull(h, buf);
  EXPECT_NE(out, nullptr);
  if (out)
    gst_buffer_unref(out);
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT);
  EXPECT_NE(msg, nullptr) << "no tensorinspect message";
  if (msg) {
    const GstStructure *s = gst_message_get_structure(msg);
    EXPECT_TRUE(gst_structure_has_name(s, "tensorinspect"));
    report.checksum = gst_structure_get_string(s, "checksum");
    gst_structure_get_uint(s, "min", &report.min);
    gst_structure_get_uint(s, "max", &report.max);
    gst_structure_get_double(s, "mean", &report.mean);
    EXPECT_STREQ(gst_structure_get_string(s, "path"), "host");
    gst_message_unref(msg);
  }
  gchar *last = nullptr;
  g_object_get(h->element, "last-checksum", &last, nullptr);
  EXPECT_EQ(report.checksum, last ? last : "");
  g_free(last);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  return report;
}

void expect_report(const Report &report, const Frame &frame) {
  gchar expected[17];
  g_snprintf(expected, sizeof expected, "%016" G_GINT64_MODIFIER "x",
             static_cast<guint64>(XXH3_64bits(frame.visible.data(), frame.visible.size())));
  EXPECT_EQ(report.checksum, expected);
  ASSERT_FALSE(frame.first.empty());
  EXPECT_EQ(report.min, *std::min_element(frame.first.begin(), frame.first.end()));
  EXPECT_EQ(report.max, *std::max_element(frame.first.begin(), frame.first.end()));
  double sum = 0;
  for (guint8 b : frame.first)
    sum += b;
  EXPECT_DOUBLE_EQ(report.mean, sum / static_cast<double>(frame.first.size()));
}

TEST(InspectChecksum, Gray8OfEverySizeClassIsXxh3OfTheVisibleRows) {
  // Visible totals 4, 100, 200, 3599 and 64 KiB + 1 row bytes: each of XXH3's input classes.
  const guint sizes[][2] = {{2, 2}, {10, 10}, {20, 10}, {61, 59}, {641, 103}};
  for (const auto &wh : sizes) {
    const std::string caps = "video/x-raw,format=GRAY8,width=" + std::to_string(wh[0]) +
                             ",height=" + std::to_string(wh[1]) + ",framerate=1/1";
    SCOPED_TRACE(caps);
    Frame frame = make_frame({{wh[0], wh[1], wh[0] + 7u}}, wh[0] * 1000 + wh[1]);
    expect_report(inspect(caps.c_str(), GST_VIDEO_FORMAT_GRAY8, wh[0], wh[1], frame), frame);
  }
}

TEST(InspectChecksum, PaddedRgbRowsAreHashedWithoutTheirPadding) {
  Frame frame = make_frame({{97 * 3, 13, 97 * 3 + 37}}, 7);
  expect_report(inspect("video/x-raw,format=RGB,width=97,height=13,framerate=1/1", GST_VIDEO_FORMAT_RGB, 97, 13, frame),
                frame);
}

TEST(InspectChecksum, I420PlanesAreHashedInOrderStatisticsOverLumaOnly) {
  // 33x17: chroma planes 17x9, each plane with a stride of its own.
  Frame frame = make_frame({{33, 17, 40}, {17, 9, 24}, {17, 9, 32}}, 11);
  expect_report(
      inspect("video/x-raw,format=I420,width=33,height=17,framerate=1/1", GST_VIDEO_FORMAT_I420, 33, 17, frame), frame);
}

/* The padding marker must not reach the hash: the same visible bytes under
 * two different strides give one checksum, and changing one visible byte
 * changes it. */
TEST(InspectChecksum, DependsOnVisibleBytesOnly) {
  Frame narrow = make_frame({{50, 20, 50}}, 3);
  Frame wide = make_frame({{50, 20, 64}}, 3);
  ASSERT_EQ(narrow.visible, wide.visible);
  const char *caps = "video/x-raw,format=GRAY8,width=50,height=20,framerate=1/1";
  const Report a = inspect(caps, GST_VIDEO_FORMAT_GRAY8, 50, 20, narrow);
  const Report b = inspect(caps, GST_VIDEO_FORMAT_GRAY8, 50, 20, wide);
  EXPECT_EQ(a.checksum, b.checksum);
  wide.bytes[64 * 19 + 49] ^= 1; // the last visible byte
  const Report c = inspect(caps, GST_VIDEO_FORMAT_GRAY8, 50, 20, wide);
  EXPECT_NE(a.checksum, c.checksum);
}

} // namespace

TEST(InspectChecksum, ATensorIsHashedOverItsOwnBytesNotTheBuffersTail) {
  // float32 [1, 7, 5, 3] = 420 bytes in a 429-byte buffer: the 9 trailing
  // bytes are not the tensor's.
  const Frame frame = make_frame({{420, 1, 429}}, 17);
  expect_report(inspect("other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)3:5:7:1,"
                        "framerate=0/1",
                        GST_VIDEO_FORMAT_UNKNOWN, 0, 0, frame),
                frame);
}

TEST(InspectChecksum, ABufferShorterThanItsTensorIsAnElementError) {
  GstHarness *h = gst_harness_new("tensorinspect");
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)64:1");
  EXPECT_EQ(gst_harness_push(h, gst_buffer_new_allocate(nullptr, 63, nullptr)), GST_FLOW_ERROR);
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  ASSERT_NE(msg, nullptr);
  GError *error = nullptr;
  gchar *debug = nullptr;
  gst_message_parse_error(msg, &error, &debug);
  EXPECT_NE(std::string(error->message).find("holds 63 bytes, the caps' tensor needs 64"), std::string::npos)
      << error->message;
  g_error_free(error);
  g_free(debug);
  gst_message_unref(msg);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}
