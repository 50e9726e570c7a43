// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and its elements (others call the installed
 * gst_tensor_mem_buffer_make_writable()): making a buffer writable
 * without losing what GStreamer's copy drops. gst_buffer_copy() (and so
 * gst_buffer_make_writable(), and GstBaseTransform's in-place
 * prepare_output_buffer) copies a meta only through its transform function:
 * GStreamer 1.26's GstTensorMeta has none, and our CUDA meta refuses every
 * copy. One rule for every element of ours: a buffer made writable keeps
 * them. C++ only; not installed. */
#pragma once

#include <gst/gst.h>
#include <gst/tensormem/tensormem-prelude.h>

namespace gst_tensormem {

/* gst_buffer_make_writable() (transfer full in and out) whose copy, when it
 * makes one, also carries `buffer`'s GstTensorMeta and CUDA meta
 * (copy_buffer_metas()). */
GstBuffer *make_buffer_writable(GstBuffer *buffer);

/* `to` (writable) gets what GStreamer's copy of `from` drops: `from`'s
 * GstTensorMeta (where GST_TENSOR_MEM_HAVE_TENSOR_META; its tensors copied,
 * their data buffers shared) unless `to` has one, and `from`'s CUDA meta
 * where `to` holds the very memories of `from`. For code that has both
 * buffers (a prepare_output_buffer override, a copy into new memory). */
void copy_buffer_metas(GstBuffer *from, GstBuffer *to);

} // namespace gst_tensormem
