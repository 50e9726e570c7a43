// SPDX-License-Identifier: Apache-2.0
// PBO tensor memory against real GL (Mesa llvmpipe, headless): the allocator
// and its maps, the GL worker shared through GstContext. Every test skips,
// printing the reason, only when no headless GL context can be made.
#include "context_watch.hpp"
#include "gl_test_util.hpp"
#include "test_util.hpp"

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using tmtest::is_gl_buffer;
using tmtest::shared_worker;

class PboTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    worker = shared_worker(&why);
    if (!worker)
      GTEST_SKIP() << "no headless GL here: " << why;
    allocator = gst_tensor_mem_pbo_allocator_new(worker);
    ASSERT_NE(allocator, nullptr);
  }
  void TearDown() override {
    if (allocator)
      gst_object_unref(allocator);
  }

  GstMemory *alloc(gsize size) {
    GstMemory *mem = gst_allocator_alloc(allocator, size, nullptr);
    EXPECT_NE(mem, nullptr);
    return mem;
  }

  GstTensorMemGlWorker *worker = nullptr;
  GstAllocator *allocator = nullptr;
};

void fill(GstMemory *mem, guint8 seed) {
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_WRITE));
  for (gsize i = 0; i < map.size; ++i)
    map.data[i] = static_cast<guint8>(seed + i * 7);
  gst_memory_unmap(mem, &map);
}

::testing::AssertionResult holds(GstMemory *mem, guint8 seed, gsize skip = 0) {
  GstMapInfo map;
  if (!gst_memory_map(mem, &map, GST_MAP_READ))
    return ::testing::AssertionFailure() << "cannot map for reading";
  auto result = ::testing::AssertionSuccess();
  for (gsize i = 0; i < map.size; ++i) {
    if (map.data[i] != static_cast<guint8>(seed + (i + skip) * 7)) {
      result = ::testing::AssertionFailure() << "byte " << i << " differs";
      break;
    }
  }
  gst_memory_unmap(mem, &map);
  return result;
}

} // namespace

TEST_F(PboTest, allocates_a_gl_buffer_and_round_trips_real_bytes) {
  GstMemory *mem = alloc(4099);
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
  EXPECT_TRUE(gst_memory_is_type(mem, GST_TENSOR_MEM_PBO_MEMORY_TYPE_NAME));
  EXPECT_EQ(mem->size, 4099u);
  const guint id = gst_tensor_mem_pbo_memory_get_buffer_id(mem);
  EXPECT_NE(id, 0u);
  EXPECT_TRUE(is_gl_buffer(worker, id));
  EXPECT_EQ(gst_tensor_mem_pbo_memory_get_gl_worker(mem), worker);
  EXPECT_EQ(gst_tensor_mem_pbo_memory_get_core_gl_worker(mem), gst_tensor_mem_gl_worker_get_core_gl_worker(worker));
  auto storage = gst_tensor_mem_pbo_memory_get_storage(mem);
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(storage->buffer_id(), id);
  const tensormem::Tensor *tensor = gst_tensor_mem_pbo_memory_get_tensor(mem);
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(tensor->storage_kind(), tensormem::StorageKind::Pbo);
  storage.reset();

  fill(mem, 3);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u) << "unmapped from GL after the write map";
  EXPECT_TRUE(holds(mem, 3));

  gst_memory_unref(mem);
  // The delete is queued on the worker; a task queued after it sees it done.
  EXPECT_FALSE(is_gl_buffer(worker, id));
}

/* Side data of a storage (a CUDA registration of its GL buffer) is released
 * by the storage's destroy hooks; they must run while the GL buffer still
 * exists, before the storage deletes it. */
TEST_F(PboTest, destroy_hooks_run_before_the_gl_buffer_is_deleted) {
  GstMemory *mem = alloc(256);
  ASSERT_NE(mem, nullptr);
  const guint id = gst_tensor_mem_pbo_memory_get_buffer_id(mem);
  int hook_runs = 0;
  bool alive_in_hook = false;
  gst_tensor_mem_pbo_memory_get_storage(mem)->on_destroy([&] {
    ++hook_runs;
    alive_in_hook = is_gl_buffer(worker, id);
  });
  gst_memory_unref(mem);
  EXPECT_EQ(hook_runs, 1);
  EXPECT_TRUE(alive_in_hook) << "the GL buffer was deleted before the storage's destroy hook ran";
  EXPECT_FALSE(is_gl_buffer(worker, id));
}

TEST_F(PboTest, readers_share_one_gl_map_and_the_last_one_unmaps) {
  GstMemory *mem = alloc(1024);
  ASSERT_NE(mem, nullptr);
  fill(mem, 9);
  GstMemory *share = gst_memory_share(mem, 16, 256);
  ASSERT_NE(share, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(share));

  const guint64 before = gst_tensor_mem_gl_worker_get_map_calls(worker);
  GstMapInfo a, b, c;
  ASSERT_TRUE(gst_memory_map(mem, &a, GST_MAP_READ));
  ASSERT_TRUE(gst_memory_map(mem, &b, GST_MAP_READ));
  ASSERT_TRUE(gst_memory_map(share, &c, GST_MAP_READ));
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_map_calls(worker) - before, 1u) << "three readers, one glMapBufferRange";
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 1u);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(c.data, a.data + 16);
  EXPECT_EQ(c.size, 256u);

  // Readers on other threads join the same map.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      GstMapInfo m;
      if (gst_memory_map(mem, &m, GST_MAP_READ)) {
        if (m.data[5] == static_cast<guint8>(9 + 5 * 7))
          ok++;
        gst_memory_unmap(mem, &m);
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_map_calls(worker) - before, 1u);

  gst_memory_unmap(share, &c);
  gst_memory_unmap(mem, &b);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 1u);
  gst_memory_unmap(mem, &a);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u);

  EXPECT_TRUE(holds(share, 9, 16));
  gst_memory_unref(share);
  gst_memory_unref(mem);
}

TEST_F(PboTest, a_writer_is_exclusive_against_every_other_user_of_the_storage) {
  GstMemory *mem = alloc(512);
  ASSERT_NE(mem, nullptr);
  GstMemory *share = gst_memory_share(mem, 0, -1);
  ASSERT_NE(share, nullptr);
  const tensormem::Tensor *tensor = gst_tensor_mem_pbo_memory_get_tensor(mem);
  ASSERT_NE(tensor, nullptr);

  GstMapInfo w;
  ASSERT_TRUE(gst_memory_map(mem, &w, GST_MAP_WRITE));
  // A second write map of the same GstMemory (gst_video_frame_map maps once
  // per plane) shares the writer's acquisition.
  GstMapInfo w2;
  ASSERT_TRUE(gst_memory_map(mem, &w2, GST_MAP_WRITE));
  EXPECT_EQ(w2.data, w.data);
  gst_memory_unmap(mem, &w2);

  GstMapInfo r;
  EXPECT_FALSE(gst_memory_map(share, &r, GST_MAP_READ)) << "a reader while the writer holds the PBO";
  auto core = tensor->try_map(tensormem::CpuAccess::Read);
  ASSERT_FALSE(core);
  EXPECT_EQ(core.error().kind(), tensormem::ErrorKind::Mapped);
  std::memset(w.data, 0x5a, w.size);
  gst_memory_unmap(mem, &w);

  ASSERT_TRUE(gst_memory_map(share, &r, GST_MAP_READ));
  EXPECT_EQ(r.data[511], 0x5a);
  GstMapInfo w3;
  EXPECT_FALSE(gst_memory_map(mem, &w3, GST_MAP_WRITE)) << "a writer while a reader holds the PBO";
  gst_memory_unmap(share, &r);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u);

  gst_memory_unref(share);
  gst_memory_unref(mem);
}

TEST_F(PboTest, copy_makes_a_new_gl_buffer_with_the_same_bytes) {
  GstMemory *mem = alloc(300);
  ASSERT_NE(mem, nullptr);
  fill(mem, 1);
  GstMemory *copy = gst_memory_copy(mem, 100, 50);
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(copy));
  EXPECT_NE(gst_tensor_mem_pbo_memory_get_buffer_id(copy), gst_tensor_mem_pbo_memory_get_buffer_id(mem));
  EXPECT_EQ(copy->size, 50u);
  EXPECT_TRUE(holds(copy, 1, 100));
  gsize offset = 0;
  GstMemory *left = gst_memory_share(mem, 0, 100);
  GstMemory *right = gst_memory_share(mem, 100, 200);
  EXPECT_TRUE(gst_memory_is_span(left, right, &offset));
  EXPECT_FALSE(gst_memory_is_span(left, copy, &offset));
  gst_memory_unref(left);
  gst_memory_unref(right);
  gst_memory_unref(copy);
  gst_memory_unref(mem);
}

TEST_F(PboTest, prefix_padding_and_zero_flags_are_honoured) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.prefix = 32;
  params.padding = 16;
  params.align = 63;
  params.flags = static_cast<GstMemoryFlags>(GST_MEMORY_FLAG_ZERO_PREFIXED | GST_MEMORY_FLAG_ZERO_PADDED);
  GstMemory *mem = gst_allocator_alloc(allocator, 100, &params);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->offset, 32u);
  EXPECT_EQ(mem->size, 100u);
  EXPECT_EQ(mem->maxsize, 148u);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_READ));
  EXPECT_EQ(reinterpret_cast<guintptr>(map.data - mem->offset) % 64, 0u);
  for (gsize i = 0; i < 32; ++i)
    ASSERT_EQ((map.data - 32)[i], 0) << i;
  for (gsize i = 0; i < 16; ++i)
    ASSERT_EQ(map.data[100 + i], 0) << i;
  gst_memory_unmap(mem, &map);
  gst_memory_unref(mem);

  GstMemory *empty = gst_allocator_alloc(allocator, 0, nullptr);
  ASSERT_NE(empty, nullptr) << "a zero-byte memory is legal (a one-byte GL buffer behind it)";
  EXPECT_EQ(empty->size, 0u);
  gst_memory_unref(empty);
}

TEST_F(PboTest, bad_requests_are_refused_without_a_gl_buffer) {
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 127;
  EXPECT_EQ(gst_allocator_alloc(allocator, 64, &params), nullptr) << "alignment beyond GL's 64 bytes";
  gst_allocation_params_init(&params);
  params.prefix = G_MAXSIZE - 4;
  EXPECT_EQ(gst_allocator_alloc(allocator, 64, &params), nullptr) << "prefix + size overflows";
  // Beyond GLsizeiptr, or more than the driver gives: refused with a warning, no crash.
  EXPECT_EQ(gst_allocator_alloc(allocator, G_MAXSIZE - 1, nullptr), nullptr);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u);
}

TEST_F(PboTest, memories_keep_their_worker_running_after_every_other_reference_goes) {
  GError *error = nullptr;
  GstTensorMemGlWorker *own = gst_tensor_mem_gl_worker_new(&error);
  ASSERT_NE(own, nullptr) << (error ? error->message : "");
  GstAllocator *own_allocator = gst_tensor_mem_pbo_allocator_new(own);
  GstMemory *mem = gst_allocator_alloc(own_allocator, 256, nullptr);
  ASSERT_NE(mem, nullptr);
  std::weak_ptr<tensormem::GlWorker> core = gst_tensor_mem_gl_worker_get_core_gl_worker(own);
  gst_object_unref(own_allocator);
  gst_object_unref(own);
  EXPECT_FALSE(core.expired()) << "the memory's allocator holds the worker";
  fill(mem, 4);
  EXPECT_TRUE(holds(mem, 4));
  gst_memory_unref(mem);
  EXPECT_TRUE(core.expired()) << "the last memory gone, the GL thread stops";
}

// ---- the buffer pool of PBO memory -----------------------------------------

namespace {

void expect_pbo_pool_buffers(GstAllocator *allocator, GstTensorMemGlWorker *worker, const char *caps_str) {
  GstVideoInfo info = tmtest::info_from_string(caps_str);
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_pbo(allocator);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(gst_tensor_mem_buffer_pool_get_storage(pool), GST_TENSOR_MEM_STORAGE_PBO);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 2, 0);
  gst_caps_unref(caps);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config)) << caps_str;
  config = gst_buffer_pool_get_config(pool);
  guint size = 0;
  GstAllocator *configured = nullptr;
  ASSERT_TRUE(gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr));
  ASSERT_TRUE(gst_buffer_pool_config_get_allocator(config, &configured, nullptr));
  EXPECT_EQ(configured, allocator);
  EXPECT_TRUE(gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META));
  gst_structure_free(config);

  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  EXPECT_EQ(gst_buffer_get_size(buffer), size);
  ASSERT_EQ(gst_buffer_n_memory(buffer), 1u);
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_PBO);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(mem), gst_tensor_mem_pbo_memory_get_tensor(mem));
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(meta, nullptr);
  for (guint p = 0; p < meta->n_planes; ++p)
    EXPECT_EQ(meta->stride[p] % GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN, 0) << caps_str << " plane " << p;

  // A frame map maps the one memory once per plane: one GL map for all of them.
  const guint64 before = gst_tensor_mem_gl_worker_get_map_calls(worker);
  GstVideoFrame frame;
  ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_READWRITE));
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_map_calls(worker) - before, 1u);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)) % 64, 0u) << "plane " << p;
  gst_video_frame_unmap(&frame);
  EXPECT_EQ(gst_tensor_mem_gl_worker_get_mapped_buffers(worker), 0u);
  tmtest::fill_frame(buffer, &info, 7);
  GstBuffer *copy = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  tmtest::fill_frame(copy, &info, 7);
  EXPECT_TRUE(tmtest::frames_equal(buffer, copy, &info));
  gst_buffer_unref(copy);

  gst_buffer_unref(buffer);
  EXPECT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

} // namespace

TEST_F(PboTest, pool_buffers_are_single_pbos_with_64_byte_strides) {
  for (const char *caps : {"video/x-raw,format=RGBA,width=33,height=17", "video/x-raw,format=NV12,width=33,height=17",
                           "video/x-raw,format=I420,width=21,height=9"})
    expect_pbo_pool_buffers(allocator, worker, caps);
}

TEST_F(PboTest, a_pbo_pool_needs_a_pbo_allocator) {
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=16,height=4");
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_PBO);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 256, 0, 0);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config)) << "no PBO allocator anywhere";

  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 256, 0, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, nullptr);
  EXPECT_TRUE(gst_buffer_pool_set_config(pool, config)) << "the config's PBO allocator is used";
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(buffer, 0)));
  gst_buffer_unref(buffer);
  EXPECT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);

  // A system allocator in the config of a PBO pool is replaced.
  GstBufferPool *pbo = gst_tensor_mem_buffer_pool_new_for_pbo(allocator);
  config = gst_buffer_pool_get_config(pbo);
  gst_buffer_pool_config_set_params(config, caps, 256, 0, 0);
  GstAllocator *system = gst_tensor_mem_system_allocator_get();
  gst_buffer_pool_config_set_allocator(config, system, nullptr);
  gst_object_unref(system);
  EXPECT_TRUE(gst_buffer_pool_set_config(pbo, config));
  config = gst_buffer_pool_get_config(pbo);
  GstAllocator *configured = nullptr;
  gst_buffer_pool_config_get_allocator(config, &configured, nullptr);
  EXPECT_EQ(configured, allocator);
  gst_structure_free(config);
  gst_object_unref(pbo);
  gst_caps_unref(caps);
}

// ---- the GL worker shared through GstContext --------------------------------

namespace {

/* A pass-through element that needs a GL worker from READY on, wired to the
 * context helpers the way tensorupload is. */
struct TmGlProbe {
  GstElement parent;
  GstPad *sinkpad;
  GstPad *srcpad;
  GstTensorMemGlWorker *worker; // guarded by the object lock
};
struct TmGlProbeClass {
  GstElementClass parent_class;
};

GType tm_gl_probe_get_type();
#define TM_GL_PROBE(obj) (G_TYPE_CHECK_INSTANCE_CAST((obj), tm_gl_probe_get_type(), TmGlProbe))

G_DEFINE_TYPE(TmGlProbe, tm_gl_probe, GST_TYPE_ELEMENT)

GstStaticPadTemplate probe_sink = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
GstStaticPadTemplate probe_src = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

gboolean probe_query(GstPad *pad, GstObject *parent, GstQuery *query) {
  auto *self = TM_GL_PROBE(parent);
  if (gst_tensor_mem_gl_worker_handle_context_query(GST_ELEMENT(self), query, &self->worker))
    return TRUE;
  return gst_pad_query_default(pad, parent, query);
}

GstFlowReturn probe_chain(GstPad *, GstObject *parent, GstBuffer *buffer) {
  return gst_pad_push(TM_GL_PROBE(parent)->srcpad, buffer);
}

void probe_set_context(GstElement *element, GstContext *context) {
  gst_tensor_mem_gl_worker_handle_set_context(element, context, &TM_GL_PROBE(element)->worker);
  GST_ELEMENT_CLASS(tm_gl_probe_parent_class)->set_context(element, context);
}

GstStateChangeReturn probe_change_state(GstElement *element, GstStateChange transition) {
  auto *self = TM_GL_PROBE(element);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY) {
    GError *error = nullptr;
    if (!gst_tensor_mem_gl_worker_ensure(element, &self->worker, &error)) {
      GST_ELEMENT_ERROR(element, RESOURCE, FAILED, ("%s", error->message), (nullptr));
      g_clear_error(&error);
      return GST_STATE_CHANGE_FAILURE;
    }
  }
  GstStateChangeReturn ret = GST_ELEMENT_CLASS(tm_gl_probe_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    GST_OBJECT_LOCK(self);
    GstTensorMemGlWorker *old = self->worker;
    self->worker = nullptr;
    GST_OBJECT_UNLOCK(self);
    if (old)
      gst_object_unref(old);
  }
  return ret;
}

void probe_finalize(GObject *object) {
  gst_clear_object(&TM_GL_PROBE(object)->worker);
  G_OBJECT_CLASS(tm_gl_probe_parent_class)->finalize(object);
}

void tm_gl_probe_class_init(TmGlProbeClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = probe_finalize;
  auto *element_class = GST_ELEMENT_CLASS(klass);
  element_class->set_context = probe_set_context;
  element_class->change_state = probe_change_state;
  gst_element_class_add_static_pad_template(element_class, &probe_sink);
  gst_element_class_add_static_pad_template(element_class, &probe_src);
  gst_element_class_set_static_metadata(element_class, "GL probe", "Testing", "needs a GL worker", "tests");
}

void tm_gl_probe_init(TmGlProbe *self) {
  self->sinkpad = gst_pad_new_from_static_template(&probe_sink, "sink");
  gst_pad_set_chain_function(self->sinkpad, probe_chain);
  gst_pad_set_query_function(self->sinkpad, probe_query);
  GST_PAD_SET_PROXY_CAPS(self->sinkpad);
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template(&probe_src, "src");
  gst_pad_set_query_function(self->srcpad, probe_query);
  GST_PAD_SET_PROXY_CAPS(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
}

void register_probe() {
  static bool done = false;
  if (!done) {
    done = true;
    gst_element_register(nullptr, "tmglprobe", GST_RANK_NONE, tm_gl_probe_get_type());
  }
}

GstTensorMemGlWorker *probe_worker(GstElement *pipeline, const char *name) {
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
  EXPECT_NE(element, nullptr) << name;
  if (!element)
    return nullptr;
  auto *self = TM_GL_PROBE(element);
  GST_OBJECT_LOCK(self);
  GstTensorMemGlWorker *worker = self->worker;
  GST_OBJECT_UNLOCK(self);
  gst_object_unref(element);
  return worker;
}

using tmtest::ContextWatch;

class GlContextTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!shared_worker(&why))
      GTEST_SKIP() << "no headless GL here: " << why;
    register_probe();
  }

  static GstElement *launch(const char *description, ContextWatch *watch) {
    watch->type = GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE;
    return tmtest::launch_watched(description, watch);
  }

  static void stop(GstElement *pipeline) { tmtest::stop_watched(pipeline); }
};

} // namespace

TEST_F(GlContextTest, two_linked_elements_share_one_worker_through_a_context_query) {
  ContextWatch watch;
  GstElement *pipeline = launch("fakesrc num-buffers=1 ! tmglprobe name=a ! tmglprobe name=b ! fakesink", &watch);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemGlWorker *a = probe_worker(pipeline, "a");
  GstTensorMemGlWorker *b = probe_worker(pipeline, "b");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  // b (downstream, first to READY) asked the pipeline and made the worker;
  // a found it by querying its neighbour.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  std::weak_ptr<tensormem::GlWorker> core = gst_tensor_mem_gl_worker_get_core_gl_worker(a);

  GstElement *ea = gst_bin_get_by_name(GST_BIN(pipeline), "a");
  GstContext *context = gst_element_get_context(ea, GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE);
  ASSERT_NE(context, nullptr) << "the element reports the context it uses";
  GstTensorMemGlWorker *from_context = nullptr;
  EXPECT_TRUE(gst_context_get_tensor_mem_gl_worker(context, &from_context));
  EXPECT_EQ(from_context, a);
  gst_clear_object(&from_context);
  gst_context_unref(context);
  gst_object_unref(ea);

  stop(pipeline);
  EXPECT_TRUE(core.expired()) << "back in NULL, nothing holds the pipeline's own worker";
}

TEST_F(GlContextTest, unlinked_elements_share_one_worker_through_the_bin) {
  ContextWatch watch;
  GstElement *pipeline = launch("fakesrc ! tmglprobe name=a ! fakesink  fakesrc ! tmglprobe name=b ! fakesink", &watch);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemGlWorker *a = probe_worker(pipeline, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, probe_worker(pipeline, "b"));
  // The second element's need-context was answered by the bin, not posted on.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  stop(pipeline);
}

TEST_F(GlContextTest, an_application_worker_set_on_the_pipeline_is_used) {
  std::string why;
  GstTensorMemGlWorker *app = shared_worker(&why);
  ContextWatch watch;
  GstElement *pipeline = launch("fakesrc ! tmglprobe name=a ! tmglprobe name=b ! fakesink", &watch);
  GstContext *context = gst_context_new_tensor_mem_gl_worker(app, TRUE);
  gst_element_set_context(pipeline, context);
  gst_context_unref(context);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(probe_worker(pipeline, "a"), app);
  EXPECT_EQ(probe_worker(pipeline, "b"), app);
  EXPECT_EQ(watch.need, 0);
  EXPECT_EQ(watch.have, 0);
  stop(pipeline);
}

TEST_F(GlContextTest, an_application_answering_need_context_provides_the_worker) {
  std::string why;
  GstTensorMemGlWorker *app = shared_worker(&why);
  ContextWatch watch;
  watch.answer = gst_context_new_tensor_mem_gl_worker(app, TRUE);
  GstElement *pipeline = launch("fakesrc ! tmglprobe name=a ! tmglprobe name=b ! fakesink", &watch);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(probe_worker(pipeline, "a"), app);
  EXPECT_EQ(probe_worker(pipeline, "b"), app);
  EXPECT_EQ(watch.need, 1) << "b asked; a found the worker on b";
  EXPECT_EQ(watch.have, 0);
  stop(pipeline);
  gst_context_unref(watch.answer);
}

TEST_F(GlContextTest, contexts_of_other_types_or_without_a_worker_are_ignored) {
  GstContext *other = gst_context_new("some.other.type", FALSE);
  EXPECT_FALSE(gst_context_get_tensor_mem_gl_worker(other, nullptr));
  gst_context_unref(other);
  GstContext *empty = gst_context_new(GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE, FALSE);
  GstTensorMemGlWorker *worker = reinterpret_cast<GstTensorMemGlWorker *>(0x1);
  EXPECT_FALSE(gst_context_get_tensor_mem_gl_worker(empty, &worker));
  EXPECT_EQ(worker, nullptr);

  register_probe();
  GstElement *probe = gst_element_factory_make("tmglprobe", nullptr);
  ASSERT_NE(probe, nullptr);
  GstTensorMemGlWorker *slot = nullptr;
  EXPECT_FALSE(gst_tensor_mem_gl_worker_handle_set_context(probe, empty, &slot));
  EXPECT_EQ(slot, nullptr);
  GstQuery *query = gst_query_new_context(GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE);
  EXPECT_FALSE(gst_tensor_mem_gl_worker_handle_context_query(probe, query, &slot)) << "no worker, no answer";
  gst_query_unref(query);
  gst_object_unref(probe);
  gst_context_unref(empty);
}
