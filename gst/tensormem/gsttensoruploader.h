// SPDX-License-Identifier: Apache-2.0
/* The upload policy of tensorupload, kept out of the element: one method per
 * path a buffer can take into tensor memory, each saying whether it takes a
 * buffer (accept), what it asks of upstream in an allocation query (propose)
 * and how it makes the output (perform). C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

namespace gst_tensormem {

/* What the upload paths need from their element. Borrowed for one call. */
struct UploadContext {
  GstElement *element;
  const Backend *backend;        // the element's storage, resolved
  GstAllocator *allocator;       // the backend's allocator between start and stop, else NULL
  const GstVideoInfo *info;      // the negotiated frame (perform only)
  GstBufferPool *output_pool;    // the element's decided pool (perform only)
  /* The element's GstBaseTransform::copy_metadata for a buffer it made. */
  void (*copy_metadata)(GstElement *element, GstBuffer *in, GstBuffer *out);
};

struct UploadMethod {
  const char *name;
  /* TRUE when the path copies the frame's bytes (require-zero-copy refuses it). */
  gboolean copies;
  gboolean (*accept)(const UploadContext &ctx, GstBuffer *in);
  /* Adds a pool, allocation params or metas to `query`; FALSE when the path
   * has nothing to ask of upstream. */
  gboolean (*propose)(const UploadContext &ctx, GstQuery *query);
  /* The output for `in`; on a copy, *copied is the bytes copied. Posts an
   * element error (naming the buffer and the numbers) before any error
   * return. */
  GstFlowReturn (*perform)(const UploadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *copied);
};

/* TRUE for the path that hands the input on as it is (it needs no output
 * pool). */
GST_TENSORMEM_API
bool upload_method_is_passthrough(const UploadMethod &method);

/* The first method that accepts `in`: pass-through of our memory, fd import
 * of DMA-BUF memory, or a copy into the output pool (which accepts all). */
GST_TENSORMEM_API
const UploadMethod &upload_method_for(const UploadContext &ctx, GstBuffer *in);

/* Every method's proposal for `query`; FALSE when none had one. */
GST_TENSORMEM_API
gboolean upload_propose_allocation(const UploadContext &ctx, GstQuery *query);


} // namespace gst_tensormem
