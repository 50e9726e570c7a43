// SPDX-License-Identifier: Apache-2.0
#include "element_fixture.hpp"

#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>

#include <vector>

namespace {

constexpr const char *kOddRgba = "video/x-raw,format=RGBA,width=321,height=17,framerate=30/1";
constexpr const char *kAlignedRgba = "video/x-raw,format=RGBA,width=320,height=24,framerate=30/1";
constexpr int kFrames = 3;

/* A harness around `factory` with a bus, so element errors can be read. */
class ElementTest : public tmtest::ElementFixture {
protected:
  /* The first error on the element's bus ("message | debug"), or "" if none. */
  std::string error_debug() { return posted_error(GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED); }
};

TEST_F(ElementTest, UploadCopiesPlainSystemBuffersOnceAndCountsThem) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  expect_plain_frames_copied(gst_is_tensor_mem_memory, kFrames);
}

/* Rows as long as the pool's 64-byte-aligned strides, in one plane and in
 * two: the copy is one memcpy per plane, and every byte of every plane must
 * still arrive. */
TEST_F(ElementTest, UploadCopiesAFrameWhoseStrideMatchesThePoolsByteForByte) {
  start("tensorupload", kAlignedRgba);
  gst_harness_set_caps_str(h_, kAlignedRgba, kAlignedRgba);
  expect_plain_frames_copied(gst_is_tensor_mem_memory, kFrames);
}

TEST_F(ElementTest, UploadCopiesATwoPlaneFrameWhoseStridesMatchThePoolsByteForByte) {
  constexpr const char *kNv12 = "video/x-raw,format=NV12,width=64,height=34,framerate=30/1";
  start("tensorupload", kNv12);
  gst_harness_set_caps_str(h_, kNv12, kNv12);
  expect_plain_frames_copied(gst_is_tensor_mem_memory, kFrames);
}

TEST_F(ElementTest, UploadRequireZeroCopyRefusesPlainBuffers) {
  start("tensorupload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  EXPECT_EQ(gst_harness_push(h_, plain_buffer(0)), GST_FLOW_ERROR);
  EXPECT_EQ(gst_harness_buffers_received(h_), 0u);
  const std::string debug = error_debug();
  EXPECT_NE(debug.find(std::to_string(GST_VIDEO_INFO_SIZE(&info_)) + "-byte"), std::string::npos) << debug;
  EXPECT_NE(debug.find("321x17"), std::string::npos) << debug;
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(ElementTest, UploadProposesTensorPoolAllocatorAndVideoMeta) {
  start("tensorupload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  GstCaps *caps = gst_caps_from_string(kOddRgba);
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  gst_caps_unref(caps);
  ASSERT_TRUE(gst_pad_peer_query(h_->srcpad, query));
  ASSERT_GE(gst_query_get_n_allocation_pools(query), 1u);
  GstBufferPool *pool = nullptr;
  guint size = 0, min_buffers = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min_buffers, nullptr);
  EXPECT_TRUE(pool && GST_IS_TENSOR_MEM_BUFFER_POOL(pool));
  EXPECT_EQ(min_buffers, 2u);
  EXPECT_GT(size, GST_VIDEO_INFO_SIZE(&info_));
  ASSERT_GE(gst_query_get_n_allocation_params(query), 1u);
  GstAllocator *allocator = nullptr;
  gst_query_parse_nth_allocation_param(query, 0, &allocator, nullptr);
  EXPECT_TRUE(allocator && GST_IS_TENSOR_MEM_SYSTEM_ALLOCATOR(allocator));
  EXPECT_TRUE(gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr));
  if (allocator)
    gst_object_unref(allocator);
  if (pool)
    gst_object_unref(pool);
  gst_query_unref(query);
}

TEST_F(ElementTest, UploadPassesTensorPoolBuffersThroughWithoutCopy) {
  start("tensorupload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  for (int i = 0; i < kFrames; ++i) {
    GstBuffer *in = pool_buffer(kOddRgba, i);
    ASSERT_NE(in, nullptr);
    GstMemory *in_mem = gst_buffer_peek_memory(in, 0);
    gst_buffer_ref(in);
    ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h_);
    EXPECT_EQ(out, in);
    EXPECT_EQ(gst_buffer_peek_memory(out, 0), in_mem);
    gst_buffer_unref(out);
    gst_buffer_unref(in);
  }
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(ElementTest, UploadRefusesBayerCaps) {
  start("tensorupload", kOddRgba);
  gst_harness_set_src_caps_str(h_, "video/x-bayer,format=bggr,width=16,height=16,framerate=30/1");
  EXPECT_EQ(gst_harness_push(h_, gst_buffer_new_allocate(nullptr, 256, nullptr)), GST_FLOW_NOT_NEGOTIATED);
}

TEST_F(ElementTest, DownloadCopiesPaddedBufferIntoDefaultLayoutWithoutDownstreamMeta) {
  start("tensordownload", kOddRgba);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  for (int i = 0; i < kFrames; ++i) {
    GstBuffer *in = pool_buffer(kOddRgba, i);
    ASSERT_NE(in, nullptr);
    gst_buffer_ref(in);
    ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h_);
    ASSERT_NE(out, nullptr);
    EXPECT_NE(out, in);
    EXPECT_EQ(gst_buffer_get_video_meta(out), nullptr);
    EXPECT_EQ(gst_buffer_get_size(out), GST_VIDEO_INFO_SIZE(&info_));
    EXPECT_TRUE(tmtest::frames_equal(in, out, &info_));
    gst_buffer_unref(out);
    gst_buffer_unref(in);
  }
  EXPECT_EQ(tmtest::copied_bytes(h_->element), kFrames * GST_VIDEO_INFO_SIZE(&info_));
}

TEST_F(ElementTest, DownloadPassesPaddedBufferWhenDownstreamReadsVideoMeta) {
  start("tensordownload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_add_propose_allocation_meta(h_, GST_VIDEO_META_API_TYPE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  for (int i = 0; i < kFrames; ++i) {
    expect_passed_through(pool_buffer(kOddRgba, i));
  }
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(ElementTest, DownloadPassesDefaultLayoutBufferWithoutDownstreamMeta) {
  start("tensordownload", kAlignedRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kAlignedRgba, kAlignedRgba);
  expect_passed_through(pool_buffer(kAlignedRgba, 1));
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

TEST_F(ElementTest, DownloadRequireZeroCopyRefusesPaddedBufferWithoutDownstreamMeta) {
  start("tensordownload", kOddRgba);
  g_object_set(h_->element, "require-zero-copy", TRUE, nullptr);
  gst_harness_set_caps_str(h_, kOddRgba, kOddRgba);
  GstBuffer *in = pool_buffer(kOddRgba, 0);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(gst_harness_push(h_, in), GST_FLOW_ERROR);
  const std::string debug = error_debug();
  EXPECT_NE(debug.find(std::to_string(GST_VIDEO_INFO_SIZE(&info_)) + "-byte"), std::string::npos) << debug;
  EXPECT_EQ(tmtest::copied_bytes(h_->element), 0u);
}

/* Name, type and flags of the properties every tensor element exposes. */
struct PropertyExpectation {
  const char *name;
  GType type;
  GParamFlags required;
  GParamFlags forbidden;
};

/* `storage` is tensorupload's choice; tensordownload always hands out system
 * memory, so it has no such property. */
void expect_properties(const char *factory_name, bool has_storage) {
  GstElementFactory *factory = gst_element_factory_find(factory_name);
  ASSERT_NE(factory, nullptr) << factory_name;
  EXPECT_STREQ(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS), "Filter/Video");
  EXPECT_NE(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_DESCRIPTION), nullptr);
  auto *loaded = GST_ELEMENT_FACTORY(gst_plugin_feature_load(GST_PLUGIN_FEATURE(factory)));
  ASSERT_NE(loaded, nullptr);
  auto *klass = static_cast<GObjectClass *>(g_type_class_ref(gst_element_factory_get_element_type(loaded)));

  const PropertyExpectation expectations[] = {
      {"copied-bytes", G_TYPE_UINT64, G_PARAM_READABLE, G_PARAM_WRITABLE},
      {"require-zero-copy", G_TYPE_BOOLEAN, G_PARAM_READWRITE, static_cast<GParamFlags>(0)},
  };
  for (const auto &e : expectations) {
    GParamSpec *pspec = g_object_class_find_property(klass, e.name);
    ASSERT_NE(pspec, nullptr) << factory_name << "::" << e.name;
    EXPECT_EQ(G_PARAM_SPEC_VALUE_TYPE(pspec), e.type) << e.name;
    EXPECT_EQ(pspec->flags & e.required, e.required) << e.name;
    EXPECT_EQ(pspec->flags & e.forbidden, 0) << e.name;
    EXPECT_NE(g_param_spec_get_blurb(pspec), nullptr) << e.name;
  }
  GParamSpec *storage = g_object_class_find_property(klass, "storage");
  if (has_storage) {
    ASSERT_NE(storage, nullptr) << factory_name;
    EXPECT_EQ(G_PARAM_SPEC_VALUE_TYPE(storage), GST_TYPE_TENSOR_MEM_STORAGE);
    EXPECT_EQ(storage->flags & G_PARAM_READWRITE, G_PARAM_READWRITE);
  } else {
    EXPECT_EQ(storage, nullptr) << factory_name << " has a storage property";
  }
  auto *require = G_PARAM_SPEC_BOOLEAN(g_object_class_find_property(klass, "require-zero-copy"));
  EXPECT_FALSE(require->default_value);

  g_type_class_unref(klass);
  gst_object_unref(loaded);
  gst_object_unref(factory);
}

TEST(ElementMetadata, TensorUploadHasTheTensorProperties) { expect_properties("tensorupload", true); }

TEST(ElementMetadata, TensorDownloadHasTheTensorPropertiesWithoutStorage) {
  expect_properties("tensordownload", false);
}

} // namespace
