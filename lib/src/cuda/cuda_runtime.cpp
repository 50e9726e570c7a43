// SPDX-License-Identifier: Apache-2.0
// Loading libcudart with dlopen/LoadLibraryW: the candidate ladder, symbol
// resolution, the device probe, and the generic primitives.
#include "cuda_log.hpp"

#include <tensormem/cuda_runtime.hpp>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace tensormem {
namespace {

using cuda_log::debug;
using cuda_log::quietly;

// One row per entry point: its exported name, where it lands in the table,
// and whether a candidate without it is rejected.
struct Symbol {
  const char *name;
  std::size_t offset;
  bool required;
};

#define TM_CUDA_SYMBOL(field, name, required)                                                                          \
  Symbol { name, offsetof(CudaFunctions, field), required }
constexpr Symbol kSymbols[] = {
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
};
#undef TM_CUDA_SYMBOL

void store(CudaFunctions &table, const Symbol &sym, void *address) {
  // Function pointers are all the same size; the slot is written bytewise so
  // no data-pointer/function-pointer cast is needed.
  static_assert(sizeof(void *) == sizeof(cudaffi::FreeFn));
  std::memcpy(reinterpret_cast<char *>(&table) + sym.offset, &address, sizeof address);
}

#ifdef _WIN32

std::wstring widen(const std::string &text) {
  if (text.empty())
    return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0);
  std::wstring out(static_cast<std::size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), n);
  return out;
}

std::string narrow(const wchar_t *text, std::size_t length) {
  if (length == 0)
    return {};
  int n = WideCharToMultiByte(CP_UTF8, 0, text, static_cast<int>(length), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, text, static_cast<int>(length), out.data(), n, nullptr, nullptr);
  return out;
}

std::string env(const wchar_t *name) {
  wchar_t buf[2048];
  DWORD n = GetEnvironmentVariableW(name, buf, 2048);
  if (n == 0 || n >= 2048)
    return {};
  return narrow(buf, n);
}

void *open_library(const std::string &name, std::string &why) {
  HMODULE h = LoadLibraryW(widen(name).c_str());
  if (!h)
    why = "LoadLibraryW failed (error " + std::to_string(GetLastError()) + ")";
  return reinterpret_cast<void *>(h);
}

void *find_symbol(void *lib, const char *name) {
  return reinterpret_cast<void *>(GetProcAddress(reinterpret_cast<HMODULE>(lib), name));
}

void close_library(void *lib) { FreeLibrary(reinterpret_cast<HMODULE>(lib)); }

// CUDA-LOAD-03: a full path records itself; a bare name records the module
// the OS actually loaded, asked of the loaded module (no second load), with
// a 1024-character buffer where 0 or 1024 (truncated) counts as failure.
std::string opened_path(void *lib, const std::string &candidate, const CudaFunctions &) {
  if (candidate.find_first_of("\\/") != std::string::npos)
    return candidate;
  wchar_t buf[1024];
  DWORD n = GetModuleFileNameW(reinterpret_cast<HMODULE>(lib), buf, 1024);
  if (n == 0 || n >= 1024)
    return candidate;
  return narrow(buf, n);
}

#else

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

void *open_library(const std::string &name, std::string &why) {
  void *h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *text = dlerror();
    why = text ? text : "dlopen failed";
  }
  return h;
}

void *find_symbol(void *lib, const char *name) {
  dlerror();
  return dlsym(lib, name);
}

void close_library(void *lib) { dlclose(lib); }

// The file the dynamic linker actually mapped: ask it where one of the
// library's own functions lives (a bare soname tells nothing on its own).
std::string opened_path(void *, const std::string &candidate, const CudaFunctions &fn) {
  Dl_info info{};
  void *address = nullptr;
  static_assert(sizeof address == sizeof fn.get_device_count);
  std::memcpy(&address, &fn.get_device_count, sizeof address);
  if (dladdr(address, &info) != 0 && info.dli_fname && info.dli_fname[0] != '\0')
    return info.dli_fname;
  return candidate;
}

#endif

} // namespace

std::vector<std::string> CudaRuntime::default_candidates() {
#ifdef _WIN32
  std::string explicit_path = env(L"TENSORMEM_CUDART");
  if (!explicit_path.empty())
    return {explicit_path};
  const char *names[] = {"cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll"};
  std::vector<std::string> out(std::begin(names), std::end(names));
  std::string cuda_path = env(L"CUDA_PATH");
  if (!cuda_path.empty())
    for (const char *name : names)
      out.push_back(cuda_path + "\\bin\\" + name);
  return out;
#else
  std::string explicit_path = env("TENSORMEM_CUDART");
  if (!explicit_path.empty())
    return {explicit_path};
  return {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
#endif
}

std::shared_ptr<const CudaRuntime> CudaRuntime::load(std::span<const std::string> candidates) {
  std::shared_ptr<CudaRuntime> rt(new CudaRuntime());
  std::string tried;
  for (const std::string &candidate : candidates) {
    std::string why;
    void *lib = open_library(candidate, why);
    if (!lib) {
      tried += (tried.empty() ? "" : ", ") + candidate + " (" + why + ")";
      continue;
    }
    CudaFunctions table;
    const char *missing = nullptr;
    for (const Symbol &sym : kSymbols) {
      void *address = find_symbol(lib, sym.name);
      if (!address && sym.required) {
        missing = sym.name;
        break;
      }
      store(table, sym, address);
    }
    if (missing) {
      // CUDA-LOAD-04: a stale library earlier in the order must not disable
      // CUDA; close it and go on.
      debug("candidate " + candidate + " lacks " + missing + "; closed, trying the next one");
      tried += (tried.empty() ? "" : ", ") + candidate + " (lacks " + missing + ")";
      close_library(lib);
      continue;
    }
    rt->lib_ = lib;
    rt->fn_ = table;
    rt->path_ = opened_path(lib, candidate, table);
    rt->probe_devices();
    return rt;
  }
  rt->reason_ = candidates.empty() ? "no CUDA runtime candidates" : "no usable CUDA runtime among: " + tried;
  debug(rt->reason_);
  return rt;
}

void CudaRuntime::probe_devices() {
  int count = 0;
  cudaffi::Status rc = fn_.get_device_count(&count);
  if (rc != cudaffi::kSuccess) {
    reason_ = "runtime " + path_ + " loaded, but cudaGetDeviceCount failed: " + error_text(rc);
    debug(reason_);
    return;
  }
  device_count_ = count;
  if (count < 1) {
    reason_ = "runtime " + path_ + " loaded, but it reports no CUDA device";
    debug(reason_);
    return;
  }
  available_ = true;
  debug("loaded " + path_ + ", " + std::to_string(count) + " device(s)");
}

std::shared_ptr<const CudaRuntime> CudaRuntime::get() {
  // Built once, never destroyed: the library stays loaded for the life of
  // the process and its function pointers stay callable (CUDA-LOAD-05).
  static const std::shared_ptr<const CudaRuntime> *process = [] {
#if defined(TENSORMEM_CUDA_DISABLED)
    // Built with -Dcuda=disabled: the code is there (it needs nothing of CUDA
    // to build), but no runtime is ever loaded.
    auto rt = std::shared_ptr<CudaRuntime>(new CudaRuntime());
    rt->reason_ = "CUDA support was disabled at build time (-Dcuda=disabled)";
    return new std::shared_ptr<const CudaRuntime>(std::move(rt));
#else
    std::vector<std::string> candidates = default_candidates();
    return new std::shared_ptr<const CudaRuntime>(load(candidates));
#endif
  }();
  return *process;
}

CudaRuntime::~CudaRuntime() = default; // lib_ is deliberately never closed

bool cuda_available() noexcept {
  try {
    return CudaRuntime::get()->available();
  } catch (...) {
    return false;
  }
}

std::string CudaRuntime::error_text(cudaffi::Status status) const {
  const char *text = fn_.get_error_string ? fn_.get_error_string(status) : nullptr;
  std::string code = "cudaError " + std::to_string(status);
  if (!text || text[0] == '\0')
    return code;
  return std::string(text) + " (" + code + ")";
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
  cudaffi::Status rc = fn_.memcpy(dst, src, count, kind);
  if (rc != cudaffi::kSuccess)
    return call_error("cudaMemcpy", rc);
  return {};
}

Result<CudaStream> CudaRuntime::stream_create() const {
  if (!available_)
    return unavailable_error("cudaStreamCreate");
  void *stream = nullptr;
  cudaffi::Status rc = fn_.stream_create(&stream);
  if (rc != cudaffi::kSuccess)
    return call_error("cudaStreamCreate", rc);
  return CudaStream{stream};
}

Result<void> CudaRuntime::stream_synchronize(CudaStream stream) const {
  if (!available_)
    return unavailable_error("cudaStreamSynchronize");
  cudaffi::Status rc = fn_.stream_synchronize(stream);
  if (rc != cudaffi::kSuccess)
    return call_error("cudaStreamSynchronize", rc);
  return {};
}

void CudaRuntime::stream_destroy(CudaStream stream) const noexcept {
  if (!available_)
    return;
  cudaffi::Status rc = fn_.stream_destroy(stream);
  if (rc != cudaffi::kSuccess)
    quietly([&] { debug("cudaStreamDestroy failed: " + error_text(rc)); });
}

Result<void *> CudaRuntime::gl_register_buffer(std::uint32_t buffer_id) const {
  if (!available_)
    return unavailable_error("cudaGraphicsGLRegisterBuffer");
  void *resource = nullptr;
  cudaffi::Status rc = fn_.graphics_gl_register_buffer(&resource, buffer_id, cudaffi::kGraphicsRegisterFlagsNone);
  if (rc != cudaffi::kSuccess) {
    Error e = call_error(("cudaGraphicsGLRegisterBuffer(buffer " + std::to_string(buffer_id) + ")").c_str(), rc);
    debug(e.message());
    return e;
  }
  if (!resource)
    return Error::device("cudaGraphicsGLRegisterBuffer(buffer " + std::to_string(buffer_id) + ") returned no resource");
  return resource;
}

Result<CudaDeviceRange> CudaRuntime::gl_map_resource(void *resource) const {
  if (!available_)
    return unavailable_error("cudaGraphicsMapResources");
  if (!resource)
    return Error::invalid_argument("cudaGraphicsMapResources: null resource");
  cudaffi::Status rc = fn_.graphics_map_resources(1, &resource, nullptr);
  if (rc != cudaffi::kSuccess)
    return call_error("cudaGraphicsMapResources", rc);
  CudaDeviceRange range;
  rc = fn_.graphics_resource_get_mapped_pointer(&range.ptr, &range.length, resource);
  if (rc != cudaffi::kSuccess || !range.ptr) {
    Error e = rc != cudaffi::kSuccess ? call_error("cudaGraphicsResourceGetMappedPointer", rc)
                                      : Error::device("cudaGraphicsResourceGetMappedPointer returned a null pointer");
    cudaffi::Status urc = fn_.graphics_unmap_resources(1, &resource, nullptr);
    if (urc != cudaffi::kSuccess)
      debug("cudaGraphicsUnmapResources after a failed pointer query: " + error_text(urc));
    return e;
  }
  return range;
}

void CudaRuntime::gl_unmap_resource(void *resource) const noexcept {
  if (!available_ || !resource)
    return;
  cudaffi::Status rc = fn_.graphics_unmap_resources(1, &resource, nullptr);
  if (rc != cudaffi::kSuccess)
    quietly([&] { debug("cudaGraphicsUnmapResources failed: " + error_text(rc)); });
}

void CudaRuntime::gl_unregister_resource(void *resource) const noexcept {
  if (!available_ || !resource)
    return;
  cudaffi::Status rc = fn_.graphics_unregister_resource(resource);
  if (rc != cudaffi::kSuccess)
    quietly([&] { debug("cudaGraphicsUnregisterResource failed: " + error_text(rc)); });
}

} // namespace tensormem
