// SPDX-License-Identifier: Apache-2.0
// OpenGL PBO storage on the headless GL worker: map+unmap latency of a whole
// 1080p RGBA buffer (core Tensor::map and gst_memory_map), memcpy bandwidth
// through a PBO map against plain memcpy, N reader threads joining one
// mapping against N serial maps, and 1080p RGBA pipeline throughput of
// tensorupload storage=pbo ! tensordownload against identity. Prints tables;
// asserts nothing. Exits 77 (skip) when no headless GL context can be made.
//
// Usage (N scales every loop, default 200; every figure is the best of
// BATCHES runs, default 3):
//   GST_PLUGIN_PATH=build/gst/plugin build/tests/bench/bench-pbo [N [BATCHES]]
#include "bench_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <gst/video/video.h>

#include <tensormem/gl_worker.hpp>
#include <tensormem/tensormem.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace tensormem;

namespace {

using namespace tmbench; // Clock, Stats, time_each, ...

constexpr std::size_t kWidth = 1920, kHeight = 1080, kChannels = 4;
constexpr std::size_t kFrameBytes = kWidth * kHeight * kChannels; // 8 294 400
constexpr const char *kCaps1080 = "video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1";
constexpr const char *kPboCaps1080 = "video/x-raw(memory:TensorPBO),format=RGBA,width=1920,height=1080,framerate=30/1";

[[noreturn]] void die(const std::string &what) { tmbench::die("bench-pbo", what); }

template <typename T> T take(Result<T> r, const char *what) {
  if (!r)
    die(std::string(what) + ": " + r.error().message());
  return std::move(*r);
}

void keep(const void *p) { asm volatile("" : : "r"(p) : "memory"); }

/* Sums `len` bytes eight at a time: a read that the compiler cannot drop. */
std::uint64_t sum_words(const std::byte *p, std::size_t len) {
  std::uint64_t acc = 0;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc += w;
  }
  for (; i < len; ++i)
    acc += static_cast<std::uint64_t>(p[i]);
  return acc;
}

Tensor frame_pbo(GlWorker &worker, PboUsage usage = PboUsage::Upload) {
  return take(worker.create_pbo(kFrameBytes, {kHeight, kWidth, kChannels}, DType::U8, "bench", usage), "create_pbo");
}

// ---- 1. map+unmap latency ---------------------------------------------------

void map_latency(GlWorker &worker, GstTensorMemGlWorker *gst_worker, int n) {
  std::printf("\n## Map+unmap of one whole 1080p RGBA buffer (%zu bytes), %d iterations\n\n", kFrameBytes, n);
  std::printf("| what | median | p99 | glMapBufferRange per map |\n|---|---|---|---|\n");
  auto row = [&](const char *what, auto fn) {
    const std::uint64_t before = worker.gl_map_calls();
    const Stats s = time_each(n, fn);
    const double per = static_cast<double>(worker.gl_map_calls() - before) / ((n + std::max(n / 20, 5)) * g_batches);
    std::printf("| %s | %.1f µs | %.1f µs | %.2f |\n", what, s.median, s.p99, per);
  };

  Tensor heap = take(Tensor::allocate({kHeight, kWidth, kChannels}, DType::U8), "allocate");
  row("heap tensor, `Tensor::map(Read)` (reference: the state machine alone)", [&] {
    auto m = heap.map(CpuAccess::Read);
    keep(m->data());
  });

  Tensor pbo = frame_pbo(worker);
  struct Access {
    const char *label;
    CpuAccess access;
  } accesses[] = {{"PBO, `Tensor::map(Read)`", CpuAccess::Read},
                  {"PBO, `Tensor::map(Write)`", CpuAccess::Write},
                  {"PBO, `Tensor::map(ReadWrite)`", CpuAccess::ReadWrite}};
  for (const Access &a : accesses) {
    row(a.label, [&] {
      auto m = pbo.map(a.access);
      if (!m)
        die("map: " + m.error().message());
      keep(m->data());
    });
  }
  {
    auto held = take(pbo.map(CpuAccess::Read), "held map");
    row("PBO, `Tensor::map(Read)` while another reader holds it (joins the GL map)", [&] {
      auto m = pbo.map(CpuAccess::Read);
      keep(m->data());
    });
  }

  GstAllocator *allocator = gst_tensor_mem_pbo_allocator_new(gst_worker);
  GstMemory *mem = gst_allocator_alloc(allocator, kFrameBytes, nullptr);
  if (!mem)
    die("gst_allocator_alloc of a PBO failed");
  struct GstAccess {
    const char *label;
    GstMapFlags flags;
  } gst_accesses[] = {{"PBO `GstMemory`, `gst_memory_map(READ)`", GST_MAP_READ},
                      {"PBO `GstMemory`, `gst_memory_map(WRITE)`", GST_MAP_WRITE},
                      {"PBO `GstMemory`, `gst_memory_map(READWRITE)`", GST_MAP_READWRITE}};
  for (const GstAccess &a : gst_accesses) {
    row(a.label, [&] {
      GstMapInfo info;
      if (!gst_memory_map(mem, &info, a.flags))
        die("gst_memory_map failed");
      keep(info.data);
      gst_memory_unmap(mem, &info);
    });
  }
  gst_memory_unref(mem);

  GstAllocator *sys = gst_tensor_mem_system_allocator_get();
  GstMemory *sys_mem = gst_allocator_alloc(sys, kFrameBytes, nullptr);
  row("system tensor `GstMemory`, `gst_memory_map(READ)` (reference)", [&] {
    GstMapInfo info;
    gst_memory_map(sys_mem, &info, GST_MAP_READ);
    keep(info.data);
    gst_memory_unmap(sys_mem, &info);
  });
  gst_memory_unref(sys_mem);
  gst_object_unref(sys);

  // Allocation, for scale: why a pool keeps its PBOs.
  const Stats alloc = time_each(std::max(n / 10, 10), [&] {
    GstMemory *m = gst_allocator_alloc(allocator, kFrameBytes, nullptr);
    gst_memory_unref(m); // glDeleteBuffers is posted, not waited for
  });
  std::printf("| new 1080p PBO `GstMemory` (glBufferData) + unref, no map | %.1f µs | %.1f µs | 0 |\n", alloc.median,
              alloc.p99);
  gst_object_unref(allocator);
}

// ---- 2. memcpy bandwidth ----------------------------------------------------

void bandwidth(GlWorker &worker, int n) {
  std::printf("\n## memcpy of one 1080p RGBA frame (%zu bytes), %d copies\n\n", kFrameBytes, n);
  std::printf("| copy | median | throughput (median) |\n|---|---|---|\n");
  auto row = [&](const char *what, auto fn) {
    const Stats s = time_each(n, fn);
    std::printf("| %s | %.0f µs | %.2f GB/s |\n", what, s.median, kFrameBytes / s.median / 1e3);
  };
  std::vector<std::byte> src(kFrameBytes, std::byte{0x5a}), dst(kFrameBytes, std::byte{0});

  row("plain `memcpy` heap → heap (floor)", [&] {
    std::memcpy(dst.data(), src.data(), kFrameBytes);
    keep(dst.data());
  });

  Tensor up = frame_pbo(worker, PboUsage::Upload);
  {
    auto m = take(up.map(CpuAccess::Write), "map(Write)");
    std::byte *p = m.mutable_bytes().data();
    row("heap → PBO, into one held `map(Write)`", [&] {
      std::memcpy(p, src.data(), kFrameBytes);
      keep(p);
    });
  }
  row("heap → PBO, `map(Write)` + memcpy + unmap per frame (what an upload does)", [&] {
    auto m = up.map(CpuAccess::Write);
    std::memcpy(m->mutable_bytes().data(), src.data(), kFrameBytes);
    keep(m->data());
  });

  Tensor down = frame_pbo(worker, PboUsage::Download);
  {
    auto w = take(down.map(CpuAccess::Write), "map(Write)");
    std::memset(w.mutable_bytes().data(), 0x33, kFrameBytes);
  }
  {
    auto m = take(down.map(CpuAccess::Read), "map(Read)");
    const std::byte *p = m.data();
    row("PBO → heap, out of one held `map(Read)`", [&] {
      std::memcpy(dst.data(), p, kFrameBytes);
      keep(dst.data());
    });
  }
  row("PBO → heap, `map(Read)` + memcpy + unmap per frame (what a download does)", [&] {
    auto m = down.map(CpuAccess::Read);
    std::memcpy(dst.data(), m->data(), kFrameBytes);
    keep(dst.data());
  });
}

// ---- 3. N readers joining one mapping vs N serial maps ----------------------

/* A barrier whose waiters spin (yielding) instead of sleeping: on a VM a
 * futex wake-up of an idle vCPU costs tens of microseconds, which would
 * swamp the maps being measured. */
class SpinBarrier {
public:
  explicit SpinBarrier(int parties) : parties_(parties) {}
  void arrive_and_wait() {
    const int generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == parties_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == generation)
      std::this_thread::yield();
  }

private:
  const int parties_;
  std::atomic<int> arrived_{0};
  std::atomic<int> generation_{0};
};

struct ReaderResult {
  Stats joined, serial, sync;
  double joined_maps = 0, serial_maps = 0;
};

/* Per round, N threads each map the PBO for reading, wait until all hold it
 * (so they share one GL map), optionally sum their 1/N of the frame, and
 * unmap; against one thread doing N map (+ 1/N of the frame) + unmap in a
 * row. `sync` is the same threaded round with no map at all: the cost of
 * synchronising the threads, which the joined figure includes. */
ReaderResult readers(GlWorker &worker, const Tensor &pbo, int threads, int rounds, bool read) {
  ReaderResult r;
  const std::size_t slice = kFrameBytes / static_cast<std::size_t>(threads);
  std::atomic<std::uint64_t> sink{0};

  auto run_threads = [&](bool map, double *maps_per_round) {
    SpinBarrier sync(threads + 1);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t, copy = pbo] {
        for (int i = 0; i < rounds; ++i) {
          sync.arrive_and_wait(); // round starts
          if (map) {
            auto m = copy.map(CpuAccess::Read);
            if (!m)
              die("reader map: " + m.error().message());
            sync.arrive_and_wait(); // every reader holds the one mapping
            if (read)
              sink.fetch_add(sum_words(m->data() + slice * static_cast<std::size_t>(t), slice),
                             std::memory_order_relaxed);
          } else {
            sync.arrive_and_wait();
          }
          sync.arrive_and_wait(); // every reader has unmapped
        }
      });
    }
    std::vector<double> samples;
    const std::uint64_t before = worker.gl_map_calls();
    for (int i = 0; i < rounds; ++i) {
      const auto start = Clock::now();
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      samples.push_back(us_since(start));
    }
    for (auto &th : pool)
      th.join();
    if (maps_per_round)
      *maps_per_round = static_cast<double>(worker.gl_map_calls() - before) / rounds;
    return stats_of(std::move(samples));
  };

  r.sync = run_threads(false, nullptr);
  r.joined = run_threads(true, &r.joined_maps);

  const std::uint64_t before = worker.gl_map_calls();
  std::vector<double> samples;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    for (int t = 0; t < threads; ++t) {
      auto m = pbo.map(CpuAccess::Read);
      if (read)
        sink.fetch_add(sum_words(m->data() + slice * static_cast<std::size_t>(t), slice), std::memory_order_relaxed);
    }
    samples.push_back(us_since(start));
  }
  r.serial = stats_of(std::move(samples));
  r.serial_maps = static_cast<double>(worker.gl_map_calls() - before) / rounds;
  keep(&sink);
  return r;
}

void reader_threads(GlWorker &worker, int rounds) {
  Tensor pbo = frame_pbo(worker);
  {
    auto w = take(pbo.map(CpuAccess::Write), "map(Write)");
    std::memset(w.mutable_bytes().data(), 1, kFrameBytes);
  }
  for (bool read : {false, true}) {
    const int n = read ? std::max(rounds / 4, 10) : rounds;
    std::printf("\n## N readers of one 1080p PBO: N threads joining one map vs N serial maps on one thread, %s, "
                "%d rounds (medians)\n\n",
                read ? "each reader sums its 1/N of the frame" : "map + unmap only", n);
    std::printf("| N | N threads joining one map: time per round | GL maps per round | (thread sync alone) | "
                "N serial maps: time per round | GL maps per round |\n|---|---|---|---|---|---|\n");
    for (int threads : {1, 2, 4, 8}) {
      ReaderResult r = readers(worker, pbo, threads, n, read);
      for (int b = 1; b < g_batches; ++b) { // best batch, field by field
        const ReaderResult again = readers(worker, pbo, threads, n, read);
        r.joined.median = std::min(r.joined.median, again.joined.median);
        r.serial.median = std::min(r.serial.median, again.serial.median);
        r.sync.median = std::min(r.sync.median, again.sync.median);
      }
      std::printf("| %d | %.1f µs | %.2f | %.1f µs | %.1f µs | %.2f |\n", threads, r.joined.median, r.joined_maps,
                  r.sync.median, r.serial.median, r.serial_maps);
    }
  }
}

// ---- 4. pipeline throughput -------------------------------------------------

guint64 copied_by(GstElement *bin, const char *name) {
  guint64 copied = 0;
  if (GstElement *e = gst_bin_get_by_name(GST_BIN(bin), name)) {
    g_object_get(e, "copied-bytes", &copied, nullptr);
    gst_object_unref(e);
  }
  return copied;
}

struct Throughput {
  double us = 0;
  guint64 up_copied = 0, down_copied = 0;
};

/* Pushes `n` buffers made by `make` through `description` (a bin in a
 * harness, with the shared GL worker set before it starts) and pulls each
 * out; the mean time per buffer. */
template <typename Make>
Throughput harness_run_once(GstTensorMemGlWorker *gst_worker, const char *description, const char *out_caps, int n,
                            Make make) {
  GError *error = nullptr;
  GstElement *bin = gst_parse_bin_from_description(description, TRUE, &error);
  if (!bin)
    die(std::string(description) + ": " + (error ? error->message : "?"));
  GstContext *context = gst_context_new_tensor_mem_gl_worker(gst_worker, TRUE);
  gst_element_set_context(bin, context);
  gst_context_unref(context);
  GstHarness *h = gst_harness_new_with_element(bin, "sink", "src");
  gst_object_unref(bin);
  gst_harness_set_caps_str(h, kCaps1080, out_caps);
  for (int i = 0; i < 8; ++i) { // warm-up: negotiation, pools, first maps
    if (gst_harness_push(h, make()) != GST_FLOW_OK)
      die(std::string(description) + ": warm-up push failed");
    gst_buffer_unref(gst_harness_pull(h));
  }
  Throughput t;
  const guint64 up0 = copied_by(h->element, "up"), down0 = copied_by(h->element, "down");
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    if (gst_harness_push(h, make()) != GST_FLOW_OK)
      die(std::string(description) + ": push failed");
    gst_buffer_unref(gst_harness_pull(h));
  }
  t.us = us_since(start) / n;
  t.up_copied = copied_by(h->element, "up") - up0;
  t.down_copied = copied_by(h->element, "down") - down0;
  gst_harness_teardown(h);
  return t;
}

template <typename Make>
Throughput harness_run(GstTensorMemGlWorker *gst_worker, const char *description, const char *out_caps, int n,
                       Make make) {
  Throughput best = harness_run_once(gst_worker, description, out_caps, n, make);
  for (int b = 1; b < g_batches; ++b) {
    const Throughput t = harness_run_once(gst_worker, description, out_caps, n, make);
    if (t.us < best.us)
      best = t;
  }
  return best;
}

void harness_throughput(GstTensorMemGlWorker *gst_worker, int n) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBA, kWidth, kHeight);
  GstBuffer *frame = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(frame, 0, 0x5a, GST_VIDEO_INFO_SIZE(&info));
  auto system_frame = [frame] { return gst_buffer_ref(frame); };

  // Buffers from a PBO pool, as videotestsrc or a decoder produce when they
  // take the pool tensorupload proposes.
  GstAllocator *allocator = gst_tensor_mem_pbo_allocator_new(gst_worker);
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_pbo(allocator);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string(kCaps1080);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 0, 8);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE))
    die("cannot activate a PBO pool");
  auto pbo_frame = [pool] {
    GstBuffer *b = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool, &b, nullptr) != GST_FLOW_OK)
      die("PBO pool acquire failed");
    return b;
  };

  std::printf("\n## Pipeline, GstHarness: 1080p RGBA buffers pushed and pulled, %d buffers\n\n", n);
  std::printf("| element(s) | input | time per buffer | frames/s | bytes copied per buffer (up + down) |\n"
              "|---|---|---|---|---|\n");
  auto row = [&](const char *desc, const char *input, const Throughput &t) {
    std::printf("| `%s` | %s | %.1f µs | %.0f | %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " |\n", desc, input, t.us,
                1e6 / t.us, t.up_copied / static_cast<guint64>(n), t.down_copied / static_cast<guint64>(n));
  };
  row("identity", "system memory (floor)", harness_run(gst_worker, "identity", kCaps1080, n, system_frame));
  row("identity", "PBO pool (floor)", harness_run(gst_worker, "identity", kCaps1080, n, pbo_frame));
  const char *up_only = "tensorupload name=up storage=pbo";
  const char *up_down = "tensorupload name=up storage=pbo ! tensordownload name=down";
  row(up_only, "PBO pool (zero-copy pass-through)", harness_run(gst_worker, up_only, kPboCaps1080, n, pbo_frame));
  row(up_down, "PBO pool", harness_run(gst_worker, up_down, kCaps1080, n, pbo_frame));
  row(up_only, "system memory (copied into a PBO)", harness_run(gst_worker, up_only, kPboCaps1080, n, system_frame));
  row(up_down, "system memory", harness_run(gst_worker, up_down, kCaps1080, n, system_frame));
  const char *sys_down = "tensorupload name=up storage=system ! tensordownload name=down";
  row(sys_down, "system memory (reference: no PBO)", harness_run(gst_worker, sys_down, kCaps1080, n, system_frame));

  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_object_unref(allocator);
  gst_buffer_unref(frame);
}

/* videotestsrc → `middle` → fakesink to EOS; the mean time per frame. */
Throughput pipeline_run_once(GstTensorMemGlWorker *gst_worker, const char *middle, int n) {
  gchar *description = g_strdup_printf("videotestsrc num-buffers=%d pattern=solid-color ! %s ! %s ! "
                                       "fakesink sync=false",
                                       n, kCaps1080, middle);
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description, &error);
  if (!pipeline)
    die(std::string(description) + ": " + (error ? error->message : "?"));
  g_clear_error(&error);
  GstContext *context = gst_context_new_tensor_mem_gl_worker(gst_worker, TRUE);
  gst_element_set_context(pipeline, context);
  gst_context_unref(context);
  GstBus *bus = gst_element_get_bus(pipeline);
  const auto start = Clock::now();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  Throughput t;
  t.us = us_since(start) / n;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    die(std::string(description) + ": " + err->message);
  }
  gst_message_unref(msg);
  t.up_copied = copied_by(pipeline, "up");
  t.down_copied = copied_by(pipeline, "down");
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  g_free(description);
  return t;
}

Throughput pipeline_run(GstTensorMemGlWorker *gst_worker, const char *middle, int n) {
  Throughput best = pipeline_run_once(gst_worker, middle, n);
  for (int b = 1; b < g_batches; ++b) {
    const Throughput t = pipeline_run_once(gst_worker, middle, n);
    if (t.us < best.us)
      best = t;
  }
  return best;
}

void pipeline_throughput(GstTensorMemGlWorker *gst_worker, int n) {
  std::printf("\n## Pipeline to EOS: `videotestsrc num-buffers=%d pattern=solid-color ! %s ! … ! fakesink "
              "sync=false`\n\n",
              n, kCaps1080);
  std::printf("| … | time per frame | frames/s | bytes copied per frame (up + down) |\n|---|---|---|---|\n");
  for (const char *middle :
       {"identity", "tensorupload name=up storage=pbo", "tensorupload name=up storage=pbo ! tensordownload name=down",
        "tensorupload name=up storage=system ! tensordownload name=down"}) {
    const Throughput t = pipeline_run(gst_worker, middle, n);
    std::printf("| `%s` | %.0f µs | %.0f | %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " |\n", middle, t.us, 1e6 / t.us,
                t.up_copied / static_cast<guint64>(n), t.down_copied / static_cast<guint64>(n));
  }
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  const int n = argc > 1 ? std::max(std::atoi(argv[1]), 1) : 200;
  if (argc > 2)
    g_batches = std::max(std::atoi(argv[2]), 1);

  auto made = GlWorker::create();
  if (!made) {
    std::printf("SKIP: no headless GL context: %s\n", made.error().message().c_str());
    gst_deinit();
    return 77;
  }
  std::shared_ptr<GlWorker> worker = std::move(*made);
  const GlInfo &gl = worker->info();
  std::printf("# bench-pbo (N=%d, best of %d batches): EGL %s, %s, %s\n", n, g_batches, gl.platform.c_str(),
              gl.renderer.c_str(), gl.version.c_str());
  // One worker for everything: the core tensors and, wrapped, the GStreamer side.
  GstTensorMemGlWorker *gst_worker = gst_tensor_mem_gl_worker_new_wrapped(worker);

  map_latency(*worker, gst_worker, n * 10);
  bandwidth(*worker, std::max(n / 4, 10));
  reader_threads(*worker, n * 2);
  harness_throughput(gst_worker, n);
  pipeline_throughput(gst_worker, n);

  gst_object_unref(gst_worker);
  worker.reset();
  gst_deinit();
  return 0;
}
