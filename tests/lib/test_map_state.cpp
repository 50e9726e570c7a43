// SPDX-License-Identifier: Apache-2.0
// The map state machine (PBO-MAP-01..13, SHR-ACC-03) against the fake backend.
// Twins of the PBO seed tests keep the seed's names.
#include "fake_storage.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

using namespace tensormem;
using tmtest::FakeMode;
using tmtest::FakeStorage;
using namespace std::chrono_literals;

namespace {

Tensor wrap(const std::shared_ptr<FakeStorage> &s, Shape shape, std::string name = {}) {
  auto t = Tensor::wrap(s, std::move(shape), DType::U8, std::move(name));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

// A gate a backend call can park on until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool open = false;
  void park() {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  bool wait_entered() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

} // namespace

TEST(MapState, PBO_MAP_01_test_pbo_tensor_double_map_fails) {
  auto s = FakeStorage::make(24);
  Tensor t = wrap(s, {2, 3, 4});
  auto first = t.map(CpuAccess::ReadWrite);
  ASSERT_TRUE(first);
  auto second = t.map(CpuAccess::ReadWrite);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind(), ErrorKind::Mapped); // PBO-MAP-13
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(s->maps, 1);
}

TEST(MapState, PBO_MAP_01_writers_and_readers_still_exclude_each_other) {
  auto s = FakeStorage::make(8);
  Tensor t = wrap(s, {8});
  {
    auto reader = t.map(CpuAccess::Read);
    ASSERT_TRUE(reader);
    EXPECT_FALSE(t.map(CpuAccess::ReadWrite));
    EXPECT_FALSE(t.map(CpuAccess::Write));
  }
  {
    auto writer = t.map(CpuAccess::Write);
    ASSERT_TRUE(writer);
    EXPECT_FALSE(t.map(CpuAccess::Read));
    EXPECT_FALSE(t.map(CpuAccess::ReadWrite));
  }
  EXPECT_TRUE(t.map(CpuAccess::Read));
  EXPECT_EQ(s->maps, s->unmaps);
  EXPECT_EQ(s->violations, 0);
}

TEST(MapState, PBO_MAP_03_the_backend_always_maps_the_whole_allocation) {
  auto s = FakeStorage::make(64);
  Tensor t = wrap(s, {64});
  auto v = t.view(16, {8});
  ASSERT_TRUE(v);
  auto m = v->map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size_bytes(), 8u);
  EXPECT_EQ(m->data(), s->bytes().data() + 16);
  EXPECT_EQ(s->violations, 0); // the fake counts a map of any other size
}

TEST(MapState, PBO_MAP_04_test_pbo_tensor_map_write_read) {
  auto s = FakeStorage::make(12);
  Tensor t = wrap(s, {3, 4}, "rw_test");
  {
    auto m = t.map(CpuAccess::ReadWrite);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->shape(), (Shape{3, 4}));
    EXPECT_TRUE(t.is_mapped());
    std::memset(m->mutable_bytes().data(), 0xAB, m->size_bytes());
  }
  EXPECT_FALSE(t.is_mapped());
  auto r = t.map(CpuAccess::Read);
  ASSERT_TRUE(r);
  for (std::byte b : r->bytes())
    EXPECT_EQ(b, std::byte{0xAB});
}

TEST(MapState, PBO_MAP_05_read_maps_share_one_gl_mapping) {
  auto s = FakeStorage::make(8);
  s->fill_ramp();
  Tensor t = wrap(s, {8});
  auto a = t.map(CpuAccess::Read);
  auto b = t.map(CpuAccess::Read);
  auto c = t.map(CpuAccess::Read);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(s->maps, 1);
  EXPECT_EQ(s->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(s->map_state().readers(), 3u);
  EXPECT_EQ(0, std::memcmp(a->data(), b->data(), 8));
  EXPECT_EQ(0, std::memcmp(a->data(), c->data(), 8));
  a->unmap();
  b->unmap();
  EXPECT_EQ(s->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  c->unmap();
  EXPECT_EQ(s->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

TEST(MapState, PBO_MAP_06_a_backend_error_is_returned_unchanged_and_nothing_is_unmapped) {
  auto s = FakeStorage::make(8, FakeMode::Disconnected);
  Tensor t = wrap(s, {8});
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Disconnected);
  EXPECT_EQ(s->unmaps, 0);
  EXPECT_FALSE(t.is_mapped());
  auto f = FakeStorage::make(8, FakeMode::Failing);
  auto m2 = wrap(f, {8}).map(CpuAccess::Write);
  ASSERT_FALSE(m2);
  EXPECT_EQ(m2.error().kind(), ErrorKind::InvalidOperation);
}

// PBO-OPS-04: a mapping shorter than asked is a failure, not a partial map.
TEST(MapState, PBO_MAP_07_short_mapping_is_refused_and_the_buffer_released) {
  auto s = FakeStorage::make(32, FakeMode::Short);
  Tensor t = wrap(s, {32});
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(m.error().needed(), 32u);
  EXPECT_EQ(m.error().capacity(), 16u);
  EXPECT_EQ(s->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

TEST(MapState, PBO_MAP_07_a_longer_mapping_than_asked_is_accepted) {
  auto s = FakeStorage::make(32, FakeMode::LongMapping);
  auto m = wrap(s, {32}).map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size_bytes(), 32u);
}

TEST(MapState, PBO_MAP_08_null_mapping_releases_the_buffer_and_resets_state) {
  auto s = FakeStorage::make(8, FakeMode::Null);
  Tensor t = wrap(s, {8});
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(m.error().size(), 8u);
  EXPECT_EQ(s->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
  auto again = t.map(CpuAccess::Read);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(s->unmaps, 2);
}

TEST(MapState, PBO_MAP_08_cleanup_unmap_runs_before_unmapped_is_published) {
  for (FakeMode mode : {FakeMode::Null, FakeMode::Short}) {
    auto s = FakeStorage::make(8, mode);
    MapState::Phase seen = MapState::Phase::Unmapped;
    s->on_unmap = [&] { seen = s->map_state().phase(); };
    ASSERT_FALSE(wrap(s, {8}).map(CpuAccess::Read));
    EXPECT_EQ(seen, MapState::Phase::Mapping) << "a waiter could start a map that races the cleanup unmap";
    EXPECT_EQ(s->map_state().phase(), MapState::Phase::Unmapped);
  }
}

TEST(MapState, PBO_MAP_09_a_failing_unmap_is_logged_and_the_state_still_resets) {
  struct Captured {
    int warnings = 0;
    std::string text;
  } captured;
  set_log_handler(
      [](LogLevel level, std::string_view msg, void *user) {
        auto *c = static_cast<Captured *>(user);
        if (level == LogLevel::Warning) {
          ++c->warnings;
          c->text = msg;
        }
      },
      &captured);
  auto s = FakeStorage::make(8);
  s->unmap_fails = true;
  Tensor t = wrap(s, {8});
  { ASSERT_TRUE(t.map(CpuAccess::Write)); }
  set_log_handler(nullptr, nullptr);
  EXPECT_EQ(captured.warnings, 1);
  EXPECT_NE(captured.text.find("unmap refused"), std::string::npos);
  EXPECT_FALSE(t.is_mapped());
  EXPECT_TRUE(t.map(CpuAccess::Write));
}

namespace {
struct CountingPort final : MapPort {
  int maps = 0, unmaps = 0;
  std::byte buf[16]{};
  Result<BackendMapping> backend_map(std::size_t size, CpuAccess) noexcept override {
    ++maps;
    return BackendMapping{buf, size};
  }
  Result<void> backend_unmap() noexcept override {
    ++unmaps;
    return {};
  }
};

// PBO-MAP-12, PBO-OPS-06: the port cannot throw. A compile-time property of MapPort, so
// it is checked where this file compiles, not counted as a test case.
static_assert(noexcept(std::declval<MapPort &>().backend_map(1, CpuAccess::Read)));
static_assert(noexcept(std::declval<MapPort &>().backend_unmap()));
} // namespace

TEST(MapState, PBO_MAP_09_release_without_acquire_is_ignored) {
  CountingPort port;
  MapState state;
  state.release(port);
  EXPECT_EQ(port.unmaps, 0);
  ASSERT_TRUE(state.acquire(port, 16, CpuAccess::Read, MapState::Wait::Block));
  state.release(port);
  state.release(port); // a second release of the same acquisition
  EXPECT_EQ(port.unmaps, 1);
  EXPECT_EQ(state.phase(), MapState::Phase::Unmapped);
}

TEST(MapState, PBO_MAP_10_explicit_unmap_then_drop_releases_only_once) {
  auto s = FakeStorage::make(8);
  Tensor t = wrap(s, {8});
  auto survivor = t.map(CpuAccess::Read);
  ASSERT_TRUE(survivor);
  {
    auto second = t.map(CpuAccess::Read);
    ASSERT_TRUE(second);
    second->unmap();
  } // destroyed after the explicit unmap
  EXPECT_EQ(s->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(survivor->bytes().size(), 8u);
  EXPECT_EQ(s->map_state().readers(), 1u);
  survivor->unmap();
  EXPECT_EQ(s->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

TEST(MapState, PBO_MAP_11_is_mapped_is_true_while_a_map_is_in_flight) {
  auto s = FakeStorage::make(8);
  Gate gate;
  s->on_map = [&] { gate.park(); };
  Tensor t = wrap(s, {8});
  auto fut = std::async(std::launch::async, [&] { return t.map(CpuAccess::Read).ok(); });
  ASSERT_TRUE(gate.wait_entered());
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(s->map_state().phase(), MapState::Phase::Mapping);
  gate.release();
  EXPECT_TRUE(fut.get());
  EXPECT_FALSE(t.is_mapped()); // the view was dropped inside the task
}

TEST(MapState, access_none_is_refused_before_the_backend_is_called) {
  auto s = FakeStorage::make(8);
  auto m = wrap(s, {8}).map(CpuAccess::None);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(s->maps, 0);
}

TEST(MapState, the_backend_sees_the_access_that_was_asked_for) {
  auto s = FakeStorage::make(8);
  Tensor t = wrap(s, {8});
  for (CpuAccess a : {CpuAccess::Read, CpuAccess::Write, CpuAccess::ReadWrite}) {
    ASSERT_TRUE(t.map(a));
    EXPECT_EQ(s->last_access.load(), a);
  }
}

TEST(MapState, PBO_MAP_01_a_waiter_joins_the_mapping_published_by_the_thread_in_flight) {
  auto s = FakeStorage::make(8);
  Gate gate;
  s->on_map = [&] { gate.park(); };
  Tensor t = wrap(s, {8});
  std::promise<void> first_mapped, first_may_drop;
  auto first = std::async(std::launch::async, [&] {
    auto m = t.map(CpuAccess::Read);
    first_mapped.set_value();
    first_may_drop.get_future().wait();
    return m.ok();
  });
  ASSERT_TRUE(gate.wait_entered());
  auto second = std::async(std::launch::async, [&] { return t.map(CpuAccess::Read).ok(); });
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout) << "the second map must wait for the first";
  gate.release();
  first_mapped.get_future().wait();
  EXPECT_TRUE(second.get());
  first_may_drop.set_value();
  EXPECT_TRUE(first.get());
  EXPECT_EQ(s->maps, 1);
  EXPECT_EQ(s->unmaps, 1);
}

TEST(MapState, try_map_reports_would_block_while_another_thread_is_in_the_backend) {
  auto s = FakeStorage::make(8);
  Gate gate;
  s->on_map = [&] { gate.park(); };
  Tensor t = wrap(s, {8});
  auto fut = std::async(std::launch::async, [&] { return t.map(CpuAccess::Read).ok(); });
  ASSERT_TRUE(gate.wait_entered());
  auto tried = t.try_map(CpuAccess::Read);
  ASSERT_FALSE(tried);
  EXPECT_TRUE(tried.error().would_block());
  gate.release();
  EXPECT_TRUE(fut.get());
  s->on_map = nullptr;
  EXPECT_TRUE(t.try_map(CpuAccess::Read)); // nothing in flight: try_map maps
}

TEST(MapState, PBO_MAP_02_a_backend_blocked_in_map_does_not_block_another_storage) {
  auto a = FakeStorage::make(8);
  auto b = FakeStorage::make(8);
  Gate gate;
  a->on_map = [&] { gate.park(); };
  Tensor ta = wrap(a, {8});
  Tensor tb = wrap(b, {8});
  auto stuck = std::async(std::launch::async, [&] { return ta.map(CpuAccess::Read).ok(); });
  ASSERT_TRUE(gate.wait_entered());
  auto other = std::async(std::launch::async, [&] {
    auto r1 = tb.map(CpuAccess::Read);
    auto r2 = tb.map(CpuAccess::Read);
    return r1.ok() && r2.ok();
  });
  ASSERT_EQ(other.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(other.get());
  gate.release();
  EXPECT_TRUE(stuck.get());
}

TEST(MapState, PBO_MAP_02_the_backend_thread_may_map_tensors_while_serving_a_map) {
  // A "GL thread" serves every backend call; while it serves A's map it runs
  // work that maps B itself. With a lock held across the backend call (or one
  // global lock) this deadlocks.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::packaged_task<void()>> queue;
  bool stop = false;
  std::thread::id worker_id;
  std::thread worker([&] {
    worker_id = std::this_thread::get_id();
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty())
          return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  });
  auto run_on_worker = [&](std::function<void()> fn) {
    if (std::this_thread::get_id() == worker_id) {
      fn(); // calls from the worker itself run inline
      return;
    }
    std::packaged_task<void()> task(std::move(fn));
    auto done = task.get_future();
    {
      std::lock_guard lock(mu);
      queue.push_back(std::move(task));
    }
    cv.notify_one();
    done.wait();
  };

  auto a = FakeStorage::make(8);
  auto b = FakeStorage::make(8);
  Tensor tb = wrap(b, {8});
  bool inner_ok = false;
  a->on_map = [&] {
    run_on_worker([&] {
      auto m = tb.map(CpuAccess::ReadWrite);
      inner_ok = m.ok();
    });
  };
  b->on_map = [&] { run_on_worker([] {}); };
  b->on_unmap = [&] { run_on_worker([] {}); };
  Tensor ta = wrap(a, {8});
  auto fut = std::async(std::launch::async, [&] { return ta.map(CpuAccess::Read).ok(); });
  auto status = fut.wait_for(10s);
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  cv.notify_all();
  ASSERT_EQ(status, std::future_status::ready) << "deadlock: mapping from the backend thread hung";
  EXPECT_TRUE(fut.get());
  EXPECT_TRUE(inner_ok);
  worker.join();
}

TEST(MapState, heap_storage_obeys_the_same_reader_writer_rules) {
  auto t = Tensor::allocate({16}, DType::U8);
  ASSERT_TRUE(t);
  auto r1 = t->map(CpuAccess::Read);
  auto r2 = t->map(CpuAccess::Read);
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(t->storage()->map_state().readers(), 2u);
  auto w = t->map(CpuAccess::Write);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind(), ErrorKind::Mapped);
}

// A storage whose map is address arithmetic (heap memory, a memfd mapping
// kept for the storage's life) is mapped in one step under MapState's lock.
// The rules must be the same as on the published path.

namespace {

std::shared_ptr<FakeStorage> immediate_fake(std::size_t size, FakeMode mode = FakeMode::Counting) {
  auto s = FakeStorage::make(size, mode);
  s->immediate = true;
  return s;
}

} // namespace

TEST(MapStateImmediate, readers_share_one_backend_mapping_and_a_writer_excludes_them) {
  auto s = immediate_fake(8);
  Tensor t = wrap(s, {8});
  {
    auto a = t.map(CpuAccess::Read);
    auto b = t.map(CpuAccess::Read);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(s->maps, 1);
    EXPECT_EQ(s->map_state().readers(), 2u);
    EXPECT_EQ(s->map_state().phase(), MapState::Phase::Shared);
    auto w = t.map(CpuAccess::Write);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().kind(), ErrorKind::Mapped);
    a->unmap();
    EXPECT_EQ(s->unmaps, 0);
  }
  EXPECT_EQ(s->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
  {
    auto w = t.map(CpuAccess::ReadWrite);
    ASSERT_TRUE(w);
    EXPECT_EQ(s->map_state().phase(), MapState::Phase::Exclusive);
    EXPECT_FALSE(t.map(CpuAccess::Read));
  }
  EXPECT_EQ(s->maps, 2);
  EXPECT_EQ(s->unmaps, 2);
  EXPECT_EQ(s->violations, 0);
}

TEST(MapStateImmediate, the_backend_runs_without_a_published_mapping_phase) {
  auto s = immediate_fake(8);
  // Asked from another thread while the backend map runs: on the published
  // path that thread reads Mapping at once; in one step it waits for the lock
  // and reads the finished map.
  std::future<MapState::Phase> other;
  s->on_map = [&] {
    other = std::async(std::launch::async, [&] { return s->map_state().phase(); });
    EXPECT_EQ(other.wait_for(50ms), std::future_status::timeout) << "the map state was readable mid-map";
  };
  auto m = wrap(s, {8}).map(CpuAccess::Read);
  ASSERT_TRUE(m);
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(other.get(), MapState::Phase::Shared);
}

TEST(MapStateImmediate, backend_faults_are_handled_as_on_the_published_path) {
  auto null = immediate_fake(8, FakeMode::Null);
  auto m = wrap(null, {8}).map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(null->unmaps, 1); // PBO-MAP-08: released again
  EXPECT_FALSE(null->is_mapped());

  auto shortened = immediate_fake(32, FakeMode::Short);
  auto s = wrap(shortened, {32}).map(CpuAccess::Write);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(shortened->unmaps, 1); // PBO-MAP-07
  EXPECT_FALSE(shortened->is_mapped());

  auto failing = immediate_fake(8, FakeMode::Failing);
  auto f = wrap(failing, {8}).map(CpuAccess::Read);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ(failing->unmaps, 0); // PBO-MAP-06: nothing to undo
  EXPECT_FALSE(failing->is_mapped());
  for (auto *fake : {null.get(), shortened.get(), failing.get()})
    EXPECT_EQ(fake->violations, 0);
}

TEST(MapStateImmediate, a_recorded_write_sends_the_map_through_the_fence_wait) {
  auto s = immediate_fake(8);
  auto timeline = SoftwareTimeline::create("gpu");
  const auto v = timeline->issue();
  ASSERT_TRUE(s->record_write(timeline, v));
  auto busy = s->map(CpuAccess::Read, MapState::Wait::NoWait);
  ASSERT_FALSE(busy) << "an immediate map skipped the recorded GPU write";
  EXPECT_TRUE(busy.error().would_block());
  EXPECT_EQ(s->maps, 0);
  ASSERT_TRUE(timeline->signal(v));
  EXPECT_TRUE(s->map(CpuAccess::Read, MapState::Wait::NoWait));
}

TEST(MapStateImmediate, a_recorded_read_holds_back_a_writer_until_it_completes) {
  auto s = immediate_fake(8);
  auto timeline = SoftwareTimeline::create("inference");
  const auto v = timeline->issue();
  ASSERT_TRUE(s->record_read(timeline, v));
  EXPECT_TRUE(s->map(CpuAccess::Read, MapState::Wait::NoWait)); // readers never wait for readers
  auto busy = s->map(CpuAccess::Write, MapState::Wait::NoWait);
  ASSERT_FALSE(busy) << "an immediate map skipped the recorded read";
  EXPECT_TRUE(busy.error().would_block());
  ASSERT_TRUE(timeline->signal(v));
  EXPECT_TRUE(s->map(CpuAccess::Write, MapState::Wait::NoWait));
  // Once the read is known complete it is forgotten, and maps are one step again.
  auto pending = s->pending_reads();
  ASSERT_TRUE(pending);
  EXPECT_TRUE(pending->empty());
  std::future<MapState::Phase> other;
  s->on_map = [&] {
    other = std::async(std::launch::async, [&] { return s->map_state().phase(); });
    other.wait_for(20ms);
  };
  auto writer = s->map(CpuAccess::Write);
  EXPECT_TRUE(writer);
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(other.get(), MapState::Phase::Exclusive);
}

// retain(): one more holder of the map live now, whatever its access.

TEST(MapStateRetain, a_retained_writable_map_outlives_its_owner_release) {
  for (bool immediate : {false, true}) {
    auto s = FakeStorage::make(8);
    s->immediate = immediate;
    auto owner = s->acquire_map(CpuAccess::Write);
    ASSERT_TRUE(owner);
    auto pin = s->pin_live_map();
    ASSERT_TRUE(pin);
    EXPECT_EQ(pin->data(), *owner);
    EXPECT_EQ(pin->length(), 8u);
    s->release_map(); // the owner's release
    EXPECT_EQ(s->map_state().phase(), MapState::Phase::Exclusive) << "immediate=" << immediate;
    EXPECT_EQ(s->unmaps, 0);
    EXPECT_FALSE(s->map(CpuAccess::Read)) << "a reader got in while the retained writer's bytes were held";
    pin->unmap();
    EXPECT_FALSE(s->is_mapped());
    EXPECT_EQ(s->maps, 1);
    EXPECT_EQ(s->unmaps, 1);
    EXPECT_EQ(s->violations, 0);
  }
}

TEST(MapStateRetain, a_retained_read_map_counts_as_one_more_reader) {
  auto s = FakeStorage::make(8);
  auto reader = s->map(CpuAccess::Read);
  ASSERT_TRUE(reader);
  auto pin = s->pin_live_map();
  ASSERT_TRUE(pin);
  EXPECT_EQ(s->map_state().readers(), 2u);
  reader->unmap();
  EXPECT_TRUE(s->is_mapped());
  pin->unmap();
  EXPECT_FALSE(s->is_mapped());
  EXPECT_EQ(s->unmaps, 1);
}

TEST(MapStateRetain, nothing_to_retain_when_nothing_is_mapped) {
  auto s = FakeStorage::make(8);
  auto pin = s->pin_live_map();
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::Mapped);
  EXPECT_FALSE(s->is_mapped());
  EXPECT_EQ(s->maps, 0);
}
