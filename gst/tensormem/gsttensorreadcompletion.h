// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_MEM_READ_COMPLETION (gst_tensor_mem_read_completion_get_type())

typedef struct _GstTensorMemReadCompletion GstTensorMemReadCompletion;

GST_TENSOR_MEM_API
GType gst_tensor_mem_read_completion_get_type(void);

GST_TENSOR_MEM_API
GstTensorMemReadCompletion *gst_buffer_begin_tensor_mem_read(GstBuffer *buffer, GError **error);

GST_TENSOR_MEM_API
void gst_tensor_mem_read_completion_done(GstTensorMemReadCompletion *read);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_read_completion_is_done(GstTensorMemReadCompletion *read);

GST_TENSOR_MEM_API
GstTensorMemReadCompletion *gst_tensor_mem_read_completion_ref(GstTensorMemReadCompletion *read);

GST_TENSOR_MEM_API
void gst_tensor_mem_read_completion_unref(GstTensorMemReadCompletion *read);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_memory_is_being_read(GstMemory *mem);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemReadCompletion, gst_tensor_mem_read_completion_unref)

G_END_DECLS

