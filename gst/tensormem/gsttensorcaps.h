// SPDX-License-Identifier: Apache-2.0
/* `other/tensors` caps as NNStreamer defines them (format=static, one
 * tensor, `types` and innermost-first `dimensions` strings), read once for
 * every element and the DLPack hand-off. C++ only; not installed. */
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gst_tensormem {

/* DLPack's type codes (dlpack.h DLDataTypeCode), so this header needs no
 * DLPack include. */
enum class TensorTypeCode : std::uint8_t { Int = 0, UInt = 1, Float = 2 };

struct TensorCaps {
  std::vector<std::int64_t> shape; // outermost first: NNStreamer's dimensions reversed
  TensorTypeCode code = TensorTypeCode::UInt;
  std::uint8_t bits = 8;
  std::uint64_t bytes = 0; // elements × element size, overflow-checked
};

/* Whether `s` is an other/tensors structure (of any caps features). */
bool is_tensor_caps(const GstStructure *s);

/* Reads one static tensor from `s`; false with `*why` set for anything else
 * (several tensors, flexible format, an unknown type name, dimensions that
 * are not 1 to 16 positive integers, a footprint past 64 bits, dimensions
 * that parsed as a non-string such as a flag set). */
bool parse_tensor_caps(const GstStructure *s, TensorCaps *out, std::string *why);

/* For an element's set_caps: `*bytes` is the tensor's bytes for
 * other/tensors caps and 0 for any other caps; FALSE, after a
 * GST_CORE_ERROR_NEGOTIATION element error of `element` saying why, for
 * tensor caps it cannot read. */
gboolean element_read_tensor_caps(GstElement *element, const GstCaps *caps, guint64 *bytes);

/* `value` as one element of `t`'s type: its bytes in native order, in
 * `*out`. Integers are rounded and clamped to the type's range, float16 is
 * the nearest half; FALSE for a type without such an encoding (none of
 * parse_tensor_caps()'s). */
bool element_bytes(const TensorCaps &t, double value, std::vector<std::uint8_t> *out);

} // namespace gst_tensormem
