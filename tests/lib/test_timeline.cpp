// SPDX-License-Identifier: Apache-2.0
// Timelines and the map ordering behind recorded GPU writes (DESIGN §2
// Fences, issue 12 core): software waits and timeouts, the unreachable-value
// rule (HAZ-23) for every kind built here, monotonic record_write
// (D3D-FENCE-02) and CPU maps blocked behind an unsignalled write.
#include <tensormem/storage.hpp>
#include <tensormem/timeline.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#ifndef _WIN32
#include <sys/eventfd.h>
#include <unistd.h>
#endif

using namespace tensormem;
using namespace std::chrono_literals;

namespace {

// Generous: only a hang, never a slow machine, should exceed it.
constexpr auto kHangBound = 60s;

std::shared_ptr<MemStorage> make_storage() {
  auto made = MemStorage::allocate(64);
  EXPECT_TRUE(made);
  return std::move(made).value();
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

} // namespace

TEST(SoftwareTimeline, issues_increasing_values_from_one_and_zero_is_always_reached) {
  auto t = SoftwareTimeline::create("cpu");
  EXPECT_EQ(t->last_issued(), 0u);
  auto zero = t->signalled(0);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(*zero);
  EXPECT_EQ(t->issue(), 1u);
  EXPECT_EQ(t->issue(), 2u);
  EXPECT_EQ(t->last_issued(), 2u);
  EXPECT_EQ(t->kind(), TimelineKind::Software);
  EXPECT_EQ(t->label(), "software timeline 'cpu'");
}

TEST(SoftwareTimeline, signalling_a_value_reaches_it_and_every_earlier_one_only) {
  auto t = SoftwareTimeline::create("cpu");
  t->issue();
  t->issue();
  const auto v3 = t->issue();
  ASSERT_TRUE(t->signal(2));
  EXPECT_TRUE(*t->signalled(1));
  EXPECT_TRUE(*t->signalled(2));
  EXPECT_FALSE(*t->signalled(v3));
  // An older signal arriving late does not move the timeline back.
  ASSERT_TRUE(t->signal(1));
  EXPECT_TRUE(*t->signalled(2));
}

TEST(SoftwareTimeline, wait_cpu_returns_once_another_thread_signals) {
  auto t = SoftwareTimeline::create("cpu");
  const auto v = t->issue();
  std::atomic<bool> signalled{false};
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    signalled = true;
    ASSERT_TRUE(t->signal(v));
  });
  Result<void> waited = t->wait_cpu(v, kHangBound);
  EXPECT_TRUE(waited) << waited.error().message();
  EXPECT_TRUE(signalled.load()) << "wait_cpu returned before the value was signalled";
  producer.join();
}

TEST(SoftwareTimeline, a_never_signalled_value_fails_within_its_timeout_naming_timeline_and_value) {
  auto t = SoftwareTimeline::create("decoder");
  t->issue();
  const auto v = t->issue();
  ASSERT_TRUE(t->signal(1));
  const auto start = std::chrono::steady_clock::now();
  Result<void> waited = t->wait_cpu(v, 50ms);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind(), ErrorKind::WouldBlock);
  EXPECT_TRUE(contains(waited.error().message(), "software timeline 'decoder'")) << waited.error().message();
  EXPECT_TRUE(contains(waited.error().message(), "value 2")) << waited.error().message();
  EXPECT_LT(took, kHangBound);
}

TEST(SoftwareTimeline, a_zero_or_negative_timeout_polls_once) {
  auto t = SoftwareTimeline::create("cpu");
  const auto v = t->issue();
  EXPECT_EQ(t->wait_cpu(v, 0ns).error().kind(), ErrorKind::WouldBlock);
  EXPECT_EQ(t->wait_cpu(v, -5s).error().kind(), ErrorKind::WouldBlock);
  ASSERT_TRUE(t->signal(v));
  EXPECT_TRUE(t->wait_cpu(v, 0ns));
}

TEST(SoftwareTimeline, an_unissued_value_is_refused_at_signal_wait_and_query_HAZ_23) {
  auto t = SoftwareTimeline::create("cpu");
  t->issue();
  auto check = [](const Error &e, const char *op) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << op;
    EXPECT_TRUE(contains(e.message(), std::string(op) + ": value 2")) << e.message();
    EXPECT_TRUE(contains(e.message(), "last issued 1")) << e.message();
    EXPECT_TRUE(contains(e.message(), "software timeline 'cpu'")) << e.message();
  };
  check(t->signal(2).error(), "signal");
  check(t->wait_cpu(2, kHangBound).error(), "wait_cpu");
  check(t->signalled(2).error(), "signalled");
}

TEST(RecordWrite, keeps_the_newest_value_per_timeline_D3D_FENCE_02) {
  auto storage = make_storage();
  auto a = SoftwareTimeline::create("a");
  auto b = SoftwareTimeline::create("b");
  for (int i = 0; i < 5; ++i)
    a->issue();
  b->issue();
  EXPECT_TRUE(storage->gpu_completion().empty());
  ASSERT_TRUE(storage->record_write(a, 3));
  ASSERT_TRUE(storage->record_write(a, 2)); // late and older: ignored
  ASSERT_TRUE(storage->record_write(b, 1));
  ASSERT_TRUE(storage->record_write(a, 0)); // "no write": ignored
  auto writes = storage->gpu_completion();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].timeline, a);
  EXPECT_EQ(writes[0].value, 3u);
  EXPECT_EQ(writes[1].timeline, b);
  EXPECT_EQ(writes[1].value, 1u);
  ASSERT_TRUE(storage->record_write(a, 5));
  EXPECT_EQ(storage->gpu_completion()[0].value, 5u);
}

TEST(RecordWrite, refuses_an_unissued_value_and_a_null_timeline_HAZ_23) {
  auto storage = make_storage();
  auto t = SoftwareTimeline::create("cpu");
  t->issue();
  Result<void> refused = storage->record_write(t, 2);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_TRUE(contains(refused.error().message(), "record_write: value 2")) << refused.error().message();
  EXPECT_TRUE(contains(refused.error().message(), "last issued 1")) << refused.error().message();
  EXPECT_TRUE(storage->gpu_completion().empty());
  EXPECT_EQ(storage->record_write(nullptr, 1).error().kind(), ErrorKind::InvalidArgument);
}

TEST(MapOrdering, a_cpu_map_waits_for_an_unsignalled_write_until_another_thread_signals_it) {
  auto storage = make_storage();
  storage->set_fence_timeout(kHangBound);
  auto t = SoftwareTimeline::create("gpu");
  const auto v = t->issue();
  ASSERT_TRUE(storage->record_write(t, v));

  std::atomic<bool> signalled{false};
  auto mapper = std::async(std::launch::async, [&] {
    Result<HostPin> pin = storage->map(CpuAccess::Read);
    // The map may only come back after the signal.
    return std::make_pair(pin.ok(), signalled.load());
  });
  // The map is published as in flight while it waits, with no lock held:
  // state queries answer meanwhile.
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  while (storage->map_state().phase() != MapState::Phase::Mapping) {
    ASSERT_EQ(mapper.wait_for(1ms), std::future_status::timeout) << "the map did not wait for the recorded write";
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the map never started";
  }
  EXPECT_TRUE(storage->is_mapped());
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(mapper.wait_for(0s), std::future_status::timeout) << "the map did not wait for the recorded write";
  signalled = true;
  ASSERT_TRUE(t->signal(v));
  auto [mapped, after_signal] = mapper.get();
  EXPECT_TRUE(mapped);
  EXPECT_TRUE(after_signal);
  EXPECT_FALSE(storage->is_mapped());
}

TEST(MapOrdering, a_map_that_times_out_fails_naming_the_write_and_leaves_the_storage_unmapped_and_usable) {
  auto storage = make_storage();
  storage->set_fence_timeout(30ms);
  EXPECT_EQ(storage->fence_timeout(), 30ms);
  auto t = SoftwareTimeline::create("stuck");
  const auto v = t->issue();
  ASSERT_TRUE(storage->record_write(t, v));

  Result<HostPin> pin = storage->map(CpuAccess::ReadWrite);
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::WouldBlock);
  EXPECT_TRUE(contains(pin.error().message(), "software timeline 'stuck'")) << pin.error().message();
  EXPECT_TRUE(contains(pin.error().message(), "value 1")) << pin.error().message();
  EXPECT_FALSE(storage->is_mapped());
  EXPECT_EQ(storage->map_state().phase(), MapState::Phase::Unmapped);

  ASSERT_TRUE(t->signal(v));
  Result<HostPin> again = storage->map(CpuAccess::ReadWrite);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_TRUE(storage->is_mapped());
}

TEST(MapOrdering, a_non_blocking_map_answers_would_block_while_the_write_is_outstanding) {
  auto storage = make_storage();
  storage->set_fence_timeout(kHangBound);
  auto t = SoftwareTimeline::create("gpu");
  const auto v = t->issue();
  ASSERT_TRUE(storage->record_write(t, v));
  Result<HostPin> pin = storage->map(CpuAccess::Read, MapState::Wait::NoWait);
  ASSERT_FALSE(pin);
  EXPECT_TRUE(pin.error().would_block());
  EXPECT_FALSE(storage->is_mapped());
  ASSERT_TRUE(t->signal(v));
  EXPECT_TRUE(storage->map(CpuAccess::Read, MapState::Wait::NoWait));
}

TEST(MapOrdering, a_map_waits_for_the_writes_of_every_timeline) {
  auto storage = make_storage();
  storage->set_fence_timeout(30ms);
  auto a = SoftwareTimeline::create("a");
  auto b = SoftwareTimeline::create("b");
  ASSERT_TRUE(storage->record_write(a, a->issue()));
  ASSERT_TRUE(storage->record_write(b, b->issue()));
  ASSERT_TRUE(a->signal(1));
  Result<HostPin> pin = storage->map(CpuAccess::Read);
  ASSERT_FALSE(pin);
  EXPECT_TRUE(contains(pin.error().message(), "timeline 'b'")) << pin.error().message();
  ASSERT_TRUE(b->signal(1));
  EXPECT_TRUE(storage->map(CpuAccess::Read));
}

// Reader completions: a storage read after it was handed on (an inference
// step on the GPU) must not be written by the CPU until that read is done.
TEST(RecordRead, keeps_the_newest_value_per_timeline_and_forgets_completed_reads) {
  auto storage = make_storage();
  auto a = SoftwareTimeline::create("reader a");
  auto b = SoftwareTimeline::create("reader b");
  a->issue();
  a->issue();
  b->issue();
  ASSERT_TRUE(storage->record_read(a, 2));
  ASSERT_TRUE(storage->record_read(a, 1)); // late and older: ignored
  ASSERT_TRUE(storage->record_read(b, 1));
  ASSERT_TRUE(storage->record_read(a, 0)); // "no read": ignored
  Result<std::vector<GpuCompletion>> running = storage->pending_reads();
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 2u);
  EXPECT_EQ((*running)[0].timeline, a);
  EXPECT_EQ((*running)[0].value, 2u);
  ASSERT_TRUE(b->signal(1));
  running = storage->pending_reads();
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 1u) << "a completed read is still pending";
  EXPECT_EQ((*running)[0].timeline, a);
  EXPECT_EQ(b.use_count(), 1) << "the storage still holds a completed reader's timeline";
  EXPECT_TRUE(storage->gpu_completion().empty()) << "a read was recorded as a write";
}

TEST(RecordRead, refuses_an_unissued_value_and_a_null_timeline_HAZ_23) {
  auto storage = make_storage();
  auto t = SoftwareTimeline::create("reader");
  t->issue();
  Result<void> refused = storage->record_read(t, 2);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_TRUE(contains(refused.error().message(), "record_read: value 2")) << refused.error().message();
  EXPECT_EQ(storage->record_read(nullptr, 1).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_TRUE(storage->pending_reads()->empty());
}

TEST(RecordRead, a_writing_map_waits_for_a_recorded_read_and_a_reading_map_does_not) {
  auto storage = make_storage();
  storage->set_fence_timeout(kHangBound);
  auto t = SoftwareTimeline::create("inference");
  const auto v = t->issue();
  ASSERT_TRUE(storage->record_read(t, v));

  // Readers share: a second reader maps at once, even without waiting.
  EXPECT_TRUE(storage->map(CpuAccess::Read, MapState::Wait::NoWait));
  Result<HostPin> busy = storage->map(CpuAccess::Write, MapState::Wait::NoWait);
  ASSERT_FALSE(busy);
  EXPECT_TRUE(busy.error().would_block());
  EXPECT_TRUE(contains(busy.error().message(), "read recorded as value 1")) << busy.error().message();
  EXPECT_TRUE(contains(busy.error().message(), "'inference'")) << busy.error().message();

  std::atomic<bool> read_done{false};
  auto writer = std::async(std::launch::async, [&] {
    Result<HostPin> pin = storage->map(CpuAccess::ReadWrite);
    return std::make_pair(pin.ok(), read_done.load());
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(writer.wait_for(0s), std::future_status::timeout) << "the write map did not wait for the read";
  read_done = true;
  ASSERT_TRUE(t->signal(v));
  auto [mapped, after_read] = writer.get();
  EXPECT_TRUE(mapped);
  EXPECT_TRUE(after_read) << "the CPU wrote into memory a reader was still reading";
}

TEST(RecordRead, a_read_that_never_completes_bounds_the_writing_map_and_wait_for_reads) {
  auto storage = make_storage();
  storage->set_fence_timeout(30ms);
  auto t = SoftwareTimeline::create("stuck reader");
  ASSERT_TRUE(storage->record_read(t, t->issue()));
  Result<HostPin> pin = storage->map(CpuAccess::Write);
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::WouldBlock);
  EXPECT_TRUE(contains(pin.error().message(), "'stuck reader'")) << pin.error().message();
  EXPECT_FALSE(storage->is_mapped());
  Result<std::size_t> waited = storage->wait_for_reads(20ms);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind(), ErrorKind::WouldBlock);
  EXPECT_TRUE(contains(waited.error().message(), "waiting for the recorded read")) << waited.error().message();

  ASSERT_TRUE(t->signal(1));
  waited = storage->wait_for_reads(0ns);
  ASSERT_TRUE(waited);
  EXPECT_EQ(*waited, 0u) << "a completed read was counted as waited for";
  EXPECT_TRUE(storage->map(CpuAccess::Write));
}

TEST(RecordRead, wait_for_reads_waits_for_every_reader_and_counts_them) {
  auto storage = make_storage();
  auto a = SoftwareTimeline::create("a");
  auto b = SoftwareTimeline::create("b");
  ASSERT_TRUE(storage->record_read(a, a->issue()));
  ASSERT_TRUE(storage->record_read(b, b->issue()));
  std::atomic<int> signalled{0};
  std::thread readers([&] {
    std::this_thread::sleep_for(30ms);
    signalled++;
    (void)a->signal(1);
    std::this_thread::sleep_for(30ms);
    signalled++;
    (void)b->signal(1);
  });
  Result<std::size_t> waited = storage->wait_for_reads(kHangBound);
  const int seen = signalled.load();
  readers.join();
  ASSERT_TRUE(waited) << waited.error().message();
  EXPECT_EQ(*waited, 2u);
  EXPECT_EQ(seen, 2) << "wait_for_reads returned before every reader finished";
  EXPECT_TRUE(storage->pending_reads()->empty());
}

#ifndef _WIN32
// The sync_file kind's poll() logic, with eventfds standing in for sync_file
// fds: both poll readable once "signalled". What a real sync_file adds (the
// kernel's fence state behind the fd) is not exercised here.
namespace {

UniqueFd make_eventfd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  EXPECT_TRUE(fd.valid());
  return fd;
}

void fire(const UniqueFd &fd) {
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(fd.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
}

/// An eventfd adopted by `t`, with a duplicate kept to fire it.
UniqueFd adopt_eventfd(SyncFileTimeline &t, std::uint64_t expected_value) {
  UniqueFd fd = make_eventfd();
  UniqueFd trigger(::dup(fd.get()));
  Result<std::uint64_t> v = t.adopt(std::move(fd));
  EXPECT_TRUE(v);
  EXPECT_EQ(*v, expected_value);
  return trigger;
}

} // namespace

TEST(SyncFileTimeline, an_fd_reaches_its_value_when_it_polls_readable) {
  auto t = SyncFileTimeline::create("v4l2");
  UniqueFd trigger = adopt_eventfd(*t, 1);
  EXPECT_FALSE(*t->signalled(1));
  Result<void> timed_out = t->wait_cpu(1, 20ms);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().kind(), ErrorKind::WouldBlock);
  EXPECT_TRUE(contains(timed_out.error().message(), "sync_file timeline 'v4l2'")) << timed_out.error().message();
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    fire(trigger);
  });
  EXPECT_TRUE(t->wait_cpu(1, kHangBound));
  producer.join();
  EXPECT_TRUE(*t->signalled(1));
}

TEST(SyncFileTimeline, a_value_is_reached_only_when_every_earlier_fd_has_signalled) {
  auto t = SyncFileTimeline::create("out-of-order");
  UniqueFd first = adopt_eventfd(*t, 1);
  UniqueFd second = adopt_eventfd(*t, 2);
  fire(second);
  EXPECT_FALSE(*t->signalled(2));
  EXPECT_EQ(t->wait_cpu(2, 20ms).error().kind(), ErrorKind::WouldBlock);
  fire(first);
  EXPECT_TRUE(*t->signalled(2));
  EXPECT_TRUE(t->wait_cpu(2, kHangBound));
}

TEST(SyncFileTimeline, waiters_on_many_threads_pass_as_the_points_signal_while_more_are_issued) {
  auto t = SyncFileTimeline::create("many");
  constexpr std::uint64_t kPoints = 32;
  std::vector<UniqueFd> triggers;
  for (std::uint64_t v = 1; v <= kPoints / 2; ++v)
    triggers.push_back(adopt_eventfd(*t, v));
  std::vector<std::future<Result<void>>> waiters;
  for (std::uint64_t v = 1; v <= kPoints / 2; ++v)
    waiters.push_back(std::async(std::launch::async, [&, v] { return t->wait_cpu(v, kHangBound); }));
  // Issuing more points while the waiters block proves no lock is held
  // across a wait.
  for (std::uint64_t v = kPoints / 2 + 1; v <= kPoints; ++v)
    triggers.push_back(adopt_eventfd(*t, v));
  for (std::uint64_t v = kPoints; v >= 1; --v)
    fire(triggers[v - 1]);
  for (auto &w : waiters) {
    Result<void> r = w.get();
    EXPECT_TRUE(r) << r.error().message();
  }
  EXPECT_TRUE(*t->signalled(kPoints));
}

TEST(SyncFileTimeline, an_unissued_value_is_refused_at_record_and_wait_time_HAZ_23) {
  auto t = SyncFileTimeline::create("cam");
  UniqueFd trigger = adopt_eventfd(*t, 1);
  auto storage = make_storage();
  EXPECT_EQ(storage->record_write(t, 2).error().kind(), ErrorKind::InvalidArgument);
  Result<void> waited = t->wait_cpu(2, kHangBound);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_TRUE(contains(waited.error().message(), "last issued 1")) << waited.error().message();
  EXPECT_EQ(t->signalled(2).error().kind(), ErrorKind::InvalidArgument);
}

TEST(SyncFileTimeline, an_invalid_fd_is_refused_and_issues_nothing) {
  auto t = SyncFileTimeline::create("cam");
  EXPECT_EQ(t->adopt(UniqueFd()).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(t->last_issued(), 0u);
}

TEST(SyncFileTimeline, an_fd_that_reports_an_error_fails_the_wait_instead_of_passing_it) {
  // The write end of a pipe whose reader has gone polls POLLERR.
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ::close(ends[0]);
  auto t = SyncFileTimeline::create("broken");
  ASSERT_TRUE(t->adopt(UniqueFd(ends[1])));
  Result<bool> query = t->signalled(1);
  ASSERT_FALSE(query);
  EXPECT_EQ(query.error().kind(), ErrorKind::Io);
  Result<void> waited = t->wait_cpu(1, kHangBound);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind(), ErrorKind::Io);
}

TEST(SyncFileTimeline, a_map_waits_for_a_recorded_fd_write) {
  auto storage = make_storage();
  storage->set_fence_timeout(20ms);
  auto t = SyncFileTimeline::create("cam");
  UniqueFd trigger = adopt_eventfd(*t, 1);
  ASSERT_TRUE(storage->record_write(t, 1));
  EXPECT_EQ(storage->map(CpuAccess::Read).error().kind(), ErrorKind::WouldBlock);
  EXPECT_FALSE(storage->is_mapped());
  fire(trigger);
  EXPECT_TRUE(storage->map(CpuAccess::Read));
}
#endif

// ---- cancellable waits (issue 28) -------------------------------------------
// A streaming thread blocked on a fence that never signals must let the
// pipeline flush or stop: a wait given a WaitCancel ends with Cancelled once
// it is cancelled from another thread, for every kind, long before its own
// bound (kHangBound: reaching it would fail the kind check below).
namespace {

/// Waits on `t` for `value` on another thread, cancels `cancel` after a
/// while and returns what the wait answered.
Result<void> wait_then_cancel(Timeline &t, std::uint64_t value, CancelFlag &cancel) {
  auto waiter = std::async(std::launch::async, [&] { return t.wait_cpu(value, kHangBound, &cancel); });
  EXPECT_EQ(waiter.wait_for(30ms), std::future_status::timeout) << "the wait ended before it was cancelled";
  cancel.cancel();
  return waiter.get();
}

void expect_cancelled(const Result<void> &r, const std::string &label) {
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::Cancelled) << r.error().message();
  EXPECT_TRUE(contains(r.error().message(), label)) << r.error().message();
}

} // namespace

TEST(CancellableWait, a_software_wait_ends_cancelled_when_another_thread_cancels_it) {
  auto t = SoftwareTimeline::create("never");
  const std::uint64_t v = t->issue();
  CancelFlag cancel;
  expect_cancelled(wait_then_cancel(*t, v, cancel), "software timeline 'never'");
  EXPECT_FALSE(*t->signalled(v));
}

TEST(CancellableWait, a_cancelled_flag_ends_a_new_wait_at_once_and_reset_allows_waiting_again) {
  auto t = SoftwareTimeline::create("stuck");
  const std::uint64_t v = t->issue();
  CancelFlag cancel;
  cancel.cancel();
  expect_cancelled(t->wait_cpu(v, kHangBound, &cancel), "'stuck'");
  cancel.reset();
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(t->signal(v));
  });
  EXPECT_TRUE(t->wait_cpu(v, kHangBound, &cancel));
  producer.join();
}

TEST(CancellableWait, a_reached_value_passes_even_when_cancelled_and_a_timeout_still_expires) {
  auto t = SoftwareTimeline::create("done");
  const std::uint64_t v = t->issue();
  ASSERT_TRUE(t->signal(v));
  CancelFlag cancel;
  cancel.cancel();
  EXPECT_TRUE(t->wait_cpu(v, kHangBound, &cancel)) << "the work was done: nothing to cancel";
  CancelFlag idle;
  Result<void> expired = t->wait_cpu(t->issue(), 20ms, &idle);
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().kind(), ErrorKind::WouldBlock) << expired.error().message();
}

TEST(CancellableWait, wait_for_reads_ends_cancelled) {
  auto storage = make_storage();
  auto reader = SoftwareTimeline::create("inference");
  ASSERT_TRUE(storage->record_read(reader, reader->issue()));
  CancelFlag cancel;
  auto waiter = std::async(std::launch::async, [&] { return storage->wait_for_reads(kHangBound, &cancel); });
  EXPECT_EQ(waiter.wait_for(30ms), std::future_status::timeout);
  cancel.cancel();
  Result<std::size_t> r = waiter.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::Cancelled) << r.error().message();
  EXPECT_EQ(storage->pending_reads()->size(), 1u) << "a cancelled wait forgot a read still running";
}

#ifndef _WIN32
TEST(CancellableWait, a_sync_file_wait_ends_cancelled) {
  auto t = SyncFileTimeline::create("camera");
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(fd.valid());
  Result<std::uint64_t> v = t->adopt(std::move(fd));
  ASSERT_TRUE(v);
  CancelFlag cancel;
  expect_cancelled(wait_then_cancel(*t, *v, cancel), "sync_file timeline 'camera'");
}
#endif
