// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorconvert
 * @title: tensorconvert
 *
 * Turns each video frame into one model-input tensor in a single pass:
 * resized (stretch, letterbox or centre crop, bilinear), converted to RGB
 * (YUV inputs through the BT.601 / BT.709 matrix and range of their caps'
 * colorimetry, as videoconvert reads it), put in RGB or BGR order,
 * normalised as (x / 255 - mean) / std per channel for float outputs, laid
 * out as NCHW or NHWC and written as uint8, float16 or float32.
 *
 * Input: `video/x-raw` in RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8 (three
 * equal channels), NV12 or I420, in any CPU-mappable memory (system,
 * DMA-BUF, PBO tensor memory). Output: `other/tensors` caps as NNStreamer
 * defines them (`format=static`, `num_tensors=1`, `types`, `dimensions`
 * innermost first: NCHW is `W:H:3:1`, NHWC `3:W:H:1`), in system, DMA-BUF
 * or PBO tensor memory (`storage`, which also picks where the conversion
 * runs: system and dmabuf on the CPU, pbo on the GL worker). Each output
 * buffer carries a
 * #GstTensorMemResizeMeta saying where the frame landed in the tensor.
 *
 * The CPU path converts on `n-threads` threads, each a band of tensor rows,
 * reading the frame where it lies: nothing is copied. The GL path
 * (`storage=pbo`, or `auto` when the input is PBO memory or downstream takes
 * only `memory:TensorPBO`) runs one compute pass on the GL worker from the
 * input PBO into a pooled output PBO, fences the write and attaches the
 * fence meta, so `tensorcudaimport` hands the tensor to CUDA without a copy;
 * a frame that is not PBO memory is copied into a PBO first (counted in
 * `copied-bytes`, refused under `require-zero-copy`).
 *
 * Built against GStreamer 1.26 or later (GST_TENSOR_MEM_HAVE_TENSOR_META),
 * every tensor also carries a GstTensorMeta (GStreamer's analytics library)
 * describing it: id #GstTensorMemConvert:tensor-id, the data type, dims batch
 * first in the layout's order (NCHW: 1, 3, H, W), row-major and contiguous,
 * its data buffer sharing the tensor's own memory (no copy). `output=meta`
 * passes the video frame on instead, untouched, with the tensor (a pooled
 * buffer, the CPU path) attached as its GstTensorMeta, the way GStreamer's
 * inference elements carry tensors beside the frame so that tensor decoders
 * and overlays keep it; on GStreamer 1.28 its caps describe the tensor too
 * (the `tensors` field 1.28's tensor decoders read).
 *
 * #GstTensorMemConvert:model takes the size, layout, dtype, channel order,
 * normalisation and tensor id from the model's `.modelinfo` (GStreamer
 * 1.28's format), the file tensorinfer reads.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=10 ! tensorconvert width=640 height=640 resize=letterbox \
 *     mean="<0.485,0.456,0.406>" std="<0.229,0.224,0.225>" ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorconvert.h"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorconverter-private.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormodelinfo-private.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/gsttensorwritable-private.h>

#include <cmath>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_convert_debug);
#define GST_CAT_DEFAULT gst_tensor_convert_debug

namespace {

enum {
  PROP_0,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_RESIZE,
  PROP_PAD_VALUE,
  PROP_CHANNEL_ORDER,
  PROP_DTYPE,
  PROP_LAYOUT,
  PROP_MEAN,
  PROP_STD,
  PROP_STORAGE,
  PROP_N_THREADS,
  PROP_OUTPUT,
  PROP_TENSOR_ID,
  PROP_MODEL,
};

/* The element's own enums, one GType each (their values are the core's),
 * registered on first use. */
GType enum_type(GType *type, const char *name, const GEnumValue *values) {
  if (g_once_init_enter(type))
    g_once_init_leave(type, g_enum_register_static(name, values));
  return *type;
}

GType resize_mode_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(tensormem::ResizeMode::Stretch), "Scale each axis on its own", "stretch"},
      {static_cast<gint>(tensormem::ResizeMode::Letterbox), "Keep the aspect ratio, centre, pad the rest", "letterbox"},
      {static_cast<gint>(tensormem::ResizeMode::CropCenter), "Keep the aspect ratio, fill, crop the overhang evenly",
       "crop-center"},
      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemResizeMode", values);
}

GType channel_order_type() {
  static GType type = 0;
  static const GEnumValue values[] = {{static_cast<gint>(tensormem::ChannelOrder::Rgb), "Red first", "rgb"},
                                      {static_cast<gint>(tensormem::ChannelOrder::Bgr), "Blue first", "bgr"},
                                      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemChannelOrder", values);
}

/* Output element types, named as NNStreamer's `types` field names them. */
GType dtype_type() {
  static GType type = 0;
  static const GEnumValue values[] = {{static_cast<gint>(tensormem::DType::U8), "8-bit unsigned, 0-255", "uint8"},
                                      {static_cast<gint>(tensormem::DType::F16), "IEEE half, normalised", "float16"},
                                      {static_cast<gint>(tensormem::DType::F32), "IEEE single, normalised", "float32"},
                                      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemConvertDType", values);
}

GType layout_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(tensormem::TensorLayout::Nchw), "Channel planes (N, C, H, W)", "nchw"},
      {static_cast<gint>(tensormem::TensorLayout::Nhwc), "Interleaved channels (N, H, W, C)", "nhwc"},
      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemTensorLayout", values);
}

GType output_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(gst_tensormem::ConvertOutput::Tensor), "The tensor itself (other/tensors)", "tensor"},
      {static_cast<gint>(gst_tensormem::ConvertOutput::Meta),
       "The video frame, with the tensor attached as a GstTensorMeta (GStreamer 1.26)", "meta"},
      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemConvertOutput", values);
}

} // namespace

struct _GstTensorMemConvert {
  GstTensorMemTransform parent;
  gst_tensormem::ConvertSettings *settings;  // the properties; guarded by the object lock
  gst_tensormem::TensorConverter *converter; // negotiation, pool and both paths; streaming thread
  gchar *model;                              // the `model` property; under the object lock
  gchar *model_error;                        // why its .modelinfo could not configure the element; NULL when it did
};

G_DEFINE_TYPE_WITH_CODE(GstTensorMemConvert, gst_tensor_convert, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_convert_debug, "tensorconvert", 0,
                                                "video frame to model-input tensor"))

namespace {

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            // Sizes stay open here so that a frame size nobody can convert reaches
                            // set_caps and ends in this element's error naming it.
                            GST_STATIC_CAPS("video/x-raw(ANY), format=(string){ RGBA, BGRA, RGBx, BGRx, RGB, BGR, "
                                            "GRAY8, NV12, I420 }" GST_TENSOR_MEM_DMA_DRM_TEMPLATE));
constexpr const char *kTensorCaps =
    "other/tensors, format=(string)static, num_tensors=(int)1, types=(string){ uint8, float16, float32 }";
#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* output=meta: the frame goes on, the tensor beside it. */
constexpr const char *kMetaCaps = "video/x-raw(ANY), format=(string){ RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8, NV12, "
                                  "I420 }" GST_TENSOR_MEM_DMA_DRM_TEMPLATE;
#else
constexpr const char *kMetaCaps = nullptr;
#endif

gst_tensormem::ConvertSettings settings_of(GstTensorMemConvert *self) {
  GST_OBJECT_LOCK(self);
  gst_tensormem::ConvertSettings s = *self->settings;
  GST_OBJECT_UNLOCK(self);
  return s;
}

void set_array(std::vector<double> *out, const GValue *value) {
  out->clear();
  for (guint i = 0; i < gst_value_array_get_size(value); ++i) {
    const GValue *v = gst_value_array_get_value(value, i);
    out->push_back(G_VALUE_HOLDS_DOUBLE(v) ? g_value_get_double(v) : G_VALUE_HOLDS_INT(v) ? g_value_get_int(v) : NAN);
  }
}

void get_array(const std::vector<double> &values, GValue *value) {
  for (double d : values) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_DOUBLE);
    g_value_set_double(&v, d);
    gst_value_array_append_and_take_value(value, &v);
  }
}

GstCaps *gst_tensor_convert_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                           GstCaps *filter) {
  auto *self = GST_TENSOR_CONVERT(trans);
  const gst_tensormem::ConvertSettings s = settings_of(self);
  GstCaps *result;
  if (GST_TENSOR_MEM_HAVE_TENSOR_META && s.output == gst_tensormem::ConvertOutput::Meta) // the frame passes
    result = gst_tensormem::TensorConverter::frame_caps(s, caps, direction);
  else if (direction == GST_PAD_SINK)
    result = gst_tensormem::TensorConverter::tensor_caps(s, caps);
  else // any frame size can become the tensor; the formats are the template's
    result = gst_pad_get_pad_template_caps(GST_BASE_TRANSFORM_SINK_PAD(trans));
  if (filter) {
    // Tensor caps keep this element's order (PBO first for PBO input, so
    // auto stays on the GPU), whatever order a permissive peer lists.
    GstCaps *both = direction == GST_PAD_SINK ? gst_caps_intersect_full(result, filter, GST_CAPS_INTERSECT_FIRST)
                                              : gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = both;
  }
  GST_DEBUG_OBJECT(self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src", caps,
                   result);
  return result;
}

/* The frame's running time: a batch's slot pool puts the tensor into the
 * batch of that time. */
GstClockTime running_time_of(GstBaseTransform *trans, GstBuffer *inbuf) {
  return trans->segment.format == GST_FORMAT_TIME && GST_BUFFER_PTS_IS_VALID(inbuf)
             ? gst_segment_to_running_time(&trans->segment, GST_FORMAT_TIME, GST_BUFFER_PTS(inbuf))
             : GST_CLOCK_TIME_NONE;
}

gboolean gst_tensor_convert_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_CONVERT(trans);
  return self->converter->set_caps(settings_of(self), incaps, outcaps);
}

/* A batching element downstream (tensorbatch) proposes a pool of its slots:
 * the CPU path then writes each tensor straight into its slot (output=meta
 * before 1.28: once it has the tensor's description, sent here). */
gboolean gst_tensor_convert_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_TENSOR_CONVERT(trans);
  if (!GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->decide_allocation(trans, query))
    return FALSE;
  self->converter->adopt_slot_pool(query, trans->srcpad);
  return TRUE;
}

GstFlowReturn gst_tensor_convert_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer **outbuf) {
  auto *self = GST_TENSOR_CONVERT(trans);
  GST_OBJECT_LOCK(self);
  const bool output_meta = self->settings->output == gst_tensormem::ConvertOutput::Meta;
  GST_OBJECT_UNLOCK(self);
  if (output_meta) { // the frame itself, its metadata writable (its memory shared, not copied), its metas kept
    *outbuf = gst_buffer_is_writable(inbuf) ? inbuf : gst_tensormem::make_buffer_writable(gst_buffer_ref(inbuf));
    return GST_FLOW_OK;
  }
  const GstFlowReturn acquired = self->converter->acquire(outbuf, running_time_of(trans, inbuf));
  if (acquired == GST_FLOW_OK)
    gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM_CAST(self), inbuf, *outbuf);
  return acquired;
}

GstFlowReturn allow_copy(GstElement *element, GstBuffer *inbuf, const char *refusal, const char *why) {
  return gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM_CAST(element), inbuf, refusal, why);
}

GstFlowReturn gst_tensor_convert_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_TENSOR_CONVERT(trans);
  const gst_tensormem::ConvertHooks hooks{gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)), allow_copy,
                                          running_time_of(trans, inbuf)};
  gsize copied = 0;
  const GstFlowReturn ret = self->converter->convert(inbuf, outbuf, hooks, &copied);
  if (ret == GST_FLOW_OK)
    gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), copied);
  return ret;
}

/* What the model's .modelinfo says of its input, as this element's
 * settings: size and layout from `dims` (N,3,H,W or N,H,W,3; -1 keeps the
 * frame's size), dtype from `type`, channel order from a 1.1 file's `caps`
 * format, and mean and std from `ranges` (a channel's [min, max] is
 * x / 255 * (max - min) + min, i.e. std = 1 / (max - min) and
 * mean = -min * std; no ranges: [0, 1]). False with `*error` naming the
 * file and what does not fit. The tensor's id is the input's `id`, which
 * tensorinfer looks for. */
bool settings_from_model(const std::string &model, gst_tensormem::ConvertSettings *s, std::string *error) {
  std::unique_ptr<gst_tensormem::ModelInfoFile> file = gst_tensormem::ModelInfoFile::load(model, error);
  if (!file) {
    if (error->empty())
      *error = "no " + model + ".modelinfo (nor the model's name with .modelinfo for its extension)";
    return false;
  }
  const gst_tensormem::ModelInfoSection *in = file->first_input();
  const std::string where = file->path() + ": ";
  if (!in) {
    *error = where + "no tensor with dir=input";
    return false;
  }
  const std::string tensor = where + "[" + in->name + "] ";
  const std::vector<std::int64_t> &d = in->dims;
  if (d.size() != 4 || (d[1] != 3 && d[3] != 3)) {
    *error = tensor + "dims are not N,3,H,W or N,H,W,3: tensorconvert makes 3-channel image tensors";
    return false;
  }
  const bool nchw = d[1] == 3;
  const std::int64_t h = nchw ? d[2] : d[1], w = nchw ? d[3] : d[2];
  if (in->type == "float32")
    s->dtype = tensormem::DType::F32;
  else if (in->type == "float16")
    s->dtype = tensormem::DType::F16;
  else if (in->type == "uint8")
    s->dtype = tensormem::DType::U8;
  else {
    *error = tensor + "type " + in->type + ": tensorconvert writes float32, float16 or uint8";
    return false;
  }
  std::vector<std::pair<double, double>> ranges = in->ranges;
  if (ranges.empty())
    ranges.emplace_back(0.0, s->dtype == tensormem::DType::U8 ? 255.0 : 1.0);
  if (ranges.size() != 1 && ranges.size() != 3) {
    *error = tensor + "ranges has " + std::to_string(ranges.size()) +
             " entries; the tensor has 3 channels (give 3, or 1 for all)";
    return false;
  }
  std::vector<double> mean, std_dev;
  for (const auto &[lo, hi] : ranges) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) {
      *error = tensor + "a range's max is not above its min";
      return false;
    }
    if (s->dtype == tensormem::DType::U8 && (lo != 0.0 || hi != 255.0)) {
      *error = tensor + "uint8 with a range other than 0,255: tensorconvert writes uint8 tensors unscaled";
      return false;
    }
    std_dev.push_back(1.0 / (hi - lo));
    mean.push_back(-lo / (hi - lo));
  }
  s->layout = nchw ? tensormem::TensorLayout::Nchw : tensormem::TensorLayout::Nhwc;
  s->width = w > 0 ? static_cast<guint>(w) : 0;
  s->height = h > 0 ? static_cast<guint>(h) : 0;
  s->mean = mean;
  s->std_dev = std_dev;
  if (!in->id.empty())
    s->tensor_id = in->id;
  if (g_str_has_prefix(in->format.c_str(), "BGR"))
    s->order = tensormem::ChannelOrder::Bgr;
  else if (g_str_has_prefix(in->format.c_str(), "RGB"))
    s->order = tensormem::ChannelOrder::Rgb;
  return true;
}

gboolean gst_tensor_convert_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_CONVERT(trans);
  GST_OBJECT_LOCK(self);
  const std::string error = self->model_error ? self->model_error : "";
  const std::string model = self->model ? self->model : "";
  GST_OBJECT_UNLOCK(self);
  if (!error.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("tensorconvert cannot take its settings from model=%s: %s", model.c_str(), error.c_str()),
                      (nullptr));
    return FALSE;
  }
  return self->converter->start(settings_of(self));
}

gboolean gst_tensor_convert_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_CONVERT(trans);
  self->converter->stop();
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->stop(trans);
}

} // namespace

static void gst_tensor_convert_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_CONVERT(object);
  GST_OBJECT_LOCK(self);
  gst_tensormem::ConvertSettings &s = *self->settings;
  switch (prop_id) {
  case PROP_WIDTH: s.width = g_value_get_uint(value); break;
  case PROP_HEIGHT: s.height = g_value_get_uint(value); break;
  case PROP_RESIZE: s.resize = static_cast<tensormem::ResizeMode>(g_value_get_enum(value)); break;
  case PROP_PAD_VALUE: s.pad_value = g_value_get_uint(value); break;
  case PROP_CHANNEL_ORDER: s.order = static_cast<tensormem::ChannelOrder>(g_value_get_enum(value)); break;
  case PROP_DTYPE: s.dtype = static_cast<tensormem::DType>(g_value_get_enum(value)); break;
  case PROP_LAYOUT: s.layout = static_cast<tensormem::TensorLayout>(g_value_get_enum(value)); break;
  case PROP_MEAN: set_array(&s.mean, value); break;
  case PROP_STD: set_array(&s.std_dev, value); break;
  case PROP_STORAGE: s.storage = static_cast<GstTensorMemStorage>(g_value_get_enum(value)); break;
  case PROP_N_THREADS: s.n_threads = g_value_get_uint(value); break;
  case PROP_OUTPUT: s.output = static_cast<gst_tensormem::ConvertOutput>(g_value_get_enum(value)); break;
  case PROP_TENSOR_ID: s.tensor_id = g_value_get_string(value) ? g_value_get_string(value) : "input"; break;
  case PROP_MODEL: {
    g_free(self->model);
    g_clear_pointer(&self->model_error, g_free);
    self->model = g_value_dup_string(value);
    std::string error;
    gst_tensormem::ConvertSettings from_model = s;
    if (self->model && !settings_from_model(self->model, &from_model, &error))
      self->model_error = g_strdup(error.c_str());
    else if (self->model)
      s = from_model;
    break;
  }
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
  if (prop_id == PROP_MODEL)
    for (const char *name : {"width", "height", "layout", "dtype", "channel-order", "mean", "std"})
      g_object_notify(object, name);
  // A new tensor shape or type means new output caps.
  if (prop_id != PROP_N_THREADS && prop_id != PROP_TENSOR_ID)
    gst_base_transform_reconfigure_src(GST_BASE_TRANSFORM(self));
}

static void gst_tensor_convert_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_CONVERT(object);
  GST_OBJECT_LOCK(self);
  const gst_tensormem::ConvertSettings &s = *self->settings;
  switch (prop_id) {
  case PROP_WIDTH: g_value_set_uint(value, s.width); break;
  case PROP_HEIGHT: g_value_set_uint(value, s.height); break;
  case PROP_RESIZE: g_value_set_enum(value, static_cast<gint>(s.resize)); break;
  case PROP_PAD_VALUE: g_value_set_uint(value, s.pad_value); break;
  case PROP_CHANNEL_ORDER: g_value_set_enum(value, static_cast<gint>(s.order)); break;
  case PROP_DTYPE: g_value_set_enum(value, static_cast<gint>(s.dtype)); break;
  case PROP_LAYOUT: g_value_set_enum(value, static_cast<gint>(s.layout)); break;
  case PROP_MEAN: get_array(s.mean, value); break;
  case PROP_STD: get_array(s.std_dev, value); break;
  case PROP_STORAGE: g_value_set_enum(value, s.storage); break;
  case PROP_N_THREADS: g_value_set_uint(value, s.n_threads); break;
  case PROP_OUTPUT: g_value_set_enum(value, static_cast<gint>(s.output)); break;
  case PROP_TENSOR_ID: g_value_set_string(value, s.tensor_id.c_str()); break;
  case PROP_MODEL: g_value_set_string(value, self->model); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_tensor_convert_finalize(GObject *object) {
  auto *self = GST_TENSOR_CONVERT(object);
  delete self->converter;
  delete self->settings;
  g_free(self->model);
  g_free(self->model_error);
  G_OBJECT_CLASS(gst_tensor_convert_parent_class)->finalize(object);
}

/* The GL worker is shared with the rest of the pipeline through GstContext. */
static void gst_tensor_convert_set_context(GstElement *element, GstContext *context) {
  GST_TENSOR_CONVERT(element)->converter->handle_set_context(context);
  GST_ELEMENT_CLASS(gst_tensor_convert_parent_class)->set_context(element, context);
}

static gboolean gst_tensor_convert_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  return GST_TENSOR_CONVERT(trans)->converter->handle_context_query(query) ||
         GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->query(trans, direction, query);
}

/* Back in NULL the element lets go of its GL worker, so the next run takes
 * whatever the pipeline (or the application) shares then. */
static GstStateChangeReturn gst_tensor_convert_change_state(GstElement *element, GstStateChange transition) {
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_tensor_convert_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    GST_TENSOR_CONVERT(element)->converter->close();
  return ret;
}

static void gst_tensor_convert_class_init(GstTensorMemConvertClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_tensor_convert_set_property;
  gobject_class->get_property = gst_tensor_convert_get_property;
  gobject_class->finalize = gst_tensor_convert_finalize;

  constexpr auto kRw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      gobject_class, PROP_WIDTH,
      g_param_spec_uint("width", "Width", "Tensor width in pixels (0: the frame's)", 0, 32767, 0, kRw));
  g_object_class_install_property(
      gobject_class, PROP_HEIGHT,
      g_param_spec_uint("height", "Height", "Tensor height in pixels (0: the frame's)", 0, 32767, 0, kRw));
  g_object_class_install_property(gobject_class, PROP_RESIZE,
                                  g_param_spec_enum("resize", "Resize", "How the frame is fitted into the tensor",
                                                    resize_mode_type(),
                                                    static_cast<gint>(tensormem::ResizeMode::Stretch), kRw));
  g_object_class_install_property(
      gobject_class, PROP_PAD_VALUE,
      g_param_spec_uint("pad-value", "Pad value",
                        "Value (0-255, input units) of every channel of a letterbox padding pixel, normalised like "
                        "any other",
                        0, 255, 0, kRw));
  g_object_class_install_property(gobject_class, PROP_CHANNEL_ORDER,
                                  g_param_spec_enum("channel-order", "Channel order", "Order of the tensor's channels",
                                                    channel_order_type(),
                                                    static_cast<gint>(tensormem::ChannelOrder::Rgb), kRw));
  g_object_class_install_property(
      gobject_class, PROP_DTYPE,
      g_param_spec_enum("dtype", "Element type",
                        "Tensor element type; float types are normalised, uint8 holds 0-255 as is", dtype_type(),
                        static_cast<gint>(tensormem::DType::F32), kRw));
  g_object_class_install_property(gobject_class, PROP_LAYOUT,
                                  g_param_spec_enum("layout", "Layout", "Tensor layout (batch of one)", layout_type(),
                                                    static_cast<gint>(tensormem::TensorLayout::Nchw), kRw));
  g_object_class_install_property(
      gobject_class, PROP_MEAN,
      gst_param_spec_array(
          "mean", "Mean",
          "Per output channel (in channel-order), subtracted after dividing by 255: "
          "(x / 255 - mean) / std; one value applies to all channels",
          g_param_spec_double("value", "Value", "One channel's mean", -G_MAXDOUBLE, G_MAXDOUBLE, 0, kRw), kRw));
  g_object_class_install_property(
      gobject_class, PROP_STD,
      gst_param_spec_array(
          "std", "Standard deviation", "Per output channel (in channel-order), the divisor of (x / 255 - mean); not 0",
          g_param_spec_double("value", "Value", "One channel's standard deviation", -G_MAXDOUBLE, G_MAXDOUBLE, 1, kRw),
          kRw));
  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum("storage", "Storage",
                        "Tensor memory of the output, which picks where the conversion runs: system or dmabuf "
                        "(CPU threads), pbo (a GL compute pass), or auto: PBO when the input is PBO memory or "
                        "downstream takes only PBO memory, else system",
                        GST_TYPE_TENSOR_MEM_STORAGE, GST_TENSOR_MEM_STORAGE_AUTO, kRw));
  g_object_class_install_property(gobject_class, PROP_N_THREADS,
                                  g_param_spec_uint("n-threads", "Threads",
                                                    "Threads converting one frame (0: one per CPU, at most 8)", 0, 64,
                                                    0, kRw));
  g_object_class_install_property(
      gobject_class, PROP_OUTPUT,
      g_param_spec_enum("output", "Output",
                        "What goes downstream: the tensor (other/tensors), or the video frame with the tensor "
                        "attached as a GstTensorMeta (needs GStreamer 1.26; CPU path)",
                        output_type(), static_cast<gint>(gst_tensormem::ConvertOutput::Tensor),
                        static_cast<GParamFlags>(kRw | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_TENSOR_ID,
      g_param_spec_string("tensor-id", "Tensor id",
                          "The id of the GstTensorMeta's tensor (GStreamer 1.26), e.g. the model input's name", "input",
                          kRw));
  g_object_class_install_property(
      gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
                          "A model whose .modelinfo (GStreamer 1.28's format; MODEL.modelinfo) sets width, height, "
                          "layout, dtype, channel-order, mean, std and tensor-id from its input tensor's dims, "
                          "type, caps and ranges; a property set after this one overrides it",
                          nullptr, kRw));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  // The tensor's memories are the table's: plain caps for the CPU path, the
  // GL pass's family where this build has one.
  GstCaps *src_caps = gst_tensormem::TensorConverter::src_template_caps(kTensorCaps, kMetaCaps);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src_caps));
  gst_caps_unref(src_caps);
  gst_element_class_set_static_metadata(element_class, "Tensor convert", "Filter/Converter/Video",
                                        "Turns video frames into one model-input tensor: resize, colour, "
                                        "normalisation, layout and type in one pass",
                                        GST_TENSOR_MEM_AUTHOR);
  element_class->set_context = gst_tensor_convert_set_context;
  trans_class->query = gst_tensor_convert_query;
  element_class->change_state = gst_tensor_convert_change_state;
  trans_class->transform_caps = gst_tensor_convert_transform_caps;
  trans_class->set_caps = gst_tensor_convert_set_caps;
  trans_class->prepare_output_buffer = gst_tensor_convert_prepare_output_buffer;
  trans_class->decide_allocation = gst_tensor_convert_decide_allocation;
  trans_class->transform = gst_tensor_convert_transform;
  trans_class->start = gst_tensor_convert_start;
  trans_class->stop = gst_tensor_convert_stop;
  trans_class->passthrough_on_same_caps = FALSE;
  gst_type_mark_as_plugin_api(resize_mode_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(channel_order_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(dtype_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(layout_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(output_type(), static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_convert_init(GstTensorMemConvert *self) {
  self->settings = new gst_tensormem::ConvertSettings();
  self->converter = new gst_tensormem::TensorConverter(GST_ELEMENT_CAST(self));
}
