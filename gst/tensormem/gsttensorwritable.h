// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * gst_tensor_mem_buffer_make_writable:
 * @buffer: (transfer full): a buffer
 *
 * gst_buffer_make_writable() that keeps what GStreamer's copy of a buffer
 * drops: its GstTensorMeta (GStreamer 1.26 gives that meta no transform
 * function; the tensors are copied and their data buffers shared) and its
 * #GstTensorMemCudaMeta, which the copy keeps because it holds the very
 * same memories. For elements of other projects that make tensor buffers
 * writable in place, as this project's own do.
 *
 * Returns: (transfer full): @buffer itself when it was writable, else a
 *   writable copy (and @buffer is unreffed)
 *
 * Since: 0.4
 */
GST_TENSOR_MEM_API
GstBuffer *gst_tensor_mem_buffer_make_writable(GstBuffer *buffer);

G_END_DECLS
