// SPDX-License-Identifier: Apache-2.0
// The backend table's contract, run for every family of the table: a new
// storage family is tested by adding its entry. Each family must be found
// from its caps and its memory, reach the pad templates, allocate through
// an element's backend and a pool of its own, let buffers come back to that
// pool, map for the CPU, cut windows that share its bytes, hold batches
// (the batch store's allocations, slots and recycling), and be ready for a
// CUDA import (with the fake runtime, in the -cuda variant).
#include "test_util.hpp"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbatchstore-private.h>
#include <gst/tensormem/gsttensorcudameta.hpp>
#include <gst/tensormem/gsttensorstorage-private.h>
#include <gst/tensormem/tensormem.h>

#include <gtest/gtest.h>
#include <tensormem/internal/cuda_d3d11.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace {

using gst_tensormem::Backend;

// D3D11 runs on the software reference device off Windows.
const bool g_software_d3d11 = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

constexpr const char *kFrameCaps =
    "video/x-raw, format=(string)RGBA, width=(int)64, height=(int)16, framerate=(fraction)30/1";

std::string family_name(const testing::TestParamInfo<std::size_t> &info) {
  return gst_tensormem::storage_nick(gst_tensormem::backend_at(info.param).storage);
}

bool caps_contain_structure(GstCaps *caps, GstCaps *one) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstCaps *at = gst_caps_copy_nth(caps, i);
    const bool same = gst_caps_is_equal(at, one);
    gst_caps_unref(at);
    if (same)
      return true;
  }
  return false;
}

/* One family's element backend, started, with a pool of its memory for
 * 64x16 RGBA frames; the test skips (saying why) where the family cannot
 * run here. */
class BackendTable : public testing::TestWithParam<std::size_t> {
protected:
  /* This program holds the library's objects itself (it reaches what the
   * shared library keeps local), so it registers their elements as an
   * application that links GStreamer statically would; its environment has
   * no plugin path, so the shared library is never loaded beside them. */
  static void SetUpTestSuite() {
    static const gboolean registered = gst_plugin_register_static(
        GST_VERSION_MAJOR, GST_VERSION_MINOR, "tensormem", "this project's elements, linked in",
        gst_tensor_mem_register_elements, "0", "Apache 2.0", "gst-tensormem", "gst-tensormem",
        "https://github.com/gst-tensormem/gst-tensormem");
    ASSERT_TRUE(registered);
  }

  void SetUp() override {
    ASSERT_TRUE(g_software_d3d11);
    family_ = &gst_tensormem::backend_at(GetParam());
    element_ = gst_element_factory_make("identity", nullptr);
    ASSERT_NE(element_, nullptr);
    gst_object_ref_sink(element_);
    bus_ = gst_bus_new();
    gst_element_set_bus(element_, bus_);
    backend_ = new gst_tensormem::ElementBackend(element_, family_->storage);
    if (!backend_->open() || !backend_->start()) {
      GstMessage *msg = gst_bus_pop_filtered(bus_, GST_MESSAGE_ERROR);
      const std::string why = msg ? tmtest::problem_text(msg) : std::string("no message");
      if (msg)
        gst_message_unref(msg);
      GTEST_SKIP() << family_->memory_name << " memory cannot be made here: " << why;
    }
    caps_ = gst_caps_from_string(kFrameCaps);
    if (family_->caps_feature) {
      GstCaps *featured = gst_tensormem::caps_with_feature(caps_, family_->caps_feature);
      gst_caps_unref(caps_);
      caps_ = featured;
    }
    GstAllocator *allocator = backend_->allocator();
    ASSERT_NE(allocator, nullptr);
    EXPECT_TRUE(G_TYPE_CHECK_INSTANCE_TYPE(allocator, family_->allocator_type()));
    pool_ = gst_tensormem::backend_make_pool(*family_, element_, allocator, caps_, 64 * 16 * 4, 1, 2, &size_);
    gst_object_unref(allocator);
    ASSERT_NE(pool_, nullptr) << family_->memory_name;
    ASSERT_TRUE(gst_buffer_pool_set_active(pool_, TRUE));
  }

  void TearDown() override {
    if (pool_) {
      gst_buffer_pool_set_active(pool_, FALSE);
      gst_object_unref(pool_);
    }
    if (caps_)
      gst_caps_unref(caps_);
    if (backend_) {
      backend_->stop();
      backend_->close();
      delete backend_;
    }
    if (element_) {
      gst_element_set_bus(element_, nullptr);
      gst_object_unref(element_);
    }
    if (bus_)
      gst_object_unref(bus_);
  }

  GstBuffer *acquire() {
    GstBuffer *buffer = nullptr;
    EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr), GST_FLOW_OK);
    return buffer;
  }

  const Backend *family_ = nullptr;
  GstElement *element_ = nullptr;
  GstBus *bus_ = nullptr;
  gst_tensormem::ElementBackend *backend_ = nullptr;
  GstCaps *caps_ = nullptr;
  GstBufferPool *pool_ = nullptr;
  guint size_ = 0;
};

TEST(BackendTableEntries, EveryFamilyFillsTheEntriesEveryElementUses) {
  for (std::size_t i = 0; i < gst_tensormem::kBackendCount; ++i) {
    const Backend &family = gst_tensormem::backend_at(i);
    SCOPED_TRACE(family.memory_name);
    EXPECT_EQ(&gst_tensormem::backend_for(family.storage), &family);
    EXPECT_EQ(gst_tensormem::storage_of_kind(family.kind), family.storage);
    EXPECT_NE(family.new_allocator, nullptr);
    EXPECT_NE(family.allocator_type, nullptr);
    EXPECT_NE(family.new_pool, nullptr);
    EXPECT_NE(family.new_window, nullptr);
    EXPECT_NE(family.owns_memory, nullptr);
    // A family with a shared device also answers for it through GstContext.
    EXPECT_EQ(family.ensure_device != nullptr, family.handle_set_context != nullptr);
    // Only DMA-BUF memory wraps another producer's DMA-BUF fds.
    EXPECT_EQ(family.wraps_dmabuf_fds,
              family.caps_feature != nullptr && g_str_equal(family.caps_feature, GST_CAPS_FEATURE_MEMORY_DMABUF));
    // The GL pass writes GL objects of a device, named by a caps feature.
    if (family.written_by_gl_pass) {
      EXPECT_NE(family.ensure_device, nullptr);
      EXPECT_NE(family.caps_feature, nullptr);
    }
    for (std::size_t j = 0; j < i; ++j) {
      const Backend &other = gst_tensormem::backend_at(j);
      EXPECT_NE(&other, &family);
      if (family.caps_feature && other.caps_feature) {
        EXPECT_STRNE(family.caps_feature, other.caps_feature);
      }
    }
  }
}

TEST(BackendTableEntries, OneFamilyIsWrittenByTheGlPass) {
  std::size_t written = 0;
  for (std::size_t i = 0; i < gst_tensormem::kBackendCount; ++i)
    written += gst_tensormem::backend_at(i).written_by_gl_pass ? 1 : 0;
  EXPECT_EQ(written, 1u);
  const Backend *gl = gst_tensormem::gl_pass_backend();
  if (GST_TENSOR_MEM_HAVE_GL) {
    ASSERT_NE(gl, nullptr);
    EXPECT_TRUE(gl->written_by_gl_pass);
  } else {
    EXPECT_EQ(gl, nullptr) << "a build without GL has no GL pass";
  }
}

TEST_P(BackendTable, IsFoundFromItsCapsAndReachesThePadTemplates) {
  EXPECT_EQ(gst_tensormem::backend_of_caps(caps_, 0), family_);
  GstCaps *all = gst_tensormem::template_caps(kFrameCaps, gst_tensormem::TemplateFamilies::All);
  GstCaps *readable = gst_tensormem::template_caps(kFrameCaps, gst_tensormem::TemplateFamilies::CpuReadable);
  EXPECT_TRUE(caps_contain_structure(all, caps_));
  EXPECT_EQ(caps_contain_structure(readable, caps_), family_->maps_as_system);
  EXPECT_EQ(gst_caps_get_size(all), gst_tensormem::kBackendCount + (GST_TENSOR_MEM_DMA_DRM_STRUCTURE[0] ? 1 : 0));
  gst_caps_unref(all);
  gst_caps_unref(readable);
  // The elements' templates come from the table: tensordownload takes this
  // family's frames; tensorupload makes them.
  for (const char *factory_name : {"tensordownload", "tensorupload"}) {
    GstElementFactory *factory = gst_element_factory_find(factory_name);
    ASSERT_NE(factory, nullptr) << factory_name;
    const GstPadDirection direction = g_str_equal(factory_name, "tensorupload") ? GST_PAD_SRC : GST_PAD_SINK;
    bool found = false;
    for (const GList *l = gst_element_factory_get_static_pad_templates(factory); l; l = l->next) {
      auto *tmpl = static_cast<GstStaticPadTemplate *>(l->data);
      if (tmpl->direction != direction)
        continue;
      GstCaps *caps = gst_static_caps_get(&tmpl->static_caps);
      found = gst_caps_can_intersect(caps, caps_);
      gst_caps_unref(caps);
    }
    EXPECT_TRUE(found) << factory_name << " has no " << family_->memory_name << " frames in its template";
    gst_object_unref(factory);
  }
  // tensorconvert's tensors: plain caps (the CPU path), and the GL pass's
  // family by its feature; no other featured family.
  GstElement *convert = gst_element_factory_make("tensorconvert", nullptr);
  ASSERT_NE(convert, nullptr);
  GstPad *src = gst_element_get_static_pad(convert, "src");
  GstCaps *tensors = gst_pad_get_pad_template_caps(src);
  gst_object_unref(src);
  gchar *listed = gst_caps_to_string(tensors);
  GstCaps *mine = gst_caps_from_string("other/tensors, format=(string)static, num_tensors=(int)1, types=(string)uint8");
  if (family_->caps_feature) {
    GstCaps *featured = gst_tensormem::caps_with_feature(mine, family_->caps_feature);
    gst_caps_unref(mine);
    mine = featured;
  }
  const bool written = !family_->caps_feature || (family_->written_by_gl_pass && GST_TENSOR_MEM_HAVE_GL);
  EXPECT_EQ(gst_caps_can_intersect(tensors, mine), written) << listed;
  g_free(listed);
  gst_caps_unref(mine);
  gst_caps_unref(tensors);
  gst_object_unref(convert);
}

TEST_P(BackendTable, ItsPoolGivesItsMemoryAndTakesBuffersBack) {
  GstBuffer *buffer = acquire();
  ASSERT_NE(buffer, nullptr);
  ASSERT_GE(gst_buffer_n_memory(buffer), 1u);
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  EXPECT_EQ(gst_tensormem::backend_of_memory(mem), family_);
  for (std::size_t i = 0; i < gst_tensormem::kBackendCount; ++i) {
    const Backend &other = gst_tensormem::backend_at(i);
    EXPECT_EQ(bool(other.owns_memory(mem)), &other == family_) << other.memory_name;
  }
  // Not our memory: no family.
  GstMemory *foreign = gst_allocator_alloc(nullptr, 64, nullptr);
  EXPECT_EQ(gst_tensormem::backend_of_memory(foreign), nullptr);
  gst_memory_unref(foreign);

  const GstMemory *first = mem;
  gst_buffer_unref(buffer);
  buffer = acquire();
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(gst_buffer_peek_memory(buffer, 0), first) << "the pool made new memory instead of recycling";
  gst_buffer_unref(buffer);
}

TEST_P(BackendTable, MapsForTheCpuAndCutsWindowsOverTheSameBytes) {
  GstBuffer *buffer = acquire();
  ASSERT_NE(buffer, nullptr);
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  ASSERT_GE(mem->size, 1024u);
  std::vector<guint8> pattern(mem->size);
  for (std::size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<guint8>(i * 7 + 3);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_WRITE));
  std::memcpy(map.data, pattern.data(), pattern.size());
  gst_memory_unmap(mem, &map);

  constexpr gsize kOffset = 256, kSize = 512;
  GstMemory *window = gst_tensormem::memory_new_window(mem, kOffset, kSize);
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(gst_tensormem::backend_of_memory(window), family_);
  EXPECT_EQ(window->size, kSize);
  EXPECT_EQ(window->parent, nullptr);
  ASSERT_TRUE(gst_memory_map(window, &map, GST_MAP_READWRITE));
  EXPECT_EQ(std::memcmp(map.data, pattern.data() + kOffset, kSize), 0) << "the window shows other bytes";
  std::memset(map.data, 0xA5, 16);
  gst_memory_unmap(window, &map);
  gst_memory_unref(window);

  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_READ));
  EXPECT_EQ(map.data[kOffset], 0xA5) << "a write through the window did not reach the memory";
  EXPECT_EQ(map.data[kOffset + 15], 0xA5);
  EXPECT_EQ(map.data[kOffset + 16], pattern[kOffset + 16]);
  EXPECT_EQ(map.data[kOffset - 1], pattern[kOffset - 1]);
  gst_memory_unmap(mem, &map);

  EXPECT_EQ(gst_tensormem::memory_new_window(mem, mem->size - 8, 16), nullptr) << "a window past the end";
  EXPECT_EQ(gst_tensormem::memory_new_window(mem, 0, 0), nullptr) << "an empty window";
  gst_buffer_unref(buffer);
}

/* A batch of four 256-byte slots in the family's memory: every slot is
 * written through its own window (at once, where the storage's bytes map
 * as system memory: each stream writes its slot while the others write
 * theirs) or by the CPU through the store; the whole batch is one memory of
 * the family with every slot's bytes; the allocation comes back to the
 * store when its last window goes, is handed out again for the same
 * layout, is not while a reader still reads it, and is let go for another
 * layout. */
TEST_P(BackendTable, HoldsBatchesTheStoreRecycles) {
  constexpr gsize kSlot = 256;
  constexpr guint kSlots = 4;
  GstObject *device = backend_->device();
  std::shared_ptr<gst_tensormem::BatchStore> store = gst_tensormem::BatchStore::create(2);
  gst_tensormem::BatchAllocation *a = store->acquire(*family_, device, kSlot, kSlots);
  // tensorbatch's templates offer this family's tensors exactly where the
  // table says it holds batches.
  GstCaps *tensors = gst_caps_from_string("other/tensors, format=(string)static, num_tensors=(int)1");
  GstCaps *featured = gst_tensormem::caps_with_feature(tensors, family_->caps_feature);
  gst_caps_unref(tensors);
  GstElementFactory *factory = gst_element_factory_find("tensorbatch");
  ASSERT_NE(factory, nullptr);
  int offered = 0;
  for (const GList *l = gst_element_factory_get_static_pad_templates(factory); l; l = l->next) {
    GstCaps *caps = gst_static_caps_get(&static_cast<GstStaticPadTemplate *>(l->data)->static_caps);
    // Features must match exactly: plain caps would take any memory's as a
    // subset. Tensors only: the video frames tensorbatch also takes (1.28)
    // are of any memory (ANY), their tensor in the family of its setting.
    for (guint i = 0; i < gst_caps_get_size(caps); ++i)
      if (gst_structure_has_name(gst_caps_get_structure(caps, i), "other/tensors") &&
          gst_caps_features_is_equal(gst_caps_get_features(caps, i), gst_caps_get_features(featured, 0)))
        ++offered;
    gst_caps_unref(caps);
  }
  gst_object_unref(factory);
  gst_caps_unref(featured);
  EXPECT_EQ(offered, family_->holds_batches ? 2 : 0) << "sink_%u and src of tensorbatch";
  if (!family_->holds_batches) {
    // Textures are allocated with a frame's shape, never as flat bytes: the
    // store says no.
    EXPECT_EQ(a, nullptr);
    if (a)
      gst_tensormem::batch_allocation_unref(a);
    if (device)
      gst_object_unref(device);
    return;
  }
  ASSERT_NE(a, nullptr) << family_->memory_name;
  EXPECT_EQ(gst_tensormem::batch_allocation_slot_bytes(a), kSlot);
  EXPECT_EQ(gst_tensormem::batch_allocation_n_slots(a), kSlots);

  GstBuffer *slots[2] = {};
  GstMapInfo maps[2];
  for (guint i = 0; i < 2; ++i) {
    GstMemory *window = gst_tensormem::batch_window(a, 7, i, i * kSlot, kSlot);
    ASSERT_NE(window, nullptr) << "slot " << i;
    slots[i] = gst_buffer_new();
    gst_buffer_append_memory(slots[i], window);
    const gst_tensormem::BatchWindowTag *tag = gst_tensormem::batch_window_tag(slots[i]);
    ASSERT_NE(tag, nullptr);
    EXPECT_EQ(tag->allocation, a);
    EXPECT_EQ(tag->seq, 7u);
    EXPECT_EQ(tag->slot, i);
  }
  if (family_->maps_as_system) { // both slots mapped for writing at once
    for (guint i = 0; i < 2; ++i)
      ASSERT_TRUE(gst_buffer_map(slots[i], &maps[i], GST_MAP_WRITE)) << "slot " << i;
    for (guint i = 0; i < 2; ++i) {
      std::memset(maps[i].data, 0x10 + static_cast<int>(i), kSlot);
      gst_buffer_unmap(slots[i], &maps[i]);
    }
  } else {
    for (guint i = 0; i < 2; ++i) {
      ASSERT_TRUE(gst_buffer_map(slots[i], &maps[i], GST_MAP_WRITE)) << "slot " << i;
      std::memset(maps[i].data, 0x10 + static_cast<int>(i), kSlot);
      gst_buffer_unmap(slots[i], &maps[i]);
    }
  }
  for (guint i = 2; i < kSlots; ++i)
    ASSERT_TRUE(gst_tensormem::batch_write_on_cpu(
        a, i * kSlot, kSlot, [i](std::byte *to) { std::memset(to, 0x10 + static_cast<int>(i), kSlot); }));
  for (GstBuffer *slot : slots)
    gst_buffer_unref(slot);

  GstMemory *whole = gst_tensormem::batch_window(a, 7, gst_tensormem::kBatchWhole, 0, kSlot * kSlots);
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(family_->owns_memory(whole)) << "the whole batch is the family's memory";
  GstBuffer *batch = gst_buffer_new();
  gst_buffer_append_memory(batch, whole);
  GstMapInfo read;
  ASSERT_TRUE(gst_buffer_map(batch, &read, GST_MAP_READ));
  for (guint i = 0; i < kSlots; ++i)
    for (gsize b = 0; b < kSlot; b += 31)
      ASSERT_EQ(read.data[i * kSlot + b], 0x10 + i) << "slot " << i << " byte " << b;
  gst_buffer_unmap(batch, &read);

  // Windows hold the allocation: it returns when the last one goes.
  gst_tensormem::batch_allocation_unref(a);
  EXPECT_EQ(store->kept(), 0u);
  // A reader that outlives the batch keeps it from reuse until it is done:
  // the batch is tensor memory, so the read is recorded on its storage.
  GError *error = nullptr;
  GstTensorMemReadCompletion *reading = gst_buffer_begin_tensor_mem_read(batch, &error);
  EXPECT_NE(reading, nullptr) << (error ? error->message : "");
  g_clear_error(&error);
  gst_buffer_unref(batch);
  EXPECT_EQ(store->kept(), 1u);
  gst_tensormem::BatchAllocation *b = store->acquire(*family_, device, kSlot, kSlots);
  ASSERT_NE(b, nullptr);
  if (reading) {
    EXPECT_NE(b, a) << "an allocation still being read was handed out again";
    gst_tensor_mem_read_completion_done(reading);
    gst_tensor_mem_read_completion_unref(reading);
    gst_tensormem::batch_allocation_unref(b);
    EXPECT_EQ(store->kept(), 2u);
    // Both come out again: the one read before among them.
    gst_tensormem::BatchAllocation *first = store->acquire(*family_, device, kSlot, kSlots);
    gst_tensormem::BatchAllocation *second = store->acquire(*family_, device, kSlot, kSlots);
    EXPECT_TRUE(first == a || second == a) << "the allocation read before never came back";
    EXPECT_EQ(store->kept(), 0u);
    gst_tensormem::batch_allocation_unref(first);
    gst_tensormem::batch_allocation_unref(second);
  } else {
    EXPECT_EQ(b, a) << "the allocation came back for the same layout";
    gst_tensormem::batch_allocation_unref(b);
  }
  // Another layout lets the kept ones go and makes a new one.
  gst_tensormem::BatchAllocation *c = store->acquire(*family_, device, kSlot * 2, kSlots);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(store->kept(), 0u);
  gst_tensormem::batch_allocation_unref(c);
  EXPECT_EQ(store->kept(), 1u);
  if (device)
    gst_object_unref(device);
}

// The -cuda variants (the fake runtime and driver): every family is readied
// and imported as tensorcudaimport does. What imports depends on the driver
// the fake emulates, as on hardware: a Jetson-class one
// (FAKE_CUDART_ACCEPT_DMABUF=1) takes DMA-BUF and GL buffers; a desktop
// one takes GL buffers but refuses DMA-BUF; D3D11 textures import only
// where CUDA runs on Windows (FAKE_CUDART_ACCEPT_D3D11=1). System memory has
// no import anywhere (consumers copy it).
TEST_P(BackendTable, CudaImportAfterTheFamilysPreparation) {
  if (!gst_tensor_mem_cuda_get_status(nullptr, nullptr, nullptr, nullptr))
    GTEST_SKIP() << "no CUDA here: run by the gst-backend-table-cuda variants with the fake runtime";
  auto env_is_1 = [](const char *name) {
    const char *value = g_getenv(name);
    return value && g_str_equal(value, "1");
  };
  const bool jetson = env_is_1("FAKE_CUDART_ACCEPT_DMABUF");
  const bool windows = env_is_1("FAKE_CUDART_ACCEPT_D3D11");
  bool expected = true;
  if (family_->storage == GST_TENSOR_MEM_STORAGE_SYSTEM)
    expected = false;
  else if (family_->storage == GST_TENSOR_MEM_STORAGE_DMABUF)
    expected = jetson;
  else if (family_->storage == GST_TENSOR_MEM_STORAGE_D3D11)
    expected = windows;
  GstBuffer *buffer = acquire();
  ASSERT_NE(buffer, nullptr);
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  gst_tensormem::prepare_cuda_import(buffer, mem);
  gboolean imported = FALSE;
  auto handle = gst_tensor_mem_memory_import_cuda(mem, &imported);
  if (!expected) {
    EXPECT_FALSE(handle) << family_->memory_name << " imported on a driver that has no such import";
    if (!handle) {
      EXPECT_FALSE(handle.error().message().empty());
    }
    gst_buffer_unref(buffer);
    return;
  }
  ASSERT_TRUE(handle) << family_->memory_name << ": " << handle.error().message();
  EXPECT_TRUE(imported);
  EXPECT_NE(gst_buffer_add_tensor_mem_cuda_meta(buffer, *handle, mem->offset, mem->size), nullptr);
  // Imported once: the second import finds the first.
  auto again = gst_tensor_mem_memory_import_cuda(mem, &imported);
  ASSERT_TRUE(again);
  EXPECT_FALSE(imported);
  EXPECT_EQ(again->get(), handle->get());
  gst_buffer_unref(buffer);
  // The D3D11 fence semaphore is process-wide by design (the fake's balance
  // check at exit counts it): let go of it, as the D3D11 CUDA tests do.
  if (family_->storage == GST_TENSOR_MEM_STORAGE_D3D11)
    tensormem::d3d11_cuda_reset_process_state_for_tests();
}

INSTANTIATE_TEST_SUITE_P(EveryFamily, BackendTable, testing::Range<std::size_t>(0, gst_tensormem::kBackendCount),
                         family_name);

} // namespace
