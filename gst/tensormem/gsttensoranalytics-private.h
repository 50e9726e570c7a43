// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem's elements and tensorinfer (the static
 * gsttensorcaps library both link): GStreamer's tensor description
 * (GstTensorMeta, GStreamer 1.26's analytics library) as every element of
 * ours writes and names it. Exists only where GST_TENSOR_MEM_HAVE_TENSOR_META
 * is 1. C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensormemconfig.h>

/* GStreamer 1.28 describes a stream's tensors in its caps (below) and
 * reads .modelinfo files; older releases have neither. */
#define GST_TENSOR_MEM_HAVE_TENSOR_CAPS (GST_TENSOR_MEM_HAVE_TENSOR_META && GST_CHECK_VERSION(1, 28, 0))

#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>

#include <string>
#include <vector>

namespace gst_tensormem {

/* The GstTensorDataType of an element type in other/tensors terms (a type
 * code and its bits); false for one GStreamer does not define. */
bool tensor_data_type_of(TensorTypeCode code, guint bits, GstTensorDataType *out);

/* Bits per element; 0 for a value the enum does not define (a producer
 * built against a later GStreamer, or garbage). */
guint tensor_data_type_bits(GstTensorDataType type);

/* "float32", "uint4", ...; nullptr for a value GStreamer 1.26 does not define. */
const char *tensor_data_type_name(GstTensorDataType type);

/* `target` (writable) gets a GstTensorMeta of one tensor, row-major, dims
 * outermost first, replacing the tensors of a meta it has. `data` (transfer
 * full) holds the bytes; NULL: a buffer over `target`'s own memories, made
 * by hand, since gst_buffer_copy_region() would add a GstParentBufferMeta
 * holding `target`, which holds this meta: a cycle that never frees. A
 * consumer keeping that buffer beyond `target` only makes a pool discard
 * the buffer (its memory is shared), never reuse it. False when the dims do
 * not fit the data (never for our own outputs). */
bool set_tensor_meta(GstBuffer *target, GstBuffer *data, GQuark id, GstTensorDataType type, const gsize *dims,
                     gsize n_dims);

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* One tensor as GStreamer 1.28's caps describe it: a `tensor/strided`
 * structure in a group of the `tensors` field,
 *   video/x-raw, ..., tensors=(structure)"tensorgroups,
 *       GROUP=(GstUniqueList){ (GstCaps)"tensor/strided, tensor-id=ID,
 *       dims=<1, 84, 8400>, dims-order=row-major, type=float32" }"
 * which upstream's tensor decoders name in their sink templates. */
struct CapsTensor {
  std::string id;
  GstTensorDataType type = GST_TENSOR_DATA_TYPE_FLOAT32;
  std::vector<gsize> dims; // 0 for a dimension not known before the data
  GstTensorDimOrder order = GST_TENSOR_DIM_ORDER_ROW_MAJOR;
};

/* `s` (writable) gets group `group` listing `tensors`, replacing a group of
 * that name and keeping the others. */
void set_caps_tensor_group(GstStructure *s, const char *group, const std::vector<CapsTensor> &tensors);

/* Every structure of `caps` (writable) without its `tensors` field: what
 * an element that adds tensors asks of upstream. */
void strip_caps_tensors(GstCaps *caps);

/* The tensor named `id` in any group of `s`'s `tensors` field; with `id`
 * NULL, the only tensor there is. */
bool find_caps_tensor(const GstStructure *s, const char *id, CapsTensor *out);

/* Every group of `batch`'s `tensors` field (a batch's tensors, their
 * first dimension the batch) onto `frame` (writable), each tensor's first
 * dimension 1: what one slot of the batch holds, for the frame of that
 * slot's stream. Nothing where `batch` describes no tensors. */
void set_caps_tensors_of_slot(const GstStructure *batch, GstStructure *frame);

/* The one tensor a frame's caps `s` describe, as other/tensors caps (one
 * static tensor, innermost-first dimensions; new caps in `*out`), for an
 * element that takes the tensor beside the frame. False with `*why` where
 * the caps describe none or several, or it is column-major, has a
 * dimension not known before the data, or a type other/tensors cannot
 * name. */
bool frame_tensor_caps(const GstStructure *s, GstCaps **out, std::string *why);
#endif

} // namespace gst_tensormem

#endif
