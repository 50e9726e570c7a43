// SPDX-License-Identifier: Apache-2.0
/* The upload policy of tensorupload, kept out of the element: one method per
 * path a buffer can take into tensor memory (GstGL textures, pass-through of
 * our memory, fd import of DMA-BUF, a copy), each saying which caps it takes
 * upstream, whether it takes a buffer (accept), what it asks of upstream in
 * an allocation query (propose) and how it makes the output (perform). A
 * method may keep state per element (the GstGL route and its pool), made and
 * freed by the Uploader that walks the table, as GstGL's upload methods do.
 * C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

#include <cstddef>

namespace gst_tensormem {

/* What the upload paths need from their element. Borrowed for one call. */
struct UploadContext {
  GstElement *element;
  ElementBackend *element_backend; // the element's: storage, shared device, allocator
  const Backend *backend;          // element_backend's backend, resolved
  const GstVideoInfo *info;        // the negotiated frame (perform only)
  GstBufferPool *output_pool;      // the element's decided pool (perform only)
  /* The element's GstBaseTransform::copy_metadata for a buffer it made. */
  void (*copy_metadata)(GstElement *element, GstBuffer *in, GstBuffer *out);
  /* The element's require-zero-copy check for a copy only a method can
   * foresee: GST_FLOW_OK, or GST_FLOW_ERROR after an element error quoting
   * `refusal`. */
  GstFlowReturn (*allow_copy)(GstElement *element, GstBuffer *in, const char *refusal, const char *why);
};

/* What a method did to one buffer. */
struct UploadResult {
  gsize copied = 0;     // bytes copied by the CPU
  gsize gpu_copied = 0; // bytes copied on the GPU
};

struct UploadMethod {
  const char *name;
  /* TRUE when the path always copies the frame's bytes (require-zero-copy
   * refuses it before perform). */
  gboolean copies;
  /* TRUE when the input is a raw frame in memory: validated against the
   * caps, GstGLSyncMetas honoured, fences waited for before a new buffer is
   * made, and CPU writes into the output fenced. FALSE: perform does what
   * its input needs itself. */
  gboolean raw_input;
  /* Per-element state, or NULL/NULL for a stateless method. */
  void *(*new_state)();
  void (*free_state)(void *state);
  /* Caps this method takes upstream for source caps `plain` (system-memory
   * features); NULL when it adds none. */
  GstCaps *(*sink_caps)(const UploadContext &ctx, GstCaps *plain);
  /* At set_caps: FALSE after an element error. NULL: nothing to do. */
  gboolean (*set_caps)(const UploadContext &ctx, void *state, GstCaps *incaps, GstCaps *outcaps);
  /* Forgets what set_caps and perform decided (stop). NULL: nothing. */
  void (*reset)(void *state);
  gboolean (*accept)(const UploadContext &ctx, void *state, GstBuffer *in);
  /* Adds a pool, allocation params or metas to `query`; FALSE when the path
   * has nothing to ask of upstream. */
  gboolean (*propose)(const UploadContext &ctx, GstQuery *query);
  /* The output for `in`. Posts an element error (naming the buffer and the
   * numbers) before any error return. */
  GstFlowReturn (*perform)(const UploadContext &ctx, void *state, GstBuffer *in, GstBuffer **out,
                           UploadResult *result);
};

/* The method table walked for one element, with each method's state. */
class Uploader {
public:
  Uploader();
  ~Uploader();
  Uploader(const Uploader &) = delete;
  Uploader &operator=(const Uploader &) = delete;

  /* Source caps → sink caps: what the methods take besides `plain` (the
   * source caps as system memory), in table order; a new, maybe empty, caps. */
  GstCaps *sink_caps(const UploadContext &ctx, GstCaps *plain);
  gboolean set_caps(const UploadContext &ctx, GstCaps *incaps, GstCaps *outcaps);
  void reset();

  /* The first method that accepts `in` (the copy accepts all). */
  const UploadMethod &method_for(const UploadContext &ctx, GstBuffer *in);
  GstFlowReturn perform(const UploadMethod &method, const UploadContext &ctx, GstBuffer *in, GstBuffer **out,
                        UploadResult *result);
  /* TRUE for the path that hands the input on as it is (no output pool). */
  static bool is_passthrough(const UploadMethod &method);

  /* Every method's proposal for `query`; FALSE when none had one. */
  gboolean propose_allocation(const UploadContext &ctx, GstQuery *query);

private:
  void *state_of(const UploadMethod &method);
  static constexpr std::size_t kSlots = 4;
  void *states_[kSlots] = {};
};

} // namespace gst_tensormem
