// SPDX-License-Identifier: Apache-2.0
// Tensor construction, identity, views, reshaping and windows (PBO-NEW,
// PBO-ID, PBO-SHAPE, PBO-VIEW, SHR-VIEW, SHR-WRAP, SHR-PIN, PBO-LIFE twins).
#include "fake_storage.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace tensormem;
using tmtest::FakeMode;
using tmtest::FakeStorage;

namespace {

constexpr std::size_t kHuge = std::size_t{1} << 63;

Tensor ramp_tensor(std::size_t size, Shape shape, std::shared_ptr<FakeStorage> *out = nullptr) {
  auto s = FakeStorage::make(size);
  s->fill_ramp();
  if (out)
    *out = s;
  return std::move(Tensor::wrap(s, std::move(shape), DType::U8)).value();
}

void expect_ramp_from(const Tensor &t, std::size_t origin) {
  auto m = t.map(CpuAccess::Read);
  ASSERT_TRUE(m) << m.error().message();
  auto bytes = m->bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(std::to_integer<std::size_t>(bytes[i]), (i + origin) % 256) << "byte " << i;
}

} // namespace

TEST(TensorNew, PBO_NEW_01_test_pbo_tensor_from_pbo_zero_size) {
  auto s = MemStorage::allocate(0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(s.error().size(), 0u);
  auto t = Tensor::wrap(FakeStorage::make(0), {0}, DType::U8);
  ASSERT_FALSE(t);
}

TEST(TensorNew, PBO_NEW_01_test_pbo_tensor_from_pbo_size_mismatch) {
  auto t = Tensor::wrap(FakeStorage::make(24), {2, 3, 5}, DType::U8);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::ShapeMismatch);
  EXPECT_NE(t.error().message().find("30"), std::string::npos);
  EXPECT_NE(t.error().message().find("24"), std::string::npos);
  EXPECT_NE(t.error().message().find("u8"), std::string::npos);
}

TEST(TensorNew, PBO_NEW_01_from_pbo_refuses_a_shape_whose_footprint_overflows) {
  auto t = Tensor::wrap(FakeStorage::make(8), {kHuge, 4}, DType::U8);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidShape);
}

TEST(TensorNew, PBO_NEW_02_a_larger_allocation_than_the_footprint_is_accepted) {
  auto t = Tensor::wrap(FakeStorage::make(64), {3, 5}, DType::U8);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size_bytes(), 15u);
  EXPECT_EQ(t->capacity_bytes(), 64u);
}

TEST(TensorNew, empty_shape_is_refused_at_construction) { // spec §7 item 18
  auto t = Tensor::wrap(FakeStorage::make(8), {}, DType::U8);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind(), ErrorKind::InvalidSize);
  EXPECT_FALSE(Tensor::wrap(nullptr, {1}, DType::U8));
}

TEST(TensorNew, PBO_NEW_03_test_pbo_tensor_create_and_metadata) {
  auto s = FakeStorage::make(24, FakeMode::Counting, 42);
  auto t = Tensor::wrap(s, {2, 3, 4}, DType::U8, "test_pbo");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::Pbo);
  EXPECT_EQ(t->name(), "test_pbo");
  EXPECT_EQ(t->shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t->identity().key, 42u);
  EXPECT_EQ(t->offset(), 0u);
  EXPECT_FALSE(t->is_mapped());
  auto unnamed = Tensor::wrap(s, {4}, DType::U8);
  EXPECT_EQ(unnamed->name(), "pbo_tensor"); // PBO-NEW-03 default name
}

TEST(TensorNew, PBO_NEW_07_test_pbo_via_tensor_enum) {
  auto t = Tensor::wrap(FakeStorage::make(12, FakeMode::Counting, 10), {3, 4}, DType::U8, "enum_test");
  ASSERT_TRUE(t);
  {
    auto m = t->map(CpuAccess::Write);
    ASSERT_TRUE(m);
    std::memset(m->mutable_bytes().data(), 42, m->size_bytes());
  }
  auto r = t->map(CpuAccess::Read);
  for (std::byte b : r->bytes())
    EXPECT_EQ(b, std::byte{42});
}

TEST(TensorNew, allocate_gives_zeroed_64_byte_aligned_heap_memory) {
  auto t = Tensor::allocate({3, 7}, DType::F32, "heap");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::Mem);
  EXPECT_EQ(t->size_bytes(), 84u);
  auto m = t->map(CpuAccess::Read);
  ASSERT_TRUE(m);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m->data()) % 64, 0u);
  for (std::byte b : m->bytes())
    EXPECT_EQ(b, std::byte{0});
  auto big = Tensor::allocate({kHuge, 4}, DType::U8);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().kind(), ErrorKind::InvalidShape);
}

TEST(TensorNew, adopted_host_bytes_are_mapped_as_they_are_and_released_once_by_the_last_holder) {
  alignas(64) static std::byte bytes[96];
  std::memset(bytes, 0x5a, sizeof bytes);
  int releases = 0;
  auto storage = MemStorage::adopt(bytes, sizeof bytes, [&releases] { ++releases; });
  ASSERT_TRUE(storage) << storage.error().message();
  EXPECT_EQ((*storage)->kind(), StorageKind::Mem);
  EXPECT_NE((*storage)->identity(), std::move(MemStorage::allocate(8)).value()->identity());
  auto t = Tensor::wrap(std::move(*storage), {96}, DType::U8);
  ASSERT_TRUE(t);
  {
    auto m = t->map(CpuAccess::ReadWrite);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->data(), bytes);
    EXPECT_EQ(m->bytes()[95], std::byte{0x5a}) << "adopted bytes are not zero-filled";
    m->mutable_bytes()[0] = std::byte{7};
  }
  EXPECT_EQ(bytes[0], std::byte{7});
  auto pin = t->pin_host(CpuAccess::Read);
  ASSERT_TRUE(pin);
  t = Error::invalid_argument("drop");
  EXPECT_EQ(releases, 0) << "a pin keeps the storage";
  pin->unmap();
  EXPECT_EQ(releases, 1);
}

TEST(TensorNew, adopt_releases_what_it_refuses) {
  int releases = 0;
  auto count = [&releases] { ++releases; };
  auto null = MemStorage::adopt(nullptr, 16, count);
  ASSERT_FALSE(null);
  EXPECT_EQ(null.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(releases, 1);
  std::byte one{};
  auto empty = MemStorage::adopt(&one, 0, count);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(releases, 2);
}

TEST(TensorIdentity, PBO_ID_01_test_pbo_tensor_buffer_identity) {
  auto a = Tensor::wrap(FakeStorage::make(8, FakeMode::Counting, 1), {8}, DType::U8);
  auto b = Tensor::wrap(FakeStorage::make(8, FakeMode::Counting, 2), {8}, DType::U8);
  EXPECT_EQ(a->identity().kind, StorageKind::Pbo);
  EXPECT_NE(a->identity(), b->identity());
}

TEST(TensorIdentity, PBO_ID_01_two_pbos_with_the_same_gl_name_share_an_identity) {
  auto a = Tensor::wrap(FakeStorage::make(8, FakeMode::Counting, 7), {8}, DType::U8);
  auto b = Tensor::wrap(FakeStorage::make(16, FakeMode::Counting, 7), {8}, DType::U8);
  EXPECT_EQ(a->identity(), b->identity());
}

TEST(TensorIdentity, SHR_ID_02_views_and_copies_carry_the_parent_identity) {
  auto t = Tensor::allocate({64}, DType::U8);
  Tensor copy = *t;
  auto v = t->view(8, {8});
  EXPECT_EQ(copy.identity(), t->identity());
  EXPECT_EQ(v->identity(), t->identity());
  auto other = Tensor::allocate({64}, DType::U8);
  EXPECT_NE(other->identity(), t->identity()); // heap buffers never share a key
}

TEST(TensorIdentity, PBO_VIEW_02_copies_share_the_buffer_not_the_bytes) {
  auto t = Tensor::allocate({4}, DType::U8);
  Tensor copy = *t;
  {
    auto m = copy.map(CpuAccess::Write);
    m->mutable_bytes()[0] = std::byte{9};
  }
  EXPECT_EQ(t->map(CpuAccess::Read)->bytes()[0], std::byte{9});
}

TEST(TensorShape, PBO_SHAPE_01_test_pbo_tensor_reshape) {
  auto t = Tensor::wrap(FakeStorage::make(24), {2, 3, 4}, DType::U8);
  ASSERT_TRUE(t->reshape({4, 6}));
  EXPECT_EQ(t->shape(), (Shape{4, 6}));
  auto bad = t->reshape({100});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::ShapeMismatch);
  EXPECT_EQ(t->shape(), (Shape{4, 6}));
  auto empty = t->reshape({});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind(), ErrorKind::InvalidSize);
}

TEST(TensorShape, reshape_is_strict_against_the_current_shape_not_the_padded_allocation) {
  // Spec §7 item 7: a stride-padded buffer can be reshaped to its own size.
  auto t = Tensor::wrap(FakeStorage::make(64), {3, 4}, DType::U8);
  EXPECT_TRUE(t->reshape({12}));
  EXPECT_FALSE(t->reshape({64}));
}

// SHR-SHAPE-03: the capacity-based way to re-shape; reshape above is the strict one.
TEST(TensorShape, PBO_SHAPE_02_test_pbo_tensor_set_logical_shape_capacity_based) {
  auto t = Tensor::wrap(FakeStorage::make(24), {24}, DType::U8);
  ASSERT_TRUE(t->set_logical_shape({4, 5}));
  EXPECT_EQ(t->shape(), (Shape{4, 5}));
  EXPECT_EQ(t->size_bytes(), 20u);
  ASSERT_TRUE(t->set_logical_shape({24}));
  auto r = t->set_logical_shape({5, 5});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(r.error().needed(), 25u);
  EXPECT_EQ(r.error().capacity(), 24u);
  EXPECT_EQ(t->set_logical_shape({}).error().kind(), ErrorKind::InvalidSize);
}

TEST(TensorShape, set_logical_shape_on_a_view_is_bounded_by_the_rest_of_the_allocation) {
  // Spec §7 item 8: the seed checked sub-views against the whole allocation.
  auto t = Tensor::wrap(FakeStorage::make(24), {24}, DType::U8);
  auto v = t->view(16, {4});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->capacity_bytes(), 8u);
  EXPECT_TRUE(v->set_logical_shape({8}));
  auto r = v->set_logical_shape({16});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().needed(), 16u);
  EXPECT_EQ(r.error().capacity(), 8u);
}

TEST(TensorShape, PBO_SHAPE_03_reshape_paths_refuse_an_overflowing_footprint) {
  auto t = Tensor::wrap(FakeStorage::make(8), {8}, DType::U8);
  EXPECT_EQ(t->reshape({kHuge, 4}).error().kind(), ErrorKind::InvalidShape);
  EXPECT_EQ(t->set_logical_shape({kHuge, 4}).error().kind(), ErrorKind::InvalidShape);
  EXPECT_EQ(t->view(0, {kHuge, 4}).error().kind(), ErrorKind::InvalidShape);
  EXPECT_EQ(t->shape(), (Shape{8}));
}

TEST(TensorView, SHR_VIEW_01_nested_pbo_subviews_do_not_compound_their_plane_offset) {
  Tensor t = ramp_tensor(256, {256});
  auto outer = t.view(32, {128});
  ASSERT_TRUE(outer);
  EXPECT_EQ(outer->offset(), 32u);
  auto inner = outer->view(16, {64});
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->offset(), 48u);
  expect_ramp_from(*inner, 48);
}

TEST(TensorView, SHR_VIEW_02_a_misaligned_offset_is_an_invalid_operation) {
  auto t = Tensor::allocate({16}, DType::F32);
  auto v = t->view(2, {2});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_TRUE(t->view(4, {2}));
}

TEST(TensorView, SHR_VIEW_02_overflowing_offsets_and_ends_are_invalid_size) {
  auto t = Tensor::allocate({64}, DType::U8);
  auto inner = t->view(8, {8});
  auto off = inner->view(SIZE_MAX - 4, {1});
  ASSERT_FALSE(off);
  EXPECT_EQ(off.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(off.error().size(), SIZE_MAX - 4);
  auto end = t->view(SIZE_MAX - 4, {8});
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(end.error().size(), 8u);
}

TEST(TensorView, SHR_VIEW_02_a_view_past_the_allocation_is_insufficient_capacity) {
  auto t = Tensor::allocate({64}, DType::U8);
  auto v = t->view(60, {8});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(v.error().needed(), 68u);
  EXPECT_EQ(v.error().capacity(), 64u);
}

TEST(TensorWindow, SHR_WRAP_01_set_plane_offset_moves_the_pbo_map_window) {
  std::shared_ptr<FakeStorage> s;
  Tensor whole = ramp_tensor(256, {256}, &s);
  auto t = Tensor::wrap(s, {256}, DType::U8); // an independent wrap of the same buffer
  ASSERT_TRUE(t->set_logical_shape({64}));
  expect_ramp_from(*t, 0);
  ASSERT_TRUE(t->set_offset(64));
  EXPECT_EQ(t->offset(), 64u);
  auto m = t->map(CpuAccess::Read);
  EXPECT_EQ(m->size_bytes(), 64u);
  EXPECT_NE(m->bytes()[0], std::byte{0});
  m->unmap();
  expect_ramp_from(*t, 64);
}

TEST(TensorWindow, set_offset_is_checked_and_leaves_the_window_on_failure) {
  auto t = Tensor::allocate({16}, DType::U16);
  ASSERT_TRUE(t->set_logical_shape({4}));
  EXPECT_EQ(t->set_offset(3).error().kind(), ErrorKind::InvalidOperation);
  auto past = t->set_offset(28);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(past.error().needed(), 36u);
  EXPECT_EQ(t->set_offset(SIZE_MAX - 1).error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(t->offset(), 0u);
  EXPECT_TRUE(t->set_offset(24));
}

TEST(TensorWindow, SHR_WRAP_04_map_bytes_is_checked_against_capacity) {
  Tensor t = ramp_tensor(64, {64});
  auto v = t.view(32, {8});
  auto padded = v->map_bytes(CpuAccess::Read, 32);
  ASSERT_TRUE(padded);
  EXPECT_EQ(padded->size_bytes(), 32u);
  EXPECT_EQ(padded->bytes()[31], std::byte{63});
  padded->unmap();
  auto over = v->map_bytes(CpuAccess::Read, 33);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(over.error().needed(), 33u);
  EXPECT_EQ(over.error().capacity(), 32u);
}

TEST(TensorPin, SHR_PIN_04_a_read_view_offers_no_writable_bytes) {
  auto t = Tensor::allocate({8}, DType::U8);
  auto m = t->map(CpuAccess::Read);
  EXPECT_TRUE(m->mutable_bytes().empty());
  EXPECT_EQ(m->bytes().size(), 8u);
  EXPECT_EQ(m->access(), CpuAccess::Read);
  EXPECT_EQ(m->dtype(), DType::U8);
}

TEST(TensorPin, SHR_PIN_03_heap_pins_outlive_maps_and_the_tensor) {
  auto t = Tensor::allocate({128}, DType::U8);
  auto v = t->view(64, {16});
  auto pin = v->pin_host(CpuAccess::ReadWrite);
  ASSERT_TRUE(pin);
  EXPECT_EQ(pin->length(), 16u);
  EXPECT_GE(pin->alignment(), 64u); // SHR-PIN-02
  std::weak_ptr<Storage> weak = t->storage();
  const std::byte *addr;
  {
    auto m = t->map(CpuAccess::Read);
    addr = m->data() + 64;
  }
  EXPECT_EQ(pin->data(), addr);
  t = Error::invalid_argument("drop");
  v = Error::invalid_argument("drop");
  EXPECT_FALSE(weak.expired());
  pin->data()[0] = std::byte{1};
  pin->unmap();
  EXPECT_TRUE(weak.expired());
}

TEST(TensorPin, PBO_LIFE_05_storages_without_a_stable_address_refuse_pin_host) {
  auto t = Tensor::wrap(FakeStorage::make(8), {8}, DType::U8);
  auto pin = t->pin_host(CpuAccess::Read);
  ASSERT_FALSE(pin);
  EXPECT_EQ(pin.error().kind(), ErrorKind::NotImplemented);
  EXPECT_NE(pin.error().message().find("map()"), std::string::npos);
}

TEST(TensorLife, PBO_LIFE_01_the_storage_goes_exactly_when_the_last_holder_does) {
  std::atomic<int> destroyed{0};
  auto s = FakeStorage::make(16);
  s->destroyed = &destroyed;
  auto t = Tensor::wrap(s, {16}, DType::U8);
  s.reset();
  auto view = t->view(4, {4});
  auto m = view->map(CpuAccess::Read);
  t = Error::invalid_argument("drop");
  view = Error::invalid_argument("drop");
  EXPECT_EQ(destroyed, 0) << "a live map keeps the storage";
  m->unmap();
  EXPECT_EQ(destroyed, 1);
}

TEST(TensorLife, PBO_LIFE_03_debug_names_the_buffer) {
  auto t = Tensor::wrap(FakeStorage::make(16, FakeMode::Counting, 77), {16}, DType::U8, "dbg");
  std::string text = t->describe();
  EXPECT_NE(text.find("\"dbg\""), std::string::npos) << text;
  EXPECT_NE(text.find("size: 16"), std::string::npos) << text;
  EXPECT_NE(text.find("key: 77"), std::string::npos) << text;
  EXPECT_NE(text.find("Pbo"), std::string::npos) << text;
}

TEST(StorageExport, heap_memory_exports_its_address_and_a_storage_without_an_export_refuses) {
  auto mem = std::move(MemStorage::allocate(100)).value();
  Result<StorageHandle> h = mem->export_handle();
  ASSERT_TRUE(h) << h.error().message();
  const auto *host = std::get_if<HostMemoryHandle>(&*h);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->size, 100u);
  HostPin pin = std::move(mem->pin_host(CpuAccess::Read)).value();
  EXPECT_EQ(host->data, pin.data());
  Result<StorageHandle> none = FakeStorage::make(16)->export_handle();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), ErrorKind::NotImplemented);
}
