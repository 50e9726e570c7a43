// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <cstdint>

namespace {

/* A configured pool for `caps_str`, or nullptr after a test failure. */
GstBufferPool *configured_pool(const char *caps_str, GstStructure *(*edit)(GstStructure *) = nullptr) {
  GstVideoInfo info = tmtest::info_from_string(caps_str);
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstBufferPool *pool = gst_tensor_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 2, 0);
  gst_caps_unref(caps);
  if (edit)
    config = edit(config);
  const gboolean ok = gst_buffer_pool_set_config(pool, config);
  EXPECT_TRUE(ok) << caps_str;
  if (!ok) {
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}

void expect_aligned_tensor_buffers(const char *caps_str, guint stride_multiple) {
  GstVideoInfo info = tmtest::info_from_string(caps_str);
  GstBufferPool *pool = configured_pool(caps_str);
  ASSERT_NE(pool, nullptr);

  GstStructure *config = gst_buffer_pool_get_config(pool);
  EXPECT_TRUE(gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META));
  EXPECT_TRUE(gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT));
  guint size = 0;
  ASSERT_TRUE(gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr));
  gst_structure_free(config);

  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  for (int i = 0; i < 3; ++i) {
    GstBuffer *buffer = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    EXPECT_EQ(gst_buffer_get_size(buffer), size);
    EXPECT_GT(size, GST_VIDEO_INFO_SIZE(&info)) << "an odd width must get padded rows";
    for (guint m = 0; m < gst_buffer_n_memory(buffer); ++m)
      EXPECT_TRUE(gst_is_tensor_memory(gst_buffer_peek_memory(buffer, m)));
    GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_planes, static_cast<guint>(GST_VIDEO_INFO_N_PLANES(&info)));
    for (guint p = 0; p < meta->n_planes; ++p)
      EXPECT_EQ(meta->stride[p] % stride_multiple, 0) << caps_str << " plane " << p << " stride " << meta->stride[p];

    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_READWRITE));
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p)
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)) % 64, 0u) << "plane " << p;
    gst_video_frame_unmap(&frame);
    gst_buffer_unref(buffer);
  }
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

TEST(TensorBufferPool, RgbaOddWidthBuffersHave64ByteStrides) {
  expect_aligned_tensor_buffers("video/x-raw,format=RGBA,width=321,height=17,framerate=30/1", 64);
}

TEST(TensorBufferPool, Nv12OddWidthBuffersHave64ByteStrides) {
  expect_aligned_tensor_buffers("video/x-raw,format=NV12,width=321,height=17,framerate=30/1", 64);
}

TEST(TensorBufferPool, I420OddWidthBuffersHave64ByteStrides) {
  expect_aligned_tensor_buffers("video/x-raw,format=I420,width=321,height=17,framerate=30/1", 64);
}

TEST(TensorBufferPool, ForeignAllocatorIsReplacedByTheTensorAllocator) {
  GstBufferPool *pool = configured_pool("video/x-raw,format=RGBA,width=64,height=8", [](GstStructure *config) {
    GstAllocator *sysmem = gst_allocator_find(GST_ALLOCATOR_SYSMEM);
    gst_buffer_pool_config_set_allocator(config, sysmem, nullptr);
    gst_object_unref(sysmem);
    return config;
  });
  ASSERT_NE(pool, nullptr);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  ASSERT_TRUE(gst_buffer_pool_config_get_allocator(config, &allocator, &params));
  EXPECT_TRUE(allocator && GST_IS_TENSOR_SYSTEM_ALLOCATOR(allocator));
  EXPECT_EQ(params.align, 63u);
  gst_structure_free(config);
  gst_object_unref(pool);
}

TEST(TensorBufferPool, ExistingPaddingIsKeptAndStrideAlignmentWidened) {
  GstBufferPool *pool = configured_pool("video/x-raw,format=RGBA,width=321,height=17", [](GstStructure *config) {
    GstVideoAlignment align;
    gst_video_alignment_reset(&align);
    align.padding_bottom = 3;
    align.stride_align[0] = 31;
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
    gst_buffer_pool_config_set_video_alignment(config, &align);
    return config;
  });
  ASSERT_NE(pool, nullptr);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstVideoAlignment align;
  ASSERT_TRUE(gst_buffer_pool_config_get_video_alignment(config, &align));
  EXPECT_EQ(align.padding_bottom, 3u);
  EXPECT_EQ(align.stride_align[0], 63u);
  gst_structure_free(config);

  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->stride[0] % 64, 0);
  EXPECT_GE(gst_buffer_get_size(buffer), static_cast<gsize>(meta->stride[0]) * (17 + 3));
  gst_buffer_unref(buffer);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

TEST(TensorBufferPool, StrideAlignmentBeyond64BytesIsRefused) {
  GstBufferPool *pool = gst_tensor_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=321,height=17");
  gst_buffer_pool_config_set_params(config, caps, 321 * 17 * 4, 0, 0);
  gst_caps_unref(caps);
  GstVideoAlignment align;
  gst_video_alignment_reset(&align);
  align.stride_align[0] = 127;
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  gst_buffer_pool_config_set_video_alignment(config, &align);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config));
  gst_object_unref(pool);
}

TEST(TensorBufferPool, NonVideoCapsAreRefused) {
  GstBufferPool *pool = gst_tensor_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string("audio/x-raw,format=S16LE,rate=48000,channels=2,layout=interleaved");
  gst_buffer_pool_config_set_params(config, caps, 4096, 0, 0);
  gst_caps_unref(caps);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config));

  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, nullptr, 4096, 0, 0);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config));
  gst_object_unref(pool);
}

} // namespace
