// SPDX-License-Identifier: Apache-2.0
// SHR-ERR, SHR-ACC, SHR-ID, SHR-SHAPE-01 and the HostPin guard (SHR-PIN).
#include <tensormem/tensormem.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <type_traits>

using namespace tensormem;

TEST(SharedErrors, SHR_ERR_01_every_kind_is_distinct_and_named) {
  std::set<std::string> names;
  for (int k = 0; k <= static_cast<int>(ErrorKind::Device); ++k)
    names.insert(error_kind_name(static_cast<ErrorKind>(k)));
  EXPECT_EQ(names.size(), 12u);
  EXPECT_EQ(names.count("Mapped"), 1u);
  EXPECT_EQ(names.count("Disconnected"), 1u);
}

TEST(SharedErrors, SHR_ERR_01_insufficient_capacity_carries_both_numbers) {
  Error e = Error::insufficient_capacity(32, 16, "map");
  EXPECT_EQ(e.kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(e.needed(), 32u);
  EXPECT_EQ(e.capacity(), 16u);
  EXPECT_NE(e.message().find("32"), std::string::npos);
  EXPECT_NE(e.message().find("16"), std::string::npos);
  EXPECT_EQ(Error::invalid_size(7, "x").size(), 7u);
}

TEST(SharedErrors, SHR_ERR_02_would_block_is_an_io_kind_that_pollers_can_tell_apart) {
  Error again = Error::io(EAGAIN, "poll");
  EXPECT_TRUE(again.would_block());
  EXPECT_EQ(again.os_error(), EAGAIN);
  Error other = Error::io(EIO, "poll");
  EXPECT_FALSE(other.would_block());
  EXPECT_EQ(other.kind(), ErrorKind::Io);
}

TEST(SharedErrors, result_holds_a_value_or_an_error) {
  Result<int> good = 4;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  Result<int> bad = Error::mapped("busy");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::Mapped);
  Result<void> v;
  EXPECT_TRUE(v.ok());
}

/* Asking for what a Result does not hold is a programming error: it stops
 * the process with the reason instead of throwing (no exceptions cross the
 * library's API). */
TEST(SharedErrorsDeathTest, value_of_an_error_and_error_of_a_value_abort_with_a_message) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> bad = Error::mapped("busy");
  EXPECT_DEATH((void)bad.value(), "Result::value\\(\\) called on an error");
  Result<int> good = 4;
  EXPECT_DEATH((void)good.error(), "Result::error\\(\\) called on a value");
  Result<void> done;
  EXPECT_DEATH((void)done.error(), "Result<void>::error\\(\\) called on success");
}

TEST(SharedAccess, SHR_ACC_01_truth_table) {
  EXPECT_FALSE(access_reads(CpuAccess::None));
  EXPECT_FALSE(access_writes(CpuAccess::None));
  EXPECT_TRUE(access_reads(CpuAccess::Read));
  EXPECT_FALSE(access_writes(CpuAccess::Read));
  EXPECT_FALSE(access_reads(CpuAccess::Write));
  EXPECT_TRUE(access_writes(CpuAccess::Write));
  EXPECT_TRUE(access_reads(CpuAccess::ReadWrite));
  EXPECT_TRUE(access_writes(CpuAccess::ReadWrite));
}

TEST(SharedIdentity, SHR_ID_01_derived_identities_compare_by_kind_and_key) {
  EXPECT_EQ(BufferIdentity::derived(StorageKind::Pbo, 7), BufferIdentity::derived(StorageKind::Pbo, 7));
  EXPECT_NE(BufferIdentity::derived(StorageKind::Pbo, 7), BufferIdentity::derived(StorageKind::Pbo, 8));
  EXPECT_NE(BufferIdentity::derived(StorageKind::Pbo, 7), BufferIdentity::derived(StorageKind::DmaBuf, 7));
}

TEST(SharedShape, SHR_SHAPE_01_footprint_is_the_product_times_the_element_size) {
  EXPECT_EQ(*checked_footprint(Shape{2, 3, 5}, DType::U8), 30u);
  EXPECT_EQ(*checked_footprint(Shape{2, 3}, DType::F32), 24u);
  EXPECT_EQ(*checked_footprint(Shape{3}, DType::F64), 24u);
  EXPECT_EQ(*checked_footprint(Shape{3}, DType::F16), 6u);
}

TEST(SharedShape, SHR_SHAPE_01_an_overflowing_footprint_is_invalid_shape_not_a_wrapped_number) {
  // [2^63, 4] of bytes wraps to 0 on a 64-bit machine if unchecked.
  auto r = checked_footprint(Shape{std::size_t{1} << 63, 4}, DType::U8);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidShape);
  auto r2 = checked_footprint(Shape{std::size_t{1} << 62}, DType::F32);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().kind(), ErrorKind::InvalidShape);
}

TEST(SharedShape, SHR_SHAPE_02_an_empty_shape_is_invalid_size_zero) {
  auto r = checked_footprint(Shape{}, DType::U8);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(r.error().size(), 0u);
}

TEST(SharedShape, checked_add_reports_the_given_size_on_overflow) {
  auto r = checked_add(SIZE_MAX, 2, 99, "test");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(r.error().size(), 99u);
  EXPECT_EQ(*checked_add(2, 3, 0, "test"), 5u);
}

TEST(SharedDType, sizes_and_names) {
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_size(DType::I16), 2u);
  EXPECT_EQ(dtype_size(DType::U32), 4u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_STREQ(dtype_name(DType::F16), "f16");
}

static_assert(!std::is_copy_constructible_v<HostPin>, "SHR-PIN-05: pins are move-only");
static_assert(std::is_nothrow_move_constructible_v<HostPin>);
static_assert(!std::is_copy_constructible_v<HostView>, "SHR-PIN-05: views are move-only");

namespace {
struct Counted {
  // A constructor, not an aggregate: make_shared's parenthesised aggregate
  // initialisation (C++20, P0960) is missing from clang before 16.
  explicit Counted(int *count) : releases(count) {}
  int *releases;
  ~Counted() { ++*releases; }
};
} // namespace

TEST(SharedPin, SHR_PIN_05_a_pin_releases_exactly_once_on_unmap_or_destruction) {
  int releases = 0;
  alignas(64) static std::byte buf[128];
  {
    HostPin pin(std::make_shared<Counted>(&releases), buf, sizeof buf);
    HostPin moved = std::move(pin);
    EXPECT_FALSE(pin.valid());
    EXPECT_TRUE(moved.valid());
    moved.unmap();
    EXPECT_EQ(releases, 1);
    moved.unmap();
    EXPECT_EQ(releases, 1);
  }
  EXPECT_EQ(releases, 1);
}

TEST(SharedPin, SHR_PIN_01_shares_keep_the_address_alive_until_the_last_goes) {
  int releases = 0;
  alignas(64) static std::byte buf[128];
  HostPin a(std::make_shared<Counted>(&releases), buf, sizeof buf);
  HostPin b = a.share();
  a.unmap();
  EXPECT_EQ(releases, 0);
  EXPECT_EQ(b.data(), buf);
  b = HostPin();
  EXPECT_EQ(releases, 1);
}

TEST(SharedPin, SHR_PIN_01_reports_alignment_and_slices_within_bounds) {
  int releases = 0;
  alignas(64) static std::byte buf[128];
  HostPin pin(std::make_shared<Counted>(&releases), buf, sizeof buf);
  EXPECT_GE(pin.alignment(), 64u);
  EXPECT_EQ(pin.slice(1, 8).alignment(), 1u);
  EXPECT_EQ(pin.slice(120, 8).length(), 8u);
  EXPECT_FALSE(pin.slice(121, 8).valid());
  EXPECT_FALSE(pin.slice(SIZE_MAX, 2).valid());
}

TEST(SharedShape, a_shape_with_a_zero_dimension_is_invalid_size_zero) {
  auto r = checked_footprint(Shape{4, 0, std::size_t{1} << 62}, DType::U8);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::InvalidSize);
}
