// SPDX-License-Identifier: Apache-2.0
// tensorupload storage=dmabuf and tensordownload with DMA-BUF memory, in a
// GstHarness: the three input paths, negotiation and bad input.
#include "element_fixture.hpp"
#include "pipeline_util.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/dmabuf_storage.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace {

constexpr const char *kOddRgba = "video/x-raw,format=RGBA,width=321,height=17,framerate=30/1";
constexpr const char *kOddRgbaDmaBuf = "video/x-raw(memory:DMABuf),format=RGBA,width=321,height=17,framerate=30/1";
constexpr const char *kNv12 = "video/x-raw,format=NV12,width=64,height=48,framerate=30/1";
constexpr int kFrames = 3;

class DmaBufElement : public tmtest::ElementFixture {
protected:
  void start(const char *factory, const char *caps, bool dmabuf_storage = true) {
    ASSERT_NO_FATAL_FAILURE(ElementFixture::start(factory, caps));
    if (dmabuf_storage)
      g_object_set(h_->element, "storage", GST_TENSOR_MEM_STORAGE_DMABUF, nullptr);
  }
  void TearDown() override {
    ElementFixture::TearDown();
    if (plain_allocator_)
      gst_object_unref(plain_allocator_);
  }
  GstBufferPool *new_pool() override { return gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_DMABUF); }

  /* A buffer of one plain GstDmaBufAllocator memory over `fd` (someone
   * else's DMA-BUF), with a GstVideoMeta of 64-byte aligned strides. */
  GstBuffer *foreign_dmabuf_buffer(int fd, gsize size, GstFdMemoryFlags flags) {
    if (!plain_allocator_)
      plain_allocator_ = gst_dmabuf_allocator_new();
    GstMemory *mem = gst_dmabuf_allocator_alloc_with_flags(plain_allocator_, fd, size, flags);
    GstBuffer *buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, mem);
    return buffer;
  }

  /* A memfd holding one frame in the 64-byte aligned layout, filled, and a
   * foreign DMA-BUF buffer over it. */
  GstBuffer *foreign_frame(guint seed, int *fd_out, GstFdMemoryFlags flags = GST_FD_MEMORY_FLAG_NONE) {
    GstVideoInfo aligned = info_;
    GstVideoAlignment align;
    gst_video_alignment_reset(&align);
    for (guint &mask : align.stride_align)
      mask = 63;
    EXPECT_TRUE(gst_video_info_align(&aligned, &align));
    const int fd = memfd_create("foreign", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(aligned.size)), 0);
    GstBuffer *buffer = foreign_dmabuf_buffer(fd, aligned.size, flags);
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info_),
                                   GST_VIDEO_INFO_WIDTH(&info_), GST_VIDEO_INFO_HEIGHT(&info_),
                                   GST_VIDEO_INFO_N_PLANES(&info_), aligned.offset, aligned.stride);
    tmtest::fill_frame(buffer, &info_, seed);
    if (fd_out)
      *fd_out = fd;
    return buffer;
  }

  GstAllocator *plain_allocator_ = nullptr;
};

TEST_F(DmaBufElement, UploadCopiesSystemBuffersIntoDmaBufOnceAndCountsThem) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  expect_plain_frames_copied(gst_is_tensor_mem_dmabuf_memory, kFrames);
}

TEST_F(DmaBufElement, UploadRequireZeroCopyRefusesSystemBuffersClearly) {
  start("tensorupload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  EXPECT_EQ(gst_harness_push(h_, plain_buffer(0)), GST_FLOW_ERROR);
  const std::string debug = posted_error();
  EXPECT_NE(debug.find("require-zero-copy"), std::string::npos) << debug;
  EXPECT_NE(debug.find("321x17"), std::string::npos) << debug;
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(DmaBufElement, UploadPassesItsOwnDmaBufPoolBuffersThrough) {
  start("tensorupload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgbaDmaBuf);
  for (int i = 0; i < kFrames; ++i) {
    expect_passed_through(pool_buffer(kOddRgba, i));
  }
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(DmaBufElement, UploadImportsForeignDmaBufWithoutACopyAndImportsEachMemoryOnce) {
  start("tensorupload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgbaDmaBuf);
  int fd = -1;
  GstBuffer *in = foreign_frame(7, &fd);
  std::shared_ptr<tensormem::Storage> first;
  for (int i = 0; i < 2; ++i) { // the same upstream memory twice, as a pool would hand it back
    gst_buffer_ref(in);
    ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK) << posted_error();
    GstBuffer *out = gst_harness_pull(h_);
    ASSERT_NE(out, nullptr);
    EXPECT_NE(out, in);
    GstMemory *mem = gst_buffer_peek_memory(out, 0);
    EXPECT_TRUE(gst_is_tensor_mem_dmabuf_memory(mem));
    EXPECT_NE(gst_dmabuf_memory_get_fd(mem), fd) << "our memory holds a dup";
    auto storage = gst_tensor_mem_memory_get_tensor(mem)->storage();
    if (!first)
      first = storage;
    EXPECT_EQ(storage, first) << "the import is cached on the upstream memory";
    auto direct = tensormem::DmaBufStorage::import(fd, 0);
    ASSERT_TRUE(direct);
    EXPECT_EQ(storage->identity(), (*direct)->identity()) << "same buffer, not a copy";
    GstParentBufferMeta *parent = gst_buffer_get_parent_buffer_meta(out);
    ASSERT_NE(parent, nullptr) << "the upstream buffer is kept alive";
    EXPECT_EQ(parent->buffer, in);
    GstVideoMeta *meta = gst_buffer_get_video_meta(out);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->stride[0], gst_buffer_get_video_meta(in)->stride[0]);
    EXPECT_TRUE(tmtest::frames_equal(in, out, &info_));
    gst_buffer_unref(out);
  }
  first.reset();
  gst_buffer_unref(in);
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(DmaBufElement, UpstreamClosingItsFdLeavesOurDupReadable) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgbaDmaBuf);
  int fd = -1;
  GstBuffer *in = foreign_frame(3, &fd, GST_FD_MEMORY_FLAG_DONT_CLOSE);
  GstBuffer *reference = plain_buffer(3);
  ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK) << posted_error();
  GstBuffer *out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(close(fd), 0); // upstream closes its fd while we hold the buffer
  EXPECT_TRUE(tmtest::frames_equal(reference, out, &info_));
  gst_buffer_unref(out);
  gst_buffer_unref(reference);
}

TEST_F(DmaBufElement, APipeOfferedAsDmaBufIsAnErrorNamingItsFilesystemMagic) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgbaDmaBuf);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  GstBuffer *in = foreign_dmabuf_buffer(fds[0], GST_VIDEO_INFO_SIZE(&info_), GST_FD_MEMORY_FLAG_DONT_CLOSE);
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string debug = posted_error();
  EXPECT_NE(debug.find("filesystem magic 0x50495045"), std::string::npos) << debug; // PIPEFS_MAGIC
  EXPECT_NE(debug.find("Cannot import"), std::string::npos) << debug;
  close(fds[0]);
  close(fds[1]);
}

TEST_F(DmaBufElement, AStrideSmallerThanARowIsAnErrorNamingTheField) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  GstBuffer *in = gst_buffer_new_allocate(nullptr, 100 * 17, nullptr);
  gsize offset[GST_VIDEO_MAX_PLANES] = {0};
  gint stride[GST_VIDEO_MAX_PLANES] = {100};
  gst_buffer_add_video_meta_full(in, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGBA, 321, 17, 1, offset, stride);
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string debug = posted_error();
  EXPECT_NE(debug.find("stride[0] = 100"), std::string::npos) << debug;
  EXPECT_NE(debug.find("1284-byte row"), std::string::npos) << debug;
}

TEST_F(DmaBufElement, APlanePastTheEndOfTheMemoryIsAnErrorNamingTheNumbers) {
  start("tensorupload", kNv12);
  gst_harness_set_caps_str(h_, kNv12, kNv12);
  // A foreign DMA-BUF whose meta puts the UV plane past the end of the fd.
  const int fd = memfd_create("short", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(fd, 64 * 48 + 100), 0);
  GstBuffer *in = foreign_dmabuf_buffer(fd, 64 * 48 + 100, GST_FD_MEMORY_FLAG_NONE);
  gsize offset[GST_VIDEO_MAX_PLANES] = {0, 64 * 48};
  gint stride[GST_VIDEO_MAX_PLANES] = {64, 64};
  gst_buffer_add_video_meta_full(in, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 64, 48, 2, offset, stride);
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string debug = posted_error();
  EXPECT_NE(debug.find("plane 1"), std::string::npos) << debug;
  EXPECT_NE(debug.find("offset[1] = 3072"), std::string::npos) << debug;
  EXPECT_NE(debug.find("past the end of the 3172-byte buffer"), std::string::npos) << debug;
}

TEST_F(DmaBufElement, AMemoryLargerThanItsDmaBufIsAnError) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgbaDmaBuf);
  const int fd = memfd_create("small", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  // The memory claims a whole frame; the fd holds 4096 bytes.
  GstBuffer *in = foreign_dmabuf_buffer(fd, GST_VIDEO_INFO_SIZE(&info_), GST_FD_MEMORY_FLAG_NONE);
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string debug = posted_error();
  EXPECT_NE(debug.find("exceeds the 4096-byte DMA-BUF"), std::string::npos) << debug;
}

TEST_F(DmaBufElement, SizeOverflowInCapsFailsNegotiation) {
  for (const char *caps : {"video/x-raw,format=RGBA,width=2147483647,height=2147483647,framerate=30/1",
                           "video/x-raw,format=RGBA,width=65536,height=65536,framerate=30/1"}) {
    GstHarness *h = gst_harness_new("tensorupload");
    g_object_set(h->element, "storage", GST_TENSOR_MEM_STORAGE_DMABUF, nullptr);
    gst_harness_set_src_caps_str(h, caps);
    EXPECT_EQ(gst_harness_push(h, gst_buffer_new_allocate(nullptr, 64, nullptr)), GST_FLOW_NOT_NEGOTIATED) << caps;
    gst_harness_teardown(h);
  }
}

TEST_F(DmaBufElement, UploadProposesADmaBufPoolAndAllocator) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  GstCaps *caps = gst_caps_from_string(kOddRgba);
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  gst_caps_unref(caps);
  ASSERT_TRUE(gst_pad_peer_query(h_->srcpad, query));
  ASSERT_GE(gst_query_get_n_allocation_pools(query), 1u);
  GstBufferPool *pool = nullptr;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, nullptr, nullptr, nullptr);
  ASSERT_TRUE(pool && GST_IS_TENSOR_MEM_BUFFER_POOL(pool));
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(pool), GST_TENSOR_MEM_STORAGE_DMABUF);
  GstAllocator *allocator = nullptr;
  gst_query_parse_nth_allocation_param(query, 0, &allocator, nullptr);
  EXPECT_TRUE(allocator && GST_IS_TENSOR_MEM_DMABUF_ALLOCATOR(allocator));
  EXPECT_TRUE(gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr));
  if (allocator)
    gst_object_unref(allocator);
  gst_object_unref(pool);
  gst_query_unref(query);
}

TEST_F(DmaBufElement, UploadSourceCapsOfferDmaBufFirstOnlyForDmaBufStorage) {
  for (GstTensorMemStorage storage : {GST_TENSOR_MEM_STORAGE_DMABUF, GST_TENSOR_MEM_STORAGE_SYSTEM}) {
    GstHarness *h = gst_harness_new("tensorupload");
    g_object_set(h->element, "storage", storage, nullptr);
    GstPad *src = gst_element_get_static_pad(h->element, "src");
    GstCaps *sink_caps = gst_caps_from_string("video/x-raw,format=RGBA,width=16,height=16");
    gst_harness_set_src_caps(h, sink_caps);
    GstCaps *caps = gst_pad_query_caps(src, nullptr);
    ASSERT_GE(gst_caps_get_size(caps), 1u);
    const bool first_dmabuf =
        gst_caps_features_contains(gst_caps_get_features(caps, 0), GST_CAPS_FEATURE_MEMORY_DMABUF);
    EXPECT_EQ(first_dmabuf, storage == GST_TENSOR_MEM_STORAGE_DMABUF) << storage;
    bool any_plain = false;
    for (guint i = 0; i < gst_caps_get_size(caps); ++i)
      any_plain |= gst_caps_features_is_equal(gst_caps_get_features(caps, i), GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
    EXPECT_TRUE(any_plain) << "plain caps for downstreams without memory:DMABuf";
    gst_caps_unref(caps);
    gst_object_unref(src);
    gst_harness_teardown(h);
  }
}

TEST_F(DmaBufElement, DownloadDropsTheDmaBufFeatureAndPassesTheBufferThrough) {
  start("tensordownload", kOddRgba, false);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_add_propose_allocation_meta(h_, GST_VIDEO_META_API_TYPE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgba);
  expect_passed_through(pool_buffer(kOddRgba, 1));
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(DmaBufElement, DownloadKeepsDmaBufCapsForADownstreamThatTakesThem) {
  start("tensordownload", kOddRgba, false);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgbaDmaBuf);
  expect_passed_through(pool_buffer(kOddRgba, 2));
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
  GstCaps *negotiated = gst_pad_get_current_caps(h_->sinkpad);
  ASSERT_NE(negotiated, nullptr);
  EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(negotiated, 0), GST_CAPS_FEATURE_MEMORY_DMABUF))
      << "downstream was handed memory:DMABuf caps";
  gst_caps_unref(negotiated);
}

TEST_F(DmaBufElement, DownloadCopiesAPaddedDmaBufForADownstreamWithoutVideoMeta) {
  start("tensordownload", kOddRgba, false);
  gst_harness_set_caps_str(h_, kOddRgbaDmaBuf, kOddRgba);
  GstBuffer *in = pool_buffer(kOddRgba, 4);
  gst_buffer_ref(in);
  ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK) << posted_error();
  GstBuffer *out = gst_harness_pull(h_);
  EXPECT_NE(out, in);
  EXPECT_EQ(gst_buffer_get_video_meta(out), nullptr);
  EXPECT_TRUE(tmtest::frames_equal(in, out, &info_));
  gst_buffer_unref(out);
  gst_buffer_unref(in);
  EXPECT_EQ(tmtest::copied_bytes(h_->element), GST_VIDEO_INFO_SIZE(&info_));
}

} // namespace
