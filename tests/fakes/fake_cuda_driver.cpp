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

#ifndef FAKE_CUDA_D3D11
#define FAKE_CUDA_D3D11 1
#endif

#if FAKE_CUDA_D3D11
namespace {

// CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC and CUDA_MEMCPY2D as cuda.h
// lays them out.
struct DriverMipmappedArrayDesc {
  unsigned long long offset;
  std::size_t width, height, depth;
  int format; // CUarray_format
  unsigned int channels;
  unsigned int flags;
  unsigned int array_desc_padding; // CUDA_ARRAY3D_DESCRIPTOR is 40 bytes
  unsigned int num_levels;
  unsigned int reserved[16];
};
static_assert(sizeof(DriverMipmappedArrayDesc) == 120 && offsetof(DriverMipmappedArrayDesc, num_levels) == 48);

struct DriverMemcpy2D {
  std::size_t src_x, src_y;
  int src_type;
  const void *src_host;
  DevicePtr src_device;
  void *src_array;
  std::size_t src_pitch;
  std::size_t dst_x, dst_y;
  int dst_type;
  void *dst_host;
  DevicePtr dst_device;
  void *dst_array;
  std::size_t dst_pitch;
  std::size_t width, height;
};
static_assert(sizeof(DriverMemcpy2D) == 128);

constexpr int kMemoryTypeDevice = 2;
constexpr int kMemoryTypeArray = 3;
constexpr int kCopyDeviceToDevice = 3;

} // namespace

FAKE_DRIVER_EXPORT int cuDeviceGetLuid(char *luid, unsigned int *node_mask, int device) {
  return fakecuda::device_luid(setup("cuDeviceGetLuid"), device, reinterpret_cast<unsigned char *>(luid), node_mask);
}

FAKE_DRIVER_EXPORT int cuExternalMemoryGetMappedMipmappedArray(void **mipmap, void *ext_mem, const void *raw) {
  fakecuda::ArrayRequest request{};
  if (raw) {
    const auto *desc = static_cast<const DriverMipmappedArrayDesc *>(raw);
    bool tail_zero = true;
    for (unsigned int word : desc->reserved)
      tail_zero = tail_zero && word == 0;
    // CU_AD_FORMAT_UNSIGNED_INT8, _HALF, _FLOAT as the runtime's channel
    // bits and kind; any other format is unknown (-1).
    int bits = desc->format == 0x01 ? 8 : desc->format == 0x10 ? 16 : desc->format == 0x20 ? 32 : 0;
    int kind = desc->format == 0x01 ? 1 : bits != 0 ? 2 : -1;
    request.offset = desc->offset;
    request.width = desc->width;
    request.height = desc->height;
    request.depth = desc->depth;
    for (unsigned i = 0; i < 4; ++i)
      request.bits[i] = i < desc->channels ? bits : 0;
    request.kind = kind;
    request.levels = desc->num_levels;
    request.flags = desc->flags;
    request.tail_zero = tail_zero;
  }
  return fakecuda::external_memory_mipmapped_array(in_context("cuExternalMemoryGetMappedMipmappedArray"),
                                                   raw ? mipmap : nullptr, ext_mem, request);
}

FAKE_DRIVER_EXPORT int cuMipmappedArrayGetLevel(void **array, void *mipmap, unsigned int level) {
  return fakecuda::mipmapped_array_level(in_context("cuMipmappedArrayGetLevel"), array, mipmap, level);
}

FAKE_DRIVER_EXPORT int cuMipmappedArrayDestroy(void *mipmap) {
  return fakecuda::free_mipmapped_array(in_context("cuMipmappedArrayDestroy"), mipmap);
}

FAKE_DRIVER_EXPORT int cuMemcpy2DAsync_v2(const void *raw, void *stream) {
  fakecuda::Copy2D copy{};
  copy.stream = stream;
  copy.kind = -1; // a combination of memory types the fake does not model
  if (raw) {
    const auto *c = static_cast<const DriverMemcpy2D *>(raw);
    copy.width_bytes = c->width;
    copy.height = c->height;
    if (c->src_type == kMemoryTypeArray && c->dst_type == kMemoryTypeDevice) {
      copy = fakecuda::Copy2D{
          false,    c->src_array, pointer(c->dst_device), c->dst_pitch, c->src_x, c->src_y, c->dst_x, c->dst_y,
          c->width, c->height,    kCopyDeviceToDevice,    stream};
    } else if (c->src_type == kMemoryTypeDevice && c->dst_type == kMemoryTypeArray) {
      copy = fakecuda::Copy2D{
          true,     c->dst_array, pointer(c->src_device), c->src_pitch, c->dst_x, c->dst_y, c->src_x, c->src_y,
          c->width, c->height,    kCopyDeviceToDevice,    stream};
    }
  }
  return fakecuda::memcpy_2d(in_context("cuMemcpy2DAsync_v2"), copy);
}
#endif
