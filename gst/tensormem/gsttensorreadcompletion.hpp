// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorreadcompletion.h: read completions over libtensormem timelines.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorreadcompletion.h>

#include <tensormem/timeline.hpp>

#include <memory>

/**
 * gst_buffer_add_tensor_mem_read_completion: (skip)
 *
 * C++ only (a std::shared_ptr<tensormem::Timeline>). Records on the storage
 * of every tensor memory of @buffer that a reader
 * reads it until @timeline reaches @value (a GPU stream's completion, an
 * inference step's): a CPU map that writes the memory, and the pool before
 * it hands the buffer to a producer again, wait for it. The buffer need not
 * be writable (the record is on the memory, which copies share). FALSE with
 * @error set for a value the timeline never issued or a buffer
 * without tensor memory. */
GST_TENSOR_MEM_API
gboolean gst_buffer_add_tensor_mem_read_completion(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline,
                                                   guint64 value, GError **error);
