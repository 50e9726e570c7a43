// SPDX-License-Identifier: Apache-2.0
/* Many cameras, one model, results back on each camera (issue 40): N
 * streams of one 1080p H.264 clip, each decoded and converted, then
 *
 *   chains: N x (decode ! tensorconvert ! tensorinfer model=classifier.onnx ! fakesink)
 *   split:  N x (decode ! tensorconvert ! b.sink_i)
 *           tensorbatch name=b ! tensorinfer model=classifier_batch.onnx output=tensors
 *           ! tensorunbatch, N x (u.src_i ! queue ! fakesink)
 *   direct: the split without the queues, N x (u.src_i ! fakesink async=false):
 *           each stream's results handed on in the split's own thread, as
 *           a sink that never blocks allows (a demuxer's usual queues cost a
 *           thread and a hand-off per stream frame)
 *   no model: N x (decode ! tensorconvert ! fakesink): what no batching
 *           changes, so its ratio to the chains is the best any batch of
 *           this model could reach (a model call that cost nothing)
 *
 * in one process, side by side in the same run. Two figures per cell:
 * - CPU time (user + system, the whole process) per stream frame, the
 *   clip decoded as fast as it goes;
 * - latency from each frame's capture to its results at its own stream's
 *   sink, p50 and p99 over every frame of every stream, with each decoder's
 *   output paced to the clip's clock at FPS frames per second (clocksync):
 *   capture is the moment the paced frame leaves for conversion. The first
 *   second of each stream (sessions made, pools filled) is left out.
 * Beside them the model's own time per call (p50: a buffer into tensorinfer
 * to its result out), so the target "p99 at most one frame interval plus
 * one model run" can be read off the row.
 *
 *   bench-batch-split [FRAMES] [STREAMS...]
 *   environment: FPS (10), SIZE (224), ROUNDS (3), KINDS (all), INFER_THREADS (ONNX Runtime's default)
 *
 * CPU time is the median of ROUNDS unpaced runs; latency comes from one
 * paced run, in which tensorbatch's max-latency is half a second
 * (clocksync makes the pipeline live with no latency of its own).
 *
 * SIZE is 224 or 640 (the sizes infer_models.py makes). Needs tensorinfer (ONNX Runtime at run time), openh264 and
 * python3-onnx for the models (tests/gst/infer_models.py). Not a test: it asserts nothing; docs/performance.md quotes
 * its latest run. */
#include <gst/gst.h>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

double cpu_seconds() {
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  return use.ru_utime.tv_sec + use.ru_stime.tv_sec + (use.ru_utime.tv_usec + use.ru_stime.tv_usec) / 1e6;
}

/* Times of frames keyed by (stream, PTS), taken in pad probes. */
struct Clocks {
  std::mutex lock;
  std::map<std::pair<int, GstClockTime>, gint64> start;
  std::vector<double> latencies_ms; // end − start, per frame that reached its sink
  std::size_t results = 0;          // frames that reached their sink
  std::map<GstClockTime, gint64> model_in;
  std::vector<double> model_ms;
};

struct ProbeTag {
  Clocks *clocks;
  int stream;
  enum { kCapture, kResult, kModelIn, kModelOut } what;
};

/* A raw H.264 clip carries no timestamps after openh264dec (no container,
 * no VUI timing): each stream's frames are stamped at the clip's rate
 * before the pacing, as a camera stamps its frames. */
struct Stamp {
  GstClockTime interval;
  guint64 next = 0;
};

GstPadProbeReturn stamp(GstPad *, GstPadProbeInfo *info, gpointer data) {
  auto *st = static_cast<Stamp *>(data);
  GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
  GST_BUFFER_PTS(buffer) = st->next++ * st->interval;
  GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION(buffer) = st->interval;
  GST_PAD_PROBE_INFO_DATA(info) = buffer;
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *info, gpointer data) {
  const auto *tag = static_cast<const ProbeTag *>(data);
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  const gint64 now = g_get_monotonic_time();
  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  std::lock_guard<std::mutex> guard(tag->clocks->lock);
  Clocks &c = *tag->clocks;
  switch (tag->what) {
  case ProbeTag::kCapture: c.start[{tag->stream, pts}] = now; break;
  case ProbeTag::kResult: {
    ++c.results;
    auto found = c.start.find({tag->stream, pts});
    // The first second of each stream (sessions made, pools filled) is the
    // start, not the steady state a deployment runs in: left out.
    if (found != c.start.end() && pts >= GST_SECOND)
      c.latencies_ms.push_back((now - found->second) / 1000.0);
    break;
  }
  case ProbeTag::kModelIn: c.model_in[pts] = now; break;
  case ProbeTag::kModelOut: {
    auto found = c.model_in.find(pts);
    if (found != c.model_in.end())
      c.model_ms.push_back((now - found->second) / 1000.0);
    break;
  }
  }
  return GST_PAD_PROBE_OK;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

struct Cell {
  bool ok = false;
  double cpu_ms = 0, p50 = 0, p99 = 0, model_ms = 0;
  std::size_t frames_seen = 0;
  guint64 late = 0; // frames tensorbatch dropped as later than max-latency (paced)
};

void probe(GstElement *pipeline, const std::string &element, const char *pad, std::vector<ProbeTag> &tags, int k) {
  GstElement *e = gst_bin_get_by_name(GST_BIN(pipeline), element.c_str());
  GstPad *p = gst_element_get_static_pad(e, pad);
  gst_pad_add_probe(p, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &tags[k], nullptr);
  gst_object_unref(p);
  gst_object_unref(e);
}

/* One run of `kind` ("chains", "split", "direct" or "no model") with n streams; paced or not. */
bool run_once(const std::string &kind, int n, bool paced, const std::string &clip, const std::string &models, int size,
              int fps, Cell *cell) {
  const std::string convert = "tensorconvert width=" + std::to_string(size) + " height=" + std::to_string(size) +
                              " resize=letterbox layout=nchw dtype=float32 ";
  // infer_models.py's classifier for 224x224 tensors, classifier640 for 640x640.
  const std::string classifier = models + "/classifier" + (size == 224 ? "" : std::to_string(size));
  // INFER_THREADS: every session's intra-op threads (ONNX Runtime's default where unset).
  const std::string threads = g_getenv("INFER_THREADS") ? std::string(" threads=") + g_getenv("INFER_THREADS") : "";
  std::string text;
  // Paced, the pipeline is live (clocksync) with no latency of its own: a
  // batch then waits up to half a second for its slowest stream's frame
  // (max-latency, as a live deployment sets it), instead of leaving at its
  // first frame. Only the start needs it (sessions made, pools filled),
  // which the latency figures leave out; a late frame would be dropped.
  const GstClockTime wait = paced ? GST_SECOND / 2 : 0;
  const bool split = kind == "split" || kind == "direct";
  if (split)
    text = "tensorbatch name=b max-latency=" + std::to_string(wait) + " ! tensorinfer name=m model=" + classifier +
           "_batch.onnx output=tensors" + threads + " ! "
           "tensorunbatch name=u ";
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    text += "filesrc location=" + clip + " ! h264parse ! openh264dec ! ";
    text += paced ? "clocksync name=p" + k + " ! " : "identity name=p" + k + " ! ";
    text += convert;
    if (kind == "split")
      text += "! b.sink_" + k + " u.src_" + k + " ! queue ! fakesink name=s" + k + " sync=false ";
    else if (split) // no queue: a sink that prerolled would block the split's one thread
      text += "! b.sink_" + k + " u.src_" + k + " ! fakesink name=s" + k + " sync=false async=false ";
    else if (kind == "no model")
      text += "! fakesink name=s" + k + " sync=false ";
    else
      text += "! tensorinfer name=m" + k + " model=" + classifier + ".onnx" + threads + " ! fakesink name=s" + k +
              " sync=false ";
  }
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(text.c_str(), &error);
  if (!pipeline || error) {
    std::fprintf(stderr, "%s\n", error ? error->message : "no pipeline");
    g_clear_error(&error);
    return false;
  }
  Clocks clocks;
  std::vector<ProbeTag> tags;
  for (int i = 0; i < n; ++i)
    tags.push_back({&clocks, i, ProbeTag::kCapture});
  for (int i = 0; i < n; ++i)
    tags.push_back({&clocks, i, ProbeTag::kResult});
  tags.push_back({&clocks, 0, ProbeTag::kModelIn});
  tags.push_back({&clocks, 0, ProbeTag::kModelOut});
  std::vector<Stamp> stamps(n, Stamp{GST_SECOND / static_cast<GstClockTime>(fps)});
  for (int i = 0; i < n; ++i) {
    GstElement *pace = gst_bin_get_by_name(GST_BIN(pipeline), ("p" + std::to_string(i)).c_str());
    GstPad *in = gst_element_get_static_pad(pace, "sink");
    gst_pad_add_probe(in, GST_PAD_PROBE_TYPE_BUFFER, stamp, &stamps[i], nullptr);
    gst_object_unref(in);
    gst_object_unref(pace);
    probe(pipeline, "p" + std::to_string(i), "src", tags, i);
    probe(pipeline, "s" + std::to_string(i), "sink", tags, n + i);
  }
  // The model's time per call: stream 0's tensorinfer in the chains, the
  // batch's in the split.
  if (kind != "no model") {
    const std::string model = split ? "m" : "m0";
    probe(pipeline, model, "sink", tags, 2 * n);
    probe(pipeline, model, "src", tags, 2 * n + 1);
  }
  const double cpu_before = cpu_seconds();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 600 * GST_SECOND,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const bool eos = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (msg && !eos) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    std::fprintf(stderr, "%s %d: %s\n", kind.c_str(), n, err->message);
    g_error_free(err);
  }
  const double cpu = cpu_seconds() - cpu_before;
  if (msg)
    gst_message_unref(msg);
  guint64 late = 0;
  if (split) {
    GstElement *batch = gst_bin_get_by_name(GST_BIN(pipeline), "b");
    g_object_get(batch, "dropped-frames", &late, nullptr);
    gst_object_unref(batch);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  if (!eos)
    return false;
  std::lock_guard<std::mutex> guard(clocks.lock);
  cell->frames_seen = clocks.start.size();
  // Every frame reaches its stream's sink, or (live, paced) was dropped by
  // tensorbatch as later than max-latency, which the table reports.
  cell->late = late;
  if (clocks.results + late != clocks.start.size()) {
    std::fprintf(stderr, "%s %d: %zu of %zu frames reached their stream's sink, %" G_GUINT64_FORMAT " dropped late\n",
                 kind.c_str(), n, clocks.results, clocks.start.size(), late);
    return false;
  }
  if (paced && g_getenv("BENCH_DUMP"))
    for (double ms : clocks.latencies_ms)
      std::fprintf(stderr, "%s %d: %.1f\n", kind.c_str(), n, ms);
  if (paced) {
    cell->p50 = percentile(clocks.latencies_ms, 0.5);
    cell->p99 = percentile(clocks.latencies_ms, 0.99);
    cell->model_ms = kind == "no model" ? 0.0 : percentile(clocks.model_ms, 0.5);
  } else {
    cell->cpu_ms = 1000.0 * cpu / std::max<std::size_t>(1, cell->frames_seen);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const int frames = argc > 1 ? std::atoi(argv[1]) : 60;
  std::vector<int> streams;
  for (int i = 2; i < argc; ++i)
    streams.push_back(std::atoi(argv[i]));
  if (streams.empty())
    streams = {4, 8, 16};
  const int fps = g_getenv("FPS") ? std::atoi(g_getenv("FPS")) : 10;
  const int size = g_getenv("SIZE") ? std::atoi(g_getenv("SIZE")) : 224;
  const int rounds = g_getenv("ROUNDS") ? std::max(1, std::atoi(g_getenv("ROUNDS"))) : 3;
  const char *only = g_getenv("KINDS"); // e.g. "chains,direct" (for a profiler); all where unset
  for (const char *element :
       {"tensorinfer", "tensorbatch", "tensorunbatch", "openh264enc", "openh264dec", "clocksync"}) {
    GstElementFactory *f = gst_element_factory_find(element);
    if (!f) {
      std::printf("%s is missing: nothing measured (see the header)\n", element);
      return 77;
    }
    gst_object_unref(f);
  }
  gchar *dir = g_dir_make_tmp("bench-batch-split-XXXXXX", nullptr);
  const std::string work = dir;
  g_free(dir);
  const char *python = g_getenv("TENSORMEM_TEST_PYTHON");
  const char *script = g_getenv("TENSORMEM_TEST_INFER_MODELS");
  const std::string make = std::string(python ? python : "python3") + " " +
                           (script ? script : "tests/gst/infer_models.py") + " make " + work;
  gint status = 1;
  if (!g_spawn_command_line_sync(make.c_str(), nullptr, nullptr, &status, nullptr) || status != 0) {
    std::printf("cannot make the models (%s): nothing measured\n", make.c_str());
    return 77;
  }
  const std::string clip = work + "/clip.h264";
  // The clip plays at FPS: its timestamps pace the clocksync runs.
  const std::string encode =
      "videotestsrc num-buffers=" + std::to_string(frames) +
      " pattern=ball ! video/x-raw,format=I420,width=1920,height=1080,framerate=" + std::to_string(fps) +
      "/1 ! openh264enc bitrate=8000000 ! h264parse ! filesink location=" + clip;
  GstElement *enc = gst_parse_launch(encode.c_str(), nullptr);
  gst_element_set_state(enc, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(enc);
  gst_message_unref(gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR)));
  gst_object_unref(bus);
  gst_element_set_state(enc, GST_STATE_NULL);
  gst_object_unref(enc);

  std::printf("%d frames of 1080p H.264 per stream, %dx%d float32 NCHW tensors, the small classifier; CPU the median "
              "of %d runs; latency paced at %d fps (frame interval %.0f ms)\n\n",
              frames, size, size, rounds, fps, 1000.0 / fps);
  std::printf("| streams | pipeline | CPU ms/frame | CPU vs chains | latency p50 ms | latency p99 ms | model ms/call "
              "| p99 vs interval + model |\n");
  std::printf("|---------|----------|--------------|---------------|----------------|----------------|--------------"
              "-|--------------------------|\n");
  for (int n : streams) {
    Cell chains;
    for (const char *kind : {"chains", "split", "direct", "no model"}) {
      if (only && !std::strstr(only, kind))
        continue;
      // CPU: the median of `rounds` unpaced runs; latency: one paced run.
      Cell cell;
      std::vector<double> cpu;
      bool ok = true;
      for (int r = 0; ok && r < rounds; ++r) {
        ok = run_once(kind, n, false, clip, work, size, fps, &cell);
        cpu.push_back(cell.cpu_ms);
      }
      ok = ok && run_once(kind, n, true, clip, work, size, fps, &cell);
      cell.cpu_ms = percentile(cpu, 0.5);
      if (!ok) {
        std::printf("| %7d | %-8s | failed |\n", n, kind);
        continue;
      }
      if (std::string(kind) == "chains")
        chains = cell;
      const double budget = 1000.0 / fps + cell.model_ms;
      char ratio[32] = "";
      if (std::string(kind) != "chains" && chains.cpu_ms > 0)
        std::snprintf(ratio, sizeof ratio, "%.2fx", cell.cpu_ms / chains.cpu_ms);
      std::printf("| %7d | %-8s | %12.2f | %13s | %14.1f | %14.1f | %13.1f | %24s |\n", n, kind, cell.cpu_ms, ratio,
                  cell.p50, cell.p99, cell.model_ms,
                  (std::to_string(static_cast<int>(cell.p99 + 0.5)) + (cell.p99 <= budget ? " <= " : " > ") +
                   std::to_string(static_cast<int>(budget + 0.5)))
                      .c_str());
      if (cell.late)
        std::printf("|         | (%" G_GUINT64_FORMAT " of %zu frames dropped late in the paced run) | | | | | | |\n",
                    cell.late, cell.frames_seen);
      std::fflush(stdout);
    }
  }
  gchar *argv_rm[] = {const_cast<gchar *>("rm"), const_cast<gchar *>("-rf"), const_cast<gchar *>(work.c_str()),
                      nullptr};
  g_spawn_sync(nullptr, argv_rm, nullptr, G_SPAWN_SEARCH_PATH, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  return 0;
}
