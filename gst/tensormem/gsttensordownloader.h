// SPDX-License-Identifier: Apache-2.0
/* The download policy of tensordownload, kept out of the element: one method
 * per path a buffer can take to a system-memory consumer, each saying
 * whether it takes a buffer (accept), what it asks of upstream in an
 * allocation query (propose) and how it makes the output (perform), plus the
 * caps rules the paths share. C++ only; not installed. */
#pragma once

#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

namespace gst_tensormem {

/* What the download paths need from their element. Borrowed for one call. */
struct DownloadContext {
  GstElement *element;
  const GstVideoInfo *info; // the negotiated frame
  /* Downstream has shown it reads GstVideoMeta: the meta in its allocation
   * answer and caps that are not ANY. */
  gboolean downstream_video_meta;
  gboolean output_dmabuf;   // the source caps carry memory:DMABuf
  GstBufferPool *copy_pool; // default-layout system-memory frames (perform only)
  /* The element's GstBaseTransform::copy_metadata for a buffer it made. */
  void (*copy_metadata)(GstElement *element, GstBuffer *in, GstBuffer *out);
};

struct DownloadMethod {
  const char *name;
  /* TRUE when the path copies the frame's bytes (require-zero-copy refuses it). */
  gboolean copies;
  gboolean (*accept)(const DownloadContext &ctx, GstBuffer *in);
  /* Adds what the path wants from upstream to `query`; FALSE when it has
   * nothing to ask. */
  gboolean (*propose)(const DownloadContext &ctx, GstQuery *query);
  /* The output for `in`; on a copy, *copied is the bytes copied. Posts an
   * element error (naming the buffer and the numbers) before any error
   * return. */
  GstFlowReturn (*perform)(const DownloadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *copied);
};

/* The first method that accepts `in`: DMA-BUF pass-through (memory:DMABuf
 * output), pass-through of any memory a CPU consumer can map (system,
 * DMA-BUF, PBO) in a layout it reads, or a copy into the default layout
 * (which accepts all). */
const DownloadMethod &download_method_for(const DownloadContext &ctx, GstBuffer *in);

/* Every method's proposal for `query`; FALSE when none had one. */
gboolean download_propose_allocation(const DownloadContext &ctx, GstQuery *query);

/* The caps of the other pad for `caps` on the pad of `direction`: input of
 * any memory (plain, memory:DMABuf, memory:TensorPBO) becomes plain output,
 * memory:DMABuf input may also stay memory:DMABuf (first choice); ANY caps
 * give `template_caps` of the other pad. Intersected with `filter`. */
GstCaps *download_transform_caps(GstPadDirection direction, GstCaps *caps, GstCaps *filter, GstCaps *template_caps);

/* TRUE when negotiated source caps `outcaps` name a memory that passes
 * through as it is (memory:DMABuf: the CPU reads it with an mmap), so
 * buffers of that memory keep it. */
gboolean download_output_keeps_memory(GstCaps *outcaps);

/* `othercaps` (source caps to fixate) without their memory:DMABuf
 * structures unless the peer of `srcpad` lists memory:DMABuf itself: a
 * consumer with ANY caps takes the feature by intersection yet reads plain
 * bytes. Takes `othercaps`, returns the caps to fixate. */
GstCaps *download_restrict_output_caps(GstPad *srcpad, GstCaps *othercaps);

/* Whether the peer of `srcpad` has shown it reads GstVideoMeta, given its
 * allocation answer `query`. */
gboolean download_downstream_reads_video_meta(GstPad *srcpad, GstQuery *query);

/* The pool the copy path writes into: system memory, the default layout of
 * `caps`, recycled (never one allocation per frame). NULL after a warning
 * when the caps are not raw video. */
GstBufferPool *download_make_copy_pool(GstElement *element, GstCaps *caps);

} // namespace gst_tensormem
