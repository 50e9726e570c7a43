// SPDX-License-Identifier: Apache-2.0
// CudaExternalSemaphore through the fake CUDA, once per API (lib-cuda,
// lib-cuda-driver): imports from an fd (a memfd whose first 8 bytes are the
// fake's payload, so a "producer" holding its own dup signals by writing
// there) and from a Win32 handle, the caller's fd never taken, bad input
// refused before CUDA is called, stream-ordered signal and wait (a wait
// satisfied by CUDA on another stream or by the producer, a wait never
// satisfied failing within the fake's bound instead of hanging), values that
// must rise, a fault at each of the four calls, and libraries without the
// semaphore entry points (CUDA-SYM-02) or without the _v2 ones (HAZ-50).
#include "cuda_test_util.hpp"

#include <tensormem/internal/cuda_semaphore.hpp>
#include <tensormem/unique_fd.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace tensormem;
using namespace cudatest;
using Type = CudaExternalSemaphore::Type;
using namespace std::chrono_literals;

namespace {

class CudaSemaphoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    reset_fake();
    fake_cudart_set_wait_timeout_ms(3000);
    rt = CudaRuntime::get();
    ASSERT_TRUE(rt->available()) << rt->reason();
    fds_before = count_open_fds();
  }
  void TearDown() override {
    EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u);
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "a CUDA object leaked";
    EXPECT_EQ(fake_cudart_violations(), 0u);
    EXPECT_EQ(count_open_fds(), fds_before) << "an fd leaked or was closed";
    reset_fake();
  }

  std::shared_ptr<const CudaRuntime> rt;
  int fds_before = 0;
};

// A stream destroyed at the end of its scope.
struct ScopedStream {
  explicit ScopedStream(std::shared_ptr<const CudaRuntime> runtime) : rt(std::move(runtime)) {
    Result<CudaStream> s = rt->stream_create();
    EXPECT_TRUE(s) << (s ? "" : s.error().message());
    if (s)
      stream = *s;
  }
  ~ScopedStream() { rt->stream_destroy(stream); }
  std::shared_ptr<const CudaRuntime> rt;
  CudaStream stream = nullptr;
};

// The fake's semaphore file: a memfd holding the payload at offset 0.
UniqueFd semaphore_file(std::uint64_t initial = 0, off_t size = 8) {
  UniqueFd fd(::memfd_create("tm-semaphore", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), size), 0);
  if (size >= 8) {
    unsigned char bytes[8];
    for (unsigned char &b : bytes) {
      b = static_cast<unsigned char>(initial & 0xff);
      initial >>= 8;
    }
    EXPECT_EQ(::pwrite(fd.get(), bytes, 8, 0), 8);
  }
  return fd;
}

// What a producer holding its own dup of the fd does to signal.
void produce(int fd, std::uint64_t value) {
  unsigned char bytes[8];
  for (unsigned char &b : bytes) {
    b = static_cast<unsigned char>(value & 0xff);
    value >>= 8;
  }
  ASSERT_EQ(::pwrite(fd, bytes, 8, 0), 8);
}

std::uint64_t payload(int fd) {
  unsigned char bytes[8] = {};
  EXPECT_EQ(::pread(fd, bytes, 8, 0), 8);
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | bytes[i];
  return v;
}

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

std::string signal_name() {
  return call_name("cudaSignalExternalSemaphoresAsync_v2", "cuSignalExternalSemaphoresAsync");
}
std::string wait_name() { return call_name("cudaWaitExternalSemaphoresAsync_v2", "cuWaitExternalSemaphoresAsync"); }
std::string import_name() { return call_name("cudaImportExternalSemaphore", "cuImportExternalSemaphore"); }
std::string destroy_name() { return call_name("cudaDestroyExternalSemaphore", "cuDestroyExternalSemaphore"); }

#define ASSERT_OK(expr)                                                                                                \
  do {                                                                                                                 \
    auto &&result_ = (expr);                                                                                           \
    ASSERT_TRUE(result_) << result_.error().message();                                                                 \
  } while (0)

} // namespace

TEST_F(CudaSemaphoreTest, imports_a_semaphore_fd_of_either_type_and_leaves_the_callers_fd_alone) {
  for (Type type : {Type::OpaqueFd, Type::TimelineSemaphoreFd}) {
    SCOPED_TRACE(cuda_semaphore_type_name(type));
    UniqueFd fd = semaphore_file();
    {
      Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(type, fd.get());
      ASSERT_TRUE(sem) << sem.error().message();
      EXPECT_TRUE(sem->valid());
      EXPECT_EQ(sem->type(), type);
      EXPECT_EQ(fake_cudart_live("external_semaphore"), 1u);
      EXPECT_EQ(fake_cudart_symbol_calls(import_name().c_str()), 1u);
      // CUDA took a duplicate: the caller's fd is open and still the file.
      ASSERT_TRUE(fd_is_open(fd.get()));
      produce(fd.get(), 4);
      EXPECT_EQ(payload(fd.get()), 4u);
    }
    EXPECT_EQ(fake_cudart_live("external_semaphore"), 0u);
    EXPECT_EQ(fake_cudart_symbol_calls(destroy_name().c_str()), 1u);
    // Destroying closed CUDA's duplicate, not ours.
    ASSERT_TRUE(fd_is_open(fd.get()));
    produce(fd.get(), 9);
    EXPECT_EQ(payload(fd.get()), 9u);
    fake_cudart_reset_counters();
  }
}

TEST_F(CudaSemaphoreTest, imports_a_win32_handle_without_taking_it_and_orders_work_on_it) {
  // The fake accepts any non-null handle for the Win32 types on every OS.
  for (Type type : {Type::D3D11Fence, Type::D3D12Fence, Type::TimelineSemaphoreWin32}) {
    SCOPED_TRACE(cuda_semaphore_type_name(type));
    Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_win32(type, reinterpret_cast<void *>(0x1234));
    ASSERT_TRUE(sem) << sem.error().message();
    ScopedStream s(rt);
    ASSERT_OK(sem->signal(1, s.stream));
    ASSERT_OK(sem->wait(1, s.stream));
    ASSERT_OK(rt->stream_synchronize(s.stream));
  }
  EXPECT_EQ(fake_cudart_live("external_semaphore"), 0u);
}

TEST_F(CudaSemaphoreTest, bad_input_is_refused_before_cuda_is_called) {
  UniqueFd fd = semaphore_file();
  const unsigned long calls = fake_cudart_calls(nullptr);
  void *handle = reinterpret_cast<void *>(0x1234);
  struct Case {
    const char *what;
    Result<CudaExternalSemaphore> result;
  };
  Case cases[] = {
      {"negative fd", CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, -1)},
      {"fd with a Win32 type", CudaExternalSemaphore::import_fd(Type::D3D11Fence, fd.get())},
      {"fd with a keyed mutex", CudaExternalSemaphore::import_fd(Type::KeyedMutex, fd.get())},
      {"null handle", CudaExternalSemaphore::import_win32(Type::D3D11Fence, nullptr)},
      {"handle with an fd type", CudaExternalSemaphore::import_win32(Type::TimelineSemaphoreFd, handle)},
      {"handle with NvSciSync", CudaExternalSemaphore::import_win32(Type::NvSciSync, handle)},
  };
  for (const Case &c : cases) {
    ASSERT_FALSE(c.result) << c.what;
    EXPECT_EQ(c.result.error().kind(), ErrorKind::InvalidArgument) << c.what << ": " << c.result.error().message();
  }
  EXPECT_EQ(fake_cudart_calls(nullptr), calls) << call_log();
  EXPECT_TRUE(fd_is_open(fd.get()));
}

TEST_F(CudaSemaphoreTest, signals_in_order_then_a_wait_on_the_same_stream_is_satisfied) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream s(rt);
  ASSERT_OK(sem->signal(1, s.stream));
  ASSERT_OK(sem->signal(2, s.stream));
  ASSERT_OK(sem->wait(2, s.stream));
  ASSERT_OK(rt->stream_synchronize(s.stream));
  EXPECT_EQ(payload(fd.get()), 2u) << "the producer sees CUDA's signal";
  // The runtime prefers the _v2 exports.
  EXPECT_EQ(fake_cudart_symbol_calls(signal_name().c_str()), 2u);
  EXPECT_EQ(fake_cudart_symbol_calls(wait_name().c_str()), 1u);
}

TEST_F(CudaSemaphoreTest, a_wait_is_satisfied_by_an_external_producer_later) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream s(rt);
  ASSERT_OK(sem->wait(5, s.stream));
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 1u) << "queued, the CPU did not wait";
  const auto start = std::chrono::steady_clock::now();
  std::thread producer([&] {
    std::this_thread::sleep_for(50ms);
    produce(fd.get(), 3); // not enough yet
    std::this_thread::sleep_for(20ms);
    produce(fd.get(), 5);
  });
  Result<void> synced = rt->stream_synchronize(s.stream);
  const auto waited = std::chrono::steady_clock::now() - start;
  producer.join();
  ASSERT_TRUE(synced) << synced.error().message();
  EXPECT_GE(waited, 60ms) << "the synchronisation returned before the producer signalled";
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u);
}

TEST_F(CudaSemaphoreTest, a_wait_is_satisfied_by_a_signal_through_cuda_on_another_stream_and_thread) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream consumer(rt);
  ScopedStream producer_stream(rt);
  ASSERT_OK(sem->wait(3, consumer.stream));
  // A signal queued behind the unsatisfied wait waits too.
  ASSERT_OK(sem->signal(4, consumer.stream));
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 2u);
  std::thread producer([&] {
    std::this_thread::sleep_for(30ms);
    Result<void> signalled = sem->signal(3, producer_stream.stream);
    EXPECT_TRUE(signalled) << signalled.error().message();
  });
  Result<void> synced = rt->stream_synchronize(consumer.stream);
  producer.join();
  ASSERT_TRUE(synced) << synced.error().message();
  EXPECT_EQ(payload(fd.get()), 4u);
}

TEST_F(CudaSemaphoreTest, a_wait_never_satisfied_fails_the_synchronisation_within_the_fakes_bound) {
  fake_cudart_set_wait_timeout_ms(200);
  Result<CudaExternalSemaphore> sem =
      CudaExternalSemaphore::import_win32(Type::D3D11Fence, reinterpret_cast<void *>(0x1234));
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream s(rt);
  ASSERT_OK(sem->wait(7, s.stream));
  const auto start = std::chrono::steady_clock::now();
  Result<void> synced = rt->stream_synchronize(s.stream);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(synced);
  EXPECT_EQ(synced.error().kind(), ErrorKind::Device);
  EXPECT_NE(synced.error().message().find(status_text(702)), std::string::npos) << synced.error().message();
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 2000ms);
  EXPECT_EQ(fake_cudart_violations(), 1u) << "a GPU would hang: the fake reports it";
  fake_cudart_reset_counters();
}

TEST_F(CudaSemaphoreTest, a_signal_that_does_not_rise_is_refused_naming_call_and_value) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream s(rt);
  ASSERT_OK(sem->signal(5, s.stream));
  for (std::uint64_t value : {3u, 5u}) {
    Result<void> refused = sem->signal(value, s.stream);
    ASSERT_FALSE(refused) << value;
    const std::string &m = refused.error().message();
    EXPECT_EQ(refused.error().kind(), ErrorKind::Device);
    EXPECT_NE(m.find(signal_name() + "(value " + std::to_string(value) + ")"), std::string::npos) << m;
    EXPECT_NE(m.find(status_text(1)), std::string::npos) << m;
  }
  // A producer's signal counts too.
  produce(fd.get(), 10);
  EXPECT_FALSE(sem->signal(9, s.stream));
  ASSERT_OK(sem->signal(11, s.stream));
  ASSERT_OK(rt->stream_synchronize(s.stream));
  EXPECT_EQ(payload(fd.get()), 11u);
}

TEST_F(CudaSemaphoreTest, a_binary_semaphore_is_signalled_and_a_wait_resets_it) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::OpaqueFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ScopedStream s(rt);
  ASSERT_OK(sem->signal(0, s.stream)); // the value means nothing to a binary semaphore
  ASSERT_OK(sem->wait(0, s.stream));
  ASSERT_OK(rt->stream_synchronize(s.stream));
  EXPECT_EQ(payload(fd.get()), 0u) << "the wait consumed the signal";
  ASSERT_OK(sem->wait(0, s.stream));
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 1u);
  produce(fd.get(), 1);
  ASSERT_OK(rt->stream_synchronize(s.stream));
}

TEST_F(CudaSemaphoreTest, a_fault_at_import_signal_or_wait_is_an_error_naming_it_and_leaks_nothing) {
  ScopedStream s(rt);
  {
    UniqueFd fd = semaphore_file();
    ASSERT_EQ(fake_cudart_set_fault(import_name().c_str(), 999, 1, 0), 0);
    Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
    ASSERT_FALSE(sem);
    EXPECT_EQ(sem.error().kind(), ErrorKind::Device);
    EXPECT_NE(sem.error().message().find(import_name() + "(TimelineSemaphoreFd, fd "), std::string::npos)
        << sem.error().message();
    EXPECT_NE(sem.error().message().find(status_text(999)), std::string::npos) << sem.error().message();
    EXPECT_TRUE(fd_is_open(fd.get()));
  }
  {
    // A driver that closes the fd it refused: the duplicate is not closed twice.
    UniqueFd fd = semaphore_file();
    ASSERT_EQ(fake_cudart_set_fault(import_name().c_str(), 304, 1, 1), 0);
    EXPECT_FALSE(CudaExternalSemaphore::import_fd(Type::OpaqueFd, fd.get()));
    EXPECT_TRUE(fd_is_open(fd.get()));
  }
  EXPECT_EQ(count_open_fds(), fds_before) << "the refused duplicate was not reclaimed";
  for (const std::string &call : {signal_name(), wait_name()}) {
    SCOPED_TRACE(call);
    UniqueFd fd = semaphore_file();
    Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
    ASSERT_TRUE(sem) << sem.error().message();
    ASSERT_EQ(fake_cudart_set_fault(call.c_str(), 999, 1, 0), 0);
    Result<void> queued = call == signal_name() ? sem->signal(1, s.stream) : sem->wait(1, s.stream);
    ASSERT_FALSE(queued);
    EXPECT_NE(queued.error().message().find(call + "(value 1) failed"), std::string::npos) << queued.error().message();
    EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u) << "nothing was queued";
    ASSERT_OK(rt->stream_synchronize(s.stream));
  }
}

TEST_F(CudaSemaphoreTest, a_fault_at_destroy_is_an_error_naming_it_and_not_retried) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  ASSERT_EQ(fake_cudart_set_fault(destroy_name().c_str(), 999, 1, 0), 0);
  Result<void> destroyed = sem->destroy();
  ASSERT_FALSE(destroyed);
  EXPECT_NE(destroyed.error().message().find(destroy_name() + " failed"), std::string::npos)
      << destroyed.error().message();
  // Given up once: no second attempt, not even from the destructor.
  EXPECT_FALSE(sem->valid());
  EXPECT_FALSE(sem->destroy());
  EXPECT_EQ(fake_cudart_symbol_calls(destroy_name().c_str()), 1u);
  // CUDA still holds what it failed to destroy (its duplicate included): the
  // fake lets it go, so the exit check stays meaningful for the rest.
  EXPECT_EQ(fake_cudart_live("external_semaphore"), 1u);
  fake_cudart_release_all();
  EXPECT_TRUE(fd_is_open(fd.get()));
}

TEST_F(CudaSemaphoreTest, a_refused_import_leaves_the_callers_fd_open_and_reclaims_the_duplicate) {
  UniqueFd short_file = semaphore_file(0, 4); // not a semaphore to the fake
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, short_file.get());
  ASSERT_FALSE(sem);
  EXPECT_NE(sem.error().message().find(status_text(1)), std::string::npos) << sem.error().message();
  EXPECT_TRUE(fd_is_open(short_file.get()));
}

TEST_F(CudaSemaphoreTest, destroying_with_a_wait_still_queued_is_reported_by_the_fake) {
  UniqueFd fd = semaphore_file();
  ScopedStream s(rt);
  {
    Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
    ASSERT_TRUE(sem) << sem.error().message();
    ASSERT_OK(sem->wait(1, s.stream));
  }
  EXPECT_EQ(fake_cudart_violations(), 1u);
  EXPECT_EQ(fake_cudart_pending_semaphore_ops(), 0u);
  fake_cudart_reset_counters();
}

TEST_F(CudaSemaphoreTest, a_destroyed_semaphore_refuses_work_without_calling_cuda) {
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get());
  ASSERT_TRUE(sem) << sem.error().message();
  CudaExternalSemaphore moved = std::move(*sem);
  EXPECT_FALSE(sem->valid());
  ASSERT_OK(moved.destroy());
  const unsigned long calls = fake_cudart_calls(nullptr);
  for (Result<void> r : {moved.signal(1, nullptr), moved.wait(1, nullptr), sem->signal(1, nullptr)}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::InvalidOperation) << r.error().message();
  }
  EXPECT_EQ(fake_cudart_calls(nullptr), calls);
}

TEST_F(CudaSemaphoreTest, CUDA_SYM_02_a_library_without_semaphores_serves_the_rest_and_names_what_is_missing) {
  const std::string file = driver_api() ? FAKE_CUDA_DRIVER_NOSEM_PATH : FAKE_CUDART_NOSEM_PATH;
  auto lib = load_same_api(std::vector<std::string>{file});
  ASSERT_TRUE(lib->available()) << lib->reason();
  const std::string missing = import_name();
  ASSERT_NE(lib->missing_semaphore_symbol(), nullptr);
  EXPECT_EQ(lib->missing_semaphore_symbol(), missing);
  UniqueFd fd = semaphore_file();
  const unsigned long calls = fake_cudart_calls(import_name().c_str());
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get(), lib);
  ASSERT_FALSE(sem);
  EXPECT_EQ(sem.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(sem.error().message().find("exports no " + missing), std::string::npos) << sem.error().message();
  EXPECT_EQ(fake_cudart_calls(import_name().c_str()), calls);
  // Everything else works.
  Result<CudaStream> stream = lib->stream_create();
  ASSERT_TRUE(stream) << stream.error().message();
  lib->stream_destroy(*stream);
  EXPECT_EQ(rt->missing_semaphore_symbol(), nullptr);
}

TEST_F(CudaSemaphoreTest, CUDA_SYM_02_a_runtime_without_the_v2_exports_uses_the_unsuffixed_ones) {
  // The runtime API's split only; the driver API has one name for each.
  auto lib = CudaRuntime::load(std::vector<std::string>{FAKE_CUDART_V1SEM_PATH});
  ASSERT_TRUE(lib->available()) << lib->reason();
  EXPECT_EQ(lib->missing_semaphore_symbol(), nullptr);
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get(), lib);
  ASSERT_TRUE(sem) << sem.error().message();
  ASSERT_OK(sem->signal(2, nullptr));
  ASSERT_OK(sem->wait(2, nullptr));
  ASSERT_OK(lib->stream_synchronize(nullptr));
  EXPECT_EQ(fake_cudart_symbol_calls("cudaSignalExternalSemaphoresAsync"), 1u);
  EXPECT_EQ(fake_cudart_symbol_calls("cudaWaitExternalSemaphoresAsync"), 1u);
  EXPECT_EQ(fake_cudart_symbol_calls("cudaSignalExternalSemaphoresAsync_v2"), 0u);
  EXPECT_EQ(payload(fd.get()), 2u);
}

TEST_F(CudaSemaphoreTest, without_cuda_an_import_is_refused_and_the_fd_left_alone) {
  auto none = CudaRuntime::load(std::vector<std::string>{"/nonexistent/libcudart.so"});
  ASSERT_FALSE(none->available());
  UniqueFd fd = semaphore_file();
  Result<CudaExternalSemaphore> sem = CudaExternalSemaphore::import_fd(Type::TimelineSemaphoreFd, fd.get(), none);
  ASSERT_FALSE(sem);
  EXPECT_EQ(sem.error().kind(), ErrorKind::NotImplemented) << sem.error().message();
  EXPECT_FALSE(CudaExternalSemaphore::import_win32(Type::D3D11Fence, reinterpret_cast<void *>(1), none));
  EXPECT_TRUE(fd_is_open(fd.get()));
}
