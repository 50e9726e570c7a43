// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorinspect
 * @title: tensorinspect
 *
 * Reads each video frame through the best path and reports what it saw. A
 * buffer with a #GstTensorMemCudaMeta is read through CUDA (the device bytes
 * are copied to the host with cudaMemcpy DeviceToHost); any other buffer,
 * or one whose CUDA read fails, through a host map (gst_video_frame_map()).
 *
 * Per buffer it posts an element message (unless #GstTensorMemInspect:silent)
 * whose structure is named `tensorinspect`:
 *
 * - `frame` (guint64): index since start
 * - `checksum` (string): 16 hex digits of the 64-bit XXH3 (seed 0) over the visible
 *   bytes of every plane, row by row, padding excluded: the hash of those
 *   rows laid end to end (both paths honour the #GstVideoMeta offsets and
 *   strides)
 * - `path` (string): "cuda" or "host"
 * - `min`, `max` (guint), `mean` (gdouble): over the first plane's visible
 *   bytes
 * - `fence` (string): the #GstTensorMemFenceMeta fences the buffer arrived
 *   with, "<kind>:<value>" each (e.g. "egl:12", comma-separated when there
 *   are several), or "none"
 *
 * Before reading, it waits on the CPU for those fences (bounded by
 * %GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT); a fence that does not signal in
 * time is an element error naming it.
 *
 * It also takes `other/tensors` (one static tensor, as `tensorconvert` and
 * NNStreamer produce): the checksum then covers the tensor's bytes (element
 * count × element size from the caps) and the statistics are over those raw
 * bytes; a buffer smaller than the tensor is an element error naming both
 * sizes.
 *
 * Built against GStreamer 1.26 (GST_TENSOR_MEM_HAVE_TENSOR_META), it also
 * reads the buffer's #GstTensorMeta, whoever attached it (`tensorconvert`,
 * `tensorconvert output=meta` on a video frame, `tensorinfer`,
 * `onnxinference`, an application): after the frame's message it posts
 * (unless #GstTensorMemInspect:silent) one `tensorinspect-tensor` message per tensor of the meta, in the meta's
 * order:
 *
 * - `frame` (guint64): the frame's index, as in its `tensorinspect` message
 * - `index` (guint): the tensor's index in the meta
 * - `id` (string): the tensor's id ("(none)" for 0)
 * - `type` (string): "float32", "uint8", "int4", ... (GstTensorDataType)
 * - `dims` (string): e.g. "1x3x224x224", in the tensor's own order
 * - `dims-order` (string): "row-major" or "col-major"
 * - `bytes` (guint64): what the dims and type cover (the data buffer's
 *   whole size for a tensor with a 0, dynamic, dimension)
 * - `checksum` (string): 64-bit XXH3 of those bytes of the tensor's data
 *   buffer, from its start (the data buffer's memories in turn, none copied)
 * - `path` (string): "cuda" when the data buffer carries a
 *   #GstTensorMemCudaMeta (`tensorcudaimport` puts one there) and the read
 *   through it works, else "host"
 * - `min`, `max` (guint), `mean` (gdouble): over those raw bytes
 *
 * It waits for the fences of each tensor's data buffer as for the frame's.
 * A tensor without data, with a data type GStreamer does not define, or
 * whose data buffer is shorter than its dims and type say is an element
 * error naming the tensor, before any byte is read.
 *
 * At EOS it posts `tensorinspect-summary` with `frames`, `cuda-frames`,
 * `host-frames` and `tensors` (meta tensors read; guint64). Buffers pass
 * through untouched.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=3 ! tensorupload storage=pbo ! tensorcudaimport ! tensorinspect ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorinspect.h"
#include "gsttensormetaread.h"

#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/video/video.h>


#include <cstdio>
#include <new>
#include <string>
#include <vector>

// XXH3_state_t on the stack: the streaming state's layout is public here.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_inspect_debug);
#define GST_CAT_DEFAULT gst_tensor_inspect_debug

struct _GstTensorMemInspect {
  GstBaseTransform parent;
  gboolean silent;      // object lock
  gchar *last_checksum; // object lock
  GCancellable *waits;  // cancelled on flush-start and PAUSED→READY
  // Streaming thread.
  GstVideoInfo info;
  gboolean have_info;
  guint64 tensor_bytes; // other/tensors caps: the tensor's bytes; 0 for video
  guint64 frames;
  guint64 cuda_frames;
  guint64 host_frames;
  guint64 meta_tensors; // GstTensorMeta tensors read
  guint8 *scratch;    // host copy of the CUDA bytes, reused frame to frame; freed at stop
  gsize scratch_size; // bytes at `scratch`
};

namespace {

enum { PROP_0, PROP_SILENT, PROP_LAST_CHECKSUM };

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                             GST_STATIC_CAPS("video/x-raw(ANY); other/tensors(ANY)"));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                                                            GST_STATIC_CAPS("video/x-raw(ANY); other/tensors(ANY)"));

/* What tensorinspect reports of one frame: 64-bit XXH3 over the visible rows of
 * every plane (streamed row by row, so it equals the one-shot hash of the
 * rows laid end to end) and byte statistics of the first plane. The hash
 * runs at memory speed, unlike a byte-serial hash such as FNV-1a (about
 * 350 MB/s, which made the checksum the bottleneck of every pipeline with
 * tensorinspect); the statistics loop has no carried dependency but the
 * reductions, which the compiler vectorises. */
struct Stats {
  XXH3_state_t hash_state;
  guint min = 255;
  guint max = 0;
  guint64 sum = 0;
  guint64 count = 0;

  Stats() { XXH3_64bits_reset(&hash_state); }

  guint64 hash() const { return XXH3_64bits_digest(&hash_state); }

  void rows(const guint8 *base, gsize stride, gsize row_bytes, guint rows, bool first_plane) {
    for (guint y = 0; y < rows; ++y) {
      const guint8 *row = base + static_cast<gsize>(y) * stride;
      XXH3_64bits_update(&hash_state, row, row_bytes);
      if (first_plane)
        row_stats(row, row_bytes);
    }
  }

  void row_stats(const guint8 *row, gsize n) {
    guint8 lo = 255, hi = 0;
    guint32 row_sum = 0; // n <= 2^24 bytes keeps 255 * n in range; longer rows go in slices
    for (gsize start = 0; start < n; start += gsize{1} << 24) {
      const gsize end = MIN(n, start + (gsize{1} << 24));
      row_sum = 0;
      for (gsize x = start; x < end; ++x) {
        lo = row[x] < lo ? row[x] : lo;
        hi = row[x] > hi ? row[x] : hi;
        row_sum += row[x];
      }
      sum += row_sum;
    }
    min = MIN(min, guint{lo});
    max = MAX(max, guint{hi});
    count += n;
  }
};

/* Visible bytes per row and visible rows of `plane`. */
void plane_extent(const GstVideoInfo *info, guint plane, gsize *row_bytes, guint *rows) {
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(info->finfo, plane, comp);
  *row_bytes = static_cast<gsize>(GST_VIDEO_INFO_COMP_WIDTH(info, comp[0])) *
               static_cast<gsize>(GST_VIDEO_INFO_COMP_PSTRIDE(info, comp[0]));
  *rows = static_cast<guint>(GST_VIDEO_INFO_COMP_HEIGHT(info, comp[0]));
}

bool read_host(GstTensorMemInspect *self, GstBuffer *buffer, Stats *stats) {
  if (self->tensor_bytes) {
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ))
      return false;
    stats->rows(map.data, self->tensor_bytes, self->tensor_bytes, 1, true);
    gst_buffer_unmap(buffer, &map);
    return true;
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &self->info, buffer, GST_MAP_READ))
    return false;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    gsize row_bytes;
    guint rows;
    plane_extent(&frame.info, p, &row_bytes, &rows);
    stats->rows(static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)),
                static_cast<gsize>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p)), row_bytes, rows, p == 0);
  }
  gst_video_frame_unmap(&frame);
  return true;
}

void free_scratch(GstTensorMemInspect *self) {
  delete[] self->scratch;
  self->scratch = nullptr;
  self->scratch_size = 0;
}

/* The CUDA path: map through the meta, copy the device bytes to the host,
 * unmap (before any CPU map of a GL buffer), then walk the planes with the
 * GstVideoMeta's (or the caps') offsets and strides. False (with the reason
 * logged) when any step fails: the caller then reads through the host. */
/* The meta's device bytes, copied into the scratch buffer; nullptr (the
 * reason logged) when the read fails. */
const guint8 *read_cuda_bytes(GstTensorMemInspect *self, GstTensorMemCudaMeta *meta) {
  const gsize size = meta->size;
  if (!self->scratch || self->scratch_size != size) {
    free_scratch(self);
    self->scratch = new guint8[size]; // not zero-filled: the copy below overwrites every byte
    self->scratch_size = size;
  }
  GError *error = nullptr;
  if (!gst_tensor_mem_cuda_meta_read(meta, self->scratch, size, &error)) {
    GST_INFO_OBJECT(self, "reading through CUDA failed, reading through the host: %s", error ? error->message : "?");
    g_clear_error(&error);
    return nullptr;
  }
  return self->scratch;
}

bool read_cuda(GstTensorMemInspect *self, GstBuffer *buffer, GstTensorMemCudaMeta *meta, Stats *stats) {
  const gsize size = meta->size;
  const guint8 *host = read_cuda_bytes(self, meta);
  if (!host)
    return false;

  Stats out;
  if (self->tensor_bytes) {
    if (self->tensor_bytes > size) {
      GST_INFO_OBJECT(self, "the %" G_GUINT64_FORMAT "-byte tensor is longer than the %" G_GSIZE_FORMAT " CUDA bytes",
                      self->tensor_bytes, size);
      return false;
    }
    out.rows(host, self->tensor_bytes, self->tensor_bytes, 1, true);
    *stats = out;
    return true;
  }
  // inspect_ip validated the buffer: the planes fit it, with strides that cover a row.
  const GstVideoInfo *info = &self->info;
  GstVideoMeta *vmeta = gst_buffer_get_video_meta(buffer);
  const guint n_planes = GST_VIDEO_INFO_N_PLANES(info);
  for (guint p = 0; p < n_planes; ++p) {
    const gsize offset = vmeta ? vmeta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(info, p);
    const gint stride = vmeta ? vmeta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(info, p);
    gsize row_bytes;
    guint rows;
    plane_extent(info, p, &row_bytes, &rows);
    const gsize end = offset + static_cast<gsize>(rows - 1) * static_cast<gsize>(stride) + row_bytes;
    if (offset > size || end > size) {
      GST_INFO_OBJECT(self, "plane %u ends at %" G_GSIZE_FORMAT " past the %" G_GSIZE_FORMAT " CUDA bytes", p, end,
                      size);
      return false;
    }
    out.rows(host + offset, static_cast<gsize>(stride), row_bytes, rows, p == 0);
  }
  *stats = out;
  return true;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The first `bytes` bytes of a meta tensor's data buffer, memory by memory
 * (nothing gathered). */
bool read_tensor_host(GstBuffer *data, gsize bytes, Stats *stats) {
  gsize left = bytes;
  for (guint m = 0; m < gst_buffer_n_memory(data) && left > 0; ++m) {
    GstMemory *memory = gst_buffer_peek_memory(data, m);
    GstMapInfo map;
    if (!gst_memory_map(memory, &map, GST_MAP_READ))
      return false;
    const gsize n = MIN(left, map.size);
    stats->rows(map.data, n, n, 1, true);
    gst_memory_unmap(memory, &map);
    left -= n;
  }
  return left == 0;
}

/* One `tensorinspect-tensor` message for a checked tensor of the meta. */
bool inspect_meta_tensor(GstTensorMemInspect *self, guint64 frame, const gst_tensormem::MetaTensor &t) {
  Stats stats;
  const char *path = nullptr;
  GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_mem_cuda_meta(t.tensor->data);
  if (cuda && cuda->size >= t.bytes) {
    if (const guint8 *host = read_cuda_bytes(self, cuda)) {
      stats.rows(host, t.bytes, t.bytes, 1, true);
      path = "cuda";
    }
  }
  if (!path) {
    stats = Stats();
    if (!read_tensor_host(t.tensor->data, t.bytes, &stats)) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ,
                        ("Cannot read tensor %" G_GSIZE_FORMAT " ('%s') of frame %" G_GUINT64_FORMAT, t.index,
                         gst_tensormem::tensor_id_text(t.tensor), frame),
                        ("gst_memory_map of its data buffer failed"));
      return false;
    }
    path = "host";
  }
  ++self->meta_tensors;
  gchar checksum[17];
  g_snprintf(checksum, sizeof checksum, "%016" G_GINT64_MODIFIER "x", stats.hash());
  const std::string dims = gst_tensormem::tensor_dims_text(t.tensor);
  const gdouble mean = stats.count ? static_cast<gdouble>(stats.sum) / static_cast<gdouble>(stats.count) : 0.0;
  GstStructure *s = gst_structure_new(
      "tensorinspect-tensor", "frame", G_TYPE_UINT64, frame, "index", G_TYPE_UINT, static_cast<guint>(t.index), "id",
      G_TYPE_STRING, gst_tensormem::tensor_id_text(t.tensor), "type", G_TYPE_STRING,
      gst_tensormem::tensor_data_type_name(t.data_type), "dims", G_TYPE_STRING, dims.c_str(), "dims-order",
      G_TYPE_STRING, t.dims_order == GST_TENSOR_DIM_ORDER_COL_MAJOR ? "col-major" : "row-major", "bytes", G_TYPE_UINT64,
      static_cast<guint64>(t.bytes), "checksum", G_TYPE_STRING, checksum, "path", G_TYPE_STRING, path, "min",
      G_TYPE_UINT, stats.count ? stats.min : 0u, "max", G_TYPE_UINT, stats.max, "mean", G_TYPE_DOUBLE, mean, nullptr);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  return true;
}
#endif

GstFlowReturn inspect_ip(GstTensorMemInspect *self, GstBuffer *buffer) {
  if (!self->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No video caps before the first buffer"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  // The frame, and every tensor of its meta, checked before any byte is read.
  std::vector<gst_tensormem::MetaTensor> tensors;
  const GstFlowReturn valid =
      gst_tensormem::element_validate_input(GST_ELEMENT(self), buffer, self->tensor_bytes, &self->info, &tensors);
  if (valid != GST_FLOW_OK)
    return valid;
  gchar *fence = gst_buffer_describe_tensor_mem_fences(buffer);
  GstFlowReturn fenced =
      gst_tensor_mem_element_wait_fences(GST_ELEMENT(self), buffer, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, self->waits, nullptr);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (fenced == GST_FLOW_OK)
    fenced = gst_tensormem::element_wait_tensor_fences(GST_ELEMENT(self), buffer, tensors, self->waits);
#endif
  if (fenced != GST_FLOW_OK) {
    g_free(fence);
    return fenced;
  }
  Stats stats;
  const char *path = nullptr;
  if (GstTensorMemCudaMeta *meta = gst_buffer_get_tensor_mem_cuda_meta(buffer)) {
    if (read_cuda(self, buffer, meta, &stats))
      path = "cuda";
  }
  if (!path) {
    stats = Stats();
    if (!read_host(self, buffer, &stats)) {
      g_free(fence);
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot read frame %" G_GUINT64_FORMAT, self->frames),
                        ("%s", self->tensor_bytes ? "gst_buffer_map failed" : "gst_video_frame_map failed"));
      return GST_FLOW_ERROR;
    }
    path = "host";
  }
  const guint64 index = self->frames++;
  if (path[0] == 'c')
    ++self->cuda_frames;
  else
    ++self->host_frames;

  gchar checksum[17];
  g_snprintf(checksum, sizeof checksum, "%016" G_GINT64_MODIFIER "x", stats.hash());
  const gdouble mean = stats.count ? static_cast<gdouble>(stats.sum) / static_cast<gdouble>(stats.count) : 0.0;
  GST_OBJECT_LOCK(self);
  g_free(self->last_checksum);
  self->last_checksum = g_strdup(checksum);
  const gboolean silent = self->silent;
  GST_OBJECT_UNLOCK(self);
  GST_LOG_OBJECT(self, "frame %" G_GUINT64_FORMAT " via %s: %s", index, path, checksum);
  if (!silent) {
    GstStructure *s =
        gst_structure_new("tensorinspect", "frame", G_TYPE_UINT64, index, "checksum", G_TYPE_STRING, checksum, "path",
                          G_TYPE_STRING, path, "min", G_TYPE_UINT, stats.count ? stats.min : 0u, "max", G_TYPE_UINT,
                          stats.max, "mean", G_TYPE_DOUBLE, mean, "fence", G_TYPE_STRING, fence, nullptr);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  g_free(fence);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (!silent) {
    for (const gst_tensormem::MetaTensor &t : tensors) {
      if (!inspect_meta_tensor(self, index, t))
        return GST_FLOW_ERROR;
    }
  }
#endif
  return GST_FLOW_OK;
}

} // namespace

G_DEFINE_TYPE(GstTensorMemInspect, gst_tensor_inspect, GST_TYPE_BASE_TRANSFORM)

static void gst_tensor_inspect_finalize(GObject *object) {
  auto *self = GST_TENSOR_INSPECT(object);
  g_free(self->last_checksum);
  free_scratch(self);
  g_clear_object(&self->waits);
  G_OBJECT_CLASS(gst_tensor_inspect_parent_class)->finalize(object);
}

static void gst_tensor_inspect_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_INSPECT(object);
  switch (prop_id) {
  case PROP_SILENT:
    GST_OBJECT_LOCK(self);
    self->silent = g_value_get_boolean(value);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void gst_tensor_inspect_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_INSPECT(object);
  switch (prop_id) {
  case PROP_SILENT:
    GST_OBJECT_LOCK(self);
    g_value_set_boolean(value, self->silent);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_LAST_CHECKSUM:
    GST_OBJECT_LOCK(self);
    g_value_set_string(value, self->last_checksum);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static gboolean gst_tensor_inspect_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_INSPECT(trans);
  self->frames = self->cuda_frames = self->host_frames = self->meta_tensors = 0;
  self->have_info = FALSE;
  GST_OBJECT_LOCK(self);
  g_clear_pointer(&self->last_checksum, g_free);
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean gst_tensor_inspect_stop(GstBaseTransform *trans) {
  free_scratch(GST_TENSOR_INSPECT(trans));
  return TRUE;
}

static gboolean gst_tensor_inspect_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_TENSOR_INSPECT(trans);
  if (!gst_tensormem::element_read_tensor_caps(GST_ELEMENT(self), incaps, &self->tensor_bytes))
    return FALSE;
  if (self->tensor_bytes) {
    self->have_info = TRUE;
    return TRUE;
  }
  GstVideoInfo info;
  if (!gst_tensor_mem_element_video_info_from_caps(GST_ELEMENT(self), &info, incaps))
    return FALSE;
  self->info = info;
  self->tensor_bytes = 0;
  self->have_info = TRUE;
  return TRUE;
}

static GstFlowReturn gst_tensor_inspect_transform_ip(GstBaseTransform *trans, GstBuffer *buffer) {
  auto *self = GST_TENSOR_INSPECT(trans);
  return inspect_ip(self, buffer);
}

static gboolean gst_tensor_inspect_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_TENSOR_INSPECT(trans);
  gst_tensor_mem_transform_watch_event(trans, self->waits, event);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    GstStructure *s =
        gst_structure_new("tensorinspect-summary", "frames", G_TYPE_UINT64, self->frames, "cuda-frames", G_TYPE_UINT64,
                          self->cuda_frames, "host-frames", G_TYPE_UINT64, self->host_frames, "tensors",
                          G_TYPE_UINT64, self->meta_tensors, nullptr);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_inspect_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn gst_tensor_inspect_change_state(GstElement *element, GstStateChange transition) {
  gst_tensor_mem_transform_watch_state_change(GST_BASE_TRANSFORM(element), GST_TENSOR_INSPECT(element)->waits,
                                              transition);
  return GST_ELEMENT_CLASS(gst_tensor_inspect_parent_class)->change_state(element, transition);
}

static void gst_tensor_inspect_class_init(GstTensorMemInspectClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->finalize = gst_tensor_inspect_finalize;
  gobject_class->set_property = gst_tensor_inspect_set_property;
  gobject_class->get_property = gst_tensor_inspect_get_property;
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_tensor_inspect_change_state);

  g_object_class_install_property(
      gobject_class, PROP_SILENT,
      g_param_spec_boolean("silent", "Silent", "Post no per-buffer element messages (the EOS summary still goes)",
                           FALSE, static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_LAST_CHECKSUM,
      g_param_spec_string("last-checksum", "Last checksum",
                          "64-bit XXH3 (hex) of the last frame's visible bytes, padding excluded", nullptr,
                          static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "Tensor inspect", "Filter/Analyzer/Video",
                                        "Reads each frame through CUDA when a CUDA meta is present (else through "
                                        "the host) and posts a checksum and byte statistics",
                                        GST_TENSOR_MEM_AUTHOR);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_tensor_inspect_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_tensor_inspect_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_tensor_inspect_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_tensor_inspect_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_tensor_inspect_sink_event);
  trans_class->passthrough_on_same_caps = TRUE;
  trans_class->transform_ip_on_passthrough = TRUE;

  GST_DEBUG_CATEGORY_INIT(gst_tensor_inspect_debug, "tensorinspect", 0, "Tensor inspect");
}

static void gst_tensor_inspect_init(GstTensorMemInspect *self) {
  self->silent = FALSE;
  self->last_checksum = nullptr;
  self->waits = g_cancellable_new();
  self->have_info = FALSE;
  self->meta_tensors = 0;
  self->scratch = nullptr;
  self->scratch_size = 0;
  gst_video_info_init(&self->info);
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
