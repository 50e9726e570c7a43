// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensoruploader.h>

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensordmabuf.hpp>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorframecopy-private.h>
#include <gst/tensormem/gsttensorgstgl.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <iterator>
#include <utility>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_uploader_debug);
#define GST_CAT_DEFAULT gst_tensor_uploader_debug

namespace gst_tensormem {

namespace {

constexpr guint kProposedMinBuffers = 2;

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_uploader_debug, "tensormemuploader", 0, "upload paths into tensor memory");
    g_once_init_leave(&done, 1);
  }
}

bool all_memories(GstBuffer *buffer, bool (*is_kind)(const UploadContext &, GstMemory *), const UploadContext &ctx) {
  const guint n = gst_buffer_n_memory(buffer);
  if (n == 0)
    return false;
  for (guint i = 0; i < n; ++i) {
    if (!is_kind(ctx, gst_buffer_peek_memory(buffer, i)))
      return false;
  }
  return true;
}

/* ---- pass-through: the input is tensor memory of the element's storage ---- */

/* One interface lookup per memory (gst_tensor_mem_memory_get_storage() would
 * repeat it three times): this runs for every memory of every buffer. */
bool is_our_storage(const UploadContext &ctx, GstMemory *mem) {
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  return tensor && tensor->storage_kind() == ctx.backend->kind;
}

gboolean passthrough_accept(const UploadContext &ctx, void *, GstBuffer *in) {
  return all_memories(in, is_our_storage, ctx);
}

/* Our pool, the allocator and GstVideoMeta, so the producer writes straight
 * into tensor memory and the buffer passes through. An upstream that
 * negotiated a family's caps feature (memory:DMABuf) gets that family's
 * pool whatever the storage. */
gboolean passthrough_propose(const UploadContext &ctx, GstQuery *query) {
  GstCaps *caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (!caps || !gst_tensor_mem_video_info_from_caps(&info, caps, nullptr)) {
    GST_DEBUG_OBJECT(ctx.element, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  const Backend *named = backend_of_caps(caps, 0);
  const Backend &backend = named && named->caps_feature ? *named : *ctx.backend;
  GstAllocator *allocator =
      &backend == ctx.backend ? ctx.element_backend->allocator_for(backend) : backend.new_allocator(nullptr);
  if (!allocator) {
    GST_DEBUG_OBJECT(ctx.element, "no %s allocator yet: nothing to propose", backend.memory_name);
    return FALSE;
  }
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN - 1;
  if (need_pool) {
    guint size = 0;
    GstBufferPool *pool = backend_make_pool(backend, ctx.element, allocator, caps, GST_VIDEO_INFO_SIZE(&info),
                                            kProposedMinBuffers, 0, &size);
    if (!pool) {
      gst_object_unref(allocator);
      return FALSE;
    }
    gst_query_add_allocation_pool(query, pool, size, kProposedMinBuffers, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_param(query, allocator, &params);
  gst_object_unref(allocator);
  if (!gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr))
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

GstFlowReturn passthrough_perform(const UploadContext &ctx, void *, GstBuffer *in, GstBuffer **out, UploadResult *) {
  GST_LOG_OBJECT(ctx.element, "%" GST_PTR_FORMAT " is %s tensor memory already, passing it through", in,
                 ctx.backend->memory_name);
  *out = in;
  return GST_FLOW_OK;
}

/* ---- fd import: DMA-BUF memory from elsewhere, for DMA-BUF storage ---- */

bool is_dmabuf(const UploadContext &, GstMemory *mem) { return gst_is_dmabuf_memory(mem); }

gboolean fd_import_accept(const UploadContext &ctx, void *, GstBuffer *in) {
  return ctx.backend->wraps_dmabuf_fds && all_memories(in, is_dmabuf, ctx);
}

/* Upstream's own DMA-BUF pool is what this path wants: nothing to ask. */
gboolean fd_import_propose(const UploadContext &, GstQuery *) { return FALSE; }

/* Wraps each DMA-BUF memory of `in` as DMA-BUF tensor memory of the same
 * buffer (the import is cached per buffer, see
 * gst_tensor_mem_dmabuf_memory_import_storage()), without a copy. */
GstFlowReturn fd_import_perform(const UploadContext &ctx, void *, GstBuffer *in, GstBuffer **outbuf, UploadResult *) {
  GST_LOG_OBJECT(ctx.element, "%" GST_PTR_FORMAT " is DMA-BUF memory, importing it", in);
  GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
  GstBuffer *out = gst_buffer_new();
  auto fail = [&](GstFlowReturn ret) {
    gst_buffer_unref(out);
    gst_object_unref(allocator);
    return ret;
  };
  const guint n = gst_buffer_n_memory(in);
  for (guint i = 0; i < n; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(in, i);
    auto storage = gst_tensor_mem_dmabuf_memory_import_storage(mem);
    if (!storage) {
      GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("Cannot import the input's DMA-BUF."),
                        ("memory %u of %" GST_PTR_FORMAT " (fd %d): %s", i, in, gst_dmabuf_memory_get_fd(mem),
                         storage.error().message().c_str()));
      return fail(GST_FLOW_ERROR);
    }
    const gsize capacity = (*storage)->size_bytes();
    if (mem->offset > capacity || mem->size > capacity - mem->offset) {
      GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("The input's DMA-BUF memory runs past the end of its buffer."),
                        ("memory %u (fd %d): offset %" G_GSIZE_FORMAT " + size %" G_GSIZE_FORMAT
                         " exceeds the %" G_GSIZE_FORMAT "-byte DMA-BUF",
                         i, gst_dmabuf_memory_get_fd(mem), mem->offset, mem->size, capacity));
      return fail(GST_FLOW_ERROR);
    }
    GstMemory *ours = gst_tensor_mem_dmabuf_allocator_import(allocator, std::move(*storage));
    if (!ours) {
      GST_ELEMENT_ERROR(ctx.element, RESOURCE, FAILED, ("Cannot wrap the input's DMA-BUF."),
                        ("memory %u of %" GST_PTR_FORMAT, i, in));
      return fail(GST_FLOW_ERROR);
    }
    gst_memory_resize(ours, static_cast<gssize>(mem->offset), mem->size);
    gst_buffer_append_memory(out, ours);
  }
  gst_object_unref(allocator);
  ctx.copy_metadata(ctx.element, in, out);
  const GstVideoMeta *meta = gst_buffer_get_video_meta(in);
  if (meta && !gst_buffer_get_video_meta(out)) {
    GstVideoMeta *copy =
        gst_buffer_add_video_meta_full(out, meta->flags, meta->format, meta->width, meta->height, meta->n_planes,
                                       const_cast<gsize *>(meta->offset), const_cast<gint *>(meta->stride));
    copy->alignment = meta->alignment;
  }
  // The upstream buffer stays ours until `out` goes: its pool cannot recycle it under a reader.
  gst_buffer_add_parent_buffer_meta(out, in);
  *outbuf = out;
  return GST_FLOW_OK;
}

/* ---- copy: anything else, once, into the element's output pool ---- */

gboolean copy_accept(const UploadContext &, void *, GstBuffer *) { return TRUE; }

gboolean copy_propose(const UploadContext &, GstQuery *) { return FALSE; }

GstFlowReturn copy_perform(const UploadContext &ctx, void *, GstBuffer *in, GstBuffer **out, UploadResult *result) {
  const GstFlowReturn ret = copy_frame_into_pool(ctx.element, ctx.output_pool, ctx.info, in, out, ctx.copy_metadata);
  if (ret == GST_FLOW_OK)
    result->copied = GST_VIDEO_INFO_SIZE(ctx.info);
  return ret;
}

/* ---- GstGL textures (memory:GLMemory), for PBO storage ---- */

/* How textures reach PBO memory, decided at the first buffer from the
 * context of its texture (a GstGL source may make its context only after
 * the caps: gltestsrc). */
enum class GlRoute {
  Undecided,
  Gpu, // our worker shares GstGL's EGL context: read on the GPU
  Cpu, // it cannot (GstGL on GLX): GstGL downloads, one CPU copy
};

struct GlState {
  gboolean input = FALSE; // memory:GLMemory negotiated
  GlRoute route = GlRoute::Undecided;
  GstBufferPool *pool = nullptr; // PBOs of the route's worker
  GstCaps *outcaps = nullptr;
};

void *gl_new_state() { return new GlState(); }

void gl_reset(void *state) {
  auto *gl = static_cast<GlState *>(state);
  gl->route = GlRoute::Undecided;
  if (GstBufferPool *pool = gl->pool) {
    gl->pool = nullptr;
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
}

void gl_free_state(void *state) {
  auto *gl = static_cast<GlState *>(state);
  gl_reset(gl);
  gst_clear_caps(&gl->outcaps);
  delete gl;
}

/* Textures of 4-byte formats (an RGBA8 texture holds the bytes as they
 * are), 2D. */
constexpr const char *kGlMemoryCaps =
    "video/x-raw(" GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY "), format=(string){ RGBA, BGRA, RGBx, BGRx }, "
    "texture-target=(string)2D";

/* Source caps → sink caps, for a family GstGL's textures reach on the GPU
 * only (the table's shares_gstgl_display: PBO; an upstream that can give
 * either, like gldownload, would otherwise hand the other storages
 * textures): the same video as textures, last in preference. */
GstCaps *gl_sink_caps(const UploadContext &ctx, GstCaps *plain) {
#if GST_TENSOR_MEM_HAVE_GSTGL && GST_TENSOR_MEM_HAVE_GL
  if (!ctx.backend->shares_gstgl_display)
    return nullptr;
  GstCaps *textures = caps_with_feature(plain, GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY);
  GstCaps *allowed = gst_caps_from_string(kGlMemoryCaps);
  GstCaps *gl = gst_caps_intersect_full(textures, allowed, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref(textures);
  gst_caps_unref(allowed);
  return gl;
#else
  (void)ctx;
  (void)plain;
  return nullptr;
#endif
}

/* memory:GLMemory needs storage=pbo. */
gboolean gl_set_caps(const UploadContext &ctx, void *state, GstCaps *incaps, GstCaps *outcaps) {
  auto *gl = static_cast<GlState *>(state);
  gl_reset(gl);
  gst_caps_replace(&gl->outcaps, outcaps);
  GstCapsFeatures *features = gst_caps_get_features(incaps, 0);
  gl->input = features && gst_caps_features_contains(features, GST_TENSOR_MEM_CAPS_FEATURE_MEMORY_GL_MEMORY);
  if (!gl->input || ctx.backend->shares_gstgl_display)
    return TRUE;
  GST_ELEMENT_ERROR(ctx.element, CORE, NEGOTIATION,
                    ("memory:GLMemory input needs storage=pbo (this element has storage=%s): GstGL textures are "
                     "read into OpenGL PBOs; put gldownload in front for the other storages.",
                     storage_nick(ctx.backend->storage)),
                    ("caps %" GST_PTR_FORMAT, incaps));
  return FALSE;
}

gboolean gl_accept(const UploadContext &, void *state, GstBuffer *) { return static_cast<GlState *>(state)->input; }

/* GstGL's own pool serves the textures: nothing to ask. */
gboolean gl_propose(const UploadContext &, GstQuery *) { return FALSE; }

/* A pool of the element's memory (PBOs: gl_set_caps took no other) of its
 * allocator for the output caps. */
gboolean gl_make_pool(const UploadContext &ctx, GlState *gl) {
  GstAllocator *allocator = ctx.element_backend->allocator();
  guint size = 0;
  if (allocator && gl->outcaps)
    gl->pool = backend_make_pool(*ctx.backend, ctx.element, allocator, gl->outcaps, GST_VIDEO_INFO_SIZE(ctx.info), 0,
                                 0, &size);
  gst_clear_object(&allocator);
  if (gl->pool && gst_buffer_pool_set_active(gl->pool, TRUE))
    return TRUE;
  GST_ELEMENT_ERROR(ctx.element, RESOURCE, SETTINGS, ("Cannot make a PBO pool for memory:GLMemory input."),
                    ("allocator %s, caps %" GST_PTR_FORMAT, allocator ? "present" : "missing", gl->outcaps));
  return FALSE;
}

/* Where our worker can share the texture's context (GstGL on EGL), a worker
 * sharing it replaces the element's and textures are read on the GPU; where
 * it cannot (GstGL on GLX, its X11 default), GstGL downloads each texture on
 * its own thread and the frame is copied into PBO memory of the element's
 * worker, a counted copy that require-zero-copy=true refuses, naming the
 * fix. */
gboolean gl_choose_route(const UploadContext &ctx, GlState *gl, GstBuffer *in) {
  GstMemory *mem = gst_buffer_n_memory(in) > 0 ? gst_buffer_peek_memory(in, 0) : nullptr;
  gchar *why = nullptr;
  const gboolean shareable = mem && gst_tensor_mem_gl_memory_can_share(mem, &why);
  if (why) { // GL memory of a context we cannot share
    gchar *refusal = g_strdup_printf("require-zero-copy=true refuses the CPU copy of memory:GLMemory input: %s; "
                                     "set GST_GL_PLATFORM=egl in the environment so that textures are read on "
                                     "the GPU",
                                     why);
    const gboolean allowed = ctx.allow_copy(ctx.element, in, refusal, why) == GST_FLOW_OK;
    g_free(refusal);
    GST_INFO_OBJECT(ctx.element, "memory:GLMemory: %s: GstGL downloads each texture, one CPU copy into PBO memory",
                    why);
    g_free(why);
    gl->route = allowed && gl_make_pool(ctx, gl) ? GlRoute::Cpu : GlRoute::Undecided;
    return gl->route != GlRoute::Undecided;
  }
  auto *worker = reinterpret_cast<GstTensorMemGlWorker *>(ctx.element_backend->device());
  GError *error = nullptr;
  // Not GL memory at all: the query names what is missing upstream.
  const gboolean shared = shareable ? gst_tensor_mem_gl_worker_ensure_for_gl_memory(mem, &worker, &error)
                                    : gst_tensor_mem_gl_worker_ensure_gstgl(ctx.element, &worker, &error);
  if (!shared) {
    GST_ELEMENT_ERROR(ctx.element, RESOURCE, SETTINGS,
                      ("memory:GLMemory input: %s.", error ? error->message : "no GL worker"),
                      ("%" GST_PTR_FORMAT, in));
    g_clear_error(&error);
    gst_clear_object(&worker);
    return FALSE;
  }
  GST_INFO_OBJECT(ctx.element, "memory:GLMemory: PBOs of GL worker %" GST_PTR_FORMAT " (%s), sharing GstGL's context",
                  worker, gst_tensor_mem_gl_worker_get_platform(worker));
  ctx.element_backend->use_device(GST_OBJECT_CAST(worker));
  gst_object_unref(worker);
  gl->route = gl_make_pool(ctx, gl) ? GlRoute::Gpu : GlRoute::Undecided;
  return gl->route != GlRoute::Undecided;
}

/* On the GPU route the texture is read into a PBO on the GPU (no CPU copy),
 * the write fenced, and the output keeps the input (its texture) alive until
 * it is freed, since GstGL reuses textures of released buffers; on the CPU
 * route GstGL downloads it (after its GstGLSyncMeta) and the frame is
 * copied. */
GstFlowReturn gl_perform(const UploadContext &ctx, void *state, GstBuffer *in, GstBuffer **out, UploadResult *result) {
  auto *gl = static_cast<GlState *>(state);
  if (gl->route == GlRoute::Undecided && !gl_choose_route(ctx, gl, in))
    return GST_FLOW_ERROR;
  GstFlowReturn ret = gst_buffer_pool_acquire_buffer(gl->pool, out, nullptr);
  if (ret != GST_FLOW_OK)
    return ret;
  gst_buffer_copy_into(*out, in, static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS), 0,
                       static_cast<gsize>(-1));
  const bool gpu = gl->route == GlRoute::Gpu;
  gsize copied = 0;
  GError *error = nullptr;
  if (!gpu)
    gst_buffer_wait_tensor_mem_gl_sync_metas(in);
  if (gpu ? !gst_buffer_read_gl_memory_into_tensor_mem_pbo(*out, in, ctx.info, &copied, &error)
          : !gst_buffer_copy_gl_memory_into_tensor_mem(*out, in, ctx.info, &copied, &error)) {
    GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("Cannot read the GL texture into PBO memory: %s.", error->message),
                      ("%" GST_PTR_FORMAT, in));
    g_clear_error(&error);
    gst_clear_buffer(out);
    return GST_FLOW_ERROR;
  }
  if (!gpu) {
    result->copied = copied;
    return GST_FLOW_OK;
  }
  gst_buffer_add_parent_buffer_meta(*out, in);
  ret = ctx.element_backend->fence_writes(*ctx.backend, in, out);
  if (ret == GST_FLOW_OK)
    result->gpu_copied = copied;
  return ret;
}

const UploadMethod kMethods[] = {
    {"gstgl", FALSE, FALSE, gl_new_state, gl_free_state, gl_sink_caps, gl_set_caps, gl_reset, gl_accept, gl_propose,
     gl_perform},
    {"pass-through", FALSE, TRUE, nullptr, nullptr, nullptr, nullptr, nullptr, passthrough_accept, passthrough_propose,
     passthrough_perform},
    {"fd-import", FALSE, TRUE, nullptr, nullptr, nullptr, nullptr, nullptr, fd_import_accept, fd_import_propose,
     fd_import_perform},
    {"copy", TRUE, TRUE, nullptr, nullptr, nullptr, nullptr, nullptr, copy_accept, copy_propose, copy_perform},
};
constexpr const UploadMethod &kPassthrough = kMethods[1];

} // namespace

static_assert(std::size(kMethods) <= 4, "Uploader keeps one state slot per method");

Uploader::Uploader() {
  ensure_debug_category();
  for (std::size_t i = 0; i < std::size(kMethods); ++i)
    states_[i] = kMethods[i].new_state ? kMethods[i].new_state() : nullptr;
}

Uploader::~Uploader() {
  for (std::size_t i = 0; i < std::size(kMethods); ++i) {
    if (kMethods[i].free_state)
      kMethods[i].free_state(states_[i]);
  }
}

void *Uploader::state_of(const UploadMethod &method) { return states_[&method - kMethods]; }

GstCaps *Uploader::sink_caps(const UploadContext &ctx, GstCaps *plain) {
  GstCaps *result = gst_caps_new_empty();
  for (const UploadMethod &method : kMethods) {
    if (!method.sink_caps)
      continue;
    if (GstCaps *more = method.sink_caps(ctx, plain))
      result = gst_caps_merge(result, more);
  }
  return result;
}

gboolean Uploader::set_caps(const UploadContext &ctx, GstCaps *incaps, GstCaps *outcaps) {
  for (const UploadMethod &method : kMethods) {
    if (method.set_caps && !method.set_caps(ctx, state_of(method), incaps, outcaps))
      return FALSE;
  }
  return TRUE;
}

void Uploader::reset() {
  for (const UploadMethod &method : kMethods) {
    if (method.reset)
      method.reset(state_of(method));
  }
}

const UploadMethod &Uploader::method_for(const UploadContext &ctx, GstBuffer *in) {
  for (const UploadMethod &method : kMethods) {
    if (method.accept(ctx, state_of(method), in))
      return method;
  }
  return kMethods[std::size(kMethods) - 1];
}

GstFlowReturn Uploader::perform(const UploadMethod &method, const UploadContext &ctx, GstBuffer *in, GstBuffer **out,
                                UploadResult *result) {
  return method.perform(ctx, state_of(method), in, out, result);
}

bool Uploader::is_passthrough(const UploadMethod &method) { return &method == &kPassthrough; }

gboolean Uploader::propose_allocation(const UploadContext &ctx, GstQuery *query) {
  gboolean proposed = FALSE;
  for (const UploadMethod &method : kMethods)
    proposed |= method.propose(ctx, query);
  return proposed;
}

} // namespace gst_tensormem
