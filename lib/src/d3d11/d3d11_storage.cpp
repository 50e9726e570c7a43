// SPDX-License-Identifier: Apache-2.0
#include <tensormem/d3d11_storage.hpp>
#include <tensormem/log.hpp>

#include <algorithm>
#include <cstring>
#include <new>
#include <sstream>

namespace tensormem {

namespace {

constexpr std::size_t kHostAlign = 64;

std::string access_text(CpuAccess a) { return access_name(a); }

/// \brief A staging texture matching `desc` for CPU reads and writes (D3D-BACK-01).
Result<std::shared_ptr<D3d11Texture>> make_staging(D3d11Device &device, D3d11TextureDesc desc) {
  desc.usage = d3d11::kUsageStaging;
  desc.bind_flags = 0;
  desc.misc_flags = 0;
  desc.cpu_access_flags = d3d11::kCpuAccessRead | d3d11::kCpuAccessWrite;
  return device.create_texture(desc);
}

/// \brief The driver row pitch of a staging texture, learned by one blocking map.
Result<std::size_t> learn_pitch(D3d11Device &device, D3d11Texture &staging) {
  Result<D3d11Mapped> m = device.map(staging, D3d11MapType::Read, false);
  if (!m)
    return std::move(m).error();
  const std::size_t pitch = m->row_pitch;
  device.unmap(staging);
  return pitch;
}

/// \brief The layout of an image, or InvalidArgument suggesting another memory.
Result<D3d11ImageLayout> lookup_layout(PixelFormat format, DType dtype, std::uint32_t w, std::uint32_t h) {
  auto layout = image_d3d11_layout(format, dtype, w, h);
  if (!layout)
    return Error::invalid_argument("d3d11: no texture layout for " + std::string(format_info(format).name) + " " +
                                   dtype_name(dtype) + " " + std::to_string(w) + "x" + std::to_string(h) +
                                   "; use automatic memory selection or a CPU tensor");
  return *layout;
}

/// \brief Semi-planar widening (D3D-LAYOUT-02/03): the texture is as wide as
/// the staging pitch a probe texture of its width gets, for every access kind.
Result<D3d11ImageLayout> widen(D3d11Device &device, const D3d11ImageLayout &layout) {
  if (!layout.semi_planar())
    return layout;
  D3d11TextureDesc probe;
  probe.width = layout.texture_width;
  probe.height = 1;
  probe.format = layout.dxgi_format;
  Result<std::shared_ptr<D3d11Texture>> staging = make_staging(device, probe);
  if (!staging)
    return std::move(staging).error();
  if (!*staging)
    return Error::io(0, "d3d11: creating the pitch probe returned no texture");
  Result<std::size_t> pitch = learn_pitch(device, **staging);
  if (!pitch)
    return std::move(pitch).error();
  const std::size_t texel = dxgi_format_bytes(layout.dxgi_format);
  std::size_t wide = *pitch / texel;
  wide += wide & 1u; // HAZ-39: never split a chroma pair
  if (wide <= layout.texture_width || wide > UINT32_MAX)
    return layout;
  return layout.widened_to(static_cast<std::uint32_t>(wide));
}

Result<std::shared_ptr<D3d11Context>> resolve(std::shared_ptr<D3d11Context> context) {
  if (context)
    return context;
  return D3d11Context::process();
}

/// \brief D3D-EXT-02: an external texture against the image, in the spec's order.
Result<D3d11ImageLayout> validate_external(D3d11Device &device, D3d11Texture &texture, PixelFormat format, DType dtype,
                                           std::uint32_t w, std::uint32_t h) {
  Result<D3d11ImageLayout> layout = lookup_layout(format, dtype, w, h);
  if (!layout)
    return layout;
  const D3d11TextureDesc d = texture.desc();
  auto refuse = [](const std::string &field, std::uint64_t found, const std::string &required) {
    return Error::invalid_argument("d3d11 external texture: " + field + " is " + std::to_string(found) + ", required " +
                                   required);
  };
  if (d.usage != d3d11::kUsageDefault)
    return refuse("usage", d.usage, "DEFAULT (0)");
  if ((d.bind_flags & d3d11::kBindShaderResource) == 0)
    return refuse("bind flags", d.bind_flags, "SHADER_RESOURCE (0x8) set");
  if (d.mip_levels != 1)
    return refuse("mip levels", d.mip_levels, "1");
  if (d.array_size != 1)
    return refuse("array size", d.array_size, "1");
  if (d.sample_count != 1)
    return refuse("sample count", d.sample_count, "1");
  if (d.format != layout->dxgi_format)
    return refuse("DXGI format", static_cast<std::uint32_t>(d.format),
                  std::string(dxgi_format_name(layout->dxgi_format)));
  if (d.height != layout->texture_height)
    return refuse("height", d.height, std::to_string(layout->texture_height));
  D3d11ImageLayout result = *layout;
  if (layout->semi_planar()) {
    // Even image row width: NV chroma pairs.
    const std::uint64_t need = layout->texture_width + (layout->texture_width & 1u);
    if (d.width & 1u) // HAZ-39
      return refuse("width", d.width, "an even width");
    if (d.width < need)
      return refuse("width", d.width, "at least " + std::to_string(need));
    result = layout->widened_to(d.width);
    D3d11TextureDesc probe = d;
    probe.height = 1;
    Result<std::shared_ptr<D3d11Texture>> staging = make_staging(device, probe);
    if (!staging)
      return std::move(staging).error();
    Result<std::size_t> pitch = learn_pitch(device, **staging);
    if (!pitch)
      return std::move(pitch).error();
    const std::size_t row = result.tight_row_bytes();
    if (row < *pitch)
      return Error::invalid_argument("d3d11 external texture: width " + std::to_string(d.width) +
                                     " is narrower than its driver row pitch of " + std::to_string(*pitch) +
                                     " bytes; semi-planar textures must be as wide as their pitch");
  } else if (d.width != layout->texture_width) {
    return refuse("width", d.width, std::to_string(layout->texture_width));
  }
  if (texture.device_identity() != device.identity())
    return Error::invalid_argument("d3d11 external texture: it belongs to another device than the process device");
  return result;
}

} // namespace

struct D3d11TextureStorage::HostBuffer {
  std::unique_ptr<std::byte[]> raw;
  std::byte *base = nullptr;
  std::size_t length = 0;
  std::size_t pitch = 0;
};

D3d11TextureStorage::D3d11TextureStorage(Token, std::size_t size, std::shared_ptr<D3d11Context> context,
                                         std::shared_ptr<D3d11Texture> texture, D3d11NtHandle handle,
                                         D3d11ImageLayout layout, std::uint32_t bind_flags, CpuAccess access,
                                         std::shared_ptr<D3d11Texture> staging, std::size_t pitch) noexcept
    : Storage(size), context_(std::move(context)), texture_(std::move(texture)), handle_(std::move(handle)),
      layout_(layout), bind_flags_(bind_flags), access_(access), staging_(std::move(staging)), pitch_(pitch),
      gpu_write_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

D3d11TextureStorage::~D3d11TextureStorage() { run_destroy_hooks(); }

BufferIdentity D3d11TextureStorage::identity() const noexcept {
  return BufferIdentity::derived(StorageKind::D3d11, texture_->address());
}

/// \brief D3D-ALLOC-02: staging only for reading access kinds; the backing
/// pitch is the staging pitch (learned by a map) or the tight row.
Result<std::shared_ptr<D3d11TextureStorage>> D3d11TextureStorage::finish(std::shared_ptr<D3d11Context> context,
                                                                         std::shared_ptr<D3d11Texture> texture,
                                                                         D3d11NtHandle handle, D3d11ImageLayout layout,
                                                                         std::uint32_t bind_flags, CpuAccess access) {
  try {
    std::shared_ptr<D3d11Texture> staging;
    std::size_t pitch = layout.tight_row_bytes();
    if (access_reads(access)) {
      Result<std::shared_ptr<D3d11Texture>> s = make_staging(context->device(), texture->desc());
      if (!s)
        return std::move(s).error();
      if (!*s)
        return Error::io(0, "d3d11: creating the staging texture returned no texture");
      staging = std::move(*s);
      Result<std::size_t> p = learn_pitch(context->device(), *staging);
      if (!p)
        return std::move(p).error();
      pitch = *p;
    }
    Result<std::size_t> size = checked_mul(pitch, layout.texture_height, "d3d11 backing size");
    if (!size)
      return std::move(size).error();
    return std::make_shared<D3d11TextureStorage>(Token{}, *size, std::move(context), std::move(texture),
                                                 std::move(handle), layout, bind_flags, access, std::move(staging),
                                                 pitch);
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "d3d11: creating a texture storage");
  }
}

/// \brief D3D-ALLOC-01..04: a new shared texture for an image.
Result<std::shared_ptr<D3d11TextureStorage>>
D3d11TextureStorage::allocate_image(PixelFormat format, DType dtype, std::uint32_t width, std::uint32_t height,
                                    CpuAccess access, std::shared_ptr<D3d11Context> context) {
  Result<D3d11ImageLayout> layout = lookup_layout(format, dtype, width, height);
  if (!layout)
    return std::move(layout).error();
  Result<std::shared_ptr<D3d11Context>> ctx = resolve(std::move(context));
  if (!ctx)
    return std::move(ctx).error();
  D3d11Device &device = (*ctx)->device();
  Result<D3d11ImageLayout> wide = widen(device, *layout);
  if (!wide)
    return std::move(wide).error();
  D3d11TextureDesc desc;
  desc.width = wide->texture_width;
  desc.height = wide->texture_height;
  desc.format = wide->dxgi_format;
  desc.bind_flags = d3d11::kBindShaderResource | d3d11::kBindRenderTarget;
  desc.misc_flags = d3d11::kMiscShared | d3d11::kMiscSharedNtHandle;
  Result<std::shared_ptr<D3d11Texture>> texture = device.create_texture(desc);
  if (!texture)
    return std::move(texture).error();
  if (!*texture) // D3D-ALLOC-04
    return Error::io(0, "d3d11: texture creation succeeded without a texture");
  Result<D3d11NtHandle> handle = device.create_shared_handle(**texture);
  if (!handle)
    return std::move(handle).error();
  return finish(std::move(*ctx), std::move(*texture), std::move(*handle), *wide, desc.bind_flags, access);
}

/// \brief D3D-EXT-01..04: an existing texture of the process device.
Result<std::shared_ptr<D3d11TextureStorage>> D3d11TextureStorage::wrap_texture(std::shared_ptr<D3d11Texture> texture,
                                                                               PixelFormat format, DType dtype,
                                                                               std::uint32_t width,
                                                                               std::uint32_t height, CpuAccess access,
                                                                               std::shared_ptr<D3d11Context> context) {
  Result<std::shared_ptr<D3d11Context>> ctx = resolve(std::move(context));
  if (!ctx)
    return std::move(ctx).error();
  if (!texture)
    return Error::invalid_argument("d3d11 wrap_texture: null texture");
  D3d11Device &device = (*ctx)->device();
  Result<D3d11ImageLayout> layout = validate_external(device, *texture, format, dtype, width, height);
  if (!layout)
    return std::move(layout).error();
  Result<D3d11NtHandle> handle = device.create_shared_handle(*texture);
  if (!handle)
    return Error::invalid_argument("d3d11 wrap_texture: the texture was not created with SHARED_NTHANDLE (" +
                                   handle.error().message() + ")");
  const std::uint32_t bind = texture->desc().bind_flags;
  return finish(std::move(*ctx), std::move(texture), std::move(*handle), *layout, bind, access);
}

/// \brief D3D-IMP-01..03: open another device's shared texture; order behind
/// its producer's completion where one is given.
Result<std::shared_ptr<D3d11TextureStorage>>
D3d11TextureStorage::open_shared_handle(std::uintptr_t handle, PixelFormat format, DType dtype, std::uint32_t width,
                                        std::uint32_t height, CpuAccess access, std::optional<Completion> completion,
                                        std::shared_ptr<D3d11Context> context) {
  Result<std::shared_ptr<D3d11Context>> ctx = resolve(std::move(context));
  if (!ctx)
    return std::move(ctx).error();
  if (handle == 0)
    return Error::invalid_argument("d3d11 open_shared_handle: null handle");
  D3d11Device &device = (*ctx)->device();
  Result<std::shared_ptr<D3d11Texture>> texture = device.open_shared_texture(handle);
  if (!texture)
    return std::move(texture).error();
  if (!*texture)
    return Error::io(0, "d3d11 open_shared_handle: opening succeeded without a texture");
  Result<D3d11ImageLayout> layout = validate_external(device, **texture, format, dtype, width, height);
  if (!layout)
    return std::move(layout).error();
  Result<std::uintptr_t> own = device.handles().duplicate(handle);
  if (!own)
    return std::move(own).error();
  D3d11NtHandle owned(&device.handles(), *own);
  const std::uint32_t bind = (*texture)->desc().bind_flags;
  Result<std::shared_ptr<D3d11TextureStorage>> storage =
      finish(*ctx, std::move(*texture), std::move(owned), *layout, bind, access);
  if (!storage || !completion || completion->value == 0)
    return storage;
  // D3D-IMP-03 (HAZ-36, HAZ-37): wait on the producer's fence, then record
  // a fresh local signal instead of the producer's value.
  if (!device.capabilities().device5) {
    log(LogLevel::Warning, "d3d11 import: the device has no fences; the texture is read unordered");
    return storage;
  }
  Result<std::shared_ptr<D3d11Fence>> fence = device.open_shared_fence(completion->fence_handle);
  if (!fence)
    return std::move(fence).error();
  if (!*fence)
    return Error::io(0, "d3d11 import: opening the producer's fence succeeded without a fence");
  if (!device.capabilities().context4) {
    Result<void> waited = (*fence)->wait_cpu(completion->value, kImportWait);
    if (!waited)
      log(LogLevel::Warning,
          "d3d11 import: the producer's value " + std::to_string(completion->value) +
              " did not complete (the texture may still be under write): " + waited.error().message());
    return storage;
  }
  Result<void> queued = device.wait_gpu(**fence, completion->value);
  if (!queued)
    return std::move(queued).error();
  (*storage)->producer_fence_ = std::move(*fence);
  Result<std::uint64_t> local = (*ctx)->signal();
  if (local && *local != 0)
    (*storage)->set_gpu_write(*local);
  return storage;
}

std::optional<std::size_t> D3d11TextureStorage::row_stride() const noexcept {
  if (access_ == CpuAccess::None && !layout_.semi_planar())
    return std::nullopt;
  return pitch_; // HAZ-40: a semi-planar texture reports its width even without staging
}

/// \brief Full pitched rows for all but the last row of `shape_bytes` tight bytes (D3D-WIN-01).
Result<std::size_t> D3d11TextureStorage::pitched_extent(std::size_t shape_bytes) const {
  const std::size_t row = layout_.tight_row_bytes();
  if (shape_bytes == 0 || row == 0)
    return Error::invalid_size(0, "d3d11 extent: empty");
  const std::size_t rows = shape_bytes / row + (shape_bytes % row ? 1 : 0);
  Result<std::size_t> head = checked_mul(rows - 1, pitch_, "d3d11 extent");
  if (!head)
    return head;
  const std::size_t last = shape_bytes - (rows - 1) * row;
  return checked_add(*head, last, shape_bytes, "d3d11 extent");
}

/// \brief Whole pitched rows covering `shape_bytes` (D3D-WIN-03).
Result<std::size_t> D3d11TextureStorage::addressable_span(std::size_t shape_bytes) const {
  const std::size_t row = layout_.tight_row_bytes();
  if (row == 0)
    return Error::invalid_size(0, "d3d11 span: empty row");
  const std::size_t rows = shape_bytes / row + (shape_bytes % row ? 1 : 0);
  return checked_mul(rows, pitch_, "d3d11 span");
}

void D3d11TextureStorage::set_gpu_write(std::uint64_t value) noexcept {
  std::uint64_t seen = gpu_write_->load();
  while (value > seen && !gpu_write_->compare_exchange_weak(seen, value)) {
  }
}

/// \brief D3D-FENCE-04.
Result<std::optional<std::pair<D3d11NtHandle, std::uint64_t>>> D3d11TextureStorage::d3d11_completion() const {
  const std::uint64_t v = gpu_write_->load();
  if (v == 0)
    return std::optional<std::pair<D3d11NtHandle, std::uint64_t>>{};
  Result<D3d11NtHandle> h = context_->duplicate_fence_handle();
  if (!h)
    return Error::io(0, "d3d11 completion: duplicating the process fence handle: " + h.error().message());
  return std::optional<std::pair<D3d11NtHandle, std::uint64_t>>{std::in_place, std::move(*h), v};
}

/// \brief D3D-FENCE-03: queue a GPU-side wait for the recorded write, within bounds.
void D3d11TextureStorage::order_behind_recorded_write() noexcept {
  const std::uint64_t v = gpu_write_->load();
  if (v == 0)
    return;
  if (!context_->fence_shared()) {
    log(LogLevel::Warning, "d3d11 map: the process fence is not shared; the recorded write is not ordered");
    return;
  }
  if (v > context_->last_signalled()) {
    log(LogLevel::Warning,
        "d3d11 map: recorded write " + std::to_string(v) + " is above the newest signalled value; not waiting for it");
    return;
  }
  D3d11Fence *fence = context_->fence();
  if (!fence || v <= fence->completed_value() || !context_->device().capabilities().context4)
    return;
  Result<void> queued = context_->device().wait_gpu(*fence, v);
  if (!queued)
    log(LogLevel::Warning, "d3d11 map: queueing the GPU wait failed: " + queued.error().message());
}

Result<void> D3d11TextureStorage::order_backend(CpuAccess, bool may_block) noexcept {
  std::lock_guard lock(backing_mu_);
  next_may_block_ = may_block;
  return {};
}

/// \brief The host buffer, created zeroed and 64-byte aligned on first use (D3D-BACK-02/04).
Result<D3d11TextureStorage::HostBuffer *> D3d11TextureStorage::host_buffer_locked() {
  if (host_)
    return host_.get();
  auto host = std::make_shared<HostBuffer>();
  Result<std::size_t> padded = checked_add(size_bytes(), kHostAlign - 1, size_bytes(), "d3d11 host buffer");
  if (!padded)
    return std::move(padded).error();
  host->raw.reset(new (std::nothrow) std::byte[*padded]());
  if (!host->raw)
    return Error::io(ENOMEM, "d3d11: allocating the host buffer");
  const auto addr = reinterpret_cast<std::uintptr_t>(host->raw.get());
  host->base = host->raw.get() + ((kHostAlign - addr % kHostAlign) % kHostAlign);
  host->length = size_bytes();
  host->pitch = pitch_;
  host_ = std::move(host);
  return host_.get();
}

/// \brief D3D-MAP-01/03..07: the staging path when there is staging, else the host buffer.
Result<BackendMapping> D3d11TextureStorage::backend_map(std::size_t size, CpuAccess access) noexcept {
  try {
    if (access_ == CpuAccess::None)
      return Error::invalid_operation("d3d11 map: the texture has CPU access None (hardware only)");
    if (access_writes(access) && !access_writes(access_))
      return Error::invalid_operation("d3d11 map for " + access_text(access) + ": the texture was made for " +
                                      access_text(access_));
    std::lock_guard lock(backing_mu_);
    D3d11Device &device = context_->device();
    if (staging_) {
      const bool may_block = next_may_block_;
      next_may_block_ = true;
      if (access_reads(access) && (may_block || !refresh_pending_)) { // D3D-MAP-04
        order_behind_recorded_write();
        Result<void> copied = device.copy_resource(*staging_, *texture_);
        if (!copied)
          return std::move(copied).error();
        ++refresh_copies_;
        refresh_pending_ = true;
        if (!may_block)
          device.flush();
      }
      Result<D3d11Mapped> m =
          device.map(*staging_, access_writes(access) ? D3d11MapType::ReadWrite : D3d11MapType::Read, !may_block);
      if (!m)
        return std::move(m).error(); // WouldBlock keeps refresh_pending
      refresh_pending_ = false;
      mapped_access_ = access;
      mapped_staging_ = true;
      return BackendMapping{m->data, size};
    }
    Result<HostBuffer *> host = host_buffer_locked();
    if (!host)
      return std::move(host).error();
    if (access_writes(access))
      wrote_through_host_ = true;
    mapped_access_ = access;
    mapped_staging_ = false;
    return BackendMapping{(*host)->base, (*host)->length};
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "d3d11 map");
  }
}

Result<void> D3d11TextureStorage::upload_host_locked() {
  if (pitch_ > UINT32_MAX)
    return Error::invalid_size(pitch_, "d3d11 upload: pitch");
  Result<void> up = context_->device().update_subresource(*texture_, host_->base, static_cast<std::uint32_t>(pitch_));
  context_->device().flush(); // D3D-FENCE-01
  return up;
}

/// \brief D3D-MAP-06/07: unmap; a writer publishes into the texture and flushes.
Result<void> D3d11TextureStorage::backend_unmap() noexcept {
  std::lock_guard lock(backing_mu_);
  D3d11Device &device = context_->device();
  const bool wrote = access_writes(mapped_access_);
  mapped_access_ = CpuAccess::None;
  if (mapped_staging_) {
    mapped_staging_ = false;
    device.unmap(*staging_);
    if (!wrote)
      return {};
    Result<void> copied = device.copy_resource(*texture_, *staging_);
    device.flush();
    return copied;
  }
  if (wrote && host_)
    return upload_host_locked();
  return {};
}

/// \brief D3D-SYNC-01/02: the host buffer, never staging; no claim taken.
Result<HostPin> D3d11TextureStorage::pin_host(CpuAccess access) {
  if (access_ == CpuAccess::None)
    return Error::invalid_operation("d3d11 pin_host: the texture has CPU access None");
  if (access == CpuAccess::None)
    return Error::invalid_argument("d3d11 pin_host: access None");
  std::lock_guard lock(backing_mu_);
  if (access_writes(access))
    wrote_through_host_ = true;
  Result<HostBuffer *> host = host_buffer_locked();
  if (!host)
    return std::move(host).error();
  return HostPin(host_, (*host)->base, (*host)->length);
}

/// \brief D3D-SYNC-03: texture → staging → host buffer.
Result<void> D3d11TextureStorage::sync_for_cpu(CpuAccess access) {
  if (!access_reads(access))
    return {};
  std::lock_guard lock(backing_mu_);
  if (!host_ || !staging_)
    return {};
  if (is_mapped()) // HAZ-32
    return Error::invalid_operation("d3d11 sync_for_cpu: the staging texture is mapped");
  D3d11Device &device = context_->device();
  order_behind_recorded_write();
  Result<void> copied = device.copy_resource(*staging_, *texture_);
  if (!copied)
    return copied;
  ++refresh_copies_;
  Result<D3d11Mapped> m = device.map(*staging_, D3d11MapType::Read, false);
  if (!m)
    return std::move(m).error();
  refresh_pending_ = false;
  const std::size_t n = std::min<std::size_t>(m->row_pitch, host_->pitch);
  for (std::size_t r = 0; r < layout_.texture_height; ++r)
    std::memcpy(host_->base + r * host_->pitch, m->data + r * m->row_pitch, n);
  device.unmap(*staging_);
  return {};
}

/// \brief D3D-SYNC-04: publish the host buffer (when written through) or staging.
Result<void> D3d11TextureStorage::sync_for_device(CpuAccess access) {
  if (!access_writes(access))
    return {};
  std::lock_guard lock(backing_mu_);
  if (is_mapped()) // HAZ-32: both backings share the one claim state
    return Error::invalid_operation("d3d11 sync_for_device: the texture is mapped");
  D3d11Device &device = context_->device();
  if (wrote_through_host_ && host_)
    return upload_host_locked();
  if (!staging_)
    return {};
  Result<void> copied = device.copy_resource(*texture_, *staging_);
  device.flush();
  return copied;
}

std::string D3d11TextureStorage::describe() const {
  std::ostringstream s;
  s << "D3d11TextureStorage(device=" << context_->device().name() << ", texture=0x" << std::hex << texture_->address()
    << std::dec << ", " << format_info(layout_.format).name << " " << layout_.width << "x" << layout_.height << " in "
    << layout_.texture_width << "x" << layout_.texture_height << " " << dxgi_format_name(layout_.dxgi_format)
    << ", pitch=" << pitch_ << ", access=" << access_text(access_) << ", staging=" << (staging_ ? "yes" : "no")
    << ", gpu_write=" << gpu_write_->load() << ")";
  return s.str();
}

} // namespace tensormem
