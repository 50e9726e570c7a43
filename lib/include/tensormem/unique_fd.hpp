// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <utility>

namespace tensormem {

/// A file descriptor with one owner: closed on destruction, moved not copied,
/// and given away only through release(), whose result must be used.
class TENSORMEM_API UniqueFd {
public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept;

private:
  int fd_ = -1;
};

} // namespace tensormem
