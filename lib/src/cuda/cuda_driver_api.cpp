// SPDX-License-Identifier: Apache-2.0
// The CudaApi port on CUDA's driver API (libcuda.so.1 / nvcuda.dll), for
// machines with the NVIDIA driver but no CUDA runtime library. The driver
// has no implicit context: the device's primary context (the one the
// runtime would use too) is retained once by probe() and pushed current
// around every call, on whatever thread makes it (a streaming thread, the
// GL worker), then popped so a context the application had current there
// is back in place.
#include "cuda_api.hpp"
#include "cuda_library.hpp"
#include "cuda_log.hpp"

#include <cstdint>
#include <cstring>

namespace tensormem::detail {
namespace {

namespace drv = cudaffi::driver;
using cuda_log::debug;
using cuda_log::quietly;

static_assert(sizeof(drv::DevicePtr) == sizeof(void *), "the driver backend needs 64-bit device addresses");

drv::DevicePtr device_address(const void *ptr) noexcept {
  return static_cast<drv::DevicePtr>(reinterpret_cast<std::uintptr_t>(ptr));
}
void *host_pointer(drv::DevicePtr address) noexcept {
  return reinterpret_cast<void *>(static_cast<std::uintptr_t>(address));
}

struct DriverFunctions {
  drv::InitFn init = nullptr;
  drv::DeviceGetCountFn device_get_count = nullptr;
  drv::DeviceGetFn device_get = nullptr;
  drv::DevicePrimaryCtxRetainFn primary_ctx_retain = nullptr;
  drv::DevicePrimaryCtxReleaseFn primary_ctx_release = nullptr;
  drv::CtxPushCurrentFn ctx_push_current = nullptr;
  drv::CtxPopCurrentFn ctx_pop_current = nullptr;
  drv::MemFreeFn mem_free = nullptr;
  drv::MemcpyHtoDFn memcpy_htod = nullptr;
  drv::MemcpyDtoHFn memcpy_dtoh = nullptr;
  drv::MemcpyDtoDFn memcpy_dtod = nullptr;
  drv::MemcpyFn memcpy = nullptr;
  drv::StreamCreateFn stream_create = nullptr;
  drv::StreamSynchronizeFn stream_synchronize = nullptr;
  drv::StreamDestroyFn stream_destroy = nullptr;
  drv::GraphicsGLRegisterBufferFn graphics_gl_register_buffer = nullptr;
  drv::GraphicsMapResourcesFn graphics_map_resources = nullptr;
  drv::GraphicsResourceGetMappedPointerFn graphics_resource_get_mapped_pointer = nullptr;
  drv::GraphicsUnmapResourcesFn graphics_unmap_resources = nullptr;
  drv::GraphicsUnregisterResourceFn graphics_unregister_resource = nullptr;
  drv::ImportExternalMemoryFn import_external_memory = nullptr;
  drv::ExternalMemoryGetMappedBufferFn external_memory_get_mapped_buffer = nullptr;
  drv::DestroyExternalMemoryFn destroy_external_memory = nullptr;
  // Optional.
  drv::GetErrorStringFn get_error_string = nullptr;
  drv::MemAllocFn mem_alloc = nullptr;
  // Optional, and only usable all together: a driver without them still
  // serves everything else.
  drv::ImportExternalSemaphoreFn import_external_semaphore = nullptr;
  drv::SignalExternalSemaphoresAsyncFn signal_semaphores = nullptr;
  drv::WaitExternalSemaphoresAsyncFn wait_semaphores = nullptr;
  drv::DestroyExternalSemaphoreFn destroy_external_semaphore = nullptr;
  // Optional: the D3D11 texture path.
  drv::DeviceGetLuidFn device_get_luid = nullptr;
  drv::ExternalMemoryGetMappedMipmappedArrayFn get_mapped_mipmapped_array = nullptr;
  drv::MipmappedArrayGetLevelFn mipmapped_array_get_level = nullptr;
  drv::MipmappedArrayDestroyFn mipmapped_array_destroy = nullptr;
  drv::Memcpy2DAsyncFn memcpy_2d_async = nullptr;
};

// The _v2 names are the current ABI of the calls cuda.h renames by macro;
// the unsuffixed exports behind them are the pre-CUDA-4 (32-bit pointer)
// entry points.
#define TM_CU_SYMBOL(field, name, required)                                                                            \
  cuda_library::Symbol { name, offsetof(DriverFunctions, field), required }
constexpr cuda_library::Symbol kSymbols[] = {
    TM_CU_SYMBOL(init, "cuInit", true),
    TM_CU_SYMBOL(device_get_count, "cuDeviceGetCount", true),
    TM_CU_SYMBOL(device_get, "cuDeviceGet", true),
    TM_CU_SYMBOL(primary_ctx_retain, "cuDevicePrimaryCtxRetain", true),
    TM_CU_SYMBOL(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", true),
    TM_CU_SYMBOL(ctx_push_current, "cuCtxPushCurrent_v2", true),
    TM_CU_SYMBOL(ctx_pop_current, "cuCtxPopCurrent_v2", true),
    TM_CU_SYMBOL(mem_free, "cuMemFree_v2", true),
    TM_CU_SYMBOL(memcpy_htod, "cuMemcpyHtoD_v2", true),
    TM_CU_SYMBOL(memcpy_dtoh, "cuMemcpyDtoH_v2", true),
    TM_CU_SYMBOL(memcpy_dtod, "cuMemcpyDtoD_v2", true),
    TM_CU_SYMBOL(memcpy, "cuMemcpy", true),
    TM_CU_SYMBOL(stream_create, "cuStreamCreate", true),
    TM_CU_SYMBOL(stream_synchronize, "cuStreamSynchronize", true),
    TM_CU_SYMBOL(stream_destroy, "cuStreamDestroy_v2", true),
    TM_CU_SYMBOL(graphics_map_resources, "cuGraphicsMapResources", true),
    TM_CU_SYMBOL(graphics_resource_get_mapped_pointer, "cuGraphicsResourceGetMappedPointer_v2", true),
    TM_CU_SYMBOL(graphics_unmap_resources, "cuGraphicsUnmapResources", true),
    TM_CU_SYMBOL(graphics_unregister_resource, "cuGraphicsUnregisterResource", true),
    TM_CU_SYMBOL(import_external_memory, "cuImportExternalMemory", true),
    TM_CU_SYMBOL(external_memory_get_mapped_buffer, "cuExternalMemoryGetMappedBuffer", true),
    TM_CU_SYMBOL(destroy_external_memory, "cuDestroyExternalMemory", true),
    // Last of the required ones: the toolkit's link stub of libcuda exports
    // everything above but not the cudaGL.h calls, so lib-cuda-real can
    // check the rest of this table against a real NVIDIA library.
    TM_CU_SYMBOL(graphics_gl_register_buffer, "cuGraphicsGLRegisterBuffer", true),
    TM_CU_SYMBOL(get_error_string, "cuGetErrorString", false),
    TM_CU_SYMBOL(mem_alloc, "cuMemAlloc_v2", false),
    TM_CU_SYMBOL(import_external_semaphore, "cuImportExternalSemaphore", false),
    TM_CU_SYMBOL(signal_semaphores, "cuSignalExternalSemaphoresAsync", false),
    TM_CU_SYMBOL(wait_semaphores, "cuWaitExternalSemaphoresAsync", false),
    TM_CU_SYMBOL(destroy_external_semaphore, "cuDestroyExternalSemaphore", false),
    TM_CU_SYMBOL(device_get_luid, "cuDeviceGetLuid", false),
    TM_CU_SYMBOL(get_mapped_mipmapped_array, "cuExternalMemoryGetMappedMipmappedArray", false),
    TM_CU_SYMBOL(mipmapped_array_get_level, "cuMipmappedArrayGetLevel", false),
    TM_CU_SYMBOL(mipmapped_array_destroy, "cuMipmappedArrayDestroy", false),
    TM_CU_SYMBOL(memcpy_2d_async, "cuMemcpy2DAsync_v2", false),
};
#undef TM_CU_SYMBOL

class DriverApi final : public CudaApi {
public:
  explicit DriverApi(const DriverFunctions &fn) : fn_(fn) {}

  // A context retained by probe() is released with the API object: fresh
  // loads (tests, tools) balance it here; the process runtime, which is
  // never destroyed, releases it at exit (CudaRuntime::get()).
  ~DriverApi() override { release_device(); }

  void release_device() noexcept override {
    if (!context_)
      return;
    context_ = nullptr;
    drv::Status rc = fn_.primary_ctx_release(device_);
    if (rc != drv::kSuccess)
      quietly([&] { debug("cuDevicePrimaryCtxRelease_v2 failed: " + error_text(rc)); });
  }

  CudaBackend backend() const noexcept override { return CudaBackend::Driver; }

  std::string error_text(cudaffi::Status status) const override {
    const char *text = nullptr;
    if (fn_.get_error_string && fn_.get_error_string(status, &text) != drv::kSuccess)
      text = nullptr;
    std::string code = "CUresult " + std::to_string(status);
    if (!text || text[0] == '\0')
      return code;
    return std::string(text) + " (" + code + ")";
  }

  CudaCall probe(int &device_count) override {
    if (drv::Status rc = fn_.init(0); rc != drv::kSuccess)
      return {rc, "cuInit"};
    if (drv::Status rc = fn_.device_get_count(&device_count); rc != drv::kSuccess)
      return {rc, "cuDeviceGetCount"};
    if (device_count < 1)
      return {drv::kSuccess, "cuDeviceGetCount"};
    if (drv::Status rc = fn_.device_get(&device_, 0); rc != drv::kSuccess)
      return {rc, "cuDeviceGet"};
    void *context = nullptr;
    if (drv::Status rc = fn_.primary_ctx_retain(&context, device_); rc != drv::kSuccess)
      return {rc, "cuDevicePrimaryCtxRetain"};
    if (!context)
      return {drv::kErrorInvalidContext, "cuDevicePrimaryCtxRetain"};
    context_ = context;
    return {drv::kSuccess, "cuDevicePrimaryCtxRetain"};
  }

  bool can_malloc() const noexcept override { return fn_.mem_alloc != nullptr; }
  CudaCall malloc(void **device_ptr, std::size_t size) const override {
    return in_context([&]() -> CudaCall {
      drv::DevicePtr address = 0;
      drv::Status rc = fn_.mem_alloc(&address, size);
      if (rc == drv::kSuccess)
        *device_ptr = host_pointer(address);
      return {rc, "cuMemAlloc_v2"};
    });
  }
  CudaCall free(void *device_ptr) const override {
    return in_context([&]() -> CudaCall { return {fn_.mem_free(device_address(device_ptr)), "cuMemFree_v2"}; });
  }
  CudaCall memcpy(void *dst, const void *src, std::size_t count, cudaffi::MemcpyKind kind) const override {
    return in_context([&]() -> CudaCall {
      switch (kind) {
      case cudaffi::MemcpyKind::HostToDevice:
        return {fn_.memcpy_htod(device_address(dst), src, count), "cuMemcpyHtoD_v2"};
      case cudaffi::MemcpyKind::DeviceToHost:
        return {fn_.memcpy_dtoh(dst, device_address(src), count), "cuMemcpyDtoH_v2"};
      case cudaffi::MemcpyKind::DeviceToDevice:
        return {fn_.memcpy_dtod(device_address(dst), device_address(src), count), "cuMemcpyDtoD_v2"};
      case cudaffi::MemcpyKind::HostToHost:
      case cudaffi::MemcpyKind::Default:
        // Unified addressing: the driver tells host from device itself.
        return {fn_.memcpy(device_address(dst), device_address(src), count), "cuMemcpy"};
      }
      return {drv::kErrorInvalidValue, "cuMemcpy"};
    });
  }
  CudaCall stream_create(void **stream) const override {
    return in_context([&]() -> CudaCall { return {fn_.stream_create(stream, drv::kStreamDefault), "cuStreamCreate"}; });
  }
  CudaCall stream_synchronize(void *stream) const override {
    return in_context([&]() -> CudaCall { return {fn_.stream_synchronize(stream), "cuStreamSynchronize"}; });
  }
  CudaCall stream_destroy(void *stream) const override {
    return in_context([&]() -> CudaCall { return {fn_.stream_destroy(stream), "cuStreamDestroy_v2"}; });
  }

  CudaCall gl_register_buffer(void **resource, std::uint32_t buffer_id) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.graphics_gl_register_buffer(resource, buffer_id, drv::kGraphicsRegisterFlagsNone),
              "cuGraphicsGLRegisterBuffer"};
    });
  }
  CudaCall gl_map(void *resource) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.graphics_map_resources(1, &resource, nullptr), "cuGraphicsMapResources"};
    });
  }
  CudaCall gl_mapped_pointer(void **device_ptr, std::size_t *size, void *resource) const override {
    return in_context([&]() -> CudaCall {
      drv::DevicePtr address = 0;
      drv::Status rc = fn_.graphics_resource_get_mapped_pointer(&address, size, resource);
      if (rc == drv::kSuccess)
        *device_ptr = host_pointer(address);
      return {rc, "cuGraphicsResourceGetMappedPointer_v2"};
    });
  }
  CudaCall gl_unmap(void *resource) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.graphics_unmap_resources(1, &resource, nullptr), "cuGraphicsUnmapResources"};
    });
  }
  CudaCall gl_unregister(void *resource) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.graphics_unregister_resource(resource), "cuGraphicsUnregisterResource"};
    });
  }

  CudaCall import_external_memory(void **ext_mem, const cudaffi::ExternalMemoryHandleDesc &desc) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.import_external_memory(ext_mem, &desc), "cuImportExternalMemory"};
    });
  }
  CudaCall external_memory_mapped_buffer(void **device_ptr, void *ext_mem,
                                         const cudaffi::ExternalMemoryBufferDesc &desc) const override {
    return in_context([&]() -> CudaCall {
      drv::DevicePtr address = 0;
      drv::Status rc = fn_.external_memory_get_mapped_buffer(&address, ext_mem, &desc);
      if (rc == drv::kSuccess)
        *device_ptr = host_pointer(address);
      return {rc, "cuExternalMemoryGetMappedBuffer"};
    });
  }
  CudaCall destroy_external_memory(void *ext_mem) const override {
    return in_context([&]() -> CudaCall { return {fn_.destroy_external_memory(ext_mem), "cuDestroyExternalMemory"}; });
  }

  const char *missing_semaphore_symbol() const noexcept override {
    return first_missing({{fn_.import_external_semaphore != nullptr, "cuImportExternalSemaphore"},
                          {fn_.signal_semaphores != nullptr, "cuSignalExternalSemaphoresAsync"},
                          {fn_.wait_semaphores != nullptr, "cuWaitExternalSemaphoresAsync"},
                          {fn_.destroy_external_semaphore != nullptr, "cuDestroyExternalSemaphore"}});
  }
  CudaCall import_external_semaphore(void **ext_sem, const cudaffi::ExternalSemaphoreHandleDesc &desc) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.import_external_semaphore(ext_sem, &desc), "cuImportExternalSemaphore"};
    });
  }
  CudaCall signal_external_semaphore(void *ext_sem, const cudaffi::ExternalSemaphoreSignalParams &params,
                                     void *stream) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.signal_semaphores(&ext_sem, &params, 1, stream), "cuSignalExternalSemaphoresAsync"};
    });
  }
  CudaCall wait_external_semaphore(void *ext_sem, const cudaffi::ExternalSemaphoreWaitParams &params,
                                   void *stream) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.wait_semaphores(&ext_sem, &params, 1, stream), "cuWaitExternalSemaphoresAsync"};
    });
  }
  CudaCall destroy_external_semaphore(void *ext_sem) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.destroy_external_semaphore(ext_sem), "cuDestroyExternalSemaphore"};
    });
  }

  const char *missing_d3d11_symbol() const noexcept override {
    return first_missing({{fn_.mem_alloc != nullptr, "cuMemAlloc_v2"},
                          {fn_.device_get_luid != nullptr, "cuDeviceGetLuid"},
                          {fn_.get_mapped_mipmapped_array != nullptr, "cuExternalMemoryGetMappedMipmappedArray"},
                          {fn_.mipmapped_array_get_level != nullptr, "cuMipmappedArrayGetLevel"},
                          {fn_.mipmapped_array_destroy != nullptr, "cuMipmappedArrayDestroy"},
                          {fn_.memcpy_2d_async != nullptr, "cuMemcpy2DAsync_v2"}});
  }
  CudaCall device_luid(int ordinal, unsigned char (&luid)[8], unsigned &node_mask) const override {
    // Device queries need no context, only cuInit (done by probe()).
    drv::Device device = 0;
    if (drv::Status rc = fn_.device_get(&device, ordinal); rc != drv::kSuccess)
      return {rc, "cuDeviceGet"};
    char bytes[8] = {};
    drv::Status rc = fn_.device_get_luid(bytes, &node_mask, device);
    if (rc == drv::kSuccess)
      std::memcpy(luid, bytes, sizeof bytes);
    return {rc, "cuDeviceGetLuid"};
  }
  CudaCall set_device(int ordinal) const override {
    // Every call pushes the primary context of the device probe() chose;
    // that device is the only one this backend can select.
    if (!context_ || ordinal != device_)
      return {drv::kErrorInvalidDevice, "cuDevicePrimaryCtxRetain"};
    return {drv::kSuccess, "cuDevicePrimaryCtxRetain"};
  }
  CudaCall external_memory_mipmapped_array(void **mipmap, void *ext_mem, const cudaffi::ChannelFormatDesc &format,
                                           std::size_t width, std::size_t height) const override {
    drv::ExternalMemoryMipmappedArrayDesc desc;
    cudaffi::zero_fill(desc);
    if (!array_format(format, desc.arrayDesc.Format, desc.arrayDesc.NumChannels))
      return {drv::kErrorInvalidValue, "cuExternalMemoryGetMappedMipmappedArray"};
    desc.offset = 0;
    desc.arrayDesc.Width = width;
    desc.arrayDesc.Height = height;
    desc.arrayDesc.Depth = 0;
    desc.arrayDesc.Flags = 0;
    desc.numLevels = 1;
    return in_context([&]() -> CudaCall {
      return {fn_.get_mapped_mipmapped_array(mipmap, ext_mem, &desc), "cuExternalMemoryGetMappedMipmappedArray"};
    });
  }
  CudaCall mipmapped_array_level(void **array, void *mipmap, unsigned level) const override {
    return in_context([&]() -> CudaCall {
      return {fn_.mipmapped_array_get_level(array, mipmap, level), "cuMipmappedArrayGetLevel"};
    });
  }
  CudaCall free_mipmapped_array(void *mipmap) const override {
    return in_context([&]() -> CudaCall { return {fn_.mipmapped_array_destroy(mipmap), "cuMipmappedArrayDestroy"}; });
  }
  CudaCall copy_array_to_linear(void *dst, std::size_t dst_pitch, void *array, std::size_t width_bytes,
                                std::size_t height, void *stream) const override {
    drv::Memcpy2D copy;
    cudaffi::zero_fill(copy);
    copy.srcMemoryType = drv::MemoryType::Array;
    copy.srcArray = array;
    copy.dstMemoryType = drv::MemoryType::Device;
    copy.dstDevice = device_address(dst);
    copy.dstPitch = dst_pitch;
    copy.WidthInBytes = width_bytes;
    copy.Height = height;
    return in_context([&]() -> CudaCall { return {fn_.memcpy_2d_async(&copy, stream), "cuMemcpy2DAsync_v2"}; });
  }
  CudaCall copy_linear_to_array(void *array, const void *src, std::size_t src_pitch, std::size_t width_bytes,
                                std::size_t height, void *stream) const override {
    drv::Memcpy2D copy;
    cudaffi::zero_fill(copy);
    copy.srcMemoryType = drv::MemoryType::Device;
    copy.srcDevice = device_address(src);
    copy.srcPitch = src_pitch;
    copy.dstMemoryType = drv::MemoryType::Array;
    copy.dstArray = array;
    copy.WidthInBytes = width_bytes;
    copy.Height = height;
    return in_context([&]() -> CudaCall { return {fn_.memcpy_2d_async(&copy, stream), "cuMemcpy2DAsync_v2"}; });
  }

private:
  // The driver's array format for a runtime channel description: every
  // used channel as wide as the first, 8-bit unsigned, 16-bit or 32-bit
  // float (the formats d3d11_cuda_channel_format lists); false for anything else.
  static bool array_format(const cudaffi::ChannelFormatDesc &f, drv::ArrayFormat &format, unsigned &channels) {
    const int bits[4] = {f.x, f.y, f.z, f.w};
    channels = 0;
    for (int b : bits) {
      if (b == 0)
        break;
      if (b != f.x)
        return false;
      ++channels;
    }
    if (channels == 0)
      return false;
    for (unsigned i = channels; i < 4; ++i)
      if (bits[i] != 0)
        return false;
    if (f.f == cudaffi::ChannelFormatKind::Unsigned && f.x == 8)
      format = drv::ArrayFormat::UnsignedInt8;
    else if (f.f == cudaffi::ChannelFormatKind::Float && f.x == 16)
      format = drv::ArrayFormat::Half;
    else if (f.f == cudaffi::ChannelFormatKind::Float && f.x == 32)
      format = drv::ArrayFormat::Float;
    else
      return false;
    return true;
  }

  // Runs `call` with the primary context current on this thread: pushed
  // before, popped after, so whatever was current before (nothing, or the
  // application's own context) is current again afterwards.
  template <typename Call> CudaCall in_context(Call &&call) const {
    if (drv::Status rc = fn_.ctx_push_current(context_); rc != drv::kSuccess)
      return {rc, "cuCtxPushCurrent_v2"};
    CudaCall result = call();
    void *popped = nullptr;
    drv::Status rc = fn_.ctx_pop_current(&popped);
    if (rc != drv::kSuccess || popped != context_)
      quietly([&] {
        debug(rc != drv::kSuccess ? "cuCtxPopCurrent_v2 failed: " + error_text(rc)
                                  : std::string("cuCtxPopCurrent_v2 popped another context than the one pushed"));
      });
    return result;
  }

  DriverFunctions fn_;
  drv::Device device_ = 0;
  void *context_ = nullptr;
};

} // namespace

OpenedApi open_driver_api(const std::string &file) {
  OpenedApi out;
  cuda_library::Library lib(file, out.why);
  if (!lib.valid())
    return out;
  DriverFunctions table;
  if (const char *missing = lib.resolve(kSymbols, &table)) {
    out.why = std::string("lacks ") + missing;
    return out;
  }
  lib.keep();
  out.path = lib.opened_path(file, "cuInit");
  out.api = std::make_unique<DriverApi>(table);
  return out;
}

} // namespace tensormem::detail
