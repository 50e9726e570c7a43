// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/d3d11_device.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace tensormem {

/// The reference Direct3D 11 device: deterministic, on every platform, and
/// as strict as D3D11 where ordering bugs hide (DESIGN §3).
///
/// - Default textures hold "video memory" at a tight row pitch; staging
///   textures at a pitch rounded up to `pitch_alignment`, so padded-pitch
///   logic is exercised.
/// - The immediate context is a queue: copies, uploads, signals and GPU
///   waits run in order only on flush() or a blocking map() of a texture a
///   queued command writes. A reader that skips ordering reads stale bytes.
///   A queued GPU wait on a value not reached stops the queue there until
///   the fence reaches it.
/// - Work "takes time": a texture written by work submitted at a flush
///   answers `still_drawing_polls` DO_NOT_WAIT maps with WouldBlock (as
///   DXGI_ERROR_WAS_STILL_DRAWING) before it maps; a blocking map waits.
/// - Copying into a mapped texture is refused and counted as a violation
///   (D3D11 drops it silently; a test should see it).
/// - Shared NT handles live in one process-wide table whose values are
///   reused lowest-first once closed, as Windows reuses handle values; a
///   texture or fence opened on a second software device shares the first
///   one's memory or timeline, and sees the first device's queued work only
///   after that device flushes.
/// - A blocking map whose copy sits behind a GPU wait that never completes
///   fails after `hang_timeout` (real hardware would hang) with an error
///   naming the fence value.
/// - Capability switches turn off ID3D11Device1 / Device5 / Context4 and
///   shared fences for the degraded paths.
class TENSORMEM_API SoftwareD3d11Device final : public D3d11Device {
public:
  struct Options : SoftwareD3d11Options {
    /// DO_NOT_WAIT maps answered "still drawing" after each submission.
    std::uint32_t still_drawing_polls = 1;
    /// How long a blocking map waits for a queued GPU wait before failing.
    std::chrono::milliseconds hang_timeout{5000};
  };

  static Result<std::shared_ptr<SoftwareD3d11Device>> create(const Options &options);
  static Result<std::shared_ptr<SoftwareD3d11Device>> create() { return create(Options{}); }
  ~SoftwareD3d11Device() override;

  const char *name() const noexcept override { return "software"; }
  D3d11Capabilities capabilities() const noexcept override { return options_.capabilities; }
  D3d11AdapterId adapter() const noexcept override { return options_.adapter; }
  const void *identity() const noexcept override { return this; }
  D3d11HandleTable &handles() noexcept override;

  Result<std::shared_ptr<D3d11Texture>> create_texture(const D3d11TextureDesc &desc) override;
  Result<D3d11Mapped> map(D3d11Texture &texture, D3d11MapType type, bool do_not_wait) override;
  void unmap(D3d11Texture &texture) noexcept override;
  Result<void> copy_resource(D3d11Texture &dst, D3d11Texture &src) override;
  Result<void> update_subresource(D3d11Texture &dst, const std::byte *data, std::uint32_t row_pitch) override;
  void flush() noexcept override;
  Result<D3d11NtHandle> create_shared_handle(D3d11Texture &texture) override;
  Result<std::shared_ptr<D3d11Texture>> open_shared_texture(std::uintptr_t handle) override;
  Result<std::shared_ptr<D3d11Fence>> create_fence(std::uint64_t initial, bool shared) override;
  Result<std::shared_ptr<D3d11Fence>> open_shared_fence(std::uintptr_t handle) override;
  Result<void> signal(D3d11Fence &fence, std::uint64_t value) override;
  Result<void> wait_gpu(D3d11Fence &fence, std::uint64_t value) override;

  // ---- what tests look at ----
  /// Commands queued and not yet run.
  std::size_t pending_commands() const;
  /// Commands D3D11 would have dropped or rejected (a copy into a mapped texture).
  std::uint64_t violations() const;
  /// Copies (CopyResource) run so far.
  std::uint64_t copies_run() const;
  /// Open entries in the process-wide handle table (every kind, every device).
  static std::size_t open_handles();

  /// The GPU-side bytes of a default texture (what a fake CUDA reads and writes).
  struct VideoMemory {
    std::byte *data = nullptr;
    std::uint32_t row_pitch = 0;
    std::uint32_t rows = 0;
    D3d11TextureDesc desc;
  };
  static std::optional<VideoMemory> video_memory(D3d11Texture &texture);
  /// A new object of the caller's over what a shared handle refers to (null
  /// for none of that kind); the handle's memory or fence state stays shared.
  static std::unique_ptr<D3d11Texture> lookup_shared_texture(std::uintptr_t handle);
  static std::unique_ptr<D3d11Fence> lookup_shared_fence(std::uintptr_t handle);

  struct Impl;

private:
  struct Token {};

public:
  SoftwareD3d11Device(Token, const Options &options);

private:
  Options options_;
  std::unique_ptr<Impl> impl_;
};

} // namespace tensormem

/// For a dlopen'ed fake CUDA library, which cannot link C++: the video
/// memory behind a shared texture handle (0 on success), and the completed
/// value of a shared fence handle (0 on success).
extern "C" TENSORMEM_API int tm_software_d3d11_video_memory(std::uintptr_t handle, void **data,
                                                            std::uint32_t *row_pitch, std::uint32_t *rows);
extern "C" TENSORMEM_API int tm_software_d3d11_fence_value(std::uintptr_t handle, std::uint64_t *value);
