// SPDX-License-Identifier: Apache-2.0
// What the reference device models beyond the port's contract, so that the
// storage's ordering tests can fail: stale reads without a flush, "still
// drawing" polls, copies into mapped textures, GPU waits that hold the queue,
// a second device, handle reuse, capability switches and the process
// context.

#include <tensormem/internal/d3d11_software_device.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tensormem;

namespace {

constexpr std::uint32_t kW = 16, kH = 8;

D3d11TextureDesc desc_of(bool staging, bool shared = false) {
  D3d11TextureDesc d;
  d.width = kW;
  d.height = kH;
  d.format = DxgiFormat::R8G8B8A8_Unorm;
  if (staging) {
    d.usage = d3d11::kUsageStaging;
    d.cpu_access_flags = d3d11::kCpuAccessRead | d3d11::kCpuAccessWrite;
  } else {
    d.bind_flags = d3d11::kBindShaderResource | d3d11::kBindRenderTarget;
    d.misc_flags = shared ? (d3d11::kMiscShared | d3d11::kMiscSharedNtHandle) : 0;
  }
  return d;
}

std::shared_ptr<SoftwareD3d11Device> device(SoftwareD3d11Device::Options options = {}) {
  auto d = SoftwareD3d11Device::create(options);
  EXPECT_TRUE(d) << d.error().message();
  return d ? *d : nullptr;
}

std::shared_ptr<D3d11Texture> texture(D3d11Device &dev, const D3d11TextureDesc &desc) {
  auto t = dev.create_texture(desc);
  EXPECT_TRUE(t) << t.error().message();
  return t ? *t : nullptr;
}

/// Uploads rows filled with `byte` into `t`.
void fill(D3d11Device &dev, D3d11Texture &t, std::uint8_t byte) {
  std::vector<std::byte> rows(kW * 4 * kH, static_cast<std::byte>(byte));
  ASSERT_TRUE(dev.update_subresource(t, rows.data(), kW * 4));
}

/// The first byte of `t` as the CPU sees it through a staging copy.
int first_byte(D3d11Device &dev, D3d11Texture &t) {
  auto s = dev.create_texture(desc_of(true));
  if (!s || !dev.copy_resource(**s, t))
    return -1;
  auto m = dev.map(**s, D3d11MapType::Read, false);
  if (!m)
    return -2;
  const int b = std::to_integer<int>(m->data[0]);
  dev.unmap(**s);
  return b;
}

TEST(SoftwareD3d11, staging_rows_are_padded_to_the_pitch_alignment) {
  for (std::uint32_t align : {1u, 64u, 256u}) {
    SoftwareD3d11Device::Options o;
    o.pitch_alignment = align;
    auto dev = device(o);
    auto s = texture(*dev, desc_of(true));
    auto m = dev->map(*s, D3d11MapType::Read, false);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->row_pitch, (kW * 4 + align - 1) / align * align) << align;
    dev->unmap(*s);
  }
  SoftwareD3d11Device::Options bad;
  bad.pitch_alignment = 48;
  EXPECT_FALSE(SoftwareD3d11Device::create(bad));
}

TEST(SoftwareD3d11, descriptions_d3d11_refuses_are_refused) {
  auto dev = device();
  D3d11TextureDesc d = desc_of(true);
  d.bind_flags = d3d11::kBindShaderResource;
  EXPECT_FALSE(dev->create_texture(d)) << "a bound staging texture";
  d = desc_of(false);
  d.cpu_access_flags = d3d11::kCpuAccessRead;
  EXPECT_FALSE(dev->create_texture(d)) << "CPU access on a default texture";
  d = desc_of(false);
  d.misc_flags = d3d11::kMiscSharedNtHandle;
  EXPECT_FALSE(dev->create_texture(d)) << "NT handle without MISC_SHARED";
  d = desc_of(false);
  d.format = DxgiFormat::Unknown;
  EXPECT_FALSE(dev->create_texture(d));
  d = desc_of(false);
  d.mip_levels = 2;
  EXPECT_FALSE(dev->create_texture(d));
}

TEST(SoftwareD3d11, work_runs_only_when_submitted_so_another_device_reads_stale_bytes) {
  auto producer = device();
  auto consumer = device();
  auto t = texture(*producer, desc_of(false, true));
  auto h = producer->create_shared_handle(*t);
  ASSERT_TRUE(h);
  auto opened = consumer->open_shared_texture(h->value());
  ASSERT_TRUE(opened);
  fill(*producer, *t, 0x5A);
  EXPECT_EQ(producer->pending_commands(), 1u);
  EXPECT_EQ(first_byte(*consumer, **opened), 0) << "the consumer saw work its producer never submitted";
  producer->flush();
  EXPECT_EQ(producer->pending_commands(), 0u);
  EXPECT_EQ(first_byte(*consumer, **opened), 0x5A);
}

TEST(SoftwareD3d11, do_not_wait_maps_are_still_drawing_until_the_copy_is_submitted_and_done) {
  SoftwareD3d11Device::Options o;
  o.still_drawing_polls = 2;
  auto dev = device(o);
  auto t = texture(*dev, desc_of(false));
  auto s = texture(*dev, desc_of(true));
  fill(*dev, *t, 0x6B);
  ASSERT_TRUE(dev->copy_resource(*s, *t));
  for (int i = 0; i < 3; ++i) {
    auto m = dev->map(*s, D3d11MapType::Read, true);
    ASSERT_FALSE(m);
    EXPECT_TRUE(m.error().would_block());
  }
  EXPECT_EQ(dev->copies_run(), 0u) << "an unsubmitted copy ran";
  dev->flush();
  EXPECT_EQ(dev->copies_run(), 1u);
  EXPECT_FALSE(dev->map(*s, D3d11MapType::Read, true));
  EXPECT_FALSE(dev->map(*s, D3d11MapType::Read, true));
  auto m = dev->map(*s, D3d11MapType::Read, true);
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(std::to_integer<int>(m->data[0]), 0x6B);
  dev->unmap(*s);
  EXPECT_EQ(dev->copies_run(), 1u) << "polling ran the copy again";
}

TEST(SoftwareD3d11, HAZ_19_a_copy_into_a_mapped_staging_texture_is_refused_and_counted) {
  auto dev = device();
  auto t = texture(*dev, desc_of(false));
  auto s = texture(*dev, desc_of(true));
  auto m = dev->map(*s, D3d11MapType::Read, false);
  ASSERT_TRUE(m);
  auto second = dev->map(*s, D3d11MapType::Read, false);
  EXPECT_FALSE(second) << "a second Map of a mapped subresource";
  auto copied = dev->copy_resource(*s, *t);
  ASSERT_FALSE(copied);
  EXPECT_EQ(copied.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ(dev->violations(), 1u);
  dev->unmap(*s);
  EXPECT_TRUE(dev->copy_resource(*s, *t));
}

TEST(SoftwareD3d11, a_gpu_wait_holds_the_queue_until_another_device_signals) {
  auto consumer = device();
  auto producer = device();
  auto fence = producer->create_fence(0, true);
  ASSERT_TRUE(fence);
  auto h = (*fence)->create_shared_handle();
  ASSERT_TRUE(h);
  auto opened = consumer->open_shared_fence(h->value());
  ASSERT_TRUE(opened) << opened.error().message();
  auto t = texture(*consumer, desc_of(false));
  ASSERT_TRUE(consumer->wait_gpu(**opened, 1));
  fill(*consumer, *t, 0x33);
  consumer->flush();
  EXPECT_EQ(consumer->pending_commands(), 2u) << "work behind an unsatisfied GPU wait ran";
  ASSERT_TRUE(producer->signal(**fence, 1));
  EXPECT_EQ((*opened)->completed_value(), 0u) << "an unflushed signal arrived";
  producer->flush();
  EXPECT_EQ((*opened)->completed_value(), 1u);
  consumer->flush();
  EXPECT_EQ(consumer->pending_commands(), 0u);
  EXPECT_EQ(first_byte(*consumer, *t), 0x33);
}

TEST(SoftwareD3d11, HAZ_23_a_map_behind_a_wait_nothing_signals_fails_instead_of_hanging) {
  SoftwareD3d11Device::Options o;
  o.hang_timeout = std::chrono::milliseconds(100);
  auto dev = device(o);
  auto fence = dev->create_fence(0, false);
  ASSERT_TRUE(fence);
  auto t = texture(*dev, desc_of(false));
  auto s = texture(*dev, desc_of(true));
  ASSERT_TRUE(dev->wait_gpu(**fence, 7));
  ASSERT_TRUE(dev->copy_resource(*s, *t));
  auto m = dev->map(*s, D3d11MapType::Read, false);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("fence value 7"), std::string::npos) << m.error().message();
}

TEST(SoftwareD3d11, HAZ_35_closed_handle_values_are_reused_for_other_objects) {
  auto dev = device();
  const std::size_t before = SoftwareD3d11Device::open_handles();
  auto a = texture(*dev, desc_of(false, true));
  auto b = texture(*dev, desc_of(false, true));
  std::uintptr_t first = 0;
  {
    auto h = dev->create_shared_handle(*a);
    ASSERT_TRUE(h);
    first = h->value();
    EXPECT_EQ(SoftwareD3d11Device::open_handles(), before + 1);
  }
  EXPECT_EQ(SoftwareD3d11Device::open_handles(), before);
  auto h2 = dev->create_shared_handle(*b);
  ASSERT_TRUE(h2);
  EXPECT_EQ(h2->value(), first) << "the freed value was not handed out again";
  auto opened = dev->open_shared_texture(h2->value());
  ASSERT_TRUE(opened);
  fill(*dev, *b, 0x44);
  dev->flush();
  EXPECT_EQ(first_byte(*dev, **opened), 0x44) << "the reused value opened the old texture";
}

TEST(SoftwareD3d11, capability_switches_take_the_degraded_paths) {
  SoftwareD3d11Device::Options o;
  o.capabilities.device1 = false;
  auto no1 = device(o);
  auto t = texture(*no1, desc_of(false, true));
  auto h = no1->create_shared_handle(*t);
  ASSERT_TRUE(h);
  auto opened = no1->open_shared_texture(h->value());
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::NotImplemented);

  o = {};
  o.capabilities.device5 = false;
  auto no5 = device(o);
  EXPECT_EQ(no5->create_fence(0, false).error().kind(), ErrorKind::NotImplemented);
  auto ctx = D3d11Context::create(no5);
  ASSERT_TRUE(ctx);
  EXPECT_EQ((*ctx)->fence(), nullptr);
  EXPECT_EQ(*(*ctx)->signal(), 0u);

  o = {};
  o.capabilities.shared_fence = false;
  auto private_only = device(o);
  auto pctx = D3d11Context::create(private_only);
  ASSERT_TRUE(pctx);
  ASSERT_NE((*pctx)->fence(), nullptr);
  EXPECT_FALSE((*pctx)->fence_shared());
  EXPECT_EQ((*pctx)->duplicate_fence_handle().error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ((*pctx)->signal_on(*private_only, *(*pctx)->fence()).error().kind(), ErrorKind::InvalidOperation)
      << "no other device can signal a private fence";
  EXPECT_EQ((*pctx)->last_signalled(), 0u);

  o = {};
  o.capabilities.shared_nt_handles = false;
  auto unshared = device(o);
  auto refused = unshared->create_texture(desc_of(false, true));
  ASSERT_FALSE(refused) << "a SHARED_NTHANDLE texture on a device without shared NT handles";
  EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument) << refused.error().message();
  auto plain = texture(*unshared, desc_of(false, false));
  EXPECT_EQ(unshared->create_shared_handle(*plain).error().kind(), ErrorKind::NotImplemented);
  EXPECT_EQ(unshared->open_shared_texture(4).error().kind(), ErrorKind::NotImplemented);

  o = {};
  o.capabilities.context4 = false;
  auto no4 = device(o);
  auto f = no4->create_fence(0, false);
  ASSERT_TRUE(f);
  EXPECT_EQ(no4->signal(**f, 1).error().kind(), ErrorKind::NotImplemented);
  EXPECT_EQ(no4->wait_gpu(**f, 1).error().kind(), ErrorKind::NotImplemented);
}

TEST(SoftwareD3d11, the_shared_process_fence_handle_opens_on_a_second_device) {
  auto dev = device();
  auto ctx = D3d11Context::create(dev);
  ASSERT_TRUE(ctx);
  ASSERT_TRUE((*ctx)->fence_shared());
  auto v = (*ctx)->signal();
  ASSERT_TRUE(v);
  auto h = (*ctx)->duplicate_fence_handle();
  ASSERT_TRUE(h) << h.error().message();
  auto other = device();
  auto opened = other->open_shared_fence(h->value());
  ASSERT_TRUE(opened);
  EXPECT_GE((*opened)->completed_value(), *v);
  std::uint64_t hooked = 0;
  EXPECT_EQ(tm_software_d3d11_fence_value(h->value(), &hooked), 0);
  EXPECT_EQ(hooked, (*opened)->completed_value());
}

TEST(SoftwareD3d11, the_c_hook_resolves_a_shared_texture_to_its_video_memory) {
  auto dev = device();
  auto t = texture(*dev, desc_of(false, true));
  fill(*dev, *t, 0x21);
  dev->flush();
  auto h = dev->create_shared_handle(*t);
  ASSERT_TRUE(h);
  void *data = nullptr;
  std::uint32_t pitch = 0, rows = 0;
  ASSERT_EQ(tm_software_d3d11_video_memory(h->value(), &data, &pitch, &rows), 0);
  EXPECT_EQ(pitch, kW * 4);
  EXPECT_EQ(rows, kH);
  EXPECT_EQ(static_cast<unsigned char *>(data)[0], 0x21);
  EXPECT_NE(tm_software_d3d11_video_memory(h->value() + 4000, &data, &pitch, &rows), 0);
}

void set_device_env(const char *value) {
#ifdef _WIN32
  _putenv_s("TENSORMEM_D3D11_DEVICE", value ? value : "");
#else
  if (value)
    ::setenv("TENSORMEM_D3D11_DEVICE", value, 1);
  else
    ::unsetenv("TENSORMEM_D3D11_DEVICE");
#endif
}

TEST(SoftwareD3d11, the_process_device_is_the_software_one_only_when_asked) {
  set_device_env("bogus");
  auto bad = D3d11Context::process();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidArgument);
#ifndef _WIN32
  // Off Windows nothing is chosen for the user: the reference device is a
  // test device and must be asked for.
  set_device_env(nullptr);
  auto none = D3d11Context::process();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(none.error().message().find("TENSORMEM_D3D11_DEVICE=software"), std::string::npos);
#endif
  set_device_env("software");
  auto ctx = D3d11Context::process();
  ASSERT_TRUE(ctx) << ctx.error().message();
  EXPECT_STREQ((*ctx)->device().name(), "software");
  auto again = D3d11Context::process();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *ctx);
  set_device_env(nullptr);
}

} // namespace
