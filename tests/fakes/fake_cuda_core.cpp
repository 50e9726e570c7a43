// SPDX-License-Identifier: Apache-2.0
// The fake CUDA core behind both front ends (the runtime API in
// fake_cudart.cpp, the driver API in fake_cuda_driver.cpp): host memory as
// device memory, every call counted and logged, object balance checked, and
// any call made to fail on request. Like a desktop driver it refuses a
// DMA-BUF or memfd as OpaqueFd external memory unless told to accept one, as
// Jetson-class drivers do. See fake_cudart.h (the tests' control surface)
// and fake_cuda_core.hpp (the front ends' one).
#include "fake_cuda_core.hpp"
#include "fake_cudart.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#ifdef _WIN32
#include <malloc.h>
#else
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#if defined(FAKE_CUDART_HAVE_GL)
#include <epoxy/egl.h>
#include <epoxy/gl.h>
#endif

#ifdef _WIN32
#define FAKE_EXPORT extern "C" __declspec(dllexport)
#else
#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
#endif

using fakecuda::Entry;

namespace {

// Values as in CUDA's driver_types.h; cuda.h's CUresult has the same
// numbers for these conditions, plus the driver's own two.
constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kMemoryAllocation = 2;
constexpr int kInvalidPitchValue = 12; // runtime only; the driver says kInvalidValue
constexpr std::size_t kMaxPitch = 2147483647;
constexpr int kNotInitialized = 3;
constexpr int kNoDevice = 100;
constexpr int kInvalidDevice = 101;
constexpr int kInvalidContext = 201;
constexpr int kInvalidGraphicsContext = 219;
constexpr int kOperatingSystem = 304;
constexpr int kInvalidResourceHandle = 400;
constexpr int kLaunchTimeout = 702; // the fake's answer to a wait that is never satisfied
constexpr int kNotSupported = 801;
constexpr int kUnknown = 999;

// One operation per row; the runtime and the driver front end count into
// the same row (cuMemcpyDtoH_v2 and cudaMemcpy are both Memcpy), so one
// expected count or call sequence serves either API. The log names an
// operation by its runtime name where the runtime has one.
enum Fn {
  GetDeviceCount,
  GetErrorString,
  GraphicsGLRegisterBuffer,
  GraphicsMapResources,
  GraphicsResourceGetMappedPointer,
  GraphicsUnmapResources,
  GraphicsUnregisterResource,
  ImportExternalMemory,
  ExternalMemoryGetMappedBuffer,
  DestroyExternalMemory,
  Memcpy,
  Malloc,
  Free,
  StreamCreate,
  StreamSynchronize,
  StreamDestroy,
  // The driver's own.
  Init,
  DeviceGet,
  PrimaryCtxRetain,
  PrimaryCtxRelease,
  CtxPushCurrent,
  CtxPopCurrent,
  // External semaphores (both APIs).
  ImportExternalSemaphore,
  SignalExternalSemaphores,
  WaitExternalSemaphores,
  DestroyExternalSemaphore,
  // Direct3D 11 textures.
  GetDeviceProperties,
  SetDevice,
  ExternalMemoryGetMappedMipmappedArray,
  GetMipmappedArrayLevel,
  FreeMipmappedArray,
  Memcpy2DFromArrayAsync,
  Memcpy2DToArrayAsync,
  kFnCount
};

struct FnNames {
  const char *logged;     // the name in the call log
  const char *aliases[4]; // other exports counted as this operation (the driver's, older runtime names)
};

const FnNames kNames[kFnCount] = {
    {"cudaGetDeviceCount", {"cuDeviceGetCount"}},
    {"cudaGetErrorString", {"cuGetErrorString"}},
    {"cudaGraphicsGLRegisterBuffer", {"cuGraphicsGLRegisterBuffer"}},
    {"cudaGraphicsMapResources", {"cuGraphicsMapResources"}},
    {"cudaGraphicsResourceGetMappedPointer", {"cuGraphicsResourceGetMappedPointer_v2"}},
    {"cudaGraphicsUnmapResources", {"cuGraphicsUnmapResources"}},
    {"cudaGraphicsUnregisterResource", {"cuGraphicsUnregisterResource"}},
    {"cudaImportExternalMemory", {"cuImportExternalMemory"}},
    {"cudaExternalMemoryGetMappedBuffer", {"cuExternalMemoryGetMappedBuffer"}},
    {"cudaDestroyExternalMemory", {"cuDestroyExternalMemory"}},
    {"cudaMemcpy", {"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemcpy"}},
    {"cudaMalloc", {"cuMemAlloc_v2"}},
    {"cudaFree", {"cuMemFree_v2"}},
    {"cudaStreamCreate", {"cuStreamCreate"}},
    {"cudaStreamSynchronize", {"cuStreamSynchronize"}},
    {"cudaStreamDestroy", {"cuStreamDestroy_v2"}},
    {"cuInit", {"cuInit"}},
    {"cuDeviceGet", {"cuDeviceGet"}},
    {"cuDevicePrimaryCtxRetain", {"cuDevicePrimaryCtxRetain"}},
    {"cuDevicePrimaryCtxRelease_v2", {"cuDevicePrimaryCtxRelease_v2"}},
    {"cuCtxPushCurrent_v2", {"cuCtxPushCurrent_v2"}},
    {"cuCtxPopCurrent_v2", {"cuCtxPopCurrent_v2"}},
    {"cudaImportExternalSemaphore", {"cuImportExternalSemaphore"}},
    {"cudaSignalExternalSemaphoresAsync", {"cudaSignalExternalSemaphoresAsync_v2", "cuSignalExternalSemaphoresAsync"}},
    {"cudaWaitExternalSemaphoresAsync", {"cudaWaitExternalSemaphoresAsync_v2", "cuWaitExternalSemaphoresAsync"}},
    {"cudaDestroyExternalSemaphore", {"cuDestroyExternalSemaphore"}},
    {"cudaGetDeviceProperties", {"cudaGetDeviceProperties_v2", "cuDeviceGetLuid"}},
    {"cudaSetDevice", {}},
    {"cudaExternalMemoryGetMappedMipmappedArray", {"cuExternalMemoryGetMappedMipmappedArray"}},
    {"cudaGetMipmappedArrayLevel", {"cuMipmappedArrayGetLevel"}},
    {"cudaFreeMipmappedArray", {"cuMipmappedArrayDestroy"}},
    // The driver's one 2-D copy counts as whichever direction it copies;
    // by name, it is the copy out of the array.
    {"cudaMemcpy2DFromArrayAsync", {"cuMemcpy2DAsync_v2"}},
    {"cudaMemcpy2DToArrayAsync", {}},
};

// Either API's name of an operation.
int fn_index(const char *name) {
  for (int i = 0; i < kFnCount; ++i) {
    if (std::strcmp(kNames[i].logged, name) == 0)
      return i;
    for (const char *alias : kNames[i].aliases)
      if (alias && std::strcmp(alias, name) == 0)
        return i;
  }
  return -1;
}

// The descriptors as the CUDA 13 headers lay them out (tensormem's own
// mirrors are deliberately not used here: the fake checks them).
struct MemHandleDesc {
  int type;
  union {
    int fd;
    struct {
      void *handle;
      const void *name;
    } win32;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};
struct BufferDesc {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};
static_assert(sizeof(MemHandleDesc) == 104 && sizeof(BufferDesc) == 88);
struct SemHandleDesc {
  int type;
  union {
    int fd;
    struct {
      void *handle;
      const void *name;
    } win32;
  } handle;
  unsigned int flags;
  unsigned int reserved[16];
};
// The _v2 parameter blocks; a v1 block is the same without `tail` (so 80
// bytes long: arrays of them have that stride).
struct SemSignalParams {
  unsigned long long value;
  unsigned long long nvscisync;
  unsigned long long key;
  unsigned int reserved[12];
  unsigned int flags;
  unsigned int tail[16];
};
struct SemWaitParams {
  unsigned long long value;
  unsigned long long nvscisync;
  struct {
    unsigned long long key;
    unsigned int timeout_ms;
  } keyed_mutex;
  unsigned int reserved[10];
  unsigned int flags;
  unsigned int tail[16];
};
static_assert(sizeof(SemHandleDesc) == 96 && sizeof(SemSignalParams) == 144 && sizeof(SemWaitParams) == 144);
static_assert(offsetof(SemSignalParams, flags) == 72 && offsetof(SemWaitParams, flags) == 72);
constexpr std::size_t kSemParamsV1Size = 80;

struct Fault {
  int error = 0;
  int remaining = 0; // -1: until cleared
  int close_fd = 0;  // 1: close the fd anyway; 2: and put another file on its number
};

struct ExtMem {
  int fd; // -1 for a D3D11 texture
  std::size_t size;
  std::size_t live_buffers = 0;
  // A D3D11 texture: its bytes, as the software device holds them.
  unsigned char *texels = nullptr;
  std::size_t row_pitch = 0;
  std::size_t rows = 0;
  std::size_t live_arrays = 0;
};

// A mipmapped array mapped from a D3D11 texture; `level0` is the address
// handed out as its base level (a cudaArray_t).
struct MipArray {
  ExtMem *owner;
  std::size_t width_bytes;
  std::size_t height;
  char level0 = 0;
};

struct MappedBuffer {
  ExtMem *owner;
  void *map_base; // page-aligned mmap
  std::size_t map_len;
  std::size_t size;
};

// An imported semaphore. Binary ones (OpaqueFd, OpaqueWin32, OpaqueWin32Kmt)
// are signalled (payload non-zero) or not; fences and timeline semaphores
// (D3D12Fence, D3D11Fence, TimelineSemaphoreFd/Win32) count up. An fd
// type's payload lives in the imported file itself, a little-endian u64 at
// offset 0, so whoever else holds the file (a test's producer) signals by
// writing there; a Win32 type's lives here (the fake has no Win32 objects).
struct Semaphore {
  int type;
  int fd = -1;            // fd types: owned, closed at destroy
  std::uint64_t held = 0; // Win32 types: the payload
  // A software D3D11 fence's handle: the payload is the fence's completed
  // value, read through the software device.
  std::uintptr_t d3d11_fence = 0;
  bool binary() const { return type == 1 || type == 2 || type == 3; }
};

// A semaphore operation queued on a stream that has not run yet.
struct PendingOp {
  Semaphore *sem; // null: a copy
  bool wait;
  std::uint64_t value;
  std::function<void()> copy; // a 2-D copy queued behind a wait
};

struct Resource {
  unsigned int buffer;
  bool mapped = false;
  void *ptr = nullptr;
  std::size_t size = 0;
  bool borrowed = false; // ptr is the buffer's own persistent GL mapping
};

struct State {
  std::mutex mu;
  bool initialised = false;
  unsigned long calls[kFnCount] = {};
  Fault faults[kFnCount];
  std::string log;
  int device_count = 1;
  bool trace = false;
  bool check_balance = false;
  bool accept_dmabuf = false;                 // false: a desktop driver (the default)
  bool accept_d3d11 = false;                  // false: CUDA on Linux (the default) refuses D3D11 handles
  std::uint32_t luid_low[16] = {0x50465753u}; // device 0: the software device's default adapter
  std::int32_t luid_high[16] = {};
  std::map<void *, MipArray *> mipmaps;
  int last_import_fd = -1;
  unsigned long long last_import_size = 0; // declared by the last D3D11 import
  unsigned long violations = 0;
  // Copies, semaphore waits/signals and synchronisations given the legacy
  // default stream (null): legal, as in CUDA, and counted (HAZ-46).
  unsigned long default_stream_ops = 0;
  std::vector<std::string> violation_text;
  std::map<void *, std::size_t> mallocs;
  std::map<void *, ExtMem *> ext_mems;
  std::map<void *, MappedBuffer> mapped;
  std::map<void *, int> streams;
  std::map<void *, Resource *> resources;
  std::map<void *, Semaphore *> semaphores;
  // Per stream (nullptr: the default stream), semaphore operations waiting
  // their turn; everything else runs at once.
  std::map<void *, std::deque<PendingOp>> queues;
  std::condition_variable progressed; // a queue moved or a payload changed
  long wait_timeout_ms = 3000;
  std::map<std::string, unsigned long> symbol_calls;
  // The driver: cuInit seen, and each device's primary context retain count
  // (the context itself is the address of its counter).
  bool driver_initialised = false;
  // A fixed array: a context's address never moves.
  int primary_retains[16] = {};
  long pushed_contexts = 0; // pushes not yet popped, all threads
};

// The driver's per-thread stack of current contexts.
thread_local std::vector<void *> t_context_stack;

State &state() {
  static State *s = new State; // outlives every static destructor
  return *s;
}

void parse_faults(State &s, const char *spec) {
  std::string all(spec);
  std::size_t pos = 0;
  while (pos <= all.size()) {
    std::size_t end = all.find(',', pos);
    if (end == std::string::npos)
      end = all.size();
    std::string item = all.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty())
      continue;
    std::vector<std::string> parts;
    std::size_t p = 0;
    while (p <= item.size()) {
      std::size_t e = item.find(':', p);
      if (e == std::string::npos)
        e = item.size();
      parts.push_back(item.substr(p, e - p));
      p = e + 1;
    }
    std::string name = parts[0];
    int error = kUnknown;
    if (std::size_t at = name.find('@'); at != std::string::npos) {
      error = std::atoi(name.c_str() + at + 1);
      name.resize(at);
    }
    int idx = fn_index(name.c_str());
    if (idx < 0) {
      std::fprintf(stderr, "fake-cudart: FAKE_CUDART_FAIL names unknown function %s\n", name.c_str());
      continue;
    }
    Fault f;
    f.error = error;
    f.remaining = -1;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      if (parts[i] == "closefd")
        f.close_fd = 1;
      else if (parts[i] == "reusefd")
        f.close_fd = 2;
      else if (!parts[i].empty())
        f.remaining = std::atoi(parts[i].c_str());
    }
    s.faults[idx] = f;
  }
}

// Called with the lock held by every entry point.
void init_locked(State &s) {
  if (s.initialised)
    return;
  s.initialised = true;
  if (const char *v = std::getenv("FAKE_CUDART_DEVICE_COUNT"))
    s.device_count = std::atoi(v);
  if (const char *v = std::getenv("FAKE_CUDART_FAIL"))
    parse_faults(s, v);
  if (const char *v = std::getenv("FAKE_CUDART_TRACE"))
    s.trace = v[0] == '1';
  if (const char *v = std::getenv("FAKE_CUDART_CHECK_BALANCE"))
    s.check_balance = v[0] == '1';
  if (const char *v = std::getenv("FAKE_CUDART_ACCEPT_DMABUF"))
    s.accept_dmabuf = v[0] == '1';
  if (const char *v = std::getenv("FAKE_CUDART_ACCEPT_D3D11"))
    s.accept_d3d11 = v[0] == '1';
  if (const char *v = std::getenv("FAKE_CUDART_WAIT_TIMEOUT_MS"))
    s.wait_timeout_ms = std::atol(v);
}

// A driver context: the address of one device's primary-context counter,
// alive while retained.
bool live_context(const State &s, const void *context) {
  for (const int &retains : s.primary_retains)
    if (context == &retains)
      return retains > 0;
  return false;
}

// Counts and logs the call; returns the injected error, else the driver's
// context error, else 0 (run normally).
int enter(State &s, Fn fn, const Entry &e, int *close_fd = nullptr) {
  init_locked(s);
  ++s.calls[fn];
  ++s.symbol_calls[e.symbol];
  // Diagnostics and context switches stay out of the ordering log.
  if (fn != GetErrorString && fn != CtxPushCurrent && fn != CtxPopCurrent) {
    if (!s.log.empty())
      s.log += ' ';
    s.log += kNames[fn].logged;
  }
  if (s.trace)
    std::fprintf(stderr, "fake-cudart: %s\n", e.symbol);
  Fault &f = s.faults[fn];
  if (f.remaining != 0) {
    if (f.remaining > 0)
      --f.remaining;
    if (close_fd)
      *close_fd = f.close_fd;
    return f.error;
  }
  if (e.needs_context) {
    // The driver has no implicit context: a call on a thread where none is
    // current fails, as on the real driver.
    if (!s.driver_initialised)
      return kNotInitialized;
    if (t_context_stack.empty() || !live_context(s, t_context_stack.back()))
      return kInvalidContext;
  }
  return kSuccess;
}

void violation(State &s, std::string text) {
  ++s.violations;
  std::fprintf(stderr, "fake-cudart: VIOLATION: %s\n", text.c_str());
  s.violation_text.push_back(std::move(text));
}

// A device range is one inside a cudaMalloc allocation, a mapped buffer, or
// a mapped graphics resource.
bool is_device(const State &s, const void *ptr, std::size_t count) {
  auto inside = [&](const void *base, std::size_t size) {
    auto b = reinterpret_cast<std::uintptr_t>(base);
    auto p = reinterpret_cast<std::uintptr_t>(ptr);
    return p >= b && p - b <= size && count <= size - (p - b);
  };
  for (const auto &[base, size] : s.mallocs)
    if (inside(base, size))
      return true;
  for (const auto &[base, buf] : s.mapped)
    if (inside(base, buf.size))
      return true;
  for (const auto &[key, r] : s.resources)
    if (r->mapped && inside(r->ptr, r->size))
      return true;
  return false;
}

// "Device" memory: 256-byte aligned host memory, like cudaMalloc's
// guarantee. The Microsoft C runtime (MinGW) has no aligned_alloc.
void *aligned_host_alloc(std::size_t size) {
  std::size_t rounded = ((size ? size : 1) + 255) / 256 * 256;
#ifdef _WIN32
  return _aligned_malloc(rounded, 256);
#else
  return std::aligned_alloc(256, rounded);
#endif
}

void aligned_host_free(void *ptr) {
#ifdef _WIN32
  _aligned_free(ptr);
#else
  std::free(ptr);
#endif
}

bool all_zero(const unsigned int *words, std::size_t n) {
  return std::all_of(words, words + n, [](unsigned int w) { return w == 0; });
}

void free_mapped(MappedBuffer &buf) {
#ifndef _WIN32
  ::munmap(buf.map_base, buf.map_len);
#endif
  if (buf.owner->live_buffers > 0)
    --buf.owner->live_buffers;
}

std::size_t live_locked(const State &s, const char *kind) {
  std::size_t graphics_mapped = 0;
  for (const auto &[k, r] : s.resources)
    graphics_mapped += r->mapped ? 1 : 0;
  auto want = [&](const char *name) { return !kind || std::strcmp(kind, name) == 0; };
  std::size_t n = 0;
  if (want("external_memory"))
    n += s.ext_mems.size();
  if (want("mapped_buffer"))
    n += s.mapped.size();
  if (want("malloc"))
    n += s.mallocs.size();
  if (want("stream"))
    n += s.streams.size();
  if (want("graphics_resource"))
    n += s.resources.size();
  if (want("graphics_mapping"))
    n += graphics_mapped;
  if (want("external_semaphore"))
    n += s.semaphores.size();
  if (want("mipmapped_array"))
    n += s.mipmaps.size();
  // The driver's contexts only by name: the process runtime keeps its
  // primary context retained until exit, so "everything" leaves them out.
  if (kind && std::strcmp(kind, "primary_context") == 0)
    for (int retains : s.primary_retains)
      n += retains > 0 ? static_cast<std::size_t>(retains) : 0;
  if (kind && std::strcmp(kind, "current_context") == 0)
    n += s.pushed_contexts > 0 ? static_cast<std::size_t>(s.pushed_contexts) : 0;
  return n;
}

void release_all_locked(State &s) {
  for (auto &[ptr, buf] : s.mapped)
    free_mapped(buf);
  s.mapped.clear();
  for (auto &[k, mip] : s.mipmaps)
    delete mip;
  s.mipmaps.clear();
  for (auto &[k, ext] : s.ext_mems) {
#ifndef _WIN32
    if (ext->fd >= 0)
      ::close(ext->fd);
#endif
    delete ext;
  }
  s.ext_mems.clear();
  for (auto &[ptr, size] : s.mallocs)
    aligned_host_free(ptr);
  s.mallocs.clear();
  for (auto &[k, v] : s.streams)
    std::free(k);
  s.streams.clear();
  for (auto &[k, r] : s.resources)
    delete r;
  s.resources.clear();
  s.queues.clear();
  for (auto &[k, sem] : s.semaphores) {
#ifndef _WIN32
    if (sem->fd >= 0)
      ::close(sem->fd);
#endif
    delete sem;
  }
  s.semaphores.clear();
}

// The exit report: every create has its destroy, no ordering violation.
__attribute__((destructor)) void report_at_exit() {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialised)
    return;
  std::size_t live = live_locked(s, nullptr) + live_locked(s, "primary_context") + live_locked(s, "current_context");
  if (live == 0 && s.violations == 0)
    return;
  std::fprintf(stderr,
               "fake-cudart: at exit: %zu live object(s) (external memory %zu, mapped buffers %zu, allocations %zu, "
               "streams %zu, graphics resources %zu, graphics mappings %zu, external semaphores %zu, mipmapped arrays "
               "%zu, primary context retains %zu, contexts pushed and not popped %zu), %lu ordering violation(s)\n",
               live, live_locked(s, "external_memory"), live_locked(s, "mapped_buffer"), live_locked(s, "malloc"),
               live_locked(s, "stream"), live_locked(s, "graphics_resource"), live_locked(s, "graphics_mapping"),
               live_locked(s, "external_semaphore"), live_locked(s, "mipmapped_array"),
               live_locked(s, "primary_context"), live_locked(s, "current_context"), s.violations);
  if (s.check_balance) {
    std::fflush(stderr);
    ::_exit(97);
  }
}

// The arguments of a graphics map or unmap: registered resources, every one
// mapped (`mapped`) or not, and a live stream or none.
int check_resources(const State &s, int count, void **resources, void *stream, bool mapped) {
  if (count <= 0 || !resources)
    return kInvalidValue;
  if (stream && !s.streams.count(stream))
    return kInvalidResourceHandle;
  for (int i = 0; i < count; ++i) {
    auto it = s.resources.find(resources[i]);
    if (it == s.resources.end() || it->second->mapped != mapped)
      return kInvalidResourceHandle;
  }
  return kSuccess;
}

// A failed fd import whose fault says the driver closes the fd anyway
// (closefd), and maybe lets another file take the number (reusefd).
void close_on_failed_import(int fd, int close_fd) {
#ifndef _WIN32
  if (!close_fd)
    return;
  ::close(fd);
  if (close_fd == 2) {
    // Another thread's open() landing on the freed number.
    int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (other >= 0 && other != fd) {
      ::dup3(other, fd, O_CLOEXEC);
      ::close(other);
    }
  }
#else
  (void)fd;
  (void)close_fd;
#endif
}

// ---- Semaphore payloads and the streams' queues -----------------------------

// ---- The software D3D11 device, reached through its C hooks ---------------
// libtensormem is loaded in the test process; the fake finds the software
// device's hooks there at run time and needs nothing of it to build.
using VideoMemoryHook = int (*)(std::uintptr_t handle, void **data, std::uint32_t *row_pitch, std::uint32_t *rows);
using FenceValueHook = int (*)(std::uintptr_t handle, std::uint64_t *value);

template <typename Hook> Hook find_hook(const char *name) {
#ifdef _WIN32
  (void)name;
  return nullptr; // the Windows fake refuses D3D11 imports
#else
  return reinterpret_cast<Hook>(::dlsym(RTLD_DEFAULT, name));
#endif
}

bool software_texture(std::uintptr_t handle, unsigned char *&texels, std::size_t &row_pitch, std::size_t &rows) {
  static const VideoMemoryHook hook = find_hook<VideoMemoryHook>("tm_software_d3d11_video_memory");
  void *data = nullptr;
  std::uint32_t pitch = 0, count = 0;
  if (!hook || hook(handle, &data, &pitch, &count) != 0 || !data)
    return false;
  texels = static_cast<unsigned char *>(data);
  row_pitch = pitch;
  rows = count;
  return true;
}

bool software_fence(std::uintptr_t handle, std::uint64_t &value) {
  static const FenceValueHook hook = find_hook<FenceValueHook>("tm_software_d3d11_fence_value");
  return hook && hook(handle, &value) == 0;
}

std::uint64_t payload(const Semaphore &sem) {
  if (sem.d3d11_fence) {
    std::uint64_t value = 0;
    return software_fence(sem.d3d11_fence, value) ? value : 0;
  }
#ifndef _WIN32
  if (sem.fd >= 0) {
    unsigned char bytes[8] = {};
    if (::pread(sem.fd, bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
      return 0;
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
      v = v << 8 | bytes[i];
    return v;
  }
#endif
  return sem.held;
}

void set_payload(Semaphore &sem, std::uint64_t v) {
#ifndef _WIN32
  if (sem.fd >= 0) {
    unsigned char bytes[8];
    for (unsigned char &b : bytes) {
      b = static_cast<unsigned char>(v & 0xff);
      v >>= 8;
    }
    if (::pwrite(sem.fd, bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
      std::fprintf(stderr, "fake-cudart: writing a semaphore payload failed: %s\n", std::strerror(errno));
    return;
  }
#endif
  sem.held = v;
}

bool ready(const PendingOp &op) {
  if (!op.wait || !op.sem)
    return true;
  std::uint64_t now = payload(*op.sem);
  return op.sem->binary() ? now != 0 : now >= op.value;
}

void run(State &s, const PendingOp &op) {
  if (!op.sem) {
    op.copy();
    return;
  }
  Semaphore &sem = *op.sem;
  if (op.wait) {
    if (sem.binary())
      set_payload(sem, 0); // a binary wait consumes the signal
  } else if (sem.binary()) {
    set_payload(sem, 1);
  } else if (op.value > payload(sem)) {
    set_payload(sem, op.value);
  } else {
    // Queued behind a wait, it was above the value then; a signal on
    // another stream or the producer has passed it since.
    violation(s, "a queued semaphore signal to " + std::to_string(op.value) +
                     " ran when the semaphore was already at " + std::to_string(payload(sem)) +
                     " (a fence or timeline only moves up)");
  }
}

// Runs every queued operation whose turn has come, on every stream, until
// none moves (a signal on one stream may release a wait on another).
void progress_locked(State &s) {
  bool moved = true;
  bool any = false;
  while (moved) {
    moved = false;
    for (auto &[stream, queue] : s.queues)
      while (!queue.empty() && ready(queue.front())) {
        run(s, queue.front());
        queue.pop_front();
        moved = any = true;
      }
  }
  if (any)
    s.progressed.notify_all();
}

// Drops the queued operations that `drop` selects; returns how many.
template <typename Pred> std::size_t drop_pending(State &s, Pred &&drop) {
  std::size_t n = 0;
  for (auto &[stream, queue] : s.queues)
    for (auto it = queue.begin(); it != queue.end();)
      if (drop(stream, *it)) {
        it = queue.erase(it);
        ++n;
      } else {
        ++it;
      }
  return n;
}

std::size_t pending_locked(const State &s) {
  std::size_t n = 0;
  for (const auto &[stream, queue] : s.queues)
    n += queue.size();
  return n;
}

// Every operation: under the state lock, counted, and failing first if a
// fault is armed for it (or the driver's context is missing); only then its
// own body.
template <typename Body> int guarded(Fn fn, const Entry &e, Body &&body) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, fn, e))
    return rc;
  return body(s);
}

} // namespace

// ---- Operations -------------------------------------------------------------

namespace fakecuda {

int runtime_device_count(const Entry &e, int *count) {
  return guarded(GetDeviceCount, e, [&](State &s) {
    if (!count)
      return kInvalidValue;
    *count = s.device_count > 0 ? s.device_count : 0;
    return s.device_count > 0 ? kSuccess : kNoDevice;
  });
}

const char *error_string(const Entry &e, int error) {
  State &s = state();
  {
    std::lock_guard lock(s.mu);
    enter(s, GetErrorString, Entry{e.symbol, false}); // counted, never fails
  }
  switch (error) {
  case kSuccess: return "no error";
  case kInvalidValue: return "invalid argument";
  case kMemoryAllocation: return "out of memory";
  case kNotInitialized: return "initialization error";
  case kNoDevice: return "no CUDA-capable device is detected";
  case kInvalidDevice: return "invalid device ordinal";
  case kInvalidContext: return "invalid device context";
  case kInvalidGraphicsContext: return "invalid OpenGL or DirectX context";
  case kOperatingSystem: return "OS call failed or operation not supported on this OS";
  case kInvalidResourceHandle: return "invalid resource handle";
  case kLaunchTimeout: return "the launch timed out and was terminated (the fake's semaphore wait bound)";
  case kNotSupported: return "operation not supported";
  case kUnknown: return "unknown error (injected by the fake runtime)";
  default: return nullptr;
  }
}

// ---- The driver's initialisation, devices and contexts ----------------------

int driver_init(const Entry &e, unsigned flags) {
  return guarded(Init, e, [&](State &s) {
    if (flags != 0)
      return kInvalidValue;
    // A driver on a machine without a GPU fails here, not at the count.
    if (s.device_count <= 0)
      return kNoDevice;
    s.driver_initialised = true;
    return kSuccess;
  });
}

int driver_device_count(const Entry &e, int *count) {
  return guarded(GetDeviceCount, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (!count)
      return kInvalidValue;
    *count = s.device_count > 0 ? s.device_count : 0;
    return kSuccess;
  });
}

int driver_device_get(const Entry &e, int *device, int ordinal) {
  return guarded(DeviceGet, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (!device)
      return kInvalidValue;
    if (ordinal < 0 || ordinal >= s.device_count)
      return kInvalidDevice;
    *device = ordinal;
    return kSuccess;
  });
}

int primary_context_retain(const Entry &e, void **context, int device) {
  return guarded(PrimaryCtxRetain, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (!context)
      return kInvalidValue;
    if (device < 0 || device >= s.device_count || device >= 16)
      return kInvalidDevice;
    ++s.primary_retains[device];
    *context = &s.primary_retains[device];
    return kSuccess;
  });
}

int primary_context_release(const Entry &e, int device) {
  return guarded(PrimaryCtxRelease, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (device < 0 || device >= 16)
      return kInvalidDevice;
    int &retains = s.primary_retains[device];
    if (retains == 0) {
      violation(s, "cuDevicePrimaryCtxRelease of a primary context nobody retained");
      return kInvalidContext;
    }
    --retains;
    return kSuccess;
  });
}

int context_push(const Entry &e, void *context) {
  return guarded(CtxPushCurrent, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (!context)
      return kInvalidValue;
    if (!live_context(s, context))
      return kInvalidContext;
    t_context_stack.push_back(context);
    ++s.pushed_contexts;
    return kSuccess;
  });
}

int context_pop(const Entry &e, void **context) {
  return guarded(CtxPopCurrent, e, [&](State &s) {
    if (!s.driver_initialised)
      return kNotInitialized;
    if (t_context_stack.empty())
      return kInvalidContext;
    if (context)
      *context = t_context_stack.back();
    t_context_stack.pop_back();
    --s.pushed_contexts;
    return kSuccess;
  });
}

// ---- Both APIs ------------------------------------------------------------

int device_malloc(const Entry &e, void **ptr, std::size_t size) {
  return guarded(Malloc, e, [&](State &s) {
    if (!ptr)
      return kInvalidValue;
    void *p = aligned_host_alloc(size);
    if (!p)
      return kMemoryAllocation;
    std::memset(p, 0, size);
    s.mallocs[p] = size;
    *ptr = p;
    return kSuccess;
  });
}

int device_free(const Entry &e, void *ptr) {
  return guarded(Free, e, [&](State &s) {
    if (!ptr)
      return kSuccess;
    if (auto it = s.mallocs.find(ptr); it != s.mallocs.end()) {
      aligned_host_free(ptr);
      s.mallocs.erase(it);
      return kSuccess;
    }
    if (auto it = s.mapped.find(ptr); it != s.mapped.end()) {
      free_mapped(it->second);
      s.mapped.erase(it);
      return kSuccess;
    }
    return kInvalidValue;
  });
}

int memcpy(const Entry &e, void *dst, const void *src, std::size_t count, int kind) {
  return guarded(Memcpy, e, [&](State &s) {
    if (count == 0)
      return kSuccess;
    if (!dst || !src)
      return kInvalidValue;
    bool dst_dev = is_device(s, dst, count);
    bool src_dev = is_device(s, src, count);
    bool ok = false;
    switch (kind) {
    case 0: ok = !dst_dev && !src_dev; break;
    case 1: ok = dst_dev && !src_dev; break;
    case 2: ok = !dst_dev && src_dev; break;
    case 3: ok = dst_dev && src_dev; break;
    case 4: ok = true; break;
    default: return kInvalidValue;
    }
    if (!ok)
      return kInvalidValue;
    std::memmove(dst, src, count);
    return kSuccess;
  });
}

int stream_create(const Entry &e, void **stream) {
  return guarded(StreamCreate, e, [&](State &s) {
    if (!stream)
      return kInvalidValue;
    void *token = std::malloc(1);
    s.streams[token] = 1;
    *stream = token;
    return kSuccess;
  });
}

// The fake runs everything at once but semaphore waits (and what is queued
// behind them): synchronising a stream blocks until its queue is empty,
// which a signal through CUDA on another stream or a producer writing an
// fd semaphore's payload brings about. A GPU would wait forever for a value
// nobody signals; the fake gives up after FAKE_CUDART_WAIT_TIMEOUT_MS,
// drops the stream's queue, records a violation and answers 702.
int stream_synchronize(const Entry &e, void *stream) {
  State &s = state();
  std::unique_lock lock(s.mu);
  if (int rc = enter(s, StreamSynchronize, e))
    return rc;
  if (stream && !s.streams.count(stream))
    return kInvalidResourceHandle;
  if (!stream)
    ++s.default_stream_ops;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(s.wait_timeout_ms);
  for (;;) {
    progress_locked(s);
    auto it = s.queues.find(stream);
    if (it == s.queues.end() || it->second.empty())
      return kSuccess;
    if (std::chrono::steady_clock::now() >= deadline) {
      const PendingOp &front = it->second.front();
      violation(s, std::string(e.symbol) + ": a semaphore wait for value " + std::to_string(front.value) +
                       " (the semaphore is at " + std::to_string(payload(*front.sem)) + ") was not satisfied within " +
                       std::to_string(s.wait_timeout_ms) + " ms; a GPU would wait forever");
      it->second.clear();
      return kLaunchTimeout;
    }
    // An in-process signal wakes this at once; a producer writing the file
    // is seen at the next poll.
    s.progressed.wait_for(lock, std::chrono::milliseconds(1));
  }
}

int stream_destroy(const Entry &e, void *stream) {
  return guarded(StreamDestroy, e, [&](State &s) {
    auto it = s.streams.find(stream);
    if (it == s.streams.end())
      return kInvalidResourceHandle;
    progress_locked(s);
    // A GPU would run them later; the fake has no later.
    if (std::size_t n = drop_pending(s, [&](void *queue, const PendingOp &) { return queue == stream; }))
      violation(s, std::string(e.symbol) + " with " + std::to_string(n) +
                       " semaphore operation(s) still queued (synchronise the stream first)");
    s.queues.erase(stream);
    std::free(stream);
    s.streams.erase(it);
    return kSuccess;
  });
}

namespace {

// cudaExternalMemoryHandleTypeD3D11Resource: the NT handle of a shared
// texture. CUDA on Linux refuses the type (the default); with
// FAKE_CUDART_ACCEPT_D3D11=1 a software device's texture is taken, its
// bytes reached through the device's hook. CUDA requires the Dedicated flag
// for it.
int import_d3d11_locked(State &s, void **ext_mem, const MemHandleDesc &desc) {
  s.last_import_size = desc.size;
  if (!ext_mem || desc.size == 0 || desc.flags != 1 || !all_zero(desc.reserved, 16) || desc.handle.win32.name)
    return kInvalidValue;
  if (!s.accept_d3d11)
    return kNotSupported;
  unsigned char *texels = nullptr;
  std::size_t row_pitch = 0, rows = 0;
  if (!software_texture(reinterpret_cast<std::uintptr_t>(desc.handle.win32.handle), texels, row_pitch, rows))
    return kInvalidValue;
  // The import takes any size; the array mapping checks it.
  auto *ext = new ExtMem{-1, static_cast<std::size_t>(desc.size)};
  ext->texels = texels;
  ext->row_pitch = row_pitch;
  ext->rows = rows;
  s.ext_mems[ext] = ext;
  *ext_mem = ext;
  return kSuccess;
}

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

} // namespace

int import_external_memory(const Entry &e, void **ext_mem, const void *raw_desc) {
  const auto *desc = static_cast<const MemHandleDesc *>(raw_desc);
  State &s = state();
  std::lock_guard lock(s.mu);
  int close_fd = 0;
  if (desc && desc->type == 6) {
    if (int rc = enter(s, ImportExternalMemory, e))
      return rc;
    return import_d3d11_locked(s, ext_mem, *desc);
  }
#ifdef _WIN32
  // An OpaqueFd means nothing to the Windows runtime (it imports Win32
  // handles there), so on Windows every fd import is refused.
  (void)ext_mem;
  (void)desc;
  if (int rc = enter(s, ImportExternalMemory, e, &close_fd))
    return rc;
  return kNotSupported;
#else
  if (int rc = enter(s, ImportExternalMemory, e, &close_fd)) {
    if (desc)
      close_on_failed_import(desc->handle.fd, close_fd);
    return rc;
  }
  if (!ext_mem || !desc)
    return kInvalidValue;
  // Only OpaqueFd, a zero-filled tail, and no flags but Dedicated.
  if (desc->type != 1 || desc->size == 0 || (desc->flags & ~1u) != 0 || !all_zero(desc->reserved, 16))
    return kInvalidValue;
  struct stat st {};
  if (::fstat(desc->handle.fd, &st) != 0)
    return kInvalidValue;
  if (static_cast<unsigned long long>(st.st_size) < desc->size)
    return kInvalidValue;
  // A desktop driver takes as OpaqueFd only memory its own CUDA, Vulkan or
  // OpenGL exported, and the fake exports none: every fd here is a DMA-BUF
  // or memfd. The runtime documents that fd as "a valid file descriptor
  // referencing a memory object", so another kind of fd is a parameter out
  // of range, cudaErrorInvalidValue (cudaErrorOperatingSystem means an OS
  // call failed). The fd stays the caller's: ownership moves on success only
  // (drivers seen closing it anyway, HAZ-43, are FAKE_CUDART_FAIL's closefd).
  if (!s.accept_dmabuf)
    return kInvalidValue;
  auto *ext = new ExtMem{desc->handle.fd, static_cast<std::size_t>(desc->size)};
  s.ext_mems[ext] = ext; // the fd is ours now; closed by cudaDestroyExternalMemory
  s.last_import_fd = desc->handle.fd;
  *ext_mem = ext;
  return kSuccess;
#endif
}

int external_memory_mapped_buffer(const Entry &e, void **dev_ptr, void *ext_mem, const void *raw_desc) {
  const auto *desc = static_cast<const BufferDesc *>(raw_desc);
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, ExternalMemoryGetMappedBuffer, e))
    return rc;
  if (!dev_ptr || !desc)
    return kInvalidValue;
  auto it = s.ext_mems.find(ext_mem);
  if (it == s.ext_mems.end())
    return kInvalidResourceHandle;
  ExtMem *ext = it->second;
  if (ext->texels)
    return kInvalidValue; // a texture maps as an array, not a buffer
  if (desc->size == 0 || desc->flags != 0 || !all_zero(desc->reserved, 16) || desc->offset > ext->size ||
      desc->size > ext->size - desc->offset)
    return kInvalidValue;
#ifdef _WIN32
  return kNotSupported; // unreachable: no import ever succeeds on Windows
#else
  // Every mapping is its own shared mmap of the fd: a distinct address that
  // sees exactly the bytes the CPU map of the same buffer sees.
  long page = ::sysconf(_SC_PAGESIZE);
  std::size_t start = desc->offset / page * page;
  std::size_t len = desc->offset + desc->size - start;
  void *base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, ext->fd, static_cast<off_t>(start));
  if (base == MAP_FAILED)
    return kOperatingSystem;
  void *ptr = static_cast<char *>(base) + (desc->offset - start);
  s.mapped[ptr] = MappedBuffer{ext, base, len, static_cast<std::size_t>(desc->size)};
  ++ext->live_buffers;
  *dev_ptr = ptr;
  return kSuccess;
#endif
}

int destroy_external_memory(const Entry &e, void *ext_mem) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, DestroyExternalMemory, e))
    return rc;
  auto it = s.ext_mems.find(ext_mem);
  if (it == s.ext_mems.end())
    return kInvalidResourceHandle;
  ExtMem *ext = it->second;
  if (ext->live_arrays > 0) {
    violation(s, "cudaDestroyExternalMemory with " + std::to_string(ext->live_arrays) +
                     " mipmapped array(s) not freed first");
    for (auto m = s.mipmaps.begin(); m != s.mipmaps.end();) {
      if (m->second->owner == ext) {
        delete m->second;
        m = s.mipmaps.erase(m);
      } else {
        ++m;
      }
    }
  }
  if (ext->live_buffers > 0) {
    violation(s, "cudaDestroyExternalMemory with " + std::to_string(ext->live_buffers) +
                     " mapped buffer(s) not freed with cudaFree first");
    for (auto m = s.mapped.begin(); m != s.mapped.end();) {
      if (m->second.owner == ext) {
        free_mapped(m->second);
        m = s.mapped.erase(m);
      } else {
        ++m;
      }
    }
  }
#ifndef _WIN32
  if (ext->fd >= 0)
    ::close(ext->fd);
#endif
  delete ext;
  s.ext_mems.erase(it);
  return kSuccess;
}

int import_external_semaphore(const Entry &e, void **ext_sem, const void *raw_desc) {
  const auto *desc = static_cast<const SemHandleDesc *>(raw_desc);
  State &s = state();
  std::lock_guard lock(s.mu);
  int close_fd = 0;
  const bool fd_type = desc && (desc->type == 1 || desc->type == 9);
  if (int rc = enter(s, ImportExternalSemaphore, e, &close_fd)) {
    if (fd_type)
      close_on_failed_import(desc->handle.fd, close_fd);
    return rc;
  }
  if (!ext_sem || !desc || desc->flags != 0 || !all_zero(desc->reserved, 16))
    return kInvalidValue;
  auto *sem = new Semaphore{desc->type};
  switch (desc->type) {
  case 1:   // OpaqueFd
  case 9: { // TimelineSemaphoreFd
#ifdef _WIN32
    delete sem;
    return kNotSupported; // Windows drivers import Win32 handles
#else
    // The fake's semaphore is a file holding the payload: anything shorter
    // than 8 bytes is not one. The fd stays the caller's unless this
    // succeeds; then it is ours, closed by cudaDestroyExternalSemaphore.
    struct stat st {};
    if (::fstat(desc->handle.fd, &st) != 0 || st.st_size < 8) {
      delete sem;
      return kInvalidValue;
    }
    sem->fd = desc->handle.fd;
    break;
#endif
  }
  case 5: { // D3D11Fence
    // A software device's shared fence: CUDA on Linux refuses it (the
    // default); accepted, its completed value is the payload. Any other
    // non-null handle is a stand-in as for the other Win32 types.
    std::uint64_t value = 0;
    const auto handle = reinterpret_cast<std::uintptr_t>(desc->handle.win32.handle);
    if (handle && software_fence(handle, value)) {
      if (!s.accept_d3d11) {
        delete sem;
        return kNotSupported;
      }
      sem->d3d11_fence = handle;
      break;
    }
    [[fallthrough]];
  }
  case 2:  // OpaqueWin32
  case 3:  // OpaqueWin32Kmt
  case 4:  // D3D12Fence
  case 10: // TimelineSemaphoreWin32
    // Any non-null handle stands for a shared fence or semaphore, on every
    // OS (a real Linux driver refuses these). CUDA takes its own reference:
    // the handle stays the caller's, nothing here closes it.
    if (!desc->handle.win32.handle) {
      delete sem;
      return kInvalidValue;
    }
    break;
  default: // NvSciSync and keyed mutexes: not modelled
    delete sem;
    return kNotSupported;
  }
  s.semaphores[sem] = sem;
  *ext_sem = sem;
  return kSuccess;
}

namespace {

// Padding in a parameter block, which a caller need not zero: after the
// wait's keyed-mutex timeout, after v1's flags, and the v2 tail's end.
bool is_padding(std::size_t byte, std::size_t stride, bool wait) {
  return (wait && byte >= 28 && byte < 32) || (stride == kSemParamsV1Size && byte >= 76) || byte >= 140;
}

// Checks and queues `count` signals or waits; `params` is an array of v1 or
// v2 blocks (`stride` apart), whose unused words must be zero.
int queue_semaphore_ops(State &s, void *const *sems, const unsigned char *params, unsigned count, void *stream,
                        std::size_t stride, bool wait) {
  if (!sems || !params || count == 0)
    return kInvalidValue;
  if (stream && !s.streams.count(stream))
    return kInvalidResourceHandle;
  if (!stream)
    ++s.default_stream_ops;
  std::vector<PendingOp> ops;
  for (unsigned i = 0; i < count; ++i) {
    auto it = s.semaphores.find(sems[i]);
    if (it == s.semaphores.end())
      return kInvalidResourceHandle;
    const unsigned char *block = params + i * stride;
    // value, then the NvSciSync and keyed-mutex words and the reserved
    // ones, which must all be zero here, the v2 tail included.
    std::uint64_t value = 0;
    std::memcpy(&value, block, sizeof value);
    for (std::size_t b = 8; b < stride; ++b)
      if (block[b] != 0 && !is_padding(b, stride, wait))
        return kInvalidValue;
    Semaphore *sem = it->second;
    if (!wait && !sem->binary()) {
      // As a validation layer would: a fence or timeline only moves up,
      // past its value now and past every signal queued before this one on
      // the same stream (which runs first). A signal queued on another
      // stream may run either side of it: checked when it runs.
      std::uint64_t floor = payload(*sem);
      for (const PendingOp &op : s.queues[stream])
        if (!op.wait && op.sem == sem)
          floor = std::max(floor, op.value);
      for (const PendingOp &op : ops)
        if (!op.wait && op.sem == sem)
          floor = std::max(floor, op.value);
      if (value <= floor)
        return kInvalidValue;
    }
    ops.push_back(PendingOp{sem, wait, value, {}});
  }
  std::deque<PendingOp> &queue = s.queues[stream];
  queue.insert(queue.end(), ops.begin(), ops.end());
  progress_locked(s);
  return kSuccess;
}

} // namespace

int signal_external_semaphores(const Entry &e, void *const *sems, const void *params, unsigned count, void *stream,
                               bool v1_layout) {
  return guarded(SignalExternalSemaphores, e, [&](State &s) {
    return queue_semaphore_ops(s, sems, static_cast<const unsigned char *>(params), count, stream,
                               v1_layout ? kSemParamsV1Size : sizeof(SemSignalParams), false);
  });
}

int wait_external_semaphores(const Entry &e, void *const *sems, const void *params, unsigned count, void *stream,
                             bool v1_layout) {
  return guarded(WaitExternalSemaphores, e, [&](State &s) {
    return queue_semaphore_ops(s, sems, static_cast<const unsigned char *>(params), count, stream,
                               v1_layout ? kSemParamsV1Size : sizeof(SemWaitParams), true);
  });
}

int destroy_external_semaphore(const Entry &e, void *ext_sem) {
  return guarded(DestroyExternalSemaphore, e, [&](State &s) {
    auto it = s.semaphores.find(ext_sem);
    if (it == s.semaphores.end())
      return kInvalidResourceHandle;
    Semaphore *sem = it->second;
    progress_locked(s);
    // CUDA: every signal and wait on it must have completed first.
    if (std::size_t n = drop_pending(s, [&](void *, const PendingOp &op) { return op.sem == sem; }))
      violation(s, std::string(e.symbol) + " with " + std::to_string(n) +
                       " wait(s) or signal(s) on it not completed (synchronise their streams first)");
#ifndef _WIN32
    if (sem->fd >= 0)
      ::close(sem->fd);
#endif
    delete sem;
    s.semaphores.erase(it);
    return kSuccess;
  });
}

// ---- Direct3D 11 textures ---------------------------------------------------

int device_luid(const Entry &e, int ordinal, unsigned char *luid, unsigned *node_mask) {
  return guarded(GetDeviceProperties, e, [&](State &s) {
    if (!luid || !node_mask)
      return kInvalidValue;
    if (ordinal < 0 || ordinal >= s.device_count || ordinal >= 16)
      return kInvalidDevice;
    const auto high = static_cast<std::uint32_t>(s.luid_high[ordinal]);
    for (int i = 0; i < 4; ++i) {
      luid[i] = static_cast<unsigned char>(s.luid_low[ordinal] >> (8 * i));
      luid[4 + i] = static_cast<unsigned char>(high >> (8 * i));
    }
    *node_mask = 1;
    return kSuccess;
  });
}

int set_device(const Entry &e, int ordinal) {
  return guarded(SetDevice, e,
                 [&](State &s) { return ordinal >= 0 && ordinal < s.device_count ? kSuccess : kInvalidDevice; });
}

int external_memory_mipmapped_array(const Entry &e, void **mipmap, void *ext_mem, const ArrayRequest &r) {
  return guarded(ExternalMemoryGetMappedMipmappedArray, e, [&](State &s) {
    if (!mipmap)
      return kInvalidValue;
    auto it = s.ext_mems.find(ext_mem);
    if (it == s.ext_mems.end())
      return kInvalidResourceHandle;
    ExtMem *ext = it->second;
    if (!ext->texels || r.offset != 0 || r.levels != 1 || r.flags != 0 || !r.tail_zero || r.depth != 0 ||
        r.width == 0 || r.height == 0)
      return kInvalidValue;
    // Every used channel as wide as the first: 8-bit unsigned, 16- or
    // 32-bit float.
    int channels = 0;
    while (channels < 4 && r.bits[channels] == r.bits[0] && r.bits[0] != 0)
      ++channels;
    for (int i = channels; i < 4; ++i)
      if (r.bits[i] != 0)
        return kInvalidValue;
    const bool known = (r.kind == 1 && r.bits[0] == 8) || (r.kind == 2 && (r.bits[0] == 16 || r.bits[0] == 32));
    if (channels == 0 || !known)
      return kInvalidValue;
    const std::size_t texel = static_cast<std::size_t>(r.bits[0] / 8 * channels);
    // The description must match the resource: its rows are exactly the
    // texture's rows (a wrong texel size shows here), its height the
    // texture's.
    if (r.width > ext->row_pitch / texel || r.width * texel != ext->row_pitch || r.height != ext->rows)
      return kInvalidValue;
    // The texture's real footprint, the fake's tiling: rows padded to 512
    // bytes, row count to 16. A declaration below it is refused here, not
    // at the import (what an RTX 3070 does, spec CUDA-LADDER-04).
    const std::size_t footprint = round_up(ext->row_pitch, 512) * round_up(ext->rows, 16);
    if (ext->size < footprint)
      return kInvalidValue;
    auto *mip = new MipArray{ext, r.width * texel, r.height};
    s.mipmaps[mip] = mip;
    ++ext->live_arrays;
    *mipmap = mip;
    return kSuccess;
  });
}

MipArray *find_level(State &s, const void *array) {
  for (auto &[key, mip] : s.mipmaps)
    if (&mip->level0 == array)
      return mip;
  return nullptr;
}

int mipmapped_array_level(const Entry &e, void **array, const void *mipmap, unsigned level) {
  return guarded(GetMipmappedArrayLevel, e, [&](State &s) {
    auto it = s.mipmaps.find(const_cast<void *>(mipmap));
    if (it == s.mipmaps.end())
      return kInvalidResourceHandle;
    if (!array || level != 0)
      return kInvalidValue;
    *array = &it->second->level0;
    return kSuccess;
  });
}

int free_mipmapped_array(const Entry &e, void *mipmap) {
  return guarded(FreeMipmappedArray, e, [&](State &s) {
    auto it = s.mipmaps.find(mipmap);
    if (it == s.mipmaps.end())
      return kInvalidResourceHandle;
    MipArray *mip = it->second;
    if (mip->owner->live_arrays > 0)
      --mip->owner->live_arrays;
    delete mip;
    s.mipmaps.erase(it);
    return kSuccess;
  });
}

int memcpy_2d(const Entry &e, const Copy2D &c) {
  return guarded(c.to_array ? Memcpy2DToArrayAsync : Memcpy2DFromArrayAsync, e, [&](State &s) {
    if (c.stream && !s.streams.count(c.stream))
      return kInvalidResourceHandle;
    if (!c.stream)
      ++s.default_stream_ops;
    MipArray *mip = find_level(s, c.array);
    if (!mip)
      return kInvalidResourceHandle;
    // As the real calls: a linear pitch below the copied width (from the
    // linear side's x offset), or above
    // the device's maximum pitch (cudaDevAttrMaxPitch, 2^31 - 1), is
    // cudaErrorInvalidPitchValue (12) in the runtime, CUDA_ERROR_INVALID_VALUE
    // in the driver.
    if (c.linear_x_bytes > c.pitch || c.width_bytes > c.pitch - c.linear_x_bytes || c.pitch > kMaxPitch)
      return e.needs_context ? kInvalidValue : kInvalidPitchValue;
    if (c.kind != kDeviceToDevice || c.height == 0 || c.width_bytes == 0 || c.array_x_bytes > mip->width_bytes ||
        c.width_bytes > mip->width_bytes - c.array_x_bytes || c.array_y > mip->height ||
        c.height > mip->height - c.array_y)
      return kInvalidValue;
    // The linear side is device memory covering every row.
    auto *linear = static_cast<unsigned char *>(c.linear) + c.linear_y * c.pitch + c.linear_x_bytes;
    if (!is_device(s, linear, (c.height - 1) * c.pitch + c.width_bytes))
      return kInvalidValue;
    ExtMem *ext = mip->owner;
    unsigned char *texels = ext->texels + c.array_y * ext->row_pitch + c.array_x_bytes;
    const std::size_t texel_pitch = ext->row_pitch;
    const Copy2D copy = c;
    std::function<void()> run_copy = [=] {
      for (std::size_t row = 0; row < copy.height; ++row) {
        unsigned char *t = texels + row * texel_pitch;
        unsigned char *l = linear + row * copy.pitch;
        if (copy.to_array)
          std::memcpy(t, l, copy.width_bytes);
        else
          std::memcpy(l, t, copy.width_bytes);
      }
    };
    // Stream order: behind a semaphore wait still queued on the stream.
    std::deque<PendingOp> &queue = s.queues[c.stream];
    if (queue.empty())
      run_copy();
    else
      queue.push_back(PendingOp{nullptr, false, 0, std::move(run_copy)});
    return kSuccess;
  });
}

// GL interop: the buffer is mapped with glMapBufferRange on the calling
// thread, which must have the buffer's context current (the GL worker).
int gl_register_buffer(const Entry &e, void **resource, unsigned buffer, unsigned flags) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, GraphicsGLRegisterBuffer, e))
    return rc;
  if (!resource || buffer == 0 || flags > 2)
    return kInvalidValue;
#if defined(FAKE_CUDART_HAVE_GL)
  if (eglGetCurrentContext() == EGL_NO_CONTEXT)
    return kInvalidGraphicsContext;
  if (!glIsBuffer(buffer))
    return kInvalidValue;
  auto *r = new Resource{buffer};
  s.resources[r] = r;
  *resource = r;
  return kSuccess;
#else
  return kNotSupported;
#endif
}

int gl_map_resources(const Entry &e, int count, void **resources, void *stream) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, GraphicsMapResources, e))
    return rc;
  if (int rc = check_resources(s, count, resources, stream, false))
    return rc;
#if defined(FAKE_CUDART_HAVE_GL)
  if (eglGetCurrentContext() == EGL_NO_CONTEXT)
    return kInvalidGraphicsContext;
  for (int i = 0; i < count; ++i) {
    Resource *r = s.resources[resources[i]];
    GLint previous = 0;
    glGetIntegerv(GL_COPY_WRITE_BUFFER_BINDING, &previous);
    glBindBuffer(GL_COPY_WRITE_BUFFER, r->buffer);
    GLint64 size = 0;
    glGetBufferParameteri64v(GL_COPY_WRITE_BUFFER, GL_BUFFER_SIZE, &size);
    // A buffer of immutable storage that its owner keeps mapped for life
    // (persistent): real CUDA maps such a buffer without GL; the fake,
    // whose "device memory" is the GL mapping, borrows the owner's.
    GLint gl_mapped = GL_FALSE;
    glGetBufferParameteriv(GL_COPY_WRITE_BUFFER, GL_BUFFER_MAPPED, &gl_mapped);
    void *ptr = nullptr;
    r->borrowed = gl_mapped == GL_TRUE;
    if (r->borrowed)
      glGetBufferPointerv(GL_COPY_WRITE_BUFFER, GL_BUFFER_MAP_POINTER, &ptr);
    else if (size > 0)
      ptr = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, size, GL_MAP_READ_BIT | GL_MAP_WRITE_BIT);
    glBindBuffer(GL_COPY_WRITE_BUFFER, static_cast<GLuint>(previous));
    if (!ptr)
      return kUnknown;
    r->mapped = true;
    r->ptr = ptr;
    r->size = static_cast<std::size_t>(size);
  }
  return kSuccess;
#else
  return kNotSupported;
#endif
}

int gl_mapped_pointer(const Entry &e, void **dev_ptr, std::size_t *size, void *resource) {
  return guarded(GraphicsResourceGetMappedPointer, e, [&](State &s) {
    auto it = s.resources.find(resource);
    if (!dev_ptr || !size || it == s.resources.end())
      return kInvalidValue;
    if (!it->second->mapped)
      return kInvalidResourceHandle;
    *dev_ptr = it->second->ptr;
    *size = it->second->size;
    return kSuccess;
  });
}

int gl_unmap_resources(const Entry &e, int count, void **resources, void *stream) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (int rc = enter(s, GraphicsUnmapResources, e))
    return rc;
  if (int rc = check_resources(s, count, resources, stream, true))
    return rc;
#if defined(FAKE_CUDART_HAVE_GL)
  for (int i = 0; i < count; ++i) {
    Resource *r = s.resources[resources[i]];
    GLint previous = 0;
    glGetIntegerv(GL_COPY_WRITE_BUFFER_BINDING, &previous);
    glBindBuffer(GL_COPY_WRITE_BUFFER, r->buffer);
    if (!r->borrowed)
      glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    glBindBuffer(GL_COPY_WRITE_BUFFER, static_cast<GLuint>(previous));
    r->mapped = false;
    r->borrowed = false;
    r->ptr = nullptr;
  }
#endif
  return kSuccess;
}

int gl_unregister_resource(const Entry &e, void *resource) {
  return guarded(GraphicsUnregisterResource, e, [&](State &s) {
    auto it = s.resources.find(resource);
    if (it == s.resources.end())
      return kInvalidResourceHandle;
    if (it->second->mapped)
      violation(s, "cudaGraphicsUnregisterResource of a mapped resource");
    delete it->second;
    s.resources.erase(it);
    return kSuccess;
  });
}

} // namespace fakecuda

// ---- Control surface ------------------------------------------------------

FAKE_EXPORT int fake_cudart_set_fault(const char *fn, int error, int times, int close_fd) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  int idx = fn ? fn_index(fn) : -1;
  if (idx < 0)
    return -1;
  s.faults[idx] = Fault{error, times, close_fd};
  return 0;
}

FAKE_EXPORT void fake_cudart_clear_faults(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  for (Fault &f : s.faults)
    f = Fault{};
}

FAKE_EXPORT void fake_cudart_reset_counters(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  std::fill(std::begin(s.calls), std::end(s.calls), 0ul);
  s.symbol_calls.clear();
  s.log.clear();
  s.violations = 0;
  s.default_stream_ops = 0;
  s.violation_text.clear();
}

FAKE_EXPORT unsigned long fake_cudart_calls(const char *fn) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (!fn) {
    unsigned long total = 0;
    for (unsigned long c : s.calls)
      total += c;
    return total;
  }
  int idx = fn_index(fn);
  return idx < 0 ? 0 : s.calls[idx];
}

FAKE_EXPORT unsigned long fake_cudart_symbol_calls(const char *symbol) {
  State &s = state();
  std::lock_guard lock(s.mu);
  auto it = symbol ? s.symbol_calls.find(symbol) : s.symbol_calls.end();
  return it == s.symbol_calls.end() ? 0 : it->second;
}

FAKE_EXPORT void *fake_cudart_current_context(void) {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

FAKE_EXPORT size_t fake_cudart_live(const char *kind) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return live_locked(s, kind);
}

FAKE_EXPORT size_t fake_cudart_call_log(char *buf, size_t capacity) {
  State &s = state();
  std::lock_guard lock(s.mu);
  if (buf && capacity > 0) {
    std::size_t n = std::min(capacity - 1, s.log.size());
    std::memcpy(buf, s.log.data(), n);
    buf[n] = '\0';
  }
  return s.log.size();
}

FAKE_EXPORT unsigned long fake_cudart_violations(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return s.violations;
}

FAKE_EXPORT void fake_cudart_set_accept_dmabuf(int accept) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  s.accept_dmabuf = accept != 0;
}

FAKE_EXPORT int fake_cudart_accepts_dmabuf(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  return s.accept_dmabuf ? 1 : 0;
}

FAKE_EXPORT void fake_cudart_set_accept_d3d11(int accept) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  s.accept_d3d11 = accept != 0;
}

FAKE_EXPORT int fake_cudart_set_device_luid(int device, unsigned int low, int high) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  if (device < 0 || device >= 16)
    return -1;
  s.luid_low[device] = low;
  s.luid_high[device] = high;
  return 0;
}

FAKE_EXPORT void fake_cudart_set_device_count(int count) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  s.device_count = count;
}

FAKE_EXPORT int fake_cudart_last_import_fd(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return s.last_import_fd;
}

FAKE_EXPORT unsigned long long fake_cudart_last_import_size(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return s.last_import_size;
}

FAKE_EXPORT void fake_cudart_set_wait_timeout_ms(long ms) {
  State &s = state();
  std::lock_guard lock(s.mu);
  init_locked(s);
  s.wait_timeout_ms = ms;
}

FAKE_EXPORT size_t fake_cudart_pending_semaphore_ops(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return pending_locked(s);
}

FAKE_EXPORT unsigned long fake_cudart_default_stream_ops(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  return s.default_stream_ops;
}

FAKE_EXPORT void fake_cudart_release_all(void) {
  State &s = state();
  std::lock_guard lock(s.mu);
  release_all_locked(s);
}
