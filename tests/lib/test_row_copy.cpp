// SPDX-License-Identifier: Apache-2.0
// copy_rows against a plain byte-by-byte reference: every store mode, odd
// row lengths (not multiples of 16), unaligned sources and destinations, and
// the bytes between rows left alone.
#include <tensormem/row_copy.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace tensormem;

namespace {

constexpr std::byte kUntouched{0xee};

/* A buffer with room to place a region at any offset from a 64-byte
 * boundary (the vector's own storage is at least 16-byte aligned). */
struct Region {
  explicit Region(std::size_t bytes) : size(bytes), storage(bytes + 128, kUntouched) {}
  std::byte *at(std::size_t misalign) {
    auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    const std::uintptr_t aligned = (base + 63) & ~std::uintptr_t{63};
    return storage.data() + (aligned - base) + misalign;
  }
  /* The bytes from the 64-byte boundary on: comparable between regions. */
  std::vector<std::byte> window() { return {at(0), at(0) + size + 64}; }
  std::size_t size;
  std::vector<std::byte> storage;
};

/* What copy_rows must leave in `dst`: source rows copied one byte at a time,
 * everything else as it was. */
void reference_copy(std::byte *dst, std::size_t dst_stride, const std::byte *src, std::size_t src_stride,
                    std::size_t row_bytes, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < row_bytes; ++i)
      dst[r * dst_stride + i] = src[r * src_stride + i];
}

void fill_pattern(std::byte *p, std::size_t n, unsigned seed) {
  std::uint32_t x = seed * 2654435761u + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<std::byte>(x >> 24);
  }
}

const char *name_of(RowStores s) {
  switch (s) {
  case RowStores::Auto: return "auto";
  case RowStores::Cached: return "cached";
  case RowStores::Streaming: return "streaming";
  }
  return "?";
}

/* One case: the result of copy_rows, the destination's gaps and the area
 * around it compared with the reference on an identical second buffer. */
void check_case(RowStores stores, std::size_t row_bytes, std::size_t rows, std::size_t src_stride,
                std::size_t dst_stride, std::size_t src_misalign, std::size_t dst_misalign) {
  const std::size_t src_span = (rows - 1) * src_stride + row_bytes;
  const std::size_t dst_span = (rows - 1) * dst_stride + row_bytes;
  Region src(src_span), got(dst_span + 64), want(dst_span + 64);
  fill_pattern(src.at(src_misalign), src_span, static_cast<unsigned>(row_bytes * 31 + rows));
  reference_copy(want.at(dst_misalign), dst_stride, src.at(src_misalign), src_stride, row_bytes, rows);
  Result<void> done =
      copy_rows(got.at(dst_misalign), dst_stride, src.at(src_misalign), src_stride, row_bytes, rows, stores);
  const std::string what = std::string(name_of(stores)) + ": " + std::to_string(rows) + " rows of " +
                           std::to_string(row_bytes) + " bytes, strides " + std::to_string(src_stride) + " -> " +
                           std::to_string(dst_stride) + ", misaligned by " + std::to_string(src_misalign) + " -> " +
                           std::to_string(dst_misalign);
  ASSERT_TRUE(done) << what << ": " << done.error().message();
  ASSERT_EQ(got.window(), want.window()) << what;
}

} // namespace

TEST(RowCopy, EveryModeMatchesAByteCopyForOddLengthsAndAlignments) {
  // Row lengths around the 16-byte store width and the 64-byte unrolled
  // block, a tail of every size, and a long row.
  const std::size_t lengths[] = {1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 79, 127, 129, 255, 1000, 2561, 7683};
  const std::size_t misaligns[] = {0, 1, 7, 8, 13, 15, 16, 33};
  for (RowStores stores : {RowStores::Cached, RowStores::Streaming, RowStores::Auto})
    for (std::size_t len : lengths)
      for (std::size_t sm : misaligns)
        for (std::size_t dm : misaligns) {
          if (sm != dm && sm != 0 && dm != 0 && (sm + dm) % 3 != 0)
            continue; // a spread of pairs, not all 64
          // Source rows 5 bytes longer (odd stride); destination rows padded
          // to a multiple of 16 plus 3, so row starts drift in alignment.
          check_case(stores, len, 5, len + 5, (len + 15) / 16 * 16 + 3, sm, dm);
          if (HasFatalFailure())
            return;
        }
}

TEST(RowCopy, EqualStridesAndTightRowsAreCopiedToo) {
  for (RowStores stores : {RowStores::Cached, RowStores::Streaming}) {
    check_case(stores, 37, 9, 37, 37, 3, 5); // tight: one contiguous run
    if (stores == RowStores::Streaming)      // cached: the gaps go too (next test)
      check_case(stores, 37, 9, 48, 48, 0, 11);
    check_case(stores, 4096, 3, 4096, 5000, 0, 0);
    check_case(stores, 20, 1, 20, 20, 1, 2); // one row
  }
}

TEST(RowCopy, EqualStridesWithCachedStoresCopyTheGapsAsOneMemcpy) {
  Region src(3 * 8), dst(3 * 8);
  fill_pattern(src.at(0), 3 * 8, 7);
  ASSERT_TRUE(copy_rows(dst.at(0), 8, src.at(0), 8, 5, 3, RowStores::Cached));
  // Two gaps of 3 bytes between the three rows: copied with them.
  for (std::size_t i = 0; i < 2 * 8 + 5; ++i)
    EXPECT_EQ(dst.at(0)[i], src.at(0)[i]) << "byte " << i;
}

TEST(RowCopy, NothingToCopyIsFineAndBadArgumentsAreRefusedUntouched) {
  Region src(256), dst(256);
  fill_pattern(src.at(0), 256, 3);
  EXPECT_TRUE(copy_rows(nullptr, 0, nullptr, 0, 0, 10));
  EXPECT_TRUE(copy_rows(nullptr, 0, nullptr, 0, 10, 0));
  Result<void> null_dst = copy_rows(nullptr, 16, src.at(0), 16, 16, 2);
  ASSERT_FALSE(null_dst);
  EXPECT_EQ(null_dst.error().kind(), ErrorKind::InvalidArgument);
  Result<void> overlap = copy_rows(dst.at(0), 8, src.at(0), 32, 16, 2);
  ASSERT_FALSE(overlap);
  EXPECT_EQ(overlap.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_NE(overlap.error().message().find("16 bytes"), std::string::npos) << overlap.error().message();
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  Result<void> wraps = copy_rows(dst.at(0), huge, src.at(0), 16, 16, 3);
  ASSERT_FALSE(wraps);
  EXPECT_EQ(wraps.error().kind(), ErrorKind::InvalidSize);
  for (std::byte b : dst.storage)
    ASSERT_EQ(b, kUntouched) << "a refused copy wrote";
}

TEST(RowCopy, TheThresholdFollowsGlibcsTunableOrItsEstimate) {
  // The process reads its environment once; this checks the value it got.
  const std::size_t t = streaming_copy_threshold();
  EXPECT_GT(t, 0u);
  EXPECT_EQ(t, streaming_copy_threshold()) << "computed once";
#if defined(__GLIBC__) && defined(__SSE2__)
  if (const char *tunables = std::getenv("GLIBC_TUNABLES")) {
    const std::string s(tunables);
    const std::string key = "glibc.cpu.x86_non_temporal_threshold=";
    const std::size_t at = s.find(key);
    if (at != std::string::npos) {
      EXPECT_EQ(t, std::stoull(s.substr(at + key.size()), nullptr, 0)) << s;
    }
  }
#else
  EXPECT_EQ(t, std::numeric_limits<std::size_t>::max()) << "streams only where glibc's memcpy would";
#endif
}
