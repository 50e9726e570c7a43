// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensoranalytics-private.h>

#include <algorithm>
#include <string>

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
  GstTensor *tensor =
      gst_tensor_new_simple(id, type, data, GST_TENSOR_DIM_ORDER_ROW_MAJOR, n_dims, const_cast<gsize *>(dims));
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

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS

namespace {

constexpr const char *kTensorsField = "tensors";
constexpr const char *kGroupsName = "tensorgroups";
constexpr const char *kTensorName = "tensor/strided";

GstStructure *strided_structure(const CapsTensor &t) {
  GstStructure *s =
      gst_structure_new(kTensorName, "tensor-id", G_TYPE_STRING, t.id.c_str(), "dims-order", G_TYPE_STRING,
                        t.order == GST_TENSOR_DIM_ORDER_COL_MAJOR ? "col-major" : "row-major", nullptr);
  GValue dims = G_VALUE_INIT, dim = G_VALUE_INIT;
  gst_value_array_init(&dims, t.dims.size());
  g_value_init(&dim, G_TYPE_INT);
  for (gsize d : t.dims) {
    g_value_set_int(&dim, d <= G_MAXINT ? static_cast<gint>(d) : 0);
    gst_value_array_append_value(&dims, &dim);
  }
  g_value_unset(&dim);
  gst_structure_take_value(s, "dims", &dims);
  if (const char *name = tensor_data_type_name(t.type))
    gst_structure_set(s, "type", G_TYPE_STRING, name, nullptr);
  return s;
}

bool read_strided(const GstStructure *s, CapsTensor *out) {
  if (!gst_structure_has_name(s, kTensorName))
    return false;
  const char *id = gst_structure_get_string(s, "tensor-id");
  const char *type = gst_structure_get_string(s, "type");
  const char *order = gst_structure_get_string(s, "dims-order");
  const GValue *dims = gst_structure_get_value(s, "dims");
  if (!id || !type || !dims || !GST_VALUE_HOLDS_ARRAY(dims))
    return false;
  CapsTensor t;
  t.id = id;
  const TypeEntry *entry = nullptr;
  for (const TypeEntry &e : kTypes)
    if (g_strcmp0(e.name, type) == 0)
      entry = &e;
  if (!entry)
    return false;
  t.type = entry->type;
  t.order = g_strcmp0(order, "col-major") == 0 ? GST_TENSOR_DIM_ORDER_COL_MAJOR : GST_TENSOR_DIM_ORDER_ROW_MAJOR;
  for (guint i = 0; i < gst_value_array_get_size(dims); ++i) {
    const GValue *d = gst_value_array_get_value(dims, i);
    t.dims.push_back(G_VALUE_HOLDS_INT(d) && g_value_get_int(d) > 0 ? static_cast<gsize>(g_value_get_int(d)) : 0);
  }
  *out = std::move(t);
  return true;
}

} // namespace

void set_caps_tensor_group(GstStructure *s, const char *group, const std::vector<CapsTensor> &tensors) {
  GstStructure *groups = nullptr;
  const GValue *have = gst_structure_get_value(s, kTensorsField);
  if (have && GST_VALUE_HOLDS_STRUCTURE(have))
    groups = gst_structure_copy(gst_value_get_structure(have));
  else
    groups = gst_structure_new_empty(kGroupsName);
  GValue list = G_VALUE_INIT;
  g_value_init(&list, GST_TYPE_UNIQUE_LIST);
  for (const CapsTensor &t : tensors) {
    GValue caps = G_VALUE_INIT;
    g_value_init(&caps, GST_TYPE_CAPS);
    g_value_take_boxed(&caps, gst_caps_new_full(strided_structure(t), nullptr));
    gst_value_unique_list_append_and_take_value(&list, &caps);
  }
  gst_structure_take_value(groups, group, &list);
  gst_structure_set(s, kTensorsField, GST_TYPE_STRUCTURE, groups, nullptr);
  gst_structure_free(groups);
}

void strip_caps_tensors(GstCaps *caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i)
    gst_structure_remove_field(gst_caps_get_structure(caps, i), kTensorsField);
}

bool find_caps_tensor(const GstStructure *s, const char *id, CapsTensor *out) {
  const GValue *have = gst_structure_get_value(s, kTensorsField);
  if (!have || !GST_VALUE_HOLDS_STRUCTURE(have))
    return false;
  const GstStructure *groups = gst_value_get_structure(have);
  guint found = 0;
  CapsTensor t;
  for (gint g = 0; g < gst_structure_n_fields(groups); ++g) {
    const GValue *list = gst_structure_get_value(groups, gst_structure_nth_field_name(groups, g));
    if (!list || !GST_VALUE_HOLDS_UNIQUE_LIST(list))
      continue;
    for (guint i = 0; i < gst_value_unique_list_get_size(list); ++i) {
      const GValue *v = gst_value_unique_list_get_value(list, i);
      const GstCaps *caps = G_VALUE_HOLDS(v, GST_TYPE_CAPS) ? gst_value_get_caps(v) : nullptr;
      if (!caps || gst_caps_get_size(caps) != 1 || !read_strided(gst_caps_get_structure(caps, 0), &t))
        continue;
      if (id && t.id == id) {
        *out = std::move(t);
        return true;
      }
      if (!id && found++ == 0)
        *out = t;
    }
  }
  return !id && found == 1;
}

void set_caps_tensors_of_slot(const GstStructure *batch, GstStructure *frame) {
  const GValue *have = gst_structure_get_value(batch, kTensorsField);
  if (!have || !GST_VALUE_HOLDS_STRUCTURE(have))
    return;
  const GstStructure *groups = gst_value_get_structure(have);
  for (gint g = 0; g < gst_structure_n_fields(groups); ++g) {
    const char *group = gst_structure_nth_field_name(groups, g);
    const GValue *list = gst_structure_get_value(groups, group);
    if (!list || !GST_VALUE_HOLDS_UNIQUE_LIST(list))
      continue;
    std::vector<CapsTensor> slot;
    for (guint i = 0; i < gst_value_unique_list_get_size(list); ++i) {
      const GValue *v = gst_value_unique_list_get_value(list, i);
      const GstCaps *caps = G_VALUE_HOLDS(v, GST_TYPE_CAPS) ? gst_value_get_caps(v) : nullptr;
      CapsTensor t;
      if (!caps || gst_caps_get_size(caps) != 1 || !read_strided(gst_caps_get_structure(caps, 0), &t))
        continue;
      if (!t.dims.empty())
        t.dims[0] = 1;
      slot.push_back(std::move(t));
    }
    set_caps_tensor_group(frame, group, slot);
  }
}

bool frame_tensor_caps(const GstStructure *s, GstCaps **out, std::string *why) {
  CapsTensor t;
  if (!find_caps_tensor(s, nullptr, &t)) {
    *why = "its caps describe no tensor, or several (GStreamer 1.28's tensors field, as tensorconvert output=meta "
           "writes it)";
    return false;
  }
  const TypeEntry *entry = nullptr;
  for (const TypeEntry &e : kTypes)
    if (e.type == t.type && e.in_caps)
      entry = &e;
  if (!entry || t.order != GST_TENSOR_DIM_ORDER_ROW_MAJOR || t.dims.empty() ||
      std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end()) {
    *why = "its tensor " + t.id + " is not a row-major tensor of known dimensions and a type other/tensors names";
    return false;
  }
  std::string dims;
  for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d)
    dims += (dims.empty() ? "" : ":") + std::to_string(*d);
  *out = gst_caps_new_simple("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT, 1, "types",
                             G_TYPE_STRING, entry->name, "dimensions", G_TYPE_STRING, dims.c_str(), nullptr);
  return true;
}

#endif

} // namespace gst_tensormem

#endif
