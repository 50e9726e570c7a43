// SPDX-License-Identifier: Apache-2.0
// tensorcudaimport and tensorinspect in real pipelines against the fake CUDA
// runtime (TENSORMEM_CUDART points at it; it is also linked here so its
// control functions are at hand), emulating a Jetson-class driver that
// imports DMA-BUF (FAKE_CUDART_ACCEPT_DMABUF=1): DMA-BUF (memfd) and PBO
// (headless GL) memory read through CUDA with the same checksums as the host
// path, one import per pooled memory, failure injection at every CUDA call on
// these paths falling back to the host path, and no CUDA object left at the
// end (FAKE_CUDART_CHECK_BALANCE=1 ends the program with 97 otherwise).
#include "cuda_pipeline_util.hpp"

#include "fake_cudart.h"

#include <gst/check/gstharness.h>

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <ostream>
#include <string>

namespace {

constexpr int kFrames = 6;

struct Case {
  const char *storage;
  const char *caps;
};

std::ostream &operator<<(std::ostream &os, const Case &c) { return os << c.storage << " " << c.caps; }

bool gl_usable(std::string *why) {
  static int state = -1;
  static std::string reason;
  if (state < 0) {
    GError *error = nullptr;
    GstTensorMemGlWorker *worker = gst_tensor_mem_gl_worker_new(&error);
    state = worker != nullptr;
    if (!worker)
      reason = error ? error->message : "unknown";
    g_clear_error(&error);
    if (worker)
      gst_object_unref(worker);
  }
  *why = reason;
  return state == 1;
}

void reset_fake() {
  (void)tensormem::CudaRuntime::get();
  fake_cudart_clear_faults();
  fake_cudart_reset_counters();
}

class CudaPipeline : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    ASSERT_TRUE(tensormem::cuda_available()) << tensormem::CudaRuntime::get()->reason();
    // The DMA-BUF cases need the import to succeed; gst-cuda-desktop-driver
    // covers the desktop default that refuses it.
    ASSERT_EQ(fake_cudart_accepts_dmabuf(), 1) << "gst-cuda-pipelines emulates a driver that imports DMA-BUF "
                                                  "(FAKE_CUDART_ACCEPT_DMABUF=1)";
    if (std::string(GetParam().storage) == "pbo") {
      std::string why;
      if (!gl_usable(&why))
        GTEST_SKIP() << "no headless GL context: " << why;
    }
    reset_fake();
  }
  void TearDown() override {
    fake_cudart_clear_faults();
    // Every pipeline was released with tmtest::release_pipeline (waited for
    // until finalized), so whatever is still alive now is kept alive.
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "CUDA objects outlived the pipeline";
    EXPECT_EQ(fake_cudart_violations(), 0u);
  }

  std::string head() const {
    return std::string("videotestsrc num-buffers=") + std::to_string(kFrames) + " pattern=ball ! " + GetParam().caps +
           " ! tensorupload storage=" + GetParam().storage + " ! ";
  }
  std::string cuda_pipeline(const char *import_opts = "") const {
    return head() + "tensorcudaimport name=imp " + import_opts + " ! tensorinspect name=ins ! fakesink sync=false";
  }
  std::string host_pipeline() const { return head() + "tensorinspect name=ins ! fakesink sync=false"; }

  void host_reference(cudatest::Run *ref) {
    cudatest::run(host_pipeline(), ref);
    ASSERT_TRUE(ref->eos) << ref->error;
    ASSERT_EQ(ref->frames.size(), static_cast<size_t>(kFrames));
    EXPECT_EQ(ref->on_path("host"), static_cast<size_t>(kFrames));
  }
};

TEST_P(CudaPipeline, every_frame_is_read_through_cuda_with_the_host_checksums) {
  cudatest::Run ref;
  ASSERT_NO_FATAL_FAILURE(host_reference(&ref));
  cudatest::Run run;
  cudatest::run(cuda_pipeline(), &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_TRUE(run.warnings.empty()) << run.warnings.front();
  ASSERT_EQ(run.frames.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(run.on_path("cuda"), static_cast<size_t>(kFrames));
  EXPECT_EQ(run.checksums(), ref.checksums());
  for (size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_EQ(run.frames[i].min, ref.frames[i].min) << i;
    EXPECT_EQ(run.frames[i].max, ref.frames[i].max) << i;
    EXPECT_DOUBLE_EQ(run.frames[i].mean, ref.frames[i].mean) << i;
    EXPECT_EQ(run.frames[i].checksum.size(), 16u);
  }
  EXPECT_EQ(run.last_checksum, ref.checksums().back());
  EXPECT_TRUE(run.have_summary);
  EXPECT_EQ(run.summary_frames, static_cast<guint64>(kFrames));
  EXPECT_EQ(run.summary_cuda, static_cast<guint64>(kFrames));
  EXPECT_EQ(run.summary_host, 0u);
  EXPECT_TRUE(run.cuda_available);
  EXPECT_EQ(run.cuda_backend, cudatest::tested_api());
  // Once per pooled memory, not once per frame.
  EXPECT_EQ(run.imports, run.memories.size());
  EXPECT_LT(run.imports, static_cast<guint64>(kFrames)) << "the pool should recycle its memories";
  if (std::string(GetParam().storage) == "dmabuf") {
    EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), run.imports);
    EXPECT_EQ(fake_cudart_calls("cudaDestroyExternalMemory"), run.imports);
    EXPECT_EQ(fake_cudart_calls("cudaFree"), run.imports);
  } else {
    EXPECT_EQ(fake_cudart_calls("cudaGraphicsGLRegisterBuffer"), run.imports);
    EXPECT_EQ(fake_cudart_calls("cudaGraphicsUnregisterResource"), run.imports);
    // One map/unmap pair per frame.
    EXPECT_EQ(fake_cudart_calls("cudaGraphicsMapResources"), static_cast<unsigned long>(kFrames));
    EXPECT_EQ(fake_cudart_calls("cudaGraphicsUnmapResources"), static_cast<unsigned long>(kFrames));
  }
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy"), static_cast<unsigned long>(kFrames));
}

TEST_P(CudaPipeline, a_failing_cuda_call_leaves_the_pipeline_on_the_host_path) {
  cudatest::Run ref;
  ASSERT_NO_FATAL_FAILURE(host_reference(&ref));
  const bool pbo = std::string(GetParam().storage) == "pbo";
  std::vector<const char *> calls;
  if (pbo)
    calls = {"cudaGraphicsGLRegisterBuffer", "cudaGraphicsMapResources", "cudaGraphicsResourceGetMappedPointer",
             "cudaMemcpy"};
  else
    calls = {"cudaImportExternalMemory", "cudaExternalMemoryGetMappedBuffer", "cudaMemcpy"};
  for (const char *call : calls) {
    SCOPED_TRACE(call);
    reset_fake();
    ASSERT_EQ(fake_cudart_set_fault(call, 999, -1, 0), 0);
    cudatest::Run run;
    cudatest::run(cuda_pipeline(), &run);
    fake_cudart_clear_faults();
    ASSERT_TRUE(run.eos) << run.error;
    ASSERT_EQ(run.frames.size(), static_cast<size_t>(kFrames));
    EXPECT_EQ(run.on_path("host"), static_cast<size_t>(kFrames));
    EXPECT_EQ(run.checksums(), ref.checksums());
    EXPECT_GE(fake_cudart_calls(call), 1u);
    const bool import_fails = std::string(call) == "cudaImportExternalMemory" ||
                              std::string(call) == "cudaExternalMemoryGetMappedBuffer" ||
                              std::string(call) == "cudaGraphicsGLRegisterBuffer";
    if (import_fails) {
      EXPECT_EQ(run.imports, 0u);
      EXPECT_EQ(run.warnings.size(), 1u) << "one warning per cause";
    } else {
      EXPECT_EQ(run.imports, run.memories.size());
      EXPECT_TRUE(run.warnings.empty());
    }
    EXPECT_EQ(fake_cudart_live(nullptr), 0u);
    EXPECT_EQ(fake_cudart_violations(), 0u);
  }
}

TEST_P(CudaPipeline, a_fault_for_one_import_affects_only_that_memory) {
  cudatest::Run ref;
  ASSERT_NO_FATAL_FAILURE(host_reference(&ref));
  const bool pbo = std::string(GetParam().storage) == "pbo";
  ASSERT_EQ(fake_cudart_set_fault(pbo ? "cudaGraphicsGLRegisterBuffer" : "cudaImportExternalMemory", 999, 1, 0), 0);
  cudatest::Run run;
  cudatest::run(cuda_pipeline(), &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_EQ(run.checksums(), ref.checksums());
  EXPECT_EQ(run.frames.front().path, "host");
  EXPECT_GE(run.on_path("cuda"), 1u);
  EXPECT_EQ(run.warnings.size(), 1u);
}

// The same pipelines restricted to DMA-BUF memory, for what only an fd import has.
class CudaDmaBufPipeline : public CudaPipeline {};

TEST_P(CudaDmaBufPipeline, a_driver_closing_the_fd_on_a_failed_import_does_not_hurt_the_memory) {
  cudatest::Run ref;
  ASSERT_NO_FATAL_FAILURE(host_reference(&ref));
  // closefd (1) and reusefd (2): the runtime closes the dup anyway, and then
  // another file may take the number. The memory's own fd is never touched:
  // the host path keeps reading the same bytes (the fd accounting itself is
  // covered by the lib-cuda HAZ-43 tests).
  for (int mode : {1, 2}) {
    SCOPED_TRACE(mode);
    reset_fake();
    ASSERT_EQ(fake_cudart_set_fault("cudaImportExternalMemory", 999, -1, mode), 0);
    cudatest::Run run;
    cudatest::run(cuda_pipeline(), &run);
    fake_cudart_clear_faults();
    ASSERT_TRUE(run.eos) << run.error;
    EXPECT_EQ(run.on_path("host"), static_cast<size_t>(kFrames));
    EXPECT_EQ(run.checksums(), ref.checksums());
    EXPECT_EQ(run.warnings.size(), 1u);
    EXPECT_EQ(fake_cudart_live(nullptr), 0u);
  }
}

TEST_P(CudaPipeline, require_cuda_turns_an_import_failure_into_an_error) {
  const bool pbo = std::string(GetParam().storage) == "pbo";
  ASSERT_EQ(fake_cudart_set_fault(pbo ? "cudaGraphicsGLRegisterBuffer" : "cudaImportExternalMemory", 999, -1, 0), 0);
  cudatest::Run run;
  cudatest::run(cuda_pipeline("require-cuda=true"), &run);
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error.find("require-cuda"), std::string::npos) << run.error;
}

#define DMABUF_CASES                                                                                                   \
  Case{"dmabuf", "video/x-raw,format=RGBA,width=32,height=16"},                                                        \
      Case{"dmabuf", "video/x-raw,format=NV12,width=30,height=14"}, Case {                                             \
    "dmabuf", "video/x-raw,format=I420,width=21,height=9"                                                              \
  }
INSTANTIATE_TEST_SUITE_P(Storages, CudaPipeline,
                         ::testing::Values(DMABUF_CASES, Case{"pbo", "video/x-raw,format=RGBA,width=32,height=16"},
                                           Case{"pbo", "video/x-raw,format=NV12,width=30,height=14"}));
INSTANTIATE_TEST_SUITE_P(Storages, CudaDmaBufPipeline, ::testing::Values(DMABUF_CASES));
#undef DMABUF_CASES

TEST(CudaImport, system_memory_passes_through_with_one_warning_or_errors_under_require_cuda) {
  reset_fake();
  cudatest::Run run;
  cudatest::run("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=16,height=8 ! tensorupload "
                "storage=system ! tensorcudaimport name=imp ! tensorinspect name=ins ! fakesink sync=false",
                &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_EQ(run.on_path("host"), 3u);
  EXPECT_EQ(run.warnings.size(), 1u);
  EXPECT_EQ(run.imports, 0u);

  cudatest::Run strict;
  cudatest::run(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=16,height=8 ! tensorupload "
      "storage=system ! tensorcudaimport name=imp require-cuda=true ! tensorinspect name=ins ! fakesink sync=false",
      &strict);
  EXPECT_FALSE(strict.eos);
  EXPECT_FALSE(strict.error.empty());
}

TEST(CudaInspect, silent_posts_only_the_summary) {
  cudatest::Run run;
  cudatest::run("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=16,height=8 ! "
                "tensorinspect name=ins silent=true ! fakesink sync=false",
                &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_TRUE(run.frames.empty());
  EXPECT_TRUE(run.have_summary);
  EXPECT_EQ(run.summary_frames, 3u);
  EXPECT_EQ(run.summary_host, 3u);
  EXPECT_EQ(run.last_checksum.size(), 16u);
}

/* One 16x8 RGBA frame through tensorupload storage=dmabuf !
 * tensorcudaimport into an appsink, pulled: the pipeline stays PLAYING
 * until end_one_frame(). */
struct OneFrame {
  GstElement *pipeline = nullptr;
  GstElement *sink = nullptr;
  GstSample *sample = nullptr;
  GstBuffer *buffer = nullptr;
  GstTensorMemCudaMeta *meta = nullptr;
};

void pull_one_frame(OneFrame *f) {
  reset_fake();
  f->pipeline =
      gst_parse_launch("videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=16,height=8 ! tensorupload "
                       "storage=dmabuf ! tensorcudaimport ! appsink name=sink sync=false",
                       nullptr);
  ASSERT_NE(f->pipeline, nullptr);
  f->sink = gst_bin_get_by_name(GST_BIN(f->pipeline), "sink");
  ASSERT_NE(gst_element_set_state(f->pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  g_signal_emit_by_name(f->sink, "pull-sample", &f->sample);
  ASSERT_NE(f->sample, nullptr);
  f->buffer = gst_sample_get_buffer(f->sample);
  f->meta = gst_buffer_get_tensor_mem_cuda_meta(f->buffer);
  ASSERT_NE(f->meta, nullptr);
}

/* Drops the sample, runs to EOS and frees the pipeline; nothing of CUDA may
 * outlive it. */
void end_one_frame(OneFrame *f) {
  gst_sample_unref(f->sample);
  GstMessage *msg = gst_bus_timed_pop_filtered(GST_ELEMENT_BUS(f->pipeline), tmtest::kTimeout,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  gst_element_set_state(f->pipeline, GST_STATE_NULL);
  gst_object_unref(f->sink);
  tmtest::release_pipeline(f->pipeline);
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST(CudaMeta, copies_drop_the_meta_and_maps_pair_exactly_once) {
  OneFrame f;
  ASSERT_NO_FATAL_FAILURE(pull_one_frame(&f));
  GstBuffer *buffer = f.buffer;
  GstTensorMemCudaMeta *meta = f.meta;
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_CUDA_KIND_EXTERNAL_MEMORY);
  EXPECT_EQ(meta->size, gst_buffer_get_size(buffer));
  EXPECT_STREQ(gst_tensor_mem_cuda_kind_to_string(meta->kind), "external-memory");
  EXPECT_TRUE(gst_tensor_mem_cuda_meta_get_handle(meta));

  gpointer dev = nullptr;
  gsize size = 0;
  GError *error = nullptr;
  ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(meta, &dev, &size, &error));
  EXPECT_EQ(size, meta->size);
  EXPECT_TRUE(gst_tensor_mem_cuda_meta_is_mapped(meta));
  gpointer dev2 = nullptr;
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_map_mut(meta, &dev2, nullptr, &error)) << "second map while mapped";
  ASSERT_NE(error, nullptr);
  g_clear_error(&error);
  // The device bytes are the frame's bytes (fake: device memory is host memory).
  GstMapInfo info;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  std::vector<guint8> host(size);
  ASSERT_TRUE(tensormem::CudaRuntime::get()->memcpy_device_to_host(host.data(), dev, size));
  EXPECT_EQ(memcmp(host.data(), info.data, size), 0);
  gst_buffer_unmap(buffer, &info);
  gst_tensor_mem_cuda_meta_unmap(meta);
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_is_mapped(meta));
  gst_tensor_mem_cuda_meta_unmap(meta); // nothing outstanding: no-op
  ASSERT_TRUE(gst_tensor_mem_cuda_meta_map_mut(meta, &dev2, nullptr, nullptr));
  EXPECT_EQ(dev2, dev);

  // Reading through CUDA needs the meta unmapped, and room for its bytes.
  std::vector<guint8> read(meta->size);
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_read(meta, read.data(), read.size(), &error)) << "read while mapped";
  ASSERT_NE(error, nullptr);
  g_clear_error(&error);
  gst_tensor_mem_cuda_meta_unmap(meta);
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_read(meta, read.data(), read.size() - 1, &error)) << "a host buffer too small";
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("cannot hold"), std::string::npos) << error->message;
  g_clear_error(&error);
  ASSERT_TRUE(gst_tensor_mem_cuda_meta_read(meta, read.data(), read.size(), &error)) << error->message;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  EXPECT_EQ(memcmp(read.data(), info.data, read.size()), 0);
  gst_buffer_unmap(buffer, &info);
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_is_mapped(meta)) << "a read leaves no mapping behind";
  const gchar *api = nullptr, *library = nullptr, *reason = nullptr;
  gint devices = 0;
  EXPECT_TRUE(gst_tensor_mem_cuda_get_status(&api, &library, &devices, &reason));
  EXPECT_STREQ(api, tensormem::cuda_backend_name(tensormem::CudaRuntime::get()->backend()));
  EXPECT_GT(devices, 0);
  EXPECT_STRNE(library, "");
  EXPECT_STREQ(reason, "");
  ASSERT_TRUE(gst_tensor_mem_cuda_meta_map_mut(meta, &dev2, nullptr, nullptr));
  // Left mapped on purpose: freeing the meta releases it.

  // Copies drop the meta quietly: its copy transform succeeds having added
  // nothing (GStreamer logs a failing one at ERROR level, per copy).
  GstBuffer *dest = gst_buffer_new();
  GstMetaTransformCopy region = {FALSE, 0, static_cast<gsize>(-1)};
  EXPECT_TRUE(meta->meta.info->transform_func(dest, &meta->meta, buffer, _gst_meta_transform_copy, &region));
  EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(dest), nullptr);
  gst_buffer_unref(dest);
  GstBuffer *deep = gst_buffer_copy_deep(buffer);
  EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(deep), nullptr) << "a deep copy must not share the mapping";
  GstBuffer *shallow = gst_buffer_copy(buffer);
  EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(shallow), nullptr);
  EXPECT_NE(gst_buffer_get_video_meta(shallow), nullptr) << "other metas still copy";
  gst_buffer_unref(shallow);
  gst_buffer_unref(deep);
  end_one_frame(&f);
}

/* DLPack hand-off of a tensorcudaimport buffer: the CUDA pointer (the
 * meta's mapping, held until the deleter), the same bytes as the frame. */
TEST(CudaDlPack, a_buffer_with_the_cuda_meta_hands_over_its_device_pointer) {
  OneFrame f;
  ASSERT_NO_FATAL_FAILURE(pull_one_frame(&f));
  GstBuffer *buffer = f.buffer;
  GstTensorMemCudaMeta *meta = f.meta;
  GError *error = nullptr;
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, gst_sample_get_caps(f.sample), GST_MAP_READ, &error);
  ASSERT_NE(t, nullptr) << error->message;
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_TRUE(gst_tensor_mem_cuda_meta_is_mapped(meta)) << "the device pointer must stay mapped until the deleter";
  EXPECT_EQ(std::vector<std::int64_t>(t->dl_tensor.shape, t->dl_tensor.shape + 3),
            (std::vector<std::int64_t>{8, 16, 4}));
  GstMapInfo info;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  std::vector<guint8> host(info.size);
  ASSERT_TRUE(tensormem::CudaRuntime::get()->memcpy_device_to_host(host.data(), t->dl_tensor.data, info.size));
  EXPECT_EQ(memcmp(host.data(), info.data, info.size), 0) << "the device pointer is not the frame";
  gst_buffer_unmap(buffer, &info);
  t->deleter(t);
  EXPECT_FALSE(gst_tensor_mem_cuda_meta_is_mapped(meta));

  // A meta that cannot map (already mapped by someone else) leaves the
  // consumer a CPU tensor instead of an error.
  gpointer dev = nullptr;
  ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(meta, &dev, nullptr, nullptr));
  t = gst_tensor_mem_buffer_to_dlpack(buffer, gst_sample_get_caps(f.sample), GST_MAP_READ, &error);
  ASSERT_NE(t, nullptr) << error->message;
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  t->deleter(t);
  EXPECT_TRUE(gst_tensor_mem_cuda_meta_is_mapped(meta)) << "the CPU tensor's deleter undid someone else's CUDA map";
  gst_tensor_mem_cuda_meta_unmap(meta);
  end_one_frame(&f);
}

/* tensorconvert's tensor in DMA-BUF memory reaches the application as a
 * CUDA tensor of the caps' shape. */
TEST(CudaDlPack, a_converted_tensor_is_handed_over_on_the_device) {
  reset_fake();
  {
    tmtest::PipelineRun run;
    tmtest::run_pipeline("videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=40,height=30 ! "
                         "tensorconvert storage=dmabuf width=16 height=8 dtype=float32 layout=nchw ! "
                         "tensorcudaimport name=imp ! appsink name=sink",
                         &run);
    ASSERT_TRUE(run.eos) << run.error_debug;
    ASSERT_EQ(run.samples.size(), 2u);
    for (GstSample *sample : run.samples) {
      GError *error = nullptr;
      DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(gst_sample_get_buffer(sample), gst_sample_get_caps(sample),
                                                           GST_MAP_READ, &error);
      ASSERT_NE(t, nullptr) << error->message;
      EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
      EXPECT_EQ(std::vector<std::int64_t>(t->dl_tensor.shape, t->dl_tensor.shape + t->dl_tensor.ndim),
                (std::vector<std::int64_t>{1, 3, 8, 16}));
      t->deleter(t);
    }
  } // the samples go with the run
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

/* GL names repeat from one context to the next: two GL workers' first
 * buffers are both name 1 (or another shared number), yet CUDA must see two
 * registrations, one per worker, and a cached handle never answers for the
 * other worker's buffer. */
TEST(CudaImport, pbo_buffers_of_two_gl_workers_get_their_own_cuda_handles) {
  std::string why;
  if (!gl_usable(&why))
    GTEST_SKIP() << "no headless GL context: " << why;
  reset_fake();
  GError *error = nullptr;
  GstTensorMemGlWorker *w1 = gst_tensor_mem_gl_worker_new(&error);
  ASSERT_NE(w1, nullptr) << error->message;
  GstTensorMemGlWorker *w2 = gst_tensor_mem_gl_worker_new(&error);
  ASSERT_NE(w2, nullptr) << error->message;
  GstAllocator *a1 = gst_tensor_mem_pbo_allocator_new(w1);
  GstAllocator *a2 = gst_tensor_mem_pbo_allocator_new(w2);
  GstMemory *m1 = gst_allocator_alloc(a1, 4096, nullptr);
  GstMemory *m2 = gst_allocator_alloc(a2, 4096, nullptr);
  ASSERT_NE(m1, nullptr);
  ASSERT_NE(m2, nullptr);
  ASSERT_EQ(gst_tensor_mem_pbo_memory_get_buffer_id(m1), gst_tensor_mem_pbo_memory_get_buffer_id(m2))
      << "the two fresh contexts did not hand out the same first GL name";
  gboolean imported = FALSE;
  auto h1 = gst_tensor_mem_memory_import_cuda(m1, &imported);
  ASSERT_TRUE(h1) << h1.error().message();
  EXPECT_TRUE(imported);
  EXPECT_EQ(gst_tensor_mem_memory_peek_cuda(m2), nullptr) << "worker 2's buffer found worker 1's CUDA handle";
  auto h2 = gst_tensor_mem_memory_import_cuda(m2, &imported);
  ASSERT_TRUE(h2) << h2.error().message();
  EXPECT_TRUE(imported);
  EXPECT_NE(*h1, *h2);
  EXPECT_EQ(fake_cudart_calls("cudaGraphicsGLRegisterBuffer"), 2u);
  h1 = tensormem::Error::invalid_argument("released");
  h2 = tensormem::Error::invalid_argument("released");
  gst_memory_unref(m1);
  gst_memory_unref(m2);
  gst_object_unref(a1);
  gst_object_unref(a2);
  gst_object_unref(w1);
  gst_object_unref(w2);
  EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "a CUDA registration outlived its PBO";
}

TEST(CudaMeta, api_is_registered) {
  EXPECT_STREQ(g_type_name(gst_tensor_mem_cuda_meta_api_get_type()), "GstTensorMemCudaMetaAPI");
  const GstMetaInfo *info = gst_tensor_mem_cuda_meta_get_info();
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->api, gst_tensor_mem_cuda_meta_api_get_type());
  EXPECT_TRUE(gst_meta_api_type_has_tag(info->api, g_quark_from_string(GST_META_TAG_MEMORY_STR)));
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, 16, nullptr);
  EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(buf), nullptr);
  EXPECT_EQ(gst_buffer_add_tensor_mem_cuda_meta(buf, nullptr, 0, 16), nullptr);
  gst_buffer_unref(buf);
}

TEST(CudaElements, metadata_and_properties) {
  for (const char *name : {"tensorcudaimport", "tensorinspect"}) {
    SCOPED_TRACE(name);
    GstElementFactory *factory = gst_element_factory_find(name);
    ASSERT_NE(factory, nullptr);
    EXPECT_NE(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_LONGNAME), nullptr);
    EXPECT_NE(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS), nullptr);
    gst_object_unref(factory);
  }
  GstElement *imp = gst_element_factory_make("tensorcudaimport", nullptr);
  ASSERT_NE(imp, nullptr);
  GParamSpec *avail = g_object_class_find_property(G_OBJECT_GET_CLASS(imp), "cuda-available");
  ASSERT_NE(avail, nullptr);
  EXPECT_EQ(avail->value_type, G_TYPE_BOOLEAN);
  EXPECT_FALSE(avail->flags & G_PARAM_WRITABLE);
  GParamSpec *req = g_object_class_find_property(G_OBJECT_GET_CLASS(imp), "require-cuda");
  ASSERT_NE(req, nullptr);
  EXPECT_TRUE(req->flags & G_PARAM_WRITABLE);
  EXPECT_FALSE(g_value_get_boolean(g_param_spec_get_default_value(req)));
  GParamSpec *imports = g_object_class_find_property(G_OBJECT_GET_CLASS(imp), "imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->value_type, G_TYPE_UINT64);
  EXPECT_FALSE(imports->flags & G_PARAM_WRITABLE);
  GParamSpec *backend = g_object_class_find_property(G_OBJECT_GET_CLASS(imp), "cuda-backend");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->value_type, G_TYPE_STRING);
  EXPECT_FALSE(backend->flags & G_PARAM_WRITABLE);
  EXPECT_STREQ(g_value_get_string(g_param_spec_get_default_value(backend)), "none");
  gboolean available = FALSE;
  gchar *in_use = nullptr;
  g_object_get(imp, "cuda-available", &available, "cuda-backend", &in_use, nullptr);
  EXPECT_TRUE(available);
  EXPECT_STREQ(in_use, cudatest::tested_api().c_str()) << "the API meson forced, or the runtime TENSORMEM_CUDART named";
  g_free(in_use);
  gst_object_unref(imp);

  GstElement *ins = gst_element_factory_make("tensorinspect", nullptr);
  ASSERT_NE(ins, nullptr);
  GParamSpec *last = g_object_class_find_property(G_OBJECT_GET_CLASS(ins), "last-checksum");
  ASSERT_NE(last, nullptr);
  EXPECT_FALSE(last->flags & G_PARAM_WRITABLE);
  ASSERT_NE(g_object_class_find_property(G_OBJECT_GET_CLASS(ins), "silent"), nullptr);
  gst_object_unref(ins);
}

} // namespace
