// SPDX-License-Identifier: Apache-2.0
// CudaRuntime: the loader order (runtime API, then the driver API), the
// device probe, and the primitives, on whichever CudaApi was loaded.
#include "cuda_api.hpp"
#include "cuda_library.hpp"
#include "cuda_log.hpp"

#include <tensormem/internal/cuda_runtime.hpp>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>

namespace tensormem {
namespace {

using cuda_library::env;
using cuda_log::debug;
using cuda_log::quietly;

// The process runtime, for the exit handler that gives the driver's
// primary context back.
const CudaRuntime *g_process_runtime = nullptr;

} // namespace

const char *cuda_backend_name(CudaBackend backend) noexcept {
  switch (backend) {
  case CudaBackend::None: return "none";
  case CudaBackend::Runtime: return "runtime";
  case CudaBackend::Driver: return "driver";
  }
  return "none";
}

CudaRuntime::CudaRuntime() = default;
CudaRuntime::~CudaRuntime() = default; // the library is deliberately never closed

std::vector<std::string> CudaRuntime::default_candidates() {
  std::string explicit_path = env("TENSORMEM_CUDART");
  if (!explicit_path.empty())
    return {explicit_path};
#ifdef _WIN32
  const char *names[] = {"cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll"};
  std::vector<std::string> out(std::begin(names), std::end(names));
  std::string cuda_path = env("CUDA_PATH");
  if (!cuda_path.empty())
    for (const char *name : names)
      out.push_back(cuda_path + "\\bin\\" + name);
  return out;
#else
  return {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
#endif
}

std::vector<std::string> CudaRuntime::driver_candidates() {
  std::string explicit_path = env("TENSORMEM_CUDA_DRIVER");
  if (!explicit_path.empty())
    return {explicit_path};
#ifdef _WIN32
  return {"nvcuda.dll"};
#else
  return {"libcuda.so.1"};
#endif
}

std::unique_ptr<CudaRuntime> CudaRuntime::load_api(std::span<const std::string> candidates, CudaBackend backend) {
  std::unique_ptr<CudaRuntime> rt(new CudaRuntime());
  const char *what = backend == CudaBackend::Driver ? "CUDA driver" : "CUDA runtime";
  std::string tried;
  for (const std::string &candidate : candidates) {
    detail::OpenedApi opened =
        backend == CudaBackend::Driver ? detail::open_driver_api(candidate) : detail::open_runtime_api(candidate);
    if (!opened.api) {
      // A stale library earlier in the order must not disable
      // CUDA; it was closed again, go on.
      if (opened.why.starts_with("lacks "))
        debug("candidate " + candidate + " " + opened.why + "; closed, trying the next one");
      tried += (tried.empty() ? "" : ", ") + candidate + " (" + opened.why + ")";
      continue;
    }
    rt->api_ = std::move(opened.api);
    rt->backend_ = backend;
    rt->path_ = std::move(opened.path);
    rt->probe_devices();
    return rt;
  }
  rt->reason_ = candidates.empty() ? std::string("no ") + what + " candidates"
                                   : std::string("no usable ") + what + " among: " + tried;
  debug(rt->reason_);
  return rt;
}

std::shared_ptr<const CudaRuntime> CudaRuntime::load(std::span<const std::string> candidates) {
  return load_api(candidates, CudaBackend::Runtime);
}

std::shared_ptr<const CudaRuntime> CudaRuntime::load_driver(std::span<const std::string> candidates) {
  return load_api(candidates, CudaBackend::Driver);
}

void CudaRuntime::probe_devices() {
  const char *what = backend_ == CudaBackend::Driver ? "driver " : "runtime ";
  int count = 0;
  detail::CudaCall call = api_->probe(count);
  if (!call.ok()) {
    reason_ = what + path_ + " loaded, but " + call.name + " failed: " + error_text(call.status);
    debug(reason_);
    return;
  }
  device_count_ = count;
  if (count < 1) {
    reason_ = what + path_ + " loaded, but it reports no CUDA device";
    debug(reason_);
    return;
  }
  available_ = true;
  debug("loaded " + path_ + ", " + std::to_string(count) + " device(s)");
}

std::unique_ptr<CudaRuntime> CudaRuntime::load_order() {
  const std::string api = env("TENSORMEM_CUDA_API");
  if (!api.empty() && api != "runtime" && api != "driver") {
    std::unique_ptr<CudaRuntime> rt(new CudaRuntime());
    rt->reason_ = "TENSORMEM_CUDA_API=" + api + " names no CUDA API (runtime or driver)";
    cuda_log::warn(rt->reason_);
    return rt;
  }
  if (api == "driver")
    return load_api(driver_candidates(), CudaBackend::Driver);
  std::unique_ptr<CudaRuntime> runtime = load_api(default_candidates(), CudaBackend::Runtime);
  // $TENSORMEM_CUDART names exactly one file: no fallback behind it.
  if (runtime->available() || api == "runtime" || !env("TENSORMEM_CUDART").empty())
    return runtime;
  // No runtime library, or one that cannot use the driver installed (a
  // runtime newer than the driver answers cudaErrorInsufficientDriver): the
  // driver API itself.
  std::unique_ptr<CudaRuntime> driver = load_api(driver_candidates(), CudaBackend::Driver);
  if (driver->available())
    return driver;
  // Neither: report what was found, the runtime first.
  std::string reason = runtime->reason_ + "; " + driver->reason_;
  std::unique_ptr<CudaRuntime> &kept = runtime->loaded() || !driver->loaded() ? runtime : driver;
  kept->reason_ = std::move(reason);
  return std::move(kept);
}

std::shared_ptr<const CudaRuntime> CudaRuntime::load_default() { return load_order(); }

std::shared_ptr<const CudaRuntime> CudaRuntime::get() {
  // Built once, never destroyed: the library stays loaded for the life of
  // the process and its function pointers stay callable.
  static const std::shared_ptr<const CudaRuntime> *process = [] {
#if defined(TENSORMEM_CUDA_DISABLED)
    // Built with -Dcuda=disabled: the code is there (it needs nothing of CUDA
    // to build), but no runtime is ever loaded.
    std::unique_ptr<CudaRuntime> rt(new CudaRuntime());
    rt->reason_ = "CUDA support was disabled at build time (-Dcuda=disabled)";
#else
    std::unique_ptr<CudaRuntime> rt = load_order();
#endif
    if (rt->available())
      quietly([&] {
        log(LogLevel::Info, std::string("cuda: using the ") + cuda_backend_name(rt->backend_) + " API from " +
                                rt->path_ + " (" + std::to_string(rt->device_count_) + " device(s))");
      });
    else
      quietly([&] { log(LogLevel::Info, "cuda: unavailable: " + rt->reason_); });
    if (rt->backend_ == CudaBackend::Driver && rt->available()) {
      // The driver's primary context stays retained while the process
      // runs and is given back at exit, before the driver's own teardown
      // (whose handlers were registered earlier, by cuInit).
      g_process_runtime = rt.get();
      std::atexit([] { g_process_runtime->api_->release_device(); });
    }
    return new std::shared_ptr<const CudaRuntime>(std::move(rt));
  }();
  return *process;
}

bool cuda_available() noexcept {
  try {
    return CudaRuntime::get()->available();
  } catch (const std::bad_alloc &) {
    return false;
  }
}

std::string CudaRuntime::error_text(cudaffi::Status status) const {
  if (!api_)
    return "cudaError " + std::to_string(status);
  return api_->error_text(status);
}

Error CudaRuntime::call_error(const char *call, cudaffi::Status status) const {
  return Error::device(std::string(call) + " failed: " + error_text(status));
}

Error CudaRuntime::unavailable_error(const char *what) const {
  return Error::not_implemented(std::string(what) + ": CUDA is unavailable (" +
                                (reason_.empty() ? std::string("no runtime") : reason_) + ")");
}

Result<void> CudaRuntime::memcpy(void *dst, const void *src, std::size_t count, cudaffi::MemcpyKind kind) const {
  if (!available_)
    return unavailable_error("cudaMemcpy");
  detail::CudaCall call = api_->memcpy(dst, src, count, kind);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

Result<void *> CudaRuntime::malloc(std::size_t size) const {
  if (!available_)
    return unavailable_error("cudaMalloc");
  if (!api_->can_malloc())
    return Error::not_implemented("cudaMalloc: the CUDA library " + path_ + " exports no allocator");
  void *ptr = nullptr;
  detail::CudaCall call = api_->malloc(&ptr, size);
  if (!call.ok())
    return call_error(call.name, call.status);
  return ptr;
}

Result<void> CudaRuntime::free(void *device_ptr) const {
  if (!available_)
    return unavailable_error("cudaFree");
  detail::CudaCall call = api_->free(device_ptr);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

Result<CudaStream> CudaRuntime::stream_create() const {
  if (!available_)
    return unavailable_error("cudaStreamCreate");
  void *stream = nullptr;
  detail::CudaCall call = api_->stream_create(&stream);
  if (!call.ok())
    return call_error(call.name, call.status);
  return CudaStream{stream};
}

Result<void> CudaRuntime::stream_synchronize(CudaStream stream) const {
  if (!available_)
    return unavailable_error("cudaStreamSynchronize");
  detail::CudaCall call = api_->stream_synchronize(stream);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

void CudaRuntime::stream_destroy(CudaStream stream) const noexcept {
  if (!available_)
    return;
  detail::CudaCall call = api_->stream_destroy(stream);
  if (!call.ok())
    quietly([&] { debug(std::string(call.name) + " failed: " + error_text(call.status)); });
}

Result<void *> CudaRuntime::gl_register_buffer(std::uint32_t buffer_id) const {
  if (!available_)
    return unavailable_error("cudaGraphicsGLRegisterBuffer");
  void *resource = nullptr;
  detail::CudaCall call = api_->gl_register_buffer(&resource, buffer_id);
  if (!call.ok()) {
    Error e = call_error((std::string(call.name) + "(buffer " + std::to_string(buffer_id) + ")").c_str(), call.status);
    debug(e.message());
    return e;
  }
  if (!resource)
    return Error::device(std::string(call.name) + "(buffer " + std::to_string(buffer_id) + ") returned no resource");
  return resource;
}

Result<CudaDeviceRange> CudaRuntime::gl_map_resource(void *resource) const {
  if (!available_)
    return unavailable_error("cudaGraphicsMapResources");
  if (!resource)
    return Error::invalid_argument("cudaGraphicsMapResources: null resource");
  detail::CudaCall call = api_->gl_map(resource);
  if (!call.ok())
    return call_error(call.name, call.status);
  CudaDeviceRange range;
  call = api_->gl_mapped_pointer(&range.ptr, &range.length, resource);
  if (!call.ok() || !range.ptr) {
    Error e = !call.ok() ? call_error(call.name, call.status)
                         : Error::device(std::string(call.name) + " returned a null pointer");
    detail::CudaCall unmap = api_->gl_unmap(resource);
    if (!unmap.ok())
      debug(std::string(unmap.name) + " after a failed pointer query: " + error_text(unmap.status));
    return e;
  }
  return range;
}

void CudaRuntime::gl_unmap_resource(void *resource) const noexcept {
  if (!available_ || !resource)
    return;
  detail::CudaCall call = api_->gl_unmap(resource);
  if (!call.ok())
    quietly([&] { debug(std::string(call.name) + " failed: " + error_text(call.status)); });
}

void CudaRuntime::gl_unregister_resource(void *resource) const noexcept {
  if (!available_ || !resource)
    return;
  detail::CudaCall call = api_->gl_unregister(resource);
  if (!call.ok())
    quietly([&] { debug(std::string(call.name) + " failed: " + error_text(call.status)); });
}

Result<void *> CudaRuntime::import_external_memory_fd(int fd, std::size_t size, bool &fd_taken) const {
  fd_taken = false;
  if (!available_)
    return unavailable_error("cudaImportExternalMemory");
  cudaffi::ExternalMemoryHandleDesc desc;
  cudaffi::zero_fill(desc);
  desc.type = cudaffi::ExternalMemoryHandleType::OpaqueFd;
  desc.handle.fd = fd;
  desc.size = size;
  desc.flags = 0;
  void *ext_mem = nullptr;
  detail::CudaCall call = api_->import_external_memory(&ext_mem, desc);
  if (!call.ok())
    return call_error(
        (std::string(call.name) + "(OpaqueFd, fd " + std::to_string(fd) + ", " + std::to_string(size) + " bytes)")
            .c_str(),
        call.status);
  fd_taken = true;
  if (!ext_mem)
    return Error::device(std::string(call.name) + " returned no object");
  return ext_mem;
}

Result<void *> CudaRuntime::external_memory_mapped_buffer(void *ext_mem, std::size_t size) const {
  if (!available_)
    return unavailable_error("cudaExternalMemoryGetMappedBuffer");
  cudaffi::ExternalMemoryBufferDesc desc;
  cudaffi::zero_fill(desc);
  desc.offset = 0;
  desc.size = size;
  desc.flags = 0;
  void *device_ptr = nullptr;
  detail::CudaCall call = api_->external_memory_mapped_buffer(&device_ptr, ext_mem, desc);
  if (!call.ok())
    return call_error((std::string(call.name) + "(" + std::to_string(size) + " bytes)").c_str(), call.status);
  if (!device_ptr)
    return Error::device(std::string(call.name) + " returned a null pointer");
  return device_ptr;
}

Result<void> CudaRuntime::destroy_external_memory(void *ext_mem) const {
  if (!available_)
    return unavailable_error("cudaDestroyExternalMemory");
  detail::CudaCall call = api_->destroy_external_memory(ext_mem);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

std::string cuda_semaphore_type_name(cudaffi::ExternalSemaphoreHandleType type) {
  using T = cudaffi::ExternalSemaphoreHandleType;
  switch (type) {
  case T::OpaqueFd: return "OpaqueFd";
  case T::OpaqueWin32: return "OpaqueWin32";
  case T::OpaqueWin32Kmt: return "OpaqueWin32Kmt";
  case T::D3D12Fence: return "D3D12Fence";
  case T::D3D11Fence: return "D3D11Fence";
  case T::NvSciSync: return "NvSciSync";
  case T::KeyedMutex: return "KeyedMutex";
  case T::KeyedMutexKmt: return "KeyedMutexKmt";
  case T::TimelineSemaphoreFd: return "TimelineSemaphoreFd";
  case T::TimelineSemaphoreWin32: return "TimelineSemaphoreWin32";
  }
  return "type " + std::to_string(static_cast<int>(type));
}

const char *CudaRuntime::missing_semaphore_symbol() const noexcept {
  return api_ ? api_->missing_semaphore_symbol() : nullptr;
}

Result<void> CudaRuntime::semaphores_usable(const char *what) const {
  if (!available_)
    return unavailable_error(what);
  if (const char *missing = api_->missing_semaphore_symbol())
    return Error::not_implemented(std::string(what) + ": the CUDA library " + path_ + " exports no " + missing +
                                  " (external semaphores are unavailable)");
  return {};
}

Result<void *> CudaRuntime::import_external_semaphore(const cudaffi::ExternalSemaphoreHandleDesc &desc) const {
  if (Result<void> usable = semaphores_usable("cudaImportExternalSemaphore"); !usable)
    return std::move(usable).error();
  void *ext_sem = nullptr;
  detail::CudaCall call = api_->import_external_semaphore(&ext_sem, desc);
  auto described = [&] {
    bool fd = desc.type == cudaffi::ExternalSemaphoreHandleType::OpaqueFd ||
              desc.type == cudaffi::ExternalSemaphoreHandleType::TimelineSemaphoreFd;
    std::string handle = fd ? "fd " + std::to_string(desc.handle.fd) : std::string("a Win32 handle");
    return std::string(call.name) + "(" + cuda_semaphore_type_name(desc.type) + ", " + handle + ")";
  };
  if (!call.ok())
    return call_error(described().c_str(), call.status);
  if (!ext_sem)
    return Error::device(described() + " returned no object");
  return ext_sem;
}

namespace {

// Signal and wait alike: the parameters are zero everywhere but the
// fence value, which the v1 and v2 layouts share; an error names the call
// made and the value.
template <typename Params, typename Queue>
Result<void> queue_semaphore_op(const CudaRuntime &rt, const char *what, std::uint64_t value, Queue &&queue) {
  if (Result<void> usable = rt.semaphores_usable(what); !usable)
    return std::move(usable).error();
  Params params;
  cudaffi::zero_fill(params);
  params.params.fence.value = value;
  detail::CudaCall call = queue(params);
  if (!call.ok())
    return rt.call_error((std::string(call.name) + "(value " + std::to_string(value) + ")").c_str(), call.status);
  return {};
}

} // namespace

Result<void> CudaRuntime::signal_external_semaphore(void *ext_sem, std::uint64_t value, CudaStream stream) const {
  return queue_semaphore_op<cudaffi::ExternalSemaphoreSignalParams>(
      *this, "cudaSignalExternalSemaphoresAsync", value,
      [&](const auto &params) { return api_->signal_external_semaphore(ext_sem, params, stream); });
}

Result<void> CudaRuntime::wait_external_semaphore(void *ext_sem, std::uint64_t value, CudaStream stream) const {
  return queue_semaphore_op<cudaffi::ExternalSemaphoreWaitParams>(
      *this, "cudaWaitExternalSemaphoresAsync", value,
      [&](const auto &params) { return api_->wait_external_semaphore(ext_sem, params, stream); });
}

Result<void> CudaRuntime::destroy_external_semaphore(void *ext_sem) const {
  if (Result<void> usable = semaphores_usable("cudaDestroyExternalSemaphore"); !usable)
    return std::move(usable).error();
  detail::CudaCall call = api_->destroy_external_semaphore(ext_sem);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

const char *CudaRuntime::missing_d3d11_symbol() const noexcept { return api_ ? api_->missing_d3d11_symbol() : nullptr; }

Result<void> CudaRuntime::d3d11_usable(const char *what) const {
  if (!available_)
    return unavailable_error(what);
  if (const char *missing = api_->missing_d3d11_symbol())
    return Error::not_implemented(std::string(what) + ": the CUDA library " + path_ + " exports no " + missing +
                                  " (Direct3D 11 textures are unavailable)");
  return {};
}

Result<void *> CudaRuntime::import_external_memory_win32(cudaffi::ExternalMemoryHandleType type, void *handle,
                                                         std::size_t size, unsigned flags) const {
  if (!available_)
    return unavailable_error("cudaImportExternalMemory");
  cudaffi::ExternalMemoryHandleDesc desc;
  cudaffi::zero_fill(desc);
  desc.type = type;
  desc.handle.win32.handle = handle;
  desc.handle.win32.name = nullptr;
  desc.size = size;
  desc.flags = flags;
  void *ext_mem = nullptr;
  detail::CudaCall call = api_->import_external_memory(&ext_mem, desc);
  if (!call.ok())
    return call_error((std::string(call.name) + "(type " + std::to_string(static_cast<int>(type)) + ", " +
                       std::to_string(size) + " bytes)")
                          .c_str(),
                      call.status);
  if (!ext_mem)
    return Error::device(std::string(call.name) + " returned no object");
  return ext_mem;
}

Result<void *> CudaRuntime::external_memory_mipmapped_array(void *ext_mem, const cudaffi::ChannelFormatDesc &format,
                                                            std::size_t width, std::size_t height) const {
  if (Result<void> usable = d3d11_usable("cudaExternalMemoryGetMappedMipmappedArray"); !usable)
    return std::move(usable).error();
  void *mipmap = nullptr;
  detail::CudaCall call = api_->external_memory_mipmapped_array(&mipmap, ext_mem, format, width, height);
  if (!call.ok())
    return call_error(
        (std::string(call.name) + "(" + std::to_string(width) + "x" + std::to_string(height) + ")").c_str(),
        call.status);
  if (!mipmap)
    return Error::device(std::string(call.name) + " returned no array");
  return mipmap;
}

Result<void *> CudaRuntime::mipmapped_array_level(void *mipmap, unsigned level) const {
  if (Result<void> usable = d3d11_usable("cudaGetMipmappedArrayLevel"); !usable)
    return std::move(usable).error();
  void *array = nullptr;
  detail::CudaCall call = api_->mipmapped_array_level(&array, mipmap, level);
  if (!call.ok())
    return call_error(call.name, call.status);
  if (!array)
    return Error::device(std::string(call.name) + " returned no array");
  return array;
}

Result<void> CudaRuntime::free_mipmapped_array(void *mipmap) const {
  if (Result<void> usable = d3d11_usable("cudaFreeMipmappedArray"); !usable)
    return usable;
  detail::CudaCall call = api_->free_mipmapped_array(mipmap);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

Result<void> CudaRuntime::copy_array_to_linear(void *dst, std::size_t dst_pitch, void *array, std::size_t width_bytes,
                                               std::size_t height, CudaStream stream) const {
  if (Result<void> usable = d3d11_usable("cudaMemcpy2DFromArrayAsync"); !usable)
    return usable;
  detail::CudaCall call = api_->copy_array_to_linear(dst, dst_pitch, array, width_bytes, height, stream);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

Result<void> CudaRuntime::copy_linear_to_array(void *array, const void *src, std::size_t src_pitch,
                                               std::size_t width_bytes, std::size_t height, CudaStream stream) const {
  if (Result<void> usable = d3d11_usable("cudaMemcpy2DToArrayAsync"); !usable)
    return usable;
  detail::CudaCall call = api_->copy_linear_to_array(array, src, src_pitch, width_bytes, height, stream);
  if (!call.ok())
    return call_error(call.name, call.status);
  return {};
}

Result<int> CudaRuntime::device_with_luid(const unsigned char (&luid)[8]) const {
  if (Result<void> usable = d3d11_usable("CudaRuntime::device_with_luid"); !usable)
    return std::move(usable).error();
  for (int ordinal = 0; ordinal < device_count_; ++ordinal) {
    unsigned char theirs[8] = {};
    unsigned node_mask = 0;
    detail::CudaCall call = api_->device_luid(ordinal, theirs, node_mask);
    if (!call.ok())
      return call_error((std::string(call.name) + "(device " + std::to_string(ordinal) + ")").c_str(), call.status);
    if (std::memcmp(theirs, luid, sizeof theirs) == 0)
      return ordinal;
  }
  return Error::not_implemented("no CUDA device among " + std::to_string(device_count_) +
                                " has the Direct3D 11 adapter's LUID");
}

Result<void> CudaRuntime::set_device(int ordinal) const {
  if (Result<void> usable = d3d11_usable("cudaSetDevice"); !usable)
    return usable;
  detail::CudaCall call = api_->set_device(ordinal);
  if (!call.ok())
    return call_error((std::string(call.name) + "(device " + std::to_string(ordinal) + ")").c_str(), call.status);
  return {};
}

} // namespace tensormem
