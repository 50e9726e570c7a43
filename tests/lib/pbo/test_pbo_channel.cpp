// SPDX-License-Identifier: Apache-2.0
// The cross-boundary PBO channel (spec §3.1–3.6): twins of the seed's channel
// tests, the tm_* C entry points, and a second shared object that knows only
// tensormem.h importing a PBO through the table.
#include "fake_pbo_ops.hpp"

#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensormem.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>

using namespace tensormem;
using tmtest::FakePboOps;
using tmtest::PboFake;

namespace {

Tensor wrap(std::uint32_t id, std::size_t size, Shape shape, std::shared_ptr<PboOps> ops, std::string name = {}) {
  auto t = from_pbo(id, size, std::move(shape), DType::U8, std::move(name), std::move(ops));
  EXPECT_TRUE(t.ok()) << (t ? "" : t.error().message());
  return std::move(t).value();
}

// What a descriptor carries for a PBO (ABI-DESC-01): the buffer name and the
// address of the producing storage's table.
struct PboDescriptor {
  StorageKind kind;
  std::uint32_t handle;
  const tm_pbo_ops *ptr;
};

PboDescriptor describe(const Tensor &t) {
  auto pbo = pbo_storage_of(t);
  return {t.storage_kind(), pbo->buffer_id(), pbo->client_table()};
}

// The consumer side: from the descriptor alone (plus the size and shape a
// real descriptor also carries).
Result<Tensor> import_descriptor(const PboDescriptor &d, std::size_t size, Shape shape) {
  Result<tm_pbo_ops> table = read_pbo_table(d.ptr);
  if (!table)
    return std::move(table).error();
  return from_client_pbo(table->state, table->map, table->unmap, d.handle, size, std::move(shape), DType::U8);
}

std::shared_ptr<PboOps> import_through_the_table(const Tensor &producer) {
  auto table = read_pbo_table(pbo_storage_of(producer)->client_table());
  EXPECT_TRUE(table);
  auto ops = client_state_pbo_ops(table->state, table->map, table->unmap);
  EXPECT_TRUE(ops) << (ops ? "" : ops.error().message());
  return std::move(ops).value();
}

} // namespace

// ---- ABI-DESC --------------------------------------------------------------

TEST(PboChannel, ABI_DESC_01_cross_package_pbo_round_trips_through_tensor_desc_with_real_bytes) {
  auto ops = FakePboOps::make(8);
  std::optional<Tensor> producer = wrap(42, 8, {8}, ops);
  {
    auto m = producer->map(CpuAccess::Write);
    ASSERT_TRUE(m);
    for (int i = 0; i < 8; ++i)
      m->mutable_bytes()[i] = std::byte(i + 1);
  }
  PboDescriptor desc = describe(*producer);
  EXPECT_EQ(desc.kind, StorageKind::Pbo);
  EXPECT_EQ(desc.handle, 42u);
  ASSERT_NE(desc.ptr, nullptr);

  auto imported = import_descriptor(desc, 8, {8});
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_EQ(imported->storage_kind(), StorageKind::Pbo);
  EXPECT_EQ(imported->identity(), producer->identity());
  auto m = imported->map(CpuAccess::Read);
  ASSERT_TRUE(m) << m.error().message();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(std::to_integer<int>(m->bytes()[i]), i + 1);
  EXPECT_EQ(m->data(), ops->bytes().data()) << "the same buffer, not a copy";
}

// HAZ-08: GL names repeat, so an import follows the table address, never the name.
TEST(PboChannel, ABI_DESC_02_two_pbo_tensors_sharing_a_buffer_id_do_not_cross_resolve) {
  auto ops_a = FakePboOps::make(4);
  auto ops_b = FakePboOps::make(4);
  ops_a->fill(0xAA);
  ops_b->fill(0xBB);
  Tensor a = wrap(7, 4, {4}, ops_a);
  Tensor b = wrap(7, 4, {4}, ops_b);
  PboDescriptor da = describe(a);
  PboDescriptor db = describe(b);
  EXPECT_EQ(da.handle, db.handle);
  EXPECT_NE(da.ptr, db.ptr);
  // Import b first: with a registry keyed by id, the later one would win.
  auto ib = import_descriptor(db, 4, {4});
  auto ia = import_descriptor(da, 4, {4});
  ASSERT_TRUE(ia && ib);
  auto ma = ia->map(CpuAccess::Read);
  auto mb = ib->map(CpuAccess::Read);
  ASSERT_TRUE(ma && mb);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ma->bytes()[i], std::byte{0xAA});
    EXPECT_EQ(mb->bytes()[i], std::byte{0xBB});
  }
}

// ---- ABI-PBO ------------------------------------------------------------------

// HAZ-09: the table borrows; it keeps neither the buffer nor the ops alive.
TEST(PboChannel, ABI_PBO_05_dropping_the_producing_pbo_tensor_leaks_nothing_the_vtable_touched) {
  auto ops = FakePboOps::make(8);
  std::shared_ptr<PboOps> second = ops;
  EXPECT_EQ(ops.use_count(), 2);
  std::optional<Tensor> producer = wrap(99, 8, {8}, std::move(second));
  EXPECT_EQ(ops.use_count(), 2);
  PboDescriptor desc = describe(*producer); // builds the table
  EXPECT_NE(desc.ptr, nullptr);
  EXPECT_EQ(ops.use_count(), 2);
  EXPECT_EQ(ops->deletes, 0);
  producer.reset();
  EXPECT_EQ(ops.use_count(), 1);
  EXPECT_EQ(ops->deletes, 1);
}

TEST(PboChannel, ABI_PBO_02_the_table_lives_in_the_storage_and_is_built_once) {
  Tensor t = wrap(3, 8, {8}, FakePboOps::make(8));
  auto pbo = pbo_storage_of(t);
  const long refs = pbo.use_count();
  const tm_pbo_ops *first = pbo->client_table();
  const tm_pbo_ops *again = pbo->client_table();
  EXPECT_EQ(first, again);
  const auto *begin = reinterpret_cast<const char *>(pbo.get());
  const auto *at = reinterpret_cast<const char *>(first);
  EXPECT_TRUE(at >= begin && at < begin + sizeof(PboStorage)) << "stored inside the storage";
  // ABI-PBO-03/04: ctx is the storage; the table holds no reference.
  EXPECT_EQ(first->state.ctx, static_cast<const void *>(pbo.get()));
  EXPECT_EQ(pbo.use_count(), refs);
  EXPECT_EQ(pbo->channel_references(), 0u);
}

TEST(PboChannel, ABI_PBO_06_the_table_forwards_map_and_unmap_with_codes) {
  auto ops = FakePboOps::make(8);
  ops->fill_ramp();
  Tensor t = wrap(5, 8, {8}, ops);
  const tm_pbo_ops *table = pbo_storage_of(t)->client_table();
  std::uint8_t *ptr = nullptr;
  std::size_t len = 0;
  ASSERT_EQ(table->map(table->state.ctx, 5, 8, &ptr, &len), TM_PBO_OK);
  EXPECT_EQ(ptr, reinterpret_cast<std::uint8_t *>(ops->bytes().data()));
  EXPECT_EQ(len, 8u);
  EXPECT_EQ(ptr[3], 3);
  EXPECT_EQ(table->unmap(table->state.ctx, 5), TM_PBO_OK);
  EXPECT_EQ(ops->maps, 1);
  EXPECT_EQ(ops->unmaps, 1);
  // A table answers for its own buffer only.
  EXPECT_NE(table->map(table->state.ctx, 6, 8, &ptr, &len), TM_PBO_OK);
  EXPECT_NE(table->map(table->state.ctx, 5, 8, nullptr, &len), TM_PBO_OK);
  // Nor for more than its buffer (found by tests/fuzz/fuzz_capi.cpp: a
  // caller that wrapped the table with a larger size got bytes past it).
  EXPECT_NE(table->map(table->state.ctx, 5, 9, &ptr, &len), TM_PBO_OK);
  EXPECT_EQ(ops->maps, 1);
}

TEST(PboChannel, ABI_PBO_07_a_descriptor_without_a_table_is_invalid_argument) {
  auto parts = read_pbo_table(nullptr);
  ASSERT_FALSE(parts);
  EXPECT_EQ(parts.error().kind(), ErrorKind::InvalidArgument);
}

// ---- ABI-ERR ------------------------------------------------------------------

TEST(PboChannel, ABI_ERR_02_a_disconnected_producer_is_reported_as_disconnected_across_the_vtable) {
  auto producer = std::make_optional(wrap(4, 16, {16}, FakePboOps::make(16, PboFake::Disconnected)));
  auto imported = import_through_the_table(*producer);
  producer.reset();
  auto m = imported->map_buffer(4, 16, CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Disconnected);
  auto u = imported->unmap_buffer(4);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind(), ErrorKind::Disconnected);
}

TEST(PboChannel, ABI_ERR_02_other_producer_failures_cross_the_vtable_as_a_generic_errno) {
  auto producer = std::make_optional(wrap(4, 16, {16}, FakePboOps::make(16, PboFake::Failing)));
  auto imported = import_through_the_table(*producer);
  producer.reset();
  auto m = imported->map_buffer(4, 16, CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::NotImplemented);
  EXPECT_TRUE(m.error().message().ends_with("errno 1")) << m.error().message();
  auto u = imported->unmap_buffer(4);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind(), ErrorKind::NotImplemented);
  EXPECT_TRUE(u.error().message().ends_with("errno 1")) << u.error().message();
}

extern "C" {
static int tm_test_map_fails_with_7(const void *, uint32_t, size_t, uint8_t **, size_t *) { return 7; }
static int tm_test_unmap_fails_with_7(const void *, uint32_t) { return 7; }
}

TEST(PboChannel, ABI_ERR_02_any_non_zero_code_becomes_not_implemented_naming_it) {
  Tensor donor = wrap(8, 8, {8}, FakePboOps::make(8));
  const tm_pbo_ops *table = pbo_storage_of(donor)->client_table();
  auto ops = client_state_pbo_ops(table->state, tm_test_map_fails_with_7, tm_test_unmap_fails_with_7);
  ASSERT_TRUE(ops);
  auto m = (*ops)->map_buffer(8, 8, CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::NotImplemented);
  EXPECT_TRUE(m.error().message().ends_with("errno 7")) << m.error().message();
}

// ---- ABI-ASM ------------------------------------------------------------------

// HAZ-10: the importer retains the channel itself, so it outlives the producer.
// HAZ-11: only the producer's storage deletes the buffer, once.
TEST(PboChannel, ABI_ASM_02_an_imported_channel_keeps_the_producers_buffer_alive) {
  auto ops = FakePboOps::make(64);
  std::optional<Tensor> producer = wrap(21, 64, {64}, ops);
  auto imported = import_through_the_table(*producer);
  std::optional<Tensor> child = wrap(21, 64, {64}, std::move(imported));
  producer.reset();
  EXPECT_EQ(ops->deletes, 0);
  {
    auto m = child->map(CpuAccess::ReadWrite);
    ASSERT_TRUE(m) << m.error().message();
    m->mutable_bytes()[0] = std::byte{0xA5};
  }
  EXPECT_EQ(ops->maps, 1);
  EXPECT_EQ(ops->unmaps, 1);
  EXPECT_EQ(ops->bytes()[0], std::byte{0xA5});
  child.reset();
  EXPECT_EQ(ops->deletes, 1) << "released exactly once, and the importer deleted nothing itself";
}

// ABI-STATE-02: each retain adds one reference and each release drops one.
TEST(PboChannel, ABI_ASM_02_retain_and_release_are_balanced_per_importer) {
  Tensor producer = wrap(22, 8, {8}, FakePboOps::make(8));
  auto pbo = pbo_storage_of(producer);
  {
    auto one = import_through_the_table(producer);
    auto two = import_through_the_table(producer);
    EXPECT_EQ(pbo->channel_references(), 2u);
  }
  EXPECT_EQ(pbo->channel_references(), 0u);
}

TEST(PboChannel, ABI_ASM_04_from_client_pbo_refuses_an_incomplete_channel) {
  // A genuine state from a live tensor (HAZ-71): a regression that retained
  // anyway would show up as a channel reference here, not as a wild pointer.
  auto parts = into_client_parts(wrap(9, 16, {16}, FakePboOps::make(16)));
  ASSERT_TRUE(parts);
  const tm_pbo_ops &genuine = parts->ops();
  auto *storage = static_cast<const PboStorage *>(genuine.state.ctx);
  for (int variant = 0; variant < 3; ++variant) {
    tm_client_state state = genuine.state;
    if (variant == 0)
      state.ctx = nullptr;
    if (variant == 1)
      state.retain = nullptr;
    if (variant == 2)
      state.release = nullptr;
    auto t = from_client_pbo(state, genuine.map, genuine.unmap, 9, 16, {16}, DType::U8);
    ASSERT_FALSE(t) << "variant " << variant;
    EXPECT_EQ(t.error().kind(), ErrorKind::InvalidArgument) << "variant " << variant;
    EXPECT_EQ(storage->channel_references(), 0u) << "variant " << variant << " retained";
  }
}

// HAZ-12: a state without retain or release is refused before anything is retained.
TEST(PboChannel, ABI_ASM_01_a_client_state_missing_any_part_is_refused) {
  auto parts = into_client_parts(wrap(9, 16, {16}, FakePboOps::make(16)));
  ASSERT_TRUE(parts);
  const tm_pbo_ops &genuine = parts->ops();
  auto *storage = static_cast<const PboStorage *>(genuine.state.ctx);
  for (int variant = 0; variant < 5; ++variant) {
    tm_pbo_ops table = genuine;
    switch (variant) {
    case 0: table.state.ctx = nullptr; break;
    case 1: table.state.retain = nullptr; break;
    case 2: table.state.release = nullptr; break;
    case 3: table.map = nullptr; break;
    case 4: table.unmap = nullptr; break;
    }
    auto ops = client_state_pbo_ops(table.state, table.map, table.unmap);
    ASSERT_FALSE(ops) << "variant " << variant;
    EXPECT_EQ(ops.error().kind(), ErrorKind::InvalidArgument) << "variant " << variant;
    EXPECT_EQ(storage->channel_references(), 0u) << "variant " << variant << " retained";
  }
  // The genuine state itself still works, so the refusals were about the holes.
  auto ok = client_state_pbo_ops(genuine.state, genuine.map, genuine.unmap);
  ASSERT_TRUE(ok);
  EXPECT_EQ(storage->channel_references(), 1u);
}

TEST(PboChannel, ABI_ASM_03_the_clients_reported_mapping_is_validated_by_the_importer) {
  // A client that claims half the bytes: the importing storage refuses it
  // and releases the buffer (PBO-MAP-07, HAZ-01).
  auto ops = FakePboOps::make(32, PboFake::Short);
  Tensor producer = wrap(23, 32, {32}, ops);
  Tensor child = wrap(23, 32, {32}, import_through_the_table(producer));
  auto m = child.map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(ops->unmaps, 1);
}

// ---- ABI-PARTS ----------------------------------------------------------------

// HAZ-15: the parts own a reference until the callee has retained its own.
TEST(PboChannel, ABI_PARTS_01_client_parts_hand_over_a_channel_the_callee_retains) {
  auto ops = FakePboOps::make(32);
  auto parts = into_client_parts(wrap(7, 32, {32}, ops));
  ASSERT_TRUE(parts) << parts.error().message();
  EXPECT_EQ(ops->deletes, 0) << "the parts still hold a live channel";
  EXPECT_EQ(parts->buffer_id(), 7u);
  EXPECT_EQ(parts->size(), 32u);
  EXPECT_EQ(parts->shape(), (Shape{32}));
  auto assembled = client_state_pbo_ops(parts->state(), parts->ops().map, parts->ops().unmap);
  ASSERT_TRUE(assembled);
  parts = Error::invalid_argument("drop the parts");
  EXPECT_EQ(ops->deletes, 0);
  auto m = (*assembled)->map_buffer(7, 32, CpuAccess::ReadWrite);
  ASSERT_TRUE(m);
  ASSERT_TRUE((*assembled)->unmap_buffer(7));
  EXPECT_EQ(ops->maps, 1);
  assembled = Error::invalid_argument("drop the ops");
  EXPECT_EQ(ops->deletes, 1);
}

// HAZ-14: a window off the buffer's origin cannot cross the C entry point.
TEST(PboChannel, ABI_PARTS_02_client_parts_refuse_a_sub_view) {
  Tensor whole = wrap(11, 32, {32}, FakePboOps::make(32));
  auto sub = whole.view(16, {16});
  ASSERT_TRUE(sub);
  auto parts = into_client_parts(std::move(*sub));
  ASSERT_FALSE(parts);
  EXPECT_EQ(parts.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_NE(parts.error().message().find("whole buffer"), std::string::npos);
}

TEST(PboChannel, ABI_PARTS_02_a_smaller_shape_at_the_origin_is_fine) {
  Tensor whole = wrap(12, 32, {32}, FakePboOps::make(32));
  auto head = whole.view(0, {16});
  ASSERT_TRUE(head);
  auto parts = into_client_parts(std::move(*head));
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->shape(), (Shape{16}));
  EXPECT_EQ(parts->size(), 32u);
}

TEST(PboChannel, ABI_PARTS_01_only_pbo_tensors_have_client_parts) {
  auto heap = Tensor::allocate({8}, DType::U8);
  ASSERT_TRUE(heap);
  auto parts = into_client_parts(std::move(*heap));
  ASSERT_FALSE(parts);
  EXPECT_EQ(parts.error().kind(), ErrorKind::InvalidArgument);
}

TEST(PboChannel, PBO_LIFE_05_an_imported_pbo_refuses_pin_host_with_the_same_text) {
  Tensor producer = wrap(13, 8, {8}, FakePboOps::make(8));
  Tensor child = wrap(13, 8, {8}, import_through_the_table(producer));
  auto a = producer.pin_host(CpuAccess::Read);
  auto b = child.pin_host(CpuAccess::Read);
  ASSERT_FALSE(a);
  ASSERT_FALSE(b);
  EXPECT_EQ(a.error().message(), b.error().message());
  EXPECT_EQ(b.error().message(), TM_PBO_PIN_HOST_REFUSAL);
}
