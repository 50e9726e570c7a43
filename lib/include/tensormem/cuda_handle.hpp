// SPDX-License-Identifier: Apache-2.0
#pragma once

// CUDA access to a storage: a CudaHandle (a GL buffer's CUDA registration,
// CUDA external memory imported from a DMA-BUF fd, or a Direct3D 11 texture
// imported as a CUDA array, cuda_d3d11.hpp) and CudaMap, a scoped device
// pointer. Every failure is an Error; callers then use the ordinary host map.

#include <tensormem/export.hpp>

#include <tensormem/cuda_types.hpp>
#include <tensormem/result.hpp>
#include <tensormem/tensormem_cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace tensormem {

/// The GL side of a GL-buffer registration. Every call runs on
/// the thread where the buffer's GL context is current: an implementation
/// by the GL worker posts each call to its thread and waits. Thread-safe.
class TENSORMEM_API CudaGlOps {
public:
  virtual ~CudaGlOps() = default;

  /// cudaGraphicsGLRegisterBuffer(buffer, flags none). The default refuses
  /// with NotImplemented (a channel imported across the C ABI cannot
  /// register: it only carries map/unmap/unregister).
  virtual Result<void *> register_buffer(std::uint32_t buffer_id);
  /// Map on the default stream and get the pointer; on failure nothing stays
  /// mapped.
  virtual Result<CudaDeviceRange> map(void *resource) = 0;
  virtual void unmap(void *resource) noexcept = 0;
  virtual void unregister(void *resource) noexcept = 0;
};

/// A CudaGlOps that calls `runtime`'s GL primitives on the calling thread.
/// Only correct where the GL context is current on every calling thread;
/// the GL worker wraps each call in a task on its own thread.
TENSORMEM_API std::shared_ptr<CudaGlOps> make_direct_cuda_gl_ops(std::shared_ptr<const CudaRuntime> runtime);

/// Imports a CUDA GL channel from a C client: a NULL ctx,
/// retain, release, map, unmap or unregister is InvalidArgument and nothing
/// is called; otherwise retain(ctx) is called exactly once now and
/// release(ctx) exactly once when the returned operations are destroyed.
/// map() returns the pair only for return code 0 (any other code is a
/// Device error naming it).
TENSORMEM_API Result<std::shared_ptr<CudaGlOps>> cuda_gl_ops_from_client(const tm_client_state &state,
                                                                         tm_cuda_map_fn map, tm_cuda_unmap_fn unmap,
                                                                         tm_cuda_unregister_fn unregister);
inline Result<std::shared_ptr<CudaGlOps>> cuda_gl_ops_from_client(const tm_cuda_gl_ops &ops) {
  return cuda_gl_ops_from_client(ops.state, ops.map, ops.unmap, ops.unregister);
}

/// A scoped device pointer. Move-only; it may be moved to
/// and used on another thread. Its release action (a GL unmap for a GL
/// buffer, nothing for persistent external memory) runs exactly once: on
/// release() or on destruction, whichever comes first. It keeps its handle
/// alive. Header-only, so it costs nothing in a build that never loads CUDA.
class CudaMap {
public:
  CudaMap() noexcept = default;
  CudaMap(CudaMap &&other) noexcept { swap(other); }
  CudaMap &operator=(CudaMap &&other) noexcept {
    CudaMap tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  CudaMap(const CudaMap &) = delete;
  CudaMap &operator=(const CudaMap &) = delete;
  ~CudaMap() { release(); }

  void *device_ptr() const noexcept { return ptr_; }
  std::size_t length() const noexcept { return length_; }
  bool empty() const noexcept { return length_ == 0; }
  /// Taken with map_mut().
  bool writable() const noexcept { return writable_; }
  /// Still holding its mapping (not released, not moved from).
  bool valid() const noexcept { return keep_ != nullptr; }

  /// Ends the mapping now; later calls and the destructor do nothing.
  void release() noexcept {
    // Taken out before it runs, so it can never run twice.
    std::shared_ptr<CudaGlOps> ops = std::exchange(unmap_ops_, nullptr);
    void *resource = std::exchange(resource_, nullptr);
    if (ops)
      ops->unmap(resource);
    keep_.reset();
    ptr_ = nullptr;
    length_ = 0;
  }

  /// Restricts the map to [offset, offset + length) of itself (a tensor
  /// view's window). False, and unchanged, when that range does not fit.
  bool narrow(std::size_t offset, std::size_t length) noexcept {
    if (offset > length_ || length > length_ - offset)
      return false;
    ptr_ = static_cast<std::byte *>(ptr_) + offset;
    length_ = length;
    return true;
  }

private:
  friend class CudaHandle;
  CudaMap(std::shared_ptr<const void> keep, void *ptr, std::size_t length, bool writable,
          std::shared_ptr<CudaGlOps> unmap_ops, void *resource) noexcept
      : keep_(std::move(keep)), ptr_(ptr), length_(length), writable_(writable), unmap_ops_(std::move(unmap_ops)),
        resource_(resource) {}

  void swap(CudaMap &o) noexcept {
    std::swap(keep_, o.keep_);
    std::swap(ptr_, o.ptr_);
    std::swap(length_, o.length_);
    std::swap(writable_, o.writable_);
    std::swap(unmap_ops_, o.unmap_ops_);
    std::swap(resource_, o.resource_);
  }

  std::shared_ptr<const void> keep_;
  void *ptr_ = nullptr;
  std::size_t length_ = 0;
  bool writable_ = false;
  std::shared_ptr<CudaGlOps> unmap_ops_;
  void *resource_ = nullptr;
};

/// A GL registration on its way across the C ABI. Holds one reference on
/// the channel; parts().ops.state borrows it, so the callee retains before
/// this object goes. Move-only, for the calling thread.
class TENSORMEM_API CudaGlClientParts {
public:
  CudaGlClientParts(CudaGlClientParts &&other) noexcept
      : parts_(other.parts_), owned_(std::exchange(other.owned_, false)) {}
  CudaGlClientParts &operator=(CudaGlClientParts &&other) noexcept;
  CudaGlClientParts(const CudaGlClientParts &) = delete;
  CudaGlClientParts &operator=(const CudaGlClientParts &) = delete;
  ~CudaGlClientParts();

  const tm_cuda_gl_client_parts &parts() const noexcept { return parts_; }

private:
  friend class CudaHandle;
  CudaGlClientParts(const tm_cuda_gl_client_parts &parts) noexcept : parts_(parts), owned_(true) {}
  tm_cuda_gl_client_parts parts_;
  bool owned_;
};

enum class CudaHandleKind : std::uint8_t { GlBuffer, ExternalMemory, Detached, D3d11 };
/// "GlBuffer", "ExternalMem", "Detached", "D3d11".
TENSORMEM_API const char *cuda_handle_kind_name(CudaHandleKind kind) noexcept;

/// The CUDA objects of one imported Direct3D 11 texture:
/// what import_d3d11_texture (cuda_d3d11.hpp) hands to the handle, which
/// owns them from then on, except the semaphore.
struct CudaD3d11Objects {
  std::shared_ptr<const CudaRuntime> runtime;
  void *ext_mem = nullptr;     ///< the imported texture
  void *mipmap = nullptr;      ///< its mapped mipmapped array
  void *array = nullptr;       ///< level 0 of it (owned by the mipmapped array)
  CudaStream stream = nullptr; ///< the handle's own stream
  int device = 0;              ///< the CUDA device, selected before every step
  /// Borrowed: the process semaphore of the D3D11 fence, never destroyed
  /// by a handle; null: none.
  void *semaphore = nullptr;
  /// The storage's recorded write (0: none), shared with it.
  std::shared_ptr<const std::atomic<std::uint64_t>> recorded_write;
  std::size_t row_bytes = 0; ///< tight bytes of one texture row
  std::size_t rows = 0;      ///< texture height
  /// The linear buffer's row pitch: the CPU layout of the memory (the
  /// staging pitch), so CUDA and the CPU agree on every offset; 0 means
  /// row_bytes. Never below row_bytes.
  std::size_t pitch = 0;
};

/// CUDA's view of one storage. Shared (std::shared_ptr) and usable from any
/// thread; a CudaMap keeps its handle alive.
class TENSORMEM_API CudaHandle : public std::enable_shared_from_this<CudaHandle> {
public:
  /// Imports `fd` (a DMA-BUF, `size` bytes) as CUDA external memory and maps
  /// it. CUDA gets a DUP of `fd`, which it owns on success; on failure the
  /// dup is reclaimed with a tolerant close and `fd` itself is never touched.
  /// `runtime` null: CudaRuntime::get().
  /// Errors: NotImplemented (no usable runtime), InvalidArgument/InvalidSize
  /// (bad fd or size), Io (the dup failed), Device (the runtime refused).
  static Result<std::shared_ptr<CudaHandle>> import_dma_fd(int fd, std::size_t size,
                                                           std::shared_ptr<const CudaRuntime> runtime = {});
  /// Registers GL buffer `buffer_id` through `ops` (on the GL thread).
  static Result<std::shared_ptr<CudaHandle>> register_gl_buffer(std::shared_ptr<CudaGlOps> ops, std::uint32_t buffer_id,
                                                                std::size_t size);
  /// Adopts an existing GL registration; the handle unregisters it once.
  static std::shared_ptr<CudaHandle> from_gl(void *resource, std::size_t size, std::shared_ptr<CudaGlOps> ops);
  /// Adopts a registration that arrived through the C channel: imports the
  /// channel (which retains) and unregisters through it when destroyed.
  static Result<std::shared_ptr<CudaHandle>> from_client(const tm_cuda_gl_client_parts &parts);
  /// Adopts external memory and its mapped pointer. With a runtime the
  /// handle frees and destroys them; with none it owns nothing (a seam for
  /// tests with synthetic pointers).
  static std::shared_ptr<CudaHandle> adopt_external(std::shared_ptr<const CudaRuntime> runtime, void *ext_mem,
                                                    void *device_ptr, std::size_t size);
  /// Adopts the objects of an imported D3D11 texture; the size is
  /// pitch × rows (nullptr when that overflows or the pitch is below a row). Made by
  /// import_d3d11_texture; it releases them in reverse order of creation.
  static std::shared_ptr<CudaHandle> adopt_d3d11(CudaD3d11Objects objects);

  CudaHandle(const CudaHandle &) = delete;
  CudaHandle &operator=(const CudaHandle &) = delete;
  /// Detached: nothing. GL buffer: unregister once. External memory: cudaFree
  /// of the mapped pointer, THEN cudaDestroyExternalMemory (DESIGN §8; the
  /// seed skips the free, against NVIDIA's reference).
  /// D3D11: on the handle's device, free the linear buffer,
  /// destroy the stream, free the mipmapped array, destroy the memory.
  ~CudaHandle();

  CudaHandleKind kind() const noexcept;
  std::size_t size() const noexcept { return size_; }
  /// "CudaHandle { kind: GlBuffer, size: 4096 }".
  std::string describe() const;

  /// A device pointer: GL buffer → mapped through the ops (released by a GL
  /// unmap); external memory → the persistent pointer with length size()
  /// (released by nothing); D3D11 → the texture copied into the handle's
  /// linear buffer, rows at the memory's pitch (see docs/seed-deviations.md;
  /// WouldBlock when a recorded write cannot be waited for); detached →
  /// InvalidOperation. Maps of one D3D11 handle share its buffer: callers
  /// serialise them.
  Result<CudaMap> map() const { return map_impl(false); }
  /// Same as map() for the other kinds, marked writable;
  /// for D3D11 its release writes the buffer back into the texture and
  /// synchronises.
  Result<CudaMap> map_mut() const { return map_impl(true); }

  /// Hands a GL registration across the C ABI: on success the
  /// handle becomes Detached (it no longer unregisters). Any other kind is
  /// InvalidArgument and the handle is left as it was (the seed destroyed
  /// it, spec §7 item 14).
  Result<CudaGlClientParts> into_client_parts();

private:
  struct Token {};
  struct D3d11State;
  // One plain record for every kind (kind Detached: nothing is owned).
  struct Backing {
    CudaHandleKind kind = CudaHandleKind::Detached;
    void *resource = nullptr;                   // GlBuffer
    std::shared_ptr<CudaGlOps> ops;             // GlBuffer
    std::shared_ptr<const CudaRuntime> runtime; // ExternalMemory (null: owns nothing)
    void *ext_mem = nullptr;                    // ExternalMemory
    void *device_ptr = nullptr;                 // ExternalMemory
    std::shared_ptr<D3d11State> d3d11;          // D3d11
  };

public:
  CudaHandle(Token, Backing backing, std::size_t size) noexcept : backing_(std::move(backing)), size_(size) {}

private:
  Result<CudaMap> map_impl(bool writable) const;
  Result<CudaMap> map_d3d11(const std::shared_ptr<D3d11State> &state, bool writable) const;

  mutable std::mutex mu_;
  Backing backing_;
  std::size_t size_;
};

} // namespace tensormem
