// SPDX-License-Identifier: Apache-2.0
// The CudaApi port on CUDA's runtime API (libcudart / cudart64_*.dll).
#include "cuda_api.hpp"
#include "cuda_library.hpp"

#include <cstring>
#include <iterator>

namespace tensormem::detail {
namespace {

namespace ffi = cudaffi;

// The resolved entry points. Required: those before "Optional." below,
// without which a runtime does not count as usable; the rest are optional.
struct RuntimeFunctions {
  ffi::GetDeviceCountFn get_device_count = nullptr;
  ffi::GraphicsGLRegisterBufferFn graphics_gl_register_buffer = nullptr;
  ffi::GraphicsMapResourcesFn graphics_map_resources = nullptr;
  ffi::GraphicsResourceGetMappedPointerFn graphics_resource_get_mapped_pointer = nullptr;
  ffi::GraphicsUnmapResourcesFn graphics_unmap_resources = nullptr;
  ffi::GraphicsUnregisterResourceFn graphics_unregister_resource = nullptr;
  ffi::ImportExternalMemoryFn import_external_memory = nullptr;
  ffi::ExternalMemoryGetMappedBufferFn external_memory_get_mapped_buffer = nullptr;
  ffi::DestroyExternalMemoryFn destroy_external_memory = nullptr;
  ffi::MemcpyFn memcpy = nullptr;
  ffi::FreeFn free = nullptr;
  ffi::StreamCreateFn stream_create = nullptr;
  ffi::StreamSynchronizeFn stream_synchronize = nullptr;
  ffi::StreamDestroyFn stream_destroy = nullptr;
  // Optional.
  ffi::GetErrorStringFn get_error_string = nullptr;
  ffi::MallocFn malloc = nullptr;
  // Optional too (on every platform, see docs/seed-deviations.md), and
  // only usable all together; the semaphore calls prefer the _v2 exports
  // and fall back to the pre-11.2 ones.
  ffi::ImportExternalSemaphoreFn import_external_semaphore = nullptr;
  ffi::SignalExternalSemaphoresAsyncFn signal_semaphores_v2 = nullptr;
  ffi::SignalExternalSemaphoresAsyncFn signal_semaphores_v1 = nullptr;
  ffi::WaitExternalSemaphoresAsyncFn wait_semaphores_v2 = nullptr;
  ffi::WaitExternalSemaphoresAsyncFn wait_semaphores_v1 = nullptr;
  ffi::DestroyExternalSemaphoreFn destroy_external_semaphore = nullptr;
  // Optional: the D3D11 texture path. The device properties
  // prefer the _v2 export (CUDA 12's; CUDA 13 exports only the unsuffixed
  // name, with the same layout up to the LUID).
  ffi::ExternalMemoryGetMappedMipmappedArrayFn get_mapped_mipmapped_array = nullptr;
  ffi::GetMipmappedArrayLevelFn get_mipmapped_array_level = nullptr;
  ffi::FreeMipmappedArrayFn free_mipmapped_array = nullptr;
  ffi::Memcpy2DFromArrayAsyncFn memcpy_2d_from_array_async = nullptr;
  ffi::Memcpy2DToArrayAsyncFn memcpy_2d_to_array_async = nullptr;
  ffi::GetDevicePropertiesFn get_device_properties_v2 = nullptr;
  ffi::GetDevicePropertiesFn get_device_properties = nullptr;
  ffi::SetDeviceFn set_device = nullptr;
};

#define TM_CUDA_SYMBOL(field, name, required)                                                                          \
  cuda_library::Symbol { name, offsetof(RuntimeFunctions, field), required }
constexpr cuda_library::Symbol kSymbols[] = {
    TM_CUDA_SYMBOL(get_device_count, "cudaGetDeviceCount", true),
    TM_CUDA_SYMBOL(graphics_gl_register_buffer, "cudaGraphicsGLRegisterBuffer", true),
    TM_CUDA_SYMBOL(graphics_map_resources, "cudaGraphicsMapResources", true),
    TM_CUDA_SYMBOL(graphics_resource_get_mapped_pointer, "cudaGraphicsResourceGetMappedPointer", true),
    TM_CUDA_SYMBOL(graphics_unmap_resources, "cudaGraphicsUnmapResources", true),
    TM_CUDA_SYMBOL(graphics_unregister_resource, "cudaGraphicsUnregisterResource", true),
    TM_CUDA_SYMBOL(import_external_memory, "cudaImportExternalMemory", true),
    TM_CUDA_SYMBOL(external_memory_get_mapped_buffer, "cudaExternalMemoryGetMappedBuffer", true),
    TM_CUDA_SYMBOL(destroy_external_memory, "cudaDestroyExternalMemory", true),
    TM_CUDA_SYMBOL(memcpy, "cudaMemcpy", true),
    TM_CUDA_SYMBOL(free, "cudaFree", true),
    TM_CUDA_SYMBOL(stream_create, "cudaStreamCreate", true),
    TM_CUDA_SYMBOL(stream_synchronize, "cudaStreamSynchronize", true),
    TM_CUDA_SYMBOL(stream_destroy, "cudaStreamDestroy", true),
    TM_CUDA_SYMBOL(get_error_string, "cudaGetErrorString", false),
    TM_CUDA_SYMBOL(malloc, "cudaMalloc", false),
    TM_CUDA_SYMBOL(import_external_semaphore, "cudaImportExternalSemaphore", false),
    TM_CUDA_SYMBOL(signal_semaphores_v2, "cudaSignalExternalSemaphoresAsync_v2", false),
    TM_CUDA_SYMBOL(signal_semaphores_v1, "cudaSignalExternalSemaphoresAsync", false),
    TM_CUDA_SYMBOL(wait_semaphores_v2, "cudaWaitExternalSemaphoresAsync_v2", false),
    TM_CUDA_SYMBOL(wait_semaphores_v1, "cudaWaitExternalSemaphoresAsync", false),
    TM_CUDA_SYMBOL(destroy_external_semaphore, "cudaDestroyExternalSemaphore", false),
    TM_CUDA_SYMBOL(get_mapped_mipmapped_array, "cudaExternalMemoryGetMappedMipmappedArray", false),
    TM_CUDA_SYMBOL(get_mipmapped_array_level, "cudaGetMipmappedArrayLevel", false),
    TM_CUDA_SYMBOL(free_mipmapped_array, "cudaFreeMipmappedArray", false),
    TM_CUDA_SYMBOL(memcpy_2d_from_array_async, "cudaMemcpy2DFromArrayAsync", false),
    TM_CUDA_SYMBOL(memcpy_2d_to_array_async, "cudaMemcpy2DToArrayAsync", false),
    TM_CUDA_SYMBOL(get_device_properties_v2, "cudaGetDeviceProperties_v2", false),
    TM_CUDA_SYMBOL(get_device_properties, "cudaGetDeviceProperties", false),
    TM_CUDA_SYMBOL(set_device, "cudaSetDevice", false),
};
#undef TM_CUDA_SYMBOL

class RuntimeApi final : public CudaApi {
public:
  explicit RuntimeApi(const RuntimeFunctions &fn) : fn_(fn) {
    // The unsuffixed exports read the v1 parameter layout before CUDA 11.2
    // (our v2 blocks start with it, and one block per call has no array
    // stride to differ) and the v2 layout from CUDA 13 on, which dropped
    // the _v2 names: either way they read what we send.
    if (fn_.signal_semaphores_v2)
      signal_ = {fn_.signal_semaphores_v2, "cudaSignalExternalSemaphoresAsync_v2"};
    else if (fn_.signal_semaphores_v1)
      signal_ = {fn_.signal_semaphores_v1, "cudaSignalExternalSemaphoresAsync"};
    if (fn_.get_device_properties_v2)
      properties_ = {fn_.get_device_properties_v2, "cudaGetDeviceProperties_v2"};
    else if (fn_.get_device_properties)
      properties_ = {fn_.get_device_properties, "cudaGetDeviceProperties"};
    if (fn_.wait_semaphores_v2)
      wait_ = {fn_.wait_semaphores_v2, "cudaWaitExternalSemaphoresAsync_v2"};
    else if (fn_.wait_semaphores_v1)
      wait_ = {fn_.wait_semaphores_v1, "cudaWaitExternalSemaphoresAsync"};
  }

  CudaBackend backend() const noexcept override { return CudaBackend::Runtime; }

  std::string error_text(ffi::Status status) const override {
    const char *text = fn_.get_error_string ? fn_.get_error_string(status) : nullptr;
    std::string code = "cudaError " + std::to_string(status);
    if (!text || text[0] == '\0')
      return code;
    return std::string(text) + " (" + code + ")";
  }

  CudaCall probe(int &device_count) override { return {fn_.get_device_count(&device_count), "cudaGetDeviceCount"}; }
  void release_device() noexcept override {} // the runtime keeps its own context

  bool can_malloc() const noexcept override { return fn_.malloc != nullptr; }
  CudaCall malloc(void **device_ptr, std::size_t size) const override {
    return {fn_.malloc(device_ptr, size), "cudaMalloc"};
  }
  CudaCall free(void *device_ptr) const override { return {fn_.free(device_ptr), "cudaFree"}; }
  CudaCall memcpy(void *dst, const void *src, std::size_t count, ffi::MemcpyKind kind) const override {
    return {fn_.memcpy(dst, src, count, kind), "cudaMemcpy"};
  }
  CudaCall stream_create(void **stream) const override { return {fn_.stream_create(stream), "cudaStreamCreate"}; }
  CudaCall stream_synchronize(void *stream) const override {
    return {fn_.stream_synchronize(stream), "cudaStreamSynchronize"};
  }
  CudaCall stream_destroy(void *stream) const override { return {fn_.stream_destroy(stream), "cudaStreamDestroy"}; }

  CudaCall gl_register_buffer(void **resource, std::uint32_t buffer_id) const override {
    return {fn_.graphics_gl_register_buffer(resource, buffer_id, ffi::kGraphicsRegisterFlagsNone),
            "cudaGraphicsGLRegisterBuffer"};
  }
  CudaCall gl_map(void *resource) const override {
    return {fn_.graphics_map_resources(1, &resource, nullptr), "cudaGraphicsMapResources"};
  }
  CudaCall gl_mapped_pointer(void **device_ptr, std::size_t *size, void *resource) const override {
    return {fn_.graphics_resource_get_mapped_pointer(device_ptr, size, resource),
            "cudaGraphicsResourceGetMappedPointer"};
  }
  CudaCall gl_unmap(void *resource) const override {
    return {fn_.graphics_unmap_resources(1, &resource, nullptr), "cudaGraphicsUnmapResources"};
  }
  CudaCall gl_unregister(void *resource) const override {
    return {fn_.graphics_unregister_resource(resource), "cudaGraphicsUnregisterResource"};
  }

  CudaCall import_external_memory(void **ext_mem, const ffi::ExternalMemoryHandleDesc &desc) const override {
    return {fn_.import_external_memory(ext_mem, &desc), "cudaImportExternalMemory"};
  }
  CudaCall external_memory_mapped_buffer(void **device_ptr, void *ext_mem,
                                         const ffi::ExternalMemoryBufferDesc &desc) const override {
    return {fn_.external_memory_get_mapped_buffer(device_ptr, ext_mem, &desc), "cudaExternalMemoryGetMappedBuffer"};
  }
  CudaCall destroy_external_memory(void *ext_mem) const override {
    return {fn_.destroy_external_memory(ext_mem), "cudaDestroyExternalMemory"};
  }

  const char *missing_semaphore_symbol() const noexcept override {
    return first_missing({{fn_.import_external_semaphore != nullptr, "cudaImportExternalSemaphore"},
                          {signal_.fn != nullptr, "cudaSignalExternalSemaphoresAsync"},
                          {wait_.fn != nullptr, "cudaWaitExternalSemaphoresAsync"},
                          {fn_.destroy_external_semaphore != nullptr, "cudaDestroyExternalSemaphore"}});
  }
  CudaCall import_external_semaphore(void **ext_sem, const ffi::ExternalSemaphoreHandleDesc &desc) const override {
    return {fn_.import_external_semaphore(ext_sem, &desc), "cudaImportExternalSemaphore"};
  }
  CudaCall signal_external_semaphore(void *ext_sem, const ffi::ExternalSemaphoreSignalParams &params,
                                     void *stream) const override {
    return {signal_.fn(&ext_sem, &params, 1, stream), signal_.name};
  }
  CudaCall wait_external_semaphore(void *ext_sem, const ffi::ExternalSemaphoreWaitParams &params,
                                   void *stream) const override {
    return {wait_.fn(&ext_sem, &params, 1, stream), wait_.name};
  }
  CudaCall destroy_external_semaphore(void *ext_sem) const override {
    return {fn_.destroy_external_semaphore(ext_sem), "cudaDestroyExternalSemaphore"};
  }

  const char *missing_d3d11_symbol() const noexcept override {
    return first_missing({{fn_.malloc != nullptr, "cudaMalloc"},
                          {fn_.set_device != nullptr, "cudaSetDevice"},
                          {properties_.fn != nullptr, "cudaGetDeviceProperties"},
                          {fn_.get_mapped_mipmapped_array != nullptr, "cudaExternalMemoryGetMappedMipmappedArray"},
                          {fn_.get_mipmapped_array_level != nullptr, "cudaGetMipmappedArrayLevel"},
                          {fn_.free_mipmapped_array != nullptr, "cudaFreeMipmappedArray"},
                          {fn_.memcpy_2d_from_array_async != nullptr, "cudaMemcpy2DFromArrayAsync"},
                          {fn_.memcpy_2d_to_array_async != nullptr, "cudaMemcpy2DToArrayAsync"}});
  }
  CudaCall device_luid(int ordinal, unsigned char (&luid)[8], unsigned &node_mask) const override {
    // Only the LUID is read; the rest of the struct (whose length differs
    // between toolkits) lands in a buffer longer than any of them.
    alignas(8) unsigned char prop[ffi::kDevicePropBufferSize] = {};
    CudaCall call{properties_.fn(prop, ordinal), properties_.name};
    if (call.ok()) {
      std::memcpy(luid, prop + ffi::kDevicePropLuidOffset, sizeof luid);
      std::memcpy(&node_mask, prop + ffi::kDevicePropLuidNodeMaskOffset, sizeof node_mask);
    }
    return call;
  }
  CudaCall set_device(int ordinal) const override { return {fn_.set_device(ordinal), "cudaSetDevice"}; }
  CudaCall external_memory_mipmapped_array(void **mipmap, void *ext_mem, const ffi::ChannelFormatDesc &format,
                                           std::size_t width, std::size_t height) const override {
    // Offset 0, one level, flags 0, depth 0.
    ffi::ExternalMemoryMipmappedArrayDesc desc;
    ffi::zero_fill(desc);
    desc.offset = 0;
    desc.formatDesc = format;
    desc.extent = ffi::Extent{width, height, 0};
    desc.flags = 0;
    desc.numLevels = 1;
    return {fn_.get_mapped_mipmapped_array(mipmap, ext_mem, &desc), "cudaExternalMemoryGetMappedMipmappedArray"};
  }
  CudaCall mipmapped_array_level(void **array, void *mipmap, unsigned level) const override {
    return {fn_.get_mipmapped_array_level(array, mipmap, level), "cudaGetMipmappedArrayLevel"};
  }
  CudaCall free_mipmapped_array(void *mipmap) const override {
    return {fn_.free_mipmapped_array(mipmap), "cudaFreeMipmappedArray"};
  }
  CudaCall copy_array_to_linear(void *dst, std::size_t dst_pitch, void *array, std::size_t width_bytes,
                                std::size_t height, void *stream) const override {
    return {fn_.memcpy_2d_from_array_async(dst, dst_pitch, array, 0, 0, width_bytes, height,
                                           ffi::MemcpyKind::DeviceToDevice, stream),
            "cudaMemcpy2DFromArrayAsync"};
  }
  CudaCall copy_linear_to_array(void *array, const void *src, std::size_t src_pitch, std::size_t width_bytes,
                                std::size_t height, void *stream) const override {
    return {fn_.memcpy_2d_to_array_async(array, 0, 0, src, src_pitch, width_bytes, height,
                                         ffi::MemcpyKind::DeviceToDevice, stream),
            "cudaMemcpy2DToArrayAsync"};
  }

private:
  // An entry point with two exported names, and the one resolved.
  template <typename Fn> struct Chosen {
    Fn fn = nullptr;
    const char *name = "";
  };

  RuntimeFunctions fn_;
  Chosen<ffi::SignalExternalSemaphoresAsyncFn> signal_;
  Chosen<ffi::WaitExternalSemaphoresAsyncFn> wait_;
  Chosen<ffi::GetDevicePropertiesFn> properties_;
};

} // namespace

OpenedApi open_runtime_api(const std::string &file) {
  OpenedApi out;
  cuda_library::Library lib(file, out.why);
  if (!lib.valid())
    return out;
  RuntimeFunctions table;
  if (const char *missing = lib.resolve(kSymbols, &table)) {
    out.why = std::string("lacks ") + missing;
    return out;
  }
  lib.keep();
  out.path = lib.opened_path(file, "cudaGetDeviceCount");
  out.api = std::make_unique<RuntimeApi>(table);
  return out;
}

} // namespace tensormem::detail
