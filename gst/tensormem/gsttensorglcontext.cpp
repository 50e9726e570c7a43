// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemconfig.h>

#include <gst/tensormem/gsttensorcontextshare-private.h>
#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#endif

#include <tensormem/gl_worker.hpp>

#include <cstring>
#include <memory>
#include <new>
#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_gl_context_debug);
#define GST_CAT_DEFAULT gst_tensor_gl_context_debug

struct _GstTensorMemGlWorkerPrivate {
  std::shared_ptr<tensormem::GlWorker> worker; // never empty after construction
};

G_DEFINE_TYPE_WITH_CODE(GstTensorMemGlWorker, gst_tensor_mem_gl_worker, GST_TYPE_OBJECT,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_gl_context_debug, "tensormemglworker", 0,
                                                "the GL worker and its GstContext"))

static void gst_tensor_mem_gl_worker_finalize(GObject *object) {
  auto *self = GST_TENSOR_MEM_GL_WORKER(object);
  GST_DEBUG_OBJECT(self, "finalizing (the GL thread stops once no PBO memory of it is left)");
  // Dropping the last reference joins the GL thread; nothing here throws.
  delete self->priv;
  self->priv = nullptr;
  G_OBJECT_CLASS(gst_tensor_mem_gl_worker_parent_class)->finalize(object);
}

static void gst_tensor_mem_gl_worker_class_init(GstTensorMemGlWorkerClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_mem_gl_worker_finalize;
}

static void gst_tensor_mem_gl_worker_init(GstTensorMemGlWorker *self) { self->priv = nullptr; }

namespace {

/* Without OpenGL the core library has no GlWorker code, and no worker can
 * exist: the accessors below then answer their defaults. */
#if GST_TENSOR_MEM_HAVE_GL
const tensormem::GlInfo &info_of(GstTensorMemGlWorker *worker) { return worker->priv->worker->info(); }
guint64 map_calls_of(GstTensorMemGlWorker *worker) { return worker->priv->worker->gl_map_calls(); }
guint mapped_of(GstTensorMemGlWorker *worker) { return static_cast<guint>(worker->priv->worker->mapped_buffers()); }
#else
const tensormem::GlInfo &info_of(GstTensorMemGlWorker *) {
  static const tensormem::GlInfo none;
  return none;
}
guint64 map_calls_of(GstTensorMemGlWorker *) { return 0; }
guint mapped_of(GstTensorMemGlWorker *) { return 0; }
#endif

bool worker_ok(GstTensorMemGlWorker *worker) {
  return GST_IS_TENSOR_MEM_GL_WORKER(worker) && worker->priv != nullptr && worker->priv->worker != nullptr;
}

/* The GL worker as a shared context object. */
gboolean worker_object_ok(GstObject *object) { return worker_ok(GST_TENSOR_MEM_GL_WORKER(object)); }

GstObject *make_worker(GError **error) { return GST_OBJECT_CAST(gst_tensor_mem_gl_worker_new(error)); }

const gst_tensormem::SharedContextKind kWorkerKind = {GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE,
                                                      GST_TENSOR_MEM_GL_WORKER_CONTEXT_FIELD,
                                                      gst_tensor_mem_gl_worker_get_type, worker_object_ok, make_worker};

GstObject **object_slot(GstTensorMemGlWorker **slot) { return reinterpret_cast<GstObject **>(slot); }

} // namespace

/**
 * gst_tensor_mem_gl_worker_new:
 * @error: (out) (optional): where to put the reason on failure
 *
 * Starts a new headless GL worker: a thread with an EGL context made without
 * a window (EGL_MESA_platform_surfaceless first, then the EGL device
 * platform, then the default display).
 *
 * Returns: (transfer full) (nullable): the worker, or %NULL with @error set
 * (%GST_RESOURCE_ERROR_FAILED naming every platform tried, or
 * %GST_RESOURCE_ERROR_NOT_FOUND in a build without OpenGL).
 *
 * Since: 0.1
 */
GstTensorMemGlWorker *gst_tensor_mem_gl_worker_new(GError **error) {
#if GST_TENSOR_MEM_HAVE_GL
  auto made = tensormem::GlWorker::create();
  if (!made) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "Cannot start a headless GL worker: %s",
                made.error().message().c_str());
    return nullptr;
  }
  return gst_tensor_mem_gl_worker_new_wrapped(std::move(*made));
#else
  g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
              "gst-tensormem was built without OpenGL (-Dgl=disabled, or libepoxy/EGL missing): no PBO memory");
  return nullptr;
#endif
}

/**
 * gst_tensor_mem_gl_worker_new_wrapped: (skip)
 * @worker: a running core GL worker
 *
 * C++ only. Wraps an existing core worker (for instance one the application
 * also uses directly) so it can be handed to elements in a #GstContext.
 *
 * Returns: (transfer full) (nullable): the wrapper, or %NULL for an empty
 * pointer.
 *
 * Since: 0.1
 */
GstTensorMemGlWorker *gst_tensor_mem_gl_worker_new_wrapped(std::shared_ptr<tensormem::GlWorker> worker) {
  g_return_val_if_fail(worker != nullptr, nullptr);
  _GstTensorMemGlWorkerPrivate *priv;
  priv = new _GstTensorMemGlWorkerPrivate{std::move(worker)};
  auto *self = static_cast<GstTensorMemGlWorker *>(g_object_new(GST_TYPE_TENSOR_MEM_GL_WORKER, nullptr));
  gst_object_ref_sink(self);
  self->priv = priv;
  GST_INFO_OBJECT(self, "GL worker: %s, renderer \"%s\", version \"%s\"", gst_tensor_mem_gl_worker_get_platform(self),
                  gst_tensor_mem_gl_worker_get_renderer(self), gst_tensor_mem_gl_worker_get_version(self));
  return self;
}

/**
 * gst_tensor_mem_gl_worker_get_core_gl_worker: (skip)
 * @worker: a #GstTensorMemGlWorker
 *
 * C++ only.
 *
 * Returns: the core worker (a new reference), or an empty pointer for an
 * invalid argument.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_gl_worker_get_core_gl_worker(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), nullptr);
  return worker->priv->worker;
}

/**
 * gst_tensor_mem_gl_worker_get_renderer:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: (transfer none): GL_RENDERER of the worker's context.
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_gl_worker_get_renderer(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), nullptr);
  return info_of(worker).renderer.c_str();
}

/**
 * gst_tensor_mem_gl_worker_get_version:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: (transfer none): GL_VERSION of the worker's context.
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_gl_worker_get_version(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), nullptr);
  return info_of(worker).version.c_str();
}

/**
 * gst_tensor_mem_gl_worker_get_platform:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: (transfer none): the EGL platform the context was made on:
 * "surfaceless", "device" or "default".
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_gl_worker_get_platform(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), nullptr);
  return info_of(worker).platform.c_str();
}

/**
 * gst_tensor_mem_gl_worker_get_map_calls:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: the number of glMapBufferRange calls the worker made so far
 * (readers sharing one map count once).
 *
 * Since: 0.1
 */
guint64 gst_tensor_mem_gl_worker_get_map_calls(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), 0);
  return map_calls_of(worker);
}

/**
 * gst_tensor_mem_gl_worker_get_mapped_buffers:
 * @worker: a #GstTensorMemGlWorker
 *
 * Returns: the number of GL buffers currently mapped by the worker.
 *
 * Since: 0.1
 */
guint gst_tensor_mem_gl_worker_get_mapped_buffers(GstTensorMemGlWorker *worker) {
  g_return_val_if_fail(worker_ok(worker), 0);
  return mapped_of(worker);
}

/**
 * gst_context_set_tensor_mem_gl_worker:
 * @context: a writable #GstContext
 * @worker: (nullable): the worker to store, or %NULL to remove it
 *
 * Stores @worker in @context's structure (field
 * %GST_TENSOR_MEM_GL_WORKER_CONTEXT_FIELD).
 *
 * Since: 0.1
 */
void gst_context_set_tensor_mem_gl_worker(GstContext *context, GstTensorMemGlWorker *worker) {
  g_return_if_fail(GST_IS_CONTEXT(context));
  g_return_if_fail(gst_context_is_writable(context));
  g_return_if_fail(worker == nullptr || GST_IS_TENSOR_MEM_GL_WORKER(worker));
  gst_tensormem::shared_context_set(kWorkerKind, context, GST_OBJECT_CAST(worker));
}

/**
 * gst_context_get_tensor_mem_gl_worker:
 * @context: a #GstContext
 * @worker: (out) (transfer full) (optional): the worker it holds
 *
 * Returns: %TRUE when @context is of type %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE
 * and holds a worker.
 *
 * Since: 0.1
 */
gboolean gst_context_get_tensor_mem_gl_worker(GstContext *context, GstTensorMemGlWorker **worker) {
  g_return_val_if_fail(GST_IS_CONTEXT(context), FALSE);
  return gst_tensormem::shared_context_get(kWorkerKind, context, reinterpret_cast<GstObject **>(worker));
}

/**
 * gst_context_new_tensor_mem_gl_worker:
 * @worker: a #GstTensorMemGlWorker
 * @persistent: whether the context survives the element's return to NULL
 *
 * Returns: (transfer full): a new %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE context
 * holding @worker. Give it to a pipeline with gst_element_set_context(), or
 * answer a need-context message with it, to make every tensor element of the
 * pipeline use @worker.
 *
 * Since: 0.1
 */
GstContext *gst_context_new_tensor_mem_gl_worker(GstTensorMemGlWorker *worker, gboolean persistent) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_GL_WORKER(worker), nullptr);
  return gst_tensormem::shared_context_new(kWorkerKind, GST_OBJECT_CAST(worker), persistent);
}

/**
 * gst_tensor_mem_gl_worker_handle_set_context:
 * @element: the element whose set_context is running
 * @context: the context it was given
 * @worker: (inout) (transfer full) (nullable): the element's worker slot,
 *   guarded by @element's object lock
 *
 * For an element's #GstElementClass.set_context: when @context is a
 * %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE context holding a worker, it replaces
 * *@worker. The element keeps using a worker it already built allocators
 * with; the new one applies to what it makes from then on. Chain up to the
 * parent class as well, so the element reports the context.
 *
 * Returns: %TRUE when @context carried a worker.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_handle_set_context(GstElement *element, GstContext *context,
                                                     GstTensorMemGlWorker **worker) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(worker != nullptr, FALSE);
  return gst_tensormem::shared_context_handle_set(kWorkerKind, element, context, object_slot(worker));
}

/**
 * gst_tensor_mem_gl_worker_handle_context_query: (skip)
 * @element: the element the query reached
 * @query: a query
 * @worker: the element's worker slot, guarded by @element's object lock
 *
 * For an element's query handlers: answers a %GST_QUERY_CONTEXT of type
 * %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE with the element's worker, when it has
 * one.
 *
 * Not introspectable: @worker is the address of the element's slot, read under
 * its object lock, which a binding cannot pass; elements in C call it.
 *
 * Returns: %TRUE when the query was answered.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_handle_context_query(GstElement *element, GstQuery *query,
                                                       GstTensorMemGlWorker **worker) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(GST_IS_QUERY(query), FALSE);
  g_return_val_if_fail(worker != nullptr, FALSE);
  return gst_tensormem::shared_context_handle_query(kWorkerKind, element, query, object_slot(worker));
}

/**
 * gst_tensor_mem_gl_worker_ensure:
 * @element: the element that needs a GL worker
 * @worker: (inout) (transfer full) (nullable): the element's worker slot,
 *   guarded by @element's object lock; filled on success
 * @error: (out) (optional): the reason on failure
 *
 * Makes sure @element has a GL worker, sharing one with the rest of the
 * pipeline the way GstGL shares its display:
 *
 * 1. nothing to do when *@worker is set (an application or a neighbour gave
 *    one through gst_element_set_context());
 * 2. a %GST_QUERY_CONTEXT is run downstream, then upstream; an answer is set
 *    on @element with gst_element_set_context();
 * 3. a need-context message is posted: the bin answers with a context it
 *    knows, else the application may (from a bus sync handler) with
 *    gst_element_set_context();
 * 4. otherwise a new worker is started, set on @element and announced with
 *    a have-context message, so the bin hands it to every element that asks
 *    later. That context is not persistent: the bin forgets it when it
 *    returns to NULL, and the GL thread stops once nothing uses it.
 *
 * The element's set_context must call
 * gst_tensor_mem_gl_worker_handle_set_context() on the same slot, and its query
 * handlers gst_tensor_mem_gl_worker_handle_context_query(). Do not hold the
 * object lock when calling this.
 *
 * Returns: %TRUE when *@worker is set.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_gl_worker_ensure(GstElement *element, GstTensorMemGlWorker **worker, GError **error) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(worker != nullptr, FALSE);
  return gst_tensormem::shared_context_ensure(kWorkerKind, element, object_slot(worker), error);
}
