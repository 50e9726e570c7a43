// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorfencemeta.h: fence metas over libtensormem timelines.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorfencemeta.h>

#include <tensormem/timeline.hpp>

#include <memory>

/**
 * gst_buffer_add_tensor_mem_fence_meta: (skip)
 *
 * C++ only (a std::shared_ptr<tensormem::Timeline>). Records on @buffer that its memory is written until @timeline
 * reaches
 * @value: the buffer's fence meta for @timeline (or an empty one) is updated
 * to the newer value, else a new meta is added. @sync_file_fd (SyncFile
 * timelines only, -1 otherwise) is duplicated, never taken. NULL, with
 * @error set, for a value the timeline never issued or an fd that
 * cannot be duplicated. Value 0 records nothing and returns NULL without an
 * error. */
GST_TENSOR_MEM_API
GstTensorMemFenceMeta *gst_buffer_add_tensor_mem_fence_meta(GstBuffer *buffer,
                                                            std::shared_ptr<tensormem::Timeline> timeline,
                                                            guint64 value, gint sync_file_fd, GError **error);

/**
 * gst_buffer_add_tensor_mem_fences_from_memory: (skip)
 *
 * Declared for C++ only. Every GPU write recorded on the storages of @buffer's tensor memories
 * (tensormem::Storage::gpu_completion()), as fence metas; FALSE with @error
 * set when one could not be added. */
GST_TENSOR_MEM_API
gboolean gst_buffer_add_tensor_mem_fences_from_memory(GstBuffer *buffer, GError **error);

/**
 * gst_tensor_mem_fence_meta_get_timeline: (skip)
 *
 * C++ only. The timeline the meta refers to; null for an empty meta.
 */
GST_TENSOR_MEM_API
std::shared_ptr<tensormem::Timeline> gst_tensor_mem_fence_meta_get_timeline(GstTensorMemFenceMeta *meta);
