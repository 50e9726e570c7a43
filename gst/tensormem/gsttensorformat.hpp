// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorformat.h: video formats as libtensormem pixel formats.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorformat.h>

#include <tensormem/pixel_format.hpp>

#include <memory>

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_pixel_format_from_video_format(GstVideoFormat format, tensormem::PixelFormat *out);

GST_TENSOR_MEM_API
GstVideoFormat gst_tensor_mem_pixel_format_to_video_format(tensormem::PixelFormat format);
