// SPDX-License-Identifier: Apache-2.0
/* tensorconvert's GL compute path (llvmpipe here) against the plain
 * reference of test_convert_reference.hpp and against the CPU path: every
 * input format, odd sizes, both layouts, every element type, each resize
 * mode, BT.601 / BT.709 in both ranges, from PBO input (no copy) and from
 * system memory (copied into a PBO on the way); the PBO output caps, the
 * EGL fence meta, the output pool, copied-bytes and require-zero-copy,
 * tensorcudaimport on the result, and bad input through the GL path. */
#include "gl_test_util.hpp"
#include "pipeline_util.hpp"
#include "test_convert_reference.hpp"
#include "test_util.hpp"

#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <tensormem/gl_convert.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <set>
#include <string>
#include <vector>

namespace {

using namespace convtest;

#define REQUIRE_GL()                                                                                                   \
  std::string no_gl;                                                                                                   \
  if (!tmtest::shared_worker(&no_gl))                                                                                  \
  GTEST_SKIP() << "no headless GL context: " << no_gl

/* Which path converts, and whether the frame arrives as PBO memory. */
struct Path {
  const char *storage; // system: the CPU path; pbo: the GL path
  bool pbo_input;
  bool zero_copy = false;
};

std::string convert_launch(const Case &c, const Path &path) {
  std::string d = path.pbo_input ? "tensorupload storage=pbo ! " : "";
  d += std::string("tensorconvert name=conv storage=") + path.storage + " resize=" + resize_name(c.resize) +
       " dtype=" + c.dtype + " layout=" + (c.nchw ? "nchw" : "nhwc") + " channel-order=" + (c.bgr ? "bgr" : "rgb") +
       " mean=\"<0.485,0.456,0.406>\" std=\"<0.229,0.224,0.225>\" width=" + std::to_string(c.out_w) +
       " height=" + std::to_string(c.out_h) + " pad-value=" + std::to_string(kPad) + " n-threads=3" +
       (path.zero_copy ? " require-zero-copy=true" : "");
  return d;
}

struct Converted {
  GstBuffer *buffer = nullptr; // owned
  std::string caps;
  guint64 copied = 0;
  ~Converted() {
    if (buffer)
      gst_buffer_unref(buffer);
  }
};

/* Pushes one frame through `path` configured for `c`. */
void convert_one(const Case &c, const std::vector<std::uint8_t> &bytes, const std::string &caps, const Path &path,
                 Converted *out) {
  // The worker is handed over before the elements start (the harness starts
  // them), so upload and pass share it and PBO input is read where it lies.
  GstElement *bin = gst_parse_bin_from_description(convert_launch(c, path).c_str(), TRUE, nullptr);
  ASSERT_NE(bin, nullptr);
  tmtest::share_gl_worker(bin);
  GstHarness *h = gst_harness_new_with_element(bin, "sink", "src");
  gst_object_unref(bin);
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer *in = gst_buffer_new_allocate(nullptr, bytes.size(), nullptr);
  gst_buffer_fill(in, 0, bytes.data(), bytes.size());
  out->buffer = gst_harness_push_and_pull(h, in);
  if (GstCaps *negotiated = gst_pad_get_current_caps(h->sinkpad)) {
    gchar *text = gst_caps_to_string(negotiated);
    out->caps = text;
    g_free(text);
    gst_caps_unref(negotiated);
  }
  GstElement *conv = gst_bin_get_by_name(GST_BIN(h->element), "conv");
  g_object_get(conv, "copied-bytes", &out->copied, nullptr);
  gst_object_unref(conv);
  gst_harness_teardown(h);
}

/* The bytes of a frame's pictures, row padding left out: what a copy of it
 * moves. */
guint64 picture_bytes(const GstVideoInfo *info) {
  guint64 bytes = 0;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(info); ++p) // plane p starts with component p
    bytes += static_cast<guint64>(GST_VIDEO_INFO_COMP_WIDTH(info, p)) * GST_VIDEO_INFO_COMP_PSTRIDE(info, p) *
             GST_VIDEO_INFO_COMP_HEIGHT(info, p);
  return bytes;
}

/* The GL path for `c`, from PBO and from system memory, against the
 * reference and against the CPU path. */
void expect_gl_matches(const Case &c, const std::string &caps_str = "") {
  const std::string caps = caps_str.empty() ? in_caps(c) : caps_str;
  GstVideoInfo info = tmtest::info_from_string(caps.c_str());
  const std::vector<std::uint8_t> bytes = random_frame(&info, static_cast<std::uint32_t>(c.in_w * 131 + c.in_h));
  const std::vector<double> want = reference_tensor(c, &info, bytes);
  Converted cpu;
  convert_one(c, bytes, caps, {"system", false}, &cpu);
  ASSERT_NE(cpu.buffer, nullptr);
  const std::vector<double> from_cpu = buffer_values(c, cpu.buffer);
  for (bool pbo : {true, false}) {
    SCOPED_TRACE(pbo ? "PBO input" : "system-memory input");
    Converted gl;
    convert_one(c, bytes, caps, {"pbo", pbo}, &gl);
    ASSERT_NE(gl.buffer, nullptr);
    EXPECT_NE(gl.caps.find("memory:TensorPBO"), std::string::npos) << gl.caps;
    ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(gl.buffer, 0)));
    // PBO input is read in place; system memory is copied in, once.
    EXPECT_EQ(gl.copied, pbo ? 0u : picture_bytes(&info));
    const std::vector<double> from_gl = buffer_values(c, gl.buffer);
    expect_close(c, from_gl, want, false, "GL against the reference");
    expect_close(c, from_gl, from_cpu, true, "GL against the CPU path");
  }
}

const char *const kFormats[] = {"RGBA", "BGRA", "RGBx", "BGRx", "RGB", "BGR", "GRAY8", "NV12", "I420"};

TEST(TensorConvertGl, EveryFormatLayoutAndTypeMatchesTheReferenceAndTheCpuPath) {
  REQUIRE_GL();
  int n = 0;
  for (const char *format : kFormats)
    for (const char *dtype : {"uint8", "float16", "float32"})
      for (bool nchw : {true, false}) {
        SCOPED_TRACE(std::string(format) + " " + dtype + (nchw ? " nchw" : " nhwc"));
        expect_gl_matches({format, 13, 7, 13, 7, Resize::Stretch, dtype, nchw, (n++ % 2) == 1});
      }
}

TEST(TensorConvertGl, EveryResizeModeMatchesAtOddSizes) {
  REQUIRE_GL();
  int n = 0;
  for (const char *format : {"RGBA", "BGRx", "RGB", "GRAY8", "NV12", "I420"})
    for (Resize resize : {Resize::Stretch, Resize::Letterbox, Resize::Crop})
      for (const char *dtype : {"uint8", "float16", "float32"}) {
        SCOPED_TRACE(std::string(format) + " " + resize_name(resize) + " " + dtype);
        ++n;
        // Down on one axis, up on the other, and a plain downscale.
        expect_gl_matches({format, 37, 21, 19, 23, resize, dtype, n % 2 == 0, n % 3 == 0});
        expect_gl_matches({format, 31, 17, 9, 5, resize, dtype, n % 2 == 1, false});
      }
}

TEST(TensorConvertGl, YuvMatrixAndRangeComeFromTheColorimetry) {
  REQUIRE_GL();
  for (const char *format : {"NV12", "I420"})
    for (const char *colorimetry : {"bt601", "bt709", "1:4:0:0", "1:3:5:1"})
      for (const char *dtype : {"uint8", "float32"}) {
        SCOPED_TRACE(std::string(format) + " " + colorimetry + " " + dtype);
        const Case c{format, 23, 15, 23, 15, Resize::Stretch, dtype, true, false};
        expect_gl_matches(c, in_caps(c, (std::string(",colorimetry=") + colorimetry).c_str()));
      }
}

/* The chain the issue is about: PBO frames in, PBO tensors out from a pool,
 * each fenced with the pass's EGL fence, nothing copied. */
TEST(TensorConvertGl, PboInGivesPooledFencedPboTensorsWithoutACopy) {
  REQUIRE_GL();
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=12 ! video/x-raw,format=NV12,width=64,height=48 ! "
                       "tensorupload storage=pbo ! tensorconvert name=conv width=32 height=32 ! "
                       "tensorinspect name=ins ! appsink name=sink",
                       &run, nullptr, [](GstElement *pipeline) { tmtest::share_gl_worker(pipeline); });
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 12u);
  std::set<guint> gl_buffers;
  for (GstSample *sample : run.samples) {
    GstCapsFeatures *features = gst_caps_get_features(gst_sample_get_caps(sample), 0);
    EXPECT_TRUE(gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_TENSOR_PBO));
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
    GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
    ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
    gl_buffers.insert(gst_tensor_mem_pbo_memory_get_buffer_id(mem));
    gchar *fences = gst_buffer_describe_tensor_mem_fences(buffer);
    EXPECT_NE(std::string(fences ? fences : "").find("egl"), std::string::npos) << (fences ? fences : "(none)");
    g_free(fences);
    EXPECT_EQ(gst_buffer_get_size(buffer), 32u * 32 * 3 * 4);
  }
  // appsink holds every sample, so the pool grew to 12; a fresh GL buffer per
  // frame would be the same count, hence the streaming check below.
  EXPECT_LE(gl_buffers.size(), 12u);
}

/* Buffers released downstream come back: over a long run far fewer GL
 * buffers than frames. */
TEST(TensorConvertGl, OutputPboBuffersComeFromAPool) {
  REQUIRE_GL();
  const char *launch = "videotestsrc num-buffers=40 ! video/x-raw,format=RGBA,width=40,height=30 ! "
                       "tensorupload storage=pbo ! tensorconvert name=conv width=16 height=16 ! fakesink name=fs";
  GstElement *pipeline = gst_parse_launch(launch, nullptr);
  ASSERT_NE(pipeline, nullptr);
  tmtest::share_gl_worker(pipeline);
  std::set<guint> ids;
  GstElement *fs = gst_bin_get_by_name(GST_BIN(pipeline), "fs");
  GstPad *pad = gst_element_get_static_pad(fs, "sink");
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        GstMemory *mem = gst_buffer_peek_memory(GST_PAD_PROBE_INFO_BUFFER(info), 0);
        if (gst_is_tensor_mem_pbo_memory(mem))
          static_cast<std::set<guint> *>(data)->insert(gst_tensor_mem_pbo_memory_get_buffer_id(mem));
        return GST_PAD_PROBE_OK;
      },
      &ids, nullptr);
  gst_object_unref(pad);
  gst_object_unref(fs);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  EXPECT_TRUE(end.eos) << end.error;
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  tmtest::release_pipeline(pipeline);
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), 4u) << "a new PBO per frame instead of a pool";
}

/* System memory is read by the pass only after a copy into a PBO: counted,
 * and refused under require-zero-copy with an error saying so; PBO input is
 * read where it lies. */
TEST(TensorConvertGl, SystemInputIsCopiedCountedAndRefusedUnderRequireZeroCopy) {
  REQUIRE_GL();
  const Case c{"RGBA", 13, 7, 5, 5, Resize::Letterbox, "float32", true, false};
  GstVideoInfo info = tmtest::info_from_string(in_caps(c).c_str());
  const std::vector<std::uint8_t> bytes = random_frame(&info, 7);
  Converted from_system;
  convert_one(c, bytes, in_caps(c), {"pbo", false}, &from_system);
  ASSERT_NE(from_system.buffer, nullptr);
  EXPECT_EQ(from_system.copied, 13u * 4 * 7);
  Converted from_pbo;
  convert_one(c, bytes, in_caps(c), {"pbo", true, true}, &from_pbo);
  ASSERT_NE(from_pbo.buffer, nullptr);
  EXPECT_EQ(from_pbo.copied, 0u);

  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=32,height=16 ! "
                       "tensorconvert storage=pbo require-zero-copy=true ! fakesink",
                       &run, nullptr, [](GstElement *pipeline) { tmtest::share_gl_worker(pipeline); });
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error_debug.find("require-zero-copy=true"), std::string::npos) << run.error_debug;
}

/* storage=auto: PBO input takes the GL path; system input
 * and a downstream that takes anything stay on the CPU path; a downstream
 * that takes only PBO memory gets the GL path. */
TEST(TensorConvertGl, AutoChoosesGlForPboInputOrPboDownstream) {
  REQUIRE_GL();
  struct Want {
    const char *launch;
    bool pbo;
  } wants[] = {
      {"videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=16 ! tensorupload storage=pbo ! "
       "tensorconvert ! appsink name=sink",
       true},
      {"videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=16 ! tensorconvert ! appsink name=sink",
       false},
      {"videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=16 ! tensorconvert ! "
       "other/tensors(memory:TensorPBO) ! appsink name=sink",
       true},
      {"videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=16 ! tensorupload storage=pbo ! "
       "tensorconvert storage=system ! appsink name=sink",
       false},
  };
  for (const Want &want : wants) {
    SCOPED_TRACE(want.launch);
    tmtest::PipelineRun run;
    tmtest::run_pipeline(want.launch, &run, nullptr, [](GstElement *pipeline) { tmtest::share_gl_worker(pipeline); });
    ASSERT_TRUE(run.eos) << run.error_debug;
    ASSERT_EQ(run.samples.size(), 1u);
    GstMemory *mem = gst_buffer_peek_memory(gst_sample_get_buffer(run.samples[0]), 0);
    EXPECT_EQ(static_cast<bool>(gst_is_tensor_mem_pbo_memory(mem)), want.pbo);
  }
}

/* tensorcudaimport registers the tensor's PBO with CUDA (the fake runtime
 * in the gst-convert-gl-cuda run): the CUDA pointer holds the tensor's
 * bytes, and nothing was copied on the way. */
TEST(TensorConvertGlCuda, TensorcudaimportHandsInferenceTheTensorWithoutACopy) {
  REQUIRE_GL();
  std::shared_ptr<const tensormem::CudaRuntime> cuda = tensormem::CudaRuntime::get();
  if (!cuda || !cuda->available())
    GTEST_SKIP() << "no CUDA runtime (the gst-convert-gl-cuda run points TENSORMEM_CUDART at the fake)";
  tmtest::PipelineRun run;
  tmtest::run_pipeline("videotestsrc num-buffers=3 ! video/x-raw,format=NV12,width=40,height=30 ! "
                       "tensorupload storage=pbo name=up ! tensorconvert name=conv width=16 height=8 ! "
                       "tensorcudaimport name=imp require-cuda=true ! appsink name=sink",
                       &run, nullptr, [](GstElement *pipeline) { tmtest::share_gl_worker(pipeline); });
  ASSERT_TRUE(run.eos) << run.error_debug;
  ASSERT_EQ(run.samples.size(), 3u);
  EXPECT_EQ(run.upload_copied, 0u);
  for (GstSample *sample : run.samples) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(buffer, 0)));
    GstTensorMemCudaMeta *meta = gst_buffer_get_tensor_mem_cuda_meta(buffer);
    ASSERT_NE(meta, nullptr) << "no CUDA meta on the converted tensor";
    gpointer device = nullptr;
    gsize size = 0;
    GError *error = nullptr;
    ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(meta, &device, &size, &error)) << error->message;
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(buffer, &map, GST_MAP_READ));
    ASSERT_GE(size, map.size);
    std::vector<guint8> through_cuda(map.size);
    ASSERT_TRUE(cuda->memcpy_device_to_host(through_cuda.data(), device, map.size));
    EXPECT_EQ(std::memcmp(through_cuda.data(), map.data, map.size), 0) << "the CUDA pointer is not the tensor";
    gst_buffer_unmap(buffer, &map);
    gst_tensor_mem_cuda_meta_unmap(meta);
  }
}

/* Bad buffers (DESIGN §7) through the GL path end in tensorconvert's
 * element error before anything reaches GL. */
TEST(TensorConvertGl, BadInputIsAnElementError) {
  REQUIRE_GL();
  struct Bad {
    const char *what;
    gsize size;
    bool bad_meta;
  } bads[] = {{"a buffer shorter than the frame", 100, false}, {"a video meta whose stride is too small", 0, true}};
  for (const Bad &bad : bads) {
    SCOPED_TRACE(bad.what);
    GstElement *pipeline =
        gst_parse_launch("appsrc name=src ! tensorconvert name=conv storage=pbo ! fakesink sync=false", nullptr);
    ASSERT_NE(pipeline, nullptr);
    tmtest::share_gl_worker(pipeline);
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=16,height=8,framerate=30/1");
    g_object_set(src, "caps", caps, "format", GST_FORMAT_TIME, nullptr);
    gst_caps_unref(caps);
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    const gsize size = bad.size ? bad.size : 16 * 4 * 8;
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
    gst_buffer_memset(buffer, 0, 0x55, size);
    if (bad.bad_meta) {
      gsize offsets[GST_VIDEO_MAX_PLANES] = {0};
      gint strides[GST_VIDEO_MAX_PLANES] = {8};
      gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGBA, 16, 8, 1, offsets,
                                     strides);
    }
    gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout,
                                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    ASSERT_NE(msg, nullptr);
    EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_ERROR) << "bad input reached EOS";
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      EXPECT_STREQ(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), "conv");
    }
    gst_message_unref(msg);
    gst_object_unref(bus);
    gst_object_unref(src);
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    tmtest::release_pipeline(pipeline);
  }
}

} // namespace

namespace {

/* The pass itself refuses what would make the shader read or write outside
 * its buffers, before anything reaches GL. */
TEST(GlFrameConverter, RefusesBuffersThatDoNotHoldTheFrameOrTheTensor) {
  REQUIRE_GL();
  std::shared_ptr<tensormem::GlWorker> worker = gst_tensor_mem_gl_worker_get_core_gl_worker(tmtest::shared_worker(&no_gl));
  tensormem::ConvertSpec spec;
  spec.input = tensormem::PixelFormat::NV12;
  spec.in_width = 15;
  spec.in_height = 9;
  spec.out_width = 7;
  spec.out_height = 5;
  spec.dtype = tensormem::DType::U8;
  tensormem::Result<tensormem::FrameConverter> cpu = tensormem::FrameConverter::create(spec);
  ASSERT_TRUE(cpu) << cpu.error().message();
  tensormem::Result<std::shared_ptr<tensormem::GlFrameConverter>> pass =
      tensormem::GlFrameConverter::create(worker, *cpu);
  ASSERT_TRUE(pass) << pass.error().message();
  // 7 * 5 * 3 = 105 bytes of uint8, written as whole words.
  EXPECT_EQ((*pass)->padded_output_bytes(), 108u);
  tensormem::Result<tensormem::Tensor> in = worker->create_pbo(256, {256}, tensormem::DType::U8);
  tensormem::Result<tensormem::Tensor> out = worker->create_pbo(108, {108}, tensormem::DType::U8);
  ASSERT_TRUE(in && out);
  const std::uint32_t in_id = tensormem::pbo_storage_of(*in)->buffer_id();
  const std::uint32_t out_id = tensormem::pbo_storage_of(*out)->buffer_id();
  tensormem::GlFrameSource src;
  src.buffer = in_id;
  src.size = 256;
  src.stride = {16, 16, 0};
  src.offset = {0, 16 * 9, 0}; // luma 9 rows of 16, chroma 5 rows of 16: 224 bytes
  EXPECT_TRUE((*pass)->convert(src, out_id, 108)) << "a frame and tensor that fit";
  const tensormem::Result<void> short_output = (*pass)->convert(src, out_id, 105);
  ASSERT_FALSE(short_output);
  EXPECT_NE(short_output.error().message().find("needs 108"), std::string::npos) << short_output.error().message();
  tensormem::GlFrameSource past = src;
  past.offset[1] = 200; // chroma would end at byte 280 of 256
  EXPECT_FALSE((*pass)->convert(past, out_id, 108));
  tensormem::GlFrameSource narrow = src;
  narrow.stride[0] = 14; // a luma row is 15 bytes
  EXPECT_FALSE((*pass)->convert(narrow, out_id, 108));
  EXPECT_FALSE((*pass)->convert(src, 0, 108));
}

} // namespace
