// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensoranalytics-private.h>

#if GST_TENSOR_MEM_HAVE_TENSOR_META

namespace gst_tensormem {

namespace {

struct TypeEntry {
  GstTensorDataType type;
  TensorTypeCode code; // meaningless for the 4-bit and bfloat16 types, which other/tensors cannot name
  guint bits;
  const char *name;
  bool in_caps;
};

constexpr TypeEntry kTypes[] = {
    {GST_TENSOR_DATA_TYPE_INT4, TensorTypeCode::Int, 4, "int4", false},
    {GST_TENSOR_DATA_TYPE_INT8, TensorTypeCode::Int, 8, "int8", true},
    {GST_TENSOR_DATA_TYPE_INT16, TensorTypeCode::Int, 16, "int16", true},
    {GST_TENSOR_DATA_TYPE_INT32, TensorTypeCode::Int, 32, "int32", true},
    {GST_TENSOR_DATA_TYPE_INT64, TensorTypeCode::Int, 64, "int64", true},
    {GST_TENSOR_DATA_TYPE_UINT4, TensorTypeCode::UInt, 4, "uint4", false},
    {GST_TENSOR_DATA_TYPE_UINT8, TensorTypeCode::UInt, 8, "uint8", true},
    {GST_TENSOR_DATA_TYPE_UINT16, TensorTypeCode::UInt, 16, "uint16", true},
    {GST_TENSOR_DATA_TYPE_UINT32, TensorTypeCode::UInt, 32, "uint32", true},
    {GST_TENSOR_DATA_TYPE_UINT64, TensorTypeCode::UInt, 64, "uint64", true},
    {GST_TENSOR_DATA_TYPE_FLOAT16, TensorTypeCode::Float, 16, "float16", true},
    {GST_TENSOR_DATA_TYPE_FLOAT32, TensorTypeCode::Float, 32, "float32", true},
    {GST_TENSOR_DATA_TYPE_FLOAT64, TensorTypeCode::Float, 64, "float64", true},
    {GST_TENSOR_DATA_TYPE_BFLOAT16, TensorTypeCode::Float, 16, "bfloat16", false},
};

const TypeEntry *entry_of(GstTensorDataType type) {
  for (const TypeEntry &e : kTypes)
    if (e.type == type)
      return &e;
  return nullptr;
}

} // namespace

bool tensor_data_type_of(TensorTypeCode code, guint bits, GstTensorDataType *out) {
  for (const TypeEntry &e : kTypes)
    if (e.in_caps && e.code == code && e.bits == bits) {
      *out = e.type;
      return true;
    }
  return false;
}

guint tensor_data_type_bits(GstTensorDataType type) {
  const TypeEntry *e = entry_of(type);
  return e ? e->bits : 0;
}

const char *tensor_data_type_name(GstTensorDataType type) {
  const TypeEntry *e = entry_of(type);
  return e ? e->name : nullptr;
}

bool set_tensor_meta(GstBuffer *target, GstBuffer *data, GQuark id, GstTensorDataType type, const gsize *dims,
                     gsize n_dims) {
  if (!data) {
    data = gst_buffer_new();
    for (guint i = 0; i < gst_buffer_n_memory(target); ++i)
      gst_buffer_append_memory(data, gst_memory_ref(gst_buffer_peek_memory(target, i)));
  }
  GstTensor *tensor = gst_tensor_new_simple(id, type, data, GST_TENSOR_DIM_ORDER_ROW_MAJOR, n_dims,
                                            const_cast<gsize *>(dims));
  if (!tensor) {
    gst_buffer_unref(data);
    return false;
  }
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(target);
  if (!meta)
    meta = gst_buffer_add_tensor_meta(target);
  auto **tensors = g_new(GstTensor *, 1);
  tensors[0] = tensor;
  gst_tensor_meta_set(meta, 1, tensors);
  return true;
}

} // namespace gst_tensormem

#endif
