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
 * or PBO tensor memory (`storage`). Each output buffer carries a
 * #GstTensorMemResizeMeta saying where the frame landed in the tensor.
 *
 * The CPU path converts on `n-threads` threads, each a band of tensor rows,
 * reading the frame where it lies: nothing is copied. The GL path
 * (`backend=gl`, or `auto` when the input is PBO memory or downstream takes
 * only `memory:TensorPBO`) runs one compute pass on the GL worker from the
 * input PBO into a pooled output PBO, fences the write and attaches the
 * fence meta, so `tensorcudaimport` hands the tensor to CUDA without a copy;
 * a frame that is not PBO memory is copied into a PBO first (counted in
 * `copied-bytes`, refused under `require-zero-copy`).
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

#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorpbo.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/video/video.h>

#include <tensormem/frame_convert.hpp>
#if GST_TENSORMEM_HAVE_GL
#include <tensormem/gl_convert.hpp>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
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
  PROP_BACKEND,
  PROP_STORAGE,
  PROP_N_THREADS,
  PROP_COPIED_BYTES,
  PROP_REQUIRE_ZERO_COPY,
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

enum Backend { BACKEND_AUTO = 0, BACKEND_CPU = 1, BACKEND_GL = 2 };

GType backend_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {BACKEND_AUTO, "GL when the input is PBO memory or downstream asks for it, else the CPU", "auto"},
      {BACKEND_CPU, "CPU threads", "cpu"},
      {BACKEND_GL, "A GL compute pass on the GL worker, into PBO tensor memory", "gl"},
      {0, nullptr, nullptr}};
  return enum_type(&type, "GstTensorMemConvertBackend", values);
}

const char *dtype_caps_name(tensormem::DType dtype) {
  switch (dtype) {
  case tensormem::DType::U8: return "uint8";
  case tensormem::DType::F16: return "float16";
  default: return "float32";
  }
}

/* NNStreamer's dimension string: innermost first, batch last. */
std::string dimensions_of(tensormem::TensorLayout layout, guint width, guint height) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  return layout == tensormem::TensorLayout::Nchw ? w + ":" + h + ":3:1" : "3:" + w + ":" + h + ":1";
}

/* Threads that convert bands of rows with the streaming thread: run() hands
 * out band indices until all are done and returns when the last finished. */
class RowWorkers {
public:
  explicit RowWorkers(guint threads) {
    for (guint i = 1; i < threads; ++i) {
      try {
        threads_.emplace_back([this] { serve(); });
      } catch (const std::system_error &) {
        break; // fewer helpers; the caller's thread still converts
      }
    }
  }
  ~RowWorkers() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  RowWorkers(const RowWorkers &) = delete;
  RowWorkers &operator=(const RowWorkers &) = delete;

  guint threads() const { return static_cast<guint>(threads_.size()) + 1; }

  void run(guint bands, const std::function<void(guint)> &band) {
    std::unique_lock lock(mu_);
    job_ = &band;
    next_ = 0;
    total_ = bands;
    finished_ = 0;
    work_.notify_all();
    take_bands(lock);
    done_.wait(lock, [this] { return finished_ == total_; });
    job_ = nullptr;
  }

private:
  void take_bands(std::unique_lock<std::mutex> &lock) {
    while (job_ && next_ < total_) {
      const guint index = next_++;
      const std::function<void(guint)> *job = job_;
      lock.unlock();
      (*job)(index);
      lock.lock();
      if (++finished_ == total_)
        done_.notify_all();
    }
  }

  void serve() {
    std::unique_lock lock(mu_);
    while (true) {
      work_.wait(lock, [this] { return stop_ || (job_ && next_ < total_); });
      if (stop_)
        return;
      take_bands(lock);
    }
  }

  std::mutex mu_;
  std::condition_variable work_, done_;
  const std::function<void(guint)> *job_ = nullptr;
  guint next_ = 0, total_ = 0, finished_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/* The GL path's state between set_caps and stop. */
struct GlPath {
#if GST_TENSORMEM_HAVE_GL
  std::shared_ptr<tensormem::GlFrameConverter> pass;
  std::optional<tensormem::Tensor> staging; // a frame in other memory is copied here on the way
#endif
};

} // namespace

struct _GstTensorMemConvert {
  GstBaseTransform parent;

  // Properties, guarded by the object lock.
  guint width;
  guint height;
  tensormem::ResizeMode resize;
  guint pad_value;
  tensormem::ChannelOrder order;
  tensormem::DType dtype;
  tensormem::TensorLayout layout;
  std::vector<double> *mean;
  std::vector<double> *std_dev;
  gint backend;
  GstTensorMemStorage storage;
  guint n_threads;
  guint64 copied_bytes;
  gboolean require_zero_copy;
  GstTensorMemGlWorker *gl_worker; // shared through GstContext; guarded by the object lock
  GCancellable *waits;             // cancelled on flush-start and PAUSED→READY

  // Streaming thread (set_caps, transform) and start/stop.
  GstVideoInfo in_info;
  std::optional<tensormem::FrameConverter> *converter;
  GstBufferPool *pool;
  RowWorkers *workers;
  GlPath *gl;  // the GL pass, when set_caps chose PBO output
  bool use_gl; // set_caps chose the GL path
  guint64 frames;
};

G_DEFINE_TYPE_WITH_CODE(GstTensorMemConvert, gst_tensor_convert, GST_TYPE_BASE_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_convert_debug, "tensorconvert", 0,
                                                "video frame to model-input tensor"))

namespace {

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    // Sizes stay open here so that a frame size nobody can convert reaches
    // set_caps and ends in this element's error naming it.
    GST_STATIC_CAPS("video/x-raw(ANY), format=(string){ RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8, NV12, I420 }"));
#define CONVERT_TENSOR_CAPS(features)                                                                                  \
  "other/tensors" features ", format=(string)static, num_tensors=(int)1, types=(string){ uint8, float16, float32 }"
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(CONVERT_TENSOR_CAPS("") "; " CONVERT_TENSOR_CAPS("(" GST_CAPS_FEATURE_MEMORY_TENSOR_PBO ")")));

/* A snapshot of the properties for one negotiation. */
struct Settings {
  guint width, height;
  tensormem::ResizeMode resize;
  guint pad_value;
  tensormem::ChannelOrder order;
  tensormem::DType dtype;
  tensormem::TensorLayout layout;
  std::vector<double> mean, std_dev;
  GstTensorMemStorage storage;
  guint n_threads;
  gint backend;
};

Settings settings_of(GstTensorMemConvert *self) {
  GST_OBJECT_LOCK(self);
  Settings s{self->width,  self->height, self->resize,   self->pad_value, self->order,     self->dtype,
             self->layout, *self->mean,  *self->std_dev, self->storage,   self->n_threads, self->backend};
  GST_OBJECT_UNLOCK(self);
  return s;
}

/* Which output memories a frame can become, best first: PBO tensor memory
 * (the GL path) and plain system or DMA-BUF memory (the CPU path).
 * backend=auto with storage=auto takes PBO when the input is PBO memory
 * already, or when downstream accepts nothing else. */
struct Outputs {
  bool pbo, plain, pbo_first;
};
Outputs outputs_for(const Settings &s, bool pbo_input) {
  if (!GST_TENSORMEM_HAVE_GL || s.backend == BACKEND_CPU)
    return {false, true, false};
  if (s.backend == BACKEND_GL || s.storage == GST_TENSOR_STORAGE_PBO)
    return {true, false, true};
  if (s.storage == GST_TENSOR_STORAGE_AUTO)
    return {true, true, pbo_input};
  return {false, true, false};
}

bool has_pbo_feature(const GstCaps *caps, guint index) {
  const GstCapsFeatures *features = gst_caps_get_features(caps, index);
  return features && !gst_caps_features_is_any(features) &&
         gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_TENSOR_PBO);
}

/* A per-channel property as three values: one value applies to every
 * channel. FALSE, with `*why` set, for any other count. */
bool three_values(const std::vector<double> &values, const char *name, std::array<float, 3> *out, std::string *why) {
  if (values.size() == 1) {
    out->fill(static_cast<float>(values[0]));
    return true;
  }
  if (values.size() == 3) {
    for (std::size_t c = 0; c < 3; ++c)
      (*out)[c] = static_cast<float>(values[c]);
    return true;
  }
  *why = std::string(name) + " has " + std::to_string(values.size()) +
         " values; give one per output channel (3) or one for all";
  return false;
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

/* Output caps for one input structure: the tensor's type always, its
 * dimensions where the input size (and so the output size) is known. */
GstStructure *tensor_structure(const Settings &s, const GstStructure *in) {
  GstStructure *out = gst_structure_new("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT,
                                        1, "types", G_TYPE_STRING, dtype_caps_name(s.dtype), nullptr);
  gint w = 0, h = 0;
  const bool sized = gst_structure_get_int(in, "width", &w) && gst_structure_get_int(in, "height", &h);
  if (sized) {
    const guint ow = s.width ? s.width : static_cast<guint>(w);
    const guint oh = s.height ? s.height : static_cast<guint>(h);
    gst_structure_set(out, "dimensions", G_TYPE_STRING, dimensions_of(s.layout, ow, oh).c_str(), nullptr);
  } else if (s.width && s.height) {
    gst_structure_set(out, "dimensions", G_TYPE_STRING, dimensions_of(s.layout, s.width, s.height).c_str(), nullptr);
  }
  if (const GValue *rate = gst_structure_get_value(in, "framerate"))
    gst_structure_set_value(out, "framerate", rate);
  return out;
}

GstCaps *gst_tensor_convert_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                           GstCaps *filter) {
  auto *self = GST_TENSOR_CONVERT(trans);
  GstCaps *result;
  if (direction == GST_PAD_SINK) {
    const Settings s = settings_of(self);
    result = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      GstStructure *tensor = tensor_structure(s, gst_caps_get_structure(caps, i));
      const Outputs out = outputs_for(s, has_pbo_feature(caps, i));
      auto add_pbo = [&] {
        result = gst_caps_merge_structure_full(result, gst_structure_copy(tensor),
                                               gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_TENSOR_PBO, nullptr));
      };
      if (out.pbo && out.pbo_first)
        add_pbo();
      if (out.plain)
        result = gst_caps_merge_structure(result, gst_structure_copy(tensor));
      if (out.pbo && !out.pbo_first)
        add_pbo();
      gst_structure_free(tensor);
    }
  } else {
    // Any frame size can become the tensor; the formats are the template's.
    result = gst_pad_get_pad_template_caps(GST_BASE_TRANSFORM_SINK_PAD(trans));
  }
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

void drop_pool(GstTensorMemConvert *self) {
  if (self->pool) {
    gst_buffer_pool_set_active(self->pool, FALSE);
    gst_object_unref(self->pool);
    self->pool = nullptr;
  }
}

void attach_resize_meta(GstBuffer *outbuf, const tensormem::FrameConverter &converter);

/* The element's GL worker, found through GstContext or made here; FALSE
 * with `*why` set when none can be had. */
bool ensure_worker(GstTensorMemConvert *self, std::string *why) {
  GError *error = nullptr;
  if (gst_tensor_gl_worker_ensure(GST_ELEMENT(self), &self->gl_worker, &error))
    return true;
  *why = error ? error->message : "no GL worker could be had";
  g_clear_error(&error);
  return false;
}

#if GST_TENSORMEM_HAVE_GL
/* The core of the element's GL worker, or null. */
std::shared_ptr<tensormem::GlWorker> core_worker(GstTensorMemConvert *self) {
  GST_OBJECT_LOCK(self);
  GstTensorMemGlWorker *worker = self->gl_worker ? GST_TENSOR_GL_WORKER(gst_object_ref(self->gl_worker)) : nullptr;
  GST_OBJECT_UNLOCK(self);
  if (!worker)
    return nullptr;
  std::shared_ptr<tensormem::GlWorker> core = gst_tensor_gl_worker_get_core_gl_worker(worker);
  gst_object_unref(worker);
  return core;
}
#endif

/* The GL path for `converter`: the compiled pass, and an allocator of PBO
 * memory on the same worker (a new reference) whose buffers hold
 * `*buffer_bytes`. NULL after posting the error. */
GstAllocator *prepare_gl(GstTensorMemConvert *self, const tensormem::FrameConverter &converter, gsize *buffer_bytes) {
#if GST_TENSORMEM_HAVE_GL
  std::string why;
  if (!ensure_worker(self, &why)) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("PBO tensor output needs a GL worker: %s", why.c_str()),
                      ("use backend=cpu with storage=system or dmabuf on a machine without a usable EGL"));
    return nullptr;
  }
  std::shared_ptr<tensormem::GlWorker> core = core_worker(self);
  tensormem::Result<std::shared_ptr<tensormem::GlFrameConverter>> pass =
      tensormem::GlFrameConverter::create(core, converter);
  if (!pass) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED,
                      ("The GL conversion pass cannot be made: %s", pass.error().message().c_str()),
                      ("GL worker %s; use backend=cpu", core ? core->info().version.c_str() : "(none)"));
    return nullptr;
  }
  self->gl->pass = std::move(*pass);
  *buffer_bytes = self->gl->pass->padded_output_bytes();
  GST_OBJECT_LOCK(self);
  GstAllocator *allocator = gst_tensor_pbo_allocator_new(self->gl_worker);
  GST_OBJECT_UNLOCK(self);
  GST_INFO_OBJECT(self, "GL compute pass on %s (%s)", core->info().renderer.c_str(), core->info().version.c_str());
  return allocator;
#else
  (void)converter;
  (void)buffer_bytes;
  GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("PBO tensor output needs OpenGL, which this build lacks"), (nullptr));
  return nullptr;
#endif
}

#if GST_TENSORMEM_HAVE_GL
constexpr GstClockTime kFenceTimeout = 5 * GST_SECOND;

/* The pass reads the input after its producers' writes: EGL fences are
 * waited for on the GL queue, other kinds on the CPU. */
GstFlowReturn wait_input_fences(GstTensorMemConvert *self, GstBuffer *inbuf) {
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(inbuf, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *fence = reinterpret_cast<GstTensorMemFenceMeta *>(meta);
    GError *error = nullptr;
    if (gst_tensor_mem_fence_meta_wait_gpu(fence, self->gl_worker, &error))
      continue;
    if (g_error_matches(error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED)) {
      g_clear_error(&error);
      if (gst_tensor_mem_fence_meta_wait_cpu_cancellable(fence, kFenceTimeout, self->waits, &error))
        continue;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_clear_error(&error);
      return GST_FLOW_FLUSHING;
    }
    const GstFlowReturn ret = gst_tensor_mem_element_post_fence_error(GST_ELEMENT(self), inbuf, kFenceTimeout, error);
    g_clear_error(&error);
    return ret;
  }
  return GST_FLOW_OK;
}

/* Plane offsets and strides of `inbuf` as its GstVideoMeta (or the caps)
 * say, plus the memory's offset into its GL buffer. */
void source_layout(GstTensorMemConvert *self, GstBuffer *inbuf, gsize memory_offset, tensormem::GlFrameSource *src) {
  const GstVideoMeta *meta = gst_buffer_get_video_meta(inbuf);
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&self->in_info) && p < tensormem::kMaxPlanes; ++p) {
    src->offset[p] = memory_offset + (meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&self->in_info, p));
    src->stride[p] = static_cast<std::size_t>(meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&self->in_info, p));
  }
}

/* A frame in system, DMA-BUF or another worker's memory: copied row by row
 * into the staging PBO (laid out as the caps say), counted in
 * copied-bytes; refused under require-zero-copy. */
GstFlowReturn stage_frame(GstTensorMemConvert *self, GstBuffer *inbuf, tensormem::GlFrameSource *src) {
  GST_OBJECT_LOCK(self);
  const bool zero_copy = self->require_zero_copy;
  GST_OBJECT_UNLOCK(self);
  GstMemory *first = gst_buffer_n_memory(inbuf) ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  const char *kind = first && first->allocator ? first->allocator->mem_type : "unknown";
  if (zero_copy) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED,
                      ("require-zero-copy=true: frame %" G_GUINT64_FORMAT " is in %s memory, which the GL pass "
                       "reads only after a copy into a PBO",
                       self->frames, kind),
                      ("feed PBO tensor memory of the same GL worker (tensorupload storage=pbo), or set "
                       "require-zero-copy=false"));
    return GST_FLOW_ERROR;
  }
  const GstFlowReturn fenced =
      gst_tensor_mem_element_wait_fences(GST_ELEMENT(self), inbuf, kFenceTimeout, self->waits, nullptr);
  if (fenced != GST_FLOW_OK)
    return fenced;
  const gsize size = (GST_VIDEO_INFO_SIZE(&self->in_info) + 3) / 4 * 4;
  GlPath &gl = *self->gl;
  if (!gl.staging) {
    tensormem::Result<tensormem::Tensor> made = gl.pass->worker()->create_pbo(
        size, {size}, tensormem::DType::U8, "tensorconvert-staging", tensormem::PboUsage::Upload);
    if (!made) {
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot make a %" G_GSIZE_FORMAT "-byte staging PBO", size),
                        ("%s", made.error().message().c_str()));
      return GST_FLOW_ERROR;
    }
    gl.staging.emplace(std::move(*made));
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &self->in_info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot read frame %" G_GUINT64_FORMAT, self->frames),
                      ("gst_video_frame_map failed"));
    return GST_FLOW_ERROR;
  }
  // Waits for the previous pass that read the staging buffer (its fence is
  // recorded on it) before the CPU overwrites it.
  tensormem::Result<tensormem::HostPin> pin = gl.staging->storage()->map(tensormem::CpuAccess::Write);
  if (!pin) {
    gst_video_frame_unmap(&frame);
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write the staging PBO"), ("%s", pin.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  guint64 copied = 0;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    // In every input format plane p starts with component p.
    const gsize row = static_cast<gsize>(GST_VIDEO_FRAME_COMP_WIDTH(&frame, p)) *
                      static_cast<gsize>(GST_VIDEO_FRAME_COMP_PSTRIDE(&frame, p));
    const guint rows = GST_VIDEO_FRAME_COMP_HEIGHT(&frame, p);
    const auto *from = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    std::byte *to = pin->data() + GST_VIDEO_INFO_PLANE_OFFSET(&self->in_info, p);
    for (guint r = 0; r < rows; ++r)
      std::memcpy(to + static_cast<gsize>(r) * GST_VIDEO_INFO_PLANE_STRIDE(&self->in_info, p),
                  from + static_cast<gsize>(r) * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p), row);
    copied += static_cast<guint64>(row) * rows;
  }
  *pin = tensormem::HostPin();
  gst_video_frame_unmap(&frame);
  GST_OBJECT_LOCK(self);
  self->copied_bytes += copied;
  GST_OBJECT_UNLOCK(self);
  std::shared_ptr<tensormem::PboStorage> storage = tensormem::pbo_storage_of(*gl.staging);
  src->buffer = storage->buffer_id();
  src->size = storage->size_bytes();
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&self->in_info) && p < tensormem::kMaxPlanes; ++p) {
    src->offset[p] = GST_VIDEO_INFO_PLANE_OFFSET(&self->in_info, p);
    src->stride[p] = static_cast<std::size_t>(GST_VIDEO_INFO_PLANE_STRIDE(&self->in_info, p));
  }
  return GST_FLOW_OK;
}

/* One frame through the GL pass: read from the input's PBO where it is one
 * of this worker's (no copy, no CPU touch), else from the staging PBO;
 * written into the output's PBO, the write fenced on the output's storage
 * and carried by a fence meta. */
GstFlowReturn transform_gl(GstTensorMemConvert *self, GstBuffer *inbuf, GstBuffer *outbuf) {
  GlPath &gl = *self->gl;
  const std::shared_ptr<tensormem::GlWorker> &worker = gl.pass->worker();
  std::shared_ptr<tensormem::PboStorage> out_storage =
      gst_buffer_n_memory(outbuf) == 1 ? gst_tensor_pbo_memory_get_storage(gst_buffer_peek_memory(outbuf, 0)) : nullptr;
  if (!out_storage) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write tensor %" G_GUINT64_FORMAT, self->frames),
                      ("the output buffer is not one PBO memory"));
    return GST_FLOW_ERROR;
  }
  tensormem::GlFrameSource src;
  std::shared_ptr<tensormem::PboStorage> in_storage;
  GstMemory *in_mem = gst_buffer_n_memory(inbuf) == 1 ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  if (in_mem && gst_tensor_pbo_memory_get_core_gl_worker(in_mem) == worker)
    in_storage = gst_tensor_pbo_memory_get_storage(in_mem);
  bool direct = false;
  if (in_storage) {
    src.buffer = in_storage->buffer_id();
    src.size = in_storage->size_bytes();
    source_layout(self, inbuf, in_mem->offset, &src);
    // A PBO whose planes end inside a partial last word goes the staging way.
    tensormem::Result<std::size_t> extent = gl.pass->source_extent(src);
    direct = extent && (*extent + 3) / 4 * 4 <= src.size;
  }
  GstFlowReturn ret = direct ? wait_input_fences(self, inbuf) : stage_frame(self, inbuf, &src);
  if (ret != GST_FLOW_OK)
    return ret;
  tensormem::Result<void> ran = gl.pass->convert(src, out_storage->buffer_id(), out_storage->size_bytes());
  if (!ran) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("The GL pass failed on frame %" G_GUINT64_FORMAT, self->frames),
                      ("%s", ran.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  // The output's next CPU map, and every consumer of the fence meta, waits
  // for the pass; so do CPU writes into what it read (the staging PBO, or
  // the upstream PBO its pool hands out again).
  tensormem::Result<std::uint64_t> fenced = worker->fence_write(*out_storage);
  GError *error = nullptr;
  if (fenced && *fenced != 0) {
    tensormem::Storage &read = direct ? static_cast<tensormem::Storage &>(*in_storage)
                                      : static_cast<tensormem::Storage &>(*gl.staging->storage());
    tensormem::Result<void> recorded = read.record_write(worker->timeline(), *fenced);
    if (!recorded)
      fenced = std::move(recorded).error();
  }
  if (!fenced || !gst_buffer_add_tensor_mem_fences_from_memory(outbuf, &error)) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot fence the GL pass of frame %" G_GUINT64_FORMAT, self->frames),
                      ("%s", !fenced ? fenced.error().message().c_str()
                             : error ? error->message
                                     : "no fence meta"));
    g_clear_error(&error);
    return GST_FLOW_ERROR;
  }
  attach_resize_meta(outbuf, **self->converter);
  ++self->frames;
  return GST_FLOW_OK;
}
#else
GstFlowReturn transform_gl(GstTensorMemConvert *self, GstBuffer *, GstBuffer *) {
  GST_ELEMENT_ERROR(self, CORE, FAILED, ("This build has no GL path"), (nullptr));
  return GST_FLOW_ERROR;
}
#endif

gboolean gst_tensor_convert_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_CONVERT(trans);
  GstVideoInfo info;
  if (!gst_tensor_mem_element_video_info_from_caps(GST_ELEMENT(self), &info, incaps))
    return FALSE;
  tensormem::PixelFormat format;
  if (!gst_tensor_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("tensorconvert cannot read %s frames", GST_VIDEO_INFO_NAME(&info)),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  const Settings s = settings_of(self);
  tensormem::ConvertSpec spec;
  spec.input = format;
  spec.in_width = GST_VIDEO_INFO_WIDTH(&info);
  spec.in_height = GST_VIDEO_INFO_HEIGHT(&info);
  spec.out_width = s.width ? s.width : spec.in_width;
  spec.out_height = s.height ? s.height : spec.in_height;
  spec.resize = s.resize;
  spec.pad_value = static_cast<std::uint8_t>(s.pad_value);
  spec.order = s.order;
  spec.dtype = s.dtype;
  spec.layout = s.layout;
  std::string why;
  if (!three_values(s.mean, "mean", &spec.mean, &why) || !three_values(s.std_dev, "std", &spec.std, &why)) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s", why.c_str()), (nullptr));
    return FALSE;
  }
  if (GST_VIDEO_INFO_IS_YUV(&info)) {
    gdouble kr = 0, kb = 0;
    if (!gst_video_color_matrix_get_Kr_Kb(info.colorimetry.matrix, &kr, &kb)) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("The input's colour matrix is not one tensorconvert knows"),
                        ("input caps %" GST_PTR_FORMAT, incaps));
      return FALSE;
    }
    spec.kr = kr;
    spec.kb = kb;
    spec.full_range = info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
  }

  const GstStructure *out = gst_caps_get_structure(outcaps, 0);
  const char *dims = gst_structure_get_string(out, "dimensions");
  const std::string expected = dimensions_of(spec.layout, spec.out_width, spec.out_height);
  if (dims && expected != dims) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("Downstream asks for tensor dimensions %s; this makes %s", dims, expected.c_str()),
                      ("output caps %" GST_PTR_FORMAT, outcaps));
    return FALSE;
  }
  tensormem::Result<tensormem::FrameConverter> made = tensormem::FrameConverter::create(spec);
  if (!made) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s", made.error().message().c_str()),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }

  drop_pool(self);
  self->gl->~GlPath();
  new (self->gl) GlPath();
  // PBO output caps are the GL path's; anything else the CPU path's.
  self->use_gl = has_pbo_feature(outcaps, 0);
  gsize buffer_bytes = made->output_bytes();
  GstAllocator *allocator = nullptr;
  if (self->use_gl) {
    allocator = prepare_gl(self, *made, &buffer_bytes);
    if (!allocator)
      return FALSE;
  } else {
    allocator =
        s.storage == GST_TENSOR_STORAGE_DMABUF ? gst_tensor_dmabuf_allocator_get() : gst_tensor_system_allocator_get();
  }
  if (buffer_bytes > G_MAXUINT) {
    gst_object_unref(allocator);
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS,
                      ("A %ux%u tensor of %s is %" G_GSIZE_FORMAT " bytes, more than a buffer pool holds",
                       spec.out_width, spec.out_height, dtype_caps_name(spec.dtype), buffer_bytes),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  // Output buffers come from a pool (PBOs, too: made once, reused).
  GstBufferPool *pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, outcaps, static_cast<guint>(buffer_bytes), 2, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, nullptr);
  gst_object_unref(allocator);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("Cannot make a pool of %" G_GSIZE_FORMAT "-byte tensors", buffer_bytes), (nullptr));
    return FALSE;
  }
  self->pool = pool;
  self->in_info = info;
  self->converter->emplace(std::move(*made));
  const guint threads = s.n_threads ? s.n_threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (!self->workers || self->workers->threads() != threads) {
    delete self->workers;
    self->workers = new RowWorkers(threads);
  }
  GST_INFO_OBJECT(self, "%ux%u %s -> %s tensor %ux%u, %s", spec.in_width, spec.in_height, GST_VIDEO_INFO_NAME(&info),
                  expected.c_str(), spec.out_width, spec.out_height,
                  self->use_gl ? "GL compute pass"
                               : (std::to_string(self->workers->threads()) + " CPU thread(s)").c_str());
  return TRUE;
}

GstFlowReturn gst_tensor_convert_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer **outbuf) {
  auto *self = GST_TENSOR_CONVERT(trans);
  if (!self->pool || !self->converter->has_value()) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps before the first buffer"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const GstFlowReturn acquired = gst_buffer_pool_acquire_buffer(self->pool, outbuf, nullptr);
  if (acquired != GST_FLOW_OK)
    return acquired;
  // The GL pass writes whole words: its PBOs may be up to 3 bytes longer.
  const gsize bytes = (*self->converter)->output_bytes();
  if (gst_buffer_get_size(*outbuf) != bytes)
    gst_buffer_set_size(*outbuf, static_cast<gssize>(bytes));
  GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->copy_metadata(trans, inbuf, *outbuf);
  return GST_FLOW_OK;
}

GstFlowReturn gst_tensor_convert_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_TENSOR_CONVERT(trans);
  const GstFlowReturn valid = gst_tensor_mem_element_validate_buffer(GST_ELEMENT(self), inbuf, &self->in_info);
  if (valid != GST_FLOW_OK)
    return valid;
  if (self->use_gl)
    return transform_gl(self, inbuf, outbuf);
  // The CPU reads the frame: its producers' writes must be complete (the
  // same bounded, cancellable wait every element makes before reading).
  if (gst_buffer_get_meta(inbuf, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    const GstFlowReturn fenced = gst_tensor_mem_element_wait_fences(
        GST_ELEMENT(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, self->waits, nullptr);
    if (fenced != GST_FLOW_OK)
      return fenced;
  } else {
    gst_buffer_wait_gl_sync_metas(inbuf);
  }
  const tensormem::FrameConverter &converter = **self->converter;
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &self->in_info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot read frame %" G_GUINT64_FORMAT, self->frames),
                      ("gst_video_frame_map failed"));
    return GST_FLOW_ERROR;
  }
  GstMapInfo out;
  if (!gst_buffer_map(outbuf, &out, GST_MAP_WRITE) || out.size < converter.output_bytes()) {
    if (out.memory)
      gst_buffer_unmap(outbuf, &out);
    gst_video_frame_unmap(&frame);
    const gchar *why = gst_tensor_memory_get_last_map_failure();
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                      ("Cannot write tensor %" G_GUINT64_FORMAT ": %s", self->frames,
                       why ? why : "the output buffer does not map for writing"),
                      ("mapping %" G_GSIZE_FORMAT " bytes of %" GST_PTR_FORMAT " for writing", converter.output_bytes(),
                       outbuf));
    return GST_FLOW_ERROR;
  }
  tensormem::FramePlanes planes;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < tensormem::kMaxPlanes; ++p) {
    planes.data[p] = static_cast<const std::uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    planes.stride[p] = static_cast<std::size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));
  }
  // Bands of at least 8 rows, a few per thread so that uneven rows even out.
  const guint rows = converter.spec().out_height;
  const guint bands = std::clamp(rows / 8, 1u, self->workers->threads() * 4);
  auto *data = reinterpret_cast<std::byte *>(out.data);
  self->workers->run(bands, [&](guint band) {
    const auto begin = static_cast<std::uint32_t>(static_cast<guint64>(rows) * band / bands);
    const auto end = static_cast<std::uint32_t>(static_cast<guint64>(rows) * (band + 1) / bands);
    converter.convert_rows(planes, data, begin, end);
  });
  gst_buffer_unmap(outbuf, &out);
  gst_video_frame_unmap(&frame);
  attach_resize_meta(outbuf, converter);
  ++self->frames;
  return GST_FLOW_OK;
}

/* Says on `outbuf` where the frame landed in the tensor. */
void attach_resize_meta(GstBuffer *outbuf, const tensormem::FrameConverter &converter) {
  GstTensorMemResizeMeta *meta = gst_buffer_get_tensor_mem_resize_meta(outbuf);
  if (!meta)
    meta = gst_buffer_add_tensor_mem_resize_meta(outbuf);
  const tensormem::FrameMapping &m = converter.mapping();
  const tensormem::ConvertSpec &spec = converter.spec();
  meta->in_width = spec.in_width;
  meta->in_height = spec.in_height;
  meta->out_width = spec.out_width;
  meta->out_height = spec.out_height;
  meta->scale_x = m.scale_x;
  meta->scale_y = m.scale_y;
  meta->offset_x = m.offset_x;
  meta->offset_y = m.offset_y;
  meta->content_x = m.content_x;
  meta->content_y = m.content_y;
  meta->content_width = m.content_width;
  meta->content_height = m.content_height;
}

gboolean gst_tensor_convert_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_CONVERT(trans);
  const Settings s = settings_of(self);
  std::array<float, 3> unused{};
  std::string why;
  if (!three_values(s.mean, "mean", &unused, &why) || !three_values(s.std_dev, "std", &unused, &why)) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s", why.c_str()), (nullptr));
    return FALSE;
  }
  const bool pbo = s.storage == GST_TENSOR_STORAGE_PBO;
  const bool plain = s.storage == GST_TENSOR_STORAGE_SYSTEM || s.storage == GST_TENSOR_STORAGE_DMABUF;
  if (pbo && s.backend == BACKEND_CPU) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("storage=pbo is written by the GL path, and backend=cpu was asked"),
                      ("use backend=gl or auto for PBO output, or storage=system or dmabuf with backend=cpu"));
    return FALSE;
  }
  if (plain && s.backend == BACKEND_GL) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS,
                      ("backend=gl writes PBO tensor memory, and storage=%s was asked",
                       s.storage == GST_TENSOR_STORAGE_DMABUF ? "dmabuf" : "system"),
                      ("use storage=pbo or auto with backend=gl, or backend=cpu or auto"));
    return FALSE;
  }
  if (!GST_TENSORMEM_HAVE_GL && (pbo || s.backend == BACKEND_GL)) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS,
                      ("%s needs OpenGL, which this build of gst-tensormem lacks", pbo ? "storage=pbo" : "backend=gl"),
                      ("use backend=cpu with storage=system or dmabuf"));
    return FALSE;
  }
  // An explicit GL request finds (or makes) its worker now, so a machine
  // without EGL fails here with the reason, not at negotiation.
  std::string no_gl;
  if ((pbo || s.backend == BACKEND_GL) && !ensure_worker(self, &no_gl)) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("%s: %s", pbo ? "storage=pbo" : "backend=gl", no_gl.c_str()),
                      ("use backend=cpu with storage=system or dmabuf on a machine without a usable EGL"));
    return FALSE;
  }
  self->frames = 0;
  return TRUE;
}

gboolean gst_tensor_convert_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_CONVERT(trans);
  drop_pool(self);
  self->converter->reset();
  self->gl->~GlPath();
  new (self->gl) GlPath();
  self->use_gl = false;
  delete self->workers;
  self->workers = nullptr;
  GST_INFO_OBJECT(self, "converted %" G_GUINT64_FORMAT " frame(s)", self->frames);
  return TRUE;
}

} // namespace

static void gst_tensor_convert_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_CONVERT(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_WIDTH: self->width = g_value_get_uint(value); break;
  case PROP_HEIGHT: self->height = g_value_get_uint(value); break;
  case PROP_RESIZE: self->resize = static_cast<tensormem::ResizeMode>(g_value_get_enum(value)); break;
  case PROP_PAD_VALUE: self->pad_value = g_value_get_uint(value); break;
  case PROP_CHANNEL_ORDER: self->order = static_cast<tensormem::ChannelOrder>(g_value_get_enum(value)); break;
  case PROP_DTYPE: self->dtype = static_cast<tensormem::DType>(g_value_get_enum(value)); break;
  case PROP_LAYOUT: self->layout = static_cast<tensormem::TensorLayout>(g_value_get_enum(value)); break;
  case PROP_MEAN: set_array(self->mean, value); break;
  case PROP_STD: set_array(self->std_dev, value); break;
  case PROP_BACKEND: self->backend = g_value_get_enum(value); break;
  case PROP_STORAGE: self->storage = static_cast<GstTensorMemStorage>(g_value_get_enum(value)); break;
  case PROP_N_THREADS: self->n_threads = g_value_get_uint(value); break;
  case PROP_REQUIRE_ZERO_COPY: self->require_zero_copy = g_value_get_boolean(value); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
  // A new tensor shape or type means new output caps.
  if (prop_id != PROP_N_THREADS && prop_id != PROP_REQUIRE_ZERO_COPY)
    gst_base_transform_reconfigure_src(GST_BASE_TRANSFORM(self));
}

static void gst_tensor_convert_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_CONVERT(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_WIDTH: g_value_set_uint(value, self->width); break;
  case PROP_HEIGHT: g_value_set_uint(value, self->height); break;
  case PROP_RESIZE: g_value_set_enum(value, static_cast<gint>(self->resize)); break;
  case PROP_PAD_VALUE: g_value_set_uint(value, self->pad_value); break;
  case PROP_CHANNEL_ORDER: g_value_set_enum(value, static_cast<gint>(self->order)); break;
  case PROP_DTYPE: g_value_set_enum(value, static_cast<gint>(self->dtype)); break;
  case PROP_LAYOUT: g_value_set_enum(value, static_cast<gint>(self->layout)); break;
  case PROP_MEAN: get_array(*self->mean, value); break;
  case PROP_STD: get_array(*self->std_dev, value); break;
  case PROP_BACKEND: g_value_set_enum(value, self->backend); break;
  case PROP_STORAGE: g_value_set_enum(value, self->storage); break;
  case PROP_N_THREADS: g_value_set_uint(value, self->n_threads); break;
  case PROP_COPIED_BYTES: g_value_set_uint64(value, self->copied_bytes); break;
  case PROP_REQUIRE_ZERO_COPY: g_value_set_boolean(value, self->require_zero_copy); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_tensor_convert_finalize(GObject *object) {
  auto *self = GST_TENSOR_CONVERT(object);
  drop_pool(self);
  delete self->workers;
  delete self->gl;
  gst_clear_object(&self->gl_worker);
  g_clear_object(&self->waits);
  delete self->converter;
  delete self->mean;
  delete self->std_dev;
  G_OBJECT_CLASS(gst_tensor_convert_parent_class)->finalize(object);
}

/* The GL worker is shared with the rest of the pipeline through GstContext. */
static void gst_tensor_convert_set_context(GstElement *element, GstContext *context) {
  auto *self = GST_TENSOR_CONVERT(element);
  gst_tensor_gl_worker_handle_set_context(element, context, &self->gl_worker);
  GST_ELEMENT_CLASS(gst_tensor_convert_parent_class)->set_context(element, context);
}

static gboolean gst_tensor_convert_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_TENSOR_CONVERT(trans);
  if (gst_tensor_gl_worker_handle_context_query(GST_ELEMENT(self), query, &self->gl_worker))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->query(trans, direction, query);
}

static gboolean gst_tensor_convert_sink_event(GstBaseTransform *trans, GstEvent *event) {
  gst_tensor_mem_transform_watch_event(trans, GST_TENSOR_CONVERT(trans)->waits, event);
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_convert_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn gst_tensor_convert_change_state(GstElement *element, GstStateChange transition) {
  gst_tensor_mem_transform_watch_state_change(GST_BASE_TRANSFORM(element), GST_TENSOR_CONVERT(element)->waits,
                                              transition);
  return GST_ELEMENT_CLASS(gst_tensor_convert_parent_class)->change_state(element, transition);
}

static void gst_tensor_convert_class_init(GstTensorMemConvertClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_tensor_convert_set_property;
  gobject_class->get_property = gst_tensor_convert_get_property;
  gobject_class->finalize = gst_tensor_convert_finalize;

  constexpr auto kRw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  constexpr auto kRo = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
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
      gobject_class, PROP_BACKEND,
      g_param_spec_enum("backend", "Backend", "Where the conversion runs", backend_type(), BACKEND_AUTO, kRw));
  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum("storage", "Storage",
                        "Tensor memory of the output: system or dmabuf (the CPU path), pbo (the GL path), or auto: "
                        "PBO where the GL path runs, else system",
                        GST_TYPE_TENSOR_STORAGE, GST_TENSOR_STORAGE_AUTO, kRw));
  g_object_class_install_property(gobject_class, PROP_N_THREADS,
                                  g_param_spec_uint("n-threads", "Threads",
                                                    "Threads converting one frame (0: one per CPU, at most 8)", 0, 64,
                                                    0, kRw));
  g_object_class_install_property(gobject_class, PROP_COPIED_BYTES,
                                  g_param_spec_uint64("copied-bytes", "Copied bytes",
                                                      "Bytes copied on the way (a conversion is not a copy; the GL "
                                                      "path copying a frame in system memory into a PBO is)",
                                                      0, G_MAXUINT64, 0, kRo));
  g_object_class_install_property(
      gobject_class, PROP_REQUIRE_ZERO_COPY,
      g_param_spec_boolean("require-zero-copy", "Require zero copy",
                           "Fail instead of copying a frame on the way (the CPU path never copies; the GL path "
                           "copies frames that are not PBO memory)",
                           FALSE, kRw));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "Tensor convert", "Filter/Converter/Video",
                                        "Turns video frames into one model-input tensor: resize, colour, "
                                        "normalisation, layout and type in one pass",
                                        "gst-tensormem developers");
  element_class->set_context = gst_tensor_convert_set_context;
  trans_class->query = gst_tensor_convert_query;
  trans_class->sink_event = gst_tensor_convert_sink_event;
  element_class->change_state = gst_tensor_convert_change_state;
  trans_class->transform_caps = gst_tensor_convert_transform_caps;
  trans_class->set_caps = gst_tensor_convert_set_caps;
  trans_class->prepare_output_buffer = gst_tensor_convert_prepare_output_buffer;
  trans_class->transform = gst_tensor_convert_transform;
  trans_class->start = gst_tensor_convert_start;
  trans_class->stop = gst_tensor_convert_stop;
  trans_class->passthrough_on_same_caps = FALSE;
  gst_type_mark_as_plugin_api(resize_mode_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(channel_order_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(dtype_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(layout_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(backend_type(), static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_convert_init(GstTensorMemConvert *self) {
  self->width = 0;
  self->height = 0;
  self->resize = tensormem::ResizeMode::Stretch;
  self->pad_value = 0;
  self->order = tensormem::ChannelOrder::Rgb;
  self->dtype = tensormem::DType::F32;
  self->layout = tensormem::TensorLayout::Nchw;
  self->mean = new std::vector<double>{0.0, 0.0, 0.0};
  self->std_dev = new std::vector<double>{1.0, 1.0, 1.0};
  self->backend = BACKEND_AUTO;
  self->storage = GST_TENSOR_STORAGE_AUTO;
  self->n_threads = 0;
  self->copied_bytes = 0;
  self->require_zero_copy = FALSE;
  gst_video_info_init(&self->in_info);
  self->converter = new std::optional<tensormem::FrameConverter>();
  self->pool = nullptr;
  self->workers = nullptr;
  self->gl_worker = nullptr;
  self->waits = g_cancellable_new();
  self->gl = new GlPath();
  self->use_gl = false;
  self->frames = 0;
}
