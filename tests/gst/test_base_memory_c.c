// SPDX-License-Identifier: Apache-2.0
/* A GstTensorMemBaseAllocator subclass written in C against the installed
 * headers only, as an application would write one: its create hands the base
 * aligned heap bytes with the function that frees them, and counts both. Its
 * other modes are the broken subclasses the base must refuse without a leak.
 * Compiled as C, so the public vfunc cannot lean on C++. */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200112L // posix_memalign under -std=c11
#endif

#include "test_base_memory_c.h"

#include <string.h>

#ifdef G_OS_WIN32
#include <malloc.h>
#else
#include <stdlib.h>
#endif

struct _TestCAllocator {
  GstTensorMemBaseAllocator parent;
  TestCAllocatorMode mode;
};

G_DEFINE_TYPE(TestCAllocator, test_c_allocator, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR)

static gint creates;
static gint frees;

/* `bytes` bytes at a multiple of `align` (a power of two, at least the size
 * of a pointer), or NULL. The Microsoft C runtime has no posix_memalign and
 * its aligned blocks need their own free. */
static gpointer aligned_bytes(gsize align, gsize bytes) {
#ifdef G_OS_WIN32
  return _aligned_malloc(bytes, align);
#else
  void *data = NULL;
  return posix_memalign(&data, align, bytes) == 0 ? data : NULL;
#endif
}

/* The free function create hands the base: counted, so a test sees it run
 * once per storage, after the last memory over it. */
static void free_aligned_bytes(gpointer data) {
  g_atomic_int_inc(&frees);
#ifdef G_OS_WIN32
  _aligned_free(data);
#else
  free(data);
#endif
}

static gpointer test_c_allocator_create(GstTensorMemBaseAllocator *allocator, gsize bytes,
                                        const GstAllocationParams *params, GDestroyNotify *free_func,
                                        gpointer *free_data) {
  TestCAllocator *self = TEST_C_ALLOCATOR(allocator);
  const gsize align = MAX(params->align + 1, sizeof(gpointer));
  const gboolean misaligned = self->mode == TEST_C_ALLOCATOR_MISALIGNED;
  guint8 *data;

  g_atomic_int_inc(&creates);
  if (self->mode == TEST_C_ALLOCATOR_NOTHING) {
    GST_WARNING_OBJECT(self, "no %" G_GSIZE_FORMAT "-byte storage: this allocator makes none", bytes);
    return NULL;
  }
  data = aligned_bytes(align, bytes + misaligned);
  if (!data) {
    GST_WARNING_OBJECT(self, "no memory for %" G_GSIZE_FORMAT " bytes", bytes);
    return NULL;
  }
  memset(data, TEST_C_ALLOCATOR_FILL, bytes + misaligned);
  *free_func = free_aligned_bytes;
  *free_data = data;
  return data + misaligned;
}

static void test_c_allocator_class_init(TestCAllocatorClass *klass) {
  GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass)->create = test_c_allocator_create;
}

static void test_c_allocator_init(TestCAllocator *self) { GST_ALLOCATOR_CAST(self)->mem_type = "TestCTensorMemory"; }

GstAllocator *test_c_allocator_new(TestCAllocatorMode mode) {
  TestCAllocator *self = g_object_new(TEST_TYPE_C_ALLOCATOR, NULL);
  self->mode = mode;
  return GST_ALLOCATOR_CAST(gst_object_ref_sink(self));
}

gint test_c_allocator_creates(void) { return g_atomic_int_get(&creates); }

gint test_c_allocator_frees(void) { return g_atomic_int_get(&frees); }

void test_c_allocator_reset_counts(void) {
  g_atomic_int_set(&creates, 0);
  g_atomic_int_set(&frees, 0);
}
