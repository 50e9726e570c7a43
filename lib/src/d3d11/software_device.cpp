// SPDX-License-Identifier: Apache-2.0
// The reference D3D11 device (see d3d11_software_device.hpp for what it
// models and why).
#include <tensormem/internal/d3d11_software_device.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <new>
#include <string>
#include <variant>

namespace tensormem {

namespace {

/// One resource's bytes, shared by every texture object opened on it.
struct Memory {
  D3d11TextureDesc desc;
  std::uint32_t row_pitch = 0;
  std::uint32_t rows = 0;
  std::size_t row_bytes = 0; // texels of one row, without padding
  std::mutex mu;             // held while a command copies into or out of it
  std::vector<std::byte> bytes;
};

/// One fence's timeline, shared by every fence object opened on it.
struct FenceState {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t completed = 0;
  bool shared = false;

  std::uint64_t value() {
    std::lock_guard lock(mu);
    return completed;
  }
  void reach(std::uint64_t v) {
    {
      std::lock_guard lock(mu);
      completed = std::max(completed, v);
    }
    cv.notify_all();
  }
  /// True once `v` is reached, false after `timeout`.
  bool wait(std::uint64_t v, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return completed >= v; });
  }
};

/// The process-wide NT handle table. Values are multiples of 4 (as Windows
/// hands them out) and the lowest free one is reused first, so a test can
/// see a closed value come back for an unrelated object.
class HandleTable final : public D3d11HandleTable {
public:
  using Object = std::variant<std::shared_ptr<Memory>, std::shared_ptr<FenceState>>;

  std::uintptr_t add(Object object) {
    std::lock_guard lock(mu_);
    std::uintptr_t value = 4;
    while (open_.count(value))
      value += 4;
    open_.emplace(value, std::move(object));
    return value;
  }
  void close(std::uintptr_t value) noexcept override {
    std::lock_guard lock(mu_);
    open_.erase(value);
  }
  Result<std::uintptr_t> duplicate(std::uintptr_t value) override {
    std::optional<Object> object = find(value);
    if (!object)
      return Error::io(9 /* EBADF */, "DuplicateHandle: " + std::to_string(value) + " is not an open handle");
    return add(std::move(*object));
  }
  std::optional<Object> find(std::uintptr_t value) {
    std::lock_guard lock(mu_);
    auto it = open_.find(value);
    if (it == open_.end())
      return std::nullopt;
    return it->second;
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return open_.size();
  }

private:
  std::mutex mu_;
  std::map<std::uintptr_t, Object> open_;
};

HandleTable &handle_table() {
  static HandleTable table;
  return table;
}

class SoftTexture final : public D3d11Texture, public std::enable_shared_from_this<SoftTexture> {
public:
  SoftTexture(std::shared_ptr<Memory> memory, const void *device) : memory_(std::move(memory)), device_(device) {}
  D3d11TextureDesc desc() const noexcept override { return memory_->desc; }
  std::uintptr_t address() const noexcept override { return reinterpret_cast<std::uintptr_t>(this); }
  const void *device_identity() const noexcept override { return device_; }

  const std::shared_ptr<Memory> &memory() const noexcept { return memory_; }
  bool staging() const noexcept { return memory_->desc.usage == d3d11::kUsageStaging; }

  // Guarded by the owning device's mutex.
  bool mapped = false;
  std::size_t queued_writes = 0; // queued commands that write this texture
  std::uint32_t busy_polls = 0;  // DO_NOT_WAIT maps still answered "still drawing"

private:
  std::shared_ptr<Memory> memory_;
  const void *device_;
};

class SoftFence final : public D3d11Fence {
public:
  SoftFence(std::shared_ptr<FenceState> state, const void *device) : state_(std::move(state)), device_(device) {}
  std::uint64_t completed_value() const noexcept override { return state_->value(); }
  bool shared() const noexcept override { return state_->shared; }
  std::uintptr_t address() const noexcept override { return reinterpret_cast<std::uintptr_t>(this); }
  Result<void> wait_cpu(std::uint64_t value, std::chrono::milliseconds timeout) override {
    if (state_->wait(value, timeout))
      return {};
    return Error::would_block("D3D11 fence did not reach value " + std::to_string(value) + " within " +
                              std::to_string(timeout.count()) + " ms (completed " + std::to_string(state_->value()) +
                              ")");
  }
  Result<D3d11NtHandle> create_shared_handle() override {
    if (!state_->shared)
      return Error::invalid_operation("CreateSharedHandle: the fence was not created with D3D11_FENCE_FLAG_SHARED");
    return D3d11NtHandle(&handle_table(), handle_table().add(state_));
  }
  const std::shared_ptr<FenceState> &state() const noexcept { return state_; }
  const void *device() const noexcept { return device_; }

private:
  std::shared_ptr<FenceState> state_;
  const void *device_;
};

/// \brief `desc` as D3D11 would accept it, or the reason it would not.
Result<void> check_desc(const D3d11TextureDesc &desc) {
  if (desc.width == 0 || desc.height == 0 || desc.width > 16384 || desc.height > 16384)
    return Error::invalid_argument("CreateTexture2D: size " + std::to_string(desc.width) + "x" +
                                   std::to_string(desc.height) + " is outside 1..16384");
  if (desc.mip_levels != 1 || desc.array_size != 1 || desc.sample_count != 1 || desc.sample_quality != 0)
    return Error::invalid_argument("CreateTexture2D: the software device makes one mip level, one array slice and "
                                   "no multisampling");
  if (dxgi_format_bytes(desc.format) == 0)
    return Error::invalid_argument(std::string("CreateTexture2D: format ") + dxgi_format_name(desc.format) +
                                   " has no texel size here");
  if (desc.usage == d3d11::kUsageStaging) {
    if (desc.bind_flags != 0)
      return Error::invalid_argument("CreateTexture2D: a staging texture cannot be bound (bind flags " +
                                     std::to_string(desc.bind_flags) + ")");
    if (desc.cpu_access_flags == 0)
      return Error::invalid_argument("CreateTexture2D: a staging texture needs CPU access flags");
    if (desc.misc_flags & (d3d11::kMiscShared | d3d11::kMiscSharedNtHandle))
      return Error::invalid_argument("CreateTexture2D: a staging texture cannot be shared");
  } else if (desc.usage == d3d11::kUsageDefault) {
    if (desc.cpu_access_flags != 0)
      return Error::invalid_argument("CreateTexture2D: a default-usage texture has no CPU access");
  } else {
    return Error::invalid_argument("CreateTexture2D: usage " + std::to_string(desc.usage) +
                                   " is not modelled (default or staging)");
  }
  if ((desc.misc_flags & d3d11::kMiscSharedNtHandle) && !(desc.misc_flags & d3d11::kMiscShared))
    return Error::invalid_argument("CreateTexture2D: MISC_SHARED_NTHANDLE needs MISC_SHARED");
  return {};
}

/// \brief Copies the `rows` rows of `row_bytes` between two pitched buffers.
void copy_rows(std::byte *dst, std::size_t dst_pitch, const std::byte *src, std::size_t src_pitch,
               std::size_t row_bytes, std::size_t rows) {
  for (std::size_t y = 0; y < rows; ++y)
    std::memcpy(dst + y * dst_pitch, src + y * src_pitch, row_bytes);
}

} // namespace

// ---- the device --------------------------------------------------------------

struct SoftwareD3d11Device::Impl {
  struct Command {
    enum class Kind { Copy, Update, Signal, Wait } kind;
    std::shared_ptr<SoftTexture> dst, src;
    std::vector<std::byte> data; // Update: the rows at `pitch`
    std::size_t pitch = 0;
    std::shared_ptr<FenceState> fence;
    std::uint64_t value = 0;
  };
  struct Blocked {
    std::shared_ptr<FenceState> fence;
    std::uint64_t value = 0;
  };

  std::mutex mu;
  std::deque<Command> queue;
  std::uint64_t violations = 0;
  std::uint64_t copies = 0;

  /// Runs the queue in order until it is empty or a GPU wait is not yet
  /// satisfied (returned). Holds `mu`.
  std::optional<Blocked> run(std::uint32_t still_drawing_polls) {
    while (!queue.empty()) {
      Command &c = queue.front();
      if (c.kind == Command::Kind::Wait && c.fence->value() < c.value)
        return Blocked{c.fence, c.value};
      execute(c, still_drawing_polls);
      queue.pop_front();
    }
    return std::nullopt;
  }

  void execute(Command &c, std::uint32_t still_drawing_polls) {
    switch (c.kind) {
    case Command::Kind::Copy: {
      --c.dst->queued_writes;
      c.dst->busy_polls = still_drawing_polls;
      if (c.dst->mapped) { // mapped after the copy was queued: D3D11 drops it
        ++violations;
        return;
      }
      Memory &d = *c.dst->memory();
      Memory &s = *c.src->memory();
      if (&d == &s)
        return;
      std::scoped_lock both(d.mu, s.mu);
      copy_rows(d.bytes.data(), d.row_pitch, s.bytes.data(), s.row_pitch, d.row_bytes, d.rows);
      ++copies;
      return;
    }
    case Command::Kind::Update: {
      --c.dst->queued_writes;
      c.dst->busy_polls = still_drawing_polls;
      Memory &d = *c.dst->memory();
      std::lock_guard lock(d.mu);
      copy_rows(d.bytes.data(), d.row_pitch, c.data.data(), c.pitch, d.row_bytes, d.rows);
      return;
    }
    case Command::Kind::Signal: c.fence->reach(c.value); return;
    case Command::Kind::Wait: return; // satisfied: run() checked it
    }
  }
};

SoftwareD3d11Device::SoftwareD3d11Device(Token, const Options &options) : options_(options), impl_(new Impl) {}

SoftwareD3d11Device::~SoftwareD3d11Device() = default;

/// \brief A new reference device; `pitch_alignment` must be a power of two.
Result<std::shared_ptr<SoftwareD3d11Device>> SoftwareD3d11Device::create(const Options &options) {
  const std::uint32_t a = options.pitch_alignment;
  if (a == 0 || (a & (a - 1)) != 0)
    return Error::invalid_argument("software D3D11 device: pitch alignment " + std::to_string(a) +
                                   " is not a power of two");
  try {
    return std::make_shared<SoftwareD3d11Device>(Token{}, options);
  } catch (const std::bad_alloc &) {
    return Error::device("software D3D11 device: out of memory");
  }
}

D3d11HandleTable &SoftwareD3d11Device::handles() noexcept { return handle_table(); }

namespace {

/// \brief `texture` as a texture of `device`, or the reason it is not one.
Result<SoftTexture *> own_texture(D3d11Texture &texture, const void *device, const char *call) {
  auto *t = dynamic_cast<SoftTexture *>(&texture);
  if (!t || t->device_identity() != device)
    return Error::invalid_argument(std::string(call) + ": the texture belongs to another device");
  return t;
}

Result<SoftFence *> own_fence(D3d11Fence &fence, const void *device, const char *call) {
  auto *f = dynamic_cast<SoftFence *>(&fence);
  if (!f || f->device() != device)
    return Error::invalid_argument(std::string(call) + ": the fence belongs to another device");
  return f;
}

} // namespace

/// \brief A texture with zeroed contents; staging rows at the aligned pitch.
Result<std::shared_ptr<D3d11Texture>> SoftwareD3d11Device::create_texture(const D3d11TextureDesc &desc) {
  Result<void> ok = check_desc(desc);
  if (!ok)
    return ok.error();
  // Stricter than Wine, which accepts the flag and then has no handle to
  // give: a caller that asks for sharing it cannot get is told at once.
  if ((desc.misc_flags & d3d11::kMiscSharedNtHandle) && !options_.capabilities.shared_nt_handles)
    return Error::invalid_argument("CreateTexture2D: MISC_SHARED_NTHANDLE on a device without shared NT handles");
  auto memory = std::make_shared<Memory>();
  memory->desc = desc;
  memory->rows = desc.height;
  memory->row_bytes = static_cast<std::size_t>(desc.width) * dxgi_format_bytes(desc.format);
  std::size_t pitch = memory->row_bytes;
  if (desc.usage == d3d11::kUsageStaging)
    pitch = (pitch + options_.pitch_alignment - 1) & ~static_cast<std::size_t>(options_.pitch_alignment - 1);
  memory->row_pitch = static_cast<std::uint32_t>(pitch);
  try {
    memory->bytes.assign(pitch * desc.height, std::byte{0});
  } catch (const std::bad_alloc &) {
    return Error::device("CreateTexture2D: out of memory for " + std::to_string(pitch * desc.height) + " bytes");
  }
  return std::shared_ptr<D3d11Texture>(std::make_shared<SoftTexture>(std::move(memory), this));
}

/// \brief Maps a staging texture; waits for (blocking) or reports
/// (DO_NOT_WAIT) queued and in-flight writes into it.
Result<D3d11Mapped> SoftwareD3d11Device::map(D3d11Texture &texture, D3d11MapType type, bool do_not_wait) {
  Result<SoftTexture *> own = own_texture(texture, this, "Map");
  if (!own)
    return own.error();
  SoftTexture &t = **own;
  const D3d11TextureDesc desc = t.desc();
  if (!t.staging())
    return Error::invalid_argument("Map: only staging textures map for the CPU here");
  const bool reads = (desc.cpu_access_flags & d3d11::kCpuAccessRead) != 0;
  const bool writes = (desc.cpu_access_flags & d3d11::kCpuAccessWrite) != 0;
  if (!reads || (type == D3d11MapType::ReadWrite && !writes))
    return Error::invalid_argument("Map: the texture's CPU access flags do not allow this map type");
  std::unique_lock lock(impl_->mu);
  if (t.mapped)
    return Error::invalid_operation("Map: subresource 0 is already mapped");
  const auto deadline = std::chrono::steady_clock::now() + options_.hang_timeout;
  while (t.queued_writes > 0) {
    if (do_not_wait)
      return Error::would_block("Map(DO_NOT_WAIT): DXGI_ERROR_WAS_STILL_DRAWING (a queued copy writes the texture)");
    std::optional<Impl::Blocked> blocked = impl_->run(options_.still_drawing_polls);
    if (t.queued_writes == 0)
      break;
    if (blocked) {
      lock.unlock();
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const bool reached = left.count() > 0 && blocked->fence->wait(blocked->value, left);
      lock.lock();
      if (!reached)
        return Error::device("Map: the copy into the texture waits behind a GPU wait for fence value " +
                             std::to_string(blocked->value) + " that has not completed (completed " +
                             std::to_string(blocked->fence->value()) + "); real hardware would hang here");
    }
  }
  if (t.busy_polls > 0) {
    if (do_not_wait) {
      --t.busy_polls;
      return Error::would_block("Map(DO_NOT_WAIT): DXGI_ERROR_WAS_STILL_DRAWING (submitted work still runs)");
    }
    t.busy_polls = 0;
  }
  t.mapped = true;
  Memory &m = *t.memory();
  return D3d11Mapped{m.bytes.data(), m.row_pitch, m.row_pitch * m.rows};
}

void SoftwareD3d11Device::unmap(D3d11Texture &texture) noexcept {
  auto *t = dynamic_cast<SoftTexture *>(&texture);
  if (!t)
    return;
  std::lock_guard lock(impl_->mu);
  t->mapped = false;
}

/// \brief Queues a whole-resource copy; refuses (and counts) one into or
/// out of a mapped texture, which D3D11 would drop.
Result<void> SoftwareD3d11Device::copy_resource(D3d11Texture &dst, D3d11Texture &src) {
  Result<SoftTexture *> d = own_texture(dst, this, "CopyResource");
  if (!d)
    return d.error();
  Result<SoftTexture *> s = own_texture(src, this, "CopyResource");
  if (!s)
    return s.error();
  const D3d11TextureDesc a = dst.desc(), b = src.desc();
  if (a.width != b.width || a.height != b.height || a.format != b.format)
    return Error::invalid_argument("CopyResource: " + std::to_string(b.width) + "x" + std::to_string(b.height) + " " +
                                   dxgi_format_name(b.format) + " into " + std::to_string(a.width) + "x" +
                                   std::to_string(a.height) + " " + dxgi_format_name(a.format));
  std::lock_guard lock(impl_->mu);
  if ((*d)->mapped || (*s)->mapped) {
    ++impl_->violations;
    return Error::invalid_operation("CopyResource: a texture of the copy is mapped (D3D11 drops such a copy)");
  }
  Impl::Command c{Impl::Command::Kind::Copy, (*d)->shared_from_this(), (*s)->shared_from_this(), {}, 0, {}, 0};
  impl_->queue.push_back(std::move(c));
  ++(*d)->queued_writes;
  return {};
}

/// \brief Queues an upload of the whole subresource (the rows are copied now).
Result<void> SoftwareD3d11Device::update_subresource(D3d11Texture &dst, const std::byte *data,
                                                     std::uint32_t row_pitch) {
  Result<SoftTexture *> d = own_texture(dst, this, "UpdateSubresource");
  if (!d)
    return d.error();
  if ((*d)->staging())
    return Error::invalid_argument("UpdateSubresource: the software device uploads into default textures only");
  const Memory &m = *(*d)->memory();
  if (!data || row_pitch < m.row_bytes)
    return Error::invalid_argument("UpdateSubresource: row pitch " + std::to_string(row_pitch) + " is below a row (" +
                                   std::to_string(m.row_bytes) + " bytes)");
  Impl::Command c{Impl::Command::Kind::Update, (*d)->shared_from_this(), {}, {}, row_pitch, {}, 0};
  try {
    c.data.assign(data, data + static_cast<std::size_t>(row_pitch) * (m.rows - 1) + m.row_bytes);
  } catch (const std::bad_alloc &) {
    return Error::device("UpdateSubresource: out of memory");
  }
  std::lock_guard lock(impl_->mu);
  impl_->queue.push_back(std::move(c));
  ++(*d)->queued_writes;
  return {};
}

/// \brief Submits the queue: runs it up to the first unsatisfied GPU wait.
void SoftwareD3d11Device::flush() noexcept {
  std::lock_guard lock(impl_->mu);
  impl_->run(options_.still_drawing_polls);
}

Result<D3d11NtHandle> SoftwareD3d11Device::create_shared_handle(D3d11Texture &texture) {
  Result<SoftTexture *> t = own_texture(texture, this, "CreateSharedHandle");
  if (!t)
    return t.error();
  if (!options_.capabilities.shared_nt_handles)
    return Error::not_implemented("CreateSharedHandle: this device has no shared NT handles");
  if (!(texture.desc().misc_flags & d3d11::kMiscSharedNtHandle))
    return Error::invalid_argument("CreateSharedHandle: the texture was not created with "
                                   "D3D11_RESOURCE_MISC_SHARED_NTHANDLE");
  return D3d11NtHandle(&handle_table(), handle_table().add((*t)->memory()));
}

Result<std::shared_ptr<D3d11Texture>> SoftwareD3d11Device::open_shared_texture(std::uintptr_t handle) {
  if (!options_.capabilities.device1)
    return Error::not_implemented("OpenSharedResource1: this device has no ID3D11Device1");
  if (!options_.capabilities.shared_nt_handles)
    return Error::not_implemented("OpenSharedResource1: this device has no shared NT handles");
  std::optional<HandleTable::Object> object = handle_table().find(handle);
  if (!object || !std::holds_alternative<std::shared_ptr<Memory>>(*object))
    return Error::invalid_argument("OpenSharedResource1: " + std::to_string(handle) +
                                   " is not an open shared texture handle");
  return std::shared_ptr<D3d11Texture>(std::make_shared<SoftTexture>(std::get<std::shared_ptr<Memory>>(*object), this));
}

Result<std::shared_ptr<D3d11Fence>> SoftwareD3d11Device::create_fence(std::uint64_t initial, bool shared) {
  if (!options_.capabilities.device5)
    return Error::not_implemented("CreateFence: this device has no ID3D11Device5");
  if (shared && !options_.capabilities.shared_fence)
    return Error::not_implemented("CreateFence: this device cannot share fences");
  auto state = std::make_shared<FenceState>();
  state->completed = initial;
  state->shared = shared;
  return std::shared_ptr<D3d11Fence>(std::make_shared<SoftFence>(std::move(state), this));
}

Result<std::shared_ptr<D3d11Fence>> SoftwareD3d11Device::open_shared_fence(std::uintptr_t handle) {
  if (!options_.capabilities.device5)
    return Error::not_implemented("OpenSharedFence: this device has no ID3D11Device5");
  std::optional<HandleTable::Object> object = handle_table().find(handle);
  if (!object || !std::holds_alternative<std::shared_ptr<FenceState>>(*object))
    return Error::invalid_argument("OpenSharedFence: " + std::to_string(handle) +
                                   " is not an open shared fence handle");
  return std::shared_ptr<D3d11Fence>(std::make_shared<SoftFence>(std::get<std::shared_ptr<FenceState>>(*object), this));
}

Result<void> SoftwareD3d11Device::signal(D3d11Fence &fence, std::uint64_t value) {
  if (!options_.capabilities.context4)
    return Error::not_implemented("Signal: this device has no ID3D11DeviceContext4");
  Result<SoftFence *> f = own_fence(fence, this, "Signal");
  if (!f)
    return f.error();
  std::lock_guard lock(impl_->mu);
  impl_->queue.push_back({Impl::Command::Kind::Signal, {}, {}, {}, 0, (*f)->state(), value});
  return {};
}

Result<void> SoftwareD3d11Device::wait_gpu(D3d11Fence &fence, std::uint64_t value) {
  if (!options_.capabilities.context4)
    return Error::not_implemented("Wait: this device has no ID3D11DeviceContext4");
  Result<SoftFence *> f = own_fence(fence, this, "Wait");
  if (!f)
    return f.error();
  std::lock_guard lock(impl_->mu);
  impl_->queue.push_back({Impl::Command::Kind::Wait, {}, {}, {}, 0, (*f)->state(), value});
  return {};
}

std::size_t SoftwareD3d11Device::pending_commands() const {
  std::lock_guard lock(impl_->mu);
  return impl_->queue.size();
}

std::uint64_t SoftwareD3d11Device::violations() const {
  std::lock_guard lock(impl_->mu);
  return impl_->violations;
}

std::uint64_t SoftwareD3d11Device::copies_run() const {
  std::lock_guard lock(impl_->mu);
  return impl_->copies;
}

std::size_t SoftwareD3d11Device::open_handles() { return handle_table().size(); }

std::optional<SoftwareD3d11Device::VideoMemory> SoftwareD3d11Device::video_memory(D3d11Texture &texture) {
  auto *t = dynamic_cast<SoftTexture *>(&texture);
  if (!t || t->staging())
    return std::nullopt;
  Memory &m = *t->memory();
  return VideoMemory{m.bytes.data(), m.row_pitch, m.rows, m.desc};
}

std::unique_ptr<D3d11Texture> SoftwareD3d11Device::lookup_shared_texture(std::uintptr_t handle) {
  std::optional<HandleTable::Object> object = handle_table().find(handle);
  if (!object || !std::holds_alternative<std::shared_ptr<Memory>>(*object))
    return nullptr;
  return std::make_unique<SoftTexture>(std::get<std::shared_ptr<Memory>>(*object), nullptr);
}

std::unique_ptr<D3d11Fence> SoftwareD3d11Device::lookup_shared_fence(std::uintptr_t handle) {
  std::optional<HandleTable::Object> object = handle_table().find(handle);
  if (!object || !std::holds_alternative<std::shared_ptr<FenceState>>(*object))
    return nullptr;
  return std::make_unique<SoftFence>(std::get<std::shared_ptr<FenceState>>(*object), nullptr);
}

/// \brief The reference device behind the port's factory.
Result<std::shared_ptr<D3d11Device>> create_software_d3d11_device(const SoftwareD3d11Options &options) {
  SoftwareD3d11Device::Options full;
  static_cast<SoftwareD3d11Options &>(full) = options;
  Result<std::shared_ptr<SoftwareD3d11Device>> device = SoftwareD3d11Device::create(full);
  if (!device)
    return device.error();
  return std::shared_ptr<D3d11Device>(std::move(*device));
}

} // namespace tensormem

extern "C" int tm_software_d3d11_video_memory(std::uintptr_t handle, void **data, std::uint32_t *row_pitch,
                                              std::uint32_t *rows) {
  std::unique_ptr<tensormem::D3d11Texture> texture = tensormem::SoftwareD3d11Device::lookup_shared_texture(handle);
  if (!texture || !data || !row_pitch || !rows)
    return -1;
  std::optional<tensormem::SoftwareD3d11Device::VideoMemory> vm =
      tensormem::SoftwareD3d11Device::video_memory(*texture);
  if (!vm)
    return -1;
  *data = vm->data;
  *row_pitch = vm->row_pitch;
  *rows = vm->rows;
  return 0;
}

extern "C" int tm_software_d3d11_fence_value(std::uintptr_t handle, std::uint64_t *value) {
  std::unique_ptr<tensormem::D3d11Fence> fence = tensormem::SoftwareD3d11Device::lookup_shared_fence(handle);
  if (!fence || !value)
    return -1;
  *value = fence->completed_value();
  return 0;
}
