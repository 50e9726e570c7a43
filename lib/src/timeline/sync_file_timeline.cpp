// SPDX-License-Identifier: Apache-2.0
#include <tensormem/timeline.hpp>

#include <poll.h>

#include <cerrno>
#include <climits>

namespace tensormem {

namespace {

/// One sync_file fd: readable once the work behind it has completed.
class SyncFilePoint final : public SyncPoint {
public:
  explicit SyncFilePoint(UniqueFd fd) noexcept : fd_(std::move(fd)) {}

  Result<bool> is_signalled() const override { return poll_for(0); }

  Result<void> wait(std::chrono::nanoseconds timeout) const override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      // Round up so a sub-millisecond remainder still waits instead of spinning.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const int ms = left.count() <= 0 ? 0 : left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
      Result<bool> ready = poll_for(ms);
      if (!ready)
        return std::move(ready).error();
      if (*ready)
        return {};
      if (ms == 0)
        return Error::would_block("sync_file not signalled in time");
    }
  }

private:
  /// poll() for up to `ms`; true once readable. An interrupted poll counts as
  /// "not yet" and the caller's loop decides whether time is left.
  Result<bool> poll_for(int ms) const {
    pollfd p{fd_.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, ms);
    if (n < 0)
      return errno == EINTR ? Result<bool>(false) : Result<bool>(Error::io(errno, "poll on sync_file"));
    if (n == 0)
      return false;
    if (p.revents & POLLNVAL)
      return Error::io(EBADF, "poll on sync_file: fd " + std::to_string(fd_.get()) + " is not open");
    // A sync_file never reports an error this way; an fd that does cannot
    // say whether the work is done, and guessing "done" would let a CPU read
    // race the write.
    if (p.revents & POLLERR)
      return Error::io(EIO, "poll on sync_file: fd " + std::to_string(fd_.get()) + " reports an error");
    return (p.revents & POLLIN) != 0;
  }

  UniqueFd fd_;
};

} // namespace

/// \brief A new timeline of sync_file fds called `name`.
std::shared_ptr<SyncFileTimeline> SyncFileTimeline::create(std::string name) {
  return std::make_shared<SyncFileTimeline>(Token{}, std::move(name));
}

/// \brief Takes `fd` as the point of the next value.
/// \return The value issued for it; InvalidArgument for an invalid fd.
Result<std::uint64_t> SyncFileTimeline::adopt(UniqueFd fd) {
  if (!fd.valid())
    return Error::invalid_argument("adopt: " + label() + " needs an open sync_file fd");
  return add_point(std::make_shared<SyncFilePoint>(std::move(fd)));
}

} // namespace tensormem
