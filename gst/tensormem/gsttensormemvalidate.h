// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_video_info_from_caps(GstVideoInfo *info, const GstCaps *caps, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_validate_buffer(GstBuffer *buffer, const GstVideoInfo *info, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_element_video_info_from_caps(GstElement *element, GstVideoInfo *info, const GstCaps *caps);

GST_TENSOR_MEM_API
GstFlowReturn gst_tensor_mem_element_validate_buffer(GstElement *element, GstBuffer *buffer, const GstVideoInfo *info);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_validate_tensor_buffer(GstBuffer *buffer, guint64 tensor_bytes, GError **error);

GST_TENSOR_MEM_API
GstFlowReturn gst_tensor_mem_element_validate_tensor_buffer(GstElement *element, GstBuffer *buffer,
                                                            guint64 tensor_bytes);

G_END_DECLS
