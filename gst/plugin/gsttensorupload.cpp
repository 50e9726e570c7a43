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
 * turns such a copy into an error. A new buffer keeps the frame's
 * GstTensorMeta (GStreamer 1.26's has no transform, so its own metadata
 * copy would drop it), its tensors' data shared, not copied.
 *
 * With `storage=pbo` the output is OpenGL pixel buffer objects
 * (`video/x-raw(memory:TensorPBO)`, #GstTensorMemPboMemory) of a headless GL
 * worker the element shares with the rest of the pipeline through a
 * #GstContext of type %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE: it asks its
 * neighbours, then the application (need-context), and starts one itself
 * only when nobody has one (see gst_tensor_mem_gl_worker_ensure()). The PBO pool
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
 * %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE (gst_tensor_mem_d3d11_device_ensure()).
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
 * heap is usable and system memory otherwise (gst_tensor_mem_storage_resolve()),
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
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorgstgl.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensoruploader.h>
#include <gst/tensormem/gsttensorwritable-private.h>

#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_upload_debug);
#define GST_CAT_DEFAULT gst_tensor_upload_debug

struct _GstTensorMemUpload {
  GstTensorMemTransform parent;
  gst_tensormem::ElementBackend *backend; // the storage property, its shared device and allocator
  gst_tensormem::Uploader *uploader;      // the upload methods and their state; streaming thread
  guint64 gpu_copied_bytes;               // guarded by the object lock
  GstObject *gstgl_display;               // the GstGLDisplay offered or made; guarded by the object lock
};

namespace {

enum { PROP_0, PROP_STORAGE, PROP_GPU_COPIED_BYTES };

#define UPLOAD_PLAIN_CAPS GST_VIDEO_CAPS_MAKE(GST_TENSOR_MEM_VIDEO_FORMATS)

/* GstGL interop: textures of 4-byte formats (an RGBA8 texture holds the
 * bytes as they are), read into PBOs on the GPU (storage=pbo). */
#define UPLOAD_GL_MEMORY_CAPS                                                                                          \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY, "{ RGBA, BGRA, RGBx, BGRx }")            \
  ", texture-target=(string)2D"

/* The pad templates, from the backend table: frames in any memory the CPU
 * can read (and GstGL textures) in, frames in every family's memory out. */
void add_pad_templates(GstElementClass *element_class) {
  using gst_tensormem::TemplateFamilies;
  GstCaps *sink = gst_tensormem::template_caps(UPLOAD_PLAIN_CAPS, TemplateFamilies::CpuReadable);
#if GST_TENSOR_MEM_HAVE_GSTGL && GST_TENSOR_MEM_HAVE_GL
  gst_caps_append(sink, gst_caps_from_string(UPLOAD_GL_MEMORY_CAPS));
#endif
  GstCaps *src = gst_tensormem::template_caps(UPLOAD_PLAIN_CAPS, TemplateFamilies::AllShared);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src));
  gst_caps_unref(sink);
  gst_caps_unref(src);
}

const gst_tensormem::Backend &backend_of(GstTensorMemUpload *self) { return self->backend->backend(); }

void copy_metadata(GstElement *element, GstBuffer *in, GstBuffer *out) {
  gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM_CAST(element), in, out);
}

GstFlowReturn allow_copy(GstElement *element, GstBuffer *inbuf, const char *refusal, const char *why) {
  return gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM_CAST(element), inbuf, refusal, why);
}

/* What the upload paths need from this element; release_context() drops
 * what it holds. No allocator: the per-buffer paths take theirs from the
 * output pool, and asking the backend for one per buffer costs a reference. */
gst_tensormem::UploadContext upload_context(GstTensorMemUpload *self) {
  gst_tensormem::UploadContext ctx{};
  ctx.element = GST_ELEMENT_CAST(self);
  ctx.element_backend = self->backend;
  ctx.backend = &backend_of(self);
  ctx.info = gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM_CAST(self));
  ctx.copy_metadata = copy_metadata;
  ctx.allow_copy = allow_copy;
  return ctx;
}

void release_context(gst_tensormem::UploadContext &ctx) {
  if (ctx.output_pool)
    gst_object_unref(ctx.output_pool);
}

/* GstGL interop: a GstGLSyncMeta on the input (glupload, GL decoders) has
 * passed before any path reads the input's bytes. */
void honour_gl_sync(GstTensorMemUpload *self, GstBuffer *inbuf) {
  if (const guint waited = gst_buffer_wait_tensor_mem_gl_sync_metas(inbuf))
    GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT ": waited for %u GstGLSyncMeta(s)", inbuf, waited);
}

/* GstGL interop, sink caps → source caps: a texture's caps name its
 * texture target, which tensor memory has not. */
void drop_gl_fields(GstCaps *caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i)
    gst_structure_remove_field(gst_caps_get_structure(caps, i), "texture-target");
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
  delete self->uploader;
  delete self->backend;
  gst_clear_object(&self->gstgl_display);
  G_OBJECT_CLASS(gst_tensor_upload_parent_class)->finalize(object);
}

static gboolean gst_tensor_upload_start(GstBaseTransform *trans) {
  return GST_TENSOR_UPLOAD(trans)->backend->start();
}

/* Memory already handed out keeps its own allocator (and worker or device). */
static gboolean gst_tensor_upload_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  self->uploader->reset();
  self->backend->stop();
  gst_tensormem::forget_foreign_imports(); // a stopped pipeline holds no foreign buffer
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
  auto *self = GST_TENSOR_UPLOAD(element);
  GST_OBJECT_LOCK(self);
  gst_tensor_mem_gstgl_display_set_context(&self->gstgl_display, context);
  GST_OBJECT_UNLOCK(self);
  self->backend->handle_set_context(context);
  GST_ELEMENT_CLASS(gst_tensor_upload_parent_class)->set_context(element, context);
}

/* Neighbours asking for our GL worker or D3D11 device get it. */
static gboolean gst_tensor_upload_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  // GstGL upstream asking for a display, where our memory can share GstGL's
  // context (its textures are then read on the GPU)
  if (direction == GST_PAD_SINK && backend_of(self).shares_gstgl_display &&
      gst_tensor_mem_gstgl_display_answer_query(GST_ELEMENT(self), &self->gstgl_display, query))
    return TRUE;
  return self->backend->handle_context_query(query) ||
         GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->query(trans, direction, query);
}

/* Sink caps → source caps: the same video in the storage's memory (its caps
 * feature), and as plain system-memory caps too, second, where that memory
 * maps as system memory (DMA-BUF). Source caps → sink caps: plain, or in the
 * feature of any family that maps as system memory (memory:DMABuf),
 * whatever the storage (such input is read through a CPU map, or imported
 * where the storage can), then what the uploader reads on the GPU. DMA_DRM caps
 * (GStreamer 1.24 and later) are read as the formats they name, and every
 * memory:DMABuf structure we answer is also offered in its linear DMA_DRM
 * form. */
static GstCaps *gst_tensor_upload_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                 GstCaps *filter) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  const bool any = gst_caps_is_any(caps);
  GstCaps *given = any ? gst_pad_get_pad_template_caps(direction == GST_PAD_SINK ? trans->srcpad : trans->sinkpad)
                       : gst_caps_ref(caps);
  GstCaps *ordinary = gst_tensormem::caps_without_dma_drm(given);
  gst_caps_unref(given);
  GstCaps *plain = gst_tensor_transform_caps_with_feature(ordinary, nullptr);
  gst_caps_unref(ordinary);
  if (any)
    plain = gst_caps_simplify(plain);
  if (direction == GST_PAD_SINK)
    drop_gl_fields(plain);
  GstCaps *result;
  if (direction == GST_PAD_SINK) {
    const gst_tensormem::Backend &backend = backend_of(self);
    result = gst_tensormem::caps_with_feature(plain, backend.caps_feature);
    // Shared memory that maps as system memory (DMA-BUF) is offered with plain caps too, second.
    if (backend.caps_feature && backend.maps_as_system)
      result = gst_caps_merge(result, plain);
    else
      gst_caps_unref(plain);
  } else {
    gst_tensormem::UploadContext ctx = upload_context(self);
    GstCaps *more = self->uploader->sink_caps(ctx, plain);
    release_context(ctx);
    result = gst_caps_ref(plain);
    for (std::size_t i = 0; i < gst_tensormem::kBackendCount; ++i) {
      const gst_tensormem::Backend &family = gst_tensormem::backend_at(i);
      if (family.maps_as_system && family.caps_feature)
        result = gst_caps_merge(result, gst_tensor_transform_caps_with_feature(plain, family.caps_feature));
    }
    gst_caps_unref(plain);
    result = gst_caps_merge(result, more);
  }
  GstCaps *with_drm = gst_tensormem::caps_with_dma_drm(result);
  gst_caps_unref(result);
  result = with_drm;
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
  const gboolean proposed = self->uploader->propose_allocation(ctx, query);
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
  if (!caps || !gst_tensor_mem_video_info_from_caps(&info, caps, nullptr)) {
    GST_WARNING_OBJECT(trans, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  guint min_buffers = 0, max_buffers = 0;
  const bool have_pool = gst_query_get_n_allocation_pools(query) > 0;
  if (have_pool)
    gst_query_parse_nth_allocation_pool(query, 0, nullptr, nullptr, &min_buffers, &max_buffers);

  guint size = 0;
  gst_tensormem::UploadContext ctx = upload_context(self);
  GstAllocator *allocator = self->backend->allocator_for(*ctx.backend);
  GstBufferPool *pool = gst_tensormem::backend_make_pool(*ctx.backend, GST_ELEMENT_CAST(self), allocator, caps,
                                                        GST_VIDEO_INFO_SIZE(&info), min_buffers, max_buffers, &size);
  gst_clear_object(&allocator);
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
  gst_tensormem::UploadContext ctx = upload_context(self);
  const gst_tensormem::UploadMethod &method = self->uploader->method_for(ctx, inbuf);
  GstFlowReturn ret = GST_FLOW_OK;
  if (method.raw_input) {
    ret = gst_tensor_mem_element_validate_buffer(GST_ELEMENT_CAST(self), inbuf, ctx.info);
    honour_gl_sync(self, inbuf);
  }
  if (ret == GST_FLOW_OK && method.copies)
    ret = gst_tensor_transform_allow_copy(
        GST_TENSOR_TRANSFORM_CAST(self), inbuf,
        "require-zero-copy=true refuses a copy: the input is neither memory of the offered tensor buffer pool nor "
        "memory this storage can import; let upstream take the pool (it must not drop the allocation query), or set "
        "require-zero-copy=false to allow one counted copy per frame",
        nullptr);
  // A path that makes a new buffer reads the input (a copy) or hands its
  // memory on in a buffer of ours: the producers' writes must be complete
  // first. Passed through, the buffer keeps its fences for downstream.
  const bool new_buffer = !gst_tensormem::Uploader::is_passthrough(method);
  if (ret == GST_FLOW_OK && method.raw_input && new_buffer &&
      gst_buffer_get_meta(inbuf, GST_TENSOR_MEM_FENCE_META_API_TYPE))
    ret = gst_tensor_mem_element_wait_fences(GST_ELEMENT_CAST(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
                                             gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)), nullptr);
  gst_tensormem::UploadResult result;
  if (ret == GST_FLOW_OK) {
    // Only a path that makes a new buffer needs the pool (its lock and reference).
    if (new_buffer)
      ctx.output_pool = gst_base_transform_get_buffer_pool(trans);
    ret = self->uploader->perform(method, ctx, inbuf, outbuf, &result);
  }
  // A new buffer keeps what GStreamer's metadata copy drops: the frame's
  // GstTensorMeta (1.26 gives it no transform), as tensordownload's copy does.
  if (ret == GST_FLOW_OK && *outbuf != inbuf)
    gst_tensormem::copy_buffer_metas(inbuf, *outbuf);
  // The CPU wrote these bytes (a copy, or a producer that wrote into our pool): a persistently and
  // coherently mapped PBO needs no fence for that, and no GL-thread trip per frame (issue 13).
  if (ret == GST_FLOW_OK && method.raw_input)
    ret = self->backend->fence_cpu_writes(*ctx.backend, inbuf, outbuf);
  if (ret == GST_FLOW_OK) {
    GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT " took the %s path", inbuf, method.name);
    gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), result.copied);
    if (result.gpu_copied) {
      GST_OBJECT_LOCK(self);
      self->gpu_copied_bytes += result.gpu_copied;
      GST_OBJECT_UNLOCK(self);
    }
  }
  release_context(ctx);
  return ret;
}

static gboolean gst_tensor_upload_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  if (!self->backend->check_caps(outcaps) ||
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->set_caps(trans, incaps, outcaps))
    return FALSE;
  gst_tensormem::UploadContext ctx = upload_context(self);
  const gboolean set = self->uploader->set_caps(ctx, incaps, outcaps);
  release_context(ctx);
  return set;
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
          GST_TYPE_TENSOR_MEM_STORAGE, GST_TENSOR_MEM_STORAGE_AUTO,
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
                                        GST_TENSOR_MEM_AUTHOR);
  add_pad_templates(element_class);

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

  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_MEM_STORAGE, static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_upload_init(GstTensorMemUpload *self) {
  self->backend = new gst_tensormem::ElementBackend(GST_ELEMENT_CAST(self));
  self->uploader = new gst_tensormem::Uploader();
  // Our order (memory:DMABuf first for DMA-BUF storage) over "same caps as upstream first".
  gst_base_transform_set_prefer_passthrough(GST_BASE_TRANSFORM(self), FALSE);
}
