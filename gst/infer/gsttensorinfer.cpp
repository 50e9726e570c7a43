// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorinfer
 * @title: tensorinfer
 *
 * Runs an ONNX model (ONNX Runtime) on each tensor and hands the model's
 * outputs on as GStreamer expects them.
 *
 * Input: `other/tensors` buffers (one static tensor, as `tensorconvert`
 * makes), or video frames carrying a #GstTensorMeta (`tensorconvert
 * output=meta`; the tensor whose id is the model input's name, or the only
 * one). The tensor's element type and shape are checked against the model's
 * one input: same type, same rank, every dimension the model fixes equal;
 * dimensions the model leaves open (a batch, a dynamic size) are taken from
 * the stream. A mismatch is one element error naming both.
 *
 * The input is never copied: the element waits for the buffer's fences
 * (#GstTensorMemFenceMeta), maps the tensor's memory for reading and hands
 * ONNX Runtime a tensor over the mapped bytes; the map ends when the run
 * has. The one exception is a tensor spread over several memories, which
 * is gathered once into a scratch buffer, counted in
 * #GstTensorMemInfer:copied-bytes and refused under
 * #GstTensorMemInfer:require-zero-copy.
 *
 * Outputs of a fixed size are written by ONNX Runtime straight into pooled
 * buffers (no allocation per frame once the pool is warm); outputs whose
 * size the data decides (NonZero, in-graph NMS) are ONNX Runtime's own
 * allocations, wrapped without a copy, at their real size frame by frame;
 * an output that is the model's input is copied (counted). With output=meta the input
 * buffer goes on with one #GstTensor per model output added to its
 * #GstTensorMeta (a new meta when it had none), id the output's name; with
 * output=tensors the element outputs an `other/tensors` buffer holding one
 * memory per model output (input must then be `other/tensors`), described
 * on GStreamer 1.26+ by its #GstTensorMeta (one #GstTensor per output,
 * sharing its memory, id the output's name), which replaces any the input
 * carried.
 *
 * The session is made at READY→PAUSED and kept until PAUSED→READY; the
 * model, execution-provider, threads and output properties are read then,
 * and refused (with a warning message) while the element runs. Output shapes are
 * learnt by one run over zeros when the input's shape first appears (the
 * model may leave them open).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=10 ! tensorconvert width=224 height=224 layout=nchw output=meta ! \
 *   tensorinfer model=model.onnx ! fakesink
 * ]|
 *
 * Since: 0.2
 */
#include "gsttensorinfer.h"

#include "gsttensorinferpool.h"
#include "modelinfo.hpp"
#include "ort_model.hpp"

#include <gst/tensormem/gsttensoranalytics-private.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorwritable.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_infer_debug);
#define GST_CAT_DEFAULT gst_tensor_infer_debug

using gst_tensorinfer::Model;
using gst_tensorinfer::Provider;

namespace {

enum class Output { Meta, Tensors };

/* Video frames carry their tensor in a GstTensorMeta (GStreamer 1.26):
 * without one, tensors only. */
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#define INFER_CAPS "other/tensors(ANY); video/x-raw(ANY)"
constexpr Output kDefaultOutput = Output::Meta;
#else
#define INFER_CAPS "other/tensors(ANY)"
constexpr Output kDefaultOutput = Output::Tensors;
#endif

enum {
  PROP_0,
  PROP_MODEL,
  PROP_EXECUTION_PROVIDER,
  PROP_THREADS,
  PROP_SPIN,
  PROP_OUTPUT,
  PROP_COPIED_BYTES,
  PROP_REQUIRE_ZERO_COPY,
  PROP_ONNXRUNTIME
};

/* Pooled output buffers made before the first frame: what a pipeline with a
 * queue or two holds at once. */
constexpr guint kMinPoolBuffers = 2;

/* What one input shape needs: the output shapes and the pools their
 * buffers come from (output=meta: one pool per output, each buffer one
 * memory; output=tensors: one pool, each buffer one memory per output). */
struct Prepared {
  ONNXTensorElementDataType type;
  std::vector<std::int64_t> shape;
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<gsize> output_bytes;
  /* Per output: true where ORT allocates it each frame rather than write a
   * pooled buffer in place: an output whose size depends on the data (the
   * zero run gave none, or a frame gave another shape), or one that is the
   * model's input, which ORT hands back without writing the buffer it is
   * given. */
  std::vector<bool> ort_allocated;
  /* output=meta: one pool per output (nullptr for an empty one);
   * output=tensors: one pool. */
  std::vector<GstBufferPool *> pools;
  /* output=tensors: the output shapes the src caps last announced. */
  std::vector<std::vector<std::int64_t>> announced;

  Prepared() = default;
  Prepared(const Prepared &) = delete;
  Prepared &operator=(const Prepared &) = delete;
  ~Prepared() {
    for (GstBufferPool *pool : pools) {
      if (!pool)
        continue;
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
    }
  }
};

struct InferState {
  /* Shared with the buffers that wrap outputs ORT allocated: the session
   * (and its allocator) lives until the last of them is freed. */
  std::shared_ptr<Model> model;
  Output output = kDefaultOutput;
  // From set_caps: an other/tensors stream's tensor; unset for video.
  bool tensor_caps = false;
  ONNXTensorElementDataType caps_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> caps_shape;
  /* Guards `prepared` and `refused`: transform_caps (output=tensors) may
   * prepare from a query's thread while the streaming thread reads. */
  std::mutex lock;
  std::unique_ptr<Prepared> prepared;
  // The input that failed last, so its element error is posted once.
  std::optional<std::pair<ONNXTensorElementDataType, std::vector<std::int64_t>>> refused;
  std::vector<guint8> scratch; // a tensor in several memories, gathered
  guint64 frames = 0;
  /* What the tensors are called (the model's .modelinfo where there is
   * one, else the model's own names): the input's id, each output's id and
   * dims order, and the group GStreamer 1.28's caps list the outputs in. */
  std::string input_id;
  std::vector<std::string> output_ids;
  std::vector<bool> output_col_major;
  std::string group_id;
};

} // namespace

struct _GstTensorMemInfer {
  GstBaseTransform parent;
  // Properties, under the object lock.
  gchar *model_path;
  Provider provider;
  guint threads;
  Output output;
  gboolean require_zero_copy;
  gboolean spin;
  guint64 copied_bytes;
  // Between start and stop: the properties read at start are refused.
  gboolean running;
  // Cancelled on flush-start and PAUSED→READY: fence waits end with FLUSHING.
  GCancellable *waits;
  InferState *state;
};

G_DEFINE_TYPE(GstTensorMemInfer, gst_tensor_infer, GST_TYPE_BASE_TRANSFORM)

namespace {

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(INFER_CAPS));
GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(INFER_CAPS));

GType provider_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(Provider::Cpu), "ONNX Runtime's CPU provider", "cpu"},
      {static_cast<gint>(Provider::Cuda), "CUDA provider (an error where the runtime has none)", "cuda"},
      {static_cast<gint>(Provider::Auto), "CUDA where the runtime has it, else the CPU", "auto"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemInferProvider", values));
  return type;
}

GType output_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(Output::Meta), "The input buffer with the outputs in its GstTensorMeta", "meta"},
      {static_cast<gint>(Output::Tensors), "An other/tensors buffer of the outputs, one memory each", "tensors"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTensorMemInferOutput", values));
  return type;
}

/* An other/tensors element type (gsttensorcaps.h) in ONNX terms, by the
 * names both spell alike ("float32", "uint8"). */
ONNXTensorElementDataType onnx_type_of_caps(const gst_tensormem::TensorCaps &caps) {
  static const char *const kCodes[] = {"int", "uint", "float"};
  const std::string name = kCodes[static_cast<int>(caps.code)] + std::to_string(caps.bits);
  for (ONNXTensorElementDataType type :
       {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE})
    if (name == gst_tensorinfer::type_name(type))
      return type;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
struct TypePair {
  GstTensorDataType gst;
  ONNXTensorElementDataType onnx;
};
// BOOL has no GstTensorDataType: it leaves as uint8 (ONNX stores one byte per bool).
constexpr TypePair kTypes[] = {
    {GST_TENSOR_DATA_TYPE_INT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8},
    {GST_TENSOR_DATA_TYPE_INT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16},
    {GST_TENSOR_DATA_TYPE_INT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32},
    {GST_TENSOR_DATA_TYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64},
    {GST_TENSOR_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8},
    {GST_TENSOR_DATA_TYPE_UINT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16},
    {GST_TENSOR_DATA_TYPE_UINT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32},
    {GST_TENSOR_DATA_TYPE_UINT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64},
    {GST_TENSOR_DATA_TYPE_FLOAT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16},
    {GST_TENSOR_DATA_TYPE_FLOAT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT},
    {GST_TENSOR_DATA_TYPE_FLOAT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE},
    {GST_TENSOR_DATA_TYPE_BFLOAT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16},
    {GST_TENSOR_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL},
};

/* `type` is an integer: it may come from a foreign meta, unchecked. */
ONNXTensorElementDataType onnx_type_of(gint type) {
  for (const TypePair &pair : kTypes)
    if (static_cast<gint>(pair.gst) == type)
      return pair.onnx;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

/* The integer an enum field holds, read without loading it as the enum. */
template <typename Enum> gint raw_enum(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(gint));
  gint value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

GstTensorDataType gst_type_of(ONNXTensorElementDataType type) {
  for (const TypePair &pair : kTypes)
    if (pair.onnx == type)
      return pair.gst;
  return GST_TENSOR_DATA_TYPE_UINT8; // never: Model::load refuses outputs of other types
}

#endif

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* The outputs of shapes `shapes` as GStreamer 1.28's caps describe them:
 * named, typed and ordered as the model (and its .modelinfo) says; 0 for a
 * dimension the shapes leave open. */
std::vector<gst_tensormem::CapsTensor> caps_outputs(const InferState &state,
                                                    const std::vector<std::vector<std::int64_t>> &shapes) {
  std::vector<gst_tensormem::CapsTensor> outputs;
  for (std::size_t o = 0; o < shapes.size(); ++o) {
    gst_tensormem::CapsTensor t;
    t.id = state.output_ids[o];
    t.type = gst_type_of(state.model->outputs()[o].type);
    for (std::int64_t d : shapes[o])
      t.dims.push_back(d > 0 ? static_cast<gsize>(d) : 0);
    t.order = state.output_col_major[o] ? GST_TENSOR_DIM_ORDER_COL_MAJOR : GST_TENSOR_DIM_ORDER_ROW_MAJOR;
    outputs.push_back(std::move(t));
  }
  return outputs;
}
#endif

/* Each output in NNStreamer's caps terms: `types` and innermost-first
 * `dimensions`, tensors separated by commas; on GStreamer 1.28 also in its
 * own terms (the `tensors` field, as output=meta's frames carry it), which
 * tensorunbatch hands to each stream of frames after a batch. */
GstCaps *tensors_caps(const InferState &state, const std::vector<std::vector<std::int64_t>> &shapes,
                      const GstStructure *in) {
  const Model &model = *state.model;
  std::string types, dims;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false
    // positive) on "literal" + std::string&&.
    types += i ? "," : "";
    types += gst_tensorinfer::type_name(model.outputs()[i].type);
    dims += i ? "," : "";
    const std::vector<std::int64_t> &shape = shapes[i];
    for (std::size_t d = shape.size(); d-- > 0;)
      dims += std::to_string(shape[d]) + (d ? ":" : "");
    if (shape.empty())
      dims += "1";
  }
  GstStructure *s = gst_structure_new("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT,
                                      static_cast<gint>(shapes.size()), "types", G_TYPE_STRING,
                                      types.c_str(), "dimensions", G_TYPE_STRING, dims.c_str(), nullptr);
  if (const GValue *rate = in ? gst_structure_get_value(in, "framerate") : nullptr)
    gst_structure_set_value(s, "framerate", rate);
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
  gst_tensormem::set_caps_tensor_group(s, state.group_id.c_str(), caps_outputs(state, shapes));
#endif
  return gst_caps_new_full(s, nullptr);
}

bool input_is_refused(InferState *state, ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape) {
  return state->refused && state->refused->first == type && state->refused->second == shape;
}

/* The pools and output shapes for an input of `type` and `shape`, made
 * once per shape. False after one element error saying why (the model does
 * not take it, ORT cannot run it, a pool cannot be made); a shape refused
 * before is refused again without a second error. Call with the lock. */
bool prepare(GstTensorMemInfer *self, ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape) {
  InferState *state = self->state;
  if (state->prepared && state->prepared->type == type && state->prepared->shape == shape)
    return true;
  if (input_is_refused(state, type, shape))
    return false;
  auto refuse = [state, type, &shape]() {
    state->refused.emplace(type, shape);
    return false;
  };
  Model &model = *state->model;
  std::string why;
  if (!model.accepts(type, shape, &why)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The model does not take this stream's tensor: %s.", why.c_str()),
                      (nullptr));
    return refuse();
  }
  auto prepared = std::make_unique<Prepared>();
  prepared->type = type;
  prepared->shape = shape;
  if (!model.output_shapes(shape, &prepared->output_shapes, &why)) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED,
                      ("ONNX Runtime cannot run the model on a %s %s tensor: %s", gst_tensorinfer::type_name(type),
                       gst_tensorinfer::shape_text(shape).c_str(), why.c_str()),
                      (nullptr));
    return refuse();
  }
  guint64 total = 0;
  const std::string &input_name = model.input().name;
  for (std::size_t i = 0; i < prepared->output_shapes.size(); ++i) {
    const gst_tensorinfer::Port &port = model.outputs()[i];
    const std::vector<std::int64_t> &out_shape = prepared->output_shapes[i];
    bool empty = false;
    for (std::int64_t d : out_shape)
      empty = empty || d == 0;
    const gsize bytes = empty ? 0 : gst_tensorinfer::tensor_bytes(port.type, out_shape);
    total += bytes;
    if ((!empty && bytes == 0) || total > G_MAXUINT) {
      GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                        ("Model output '%s' has shape %s: too large to hand on.", port.name.c_str(),
                         gst_tensorinfer::shape_text(out_shape).c_str()),
                        (nullptr));
      return refuse();
    }
    prepared->output_bytes.push_back(bytes);
    // An empty output at the zero run is one whose size the data decides (NonZero, NMS).
    prepared->ort_allocated.push_back(empty || port.name == input_name);
    if (prepared->ort_allocated.back())
      GST_INFO_OBJECT(self, "output '%s' is allocated by ONNX Runtime frame by frame (%s)", port.name.c_str(),
                      empty ? "empty at the zero run: its size depends on the data" : "it is the model's input");
  }
  prepared->announced = prepared->output_shapes;
  const auto n_outputs = static_cast<guint>(prepared->output_bytes.size());
  bool made = true;
  if (state->output == Output::Tensors) {
    GstBufferPool *pool = gst_tensor_infer_pool_new(prepared->output_bytes.data(), n_outputs, kMinPoolBuffers);
    made = pool != nullptr;
    prepared->pools.push_back(pool);
  } else {
    for (std::size_t i = 0; i < prepared->output_bytes.size(); ++i) {
      GstBufferPool *pool = nullptr;
      if (prepared->output_bytes[i] != 0) {
        pool = gst_tensor_infer_pool_new(&prepared->output_bytes[i], 1, kMinPoolBuffers);
        made = made && pool != nullptr;
      }
      prepared->pools.push_back(pool);
    }
  }
  if (!made) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot make the pool of output buffers."), (nullptr));
    return refuse();
  }
  GST_INFO_OBJECT(self, "input %s %s: %u outputs, first %s", gst_tensorinfer::type_name(type),
                  gst_tensorinfer::shape_text(shape).c_str(), n_outputs,
                  gst_tensorinfer::shape_text(prepared->output_shapes[0]).c_str());
  state->prepared = std::move(prepared);
  state->refused.reset();
  return true;
}

/* Where a buffer's input tensor is: its bytes and what they are. */
struct InputTensor {
  GstBuffer *data = nullptr; // not owned
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> shape;
};

bool find_input(GstTensorMemInfer *self, GstBuffer *buffer, InputTensor *input) {
  InferState *state = self->state;
  if (state->tensor_caps) {
    input->data = buffer;
    input->type = state->caps_type;
    input->shape = state->caps_shape;
    return true;
  }
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  if (!meta || meta->num_tensors == 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("A video frame without a GstTensorMeta: there is no tensor to infer on."),
                      ("put tensorconvert output=meta before tensorinfer, or feed it other/tensors"));
    return false;
  }
  const std::string &name = state->input_id;
  gint index = gst_tensor_meta_get_index_from_id(meta, g_quark_from_string(name.c_str()));
  if (index < 0 && name != state->model->input().name)
    index = gst_tensor_meta_get_index_from_id(meta, g_quark_from_string(state->model->input().name.c_str()));
  if (index < 0 && meta->num_tensors != 1) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("The frame's GstTensorMeta has %" G_GSIZE_FORMAT " tensors and none is named '%s' (the "
                       "model's input).",
                       meta->num_tensors, name.c_str()),
                      (nullptr));
    return false;
  }
  const GstTensor *tensor = gst_tensor_meta_get(meta, index < 0 ? 0 : static_cast<gsize>(index));
  /* A foreign meta's enum fields may hold any value (99, from a producer
   * built against a later GStreamer, or garbage): read as integers, so
   * that no enum holds a value it does not define. */
  const gint data_type = raw_enum(tensor->data_type), dims_order = raw_enum(tensor->dims_order);
  const ONNXTensorElementDataType onnx_type = onnx_type_of(data_type);
  if (!tensor->data || dims_order != GST_TENSOR_DIM_ORDER_ROW_MAJOR ||
      onnx_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Tensor '%s' of the frame's GstTensorMeta is not a row-major tensor with data of a type "
                       "tensorinfer reads.",
                       g_quark_to_string(tensor->id)),
                      (nullptr));
    return false;
  }
  input->data = tensor->data;
  input->type = onnx_type;
  input->shape.assign(tensor->dims, tensor->dims + tensor->num_dims);
  return true;
#else
  GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("A buffer without a tensor: tensorinfer takes other/tensors here."),
                    ("built without GstTensorMeta (GStreamer < 1.26)"));
  return false;
#endif
}

void count_copy(GstTensorMemInfer *self, gsize bytes) {
  GST_OBJECT_LOCK(self);
  self->copied_bytes += bytes;
  GST_OBJECT_UNLOCK(self);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The outputs as GstTensors in the buffer's GstTensorMeta, after the
 * tensors it already carries (the input, from tensorconvert): one meta per
 * buffer, so gst_buffer_get_tensor_meta() finds inputs and outputs alike.
 * `results` (transfer full) hold output i's bytes, `shapes` its shape this
 * frame. */
void attach_outputs(GstBuffer *buffer, const InferState &state, const std::vector<std::vector<std::int64_t>> &shapes,
                    GstBuffer **results) {
  const Model &model = *state.model;
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  const gsize kept = meta ? meta->num_tensors : 0;
  if (!meta)
    meta = gst_buffer_add_tensor_meta(buffer);
  const gsize n = shapes.size();
  auto **tensors = g_new(GstTensor *, kept + n);
  for (gsize i = 0; i < kept; ++i)
    tensors[i] = gst_tensor_copy(meta->tensors[i]);
  for (gsize i = 0; i < n; ++i) {
    std::vector<gsize> dims(shapes[i].begin(), shapes[i].end());
    GstTensor *tensor = gst_tensor_alloc(dims.size());
    tensor->id = g_quark_from_string(state.output_ids[i].c_str());
    tensor->layout = GST_TENSOR_LAYOUT_CONTIGUOUS;
    tensor->data_type = gst_type_of(model.outputs()[i].type);
    tensor->data = results[i]; // a pooled buffer goes back to its pool when the meta goes
    tensor->dims_order = state.output_col_major[i] ? GST_TENSOR_DIM_ORDER_COL_MAJOR : GST_TENSOR_DIM_ORDER_ROW_MAJOR;
    tensor->num_dims = dims.size();
    std::copy(dims.begin(), dims.end(), tensor->dims);
    tensors[kept + i] = tensor;
  }
  gst_tensor_meta_set(meta, static_cast<guint>(kept + n), tensors);
}
#endif

/* An output ORT allocated, kept alive by the memory that wraps it; the
 * session it came from lives as long. */
struct OrtOutput {
  std::shared_ptr<Model> model;
  Ort::Value value{nullptr};
};

void free_ort_output(gpointer data) { delete static_cast<OrtOutput *>(data); }

/* What one run made of each output: its shape this frame, and a memory of
 * its bytes where they are not in the memory the caller gave for it
 * (nullptr where they are). */
struct RunResult {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<GstMemory *> replacements;
  RunResult() = default;
  RunResult(const RunResult &) = delete;
  RunResult &operator=(const RunResult &) = delete;
  ~RunResult() {
    for (GstMemory *memory : replacements)
      if (memory)
        gst_memory_unref(memory);
  }
};

/* A memory holding output `slot`, which ORT did not write in place: ORT's
 * own allocation, wrapped (read-only: it may be a constant of the model);
 * or, where ORT handed back the input itself (an output that is the
 * model's input), a copy, since the input is unmapped after the run.
 * nullptr after an element error (require-zero-copy refuses that copy). */
GstMemory *memory_of_output(GstTensorMemInfer *self, Model::Slot &slot, const std::string &name, const guint8 *in,
                            gsize in_size) {
  if (slot.size == 0)
    return gst_allocator_alloc(nullptr, 0, nullptr);
  const auto *bytes = static_cast<const guint8 *>(slot.bytes);
  if (bytes >= in && bytes < in + in_size) {
    GST_OBJECT_LOCK(self);
    const gboolean strict = self->require_zero_copy;
    GST_OBJECT_UNLOCK(self);
    if (strict) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED,
                        ("Model output '%s' is the model's input: handing it on copies it, which require-zero-copy "
                         "forbids.",
                         name.c_str()),
                        (nullptr));
      return nullptr;
    }
    GstMemory *copy = gst_allocator_alloc(nullptr, slot.size, nullptr);
    GstMapInfo map;
    if (!copy || !gst_memory_map(copy, &map, GST_MAP_WRITE)) {
      if (copy)
        gst_memory_unref(copy);
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate %" G_GSIZE_FORMAT " bytes for output '%s'.",
                                                        static_cast<gsize>(slot.size), name.c_str()),
                        (nullptr));
      return nullptr;
    }
    std::memcpy(map.data, bytes, slot.size);
    gst_memory_unmap(copy, &map);
    count_copy(self, slot.size);
    return copy;
  }
  auto *keep = new OrtOutput{self->state->model, std::move(slot.value)};
  return gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, const_cast<guint8 *>(bytes), slot.size, 0, slot.size,
                                keep, free_ort_output);
}

/* One inference: the input tensor of `inbuf` read in place, output i
 * written into `targets[i]` in place where it is a memory (of the output's
 * learnt size), else allocated by ORT; `result` says what came out. */
GstFlowReturn run_model(GstTensorMemInfer *self, GstBuffer *inbuf, const InputTensor &input, Prepared &prepared,
                        const std::vector<GstMemory *> &targets, RunResult *result) {
  InferState *state = self->state;
  const gsize needed = gst_tensorinfer::tensor_bytes(input.type, input.shape);
  if (gst_buffer_get_size(input.data) < needed) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("The tensor's buffer holds %" G_GSIZE_FORMAT " bytes; a %s %s tensor needs %" G_GSIZE_FORMAT ".",
                       gst_buffer_get_size(input.data), gst_tensorinfer::type_name(input.type),
                       gst_tensorinfer::shape_text(input.shape).c_str(), needed),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  // The frame's fences, and the tensor's where it is a buffer of its own
  // (a GstTensorMeta's data).
  GstFlowReturn waited = gst_tensor_mem_element_wait_fences(GST_ELEMENT(self), inbuf,
                                                            GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, self->waits, nullptr);
  if (waited == GST_FLOW_OK && input.data != inbuf)
    waited = gst_tensor_mem_element_wait_fences(GST_ELEMENT(self), input.data, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
                                                self->waits, nullptr);
  if (waited != GST_FLOW_OK)
    return waited;

  GstMapInfo in_map;
  const void *in_bytes = nullptr;
  const bool gathered = gst_buffer_n_memory(input.data) != 1;
  if (gathered) {
    GST_OBJECT_LOCK(self);
    const gboolean strict = self->require_zero_copy;
    GST_OBJECT_UNLOCK(self);
    if (strict) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED,
                        ("The tensor is spread over %u memories and require-zero-copy forbids gathering it.",
                         gst_buffer_n_memory(input.data)),
                        (nullptr));
      return GST_FLOW_ERROR;
    }
    state->scratch.resize(needed);
    gst_buffer_extract(input.data, 0, state->scratch.data(), needed);
    count_copy(self, needed);
    in_bytes = state->scratch.data();
  } else {
    if (!gst_buffer_map(input.data, &in_map, GST_MAP_READ)) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Cannot map the input tensor for reading."), (nullptr));
      return GST_FLOW_ERROR;
    }
    in_bytes = in_map.data;
  }

  Model &model = *state->model;
  const std::size_t n = prepared.output_shapes.size();
  std::vector<Model::Slot> slots(n);
  std::vector<GstMapInfo> out_maps(n);
  bool mapped = true;
  for (std::size_t i = 0; i < n && mapped; ++i) {
    slots[i].shape = prepared.output_shapes[i];
    if (!targets[i])
      continue;
    if (!gst_memory_map(targets[i], &out_maps[i], GST_MAP_WRITE)) {
      mapped = false;
      break;
    }
    slots[i].data = out_maps[i].data;
  }
  std::string error;
  bool reran = false;
  const bool ran = mapped && model.run(in_bytes, input.shape, &slots, &reran, &error);
  for (std::size_t i = 0; i < n; ++i)
    if (targets[i] && out_maps[i].memory)
      gst_memory_unmap(targets[i], &out_maps[i]);
  GstFlowReturn ret = GST_FLOW_OK;
  if (!mapped) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot map an output buffer for writing."), (nullptr));
    ret = GST_FLOW_ERROR;
  } else if (!ran) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("ONNX Runtime failed to run the model: %s", error.c_str()), (nullptr));
    ret = GST_FLOW_ERROR;
  }
  result->shapes.resize(n);
  result->replacements.assign(n, nullptr);
  for (std::size_t i = 0; i < n && ret == GST_FLOW_OK; ++i) {
    result->shapes[i] = slots[i].real_shape;
    if (reran && !prepared.ort_allocated[i] && slots[i].real_shape != prepared.output_shapes[i]) {
      // From now on ORT allocates it: one failed run per such output, not per frame.
      prepared.ort_allocated[i] = true;
      GST_INFO_OBJECT(self, "output '%s' came out as %s, not %s: its size depends on the data; ONNX Runtime "
                      "allocates it frame by frame from now on",
                      model.outputs()[i].name.c_str(), gst_tensorinfer::shape_text(slots[i].real_shape).c_str(),
                      gst_tensorinfer::shape_text(prepared.output_shapes[i]).c_str());
    }
    if (slots[i].in_place())
      continue;
    result->replacements[i] = memory_of_output(self, slots[i], model.outputs()[i].name,
                                               static_cast<const guint8 *>(in_bytes), needed);
    if (!result->replacements[i])
      ret = GST_FLOW_ERROR;
  }
  // The input stays mapped until ORT's outputs that alias it are copied.
  if (!gathered)
    gst_buffer_unmap(input.data, &in_map);
  if (ret == GST_FLOW_OK)
    ++state->frames;
  return ret;
}

/* The input of `inbuf`, prepared for; the lock held by the caller over
 * the returned Prepared's use. */
Prepared *prepare_for_buffer(GstTensorMemInfer *self, GstBuffer *inbuf, InputTensor *input) {
  if (!find_input(self, inbuf, input))
    return nullptr;
  if (!prepare(self, input->type, input->shape))
    return nullptr;
  return self->state->prepared.get();
}

} // namespace

static void gst_tensor_infer_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_INFER(object);
  GST_OBJECT_LOCK(self);
  /* model, execution-provider, threads and output are read when the
   * session is made: while it runs, a new value would leave the caps and
   * the buffers describing different things, so it is refused, loudly. */
  if (self->running && prop_id != PROP_REQUIRE_ZERO_COPY) {
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                        ("tensorinfer's '%s' cannot change while the element runs; the change is ignored.",
                         pspec->name),
                        ("set it in the NULL or READY state: it is read when the model is loaded (READY to PAUSED)"));
    return;
  }
  switch (prop_id) {
  case PROP_MODEL:
    g_free(self->model_path);
    self->model_path = g_value_dup_string(value);
    break;
  case PROP_EXECUTION_PROVIDER: self->provider = static_cast<Provider>(g_value_get_enum(value)); break;
  case PROP_THREADS: self->threads = g_value_get_uint(value); break;
  case PROP_SPIN: self->spin = g_value_get_boolean(value); break;
  case PROP_OUTPUT: self->output = static_cast<Output>(g_value_get_enum(value)); break;
  case PROP_REQUIRE_ZERO_COPY: self->require_zero_copy = g_value_get_boolean(value); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_tensor_infer_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_INFER(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_MODEL: g_value_set_string(value, self->model_path); break;
  case PROP_EXECUTION_PROVIDER: g_value_set_enum(value, static_cast<gint>(self->provider)); break;
  case PROP_THREADS: g_value_set_uint(value, self->threads); break;
  case PROP_SPIN: g_value_set_boolean(value, self->spin); break;
  case PROP_OUTPUT: g_value_set_enum(value, static_cast<gint>(self->output)); break;
  case PROP_COPIED_BYTES: g_value_set_uint64(value, self->copied_bytes); break;
  case PROP_REQUIRE_ZERO_COPY: g_value_set_boolean(value, self->require_zero_copy); break;
  case PROP_ONNXRUNTIME: {
    // Opens the runtime if nothing has yet: outside the object lock.
    GST_OBJECT_UNLOCK(self);
    std::string error;
    const std::string text = gst_tensorinfer::runtime_description(&error);
    g_value_set_string(value, text.empty() ? nullptr : text.c_str());
    if (text.empty())
      GST_WARNING_OBJECT(self, "%s", error.c_str());
    return;
  }
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

namespace {

/* The tensors' ids: from the model's .modelinfo where it has one (every
 * tensor must then have its entry), else the model's own names. */
struct Names {
  std::string input;
  std::vector<std::string> outputs;
  std::vector<bool> col_major;
  std::string group;
};

bool name_tensors(const Model &model, const std::string &path, Names *names, std::string *error) {
  std::unique_ptr<gst_tensorinfer::ModelInfo> info = gst_tensorinfer::ModelInfo::load(path, error);
  if (!error->empty())
    return false;
  auto described = [&](bool output, std::size_t index, const gst_tensorinfer::Port &port,
                       gst_tensorinfer::ModelInfoTensor *out) {
    std::optional<gst_tensorinfer::ModelInfoTensor> found = info->find(output, index, port);
    if (!found) {
      *error = info->path() + " has no entry that fits the model's " + (output ? "output" : "input") + " '" +
               port.name + "' (" + gst_tensorinfer::type_name(port.type) + " " +
               gst_tensorinfer::shape_text(port.shape) + ")";
      return false;
    }
    *out = std::move(*found);
    if (out->id.empty())
      out->id = port.name;
    return true;
  };
  names->input = model.input().name;
  names->outputs.clear();
  names->col_major.clear();
  names->group.clear();
  gst_tensorinfer::ModelInfoTensor t;
  if (info) {
    if (!described(false, 0, model.input(), &t))
      return false;
    names->input = t.id;
    names->group = info->group_id();
  }
  for (std::size_t i = 0; i < model.outputs().size(); ++i) {
    if (info && !described(true, i, model.outputs()[i], &t))
      return false;
    names->outputs.push_back(info ? t.id : model.outputs()[i].name);
    names->col_major.push_back(info && t.col_major);
  }
  if (names->group.empty())
    names->group = names->outputs.empty() ? names->input : names->outputs.front();
  if (info)
    GST_INFO("%s: input '%s', group '%s'", info->path().c_str(), names->input.c_str(), names->group.c_str());
  return true;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* output=meta on GStreamer 1.28: each video structure of `caps` (writable)
 * describes the outputs too, as a group of its `tensors` field, so that
 * upstream's tensor decoders link. Their dims are exact where the caps
 * describe the input tensor fully (tensorconvert's do), else the model's
 * declared ones, 0 where it leaves one open. Under the state's lock; false
 * where the described input is refused (after its element error). */
bool describe_outputs(GstTensorMemInfer *self, GstCaps *caps) {
  InferState *state = self->state;
  const Model &model = *state->model;
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstStructure *s = gst_caps_get_structure(caps, i);
    if (!gst_structure_has_name(s, "video/x-raw"))
      continue;
    std::vector<std::vector<std::int64_t>> shapes;
    for (const gst_tensorinfer::Port &port : model.outputs())
      shapes.push_back(port.shape);
    gst_tensormem::CapsTensor input;
    if (gst_tensormem::find_caps_tensor(s, state->input_id.c_str(), &input) ||
        gst_tensormem::find_caps_tensor(s, nullptr, &input)) {
      std::vector<std::int64_t> shape(input.dims.begin(), input.dims.end());
      const ONNXTensorElementDataType type = onnx_type_of(static_cast<gint>(input.type));
      const bool known = std::find(input.dims.begin(), input.dims.end(), 0) == input.dims.end();
      if (known && type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED &&
          input.order == GST_TENSOR_DIM_ORDER_ROW_MAJOR) {
        if (!prepare(self, type, shape))
          return false;
        shapes = state->prepared->output_shapes;
      }
    }
    gst_structure_remove_field(s, "tensors");
    gst_tensormem::set_caps_tensor_group(s, state->group_id.c_str(), caps_outputs(*state, shapes));
  }
  return true;
}
#endif

} // namespace

static gboolean gst_tensor_infer_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_INFER(trans);
  GST_OBJECT_LOCK(self);
  const std::string path = self->model_path ? self->model_path : "";
  const Provider provider = self->provider;
  const int threads = static_cast<int>(self->threads);
  const bool spin = self->spin;
  const Output output = self->output;
  if (output == Output::Meta && !GST_TENSOR_MEM_HAVE_TENSOR_META) {
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("tensorinfer's output=meta needs GstTensorMeta (GStreamer 1.26); this build has GStreamer "
                       "%d.%d: use output=tensors.",
                       GST_VERSION_MAJOR, GST_VERSION_MINOR),
                      (nullptr));
    return FALSE;
  }
  self->running = TRUE;
  GST_OBJECT_UNLOCK(self);
  std::string error, note;
  std::shared_ptr<Model> model = Model::load(path, provider, threads, spin, &error, &note);
  // What the model declares is checked before any run allocates it.
  for (std::size_t i = 0; model && i < model->outputs().size(); ++i) {
    const gst_tensorinfer::Port &port = model->outputs()[i];
    if (gst_tensorinfer::declared_min_bytes(port) > G_MAXUINT) {
      error = "output '" + port.name + "' is declared " + gst_tensorinfer::type_name(port.type) + " " +
              gst_tensorinfer::shape_text(port.shape) + ", over 4 GiB: too large to hand on";
      model.reset();
    }
  }
  Names names;
  if (model && !name_tensors(*model, path, &names, &error))
    model.reset();
  if (!model) {
    GST_OBJECT_LOCK(self);
    self->running = FALSE;
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("tensorinfer cannot use its model: %s", error.c_str()),
                      ("model=%s", path.c_str()));
    return FALSE;
  }
  if (!note.empty())
    GST_INFO_OBJECT(self, "%s", note.c_str());
  std::string no_runtime;
  GST_INFO_OBJECT(self, "ONNX Runtime %s", gst_tensorinfer::runtime_description(&no_runtime).c_str());
  GST_INFO_OBJECT(self, "model %s: input '%s' %s %s, %zu outputs", path.c_str(), model->input().name.c_str(),
                  gst_tensorinfer::type_name(model->input().type),
                  gst_tensorinfer::shape_text(model->input().shape).c_str(), model->outputs().size());
  InferState *state = self->state;
  std::lock_guard<std::mutex> guard(state->lock);
  state->model = std::move(model);
  state->input_id = std::move(names.input);
  state->output_ids = std::move(names.outputs);
  state->output_col_major = std::move(names.col_major);
  state->group_id = std::move(names.group);
  state->output = output;
  state->tensor_caps = false;
  state->prepared.reset();
  state->refused.reset();
  state->frames = 0;
  gst_base_transform_set_in_place(trans, output == Output::Meta);
  return TRUE;
}

static gboolean gst_tensor_infer_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  GST_OBJECT_LOCK(self);
  const guint64 copied = self->copied_bytes;
  GST_OBJECT_UNLOCK(self);
  GST_INFO_OBJECT(self, "summary: %" G_GUINT64_FORMAT " frames inferred; copied-bytes=%" G_GUINT64_FORMAT,
                  state->frames, copied);
  std::lock_guard<std::mutex> guard(state->lock);
  state->prepared.reset();
  state->refused.reset();
  state->model.reset();
  std::vector<guint8>().swap(state->scratch);
  GST_OBJECT_LOCK(self);
  self->running = FALSE;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static GstCaps *gst_tensor_infer_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                GstCaps *filter) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  GST_OBJECT_LOCK(self);
  const Output output = self->output;
  GST_OBJECT_UNLOCK(self);
  GstCaps *result = nullptr;
  if (output == Output::Meta) {
#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
    result = gst_caps_copy(caps);
    if (direction == GST_PAD_SRC) {
      gst_tensormem::strip_caps_tensors(result); // the outputs are ours to add
    } else {
      std::lock_guard<std::mutex> guard(state->lock);
      if (state->model && !describe_outputs(self, result)) {
        gst_caps_unref(result);
        result = gst_caps_new_empty();
      }
    }
#else
    result = gst_caps_ref(caps);
#endif
  } else if (direction == GST_PAD_SRC) {
    result = gst_caps_from_string("other/tensors(ANY)");
  } else {
    // With a fixed input tensor and the model loaded, the outputs are known exactly.
    const GstStructure *s = gst_caps_is_fixed(caps) ? gst_caps_get_structure(caps, 0) : nullptr;
    gst_tensormem::TensorCaps tensor;
    std::string why;
    std::lock_guard<std::mutex> guard(state->lock);
    if (s && state->model && gst_tensormem::is_tensor_caps(s) && gst_tensormem::parse_tensor_caps(s, &tensor, &why)) {
      if (prepare(self, onnx_type_of_caps(tensor), tensor.shape))
        result = tensors_caps(*state, state->prepared->announced, s);
      else
        result = gst_caps_new_empty();
    } else {
      result = gst_caps_from_string("other/tensors, format=(string)static");
    }
  }
  if (filter) {
    GstCaps *both = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = both;
  }
  return result;
}

static gboolean gst_tensor_infer_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  guint64 bytes = 0;
  if (!gst_tensormem::element_read_tensor_caps(GST_ELEMENT(self), incaps, &bytes))
    return FALSE;
  if (bytes == 0) {
    if (state->output == Output::Tensors) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("output=tensors needs other/tensors input."),
                        ("got %" GST_PTR_FORMAT "; for video frames with a GstTensorMeta use output=meta", incaps));
      return FALSE;
    }
    state->tensor_caps = false;
    return TRUE;
  }
  gst_tensormem::TensorCaps tensor;
  std::string why;
  gst_tensormem::parse_tensor_caps(gst_caps_get_structure(incaps, 0), &tensor, &why); // read above already
  const ONNXTensorElementDataType type = onnx_type_of_caps(tensor);
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("The input tensor's element type has no ONNX counterpart."),
                      ("%" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  state->tensor_caps = true;
  state->caps_type = type;
  state->caps_shape = tensor.shape;
  // The model is checked here, so a mismatch fails negotiation rather than the first buffer.
  std::lock_guard<std::mutex> guard(state->lock);
  return prepare(self, type, tensor.shape);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
static GstFlowReturn gst_tensor_infer_transform_ip(GstBaseTransform *trans, GstBuffer *buffer) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  std::lock_guard<std::mutex> guard(state->lock);
  InputTensor input;
  Prepared *prepared = prepare_for_buffer(self, buffer, &input);
  if (!prepared)
    return GST_FLOW_ERROR;
  const std::size_t n = prepared->pools.size();
  // One pooled buffer per output written in place; none for those ORT allocates.
  std::vector<GstBuffer *> results(n, nullptr);
  std::vector<GstMemory *> targets(n, nullptr);
  auto drop = [&results]() {
    for (GstBuffer *result : results)
      if (result)
        gst_buffer_unref(result);
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (prepared->ort_allocated[i])
      continue;
    const GstFlowReturn acquired = gst_buffer_pool_acquire_buffer(prepared->pools[i], &results[i], nullptr);
    if (acquired != GST_FLOW_OK) {
      drop();
      return acquired;
    }
    targets[i] = gst_buffer_peek_memory(results[i], 0);
  }
  RunResult result;
  const GstFlowReturn ran = run_model(self, buffer, input, *prepared, targets, &result);
  if (ran != GST_FLOW_OK) {
    drop();
    return ran;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!result.replacements[i])
      continue;
    if (results[i])
      gst_buffer_unref(results[i]); // back to its pool, unwritten
    results[i] = gst_buffer_new();
    gst_buffer_append_memory(results[i], result.replacements[i]);
    result.replacements[i] = nullptr;
  }
  attach_outputs(buffer, *state, result.shapes, results.data());
  return GST_FLOW_OK;
}
#endif

/* output=tensors: the output buffer comes from the element's own pool, one
 * memory per model output, for ORT to write into. */
static GstFlowReturn gst_tensor_infer_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                            GstBuffer **outbuf) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  if (state->output == Output::Meta) {
    /* In place on a buffer others hold too (after a tee): a copy, which
     * must keep the frame's GstTensorMeta (GStreamer's copy drops it). */
    *outbuf = gst_buffer_is_writable(inbuf) ? inbuf : gst_tensor_mem_buffer_make_writable(gst_buffer_ref(inbuf));
    return GST_FLOW_OK;
  }
  std::lock_guard<std::mutex> guard(state->lock);
  if (!state->prepared)
    return GST_FLOW_NOT_NEGOTIATED;
  const GstFlowReturn acquired = gst_buffer_pool_acquire_buffer(state->prepared->pools[0], outbuf, nullptr);
  if (acquired != GST_FLOW_OK)
    return acquired;
  GstBaseTransformClass *klass = GST_BASE_TRANSFORM_GET_CLASS(trans);
  if (klass->copy_metadata)
    klass->copy_metadata(trans, inbuf, *outbuf);
  return GST_FLOW_OK;
}

static GstFlowReturn gst_tensor_infer_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_TENSOR_INFER(trans);
  InferState *state = self->state;
  GstCaps *announce = nullptr;
  {
    std::lock_guard<std::mutex> guard(state->lock);
    InputTensor input;
    Prepared *prepared = prepare_for_buffer(self, inbuf, &input);
    if (!prepared)
      return GST_FLOW_ERROR;
    const std::size_t n = prepared->output_shapes.size();
    if (gst_buffer_n_memory(outbuf) != n)
      return GST_FLOW_NOT_NEGOTIATED; // a buffer of the pool made for another input
    std::vector<GstMemory *> targets(n, nullptr);
    for (std::size_t i = 0; i < n; ++i)
      if (!prepared->ort_allocated[i])
        targets[i] = gst_buffer_peek_memory(outbuf, static_cast<guint>(i));
    RunResult result;
    const GstFlowReturn ran = run_model(self, inbuf, input, *prepared, targets, &result);
    if (ran != GST_FLOW_OK)
      return ran;
    for (std::size_t i = 0; i < n; ++i) {
      if (!result.replacements[i])
        continue;
      gst_buffer_replace_memory(outbuf, static_cast<guint>(i), result.replacements[i]);
      result.replacements[i] = nullptr;
    }
#if GST_TENSOR_MEM_HAVE_TENSOR_META
    /* GStreamer's description of the outputs, named (a copied input's, a
     * batch's, describes what is no longer there): after a batch,
     * tensorunbatch names each stream's outputs from it. */
    if (GstTensorMeta *copied = gst_buffer_get_tensor_meta(outbuf))
      gst_buffer_remove_meta(outbuf, &copied->meta);
    std::vector<GstBuffer *> views(n);
    for (std::size_t i = 0; i < n; ++i) {
      views[i] = gst_buffer_new();
      gst_buffer_append_memory(views[i], gst_memory_ref(gst_buffer_peek_memory(outbuf, static_cast<guint>(i))));
    }
    attach_outputs(outbuf, *state, result.shapes, views.data());
#endif
    /* An output of data-dependent size: other/tensors caps describe every
     * tensor's dimensions, so they follow the frame when its shapes differ
     * from the last ones announced. */
    if (result.shapes != prepared->announced) {
      prepared->announced = result.shapes;
      GstCaps *current = gst_pad_get_current_caps(GST_BASE_TRANSFORM_SINK_PAD(trans));
      announce = tensors_caps(*state, prepared->announced,
                              current ? gst_caps_get_structure(current, 0) : nullptr);
      if (current)
        gst_caps_unref(current);
    }
  }
  if (announce) {
    GST_DEBUG_OBJECT(self, "output shapes changed: %" GST_PTR_FORMAT, announce);
    const gboolean sent = gst_base_transform_update_src_caps(trans, announce);
    gst_caps_unref(announce);
    if (!sent)
      return GST_FLOW_NOT_NEGOTIATED;
  }
  return GST_FLOW_OK;
}

static gboolean gst_tensor_infer_sink_event(GstBaseTransform *trans, GstEvent *event) {
  gst_tensor_mem_transform_watch_event(trans, GST_TENSOR_INFER(trans)->waits, event);
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_infer_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn gst_tensor_infer_change_state(GstElement *element, GstStateChange transition) {
  gst_tensor_mem_transform_watch_state_change(GST_BASE_TRANSFORM(element), GST_TENSOR_INFER(element)->waits,
                                              transition);
  return GST_ELEMENT_CLASS(gst_tensor_infer_parent_class)->change_state(element, transition);
}

static void gst_tensor_infer_finalize(GObject *object) {
  auto *self = GST_TENSOR_INFER(object);
  delete self->state;
  g_free(self->model_path);
  g_clear_object(&self->waits);
  G_OBJECT_CLASS(gst_tensor_infer_parent_class)->finalize(object);
}

static void gst_tensor_infer_class_init(GstTensorMemInferClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_tensor_infer_set_property;
  gobject_class->get_property = gst_tensor_infer_get_property;
  gobject_class->finalize = gst_tensor_infer_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_tensor_infer_change_state);

  const auto ready_only =
      static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(gobject_class, PROP_MODEL,
                                  g_param_spec_string("model", "Model",
                                                      "Path of the ONNX model file, loaded at READY→PAUSED", nullptr,
                                                      ready_only));
  g_object_class_install_property(
      gobject_class, PROP_EXECUTION_PROVIDER,
      g_param_spec_enum("execution-provider", "Execution provider",
                        "Where ONNX Runtime runs the model (Debian's ONNX Runtime has only the CPU)",
                        provider_get_type(), static_cast<gint>(Provider::Cpu), ready_only));
  g_object_class_install_property(gobject_class, PROP_THREADS,
                                  g_param_spec_uint("threads", "Threads",
                                                    "Intra-op threads of the session (0: ONNX Runtime's default)", 0,
                                                    1024, 0, ready_only));
  g_object_class_install_property(
      gobject_class, PROP_SPIN,
      g_param_spec_boolean("spin", "Spin",
                           "Let ONNX Runtime's intra-op threads spin while waiting for work: a little less latency "
                           "per run, CPU burnt between frames (ONNX Runtime's default); off, they sleep and the "
                           "pipeline's other elements keep the cores",
                           FALSE, ready_only));
  g_object_class_install_property(
      gobject_class, PROP_OUTPUT,
      g_param_spec_enum("output", "Output",
                        "How the model's outputs go downstream: GstTensorMeta on the input buffer, or an "
                        "other/tensors buffer (meta needs GStreamer 1.26; the default where it is built against one)",
                        output_get_type(), static_cast<gint>(kDefaultOutput), ready_only));
  g_object_class_install_property(
      gobject_class, PROP_COPIED_BYTES,
      g_param_spec_uint64("copied-bytes", "Copied bytes",
                          "Bytes of input tensors this element has copied since it was created (0 while every "
                          "tensor was read in place)",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_REQUIRE_ZERO_COPY,
      g_param_spec_boolean(
          "require-zero-copy", "Require zero copy",
          "Fail with a stream error instead of copying an input tensor that cannot be read in place", FALSE,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));

  g_object_class_install_property(
      gobject_class, PROP_ONNXRUNTIME,
      g_param_spec_string("onnxruntime", "ONNX Runtime",
                          "The ONNX Runtime this element runs on, opened at run time: its version, the API table in "
                          "use, the file, and its execution providers (NULL where none opens; the log says why)",
                          nullptr, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "Tensor inference (ONNX Runtime)", "Filter/Analyzer/Video",
                                        "Runs an ONNX model on each tensor, read in place, and hands the outputs on "
                                        "as GstTensorMeta or other/tensors",
                                        GST_TENSOR_MEM_AUTHOR);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_tensor_infer_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_tensor_infer_stop);
  trans_class->transform_caps = GST_DEBUG_FUNCPTR(gst_tensor_infer_transform_caps);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_tensor_infer_set_caps);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_tensor_infer_transform_ip);
#endif
  trans_class->transform = GST_DEBUG_FUNCPTR(gst_tensor_infer_transform);
  trans_class->prepare_output_buffer = GST_DEBUG_FUNCPTR(gst_tensor_infer_prepare_output_buffer);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_tensor_infer_sink_event);

  gst_type_mark_as_plugin_api(provider_get_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(output_get_type(), static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_tensor_infer_debug, "tensorinfer", 0, "Tensor inference (ONNX Runtime)");
}

static void gst_tensor_infer_init(GstTensorMemInfer *self) {
  self->model_path = nullptr;
  self->provider = Provider::Cpu;
  self->threads = 0;
  self->output = kDefaultOutput;
  self->require_zero_copy = FALSE;
  self->copied_bytes = 0;
  self->running = FALSE;
  self->waits = g_cancellable_new();
  self->state = new InferState();
}
