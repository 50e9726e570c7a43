// SPDX-License-Identifier: Apache-2.0
// Stress: 8 threads x 20 000 random map/unmap operations on one storage. The
// fake backend checks that no two backend maps overlap and that every unmap
// has a map; the threads check that no writer ever coexists with a reader or
// another writer, and that readers always see a buffer a single writer filled.
#include "fake_storage.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using namespace tensormem;
using tmtest::FakeStorage;

namespace {
constexpr int kThreads = 8;
constexpr int kOpsPerThread = 20000;
constexpr std::size_t kSize = 256;
} // namespace

TEST(Concurrency, eight_threads_of_random_maps_keep_every_invariant) {
  auto s = FakeStorage::make(kSize);
  s->on_map = [] { std::this_thread::yield(); }; // widen the in-flight window
  Tensor t = std::move(Tensor::wrap(s, {kSize}, DType::U8)).value();

  std::atomic<int> readers{0}, writers{0}, broken{0}, torn{0};
  std::atomic<long> reads_ok{0}, writes_ok{0}, conflicts{0}, would_block{0}, other_errors{0};

  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    // On the heap rather than in a std::optional: GCC 12 inlines the
    // optional's destructor into this loop and reports the view's vector
    // members as maybe-uninitialized; a pointer's null check gives it no path
    // to a destroyed-but-unbuilt view.
    std::unique_ptr<HostView> held;
    bool held_writes = false;
    for (int op = 0; op < kOpsPerThread; ++op) {
      if (held) {
        if (held_writes) {
          // Fill with one value: a reader that ever sees two values saw a
          // writer at work beside it.
          std::memset(held->mutable_bytes().data(), static_cast<int>(rng() & 0xff), kSize);
          writers.fetch_sub(1);
        } else {
          readers.fetch_sub(1);
        }
        held.reset();
        continue;
      }
      const unsigned r = rng() % 8;
      const CpuAccess access = r < 4 ? CpuAccess::Read : (r < 7 ? CpuAccess::ReadWrite : CpuAccess::Write);
      auto m = (rng() % 4 == 0) ? t.try_map(access) : t.map(access);
      if (!m) {
        if (m.error().kind() == ErrorKind::Mapped)
          conflicts.fetch_add(1);
        else if (m.error().would_block())
          would_block.fetch_add(1);
        else
          other_errors.fetch_add(1);
        continue;
      }
      if (access_writes(access)) {
        if (writers.fetch_add(1) != 0 || readers.load() != 0)
          broken.fetch_add(1);
        writes_ok.fetch_add(1);
        held_writes = true;
      } else {
        readers.fetch_add(1);
        if (writers.load() != 0)
          broken.fetch_add(1);
        auto bytes = m->bytes();
        for (std::size_t i = 1; i < kSize; ++i)
          if (bytes[i] != bytes[0]) {
            torn.fetch_add(1);
            break;
          }
        reads_ok.fetch_add(1);
        held_writes = false;
      }
      held = std::make_unique<HostView>(std::move(m).value());
    }
    if (held) {
      (held_writes ? writers : readers).fetch_sub(1);
      held.reset();
    }
  };

  auto run = std::async(std::launch::async, [&] {
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back(worker, 1234u + static_cast<unsigned>(i));
    for (auto &th : threads)
      th.join();
  });
  if (run.wait_for(std::chrono::minutes(5)) != std::future_status::ready) {
    std::fprintf(stderr, "deadlock: the stress threads did not finish within 5 minutes\n");
    std::_Exit(1);
  }

  std::printf("reads %ld, writes %ld, conflicts %ld, would-block %ld, backend maps %d\n", reads_ok.load(),
              writes_ok.load(), conflicts.load(), would_block.load(), s->maps.load());
  EXPECT_EQ(broken, 0) << "a writer coexisted with another map";
  EXPECT_EQ(torn, 0) << "a reader saw a half-written buffer";
  EXPECT_EQ(s->violations, 0) << "the backend saw overlapping maps or an unmatched unmap";
  EXPECT_EQ(other_errors, 0);
  EXPECT_EQ(s->maps.load(), s->unmaps.load());
  EXPECT_FALSE(t.is_mapped());
  EXPECT_GT(reads_ok, 0);
  EXPECT_GT(writes_ok, 0);
  EXPECT_GT(conflicts, 0);
}
