// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

#ifdef __cplusplus
#include <tensormem/pixel_format.hpp>

GST_TENSORMEM_API
gboolean gst_tensor_pixel_format_from_video_format(GstVideoFormat format, tensormem::PixelFormat *out);

GST_TENSORMEM_API
GstVideoFormat gst_tensor_pixel_format_to_video_format(tensormem::PixelFormat format);
#endif

/**
 * GST_TENSOR_VIDEO_FORMATS:
 *
 * The video formats a tensor memory can describe, for caps strings.
 *
 * Since: 0.1
 */
#define GST_TENSOR_VIDEO_FORMATS "{ RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8, NV12, NV16, NV24, I420, RGBP }"
