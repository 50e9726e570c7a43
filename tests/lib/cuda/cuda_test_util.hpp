// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the CUDA tests: the fake's paths and control functions,
// which API the process runtime reaches, an fd counter, and a counting
// CudaGlOps. meson runs the CUDA suites once per API: against the fake
// runtime (TENSORMEM_CUDART) and against the fake driver
// (TENSORMEM_CUDA_API=driver, TENSORMEM_CUDA_DRIVER); both front ends count
// into one fake core, so counts and call logs read the same either way.
#pragma once

#include <tensormem/cuda_handle.hpp>
#include <tensormem/internal/cuda_runtime.hpp>

#include "../../proc_util.hpp"
#include "fake_cudart.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace cudatest {

inline std::string runtime_fake_path() { return FAKE_CUDART_PATH; }
inline std::string driver_fake_path() { return FAKE_CUDA_DRIVER_PATH; }
inline std::string partial_path() { return FAKE_CUDART_PARTIAL_PATH; }

/// The process runtime reaches the driver API (the suite's driver run).
inline bool driver_api() { return tensormem::CudaRuntime::get()->backend() == tensormem::CudaBackend::Driver; }
/// The fake front end the process runtime loaded.
inline std::string fake_path() { return driver_api() ? driver_fake_path() : runtime_fake_path(); }
/// A fresh load of `files` with the API of the process runtime.
inline std::shared_ptr<const tensormem::CudaRuntime> load_same_api(std::span<const std::string> files) {
  return driver_api() ? tensormem::CudaRuntime::load_driver(files) : tensormem::CudaRuntime::load(files);
}
/// How this API writes status `n` in a message: "(cudaError n)" or
/// "(CUresult n)".
inline std::string status_text(int n) {
  return std::string(driver_api() ? "(CUresult " : "(cudaError ") + std::to_string(n) + ")";
}
/// The exported name of a call: the runtime's, or the driver's for it.
inline std::string call_name(const char *runtime_name, const char *driver_name) {
  return driver_api() ? driver_name : runtime_name;
}

inline int count_open_fds() { return tmtest::open_fd_count(); }

inline std::string call_log() {
  std::size_t n = fake_cudart_call_log(nullptr, 0);
  std::string out(n + 1, '\0');
  fake_cudart_call_log(out.data(), out.size());
  out.resize(n);
  return out;
}

/// Why the DMA-BUF tests of lib-cuda need the fake to import: meson runs
/// them as on a Jetson-class driver (FAKE_CUDART_ACCEPT_DMABUF=1); the
/// desktop default is lib-cuda-desktop-driver's.
inline constexpr const char *kJetsonClassDriver =
    "lib-cuda emulates a driver that imports DMA-BUF (FAKE_CUDART_ACCEPT_DMABUF=1)";

/// Puts the fake back to a clean slate between tests.
inline void reset_fake() {
  (void)tensormem::CudaRuntime::get(); // the process runtime's probe is not part of any test's log
  fake_cudart_clear_faults();
  fake_cudart_set_device_count(1);
  fake_cudart_reset_counters();
}

/// GL operations that map every resource to a fixed range (or fail) and
/// count each call; the seed tests' MockOps, with the calling thread kept.
class CountingGlOps final : public tensormem::CudaGlOps {
public:
  explicit CountingGlOps(bool map_ok = true, void *ptr = reinterpret_cast<void *>(0x1000), std::size_t len = 4096)
      : map_ok_(map_ok), ptr_(ptr), len_(len) {}

  tensormem::Result<void *> register_buffer(std::uint32_t buffer_id) override {
    ++registers;
    if (!register_ok)
      return tensormem::Error::device("fake register refused buffer " + std::to_string(buffer_id));
    return reinterpret_cast<void *>(static_cast<std::uintptr_t>(0x100 + buffer_id));
  }
  tensormem::Result<tensormem::CudaDeviceRange> map(void *) override {
    ++maps;
    if (!map_ok_)
      return tensormem::Error::device("fake map yields nothing");
    return tensormem::CudaDeviceRange{ptr_, len_};
  }
  void unmap(void *resource) noexcept override {
    ++unmaps;
    std::lock_guard lock(mu);
    unmap_threads.push_back(std::this_thread::get_id());
    last_unmapped = resource;
  }
  void unregister(void *resource) noexcept override {
    ++unregisters;
    last_unregistered = resource;
  }

  bool register_ok = true;
  std::atomic<int> registers{0}, maps{0}, unmaps{0}, unregisters{0};
  std::mutex mu;
  std::vector<std::thread::id> unmap_threads;
  void *last_unmapped = nullptr;
  void *last_unregistered = nullptr;

private:
  bool map_ok_;
  void *ptr_;
  std::size_t len_;
};

} // namespace cudatest
