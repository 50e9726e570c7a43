// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

#define GST_TENSOR_MEM_BATCH_META_API_TYPE (gst_tensor_mem_batch_meta_api_get_type())
#define GST_TENSOR_MEM_BATCH_META_INFO (gst_tensor_mem_batch_meta_get_info())

/**
 * GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT:
 *
 * The option of a pool whose buffers are windows of a batch that a
 * downstream element (`tensorbatch`) assembles: a producer that writes its
 * output in place (tensorconvert's CPU path, and its GL path where the
 * slots are PBO windows of its GL worker) takes such a pool from the
 * allocation query instead of its own, so its tensor is written straight
 * into its slot of the batch.
 *
 * Since: 0.1
 */
#define GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT "GstBufferPoolOptionTensorMemBatchSlot"

/**
 * GST_TENSOR_MEM_BATCH_SLOT_POOL_GL_WORKER:
 *
 * The field of a batch-slot pool's config (a #GstTensorMemGlWorker) where
 * the slots are windows of one PBO per batch: the GL worker whose context
 * owns those buffers. A GL producer writes into the slots in place only on
 * that worker (`tensorconvert`'s GL path on another worker keeps its own
 * pool, and its tensors are copied into their slots, counted).
 *
 * Since: 0.2
 */
#define GST_TENSOR_MEM_BATCH_SLOT_POOL_GL_WORKER "tensor-mem-gl-worker"

typedef struct _GstTensorMemBatchSlot GstTensorMemBatchSlot;
typedef struct _GstTensorMemBatchMeta GstTensorMemBatchMeta;

/**
 * GstTensorMemBatchSlot:
 * @stream: the name of the sink pad whose frame this slot holds, or waited
 *   for (interned); %NULL for a slot no stream feeds
 * @pts: that frame's presentation time in its own stream, or
 *   %GST_CLOCK_TIME_NONE
 * @duration: its duration, or %GST_CLOCK_TIME_NONE
 * @filled: whether a frame was written into the slot; %FALSE for a slot of a
 *   partial batch (every element is tensorbatch's `pad-value`, unless a
 *   frame being written when the batch left was late: then its bytes are
 *   unspecified) or a slot no stream feeds
 * @copied: whether the frame reached the slot by a copy (its producer did not
 *   write into the slot in place)
 * @has_resize: whether the fields below are known (the frame came from
 *   `tensorconvert`)
 * @in_width: width of the stream's video frame
 * @in_height: its height
 * @scale_x: tensor pixels per frame pixel, horizontally
 * @scale_y: the same, vertically
 * @offset_x: where the frame's left edge lies in the slot's picture
 * @offset_y: where its top edge lies
 * @content_x: first tensor column the picture covers
 * @content_y: first tensor row the picture covers
 * @content_width: tensor columns the picture covers
 * @content_height: tensor rows the picture covers
 * @frame: (nullable): the stream's video frame, where the stream sent frames
 *   with their tensor beside them (`tensorconvert output=meta`, GStreamer
 *   1.26+), one reference held by the meta: `tensorunbatch` sends it on,
 *   with the slot's model outputs as its #GstTensorMeta; %NULL for a stream
 *   of `other/tensors` (since 0.4)
 *
 * One slot of a batched tensor: which stream it came from and how its frame
 * was fitted (as #GstTensorMemResizeMeta says for one tensor), so a box
 * found in slot i maps back to stream i's frame with (t - offset) / scale.
 *
 * Since: 0.1
 */
struct _GstTensorMemBatchSlot {
  const gchar *stream;
  GstClockTime pts;
  GstClockTime duration;
  gboolean filled;
  gboolean copied;
  gboolean has_resize;
  guint in_width;
  guint in_height;
  gdouble scale_x;
  gdouble scale_y;
  gdouble offset_x;
  gdouble offset_y;
  guint content_x;
  guint content_y;
  guint content_width;
  guint content_height;
  GstBuffer *frame;
};

/**
 * GstTensorMemBatchMeta:
 * @meta: parent #GstMeta
 * @n_slots: the batch dimension: how many slots the tensor holds
 * @n_filled: how many of them hold a frame
 *
 * What `tensorbatch` put into each slot of a batched tensor (outermost
 * dimension: the slot). Read the slots with
 * gst_tensor_mem_batch_meta_get_slot().
 *
 * Since: 0.1
 */
struct _GstTensorMemBatchMeta {
  GstMeta meta;

  guint n_slots;
  guint n_filled;

  /*< private >*/
  GstTensorMemBatchSlot *slots;
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_batch_meta_api_get_type(void);

GST_TENSOR_MEM_API
const GstMetaInfo *gst_tensor_mem_batch_meta_get_info(void);

GST_TENSOR_MEM_API
GstTensorMemBatchMeta *gst_buffer_add_tensor_mem_batch_meta(GstBuffer *buffer, guint n_slots);

GST_TENSOR_MEM_API
GstTensorMemBatchMeta *gst_buffer_get_tensor_mem_batch_meta(GstBuffer *buffer);

GST_TENSOR_MEM_API
GstTensorMemBatchSlot *gst_tensor_mem_batch_meta_get_slot(GstTensorMemBatchMeta *meta, guint index);

/**
 * GST_TENSOR_MEM_STREAM_END_EVENT:
 *
 * The structure name of the custom downstream event `tensorbatch` sends
 * when one of its streams ends (EOS on its sink pad) or leaves (its sink pad
 * released) while the others go on. It follows the last batch holding a
 * frame of that stream, and `tensorunbatch` turns it into EOS on that
 * stream's source pad. Read it with gst_tensor_mem_stream_end_event_parse().
 *
 * Since: 0.3
 */
#define GST_TENSOR_MEM_STREAM_END_EVENT "GstTensorMemStreamEnd"

GST_TENSOR_MEM_API
GstEvent *gst_tensor_mem_stream_end_event_new(const gchar *stream, gboolean released);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_stream_end_event_parse(GstEvent *event, const gchar **stream, gboolean *released);

/**
 * GST_TENSOR_MEM_STREAM_SEGMENT_EVENT:
 *
 * The structure name of the custom downstream event `tensorbatch` sends
 * with each stream's own segment (the batch itself carries the first
 * stream's), before the next batch. `tensorunbatch` makes it that stream's
 * segment on its source pad, so each stream's frames keep their own
 * running time. Read it with gst_tensor_mem_stream_segment_event_parse().
 *
 * Since: 0.3
 */
#define GST_TENSOR_MEM_STREAM_SEGMENT_EVENT "GstTensorMemStreamSegment"

GST_TENSOR_MEM_API
GstEvent *gst_tensor_mem_stream_segment_event_new(const gchar *stream, const GstSegment *segment);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_stream_segment_event_parse(GstEvent *event, const gchar **stream, const GstSegment **segment);

/**
 * GST_TENSOR_MEM_STREAM_TAGS_EVENT:
 *
 * The structure name of the custom downstream event `tensorbatch` sends
 * with a stream's tags (a tag event on its sink pad), before the next batch:
 * the batch carries no stream's tags. `tensorunbatch` sends them as a tag
 * event on that stream's source pad, so each stream's title, codec or
 * camera name reaches its own branch. Read it with
 * gst_tensor_mem_stream_tags_event_parse().
 *
 * Since: 0.3
 */
#define GST_TENSOR_MEM_STREAM_TAGS_EVENT "GstTensorMemStreamTags"

GST_TENSOR_MEM_API
GstEvent *gst_tensor_mem_stream_tags_event_new(const gchar *stream, const GstTagList *tags);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_stream_tags_event_parse(GstEvent *event, const gchar **stream, const GstTagList **tags);

/**
 * GST_TENSOR_MEM_STREAM_CAPS_EVENT:
 *
 * The structure name of the custom downstream event `tensorbatch` sends
 * with the caps of a stream whose frames it batches (video frames with
 * their tensor beside them), before the next batch. `tensorunbatch` makes
 * them the caps of that stream's source pad, where it sends the frames on.
 * Read it with gst_tensor_mem_stream_caps_event_parse().
 *
 * Since: 0.4
 */
#define GST_TENSOR_MEM_STREAM_CAPS_EVENT "GstTensorMemStreamCaps"

GST_TENSOR_MEM_API
GstEvent *gst_tensor_mem_stream_caps_event_new(const gchar *stream, GstCaps *caps);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_stream_caps_event_parse(GstEvent *event, const gchar **stream, GstCaps **caps);

/**
 * GST_TENSOR_MEM_FRAME_TENSOR_EVENT:
 *
 * The structure name of the custom sticky downstream event that describes
 * the tensor a stream's video frames carry beside them (in a
 * GstTensorMeta), as the `other/tensors` caps of one such tensor. Before
 * GStreamer 1.28 video caps cannot describe it (1.28's do, in their
 * `tensors` field, and there the event is not sent), so `tensorconvert
 * output=meta` sends this after its caps and before its first frame, and
 * `tensorbatch` makes its batches of that tensor. Read it with
 * gst_tensor_mem_frame_tensor_event_parse().
 *
 * Since: 0.4
 */
#define GST_TENSOR_MEM_FRAME_TENSOR_EVENT "GstTensorMemFrameTensor"

GST_TENSOR_MEM_API
GstEvent *gst_tensor_mem_frame_tensor_event_new(GstCaps *tensor_caps);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_frame_tensor_event_parse(GstEvent *event, GstCaps **tensor_caps);

G_END_DECLS
