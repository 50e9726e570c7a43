// SPDX-License-Identifier: Apache-2.0
// Row-by-row frame copies that store the way one memcpy of the whole frame
// would: cached below glibc's non-temporal threshold, streaming above it.
#include <tensormem/row_copy.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#define TENSORMEM_ROW_COPY_SSE2 1
#else
#define TENSORMEM_ROW_COPY_SSE2 0
#endif

#if defined(__GLIBC__)
#include <unistd.h>
#endif

namespace tensormem {
namespace {

constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();

#if TENSORMEM_ROW_COPY_SSE2 && defined(__GLIBC__)
/* The value of `name` in a GLIBC_TUNABLES string ("a=1:b=0x20"), read as
 * glibc reads it (decimal, 0x hexadecimal or 0 octal); 0 when absent or
 * unreadable. */
std::size_t tunable_value(const char *tunables, const char *name) noexcept {
  if (!tunables)
    return 0;
  const std::size_t name_len = std::strlen(name);
  for (const char *p = tunables; *p;) {
    const char *end = std::strchr(p, ':');
    const std::size_t len = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
    if (len > name_len && std::strncmp(p, name, name_len) == 0 && p[name_len] == '=') {
      char *stop = nullptr;
      const unsigned long long v = std::strtoull(p + name_len + 1, &stop, 0);
      const bool whole = stop == p + len;
      return whole && v <= kNever ? static_cast<std::size_t>(v) : 0;
    }
    if (!end)
      break;
    p = end + 1;
  }
  return 0;
}
#endif

std::size_t compute_threshold() noexcept {
#if TENSORMEM_ROW_COPY_SSE2 && defined(__GLIBC__)
  // glibc ignores a value under its minimum (0x4040), and so does this.
  const std::size_t set = tunable_value(std::getenv("GLIBC_TUNABLES"), "glibc.cpu.x86_non_temporal_threshold");
  if (set >= 0x4040)
    return set;
  // glibc's default (2.26 onwards): 3/4 of what one thread may call its
  // own of the shared cache, the core's L2 included. Its thread count is
  // the threads sharing the last-level cache; the online CPUs stand in for
  // it (the same number on a single-socket machine).
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (l3 <= 0 && l2 <= 0)
    return kNever; // nothing known: never stream, as glibc would not either
  const std::size_t share =
      (l3 > 0 ? static_cast<std::size_t>(l3) / static_cast<std::size_t>(cpus > 0 ? cpus : 1) : 0) +
      (l2 > 0 ? static_cast<std::size_t>(l2) : 0);
  return share / 4 * 3;
#else
  return kNever;
#endif
}

#if TENSORMEM_ROW_COPY_SSE2
/* One row with non-temporal 16-byte stores: the bytes up to the first
 * 16-byte boundary of the destination and the last partial 16 are ordinary
 * stores; the source may have any alignment. The caller fences. */
void stream_row(std::byte *dst, const std::byte *src, std::size_t n) noexcept {
  std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15;
  if (head > n)
    head = n;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  auto *d = reinterpret_cast<__m128i *>(dst);
  const auto *s = reinterpret_cast<const __m128i *>(src);
  std::size_t blocks = n / 16;
  for (; blocks >= 4; blocks -= 4, d += 4, s += 4) {
    const __m128i a = _mm_loadu_si128(s);
    const __m128i b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2);
    const __m128i e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  for (; blocks > 0; --blocks, ++d, ++s)
    _mm_stream_si128(d, _mm_loadu_si128(s));
  std::memcpy(d, s, n & 15);
}
#endif

} // namespace

std::size_t streaming_copy_threshold() noexcept {
  static const std::size_t threshold = compute_threshold();
  return threshold;
}

Result<void> copy_rows(std::byte *dst, std::size_t dst_stride, const std::byte *src, std::size_t src_stride,
                       std::size_t row_bytes, std::size_t rows, RowStores stores) noexcept {
  if (rows == 0 || row_bytes == 0)
    return {};
  if (!dst || !src)
    return Error::invalid_argument("copy_rows: a null source or destination");
  if (rows > 1 && (dst_stride < row_bytes || src_stride < row_bytes))
    return Error::invalid_argument("copy_rows: rows of " + std::to_string(row_bytes) + " bytes with strides " +
                                   std::to_string(src_stride) + " (source) and " + std::to_string(dst_stride) +
                                   " (destination) would overlap");
  // The span of each side: (rows - 1) strides and one row.
  std::size_t dst_span = 0, src_span = 0, picture = 0;
  if (__builtin_mul_overflow(rows - 1, dst_stride, &dst_span) ||
      __builtin_add_overflow(dst_span, row_bytes, &dst_span) ||
      __builtin_mul_overflow(rows - 1, src_stride, &src_span) ||
      __builtin_add_overflow(src_span, row_bytes, &src_span) || __builtin_mul_overflow(rows, row_bytes, &picture))
    return Error::invalid_size(rows, "copy_rows: " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) +
                                         " bytes at these strides overflow the address space");
  if (stores == RowStores::Auto)
    stores = picture >= streaming_copy_threshold() ? RowStores::Streaming : RowStores::Cached;
#if TENSORMEM_ROW_COPY_SSE2
  if (stores == RowStores::Streaming) {
    for (std::size_t r = 0; r < rows; ++r)
      stream_row(dst + r * dst_stride, src + r * src_stride, row_bytes);
    // Non-temporal stores are weakly ordered: whoever is told the copy is
    // done (another thread, a GPU) must see every byte.
    _mm_sfence();
    return {};
  }
#endif
  if (dst_stride == src_stride) {
    std::memcpy(dst, src, dst_span); // the gaps too: one call, and memcpy picks its own stores
    return {};
  }
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_stride, src + r * src_stride, row_bytes);
  return {};
}

} // namespace tensormem
