// SPDX-License-Identifier: Apache-2.0
/* GstGL interop, the GstGLSyncMeta half: a buffer from a GstGL element
 * (glupload, glcolorconvert, GL decoders) may carry a #GstGLSyncMeta, a GL
 * fence set after the GL commands that wrote its memory. Our consumers read
 * only after it has passed. Built without GstGL (-Dgstgl=disabled) the
 * function stays and finds nothing to wait for. */
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemconfig.h>

#if GST_TENSOR_MEM_HAVE_GSTGL
#include <gst/gl/gl.h>
#endif

/**
 * gst_buffer_wait_tensor_mem_gl_sync_metas:
 * @buffer: a #GstBuffer
 *
 * Waits on the CPU for each #GstGLSyncMeta of @buffer
 * (gst_gl_sync_meta_wait_cpu() in the meta's own #GstGLContext, so the GL
 * fence is waited for where it was made), so that what GstGL wrote before
 * its sync point is visible to a CPU read. Every consumer of ours that reads
 * on the CPU calls it through gst_buffer_wait_tensor_mem_fences(). The wait
 * is GstGL's: it is not bounded by our fence timeouts (GstGL's default wait
 * polls its fence until it passes).
 *
 * Returns: how many metas were waited for (0 without GstGL support).
 *
 * Since: 0.1
 */
guint gst_buffer_wait_tensor_mem_gl_sync_metas(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), 0);
#if GST_TENSOR_MEM_HAVE_GSTGL
  guint waited = 0;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_GL_SYNC_META_API_TYPE)) {
    auto *sync = reinterpret_cast<GstGLSyncMeta *>(meta);
    if (!sync->context)
      continue;
    gst_gl_sync_meta_wait_cpu(sync, sync->context);
    ++waited;
  }
  return waited;
#else
  return 0;
#endif
}
