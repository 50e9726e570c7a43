// SPDX-License-Identifier: Apache-2.0
// The dlopen loader against the fake runtime: the candidate ladder, the
// environment override, rejected candidates, "loads but no device", the
// process cache, and the generic primitives (CUDA-LOAD-*, CUDA-SYM-*,
// CUDA-PRIM-*, CUDA-GL-01..03).
#include "cuda_test_util.hpp"

#include <tensormem/log.hpp>

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

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

TEST_F(CudaLoader, CUDA_LOAD_01_process_runtime_comes_from_TENSORMEM_CUDART_and_is_cached) {
  std::shared_ptr<const CudaRuntime> a = CudaRuntime::get();
  std::shared_ptr<const CudaRuntime> b = CudaRuntime::get();
  EXPECT_EQ(a.get(), b.get());
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
  std::vector<std::string> candidates{partial_path(), fake_path()};
  auto rt = CudaRuntime::load(candidates);
  ASSERT_TRUE(rt->loaded()) << rt->reason();
  EXPECT_TRUE(rt->available());
  EXPECT_EQ(real(rt->runtime_path()), real(fake_path()));
  // The stale candidate was unloaded again.
  EXPECT_EQ(::dlopen(partial_path().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
}

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
  std::vector<std::string> candidates{fake_path()};
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
  std::vector<std::string> candidates{fake_path()};
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
  EXPECT_EQ(rt->functions().memcpy, nullptr);
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
  ASSERT_NE(rt->functions().malloc, nullptr);
  void *dev = nullptr;
  ASSERT_EQ(rt->functions().malloc(&dev, 64), 0);
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
  EXPECT_EQ(wrong.error().message(), "cudaMemcpy failed: invalid argument (cudaError 1)");
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::HostToDevice), 1);
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::DeviceToHost), 2);
  EXPECT_EQ(static_cast<int>(cudaffi::MemcpyKind::DeviceToDevice), 3);
  EXPECT_EQ(rt->functions().free(dev), 0);
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
  EXPECT_EQ(refused.error().message(), "cudaStreamCreate failed: out of memory (cudaError 2)");
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST_F(CudaLoader, CUDA_SYM_04_error_text_has_the_runtime_string_and_the_number) {
  auto rt = CudaRuntime::get();
  EXPECT_EQ(rt->error_text(1), "invalid argument (cudaError 1)");
  auto none = CudaRuntime::load({});
  EXPECT_EQ(none->error_text(35), "cudaError 35");
}

TEST_F(CudaLoader, CUDA_GL_01_registration_without_a_current_gl_context_fails_cleanly) {
  auto rt = CudaRuntime::get();
  Result<void *> r = rt->gl_register_buffer(7);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::Device);
  EXPECT_NE(r.error().message().find("cudaGraphicsGLRegisterBuffer(buffer 7)"), std::string::npos);
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}
