// SPDX-License-Identifier: Apache-2.0
/* GStreamer for a fuzz target: initialised once, before the first input
 * (LLVMFuzzerInitialize, which libFuzzer and replay_main.cpp both call), so
 * its one-time allocations are not counted against an input by libFuzzer's
 * leak check. No plugin is loaded and no registry is read or written: the
 * targets call libgsttensormem directly. */
#pragma once

#include "fuzz_input.hpp"

#include <gst/allocators/gstdmabuf.h>
#include <gst/gst.h>
#include <gst/tensormem/gsttensormem.h>

#include <sys/mman.h>
#include <unistd.h>

namespace tensormem_fuzz {

inline void init_gstreamer() {
  g_setenv("GST_REGISTRY_1.0", "/nonexistent/gst-tensormem-fuzz.reg", TRUE);
  g_setenv("GST_REGISTRY_UPDATE", "no", TRUE);
  g_setenv("GST_PLUGIN_PATH_1_0", "", TRUE);
  g_setenv("GST_PLUGIN_SYSTEM_PATH_1_0", "", TRUE);
  // Refusals are what most inputs produce; their warnings are not news.
  g_setenv("GST_DEBUG", "*:0", FALSE);
  gst_init(nullptr, nullptr);
  gst_tensor_mem_init();
}

/* A size near `want`: the same, a little less or more, or anything below 2x. */
inline gsize near_size(FuzzInput &in, gsize want) {
  switch (in.pick(5)) {
  case 0:
  case 1: return want;
  case 2: return want > 0 ? want - in.range(1, static_cast<std::uint32_t>(want < 64 ? want : 64)) : 0;
  case 3: return want + in.range(1, 64);
  default: return in.pick(static_cast<std::uint32_t>(2 * want + 2));
  }
}

/* System memory of `size` bytes holding the input's next bytes. */
inline GstMemory *system_memory(FuzzInput &in, gsize size) {
  GstMemory *mem = gst_allocator_alloc(nullptr, size, nullptr);
  FUZZ_CHECK(mem != nullptr, "no system memory of %zu bytes", size);
  GstMapInfo map;
  if (size > 0 && gst_memory_map(mem, &map, GST_MAP_WRITE)) {
    in.fill(map.data, map.size);
    gst_memory_unmap(mem, &map);
  }
  return mem;
}

/* A DMA-BUF memory that says it holds `declared` bytes over a memfd of
 * `real` bytes: shorter or longer than declared, as a lying producer's. */
inline GstMemory *memfd_dmabuf_memory(gsize real, gsize declared) {
  static GstAllocator *allocator = gst_dmabuf_allocator_new();
  const int fd = memfd_create("tensormem-fuzz", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0, "memfd_create failed");
  FUZZ_CHECK(ftruncate(fd, static_cast<off_t>(real)) == 0, "ftruncate(%zu) failed", real);
  GstMemory *mem = gst_dmabuf_allocator_alloc(allocator, fd, declared); // takes the fd
  FUZZ_CHECK(mem != nullptr, "no DMA-BUF memory for a memfd");
  return mem;
}

} // namespace tensormem_fuzz

#define TENSORMEM_FUZZ_INIT_GSTREAMER                                                                                 \
  extern "C" int LLVMFuzzerInitialize(int *, char ***) {                                                               \
    tensormem_fuzz::init_gstreamer();                                                                                  \
    return 0;                                                                                                          \
  }
