// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorconverter-private.h>

#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorfencemeta.hpp>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorformat.hpp>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorpbo.h>
#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#include <gst/tensormem/gsttensorpbo.hpp>
#endif

#if GST_TENSOR_MEM_HAVE_GL
#include <tensormem/gl_convert.hpp>
#endif
#include <gst/tensormem/gsttensoranalytics-private.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include <gst/analytics/analytics.h>
#endif

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_converter_debug);
#define GST_CAT_DEFAULT gst_tensor_converter_debug

namespace gst_tensormem {

namespace {

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_converter_debug, "tensormemconverter", 0, "video frames to tensors");
    g_once_init_leave(&done, 1);
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

/* TRUE when the storage property names the family the GL pass writes
 * (the table's written_by_gl_pass): that picks the GL path. */
bool asks_gl_pass(const ConvertSettings &s) {
  return s.storage != GST_TENSOR_MEM_STORAGE_AUTO && backend_for(s.storage).written_by_gl_pass;
}

/* Which output memories a frame can become, best first: the GL pass's
 * family (PBO tensor memory) and plain caps, system or DMA-BUF memory (the
 * CPU path). The storage property picks the path: the GL pass's family the
 * GL path, a family that maps as system the CPU path, and auto takes the GL
 * path when the input is its family's memory already, or when downstream
 * accepts nothing else. */
struct Outputs {
  bool gl, plain, gl_first;
};
Outputs outputs_for(const ConvertSettings &s, bool gl_input) {
  if (!gl_pass_backend())
    return {false, true, false};
  if (s.storage == GST_TENSOR_MEM_STORAGE_AUTO)
    return {true, true, gl_input};
  const bool gl = asks_gl_pass(s);
  return {gl, !gl, gl};
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

/* Output caps for one input structure. */
GstStructure *tensor_structure(const ConvertSettings &s, const GstStructure *in) {
  GstStructure *out = gst_structure_new("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT,
                                        1, "types", G_TYPE_STRING, tensor_type_name(s.dtype), nullptr);
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

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* GStreamer's data type of a tensor element this converter writes. */
GstTensorDataType data_type_of(tensormem::DType dtype) {
  switch (dtype) {
  case tensormem::DType::U8: return GST_TENSOR_DATA_TYPE_UINT8;
  case tensormem::DType::F16: return GST_TENSOR_DATA_TYPE_FLOAT16;
  default: return GST_TENSOR_DATA_TYPE_FLOAT32;
  }
}

/* GStreamer's own description of the tensor (GstTensorMeta, 1.26) on
 * `target` (writable): `data` (transfer full; NULL: a buffer sharing
 * `target`'s memory, no copy) holds its bytes, row-major and contiguous,
 * dims batch first as the layout orders them. */
void attach_tensor_meta(GstBuffer *target, GstBuffer *data, const tensormem::ConvertSpec &spec, GQuark id) {
  const GstTensorDataType type = data_type_of(spec.dtype);
  const gsize h = spec.out_height, w = spec.out_width;
  const gsize nchw[] = {1, 3, h, w}, nhwc[] = {1, h, w, 3};
  gst_tensormem::set_tensor_meta(target, data, id, type, spec.layout == tensormem::TensorLayout::Nchw ? nchw : nhwc, 4);
}
#endif

} // namespace

const char *tensor_type_name(tensormem::DType dtype) {
  switch (dtype) {
  case tensormem::DType::U8: return "uint8";
  case tensormem::DType::F16: return "float16";
  default: return "float32";
  }
}

/* ---- state between set_caps and stop ---- */

struct TensorConverter::Impl {
  GstVideoInfo in_info;
  bool output_meta = false;
  GQuark tensor_id = 0;
  std::optional<tensormem::FrameConverter> converter;
  GstBufferPool *pool = nullptr;
  std::unique_ptr<RowWorkers> workers;
  bool use_gl = false;
#if GST_TENSOR_MEM_HAVE_GL
  std::shared_ptr<tensormem::GlFrameConverter> pass;
  std::optional<tensormem::Tensor> staging; // a frame in other memory is copied here on the way
#endif
  GstEvent *described = nullptr; // output=meta before 1.28: the tensor's description, not yet sent

  Impl() { gst_video_info_init(&in_info); }
  ~Impl() {
    drop_pool();
    gst_clear_event(&described);
  }
  void drop_pool() {
    if (pool) {
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
      pool = nullptr;
    }
  }
};

TensorConverter::TensorConverter(GstElement *element)
    : element_(element), devices_(element), impl_(std::make_unique<Impl>()) {
  ensure_debug_category();
}

TensorConverter::~TensorConverter() = default;

GstCaps *TensorConverter::src_template_caps(const char *tensor, const char *frame) {
  GstCaps *plain = gst_caps_from_string(tensor);
  GstCaps *caps = gst_caps_copy(plain);
  if (const Backend *gl = gl_pass_backend())
    gst_caps_append(caps, caps_with_feature(plain, gl->caps_feature));
  gst_caps_unref(plain);
  if (frame)
    gst_caps_append(caps, gst_caps_from_string(frame));
  return caps;
}

GstCaps *TensorConverter::tensor_caps(const ConvertSettings &s, GstCaps *caps) {
  GstCaps *result = gst_caps_new_empty();
  const Backend *gl = gl_pass_backend();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstStructure *tensor = tensor_structure(s, gst_caps_get_structure(caps, i));
    const Outputs out = outputs_for(s, gl && caps_have_feature(caps, i, gl->caps_feature));
    auto add_gl = [&] {
      result = gst_caps_merge_structure_full(result, gst_structure_copy(tensor),
                                             gst_caps_features_new(gl->caps_feature, nullptr));
    };
    if (out.gl && out.gl_first)
      add_gl();
    if (out.plain)
      result = gst_caps_merge_structure(result, gst_structure_copy(tensor));
    if (out.gl && !out.gl_first)
      add_gl();
    gst_structure_free(tensor);
  }
  return result;
}

GstCaps *TensorConverter::frame_caps(const ConvertSettings &s, GstCaps *caps, GstPadDirection direction) {
  GstCaps *result = gst_caps_copy(caps);
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
  if (direction == GST_PAD_SRC) { // upstream's frames carry no tensor of ours
    gst_tensormem::strip_caps_tensors(result);
    return result;
  }
  const GstTensorDataType type = data_type_of(s.dtype);
  for (guint i = 0; i < gst_caps_get_size(result); ++i) {
    GstStructure *frame = gst_caps_get_structure(result, i);
    gint w = 0, h = 0;
    gst_structure_get_int(frame, "width", &w);
    gst_structure_get_int(frame, "height", &h);
    const gsize ow = s.width ? s.width : static_cast<gsize>(std::max(w, 0));
    const gsize oh = s.height ? s.height : static_cast<gsize>(std::max(h, 0));
    if (!ow || !oh)
      continue; // a size the caps leave open: described once they fix it
    gst_tensormem::CapsTensor t;
    t.id = s.tensor_id;
    t.type = type;
    t.dims =
        s.layout == tensormem::TensorLayout::Nchw ? std::vector<gsize>{1, 3, oh, ow} : std::vector<gsize>{1, oh, ow, 3};
    gst_tensormem::set_caps_tensor_group(frame, s.tensor_id.c_str(), {t});
  }
#else
  (void)s;
  (void)direction;
#endif
  return result;
}

void TensorConverter::close() { devices_.close(); }

void TensorConverter::handle_set_context(GstContext *context) { devices_.handle_set_context(context); }

gboolean TensorConverter::handle_context_query(GstQuery *query) { return devices_.handle_context_query(query); }

gboolean TensorConverter::start(const ConvertSettings &s) {
  std::array<float, 3> unused{};
  std::string why;
  if (!three_values(s.mean, "mean", &unused, &why) || !three_values(s.std_dev, "std", &unused, &why)) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS, ("%s", why.c_str()), (nullptr));
    return FALSE;
  }
  // The storage picks the path: the CPU path writes what maps as system
  // memory, the GL path its own family's; no other family is written here.
  const bool gl = asks_gl_pass(s);
  if (s.storage != GST_TENSOR_MEM_STORAGE_AUTO && !gl && !backend_for(s.storage).maps_as_system) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS,
                      ("tensorconvert writes system or DMA-BUF memory (the CPU path) or PBO tensor memory (the GL "
                       "path), and storage=%s was asked",
                       storage_nick(s.storage)),
                      ("use storage=auto, system, dmabuf or pbo"));
    return FALSE;
  }
  if (s.output == ConvertOutput::Meta && gl) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS, ("output=meta converts on the CPU path, and storage=pbo was asked"),
                      ("use storage=system, dmabuf or auto with output=meta, or output=tensor"));
    return FALSE;
  }
  if (s.output == ConvertOutput::Meta && !GST_TENSOR_MEM_HAVE_TENSOR_META) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS,
                      ("output=meta needs GstTensorMeta (GStreamer 1.26's analytics library), which this build lacks"),
                      ("use output=tensor, or build gst-tensormem against GStreamer 1.26 or later"));
    return FALSE;
  }
  if (!GST_TENSOR_MEM_HAVE_GL && gl) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS,
                      ("storage=pbo needs OpenGL, which this build of gst-tensormem lacks"),
                      ("use storage=system or dmabuf"));
    return FALSE;
  }
  // An explicit GL request finds (or makes) its worker now, so a machine
  // without EGL fails here with the reason, not at negotiation.
  GError *error = nullptr;
  if (gl && !devices_.find_device(*gl_pass_backend(), &error)) {
    GST_ELEMENT_ERROR(element_, RESOURCE, FAILED, ("storage=pbo: %s", error ? error->message : "no GL worker"),
                      ("use storage=system or dmabuf on a machine without a usable EGL"));
    g_clear_error(&error);
    return FALSE;
  }
  frames_ = 0;
  return TRUE;
}

void TensorConverter::stop() {
  impl_ = std::make_unique<Impl>();
  GST_INFO_OBJECT(element_, "converted %" G_GUINT64_FORMAT " frame(s)", frames_);
}

bool TensorConverter::negotiated() const { return impl_->pool && impl_->converter.has_value(); }

/* ---- the GL path ---- */

namespace {

#if GST_TENSOR_MEM_HAVE_GL
constexpr GstClockTime kFenceTimeout = 5 * GST_SECOND;

std::shared_ptr<tensormem::GlWorker> core_worker(GstObject *worker) {
  return worker ? gst_tensor_mem_gl_worker_get_core_gl_worker(GST_TENSOR_MEM_GL_WORKER(worker)) : nullptr;
}

/* The pass reads the input after its producers' writes: EGL fences are
 * waited for on the GL queue, other kinds on the CPU. */
GstFlowReturn wait_input_fences(GstElement *element, GstObject *worker, GstBuffer *inbuf, GCancellable *waits) {
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(inbuf, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *fence = reinterpret_cast<GstTensorMemFenceMeta *>(meta);
    GError *error = nullptr;
    if (gst_tensor_mem_fence_meta_wait_gpu(fence, GST_TENSOR_MEM_GL_WORKER(worker), &error))
      continue;
    if (g_error_matches(error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED)) {
      g_clear_error(&error);
      if (gst_tensor_mem_fence_meta_wait_cpu_cancellable(fence, kFenceTimeout, waits, &error))
        continue;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_clear_error(&error);
      return GST_FLOW_FLUSHING;
    }
    const GstFlowReturn ret = gst_tensor_mem_element_post_fence_error(element, inbuf, kFenceTimeout, error);
    g_clear_error(&error);
    return ret;
  }
  return GST_FLOW_OK;
}

/* Plane offsets and strides of `inbuf` as its GstVideoMeta (or the caps)
 * say, plus the memory's offset into its GL buffer. */
void source_layout(const GstVideoInfo &info, GstBuffer *inbuf, gsize memory_offset, tensormem::GlFrameSource *src) {
  const GstVideoMeta *meta = gst_buffer_get_video_meta(inbuf);
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info) && p < tensormem::kMaxPlanes; ++p) {
    src->offset[p] = memory_offset + (meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&info, p));
    src->stride[p] = static_cast<std::size_t>(meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&info, p));
  }
}
#endif

} // namespace

#if GST_TENSOR_MEM_HAVE_GL
namespace {

/* A frame in system, DMA-BUF or another worker's memory: copied row by row
 * into the staging PBO (laid out as the caps say), counted; refused under
 * require-zero-copy. */
GstFlowReturn stage_frame(GstElement *element, TensorConverter::Impl &impl, guint64 frame_number, GstBuffer *inbuf,
                          const ConvertHooks &hooks, tensormem::GlFrameSource *src, gsize *copied) {
  GstMemory *first = gst_buffer_n_memory(inbuf) ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  const char *kind = first && first->allocator ? first->allocator->mem_type : "unknown";
  gchar *refusal = g_strdup_printf("require-zero-copy=true: frame %" G_GUINT64_FORMAT
                                   " is in %s memory, which the GL pass reads only after a copy into a PBO",
                                   frame_number, kind);
  const GstFlowReturn allowed =
      hooks.allow_copy(element, inbuf, refusal,
                       "feed PBO tensor memory of the same GL worker (tensorupload storage=pbo), or set "
                       "require-zero-copy=false");
  g_free(refusal);
  if (allowed != GST_FLOW_OK)
    return allowed;
  const GstFlowReturn fenced = gst_tensor_mem_element_wait_fences(element, inbuf, kFenceTimeout, hooks.waits, nullptr);
  if (fenced != GST_FLOW_OK)
    return fenced;
  const GstVideoInfo &info = impl.in_info;
  const gsize size = (GST_VIDEO_INFO_SIZE(&info) + 3) / 4 * 4;
  if (!impl.staging) {
    tensormem::Result<tensormem::Tensor> made = impl.pass->worker()->create_pbo(
        size, {size}, tensormem::DType::U8, "tensorconvert-staging", tensormem::PboUsage::Upload);
    if (!made) {
      GST_ELEMENT_ERROR(element, RESOURCE, NO_SPACE_LEFT, ("Cannot make a %" G_GSIZE_FORMAT "-byte staging PBO", size),
                        ("%s", made.error().message().c_str()));
      return GST_FLOW_ERROR;
    }
    impl.staging.emplace(std::move(*made));
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(element, RESOURCE, READ, ("Cannot read frame %" G_GUINT64_FORMAT, frame_number),
                      ("gst_video_frame_map failed"));
    return GST_FLOW_ERROR;
  }
  // Waits for the previous pass that read the staging buffer (its fence is
  // recorded on it) before the CPU overwrites it.
  tensormem::Result<tensormem::HostPin> pin = impl.staging->storage()->map(tensormem::CpuAccess::Write);
  if (!pin) {
    gst_video_frame_unmap(&frame);
    GST_ELEMENT_ERROR(element, RESOURCE, WRITE, ("Cannot write the staging PBO"),
                      ("%s", pin.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  gsize total = 0;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    // In every input format plane p starts with component p.
    const gsize row = static_cast<gsize>(GST_VIDEO_FRAME_COMP_WIDTH(&frame, p)) *
                      static_cast<gsize>(GST_VIDEO_FRAME_COMP_PSTRIDE(&frame, p));
    const guint rows = GST_VIDEO_FRAME_COMP_HEIGHT(&frame, p);
    const auto *from = static_cast<const guint8 *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    std::byte *to = pin->data() + GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
    for (guint r = 0; r < rows; ++r)
      std::memcpy(to + static_cast<gsize>(r) * GST_VIDEO_INFO_PLANE_STRIDE(&info, p),
                  from + static_cast<gsize>(r) * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p), row);
    total += row * rows;
  }
  *pin = tensormem::HostPin();
  gst_video_frame_unmap(&frame);
  *copied = total;
  std::shared_ptr<tensormem::PboStorage> storage = tensormem::pbo_storage_of(*impl.staging);
  src->buffer = storage->buffer_id();
  src->size = storage->size_bytes();
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info) && p < tensormem::kMaxPlanes; ++p) {
    src->offset[p] = GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
    src->stride[p] = static_cast<std::size_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, p));
  }
  return GST_FLOW_OK;
}

} // namespace
#endif

/* One frame through the GL pass: read from the input's PBO where it is one
 * of this worker's (no copy, no CPU touch), else from the staging PBO;
 * written into the output's PBO, the write fenced on the output's storage
 * and carried by a fence meta. */
static GstFlowReturn convert_gl(GstElement *element, TensorConverter::Impl &impl, GstObject *worker_object,
                                guint64 frame_number, GstBuffer *inbuf, GstBuffer *outbuf, const ConvertHooks &hooks,
                                gsize *copied) {
#if GST_TENSOR_MEM_HAVE_GL
  const std::shared_ptr<tensormem::GlWorker> &worker = impl.pass->worker();
  GstMemory *out_mem = gst_buffer_n_memory(outbuf) == 1 ? gst_buffer_peek_memory(outbuf, 0) : nullptr;
  std::shared_ptr<tensormem::PboStorage> out_storage =
      out_mem ? gst_tensor_mem_pbo_memory_get_storage(out_mem) : nullptr;
  if (!out_storage) {
    GST_ELEMENT_ERROR(element, RESOURCE, WRITE, ("Cannot write tensor %" G_GUINT64_FORMAT, frame_number),
                      ("the output buffer is not one PBO memory"));
    return GST_FLOW_ERROR;
  }
  tensormem::GlFrameSource src;
  std::shared_ptr<tensormem::PboStorage> in_storage;
  GstMemory *in_mem = gst_buffer_n_memory(inbuf) == 1 ? gst_buffer_peek_memory(inbuf, 0) : nullptr;
  if (in_mem && gst_tensor_mem_pbo_memory_get_core_gl_worker(in_mem) == worker)
    in_storage = gst_tensor_mem_pbo_memory_get_storage(in_mem);
  bool direct = false;
  if (in_storage) {
    src.buffer = in_storage->buffer_id();
    src.size = in_storage->size_bytes();
    source_layout(impl.in_info, inbuf, in_mem->offset, &src);
    // A PBO whose planes end inside a partial last word goes the staging way.
    tensormem::Result<std::size_t> extent = impl.pass->source_extent(src);
    direct = extent && (*extent + 3) / 4 * 4 <= src.size;
  }
  GstFlowReturn ret = direct ? wait_input_fences(element, worker_object, inbuf, hooks.waits)
                             : stage_frame(element, impl, frame_number, inbuf, hooks, &src, copied);
  if (ret != GST_FLOW_OK)
    return ret;
  // The output may be a window of a larger PBO (a batch slot): the pass
  // writes from the memory's offset into its GL buffer.
  tensormem::Result<void> ran =
      impl.pass->convert(src, out_storage->buffer_id(), out_storage->size_bytes(),
                         gst_tensor_mem_pbo_memory_get_tensor(out_mem)->offset() + out_mem->offset);
  if (!ran) {
    GST_ELEMENT_ERROR(element, RESOURCE, FAILED, ("The GL pass failed on frame %" G_GUINT64_FORMAT, frame_number),
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
                                      : static_cast<tensormem::Storage &>(*impl.staging->storage());
    tensormem::Result<void> recorded = read.record_write(worker->timeline(), *fenced);
    if (!recorded)
      fenced = std::move(recorded).error();
  }
  if (!fenced || !gst_buffer_add_tensor_mem_fences_from_memory(outbuf, &error)) {
    GST_ELEMENT_ERROR(element, RESOURCE, FAILED, ("Cannot fence the GL pass of frame %" G_GUINT64_FORMAT, frame_number),
                      ("%s", !fenced ? fenced.error().message().c_str()
                             : error ? error->message
                                     : "no fence meta"));
    g_clear_error(&error);
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
#else
  (void)impl;
  (void)worker_object;
  (void)frame_number;
  (void)inbuf;
  (void)outbuf;
  (void)hooks;
  (void)copied;
  GST_ELEMENT_ERROR(element, CORE, FAILED, ("This build has no GL path"), (nullptr));
  return GST_FLOW_ERROR;
#endif
}

/* ---- negotiation ---- */

gboolean TensorConverter::set_caps(const ConvertSettings &s, GstCaps *incaps, GstCaps *outcaps) {
  GstVideoInfo info;
  if (!gst_tensor_mem_element_video_info_from_caps(element_, &info, incaps))
    return FALSE;
  tensormem::PixelFormat format;
  if (!gst_tensor_mem_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("tensorconvert cannot read %s frames", GST_VIDEO_INFO_NAME(&info)),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
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
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS, ("%s", why.c_str()), (nullptr));
    return FALSE;
  }
  if (GST_VIDEO_INFO_IS_YUV(&info)) {
    gdouble kr = 0, kb = 0;
    if (!gst_video_color_matrix_get_Kr_Kb(info.colorimetry.matrix, &kr, &kb)) {
      GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("The input's colour matrix is not one tensorconvert knows"),
                        ("input caps %" GST_PTR_FORMAT, incaps));
      return FALSE;
    }
    spec.kr = kr;
    spec.kb = kb;
    spec.full_range = info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
  }

  const bool output_meta = s.output == ConvertOutput::Meta;
  const GstStructure *out = gst_caps_get_structure(outcaps, 0);
  const char *dims = output_meta ? nullptr : gst_structure_get_string(out, "dimensions");
  const std::string expected = dimensions_of(spec.layout, spec.out_width, spec.out_height);
  if (dims && expected != dims) {
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                      ("Downstream asks for tensor dimensions %s; this makes %s", dims, expected.c_str()),
                      ("output caps %" GST_PTR_FORMAT, outcaps));
    return FALSE;
  }
  tensormem::Result<tensormem::FrameConverter> made = tensormem::FrameConverter::create(spec);
  if (!made) {
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS, ("%s", made.error().message().c_str()),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }

  auto impl = std::make_unique<Impl>();
  impl->output_meta = output_meta;
  impl->tensor_id = g_quark_from_string(s.tensor_id.c_str());
  // PBO output caps are the GL path's; anything else the CPU path's. With
  // output=meta the pool's buffers are tensors beside the frame.
  const Backend *gl = gl_pass_backend();
  impl->use_gl = !output_meta && gl && caps_have_feature(outcaps, 0, gl->caps_feature);
  GstCaps *pool_caps = output_meta ? gst_caps_new_full(tensor_structure(s, gst_caps_get_structure(incaps, 0)), nullptr)
                                   : gst_caps_ref(outcaps);
  gsize buffer_bytes = made->output_bytes();
  GstAllocator *allocator = nullptr;
  if (impl->use_gl) {
#if GST_TENSOR_MEM_HAVE_GL
    GError *error = nullptr;
    if (!devices_.find_device(*gl, &error)) {
      GST_ELEMENT_ERROR(element_, RESOURCE, FAILED,
                        ("PBO tensor output needs a GL worker: %s", error ? error->message : "no GL worker"),
                        ("use storage=system or dmabuf on a machine without a usable EGL"));
      g_clear_error(&error);
      gst_caps_unref(pool_caps);
      return FALSE;
    }
    GstObject *worker = devices_.device_of(*gl);
    std::shared_ptr<tensormem::GlWorker> core = core_worker(worker);
    tensormem::Result<std::shared_ptr<tensormem::GlFrameConverter>> pass =
        tensormem::GlFrameConverter::create(core, *made);
    if (!pass) {
      GST_ELEMENT_ERROR(element_, RESOURCE, FAILED,
                        ("The GL conversion pass cannot be made: %s", pass.error().message().c_str()),
                        ("GL worker %s; use storage=system", core ? core->info().version.c_str() : "(none)"));
      gst_clear_object(&worker);
      gst_caps_unref(pool_caps);
      return FALSE;
    }
    impl->pass = std::move(*pass);
    buffer_bytes = impl->pass->padded_output_bytes();
    allocator = gl->new_allocator(worker);
    gst_clear_object(&worker);
    GST_INFO_OBJECT(element_, "GL compute pass on %s (%s)", core->info().renderer.c_str(),
                    core->info().version.c_str());
#else
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("PBO tensor output needs OpenGL, which this build lacks"),
                      (nullptr));
    return FALSE;
#endif
  } else {
    // The CPU path writes the asked family where it maps as system memory
    // and needs no device (DMA-BUF); auto writes system memory.
    const Backend &system = backend_for(GST_TENSOR_MEM_STORAGE_SYSTEM);
    const Backend &asked = s.storage == GST_TENSOR_MEM_STORAGE_AUTO ? system : backend_for(s.storage);
    const Backend &cpu = asked.maps_as_system && !asked.ensure_device ? asked : system;
    allocator = cpu.new_allocator(nullptr);
  }
  if (buffer_bytes > G_MAXUINT) {
    gst_object_unref(allocator);
    gst_caps_unref(pool_caps);
    GST_ELEMENT_ERROR(element_, LIBRARY, SETTINGS,
                      ("A %ux%u tensor of %s is %" G_GSIZE_FORMAT " bytes, more than a buffer pool holds",
                       spec.out_width, spec.out_height, tensor_type_name(spec.dtype), buffer_bytes),
                      ("input caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  // Output buffers come from a pool (PBOs, too: made once, reused).
  GstBufferPool *pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, pool_caps, static_cast<guint>(buffer_bytes), 2, 0);
  // Before 1.28 the frame's caps cannot describe its tensor: an event does.
  if (output_meta && !GST_TENSOR_MEM_HAVE_TENSOR_CAPS)
    impl->described = gst_tensor_mem_frame_tensor_event_new(pool_caps);
  gst_caps_unref(pool_caps);
  gst_buffer_pool_config_set_allocator(config, allocator, nullptr);
  gst_object_unref(allocator);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    GST_ELEMENT_ERROR(element_, RESOURCE, NO_SPACE_LEFT,
                      ("Cannot make a pool of %" G_GSIZE_FORMAT "-byte tensors", buffer_bytes), (nullptr));
    return FALSE;
  }
  impl->pool = pool;
  impl->in_info = info;
  impl->converter.emplace(std::move(*made));
  const guint threads = s.n_threads ? s.n_threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (impl_->workers && impl_->workers->threads() == threads)
    impl->workers = std::move(impl_->workers);
  else
    impl->workers = std::make_unique<RowWorkers>(threads);
  GST_INFO_OBJECT(element_, "%ux%u %s -> %s tensor %ux%u, %s", spec.in_width, spec.in_height,
                  GST_VIDEO_INFO_NAME(&info), expected.c_str(), spec.out_width, spec.out_height,
                  impl->use_gl ? "GL compute pass"
                               : (std::to_string(impl->workers->threads()) + " CPU thread(s)").c_str());
  impl_ = std::move(impl);
  return TRUE;
}

/* The GL path writes into a slot pool's windows only where they are PBO
 * windows of its own worker, and the pass's whole words end where the slot
 * does (a tensor of a multiple of 4 bytes): else the next slot's first
 * bytes would be overwritten. */
bool TensorConverter::gl_can_write_slots(GstBufferPool *pool) const {
#if GST_TENSOR_MEM_HAVE_GL
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstTensorMemGlWorker *worker = nullptr;
  gst_structure_get(config, GST_TENSOR_MEM_BATCH_SLOT_POOL_GL_WORKER, GST_TYPE_TENSOR_MEM_GL_WORKER, &worker, nullptr);
  gst_structure_free(config);
  const bool same = worker && gst_tensor_mem_gl_worker_get_core_gl_worker(worker) == impl_->pass->worker();
  gst_clear_object(&worker);
  const bool whole_words = impl_->pass->padded_output_bytes() == impl_->converter->output_bytes();
  if (!same || !whole_words)
    GST_INFO_OBJECT(element_, "downstream's slot pool %" GST_PTR_FORMAT " %s; its slots get copies", pool,
                    !same ? "is not PBO windows of this GL worker" : "has slots that end inside a 32-bit word");
  return same && whole_words;
#else
  (void)pool;
  return false;
#endif
}

gboolean TensorConverter::adopt_slot_pool(GstQuery *query, GstPad *srcpad) {
  if (!negotiated())
    return FALSE;
  if (GstEvent *described = std::exchange(impl_->described, nullptr)) {
    // The frame's caps are out, so its tensor's description may follow
    // now, and the query, which went before it, is asked again.
    gst_pad_push_event(srcpad, described);
    GstCaps *caps = nullptr;
    gst_query_parse_allocation(query, &caps, nullptr);
    GstQuery *again = gst_query_new_allocation(caps, TRUE);
    const gboolean adopted = gst_pad_peer_query(srcpad, again) && adopt_slot_pool(again, srcpad);
    gst_query_unref(again);
    return adopted;
  }
  if (gst_query_get_n_allocation_pools(query) == 0)
    return FALSE;
  GstBufferPool *pool = nullptr;
  guint size = 0, min = 0, max = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
  if (!pool)
    return FALSE;
  const gsize bytes = impl_->converter->output_bytes();
  if (!gst_buffer_pool_has_option(pool, GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT) || size < bytes ||
      (impl_->use_gl && !gl_can_write_slots(pool))) {
    gst_object_unref(pool);
    return FALSE;
  }
  // An active pool was configured by whoever activated it (the element
  // before a renegotiation); an inactive one gets its size from us.
  bool usable = true;
  if (!gst_buffer_pool_is_active(pool)) {
    GstStructure *config = gst_buffer_pool_get_config(pool);
    GstCaps *caps = nullptr;
    gst_buffer_pool_config_get_params(config, &caps, nullptr, nullptr, nullptr);
    gst_buffer_pool_config_set_params(config, caps, size, min, max);
    usable = gst_buffer_pool_set_config(pool, config);
  }
  if (!usable || !gst_buffer_pool_set_active(pool, TRUE)) {
    GST_WARNING_OBJECT(element_, "downstream's slot pool %" GST_PTR_FORMAT " cannot be used; its slots get copies",
                       pool);
    gst_object_unref(pool);
    return FALSE;
  }
  impl_->drop_pool();
  impl_->pool = pool;
  GST_INFO_OBJECT(element_, "writing tensors in place into downstream's batch slots (%" GST_PTR_FORMAT ")", pool);
  return TRUE;
}

/* ---- per frame ---- */

GstFlowReturn TensorConverter::acquire(GstBuffer **out, GstClockTime running_time) {
  if (!negotiated()) {
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("No caps before the first buffer"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstBufferPoolAcquireParams params = {};
  params.format = GST_FORMAT_TIME;
  params.start = static_cast<gint64>(running_time);
  params.stop = -1;
  const GstFlowReturn acquired =
      gst_buffer_pool_acquire_buffer(impl_->pool, out, GST_CLOCK_TIME_IS_VALID(running_time) ? &params : nullptr);
  if (acquired != GST_FLOW_OK)
    return acquired;
  // The GL pass writes whole words: its PBOs may be up to 3 bytes longer.
  const gsize bytes = impl_->converter->output_bytes();
  if (gst_buffer_get_size(*out) != bytes)
    gst_buffer_set_size(*out, static_cast<gssize>(bytes));
  return GST_FLOW_OK;
}

GstFlowReturn TensorConverter::convert(GstBuffer *inbuf, GstBuffer *outbuf, const ConvertHooks &hooks, gsize *copied) {
  *copied = 0;
  if (!impl_->output_meta) {
    const GstFlowReturn ret = convert_into(inbuf, outbuf, hooks, copied);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
    // GStreamer's description of the same bytes: a buffer sharing the
    // output's memory, no copy.
    if (ret == GST_FLOW_OK)
      attach_tensor_meta(outbuf, nullptr, impl_->converter->spec(), impl_->tensor_id);
#endif
    return ret;
  }
  GstBuffer *tensor = nullptr;
  GstFlowReturn ret = acquire(&tensor, hooks.running_time);
  if (ret != GST_FLOW_OK)
    return ret;
  gst_buffer_copy_into(tensor, inbuf, GST_BUFFER_COPY_TIMESTAMPS, 0, static_cast<gsize>(-1));
  ret = convert_into(inbuf, tensor, hooks, copied);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref(tensor);
    return ret;
  }
  attach_resize_meta(outbuf, *impl_->converter);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  attach_tensor_meta(outbuf, tensor, impl_->converter->spec(), impl_->tensor_id);
#else
  gst_buffer_unref(tensor); // start() refuses output=meta without GstTensorMeta
#endif
  return GST_FLOW_OK;
}

GstFlowReturn TensorConverter::convert_into(GstBuffer *inbuf, GstBuffer *outbuf, const ConvertHooks &hooks,
                                            gsize *copied) {
  Impl &impl = *impl_;
  const GstFlowReturn valid = gst_tensor_mem_element_validate_buffer(element_, inbuf, &impl.in_info);
  if (valid != GST_FLOW_OK)
    return valid;
  const tensormem::FrameConverter &converter = *impl.converter;
  if (impl.use_gl) {
    GstObject *worker = devices_.device_of(*gl_pass_backend());
    const GstFlowReturn ret = convert_gl(element_, impl, worker, frames_, inbuf, outbuf, hooks, copied);
    gst_clear_object(&worker);
    if (ret != GST_FLOW_OK)
      return ret;
    attach_resize_meta(outbuf, converter);
    ++frames_;
    return GST_FLOW_OK;
  }
  // The CPU reads the frame: its producers' writes must be complete (the
  // same bounded, cancellable wait every element makes before reading).
  if (gst_buffer_get_meta(inbuf, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    const GstFlowReturn fenced =
        gst_tensor_mem_element_wait_fences(element_, inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, hooks.waits, nullptr);
    if (fenced != GST_FLOW_OK)
      return fenced;
  } else {
    gst_buffer_wait_tensor_mem_gl_sync_metas(inbuf);
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &impl.in_info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(element_, RESOURCE, READ, ("Cannot read frame %" G_GUINT64_FORMAT, frames_),
                      ("gst_video_frame_map failed"));
    return GST_FLOW_ERROR;
  }
  GstMapInfo out;
  if (!gst_buffer_map(outbuf, &out, GST_MAP_WRITE) || out.size < converter.output_bytes()) {
    if (out.memory)
      gst_buffer_unmap(outbuf, &out);
    gst_video_frame_unmap(&frame);
    const gchar *why = gst_tensor_mem_memory_get_last_map_failure();
    GST_ELEMENT_ERROR(
        element_, RESOURCE, WRITE,
        ("Cannot write tensor %" G_GUINT64_FORMAT ": %s", frames_,
         why ? why : "the output buffer does not map for writing"),
        ("mapping %" G_GSIZE_FORMAT " bytes of %" GST_PTR_FORMAT " for writing", converter.output_bytes(), outbuf));
    return GST_FLOW_ERROR;
  }
  tensormem::FramePlanes planes;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < tensormem::kMaxPlanes; ++p) {
    planes.data[p] = static_cast<const std::uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    planes.stride[p] = static_cast<std::size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));
  }
  // Bands of at least 8 rows, a few per thread so that uneven rows even out.
  const guint rows = converter.spec().out_height;
  const guint bands = std::clamp(rows / 8, 1u, impl.workers->threads() * 4);
  auto *data = reinterpret_cast<std::byte *>(out.data);
  impl.workers->run(bands, [&](guint band) {
    const auto begin = static_cast<std::uint32_t>(static_cast<guint64>(rows) * band / bands);
    const auto end = static_cast<std::uint32_t>(static_cast<guint64>(rows) * (band + 1) / bands);
    converter.convert_rows(planes, data, begin, end);
  });
  gst_buffer_unmap(outbuf, &out);
  gst_video_frame_unmap(&frame);
  attach_resize_meta(outbuf, converter);
  ++frames_;
  return GST_FLOW_OK;
}

} // namespace gst_tensormem
