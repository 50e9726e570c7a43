// SPDX-License-Identifier: Apache-2.0
// tensorupload storage=d3d11 ! tensorcudaimport on the software D3D11 device
// and the fake CUDA runtime told to take its textures: every frame is read
// through CUDA with the host path's checksums, each pooled texture is
// imported once, and the D3D11 fence of each write is waited for on the
// stream (through the imported fence semaphore), not on the CPU. Sizes
// include pitch-padded RGBA (rows narrower than the 256-byte staging pitch)
// and odd NV12: CUDA's view is laid out at the memory's pitch.
#include "cuda_pipeline_util.hpp"

#include "fake_cudart.h"

#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>

#include <gst/tensormem/gsttensordlpack.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/d3d11_timeline.hpp>
#include <tensormem/internal/cuda_d3d11.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace {

// Runs before main, so before gst_init and any D3D11 use.
const bool g_software_device = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

constexpr int kFrames = 4;

struct Size {
  const char *format;
  int width, height;
};

std::string pipeline(const Size &size, const char *middle) {
  return std::string("videotestsrc num-buffers=") + std::to_string(kFrames) +
         " pattern=ball ! video/x-raw,format=" + size.format + ",width=" + std::to_string(size.width) +
         ",height=" + std::to_string(size.height) + " ! tensorupload storage=d3d11 ! " + middle +
         "tensorinspect name=ins ! fakesink sync=false";
}

class CudaD3d11Pipeline : public ::testing::TestWithParam<Size> {};

std::string size_name(const ::testing::TestParamInfo<Size> &info) {
  return std::string(info.param.format) + "_" + std::to_string(info.param.width) + "x" +
         std::to_string(info.param.height);
}

} // namespace

// NV12 64x48 fills its pitch; RGBA 33x17 and 1x1 are 132- and 4-byte rows
// in a 256-byte pitch, BGRA 641x17 a 2564-byte row in 2816; NV12 33x17
// and 321x241 are widened odd sizes.
INSTANTIATE_TEST_SUITE_P(Sizes, CudaD3d11Pipeline,
                         ::testing::Values(Size{"NV12", 64, 48}, Size{"RGBA", 33, 17}, Size{"RGBA", 1, 1},
                                           Size{"NV12", 33, 17}, Size{"NV12", 321, 241}, Size{"BGRA", 641, 17}),
                         size_name);

TEST_P(CudaD3d11Pipeline, TexturesAreReadThroughCudaWithTheHostChecksumsAndTheirFencesWaitedOnTheStream) {
  ASSERT_TRUE(g_software_device);
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  fake_cudart_set_accept_d3d11(1);
  cudatest::Run ref;
  cudatest::run(pipeline(GetParam(), ""), &ref);
  ASSERT_TRUE(ref.eos) << ref.error;
  ASSERT_EQ(ref.frames.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(ref.on_path("host"), static_cast<size_t>(kFrames));

  fake_cudart_reset_counters();
  cudatest::Run run;
  cudatest::run(pipeline(GetParam(), "tensorcudaimport name=imp ! "), &run);
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
  GstTensorMemD3D11Device *device = gst_tensor_mem_d3d11_device_new(nullptr);
  ASSERT_NE(device, nullptr);
  GstAllocator *allocator = gst_tensor_mem_d3d11_allocator_new(device);
  const char *caps = "video/x-raw,format=RGBA,width=64,height=8";
  GstVideoInfo info = tmtest::info_from_string(caps);
  GstMemory *mem = gst_tensor_mem_d3d11_allocator_alloc_video(allocator, &info);
  ASSERT_NE(mem, nullptr);
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  auto timeline = gst_tensor_mem_d3d11_device_get_fence_timeline(device);
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
  EXPECT_NE(gst_buffer_get_tensor_mem_cuda_meta(out), nullptr) << "the texture was imported";
  gst_buffer_unref(out);
  gst_harness_teardown(h);
  storage.reset();
  gst_object_unref(allocator);
  gst_object_unref(device);
  fake_cudart_set_accept_d3d11(0);
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

/* DLPack over a pitch-padded texture: the CUDA pointer, strided by the
 * memory's pitch (the GstVideoMeta's stride), holds the frame's rows. */
namespace {

void check_dlpack_of_a_padded_texture() {
  // Stops and frees the pipeline however the test ends, so a failed
  // assertion fails instead of leaving a streaming pipeline behind.
  struct Pipeline {
    GstElement *pipe = nullptr;
    GstElement *sink = nullptr;
    GstSample *sample = nullptr;
    ~Pipeline() {
      if (sample)
        gst_sample_unref(sample);
      if (pipe)
        gst_element_set_state(pipe, GST_STATE_NULL);
      if (sink)
        gst_object_unref(sink);
      if (pipe)
        tmtest::release_pipeline(pipe);
    }
  } p;
  p.pipe = gst_parse_launch("videotestsrc num-buffers=1 pattern=ball ! "
                            "video/x-raw,format=RGBA,width=33,height=8 ! tensorupload storage=d3d11 ! "
                            "tensorcudaimport ! appsink name=sink sync=false",
                            nullptr);
  ASSERT_NE(p.pipe, nullptr);
  p.sink = gst_bin_get_by_name(GST_BIN(p.pipe), "sink");
  ASSERT_NE(gst_element_set_state(p.pipe, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  g_signal_emit_by_name(p.sink, "pull-sample", &p.sample);
  ASSERT_NE(p.sample, nullptr);
  GstBuffer *buffer = gst_sample_get_buffer(p.sample);
  GstTensorMemCudaMeta *meta = gst_buffer_get_tensor_mem_cuda_meta(buffer);
  ASSERT_NE(meta, nullptr) << "a pitch-padded texture was not given the CUDA meta";
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_CUDA_KIND_D3D11_TEXTURE);
  EXPECT_EQ(meta->size, gst_buffer_get_size(buffer));
  GstVideoMeta *vmeta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(vmeta, nullptr);
  const std::size_t pitch = static_cast<std::size_t>(vmeta->stride[0]);
  EXPECT_GT(pitch, 33u * 4u) << "the software device pads a 132-byte row";

  GError *error = nullptr;
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, gst_sample_get_caps(p.sample), GST_MAP_READ, &error);
  ASSERT_NE(t, nullptr) << error->message;
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_TRUE(t->dl_tensor.strides && t->dl_tensor.strides[0] == static_cast<std::int64_t>(pitch));
  std::vector<guint8> device(8 * pitch);
  const bool copied =
      t->dl_tensor.device.device_type == kDLCUDA &&
      tensormem::CudaRuntime::get()->memcpy_device_to_host(device.data(), t->dl_tensor.data, device.size());
  t->deleter(t);
  ASSERT_TRUE(copied) << "the DLPack tensor is not a CUDA pointer to the frame";
  GstMapInfo info;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  for (std::size_t y = 0; y < 8; ++y)
    EXPECT_EQ(std::memcmp(device.data() + y * pitch, info.data + y * pitch, 33 * 4), 0) << "row " << y;
  gst_buffer_unmap(buffer, &info);

  gst_sample_unref(p.sample);
  p.sample = nullptr;
  GstMessage *msg = gst_bus_timed_pop_filtered(GST_ELEMENT_BUS(p.pipe), tmtest::kTimeout,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
}

} // namespace

TEST(CudaD3d11DlPack, a_pitch_padded_texture_hands_over_its_cuda_pointer_with_the_pitch_as_row_stride) {
  ASSERT_TRUE(g_software_device);
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  fake_cudart_set_accept_d3d11(1);
  check_dlpack_of_a_padded_texture();
  fake_cudart_set_accept_d3d11(0);
  tensormem::d3d11_cuda_reset_process_state_for_tests();
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}
