// SPDX-License-Identifier: Apache-2.0
// The real Direct3D 11 device under Wine (or Windows): what the storage
// relies on. What Wine lacks (ID3D11Device5 fences, shared NT handles,
// OpenSharedResource1) prints why and skips; tests/expected-skips.txt lists
// those reasons ("not offered by this D3D11 runtime").
#include <tensormem/d3d11_device.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace tensormem;

namespace {

std::shared_ptr<D3d11Device> device_or_fail() {
  auto device = create_windows_d3d11_device(D3d11DriverType::Hardware);
  EXPECT_TRUE(device) << (device ? "" : device.error().message());
  return device ? *device : nullptr;
}

D3d11TextureDesc rgba(std::uint32_t w, std::uint32_t h) {
  D3d11TextureDesc d;
  d.width = w;
  d.height = h;
  d.format = DxgiFormat::R8G8B8A8_Unorm;
  return d;
}

/// The storage's texture (D3D-CONST-01).
D3d11TextureDesc storage_desc(std::uint32_t w, std::uint32_t h) {
  D3d11TextureDesc d = rgba(w, h);
  d.bind_flags = d3d11::kBindRenderTarget | d3d11::kBindShaderResource;
  d.misc_flags = d3d11::kMiscShared | d3d11::kMiscSharedNtHandle;
  return d;
}

D3d11TextureDesc staging(std::uint32_t w, std::uint32_t h) {
  D3d11TextureDesc d = rgba(w, h);
  d.usage = d3d11::kUsageStaging;
  d.cpu_access_flags = d3d11::kCpuAccessRead | d3d11::kCpuAccessWrite;
  return d;
}

} // namespace

TEST(WinD3d11Device, creates_a_device_and_reports_what_it_found) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  const std::string name = dev->name();
  EXPECT_TRUE(name == "hardware" || name == "warp") << name;
  const auto caps = dev->capabilities();
  std::printf("driver %s; device1 %d device5 %d context4 %d shared_fence %d shared_nt_handles %d; LUID %08x:%08x\n",
              dev->name(), caps.device1, caps.device5, caps.context4, caps.shared_fence, caps.shared_nt_handles,
              dev->adapter().high, dev->adapter().low);
  EXPECT_NE(dev->identity(), nullptr);
  auto warp = create_windows_d3d11_device(D3d11DriverType::Warp);
  if (warp) {
    EXPECT_STREQ((*warp)->name(), "warp");
  } else {
    std::printf("WARP alone: %s\n", warp.error().message().c_str());
  }
}

// D3D-CONST-01: the storage's texture: render target + shader resource,
// shared through an NT handle.
TEST(WinD3d11Device, D3D_CONST_01_the_storage_texture_flags_are_accepted) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  // Wine 8 accepts these flags; a runtime that refused them would leave the
  // storage without its texture, so that is a failure, not a skip.
  auto tex = dev->create_texture(storage_desc(64, 16));
  ASSERT_TRUE(tex) << "the storage's SHARED|SHARED_NTHANDLE texture was refused: " << tex.error().message();
  EXPECT_EQ((*tex)->desc().misc_flags & d3d11::kMiscSharedNtHandle, d3d11::kMiscSharedNtHandle);
  EXPECT_EQ((*tex)->device_identity(), dev->identity());
  EXPECT_NE((*tex)->address(), 0u);
}

TEST(WinD3d11Device, a_staging_texture_maps_with_a_row_pitch_covering_the_row) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  auto tex = dev->create_texture(staging(33, 7));
  ASSERT_TRUE(tex) << tex.error().message();
  auto m = dev->map(**tex, D3d11MapType::ReadWrite, false);
  ASSERT_TRUE(m) << m.error().message();
  std::printf("row pitch for 33 RGBA8 texels: %u\n", m->row_pitch);
  EXPECT_GE(m->row_pitch, 33u * 4u);
  EXPECT_NE(m->data, nullptr);
  dev->unmap(**tex);
}

TEST(WinD3d11Device, update_then_copy_then_map_round_trips_the_bytes) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  const std::uint32_t w = 16, h = 4, row = w * 4;
  auto gpu = dev->create_texture(rgba(w, h));
  auto cpu = dev->create_texture(staging(w, h));
  ASSERT_TRUE(gpu && cpu);
  std::vector<std::byte> src(row * h);
  for (std::size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<std::byte>(i * 7 + 3);
  }
  ASSERT_TRUE(dev->update_subresource(**gpu, src.data(), row));
  ASSERT_TRUE(dev->copy_resource(**cpu, **gpu));
  dev->flush();
  auto m = dev->map(**cpu, D3d11MapType::Read, false);
  ASSERT_TRUE(m) << m.error().message();
  for (std::uint32_t y = 0; y < h; ++y) {
    EXPECT_EQ(std::memcmp(m->data + std::size_t{y} * m->row_pitch, src.data() + std::size_t{y} * row, row), 0)
        << "row " << y;
  }
  dev->unmap(**cpu);
}

TEST(WinD3d11Device, do_not_wait_answers_would_block_or_the_data) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  auto gpu = dev->create_texture(rgba(256, 256));
  auto cpu = dev->create_texture(staging(256, 256));
  ASSERT_TRUE(gpu && cpu);
  ASSERT_TRUE(dev->copy_resource(**cpu, **gpu));
  auto m = dev->map(**cpu, D3d11MapType::Read, true);
  if (m) {
    std::printf("DO_NOT_WAIT mapped at once (the copy had finished)\n");
    dev->unmap(**cpu);
  } else {
    EXPECT_EQ(m.error().kind(), ErrorKind::WouldBlock) << m.error().message();
    std::printf("DO_NOT_WAIT: %s\n", m.error().message().c_str());
  }
  dev->flush();
  auto blocking = dev->map(**cpu, D3d11MapType::Read, false);
  ASSERT_TRUE(blocking) << blocking.error().message();
  dev->unmap(**cpu);
}

TEST(WinD3d11Device, failures_name_the_call_and_the_hresult) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  D3d11TextureDesc bad = rgba(0, 0);
  auto tex = dev->create_texture(bad);
  ASSERT_FALSE(tex);
  EXPECT_NE(tex.error().message().find("CreateTexture2D"), std::string::npos) << tex.error().message();
  EXPECT_NE(tex.error().message().find("HRESULT 0x"), std::string::npos) << tex.error().message();
  // A default-usage texture cannot be mapped.
  auto gpu = dev->create_texture(rgba(4, 4));
  ASSERT_TRUE(gpu);
  auto m = dev->map(**gpu, D3d11MapType::Read, false);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("Map"), std::string::npos) << m.error().message();
}

TEST(WinD3d11Device, a_texture_without_shared_nthandle_has_no_shared_handle) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  auto tex = dev->create_texture(rgba(4, 4));
  ASSERT_TRUE(tex);
  auto h = dev->create_shared_handle(**tex);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::InvalidArgument);
}

TEST(WinD3d11Device, a_shared_texture_opens_on_the_device_with_its_identity) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  auto tex = dev->create_texture(storage_desc(8, 8));
  ASSERT_TRUE(tex) << tex.error().message();
  auto h = dev->create_shared_handle(**tex);
  if (!h) {
    GTEST_SKIP() << "shared NT handles not offered by this D3D11 runtime: " << h.error().message();
  }
  if (!dev->capabilities().device1) {
    GTEST_SKIP() << "OpenSharedResource1 not offered by this D3D11 runtime (no ID3D11Device1)";
  }
  auto opened = dev->open_shared_texture(h->value());
  if (!opened) {
    GTEST_SKIP() << "OpenSharedResource1 not offered by this D3D11 runtime: " << opened.error().message();
  }
  EXPECT_EQ((*opened)->device_identity(), dev->identity());
  EXPECT_EQ((*opened)->desc().width, 8u);
}

TEST(WinD3d11Device, fences_signal_and_a_cpu_wait_is_bounded) {
  auto dev = device_or_fail();
  ASSERT_TRUE(dev);
  if (!dev->capabilities().device5 || !dev->capabilities().context4) {
    GTEST_SKIP() << "ID3D11Device5 fences not offered by this D3D11 runtime";
  }
  auto fence = dev->create_fence(0, false);
  ASSERT_TRUE(fence) << fence.error().message();
  auto early = (*fence)->wait_cpu(1, std::chrono::milliseconds(20));
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().kind(), ErrorKind::WouldBlock);
  ASSERT_TRUE(dev->signal(**fence, 1));
  dev->flush();
  EXPECT_TRUE((*fence)->wait_cpu(1, std::chrono::milliseconds(5000)));
  EXPECT_GE((*fence)->completed_value(), 1u);
  EXPECT_FALSE((*fence)->create_shared_handle());
}
