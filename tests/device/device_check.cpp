// SPDX-License-Identifier: Apache-2.0
// Real-GPU checks for the CUDA interop (run by tests/device/run.sh on a
// machine with an NVIDIA GPU and driver; never built by the main meson
// build). Each check prints one line "PASS name: ..." or "FAIL name: ...";
// the exit status is 0 when all passed, 1 otherwise.
//
//   loader   the real CUDA is found (TENSORMEM_CUDART unset) and reports at
//            least one device, through the API TENSORMEM_CUDA_API asks for
//            (run.sh runs this program once with "runtime", once with
//            "driver"): libcudart, or libcuda.so.1 with its primary context
//   pbo      a PBO made on the GL worker (NVIDIA EGL, device platform) is
//            registered with CUDA; bytes written by the CPU are read back
//            through the CUDA map with cudaMemcpy and their FNV-1a checksum
//            matches the CPU's; bytes written through CUDA are seen by a
//            CPU map afterwards
//   memfd    importing a memfd as CUDA external memory fails cleanly (the
//            driver takes only its own OpaqueFd exports): an Error, the
//            caller's fd still open, cuda_map() none, map() works
//   latency  CUDA map+unmap of a 1080p RGBA PBO (a GL worker round trip)
//   semaphore  the library exports all four external-semaphore calls, and a
//            memfd offered as an OpaqueFd semaphore (not one a driver
//            exported) is refused cleanly or, if taken, destroyed cleanly;
//            the caller's fd stays open either way
#include <tensormem/cuda_handle.hpp>
#include <tensormem/cuda_import.hpp>
#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/internal/cuda_runtime.hpp>
#include <tensormem/internal/cuda_semaphore.hpp>
#if !defined(TM_DEVICE_NO_GL)
#include <tensormem/gl_cuda.hpp>
#include <tensormem/gl_worker.hpp>
#endif
#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace tensormem;

namespace {

int g_failures = 0;

void report(bool ok, const char *name, const std::string &detail) {
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name, detail.c_str());
  std::fflush(stdout);
  if (!ok)
    ++g_failures;
}

[[maybe_unused]] std::uint64_t fnv1a(const std::byte *p, std::size_t n) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n; ++i)
    h = (h ^ static_cast<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

#if !defined(TM_DEVICE_NO_GL)
void check_pbo(const std::shared_ptr<const CudaRuntime> &rt, const std::shared_ptr<GlWorker> &worker) {
  constexpr std::size_t kSize = 1 << 20;
  Result<Tensor> t = worker->create_pbo(kSize, {kSize}, DType::U8);
  if (!t)
    return report(false, "pbo", "create_pbo: " + t.error().message());
  auto *storage = dynamic_cast<PboStorage *>(t->storage().get());
  {
    Result<HostView> v = t->map(CpuAccess::Write);
    if (!v)
      return report(false, "pbo", "CPU map: " + v.error().message());
    auto bytes = v->mutable_bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  }
  std::uint64_t cpu_sum = 0;
  {
    Result<HostView> v = t->map(CpuAccess::Read);
    if (!v)
      return report(false, "pbo", "CPU read map: " + v.error().message());
    cpu_sum = fnv1a(v->bytes().data(), v->bytes().size());
  }
  auto ops = make_gl_worker_cuda_gl_ops(worker, rt);
  Result<std::shared_ptr<CudaHandle>> h = CudaHandle::register_gl_buffer(ops, storage->buffer_id(), kSize);
  if (!h)
    return report(false, "pbo", "cudaGraphicsGLRegisterBuffer: " + h.error().message());
  if (!attach_cuda(*t->storage(), *h))
    return report(false, "pbo", "attach_cuda failed");
  std::vector<std::byte> host(kSize);
  {
    std::optional<CudaMap> m = cuda_map(*t);
    if (!m)
      return report(false, "pbo", "cuda_map returned none");
    Result<void> c = rt->memcpy_device_to_host(host.data(), m->device_ptr(), kSize);
    if (!c)
      return report(false, "pbo", "cudaMemcpy D2H: " + c.error().message());
  } // GL unmap before any CPU map (ordering rule)
  const std::uint64_t gpu_sum = fnv1a(host.data(), host.size());
  char buf[160];
  std::snprintf(buf, sizeof buf, "GPU-side %016llx, CPU-side %016llx", static_cast<unsigned long long>(gpu_sum),
                static_cast<unsigned long long>(cpu_sum));
  if (gpu_sum != cpu_sum)
    return report(false, "pbo", buf);
  // And back: CUDA writes, the CPU reads.
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<std::byte>((i * 17 + 3) & 0xff);
  {
    std::optional<CudaMap> m = cuda_map_mut(*t);
    if (!m)
      return report(false, "pbo", "cuda_map_mut returned none");
    Result<void> c = rt->memcpy_host_to_device(m->device_ptr(), host.data(), kSize);
    if (!c)
      return report(false, "pbo", "cudaMemcpy H2D: " + c.error().message());
  }
  Result<HostView> v = t->map(CpuAccess::Read);
  if (!v)
    return report(false, "pbo", "CPU map after CUDA write: " + v.error().message());
  if (std::memcmp(v->bytes().data(), host.data(), kSize) != 0)
    return report(false, "pbo", "bytes written through CUDA differ in the CPU map");
  report(true, "pbo", std::string(buf) + "; CUDA→CPU write round trip equal");
}

void check_latency(const std::shared_ptr<const CudaRuntime> &rt, const std::shared_ptr<GlWorker> &worker) {
  constexpr std::size_t kSize = 1920 * 1080 * 4;
  Result<Tensor> t = worker->create_pbo(kSize, {kSize}, DType::U8);
  if (!t)
    return report(false, "latency", "create_pbo: " + t.error().message());
  auto *storage = dynamic_cast<PboStorage *>(t->storage().get());
  Result<std::shared_ptr<CudaHandle>> h =
      CudaHandle::register_gl_buffer(make_gl_worker_cuda_gl_ops(worker, rt), storage->buffer_id(), kSize);
  if (!h)
    return report(false, "latency", "register: " + h.error().message());
  std::vector<double> us;
  for (int i = 0; i < 520; ++i) {
    const auto start = std::chrono::steady_clock::now();
    Result<CudaMap> m = (*h)->map();
    if (!m)
      return report(false, "latency", "map: " + m.error().message());
    m->release();
    if (i >= 20)
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  char buf[160];
  std::snprintf(buf, sizeof buf, "1080p RGBA PBO CUDA map+unmap: median %.1f us, p99 %.1f us (%zu runs)",
                us[us.size() / 2], us[us.size() * 99 / 100], us.size());
  report(true, "latency", buf);
}

#endif

void check_memfd() {
  DmaBufOptions opts;
  opts.source = DmaBufSource::Memfd;
  Result<std::shared_ptr<DmaBufStorage>> s = DmaBufStorage::allocate(4096, opts);
  if (!s)
    return report(false, "memfd", "memfd allocation: " + s.error().message());
  const int fd = (*s)->fd();
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(**s);
  if (h)
    return report(false, "memfd", "the driver accepted a memfd as OpaqueFd external memory (unexpected)");
  const bool fd_open = ::fcntl(fd, F_GETFD) != -1;
  Result<Tensor> t = Tensor::wrap(*s, {4096}, DType::U8);
  if (!t)
    return report(false, "memfd", "wrap: " + t.error().message());
  const bool no_cuda = !cuda_map(*t).has_value();
  Result<HostView> v = t->map(CpuAccess::Read);
  const bool host_ok = static_cast<bool>(v);
  report(fd_open && no_cuda && host_ok, "memfd",
         "import refused (" + h.error().message() + "); fd " + (fd_open ? "still open" : "CLOSED") + "; cuda_map " +
             (no_cuda ? "none" : "SOME") + "; host map " + (host_ok ? "works" : "FAILS"));
}

void check_semaphore(const std::shared_ptr<const CudaRuntime> &rt) {
  if (const char *missing = rt->missing_semaphore_symbol())
    return report(false, "semaphore", std::string("the CUDA library lacks ") + missing);
  const int fd = ::memfd_create("tm-device-semaphore", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 8) != 0)
    return report(false, "semaphore", "memfd_create failed");
  std::string outcome;
  bool clean = true;
  {
    Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(CudaExternalSemaphore::Type::OpaqueFd, fd, rt);
    if (sem) {
      Result<void> destroyed = sem->destroy();
      clean = static_cast<bool>(destroyed);
      outcome = "a memfd was taken as a semaphore; destroy " +
                (destroyed ? std::string("worked") : "FAILED: " + destroyed.error().message());
    } else {
      clean = sem.error().kind() == ErrorKind::Device;
      outcome = "a memfd was refused (" + sem.error().message() + ")";
    }
  }
  const bool fd_open = ::fcntl(fd, F_GETFD) != -1;
  ::close(fd);
  report(clean && fd_open, "semaphore",
         "all four entry points resolved; " + outcome + "; the caller's fd " + (fd_open ? "still open" : "CLOSED"));
}

} // namespace

int main() {
  std::shared_ptr<const CudaRuntime> rt = CudaRuntime::get();
  const char *asked = std::getenv("TENSORMEM_CUDA_API");
  const std::string got = cuda_backend_name(rt->backend());
  if (rt->available() && asked && asked[0] != '\0' && got != asked) {
    report(false, "loader", std::string("asked for the ") + asked + " API, got the " + got + " API");
    return 1;
  }
  report(rt->available(), "loader",
         rt->available()
             ? got + " API from " + rt->runtime_path() + ", " + std::to_string(rt->device_count()) + " device(s)"
             : "unavailable: " + rt->reason());
  if (!rt->available())
    return 1;
#if defined(TM_DEVICE_NO_GL)
  report(false, "pbo", "NOT RUN: libtensormem was built without GL (no libepoxy where it was built)");
#else
  Result<std::shared_ptr<GlWorker>> worker = GlWorker::create();
  if (!worker) {
    report(false, "pbo", "no GL context: " + worker.error().message());
  } else {
    std::printf("GL: platform %s, renderer %s, version %s\n", (*worker)->info().platform.c_str(),
                (*worker)->info().renderer.c_str(), (*worker)->info().version.c_str());
    check_pbo(rt, *worker);
    check_latency(rt, *worker);
  }
#endif
  check_memfd();
  check_semaphore(rt);
  return g_failures == 0 ? 0 : 1;
}
