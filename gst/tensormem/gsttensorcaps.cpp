// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorcaps.h>

#include <tensormem/frame_convert.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gst_tensormem {

namespace {

/* NNStreamer's type names (tensor_typedef.h) for the types we hand on. */
bool type_of(const gchar *name, TensorCaps *out) {
  static const struct {
    const char *name;
    TensorTypeCode code;
    std::uint8_t bits;
  } table[] = {
      {"uint8", TensorTypeCode::UInt, 8},     {"int8", TensorTypeCode::Int, 8},
      {"uint16", TensorTypeCode::UInt, 16},   {"int16", TensorTypeCode::Int, 16},
      {"uint32", TensorTypeCode::UInt, 32},   {"int32", TensorTypeCode::Int, 32},
      {"uint64", TensorTypeCode::UInt, 64},   {"int64", TensorTypeCode::Int, 64},
      {"float16", TensorTypeCode::Float, 16}, {"float32", TensorTypeCode::Float, 32},
      {"float64", TensorTypeCode::Float, 64},
  };
  for (const auto &row : table) {
    if (g_strcmp0(name, row.name) == 0) {
      out->code = row.code;
      out->bits = row.bits;
      return true;
    }
  }
  return false;
}

bool refuse(std::string *why, std::string text) {
  *why = std::move(text);
  return false;
}

} // namespace

/* \brief Whether @s names other/tensors. */
bool is_tensor_caps(const GstStructure *s) { return s && gst_structure_has_name(s, "other/tensors"); }

/* \brief One static tensor's shape, type and bytes from other/tensors caps. */
bool parse_tensor_caps(const GstStructure *s, TensorCaps *out, std::string *why) {
  if (!is_tensor_caps(s))
    return refuse(why, std::string("caps ") + (s ? gst_structure_get_name(s) : "(none)") + " are not other/tensors");
  gint n = 0;
  if (g_strcmp0(gst_structure_get_string(s, "format"), "static") != 0 || !gst_structure_get_int(s, "num_tensors", &n) ||
      n != 1)
    return refuse(why, "other/tensors must be format=static with num_tensors=1");
  const gchar *types = gst_structure_get_string(s, "types");
  if (!types || !type_of(types, out))
    return refuse(why, std::string("other/tensors type '") + (types ? types : "(none)") + "' is not one we know");
  const GValue *value = gst_structure_get_value(s, "dimensions");
  if (value && !G_VALUE_HOLDS_STRING(value))
    return refuse(why, std::string("other/tensors dimensions are a ") + G_VALUE_TYPE_NAME(value) +
                           ", not a string: write dimensions=(string)16:1 (unquoted, two numbers parse as a flag set)");
  const gchar *dims = value ? g_value_get_string(value) : nullptr;
  if (!dims || !*dims)
    return refuse(why, "other/tensors caps without dimensions");
  gchar **parts = g_strsplit(dims, ":", -1);
  std::vector<std::int64_t> inner_first;
  bool ok = true;
  for (gchar **p = parts; *p && ok; ++p) {
    gchar *end = nullptr;
    const guint64 d = g_ascii_strtoull(*p, &end, 10);
    ok = end != *p && *end == '\0' && d > 0 && d <= G_MAXINT32;
    inner_first.push_back(static_cast<std::int64_t>(d));
  }
  g_strfreev(parts);
  if (!ok || inner_first.empty() || inner_first.size() > 16)
    return refuse(why, std::string("other/tensors dimensions '") + dims +
                           "' are not 1 to 16 positive integers separated by ':'");
  out->shape.assign(inner_first.rbegin(), inner_first.rend());
  std::uint64_t bytes = out->bits / 8;
  for (std::int64_t d : out->shape) {
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes))
      return refuse(why, std::string("other/tensors dimensions '") + dims + "' overflow");
  }
  out->bytes = bytes;
  return true;
}

/* \brief The caps' tensor bytes (0 for non-tensor caps), or an element
 * error for tensor caps that cannot be read. */
gboolean element_read_tensor_caps(GstElement *element, const GstCaps *caps, guint64 *bytes) {
  const GstStructure *s = gst_caps_get_size(caps) ? gst_caps_get_structure(caps, 0) : nullptr;
  *bytes = 0;
  if (!is_tensor_caps(s))
    return TRUE;
  TensorCaps tensor;
  std::string why;
  if (!parse_tensor_caps(s, &tensor, &why)) {
    GST_ELEMENT_ERROR(element, CORE, NEGOTIATION, ("Unsupported tensor caps"), ("%s", why.c_str()));
    return FALSE;
  }
  *bytes = tensor.bytes;
  return TRUE;
}

namespace {

template <typename T> void put(T v, std::vector<std::uint8_t> *out) {
  out->resize(sizeof(T));
  std::memcpy(out->data(), &v, sizeof(T));
}

/* `value` rounded to the nearest integer of T, clamped to T's range (NaN: 0). */
template <typename T> void put_integer(double value, std::vector<std::uint8_t> *out) {
  double v = std::isnan(value) ? 0.0 : std::nearbyint(value);
  v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::min()),
                 static_cast<double>(std::numeric_limits<T>::max()));
  // The top of a 64-bit range is not a double: its nearest double is past it.
  if (v >= static_cast<double>(std::numeric_limits<T>::max()))
    put(std::numeric_limits<T>::max(), out);
  else
    put(static_cast<T>(v), out);
}

} // namespace

bool element_bytes(const TensorCaps &t, double value, std::vector<std::uint8_t> *out) {
  switch (t.code) {
  case TensorTypeCode::Float:
    if (t.bits == 64)
      put(value, out);
    else if (t.bits == 32)
      put(static_cast<float>(value), out);
    else if (t.bits == 16)
      put(tensormem::float_to_half(static_cast<float>(value)), out);
    else
      return false;
    return true;
  case TensorTypeCode::Int:
    switch (t.bits) {
    case 8: put_integer<std::int8_t>(value, out); return true;
    case 16: put_integer<std::int16_t>(value, out); return true;
    case 32: put_integer<std::int32_t>(value, out); return true;
    case 64: put_integer<std::int64_t>(value, out); return true;
    }
    return false;
  case TensorTypeCode::UInt:
    switch (t.bits) {
    case 8: put_integer<std::uint8_t>(value, out); return true;
    case 16: put_integer<std::uint16_t>(value, out); return true;
    case 32: put_integer<std::uint32_t>(value, out); return true;
    case 64: put_integer<std::uint64_t>(value, out); return true;
    }
    return false;
  }
  return false;
}

} // namespace gst_tensormem
