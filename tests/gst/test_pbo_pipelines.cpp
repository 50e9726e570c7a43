// SPDX-License-Identifier: Apache-2.0
// tensorupload storage=pbo and tensordownload on real GL (Mesa llvmpipe,
// headless): byte-exact pipelines, the copy counters, strict mode, the GL
// worker shared through GstContext, renegotiation, bad caps, and no GL
// buffer left behind. Frames are small: llvmpipe is slow under valgrind.
// Skips, printing the reason, only when no headless GL context can be made.
#include "gl_test_util.hpp"
#include "pipeline_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace {

using tmtest::element_available;

constexpr guint kFrames = 4;

using tmtest::live_gl_buffers;

/* What one run produced. */
struct PboRun {
  std::vector<GstSample *> samples;
  bool eos = false;
  std::string error;
  guint64 up_copied = 0, down_copied = 0;
  int pbo_buffers = 0;                    // buffers leaving "up" whose memories are all PBO memory
  int other_buffers = 0;                  // buffers leaving "up" with other memory
  GstTensorMemGlWorker *worker = nullptr; // the worker "up" used (a reference)

  PboRun() = default;
  PboRun(const PboRun &) = delete;
  PboRun &operator=(const PboRun &) = delete;
  ~PboRun() {
    for (GstSample *s : samples)
      gst_sample_unref(s);
    gst_clear_object(&worker);
  }
};

GstPadProbeReturn count_pbo(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *run = static_cast<PboRun *>(user_data);
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  bool all = gst_buffer_n_memory(buffer) > 0;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
    all = all && gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(buffer, i));
  (all ? run->pbo_buffers : run->other_buffers)++;
  return GST_PAD_PROBE_OK;
}

guint64 copied(GstElement *pipeline, const char *name) {
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
  if (!element)
    return 0;
  const guint64 bytes = tmtest::copied_bytes(element);
  gst_object_unref(element);
  return bytes;
}

/* Runs `description` to EOS or error (pulling every sample from appsink
 * "sink" when there is one) and back to NULL. `context`, when given, is set
 * on the pipeline first, the way an application hands over its worker. */
void run(const std::string &description, PboRun *out, GstContext *context = nullptr) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << description << ": " << error->message;
  if (context)
    gst_element_set_context(pipeline, context);
  GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
  if (up) {
    GstPad *src = gst_element_get_static_pad(up, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_pbo, out, nullptr);
    gst_object_unref(src);
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  if (sink) {
    for (;;) {
      GstSample *sample = nullptr;
      g_signal_emit_by_name(sink, "pull-sample", &sample);
      if (!sample)
        break;
      out->samples.push_back(sample);
    }
  }
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  EXPECT_FALSE(end.timed_out) << description << ": " << end.error;
  out->eos = end.eos;
  if (!end.eos && !end.timed_out)
    out->error = end.error;
  if (up) {
    GstContext *used = gst_element_get_context(up, GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE);
    if (used) {
      gst_context_get_tensor_mem_gl_worker(used, &out->worker);
      gst_context_unref(used);
    }
  }
  out->up_copied = copied(pipeline, "up");
  out->down_copied = copied(pipeline, "down");
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  if (sink)
    gst_object_unref(sink);
  if (up)
    gst_object_unref(up);
  tmtest::release_pipeline(pipeline);
}

class PboPipelineBase : public ::testing::Test {
protected:
  void SetUp() override {
    for (const char *element : {"videotestsrc", "appsink"}) {
      if (!element_available(element))
        GTEST_SKIP() << element << " is not installed (gstreamer1.0-plugins-base)";
    }
    std::string why;
    worker = tmtest::shared_worker(&why);
    if (!worker)
      GTEST_SKIP() << "no headless GL here: " << why;
    context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
  }
  void TearDown() override {
    if (context)
      gst_context_unref(context);
    if (worker) {
      EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u);
      // Every pipeline was waited for until finalized (release_pipeline), and
      // glDeleteBuffers, posted to the GL thread when the last reference
      // went, ran before the worker's count below (its tasks run in order).
      EXPECT_EQ(live_gl_buffers(worker), 0) << "a GL buffer outlived its pipeline";
    }
  }

  GstTensorMemGlWorker *worker = nullptr;
  GstContext *context = nullptr;
};

struct PboCase {
  const char *name;
  const char *caps;
  const char *pattern;
  /* The PBO pool's layout (64-byte strides) is the default one for these
   * caps, so a consumer that ignores GstVideoMeta reads the PBO itself. */
  bool default_layout;
};

void PrintTo(const PboCase &c, std::ostream *os) { *os << c.name << " (" << c.caps << ")"; }

class PboPipelines : public PboPipelineBase, public ::testing::WithParamInterface<PboCase> {
protected:
  std::string source() const {
    return "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=" + GetParam().pattern + " ! " +
           GetParam().caps;
  }
  static std::string sink() { return " ! appsink name=sink sync=false"; }
};

} // namespace

/* PBO memory is CPU-mappable through gst_memory_map, so tensordownload hands
 * it on as it is where the consumer (a bare appsink: ANY caps, no video meta)
 * reads its layout, and copies it into the default layout only where the
 * 64-byte strides differ from it. Either way the bytes are the plain
 * pipeline's. */
TEST_P(PboPipelines, BytesMatchThePlainPipelineAndOnlyPaddedFramesAreCopiedOut) {
  PboRun plain, ours;
  ASSERT_NO_FATAL_FAILURE(run(source() + sink(), &plain));
  ASSERT_NO_FATAL_FAILURE(run(source() +
                                  " ! tensorupload name=up storage=pbo require-zero-copy=true ! "
                                  "tensordownload name=down" +
                                  sink(),
                              &ours, context));
  ASSERT_TRUE(plain.eos) << plain.error;
  ASSERT_TRUE(ours.eos) << ours.error;
  ASSERT_EQ(plain.samples.size(), kFrames);
  ASSERT_EQ(ours.samples.size(), kFrames);
  EXPECT_EQ(ours.pbo_buffers, static_cast<int>(kFrames)) << "every buffer leaving tensorupload is PBO memory";
  EXPECT_EQ(ours.other_buffers, 0);
  EXPECT_EQ(ours.worker, worker) << "the application's worker was used";

  GstVideoInfo info = tmtest::info_from_string(GetParam().caps);
  const bool passed = GetParam().default_layout;
  EXPECT_EQ(ours.up_copied, 0u) << "videotestsrc wrote straight into the offered PBO pool";
  EXPECT_EQ(ours.down_copied, passed ? 0u : kFrames * GST_VIDEO_INFO_SIZE(&info))
      << (passed ? "PBO memory in the default layout passes through" : "one copy out of each padded PBO");
  for (guint i = 0; i < kFrames; ++i) {
    GstBuffer *out = gst_sample_get_buffer(ours.samples[i]);
    EXPECT_EQ(static_cast<bool>(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(out, 0))), passed) << "frame " << i;
    EXPECT_GE(gst_buffer_get_size(out), GST_VIDEO_INFO_SIZE(&info));
    EXPECT_TRUE(tmtest::frames_equal(gst_sample_get_buffer(plain.samples[i]), out, &info)) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, PboPipelines,
    ::testing::Values(PboCase{"Rgba64x48", "video/x-raw,format=RGBA,width=64,height=48", "smpte", true},
                      PboCase{"Nv12_64x48", "video/x-raw,format=NV12,width=64,height=48", "ball", true},
                      PboCase{"Rgba33x17", "video/x-raw,format=RGBA,width=33,height=17", "smpte", false},
                      PboCase{"Nv12_33x17", "video/x-raw,format=NV12,width=33,height=17", "ball", false}),
    [](const ::testing::TestParamInfo<PboCase> &info) { return std::string(info.param.name); });

namespace {
class PboPipeline : public PboPipelineBase {};
} // namespace

/* 33-pixel RGBA rows are padded to 192 bytes in a PBO; fakesink does not
 * read GstVideoMeta, so the frame would need a copy. */
TEST_F(PboPipeline, StrictDownloadFailsClearlyOnAPaddedPbo) {
  PboRun ours;
  ASSERT_NO_FATAL_FAILURE(run("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=33,height=16 ! "
                              "tensorupload name=up storage=pbo ! tensordownload name=down require-zero-copy=true ! "
                              "fakesink",
                              &ours, context));
  EXPECT_FALSE(ours.eos);
  EXPECT_NE(ours.error.find("padded"), std::string::npos) << ours.error;
  EXPECT_NE(ours.error.find("require-zero-copy"), std::string::npos) << ours.error;
  EXPECT_EQ(ours.down_copied, 0u);
}

/* Issue 13: PBO memory in the default layout reaches a plain consumer
 * without a copy, so require-zero-copy holds from decoder to sink. */
TEST_F(PboPipeline, StrictDownloadHandsPboMemoryInTheDefaultLayoutOn) {
  PboRun ours;
  ASSERT_NO_FATAL_FAILURE(run("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=32,height=16 ! "
                              "tensorupload name=up storage=pbo ! tensordownload name=down require-zero-copy=true ! "
                              "appsink name=sink sync=false",
                              &ours, context));
  ASSERT_TRUE(ours.eos) << ours.error;
  ASSERT_EQ(ours.samples.size(), 3u);
  EXPECT_EQ(ours.down_copied, 0u);
  for (GstSample *sample : ours.samples) {
    GstCaps *caps = gst_sample_get_caps(sample);
    ASSERT_NE(caps, nullptr);
    EXPECT_TRUE(gst_caps_features_is_equal(gst_caps_get_features(caps, 0), GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
        << "plain caps downstream, as gldownload gives";
    EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0)));
  }
}

TEST_F(PboPipeline, TwoUploadsShareOneWorkerTheyStartThemselvesAndDropItInNull) {
  // No application worker: the downstream upload starts one, the other finds it.
  std::weak_ptr<tensormem::GlWorker> core;
  GstTensorMemGlWorker *a = nullptr, *b = nullptr;
  {
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(
        "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=16,height=8 ! tensorupload name=a storage=pbo ! "
        "tensordownload ! tensorupload name=b storage=pbo ! appsink name=sink sync=false",
        &error);
    ASSERT_EQ(error, nullptr) << error->message;
    ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_ASYNC);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, tmtest::kTimeout), GST_STATE_CHANGE_SUCCESS);
    for (auto [name, slot] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
      GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
      GstContext *used = gst_element_get_context(element, GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE);
      ASSERT_NE(used, nullptr) << name;
      EXPECT_TRUE(gst_context_get_tensor_mem_gl_worker(used, slot));
      gst_context_unref(used);
      gst_object_unref(element);
    }
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, worker);
    core = gst_tensor_mem_gl_worker_get_core_gl_worker(a);

    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "pull-preroll", &sample);
    ASSERT_NE(sample, nullptr);
    GstMemory *mem = gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0);
    ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
    EXPECT_EQ(gst_tensor_mem_pbo_memory_get_gl_worker(mem), a);
    EXPECT_EQ(gst_tensor_mem_pbo_memory_get_core_gl_worker(mem), core.lock());
    gst_sample_unref(sample);
    gst_object_unref(sink);

    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    tmtest::release_pipeline(pipeline);
  }
  gst_object_unref(a);
  gst_object_unref(b);
  EXPECT_TRUE(core.expired()) << "back in NULL and unreferenced, the pipeline's own GL worker is gone";
}

TEST_F(PboPipeline, AnApplicationAnsweringNeedContextProvidesTheWorker) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=16,height=8 ! "
                                          "tensorupload name=up storage=pbo ! appsink name=sink sync=false",
                                          &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstBus *bus = gst_element_get_bus(pipeline);
  struct Answer {
    GstContext *context;
    std::atomic<int> asked{0};
  } answer{context};
  gst_bus_set_sync_handler(
      bus,
      [](GstBus *, GstMessage *msg, gpointer data) {
        auto *a = static_cast<Answer *>(data);
        const gchar *type = nullptr;
        if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_NEED_CONTEXT && gst_message_parse_context_type(msg, &type) &&
            g_strcmp0(type, GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE) == 0) {
          a->asked++;
          gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(msg)), a->context);
        }
        return GST_BUS_PASS;
      },
      &answer, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstSample *sample = nullptr;
  g_signal_emit_by_name(sink, "pull-sample", &sample);
  ASSERT_NE(sample, nullptr);
  GstMemory *mem = gst_buffer_peek_memory(gst_sample_get_buffer(sample), 0);
  ASSERT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_PBO);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(mem), gst_tensor_mem_pbo_memory_get_tensor(mem));
  EXPECT_EQ(gst_tensor_mem_pbo_memory_get_gl_worker(mem), worker);
  EXPECT_EQ(answer.asked.load(), 1);
  GstCaps *caps = gst_sample_get_caps(sample);
  EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(caps, 0), GST_CAPS_FEATURE_MEMORY_TENSOR_PBO));
  const GstVideoMeta *meta = gst_buffer_get_video_meta(gst_sample_get_buffer(sample));
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->stride[0] % GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN, 0);
  gst_sample_unref(sample);
  gst_object_unref(sink);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_bus_set_sync_handler(bus, nullptr, nullptr, nullptr);
  gst_object_unref(bus);
  tmtest::release_pipeline(pipeline);
}

TEST_F(PboPipeline, PlainCapsAfterAPboUploadFailToNegotiate) {
  tmtest::PipelineRun plain_after;
  tmtest::run_pipeline("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=16,height=8 ! "
                       "tensorupload name=up storage=pbo ! capsfilter name=cf ! fakesink",
                       &plain_after, "video/x-raw,format=RGBA,width=16,height=8");
  EXPECT_FALSE(plain_after.eos);
  EXPECT_NE(plain_after.error_debug.find("not-negotiated"), std::string::npos) << plain_after.error_debug;
}

TEST_F(PboPipeline, RepeatedNullPlayingCyclesLeaveNoGlBufferOrMapBehind) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch("videotestsrc ! video/x-raw,format=NV12,width=16,height=8 ! "
                                          "tensorupload name=up storage=pbo ! tensordownload ! fakesink sync=false",
                                          &error);
  ASSERT_EQ(error, nullptr) << error->message;
  gst_element_set_context(pipeline, context);
  for (int cycle = 0; cycle < 3; ++cycle) {
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, tmtest::kTimeout), GST_STATE_CHANGE_SUCCESS);
    EXPECT_GT(live_gl_buffers(worker), 0) << "cycle " << cycle << ": the pool holds PBOs while playing";
    ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u) << "cycle " << cycle;
    EXPECT_EQ(live_gl_buffers(worker), 0) << "cycle " << cycle;
  }
  tmtest::release_pipeline(pipeline);
}

// ---- tensorupload storage=pbo in a harness ---------------------------------

namespace {

GstBuffer *frame_buffer(const GstVideoInfo *info, guint seed) {
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(info), nullptr);
  tmtest::fill_frame(buffer, info, seed);
  return buffer;
}

class PboHarness : public PboPipelineBase {
protected:
  /* tensorupload storage=pbo with the application worker set before it starts. */
  GstHarness *upload(const char *extra = nullptr) {
    GstElement *element = gst_element_factory_make("tensorupload", nullptr);
    g_object_set(element, "storage", GST_TENSOR_MEM_STORAGE_PBO, nullptr);
    if (extra)
      gst_util_set_object_arg(G_OBJECT(element), "require-zero-copy", extra);
    gst_element_set_context(element, context);
    GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
    gst_object_unref(element);
    return h;
  }
};

} // namespace

TEST_F(PboHarness, PlainBuffersAreCopiedOnceIntoPbosAndCounted) {
  GstHarness *h = upload();
  GstVideoInfo info = tmtest::info_from_string("video/x-raw,format=RGBA,width=20,height=6");
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGBA,width=20,height=6,framerate=30/1");
  for (guint i = 0; i < 3; ++i) {
    GstBuffer *in = frame_buffer(&info, i);
    gst_buffer_ref(in);
    ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    GstMemory *mem = gst_buffer_peek_memory(out, 0);
    EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
    EXPECT_EQ(gst_tensor_mem_pbo_memory_get_gl_worker(mem), worker);
    const GstVideoMeta *meta = gst_buffer_get_video_meta(out);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->stride[0], 128) << "80-byte rows padded to 64-byte strides";
    EXPECT_TRUE(tmtest::frames_equal(in, out, &info)) << i;
    gst_buffer_unref(out);
    gst_buffer_unref(in);
  }
  EXPECT_EQ(tmtest::copied_bytes(h->element), 3 * GST_VIDEO_INFO_SIZE(&info));
  gst_harness_teardown(h);
}

TEST_F(PboHarness, StrictUploadRefusesPlainBuffers) {
  GstHarness *h = upload("true");
  GstVideoInfo info = tmtest::info_from_string("video/x-raw,format=RGBA,width=8,height=2");
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGBA,width=8,height=2,framerate=30/1");
  EXPECT_EQ(gst_harness_push(h, frame_buffer(&info, 1)), GST_FLOW_ERROR);
  EXPECT_EQ(tmtest::copied_bytes(h->element), 0u);
  gst_harness_teardown(h);
}

TEST_F(PboHarness, CapsRenegotiatedMidStreamGiveFramesOfTheNewSize) {
  GstHarness *h = upload();
  const char *sizes[] = {"video/x-raw,format=RGBA,width=16,height=4", "video/x-raw,format=NV12,width=10,height=6",
                         "video/x-raw,format=RGBA,width=7,height=3"};
  guint seed = 0;
  for (const char *caps : sizes) {
    GstVideoInfo info = tmtest::info_from_string(caps);
    gst_harness_set_src_caps_str(h, (std::string(caps) + ",framerate=30/1").c_str());
    for (int i = 0; i < 2; ++i) {
      GstBuffer *in = frame_buffer(&info, ++seed);
      gst_buffer_ref(in);
      ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK) << caps;
      GstBuffer *out = gst_harness_pull(h);
      ASSERT_NE(out, nullptr);
      EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(out, 0)));
      const GstVideoMeta *meta = gst_buffer_get_video_meta(out);
      ASSERT_NE(meta, nullptr);
      EXPECT_EQ(meta->width, static_cast<guint>(GST_VIDEO_INFO_WIDTH(&info))) << caps;
      EXPECT_EQ(meta->format, GST_VIDEO_INFO_FORMAT(&info)) << caps;
      EXPECT_TRUE(tmtest::frames_equal(in, out, &info)) << caps;
      gst_buffer_unref(out);
      gst_buffer_unref(in);
    }
  }
  gst_harness_teardown(h);
}

TEST_F(PboHarness, AbsurdCapsAreRefusedWithoutAnAllocation) {
  GstHarness *h = upload();
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGBA,width=2147483647,height=2147483647,framerate=30/1");
  EXPECT_EQ(gst_harness_push(h, gst_buffer_new_allocate(nullptr, 64, nullptr)), GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown(h);
  gst_harness_teardown(upload()); // the element still starts and stops cleanly afterwards
}

TEST(PboElementMetadata, UploadOffersPboStorageAndBothElementsTakeTensorPboCaps) {
  GstElement *up = gst_element_factory_make("tensorupload", nullptr);
  ASSERT_NE(up, nullptr);
  gst_util_set_object_arg(G_OBJECT(up), "storage", "pbo");
  GstTensorMemStorage storage = GST_TENSOR_MEM_STORAGE_AUTO;
  g_object_get(up, "storage", &storage, nullptr);
  EXPECT_EQ(storage, GST_TENSOR_MEM_STORAGE_PBO);
  GstPad *src = gst_element_get_static_pad(up, "src");
  GstCaps *templ = gst_pad_get_pad_template_caps(src);
  GstCaps *pbo = gst_caps_from_string("video/x-raw(memory:TensorPBO),format=RGBA,width=16,height=16,framerate=0/1");
  EXPECT_TRUE(gst_caps_can_intersect(templ, pbo));
  gst_caps_unref(templ);
  gst_object_unref(src);
  gst_object_unref(up);

  GstElement *down = gst_element_factory_make("tensordownload", nullptr);
  ASSERT_NE(down, nullptr);
  GstPad *sink = gst_element_get_static_pad(down, "sink");
  templ = gst_pad_get_pad_template_caps(sink);
  EXPECT_TRUE(gst_caps_can_intersect(templ, pbo));
  gst_caps_unref(templ);
  gst_object_unref(sink);
  gst_object_unref(down);
  gst_caps_unref(pbo);
  EXPECT_EQ(gst_tensor_mem_storage_resolve(GST_TENSOR_MEM_STORAGE_AUTO) == GST_TENSOR_MEM_STORAGE_PBO, false)
      << "auto never picks PBO";
}
