// SPDX-License-Identifier: Apache-2.0
#pragma once

// CUDA, reached through dlopen only: CUDA's runtime API
// (libcudart) or, where only the NVIDIA driver is installed, its driver API
// (libcuda). Nothing here needs CUDA headers or links against CUDA.

#include <tensormem/export.hpp>

#include <tensormem/cuda_types.hpp>
#include <tensormem/internal/cuda_ffi.hpp>
#include <tensormem/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tensormem {

namespace detail {
class CudaApi;
}

/// Which CUDA API a CudaRuntime reaches.
enum class CudaBackend : std::uint8_t {
  None,    ///< nothing loaded
  Runtime, ///< libcudart / cudart64_*.dll
  Driver,  ///< libcuda.so.1 / nvcuda.dll
};
/// "none", "runtime", "driver".
TENSORMEM_API const char *cuda_backend_name(CudaBackend backend) noexcept;

/// One attempt at loading CUDA: the library it opened (never closed
/// again), the API it offers, and whether a device answered. Every
/// operation below means the same on either backend; error messages name
/// the call actually made (cudaMemcpy, cuMemcpyDtoH_v2, ...).
class TENSORMEM_API CudaRuntime {
public:
  /// The process runtime: load_default() on first use, cached (including
  /// "unavailable") and never retried; the outcome is logged once at info
  /// level. Thread-safe, and cheap after the first call.
  static std::shared_ptr<const CudaRuntime> get();

  /// The loader order, fresh (no cache): $TENSORMEM_CUDA_API = runtime or
  /// driver forces that API alone; unset or empty, the runtime candidates
  /// (default_candidates()) are tried first and the driver
  /// (driver_candidates()) when they give no usable device, except that
  /// $TENSORMEM_CUDART set means that file and nothing else. Any other
  /// value of $TENSORMEM_CUDA_API is unavailable, saying so.
  static std::shared_ptr<const CudaRuntime> load_default();

  /// A fresh load of the runtime API from `candidates`, tried in order,
  /// bypassing the process cache: for tests and tools. Never null; check
  /// loaded()/available().
  static std::shared_ptr<const CudaRuntime> load(std::span<const std::string> candidates);
  /// The same for the driver API.
  static std::shared_ptr<const CudaRuntime> load_driver(std::span<const std::string> candidates);

  /// The runtime candidates: only $TENSORMEM_CUDART when it is set and
  /// non-empty; otherwise libcudart.so, .so.13, .so.12, .so.11.0 (Linux) or
  /// cudart64_13/12/110.dll, then the same names under %CUDA_PATH%\bin
  /// (Windows).
  static std::vector<std::string> default_candidates();
  /// The driver candidates: only $TENSORMEM_CUDA_DRIVER when it is set and
  /// non-empty; otherwise libcuda.so.1 (Linux) or nvcuda.dll (Windows).
  static std::vector<std::string> driver_candidates();

  CudaRuntime(const CudaRuntime &) = delete;
  CudaRuntime &operator=(const CudaRuntime &) = delete;
  ~CudaRuntime();

  /// A library opened and every required symbol resolved.
  bool loaded() const noexcept { return api_ != nullptr; }
  /// loaded() and the API reported at least one device (and, for the
  /// driver, its primary context was retained). Every helper below refuses
  /// (without calling CUDA) when this is false.
  bool available() const noexcept { return available_; }
  int device_count() const noexcept { return device_count_; }
  /// The API of the library loaded (None when nothing loaded).
  CudaBackend backend() const noexcept { return backend_; }
  /// The file actually opened (dladdr / GetModuleFileNameW), empty when none.
  const std::string &runtime_path() const noexcept { return path_; }
  /// Why CUDA is not available (empty when it is).
  const std::string &reason() const noexcept { return reason_; }

  /// "<CUDA's text> (cudaError n)" (runtime) or "<text> (CUresult n)"
  /// (driver); the code alone without text.
  std::string error_text(cudaffi::Status status) const;
  /// Device error for `call` failing with `status`.
  Error call_error(const char *call, cudaffi::Status status) const;
  /// NotImplemented error saying why CUDA cannot be used (for `what`).
  Error unavailable_error(const char *what) const;

  // Generic primitives. Without a runtime they fail
  // without touching any pointer.
  Result<void> memcpy(void *dst, const void *src, std::size_t count, cudaffi::MemcpyKind kind) const;
  Result<void> memcpy_device_to_host(void *host, const void *device, std::size_t count) const {
    return memcpy(host, device, count, cudaffi::MemcpyKind::DeviceToHost);
  }
  Result<void> memcpy_host_to_device(void *device, const void *host, std::size_t count) const {
    return memcpy(device, host, count, cudaffi::MemcpyKind::HostToDevice);
  }
  /// Device memory (cudaMalloc / cuMemAlloc_v2, optional in a runtime:
  /// NotImplemented where the library lacks it).
  Result<void *> malloc(std::size_t size) const;
  /// cudaFree / cuMemFree_v2 of an allocation or of a mapped buffer.
  Result<void> free(void *device_ptr) const;
  Result<CudaStream> stream_create() const;
  Result<void> stream_synchronize(CudaStream stream) const;
  /// No-op without a runtime; errors are logged, not returned.
  void stream_destroy(CudaStream stream) const noexcept;

  // GL-buffer registration primitives. They MUST run on the
  // thread where the buffer's GL context is current (the GL worker).
  Result<void *> gl_register_buffer(std::uint32_t buffer_id) const;
  /// Maps on the default stream and queries the pointer; a failed query
  /// unmaps again.
  Result<CudaDeviceRange> gl_map_resource(void *resource) const;
  void gl_unmap_resource(void *resource) const noexcept;
  void gl_unregister_resource(void *resource) const noexcept;

  // External memory, the steps CudaHandle composes.
  /// Imports `fd` as OpaqueFd external memory of `size` bytes (long,
  /// zero-filled descriptor). `fd_taken` is set when CUDA now owns `fd`:
  /// on success, and on a success status that returned no object.
  Result<void *> import_external_memory_fd(int fd, std::size_t size, bool &fd_taken) const;
  /// The whole of `ext_mem` mapped as one buffer (free it with free()
  /// before destroy_external_memory()).
  Result<void *> external_memory_mapped_buffer(void *ext_mem, std::size_t size) const;
  Result<void> destroy_external_memory(void *ext_mem) const;

  // External semaphores, the steps CudaExternalSemaphore composes
  // (cuda_semaphore.hpp). Their entry points are optional: where the
  // library lacks one, every step is NotImplemented naming it, and nothing
  // else is affected (optional everywhere, see docs/seed-deviations.md).
  /// The first semaphore entry point the library lacks (nullptr: none, or
  /// nothing loaded).
  const char *missing_semaphore_symbol() const noexcept;
  /// Fine when the steps below can run; otherwise why not, for `what`:
  /// CUDA unavailable, or NotImplemented naming the missing entry point.
  Result<void> semaphores_usable(const char *what) const;
  /// Imports the semaphore `desc` describes (a long, zero-filled descriptor
  /// with type and handle set). For an fd type CUDA owns `desc.handle.fd`
  /// once this succeeds, and not otherwise.
  Result<void *> import_external_semaphore(const cudaffi::ExternalSemaphoreHandleDesc &desc) const;
  /// Queues a signal to `value` on `stream` (zero-filled _v2 parameters with
  /// only fence.value set; binary semaphores ignore the value).
  Result<void> signal_external_semaphore(void *ext_sem, std::uint64_t value, CudaStream stream) const;
  /// Queues a GPU-side wait for `value` on `stream` (same parameters rule).
  Result<void> wait_external_semaphore(void *ext_sem, std::uint64_t value, CudaStream stream) const;
  Result<void> destroy_external_semaphore(void *ext_sem) const;

  // Direct3D 11 textures, the steps import_d3d11_texture
  // composes (cuda_d3d11.hpp). Their entry points are optional like the
  // semaphore ones: a library without them serves everything else, and
  // these steps are NotImplemented naming the missing entry point.
  /// The first entry point of the D3D11 path the library lacks (nullptr:
  /// none, or nothing loaded).
  const char *missing_d3d11_symbol() const noexcept;
  /// Fine when the steps below can run; otherwise why not, for `what`.
  Result<void> d3d11_usable(const char *what) const;
  /// Imports the object a Win32 handle shares as external memory of `type`
  /// declaring `size` bytes, with `flags` (kExternalMemoryDedicated): a
  /// long, zero-filled descriptor. CUDA takes its own reference; the
  /// handle stays the caller's.
  Result<void *> import_external_memory_win32(cudaffi::ExternalMemoryHandleType type, void *handle, std::size_t size,
                                              unsigned flags) const;
  /// The base image of `ext_mem` as a one-level mipmapped array of
  /// `width` × `height` texels of `format`; free it with
  /// free_mipmapped_array() before destroying the memory.
  Result<void *> external_memory_mipmapped_array(void *ext_mem, const cudaffi::ChannelFormatDesc &format,
                                                 std::size_t width, std::size_t height) const;
  /// Level `level` of a mipmapped array (owned by the mipmapped array).
  Result<void *> mipmapped_array_level(void *mipmap, unsigned level) const;
  Result<void> free_mipmapped_array(void *mipmap) const;
  /// Queues on `stream` a copy of `height` rows of `width_bytes` from the
  /// array's origin to device memory `dst`, rows `dst_pitch` apart.
  Result<void> copy_array_to_linear(void *dst, std::size_t dst_pitch, void *array, std::size_t width_bytes,
                                    std::size_t height, CudaStream stream) const;
  /// Queues on `stream` the reverse copy, from `src` (rows `src_pitch` apart).
  Result<void> copy_linear_to_array(void *array, const void *src, std::size_t src_pitch, std::size_t width_bytes,
                                    std::size_t height, CudaStream stream) const;
  /// The ordinal of the device whose LUID is `luid` (the 8 bytes of a
  /// Windows LUID: LowPart then HighPart, little-endian). NotImplemented
  /// when no device has it.
  Result<int> device_with_luid(const unsigned char (&luid)[8]) const;
  /// Makes `ordinal` the calling thread's device (cudaSetDevice; the driver
  /// backend accepts only the device whose context it holds).
  Result<void> set_device(int ordinal) const;

private:
  CudaRuntime();
  // Each load builds a runtime of its own; the caller decides who shares it.
  static std::unique_ptr<CudaRuntime> load_api(std::span<const std::string> candidates, CudaBackend backend);
  static std::unique_ptr<CudaRuntime> load_order();
  void probe_devices();

  std::unique_ptr<detail::CudaApi> api_;
  CudaBackend backend_ = CudaBackend::None;
  bool available_ = false;
  int device_count_ = 0;
  std::string path_;
  std::string reason_;
};

/// "OpaqueFd", "D3D11Fence", "TimelineSemaphoreFd", ... ("type n" for a
/// number CUDA does not define).
TENSORMEM_API std::string cuda_semaphore_type_name(cudaffi::ExternalSemaphoreHandleType type);

/// CudaRuntime::get()->available().
TENSORMEM_API bool cuda_available() noexcept;

} // namespace tensormem
