// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/host_pin.hpp>
#include <tensormem/storage.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace tensormem {

/// Shape, element type, name and a byte window (offset) over a shared
/// storage. Copies and views share the storage, its identity and its map
/// state; copying a Tensor never copies bytes.
class TENSORMEM_API Tensor {
public:
  /// A tensor over `storage` starting at byte 0. The footprint is checked
  /// (overflow → InvalidShape, empty → InvalidSize(0)) and must fit the
  /// allocation (else ShapeMismatch, naming both numbers and the type).
  static Result<Tensor> wrap(std::shared_ptr<Storage> storage, Shape shape, DType dtype, std::string name = {});
  /// A new heap (MemStorage) tensor of exactly the footprint.
  static Result<Tensor> allocate(Shape shape, DType dtype, std::string name = {});

  const Shape &shape() const noexcept { return shape_; }
  DType dtype() const noexcept { return dtype_; }
  const std::string &name() const noexcept { return name_; }
  /// Byte offset of this tensor's window into the storage.
  std::size_t offset() const noexcept { return offset_; }
  /// Bytes of the logical shape.
  std::size_t size_bytes() const noexcept { return nbytes_; }
  /// Bytes available from this window's start to the end of the allocation
  /// (offset-aware, spec §7 item 8).
  std::size_t capacity_bytes() const noexcept { return storage_->size_bytes() - offset_; }
  BufferIdentity identity() const noexcept { return storage_->identity(); }
  StorageKind storage_kind() const noexcept { return storage_->kind(); }
  const std::shared_ptr<Storage> &storage() const noexcept { return storage_; }
  bool is_mapped() const noexcept { return storage_->is_mapped(); }

  /// Zero-copy sub-window: `offset_bytes` is relative to this
  /// window and must keep the element alignment; the end must fit the
  /// allocation.
  Result<Tensor> view(std::size_t offset_bytes, Shape shape) const;
  /// Strict: the new shape must hold exactly as many bytes as the current one.
  Result<void> reshape(Shape shape);
  /// Capacity-based: any shape that fits from the current
  /// offset to the end of the allocation.
  Result<void> set_logical_shape(Shape shape);
  /// Moves the window to an absolute byte offset after checking
  /// alignment and that the current shape still fits there.
  Result<void> set_offset(std::size_t offset);

  /// A CPU view of the logical bytes. Readers share one backend mapping; a
  /// writable map is exclusive (conflict → Mapped). Access None is refused.
  Result<HostView> map(CpuAccess access) const;
  /// Like map(), but WouldBlock instead of waiting for another thread's
  /// in-flight backend map or unmap.
  Result<HostView> try_map(CpuAccess access) const;
  /// A map exposing `byte_count` bytes from the window start (a padded image
  /// whose last row is shorter than the stride, say); checked against
  /// capacity_bytes() first.
  Result<HostView> map_bytes(CpuAccess access, std::size_t byte_count) const;
  /// A long-lived host pin of this window, where the storage has one.
  Result<HostPin> pin_host(CpuAccess access) const;

  /// Debug text: type, name, shape, dtype, offset and the storage.
  std::string describe() const;

private:
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, std::string name, std::size_t offset,
         std::size_t nbytes)
      : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype), name_(std::move(name)), offset_(offset),
        nbytes_(nbytes) {}

  Result<HostView> map_window(CpuAccess access, std::size_t byte_count, MapState::Wait wait) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_;
  std::string name_;
  std::size_t offset_;
  std::size_t nbytes_;
};

} // namespace tensormem
