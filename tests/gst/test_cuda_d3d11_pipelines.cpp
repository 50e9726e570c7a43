// SPDX-License-Identifier: Apache-2.0
// tensorupload storage=d3d11 ! tensorcudaimport on the software D3D11 device
// and the fake CUDA runtime told to take its textures: every frame is read
// through CUDA with the host path's checksums, each pooled texture is
// imported once, and the D3D11 fence of each write is waited for on the
// stream (through the imported fence semaphore), not on the CPU.
#include "cuda_pipeline_util.hpp"

#include "fake_cudart.h"

#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>

#include <tensormem/cuda_d3d11.hpp>
#include <tensormem/d3d11_timeline.hpp>

#include <string>

namespace {

// Runs before main, so before gst_init and any D3D11 use.
const bool g_software_device = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

constexpr int kFrames = 4;

std::string pipeline(const char *middle) {
  return std::string("videotestsrc num-buffers=") + std::to_string(kFrames) +
         " pattern=ball ! video/x-raw,format=NV12,width=64,height=48 ! tensorupload storage=d3d11 ! " + middle +
         "tensorinspect name=ins ! fakesink sync=false";
}

} // namespace

TEST(CudaD3d11Pipeline, TexturesAreReadThroughCudaWithTheHostChecksumsAndTheirFencesWaitedOnTheStream) {
  ASSERT_TRUE(g_software_device);
  fake_cudart_set_accept_d3d11(1);
  cudatest::Run ref;
  cudatest::run(pipeline(""), &ref);
  ASSERT_TRUE(ref.eos) << ref.error;
  ASSERT_EQ(ref.frames.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(ref.on_path("host"), static_cast<size_t>(kFrames));

  fake_cudart_reset_counters();
  cudatest::Run run;
  cudatest::run(pipeline("tensorcudaimport name=imp ! "), &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.frames.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(run.on_path("cuda"), static_cast<size_t>(kFrames)) << "every texture was imported into CUDA";
  EXPECT_EQ(run.checksums(), ref.checksums());
  EXPECT_GT(fake_cudart_calls("cudaWaitExternalSemaphoresAsync") + fake_cudart_calls("cuWaitExternalSemaphoresAsync"),
            0u)
      << "the D3D11 fence became a wait on the stream";
  EXPECT_TRUE(tensormem::d3d11_cuda_process_state().semaphore) << "the process fence was imported as a semaphore";
  fake_cudart_set_accept_d3d11(0);
  // The fence semaphore is process-wide by design; only it may be left.
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "CUDA objects outlived the pipeline";
}

/* A D3D11 fence meta some producer attached, without recording the write
 * on the storage, becomes the storage's recorded write in tensorcudaimport:
 * the CUDA map then orders behind it on the stream. */
TEST(CudaD3d11Import, AD3d11FenceMetaBecomesTheStoragesRecordedWrite) {
  ASSERT_TRUE(g_software_device);
  fake_cudart_set_accept_d3d11(1);
  GstTensorMemD3D11Device *device = gst_tensor_d3d11_device_new(nullptr);
  ASSERT_NE(device, nullptr);
  GstAllocator *allocator = gst_tensor_d3d11_allocator_new(device);
  // 64 RGBA pixels fill the 256-byte staging pitch: the CUDA view (tight
  // rows) and the memory (pitched rows) have one layout.
  const char *caps = "video/x-raw,format=RGBA,width=64,height=8";
  GstVideoInfo info = tmtest::info_from_string(caps);
  GstMemory *mem = gst_tensor_d3d11_allocator_alloc_video(allocator, &info);
  ASSERT_NE(mem, nullptr);
  auto storage = gst_tensor_d3d11_memory_get_storage(mem);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  auto timeline = gst_tensor_d3d11_device_get_fence_timeline(device);
  ASSERT_NE(timeline, nullptr);
  auto value = timeline->issue();
  ASSERT_TRUE(value);
  ASSERT_NE(gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, *value, -1, nullptr), nullptr);
  const std::uint64_t before = storage->last_gpu_write();
  EXPECT_LT(before, *value);

  GstHarness *h = gst_harness_new("tensorcudaimport");
  gst_harness_set_src_caps_str(h, "video/x-raw(memory:TensorD3D11),format=RGBA,width=64,height=8,framerate=30/1");
  GstBuffer *out = gst_harness_push_and_pull(h, buffer);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(storage->last_gpu_write(), *value) << "the fence meta was recorded on the texture storage";
  EXPECT_NE(gst_buffer_get_tensor_cuda_meta(out), nullptr) << "the texture was imported";
  gst_buffer_unref(out);
  gst_harness_teardown(h);
  storage.reset();
  gst_object_unref(allocator);
  gst_object_unref(device);
  fake_cudart_set_accept_d3d11(0);
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}
