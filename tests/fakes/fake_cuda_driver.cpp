// SPDX-License-Identifier: Apache-2.0
// The fake CUDA driver (what libcuda.so.1 exports): the cu* entry points
// libtensormem's driver backend resolves, each one a call into the shared
// fake core (fake_cuda_core.hpp) under its own name. As on the real driver,
// nothing works before cuInit, and every call on memory, streams, external
// memory or GL resources fails with CUDA_ERROR_INVALID_CONTEXT on a thread
// where no live context is current (the core keeps a stack per thread).
// FAKE_CUDA_SEMAPHORES=0 leaves out the external-semaphore entry points (an
// old driver: the semaphore calls must report unavailable, nothing else).
#include "fake_cuda_core.hpp"

#include <cstddef>
#include <cstdint>

#ifdef _WIN32
#define FAKE_DRIVER_EXPORT extern "C" __declspec(dllexport)
#else
#define FAKE_DRIVER_EXPORT extern "C" __attribute__((visibility("default")))
#endif

#ifndef FAKE_CUDA_SEMAPHORES
#define FAKE_CUDA_SEMAPHORES 2
#endif

namespace {

using DevicePtr = unsigned long long; // CUdeviceptr
constexpr int kInvalidValue = 1;

constexpr fakecuda::Entry setup(const char *symbol) { return {symbol, false}; }
constexpr fakecuda::Entry in_context(const char *symbol) { return {symbol, true}; }

void *pointer(DevicePtr address) { return reinterpret_cast<void *>(static_cast<std::uintptr_t>(address)); }
DevicePtr address(void *ptr) { return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(ptr)); }

} // namespace

FAKE_DRIVER_EXPORT int cuInit(unsigned int flags) { return fakecuda::driver_init(setup("cuInit"), flags); }

FAKE_DRIVER_EXPORT int cuDeviceGetCount(int *count) {
  return fakecuda::driver_device_count(setup("cuDeviceGetCount"), count);
}

FAKE_DRIVER_EXPORT int cuDeviceGet(int *device, int ordinal) {
  return fakecuda::driver_device_get(setup("cuDeviceGet"), device, ordinal);
}

FAKE_DRIVER_EXPORT int cuDevicePrimaryCtxRetain(void **context, int device) {
  return fakecuda::primary_context_retain(setup("cuDevicePrimaryCtxRetain"), context, device);
}

FAKE_DRIVER_EXPORT int cuDevicePrimaryCtxRelease_v2(int device) {
  return fakecuda::primary_context_release(setup("cuDevicePrimaryCtxRelease_v2"), device);
}

FAKE_DRIVER_EXPORT int cuCtxPushCurrent_v2(void *context) {
  return fakecuda::context_push(setup("cuCtxPushCurrent_v2"), context);
}

FAKE_DRIVER_EXPORT int cuCtxPopCurrent_v2(void **context) {
  return fakecuda::context_pop(setup("cuCtxPopCurrent_v2"), context);
}

FAKE_DRIVER_EXPORT int cuGetErrorString(int error, const char **text) {
  if (!text)
    return kInvalidValue;
  *text = fakecuda::error_string(setup("cuGetErrorString"), error);
  // The real driver answers an unknown code with CUDA_ERROR_INVALID_VALUE.
  return *text ? 0 : kInvalidValue;
}

FAKE_DRIVER_EXPORT int cuMemAlloc_v2(DevicePtr *dev_ptr, std::size_t size) {
  void *ptr = nullptr;
  int rc = fakecuda::device_malloc(in_context("cuMemAlloc_v2"), dev_ptr ? &ptr : nullptr, size);
  if (rc == 0)
    *dev_ptr = address(ptr);
  return rc;
}

FAKE_DRIVER_EXPORT int cuMemFree_v2(DevicePtr dev_ptr) {
  return fakecuda::device_free(in_context("cuMemFree_v2"), pointer(dev_ptr));
}

FAKE_DRIVER_EXPORT int cuMemcpyHtoD_v2(DevicePtr dst, const void *src, std::size_t count) {
  return fakecuda::memcpy(in_context("cuMemcpyHtoD_v2"), pointer(dst), src, count, fakecuda::kHostToDevice);
}

FAKE_DRIVER_EXPORT int cuMemcpyDtoH_v2(void *dst, DevicePtr src, std::size_t count) {
  return fakecuda::memcpy(in_context("cuMemcpyDtoH_v2"), dst, pointer(src), count, fakecuda::kDeviceToHost);
}

FAKE_DRIVER_EXPORT int cuMemcpyDtoD_v2(DevicePtr dst, DevicePtr src, std::size_t count) {
  return fakecuda::memcpy(in_context("cuMemcpyDtoD_v2"), pointer(dst), pointer(src), count, fakecuda::kDeviceToDevice);
}

FAKE_DRIVER_EXPORT int cuMemcpy(DevicePtr dst, DevicePtr src, std::size_t count) {
  return fakecuda::memcpy(in_context("cuMemcpy"), pointer(dst), pointer(src), count, fakecuda::kDefault);
}

FAKE_DRIVER_EXPORT int cuStreamCreate(void **stream, unsigned int flags) {
  if (flags > 1) // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING
    return kInvalidValue;
  return fakecuda::stream_create(in_context("cuStreamCreate"), stream);
}

FAKE_DRIVER_EXPORT int cuStreamSynchronize(void *stream) {
  return fakecuda::stream_synchronize(in_context("cuStreamSynchronize"), stream);
}

FAKE_DRIVER_EXPORT int cuStreamDestroy_v2(void *stream) {
  return fakecuda::stream_destroy(in_context("cuStreamDestroy_v2"), stream);
}

FAKE_DRIVER_EXPORT int cuImportExternalMemory(void **ext_mem, const void *desc) {
  return fakecuda::import_external_memory(in_context("cuImportExternalMemory"), ext_mem, desc);
}

FAKE_DRIVER_EXPORT int cuExternalMemoryGetMappedBuffer(DevicePtr *dev_ptr, void *ext_mem, const void *desc) {
  void *ptr = nullptr;
  int rc = fakecuda::external_memory_mapped_buffer(in_context("cuExternalMemoryGetMappedBuffer"),
                                                   dev_ptr ? &ptr : nullptr, ext_mem, desc);
  if (rc == 0)
    *dev_ptr = address(ptr);
  return rc;
}

FAKE_DRIVER_EXPORT int cuDestroyExternalMemory(void *ext_mem) {
  return fakecuda::destroy_external_memory(in_context("cuDestroyExternalMemory"), ext_mem);
}

FAKE_DRIVER_EXPORT int cuGraphicsGLRegisterBuffer(void **resource, unsigned int buffer, unsigned int flags) {
  return fakecuda::gl_register_buffer(in_context("cuGraphicsGLRegisterBuffer"), resource, buffer, flags);
}

FAKE_DRIVER_EXPORT int cuGraphicsMapResources(unsigned int count, void **resources, void *stream) {
  return fakecuda::gl_map_resources(in_context("cuGraphicsMapResources"), static_cast<int>(count), resources, stream);
}

FAKE_DRIVER_EXPORT int cuGraphicsResourceGetMappedPointer_v2(DevicePtr *dev_ptr, std::size_t *size, void *resource) {
  void *ptr = nullptr;
  int rc = fakecuda::gl_mapped_pointer(in_context("cuGraphicsResourceGetMappedPointer_v2"), dev_ptr ? &ptr : nullptr,
                                       size, resource);
  if (rc == 0)
    *dev_ptr = address(ptr);
  return rc;
}

FAKE_DRIVER_EXPORT int cuGraphicsUnmapResources(unsigned int count, void **resources, void *stream) {
  return fakecuda::gl_unmap_resources(in_context("cuGraphicsUnmapResources"), static_cast<int>(count), resources,
                                      stream);
}

FAKE_DRIVER_EXPORT int cuGraphicsUnregisterResource(void *resource) {
  return fakecuda::gl_unregister_resource(in_context("cuGraphicsUnregisterResource"), resource);
}

#if FAKE_CUDA_SEMAPHORES >= 1
FAKE_DRIVER_EXPORT int cuImportExternalSemaphore(void **ext_sem, const void *desc) {
  return fakecuda::import_external_semaphore(in_context("cuImportExternalSemaphore"), ext_sem, desc);
}

FAKE_DRIVER_EXPORT int cuSignalExternalSemaphoresAsync(void *const *sems, const void *params, unsigned int count,
                                                       void *stream) {
  return fakecuda::signal_external_semaphores(in_context("cuSignalExternalSemaphoresAsync"), sems, params, count,
                                              stream, false);
}

FAKE_DRIVER_EXPORT int cuWaitExternalSemaphoresAsync(void *const *sems, const void *params, unsigned int count,
                                                     void *stream) {
  return fakecuda::wait_external_semaphores(in_context("cuWaitExternalSemaphoresAsync"), sems, params, count, stream,
                                            false);
}

FAKE_DRIVER_EXPORT int cuDestroyExternalSemaphore(void *ext_sem) {
  return fakecuda::destroy_external_semaphore(in_context("cuDestroyExternalSemaphore"), ext_sem);
}
#endif
