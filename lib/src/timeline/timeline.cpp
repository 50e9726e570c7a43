// SPDX-License-Identifier: Apache-2.0
#include <tensormem/timeline.hpp>

#include <algorithm>

namespace tensormem {

namespace {

// A wait longer than this is treated as this long: steady_clock + a caller's
// nanoseconds::max() would overflow into the past.
constexpr std::chrono::hours kLongestWait{24 * 365};

std::chrono::steady_clock::time_point deadline_after(std::chrono::nanoseconds timeout) {
  const auto bounded = std::clamp<std::chrono::nanoseconds>(timeout, std::chrono::nanoseconds::zero(), kLongestWait);
  return std::chrono::steady_clock::now() + bounded;
}

} // namespace

/// \brief The name of a timeline kind ("software", "egl", "sync_file", "d3d11").
const char *timeline_kind_name(TimelineKind kind) noexcept {
  switch (kind) {
  case TimelineKind::Software: return "software";
  case TimelineKind::EglSync: return "egl";
  case TimelineKind::SyncFile: return "sync_file";
  case TimelineKind::D3d11Fence: return "d3d11";
  }
  return "unknown";
}

Timeline::Timeline(TimelineKind kind, std::string name) : kind_(kind), name_(std::move(name)) {}

std::string Timeline::label() const { return std::string(timeline_kind_name(kind_)) + " timeline '" + name_ + "'"; }

std::uint64_t Timeline::last_issued() const noexcept {
  const std::uint64_t elsewhere = issued_elsewhere();
  std::lock_guard lock(mu_);
  return std::max(issued_, elsewhere);
}

/// \brief Refuses a value this timeline never handed out.
/// \param value The value a caller wants to record or wait on.
/// \param what The operation, named first in the error.
/// \return InvalidArgument naming the value, the timeline and its newest value
/// when nothing would ever signal `value`.
Result<void> Timeline::check_issued(std::uint64_t value, const char *what) const {
  const std::uint64_t issued = last_issued();
  if (value <= issued)
    return {};
  return Error::invalid_argument(std::string(what) + ": value " + std::to_string(value) + " on " + label() +
                                 " was never issued (last issued " + std::to_string(issued) +
                                 "); nothing would ever signal it");
}

/// \brief Whether the timeline has reached `value`, without blocking.
/// \return true for 0; InvalidArgument for a value never issued.
Result<bool> Timeline::signalled(std::uint64_t value) {
  Result<void> issued = check_issued(value, "signalled");
  if (!issued)
    return std::move(issued).error();
  if (value == 0)
    return true;
  return poll(value);
}

/// \brief Blocks until the timeline reaches `value`, for at most `timeout`.
/// \param cancel When given, looked at every kCancelCheckInterval: the
/// kind's own wait runs in slices that long, each returning at once when the
/// value is reached.
/// \return WouldBlock naming the timeline and the value when the time ran out;
/// Cancelled when `cancel` asked first; InvalidArgument, before any waiting,
/// for a value never issued.
Result<void> Timeline::wait_cpu(std::uint64_t value, std::chrono::nanoseconds timeout, const WaitCancel *cancel) {
  Result<void> issued = check_issued(value, "wait_cpu");
  if (!issued || value == 0)
    return issued;
  const auto deadline = deadline_after(timeout);
  for (;;) {
    const auto slice_end =
        cancel != nullptr ? std::min(deadline, std::chrono::steady_clock::now() + kCancelCheckInterval) : deadline;
    Result<void> waited = block_until(value, slice_end);
    if (waited || !waited.error().would_block())
      return waited;
    // Checked after each slice: a value already reached passes even when
    // the caller has cancelled meanwhile.
    if (cancel != nullptr && cancel->cancelled())
      return Error::cancelled("wait_cpu: the wait for value " + std::to_string(value) + " on " + label() +
                              " was cancelled");
    if (slice_end >= deadline)
      break;
  }
  return Error::would_block("wait_cpu: " + label() + " did not reach value " + std::to_string(value) + " within " +
                            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                            " ms (last issued " + std::to_string(last_issued()) + ")");
}

/// \brief The default for kinds that cannot queue a wait on a GL context.
/// \return NotImplemented, so the caller falls back to wait_cpu().
Result<void> Timeline::wait_gpu(std::uint64_t value, GlWorker &) {
  Result<void> issued = check_issued(value, "wait_gpu");
  if (!issued)
    return issued;
  return Error::not_implemented("wait_gpu: a GL context cannot wait for " + label() + " on the GPU; wait on the CPU");
}

// ---- SoftwareTimeline --------------------------------------------------------

/// \brief A new software timeline called `name` (used in every error).
std::shared_ptr<SoftwareTimeline> SoftwareTimeline::create(std::string name) {
  return std::make_shared<SoftwareTimeline>(Token{}, std::move(name));
}

/// \brief Hands out the next value; the caller signals it when its work is done.
std::uint64_t SoftwareTimeline::issue() {
  std::lock_guard lock(mu_);
  return next_value_locked();
}

/// \brief Reaches `value` and every value before it, waking the waiters.
/// \return InvalidArgument for a value never issued: signalling it would let
/// waiters pass points nobody has produced.
Result<void> SoftwareTimeline::signal(std::uint64_t value) {
  Result<void> issued = check_issued(value, "signal");
  if (!issued)
    return issued;
  {
    std::lock_guard lock(mu_);
    reached_ = std::max(reached_, value);
  }
  cv_.notify_all();
  return {};
}

Result<bool> SoftwareTimeline::poll(std::uint64_t value) {
  std::lock_guard lock(mu_);
  return reached_ >= value;
}

Result<void> SoftwareTimeline::block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return reached_ >= value; }))
    return Error::would_block("software timeline wait expired");
  return {};
}

// ---- PointTimeline -----------------------------------------------------------

/// \brief Issues the next value and makes `point` the object that signals it.
std::uint64_t PointTimeline::add_point(std::shared_ptr<const SyncPoint> point) {
  std::lock_guard lock(mu_);
  const std::uint64_t value = next_value_locked();
  points_.emplace_back(value, std::move(point));
  // Retiring here keeps the list as short as the work in flight even when
  // nobody ever asks; a failed query leaves the point for the next one.
  (void)retire_locked();
  return value;
}

/// \brief The sync object behind `value`, or null once `value` is known reached.
std::shared_ptr<const SyncPoint> PointTimeline::point_of(std::uint64_t value) const {
  std::lock_guard lock(mu_);
  if (value <= reached_ || points_.empty() || value < points_.front().first)
    return nullptr;
  const std::uint64_t index = value - points_.front().first;
  if (index >= points_.size())
    return nullptr;
  return points_[index].second;
}

Result<void> PointTimeline::retire_locked() {
  while (!points_.empty()) {
    Result<bool> done = points_.front().second->is_signalled();
    if (!done)
      return std::move(done).error();
    if (!*done)
      break;
    reached_ = points_.front().first;
    points_.pop_front();
  }
  return {};
}

Result<bool> PointTimeline::poll(std::uint64_t value) {
  std::lock_guard lock(mu_);
  if (value > reached_) {
    Result<void> retired = retire_locked();
    if (!retired)
      return std::move(retired).error();
  }
  return value <= reached_;
}

Result<void> PointTimeline::block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    std::shared_ptr<const SyncPoint> oldest;
    {
      std::lock_guard lock(mu_);
      Result<void> retired = retire_locked();
      if (!retired)
        return retired;
      if (value <= reached_)
        return {};
      oldest = points_.front().second;
    }
    // The wait runs without the lock, so producers can add points and other
    // threads can poll meanwhile.
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero())
      return Error::would_block("point timeline wait expired");
    Result<void> waited = oldest->wait(std::chrono::duration_cast<std::chrono::nanoseconds>(left));
    if (!waited)
      return waited;
  }
}

} // namespace tensormem
