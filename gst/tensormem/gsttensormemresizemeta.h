// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

#define GST_TENSOR_MEM_RESIZE_META_API_TYPE (gst_tensor_mem_resize_meta_api_get_type())
#define GST_TENSOR_MEM_RESIZE_META_INFO (gst_tensor_mem_resize_meta_get_info())

typedef struct _GstTensorMemResizeMeta GstTensorMemResizeMeta;

/**
 * GstTensorMemResizeMeta:
 * @meta: parent #GstMeta
 * @in_width: width of the video frame the tensor was made from
 * @in_height: its height
 * @out_width: width of the tensor's picture axes
 * @out_height: their height
 * @scale_x: tensor pixels per frame pixel, horizontally
 * @scale_y: the same, vertically
 * @offset_x: where the frame's left edge lies in the tensor (negative when
 *   cropped)
 * @offset_y: where its top edge lies
 * @content_x: first tensor column the picture covers (padding before it)
 * @content_y: first tensor row the picture covers
 * @content_width: tensor columns the picture covers
 * @content_height: tensor rows the picture covers
 *
 * How `tensorconvert` fitted a video frame into a tensor: frame point
 * (x, y) is tensor point (x * @scale_x + @offset_x, y * @scale_y + @offset_y),
 * so a detection in tensor coordinates maps back to the frame with
 * (t - offset) / scale. Outside the content rectangle the tensor holds
 * padding (letterbox). The meta has no tags: it describes the buffer's
 * bytes as a whole and is copied with the buffer.
 *
 * Since: 0.1
 */
struct _GstTensorMemResizeMeta {
  GstMeta meta;

  guint in_width;
  guint in_height;
  guint out_width;
  guint out_height;
  gdouble scale_x;
  gdouble scale_y;
  gdouble offset_x;
  gdouble offset_y;
  guint content_x;
  guint content_y;
  guint content_width;
  guint content_height;
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_resize_meta_api_get_type(void);

GST_TENSOR_MEM_API
const GstMetaInfo *gst_tensor_mem_resize_meta_get_info(void);

GST_TENSOR_MEM_API
GstTensorMemResizeMeta *gst_buffer_add_tensor_mem_resize_meta(GstBuffer *buffer);

GST_TENSOR_MEM_API
GstTensorMemResizeMeta *gst_buffer_get_tensor_mem_resize_meta(GstBuffer *buffer);

G_END_DECLS
