// SPDX-License-Identifier: Apache-2.0
// The DMA-BUF tensor allocator and the DMA-BUF buffer pool. The gst suite runs
// with TENSORMEM_DMABUF_SOURCE=memfd (tests/gst/meson.build), so these work
// on machines without a DMA heap; the storage code above the source is the
// same.
#include "../dma_heap_probe.hpp"
#include "pipeline_util.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/pixel_format.hpp>

#include <linux/dma-buf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <ostream>
#include <set>
#include <vector>

namespace {

using tensormem::DmaBufStorage;

/* A sync hook that records every DMA_BUF_IOCTL_SYNC call and succeeds, so
 * directions can be checked on memfd (where the real ioctl is ENOTTY). */
std::vector<std::uint64_t> g_syncs;
int record_sync(int, std::uint64_t flags) {
  g_syncs.push_back(flags);
  return 0;
}

std::shared_ptr<DmaBufStorage> recording_storage(std::size_t size) {
  tensormem::DmaBufOptions options;
  options.source = tensormem::DmaBufSource::Memfd;
  options.sync = record_sync;
  auto storage = DmaBufStorage::allocate(size, options);
  EXPECT_TRUE(storage) << storage.error().message();
  return storage ? *storage : nullptr;
}

/* A memfd of `size` bytes filled with i*5+3. */
int pattern_memfd(gsize size) {
  int fd = memfd_create("test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  std::vector<guint8> bytes(size);
  for (gsize i = 0; i < size; ++i)
    bytes[i] = static_cast<guint8>(i * 5 + 3);
  EXPECT_EQ(pwrite(fd, bytes.data(), size, 0), static_cast<ssize_t>(size));
  return fd;
}

class DmaBufAllocator : public ::testing::Test {
protected:
  void SetUp() override {
    allocator_ = gst_tensor_mem_dmabuf_allocator_get();
    ASSERT_NE(allocator_, nullptr);
    g_syncs.clear();
  }
  void TearDown() override { gst_object_unref(allocator_); }

  GstAllocator *allocator_ = nullptr;
};

TEST_F(DmaBufAllocator, IsAGstDmaBufAllocatorRegisteredUnderItsName) {
  GstAllocator *found = gst_allocator_find(GST_TENSOR_MEM_DMABUF_ALLOCATOR_NAME);
  EXPECT_EQ(found, allocator_);
  EXPECT_TRUE(GST_IS_DMABUF_ALLOCATOR(allocator_));
  EXPECT_TRUE(GST_IS_TENSOR_MEM_DMABUF_ALLOCATOR(allocator_));
  EXPECT_STREQ(allocator_->mem_type, GST_ALLOCATOR_DMABUF);
  EXPECT_FALSE(GST_OBJECT_FLAG_IS_SET(allocator_, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC));
  gst_object_unref(found);
}

TEST_F(DmaBufAllocator, MemoryIsDmaBufWithTheStoragesFdAndRoundTrips) {
  GstMemory *mem = gst_allocator_alloc(allocator_, 1000, nullptr);
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(gst_is_dmabuf_memory(mem));
  EXPECT_TRUE(gst_is_fd_memory(mem));
  EXPECT_TRUE(gst_memory_is_type(mem, GST_ALLOCATOR_DMABUF));
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(mem));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_DMABUF);
  auto storage = gst_tensor_mem_dmabuf_memory_get_storage(mem);
  ASSERT_NE(storage, nullptr);
  const gint fd = gst_dmabuf_memory_get_fd(mem);
  EXPECT_EQ(fd, storage->fd());
  EXPECT_TRUE(DmaBufStorage::classify(fd)) << "the fd is a DMA-BUF or memfd";
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(tensor->storage().get(), storage.get());

  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_WRITE));
  for (gsize i = 0; i < info.size; ++i)
    info.data[i] = static_cast<guint8>(i * 3 + 1);
  gst_memory_unmap(mem, &info);
  // Read back through an independent mapping of the same fd.
  void *raw = mmap(nullptr, 1000, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(raw, MAP_FAILED);
  for (gsize i = 0; i < 1000; ++i)
    ASSERT_EQ(static_cast<const guint8 *>(raw)[i], static_cast<guint8>(i * 3 + 1)) << i;
  munmap(raw, 1000);
  gst_memory_unref(mem);
}

TEST_F(DmaBufAllocator, PrefixPaddingAndAlignmentAreApplied) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.prefix = 16;
  params.padding = 32;
  params.align = 63;
  params.flags = static_cast<GstMemoryFlags>(GST_MEMORY_FLAG_ZERO_PREFIXED | GST_MEMORY_FLAG_ZERO_PADDED);
  GstMemory *mem = gst_allocator_alloc(allocator_, 1000, &params);
  ASSERT_NE(mem, nullptr);
  gsize offset = 0, maxsize = 0;
  EXPECT_EQ(gst_memory_get_sizes(mem, &offset, &maxsize), 1000u);
  EXPECT_EQ(offset, 16u);
  EXPECT_EQ(maxsize, 1048u);
  EXPECT_TRUE(GST_MEMORY_IS_ZERO_PREFIXED(mem));
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
  EXPECT_EQ(reinterpret_cast<guintptr>(info.data - 16) % 64, 0u);
  gst_memory_unmap(mem, &info);
  gst_memory_unref(mem);

  params.align = 8191;
  EXPECT_EQ(gst_allocator_alloc(allocator_, 1000, &params), nullptr) << "beyond page alignment";
}

TEST_F(DmaBufAllocator, ReadersShareOneMmapAndEachBackendMapSyncsOnceInItsDirection) {
  auto storage = recording_storage(4096);
  ASSERT_NE(storage, nullptr);
  GstMemory *mem = gst_tensor_mem_dmabuf_allocator_import(allocator_, storage);
  ASSERT_NE(mem, nullptr);
  GstMemory *share = gst_memory_share(mem, 100, 200);
  ASSERT_NE(share, nullptr);

  GstMapInfo a, b, c;
  ASSERT_TRUE(gst_memory_map(mem, &a, GST_MAP_READ));
  ASSERT_TRUE(gst_memory_map(mem, &b, GST_MAP_READ));
  ASSERT_TRUE(gst_memory_map(share, &c, GST_MAP_READ));
  EXPECT_EQ(c.data, a.data + 100);
  EXPECT_EQ(storage->stats().mmaps, 1u);
  EXPECT_EQ(g_syncs, (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ}));
  gst_memory_unmap(share, &c);
  gst_memory_unmap(mem, &b);
  gst_memory_unmap(mem, &a);
  EXPECT_FALSE(storage->is_mapped());
  // The mmap stays for the storage's life, so the next frame pays no mmap.
  EXPECT_EQ(storage->stats().munmaps, 0u);
  EXPECT_EQ(g_syncs,
            (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ}));

  g_syncs.clear();
  ASSERT_TRUE(gst_memory_map(mem, &a, GST_MAP_WRITE));
  // A nested map of the writer's own memory (gst_video_frame_map does this per plane) shares its map.
  ASSERT_TRUE(gst_memory_map(mem, &b, GST_MAP_WRITE));
  gst_memory_unmap(mem, &b);
  gst_memory_unmap(mem, &a);
  ASSERT_TRUE(gst_memory_map(mem, &a, GST_MAP_READWRITE));
  gst_memory_unmap(mem, &a);
  EXPECT_EQ(g_syncs,
            (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
                                        DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW}));
  EXPECT_EQ(storage->stats().mmaps, 1u);
  gst_memory_unref(share);
  gst_memory_unref(mem);
}

TEST_F(DmaBufAllocator, WriteMapIsRefusedWhileAnotherReaderHoldsTheBuffer) {
  auto storage = recording_storage(4096);
  ASSERT_NE(storage, nullptr);
  // Two memories over one DMA-BUF, as two imports of one upstream fd would be.
  GstMemory *reader = gst_tensor_mem_dmabuf_allocator_import(allocator_, storage);
  GstMemory *writer = gst_tensor_mem_dmabuf_allocator_import(allocator_, storage);
  ASSERT_TRUE(reader && writer);

  GstMapInfo r, w;
  ASSERT_TRUE(gst_memory_map(reader, &r, GST_MAP_READ));
  EXPECT_FALSE(gst_memory_map(writer, &w, GST_MAP_WRITE));
  ASSERT_TRUE(gst_memory_map(writer, &w, GST_MAP_READ)) << "a second reader is fine";
  gst_memory_unmap(writer, &w);

  /* A buffer that is not writable (two holders) cannot map for writing
   * either; a writable buffer would be copied on write by gst_buffer_map,
   * leaving the reader's DMA-BUF untouched, which the next check shows. */
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_memory_ref(writer));
  gst_buffer_ref(buffer);
  EXPECT_FALSE(gst_buffer_map(buffer, &w, GST_MAP_WRITE));
  gst_buffer_unref(buffer);
  ASSERT_TRUE(gst_buffer_map(buffer, &w, GST_MAP_WRITE));
  EXPECT_NE(gst_buffer_peek_memory(buffer, 0), writer) << "copied on write, not written under the reader";
  gst_buffer_unmap(buffer, &w);
  gst_buffer_unref(buffer);
  gst_memory_unmap(reader, &r);
  EXPECT_FALSE(storage->is_mapped());

  // A reader outside GStreamer counts the same.
  {
    auto core_reader = gst_tensor_mem_memory_get_tensor(reader)->map(tensormem::CpuAccess::Read);
    ASSERT_TRUE(core_reader);
    EXPECT_FALSE(gst_memory_map(writer, &w, GST_MAP_WRITE));
  }
  ASSERT_TRUE(gst_memory_map(writer, &w, GST_MAP_WRITE));
  gst_memory_unmap(writer, &w);
  gst_memory_unref(writer);
  gst_memory_unref(reader);
}

TEST_F(DmaBufAllocator, SharesKeepTheFdAndTheStorage) {
  GstMemory *mem = gst_allocator_alloc(allocator_, 4096, nullptr);
  ASSERT_NE(mem, nullptr);
  GstMemory *share = gst_memory_share(mem, 64, -1);
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->size, 4096u - 64u) << "-1 is the rest of the memory";
  EXPECT_TRUE(gst_is_dmabuf_memory(share));
  EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(share));
  EXPECT_EQ(gst_dmabuf_memory_get_fd(share), gst_dmabuf_memory_get_fd(mem));
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(share)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  EXPECT_EQ(gst_memory_share(mem, 0, 8192), nullptr) << "past the end";
  gst_memory_unref(mem); // the share keeps the root and the storage alive
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(share, &info, GST_MAP_READ));
  EXPECT_EQ(info.size, 4096u - 64u);
  gst_memory_unmap(share, &info);
  gst_memory_unref(share);
}

/* Each memory finds its mapping through a fixed-size lock-free index, or
 * through its qdata where the index has no room: with far more live
 * memories than the index holds, every one still maps its own storage's
 * bytes and names its own storage, and memories made after they are freed
 * (at reused addresses) find theirs, not a stale entry. */
TEST_F(DmaBufAllocator, EveryMemoryFindsItsOwnStorageBeyondTheMappingIndex) {
  constexpr int kRoots = 8;
  constexpr int kSharesPerRoot = 1200; // 9 600 memories, more than the index's 4 096 slots
  for (int round = 0; round < 2; ++round) {
    std::vector<GstMemory *> roots, shares;
    for (int r = 0; r < kRoots; ++r) {
      GstMemory *root = gst_allocator_alloc(allocator_, 4096, nullptr);
      ASSERT_NE(root, nullptr);
      GstMapInfo w;
      ASSERT_TRUE(gst_memory_map(root, &w, GST_MAP_WRITE));
      std::memset(w.data, 0x40 + r + round * kRoots, w.size);
      gst_memory_unmap(root, &w);
      roots.push_back(root);
      for (int i = 0; i < kSharesPerRoot; ++i) {
        GstMemory *share = gst_memory_share(root, i % 4000, 16);
        ASSERT_NE(share, nullptr);
        shares.push_back(share);
      }
    }
    for (std::size_t i = 0; i < shares.size(); ++i) {
      const int r = static_cast<int>(i) / kSharesPerRoot;
      ASSERT_EQ(gst_tensor_mem_memory_get_tensor(shares[i])->storage(), gst_tensor_mem_memory_get_tensor(roots[r])->storage())
          << "share " << i;
      GstMapInfo info;
      ASSERT_TRUE(gst_memory_map(shares[i], &info, GST_MAP_READ)) << "share " << i;
      EXPECT_EQ(info.data[0], 0x40 + r + round * kRoots) << "share " << i << " read another storage";
      gst_memory_unmap(shares[i], &info);
      EXPECT_FALSE(gst_tensor_mem_memory_get_tensor(shares[i])->storage()->is_mapped());
    }
    for (GstMemory *share : shares)
      gst_memory_unref(share);
    for (GstMemory *root : roots)
      gst_memory_unref(root);
  }
}

TEST_F(DmaBufAllocator, ImportFdKeepsADupAndTheCallerMayCloseItsFd) {
  const int fd = pattern_memfd(4096);
  GstMemory *mem = gst_tensor_mem_dmabuf_memory_import_fd(fd, 0);
  ASSERT_NE(mem, nullptr);
  EXPECT_NE(gst_dmabuf_memory_get_fd(mem), fd);
  EXPECT_EQ(gst_memory_get_sizes(mem, nullptr, nullptr), 4096u);
  close(fd);
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
  for (gsize i = 0; i < info.size; ++i)
    ASSERT_EQ(info.data[i], static_cast<guint8>(i * 5 + 3)) << i;
  gst_memory_unmap(mem, &info);
  gst_memory_unref(mem);
}

TEST_F(DmaBufAllocator, ImportFdRefusesAPipe) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(gst_tensor_mem_dmabuf_memory_import_fd(fds[0], 0), nullptr);
  close(fds[0]);
  close(fds[1]);
}

TEST_F(DmaBufAllocator, NoFdLeakOverAllocateFreeCycles) {
  constexpr int kCycles = 2000; // the 10 000-cycle churn is in bench-dmabuf-pipeline
  gst_memory_unref(gst_allocator_alloc(allocator_, 4096, nullptr));
  const int before = tmtest::fd_count();
  for (int i = 0; i < kCycles; ++i) {
    GstMemory *mem = gst_allocator_alloc(allocator_, 4096, nullptr);
    ASSERT_NE(mem, nullptr);
    GstMemory *share = gst_memory_share(mem, 0, 100);
    gst_memory_unref(mem);
    gst_memory_unref(share);
  }
  EXPECT_EQ(tmtest::fd_count(), before);
}

/* ---- buffer pool ---- */

struct PoolCase {
  const char *name;
  const char *caps;
  tensormem::PixelFormat format;
  guint width, height;
};

void PrintTo(const PoolCase &c, std::ostream *os) { *os << c.name; }

class DmaBufPool : public ::testing::TestWithParam<PoolCase> {};

GstBufferPool *active_pool(const char *caps_str, guint max_buffers, const GstVideoAlignment *align = nullptr) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_DMABUF);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstVideoInfo info;
  EXPECT_TRUE(gst_video_info_from_caps(&info, caps));
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 0, max_buffers);
  if (align) {
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
    gst_buffer_pool_config_set_video_alignment(config, align);
  }
  gst_caps_unref(caps);
  EXPECT_TRUE(gst_buffer_pool_set_config(pool, config));
  EXPECT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  return pool;
}

TEST_P(DmaBufPool, EveryBufferIsOneDmaBufWithTheCoreLayout) {
  const PoolCase &c = GetParam();
  GstBufferPool *pool = active_pool(c.caps, 3);
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(pool), GST_TENSOR_MEM_STORAGE_DMABUF);
  auto layout = tensormem::image_layout(c.format, c.width, c.height, tensormem::kDmaBufStrideAlign);
  ASSERT_TRUE(layout) << layout.error().message();
  std::vector<GstBuffer *> buffers;
  std::set<gint> fds;
  for (int i = 0; i < 3; ++i) {
    GstBuffer *buffer = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    buffers.push_back(buffer);
    ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
    GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
    EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(mem));
    fds.insert(gst_dmabuf_memory_get_fd(mem));
    EXPECT_GE(gst_buffer_get_size(buffer), layout->size);
    GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    ASSERT_NE(meta, nullptr);
    ASSERT_EQ(meta->n_planes, layout->n_planes);
    for (guint p = 0; p < meta->n_planes; ++p) {
      EXPECT_EQ(meta->stride[p] % 64, 0) << "plane " << p;
      EXPECT_EQ(static_cast<gsize>(meta->stride[p]), layout->stride[p]) << "plane " << p;
      // The core's layout and GStreamer's agree byte for byte, odd heights
      // included (4:2:0 luma padded to an even number of rows).
      EXPECT_EQ(meta->offset[p], layout->offset[p]) << "plane " << p;
    }
  }
  EXPECT_EQ(fds.size(), 3u) << "one fd per buffer";
  for (GstBuffer *b : buffers)
    gst_buffer_unref(b);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, DmaBufPool,
    ::testing::Values(
        PoolCase{"Rgba320x240", "video/x-raw,format=RGBA,width=320,height=240", tensormem::PixelFormat::RGBA, 320, 240},
        PoolCase{"Rgba321x17", "video/x-raw,format=RGBA,width=321,height=17", tensormem::PixelFormat::RGBA, 321, 17},
        PoolCase{"Nv12_640x480", "video/x-raw,format=NV12,width=640,height=480", tensormem::PixelFormat::NV12, 640,
                 480},
        PoolCase{"Nv12_321x17", "video/x-raw,format=NV12,width=321,height=17", tensormem::PixelFormat::NV12, 321, 17},
        PoolCase{"I420_321x17", "video/x-raw,format=I420,width=321,height=17", tensormem::PixelFormat::I420, 321, 17}),
    [](const ::testing::TestParamInfo<PoolCase> &info) { return std::string(info.param.name); });

TEST(DmaBufPoolAlignment, VideoAlignmentIsHonoured) {
  GstVideoAlignment align;
  gst_video_alignment_reset(&align);
  align.padding_top = 2;
  align.stride_align[0] = 255; // 256-byte strides: within DMA-BUF's page alignment
  GstBufferPool *pool = active_pool("video/x-raw,format=NV12,width=321,height=17", 1, &align);
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->stride[0] % 256, 0);
  EXPECT_EQ(meta->stride[1] % 64, 0);
  EXPECT_EQ(meta->offset[0], 2u * meta->stride[0]) << "padding_top rows come first";
  gst_buffer_unref(buffer);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
}

TEST(DmaBufPoolStorage, AutoResolvesToTheStorageTheMachineHas) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_AUTO);
  // A heap this process may not open is no heap for auto: system memory.
  const tmtest::DmaHeapProbe heap = tmtest::probe_dma_heap();
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(pool),
            heap.present() ? GST_TENSOR_MEM_STORAGE_DMABUF : GST_TENSOR_MEM_STORAGE_SYSTEM)
      << (heap.present() ? heap.node : heap.why);
  gst_object_unref(pool);
  GstBufferPool *plain = gst_tensor_mem_buffer_pool_new();
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(plain), GST_TENSOR_MEM_STORAGE_SYSTEM);
  gst_object_unref(plain);
}

TEST(DmaBufHeap, AllocatesFromARealHeapWhereOneExists) {
  // Where a heap node opens, a failed allocation is a failure, not a skip.
  const tmtest::DmaHeapProbe heap = tmtest::probe_dma_heap();
  if (!heap.present())
    GTEST_SKIP() << heap.why;
  tensormem::DmaBufOptions options;
  options.source = tensormem::DmaBufSource::Heap;
  auto storage = DmaBufStorage::allocate(4096, options);
  ASSERT_TRUE(storage) << heap.node << " opened but: " << storage.error().message();
  GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *mem = gst_tensor_mem_dmabuf_allocator_import(allocator, *storage);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ((*storage)->fd_kind(), tensormem::DmaBufFdKind::DmaBuf);
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READWRITE));
  info.data[0] = 42;
  gst_memory_unmap(mem, &info);
  gst_memory_unref(mem);
  gst_object_unref(allocator);
}

} // namespace

/* Foreign DMA-BUFs re-wrapped every frame are found again by their file
 * (issue 27), but the imports kept after their wrappers died are bounded:
 * the 32 most recently used stay, older ones go, and
 * gst_tensor_mem_dmabuf_forget_foreign_imports() drops them all. */
TEST(ForeignDmaBufImports, KeptAfterTheirWrapperDiesAreBoundedAndForgotten) {
  constexpr int kBuffers = 40, kKept = 32;
  GstAllocator *foreign = gst_dmabuf_allocator_new();
  std::vector<int> fds;
  std::vector<std::weak_ptr<tensormem::DmaBufStorage>> imports;
  for (int i = 0; i < kBuffers; ++i) {
    const int fd = memfd_create("foreign", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    fds.push_back(fd);
    GstMemory *wrapper = gst_dmabuf_allocator_alloc(foreign, dup(fd), 4096);
    auto storage = gst_tensor_mem_dmabuf_memory_import_storage(wrapper);
    ASSERT_TRUE(storage) << storage.error().message();
    imports.push_back(*storage);
    gst_memory_unref(wrapper);
  }
  int alive = 0;
  for (int i = 0; i < kBuffers; ++i)
    alive += imports[i].expired() ? 0 : 1;
  EXPECT_EQ(alive, kKept) << "imports kept beyond their wrappers are not bounded";
  for (int i = 0; i < kBuffers - kKept; ++i)
    EXPECT_TRUE(imports[i].expired()) << "buffer " << i << " is not among the most recently used";
  // A kept buffer in a new wrapper under a new fd is the same import.
  GstMemory *again = gst_dmabuf_allocator_alloc(foreign, dup(fds.back()), 4096);
  auto found = gst_tensor_mem_dmabuf_memory_import_storage(again);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, imports.back().lock());
  found = tensormem::Error::invalid_argument("released");
  gst_memory_unref(again);
  gst_tensor_mem_dmabuf_forget_foreign_imports();
  for (int i = 0; i < kBuffers; ++i)
    EXPECT_TRUE(imports[i].expired()) << "buffer " << i << " outlived forget_foreign_imports";
  for (int fd : fds)
    close(fd);
  gst_object_unref(foreign);
}
