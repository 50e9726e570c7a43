// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_layout.hpp>
#include <tensormem/storage.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace tensormem {

/// A tensor's texture on the process D3D11 device (spec §4). GPU consumers
/// use the texture; the CPU reaches it through one backing:
///
/// - a **staging texture** for access kinds that read (Read, ReadWrite): a
///   map copies texture → staging (behind a GPU wait for the recorded
///   write) and maps it; a writer's last unmap copies staging → texture and
///   flushes;
/// - a persistent, 64-byte-aligned **host buffer** otherwise (Write): a
///   writer's last unmap uploads it and flushes; a read map publishes
///   nothing.
///
/// The storage's size is the backing: pitch × texture rows, the pitch being
/// the staging row pitch the driver chose (learned once by a map) or, with
/// no staging, the texture's tight row. Maps go through the storage's one
/// MapState, shared by every view. Host pins always address the host buffer,
/// never the staging mapping.
class TENSORMEM_API D3d11TextureStorage final : public Storage {
public:
  /// A producer's completion to order an opened texture behind.
  struct Completion {
    std::uintptr_t fence_handle = 0; ///< borrowed shared fence handle
    std::uint64_t value = 0;
  };

  /// The bounded CPU wait on a producer fence when no GPU wait
  /// can be queued.
  static constexpr std::chrono::milliseconds kImportWait{5000};
  /// Alignment of the host buffer's base.
  static constexpr std::size_t kHostPinAlign = 64;

  /// A new texture with the image's layout, semi-planar formats widened to
  /// the driver's staging pitch. On a
  /// device without shared NT handles (capabilities().shared_nt_handles
  /// false, Wine 8) the texture is made unshared and has no handle: the
  /// operations that need one (export_handle, shared_handle, d3d11_completion)
  /// are NotImplemented naming the capability.
  static Result<std::shared_ptr<D3d11TextureStorage>> allocate_image(std::shared_ptr<D3d11Context> context,
                                                                     PixelFormat format, DType dtype,
                                                                     std::uint32_t width, std::uint32_t height,
                                                                     CpuAccess access);
  /// Wraps a texture of the process device after checking it field by field
  /// the storage takes its own reference. A device without
  /// shared NT handles wraps the texture without one.
  static Result<std::shared_ptr<D3d11TextureStorage>> wrap_texture(std::shared_ptr<D3d11Context> context,
                                                                   std::shared_ptr<D3d11Texture> texture,
                                                                   PixelFormat format, DType dtype, std::uint32_t width,
                                                                   std::uint32_t height, CpuAccess access);
  /// Opens a shared NT handle (borrowed) and, with a completion, orders
  /// behind the producer; NotImplemented on a device
  /// without shared NT handles.
  static Result<std::shared_ptr<D3d11TextureStorage>>
  open_shared_handle(std::shared_ptr<D3d11Context> context, std::uintptr_t handle, PixelFormat format, DType dtype,
                     std::uint32_t width, std::uint32_t height, CpuAccess access,
                     std::optional<Completion> completion = std::nullopt);
  ~D3d11TextureStorage() override;

  StorageKind kind() const noexcept override { return StorageKind::D3d11; }
  /// The texture object's address, never a handle value.
  BufferIdentity identity() const noexcept override;
  /// The texture's NT handle (borrowed) with a fresh duplicate of the
  /// process fence handle where the fence is shared, sharing the
  /// recorded-write counter (D3d11TextureHandle). NotImplemented
  /// on a device without shared NT handles.
  Result<StorageHandle> export_handle() override;

  /// The host buffer (created on first use), never the staging mapping;
  /// refused for access None. Writable pins make the host
  /// buffer what sync_for_device publishes.
  Result<HostPin> pin_host(CpuAccess access) override;
  /// A write-only map must cover every row from offset 0, because its
  /// release publishes the whole backing.
  Result<void> check_cpu_window(CpuAccess access, std::size_t offset, std::size_t bytes) const override;
  /// Refreshes the host buffer from the texture.
  Result<void> sync_for_cpu(CpuAccess access);
  /// Publishes CPU writes to the texture.
  Result<void> sync_for_device(CpuAccess access);

  /// Records a value of the process fence a producer signalled after writing
  /// the texture; never moves back. A value above the fence's
  /// newest signalled one is refused (InvalidArgument, nothing recorded):
  /// nothing would ever reach it (as for every timeline kind).
  Result<void> set_gpu_write(std::uint64_t value);
  std::uint64_t last_gpu_write() const noexcept { return gpu_write_->load(); }
  /// The counter itself, shared with an exported handle's importer.
  std::shared_ptr<std::atomic<std::uint64_t>> gpu_write_counter() const noexcept { return gpu_write_; }
  /// A new handle of the process fence and the recorded value; nullopt when
  /// nothing is recorded.
  Result<std::optional<std::pair<D3d11NtHandle, std::uint64_t>>> d3d11_completion() const;

  /// A new duplicate of the texture's NT handle for the caller.
  Result<D3d11NtHandle> shared_handle() const;
  /// The texture's own handle (borrowed); 0 on a device without shared NT handles.
  std::uintptr_t shared_handle_value() const noexcept { return handle_.value(); }
  bool has_shared_handle() const noexcept { return static_cast<bool>(handle_); }
  const std::shared_ptr<D3d11Texture> &texture() const noexcept { return texture_; }
  const D3d11ImageLayout &layout() const noexcept { return layout_; }
  const std::shared_ptr<D3d11Context> &context() const noexcept { return context_; }
  CpuAccess access() const noexcept { return access_; }
  bool is_render_target() const noexcept { return (bind_flags_ & d3d11::kBindRenderTarget) != 0; }
  bool has_staging() const noexcept { return staging_ != nullptr; }

  /// The pitch every map and pin is laid out at.
  std::size_t backing_pitch() const noexcept { return pitch_; }
  /// The stride to report: the staging pitch, or for semi-planar formats the
  /// texture's row; nullopt for other formats without staging.
  std::optional<std::size_t> row_stride() const noexcept;
  /// Image row bytes × texture rows: what a logical shape is measured against.
  std::size_t tight_bytes() const noexcept;
  /// The extent of a shape: ceil(shape bytes ÷ image row) whole pitched rows.
  Result<std::size_t> pitched_extent(std::size_t shape_bytes) const;

  std::string describe() const;

  struct Token {};
  D3d11TextureStorage(Token, std::shared_ptr<D3d11Context> context, std::shared_ptr<D3d11Texture> texture,
                      D3d11NtHandle handle, D3d11ImageLayout layout, CpuAccess access, std::uint32_t bind_flags,
                      std::shared_ptr<D3d11Texture> staging, std::size_t pitch) noexcept;

private:
  static Result<std::shared_ptr<D3d11TextureStorage>> finish(std::shared_ptr<D3d11Context> context,
                                                             std::shared_ptr<D3d11Texture> texture,
                                                             D3d11NtHandle handle, D3d11ImageLayout layout,
                                                             CpuAccess access, std::uint32_t bind_flags);
  Result<void> order_backend_map(CpuAccess access, bool may_block) noexcept override;
  Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept override;
  Result<void> backend_unmap() noexcept override;
  /// Queues a GPU wait for the recorded write where that is safe.
  void wait_for_recorded_write() noexcept;
  Result<std::byte *> host_buffer();
  Result<void> refresh_staging_locked(bool flush_now);

  std::shared_ptr<D3d11Context> context_;
  std::shared_ptr<D3d11Texture> texture_;
  D3d11NtHandle handle_;
  D3d11ImageLayout layout_;
  CpuAccess access_;
  std::uint32_t bind_flags_;
  std::shared_ptr<D3d11Texture> staging_; // only for access kinds that read
  std::size_t pitch_;
  std::shared_ptr<std::atomic<std::uint64_t>> gpu_write_;
  std::shared_ptr<D3d11Fence> producer_fence_; // kept while a queued wait refers to it

  std::mutex mu_;                // staging and host buffer; never held across a MapState wait
  bool refresh_pending_ = false; // a copy texture → staging is queued and not yet mapped
  bool map_blocks_ = true;       // the map in progress may block (order_backend_map)
  CpuAccess mapped_access_ = CpuAccess::None;
  bool mapped_staging_ = false;
  std::unique_ptr<std::byte[]> host_alloc_; // over-sized by kHostPinAlign - 1
  std::byte *host_ = nullptr;               // the aligned base, computed once
  bool wrote_through_host_ = false;         // sticky
};

} // namespace tensormem
