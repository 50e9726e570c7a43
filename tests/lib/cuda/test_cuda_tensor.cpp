// SPDX-License-Identifier: Apache-2.0
// Tensors and the cache of imports (cuda_import.hpp): cuda_map()/cuda_map_mut()
// are nullopt at once without a cached handle, follow the tensor's window with
// one, fall back on failure, and never change what CPU maps do; the cache
// holds one import per buffer until its storage dies.
#include "cuda_test_util.hpp"

#include <tensormem/cuda_import.hpp>
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
  EXPECT_EQ(cached_cuda_handle(*t.storage()), nullptr);
  EXPECT_FALSE(cuda_map(t));
  EXPECT_FALSE(cuda_map_mut(t));
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaTensor, attach_refuses_a_null_handle_or_one_smaller_than_the_allocation) {
  Tensor t = std::move(Tensor::allocate({64}, DType::U8)).value();
  EXPECT_EQ(attach_cuda(*t.storage(), nullptr).error().kind(), ErrorKind::InvalidArgument);
  auto small = CudaHandle::adopt_external(nullptr, nullptr, reinterpret_cast<void *>(0x1000), 32);
  Result<void> r = attach_cuda(*t.storage(), small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(r.error().needed(), 64u);
  EXPECT_EQ(r.error().capacity(), 32u);
  EXPECT_EQ(cached_cuda_handle(*t.storage()), nullptr);
}

TEST_F(CudaTensor, a_dmabuf_tensor_maps_for_cuda_and_the_bytes_meet_the_cpu_map) {
  auto storage = memfd_storage(4096);
  Tensor t = std::move(Tensor::wrap(storage, {64, 64}, DType::U8)).value();
  ASSERT_TRUE(attach_cuda(*t.storage(), std::move(import_cuda(*storage)).value()));
  auto rt = CudaRuntime::get();
  {
    std::optional<CudaMap> m = cuda_map_mut(t);
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
  ASSERT_TRUE(attach_cuda(*t.storage(), std::move(import_cuda(*storage)).value()));
  Tensor view = std::move(t.view(1024, {256})).value();
  Tensor copy = t;
  EXPECT_EQ(cached_cuda_handle(*view.storage()), cached_cuda_handle(*t.storage()));
  EXPECT_EQ(cached_cuda_handle(*copy.storage()), cached_cuda_handle(*t.storage()));
  std::optional<CudaMap> whole = cuda_map(t);
  std::optional<CudaMap> part = cuda_map(view);
  ASSERT_TRUE(whole && part);
  EXPECT_EQ(static_cast<std::byte *>(part->device_ptr()), static_cast<std::byte *>(whole->device_ptr()) + 1024);
  EXPECT_EQ(part->length(), 256u);
  // The handle belongs to the buffer: detaching it takes it from every
  // tensor of the storage, and a map taken before keeps it alive.
  detach_cuda(*copy.storage());
  EXPECT_FALSE(cuda_map(copy));
  EXPECT_FALSE(cuda_map(t));
  EXPECT_TRUE(whole->valid());
}

TEST_F(CudaTensor, a_tensor_wrapped_later_over_the_storage_finds_the_cached_import) {
  auto storage = memfd_storage(4096);
  bool imported = false;
  Result<std::shared_ptr<CudaHandle>> first = import_cuda_cached(*storage, nullptr, &imported);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_TRUE(imported);
  Result<std::shared_ptr<CudaHandle>> again = import_cuda_cached(*storage, nullptr, &imported);
  ASSERT_TRUE(again);
  EXPECT_FALSE(imported) << "one import per buffer";
  EXPECT_EQ(*again, *first);
  Tensor t = std::move(Tensor::wrap(storage, {4096}, DType::U8)).value();
  EXPECT_EQ(cached_cuda_handle(*t.storage()), *first);
  EXPECT_TRUE(cuda_map(t));
}

TEST_F(CudaTensor, the_cached_import_goes_with_its_storage) {
  std::weak_ptr<CudaHandle> cached;
  {
    auto storage = memfd_storage(4096);
    Result<std::shared_ptr<CudaHandle>> h = import_cuda_cached(*storage);
    ASSERT_TRUE(h) << h.error().message();
    cached = *h;
  }
  EXPECT_TRUE(cached.expired()) << "the storage's death dropped the cache's handle";
  EXPECT_EQ(fake_cudart_live(nullptr), 0u);
}

TEST_F(CudaTensor, heap_memory_has_no_cuda_import) {
  Tensor t = std::move(Tensor::allocate({16}, DType::U8)).value();
  Result<std::shared_ptr<CudaHandle>> h = import_cuda(*t.storage());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(h.error().message().find("Mem storage has no CUDA import"), std::string::npos) << h.error().message();
  EXPECT_EQ(fake_cudart_calls(nullptr), 0u);
}

TEST_F(CudaTensor, attaching_changes_nothing_about_cpu_maps) {
  auto storage = memfd_storage(256);
  Tensor t = std::move(Tensor::wrap(storage, {256}, DType::U8)).value();
  ASSERT_TRUE(attach_cuda(*t.storage(), std::move(import_cuda(*storage)).value()));
  std::optional<CudaMap> cuda = cuda_map_mut(t);
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
  ASSERT_TRUE(attach_cuda(*t.storage(), CudaHandle::from_gl(reinterpret_cast<void *>(1), 64, ops)));
  EXPECT_FALSE(cuda_map(t));
  EXPECT_EQ(ops->maps, 1);
  EXPECT_TRUE(t.map(CpuAccess::Read)) << "the host map is the fallback";
}

TEST_F(CudaTensor, a_gl_mapping_shorter_than_the_window_is_released_and_none) {
  auto storage = memfd_storage(8192);
  Tensor t = std::move(Tensor::wrap(storage, {8192}, DType::U8)).value();
  // The GL side reports only 4096 bytes although the handle claims 8192.
  auto ops = std::make_shared<CountingGlOps>(true, reinterpret_cast<void *>(0x1000), 4096);
  ASSERT_TRUE(attach_cuda(*t.storage(), CudaHandle::from_gl(reinterpret_cast<void *>(1), 8192, ops)));
  EXPECT_FALSE(cuda_map(t));
  EXPECT_EQ(ops->unmaps, 1);
}
