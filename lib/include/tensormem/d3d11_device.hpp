// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/d3d11_layout.hpp>
#include <tensormem/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

/// The narrow Direct3D 11 port the texture storage is written against
/// (DESIGN §3: two devices). Two implementations: the real COM device
/// (Windows only, d3d11_win_device.cpp) and SoftwareD3d11Device
/// (d3d11_software_device.hpp), a deterministic reference device that runs
/// everywhere and is faithful where ordering bugs hide: copies and signals
/// run only on Flush, a blocking Map or a fence wait.
namespace tensormem {

/// Windows SDK values.
namespace d3d11 {
inline constexpr std::uint32_t kBindShaderResource = 0x8;
inline constexpr std::uint32_t kBindRenderTarget = 0x20;
inline constexpr std::uint32_t kMiscShared = 0x2;
inline constexpr std::uint32_t kMiscSharedNtHandle = 0x800;
inline constexpr std::uint32_t kUsageDefault = 0;
inline constexpr std::uint32_t kUsageStaging = 3;
inline constexpr std::uint32_t kCpuAccessWrite = 0x10000;
inline constexpr std::uint32_t kCpuAccessRead = 0x20000;
inline constexpr std::uint32_t kMapRead = 1;
inline constexpr std::uint32_t kMapReadWrite = 3;
inline constexpr std::uint32_t kMapFlagDoNotWait = 0x100000;
inline constexpr std::uint32_t kSharedResourceRead = 0x80000000u;
inline constexpr std::uint32_t kSharedResourceWrite = 0x1;
inline constexpr std::uint32_t kErrorWasStillDrawing = 0x887A000Au;
inline constexpr std::uint32_t kFenceFlagShared = 0x2;
} // namespace d3d11

/// The fields of D3D11_TEXTURE2D_DESC the storage reads and writes.
struct D3d11TextureDesc {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t mip_levels = 1;
  std::uint32_t array_size = 1;
  DxgiFormat format = DxgiFormat::Unknown;
  std::uint32_t sample_count = 1;
  std::uint32_t sample_quality = 0;
  std::uint32_t usage = d3d11::kUsageDefault;
  std::uint32_t bind_flags = 0;
  std::uint32_t cpu_access_flags = 0;
  std::uint32_t misc_flags = 0;
};

/// What each device offers; the storage takes its degraded paths where
/// one is missing.
struct D3d11Capabilities {
  bool device1 = true;      ///< ID3D11Device1: opening shared NT handles
  bool device5 = true;      ///< ID3D11Device5: fences, opening shared fences
  bool context4 = true;     ///< ID3D11DeviceContext4: queued Signal / Wait
  bool shared_fence = true; ///< a fence can be created with FENCE_FLAG_SHARED
  /// A texture can be created with MISC_SHARED_NTHANDLE and gives an NT
  /// handle (IDXGIResource1::CreateSharedHandle); Wine 8 has none.
  bool shared_nt_handles = true;
};

/// The adapter's LUID: what CUDA matches a device against.
struct D3d11AdapterId {
  std::uint32_t low = 0;
  std::int32_t high = 0;
  friend constexpr bool operator==(const D3d11AdapterId &, const D3d11AdapterId &) = default;
};

/// Closes and duplicates the NT handles of one kind of device (Win32
/// CloseHandle/DuplicateHandle; the software device's process-wide table).
class TENSORMEM_API D3d11HandleTable {
public:
  virtual void close(std::uintptr_t value) noexcept = 0;
  virtual Result<std::uintptr_t> duplicate(std::uintptr_t value) = 0;

protected:
  ~D3d11HandleTable() = default;
};

/// An owned NT handle (a shared texture or a shared fence). Move-only; closes
/// on destruction. value() is borrowed and valid while this object lives.
class TENSORMEM_API D3d11NtHandle {
public:
  D3d11NtHandle() = default;
  D3d11NtHandle(D3d11HandleTable *table, std::uintptr_t value) noexcept : table_(table), value_(value) {}
  D3d11NtHandle(D3d11NtHandle &&other) noexcept;
  D3d11NtHandle &operator=(D3d11NtHandle &&other) noexcept;
  D3d11NtHandle(const D3d11NtHandle &) = delete;
  D3d11NtHandle &operator=(const D3d11NtHandle &) = delete;
  ~D3d11NtHandle();

  explicit operator bool() const noexcept { return value_ != 0; }
  std::uintptr_t value() const noexcept { return value_; }
  /// Gives the value up without closing it.
  std::uintptr_t release() noexcept;
  /// A new handle of the same object (IoError when the table refuses).
  Result<D3d11NtHandle> duplicate() const;
  D3d11HandleTable *table() const noexcept { return table_; }

private:
  D3d11HandleTable *table_ = nullptr;
  std::uintptr_t value_ = 0;
};

/// One COM reference to an ID3D11Texture2D (or the software device's
/// texture); dropping the last shared_ptr releases it.
class TENSORMEM_API D3d11Texture {
public:
  virtual ~D3d11Texture();
  virtual D3d11TextureDesc desc() const noexcept = 0;
  /// The object's address: the identity key (never a handle value).
  virtual std::uintptr_t address() const noexcept = 0;
  /// The identity of the device that created or opened it (compare with
  /// D3d11Device::identity()).
  virtual const void *device_identity() const noexcept = 0;
};

/// One ID3D11Fence (or the software device's fence).
class TENSORMEM_API D3d11Fence {
public:
  virtual ~D3d11Fence();
  virtual std::uint64_t completed_value() const noexcept = 0;
  virtual bool shared() const noexcept = 0;
  virtual std::uintptr_t address() const noexcept = 0;
  /// Blocks until completed_value() ≥ value, at most `timeout`; a timeout
  /// is WouldBlock naming the value (as Timeline::wait_cpu). Never hangs.
  virtual Result<void> wait_cpu(std::uint64_t value, std::chrono::milliseconds timeout) = 0;
  /// An NT handle with full access (InvalidOperation for an unshared fence).
  virtual Result<D3d11NtHandle> create_shared_handle() = 0;
};

enum class D3d11MapType : std::uint32_t { Read = d3d11::kMapRead, ReadWrite = d3d11::kMapReadWrite };

struct D3d11Mapped {
  std::byte *data = nullptr;
  std::uint32_t row_pitch = 0;
  std::uint32_t depth_pitch = 0;
};

/// The device and its immediate context. Every call is one atomic step
/// under the device's own multithread protection; callers never hold a
/// device lock across two calls. Calls that D3D11 itself cannot fail return
/// Result<void> anyway so that the software device can refuse what the real
/// one silently drops (a copy into a mapped staging texture) and count it.
class TENSORMEM_API D3d11Device {
public:
  virtual ~D3d11Device();

  /// "software", "hardware" or "warp".
  virtual const char *name() const noexcept = 0;
  virtual D3d11Capabilities capabilities() const noexcept = 0;
  virtual D3d11AdapterId adapter() const noexcept = 0;
  /// Compared with D3d11Texture::device_identity().
  virtual const void *identity() const noexcept = 0;
  virtual D3d11HandleTable &handles() noexcept = 0;

  /// A texture with `desc`; a creation that succeeds without a texture is IoError.
  virtual Result<std::shared_ptr<D3d11Texture>> create_texture(const D3d11TextureDesc &desc) = 0;
  /// Map subresource 0 of a staging texture. do_not_wait: a texture that a
  /// queued copy still writes answers WouldBlock (DXGI_ERROR_WAS_STILL_DRAWING)
  /// instead of waiting; a blocking map first runs what it waits for.
  virtual Result<D3d11Mapped> map(D3d11Texture &texture, D3d11MapType type, bool do_not_wait) = 0;
  virtual void unmap(D3d11Texture &texture) noexcept = 0;
  /// Queued on the immediate context.
  virtual Result<void> copy_resource(D3d11Texture &dst, D3d11Texture &src) = 0;
  /// Queued upload of a whole subresource from `data` at `row_pitch`.
  virtual Result<void> update_subresource(D3d11Texture &dst, const std::byte *data, std::uint32_t row_pitch) = 0;
  /// Submits what is queued.
  virtual void flush() noexcept = 0;

  /// IDXGIResource1::CreateSharedHandle (read + write); InvalidArgument for
  /// a texture made without MISC_SHARED_NTHANDLE.
  virtual Result<D3d11NtHandle> create_shared_handle(D3d11Texture &texture) = 0;
  /// ID3D11Device1::OpenSharedResource1; NotImplemented without device1.
  virtual Result<std::shared_ptr<D3d11Texture>> open_shared_texture(std::uintptr_t handle) = 0;

  /// ID3D11Device5::CreateFence; NotImplemented without device5, and a
  /// shared one without shared_fence.
  virtual Result<std::shared_ptr<D3d11Fence>> create_fence(std::uint64_t initial, bool shared) = 0;
  /// ID3D11Device5::OpenSharedFence.
  virtual Result<std::shared_ptr<D3d11Fence>> open_shared_fence(std::uintptr_t handle) = 0;
  /// ID3D11DeviceContext4::Signal / Wait: queued; NotImplemented without context4.
  virtual Result<void> signal(D3d11Fence &fence, std::uint64_t value) = 0;
  virtual Result<void> wait_gpu(D3d11Fence &fence, std::uint64_t value) = 0;
};

/// Options of the reference device (see d3d11_software_device.hpp).
struct SoftwareD3d11Options {
  /// Staging row pitches are rounded up to this (a power of two).
  std::uint32_t pitch_alignment = 256;
  D3d11Capabilities capabilities{};
  D3d11AdapterId adapter{0x50465753u, 0};
};

/// The reference device: everywhere, deterministic.
TENSORMEM_API Result<std::shared_ptr<D3d11Device>>
create_software_d3d11_device(const SoftwareD3d11Options &options = {});

enum class D3d11DriverType : std::uint8_t { Hardware, Warp };
/// The real device (Windows only; NotImplemented elsewhere). Hardware falls
/// back to WARP where no hardware adapter answers.
TENSORMEM_API Result<std::shared_ptr<D3d11Device>> create_windows_d3d11_device(D3d11DriverType type);

/// The process device with its shared fence and the fence's counter: what
/// every texture tensor of the process records completions on (spec §4.12).
class TENSORMEM_API D3d11Context {
public:
  /// Wraps `device`; creates the process fence (shared where the device can,
  /// else private, else none).
  static Result<std::shared_ptr<D3d11Context>> create(std::shared_ptr<D3d11Device> device);
  /// The process context: on Windows the real device (hardware, else WARP);
  /// TENSORMEM_D3D11_DEVICE=software selects the reference device anywhere,
  /// =hardware|warp the real one. Elsewhere, without that switch,
  /// NotImplemented saying how to ask for the reference device. Created once.
  static Result<std::shared_ptr<D3d11Context>> process();

  D3d11Device &device() const noexcept { return *device_; }
  const std::shared_ptr<D3d11Device> &device_ptr() const noexcept { return device_; }
  /// Null where the device has no fences.
  D3d11Fence *fence() const noexcept { return fence_.get(); }
  bool fence_shared() const noexcept { return fence_ && fence_->shared(); }
  /// Queues a signal of the next value on the process fence and flushes;
  /// returns the value (0 when there is no fence).
  Result<std::uint64_t> signal();
  /// For a producer on another device (a decoder's, a second context) that
  /// opened the process fence (duplicate_fence_handle(), open_shared_fence):
  /// hands out the next value and queues its Signal on `producer`'s context
  /// on `fence`, the producer's object of the process fence. Nothing is
  /// flushed: the value completes when the producer submits its work, which
  /// is what a map waits for once the value is recorded (set_gpu_write).
  /// InvalidOperation without a shared process fence.
  Result<std::uint64_t> signal_on(D3d11Device &producer, D3d11Fence &fence);
  /// The newest value signal() or signal_on() handed out.
  std::uint64_t last_signalled() const noexcept;
  /// A new handle of the shared process fence for the caller to own.
  Result<D3d11NtHandle> duplicate_fence_handle() const;

private:
  struct Token {};

public:
  D3d11Context(Token, std::shared_ptr<D3d11Device> device, std::shared_ptr<D3d11Fence> fence,
               D3d11NtHandle fence_handle) noexcept;
  ~D3d11Context();

private:
  std::shared_ptr<D3d11Device> device_;
  std::shared_ptr<D3d11Fence> fence_;
  D3d11NtHandle fence_handle_;
  struct Counter;
  std::unique_ptr<Counter> counter_;
};

} // namespace tensormem
