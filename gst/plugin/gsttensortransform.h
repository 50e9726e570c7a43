// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gio/gio.h>
#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_TRANSFORM (gst_tensor_transform_get_type())
G_DECLARE_DERIVABLE_TYPE(GstTensorMemTransform, gst_tensor_transform, GST, TENSOR_TRANSFORM, GstBaseTransform)
/* Unchecked, for the per-buffer paths (like GStreamer's own *_CAST macros). */
#define GST_TENSOR_TRANSFORM_CAST(obj) ((GstTensorMemTransform *)(obj))

/* The common part of the tensor elements: negotiated video info, the
 * copied-bytes counter and the require-zero-copy switch. */
struct _GstTensorMemTransformClass {
  GstBaseTransformClass parent_class;
};

const GstVideoInfo *gst_tensor_transform_get_info(GstTensorMemTransform *self);

/* The element's GCancellable for the fence waits of its streaming thread:
 * cancelled on flush-start and on PAUSED→READY (with the output pool set
 * flushing), reset on flush-stop and READY→PAUSED. Pass it to
 * gst_tensor_mem_element_wait_fences(). */
GCancellable *gst_tensor_transform_get_waits(GstTensorMemTransform *self);

/* Allocates nothing: decides whether a copy of `inbuf` may happen. Under
 * require-zero-copy it posts an element error and returns GST_FLOW_ERROR.
 * The error's text is `message`, or with NULL a generic one; its debug
 * detail is `inbuf` followed by a space and `detail`, or with NULL a generic
 * one naming the frame. */
GstFlowReturn gst_tensor_transform_allow_copy(GstTensorMemTransform *self, GstBuffer *inbuf, const char *message,
                                              const char *detail);

/* Copies buffer metadata (timestamps, flags, memory-independent metas) the
 * way GstBaseTransform would for a buffer it allocated itself. */
void gst_tensor_transform_copy_metadata(GstTensorMemTransform *self, GstBuffer *inbuf, GstBuffer *outbuf);

/* Counts one buffer handled and the bytes copied for it (0: none), for
 * copied-bytes and the summary logged at stop. Each element counts where it
 * takes a buffer's path (prepare_output_buffer); transform() does nothing. */
void gst_tensor_transform_count_buffer(GstTensorMemTransform *self, gsize copied_bytes);

/* Every structure of `caps` again, with `feature` as its only caps feature
 * (NULL: system memory). */
GstCaps *gst_tensor_transform_caps_with_feature(GstCaps *caps, const char *feature);

G_END_DECLS
