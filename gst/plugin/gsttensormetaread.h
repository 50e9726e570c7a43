// SPDX-License-Identifier: Apache-2.0
/* Reading an incoming GstTensorMeta (GStreamer 1.26's analytics library),
 * whoever made it (tensorconvert, tensorinfer, onnxinference, an
 * application): every tensor is checked before any element of ours touches
 * its data, so a meta that promises more than its buffer holds is one
 * element error naming the tensor, never a read past the buffer. Private to
 * the tensormem plugin; but for element_validate_input(), everything here
 * exists only where GST_TENSOR_MEM_HAVE_TENSOR_META is 1. */
#pragma once

#include <gio/gio.h>
#include <gst/gst.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/video/video.h>

#include <string>
#include <vector>

#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#endif

namespace gst_tensormem {

#if GST_TENSOR_MEM_HAVE_TENSOR_META

/* One checked tensor of a buffer's GstTensorMeta. */
struct MetaTensor {
  GstTensor *tensor = nullptr; // owned by the meta
  gsize index = 0;             // in the meta
  gsize bytes = 0;             // what its dims and type cover, from the start of `data` (<= its size)
  // Its enum fields, checked: read these, never the tensor's (a value the
  // enum does not define is undefined behaviour to load as the enum).
  GstTensorDataType data_type = GST_TENSOR_DATA_TYPE_UINT8;
  GstTensorDimOrder dims_order = GST_TENSOR_DIM_ORDER_ROW_MAJOR;
};

/* The tensor's dims as "1x3x224x224", in its own order. */
std::string tensor_dims_text(const GstTensor *tensor);

/* The tensor's id as text ("(none)" for 0). */
const char *tensor_id_text(const GstTensor *tensor);

/* The tensors of `buffer`'s GstTensorMeta (none when it has no meta), each
 * checked: data present, a data type and dims order GStreamer defines
 * (read as integers first), dims whose byte
 * count does not overflow, data at least that long. A tensor with a 0
 * (dynamic) dimension covers its whole data buffer. False after one element
 * error (STREAM FORMAT) naming the tensor, its index and what is wrong. */
bool element_read_tensor_meta(GstElement *element, GstBuffer *buffer, std::vector<MetaTensor> *tensors);

/* Waits, as for the frame, for the fences each tensor's data buffer carries
 * (a data buffer that is `buffer` itself is skipped: its fences are the
 * frame's). */
GstFlowReturn element_wait_tensor_fences(GstElement *element, GstBuffer *buffer, const std::vector<MetaTensor> &tensors,
                                         GCancellable *cancellable);
#else
struct MetaTensor {}; // no GstTensorMeta before GStreamer 1.26
#endif

/* An input buffer checked before an element reads or imports it: against
 * the caps (a tensor of `tensor_bytes` bytes, or, for 0, a frame of `info`),
 * then, where GstTensorMeta exists, the tensors of its meta into `tensors`
 * (element_read_tensor_meta()). Not GST_FLOW_OK after one element error. */
GstFlowReturn element_validate_input(GstElement *element, GstBuffer *buffer, guint64 tensor_bytes,
                                     const GstVideoInfo *info, std::vector<MetaTensor> *tensors);

} // namespace gst_tensormem
