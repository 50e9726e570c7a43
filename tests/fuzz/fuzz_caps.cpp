// SPDX-License-Identifier: Apache-2.0
/* fuzz-caps: caps to layout. Two kinds of input, chosen by the first byte:
 *  - a caps string parsed by gst_caps_from_string() (anything: other/tensors
 *    with odd types and dimensions, video/x-raw with odd fields, garbage);
 *  - caps built from choices: video/x-raw of every raw format and every
 *    caps feature the elements meet (system memory, DMABuf, GLMemory,
 *    TensorPBO, TensorD3D11, an unknown one), sizes from 0 to past 32 bits of
 *    bytes, or other/tensors with a type (known or not) and a dimensions
 *    string from the input.
 * Every structure goes through parse_tensor_caps(), every caps through
 * gst_tensor_mem_video_info_from_caps(), and every format through
 * gst_tensor_mem_pixel_format_from_video_format(). Asserted: a parsed tensor
 * has 1 to 16 dimensions, each from 1 to 2^31 - 1, a known type of 8 to 64
 * bits, and bytes = the product of its dimensions times the element size
 * (recomputed in 128 bits: no wrap); a refused one says why. Accepted video
 * caps describe a frame of positive size whose every plane (offset + rows x
 * stride) lies inside GST_VIDEO_INFO_SIZE; refused caps say why. A pixel
 * format converts back to the same video format. */
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/tensormem.hpp>
#include <gst/video/video.h>

#include <algorithm>
#include <string>

using tensormem_fuzz::FuzzInput;

TENSORMEM_FUZZ_INIT_GSTREAMER

namespace {

void check_tensor(const GstStructure *s) {
  gst_tensormem::TensorCaps t;
  std::string why;
  if (!gst_tensormem::parse_tensor_caps(s, &t, &why)) {
    FUZZ_CHECK(!why.empty(), "tensor caps refused without a reason");
    return;
  }
  FUZZ_CHECK(gst_tensormem::is_tensor_caps(s), "parsed a structure that is not other/tensors");
  FUZZ_CHECK(!t.shape.empty() && t.shape.size() <= 16, "%zu dimensions", t.shape.size());
  FUZZ_CHECK(t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64, "%u-bit elements",
             static_cast<unsigned>(t.bits));
  FUZZ_CHECK(t.code == gst_tensormem::TensorTypeCode::Int || t.code == gst_tensormem::TensorTypeCode::UInt ||
                 t.code == gst_tensormem::TensorTypeCode::Float,
             "type code %u", static_cast<unsigned>(t.code));
  unsigned __int128 bytes = t.bits / 8;
  for (std::int64_t d : t.shape) {
    FUZZ_CHECK(d >= 1 && d <= G_MAXINT32, "dimension %lld", static_cast<long long>(d));
    bytes *= static_cast<unsigned __int128>(d);
    FUZZ_CHECK(bytes <= G_MAXUINT64, "a footprint past 64 bits was accepted");
  }
  FUZZ_CHECK(bytes == t.bytes, "bytes %llu, dimensions say otherwise", static_cast<unsigned long long>(t.bytes));
}

void check_video(const GstCaps *caps) {
  GstVideoInfo info;
  GError *error = nullptr;
  if (!gst_tensor_mem_video_info_from_caps(&info, caps, &error)) {
    FUZZ_CHECK(error != nullptr && error->message[0] != '\0', "video caps refused without a message");
    g_error_free(error);
    return;
  }
  FUZZ_CHECK(error == nullptr, "accepted with an error set");
  FUZZ_CHECK(GST_VIDEO_INFO_WIDTH(&info) > 0 && GST_VIDEO_INFO_HEIGHT(&info) > 0 && GST_VIDEO_INFO_SIZE(&info) > 0,
             "accepted a %dx%d frame of %zu bytes", GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
             GST_VIDEO_INFO_SIZE(&info));
  const GstVideoFormatInfo *finfo = info.finfo;
  if (GST_VIDEO_FORMAT_INFO_IS_TILED(finfo))
    return; // strides count tiles there; validation refuses such buffers
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    const gint stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
    FUZZ_CHECK(stride > 0, "plane %u stride %d", p, stride);
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(finfo, p, comp);
    const guint rows = comp[0] >= 0 ? GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(finfo, comp[0], GST_VIDEO_INFO_FIELD_HEIGHT(&info))
                                    : static_cast<guint>(GST_VIDEO_INFO_HEIGHT(&info)); // palette
    const unsigned __int128 end = static_cast<unsigned __int128>(GST_VIDEO_INFO_PLANE_OFFSET(&info, p)) +
                                  static_cast<unsigned __int128>(rows) * static_cast<unsigned>(stride);
    FUZZ_CHECK(end <= GST_VIDEO_INFO_SIZE(&info) || GST_VIDEO_FORMAT_INFO_HAS_PALETTE(finfo),
               "%s %dx%d: plane %u ends at %llu, past the %zu-byte frame", GST_VIDEO_INFO_NAME(&info),
               GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), p, static_cast<unsigned long long>(end),
               GST_VIDEO_INFO_SIZE(&info));
  }
}

void check_all(const GstCaps *caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i)
    check_tensor(gst_caps_get_structure(caps, i));
  check_video(caps);
}

GstCaps *build_caps(FuzzInput &in) {
  static const char *const features[] = {nullptr, "memory:SystemMemory", "memory:DMABuf", "memory:GLMemory",
                                         "memory:TensorPBO", "memory:TensorD3D11", "memory:Unknown"};
  GstCaps *caps;
  if (in.flag()) {
    static const char *const types[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64",
                                        "int64", "float16", "float32", "float64", "bfloat16", "", "uint8,uint8"};
    const std::string type = types[in.pick(14)];
    std::string dims = in.text(96);
    for (char &c : dims) // caps strings are UTF-8; GStreamer warns (rightly) on anything else
      c = static_cast<char>(0x20 + static_cast<unsigned char>(c) % 0x5f);
    caps = gst_caps_new_simple("other/tensors", "format", G_TYPE_STRING, in.pick(8) ? "static" : "flexible",
                               "num_tensors", G_TYPE_INT, in.pick(8) ? 1 : static_cast<gint>(in.u8()), "types",
                               G_TYPE_STRING, type.c_str(), "dimensions", G_TYPE_STRING, dims.c_str(), nullptr);
  } else {
    guint n_formats = 0;
    const GstVideoFormat *formats = gst_video_formats_raw(&n_formats);
    const GstVideoFormat format = formats[in.pick(n_formats)];
    tensormem::PixelFormat pixel;
    if (gst_tensor_mem_pixel_format_from_video_format(format, &pixel))
      FUZZ_CHECK(gst_tensor_mem_pixel_format_to_video_format(pixel) == format, "%s does not come back",
                 gst_video_format_to_string(format));
    gint width, height;
    switch (in.pick(4)) {
    case 0:
      width = static_cast<gint>(in.u32());
      height = static_cast<gint>(in.u32());
      break;
    case 1:
      width = static_cast<gint>(in.u16());
      height = static_cast<gint>(in.u16());
      break;
    default:
      width = static_cast<gint>(in.range(0, 64));
      height = static_cast<gint>(in.range(0, 64));
    }
    caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, gst_video_format_to_string(format), "width",
                               G_TYPE_INT, width, "height", G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION,
                               static_cast<gint>(in.u8()), 1, nullptr);
    if (in.pick(4) == 0)
      gst_caps_set_simple(caps, "interlace-mode", G_TYPE_STRING, in.flag() ? "interleaved" : "alternate", nullptr);
  }
  if (const char *feature = features[in.pick(7)])
    gst_caps_set_features(caps, 0, gst_caps_features_new(feature, nullptr));
  return caps;
}

/* How deeply `text` nests GStreamer's value brackets (arrays, lists, ranges,
 * casts). GStreamer 1.22's parser recurses once per level and leaks what it
 * made on the way when a deep nest fails to parse; beyond a few dozen levels
 * the leak's stack is deeper than LeakSanitizer records, so the suppression
 * of gst_caps_from_string cannot see it. No caps nest like that: such input
 * tests GStreamer's parser, not ours, and is skipped. */
int nesting(const std::string &text) {
  int depth = 0, deepest = 0;
  for (char c : text) {
    if (c == '<' || c == '{' || c == '[' || c == '(')
      deepest = std::max(deepest, ++depth);
    else if ((c == '>' || c == '}' || c == ']' || c == ')') && depth > 0)
      --depth;
  }
  return deepest;
}

constexpr int kMaxNesting = 8;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  GstCaps *caps;
  if (in.u8() % 2 == 0) {
    const std::string text = in.text(4096);
    if (nesting(text) > kMaxNesting)
      return 0;
    caps = gst_caps_from_string(text.c_str());
    if (caps == nullptr)
      return 0;
  } else {
    caps = build_caps(in);
  }
  check_all(caps);
  gst_caps_unref(caps);
  return 0;
}
