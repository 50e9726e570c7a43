// SPDX-License-Identifier: Apache-2.0
// CUDA interop overhead against the fake runtime (device memory is host
// memory, so every figure is OUR overhead plus the fake's bookkeeping, not a
// GPU's): GstTensorMemCudaMeta map+unmap per frame for both kinds (DMA-BUF
// external memory: no runtime call; PBO GL buffer: a GL worker round trip
// each way), and the import cache (the first import of a memory against a
// cached lookup), plus a 1080p pipeline with and without tensorcudaimport.
// Prints tables; asserts nothing. The GL rows are left out (with the reason)
// where no headless GL context can be made.
//
// Usage (N scales every loop, default 500; best of BATCHES, default 3):
//   meson test -C build --benchmark cuda   (sets the environment), or
//   TENSORMEM_CUDART=build/tests/fakes/libfakecudart.so FAKE_CUDART_ACCEPT_DMABUF=1 GST_PLUGIN_PATH=build/gst/plugin
//     TENSORMEM_DMABUF_SOURCE=memfd build/tests/bench/bench-cuda [N [BATCHES]]
#include "bench_util.hpp"

#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <gst/video/video.h>

#include <tensormem/gl_worker.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr gsize kFrameBytes = 1920 * 1080 * 4;

using namespace tmbench; // Clock, Stats, time_each, ...

void row(const char *what, const Stats &s) { std::printf("| %-58s | %10.2f | %10.2f |\n", what, s.median, s.p99); }

[[noreturn]] void die(const std::string &what) { tmbench::die("bench-cuda", what); }

/* A buffer holding `mem` with a CUDA meta (the handle from the cache). */
GstBuffer *buffer_with_meta(GstMemory *mem) {
  gboolean imported = FALSE;
  auto handle = gst_tensor_mem_memory_import_cuda(mem, &imported);
  if (!handle)
    die("import: " + handle.error().message());
  GstBuffer *buf = gst_buffer_new();
  gst_buffer_append_memory(buf, gst_memory_ref(mem));
  if (!gst_buffer_add_tensor_mem_cuda_meta(buf, *handle, mem->offset, mem->size))
    die("meta");
  return buf;
}

void bench_meta_map(const char *label, GstMemory *mem, int n) {
  GstBuffer *buf = buffer_with_meta(mem);
  GstTensorMemCudaMeta *meta = gst_buffer_get_tensor_mem_cuda_meta(buf);
  std::string what = std::string(label) + ": meta map + unmap";
  row(what.c_str(), time_each(n, [&] {
        gpointer dev = nullptr;
        if (!gst_tensor_mem_cuda_meta_map(meta, &dev, nullptr, nullptr))
          die("map");
        gst_tensor_mem_cuda_meta_unmap(meta);
      }));
  what = std::string(label) + ": add meta (cached handle) + remove";
  row(what.c_str(), time_each(n, [&] {
        GstBuffer *b = gst_buffer_new();
        gst_buffer_append_memory(b, gst_memory_ref(mem));
        gboolean imported = FALSE;
        auto h = gst_tensor_mem_memory_import_cuda(mem, &imported);
        if (!h || imported)
          die("cache miss");
        gst_buffer_add_tensor_mem_cuda_meta(b, *h, mem->offset, mem->size);
        gst_buffer_unref(b);
      }));
  gst_buffer_unref(buf);
}

void bench_import(const char *label, GstAllocator *alloc, int n) {
  // First import: a fresh memory each time (allocation excluded from the time).
  std::vector<double> first;
  for (int b = 0; b < g_batches; ++b) {
    std::vector<double> samples;
    for (int i = 0; i < n / 10 + 1; ++i) {
      GstMemory *mem = gst_allocator_alloc(alloc, kFrameBytes, nullptr);
      if (!mem)
        die("alloc");
      gboolean imported = FALSE;
      const auto start = Clock::now();
      auto h = gst_tensor_mem_memory_import_cuda(mem, &imported);
      samples.push_back(us_since(start));
      if (!h || !imported)
        die("import");
      gst_memory_unref(mem);
    }
    const Stats s = stats_of(samples);
    if (first.empty() || s.median < first[0])
      first = {s.median, s.p99};
  }
  std::string what = std::string(label) + ": first import of a memory";
  row(what.c_str(), Stats{first[0], first[1]});
  GstMemory *mem = gst_allocator_alloc(alloc, kFrameBytes, nullptr);
  gboolean imported = FALSE;
  (void)gst_tensor_mem_memory_import_cuda(mem, &imported);
  what = std::string(label) + ": cached lookup (pooled memory)";
  row(what.c_str(), time_each(n, [&] {
        auto h = gst_tensor_mem_memory_import_cuda(mem, &imported);
        if (!h || imported)
          die("cache");
      }));
  gst_memory_unref(mem);
}

/* Per-frame wall time of a 1080p pipeline, and tensorcudaimport's imports. */
void bench_pipeline(const char *storage, bool with_import, int frames) {
  std::string desc =
      "videotestsrc num-buffers=" + std::to_string(frames) +
      " ! video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1 ! tensorupload storage=" + storage +
      (with_import ? " ! tensorcudaimport name=imp" : "") + " ! tensorinspect silent=true ! fakesink sync=false";
  GError *error = nullptr;
  GstElement *p = gst_parse_launch(desc.c_str(), &error);
  if (!p)
    die(desc + ": " + (error ? error->message : "?"));
  const auto start = Clock::now();
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstMessage *msg = gst_bus_timed_pop_filtered(GST_ELEMENT_BUS(p), 120 * GST_SECOND,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const double us = us_since(start);
  if (!msg || GST_MESSAGE_TYPE(msg) != GST_MESSAGE_EOS)
    die(desc + ": no EOS");
  gst_message_unref(msg);
  guint64 imports = 0;
  if (GstElement *imp = gst_bin_get_by_name(GST_BIN(p), "imp")) {
    g_object_get(imp, "imports", &imports, nullptr);
    gst_object_unref(imp);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  std::printf("| %-7s | %-23s | %6d | %7" G_GUINT64_FORMAT " | %12.1f |\n", storage,
              with_import ? "import + inspect (cuda)" : "inspect (host)", frames, imports, us / frames);
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  const int n = argc > 1 ? std::max(atoi(argv[1]), 10) : 500;
  if (argc > 2)
    g_batches = std::max(atoi(argv[2]), 1);
  auto rt = tensormem::CudaRuntime::get();
  if (!rt->available()) {
    std::fprintf(stderr, "bench-cuda: CUDA unavailable (%s); set TENSORMEM_CUDART to the fake runtime\n",
                 rt->reason().c_str());
    return 77;
  }
  std::printf("CUDA runtime: %s\n\n", rt->runtime_path().c_str());
  std::printf("| %-58s | %10s | %10s |\n|%s|%s|%s|\n", "1080p RGBA (8 MB), per call", "median us", "p99 us",
              std::string(60, '-').c_str(), std::string(12, '-').c_str(), std::string(12, '-').c_str());

  GstAllocator *dmabuf = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *dmem = gst_allocator_alloc(dmabuf, kFrameBytes, nullptr);
  if (!dmem)
    die("DMA-BUF alloc");
  bench_meta_map("DMA-BUF external memory", dmem, n);
  gst_memory_unref(dmem);
  bench_import("DMA-BUF external memory", dmabuf, n);

  GError *error = nullptr;
  GstTensorMemGlWorker *worker = gst_tensor_mem_gl_worker_new(&error);
  GstAllocator *pbo = nullptr;
  if (worker) {
    pbo = gst_tensor_mem_pbo_allocator_new(worker);
    GstMemory *pmem = gst_allocator_alloc(pbo, kFrameBytes, nullptr);
    if (!pmem)
      die("PBO alloc");
    bench_meta_map("PBO GL buffer", pmem, n);
    gst_memory_unref(pmem);
    bench_import("PBO GL buffer", pbo, n);
  } else {
    std::printf("(PBO rows left out: no headless GL context: %s)\n", error ? error->message : "?");
    g_clear_error(&error);
  }

  const int frames = std::max(n / 10, 20);
  std::printf("\n| storage | pipeline (1080p RGBA)  | frames | imports | us per frame |\n"
              "|---------|-------------------------|--------|---------|--------------|\n");
  for (const char *storage : {"dmabuf", "pbo"}) {
    if (std::string(storage) == "pbo" && !worker)
      continue;
    bench_pipeline(storage, false, frames);
    bench_pipeline(storage, true, frames);
  }
  if (pbo)
    gst_object_unref(pbo);
  if (worker)
    gst_object_unref(worker);
  gst_object_unref(dmabuf);
  gst_deinit();
  return 0;
}
