// SPDX-License-Identifier: Apache-2.0
#pragma once

// A CUDA external semaphore: another API's semaphore or fence (a Vulkan
// semaphore exported as an fd, a D3D11/D3D12 fence's shared handle)
// imported into CUDA, so that CUDA work on a stream can wait for the
// producer's GPU work and signal when its own is done, without the CPU
// waiting in between. Both CUDA APIs serve it (cudaImportExternalSemaphore /
// cuImportExternalSemaphore, ...). See docs/cuda.md, "External semaphores".

#include <tensormem/export.hpp>

#include <tensormem/internal/cuda_ffi.hpp>
#include <tensormem/internal/cuda_runtime.hpp>
#include <tensormem/result.hpp>

#include <cstdint>
#include <memory>

namespace tensormem {

/// One imported external semaphore. Move-only; destroyed
/// (cudaDestroyExternalSemaphore) with the object or by destroy(). The
/// operations are thread-safe (CUDA's are) and only queue work: the CPU
/// never waits in signal() or wait().
class TENSORMEM_API CudaExternalSemaphore {
public:
  using Type = cudaffi::ExternalSemaphoreHandleType;

  /// Imports a semaphore exported as a file descriptor: `type` OpaqueFd (a
  /// binary semaphore) or TimelineSemaphoreFd. CUDA takes ownership of the
  /// fd it is given, so it is given a close-on-exec duplicate: `fd` itself
  /// stays the caller's, open, whatever happens (a refused duplicate is
  /// closed here, tolerantly, as for DMA-BUF imports). Linux only.
  static Result<CudaExternalSemaphore> import_fd(Type type, int fd,
                                                 std::shared_ptr<const CudaRuntime> runtime = nullptr);
  /// Imports a semaphore shared as a Win32 handle: `type` D3D11Fence,
  /// D3D12Fence, TimelineSemaphoreWin32, OpaqueWin32 or OpaqueWin32Kmt.
  /// CUDA does not take ownership of a handle: the caller keeps it and
  /// closes it when it likes (after the import, CUDA holds its own
  /// reference). Only a Windows driver accepts these; elsewhere CUDA refuses.
  static Result<CudaExternalSemaphore> import_win32(Type type, void *handle,
                                                    std::shared_ptr<const CudaRuntime> runtime = nullptr);

  CudaExternalSemaphore(CudaExternalSemaphore &&other) noexcept;
  CudaExternalSemaphore &operator=(CudaExternalSemaphore &&other) noexcept;
  CudaExternalSemaphore(const CudaExternalSemaphore &) = delete;
  CudaExternalSemaphore &operator=(const CudaExternalSemaphore &) = delete;
  /// Destroys the semaphore; a failure is logged. Every wait and signal
  /// queued on it must have completed (synchronise their streams first).
  ~CudaExternalSemaphore();

  /// Queues on `stream` (nullptr: the default stream) a signal of the
  /// semaphore to `value`, run once the work queued before it is done.
  /// Fences and timeline semaphores are set to `value`, which must be
  /// above every value signalled before; a binary semaphore (OpaqueFd,
  /// OpaqueWin32*) becomes signalled and ignores the value.
  Result<void> signal(std::uint64_t value, CudaStream stream) const;
  /// Queues on `stream` a wait until the semaphore reaches `value` (fence
  /// and timeline) or is signalled (binary, which the wait then resets).
  /// Work queued after it runs once it is satisfied; the CPU does not wait
  /// (a stream synchronisation does).
  Result<void> wait(std::uint64_t value, CudaStream stream) const;
  /// Destroys the semaphore now and reports the outcome; afterwards the
  /// object is empty and its destructor does nothing.
  Result<void> destroy();

  Type type() const noexcept { return type_; }
  /// False after destroy() or a move.
  bool valid() const noexcept { return sem_ != nullptr; }
  /// The CUDA object (cudaExternalSemaphore_t / CUexternalSemaphore).
  void *native() const noexcept { return sem_; }

private:
  CudaExternalSemaphore(std::shared_ptr<const CudaRuntime> runtime, void *sem, Type type) noexcept;
  static Result<CudaExternalSemaphore> import(std::shared_ptr<const CudaRuntime> runtime,
                                              const cudaffi::ExternalSemaphoreHandleDesc &desc);
  Result<void> usable(const char *what) const;

  std::shared_ptr<const CudaRuntime> runtime_;
  void *sem_ = nullptr;
  Type type_ = Type::OpaqueFd;
};

} // namespace tensormem
