// SPDX-License-Identifier: Apache-2.0
/* GstTensorMeta (GStreamer 1.26's analytics library) on tensorconvert's
 * output, read only through GStreamer's own API, as a tensor decoder or an
 * inference element that knows nothing of gst-tensormem reads it. Built
 * where the library exists (GST_TENSOR_MEM_HAVE_TENSOR_META: the Debian 13
 * leg of scripts/test.sh). */
#include "pipeline_util.hpp"
#include "test_util.hpp"

#include <gst/analytics/analytics.h>
#include <gst/tensormem/gsttensoranalytics-private.h>
#include <gst/tensormem/tensormem.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

const GstTensor *only_tensor(GstBuffer *buffer) {
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  if (!meta || meta->num_tensors != 1)
    return nullptr;
  return meta->tensors[0];
}

std::vector<gsize> dims_of(const GstTensor *tensor) {
  return std::vector<gsize>(tensor->dims, tensor->dims + tensor->num_dims);
}

std::vector<guint8> bytes_of(GstBuffer *buffer) {
  std::vector<guint8> bytes(gst_buffer_get_size(buffer));
  gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
  return bytes;
}

const std::string kSource = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! ";

/* Three 16x8 NCHW tensors, each with a GstTensorMeta whose data buffer
 * holds the sample buffer's own memories (so the same bytes). */
void expect_16x8_tensors_over_their_own_memory(const tmtest::PipelineRun &run) {
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 3u);
  for (GstSample *sample : run.samples) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    const GstTensor *tensor = only_tensor(buffer);
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(dims_of(tensor), (std::vector<gsize>{1, 3, 8, 16}));
    ASSERT_EQ(gst_buffer_n_memory(tensor->data), gst_buffer_n_memory(buffer));
    for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
      EXPECT_EQ(gst_buffer_peek_memory(tensor->data, i), gst_buffer_peek_memory(buffer, i)) << "memory " << i;
    EXPECT_EQ(bytes_of(tensor->data), bytes_of(buffer));
  }
}

} // namespace

/* The example: float32, 1×3×224×224 for width=224 height=224
 * layout=nchw, its data buffer the tensor's own memory (no copy). */
TEST(TensorMeta, TensorOutputDescribesItsOwnMemory) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline(kSource + "tensorconvert name=conv width=224 height=224 layout=nchw ! appsink name=sink", &run);
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 3u);
  for (GstSample *sample : run.samples) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    const GstTensor *tensor = only_tensor(buffer);
    ASSERT_NE(tensor, nullptr) << "no GstTensorMeta with one tensor";
    EXPECT_EQ(tensor->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
    EXPECT_EQ(tensor->dims_order, GST_TENSOR_DIM_ORDER_ROW_MAJOR);
    EXPECT_EQ(tensor->layout, GST_TENSOR_LAYOUT_CONTIGUOUS);
    EXPECT_EQ(dims_of(tensor), (std::vector<gsize>{1, 3, 224, 224}));
    EXPECT_STREQ(g_quark_to_string(tensor->id), "input");
    ASSERT_NE(tensor->data, nullptr);
    EXPECT_EQ(gst_buffer_get_size(tensor->data), 224u * 224 * 3 * 4);
    ASSERT_EQ(gst_buffer_n_memory(tensor->data), gst_buffer_n_memory(buffer));
    for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
      EXPECT_EQ(gst_buffer_peek_memory(tensor->data, i), gst_buffer_peek_memory(buffer, i)) << "memory " << i;
    GstMapInfo a, b;
    ASSERT_TRUE(gst_buffer_map(buffer, &a, GST_MAP_READ));
    ASSERT_TRUE(gst_buffer_map(tensor->data, &b, GST_MAP_READ));
    EXPECT_EQ(a.data, b.data) << "the meta's buffer must map the tensor's own bytes";
    gst_buffer_unmap(tensor->data, &b);
    gst_buffer_unmap(buffer, &a);
  }
}

/* Every dtype and layout: the meta's type, and dims batch first in the
 * layout's order. */
TEST(TensorMeta, TypesAndLayoutsAreDescribed) {
  struct Want {
    const char *props;
    GstTensorDataType type;
    std::vector<gsize> dims;
    gsize element_bytes;
  };
  const Want wants[] = {
      {"dtype=uint8 layout=nhwc", GST_TENSOR_DATA_TYPE_UINT8, {1, 11, 19, 3}, 1},
      {"dtype=float16 layout=nchw", GST_TENSOR_DATA_TYPE_FLOAT16, {1, 3, 11, 19}, 2},
      {"dtype=float32 layout=nhwc", GST_TENSOR_DATA_TYPE_FLOAT32, {1, 11, 19, 3}, 4},
  };
  for (const Want &want : wants) {
    SCOPED_TRACE(want.props);
    tmtest::PipelineRun run;
    tmtest::run_pipeline(kSource + "tensorconvert width=19 height=11 tensor-id=images " + want.props +
                             " ! appsink name=sink",
                         &run);
    ASSERT_TRUE(run.eos) << run.error_debug;
    ASSERT_FALSE(run.samples.empty());
    const GstTensor *tensor = only_tensor(gst_sample_get_buffer(run.samples[0]));
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(tensor->data_type, want.type);
    EXPECT_EQ(dims_of(tensor), want.dims);
    EXPECT_STREQ(g_quark_to_string(tensor->id), "images");
    EXPECT_EQ(gst_buffer_get_size(tensor->data), 19u * 11 * 3 * want.element_bytes);
  }
}

/* output=meta: the frame goes downstream untouched (byte-exact against the
 * pipeline without tensorconvert, its caps video), and its GstTensorMeta
 * holds the same tensor that output=tensor makes, byte for byte. */
TEST(TensorMeta, MetaOutputPassesTheFrameWithTheTensorBeside) {
  const std::string conv = "tensorconvert width=32 height=24 resize=letterbox mean=<0.5> std=<0.25> ";
  tmtest::PipelineRun frames, tensors, both;
  tmtest::run_pipeline(kSource + "appsink name=sink", &frames);
  tmtest::run_pipeline(kSource + conv + "! appsink name=sink", &tensors);
  tmtest::run_pipeline(kSource + conv + "output=meta ! appsink name=sink", &both);
  ASSERT_TRUE(frames.eos) << frames.error_debug;
  ASSERT_TRUE(tensors.eos) << tensors.error_debug;
  ASSERT_TRUE(both.eos) << both.error_debug;
  ASSERT_EQ(both.samples.size(), frames.samples.size());
  ASSERT_EQ(both.samples.size(), tensors.samples.size());
  for (std::size_t i = 0; i < both.samples.size(); ++i) {
    SCOPED_TRACE(i);
    GstCaps *caps = gst_sample_get_caps(both.samples[i]);
    EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw"));
    GstBuffer *frame = gst_sample_get_buffer(both.samples[i]);
    EXPECT_EQ(bytes_of(frame), bytes_of(gst_sample_get_buffer(frames.samples[i])));
    const GstTensor *tensor = only_tensor(frame);
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(dims_of(tensor), (std::vector<gsize>{1, 3, 24, 32}));
    EXPECT_EQ(bytes_of(tensor->data), bytes_of(gst_sample_get_buffer(tensors.samples[i])));
    EXPECT_EQ(GST_BUFFER_PTS(tensor->data), GST_BUFFER_PTS(frame));
  }
}

/* Before 1.28 a frame's caps cannot describe the tensor beside it, so
 * output=meta sends its description (a frame-tensor event: the tensor's
 * other/tensors caps) once, after the caps and before the first frame,
 * which a batching element needs before that frame's allocation query. On
 * 1.28 the caps describe it, and no event is sent. */
TEST(TensorMeta, MetaOutputDescribesItsTensorInAnEventWhereCapsCannot) {
  const std::string d = kSource + "tensorconvert width=32 height=24 output=meta ! fakesink name=sink";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(d.c_str(), &error);
  ASSERT_EQ(error, nullptr) << d;
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  struct Seen {
    std::vector<std::string> order; // "caps", "described" and "frame", as they came
    std::string described;
  } seen;
  gst_pad_add_probe(
      pad, static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        auto *s = static_cast<Seen *>(data);
        if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
          s->order.emplace_back("frame");
          return GST_PAD_PROBE_OK;
        }
        GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
        GstCaps *caps = nullptr;
        if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
          s->order.emplace_back("caps");
        } else if (gst_tensor_mem_frame_tensor_event_parse(event, &caps)) {
          s->order.emplace_back("described");
          gchar *text = gst_caps_to_string(caps);
          s->described = text;
          g_free(text);
        }
        return GST_PAD_PROBE_OK;
      },
      &seen, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  EXPECT_TRUE(end.eos) << end.error;
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref(pad);
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
  const std::vector<std::string> frames_only{"caps", "frame", "frame", "frame"};
  const std::vector<std::string> described{"caps", "described", "frame", "frame", "frame"};
  if (GST_TENSOR_MEM_HAVE_TENSOR_CAPS) {
    EXPECT_EQ(seen.order, frames_only);
    return;
  }
  EXPECT_EQ(seen.order, described);
  GstCaps *got = gst_caps_from_string(seen.described.c_str());
  ASSERT_NE(got, nullptr) << seen.described;
  const GstStructure *s = gst_caps_get_structure(got, 0);
  EXPECT_TRUE(gst_structure_has_name(s, "other/tensors")) << seen.described;
  EXPECT_STREQ(gst_structure_get_string(s, "types"), "float32") << seen.described;
  EXPECT_STREQ(gst_structure_get_string(s, "dimensions"), "32:24:3:1") << seen.described;
  gst_caps_unref(got);
}

/* The tensor elements after tensorconvert hand the buffer on: its
 * GstTensorMeta goes with it, still over the buffer's own memory. */
TEST(TensorMeta, TheMetaTravelsThroughOurTensorElements) {
  tmtest::PipelineRun run;
  tmtest::run_pipeline(kSource + "tensorconvert width=16 height=8 ! tensordownload require-zero-copy=true ! "
                                 "tensorsync ! tensorinspect ! tensorcudaimport ! appsink name=sink",
                       &run);
  expect_16x8_tensors_over_their_own_memory(run);
}

#if GST_TENSOR_MEM_HAVE_GL
/* The GL path's tensor (PBO memory), read back to system memory by
 * tensordownload: the meta on the buffer that leaves describes that
 * buffer's memory, not the PBO it came from, and its bytes are the tensor. */
TEST(TensorMeta, DownloadedGlTensorsDescribeTheirNewMemory) {
  GError *error = nullptr;
  GstTensorMemGlWorker *worker = gst_tensor_mem_gl_worker_new(&error);
  if (!worker) {
    std::string why = error ? error->message : "unknown";
    g_clear_error(&error);
    GTEST_SKIP() << "no headless GL context: " << why;
  }
  gst_object_unref(worker);
  tmtest::PipelineRun run;
  tmtest::run_pipeline(kSource + "tensorconvert storage=pbo width=16 height=8 ! tensordownload ! "
                                 "other/tensors ! appsink name=sink",
                       &run);
  expect_16x8_tensors_over_their_own_memory(run);
}
#endif
