// SPDX-License-Identifier: Apache-2.0
// Private to the CUDA sources: the port CudaRuntime is built on, with one
// implementation per CUDA API (libcudart's runtime API, libcuda's driver
// API). A port call makes the CUDA call it names (the driver wraps it in
// its context push and pop) and reports the first failing one; CudaRuntime
// keeps the checks, messages and composite steps, so both APIs behave alike
// above this line.
#pragma once

#include <tensormem/internal/cuda_ffi.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace tensormem::detail {

/// The outcome of one port call: the CUDA status and the exported name of
/// the call that produced it (for messages).
struct CudaCall {
  cudaffi::Status status = 0;
  const char *name = "";
  bool ok() const noexcept { return status == 0; }
};

/// Whether one optional entry point was resolved, and its exported name.
struct OptionalEntry {
  bool present;
  const char *name;
};
/// The name of the first entry point of `entries` that is missing, nullptr
/// when all are there.
inline const char *first_missing(std::initializer_list<OptionalEntry> entries) noexcept {
  for (const OptionalEntry &entry : entries)
    if (!entry.present)
      return entry.name;
  return nullptr;
}

class CudaApi {
public:
  virtual ~CudaApi() = default;

  virtual CudaBackend backend() const noexcept = 0;
  /// "<the API's text> (cudaError n)" or "... (CUresult n)"; just the code
  /// when the API has no text for it.
  virtual std::string error_text(cudaffi::Status status) const = 0;
  /// Counts the devices and gets the API ready to use device 0 (the driver
  /// retains its primary context here).
  virtual CudaCall probe(int &device_count) = 0;
  /// Gives back what probe() took (the driver's primary context); later
  /// calls fail cleanly. For the process runtime at exit.
  virtual void release_device() noexcept = 0;

  /// False when the library lacks the optional allocator.
  virtual bool can_malloc() const noexcept = 0;
  virtual CudaCall malloc(void **device_ptr, std::size_t size) const = 0;
  virtual CudaCall free(void *device_ptr) const = 0;
  virtual CudaCall memcpy(void *dst, const void *src, std::size_t count, cudaffi::MemcpyKind kind) const = 0;
  virtual CudaCall stream_create(void **stream) const = 0;
  virtual CudaCall stream_synchronize(void *stream) const = 0;
  virtual CudaCall stream_destroy(void *stream) const = 0;

  virtual CudaCall gl_register_buffer(void **resource, std::uint32_t buffer_id) const = 0;
  virtual CudaCall gl_map(void *resource) const = 0;
  virtual CudaCall gl_mapped_pointer(void **device_ptr, std::size_t *size, void *resource) const = 0;
  virtual CudaCall gl_unmap(void *resource) const = 0;
  virtual CudaCall gl_unregister(void *resource) const = 0;

  virtual CudaCall import_external_memory(void **ext_mem, const cudaffi::ExternalMemoryHandleDesc &desc) const = 0;
  virtual CudaCall external_memory_mapped_buffer(void **device_ptr, void *ext_mem,
                                                 const cudaffi::ExternalMemoryBufferDesc &desc) const = 0;
  virtual CudaCall destroy_external_memory(void *ext_mem) const = 0;

  // External semaphores: optional entry points (a library without them
  // still serves everything else). Call these only when
  // missing_semaphore_symbol() is null.
  /// The first of the import, signal, wait and destroy entry points the
  /// library lacks, by the name it was looked up under; nullptr: all four.
  virtual const char *missing_semaphore_symbol() const noexcept = 0;
  virtual CudaCall import_external_semaphore(void **ext_sem,
                                             const cudaffi::ExternalSemaphoreHandleDesc &desc) const = 0;
  /// One semaphore, one parameter block, queued on `stream`.
  virtual CudaCall signal_external_semaphore(void *ext_sem, const cudaffi::ExternalSemaphoreSignalParams &params,
                                             void *stream) const = 0;
  virtual CudaCall wait_external_semaphore(void *ext_sem, const cudaffi::ExternalSemaphoreWaitParams &params,
                                           void *stream) const = 0;
  virtual CudaCall destroy_external_semaphore(void *ext_sem) const = 0;

  // D3D11 textures: optional entry points too. Call these
  // only when missing_d3d11_symbol() is null.
  /// The first entry point of the D3D11 path the library lacks (nullptr:
  /// all there).
  virtual const char *missing_d3d11_symbol() const noexcept = 0;
  /// The 8 LUID bytes and node mask of device `ordinal`.
  virtual CudaCall device_luid(int ordinal, unsigned char (&luid)[8], unsigned &node_mask) const = 0;
  /// Makes `ordinal` the calling thread's device (the driver: the device
  /// whose primary context it holds, anything else is refused).
  virtual CudaCall set_device(int ordinal) const = 0;
  /// The base image of `ext_mem` as a one-level mipmapped array of
  /// `width` × `height` texels described by `format` (the runtime's channel
  /// description; the driver translates it to its array format).
  virtual CudaCall external_memory_mipmapped_array(void **mipmap, void *ext_mem,
                                                   const cudaffi::ChannelFormatDesc &format, std::size_t width,
                                                   std::size_t height) const = 0;
  virtual CudaCall mipmapped_array_level(void **array, void *mipmap, unsigned level) const = 0;
  virtual CudaCall free_mipmapped_array(void *mipmap) const = 0;
  /// `height` rows of `width_bytes` from the array's origin to `dst`
  /// (`dst_pitch` apart), queued on `stream`.
  virtual CudaCall copy_array_to_linear(void *dst, std::size_t dst_pitch, void *array, std::size_t width_bytes,
                                        std::size_t height, void *stream) const = 0;
  /// The reverse: `src` (`src_pitch` apart) to the array's origin.
  virtual CudaCall copy_linear_to_array(void *array, const void *src, std::size_t src_pitch, std::size_t width_bytes,
                                        std::size_t height, void *stream) const = 0;
};

/// An API opened from one file: the port, or why the file was rejected.
struct OpenedApi {
  std::unique_ptr<CudaApi> api;
  std::string path; // the file the system mapped
  std::string why;  // when api is null
};

/// Opens `file` as a CUDA runtime (libcudart) or as the driver (libcuda).
/// A file that opens but lacks a required entry point is closed again and
/// `why` names the first missing symbol ("lacks cuMemFree_v2").
OpenedApi open_runtime_api(const std::string &file);
OpenedApi open_driver_api(const std::string &file);

} // namespace tensormem::detail
