// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tensormem {

/// Element types a tensor can hold.
enum class DType : std::uint8_t { U8, I8, U16, I16, U32, I32, F16, F32, F64 };

/// Bytes per element (also the alignment a view offset must keep).
TENSORMEM_API std::size_t dtype_size(DType dtype) noexcept;
TENSORMEM_API const char *dtype_name(DType dtype) noexcept;

/// CPU access kinds.
enum class CpuAccess : std::uint8_t { None, Read, Write, ReadWrite };

constexpr bool access_reads(CpuAccess a) noexcept { return a == CpuAccess::Read || a == CpuAccess::ReadWrite; }
constexpr bool access_writes(CpuAccess a) noexcept { return a == CpuAccess::Write || a == CpuAccess::ReadWrite; }
TENSORMEM_API const char *access_name(CpuAccess access) noexcept;

/// Which backend a storage is.
enum class StorageKind : std::uint8_t { Mem, DmaBuf, Pbo, D3d11 };
TENSORMEM_API const char *storage_kind_name(StorageKind kind) noexcept;

/// Identity of the buffer behind a storage: derived from the kind
/// and a backend key, so two independent wraps of one buffer compare equal.
struct BufferIdentity {
  StorageKind kind;
  std::uint64_t key;

  static constexpr BufferIdentity derived(StorageKind kind, std::uint64_t key) noexcept { return {kind, key}; }
  friend constexpr bool operator==(const BufferIdentity &, const BufferIdentity &) = default;
};

using Shape = std::vector<std::size_t>;

TENSORMEM_API std::string shape_to_string(std::span<const std::size_t> shape);

/// a + b, or InvalidSize(`reported`) when the sum does not fit in size_t.
TENSORMEM_API Result<std::size_t> checked_add(std::size_t a, std::size_t b, std::uint64_t reported, const char *what);
/// a * b, or InvalidShape naming `what` when the product does not fit.
TENSORMEM_API Result<std::size_t> checked_mul(std::size_t a, std::size_t b, const char *what);

/// Byte footprint of `shape` of `dtype`: overflow is
/// InvalidShape, never a wrapped number; an empty shape or one with a zero
/// dimension is InvalidSize(0).
TENSORMEM_API Result<std::size_t> checked_footprint(std::span<const std::size_t> shape, DType dtype);

} // namespace tensormem
