// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/tensor.hpp>

#include <cstdint>
#include <cstring>

namespace {

class TensorAllocator : public ::testing::Test {
protected:
  void SetUp() override {
    allocator_ = gst_tensor_mem_system_allocator_get();
    ASSERT_NE(allocator_, nullptr);
  }
  void TearDown() override { gst_object_unref(allocator_); }

  GstMemory *alloc(gsize size, GstAllocationParams *params = nullptr) {
    return gst_allocator_alloc(allocator_, size, params);
  }
  static const tensormem::Storage &storage_of(GstMemory *mem) { return *gst_tensor_mem_memory_get_tensor(mem)->storage(); }
  static void fill(GstMemory *mem) {
    GstMapInfo info;
    ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_WRITE));
    for (gsize i = 0; i < info.size; ++i)
      info.data[i] = static_cast<guint8>(i * 3 + 1);
    gst_memory_unmap(mem, &info);
  }

  GstAllocator *allocator_ = nullptr;
};

TEST_F(TensorAllocator, IsRegisteredUnderItsNameAsASingleton) {
  GstAllocator *found = gst_allocator_find("TensorSystemMemory");
  GstAllocator *again = gst_tensor_mem_system_allocator_get();
  EXPECT_EQ(found, allocator_);
  EXPECT_EQ(again, allocator_);
  EXPECT_TRUE(GST_IS_TENSOR_MEM_SYSTEM_ALLOCATOR(allocator_));
  EXPECT_STREQ(allocator_->mem_type, "TensorSystemMemory");
  gst_object_unref(found);
  gst_object_unref(again);
}

TEST_F(TensorAllocator, AllocMapWriteReadRoundTrips) {
  GstMemory *mem = alloc(1000);
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_TRUE(gst_memory_is_type(mem, "TensorSystemMemory"));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_SYSTEM);
  EXPECT_EQ(gst_memory_get_sizes(mem, nullptr, nullptr), 1000u);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(tensor->dtype(), tensormem::DType::U8);
  EXPECT_EQ(tensor->shape(), tensormem::Shape{1000});

  fill(mem);
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
  ASSERT_EQ(info.size, 1000u);
  for (gsize i = 0; i < info.size; ++i)
    ASSERT_EQ(info.data[i], static_cast<guint8>(i * 3 + 1)) << i;
  gst_memory_unmap(mem, &info);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, DataPointerIs64ByteAligned) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 63;
  for (gsize size : {1u, 63u, 64u, 1000u, 4097u}) {
    GstMemory *mem = alloc(size, &params);
    ASSERT_NE(mem, nullptr);
    GstMapInfo info;
    ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(info.data) % 64, 0u) << size;
    gst_memory_unmap(mem, &info);
    gst_memory_unref(mem);
  }
}

TEST_F(TensorAllocator, PrefixAndPaddingAreInsideTheAllocation) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.prefix = 32;
  params.padding = 16;
  GstMemory *mem = alloc(100, &params);
  ASSERT_NE(mem, nullptr);
  gsize offset = 0, maxsize = 0;
  EXPECT_EQ(gst_memory_get_sizes(mem, &offset, &maxsize), 100u);
  EXPECT_EQ(offset, 32u);
  EXPECT_EQ(maxsize, 148u);
  EXPECT_GE(storage_of(mem).size_bytes(), 148u);
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, AlignmentBeyond64BytesIsRefused) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 127;
  EXPECT_EQ(alloc(100, &params), nullptr);
}

TEST_F(TensorAllocator, TwoReadMapsShareOneBackendMapping) {
  GstMemory *mem = alloc(256);
  ASSERT_NE(mem, nullptr);
  GstMapInfo a, b;
  ASSERT_TRUE(gst_memory_map(mem, &a, GST_MAP_READ));
  ASSERT_TRUE(gst_memory_map(mem, &b, GST_MAP_READ));
  EXPECT_EQ(a.data, b.data);
  // The memory's maps share its one acquisition of the storage.
  EXPECT_EQ(storage_of(mem).map_state().readers(), 1u);
  EXPECT_EQ(storage_of(mem).map_state().phase(), tensormem::MapState::Phase::Shared);
  gst_memory_unmap(mem, &a);
  EXPECT_EQ(storage_of(mem).map_state().phase(), tensormem::MapState::Phase::Shared);
  gst_memory_unmap(mem, &b);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, WriteMapWhileReadMapLiveFailsAndLeavesNothingMapped) {
  GstMemory *mem = alloc(256);
  ASSERT_NE(mem, nullptr);
  GstMapInfo r, w;
  ASSERT_TRUE(gst_memory_map(mem, &r, GST_MAP_READ));
  EXPECT_FALSE(gst_memory_map(mem, &w, GST_MAP_WRITE));
  EXPECT_EQ(storage_of(mem).map_state().readers(), 1u);
  gst_memory_unmap(mem, &r);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  ASSERT_TRUE(gst_memory_map(mem, &w, GST_MAP_WRITE));
  EXPECT_EQ(storage_of(mem).map_state().phase(), tensormem::MapState::Phase::Exclusive);
  gst_memory_unmap(mem, &w);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, CoreWriteMapFailsWhileGstReadMapLive) {
  GstMemory *mem = alloc(256);
  ASSERT_NE(mem, nullptr);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  GstMapInfo r;
  ASSERT_TRUE(gst_memory_map(mem, &r, GST_MAP_READ));
  {
    auto view = tensor->map(tensormem::CpuAccess::Write);
    ASSERT_FALSE(view.ok());
    EXPECT_EQ(view.error().kind(), tensormem::ErrorKind::Mapped);
    auto reader = tensor->map(tensormem::CpuAccess::Read);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(reinterpret_cast<const guint8 *>(reader->data()), r.data);
    EXPECT_EQ(storage_of(mem).map_state().readers(), 2u);
  }
  gst_memory_unmap(mem, &r);
  EXPECT_FALSE(tensor->is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, GstMapFailsWhileCoreWriteMapLive) {
  GstMemory *mem = alloc(256);
  ASSERT_NE(mem, nullptr);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  GstMapInfo info;
  {
    auto writer = tensor->map(tensormem::CpuAccess::Write);
    ASSERT_TRUE(writer.ok());
    EXPECT_FALSE(gst_memory_map(mem, &info, GST_MAP_READ));
    EXPECT_FALSE(gst_memory_map(mem, &info, GST_MAP_WRITE));
    EXPECT_EQ(storage_of(mem).map_state().phase(), tensormem::MapState::Phase::Exclusive);
  }
  EXPECT_FALSE(tensor->is_mapped());
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READWRITE));
  gst_memory_unmap(mem, &info);
  EXPECT_FALSE(tensor->is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, ShareSeesTheSameBytesThroughTheSameStorage) {
  GstMemory *mem = alloc(100);
  ASSERT_NE(mem, nullptr);
  fill(mem);
  GstMemory *sub = gst_memory_share(mem, 10, 20);
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_memory(sub));
  EXPECT_EQ(sub->parent, mem);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(sub)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(sub));
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(sub, &info, GST_MAP_READ));
  ASSERT_EQ(info.size, 20u);
  for (gsize i = 0; i < info.size; ++i)
    EXPECT_EQ(info.data[i], static_cast<guint8>((i + 10) * 3 + 1));
  gst_memory_unmap(sub, &info);

  GstMemory *rest = gst_memory_share(sub, 5, -1);
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->parent, mem);
  EXPECT_EQ(gst_memory_get_sizes(rest, nullptr, nullptr), 15u);
  ASSERT_TRUE(gst_memory_map(rest, &info, GST_MAP_READ));
  EXPECT_EQ(info.data[0], static_cast<guint8>(15 * 3 + 1));
  gst_memory_unmap(rest, &info);

  EXPECT_EQ(gst_memory_share(mem, 90, 20), nullptr);
  gst_memory_unref(rest);
  gst_memory_unref(sub);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, CopyOwnsNewStorageWithTheSameBytes) {
  GstMemory *mem = alloc(100);
  ASSERT_NE(mem, nullptr);
  fill(mem);
  GstMemory *copy = gst_memory_copy(mem, 10, 20);
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_memory(copy));
  EXPECT_NE(gst_tensor_mem_memory_get_tensor(copy)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(copy, &info, GST_MAP_READWRITE));
  ASSERT_EQ(info.size, 20u);
  for (gsize i = 0; i < info.size; ++i)
    EXPECT_EQ(info.data[i], static_cast<guint8>((i + 10) * 3 + 1));
  std::memset(info.data, 0, info.size);
  gst_memory_unmap(copy, &info);

  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
  EXPECT_EQ(info.data[10], static_cast<guint8>(10 * 3 + 1));
  gst_memory_unmap(mem, &info);

  GstMemory *whole = gst_memory_copy(mem, 0, -1);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(gst_memory_get_sizes(whole, nullptr, nullptr), 100u);
  gst_memory_unref(whole);
  gst_memory_unref(copy);
  EXPECT_FALSE(storage_of(mem).is_mapped());
  gst_memory_unref(mem);
}

TEST_F(TensorAllocator, ContiguousSharesOfOneStorageAreASpan) {
  GstMemory *mem = alloc(100);
  ASSERT_NE(mem, nullptr);
  GstMemory *a = gst_memory_share(mem, 0, 40);
  GstMemory *b = gst_memory_share(mem, 40, 60);
  GstMemory *c = gst_memory_share(mem, 50, 50);
  gsize offset = 99;
  EXPECT_TRUE(gst_memory_is_span(a, b, &offset));
  EXPECT_EQ(offset, 0u);
  EXPECT_FALSE(gst_memory_is_span(a, c, &offset));

  GstMemory *other = alloc(100);
  GstMemory *d = gst_memory_share(other, 40, 60);
  EXPECT_FALSE(gst_memory_is_span(a, d, &offset));
  for (GstMemory *m : {a, b, c, d, mem, other})
    gst_memory_unref(m);
}

TEST_F(TensorAllocator, ForeignMemoryIsNotTensorMemory) {
  GstMemory *mem = gst_allocator_alloc(nullptr, 64, nullptr);
  EXPECT_FALSE(gst_is_tensor_mem_memory(mem));
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(mem), nullptr);
  EXPECT_FALSE(gst_is_tensor_mem_memory(nullptr));
  gst_memory_unref(mem);
}

TEST(TensorFormat, EveryTensorFormatRoundTrips) {
  const GstVideoFormat formats[] = {
      GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_BGRA, GST_VIDEO_FORMAT_RGBx,  GST_VIDEO_FORMAT_BGRx,
      GST_VIDEO_FORMAT_RGB,  GST_VIDEO_FORMAT_BGR,  GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_NV12,
      GST_VIDEO_FORMAT_NV16, GST_VIDEO_FORMAT_NV24, GST_VIDEO_FORMAT_I420,  GST_VIDEO_FORMAT_RGBP,
  };
  for (GstVideoFormat format : formats) {
    tensormem::PixelFormat pixel_format;
    ASSERT_TRUE(gst_tensor_mem_pixel_format_from_video_format(format, &pixel_format)) << gst_video_format_to_string(format);
    EXPECT_EQ(gst_tensor_mem_pixel_format_to_video_format(pixel_format), format);
    EXPECT_STREQ(tensormem::format_info(pixel_format).name, gst_video_format_to_string(format));
  }
  tensormem::PixelFormat unused;
  EXPECT_FALSE(gst_tensor_mem_pixel_format_from_video_format(GST_VIDEO_FORMAT_UYVY, &unused));
}

} // namespace
