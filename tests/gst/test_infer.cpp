// SPDX-License-Identifier: Apache-2.0
/* tensorinfer (ONNX Runtime) on tensorconvert's tensors: its outputs, read
 * from GstTensorMeta through GStreamer's analytics API only (output=meta)
 * or from its other/tensors buffers (output=tensors), against a run through
 * ONNX Runtime's own C++ API (tests/gst/infer_reference.cpp, on the same
 * runtime library) on the very tensor bytes that reached the element; the
 * models come from tests/gst/infer_models.py (python3-onnx). copied-bytes
 * 0; open dimensions and batches; output buffers from a pool; and one
 * clear element error for each wrong setup. Built wherever tensorinfer is:
 * against GStreamer 1.26 and later with the GstTensorMeta cases, before
 * 1.26 (Debian 12) with output=tensors, the default there. */
#include "infer_models_env.hpp"
#include "pipeline_util.hpp"
#include "test_util.hpp"
#if TM_TEST_HAVE_GL
#include "gl_test_util.hpp"
#endif

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#include <gst/tensormem/gsttensormemconfig.h>
#if GST_TENSOR_MEM_HAVE_TENSOR_META
#include "meta_read_util.hpp"
#include <gst/analytics/analytics.h>
#endif
#include <onnxruntime_c_api.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

using infertest::kSkipCode;
using infertest::model;
using infertest::Models;
using infertest::run_program;

/* Test model `name` in a directory of its own (`dir`, under the models'),
 * with `modelinfo` beside it as MODEL.modelinfo. */
std::string model_with_info(const char *name, const char *dir, const std::string &modelinfo) {
  const std::string where = model(dir);
  std::filesystem::create_directories(where);
  const std::string path = where + "/" + name;
  std::filesystem::remove(path);
  std::filesystem::create_symlink(model(name), path);
  EXPECT_TRUE(g_file_set_contents((path + ".modelinfo").c_str(), modelinfo.c_str(), -1, nullptr));
  return path;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* weighted.onnx's tensors renamed: its input is tensorconvert's
 * tensor-id=pixels, its outputs test-features and test-scores. */
const char kWeightedInfo[] = "[modelinfo]\nversion=1.0\ngroup-id=test-group\n\n"
                             "[images]\nid=pixels\ntype=float32\ndims=-1,3,-1,-1\ndir=input\n\n"
                             "[features]\nid=test-features\ntype=float32\ndims=-1,2,-1,-1\ndir=output\n\n"
                             "[scores]\nid=test-scores\ntype=float32\ndims=-1,2\ndir=output\n";
#endif

std::vector<guint8> bytes_of(GstBuffer *buffer) {
  std::vector<guint8> bytes(gst_buffer_get_size(buffer));
  gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
  return bytes;
}

std::vector<float> floats_of(const std::vector<guint8> &bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

struct Output {
  std::vector<gsize> dims;
  std::vector<guint8> bytes;
};

/* What ONNX Runtime's own API makes of `input` (float32 `dims`) with
 * `model_path`, per output name (tests/gst/infer_reference.cpp, on the
 * runtime the element opens); empty with `*skip` set when it skips (no
 * ONNX Runtime). */
std::map<std::string, Output> ort_reference(const std::string &model_path, const std::vector<guint8> &input,
                                            const std::vector<gsize> &dims, std::string *skip) {
  std::map<std::string, Output> outputs;
  const std::string dir = Models::get()->dir() + "/ref";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string input_path = dir + "/input.bin";
  {
    std::ofstream f(input_path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(input.data()), static_cast<std::streamsize>(input.size()));
  }
  std::string dims_text;
  for (gsize d : dims)
    dims_text += (dims_text.empty() ? "" : ",") + std::to_string(d);
  std::string out;
  const char *reference = g_getenv("TENSORMEM_TEST_INFER_REFERENCE");
  if (!reference) {
    ADD_FAILURE() << "TENSORMEM_TEST_INFER_REFERENCE is not set (run through meson test)";
    return outputs;
  }
  const int status = run_program({reference, model_path, input_path, "float32", dims_text, dir + "/out"}, &out);
  if (status == kSkipCode) {
    *skip = out;
    return outputs;
  }
  EXPECT_EQ(status, 0) << out;
  for (const auto &entry : std::filesystem::directory_iterator(dir + "/out")) {
    if (entry.path().extension() != ".bin")
      continue;
    Output o;
    std::ifstream data(entry.path(), std::ios::binary);
    o.bytes.assign(std::istreambuf_iterator<char>(data), {});
    std::ifstream shape(std::filesystem::path(entry.path()).replace_extension(".shape"));
    for (std::string dim; std::getline(shape, dim, ',');)
      o.dims.push_back(std::stoul(dim));
    outputs[entry.path().stem().string()] = std::move(o);
  }
  return outputs;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The tensor named `id` of `buffer`'s GstTensorMeta, through the analytics API. */
const GstTensor *tensor_named(GstBuffer *buffer, const char *id) {
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  if (!meta)
    return nullptr;
  const gint index = gst_tensor_meta_get_index_from_id(meta, g_quark_from_string(id));
  return index < 0 ? nullptr : gst_tensor_meta_get(meta, static_cast<gsize>(index));
}

std::vector<gsize> dims_of(const GstTensor *tensor) {
  return std::vector<gsize>(tensor->dims, tensor->dims + tensor->num_dims);
}

// The output modes a test runs through: output=meta needs GstTensorMeta.
const std::vector<std::string> kOutputModes = {"meta", "tensors"};
#else
const std::vector<std::string> kOutputModes = {"tensors"};
#endif

/* The model outputs `names` (in the model's order) of a sample from
 * tensorinfer: from its buffer's GstTensorMeta (output=meta: the buffer
 * keeps its input's caps, other/tensors or video) where that names them,
 * else, for an other/tensors sample (output=tensors), memory i of the
 * buffer, its shape from the caps' innermost-first `dimensions`. An output
 * not found is absent from the map. */
std::map<std::string, Output> outputs_of(GstSample *sample, const std::vector<std::string> &names) {
  std::map<std::string, Output> outputs;
  GstBuffer *buffer = gst_sample_get_buffer(sample);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  for (const std::string &name : names)
    if (const GstTensor *t = tensor_named(buffer, name.c_str()))
      outputs[name] = Output{dims_of(t), bytes_of(t->data)};
  if (!outputs.empty())
    return outputs;
#endif
  const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
  if (!gst_structure_has_name(s, "other/tensors"))
    return outputs;
  const char *dimensions = gst_structure_get_string(s, "dimensions");
  gchar **tensors = g_strsplit(dimensions ? dimensions : "", ",", -1);
  for (guint i = 0; i < names.size() && i < gst_buffer_n_memory(buffer) && tensors[i]; ++i) {
    Output o;
    gchar **dims = g_strsplit(tensors[i], ":", -1);
    for (guint d = g_strv_length(dims); d-- > 0;)
      o.dims.push_back(std::stoul(dims[d]));
    g_strfreev(dims);
    GstMapInfo map;
    if (gst_buffer_map_range(buffer, i, 1, &map, GST_MAP_READ)) {
      o.bytes.assign(map.data, map.data + map.size);
      gst_buffer_unmap(buffer, &map);
    }
    outputs[names[i]] = std::move(o);
  }
  g_strfreev(tensors);
  return outputs;
}

/* float32 equality up to rounding: the same runtime, maybe another kernel order. */
void expect_close(const std::vector<guint8> &got_bytes, const std::vector<guint8> &want_bytes, const char *what) {
  const std::vector<float> got = floats_of(got_bytes), want = floats_of(want_bytes);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), 1e-5f * std::max(1.0f, std::fabs(want[i]))) << what << " element " << i;
}

/* The tensorinfer named "infer" of a pipeline, kept past the run for its
 * copied-bytes, and the bytes of every buffer that reached it (the input
 * tensors, for an other/tensors stream), in order. */
struct InferHandle {
  GstElement *element = nullptr;
  std::mutex lock;
  std::vector<std::vector<guint8>> inputs;
  ~InferHandle() {
    if (element)
      gst_object_unref(element);
  }
  std::function<void(GstElement *)> grab() {
    return [this](GstElement *pipeline) {
      element = gst_bin_get_by_name(GST_BIN(pipeline), "infer");
      GstPad *sink = gst_element_get_static_pad(element, "sink");
      gst_pad_add_probe(
          sink, GST_PAD_PROBE_TYPE_BUFFER,
          [](GstPad *, GstPadProbeInfo *info, gpointer data) {
            auto *self = static_cast<InferHandle *>(data);
            std::lock_guard<std::mutex> guard(self->lock);
            self->inputs.push_back(bytes_of(GST_PAD_PROBE_INFO_BUFFER(info)));
            return GST_PAD_PROBE_OK;
          },
          this, nullptr);
      gst_object_unref(sink);
    };
  }
};

const std::string kSource = "videotestsrc num-buffers=4 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! ";
const std::string kConvert = "tensorconvert width=16 height=16 layout=nchw dtype=float32 mean=<0.5> std=<0.25> ";

/* weighted.onnx's outputs of each sample against the reference run on
 * the sample's input tensor, `inputs[i]` (float32 `input_dims`). */
void check_against_reference(const tmtest::PipelineRun &run, const std::vector<std::vector<guint8>> &inputs,
                             const std::vector<gsize> &input_dims, const std::vector<gsize> &feature_dims) {
  ASSERT_EQ(run.samples.size(), 4u);
  ASSERT_EQ(inputs.size(), run.samples.size());
  std::set<std::vector<guint8>> distinct_scores;
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    std::map<std::string, Output> got = outputs_of(run.samples[i], {"features", "scores"});
    ASSERT_EQ(got.count("scores"), 1u) << "no 'scores' output";
    ASSERT_EQ(got.count("features"), 1u) << "no 'features' output";
#if GST_TENSOR_MEM_HAVE_TENSOR_META
    if (const GstTensor *scores = tensor_named(gst_sample_get_buffer(run.samples[i]), "scores")) {
      EXPECT_EQ(scores->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
      EXPECT_EQ(scores->dims_order, GST_TENSOR_DIM_ORDER_ROW_MAJOR);
    }
#endif
    EXPECT_EQ(got["scores"].dims, (std::vector<gsize>{1, 2}));
    EXPECT_EQ(got["features"].dims, feature_dims);
    std::string skip;
    std::map<std::string, Output> want = ort_reference(model("weighted.onnx"), inputs[i], input_dims, &skip);
    if (!skip.empty())
      GTEST_SKIP() << skip;
    ASSERT_EQ(want.size(), 2u);
    EXPECT_EQ(want["scores"].dims, got["scores"].dims);
    EXPECT_EQ(want["features"].dims, got["features"].dims);
    expect_close(got["scores"].bytes, want["scores"].bytes, "scores");
    expect_close(got["features"].bytes, want["features"].bytes, "features");
    distinct_scores.insert(got["scores"].bytes);
  }
  // The ball moves: outputs that did not follow the input would all be equal.
  EXPECT_GT(distinct_scores.size(), 1u);
}

/* How a pipeline that must fail ended: the first error, and how many errors
 * tensorinfer posted. */
struct Failure {
  std::string message;
  std::string source;
  int infer_errors = 0;
  bool reached_null = false;
};

Failure run_failing(const std::string &description) {
  Failure failure;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    return failure;
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING); // fails at once when the model cannot load
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *first = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout,
                                                 static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
  failure.reached_null = gst_element_set_state(pipeline, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS;
  for (GstMessage *msg = first; msg; msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError *err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      const std::string source = GST_OBJECT_NAME(GST_MESSAGE_SRC(msg));
      if (msg == first) {
        failure.message = err->message;
        failure.source = source;
      }
      failure.infer_errors += source == "infer";
      g_error_free(err);
    }
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
  tmtest::release_pipeline(pipeline);
  return failure;
}

void expect_one_infer_error(const std::string &description, const std::string &text) {
  const Failure failure = run_failing(description);
  EXPECT_EQ(failure.source, "infer") << failure.message;
  EXPECT_NE(failure.message.find(text), std::string::npos) << "wanted '" << text << "' in: " << failure.message;
  EXPECT_EQ(failure.infer_errors, 1);
  EXPECT_TRUE(failure.reached_null);
}

/* A float32 [2,3,4,5] batch, values from `seed`, pushed through appsrc in
 * `pieces` memories. */
GstBuffer *batch_buffer(int seed, guint pieces) {
  std::vector<float> values(2 * 3 * 4 * 5);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>((static_cast<int>(i) * 7 + seed * 13) % 23) / 8.0f - 1.0f;
  const gsize bytes = values.size() * sizeof(float);
  GstBuffer *buffer = gst_buffer_new();
  const gsize piece = bytes / pieces;
  for (guint p = 0; p < pieces; ++p) {
    const gsize size = p + 1 == pieces ? bytes - piece * p : piece;
    GstMemory *memory = gst_allocator_alloc(nullptr, size, nullptr);
    GstMapInfo map;
    gst_memory_map(memory, &map, GST_MAP_WRITE);
    std::memcpy(map.data, reinterpret_cast<const guint8 *>(values.data()) + piece * p, size);
    gst_memory_unmap(memory, &map);
    gst_buffer_append_memory(buffer, memory);
  }
  return buffer;
}

const char *kBatchCaps = "other/tensors,format=static,num_tensors=1,types=float32,dimensions=5:4:3:2,framerate=0/1";

/* Runs appsrc (kBatchCaps) ! tensorinfer `props` ! appsink with `frames`
 * (transfer full), whose bytes go to `inputs`. */
void run_frames(const std::string &props, const std::vector<GstBuffer *> &frames, tmtest::PipelineRun *run,
                InferHandle *infer, std::vector<std::vector<guint8>> *inputs) {
  const std::string description = std::string("appsrc name=src format=time caps=\"") + kBatchCaps +
                                  "\" ! tensorinfer name=infer " + props + " ! appsink name=sink";
  tmtest::run_pipeline(description, run, nullptr, [&](GstElement *pipeline) {
    infer->grab()(pipeline);
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    for (GstBuffer *buffer : frames) {
      inputs->push_back(bytes_of(buffer));
      gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    gst_object_unref(src);
  });
}

/* Runs appsrc (kBatchCaps) ! tensorinfer `props` ! appsink with three
 * batches in `pieces` memories each. */
void run_batches(const std::string &props, guint pieces, tmtest::PipelineRun *run, InferHandle *infer,
                 std::vector<std::vector<guint8>> *inputs) {
  std::vector<GstBuffer *> frames;
  for (int i = 0; i < 3; ++i)
    frames.push_back(batch_buffer(i, pieces));
  run_frames(props, frames, run, infer, inputs);
}

/* A float32 [2,3,4,5] frame whose 40 pixels (b, y, x) have `levels` in
 * every channel, so that each pixel's channel mean is its level. */
GstBuffer *levels_buffer(const std::vector<float> &levels) {
  std::vector<float> values(2 * 3 * 4 * 5);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t p = 0; p < 20; ++p)
        values[(b * 3 + c) * 20 + p] = levels[b * 20 + p];
  const gsize bytes = values.size() * sizeof(float);
  return gst_buffer_new_memdup(values.data(), bytes);
}

/* Frames for nonzero.onnx (above 0.5) and nonzero_low.onnx (above -0.5):
 * pixels at -1 count for neither, at 0 for the low one only, at 1 for
 * both. Above 0.5: 0, 3, 7, 0 pixels; above -0.5: 0, 3, 12, 3. */
std::vector<GstBuffer *> detection_frames() {
  std::vector<std::vector<float>> frames(4, std::vector<float>(40, -1.0f));
  for (std::size_t p : {4u, 17u, 33u})
    frames[1][p] = 1.0f;
  for (std::size_t p : {0u, 5u, 9u, 20u, 21u, 22u, 39u})
    frames[2][p] = 1.0f;
  for (std::size_t p : {1u, 2u, 3u, 30u, 31u})
    frames[2][p] = 0.0f;
  for (std::size_t p : {10u, 11u, 12u})
    frames[3][p] = 0.0f;
  std::vector<GstBuffer *> buffers;
  for (const std::vector<float> &levels : frames)
    buffers.push_back(levels_buffer(levels));
  return buffers;
}

/* The other/tensors `dimensions` of a sample's caps. */
std::string caps_dimensions(GstSample *sample) {
  const char *dims = gst_structure_get_string(gst_caps_get_structure(gst_sample_get_caps(sample), 0), "dimensions");
  return dims ? dims : "";
}

/* Memory `index` of an other/tensors buffer, as bytes. */
std::vector<guint8> memory_bytes(GstBuffer *buffer, guint index) {
  GstMapInfo map;
  if (index >= gst_buffer_n_memory(buffer) || !gst_buffer_map_range(buffer, index, 1, &map, GST_MAP_READ))
    return {};
  std::vector<guint8> bytes(map.data, map.data + map.size);
  gst_buffer_unmap(buffer, &map);
  return bytes;
}

/* videotestsrc ! `convert` ! tensorinfer name=infer model=weighted.onnx !
 * appsink; `prepare` sees the pipeline before it starts. */
void run_weighted(const std::string &convert, tmtest::PipelineRun *run, InferHandle *infer,
                  const std::function<void(GstElement *)> &prepare = {}) {
  tmtest::run_pipeline(kSource + convert + "! tensorinfer name=infer model=" + model("weighted.onnx") +
                           " ! appsink name=sink",
                       run, nullptr, [&](GstElement *pipeline) {
                         infer->grab()(pipeline);
                         if (prepare)
                           prepare(pipeline);
                       });
}

} // namespace

/* The "done when", CPU path: tensorconvert's other/tensors output,
 * tensorinfer's outputs (GstTensorMeta, or other/tensors where that is the
 * default) equal ONNX Runtime's own API on the same bytes, with no copy. */
TEST(TensorInfer, OutputsEqualOnnxRuntimeOnCpuTensors) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  run_weighted(kConvert, &run, &infer);
  ASSERT_TRUE(run.eos) << run.error_debug;
  check_against_reference(run, infer.inputs, {1, 3, 16, 16}, {1, 2, 16, 16});
  EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* tensorconvert output=meta: the video frame goes on, its GstTensorMeta
 * holding tensorconvert's input tensor and then the model's outputs. */
TEST(TensorInfer, VideoFramesWithTensorMetaGainTheOutputs) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  run_weighted(kConvert + "output=meta ", &run, &infer);
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_FALSE(run.samples.empty());
  GstCaps *caps = gst_sample_get_caps(run.samples[0]);
  EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw"));
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[0]));
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->num_tensors, 3u);
  std::vector<std::vector<guint8>> inputs;
  for (GstSample *sample : run.samples)
    inputs.push_back(bytes_of(tensor_named(gst_sample_get_buffer(sample), "input")->data));
  check_against_reference(run, inputs, {1, 3, 16, 16}, {1, 2, 16, 16});
  EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
}
#endif

/* A .modelinfo file beside the model (GStreamer 1.28's format, read by
 * 1.28's own reader there and by ours elsewhere) names the tensors: each
 * output gets the file's id, and the input is found by the file's id among
 * the frame's tensors. The outputs stay ONNX Runtime's. */
#if GST_TENSOR_MEM_HAVE_TENSOR_META
TEST(TensorInfer, AModelinfoFileNamesTheTensors) {
  REQUIRE_MODELS();
  const std::string path = model_with_info("weighted.onnx", "named", kWeightedInfo);
  tmtest::PipelineRun run;
  InferHandle infer;
  tmtest::run_pipeline(kSource + kConvert + "output=meta tensor-id=pixels ! tensorinfer name=infer model=" + path +
                           " ! appsink name=sink",
                       &run, nullptr, infer.grab());
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_FALSE(run.samples.empty());
  std::vector<std::vector<guint8>> inputs;
  for (GstSample *sample : run.samples) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    ASSERT_NE(tensor_named(buffer, "test-features"), nullptr);
    ASSERT_NE(tensor_named(buffer, "test-scores"), nullptr);
    EXPECT_EQ(tensor_named(buffer, "features"), nullptr) << "the model's own name is not the id";
    inputs.push_back(bytes_of(tensor_named(buffer, "pixels")->data));
  }
  // The same bytes as the model's outputs by their model names.
  std::string skip;
  const std::map<std::string, Output> want = ort_reference(model("weighted.onnx"), inputs[0], {1, 3, 16, 16}, &skip);
  if (!skip.empty())
    GTEST_SKIP() << skip;
  const std::map<std::string, Output> got = outputs_of(run.samples[0], {"test-features", "test-scores"});
  ASSERT_EQ(got.count("test-scores"), 1u);
  ASSERT_EQ(want.count("scores"), 1u);
  expect_close(got.at("test-scores").bytes, want.at("scores").bytes, "scores");
}
#endif

/* A modelinfo file that does not fit the model, or is not one, is one
 * element error at start naming the file: never a silent fallback to the
 * model's names. */
TEST(TensorInfer, AModelinfoFileThatDoesNotFitIsOneError) {
  REQUIRE_MODELS();
  const std::string wrong_type =
      model_with_info("weighted.onnx", "wrong-type",
                      "[modelinfo]\nversion=1.0\ngroup-id=g\n\n[images]\nid=pixels\ntype=uint8\ndir=input\n");
  expect_one_infer_error(kSource + kConvert + "! tensorinfer name=infer model=" + wrong_type + " ! fakesink",
                         "has no entry that fits the model's input 'images'");
  const std::string wrong_version =
      model_with_info("weighted.onnx", "wrong-version", "[modelinfo]\nversion=2.0\ngroup-id=g\n");
  expect_one_infer_error(kSource + kConvert + "! tensorinfer name=infer model=" + wrong_version + " ! fakesink",
                         "weighted.onnx.modelinfo");
}

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* GStreamer 1.28: output=meta describes the tensors in the caps as 1.28
 * does (tensorconvert its tensor, tensorinfer the outputs in the model's
 * group, with the modelinfo's ids and exact dims), so that upstream's
 * decoders link with no caps glue. */
TEST(TensorInfer, OutputMetaCapsDescribeTheTensorsAs128Does) {
  REQUIRE_MODELS();
  const std::string path = model_with_info("weighted.onnx", "caps", kWeightedInfo);
  tmtest::PipelineRun run;
  tmtest::run_pipeline(
      kSource + kConvert + "output=meta tensor-id=pixels ! tensorinfer model=" + path + " ! appsink name=sink", &run);
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_FALSE(run.samples.empty());
  const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(run.samples[0]), 0);
  gst_tensormem::CapsTensor t;
  ASSERT_TRUE(gst_tensormem::find_caps_tensor(s, "test-features", &t)) << gst_structure_to_string(s);
  EXPECT_EQ(t.dims, (std::vector<gsize>{1, 2, 16, 16})) << "the open dims, exact from the input's";
  EXPECT_EQ(t.type, GST_TENSOR_DATA_TYPE_FLOAT32);
  ASSERT_TRUE(gst_tensormem::find_caps_tensor(s, "test-scores", &t));
  EXPECT_EQ(t.dims, (std::vector<gsize>{1, 2}));
  const GValue *groups = gst_structure_get_value(s, "tensors");
  ASSERT_NE(groups, nullptr);
  EXPECT_TRUE(gst_structure_has_field(gst_value_get_structure(groups), "test-group"));
  // Only the outputs, as onnxinference's: tensordecodebin chains every
  // decoder whose template the caps fit, and a group more fits them all.
  EXPECT_FALSE(gst_structure_has_field(gst_value_get_structure(groups), "pixels"));

  // tensorconvert's own caps describe its tensor, in a group of its id.
  tmtest::PipelineRun convert;
  tmtest::run_pipeline(kSource + kConvert + "output=meta tensor-id=pixels ! appsink name=sink", &convert);
  ASSERT_TRUE(convert.eos) << convert.error_debug;
  ASSERT_FALSE(convert.samples.empty());
  s = gst_caps_get_structure(gst_sample_get_caps(convert.samples[0]), 0);
  ASSERT_TRUE(gst_tensormem::find_caps_tensor(s, "pixels", &t)) << gst_structure_to_string(s);
  EXPECT_EQ(t.dims, (std::vector<gsize>{1, 3, 16, 16}));
  EXPECT_EQ(t.type, GST_TENSOR_DATA_TYPE_FLOAT32);
}

/* Upstream's YOLOv8 decoder after tensorinfer, by name and through
 * tensordecodebin, which picks it from the caps: no caps glue. */
TEST(TensorInfer, UpstreamYoloDecoderLinksAfterTensorinfer) {
  REQUIRE_MODELS();
  if (!tmtest::element_available("yolov8tensordec") || !tmtest::element_available("tensordecodebin"))
    GTEST_SKIP() << "no yolov8tensordec / tensordecodebin (gstreamer1.0-plugins-bad 1.28's tensordecoders)";
  const std::string head = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=320,height=240 ! "
                           "tensorconvert width=32 height=32 resize=letterbox layout=nchw dtype=float32 output=meta "
                           "tensor-id=images ! tensorinfer model=" +
                           model("yolo.onnx") + " ! ";
  for (const char *decoder : {"yolov8tensordec", "tensordecodebin name=bin"}) {
    SCOPED_TRACE(decoder);
    tmtest::PipelineRun run;
    tmtest::run_pipeline(head + decoder + " ! appsink name=sink", &run);
    ASSERT_TRUE(run.eos) << run.error_debug;
    EXPECT_EQ(run.samples.size(), 3u);
    const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(run.samples[0]), 0);
    gst_tensormem::CapsTensor t;
    ASSERT_TRUE(gst_tensormem::find_caps_tensor(s, "yolo-v8-out", &t));
    EXPECT_EQ(t.order, GST_TENSOR_DIM_ORDER_COL_MAJOR) << "the modelinfo's dims-order";
    EXPECT_EQ(t.dims, (std::vector<gsize>{1, 84, 16}));
  }
}
#endif

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* Issue 40 with 1.28's decoders: two streams of video frames batched, one
 * YOLOv8-shaped model call per batch, and after the split each stream's
 * frames go through upstream's yolov8tensordec (by name and through
 * tensordecodebin) with no caps glue: each stream's caps describe its own
 * slot of the model's output (yolo-v8-out, a batch of one, col-major as
 * the .modelinfo says). */
TEST(TensorInfer, UpstreamYoloDecoderRunsOnEachStreamAfterABatch) {
  REQUIRE_MODELS();
  if (!tmtest::element_available("yolov8tensordec") || !tmtest::element_available("tensordecodebin"))
    GTEST_SKIP() << "no yolov8tensordec / tensordecodebin (gstreamer1.0-plugins-bad 1.28's tensordecoders)";
  for (const char *decoder : {"yolov8tensordec", "tensordecodebin"}) {
    SCOPED_TRACE(decoder);
    std::string d = "tensorbatch name=batch ! tensorinfer output=tensors model=" + model("yolo_batch.onnx") +
                    " ! tensorunbatch name=split ";
    const char *const patterns[] = {"ball", "smpte"};
    for (int k = 0; k < 2; ++k) {
      const std::string n = std::to_string(k);
      d += std::string("videotestsrc num-buffers=3 pattern=") + patterns[k] +
           " ! video/x-raw,format=RGBA,width=320,height=240 ! tensorconvert width=32 height=32 resize=letterbox "
           "layout=nchw dtype=float32 output=meta tensor-id=images ! batch.sink_" +
           n + " split.src_" + n + " ! queue ! " + decoder + " ! appsink name=s" + n + " sync=false wait-on-eos=false ";
    }
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
    ASSERT_EQ(error, nullptr) << d;
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
    EXPECT_TRUE(end.eos) << end.error;
    for (int k = 0; k < 2; ++k) {
      SCOPED_TRACE(patterns[k]);
      GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), ("s" + std::to_string(k)).c_str());
      int frames = 0;
      for (GstSample *sample = nullptr;; ++frames) {
        g_signal_emit_by_name(sink, "try-pull-sample", 0, &sample);
        if (!sample)
          break;
        const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
        gst_tensormem::CapsTensor t;
        EXPECT_TRUE(gst_structure_has_name(s, "video/x-raw"));
        EXPECT_TRUE(gst_tensormem::find_caps_tensor(s, "yolo-v8-out", &t));
        EXPECT_EQ(t.dims, (std::vector<gsize>{1, 84, 16}));
        EXPECT_EQ(t.order, GST_TENSOR_DIM_ORDER_COL_MAJOR);
        gst_sample_unref(sample);
      }
      EXPECT_EQ(frames, 3);
      gst_object_unref(sink);
    }
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    tmtest::release_pipeline(pipeline);
  }
}
#endif

/* The model leaves height and width open: they come from the stream, and
 * the outputs' shapes follow. */
TEST(TensorInfer, OpenDimensionsAreTakenFromTheStream) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  run_weighted("tensorconvert width=20 height=12 layout=nchw dtype=float32 ", &run, &infer);
  ASSERT_TRUE(run.eos) << run.error_debug;
  check_against_reference(run, infer.inputs, {1, 3, 12, 20}, {1, 2, 12, 20});
}

#if TM_TEST_HAVE_GL
/* The GL tensorconvert path: a PBO tensor read in place by the CPU provider. */
TEST(TensorInfer, GlConvertPathEqualsOnnxRuntime) {
  REQUIRE_MODELS();
  std::string no_gl;
  if (!tmtest::shared_worker(&no_gl))
    GTEST_SKIP() << "no headless GL context: " << no_gl;
  tmtest::PipelineRun run;
  InferHandle infer;
  run_weighted("tensorupload storage=pbo ! " + kConvert + "storage=pbo ", &run, &infer, tmtest::share_gl_worker);
  ASSERT_TRUE(run.eos) << run.error_debug;
  check_against_reference(run, infer.inputs, {1, 3, 16, 16}, {1, 2, 16, 16});
  EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
}
#endif

/* A uint8 NHWC model: per-channel sums, checked against a plain sum of the
 * tensor's bytes (no reference run needed). */
TEST(TensorInfer, Uint8NhwcTensorsReachTheModelByteExact) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  tmtest::run_pipeline(kSource +
                           "tensorconvert width=8 height=8 layout=nhwc dtype=uint8 ! tensorinfer name=infer model=" +
                           model("bytes.onnx") + " ! appsink name=sink",
                       &run, nullptr, infer.grab());
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_FALSE(run.samples.empty());
  ASSERT_EQ(infer.inputs.size(), run.samples.size());
  for (std::size_t f = 0; f < run.samples.size(); ++f) {
    const std::vector<guint8> &pixels = infer.inputs[f];
    ASSERT_EQ(pixels.size(), 8u * 8 * 3);
    float want[3] = {0, 0, 0};
    for (std::size_t i = 0; i < pixels.size(); ++i)
      want[i % 3] += pixels[i];
    std::map<std::string, Output> sums = outputs_of(run.samples[f], {"sums"});
    ASSERT_EQ(sums.count("sums"), 1u);
    EXPECT_EQ(sums["sums"].dims, (std::vector<gsize>{1, 3}));
    const std::vector<float> got = floats_of(sums["sums"].bytes);
    ASSERT_EQ(got.size(), 3u);
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(got[c], want[c]) << "channel " << c;
  }
}

/* Three batches of two from appsrc (system memory, each in `pieces`
 * memories) through weighted.onnx: the open batch dimension takes 2 and
 * every output equals the reference run on its batch. tensorinfer's
 * copied-bytes, and the bytes of one batch, in `*copied` and `*batch_bytes`. */
void check_batches(guint pieces, guint64 *copied, gsize *batch_bytes) {
  tmtest::PipelineRun run;
  InferHandle infer;
  std::vector<std::vector<guint8>> inputs;
  run_batches("model=" + model("weighted.onnx"), pieces, &run, &infer, &inputs);
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), inputs.size());
  *copied = tmtest::copied_bytes(infer.element);
  *batch_bytes = inputs[0].size();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::map<std::string, Output> got = outputs_of(run.samples[i], {"features", "scores"});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got["scores"].dims, (std::vector<gsize>{2, 2}));
    std::string skip;
    std::map<std::string, Output> want = ort_reference(model("weighted.onnx"), inputs[i], {2, 3, 4, 5}, &skip);
    if (!skip.empty())
      GTEST_SKIP() << skip;
    expect_close(got["scores"].bytes, want["scores"].bytes, "scores");
    expect_close(got["features"].bytes, want["features"].bytes, "features");
  }
}

/* tensorbatch (issue 26): two streams, each written into its slot of the
 * batch by its own tensorconvert (`convert`: the CPU path, or the GL path
 * into one PBO per batch), run through the model in one call per batch; the
 * outputs equal the reference run on the batch's bytes, and neither
 * element copied anything. */
void expect_batch_in_one_call(const std::string &convert, const std::function<void(GstElement *)> &prepare) {
  tmtest::PipelineRun run;
  GstElement *batch = nullptr;
  InferHandle infer;
  const std::string description =
      "tensorbatch name=batch require-zero-copy=true ! tensorinfer name=infer model=" + model("weighted.onnx") +
      " ! appsink name=sink " + kSource + convert + "! batch.sink_0 " +
      "videotestsrc num-buffers=4 pattern=smpte ! video/x-raw,format=RGBA,width=64,"
      "height=48 ! " +
      convert + "! batch.sink_1";
  tmtest::run_pipeline(description, &run, nullptr, [&](GstElement *pipeline) {
    if (prepare)
      prepare(pipeline);
    batch = gst_bin_get_by_name(GST_BIN(pipeline), "batch");
    infer.grab()(pipeline);
  });
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 4u);
  ASSERT_EQ(infer.inputs.size(), run.samples.size());
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    std::map<std::string, Output> got = outputs_of(run.samples[i], {"features", "scores"});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got["scores"].dims, (std::vector<gsize>{2, 2}));
    std::string skip;
    std::map<std::string, Output> want = ort_reference(model("weighted.onnx"), infer.inputs[i], {2, 3, 16, 16}, &skip);
    if (!skip.empty())
      GTEST_SKIP() << skip;
    expect_close(got["scores"].bytes, want["scores"].bytes, "scores");
    expect_close(got["features"].bytes, want["features"].bytes, "features");
  }
  EXPECT_EQ(tmtest::copied_bytes(batch), 0u);
  EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
  gst_object_unref(batch);
}

TEST(TensorInfer, ABatchOfStreamsRunsInOneModelCall) {
  REQUIRE_MODELS();
  expect_batch_in_one_call(kConvert, {});
}

#if TM_TEST_HAVE_GL
TEST(TensorInfer, ABatchOfGlStreamsInOnePboRunsInOneModelCall) {
  REQUIRE_MODELS();
  std::string no_gl;
  if (!tmtest::shared_worker(&no_gl))
    GTEST_SKIP() << "no headless GL context: " << no_gl;
  expect_batch_in_one_call("tensorupload storage=pbo ! " + kConvert + "storage=pbo require-zero-copy=true ",
                           tmtest::share_gl_worker);
}
#endif

/* tensorunbatch after the model (issue 40): eight streams of different
 * content batched, one model call per batch (output=tensors, the model's
 * batch dimension open), and each stream's pad gives, frame for frame and in
 * order, its own slot of every output: equal to the model run on that
 * stream alone, with that stream's timestamps. Nothing is copied anywhere
 * in the chain, and each stream's pad ends with EOS. `frames`: each stream
 * sends its video frames with the tensor beside them (tensorconvert
 * output=meta) and gets them back, the outputs in their GstTensorMeta. */
void eight_streams_through_one_model(bool frames) {
  constexpr int kStreams = 8;
  constexpr std::size_t kFrames = 4;
  const char *const patterns[kStreams] = {
      "smpte",           "ball",     "circular", "checkers-8",
      "zone-plate kt=3", "gradient", "colors",   "ball foreground-color=0xff00ff00"};
  auto source = [&](int k) {
    return std::string("videotestsrc num-buffers=") + std::to_string(kFrames) + " pattern=" + patterns[k] +
           " ! video/x-raw,format=RGBA,width=64,height=48 ! ";
  };
  const std::string infer = "tensorinfer name=infer model=" + model("weighted.onnx") + " output=tensors ";
  std::string description = "tensorbatch name=batch ! " + infer + "! tensorunbatch name=split ";
  for (int k = 0; k < kStreams; ++k) {
    const std::string n = std::to_string(k);
    description += source(k) + kConvert + (frames ? "output=meta " : "") + "name=c" + n + " ! batch.sink_" + n +
                   " split.src_" + n +
                   " ! queue ! appsink name=s" + n + " sync=false wait-on-eos=false ";
  }
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << description;
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  ASSERT_TRUE(end.eos) << end.error;
  auto element = [&](const std::string &name) { return gst_bin_get_by_name(GST_BIN(pipeline), name.c_str()); };
  for (int k = 0; k < kStreams; ++k) {
    SCOPED_TRACE(std::string("stream ") + std::to_string(k) + ": " + patterns[k]);
    tmtest::PipelineRun alone;
    tmtest::run_pipeline(source(k) + kConvert + "! " + infer + "! appsink name=sink", &alone);
    ASSERT_TRUE(alone.eos) << alone.error_debug;
    ASSERT_EQ(alone.samples.size(), kFrames);
    GstElement *sink = element("s" + std::to_string(k));
    for (std::size_t f = 0; f < kFrames; ++f) {
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "try-pull-sample", 0, &sample);
      ASSERT_NE(sample, nullptr) << "frame " << f;
      if (frames) { // the stream's own frame, its outputs beside it
        EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(gst_sample_get_caps(sample), 0), "video/x-raw"));
        EXPECT_EQ(gst_buffer_get_size(gst_sample_get_buffer(sample)), 64u * 48u * 4u);
      }
      std::map<std::string, Output> got = outputs_of(sample, {"features", "scores"});
      std::map<std::string, Output> want = outputs_of(alone.samples[f], {"features", "scores"});
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(got["scores"].dims, want["scores"].dims);
      expect_close(got["scores"].bytes, want["scores"].bytes, "scores");
      expect_close(got["features"].bytes, want["features"].bytes, "features");
      EXPECT_EQ(GST_BUFFER_PTS(gst_sample_get_buffer(sample)), GST_BUFFER_PTS(gst_sample_get_buffer(alone.samples[f])));
      gst_sample_unref(sample);
    }
    gboolean eos = FALSE;
    g_object_get(sink, "eos", &eos, nullptr);
    EXPECT_TRUE(eos);
    gst_object_unref(sink);
    GstElement *convert = element("c" + std::to_string(k));
    EXPECT_EQ(tmtest::copied_bytes(convert), 0u);
    gst_object_unref(convert);
  }
  GstElement *batch = element("batch"), *model_step = element("infer");
  EXPECT_EQ(tmtest::copied_bytes(batch), 0u);
  EXPECT_EQ(tmtest::copied_bytes(model_step), 0u);
  guint64 batches = 0, partial = 0;
  g_object_get(batch, "batches", &batches, "partial-batches", &partial, nullptr);
  EXPECT_EQ(batches, kFrames); // one batch, so one model call, per frame time
  EXPECT_EQ(partial, 0u);
  gst_object_unref(batch);
  gst_object_unref(model_step);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

TEST(TensorInfer, EightStreamsEachGetTheirOwnOutputsBackAfterABatchedCall) {
  REQUIRE_MODELS();
  eight_streams_through_one_model(false);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* 1.28's caps describe each frame's tensor; before 1.28 tensorconvert's
 * frame-tensor event does. */
TEST(TensorInfer, EightStreamsOfFramesEachGetTheirFramesBackWithTheirOwnOutputs) {
  REQUIRE_MODELS();
  eight_streams_through_one_model(true);
}
#endif

TEST(TensorInfer, BatchesTakeTheOpenFirstDimension) {
  REQUIRE_MODELS();
  guint64 copied = 1;
  gsize bytes = 0;
  check_batches(1, &copied, &bytes);
  EXPECT_EQ(copied, 0u);
}

/* A tensor in two memories cannot be read in place: gathered once and
 * counted (or refused under require-zero-copy, below). */
TEST(TensorInfer, ATensorInSeveralMemoriesIsGatheredAndCounted) {
  REQUIRE_MODELS();
  guint64 copied = 0;
  gsize bytes = 0;
  check_batches(2, &copied, &bytes);
  EXPECT_EQ(copied, 3u * bytes);
}

TEST(TensorInfer, RequireZeroCopyRefusesATensorInSeveralMemories) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  std::vector<std::vector<guint8>> inputs;
  run_batches("require-zero-copy=true model=" + model("weighted.onnx"), 2, &run, &infer, &inputs);
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error_debug.find("require-zero-copy"), std::string::npos) << run.error_debug;
  EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
}

/* output=tensors: an other/tensors buffer of one memory per output, caps
 * describing them NNStreamer's way, bytes equal to ONNX Runtime's own and,
 * where GstTensorMeta is, to output=meta's. */
TEST(TensorInfer, TensorsOutputIsAnOtherTensorsBufferOfTheOutputs) {
  REQUIRE_MODELS();
  const std::string head = kSource + kConvert + "! tensorinfer name=infer model=" + model("weighted.onnx");
  tmtest::PipelineRun as_tensors;
  InferHandle infer;
  tmtest::run_pipeline(head + " output=tensors ! appsink name=sink", &as_tensors, nullptr, infer.grab());
  ASSERT_TRUE(as_tensors.eos) << as_tensors.error_debug;
  const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(as_tensors.samples[0]), 0);
  EXPECT_TRUE(gst_structure_has_name(s, "other/tensors"));
  gint n = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "num_tensors", &n));
  EXPECT_EQ(n, 2);
  EXPECT_STREQ(gst_structure_get_string(s, "types"), "float32,float32");
  EXPECT_STREQ(gst_structure_get_string(s, "dimensions"), "16:16:2:1,2:1");
  for (GstSample *sample : as_tensors.samples)
    EXPECT_EQ(gst_buffer_n_memory(gst_sample_get_buffer(sample)), 2u);
  check_against_reference(as_tensors, infer.inputs, {1, 3, 16, 16}, {1, 2, 16, 16});
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  tmtest::PipelineRun as_meta;
  tmtest::run_pipeline(head + " ! appsink name=sink", &as_meta);
  ASSERT_TRUE(as_meta.eos) << as_meta.error_debug;
  ASSERT_EQ(as_tensors.samples.size(), as_meta.samples.size());
  for (std::size_t i = 0; i < as_meta.samples.size(); ++i) {
    GstBuffer *out = gst_sample_get_buffer(as_tensors.samples[i]);
    GstBuffer *meta_buffer = gst_sample_get_buffer(as_meta.samples[i]);
    EXPECT_EQ(memory_bytes(out, 0), bytes_of(tensor_named(meta_buffer, "features")->data));
    EXPECT_EQ(memory_bytes(out, 1), bytes_of(tensor_named(meta_buffer, "scores")->data));
    EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(meta_buffer));
  }
#endif
}

/* A model output that is the model's input (a pass-through graph, or a
 * debugging export listing its input among the outputs): ORT hands its
 * input back and never writes the buffer it is given, so the element
 * copies the input there, counted. Every frame's output equals its input,
 * as ONNX Runtime's own API says, in each output mode. */
TEST(TensorInfer, AnOutputThatIsTheInputCarriesTheInputsBytes) {
  REQUIRE_MODELS();
  for (const char *name : {"passthrough.onnx", "echo.onnx"}) {
    for (const std::string &mode : kOutputModes) {
      SCOPED_TRACE(std::string(name) + " output=" + mode);
      tmtest::PipelineRun run;
      InferHandle infer;
      std::vector<std::vector<guint8>> inputs;
      run_batches("output=" + mode + " model=" + model(name), 1, &run, &infer, &inputs);
      ASSERT_TRUE(run.eos) << run.error_debug;
      ASSERT_EQ(run.samples.size(), 3u);
      for (std::size_t f = 0; f < run.samples.size(); ++f) {
        GstBuffer *out = gst_sample_get_buffer(run.samples[f]);
        std::string skip;
        std::map<std::string, Output> want = ort_reference(model(name), inputs[f], {2, 3, 4, 5}, &skip);
        if (!skip.empty())
          GTEST_SKIP() << skip;
        ASSERT_EQ(want["images"].bytes, inputs[f]);
        if (mode == "meta") {
          std::map<std::string, Output> got = outputs_of(run.samples[f], {"images", "features", "scores"});
          ASSERT_EQ(got.count("images"), 1u);
          EXPECT_EQ(got["images"].dims, (std::vector<gsize>{2, 3, 4, 5}));
          EXPECT_EQ(got["images"].bytes, inputs[f]) << "frame " << f;
          if (got.count("scores"))
            expect_close(got["scores"].bytes, want["scores"].bytes, "scores");
        } else {
          EXPECT_EQ(memory_bytes(out, 0), inputs[f]) << "frame " << f;
        }
      }
      EXPECT_EQ(tmtest::copied_bytes(infer.element), 3u * inputs[0].size());
    }
  }
}

/* ... and require-zero-copy refuses that copy by name. */
TEST(TensorInfer, RequireZeroCopyRefusesHandingOnTheInputAsAnOutput) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  std::vector<std::vector<guint8>> inputs;
  run_batches("require-zero-copy=true model=" + model("passthrough.onnx"), 1, &run, &infer, &inputs);
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error_debug.find("is the model's input"), std::string::npos) << run.error_debug;
}

/* Outputs whose length the data decides (NonZero feeding Gather, as an
 * in-graph NMS does): each frame's outputs at their real size, equal to
 * ONNX Runtime's own API frame by frame, in GstTensorMeta and in other/tensors
 * (whose caps follow the shapes). nonzero.onnx gives nothing for the zero
 * run (ORT allocates from the start); nonzero_low.onnx gives every pixel
 * there, so its first frame finds the learnt size wrong and the element
 * switches that output to ORT's allocation. */
TEST(TensorInfer, OutputsOfDataDependentSizeFollowEachFrame) {
  REQUIRE_MODELS();
  struct Case {
    const char *model;
    std::vector<gsize> counts;
  };
  for (const Case &c : {Case{"nonzero.onnx", {0, 3, 7, 0}}, Case{"nonzero_low.onnx", {0, 3, 12, 3}}}) {
    for (const std::string &mode : kOutputModes) {
      SCOPED_TRACE(std::string(c.model) + " output=" + mode);
      tmtest::PipelineRun run;
      InferHandle infer;
      std::vector<std::vector<guint8>> inputs;
      run_frames("output=" + mode + " model=" + model(c.model), detection_frames(), &run, &infer, &inputs);
      ASSERT_TRUE(run.eos) << run.error_debug;
      ASSERT_EQ(run.samples.size(), c.counts.size());
      for (std::size_t f = 0; f < run.samples.size(); ++f) {
        SCOPED_TRACE("frame " + std::to_string(f));
        GstBuffer *out = gst_sample_get_buffer(run.samples[f]);
        std::string skip;
        std::map<std::string, Output> want = ort_reference(model(c.model), inputs[f], {2, 3, 4, 5}, &skip);
        if (!skip.empty())
          GTEST_SKIP() << skip;
        ASSERT_EQ(want["indices"].dims, (std::vector<gsize>{c.counts[f]}));
        ASSERT_EQ(want["values"].dims, (std::vector<gsize>{c.counts[f]}));
        if (mode == "meta") {
#if GST_TENSOR_MEM_HAVE_TENSOR_META
          const GstTensor *indices = tensor_named(out, "indices");
          const GstTensor *values = tensor_named(out, "values");
          ASSERT_NE(indices, nullptr);
          ASSERT_NE(values, nullptr);
          EXPECT_EQ(indices->data_type, GST_TENSOR_DATA_TYPE_INT64);
          EXPECT_EQ(dims_of(indices), want["indices"].dims);
          EXPECT_EQ(dims_of(values), want["values"].dims);
          EXPECT_EQ(bytes_of(indices->data), want["indices"].bytes);
          EXPECT_EQ(bytes_of(values->data), want["values"].bytes);
#endif
        } else {
          const std::string k = std::to_string(c.counts[f]);
          EXPECT_EQ(caps_dimensions(run.samples[f]), k + "," + k);
          ASSERT_EQ(gst_buffer_n_memory(out), 2u);
          EXPECT_EQ(memory_bytes(out, 0), want["indices"].bytes);
          EXPECT_EQ(memory_bytes(out, 1), want["values"].bytes);
        }
      }
      EXPECT_EQ(tmtest::copied_bytes(infer.element), 0u);
    }
  }
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* A tee before tensorinfer: the frame it gets is shared, so the element
 * works on a copy, which must keep the frame's GstTensorMeta (GStreamer's
 * own copy drops it). Every frame of the inferring branch has its scores;
 * the other branch's frames have none. */
TEST(TensorInfer, AfterATeeEveryFrameKeepsItsTensorMeta) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  InferHandle infer;
  /* The tee's input frames, held here as a recorder would hold them, so
   * that every frame reaches tensorinfer shared whatever the other branch
   * has done with it yet. */
  struct Held {
    std::mutex lock;
    std::vector<GstBuffer *> frames;
  } held;
  tmtest::run_pipeline(kSource + kConvert + "output=meta ! tee name=t ! queue ! tensorinfer name=infer model=" +
                           model("weighted.onnx") + " ! appsink name=sink t. ! queue ! fakesink name=other",
                       &run, nullptr, [&](GstElement *pipeline) {
                         infer.grab()(pipeline);
                         GstElement *tee = gst_bin_get_by_name(GST_BIN(pipeline), "t");
                         GstPad *in = gst_element_get_static_pad(tee, "sink");
                         gst_pad_add_probe(
                             in, GST_PAD_PROBE_TYPE_BUFFER,
                             [](GstPad *, GstPadProbeInfo *info, gpointer data) {
                               auto *h = static_cast<Held *>(data);
                               std::lock_guard<std::mutex> guard(h->lock);
                               h->frames.push_back(gst_buffer_ref(GST_PAD_PROBE_INFO_BUFFER(info)));
                               return GST_PAD_PROBE_OK;
                             },
                             &held, nullptr);
                         gst_object_unref(in);
                         gst_object_unref(tee);
                         GstElement *other = gst_bin_get_by_name(GST_BIN(pipeline), "other");
                         GstPad *pad = gst_element_get_static_pad(other, "sink");
                         // The untouched branch: its frames carry the input tensor only.
                         gst_pad_add_probe(
                             pad, GST_PAD_PROBE_TYPE_BUFFER,
                             [](GstPad *, GstPadProbeInfo *info, gpointer) {
                               EXPECT_EQ(tensor_named(GST_PAD_PROBE_INFO_BUFFER(info), "scores"), nullptr);
                               return GST_PAD_PROBE_OK;
                             },
                             nullptr, nullptr);
                         gst_object_unref(pad);
                         gst_object_unref(other);
                       });
  EXPECT_EQ(held.frames.size(), 4u);
  for (GstBuffer *frame : held.frames) {
    EXPECT_NE(gst_buffer_get_tensor_meta(frame), nullptr) << "the held frame keeps its input tensor";
    EXPECT_EQ(tensor_named(frame, "scores"), nullptr) << "the held frame was not written";
    gst_buffer_unref(frame);
  }
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 4u);
  for (GstSample *sample : run.samples)
    EXPECT_NE(tensor_named(gst_sample_get_buffer(sample), "scores"), nullptr);
}
#endif

/* model, output, threads and execution-provider are read when the session
 * is made: set while the element runs, they are refused with a warning on
 * the bus, and the caps and buffers go on agreeing. */
TEST(TensorInfer, StartOnlyPropertiesAreRefusedWhileRunning) {
  REQUIRE_MODELS();
  const std::string description = std::string("appsrc name=src format=time caps=\"") + kBatchCaps +
                                  "\" ! tensorinfer name=infer model=" + model("weighted.onnx") +
                                  " ! appsink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), "infer");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  gst_app_src_push_buffer(GST_APP_SRC(src), batch_buffer(0, 1));
  GstSample *first = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), tmtest::kTimeout);
  ASSERT_NE(first, nullptr);
  // The output mode it runs with (meta, 0, where GstTensorMeta is; else tensors, 1), and the other one.
  gint running_output = -1;
  g_object_get(element, "output", &running_output, nullptr);
  g_object_set(element, "output", 1 - running_output, "threads", 3u, "model", model("wide.onnx").c_str(), "spin", TRUE,
               nullptr);
  gint output = -1;
  guint threads = 1;
  gboolean spin = TRUE;
  gchar *path = nullptr;
  g_object_get(element, "output", &output, "threads", &threads, "model", &path, "spin", &spin, nullptr);
  EXPECT_EQ(output, running_output) << "the output mode stays";
  EXPECT_EQ(threads, 0u);
  EXPECT_FALSE(spin) << "threads sleep between runs unless asked";
  EXPECT_EQ(std::string(path ? path : ""), model("weighted.onnx"));
  g_free(path);
  // A renegotiation now must still describe the running mode's buffers.
  gst_element_send_event(sink, gst_event_new_reconfigure());
  gst_app_src_push_buffer(GST_APP_SRC(src), batch_buffer(1, 1));
  GstSample *second = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), tmtest::kTimeout);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(gst_caps_is_equal(gst_sample_get_caps(first), gst_sample_get_caps(second)));
  EXPECT_EQ(outputs_of(second, {"features", "scores"}).count("scores"), 1u);
  gst_sample_unref(first);
  gst_sample_unref(second);
  int warnings = 0;
  GstBus *bus = gst_element_get_bus(pipeline);
  while (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError *err = nullptr;
    gst_message_parse_warning(msg, &err, nullptr);
    if (GST_MESSAGE_SRC(msg) == GST_OBJECT(element)) {
      ++warnings;
      EXPECT_NE(std::string(err->message).find("cannot change while the element runs"), std::string::npos)
          << err->message;
    }
    g_error_free(err);
    gst_message_unref(msg);
  }
  EXPECT_EQ(warnings, 4);
  gst_object_unref(bus);
  // In READY the properties take again.
  gst_element_set_state(pipeline, GST_STATE_READY);
  g_object_set(element, "threads", 2u, nullptr);
  g_object_get(element, "threads", &threads, nullptr);
  EXPECT_EQ(threads, 2u);
  gst_object_unref(element);
  gst_object_unref(sink);
  gst_object_unref(src);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* A GstTensorMeta whose data type is no GstTensorDataType (99): one
 * element error, and the value is never loaded as the enum (UBSan). */
TEST(TensorInfer, ATensorMetaOfAnUnknownDataTypeIsOneError) {
  REQUIRE_MODELS();
  const std::string description = "appsrc name=src format=time caps=video/x-raw,format=RGBA,width=16,height=16,"
                                  "framerate=0/1 ! tensorinfer name=infer model=" +
                                  model("weighted.onnx") + " ! fakesink";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstBuffer *frame = gst_buffer_new_allocate(nullptr, 16 * 16 * 4, nullptr);
  gst_buffer_memset(frame, 0, 0, 16 * 16 * 4);
  gsize dims[] = {1, 3, 16, 16};
  GstTensor *tensor = gst_tensor_new_simple(g_quark_from_string("images"), GST_TENSOR_DATA_TYPE_FLOAT32,
                                            gst_buffer_new_allocate(nullptr, 3 * 16 * 16 * 4, nullptr),
                                            GST_TENSOR_DIM_ORDER_ROW_MAJOR, 4, dims);
  const gint bad = 99;
  std::memcpy(&tensor->data_type, &bad, sizeof bad);
  auto **tensors = g_new(GstTensor *, 1);
  tensors[0] = tensor;
  gst_tensor_meta_set(gst_buffer_add_tensor_meta(frame), 1, tensors);
  gst_app_src_push_buffer(GST_APP_SRC(src), frame);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout, GST_MESSAGE_ERROR);
  ASSERT_NE(msg, nullptr);
  GError *err = nullptr;
  gst_message_parse_error(msg, &err, nullptr);
  EXPECT_STREQ(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), "infer");
  EXPECT_NE(std::string(err->message).find("not a row-major tensor with data of a type tensorinfer reads"),
            std::string::npos)
      << err->message;
  g_error_free(err);
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_object_unref(src);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
}
#endif

/* The memory weighted.onnx's "scores" output is written into: in the
 * buffer's GstTensorMeta (output=meta), else the second memory of the
 * other/tensors buffer. */
GstMemory *scores_memory(GstBuffer *buffer) {
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (gst_buffer_get_tensor_meta(buffer)) {
    const GstTensor *scores = tensor_named(buffer, "scores");
    return scores ? gst_buffer_peek_memory(scores->data, 0) : nullptr;
  }
#endif
  return gst_buffer_n_memory(buffer) == 2 ? gst_buffer_peek_memory(buffer, 1) : nullptr;
}

/* ORT writes into pooled buffers: over 12 frames whose outputs are dropped
 * at once, almost every frame's output memory is one seen before. A mark
 * (qdata) on the memory, not its address, tells: a freed memory loses the
 * mark, and malloc may hand a new one the old address. */
TEST(TensorInfer, OutputBuffersAreRecycledFromAPool) {
  REQUIRE_MODELS();
  struct Seen {
    guint frames = 0;
    guint recycled = 0;
  } seen;
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=12 ! video/x-raw,format=RGBA,width=32,height=32 ! " + kConvert +
                           "! tensorinfer name=infer model=" + model("weighted.onnx") + " ! fakesink",
                       &run, nullptr, [&seen](GstElement *pipeline) {
                         GstElement *infer = gst_bin_get_by_name(GST_BIN(pipeline), "infer");
                         GstPad *src = gst_element_get_static_pad(infer, "src");
                         gst_pad_add_probe(
                             src, GST_PAD_PROBE_TYPE_BUFFER,
                             [](GstPad *, GstPadProbeInfo *info, gpointer data) {
                               auto *s = static_cast<Seen *>(data);
                               if (GstMemory *scores = scores_memory(GST_PAD_PROBE_INFO_BUFFER(info))) {
                                 static const GQuark mark = g_quark_from_static_string("tensorinfer-test-seen");
                                 auto *memory = GST_MINI_OBJECT_CAST(scores);
                                 s->recycled += gst_mini_object_get_qdata(memory, mark) != nullptr;
                                 gst_mini_object_set_qdata(memory, mark, GINT_TO_POINTER(1), nullptr);
                                 ++s->frames;
                               }
                               return GST_PAD_PROBE_OK;
                             },
                             &seen, nullptr);
                         gst_object_unref(src);
                         gst_object_unref(infer);
                       });
  ASSERT_TRUE(run.eos) << run.error_debug;
  EXPECT_EQ(seen.frames, 12u);
  EXPECT_GE(seen.recycled, 9u) << "output memory should come back to the pool and be reused";
}

/* A wrong setup: one element error from tensorinfer naming the problem,
 * and the pipeline goes back to NULL. */
struct WrongSetup {
  const char *name;
  bool tensor_input; // through tensorconvert, or the raw video frame
  const char *props;
  const char *model;
  const char *text;
};

// gtest names a parameter by this; without it, it prints the struct's bytes,
// padding included, which valgrind reports as uninitialised reads.
void PrintTo(const WrongSetup &w, std::ostream *os) { *os << w.name; }

class TensorInferErrors : public ::testing::TestWithParam<WrongSetup> {};

std::string setup_name(const ::testing::TestParamInfo<WrongSetup> &info) { return info.param.name; }

TEST_P(TensorInferErrors, OneElementErrorNamingTheProblem) {
  REQUIRE_MODELS();
  const WrongSetup &w = GetParam();
  expect_one_infer_error(kSource + (w.tensor_input ? kConvert + "! " : "") + "tensorinfer name=infer " + w.props +
                             " model=" + model(w.model) + " ! fakesink",
                         w.text);
}

INSTANTIATE_TEST_SUITE_P(
    , TensorInferErrors,
    ::testing::Values(WrongSetup{"MissingModelFile", true, "", "absent.onnx", "does not exist"},
                      WrongSetup{"FileThatIsNoOnnxModel", true, "", "garbage.onnx", "ONNX Runtime refused model"},
                      WrongSetup{"ShapeMismatch", true, "", "wide.onnx",
                                 "takes float32 [1,3,32,32]; the stream's tensor is float32 [1,3,16,16] (dimension 2"},
                      WrongSetup{
                          "ElementTypeMismatch", true, "", "bytes.onnx",
                          "takes uint8 [1,8,8,3]; the stream's tensor is float32 [1,3,16,16] (element type differs)"},
                      // Debian's ONNX Runtime is CPU-only.
                      WrongSetup{"CudaProviderAbsent", true, "execution-provider=cuda", "weighted.onnx",
                                 "has no CUDA execution provider"},
                      // Refused from what the model declares, before any run allocates 4 GiB.
                      WrongSetup{"DeclaredOutputOver4GiB", true, "", "huge.onnx", "over 4 GiB"}),
    setup_name);

#if GST_TENSOR_MEM_HAVE_TENSOR_META
INSTANTIATE_TEST_SUITE_P(TensorMeta, TensorInferErrors,
                         ::testing::Values(WrongSetup{"VideoFrameWithoutTensorMeta", false, "", "weighted.onnx",
                                                      "without a GstTensorMeta"}),
                         setup_name);
#else
// Without GstTensorMeta, output=meta is refused by name when the element starts.
INSTANTIATE_TEST_SUITE_P(NoTensorMeta, TensorInferErrors,
                         ::testing::Values(WrongSetup{"OutputMetaNeedsGstTensorMeta", true, "output=meta",
                                                      "weighted.onnx",
                                                      "output=meta needs GstTensorMeta (GStreamer 1.26)"}),
                         setup_name);
#endif

/* ONNX Runtime is opened at run time, and the element says which: its
 * version (the one that very file reports, opened here by hand), the API
 * table, the file and the providers. */
TEST(TensorInfer, TheRuntimeItRunsOnIsReadable) {
  REQUIRE_MODELS();
  GstElement *element = gst_element_factory_make("tensorinfer", nullptr);
  ASSERT_NE(element, nullptr);
  gchar *runtime = nullptr;
  g_object_get(element, "onnxruntime", &runtime, nullptr);
  const std::string text = runtime ? runtime : "";
  g_free(runtime);
  gst_object_unref(element);
  EXPECT_NE(text.find("(API "), std::string::npos) << text;
  EXPECT_NE(text.find("libonnxruntime.so.1"), std::string::npos) << text;
  EXPECT_NE(text.find("CPUExecutionProvider"), std::string::npos) << text;
  // A runtime named by hand (CI's run on npm's oldest supported one) is the one opened.
  if (const char *named = g_getenv("TENSORMEM_ONNXRUNTIME"); named && *named) {
    EXPECT_NE(text.find(std::string(" from ") + named + ";"), std::string::npos) << text;
  }
  // "VERSION (API N) from PATH; providers: ...": the file's own version string.
  const std::size_t from = text.find(" from "), end = text.find("; providers");
  ASSERT_TRUE(from != std::string::npos && end != std::string::npos) << text;
  const std::string path = text.substr(from + 6, end - from - 6);
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << path << ": " << dlerror();
  using GetApiBase = const OrtApiBase *(ORT_API_CALL *)();
  auto get_base = reinterpret_cast<GetApiBase>(dlsym(library, "OrtGetApiBase"));
  ASSERT_NE(get_base, nullptr) << path;
  const std::string version = get_base()->GetVersionString();
  EXPECT_EQ(text.rfind(version + " (API ", 0), 0u) << text << " vs the library's " << version;
  dlclose(library);
}

/* execution-provider=auto on a runtime without CUDA runs on the CPU. */
TEST(TensorInfer, AutoProviderFallsBackToTheCpu) {
  REQUIRE_MODELS();
  tmtest::PipelineRun run;
  tmtest::run_pipeline(kSource + kConvert + "! tensorinfer execution-provider=auto threads=1 model=" +
                           model("weighted.onnx") + " ! appsink name=sink",
                       &run);
  EXPECT_TRUE(run.eos) << run.error_debug;
  EXPECT_EQ(run.samples.size(), 4u);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* GStreamer's own onnxinference as the producer of a GstTensorMeta that
 * knows nothing of ours: tensorinspect reports its output tensor (the id
 * from the model's metadata, type, dims) with the checksum of the data
 * buffer that reaches the appsink, computed here. */
TEST(TensorInfer, TensorinspectReadsOnnxinferenceOutput) {
  REQUIRE_MODELS();
  if (!tmtest::element_available("onnxinference"))
    GTEST_SKIP() << "no onnxinference (gstreamer1.0-plugins-bad's onnx plugin)";
  // GStreamer 1.28's onnxinference lost the pre-processing properties: it
  // reads them, and the tensor ids, from MODEL.modelinfo instead.
  GstElement *upstream = gst_element_factory_make("onnxinference", nullptr);
  const bool has_image_format =
      g_object_class_find_property(G_OBJECT_GET_CLASS(upstream), "input-image-format") != nullptr;
  gst_object_unref(upstream);
  const std::string settings =
      has_image_format
          ? model("classifier.onnx") + " input-image-format=chw input-tensor-scale=255"
          : model_with_info("classifier.onnx", "upstream",
                            "[modelinfo]\nversion=1.0\ngroup-id=classification-generic-out\n\n"
                            "[images]\nid=images\ntype=float32\ndims=1,3,224,224\ndir=input\nranges=0.0,1.0\n\n"
                            "[scores]\nid=classification-scores\ntype=float32\ndims=1,10\ndir=output\n");
  tmtest::MetaRun run;
  tmtest::run_meta_pipeline("videotestsrc num-buffers=2 pattern=ball ! video/x-raw,format=RGB,width=224,height=224 ! "
                            "onnxinference model-file=" +
                                settings + " ! tensorinspect ! appsink name=sink",
                            &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 2u);
  std::size_t found = 0;
  for (const tmtest::TensorReport &r : run.tensors) {
    if (r.id != "classification-scores")
      continue;
    SCOPED_TRACE(r.frame);
    ++found;
    EXPECT_EQ(r.type, "float32");
    EXPECT_EQ(r.dims, "1x10");
    EXPECT_EQ(r.bytes, 40u);
    ASSERT_LT(r.frame, run.samples.size());
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[r.frame]));
    ASSERT_NE(meta, nullptr);
    const gint index = gst_tensor_meta_get_index_from_id(meta, g_quark_from_string("classification-scores"));
    ASSERT_GE(index, 0);
    std::vector<guint8> bytes = bytes_of(meta->tensors[index]->data);
    bytes.resize(40);
    EXPECT_EQ(r.checksum, tmtest::xxh3_hex(bytes));
  }
  EXPECT_EQ(found, 2u) << "one report of onnxinference's scores per frame";
}
#endif
