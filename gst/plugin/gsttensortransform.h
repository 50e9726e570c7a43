// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_TRANSFORM (gst_tensor_transform_get_type())
G_DECLARE_DERIVABLE_TYPE(GstTensorTransform, gst_tensor_transform, GST, TENSOR_TRANSFORM, GstBaseTransform)

/* The common part of the tensor elements: negotiated video info, the
 * copied-bytes counter and the require-zero-copy switch. */
struct _GstTensorTransformClass {
  GstBaseTransformClass parent_class;
};

const GstVideoInfo *gst_tensor_transform_get_info(GstTensorTransform *self);

/* Allocates nothing: decides whether a copy of `inbuf` may happen. Under
 * require-zero-copy it posts an element error naming the frame and returns
 * GST_FLOW_ERROR. */
GstFlowReturn gst_tensor_transform_allow_copy(GstTensorTransform *self, GstBuffer *inbuf);

/* Copies buffer metadata (timestamps, flags, memory-independent metas) the
 * way GstBaseTransform would for a buffer it allocated itself. */
void gst_tensor_transform_copy_metadata(GstTensorTransform *self, GstBuffer *inbuf, GstBuffer *outbuf);

/* Marks `outbuf` (made by prepare_output_buffer) as carrying the input's
 * bytes already, without a copy: transform() then leaves it alone. */
void gst_tensor_transform_set_wrapped(GstTensorTransform *self, GstBuffer *outbuf);

/* Checks that `inbuf` holds the frame the caps describe: with a GstVideoMeta,
 * that the meta matches the caps' format and size, that every plane stride
 * covers a row and every plane ends inside the buffer; without one, that the
 * buffer holds the default layout. Posts an element error naming the field
 * and the numbers and returns GST_FLOW_ERROR otherwise. */
GstFlowReturn gst_tensor_transform_check_layout(GstTensorTransform *self, GstBuffer *inbuf);

G_END_DECLS
