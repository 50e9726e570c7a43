// SPDX-License-Identifier: Apache-2.0
/*
 * A CUDA GL channel written in plain C: proves tensormem_cuda.h is C and
 * gives the importer tests a client whose functions were compiled by a C
 * compiler (the real cross-library situation). Counters live in the record
 * the ctx points at (the seed's "shared record").
 */
#include "c_channel.h"

#include <stdint.h>

static void record_retain(const void *ctx) { ((c_channel_record *)(uintptr_t)ctx)->retains++; }
static void record_release(const void *ctx) { ((c_channel_record *)(uintptr_t)ctx)->releases++; }

/* Succeeds only for resource 1: address 0x1000, 64 bytes; 7 otherwise. */
static int record_map(const void *ctx, void *resource, void **out_ptr, size_t *out_len) {
  c_channel_record *r = (c_channel_record *)(uintptr_t)ctx;
  r->maps++;
  if (resource != (void *)(uintptr_t)1)
    return 7;
  *out_ptr = (void *)(uintptr_t)0x1000;
  *out_len = 64;
  return TM_CUDA_OK;
}

static void record_unmap(const void *ctx, void *resource) {
  (void)resource;
  ((c_channel_record *)(uintptr_t)ctx)->unmaps++;
}

static void record_unregister(const void *ctx, void *resource) {
  (void)resource;
  ((c_channel_record *)(uintptr_t)ctx)->unregisters++;
}

tm_cuda_gl_ops c_channel_ops(c_channel_record *record) {
  tm_cuda_gl_ops ops;
  ops.state.ctx = record;
  ops.state.retain = record_retain;
  ops.state.release = record_release;
  ops.map = record_map;
  ops.unmap = record_unmap;
  ops.unregister = record_unregister;
  return ops;
}
