// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorunbatch
 * @title: tensorunbatch
 *
 * Splits a batch after the model, back into the streams it was made from,
 * as DeepStream's `nvstreamdemux` does after `nvinfer`. Its input is the
 * `other/tensors` a model gives for one `tensorbatch` batch (`tensorinfer
 * output=tensors`, or the batch itself): every tensor's outermost dimension
 * is the batch's slot count, and the buffer still carries the batch's
 * #GstTensorMemBatchMeta, which says per slot which stream's frame it held
 * and that frame's timestamps.
 *
 * For every filled slot, one buffer goes out on the source pad of the slot's
 * stream: `src_K` for `tensorbatch`'s `sink_K` (made the first time that
 * stream appears; a stream named otherwise gets the slot's number). It holds
 * each tensor's slot, as views of the batch's buffers (no copy), with the
 * frame's own PTS and duration and the batch's fences; its caps are the
 * input's with a batch of one. A stream of video frames (tensorconvert
 * output=meta into tensorbatch, GStreamer 1.28) gets its own frames back
 * instead, in its own caps: the same picture, with the slot's tensors (as
 * views, with a batch of one) as its #GstTensorMeta, each named as the
 * batch's GstTensorMeta names it, else `output-J`. Empty slots of a
 * partial batch send nothing.
 * Each source pad has its own stream-start and its stream's own segment
 * (tensorbatch's #GST_TENSOR_MEM_STREAM_SEGMENT_EVENT; the input's segment
 * where a stream sent none), and its stream's own tags
 * (#GST_TENSOR_MEM_STREAM_TAGS_EVENT). A
 * stream that ends while the others go on (tensorbatch's
 * #GST_TENSOR_MEM_STREAM_END_EVENT) gets EOS on its pad after its last
 * frame; one whose tensorbatch pad was released gets EOS and its pad is
 * removed. The input's EOS goes to every pad still open; EOS before any
 * frame came out is an element error (no pad could carry it).
 *
 * One thread pushes every stream, so put a `queue` after each source pad,
 * as after any demuxer: a sink that blocks while it prerolls would hold the
 * others back.
 *
 * A batch without #GstTensorMemBatchMeta, or a tensor whose outermost
 * dimension is not the batch's slot count, is one element error saying so.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 tensorbatch name=b ! tensorunbatch name=u \
 *     videotestsrc num-buffers=30 ! tensorconvert width=224 height=224 ! b.sink_0 \
 *     videotestsrc num-buffers=30 pattern=ball ! tensorconvert width=224 height=224 ! b.sink_1 \
 *     u.src_0 ! queue ! fakesink  u.src_1 ! queue ! fakesink
 * ]|
 *
 * Since: 0.3
 */
#include "gsttensorunbatch.h"

#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemconfig.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#endif

#include <gst/base/gstflowcombiner.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_unbatch_debug);
#define GST_CAT_DEFAULT gst_tensor_unbatch_debug

namespace {

#define TENSORS_CAPS "other/tensors, format=(string)static"
#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* A stream of video frames (tensorbatch batched their tensors) gets its
 * frames back, the slot's outputs in their GstTensorMeta. */
#define FRAME_CAPS "; video/x-raw(ANY)"
#else
#define FRAME_CAPS ""
#endif

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(TENSORS_CAPS));
GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, GST_STATIC_CAPS(TENSORS_CAPS FRAME_CAPS));

/* The batch's tensors, as the caps say: each one's shape and bytes, and the
 * caps of one slot (a batch of one). */
struct Layout {
  std::vector<gst_tensormem::TensorCaps> tensors;
  GstCaps *slot_caps = nullptr;
  GstCaps *batch_caps = nullptr; // the input's (for a stream of frames, its outputs' description on 1.28)
};

/* Reads `s` (format=static, num_tensors tensors, comma-separated types and
 * innermost-first dimensions) through the one-tensor parser. */
bool read_layout(const GstStructure *s, Layout *out, std::string *why) {
  gint n = 0;
  const gchar *types = gst_structure_get_string(s, "types");
  const gchar *dims = gst_structure_get_string(s, "dimensions");
  if (!gst_structure_get_int(s, "num_tensors", &n) || n < 1 || n > 16 || !types || !dims) {
    *why = "other/tensors caps without num_tensors (1 to 16), types and dimensions";
    return false;
  }
  gchar **type_list = g_strsplit(types, ",", -1);
  gchar **dim_list = g_strsplit(dims, ",", -1);
  const bool counted =
      g_strv_length(type_list) == static_cast<guint>(n) && g_strv_length(dim_list) == static_cast<guint>(n);
  std::string slot_types, slot_dims;
  for (gint i = 0; counted && i < n; ++i) {
    GstStructure *one = gst_structure_new("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT,
                                          1, "types", G_TYPE_STRING, g_strstrip(type_list[i]), "dimensions",
                                          G_TYPE_STRING, g_strstrip(dim_list[i]), nullptr);
    gst_tensormem::TensorCaps t;
    const bool ok = gst_tensormem::parse_tensor_caps(one, &t, why);
    gst_structure_free(one);
    if (!ok) {
      *why = "tensor " + std::to_string(i) + ": " + *why;
      break;
    }
    out->tensors.push_back(t);
    // Appended piece by piece (GCC's -Wrestrict misreads "literal" +
    // std::string&& at -O3). Innermost first: the batch axis is the last;
    // one slot's is 1.
    if (i) {
      slot_types += ',';
      slot_dims += ',';
    }
    slot_types += type_list[i];
    for (std::size_t k = t.shape.size(); k-- > 1;) {
      slot_dims += std::to_string(t.shape[k]);
      slot_dims += ':';
    }
    slot_dims += '1';
  }
  g_strfreev(type_list);
  g_strfreev(dim_list);
  if (!counted) {
    *why = "other/tensors caps whose types or dimensions do not list num_tensors=" + std::to_string(n) + " tensors";
    return false;
  }
  if (out->tensors.size() != static_cast<std::size_t>(n))
    return false;
  GstStructure *slot = gst_structure_copy(s);
  gst_structure_set(slot, "types", G_TYPE_STRING, slot_types.c_str(), "dimensions", G_TYPE_STRING, slot_dims.c_str(),
                    nullptr);
  out->slot_caps = gst_caps_new_full(slot, nullptr);
  return true;
}

/* The source pad number of a slot's stream: K of "sink_K", else the slot's. */
guint stream_number(const gchar *stream, guint slot) {
  if (stream && g_str_has_prefix(stream, "sink_")) {
    gchar *end = nullptr;
    const guint64 k = g_ascii_strtoull(stream + 5, &end, 10);
    if (end != stream + 5 && *end == '\0' && k < G_MAXUINT)
      return static_cast<guint>(k);
  }
  return slot;
}

} // namespace

struct _GstTensorMemUnbatch {
  GstElement parent;
  GstPad *sinkpad;
  GstFlowCombiner *flows;
  // Streaming thread only (and PAUSED→READY, after it stopped).
  std::map<guint, GstPad *> *pads; // not owned: the element's
  Layout *layout;
  GstEvent *segment;                            // the input's last segment, for pads made later
  std::map<guint, GstEvent *> *stream_segments; // each stream's own segment, where tensorbatch sent one
  // Each stream's latest tag event per scope (tensorbatch's stream-tags), for
  // its pad now and a pad made later; flushes keep them, as pads keep tags.
  std::map<std::pair<guint, GstTagScope>, GstEvent *> *stream_tags;
  // The caps of each stream of video frames (tensorbatch's stream-caps),
  // without the input tensor's description: its pad's caps.
  std::map<guint, GstCaps *> *stream_caps;
  bool failed; // an element error was posted (EOS then says nothing more)
  guint64 slots_out;
};

G_DEFINE_TYPE(GstTensorMemUnbatch, gst_tensor_unbatch, GST_TYPE_ELEMENT)

/* An element error, remembered: the EOS that follows it then posts no second
 * one. */
#define UNBATCH_ERROR(self, domain, code, text, debug)                                                                 \
  G_STMT_START {                                                                                                       \
    (self)->failed = true;                                                                                             \
    GST_ELEMENT_ERROR(self, domain, code, text, debug);                                                                \
  }                                                                                                                    \
  G_STMT_END

namespace {

enum { PROP_0, PROP_SLOTS_OUT };

/* Stream `k`'s source pad goes (deactivated, removed from the element). */
void forget_pad(GstTensorMemUnbatch *self, guint k) {
  auto found = self->pads->find(k);
  if (found == self->pads->end())
    return;
  GstPad *pad = found->second;
  self->pads->erase(found);
  gst_flow_combiner_remove_pad(self->flows, pad);
  gst_pad_set_active(pad, FALSE);
  gst_element_remove_pad(GST_ELEMENT_CAST(self), pad);
}

/* The caps of stream `k`'s pad (borrowed; NULL before any): a batch of one
 * of the input's tensors, or for a stream of video frames, its frames' own
 * caps, which on 1.28 describe the slot's outputs as the input's describe
 * the batch's (a model's, from tensorinfer) in their `tensors` field. */
GstCaps *caps_of_stream(GstTensorMemUnbatch *self, guint k) {
  auto frames = self->stream_caps->find(k);
  if (frames == self->stream_caps->end())
    return self->layout->slot_caps;
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
  if (self->layout->batch_caps) {
    frames->second = gst_caps_make_writable(frames->second);
    GstStructure *s = gst_caps_get_structure(frames->second, 0);
    gst_tensormem::strip_caps_tensors(frames->second);
    gst_tensormem::set_caps_tensors_of_slot(gst_caps_get_structure(self->layout->batch_caps, 0), s);
  }
#endif
  return frames->second;
}

/* The source pad of stream `k`, made (stream-start, caps, segment sticky
 * on it) the first time. */
GstPad *pad_of(GstTensorMemUnbatch *self, guint k) {
  auto found = self->pads->find(k);
  if (found != self->pads->end()) {
    if (!GST_PAD_IS_EOS(found->second))
      return found->second;
    // A stream that ended comes back (its sink pad requested again): a new
    // pad, as a demuxer makes for a new stream.
    forget_pad(self, k);
  }
  gchar *name = g_strdup_printf("src_%u", k);
  GstPad *pad = gst_pad_new_from_static_template(&src_template, name);
  g_free(name);
  gst_pad_use_fixed_caps(pad);
  gst_pad_set_active(pad, TRUE);
  gchar *id_part = g_strdup_printf("%u", k);
  gchar *stream_id = gst_pad_create_stream_id(pad, GST_ELEMENT_CAST(self), id_part);
  g_free(id_part);
  gst_pad_push_event(pad, gst_event_new_stream_start(stream_id));
  g_free(stream_id);
  if (GstCaps *caps = caps_of_stream(self, k))
    gst_pad_push_event(pad, gst_event_new_caps(caps));
  auto own = self->stream_segments->find(k);
  if (own != self->stream_segments->end())
    gst_pad_push_event(pad, gst_event_ref(own->second));
  else if (self->segment)
    gst_pad_push_event(pad, gst_event_ref(self->segment));
  for (auto it = self->stream_tags->lower_bound({k, GstTagScope(0)});
       it != self->stream_tags->end() && it->first.first == k; ++it)
    gst_pad_push_event(pad, gst_event_ref(it->second));
  gst_element_add_pad(GST_ELEMENT_CAST(self), pad);
  gst_flow_combiner_add_pad(self->flows, pad);
  (*self->pads)[k] = pad;
  GST_INFO_OBJECT(self, "stream %u: %" GST_PTR_FORMAT, k, pad);
  return pad;
}

void forget_stream_segments(GstTensorMemUnbatch *self) {
  for (auto &[k, event] : *self->stream_segments)
    gst_event_unref(event);
  self->stream_segments->clear();
}

/* What is kept of stream `k` (its segment, tags and frame caps), or of
 * every stream (G_MAXUINT): a stream that left, the element stopping. */
void forget_stream_events(GstTensorMemUnbatch *self, guint k) {
  if (k == G_MAXUINT)
    forget_stream_segments(self);
  for (auto it = self->stream_caps->begin(); it != self->stream_caps->end();) {
    if (k != G_MAXUINT && it->first != k) {
      ++it;
      continue;
    }
    gst_caps_unref(it->second);
    it = self->stream_caps->erase(it);
  }
  auto own = self->stream_segments->find(k);
  if (own != self->stream_segments->end()) {
    gst_event_unref(own->second);
    self->stream_segments->erase(own);
  }
  for (auto it = self->stream_tags->begin(); it != self->stream_tags->end();) {
    if (k != G_MAXUINT && it->first.first != k) {
      ++it;
      continue;
    }
    gst_event_unref(it->second);
    it = self->stream_tags->erase(it);
  }
}

void forget_pads(GstTensorMemUnbatch *self) {
  while (!self->pads->empty())
    forget_pad(self, self->pads->begin()->first);
}

void forget_layout(GstTensorMemUnbatch *self) {
  if (self->layout->slot_caps)
    gst_caps_unref(self->layout->slot_caps);
  if (self->layout->batch_caps)
    gst_caps_unref(self->layout->batch_caps);
  *self->layout = Layout();
}

/* The batch's producers' fences, which hold for every slot, onto `out`. */
void copy_fences(GstBuffer *batch, GstBuffer *out) {
  gpointer state = nullptr;
  while (GstMeta *fence = gst_buffer_iterate_meta_filtered(batch, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    GstMetaTransformCopy copy = {FALSE, 0, static_cast<gsize>(-1)};
    fence->info->transform_func(out, fence, batch, _gst_meta_transform_copy, &copy);
  }
}

/* Slot `i` of `batch` as one region per tensor, shared: the tensors lie one
 * after another, each `n_slots` slots long. Empty when a region cannot be had. */
std::vector<GstBuffer *> slot_parts(GstBuffer *batch, const Layout &layout, guint n_slots, guint i) {
  std::vector<GstBuffer *> parts;
  gsize offset = 0;
  for (const gst_tensormem::TensorCaps &t : layout.tensors) {
    const gsize per_slot = static_cast<gsize>(t.bytes) / n_slots;
    GstBuffer *part = gst_buffer_copy_region(batch, GST_BUFFER_COPY_MEMORY, offset + i * per_slot, per_slot);
    if (!part) {
      for (GstBuffer *made : parts)
        gst_buffer_unref(made);
      return {};
    }
    parts.push_back(part);
    offset += static_cast<gsize>(t.bytes);
  }
  return parts;
}

/* Slot `i` of `batch`: each tensor's bytes of that slot, shared. */
GstBuffer *slot_buffer(GstBuffer *batch, const Layout &layout, guint n_slots, guint i) {
  const std::vector<GstBuffer *> parts = slot_parts(batch, layout, n_slots, i);
  if (parts.size() != layout.tensors.size())
    return nullptr;
  GstBuffer *out = gst_buffer_new();
  for (GstBuffer *part : parts)
    out = gst_buffer_append(out, part);
  copy_fences(batch, out);
  return out;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* Slot `i`'s stream frame `frame` again, its GstTensorMeta now the slot's
 * outputs: each tensor's bytes of that slot, shared, with a batch of one,
 * named and ordered as the batch's own GstTensorMeta has them (tensorinfer's
 * output ids and dims order) or `output-J`, row-major. Its input tensor (its slot, before the model) is
 * gone from it. */
GstBuffer *frame_with_outputs(GstBuffer *batch, const Layout &layout, guint n_slots, guint i, GstBuffer *frame) {
  const gsize n = layout.tensors.size();
  std::vector<GstBuffer *> parts = slot_parts(batch, layout, n_slots, i);
  if (parts.size() != n)
    return nullptr;
  GstBuffer *out = gst_buffer_copy(frame); // the frame's memory shared, its metas copied
  if (GstTensorMeta *input = gst_buffer_get_tensor_meta(out))
    gst_buffer_remove_meta(out, &input->meta);
  const GstTensorMeta *named = gst_buffer_get_tensor_meta(batch);
  auto **tensors = g_new0(GstTensor *, n);
  bool made = true;
  for (gsize j = 0; j < n; ++j) {
    GstBuffer *part = std::exchange(parts[j], nullptr);
    if (!made) {
      gst_buffer_unref(part);
      continue;
    }
    const gst_tensormem::TensorCaps &t = layout.tensors[j];
    std::vector<gsize> dims(t.shape.begin(), t.shape.end());
    dims[0] = 1;
    GstTensorDataType type = GST_TENSOR_DATA_TYPE_FLOAT32;
    const GstTensor *batch_tensor = named && j < named->num_tensors ? named->tensors[j] : nullptr;
    const GQuark id =
        batch_tensor ? batch_tensor->id : g_quark_from_string(("output-" + std::to_string(j)).c_str());
    const GstTensorDimOrder order = batch_tensor ? batch_tensor->dims_order : GST_TENSOR_DIM_ORDER_ROW_MAJOR;
    made = gst_tensormem::tensor_data_type_of(t.code, t.bits, &type);
    tensors[j] = made ? gst_tensor_new_simple(id, type, part, order, dims.size(), dims.data()) : nullptr;
    made = made && tensors[j];
    if (!made)
      gst_buffer_unref(part);
  }
  if (!made) {
    for (gsize j = 0; j < n; ++j)
      if (tensors[j])
        gst_tensor_free(tensors[j]);
    g_free(tensors);
    gst_buffer_unref(out);
    return nullptr;
  }
  gst_tensor_meta_set(gst_buffer_add_tensor_meta(out), static_cast<guint>(n), tensors);
  copy_fences(batch, out);
  return out;
}
#endif

GstFlowReturn gst_tensor_unbatch_chain(GstPad *, GstObject *parent, GstBuffer *batch) {
  auto *self = GST_TENSOR_UNBATCH(parent);
  const Layout &layout = *self->layout;
  if (layout.tensors.empty()) {
    gst_buffer_unref(batch);
    UNBATCH_ERROR(self, CORE, NEGOTIATION, ("No caps before the first batch"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(batch);
  if (!meta || meta->n_slots == 0) {
    gst_buffer_unref(batch);
    UNBATCH_ERROR(self, STREAM, FORMAT, ("The buffer is not a batch: it has no GstTensorMemBatchMeta"),
                  ("tensorunbatch splits what tensorbatch made (the batch itself, or a model's outputs for it, "
                   "tensorinfer output=tensors): each slot's stream and timestamps come from that meta"));
    return GST_FLOW_ERROR;
  }
  gsize total = 0;
  for (std::size_t j = 0; j < layout.tensors.size(); ++j) {
    const gst_tensormem::TensorCaps &t = layout.tensors[j];
    if (t.shape.empty() || t.shape[0] != static_cast<std::int64_t>(meta->n_slots)) {
      const std::int64_t first = t.shape.empty() ? 0 : t.shape[0];
      const guint n_slots = meta->n_slots;
      gst_buffer_unref(batch);
      UNBATCH_ERROR(self, STREAM, FORMAT,
                    ("Tensor %u's first dimension is %" G_GINT64_FORMAT ", not the batch's %u slots",
                     static_cast<guint>(j), first, n_slots),
                    ("every tensor after the model must keep the batch axis outermost"));
      return GST_FLOW_ERROR;
    }
    total += static_cast<gsize>(t.bytes);
  }
  if (gst_buffer_get_size(batch) < total) {
    const gsize size = gst_buffer_get_size(batch);
    gst_buffer_unref(batch);
    UNBATCH_ERROR(self, STREAM, FORMAT,
                  ("A batch of %" G_GSIZE_FORMAT " bytes; its caps say %" G_GSIZE_FORMAT, size, total), (nullptr));
    return GST_FLOW_ERROR;
  }
  GstFlowReturn combined = GST_FLOW_OK;
  for (guint i = 0; i < meta->n_slots; ++i) {
    const GstTensorMemBatchSlot *slot = gst_tensor_mem_batch_meta_get_slot(meta, i);
    if (!slot->filled)
      continue; // an empty slot of a partial batch: no frame of that stream
#if GST_TENSOR_MEM_HAVE_TENSOR_META
    GstBuffer *out = slot->frame ? frame_with_outputs(batch, layout, meta->n_slots, i, slot->frame)
                                 : slot_buffer(batch, layout, meta->n_slots, i);
#else
    GstBuffer *out = slot_buffer(batch, layout, meta->n_slots, i);
#endif
    if (!out) {
      gst_buffer_unref(batch);
      UNBATCH_ERROR(self, RESOURCE, FAILED, ("Slot %u of the batch cannot be shared", i), (nullptr));
      return GST_FLOW_ERROR;
    }
    GST_BUFFER_PTS(out) = slot->pts;
    GST_BUFFER_DTS(out) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(out) = slot->duration;
    GstPad *pad = pad_of(self, stream_number(slot->stream, i));
    ++self->slots_out;
    combined = gst_flow_combiner_update_pad_flow(self->flows, pad, gst_pad_push(pad, out));
  }
  gst_buffer_unref(batch);
  return combined;
}

gboolean gst_tensor_unbatch_sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
  auto *self = GST_TENSOR_UNBATCH(parent);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_STREAM_START:
    // Each source pad starts a stream of its own.
    gst_event_unref(event);
    return TRUE;
  case GST_EVENT_CAPS: {
    GstCaps *caps = nullptr;
    gst_event_parse_caps(event, &caps);
    Layout layout;
    std::string why;
    const bool read = gst_caps_get_size(caps) == 1 && read_layout(gst_caps_get_structure(caps, 0), &layout, &why);
    if (!read) {
      UNBATCH_ERROR(self, CORE, NEGOTIATION, ("Cannot split these tensors: %s", why.c_str()),
                    ("caps %" GST_PTR_FORMAT, caps));
      if (layout.slot_caps)
        gst_caps_unref(layout.slot_caps);
      gst_event_unref(event);
      return FALSE;
    }
    forget_layout(self);
    *self->layout = layout;
    self->layout->batch_caps = gst_caps_ref(caps);
    gst_event_unref(event);
    for (auto &[k, src] : *self->pads)
      gst_pad_push_event(src, gst_event_new_caps(caps_of_stream(self, k)));
    return TRUE;
  }
  case GST_EVENT_SEGMENT:
    // The batch's segment (its first stream's): for the streams without
    // their own.
    gst_event_replace(&self->segment, event);
    for (auto &[k, src] : *self->pads)
      if (!self->stream_segments->count(k))
        gst_pad_push_event(src, gst_event_ref(event));
    gst_event_unref(event);
    return TRUE;
  case GST_EVENT_FLUSH_STOP:
    gst_flow_combiner_reset(self->flows);
    forget_stream_segments(self); // each stream sends a new one after the flush
    break;
  case GST_EVENT_CUSTOM_DOWNSTREAM: {
    const gchar *stream = nullptr;
    const GstSegment *segment = nullptr;
    if (gst_tensor_mem_stream_segment_event_parse(event, &stream, &segment)) {
      const guint k = stream_number(stream, G_MAXUINT);
      if (k != G_MAXUINT) {
        GstEvent *own = gst_event_new_segment(segment);
        gst_event_set_seqnum(own, gst_event_get_seqnum(event));
        auto found = self->pads->find(k);
        if (found != self->pads->end() && !GST_PAD_IS_EOS(found->second))
          gst_pad_push_event(found->second, gst_event_ref(own));
        auto &slot = (*self->stream_segments)[k];
        if (slot)
          gst_event_unref(slot);
        slot = own;
      }
      gst_event_unref(event);
      return TRUE;
    }
    GstCaps *frame_caps = nullptr;
    if (gst_tensor_mem_stream_caps_event_parse(event, &stream, &frame_caps)) {
      // A stream of frames: they go out again, their caps without the
      // tensor they carried in (the slot's outputs replace it).
      const guint k = stream_number(stream, G_MAXUINT);
      if (k != G_MAXUINT) {
        GstCaps *caps = gst_caps_copy(frame_caps);
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
        gst_tensormem::strip_caps_tensors(caps);
#endif
        GstCaps *&kept = (*self->stream_caps)[k];
        if (kept)
          gst_caps_unref(kept);
        kept = caps;
        auto found = self->pads->find(k);
        if (found != self->pads->end() && !GST_PAD_IS_EOS(found->second))
          gst_pad_push_event(found->second, gst_event_new_caps(caps_of_stream(self, k)));
      }
      gst_event_unref(event);
      return TRUE;
    }
    const GstTagList *tags = nullptr;
    if (gst_tensor_mem_stream_tags_event_parse(event, &stream, &tags)) {
      const guint k = stream_number(stream, G_MAXUINT);
      if (k != G_MAXUINT) {
        GstEvent *own = gst_event_new_tag(gst_tag_list_copy(tags));
        gst_event_set_seqnum(own, gst_event_get_seqnum(event));
        auto found = self->pads->find(k);
        if (found != self->pads->end() && !GST_PAD_IS_EOS(found->second))
          gst_pad_push_event(found->second, gst_event_ref(own));
        GstEvent *&slot = (*self->stream_tags)[{k, gst_tag_list_get_scope(tags)}];
        if (slot)
          gst_event_unref(slot);
        slot = own;
      }
      gst_event_unref(event);
      return TRUE;
    }
    gboolean released = FALSE;
    if (!gst_tensor_mem_stream_end_event_parse(event, &stream, &released))
      break;
    // One stream ended while the others go on: EOS on its pad; a stream
    // that left (its sink pad released) takes its pad with it.
    const guint k = stream_number(stream, G_MAXUINT);
    auto found = self->pads->find(k);
    if (found != self->pads->end()) {
      GST_INFO_OBJECT(self, "stream %s %s", stream, released ? "left" : "ended");
      if (!GST_PAD_IS_EOS(found->second))
        gst_pad_push_event(found->second, gst_event_new_eos());
      if (released) {
        forget_pad(self, k);
        forget_stream_events(self, k); // gone with its stream
      }
    }
    gst_event_unref(event);
    return TRUE;
  }
  case GST_EVENT_EOS: {
    if (self->pads->empty() && !self->failed) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("The batches ended before any stream's frame came out of them"),
                        ("EOS before the first filled slot: no source pad was made, so nothing downstream would "
                         "see the end"));
      gst_event_unref(event);
      return FALSE;
    }
    for (auto &[k, src] : *self->pads)
      if (!GST_PAD_IS_EOS(src))
        gst_pad_push_event(src, gst_event_ref(event));
    gst_event_unref(event);
    return TRUE;
  }
  default: break;
  }
  return gst_pad_event_default(pad, parent, event);
}

} // namespace

static GstStateChangeReturn gst_tensor_unbatch_change_state(GstElement *element, GstStateChange transition) {
  auto *self = GST_TENSOR_UNBATCH(element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    self->slots_out = 0;
    self->failed = false;
    gst_flow_combiner_reset(self->flows);
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_tensor_unbatch_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    GST_INFO_OBJECT(self, "summary: %" G_GUINT64_FORMAT " slots sent on %u streams", self->slots_out,
                    static_cast<guint>(self->pads->size()));
    forget_pads(self);
    forget_layout(self);
    forget_stream_events(self, G_MAXUINT);
    gst_clear_event(&self->segment);
  }
  return ret;
}

static void gst_tensor_unbatch_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_UNBATCH(object);
  if (prop_id == PROP_SLOTS_OUT)
    g_value_set_uint64(value, self->slots_out);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_tensor_unbatch_finalize(GObject *object) {
  auto *self = GST_TENSOR_UNBATCH(object);
  forget_layout(self);
  delete self->layout;
  delete self->pads;
  forget_stream_events(self, G_MAXUINT);
  delete self->stream_segments;
  delete self->stream_tags;
  delete self->stream_caps;
  gst_flow_combiner_free(self->flows);
  gst_clear_event(&self->segment);
  G_OBJECT_CLASS(gst_tensor_unbatch_parent_class)->finalize(object);
}

static void gst_tensor_unbatch_class_init(GstTensorMemUnbatchClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  gobject_class->get_property = gst_tensor_unbatch_get_property;
  gobject_class->finalize = gst_tensor_unbatch_finalize;
  g_object_class_install_property(
      gobject_class, PROP_SLOTS_OUT,
      g_param_spec_uint64("slots-out", "Slots out", "Filled slots sent on their streams since the element started", 0,
                          G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  element_class->change_state = gst_tensor_unbatch_change_state;
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Tensor unbatch", "Demuxer/Tensor",
      "Splits tensorbatch's batches, after the model, back into one stream of tensors per batched stream",
      GST_TENSOR_MEM_AUTHOR);
  GST_DEBUG_CATEGORY_INIT(gst_tensor_unbatch_debug, "tensorunbatch", 0, "Tensor unbatch");
}

static void gst_tensor_unbatch_init(GstTensorMemUnbatch *self) {
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, gst_tensor_unbatch_chain);
  gst_pad_set_event_function(self->sinkpad, gst_tensor_unbatch_sink_event);
  // Caps queries take GStreamer's default: the template, intersected with
  // the filter (the pad proxies nothing).
  gst_element_add_pad(GST_ELEMENT_CAST(self), self->sinkpad);
  self->flows = gst_flow_combiner_new();
  self->pads = new std::map<guint, GstPad *>();
  self->layout = new Layout();
  self->segment = nullptr;
  self->stream_segments = new std::map<guint, GstEvent *>();
  self->stream_tags = new std::map<std::pair<guint, GstTagScope>, GstEvent *>();
  self->stream_caps = new std::map<guint, GstCaps *>();
  self->failed = false;
  self->slots_out = 0;
}
