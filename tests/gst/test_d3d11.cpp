// SPDX-License-Identifier: Apache-2.0
// The D3D11 device in GStreamer: the storage choice, and one device shared
// by every element of a pipeline through a GstContext.
// The program asks for the software reference device before anything uses
// D3D11, as an application off Windows must.
#include "context_watch.hpp"
#include "pipeline_util.hpp"

#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/d3d11_device.hpp>
#include <tensormem/internal/d3d11_software_device.hpp>

#include <memory>
#include <string>

namespace {

// Runs before main, so before gst_init and any D3D11 use.
const bool g_software_device = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

using tmtest::ContextWatch;

/* The device the element named `name` reports in its context (a new
 * reference), or NULL. */
GstTensorMemD3D11Device *element_device(GstElement *pipeline, const char *name) {
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
  EXPECT_NE(element, nullptr) << name;
  if (!element)
    return nullptr;
  GstTensorMemD3D11Device *device = nullptr;
  if (GstContext *context = gst_element_get_context(element, GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE)) {
    EXPECT_TRUE(gst_context_get_tensor_mem_d3d11_device(context, &device));
    gst_context_unref(context);
  }
  gst_object_unref(element);
  return device;
}

/* Takes `pipeline` to READY and returns the device its elements "a" and
 * "b" both use (a new reference), or NULL after a failure. */
GstTensorMemD3D11Device *ready_with_one_device(GstElement *pipeline) {
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemD3D11Device *a = element_device(pipeline, "a");
  GstTensorMemD3D11Device *b = element_device(pipeline, "b");
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b) << "the two elements use different devices";
  const bool same = a == b;
  gst_clear_object(&b);
  if (!same)
    gst_clear_object(&a);
  return a;
}

class D3d11ContextTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(g_software_device); }

  static GstElement *launch(const char *description, ContextWatch *watch) {
    watch->type = GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE;
    return tmtest::launch_watched(description, watch);
  }

  static void stop(GstElement *pipeline) { tmtest::stop_watched(pipeline); }
};

} // namespace

TEST(D3d11Storage, the_storage_is_named_d3d11_and_auto_never_picks_it) {
  auto *klass = static_cast<GEnumClass *>(g_type_class_ref(GST_TYPE_TENSOR_MEM_STORAGE));
  GEnumValue *value = g_enum_get_value_by_nick(klass, "d3d11");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->value, GST_TENSOR_MEM_STORAGE_D3D11);
  g_type_class_unref(klass);
  EXPECT_NE(gst_tensor_mem_storage_resolve(GST_TENSOR_MEM_STORAGE_AUTO), GST_TENSOR_MEM_STORAGE_D3D11);
  EXPECT_EQ(gst_tensor_mem_storage_resolve(GST_TENSOR_MEM_STORAGE_D3D11), GST_TENSOR_MEM_STORAGE_D3D11);
}

TEST(D3d11Device, every_new_device_wraps_the_one_process_context) {
  GError *error = nullptr;
  GstTensorMemD3D11Device *a = gst_tensor_mem_d3d11_device_new(&error);
  ASSERT_NE(a, nullptr) << (error ? error->message : "");
  GstTensorMemD3D11Device *b = gst_tensor_mem_d3d11_device_new(nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(gst_tensor_mem_d3d11_device_get_d3d11_context(a), gst_tensor_mem_d3d11_device_get_d3d11_context(b));
  auto process = tensormem::D3d11Context::process();
  ASSERT_TRUE(process);
  EXPECT_EQ(gst_tensor_mem_d3d11_device_get_d3d11_context(a), *process);
  EXPECT_STREQ(gst_tensor_mem_d3d11_device_get_name(a), (*process)->device().name());
  gst_object_unref(a);
  gst_object_unref(b);
}

TEST_F(D3d11ContextTest, two_linked_uploads_share_one_device_and_answer_context_queries) {
  ContextWatch watch;
  GstElement *pipeline =
      launch("videotestsrc ! tensorupload name=a storage=d3d11 ! tensordownload ! tensorupload name=b "
             "storage=d3d11 ! fakesink",
             &watch);
  GstTensorMemD3D11Device *a = ready_with_one_device(pipeline);
  ASSERT_NE(a, nullptr);
  // b (downstream, first to READY) asked the application and made the
  // device; the bin handed it to a.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  // A neighbour's context query is answered with the same device.
  GstElement *eb = gst_bin_get_by_name(GST_BIN(pipeline), "b");
  GstPad *sink = gst_element_get_static_pad(eb, "sink");
  GstQuery *query = gst_query_new_context(GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE);
  EXPECT_TRUE(gst_pad_query(sink, query));
  GstContext *answer = nullptr;
  gst_query_parse_context(query, &answer);
  GstTensorMemD3D11Device *answered = nullptr;
  EXPECT_TRUE(answer && gst_context_get_tensor_mem_d3d11_device(answer, &answered));
  EXPECT_EQ(answered, a);
  gst_clear_object(&answered);
  gst_query_unref(query);
  gst_object_unref(sink);
  gst_object_unref(eb);
  gst_clear_object(&a);
  stop(pipeline);
}

TEST_F(D3d11ContextTest, unlinked_uploads_share_one_device_through_the_bin) {
  ContextWatch watch;
  GstElement *pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink  videotestsrc ! "
                                "tensorupload name=b storage=d3d11 ! fakesink",
                                &watch);
  GstTensorMemD3D11Device *a = ready_with_one_device(pipeline);
  ASSERT_NE(a, nullptr);
  // The second element's need-context was answered by the bin.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  gst_clear_object(&a);
  stop(pipeline);
}

TEST_F(D3d11ContextTest, an_application_device_is_used_by_set_context_and_need_context) {
  // A device of the application's own, distinct from the process one.
  auto soft = tensormem::create_software_d3d11_device();
  ASSERT_TRUE(soft) << soft.error().message();
  auto context = tensormem::D3d11Context::create(std::move(*soft));
  ASSERT_TRUE(context) << context.error().message();
  GstTensorMemD3D11Device *app = gst_tensor_mem_d3d11_device_new_wrapped(*context);
  ASSERT_NE(app, nullptr);

  ContextWatch on_pipeline;
  GstElement *pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink", &on_pipeline);
  GstContext *shared = gst_context_new_tensor_mem_d3d11_device(app, TRUE);
  gst_element_set_context(pipeline, shared);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemD3D11Device *a = element_device(pipeline, "a");
  EXPECT_EQ(a, app);
  gst_clear_object(&a);
  EXPECT_EQ(on_pipeline.need, 0);
  EXPECT_EQ(on_pipeline.have, 0);
  stop(pipeline);

  ContextWatch answering;
  answering.answer = shared;
  pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink", &answering);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  a = element_device(pipeline, "a");
  EXPECT_EQ(a, app);
  gst_clear_object(&a);
  EXPECT_EQ(answering.need, 1);
  EXPECT_EQ(answering.have, 0);
  stop(pipeline);

  gst_context_unref(shared);
  gst_object_unref(app);
}

TEST(D3d11Device, contexts_of_other_types_or_without_a_device_are_ignored) {
  GstContext *other = gst_context_new("some.other.type", FALSE);
  EXPECT_FALSE(gst_context_get_tensor_mem_d3d11_device(other, nullptr));
  gst_context_unref(other);
  GstContext *empty = gst_context_new(GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE, FALSE);
  GstTensorMemD3D11Device *device = reinterpret_cast<GstTensorMemD3D11Device *>(0x1);
  EXPECT_FALSE(gst_context_get_tensor_mem_d3d11_device(empty, &device));
  EXPECT_EQ(device, nullptr);
  GstElement *upload = gst_element_factory_make("tensorupload", nullptr);
  ASSERT_NE(upload, nullptr);
  GstTensorMemD3D11Device *slot = nullptr;
  EXPECT_FALSE(gst_tensor_mem_d3d11_device_handle_set_context(upload, empty, &slot));
  EXPECT_EQ(slot, nullptr);
  GstQuery *query = gst_query_new_context(GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE);
  EXPECT_FALSE(gst_tensor_mem_d3d11_device_handle_context_query(upload, query, &slot)) << "no device, no answer";
  gst_query_unref(query);
  gst_object_unref(upload);
  gst_context_unref(empty);
}

// ---- the allocator and its memory ---------------------------------------------

namespace {

class D3d11MemoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(g_software_device);
    GError *error = nullptr;
    device = gst_tensor_mem_d3d11_device_new(&error);
    ASSERT_NE(device, nullptr) << (error ? error->message : "");
    allocator = gst_tensor_mem_d3d11_allocator_new(device);
  }
  void TearDown() override {
    gst_clear_object(&allocator);
    gst_clear_object(&device);
  }

  GstMemory *alloc(const char *caps) {
    GstVideoInfo info = tmtest::info_from_string(caps);
    return gst_tensor_mem_d3d11_allocator_alloc_video(allocator, &info);
  }

  GstTensorMemD3D11Device *device = nullptr;
  GstAllocator *allocator = nullptr;
};

} // namespace

TEST_F(D3d11MemoryTest, a_video_allocation_is_one_texture_in_its_staging_layout) {
  GstMemory *mem = alloc("video/x-raw,format=RGBA,width=33,height=17");
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_d3d11_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_base_memory(mem));
  EXPECT_TRUE(gst_memory_is_type(mem, GST_TENSOR_MEM_D3D11_MEMORY_TYPE_NAME));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_D3D11);
  EXPECT_EQ(gst_tensor_mem_d3d11_memory_get_device(mem), device);
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(gst_tensor_mem_d3d11_memory_get_texture(mem), storage->texture());
  EXPECT_EQ(gst_tensor_mem_d3d11_memory_get_tensor(mem), gst_tensor_mem_memory_get_tensor(mem));
  EXPECT_GE(storage->backing_pitch(), 33u * 4);
  EXPECT_EQ(mem->size, storage->backing_pitch() * 17) << "pitch × texture rows";
  gst_memory_unref(mem);
}

TEST_F(D3d11MemoryTest, nv12_planes_follow_each_other_at_the_pitch) {
  GstVideoInfo info = tmtest::info_from_string("video/x-raw,format=NV12,width=64,height=48");
  GstMemory *mem = gst_tensor_mem_d3d11_allocator_alloc_video(allocator, &info);
  ASSERT_NE(mem, nullptr);
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
  ASSERT_TRUE(gst_tensor_mem_d3d11_memory_get_plane_layout(mem, &info, offset, stride));
  const gsize pitch = gst_tensor_mem_d3d11_memory_get_storage(mem)->backing_pitch();
  EXPECT_EQ(stride[0], static_cast<gint>(pitch));
  EXPECT_EQ(stride[1], static_cast<gint>(pitch));
  EXPECT_EQ(offset[0], 0u);
  EXPECT_EQ(offset[1], pitch * 48) << "chroma at pitch × height";
  EXPECT_EQ(mem->size, pitch * (48 + 24));
  gst_memory_unref(mem);
}

TEST_F(D3d11MemoryTest, a_plain_byte_allocation_is_refused) {
  EXPECT_EQ(gst_allocator_alloc(allocator, 4096, nullptr), nullptr) << "a texture needs an image";
  GstVideoInfo i420 = tmtest::info_from_string("video/x-raw,format=I420,width=16,height=16");
  EXPECT_EQ(gst_tensor_mem_d3d11_allocator_alloc_video(allocator, &i420), nullptr) << "I420 has no texture layout";
}

TEST_F(D3d11MemoryTest, maps_go_through_the_storage_map_state_and_bytes_round_trip) {
  GstMemory *mem = alloc("video/x-raw,format=GRAY8,width=40,height=8");
  ASSERT_NE(mem, nullptr);
  GstMapInfo w;
  ASSERT_TRUE(gst_memory_map(mem, &w, GST_MAP_WRITE));
  for (gsize i = 0; i < w.size; ++i)
    w.data[i] = static_cast<guint8>(i * 7 + 3);
  GstMapInfo r;
  EXPECT_FALSE(gst_memory_map(mem, &r, GST_MAP_READ)) << "a writer is exclusive";
  gst_memory_unmap(mem, &w);
  ASSERT_TRUE(gst_memory_map(mem, &r, GST_MAP_READ));
  GstMapInfo r2;
  ASSERT_TRUE(gst_memory_map(mem, &r2, GST_MAP_READ)) << "readers share";
  for (gsize i = 0; i < r.size; ++i)
    ASSERT_EQ(r.data[i], static_cast<guint8>(i * 7 + 3)) << i;
  gst_memory_unmap(mem, &r2);
  gst_memory_unmap(mem, &r);
  gst_memory_unref(mem);
}

TEST_F(D3d11MemoryTest, a_share_is_the_same_texture_and_a_copy_a_new_one_with_the_same_bytes) {
  GstMemory *mem = alloc("video/x-raw,format=BGRA,width=5,height=3");
  ASSERT_NE(mem, nullptr);
  GstMapInfo w;
  ASSERT_TRUE(gst_memory_map(mem, &w, GST_MAP_WRITE));
  for (gsize i = 0; i < w.size; ++i)
    w.data[i] = static_cast<guint8>(255 - i);
  gst_memory_unmap(mem, &w);

  GstMemory *shared = gst_memory_share(mem, 4, 16);
  ASSERT_NE(shared, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_d3d11_memory(shared));
  EXPECT_EQ(gst_tensor_mem_d3d11_memory_get_texture(shared), gst_tensor_mem_d3d11_memory_get_texture(mem));
  GstMapInfo r;
  ASSERT_TRUE(gst_memory_map(shared, &r, GST_MAP_READ));
  EXPECT_EQ(r.size, 16u);
  EXPECT_EQ(r.data[0], static_cast<guint8>(255 - 4));
  gst_memory_unmap(shared, &r);
  gst_memory_unref(shared);

  GstMemory *copy = gst_memory_copy(mem, 0, -1);
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_d3d11_memory(copy));
  EXPECT_NE(gst_tensor_mem_d3d11_memory_get_texture(copy), gst_tensor_mem_d3d11_memory_get_texture(mem));
  ASSERT_TRUE(gst_memory_map(copy, &r, GST_MAP_READ));
  ASSERT_EQ(r.size, mem->size);
  for (gsize i = 0; i < r.size; ++i)
    ASSERT_EQ(r.data[i], static_cast<guint8>(255 - i)) << i;
  gst_memory_unmap(copy, &r);
  gst_memory_unref(copy);

  GstMemory *part = gst_memory_copy(mem, 8, 4);
  ASSERT_NE(part, nullptr);
  EXPECT_FALSE(gst_is_tensor_mem_d3d11_memory(part)) << "a part of a texture is not an image: system memory";
  ASSERT_TRUE(gst_memory_map(part, &r, GST_MAP_READ));
  EXPECT_EQ(r.data[0], static_cast<guint8>(255 - 8));
  gst_memory_unmap(part, &r);
  gst_memory_unref(part);
  gst_memory_unref(mem);
}

TEST_F(D3d11MemoryTest, a_d3d11_pool_gives_video_metas_at_the_pitch) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_d3d11(allocator);
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=NV12,width=33,height=17");
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 0, 1, 2);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  EXPECT_TRUE(gst_is_tensor_mem_d3d11_memory(mem));
  const gsize pitch = gst_tensor_mem_d3d11_memory_get_storage(mem)->backing_pitch();
  GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(meta, nullptr);
  ASSERT_EQ(meta->n_planes, 2u);
  EXPECT_EQ(meta->stride[0], static_cast<gint>(pitch));
  EXPECT_EQ(meta->stride[1], static_cast<gint>(pitch));
  EXPECT_EQ(meta->offset[1], pitch * 17);
  gst_buffer_unref(buffer);
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(pool), GST_TENSOR_MEM_STORAGE_D3D11);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_caps_unref(caps);
}

TEST_F(D3d11MemoryTest, the_d3d11_pool_is_its_family_subclass_and_keeps_the_base_rules) {
  // Its own pool class (one per memory family), a GstTensorMemBufferPool all
  // the same, from either constructor.
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_d3d11(allocator);
  EXPECT_TRUE(GST_IS_TENSOR_MEM_BUFFER_POOL(pool));
  EXPECT_STRNE(G_OBJECT_TYPE_NAME(pool), "GstTensorMemBufferPool");
  GstBufferPool *by_storage = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_D3D11);
  EXPECT_EQ(G_OBJECT_TYPE(by_storage), G_OBJECT_TYPE(pool));
  // Without an allocator in its config or constructor it cannot be configured.
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=16,height=8");
  GstStructure *config = gst_buffer_pool_get_config(by_storage);
  gst_buffer_pool_config_set_params(config, caps, 0, 1, 2);
  EXPECT_FALSE(gst_buffer_pool_set_config(by_storage, config));
  gst_object_unref(by_storage);
  // An alignment past what D3D11 memory promises is refused, as by the base.
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 0, 1, 2);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 4095;
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config));
  // The fence meta option reaches the base: every buffer has an (empty) one, pooled.
  // (A refused config stays the pool's, as GStreamer keeps it: reset the
  // alignment.)
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 0, 1, 2);
  params.align = 0;
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  gpointer state = nullptr;
  GstMeta *empty = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE);
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(GST_META_FLAG_IS_SET(empty, GST_META_FLAG_POOLED));
  gst_buffer_unref(buffer);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_caps_unref(caps);
}

TEST_F(D3d11MemoryTest, fenced_writes_carry_a_d3d11_meta_that_copies_without_handles) {
  GstMemory *mem = alloc("video/x-raw,format=RGBA,width=8,height=8");
  ASSERT_NE(mem, nullptr);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  const std::size_t handles = tensormem::SoftwareD3d11Device::open_handles();
  GError *error = nullptr;
  ASSERT_TRUE(gst_buffer_fence_tensor_mem_d3d11_writes(buffer, &error)) << (error ? error->message : "");
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE);
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  EXPECT_EQ(storage->last_gpu_write(), meta->value) << "the write is recorded on the storage";
  gchar *text = gst_tensor_mem_fence_meta_describe(meta);
  EXPECT_EQ(std::string(text), "d3d11:" + std::to_string(meta->value));
  g_free(text);
  EXPECT_TRUE(gst_tensor_mem_fence_meta_wait_cpu(meta, GST_SECOND, nullptr));

  GstBuffer *copy = gst_buffer_copy(buffer);
  GstTensorMemFenceMeta *copied = gst_buffer_get_tensor_mem_fence_meta(copy);
  ASSERT_NE(copied, nullptr);
  EXPECT_EQ(copied->kind, GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE);
  EXPECT_EQ(copied->value, meta->value);
  gst_buffer_unref(copy);
  gst_buffer_unref(buffer);
  EXPECT_EQ(tensormem::SoftwareD3d11Device::open_handles(), handles) << "metas hold no handle of their own";
}
