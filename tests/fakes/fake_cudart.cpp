// SPDX-License-Identifier: Apache-2.0
// The fake CUDA runtime: the cuda* entry points libtensormem resolves from
// libcudart, each one a call into the shared fake core (fake_cuda_core.hpp)
// under its own name. The runtime manages its context itself: no call
// needs one made current. FAKE_CUDA_SEMAPHORES (default 2) says which
// external-semaphore entry points it exports: 2 all of them, 1 only the
// pre-11.2 unsuffixed signal and wait (a runtime without the _v2 ones),
// 0 none (a library the semaphore calls must report unavailable).
#include "fake_cuda_core.hpp"

#include <cstddef>
#include <cstring>

#ifdef _WIN32
#define FAKE_RUNTIME_EXPORT extern "C" __declspec(dllexport)
#else
#define FAKE_RUNTIME_EXPORT extern "C" __attribute__((visibility("default")))
#endif

#ifndef FAKE_CUDA_SEMAPHORES
#define FAKE_CUDA_SEMAPHORES 2
#endif

namespace {
constexpr fakecuda::Entry entry(const char *symbol) { return {symbol, false}; }
} // namespace

FAKE_RUNTIME_EXPORT int cudaGetDeviceCount(int *count) {
  return fakecuda::runtime_device_count(entry("cudaGetDeviceCount"), count);
}

FAKE_RUNTIME_EXPORT const char *cudaGetErrorString(int error) {
  const char *text = fakecuda::error_string(entry("cudaGetErrorString"), error);
  return text ? text : "unrecognized error code";
}

FAKE_RUNTIME_EXPORT int cudaMalloc(void **ptr, std::size_t size) {
  return fakecuda::device_malloc(entry("cudaMalloc"), ptr, size);
}

FAKE_RUNTIME_EXPORT int cudaFree(void *ptr) { return fakecuda::device_free(entry("cudaFree"), ptr); }

FAKE_RUNTIME_EXPORT int cudaMemcpy(void *dst, const void *src, std::size_t count, int kind) {
  return fakecuda::memcpy(entry("cudaMemcpy"), dst, src, count, kind);
}

FAKE_RUNTIME_EXPORT int cudaStreamCreate(void **stream) {
  return fakecuda::stream_create(entry("cudaStreamCreate"), stream);
}

FAKE_RUNTIME_EXPORT int cudaStreamSynchronize(void *stream) {
  return fakecuda::stream_synchronize(entry("cudaStreamSynchronize"), stream);
}

FAKE_RUNTIME_EXPORT int cudaStreamDestroy(void *stream) {
  return fakecuda::stream_destroy(entry("cudaStreamDestroy"), stream);
}

FAKE_RUNTIME_EXPORT int cudaImportExternalMemory(void **ext_mem, const void *desc) {
  return fakecuda::import_external_memory(entry("cudaImportExternalMemory"), ext_mem, desc);
}

FAKE_RUNTIME_EXPORT int cudaExternalMemoryGetMappedBuffer(void **dev_ptr, void *ext_mem, const void *desc) {
  return fakecuda::external_memory_mapped_buffer(entry("cudaExternalMemoryGetMappedBuffer"), dev_ptr, ext_mem, desc);
}

FAKE_RUNTIME_EXPORT int cudaDestroyExternalMemory(void *ext_mem) {
  return fakecuda::destroy_external_memory(entry("cudaDestroyExternalMemory"), ext_mem);
}

FAKE_RUNTIME_EXPORT int cudaGraphicsGLRegisterBuffer(void **resource, unsigned int buffer, unsigned int flags) {
  return fakecuda::gl_register_buffer(entry("cudaGraphicsGLRegisterBuffer"), resource, buffer, flags);
}

FAKE_RUNTIME_EXPORT int cudaGraphicsMapResources(int count, void **resources, void *stream) {
  return fakecuda::gl_map_resources(entry("cudaGraphicsMapResources"), count, resources, stream);
}

FAKE_RUNTIME_EXPORT int cudaGraphicsResourceGetMappedPointer(void **dev_ptr, std::size_t *size, void *resource) {
  return fakecuda::gl_mapped_pointer(entry("cudaGraphicsResourceGetMappedPointer"), dev_ptr, size, resource);
}

FAKE_RUNTIME_EXPORT int cudaGraphicsUnmapResources(int count, void **resources, void *stream) {
  return fakecuda::gl_unmap_resources(entry("cudaGraphicsUnmapResources"), count, resources, stream);
}

FAKE_RUNTIME_EXPORT int cudaGraphicsUnregisterResource(void *resource) {
  return fakecuda::gl_unregister_resource(entry("cudaGraphicsUnregisterResource"), resource);
}

#if FAKE_CUDA_SEMAPHORES >= 1
FAKE_RUNTIME_EXPORT int cudaImportExternalSemaphore(void **ext_sem, const void *desc) {
  return fakecuda::import_external_semaphore(entry("cudaImportExternalSemaphore"), ext_sem, desc);
}

FAKE_RUNTIME_EXPORT int cudaSignalExternalSemaphoresAsync(void *const *sems, const void *params, unsigned int count,
                                                          void *stream) {
  return fakecuda::signal_external_semaphores(entry("cudaSignalExternalSemaphoresAsync"), sems, params, count, stream,
                                              true);
}

FAKE_RUNTIME_EXPORT int cudaWaitExternalSemaphoresAsync(void *const *sems, const void *params, unsigned int count,
                                                        void *stream) {
  return fakecuda::wait_external_semaphores(entry("cudaWaitExternalSemaphoresAsync"), sems, params, count, stream,
                                            true);
}

FAKE_RUNTIME_EXPORT int cudaDestroyExternalSemaphore(void *ext_sem) {
  return fakecuda::destroy_external_semaphore(entry("cudaDestroyExternalSemaphore"), ext_sem);
}
#endif

#if FAKE_CUDA_SEMAPHORES >= 2
FAKE_RUNTIME_EXPORT int cudaSignalExternalSemaphoresAsync_v2(void *const *sems, const void *params, unsigned int count,
                                                             void *stream) {
  return fakecuda::signal_external_semaphores(entry("cudaSignalExternalSemaphoresAsync_v2"), sems, params, count,
                                              stream, false);
}

FAKE_RUNTIME_EXPORT int cudaWaitExternalSemaphoresAsync_v2(void *const *sems, const void *params, unsigned int count,
                                                           void *stream) {
  return fakecuda::wait_external_semaphores(entry("cudaWaitExternalSemaphoresAsync_v2"), sems, params, count, stream,
                                            false);
}
#endif

#ifndef FAKE_CUDA_D3D11
#define FAKE_CUDA_D3D11 1
#endif

#if FAKE_CUDA_D3D11
namespace {

// cudaExternalMemoryMipmappedArrayDesc as the CUDA 13 header lays it out.
struct RuntimeMipmappedArrayDesc {
  unsigned long long offset;
  struct {
    int x, y, z, w;
    int f;
  } format;
  std::size_t width, height, depth;
  unsigned int flags;
  unsigned int num_levels;
  unsigned int reserved[16];
};
static_assert(sizeof(RuntimeMipmappedArrayDesc) == 128);

// Where cudaDeviceProp keeps the LUID (after name[256] and the uuid).
constexpr std::size_t kLuidOffset = 272;
constexpr std::size_t kLuidMaskOffset = 280;

int device_properties(const char *symbol, void *prop, int device) {
  if (!prop)
    return fakecuda::device_luid(entry(symbol), device, nullptr, nullptr);
  auto *bytes = static_cast<unsigned char *>(prop);
  unsigned mask = 0;
  int rc = fakecuda::device_luid(entry(symbol), device, bytes + kLuidOffset, &mask);
  if (rc == 0) {
    static const char kName[] = "tensormem fake CUDA device";
    std::memcpy(bytes, kName, sizeof kName);
    std::memcpy(bytes + kLuidMaskOffset, &mask, sizeof mask);
  }
  return rc;
}

} // namespace

FAKE_RUNTIME_EXPORT int cudaGetDeviceProperties_v2(void *prop, int device) {
  return device_properties("cudaGetDeviceProperties_v2", prop, device);
}

FAKE_RUNTIME_EXPORT int cudaGetDeviceProperties(void *prop, int device) {
  return device_properties("cudaGetDeviceProperties", prop, device);
}

FAKE_RUNTIME_EXPORT int cudaSetDevice(int device) { return fakecuda::set_device(entry("cudaSetDevice"), device); }

FAKE_RUNTIME_EXPORT int cudaExternalMemoryGetMappedMipmappedArray(void **mipmap, void *ext_mem, const void *raw) {
  fakecuda::ArrayRequest request{};
  if (raw) {
    const auto *desc = static_cast<const RuntimeMipmappedArrayDesc *>(raw);
    bool tail_zero = true;
    for (unsigned int word : desc->reserved)
      tail_zero = tail_zero && word == 0;
    request = fakecuda::ArrayRequest{desc->offset,
                                     desc->width,
                                     desc->height,
                                     desc->depth,
                                     {desc->format.x, desc->format.y, desc->format.z, desc->format.w},
                                     desc->format.f,
                                     desc->num_levels,
                                     desc->flags,
                                     tail_zero};
  }
  return fakecuda::external_memory_mipmapped_array(entry("cudaExternalMemoryGetMappedMipmappedArray"),
                                                   raw ? mipmap : nullptr, ext_mem, request);
}

FAKE_RUNTIME_EXPORT int cudaGetMipmappedArrayLevel(void **array, const void *mipmap, unsigned int level) {
  return fakecuda::mipmapped_array_level(entry("cudaGetMipmappedArrayLevel"), array, mipmap, level);
}

FAKE_RUNTIME_EXPORT int cudaFreeMipmappedArray(void *mipmap) {
  return fakecuda::free_mipmapped_array(entry("cudaFreeMipmappedArray"), mipmap);
}

FAKE_RUNTIME_EXPORT int cudaMemcpy2DFromArrayAsync(void *dst, std::size_t dpitch, const void *src, std::size_t w_offset,
                                                   std::size_t h_offset, std::size_t width, std::size_t height,
                                                   int kind, void *stream) {
  fakecuda::Copy2D copy{false, const_cast<void *>(src), dst, dpitch, w_offset, h_offset, 0, 0, width, height, kind,
                        stream};
  return fakecuda::memcpy_2d(entry("cudaMemcpy2DFromArrayAsync"), copy);
}

FAKE_RUNTIME_EXPORT int cudaMemcpy2DToArrayAsync(void *dst, std::size_t w_offset, std::size_t h_offset, const void *src,
                                                 std::size_t spitch, std::size_t width, std::size_t height, int kind,
                                                 void *stream) {
  fakecuda::Copy2D copy{true, dst,   const_cast<void *>(src), spitch, w_offset, h_offset, 0, 0, width, height,
                        kind, stream};
  return fakecuda::memcpy_2d(entry("cudaMemcpy2DToArrayAsync"), copy);
}
#endif
