// SPDX-License-Identifier: Apache-2.0
/* A GstTensorMemBaseAllocator subclass written in C (test_base_memory_c.c),
 * for the C++ tests to drive. */
#pragma once

#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>

G_BEGIN_DECLS

/* What the subclass's create makes: aligned bytes as asked, bytes one past an
 * aligned address (wrong for any alignment above one byte), or nothing. */
typedef enum {
  TEST_C_ALLOCATOR_ALIGNED,
  TEST_C_ALLOCATOR_MISALIGNED,
  TEST_C_ALLOCATOR_NOTHING,
} TestCAllocatorMode;

#define TEST_TYPE_C_ALLOCATOR (test_c_allocator_get_type())
G_DECLARE_FINAL_TYPE(TestCAllocator, test_c_allocator, TEST, C_ALLOCATOR, GstTensorMemBaseAllocator)

/* A new allocator (a reference the caller owns) whose creates make `mode`. */
GstAllocator *test_c_allocator_new(TestCAllocatorMode mode);

/* The byte every create fills its storage with: what the base did not zero. */
#define TEST_C_ALLOCATOR_FILL 0xa5

/* Calls of create, and of the free function it handed the base, in the
 * process since the last reset. */
gint test_c_allocator_creates(void);
gint test_c_allocator_frees(void);
void test_c_allocator_reset_counts(void);

G_END_DECLS
