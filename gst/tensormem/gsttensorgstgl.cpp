// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:gsttensorgstgl
 * @title: GstGL interop
 * @short_description: GstGL textures into PBO tensor memory on the GPU
 *
 * Where a pipeline already has a #GstGLContext (GstGL elements upstream),
 * PBO tensor memory can be filled from `memory:GLMemory` textures without a
 * CPU copy: a GL worker whose context lives on GstGL's EGL display and
 * shares objects with GstGL's context (gst_tensor_mem_gl_worker_ensure_gstgl())
 * reads each texture into a PBO with a pack-buffer glReadPixels
 * (gst_buffer_read_gl_memory_into_tensor_mem_pbo()). GstGL must run on EGL: GL
 * objects cannot be shared between a GLX and an EGL context. On X11, where
 * GstGL picks GLX by default, the element offers GstGL an EGL display
 * (gst_tensor_mem_gstgl_display_answer_query()). docs/pbo.md, "GstGL interop".
 *
 * Since: 0.1
 */
#include <gst/tensormem/gsttensorframecopy-private.h>
#include <gst/tensormem/gsttensorgstgl.h>

#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensorpbo.h>
#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#include <gst/tensormem/gsttensorpbo.hpp>
#endif

#include <tensormem/gl_worker.hpp>

#include <new>
#include <string>

#if GST_TENSOR_MEM_HAVE_GSTGL && GST_TENSOR_MEM_HAVE_GL
#define TENSORMEM_GSTGL_READBACK 1
#include <gst/gl/egl/gstgldisplay_egl.h>
#include <gst/gl/gl.h>
#include <gst/gl/gstglfuncs.h>
#else
#define TENSORMEM_GSTGL_READBACK 0
#endif

#ifndef GL_SYNC_GPU_COMMANDS_COMPLETE
#define GL_SYNC_GPU_COMMANDS_COMPLETE 0x9117
#endif

namespace {

#if TENSORMEM_GSTGL_READBACK
/* On a worker made by gst_tensor_mem_gl_worker_ensure_gstgl(): the GstGLContext
 * it shares with, and the GstGLDisplayEGL whose EGLDisplay its context lives
 * on (GstGL terminates that display when the last reference goes, so the
 * worker holds one until its own context is gone: object data is released
 * after the worker's finalize). */
constexpr const char *kSharedContextKey = "gst-tensormem-gstgl-context";
constexpr const char *kSharedDisplayKey = "gst-tensormem-gstgl-egl-display";

GstGLContext *shared_context_of(GstTensorMemGlWorker *worker) {
  return static_cast<GstGLContext *>(g_object_get_data(G_OBJECT(worker), kSharedContextKey));
}

/* A GL sync after every command GstGL's context has queued (run on its
 * thread), for our context to wait for on the GPU. */
void fence_gstgl_commands(GstGLContext *context, gpointer data) {
  const GstGLFuncs *gl = context->gl_vtable;
  auto *sync = static_cast<gpointer *>(data);
  *sync = gl->FenceSync ? reinterpret_cast<gpointer>(gl->FenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0)) : nullptr;
  if (*sync)
    gl->Flush();
  else
    gl->Finish(); // no sync objects: wait here instead
}

/* A worker sharing `context` into *worker (kept when it shares already). */
gboolean ensure_sharing_worker(GstGLContext *context, GstTensorMemGlWorker **worker, GError **error) {
  if (*worker && shared_context_of(*worker) == context)
    return TRUE;
  if (gst_gl_context_get_gl_platform(context) != GST_GL_PLATFORM_EGL) {
    gchar *platform = gst_gl_platform_to_string(gst_gl_context_get_gl_platform(context));
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                "GstGL's context %s runs on %s, and GL objects cannot be shared between a %s context and our EGL "
                "one: run GstGL on EGL (environment GST_GL_PLATFORM=egl)",
                GST_OBJECT_NAME(context), platform, platform);
    g_free(platform);
    return FALSE;
  }
  GstGLDisplay *display = gst_gl_context_get_display(context);
  GstGLDisplayEGL *egl_display = gst_gl_display_egl_from_gl_display(display);
  gst_object_unref(display);
  if (!egl_display) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                "GstGL's display of context %s has no EGL display", GST_OBJECT_NAME(context));
    return FALSE;
  }
  auto *egl_handle = reinterpret_cast<void *>(gst_gl_display_get_handle(GST_GL_DISPLAY(egl_display)));
  auto *egl_context = reinterpret_cast<void *>(gst_gl_context_get_gl_context(context));
  GstTensorMemGlWorker *made = nullptr;
  auto core = tensormem::GlWorker::create_sharing(egl_handle, egl_context,
                                                  std::string("gstgl-egl:") + GST_OBJECT_NAME(context));
  if (!core) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "sharing GstGL's context %s: %s",
                GST_OBJECT_NAME(context), core.error().message().c_str());
  } else {
    made = gst_tensor_mem_gl_worker_new_wrapped(std::move(*core));
  }
  if (!made) {
    gst_object_unref(egl_display);
    return FALSE;
  }
  g_object_set_data_full(G_OBJECT(made), kSharedDisplayKey, egl_display, gst_object_unref);
  g_object_set_data_full(G_OBJECT(made), kSharedContextKey, gst_object_ref(context), gst_object_unref);
  gst_object_replace(reinterpret_cast<GstObject **>(worker), GST_OBJECT_CAST(made));
  gst_object_unref(made);
  return TRUE;
}

/* Deletes the GL sync at `data` in GstGL's context (a read that never ran). */
void delete_gstgl_sync(GstGLContext *context, gpointer data) {
  if (data && context->gl_vtable->DeleteSync)
    context->gl_vtable->DeleteSync(static_cast<GLsync>(data));
}
#endif

} // namespace

/**
 * gst_tensor_mem_gl_worker_ensure_gstgl:
 * @element: the element receiving `memory:GLMemory`
 * @worker: (inout) (transfer full): the element's GL worker; replaced by one
 *   sharing GstGL's context unless it is one already
 * @error: a #GError, or %NULL
 *
 * Finds the #GstGLContext upstream (the `gst.gl.local_context` query that
 * GstGL elements answer) and makes a GL worker whose context is created on
 * that context's EGL display, sharing its objects, so that its textures
 * can be read into PBOs of the worker (docs/pbo.md, "GstGL interop").
 *
 * Returns: %TRUE with *@worker sharing GstGL's context; %FALSE with @error
 * saying why (no GstGL context upstream, GstGL on GLX instead of EGL, a
 * driver that refuses to share, a build without GstGL).
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_ensure_gstgl(GstElement *element, GstTensorMemGlWorker **worker, GError **error) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(worker != nullptr, FALSE);
#if TENSORMEM_GSTGL_READBACK
  GstGLContext *context = nullptr;
  if (!gst_gl_query_local_gl_context(element, GST_PAD_SINK, &context) || !context) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
                "no GstGLContext upstream answered the gst.gl.local_context query: memory:GLMemory input needs a "
                "GstGL element (glupload, glcolorconvert, a GL decoder) in front");
    return FALSE;
  }
  const gboolean made = ensure_sharing_worker(context, worker, error);
  gst_object_unref(context);
  return made;
#else
  (void)element;
  g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
              "gst-tensormem was built without GstGL interop (-Dgstgl, -Dgl): memory:GLMemory is not accepted");
  return FALSE;
#endif
}

/**
 * gst_tensor_mem_gl_worker_ensure_for_gl_memory:
 * @memory: a #GstGLMemory (`memory:GLMemory`)
 * @worker: (inout) (transfer full): the element's GL worker; replaced by one
 *   sharing @memory's #GstGLContext unless it is one already
 * @error: a #GError, or %NULL
 *
 * Like gst_tensor_mem_gl_worker_ensure_gstgl(), for the context that made the
 * texture of @memory, which a source that makes its context only after the
 * caps (gltestsrc) needs: nobody answers the context query at set_caps.
 *
 * Returns: %TRUE with *@worker sharing @memory's context; %FALSE with @error
 * saying why (not GL memory, GstGL on GLX: gst_tensor_mem_gl_memory_can_share()).
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_ensure_for_gl_memory(GstMemory *memory, GstTensorMemGlWorker **worker,
                                                       GError **error) {
  g_return_val_if_fail(memory != nullptr && worker != nullptr, FALSE);
#if TENSORMEM_GSTGL_READBACK
  if (!gst_is_gl_memory(memory)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "the buffer is not GstGLMemory (memory of %s), though the caps say memory:GLMemory",
                memory->allocator ? GST_OBJECT_NAME(memory->allocator) : "no allocator");
    return FALSE;
  }
  return ensure_sharing_worker(reinterpret_cast<GstGLBaseMemory *>(memory)->context, worker, error);
#else
  g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
              "gst-tensormem was built without GstGL interop (-Dgstgl, -Dgl): memory:GLMemory is not accepted");
  return FALSE;
#endif
}

/**
 * gst_tensor_mem_gl_memory_can_share:
 * @memory: a #GstGLMemory
 * @why: (out) (optional) (transfer full): when %FALSE for GL memory, why
 *   not; left alone when @memory is not a #GstGLMemory
 *
 * Whether a GL worker of ours can share objects with the #GstGLContext of
 * @memory, so that its texture can be read on the GPU: only when GstGL runs
 * on EGL. GstGL on GLX (its default on X11) cannot share with our EGL
 * context; its textures are then read on GstGL's own thread and copied on
 * the CPU (gst_buffer_copy_gl_memory_into_tensor_mem()).
 *
 * Returns: whether the texture can be read on the GPU by our worker.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_memory_can_share(GstMemory *memory, gchar **why) {
  g_return_val_if_fail(memory != nullptr, FALSE);
#if TENSORMEM_GSTGL_READBACK
  if (!gst_is_gl_memory(memory))
    return FALSE;
  GstGLContext *context = reinterpret_cast<GstGLBaseMemory *>(memory)->context;
  const GstGLPlatform platform = gst_gl_context_get_gl_platform(context);
  if (platform == GST_GL_PLATFORM_EGL)
    return TRUE;
  if (why) {
    gchar *name = gst_gl_platform_to_string(platform);
    *why = g_strdup_printf("GstGL's context %s runs on %s, and GL objects cannot be shared between a %s context and "
                           "our EGL one",
                           GST_OBJECT_NAME(context), name, name);
    g_free(name);
  }
  return FALSE;
#else
  (void)why;
  return FALSE;
#endif
}

/**
 * gst_tensor_mem_gl_worker_shares_with_gstgl:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: whether @worker was made by gst_tensor_mem_gl_worker_ensure_gstgl()
 * (its context shares GstGL's objects).
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_shares_with_gstgl(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_GL_WORKER(worker), FALSE);
#if TENSORMEM_GSTGL_READBACK
  return shared_context_of(worker) != nullptr;
#else
  return FALSE;
#endif
}

/**
 * gst_buffer_read_gl_memory_into_tensor_mem_pbo:
 * @outbuf: a buffer of one PBO tensor memory of a worker made by
 *   gst_tensor_mem_gl_worker_ensure_gstgl()
 * @inbuf: a buffer of one 2D `memory:GLMemory` texture (RGBA) of a context
 *   that worker shares with
 * @info: the frame (4 bytes a pixel)
 * @gpu_copied: (out) (optional): the frame bytes copied on the GPU
 * @error: a #GError, or %NULL
 *
 * Fills @outbuf's PBO from @inbuf's texture on the GPU, no CPU copy: a
 * #GstGLSyncMeta of @inbuf is waited for on the GPU in GstGL's context
 * (gst_gl_sync_meta_wait()), GstGL's context then sets a GL sync after
 * everything it queued (the texture's upload included), our worker's context
 * waits for that sync on the GPU and reads the texture into the PBO
 * (tensormem::GlWorker::read_texture_into(), rows at @outbuf's #GstVideoMeta
 * offset and stride). The caller fences the write (an EGL fence meta) and
 * keeps @inbuf alive until the PBO is read (a #GstParentBufferMeta), since
 * GstGL may reuse the texture once @inbuf is released.
 *
 * Returns: %TRUE when the read was queued.
 *
 * Since: 0.1
 */
gboolean gst_buffer_read_gl_memory_into_tensor_mem_pbo(GstBuffer *outbuf, GstBuffer *inbuf, const GstVideoInfo *info,
                                                       gsize *gpu_copied, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(outbuf) && GST_IS_BUFFER(inbuf) && info, FALSE);
  if (gpu_copied)
    *gpu_copied = 0;
#if TENSORMEM_GSTGL_READBACK
  GstMemory *in = gst_buffer_n_memory(inbuf) == 1 ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  if (!in || !gst_is_gl_memory(in)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "the input is not one GstGLMemory texture (%u memories)", gst_buffer_n_memory(inbuf));
    return FALSE;
  }
  auto *texture = reinterpret_cast<GstGLMemory *>(in);
  if (gst_gl_memory_get_texture_target(texture) != GST_GL_TEXTURE_TARGET_2D || GST_VIDEO_INFO_N_PLANES(info) != 1 ||
      GST_VIDEO_INFO_COMP_PSTRIDE(info, 0) != 4) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "only single-plane 4-byte formats in 2D textures are read on the GPU (got %s, texture target %s)",
                GST_VIDEO_INFO_NAME(info), gst_gl_texture_target_to_string(gst_gl_memory_get_texture_target(texture)));
    return FALSE;
  }
  GstMemory *out = gst_buffer_n_memory(outbuf) == 1 ? gst_buffer_peek_memory(outbuf, 0) : nullptr;
  if (!out || !gst_is_tensor_mem_pbo_memory(out)) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "the output is not one PBO tensor memory");
    return FALSE;
  }
  GstGLContext *context = reinterpret_cast<GstGLBaseMemory *>(in)->context;
  GstTensorMemGlWorker *worker = gst_tensor_mem_pbo_memory_get_gl_worker(out);
  GstGLContext *shared = worker ? shared_context_of(worker) : nullptr;
  if (!shared || (shared != context && !gst_gl_context_can_share(shared, context))) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED,
                "the texture belongs to GstGL context %s, which the PBO's GL worker does not share with",
                GST_OBJECT_NAME(context));
    return FALSE;
  }
  const guint width = GST_VIDEO_INFO_WIDTH(info), height = GST_VIDEO_INFO_HEIGHT(info);
  gsize plane_offset = GST_VIDEO_INFO_PLANE_OFFSET(info, 0);
  gint stride = GST_VIDEO_INFO_PLANE_STRIDE(info, 0);
  if (GstVideoMeta *meta = gst_buffer_get_video_meta(outbuf)) {
    plane_offset = meta->offset[0];
    stride = meta->stride[0];
  }
  if (stride <= 0 || plane_offset > G_MAXSIZE - out->offset) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT, "the output's layout (stride %d) cannot be read into",
                stride);
    return FALSE;
  }

  GstMapInfo map;
  // Maps for GL: GstGL uploads pending CPU writes into the texture first.
  if (!gst_memory_map(in, &map, static_cast<GstMapFlags>(GST_MAP_READ | GST_MAP_GL))) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED, "cannot map the GL memory for GL");
    return FALSE;
  }
  const guint texture_id = *reinterpret_cast<const guint *>(map.data);
  if (GstGLSyncMeta *sync_meta = gst_buffer_get_gl_sync_meta(inbuf))
    gst_gl_sync_meta_wait(sync_meta, context); // GPU-side, in GstGL's context
  gpointer gstgl_done = nullptr;
  gst_gl_context_thread_add(context, fence_gstgl_commands, &gstgl_done);

  tensormem::GlWorker::TextureRegion region;
  region.texture = texture_id;
  region.width = width;
  region.height = height;
  region.row_stride = static_cast<std::size_t>(stride);
  region.offset = out->offset + plane_offset;
  region.wait_sync = gstgl_done;
  std::shared_ptr<tensormem::PboStorage> storage = gst_tensor_mem_pbo_memory_get_storage(out);
  std::shared_ptr<tensormem::GlWorker> core = gst_tensor_mem_gl_worker_get_core_gl_worker(worker);
  tensormem::Result<void> read = tensormem::Error::disconnected("the PBO's GL worker is gone");
  if (storage && core)
    read = core->read_texture_into(*storage, region);
  else
    gst_gl_context_thread_add(context, delete_gstgl_sync, gstgl_done);
  gst_memory_unmap(in, &map);
  if (!read) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "%s", read.error().message().c_str());
    return FALSE;
  }
  if (gpu_copied)
    *gpu_copied = GST_VIDEO_INFO_SIZE(info);
  return TRUE;
#else
  g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
              "gst-tensormem was built without GstGL interop (-Dgstgl, -Dgl)");
  return FALSE;
#endif
}

/**
 * gst_buffer_copy_gl_memory_into_tensor_mem:
 * @outbuf: a writable buffer of tensor memory (any storage the CPU can map
 *   for writing; PBO memory for tensorupload)
 * @inbuf: a buffer of `memory:GLMemory` of any #GstGLContext
 * @info: the frame
 * @copied: (out) (optional): the bytes copied on the CPU
 * @error: a #GError, or %NULL
 *
 * The path where our worker cannot share GstGL's context (GstGL on GLX,
 * gst_tensor_mem_gl_memory_can_share()): @inbuf is mapped for reading, which
 * makes GstGL read its textures on its own context's thread into its CPU
 * copy, and the frame is copied row by row into @outbuf's CPU mapping. One
 * CPU copy a frame, which the caller counts (`copied-bytes`).
 *
 * Returns: %TRUE when @outbuf holds the frame.
 *
 * Since: 0.1
 */
gboolean gst_buffer_copy_gl_memory_into_tensor_mem(GstBuffer *outbuf, GstBuffer *inbuf, const GstVideoInfo *info,
                                                   gsize *copied, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(outbuf) && GST_IS_BUFFER(inbuf) && info, FALSE);
  if (copied)
    *copied = 0;
  GstVideoFrame in, out;
  if (!gst_video_frame_map(&in, info, inbuf, GST_MAP_READ)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
                "GstGL could not map its texture memory for reading (a %s %dx%d frame)", GST_VIDEO_INFO_NAME(info),
                GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info));
    return FALSE;
  }
  if (!gst_video_frame_map(&out, info, outbuf, GST_MAP_WRITE)) {
    gst_video_frame_unmap(&in);
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "cannot map the tensor memory for writing");
    return FALSE;
  }
  const gboolean done = gst_tensormem::copy_video_frame(&out, &in);
  gst_video_frame_unmap(&out);
  gst_video_frame_unmap(&in);
  if (!done) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED, "copying the %s frame failed",
                GST_VIDEO_INFO_NAME(info));
    return FALSE;
  }
  if (copied)
    *copied = GST_VIDEO_INFO_SIZE(info);
  return TRUE;
}

/**
 * gst_tensor_mem_gstgl_display_set_context:
 * @display: (inout) (transfer full) (nullable): the element's GstGL display
 *   slot (a #GstGLDisplay, or %NULL)
 * @context: a context set on the element
 *
 * Keeps the #GstGLDisplay of a `gst.gl.GLDisplay` context (the display a
 * GstGL element made or the application gave, which #GstBin hands to every
 * element), so that gst_tensor_mem_gstgl_display_answer_query() answers with the
 * display the pipeline already uses rather than making another.
 *
 * Returns: %TRUE when @context was a GstGL display context.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gstgl_display_set_context(GstObject **display, GstContext *context) {
  g_return_val_if_fail(display != nullptr && context != nullptr, FALSE);
#if TENSORMEM_GSTGL_READBACK
  GstGLDisplay *offered = nullptr;
  if (!g_str_equal(gst_context_get_context_type(context), GST_GL_DISPLAY_CONTEXT_TYPE) ||
      !gst_context_get_gl_display(context, &offered) || !offered)
    return FALSE;
  gst_object_replace(display, GST_OBJECT_CAST(offered));
  gst_object_unref(offered);
  return TRUE;
#else
  (void)display;
  (void)context;
  return FALSE;
#endif
}

/**
 * gst_tensor_mem_gstgl_display_answer_query:
 * @element: the element answering
 * @display: (inout) (transfer full) (nullable): the element's GstGL display
 *   slot, filled here when a display is made
 * @query: a query reaching @element
 *
 * Answers GstGL's `gst.gl.GLDisplay` context query, which GstGL elements
 * (glupload, glcolorconvert, gltestsrc, GL decoders) send their neighbours
 * before making a display of their own. The answer is the display kept from
 * a context set on @element or, without one, a new #GstGLDisplayEGL: on X11
 * GstGL then makes an EGL context where it would pick GLX, and its textures
 * can be read into PBO tensor memory on the GPU by a worker sharing that
 * context (GL objects cannot be shared between a GLX and an EGL context).
 * Not answered (another element or GstGL itself decides) when
 * `GST_GL_PLATFORM` is set without naming egl, or when no EGL display can
 * be opened.
 *
 * Returns: %TRUE when @query was answered.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gstgl_display_answer_query(GstElement *element, GstObject **display, GstQuery *query) {
  g_return_val_if_fail(GST_IS_ELEMENT(element) && display != nullptr && query != nullptr, FALSE);
#if TENSORMEM_GSTGL_READBACK
  const gchar *type = nullptr;
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT || !gst_query_parse_context_type(query, &type) ||
      !g_str_equal(type, GST_GL_DISPLAY_CONTEXT_TYPE))
    return FALSE;
  GST_OBJECT_LOCK(element);
  GstGLDisplay *answer = *display ? GST_GL_DISPLAY(gst_object_ref(*display)) : nullptr;
  GST_OBJECT_UNLOCK(element);
  if (!answer) {
    const gchar *platform = g_getenv("GST_GL_PLATFORM");
    if (platform && !g_strrstr(platform, "egl")) {
      GST_DEBUG_OBJECT(element, "GST_GL_PLATFORM=%s: leaving GstGL's display to GstGL", platform);
      return FALSE;
    }
    GstGLDisplayEGL *egl = gst_gl_display_egl_new();
    if (!egl) {
      GST_DEBUG_OBJECT(element, "no EGL display to offer GstGL");
      return FALSE;
    }
    answer = GST_GL_DISPLAY(egl);
    GST_OBJECT_LOCK(element);
    if (*display) { // set meanwhile: the pipeline's display wins
      gst_object_unref(answer);
      answer = GST_GL_DISPLAY(gst_object_ref(*display));
    } else {
      *display = GST_OBJECT_CAST(gst_object_ref(answer));
    }
    GST_OBJECT_UNLOCK(element);
    GST_INFO_OBJECT(element, "offering GstGL an EGL display, so its textures can be shared on the GPU");
  }
  const gboolean answered = gst_gl_handle_context_query(element, query, answer, nullptr, nullptr);
  gst_object_unref(answer);
  return answered;
#else
  (void)element;
  (void)display;
  (void)query;
  return FALSE;
#endif
}
