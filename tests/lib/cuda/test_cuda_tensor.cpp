// SPDX-License-Identifier: Apache-2.0
// Tensor integration: cuda_map()/cuda_map_mut() are nullopt at once without
// a handle, follow the tensor's window with one, fall back on failure, and
// never change what CPU maps do.
#include "cuda_test_util.hpp"

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/tensor.hpp>

#include <gtest/gtest.h>

#include <cstring>

using namespace tensormem;
using namespace cudatest;

namespace {

class CudaTensor : public ::testing::Test {
protected:
  void SetUp() override {
    reset_fake();
    ASSERT_EQ(fake_cudart_accepts_dmabuf(), 1) << kJetsonClassDriver;
  }
  void TearDown() override {
    EXPECT_EQ(fake_cudart_live(nullptr), 0u);
    reset_fake();
  }
};

std::shared_ptr<DmaBufStorage> memfd_storage(std::size_t size) {
  DmaBufOptions o;
  o.source = DmaBufSource::Memfd;
  return std::move(DmaBufStorage::allocate(size, o)).value();
}

} // namespace

TEST_F(CudaTensor, cuda_map_is_none_at_once_without_a_handle) {
  Tensor t = std::move(Tensor::allocate({16}, DType::U8)).value();
  EXPECT_EQ(t.cuda_handle(), nullptr);
  EXPECT_FALSE(t.cuda_map());
  EXPECT_FALSE(t.cuda_map_mut());
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaTensor, attach_refuses_a_null_handle_or_one_smaller_than_the_allocation) {
  Tensor t = std::move(Tensor::allocate({64}, DType::U8)).value();
  EXPECT_EQ(t.attach_cuda(nullptr).error().kind(), ErrorKind::InvalidArgument);
  auto small = CudaHandle::adopt_external(nullptr, nullptr, reinterpret_cast<void *>(0x1000), 32);
  Result<void> r = t.attach_cuda(small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(r.error().needed(), 64u);
  EXPECT_EQ(r.error().capacity(), 32u);
  EXPECT_EQ(t.cuda_handle(), nullptr);
}

TEST_F(CudaTensor, a_dmabuf_tensor_maps_for_cuda_and_the_bytes_meet_the_cpu_map) {
  auto storage = memfd_storage(4096);
  Tensor t = std::move(Tensor::wrap(storage, {64, 64}, DType::U8)).value();
  ASSERT_TRUE(t.attach_cuda(std::move(CudaHandle::import_dmabuf(*storage)).value()));
  auto rt = CudaRuntime::get();
  {
    std::optional<CudaMap> m = t.cuda_map_mut();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->length(), 4096u);
    std::vector<unsigned char> src(4096, 0x42);
    ASSERT_TRUE(rt->memcpy_host_to_device(m->device_ptr(), src.data(), src.size()));
  }
  Result<HostView> v = t.map(CpuAccess::Read);
  ASSERT_TRUE(v);
  for (std::byte b : v->bytes())
    ASSERT_EQ(b, std::byte{0x42});
}

TEST_F(CudaTensor, a_view_maps_its_own_window_and_copies_share_the_handle) {
  auto storage = memfd_storage(4096);
  Tensor t = std::move(Tensor::wrap(storage, {4096}, DType::U8)).value();
  ASSERT_TRUE(t.attach_cuda(std::move(CudaHandle::import_dmabuf(*storage)).value()));
  Tensor view = std::move(t.view(1024, {256})).value();
  Tensor copy = t;
  EXPECT_EQ(view.cuda_handle(), t.cuda_handle());
  EXPECT_EQ(copy.cuda_handle(), t.cuda_handle());
  std::optional<CudaMap> whole = t.cuda_map();
  std::optional<CudaMap> part = view.cuda_map();
  ASSERT_TRUE(whole && part);
  EXPECT_EQ(static_cast<std::byte *>(part->device_ptr()), static_cast<std::byte *>(whole->device_ptr()) + 1024);
  EXPECT_EQ(part->length(), 256u);
  // A tensor detached from CUDA goes back to "none"; the others keep it.
  copy.detach_cuda();
  EXPECT_FALSE(copy.cuda_map());
  EXPECT_TRUE(t.cuda_map());
}

TEST_F(CudaTensor, attaching_changes_nothing_about_cpu_maps) {
  auto storage = memfd_storage(256);
  Tensor t = std::move(Tensor::wrap(storage, {256}, DType::U8)).value();
  ASSERT_TRUE(t.attach_cuda(std::move(CudaHandle::import_dmabuf(*storage)).value()));
  std::optional<CudaMap> cuda = t.cuda_map_mut();
  ASSERT_TRUE(cuda);
  EXPECT_FALSE(t.is_mapped()) << "a CUDA map is not a CPU map";
  {
    Result<HostView> w = t.map(CpuAccess::Write);
    ASSERT_TRUE(w) << w.error().message();
    Result<HostView> r = t.try_map(CpuAccess::Read);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::Mapped) << "the writer still excludes readers, as without CUDA";
  }
  EXPECT_FALSE(t.is_mapped());
  Result<HostView> r1 = t.map(CpuAccess::Read);
  Result<HostView> r2 = t.map(CpuAccess::Read);
  EXPECT_TRUE(r1 && r2);
}

TEST_F(CudaTensor, a_failing_gl_map_falls_back_to_none) {
  auto storage = memfd_storage(64);
  Tensor t = std::move(Tensor::wrap(storage, {64}, DType::U8)).value();
  auto ops = std::make_shared<CountingGlOps>(false);
  ASSERT_TRUE(t.attach_cuda(CudaHandle::from_gl(reinterpret_cast<void *>(1), 64, ops)));
  EXPECT_FALSE(t.cuda_map());
  EXPECT_EQ(ops->maps, 1);
  EXPECT_TRUE(t.map(CpuAccess::Read)) << "the host map is the fallback";
}

TEST_F(CudaTensor, a_gl_mapping_shorter_than_the_window_is_released_and_none) {
  auto storage = memfd_storage(8192);
  Tensor t = std::move(Tensor::wrap(storage, {8192}, DType::U8)).value();
  // The GL side reports only 4096 bytes although the handle claims 8192.
  auto ops = std::make_shared<CountingGlOps>(true, reinterpret_cast<void *>(0x1000), 4096);
  ASSERT_TRUE(t.attach_cuda(CudaHandle::from_gl(reinterpret_cast<void *>(1), 8192, ops)));
  EXPECT_FALSE(t.cuda_map());
  EXPECT_EQ(ops->unmaps, 1);
}
