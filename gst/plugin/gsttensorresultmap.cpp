// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorresultmap
 * @title: tensorresultmap
 *
 * Maps the GstAnalytics results on a buffer (#GstAnalyticsRelationMeta) from
 * the coordinates of the model's input tensor to those of the video frame.
 * It goes after any tensor decoder: decoders see only the tensor, so their
 * boxes are in its pixels; `tensorconvert` recorded on the same buffer how it
 * fitted the frame into the tensor (#GstTensorMemResizeMeta: stretch,
 * letterbox or centre crop), and a tensor point t is frame point
 * (t - offset) / scale.
 *
 * - Object-detection boxes (#GstAnalyticsODMtd) are mapped and clamped to
 *   the frame. A box that reaches into the letterbox padding, or lies in it
 *   entirely, is kept, clamped (possibly to zero width or height at the
 *   frame's edge) and counted in #GstTensorMemResultMap:clamped. A rotated
 *   box (GStreamer 1.26) keeps its angle; its centre is mapped and clamped,
 *   its sides scaled.
 * - Segmentation results (GStreamer 1.26) keep their mask; the rectangle the
 *   mask covers is mapped, not clamped, since clamping it would stretch the
 *   mask over a different part of the frame.
 * - Every other result (classification, tracking, an application's own) and
 *   every relation between results is kept as it was.
 *
 * GStreamer's analytics API has no setter for a box, so the relation meta is
 * rebuilt: each result is copied, in order, into a new one, boxes mapped, and
 * the new meta replaces the old. Results keep their ids.
 *
 * A buffer without a #GstTensorMemResizeMeta passes through unchanged (the
 * tensor was the frame, or the results were made elsewhere); the element
 * says so once, with an element warning. A resize meta that describes no transform
 * (a size of 0, a scale that is not a positive number, a content rectangle
 * outside the tensor or not covered by the frame) is an element error
 * (%GST_STREAM_ERROR_FORMAT) naming the frame and the tensor. A buffer with
 * nothing to map is not touched.
 *
 * After `tensorbatch` one buffer holds many frames and its results do not
 * say which slot they came from; map them per stream, after the batch has
 * been split again and each frame carries its own resize meta.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=street.mp4 ! decodebin3 ! videoconvert ! \
 *   tensorconvert output=meta width=640 height=640 resize=letterbox ! \
 *   tensorinfer model=yolov8n.onnx ! yolov8tensordec ! tensorresultmap ! \
 *   objectdetectionoverlay ! videoconvert ! autovideosink
 * ]|
 *
 * Since: 0.2
 */
#include "gsttensorresultmap.h"

#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensormemresizemeta.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_result_map_debug);
#define GST_CAT_DEFAULT gst_tensor_result_map_debug

struct _GstTensorMemResultMap {
  GstBaseTransform parent;
  guint64 mapped;         // object lock
  guint64 clamped;        // object lock
  gboolean told_unmapped; // streaming thread: a buffer without resize meta was reported
};

namespace {

enum { PROP_0, PROP_MAPPED, PROP_CLAMPED };

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

std::string printf_string(const char *format, ...) G_GNUC_PRINTF(1, 2);
std::string printf_string(const char *format, ...) {
  va_list args;
  va_start(args, format);
  gchar *text = g_strdup_vprintf(format, args);
  va_end(args);
  std::string result(text);
  g_free(text);
  return result;
}

/* Tensor coordinates to frame coordinates: t maps to (t - offset) / scale. */
struct FrameMap {
  double scale_x;
  double scale_y;
  double offset_x;
  double offset_y;
  double frame_width;
  double frame_height;
};

/* What is wrong with `m` as a description of tensorconvert's transform, or
 * an empty string. */
std::string resize_meta_problem(const GstTensorMemResizeMeta &m) {
  const std::string sides =
      printf_string("frame %ux%u, tensor %ux%u", m.in_width, m.in_height, m.out_width, m.out_height);
  if (!m.in_width || !m.in_height || !m.out_width || !m.out_height)
    return sides + ": a size is 0";
  if (!(std::isfinite(m.scale_x) && m.scale_x > 0 && std::isfinite(m.scale_y) && m.scale_y > 0))
    return sides + printf_string(": scale %g x %g is not a positive number", m.scale_x, m.scale_y);
  if (!std::isfinite(m.offset_x) || !std::isfinite(m.offset_y))
    return sides + printf_string(": offset %g, %g is not finite", m.offset_x, m.offset_y);
  const std::string content =
      printf_string("content %u,%u %ux%u", m.content_x, m.content_y, m.content_width, m.content_height);
  if (!m.content_width || !m.content_height || guint64{m.content_x} + m.content_width > m.out_width ||
      guint64{m.content_y} + m.content_height > m.out_height)
    return sides + ": " + content + " does not lie within the tensor";
  // The content rectangle is where the frame's picture is; the frame placed
  // by scale and offset must cover it, to a tensor pixel of rounding.
  const double left = m.offset_x, right = m.offset_x + m.in_width * m.scale_x;
  const double top = m.offset_y, bottom = m.offset_y + m.in_height * m.scale_y;
  if (left > m.content_x + 1.0 || right < m.content_x + m.content_width - 1.0 || top > m.content_y + 1.0 ||
      bottom < m.content_y + m.content_height - 1.0)
    return sides +
           printf_string(": scale %g x %g and offset %g, %g place the frame at tensor [%g, %g) x [%g, %g), "
                         "which does not cover its ",
                         m.scale_x, m.scale_y, m.offset_x, m.offset_y, left, right, top, bottom) +
           content;
  return {};
}

/* Maps the tensor span [t, t + length) onto the frame axis [0, extent],
 * rounded to whole pixels; returns whether clamping moved an end. */
bool map_span(gint t, gint length, double offset, double scale, double extent, gint *start, gint *size) {
  double a = (t - offset) / scale, b = (t + static_cast<double>(length) - offset) / scale;
  if (b < a)
    std::swap(a, b);
  const double ca = std::clamp(a, 0.0, extent), cb = std::clamp(b, 0.0, extent);
  const long lo = std::lround(ca), hi = std::lround(cb);
  *start = static_cast<gint>(lo);
  *size = static_cast<gint>(hi - lo);
  return ca != a || cb != b;
}

/* A frame coordinate that may lie outside the frame, as a pixel that fits a gint. */
gint unclamped_pixel(double v) { return static_cast<gint>(std::lround(std::clamp(v, -1e9, 1e9))); }

struct MapCounts {
  guint64 mapped = 0;
  guint64 clamped = 0;
};

bool add_mapped_od(GstAnalyticsRelationMeta *to, const GstAnalyticsMtd *od, const FrameMap &map, MapCounts *counts,
                   GstAnalyticsMtd *copy) {
  gint x = 0, y = 0, w = 0, h = 0;
  gfloat confidence = 0.f, angle = 0.f;
#if GST_TENSOR_MEM_HAVE_ORIENTED_OD
  if (!gst_analytics_od_mtd_get_oriented_location(od, &x, &y, &w, &h, &angle, &confidence))
    return false;
#else
  if (!gst_analytics_od_mtd_get_location(od, &x, &y, &w, &h, &confidence))
    return false;
#endif
  const GQuark type = gst_analytics_od_mtd_get_obj_type(od);
  gint fx = 0, fy = 0, fw = 0, fh = 0;
  bool clamped = false;
  if (angle == 0.f) {
    clamped = map_span(x, w, map.offset_x, map.scale_x, map.frame_width, &fx, &fw);
    clamped = map_span(y, h, map.offset_y, map.scale_y, map.frame_height, &fy, &fh) || clamped;
  } else {
    // A rotated rectangle cannot be clamped edge by edge and stay a
    // rectangle: its centre is kept on the frame, its sides scaled.
    const double cx = (x + w / 2.0 - map.offset_x) / map.scale_x, cy = (y + h / 2.0 - map.offset_y) / map.scale_y;
    const double kx = std::clamp(cx, 0.0, map.frame_width), ky = std::clamp(cy, 0.0, map.frame_height);
    clamped = kx != cx || ky != cy;
    const double sw = w / map.scale_x, sh = h / map.scale_y;
    fx = unclamped_pixel(kx - sw / 2);
    fy = unclamped_pixel(ky - sh / 2);
    fw = unclamped_pixel(sw);
    fh = unclamped_pixel(sh);
  }
  counts->mapped++;
  if (clamped)
    counts->clamped++;
#if GST_TENSOR_MEM_HAVE_ORIENTED_OD
  if (angle != 0.f)
    return gst_analytics_relation_meta_add_oriented_od_mtd(to, type, fx, fy, fw, fh, angle, confidence, copy);
#endif
  return gst_analytics_relation_meta_add_od_mtd(to, type, fx, fy, fw, fh, confidence, copy);
}

#if GST_TENSOR_MEM_HAVE_SEGMENTATION_MTD
/* The mask stays as it is; the rectangle of the frame it covers is mapped.
 * GStreamer 1.26 and 1.28 have no getter for the segmentation type, so no
 * reader can tell it: the copy says instance, what upstream's segmentation
 * decoders make. */
bool add_mapped_segmentation(GstAnalyticsRelationMeta *to, const GstAnalyticsMtd *segmentation, const FrameMap &map,
                             GstAnalyticsMtd *copy) {
  gint x = 0, y = 0;
  guint w = 0, h = 0;
  GstBuffer *mask = gst_analytics_segmentation_mtd_get_mask(segmentation, &x, &y, &w, &h);
  if (!mask)
    return false;
  std::vector<guint> regions(gst_analytics_segmentation_mtd_get_region_count(segmentation));
  for (gsize i = 0; i < regions.size(); ++i)
    regions[i] = gst_analytics_segmentation_mtd_get_region_id(segmentation, i);
  const gint left = unclamped_pixel((x - map.offset_x) / map.scale_x);
  const gint top = unclamped_pixel((y - map.offset_y) / map.scale_y);
  const gint right = unclamped_pixel((x + static_cast<double>(w) - map.offset_x) / map.scale_x);
  const gint bottom = unclamped_pixel((y + static_cast<double>(h) - map.offset_y) / map.scale_y);
  return gst_analytics_relation_meta_add_segmentation_mtd(
      to, mask, GST_SEGMENTATION_TYPE_INSTANCE, regions.size(), regions.data(), left, top,
      static_cast<guint>(std::max(right - left, 0)), static_cast<guint>(std::max(bottom - top, 0)), copy);
}
#endif

/* A result with nothing to map, copied as the relation meta's own copy does:
 * its bytes, then its type's copy hook, which takes the references the data
 * holds. A GstAnalyticsMtdType is the address of its type's
 * GstAnalyticsMtdImpl (GStreamer 1.24 to 1.28), so any result type, an
 * application's own included, survives. */
bool add_copy(GstAnalyticsRelationMeta *to, GstBuffer *to_buffer, GstBuffer *from_buffer, const GstAnalyticsMtd *mtd,
              GstAnalyticsMtd *copy) {
  const auto *impl = reinterpret_cast<const GstAnalyticsMtdImpl *>(gst_analytics_mtd_get_mtd_type(mtd));
  const gsize size = gst_analytics_mtd_get_size(mtd);
  const gpointer data = gst_analytics_relation_meta_get_mtd_data(mtd->meta, mtd->id);
  if (!impl || !data)
    return false;
  gpointer to_data = gst_analytics_relation_meta_add_mtd(to, impl, size, copy);
  if (!to_data)
    return false;
  std::memcpy(to_data, data, size);
  GstMetaTransformCopy whole = {FALSE, 0, static_cast<gsize>(-1)};
  return !impl->mtd_meta_transform ||
         impl->mtd_meta_transform(to_buffer, copy, from_buffer, _gst_meta_transform_copy, &whole);
}

/* Copies every result of `from` (on `from_buffer`) into `to` (on
 * `to_buffer`) in id order, boxes mapped, then every relation between them. */
bool copy_mapped(GstAnalyticsRelationMeta *from, GstBuffer *from_buffer, GstAnalyticsRelationMeta *to,
                 GstBuffer *to_buffer, const FrameMap &map, MapCounts *counts) {
  const gsize n = gst_analytics_relation_get_length(from);
  std::vector<guint> new_id(n);
  for (gsize id = 0; id < n; ++id) {
    GstAnalyticsMtd mtd;
    if (!gst_analytics_relation_meta_get_mtd(from, static_cast<guint>(id), GST_ANALYTICS_MTD_TYPE_ANY, &mtd))
      return false;
    const GstAnalyticsMtdType type = gst_analytics_mtd_get_mtd_type(&mtd);
    GstAnalyticsMtd copy;
    bool added = false;
    if (type == gst_analytics_od_mtd_get_mtd_type())
      added = add_mapped_od(to, &mtd, map, counts, &copy);
#if GST_TENSOR_MEM_HAVE_SEGMENTATION_MTD
    else if (type == gst_analytics_segmentation_mtd_get_mtd_type())
      added = add_mapped_segmentation(to, &mtd, map, &copy);
#endif
    else
      added = add_copy(to, to_buffer, from_buffer, &mtd, &copy);
    if (!added)
      return false;
    new_id[id] = copy.id;
  }
  for (gsize a = 0; a < n; ++a) {
    for (gsize b = 0; b < n; ++b) {
      const GstAnalyticsRelTypes relation =
          gst_analytics_relation_meta_get_relation(from, static_cast<guint>(a), static_cast<guint>(b));
      if (a != b && relation != GST_ANALYTICS_REL_TYPE_NONE &&
          !gst_analytics_relation_meta_set_relation(to, relation, new_id[a], new_id[b]))
        return false;
    }
  }
  return true;
}

bool has_boxes(GstAnalyticsRelationMeta *results) {
  gpointer state = nullptr;
  GstAnalyticsMtd mtd;
  while (gst_analytics_relation_meta_iterate(results, &state, GST_ANALYTICS_MTD_TYPE_ANY, &mtd)) {
    const GstAnalyticsMtdType type = gst_analytics_mtd_get_mtd_type(&mtd);
    if (type == gst_analytics_od_mtd_get_mtd_type())
      return true;
#if GST_TENSOR_MEM_HAVE_SEGMENTATION_MTD
    if (type == gst_analytics_segmentation_mtd_get_mtd_type())
      return true;
#endif
  }
  return false;
}

enum class Work { None, NoResizeMeta, Map };

/* What a buffer asks of the element; prepare_output_buffer and transform_ip
 * decide alike, so a buffer is made writable exactly when it is rewritten. */
Work work_of(GstBuffer *buffer) {
  GstAnalyticsRelationMeta *results = gst_buffer_get_analytics_relation_meta(buffer);
  if (!results || !has_boxes(results))
    return Work::None;
  return gst_buffer_get_tensor_mem_resize_meta(buffer) ? Work::Map : Work::NoResizeMeta;
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemResultMap, gst_tensor_result_map, GST_TYPE_BASE_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_result_map_debug, "tensorresultmap", 0,
                                                "GstAnalytics results from tensor to frame coordinates"))

static void gst_tensor_result_map_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_RESULT_MAP(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_MAPPED: g_value_set_uint64(value, self->mapped); break;
  case PROP_CLAMPED: g_value_set_uint64(value, self->clamped); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static GstFlowReturn gst_tensor_result_map_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                                 GstBuffer **outbuf) {
  if (work_of(inbuf) != Work::Map) { // handed on as it came, not copied to make it writable
    *outbuf = inbuf;
    return GST_FLOW_OK;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_result_map_parent_class)->prepare_output_buffer(trans, inbuf, outbuf);
}

static GstFlowReturn gst_tensor_result_map_transform_ip(GstBaseTransform *trans, GstBuffer *buffer) {
  auto *self = GST_TENSOR_RESULT_MAP(trans);
  const Work work = work_of(buffer);
  if (work == Work::None)
    return GST_FLOW_OK;
  if (work == Work::NoResizeMeta) {
    if (!self->told_unmapped)
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                          ("A frame with results but no GstTensorMemResizeMeta: its results pass on unmapped "
                           "(said once)."),
                          ("put tensorconvert before the model; %" GST_PTR_FORMAT, buffer));
    self->told_unmapped = TRUE;
    return GST_FLOW_OK;
  }

  const GstTensorMemResizeMeta *resize = gst_buffer_get_tensor_mem_resize_meta(buffer);
  const std::string problem = resize_meta_problem(*resize);
  if (!problem.empty()) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("The tensor-to-frame transform on a buffer is not usable: %s", problem.c_str()),
                      ("GstTensorMemResizeMeta on %" GST_PTR_FORMAT, buffer));
    return GST_FLOW_ERROR;
  }
  const FrameMap map{resize->scale_x,
                     resize->scale_y,
                     resize->offset_x,
                     resize->offset_y,
                     static_cast<double>(resize->in_width),
                     static_cast<double>(resize->in_height)};

  // The new meta is built on a buffer of its own, then copied over: the
  // copy hooks take the references a result's data holds, so the old meta
  // and the new never share one.
  GstAnalyticsRelationMeta *results = gst_buffer_get_analytics_relation_meta(buffer);
  GstBuffer *scratch = gst_buffer_new();
  GstAnalyticsRelationMeta *fresh = gst_buffer_add_analytics_relation_meta(scratch);
  MapCounts counts;
  if (!fresh || !copy_mapped(results, buffer, fresh, scratch, map, &counts)) {
    gst_buffer_unref(scratch);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not copy the analytics results of a buffer to map them"),
                      ("%" GST_PTR_FORMAT, buffer));
    return GST_FLOW_ERROR;
  }
  gst_buffer_remove_meta(buffer, reinterpret_cast<GstMeta *>(results));
  const gboolean moved = gst_buffer_copy_into(buffer, scratch, GST_BUFFER_COPY_META, 0, static_cast<gsize>(-1));
  gst_buffer_unref(scratch);
  if (!moved) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not attach the mapped analytics results to a buffer"),
                      ("%" GST_PTR_FORMAT, buffer));
    return GST_FLOW_ERROR;
  }

  GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT ": %" G_GUINT64_FORMAT " box(es) mapped, %" G_GUINT64_FORMAT " clamped",
                 buffer, counts.mapped, counts.clamped);
  GST_OBJECT_LOCK(self);
  self->mapped += counts.mapped;
  self->clamped += counts.clamped;
  GST_OBJECT_UNLOCK(self);
  return GST_FLOW_OK;
}

static void gst_tensor_result_map_class_init(GstTensorMemResultMapClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->get_property = gst_tensor_result_map_get_property;

  g_object_class_install_property(
      gobject_class, PROP_MAPPED,
      g_param_spec_uint64("mapped", "Mapped", "Object-detection boxes mapped from tensor to frame coordinates", 0,
                          G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_CLAMPED,
      g_param_spec_uint64("clamped", "Clamped",
                          "Of the mapped boxes, those that reached outside the frame (into the letterbox padding) "
                          "and were clamped to it",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Tensor result map", "Filter/Analytics/Video",
      "Maps GstAnalytics results (object-detection boxes, segmentation locations) from the model input tensor's "
      "coordinates to the video frame's, through the transform tensorconvert recorded (GstTensorMemResizeMeta)",
      GST_TENSOR_MEM_AUTHOR);

  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_tensor_result_map_transform_ip);
  trans_class->prepare_output_buffer = GST_DEBUG_FUNCPTR(gst_tensor_result_map_prepare_output_buffer);
}

static void gst_tensor_result_map_init(GstTensorMemResultMap *self) {
  self->mapped = 0;
  self->clamped = 0;
  self->told_unmapped = FALSE;
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
