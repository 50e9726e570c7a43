// SPDX-License-Identifier: Apache-2.0
// CudaExternalSemaphore: the import of an fd or a Win32 handle (the fd's
// duplicate handed over, the caller's never), stream-ordered signal and
// wait, destruction.
#include "cuda_fd.hpp"
#include "cuda_log.hpp"

#include <tensormem/internal/cuda_semaphore.hpp>

#include <string>
#include <utility>

namespace tensormem {
namespace {

using Type = CudaExternalSemaphore::Type;

bool is_fd_type(Type type) noexcept { return type == Type::OpaqueFd || type == Type::TimelineSemaphoreFd; }

bool is_win32_type(Type type) noexcept {
  switch (type) {
  case Type::OpaqueWin32:
  case Type::OpaqueWin32Kmt:
  case Type::D3D12Fence:
  case Type::D3D11Fence:
  case Type::TimelineSemaphoreWin32: return true;
  default: return false;
  }
}

std::shared_ptr<const CudaRuntime> resolve(std::shared_ptr<const CudaRuntime> runtime) {
  return runtime ? std::move(runtime) : CudaRuntime::get();
}

// The descriptor both imports send: long, zero-filled, type set.
cudaffi::ExternalSemaphoreHandleDesc zeroed_desc(Type type) noexcept {
  cudaffi::ExternalSemaphoreHandleDesc desc;
  cudaffi::zero_fill(desc);
  desc.type = type;
  return desc;
}

} // namespace

CudaExternalSemaphore::CudaExternalSemaphore(std::shared_ptr<const CudaRuntime> runtime, void *sem, Type type) noexcept
    : runtime_(std::move(runtime)), sem_(sem), type_(type) {}

CudaExternalSemaphore::CudaExternalSemaphore(CudaExternalSemaphore &&other) noexcept
    : runtime_(std::move(other.runtime_)), sem_(std::exchange(other.sem_, nullptr)), type_(other.type_) {}

CudaExternalSemaphore &CudaExternalSemaphore::operator=(CudaExternalSemaphore &&other) noexcept {
  if (this != &other) {
    CudaExternalSemaphore old(std::move(*this));
    runtime_ = std::move(other.runtime_);
    sem_ = std::exchange(other.sem_, nullptr);
    type_ = other.type_;
  }
  return *this;
}

CudaExternalSemaphore::~CudaExternalSemaphore() {
  if (!sem_)
    return;
  Result<void> destroyed = destroy();
  if (!destroyed)
    cuda_log::warn("destroying an external semaphore: " + destroyed.error().message());
}

Result<CudaExternalSemaphore> CudaExternalSemaphore::import(std::shared_ptr<const CudaRuntime> runtime,
                                                            const cudaffi::ExternalSemaphoreHandleDesc &desc) {
  Result<void *> imported = runtime->import_external_semaphore(desc);
  if (!imported)
    return std::move(imported).error();
  return CudaExternalSemaphore(std::move(runtime), *imported, desc.type);
}

Result<CudaExternalSemaphore> CudaExternalSemaphore::import_fd(Type type, int fd,
                                                               std::shared_ptr<const CudaRuntime> runtime) {
  const std::string what = "CudaExternalSemaphore::import_fd(" + cuda_semaphore_type_name(type) + ")";
  // Bad input is refused before CUDA is asked anything.
  if (!is_fd_type(type))
    return Error::invalid_argument(what + ": not a file-descriptor type (OpaqueFd or TimelineSemaphoreFd)");
  if (fd < 0)
    return Error::invalid_argument(what + ": fd " + std::to_string(fd) + " is not a descriptor");
  runtime = resolve(std::move(runtime));
  if (Result<void> usable = runtime->semaphores_usable("cudaImportExternalSemaphore"); !usable)
    return std::move(usable).error();
#ifdef _WIN32
  return Error::not_implemented(what + ": semaphores shared as fds exist on Linux only");
#else
  // CUDA owns the fd it imports: it gets a duplicate, ours until its verdict.
  Result<detail::ImportDup> dup = detail::duplicate_for_import(fd, what);
  if (!dup)
    return std::move(dup).error();
  cudaffi::ExternalSemaphoreHandleDesc desc = zeroed_desc(type);
  desc.handle.fd = dup->fd;
  Result<CudaExternalSemaphore> imported = import(std::move(runtime), desc);
  if (!imported) {
    cuda_log::debug(imported.error().message());
    detail::reclaim_after_failed_import(*dup);
  }
  return imported;
#endif
}

Result<CudaExternalSemaphore> CudaExternalSemaphore::import_win32(Type type, void *handle,
                                                                  std::shared_ptr<const CudaRuntime> runtime) {
  const std::string what = "CudaExternalSemaphore::import_win32(" + cuda_semaphore_type_name(type) + ")";
  if (!is_win32_type(type))
    return Error::invalid_argument(
        what + ": not a Win32 handle type (D3D11Fence, D3D12Fence, TimelineSemaphoreWin32, OpaqueWin32[Kmt])");
  if (!handle)
    return Error::invalid_argument(what + ": null handle");
  runtime = resolve(std::move(runtime));
  // Named objects are not supported: the handle alone identifies it, and
  // CUDA duplicates its own reference (the caller's handle stays theirs).
  cudaffi::ExternalSemaphoreHandleDesc desc = zeroed_desc(type);
  desc.handle.win32.handle = handle;
  desc.handle.win32.name = nullptr;
  return import(std::move(runtime), desc);
}

Result<void> CudaExternalSemaphore::usable(const char *what) const {
  if (!sem_)
    return Error::invalid_operation(std::string("CudaExternalSemaphore::") + what + ": the semaphore was destroyed");
  return {};
}

Result<void> CudaExternalSemaphore::signal(std::uint64_t value, CudaStream stream) const {
  if (Result<void> ok = usable("signal"); !ok)
    return ok;
  return runtime_->signal_external_semaphore(sem_, value, stream);
}

Result<void> CudaExternalSemaphore::wait(std::uint64_t value, CudaStream stream) const {
  if (Result<void> ok = usable("wait"); !ok)
    return ok;
  return runtime_->wait_external_semaphore(sem_, value, stream);
}

Result<void> CudaExternalSemaphore::destroy() {
  if (Result<void> ok = usable("destroy"); !ok)
    return ok;
  // Given up whatever the outcome: a semaphore CUDA failed to destroy is not
  // ours to try again.
  void *sem = std::exchange(sem_, nullptr);
  return runtime_->destroy_external_semaphore(sem);
}

} // namespace tensormem
