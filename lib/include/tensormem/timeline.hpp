// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/result.hpp>
#include <tensormem/unique_fd.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace tensormem {

class GlWorker;

/// Asked by a long CPU wait whether its caller wants it to end early: how a
/// streaming thread's fence or reader wait is released when the pipeline
/// flushes or goes down. A wait given one checks it at least every
/// kCancelCheckInterval, whatever kind of object it waits on (so cancelling
/// needs no wake-up machinery per kind), and ends with ErrorKind::Cancelled
/// unless the value was reached. Completion is never delayed by the checks: each
/// slice of the wait returns as soon as the work completes.
class TENSORMEM_API WaitCancel {
public:
  virtual ~WaitCancel() = default;
  virtual bool cancelled() const noexcept = 0;
};

/// How often a cancellable wait looks at its WaitCancel.
inline constexpr std::chrono::milliseconds kCancelCheckInterval{5};

/// A WaitCancel set and cleared by hand (a buffer pool's flushing state).
class TENSORMEM_API CancelFlag final : public WaitCancel {
public:
  void cancel() noexcept { flag_.store(true, std::memory_order_release); }
  void reset() noexcept { flag_.store(false, std::memory_order_release); }
  bool cancelled() const noexcept override { return flag_.load(std::memory_order_acquire); }

private:
  std::atomic<bool> flag_{false};
};

/// What signals a timeline.
enum class TimelineKind { Software, EglSync, SyncFile, D3d11Fence };

TENSORMEM_API const char *timeline_kind_name(TimelineKind kind) noexcept;

/// A monotonically increasing sequence of completion points. Value 0 means
/// "no work" and is always reached; a producer issues 1, 2, 3, ... and the
/// timeline reaches a value once that point and every earlier one completed.
///
/// A value above the newest issued one is refused wherever it appears (the
/// unreachable-value rule): nothing would ever signal it, so a wait on
/// it could only hang. Every wait is bounded.
class TENSORMEM_API Timeline {
public:
  Timeline(const Timeline &) = delete;
  Timeline &operator=(const Timeline &) = delete;
  virtual ~Timeline() = default;

  TimelineKind kind() const noexcept { return kind_; }
  const std::string &name() const noexcept { return name_; }
  /// "<kind> timeline '<name>'": how errors name this timeline.
  std::string label() const;

  /// The newest value handed out so far (0 before the first).
  std::uint64_t last_issued() const noexcept;
  /// InvalidArgument naming `what`, the value and the last issued value when
  /// `value` was never issued.
  Result<void> check_issued(std::uint64_t value, const char *what) const;

  /// Whether `value` has been reached, without waiting.
  Result<bool> signalled(std::uint64_t value);
  /// Blocks until `value` is reached, for at most `timeout`; with `cancel`,
  /// also ends (ErrorKind::Cancelled) soon after it is cancelled.
  Result<void> wait_cpu(std::uint64_t value, std::chrono::nanoseconds timeout, const WaitCancel *cancel = nullptr);
  /// Makes `gl`'s command queue wait for `value` on the GPU. Only an EGL
  /// timeline can; the others answer NotImplemented and the caller waits on
  /// the CPU instead.
  virtual Result<void> wait_gpu(std::uint64_t value, GlWorker &gl);

protected:
  Timeline(TimelineKind kind, std::string name);

  /// Counts out the next value; the caller holds mu_ and attaches what
  /// signals it before releasing the lock.
  std::uint64_t next_value_locked() noexcept { return ++issued_; }

  /// Whether `value` (1..last issued, above what is known reached) has
  /// completed, without blocking.
  virtual Result<bool> poll(std::uint64_t value) = 0;
  /// Values handed out by the signalling object itself rather than through
  /// this timeline (a D3D11 context's counter); last_issued() is the larger
  /// of the two.
  virtual std::uint64_t issued_elsewhere() const noexcept { return 0; }
  /// Blocks until `value` has completed or `deadline` passes (then WouldBlock).
  virtual Result<void> block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) = 0;

  mutable std::mutex mu_;

private:
  TimelineKind kind_;
  std::string name_;
  std::uint64_t issued_ = 0;
};

/// A timeline its owner signals by hand: CPU producers and tests.
class TENSORMEM_API SoftwareTimeline final : public Timeline {
public:
  static std::shared_ptr<SoftwareTimeline> create(std::string name);

  /// Hands out the next value.
  std::uint64_t issue();
  /// Marks `value` (and every earlier one) reached; InvalidArgument for a
  /// value never issued. Signalling an older value than the newest reached
  /// one changes nothing.
  Result<void> signal(std::uint64_t value);

private:
  struct Token {};

public:
  SoftwareTimeline(Token, std::string name) : Timeline(TimelineKind::Software, std::move(name)) {}

private:
  Result<bool> poll(std::uint64_t value) override;
  Result<void> block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) override;

  std::condition_variable cv_;
  std::uint64_t reached_ = 0;
};

/// One completion point of a point-based timeline: a single GPU object that
/// signals once (an EGL sync, a sync_file).
class TENSORMEM_API SyncPoint {
public:
  virtual ~SyncPoint() = default;
  virtual Result<bool> is_signalled() const = 0;
  /// Blocks for at most `timeout`; WouldBlock when it expired.
  virtual Result<void> wait(std::chrono::nanoseconds timeout) const = 0;
};

/// A timeline whose every issued value is its own sync object. A value is
/// reached when its point and every earlier one have signalled, so points that
/// complete out of order never make the timeline claim too much. Points known
/// signalled are dropped from the front as soon as they are seen.
class TENSORMEM_API PointTimeline : public Timeline {
protected:
  using Timeline::Timeline;

  /// Issues the next value for `point`.
  std::uint64_t add_point(std::shared_ptr<const SyncPoint> point);
  /// The point of `value`, or null when it is already known reached.
  std::shared_ptr<const SyncPoint> point_of(std::uint64_t value) const;

private:
  Result<bool> poll(std::uint64_t value) override;
  Result<void> block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) override;
  /// Drops the signalled points at the front; the lock is held.
  Result<void> retire_locked();

  std::deque<std::pair<std::uint64_t, std::shared_ptr<const SyncPoint>>> points_;
  std::uint64_t reached_ = 0;
};

#ifndef _WIN32
/// A timeline of Linux sync_file fds (or any fd that polls readable once its
/// work completed): each adopted fd is the next value. Waits are poll() on
/// the fd; nothing can queue a GPU wait on one here.
class TENSORMEM_API SyncFileTimeline final : public PointTimeline {
public:
  static std::shared_ptr<SyncFileTimeline> create(std::string name);

  /// Takes ownership of `fd` as the next value. InvalidArgument for an
  /// invalid fd (nothing is issued then).
  Result<std::uint64_t> adopt(UniqueFd fd);

private:
  struct Token {};

public:
  SyncFileTimeline(Token, std::string name) : PointTimeline(TimelineKind::SyncFile, std::move(name)) {}
};
#endif

/// A storage's newest GPU write on one timeline.
struct GpuCompletion {
  std::shared_ptr<Timeline> timeline;
  std::uint64_t value = 0;
};

} // namespace tensormem
