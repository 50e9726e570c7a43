// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: the one frame copy of the upload and download
 * paths. Not installed. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

namespace gst_tensormem {

/* Copies `src` into `dest` (same format and size): each plane's rows with
 * tensormem::copy_rows(), or gst_video_frame_copy() for the layouts it
 * does not cover (palettes, tiles, sub-byte pixels). FALSE when the copy
 * failed. */
bool copy_video_frame(GstVideoFrame *dest, const GstVideoFrame *src) noexcept;

/* Copies the frame `in` (laid out as its GstVideoMeta or `info` says) into a
 * buffer acquired from `pool` (activated here on first use), with
 * `copy_metadata(element, in, out)` run on it first. Posts an element error
 * on `element` naming what failed before any error return; a flow return of
 * the pool (flushing) is passed on without one. */
GstFlowReturn copy_frame_into_pool(GstElement *element, GstBufferPool *pool, const GstVideoInfo *info, GstBuffer *in,
                                   GstBuffer **out,
                                   void (*copy_metadata)(GstElement *element, GstBuffer *in, GstBuffer *out)) noexcept;

} // namespace gst_tensormem
