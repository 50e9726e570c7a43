// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE:
 *
 * The #GstContext type through which the elements of a pipeline share one
 * headless GL worker. The context's structure holds the worker in the field
 * %GST_TENSOR_MEM_GL_WORKER_CONTEXT_FIELD (a #GstTensorMemGlWorker).
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE "gst.tensormem.gl.worker"

/**
 * GST_TENSOR_MEM_GL_WORKER_CONTEXT_FIELD:
 *
 * The field of a %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE context's structure that
 * holds the #GstTensorMemGlWorker.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_GL_WORKER_CONTEXT_FIELD "worker"

#define GST_TYPE_TENSOR_MEM_GL_WORKER (gst_tensor_mem_gl_worker_get_type())
#define GST_TENSOR_MEM_GL_WORKER(obj) (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_GL_WORKER, GstTensorMemGlWorker))
#define GST_IS_TENSOR_MEM_GL_WORKER(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_GL_WORKER))
#define GST_TENSOR_MEM_GL_WORKER_CAST(obj) ((GstTensorMemGlWorker *)(obj))

typedef struct _GstTensorMemGlWorker GstTensorMemGlWorker;
typedef struct _GstTensorMemGlWorkerClass GstTensorMemGlWorkerClass;
typedef struct _GstTensorMemGlWorkerPrivate GstTensorMemGlWorkerPrivate;

/**
 * GstTensorMemGlWorker:
 *
 * A #GstObject holding one headless GL worker of the core library: a thread
 * that owns an EGL context made without a window and runs every GL call of
 * the PBO memories made through it. It is what a
 * %GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE context carries. The GL thread stops
 * when the last reference to the worker goes (the object and every
 * #GstTensorMemPboAllocator, hence every PBO memory, made with it).
 *
 * Since: 0.1
 */
struct _GstTensorMemGlWorker {
  GstObject parent;

  /*< private >*/
  GstTensorMemGlWorkerPrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemGlWorkerClass {
  GstObjectClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_gl_worker_get_type(void);

GST_TENSOR_MEM_API
GstTensorMemGlWorker *gst_tensor_mem_gl_worker_new(GError **error);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_gl_worker_get_renderer(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_gl_worker_get_version(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_gl_worker_get_platform(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
guint64 gst_tensor_mem_gl_worker_get_map_calls(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
guint gst_tensor_mem_gl_worker_get_mapped_buffers(GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
GstContext *gst_context_new_tensor_mem_gl_worker(GstTensorMemGlWorker *worker, gboolean persistent);

GST_TENSOR_MEM_API
void gst_context_set_tensor_mem_gl_worker(GstContext *context, GstTensorMemGlWorker *worker);

GST_TENSOR_MEM_API
gboolean gst_context_get_tensor_mem_gl_worker(GstContext *context, GstTensorMemGlWorker **worker);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_ensure(GstElement *element, GstTensorMemGlWorker **worker, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_handle_set_context(GstElement *element, GstContext *context,
                                                 GstTensorMemGlWorker **worker);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_gl_worker_handle_context_query(GstElement *element, GstQuery *query, GstTensorMemGlWorker **worker);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemGlWorker, gst_object_unref)

G_END_DECLS

