// SPDX-License-Identifier: Apache-2.0
// Checks of the fake runtime's own environment switches, run as separate
// processes because they are about process exit and first-use parsing:
//   leak     leaks an imported handle on purpose; with
//            FAKE_CUDART_CHECK_BALANCE=1 the process must end with status 97
//            (exactly: meson runs it through tests/expect-status.sh)
//   envfail  FAKE_CUDART_FAIL makes cudaImportExternalMemory fail (closing
//            the fd anyway); the import must fail cleanly, exit 0
//   nodevice FAKE_CUDART_DEVICE_COUNT=0: the process runtime is unavailable
//   concurrent  eight threads make the very first CudaRuntime::get() call at
//            once: one runtime for all, one device probe (CUDA-LOAD-01)
//   nodriver the driver API forced onto a file that does not exist: CUDA
//            is unavailable, nothing loaded, the file named in the reason
//   leaksem  leaks an imported external semaphore on purpose: as for
//            `leak`, the process must end with status 97
//   waitbound  a stream waits for a semaphore value nobody signals: with
//            FAKE_CUDART_WAIT_TIMEOUT_MS=100 its synchronisation must fail
//            (702) within two seconds, and the violation the fake counts
//            then ends the process with status 97
// meson runs each against the fake runtime and again against the fake
// driver (TENSORMEM_CUDA_API=driver).
#include <tensormem/cuda_handle.hpp>
#include <tensormem/cuda_import.hpp>
#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/internal/cuda_semaphore.hpp>

#include "fake_cudart.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <latch>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tensormem;

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  const char *mode = argv[1];
  if (std::strcmp(mode, "concurrent") == 0) {
    // Nothing has touched the runtime yet in this process.
    constexpr int kThreads = 8;
    std::latch start(kThreads);
    std::vector<const CudaRuntime *> seen(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        seen[i] = CudaRuntime::get().get();
      });
    for (auto &t : threads)
      t.join();
    for (const CudaRuntime *p : seen)
      if (p != seen[0])
        return 8;
    const unsigned long probes = fake_cudart_calls("cudaGetDeviceCount");
    std::printf("%d threads, one runtime, %lu device probe(s)\n", kThreads, probes);
    return seen[0]->available() && probes == 1 ? 0 : 9;
  }
  if (std::strcmp(mode, "leaksem") == 0) {
    int fd = ::memfd_create("tm-semaphore", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, 8) != 0)
      return 11;
    auto sem = CudaExternalSemaphore::import_fd(CudaExternalSemaphore::Type::TimelineSemaphoreFd, fd);
    ::close(fd);
    if (!sem)
      return 12;
    // Never destroyed, but reachable from a static (see `leak`).
    static auto *kept = new CudaExternalSemaphore(std::move(*sem));
    (void)kept;
    return 0;
  }
  if (std::strcmp(mode, "waitbound") == 0) {
    auto rt = CudaRuntime::get();
    auto sem =
        CudaExternalSemaphore::import_win32(CudaExternalSemaphore::Type::D3D11Fence, reinterpret_cast<void *>(0x1234));
    auto stream = rt->stream_create();
    if (!sem || !stream || !sem->wait(1, *stream))
      return 13;
    const auto start = std::chrono::steady_clock::now();
    auto synced = rt->stream_synchronize(*stream);
    const auto waited = std::chrono::steady_clock::now() - start;
    rt->stream_destroy(*stream);
    if (synced || synced.error().message().find(" 702)") == std::string::npos || waited > std::chrono::seconds(2))
      return 14;
    std::printf("gave up as expected: %s\n", synced.error().message().c_str());
    return 0;
  }
  DmaBufOptions o;
  o.source = DmaBufSource::Memfd;
  auto storage = DmaBufStorage::allocate(4096, o);
  if (!storage)
    return 3;
  if (std::strcmp(mode, "nodevice") == 0) {
    auto rt = CudaRuntime::get();
    std::printf("%s\n", rt->reason().c_str());
    return rt->loaded() && !rt->available() ? 0 : 4;
  }
  if (std::strcmp(mode, "nodriver") == 0) {
    auto rt = CudaRuntime::get();
    std::printf("%s\n", rt->reason().c_str());
    return !rt->loaded() && rt->backend() == CudaBackend::None &&
                   rt->reason().find("no-such-libcuda.so.1") != std::string::npos && !import_cuda(**storage)
               ? 0
               : 10;
  }
  auto h = import_cuda(**storage);
  if (std::strcmp(mode, "leak") == 0) {
    if (!h)
      return 5;
    // Never destroyed, but reachable from a static: a leak checker (LSan in
    // the ASan run) must not end the process first with its own status.
    static auto *kept = new std::shared_ptr<CudaHandle>(std::move(*h));
    (void)kept;
    return 0;
  }
  if (std::strcmp(mode, "envfail") == 0) {
    if (h || h.error().kind() != ErrorKind::Device)
      return 6;
    std::printf("refused as expected: %s\n", h.error().message().c_str());
    return ::fcntl((*storage)->fd(), F_GETFD) == -1 ? 7 : 0;
  }
  return 2;
}
