// SPDX-License-Identifier: Apache-2.0
/* The abstract tensor allocator: what a storage gets from the base by filling
 * in create alone, what it gets by overriding one vfunc, and that the DMA-BUF
 * allocator joins the model through the interface only. */
#include <gtest/gtest.h>

#include <gst/allocators/gstdmabuf.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/tensor.hpp>

#include <atomic>
#include <cstring>

namespace {

/* A fourth storage, as a new backend would add one: host bytes made by
 * create, with map counted on the way to the base's. */
struct CountingAllocator {
  GstTensorMemBaseAllocator parent;
};
struct CountingAllocatorClass {
  GstTensorMemBaseAllocatorClass parent_class;
};

std::atomic<int> g_creates{0};
std::atomic<int> g_maps{0};

GType counting_allocator_get_type();
G_DEFINE_TYPE(CountingAllocator, counting_allocator, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR)

gpointer counting_create(GstTensorMemBaseAllocator *, gsize bytes, const GstAllocationParams *,
                         GDestroyNotify *free_func, gpointer *free_data) {
  ++g_creates;
  gpointer data = g_malloc0(bytes);
  *free_func = g_free;
  *free_data = data;
  return data;
}

gpointer counting_map(GstTensorMemBaseMemory *mem, GstMapInfo *info, gsize maxsize) {
  ++g_maps;
  return GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(counting_allocator_parent_class)->map(mem, info, maxsize);
}

void counting_allocator_class_init(CountingAllocatorClass *klass) {
  auto *base_class = GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass);
  base_class->create = counting_create;
  base_class->map = counting_map;
}

void counting_allocator_init(CountingAllocator *self) { GST_ALLOCATOR_CAST(self)->mem_type = "CountingTensorMemory"; }

/* Subclasses of the system allocator: one that leaves create alone and one
 * that fills it in. */
struct PlainSystemAllocator {
  GstTensorMemSystemAllocator parent;
};
struct PlainSystemAllocatorClass {
  GstTensorMemSystemAllocatorClass parent_class;
};
GType plain_system_allocator_get_type();
G_DEFINE_TYPE(PlainSystemAllocator, plain_system_allocator, GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR)
void plain_system_allocator_class_init(PlainSystemAllocatorClass *) {}
void plain_system_allocator_init(PlainSystemAllocator *) {}

struct CreatingSystemAllocator {
  GstTensorMemSystemAllocator parent;
};
struct CreatingSystemAllocatorClass {
  GstTensorMemSystemAllocatorClass parent_class;
};
GType creating_system_allocator_get_type();
G_DEFINE_TYPE(CreatingSystemAllocator, creating_system_allocator, GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR)
void creating_system_allocator_class_init(CreatingSystemAllocatorClass *klass) {
  GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass)->create = counting_create;
}
void creating_system_allocator_init(CreatingSystemAllocator *) {}

GstAllocator *new_allocator(GType type) {
  auto *allocator = static_cast<GstAllocator *>(g_object_new(type, nullptr));
  gst_object_ref_sink(allocator);
  return allocator;
}

void fill(GstMemory *mem) {
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(mem, &info, GST_MAP_WRITE));
  for (gsize i = 0; i < info.size; ++i)
    info.data[i] = static_cast<guint8>(i * 7 + 3);
  gst_memory_unmap(mem, &info);
}

TEST(TensorMemBase, IsAbstractAndTheParentOfTheSystemAndPboAllocators) {
  EXPECT_TRUE(G_TYPE_IS_ABSTRACT(GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR));
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, GST_TYPE_ALLOCATOR));
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, GST_TYPE_TENSOR_MEM_ALLOCATOR));
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR));
#if GST_TENSOR_MEM_HAVE_GL
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_PBO_ALLOCATOR, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR));
#endif
  // The DMA-BUF allocator keeps GStreamer's parent and joins by the interface.
  EXPECT_FALSE(g_type_is_a(GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR));
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR, GST_TYPE_DMABUF_ALLOCATOR));
  EXPECT_TRUE(g_type_is_a(GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR, GST_TYPE_TENSOR_MEM_ALLOCATOR));
}

TEST(TensorMemBase, SystemMemoryIsABaseMemoryAndDmaBufMemoryIsTensorMemoryOnly) {
  GstAllocator *system = gst_tensor_mem_system_allocator_get();
  GstMemory *mem = gst_allocator_alloc(system, 64, nullptr);
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_base_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  GstMemory *share = gst_memory_share(mem, 8, 16);
  ASSERT_NE(share, nullptr);
  EXPECT_TRUE(gst_is_tensor_mem_base_memory(share));
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(share)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  gst_memory_unref(share);
  gst_memory_unref(mem);
  gst_object_unref(system);

  GstAllocator *dmabuf = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *dmem = gst_allocator_alloc(dmabuf, 64, nullptr);
  ASSERT_NE(dmem, nullptr);
  EXPECT_FALSE(gst_is_tensor_mem_base_memory(dmem));
  EXPECT_TRUE(gst_is_tensor_mem_memory(dmem));
  EXPECT_TRUE(gst_is_dmabuf_memory(dmem));
  gst_memory_unref(dmem);
  gst_object_unref(dmabuf);

  EXPECT_FALSE(gst_is_tensor_mem_base_memory(nullptr));
  GstMemory *plain = gst_allocator_alloc(nullptr, 16, nullptr);
  EXPECT_FALSE(gst_is_tensor_mem_base_memory(plain));
  gst_memory_unref(plain);
}

/* A subclass that fills in create (and overrides map) gets alloc, map,
 * unmap, share, copy and is-span from the base, and is tensor memory. */
TEST(TensorMemBase, ASubclassFillingInCreateGetsEveryMemoryFunction) {
  GstAllocator *allocator = new_allocator(counting_allocator_get_type());
  g_creates = 0;
  g_maps = 0;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.prefix = 16;
  params.padding = 8;
  GstMemory *mem = gst_allocator_alloc(allocator, 100, &params);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(g_creates.load(), 1);
  EXPECT_TRUE(gst_is_tensor_mem_memory(mem));
  EXPECT_TRUE(gst_is_tensor_mem_base_memory(mem));
  EXPECT_TRUE(gst_memory_is_type(mem, "CountingTensorMemory"));
  EXPECT_EQ(gst_tensor_mem_memory_get_storage(mem), GST_TENSOR_MEM_STORAGE_SYSTEM);
  EXPECT_EQ(mem->offset, 16u);
  EXPECT_EQ(mem->size, 100u);
  EXPECT_EQ(mem->maxsize, 124u);
  fill(mem);
  EXPECT_EQ(g_maps.load(), 1);

  // A share: same storage, read-only, its maps go through the subclass too.
  GstMemory *share = gst_memory_share(mem, 10, 20);
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(share)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(share));
  GstMapInfo info;
  ASSERT_TRUE(gst_memory_map(share, &info, GST_MAP_READ));
  EXPECT_EQ(info.size, 20u);
  EXPECT_EQ(info.data[0], static_cast<guint8>(10 * 7 + 3));
  gst_memory_unmap(share, &info);
  EXPECT_EQ(g_maps.load(), 2);

  // Two back-to-back shares of one storage are a span.
  GstMemory *next = gst_memory_share(mem, 30, 10);
  ASSERT_NE(next, nullptr);
  gsize span_offset = 0;
  EXPECT_TRUE(gst_memory_is_span(share, next, &span_offset));
  EXPECT_EQ(span_offset, 10u);

  // A copy: new storage from the same allocator (a second create), same bytes.
  GstMemory *copy = gst_memory_copy(mem, 5, 50);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(g_creates.load(), 2);
  EXPECT_EQ(copy->allocator, allocator);
  EXPECT_NE(gst_tensor_mem_memory_get_tensor(copy)->storage(), gst_tensor_mem_memory_get_tensor(mem)->storage());
  ASSERT_TRUE(gst_memory_map(copy, &info, GST_MAP_READ));
  ASSERT_EQ(info.size, 50u);
  for (gsize i = 0; i < info.size; ++i)
    ASSERT_EQ(info.data[i], static_cast<guint8>((i + 5) * 7 + 3)) << "byte " << i;
  gst_memory_unmap(copy, &info);

  // A range outside the allocation is refused, not read past.
  EXPECT_EQ(gst_memory_share(mem, 90, 50), nullptr);
  EXPECT_EQ(gst_memory_copy(mem, -20, 10), nullptr);

  gst_memory_unref(copy);
  gst_memory_unref(next);
  gst_memory_unref(share);
  gst_memory_unref(mem);
  gst_object_unref(allocator);
}

/* The system allocator's storage is made in C++ behind the public create: a
 * subclass inherits it, and one that fills in create replaces it. */
TEST(TensorMemBase, ASubclassOfTheSystemAllocatorKeepsItsStorageUnlessItFillsInCreate) {
  g_creates = 0;
  GstAllocator *plain = new_allocator(plain_system_allocator_get_type());
  GstMemory *mem = gst_allocator_alloc(plain, 100, nullptr);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(mem)->name(), GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME);
  EXPECT_EQ(g_creates.load(), 0);
  gst_memory_unref(mem);
  gst_object_unref(plain);

  GstAllocator *creating = new_allocator(creating_system_allocator_get_type());
  mem = gst_allocator_alloc(creating, 100, nullptr);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(g_creates.load(), 1);
  gst_memory_unref(mem);
  gst_object_unref(creating);
}

TEST(TensorMemBase, AnAlignmentTheStorageCannotMeetIsRefused) {
  GstAllocator *allocator = new_allocator(counting_allocator_get_type());
  g_creates = 0;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 4096 - 1; // heap storage promises 64 bytes
  EXPECT_EQ(gst_allocator_alloc(allocator, 100, &params), nullptr);
  EXPECT_EQ(g_creates.load(), 0) << "the check comes before any storage is made";
  gst_object_unref(allocator);
}

} // namespace
