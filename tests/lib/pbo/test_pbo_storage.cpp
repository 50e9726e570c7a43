// SPDX-License-Identifier: Apache-2.0
// PboStorage against PboOps fakes: twins of the PBO seed tests (spec §6.1)
// that concern construction, maps, shapes, windows, identity and lifetime,
// run through PboStorage itself. Names keep the seed's test name after the
// spec ID.
#include "fake_pbo_ops.hpp"

#include <tensormem/pbo_storage.hpp>

#include <gtest/gtest.h>

#include <concepts>
#include <cstring>
#include <thread>
#include <vector>

using namespace tensormem;
using tmtest::FakePboOps;
using tmtest::PboFake;

namespace {

constexpr std::size_t kHuge = std::size_t{1} << 63;

Tensor wrap(std::uint32_t id, std::size_t size, Shape shape, const std::shared_ptr<FakePboOps> &ops,
            std::string name = {}) {
  auto t = from_pbo(id, size, std::move(shape), DType::U8, std::move(name), ops);
  EXPECT_TRUE(t.ok()) << (t ? "" : t.error().message());
  return std::move(t).value();
}

void expect_ramp_from(const Tensor &t, std::size_t origin) {
  auto m = t.map(CpuAccess::Read);
  ASSERT_TRUE(m) << m.error().message();
  auto bytes = m->bytes();
  ASSERT_EQ(bytes.size(), t.size_bytes());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(std::to_integer<std::size_t>(bytes[i]), (i + origin) % 256) << "byte " << i;
}

} // namespace

// ---- construction (PBO-NEW) -------------------------------------------------

TEST(PboNew, PBO_NEW_03_test_pbo_tensor_create_and_metadata) {
  auto ops = FakePboOps::make(24);
  Tensor t = wrap(42, 24, {2, 3, 4}, ops, "test_pbo");
  EXPECT_EQ(t.storage_kind(), StorageKind::Pbo);
  EXPECT_EQ(t.name(), "test_pbo");
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  auto pbo = pbo_storage_of(t);
  ASSERT_TRUE(pbo);
  EXPECT_EQ(pbo->buffer_id(), 42u);
  EXPECT_EQ(pbo->size_bytes(), 24u);
  EXPECT_FALSE(t.is_mapped());
  EXPECT_EQ(t.offset(), 0u);
  EXPECT_EQ(ops->maps, 0) << "construction maps nothing";
}

TEST(PboNew, PBO_NEW_03_the_default_name_is_pbo_tensor) {
  Tensor t = wrap(1, 8, {8}, FakePboOps::make(8));
  EXPECT_EQ(t.name(), "pbo_tensor");
}

TEST(PboNew, PBO_NEW_03_construction_takes_no_extra_reference_to_the_ops) {
  auto ops = FakePboOps::make(8);
  std::shared_ptr<PboOps> moved = ops;
  EXPECT_EQ(ops.use_count(), 2);
  auto t = from_pbo(3, 8, {8}, DType::U8, {}, std::move(moved));
  ASSERT_TRUE(t);
  EXPECT_EQ(ops.use_count(), 2);
}

TEST(PboNew, PBO_NEW_01_test_pbo_tensor_from_pbo_zero_size) {
  auto ops = FakePboOps::make(0);
  auto t = from_pbo(5, 0, {0}, DType::U8, {}, ops);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(t.error().size(), 0u);
  EXPECT_EQ(ops->deletes, 0) << "a refused wrap must not delete the caller's buffer";
}

TEST(PboNew, PBO_NEW_01_zero_size_is_reported_before_an_overflowing_shape) {
  auto t = from_pbo(5, 0, {kHuge, 4}, DType::U8, {}, FakePboOps::make(0));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidSize);
}

TEST(PboNew, PBO_NEW_01_test_pbo_tensor_from_pbo_size_mismatch) {
  auto ops = FakePboOps::make(24);
  auto t = from_pbo(6, 24, {2, 3, 5}, DType::U8, {}, ops);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::ShapeMismatch);
  const std::string &msg = t.error().message();
  EXPECT_NE(msg.find("30"), std::string::npos) << msg;
  EXPECT_NE(msg.find("24"), std::string::npos) << msg;
  EXPECT_NE(msg.find("u8"), std::string::npos) << msg;
  EXPECT_EQ(ops->deletes, 0);
}

TEST(PboNew, PBO_NEW_01_from_pbo_refuses_a_shape_whose_footprint_overflows) {
  // [2^63, 4] of bytes wraps to 0 in 64 bits: it must be InvalidShape, not a
  // tiny footprint that passes the allocation check (HAZ-07).
  auto t = from_pbo(7, 8, {kHuge, 4}, DType::U8, {}, FakePboOps::make(8));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidShape);
}

TEST(PboNew, PBO_NEW_02_a_larger_allocation_than_the_footprint_is_accepted) {
  auto ops = FakePboOps::make(64);
  Tensor t = wrap(8, 64, {3, 4}, ops);
  EXPECT_EQ(t.size_bytes(), 12u);
  EXPECT_EQ(t.capacity_bytes(), 64u);
  auto m = t.map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size_bytes(), 12u);
  EXPECT_EQ(ops->violations, 0) << "the GL map still covers the whole 64 bytes";
}

TEST(PboNew, PBO_NEW_04_test_pbo_tensor_new_returns_error) {
  // A PBO cannot be made without a buffer: GL name 0 and a missing ops
  // object are refused (new PBOs come from GlWorker::create_pbo).
  auto no_buffer = from_pbo(0, 8, {8}, DType::U8, {}, FakePboOps::make(8));
  ASSERT_FALSE(no_buffer);
  EXPECT_EQ(no_buffer.error().kind(), ErrorKind::InvalidArgument);
  auto no_ops = from_pbo(1, 8, {8}, DType::U8, {}, nullptr);
  ASSERT_FALSE(no_ops);
  EXPECT_EQ(no_ops.error().kind(), ErrorKind::InvalidArgument);
}

template <typename S>
concept ExportsFd = requires(S &s) {
  s.clone_fd();
};
template <typename S>
concept ImportsFd = requires {
  S::from_fd(0, std::size_t{8});
};

TEST(PboNew, PBO_NEW_05_test_pbo_tensor_fd_ops_return_error) {
  // The seed answers fd import/export with NotImplemented at run time; here a
  // PBO has no fd API at all, so the mistake cannot compile. The only host
  // export it has, pin_host, is refused.
  static_assert(!ExportsFd<PboStorage>);
  static_assert(!ImportsFd<PboStorage>);
  Tensor t = wrap(9, 8, {8}, FakePboOps::make(8));
  auto pin = t.pin_host(CpuAccess::Read);
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::NotImplemented);
}

TEST(PboNew, PBO_NEW_07_test_pbo_via_tensor_enum) {
  auto ops = FakePboOps::make(12);
  Tensor t = wrap(10, 12, {3, 4}, ops, "enum_test");
  EXPECT_EQ(t.storage_kind(), StorageKind::Pbo);
  EXPECT_EQ(t.name(), "enum_test");
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  {
    auto m = t.map(CpuAccess::ReadWrite);
    ASSERT_TRUE(m);
    std::memset(m->mutable_bytes().data(), 42, m->size_bytes());
  }
  auto m = t.map(CpuAccess::Read);
  ASSERT_TRUE(m);
  for (std::byte b : m->bytes())
    ASSERT_EQ(b, std::byte{42});
  EXPECT_EQ(ops->last_id, 10u);
}

// ---- maps (PBO-MAP, through PboStorage) ----------------------------------------

TEST(PboMap, PBO_MAP_04_test_pbo_tensor_map_write_read) {
  auto ops = FakePboOps::make(12);
  Tensor t = wrap(11, 12, {3, 4}, ops, "rw_test");
  {
    auto m = t.map(CpuAccess::ReadWrite);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->shape(), (Shape{3, 4}));
    EXPECT_TRUE(t.is_mapped());
    std::memset(m->mutable_bytes().data(), 0xAB, m->size_bytes());
    for (std::byte b : m->bytes())
      ASSERT_EQ(b, std::byte{0xAB});
    EXPECT_EQ(ops->last_access, CpuAccess::ReadWrite) << "the access reaches the ops";
  }
  EXPECT_FALSE(t.is_mapped());
  EXPECT_EQ(ops->maps, 1);
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_EQ(ops->violations, 0);
}

TEST(PboMap, PBO_MAP_01_test_pbo_tensor_double_map_fails) {
  auto ops = FakePboOps::make(24);
  Tensor t = wrap(12, 24, {2, 3, 4}, ops);
  auto first = t.map(CpuAccess::ReadWrite);
  ASSERT_TRUE(first);
  auto second = t.map(CpuAccess::ReadWrite);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind(), ErrorKind::Mapped); // PBO-MAP-13
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(ops->maps, 1);
}

TEST(PboMap, PBO_MAP_01_writers_and_readers_still_exclude_each_other) {
  auto ops = FakePboOps::make(8);
  Tensor t = wrap(13, 8, {8}, ops);
  {
    auto reader = t.map(CpuAccess::Read);
    ASSERT_TRUE(reader);
    auto writer = t.map(CpuAccess::ReadWrite);
    ASSERT_FALSE(writer);
    EXPECT_EQ(writer.error().kind(), ErrorKind::Mapped);
  }
  {
    auto writer = t.map(CpuAccess::Write);
    ASSERT_TRUE(writer);
    EXPECT_FALSE(t.map(CpuAccess::Read));
    EXPECT_FALSE(t.map(CpuAccess::ReadWrite));
  }
  EXPECT_TRUE(t.map(CpuAccess::Read));
  EXPECT_EQ(ops->violations, 0);
}

TEST(PboMap, PBO_MAP_05_read_maps_share_one_gl_mapping) {
  auto ops = FakePboOps::make(8);
  ops->fill_ramp();
  Tensor t = wrap(14, 8, {8}, ops);
  auto a = t.map(CpuAccess::Read);
  auto b = t.map(CpuAccess::Read);
  auto c = t.map(CpuAccess::Read);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(ops->maps, 1);
  EXPECT_EQ(ops->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(a->data(), b->data());
  EXPECT_EQ(0, std::memcmp(a->data(), c->data(), 8));
  a = Error::invalid_argument("drop");
  b = Error::invalid_argument("drop");
  EXPECT_EQ(ops->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  c = Error::invalid_argument("drop");
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

TEST(PboMap, PBO_MAP_05_readers_on_many_threads_share_one_gl_mapping) {
  auto ops = FakePboOps::make(4096);
  ops->fill_ramp();
  Tensor t = wrap(15, 4096, {4096}, ops);
  auto anchor = t.map(CpuAccess::Read); // keeps the mapping open for every thread
  ASSERT_TRUE(anchor);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 200; ++round) {
        auto crop = t.view(static_cast<std::size_t>(i) * 512, {512});
        auto m = crop->map(CpuAccess::Read);
        if (!m || std::to_integer<int>(m->bytes()[1]) != 1)
          bad.fetch_add(1);
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(ops->maps, 1);
  EXPECT_EQ(ops->unmaps, 0);
}

TEST(PboMap, PBO_MAP_06_a_failing_ops_map_is_returned_and_nothing_is_unmapped) {
  auto ops = FakePboOps::make(8, PboFake::Disconnected);
  Tensor t = wrap(16, 8, {8}, ops);
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Disconnected);
  EXPECT_EQ(ops->unmaps, 0);
  EXPECT_FALSE(t.is_mapped());
}

TEST(PboMap, PBO_MAP_07_short_mapping_is_refused_and_the_buffer_released) {
  auto ops = FakePboOps::make(32, PboFake::Short);
  Tensor t = wrap(17, 32, {32}, ops);
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(m.error().needed(), 32u);
  EXPECT_EQ(m.error().capacity(), 16u);
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

TEST(PboMap, PBO_MAP_08_null_mapping_releases_the_buffer_and_resets_state) {
  auto ops = FakePboOps::make(8, PboFake::Null);
  Tensor t = wrap(18, 8, {8}, ops);
  auto m = t.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
  auto again = t.map(CpuAccess::Read);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(ops->unmaps, 2) << "the buffer was not stranded";
}

TEST(PboMap, PBO_MAP_10_explicit_unmap_then_drop_releases_only_once) {
  auto ops = FakePboOps::make(8);
  Tensor t = wrap(19, 8, {8}, ops);
  auto survivor = t.map(CpuAccess::Read);
  ASSERT_TRUE(survivor);
  {
    auto second = t.map(CpuAccess::Read);
    ASSERT_TRUE(second);
    second->unmap();
  }
  EXPECT_EQ(ops->unmaps, 0);
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(survivor->bytes().size(), 8u);
  survivor = Error::invalid_argument("drop");
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_FALSE(t.is_mapped());
}

// ---- shapes and views (PBO-SHAPE, PBO-VIEW) ---------------------------------------

TEST(PboShape, PBO_SHAPE_01_test_pbo_tensor_reshape) {
  Tensor t = wrap(21, 24, {2, 3, 4}, FakePboOps::make(24));
  ASSERT_TRUE(t.reshape({4, 6}));
  EXPECT_EQ(t.shape(), (Shape{4, 6}));
  auto bad = t.reshape({100});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::ShapeMismatch);
  EXPECT_EQ(t.shape(), (Shape{4, 6}));
}

TEST(PboShape, PBO_SHAPE_01_empty_reshape_is_invalid_size_zero) {
  Tensor t = wrap(22, 8, {8}, FakePboOps::make(8));
  auto r = t.reshape({});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(r.error().size(), 0u);
}

TEST(PboShape, PBO_SHAPE_02_test_pbo_tensor_set_logical_shape_capacity_based) {
  Tensor t = wrap(23, 24, {24}, FakePboOps::make(24));
  ASSERT_TRUE(t.set_logical_shape({4, 5}));
  EXPECT_EQ(t.shape(), (Shape{4, 5}));
  ASSERT_TRUE(t.set_logical_shape({24}));
  auto too_big = t.set_logical_shape({5, 5});
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(too_big.error().needed(), 25u);
  EXPECT_EQ(too_big.error().capacity(), 24u);
  auto empty = t.set_logical_shape({});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind(), ErrorKind::InvalidSize);
}

TEST(PboShape, PBO_SHAPE_03_reshape_paths_refuse_an_overflowing_footprint) {
  Tensor t = wrap(24, 8, {8}, FakePboOps::make(8));
  auto r = t.reshape({kHuge, 4});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidShape);
  auto s = t.set_logical_shape({kHuge, 4});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidShape);
  auto v = t.view(0, {kHuge, 4});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().kind(), ErrorKind::InvalidShape);
}

TEST(PboView, PBO_VIEW_01_a_view_maps_its_window_of_the_whole_gl_mapping) {
  auto ops = FakePboOps::make(64);
  ops->fill_ramp();
  Tensor t = wrap(25, 64, {64}, ops);
  auto v = t.view(16, {8});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->identity(), t.identity());
  EXPECT_EQ(v->name(), t.name());
  EXPECT_EQ(v->offset(), 16u);
  expect_ramp_from(*v, 16);
  EXPECT_EQ(ops->violations, 0) << "the GL map covers the whole allocation (PBO-MAP-03)";
  auto past = t.view(60, {8});
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().kind(), ErrorKind::InsufficientCapacity);
}

TEST(PboView, PBO_VIEW_02_copies_share_the_buffer_and_the_map_state) {
  auto ops = FakePboOps::make(8);
  Tensor t = wrap(26, 8, {8}, ops);
  Tensor copy = t;
  auto w = t.map(CpuAccess::Write);
  ASSERT_TRUE(w);
  EXPECT_TRUE(copy.is_mapped());
  EXPECT_FALSE(copy.map(CpuAccess::Read));
  EXPECT_EQ(ops->maps, 1);
}

// ---- windows (PBO-PIN-05..07; one window offset per tensor, see deviations) -------

TEST(PboWindow, PBO_PIN_05_set_plane_offset_moves_the_pbo_map_window) {
  auto ops = FakePboOps::make(256);
  ops->fill_ramp();
  Tensor whole = wrap(31, 256, {256}, ops);
  (void)whole;
  // A second, independent whole-buffer wrap of the same fake.
  Tensor t = wrap(31, 256, {256}, ops);
  ASSERT_TRUE(t.set_logical_shape({64}));
  expect_ramp_from(t, 0);
  ASSERT_TRUE(t.set_offset(64));
  EXPECT_EQ(t.offset(), 64u);
  auto m = t.map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size_bytes(), 64u);
  EXPECT_NE(m->bytes()[0], std::byte{0});
  m = Error::invalid_argument("drop");
  expect_ramp_from(t, 64);
}

TEST(PboWindow, PBO_PIN_06_nested_pbo_subviews_do_not_compound_their_plane_offset) {
  auto ops = FakePboOps::make(256);
  ops->fill_ramp();
  Tensor t = wrap(32, 256, {256}, ops);
  auto outer = t.view(32, {128});
  ASSERT_TRUE(outer);
  EXPECT_EQ(outer->offset(), 32u);
  auto inner = outer->view(16, {64});
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->offset(), 48u);
  expect_ramp_from(*inner, 48);
}

TEST(PboWindow, PBO_PIN_07_set_format_clears_the_pbo_map_window) {
  // The seed's wrapper kept a second copy of the offset that set_format had
  // to clear in both places. A Tensor has one offset, so the reported window
  // and the mapped window cannot disagree: after a re-description the map
  // still starts where offset() says, and moving the window back to 0 maps
  // byte 0 (HAZ-16).
  auto ops = FakePboOps::make(256);
  ops->fill_ramp();
  Tensor t = wrap(33, 256, {256}, ops);
  ASSERT_TRUE(t.set_logical_shape({8, 8, 1}));
  ASSERT_TRUE(t.set_offset(64));
  ASSERT_TRUE(t.reshape({64}));
  EXPECT_EQ(t.offset(), 64u);
  expect_ramp_from(t, 64);
  ASSERT_TRUE(t.set_offset(0));
  EXPECT_EQ(t.offset(), 0u);
  expect_ramp_from(t, 0);
}

// ---- identity (PBO-ID) ------------------------------------------------------------

TEST(PboIdentity, PBO_ID_01_test_pbo_tensor_buffer_identity) {
  Tensor a = wrap(1, 8, {8}, FakePboOps::make(8));
  Tensor b = wrap(2, 8, {8}, FakePboOps::make(8));
  EXPECT_EQ(a.identity().kind, StorageKind::Pbo);
  EXPECT_EQ(a.identity().key, 1u);
  EXPECT_NE(a.identity().key, b.identity().key);
}

TEST(PboIdentity, PBO_ID_01_two_pbos_with_the_same_gl_name_share_an_identity) {
  Tensor a = wrap(7, 8, {8}, FakePboOps::make(8));
  Tensor b = wrap(7, 8, {8}, FakePboOps::make(8));
  EXPECT_EQ(a.identity(), b.identity());
  EXPECT_NE(a.storage(), b.storage());
}

// ---- lifetime and diagnostics (PBO-LIFE) -----------------------------------------

TEST(PboLife, PBO_LIFE_01_delete_runs_exactly_once_when_the_last_holder_goes) {
  auto ops = FakePboOps::make(16);
  auto t = from_pbo(40, 16, {16}, DType::U8, {}, ops);
  ASSERT_TRUE(t);
  auto view = t->view(4, {4});
  Tensor copy = *t;
  auto m = view->map(CpuAccess::Read);
  ASSERT_TRUE(m);
  t = Error::invalid_argument("drop");
  view = Error::invalid_argument("drop");
  copy = wrap(41, 16, {16}, FakePboOps::make(16));
  EXPECT_EQ(ops->deletes, 0) << "a live map holds the storage";
  m = Error::invalid_argument("drop");
  EXPECT_EQ(ops->deletes, 1);
  EXPECT_EQ(ops->last_id, 40u);
}

TEST(PboLife, PBO_LIFE_03_debug_names_the_buffer) {
  Tensor t = wrap(77, 16, {16}, FakePboOps::make(16), "dbg");
  std::string text = describe_pbo(t);
  EXPECT_NE(text.find("PboTensor"), std::string::npos) << text;
  EXPECT_NE(text.find("buffer_id: 77"), std::string::npos) << text;
  EXPECT_NE(text.find("size: 16"), std::string::npos) << text;
  EXPECT_NE(text.find("\"dbg\""), std::string::npos) << text;
  EXPECT_NE(pbo_storage_of(t)->describe().find("buffer_id: 77"), std::string::npos);
}

TEST(PboLife, PBO_LIFE_05_pin_host_is_refused_with_the_one_shared_message) {
  Tensor t = wrap(42, 8, {8}, FakePboOps::make(8));
  auto pin = t.pin_host(CpuAccess::Read);
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::NotImplemented);
  EXPECT_EQ(pin.error().message(), kPboPinHostRefusal);
  EXPECT_STREQ(kPboPinHostRefusal, TM_PBO_PIN_HOST_REFUSAL);
  EXPECT_NE(pin.error().message().find("map()"), std::string::npos);
  EXPECT_FALSE(t.is_mapped()) << "the refusal maps nothing";
}

TEST(PboLife, PBO_LIFE_04_maps_may_be_used_and_dropped_on_another_thread) {
  auto ops = FakePboOps::make(8);
  Tensor t = wrap(43, 8, {8}, ops);
  auto m = t.map(CpuAccess::Write);
  ASSERT_TRUE(m);
  HostView view = std::move(*m);
  std::thread([v = std::move(view)]() mutable { std::memset(v.mutable_bytes().data(), 9, v.size_bytes()); }).join();
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_EQ(ops->bytes()[7], std::byte{9});
}
