// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_layout.hpp>
#include <tensormem/storage.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace tensormem {

/// A Direct3D 11 texture as a Storage (spec §4). The allocation the CPU sees
/// is the backing: backing_pitch() × texture height bytes, where the backing
/// is the staging texture for Read/ReadWrite storages and a 64-byte aligned
/// host buffer otherwise. The storage's one MapState is the claim state of
/// that backing; every Tensor view shares it.
class TENSORMEM_API D3d11TextureStorage final : public Storage {
public:
  /// How long an import waits on the CPU for a producer's completion when it
  /// cannot queue the wait on the GPU (D3D-IMP-03).
  static constexpr std::chrono::milliseconds kImportWait{5000};

  /// A new shared texture for an image (D3D-ALLOC-01..04, D3D-LAYOUT-01..03).
  static Result<std::shared_ptr<D3d11TextureStorage>> allocate_image(PixelFormat format, DType dtype,
                                                                     std::uint32_t width, std::uint32_t height,
                                                                     CpuAccess access,
                                                                     std::shared_ptr<D3d11Context> context = nullptr);
  /// An existing texture of the context's device (D3D-EXT-01..04).
  static Result<std::shared_ptr<D3d11TextureStorage>> wrap_texture(std::shared_ptr<D3d11Texture> texture,
                                                                   PixelFormat format, DType dtype, std::uint32_t width,
                                                                   std::uint32_t height, CpuAccess access,
                                                                   std::shared_ptr<D3d11Context> context = nullptr);
  /// A producer's completion: its shared fence (borrowed) and the value it signalled.
  struct Completion {
    std::uintptr_t fence_handle = 0;
    std::uint64_t value = 0;
  };
  /// A texture another device shared (borrowed handle value), ordered behind
  /// `completion` where one is given (D3D-IMP-01..03).
  static Result<std::shared_ptr<D3d11TextureStorage>>
  open_shared_handle(std::uintptr_t handle, PixelFormat format, DType dtype, std::uint32_t width, std::uint32_t height,
                     CpuAccess access, std::optional<Completion> completion = std::nullopt,
                     std::shared_ptr<D3d11Context> context = nullptr);

  ~D3d11TextureStorage() override;

  StorageKind kind() const noexcept override { return StorageKind::D3d11; }
  /// Derived from the texture's address, never a handle value (D3D-IMP-02).
  BufferIdentity identity() const noexcept override;

  CpuAccess access() const noexcept { return access_; }
  const D3d11ImageLayout &layout() const noexcept { return layout_; }
  const std::shared_ptr<D3d11Texture> &texture() const noexcept { return texture_; }
  const std::shared_ptr<D3d11Context> &context() const noexcept { return context_; }
  bool has_staging() const noexcept { return staging_ != nullptr; }
  bool is_render_target() const noexcept { return (bind_flags_ & d3d11::kBindRenderTarget) != 0; }

  /// The row pitch of the backing every map and pin is laid out at.
  std::size_t backing_pitch() const noexcept { return pitch_; }
  /// The stride the image is addressed at: the backing pitch, or nullopt for
  /// an access-None storage which has no CPU backing (D3D-LAYOUT-06).
  std::optional<std::size_t> row_stride() const noexcept;
  std::size_t tight_bytes() const noexcept { return layout_.tight_bytes(); }
  std::size_t image_row_bytes() const noexcept { return layout_.image_row_bytes(); }
  /// Bytes of `shape_bytes` logical (tightly packed) bytes laid out at the
  /// backing pitch: full rows, the last one only as long as its data.
  Result<std::size_t> pitched_extent(std::size_t shape_bytes) const;
  /// Bytes from the start of a window to the end of its last pitched row.
  Result<std::size_t> addressable_span(std::size_t shape_bytes) const;

  /// A host address that outlives every map: the host buffer, never staging (D3D-SYNC-01/02).
  Result<HostPin> pin_host(CpuAccess access) override;
  /// Refreshes the host buffer from the texture (D3D-SYNC-03).
  Result<void> sync_for_cpu(CpuAccess access);
  /// Publishes CPU writes to the texture (D3D-SYNC-04).
  Result<void> sync_for_device(CpuAccess access);

  /// Records a fence value of the process fence a producer signalled after
  /// writing the texture; monotonic (D3D-FENCE-02).
  void set_gpu_write(std::uint64_t value) noexcept;
  std::uint64_t last_gpu_write() const noexcept { return gpu_write_->load(); }
  /// The counter itself, shared with a CUDA attachment.
  const std::shared_ptr<std::atomic<std::uint64_t>> &gpu_write_counter() const noexcept { return gpu_write_; }
  /// None while nothing was recorded; else a new handle of the process fence
  /// and the recorded value (D3D-FENCE-04).
  Result<std::optional<std::pair<D3d11NtHandle, std::uint64_t>>> d3d11_completion() const;

  /// A new duplicate of the texture's NT handle for the caller (D3D-FENCE-05).
  Result<D3d11NtHandle> shared_handle() const { return handle_.duplicate(); }
  std::uintptr_t shared_handle_value() const noexcept { return handle_.value(); }

  /// Debug text: device, texture, layout, pitch, access, backings (D3D-TRAIT-03).
  std::string describe() const;

  /// Counters tests read: staging copies queued by maps and syncs.
  std::uint64_t refresh_copies() const noexcept { return refresh_copies_.load(); }

private:
  struct Token {};
  struct HostBuffer;

public:
  D3d11TextureStorage(Token, std::size_t size, std::shared_ptr<D3d11Context> context,
                      std::shared_ptr<D3d11Texture> texture, D3d11NtHandle handle, D3d11ImageLayout layout,
                      std::uint32_t bind_flags, CpuAccess access, std::shared_ptr<D3d11Texture> staging,
                      std::size_t pitch) noexcept;

private:
  static Result<std::shared_ptr<D3d11TextureStorage>> finish(std::shared_ptr<D3d11Context> context,
                                                             std::shared_ptr<D3d11Texture> texture,
                                                             D3d11NtHandle handle, D3d11ImageLayout layout,
                                                             std::uint32_t bind_flags, CpuAccess access);

  Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept override;
  Result<void> backend_unmap() noexcept override;
  Result<void> order_backend(CpuAccess access, bool may_block) noexcept override;

  Result<HostBuffer *> host_buffer_locked();
  void order_behind_recorded_write() noexcept;
  Result<void> upload_host_locked();

  std::shared_ptr<D3d11Context> context_;
  std::shared_ptr<D3d11Texture> texture_;
  D3d11NtHandle handle_;
  D3d11ImageLayout layout_;
  std::uint32_t bind_flags_;
  CpuAccess access_;
  std::shared_ptr<D3d11Texture> staging_;
  std::size_t pitch_;

  // Guards the backings and the device calls on them; held by backend
  // map/unmap and by the syncs so a sync never copies into a staging
  // texture a map holds (HAZ-32).
  mutable std::mutex backing_mu_;
  std::shared_ptr<HostBuffer> host_;
  bool refresh_pending_ = false;
  bool wrote_through_host_ = false;
  bool next_may_block_ = true;
  CpuAccess mapped_access_ = CpuAccess::None;
  bool mapped_staging_ = false;
  std::shared_ptr<std::atomic<std::uint64_t>> gpu_write_;
  std::shared_ptr<D3d11Fence> producer_fence_; ///< the queued import wait refers to it
  std::atomic<std::uint64_t> refresh_copies_{0};
};

} // namespace tensormem
