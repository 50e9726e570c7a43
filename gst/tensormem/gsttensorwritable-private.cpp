// SPDX-License-Identifier: Apache-2.0
#include "gsttensorwritable-private.h"

#include "gsttensorcudameta-private.h"
#include "gsttensorcudameta.h"
#include "gsttensorwritable.h"

#include <gst/tensormem/gsttensormemconfig.h>

#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#endif

namespace gst_tensormem {

namespace {

/* Whether `to` holds the very memories of `from`, in order (a copy by
 * gst_buffer_copy(), not one whose bytes went elsewhere). */
bool same_memories(GstBuffer *from, GstBuffer *to) {
  const guint n = gst_buffer_n_memory(from);
  if (n == 0 || n != gst_buffer_n_memory(to))
    return false;
  for (guint i = 0; i < n; ++i)
    if (gst_buffer_peek_memory(from, i) != gst_buffer_peek_memory(to, i))
      return false;
  return true;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The tensors as they are, checked or not (the element reading them reports
 * a bad one): gst_tensor_copy() refs each data buffer and copies a NULL
 * entry as NULL. A later GStreamer whose copy carries the meta leaves `to`
 * with one already. */
void copy_tensor_meta(GstBuffer *from, GstBuffer *to) {
  const GstTensorMeta *meta = gst_buffer_get_tensor_meta(from);
  if (!meta || meta->num_tensors == 0 || !meta->tensors || gst_buffer_get_tensor_meta(to))
    return;
  auto **tensors = g_new(GstTensor *, meta->num_tensors);
  for (gsize i = 0; i < meta->num_tensors; ++i)
    tensors[i] = gst_tensor_copy(meta->tensors[i]);
  gst_tensor_meta_set(gst_buffer_add_tensor_meta(to), static_cast<guint>(meta->num_tensors), tensors);
}
#endif

} // namespace

GstBuffer *make_buffer_writable(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  if (gst_buffer_is_writable(buffer))
    return buffer;
  GstBuffer *copy = gst_buffer_copy(buffer);
  copy_buffer_metas(buffer, copy);
  gst_buffer_unref(buffer);
  return copy;
}

void copy_buffer_metas(GstBuffer *from, GstBuffer *to) {
  g_return_if_fail(GST_IS_BUFFER(from) && GST_IS_BUFFER(to));
  if (from == to || !gst_buffer_is_writable(to))
    return;
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  copy_tensor_meta(from, to);
#endif
  /* A copy over the same memories gives CUDA the same bytes: it keeps the
   * meta, without the source's mapping (an unmap belongs to whoever mapped
   * that meta). A copy whose bytes moved must not point CUDA at the old ones,
   * which is why GStreamer's copies, which cannot tell, drop it. */
  GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_mem_cuda_meta(from);
  if (cuda && !gst_buffer_get_tensor_mem_cuda_meta(to) && same_memories(from, to))
    copy_cuda_meta(cuda, to);
}

} // namespace gst_tensormem

GstBuffer *gst_tensor_mem_buffer_make_writable(GstBuffer *buffer) { return gst_tensormem::make_buffer_writable(buffer); }
