// SPDX-License-Identifier: Apache-2.0
#include "gsttensormemresizemeta.h"

#include <cstring>

namespace {

gboolean resize_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstTensorMemResizeMeta *>(meta);
  m->in_width = m->in_height = m->out_width = m->out_height = 0;
  m->scale_x = m->scale_y = 1.0;
  m->offset_x = m->offset_y = 0.0;
  m->content_x = m->content_y = m->content_width = m->content_height = 0;
  return TRUE;
}

// Plain values: every copy, deep or shallow, carries the same geometry.
gboolean resize_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type))
    return FALSE;
  GstTensorMemResizeMeta *copy = gst_buffer_add_tensor_mem_resize_meta(dest);
  if (!copy)
    return FALSE;
  const auto *from = reinterpret_cast<const GstTensorMemResizeMeta *>(meta);
  const GstMeta head = copy->meta;
  std::memcpy(copy, from, sizeof *copy);
  copy->meta = head;
  return TRUE;
}

} // namespace

/**
 * gst_tensor_mem_resize_meta_api_get_type:
 *
 * Returns: the API type of #GstTensorMemResizeMeta
 *
 * Since: 0.1
 */
GType gst_tensor_mem_resize_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstTensorMemResizeMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

/**
 * gst_tensor_mem_resize_meta_get_info:
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstTensorMemResizeMeta
 *
 * Since: 0.1
 */
const GstMetaInfo *gst_tensor_mem_resize_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i =
        gst_meta_register(GST_TENSOR_MEM_RESIZE_META_API_TYPE, "GstTensorMemResizeMeta", sizeof(GstTensorMemResizeMeta),
                          resize_meta_init, nullptr, resize_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

/**
 * gst_buffer_add_tensor_mem_resize_meta:
 * @buffer: a writable #GstBuffer
 *
 * Returns: (transfer none): a new #GstTensorMemResizeMeta on @buffer, every
 *   field at its identity value, for the caller to fill in
 *
 * Since: 0.1
 */
GstTensorMemResizeMeta *gst_buffer_add_tensor_mem_resize_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return reinterpret_cast<GstTensorMemResizeMeta *>(
      gst_buffer_add_meta(buffer, GST_TENSOR_MEM_RESIZE_META_INFO, nullptr));
}

/**
 * gst_buffer_get_tensor_mem_resize_meta:
 * @buffer: a #GstBuffer
 *
 * Returns: (transfer none) (nullable): the #GstTensorMemResizeMeta of @buffer
 *
 * Since: 0.1
 */
GstTensorMemResizeMeta *gst_buffer_get_tensor_mem_resize_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return reinterpret_cast<GstTensorMemResizeMeta *>(gst_buffer_get_meta(buffer, GST_TENSOR_MEM_RESIZE_META_API_TYPE));
}
