// SPDX-License-Identifier: Apache-2.0
// The fake CUDA runtime as it comes, which is a desktop driver (no
// FAKE_CUDART_ACCEPT_DMABUF): cudaImportExternalMemory refuses a memfd as
// OpaqueFd memory. The import fails cleanly (the storage's fd untouched, the
// dup given to the runtime reclaimed, no CUDA object made), and a tensor left
// without a CUDA handle reads its bytes on the host path as before.
#include "cuda_test_util.hpp"

#include <tensormem/cuda_import.hpp>
#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/tensor.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <optional>
#include <vector>

using namespace tensormem;
using namespace cudatest;

namespace {

constexpr std::size_t kBytes = 4096;

class DesktopDriver : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(std::getenv("FAKE_CUDART_ACCEPT_DMABUF"), nullptr) << "this program checks the fake's default";
    reset_fake();
    ASSERT_EQ(fake_cudart_accepts_dmabuf(), 0);
    DmaBufOptions o;
    o.source = DmaBufSource::Memfd;
    auto s = DmaBufStorage::allocate(kBytes, o);
    ASSERT_TRUE(s) << s.error().message();
    storage = std::move(s).value();
    auto t = Tensor::wrap(storage, {kBytes}, DType::U8);
    ASSERT_TRUE(t) << t.error().message();
    tensor = std::move(t).value();
    auto w = tensor->map(CpuAccess::Write);
    ASSERT_TRUE(w) << w.error().message();
    for (std::size_t i = 0; i < kBytes; ++i)
      w->mutable_bytes()[i] = static_cast<std::byte>(i & 0xff); // a ramp (HAZ-70)
  }
  void TearDown() override {
    fake_cudart_set_accept_dmabuf(0);
    tensor.reset();
    storage.reset(); // an attached handle is cached for the buffer until its storage dies
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "a CUDA object outlived the test";
  }

  void expect_the_ramp_on_the_host_path() {
    auto r = tensor->map(CpuAccess::Read);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->bytes().size(), kBytes);
    for (std::size_t i = 0; i < kBytes; ++i)
      ASSERT_EQ(r->bytes()[i], static_cast<std::byte>(i & 0xff)) << i;
  }

  std::shared_ptr<DmaBufStorage> storage;
  std::optional<Tensor> tensor;
};

} // namespace

TEST_F(DesktopDriver, a_memfd_import_is_refused_with_invalid_value_and_leaves_nothing_behind) {
  const int fds = count_open_fds();
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(*storage);
  ASSERT_FALSE(h) << "a desktop driver does not import a memfd as OpaqueFd memory";
  EXPECT_EQ(h.error().kind(), ErrorKind::Device);
  EXPECT_NE(h.error().message().find(call_name("cudaImportExternalMemory", "cuImportExternalMemory") + "(OpaqueFd"),
            std::string::npos)
      << h.error().message();
  EXPECT_NE(h.error().message().find(status_text(1)), std::string::npos) << h.error().message();
  EXPECT_EQ(call_log(), "cudaImportExternalMemory") << "nothing is mapped or destroyed after a refused import";
  EXPECT_EQ(fake_cudart_last_import_fd(), -1);
  EXPECT_EQ(count_open_fds(), fds) << "the dup handed to the runtime was reclaimed";
  EXPECT_NE(::fcntl(storage->fd(), F_GETFD), -1) << "the storage's own fd is untouched";
}

TEST_F(DesktopDriver, a_tensor_left_without_cuda_reads_the_same_bytes_on_the_host_path) {
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(*storage);
  ASSERT_FALSE(h);
  EXPECT_EQ(cached_cuda_handle(*tensor->storage()), nullptr);
  EXPECT_FALSE(cuda_map(*tensor));
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy"), 0u);
  expect_the_ramp_on_the_host_path();
}

TEST_F(DesktopDriver, the_same_memfd_imports_once_the_fake_emulates_a_jetson_class_driver) {
  // The refusal above is the desktop mode and nothing else: switched to a
  // driver that takes DMA-BUF, the same storage imports and CUDA sees its bytes.
  fake_cudart_set_accept_dmabuf(1);
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(*storage);
  ASSERT_TRUE(h) << h.error().message();
  ASSERT_TRUE(attach_cuda(*tensor->storage(), *h));
  {
    std::optional<CudaMap> m = cuda_map(*tensor);
    ASSERT_TRUE(m);
    std::vector<unsigned char> back(kBytes);
    ASSERT_TRUE(CudaRuntime::get()->memcpy_device_to_host(back.data(), m->device_ptr(), kBytes));
    for (std::size_t i = 0; i < kBytes; ++i)
      ASSERT_EQ(back[i], static_cast<unsigned char>(i & 0xff)) << i;
  }
  expect_the_ramp_on_the_host_path();
}
