// SPDX-License-Identifier: Apache-2.0
// GstTensorMemFenceMeta and who honours it: the meta through copies and pool
// recycling (handles counted), tensorsync's bounded waits and its error
// naming the fence, a producer whose bytes land only when its fence signals
// (a consumer ignoring the fence reads stale bytes, tensorsync and
// tensordownload read the new ones), real EGL fences from tensorupload
// storage=pbo on llvmpipe, and a 500-buffer pipeline per fence kind.
#include "pipeline_util.hpp"
#if defined(TM_TEST_HAVE_GL)
#include "gl_test_util.hpp"
#endif

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <tensormem/d3d11_timeline.hpp>
#include <tensormem/internal/d3d11_software_device.hpp>
#include <tensormem/timeline.hpp>
#if defined(TM_TEST_HAVE_GL)
#include <tensormem/gl_worker.hpp>
#endif

#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using tensormem::SoftwareTimeline;
using tensormem::SyncFileTimeline;
using tensormem::UniqueFd;

constexpr GstClockTime kShort = 50 * GST_MSECOND; // a bound a never-signalled fence runs into
constexpr const char *kGrayCaps = "video/x-raw,format=GRAY8,width=16,height=16,framerate=30/1";
constexpr gsize kGraySize = 16 * 16;

std::string error_text(GError *error) { return error ? error->message : "(no error)"; }

std::vector<GstTensorMemFenceMeta *> fences_of(GstBuffer *buffer) {
  std::vector<GstTensorMemFenceMeta *> out;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE))
    out.push_back(reinterpret_cast<GstTensorMemFenceMeta *>(meta));
  return out;
}

std::string describe(GstBuffer *buffer) {
  gchar *text = gst_buffer_describe_tensor_mem_fences(buffer);
  std::string out = text;
  g_free(text);
  return out;
}

GstTensorMemFenceMeta *add_fence(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline, guint64 value,
                                 gint fd = -1) {
  GError *error = nullptr;
  GstTensorMemFenceMeta *meta = gst_buffer_add_tensor_mem_fence_meta(buffer, std::move(timeline), value, fd, &error);
  EXPECT_NE(meta, nullptr) << error_text(error);
  g_clear_error(&error);
  return meta;
}

// ---- the meta ----------------------------------------------------------------

TEST(FenceMeta, AddKeepsTheNewestValuePerTimeline) {
  auto timeline = SoftwareTimeline::create("producer");
  for (int i = 0; i < 3; ++i)
    timeline->issue();
  GstBuffer *buffer = gst_buffer_new();
  add_fence(buffer, timeline, 2);
  add_fence(buffer, timeline, 1); // older: changes nothing
  EXPECT_EQ(describe(buffer), "software:2");
  add_fence(buffer, timeline, 3);
  EXPECT_EQ(describe(buffer), "software:3");
  ASSERT_EQ(fences_of(buffer).size(), 1u);
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_FENCE_KIND_SOFTWARE);
  EXPECT_EQ(meta->value, 3u);
  // A second timeline is a second meta.
  auto other = SoftwareTimeline::create("other");
  add_fence(buffer, other, other->issue());
  EXPECT_EQ(fences_of(buffer).size(), 2u);
  EXPECT_EQ(describe(buffer), "software:3,software:1");
  gst_buffer_unref(buffer);
  EXPECT_EQ(timeline.use_count(), 1) << "a freed meta still holds the timeline";
}

TEST(FenceMeta, AValueNeverIssuedIsRefused) {
  auto timeline = SoftwareTimeline::create("producer");
  timeline->issue();
  GstBuffer *buffer = gst_buffer_new();
  GError *error = nullptr;
  EXPECT_EQ(gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, 2, -1, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("never issued"), std::string::npos) << error->message;
  EXPECT_NE(std::string(error->message).find("'producer'"), std::string::npos) << error->message;
  g_clear_error(&error);
  EXPECT_FALSE(gst_buffer_has_tensor_mem_fence(buffer));
  gst_buffer_unref(buffer);
}

TEST(FenceMeta, ACpuWaitIsBoundedAndNamesKindAndValue) {
  auto timeline = SoftwareTimeline::create("decoder");
  const auto value = timeline->issue();
  GstBuffer *buffer = gst_buffer_new();
  GstTensorMemFenceMeta *meta = add_fence(buffer, timeline, value);
  ASSERT_NE(meta, nullptr);
  EXPECT_FALSE(gst_tensor_mem_fence_meta_is_signalled(meta));
  GError *error = nullptr;
  EXPECT_FALSE(gst_tensor_mem_fence_meta_wait_cpu(meta, kShort, &error));
  ASSERT_NE(error, nullptr);
  EXPECT_TRUE(g_error_matches(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_BUSY)) << error->message;
  EXPECT_NE(std::string(error->message).find("software:1"), std::string::npos) << error->message;
  EXPECT_NE(std::string(error->message).find("'decoder'"), std::string::npos) << error->message;
  g_clear_error(&error);
  EXPECT_FALSE(gst_tensor_mem_fence_meta_is_satisfied(meta));

  ASSERT_TRUE(timeline->signal(value));
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_signalled(meta));
  EXPECT_TRUE(gst_tensor_mem_fence_meta_wait_cpu(meta, kShort, &error)) << error_text(error);
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_satisfied(meta));
  gst_buffer_unref(buffer);
}

TEST(FenceMeta, CopiesCarryTheFenceWithTheirOwnReference) {
  auto timeline = SoftwareTimeline::create("producer");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, 64, nullptr);
  add_fence(buffer, timeline, timeline->issue());

  GstBuffer *shallow = gst_buffer_copy(buffer);
  GstBuffer *deep = gst_buffer_copy_deep(buffer);
  gst_buffer_ref(buffer);
  GstBuffer *writable = gst_buffer_make_writable(buffer); // shared: makes a copy
  ASSERT_NE(writable, buffer);
  for (GstBuffer *copy : {shallow, deep, writable}) {
    EXPECT_EQ(describe(copy), "software:1");
    GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(copy);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(gst_tensor_mem_fence_meta_get_timeline(meta), timeline);
  }
  EXPECT_EQ(timeline.use_count(), 5); // ours and four metas
  // A wait on the original marks only what it waited on; a copy made after carries the mark.
  ASSERT_TRUE(timeline->signal(1));
  ASSERT_TRUE(gst_tensor_mem_fence_meta_wait_cpu(gst_buffer_get_tensor_mem_fence_meta(buffer), 0, nullptr));
  GstBuffer *later = gst_buffer_copy(buffer);
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_satisfied(gst_buffer_get_tensor_mem_fence_meta(later)));
  for (GstBuffer *b : {buffer, shallow, deep, writable, later})
    gst_buffer_unref(b);
  EXPECT_EQ(timeline.use_count(), 1);
}

/* GstBaseTransform's copy_metadata (no memory copied) and a partial region:
 * the fence describes writes into memory the new buffer does not have. */
TEST(FenceMeta, ABufferWithOtherMemoryDoesNotGetTheFence) {
  auto timeline = SoftwareTimeline::create("producer");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, 64, nullptr);
  add_fence(buffer, timeline, timeline->issue());
  GstBuffer *other = gst_buffer_new_allocate(nullptr, 64, nullptr);
  ASSERT_TRUE(gst_buffer_copy_into(other, buffer, GST_BUFFER_COPY_METADATA, 0, -1));
  EXPECT_FALSE(gst_buffer_has_tensor_mem_fence(other));
  gst_buffer_unref(other);
  gst_buffer_unref(buffer);
  EXPECT_EQ(timeline.use_count(), 1);
}

/* eventfds stand in for sync_file fds (both poll readable once signalled;
 * llvmpipe's EGL exports no sync_file). Every meta owns its own duplicate:
 * copies never share one, and every one is closed once. */
TEST(FenceMeta, SyncFileFdsAreDuplicatedPerMetaAndClosedOnce) {
  const int fds_before = tmtest::fd_count();
  {
    auto timeline = SyncFileTimeline::create("display");
    const int efd = eventfd(0, EFD_CLOEXEC);
    ASSERT_GE(efd, 0);
    auto value = timeline->adopt(UniqueFd(dup(efd)));
    ASSERT_TRUE(value) << value.error().message();
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, 64, nullptr);
    GstTensorMemFenceMeta *meta = add_fence(buffer, timeline, *value, efd);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->kind, GST_TENSOR_MEM_FENCE_KIND_SYNC_FILE);
    const gint own = gst_tensor_mem_fence_meta_get_fd(meta);
    EXPECT_GE(own, 0);
    EXPECT_NE(own, efd) << "the meta took the caller's fd instead of a duplicate";

    GstBuffer *shallow = gst_buffer_copy(buffer);
    GstBuffer *deep = gst_buffer_copy_deep(buffer);
    const gint fd_shallow = gst_tensor_mem_fence_meta_get_fd(gst_buffer_get_tensor_mem_fence_meta(shallow));
    const gint fd_deep = gst_tensor_mem_fence_meta_get_fd(gst_buffer_get_tensor_mem_fence_meta(deep));
    EXPECT_GE(fd_shallow, 0);
    EXPECT_GE(fd_deep, 0);
    EXPECT_NE(fd_shallow, own);
    EXPECT_NE(fd_deep, own);
    EXPECT_NE(fd_shallow, fd_deep);
    EXPECT_EQ(tmtest::fd_count(), fds_before + 5); // efd, the timeline's, three metas'

    EXPECT_FALSE(gst_tensor_mem_fence_meta_is_signalled(meta));
    const guint64 one = 1;
    ASSERT_EQ(write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    EXPECT_TRUE(gst_tensor_mem_fence_meta_wait_cpu(gst_buffer_get_tensor_mem_fence_meta(deep), kShort, nullptr));
    gst_buffer_unref(shallow);
    gst_buffer_unref(deep);
    gst_buffer_unref(buffer);
    close(efd);
  }
  EXPECT_EQ(tmtest::fd_count(), fds_before) << "an fd of a fence meta leaked or was closed twice";
}

TEST(FenceMeta, ASoftwareFenceCannotBeWaitedForOnTheGpu) {
  auto timeline = SoftwareTimeline::create("cpu");
  GstBuffer *buffer = gst_buffer_new();
  GstTensorMemFenceMeta *meta = add_fence(buffer, timeline, timeline->issue());
  GError *error = nullptr;
  EXPECT_FALSE(gst_tensor_mem_fence_meta_wait_gpu(meta, nullptr, &error));
  ASSERT_NE(error, nullptr);
  EXPECT_TRUE(g_error_matches(error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED)) << error->message;
  EXPECT_NE(std::string(error->message).find("software:1"), std::string::npos) << error->message;
  g_clear_error(&error);
  gst_buffer_unref(buffer);
}

// ---- the pool ----------------------------------------------------------------

GstBufferPool *gray_pool(bool fence_option, GstClockTime fence_timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string(kGrayCaps);
  gst_buffer_pool_config_set_params(config, caps, kGraySize, 1, 1);
  gst_caps_unref(caps);
  if (fence_option)
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META);
  gst_tensor_mem_buffer_pool_config_set_fence_timeout(config, fence_timeout);
  EXPECT_TRUE(gst_buffer_pool_set_config(pool, config));
  EXPECT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  return pool;
}

GstBufferPoolAcquireParams kDontWait = {GST_FORMAT_UNDEFINED, 0, 0, GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT, {}};

void stop_pool(GstBufferPool *pool) {
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
}

guint64 pool_counter(GstBufferPool *pool, const char *name) {
  guint64 n = 0;
  g_object_get(pool, name, &n, nullptr);
  return n;
}

TEST(FencePool, TheOptionGivesEveryBufferOnePooledEmptyMeta) {
  GstBufferPool *pool = gray_pool(true);
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  auto metas = fences_of(buffer);
  ASSERT_EQ(metas.size(), 1u);
  EXPECT_TRUE(GST_META_FLAG_IS_SET(metas[0], GST_META_FLAG_POOLED));
  EXPECT_EQ(describe(buffer), "none");
  auto timeline = SoftwareTimeline::create("producer");
  add_fence(buffer, timeline, timeline->issue());
  EXPECT_EQ(fences_of(buffer).size(), 1u) << "the producer's fence goes into the pool's meta";
  ASSERT_TRUE(timeline->signal(1));
  gst_buffer_unref(buffer);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  EXPECT_EQ(fences_of(buffer).size(), 1u);
  EXPECT_EQ(describe(buffer), "none");
  EXPECT_EQ(timeline.use_count(), 1) << "an idle pooled buffer still holds the timeline";
  gst_buffer_unref(buffer);
  stop_pool(pool);
}

/* A consumer dropped a buffer whose GPU write is still running: the pool
 * hands it to the next producer only after the fence signalled. */
TEST(FencePool, ARecycledBufferIsHandedOutOnlyOnceItsFenceSignalled) {
  for (bool option : {false, true}) {
    SCOPED_TRACE(option ? "with the fence-meta option" : "without the option");
    GstBufferPool *pool = gray_pool(option);
    auto timeline = SoftwareTimeline::create("gpu");
    GstBuffer *buffer = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    GstBuffer *first = buffer;
    const auto value = timeline->issue();
    add_fence(buffer, timeline, value);
    gst_buffer_unref(buffer); // back to the pool, unsignalled

    buffer = nullptr;
    EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_EOS);
    EXPECT_EQ(buffer, nullptr);

    std::thread gpu([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      (void)timeline->signal(value);
    });
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    auto reached = timeline->signalled(value);
    EXPECT_TRUE(reached && *reached) << "handed out before its fence signalled";
    gpu.join();
    EXPECT_EQ(buffer, first);
    EXPECT_FALSE(gst_buffer_has_tensor_mem_fence(buffer)) << "the new producer got the old fence";
    EXPECT_EQ(fences_of(buffer).size(), option ? 1u : 0u);
    EXPECT_EQ(pool_counter(pool, "fence-waits"), 1u);
    gst_buffer_unref(buffer);
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
    EXPECT_EQ(timeline.use_count(), 1);
  }
}

TEST(FencePool, ABufferWhoseFenceNeverSignalsLeavesThePool) {
  GstBufferPool *pool = gray_pool(true, kShort);
  auto timeline = SoftwareTimeline::create("stuck");
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  add_fence(buffer, timeline, timeline->issue());
  gst_buffer_unref(buffer);
  buffer = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_ERROR);
  if (buffer) { // handed out unfinished: the failure is recorded, the pool must not block the next acquire
    ADD_FAILURE() << "a buffer whose fence never signalled was handed out";
    gst_buffer_unref(buffer);
  }
  EXPECT_EQ(pool_counter(pool, "fence-timeouts"), 1u);
  EXPECT_EQ(timeline.use_count(), 1) << "the discarded buffer was not freed";
  // The pool goes on with a new buffer.
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  EXPECT_FALSE(gst_buffer_has_tensor_mem_fence(buffer));
  gst_buffer_unref(buffer);
  stop_pool(pool);
}

// ---- reader completions -----------------------------------------------------

/* Most cases begin alike: a consumer takes the one buffer of a gray pool,
 * hands it to a reader and drops it while the read still runs. */
class ReadCompletion : public ::testing::Test {
protected:
  void TearDown() override {
    if (pool)
      stop_pool(pool);
  }

  /* Starts the pool (fences and reads bounded by `timeout`) and takes its buffer. */
  void acquire(GstBuffer **buffer, GstClockTime timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT) {
    pool = gray_pool(false, timeout);
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, buffer, nullptr), GST_FLOW_OK);
  }

  /* acquire(), a read begun on the buffer (on a shallow copy of it when
   * `through_copy`: a reader holding a tee branch's buffer), and every
   * buffer dropped while the read runs. The caller owns `read`. */
  void drop_mid_read(GstClockTime timeout = GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, bool through_copy = false) {
    GstBuffer *buffer = nullptr;
    ASSERT_NO_FATAL_FAILURE(acquire(&buffer, timeout));
    first = buffer;
    GstBuffer *held = through_copy ? gst_buffer_copy(buffer) : buffer;
    GError *error = nullptr;
    read = gst_buffer_begin_tensor_mem_read(held, &error);
    ASSERT_NE(read, nullptr) << error_text(error);
    if (held != buffer)
      gst_buffer_unref(held);
    gst_buffer_unref(buffer);
  }

  GstBufferPool *pool = nullptr;
  const GstBuffer *first = nullptr; // the dropped buffer, only to compare addresses with
  GstTensorMemReadCompletion *read = nullptr;
};

/* An inference step still reading a frame after the buffer was dropped: the
 * pool hands the buffer to the next producer only once the read finished. */
TEST_F(ReadCompletion, APoolHandsOutABufferOnlyOnceItsReaderFinished) {
  ASSERT_NO_FATAL_FAILURE(drop_mid_read());
  GstBuffer *buffer = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_EOS);
  EXPECT_EQ(buffer, nullptr);

  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gst_tensor_mem_read_completion_done(read);
  });
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  EXPECT_TRUE(gst_tensor_mem_read_completion_is_done(read)) << "handed out while its reader was still reading";
  reader.join();
  EXPECT_EQ(buffer, first);
  EXPECT_EQ(pool_counter(pool, "read-waits"), 1u);
  EXPECT_EQ(pool_counter(pool, "fence-waits"), 0u) << "a read counted as a fence";
  GstStructure *stats = nullptr;
  g_object_get(pool, "stats", &stats, nullptr);
  ASSERT_NE(stats, nullptr);
  guint64 read_waits = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "read-waits", &read_waits));
  EXPECT_EQ(read_waits, 1u);
  gst_structure_free(stats);
  gst_tensor_mem_read_completion_unref(read);
  gst_buffer_unref(buffer);
  // A finished read costs the next acquire nothing.
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_OK);
  EXPECT_EQ(pool_counter(pool, "read-waits"), 1u);
  gst_buffer_unref(buffer);
}

TEST_F(ReadCompletion, AReaderThatNeverFinishesCostsThePoolThatBufferNotAHang) {
  ASSERT_NO_FATAL_FAILURE(drop_mid_read(kShort));
  GstBuffer *buffer = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_ERROR);
  if (buffer) {
    ADD_FAILURE() << "a buffer still being read was handed out";
    gst_buffer_unref(buffer);
  }
  EXPECT_EQ(pool_counter(pool, "read-timeouts"), 1u);
  gst_tensor_mem_read_completion_done(read); // late: the buffer is gone, nothing breaks
  gst_tensor_mem_read_completion_unref(read);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  gst_buffer_unref(buffer);
}

TEST_F(ReadCompletion, TheLastReferenceFinishesTheReadAndCopiesShareIt) {
  // A reader may hold only a shallow copy (a tee branch): the read is on the
  // memory both share, so it still protects the pool's buffer.
  ASSERT_NO_FATAL_FAILURE(drop_mid_read(GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT, /*through_copy=*/true));
  GstTensorMemReadCompletion *second = gst_tensor_mem_read_completion_ref(read);
  GstBuffer *buffer = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_EOS);
  gst_tensor_mem_read_completion_unref(read);
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_EOS) << "one reference still reads";
  gst_tensor_mem_read_completion_unref(second);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, &kDontWait), GST_FLOW_OK);
  gst_buffer_unref(buffer);
}

TEST_F(ReadCompletion, ABufferWithoutTensorMemoryIsRefused) {
  GstBuffer *plain = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  GError *error = nullptr;
  EXPECT_EQ(gst_buffer_begin_tensor_mem_read(plain, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("no tensor memory"), std::string::npos) << error->message;
  g_clear_error(&error);
  gst_buffer_unref(plain);
}

TEST_F(ReadCompletion, AValueTheReadersTimelineNeverIssuedIsRefused) {
  GstBuffer *buffer = nullptr;
  ASSERT_NO_FATAL_FAILURE(acquire(&buffer));
  auto timeline = SoftwareTimeline::create("cuda stream");
  GError *error = nullptr;
  EXPECT_FALSE(gst_buffer_add_tensor_mem_read_completion(buffer, timeline, 1, &error));
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("record_read: value 1"), std::string::npos) << error->message;
  g_clear_error(&error);
  EXPECT_TRUE(gst_buffer_add_tensor_mem_read_completion(buffer, timeline, timeline->issue(), &error))
      << error_text(error);
  ASSERT_TRUE(timeline->signal(1));
  gst_buffer_unref(buffer);
}

/* decode -> inference where inference reads each frame after the sample was
 * dropped (through a long-lived address, as a GPU reads memory it was
 * given): videotestsrc writes moving frames into tensorupload's pool as fast
 * as the pool lets it; a slow reader re-reads every frame after a delay and
 * finds exactly the bytes it was handed. */
TEST_F(ReadCompletion, AFrameBeingReadIsNeverOverwrittenInA500FramePipeline) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(
      "videotestsrc num-buffers=500 pattern=ball ! video/x-raw,format=GRAY8,width=64,height=48 ! "
      "tensorupload storage=system require-zero-copy=true ! appsink name=sink sync=false max-buffers=4",
      &error);
  ASSERT_NE(pipeline, nullptr) << error_text(error);
  ASSERT_EQ(error, nullptr) << error_text(error);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_ASYNC);

  struct Job {
    tensormem::HostPin pin;
    GstTensorMemReadCompletion *read;
    guint64 sum;
  };
  auto checksum = [](const tensormem::HostPin &pin) {
    guint64 h = 1469598103934665603ull;
    const auto *p = reinterpret_cast<const guint8 *>(pin.data());
    for (std::size_t i = 0; i < pin.length(); ++i)
      h = (h ^ p[i]) * 1099511628211ull;
    return h;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  bool finished = false;
  guint wrong = 0, read_frames = 0;
  std::thread inference([&] {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return finished || !jobs.empty(); });
      if (jobs.empty())
        return;
      Job job = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1)); // the model runs
      if (checksum(job.pin) != job.sum)
        ++wrong;
      ++read_frames;
      job.pin = tensormem::HostPin();
      gst_tensor_mem_read_completion_done(job.read);
      gst_tensor_mem_read_completion_unref(job.read);
      lock.lock();
    }
  });
  guint frames = 0;
  while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), tmtest::kTimeout)) {
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(buffer, 0));
    if (!tensor) {
      ADD_FAILURE() << "frame " << frames << " is not in tensor memory";
      gst_sample_unref(sample);
      break;
    }
    tensormem::Result<tensormem::HostPin> pin = tensor->storage()->pin_host(tensormem::CpuAccess::Read);
    ASSERT_TRUE(pin) << pin.error().message();
    GstTensorMemReadCompletion *read = gst_buffer_begin_tensor_mem_read(buffer, &error);
    ASSERT_NE(read, nullptr) << error_text(error);
    const guint64 sum = checksum(*pin);
    gst_sample_unref(sample); // the buffer goes back to the pool now
    {
      std::lock_guard lock(mu);
      jobs.push_back(Job{std::move(*pin), read, sum});
    }
    cv.notify_one();
    ++frames;
  }
  {
    std::lock_guard lock(mu);
    finished = true;
  }
  cv.notify_one();
  inference.join();
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  EXPECT_EQ(frames, 500u);
  EXPECT_EQ(read_frames, frames);
  EXPECT_EQ(wrong, 0u) << "frames overwritten while the reader still read them";
}

// ---- a producer whose bytes land when its fence signals ----------------------

/* Stands in for a GPU: buffers are handed on at once, their bytes are
 * written later on its own thread, then their fence signals. Bytes are
 * written through the address the buffer had when it was made, as a GPU
 * writes memory it was given. */
class DelayedWriter {
public:
  enum class Kind { Software, SyncFile };

  explicit DelayedWriter(Kind kind) : kind_(kind) {
    if (kind == Kind::Software)
      software_ = SoftwareTimeline::create("delayed-writer");
    else
      sync_file_ = SyncFileTimeline::create("delayed-writer");
    thread_ = std::thread([this] { run(); });
  }
  ~DelayedWriter() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (Job &job : jobs_) // gated, never written
      gst_buffer_unref(job.keep);
  }

  /* A buffer of kGraySize bytes, all `stale`, with a fence; its bytes become
   * `fresh` once the writer gets to it (and `gated` ones only after open_gate()). */
  GstBuffer *produce(guint8 stale, guint8 fresh, bool gated = false) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
    GstMapInfo map;
    EXPECT_TRUE(gst_buffer_map(buffer, &map, GST_MAP_WRITE));
    std::memset(map.data, stale, map.size);
    guint8 *data = map.data;
    gst_buffer_unmap(buffer, &map);
    Job job{nullptr, data, fresh, 0, UniqueFd(), gated};
    if (kind_ == Kind::Software) {
      job.value = software_->issue();
      add_fence(buffer, software_, job.value);
    } else {
      job.efd = UniqueFd(eventfd(0, EFD_CLOEXEC));
      auto value = sync_file_->adopt(UniqueFd(dup(job.efd.get())));
      EXPECT_TRUE(value);
      job.value = value ? *value : 0;
      add_fence(buffer, sync_file_, job.value, job.efd.get());
    }
    // The writer holds the buffer until it has written: a consumer may drop it first.
    job.keep = gst_buffer_ref(buffer);
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
    return buffer;
  }

  void open_gate() {
    {
      std::lock_guard lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }

private:
  struct Job {
    GstBuffer *keep;
    guint8 *data;
    guint8 fresh;
    guint64 value;
    UniqueFd efd;
    bool gated;
  };

  void run() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || (!jobs_.empty() && (!jobs_.front().gated || gate_open_)); });
        if (jobs_.empty() || (jobs_.front().gated && !gate_open_))
          return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      // A little late, every few frames, so that consumers do meet unsignalled fences.
      if (job.value % 7 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::memset(job.data, job.fresh, kGraySize);
      if (kind_ == Kind::Software) {
        (void)software_->signal(job.value);
      } else {
        const guint64 one = 1;
        (void)!write(job.efd.get(), &one, sizeof one);
      }
      gst_buffer_unref(job.keep);
    }
  }

  Kind kind_;
  std::shared_ptr<SoftwareTimeline> software_;
  std::shared_ptr<SyncFileTimeline> sync_file_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  bool gate_open_ = false;
  std::thread thread_;
};

guint8 first_byte(GstSample *sample) {
  GstMapInfo map;
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ))
    return 0;
  const guint8 byte = map.data[0];
  gst_buffer_unmap(buffer, &map);
  return byte;
}

struct AppPipeline {
  GstElement *pipeline = nullptr;
  GstElement *src = nullptr;
  GstElement *sink = nullptr;

  explicit AppPipeline(const std::string &middle) {
    const std::string description = "appsrc name=src is-live=false format=time caps=\"" + std::string(kGrayCaps) +
                                    "\" ! " + middle + " appsink name=sink sync=false";
    GError *error = nullptr;
    pipeline = gst_parse_launch(description.c_str(), &error);
    EXPECT_EQ(error, nullptr) << description << ": " << error_text(error);
    g_clear_error(&error);
    src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  }
  ~AppPipeline() {
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref(src);
    gst_object_unref(sink);
    tmtest::release_pipeline(pipeline);
  }
  void push(GstBuffer *buffer) { EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buffer), GST_FLOW_OK); }
  GstSample *pull() { return gst_app_sink_try_pull_sample(GST_APP_SINK(sink), tmtest::kTimeout); }
  GstElement *by_name(const char *name) { return gst_bin_get_by_name(GST_BIN(pipeline), name); }
  /* A guint64 property of the element named "el". */
  guint64 counter(const char *property) {
    GstElement *el = by_name("el");
    guint64 n = G_MAXUINT64;
    g_object_get(el, property, &n, nullptr);
    gst_object_unref(el);
    return n;
  }
};

/* The proof that the fence matters (and that these tests can fail): a
 * consumer that ignores it reads the bytes from before the write. */
TEST(FenceConsumers, AConsumerIgnoringTheFenceReadsStaleBytes) {
  DelayedWriter writer(DelayedWriter::Kind::Software);
  AppPipeline app("queue !");
  app.push(writer.produce(0x11, 0xee, /*gated=*/true));
  GstSample *sample = app.pull();
  ASSERT_NE(sample, nullptr);
  EXPECT_EQ(first_byte(sample), 0x11) << "the write landed before the consumer read: nothing was proven";
  gst_sample_unref(sample);
  writer.open_gate();
}

TEST(FenceConsumers, TensorsyncAndTensordownloadReadTheNewBytes) {
  for (const char *consumer : {"tensorsync name=el !", "tensordownload name=el !", "tensorinspect name=el !"}) {
    SCOPED_TRACE(consumer);
    DelayedWriter writer(DelayedWriter::Kind::Software);
    AppPipeline app(std::string("queue ! ") + consumer);
    app.push(writer.produce(0x11, 0xee, /*gated=*/true));
    // The consumer is waiting now (or is about to); the write lands later.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writer.open_gate();
    GstSample *sample = app.pull();
    ASSERT_NE(sample, nullptr);
    EXPECT_EQ(first_byte(sample), 0xee);
    gst_sample_unref(sample);
  }
}

/* The bus of `pipeline`'s first error within the test timeout. */
GstMessage *wait_error(GstElement *pipeline) {
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout, GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  return msg;
}

TEST(Tensorsync, ANeverSignalledFenceIsAnElementErrorNamingIt) {
  auto timeline = SoftwareTimeline::create("never");
  AppPipeline app("tensorsync name=el timeout=50000000 !");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  add_fence(buffer, timeline, timeline->issue());
  app.push(buffer);
  GstMessage *msg = wait_error(app.pipeline);
  ASSERT_NE(msg, nullptr) << "tensorsync hung instead of failing";
  GstElement *el = app.by_name("el");
  EXPECT_EQ(GST_MESSAGE_SRC(msg), GST_OBJECT(el));
  GError *error = nullptr;
  gchar *debug = nullptr;
  gst_message_parse_error(msg, &error, &debug);
  EXPECT_TRUE(g_error_matches(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_BUSY));
  EXPECT_NE(std::string(error->message).find("software:1"), std::string::npos) << error->message;
  EXPECT_NE(std::string(debug).find("'never'"), std::string::npos) << debug;
  g_clear_error(&error);
  g_free(debug);
  gst_message_unref(msg);
  gst_object_unref(el);
  EXPECT_EQ(app.counter("timed-out"), 1u);
  EXPECT_EQ(app.counter("waited"), 0u);
}

TEST(Tensorsync, BuffersWithoutAFencePassUntouched) {
  AppPipeline app("tensorsync name=el !");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  app.push(buffer);
  GstSample *sample = app.pull();
  ASSERT_NE(sample, nullptr);
  EXPECT_EQ(gst_sample_get_buffer(sample), buffer);
  gst_sample_unref(sample);
  EXPECT_EQ(app.counter("waited"), 0u);
}

TEST(Tensorsync, MarksTheFenceSatisfiedAndKeepsIt) {
  DelayedWriter writer(DelayedWriter::Kind::Software);
  AppPipeline app("tensorsync name=el !");
  app.push(writer.produce(0, 1));
  GstSample *sample = app.pull();
  ASSERT_NE(sample, nullptr);
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(gst_sample_get_buffer(sample));
  ASSERT_NE(meta, nullptr);
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_satisfied(meta));
  gst_sample_unref(sample);
  EXPECT_EQ(app.counter("waited"), 1u);
}

/* The D3D11 kind: a value of the process fence queued behind a GPU wait on
 * a producer's fence (second device) is not reached until the producer
 * signals; the meta's CPU wait is bounded and names it; tensorsync waits
 * for it. */
struct D3d11Gate {
  std::shared_ptr<tensormem::SoftwareD3d11Device> consumer = *tensormem::SoftwareD3d11Device::create();
  std::shared_ptr<tensormem::SoftwareD3d11Device> producer = *tensormem::SoftwareD3d11Device::create();
  std::shared_ptr<tensormem::D3d11Context> context = *tensormem::D3d11Context::create(consumer);
  std::shared_ptr<tensormem::D3d11FenceTimeline> timeline =
      *tensormem::D3d11FenceTimeline::create(context, "texture writes");
  std::shared_ptr<tensormem::D3d11Fence> gate = *producer->create_fence(0, true);

  /// A value of the process fence that completes only after open().
  std::uint64_t held_value() {
    auto handle = gate->create_shared_handle();
    auto opened = consumer->open_shared_fence(handle->value());
    EXPECT_TRUE(consumer->wait_gpu(**opened, 1));
    return *timeline->issue();
  }
  void open() {
    EXPECT_TRUE(producer->signal(*gate, 1));
    producer->flush();
    consumer->flush();
  }
};

TEST(FenceMeta, AD3d11FenceIsWaitedForBoundedAndNamed) {
  D3d11Gate g;
  const std::uint64_t value = g.held_value();
  GstBuffer *buffer = gst_buffer_new();
  GstTensorMemFenceMeta *meta = add_fence(buffer, g.timeline, value);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE);
  EXPECT_EQ(describe(buffer), "d3d11:" + std::to_string(value));
  EXPECT_FALSE(gst_tensor_mem_fence_meta_is_signalled(meta));
  GError *error = nullptr;
  EXPECT_FALSE(gst_tensor_mem_fence_meta_wait_cpu(meta, kShort, &error));
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("'texture writes'"), std::string::npos) << error->message;
  g_clear_error(&error);
  GstBuffer *copy = gst_buffer_copy(buffer);
  EXPECT_EQ(gst_tensor_mem_fence_meta_get_timeline(gst_buffer_get_tensor_mem_fence_meta(copy)), g.timeline);
  g.open();
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_signalled(meta));
  EXPECT_TRUE(gst_tensor_mem_fence_meta_wait_cpu(meta, kShort, &error)) << error_text(error);
  gst_buffer_unref(copy);
  gst_buffer_unref(buffer);
  // HAZ-23 for this kind too: a value the context never signalled.
  GstBuffer *other = gst_buffer_new();
  EXPECT_EQ(gst_buffer_add_tensor_mem_fence_meta(other, g.timeline, value + 1000, -1, nullptr), nullptr);
  gst_buffer_unref(other);
}

TEST(Tensorsync, WaitsForAD3d11FenceUntilTheProducerSignals) {
  D3d11Gate g;
  AppPipeline app("tensorsync name=el !");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  add_fence(buffer, g.timeline, g.held_value());
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    g.open();
  });
  app.push(buffer);
  GstSample *sample = app.pull();
  opener.join();
  ASSERT_NE(sample, nullptr);
  EXPECT_TRUE(
      gst_tensor_mem_fence_meta_is_satisfied(gst_buffer_get_tensor_mem_fence_meta(gst_sample_get_buffer(sample))));
  gst_sample_unref(sample);
  EXPECT_EQ(app.counter("waited"), 1u);
}

TEST(Tensorinspect, ItsMessageNamesTheFence) {
  auto timeline = SoftwareTimeline::create("producer");
  AppPipeline app("tensorinspect name=el !");
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  gst_buffer_memset(buffer, 0, 0, kGraySize);
  const auto value = timeline->issue();
  add_fence(buffer, timeline, value);
  ASSERT_TRUE(timeline->signal(value));
  app.push(buffer);
  GstBuffer *plain = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
  gst_buffer_memset(plain, 0, 0, kGraySize); // tensorinspect reads every byte
  app.push(plain);
  std::vector<tmtest::InspectReport> reports;
  const tmtest::PipelineEnd end = tmtest::wait_for_inspect_reports(app.pipeline, &reports, 2);
  ASSERT_EQ(reports.size(), 2u) << end.error;
  EXPECT_EQ(reports[0].fence, "software:1");
  EXPECT_EQ(reports[1].fence, "none");
}

// ---- a pipeline per kind -----------------------------------------------------

constexpr guint kFrames = 500;

/* producer (this thread) -> queue -> tensorsync in the queue's thread ->
 * appsink; every frame's bytes land behind its fence. */
void run_delayed_pipeline(DelayedWriter::Kind kind) {
  const int fds_before = tmtest::fd_count();
  {
    DelayedWriter writer(kind);
    AppPipeline app("queue max-size-buffers=8 ! tensorsync name=el !");
    std::thread producer([&] {
      for (guint i = 0; i < kFrames; ++i)
        app.push(writer.produce(0, static_cast<guint8>(1 + i % 250)));
      gst_app_src_end_of_stream(GST_APP_SRC(app.src));
    });
    guint wrong = 0, frames = 0;
    while (GstSample *sample = app.pull()) {
      if (first_byte(sample) != static_cast<guint8>(1 + frames % 250))
        ++wrong;
      ++frames;
      gst_sample_unref(sample);
    }
    producer.join();
    EXPECT_EQ(frames, kFrames);
    EXPECT_EQ(wrong, 0u) << "frames read before their bytes landed";
    EXPECT_EQ(app.counter("timed-out"), 0u);
  }
  EXPECT_EQ(tmtest::fd_count(), fds_before) << "fence fds leaked";
}

TEST(FencePipelines, SoftwareTimeline500Buffers) { run_delayed_pipeline(DelayedWriter::Kind::Software); }

TEST(FencePipelines, SyncFileTimeline500Buffers) { run_delayed_pipeline(DelayedWriter::Kind::SyncFile); }

// ---- real EGL fences (llvmpipe) ----------------------------------------------

#if defined(TM_TEST_HAVE_GL)
class EglFences : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    worker = tmtest::shared_worker(&why);
    if (!worker)
      GTEST_SKIP() << "no headless GL here: " << why;
    if (!gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->timeline())
      GTEST_SKIP() << "the EGL display has no EGL_KHR_fence_sync";
  }
  GstTensorMemGlWorker *worker = nullptr;
};

TEST_F(EglFences, AFenceAfterAnUploadIsSignalledByTheTimeTheCpuMapRuns) {
  GstAllocator *allocator = gst_tensor_mem_pbo_allocator_new(worker);
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_pbo(allocator);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_caps_from_string(kGrayCaps);
  gst_buffer_pool_config_set_params(config, caps, kGraySize, 1, 2);
  gst_caps_unref(caps);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_TENSOR_MEM_FENCE_META);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  gst_buffer_memset(buffer, 0, 0x5a, gst_buffer_get_size(buffer));
  GError *error = nullptr;
  ASSERT_TRUE(gst_buffer_fence_tensor_mem_pbo_writes(buffer, &error)) << error_text(error);
  GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->kind, GST_TENSOR_MEM_FENCE_KIND_EGL_SYNC);
  EXPECT_GE(meta->value, 1u);
  EXPECT_EQ(fences_of(buffer).size(), 1u) << "the EGL fence went beside the pool's meta, not into it";
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(buffer, &map, GST_MAP_READ));
  EXPECT_TRUE(gst_tensor_mem_fence_meta_is_signalled(meta)) << "the CPU map ran before the GL write completed";
  EXPECT_EQ(map.data[0], 0x5a);
  EXPECT_EQ(map.data[kGraySize - 1], 0x5a);
  gst_buffer_unmap(buffer, &map);
  EXPECT_TRUE(gst_tensor_mem_fence_meta_wait_gpu(meta, worker, &error)) << error_text(error);
  gst_buffer_unref(buffer);
  stop_pool(pool);
  gst_object_unref(allocator);
}

TEST_F(EglFences, AnEglValueNeverIssuedIsRefused) {
  auto timeline = gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->timeline();
  GstBuffer *buffer = gst_buffer_new();
  GError *error = nullptr;
  EXPECT_EQ(gst_buffer_add_tensor_mem_fence_meta(buffer, timeline, timeline->last_issued() + 1, -1, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->message).find("never issued"), std::string::npos) << error->message;
  g_clear_error(&error);
  gst_buffer_unref(buffer);
}

/* A PBO buffer that is shared (another holder, as behind a tee) reaches
 * tensorupload storage=pbo: it passes through without a copy of its bytes.
 * Mapped per call, it gets its new fence on a shallow copy, never on the
 * buffer the other holder has; mapped persistently and coherently, the CPU's
 * bytes need no fence and the buffer passes untouched (issue 13). */
TEST_F(EglFences, ASharedPboBufferPassingThroughIsFencedOnAShallowCopy) {
  const bool persistent = gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->info().persistent_maps;
  GstHarness *h = gst_harness_new_parse("tensorupload storage=pbo");
  GstContext *context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
  gst_element_set_context(h->element, context);
  gst_context_unref(context);
  gst_harness_set_src_caps_str(h, kGrayCaps);
  gst_harness_play(h);
  GstAllocator *allocator = gst_tensor_mem_pbo_allocator_new(worker);
  GstBuffer *in = gst_buffer_new();
  gst_buffer_append_memory(in, gst_allocator_alloc(allocator, kGraySize, nullptr));
  gst_buffer_memset(in, 0, 0x33, kGraySize);
  GstBuffer *other_holder = gst_buffer_ref(in);
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(gst_buffer_peek_memory(out, 0), gst_buffer_peek_memory(other_holder, 0)) << "the bytes were copied";
  if (persistent) {
    EXPECT_EQ(describe(out), "none") << "a CPU write into a coherent PBO was fenced";
  } else {
    EXPECT_NE(out, other_holder);
    EXPECT_EQ(describe(out).rfind("egl:", 0), 0u) << describe(out);
  }
  EXPECT_EQ(describe(other_holder), "none") << "the shared buffer was written";
  gst_buffer_unref(out);
  gst_buffer_unref(other_holder);
  gst_object_unref(allocator);
  gst_harness_teardown(h);
}

/* videotestsrc -> tensorupload storage=pbo -> queue -> tensordownload in the
 * queue's thread; the bytes match the system-memory run frame for frame.
 * Mapped per call, every frame carries an EGL fence (the unmap that hands
 * the bytes to GL is a GL command); mapped persistently and coherently, the
 * CPU's bytes are complete when the write returns and none does. */
TEST_F(EglFences, APboPipelineOf500BuffersIsFencedAsItsMapsNeedAndEveryFrameIsRight) {
  auto run = [&](const char *storage, tmtest::PipelineRun *out) {
    const std::string description = std::string("videotestsrc num-buffers=") + std::to_string(kFrames) +
                                    " pattern=ball ! video/x-raw,format=RGBA,width=32,height=24 ! tensorupload "
                                    "storage=" +
                                    storage + " ! tensorinspect ! queue ! tensordownload ! fakesink";
    tmtest::run_pipeline(description, out, nullptr, [&](GstElement *pipeline) {
      GstContext *context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
      gst_element_set_context(pipeline, context);
      gst_context_unref(context);
    });
    EXPECT_TRUE(out->eos) << out->error_debug;
  };
  tmtest::PipelineRun pbo, sys;
  run("pbo", &pbo);
  run("system", &sys);
  ASSERT_EQ(pbo.inspected.size(), kFrames);
  ASSERT_EQ(sys.inspected.size(), kFrames);
  for (guint i = 0; i < kFrames; ++i)
    EXPECT_EQ(pbo.inspected[i].checksum, sys.inspected[i].checksum) << "frame " << i;
  guint egl = 0;
  for (const tmtest::InspectReport &report : pbo.inspected)
    egl += report.fence.rfind("egl:", 0) == 0 ? 1 : 0;
  if (gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->info().persistent_maps)
    EXPECT_EQ(egl, 0u) << "a CPU write into a coherent PBO was fenced";
  else
    EXPECT_EQ(egl, kFrames) << "a PBO frame left tensorupload without its EGL fence";
  for (const tmtest::InspectReport &report : sys.inspected)
    EXPECT_EQ(report.fence, "none");
}
#endif


// ---- waits a flush or a state change interrupts (issue 28) -------------------
// A buffer whose fence never signals must not hold the pipeline: setting it to
// NULL, or flushing, releases the streaming thread blocked in the element's
// wait (GST_FLOW_FLUSHING: no error, the unfinished frame never passed on),
// for every element that waits and every timeline kind built here. Without
// the interruption tensorsync (timeout: the maximum) never returns and the
// others post their fence-timeout error after 5 s: both fail these tests.

enum class NeverKind { Software, SyncFile, D3d11 };

const char *never_kind_name(NeverKind kind) {
  switch (kind) {
  case NeverKind::Software: return "software";
  case NeverKind::SyncFile: return "sync_file";
  case NeverKind::D3d11: return "d3d11";
  }
  return "?";
}

/* A fence of `kind` that nothing will signal while the test runs. */
struct NeverSignalled {
  explicit NeverSignalled(NeverKind kind) : kind(kind) {
    switch (kind) {
    case NeverKind::Software: {
      auto t = SoftwareTimeline::create("never");
      value = t->issue();
      timeline = t;
      break;
    }
    case NeverKind::SyncFile: {
      auto t = SyncFileTimeline::create("never");
      trigger = UniqueFd(eventfd(0, EFD_CLOEXEC));
      fd = UniqueFd(dup(trigger.get()));
      auto v = t->adopt(UniqueFd(dup(trigger.get())));
      EXPECT_TRUE(v);
      value = v ? *v : 0;
      timeline = t;
      break;
    }
    case NeverKind::D3d11:
      gate.emplace();
      value = gate->held_value();
      timeline = gate->timeline;
      break;
    }
  }
  ~NeverSignalled() {
    if (gate)
      gate->open(); // the software device's queue drains before it goes
  }
  GstBuffer *buffer() {
    GstBuffer *b = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
    gst_buffer_memset(b, 0, 0x42, kGraySize);
    add_fence(b, timeline, value, fd.get());
    return b;
  }

  NeverKind kind;
  std::shared_ptr<tensormem::Timeline> timeline;
  std::uint64_t value = 0;
  UniqueFd trigger, fd;
  std::optional<D3d11Gate> gate;
};

/* The elements that wait before they read or hand on a frame, but for the
 * GL converter: it compiles shaders (LLVM's JIT on llvmpipe), which runs as
 * its own meson test with the JIT-safe ASan options (gst-fences-gl-convert). */
const std::vector<std::string> kWaitingElements = {
    "tensorsync timeout=18446744073709551615", "tensordownload",
    "tensorinspect",                           "tensorconvert storage=system width=8 height=8",
    "tensorupload storage=system",             "tensorupload storage=dmabuf"};
constexpr const char *kGlConverter = "tensorconvert storage=pbo width=8 height=8";

GstMessage *pop_error_now(GstElement *pipeline) {
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  return msg;
}

std::string error_of(GstMessage *msg) {
  if (!msg)
    return "none";
  GError *error = nullptr;
  gst_message_parse_error(msg, &error, nullptr);
  std::string text = error ? error->message : "?";
  g_clear_error(&error);
  return text;
}

/* appsrc ! queue ! ELEMENT ! appsink, PLAYING, with a never-signalled fenced
 * buffer pushed: the element's streaming thread (the queue's) is in the wait. */
struct StuckPipeline {
  explicit StuckPipeline(const std::string &element, NeverSignalled &fence) : app("queue ! " + element + " name=el !") {
    app.push(fence.buffer());
    // The frame must be held: passing it on would hand downstream unfinished bytes.
    GstSample *early = gst_app_sink_try_pull_sample(GST_APP_SINK(app.sink), 200 * GST_MSECOND);
    EXPECT_EQ(early, nullptr) << "the frame was passed on before its fence signalled";
    if (early)
      gst_sample_unref(early);
  }
  AppPipeline app;
};

void expect_null_ends_the_wait(const std::vector<std::string> &elements) {
  for (const std::string &element : elements) {
    for (NeverKind kind : {NeverKind::Software, NeverKind::SyncFile, NeverKind::D3d11}) {
      SCOPED_TRACE(element + ", " + never_kind_name(kind) + " fence");
      NeverSignalled fence(kind);
      StuckPipeline stuck(element, fence);
      const auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(gst_element_set_state(stuck.app.pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      GstMessage *error = pop_error_now(stuck.app.pipeline);
      EXPECT_EQ(error, nullptr) << "the wait ran into its bound instead of being interrupted: " << error_of(error);
      if (error)
        gst_message_unref(error);
      std::printf("%-45s %-9s fence: NULL reached in %lld ms\n", element.c_str(), never_kind_name(kind),
                  static_cast<long long>(ms));
    }
  }
}

void expect_flush_ends_the_wait(const std::vector<std::string> &elements) {
  for (const std::string &element : elements) {
    SCOPED_TRACE(element);
    NeverSignalled fence(NeverKind::Software);
    StuckPipeline stuck(element, fence);
    GstPad *src = gst_element_get_static_pad(stuck.app.src, "src");
    // What a flushing seek sends downstream, from the application's thread.
    EXPECT_TRUE(gst_pad_push_event(src, gst_event_new_flush_start()));
    EXPECT_TRUE(gst_pad_push_event(src, gst_event_new_flush_stop(TRUE)));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    EXPECT_TRUE(gst_pad_push_event(src, gst_event_new_segment(&segment)));
    gst_object_unref(src);
    GstMessage *error = pop_error_now(stuck.app.pipeline);
    EXPECT_EQ(error, nullptr) << error_of(error);
    if (error)
      gst_message_unref(error);
    // After the flush the element waits for fences again: a frame whose fence
    // signals goes through, the stuck one never did.
    auto later = SoftwareTimeline::create("after the flush");
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, kGraySize, nullptr);
    gst_buffer_memset(buffer, 0, 0x17, kGraySize);
    const auto value = later->issue();
    add_fence(buffer, later, value);
    std::thread producer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      (void)later->signal(value);
    });
    stuck.app.push(buffer);
    GstSample *sample = stuck.app.pull();
    producer.join();
    ASSERT_NE(sample, nullptr) << "nothing came through after the flush";
    GstTensorMemFenceMeta *meta = gst_buffer_get_tensor_mem_fence_meta(gst_sample_get_buffer(sample));
    if (meta && gst_tensor_mem_fence_meta_get_timeline(meta) == later) {
      EXPECT_TRUE(gst_tensor_mem_fence_meta_is_satisfied(meta)) << "passed on before its fence signalled";
    }
    gst_sample_unref(sample);
  }
}

TEST(FenceInterrupt, SettingThePipelineToNullEndsEveryElementsWait) { expect_null_ends_the_wait(kWaitingElements); }

TEST(FenceInterrupt, AFlushEndsTheWaitAndTheElementWaitsAgainAfterIt) { expect_flush_ends_the_wait(kWaitingElements); }

#if defined(TM_TEST_HAVE_GL)
TEST(FenceInterruptGl, TheGlConvertersWaitEndsOnNullAndOnAFlush) {
  std::string why;
  if (!tmtest::shared_worker(&why))
    GTEST_SKIP() << "no headless GL here: " << why;
  expect_null_ends_the_wait({kGlConverter});
  expect_flush_ends_the_wait({kGlConverter});
}
#endif

TEST(FenceInterrupt, AFlushingPoolEndsAnAcquireWaitingForAFenceOrAReader) {
  for (bool reader : {false, true}) {
    SCOPED_TRACE(reader ? "a reader that never finishes" : "a fence that never signals");
    GstBufferPool *pool = gray_pool(false, G_MAXUINT64);
    auto timeline = SoftwareTimeline::create("never");
    GstBuffer *buffer = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    GstTensorMemReadCompletion *read = nullptr;
    if (reader) {
      read = gst_buffer_begin_tensor_mem_read(buffer, nullptr);
      ASSERT_NE(read, nullptr);
    } else {
      add_fence(buffer, timeline, timeline->issue());
    }
    gst_buffer_unref(buffer);
    buffer = nullptr;
    std::thread flusher([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gst_buffer_pool_set_flushing(pool, TRUE);
    });
    EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_FLUSHING);
    flusher.join();
    EXPECT_EQ(buffer, nullptr);
    EXPECT_EQ(pool_counter(pool, reader ? "read-timeouts" : "fence-timeouts"), 0u) << "counted as a timeout";
    // Once the work completes and the pool stops flushing, the buffer is handed out again.
    gst_buffer_pool_set_flushing(pool, FALSE);
    if (reader) {
      gst_tensor_mem_read_completion_done(read);
    } else {
      ASSERT_TRUE(timeline->signal(1));
    }
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
    gst_buffer_unref(buffer);
    if (read)
      gst_tensor_mem_read_completion_unref(read);
    stop_pool(pool);
  }
}

} // namespace
