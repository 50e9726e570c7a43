// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and its elements: the frame → tensor converter
 * behind tensorconvert (as GstGLColorConvert is behind glcolorconvert).
 *
 * It owns everything between negotiation and the output buffer: the
 * conversion (tensormem::FrameConverter), its output pool, the CPU path's row
 * threads, and the GL path (the compute pass on a GL worker shared through
 * GstContext, the staging PBO for frames in other memory, the waits for the
 * input's fences and the fence of the pass's write). The element keeps its
 * properties and caps and hands each frame over. The batching element reuses
 * it per slot. C++ only; not installed. */
#pragma once

#include <gio/gio.h>
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

#include <tensormem/frame_convert.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gst_tensormem {

/* What the element outputs: the tensor itself (other/tensors), or the video
 * frame with the tensor attached as a GstTensorMeta (GStreamer 1.26). */
enum class ConvertOutput : gint { Tensor = 0, Meta = 1 };

/* A snapshot of the element's properties for one negotiation. */
struct ConvertSettings {
  guint width = 0, height = 0; // 0: the frame's
  tensormem::ResizeMode resize = tensormem::ResizeMode::Stretch;
  guint pad_value = 0;
  tensormem::ChannelOrder order = tensormem::ChannelOrder::Rgb;
  tensormem::DType dtype = tensormem::DType::F32;
  tensormem::TensorLayout layout = tensormem::TensorLayout::Nchw;
  std::vector<double> mean{0.0, 0.0, 0.0}, std_dev{1.0, 1.0, 1.0};
  /* The output's memory, which picks the path: pbo the GL path, system and
   * dmabuf the CPU path, auto either (see outputs_for). */
  GstTensorMemStorage storage = GST_TENSOR_MEM_STORAGE_AUTO;
  guint n_threads = 0; // 0: one per CPU, at most 8
  ConvertOutput output = ConvertOutput::Tensor;
  std::string tensor_id = "input"; // the GstTensorMeta's id
};

/* What a conversion asks of its element, per frame. */
struct ConvertHooks {
  GCancellable *waits; // cancels fence waits (flush, PAUSED→READY)
  /* The element's require-zero-copy check (see UploadContext::allow_copy). */
  GstFlowReturn (*allow_copy)(GstElement *element, GstBuffer *in, const char *refusal, const char *why);
  /* output=meta: the frame's running time, for a batch slot pool (see
   * acquire). */
  GstClockTime running_time = GST_CLOCK_TIME_NONE;
};

/* NNStreamer's caps name of a tensor element type ("uint8", "float16", "float32"). */
const char *tensor_type_name(tensormem::DType dtype);

class TensorConverter {
public:
  explicit TensorConverter(GstElement *element);
  ~TensorConverter();
  TensorConverter(const TensorConverter &) = delete;
  TensorConverter &operator=(const TensorConverter &) = delete;

  /* The source pad template's caps: `tensor` (other/tensors without
   * features: the CPU path) once plain and once with the caps feature of
   * the GL pass's family where this build has the pass, then `frame` (the
   * output=meta caps; NULL for none). New reference. */
  static GstCaps *src_template_caps(const char *tensor, const char *frame);
  /* Source caps for video caps `caps` (the tensor's type always, its
   * dimensions where the sizes are known), PBO first where the GL path is
   * preferred. */
  static GstCaps *tensor_caps(const ConvertSettings &s, GstCaps *caps);
  /* output=meta: the frame's caps on the other side. Towards the source on
   * GStreamer 1.28 they describe the tensor, as a group named after its id
   * in the `tensors` field (the frame's size or the element's must be
   * known); towards the sink they lose that field. Elsewhere unchanged. */
  static GstCaps *frame_caps(const ConvertSettings &s, GstCaps *caps, GstPadDirection direction);

  /* GstBaseTransform::start: settings that cannot work together fail here,
   * and an explicit GL request finds its GL worker (FALSE after an element
   * error). stop() forgets the negotiation. */
  gboolean start(const ConvertSettings &s);
  void stop();
  /* READY→NULL: lets go of the GL worker. */
  void close();
  void handle_set_context(GstContext *context);
  gboolean handle_context_query(GstQuery *query);

  /* The conversion, its pool and its path for these caps; FALSE after an
   * element error naming what does not fit. */
  gboolean set_caps(const ConvertSettings &s, GstCaps *incaps, GstCaps *outcaps);
  bool negotiated() const;
  /* GstBaseTransform::decide_allocation, after set_caps: with
   * output=tensor, a downstream pool of batch slots
   * (GST_BUFFER_POOL_OPTION_TENSOR_MEM_BATCH_SLOT, from tensorbatch) whose
   * buffers hold the tensor replaces the converter's own, so each tensor is
   * written in place into its slot of the batch: on the CPU path always, on
   * the GL path where the slots are PBO windows of the pass's GL worker.
   * TRUE when it was taken. With output=meta before GStreamer 1.28, whose
   * video caps cannot describe the tensor beside the frame, it first sends
   * the GST_TENSOR_MEM_FRAME_TENSOR_EVENT describing it on `srcpad` (after
   * the caps, once per negotiation), and asks downstream again: the
   * batching element proposes slots of that tensor only once it knows it. */
  gboolean adopt_slot_pool(GstQuery *query, GstPad *srcpad);
  /* output=tensor: an output buffer of the pool, sized to the tensor.
   * `running_time`, where valid, is the frame's: a batch slot pool puts the
   * tensor into the batch of that time. */
  GstFlowReturn acquire(GstBuffer **out, GstClockTime running_time = GST_CLOCK_TIME_NONE);
  /* output=tensor: converts `in` into `out`. output=meta: converts `in` into
   * a tensor of the pool and attaches it to `out` (the frame, writable) as a
   * GstTensorMeta. *copied is the bytes copied on the way (the GL path
   * staging a frame in other memory). Where GstTensorMeta exists (1.26) the
   * tensor output carries one too, over its own memory. */
  GstFlowReturn convert(GstBuffer *in, GstBuffer *out, const ConvertHooks &hooks, gsize *copied);

  guint64 frames() const { return frames_; }

  struct Impl; // the state of one negotiation

private:
  GstFlowReturn convert_into(GstBuffer *in, GstBuffer *tensor, const ConvertHooks &hooks, gsize *copied);
  bool gl_can_write_slots(GstBufferPool *pool) const;

  GstElement *element_;
  ElementBackend devices_; // the GL worker, shared through GstContext
  std::unique_ptr<Impl> impl_;
  guint64 frames_ = 0;
};

} // namespace gst_tensormem
