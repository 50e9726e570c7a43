// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

#include <gio/gio.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

/**
 * GstTensorMemFenceKind:
 * @GST_TENSOR_MEM_FENCE_KIND_NONE: no fence (an empty meta a pool keeps on its
 *   buffers between frames); always signalled
 * @GST_TENSOR_MEM_FENCE_KIND_SOFTWARE: a software timeline signalled by its
 *   owner (CPU producers, tests)
 * @GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC: an EGL fence sync of a GL worker
 * @GST_TENSOR_MEM_FENCE_KIND_SYNC_FILE: a Linux sync_file fd; the meta owns a
 *   duplicate of it
 * @GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE: the process D3D11 fence and a value
 *   (tensormem::D3d11FenceTimeline): the meta holds the timeline, and with it
 *   the fence; a consumer in another process opens the fence through a
 *   duplicate of its shared NT handle (tensormem::D3d11Context)
 *
 * What signals a #GstTensorMemFenceMeta. The values are stable: new kinds are
 * appended.
 *
 * Since: 0.1
 */
typedef enum {
  GST_TENSOR_MEM_FENCE_KIND_NONE = 0,
  GST_TENSOR_MEM_FENCE_KIND_SOFTWARE = 1,
  GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC = 2,
  GST_TENSOR_MEM_FENCE_KIND_SYNC_FILE = 3,
  GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE = 4,
} GstTensorMemFenceKind;

/**
 * GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT:
 *
 * The bound, in nanoseconds, on the CPU waits our elements and pools make for
 * a fence unless told otherwise (5 s, the core's default).
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT (5 * GST_SECOND)

/**
 * GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META:
 *
 * A #GstTensorMemBufferPool option: every buffer carries one (pooled)
 * #GstTensorMemFenceMeta from allocation on, empty until a producer sets it.
 *
 * Since: 0.1
 */
#define GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META "GstBufferPoolOptionTensorMemFenceMeta"

#define GST_TENSOR_MEM_FENCE_META_API_TYPE (gst_tensor_mem_fence_meta_api_get_type())
#define GST_TENSOR_MEM_FENCE_META_INFO (gst_tensor_mem_fence_meta_get_info())

typedef struct _GstTensorMemFenceMeta GstTensorMemFenceMeta;
typedef struct _GstTensorMemFenceMetaPrivate GstTensorMemFenceMetaPrivate;
typedef struct _GstTensorMemGlWorker GstTensorMemGlWorker;

/**
 * GstTensorMemFenceMeta:
 * @meta: parent #GstMeta
 * @kind: what signals the fence
 * @value: the point on the fence's timeline after which the buffer's memory
 *   holds the producer's bytes (0: nothing to wait for)
 *
 * A GPU completion travelling with a buffer: its memory is written until the
 * timeline reaches @value. The meta owns a reference to the timeline (and,
 * for a sync_file, a duplicate of the fd), so a consumer can wait long after
 * the producer has moved on. A buffer holds at most one fence meta per
 * timeline.
 *
 * Copies (gst_buffer_copy(), gst_buffer_make_writable(),
 * gst_buffer_copy_deep()) carry the fence: the copy owns its own references
 * (a new duplicate of a sync_file fd), so neither buffer closes the other's
 * handle. The API is tagged %GST_META_TAG_MEMORY_STR: an element that makes
 * new memory for its output (videoconvert, videoscale, GstBaseTransform's
 * copy_metadata) drops it, because it describes writes into the input's
 * memory, and an element that keeps the memory (passthrough, in place) keeps
 * it.
 *
 * Since: 0.1
 */
struct _GstTensorMemFenceMeta {
  GstMeta meta;

  GstTensorMemFenceKind kind;
  guint64 value;

  /*< private >*/
  GstTensorMemFenceMetaPrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_fence_meta_api_get_type(void);

GST_TENSOR_MEM_API
const GstMetaInfo *gst_tensor_mem_fence_meta_get_info(void);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_fence_kind_to_string(GstTensorMemFenceKind kind);

GST_TENSOR_MEM_API
GstTensorMemFenceMeta *gst_buffer_get_tensor_mem_fence_meta(GstBuffer *buffer);

GST_TENSOR_MEM_API
GstTensorMemFenceMeta *gst_buffer_add_tensor_mem_fence_meta_empty(GstBuffer *buffer);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_fence_meta_is_signalled(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_fence_meta_wait_cpu(GstTensorMemFenceMeta *meta, GstClockTime timeout_ns, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_fence_meta_wait_cpu_cancellable(GstTensorMemFenceMeta *meta, GstClockTime timeout_ns,
                                                        GCancellable *cancellable, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_fence_meta_wait_gpu(GstTensorMemFenceMeta *meta, GstTensorMemGlWorker *worker, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_fence_meta_is_satisfied(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
void gst_tensor_mem_fence_meta_set_satisfied(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
void gst_tensor_mem_fence_meta_clear(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
gint gst_tensor_mem_fence_meta_get_fd(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
gchar *gst_tensor_mem_fence_meta_describe(GstTensorMemFenceMeta *meta);

GST_TENSOR_MEM_API
gboolean gst_buffer_has_tensor_mem_fence(GstBuffer *buffer);

GST_TENSOR_MEM_API
gchar *gst_buffer_describe_tensor_mem_fences(GstBuffer *buffer);

GST_TENSOR_MEM_API
gboolean gst_buffer_fence_tensor_mem_pbo_writes(GstBuffer *buffer, GError **error);

GST_TENSOR_MEM_API
gboolean gst_buffer_wait_tensor_mem_fences(GstBuffer *buffer, GstClockTime timeout_ns, guint *waited, GError **error);

GST_TENSOR_MEM_API
gboolean gst_buffer_wait_tensor_mem_fences_cancellable(GstBuffer *buffer, GstClockTime timeout_ns,
                                                       GCancellable *cancellable, guint *waited, GError **error);

GST_TENSOR_MEM_API
GstFlowReturn gst_tensor_mem_element_post_fence_error(GstElement *element, GstBuffer *buffer, GstClockTime timeout_ns,
                                                      const GError *error);

GST_TENSOR_MEM_API
GstFlowReturn gst_tensor_mem_element_wait_fences(GstElement *element, GstBuffer *buffer, GstClockTime timeout_ns,
                                                 GCancellable *cancellable, guint *waited);

GST_TENSOR_MEM_API
void gst_tensor_mem_transform_interrupt_waits(GstBaseTransform *trans, GCancellable *cancellable, gboolean interrupt);

GST_TENSOR_MEM_API
void gst_tensor_mem_transform_watch_event(GstBaseTransform *trans, GCancellable *cancellable, GstEvent *event);

GST_TENSOR_MEM_API
void gst_tensor_mem_transform_watch_state_change(GstBaseTransform *trans, GCancellable *cancellable,
                                                 GstStateChange transition);

/* GstGL interop (gsttensorglsync.cpp). */
GST_TENSOR_MEM_API
guint gst_buffer_wait_tensor_mem_gl_sync_metas(GstBuffer *buffer);

G_END_DECLS

