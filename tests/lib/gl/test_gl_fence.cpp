// SPDX-License-Identifier: Apache-2.0
// EGL fences as a timeline against real GL (Mesa llvmpipe headless here):
// the GL worker fences its GPU-side writes and records them on the storage,
// CPU maps order themselves behind them, and the unreachable-value rule
// (HAZ-23) holds for the EGL kind too. Skips, with the reason, only when no
// EGL context or no EGL_KHR_fence_sync is available.
#include "gl_worker_fixture.hpp"
#include "texture_round_trip.hpp"

#include <tensormem/gl_worker.hpp>
#include <tensormem/pbo_storage.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <span>
#include <vector>

using namespace tensormem;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kWidth = 64;
constexpr std::uint32_t kHeight = 32;
constexpr std::size_t kBytes = std::size_t{kWidth} * kHeight * 4;

class GlFenceTest : public tmtest::GlWorkerTest {
protected:
  void SetUp() override {
    GlWorkerTest::SetUp();
    if (IsSkipped())
      return;
    if (!worker->info().fence_sync)
      GTEST_SKIP() << "EGL_KHR_fence_sync is not offered by " << worker->info().renderer;
    timeline = worker->timeline();
  }

  Tensor make_pbo(PboUsage usage) { return GlWorkerTest::make_pbo(kBytes, Shape{kHeight, kWidth, 4}, usage); }

  std::shared_ptr<EglTimeline> timeline;
};

} // namespace

TEST_F(GlFenceTest, a_fence_after_a_gl_upload_is_signalled_by_the_time_the_cpu_map_runs) {
  Tensor src = make_pbo(PboUsage::Upload);
  Tensor dst = make_pbo(PboUsage::Download);
  {
    auto pin = src.map(CpuAccess::Write);
    ASSERT_TRUE(pin) << pin.error().message();
    std::span<std::byte> bytes = pin->mutable_bytes();
    for (std::size_t i = 0; i < kBytes; ++i)
      bytes[i] = static_cast<std::byte>(i * 7 + 3);
  }
  ASSERT_TRUE(dst.storage()->gpu_completion().empty());
  ASSERT_TRUE(tmtest::copy_through_texture(*worker, src, dst, kWidth, kHeight));

  // The write into dst is recorded on the worker's EGL timeline.
  const std::vector<GpuCompletion> writes = dst.storage()->gpu_completion();
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].timeline, timeline);
  EXPECT_EQ(writes[0].timeline->kind(), TimelineKind::EglSync);
  EXPECT_EQ(writes[0].value, timeline->last_issued());
  EXPECT_GE(writes[0].value, 1u);
  EXPECT_TRUE(src.storage()->gpu_completion().empty()) << "only the written buffer records the write";

  auto pin = dst.map(CpuAccess::Read);
  ASSERT_TRUE(pin) << pin.error().message();
  auto reached = timeline->signalled(writes[0].value);
  ASSERT_TRUE(reached) << reached.error().message();
  EXPECT_TRUE(*reached) << "the map ran before the fence of the write signalled";
  for (std::size_t i = 0; i < kBytes; ++i)
    ASSERT_EQ(pin->data()[i], static_cast<std::byte>(i * 7 + 3)) << "byte " << i;
}

TEST_F(GlFenceTest, each_fenced_write_issues_the_next_value_and_record_write_keeps_the_newest) {
  Tensor dst = make_pbo(PboUsage::Download);
  auto first = worker->fence_write(*dst.storage());
  auto second = worker->fence_write(*dst.storage());
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(*second, *first + 1);
  ASSERT_TRUE(dst.storage()->record_write(timeline, *first));
  EXPECT_EQ(dst.storage()->gpu_completion().at(0).value, *second);
  EXPECT_TRUE(timeline->wait_cpu(*second, 60s));
  EXPECT_TRUE(*timeline->signalled(*first));
}

TEST_F(GlFenceTest, an_unissued_egl_value_is_refused_at_record_and_wait_time_HAZ_23) {
  Tensor dst = make_pbo(PboUsage::Download);
  auto issued = worker->fence_write(*dst.storage());
  ASSERT_TRUE(issued) << issued.error().message();
  const std::uint64_t never = timeline->last_issued() + 1;

  Result<void> recorded = dst.storage()->record_write(timeline, never);
  ASSERT_FALSE(recorded);
  EXPECT_EQ(recorded.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_NE(recorded.error().message().find("egl timeline"), std::string::npos) << recorded.error().message();
  EXPECT_EQ(dst.storage()->gpu_completion().at(0).value, *issued);

  EXPECT_EQ(timeline->wait_cpu(never, 60s).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(timeline->wait_gpu(never, *worker).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(timeline->signalled(never).error().kind(), ErrorKind::InvalidArgument);
}

TEST_F(GlFenceTest, wait_gpu_queues_an_egl_wait_and_other_kinds_say_to_wait_on_the_cpu) {
  Tensor dst = make_pbo(PboUsage::Download);
  auto issued = worker->fence_write(*dst.storage());
  ASSERT_TRUE(issued) << issued.error().message();
  Result<void> gpu = timeline->wait_gpu(*issued, *worker);
  EXPECT_TRUE(gpu) << gpu.error().message();
  EXPECT_TRUE(timeline->wait_gpu(0, *worker));

  auto cpu = SoftwareTimeline::create("cpu");
  Result<void> refused = cpu->wait_gpu(cpu->issue(), *worker);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(refused.error().message().find("wait on the CPU"), std::string::npos) << refused.error().message();
}

TEST_F(GlFenceTest, a_copy_between_tensors_that_are_not_pbos_is_refused_before_any_gl_work) {
  auto heap = MemStorage::allocate(kBytes);
  ASSERT_TRUE(heap);
  auto mem = Tensor::wrap(*heap, Shape{kHeight, kWidth, 4}, DType::U8);
  ASSERT_TRUE(mem);
  Tensor dst = make_pbo(PboUsage::Download);
  const std::uint64_t before = timeline->last_issued();
  EXPECT_EQ(tmtest::copy_through_texture(*worker, *mem, dst, kWidth, kHeight).error().kind(),
            ErrorKind::InvalidArgument);
  EXPECT_EQ(timeline->last_issued(), before);
  EXPECT_TRUE(dst.storage()->gpu_completion().empty());
}
