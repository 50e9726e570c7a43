// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorformat.hpp>

#include <array>
#include <utility>

namespace {

using tensormem::PixelFormat;

constexpr std::array<std::pair<GstVideoFormat, PixelFormat>, 12> kFormats{{
    {GST_VIDEO_FORMAT_RGBA, PixelFormat::RGBA},
    {GST_VIDEO_FORMAT_BGRA, PixelFormat::BGRA},
    {GST_VIDEO_FORMAT_RGBx, PixelFormat::RGBx},
    {GST_VIDEO_FORMAT_BGRx, PixelFormat::BGRx},
    {GST_VIDEO_FORMAT_RGB, PixelFormat::RGB},
    {GST_VIDEO_FORMAT_BGR, PixelFormat::BGR},
    {GST_VIDEO_FORMAT_GRAY8, PixelFormat::GRAY8},
    {GST_VIDEO_FORMAT_NV12, PixelFormat::NV12},
    {GST_VIDEO_FORMAT_NV16, PixelFormat::NV16},
    {GST_VIDEO_FORMAT_NV24, PixelFormat::NV24},
    {GST_VIDEO_FORMAT_I420, PixelFormat::I420},
    {GST_VIDEO_FORMAT_RGBP, PixelFormat::RGBP},
}};

} // namespace

/**
 * gst_tensor_mem_pixel_format_from_video_format: (skip)
 * @format: a #GstVideoFormat
 * @out: (out): the matching tensormem pixel format
 *
 * C++ only.
 *
 * Returns: %TRUE when @format has a tensormem equivalent.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_pixel_format_from_video_format(GstVideoFormat format, tensormem::PixelFormat *out) {
  g_return_val_if_fail(out != nullptr, FALSE);
  for (const auto &[gst, tm] : kFormats) {
    if (gst == format) {
      *out = tm;
      return TRUE;
    }
  }
  return FALSE;
}

/**
 * gst_tensor_mem_pixel_format_to_video_format: (skip)
 * @format: a tensormem pixel format
 *
 * C++ only.
 *
 * Returns: the matching #GstVideoFormat, %GST_VIDEO_FORMAT_UNKNOWN if none.
 *
 * Since: 0.1
 */
GstVideoFormat gst_tensor_mem_pixel_format_to_video_format(tensormem::PixelFormat format) {
  for (const auto &[gst, tm] : kFormats) {
    if (tm == format)
      return gst;
  }
  return GST_VIDEO_FORMAT_UNKNOWN;
}
