// SPDX-License-Identifier: Apache-2.0
// Private to the PBO folder: the producer side of the C channel.
#pragma once

#include <tensormem/pbo_storage.hpp>

namespace tensormem {

/// Builds the C table of a storage and converts between errors and the
/// channel's return codes.
struct PboChannel {
  /// The table whose ctx is `storage` and whose functions dispatch into its
  /// ops and its channel reference count.
  static tm_pbo_ops table_for(const PboStorage *storage) noexcept;

  static void retain(const void *ctx) noexcept;
  static void release(const void *ctx) noexcept;
  static int map(const void *ctx, std::uint32_t buffer_id, std::size_t size, std::uint8_t **out_ptr,
                 std::size_t *out_len) noexcept;
  static int unmap(const void *ctx, std::uint32_t buffer_id) noexcept;

  /// Producer side: Disconnected → TM_PBO_DISCONNECTED, anything else → TM_PBO_FAILED.
  static int code_of(const Error &error) noexcept;
  /// Importer side: TM_PBO_DISCONNECTED → Disconnected, any other non-zero n →
  /// NotImplemented ending "errno n".
  static Error error_of(int code);
};

} // namespace tensormem
