// SPDX-License-Identifier: Apache-2.0
// gst_tensor_mem_buffer_to_dlpack: every field of the DLPack tensor against
// the buffer it describes, the one release its deleter makes (map and
// buffer reference), and every refusal. The CUDA case (a device pointer
// through the CUDA meta) is in test_cuda_pipelines.cpp, which runs with the
// fake CUDA libraries.

#include "pipeline_util.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <gst/video/video.h>

#include <tensormem/tensor.hpp>
#include <tensormem/timeline.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

/* A buffer of one system tensor memory of `size` bytes, byte i = (7i + 3) mod 256. */
GstMemory *system_memory(gsize size) {
  GstAllocator *allocator = gst_tensor_mem_system_allocator_get();
  GstMemory *mem = gst_allocator_alloc(allocator, size, nullptr);
  gst_object_unref(allocator);
  return mem;
}

GstBuffer *tensor_buffer(gsize size) {
  GstMemory *mem = system_memory(size);
  EXPECT_NE(mem, nullptr);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  GstMapInfo info;
  EXPECT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_WRITE));
  for (gsize i = 0; i < size; ++i)
    info.data[i] = static_cast<guint8>(7 * i + 3);
  gst_buffer_unmap(buffer, &info);
  return buffer;
}

GstCaps *caps_of(const char *text) {
  GstCaps *caps = gst_caps_from_string(text);
  EXPECT_NE(caps, nullptr) << text;
  return caps;
}

/* Whether a write map of `buffer` is refused now: our memory refuses one
 * while any reader holds the storage, so it shows whether a map is live. */
bool storage_is_read_mapped(GstBuffer *buffer) {
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  GstMapInfo info;
  if (!gst_memory_map(mem, &info, GST_MAP_WRITE))
    return true;
  gst_memory_unmap(mem, &info);
  return false;
}

std::string refusal(GstBuffer *buffer, const char *caps_text, GstMapFlags flags = GST_MAP_READ) {
  GstCaps *caps = caps_of(caps_text);
  GError *error = nullptr;
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, flags, &error);
  gst_caps_unref(caps);
  if (t) {
    t->deleter(t);
    return "(accepted)";
  }
  EXPECT_NE(error, nullptr);
  std::string text = error ? error->message : "(no error)";
  g_clear_error(&error);
  return text;
}

bool contains(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

} // namespace

TEST(DlPack, a_tensor_caps_buffer_is_a_compact_row_major_cpu_tensor) {
  // NNStreamer writes dimensions innermost first: 3:4:2:1 is NCHW-free
  // [batch 1][2][4][3] outermost first.
  const gsize bytes = 1 * 2 * 4 * 3 * sizeof(float);
  GstBuffer *buffer = tensor_buffer(bytes);
  GstCaps *caps = caps_of("other/tensors,format=static,num_tensors=1,types=float32,dimensions=3:4:2:1,"
                          "framerate=30/1");
  GError *error = nullptr;
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, GST_MAP_READ, &error);
  ASSERT_NE(t, nullptr) << error->message;
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(t->dl_tensor.device.device_id, 0);
  ASSERT_EQ(t->dl_tensor.ndim, 4);
  const std::vector<std::int64_t> shape(t->dl_tensor.shape, t->dl_tensor.shape + 4);
  const std::vector<std::int64_t> strides(t->dl_tensor.strides, t->dl_tensor.strides + 4);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{1, 2, 4, 3}));
  EXPECT_EQ(strides, (std::vector<std::int64_t>{24, 12, 3, 1}));
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 32);
  EXPECT_EQ(t->dl_tensor.dtype.lanes, 1);
  EXPECT_EQ(t->dl_tensor.byte_offset, 0u);
  // The data is the buffer's own bytes, not a copy.
  GstMapInfo info;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  EXPECT_EQ(t->dl_tensor.data, info.data) << "a second reader shares the one mapping";
  gst_buffer_unmap(buffer, &info);
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(buffer), 2) << "the tensor keeps the buffer alive";
  EXPECT_TRUE(storage_is_read_mapped(buffer));
  gst_caps_unref(caps);
  t->deleter(t);
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(buffer), 1) << "the deleter drops its reference once";
  EXPECT_FALSE(storage_is_read_mapped(buffer)) << "the deleter ends its map";
  gst_buffer_unref(buffer);
}

TEST(DlPack, every_nnstreamer_type_name_has_its_dlpack_type) {
  const struct {
    const char *name;
    std::uint8_t code, bits;
  } rows[] = {{"uint8", kDLUInt, 8},     {"int8", kDLInt, 8},       {"uint16", kDLUInt, 16},  {"int16", kDLInt, 16},
              {"uint32", kDLUInt, 32},   {"int32", kDLInt, 32},     {"uint64", kDLUInt, 64},  {"int64", kDLInt, 64},
              {"float16", kDLFloat, 16}, {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64}};
  GstBuffer *buffer = tensor_buffer(64);
  for (const auto &row : rows) {
    SCOPED_TRACE(row.name);
    const std::string text =
        std::string("other/tensors,format=static,num_tensors=1,dimensions=(string)4:1,types=") + row.name;
    GstCaps *caps = caps_of(text.c_str());
    DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, GST_MAP_READ, nullptr);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dl_tensor.dtype.code, row.code);
    EXPECT_EQ(t->dl_tensor.dtype.bits, row.bits);
    t->deleter(t);
    gst_caps_unref(caps);
  }
  gst_buffer_unref(buffer);
}

TEST(DlPack, a_padded_video_frame_keeps_its_stride_and_offset) {
  // RGB 5x3 with 32-byte rows starting 16 bytes into the memory.
  const guint width = 5, height = 3, stride = 32, offset = 16;
  GstBuffer *buffer = tensor_buffer(offset + stride * height);
  gsize offsets[GST_VIDEO_MAX_PLANES] = {offset};
  gint strides[GST_VIDEO_MAX_PLANES] = {static_cast<gint>(stride)};
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGB, width, height, 1, offsets,
                                 strides);
  GstCaps *caps = caps_of("video/x-raw,format=RGB,width=5,height=3,framerate=30/1");
  GError *error = nullptr;
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, GST_MAP_READ, &error);
  ASSERT_NE(t, nullptr) << error->message;
  ASSERT_EQ(t->dl_tensor.ndim, 3);
  EXPECT_EQ(std::vector<std::int64_t>(t->dl_tensor.shape, t->dl_tensor.shape + 3),
            (std::vector<std::int64_t>{3, 5, 3}));
  EXPECT_EQ(std::vector<std::int64_t>(t->dl_tensor.strides, t->dl_tensor.strides + 3),
            (std::vector<std::int64_t>{32, 3, 1}));
  EXPECT_EQ(t->dl_tensor.byte_offset, offset);
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLUInt);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 8);
  // Element (y, x, c) read through the tensor's own strides is the byte a
  // plain reference computes from the pattern.
  const auto *base = static_cast<const guint8 *>(t->dl_tensor.data) + t->dl_tensor.byte_offset;
  for (guint y = 0; y < height; ++y)
    for (guint x = 0; x < width; ++x)
      for (guint c = 0; c < 3; ++c) {
        const gsize at = y * t->dl_tensor.strides[0] + x * t->dl_tensor.strides[1] + c * t->dl_tensor.strides[2];
        const gsize byte = offset + y * stride + x * 3 + c;
        ASSERT_EQ(base[at], static_cast<guint8>(7 * byte + 3)) << y << "," << x << "," << c;
      }
  t->deleter(t);
  gst_caps_unref(caps);
  gst_buffer_unref(buffer);
}

TEST(DlPack, gray_frames_have_one_channel) {
  GstBuffer *buffer = tensor_buffer(4 * 2);
  GstCaps *caps = caps_of("video/x-raw,format=GRAY8,width=4,height=2");
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, GST_MAP_READ, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::vector<std::int64_t>(t->dl_tensor.shape, t->dl_tensor.shape + 3),
            (std::vector<std::int64_t>{2, 4, 1}));
  t->deleter(t);
  gst_caps_unref(caps);
  gst_buffer_unref(buffer);
}

TEST(DlPack, a_writable_tensor_is_exclusive_until_its_deleter_runs) {
  GstBuffer *buffer = tensor_buffer(16);
  GstCaps *caps = caps_of("other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)16:1");
  DLManagedTensor *t =
      gst_tensor_mem_buffer_to_dlpack(buffer, caps, static_cast<GstMapFlags>(GST_MAP_READWRITE), nullptr);
  ASSERT_NE(t, nullptr);
  static_cast<guint8 *>(t->dl_tensor.data)[0] = 0xEE;
  // Another user of the same storage (the library's own tensor map) is
  // refused while the DLPack writer holds the storage.
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(buffer, 0));
  ASSERT_NE(tensor, nullptr);
  EXPECT_FALSE(tensor->map(tensormem::CpuAccess::Read)) << "a reader got in beside the DLPack writer";
  t->deleter(t);
  {
    auto view = tensor->map(tensormem::CpuAccess::Read);
    ASSERT_TRUE(view) << view.error().message();
    EXPECT_EQ(static_cast<guint8>(view->data()[0]), 0xEE) << "the consumer wrote into a copy";
  }
  gst_caps_unref(caps);
  gst_buffer_unref(buffer);
}

TEST(DlPack, a_writable_tensor_of_a_shared_memory_is_refused_not_copied) {
  GstBuffer *buffer = tensor_buffer(16);
  GstMemory *share = gst_memory_share(gst_buffer_peek_memory(buffer, 0), 0, -1);
  ASSERT_NE(share, nullptr);
  GstMemory *before = gst_buffer_peek_memory(buffer, 0);
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)16:1",
                               static_cast<GstMapFlags>(GST_MAP_READWRITE)),
                       "would have to be a copy"));
  EXPECT_EQ(gst_buffer_peek_memory(buffer, 0), before) << "the buffer's memory was replaced";
  gst_memory_unref(share);
  gst_buffer_unref(buffer);
}

TEST(DlPack, an_unsignalled_fence_is_waited_for_before_the_map) {
  auto timeline = tensormem::SoftwareTimeline::create("producer");
  const std::uint64_t value = timeline->issue();
  GstBuffer *buffer = tensor_buffer(16);
  GError *error = nullptr;
  ASSERT_NE(gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, value, -1, &error), nullptr);
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)timeline->signal(value);
  });
  GstCaps *caps = caps_of("other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)16:1");
  DLManagedTensor *t = gst_tensor_mem_buffer_to_dlpack(buffer, caps, GST_MAP_READ, &error);
  producer.join();
  ASSERT_NE(t, nullptr) << error->message;
  EXPECT_TRUE(timeline->signalled(value)) << "the map was handed out before the producer finished";
  t->deleter(t);
  gst_caps_unref(caps);
  gst_buffer_unref(buffer);
}

TEST(DlPack, refusals_name_what_is_wrong_and_take_nothing) {
  GstBuffer *buffer = tensor_buffer(64);
  EXPECT_TRUE(contains(refusal(buffer, "video/x-raw,format=NV12,width=4,height=4"), "not one plane"));
  EXPECT_TRUE(contains(refusal(buffer, "video/x-raw,format=RGBA,width=8,height=8"), "needs 256 bytes"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=bfloat,dimensions=(string)4:1"),
                       "'bfloat'"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)0:4"),
                       "positive"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)a:4"),
                       "positive"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=float64,"
                                       "dimensions=2147483647:2147483647:2147483647"),
                       "overflow"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=2,types=uint8,dimensions=(string)4:1"),
                       "num_tensors=1"));
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=flexible,num_tensors=1"), "format=static"));
  // What a user typing NNStreamer's caps by hand gets from a bare 16:1.
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=16:1"),
                       "(string)16:1"));
  EXPECT_TRUE(contains(refusal(buffer, "audio/x-raw,format=S16LE,rate=8000,channels=1,layout=interleaved"),
                       "neither other/tensors nor video/x-raw"));
  EXPECT_TRUE(contains(refusal(buffer, "video/x-raw,format={RGBA,BGRA},width=2,height=2"), "fixed caps"));
  EXPECT_TRUE(contains(
      refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)4:1", GST_MAP_WRITE),
      "GST_MAP_READ"));
  // Not writable: a second reference.
  gst_buffer_ref(buffer);
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)4:1",
                               static_cast<GstMapFlags>(GST_MAP_READWRITE)),
                       "writable buffer"));
  gst_buffer_unref(buffer);
  // Two memories would be merged (copied) by a map.
  GstBuffer *two = tensor_buffer(8);
  gst_buffer_append_memory(two, system_memory(8));
  EXPECT_TRUE(contains(refusal(two, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)16:1"),
                       "2 memories"));
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(two), 1);
  gst_buffer_unref(two);
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(buffer), 1) << "a refusal kept a reference";
  EXPECT_FALSE(storage_is_read_mapped(buffer)) << "a refusal left a map behind";
  gst_buffer_unref(buffer);
}

// Found by tests/fuzz/fuzz_dlpack.cpp (issue 28): a DMA-BUF memory that
// declares more bytes than the file behind it was handed out, and the
// consumer's first read past the file's end raised SIGBUS.
TEST(DlPack, a_dmabuf_memory_larger_than_its_file_is_refused) {
  const int fd = memfd_create("dlpack-short", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 32), 0);
  GstAllocator *allocator = gst_dmabuf_allocator_new();
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_dmabuf_allocator_alloc(allocator, fd, 64)); // takes the fd
  const std::string why =
      refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)64:1");
  EXPECT_TRUE(contains(why, "SIGBUS")) << why;
  gst_buffer_unref(buffer);
  gst_object_unref(allocator);
}

// Also found by fuzz_dlpack.cpp: IYU1 packs four pixels into six bytes
// (pixel stride 0) and came out with a 0-long channel axis.
TEST(DlPack, video_whose_pixels_are_not_whole_bytes_is_refused) {
  GstBuffer *buffer = tensor_buffer(64);
  EXPECT_TRUE(contains(refusal(buffer, "video/x-raw,format=IYU1,width=4,height=4"), "whole 8-bit pixels"));
  gst_buffer_unref(buffer);
}

TEST(DlPack, a_never_signalled_fence_is_an_error_not_a_hang) {
  auto timeline = tensormem::SoftwareTimeline::create("stuck producer");
  const std::uint64_t value = timeline->issue();
  GstBuffer *buffer = tensor_buffer(16);
  ASSERT_NE(gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, value, -1, nullptr), nullptr);
  EXPECT_TRUE(contains(refusal(buffer, "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=(string)16:1"),
                       "stuck producer"));
  EXPECT_FALSE(storage_is_read_mapped(buffer));
  gst_buffer_unref(buffer);
}
