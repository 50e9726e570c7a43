// SPDX-License-Identifier: Apache-2.0
#include "gsttensorbatchmeta.h"

#include <cstring>

namespace {

gboolean batch_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  auto *m = reinterpret_cast<GstTensorMemBatchMeta *>(meta);
  m->n_slots = m->n_filled = 0;
  m->slots = nullptr;
  return TRUE;
}

void batch_meta_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstTensorMemBatchMeta *>(meta);
  for (guint i = 0; m->slots && i < m->n_slots; ++i)
    gst_clear_buffer(&m->slots[i].frame);
  g_free(m->slots);
  m->slots = nullptr;
}

// Plain values (stream names are interned) and the frames, each a new
// reference: a copy of the buffer, deep or shallow, describes the same
// slots.
gboolean batch_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type))
    return FALSE;
  const auto *from = reinterpret_cast<const GstTensorMemBatchMeta *>(meta);
  GstTensorMemBatchMeta *copy = gst_buffer_add_tensor_mem_batch_meta(dest, from->n_slots);
  if (!copy)
    return FALSE;
  copy->n_filled = from->n_filled;
  if (from->n_slots)
    std::memcpy(copy->slots, from->slots, sizeof(GstTensorMemBatchSlot) * from->n_slots);
  for (guint i = 0; i < from->n_slots; ++i)
    if (copy->slots[i].frame)
      gst_buffer_ref(copy->slots[i].frame);
  return TRUE;
}

} // namespace

/**
 * gst_tensor_mem_batch_meta_api_get_type:
 *
 * Returns: the API type of #GstTensorMemBatchMeta
 *
 * Since: 0.1
 */
GType gst_tensor_mem_batch_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstTensorMemBatchMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

/**
 * gst_tensor_mem_batch_meta_get_info:
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstTensorMemBatchMeta
 *
 * Since: 0.1
 */
const GstMetaInfo *gst_tensor_mem_batch_meta_get_info(void) {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i =
        gst_meta_register(GST_TENSOR_MEM_BATCH_META_API_TYPE, "GstTensorMemBatchMeta", sizeof(GstTensorMemBatchMeta),
                          batch_meta_init, batch_meta_free, batch_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

/**
 * gst_buffer_add_tensor_mem_batch_meta:
 * @buffer: a writable #GstBuffer
 * @n_slots: the batch dimension (at most 65536)
 *
 * Returns: (transfer none) (nullable): a new #GstTensorMemBatchMeta on
 *   @buffer with @n_slots empty slots (not filled, times unknown), for the
 *   caller to fill in
 *
 * Since: 0.1
 */
GstTensorMemBatchMeta *gst_buffer_add_tensor_mem_batch_meta(GstBuffer *buffer, guint n_slots) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(n_slots <= 65536, nullptr);
  auto *meta =
      reinterpret_cast<GstTensorMemBatchMeta *>(gst_buffer_add_meta(buffer, GST_TENSOR_MEM_BATCH_META_INFO, nullptr));
  if (!meta)
    return nullptr;
  meta->n_slots = n_slots;
  meta->slots = g_new0(GstTensorMemBatchSlot, n_slots ? n_slots : 1);
  for (guint i = 0; i < n_slots; ++i) {
    meta->slots[i].pts = meta->slots[i].duration = GST_CLOCK_TIME_NONE;
    meta->slots[i].scale_x = meta->slots[i].scale_y = 1.0;
  }
  return meta;
}

/**
 * gst_buffer_get_tensor_mem_batch_meta:
 * @buffer: a #GstBuffer
 *
 * Returns: (transfer none) (nullable): the #GstTensorMemBatchMeta of @buffer
 *
 * Since: 0.1
 */
GstTensorMemBatchMeta *gst_buffer_get_tensor_mem_batch_meta(GstBuffer *buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  return reinterpret_cast<GstTensorMemBatchMeta *>(gst_buffer_get_meta(buffer, GST_TENSOR_MEM_BATCH_META_API_TYPE));
}

/**
 * gst_tensor_mem_batch_meta_get_slot:
 * @meta: a #GstTensorMemBatchMeta
 * @index: a slot, below @meta's n_slots
 *
 * Returns: (transfer none) (nullable): slot @index, or %NULL past the last
 *
 * Since: 0.1
 */
GstTensorMemBatchSlot *gst_tensor_mem_batch_meta_get_slot(GstTensorMemBatchMeta *meta, guint index) {
  g_return_val_if_fail(meta != nullptr, nullptr);
  if (index >= meta->n_slots)
    return nullptr;
  return &meta->slots[index];
}

/**
 * gst_tensor_mem_stream_end_event_new:
 * @stream: the stream's name in the batch meta (`tensorbatch`'s sink pad name)
 * @released: TRUE where the stream left (its pad was released), FALSE where it ended
 *
 * Returns: (transfer full): a #GST_TENSOR_MEM_STREAM_END_EVENT custom downstream event.
 *
 * Since: 0.3
 */
GstEvent *gst_tensor_mem_stream_end_event_new(const gchar *stream, gboolean released) {
  g_return_val_if_fail(stream != nullptr, nullptr);
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                              gst_structure_new(GST_TENSOR_MEM_STREAM_END_EVENT, "stream", G_TYPE_STRING, stream,
                                                "released", G_TYPE_BOOLEAN, released, nullptr));
}

/**
 * gst_tensor_mem_stream_end_event_parse:
 * @event: an event
 * @stream: (out) (transfer none) (optional): the stream that ended, valid while @event is
 * @released: (out) (optional): whether its pad was released
 *
 * Returns: TRUE where @event is a #GST_TENSOR_MEM_STREAM_END_EVENT.
 *
 * Since: 0.3
 */
gboolean gst_tensor_mem_stream_end_event_parse(GstEvent *event, const gchar **stream, gboolean *released) {
  g_return_val_if_fail(GST_IS_EVENT(event), FALSE);
  if (GST_EVENT_TYPE(event) != GST_EVENT_CUSTOM_DOWNSTREAM)
    return FALSE;
  const GstStructure *s = gst_event_get_structure(event);
  const gchar *name = s ? gst_structure_get_string(s, "stream") : nullptr;
  if (!s || !gst_structure_has_name(s, GST_TENSOR_MEM_STREAM_END_EVENT) || !name)
    return FALSE;
  if (stream)
    *stream = name;
  if (released) {
    gboolean r = FALSE;
    gst_structure_get_boolean(s, "released", &r);
    *released = r;
  }
  return TRUE;
}

namespace {

/* The boxed `field` (of `type`, not NULL) of a custom downstream event named
 * `name` with a stream, and that stream in `*stream` (optional); NULL for
 * any other event. */
gconstpointer stream_event_boxed(GstEvent *event, const char *name, const char *field, GType type,
                                 const gchar **stream) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_CUSTOM_DOWNSTREAM)
    return nullptr;
  const GstStructure *s = gst_event_get_structure(event);
  if (!s || !gst_structure_has_name(s, name))
    return nullptr;
  const gchar *named = gst_structure_get_string(s, "stream");
  const GValue *value = gst_structure_get_value(s, field);
  if (!named || !value || !G_VALUE_HOLDS(value, type) || !g_value_get_boxed(value))
    return nullptr;
  if (stream)
    *stream = named;
  return g_value_get_boxed(value);
}

} // namespace

/**
 * gst_tensor_mem_stream_segment_event_new:
 * @stream: the stream's name in the batch meta (`tensorbatch`'s sink pad name)
 * @segment: the stream's segment
 *
 * Returns: (transfer full): a #GST_TENSOR_MEM_STREAM_SEGMENT_EVENT custom downstream event.
 *
 * Since: 0.3
 */
GstEvent *gst_tensor_mem_stream_segment_event_new(const gchar *stream, const GstSegment *segment) {
  g_return_val_if_fail(stream != nullptr && segment != nullptr, nullptr);
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                              gst_structure_new(GST_TENSOR_MEM_STREAM_SEGMENT_EVENT, "stream", G_TYPE_STRING, stream,
                                                "segment", GST_TYPE_SEGMENT, segment, nullptr));
}

/**
 * gst_tensor_mem_stream_segment_event_parse:
 * @event: an event
 * @stream: (out) (transfer none) (optional): the stream, valid while @event is
 * @segment: (out) (transfer none) (optional): its segment, valid while @event is
 *
 * Returns: TRUE where @event is a #GST_TENSOR_MEM_STREAM_SEGMENT_EVENT.
 *
 * Since: 0.3
 */
gboolean gst_tensor_mem_stream_segment_event_parse(GstEvent *event, const gchar **stream, const GstSegment **segment) {
  g_return_val_if_fail(GST_IS_EVENT(event), FALSE);
  gconstpointer value =
      stream_event_boxed(event, GST_TENSOR_MEM_STREAM_SEGMENT_EVENT, "segment", GST_TYPE_SEGMENT, stream);
  if (value && segment)
    *segment = static_cast<const GstSegment *>(value);
  return value != nullptr;
}

/**
 * gst_tensor_mem_stream_tags_event_new:
 * @stream: the stream's name in the batch meta (`tensorbatch`'s sink pad name)
 * @tags: the stream's tags (their scope is kept)
 *
 * Returns: (transfer full): a #GST_TENSOR_MEM_STREAM_TAGS_EVENT custom downstream event.
 *
 * Since: 0.3
 */
GstEvent *gst_tensor_mem_stream_tags_event_new(const gchar *stream, const GstTagList *tags) {
  g_return_val_if_fail(stream != nullptr && GST_IS_TAG_LIST(tags), nullptr);
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                              gst_structure_new(GST_TENSOR_MEM_STREAM_TAGS_EVENT, "stream", G_TYPE_STRING, stream,
                                                "tags", GST_TYPE_TAG_LIST, tags, nullptr));
}

/**
 * gst_tensor_mem_stream_tags_event_parse:
 * @event: an event
 * @stream: (out) (transfer none) (optional): the stream, valid while @event is
 * @tags: (out) (transfer none) (optional): its tags, valid while @event is
 *
 * Returns: TRUE where @event is a #GST_TENSOR_MEM_STREAM_TAGS_EVENT.
 *
 * Since: 0.3
 */
gboolean gst_tensor_mem_stream_tags_event_parse(GstEvent *event, const gchar **stream, const GstTagList **tags) {
  g_return_val_if_fail(GST_IS_EVENT(event), FALSE);
  gconstpointer value = stream_event_boxed(event, GST_TENSOR_MEM_STREAM_TAGS_EVENT, "tags", GST_TYPE_TAG_LIST, stream);
  if (value && tags)
    *tags = static_cast<const GstTagList *>(value);
  return value != nullptr;
}

/**
 * gst_tensor_mem_stream_caps_event_new:
 * @stream: the stream's name in the batch meta (`tensorbatch`'s sink pad name)
 * @caps: the caps of the stream's frames
 *
 * Returns: (transfer full): a #GST_TENSOR_MEM_STREAM_CAPS_EVENT custom downstream event.
 *
 * Since: 0.4
 */
GstEvent *gst_tensor_mem_stream_caps_event_new(const gchar *stream, GstCaps *caps) {
  g_return_val_if_fail(stream != nullptr && GST_IS_CAPS(caps), nullptr);
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                              gst_structure_new(GST_TENSOR_MEM_STREAM_CAPS_EVENT, "stream", G_TYPE_STRING, stream,
                                                "caps", GST_TYPE_CAPS, caps, nullptr));
}

/**
 * gst_tensor_mem_stream_caps_event_parse:
 * @event: an event
 * @stream: (out) (transfer none) (optional): the stream, valid while @event is
 * @caps: (out) (transfer none) (optional): its caps, valid while @event is
 *
 * Returns: TRUE where @event is a #GST_TENSOR_MEM_STREAM_CAPS_EVENT.
 *
 * Since: 0.4
 */
gboolean gst_tensor_mem_stream_caps_event_parse(GstEvent *event, const gchar **stream, GstCaps **caps) {
  g_return_val_if_fail(GST_IS_EVENT(event), FALSE);
  gconstpointer value = stream_event_boxed(event, GST_TENSOR_MEM_STREAM_CAPS_EVENT, "caps", GST_TYPE_CAPS, stream);
  if (value && caps)
    *caps = static_cast<GstCaps *>(const_cast<gpointer>(value));
  return value != nullptr;
}

/**
 * gst_tensor_mem_frame_tensor_event_new:
 * @tensor_caps: `other/tensors` caps of the one tensor beside each frame
 *
 * Returns: (transfer full): a #GST_TENSOR_MEM_FRAME_TENSOR_EVENT custom
 * sticky downstream event.
 *
 * Since: 0.4
 */
GstEvent *gst_tensor_mem_frame_tensor_event_new(GstCaps *tensor_caps) {
  g_return_val_if_fail(GST_IS_CAPS(tensor_caps), nullptr);
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM_STICKY,
                              gst_structure_new(GST_TENSOR_MEM_FRAME_TENSOR_EVENT, "caps", GST_TYPE_CAPS, tensor_caps,
                                                nullptr));
}

/**
 * gst_tensor_mem_frame_tensor_event_parse:
 * @event: an event
 * @tensor_caps: (out) (transfer none) (optional): the tensor's caps, valid
 * while @event is
 *
 * Returns: TRUE where @event is a #GST_TENSOR_MEM_FRAME_TENSOR_EVENT.
 *
 * Since: 0.4
 */
gboolean gst_tensor_mem_frame_tensor_event_parse(GstEvent *event, GstCaps **tensor_caps) {
  g_return_val_if_fail(GST_IS_EVENT(event), FALSE);
  if (GST_EVENT_TYPE(event) != GST_EVENT_CUSTOM_DOWNSTREAM_STICKY)
    return FALSE;
  const GstStructure *s = gst_event_get_structure(event);
  const GValue *value = s && gst_structure_has_name(s, GST_TENSOR_MEM_FRAME_TENSOR_EVENT)
                            ? gst_structure_get_value(s, "caps")
                            : nullptr;
  if (!value || !G_VALUE_HOLDS(value, GST_TYPE_CAPS) || !gst_value_get_caps(value))
    return FALSE;
  if (tensor_caps)
    *tensor_caps = const_cast<GstCaps *>(gst_value_get_caps(value));
  return TRUE;
}
