// SPDX-License-Identifier: Apache-2.0
// CPU time per buffer of zero-copy tensorupload ! tensordownload pairs side
// by side with identity ! identity (issue 13: a pair must cost <= 1.1x it),
// measured inside one process.
//
//   bench-pair-overhead [ROUNDS [LONG]]     (defaults 15, 200000)
//
// tests/bench/per_buffer_overhead.sh measures the same pipelines as whole
// gst-launch-1.0 processes; on a shared machine the start of each process
// (loading plugins, EGL, page faults) moves by more than the difference being
// measured. Here every pipeline is built, run to EOS and torn down in this
// process, so only the buffers and a pipeline's set-up are timed, and the
// set-up drops out of the difference between a LONG and a SHORT (LONG / 10)
// run. CPU time of the whole process (all streaming threads), not wall time:
// other processes on the cores steal wall time, not this process's CPU time.
// The pipelines alternate within each round; printed are the median and the
// least of the per-round figures, and the median (least, most) of each
// pair's ratio to identity ! identity in the same round. Asserts nothing.
#include <gst/gst.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

const char *const kMiddles[] = {
    "identity ! identity",
    "tensorupload storage=system ! tensordownload",
    "tensorupload storage=dmabuf ! tensordownload",
};
constexpr const char *kCaps = "video/x-raw,format=RGBA,width=64,height=64,framerate=30/1";

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/* CPU seconds from building the pipeline to its end (EOS), or a negative
 * value after printing why it failed. */
double run_pipeline(const char *middle, long buffers) {
  const std::string text = "videotestsrc num-buffers=" + std::to_string(buffers) + " pattern=solid-color ! " + kCaps +
                           " ! " + middle + " ! fakesink";
  const double start = process_cpu_seconds();
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(text.c_str(), &error);
  if (!pipeline) {
    std::fprintf(stderr, "bench-pair-overhead: %s: %s\n", text.c_str(), error ? error->message : "no pipeline");
    g_clear_error(&error);
    return -1;
  }
  g_clear_error(&error); // a warning about a pipeline that was made all the same
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const bool ok = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (!ok) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    std::fprintf(stderr, "bench-pair-overhead: %s: %s\n", text.c_str(), err->message);
    g_clear_error(&err);
  }
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  const double spent = process_cpu_seconds() - start;
  return ok ? spent : -1;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const long long_run = argc > 2 ? std::max(1000L, std::atol(argv[2])) : 200000;
  const long short_run = long_run / 10;
  constexpr std::size_t kCount = sizeof(kMiddles) / sizeof(kMiddles[0]);

  // One untimed run of each, so that every plugin is loaded and every
  // one-time set-up (a GL display, the DMA-BUF source) is done before timing.
  for (const char *middle : kMiddles) {
    if (run_pipeline(middle, 100) < 0)
      return 1;
  }
  std::vector<double> per_buffer[kCount];
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) {
      const double s = run_pipeline(kMiddles[i], short_run);
      const double l = run_pipeline(kMiddles[i], long_run);
      if (s < 0 || l < 0)
        return 1;
      per_buffer[i].push_back((l - s) / static_cast<double>(long_run - short_run) * 1e6);
    }
  }

  std::printf("CPU time of this process per buffer, (run of %ld - run of %ld buffers) / %ld, %d alternating "
              "rounds; 64x64 RGBA, videotestsrc pattern=solid-color ! <middle> ! fakesink\n\n",
              long_run, short_run, long_run - short_run, rounds);
  std::printf("| pipeline middle | µs per buffer: median | ratio | least | ratio | ratio within each round: median "
              "| least | most |\n|---|---|---|---|---|---|---|---|\n");
  const double base_median = median_of(per_buffer[0]);
  const double base_least = *std::min_element(per_buffer[0].begin(), per_buffer[0].end());
  for (std::size_t i = 0; i < kCount; ++i) {
    const double median = median_of(per_buffer[i]);
    const double least = *std::min_element(per_buffer[i].begin(), per_buffer[i].end());
    /* Against identity ! identity of the same round, a few seconds apart:
     * a slower spell of the machine slows both alike. */
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r)
      ratios.push_back(per_buffer[i][static_cast<std::size_t>(r)] / per_buffer[0][static_cast<std::size_t>(r)]);
    std::printf("| `%s` | %.3f | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f |\n", kMiddles[i], median,
                median / base_median, least, least / base_least, median_of(ratios),
                *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
  }
  return 0;
}
