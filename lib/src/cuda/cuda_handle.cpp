// SPDX-License-Identifier: Apache-2.0
// CudaHandle: external memory imported from a DMA-BUF fd, GL registrations routed
// through CudaGlOps, maps and destruction order.
#include "cuda_fd.hpp"
#include "cuda_log.hpp"

#include <tensormem/cuda_handle.hpp>

#include <tensormem/internal/cuda_d3d11.hpp>

#include <tensormem/types.hpp>
#include <tensormem/unique_fd.hpp>

#include <cerrno>
#include <cstring>
#include <functional>
#include <sstream>

#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace tensormem {
namespace {

using cuda_log::debug;
using cuda_log::quietly;
using cuda_log::warn;

std::shared_ptr<const CudaRuntime> resolve(std::shared_ptr<const CudaRuntime> runtime) {
  return runtime ? std::move(runtime) : CudaRuntime::get();
}

class DirectGlOps final : public CudaGlOps {
public:
  explicit DirectGlOps(std::shared_ptr<const CudaRuntime> rt) : rt_(std::move(rt)) {}
  Result<void *> register_buffer(std::uint32_t buffer_id) override { return rt_->gl_register_buffer(buffer_id); }
  Result<CudaDeviceRange> map(void *resource) override { return rt_->gl_map_resource(resource); }
  void unmap(void *resource) noexcept override { rt_->gl_unmap_resource(resource); }
  void unregister(void *resource) noexcept override { rt_->gl_unregister_resource(resource); }

private:
  std::shared_ptr<const CudaRuntime> rt_;
};

} // namespace

// What a D3D11 handle owns, and its linear buffer behind a lock. Shared with
// the write-back of a writable map.
struct CudaHandle::D3d11State {
  CudaD3d11Objects objects;
  std::mutex linear_mu; // held through a copy-in
  void *linear = nullptr;

  ~D3d11State() { release(); }
  void release() noexcept;
  void write_back(void *linear_ptr) const noexcept;
};

namespace {

// The release action of a writable D3D11 map: CudaMap runs a CudaGlOps
// unmap exactly once, and this one writes the linear buffer back into the
// texture.
class D3d11WriteBack final : public CudaGlOps {
public:
  explicit D3d11WriteBack(std::shared_ptr<const void> state, const std::function<void(void *)> &write)
      : state_(std::move(state)), write_(write) {}
  Result<CudaDeviceRange> map(void *) override { return Error::invalid_operation("a D3D11 write-back maps nothing"); }
  void unmap(void *linear) noexcept override { write_(linear); }
  void unregister(void *) noexcept override {}

private:
  std::shared_ptr<const void> state_;
  std::function<void(void *)> write_;
};

} // namespace

/// \brief On the handle's device, the linear buffer, the
/// stream, the mipmapped array, then the memory it came from.
void CudaHandle::D3d11State::release() noexcept {
  const CudaD3d11Objects &o = objects;
  if (!o.runtime || !o.runtime->loaded())
    return;
  // The destructor may run on any thread; a failed selection is logged and
  // the release goes on.
  if (Result<void> selected = o.runtime->set_device(o.device); !selected)
    quietly([&] { warn("releasing a D3D11 CUDA handle: " + selected.error().message()); });
  auto report = [](const char *what, const Result<void> &done) {
    if (!done)
      quietly([&] { warn(std::string("releasing a D3D11 CUDA handle: ") + what + ": " + done.error().message()); });
  };
  if (linear)
    report("the linear buffer", o.runtime->free(std::exchange(linear, nullptr)));
  if (o.stream)
    o.runtime->stream_destroy(o.stream);
  bool array_freed = true;
  if (o.mipmap) {
    Result<void> freed = o.runtime->free_mipmapped_array(o.mipmap);
    report("the mipmapped array", freed);
    array_freed = static_cast<bool>(freed);
  }
  // Never the memory under an array still mapped from it: left behind.
  if (o.ext_mem && array_freed)
    report("the external memory", o.runtime->destroy_external_memory(o.ext_mem));
  else if (o.ext_mem)
    quietly([&] { warn("releasing a D3D11 CUDA handle: the external memory is left behind with its array"); });
  objects = CudaD3d11Objects{};
}

/// \brief Copies the linear buffer into level 0 on the
/// handle's stream and always synchronises it; every failure is a warning,
/// the only report a release can make.
void CudaHandle::D3d11State::write_back(void *linear_ptr) const noexcept {
  const CudaD3d11Objects &o = objects;
  if (!o.runtime || !o.runtime->available())
    return;
  if (Result<void> selected = o.runtime->set_device(o.device); !selected) {
    quietly([&] { warn("CUDA writes to a D3D11 texture were lost: " + selected.error().message()); });
    return;
  }
  Result<void> copied = o.runtime->copy_linear_to_array(o.array, linear_ptr, o.pitch, o.row_bytes, o.rows, o.stream);
  if (!copied)
    quietly([&] { warn("CUDA writes to a D3D11 texture were lost: " + copied.error().message()); });
  Result<void> synced = o.runtime->stream_synchronize(o.stream);
  if (!synced)
    quietly([&] { warn("writing CUDA's copy back into a D3D11 texture: " + synced.error().message()); });
}

#ifndef _WIN32
namespace detail {

Result<ImportDup> duplicate_for_import(int fd, const std::string &what) {
  UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) {
    int err = errno;
    return Error::io(err, what + ": duplicating fd " + std::to_string(fd));
  }
  ImportDup out;
  if (::fstat(dup.get(), &out.identity) != 0) {
    int err = errno;
    return Error::io(err, what + ": fstat of fd " + std::to_string(dup.get()));
  }
  out.fd = dup.release();
  return out;
}

// The CUDA reference says a failed import leaves the fd alone, but discrete
// NVIDIA drivers have been seen closing it. Close it only if the
// number still names the file we duplicated; a closed number (EBADF) is
// merely logged, and a number another thread reused for a different file in
// the meantime is left alone (spec §7 item 15 — the window shrinks to a
// reuse of the same file).
void reclaim_after_failed_import(const ImportDup &dup) noexcept {
  const int dup_fd = dup.fd;
  struct stat now {};
  if (::fstat(dup_fd, &now) != 0) {
    int err = errno;
    quietly([&] {
      debug("fd " + std::to_string(dup_fd) + " was already closed after the failed import (" + std::strerror(err) +
            "); nothing to reclaim");
    });
    return;
  }
  if (now.st_dev != dup.identity.st_dev || now.st_ino != dup.identity.st_ino) {
    quietly([&] {
      debug("fd " + std::to_string(dup_fd) +
            " names another file after the failed import (closed by the runtime and reused); left alone");
    });
    return;
  }
  if (::close(dup_fd) != 0) {
    int err = errno;
    quietly([&] { debug("closing fd " + std::to_string(dup_fd) + " after the failed import: " + std::strerror(err)); });
  }
}

} // namespace detail
#endif

Result<void *> CudaGlOps::register_buffer(std::uint32_t buffer_id) {
  return Error::not_implemented("CudaGlOps::register_buffer(" + std::to_string(buffer_id) +
                                "): these GL operations cannot register buffers");
}

std::shared_ptr<CudaGlOps> make_direct_cuda_gl_ops(std::shared_ptr<const CudaRuntime> runtime) {
  return std::make_shared<DirectGlOps>(resolve(std::move(runtime)));
}

const char *cuda_handle_kind_name(CudaHandleKind kind) noexcept {
  switch (kind) {
  case CudaHandleKind::GlBuffer: return "GlBuffer";
  case CudaHandleKind::ExternalMemory: return "ExternalMem";
  case CudaHandleKind::Detached: return "Detached";
  case CudaHandleKind::D3d11: return "D3d11";
  }
  return "Unknown";
}

Result<std::shared_ptr<CudaHandle>> CudaHandle::import_dma_fd(int fd, std::size_t size,
                                                              std::shared_ptr<const CudaRuntime> runtime) {
  runtime = resolve(std::move(runtime));
  if (!runtime->available())
    return runtime->unavailable_error("CudaHandle::import_dma_fd");
  if (fd < 0)
    return Error::invalid_argument("CudaHandle::import_dma_fd: fd " + std::to_string(fd) + " is not a descriptor");
  if (size == 0)
    return Error::invalid_size(0, "CudaHandle::import_dma_fd: zero bytes");
#ifdef _WIN32
  return Error::not_implemented("CudaHandle::import_dma_fd: DMA-BUF import exists on Linux only");
#else
  // CUDA never gets the caller's fd. The dup stays owned by us
  // until the runtime's verdict.
  Result<detail::ImportDup> dup = detail::duplicate_for_import(fd, "CudaHandle::import_dma_fd");
  if (!dup)
    return std::move(dup).error();

  bool fd_taken = false;
  Result<void *> imported = runtime->import_external_memory_fd(dup->fd, size, fd_taken);
  // A close after a refusal must be the tolerant one; after an acceptance
  // CUDA owns it, even when it returned no object.
  if (!imported) {
    debug(imported.error().message());
    if (!fd_taken)
      detail::reclaim_after_failed_import(*dup);
    return std::move(imported).error();
  }
  void *ext_mem = *imported;

  Result<void *> mapped = runtime->external_memory_mapped_buffer(ext_mem, size);
  if (!mapped) {
    debug(mapped.error().message());
    Result<void> destroyed = runtime->destroy_external_memory(ext_mem);
    if (!destroyed)
      warn("destroying the external memory after a failed buffer mapping: " + destroyed.error().message());
    return std::move(mapped).error();
  }
  void *device_ptr = *mapped;
  return adopt_external(std::move(runtime), ext_mem, device_ptr, size);
#endif
}

Result<std::shared_ptr<CudaHandle>> CudaHandle::register_gl_buffer(std::shared_ptr<CudaGlOps> ops,
                                                                   std::uint32_t buffer_id, std::size_t size) {
  if (!ops)
    return Error::invalid_argument("CudaHandle::register_gl_buffer: no GL operations");
  if (buffer_id == 0)
    return Error::invalid_argument("CudaHandle::register_gl_buffer: GL buffer name 0");
  Result<void *> resource = ops->register_buffer(buffer_id);
  if (!resource)
    return std::move(resource).error();
  return from_gl(*resource, size, std::move(ops));
}

std::shared_ptr<CudaHandle> CudaHandle::from_gl(void *resource, std::size_t size, std::shared_ptr<CudaGlOps> ops) {
  Backing b;
  b.kind = CudaHandleKind::GlBuffer;
  b.resource = resource;
  b.ops = std::move(ops);
  return std::make_shared<CudaHandle>(Token{}, std::move(b), size);
}

Result<std::shared_ptr<CudaHandle>> CudaHandle::from_client(const tm_cuda_gl_client_parts &parts) {
  if (!parts.resource)
    return Error::invalid_argument("CudaHandle::from_client: the parts carry no resource");
  Result<std::shared_ptr<CudaGlOps>> ops = cuda_gl_ops_from_client(parts.ops);
  if (!ops)
    return std::move(ops).error();
  return from_gl(parts.resource, parts.size, std::move(*ops));
}

std::shared_ptr<CudaHandle> CudaHandle::adopt_external(std::shared_ptr<const CudaRuntime> runtime, void *ext_mem,
                                                       void *device_ptr, std::size_t size) {
  Backing b;
  b.kind = CudaHandleKind::ExternalMemory;
  b.runtime = std::move(runtime);
  b.ext_mem = ext_mem;
  b.device_ptr = device_ptr;
  return std::make_shared<CudaHandle>(Token{}, std::move(b), size);
}

std::shared_ptr<CudaHandle> CudaHandle::adopt_d3d11(CudaD3d11Objects objects) {
  if (objects.pitch == 0)
    objects.pitch = objects.row_bytes;
  if (objects.pitch < objects.row_bytes)
    return nullptr;
  Result<std::size_t> size = checked_mul(objects.pitch, objects.rows, "CudaHandle::adopt_d3d11");
  if (!size)
    return nullptr;
  Backing b;
  b.kind = CudaHandleKind::D3d11;
  b.d3d11 = std::make_shared<D3d11State>();
  b.d3d11->objects = std::move(objects);
  return std::make_shared<CudaHandle>(Token{}, std::move(b), *size);
}

CudaHandle::~CudaHandle() {
  const Backing &b = backing_;
  if (b.kind == CudaHandleKind::GlBuffer) {
    if (b.ops)
      b.ops->unregister(b.resource);
  } else if (b.kind == CudaHandleKind::ExternalMemory) {
    if (!b.runtime || !b.runtime->loaded())
      return;
    // NVIDIA's reference: a buffer mapped from external memory is freed with
    // cudaFree (cuMemFree), and that must happen before the memory is
    // destroyed.
    if (b.device_ptr) {
      Result<void> freed = b.runtime->free(b.device_ptr);
      if (!freed)
        quietly([&] { warn("freeing the external-memory mapping: " + freed.error().message()); });
    }
    if (b.ext_mem) {
      Result<void> destroyed = b.runtime->destroy_external_memory(b.ext_mem);
      if (!destroyed)
        quietly([&] { warn(destroyed.error().message()); });
    }
  }
}

CudaHandleKind CudaHandle::kind() const noexcept {
  std::lock_guard lock(mu_);
  return backing_.kind;
}

std::string CudaHandle::describe() const {
  std::ostringstream os;
  os << "CudaHandle { kind: " << cuda_handle_kind_name(kind()) << ", size: " << size_ << " }";
  return os.str();
}

Result<CudaMap> CudaHandle::map_impl(bool writable) const {
  Backing b;
  {
    std::lock_guard lock(mu_);
    b = backing_;
  }
  std::shared_ptr<const void> keep = shared_from_this();
  if (b.kind == CudaHandleKind::GlBuffer) {
    if (!b.ops)
      return Error::invalid_operation("CudaHandle::map: GL buffer handle without GL operations");
    // The GL thread round trip runs without the handle's lock held.
    Result<CudaDeviceRange> range = b.ops->map(b.resource);
    if (!range)
      return std::move(range).error();
    if (!range->ptr && range->length != 0) {
      b.ops->unmap(b.resource);
      return Error::device("CudaHandle::map: the GL mapping reported " + std::to_string(range->length) +
                           " bytes at a null address");
    }
    return CudaMap(std::move(keep), range->ptr, range->length, writable, b.ops, b.resource);
  }
  if (b.kind == CudaHandleKind::ExternalMemory)
    return CudaMap(std::move(keep), b.device_ptr, size_, writable, nullptr, nullptr);
  if (b.kind == CudaHandleKind::D3d11 && b.d3d11)
    return map_d3d11(b.d3d11, writable);
  return Error::invalid_operation("CudaHandle::map: the handle is detached (its GL registration was handed across "
                                  "the C ABI)");
}

/// \brief Copies level 0 into the linear buffer on the handle's own stream,
/// behind the recorded write, and hands out the buffer.
Result<CudaMap> CudaHandle::map_d3d11(const std::shared_ptr<D3d11State> &state, bool writable) const {
  const CudaD3d11Objects &o = state->objects;
  const char *what = writable ? "CudaHandle::map_mut (D3D11)" : "CudaHandle::map (D3D11)";
  if (!o.runtime || !o.runtime->available())
    return Error::not_implemented(std::string(what) + ": CUDA is unavailable");
  // Device selection is per thread.
  if (Result<void> selected = o.runtime->set_device(o.device); !selected)
    return std::move(selected).error();
  std::lock_guard lock(state->linear_mu);
  if (!state->linear) {
    Result<void *> allocated = o.runtime->malloc(size_);
    if (!allocated)
      return std::move(allocated).error();
    state->linear = *allocated;
  }
  const std::uint64_t recorded = o.recorded_write ? o.recorded_write->load(std::memory_order_acquire) : 0;
  bool waited = false;
  std::string why_not;
  if (recorded != 0 && o.semaphore) {
    Result<void> queued = o.runtime->wait_external_semaphore(o.semaphore, recorded, o.stream);
    if (queued)
      waited = true;
    else
      why_not = "the wait could not be queued: " + queued.error().message();
  } else if (recorded != 0) {
    why_not = "no fence semaphore was imported";
  }
  if (!d3d11_copy_allowed(recorded, waited)) {
    std::string message = std::string(what) + ": write " + std::to_string(recorded) +
                          " is recorded on the texture and CUDA cannot wait for it (" + why_not +
                          "); use the host map, which the device orders";
    quietly([&] { warn(message); });
    return Error::would_block(message);
  }
  if (Result<void> copied =
          o.runtime->copy_array_to_linear(state->linear, o.pitch, o.array, o.row_bytes, o.rows, o.stream);
      !copied) {
    quietly([&] { warn(std::string(what) + ": " + copied.error().message()); });
    return std::move(copied).error();
  }
  if (Result<void> synced = o.runtime->stream_synchronize(o.stream); !synced) {
    quietly([&] { warn(std::string(what) + ": " + synced.error().message()); });
    return std::move(synced).error();
  }
  std::shared_ptr<CudaGlOps> release;
  if (writable) {
    D3d11State *raw = state.get();
    release = std::make_shared<D3d11WriteBack>(state, [raw](void *linear) { raw->write_back(linear); });
  }
  return CudaMap(shared_from_this(), state->linear, size_, writable, std::move(release), state->linear);
}

bool d3d11_copy_allowed(std::uint64_t recorded_write, bool wait_queued) noexcept {
  return recorded_write == 0 || wait_queued;
}

} // namespace tensormem
