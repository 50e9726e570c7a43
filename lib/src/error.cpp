// SPDX-License-Identifier: Apache-2.0
#include <tensormem/result.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tensormem {

const char *error_kind_name(ErrorKind kind) noexcept {
  switch (kind) {
  case ErrorKind::InvalidArgument: return "InvalidArgument";
  case ErrorKind::InvalidSize: return "InvalidSize";
  case ErrorKind::InvalidShape: return "InvalidShape";
  case ErrorKind::ShapeMismatch: return "ShapeMismatch";
  case ErrorKind::InsufficientCapacity: return "InsufficientCapacity";
  case ErrorKind::InvalidOperation: return "InvalidOperation";
  case ErrorKind::NotImplemented: return "NotImplemented";
  case ErrorKind::Mapped: return "Mapped";
  case ErrorKind::Disconnected: return "Disconnected";
  case ErrorKind::WouldBlock: return "WouldBlock";
  case ErrorKind::Io: return "Io";
  case ErrorKind::Device: return "Device";
  case ErrorKind::Cancelled: return "Cancelled";
  }
  return "Unknown";
}

Error Error::invalid_size(std::uint64_t size, std::string what) {
  Error e(ErrorKind::InvalidSize, std::move(what));
  e.size_ = size;
  return e;
}

Error Error::insufficient_capacity(std::uint64_t needed, std::uint64_t capacity, std::string what) {
  Error e(ErrorKind::InsufficientCapacity,
          what + ": needs " + std::to_string(needed) + " bytes, capacity is " + std::to_string(capacity));
  e.needed_ = needed;
  e.capacity_ = capacity;
  return e;
}

Error Error::io(int os_error, std::string what) {
  Error e(os_error == EAGAIN || os_error == EWOULDBLOCK ? ErrorKind::WouldBlock : ErrorKind::Io,
          what + ": " + std::strerror(os_error) + " (errno " + std::to_string(os_error) + ")");
  e.os_error_ = os_error;
  return e;
}

Error Error::unsupported_fd(std::uint32_t fs_magic, std::string what) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", fs_magic);
  Error e(ErrorKind::InvalidArgument, what + " (filesystem magic " + hex + ")");
  e.fs_magic_ = fs_magic;
  return e;
}

} // namespace tensormem
