// SPDX-License-Identifier: Apache-2.0
// CudaHandle and CudaMap: the seed's handle tests (GL kind with a counting
// CudaGlOps, external memory with synthetic pointers), DMA-BUF import through
// the fake runtime with real bytes, fd ownership on every outcome, failure
// injection at every call, and the destruction order.
#include "cuda_test_util.hpp"

#include <tensormem/cuda_import.hpp>
#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/log.hpp>

#include <gtest/gtest.h>

#include <vector>

#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace tensormem;
using namespace cudatest;

namespace {

class CudaHandleTest : public ::testing::Test {
protected:
  void SetUp() override {
    reset_fake();
    ASSERT_EQ(fake_cudart_accepts_dmabuf(), 1) << kJetsonClassDriver;
  }
  void TearDown() override {
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "a CUDA object leaked";
    reset_fake();
  }
};

std::shared_ptr<DmaBufStorage> memfd_storage(std::size_t size) {
  DmaBufOptions o;
  o.source = DmaBufSource::Memfd;
  auto s = DmaBufStorage::allocate(size, o);
  EXPECT_TRUE(s) << (s ? "" : s.error().message());
  return std::move(s).value();
}

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

} // namespace

// ---- Seed twins (§6.3) -------------------------------------------------

TEST_F(CudaHandleTest, CUDA_HANDLE_03_glbuffer_handle_debug_and_empty_map) {
  auto ops = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x1), 0, ops);
  std::string text = h->describe();
  EXPECT_NE(text.find("GlBuffer"), std::string::npos) << text;
  EXPECT_NE(text.find("size"), std::string::npos) << text;
  EXPECT_EQ(h->kind(), CudaHandleKind::GlBuffer);
}

// CUDA-MAP-02: a GL map is released by a GL unmap, external memory by nothing
// (below); the C-library unmap and the D3D11 write-back are checked in
// test_cuda_channel.cpp and test_cuda_d3d11.cpp.
TEST_F(CudaHandleTest, CUDA_HANDLE_04_cudamap_guard_unmaps_on_drop_for_glbuffer) {
  auto ops = std::make_shared<CountingGlOps>();
  {
    auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x1), 4096, ops);
    {
      Result<CudaMap> m = h->map();
      ASSERT_TRUE(m) << m.error().message();
      EXPECT_EQ(m->device_ptr(), reinterpret_cast<void *>(0x1000));
      EXPECT_EQ(m->length(), 4096u);
      EXPECT_FALSE(m->empty());
      EXPECT_FALSE(m->writable());
    }
    EXPECT_EQ(ops->unmaps, 1);
    EXPECT_EQ(ops->unregisters, 0);
    EXPECT_EQ(ops->last_unmapped, reinterpret_cast<void *>(0x1));
  }
  EXPECT_EQ(ops->unregisters, 1);
  EXPECT_EQ(ops->last_unregistered, reinterpret_cast<void *>(0x1));
}

TEST_F(CudaHandleTest, CUDA_HANDLE_05_map_mut_of_a_glbuffer_maps_and_unmaps_like_map) {
  auto ops = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x3), 4096, ops);
  {
    Result<CudaMap> m = h->map_mut();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->device_ptr(), reinterpret_cast<void *>(0x1000));
    EXPECT_EQ(m->length(), 4096u);
    EXPECT_TRUE(m->writable());
  }
  EXPECT_EQ(ops->unmaps, 1);
}

TEST_F(CudaHandleTest, CUDA_HANDLE_04_glbuffer_map_returns_none_when_ops_map_fails) {
  auto ops = std::make_shared<CountingGlOps>(false);
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x1), 4096, ops);
  Result<CudaMap> m = h->map();
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Device);
  EXPECT_EQ(ops->unmaps, 0);
}

// The seed leaked these handles so their destructor would not destroy a
// synthetic object; here a handle adopted without a runtime owns nothing.
TEST_F(CudaHandleTest, CUDA_HANDLE_04_external_mem_map_is_persistent_and_debug_names_kind) {
  auto h = CudaHandle::adopt_external(nullptr, nullptr, reinterpret_cast<void *>(0xCAFE0000), 8192);
  EXPECT_NE(h->describe().find("ExternalMem"), std::string::npos) << h->describe();
  {
    Result<CudaMap> m = h->map();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->device_ptr(), reinterpret_cast<void *>(0xCAFE0000));
    EXPECT_EQ(m->length(), 8192u);
    EXPECT_FALSE(m->empty());
  }
  fake_cudart_reset_counters();
  h.reset();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u) << "a handle without a runtime must call nothing";
}

TEST_F(CudaHandleTest, CUDA_HANDLE_04_external_mem_zero_len_map_is_empty) {
  auto h = CudaHandle::adopt_external(nullptr, nullptr, nullptr, 0);
  Result<CudaMap> m = h->map();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->length(), 0u);
  EXPECT_TRUE(m->empty());
  EXPECT_EQ(m->device_ptr(), nullptr);
}

// ---- CudaMap: exactly one release, moves, threads ------------------------

TEST_F(CudaHandleTest, CUDA_MAP_03_release_happens_exactly_once) {
  auto ops = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x5), 4096, ops);
  {
    CudaMap m = std::move(h->map()).value();
    m.release();
    EXPECT_EQ(ops->unmaps, 1);
    EXPECT_FALSE(m.valid());
    EXPECT_EQ(m.device_ptr(), nullptr);
    m.release();
  }
  EXPECT_EQ(ops->unmaps, 1);
  {
    CudaMap a = std::move(h->map()).value();
    CudaMap b = std::move(a);
    EXPECT_FALSE(a.valid());
    CudaMap c;
    c = std::move(b);
    EXPECT_TRUE(c.valid());
  }
  EXPECT_EQ(ops->unmaps, 2) << "a moved map releases once, from its last owner";
}

TEST_F(CudaHandleTest, CUDA_MAP_01_a_map_moves_to_another_thread_and_releases_there) {
  auto ops = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x6), 4096, ops);
  CudaMap m = std::move(h->map()).value();
  std::thread::id worker;
  std::thread t([&worker, mm = std::move(m)]() mutable {
    worker = std::this_thread::get_id();
    EXPECT_EQ(mm.length(), 4096u);
    mm.release();
  });
  t.join();
  ASSERT_EQ(ops->unmap_threads.size(), 1u);
  EXPECT_EQ(ops->unmap_threads[0], worker);
}

TEST_F(CudaHandleTest, a_map_keeps_its_handle_alive) {
  auto ops = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x7), 4096, ops);
  CudaMap m = std::move(h->map()).value();
  h.reset();
  EXPECT_EQ(ops->unregisters, 0) << "unregistered under a live map";
  m.release();
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_EQ(ops->unregisters, 1);
}

TEST_F(CudaHandleTest, a_gl_mapping_with_a_null_address_is_refused_and_unmapped) {
  auto ops = std::make_shared<CountingGlOps>(true, nullptr, 64);
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x8), 64, ops);
  Result<CudaMap> m = h->map();
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Device);
  EXPECT_EQ(ops->unmaps, 1);
}

// CUDA-HANDLE-02: a handle from a GL registration here, from an external-memory
// import in the CUDA_DMA tests below.
TEST_F(CudaHandleTest, CUDA_GL_04_registration_goes_through_the_gl_ops) {
  auto ops = std::make_shared<CountingGlOps>();
  Result<std::shared_ptr<CudaHandle>> h = CudaHandle::register_gl_buffer(ops, 9, 4096);
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(ops->registers, 1);
  EXPECT_EQ((*h)->kind(), CudaHandleKind::GlBuffer);
  h->reset();
  EXPECT_EQ(ops->unregisters, 1);
  EXPECT_EQ(ops->last_unregistered, reinterpret_cast<void *>(0x100 + 9));

  ops->register_ok = false;
  Result<std::shared_ptr<CudaHandle>> refused = CudaHandle::register_gl_buffer(ops, 10, 4096);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::Device);
  EXPECT_EQ(ops->unregisters, 1) << "nothing registered, nothing unregistered";
  EXPECT_EQ(CudaHandle::register_gl_buffer(nullptr, 1, 16).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(CudaHandle::register_gl_buffer(ops, 0, 16).error().kind(), ErrorKind::InvalidArgument);
}

TEST_F(CudaHandleTest, direct_gl_ops_reach_the_runtime_and_fail_cleanly_without_a_gl_context) {
  auto ops = make_direct_cuda_gl_ops(nullptr);
  Result<std::shared_ptr<CudaHandle>> h = CudaHandle::register_gl_buffer(ops, 3, 64);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::Device);
  EXPECT_EQ(fake_cudart_calls("cudaGraphicsGLRegisterBuffer"), 1u);
}

// ---- DMA-BUF import through the fake runtime ----------------------------

TEST_F(CudaHandleTest, CUDA_DMA_01_import_round_trips_real_bytes_both_ways) {
  auto storage = memfd_storage(4096);
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(*storage);
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ((*h)->kind(), CudaHandleKind::ExternalMemory);
  EXPECT_EQ((*h)->size(), 4096u);
  auto rt = CudaRuntime::get();

  // CPU → device: bytes written through the CPU map arrive at the device
  // pointer.
  {
    auto pin = storage->map(CpuAccess::Write);
    ASSERT_TRUE(pin);
    for (std::size_t i = 0; i < 4096; ++i)
      pin->data()[i] = std::byte(i * 7 & 0xff);
  }
  CudaMap m = std::move((*h)->map_mut()).value();
  ASSERT_EQ(m.length(), 4096u);
  std::vector<unsigned char> back(4096);
  ASSERT_TRUE(rt->memcpy_device_to_host(back.data(), m.device_ptr(), 4096));
  for (std::size_t i = 0; i < 4096; ++i)
    ASSERT_EQ(back[i], static_cast<unsigned char>(i * 7 & 0xff)) << i;

  // Device → CPU: a host-to-device copy is seen by the next CPU map.
  std::vector<unsigned char> pattern(4096);
  for (std::size_t i = 0; i < 4096; ++i)
    pattern[i] = static_cast<unsigned char>(255 - (i & 0xff));
  ASSERT_TRUE(rt->memcpy_host_to_device(m.device_ptr(), pattern.data(), 4096));
  {
    auto pin = storage->map(CpuAccess::Read);
    ASSERT_TRUE(pin);
    EXPECT_EQ(std::memcmp(pin->data(), pattern.data(), 4096), 0);
  }
  // Persistent: a second map is the same address and needs no runtime call.
  fake_cudart_reset_counters();
  CudaMap again = std::move((*h)->map()).value();
  EXPECT_EQ(again.device_ptr(), m.device_ptr());
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaHandleTest, CUDA_DMA_02_cuda_owns_a_dup_and_the_storage_fd_is_untouched) {
  auto storage = memfd_storage(8192);
  int before = count_open_fds();
  {
    auto h = import_cuda(*storage);
    ASSERT_TRUE(h) << h.error().message();
    int taken = fake_cudart_last_import_fd();
    EXPECT_NE(taken, storage->fd());
    EXPECT_TRUE(fd_is_open(taken));
    EXPECT_EQ(count_open_fds(), before + 1) << "the runtime holds exactly the dup";
    EXPECT_EQ(::fcntl(taken, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  }
  EXPECT_EQ(count_open_fds(), before) << "destroying the external memory closed the dup";
  EXPECT_TRUE(fd_is_open(storage->fd()));
  auto pin = storage->map(CpuAccess::ReadWrite);
  EXPECT_TRUE(pin) << "the storage still works after the import went";
}

TEST_F(CudaHandleTest, CUDA_DMA_03_the_descriptor_is_opaque_fd_with_a_zero_tail) {
  // The fake refuses any handle type but OpaqueFd (1), non-zero flags and a
  // non-zero reserved tail, and checks the mapped-buffer descriptor alike;
  // an accepted import is the observable proof.
  auto storage = memfd_storage(4096);
  auto h = import_cuda(*storage);
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(call_log(), "cudaImportExternalMemory cudaExternalMemoryGetMappedBuffer");
}

TEST_F(CudaHandleTest, CUDA_DMA_04_a_refused_import_reclaims_the_dup_and_leaves_the_fd_alone) {
  auto storage = memfd_storage(4096);
  int before = count_open_fds();
  fake_cudart_set_fault("cudaImportExternalMemory", 1, 1, 0);
  auto h = import_cuda(*storage);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::Device);
  // The message names the call and the number CUDA was given: the dup.
  EXPECT_NE(
      h.error().message().find(call_name("cudaImportExternalMemory", "cuImportExternalMemory") + "(OpaqueFd, fd "),
      std::string::npos)
      << h.error().message();
  EXPECT_NE(h.error().message().find(status_text(1)), std::string::npos) << h.error().message();
  EXPECT_EQ(count_open_fds(), before);
  EXPECT_TRUE(fd_is_open(storage->fd()));
  EXPECT_EQ(fake_cudart_calls("cudaExternalMemoryGetMappedBuffer"), 0u);
}

TEST_F(CudaHandleTest, HAZ_43_an_import_that_closes_the_fd_anyway_does_not_crash_or_double_close) {
  auto storage = memfd_storage(4096);
  int before = count_open_fds();
  fake_cudart_set_fault("cudaImportExternalMemory", 999, 1, /*close_fd=*/1);
  auto h = import_cuda(*storage);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::Device);
  EXPECT_EQ(count_open_fds(), before);
  EXPECT_TRUE(fd_is_open(storage->fd()));
  // The storage still maps: its own fd was never the one closed.
  EXPECT_TRUE(storage->map(CpuAccess::Read));
}

TEST_F(CudaHandleTest, HAZ_43_a_number_reused_after_the_runtime_closed_it_is_left_alone) {
  // The runtime closes the dup and, before our reclaim runs, the number is
  // taken by another file (the fake's mode 2 puts /dev/null there, as a
  // racing thread would). The reclaim must notice the different file and
  // leave it open (spec §7 item 15).
  auto storage = memfd_storage(4096);
  int probe = ::fcntl(0, F_DUPFD_CLOEXEC, 0); // the lowest free number: what the dup will get
  ASSERT_GE(probe, 0);
  ::close(probe);
  fake_cudart_set_fault("cudaImportExternalMemory", 999, 1, 2);
  auto h = import_cuda(*storage);
  ASSERT_FALSE(h);
  ASSERT_TRUE(fd_is_open(probe)) << "the reused number was closed by a blind close";
  struct stat st {
  }, null_st{};
  ASSERT_EQ(::fstat(probe, &st), 0);
  ASSERT_EQ(::stat("/dev/null", &null_st), 0);
  EXPECT_EQ(st.st_rdev, null_st.st_rdev);
  ::close(probe);
  EXPECT_TRUE(fd_is_open(storage->fd()));
}

TEST_F(CudaHandleTest, CUDA_DMA_05_a_refused_buffer_mapping_destroys_the_external_memory) {
  auto storage = memfd_storage(4096);
  int before = count_open_fds();
  fake_cudart_set_fault("cudaExternalMemoryGetMappedBuffer", 2, 1, 0);
  auto h = import_cuda(*storage);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::Device);
  EXPECT_NE(h.error().message().find(call_name("cudaExternalMemoryGetMappedBuffer", "cuExternalMemoryGetMappedBuffer")),
            std::string::npos)
      << h.error().message();
  EXPECT_EQ(call_log(), "cudaImportExternalMemory cudaExternalMemoryGetMappedBuffer cudaDestroyExternalMemory");
  EXPECT_EQ(count_open_fds(), before) << "the runtime's dup went with the external memory";
  EXPECT_TRUE(fd_is_open(storage->fd()));
}

TEST_F(CudaHandleTest, CUDA_DMA_02_a_failed_dup_is_an_io_error_before_any_runtime_call) {
  auto storage = memfd_storage(4096);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(count_open_fds()); // no new number is available
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  int probe = ::fcntl(storage->fd(), F_DUPFD_CLOEXEC, 0);
  if (probe >= 0) {
    ::close(probe);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
    GTEST_SKIP() << "RLIMIT_NOFILE is not enforced in this process (valgrind emulates the fd table), so a "
                    "failing dup cannot be provoked";
  }
  auto h = import_cuda(*storage);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::Io);
  EXPECT_EQ(h.error().os_error(), EMFILE);
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 0u);
}

TEST_F(CudaHandleTest, import_refuses_a_bad_fd_or_size_before_any_runtime_call) {
  EXPECT_EQ(CudaHandle::import_dma_fd(-1, 64).error().kind(), ErrorKind::InvalidArgument);
  auto storage = memfd_storage(64);
  auto zero = CudaHandle::import_dma_fd(storage->fd(), 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(fake_cudart_calls("cudaImportExternalMemory"), 0u);
  // A size beyond the buffer is the runtime's to refuse (the fake does).
  auto big = CudaHandle::import_dma_fd(storage->fd(), 1 << 20);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().kind(), ErrorKind::Device);
}

TEST_F(CudaHandleTest, CUDA_DROP_02_destruction_frees_the_mapped_buffer_before_destroying_the_memory) {
  auto storage = memfd_storage(4096);
  auto h = import_cuda(*storage);
  ASSERT_TRUE(h);
  fake_cudart_reset_counters();
  h->reset();
  EXPECT_EQ(call_log(), "cudaFree cudaDestroyExternalMemory");
  EXPECT_EQ(fake_cudart_violations(), 0u);
}

TEST_F(CudaHandleTest, CUDA_DROP_02_a_failing_free_still_destroys_the_memory) {
  auto storage = memfd_storage(4096);
  auto h = import_cuda(*storage);
  ASSERT_TRUE(h);
  fake_cudart_reset_counters();
  fake_cudart_set_fault("cudaFree", 1, 1, 0);
  h->reset();
  EXPECT_EQ(call_log(), "cudaFree cudaDestroyExternalMemory");
  // The fake reports the buffer that was never freed (and then drops it).
  EXPECT_EQ(fake_cudart_violations(), 1u);
}

TEST_F(CudaHandleTest, CUDA_DROP_02_a_failing_destroy_leaks_only_what_the_runtime_kept) {
  auto storage = memfd_storage(4096);
  auto h = import_cuda(*storage);
  ASSERT_TRUE(h);
  fake_cudart_set_fault("cudaDestroyExternalMemory", 1, 1, 0);
  h->reset();
  EXPECT_EQ(fake_cudart_live("mapped_buffer"), 0u);
  EXPECT_EQ(fake_cudart_live("external_memory"), 1u) << "the runtime refused to destroy it; nothing retries";
  fake_cudart_release_all();
}

// Every runtime call on the DMA-BUF path made to fail in turn: a clear error
// or a logged warning, nothing left alive in the runtime, the storage fd
// untouched, and the CPU map still working (the fallback).
TEST_F(CudaHandleTest, failure_injection_at_every_call_leaves_no_leaked_object) {
  std::vector<const char *> calls = {"cudaImportExternalMemory",
                                     "cudaExternalMemoryGetMappedBuffer",
                                     "cudaMemcpy",
                                     "cudaStreamCreate",
                                     "cudaStreamSynchronize",
                                     "cudaStreamDestroy",
                                     "cudaFree"};
  // The driver adds one call in front of every other: making its context
  // current.
  if (driver_api())
    calls.push_back("cuCtxPushCurrent_v2");
  auto rt = CudaRuntime::get();
  for (const char *fn : calls) {
    SCOPED_TRACE(fn);
    for (int close_fd = 0; close_fd <= 1; ++close_fd) {
      auto storage = memfd_storage(4096);
      int before = count_open_fds();
      fake_cudart_reset_counters();
      ASSERT_EQ(fake_cudart_set_fault(fn, 999, -1, close_fd), 0);
      bool failed = false;
      {
        auto h = import_cuda(*storage);
        if (!h) {
          failed = true;
          EXPECT_EQ(h.error().kind(), ErrorKind::Device);
          EXPECT_NE(h.error().message().find(status_text(999)), std::string::npos) << h.error().message();
        } else {
          CudaMap m = std::move((*h)->map_mut()).value();
          unsigned char byte = 0x5a;
          Result<void> copy = rt->memcpy_host_to_device(m.device_ptr(), &byte, 1);
          Result<CudaStream> stream = rt->stream_create();
          Result<void> sync = stream ? rt->stream_synchronize(*stream) : Result<void>();
          if (stream)
            rt->stream_destroy(*stream);
          failed = !copy || !stream || !sync;
        }
      }
      fake_cudart_clear_faults();
      if (std::strcmp(fn, "cudaStreamDestroy") == 0) {
        // A refused stream destroy is the one object the runtime keeps.
        EXPECT_EQ(fake_cudart_live("stream"), 1u);
        fake_cudart_release_all();
      } else if (std::strcmp(fn, "cudaFree") != 0) {
        EXPECT_TRUE(failed);
      }
      EXPECT_EQ(fake_cudart_live(nullptr), 0u);
      EXPECT_EQ(count_open_fds(), before);
      EXPECT_TRUE(fd_is_open(storage->fd()));
      EXPECT_TRUE(storage->map(CpuAccess::ReadWrite));
    }
  }
}

TEST_F(CudaHandleTest, CUDA_HANDLE_01_handles_are_shared_across_threads) {
  auto storage = memfd_storage(4096);
  std::shared_ptr<CudaHandle> h = std::move(import_cuda(*storage)).value();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([h, &ok] {
      for (int j = 0; j < 100; ++j) {
        Result<CudaMap> m = h->map();
        if (m && m->length() == 4096)
          ++ok;
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(ok, 800);
}
