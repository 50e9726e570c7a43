// SPDX-License-Identifier: Apache-2.0
#include "gsttensormetaread.h"

#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <cstring>

namespace gst_tensormem {

GstFlowReturn element_validate_input(GstElement *element, GstBuffer *buffer, guint64 tensor_bytes,
                                     const GstVideoInfo *info, std::vector<MetaTensor> *tensors) {
  const GstFlowReturn valid = tensor_bytes
                                  ? gst_tensor_mem_element_validate_tensor_buffer(element, buffer, tensor_bytes)
                                  : gst_tensor_mem_element_validate_buffer(element, buffer, info);
  if (valid != GST_FLOW_OK)
    return valid;
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (!element_read_tensor_meta(element, buffer, tensors))
    return GST_FLOW_ERROR;
#else
  tensors->clear();
#endif
  return GST_FLOW_OK;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META

namespace {

/* An enum field of a foreign meta as the integer it holds: a producer built
 * against a later GStreamer, or garbage, may hold a value the enum does not
 * define, and loading that as the enum is undefined behaviour. */
template <typename Enum> gint enum_value(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(gint), "a C enum field is an int");
  gint value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

bool refuse(GstElement *element, const GstTensor *tensor, gsize index, const std::string &what) {
  GST_ELEMENT_ERROR(element, STREAM, FORMAT,
                    ("Tensor %" G_GSIZE_FORMAT " ('%s') of the buffer's GstTensorMeta cannot be read: %s.", index,
                     tensor ? tensor_id_text(tensor) : "(null)", what.c_str()),
                    (nullptr));
  return false;
}

} // namespace

std::string tensor_dims_text(const GstTensor *tensor) {
  std::string text;
  for (gsize i = 0; i < tensor->num_dims; ++i)
    text += (i ? "x" : "") + std::to_string(tensor->dims[i]);
  return text.empty() ? "scalar" : text;
}

const char *tensor_id_text(const GstTensor *tensor) {
  return tensor->id ? g_quark_to_string(tensor->id) : "(none)";
}

bool element_read_tensor_meta(GstElement *element, GstBuffer *buffer, std::vector<MetaTensor> *tensors) {
  tensors->clear();
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  if (!meta || meta->num_tensors == 0)
    return true;
  if (!meta->tensors)
    return refuse(element, nullptr, 0, "the meta counts tensors but holds none");
  for (gsize i = 0; i < meta->num_tensors; ++i) {
    GstTensor *tensor = meta->tensors[i];
    if (!tensor)
      return refuse(element, nullptr, i, "the meta's entry is NULL");
    const gint type_value = enum_value(tensor->data_type);
    const auto type = static_cast<GstTensorDataType>(type_value);
    const bool type_defined = type_value >= GST_TENSOR_DATA_TYPE_INT4 && type_value <= GST_TENSOR_DATA_TYPE_BFLOAT16;
    const guint bits = type_defined ? tensor_data_type_bits(type) : 0;
    if (bits == 0)
      return refuse(element, tensor, i,
                    "its data type " + std::to_string(type_value) + " is none that GStreamer defines");
    const gint order_value = enum_value(tensor->dims_order);
    if (order_value != GST_TENSOR_DIM_ORDER_ROW_MAJOR && order_value != GST_TENSOR_DIM_ORDER_COL_MAJOR)
      return refuse(element, tensor, i,
                    "its dims order " + std::to_string(order_value) + " is none that GStreamer defines");
    if (!tensor->data || !GST_IS_BUFFER(tensor->data))
      return refuse(element, tensor, i, "it has no data buffer");
    const gsize have = gst_buffer_get_size(tensor->data);
    // Elements, checked against overflow; a 0 (dynamic) dimension leaves the
    // data's own length as the tensor's.
    gsize elements = 1;
    bool dynamic = false;
    for (gsize d = 0; d < tensor->num_dims; ++d) {
      if (tensor->dims[d] == 0) {
        dynamic = true;
        break;
      }
      if (!g_size_checked_mul(&elements, elements, tensor->dims[d]))
        return refuse(element, tensor, i, "its dims " + tensor_dims_text(tensor) + " overflow a byte count");
    }
    gsize bytes = have;
    if (!dynamic) {
      gsize bits_total = 0;
      if (!g_size_checked_mul(&bits_total, elements, bits) || bits_total > G_MAXSIZE - 7)
        return refuse(element, tensor, i, "its dims " + tensor_dims_text(tensor) + " overflow a byte count");
      bytes = (bits_total + 7) / 8;
      if (bytes > have)
        return refuse(element, tensor, i,
                      std::string("a ") + tensor_data_type_name(type) + " " + tensor_dims_text(tensor) +
                          " tensor needs " + std::to_string(bytes) + " bytes and its data buffer holds " +
                          std::to_string(have));
    }
    tensors->push_back(MetaTensor{tensor, i, bytes, type, static_cast<GstTensorDimOrder>(order_value)});
  }
  return true;
}

GstFlowReturn element_wait_tensor_fences(GstElement *element, GstBuffer *buffer, const std::vector<MetaTensor> &tensors,
                                         GCancellable *cancellable) {
  for (const MetaTensor &t : tensors) {
    GstBuffer *data = t.tensor->data;
    if (data == buffer || !gst_buffer_get_meta(data, GST_TENSOR_MEM_FENCE_META_API_TYPE))
      continue;
    const GstFlowReturn ret =
        gst_tensor_mem_element_wait_fences(element, data, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, cancellable, nullptr);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  return GST_FLOW_OK;
}

#endif

} // namespace gst_tensormem
