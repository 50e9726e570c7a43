// SPDX-License-Identifier: Apache-2.0
// Against the CUDA toolkit installed on this machine, where there is one:
// the FFI mirrors compared field by field with the real driver_types.h and
// cuda.h, the real runtime loaded through the ordinary ladder (without a
// driver it must load and count as unavailable; with a GPU it must find a
// device), and the driver backend against the toolkit's libcuda stub and the
// installed libcuda.so.1.
#include <tensormem/internal/cuda_ffi.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#if defined(TM_HAVE_DRIVER_TYPES_H)
#include <driver_types.h>
#endif
#if defined(TM_HAVE_CUDA_H)
#include <cuda.h>
#endif

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <type_traits>
#include <vector>

using namespace tensormem;

// CUDA-FFI-09: a port that can compile against real CUDA headers checks its
// numbers against them. These are compile-time checks, not test cases: where
// meson found driver_types.h (it says so at configure time), a mismatch stops
// this file from compiling.
#if defined(TM_HAVE_DRIVER_TYPES_H)
namespace ffi = tensormem::cudaffi;

#define SAME_LAYOUT(ours, theirs) static_assert(sizeof(ours) == sizeof(theirs) && alignof(ours) == alignof(theirs))
#define SAME_OFFSET(ours, theirs, field) static_assert(offsetof(ours, field) == offsetof(theirs, field))
// The semaphore descriptor's handle union and the signal parameters, which
// the runtime and the driver lay out alike.
#define SAME_SEMAPHORE_HANDLE(theirs)                                                                                  \
  SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, theirs, type);                                                         \
  SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, theirs, handle.fd);                                                    \
  SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, theirs, handle.win32.handle);                                          \
  SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, theirs, handle.win32.name)
#define SAME_SIGNAL_PARAMS(theirs)                                                                                     \
  SAME_LAYOUT(ffi::ExternalSemaphoreSignalParams, theirs);                                                             \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, params.fence.value);                                         \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, params.nvSciSync.fence);                                     \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, params.keyedMutex.key);                                      \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, params.reserved);                                            \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, flags);                                                      \
  SAME_OFFSET(ffi::ExternalSemaphoreSignalParams, theirs, reserved)

SAME_LAYOUT(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, type);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, handle);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, size);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, flags);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, reserved);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, handle.fd);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, handle.win32.handle);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, cudaExternalMemoryHandleDesc, handle.win32.name);
SAME_LAYOUT(ffi::ExternalMemoryBufferDesc, cudaExternalMemoryBufferDesc);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, cudaExternalMemoryBufferDesc, offset);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, cudaExternalMemoryBufferDesc, size);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, cudaExternalMemoryBufferDesc, flags);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, cudaExternalMemoryBufferDesc, reserved);
SAME_LAYOUT(ffi::ChannelFormatDesc, cudaChannelFormatDesc);
SAME_OFFSET(ffi::ChannelFormatDesc, cudaChannelFormatDesc, f);
SAME_LAYOUT(ffi::Extent, cudaExtent);
SAME_LAYOUT(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, formatDesc);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, extent);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, flags);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, numLevels);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, reserved);
SAME_LAYOUT(ffi::ExternalSemaphoreHandleDesc, cudaExternalSemaphoreHandleDesc);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, cudaExternalSemaphoreHandleDesc, handle);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, cudaExternalSemaphoreHandleDesc, flags);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, cudaExternalSemaphoreHandleDesc, reserved);
SAME_LAYOUT(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, params.fence.value);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, params.keyedMutex.key);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, params.keyedMutex.timeoutMs);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, params.reserved);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, flags);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, reserved);
SAME_SEMAPHORE_HANDLE(cudaExternalSemaphoreHandleDesc);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, cudaExternalSemaphoreWaitParams, params.nvSciSync.fence);
SAME_SIGNAL_PARAMS(cudaExternalSemaphoreSignalParams);

static_assert(int(ffi::ExternalMemoryHandleType::OpaqueFd) == cudaExternalMemoryHandleTypeOpaqueFd);
static_assert(int(ffi::ExternalMemoryHandleType::D3D12Resource) == cudaExternalMemoryHandleTypeD3D12Resource);
static_assert(int(ffi::ExternalMemoryHandleType::D3D11Resource) == cudaExternalMemoryHandleTypeD3D11Resource);
static_assert(int(ffi::ExternalMemoryHandleType::D3D11ResourceKmt) == cudaExternalMemoryHandleTypeD3D11ResourceKmt);
static_assert(int(ffi::ExternalMemoryHandleType::NvSciBuf) == cudaExternalMemoryHandleTypeNvSciBuf);
static_assert(int(ffi::ExternalSemaphoreHandleType::D3D12Fence) == cudaExternalSemaphoreHandleTypeD3D12Fence);
static_assert(int(ffi::ExternalSemaphoreHandleType::D3D11Fence) == cudaExternalSemaphoreHandleTypeD3D11Fence);
static_assert(int(ffi::ExternalSemaphoreHandleType::TimelineSemaphoreWin32) ==
              cudaExternalSemaphoreHandleTypeTimelineSemaphoreWin32);
static_assert(int(ffi::ExternalSemaphoreHandleType::OpaqueFd) == cudaExternalSemaphoreHandleTypeOpaqueFd);
static_assert(int(ffi::ExternalSemaphoreHandleType::OpaqueWin32) == cudaExternalSemaphoreHandleTypeOpaqueWin32);
static_assert(int(ffi::ExternalSemaphoreHandleType::OpaqueWin32Kmt) == cudaExternalSemaphoreHandleTypeOpaqueWin32Kmt);
static_assert(int(ffi::ExternalSemaphoreHandleType::TimelineSemaphoreFd) ==
              cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd);
static_assert(ffi::kExternalMemoryDedicated == cudaExternalMemoryDedicated);
static_assert(ffi::kGraphicsRegisterFlagsNone == cudaGraphicsRegisterFlagsNone);
static_assert(int(ffi::MemcpyKind::HostToDevice) == cudaMemcpyHostToDevice);
static_assert(int(ffi::MemcpyKind::DeviceToHost) == cudaMemcpyDeviceToHost);
static_assert(int(ffi::MemcpyKind::DeviceToDevice) == cudaMemcpyDeviceToDevice);
static_assert(int(ffi::ChannelFormatKind::Unsigned) == cudaChannelFormatKindUnsigned);
static_assert(int(ffi::ChannelFormatKind::Float) == cudaChannelFormatKindFloat);
// D3D-CUDA-01: the texture path's runtime mirrors.
SAME_LAYOUT(ffi::ChannelFormatDesc, cudaChannelFormatDesc);
SAME_OFFSET(ffi::ChannelFormatDesc, cudaChannelFormatDesc, w);
SAME_OFFSET(ffi::ChannelFormatDesc, cudaChannelFormatDesc, f);
SAME_LAYOUT(ffi::Extent, cudaExtent);
SAME_LAYOUT(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, formatDesc);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, extent);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, flags);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, numLevels);
SAME_OFFSET(ffi::ExternalMemoryMipmappedArrayDesc, cudaExternalMemoryMipmappedArrayDesc, reserved);
static_assert(ffi::kDevicePropLuidOffset == offsetof(cudaDeviceProp, luid));
static_assert(ffi::kDevicePropLuidNodeMaskOffset == offsetof(cudaDeviceProp, luidDeviceNodeMask));
static_assert(sizeof(cudaDeviceProp) <= ffi::kDevicePropBufferSize);
static_assert(sizeof(cudaDeviceProp{}.luid) == 8);
static_assert(ffi::kErrorInvalidValue == int(cudaErrorInvalidValue));
static_assert(ffi::kErrorInsufficientDriver == int(cudaErrorInsufficientDriver));
static_assert(ffi::kErrorNoDevice == int(cudaErrorNoDevice));
static_assert(ffi::kErrorNotSupported == int(cudaErrorNotSupported));
#endif

// The driver API (cuda.h) the driver backend resolves from libcuda: the
// descriptors it shares with the runtime, its numbers, and every entry point
// by the exact exported name the backend asks for (the _v2 names cuda.h's
// macros map to), with a signature of the same shape: as many parameters,
// each as wide as ours (our opaque handles are void pointers).
#if defined(TM_HAVE_CUDA_H)
namespace drv = tensormem::cudaffi::driver;

SAME_LAYOUT(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, type);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.fd);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.win32.handle);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.win32.name);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags);
SAME_OFFSET(ffi::ExternalMemoryHandleDesc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, reserved);
SAME_LAYOUT(ffi::ExternalMemoryBufferDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, offset);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, size);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags);
SAME_OFFSET(ffi::ExternalMemoryBufferDesc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, reserved);
SAME_LAYOUT(ffi::ExternalSemaphoreHandleDesc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, flags);
SAME_OFFSET(ffi::ExternalSemaphoreHandleDesc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, reserved);
SAME_LAYOUT(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.fence.value);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.keyedMutex.key);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, reserved);
SAME_SEMAPHORE_HANDLE(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC);
SAME_OFFSET(ffi::ExternalSemaphoreWaitParams, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.keyedMutex.timeoutMs);
SAME_SIGNAL_PARAMS(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS);

static_assert(int(ffi::ExternalMemoryHandleType::OpaqueFd) == CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD);
static_assert(int(ffi::ExternalMemoryHandleType::D3D12Resource) == CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE);
static_assert(int(ffi::ExternalMemoryHandleType::D3D11Resource) == CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE);
static_assert(int(ffi::ExternalSemaphoreHandleType::D3D12Fence) == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE);
static_assert(int(ffi::ExternalSemaphoreHandleType::D3D11Fence) == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_FENCE);
static_assert(int(ffi::ExternalSemaphoreHandleType::OpaqueFd) == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD);
static_assert(int(ffi::ExternalSemaphoreHandleType::TimelineSemaphoreFd) ==
              CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD);
static_assert(int(ffi::ExternalSemaphoreHandleType::TimelineSemaphoreWin32) ==
              CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32);
// D3D-CUDA-01: the driver's own array descriptor and 2-D copy.
SAME_LAYOUT(drv::Array3dDescriptor, CUDA_ARRAY3D_DESCRIPTOR);
SAME_OFFSET(drv::Array3dDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Depth);
SAME_OFFSET(drv::Array3dDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Format);
SAME_OFFSET(drv::Array3dDescriptor, CUDA_ARRAY3D_DESCRIPTOR, NumChannels);
SAME_OFFSET(drv::Array3dDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Flags);
SAME_LAYOUT(drv::ExternalMemoryMipmappedArrayDesc, CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC);
SAME_OFFSET(drv::ExternalMemoryMipmappedArrayDesc, CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, arrayDesc);
SAME_OFFSET(drv::ExternalMemoryMipmappedArrayDesc, CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, numLevels);
SAME_OFFSET(drv::ExternalMemoryMipmappedArrayDesc, CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, reserved);
SAME_LAYOUT(drv::Memcpy2D, CUDA_MEMCPY2D);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, srcMemoryType);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, srcDevice);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, srcArray);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, srcPitch);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, dstMemoryType);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, dstDevice);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, dstArray);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, dstPitch);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, WidthInBytes);
SAME_OFFSET(drv::Memcpy2D, CUDA_MEMCPY2D, Height);
static_assert(int(drv::ArrayFormat::UnsignedInt8) == CU_AD_FORMAT_UNSIGNED_INT8);
static_assert(int(drv::ArrayFormat::Half) == CU_AD_FORMAT_HALF);
static_assert(int(drv::ArrayFormat::Float) == CU_AD_FORMAT_FLOAT);
static_assert(int(drv::MemoryType::Device) == CU_MEMORYTYPE_DEVICE);
static_assert(int(drv::MemoryType::Array) == CU_MEMORYTYPE_ARRAY);
static_assert(drv::kSuccess == int(CUDA_SUCCESS));
static_assert(drv::kErrorInvalidValue == int(CUDA_ERROR_INVALID_VALUE));
static_assert(drv::kErrorOutOfMemory == int(CUDA_ERROR_OUT_OF_MEMORY));
static_assert(drv::kErrorNotInitialized == int(CUDA_ERROR_NOT_INITIALIZED));
static_assert(drv::kErrorNoDevice == int(CUDA_ERROR_NO_DEVICE));
static_assert(drv::kErrorInvalidDevice == int(CUDA_ERROR_INVALID_DEVICE));
static_assert(drv::kErrorInvalidContext == int(CUDA_ERROR_INVALID_CONTEXT));
static_assert(drv::kErrorInvalidHandle == int(CUDA_ERROR_INVALID_HANDLE));
static_assert(drv::kErrorNotSupported == int(CUDA_ERROR_NOT_SUPPORTED));
static_assert(drv::kErrorUnknown == int(CUDA_ERROR_UNKNOWN));
static_assert(sizeof(drv::DevicePtr) == sizeof(CUdeviceptr) && sizeof(drv::Device) == sizeof(CUdevice));
static_assert(drv::kGraphicsRegisterFlagsNone == unsigned(CU_GRAPHICS_REGISTER_FLAGS_NONE));
static_assert(drv::kStreamDefault == unsigned(CU_STREAM_DEFAULT));

namespace {
template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool same_shape(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2))
    return false;
  else
    return sizeof(R1) == sizeof(R2) && ((sizeof(A1) == sizeof(A2)) && ...);
}
} // namespace
#define SAME_ENTRY(ours, name) static_assert(same_shape(ours{}, &::name), #name)
SAME_ENTRY(drv::InitFn, cuInit);
SAME_ENTRY(drv::DeviceGetCountFn, cuDeviceGetCount);
SAME_ENTRY(drv::DeviceGetFn, cuDeviceGet);
SAME_ENTRY(drv::DevicePrimaryCtxRetainFn, cuDevicePrimaryCtxRetain);
SAME_ENTRY(drv::DevicePrimaryCtxReleaseFn, cuDevicePrimaryCtxRelease_v2);
SAME_ENTRY(drv::CtxPushCurrentFn, cuCtxPushCurrent_v2);
SAME_ENTRY(drv::CtxPopCurrentFn, cuCtxPopCurrent_v2);
SAME_ENTRY(drv::GetErrorStringFn, cuGetErrorString);
SAME_ENTRY(drv::MemAllocFn, cuMemAlloc_v2);
SAME_ENTRY(drv::MemFreeFn, cuMemFree_v2);
SAME_ENTRY(drv::MemcpyHtoDFn, cuMemcpyHtoD_v2);
SAME_ENTRY(drv::MemcpyDtoHFn, cuMemcpyDtoH_v2);
SAME_ENTRY(drv::MemcpyDtoDFn, cuMemcpyDtoD_v2);
SAME_ENTRY(drv::MemcpyFn, cuMemcpy);
SAME_ENTRY(drv::StreamCreateFn, cuStreamCreate);
SAME_ENTRY(drv::StreamSynchronizeFn, cuStreamSynchronize);
SAME_ENTRY(drv::StreamDestroyFn, cuStreamDestroy_v2);
SAME_ENTRY(drv::GraphicsMapResourcesFn, cuGraphicsMapResources);
SAME_ENTRY(drv::GraphicsResourceGetMappedPointerFn, cuGraphicsResourceGetMappedPointer_v2);
SAME_ENTRY(drv::GraphicsUnmapResourcesFn, cuGraphicsUnmapResources);
SAME_ENTRY(drv::GraphicsUnregisterResourceFn, cuGraphicsUnregisterResource);
SAME_ENTRY(drv::ImportExternalMemoryFn, cuImportExternalMemory);
SAME_ENTRY(drv::ExternalMemoryGetMappedBufferFn, cuExternalMemoryGetMappedBuffer);
SAME_ENTRY(drv::DestroyExternalMemoryFn, cuDestroyExternalMemory);
SAME_ENTRY(drv::ImportExternalSemaphoreFn, cuImportExternalSemaphore);
SAME_ENTRY(drv::SignalExternalSemaphoresAsyncFn, cuSignalExternalSemaphoresAsync);
SAME_ENTRY(drv::WaitExternalSemaphoresAsyncFn, cuWaitExternalSemaphoresAsync);
SAME_ENTRY(drv::DestroyExternalSemaphoreFn, cuDestroyExternalSemaphore);
SAME_ENTRY(drv::DeviceGetLuidFn, cuDeviceGetLuid);
SAME_ENTRY(drv::ExternalMemoryGetMappedMipmappedArrayFn, cuExternalMemoryGetMappedMipmappedArray);
SAME_ENTRY(drv::MipmappedArrayGetLevelFn, cuMipmappedArrayGetLevel);
SAME_ENTRY(drv::MipmappedArrayDestroyFn, cuMipmappedArrayDestroy);
SAME_ENTRY(drv::Memcpy2DAsyncFn, cuMemcpy2DAsync_v2);
// cuGraphicsGLRegisterBuffer is declared in cudaGL.h, which needs the GL
// headers: lib-cuda-gl-driver calls it through the fake driver instead.
#endif

TEST(CudaReal, the_installed_runtime_loads_through_the_ladder_and_degrades_without_a_driver) {
  std::vector<std::string> ladder{"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  auto rt = CudaRuntime::load(ladder);
  if (!rt->loaded())
    GTEST_SKIP() << "no CUDA runtime is installed here (" << rt->reason() << ")";
  EXPECT_FALSE(rt->runtime_path().empty());
  EXPECT_EQ(rt->runtime_path().front(), '/') << "dladdr gives the file the linker opened: " << rt->runtime_path();
  // The external-semaphore entry points are optional, but every runtime
  // since 10.0 exports import, destroy and a signal and wait the backend
  // accepts (11.2 to 12.x the _v2 names too, 13 only the unsuffixed ones):
  // a misspelt name would pass every test of the fake.
  const char *missing = rt->missing_semaphore_symbol();
  EXPECT_EQ(missing, nullptr) << rt->runtime_path() << " lacks " << missing;
  // The same for the Direct3D 11 texture path's entry points (D3D-CUDA-01).
  const char *missing_d3d11 = rt->missing_d3d11_symbol();
  EXPECT_EQ(missing_d3d11, nullptr) << rt->runtime_path() << " lacks " << missing_d3d11;
  if (rt->available()) {
    EXPECT_GE(rt->device_count(), 1);
    std::printf("[ info ] CUDA runtime %s with %d device(s)\n", rt->runtime_path().c_str(), rt->device_count());
    return;
  }
  // No driver (this machine kind): cudaGetDeviceCount answers an error such
  // as 35 (insufficient driver) or 100 (no device) and nothing crashes.
  std::printf("[ info ] %s\n", rt->reason().c_str());
  EXPECT_NE(rt->reason().find("cudaGetDeviceCount"), std::string::npos) << rt->reason();
  EXPECT_FALSE(rt->stream_create());
  EXPECT_FALSE(rt->memcpy_device_to_host(nullptr, nullptr, 0));
}

TEST(CudaReal, the_process_runtime_without_TENSORMEM_CUDART_is_the_installed_one_or_none) {
  ASSERT_EQ(std::getenv("TENSORMEM_CUDART"), nullptr) << "this test runs without the override";
  auto rt = CudaRuntime::get();
  EXPECT_EQ(rt.get(), CudaRuntime::get().get());
  // The process runtime is what a fresh load in the default order finds
  // (the runtime ladder, then libcuda.so.1): the same file (or none), the
  // same API, the same verdict.
  auto fresh = CudaRuntime::load_default();
  EXPECT_EQ(rt->backend(), fresh->backend());
  EXPECT_EQ(rt->loaded(), fresh->loaded()) << rt->reason() << " / " << fresh->reason();
  EXPECT_EQ(rt->runtime_path(), fresh->runtime_path());
  EXPECT_EQ(rt->available(), fresh->available());
  EXPECT_EQ(rt->loaded(), !rt->runtime_path().empty());
  EXPECT_EQ(rt->available(), rt->reason().empty()) << rt->reason();
  EXPECT_EQ(cuda_available(), rt->available());
}

// The toolkit's link-time stub of libcuda exports the driver's entry points
// under their real names (answering every call with
// CUDA_ERROR_STUB_LIBRARY), except the GL interop of cudaGL.h: a real NVIDIA
// library to check the backend's symbol names against where no driver is
// installed. The backend resolves cuGraphicsGLRegisterBuffer last, so
// "lacks cuGraphicsGLRegisterBuffer" means every other required name (the
// _v2 ones included) was found.
TEST(CudaReal, the_toolkit_driver_stub_has_every_required_driver_symbol_but_gl_interop) {
  for (const char *dir : {"/usr/local/cuda/lib64/stubs", "/usr/local/cuda/targets/x86_64-linux/lib/stubs",
                          "/usr/local/cuda/lib/stubs", "/opt/cuda/lib64/stubs"}) {
    const std::string stub = std::string(dir) + "/libcuda.so";
    auto rt = CudaRuntime::load_driver(std::vector<std::string>{stub});
    if (rt->reason().find("cannot open shared object file") != std::string::npos)
      continue;
    std::printf("[ info ] %s\n", rt->reason().c_str());
    EXPECT_FALSE(rt->available());
    // The optional semaphore and D3D11 entry points by the names the backend asks for
    // (the load stops at the GL call before they would be reported).
    if (void *lib = ::dlopen(stub.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      for (const char *name : {"cuImportExternalSemaphore", "cuSignalExternalSemaphoresAsync",
                               "cuWaitExternalSemaphoresAsync", "cuDestroyExternalSemaphore",
                               // and the D3D11 texture path's (D3D-CUDA-01)
                               "cuMemAlloc_v2", "cuDeviceGetLuid", "cuExternalMemoryGetMappedMipmappedArray",
                               "cuMipmappedArrayGetLevel", "cuMipmappedArrayDestroy", "cuMemcpy2DAsync_v2"})
        EXPECT_NE(::dlsym(lib, name), nullptr) << stub << " lacks " << name;
      ::dlclose(lib);
    }
    if (rt->loaded()) // a stub that also exports the GL calls: cuInit answers 34
      EXPECT_NE(rt->reason().find("cuInit failed"), std::string::npos) << rt->reason();
    else
      EXPECT_NE(rt->reason().find("(lacks cuGraphicsGLRegisterBuffer)"), std::string::npos) << rt->reason();
    return;
  }
  GTEST_SKIP() << "no CUDA runtime is installed here (no toolkit driver stub libcuda.so either)";
}

TEST(CudaReal, the_installed_driver_loads_through_libcuda_so_1_or_is_named_missing) {
  auto rt = CudaRuntime::load_driver(std::vector<std::string>{"libcuda.so.1"});
  if (!rt->loaded()) {
    EXPECT_NE(rt->reason().find("libcuda.so.1"), std::string::npos) << rt->reason();
    std::printf("[ info ] %s\n", rt->reason().c_str());
    return;
  }
  EXPECT_EQ(rt->backend(), CudaBackend::Driver);
  EXPECT_EQ(rt->runtime_path().front(), '/') << rt->runtime_path();
  if (rt->available())
    EXPECT_GE(rt->device_count(), 1);
  else
    EXPECT_FALSE(rt->reason().empty());
  std::printf("[ info ] driver %s: %s\n", rt->runtime_path().c_str(),
              rt->available() ? (std::to_string(rt->device_count()) + " device(s)").c_str() : rt->reason().c_str());
}
