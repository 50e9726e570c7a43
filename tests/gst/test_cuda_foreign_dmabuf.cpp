// SPDX-License-Identifier: Apache-2.0
// The main scenario of a hardware decoder on a Jetson-class machine: DMA-BUF
// memory that is not ours (a GstDmaBufAllocator over a pool of four memfds,
// the way a decoder exports its frame pool) through
// `tensorupload storage=dmabuf ! tensorcudaimport`. Each foreign buffer is
// imported into tensor memory and into CUDA once, however many frames
// pass, and nothing is left when the pipeline and the pool are gone.
//
// Emulates a driver that accepts a DMA-BUF fd as opaque-fd external memory
// (FAKE_CUDART_ACCEPT_DMABUF=1 in this program's environment; the buffers
// are memfds standing in for a decoder's DMA-BUFs).
#include "pipeline_util.hpp"

#include "fake_cudart.h"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/tensormem.h>
#include <tensormem/internal/cuda_runtime.hpp>

#include <array>
#include <atomic>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

constexpr int kWidth = 64, kHeight = 48;
constexpr gsize kFrameBytes = kWidth * kHeight * 4;
constexpr int kPoolSize = 4;
constexpr int kFrames = 200;

/* A memfd of one RGBA frame filled with `value`; -1 after a test failure. */
int frame_memfd(guint8 value) {
  const int fd = memfd_create("foreign-frame", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  if (fd < 0)
    return -1;
  EXPECT_EQ(ftruncate(fd, kFrameBytes), 0);
  void *p = mmap(nullptr, kFrameBytes, PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_NE(p, MAP_FAILED);
  if (p != MAP_FAILED) {
    memset(p, value, kFrameBytes);
    munmap(p, kFrameBytes);
  }
  return fd;
}

/* The pool of foreign memories: each frame is a new buffer holding one of
 * them, as a decoder's buffer pool hands its memories out again and again. */
class ForeignPool {
public:
  ForeignPool() {
    allocator_ = gst_dmabuf_allocator_new();
    for (int i = 0; i < kPoolSize; ++i)
      memories_[i] =
          gst_dmabuf_allocator_alloc(allocator_, frame_memfd(static_cast<guint8>(16 * (i + 1))), kFrameBytes);
  }
  ~ForeignPool() {
    for (GstMemory *mem : memories_)
      gst_memory_unref(mem);
    gst_object_unref(allocator_);
  }
  /* Frame `n`: a buffer holding one of the pool's memories, or with
   * `rewrap` a new GstDmaBufAllocator memory over a new fd (a dup) of the
   * same buffer, as a producer that receives fds over a socket makes. */
  GstBuffer *frame(int n, bool rewrap = false) {
    GstBuffer *buffer = gst_buffer_new();
    GstMemory *mem = memories_[n % kPoolSize];
    if (rewrap) {
      GstMemory *wrapper = gst_dmabuf_allocator_alloc(allocator_, dup(gst_dmabuf_memory_get_fd(mem)), kFrameBytes);
      // Counts the wrapper's death: the next frame waits for it, so no
      // earlier wrapper of the same buffer can still hold its import.
      gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(wrapper), g_quark_from_static_string("test-wrapper"),
                                &wrappers_gone_, [](gpointer gone) { ++*static_cast<std::atomic<int> *>(gone); });
      gst_buffer_append_memory(buffer, wrapper);
    } else {
      gst_buffer_append_memory(buffer, gst_memory_ref(mem));
    }
    GST_BUFFER_PTS(buffer) = gst_util_uint64_scale(n, GST_SECOND, 30);
    GST_BUFFER_DURATION(buffer) = gst_util_uint64_scale(1, GST_SECOND, 30);
    return buffer;
  }
  GstMemory *memory(int i) const { return memories_[i]; }
  /* Waits (bounded) until `n` re-wrapped memories have been freed. */
  bool wrappers_gone(int n) const {
    for (int i = 0; i < 5000 && wrappers_gone_.load() < n; ++i)
      g_usleep(1000);
    return wrappers_gone_.load() >= n;
  }

private:
  std::atomic<int> wrappers_gone_{0};
  GstAllocator *allocator_ = nullptr;
  std::array<GstMemory *, kPoolSize> memories_{};
};

void import_pool_frames(bool rewrap) {
  ASSERT_TRUE(tensormem::cuda_available()) << tensormem::CudaRuntime::get()->reason();
  fake_cudart_clear_faults();
  fake_cudart_reset_counters();
  {
    ForeignPool pool;
    for (int i = 0; i < kPoolSize; ++i) {
      ASSERT_TRUE(gst_is_dmabuf_memory(pool.memory(i)));
      ASSERT_FALSE(gst_is_tensor_mem_memory(pool.memory(i))) << "the source's memory must not be ours";
    }
    const std::string description =
        "appsrc name=src format=time caps=video/x-raw,format=RGBA,width=" + std::to_string(kWidth) +
        ",height=" + std::to_string(kHeight) +
        ",framerate=30/1 ! tensorupload name=up storage=dmabuf require-zero-copy=true ! "
        "tensorcudaimport name=imp require-cuda=true ! fakesink name=sink sync=false enable-last-sample=false";
    GError *error = nullptr;
    GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
    ASSERT_EQ(error, nullptr) << error->message;
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement *imp = gst_bin_get_by_name(GST_BIN(pipeline), "imp");
    GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
    ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_ASYNC);
    for (int n = 0; n < kFrames; ++n) {
      GstFlowReturn ret = GST_FLOW_ERROR;
      GstBuffer *buffer = pool.frame(n, rewrap);
      g_signal_emit_by_name(src, "push-buffer", buffer, &ret);
      gst_buffer_unref(buffer);
      ASSERT_EQ(ret, GST_FLOW_OK) << "frame " << n;
      if (rewrap) {
        ASSERT_TRUE(pool.wrappers_gone(n + 1)) << "frame " << n << " was never released";
      }
    }
    GstFlowReturn ret = GST_FLOW_ERROR;
    g_signal_emit_by_name(src, "end-of-stream", &ret);
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout,
                                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    ASSERT_NE(msg, nullptr) << "no EOS within the timeout";
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError *err = nullptr;
      gchar *debug = nullptr;
      gst_message_parse_error(msg, &err, &debug);
      ADD_FAILURE() << err->message << ": " << (debug ? debug : "");
      g_error_free(err);
      g_free(debug);
    }
    gst_message_unref(msg);
    gst_object_unref(bus);

    EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), static_cast<unsigned long>(kPoolSize));
    guint64 imports = 0, copied = 0;
    g_object_get(imp, "imports", &imports, nullptr);
    g_object_get(up, "copied-bytes", &copied, nullptr);
    EXPECT_EQ(imports, static_cast<guint64>(kPoolSize));
    EXPECT_EQ(copied, 0u);

    ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref(up);
    gst_object_unref(imp);
    gst_object_unref(src);
    tmtest::release_pipeline(pipeline);
  }
  // The pool and the pipeline are gone: the imported storages and their
  // CUDA handles with them (the stopped elements let go of the imports kept
  // for re-wrapping producers).
  EXPECT_EQ(fake_cudart_calls("cudaDestroyExternalMemory"), static_cast<unsigned long>(kPoolSize));
  EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "CUDA objects outlived the foreign buffers";
  EXPECT_EQ(fake_cudart_violations(), 0u);
}

TEST(CudaForeignDmaBuf, each_foreign_buffer_is_imported_into_cuda_once) { import_pool_frames(false); }

/* Issue 27: the same four buffers in a new wrapper and under a new fd number
 * every frame are still four buffers: identified by their file (device,
 * inode), imported four times in 200 frames, not 200. */
TEST(CudaForeignDmaBuf, a_buffer_rewrapped_every_frame_is_imported_once) { import_pool_frames(true); }

} // namespace
