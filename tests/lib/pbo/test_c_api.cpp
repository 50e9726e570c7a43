// SPDX-License-Identifier: Apache-2.0
// The tm_* C entry points, and a separately built shared object that knows
// only tensormem.h (the library "loaded twice in spirit").
#include "dynlib.hpp"
#include "fake_pbo_ops.hpp"

#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensormem.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <optional>

using namespace tensormem;
using tmtest::FakePboOps;
using tmtest::PboFake;

namespace {

Tensor producer_of(std::uint32_t id, std::size_t size, const std::shared_ptr<FakePboOps> &ops) {
  auto t = from_pbo(id, size, {size}, DType::U8, "producer", ops);
  EXPECT_TRUE(t);
  return std::move(t).value();
}

const tm_pbo_ops *table_of(const Tensor &t) { return pbo_storage_of(t)->client_table(); }

// Owns a tm_tensor for the length of a test.
struct CTensor {
  tm_tensor *t = nullptr;
  ~CTensor() { tm_tensor_free(t); }
};

} // namespace

// ABI-STATE-01: a client state is three pointer-sized members, in the
// order context, retain, release, as a C client lays it out.
static_assert(sizeof(tm_client_state) == 3 * sizeof(void *));
static_assert(offsetof(tm_client_state, ctx) == 0);
static_assert(offsetof(tm_client_state, retain) == sizeof(void *));
static_assert(offsetof(tm_client_state, release) == 2 * sizeof(void *));

TEST(PboCApi, ABI_ASM_04_tm_tensor_wrap_pbo_round_trips_real_bytes) {
  auto ops = FakePboOps::make(16);
  ops->fill_ramp();
  std::optional<Tensor> producer = producer_of(50, 16, ops);
  const size_t shape[] = {4, 4};
  CTensor c;
  tm_error err{};
  ASSERT_EQ(tm_tensor_wrap_pbo(table_of(*producer), 50, 16, shape, 2, TM_DTYPE_U8, "c", &c.t, &err), TM_OK)
      << err.message;
  producer.reset(); // the C tensor keeps the channel open
  EXPECT_EQ(ops->deletes, 0);
  EXPECT_EQ(tm_tensor_buffer_id(c.t), 50u);
  EXPECT_EQ(tm_tensor_size_bytes(c.t), 16u);
  size_t dims[4] = {};
  EXPECT_EQ(tm_tensor_shape(c.t, dims, 4), 2u);
  EXPECT_EQ(dims[0], 4u);

  tm_map *map = nullptr;
  uint8_t *ptr = nullptr;
  size_t len = 0;
  ASSERT_EQ(tm_tensor_map(c.t, TM_ACCESS_READ_WRITE, &map, &ptr, &len, &err), TM_OK) << err.message;
  ASSERT_EQ(len, 16u);
  EXPECT_EQ(ptr[9], 9);
  ptr[0] = 0xEE;
  tm_map *second = nullptr;
  EXPECT_EQ(tm_tensor_map(c.t, TM_ACCESS_READ, &second, &ptr, &len, &err), TM_ERROR_MAPPED);
  EXPECT_EQ(err.status, TM_ERROR_MAPPED);
  tm_tensor_unmap(map);
  EXPECT_EQ(ops->bytes()[0], std::byte{0xEE});
  tm_tensor_free(c.t);
  c.t = nullptr;
  EXPECT_EQ(ops->deletes, 1);
}

TEST(PboCApi, ABI_ASM_01_a_table_with_a_null_part_is_refused_before_any_retain) {
  auto ops = FakePboOps::make(8);
  Tensor producer = producer_of(51, 8, ops);
  auto *storage = pbo_storage_of(producer).get();
  const size_t shape[] = {8};
  for (int variant = 0; variant < 6; ++variant) {
    tm_pbo_ops table = *table_of(producer);
    const tm_pbo_ops *arg = &table;
    switch (variant) {
    case 0: table.state.ctx = nullptr; break;
    case 1: table.state.retain = nullptr; break;
    case 2: table.state.release = nullptr; break;
    case 3: table.map = nullptr; break;
    case 4: table.unmap = nullptr; break;
    case 5: arg = nullptr; break;
    }
    CTensor c;
    tm_error err{};
    EXPECT_EQ(tm_tensor_wrap_pbo(arg, 51, 8, shape, 1, TM_DTYPE_U8, nullptr, &c.t, &err), TM_ERROR_INVALID_ARGUMENT)
        << "variant " << variant;
    EXPECT_EQ(err.status, TM_ERROR_INVALID_ARGUMENT);
    EXPECT_GT(std::strlen(err.message), 0u);
    EXPECT_EQ(c.t, nullptr);
    EXPECT_EQ(storage->channel_references(), 0u) << "variant " << variant;
  }
}

TEST(PboCApi, ABI_PARTS_05_unchecked_dimensions_meet_the_checked_footprint) {
  Tensor producer = producer_of(52, 8, FakePboOps::make(8));
  const size_t huge[] = {std::size_t{1} << 63, 4};
  CTensor c;
  tm_error err{};
  EXPECT_EQ(tm_tensor_wrap_pbo(table_of(producer), 52, 8, huge, 2, TM_DTYPE_U8, nullptr, &c.t, &err),
            TM_ERROR_INVALID_SHAPE);
  EXPECT_EQ(tm_tensor_wrap_pbo(table_of(producer), 52, 8, nullptr, 2, TM_DTYPE_U8, nullptr, &c.t, nullptr),
            TM_ERROR_INVALID_ARGUMENT);
  const size_t big[] = {9};
  EXPECT_EQ(tm_tensor_wrap_pbo(table_of(producer), 52, 8, big, 1, TM_DTYPE_U8, nullptr, &c.t, &err),
            TM_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(tm_tensor_wrap_pbo(table_of(producer), 52, 8, big, 1, static_cast<tm_dtype>(42), nullptr, &c.t, &err),
            TM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tm_tensor_wrap_pbo(table_of(producer), 52, 0, big, 1, TM_DTYPE_U8, nullptr, &c.t, &err),
            TM_ERROR_INVALID_SIZE);
  EXPECT_EQ(c.t, nullptr);
  EXPECT_EQ(pbo_storage_of(producer)->channel_references(), 0u) << "refused wraps released their retain";
}

TEST(PboCApi, ABI_ERR_03_the_message_lands_in_caller_owned_memory_truncated) {
  tm_error err{};
  std::memset(err.message, 'x', sizeof err.message);
  CTensor c;
  const size_t shape[] = {8};
  EXPECT_EQ(tm_tensor_wrap_pbo(nullptr, 1, 8, shape, 1, TM_DTYPE_U8, nullptr, &c.t, &err), TM_ERROR_INVALID_ARGUMENT);
  EXPECT_LT(std::strlen(err.message), sizeof err.message);
  EXPECT_NE(std::strstr(err.message, "table"), nullptr) << err.message;
}

TEST(PboCApi, ABI_PBO_02_tm_tensor_pbo_table_is_the_storage_table) {
  auto ops = FakePboOps::make(8);
  Tensor producer = producer_of(53, 8, ops);
  const size_t shape[] = {8};
  CTensor c;
  ASSERT_EQ(tm_tensor_wrap_pbo(table_of(producer), 53, 8, shape, 1, TM_DTYPE_U8, nullptr, &c.t, nullptr), TM_OK);
  const tm_pbo_ops *a = nullptr;
  const tm_pbo_ops *b = nullptr;
  ASSERT_EQ(tm_tensor_pbo_table(c.t, &a, nullptr), TM_OK);
  ASSERT_EQ(tm_tensor_pbo_table(c.t, &b, nullptr), TM_OK);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, table_of(producer)) << "the importer's own storage has its own table";

  CTensor heap;
  ASSERT_EQ(tm_tensor_allocate(shape, 1, TM_DTYPE_U8, nullptr, &heap.t, nullptr), TM_OK);
  tm_error err{};
  EXPECT_EQ(tm_tensor_pbo_table(heap.t, &a, &err), TM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(tm_tensor_buffer_id(heap.t), 0u);
}

TEST(PboCApi, ABI_PARTS_01_tm_tensor_into_client_parts_hands_over_a_borrowed_channel) {
  auto ops = FakePboOps::make(32);
  const tm_pbo_ops *producer_table = nullptr;
  CTensor producer;
  {
    Tensor t = producer_of(54, 32, ops);
    producer_table = table_of(t);
    const size_t shape[] = {32};
    ASSERT_EQ(tm_tensor_wrap_pbo(producer_table, 54, 32, shape, 1, TM_DTYPE_U8, nullptr, &producer.t, nullptr), TM_OK);
  }
  tm_pbo_client_parts parts{};
  tm_error err{};
  ASSERT_EQ(tm_tensor_into_client_parts(producer.t, &parts, &err), TM_OK) << err.message;
  producer.t = nullptr; // consumed
  EXPECT_EQ(parts.buffer_id, 54u);
  EXPECT_EQ(parts.size, 32u);
  ASSERT_EQ(parts.ndim, 1u);
  EXPECT_EQ(parts.shape[0], 32u);
  EXPECT_EQ(parts.dtype, TM_DTYPE_U8);

  // The callee retains (by wrapping) before the parts go.
  CTensor callee;
  ASSERT_EQ(tm_tensor_wrap_pbo(&parts.ops, parts.buffer_id, parts.size, parts.shape, parts.ndim, parts.dtype, nullptr,
                               &callee.t, &err),
            TM_OK)
      << err.message;
  tm_pbo_client_parts_release(&parts);
  EXPECT_EQ(parts.owner, nullptr);
  EXPECT_EQ(ops->deletes, 0);
  tm_map *map = nullptr;
  uint8_t *ptr = nullptr;
  size_t len = 0;
  ASSERT_EQ(tm_tensor_map(callee.t, TM_ACCESS_READ, &map, &ptr, &len, &err), TM_OK) << err.message;
  tm_tensor_unmap(map);
  EXPECT_EQ(ops->maps, 1);
  tm_tensor_free(callee.t);
  callee.t = nullptr;
  EXPECT_EQ(ops->deletes, 1);
}

TEST(PboCApi, ABI_PARTS_02_tm_tensor_into_client_parts_refuses_a_sub_view_and_keeps_the_tensor) {
  auto ops = FakePboOps::make(32);
  Tensor whole = producer_of(55, 32, ops);
  const size_t shape[] = {32};
  CTensor c;
  ASSERT_EQ(tm_tensor_wrap_pbo(table_of(whole), 55, 32, shape, 1, TM_DTYPE_U8, nullptr, &c.t, nullptr), TM_OK);
  const size_t half[] = {16};
  CTensor sub;
  ASSERT_EQ(tm_tensor_view(c.t, 16, half, 1, &sub.t, nullptr), TM_OK);
  tm_pbo_client_parts parts{};
  tm_error err{};
  EXPECT_EQ(tm_tensor_into_client_parts(sub.t, &parts, &err), TM_ERROR_INVALID_OPERATION);
  EXPECT_NE(std::strstr(err.message, "whole buffer"), nullptr) << err.message;
  EXPECT_EQ(parts.owner, nullptr);
  EXPECT_EQ(tm_tensor_size_bytes(sub.t), 16u) << "the refused tensor is still the caller's";

  CTensor head;
  ASSERT_EQ(tm_tensor_view(c.t, 0, half, 1, &head.t, nullptr), TM_OK);
  ASSERT_EQ(tm_tensor_into_client_parts(head.t, &parts, &err), TM_OK) << err.message;
  head.t = nullptr;
  EXPECT_EQ(parts.size, 32u);
  EXPECT_EQ(parts.shape[0], 16u);
  tm_pbo_client_parts_release(&parts);
  tm_pbo_client_parts_release(nullptr);
}

// ---- a second copy that knows only tensormem.h --------------------------------

namespace {

struct ForeignLibrary {
  tmtest::DynLib lib{TM_FOREIGN_IMPORTER};
  void *(*import)(const tm_pbo_ops *, uint32_t, size_t) = lib.function<decltype(import)>("foreign_import");
  int (*read)(const void *, uint8_t *, size_t) = lib.function<decltype(read)>("foreign_read");
  int (*write)(const void *, const uint8_t *, size_t) = lib.function<decltype(write)>("foreign_write");
  void (*drop)(void *) = lib.function<decltype(drop)>("foreign_drop");

  bool ok() const { return lib.loaded() && import && read && write && drop; }
};

} // namespace

// ABI-PBO-01: the table's client state, map and unmap are all an importer needs;
// it has no delete, and only the producer deletes the buffer.
TEST(PboForeignCopy, a_library_built_only_against_the_c_header_reads_real_bytes_through_the_table) {
  ForeignLibrary foreign;
  ASSERT_TRUE(foreign.ok()) << foreign.lib.error();
  // It carries no copy of libtensormem's entry points: the channel is all it has.
  EXPECT_EQ(foreign.lib.function<void (*)()>("tm_tensor_wrap_pbo"), nullptr);

  auto ops = FakePboOps::make(64);
  ops->fill_ramp();
  std::optional<Tensor> producer = producer_of(60, 64, ops);
  void *imported = foreign.import(table_of(*producer), 60, 64);
  ASSERT_NE(imported, nullptr);
  producer.reset(); // the foreign copy's retain keeps the buffer
  EXPECT_EQ(ops->deletes, 0);

  uint8_t bytes[64] = {};
  ASSERT_EQ(foreign.read(imported, bytes, sizeof bytes), TM_PBO_OK);
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(bytes[i], i) << "byte " << i;
  const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
  ASSERT_EQ(foreign.write(imported, hello, sizeof hello), TM_PBO_OK);
  EXPECT_EQ(std::memcmp(ops->bytes().data(), hello, sizeof hello), 0);
  EXPECT_EQ(ops->maps, 2);
  EXPECT_EQ(ops->unmaps, 2);

  foreign.drop(imported);
  EXPECT_EQ(ops->deletes, 1);
}

TEST(PboForeignCopy, a_disconnected_producer_reaches_the_foreign_copy_as_minus_one) {
  ForeignLibrary foreign;
  ASSERT_TRUE(foreign.ok()) << foreign.lib.error();
  auto ops = FakePboOps::make(8, PboFake::Disconnected);
  Tensor producer = producer_of(61, 8, ops);
  void *imported = foreign.import(table_of(producer), 61, 8);
  ASSERT_NE(imported, nullptr);
  uint8_t bytes[8];
  EXPECT_EQ(foreign.read(imported, bytes, sizeof bytes), TM_PBO_DISCONNECTED);
  foreign.drop(imported);
  EXPECT_EQ(pbo_storage_of(producer)->channel_references(), 0u);
}

TEST(PboForeignCopy, the_foreign_copy_refuses_an_incomplete_table_without_retaining) {
  ForeignLibrary foreign;
  ASSERT_TRUE(foreign.ok()) << foreign.lib.error();
  Tensor producer = producer_of(62, 8, FakePboOps::make(8));
  tm_pbo_ops table = *table_of(producer);
  table.state.release = nullptr;
  EXPECT_EQ(foreign.import(&table, 62, 8), nullptr);
  EXPECT_EQ(pbo_storage_of(producer)->channel_references(), 0u);
}
