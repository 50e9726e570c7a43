// SPDX-License-Identifier: Apache-2.0
// The CUDA GL channel across the C ABI (ABI-CUDA-01..04, HAZ-57): the
// importer's checks, retain/release counts and forwarding (seed tests 10 and
// 11), and the producer side (into_client_parts → Detached) round-tripping
// into a handle on the far side.
#include "c_channel.h"
#include "cuda_test_util.hpp"

#include <gtest/gtest.h>

using namespace tensormem;
using namespace cudatest;

TEST(CudaChannel, ABI_CUDA_04_client_channel_ops_forward_through_the_clients_functions) {
  c_channel_record record{};
  tm_cuda_gl_ops c_ops = c_channel_ops(&record);
  {
    Result<std::shared_ptr<CudaGlOps>> ops = cuda_gl_ops_from_client(c_ops.state, c_ops.map, c_ops.unmap,
                                                                     c_ops.unregister);
    ASSERT_TRUE(ops) << ops.error().message();
    EXPECT_EQ(record.retains, 1);
    Result<CudaDeviceRange> one = (*ops)->map(reinterpret_cast<void *>(1));
    ASSERT_TRUE(one);
    EXPECT_EQ(one->ptr, reinterpret_cast<void *>(0x1000));
    EXPECT_EQ(one->length, 64u);
    Result<CudaDeviceRange> two = (*ops)->map(reinterpret_cast<void *>(2));
    ASSERT_FALSE(two);
    EXPECT_NE(two.error().message().find("code 7"), std::string::npos) << two.error().message();
    EXPECT_EQ(record.maps, 2);
    (*ops)->unmap(reinterpret_cast<void *>(1));
    (*ops)->unregister(reinterpret_cast<void *>(1));
    EXPECT_EQ(record.unmaps, 1);
    EXPECT_EQ(record.unregisters, 1);
    EXPECT_EQ(record.releases, 0);
  }
  EXPECT_EQ(record.releases, 1);
  EXPECT_EQ(record.retains, 1);
}

TEST(CudaChannel, ABI_CUDA_04_a_client_state_missing_a_part_is_refused_without_a_retain) {
  c_channel_record record{};
  const tm_cuda_gl_ops good = c_channel_ops(&record);
  for (int variant = 0; variant < 6; ++variant) {
    SCOPED_TRACE(variant);
    tm_cuda_gl_ops ops = good;
    switch (variant) {
    case 0: ops.state.ctx = nullptr; break;
    case 1: ops.state.retain = nullptr; break;
    case 2: ops.state.release = nullptr; break;
    case 3: ops.map = nullptr; break;
    case 4: ops.unmap = nullptr; break;
    case 5: ops.unregister = nullptr; break;
    }
    Result<std::shared_ptr<CudaGlOps>> r = cuda_gl_ops_from_client(ops);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::InvalidArgument);
    if (variant < 3) {
      EXPECT_EQ(r.error().message(), "CUDA client state must carry a non-NULL ctx, retain and release");
    }
    tm_cuda_gl_client_parts parts{ops, reinterpret_cast<void *>(1), 64};
    EXPECT_EQ(CudaHandle::from_client(parts).error().kind(), ErrorKind::InvalidArgument);
  }
  EXPECT_EQ(record.retains, 0);
  EXPECT_EQ(record.releases, 0);
}

TEST(CudaChannel, imported_ops_cannot_register_buffers) {
  c_channel_record record{};
  auto ops = std::move(cuda_gl_ops_from_client(c_channel_ops(&record))).value();
  Result<void *> r = ops->register_buffer(3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::NotImplemented);
}

// CUDA-DROP-01: a detached handle does nothing when it goes; a GL one unregisters once.
TEST(CudaChannel, ABI_CUDA_02_into_client_parts_detaches_the_handle_and_the_receiver_unregisters_once) {
  auto gl = std::make_shared<CountingGlOps>();
  auto producer = CudaHandle::from_gl(reinterpret_cast<void *>(0x11), 4096, gl);
  long ops_refs_before = gl.use_count();
  std::shared_ptr<CudaHandle> receiver;
  {
    Result<CudaGlClientParts> parts = producer->into_client_parts();
    ASSERT_TRUE(parts) << parts.error().message();
    EXPECT_EQ(producer->kind(), CudaHandleKind::Detached);
    EXPECT_NE(producer->describe().find("Detached"), std::string::npos);
    const tm_cuda_gl_client_parts &p = parts->parts();
    EXPECT_EQ(p.resource, reinterpret_cast<void *>(0x11));
    EXPECT_EQ(p.size, 4096u);
    // The far side adopts the registration; it retains the channel, so the
    // parts may go first (ABI-PARTS-03).
    Result<std::shared_ptr<CudaHandle>> adopted = CudaHandle::from_client(p);
    ASSERT_TRUE(adopted) << adopted.error().message();
    receiver = std::move(*adopted);
  }
  // HAZ-57: the detached producer does nothing when it goes.
  Result<CudaMap> detached_map = producer->map();
  ASSERT_FALSE(detached_map);
  EXPECT_EQ(detached_map.error().kind(), ErrorKind::InvalidOperation);
  producer.reset();
  EXPECT_EQ(gl->unregisters, 0);

  // Maps on the far side go through the channel to the producer's GL ops.
  {
    Result<CudaMap> m = receiver->map_mut();
    ASSERT_TRUE(m) << m.error().message();
    EXPECT_EQ(m->device_ptr(), reinterpret_cast<void *>(0x1000));
    EXPECT_EQ(m->length(), 4096u);
  }
  EXPECT_EQ(gl->maps, 1);
  EXPECT_EQ(gl->unmaps, 1);
  receiver.reset();
  EXPECT_EQ(gl->unregisters, 1);
  EXPECT_EQ(gl->last_unregistered, reinterpret_cast<void *>(0x11));
  // The channel is gone with its last reference: the GL ops are back to the
  // references they had (the test's own, nothing else).
  EXPECT_EQ(gl.use_count(), ops_refs_before - 1);
}

TEST(CudaChannel, ABI_CUDA_03_producer_map_reports_failure_as_1_and_leaves_the_out_values) {
  auto gl = std::make_shared<CountingGlOps>(false);
  auto producer = CudaHandle::from_gl(reinterpret_cast<void *>(0x12), 64, gl);
  CudaGlClientParts parts = std::move(producer->into_client_parts()).value();
  const tm_cuda_gl_ops &ops = parts.parts().ops;
  void *ptr = reinterpret_cast<void *>(0xdead);
  size_t len = 99;
  EXPECT_EQ(ops.map(ops.state.ctx, reinterpret_cast<void *>(0x12), &ptr, &len), TM_CUDA_FAILED);
  EXPECT_EQ(ptr, reinterpret_cast<void *>(0xdead));
  EXPECT_EQ(len, 99u);
  EXPECT_EQ(ops.map(ops.state.ctx, reinterpret_cast<void *>(0x12), nullptr, &len), TM_CUDA_FAILED);
  ops.unregister(ops.state.ctx, reinterpret_cast<void *>(0x12));
  EXPECT_EQ(gl->unregisters, 1);
}

TEST(CudaChannel, ABI_CUDA_02_only_gl_registrations_cross_and_a_refusal_keeps_the_handle) {
  auto ext = CudaHandle::adopt_external(nullptr, nullptr, reinterpret_cast<void *>(0xCAFE0000), 64);
  Result<CudaGlClientParts> parts = ext->into_client_parts();
  ASSERT_FALSE(parts);
  EXPECT_EQ(parts.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_NE(parts.error().message().find("GL-buffer registrations only"), std::string::npos);
  // Unlike the seed (spec §7 item 14) the handle is left as it was.
  EXPECT_EQ(ext->kind(), CudaHandleKind::ExternalMemory);
  EXPECT_TRUE(ext->map());

  auto gl = std::make_shared<CountingGlOps>();
  auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x13), 64, gl);
  CudaGlClientParts first = std::move(h->into_client_parts()).value();
  Result<CudaGlClientParts> second = h->into_client_parts();
  ASSERT_FALSE(second) << "a detached handle has nothing left to hand over";
  EXPECT_EQ(second.error().kind(), ErrorKind::InvalidArgument);
}

TEST(CudaChannel, ABI_STATE_03_moved_parts_release_their_reference_once) {
  auto gl = std::make_shared<CountingGlOps>();
  long base = gl.use_count();
  {
    auto h = CudaHandle::from_gl(reinterpret_cast<void *>(0x14), 64, gl);
    CudaGlClientParts a = std::move(h->into_client_parts()).value();
    CudaGlClientParts b = std::move(a);
    auto h2 = CudaHandle::from_gl(reinterpret_cast<void *>(0x15), 64, gl);
    CudaGlClientParts c = std::move(h2->into_client_parts()).value();
    c = std::move(b); // c's first channel is released here
  }
  EXPECT_EQ(gl.use_count(), base);
  EXPECT_EQ(gl->unregisters, 0) << "nobody imported the parts; no one owns the registration's unregister";
}
