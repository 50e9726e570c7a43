// SPDX-License-Identifier: Apache-2.0
// CUDA import of Direct3D 11 textures (D3D-CUDA-01; spec §5.7–5.9): the
// software D3D11 device's shared textures and fence through the fake CUDA,
// once per CUDA API (meson runs the program against the fake runtime and
// against the fake driver). The fake imports D3D11 handles only when told
// to (fake_cudart_set_accept_d3d11), as a Windows driver would; CUDA on
// Linux refuses them, and so does the fake by default.
#include "cuda_test_util.hpp"
#include "log_capture.hpp"

#include <tensormem/cuda_import.hpp>
#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_storage.hpp>
#include <tensormem/internal/cuda_d3d11.hpp>
#include <tensormem/internal/d3d11_software_device.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

using namespace tensormem;
using cudatest::call_log;

namespace {

struct SharedTexture {
  std::shared_ptr<D3d11Texture> texture;
  D3d11NtHandle handle;
  D3d11ImageLayout layout;
};

std::size_t texel_bytes(DxgiFormat format) {
  std::optional<cudaffi::ChannelFormatDesc> f = d3d11_cuda_channel_format(format);
  if (f)
    return static_cast<std::size_t>(f->x + f->y + f->z + f->w) / 8;
  return format == DxgiFormat::R32_Float ? 4 : 0;
}

class CudaD3d11 : public ::testing::Test {
protected:
  void SetUp() override {
    cudatest::reset_fake();
    fake_cudart_set_accept_d3d11(1);
    fake_cudart_set_device_luid(0, adapter_.low, adapter_.high);
    d3d11_cuda_reset_process_state_for_tests();
    runtime_ = CudaRuntime::get();
    ASSERT_TRUE(runtime_->available()) << runtime_->reason();
    SoftwareD3d11Options options;
    options.adapter = adapter_;
    Result<std::shared_ptr<D3d11Device>> device = create_software_d3d11_device(options);
    ASSERT_TRUE(device) << device.error().message();
    device_ = *device;
    Result<std::shared_ptr<D3d11Context>> context = D3d11Context::create(device_);
    ASSERT_TRUE(context) << context.error().message();
    context_ = *context;
    fake_cudart_reset_counters();
  }

  void TearDown() override {
    // The process semaphore is kept for the process; a test's end is this
    // program's "process end" for it.
    d3d11_cuda_reset_process_state_for_tests();
    fake_cudart_clear_faults();
    fake_cudart_set_accept_d3d11(0);
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "a CUDA object outlived the test";
    EXPECT_EQ(fake_cudart_violations(), 0u);
  }

  /// A shared texture of `width` × `height` texels, filled with a pattern.
  SharedTexture make_texture(std::uint32_t width, std::uint32_t height, DxgiFormat format = DxgiFormat::R8G8B8A8_Unorm,
                             std::uint8_t seed = 1) {
    SharedTexture out;
    D3d11TextureDesc desc;
    desc.width = width;
    desc.height = height;
    desc.format = format;
    desc.bind_flags = d3d11::kBindShaderResource;
    desc.misc_flags = d3d11::kMiscShared | d3d11::kMiscSharedNtHandle;
    Result<std::shared_ptr<D3d11Texture>> texture = device_->create_texture(desc);
    EXPECT_TRUE(texture) << texture.error().message();
    if (!texture)
      return out;
    out.texture = *texture;
    const std::size_t row = width * texel_bytes(format);
    fill(*out.texture, row, height, seed);
    Result<D3d11NtHandle> handle = device_->create_shared_handle(*out.texture);
    EXPECT_TRUE(handle) << handle.error().message();
    if (handle)
      out.handle = std::move(*handle);
    out.layout = D3d11ImageLayout{PixelFormat::RGBA, DType::U8, width, height, width, height, format};
    return out;
  }

  void fill(D3d11Texture &texture, std::size_t row, std::uint32_t height, std::uint8_t seed) {
    std::vector<std::byte> bytes(row * height);
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
    ASSERT_TRUE(device_->update_subresource(texture, bytes.data(), static_cast<std::uint32_t>(row)));
    device_->flush();
  }

  /// The texture's bytes, tight rows, read back through a staging copy.
  std::vector<std::byte> read_back(D3d11Texture &texture) {
    D3d11TextureDesc desc = texture.desc();
    const std::size_t row = desc.width * texel_bytes(desc.format);
    desc.usage = d3d11::kUsageStaging;
    desc.bind_flags = 0;
    desc.cpu_access_flags = d3d11::kCpuAccessRead;
    desc.misc_flags = 0;
    Result<std::shared_ptr<D3d11Texture>> staging = device_->create_texture(desc);
    EXPECT_TRUE(staging);
    if (!staging)
      return {};
    EXPECT_TRUE(device_->copy_resource(**staging, texture));
    Result<D3d11Mapped> mapped = device_->map(**staging, D3d11MapType::Read, false);
    EXPECT_TRUE(mapped);
    if (!mapped)
      return {};
    std::vector<std::byte> out(row * desc.height);
    for (std::uint32_t y = 0; y < desc.height; ++y)
      std::memcpy(out.data() + y * row, mapped->data + std::size_t(y) * mapped->row_pitch, row);
    device_->unmap(**staging);
    return out;
  }

  /// What a CUDA map holds, copied to the host.
  std::vector<std::byte> device_bytes(const CudaMap &map) {
    std::vector<std::byte> out(map.length());
    EXPECT_TRUE(runtime_->memcpy_device_to_host(out.data(), map.device_ptr(), out.size()));
    return out;
  }

  Result<std::shared_ptr<CudaHandle>> import(SharedTexture &t, bool with_fence = false) {
    D3d11TextureHandle request;
    request.nt_handle = t.handle.value();
    request.layout = t.layout;
    request.adapter = adapter_;
    if (with_fence) {
      Result<D3d11NtHandle> fence = context_->duplicate_fence_handle();
      EXPECT_TRUE(fence) << fence.error().message();
      if (fence)
        request.fence_handle = std::move(*fence);
    }
    request.recorded_write = recorded_;
    return import_d3d11_texture(runtime_, std::move(request));
  }

  D3d11AdapterId adapter_{0x50465753u, 0};
  std::shared_ptr<const CudaRuntime> runtime_;
  std::shared_ptr<D3d11Device> device_;
  std::shared_ptr<D3d11Context> context_;
  std::shared_ptr<std::atomic<std::uint64_t>> recorded_ = std::make_shared<std::atomic<std::uint64_t>>(0);
};

// ---- Pure rules ---------------------------------------------------------------

TEST(CudaD3d11Rules, CUDA_LADDER_01_02_rungs_are_multiples_of_the_tight_size_floored_at_a_page_and_saturate) {
  EXPECT_EQ(d3d11_cuda_ladder_rung(4, 1), 4096u);
  EXPECT_EQ(d3d11_cuda_ladder_rung(4, 2), 8192u);
  EXPECT_EQ(d3d11_cuda_ladder_rung(4, 4), 16384u);
  EXPECT_EQ(d3d11_cuda_ladder_rung(131072, 1), 131072u);
  EXPECT_EQ(d3d11_cuda_ladder_rung(8294400, 2), 16588800u);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2 + 1;
  EXPECT_EQ(d3d11_cuda_ladder_rung(huge, 1), huge);
  EXPECT_EQ(d3d11_cuda_ladder_rung(huge, 2), std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(d3d11_cuda_ladder_rung(huge, 4), std::numeric_limits<std::size_t>::max());
}

TEST(CudaD3d11Rules, CUDA_SEM_04_a_recorded_write_with_no_wait_behind_it_declines_the_copy) {
  EXPECT_TRUE(d3d11_copy_allowed(0, false));
  EXPECT_TRUE(d3d11_copy_allowed(0, true));
  EXPECT_TRUE(d3d11_copy_allowed(42, true));
  EXPECT_FALSE(d3d11_copy_allowed(42, false));
}

TEST(CudaD3d11Rules, CUDA_D3D_03_channel_descriptions_by_dxgi_format) {
  struct Row {
    DxgiFormat format;
    int x, y, z, w;
    cudaffi::ChannelFormatKind kind;
  };
  using K = cudaffi::ChannelFormatKind;
  const Row rows[] = {
      {DxgiFormat::R8_Unorm, 8, 0, 0, 0, K::Unsigned},
      {DxgiFormat::R8G8_Unorm, 8, 8, 0, 0, K::Unsigned},
      {DxgiFormat::R8G8B8A8_Unorm, 8, 8, 8, 8, K::Unsigned},
      {DxgiFormat::B8G8R8A8_Unorm, 8, 8, 8, 8, K::Unsigned},
      {DxgiFormat::R16G16B16A16_Float, 16, 16, 16, 16, K::Float},
      {DxgiFormat::R32G32B32A32_Float, 32, 32, 32, 32, K::Float},
  };
  for (const Row &row : rows) {
    SCOPED_TRACE(dxgi_format_name(row.format));
    std::optional<cudaffi::ChannelFormatDesc> f = d3d11_cuda_channel_format(row.format);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->x, row.x);
    EXPECT_EQ(f->y, row.y);
    EXPECT_EQ(f->z, row.z);
    EXPECT_EQ(f->w, row.w);
    EXPECT_EQ(f->f, row.kind);
  }
  for (DxgiFormat other :
       {DxgiFormat::Unknown, DxgiFormat::R32_Float, DxgiFormat::R16_Float, DxgiFormat::B8G8R8X8_Unorm})
    EXPECT_FALSE(d3d11_cuda_channel_format(other)) << dxgi_format_name(other);
}

// ---- The size ladder -------------------------------------------------------------

// CUDA-D3D-01: a successful import is a D3D11 handle.
TEST_F(CudaD3d11, CUDA_LADDER_04_a_texture_without_padding_maps_at_its_tight_size) {
  SharedTexture t = make_texture(256, 128);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_TRUE(handle) << handle.error().message();
  EXPECT_EQ((*handle)->kind(), CudaHandleKind::D3d11);
  EXPECT_EQ((*handle)->size(), 256u * 128u * 4u);
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 1u);
  EXPECT_EQ(fake_cudart_last_import_size(), 131072u);
  EXPECT_FALSE(d3d11_cuda_process_state().padded);
  EXPECT_NE((*handle)->describe().find("D3d11"), std::string::npos) << (*handle)->describe(); // CUDA-HANDLE-03
}

TEST_F(CudaD3d11, CUDA_LADDER_03_a_1080p_texture_needs_the_second_rung_and_sets_the_sticky_flag) {
  SharedTexture t = make_texture(1920, 1080);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_TRUE(handle) << handle.error().message();
  // The 1× rung imported, failed at the array, and was destroyed.
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 2u);
  EXPECT_EQ(fake_cudart_calls("cudaExternalMemoryGetMappedMipmappedArray"), 2u);
  EXPECT_EQ(fake_cudart_calls("cudaDestroyExternalMemory"), 1u);
  EXPECT_EQ(fake_cudart_last_import_size(), 2u * 1920u * 1080u * 4u);
  EXPECT_TRUE(d3d11_cuda_process_state().padded);

  // CUDA-LADDER-03: from now on the tight rung is skipped, even for a
  // texture it would have fitted.
  SharedTexture small = make_texture(256, 128);
  fake_cudart_reset_counters();
  Result<std::shared_ptr<CudaHandle>> second = import(small);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 1u);
  EXPECT_EQ(fake_cudart_last_import_size(), 2u * 131072u);
  EXPECT_TRUE(d3d11_cuda_process_state().padded);
}

TEST_F(CudaD3d11, CUDA_LADDER_02_tiny_textures_map_at_the_page_floor) {
  struct Tiny {
    std::uint32_t w, h;
    DxgiFormat format;
  };
  for (Tiny tiny : {Tiny{1, 1, DxgiFormat::R8G8B8A8_Unorm}, Tiny{4, 4, DxgiFormat::R8G8B8A8_Unorm},
                    Tiny{7, 3, DxgiFormat::R8_Unorm}}) {
    SCOPED_TRACE(std::to_string(tiny.w) + "x" + std::to_string(tiny.h));
    d3d11_cuda_reset_process_state_for_tests();
    SharedTexture t = make_texture(tiny.w, tiny.h, tiny.format);
    fake_cudart_reset_counters();
    Result<std::shared_ptr<CudaHandle>> handle = import(t);
    ASSERT_TRUE(handle) << handle.error().message();
    // The fake's footprint of any texture this small is 8 KiB: the floor's
    // first doubling. 1×, 2× and 4× of the tight size would all fail.
    EXPECT_EQ(fake_cudart_last_import_size(), 8192u);
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    EXPECT_EQ(device_bytes(*map), read_back(*t.texture));
  }
}

TEST_F(CudaD3d11, CUDA_LADDER_01_every_rung_refused_is_none_with_everything_released) {
  // 1 × 1000 R8: the fake's footprint (512 × 1008 bytes) is beyond 4 × 4096.
  SharedTexture t = make_texture(1, 1000, DxgiFormat::R8_Unorm);
  Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::Device) << handle.error().message();
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 3u);
  EXPECT_EQ(fake_cudart_calls("cudaDestroyExternalMemory"), 3u);
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
  EXPECT_FALSE(d3d11_cuda_process_state().padded);
}

// ---- Formats, device, semaphore -------------------------------------------------

// CUDA-D3D-04: the fake refuses a mipmapped-array descriptor other than offset 0,
// one level, flags 0 and depth 0, so every import here checks it.
TEST_F(CudaD3d11, CUDA_D3D_03_every_listed_format_imports_and_copies_its_bytes) {
  for (DxgiFormat format :
       {DxgiFormat::R8_Unorm, DxgiFormat::R8G8_Unorm, DxgiFormat::R8G8B8A8_Unorm, DxgiFormat::B8G8R8A8_Unorm,
        DxgiFormat::R16G16B16A16_Float, DxgiFormat::R32G32B32A32_Float}) {
    SCOPED_TRACE(dxgi_format_name(format));
    SharedTexture t = make_texture(64, 32, format, static_cast<std::uint8_t>(format));
    Result<std::shared_ptr<CudaHandle>> handle = import(t);
    ASSERT_TRUE(handle) << handle.error().message();
    EXPECT_EQ((*handle)->size(), 64u * 32u * texel_bytes(format));
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    EXPECT_EQ(device_bytes(*map), read_back(*t.texture));
  }
}

TEST_F(CudaD3d11, CUDA_D3D_03_an_unlisted_format_is_declined_before_cuda_is_asked) {
  SharedTexture t = make_texture(16, 16, DxgiFormat::R32_Float);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(handle.error().message().find("R32"), std::string::npos) << handle.error().message();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u) << call_log();
}

TEST_F(CudaD3d11, CUDA_D3D_02_the_device_is_looked_up_once_per_process) {
  SharedTexture a = make_texture(64, 64), b = make_texture(64, 64), c = make_texture(64, 64);
  for (SharedTexture *t : {&a, &b, &c}) {
    Result<std::shared_ptr<CudaHandle>> handle = import(*t);
    ASSERT_TRUE(handle) << handle.error().message();
  }
  EXPECT_EQ(fake_cudart_calls("cudaGetDeviceProperties"), 1u);
  D3d11CudaProcessState state = d3d11_cuda_process_state();
  EXPECT_TRUE(state.device_resolved);
  EXPECT_EQ(state.device, 0);
}

TEST_F(CudaD3d11, CUDA_D3D_02_a_failed_device_lookup_is_cached_too) {
  fake_cudart_set_device_luid(0, 0x1234, 0); // another adapter
  SharedTexture t = make_texture(64, 64);
  Result<std::shared_ptr<CudaHandle>> first = import(t);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().kind(), ErrorKind::NotImplemented) << first.error().message();
  // Even once CUDA would answer, the cached failure stands.
  fake_cudart_set_device_luid(0, adapter_.low, adapter_.high);
  Result<std::shared_ptr<CudaHandle>> second = import(t);
  ASSERT_FALSE(second);
  EXPECT_EQ(fake_cudart_calls("cudaGetDeviceProperties"), 1u);
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 0u);
  EXPECT_EQ(d3d11_cuda_process_state().device, -1);
}

TEST_F(CudaD3d11, CUDA_SEM_01_the_fence_is_imported_once_and_later_handles_are_closed) {
  const std::size_t open_before = SoftwareD3d11Device::open_handles();
  std::vector<SharedTexture> textures;
  std::vector<std::shared_ptr<CudaHandle>> handles;
  for (int i = 0; i < 4; ++i)
    textures.push_back(make_texture(32, 32));
  const std::size_t open_with_textures = SoftwareD3d11Device::open_handles();
  for (SharedTexture &t : textures) {
    Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
    ASSERT_TRUE(handle) << handle.error().message();
    handles.push_back(*handle);
  }
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalSemaphore"), 1u);
  EXPECT_EQ(fake_cudart_live("external_semaphore"), 1u);
  EXPECT_TRUE(d3d11_cuda_process_state().semaphore);
  // One duplicate of the fence is kept with the semaphore; the other three
  // were closed.
  EXPECT_EQ(SoftwareD3d11Device::open_handles(), open_with_textures + 1);
  // CUDA-SEM-02: no handle destroys it.
  handles.clear();
  EXPECT_EQ(fake_cudart_live("external_semaphore"), 1u);
  d3d11_cuda_reset_process_state_for_tests();
  EXPECT_EQ(fake_cudart_live("external_semaphore"), 0u);
  EXPECT_EQ(SoftwareD3d11Device::open_handles(), open_with_textures);
  textures.clear();
  EXPECT_EQ(SoftwareD3d11Device::open_handles(), open_before);
}

TEST_F(CudaD3d11, CUDA_D3D_06_no_fence_handle_means_no_semaphore_even_when_the_process_has_one) {
  SharedTexture a = make_texture(32, 32), b = make_texture(32, 32);
  Result<std::shared_ptr<CudaHandle>> with = import(a, true);
  ASSERT_TRUE(with) << with.error().message();
  Result<std::shared_ptr<CudaHandle>> without = import(b, false);
  ASSERT_TRUE(without) << without.error().message();
  Result<std::uint64_t> value = context_->signal();
  ASSERT_TRUE(value);
  recorded_->store(*value);
  Result<CudaMap> waited = (*with)->map();
  EXPECT_TRUE(waited) << waited.error().message();
  waited = Result<CudaMap>(Error::invalid_operation("dropped"));
  Result<CudaMap> declined = (*without)->map();
  ASSERT_FALSE(declined);
  EXPECT_EQ(declined.error().kind(), ErrorKind::WouldBlock);
  EXPECT_NE(declined.error().message().find("no fence semaphore"), std::string::npos) << declined.error().message();
}

// ---- Maps --------------------------------------------------------------------

// CUDA-D3D-07: the handle keeps its linear buffer, made on the first map and reused.
TEST_F(CudaD3d11, CUDA_HANDLE_06_a_map_copies_the_texture_into_the_linear_buffer) {
  SharedTexture t = make_texture(100, 30, DxgiFormat::B8G8R8A8_Unorm, 9);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_TRUE(handle) << handle.error().message();
  std::vector<std::byte> expected = read_back(*t.texture);
  void *first_ptr = nullptr;
  {
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    EXPECT_EQ(map->length(), 100u * 30u * 4u);
    EXPECT_EQ(device_bytes(*map), expected);
    first_ptr = map->device_ptr();
  }
  // The buffer is allocated once and reused; a later map sees new bytes.
  fill(*t.texture, 400, 30, 77);
  Result<CudaMap> again = (*handle)->map();
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->device_ptr(), first_ptr);
  EXPECT_EQ(device_bytes(*again), read_back(*t.texture));
  EXPECT_EQ(fake_cudart_calls("cudaMalloc"), 1u);
}

TEST_F(CudaD3d11, CUDA_MAP_04_a_writable_map_writes_back_on_release_and_a_read_map_does_not) {
  SharedTexture t = make_texture(64, 16);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_TRUE(handle) << handle.error().message();
  std::vector<std::byte> original = read_back(*t.texture);
  std::vector<std::byte> pattern(original.size());
  for (std::size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<std::byte>(255 - (i % 251));
  {
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    ASSERT_TRUE(runtime_->memcpy_host_to_device(map->device_ptr(), pattern.data(), pattern.size()));
  }
  EXPECT_EQ(read_back(*t.texture), original) << "a read map must not write back";
  {
    Result<CudaMap> map = (*handle)->map_mut();
    ASSERT_TRUE(map) << map.error().message();
    EXPECT_TRUE(map->writable());
    ASSERT_TRUE(runtime_->memcpy_host_to_device(map->device_ptr(), pattern.data(), pattern.size()));
    EXPECT_EQ(read_back(*t.texture), original) << "written back before the release";
  }
  EXPECT_EQ(read_back(*t.texture), pattern);
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy2DToArrayAsync"), 1u);
}

// HAZ-46 (CUDA-SYM-03): every copy, wait and synchronisation of a D3D11
// handle goes on the handle's own stream, never the legacy default stream,
// which would make each a barrier against all the device's work. Checked by
// passing a null stream to the map's copy (the fake counts it).
TEST_F(CudaD3d11, CUDA_SYM_03_maps_and_write_backs_never_use_the_legacy_default_stream) { // HAZ-46
  SharedTexture t = make_texture(32, 8);
  Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
  ASSERT_TRUE(handle) << handle.error().message();
  Result<std::uint64_t> written = context_->signal();
  ASSERT_TRUE(written) << written.error().message();
  recorded_->store(*written);
  fake_cudart_reset_counters();
  {
    Result<CudaMap> map = (*handle)->map_mut();
    ASSERT_TRUE(map) << map.error().message();
  }
  EXPECT_EQ(fake_cudart_calls("cudaWaitExternalSemaphoresAsync"), 1u);
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy2DFromArrayAsync"), 1u);
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy2DToArrayAsync"), 1u);
  EXPECT_EQ(fake_cudart_calls("cudaStreamSynchronize"), 2u);
  EXPECT_EQ(fake_cudart_default_stream_ops(), 0u) << "an operation went on the legacy default stream";
}

// HAZ-55 (CUDA-SEM-03): one stream per handle, so a map waits only for its
// own texture's work. Checked by making the import reuse the first handle's
// stream (the count of live streams drops to one).
TEST_F(CudaD3d11, CUDA_SEM_03_each_handle_has_a_stream_of_its_own) { // HAZ-55
  SharedTexture a = make_texture(16, 8, DxgiFormat::R8G8B8A8_Unorm, 3);
  SharedTexture b = make_texture(16, 8, DxgiFormat::R8G8B8A8_Unorm, 4);
  Result<std::shared_ptr<CudaHandle>> first = import(a);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(fake_cudart_live("stream"), 1u);
  Result<std::shared_ptr<CudaHandle>> second = import(b);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(fake_cudart_live("stream"), 2u) << "two handles share a stream";
  first = Result<std::shared_ptr<CudaHandle>>(Error::invalid_operation("dropped"));
  EXPECT_EQ(fake_cudart_live("stream"), 1u) << "the second handle's stream went with the first";
  Result<CudaMap> map = (*second)->map();
  ASSERT_TRUE(map) << map.error().message();
  EXPECT_EQ(device_bytes(*map), read_back(*b.texture));
}

// HAZ-59 (CUDA-MAP-04): a release cannot return an error, so a failed write-
// back is a warning, and the stream is synchronised even after a failed copy.
// Checked by dropping the copy's warning and by returning before the
// synchronisation when the copy fails.
TEST_F(CudaD3d11, CUDA_MAP_04_a_failed_write_back_is_warned_and_still_synchronised) { // HAZ-59
  SharedTexture t = make_texture(64, 16);
  Result<std::shared_ptr<CudaHandle>> handle = import(t);
  ASSERT_TRUE(handle) << handle.error().message();
  const std::vector<std::byte> original = read_back(*t.texture);
  for (const char *failing : {"cudaMemcpy2DToArrayAsync", "cudaStreamSynchronize"}) {
    logtest::Warnings warnings;
    unsigned long syncs = 0;
    {
      Result<CudaMap> map = (*handle)->map_mut();
      ASSERT_TRUE(map) << map.error().message();
      ASSERT_EQ(fake_cudart_set_fault(failing, 999, 1, 0), 0) << failing;
      syncs = fake_cudart_calls("cudaStreamSynchronize");
    }
    fake_cudart_clear_faults();
    EXPECT_NE(warnings.text().find("cuda: "), std::string::npos) << failing << ": no warning";
    EXPECT_NE(warnings.text().find("D3D11 texture"), std::string::npos) << failing << ": " << warnings.text();
    EXPECT_EQ(fake_cudart_calls("cudaStreamSynchronize"), syncs + 1) << failing << ": the release did not synchronise";
  }
  EXPECT_EQ(read_back(*t.texture), original) << "a failed copy wrote the texture";
}

TEST_F(CudaD3d11, CUDA_SEM_04_truth_table_through_the_handle) {
  SharedTexture t = make_texture(32, 8);
  Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
  ASSERT_TRUE(handle) << handle.error().message();
  // (0, no wait): nothing recorded, nothing waited for.
  {
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    EXPECT_EQ(fake_cudart_calls("cudaWaitExternalSemaphoresAsync"), 0u);
  }
  // (v, wait queued): a value the fence reaches only later; the copy waits
  // for it on the stream and sees what was written before the signal.
  const std::uint64_t next = context_->last_signalled() + 1;
  recorded_->store(next);
  std::vector<std::byte> later(32 * 8 * 4, std::byte{0x5a});
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(device_->update_subresource(*t.texture, later.data(), 32 * 4));
    Result<std::uint64_t> signalled = context_->signal();
    ASSERT_TRUE(signalled);
    EXPECT_EQ(*signalled, next);
  });
  Result<CudaMap> map = (*handle)->map();
  producer.join();
  ASSERT_TRUE(map) << map.error().message();
  EXPECT_EQ(device_bytes(*map), later);
  EXPECT_EQ(fake_cudart_calls("cudaWaitExternalSemaphoresAsync"), 1u);
  map = Result<CudaMap>(Error::invalid_operation("dropped"));
  // (v, no wait): the wait cannot be queued → declined, nothing copied.
  fake_cudart_set_fault("cudaWaitExternalSemaphoresAsync", 999, 1, 0);
  const unsigned long copies = fake_cudart_calls("cudaMemcpy2DFromArrayAsync");
  Result<CudaMap> declined = (*handle)->map();
  ASSERT_FALSE(declined);
  EXPECT_EQ(declined.error().kind(), ErrorKind::WouldBlock);
  EXPECT_NE(declined.error().message().find("could not be queued"), std::string::npos) << declined.error().message();
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy2DFromArrayAsync"), copies);
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u);
}

// ---- Failure paths ------------------------------------------------------------

// CUDA-D3D-01: an import that fails at any call releases what it had made.
TEST_F(CudaD3d11, D3D_CUDA_01_a_fault_at_any_call_leaves_nothing_behind_but_what_cuda_refused_to_release) {
  std::vector<const char *> calls = {"cudaGetDeviceProperties",
                                     "cudaImportExternalMemory",
                                     "cudaExternalMemoryGetMappedMipmappedArray",
                                     "cudaGetMipmappedArrayLevel",
                                     "cudaStreamCreate",
                                     "cudaImportExternalSemaphore",
                                     "cudaMalloc",
                                     "cudaWaitExternalSemaphoresAsync",
                                     "cudaMemcpy2DFromArrayAsync",
                                     "cudaStreamSynchronize",
                                     "cudaMemcpy2DToArrayAsync",
                                     "cudaFree",
                                     "cudaStreamDestroy",
                                     "cudaFreeMipmappedArray",
                                     "cudaDestroyExternalMemory"};
  if (!cudatest::driver_api())
    calls.push_back("cudaSetDevice"); // the driver selects by context, no call
  for (const char *call : calls) {
    SCOPED_TRACE(call);
    d3d11_cuda_reset_process_state_for_tests();
    SharedTexture t = make_texture(48, 16);
    fake_cudart_reset_counters();
    ASSERT_EQ(fake_cudart_set_fault(call, 999, 1, 0), 0);
    {
      Result<std::uint64_t> value = context_->signal();
      ASSERT_TRUE(value);
      recorded_->store(*value);
      Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
      if (handle) {
        Result<CudaMap> read = (*handle)->map();
        Result<CudaMap> write = (*handle)->map_mut();
        (void)read;
        (void)write;
      }
    }
    EXPECT_GT(fake_cudart_calls(call), 0u) << "the fault was never reached: " << call_log();
    d3d11_cuda_reset_process_state_for_tests();
    fake_cudart_clear_faults();
    EXPECT_EQ(fake_cudart_violations(), 0u) << call_log();
    EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u);
    const std::string name = call;
    if (name == "cudaFree" || name == "cudaStreamDestroy" || name == "cudaDestroyExternalMemory") {
      // A release CUDA refused leaves that one object; the rest went.
      EXPECT_EQ(fake_cudart_live(nullptr), 1u) << call_log();
      fake_cudart_release_all();
    } else if (name == "cudaFreeMipmappedArray") {
      // The memory under an array that could not be freed stays with it.
      EXPECT_EQ(fake_cudart_live("mipmapped_array"), 1u) << call_log();
      EXPECT_EQ(fake_cudart_live("external_memory"), 1u) << call_log();
      EXPECT_EQ(fake_cudart_live(nullptr), 2u) << call_log();
      fake_cudart_release_all();
    } else {
      EXPECT_EQ(fake_cudart_live(nullptr), 0u) << call_log();
    }
  }
  recorded_->store(0);
}

TEST_F(CudaD3d11, CUDA_D3D_05_a_failed_level_or_stream_frees_the_array_before_the_memory) {
  for (const char *call : {"cudaGetMipmappedArrayLevel", "cudaStreamCreate"}) {
    SCOPED_TRACE(call);
    SharedTexture t = make_texture(128, 16); // maps at 1×: no rung destroyed before
    fake_cudart_reset_counters();
    fake_cudart_set_fault(call, 999, 1, 0);
    Result<std::shared_ptr<CudaHandle>> handle = import(t);
    EXPECT_FALSE(handle);
    const std::string log = call_log();
    const std::size_t freed = log.find("cudaFreeMipmappedArray");
    const std::size_t destroyed = log.find("cudaDestroyExternalMemory");
    ASSERT_NE(freed, std::string::npos) << log;
    ASSERT_NE(destroyed, std::string::npos) << log;
    EXPECT_LT(freed, destroyed) << log;
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << log;
  }
}

TEST_F(CudaD3d11, D3D_CUDA_01_cuda_on_linux_refuses_d3d11_handles_and_nothing_is_kept) {
  fake_cudart_set_accept_d3d11(0); // the fake's default, as CUDA on Linux
  SharedTexture t = make_texture(64, 64);
  Result<std::shared_ptr<CudaHandle>> handle = import(t, true);
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::Device) << handle.error().message();
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 3u);
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST_F(CudaD3d11, D3D_CUDA_01_without_a_runtime_or_its_d3d11_entry_points_the_import_declines) {
  SharedTexture t = make_texture(16, 16);
  const std::string missing[] = {"/nonexistent/libcudart.so"};
  std::shared_ptr<const CudaRuntime> none = cudatest::load_same_api(missing);
  D3d11TextureHandle request;
  request.nt_handle = t.handle.value();
  request.layout = t.layout;
  request.adapter = adapter_;
  Result<std::shared_ptr<CudaHandle>> handle = import_d3d11_texture(none, std::move(request));
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::NotImplemented);

  const std::string old_library[] = {cudatest::driver_api() ? FAKE_CUDA_DRIVER_NOSEM_PATH : FAKE_CUDART_NOSEM_PATH};
  std::shared_ptr<const CudaRuntime> old = cudatest::load_same_api(old_library);
  ASSERT_TRUE(old->available()) << old->reason();
  ASSERT_NE(old->missing_d3d11_symbol(), nullptr);
  D3d11TextureHandle again;
  again.nt_handle = t.handle.value();
  again.layout = t.layout;
  again.adapter = adapter_;
  fake_cudart_reset_counters();
  handle = import_d3d11_texture(old, std::move(again));
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(handle.error().message().find(old->missing_d3d11_symbol()), std::string::npos) << handle.error().message();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u) << call_log();
}

// ---- The memory's layout: rows at the staging pitch ------------------------------

// CUDA-HANDLE-08 (our deviation): the mapping is pitch × texture rows, row n
// at n × pitch.
TEST_F(CudaD3d11, a_pitched_import_lays_the_linear_buffer_out_at_the_row_pitch_both_ways) {
  // 33 RGBA texels: a 132-byte row in a 256-byte pitch.
  SharedTexture t = make_texture(33, 7, DxgiFormat::R8G8B8A8_Unorm, 5);
  D3d11TextureHandle request;
  request.nt_handle = t.handle.value();
  request.layout = t.layout;
  request.adapter = adapter_;
  request.recorded_write = recorded_;
  request.row_pitch = 256;
  Result<std::shared_ptr<CudaHandle>> handle = import_d3d11_texture(runtime_, std::move(request));
  ASSERT_TRUE(handle) << handle.error().message();
  EXPECT_EQ((*handle)->size(), 256u * 7u);
  const std::vector<std::byte> tight = read_back(*t.texture);
  std::vector<std::byte> pattern(256 * 7);
  {
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    ASSERT_EQ(map->length(), 256u * 7u);
    const std::vector<std::byte> got = device_bytes(*map);
    for (std::size_t y = 0; y < 7; ++y)
      ASSERT_EQ(0, std::memcmp(got.data() + y * 256, tight.data() + y * 132, 132)) << "row " << y;
  }
  for (std::size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<std::byte>((3 * i + 1) % 253);
  {
    Result<CudaMap> map = (*handle)->map_mut();
    ASSERT_TRUE(map) << map.error().message();
    ASSERT_TRUE(runtime_->memcpy_host_to_device(map->device_ptr(), pattern.data(), pattern.size()));
  }
  const std::vector<std::byte> written = read_back(*t.texture);
  for (std::size_t y = 0; y < 7; ++y)
    ASSERT_EQ(0, std::memcmp(written.data() + y * 132, pattern.data() + y * 256, 132)) << "row " << y;
}

TEST_F(CudaD3d11, a_row_pitch_below_the_texture_row_is_refused_before_cuda_is_asked) {
  SharedTexture t = make_texture(33, 7);
  D3d11TextureHandle request;
  request.nt_handle = t.handle.value();
  request.layout = t.layout;
  request.adapter = adapter_;
  request.row_pitch = 131;
  Result<std::shared_ptr<CudaHandle>> handle = import_d3d11_texture(runtime_, std::move(request));
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().kind(), ErrorKind::InvalidArgument) << handle.error().message();
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 0u) << call_log();
}

/// A storage's CPU map and its CUDA map agree byte for byte at every
/// offset: same pitch, same rows (pitch-padded RGBA, odd NV12).
/// CUDA-HANDLE-08: the handle is the storage's pitch × texture rows.
TEST_F(CudaD3d11, a_storage_cuda_map_has_the_cpu_maps_layout) {
  struct Case {
    PixelFormat format;
    std::uint32_t w, h;
  };
  for (Case c : {Case{PixelFormat::RGBA, 33, 17}, Case{PixelFormat::RGBA, 1, 1}, Case{PixelFormat::NV12, 33, 17},
                 Case{PixelFormat::NV12, 321, 241}, Case{PixelFormat::GRAY8, 641, 3}}) {
    SCOPED_TRACE(std::string(format_info(c.format).name) + " " + std::to_string(c.w) + "x" + std::to_string(c.h));
    d3d11_cuda_reset_process_state_for_tests();
    auto storage = D3d11TextureStorage::allocate_image(context_, c.format, DType::U8, c.w, c.h, CpuAccess::ReadWrite);
    ASSERT_TRUE(storage) << storage.error().message();
    const std::size_t pitch = (*storage)->backing_pitch(), rows = (*storage)->layout().texture_height;
    const std::size_t row = (*storage)->layout().tight_row_bytes();
    {
      auto w = (*storage)->map(CpuAccess::ReadWrite);
      ASSERT_TRUE(w) << w.error().message();
      for (std::size_t y = 0; y < rows; ++y)
        for (std::size_t x = 0; x < row; ++x)
          w->data()[y * pitch + x] = static_cast<std::byte>((11 * y + 5 * x + 3) & 0xff);
    }
    Result<std::shared_ptr<CudaHandle>> handle = import_cuda(**storage, runtime_);
    ASSERT_TRUE(handle) << handle.error().message();
    EXPECT_EQ((*handle)->size(), (*storage)->size_bytes());
    Result<CudaMap> map = (*handle)->map();
    ASSERT_TRUE(map) << map.error().message();
    const std::vector<std::byte> got = device_bytes(*map);
    auto cpu = (*storage)->map(CpuAccess::Read);
    ASSERT_TRUE(cpu) << cpu.error().message();
    for (std::size_t y = 0; y < rows; ++y)
      ASSERT_EQ(0, std::memcmp(got.data() + y * pitch, cpu->data() + y * pitch, row)) << "row " << y;
  }
}

} // namespace
