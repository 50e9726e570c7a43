// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY:
 *
 * GstGL's caps feature for texture memory ("memory:GLMemory"), spelled here
 * so that code built without GstGL can name it.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY "memory:GLMemory"

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_ensure_gstgl(GstElement *element, GstTensorMemGlWorker **worker, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_ensure_for_gl_memory(GstMemory *memory, GstTensorMemGlWorker **worker, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_memory_can_share(GstMemory *memory, gchar **why);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_shares_with_gstgl(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
gboolean gst_buffer_read_gl_memory_into_tensor_mem_pbo(GstBuffer *outbuf, GstBuffer *inbuf, const GstVideoInfo *info,
                                                   gsize *gpu_copied, GError **error);

GST_TENSOR_MEM_API
gboolean gst_buffer_copy_gl_memory_into_tensor_mem(GstBuffer *outbuf, GstBuffer *inbuf, const GstVideoInfo *info,
                                               gsize *copied, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gstgl_display_set_context(GstObject **display, GstContext *context);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gstgl_display_answer_query(GstElement *element, GstObject **display, GstQuery *query);

G_END_DECLS
