// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_TRANSFORM (gst_tensor_transform_get_type())
G_DECLARE_DERIVABLE_TYPE(GstTensorMemTransform, gst_tensor_transform, GST, TENSOR_TRANSFORM, GstBaseTransform)

/* The common part of the tensor elements: negotiated video info, the
 * copied-bytes counter and the require-zero-copy switch. */
struct _GstTensorMemTransformClass {
  GstBaseTransformClass parent_class;
};

const GstVideoInfo *gst_tensor_transform_get_info(GstTensorMemTransform *self);

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
 * copied-bytes and the summary logged at stop. transform() counts the
 * buffers it handles itself; a subclass that makes its output elsewhere
 * counts there. */
void gst_tensor_transform_count_buffer(GstTensorMemTransform *self, gsize copied_bytes);

/* Whether structure `i` of `caps` lists `feature` among its caps features;
 * FALSE for NULL, empty or ANY caps, past the last structure and for ANY
 * caps features. */
gboolean gst_tensor_transform_caps_has_feature(GstCaps *caps, guint i, const char *feature);

/* Appends structure `i` of `caps` to `out` with `feature` as its only caps
 * feature (NULL: system memory). */
void gst_tensor_transform_caps_append_with_feature(GstCaps *out, GstCaps *caps, guint i, const char *feature);

/* Every structure of `caps` again, with `feature` as its only caps feature
 * (NULL: system memory). */
GstCaps *gst_tensor_transform_caps_with_feature(GstCaps *caps, const char *feature);

/* TRUE when `buffer` has at least one memory and `is_kind` holds for every
 * one of them. */
gboolean gst_tensor_transform_all_memories(GstBuffer *buffer, gboolean (*is_kind)(GstMemory *mem));

/* TRUE when `is_kind` holds for at least one memory of `buffer`. */
gboolean gst_tensor_transform_any_memory(GstBuffer *buffer, gboolean (*is_kind)(GstMemory *mem));

G_END_DECLS
