// SPDX-License-Identifier: Apache-2.0
// What the fence path costs per frame: attaching a GstTensorMemFenceMeta,
// polling and waiting for one that has signalled, copying a buffer that
// carries one (software timeline); fencing a PBO write on the GL worker and
// attaching it (EGL); and a whole PBO pipeline with and without tensorsync.
// A plain program; it prints tables and asserts no time.
#include "bench_util.hpp"

#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/gl_worker.hpp>
#include <tensormem/timeline.hpp>

#include <cstdio>
#include <string>

namespace {

using tmbench::Stats;
using tmbench::time_each;

void row(const char *what, const Stats &s) { std::printf("| %s | %.2f µs | %.2f µs |\n", what, s.median, s.p99); }

void bench_software(int n) {
  std::printf("\n## Software timeline, one meta per buffer, %d iterations\n\n", n);
  std::printf("| what | median | p99 |\n|---|---|---|\n");
  auto timeline = tensormem::SoftwareTimeline::create("bench");
  GstBuffer *buffer = gst_buffer_new();
  row("issue + add meta (replaces the value) + signal", time_each(n, [&] {
        const auto v = timeline->issue();
        gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, v, -1, nullptr);
        (void)timeline->signal(v);
      }));
  row("new buffer + add meta + unref", time_each(n, [&] {
        GstBuffer *b = gst_buffer_new();
        gst_buffer_add_tensor_mem_fence_meta(b, timeline, timeline->last_issued(), -1, nullptr);
        gst_buffer_unref(b);
      }));
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(buffer);
  row("is_signalled (signalled)", time_each(n, [&] { (void)gst_tensor_mem_fence_meta_is_signalled(meta); }));
  row("gst_buffer_wait_tensor_mem_fences (satisfied)",
      time_each(n, [&] { (void)gst_buffer_wait_tensor_mem_fences(buffer, GST_SECOND, nullptr, nullptr); }));
  row("gst_buffer_copy of a buffer with a fence", time_each(n, [&] { gst_buffer_unref(gst_buffer_copy(buffer)); }));
  gst_buffer_unref(buffer);
}

void bench_egl(GstTensorMemGlWorker *worker, int n) {
  GstAllocator *allocator = gst_tensor_mem_pbo_allocator_new(worker);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_allocator_alloc(allocator, 1920 * 1080 * 4, nullptr));
  std::printf("\n## EGL fences on the GL worker, one 1080p RGBA PBO, %d iterations\n\n", n);
  std::printf("| what | median | p99 |\n|---|---|---|\n");
  row("fence the write + attach (gst_buffer_fence_tensor_mem_pbo_writes)",
      time_each(n, [&] { gst_buffer_fence_tensor_mem_pbo_writes(buffer, nullptr); }));
  row("fence + attach + CPU wait", time_each(n, [&] {
        gst_buffer_fence_tensor_mem_pbo_writes(buffer, nullptr);
        gst_buffer_wait_tensor_mem_fences(buffer, GST_SECOND, nullptr, nullptr);
      }));
  gst_buffer_unref(buffer);
  gst_object_unref(allocator);
}

double pipeline_us_per_frame(GstTensorMemGlWorker *worker, const std::string &middle, int n) {
  const std::string description = "videotestsrc num-buffers=" + std::to_string(n) +
                                  " pattern=solid-color ! video/x-raw,format=RGBA,width=1920,height=1080 ! "
                                  "tensorupload storage=pbo ! " +
                                  middle + "tensordownload ! fakesink";
  GstElement *pipeline = gst_parse_launch(description.c_str(), nullptr);
  if (!pipeline)
    tmbench::die("bench-fences", "cannot parse " + description);
  GstContext *context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
  gst_element_set_context(pipeline, context);
  gst_context_unref(context);
  const auto start = tmbench::Clock::now();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 600 * GST_SECOND,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const double us = tmbench::us_since(start);
  if (!msg || GST_MESSAGE_TYPE(msg) != GST_MESSAGE_EOS)
    tmbench::die("bench-fences", "the pipeline did not reach EOS: " + description);
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return us / n;
}

void bench_pipelines(GstTensorMemGlWorker *worker, int n) {
  std::printf("\n## Pipeline to EOS, 1080p RGBA, `videotestsrc ! tensorupload storage=pbo ! … ! tensordownload ! "
              "fakesink`, %d frames (best of %d)\n\n",
              n, tmbench::g_batches);
  std::printf("| … | time per frame |\n|---|---|\n");
  for (const char *middle : {"", "tensorsync ! ", "queue ! tensorsync ! "}) {
    double best = 0;
    for (int b = 0; b < tmbench::g_batches; ++b) {
      const double us = pipeline_us_per_frame(worker, middle, n);
      best = b == 0 ? us : std::min(best, us);
    }
    std::printf("| `%s` | %.0f µs |\n", middle[0] ? middle : "(nothing)", best);
  }
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 200;
  std::printf("# bench-fences (N=%d, pipeline frames=%d, best of %d batches)\n", n, frames, tmbench::g_batches);
  bench_software(n);
  GError *error = nullptr;
  GstTensorMemGlWorker *worker = gst_tensor_mem_gl_worker_new(&error);
  if (!worker) {
    std::printf("\nSKIP (EGL): no headless GL context: %s\n", error ? error->message : "?");
    g_clear_error(&error);
    return 0;
  }
  if (!gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->timeline()) {
    std::printf("\nSKIP (EGL): no EGL_KHR_fence_sync\n");
  } else {
    bench_egl(worker, n);
    bench_pipelines(worker, frames);
  }
  gst_object_unref(worker);
  return 0;
}
