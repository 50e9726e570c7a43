// SPDX-License-Identifier: Apache-2.0
/* tensorresultmap: object-detection boxes (and, on 1.26, rotated boxes and
 * segmentation locations) mapped from tensor to frame coordinates for the
 * three ways tensorconvert fits a frame (letterbox, stretch, centre crop),
 * against a reference written here from the resize meta's definition; the
 * resize meta tensorconvert really writes, read through a real chain;
 * buffers without a resize meta or without boxes untouched; a resize meta
 * that describes no transform as one element error; classification and
 * tracking results and their relations kept. */
#include "element_fixture.hpp"
#include "pipeline_util.hpp"

#include <gst/analytics/analytics.h>
#include <gst/app/gstappsrc.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr guint kFrameW = 1920, kFrameH = 1080, kTensor = 640;
const char *const kFrameCaps = "video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1";

struct Box {
  gint x, y, w, h;
  bool operator==(const Box &o) const { return x == o.x && y == o.y && w == o.w && h == o.h; }
};

std::ostream &operator<<(std::ostream &os, const Box &b) {
  return os << "(" << b.x << ", " << b.y << ", " << b.w << "x" << b.h << ")";
}

/* The geometry of each resize mode for a 1920x1080 frame in a 640x640
 * tensor, from the definitions in docs/tensorconvert.md: letterbox scales by
 * the smaller ratio and centres, stretch scales each axis, crop scales by the
 * larger ratio and centres the overhang. */
struct Geometry {
  double scale_x, scale_y, offset_x, offset_y;
  guint content_x, content_y, content_w, content_h;
};

Geometry letterbox() {
  const double s = std::min(double(kTensor) / kFrameW, double(kTensor) / kFrameH); // 1/3
  const guint cw = guint(std::lround(kFrameW * s)), ch = guint(std::lround(kFrameH * s));
  const guint px = (kTensor - cw) / 2, py = (kTensor - ch) / 2;
  return {double(cw) / kFrameW, double(ch) / kFrameH, double(px), double(py), px, py, cw, ch};
}

Geometry stretch() { return {double(kTensor) / kFrameW, double(kTensor) / kFrameH, 0, 0, 0, 0, kTensor, kTensor}; }

Geometry crop() {
  const double s = std::max(double(kTensor) / kFrameW, double(kTensor) / kFrameH);
  return {s, s, (kTensor - kFrameW * s) / 2, (kTensor - kFrameH * s) / 2, 0, 0, kTensor, kTensor};
}

void add_resize_meta(GstBuffer *buffer, const Geometry &g) {
  GstTensorMemResizeMeta *m = gst_buffer_add_tensor_mem_resize_meta(buffer);
  m->in_width = kFrameW;
  m->in_height = kFrameH;
  m->out_width = m->out_height = kTensor;
  m->scale_x = g.scale_x;
  m->scale_y = g.scale_y;
  m->offset_x = g.offset_x;
  m->offset_y = g.offset_y;
  m->content_x = g.content_x;
  m->content_y = g.content_y;
  m->content_width = g.content_w;
  m->content_height = g.content_h;
}

/* The reference: each edge to the frame by (t - offset) / scale, clamped to
 * the frame, rounded. */
Box expected(const Box &t, const Geometry &g) {
  auto edge = [](double v, double o, double s, double extent) {
    return std::lround(std::clamp((v - o) / s, 0.0, extent));
  };
  const long x0 = edge(t.x, g.offset_x, g.scale_x, kFrameW), x1 = edge(t.x + t.w, g.offset_x, g.scale_x, kFrameW);
  const long y0 = edge(t.y, g.offset_y, g.scale_y, kFrameH), y1 = edge(t.y + t.h, g.offset_y, g.scale_y, kFrameH);
  return {gint(x0), gint(y0), gint(x1 - x0), gint(y1 - y0)};
}

GstAnalyticsRelationMeta *add_boxes(GstBuffer *buffer, const std::vector<Box> &boxes) {
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta(buffer);
  for (const Box &b : boxes) {
    GstAnalyticsODMtd od;
    EXPECT_TRUE(gst_analytics_relation_meta_add_od_mtd(rmeta, g_quark_from_static_string("ball"), b.x, b.y, b.w, b.h,
                                                       0.75f, &od));
  }
  return rmeta;
}

std::vector<Box> boxes_of(GstBuffer *buffer) {
  std::vector<Box> boxes;
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta(buffer);
  if (!rmeta)
    return boxes;
  gpointer state = nullptr;
  GstAnalyticsODMtd od;
  while (gst_analytics_relation_meta_iterate(rmeta, &state, gst_analytics_od_mtd_get_mtd_type(), &od)) {
    Box b{};
    gfloat confidence = 0;
    EXPECT_TRUE(gst_analytics_od_mtd_get_location(&od, &b.x, &b.y, &b.w, &b.h, &confidence));
    EXPECT_FLOAT_EQ(confidence, 0.75f);
    EXPECT_EQ(gst_analytics_od_mtd_get_obj_type(&od), g_quark_from_static_string("ball"));
    boxes.push_back(b);
  }
  return boxes;
}

guint64 uint64_property(GstElement *element, const char *name) {
  guint64 value = 0;
  g_object_get(element, name, &value, nullptr);
  return value;
}

class ResultMapTest : public tmtest::ElementFixture {
protected:
  void SetUp() override {
    start("tensorresultmap", kFrameCaps);
    gst_harness_set_src_caps_str(h_, kFrameCaps);
  }

  /* Pushes one buffer and returns what came out (owned by the caller). */
  GstBuffer *push_pull(GstBuffer *in) {
    EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_OK) << posted_error();
    return gst_harness_pull(h_);
  }

  /* Boxes in tensor coordinates through the element under `g`: each comes
   * out where the reference says. */
  void expect_mapped(const Geometry &g, const std::vector<Box> &tensor_boxes, guint64 clamped) {
    GstBuffer *in = gst_buffer_new();
    add_resize_meta(in, g);
    add_boxes(in, tensor_boxes);
    GstBuffer *out = push_pull(in);
    ASSERT_NE(out, nullptr);
    const std::vector<Box> got = boxes_of(out);
    ASSERT_EQ(got.size(), tensor_boxes.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], expected(tensor_boxes[i], g)) << "tensor box " << tensor_boxes[i];
    EXPECT_NE(gst_buffer_get_tensor_mem_resize_meta(out), nullptr);
    gst_buffer_unref(out);
    EXPECT_EQ(uint64_property(h_->element, "mapped"), tensor_boxes.size());
    EXPECT_EQ(uint64_property(h_->element, "clamped"), clamped);
  }
};

TEST_F(ResultMapTest, LetterboxBoxesLandOnTheFrame) {
  const Geometry g = letterbox();
  ASSERT_EQ(g.content_y, 140u);
  ASSERT_EQ(g.content_h, 360u);
  // Inside the picture, the whole picture, half in the top padding, and
  // entirely in the bottom padding (kept, clamped to the frame's edge).
  expect_mapped(g, {{100, 200, 50, 60}, {0, 140, 640, 360}, {10, 120, 30, 40}, {300, 560, 20, 30}}, 2);
  // Worked by hand: x * 3, (y - 140) * 3.
  EXPECT_EQ(expected({100, 200, 50, 60}, g), (Box{300, 180, 150, 180}));
  EXPECT_EQ(expected({0, 140, 640, 360}, g), (Box{0, 0, 1920, 1080}));
  EXPECT_EQ(expected({300, 560, 20, 30}, g), (Box{900, 1080, 60, 0}));
}

TEST_F(ResultMapTest, StretchedBoxesScalePerAxis) {
  const Geometry g = stretch();
  expect_mapped(g, {{100, 200, 50, 60}, {0, 0, 640, 640}, {600, 600, 40, 40}}, 0);
  EXPECT_EQ(expected({100, 200, 50, 60}, g), (Box{300, 338, 150, 101}));
}

TEST_F(ResultMapTest, CroppedBoxesShiftIntoTheFrame) {
  const Geometry g = crop();
  ASSERT_LT(g.offset_x, -248.0);
  expect_mapped(g, {{0, 0, 640, 640}, {320, 320, 64, 64}, {5, 600, 100, 40}}, 0);
  // The tensor's left edge is the frame's column 420 (of the 1920 the crop
  // keeps 1080 in the middle).
  EXPECT_EQ(expected({0, 0, 640, 640}, g), (Box{420, 0, 1080, 1080}));
}

TEST_F(ResultMapTest, WithoutResizeMetaTheBufferPassesUnchanged) {
  GstBuffer *in = gst_buffer_new();
  add_boxes(in, {{100, 200, 50, 60}});
  expect_passed_through(in);
  GstBuffer *out = gst_buffer_new();
  add_boxes(out, {{100, 200, 50, 60}});
  GstBuffer *pulled = push_pull(out);
  ASSERT_NE(pulled, nullptr);
  EXPECT_EQ(boxes_of(pulled), (std::vector<Box>{{100, 200, 50, 60}}));
  gst_buffer_unref(pulled);
  EXPECT_EQ(uint64_property(h_->element, "mapped"), 0u);
  // One warning for the stream, not one per frame.
  guint warnings = 0;
  while (GstMessage *msg = gst_bus_pop_filtered(bus_, GST_MESSAGE_WARNING)) {
    ++warnings;
    gst_message_unref(msg);
  }
  EXPECT_EQ(warnings, 1u);
}

TEST_F(ResultMapTest, WithoutBoxesTheBufferIsNotTouched) {
  GstBuffer *in = gst_buffer_new();
  add_resize_meta(in, letterbox());
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta(in);
  GQuark cls = g_quark_from_static_string("cat");
  gfloat level = 0.5f;
  GstAnalyticsClsMtd mtd;
  ASSERT_TRUE(gst_analytics_relation_meta_add_cls_mtd(rmeta, 1, &level, &cls, &mtd));
  expect_passed_through(in);
  EXPECT_EQ(uint64_property(h_->element, "mapped"), 0u);
}

TEST_F(ResultMapTest, ClassificationAndTrackingKeepTheirRelations) {
  GstBuffer *in = gst_buffer_new();
  const Geometry g = letterbox();
  add_resize_meta(in, g);
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta(in);
  GQuark classes[2] = {g_quark_from_static_string("cat"), g_quark_from_static_string("dog")};
  gfloat levels[2] = {0.9f, 0.1f};
  GstAnalyticsClsMtd cls;
  ASSERT_TRUE(gst_analytics_relation_meta_add_cls_mtd(rmeta, 2, levels, classes, &cls));
  GstAnalyticsODMtd od;
  ASSERT_TRUE(gst_analytics_relation_meta_add_od_mtd(rmeta, classes[0], 100, 200, 50, 60, 0.75f, &od));
  GstAnalyticsTrackingMtd track;
  ASSERT_TRUE(gst_analytics_relation_meta_add_tracking_mtd(rmeta, 42, 1000, &track));
  ASSERT_TRUE(gst_analytics_relation_meta_set_relation(rmeta, GST_ANALYTICS_REL_TYPE_RELATE_TO, od.id, cls.id));
  ASSERT_TRUE(gst_analytics_relation_meta_set_relation(rmeta, GST_ANALYTICS_REL_TYPE_IS_PART_OF, od.id, track.id));

  GstBuffer *out = push_pull(in);
  ASSERT_NE(out, nullptr);
  GstAnalyticsRelationMeta *mapped = gst_buffer_get_analytics_relation_meta(out);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(gst_analytics_relation_get_length(mapped), 3u);
  GstAnalyticsODMtd out_od;
  ASSERT_TRUE(gst_analytics_relation_meta_get_od_mtd(mapped, od.id, &out_od));
  Box b{};
  ASSERT_TRUE(gst_analytics_od_mtd_get_location(&out_od, &b.x, &b.y, &b.w, &b.h, nullptr));
  EXPECT_EQ(b, expected({100, 200, 50, 60}, g));

  GstAnalyticsClsMtd out_cls;
  ASSERT_TRUE(gst_analytics_relation_meta_get_direct_related(mapped, out_od.id, GST_ANALYTICS_REL_TYPE_RELATE_TO,
                                                             gst_analytics_cls_mtd_get_mtd_type(), nullptr, &out_cls));
  ASSERT_EQ(gst_analytics_cls_mtd_get_length(&out_cls), 2u);
  EXPECT_EQ(gst_analytics_cls_mtd_get_quark(&out_cls, 0), classes[0]);
  EXPECT_EQ(gst_analytics_cls_mtd_get_quark(&out_cls, 1), classes[1]);
  EXPECT_FLOAT_EQ(gst_analytics_cls_mtd_get_level(&out_cls, 0), 0.9f);
  EXPECT_FLOAT_EQ(gst_analytics_cls_mtd_get_level(&out_cls, 1), 0.1f);

  GstAnalyticsTrackingMtd out_track;
  ASSERT_TRUE(gst_analytics_relation_meta_get_direct_related(mapped, out_od.id, GST_ANALYTICS_REL_TYPE_IS_PART_OF,
                                                             gst_analytics_tracking_mtd_get_mtd_type(), nullptr,
                                                             &out_track));
  guint64 id = 0;
  GstClockTime first = 0, last = 0;
  gboolean lost = TRUE;
  ASSERT_TRUE(gst_analytics_tracking_mtd_get_info(&out_track, &id, &first, &last, &lost));
  EXPECT_EQ(id, 42u);
  EXPECT_EQ(first, 1000u);
  EXPECT_FALSE(lost);
  EXPECT_EQ(gst_analytics_relation_meta_get_relation(mapped, out_od.id, out_cls.id), GST_ANALYTICS_REL_TYPE_RELATE_TO);
  gst_buffer_unref(out);
}

#if GST_TENSOR_MEM_HAVE_ORIENTED_OD
TEST_F(ResultMapTest, RotatedBoxesKeepTheirAngle) {
  GstBuffer *in = gst_buffer_new();
  add_resize_meta(in, letterbox());
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta(in);
  GstAnalyticsODMtd od;
  ASSERT_TRUE(gst_analytics_relation_meta_add_oriented_od_mtd(rmeta, g_quark_from_static_string("ball"), 100, 200, 50,
                                                              60, 0.5f, 0.75f, &od));
  GstBuffer *out = push_pull(in);
  ASSERT_NE(out, nullptr);
  GstAnalyticsODMtd out_od;
  ASSERT_TRUE(gst_analytics_relation_meta_get_od_mtd(gst_buffer_get_analytics_relation_meta(out), od.id, &out_od));
  Box b{};
  gfloat angle = 0;
  ASSERT_TRUE(gst_analytics_od_mtd_get_oriented_location(&out_od, &b.x, &b.y, &b.w, &b.h, &angle, nullptr));
  EXPECT_EQ(b, (Box{300, 180, 150, 180})); // centre (125, 230) is (375, 270); sides times 3
  EXPECT_FLOAT_EQ(angle, 0.5f);
  gst_buffer_unref(out);
}
#endif

#if GST_TENSOR_MEM_HAVE_SEGMENTATION_MTD
TEST_F(ResultMapTest, SegmentationMasksMoveWithTheirLocation) {
  GstBuffer *in = gst_buffer_new();
  add_resize_meta(in, letterbox());
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta(in);
  GstBuffer *mask = gst_buffer_new_allocate(nullptr, 64 * 64, nullptr);
  gst_buffer_add_video_meta(mask, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, 64, 64);
  guint regions[2] = {0, 7};
  GstAnalyticsSegmentationMtd seg;
  ASSERT_TRUE(gst_analytics_relation_meta_add_segmentation_mtd(rmeta, mask, GST_SEGMENTATION_TYPE_INSTANCE, 2, regions,
                                                               0, 0, 640, 640, &seg));
  GstBuffer *out = push_pull(in);
  ASSERT_NE(out, nullptr);
  GstAnalyticsSegmentationMtd out_seg;
  ASSERT_TRUE(
      gst_analytics_relation_meta_get_segmentation_mtd(gst_buffer_get_analytics_relation_meta(out), seg.id, &out_seg));
  gint x = 0, y = 0;
  guint w = 0, h = 0;
  GstBuffer *out_mask = gst_analytics_segmentation_mtd_get_mask(&out_seg, &x, &y, &w, &h);
  EXPECT_EQ(out_mask, mask); // the mask itself, not a copy
  gst_buffer_unref(out_mask);
  // The whole tensor, padding included: not clamped, so the mask's rows
  // still land where they were in the picture.
  EXPECT_EQ(x, 0);
  EXPECT_EQ(y, -420);
  EXPECT_EQ(w, 1920u);
  EXPECT_EQ(h, 1920u);
  ASSERT_EQ(gst_analytics_segmentation_mtd_get_region_count(&out_seg), 2u);
  EXPECT_EQ(gst_analytics_segmentation_mtd_get_region_id(&out_seg, 1), 7u);
  gst_buffer_unref(out);
}
#endif

/* A resize meta that describes no transform: one element error naming the
 * frame and the tensor, and the pipeline still goes back to NULL (which
 * run_pipeline checks). */
TEST(ResultMapPipeline, InconsistentResizeMetaIsAnElementError) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline("appsrc name=src format=time caps=video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1 "
                       "! tensorresultmap ! fakesink",
                       &run, nullptr, [](GstElement *pipeline) {
                         GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
                         GstBuffer *buffer = gst_buffer_new();
                         Geometry g = letterbox();
                         g.content_h = 600; // rows 140 to 740 of a 640-row tensor
                         add_resize_meta(buffer, g);
                         add_boxes(buffer, {{100, 200, 50, 60}});
                         GST_BUFFER_PTS(buffer) = 0;
                         EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buffer), GST_FLOW_OK);
                         gst_app_src_end_of_stream(GST_APP_SRC(src));
                         gst_object_unref(src);
                       });
  EXPECT_FALSE(run.eos);
  EXPECT_EQ(run.error_domain, GST_STREAM_ERROR);
  EXPECT_NE(run.error_debug.find("frame 1920x1080, tensor 640x640"), std::string::npos) << run.error_debug;
  EXPECT_NE(run.error_debug.find("content 0,140 640x600"), std::string::npos) << run.error_debug;
}

TEST_F(ResultMapTest, ZeroSizedResizeMetaIsAnElementError) {
  GstBuffer *in = gst_buffer_new();
  Geometry g = letterbox();
  add_resize_meta(in, g);
  gst_buffer_get_tensor_mem_resize_meta(in)->in_width = 0;
  add_boxes(in, {{100, 200, 50, 60}});
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string error = posted_error(GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT);
  EXPECT_NE(error.find("frame 0x1080, tensor 640x640: a size is 0"), std::string::npos) << error;
}

/* Boxes tensorconvert's own resize meta maps: the box of the whole tensor
 * picture is the whole frame, and a box in tensor pixels lands where the
 * letterbox put those pixels. */
TEST(ResultMapPipeline, TensorconvertResizeMetaIsReadRight) {
  const char *output = GST_TENSOR_MEM_HAVE_TENSOR_META ? "meta" : "tensor";
  tmtest::PipelineRun run;
  GstElement *map = nullptr;
  tmtest::run_pipeline(std::string("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=1920,height=1080 ! "
                                   "tensorconvert output=") +
                           output +
                           " width=640 height=640 resize=letterbox ! tensorresultmap name=map ! appsink name=sink",
                       &run, nullptr, [&map](GstElement *pipeline) {
                         map = gst_bin_get_by_name(GST_BIN(pipeline), "map");
                         GstPad *sinkpad = gst_element_get_static_pad(map, "sink");
                         // What a decoder would add: boxes in the tensor's pixels.
                         gst_pad_add_probe(
                             sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
                             [](GstPad *, GstPadProbeInfo *info, gpointer) {
                               GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
                               GST_PAD_PROBE_INFO_DATA(info) = buffer;
                               add_boxes(buffer, {{0, 140, 640, 360}, {100, 200, 50, 60}});
                               return GST_PAD_PROBE_OK;
                             },
                             nullptr, nullptr);
                         gst_object_unref(sinkpad);
                       });
  EXPECT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 2u);
  for (GstSample *sample : run.samples) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    const GstTensorMemResizeMeta *m = gst_buffer_get_tensor_mem_resize_meta(buffer);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->in_width, kFrameW);
    EXPECT_EQ(m->out_height, kTensor);
    EXPECT_EQ(boxes_of(buffer), (std::vector<Box>{{0, 0, 1920, 1080}, {300, 180, 150, 180}}));
  }
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(uint64_property(map, "mapped"), 4u);
  EXPECT_EQ(uint64_property(map, "clamped"), 0u);
  gst_object_unref(map);
}

} // namespace
