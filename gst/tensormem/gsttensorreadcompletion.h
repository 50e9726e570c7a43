// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

#ifdef __cplusplus
#include <tensormem/timeline.hpp>

#include <memory>
#endif

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_MEM_READ_COMPLETION (gst_tensor_mem_read_completion_get_type())

typedef struct _GstTensorMemReadCompletion GstTensorMemReadCompletion;

GST_TENSORMEM_API
GType gst_tensor_mem_read_completion_get_type(void);

GST_TENSORMEM_API
GstTensorMemReadCompletion *gst_buffer_begin_tensor_mem_read(GstBuffer *buffer, GError **error);

GST_TENSORMEM_API
void gst_tensor_mem_read_completion_done(GstTensorMemReadCompletion *read);

GST_TENSORMEM_API
gboolean gst_tensor_mem_read_completion_is_done(GstTensorMemReadCompletion *read);

GST_TENSORMEM_API
GstTensorMemReadCompletion *gst_tensor_mem_read_completion_ref(GstTensorMemReadCompletion *read);

GST_TENSORMEM_API
void gst_tensor_mem_read_completion_unref(GstTensorMemReadCompletion *read);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemReadCompletion, gst_tensor_mem_read_completion_unref)

G_END_DECLS

#ifdef __cplusplus
/* Records on the storage of every tensor memory of @buffer that a reader
 * reads it until @timeline reaches @value (a GPU stream's completion, an
 * inference step's): a CPU map that writes the memory, and the pool before
 * it hands the buffer to a producer again, wait for it. The buffer need not
 * be writable (the record is on the memory, which copies share). FALSE with
 * @error set for a value the timeline never issued (HAZ-23) or a buffer
 * without tensor memory. */
GST_TENSORMEM_API
gboolean gst_buffer_add_tensor_mem_read_completion(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline,
                                                   guint64 value, GError **error);
#endif
