// SPDX-License-Identifier: Apache-2.0
#pragma once

// Our own mirrors of the few CUDA runtime types the library passes across
// the dlopen boundary. No CUDA header is needed to build; the numbers and
// layouts follow the CUDA 13 driver_types.h, and tests/lib/cuda compares
// them with the real header wherever one is installed (DESIGN §8).
//
// Layout rule: every descriptor uses the LONG form that ends in
// `unsigned int reserved[16]`, on every platform. Older runtimes read only
// their shorter prefix, newer ones read the tail, which must be zero. Fill
// every instance with zero_fill() before setting the named fields.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tensormem::cudaffi {

/// cudaError_t travels as a C enum, i.e. an int.
using Status = int;

/// The handful of cudaError_t values the library names.
enum : Status {
  kSuccess = 0,
  kErrorInvalidValue = 1,
  kErrorMemoryAllocation = 2,
  kErrorInsufficientDriver = 35,
  kErrorNoDevice = 100,
  kErrorInvalidResourceHandle = 400,
  kErrorNotSupported = 801,
  kErrorUnknown = 999,
};

/// cudaExternalMemoryHandleType. The seed sent 5 and called it D3D11; in
/// NVIDIA's numbering 5 is D3D12Resource and D3D11Resource is 6 (spec §7
/// item 1).
enum class ExternalMemoryHandleType : int {
  OpaqueFd = 1,
  OpaqueWin32 = 2,
  OpaqueWin32Kmt = 3,
  D3D12Heap = 4,
  D3D12Resource = 5,
  D3D11Resource = 6,
  D3D11ResourceKmt = 7,
  NvSciBuf = 8,
};

/// cudaExternalSemaphoreHandleType (D3D11Fence is 5, not the seed's 4).
enum class ExternalSemaphoreHandleType : int {
  OpaqueFd = 1,
  OpaqueWin32 = 2,
  OpaqueWin32Kmt = 3,
  D3D12Fence = 4,
  D3D11Fence = 5,
  NvSciSync = 6,
  KeyedMutex = 7,
  KeyedMutexKmt = 8,
  TimelineSemaphoreFd = 9,
  TimelineSemaphoreWin32 = 10,
};

/// cudaExternalMemoryDedicated.
inline constexpr unsigned kExternalMemoryDedicated = 0x1;
/// cudaGraphicsRegisterFlagsNone.
inline constexpr unsigned kGraphicsRegisterFlagsNone = 0;

/// cudaMemcpyKind.
enum class MemcpyKind : int {
  HostToHost = 0,
  HostToDevice = 1,
  DeviceToHost = 2,
  DeviceToDevice = 3,
  Default = 4,
};

/// cudaChannelFormatKind (the values the D3D11 path uses).
enum class ChannelFormatKind : int { Signed = 0, Unsigned = 1, Float = 2, None = 3 };

/// cudaExternalMemoryHandleDesc: 104 bytes, alignment 8.
struct ExternalMemoryHandleDesc {
  ExternalMemoryHandleType type;
  union {
    int fd;
    struct {
      void *handle;
      const void *name;
    } win32;
    const void *nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cudaExternalMemoryBufferDesc: 88 bytes, alignment 8.
struct ExternalMemoryBufferDesc {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cudaChannelFormatDesc: 20 bytes, alignment 4.
struct ChannelFormatDesc {
  int x, y, z, w;
  ChannelFormatKind f;
};

/// cudaExtent: 24 bytes, alignment 8.
struct Extent {
  std::size_t width, height, depth;
};

/// cudaExternalMemoryMipmappedArrayDesc: 128 bytes, alignment 8.
struct ExternalMemoryMipmappedArrayDesc {
  unsigned long long offset;
  ChannelFormatDesc formatDesc;
  Extent extent;
  unsigned int flags;
  unsigned int numLevels;
  unsigned int reserved[16];
};

/// The two fields of cudaDeviceProp the D3D11 path reads:
/// the adapter LUID (char[8], the bytes of a Windows LUID) and its node
/// mask, after `char name[256]` and the 16-byte `cudaUUID_t uuid`. The
/// struct's length differs between toolkits; it is never mirrored whole: a
/// buffer of kDevicePropBufferSize zero bytes receives it, and
/// tests/lib/cuda checks these offsets and that bound against
/// driver_types.h.
inline constexpr std::size_t kDevicePropLuidOffset = 272;
inline constexpr std::size_t kDevicePropLuidNodeMaskOffset = 280;
inline constexpr std::size_t kDevicePropBufferSize = 4096;

/// The level of a mipmapped array that holds the base image.
inline constexpr unsigned kBaseLevel = 0;

/// cudaExternalSemaphoreHandleDesc: 96 bytes, alignment 8.
struct ExternalSemaphoreHandleDesc {
  ExternalSemaphoreHandleType type;
  union {
    int fd;
    struct {
      void *handle;
      const void *name;
    } win32;
    const void *nvSciSyncObj;
  } handle;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cudaExternalSemaphoreWaitParams (the _v2 layout; v1 reads the same
/// meaning when only fence.value is set): 144 bytes, alignment 8.
struct ExternalSemaphoreWaitParams {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void *fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
      unsigned int timeoutMs;
    } keyedMutex;
    unsigned int reserved[10];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cudaExternalSemaphoreSignalParams (the _v2 layout): 144 bytes, alignment
/// 8. The v1 layout (cudaSignalExternalSemaphoresAsync before CUDA 11.2) is
/// this without the trailing reserved[16]: with one semaphore per call and
/// only fence.value set, both read the same meaning.
struct ExternalSemaphoreSignalParams {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void *fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
    } keyedMutex;
    unsigned int reserved[12];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
};

/// Sets every byte, padding included, to zero. Aggregate initialisation
/// with `{}` does not promise zero padding; the runtime may read it.
template <typename T> void zero_fill(T &value) noexcept {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memset(static_cast<void *>(&value), 0, sizeof(T));
}

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
static_assert(sizeof(ExternalMemoryHandleDesc) == 104 && alignof(ExternalMemoryHandleDesc) == 8);
static_assert(offsetof(ExternalMemoryHandleDesc, handle) == 8 && offsetof(ExternalMemoryHandleDesc, size) == 24 &&
              offsetof(ExternalMemoryHandleDesc, flags) == 32 && offsetof(ExternalMemoryHandleDesc, reserved) == 36);
static_assert(sizeof(ExternalMemoryBufferDesc) == 88 && offsetof(ExternalMemoryBufferDesc, size) == 8 &&
              offsetof(ExternalMemoryBufferDesc, flags) == 16 && offsetof(ExternalMemoryBufferDesc, reserved) == 20);
static_assert(sizeof(ChannelFormatDesc) == 20 && alignof(ChannelFormatDesc) == 4);
static_assert(sizeof(Extent) == 24 && alignof(Extent) == 8);
static_assert(sizeof(ExternalMemoryMipmappedArrayDesc) == 128 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, formatDesc) == 8 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, extent) == 32 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, flags) == 56 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, numLevels) == 60);
static_assert(sizeof(ExternalSemaphoreHandleDesc) == 96 && offsetof(ExternalSemaphoreHandleDesc, handle) == 8 &&
              offsetof(ExternalSemaphoreHandleDesc, flags) == 24);
static_assert(sizeof(ExternalSemaphoreWaitParams) == 144 && offsetof(ExternalSemaphoreWaitParams, flags) == 72);
static_assert(sizeof(ExternalSemaphoreSignalParams) == 144 && alignof(ExternalSemaphoreSignalParams) == 8 &&
              offsetof(ExternalSemaphoreSignalParams, params.nvSciSync) == 8 &&
              offsetof(ExternalSemaphoreSignalParams, params.keyedMutex) == 16 &&
              offsetof(ExternalSemaphoreSignalParams, params.reserved) == 24 &&
              offsetof(ExternalSemaphoreSignalParams, flags) == 72 &&
              offsetof(ExternalSemaphoreSignalParams, reserved) == 76);
#endif

// Entry points, with the CUDA runtime's C signatures (opaque handles as
// void *; cudaStream_t, cudaExternalMemory_t and cudaGraphicsResource_t are
// pointers).
using GetDeviceCountFn = Status (*)(int *count);
using GetErrorStringFn = const char *(*)(Status error);
using GraphicsGLRegisterBufferFn = Status (*)(void **resource, unsigned int buffer, unsigned int flags);
using GraphicsMapResourcesFn = Status (*)(int count, void **resources, void *stream);
using GraphicsResourceGetMappedPointerFn = Status (*)(void **dev_ptr, std::size_t *size, void *resource);
using GraphicsUnmapResourcesFn = Status (*)(int count, void **resources, void *stream);
using GraphicsUnregisterResourceFn = Status (*)(void *resource);
using ImportExternalMemoryFn = Status (*)(void **ext_mem, const ExternalMemoryHandleDesc *desc);
using ExternalMemoryGetMappedBufferFn = Status (*)(void **dev_ptr, void *ext_mem, const ExternalMemoryBufferDesc *desc);
using DestroyExternalMemoryFn = Status (*)(void *ext_mem);
using MemcpyFn = Status (*)(void *dst, const void *src, std::size_t count, MemcpyKind kind);
using MallocFn = Status (*)(void **dev_ptr, std::size_t size);
using FreeFn = Status (*)(void *dev_ptr);
using StreamCreateFn = Status (*)(void **stream);
using StreamSynchronizeFn = Status (*)(void *stream);
using StreamDestroyFn = Status (*)(void *stream);
// External semaphores (cudaExternalSemaphore_t is a pointer): one array of
// semaphores and one of parameters, `count` long, queued on `stream`.
using ImportExternalSemaphoreFn = Status (*)(void **ext_sem, const ExternalSemaphoreHandleDesc *desc);
using SignalExternalSemaphoresAsyncFn = Status (*)(void *const *ext_sems, const ExternalSemaphoreSignalParams *params,
                                                   unsigned int count, void *stream);
using WaitExternalSemaphoresAsyncFn = Status (*)(void *const *ext_sems, const ExternalSemaphoreWaitParams *params,
                                                 unsigned int count, void *stream);
using DestroyExternalSemaphoreFn = Status (*)(void *ext_sem);
// D3D11 textures (optional entry points): the mipmapped array
// an external memory holds, its base level, 2-D copies between an array and
// linear memory on a stream, device selection by adapter LUID.
using ExternalMemoryGetMappedMipmappedArrayFn = Status (*)(void **mipmap, void *ext_mem,
                                                           const ExternalMemoryMipmappedArrayDesc *desc);
using GetMipmappedArrayLevelFn = Status (*)(void **level_array, const void *mipmap, unsigned int level);
using FreeMipmappedArrayFn = Status (*)(void *mipmap);
using Memcpy2DFromArrayAsyncFn = Status (*)(void *dst, std::size_t dpitch, const void *src, std::size_t w_offset,
                                            std::size_t h_offset, std::size_t width, std::size_t height,
                                            MemcpyKind kind, void *stream);
using Memcpy2DToArrayAsyncFn = Status (*)(void *dst, std::size_t w_offset, std::size_t h_offset, const void *src,
                                          std::size_t spitch, std::size_t width, std::size_t height, MemcpyKind kind,
                                          void *stream);
using GetDevicePropertiesFn = Status (*)(void *prop, int device);
using SetDeviceFn = Status (*)(int device);

/// The CUDA driver API (cuda.h, cudaGL.h), reached through libcuda.so.1 or
/// nvcuda.dll when no runtime library is installed. Its descriptors are the
/// runtime's byte for byte (CUDA_EXTERNAL_MEMORY_HANDLE_DESC is
/// cudaExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC is
/// cudaExternalMemoryBufferDesc, the handle-type numbers agree), so the
/// mirrors above serve both; tests/lib/cuda compares them with cuda.h
/// wherever one is installed. Where cuda.h renames an entry point with a
/// macro (cuMemFree → cuMemFree_v2) the library resolves the _v2 name: the
/// unsuffixed export is the old ABI.
namespace driver {

/// CUresult travels as a C enum, i.e. an int. Most numbers equal the
/// runtime's cudaError_t for the same condition.
using Status = int;
enum : Status {
  kSuccess = 0,
  kErrorInvalidValue = 1,
  kErrorOutOfMemory = 2,
  kErrorNotInitialized = 3,
  kErrorNoDevice = 100,
  kErrorInvalidDevice = 101,
  kErrorInvalidContext = 201,
  kErrorInvalidHandle = 400,
  kErrorNotSupported = 801,
  kErrorUnknown = 999,
};

/// CUdeviceptr on 64-bit platforms (the only ones the driver backend
/// supports: a device address there is as wide as a host pointer).
using DevicePtr = unsigned long long;
/// CUdevice: an ordinal.
using Device = int;
/// CU_GRAPHICS_REGISTER_FLAGS_NONE.
inline constexpr unsigned kGraphicsRegisterFlagsNone = 0;
/// CU_STREAM_DEFAULT.
inline constexpr unsigned kStreamDefault = 0;

// Entry points with the driver's C signatures (CUcontext, CUstream,
// CUexternalMemory and CUgraphicsResource are pointers).
using InitFn = Status (*)(unsigned int flags);
using DeviceGetCountFn = Status (*)(int *count);
using DeviceGetFn = Status (*)(Device *device, int ordinal);
using DevicePrimaryCtxRetainFn = Status (*)(void **context, Device device);
using DevicePrimaryCtxReleaseFn = Status (*)(Device device);
using CtxGetCurrentFn = Status (*)(void **context);
using CtxPushCurrentFn = Status (*)(void *context);
using CtxPopCurrentFn = Status (*)(void **context);
using GetErrorStringFn = Status (*)(Status error, const char **text);
using MemAllocFn = Status (*)(DevicePtr *dev_ptr, std::size_t size);
using MemFreeFn = Status (*)(DevicePtr dev_ptr);
using MemcpyHtoDFn = Status (*)(DevicePtr dst, const void *src, std::size_t count);
using MemcpyDtoHFn = Status (*)(void *dst, DevicePtr src, std::size_t count);
using MemcpyDtoDFn = Status (*)(DevicePtr dst, DevicePtr src, std::size_t count);
using MemcpyFn = Status (*)(DevicePtr dst, DevicePtr src, std::size_t count);
using StreamCreateFn = Status (*)(void **stream, unsigned int flags);
using StreamSynchronizeFn = Status (*)(void *stream);
using StreamDestroyFn = Status (*)(void *stream);
using GraphicsGLRegisterBufferFn = Status (*)(void **resource, unsigned int buffer, unsigned int flags);
using GraphicsMapResourcesFn = Status (*)(unsigned int count, void **resources, void *stream);
using GraphicsResourceGetMappedPointerFn = Status (*)(DevicePtr *dev_ptr, std::size_t *size, void *resource);
using GraphicsUnmapResourcesFn = Status (*)(unsigned int count, void **resources, void *stream);
using GraphicsUnregisterResourceFn = Status (*)(void *resource);
using ImportExternalMemoryFn = Status (*)(void **ext_mem, const ExternalMemoryHandleDesc *desc);
using ExternalMemoryGetMappedBufferFn = Status (*)(DevicePtr *dev_ptr, void *ext_mem,
                                                   const ExternalMemoryBufferDesc *desc);
using DestroyExternalMemoryFn = Status (*)(void *ext_mem);
/// CUarray_format values of the D3D11 texel formats.
enum class ArrayFormat : int { UnsignedInt8 = 0x01, Half = 0x10, Float = 0x20 };
/// CUmemorytype values a 2-D copy names.
enum class MemoryType : int { Host = 0x01, Device = 0x02, Array = 0x03, Unified = 0x04 };

/// CUDA_ARRAY3D_DESCRIPTOR: 40 bytes, alignment 8.
struct Array3dDescriptor {
  std::size_t Width, Height, Depth;
  ArrayFormat Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

/// CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC: 120 bytes, alignment 8 (the
/// driver's own shape, unlike the runtime's channel description).
struct ExternalMemoryMipmappedArrayDesc {
  unsigned long long offset;
  Array3dDescriptor arrayDesc;
  unsigned int numLevels;
  unsigned int reserved[16];
};

/// CUDA_MEMCPY2D (the _v2 layout cuMemcpy2DAsync_v2 reads): 128 bytes.
struct Memcpy2D {
  std::size_t srcXInBytes, srcY;
  MemoryType srcMemoryType;
  const void *srcHost;
  DevicePtr srcDevice;
  void *srcArray;
  std::size_t srcPitch;
  std::size_t dstXInBytes, dstY;
  MemoryType dstMemoryType;
  void *dstHost;
  DevicePtr dstDevice;
  void *dstArray;
  std::size_t dstPitch;
  std::size_t WidthInBytes, Height;
};

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
static_assert(sizeof(Array3dDescriptor) == 40 && offsetof(Array3dDescriptor, Format) == 24 &&
              offsetof(Array3dDescriptor, NumChannels) == 28);
static_assert(sizeof(ExternalMemoryMipmappedArrayDesc) == 120 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, arrayDesc) == 8 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, numLevels) == 48 &&
              offsetof(ExternalMemoryMipmappedArrayDesc, reserved) == 52);
static_assert(sizeof(Memcpy2D) == 128 && offsetof(Memcpy2D, srcMemoryType) == 16 &&
              offsetof(Memcpy2D, srcArray) == 40 && offsetof(Memcpy2D, dstMemoryType) == 72 &&
              offsetof(Memcpy2D, dstDevice) == 88 && offsetof(Memcpy2D, dstPitch) == 104 &&
              offsetof(Memcpy2D, WidthInBytes) == 112);
#endif

using ExternalMemoryGetMappedMipmappedArrayFn = Status (*)(void **mipmap, void *ext_mem,
                                                           const ExternalMemoryMipmappedArrayDesc *desc);
using MipmappedArrayGetLevelFn = Status (*)(void **level_array, void *mipmap, unsigned int level);
using MipmappedArrayDestroyFn = Status (*)(void *mipmap);
using Memcpy2DAsyncFn = Status (*)(const Memcpy2D *copy, void *stream);
using DeviceGetLuidFn = Status (*)(char *luid, unsigned int *node_mask, Device device);

// cuImportExternalSemaphore, cuSignalExternalSemaphoresAsync,
// cuWaitExternalSemaphoresAsync, cuDestroyExternalSemaphore: the runtime's
// shapes (CUexternalSemaphore is a pointer, the descriptors are shared).
using ImportExternalSemaphoreFn = cudaffi::ImportExternalSemaphoreFn;
using SignalExternalSemaphoresAsyncFn = cudaffi::SignalExternalSemaphoresAsyncFn;
using WaitExternalSemaphoresAsyncFn = cudaffi::WaitExternalSemaphoresAsyncFn;
using DestroyExternalSemaphoreFn = cudaffi::DestroyExternalSemaphoreFn;

} // namespace driver

} // namespace tensormem::cudaffi
