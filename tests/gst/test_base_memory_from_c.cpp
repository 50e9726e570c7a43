// SPDX-License-Identifier: Apache-2.0
/* The public create vfunc is implementable in C: a subclass written in C
 * (test_base_memory_c.c) gets every memory function of the base, its storage
 * is released through its own free function exactly once, after the last
 * memory over it, and a create that breaks the contract fails the allocation
 * without a leak. */
#include "test_base_memory_c.h"

#include <gtest/gtest.h>

#include <gst/tensormem/tensormem.hpp>

#include <tensormem/tensor.hpp>

#include <cstdint>
#include <initializer_list>

namespace {

guint8 pattern(gsize i) { return static_cast<guint8>(i * 13 + 1); }

void fill(GstMemory *mem) {
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_WRITE));
  for (gsize i = 0; i < info.size; ++i)
    info.data[i] = pattern(i);
  gst_memory_unmap(mem, &info);
}

/* Whether `mem` reads back pattern(from), pattern(from + 1), ... */
bool holds_pattern_from(GstMemory *mem, gsize from) {
  GstMapInfo info;
  if (!gst_memory_map(mem, &info, GST_MAP_READ))
    return false;
  bool same = true;
  for (gsize i = 0; i < info.size && same; ++i)
    same = info.data[i] == pattern(from + i);
  gst_memory_unmap(mem, &info);
  return same;
}

class CSubclass : public ::testing::Test {
protected:
  void SetUp() override { test_c_allocator_reset_counts(); }
  void TearDown() override { gst_clear_object(&allocator_); }

  /* The test's C allocator, made in `mode` on the first call. */
  GstAllocator *allocator(TestCAllocatorMode mode = TEST_C_ALLOCATOR_ALIGNED) {
    if (!allocator_)
      allocator_ = test_c_allocator_new(mode);
    return allocator_;
  }

  /* A memory of `size` bytes holding pattern(0), pattern(1), ...; NULL when
   * the allocation fails. */
  GstMemory *alloc_filled(gsize size) {
    GstMemory *mem = gst_allocator_alloc(allocator(), size, nullptr);
    if (mem)
      fill(mem);
    return mem;
  }

private:
  GstAllocator *allocator_ = nullptr;
};

TEST_F(CSubclass, AllocatesEverySizeAtTheAlignmentAskedAndMapsItsBytes) {
  int made = 0;
  for (gsize size : {1, 7, 64, 1000, 65536 + 3}) {
    for (gsize align : {0, 7, 15, 63}) {
      GstAllocationParams params;
      gst_allocation_params_init(&params);
      params.align = align;
      GstMemory *mem = gst_allocator_alloc(allocator(), size, &params);
      ASSERT_NE(mem, nullptr) << size << " bytes, mask " << align;
      ++made;
      EXPECT_TRUE(gst_is_tensor_mem_base_memory(mem));
      EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
      EXPECT_TRUE(gst_memory_is_type(mem, "TestCTensorMemory"));
      EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_SYSTEM);
      EXPECT_EQ(mem->size, size);
      fill(mem);
      GstMapInfo info;
      ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(info.data) & align, 0u) << size << " bytes, mask " << align;
      gst_memory_unmap(mem, &info);
      EXPECT_TRUE(holds_pattern_from(mem, 0));
      gst_memory_unref(mem);
      EXPECT_EQ(test_c_allocator_frees(), made) << "each storage goes with its only memory";
    }
  }
  EXPECT_EQ(test_c_allocator_creates(), made);
}

TEST_F(CSubclass, TheBaseZeroesThePrefixAndPaddingOnlyWhenAsked) {
  for (bool zeroed : {true, false}) {
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    params.prefix = 16;
    params.padding = 8;
    if (zeroed)
      params.flags = static_cast<GstMemoryFlags>(GST_MEMORY_FLAG_ZERO_PREFIXED | GST_MEMORY_FLAG_ZERO_PADDED);
    GstMemory *mem = gst_allocator_alloc(allocator(), 100, &params);
    ASSERT_NE(mem, nullptr);
    EXPECT_EQ(mem->offset, 16u);
    EXPECT_EQ(mem->maxsize, 124u);
    // The whole allocation, prefix and padding included.
    gst_memory_resize(mem, -16, 124);
    GstMapInfo info;
    ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
    ASSERT_EQ(info.size, 124u);
    const guint8 edge = zeroed ? 0 : TEST_C_ALLOCATOR_FILL;
    for (gsize i = 0; i < info.size; ++i) {
      const bool in_edge = i < 16 || i >= 116;
      ASSERT_EQ(info.data[i], in_edge ? edge : TEST_C_ALLOCATOR_FILL) << "byte " << i << (zeroed ? ", zeroed" : "");
    }
    gst_memory_unmap(mem, &info);
    gst_memory_unref(mem);
  }
}

/* Shares and windows hold the storage; a copy is a storage of its own. The
 * free function runs for each storage once, when its last memory goes. */
TEST_F(CSubclass, SharesCopiesAndWindowsReleaseEachStorageOnceAfterTheLastMemory) {
  GstMemory *mem = alloc_filled(256);
  ASSERT_NE(mem, nullptr);

  GstMemory *share = gst_memory_share(mem, 10, 20);
  ASSERT_NE(share, nullptr);
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(share));
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(share)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  EXPECT_TRUE(holds_pattern_from(share, 10));

  GstMemory *copy = gst_memory_copy(mem, 5, 50);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(test_c_allocator_creates(), 2) << "a copy is made by the same create";
  EXPECT_EQ(copy->allocator, allocator());
  EXPECT_NE(gst_tensor_mem_memory_get_tensor(copy)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  EXPECT_TRUE(holds_pattern_from(copy, 5));

  GstMemory *window = gst_tensor_mem_base_memory_new_window(mem, 64, 64);
  ASSERT_NE(window, nullptr);
  EXPECT_FALSE(GST_MEMORY_IS_READONLY(window));
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(window, &info, GST_MAP_WRITE));
  ASSERT_EQ(info.size, 64u);
  info.data[0] = 0xee;
  gst_memory_unmap(window, &info);
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_READ));
  EXPECT_EQ(info.data[64], 0xee) << "the window writes the memory's own bytes";
  gst_memory_unmap(mem, &info);
  EXPECT_EQ(gst_tensor_mem_base_memory_new_window(mem, 200, 100), nullptr);

  gst_memory_unref(mem);
  EXPECT_EQ(test_c_allocator_frees(), 0) << "the share and the window hold the storage";
  gst_memory_unref(share);
  EXPECT_EQ(test_c_allocator_frees(), 0) << "the window holds the storage";
  gst_memory_unref(window);
  EXPECT_EQ(test_c_allocator_frees(), 1);
  gst_memory_unref(copy);
  EXPECT_EQ(test_c_allocator_frees(), 2);
}

TEST_F(CSubclass, ABufferOfItsMemoryGoesThroughAPipeline) {
  GstMemory *mem = alloc_filled(4096);
  ASSERT_NE(mem, nullptr);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);

  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch("appsrc name=src ! fakesink name=sink signal-handoffs=true", &error);
  ASSERT_NE(pipeline, nullptr) << (error ? error->message : "");
  int handoffs = 0;
  bool intact = false;
  struct Seen {
    int *handoffs;
    bool *intact;
  } seen{&handoffs, &intact};
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_signal_connect(sink, "handoff", G_CALLBACK(+[](GstElement *, GstBuffer *buf, GstPad *, gpointer data) {
                     auto *s = static_cast<Seen *>(data);
                     ++*s->handoffs;
                     GstMemory *m = gst_buffer_peek_memory(buf, 0);
                     *s->intact = gst_buffer_n_memory(buf) == 1 && gst_memory_is_type(m, "TestCTensorMemory") &&
                                  holds_pattern_from(m, 0);
                   }),
                   &seen);
  gst_object_unref(sink);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstFlowReturn flow = GST_FLOW_ERROR;
  g_signal_emit_by_name(src, "push-buffer", buffer, &flow);
  EXPECT_EQ(flow, GST_FLOW_OK);
  gst_buffer_unref(buffer); // push-buffer took its own reference
  g_signal_emit_by_name(src, "end-of-stream", &flow);
  gst_object_unref(src);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr) << "no EOS in 10 s";
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);

  EXPECT_EQ(handoffs, 1);
  EXPECT_TRUE(intact) << "fakesink got the C allocator's memory with its bytes";
  EXPECT_EQ(test_c_allocator_frees(), 1) << "the storage goes with the pipeline's last reference";
}

TEST_F(CSubclass, AMisalignedStorageIsRefusedAndReleasedAtOnce) {
  allocator(TEST_C_ALLOCATOR_MISALIGNED);
  for (gsize align : {1, 15, 63}) {
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    params.align = align;
    EXPECT_EQ(gst_allocator_alloc(allocator(), 100, &params), nullptr) << "mask " << align;
  }
  EXPECT_EQ(test_c_allocator_creates(), 3);
  EXPECT_EQ(test_c_allocator_frees(), 3) << "a refused storage is not leaked";
}

TEST_F(CSubclass, ACreateThatMakesNothingFailsTheAllocation) {
  EXPECT_EQ(gst_allocator_alloc(allocator(TEST_C_ALLOCATOR_NOTHING), 100, nullptr), nullptr);
  EXPECT_EQ(test_c_allocator_creates(), 1);
  EXPECT_EQ(test_c_allocator_frees(), 0) << "nothing was made, nothing is released";
}

} // namespace
