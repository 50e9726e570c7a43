// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

/**
 * GST_TENSOR_MEM_VIDEO_FORMATS:
 *
 * The video formats a tensor memory can describe, for caps strings.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_VIDEO_FORMATS "{ RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8, NV12, NV16, NV24, I420, RGBP }"
