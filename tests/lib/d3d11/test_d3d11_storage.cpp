// SPDX-License-Identifier: Apache-2.0
// The 27 seed tests of the D3D11 texture storage (spec §6.2) as twins
// against the software device, plus the §8.2 hazards. Every device comes
// from make_storage_device() so the Windows build can point it elsewhere.
#include <tensormem/d3d11_software_device.hpp>
#include <tensormem/d3d11_storage.hpp>
#include <tensormem/tensor.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

using namespace tensormem;

namespace {

/// \brief The one place a test device comes from: the software device at a
/// given staging pitch alignment (256 like discrete GPUs, 1 like WARP).
std::shared_ptr<SoftwareD3d11Device> make_storage_device(std::uint32_t alignment = 256, D3d11Capabilities caps = {}) {
  SoftwareD3d11Device::Options o;
  o.pitch_alignment = alignment;
  o.capabilities = caps;
  o.hang_timeout = std::chrono::milliseconds(2000);
  auto d = SoftwareD3d11Device::create(o);
  return d ? *d : nullptr;
}

std::shared_ptr<D3d11Context> make_context(std::shared_ptr<D3d11Device> device) {
  auto c = D3d11Context::create(std::move(device));
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : nullptr;
}

struct Rig {
  std::shared_ptr<SoftwareD3d11Device> device;
  std::shared_ptr<D3d11Context> context;
};

Rig rig(std::uint32_t alignment = 256, D3d11Capabilities caps = {}) {
  Rig r;
  r.device = make_storage_device(alignment, caps);
  if (r.device)
    r.context = make_context(r.device);
  return r;
}

std::shared_ptr<D3d11TextureStorage> image(const Rig &r, PixelFormat f, std::uint32_t w, std::uint32_t h,
                                           CpuAccess access, DType dtype = DType::U8) {
  auto s = D3d11TextureStorage::allocate_image(f, dtype, w, h, access, r.context);
  EXPECT_TRUE(s) << s.error().message();
  return s ? *s : nullptr;
}

/// \brief Fills the logical bytes of every texture row through a write map.
void fill(D3d11TextureStorage &s, std::uint8_t value) {
  auto pin = s.map(access_reads(s.access()) ? CpuAccess::ReadWrite : CpuAccess::Write);
  ASSERT_TRUE(pin) << pin.error().message();
  for (std::size_t r = 0; r < s.layout().texture_height; ++r)
    std::memset(pin->data() + r * s.backing_pitch(), value, s.layout().tight_row_bytes());
}

/// \brief True when every logical byte of every row of a read map is `value`.
bool reads_all(D3d11TextureStorage &s, std::uint8_t value) {
  auto pin = s.map(CpuAccess::Read);
  if (!pin) {
    ADD_FAILURE() << pin.error().message();
    return false;
  }
  for (std::size_t r = 0; r < s.layout().texture_height; ++r)
    for (std::size_t i = 0; i < s.layout().tight_row_bytes(); ++i)
      if (pin->data()[r * s.backing_pitch() + i] != std::byte{value})
        return false;
  return true;
}

std::shared_ptr<D3d11Texture> raw_texture(D3d11Device &d, std::uint32_t w, std::uint32_t h, DxgiFormat f,
                                          std::uint32_t bind = d3d11::kBindShaderResource) {
  D3d11TextureDesc desc;
  desc.width = w;
  desc.height = h;
  desc.format = f;
  desc.bind_flags = bind;
  desc.misc_flags = d3d11::kMiscShared | d3d11::kMiscSharedNtHandle;
  auto t = d.create_texture(desc);
  EXPECT_TRUE(t);
  return t ? *t : nullptr;
}

} // namespace

// ---- seed tests (§6.2) ----

// D3D-MAP-04, HAZ-25: the state an abandoned try-map leaves (a queued copy,
// refresh_pending) must not make a blocking map return the old frame.
TEST(D3d11Storage, D3D_MAP_04_a_blocking_map_refreshes_past_an_abandoned_try_maps_copy) {
  Rig r = rig();
  auto old_s = image(r, PixelFormat::RGBA, 64, 64, CpuAccess::ReadWrite);
  auto new_s = image(r, PixelFormat::RGBA, 64, 64, CpuAccess::ReadWrite);
  fill(*old_s, 0x11);
  fill(*new_s, 0x22);
  // A try-map queues its copy and flushes; the device answers "still drawing".
  auto polled = old_s->map(CpuAccess::Read, MapState::Wait::NoWait);
  ASSERT_FALSE(polled);
  EXPECT_TRUE(polled.error().would_block());
  EXPECT_FALSE(old_s->is_mapped());
  // The GPU now writes the texture the abandoned copy read.
  ASSERT_TRUE(r.device->copy_resource(*old_s->texture(), *new_s->texture()));
  ASSERT_TRUE(r.context->signal());
  EXPECT_TRUE(reads_all(*old_s, 0x22));
}

// D3D-LAYOUT-07: every layout row allocates and round-trips through a map.
TEST(D3d11Storage, D3D_LAYOUT_07_every_layout_row_allocates_and_round_trips_through_map) {
  for (std::uint32_t align : {256u, 1u}) {
    Rig r = rig(align);
    const std::pair<PixelFormat, DType> rows[] = {
        {PixelFormat::RGBA, DType::U8},  {PixelFormat::BGRA, DType::U8},  {PixelFormat::RGBx, DType::U8},
        {PixelFormat::BGRx, DType::U8},  {PixelFormat::GRAY8, DType::U8}, {PixelFormat::GRAY8, DType::F32},
        {PixelFormat::NV12, DType::U8},  {PixelFormat::NV16, DType::U8},  {PixelFormat::NV24, DType::U8},
        {PixelFormat::RGBA, DType::F32}, {PixelFormat::RGBA, DType::F16},
    };
    for (auto [f, t] : rows) {
      if (!image_d3d11_layout(f, t, 16, 8))
        continue;
      auto s = image(r, f, 16, 8, CpuAccess::ReadWrite, t);
      ASSERT_TRUE(s);
      fill(*s, 0x3C);
      EXPECT_TRUE(reads_all(*s, 0x3C)) << format_info(f).name << " align " << align;
    }
  }
}

// D3D-LAYOUT-04, HAZ-38: NV textures are as wide as their staging pitch.
TEST(D3d11Storage, D3D_LAYOUT_04_nv_textures_are_as_wide_as_their_pitch) {
  for (std::uint32_t align : {256u, 1u}) {
    Rig r = rig(align);
    auto s = image(r, PixelFormat::NV12, 64, 64, CpuAccess::ReadWrite);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->layout().tight_row_bytes(), s->backing_pitch());
    EXPECT_EQ(s->layout().texture_width, align == 256 ? 256u : 64u);
    EXPECT_EQ(s->layout().texture_height, 96u);
  }
}

// D3D-LAYOUT-03: access None and Write widen by the same probe.
TEST(D3d11Storage, D3D_LAYOUT_03_nv_textures_with_cpu_access_none_share_the_stride_rule) {
  Rig r = rig();
  auto rw = image(r, PixelFormat::NV12, 64, 64, CpuAccess::ReadWrite);
  auto none = image(r, PixelFormat::NV12, 64, 64, CpuAccess::None);
  auto w = image(r, PixelFormat::NV12, 64, 64, CpuAccess::Write);
  EXPECT_EQ(none->layout().texture_width, rw->layout().texture_width);
  EXPECT_EQ(w->layout().texture_width, rw->layout().texture_width);
  EXPECT_EQ(none->row_stride(), rw->row_stride()); // HAZ-40
  EXPECT_EQ(w->row_stride(), rw->row_stride());
}

// D3D-EXT-04: a write-only NV tensor uploads chroma lines at the texture pitch.
TEST(D3d11Storage, D3D_EXT_04_a_write_only_nv_tensor_uploads_its_chroma_lines_at_the_texture_pitch) {
  Rig r = rig();
  auto w = image(r, PixelFormat::NV12, 64, 64, CpuAccess::Write);
  {
    auto pin = w->map(CpuAccess::Write);
    ASSERT_TRUE(pin);
    const std::size_t pitch = *w->row_stride();
    std::memset(pin->data() + 64 * pitch, 0x80, 64); // first chroma line
  }
  auto reader =
      D3d11TextureStorage::wrap_texture(w->texture(), PixelFormat::NV12, DType::U8, 64, 64, CpuAccess::Read, r.context);
  ASSERT_TRUE(reader) << reader.error().message();
  auto pin = (*reader)->map(CpuAccess::Read);
  ASSERT_TRUE(pin);
  EXPECT_EQ(pin->data()[64 * (*reader)->backing_pitch()], std::byte{0x80});
  EXPECT_EQ(pin->data()[63 * (*reader)->backing_pitch()], std::byte{0});
}

// D3D-EXT-02: an NV12 128-wide texture wraps a 100-wide image at its own width.
// The seed's adapters padded to 128 at most; the twin runs at 128 and at 1.
TEST(D3d11Storage, D3D_EXT_02_an_external_semi_planar_texture_is_wrapped_at_its_own_width) {
  for (std::uint32_t align : {128u, 1u}) {
    Rig r = rig(align);
    auto t = raw_texture(*r.device, 128, 96, DxgiFormat::R8_Unorm);
    auto s = D3d11TextureStorage::wrap_texture(t, PixelFormat::NV12, DType::U8, 100, 64, CpuAccess::Read, r.context);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ((*s)->layout().texture_width, 128u);
  }
}

// D3D-EXT-02, HAZ-38: narrower than its pitch → refused on padded adapters, accepted on tight ones.
TEST(D3d11Storage, D3D_EXT_02_an_external_semi_planar_texture_narrower_than_its_pitch_is_refused) {
  for (std::uint32_t align : {256u, 1u}) {
    Rig r = rig(align);
    auto t = raw_texture(*r.device, 64, 96, DxgiFormat::R8_Unorm);
    auto s = D3d11TextureStorage::wrap_texture(t, PixelFormat::NV12, DType::U8, 64, 64, CpuAccess::Read, r.context);
    if (align == 256) {
      ASSERT_FALSE(s);
      EXPECT_EQ(s.error().kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(s.error().message().find("driver row pitch"), std::string::npos) << s.error().message();
    } else {
      EXPECT_TRUE(s) << s.error().message();
    }
  }
}

// D3D-EXT-03, HAZ-40: wrapped NV tensors report the texture's width as their stride.
TEST(D3d11Storage, D3D_EXT_03_wrapped_nv_tensors_record_the_textures_width_as_their_row_stride) {
  Rig r = rig();
  auto t = raw_texture(*r.device, 256, 96, DxgiFormat::R8_Unorm);
  for (CpuAccess a : {CpuAccess::None, CpuAccess::Write, CpuAccess::Read}) {
    auto s = D3d11TextureStorage::wrap_texture(t, PixelFormat::NV12, DType::U8, 64, 64, a, r.context);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ((*s)->row_stride(), std::optional<std::size_t>(256));
  }
}

// D3D-EXT-02, HAZ-39: narrower than the (even) image → refused; odd widths refused.
TEST(D3d11Storage, D3D_EXT_02_an_external_semi_planar_texture_narrower_than_the_image_is_refused) {
  Rig r = rig();
  auto t = raw_texture(*r.device, 128, 96, DxgiFormat::R8_Unorm);
  auto s = D3d11TextureStorage::wrap_texture(t, PixelFormat::NV12, DType::U8, 129, 64, CpuAccess::Read, r.context);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidArgument);
  Rig tight = rig(1);
  auto odd = raw_texture(*tight.device, 65, 96, DxgiFormat::R8_Unorm);
  EXPECT_FALSE(
      D3d11TextureStorage::wrap_texture(odd, PixelFormat::NV12, DType::U8, 64, 64, CpuAccess::Read, tight.context));
}

// D3D-MAP-07, D3D-LAYOUT-06: write-only maps go through the host buffer and land in the texture.
TEST(D3d11Storage, D3D_MAP_07_write_only_uses_the_shadow_and_lands_in_the_texture) {
  Rig r = rig();
  auto w = image(r, PixelFormat::RGBA, 64, 32, CpuAccess::Write);
  EXPECT_FALSE(w->has_staging());
  fill(*w, 0xA5);
  auto reader =
      D3d11TextureStorage::wrap_texture(w->texture(), PixelFormat::RGBA, DType::U8, 64, 32, CpuAccess::Read, r.context);
  ASSERT_TRUE(reader);
  EXPECT_TRUE(reads_all(**reader, 0xA5));
}

// D3D-LAYOUT-06, D3D-MAP-01: access None refuses maps and has no staging.
TEST(D3d11Storage, D3D_MAP_01_hardware_only_tensors_refuse_maps_and_have_no_staging) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::None);
  EXPECT_FALSE(s->has_staging());
  EXPECT_EQ(s->row_stride(), std::nullopt);
  auto m = s->map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ(s->pin_host(CpuAccess::Read).error().kind(), ErrorKind::InvalidOperation);
  auto ro = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::Read);
  EXPECT_EQ(ro->map(CpuAccess::Write).error().kind(), ErrorKind::InvalidOperation);
}

// D3D-FENCE-01, HAZ-34 [d3d11x2]: a second device opens the shared handle and reads the bytes.
TEST(D3d11Storage, D3D_FENCE_01_shared_handle_opens_on_a_second_device_and_reads_the_bytes) {
  Rig r = rig();
  if (!r.context->fence_shared())
    GTEST_SKIP() << "the device has no shared fence";
  auto s = image(r, PixelFormat::RGBA, 64, 32, CpuAccess::ReadWrite);
  fill(*s, 0x5A);
  auto v = r.context->signal();
  ASSERT_TRUE(v);
  ASSERT_TRUE(r.context->fence()->wait_cpu(*v, std::chrono::milliseconds(5000)));
  auto dup = s->shared_handle();
  ASSERT_TRUE(dup);
  Rig second = rig();
  auto other = D3d11TextureStorage::open_shared_handle(dup->value(), PixelFormat::RGBA, DType::U8, 64, 32,
                                                       CpuAccess::Read, std::nullopt, second.context);
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_TRUE(reads_all(**other, 0x5A));
}

// D3D-FENCE-04: no completion until one is recorded, then the value.
TEST(D3d11Storage, D3D_FENCE_04_completion_is_absent_until_recorded_then_carries_the_value) {
  Rig r = rig();
  if (!r.context->fence_shared())
    GTEST_SKIP() << "the device has no shared fence";
  auto s = image(r, PixelFormat::RGBA, 8, 8, CpuAccess::None);
  auto none = s->d3d11_completion();
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  auto v = r.context->signal();
  s->set_gpu_write(*v);
  auto c = s->d3d11_completion();
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->second, *v);
  EXPECT_TRUE((*c)->first);
}

// D3D-FENCE-03: a recorded write the fence has passed does not delay a map.
TEST(D3d11Storage, D3D_FENCE_03_a_map_does_not_block_on_a_recorded_write_the_fence_has_passed) {
  Rig r = rig();
  if (!r.context->fence_shared())
    GTEST_SKIP() << "the device has no shared fence";
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  auto v = r.context->signal();
  ASSERT_TRUE(r.context->fence()->wait_cpu(*v, std::chrono::milliseconds(5000)));
  EXPECT_GE(r.context->fence()->completed_value(), *v);
  s->set_gpu_write(*v);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(s->map(CpuAccess::Read));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

// D3D-IMP-03, HAZ-22 [d3d11x2]: a map sees a second device's write that the recorded completion covers.
TEST(D3d11Storage, D3D_IMP_03_a_map_sees_a_second_device_write_the_recorded_completion_covers) {
  Rig r = rig();
  Rig producer = rig();
  ASSERT_TRUE(r.context->fence_shared());
  auto src = image(producer, PixelFormat::RGBA, 32, 32, CpuAccess::ReadWrite);
  auto dst = image(producer, PixelFormat::RGBA, 32, 32, CpuAccess::None);
  fill(*src, 0x6B);
  // The producer queues its write and its signal without flushing: only the
  // queued GPU wait of the import orders the consumer's copy behind it.
  ASSERT_TRUE(producer.device->copy_resource(*dst->texture(), *src->texture()));
  const std::uint64_t pv = producer.context->last_signalled() + 1;
  ASSERT_TRUE(producer.device->signal(*producer.context->fence(), pv));
  auto fence_handle = producer.context->duplicate_fence_handle();
  ASSERT_TRUE(fence_handle);
  auto handle = dst->shared_handle();
  ASSERT_TRUE(handle);
  auto imported =
      D3d11TextureStorage::open_shared_handle(handle->value(), PixelFormat::RGBA, DType::U8, 32, 32, CpuAccess::Read,
                                              D3d11TextureStorage::Completion{fence_handle->value(), pv}, r.context);
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_NE((*imported)->last_gpu_write(), pv == (*imported)->last_gpu_write() ? 0u : pv); // HAZ-36: local value
  EXPECT_LE((*imported)->last_gpu_write(), r.context->last_signalled());
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    producer.device->flush();
  });
  EXPECT_TRUE(reads_all(**imported, 0x6B));
  later.join();
}

// D3D-FENCE-03, HAZ-23: a recorded value above the counter never blocks the next map.
TEST(D3d11Storage, D3D_FENCE_03_a_recorded_write_above_the_counter_does_not_block_the_next_map) {
  Rig r = rig();
  if (!r.context->fence_shared())
    GTEST_SKIP() << "the device has no shared fence";
  auto s = image(r, PixelFormat::RGBA, 32, 32, CpuAccess::ReadWrite);
  fill(*s, 0x77);
  const std::uint64_t bogus = r.context->last_signalled() + 1000000;
  s->set_gpu_write(bogus);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool ok = false;
  while (std::chrono::steady_clock::now() < deadline) {
    auto pin = s->map(CpuAccess::Read, MapState::Wait::NoWait);
    if (pin) {
      EXPECT_EQ(pin->data()[0], std::byte{0x77});
      ok = true;
      break;
    }
    std::this_thread::yield();
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(s->last_gpu_write(), bogus);
}

// D3D-IMP-03: from a shared handle, honouring a completion; identity by address (D3D-IMP-02).
TEST(D3d11Storage, D3D_IMP_03_from_shared_handle_round_trips_and_honours_a_completion) {
  Rig r = rig();
  if (!r.context->fence_shared())
    GTEST_SKIP() << "the device has no shared fence";
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  fill(*s, 0x42);
  auto v = r.context->signal();
  auto fh = r.context->duplicate_fence_handle();
  auto again = D3d11TextureStorage::open_shared_handle(s->shared_handle_value(), PixelFormat::RGBA, DType::U8, 16, 16,
                                                       CpuAccess::Read,
                                                       D3d11TextureStorage::Completion{fh->value(), *v}, r.context);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ((*again)->identity().kind, StorageKind::D3d11);
  EXPECT_GT((*again)->last_gpu_write(), *v);
  EXPECT_TRUE(reads_all(**again, 0x42));
}

// D3D-EXT-02: a mismatched description is refused, naming the field.
TEST(D3d11Storage, D3D_EXT_02_external_texture_on_a_mismatched_description_is_refused) {
  Rig r = rig();
  auto t = raw_texture(*r.device, 16, 16, DxgiFormat::R8G8B8A8_Unorm);
  auto s = D3d11TextureStorage::wrap_texture(t, PixelFormat::RGBA, DType::U8, 32, 16, CpuAccess::Read, r.context);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_NE(s.error().message().find("width"), std::string::npos);
  auto no_srv = raw_texture(*r.device, 16, 16, DxgiFormat::R8G8B8A8_Unorm, d3d11::kBindRenderTarget);
  auto b = D3d11TextureStorage::wrap_texture(no_srv, PixelFormat::RGBA, DType::U8, 16, 16, CpuAccess::Read, r.context);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message().find("bind flags"), std::string::npos);
}

// D3D-STATE-03, HAZ-19: readers share one map; a writer is refused while mapped.
TEST(D3d11Storage, D3D_STATE_03_second_reader_shares_the_map_and_a_writer_is_refused_while_mapped) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  auto a = s->map(CpuAccess::Read);
  const auto copies = s->refresh_copies();
  auto b = s->map(CpuAccess::Read);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->data(), b->data());
  EXPECT_EQ(s->refresh_copies(), copies); // no second copy into the mapped staging
  auto w = s->map(CpuAccess::Write);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind(), ErrorKind::Mapped); // deviation: seed says InvalidOperation
  EXPECT_EQ(r.device->violations(), 0u);
}

// D3D-STATE-03: a view shares the parent's map state.
TEST(D3d11Storage, D3D_STATE_03_a_view_shares_the_map_state_with_its_parent) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  auto t = Tensor::wrap(s, {16, 16, 4}, DType::U8);
  ASSERT_TRUE(t);
  auto v = t->view(s->backing_pitch(), {15, 16, 4});
  ASSERT_TRUE(v) << v.error().message();
  auto m = t->map(CpuAccess::Write);
  ASSERT_TRUE(m);
  EXPECT_TRUE(v->is_mapped());
  EXPECT_EQ(v->map(CpuAccess::Read).error().kind(), ErrorKind::Mapped);
}

// D3D-SYNC-04, D3D-SYNC-01, HAZ-20: one pin address across syncs.
TEST(D3d11Storage, D3D_SYNC_04_host_pin_keeps_one_address_across_syncs) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  auto pin = s->pin_host(CpuAccess::ReadWrite);
  ASSERT_TRUE(pin);
  std::byte *addr = pin->data();
  fill(*s, 0x5E);
  EXPECT_FALSE(s->is_mapped()); // the pin took no claim
  ASSERT_TRUE(s->sync_for_cpu(CpuAccess::Read));
  EXPECT_EQ(pin->data(), addr);
  EXPECT_EQ(addr[0], std::byte{0x5E});
  std::memset(addr, 0x27, pin->length());
  ASSERT_TRUE(s->sync_for_device(CpuAccess::Write));
  EXPECT_EQ(pin->data(), addr);
  auto m = s->map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_NE(m->data(), addr); // HAZ-20: the pin is not the staging mapping
  EXPECT_EQ(m->data()[0], std::byte{0x27});
}

// D3D-WIN-01: a map and a pin agree row for row at the backing pitch.
TEST(D3d11Storage, D3D_WIN_01_a_map_and_a_pin_agree_row_for_row_at_the_backing_pitch) {
  for (std::uint32_t align : {256u, 1u}) {
    Rig r = rig(align);
    auto s = image(r, PixelFormat::RGBA, 37, 5, CpuAccess::ReadWrite);
    {
      auto m = s->map(CpuAccess::ReadWrite);
      ASSERT_TRUE(m);
      for (std::size_t row = 0; row < 5; ++row)
        std::memset(m->data() + row * s->backing_pitch(), int(row + 1), 37 * 4);
    }
    auto pin = s->pin_host(CpuAccess::Read);
    ASSERT_TRUE(s->sync_for_cpu(CpuAccess::Read));
    for (std::size_t row = 0; row < 5; ++row)
      EXPECT_EQ(pin->data()[row * s->backing_pitch() + 147], std::byte(row + 1));
    EXPECT_EQ(s->backing_pitch(), align == 256 ? 256u : 148u);
  }
}

// D3D-BACK-04, HAZ-21: host pins are 64-byte aligned.
TEST(D3d11Storage, D3D_BACK_04_a_host_pin_is_64_byte_aligned) {
  Rig r = rig();
  for (auto [w, h] : {std::pair{64u, 64u}, {37u, 5u}, {1u, 1u}}) {
    auto s = image(r, PixelFormat::RGBA, w, h, CpuAccess::ReadWrite);
    auto pin = s->pin_host(CpuAccess::Read);
    ASSERT_TRUE(pin);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pin->data()) % 64, 0u);
  }
}

// D3D-WIN-01, HAZ-42, HAZ-41: a band's extent covers its own rows, not the parent's tail.
TEST(D3d11Storage, D3D_WIN_01_a_map_covers_this_tensors_rows_not_the_parents_tail) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 8, CpuAccess::ReadWrite);
  auto band = s->pitched_extent(16 * 4 * 2);
  ASSERT_TRUE(band);
  EXPECT_EQ(*band, s->backing_pitch() + 64);
  EXPECT_LT(*band, s->size_bytes());
  auto f16 = image(r, PixelFormat::RGBA, 16, 8, CpuAccess::ReadWrite, DType::F16);
  ASSERT_TRUE(f16);
  EXPECT_EQ(*f16->pitched_extent(16 * 8 * 2), f16->backing_pitch() + 128); // dtype of the image
  auto t = Tensor::wrap(s, {2, 16, 4}, DType::U8);
  ASSERT_TRUE(t);
  auto view = t->map_bytes(CpuAccess::Read, *band);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->size_bytes(), *band);
}

// D3D-TRY-03, HAZ-26: a polling map eventually succeeds without queueing a copy per poll.
TEST(D3d11Storage, D3D_TRY_03_try_map_eventually_succeeds_and_returns_the_written_bytes) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  fill(*s, 0x3D);
  const auto before = s->refresh_copies();
  auto t = Tensor::wrap(s, {16, 16, 4}, DType::U8);
  bool ok = false;
  for (int i = 0; i < 100 && !ok; ++i) {
    auto m = t->try_map(CpuAccess::Read);
    if (m) {
      EXPECT_EQ(m->data()[0], std::byte{0x3D});
      ok = true;
    } else {
      EXPECT_TRUE(m.error().would_block()) << m.error().message();
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(s->refresh_copies(), before + 1);
}

// D3D-MAP-07, HAZ-31: a read map of a write-only tensor uploads nothing.
TEST(D3d11Storage, D3D_MAP_07_read_map_of_a_write_only_tensor_does_not_upload) {
  Rig r = rig();
  auto w = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::Write);
  fill(*w, 0xA5);
  auto rd = D3d11TextureStorage::wrap_texture(w->texture(), PixelFormat::RGBA, DType::U8, 16, 16, CpuAccess::ReadWrite,
                                              r.context);
  ASSERT_TRUE(rd);
  fill(**rd, 0x3C); // the texture now holds 0x3C; w's host buffer still 0xA5
  {
    auto m = w->map(CpuAccess::Read);
    ASSERT_TRUE(m);
  }
  EXPECT_TRUE(reads_all(**rd, 0x3C));
}

// D3D-WIN-06: a view at a row offset maps the right bytes.
TEST(D3d11Storage, D3D_WIN_06_view_at_a_row_offset_maps_the_right_bytes) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 8, CpuAccess::ReadWrite);
  {
    auto m = s->map(CpuAccess::Write);
    for (std::size_t row = 0; row < 8; ++row)
      std::memset(m->data() + row * s->backing_pitch(), int(0x10 + row), 64);
  }
  auto t = Tensor::wrap(s, {8, 16, 4}, DType::U8);
  auto v = t->view(3 * s->backing_pitch(), {2, 16, 4});
  ASSERT_TRUE(v);
  auto m = v->map_bytes(CpuAccess::Read, *s->pitched_extent(2 * 64));
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->data()[0], std::byte{0x13});
  EXPECT_EQ(m->data()[s->backing_pitch()], std::byte{0x14});
}

// ---- further hazards ----

// HAZ-32: sync_for_device refuses while a map holds the backing.
TEST(D3d11Storage, HAZ_32_sync_for_device_refuses_while_mapped) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  auto pin = s->pin_host(CpuAccess::Read);
  auto m = s->map(CpuAccess::ReadWrite);
  ASSERT_TRUE(m);
  EXPECT_EQ(s->sync_for_device(CpuAccess::Write).error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ(s->sync_for_cpu(CpuAccess::Read).error().kind(), ErrorKind::InvalidOperation);
  EXPECT_EQ(r.device->violations(), 0u);
}

// HAZ-30: a read-only pin never publishes the host buffer's zero rows.
TEST(D3d11Storage, HAZ_30_a_read_only_pin_publishes_no_zero_rows) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 16, 16, CpuAccess::ReadWrite);
  fill(*s, 0x44);
  auto pin = s->pin_host(CpuAccess::Read);
  ASSERT_TRUE(s->sync_for_device(CpuAccess::Write)); // copies staging, not the zero host buffer
  EXPECT_TRUE(reads_all(*s, 0x44));
}

// HAZ-37: an import whose producer value never completes is bounded without context4.
TEST(D3d11Storage, HAZ_37_import_on_a_never_signalled_value_is_bounded) {
  D3d11Capabilities caps;
  caps.context4 = false;
  Rig r = rig(256, caps);
  Rig producer = rig();
  auto s = image(producer, PixelFormat::RGBA, 8, 8, CpuAccess::None);
  auto fh = producer.context->duplicate_fence_handle();
  ASSERT_TRUE(fh);
  const auto t0 = std::chrono::steady_clock::now();
  auto imported = D3d11TextureStorage::open_shared_handle(
      s->shared_handle_value(), PixelFormat::RGBA, DType::U8, 8, 8, CpuAccess::Read,
      D3d11TextureStorage::Completion{fh->value(), 1u << 30}, r.context);
  EXPECT_TRUE(imported) << imported.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, D3d11TextureStorage::kImportWait + std::chrono::seconds(2));
  EXPECT_EQ((*imported)->last_gpu_write(), 0u);
}

// HAZ-35, D3D-IMP-02: identity is the texture address, not a (recyclable) handle value.
TEST(D3d11Storage, D3D_IMP_02_identity_is_the_texture_not_the_handle) {
  Rig r = rig();
  auto a = image(r, PixelFormat::RGBA, 8, 8, CpuAccess::None);
  auto b = image(r, PixelFormat::RGBA, 8, 8, CpuAccess::None);
  EXPECT_NE(a->identity(), b->identity());
  EXPECT_EQ(a->identity().kind, StorageKind::D3d11);
  EXPECT_NE(a->describe().find("pitch="), std::string::npos);
}

// D3D-FENCE-02: set_gpu_write is monotonic and takes any 64-bit value.
TEST(D3d11Storage, D3D_FENCE_02_set_gpu_write_is_monotonic) {
  Rig r = rig();
  auto s = image(r, PixelFormat::RGBA, 8, 8, CpuAccess::None);
  s->set_gpu_write(5);
  s->set_gpu_write(3);
  EXPECT_EQ(s->last_gpu_write(), 5u);
  s->set_gpu_write(UINT64_MAX);
  EXPECT_EQ(s->last_gpu_write(), UINT64_MAX);
}
