// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and its plugins: GStreamer's tensor description
 * (GstTensorMeta, GStreamer 1.26's analytics library) as every element of
 * ours writes and names it. Exists only where GST_TENSOR_MEM_HAVE_TENSOR_META
 * is 1. C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensormemconfig.h>

#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>

namespace gst_tensormem {

/* The GstTensorDataType of an element type in other/tensors terms (a type
 * code and its bits); false for one GStreamer does not define. */
GST_TENSOR_MEM_API
bool tensor_data_type_of(TensorTypeCode code, guint bits, GstTensorDataType *out);

/* Bits per element; 0 for a value the enum does not define (a producer
 * built against a later GStreamer, or garbage). */
GST_TENSOR_MEM_API
guint tensor_data_type_bits(GstTensorDataType type);

/* "float32", "uint4", ...; nullptr for a value GStreamer 1.26 does not define. */
GST_TENSOR_MEM_API
const char *tensor_data_type_name(GstTensorDataType type);

/* `target` (writable) gets a GstTensorMeta of one tensor, row-major, dims
 * outermost first, replacing the tensors of a meta it has. `data` (transfer
 * full) holds the bytes; NULL: a buffer over `target`'s own memories, made
 * by hand, since gst_buffer_copy_region() would add a GstParentBufferMeta
 * holding `target`, which holds this meta: a cycle that never frees. A
 * consumer keeping that buffer beyond `target` only makes a pool discard
 * the buffer (its memory is shared), never reuse it. False when the dims do
 * not fit the data (never for our own outputs). */
GST_TENSOR_MEM_API
bool set_tensor_meta(GstBuffer *target, GstBuffer *data, GQuark id, GstTensorDataType type, const gsize *dims,
                     gsize n_dims);

} // namespace gst_tensormem

#endif
