// SPDX-License-Identifier: Apache-2.0
/* What one 64x64 RGBA buffer costs in each per-buffer operation of a
 * zero-copy tensorupload ! tensordownload pair, side by side with the same
 * operation on what identity ! identity carries (a GstVideoBufferPool of
 * system memory): pool acquire + release, the producer's write map of the
 * frame, and the validation each of our elements runs. CPU time of this
 * thread, best of 5 batches of N calls. Prints a table; asserts nothing.
 *
 *   TENSORMEM_DMABUF_SOURCE=memfd build/tests/bench/bench-buffer-ops [N]   (default 200000)
 */
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <typename Fn> double ns_per_call(int n, Fn fn) {
  double best = 1e300;
  for (int batch = 0; batch < 5; ++batch) {
    const double start = thread_cpu_ns();
    for (int i = 0; i < n; ++i)
      fn();
    best = std::min(best, (thread_cpu_ns() - start) / n);
  }
  return best;
}

GstBufferPool *activated(GstBufferPool *pool, GstCaps *caps, gsize size) {
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(size), 2, 0);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    std::fprintf(stderr, "cannot activate %s (no DMA heap? set TENSORMEM_DMABUF_SOURCE=memfd)\n",
                 GST_OBJECT_NAME(pool));
    std::exit(1);
  }
  return pool;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=64,height=64");
  GstVideoInfo info;
  gst_video_info_from_caps(&info, caps);
  struct Pool {
    const char *name;
    GstBufferPool *pool;
  } pools[] = {
      {"`GstVideoBufferPool` (system memory)", activated(gst_video_buffer_pool_new(), caps, info.size)},
      {"tensor pool, system storage", activated(gst_tensor_mem_buffer_pool_new(), caps, info.size)},
      {"tensor pool, DMA-BUF storage",
       activated(gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_DMABUF), caps, info.size)},
  };
  std::printf("64x64 RGBA, CPU ns per call, best of 5 batches of %d\n\n", n);
  std::printf("| buffers from | acquire + release | frame map WRITE + unmap | gst_tensor_mem_validate_buffer |\n");
  std::printf("|---|---|---|---|\n");
  for (const Pool &p : pools) {
    const double cycle = ns_per_call(n, [&] {
      GstBuffer *b = nullptr;
      gst_buffer_pool_acquire_buffer(p.pool, &b, nullptr);
      gst_buffer_unref(b);
    });
    GstBuffer *buffer = nullptr;
    gst_buffer_pool_acquire_buffer(p.pool, &buffer, nullptr);
    const double map = ns_per_call(n, [&] {
      GstVideoFrame frame;
      if (gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE))
        gst_video_frame_unmap(&frame);
    });
    const double validate = ns_per_call(n, [&] { gst_tensor_mem_validate_buffer(buffer, &info, nullptr); });
    gst_buffer_unref(buffer);
    std::printf("| %s | %.0f | %.0f | %.0f |\n", p.name, cycle, map, validate);
    gst_buffer_pool_set_active(p.pool, FALSE);
    gst_object_unref(p.pool);
  }
  gst_caps_unref(caps);
  return 0;
}
