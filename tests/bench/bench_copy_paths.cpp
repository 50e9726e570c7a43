// SPDX-License-Identifier: Apache-2.0
/* The copies users hit, side by side with a plain memcpy of the same bytes
 * (issue 13: every copy path ≥ 0.9× memcpy bandwidth): tensorupload copying
 * a system-memory frame into its pool (system, DMA-BUF, PBO storage) and
 * tensordownload copying a strided frame into the default layout for a
 * consumer that does not read GstVideoMeta. Every element row goes through
 * the one frame copy of the elements (gsttensorframecopy-private.cpp).
 * Frames are pushed through a GstHarness and pulled out again; the batches
 * alternate between the rows so that machine noise hits them alike, and each
 * figure is the median over the batches of the CPU time per frame of the
 * thread that pushes (the copies run on it), so that other processes on a
 * shared machine do not count. Prints a table; asserts nothing. Besides
 * the floors of a contiguous frame, one floor copies the download row's
 * strided frame row by row as gst_video_frame_copy() would, and one row
 * pushes the frame through `identity` in the same harness: what every
 * element row pays besides its copy, taken off in the last column. Run it again
 * with GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x100000 to see
 * the copies where memcpy streams frames of these sizes (a smaller cache).
 *
 *   GST_PLUGIN_PATH=build/gst/plugin TENSORMEM_DMABUF_SOURCE=memfd \
 *       build/tests/bench/bench-copy-paths [FRAMES [BATCHES]]   (defaults 100 5)
 */
#include "bench_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

/* CPU time of the calling thread, in microseconds. */
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct Size {
  const char *name;
  int width, height;
};

/* One row: how to run a batch of `frames` copies; microseconds per frame,
 * or a negative value when the row cannot run here (`why` says why). */
struct Row {
  Row(std::string n, std::function<double(int, std::string *)> r) : name(std::move(n)), run(std::move(r)) {}
  std::string name;
  std::function<double(int frames, std::string *why)> run;
  std::vector<double> samples;
  std::string why;
};

std::string caps_of(const Size &s) {
  return "video/x-raw,format=RGBA,width=" + std::to_string(s.width) + ",height=" + std::to_string(s.height) +
         ",framerate=30/1";
}

/* A system-memory frame of `s`, every row `stride` bytes apart (with a
 * GstVideoMeta when that is not the default stride), bytes set. */
GstBuffer *frame_with_stride(const Size &s, gint stride) {
  const gsize size = static_cast<gsize>(stride) * s.height;
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
  gst_buffer_memset(buffer, 0, 0x5a, size);
  if (stride != s.width * 4) {
    gsize offset[GST_VIDEO_MAX_PLANES] = {0};
    gint strides[GST_VIDEO_MAX_PLANES] = {stride};
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGBA, s.width, s.height, 1,
                                   offset, strides);
  }
  return buffer;
}

/* `frames` pushes of `input` (a new reference each time) through
 * `description`, each output pulled and dropped; microseconds per frame.
 * The element named "el" must report copied-bytes > 0, so that a row that
 * stopped copying is not mistaken for a fast copy; a description without
 * an "el" (the harness's own cost) must copy nothing instead. */
double through(const std::string &description, const Size &s, GstBuffer *input, int frames, std::string *why,
               const char *out_feature = nullptr) {
  GstHarness *h = gst_harness_new_parse(description.c_str());
  const std::string caps = caps_of(s);
  std::string out_caps = caps;
  if (out_feature)
    out_caps.insert(std::string("video/x-raw").size(), std::string("(") + out_feature + ")");
  gst_harness_set_caps_str(h, caps.c_str(), out_caps.c_str());
  for (int i = 0; i < 4; ++i) { // warm-up: negotiation, pool, first maps
    if (gst_harness_push(h, gst_buffer_ref(input)) != GST_FLOW_OK) {
      *why = "the element refused the frame";
      gst_harness_teardown(h);
      return -1;
    }
    gst_buffer_unref(gst_harness_pull(h));
  }
  const double start = thread_cpu_us();
  for (int i = 0; i < frames; ++i) {
    gst_harness_push(h, gst_buffer_ref(input));
    gst_buffer_unref(gst_harness_pull(h));
  }
  const double us = (thread_cpu_us() - start) / frames;
  guint64 copied = 0;
  GstElement *el = gst_bin_get_by_name(GST_BIN(h->element), "el");
  if (el)
    g_object_get(el, "copied-bytes", &copied, nullptr);
  GstBuffer *out = gst_harness_push_and_pull(h, gst_buffer_ref(input));
  // identity may hand back a new buffer (ours is not writable), but it shares the input's memory.
  const bool passed_through = out && gst_buffer_n_memory(out) == gst_buffer_n_memory(input) &&
                              gst_buffer_peek_memory(out, 0) == gst_buffer_peek_memory(input, 0);
  gst_clear_buffer(&out);
  gst_harness_teardown(h);
  if (el ? copied == 0 : !passed_through) {
    *why = el ? "the element copied nothing" : "the harness did not hand the input frame back";
    gst_clear_object(&el);
    return -1;
  }
  gst_clear_object(&el);
  return us;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const int frames = argc > 1 ? std::atoi(argv[1]) : 100;
  const int batches = argc > 2 ? std::atoi(argv[2]) : 5;
  if (!gst_element_factory_find("tensorupload")) {
    std::fprintf(stderr, "tensorupload not found: set GST_PLUGIN_PATH=build/gst/plugin\n");
    return 77;
  }
  std::printf("Copy paths against memcpy, RGBA, %d frames per batch, median of %d alternating batches, CPU time of the "
              "pushing thread\n",
              frames, batches);
  for (const Size s : {Size{"1080p", 1920, 1080}, Size{"640x480", 640, 480}}) {
    const gint row = s.width * 4;
    const gsize bytes = static_cast<gsize>(row) * s.height;
    GstBuffer *plain = frame_with_stride(s, row);
    GstBuffer *padded = frame_with_stride(s, row + 256);
    /* The floor copies what the elements copy: out of the input frame's
     * memory into another frame's memory, held mapped. */
    GstMapInfo src, strided, out[2];
    GstBuffer *targets[2] = {frame_with_stride(s, row), frame_with_stride(s, row)};
    gst_buffer_map(plain, &src, GST_MAP_READ);
    gst_buffer_map(padded, &strided, GST_MAP_READ);
    for (int i = 0; i < 2; ++i)
      gst_buffer_map(targets[i], &out[i], GST_MAP_WRITE);
    // `ways` destinations in turn: 1 stays in the cache, 2 is what a pool of two buffers hands out.
    auto floor = [&](int ways) {
      return [&, ways](int n, std::string *) {
        const double start = thread_cpu_us();
        for (int i = 0; i < n; ++i) {
          guint8 *dst = out[i % ways].data;
          std::memcpy(dst, src.data, bytes);
          asm volatile("" : : "r"(dst) : "memory");
        }
        return (thread_cpu_us() - start) / n;
      };
    };

    /* What gst_video_frame_copy() does with the strided frame (a memcpy per
     * row), into two destinations in turn: the floor of the download row's
     * layout, whose source rows are 256 bytes apart (the hardware
     * prefetchers read some of those gaps too). */
    auto strided_floor = [&](int n, std::string *) {
      const gsize src_stride = static_cast<gsize>(row) + 256;
      const double start = thread_cpu_us();
      for (int i = 0; i < n; ++i) {
        guint8 *dst = out[i % 2].data;
        for (int y = 0; y < s.height; ++y)
          std::memcpy(dst + static_cast<gsize>(y) * row, strided.data + static_cast<gsize>(y) * src_stride, row);
        asm volatile("" : : "r"(dst) : "memory");
      }
      return (thread_cpu_us() - start) / n;
    };

    std::vector<Row> rows;
    rows.emplace_back("memcpy of the frame into one destination (floor)", floor(1));
    rows.emplace_back("memcpy of the frame into two destinations in turn (as a pool of two)", floor(2));
    rows.emplace_back("memcpy per row of the strided frame (rows 256 bytes longer), two destinations in turn",
                      strided_floor);
    for (const char *storage : {"system", "dmabuf", "pbo"}) {
      const std::string d = std::string("tensorupload name=el storage=") + storage;
      rows.emplace_back(std::string("`tensorupload storage=") + storage + "` (a system frame copied into its pool)",
                        [&, d, storage](int n, std::string *why) {
                          return through(d, s, plain, n, why,
                                         std::string(storage) == "pbo" ? "memory:TensorPBO" : nullptr);
                        });
    }
    rows.emplace_back("`tensordownload` (rows 256 bytes longer than the picture, copied into the default layout)",
                      [&](int n, std::string *why) { return through("tensordownload name=el", s, padded, n, why); });
    /* What every element row pays besides its copy: a push into the
     * harness and a pull out of it, here of a frame no one copies. */
    rows.emplace_back("`identity` through the same harness (no copy: the harness's own cost per frame)",
                      [&](int n, std::string *why) { return through("identity", s, padded, n, why); });

    for (int b = 0; b < batches; ++b)
      for (Row &r : rows) {
        if (!r.why.empty())
          continue;
        const double us = r.run(frames, &r.why);
        if (us >= 0)
          r.samples.push_back(us);
      }

    std::printf("\n%s (%" G_GSIZE_FORMAT " bytes of picture)\n\n", s.name, bytes);
    std::printf("| path | µs per frame | GB/s | vs memcpy (one destination) | vs memcpy (two in turn) | "
                "copy alone (harness's own cost taken off): vs memcpy (two in turn) |\n"
                "|---|---|---|---|---|---|\n");
    const double floor_us = tmbench::stats_of(rows[0].samples).median;
    const double floor2_us = tmbench::stats_of(rows[1].samples).median;
    const Row &harness = rows.back();
    const double harness_us = harness.samples.empty() ? 0 : tmbench::stats_of(harness.samples).median;
    for (const Row &r : rows) {
      if (r.samples.empty()) {
        std::printf("| %s | — | — | not run: %s | | |\n", r.name.c_str(), r.why.c_str());
        continue;
      }
      const double us = tmbench::stats_of(r.samples).median;
      std::printf("| %s | %.1f | %.2f | %.2f× | %.2f× |", r.name.c_str(), us, bytes / us / 1e3, floor_us / us,
                  floor2_us / us);
      // Element rows (they go through the harness): the copy without the harness's push and pull.
      const bool element_row = r.name[0] == '`' && &r != &harness;
      if (element_row && !harness.samples.empty())
        std::printf(" %.2f× |\n", floor2_us / (us - harness_us));
      else
        std::printf(" |\n");
    }
    for (int i = 0; i < 2; ++i) {
      gst_buffer_unmap(targets[i], &out[i]);
      gst_buffer_unref(targets[i]);
    }
    gst_buffer_unmap(padded, &strided);
    gst_buffer_unmap(plain, &src);
    gst_buffer_unref(plain);
    gst_buffer_unref(padded);
  }
  gst_deinit();
  return 0;
}
