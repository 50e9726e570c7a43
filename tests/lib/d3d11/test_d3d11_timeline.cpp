// SPDX-License-Identifier: Apache-2.0
// The process D3D11 fence as a Timeline: values from either the timeline or
// the context count as issued, a value above them is refused (HAZ-23), and
// CPU waits are bounded. A signal queued behind an unsatisfied GPU wait
// gives an issued but not yet reached value.

#include <tensormem/d3d11_timeline.hpp>
#include <tensormem/internal/d3d11_software_device.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>

using namespace tensormem;

namespace {

struct Rig {
  std::shared_ptr<SoftwareD3d11Device> device;
  std::shared_ptr<D3d11Context> context;
  std::shared_ptr<D3d11FenceTimeline> timeline;
};

Rig rig() {
  Rig r;
  r.device = *SoftwareD3d11Device::create();
  r.context = *D3d11Context::create(r.device);
  auto t = D3d11FenceTimeline::create(r.context, "process fence");
  EXPECT_TRUE(t) << t.error().message();
  r.timeline = *t;
  return r;
}

TEST(D3d11FenceTimeline, values_from_the_timeline_and_the_context_are_one_sequence) {
  Rig r = rig();
  EXPECT_EQ(r.timeline->kind(), TimelineKind::D3d11Fence);
  EXPECT_STREQ(timeline_kind_name(r.timeline->kind()), "d3d11");
  auto a = r.timeline->issue();
  auto b = r.context->signal();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b, *a + 1);
  EXPECT_EQ(r.timeline->last_issued(), *b) << "a value the context signalled directly is not known as issued";
  EXPECT_TRUE(*r.timeline->signalled(*b));
  EXPECT_TRUE(r.timeline->wait_cpu(*b, std::chrono::seconds(5)));
}

TEST(D3d11FenceTimeline, HAZ_23_a_value_never_signalled_is_refused_before_any_wait) {
  Rig r = rig();
  ASSERT_TRUE(r.timeline->issue());
  const auto start = std::chrono::steady_clock::now();
  auto w = r.timeline->wait_cpu(r.timeline->last_issued() + 1000000, std::chrono::seconds(5));
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind(), ErrorKind::InvalidArgument) << w.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

/// A producer on a second device owns a gate fence; `r`'s device waits on
/// it on the GPU, so a value issued after that is not reached until open().
struct Gate {
  std::shared_ptr<SoftwareD3d11Device> producer = *SoftwareD3d11Device::create();
  std::shared_ptr<D3d11Fence> fence;

  explicit Gate(Rig &r) {
    auto made = producer->create_fence(0, true);
    EXPECT_TRUE(made);
    fence = *made;
    auto handle = fence->create_shared_handle();
    EXPECT_TRUE(handle);
    auto opened = r.device->open_shared_fence(handle->value());
    EXPECT_TRUE(opened);
    EXPECT_TRUE(r.device->wait_gpu(**opened, 1));
  }
  void open(Rig &r) {
    EXPECT_TRUE(producer->signal(*fence, 1));
    producer->flush();
    r.device->flush();
  }
};

TEST(D3d11FenceTimeline, a_signal_behind_a_gpu_wait_is_issued_but_not_reached_until_the_wait_clears) {
  Rig r = rig();
  Gate gate(r);
  auto v = r.timeline->issue();
  ASSERT_TRUE(v);
  EXPECT_FALSE(*r.timeline->signalled(*v)) << "a signal behind an unsatisfied GPU wait completed";
  auto w = r.timeline->wait_cpu(*v, std::chrono::milliseconds(50));
  ASSERT_FALSE(w);
  EXPECT_TRUE(w.error().would_block()) << w.error().message();
  EXPECT_NE(w.error().message().find("d3d11 timeline 'process fence'"), std::string::npos) << w.error().message();
  gate.open(r);
  EXPECT_TRUE(*r.timeline->signalled(*v));
}

// Issue 28: a CPU wait on a D3D11 value that is never reached ends when its
// caller cancels it (a flush, a state change), long before its own bound.
TEST(D3d11FenceTimeline, a_wait_on_a_value_never_reached_ends_cancelled_when_cancelled) {
  Rig r = rig();
  Gate gate(r);
  auto v = r.timeline->issue();
  ASSERT_TRUE(v);
  CancelFlag cancel;
  auto waiter = std::async(std::launch::async, [&] { return r.timeline->wait_cpu(*v, std::chrono::hours(1), &cancel); });
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(30)), std::future_status::timeout);
  cancel.cancel();
  auto w = waiter.get();
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind(), ErrorKind::Cancelled) << w.error().message();
  EXPECT_NE(w.error().message().find("d3d11 timeline 'process fence'"), std::string::npos) << w.error().message();
  gate.open(r); // let the device's queue drain before it goes
}

TEST(D3d11FenceTimeline, a_context_without_a_fence_has_no_timeline) {
  SoftwareD3d11Device::Options o;
  o.capabilities.device5 = false;
  auto ctx = D3d11Context::create(*SoftwareD3d11Device::create(o));
  ASSERT_TRUE(ctx);
  auto t = D3d11FenceTimeline::create(*ctx, "none");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidOperation);
}

} // namespace
