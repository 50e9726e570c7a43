// SPDX-License-Identifier: Apache-2.0
#pragma once

// The CUDA runtime, reached through dlopen only (CUDA-LOAD-01..07). Nothing
// here needs CUDA headers or links against libcudart.

#include <tensormem/export.hpp>

#include <tensormem/cuda_ffi.hpp>
#include <tensormem/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tensormem {

/// The resolved entry points. The first group is required (CUDA-SYM-01 plus
/// cudaGetDeviceCount): a candidate missing any of them is closed and the
/// next one tried. The second group is optional and may be null.
struct CudaFunctions {
  cudaffi::GetDeviceCountFn get_device_count = nullptr;
  cudaffi::GraphicsGLRegisterBufferFn graphics_gl_register_buffer = nullptr;
  cudaffi::GraphicsMapResourcesFn graphics_map_resources = nullptr;
  cudaffi::GraphicsResourceGetMappedPointerFn graphics_resource_get_mapped_pointer = nullptr;
  cudaffi::GraphicsUnmapResourcesFn graphics_unmap_resources = nullptr;
  cudaffi::GraphicsUnregisterResourceFn graphics_unregister_resource = nullptr;
  cudaffi::ImportExternalMemoryFn import_external_memory = nullptr;
  cudaffi::ExternalMemoryGetMappedBufferFn external_memory_get_mapped_buffer = nullptr;
  cudaffi::DestroyExternalMemoryFn destroy_external_memory = nullptr;
  cudaffi::MemcpyFn memcpy = nullptr;
  cudaffi::FreeFn free = nullptr;
  cudaffi::StreamCreateFn stream_create = nullptr;
  cudaffi::StreamSynchronizeFn stream_synchronize = nullptr;
  cudaffi::StreamDestroyFn stream_destroy = nullptr;
  // Optional.
  cudaffi::GetErrorStringFn get_error_string = nullptr;
  cudaffi::MallocFn malloc = nullptr;
};

/// A device address range (a GL buffer's CUDA mapping, say).
struct CudaDeviceRange {
  void *ptr = nullptr;
  std::size_t length = 0;
};

/// A cudaStream_t owned by the caller (destroy it with stream_destroy).
using CudaStream = void *;

/// One attempt at loading the runtime: the library it opened (never closed
/// again, CUDA-LOAD-05), its entry points, and whether a device answered.
class TENSORMEM_API CudaRuntime {
public:
  /// The process runtime: loaded on first use from default_candidates(),
  /// cached (including "unavailable") and never retried. Thread-safe, and
  /// cheap after the first call (CUDA-LOAD-01).
  static std::shared_ptr<const CudaRuntime> get();

  /// A fresh load from `candidates`, tried in order, bypassing the process
  /// cache: for tests and tools. Never null; check loaded()/available().
  static std::shared_ptr<const CudaRuntime> load(std::span<const std::string> candidates);

  /// The candidate list get() uses: only $TENSORMEM_CUDART when it is set and
  /// non-empty; otherwise libcudart.so, .so.13, .so.12, .so.11.0 (Linux) or
  /// cudart64_13/12/110.dll, then the same names under %CUDA_PATH%\bin
  /// (Windows).
  static std::vector<std::string> default_candidates();

  CudaRuntime(const CudaRuntime &) = delete;
  CudaRuntime &operator=(const CudaRuntime &) = delete;
  ~CudaRuntime();

  /// A library opened and every required symbol resolved.
  bool loaded() const noexcept { return lib_ != nullptr; }
  /// loaded() and cudaGetDeviceCount reported at least one device. Every
  /// helper below refuses (without calling the runtime) when this is false.
  bool available() const noexcept { return available_; }
  int device_count() const noexcept { return device_count_; }
  /// The file actually opened (dladdr / GetModuleFileNameW), empty when none
  /// (CUDA-LOAD-07).
  const std::string &runtime_path() const noexcept { return path_; }
  /// Why the runtime is not available (empty when it is).
  const std::string &reason() const noexcept { return reason_; }
  /// The raw table (all null when nothing loaded).
  const CudaFunctions &functions() const noexcept { return fn_; }

  /// "<runtime's text> (cudaError n)", or "cudaError n" (CUDA-SYM-04).
  std::string error_text(cudaffi::Status status) const;
  /// Device error for `call` failing with `status`.
  Error call_error(const char *call, cudaffi::Status status) const;
  /// NotImplemented error saying why CUDA cannot be used (for `what`).
  Error unavailable_error(const char *what) const;

  // Generic primitives (CUDA-PRIM-01..03). Without a runtime they fail
  // without touching any pointer.
  Result<void> memcpy(void *dst, const void *src, std::size_t count, cudaffi::MemcpyKind kind) const;
  Result<void> memcpy_device_to_host(void *host, const void *device, std::size_t count) const {
    return memcpy(host, device, count, cudaffi::MemcpyKind::DeviceToHost);
  }
  Result<void> memcpy_host_to_device(void *device, const void *host, std::size_t count) const {
    return memcpy(device, host, count, cudaffi::MemcpyKind::HostToDevice);
  }
  Result<CudaStream> stream_create() const;
  Result<void> stream_synchronize(CudaStream stream) const;
  /// No-op without a runtime; errors are logged, not returned.
  void stream_destroy(CudaStream stream) const noexcept;

  // GL-buffer registration primitives (CUDA-GL-01..03). They MUST run on the
  // thread where the buffer's GL context is current (the GL worker).
  Result<void *> gl_register_buffer(std::uint32_t buffer_id) const;
  /// Maps on the default stream and queries the pointer; a failed query
  /// unmaps again.
  Result<CudaDeviceRange> gl_map_resource(void *resource) const;
  void gl_unmap_resource(void *resource) const noexcept;
  void gl_unregister_resource(void *resource) const noexcept;

private:
  CudaRuntime() = default;
  void probe_devices();

  void *lib_ = nullptr;
  CudaFunctions fn_;
  bool available_ = false;
  int device_count_ = 0;
  std::string path_;
  std::string reason_;
};

/// CudaRuntime::get()->available().
TENSORMEM_API bool cuda_available() noexcept;

} // namespace tensormem
