// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorframecopy-private.h>
#include <gst/tensormem/gsttensormemory.h>

#include <tensormem/row_copy.hpp>

#include <cstddef>

namespace gst_tensormem {

namespace {

/* Each plane's rows copied with tensormem::copy_rows(): one memcpy when both
 * frames lay the rows out with the same stride (the rows and the padding
 * between them are one contiguous run in each), else row by row, streaming
 * (non-temporal stores) from the size at which glibc's memcpy would stream
 * one block of the same bytes, so a strided frame costs what a contiguous
 * one does (gst_video_frame_copy() is a memcpy per row with cached stores
 * at any size). FALSE, having copied nothing, for anything else (palettes,
 * tiles, sub-byte pixels, rows longer than a stride), which
 * gst_video_frame_copy() handles. */
bool copy_planes(GstVideoFrame *dest, const GstVideoFrame *src) noexcept {
  const GstVideoFormatInfo *finfo = dest->info.finfo;
  if (GST_VIDEO_FORMAT_INFO_FORMAT(finfo) != GST_VIDEO_FRAME_FORMAT(src) || GST_VIDEO_FORMAT_INFO_IS_TILED(finfo) ||
      GST_VIDEO_FORMAT_INFO_HAS_PALETTE(finfo) || GST_VIDEO_FRAME_WIDTH(dest) != GST_VIDEO_FRAME_WIDTH(src) ||
      GST_VIDEO_FRAME_HEIGHT(dest) != GST_VIDEO_FRAME_HEIGHT(src) ||
      GST_VIDEO_INFO_INTERLACE_MODE(&dest->info) == GST_VIDEO_INTERLACE_MODE_ALTERNATE)
    return false;
  const guint planes = GST_VIDEO_FRAME_N_PLANES(dest);
  gsize row_bytes[GST_VIDEO_MAX_PLANES] = {0};
  gsize rows[GST_VIDEO_MAX_PLANES] = {0};
  for (guint p = 0; p < planes; ++p) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(finfo, p, comp);
    const gint dstride = GST_VIDEO_FRAME_PLANE_STRIDE(dest, p);
    const gint sstride = GST_VIDEO_FRAME_PLANE_STRIDE(src, p);
    if (comp[0] < 0 || dstride <= 0 || sstride <= 0)
      return false;
    const gint pstride = GST_VIDEO_FRAME_COMP_PSTRIDE(dest, comp[0]);
    const gint width = GST_VIDEO_FRAME_COMP_WIDTH(dest, comp[0]);
    const gint height = GST_VIDEO_FRAME_COMP_HEIGHT(dest, comp[0]);
    if (pstride <= 0 || width <= 0 || height <= 0)
      return false;
    // Both frames hold (rows - 1) whole strides and the last row's pixels (validated / mapped).
    if (!g_size_checked_mul(&row_bytes[p], static_cast<gsize>(width), static_cast<gsize>(pstride)) ||
        row_bytes[p] > static_cast<gsize>(MIN(dstride, sstride)))
      return false;
    rows[p] = static_cast<gsize>(height);
  }
  for (guint p = 0; p < planes; ++p) {
    tensormem::Result<void> done =
        tensormem::copy_rows(static_cast<std::byte *>(GST_VIDEO_FRAME_PLANE_DATA(dest, p)),
                             static_cast<gsize>(GST_VIDEO_FRAME_PLANE_STRIDE(dest, p)),
                             static_cast<const std::byte *>(GST_VIDEO_FRAME_PLANE_DATA(src, p)),
                             static_cast<gsize>(GST_VIDEO_FRAME_PLANE_STRIDE(src, p)), row_bytes[p], rows[p]);
    if (!done) { // the checks above rule this out; planes already copied are harmless to copy again
      GST_WARNING("plane %u: %s", p, done.error().message().c_str());
      return false;
    }
  }
  return true;
}

} // namespace

bool copy_video_frame(GstVideoFrame *dest, const GstVideoFrame *src) noexcept {
  return copy_planes(dest, src) || gst_video_frame_copy(dest, src);
}

GstFlowReturn copy_frame_into_pool(GstElement *element, GstBufferPool *pool, const GstVideoInfo *info, GstBuffer *in,
                                   GstBuffer **out,
                                   void (*copy_metadata)(GstElement *element, GstBuffer *in, GstBuffer *out)) noexcept {
  if (!pool) {
    GST_ELEMENT_ERROR(element, CORE, NEGOTIATION, ("No output buffer pool."), ("decide_allocation did not run"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gst_buffer_pool_is_active(pool) && !gst_buffer_pool_set_active(pool, TRUE)) {
    GST_ELEMENT_ERROR(element, RESOURCE, SETTINGS,
                      ("Cannot activate the output buffer pool %s.", GST_OBJECT_NAME(pool)),
                      ("see the tensormempool, tensormemdmabuf and tensormempbo debug categories"));
    return GST_FLOW_ERROR;
  }
  GstFlowReturn ret = gst_buffer_pool_acquire_buffer(pool, out, nullptr);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(element, "no buffer from %" GST_PTR_FORMAT ": %s", pool, gst_flow_get_name(ret));
    return ret;
  }
  copy_metadata(element, in, *out);
  GstVideoFrame in_frame, out_frame;
  if (!gst_video_frame_map(&in_frame, info, in, GST_MAP_READ)) {
    const gchar *why = gst_tensor_mem_memory_get_last_map_failure();
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("Cannot read the input frame: %s.", why ? why : "it does not map"),
                      ("gst_video_frame_map for reading failed on %" GST_PTR_FORMAT, in));
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  if (!gst_video_frame_map(&out_frame, info, *out, GST_MAP_WRITE)) {
    const gchar *why = gst_tensor_mem_memory_get_last_map_failure();
    gst_video_frame_unmap(&in_frame);
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("Cannot write the output frame: %s.", why ? why : "it does not map"),
                      ("gst_video_frame_map for writing failed on %" GST_PTR_FORMAT, *out));
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  const gboolean done = copy_video_frame(&out_frame, &in_frame);
  gst_video_frame_unmap(&out_frame);
  gst_video_frame_unmap(&in_frame);
  if (!done) {
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("Cannot copy the frame."), ("gst_video_frame_copy failed"));
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

} // namespace gst_tensormem
