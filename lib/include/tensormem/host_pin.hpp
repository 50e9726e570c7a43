// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/types.hpp>

#include <cstddef>
#include <memory>
#include <span>

namespace tensormem {

/// A CPU address kept valid by a keep-alive. A map is a scoped
/// pin whose keep-alive is the map lease: the map ends when the last holder of
/// that lease lets go, and a pin lets go exactly once — on
/// unmap() or on destruction, whichever comes first.
class TENSORMEM_API HostPin {
public:
  HostPin() = default;
  HostPin(std::shared_ptr<void> keep_alive, std::byte *data, std::size_t length) noexcept
      : keep_(std::move(keep_alive)), data_(data), length_(length) {}

  HostPin(const HostPin &) = delete;
  HostPin &operator=(const HostPin &) = delete;
  HostPin(HostPin &&other) noexcept { swap(other); }
  HostPin &operator=(HostPin &&other) noexcept {
    HostPin tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  ~HostPin() = default;

  /// Drops this pin's hold now; later calls and the destructor do nothing.
  void unmap() noexcept {
    keep_.reset();
    data_ = nullptr;
    length_ = 0;
  }
  bool valid() const noexcept { return keep_ != nullptr; }

  std::byte *data() const noexcept { return data_; }
  std::size_t length() const noexcept { return length_; }
  /// Largest power of two (capped at 4096) dividing the address.
  std::size_t alignment() const noexcept;
  /// A second holder of the same keep-alive, for code that must hand the
  /// address to several owners; the map ends when every holder has let go.
  HostPin share() const noexcept { return HostPin(keep_, data_, length_); }

  /// A pin on a sub-range of this one; empty when the range is out of bounds.
  HostPin slice(std::size_t offset, std::size_t length) const noexcept;

private:
  void swap(HostPin &o) noexcept {
    std::swap(keep_, o.keep_);
    std::swap(data_, o.data_);
    std::swap(length_, o.length_);
  }

  std::shared_ptr<void> keep_;
  std::byte *data_ = nullptr;
  std::size_t length_ = 0;
};

/// What Tensor::map returns: a scoped pin plus the tensor's
/// shape, element type and access.
class HostView {
public:
  HostView(HostPin pin, Shape shape, DType dtype, CpuAccess access) noexcept
      : pin_(std::move(pin)), shape_(std::move(shape)), dtype_(dtype), access_(access) {}

  HostView(HostView &&) noexcept = default;
  HostView &operator=(HostView &&) noexcept = default;
  HostView(const HostView &) = delete;
  HostView &operator=(const HostView &) = delete;

  /// Ends this view's hold on the map early; destruction then releases nothing.
  void unmap() noexcept { pin_.unmap(); }
  bool valid() const noexcept { return pin_.valid(); }

  const Shape &shape() const noexcept { return shape_; }
  DType dtype() const noexcept { return dtype_; }
  CpuAccess access() const noexcept { return access_; }
  std::size_t size_bytes() const noexcept { return pin_.length(); }

  std::span<const std::byte> bytes() const noexcept { return {pin_.data(), pin_.length()}; }
  /// Writable bytes; empty for a view whose access does not write.
  std::span<std::byte> mutable_bytes() noexcept {
    if (!access_writes(access_))
      return {};
    return {pin_.data(), pin_.length()};
  }
  const std::byte *data() const noexcept { return pin_.data(); }

private:
  HostPin pin_;
  Shape shape_;
  DType dtype_;
  CpuAccess access_;
};

} // namespace tensormem
