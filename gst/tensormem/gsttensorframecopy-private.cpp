// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorframecopy-private.h>

namespace gst_tensormem {

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
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("Cannot read the input frame."),
                      ("gst_video_frame_map for reading failed on %" GST_PTR_FORMAT, in));
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  if (!gst_video_frame_map(&out_frame, info, *out, GST_MAP_WRITE)) {
    gst_video_frame_unmap(&in_frame);
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("Cannot write the output frame."),
                      ("gst_video_frame_map for writing failed on %" GST_PTR_FORMAT, *out));
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  const gboolean done = gst_video_frame_copy(&out_frame, &in_frame);
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
