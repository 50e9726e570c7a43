// SPDX-License-Identifier: Apache-2.0
#include <tensormem/unique_fd.hpp>

#include <unistd.h>

namespace tensormem {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd)
    ::close(fd_);
  fd_ = fd;
}

} // namespace tensormem
