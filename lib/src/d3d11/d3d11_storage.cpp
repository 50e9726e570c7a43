// SPDX-License-Identifier: Apache-2.0
// The D3D11 texture storage (spec §4): construction and validation, the two
// CPU backings, maps through the shared MapState, host pins with explicit
// syncs, and ordering behind recorded GPU writes.
#include <tensormem/d3d11_storage.hpp>
#include <tensormem/log.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace tensormem {

namespace {

std::string layout_text(PixelFormat format, DType dtype, std::uint32_t width, std::uint32_t height) {
  return std::string(format_info(format).name) + "/" + dtype_name(dtype) + " " + std::to_string(width) + "x" +
         std::to_string(height);
}

/// The description of a texture tensor's texture or of its staging texture;
/// `shareable` false on a device without shared NT handles (the texture is
/// then unshared, see docs/seed-deviations.md).
D3d11TextureDesc texture_desc(const D3d11ImageLayout &layout, bool staging, bool shareable = true) {
  D3d11TextureDesc d;
  d.width = layout.texture_width;
  d.height = layout.texture_height;
  d.format = layout.dxgi_format;
  if (staging) {
    d.usage = d3d11::kUsageStaging;
    d.cpu_access_flags = d3d11::kCpuAccessRead | d3d11::kCpuAccessWrite;
  } else {
    d.usage = d3d11::kUsageDefault;
    d.bind_flags = d3d11::kBindRenderTarget | d3d11::kBindShaderResource;
    if (shareable)
      d.misc_flags = d3d11::kMiscShared | d3d11::kMiscSharedNtHandle;
  }
  return d;
}

/// \brief A staging texture of `layout` and the row pitch the driver gave it,
/// learned by one map.
Result<std::pair<std::shared_ptr<D3d11Texture>, std::size_t>> staging_with_pitch(D3d11Device &device,
                                                                                 const D3d11ImageLayout &layout) {
  auto staging = device.create_texture(texture_desc(layout, true));
  if (!staging)
    return staging.error();
  auto mapped = device.map(**staging, D3d11MapType::Read, false);
  if (!mapped)
    return mapped.error();
  const std::size_t pitch = mapped->row_pitch;
  device.unmap(**staging);
  return std::make_pair(std::move(*staging), pitch);
}

std::uint32_t even(std::size_t v) { return static_cast<std::uint32_t>((v + 1) & ~std::size_t{1}); }

/// \brief A semi-planar layout as wide as the pitch a CPU map
/// sees, so one producer row is one texture row.
Result<D3d11ImageLayout> widen_to_pitch(D3d11Device &device, const D3d11ImageLayout &layout) {
  auto probe = staging_with_pitch(device, layout);
  if (!probe)
    return probe.error();
  if (probe->second <= layout.tight_row_bytes())
    return layout;
  const D3d11ImageLayout widened = layout.widened_to(even(probe->second));
  auto second = staging_with_pitch(device, widened);
  if (!second)
    return second.error();
  if (second->second != widened.tight_row_bytes())
    return Error::invalid_operation("D3D11 semi-planar layout: a " + std::to_string(widened.texture_width) +
                                    "-texel-wide texture has a staging pitch of " + std::to_string(second->second) +
                                    " bytes; no texture width equals the CPU-visible pitch");
  return widened;
}

/// \brief What an operation that needs the texture's NT handle answers on a
/// device that cannot make one.
Error no_nt_handle(const char *operation) {
  return Error::not_implemented(std::string(operation) +
                                ": the D3D11 device offers no shared NT handles (capability shared_nt_handles; "
                                "Wine 8 has none), so this texture has no handle to give");
}

Error refuse(const char *field, const std::string &found, const std::string &required) {
  return Error::invalid_argument(std::string("external D3D11 texture: ") + field + " is " + found + ", required " +
                                 required);
}

/// \brief `texture` checked against the layout of the image,
/// field by field in the spec's order; the (possibly widened) layout.
Result<D3d11ImageLayout> check_external(D3d11Context &ctx, D3d11Texture &texture, PixelFormat format, DType dtype,
                                        std::uint32_t width, std::uint32_t height) {
  std::optional<D3d11ImageLayout> layout = image_d3d11_layout(format, dtype, width, height);
  if (!layout)
    return Error::invalid_argument("external D3D11 texture: no zero-copy D3D11 texture layout exists for " +
                                   layout_text(format, dtype, width, height));
  const D3d11TextureDesc d = texture.desc();
  if (d.usage != d3d11::kUsageDefault)
    return refuse("usage", std::to_string(d.usage), "DEFAULT (0)");
  if (!(d.bind_flags & d3d11::kBindShaderResource))
    return refuse("bind flags", std::to_string(d.bind_flags), "to include SHADER_RESOURCE (0x8)");
  if (d.mip_levels != 1)
    return refuse("mip levels", std::to_string(d.mip_levels), "1");
  if (d.array_size != 1)
    return refuse("array size", std::to_string(d.array_size), "1");
  if (d.sample_count != 1)
    return refuse("sample count", std::to_string(d.sample_count), "1 (no multisampling)");
  if (d.format != layout->dxgi_format)
    return refuse("format", dxgi_format_name(d.format), dxgi_format_name(layout->dxgi_format));
  if (d.height != layout->texture_height)
    return refuse("height", std::to_string(d.height), std::to_string(layout->texture_height));
  if (layout->semi_planar()) {
    if (d.width < layout->texture_width)
      return refuse("width", std::to_string(d.width), "at least " + std::to_string(layout->texture_width));
    if (d.width % 2 != 0)
      return refuse("width", std::to_string(d.width), "even (a row holds whole chroma pairs)");
    const D3d11ImageLayout wrapped = layout->widened_to(d.width);
    auto probe = staging_with_pitch(ctx.device(), wrapped);
    if (!probe)
      return probe.error();
    if (probe->second != wrapped.tight_row_bytes())
      return refuse("width", std::to_string(d.width),
                    "equal to its driver row pitch (" + std::to_string(probe->second) +
                        " bytes): maps are laid out at the pitch");
    *layout = wrapped;
  } else if (d.width != layout->texture_width) {
    return refuse("width", std::to_string(d.width), std::to_string(layout->texture_width));
  }
  if (texture.device_identity() != ctx.device().identity())
    return Error::invalid_argument("external D3D11 texture: it belongs to another device than the process device");
  return *layout;
}

} // namespace

D3d11TextureStorage::D3d11TextureStorage(Token, std::shared_ptr<D3d11Context> context,
                                         std::shared_ptr<D3d11Texture> texture, D3d11NtHandle handle,
                                         D3d11ImageLayout layout, CpuAccess access, std::uint32_t bind_flags,
                                         std::shared_ptr<D3d11Texture> staging, std::size_t pitch) noexcept
    : Storage(pitch * layout.texture_height), context_(std::move(context)), texture_(std::move(texture)),
      handle_(std::move(handle)), layout_(layout), access_(access), bind_flags_(bind_flags),
      staging_(std::move(staging)), pitch_(pitch), gpu_write_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

D3d11TextureStorage::~D3d11TextureStorage() {
  run_destroy_hooks();
  if (mapped_staging_ && staging_)
    context_->device().unmap(*staging_);
}

/// \brief The backings every constructor ends with.
Result<std::shared_ptr<D3d11TextureStorage>> D3d11TextureStorage::finish(std::shared_ptr<D3d11Context> context,
                                                                         std::shared_ptr<D3d11Texture> texture,
                                                                         D3d11NtHandle handle, D3d11ImageLayout layout,
                                                                         CpuAccess access, std::uint32_t bind_flags) {
  std::shared_ptr<D3d11Texture> staging;
  std::size_t pitch = layout.tight_row_bytes();
  if (access_reads(access)) {
    auto made = staging_with_pitch(context->device(), layout);
    if (!made)
      return made.error();
    staging = std::move(made->first);
    pitch = made->second;
  }
  Result<std::size_t> bytes = checked_mul(pitch, layout.texture_height, "D3D11 backing bytes");
  if (!bytes)
    return bytes.error();
  try {
    return std::make_shared<D3d11TextureStorage>(Token{}, std::move(context), std::move(texture), std::move(handle),
                                                 layout, access, bind_flags, std::move(staging), pitch);
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "D3D11 texture storage");
  }
}

/// \brief A new shared render-target texture for the image.
Result<std::shared_ptr<D3d11TextureStorage>>
D3d11TextureStorage::allocate_image(std::shared_ptr<D3d11Context> context, PixelFormat format, DType dtype,
                                    std::uint32_t width, std::uint32_t height, CpuAccess access) {
  if (!context)
    return Error::invalid_argument("D3D11 texture: no device context");
  std::optional<D3d11ImageLayout> layout = image_d3d11_layout(format, dtype, width, height);
  if (!layout)
    return Error::invalid_argument("D3D11 texture: no zero-copy D3D11 texture layout exists for " +
                                   layout_text(format, dtype, width, height) +
                                   "; let the element choose the memory, or use system memory");
  D3d11Device &device = context->device();
  if (layout->semi_planar()) { // for every access kind
    auto widened = widen_to_pitch(device, *layout);
    if (!widened)
      return widened.error();
    *layout = *widened;
  }
  const bool shareable = device.capabilities().shared_nt_handles;
  auto texture = device.create_texture(texture_desc(*layout, false, shareable));
  if (!texture)
    return texture.error();
  D3d11NtHandle handle;
  if (shareable) {
    auto made = device.create_shared_handle(**texture);
    if (!made)
      return made.error();
    handle = std::move(*made);
  }
  return finish(std::move(context), std::move(*texture), std::move(handle), *layout, access,
                d3d11::kBindRenderTarget | d3d11::kBindShaderResource);
}

/// \brief Wraps an existing texture of the process device.
Result<std::shared_ptr<D3d11TextureStorage>> D3d11TextureStorage::wrap_texture(std::shared_ptr<D3d11Context> context,
                                                                               std::shared_ptr<D3d11Texture> texture,
                                                                               PixelFormat format, DType dtype,
                                                                               std::uint32_t width,
                                                                               std::uint32_t height, CpuAccess access) {
  if (!context)
    return Error::invalid_argument("external D3D11 texture: no device context");
  if (!texture)
    return Error::invalid_argument("external D3D11 texture: null texture");
  auto layout = check_external(*context, *texture, format, dtype, width, height);
  if (!layout)
    return layout.error();
  D3d11NtHandle handle; // none on a device that cannot share: the texture stays local
  if (context->device().capabilities().shared_nt_handles) {
    auto made = context->device().create_shared_handle(*texture);
    if (!made)
      return Error::invalid_argument("external D3D11 texture: no NT handle (was it created with "
                                     "D3D11_RESOURCE_MISC_SHARED_NTHANDLE?): " +
                                     made.error().message());
    handle = std::move(*made);
  }
  const std::uint32_t bind = texture->desc().bind_flags;
  return finish(std::move(context), std::move(texture), std::move(handle), *layout, access, bind);
}

/// \brief Opens a shared texture; with a completion, orders behind it:
/// a GPU wait and a fresh local signal where the device can, a bounded CPU
/// wait where it cannot, a warning without fences.
Result<std::shared_ptr<D3d11TextureStorage>>
D3d11TextureStorage::open_shared_handle(std::shared_ptr<D3d11Context> context, std::uintptr_t handle,
                                        PixelFormat format, DType dtype, std::uint32_t width, std::uint32_t height,
                                        CpuAccess access, std::optional<Completion> completion) {
  if (!context)
    return Error::invalid_argument("shared D3D11 texture: no device context");
  D3d11Device &device = context->device();
  if (!device.capabilities().device1)
    return Error::not_implemented("shared D3D11 texture: the device has no ID3D11Device1");
  if (!device.capabilities().shared_nt_handles)
    return no_nt_handle("shared D3D11 texture");
  auto texture = device.open_shared_texture(handle);
  if (!texture)
    return texture.error();
  auto layout = check_external(*context, **texture, format, dtype, width, height);
  if (!layout)
    return layout.error();
  auto own = device.handles().duplicate(handle);
  if (!own)
    return Error::io(own.error().os_error(),
                     "shared D3D11 texture: duplicating the caller's handle: " + own.error().message());
  const std::uint32_t bind = (*texture)->desc().bind_flags;
  auto storage = finish(context, std::move(*texture), D3d11NtHandle(&device.handles(), *own), *layout, access, bind);
  if (!storage || !completion)
    return storage;
  const D3d11Capabilities caps = device.capabilities();
  if (!caps.device5) {
    log(LogLevel::Warning, "shared D3D11 texture: the device has no ID3D11Device5; the producer's completion "
                           "(value " +
                               std::to_string(completion->value) + ") is not waited for");
    return storage;
  }
  auto fence = device.open_shared_fence(completion->fence_handle);
  if (!fence)
    return fence.error();
  if (!caps.context4 || !context->fence()) {
    Result<void> waited = (*fence)->wait_cpu(completion->value, kImportWait);
    if (!waited)
      log(LogLevel::Warning, "shared D3D11 texture: the producer's fence did not reach " +
                                 std::to_string(completion->value) + " (" + waited.error().message() +
                                 "); the texture may still be under write");
    return storage;
  }
  Result<void> queued = device.wait_gpu(**fence, completion->value);
  if (!queued)
    return queued.error();
  (*storage)->producer_fence_ = std::move(*fence);
  auto local = context->signal(); // a point on this device's fence, never the producer's value
  if (!local)
    return local.error();
  if (Result<void> recorded = (*storage)->set_gpu_write(*local); !recorded)
    return recorded.error();
  return storage;
}

BufferIdentity D3d11TextureStorage::identity() const noexcept {
  return BufferIdentity::derived(StorageKind::D3d11, texture_->address());
}

/// \brief The shared texture, its fence and the recorded write, for an importer.
Result<StorageHandle> D3d11TextureStorage::export_handle() {
  if (!handle_)
    return no_nt_handle("D3D11 export_handle");
  D3d11TextureHandle out;
  out.nt_handle = handle_.value();
  out.layout = layout_;
  out.adapter = context_->device().adapter();
  if (context_->fence_shared()) {
    auto fence = context_->duplicate_fence_handle();
    if (fence) // no handle only means no GPU-side ordering
      out.fence_handle = std::move(*fence);
  }
  out.recorded_write = gpu_write_;
  out.row_pitch = pitch_; // an importer's copy strides like the CPU map
  return StorageHandle(std::move(out));
}

Result<void> D3d11TextureStorage::set_gpu_write(std::uint64_t value) {
  const std::uint64_t newest = context_->last_signalled();
  if (value > newest)
    return Error::invalid_argument("set_gpu_write: value " + std::to_string(value) +
                                   " of the D3D11 process fence was never signalled (newest " + std::to_string(newest) +
                                   "); nothing would ever reach it");
  std::uint64_t seen = gpu_write_->load();
  while (value > seen && !gpu_write_->compare_exchange_weak(seen, value)) {
  }
  return {};
}

/// \brief A GPU-side wait for the recorded write, only where it can never
/// stall the immediate context.
void D3d11TextureStorage::wait_for_recorded_write() noexcept {
  const std::uint64_t value = gpu_write_->load();
  D3d11Fence *fence = context_->fence();
  if (value == 0 || !fence)
    return;
  if (!context_->fence_shared()) {
    log(LogLevel::Warning, "D3D11 map: the process fence is not shared; the recorded write " + std::to_string(value) +
                               " is not waited for");
    return;
  }
  if (value > context_->last_signalled()) {
    log(LogLevel::Warning, "D3D11 map: recorded write " + std::to_string(value) + " is above the newest value " +
                               std::to_string(context_->last_signalled()) + "; not waiting for it");
    return;
  }
  if (value <= fence->completed_value() || !context_->device().capabilities().context4)
    return;
  Result<void> queued = context_->device().wait_gpu(*fence, value);
  if (!queued)
    log(LogLevel::Warning,
        "D3D11 map: queuing a GPU wait for " + std::to_string(value) + " failed: " + queued.error().message());
}

Result<void> D3d11TextureStorage::order_backend_map(CpuAccess, bool may_block) noexcept {
  std::lock_guard lock(mu_);
  map_blocks_ = may_block;
  return {};
}

/// \brief The host buffer, made zeroed on first use at the backing's size
/// with its base aligned once. Holds mu_.
Result<std::byte *> D3d11TextureStorage::host_buffer() {
  if (host_)
    return host_;
  const std::size_t bytes = size_bytes() + kHostPinAlign - 1;
  host_alloc_.reset(new (std::nothrow) std::byte[bytes]());
  if (!host_alloc_)
    return Error::io(ENOMEM, "D3D11 host buffer of " + std::to_string(bytes) + " bytes");
  const auto base = reinterpret_cast<std::uintptr_t>(host_alloc_.get());
  host_ = host_alloc_.get() + ((kHostPinAlign - base % kHostPinAlign) % kHostPinAlign);
  return host_;
}

/// \brief Queues texture → staging behind the recorded write. Holds mu_.
Result<void> D3d11TextureStorage::refresh_staging_locked(bool flush_now) {
  wait_for_recorded_write();
  Result<void> copied = context_->device().copy_resource(*staging_, *texture_);
  if (!copied)
    return copied;
  refresh_pending_ = true;
  if (flush_now)
    context_->device().flush();
  return {};
}

/// \brief The staging path or the host-buffer path.
Result<BackendMapping> D3d11TextureStorage::backend_map(std::size_t, CpuAccess access) noexcept {
  if (access_ == CpuAccess::None)
    return Error::invalid_operation("D3D11 texture: access None grants no CPU map");
  if (access_writes(access) && !access_writes(access_))
    return Error::invalid_operation(std::string("D3D11 texture: a ") + access_name(access) + " map of a " +
                                    access_name(access_) + " tensor");
  try {
    std::lock_guard lock(mu_);
    D3d11Device &device = context_->device();
    if (staging_) {
      const bool nonblocking = !map_blocks_;
      // A blocking read always refreshes; only a poll reuses the pending
      // copy, and it flushes what it queues.
      if (access_reads(access) && !(nonblocking && refresh_pending_)) {
        Result<void> refreshed = refresh_staging_locked(nonblocking);
        if (!refreshed)
          return refreshed.error();
      }
      auto mapped =
          device.map(*staging_, access_writes(access) ? D3d11MapType::ReadWrite : D3d11MapType::Read, nonblocking);
      if (!mapped)
        return mapped.error(); // WouldBlock leaves refresh_pending_ set
      refresh_pending_ = false;
      mapped_staging_ = true;
      mapped_access_ = access;
      return BackendMapping{mapped->data, size_bytes()};
    }
    auto host = host_buffer();
    if (!host)
      return host.error();
    if (access_writes(access))
      wrote_through_host_ = true;
    mapped_staging_ = false;
    mapped_access_ = access;
    return BackendMapping{*host, size_bytes()};
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "D3D11 map");
  }
}

/// \brief The last unmap: a writer publishes (staging → texture, or the
/// host buffer uploaded) and flushes.
Result<void> D3d11TextureStorage::backend_unmap() noexcept {
  std::lock_guard lock(mu_);
  D3d11Device &device = context_->device();
  const bool wrote = access_writes(mapped_access_);
  mapped_access_ = CpuAccess::None;
  Result<void> published;
  if (mapped_staging_) {
    device.unmap(*staging_);
    mapped_staging_ = false;
    if (wrote)
      published = device.copy_resource(*texture_, *staging_);
  } else if (wrote) {
    published = device.update_subresource(*texture_, host_, static_cast<std::uint32_t>(pitch_));
  }
  if (wrote)
    device.flush();
  return published;
}

/// \brief Refuses a write-only window short of the whole backing: its
/// release would publish rows nobody wrote.
Result<void> D3d11TextureStorage::check_cpu_window(CpuAccess access, std::size_t offset, std::size_t bytes) const {
  if (access != CpuAccess::Write)
    return {};
  Result<std::size_t> extent = pitched_extent(bytes);
  if (!extent)
    return extent.error();
  if (offset == 0 && *extent >= size_bytes())
    return {};
  return Error::invalid_argument("D3D11 texture: a write-only map of " + std::to_string(bytes) + " bytes at offset " +
                                 std::to_string(offset) + " covers part of the " + std::to_string(size_bytes()) +
                                 "-byte texture, and releasing it publishes all of it; map ReadWrite for a window");
}

Result<HostPin> D3d11TextureStorage::pin_host(CpuAccess access) {
  if (access_ == CpuAccess::None)
    return Error::invalid_operation("D3D11 texture: a tensor with access None has no host pin");
  if (access == CpuAccess::None)
    return Error::invalid_argument("D3D11 texture: a pin with access None grants nothing");
  std::lock_guard lock(mu_);
  auto host = host_buffer();
  if (!host)
    return host.error();
  if (access_writes(access))
    wrote_through_host_ = true;
  return HostPin(shared_from_this(), *host, size_bytes());
}

/// \brief The host buffer refreshed from the texture.
Result<void> D3d11TextureStorage::sync_for_cpu(CpuAccess access) {
  std::lock_guard lock(mu_);
  if (!access_reads(access) || !host_ || !staging_)
    return {};
  if (mapped_staging_)
    return Error::invalid_operation("D3D11 sync_for_cpu: the staging texture is mapped; drop the map first");
  Result<void> refreshed = refresh_staging_locked(false);
  if (!refreshed)
    return refreshed;
  D3d11Device &device = context_->device();
  auto mapped = device.map(*staging_, D3d11MapType::Read, false);
  if (!mapped)
    return mapped.error();
  refresh_pending_ = false;
  const std::size_t row = std::min<std::size_t>(mapped->row_pitch, pitch_);
  for (std::uint32_t y = 0; y < layout_.texture_height; ++y)
    std::memcpy(host_ + y * pitch_, mapped->data + static_cast<std::size_t>(y) * mapped->row_pitch, row);
  device.unmap(*staging_);
  return {};
}

/// \brief CPU writes published to the texture, both backings held through
/// the copy.
Result<void> D3d11TextureStorage::sync_for_device(CpuAccess access) {
  if (!access_writes(access))
    return {};
  std::lock_guard lock(mu_);
  if (mapped_staging_ || mapped_access_ != CpuAccess::None)
    return Error::invalid_operation("D3D11 sync_for_device: a map is live; drop it first");
  D3d11Device &device = context_->device();
  Result<void> published;
  if (wrote_through_host_ && host_)
    published = device.update_subresource(*texture_, host_, static_cast<std::uint32_t>(pitch_));
  else if (staging_)
    published = device.copy_resource(*texture_, *staging_);
  else
    return {};
  device.flush();
  return published;
}

Result<std::optional<std::pair<D3d11NtHandle, std::uint64_t>>> D3d11TextureStorage::d3d11_completion() const {
  if (!handle_) // a completion orders another device's use of the texture, which it cannot open
    return no_nt_handle("D3D11 completion");
  const std::uint64_t value = gpu_write_->load();
  if (value == 0)
    return std::optional<std::pair<D3d11NtHandle, std::uint64_t>>{};
  auto handle = context_->duplicate_fence_handle();
  if (!handle)
    return Error::io(0, "D3D11 completion: " + handle.error().message());
  return std::optional<std::pair<D3d11NtHandle, std::uint64_t>>{std::make_pair(std::move(*handle), value)};
}

Result<D3d11NtHandle> D3d11TextureStorage::shared_handle() const {
  if (!handle_)
    return no_nt_handle("D3D11 shared handle");
  auto dup = handle_.duplicate();
  if (!dup)
    return Error::io(dup.error().os_error(), "D3D11 shared handle: " + dup.error().message());
  return dup;
}

std::optional<std::size_t> D3d11TextureStorage::row_stride() const noexcept {
  if (staging_)
    return pitch_;
  if (layout_.semi_planar())
    return layout_.tight_row_bytes();
  return std::nullopt;
}

std::size_t D3d11TextureStorage::tight_bytes() const noexcept {
  return layout_.image_row_bytes() * layout_.texture_height;
}

Result<std::size_t> D3d11TextureStorage::pitched_extent(std::size_t shape_bytes) const {
  const std::size_t row = layout_.image_row_bytes();
  if (row == 0)
    return std::size_t{0};
  const std::size_t rows = shape_bytes / row + (shape_bytes % row != 0);
  return checked_mul(rows, pitch_, "D3D11 pitched extent");
}

std::string D3d11TextureStorage::describe() const {
  char texture[32];
  std::snprintf(texture, sizeof texture, "%#llx", static_cast<unsigned long long>(texture_->address()));
  return std::string("D3d11TextureStorage{") +
         layout_text(layout_.format, layout_.dtype, layout_.width, layout_.height) + " as " +
         std::to_string(layout_.texture_width) + "x" + std::to_string(layout_.texture_height) + " " +
         dxgi_format_name(layout_.dxgi_format) + ", access " + access_name(access_) + ", pitch " +
         std::to_string(pitch_) + ", texture " + texture + "}";
}

} // namespace tensormem
