// SPDX-License-Identifier: Apache-2.0
// DMA-BUF tensor memory in GStreamer: per-buffer cost of the zero-copy path,
// copy-path throughput against memcpy, GstMemory map/unmap latency and pool
// churn with fd and memory counts. Prints tables; asserts nothing.
//
//   TENSORMEM_DMABUF_SOURCE=memfd GST_PLUGIN_PATH=build/gst/plugin
//       build/tests/bench/bench-dmabuf-pipeline [buffers]   (one command line)
#include "../proc_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kCaps1080 = "video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1";

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

GstBufferPool *dmabuf_pool(const char *caps_str, guint max_buffers) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_DMABUF);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string(caps_str);
  GstVideoInfo info;
  gst_video_info_from_caps(&info, caps);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 0, max_buffers);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    std::fprintf(stderr, "cannot activate a DMA-BUF pool (no DMA heap? set TENSORMEM_DMABUF_SOURCE=memfd)\n");
    std::exit(1);
  }
  return pool;
}

/* Pushes `n` buffers made by `make` through `description` in a harness and
 * returns the mean time per buffer in microseconds. */
template <typename Make> double per_buffer_us(const char *description, int n, Make make, guint64 *copied = nullptr) {
  GstHarness *h = gst_harness_new_parse(description);
  gst_harness_set_caps_str(h, kCaps1080, kCaps1080);
  for (int i = 0; i < 8; ++i) { // warm-up: negotiation, first maps
    gst_harness_push(h, make());
    gst_buffer_unref(gst_harness_pull(h));
  }
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    if (gst_harness_push(h, make()) != GST_FLOW_OK) {
      std::fprintf(stderr, "%s: push failed\n", description);
      std::exit(1);
    }
    gst_buffer_unref(gst_harness_pull(h));
  }
  const double us = seconds_since(start) * 1e6 / n;
  if (copied) {
    GstElement *up = gst_bin_get_by_name(GST_BIN(h->element), "up");
    if (up) {
      g_object_get(up, "copied-bytes", copied, nullptr);
      gst_object_unref(up);
    }
  }
  gst_harness_teardown(h);
  return us;
}

void zero_copy_overhead(int n) {
  GstBufferPool *pool = dmabuf_pool(kCaps1080, 8);
  auto from_pool = [pool] {
    GstBuffer *b = nullptr;
    gst_buffer_pool_acquire_buffer(pool, &b, nullptr);
    return b;
  };
  std::printf("\n## Zero-copy path: 1080p RGBA buffers from our DMA-BUF pool, %d buffers\n\n", n);
  std::printf("| element(s) | time per buffer | copied bytes |\n|---|---|---|\n");
  // The first harness run of the process pays one-off costs: measure the floor twice, keep the faster.
  const double floor = std::min(per_buffer_us("identity", n, from_pool), per_buffer_us("identity", n, from_pool));
  std::printf("| `identity` (floor: harness push + pull) | %.2f µs | 0 |\n", floor);
  guint64 copied = 0;
  const double up = per_buffer_us("tensorupload name=up storage=dmabuf require-zero-copy=true", n, from_pool, &copied);
  std::printf("| `tensorupload storage=dmabuf` | %.2f µs (%+.2f) | %" G_GUINT64_FORMAT " |\n", up, up - floor, copied);
  const double both = per_buffer_us("tensorupload name=up storage=dmabuf ! tensordownload", n, from_pool, &copied);
  std::printf("| `tensorupload storage=dmabuf ! tensordownload` | %.2f µs (%+.2f) | %" G_GUINT64_FORMAT " |\n", both,
              both - floor, copied);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
}

void copy_path(int n) {
  GstVideoInfo info;
  GstCaps *caps = gst_caps_from_string(kCaps1080);
  gst_video_info_from_caps(&info, caps);
  gst_caps_unref(caps);
  const gsize size = GST_VIDEO_INFO_SIZE(&info);
  GstBuffer *frame = gst_buffer_new_allocate(nullptr, size, nullptr);
  gst_buffer_memset(frame, 0, 0x5a, size);
  auto system_frame = [frame] { return gst_buffer_ref(frame); };

  // memcpy bandwidth of the same frame size, for comparison.
  std::vector<char> src(size, 1), dst(size);
  std::memcpy(dst.data(), src.data(), size);
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    std::memcpy(dst.data(), src.data(), size);
    asm volatile("" : : "r"(dst.data()) : "memory");
  }
  const double memcpy_us = seconds_since(start) * 1e6 / n;

  std::printf("\n## Copy path: 1080p RGBA system-memory buffers (%" G_GSIZE_FORMAT " bytes), %d buffers\n\n", size, n);
  std::printf("| path | time per buffer | throughput |\n|---|---|---|\n");
  std::printf("| `memcpy` of the frame (floor) | %.1f µs | %.2f GB/s |\n", memcpy_us, size / memcpy_us / 1e3);
  for (const char *d : {"tensorupload name=up storage=dmabuf", "tensorupload name=up storage=system"}) {
    const double us = per_buffer_us(d, n, system_frame);
    std::printf("| `%s` | %.1f µs | %.2f GB/s |\n", d, us, size / us / 1e3);
  }
  gst_buffer_unref(frame);
}

void map_latency(int n) {
  GstAllocator *dmabuf = gst_tensor_mem_dmabuf_allocator_get();
  GstAllocator *system = gst_tensor_mem_system_allocator_get();
  std::printf("\n## GstMemory map+unmap (READ), 1 MiB memory, %d iterations\n\n", n * 50);
  std::printf("| memory | time per map+unmap |\n|---|---|\n");
  struct Case {
    const char *name;
    GstAllocator *allocator;
    bool hold;
  } cases[] = {{"DMA-BUF tensor memory, nobody else mapped (the mapping made by the first map is kept)", dmabuf, false},
               {"DMA-BUF tensor memory while another reader holds it (joins the mapping)", dmabuf, true},
               {"system tensor memory", system, false}};
  for (const Case &c : cases) {
    GstMemory *mem = gst_allocator_alloc(c.allocator, 1 << 20, nullptr);
    GstMapInfo held;
    if (c.hold)
      gst_memory_map(mem, &held, GST_MAP_READ);
    const auto start = Clock::now();
    for (int i = 0; i < n * 50; ++i) {
      GstMapInfo info;
      gst_memory_map(mem, &info, GST_MAP_READ);
      gst_memory_unmap(mem, &info);
    }
    std::printf("| %s | %.2f µs |\n", c.name, seconds_since(start) * 1e6 / (n * 50));
    if (c.hold)
      gst_memory_unmap(mem, &held);
    gst_memory_unref(mem);
  }
  gst_object_unref(system);
  gst_object_unref(dmabuf);
}

void churn(int n) {
  const char *caps = "video/x-raw,format=NV12,width=640,height=480";
  std::printf("\n## Churn: %d buffers (NV12 640x480)\n\n", n);
  std::printf("| what | time per buffer | fds before → after | RSS before → after |\n|---|---|---|---|\n");
  {
    GstBufferPool *pool = dmabuf_pool(caps, 4);
    const int fds = tmtest::open_fd_count();
    const long rss = tmtest::rss_kib();
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
      GstBuffer *b = nullptr;
      gst_buffer_pool_acquire_buffer(pool, &b, nullptr);
      GstMapInfo info;
      gst_buffer_map(b, &info, GST_MAP_WRITE);
      info.data[0] = static_cast<guint8>(i);
      gst_buffer_unmap(b, &info);
      gst_buffer_unref(b);
    }
    const double us = seconds_since(start) * 1e6 / n;
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
    std::printf("| pool acquire + write map + release | %.2f µs | %d → %d | %ld → %ld KiB |\n", us, fds,
                tmtest::open_fd_count(), rss, tmtest::rss_kib());
  }
  {
    GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
    const int fds = tmtest::open_fd_count();
    const long rss = tmtest::rss_kib();
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
      GstMemory *mem = gst_allocator_alloc(allocator, 640 * 480 * 3 / 2, nullptr);
      gst_memory_unref(mem);
    }
    const double us = seconds_since(start) * 1e6 / n;
    std::printf("| DMA-BUF allocate + free | %.2f µs | %d → %d | %ld → %ld KiB |\n", us, fds, tmtest::open_fd_count(),
                rss, tmtest::rss_kib());
    gst_object_unref(allocator);
  }
  {
    const int fds = tmtest::open_fd_count();
    const long rss = tmtest::rss_kib();
    const auto start = Clock::now();
    for (int i = 0; i < n / 4; ++i) {
      GstBufferPool *pool = dmabuf_pool(caps, 4);
      GstBuffer *b[4];
      for (auto &x : b)
        gst_buffer_pool_acquire_buffer(pool, &x, nullptr);
      for (auto *x : b)
        gst_buffer_unref(x);
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
    }
    const double us = seconds_since(start) * 1e6 / n;
    std::printf("| new pool of 4 per 4 buffers (create, fill, destroy) | %.2f µs | %d → %d | %ld → %ld KiB |\n", us,
                fds, tmtest::open_fd_count(), rss, tmtest::rss_kib());
  }
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::printf("# bench-dmabuf-pipeline (DMA-BUF source: %s)\n",
              g_getenv("TENSORMEM_DMABUF_SOURCE") ? g_getenv("TENSORMEM_DMABUF_SOURCE") : "heap");
  zero_copy_overhead(n);
  copy_path(n / 10 > 0 ? n / 10 : 1);
  map_latency(n);
  churn(10000);
  gst_deinit();
  return 0;
}
