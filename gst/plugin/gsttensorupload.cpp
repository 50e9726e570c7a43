// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorupload
 * @title: tensorupload
 *
 * Moves raw video into tensor memory of the storage chosen by
 * #GstTensorMemUpload:storage.
 *
 * It offers a #GstTensorMemBufferPool of that storage upstream, so a producer
 * that takes it (videotestsrc, decoders) writes straight into tensor memory
 * and the buffer passes through untouched. With `storage=dmabuf`, buffers
 * whose memories are DMA-BUF already (any #GstDmaBufAllocator memory) are
 * wrapped by fd import, also without a copy: the imported storage is cached
 * on the upstream memory, and the upstream buffer is kept alive (a
 * #GstParentBufferMeta) for as long as the output buffer lives. Any other
 * buffer is copied once into the element's own pool, and the bytes copied
 * are counted in #GstTensorMemTransform:copied-bytes; `require-zero-copy=true`
 * turns such a copy into an error.
 *
 * With `storage=pbo` the output is OpenGL pixel buffer objects
 * (`video/x-raw(memory:TensorPBO)`, #GstTensorMemPboMemory) of a headless GL
 * worker the element shares with the rest of the pipeline through a
 * #GstContext of type %GST_TENSOR_GL_WORKER_CONTEXT_TYPE: it asks its
 * neighbours, then the application (need-context), and starts one itself
 * only when nobody has one (see gst_tensor_gl_worker_ensure()). The PBO pool
 * it offers upstream lets a producer write straight into GL buffers; other
 * input is copied once into a PBO (counted, refused under
 * `require-zero-copy=true`). Buffers whose memories are PBO memory already
 * pass through. Either way the GL worker then fences the write (an EGL fence
 * sync after the unmap that hands the bytes to GL) and the output carries it
 * as a #GstTensorMemFenceMeta of kind "egl".
 *
 * `storage=pbo` also takes GstGL's textures (`video/x-raw(memory:GLMemory)`,
 * 4-byte formats, 2D). With GstGL on EGL a GL worker sharing GstGL's
 * context reads each texture into a PBO on the GPU: no CPU copy,
 * #GstTensorMemUpload:gpu-copied-bytes counts it. With GstGL on GLX (its
 * X11 default; no sharing with EGL) GstGL downloads each texture and the
 * frame is copied once into a PBO (counted; refused under
 * `require-zero-copy=true`, whose error names `GST_GL_PLATFORM=egl`).
 * docs/pbo.md, "GstGL interop".
 *
 * `storage=d3d11` asks for Direct3D 11 textures of the process device,
 * shared with the rest of the pipeline through a #GstContext of type
 * %GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE (gst_tensor_d3d11_device_ensure()).
 * On Windows that is the real device; elsewhere the software reference
 * device is used only when the environment asks for it with
 * `TENSORMEM_D3D11_DEVICE=software`, and without a device the element fails
 * to go to READY with an error that says so. The output is
 * `video/x-raw(memory:TensorD3D11)` (#GstTensorMemD3D11Memory): the pool it
 * offers upstream makes textures with staging, so a producer writes
 * straight into them; other input is copied once. Every output buffer
 * carries a #GstTensorMemFenceMeta of kind "d3d11": the process fence's
 * value signalled after the write (docs/d3d11.md, "GStreamer").
 *
 * With `storage=dmabuf` the source pad offers `video/x-raw(memory:DMABuf)`
 * first and plain `video/x-raw` second (the memories are DMA-BUF either
 * way); the sink pad takes both. `storage=auto` picks DMA-BUF when a DMA
 * heap is usable and system memory otherwise (gst_tensor_storage_resolve()),
 * and says which at start-up (`GST_DEBUG=tensorupload:4`).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload ! tensordownload ! autovideosink
 * TENSORMEM_DMABUF_SOURCE=memfd gst-launch-1.0 videotestsrc num-buffers=100 ! \
 *     tensorupload storage=dmabuf require-zero-copy=true ! 'video/x-raw(memory:DMABuf)' ! \
 *     tensordownload ! fakesink
 * gst-launch-1.0 videotestsrc num-buffers=100 ! tensorupload storage=pbo require-zero-copy=true ! \
 *     'video/x-raw(memory:TensorPBO)' ! tensordownload ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorupload.h"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensorgstgl.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorpbo.h>
#include <gst/tensormem/gsttensoruploader.h>


#include <memory>
#include <new>
#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_upload_debug);
#define GST_CAT_DEFAULT gst_tensor_upload_debug

/* GstGL interop: how memory:GLMemory textures reach PBO memory. */
enum GstTensorMemGlRoute {
  GL_ROUTE_UNDECIDED,
  GL_ROUTE_GPU, // our worker shares GstGL's EGL context: read on the GPU
  GL_ROUTE_CPU, // it cannot (GstGL on GLX): GstGL downloads, one CPU copy
};

struct _GstTensorMemUpload {
  GstTensorMemTransform parent;
  gst_tensormem::ElementBackend *backend; // the storage property, its shared device and allocator
  gboolean gl_input;                     // memory:GLMemory negotiated (GstGL interop); streaming thread
  GstTensorMemGlRoute gl_route;          // how textures reach PBOs, decided at the first buffer; streaming thread
  GstBufferPool *gl_pool;                // PBOs for memory:GLMemory input, of gl_route's worker; streaming thread
  guint64 gpu_copied_bytes;              // guarded by the object lock
};

namespace {

enum { PROP_0, PROP_STORAGE, PROP_GPU_COPIED_BYTES };

#define UPLOAD_DMABUF_CAPS GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_DMABUF, GST_TENSOR_VIDEO_FORMATS)
#define UPLOAD_PLAIN_CAPS GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)
#define UPLOAD_PBO_CAPS GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_TENSOR_PBO, GST_TENSOR_VIDEO_FORMATS)
#define UPLOAD_D3D11_CAPS                                                                                              \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_TENSOR_D3D11, GST_TENSOR_VIDEO_FORMATS)

/* GstGL interop: textures of 4-byte formats (an RGBA8 texture holds the
 * bytes as they are), read into PBOs on the GPU (storage=pbo). */
#define UPLOAD_GL_MEMORY_CAPS                                                                                          \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_TENSOR_CAPS_FEATURE_MEMORY_GL_MEMORY, "{ RGBA, BGRA, RGBx, BGRx }")            \
  ", texture-target=(string)2D"
#if GST_TENSORMEM_HAVE_GSTGL && GST_TENSORMEM_HAVE_GL
#define UPLOAD_SINK_GL_CAPS "; " UPLOAD_GL_MEMORY_CAPS
#else
#define UPLOAD_SINK_GL_CAPS ""
#endif

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(UPLOAD_PLAIN_CAPS "; " UPLOAD_DMABUF_CAPS UPLOAD_SINK_GL_CAPS));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(UPLOAD_DMABUF_CAPS "; " UPLOAD_PLAIN_CAPS "; " UPLOAD_PBO_CAPS "; " UPLOAD_D3D11_CAPS));

const gst_tensormem::Backend &backend_of(GstTensorMemUpload *self) { return self->backend->backend(); }

void copy_metadata(GstElement *element, GstBuffer *in, GstBuffer *out) {
  gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM_CAST(element), in, out);
}

/* What the upload paths need from this element. `allocator` is a new
 * reference (or NULL), released by release_context(). */
gst_tensormem::UploadContext upload_context(GstTensorMemUpload *self) {
  gst_tensormem::UploadContext ctx{};
  ctx.element = GST_ELEMENT_CAST(self);
  ctx.backend = &backend_of(self);
  ctx.allocator = self->backend->allocator();
  ctx.info = gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM_CAST(self));
  ctx.copy_metadata = copy_metadata;
  return ctx;
}

void release_context(gst_tensormem::UploadContext &ctx) {
  if (ctx.allocator)
    gst_object_unref(ctx.allocator);
  if (ctx.output_pool)
    gst_object_unref(ctx.output_pool);
}

/* GstGL interop: a GstGLSyncMeta on the input (glupload, GL decoders) has
 * passed before any path reads the input's bytes. */
void honour_gl_sync(GstTensorMemUpload *self, GstBuffer *inbuf) {
  if (const guint waited = gst_buffer_wait_gl_sync_metas(inbuf))
    GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT ": waited for %u GstGLSyncMeta(s)", inbuf, waited);
}

/* GstGL interop, sink caps → source caps: a texture's caps name its
 * texture target, which tensor memory has not. */
void drop_gl_fields(GstCaps *caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i)
    gst_structure_remove_field(gst_caps_get_structure(caps, i), "texture-target");
}

/* GstGL interop, source caps → sink caps (storage=pbo only: an upstream
 * that can give either, like gldownload, would otherwise hand the other
 * storages textures): the same video as 2D textures of a 4-byte format, last
 * in preference. */
GstCaps *with_gl_memory_caps(GstCaps *sink_caps, GstCaps *plain) {
#if GST_TENSORMEM_HAVE_GSTGL && GST_TENSORMEM_HAVE_GL
  GstCaps *textures = gst_tensor_transform_caps_with_feature(plain, GST_TENSOR_CAPS_FEATURE_MEMORY_GL_MEMORY);
  GstCaps *allowed = gst_caps_from_string(UPLOAD_GL_MEMORY_CAPS);
  GstCaps *gl = gst_caps_intersect_full(textures, allowed, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref(textures);
  gst_caps_unref(allowed);
  return gst_caps_merge(sink_caps, gl);
#else
  (void)plain;
  return sink_caps;
#endif
}

/* GstGL interop: forgets the route and its pool (new caps, stop). */
void reset_gl_route(GstTensorMemUpload *self) {
  self->gl_route = GL_ROUTE_UNDECIDED;
  if (GstBufferPool *pool = self->gl_pool) {
    self->gl_pool = nullptr;
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
}

/* GstGL interop at set_caps: memory:GLMemory needs storage=pbo; the route is
 * decided at the first buffer, from the context of its texture (a GstGL
 * source may make its context only after the caps: gltestsrc). */
gboolean negotiate_gl_input(GstTensorMemUpload *self, GstCaps *incaps) {
  reset_gl_route(self);
  GstCapsFeatures *features = gst_caps_get_features(incaps, 0);
  self->gl_input = features && gst_caps_features_contains(features, GST_TENSOR_CAPS_FEATURE_MEMORY_GL_MEMORY);
  if (!self->gl_input || &backend_of(self) == &gst_tensormem::pbo_backend())
    return TRUE;
  GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                    ("memory:GLMemory input needs storage=pbo (this element has storage=%s): GstGL textures are "
                     "read into OpenGL PBOs; put gldownload in front for the other storages.",
                     gst_tensormem::storage_nick(backend_of(self).storage)),
                    ("caps %" GST_PTR_FORMAT, incaps));
  return FALSE;
}

/* A pool of PBOs of `allocator` for the output caps into gl_pool. */
gboolean make_gl_pool(GstTensorMemUpload *self, GstAllocator *allocator) {
  GstCaps *caps = gst_pad_get_current_caps(GST_BASE_TRANSFORM_SRC_PAD(self));
  if (!caps) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No output caps."), (nullptr));
    return FALSE;
  }
  guint size = 0;
  self->gl_pool = gst_tensormem::backend_make_pool(
      gst_tensormem::pbo_backend(), GST_ELEMENT_CAST(self), allocator, caps,
      GST_VIDEO_INFO_SIZE(gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM_CAST(self))), 0, 0, &size);
  gst_caps_unref(caps);
  if (self->gl_pool && gst_buffer_pool_set_active(self->gl_pool, TRUE))
    return TRUE;
  GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Cannot make a PBO pool for memory:GLMemory input."), (nullptr));
  return FALSE;
}

/* GstGL interop at the first buffer: where our worker can share the
 * texture's context (GstGL on EGL), a worker sharing it replaces the
 * element's and textures are read on the GPU; where it cannot (GstGL on
 * GLX, its X11 default), GstGL downloads each texture on its own thread
 * and the frame is copied into PBO memory of the element's worker, a
 * counted copy that require-zero-copy=true refuses, naming the fix. */
gboolean choose_gl_route(GstTensorMemUpload *self, GstBuffer *inbuf) {
  GstMemory *mem = gst_buffer_n_memory(inbuf) > 0 ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  GError *error = nullptr;
  gchar *why = nullptr;
  const gboolean shareable = mem && gst_tensor_gl_memory_can_share(mem, &why);
  if (why) { // GL memory of a context we cannot share
    GstAllocator *allocator = self->backend->allocator();
    gchar *message = g_strdup_printf("require-zero-copy=true refuses the CPU copy of memory:GLMemory input: %s; "
                                     "set GST_GL_PLATFORM=egl in the environment so that textures are read on "
                                     "the GPU",
                                     why);
    const gboolean allowed =
        gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM(self), inbuf, message, why) == GST_FLOW_OK;
    g_free(message);
    GST_INFO_OBJECT(self, "memory:GLMemory: %s: GstGL downloads each texture, one CPU copy into PBO memory", why);
    g_free(why);
    const gboolean made = allowed && allocator && make_gl_pool(self, allocator);
    if (allowed && !allocator)
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("storage=pbo has no PBO allocator."), (nullptr));
    if (allocator)
      gst_object_unref(allocator);
    self->gl_route = made ? GL_ROUTE_CPU : GL_ROUTE_UNDECIDED;
    return made;
  }
  auto *worker = reinterpret_cast<GstTensorMemGlWorker *>(self->backend->device());
  // Not GL memory at all: the query names what is missing upstream.
  const gboolean shared = shareable ? gst_tensor_gl_worker_ensure_for_gl_memory(mem, &worker, &error)
                                    : gst_tensor_gl_worker_ensure_gstgl(GST_ELEMENT(self), &worker, &error);
  if (!shared) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memory:GLMemory input: %s.", error ? error->message : "no GL worker"),
                      ("%" GST_PTR_FORMAT, inbuf));
    g_clear_error(&error);
    gst_clear_object(&worker);
    return FALSE;
  }
  GST_INFO_OBJECT(self, "memory:GLMemory: PBOs of GL worker %" GST_PTR_FORMAT " (%s), sharing GstGL's context", worker,
                  gst_tensor_gl_worker_get_platform(worker));
  self->backend->use_device(GST_OBJECT_CAST(worker));
  gst_object_unref(worker);
  GstAllocator *allocator = self->backend->allocator();
  const gboolean made = allocator && make_gl_pool(self, allocator);
  gst_clear_object(&allocator);
  self->gl_route = made ? GL_ROUTE_GPU : GL_ROUTE_UNDECIDED;
  return made;
}

/* GstGL interop, per buffer: on the GPU route the texture is read into a PBO
 * on the GPU (no CPU copy: copied-bytes stays 0, gpu-copied-bytes counts
 * it), and the output keeps the input (its texture) alive until it is
 * freed, since GstGL reuses textures of released buffers; on the CPU route
 * GstGL downloads it and the frame is copied (copied-bytes counts it). */
GstFlowReturn upload_gl_memory(GstTensorMemUpload *self, GstBuffer *inbuf, GstBuffer **outbuf) {
  if (self->gl_route == GL_ROUTE_UNDECIDED && !choose_gl_route(self, inbuf))
    return GST_FLOW_ERROR;
  const GstVideoInfo *info = gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM_CAST(self));
  GstFlowReturn ret = gst_buffer_pool_acquire_buffer(self->gl_pool, outbuf, nullptr);
  if (ret != GST_FLOW_OK)
    return ret;
  gst_buffer_copy_into(*outbuf, inbuf,
                       static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS), 0,
                       static_cast<gsize>(-1));
  const bool gpu = self->gl_route == GL_ROUTE_GPU;
  gsize copied = 0;
  GError *error = nullptr;
  if (!gpu)
    honour_gl_sync(self, inbuf);
  if (gpu ? !gst_buffer_read_gl_memory_into_tensor_pbo(*outbuf, inbuf, info, &copied, &error)
          : !gst_buffer_copy_gl_memory_into_tensor(*outbuf, inbuf, info, &copied, &error)) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot read the GL texture into PBO memory: %s.", error->message),
                      ("%" GST_PTR_FORMAT, inbuf));
    g_clear_error(&error);
    gst_clear_buffer(outbuf);
    return GST_FLOW_ERROR;
  }
  if (gpu) {
    gst_buffer_add_parent_buffer_meta(*outbuf, inbuf);
    ret = self->backend->fence_writes(inbuf, outbuf);
    if (ret != GST_FLOW_OK)
      return ret;
    GST_OBJECT_LOCK(self);
    self->gpu_copied_bytes += copied;
    GST_OBJECT_UNLOCK(self);
  }
  gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), gpu ? 0 : copied);
  return GST_FLOW_OK;
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemUpload, gst_tensor_upload, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_upload_debug, "tensorupload", 0,
                                                "system or DMA-BUF memory to tensor memory"))

static void gst_tensor_upload_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_UPLOAD(object);
  switch (prop_id) {
  case PROP_STORAGE:
    self->backend->set_storage(static_cast<GstTensorMemStorage>(g_value_get_enum(value)));
    gst_base_transform_reconfigure_src(GST_BASE_TRANSFORM(self));
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_upload_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_UPLOAD(object);
  switch (prop_id) {
  case PROP_STORAGE:
    g_value_set_enum(value, self->backend->storage());
    break;
  case PROP_GPU_COPIED_BYTES:
    GST_OBJECT_LOCK(self);
    g_value_set_uint64(value, self->gpu_copied_bytes);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
}

static void gst_tensor_upload_finalize(GObject *object) {
  auto *self = GST_TENSOR_UPLOAD(object);
  delete self->backend;
  G_OBJECT_CLASS(gst_tensor_upload_parent_class)->finalize(object);
}

static gboolean gst_tensor_upload_start(GstBaseTransform *trans) {
  return GST_TENSOR_UPLOAD(trans)->backend->start();
}

/* Memory already handed out keeps its own allocator (and worker or device). */
static gboolean gst_tensor_upload_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  reset_gl_route(self);
  self->backend->stop();
  gst_tensor_dmabuf_forget_foreign_imports(); // a stopped pipeline holds no foreign buffer
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->stop(trans);
}

/* A backend that wants its device before streaming (D3D11) finds it on the
 * way to READY, so every element of the pipeline has it before any starts
 * and the reason a pipeline cannot have one is the error the application
 * sees. Back in NULL the element lets go of its shared objects, so the next
 * run takes whatever the pipeline (or the application) shares then. */
static GstStateChangeReturn gst_tensor_upload_change_state(GstElement *element, GstStateChange transition) {
  auto *self = GST_TENSOR_UPLOAD(element);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY && !self->backend->open())
    return GST_STATE_CHANGE_FAILURE;
  GstStateChangeReturn ret = GST_ELEMENT_CLASS(gst_tensor_upload_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    self->backend->close();
  return ret;
}

static void gst_tensor_upload_set_context(GstElement *element, GstContext *context) {
  GST_TENSOR_UPLOAD(element)->backend->handle_set_context(context);
  GST_ELEMENT_CLASS(gst_tensor_upload_parent_class)->set_context(element, context);
}

/* Neighbours asking for our GL worker or D3D11 device get it. */
static gboolean gst_tensor_upload_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  return self->backend->handle_context_query(query) ||
         GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->query(trans, direction, query);
}

/* Sink caps → source caps: the same video, as memory:DMABuf first (DMA-BUF
 * storage only) and as plain system-memory caps, or as memory:TensorPBO
 * (memory:TensorD3D11) only for PBO (D3D11) storage. Source caps → sink caps:
 * plain or memory:DMABuf, whatever the storage (a DMA-BUF input is copied
 * into system storage, or imported into DMA-BUF storage). */
static GstCaps *gst_tensor_upload_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                 GstCaps *filter) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  GstCaps *plain;
  if (gst_caps_is_any(caps)) {
    GstCaps *templ = gst_pad_get_pad_template_caps(direction == GST_PAD_SINK ? trans->srcpad : trans->sinkpad);
    plain = gst_caps_simplify(gst_tensor_transform_caps_with_feature(templ, nullptr));
    gst_caps_unref(templ);
  } else {
    plain = gst_tensor_transform_caps_with_feature(caps, nullptr);
  }
  if (direction == GST_PAD_SINK)
    drop_gl_fields(plain);
  GstCaps *result;
  if (direction == GST_PAD_SINK) {
    const gst_tensormem::Backend &backend = backend_of(self);
    result = gst_tensormem::caps_with_feature(plain, backend.caps_feature);
    // DMA-BUF memory maps as system memory too: plain caps second.
    if (&backend == &gst_tensormem::dmabuf_backend())
      result = gst_caps_merge(result, plain);
    else
      gst_caps_unref(plain);
  } else {
    GstCaps *dmabuf = gst_tensor_transform_caps_with_feature(plain, GST_CAPS_FEATURE_MEMORY_DMABUF);
    GstCaps *gl_plain = gst_caps_ref(plain);
    result = gst_caps_merge(plain, dmabuf);
    if (&backend_of(self) == &gst_tensormem::pbo_backend())
      result = with_gl_memory_caps(result, gl_plain);
    gst_caps_unref(gl_plain);
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  GST_DEBUG_OBJECT(self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src", caps,
                   result);
  return result;
}

/* Each upload path says what it wants from upstream (the pass-through path
 * offers our pool, so the producer writes straight into tensor memory). */
static gboolean gst_tensor_upload_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query, GstQuery *query) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  // Pass on the metas downstream accepts: a buffer that needs no copy keeps its metas.
  if (decide_query &&
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->propose_allocation(trans, decide_query, query))
    return FALSE;

  gst_tensormem::UploadContext ctx = upload_context(self);
  const gboolean proposed = gst_tensormem::upload_propose_allocation(ctx, query);
  release_context(ctx);
  return proposed;
}

/* The output pool is always ours, of the element's storage; it is only
 * activated when a buffer must be copied. */
static gboolean gst_tensor_upload_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  GstVideoInfo info;
  if (!caps || !gst_video_info_from_caps(&info, caps)) {
    GST_WARNING_OBJECT(trans, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  guint min_buffers = 0, max_buffers = 0;
  const bool have_pool = gst_query_get_n_allocation_pools(query) > 0;
  if (have_pool)
    gst_query_parse_nth_allocation_pool(query, 0, nullptr, nullptr, &min_buffers, &max_buffers);

  guint size = 0;
  gst_tensormem::UploadContext ctx = upload_context(self);
  GstBufferPool *pool = gst_tensormem::backend_make_pool(*ctx.backend, GST_ELEMENT_CAST(self), ctx.allocator, caps,
                                                        GST_VIDEO_INFO_SIZE(&info), min_buffers, max_buffers, &size);
  release_context(ctx);
  if (!pool)
    return FALSE;
  if (have_pool)
    gst_query_set_nth_allocation_pool(query, 0, pool, size, min_buffers, max_buffers);
  else
    gst_query_add_allocation_pool(query, pool, size, min_buffers, max_buffers);
  gst_object_unref(pool);
  return TRUE;
}

/* The path is chosen and taken here, copy included: transform() has nothing
 * left to do. */
static GstFlowReturn gst_tensor_upload_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                             GstBuffer **outbuf) {
  auto *self = GST_TENSOR_UPLOAD_CAST(trans);
  if (self->gl_input)
    return upload_gl_memory(self, inbuf, outbuf);
  gst_tensormem::UploadContext ctx = upload_context(self);
  GstFlowReturn ret = gst_tensor_mem_element_validate_buffer(GST_ELEMENT_CAST(self), inbuf, ctx.info);
  if (ret != GST_FLOW_OK) {
    release_context(ctx);
    return ret;
  }
  honour_gl_sync(self, inbuf);
  const gst_tensormem::UploadMethod &method = gst_tensormem::upload_method_for(ctx, inbuf);
  if (method.copies)
    ret = gst_tensor_transform_allow_copy(
        GST_TENSOR_TRANSFORM_CAST(self), inbuf,
        "require-zero-copy=true refuses a copy: the input is neither memory of the offered tensor buffer pool nor "
        "memory this storage can import; let upstream take the pool (it must not drop the allocation query), or set "
        "require-zero-copy=false to allow one counted copy per frame",
        nullptr);
  // A path that makes a new buffer reads the input (a copy) or hands its
  // memory on in a buffer of ours: the producers' writes must be complete
  // first. Passed through, the buffer keeps its fences for downstream.
  const bool new_buffer = !gst_tensormem::upload_method_is_passthrough(method);
  if (ret == GST_FLOW_OK && new_buffer && gst_buffer_get_meta(inbuf, GST_TENSOR_MEM_FENCE_META_API_TYPE))
    ret = gst_tensor_mem_element_wait_fences(GST_ELEMENT_CAST(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
                                             gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)), nullptr);
  if (ret == GST_FLOW_OK) {
    // Only a path that makes a new buffer needs the pool (its lock and reference).
    if (new_buffer)
      ctx.output_pool = gst_base_transform_get_buffer_pool(trans);
    gsize copied = 0;
    try {
      ret = method.perform(ctx, inbuf, outbuf, &copied);
    } catch (const std::bad_alloc &) {
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."),
                        ("taking the %s path for %" GST_PTR_FORMAT, method.name, inbuf));
      ret = GST_FLOW_ERROR;
    }
    // The CPU wrote these bytes (a copy, or a producer that wrote into our pool): a persistently and
    // coherently mapped PBO needs no fence for that, and no GL-thread trip per frame (issue 13).
    if (ret == GST_FLOW_OK)
      ret = self->backend->fence_cpu_writes(inbuf, outbuf);
    if (ret == GST_FLOW_OK) {
      GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT " took the %s path", inbuf, method.name);
      gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), copied);
    }
  }
  release_context(ctx);
  return ret;
}

/* storage=d3d11 advertises every format the other storages take (the
 * template is one for all), but DXGI has no texture for some (I420 and the
 * other three-plane YUV formats): refused here by name, not left to fail in
 * the pool as a bare not-negotiated. */
static gboolean check_d3d11_format(GstTensorMemUpload *self, GstCaps *outcaps) {
  const GstCapsFeatures *features = gst_caps_get_features(outcaps, 0);
  GstVideoInfo info;
  if (!features || !gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_TENSOR_D3D11) ||
      !gst_video_info_from_caps(&info, outcaps) || gst_tensor_d3d11_has_texture_layout(&info))
    return TRUE;
  GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                    ("storage=d3d11 has no Direct3D 11 texture for %s frames.", GST_VIDEO_INFO_NAME(&info)),
                    ("textures hold RGBA, BGRA, BGRx, GRAY8, RGB, planar RGB, NV12, NV16 and NV24; put videoconvert "
                     "before tensorupload (NV12 for YUV), or choose storage=system, dmabuf or pbo. Caps: %" GST_PTR_FORMAT,
                     outcaps));
  return FALSE;
}

static gboolean gst_tensor_upload_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  return check_d3d11_format(GST_TENSOR_UPLOAD(trans), outcaps) &&
         GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->set_caps(trans, incaps, outcaps) &&
         negotiate_gl_input(GST_TENSOR_UPLOAD(trans), incaps);
}

static void gst_tensor_upload_class_init(GstTensorMemUploadClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_tensor_upload_set_property;
  gobject_class->get_property = gst_tensor_upload_get_property;
  gobject_class->finalize = gst_tensor_upload_finalize;

  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum(
          "storage", "Storage",
          "Tensor storage for the output buffers: system (heap) memory, DMA-BUF, OpenGL PBOs of a "
          "headless GL worker shared through GstContext, or auto (DMA-BUF when a DMA heap is usable, "
          "else system memory; never PBO)",
          GST_TYPE_TENSOR_STORAGE, GST_TENSOR_STORAGE_AUTO,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));

  g_object_class_install_property(
      gobject_class, PROP_GPU_COPIED_BYTES,
      g_param_spec_uint64("gpu-copied-bytes", "GPU copied bytes",
                          "Bytes of frame data copied on the GPU since the element was created: memory:GLMemory "
                          "textures read into PBO memory (no CPU copy; copied-bytes counts CPU copies)",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_set_static_metadata(element_class, "Tensor upload", "Filter/Video",
                                        "Moves raw video into tensor memory (system, DMA-BUF or OpenGL PBO): "
                                        "zero-copy when upstream writes into the offered tensor buffer pool or hands "
                                        "over DMA-BUF memory, one counted copy otherwise",
                                        "gst-tensormem developers");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  trans_class->start = gst_tensor_upload_start;
  trans_class->stop = gst_tensor_upload_stop;
  trans_class->query = gst_tensor_upload_query;
  element_class->change_state = gst_tensor_upload_change_state;
  element_class->set_context = gst_tensor_upload_set_context;
  trans_class->transform_caps = gst_tensor_upload_transform_caps;
  trans_class->set_caps = gst_tensor_upload_set_caps;
  trans_class->propose_allocation = gst_tensor_upload_propose_allocation;
  trans_class->decide_allocation = gst_tensor_upload_decide_allocation;
  trans_class->prepare_output_buffer = gst_tensor_upload_prepare_output_buffer;

  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_STORAGE, static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_upload_init(GstTensorMemUpload *self) {
  self->backend = new gst_tensormem::ElementBackend(GST_ELEMENT_CAST(self));
  // Our order (memory:DMABuf first for DMA-BUF storage) over "same caps as upstream first".
  gst_base_transform_set_prefer_passthrough(GST_BASE_TRANSFORM(self), FALSE);
}
