// SPDX-License-Identifier: Apache-2.0
// Port conformance: what every D3d11Device must do, asserted only where the
// real D3D11 guarantees it, so the same source runs against the software
// device here and the COM device under Wine. A case that needs a capability
// the device lacks (shared handles, fences) skips and says which.

#include "d3d11_test_device.hpp"

#include <tensormem/d3d11_device.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace tensormem;

namespace {

constexpr std::uint32_t kW = 64, kH = 32;

D3d11TextureDesc rgba_desc(bool shared) {
  D3d11TextureDesc d;
  d.width = kW;
  d.height = kH;
  d.format = DxgiFormat::R8G8B8A8_Unorm;
  d.usage = d3d11::kUsageDefault;
  d.bind_flags = d3d11::kBindShaderResource | d3d11::kBindRenderTarget;
  d.misc_flags = shared ? (d3d11::kMiscShared | d3d11::kMiscSharedNtHandle) : 0;
  return d;
}

D3d11TextureDesc staging_desc() {
  D3d11TextureDesc d = rgba_desc(false);
  d.usage = d3d11::kUsageStaging;
  d.bind_flags = 0;
  d.cpu_access_flags = d3d11::kCpuAccessRead | d3d11::kCpuAccessWrite;
  return d;
}

/// Rows of kW*4 bytes, byte (y, x) = (7y + x + seed) mod 256.
std::vector<std::byte> pattern(int seed) {
  std::vector<std::byte> rows(kW * 4 * kH);
  for (std::uint32_t y = 0; y < kH; ++y)
    for (std::uint32_t x = 0; x < kW * 4; ++x)
      rows[y * kW * 4 + x] = static_cast<std::byte>((7 * y + x + seed) & 0xff);
  return rows;
}

class D3d11Port : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    device = d3d11test::make_device(&why);
    if (!device)
      GTEST_SKIP() << "no D3D11 device here: " << why;
  }

  std::shared_ptr<D3d11Texture> make(const D3d11TextureDesc &desc) {
    auto t = device->create_texture(desc);
    EXPECT_TRUE(t) << t.error().message();
    return t ? *t : nullptr;
  }

  /// Copies `texture` into a new staging texture, maps it and checks every
  /// row's logical bytes against `want` (row padding is not compared).
  void expect_contents(D3d11Device &dev, D3d11Texture &texture, const std::vector<std::byte> &want) {
    auto staging = dev.create_texture(staging_desc());
    ASSERT_TRUE(staging) << staging.error().message();
    ASSERT_TRUE(dev.copy_resource(**staging, texture));
    dev.flush();
    auto mapped = dev.map(**staging, D3d11MapType::Read, false);
    ASSERT_TRUE(mapped) << mapped.error().message();
    ASSERT_GE(mapped->row_pitch, kW * 4);
    for (std::uint32_t y = 0; y < kH; ++y)
      ASSERT_EQ(std::memcmp(mapped->data + y * mapped->row_pitch, want.data() + y * kW * 4, kW * 4), 0) << "row " << y;
    dev.unmap(**staging);
  }

  std::shared_ptr<D3d11Device> device;
};

TEST_F(D3d11Port, D3D_CONST_01_a_shared_render_target_keeps_its_description) {
  auto t = make(rgba_desc(true));
  ASSERT_TRUE(t);
  const D3d11TextureDesc d = t->desc();
  EXPECT_EQ(d.width, kW);
  EXPECT_EQ(d.height, kH);
  EXPECT_EQ(d.format, DxgiFormat::R8G8B8A8_Unorm);
  EXPECT_EQ(d.bind_flags, d3d11::kBindShaderResource | d3d11::kBindRenderTarget);
  EXPECT_EQ(d.usage, d3d11::kUsageDefault);
  EXPECT_EQ(t->device_identity(), device->identity());
  EXPECT_NE(t->address(), 0u);
}

TEST_F(D3d11Port, a_staging_map_reports_a_pitch_that_holds_a_row) {
  auto s = make(staging_desc());
  ASSERT_TRUE(s);
  auto mapped = device->map(*s, D3d11MapType::Read, false);
  ASSERT_TRUE(mapped) << mapped.error().message();
  EXPECT_GE(mapped->row_pitch, kW * 4);
  EXPECT_NE(mapped->data, nullptr);
  device->unmap(*s);
}

TEST_F(D3d11Port, an_upload_reaches_the_cpu_through_a_staging_copy) {
  auto t = make(rgba_desc(false));
  ASSERT_TRUE(t);
  const auto rows = pattern(3);
  ASSERT_TRUE(device->update_subresource(*t, rows.data(), kW * 4));
  expect_contents(*device, *t, rows);
}

TEST_F(D3d11Port, a_cpu_write_into_staging_reaches_the_texture) {
  auto s = make(staging_desc());
  auto t = make(rgba_desc(false));
  ASSERT_TRUE(s && t);
  const auto rows = pattern(11);
  auto mapped = device->map(*s, D3d11MapType::ReadWrite, false);
  ASSERT_TRUE(mapped) << mapped.error().message();
  for (std::uint32_t y = 0; y < kH; ++y)
    std::memcpy(mapped->data + y * mapped->row_pitch, rows.data() + y * kW * 4, kW * 4);
  device->unmap(*s);
  ASSERT_TRUE(device->copy_resource(*t, *s));
  expect_contents(*device, *t, rows);
}

TEST_F(D3d11Port, a_do_not_wait_map_succeeds_once_the_copy_is_done) {
  auto t = make(rgba_desc(false));
  auto s = make(staging_desc());
  ASSERT_TRUE(s && t);
  const auto rows = pattern(5);
  ASSERT_TRUE(device->update_subresource(*t, rows.data(), kW * 4));
  ASSERT_TRUE(device->copy_resource(*s, *t));
  device->flush();
  // A wall-clock deadline, yielding between polls (D3D-TRY-03's rule).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  Result<D3d11Mapped> mapped = Error::would_block("not tried");
  while (std::chrono::steady_clock::now() < deadline) {
    mapped = device->map(*s, D3d11MapType::Read, true);
    if (mapped || !mapped.error().would_block())
      break;
    std::this_thread::yield();
  }
  ASSERT_TRUE(mapped) << mapped.error().message();
  EXPECT_EQ(std::memcmp(mapped->data, rows.data(), kW * 4), 0);
  device->unmap(*s);
}

TEST_F(D3d11Port, a_texture_without_the_nt_handle_flag_has_no_shared_handle) {
  auto t = make(rgba_desc(false));
  ASSERT_TRUE(t);
  auto h = device->create_shared_handle(*t);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::InvalidArgument) << h.error().message();
}

// What the storage decides its textures' sharing by: a device that reports
// shared NT handles gives one for a SHARED_NTHANDLE texture, and one that
// does not (Wine 8) gives none, whether or not it accepts the flag.
TEST_F(D3d11Port, the_shared_nt_handle_capability_says_whether_a_texture_gives_a_handle) {
  auto t = device->create_texture(rgba_desc(true));
  if (device->capabilities().shared_nt_handles) {
    ASSERT_TRUE(t) << t.error().message();
    auto h = device->create_shared_handle(**t);
    EXPECT_TRUE(h) << h.error().message();
  } else if (t) {
    auto h = device->create_shared_handle(**t);
    ASSERT_FALSE(h) << "the device reports no shared NT handles but gave one";
    EXPECT_EQ(h.error().kind(), ErrorKind::NotImplemented) << h.error().message();
  }
}

TEST_F(D3d11Port, a_shared_handle_opens_the_same_texture) {
  if (!device->capabilities().device1)
    GTEST_SKIP() << "the device has no ID3D11Device1 (OpenSharedResource1)";
  auto t = make(rgba_desc(true));
  ASSERT_TRUE(t);
  auto h = device->create_shared_handle(*t);
  if (!h)
    GTEST_SKIP() << "no shared NT handles on this device: " << h.error().message();
  const auto rows = pattern(9);
  ASSERT_TRUE(device->update_subresource(*t, rows.data(), kW * 4));
  device->flush();
  auto opened = device->open_shared_texture(h->value());
  ASSERT_TRUE(opened) << opened.error().message();
  EXPECT_EQ((*opened)->desc().width, kW);
  expect_contents(*device, **opened, rows);
  auto dup = h->duplicate();
  ASSERT_TRUE(dup) << dup.error().message();
  EXPECT_NE(dup->value(), h->value());
}

TEST_F(D3d11Port, a_signalled_fence_value_completes_and_a_later_one_times_out) {
  if (!device->capabilities().device5 || !device->capabilities().context4)
    GTEST_SKIP() << "the device has no fences (ID3D11Device5 / ID3D11DeviceContext4)";
  auto fence = device->create_fence(0, false);
  ASSERT_TRUE(fence) << fence.error().message();
  ASSERT_TRUE(device->signal(**fence, 3));
  device->flush();
  ASSERT_TRUE((*fence)->wait_cpu(3, std::chrono::milliseconds(5000)));
  EXPECT_GE((*fence)->completed_value(), 3u);
  const auto start = std::chrono::steady_clock::now();
  auto late = (*fence)->wait_cpu(4, std::chrono::milliseconds(50));
  ASSERT_FALSE(late);
  EXPECT_TRUE(late.error().would_block()) << late.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(D3d11Port, D3D_FENCE_01_the_process_context_counts_its_signals) {
  auto ctx = D3d11Context::create(device);
  ASSERT_TRUE(ctx) << ctx.error().message();
  if (!(*ctx)->fence())
    GTEST_SKIP() << "the device has no fences";
  auto a = (*ctx)->signal();
  auto b = (*ctx)->signal();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b, *a + 1);
  EXPECT_EQ((*ctx)->last_signalled(), *b);
  ASSERT_TRUE((*ctx)->fence()->wait_cpu(*b, std::chrono::milliseconds(5000)));
}

} // namespace
