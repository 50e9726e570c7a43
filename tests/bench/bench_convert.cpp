// SPDX-License-Identifier: Apache-2.0
/* tensorconvert against the chain users run today, side by side in one
 * process: 1080p NV12 and RGBA frames (prepared in memory, pushed from
 * appsrc) into a 640x640 float32 NCHW tensor normalised with ImageNet's mean
 * and std, either by `tensorconvert` or by `videoconvert ! videoscale` to
 * RGB 640x640 followed by a plain normalisation loop over each pulled frame
 * (what an application does by hand). `tensorconvert` runs its CPU path
 * and its GL path (a compute pass on the GL worker: llvmpipe, on these same
 * CPU cores, where no GPU is): from system memory (copied into a PBO on the
 * way) and from `tensorupload storage=pbo` (the upload's copy included). GL
 * outputs are mapped once each, which waits for the pass's fence. Wall time
 * and process CPU time (all threads: the feeder, the elements' workers, the
 * loop) per frame, median of the batches, and the ratios; on a shared
 * machine read the CPU columns. Prints a table and the load average;
 * asserts nothing.
 *
 *   bench-convert [FRAMES] [BATCHES]        (defaults 60 3)
 */
#include "bench_util.hpp"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

const float kMean[3] = {0.485f, 0.456f, 0.406f};
const float kStd[3] = {0.229f, 0.224f, 0.225f};

/* The application's own normalisation of an RGB frame into NCHW floats. */
void normalise(const std::uint8_t *rgb, int stride, int w, int h, std::vector<float> *out) {
  out->resize(static_cast<std::size_t>(w) * h * 3);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        (*out)[(static_cast<std::size_t>(c) * h + y) * w + x] =
            (rgb[y * stride + x * 3 + c] / 255.f - kMean[c]) / kStd[c];
}

/* What happens to each pulled buffer. */
enum class Pull { Keep, Normalise, Map };

/* CPU time of the whole process so far, in microseconds. */
double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct PerFrame {
  double wall_us, cpu_us;
};

/* Pushes `frames` copies of one frame through `middle` and pulls every
 * result, normalising by hand or mapping it as `pull` says; wall and CPU
 * microseconds per frame. */
PerFrame run(const char *format, int frames, const std::string &middle, Pull pull) {
  const std::string caps = std::string("video/x-raw,format=") + format + ",width=1920,height=1080,framerate=30/1";
  const std::string description =
      "appsrc name=src format=time caps=\"" + caps + "\" ! " + middle + " ! appsink name=sink sync=false max-buffers=4";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (!pipeline || error) {
    std::fprintf(stderr, "%s: %s\n", description.c_str(), error ? error->message : "?");
    std::exit(1);
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstVideoInfo info;
  GstCaps *c = gst_caps_from_string(caps.c_str());
  gst_video_info_from_caps(&info, c);
  gst_caps_unref(c);
  std::vector<std::uint8_t> frame(GST_VIDEO_INFO_SIZE(&info));
  for (std::size_t i = 0; i < frame.size(); ++i)
    frame[i] = static_cast<std::uint8_t>((i * 7 + i / 1920) & 0xff);

  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  std::vector<float> tensor;
  const auto start = tmbench::Clock::now();
  const double cpu_start = process_cpu_us();
  std::thread feeder([&] {
    for (int i = 0; i < frames; ++i) {
      GstBuffer *buffer = gst_buffer_new_memdup(frame.data(), frame.size());
      GST_BUFFER_PTS(buffer) = gst_util_uint64_scale(i, GST_SECOND, 30);
      gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  });
  int pulled = 0;
  while (GstSample *sample = gst_app_sink_pull_sample(GST_APP_SINK(sink))) {
    if (pull == Pull::Map) {
      GstMapInfo map;
      if (!gst_buffer_map(gst_sample_get_buffer(sample), &map, GST_MAP_READ)) {
        std::fprintf(stderr, "%s: a tensor does not map\n", description.c_str());
        std::exit(1);
      }
      gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
    } else if (pull == Pull::Normalise) {
      GstVideoInfo out;
      gst_video_info_from_caps(&out, gst_sample_get_caps(sample));
      GstMapInfo map;
      gst_buffer_map(gst_sample_get_buffer(sample), &map, GST_MAP_READ);
      normalise(map.data, GST_VIDEO_INFO_PLANE_STRIDE(&out, 0), GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out),
                &tensor);
      gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
    }
    gst_sample_unref(sample);
    ++pulled;
  }
  feeder.join();
  const double us = tmbench::us_since(start) / frames;
  const double cpu_us = (process_cpu_us() - cpu_start) / frames;
  if (pulled != frames) {
    std::fprintf(stderr, "%s: %d of %d frames came out\n", description.c_str(), pulled, frames);
    std::exit(1);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return {us, cpu_us};
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const int frames = argc > 1 ? std::atoi(argv[1]) : 60;
  const int batches = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string ours = "tensorconvert width=640 height=640 dtype=float32 layout=nchw "
                           "mean=\"<0.485,0.456,0.406>\" std=\"<0.229,0.224,0.225>\"";
  const std::string usual = "videoconvert ! videoscale ! video/x-raw,format=RGB,width=640,height=640";
  const std::string gl = ours + " storage=pbo";
  const std::string gl_from_pbo = "tensorupload storage=pbo ! " + gl;
  GstElementFactory *upload = gst_element_factory_find("tensorupload");
  const bool have_gl = upload != nullptr && std::getenv("BENCH_NO_GL") == nullptr;
  if (upload)
    gst_object_unref(upload);
  double load[3] = {0, 0, 0};
  if (std::FILE *f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
      load[0] = load[1] = load[2] = -1;
    std::fclose(f);
  }
  std::printf("1080p -> 640x640 float32 NCHW normalised, %d frames, median of %d batches, %u CPUs, load average "
              "%.2f %.2f %.2f\n\n",
              frames, batches, std::thread::hardware_concurrency(), load[0], load[1], load[2]);
  std::printf("| input | `videoconvert ! videoscale` + normalisation loop | `tensorconvert` CPU | ratio | CPU time: "
              "usual | CPU time: `tensorconvert` CPU | CPU ratio | `tensorconvert storage=pbo`, system in | ratio | "
              "`tensorupload storage=pbo ! tensorconvert storage=pbo` | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const char *format : {"NV12", "RGBA"}) {
    std::vector<double> a, b, ca, cb, c, d;
    for (int i = 0; i < batches; ++i) { // alternating, so noise hits every column
      const PerFrame u = run(format, frames, usual, Pull::Normalise);
      const PerFrame o = run(format, frames, ours + " storage=system", Pull::Keep);
      a.push_back(u.wall_us);
      ca.push_back(u.cpu_us);
      b.push_back(o.wall_us);
      cb.push_back(o.cpu_us);
      if (have_gl) {
        c.push_back(run(format, frames, gl, Pull::Map).wall_us);
        d.push_back(run(format, frames, gl_from_pbo, Pull::Map).wall_us);
      }
    }
    const double usual_us = tmbench::stats_of(a).median, ours_us = tmbench::stats_of(b).median;
    const double usual_cpu = tmbench::stats_of(ca).median, ours_cpu = tmbench::stats_of(cb).median;
    std::printf("| %s | %.0f µs | %.0f µs | %.2f | %.0f µs | %.0f µs | %.2f |", format, usual_us, ours_us,
                ours_us / usual_us, usual_cpu, ours_cpu, ours_cpu / usual_cpu);
    if (have_gl) {
      const double gl_us = tmbench::stats_of(c).median, pbo_us = tmbench::stats_of(d).median;
      std::printf(" %.0f µs | %.2f | %.0f µs | %.2f |\n", gl_us, gl_us / usual_us, pbo_us, pbo_us / usual_us);
    } else {
      std::printf(" (no GL) | | (no GL) | |\n");
    }
  }
  return 0;
}
