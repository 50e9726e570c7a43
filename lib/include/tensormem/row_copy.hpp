// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/result.hpp>

#include <cstddef>
#include <cstdint>

namespace tensormem {

/// How copy_rows() writes its destination.
enum class RowStores : std::uint8_t {
  /// Streaming from streaming_copy_threshold() bytes of picture on, cached
  /// below it: the choice glibc's memcpy makes for one block that large.
  Auto,
  /// Ordinary (cached) stores: a memcpy per row.
  Cached,
  /// Non-temporal stores that bypass the caches (SSE2), then a store fence;
  /// where SSE2 is not available at compile time, the same as Cached.
  Streaming,
};

/// The picture size (rows × row bytes) from which RowStores::Auto streams.
/// glibc's memcpy streams a block from its non-temporal threshold on, so a
/// frame copied row by row does the same as the one memcpy of a contiguous
/// frame would. The value is `glibc.cpu.x86_non_temporal_threshold` when
/// GLIBC_TUNABLES sets it, else glibc's default estimate of it: 3/4 of one
/// thread's share of the last-level cache plus the core's L2 cache. Without
/// glibc on x86 it is SIZE_MAX (never stream). Computed once per process.
TENSORMEM_API std::size_t streaming_copy_threshold() noexcept;

/// Copies `rows` rows of `row_bytes` bytes from `src`, whose rows start
/// `src_stride` bytes apart, to `dst`, whose rows start `dst_stride` bytes
/// apart. The two regions must not overlap; any alignment is fine. With
/// equal strides and cached stores it is one memcpy of the whole span, the
/// bytes between rows included; otherwise the bytes between rows are not
/// touched on either side. InvalidArgument when a stride is smaller than
/// `row_bytes` (with more than one row) or a pointer is null while there is
/// something to copy; InvalidSize when the span of either side overflows.
/// Nothing is written when it fails.
TENSORMEM_API Result<void> copy_rows(std::byte *dst, std::size_t dst_stride, const std::byte *src,
                                     std::size_t src_stride, std::size_t row_bytes, std::size_t rows,
                                     RowStores stores = RowStores::Auto) noexcept;

} // namespace tensormem
