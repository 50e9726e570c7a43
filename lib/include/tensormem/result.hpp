// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tensormem {

/// The error vocabulary of the library (the seed's PboMapped/PboDisconnected
/// renamed to Mapped/Disconnected because every storage uses them).
enum class ErrorKind : int {
  InvalidArgument,
  InvalidSize,
  InvalidShape,
  ShapeMismatch,
  InsufficientCapacity,
  InvalidOperation,
  NotImplemented,
  Mapped,
  Disconnected,
  WouldBlock,
  Io,
  Device,
  /// A wait ended early because its caller asked (WaitCancel): a flush or a
  /// state change, not a failure of the work waited for.
  Cancelled,
};

TENSORMEM_API const char *error_kind_name(ErrorKind kind) noexcept;

/// A failure: its kind, a message naming the operation and the numbers, and
/// the numbers tests match on (InvalidSize's size, InsufficientCapacity's pair,
/// Io's errno).
class TENSORMEM_API Error {
public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  static Error invalid_argument(std::string what) { return {ErrorKind::InvalidArgument, std::move(what)}; }
  static Error invalid_size(std::uint64_t size, std::string what);
  static Error invalid_shape(std::string what) { return {ErrorKind::InvalidShape, std::move(what)}; }
  static Error shape_mismatch(std::string what) { return {ErrorKind::ShapeMismatch, std::move(what)}; }
  static Error insufficient_capacity(std::uint64_t needed, std::uint64_t capacity, std::string what);
  static Error invalid_operation(std::string what) { return {ErrorKind::InvalidOperation, std::move(what)}; }
  static Error not_implemented(std::string what) { return {ErrorKind::NotImplemented, std::move(what)}; }
  static Error mapped(std::string what) { return {ErrorKind::Mapped, std::move(what)}; }
  static Error disconnected(std::string what) { return {ErrorKind::Disconnected, std::move(what)}; }
  static Error would_block(std::string what) { return {ErrorKind::WouldBlock, std::move(what)}; }
  static Error io(int os_error, std::string what);
  static Error device(std::string what) { return {ErrorKind::Device, std::move(what)}; }
  static Error cancelled(std::string what) { return {ErrorKind::Cancelled, std::move(what)}; }
  /// InvalidArgument for an fd of the wrong kind, carrying its filesystem magic.
  static Error unsupported_fd(std::uint32_t fs_magic, std::string what);

  ErrorKind kind() const noexcept { return kind_; }
  const std::string &message() const noexcept { return message_; }
  /// InvalidSize: the size concerned.
  std::uint64_t size() const noexcept { return size_; }
  /// InsufficientCapacity: bytes asked for and bytes available.
  std::uint64_t needed() const noexcept { return needed_; }
  std::uint64_t capacity() const noexcept { return capacity_; }
  /// Io: the errno value (0 when none).
  int os_error() const noexcept { return os_error_; }
  /// unsupported_fd: the fd's filesystem magic (0 otherwise).
  std::uint32_t fs_magic() const noexcept { return fs_magic_; }

  /// Pollers retry only on this kind.
  bool would_block() const noexcept { return kind_ == ErrorKind::WouldBlock; }

private:
  ErrorKind kind_;
  std::string message_;
  std::uint64_t size_ = 0;
  std::uint64_t needed_ = 0;
  std::uint64_t capacity_ = 0;
  int os_error_ = 0;
  std::uint32_t fs_magic_ = 0;
};

namespace detail {

/// Asking a Result for what it does not hold is a bug in the caller, not an
/// error to handle: it stops the process with the reason, as an assertion
/// would, instead of throwing.
[[noreturn]] inline void result_misuse(const char *what) noexcept {
  std::fprintf(stderr, "tensormem: %s\n", what);
  std::abort();
}

} // namespace detail

/// A value or an Error. Nothing in the public API throws an error of its
/// own (see docs/architecture-details.md, "Exceptions"); fallible constructors are
/// factories returning a Result. value() on an error and error() on a value
/// abort with a message.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T &value() &noexcept { return *held_value(); }
  const T &value() const &noexcept { return *held_value(); }
  T &&value() &&noexcept { return std::move(*held_value()); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const Error &error() const &noexcept { return *held_error(); }
  Error &&error() &&noexcept { return std::move(*held_error()); }

private:
  T *held_value() const noexcept {
    if (auto *v = std::get_if<0>(&v_))
      return const_cast<T *>(v);
    detail::result_misuse("Result::value() called on an error");
  }
  Error *held_error() const noexcept {
    if (auto *e = std::get_if<1>(&v_))
      return const_cast<Error *>(e);
    detail::result_misuse("Result::error() called on a value");
  }

  std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : error_(std::in_place, std::move(error)) {}

  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const Error &error() const &noexcept {
    if (!error_)
      detail::result_misuse("Result<void>::error() called on success");
    return *error_;
  }
  Error &&error() &&noexcept {
    if (!error_)
      detail::result_misuse("Result<void>::error() called on success");
    return std::move(*error_);
  }

private:
  std::optional<Error> error_;
};

} // namespace tensormem
