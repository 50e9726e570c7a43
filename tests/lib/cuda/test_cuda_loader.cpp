// SPDX-License-Identifier: Apache-2.0
// The dlopen loader against the fake runtime and the fake driver: the
// candidate ladder, the environment overrides, rejected candidates, "loads
// but no device", the order runtime → driver and its forcing, the driver's
// primary context on other threads, the process cache, and the generic
// primitives (CUDA-LOAD-*, CUDA-SYM-*, CUDA-PRIM-*, CUDA-GL-01..03).
#include "cuda_test_util.hpp"

#include <tensormem/log.hpp>

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>

using namespace tensormem;
using namespace cudatest;

namespace {

std::string real(const std::string &path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

class CudaLoader : public ::testing::Test {
protected:
  void SetUp() override { reset_fake(); }
  void TearDown() override { reset_fake(); }
};

// Restores an environment variable on scope exit.
struct EnvGuard {
  explicit EnvGuard(const char *name) : name_(name) {
    if (const char *v = std::getenv(name))
      old_ = v, had_ = true;
  }
  ~EnvGuard() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  const char *name_;
  std::string old_;
  bool had_ = false;
};

} // namespace

TEST_F(CudaLoader, CUDA_LOAD_01_process_runtime_comes_from_the_override_and_is_cached) {
  std::shared_ptr<const CudaRuntime> a = CudaRuntime::get();
  std::shared_ptr<const CudaRuntime> b = CudaRuntime::get();
  EXPECT_EQ(a.get(), b.get());
  // meson's driver run forces the driver API; the runtime run leaves the
  // order alone and TENSORMEM_CUDART picks the fake runtime.
  const char *forced = std::getenv("TENSORMEM_CUDA_API");
  EXPECT_EQ(a->backend(), forced && std::string(forced) == "driver" ? CudaBackend::Driver : CudaBackend::Runtime);
  ASSERT_TRUE(a->loaded()) << a->reason();
  EXPECT_TRUE(a->available()) << a->reason();
  EXPECT_EQ(a->device_count(), 1);
  EXPECT_TRUE(cuda_available());
  // CUDA-LOAD-07: the file actually opened, as the dynamic linker saw it.
  EXPECT_EQ(real(a->runtime_path()), real(fake_path()));
  // Cached: asking again does not probe the runtime again.
  fake_cudart_reset_counters();
  EXPECT_TRUE(CudaRuntime::get()->available());
  EXPECT_EQ(fake_cudart_calls("cudaGetDeviceCount"), 0u);
}

// CUDA-LOAD-01 under a concurrent first use needs a process where nothing
// has called get() yet: cuda_fake_check's "concurrent" mode (meson.build).

TEST_F(CudaLoader, CUDA_LOAD_02_default_candidates_are_the_soname_ladder_or_only_the_override) {
  EnvGuard guard("TENSORMEM_CUDART");
  ::unsetenv("TENSORMEM_CUDART");
  std::vector<std::string> ladder = CudaRuntime::default_candidates();
  EXPECT_EQ(ladder,
            (std::vector<std::string>{"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}));
  ::setenv("TENSORMEM_CUDART", "", 1);
  EXPECT_EQ(CudaRuntime::default_candidates(), ladder) << "an empty override counts as unset";
  ::setenv("TENSORMEM_CUDART", "/opt/x/libcudart.so.99", 1);
  EXPECT_EQ(CudaRuntime::default_candidates(), (std::vector<std::string>{"/opt/x/libcudart.so.99"}));
}

TEST_F(CudaLoader, CUDA_LOAD_04_a_candidate_missing_a_symbol_is_closed_and_the_next_one_tried) {
  std::vector<std::string> candidates{partial_path(), runtime_fake_path()};
  auto rt = CudaRuntime::load(candidates);
  ASSERT_TRUE(rt->loaded()) << rt->reason();
  EXPECT_TRUE(rt->available());
  EXPECT_EQ(rt->backend(), CudaBackend::Runtime);
  EXPECT_EQ(real(rt->runtime_path()), real(runtime_fake_path()));
  // The stale candidate was unloaded again.
  EXPECT_EQ(::dlopen(partial_path().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
}

// CUDA-SYM-01: a runtime lacking a required symbol does not count as usable.
TEST_F(CudaLoader, CUDA_LOAD_04_only_incomplete_candidates_leave_cuda_unavailable_naming_the_symbol) {
  std::vector<std::string> candidates{partial_path()};
  auto rt = CudaRuntime::load(candidates);
  EXPECT_FALSE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_TRUE(rt->runtime_path().empty());
  EXPECT_NE(rt->reason().find("lacks cudaGraphicsGLRegisterBuffer"), std::string::npos) << rt->reason();
}

TEST_F(CudaLoader, CUDA_LOAD_07_a_nonexistent_path_is_unavailable_with_no_runtime_path) {
  std::vector<std::string> candidates{"/nonexistent/dir/libcudart.so.13"};
  auto rt = CudaRuntime::load(candidates);
  EXPECT_FALSE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_TRUE(rt->runtime_path().empty());
  EXPECT_NE(rt->reason().find("/nonexistent/dir/libcudart.so.13"), std::string::npos) << rt->reason();
  EXPECT_FALSE(CudaRuntime::load({})->loaded());
}

TEST_F(CudaLoader, a_runtime_that_loads_but_reports_no_device_is_unavailable_with_one_debug_line) {
  static std::vector<std::string> lines;
  lines.clear();
  set_log_handler(
      [](LogLevel level, std::string_view msg, void *) {
        if (level == LogLevel::Debug)
          lines.emplace_back(msg);
      },
      nullptr);
  fake_cudart_set_device_count(0);
  std::vector<std::string> candidates{runtime_fake_path()};
  auto rt = CudaRuntime::load(candidates);
  set_log_handler(nullptr, nullptr);
  EXPECT_TRUE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_EQ(rt->device_count(), 0);
  EXPECT_NE(rt->reason().find("cudaGetDeviceCount failed"), std::string::npos) << rt->reason();
  EXPECT_NE(rt->reason().find("(cudaError 100)"), std::string::npos) << rt->reason();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("cudaError 100"), std::string::npos);

  // Nothing reaches the runtime once it is known to be unusable.
  fake_cudart_reset_counters();
  EXPECT_FALSE(rt->stream_create());
  EXPECT_FALSE(rt->memcpy_device_to_host(nullptr, nullptr, 0));
  EXPECT_FALSE(rt->gl_register_buffer(1));
  Result<std::shared_ptr<CudaHandle>> h = CudaHandle::import_dma_fd(0, 16, rt);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(h.error().message().find("CUDA is unavailable"), std::string::npos) << h.error().message();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaLoader, a_device_probe_that_fails_counts_as_unavailable) {
  fake_cudart_set_fault("cudaGetDeviceCount", 35, 1, 0);
  std::vector<std::string> candidates{runtime_fake_path()};
  auto rt = CudaRuntime::load(candidates);
  EXPECT_TRUE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_NE(rt->reason().find("(cudaError 35)"), std::string::npos) << rt->reason();
}

// Seed test pub_primitives_degrade_without_libcudart (CUDA-PRIM-03,
// CUDA-LOAD-07, CUDA-GL-01..03, CUDA-PRIM-02), on a runtime that did not load.
TEST_F(CudaLoader, CUDA_PRIM_03_pub_primitives_degrade_without_libcudart) {
  std::vector<std::string> candidates{"/nonexistent/libcudart.so"};
  auto rt = CudaRuntime::load(candidates);
  EXPECT_FALSE(rt->loaded());
  EXPECT_TRUE(rt->runtime_path().empty());
  EXPECT_EQ(rt->backend(), CudaBackend::None);
  Result<CudaStream> stream = rt->stream_create();
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().kind(), ErrorKind::NotImplemented);
  EXPECT_FALSE(rt->gl_register_buffer(0));
  EXPECT_FALSE(rt->gl_map_resource(nullptr));
  rt->gl_unmap_resource(nullptr);
  rt->gl_unregister_resource(nullptr);
  rt->stream_destroy(nullptr);
  EXPECT_FALSE(rt->stream_synchronize(nullptr));
  EXPECT_FALSE(rt->memcpy_device_to_host(nullptr, nullptr, 0));
  EXPECT_FALSE(rt->memcpy_host_to_device(nullptr, nullptr, 0));
}

TEST_F(CudaLoader, CUDA_PRIM_01_memcpy_kinds_reach_the_runtime_with_their_numbers) {
  auto rt = CudaRuntime::get();
  ASSERT_TRUE(rt->available());
  Result<void *> allocated = rt->malloc(64);
  ASSERT_TRUE(allocated) << allocated.error().message();
  void *dev = *allocated;
  unsigned char host[64], back[64];
  for (int i = 0; i < 64; ++i)
    host[i] = static_cast<unsigned char>(i * 3);
  ASSERT_TRUE(rt->memcpy_host_to_device(dev, host, 64));
  std::memset(back, 0, sizeof back);
  ASSERT_TRUE(rt->memcpy_device_to_host(back, dev, 64));
  EXPECT_EQ(std::memcmp(host, back, 64), 0);
  // The fake checks the direction: a host→device copy into host memory is
  // refused, and the refusal arrives as a Device error naming the call.
  Result<void> wrong = rt->memcpy_host_to_device(back, host, 64);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind(), ErrorKind::Device);
  EXPECT_EQ(wrong.error().message(),
            call_name("cudaMemcpy", "cuMemcpyHtoD_v2") + " failed: invalid argument " + status_text(1));
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::HostToDevice), 1);
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::DeviceToHost), 2);
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::DeviceToDevice), 3);
  EXPECT_TRUE(rt->free(dev));
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST_F(CudaLoader, CUDA_PRIM_03_streams_are_created_synchronised_and_destroyed) {
  auto rt = CudaRuntime::get();
  Result<CudaStream> s = rt->stream_create();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_NE(*s, nullptr);
  EXPECT_EQ(fake_cudart_live("stream"), 1u);
  EXPECT_TRUE(rt->stream_synchronize(*s));
  rt->stream_destroy(*s);
  EXPECT_EQ(fake_cudart_live("stream"), 0u);
  fake_cudart_set_fault("cudaStreamCreate", 2, 1, 0);
  Result<CudaStream> refused = rt->stream_create();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            call_name("cudaStreamCreate", "cuStreamCreate") + " failed: out of memory " + status_text(2));
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST_F(CudaLoader, CUDA_SYM_04_error_text_has_the_runtime_string_and_the_number) {
  auto rt = CudaRuntime::get();
  EXPECT_EQ(rt->error_text(1), "invalid argument " + status_text(1));
  auto none = CudaRuntime::load({});
  EXPECT_EQ(none->error_text(35), "cudaError 35");
}

TEST_F(CudaLoader, CUDA_GL_01_registration_without_a_current_gl_context_fails_cleanly) {
  auto rt = CudaRuntime::get();
  Result<void *> r = rt->gl_register_buffer(7);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::Device);
  EXPECT_NE(
      r.error().message().find(call_name("cudaGraphicsGLRegisterBuffer", "cuGraphicsGLRegisterBuffer") + "(buffer 7)"),
      std::string::npos)
      << r.error().message();
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

// ---- The driver API --------------------------------------------------------

TEST_F(CudaLoader, the_driver_candidate_is_libcuda_so_1_or_only_its_override) {
  EnvGuard guard("TENSORMEM_CUDA_DRIVER");
  ::unsetenv("TENSORMEM_CUDA_DRIVER");
  EXPECT_EQ(CudaRuntime::driver_candidates(), (std::vector<std::string>{"libcuda.so.1"}));
  ::setenv("TENSORMEM_CUDA_DRIVER", "", 1);
  EXPECT_EQ(CudaRuntime::driver_candidates(), (std::vector<std::string>{"libcuda.so.1"}));
  ::setenv("TENSORMEM_CUDA_DRIVER", "/opt/x/libcuda.so.1", 1);
  EXPECT_EQ(CudaRuntime::driver_candidates(), (std::vector<std::string>{"/opt/x/libcuda.so.1"}));
  EXPECT_STREQ(cuda_backend_name(CudaBackend::None), "none");
  EXPECT_STREQ(cuda_backend_name(CudaBackend::Runtime), "runtime");
  EXPECT_STREQ(cuda_backend_name(CudaBackend::Driver), "driver");
}

TEST_F(CudaLoader, the_driver_loads_retains_the_primary_context_once_and_releases_it_when_destroyed) {
  const std::size_t before = fake_cudart_live("primary_context");
  {
    std::vector<std::string> candidates{driver_fake_path()};
    auto rt = CudaRuntime::load_driver(candidates);
    ASSERT_TRUE(rt->available()) << rt->reason();
    EXPECT_EQ(rt->backend(), CudaBackend::Driver);
    EXPECT_EQ(rt->device_count(), 1);
    EXPECT_EQ(real(rt->runtime_path()), real(driver_fake_path()));
    EXPECT_EQ(fake_cudart_live("primary_context"), before + 1);
    EXPECT_EQ(fake_cudart_symbol_calls("cuInit"), 1u);
    EXPECT_EQ(fake_cudart_symbol_calls("cuDevicePrimaryCtxRetain"), 1u);
    // Every call pushes the context and pops it again: nothing stays
    // current on the calling thread.
    Result<CudaStream> stream = rt->stream_create();
    ASSERT_TRUE(stream) << stream.error().message();
    EXPECT_EQ(fake_cudart_current_context(), nullptr);
    EXPECT_EQ(fake_cudart_live("current_context"), 0u);
    rt->stream_destroy(*stream);
    EXPECT_EQ(fake_cudart_live("primary_context"), before + 1) << "retained once, not per call";
    EXPECT_EQ(fake_cudart_symbol_calls("cuDevicePrimaryCtxRelease_v2"), 0u);
  }
  EXPECT_EQ(fake_cudart_live("primary_context"), before);
  EXPECT_EQ(fake_cudart_symbol_calls("cuDevicePrimaryCtxRelease_v2"), 1u);
}

TEST_F(CudaLoader, a_driver_missing_a_symbol_is_rejected_naming_it) {
  // The fake runtime is no driver: it exports no cu* entry point.
  std::vector<std::string> candidates{runtime_fake_path()};
  auto rt = CudaRuntime::load_driver(candidates);
  EXPECT_FALSE(rt->loaded());
  EXPECT_EQ(rt->backend(), CudaBackend::None);
  EXPECT_NE(rt->reason().find("lacks cuInit"), std::string::npos) << rt->reason();
}

TEST_F(CudaLoader, a_driver_that_loads_but_reports_no_device_is_unavailable_and_retains_nothing) {
  fake_cudart_set_device_count(0);
  std::vector<std::string> candidates{driver_fake_path()};
  const std::size_t before = fake_cudart_live("primary_context");
  auto rt = CudaRuntime::load_driver(candidates);
  EXPECT_TRUE(rt->loaded());
  EXPECT_FALSE(rt->available());
  EXPECT_EQ(rt->backend(), CudaBackend::Driver);
  EXPECT_NE(rt->reason().find("cuInit failed"), std::string::npos) << rt->reason();
  EXPECT_NE(rt->reason().find("(CUresult 100)"), std::string::npos) << rt->reason();
  EXPECT_EQ(fake_cudart_live("primary_context"), before);
  fake_cudart_reset_counters();
  EXPECT_FALSE(rt->stream_create());
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaLoader, a_failure_at_any_step_of_the_driver_probe_is_unavailable_naming_the_call) {
  std::vector<std::string> candidates{driver_fake_path()};
  for (const char *call : {"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDevicePrimaryCtxRetain"}) {
    SCOPED_TRACE(call);
    const std::size_t before = fake_cudart_live("primary_context");
    fake_cudart_set_fault(call, 999, 1, 0);
    auto rt = CudaRuntime::load_driver(candidates);
    fake_cudart_clear_faults();
    EXPECT_TRUE(rt->loaded());
    EXPECT_FALSE(rt->available());
    EXPECT_NE(rt->reason().find(std::string(call) + " failed"), std::string::npos) << rt->reason();
    EXPECT_NE(rt->reason().find("(CUresult 999)"), std::string::npos) << rt->reason();
    EXPECT_EQ(fake_cudart_live("primary_context"), before) << "nothing retained";
  }
}

TEST_F(CudaLoader, the_fake_driver_refuses_a_thread_without_a_current_context) {
  // What the backend's push/pop is for: the driver call on its own fails.
  std::vector<std::string> candidates{driver_fake_path()};
  auto rt = CudaRuntime::load_driver(candidates);
  ASSERT_TRUE(rt->available()) << rt->reason();
  void *lib = ::dlopen(driver_fake_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using StreamCreate = int (*)(void **, unsigned);
  auto create = reinterpret_cast<StreamCreate>(::dlsym(lib, "cuStreamCreate"));
  ASSERT_NE(create, nullptr);
  void *stream = nullptr;
  EXPECT_EQ(create(&stream, 0), 201) << "CUDA_ERROR_INVALID_CONTEXT";
  ::dlclose(lib);
  EXPECT_EQ(fake_cudart_live("stream"), 0u);
}

TEST_F(CudaLoader, a_thread_other_than_the_loaders_gets_the_primary_context_for_each_call) {
  std::vector<std::string> candidates{driver_fake_path()};
  auto rt = CudaRuntime::load_driver(candidates);
  ASSERT_TRUE(rt->available()) << rt->reason();
  std::string failure;
  std::thread streaming([&] {
    Result<void *> dev = rt->malloc(32);
    if (!dev) {
      failure = dev.error().message();
      return;
    }
    const char text[32] = "written on a streaming thread";
    char back[32] = {};
    Result<void> up = rt->memcpy_host_to_device(*dev, text, sizeof text);
    Result<void> down = rt->memcpy_device_to_host(back, *dev, sizeof back);
    if (!up || !down || std::memcmp(text, back, sizeof text) != 0)
      failure = !up ? up.error().message() : !down ? down.error().message() : "bytes differ";
    if (fake_cudart_current_context() != nullptr)
      failure = "the primary context stayed current on the streaming thread";
    (void)rt->free(*dev);
  });
  streaming.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(fake_cudart_symbol_calls("cuMemcpyHtoD_v2"), 1u);
  EXPECT_EQ(fake_cudart_symbol_calls("cuMemcpyDtoH_v2"), 1u);
  EXPECT_EQ(fake_cudart_live("current_context"), 0u);
  EXPECT_EQ(fake_cudart_live("malloc"), 0u);
}

// ---- The order: TENSORMEM_CUDART, the runtime ladder, the driver -----------

class CudaLoadOrder : public CudaLoader {
protected:
  EnvGuard cudart_{"TENSORMEM_CUDART"}, api_{"TENSORMEM_CUDA_API"}, driver_{"TENSORMEM_CUDA_DRIVER"};
};

TEST_F(CudaLoadOrder, TENSORMEM_CUDA_API_driver_takes_the_driver_alone) {
  ::setenv("TENSORMEM_CUDA_API", "driver", 1);
  ::setenv("TENSORMEM_CUDART", runtime_fake_path().c_str(), 1);
  ::setenv("TENSORMEM_CUDA_DRIVER", driver_fake_path().c_str(), 1);
  auto rt = CudaRuntime::load_default();
  ASSERT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(rt->backend(), CudaBackend::Driver);
  EXPECT_EQ(fake_cudart_symbol_calls("cudaGetDeviceCount"), 0u) << "the runtime is not even tried";
}

TEST_F(CudaLoadOrder, TENSORMEM_CUDA_API_runtime_takes_the_runtime_alone) {
  ::setenv("TENSORMEM_CUDA_API", "runtime", 1);
  ::setenv("TENSORMEM_CUDART", runtime_fake_path().c_str(), 1);
  ::setenv("TENSORMEM_CUDA_DRIVER", driver_fake_path().c_str(), 1);
  fake_cudart_set_device_count(0);
  auto rt = CudaRuntime::load_default();
  EXPECT_FALSE(rt->available());
  EXPECT_EQ(rt->backend(), CudaBackend::Runtime);
  EXPECT_EQ(fake_cudart_symbol_calls("cuInit"), 0u) << "no fallback to the driver when the runtime is forced";
}

TEST_F(CudaLoadOrder, TENSORMEM_CUDART_is_exactly_that_file_with_no_driver_behind_it) {
  ::unsetenv("TENSORMEM_CUDA_API");
  ::setenv("TENSORMEM_CUDART", "/nonexistent/libcudart.so.13", 1);
  ::setenv("TENSORMEM_CUDA_DRIVER", driver_fake_path().c_str(), 1);
  auto rt = CudaRuntime::load_default();
  EXPECT_FALSE(rt->loaded());
  EXPECT_EQ(rt->backend(), CudaBackend::None);
  EXPECT_NE(rt->reason().find("/nonexistent/libcudart.so.13"), std::string::npos) << rt->reason();
  EXPECT_EQ(fake_cudart_symbol_calls("cuInit"), 0u);
}

TEST_F(CudaLoadOrder, without_a_usable_runtime_the_ladder_falls_through_to_the_driver) {
  ::unsetenv("TENSORMEM_CUDA_API");
  ::unsetenv("TENSORMEM_CUDART");
  ::setenv("TENSORMEM_CUDA_DRIVER", driver_fake_path().c_str(), 1);
  // Whatever the ladder finds on this machine: a runtime with a device
  // wins; none, or one without a device (a toolkit without a GPU, a runtime
  // newer than the driver), leaves the turn to the driver.
  auto ladder = CudaRuntime::load(CudaRuntime::default_candidates());
  auto rt = CudaRuntime::load_default();
  ASSERT_TRUE(rt->available()) << rt->reason();
  EXPECT_EQ(rt->backend(), ladder->available() ? CudaBackend::Runtime : CudaBackend::Driver);
  if (!ladder->available()) {
    EXPECT_EQ(real(rt->runtime_path()), real(driver_fake_path()));
  }
}

TEST_F(CudaLoadOrder, a_missing_driver_leaves_cuda_unavailable_naming_both_steps) {
  ::unsetenv("TENSORMEM_CUDA_API");
  ::unsetenv("TENSORMEM_CUDART");
  ::setenv("TENSORMEM_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  auto ladder = CudaRuntime::load(CudaRuntime::default_candidates());
  auto rt = CudaRuntime::load_default();
  if (ladder->available()) {
    // A runtime with a device is installed here: it wins, and the driver
    // step (which would fail) is never reached.
    EXPECT_TRUE(rt->available()) << rt->reason();
    EXPECT_EQ(rt->backend(), CudaBackend::Runtime);
    return;
  }
  EXPECT_FALSE(rt->available());
  EXPECT_NE(rt->reason().find("/nonexistent/libcuda.so.1"), std::string::npos) << rt->reason();
  // The runtime step's reason first, then the driver's.
  EXPECT_EQ(rt->reason().rfind(ladder->reason() + "; ", 0), 0u) << rt->reason();
}

TEST_F(CudaLoadOrder, TENSORMEM_CUDA_API_driver_with_the_driver_missing_is_unavailable) {
  ::setenv("TENSORMEM_CUDA_API", "driver", 1);
  ::setenv("TENSORMEM_CUDART", runtime_fake_path().c_str(), 1);
  ::setenv("TENSORMEM_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  auto rt = CudaRuntime::load_default();
  EXPECT_FALSE(rt->loaded());
  EXPECT_EQ(rt->backend(), CudaBackend::None);
  EXPECT_NE(rt->reason().find("no usable CUDA driver among: /nonexistent/libcuda.so.1"), std::string::npos)
      << rt->reason();
}

TEST_F(CudaLoadOrder, an_unknown_TENSORMEM_CUDA_API_is_unavailable_saying_so) {
  ::setenv("TENSORMEM_CUDA_API", "cudart", 1);
  ::setenv("TENSORMEM_CUDART", runtime_fake_path().c_str(), 1);
  auto rt = CudaRuntime::load_default();
  EXPECT_FALSE(rt->loaded());
  EXPECT_NE(rt->reason().find("TENSORMEM_CUDA_API=cudart"), std::string::npos) << rt->reason();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}
