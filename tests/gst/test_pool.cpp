// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/pixel_format.hpp>

#include <cstdint>
#include <string>

namespace {

/* A configured pool for `caps_str`, or nullptr after a test failure. */
GstBufferPool *configured_pool(const char *caps_str, GstStructure *(*edit)(GstStructure *) = nullptr) {
  GstVideoInfo info = tmtest::info_from_string(caps_str);
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new();
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

/* Activates `pool` and acquires one buffer whose GstVideoMeta goes into
 * `*meta`; nullptr after a test failure. */
GstBuffer *first_buffer_with_meta(GstBufferPool *pool, GstVideoMeta **meta) {
  EXPECT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  if (!buffer)
    return nullptr;
  *meta = gst_buffer_get_video_meta(buffer);
  EXPECT_NE(*meta, nullptr);
  if (!*meta) {
    gst_buffer_unref(buffer);
    return nullptr;
  }
  return buffer;
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
      EXPECT_TRUE(gst_is_tensor_mem_memory(gst_buffer_peek_memory(buffer, m)));
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
  EXPECT_TRUE(allocator && GST_IS_TENSOR_MEM_SYSTEM_ALLOCATOR(allocator));
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

  GstVideoMeta *meta = nullptr;
  GstBuffer *buffer = first_buffer_with_meta(pool, &meta);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(meta->stride[0] % 64, 0);
  EXPECT_GE(gst_buffer_get_size(buffer), static_cast<gsize>(meta->stride[0]) * (17 + 3));
  gst_buffer_unref(buffer);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

TEST(TensorBufferPool, StrideAlignmentBeyond64BytesIsRefused) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new();
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

/* One layout engine: an unpadded pool's buffers carry image_layout's
 * strides and plane offsets, for every supported format at odd and even
 * sizes (GStreamer's own alignment would pad 24-bit rows to 192 bytes and
 * grow 4:2:0 luma rows with their chroma rows), and hold the whole frame. */
TEST(TensorBufferPool, PoolLayoutIsTheCoreImageLayoutForEveryFormat) {
  using tensormem::PixelFormat;
  constexpr PixelFormat kFormats[] = {PixelFormat::RGBA, PixelFormat::BGRA, PixelFormat::RGBx,  PixelFormat::BGRx,
                                      PixelFormat::RGB,  PixelFormat::BGR,  PixelFormat::GRAY8, PixelFormat::NV12,
                                      PixelFormat::NV16, PixelFormat::NV24, PixelFormat::I420,  PixelFormat::RGBP};
  constexpr std::uint32_t kSizes[][2] = {{1, 1}, {3, 5}, {321, 17}, {17, 321}, {640, 480}, {1919, 1081}};
  for (PixelFormat format : kFormats) {
    const GstVideoFormat video_format = gst_tensor_mem_pixel_format_to_video_format(format);
    ASSERT_NE(video_format, GST_VIDEO_FORMAT_UNKNOWN) << tensormem::format_info(format).name;
    for (const auto &wh : kSizes) {
      const std::string caps_str = std::string("video/x-raw,format=") + gst_video_format_to_string(video_format) +
                                   ",width=" + std::to_string(wh[0]) + ",height=" + std::to_string(wh[1]) +
                                   ",framerate=30/1";
      SCOPED_TRACE(caps_str);
      auto layout = tensormem::image_layout(format, wh[0], wh[1], GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN);
      ASSERT_TRUE(layout) << layout.error().message();
      GstBufferPool *pool = configured_pool(caps_str.c_str());
      ASSERT_NE(pool, nullptr);
      GstStructure *config = gst_buffer_pool_get_config(pool);
      guint size = 0;
      ASSERT_TRUE(gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr));
      gst_structure_free(config);
      GstVideoMeta *meta = nullptr;
      GstBuffer *buffer = first_buffer_with_meta(pool, &meta);
      ASSERT_NE(buffer, nullptr);
      ASSERT_EQ(meta->n_planes, layout->n_planes);
      std::string differences;
      EXPECT_GE(size, layout->size);
      EXPECT_GE(gst_buffer_get_size(buffer), layout->size);
      for (guint p = 0; p < meta->n_planes; ++p) {
        if (static_cast<std::size_t>(meta->stride[p]) != layout->stride[p])
          differences += " stride[" + std::to_string(p) + "] " + std::to_string(meta->stride[p]) + " vs " +
                         std::to_string(layout->stride[p]);
        if (meta->offset[p] != layout->offset[p])
          differences += " offset[" + std::to_string(p) + "] " + std::to_string(meta->offset[p]) + " vs " +
                         std::to_string(layout->offset[p]);
      }
      EXPECT_TRUE(differences.empty()) << "pool vs image_layout:" << differences;
      gst_buffer_unref(buffer);
      ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
      gst_object_unref(pool);
    }
  }
}

TEST(TensorBufferPool, NonVideoCapsAreRefused) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new();
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

guint64 stats_buffers(GstBufferPool *pool) {
  GstStructure *stats = nullptr;
  g_object_get(pool, "stats", &stats, nullptr);
  guint64 buffers = G_MAXUINT64;
  EXPECT_TRUE(stats && gst_structure_get_uint64(stats, "buffers", &buffers));
  if (stats)
    gst_structure_free(stats);
  return buffers;
}

// What the soak (tests/soak) samples: pools and their buffers alive, counted
// up as they are made and down as they are freed, in or out of the pool.
TEST(TensorBufferPool, LiveStatsCountPoolsAndBuffersUntilTheyAreFreed) {
  guint64 pools0 = 0, buffers0 = 0;
  gst_tensor_mem_buffer_pool_get_live_stats(&pools0, &buffers0);
  GstBufferPool *pool = configured_pool("video/x-raw,format=RGBA,width=33,height=8");
  ASSERT_NE(pool, nullptr);
  guint64 pools = 0, buffers = 0;
  gst_tensor_mem_buffer_pool_get_live_stats(&pools, &buffers);
  EXPECT_EQ(pools, pools0 + 1);
  EXPECT_EQ(buffers, buffers0);

  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE)); // preallocates the minimum, 2
  GstBuffer *out[3] = {};
  for (GstBuffer *&buffer : out)
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  gst_tensor_mem_buffer_pool_get_live_stats(nullptr, &buffers);
  EXPECT_EQ(buffers, buffers0 + 3);
  EXPECT_EQ(stats_buffers(pool), 3u);
  // A buffer back in the pool is still the pool's; one whose memory was
  // taken is freed when it comes back.
  gst_buffer_unref(out[0]);
  EXPECT_EQ(stats_buffers(pool), 3u);
  gst_buffer_remove_all_memory(out[1]);
  gst_buffer_unref(out[1]);
  EXPECT_EQ(stats_buffers(pool), 2u);
  // Deactivated with a buffer still out, GstBufferPool frees its buffers
  // when the last one comes back.
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  EXPECT_EQ(stats_buffers(pool), 2u);
  gst_buffer_unref(out[2]);
  EXPECT_EQ(stats_buffers(pool), 0u);
  gst_tensor_mem_buffer_pool_get_live_stats(&pools, &buffers);
  EXPECT_EQ(buffers, buffers0);
  gst_object_unref(pool);
  gst_tensor_mem_buffer_pool_get_live_stats(&pools, nullptr);
  EXPECT_EQ(pools, pools0);
}

} // namespace
