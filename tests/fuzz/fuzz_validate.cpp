// SPDX-License-Identifier: Apache-2.0
/* fuzz-validate: gst_tensor_mem_video_info_from_caps() and
 * gst_tensor_mem_validate_buffer(), the one check every element makes before
 * it reads a frame. Each input picks a raw video format (every format
 * GStreamer knows), a frame size, and a buffer of one to three memories:
 * system memory of any size (trimmed with gst_memory_resize() now and then),
 * or memfd-backed DMA-BUF memory whose file is shorter or longer than the
 * size the memory declares; and optionally a GstVideoMeta whose format,
 * size, plane count, offsets and strides are the caps' own, near them or
 * anything at all. Asserted: a buffer the validation accepts is read
 * without a fault: gst_video_frame_map() maps it and gst_video_frame_copy()
 * reads every row of every plane into a frame of the default layout (a read
 * past a system memory is an ASan report, past the end of a memfd a SIGBUS).
 * Refused caps and buffers come with a GError message; accepted caps give
 * a frame of at least one byte. */
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/video/video.h>

#include <algorithm>

using tensormem_fuzz::FuzzInput;

TENSORMEM_FUZZ_INIT_GSTREAMER

namespace {

GstMemory *make_memory(FuzzInput &in, gsize size) {
  if (in.pick(3) == 0) {
    // memfd DMA-BUF: the file is near `size` bytes, the memory says `size`.
    return tensormem_fuzz::memfd_dmabuf_memory(tensormem_fuzz::near_size(in, size), size);
  }
  GstMemory *mem = tensormem_fuzz::system_memory(in, size);
  if (size > 1 && in.pick(4) == 0) {
    const gsize skip = in.pick(static_cast<std::uint32_t>(std::min<gsize>(size, 256)));
    gst_memory_resize(mem, static_cast<gssize>(skip), size - skip - in.pick(static_cast<std::uint32_t>(size - skip)));
  }
  return mem;
}

void add_meta(FuzzInput &in, GstBuffer *buffer, const GstVideoInfo &info, guint n_formats,
              const GstVideoFormat *formats) {
  const GstVideoFormat format = in.pick(4) == 0 ? formats[in.pick(n_formats)] : GST_VIDEO_INFO_FORMAT(&info);
  const guint width = in.pick(4) == 0 ? in.range(0, 80) : GST_VIDEO_INFO_WIDTH(&info);
  const guint height = in.pick(4) == 0 ? in.range(0, 80) : GST_VIDEO_INFO_HEIGHT(&info);
  const guint n_planes = in.pick(6) == 0 ? in.range(1, GST_VIDEO_MAX_PLANES) : GST_VIDEO_INFO_N_PLANES(&info);
  gsize offset[GST_VIDEO_MAX_PLANES] = {};
  gint stride[GST_VIDEO_MAX_PLANES] = {};
  for (guint p = 0; p < GST_VIDEO_MAX_PLANES; ++p) {
    const gsize def_offset = GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
    const gint def_stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
    switch (in.pick(6)) {
    case 0: offset[p] = in.u64(); break;
    case 1: offset[p] = tensormem_fuzz::near_size(in, def_offset); break;
    default: offset[p] = def_offset;
    }
    switch (in.pick(6)) {
    case 0: stride[p] = static_cast<gint>(in.u32()); break;
    case 1: stride[p] = def_stride - static_cast<gint>(in.range(0, 16)) + static_cast<gint>(in.range(0, 16)); break;
    default: stride[p] = def_stride;
    }
  }
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, format, width, height, n_planes, offset, stride);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  guint n_formats = 0;
  const GstVideoFormat *formats = gst_video_formats_raw(&n_formats);
  const GstVideoFormat format = formats[in.pick(n_formats)];
  gint width, height;
  if (in.pick(16) == 0) { // extremes: refused, never wrapped
    width = static_cast<gint>(in.u32());
    height = static_cast<gint>(in.u32());
  } else {
    width = static_cast<gint>(in.range(1, 48));
    height = static_cast<gint>(in.range(1, 48));
  }
  GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, gst_video_format_to_string(format),
                                      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height, "framerate",
                                      GST_TYPE_FRACTION, 30, 1, nullptr);
  GstVideoInfo info;
  GError *error = nullptr;
  const gboolean caps_ok = gst_tensor_mem_video_info_from_caps(&info, caps, &error);
  gst_caps_unref(caps);
  if (!caps_ok) {
    FUZZ_CHECK(error != nullptr && error->message[0] != '\0', "caps refused without a message");
    g_error_free(error);
    return 0;
  }
  FUZZ_CHECK(GST_VIDEO_INFO_SIZE(&info) > 0, "accepted caps of a %dx%d %s frame of 0 bytes", width, height,
             gst_video_format_to_string(format));
  if (GST_VIDEO_INFO_SIZE(&info) > (1u << 22))
    return 0; // accepted, but too large to fill for every input

  GstBuffer *buffer = gst_buffer_new();
  const guint n_mem = in.range(1, 3);
  gsize left = GST_VIDEO_INFO_SIZE(&info);
  for (guint i = 0; i < n_mem; ++i) {
    const gsize share = i + 1 == n_mem ? left : in.pick(static_cast<std::uint32_t>(left + 1));
    gst_buffer_append_memory(buffer, make_memory(in, tensormem_fuzz::near_size(in, share)));
    left -= std::min(left, share);
  }
  if (in.flag())
    add_meta(in, buffer, info, n_formats, formats);

  const gboolean ok = gst_tensor_mem_validate_buffer(buffer, &info, &error);
  if (!ok) {
    FUZZ_CHECK(error != nullptr && error->message[0] != '\0', "buffer refused without a message");
    g_error_free(error);
  } else {
    FUZZ_CHECK(error == nullptr, "accepted with an error set");
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ)) {
      // A refusal to map is an error the element reports, not a fault; the
      // one way to it here is a memory of 0 bytes (mmap of 0 bytes fails).
      bool empty_memory = false;
      for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
        empty_memory = empty_memory || gst_buffer_peek_memory(buffer, i)->size == 0;
      FUZZ_CHECK(empty_memory, "a %dx%d %s buffer (%u memories, %zu bytes) passed validation but does not map",
                 width, height, gst_video_format_to_string(format), gst_buffer_n_memory(buffer),
                 gst_buffer_get_size(buffer));
      gst_buffer_unref(buffer);
      return 0;
    }
    GstBuffer *copy = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstVideoFrame dest;
    FUZZ_CHECK(gst_video_frame_map(&dest, &info, copy, GST_MAP_WRITE), "the destination frame does not map");
    FUZZ_CHECK(gst_video_frame_copy(&dest, &frame), "a %dx%d %s frame that passed validation does not copy", width,
               height, gst_video_format_to_string(format));
    gst_video_frame_unmap(&dest);
    gst_video_frame_unmap(&frame);
    gst_buffer_unref(copy);
  }
  gst_buffer_unref(buffer);
  return 0;
}
